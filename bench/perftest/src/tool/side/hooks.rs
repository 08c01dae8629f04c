//! The out-of-band plan's hooks: what this side sends, what it does with what the peer sends,
//! and the plan's actions (connect, run, print).

use std::time::Duration;

use uverbs::provider::Provider;

use crate::oob::msg::{BwReport, KeyFormat, KeyMsg, PeerVersion, SysData};
use crate::oob::{msg, Action, Hooks, KeyPurpose};
use crate::params::{Connection, Params, ParseOutcome, Role, TestKind, TestType};
use crate::report::{Side, DASH_LINE};
use crate::tool::adopt::{adopted_cmdline, option_summary};
use crate::tool::setup::to_tool;
use crate::tool::{limits, negotiate, ToolError};
use crate::{oob, params, report};

use super::peer::key_ledger_for;
use super::{local_mtu_for, plan_options, SideRun};

impl<P: Provider> Hooks for SideRun<'_, P> {
    type Error = ToolError;

    fn own_version(&self) -> &str {
        // The persona's version: what follows it on the wire adapts to the peer's version.
        self.conf.p.persona.wire_version()
    }
    fn options(&self) -> Option<Vec<(&'static str, String)>> {
        Some(option_summary(self.conf.p))
    }
    fn on_options_differ(&mut self, lines: Vec<String>) -> Result<(), ToolError> {
        Err(ToolError::new(1, lines.join("\n")))
    }
    fn adopt(&mut self, theirs: &[(String, String)]) -> Result<Option<Vec<oob::Step>>, ToolError> {
        if !self.conf.p.adopt || self.conf.p.is_tcp_client() {
            return Ok(None);
        }
        let Some(args) = adopted_cmdline(self.conf.p, theirs).map_err(|m| ToolError::new(1, m))? else { return Ok(None) };
        let mut np = match params::parse_run(self.conf.p.tool, &args, &self.conf.p.settings, &self.conf.p.providers) {
            Ok(ParseOutcome::Run(np)) => np,
            Ok(_) => return Err(ToolError::new(1, "--adopt: the client's options ask for help or the version")),
            Err(e) => return Err(ToolError::new(1, format!("--adopt: the client's options do not work here: {e}"))),
        };
        np.cmdline = args;
        // The run keeps borrowing its parameters for its whole life; the adopted set replaces
        // the command line's once per process, so it is leaked rather than threaded through.
        let np: &'static Params = Box::leak(np);
        self.conf.p = np;
        self.shape.sizes = np.sizes();
        self.shape.local_mtu = local_mtu_for(np, &self.conf.dev, self.conf.out);
        self.shape.mtu = self.shape.local_mtu;
        self.conf.run_bound = limits::run_bound_for(np, &self.shape.sizes, self.conf.setup_timeout);
        self.peer.key_ledger = key_ledger_for(np);
        let steps = oob::plan(to_tool(np.tool), self.conf.oob_role, &plan_options(np, &self.shape.sizes, self.shape.local_mtu));
        // The version exchange is done: the new plan continues after it.
        let rest = steps.iter().position(|s| *s == oob::Step::Version).map_or(steps.clone(), |i| steps[i + 1..].to_vec());
        Ok(Some(rest))
    }
    fn sysdata(&self) -> SysData {
        self.shape.sys
    }
    fn mtu_enum(&self) -> u8 {
        self.shape.local_mtu
    }
    fn negotiate(&mut self) -> (msg::Negotiate, msg::NegotiateLayout) {
        // Sent to 6.28+ peers by the 6.29 persona (and to a 6.28 peer, which always sends it);
        // byte-compatible with 6.29's block (golden-tested).
        let blob = msg::device_attr_blob(self.conf.dev.attr.vendor_id, self.conf.dev.attr.vendor_part_id, self.shape.out_reads as i32);
        let size = self.shape.sizes.last().copied().unwrap_or(self.conf.p.size);
        (negotiate::negotiate_block(self.conf.p, size, blob), msg::NegotiateLayout::WithMlx5dv)
    }
    fn key_format(&self) -> KeyFormat {
        KeyFormat::new(self.conf.dev.gid_index.is_some(), false)
    }
    fn key(&mut self, qp: usize) -> KeyMsg {
        self.verbs.my_keys.get(qp).copied().unwrap_or_default()
    }
    fn report(&mut self) -> BwReport {
        self.own_report()
    }
    fn report_per_port(&self) -> bool {
        self.conf.p.report.per_port
    }
    fn run_timeout(&self) -> Option<(Duration, String)> {
        Some((self.conf.run_bound.limit.unwrap_or(Duration::ZERO), self.conf.run_bound.basis.clone()))
    }

    fn on_options_match(&mut self) {
        self.peer.options_matched = true;
    }
    fn on_version(&mut self, peer: &PeerVersion) -> Result<(), ToolError> {
        msg::check_version(peer)?;
        self.peer.negotiating = peer.negotiates_with(&PeerVersion::from_text(self.own_version()));
        Ok(())
    }
    fn on_negotiate(&mut self, remote: &msg::Negotiate) -> Result<(), ToolError> {
        let (local, _) = self.negotiate();
        if let Err(e) = msg::compare_negotiation(&local, remote) {
            // 6.29's two lines, nothing else: both sides print them and exit 1.
            let lines = e.perftest_lines().unwrap_or_else(|| e.to_string());
            return Err(ToolError::new(1, lines.trim_end()));
        }
        let theirs = remote.max_qp_rd_atom();
        if self.conf.p.connection != Connection::Dc && theirs >= 0 && self.shape.out_reads > theirs as u32 {
            self.conf.out.text(" out_reads is greater than remote max_qp_rd_atom, using remote max_qp_rd_atom\n");
            self.shape.out_reads = theirs as u32;
        }
        self.peer.negotiating = false;
        self.setup()
    }
    fn on_sysdata(&mut self, remote: SysData) -> Result<(), ToolError> {
        self.shape.sys = self.shape.sys.merged(remote);
        Ok(())
    }
    fn on_mtu(&mut self, remote: Option<u8>) -> Result<(), ToolError> {
        self.shape.mtu = msg::effective_mtu(self.shape.local_mtu, remote);
        // The UD size clamp now: NEGOTIATE carries the clamped size.
        self.shape.clamp_ud_sizes(&self.conf)?;
        if self.peer.negotiating {
            return Ok(());
        }
        self.setup()
    }
    fn on_key(&mut self, qp: usize, purpose: KeyPurpose, remote: KeyMsg) -> Result<(), ToolError> {
        if !self.conf.p.conn.use_rdma_cm {
            // Over rdma_cm (-z/-R) the records travel in their own binary exchange.
            self.peer.key_ledger.check(qp, purpose, &remote)?;
        }
        if purpose == KeyPurpose::QpInfo {
            if let Some(k) = self.peer.remote_keys.get_mut(qp) {
                *k = remote;
            }
        }
        if purpose == KeyPurpose::RemoteInfo && self.conf.p.connection == Connection::Dc {
            // The peer's DCT numbers as they are after its RTR.
            if let Some(k) = self.peer.remote_keys.get_mut(qp) {
                *k = remote;
            }
            if let Some(ep) = self.verbs.ep.as_mut() {
                // The local DCI whose partner is that key (split: DCI i <-> peer DCT half+i).
                let dci = params::lane_plan(self.conf.p).map_or(qp, |x| x.peer_key(qp));
                ep.set_dc_target(dci, remote.qpn & 0xff_ffff);
            }
        }
        Ok(())
    }
    fn on_report(&mut self, remote: BwReport) -> Result<(), ToolError> {
        // Only a report this side prints is checked: a uni-BW C server sends its client
        // uninitialised memory, which the client never shows. -b sums both sides' lines, so
        // the peer must have run the same size.
        if self.conf.p.duplex || self.conf.p.machine == Role::Server {
            let expect = self.conf.p.duplex.then(|| self.own_report().size);
            oob::plausible::check_report(&remote, expect, self.conf.p.num_qps)?;
        }
        self.peer.peer_report = Some(remote);
        Ok(())
    }

    fn action(&mut self, action: Action) -> Result<(), ToolError> {
        match action {
            Action::ConnectQps => self.connect()?,
            Action::ConnectCm => self.connect_cm()?,
            Action::PrintLocal => {
                let mut show = self.conf.addr_show();
                show.mgid = crate::mcast::gid_label_is_mgid(self.conf.p, false);
                for k in &self.verbs.my_keys {
                    self.conf.out.text(&report::address_line(Side::Local, k, &show));
                }
            }
            Action::PrintRemote { qp } => {
                let mut show = self.conf.addr_show();
                show.mgid = crate::mcast::gid_label_is_mgid(self.conf.p, true);
                if let Some(k) = self.peer.remote_keys.get(qp) {
                    self.conf.out.text(&report::address_line(Side::Remote, k, &show));
                }
            }
            Action::PrintResultHeader => {
                self.report.measuring = true;
                let p = self.conf.p;
                if p.kind == TestKind::Bw {
                    self.conf.out.text(&report::bw_result_header(self.conf.p.persona.style(), self.conf.columns()));
                } else {
                    self.conf.out.text(&report::lat_result_header(
                        p.test_type == TestType::Duration,
                        p.report.cpu_util && p.test_type == TestType::Duration,
                    ));
                }
            }
            Action::PostReceives { size_index } => self.post_receives(size_index)?,
            Action::Run { size_index } => self.run(size_index)?,
            Action::PrintOwnResult { size_index } => {
                self.report.print_own(&self.conf, &self.shape.sizes, size_index);
                // send_bw -b -D prints its own line only (no report exchange), then the blocks.
                let cpu = self.report.results.get(size_index).and_then(|r| r.1);
                self.print_report_both(cpu);
            }
            Action::PrintSummedResult { size_index } => {
                let cpu = self.report.results.get(size_index).and_then(|r| r.1);
                let mine = self.own_report();
                let peer = self.peer.peer_report.unwrap_or_default();
                let sum = mine.summed(&peer);
                self.report.print_bw_line(&self.conf, &sum, cpu);
                self.print_report_both(cpu);
            }
            Action::PrintPeerResult => {
                if let Some(r) = self.peer.peer_report {
                    self.report.print_bw_line(&self.conf, &r, None);
                }
            }
            Action::PrintDashLine => {
                // --report-per-port: the wide dash line, as the per-port header's.
                let wide = self.conf.p.kind == TestKind::Bw && self.conf.columns().per_port;
                self.conf.out.text(if wide { report::DASH_LINE_PER_PORT } else { DASH_LINE });
            }
        }
        Ok(())
    }
}
