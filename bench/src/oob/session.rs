//! Walks a [`plan`](super::plan::plan) over a [`Channel`]: performs every exchange and calls the
//! engine back for local values and actions. Version-dependent steps are gated at run time on
//! the peer's version (SYSDATA ≥ 5.32, MTU block size, NEGOTIATE only when both call for it).

use super::error::OobError;
use super::msg::{self, BwReport, KeyFormat, KeyMsg, Negotiate, NegotiateLayout, PeerVersion, SysData};
use super::plan::{Action, KeyPurpose, Step};
use super::transport::Channel;

/// What the engine supplies and receives while a plan runs.
pub trait Hooks {
    /// The engine's error type; exchange failures convert into it.
    type Error: From<OobError>;

    /// Version string we advertise.
    fn own_version(&self) -> &str {
        msg::DEFAULT_VERSION
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
}

/// Run `plan` to the end. Consumes the channel when the plan writes `done` (or at the end).
pub fn execute<H: Hooks>(mut ch: Channel, plan: &[Step], hooks: &mut H) -> Result<(), H::Error> {
    let mut peer: Option<PeerVersion> = None;
    let own = PeerVersion::from_text(hooks.own_version());
    for step in plan {
        match *step {
            Step::Version => {
                let v = ch.exchange_version(&own.text)?;
                hooks.on_version(&v)?;
                peer = Some(v);
            }
            Step::PageSize => {
                // Both SYSDATA exchanges happen here; CacheLine is then a no-op.
                if peer.as_ref().map(PeerVersion::has_sysdata) != Some(false) {
                    let remote = ch.exchange_sysdata(hooks.sysdata())?;
                    hooks.on_sysdata(remote)?;
                }
            }
            Step::CacheLine => {}
            Step::Mtu => {
                let p = peer.clone().unwrap_or_else(|| own.clone());
                let remote = ch.exchange_mtu(hooks.mtu_enum(), &p)?;
                hooks.on_mtu(remote)?;
            }
            Step::Negotiate => {
                let p = peer.clone().unwrap_or_else(|| own.clone());
                if p.negotiates_with(&own) {
                    let (local, layout) = hooks.negotiate();
                    let remote = ch.exchange_negotiate(&local, layout)?;
                    hooks.on_negotiate(&remote)?;
                }
            }
            Step::Key { qp, purpose } => {
                let fmt = hooks.key_format();
                let mine = hooks.key(qp);
                let remote = ch.exchange_key(&mine, fmt)?;
                hooks.on_key(qp, purpose, remote)?;
            }
            Step::Report => {
                let p = peer.clone().unwrap_or_else(|| own.clone());
                let mine = hooks.report();
                let remote = ch.exchange_report(&mine, hooks.report_per_port(), &p)?;
                hooks.on_report(remote)?;
            }
            Step::Done => {
                ch.send("closing the connection", msg::DONE)?;
            }
            Step::Do(a) => hooks.action(a)?,
        }
    }
    Ok(())
}
