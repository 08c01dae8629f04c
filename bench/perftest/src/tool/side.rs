//! One side of a run: the out-of-band plan's hooks (connect, run, report) and the engine
//! loops, for one provider (static dispatch inside [`providers::open`]). Its state is held in
//! groups that change together: [`conf`] (fixed once set up), [`shape`] (what the exchanges
//! settle), [`peer`] (what the peer sent), [`watch`] (how a running loop stops), [`verbs`] (the
//! resources) and [`print`] (the report state); [`SideRun`] holds them and crosses them.
//! [`start`] sets a side up, runs its plan and ends it.

use std::time::Duration;

use uverbs::objects::AccessFlags;
use uverbs::provider::{Provider, QpType};
use uverbs::wr::WcStatus;

use crate::engine::bw::{BwConfig, DurationWindow};
use crate::engine::lat::LatConfig;
use crate::engine::verbs::{BufLayout, ConnectParams, VerbsEndpoint, VerbsSetup};
use crate::engine::{bw, hw_rate, lat, EngineError};
use crate::oob::msg::{self, KeyMsg};
use crate::params::{Connection, Params, TestKind, TestMethod, TestType, Tool, Verb};
use crate::report::DASH_LINE;
use crate::stats::{BwResult, LatencyReport};
use crate::{engine, oob, params};

use super::setup::{cpu_between, random_psn, DevFacts};
use super::{limits, run_fail_code, Out, ToolError};

mod conf;
mod hooks;
mod peer;
mod print;
mod shape;
mod start;
mod verbs;
mod watch;

use conf::SideConf;
use peer::Peer;
use print::Reporting;
use shape::Shape;
pub(super) use start::run_with_context;
use verbs::Verbs;
use watch::{watched, Watch};

pub(super) enum RunResult {
    Bw(BwResult),
    Lat(Box<LatencyReport>, u64),
    LatDuration { iters: u64, t_avg: f64, tps: f64 },
    Nothing,
}

/// One side of a run: its state in groups that change together (see the module's note); the
/// methods here are the ones that cross groups, the plan's hooks are in [`hooks`].
pub(super) struct SideRun<'a, P: Provider> {
    conf: SideConf<'a>,
    shape: Shape,
    peer: Peer,
    watch: Watch,
    verbs: Verbs<P>,
    report: Reporting,
}

impl<P: Provider> SideRun<'_, P> {
    /// 6.29 persona: a one-way `--run_infinitely` sender (write/read/atomic, not `-b`) stopped by
    /// SIGINT during the run, which 6.29 catches and reports as the normal end of the test.
    fn user_stopped_infinite_run(&self) -> bool {
        let p = self.conf.p;
        p.persona == params::Persona::V629
            && p.test_method == TestMethod::Infinitely
            && self.conf.is_test_client()
            && !p.duplex
            && !p.verb.has_recv_comp()
            && self.report.measuring
            && bench_core::signal::requested()
            && bench_core::signal::signal_number() == libc::SIGINT
            && !self.watch.peer_gone.load(std::sync::atomic::Ordering::Acquire)
    }

    /// `--run_infinitely` server whose client went away during the run (its only way to end),
    /// not stopped by a signal of its own.
    fn client_ended_infinite_run(&self) -> bool {
        use std::os::fd::AsRawFd;
        if self.conf.p.test_method != TestMethod::Infinitely || self.conf.is_test_client() || !self.report.measuring {
            return false;
        }
        if bench_core::signal::requested() {
            return false;
        }
        self.watch.peer_gone.load(std::sync::atomic::Ordering::Acquire)
            || self.watch.peer_sock.as_ref().is_some_and(|s| bench_core::signal::peer_hung_up(s.as_raw_fd(), Duration::ZERO))
    }

    fn fail(&self, e: EngineError) -> ToolError {
        if e == EngineError::Interrupted {
            if self.watch.peer_gone.load(std::sync::atomic::Ordering::Acquire) {
                return ToolError::new(
                    run_fail_code(self.conf.p),
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
                    && matches!(self.conf.p.verb, Verb::Write | Verb::WriteImm | Verb::Read | Verb::Atomic) =>
            {
                if self.peer.options_matched {
                    // Both sides are rperftest and their options were compared equal.
                    return ToolError::new(
                        run_fail_code(self.conf.p),
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
                        if self.conf.p.verb.has_recv_comp() && !self.peer.options_matched =>
                    {
                        "\n (are both sides run with the same message size -s / -a and connection type -c?)".to_string()
                    }
                    // The path's causes (GID type, MTU, UDP 4791) are what the doctor names.
                    WcStatus::RetryExcErr => self.watch.doctor_hint(),
                    _ => String::new(),
                };
                format!("{e}{hint}")
            }
            EngineError::Stalled { .. } => format!("{e}{}", self.watch.doctor_hint()),
            _ => e.to_string(),
        };
        ToolError::new(run_fail_code(self.conf.p), msg)
    }

    /// Create the resources (after the MTU exchange) and print the header block.
    fn setup(&mut self) -> Result<(), ToolError> {
        let p = self.conf.p;
        let mtu_bytes = u64::from(msg::mtu_bytes(self.shape.mtu).unwrap_or(1024));
        self.shape.clamp_ud_sizes(&self.conf)?;
        if p.conn.work_rdma_cm && self.report.header.is_none() {
            // -R: the header now (perftest prints it before the rdma_cm connection); the
            // resources come with the connection (Action::ConnectCm calls this again).
            self.report.print_header(&self.conf, &self.shape, mtu_bytes);
            return Ok(());
        }
        if p.connection == Connection::Xrc {
            // perftest's ctx_init opens the XRC domain here (after the exchanges).
            if let Some(m) = crate::engine::xrc::device_problem(&self.conf.dev.name, &self.conf.dev.attr) {
                return Err(ToolError::new(1, m));
            }
        }
        let nq = p.num_qps as usize;
        let setup = verbs_setup(&self.conf, &self.shape);
        let layout = setup.layout;
        if let Some(f) = &p.buf.mmap_file {
            if let Some(m) = crate::engine::memsrc::mmap_file_problem(f, p.buf.mmap_offset, layout.total(), self.shape.sys.page_size.max(1) as u64) {
                return Err(ToolError::new(1, m));
            }
        }
        let mut setup = setup;
        if let Some(req) = &p.buf.gpu {
            // 6.29's ctx_init: the memory's init (the runtime, the device, a context) right
            // before the buffer is allocated and registered.
            let mut log = String::new();
            let g = crate::gpu::GpuBuffer::allocate(req, layout.total(), &mut log);
            self.conf.out.result(&log);
            // One line: 6.29's own (or ours where it has none); 6.29 then adds "Failed to init
            // memory", which says nothing more.
            let g = g.map_err(|m| ToolError::new(1, m))?;
            setup.device_mem = Some(crate::engine::verbs::DeviceMem {
                addr: g.addr(),
                len: usize::try_from(layout.total()).unwrap_or(usize::MAX),
                dmabuf: g.dmabuf().map(|(fd, off)| (std::os::fd::AsRawFd::as_raw_fd(&fd), off)),
            });
            self.verbs.gpu = Some(g);
        }
        let ep = VerbsEndpoint::create(&self.verbs.ctx, &setup, self.verbs.ext).map_err(|e| {
            // -c DC: our line naming the option, then perftest's three lines in its order.
            let m = if setup.dc.is_some() || setup.crypto.is_some() { format!("{e}\n Couldn't create IB resources") } else { format!(" Couldn't create IB resources\n{e}") };
            ToolError::new(1, m)
        })?;
        if p.buf.mmap_file.is_some() {
            // perftest 6.06 (pp_init_mmap) prints this on stdout, also with --output.
            self.conf.out.result(&format!("allocated mmap buffer of size {} at {:#x}\n", layout.total(), ep.buf_addr()));
        }
        if ep.max_inline() < self.shape.inline {
            self.conf.out.err(&format!(
                "  Actual inline-size({}) < requested inline-size({})\n",
                ep.max_inline(),
                self.shape.inline
            ));
            self.shape.inline = ep.max_inline();
        }
        self.verbs.my_keys = local_keys(&self.conf, self.shape.out_reads, &ep);
        self.peer.remote_keys = vec![KeyMsg::default(); nq];
        self.verbs.ep = Some(ep);
        if crate::mcast::attaches(p) {
            self.verbs.attach_group(p)?;
        }
        if self.report.header.is_none() {
            self.report.print_header(&self.conf, &self.shape, mtu_bytes);
        }
        Ok(())
    }

    /// `-R`: create the resources on the connection's device and connect every data QP
    /// through rdma_cm (client: CONNECT; server: ACCEPT of the client's requests).
    fn connect_cm(&mut self) -> Result<(), ToolError> {
        self.setup()?;
        let ibdev = self.conf.dev.name.clone();
        let (Some(d), Some(ep)) = (self.verbs.cm_data.as_mut(), self.verbs.ep.as_mut()) else {
            return Err(ToolError::new(1, "internal error: no rdma_cm data connection state"));
        };
        d.connect_all(&ibdev, ep).map_err(|e| ToolError::new(1, format!(" Failed to create RDMA CM connection\n{e}")))
    }

    fn connect(&mut self) -> Result<(), ToolError> {
        let p = self.conf.p;
        if p.conn.work_rdma_cm {
            // Connected through rdma_cm already (Action::ConnectCm).
            return Ok(());
        }
        if let (Some(mine), Some(theirs)) = (self.verbs.my_keys.first(), self.peer.remote_keys.first()) {
            if !crate::mcast::gid_types_compatible(&mine.gid, &theirs.gid) {
                return Err(ToolError::new(1, crate::mcast::GID_INCOMPATIBLE));
            }
        }
        let to_rts = p.kind == TestKind::Lat || self.conf.is_test_client() || p.duplex;
        let mut hw_pending = p.rate.limit_type == params::RateLimitType::Hw;
        let xrc = params::lane_plan(p);
        for q in 0..p.num_qps as usize {
            // -c XRC, -c DC split: senders and receivers pair up with the peer's other kind.
            let r = self.peer.remote_keys[xrc.map_or(q, |x| x.peer_key(q))];
            let c = ConnectParams {
                path_mtu: self.shape.mtu,
                remote_qpn: r.qpn,
                remote_psn: r.psn,
                remote_lid: p.dev.dlid.unwrap_or(r.lid),
                remote_gid: r.gid,
                sgid_index: match self.conf.dev.port2 {
                    Some((_, ix2, _)) if p.dev.dualport && crate::engine::dualport::port_slot(q, xrc.map_or(p.num_qps as usize, |x| x.lanes())) == 1 => ix2,
                    _ => self.conf.dev.gid_index,
                },
                sl: p.dev.sl,
                traffic_class: p.dev.tclass as u8,
                flow_label: if p.dev.flow_labels.is_empty() { 0 } else { p.dev.flow_labels[q % p.dev.flow_labels.len()] },
                own_psn: self.verbs.my_keys[q].psn,
                max_dest_rd_atomic: self.shape.out_reads.min(255) as u8,
                max_rd_atomic: u32::from(r.out_reads).clamp(1, 255) as u8,
                timeout: p.dev.qp_timeout,
                retry_cnt: 7,
                rnr_retry: 7,
                to_rts,
                static_rate: if hw_pending { p.rate.hw_rate } else { 0 },
            };
            self.verbs.ep()?.connect(q, &c).map_err(|e| ToolError::new(1, format!("{e}\n Unable to Connect the HCA's through the link")))?;
            if hw_pending {
                // perftest's check after each QP while the limiter is still HW (engine::hw_rate).
                let queried = self.verbs.ep()?.qp_static_rate(q);
                if queried.is_none() {
                    self.conf.out.err(hw_rate::QUERY_FAILED_NOTICE);
                }
                match hw_rate::verdict(queried, p.rate.hw_rate, !self.conf.dev.ethernet, p.rate.limit_type_explicit) {
                    hw_rate::Verdict::Taken => self.verbs.hw_rate_taken = true,
                    hw_rate::Verdict::FallBackToSw => {
                        self.conf.out.err(hw_rate::FALLBACK_NOTICE);
                        self.verbs.hw_rate_taken = false;
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
                self.verbs.my_keys[q].qpn = self.verbs.ep()?.qpn(q) & 0xff_ffff;
            }
        }
        Ok(())
    }

    fn bw_config(&self, size: u64) -> BwConfig {
        let p = self.conf.p;
        let (compare_add, swap) = self.conf.atomic_operands();
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
            inline: self.shape.inline > 0 && size <= u64::from(self.shape.inline),
            wait: self.conf.wait(),
            record_peak: !p.no_peak && duration.is_none() && p.iters <= 20000,
            duration,
            stall_timeout: self.conf.stall,
            cycle_buffer: self.shape.sys.page_size.max(1) as u64,
            cache_line: self.shape.sys.cache_line.max(1) as u64,
            compare_add,
            swap,
            cpu_probe: self.conf.cpu_probe(),
            // Every size of the run was checked while parsing (params::rate::check_sizes).
            // The HW limiter (params::rate) runs the SW one unless the QPs took the static rate.
            rate_limit: if self.verbs.hw_rate_taken { None } else { params::rate::sw_limiter(p, size).and_then(Result::ok) },
        }
    }

    fn lat_config(&self, size: u64) -> LatConfig {
        let p = self.conf.p;
        let (compare_add, swap) = self.conf.atomic_operands();
        LatConfig {
            iters: p.iters,
            size: size as u32,
            opcode: engine::opcode_for(p.verb, p.atomic_type),
            inline: self.shape.inline > 0 && size <= u64::from(self.shape.inline),
            wait: self.conf.wait(),
            stall_timeout: self.conf.stall,
            duration: (p.test_type == TestType::Duration).then(|| Duration::from_secs(u64::from(p.duration))),
            margin: Duration::from_secs(u64::from(p.margin.unwrap_or(p.duration / 4))),
            gap: Duration::from_micros(u64::from(p.buf.latency_gap)),
            recv_len: self.conf.recv_len(size),
            rx_depth: p.recv_depth_per_qp(),
            compare_add,
            swap,
            cpu_probe: self.conf.cpu_probe(),
        }
    }

    fn run(&mut self, size_index: usize) -> Result<(), ToolError> {
        let p = self.conf.p;
        let size = self.shape.sizes.get(size_index).copied().unwrap_or(p.size);
        let targets = self.verbs.targets(p, &self.peer.remote_keys, size);
        let client = self.conf.is_test_client();
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
                let posted = std::mem::take(&mut self.verbs.posted);
                let recv_len = self.conf.recv_len(size);
                let stop = &self.watch.stop;
                if infinite {
                    self.report.recorder.borrow_mut().start_clock();
                }
                let mut periodic = self.report.infinite_reporter(&self.conf, size);
                let ep = self.verbs.ep.as_mut().ok_or_else(|| ToolError::new(1, "no resources"))?;
                let r = watched(stop, &self.watch.peer_gone, self.watch.peer_sock.as_ref(), || {
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
                let res = self.conf.bw_result(size, &s, &cfg, receiver || duplex_send)?;
                self.report.last_bw = Some(res);
                RunResult::Bw(res)
            }
            Tool::WriteLat | Tool::SendLat | Tool::ReadLat | Tool::AtomicLat => {
                let cfg = self.lat_config(size);
                let role = if client { lat::Role::Client } else { lat::Role::Server };
                let (stop, peer_gone) = (&self.watch.stop, &self.watch.peer_gone);
                let t = targets.first().copied().unwrap_or_default();
                let ep = self.verbs.ep.as_mut().ok_or_else(|| ToolError::new(1, "no resources"))?;
                let r = watched(stop, peer_gone, self.watch.peer_sock.as_ref(), || match p.tool {
                    Tool::WriteLat => lat::run_write_lat(ep, &cfg, &t, role, stop, peer_gone),
                    Tool::SendLat => lat::run_send_lat(ep, &cfg, &t, role, stop),
                    _ => lat::run_read_lat(ep, &cfg, &t, stop),
                });
                let s = r.map_err(|e| self.fail(e))?;
                cpu_window = s.cpu;
                self.conf.lat_result(&s)?
            }
        };
        // CPU utilisation over the sample window only (perftest reads /proc/stat at SAMPLE and
        // STOP_SAMPLE).
        let cpu = cpu_between(cpu_window);
        if self.report.results.len() <= size_index {
            self.report.results.resize_with(size_index + 1, || (RunResult::Nothing, None));
        }
        self.report.results[size_index] = (result, cpu);
        Ok(())
    }

    fn post_receives(&mut self, size_index: usize) -> Result<(), ToolError> {
        let p = self.conf.p;
        let size = self.shape.sizes.get(size_index).copied().unwrap_or(p.size);
        let targets = self.verbs.targets(p, &self.peer.remote_keys, size);
        let recv_len = self.conf.recv_len(size);
        match p.tool {
            Tool::SendLat => {
                let cfg = self.lat_config(size);
                let t = targets.first().copied().unwrap_or_default();
                let ep = self.verbs.ep()?;
                lat::prepost_lat_receives(ep, &cfg, &t).map_err(|e| ToolError::new(run_fail_code(p), e.to_string()))?;
            }
            _ => {
                let cfg = self.bw_config(size);
                let ep = self.verbs.ep.as_mut().ok_or_else(|| ToolError::new(1, "no resources"))?;
                let posted = bw::prepost_receives(ep, &cfg, &targets, recv_len)
                    .map_err(|e| ToolError::new(run_fail_code(p), format!("Couldn't post recv: {e}")))?;
                self.verbs.posted = posted;
            }
        }
        Ok(())
    }
}

/// What [`SideRun::setup`] creates: the QPs, CQs and buffers for the agreed sizes, with the
/// access and memory options of the command line.
fn verbs_setup(conf: &SideConf, shape: &Shape) -> VerbsSetup {
    let p = conf.p;
    let ud = p.connection == Connection::Ud;
    let nq = p.num_qps as usize;
    let max_size = shape.sizes.iter().copied().max().unwrap_or(p.size);
    let layout = BufLayout::new(
        nq,
        max_size,
        shape.sys.page_size.max(1) as u64,
        shape.sys.cache_line.max(1) as u64,
        ud,
    );
    let access = match p.verb {
        Verb::Write | Verb::WriteImm => AccessFlags::REMOTE_WRITE,
        Verb::Read => AccessFlags::REMOTE_READ,
        Verb::Atomic => AccessFlags::REMOTE_ATOMIC,
        Verb::Send | Verb::SendImm => AccessFlags::REMOTE_WRITE | AccessFlags::LOCAL_WRITE,
    } | AccessFlags::LOCAL_WRITE;
    let recv_cq = p.verb.has_recv_comp();
    VerbsSetup {
        qp_type: match p.connection {
            Connection::Uc => QpType::Uc,
            Connection::Ud => QpType::Ud,
            Connection::Srd => QpType::Srd,
            _ => QpType::Rc,
        },
        num_qps: nq,
        tx_depth: p.tx_depth,
        rx_depth: p.rx_depth,
        inline_size: shape.inline,
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
        fill: super::prepare::fill_for(p.tool, conf.payload.clone()).truncated(max_size),
        hugepages: p.buf.use_hugepages,
        mmap: p.buf.mmap_file.as_ref().map(|f| (std::path::PathBuf::from(f), p.buf.mmap_offset)),
        odp: p.buf.odp,
        device_mem: None,
        dc: params::dc::engine_setup(p),
        null_mr: p.buf.use_null_mr,
        xrc: params::xrc_plan(p),
        crypto: p.aes.engine_setup(p.verb != Verb::Atomic),
    }
}

/// This side's key records, one per QP (`-O`: the QPs on the second port carry its LID and GID).
fn local_keys<P: Provider>(conf: &SideConf, out_reads: u32, ep: &VerbsEndpoint<P>) -> Vec<KeyMsg> {
    let p = conf.p;
    let nq = p.num_qps as usize;
    let lid = if conf.dev.ethernet { 0 } else { conf.dev.port.port_lid };
    let port2 = conf.dev.port2;
    // -c XRC: ports alternate within each half (perftest's halved num_of_qps).
    let port_qps = params::lane_plan(p).map_or(nq, |x| x.lanes());
    let on_port2 = |q: usize| p.dev.dualport && crate::engine::dualport::port_slot(q, port_qps) == 1;
    (0..nq)
        .map(|q| KeyMsg {
            lid: match port2 {
                Some((lid2, _, _)) if on_port2(q) => lid2,
                _ => lid,
            },
            out_reads: out_reads as u16,
            qpn: ep.qpn(q) & 0xff_ffff,
            psn: random_psn(),
            rkey: ep.rkey(),
            vaddr: ep.recv_addr(q),
            tail_markers_vaddr: 0,
            gid: match port2 {
                Some((_, _, gid2)) if on_port2(q) => gid2,
                _ => conf.dev.gid,
            },
            // -c DC / -c XRC: every key names this side's SRQ.
            srqn: if matches!(p.connection, Connection::Dc | Connection::Xrc) { ep.srqn().unwrap_or(0) } else { 0 },
        })
        .collect()
}

/// The notes of the caps that lowered what the command line asked for (perftest's texts).
fn print_caps(out: Out, caps: &[limits::Cap]) {
    for c in caps {
        match *c {
            limits::Cap::InlineDisabled => {
                out.text(DASH_LINE);
                out.err("Device not recognized to implement inline feature. Disabling it\n");
            }
            limits::Cap::CudaInline => out.text("Perftest doesn't supports CUDA tests with inline messages: inline size set to 0\n"),
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
