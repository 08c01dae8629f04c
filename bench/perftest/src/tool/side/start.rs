//! How a side starts and ends: what is fixed before connecting (timeouts, the device's facts and
//! limits, the payload), the `-W` counters, the out-of-band connection (TCP or rdma_cm), the
//! plan's execution and what is reported after it.

use std::sync::Arc;
use std::time::Duration;

use uverbs::objects::Context;
use uverbs::provider::Provider;

use crate::engine::dv::Ext;
use crate::oob::msg::SysData;
use crate::oob::{Channel, Listener, OobConfig};
use crate::params::{Connection, Params, Role, TestKind, Verb};
use crate::report::DASH_LINE;
use crate::tool::setup::{cache_line, oob_fail, page_size, query_device, to_tool, DevFacts};
use crate::tool::{installed_timeout, limits, limits_verdict, record, source_ip, Out, ToolError};
use crate::tool::{ENV_OOB_TIMEOUT, ENV_STALL_TIMEOUT, OOB_SETUP_DEFAULT, STALL_DEFAULT};
use crate::{cm_session, oob, report};

use super::conf::SideConf;
use super::peer::Peer;
use super::print::{plot_meta, Reporting, SharedCounters};
use super::shape::Shape;
use super::verbs::Verbs;
use super::watch::Watch;
use super::{plan_options, print_caps, SideRun};

/// One side's run on an open device, phase by phase.
pub(in crate::tool) fn run_with_context<P: Provider>(
    p: &Params,
    out: Out,
    listener: Option<Listener>,
    cm: Option<cm_session::CmStart>,
    ctx: Arc<Context<P>>,
    ext: Ext<P>,
) -> Result<(), ToolError> {
    let (conf, shape) = fixed_for_run(p, out, &ctx)?;
    let counters = open_counters(p, &conf.dev)?;
    let (ch, cm_data) = connect_oob(&conf, shape.out_reads, listener, cm, &ctx)?;
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
        conf,
        shape,
        peer: Peer::new(p),
        watch: Watch::new(peer_sock),
        verbs: Verbs::new(ctx, ext, cm_data),
        report: Reporting::new(counters, recorder),
    };
    let r = side.execute(ch);
    side.finish(p, r)
}

/// The timeouts, the device's facts, the payload and the limits (with perftest's notes of the
/// caps that applied): what the run is before it connects.
fn fixed_for_run<'a, P: Provider>(p: &'a Params, out: Out, ctx: &Arc<Context<P>>) -> Result<(SideConf<'a>, Shape), ToolError> {
    let knobs = &p.settings;
    let stall = installed_timeout(ENV_STALL_TIMEOUT, knobs.stall_timeout.as_deref(), STALL_DEFAULT)?;
    let setup_timeout = installed_timeout(ENV_OOB_TIMEOUT, knobs.oob_timeout.as_deref(), OOB_SETUP_DEFAULT)?;
    let dev = query_device(p, ctx)?;
    let payload = crate::tool::prepare::prepare(p, &dev.attr, page_size().max(1) as u64, cache_line().max(1) as u64)
        .map_err(|m| ToolError::new(1, m))?;

    let lim = limits::side_limits(
        p,
        limits::DevCaps { known: dev.known, max_qp_rd_atom: dev.attr.max_qp_rd_atom, active_mtu: dev.port.active_mtu },
        setup_timeout,
    );
    print_caps(out, &lim.caps);
    let limits::SideLimits { inline, out_reads, local_mtu, sizes, run_bound, .. } = lim;
    // The plan follows the test role (`--reversed` swaps it); the exchange order (who writes
    // first) follows the TCP role, which the channel keeps.
    let oob_role = if p.machine == Role::Client { oob::Role::Client } else { oob::Role::Server };
    let conf = SideConf { p, out, dev, payload, stall, setup_timeout, oob_role, run_bound };
    let sys = SysData { page_size: page_size(), cache_line: cache_line() };
    Ok((conf, Shape { inline, out_reads, local_mtu, mtu: local_mtu, sys, sizes }))
}

/// `-W`: read the counters once before connecting (perftest's create_comm_struct).
fn open_counters(p: &Params, dev: &DevFacts) -> Result<SharedCounters, ToolError> {
    let counters = SharedCounters::default();
    if !p.report.counters.is_empty() {
        let c = crate::counters::Counters::open(&dev.name, p.dev.ib_port, &p.report.counters).map_err(|e| ToolError::new(1, e))?;
        *counters.borrow_mut() = Some(c);
    }
    Ok(counters)
}

/// The out-of-band connection: over rdma_cm when `cm` started one (`-z`/`-R`), else TCP (the
/// test server's banner first); `-R` also gets its data connections ready.
fn connect_oob<P: Provider>(
    conf: &SideConf,
    out_reads: u32,
    listener: Option<Listener>,
    cm: Option<cm_session::CmStart>,
    ctx: &Arc<Context<P>>,
) -> Result<(cm_session::OobLink<P>, Option<cm_session::CmData>), ToolError> {
    let (p, out, setup_timeout) = (conf.p, conf.out, conf.setup_timeout);
    let tcp_client = p.is_tcp_client();
    let src = source_ip(p);
    let cfg = OobConfig { port: p.conn.port, timeout: setup_timeout, source_addr: src, bind_addr: src, ..OobConfig::default() };
    let mut cm_data = None;
    let ch = if let Some(start) = cm {
        let mut c = cm_session::CmOob::establish(ctx, start, setup_timeout, cfg.connect_retry_for, p.dev.qp_timeout).map_err(|e| {
            let f = if tcp_client { "rdma_client" } else { "rdma_server" };
            ToolError::new(1, format!(" Unable to perform {f} function\n{e}"))
        })?;
        c.set_gid_index(conf.dev.gid_index);
        if p.conn.work_rdma_cm {
            cm_data = Some(cm_data_connections(conf, out_reads, src)?);
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
    Ok((ch, cm_data))
}

/// `-R`: the rdma_cm data connections (the client's resolve later; the server listens now).
fn cm_data_connections(conf: &SideConf, out_reads: u32, src: Option<std::net::IpAddr>) -> Result<cm_session::CmData, ToolError> {
    let (p, setup_timeout, dev) = (conf.p, conf.setup_timeout, &conf.dev);
    let tcp_client = p.is_tcp_client();
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
    Ok(if tcp_client {
        cm_session::CmData::client(dcfg)
    } else {
        cm_session::CmData::server(dcfg, p.num_qps)
            .map_err(|e| ToolError::new(1, format!(" Failed to create RDMA CM connection\n{e}")))?
    })
}

impl<P: Provider> SideRun<'_, P> {
    /// This side's plan over the out-of-band connection; `-R`'s data connections end with it.
    fn execute(&mut self, ch: cm_session::OobLink<P>) -> Result<(), ToolError> {
        let p = self.conf.p;
        let steps = oob::plan(to_tool(p.tool), self.conf.oob_role, &plan_options(p, &self.shape.sizes, self.shape.local_mtu));
        let r = oob::execute(ch, &steps, self);
        if let Some(d) = self.verbs.cm_data.as_mut() {
            d.finish();
        }
        r
    }

    /// After the plan (`r`, its outcome): the picture, how an infinite run ended, the `-w`/`-y`
    /// verdict and `--wait_destroy`, these two on the command line's parameters `p`.
    fn finish(&mut self, p: &Params, r: Result<(), ToolError>) -> Result<(), ToolError> {
        // The picture and the burn-in summary also at the end of a --run_infinitely run, which a
        // signal (or its peer going away) ends.
        let drawn = self.report.recorder.borrow_mut().finish(self.conf.out);
        if let Err(m) = &drawn {
            self.conf.out.err(&format!(" {m}\n"));
        }
        if r.is_err() && self.user_stopped_infinite_run() {
            // perftest 6.29's sender of an infinite run takes Ctrl-C as the way to end it: a note,
            // the closing line, exit 0 (6.06 dies from the signal: 130, as the 6.06 persona).
            self.conf.out.text("\n User stopped traffic\n");
            self.conf.out.text(DASH_LINE);
            return Ok(());
        }
        if r.is_err() && self.client_ended_infinite_run() {
            // perftest's server of an infinite run ends when its client does.
            self.conf.out.text(" Client closed connection\n");
            self.conf.out.text(DASH_LINE);
            return Ok(());
        }
        r?;
        drawn.map_err(|m| ToolError::new(1, format!(" {m}")))?;
        if let Some(msg) = limits_verdict(p, self.report.last_line.get()) {
            return Err(ToolError::new(1, msg));
        }
        wait_destroy(p);
        self.release_gpu();
        Ok(())
    }

    /// `--use_cuda`: deregister, then free the GPU memory with 6.29's lines.
    fn release_gpu(&mut self) {
        if let Some(g) = self.verbs.gpu.take() {
            self.verbs.ep = None;
            let mut log = String::new();
            g.release(&mut log);
            self.conf.out.result(&log);
        }
    }
}

/// --wait_destroy: keep the resources for N seconds (a stop signal cuts it short).
fn wait_destroy(p: &Params) {
    if p.buf.wait_destroy > 0 {
        let until = std::time::Instant::now() + Duration::from_secs(u64::from(p.buf.wait_destroy));
        while std::time::Instant::now() < until && !bench_core::signal::requested() {
            std::thread::sleep(Duration::from_millis(50));
        }
    }
}
