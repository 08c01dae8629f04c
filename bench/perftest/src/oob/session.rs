//! Walks a [`plan`](super::plan::plan) over a [`Channel`]: performs every exchange and calls the
//! engine back for local values and actions. Version-dependent steps are gated at run time on
//! the peer's version (SYSDATA ≥ 5.32, MTU block size, NEGOTIATE only when both call for it).

use super::error::OobError;
use super::msg::{self, BwReport, KeyFormat, KeyMsg, Negotiate, NegotiateLayout, PeerVersion, SysData};
use super::plan::{Action, KeyPurpose, Step};
use super::transport::{Channel, OptionsBuilder};

/// What the engine supplies and receives while a plan runs.
pub trait Hooks {
    /// The engine's error type; exchange failures convert into it.
    type Error: From<OobError>;

    /// Version string we advertise.
    fn own_version(&self) -> &str {
        msg::DEFAULT_VERSION
    }
    /// rperftest's option block ([`msg::encode_options`]): `Some` advertises rperftest in the
    /// version block and, with an rperftest peer over TCP, exchanges and compares options.
    fn options(&self) -> Option<Vec<(&'static str, String)>> {
        None
    }
    /// An rperftest peer's options were compared with ours and are the same.
    fn on_options_match(&mut self) {}
    /// The peer's options differ from ours: one line per option (an rperftest peer).
    fn on_options_differ(&mut self, _lines: Vec<String>) -> Result<(), Self::Error> {
        Ok(())
    }
    /// Server, before it answers an rperftest client's option block: take the client's
    /// options (`--adopt`). `Some(rest)`: adopted; the plan continues with `rest` (the steps
    /// after the version exchange for the new options) and [`Hooks::options`] now gives them.
    fn adopt(&mut self, _theirs: &[(String, String)]) -> Result<Option<Vec<Step>>, Self::Error> {
        Ok(None)
    }
    /// Our page size and cache line.
    fn sysdata(&self) -> SysData;
    /// Our MTU enum (1..=5).
    fn mtu_enum(&self) -> u8;
    /// Our NEGOTIATE block (called only when the step runs).
    fn negotiate(&mut self) -> (Negotiate, NegotiateLayout);
    /// The key text format our settings imply.
    fn key_format(&self) -> KeyFormat;
    /// Our key record for QP `qp`.
    fn key(&mut self, qp: usize) -> KeyMsg;
    /// Our report (called when the report exchange runs).
    fn report(&mut self) -> BwReport;
    /// `--report-per-port`.
    fn report_per_port(&self) -> bool {
        false
    }

    fn on_version(&mut self, _peer: &PeerVersion) -> Result<(), Self::Error> {
        Ok(())
    }
    fn on_sysdata(&mut self, _remote: SysData) -> Result<(), Self::Error> {
        Ok(())
    }
    fn on_mtu(&mut self, _remote: Option<u8>) -> Result<(), Self::Error> {
        Ok(())
    }
    fn on_negotiate(&mut self, _remote: &Negotiate) -> Result<(), Self::Error> {
        Ok(())
    }
    fn on_key(&mut self, _qp: usize, _purpose: KeyPurpose, _remote: KeyMsg) -> Result<(), Self::Error> {
        Ok(())
    }
    fn on_report(&mut self, _remote: BwReport) -> Result<(), Self::Error> {
        Ok(())
    }
    /// A local action between exchanges.
    fn action(&mut self, action: Action) -> Result<(), Self::Error>;
    /// The read timeout of the measurement phase (from the first step where the peer may be
    /// running its test between two exchanges: the result header, the first run, or a barrier
    /// after the setup keys) and what it stands for, in words, for the timeout message.
    /// `Duration::ZERO`: no deadline. `None`: keep the channel's timeout.
    fn run_timeout(&self) -> Option<(std::time::Duration, String)> {
        None
    }
}

/// Run `plan` to the end. Consumes the channel when the plan writes `done` (or at the end).
pub fn execute<H: Hooks, C: Exchange>(mut ch: C, plan: &[Step], hooks: &mut H) -> Result<(), H::Error> {
    let mut peer: Option<PeerVersion> = None;
    let own = PeerVersion::from_text(hooks.own_version());
    let mut measuring = false;
    let mut run_basis: Option<String> = None;
    let mut steps: Vec<Step> = plan.to_vec();
    let mut i = 0;
    while i < steps.len() {
        let step = &steps[i].clone();
        i += 1;
        if !measuring && starts_measurement(step) {
            measuring = true;
            if let Some((t, basis)) = hooks.run_timeout() {
                ch.set_timeout(t)?;
                run_basis = Some(basis);
            }
        }
        let r = run_step(&mut ch, step, hooks, &own, &mut peer);
        if let Ok(Some(rest)) = r {
            // --adopt: the rest of the plan for the options taken from the peer.
            steps = rest;
            i = 0;
            continue;
        }
        if let Err(e) = r {
            return Err(match (e, &run_basis) {
                (StepError::Oob(OobError::Timeout { step, secs, got, expected }), Some(basis)) => {
                    OobError::RunTimeout { step, secs, got, expected, basis: basis.clone() }.into()
                }
                (StepError::Oob(OobError::PeerClosed { step, got, expected }), _) if measuring => {
                    OobError::PeerClosedInRun { step, got, expected }.into()
                }
                (StepError::Oob(e), _) => e.into(),
                (StepError::Hook(e), _) => e,
            });
        }
    }
    Ok(())
}

/// The first step at which the peer may legitimately be silent for the length of a test: the
/// result header, posting receives or running, or a barrier key (a read/atomic_lat server goes
/// straight from the setup keys to the closing one while its client measures).
fn starts_measurement(step: &Step) -> bool {
    matches!(
        step,
        Step::Do(Action::PrintResultHeader | Action::PostReceives { .. } | Action::Run { .. })
            | Step::Key { purpose: KeyPurpose::Start | KeyPurpose::AfterRun | KeyPurpose::Close, .. }
    )
}

/// A step's failure: from the exchange (may be re-worded as a measurement-phase timeout) or
/// from the engine's hooks.
enum StepError<E> {
    Oob(OobError),
    Hook(E),
}

impl<E> From<OobError> for StepError<E> {
    fn from(e: OobError) -> Self {
        StepError::Oob(e)
    }
}

fn run_step<H: Hooks, C: Exchange>(
    ch: &mut C,
    step: &Step,
    hooks: &mut H,
    own: &PeerVersion,
    peer: &mut Option<PeerVersion>,
) -> Result<Option<Vec<Step>>, StepError<H::Error>> {
    let hook = StepError::Hook;
    match *step {
        Step::Version => {
            let opts = hooks.options();
            let v = ch.exchange_version(&own.text, opts.is_some())?;
            hooks.on_version(&v).map_err(hook)?;
            *peer = Some(v.clone());
            if let (true, Some(_)) = (v.rperftest, opts) {
                let mut replan = None;
                let mut hook_err = None;
                let mut build = |theirs: Option<&[u8]>| -> Result<Vec<u8>, OobError> {
                    if let Some(t) = theirs {
                        match hooks.adopt(&msg::decode_options(t)?) {
                            Ok(r) => replan = r,
                            Err(e) => hook_err = Some(e),
                        }
                    }
                    msg::encode_options(&hooks.options().unwrap_or_default())
                };
                let theirs = ch.exchange_options(&mut build);
                if let Some(e) = hook_err {
                    return Err(StepError::Hook(e));
                }
                if let Some(theirs) = theirs? {
                    let mine = hooks.options().unwrap_or_default();
                    let diff = msg::option_differences(&mine, &msg::decode_options(&theirs)?);
                    if diff.is_empty() {
                        hooks.on_options_match();
                    } else {
                        hooks.on_options_differ(diff).map_err(hook)?;
                    }
                }
                if let Some(rest) = replan {
                    return Ok(Some(rest));
                }
            }
        }
        Step::PageSize => {
            // Both SYSDATA exchanges happen here; CacheLine is then a no-op.
            if peer.as_ref().map(PeerVersion::has_sysdata) != Some(false) {
                let remote = ch.exchange_sysdata(hooks.sysdata())?;
                hooks.on_sysdata(remote).map_err(hook)?;
            }
        }
        Step::CacheLine => {}
        Step::Mtu => {
            let p = peer.clone().unwrap_or_else(|| own.clone());
            let remote = ch.exchange_mtu(hooks.mtu_enum(), &p)?;
            hooks.on_mtu(remote).map_err(hook)?;
        }
        Step::LocalMtu => hooks.on_mtu(None).map_err(hook)?,
        Step::Negotiate => {
            let p = peer.clone().unwrap_or_else(|| own.clone());
            if p.negotiates_with(own) {
                let (local, layout) = hooks.negotiate();
                let remote = ch.exchange_negotiate(&local, layout)?;
                hooks.on_negotiate(&remote).map_err(hook)?;
            }
        }
        Step::Key { qp, purpose } => {
            let fmt = hooks.key_format();
            let mine = hooks.key(qp);
            let remote = ch.exchange_key(&mine, fmt)?;
            hooks.on_key(qp, purpose, remote).map_err(hook)?;
        }
        Step::Report => {
            let p = peer.clone().unwrap_or_else(|| own.clone());
            let mine = hooks.report();
            let remote = ch.exchange_report(&mine, hooks.report_per_port(), &p)?;
            hooks.on_report(remote).map_err(hook)?;
        }
        Step::Done => {
            ch.send("closing the connection", msg::DONE)?;
        }
        Step::Do(a) => hooks.action(a).map_err(hook)?,
    }
    Ok(None)
}

/// The exchanges a plan needs, over whatever carries them: the TCP [`Channel`] or the rdma_cm
/// control QP of `-z`/`-R` (`crate::cm_session::CmOob`). Every method is one perftest exchange
/// (client writes first, server reads first).
pub trait Exchange {
    /// Bound every later wait by `timeout`.
    fn set_timeout(&mut self, timeout: std::time::Duration) -> Result<(), OobError>;
    /// `mark`: advertise rperftest after the version text ([`msg::RPERFTEST_MARK`]).
    fn exchange_version(&mut self, own: &str, mark: bool) -> Result<PeerVersion, OobError>;
    /// The rperftest option exchange (see [`Channel::exchange_options`]); `None` where the
    /// channel does not carry it (rdma_cm's control QP: both sides then skip it, as they use
    /// the same transport).
    fn exchange_options(
        &mut self,
        _mine: &mut OptionsBuilder<'_>,
    ) -> Result<Option<Vec<u8>>, OobError> {
        Ok(None)
    }
    fn exchange_sysdata(&mut self, local: SysData) -> Result<SysData, OobError>;
    fn exchange_mtu(&mut self, local_enum: u8, peer: &PeerVersion) -> Result<Option<u8>, OobError>;
    fn exchange_negotiate(&mut self, local: &Negotiate, layout: NegotiateLayout) -> Result<Negotiate, OobError>;
    fn exchange_key(&mut self, mine: &KeyMsg, fmt: KeyFormat) -> Result<KeyMsg, OobError>;
    fn exchange_report(&mut self, mine: &BwReport, per_port: bool, peer: &PeerVersion) -> Result<BwReport, OobError>;
    /// Write one block the peer never reads (`done`).
    fn send(&mut self, step: &str, block: &[u8]) -> Result<(), OobError>;
}

impl Exchange for Channel {
    fn set_timeout(&mut self, timeout: std::time::Duration) -> Result<(), OobError> {
        Channel::set_timeout(self, timeout)
    }
    fn exchange_version(&mut self, own: &str, mark: bool) -> Result<PeerVersion, OobError> {
        Channel::exchange_version_marked(self, own, mark)
    }
    fn exchange_options(
        &mut self,
        mine: &mut OptionsBuilder<'_>,
    ) -> Result<Option<Vec<u8>>, OobError> {
        Channel::exchange_options(self, mine).map(Some)
    }
    fn exchange_sysdata(&mut self, local: SysData) -> Result<SysData, OobError> {
        Channel::exchange_sysdata(self, local)
    }
    fn exchange_mtu(&mut self, local_enum: u8, peer: &PeerVersion) -> Result<Option<u8>, OobError> {
        Channel::exchange_mtu(self, local_enum, peer)
    }
    fn exchange_negotiate(&mut self, local: &Negotiate, layout: NegotiateLayout) -> Result<Negotiate, OobError> {
        Channel::exchange_negotiate(self, local, layout)
    }
    fn exchange_key(&mut self, mine: &KeyMsg, fmt: KeyFormat) -> Result<KeyMsg, OobError> {
        Channel::exchange_key(self, mine, fmt)
    }
    fn exchange_report(&mut self, mine: &BwReport, per_port: bool, peer: &PeerVersion) -> Result<BwReport, OobError> {
        Channel::exchange_report(self, mine, per_port, peer)
    }
    fn send(&mut self, step: &str, block: &[u8]) -> Result<(), OobError> {
        Channel::send(self, step, block)
    }
}
