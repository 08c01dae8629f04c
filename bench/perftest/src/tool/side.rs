//! One side of a run: the verbs resources, the out-of-band plan's hooks (connect, run, report)
//! and the engine loops, for one provider (static dispatch inside [`providers::open`]).

use std::sync::atomic::AtomicBool;
use std::sync::Arc;
use std::time::Duration;

use uverbs::objects::{AccessFlags, Context};
use uverbs::provider::{Provider, QpType};
use uverbs::wr::WcStatus;

use crate::engine::bw::{BwConfig, BwSamples, DurationWindow, QpTarget};
use crate::engine::lat::{LatConfig, LatSamples};
use crate::engine::dv::Ext;
use crate::engine::verbs::{BufLayout, ConnectParams, VerbsEndpoint, VerbsSetup, UD_GRH};
use crate::engine::{bw, hw_rate, lat, EngineError, WaitMode};
use bench_core::clock;
use crate::oob::msg::{BwReport, KeyMsg, SysData};
use crate::oob::{msg, Channel, Listener, OobConfig};
use crate::params::{AtomicType, Connection, Params, ReportFormat, Role, TestKind, TestMethod, TestType, Tool, Verb};
use crate::report::{AddrShow, ReportHeader, DASH_LINE};
use crate::stats::{BwInput, BwResult, LatencyReport};
use crate::{cm_session, engine, oob, params, report, stats};

use super::setup::{cache_line, cpu_between, oob_fail, page_size, query_device, random_psn, read_proc_stat, to_tool, DevFacts};
use super::{bound, header, installed_timeout, limits, limits_verdict, record, run_fail_code, source_ip, Out, ToolError};
use super::{ENV_OOB_TIMEOUT, ENV_STALL_TIMEOUT, OOB_SETUP_DEFAULT, STALL_DEFAULT};

mod hooks;
mod print;

use print::{plot_meta, report_qps};

/// Run `f` (an engine loop) under [`bench_core::signal::watch`]: `stop` is set when a stop signal
/// arrives or the peer closes the out-of-band connection (`peer_gone` says which), so a
/// survivor ends within a fraction of a second instead of at the stall timeout.
pub(super) fn watched<R>(stop: &AtomicBool, peer_gone: &AtomicBool, sock: Option<&std::net::TcpStream>, f: impl FnOnce() -> R) -> R {
    use std::os::fd::AsRawFd;
    bench_core::signal::watch(stop, peer_gone, sock.map(|s| s.as_raw_fd()), f)
}

pub(super) fn run_with_context<P: Provider>(
    p: &Params,
    out: Out,
    listener: Option<Listener>,
    cm: Option<cm_session::CmStart>,
    ctx: Arc<Context<P>>,
    ext: Ext<P>,
) -> Result<(), ToolError> {
    let knobs = &p.settings;
    let stall = installed_timeout(ENV_STALL_TIMEOUT, knobs.stall_timeout.as_deref(), STALL_DEFAULT)?;
    let setup_timeout = installed_timeout(ENV_OOB_TIMEOUT, knobs.oob_timeout.as_deref(), OOB_SETUP_DEFAULT)?;
    let dev = query_device(p, &ctx)?;
    let payload = super::prepare::prepare(p, &dev.attr, page_size().max(1) as u64, cache_line().max(1) as u64)
        .map_err(|m| ToolError::new(1, m))?;

    let lim = limits::side_limits(
        p,
        limits::DevCaps { known: dev.known, max_qp_rd_atom: dev.attr.max_qp_rd_atom, active_mtu: dev.port.active_mtu },
        setup_timeout,
    );
    print_caps(out, &lim.caps);
    let limits::SideLimits { inline, out_reads, local_mtu, sizes, run_bound, .. } = lim;

    // -W: read the counters once before connecting (perftest's create_comm_struct).
    let counters = SharedCounters::default();
    if !p.report.counters.is_empty() {
        let c = crate::counters::Counters::open(&dev.name, p.dev.ib_port, &p.report.counters).map_err(|e| ToolError::new(1, e))?;
        *counters.borrow_mut() = Some(c);
    }
    let tcp_client = p.is_tcp_client();
    // The plan follows the test role (`--reversed` swaps it); the exchange order (who writes
    // first) follows the TCP role, which the channel keeps.
    let oob_role = if p.machine == Role::Client { oob::Role::Client } else { oob::Role::Server };
    let src = source_ip(p);
    let cfg = OobConfig { port: p.conn.port, timeout: setup_timeout, source_addr: src, bind_addr: src, ..OobConfig::default() };
    let mut cm_data = None;
    let ch = if let Some(start) = cm {
        let mut c = cm_session::CmOob::establish(&ctx, start, setup_timeout, cfg.connect_retry_for, p.dev.qp_timeout).map_err(|e| {
            let f = if tcp_client { "rdma_client" } else { "rdma_server" };
            ToolError::new(1, format!(" Unable to perform {f} function\n{e}"))
        })?;
        c.set_gid_index(dev.gid_index);
        if p.conn.work_rdma_cm {
            let dcfg = cm_session::CmDataConfig {
                dst: match p.server_name.as_deref() {
                    Some(h) => Some(cm_session::resolve_host(h, p.conn.port, p.dev.ipv6).map_err(|e| ToolError::new(1, e))?),
                    None => None,
                },
                port: p.conn.port,
                bind: src,
                ipv6: p.dev.ipv6,
                tos: p.conn.tos,
                ack_timeout: p.dev.qp_timeout,
                retry_count: p.conn.retry_count.min(7) as u8,
                rd_atomic: if matches!(p.verb, Verb::Read | Verb::Atomic) { out_reads.min(255) as u8 } else { 0 },
                timeout: setup_timeout,
                ud: p.connection == Connection::Ud,
                ud_reply: p.connection == Connection::Ud && (p.kind == TestKind::Lat || p.duplex),
                sgid_index: dev.gid_index.unwrap_or(0),
            };
            cm_data = Some(if tcp_client {
                cm_session::CmData::client(dcfg)
            } else {
                cm_session::CmData::server(dcfg, p.num_qps)
                    .map_err(|e| ToolError::new(1, format!(" Failed to create RDMA CM connection\n{e}")))?
            });
        }
        cm_session::OobLink::Cm(Box::new(c))
    } else if tcp_client {
        let host = p.server_name.as_deref().unwrap_or("127.0.0.1");
        if p.machine == Role::Server {
            // perftest 6.06 prints the banner on the *test* server (`--reversed`: this side).
            out.text(report::WAITING_FOR_CLIENT);
        }
        cm_session::OobLink::Tcp(Channel::connect(host, &cfg).map_err(|e| {
            oob_fail(format!("Couldn't connect to {host}:{}\n Unable to init the socket connection\n", p.conn.port), e)
        })?)
    } else {
        let l = match listener {
            Some(l) => l,
            None => Listener::bind(&cfg)
                .map_err(|e| ToolError::new(1, format!("Couldn't listen to port {}\n{e}", p.conn.port)))?,
        };
        if p.machine == Role::Server {
            out.text(report::WAITING_FOR_CLIENT);
        }
        cm_session::OobLink::Tcp(
            l.accept().map_err(|e| oob_fail("accept() failed\n Unable to init the socket connection\n".into(), e))?,
        )
    };
    let peer_sock = match &ch {
        cm_session::OobLink::Tcp(c) => c.stream().try_clone().ok(),
        cm_session::OobLink::Cm(_) => None,
    };

    let recorder = std::rc::Rc::new(std::cell::RefCell::new(record::Recorder::new(
        // The loopback server's copy is silent: only the client draws and streams.
        if out.quiet { None } else { p.report.plot_file.clone() },
        if out.quiet { None } else { p.report.series_file.clone() },
        plot_meta(p),
    )));
    let mut side = SideRun {
        p,
        out,
        ctx,
        ext,
        dev,
        inline,
        out_reads,
        local_mtu,
        mtu: local_mtu,
        sys: SysData { page_size: page_size(), cache_line: cache_line() },
        sizes,
        payload,
        ep: None,
        my_keys: Vec::new(),
        remote_keys: Vec::new(),
        key_ledger: oob::plausible::KeyLedger::new(
            p.num_qps as usize,
            !p.use_mcg && p.connection != Connection::Dc,
            p.connection == Connection::Dc,
        ),
        header: None,
        results: Vec::new(),
        last_bw: None,
        peer_report: None,
        posted: Vec::new(),
        stop: AtomicBool::new(false),
        peer_gone: AtomicBool::new(false),
        options_matched: false,
        peer_sock,
        stall,
        setup_timeout,
        oob_role,
        run_bound,
        cm_data,
        measuring: false,
        last_line: std::cell::Cell::new(None),
        counters,
        hw_rate_taken: false,
        recorder,
        negotiating: false,
    };
    let steps = oob::plan(to_tool(p.tool), oob_role, &plan_options(p, &side.sizes, local_mtu));
    let r = oob::execute(ch, &steps, &mut side);
    if let Some(d) = side.cm_data.as_mut() {
        d.finish();
    }
    // The picture and the burn-in summary also at the end of a --run_infinitely run, which a
    // signal (or its peer going away) ends.
    let drawn = side.recorder.borrow_mut().finish(side.out);
    if let Err(m) = &drawn {
        side.out.err(&format!(" {m}\n"));
    }
    if r.is_err() && side.user_stopped_infinite_run() {
        // perftest 6.29's sender of an infinite run takes Ctrl-C as the way to end it: a note,
        // the closing line, exit 0 (6.06 dies from the signal: 130, as the 6.06 persona).
        side.out.text("\n User stopped traffic\n");
        side.out.text(DASH_LINE);
        return Ok(());
    }
    if r.is_err() && side.client_ended_infinite_run() {
        // perftest's server of an infinite run ends when its client does.
        side.out.text(" Client closed connection\n");
        side.out.text(DASH_LINE);
        return Ok(());
    }
    r?;
    drawn.map_err(|m| ToolError::new(1, format!(" {m}")))?;
    if let Some(msg) = limits_verdict(p, side.last_line.get()) {
        return Err(ToolError::new(1, msg));
    }
    if p.buf.wait_destroy > 0 {
        // --wait_destroy: keep the resources for N seconds (a stop signal cuts it short).
        let until = std::time::Instant::now() + Duration::from_secs(u64::from(p.buf.wait_destroy));
        while std::time::Instant::now() < until && !bench_core::signal::requested() {
            std::thread::sleep(Duration::from_millis(50));
        }
    }
    Ok(())
}

pub(super) enum RunResult {
    Bw(BwResult),
    Lat(Box<LatencyReport>, u64),
    LatDuration { iters: u64, t_avg: f64, tps: f64 },
    Nothing,
}

pub(super) struct SideRun<'a, P: Provider> {
    p: &'a Params,
    out: Out,
    ctx: Arc<Context<P>>,
    /// The provider's extensions (`-c DC`, `-c XRC`, `--aes_xts`); `None` unless mlx5.
    ext: Ext<P>,
    dev: DevFacts,
    inline: u32,
    out_reads: u32,
    local_mtu: u8,
    mtu: u8,
    sys: SysData,
    sizes: Vec<u64>,
    /// `--payload_file_path`'s bytes, read before connecting.
    payload: Option<Vec<u8>>,
    ep: Option<VerbsEndpoint<P>>,
    my_keys: Vec<KeyMsg>,
    remote_keys: Vec<KeyMsg>,
    /// The peer's records so far, to catch a peer whose exchanges are out of step with ours.
    key_ledger: oob::plausible::KeyLedger,
    header: Option<ReportHeader>,
    results: Vec<(RunResult, Option<f32>)>,
    last_bw: Option<BwResult>,
    peer_report: Option<BwReport>,
    posted: Vec<u64>,
    stop: AtomicBool,
    /// Set by `signal::watch_tick` when the peer closed the OOB connection during a run.
    peer_gone: AtomicBool,
    /// An rperftest peer compared its options with ours and found them equal: a completion
    /// error then cannot come from a -s/-q/-c mismatch.
    options_matched: bool,
    /// A second handle on the OOB socket, watched for a hang-up while the engine runs.
    peer_sock: Option<std::net::TcpStream>,
    /// Data-path stall timeout.
    stall: Duration,
    /// OOB read bound of one setup message.
    setup_timeout: Duration,
    /// Who writes first in each exchange (the TCP role).
    oob_role: oob::Role,
    /// OOB read bound of the measurement phase ([`bound::run_wait`]).
    run_bound: bound::Bound,
    /// `-R`: the rdma_cm data connections.
    cm_data: Option<cm_session::CmData>,
    /// The result header was printed: the measurement phase began.
    measuring: bool,
    /// BW average and message rate of the last BW line printed (for `-w`/`-y`).
    last_line: std::cell::Cell<Option<(f64, f64)>>,
    /// `-W`: the counters, reported after every result line.
    counters: SharedCounters,
    /// perftest's HW rate limiter: every QP took the static rate, so no SW limiter runs.
    hw_rate_taken: bool,
    /// `--plot` / `--series`: every result line (shared with the periodic reporter).
    recorder: record::SharedRecorder,
    /// The peer's version and ours call for the 6.28+ NEGOTIATE exchange after the MTU: the
    /// resources wait for it, as 6.29 creates nothing before the options are agreed.
    negotiating: bool,
}

pub(super) type SharedCounters = std::rc::Rc<std::cell::RefCell<Option<crate::counters::Counters>>>;

impl<'a, P: Provider> SideRun<'a, P> {
    fn is_test_client(&self) -> bool {
        self.p.machine == Role::Client
    }

    /// 6.29 persona: a one-way `--run_infinitely` sender (write/read/atomic, not `-b`) stopped by
    /// SIGINT during the run, which 6.29 catches and reports as the normal end of the test.
    fn user_stopped_infinite_run(&self) -> bool {
        let p = self.p;
        p.persona == params::Persona::V629
            && p.test_method == TestMethod::Infinitely
            && self.is_test_client()
            && !p.duplex
            && !p.verb.has_recv_comp()
            && self.measuring
            && bench_core::signal::requested()
            && bench_core::signal::signal_number() == libc::SIGINT
            && !self.peer_gone.load(std::sync::atomic::Ordering::Acquire)
    }

    /// `--run_infinitely` server whose client went away during the run (its only way to end),
    /// not stopped by a signal of its own.
    fn client_ended_infinite_run(&self) -> bool {
        use std::os::fd::AsRawFd;
        if self.p.test_method != TestMethod::Infinitely || self.is_test_client() || !self.measuring {
            return false;
        }
        if bench_core::signal::requested() {
            return false;
        }
        self.peer_gone.load(std::sync::atomic::Ordering::Acquire)
            || self.peer_sock.as_ref().is_some_and(|s| bench_core::signal::peer_hung_up(s.as_raw_fd(), Duration::ZERO))
    }

    /// `; run: rperftest doctor PEER` with the peer's address from the exchange socket.
    fn doctor_hint(&self) -> String {
        let peer = self.peer_sock.as_ref().and_then(|s| s.peer_addr().ok()).map_or("PEER".to_string(), |a| a.ip().to_string());
        format!("; run: rperftest doctor {peer}")
    }

    fn ep(&mut self) -> Result<&mut VerbsEndpoint<P>, ToolError> {
        self.ep.as_mut().ok_or_else(|| ToolError::new(1, "internal error: resources not created"))
    }

    fn fail(&self, e: EngineError) -> ToolError {
        if e == EngineError::Interrupted {
            if self.peer_gone.load(std::sync::atomic::Ordering::Acquire) {
                return ToolError::new(
                    run_fail_code(self.p),
                    "peer closed the connection during the test: it was stopped, killed or failed; \
                     look at the other side's output",
                );
            }
            let sig = bench_core::signal::signal_number();
            return ToolError::new(bench_core::signal::exit_code(sig), bench_core::signal::stop_message(sig, "the test"));
        }
        let msg = match &e {
            EngineError::Completion { side, status, vendor_err, wr_id, qp }
                if matches!(status, WcStatus::RemAccessErr | WcStatus::RemInvReqErr)
                    && matches!(self.p.verb, Verb::Write | Verb::WriteImm | Verb::Read | Verb::Atomic) =>
            {
                if self.options_matched {
                    // Both sides are rperftest and their options were compared equal.
                    return ToolError::new(
                        run_fail_code(self.p),
                        format!(
                            "Completion with error at {side}: {} (status {}, vendor error 0x{vendor_err:x}, QP #{qp}, wr_id 0x{wr_id:x}): \
                             not an option mismatch (the peer's options were compared with ours and match): the responder \
                             rejected the request; on rxe that follows retransmissions on a slow or lossy path (look for \
                             drops, and in the peer's kernel log), else the peer's memory registration changed",
                            status.name(),
                            status.raw()
                        ),
                    );
                }
                // A C peer < 6.28 cannot tell us its -s: an RDMA access beyond its buffer is the
                // usual reason for these, far more often than a bad rkey.
                format!(
                    "Completion with error at {side}: {} (status {}, vendor error 0x{vendor_err:x}, QP #{qp}, wr_id 0x{wr_id:x}): \
                     likely cause: a message larger than the peer's buffer: are both sides run with the same -s (or both -a) \
                     and -q? (else check the rkey and address the peer sent)",
                    status.name(),
                    status.raw()
                )
            }
            EngineError::Completion { status, .. } => {
                let hint = match status {
                    WcStatus::LocLenErr | WcStatus::LocQpOpErr | WcStatus::RemInvReqErr | WcStatus::RemOpErr
                        if self.p.verb.has_recv_comp() && !self.options_matched =>
                    {
                        "\n (are both sides run with the same message size -s / -a and connection type -c?)".to_string()
                    }
                    // The path's causes (GID type, MTU, UDP 4791) are what the doctor names.
                    WcStatus::RetryExcErr => self.doctor_hint(),
                    _ => String::new(),
                };
                format!("{e}{hint}")
            }
            EngineError::Stalled { .. } => format!("{e}{}", self.doctor_hint()),
            _ => e.to_string(),
        };
        ToolError::new(run_fail_code(self.p), msg)
    }

    /// Create the resources (after the MTU exchange) and print the header block.
    /// `-c UD`: no message above the MTU (a sweep drops those sizes, one size is cut to the MTU
    /// with perftest's note unless `-s` asked for it). Idempotent.
    fn clamp_ud_sizes(&mut self) -> Result<(), ToolError> {
        let p = self.p;
        let mtu_bytes = u64::from(msg::mtu_bytes(self.mtu).unwrap_or(1024));
        if p.connection == Connection::Ud {
            if p.test_method == TestMethod::All {
                self.sizes.retain(|&s| s <= mtu_bytes);
            } else if self.sizes[0] > mtu_bytes {
                if p.size_requested {
                    return Err(ToolError::new(1, " Max message size in UD cannot be greater than MTU"));
                }
                self.out.err(&format!(" Max msg size in UD is MTU {mtu_bytes}\n Changing to this MTU\n"));
                self.sizes[0] = mtu_bytes;
            }
        }
        Ok(())
    }

    fn setup(&mut self) -> Result<(), ToolError> {
        let p = self.p;
        let mtu_bytes = u64::from(msg::mtu_bytes(self.mtu).unwrap_or(1024));
        self.clamp_ud_sizes()?;
        let ud = p.connection == Connection::Ud;
        if p.conn.work_rdma_cm && self.header.is_none() {
            // -R: the header now (perftest prints it before the rdma_cm connection); the
            // resources come with the connection (Action::ConnectCm calls this again).
            self.print_header(mtu_bytes);
            return Ok(());
        }
        if p.connection == Connection::Xrc {
            // perftest's ctx_init opens the XRC domain here (after the exchanges).
            if let Some(m) = crate::engine::xrc::device_problem(&self.dev.name, &self.dev.attr) {
                return Err(ToolError::new(1, m));
            }
        }
        let nq = p.num_qps as usize;
        let max_size = self.sizes.iter().copied().max().unwrap_or(p.size);
        let layout = BufLayout::new(
            nq,
            max_size,
            self.sys.page_size.max(1) as u64,
            self.sys.cache_line.max(1) as u64,
            ud,
        );
        let access = match p.verb {
            Verb::Write | Verb::WriteImm => AccessFlags::REMOTE_WRITE,
            Verb::Read => AccessFlags::REMOTE_READ,
            Verb::Atomic => AccessFlags::REMOTE_ATOMIC,
            Verb::Send | Verb::SendImm => AccessFlags::REMOTE_WRITE | AccessFlags::LOCAL_WRITE,
        } | AccessFlags::LOCAL_WRITE;
        let recv_cq = p.verb.has_recv_comp();
        let setup = VerbsSetup {
            qp_type: match p.connection {
                Connection::Uc => QpType::Uc,
                Connection::Ud => QpType::Ud,
                _ => QpType::Rc,
            },
            num_qps: nq,
            tx_depth: p.tx_depth,
            rx_depth: p.rx_depth,
            inline_size: self.inline,
            use_srq: p.use_srq,
            use_event: p.use_event,
            comp_vector: p.eq_num.unwrap_or(0),
            recv_cq,
            send_cq_depth: p.tx_depth.saturating_mul(p.num_qps).max(1),
            recv_cq_depth: p.rx_depth.saturating_mul(p.num_qps).max(1),
            layout,
            access,
            port: p.dev.ib_port,
            port2: if p.dev.dualport { Some(p.dev.ib_port2) } else { None },
            pkey_index: p.dev.pkey_index as u16,
            fill: super::prepare::fill_for(p.tool, self.payload.clone()).truncated(max_size),
            hugepages: p.buf.use_hugepages,
            mmap: p.buf.mmap_file.as_ref().map(|f| (std::path::PathBuf::from(f), p.buf.mmap_offset)),
            odp: p.buf.odp,
            dc: params::dc::engine_setup(p),
            null_mr: p.buf.use_null_mr,
            xrc: params::xrc_plan(p),
            crypto: p.aes.engine_setup(p.verb != Verb::Atomic),
        };
        if let Some(f) = &p.buf.mmap_file {
            if let Some(m) = crate::engine::memsrc::mmap_file_problem(f, p.buf.mmap_offset, layout.total(), self.sys.page_size.max(1) as u64) {
                return Err(ToolError::new(1, m));
            }
        }
        let ep = VerbsEndpoint::create(&self.ctx, &setup, self.ext).map_err(|e| {
            // -c DC: our line naming the option, then perftest's three lines in its order.
            let m = if setup.dc.is_some() || setup.crypto.is_some() { format!("{e}\n Couldn't create IB resources") } else { format!(" Couldn't create IB resources\n{e}") };
            ToolError::new(1, m)
        })?;
        if p.buf.mmap_file.is_some() {
            // perftest 6.06 (pp_init_mmap) prints this on stdout, also with --output.
            self.out.result(&format!("allocated mmap buffer of size {} at {:#x}\n", layout.total(), ep.buf_addr()));
        }
        if ep.max_inline() < self.inline {
            self.out.err(&format!(
                "  Actual inline-size({}) < requested inline-size({})\n",
                ep.max_inline(),
                self.inline
            ));
            self.inline = ep.max_inline();
        }
        let lid = if self.dev.ethernet { 0 } else { self.dev.port.port_lid };
        let port2 = self.dev.port2;
        // -c XRC: ports alternate within each half (perftest's halved num_of_qps).
        let port_qps = params::lane_plan(p).map_or(nq, |x| x.lanes());
        let on_port2 = |q: usize| p.dev.dualport && crate::engine::dualport::port_slot(q, port_qps) == 1;
        self.my_keys = (0..nq)
            .map(|q| KeyMsg {
                lid: match port2 {
                    Some((lid2, _, _)) if on_port2(q) => lid2,
                    _ => lid,
                },
                out_reads: self.out_reads as u16,
                qpn: ep.qpn(q) & 0xff_ffff,
                psn: random_psn(),
                rkey: ep.rkey(),
                vaddr: ep.recv_addr(q),
                tail_markers_vaddr: 0,
                gid: match port2 {
                    Some((_, _, gid2)) if on_port2(q) => gid2,
                    _ => self.dev.gid,
                },
                // -c DC / -c XRC: every key names this side's SRQ.
                srqn: if matches!(p.connection, Connection::Dc | Connection::Xrc) { ep.srqn().unwrap_or(0) } else { 0 },
            })
            .collect();
        self.remote_keys = vec![KeyMsg::default(); nq];
        self.ep = Some(ep);
        if crate::mcast::attaches(p) {
            self.attach_group()?;
        }
        if self.header.is_none() {
            self.print_header(mtu_bytes);
        }
        Ok(())
    }

    /// `-g`: attach the QPs to this side's group; its key then carries the group (MGID, MLID 0
    /// on RoCE, QPN 0xFFFFFF), as perftest's send_set_up_connection.
    fn attach_group(&mut self) -> Result<(), ToolError> {
        let user = match self.p.mgid.as_deref().map(crate::mcast::parse_mgid) {
            Some(Ok(g)) => Some(g),
            Some(Err(e)) => return Err(ToolError::new(1, e)),
            None => None,
        };
        let mgid = crate::mcast::group_gid(user, self.p.is_tcp_client());
        let nq = self.p.num_qps as usize;
        let ep = self.ep()?;
        for q in 0..nq {
            ep.qp_mut(q)
                .attach_mcast(mgid, 0)
                .map_err(|e| ToolError::new(1, format!("Couldn't attach QP to MultiCast group: {e}\n Unable to set up socket connection")))?;
        }
        for k in &mut self.my_keys {
            k.gid = mgid;
            k.lid = 0;
            k.qpn = crate::mcast::QPN_MCAST;
        }
        Ok(())
    }

    /// The header block (test name, settings, address family of the exchange).
    fn print_header(&mut self, mtu_bytes: u64) {
        let p = self.p;
        let facts = header::HeaderFacts {
            device: self.dev.name.clone(),
            vendor_part_id: self.dev.attr.vendor_part_id,
            ethernet: self.dev.ethernet,
            gid_index: self.dev.gid_index,
            gid_index2: self.dev.port2.and_then(|(_, ix2, _)| ix2),
            is_client: self.is_test_client(),
            mtu_bytes: mtu_bytes as u32,
            inline_size: self.inline,
            out_reads: self.out_reads,
            numa_node: if p.persona.parser_notes() { header::current_numa_node() } else { None },
        };
        let h = header::report_header(p, &facts);
        self.out.text(&report::header(&h, p.persona.style()));
        self.header = Some(h);
    }

    /// `-R`: create the resources on the connection's device and connect every data QP
    /// through rdma_cm (client: CONNECT; server: ACCEPT of the client's requests).
    fn connect_cm(&mut self) -> Result<(), ToolError> {
        self.setup()?;
        let ibdev = self.dev.name.clone();
        let (Some(d), Some(ep)) = (self.cm_data.as_mut(), self.ep.as_mut()) else {
            return Err(ToolError::new(1, "internal error: no rdma_cm data connection state"));
        };
        d.connect_all(&ibdev, ep).map_err(|e| ToolError::new(1, format!(" Failed to create RDMA CM connection\n{e}")))
    }

    fn connect(&mut self) -> Result<(), ToolError> {
        let p = self.p;
        if p.conn.work_rdma_cm {
            // Connected through rdma_cm already (Action::ConnectCm).
            return Ok(());
        }
        if let (Some(mine), Some(theirs)) = (self.my_keys.first(), self.remote_keys.first()) {
            if !crate::mcast::gid_types_compatible(&mine.gid, &theirs.gid) {
                return Err(ToolError::new(1, crate::mcast::GID_INCOMPATIBLE));
            }
        }
        let to_rts = p.kind == TestKind::Lat || self.is_test_client() || p.duplex;
        let mut hw_pending = p.rate.limit_type == params::RateLimitType::Hw;
        let xrc = params::lane_plan(p);
        for q in 0..p.num_qps as usize {
            // -c XRC, -c DC split: senders and receivers pair up with the peer's other kind.
            let r = self.remote_keys[xrc.map_or(q, |x| x.peer_key(q))];
            let c = ConnectParams {
                path_mtu: self.mtu,
                remote_qpn: r.qpn,
                remote_psn: r.psn,
                remote_lid: p.dev.dlid.unwrap_or(r.lid),
                remote_gid: r.gid,
                sgid_index: match self.dev.port2 {
                    Some((_, ix2, _)) if p.dev.dualport && crate::engine::dualport::port_slot(q, xrc.map_or(p.num_qps as usize, |x| x.lanes())) == 1 => ix2,
                    _ => self.dev.gid_index,
                },
                sl: p.dev.sl,
                traffic_class: p.dev.tclass as u8,
                flow_label: if p.dev.flow_labels.is_empty() { 0 } else { p.dev.flow_labels[q % p.dev.flow_labels.len()] },
                own_psn: self.my_keys[q].psn,
                max_dest_rd_atomic: self.out_reads.min(255) as u8,
                max_rd_atomic: u32::from(r.out_reads).clamp(1, 255) as u8,
                timeout: p.dev.qp_timeout,
                retry_cnt: 7,
                rnr_retry: 7,
                to_rts,
                static_rate: if hw_pending { p.rate.hw_rate } else { 0 },
            };
            self.ep()?.connect(q, &c).map_err(|e| ToolError::new(1, format!("{e}\n Unable to Connect the HCA's through the link")))?;
            if hw_pending {
                // perftest's check after each QP while the limiter is still HW (engine::hw_rate).
                let queried = self.ep()?.qp_static_rate(q);
                if queried.is_none() {
                    self.out.err(hw_rate::QUERY_FAILED_NOTICE);
                }
                match hw_rate::verdict(queried, p.rate.hw_rate, !self.dev.ethernet, p.rate.limit_type_explicit) {
                    hw_rate::Verdict::Taken => self.hw_rate_taken = true,
                    hw_rate::Verdict::FallBackToSw => {
                        self.out.err(hw_rate::FALLBACK_NOTICE);
                        self.hw_rate_taken = false;
                        hw_pending = false;
                    }
                    hw_rate::Verdict::Fail => {
                        return Err(ToolError::new(
                            1,
                            format!("{}\n Unable to Connect the HCA's through the link", hw_rate::FAILED_LINE),
                        ))
                    }
                }
            }
        }
        if p.connection == Connection::Dc {
            // A DCT has its number only from RTR on: the next exchange sends the new one.
            for q in 0..p.num_qps as usize {
                self.my_keys[q].qpn = self.ep()?.qpn(q) & 0xff_ffff;
            }
        }
        Ok(())
    }

    fn addr_show(&self) -> AddrShow {
        AddrShow {
            verb: self.p.verb,
            rdma_cm: self.p.conn.use_rdma_cm,
            srqn: matches!(self.p.connection, Connection::Dc | Connection::Xrc),
            gid: self.dev.gid_index.is_some(),
            mgid: false,
            dlid: self.p.dev.dlid,
        }
    }

    fn targets(&self, size: u64) -> Vec<QpTarget> {
        let Some(ep) = self.ep.as_ref() else { return Vec::new() };
        let _ = size;
        if let Some(x) = ep.xrc_plan() {
            let remote = |k: usize| {
                let r = self.remote_keys.get(k).copied().unwrap_or_default();
                (uverbs::wr::RemoteAddr { addr: r.vaddr, rkey: r.rkey }, r.srqn)
            };
            let mut t = crate::engine::xrc::lane_targets(&x, ep.lkey(), |q| ep.send_addr(q), |l| ep.recv_post_addr(l), remote);
            // -c DC: a lane's DCI sends to its partner DCT (set at connect).
            t.iter_mut().enumerate().for_each(|(l, t)| t.ud = ep.ud_dest(x.send_qp(l)));
            return t;
        }
        (0..self.p.num_qps as usize)
            .map(|q| QpTarget {
                lkey: ep.lkey(),
                local_addr: ep.send_addr(q),
                recv_addr: ep.recv_post_addr(q),
                remote: uverbs::wr::RemoteAddr { addr: self.remote_keys[q].vaddr, rkey: self.remote_keys[q].rkey },
                ud: ep.ud_dest(q),
                remote_srqn: 0,
            })
            .collect()
    }

    fn recv_len(&self, size: u64) -> u32 {
        let extra = if self.p.connection == Connection::Ud { UD_GRH } else { 0 };
        (size + extra) as u32
    }

    fn atomic_operands(&self) -> (u64, u64) {
        match self.p.atomic_type {
            AtomicType::FetchAndAdd => (1, 0),
            AtomicType::CmpAndSwap => (0, 0),
        }
    }

    fn wait(&self) -> WaitMode {
        if self.p.use_event {
            WaitMode::Event
        } else {
            WaitMode::Busy
        }
    }

    fn bw_config(&self, size: u64) -> BwConfig {
        let p = self.p;
        let (compare_add, swap) = self.atomic_operands();
        // --run_infinitely has no window: the loops run until stopped (iterations unbounded).
        let infinite = p.test_method == TestMethod::Infinitely;
        let duration = (p.test_type == TestType::Duration && !infinite).then(|| DurationWindow {
            total: Duration::from_secs(u64::from(p.duration)),
            margin: Duration::from_secs(u64::from(p.margin.unwrap_or(p.duration / 4))),
        });
        BwConfig {
            iters: if infinite { u64::MAX } else { p.iters },
            tx_depth: p.tx_depth,
            rx_depth: p.recv_depth_per_qp(),
            cq_mod: p.cq_mod,
            post_list: p.post_list,
            size: size as u32,
            opcode: engine::opcode_for(p.verb, p.atomic_type),
            inline: self.inline > 0 && size <= u64::from(self.inline),
            wait: self.wait(),
            record_peak: !p.no_peak && duration.is_none() && p.iters <= 20000,
            duration,
            stall_timeout: self.stall,
            cycle_buffer: self.sys.page_size.max(1) as u64,
            cache_line: self.sys.cache_line.max(1) as u64,
            compare_add,
            swap,
            cpu_probe: self.cpu_probe(),
            // Every size of the run was checked while parsing (params::rate::check_sizes).
            // The HW limiter (params::rate) runs the SW one unless the QPs took the static rate.
            rate_limit: if self.hw_rate_taken { None } else { params::rate::sw_limiter(p, size).and_then(Result::ok) },
        }
    }

    /// `--cpu_util` with `-D`: /proc/stat is read when the sample window opens and closes.
    fn cpu_probe(&self) -> Option<engine::CpuProbe> {
        (self.p.report.cpu_util && self.p.test_type == TestType::Duration).then_some(read_proc_stat as engine::CpuProbe)
    }

    fn lat_config(&self, size: u64) -> LatConfig {
        let p = self.p;
        let (compare_add, swap) = self.atomic_operands();
        LatConfig {
            iters: p.iters,
            size: size as u32,
            opcode: engine::opcode_for(p.verb, p.atomic_type),
            inline: self.inline > 0 && size <= u64::from(self.inline),
            wait: self.wait(),
            stall_timeout: self.stall,
            duration: (p.test_type == TestType::Duration).then(|| Duration::from_secs(u64::from(p.duration))),
            margin: Duration::from_secs(u64::from(p.margin.unwrap_or(p.duration / 4))),
            gap: Duration::from_micros(u64::from(p.buf.latency_gap)),
            recv_len: self.recv_len(size),
            rx_depth: p.recv_depth_per_qp(),
            compare_add,
            swap,
            cpu_probe: self.cpu_probe(),
        }
    }

    fn bw_result(&self, size: u64, s: &BwSamples, cfg: &BwConfig, receiver: bool) -> Result<BwResult, ToolError> {
        let p = self.p;
        let duration = cfg.duration.is_some();
        let (tp, tc): (Vec<u64>, Vec<u64>) = match (receiver || duration, s.window) {
            (true, Some((a, b))) => (vec![a], vec![b]),
            _ => (s.tposted.clone(), s.tcompleted.clone()),
        };
        let peak = cfg.record_peak && !receiver && !duration;
        let inp = BwInput {
            tposted: &tp,
            tcompleted: &tc,
            iters: if duration { s.messages } else { p.iters },
            num_qps: report_qps(p),
            size,
            post_list: u64::from(p.post_list),
            cq_mod: u64::from(p.cq_mod),
            ticks_per_sec: clock::TICKS_PER_SEC as f64,
            peak,
            duration,
            report_gbits: p.report.fmt == ReportFormat::Gbs,
            run_inf_bi_factor: 1,
            iters_per_port: if p.report.per_port { crate::engine::dualport::iters_per_port(&s.per_qp) } else { [0, 0] },
        };
        stats::bandwidth(&inp).map_err(|e| ToolError::new(1, format!("Can't produce a report: {e}")))
    }

    fn lat_result(&self, s: &LatSamples) -> Result<RunResult, ToolError> {
        let p = self.p;
        let tpu = if p.report.cycles { 1.0 } else { clock::TICKS_PER_SEC as f64 / 1e6 };
        let rtt = p.verb.rtt_factor();
        match s.window {
            Some((a, b)) => {
                let iters = s.iters.max(1);
                let (t_avg, tps) = stats::latency_duration(b.saturating_sub(a), tpu, rtt, iters);
                Ok(RunResult::LatDuration { iters: s.iters, t_avg, tps })
            }
            None => {
                let rep = stats::latency(&s.tposted, tpu, rtt).map_err(|e| ToolError::new(run_fail_code(p), e.to_string()))?;
                Ok(RunResult::Lat(Box::new(rep), s.iters))
            }
        }
    }

    fn run(&mut self, size_index: usize) -> Result<(), ToolError> {
        let p = self.p;
        let size = self.sizes.get(size_index).copied().unwrap_or(p.size);
        let targets = self.targets(size);
        let client = self.is_test_client();
        let infinite = p.test_method == TestMethod::Infinitely;
        let cpu_window;
        let result = match p.tool {
            Tool::WriteBw | Tool::ReadBw | Tool::AtomicBw | Tool::SendBw => {
                let cfg = self.bw_config(size);
                let receiver = p.tool == Tool::SendBw && !client && !p.duplex;
                let duplex_send = p.tool == Tool::SendBw && p.duplex;
                let mut cfg = cfg;
                if duplex_send {
                    cfg.record_peak = false;
                }
                let posted = std::mem::take(&mut self.posted);
                let recv_len = self.recv_len(size);
                let stop = &self.stop;
                if infinite {
                    self.recorder.borrow_mut().start_clock();
                }
                let mut periodic = self.infinite_reporter(size);
                let ep = self.ep.as_mut().ok_or_else(|| ToolError::new(1, "no resources"))?;
                let r = watched(stop, &self.peer_gone, self.peer_sock.as_ref(), || {
                    if infinite && !receiver {
                        // --run_infinitely: a line every -D seconds until stopped (never Ok).
                        let period = Duration::from_secs(u64::from(p.duration.max(1)));
                        bw::run_sender_infinitely(ep, &cfg, &targets, stop, period, &mut periodic)
                    } else if duplex_send {
                        bw::run_duplex_send(ep, &cfg, &targets, recv_len, posted, !client, stop)
                    } else if receiver {
                        bw::run_receiver(ep, &cfg, &targets, recv_len, posted, stop)
                    } else {
                        bw::run_sender(ep, &cfg, &targets, stop)
                    }
                });
                let s = r.map_err(|e| self.fail(e))?;
                cpu_window = s.cpu;
                let res = self.bw_result(size, &s, &cfg, receiver || duplex_send)?;
                self.last_bw = Some(res);
                RunResult::Bw(res)
            }
            Tool::WriteLat | Tool::SendLat | Tool::ReadLat | Tool::AtomicLat => {
                let cfg = self.lat_config(size);
                let role = if client { lat::Role::Client } else { lat::Role::Server };
                let (stop, peer_gone) = (&self.stop, &self.peer_gone);
                let t = targets.first().copied().unwrap_or_default();
                let ep = self.ep.as_mut().ok_or_else(|| ToolError::new(1, "no resources"))?;
                let r = watched(stop, peer_gone, self.peer_sock.as_ref(), || match p.tool {
                    Tool::WriteLat => lat::run_write_lat(ep, &cfg, &t, role, stop, peer_gone),
                    Tool::SendLat => lat::run_send_lat(ep, &cfg, &t, role, stop),
                    _ => lat::run_read_lat(ep, &cfg, &t, stop),
                });
                let s = r.map_err(|e| self.fail(e))?;
                cpu_window = s.cpu;
                self.lat_result(&s)?
            }
        };
        // CPU utilisation over the sample window only (perftest reads /proc/stat at SAMPLE and
        // STOP_SAMPLE).
        let cpu = cpu_between(cpu_window);
        if self.results.len() <= size_index {
            self.results.resize_with(size_index + 1, || (RunResult::Nothing, None));
        }
        self.results[size_index] = (result, cpu);
        Ok(())
    }

    fn post_receives(&mut self, size_index: usize) -> Result<(), ToolError> {
        let p = self.p;
        let size = self.sizes.get(size_index).copied().unwrap_or(p.size);
        let targets = self.targets(size);
        let recv_len = self.recv_len(size);
        match p.tool {
            Tool::SendLat => {
                let cfg = self.lat_config(size);
                let t = targets.first().copied().unwrap_or_default();
                let ep = self.ep()?;
                lat::prepost_lat_receives(ep, &cfg, &t).map_err(|e| ToolError::new(run_fail_code(p), e.to_string()))?;
            }
            _ => {
                let cfg = self.bw_config(size);
                let ep = self.ep.as_mut().ok_or_else(|| ToolError::new(1, "no resources"))?;
                let posted = bw::prepost_receives(ep, &cfg, &targets, recv_len)
                    .map_err(|e| ToolError::new(run_fail_code(p), format!("Couldn't post recv: {e}")))?;
                self.posted = posted;
            }
        }
        Ok(())
    }

}

/// The notes of the caps that lowered what the command line asked for (perftest's texts).
fn print_caps(out: Out, caps: &[limits::Cap]) {
    for c in caps {
        match *c {
            limits::Cap::InlineDisabled => {
                out.text(DASH_LINE);
                out.err("Device not recognized to implement inline feature. Disabling it\n");
            }
            limits::Cap::OutReads { max } => {
                out.text(DASH_LINE);
                out.err(&format!(" Number of outstanding reads is above max = {max}\n Changing to that max value\n"));
            }
            limits::Cap::Mtu { active } => out.text(&format!(
                " Requested mtu is higher than active mtu \n Changing to active mtu - {}\n",
                msg::mtu_bytes(active).unwrap_or(0)
            )),
        }
    }
}

/// The local MTU, with perftest's note when `-m` was lowered to the port's.
fn local_mtu_for(p: &Params, dev: &DevFacts, out: Out) -> u8 {
    let (mtu, cap) = limits::local_mtu(p, dev.port.active_mtu);
    print_caps(out, cap.as_slice());
    mtu
}

/// The shape of this side's exchange.
fn plan_options(p: &Params, sizes: &[u64], local_mtu: u8) -> oob::PlanOptions {
    // -c UD: sizes are capped to the MTU later; the plan needs the final count, computed from
    // the local MTU (the peer applies the same rule with the same effective MTU in practice).
    let all_sizes = limits::planned_sizes(p, sizes, u64::from(msg::mtu_bytes(local_mtu).unwrap_or(4096)));
    oob::PlanOptions {
        num_qps: p.num_qps as usize,
        bidirectional: p.duplex,
        all_sizes,
        write_with_imm: p.verb == Verb::WriteImm,
        duration: p.test_type == TestType::Duration,
        report_per_port: p.report.per_port,
        // The step is there whenever versions are exchanged; it sends only when both versions
        // call for it (oob::msg::PeerVersion::negotiates_with).
        negotiate: !p.conn.dont_xchg_versions,
        rdma_cm: p.conn.use_rdma_cm,
        cm_qps: p.conn.work_rdma_cm,
        exchange_versions: !p.conn.dont_xchg_versions,
    }
}
