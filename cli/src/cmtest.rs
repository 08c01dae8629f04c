//! `rperftest cm-ping [-d DEV] [-p PORT] [--tos N] [-t SECONDS] [server-ip]`: an RC connection
//! made through the kernel's rdma_cm (no librdmacm) and one SEND each way over it.
//!
//! Server (no address): listen on 0.0.0.0:PORT, take one connect request, check the client's
//! 56 bytes of private data, create an RC QP on the device the request arrived on, move it
//! INIT/RTR/RTS with the kernel's attributes, accept with private data of its own, wait for
//! ESTABLISHED, receive the client's message, send one back, wait for DISCONNECTED.
//! Client: resolve the server's address and route, create the QP on the resolved device,
//! connect, check the server's private data, complete the handshake, send, receive, disconnect.
//! One line per step; every wait bounded by `-t` (default 10 s); exit 0 when everything
//! checked out, 1 on a failure, 2 on bad usage.

use std::net::{IpAddr, SocketAddr};
use std::sync::Arc;
use std::time::{Duration, Instant};

use clap::{value_parser, Arg, ArgMatches, Command};
use providers::ProviderSettings;
use uverbs::cm::{CmChannel, CmDevice, CmEventKind, CmId, ConnParam, PortSpace};
use uverbs::objects::{AccessFlags, Context, Cq, Mr, Pd, Qp, QpAttrMask, QpInit};
use uverbs::provider::{Provider, QpCaps, QpState, QpType};
use uverbs::wr::{RecvWr, SendFlags, SendWr, Sge, WcOpcode, WcStatus, WorkCompletion, WrOpcode};

/// CONNECT carries the most private data an IP-addressed REQ allows.
const CONNECT_PD: usize = uverbs::cm::limits::CONNECT;
/// ACCEPT answers with some of its own.
const ACCEPT_PD: usize = 64;
const MSG: usize = 256;
const RECV_OFF: usize = 0;
const SEND_OFF: usize = 2048;

fn pattern(seed: u8, len: usize) -> Vec<u8> {
    (0..len).map(|i| (i as u8).wrapping_mul(7).wrapping_add(seed)).collect()
}

struct Opts {
    dev: Option<String>,
    port: u16,
    tos: Option<u8>,
    timeout: Duration,
    server: Option<IpAddr>,
}

fn cli() -> Command {
    Command::new("rperftest cm-ping")
        .about("Connects an RC QP through the kernel's rdma_cm and sends one message each way")
        .after_help("Without server-ip: the server (listens on 0.0.0.0:PORT).")
        .arg(Arg::new("server").value_name("server-ip").value_parser(value_parser!(IpAddr)).help("the server's address (client mode)"))
        .arg(Arg::new("dev").short('d').long("ib-dev").value_name("DEV").help("require the connection to use this device"))
        .arg(
            Arg::new("port")
                .short('p')
                .long("port")
                .value_name("PORT")
                .value_parser(value_parser!(u16).range(1..))
                .default_value("18516")
                .help("rdma_cm port"),
        )
        .arg(Arg::new("tos").short('T').long("tos").value_name("N").value_parser(value_parser!(u8)).help("IP type of service for the connection (client)"))
        .arg(
            Arg::new("timeout")
                .short('t')
                .long("timeout")
                .value_name("SECONDS")
                .value_parser(seconds)
                .default_value("10")
                .help("bound on every wait (the server waits 3x for its client)"),
        )
}

fn seconds(v: &str) -> Result<Duration, String> {
    v.parse::<f64>().ok().filter(|s| *s > 0.0 && *s < 86400.0).map(Duration::from_secs_f64).ok_or(format!("invalid timeout '{v}' (more than 0, less than a day)"))
}

fn opts(m: &ArgMatches) -> Opts {
    Opts {
        dev: m.get_one::<String>("dev").cloned(),
        port: *m.get_one::<u16>("port").unwrap_or(&18516),
        tos: m.get_one::<u8>("tos").copied(),
        timeout: *m.get_one::<Duration>("timeout").unwrap_or(&Duration::from_secs(10)),
        server: m.get_one::<IpAddr>("server").copied(),
    }
}

/// Entry point; the device opens as `settings` choose. Returns the exit code.
pub fn run(args: &[String], settings: &ProviderSettings) -> u8 {
    let o = match cli_args::parse_std(cli(), "rperftest cm-ping", args) {
        Ok(m) => opts(&m),
        Err(code) => return code,
    };
    let t0 = Instant::now();
    let r = match o.server {
        Some(ip) => client(&o, SocketAddr::new(ip, o.port), settings),
        None => server(&o, settings),
    };
    match r {
        Ok(()) => {
            println!("cm-ping: ok ({:.2} s)", t0.elapsed().as_secs_f64());
            0
        }
        Err(e) => {
            eprintln!("rperftest cm-ping: {e}");
            1
        }
    }
}

fn step(s: impl AsRef<str>) {
    println!("cm-ping: {}", s.as_ref());
}

fn check_dev(o: &Opts, d: &CmDevice) -> Result<(), String> {
    match &o.dev {
        Some(want) if *want != d.info.ibdev => Err(format!(
            "the address maps to {} (port {}), not {want}; use that device's netdev address or drop -d",
            d.info.ibdev, d.port
        )),
        _ => Ok(()),
    }
}

fn server(o: &Opts, settings: &ProviderSettings) -> Result<(), String> {
    let e = |e: uverbs::Error| e.to_string();
    let chan = CmChannel::open().map_err(e)?;
    let listener = chan.create_id(PortSpace::Tcp, QpType::Rc).map_err(e)?;
    let _ = listener.set_reuseaddr(true);
    let any = SocketAddr::from(([0, 0, 0, 0], o.port));
    listener.bind(&any).map_err(e)?;
    listener.listen(1).map_err(e)?;
    step(format!("listening on {any} (rdma_cm id {})", listener.handle()));
    let (conn, req) = listener.get_request(o.timeout * 3).map_err(e)?;
    let peer = conn.peer().map(|p| p.to_string()).unwrap_or_else(|| "?".into());
    step(format!(
        "CONNECT_REQUEST from {peer}: qpn {:#x}, {} bytes of private data, responder_resources {}, initiator_depth {}",
        req.conn.qp_num,
        req.conn.private_data.len(),
        req.conn.responder_resources,
        req.conn.initiator_depth
    ));
    let want = pattern(0x11, CONNECT_PD);
    if req.conn.private_data.get(..CONNECT_PD) != Some(&want[..]) {
        let _ = conn.reject(0, b"cm-ping: bad private data");
        return Err(format!("the client's private data is not the test pattern: {:02x?}", req.conn.private_data));
    }
    step(format!("private data verified ({CONNECT_PD} bytes)"));
    let dev = conn.device().map_err(e)?;
    if let Err(m) = check_dev(o, &dev) {
        let _ = conn.reject(0, &[]);
        return Err(m);
    }
    step(format!("connection is on {} port {} ({})", dev.info.ibdev, dev.port, dev.info.uverbs));
    // The listener is no longer needed (perftest destroys it after accepting too).
    drop(listener);
    let ping = Ping { o, id: conn, dev: dev.clone(), role: Role::Server { initiator_depth: req.conn.initiator_depth, responder_resources: req.conn.responder_resources } };
    providers::open(&dev.info.desc(), settings, ping).map_err(e)?
}

fn client(o: &Opts, dst: SocketAddr, settings: &ProviderSettings) -> Result<(), String> {
    let e = |e: uverbs::Error| e.to_string();
    let chan = CmChannel::open().map_err(e)?;
    let mut id = chan.create_id(PortSpace::Tcp, QpType::Rc).map_err(e)?;
    if let Some(t) = o.tos {
        id.set_tos(t).map_err(e)?;
        step(format!("type of service {t}"));
    }
    id.resolve_addr(None, &dst, o.timeout).map_err(e)?;
    id.expect(CmEventKind::AddrResolved, o.timeout).map_err(e)?;
    let dev = id.device().map_err(e)?;
    check_dev(o, &dev)?;
    let src = dev.addr.src.to_string();
    step(format!("ADDR_RESOLVED {dst} from {src} via {} port {}", dev.info.ibdev, dev.port));
    id.resolve_route(o.timeout).map_err(e)?;
    id.expect(CmEventKind::RouteResolved, o.timeout).map_err(e)?;
    let paths = id.query_path().map_err(e)?;
    match paths.first() {
        Some(p) => step(format!(
            "ROUTE_RESOLVED: {} path(s), sgid {} dgid {} hop_limit {} traffic_class {}",
            paths.len(),
            uverbs::discovery::format_ipv6(&p.sgid()),
            uverbs::discovery::format_ipv6(&p.dgid()),
            p.hop_limit(),
            p.traffic_class()
        )),
        None => step("ROUTE_RESOLVED (no path records reported)"),
    }
    let ping = Ping { o, id, dev: dev.clone(), role: Role::Client };
    providers::open(&dev.info.desc(), settings, ping).map_err(e)?
}

enum Role {
    Client,
    Server { initiator_depth: u8, responder_resources: u8 },
}

struct Ping<'a> {
    o: &'a Opts,
    id: CmId,
    dev: CmDevice,
    role: Role,
}

struct Res<P: Provider> {
    mr: Mr<P>,
    cq: Cq<P>,
    qp: Qp<P>,
}

impl<'a> providers::ContextUser for Ping<'a> {
    type Output = Result<(), String>;
    fn run<P: Provider>(self, ctx: Arc<Context<P>>) -> Result<(), String> {
        let e = |e: uverbs::Error| e.to_string();
        let pd = Pd::new(&ctx).map_err(e)?;
        let mr = Mr::alloc(&pd, 4096, AccessFlags::LOCAL_WRITE, false).map_err(e)?;
        let cq = Cq::new(&ctx, 16, None, 0).map_err(e)?;
        let caps = QpCaps { max_send_wr: 4, max_recv_wr: 4, max_send_sge: 1, max_recv_sge: 1, max_inline_data: 0 };
        let qp = Qp::new(&pd, &QpInit { qp_type: QpType::Rc, send_cq: &cq, recv_cq: &cq, srq: None, caps, sq_sig_all: true }).map_err(e)?;
        step(format!("RC QP {:#x} on {} ({})", qp.qpn(), self.dev.info.ibdev, P::NAME));
        let mut r = Res { mr, cq, qp };
        let out = match self.role {
            Role::Client => client_conn(self.o, &self.id, &mut r),
            Role::Server { initiator_depth, responder_resources } => {
                server_conn(self.o, &self.id, &mut r, initiator_depth, responder_resources)
            }
        };
        if out.is_err() {
            // Let the peer know promptly instead of leaving it to time out.
            let _ = self.id.disconnect();
        }
        // QP, CQ, MR, PD go first (declaration order of `r` is irrelevant: they hold Arcs),
        // then the id (dropped with `self`).
        drop(r);
        out
    }
}

fn post_recv<P: Provider>(r: &mut Res<P>) -> Result<(), String> {
    let sge = [Sge { addr: r.mr.addr() + RECV_OFF as u64, length: MSG as u32, lkey: r.mr.lkey() }];
    // SAFETY: the SGE lies inside `r.mr` (registered, 4096 bytes), which lives until after the
    // QP is destroyed (same `Res`); the region is not touched until the receive completes.
    unsafe { r.qp.post_recv(&[RecvWr { wr_id: 1, sgl: &sge }]) }.map_err(|e| format!("post receive: {e}"))
}

fn post_send<P: Provider>(r: &mut Res<P>, data: &[u8]) -> Result<(), String> {
    r.mr.write_at(SEND_OFF, data).map_err(|e| e.to_string())?;
    let sge = [Sge { addr: r.mr.addr() + SEND_OFF as u64, length: data.len() as u32, lkey: r.mr.lkey() }];
    let mut wr = SendWr::new(2, WrOpcode::Send, &sge);
    wr.flags = SendFlags::SIGNALED;
    // SAFETY: the SGE lies inside `r.mr` (registered, alive until after the QP is destroyed);
    // the send buffer is not rewritten until the send completes (we wait for it).
    unsafe { r.qp.post_send(&[wr]) }.map_err(|e| format!("post send: {e}"))
}

/// One completion of `op`, within the timeout.
fn wait_wc<P: Provider>(r: &mut Res<P>, op: WcOpcode, what: &str, timeout: Duration) -> Result<WorkCompletion, String> {
    let t0 = Instant::now();
    let mut wc = [WorkCompletion::default(); 1];
    loop {
        if r.cq.poll(&mut wc).map_err(|e| format!("poll CQ for {what}: {e}"))? == 1 {
            let c = wc[0];
            if c.status != WcStatus::Success {
                return Err(format!("{what} completed with {} (vendor error {:#x}): {}", c.status, c.vendor_err, c.status.likely_cause()));
            }
            if c.opcode != op {
                return Err(format!("{what}: completion opcode {:?}, expected {op:?}", c.opcode));
            }
            return Ok(c);
        }
        if t0.elapsed() > timeout {
            return Err(format!("no completion for {what} within {} s", timeout.as_secs_f64()));
        }
        std::thread::sleep(Duration::from_micros(50));
    }
}

fn recv_check<P: Provider>(r: &mut Res<P>, seed: u8, what: &str, timeout: Duration) -> Result<(), String> {
    let c = wait_wc(r, WcOpcode::Recv, what, timeout)?;
    let want = pattern(seed, MSG);
    let mut got = vec![0u8; MSG];
    r.mr.read_at(RECV_OFF, &mut got).map_err(|e| e.to_string())?;
    if c.byte_len as usize != MSG || got != want {
        let i = got.iter().zip(&want).position(|(a, b)| a != b).unwrap_or(0);
        return Err(format!("{what}: {} bytes, payload differs from the pattern at byte {i}", c.byte_len));
    }
    step(format!("{what}: {MSG} bytes received and verified"));
    Ok(())
}

fn client_conn<P: Provider>(o: &Opts, id: &CmId, r: &mut Res<P>) -> Result<(), String> {
    let e = |e: uverbs::Error| e.to_string();
    id.modify_qp(&mut r.qp, QpState::Init).map_err(e)?;
    post_recv(r)?;
    let p = ConnParam {
        qp_num: r.qp.qpn(),
        private_data: pattern(0x11, CONNECT_PD),
        responder_resources: 1,
        initiator_depth: 1,
        retry_count: 7,
        rnr_retry_count: 7,
        ..Default::default()
    };
    id.connect(&p).map_err(e)?;
    step(format!("CONNECT sent with {CONNECT_PD} bytes of private data"));
    let rsp = id.complete_connect(&mut r.qp, o.timeout).map_err(e)?;
    step(format!("CONNECT_RESPONSE: server qpn {:#x}, {} bytes of private data", rsp.conn.qp_num, rsp.conn.private_data.len()));
    if rsp.conn.private_data.get(..ACCEPT_PD) != Some(&pattern(0x5a, ACCEPT_PD)[..]) {
        return Err(format!("the server's private data is not the test pattern: {:02x?}", rsp.conn.private_data));
    }
    step(format!("accept private data verified ({ACCEPT_PD} bytes)"));
    let (a, _) = r.qp.query(QpAttrMask::STATE | QpAttrMask::AV | QpAttrMask::PATH_MTU | QpAttrMask::DEST_QPN).map_err(e)?;
    step(format!(
        "ESTABLISHED: QP {:?}, dest qpn {:#x}, path_mtu {}, sgid_index {}, traffic_class {}",
        a.qp_state, a.dest_qp_num, a.path_mtu, a.ah_attr.sgid_index, a.ah_attr.traffic_class
    ));
    post_send(r, &pattern(0xc1, MSG))?;
    wait_wc(r, WcOpcode::Send, "SEND client→server", o.timeout)?;
    step(format!("SEND client→server: {MSG} bytes completed"));
    recv_check(r, 0x5e, "SEND server→client", o.timeout)?;
    id.disconnect().map_err(e)?;
    id.expect(CmEventKind::Disconnected, o.timeout).map_err(e)?;
    step("DISCONNECTED");
    Ok(())
}

fn server_conn<P: Provider>(o: &Opts, id: &CmId, r: &mut Res<P>, init_depth: u8, resp_res: u8) -> Result<(), String> {
    let e = |e: uverbs::Error| e.to_string();
    // Receives can be posted from INIT on; accept_qp then goes INIT → INIT → RTR → RTS.
    id.modify_qp(&mut r.qp, QpState::Init).map_err(e)?;
    post_recv(r)?;
    let p = ConnParam {
        private_data: pattern(0x5a, ACCEPT_PD),
        // Offer what the client asks for, up to 1 (as perftest: min(own, request)).
        responder_resources: init_depth.min(1),
        initiator_depth: resp_res.min(1),
        retry_count: 7,
        rnr_retry_count: 7,
        ..Default::default()
    };
    id.accept_qp(&mut r.qp, &p).map_err(e)?;
    step(format!("ACCEPT sent with {ACCEPT_PD} bytes of private data (QP INIT/RTR/RTS from INIT_QP_ATTR)"));
    id.expect(CmEventKind::Established, o.timeout).map_err(e)?;
    let (a, _) = r.qp.query(QpAttrMask::STATE | QpAttrMask::AV | QpAttrMask::DEST_QPN).map_err(e)?;
    step(format!("ESTABLISHED: QP {:?}, dest qpn {:#x}, traffic_class {}", a.qp_state, a.dest_qp_num, a.ah_attr.traffic_class));
    recv_check(r, 0xc1, "SEND client→server", o.timeout)?;
    post_send(r, &pattern(0x5e, MSG))?;
    wait_wc(r, WcOpcode::Send, "SEND server→client", o.timeout)?;
    step(format!("SEND server→client: {MSG} bytes completed"));
    id.expect(CmEventKind::Disconnected, o.timeout).map_err(e)?;
    // Answer the client's DREQ (DREP) so that it sees DISCONNECTED without waiting for a timeout.
    let _ = id.disconnect();
    step("DISCONNECTED");
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(s: &str) -> Vec<String> {
        s.split_whitespace().map(String::from).collect()
    }

    /// `Ok(None)`: help was asked for.
    fn parse(args: &[String]) -> Result<Option<Opts>, clap::Error> {
        match cli().try_get_matches_from(std::iter::once("cm-ping".to_string()).chain(args.iter().cloned())) {
            Ok(m) => Ok(Some(opts(&m))),
            Err(e) if !e.use_stderr() => Ok(None),
            Err(e) => Err(e),
        }
    }

    #[test]
    fn parses_client_and_server() {
        let o = parse(&args("-d rxe0 -p 7000 --tos 32 -t 2.5 10.99.0.1")).unwrap().unwrap();
        assert_eq!((o.dev.as_deref(), o.port, o.tos, o.server), (Some("rxe0"), 7000, Some(32), Some("10.99.0.1".parse().unwrap())));
        assert_eq!(o.timeout, Duration::from_millis(2500));
        let o = parse(&args("")).unwrap().unwrap();
        assert_eq!((o.port, o.server), (18516, None));
        assert!(parse(&args("--help")).unwrap().is_none());
        assert!(parse(&args("-p 0")).is_err());
        assert!(parse(&args("nothost")).is_err());
        assert!(parse(&args("1.2.3.4 5.6.7.8")).is_err());
    }

    #[test]
    fn connect_private_data_fits() {
        assert_eq!(pattern(0x11, CONNECT_PD).len(), 56);
    }
}
