//! Peer mode: `rperftest doctor --serve` on one host, `rperftest doctor PEER` on the other.
//!
//! The client connects over TCP (perftest's port 18515 unless `-p`), each side makes an RC QP
//! on the port and GID it would use (`-d`, `-i`, `-x`, or the tools' automatic choice) and
//! they swap one [`Hello`] line each: the port's link layer, GID and its type, active and
//! netdev MTU, the QP and a buffer. The client compares the two views, moves its QP to RTS
//! with a short retry bound (ACK timeout 67 ms, 3 retries: a dead RoCE path fails in well
//! under a second on rxe) and runs an RC SEND, an RDMA WRITE of 8 KiB and an RDMA READ of the
//! same bytes back, checking them; it reads the netdev's and the port's packet counters before
//! and after. Each failure is named by what the two views and the TCP path say about its
//! cause. Every wait is bounded.

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream, ToSocketAddrs};
use std::sync::Arc;
use std::time::{Duration, Instant};

use uverbs::attr::{gid_is_ipv4, GidEntry, LINK_LAYER_INFINIBAND};
use uverbs::discovery::{self, gid, DeviceInfo, SysfsRoot};
use uverbs::objects::{AccessFlags, Context, Cq, Mr, Pd, Qp, QpInit, RtrParams, RtsParams};
use uverbs::provider::{Provider, QpCaps, QpType};
use uverbs::wr::{RecvWr, RemoteAddr, SendFlags, SendWr, Sge, WcOpcode, WcStatus, WorkCompletion, WrOpcode};

use super::local::{v2_ipv4, Target};
use super::report::Check;
use super::wire::{Hello, Result1, MAGIC, MAX_LINE, VERSION};
use bench_core::cparse::strtoul;

use crate::csys::read_string;
use crate::ibdev2netdev::find_netdev;

/// perftest's exchange port: a `doctor --serve` answers where the tools would.
pub use perftest::oob::msg::DEFAULT_PORT;
/// The WRITE and READ size, and the peer's buffer.
const XFER: usize = 8192;
/// MR layout: [0, XFER) the peer's target; then the local source, the READ sink, the SEND
/// source and the receive slot.
const SRC: usize = XFER;
const SINK: usize = 2 * XFER;
const SEND_OFF: usize = 3 * XFER;
const RECV_OFF: usize = 3 * XFER + 256;
const SEND_LEN: usize = 64;
const MR_LEN: usize = 3 * XFER + 512;
const CONNECT_WAIT: Duration = Duration::from_secs(3);
const TCP_WAIT: Duration = Duration::from_secs(8);
const WC_WAIT: Duration = Duration::from_secs(4);
/// RC ACK timeout code 14 (4.096 us x 2^14 = 67 ms) and 3 retries.
const ACK_TIMEOUT: u8 = 14;
const RETRY_CNT: u8 = 3;

#[derive(Clone, Debug)]
pub struct PeerOpts {
    pub target: Target,
    pub port: u16,
    /// Serve: give up when no client came within this long (none: wait).
    pub listen_timeout: Option<Duration>,
    pub persistent: bool,
    /// How the device is opened.
    pub providers: providers::ProviderSettings,
}

/// The local side's view: device, port, chosen GID, MTUs.
#[derive(Clone, Debug)]
pub struct LocalView {
    pub dev: DeviceInfo,
    pub port: u8,
    pub ll: u8,
    pub lid: u16,
    pub gid: GidEntry,
    pub why: String,
    /// The RoCE v2 IPv4 GID's index, if the port has one (for the fixes).
    pub v2_index: Option<u32>,
    pub netdev: Option<String>,
    pub netdev_mtu: u32,
}

fn hostname() -> String {
    read_string(std::path::Path::new("/proc/sys/kernel/hostname"), 256).map(|s| s.trim().to_string()).unwrap_or_default()
}

fn gid_words(h: &Hello) -> String {
    let fam = if gid_is_ipv4(&h.gid) {
        format!("IPv4 {}.{}.{}.{}", h.gid[12], h.gid[13], h.gid[14], h.gid[15])
    } else {
        format!("IPv6 {}", gid::format_ipv6(&h.gid))
    };
    format!("{} index {} ({fam})", h.gid_type, h.gid_index)
}

/// Pick device, port and GID as the tools would.
pub fn local_view(t: &Target) -> Result<LocalView, String> {
    let sys = SysfsRoot::system();
    let dev = discovery::find_device(t.dev.as_deref()).map_err(|e| format!("{e}; run 'rperftest doctor' for the local checks"))?;
    let port = t.port.unwrap_or(1);
    let pdir = sys.port(&dev.ibdev, port);
    let ll_text = read_string(&pdir.join("link_layer"), 64).unwrap_or_default();
    let ll = if ll_text.trim() == "InfiniBand" { LINK_LAYER_INFINIBAND } else { uverbs::attr::LINK_LAYER_ETHERNET };
    let lid = read_string(&pdir.join("lid"), 64).map(|l| strtoul(&l, 0) as u16).unwrap_or(0);
    let table = gid::read_gid_table(&sys, &dev.ibdev, port, ll).map_err(|e| e.to_string())?;
    let netdev = find_netdev(&sys, &dev.ibdev, port);
    let v2_index = netdev.as_deref().and_then(|n| v2_ipv4(&table, n)).map(|g| g.index);
    let (gid, why) = match t.gid_index {
        Some(x) => {
            let e = table.iter().find(|e| e.index == x).cloned().ok_or_else(|| format!("-x {x}: GID index {x} of {} port {port} is empty", dev.ibdev))?;
            let w = format!("GID index {x} (from -x): {}", gid::describe(&e));
            (e, w)
        }
        None => {
            let c = gid::select_gid(&table, false, gid::GidRule::Scored).ok_or_else(|| format!("{} port {port} has no GID; run 'rperftest doctor'", dev.ibdev))?;
            (c.entry, c.reason)
        }
    };
    let netdev_mtu = netdev
        .as_deref()
        .and_then(|n| read_string(&sys.0.join("class/net").join(n).join("mtu"), 64))
        .map(|m| strtoul(&m, 0) as u32)
        .unwrap_or(0);
    Ok(LocalView { port: port as u8, ll, lid, gid, why, v2_index, netdev, netdev_mtu, dev })
}

/// Packet counters of the netdev (sysfs statistics), `lo`, and the RDMA port.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Counters {
    pub nd_tx: u64,
    pub nd_rx: u64,
    pub lo_tx: u64,
    pub port_tx: Option<u64>,
    pub port_rx: Option<u64>,
}

fn num(p: &std::path::Path) -> Option<u64> {
    read_string(p, 64).map(|t| strtoul(t.trim(), 0))
}

pub fn read_counters(sys: &SysfsRoot, dev: &str, port: u32, netdev: Option<&str>) -> Counters {
    let net = sys.0.join("class/net");
    let st = |n: &str, f: &str| num(&net.join(n).join("statistics").join(f)).unwrap_or(0);
    let pdir = sys.port(dev, port);
    // rxe keeps its own in hw_counters; HCAs have the IB port counters.
    let pc = |hw: &str, ib: &str| num(&pdir.join("hw_counters").join(hw)).or_else(|| num(&pdir.join("counters").join(ib)));
    Counters {
        nd_tx: netdev.map(|n| st(n, "tx_packets")).unwrap_or(0),
        nd_rx: netdev.map(|n| st(n, "rx_packets")).unwrap_or(0),
        lo_tx: st("lo", "tx_packets"),
        port_tx: pc("sent_pkts", "port_xmit_packets"),
        port_rx: pc("rcvd_pkts", "port_rcv_packets"),
    }
}

/// The counters proof: did the test's packets leave through the netdev? `same_host`: the peer
/// answered with this side's own GID, so its packets had nowhere to go but this host (rxe
/// loops its own addresses back without touching a netdev or, always, its port counters).
pub fn counters_check(netdev: &str, before: &Counters, after: &Counters, peer: Option<&Result1>, same_host: bool) -> Check {
    let d = |a: u64, b: u64| a.saturating_sub(b);
    let (tx, rx, lo) = (d(after.nd_tx, before.nd_tx), d(after.nd_rx, before.nd_rx), d(after.lo_tx, before.lo_tx));
    let port = match (before.port_tx, after.port_tx, before.port_rx, after.port_rx) {
        (Some(a), Some(b), Some(c), Some(e)) => format!("port sent {}, received {}", d(b, a), d(e, c)),
        _ => "no port counters".into(),
    };
    let peer_txt = peer.map(|r| format!("; the peer's netdev sent {}, received {}", r.tx, r.rx)).unwrap_or_default();
    let what = format!("{netdev} sent {tx} packets, received {rx}; {port}; lo sent {lo}{peer_txt}");
    // SEND, WRITE (8 KiB: several packets) and READ: at least 3 requests left.
    // The port's own counters (RoCE only) say best whether answers came; the netdev's also
    // count the TCP exchange.
    // rxe's port hw_counters sometimes stay at 0 around a test whose packets the netdev saw
    // leave (seen on the bed): a port that counted nothing sent is not counting, so the
    // netdev's receive count decides then.
    let port_counts = port_moved(before, after) > 0 || tx < 3;
    let came_back = match (before.port_rx, after.port_rx) {
        (Some(a), Some(b)) if port_counts => b > a,
        _ => rx >= 3,
    };
    if tx >= 3 && rx >= 3 && came_back {
        Check::ok("peer counters", what)
    } else if tx < 3 && (same_host || lo >= 3 || port_moved(before, after) >= 3) {
        Check::warn(
            "peer counters",
            format!("{what}: only loopback moved, so the test never left this host (PEER is this host: rxe loops its own addresses back, or a route sends it over lo)"),
            "give the other host's address as PEER",
        )
    } else if tx >= 3 {
        Check::warn(
            "peer counters",
            format!("{what}: the packets left through {netdev} but few came back: the path or the peer drops them"),
            "look for drops on the path and the peer's firewall (UDP 4791)",
        )
    } else {
        Check::warn("peer counters", format!("{what}: too few packets for the test's 3 requests"), "")
    }
}

fn port_moved(before: &Counters, after: &Counters) -> u64 {
    match (before.port_tx, after.port_tx) {
        (Some(a), Some(b)) => b.saturating_sub(a),
        _ => 0,
    }
}

/// The two views compared: link layer, GID type and family, MTUs.
pub fn compare(me: &Hello, peer: &Hello, v2_index: Option<u32>, netdev: &str) -> Vec<Check> {
    let mut out = Vec::new();
    out.push(if me.link_layer == peer.link_layer {
        Check::ok("peer link layer", format!("both {}", me.link_layer))
    } else {
        Check::fail(
            "peer link layer",
            format!("this side {}, peer {}: an InfiniBand port and an Ethernet port cannot talk", me.link_layer, peer.link_layer),
            "use ports of the same link layer (-d/-i on both sides)",
        )
    });
    if me.link_layer != "InfiniBand" {
        let fam = |h: &Hello| gid_is_ipv4(&h.gid);
        out.push(if me.gid_type == peer.gid_type && fam(me) == fam(peer) {
            Check::ok("peer GID", format!("this side {}, peer {}", gid_words(me), gid_words(peer)))
        } else {
            let mut fix = match v2_index {
                Some(i) if i != me.gid_index => format!("use -x {i} on this side (its RoCE v2 IPv4 GID)"),
                _ => "use the peer's RoCE v2 IPv4 GID index with -x there (rperftest gids on the peer)".into(),
            };
            if me.gid_type == peer.gid_type {
                fix.push_str("; both sides need the same address family");
            }
            Check::fail("peer GID", format!("GID types differ: this side {}, peer {}", gid_words(me), gid_words(peer)), fix)
        });
    }
    out.push(if me.mtu != peer.mtu {
        let (big, nd_small) = if me.mtu > peer.mtu { ("this side's", peer.netdev_mtu) } else { ("the peer's", me.netdev_mtu) };
        Check::fail(
            "peer MTU",
            format!(
                "active MTUs differ: this side {} (netdev {netdev} MTU {}), peer {} (netdev MTU {}): perftest uses each side's own, so {big} larger packets are dropped",
                me.mtu, me.netdev_mtu, peer.mtu, peer.netdev_mtu
            ),
            format!("set the same netdev MTU on both (ip link set dev IF mtu {}), or run the tools with -m {} on both sides", me.netdev_mtu.max(peer.netdev_mtu).max(nd_small), me.mtu.min(peer.mtu)),
        )
    } else if me.netdev_mtu != peer.netdev_mtu {
        Check::warn(
            "peer MTU",
            format!("active MTU {} on both, but netdev MTUs differ: this side {}, peer {}", me.mtu, me.netdev_mtu, peer.netdev_mtu),
            "set the same netdev MTU on both hosts",
        )
    } else {
        Check::ok("peer MTU", format!("active MTU {} and netdev MTU {} on both", me.mtu, me.netdev_mtu))
    });
    out
}

/// A failed completion named by its cause, from what else is known: the TCP path worked (we
/// got the peer's hello) and the two views.
pub fn name_wc_failure(op: &str, status: WcStatus, me: &Hello, peer: &Hello, v2_index: Option<u32>) -> Check {
    let name = format!("peer RC {op}");
    let gids = format!("this side {}, peer {}", gid_words(me), gid_words(peer));
    match status {
        WcStatus::RetryExcErr => {
            let mut causes = Vec::new();
            if me.gid_type != peer.gid_type || gid_is_ipv4(&me.gid) != gid_is_ipv4(&peer.gid) {
                causes.push(format!("the GID types differ: {gids}"));
            }
            if me.mtu != peer.mtu {
                causes.push(format!("the active MTUs differ: this side {}, peer {}", me.mtu, peer.mtu));
            }
            causes.push(format!("UDP 4791 (RoCE v2) is dropped on the path or by a host firewall ({gids})"));
            let fix = match v2_index {
                Some(i) if i != me.gid_index => format!("use -x {i} here; allow UDP 4791 both ways (nft list ruleset; tc filter show dev IF ingress)"),
                _ => "allow UDP 4791 both ways on both hosts (nft list ruleset; tc filter show dev IF ingress); ping shows only that IP works".into(),
            };
            Check::fail(name, format!("RETRY_EXC_ERR with the peer reachable over TCP: the RoCE packets get no answer: {}", causes.join(", or ")), fix)
        }
        WcStatus::RemInvReqErr if me.mtu > peer.mtu => Check::fail(
            name,
            format!(
                "REM_INV_REQ_ERR: the peer refused packets larger than its MTU: active MTUs differ: this side {}, peer {} (perftest uses each side's own)",
                me.mtu, peer.mtu
            ),
            format!("set the same netdev MTU on both hosts, or run the tools with -m {} on both sides", peer.mtu),
        ),
        WcStatus::RnrRetryExcErr => Check::fail(name, "RNR_RETRY_EXC_ERR: the peer had no receive posted", "run the same rperftest version on both sides"),
        other => Check::fail(name, format!("{other}: {}", other.likely_cause()), ""),
    }
}

/// No completion within the bound while TCP works. The QP's retry bound is well under it, so
/// a device that honours it gives RETRY_EXC_ERR first; rxe on some kernels keeps retrying a
/// path that drops everything instead: the same causes as RETRY_EXC_ERR.
pub fn name_no_completion(op: &str, me: &Hello, peer: &Hello, v2_index: Option<u32>) -> Check {
    let mut c = name_wc_failure(op, WcStatus::RetryExcErr, me, peer, v2_index);
    c.detail = c.detail.replacen(
        "RETRY_EXC_ERR with the peer reachable over TCP",
        &format!("no completion within {} s (the device retries past the QP's bound) with the peer reachable over TCP", WC_WAIT.as_secs()),
        1,
    );
    c
}

// ---- TCP ------------------------------------------------------------------------------------

/// Read one line (at most MAX_LINE bytes), bounded by `deadline`.
fn read_line(s: &mut TcpStream, deadline: Instant) -> Result<Vec<u8>, String> {
    let mut buf = Vec::new();
    let mut b = [0u8; 256];
    loop {
        let left = deadline.saturating_duration_since(Instant::now());
        if left.is_zero() {
            return Err(format!("no complete line from the peer within {} s", TCP_WAIT.as_secs()));
        }
        let _ = s.set_read_timeout(Some(left.max(Duration::from_millis(1))));
        match s.read(&mut b) {
            Ok(0) => return Err(if buf.is_empty() { "the peer closed the TCP connection without a word".into() } else { "the peer closed the TCP connection in the middle of a line".into() }),
            Ok(n) => {
                buf.extend_from_slice(&b[..n]);
                if let Some(i) = buf.iter().position(|&c| c == b'\n') {
                    buf.truncate(i + 1);
                    return Ok(buf);
                }
                if buf.len() > MAX_LINE {
                    return Err(format!("the peer sent more than {MAX_LINE} bytes without a newline"));
                }
            }
            Err(e) if matches!(e.kind(), std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut | std::io::ErrorKind::Interrupted) => {}
            Err(e) => return Err(format!("TCP read: {e}")),
        }
    }
}

fn send_line(s: &mut TcpStream, line: &str) -> Result<(), String> {
    let _ = s.set_write_timeout(Some(TCP_WAIT));
    s.write_all(line.as_bytes()).map_err(|e| format!("TCP write: {e}"))
}

/// Connect to `peer:port`: the check's line, and the stream when it connected.
pub fn tcp_check(peer: &str, port: u16) -> (Check, Option<TcpStream>) {
    let name = "peer TCP";
    let addrs: Vec<SocketAddr> = match (peer, port).to_socket_addrs() {
        Ok(a) => a.collect(),
        Err(e) => return (Check::fail(name, format!("cannot resolve {peer:?}: {e}"), "give the peer's IP address, or add it to /etc/hosts"), None),
    };
    let Some(addr) = addrs.iter().find(|a| a.is_ipv4()).or(addrs.first()).copied() else {
        return (Check::fail(name, format!("{peer:?} resolves to no address"), "give the peer's IP address"), None);
    };
    let t0 = Instant::now();
    match TcpStream::connect_timeout(&addr, CONNECT_WAIT) {
        Ok(s) => (Check::ok(name, format!("{addr} accepts connections ({} ms)", t0.elapsed().as_millis())), Some(s)),
        Err(e) if e.kind() == std::io::ErrorKind::ConnectionRefused => (
            Check::fail(
                name,
                format!("{addr} refused the connection: nothing listens on TCP {port} there (or a firewall rejects it); the host itself answers"),
                format!("start 'rperftest doctor --serve -p {port}' (or the perftest server) on {peer}; open TCP {port} in its firewall"),
            ),
            None,
        ),
        Err(e) => (
            Check::fail(
                name,
                format!("no answer from {addr} within {} s ({e}): TCP {port} is dropped by a firewall on the path, or the host is down", CONNECT_WAIT.as_secs()),
                format!("ping {peer}; allow TCP {port} both ways (nft list ruleset; tc filter show dev IF ingress)"),
            ),
            None,
        ),
    }
}

// ---- the RDMA part ---------------------------------------------------------------------------

struct Job<'a> {
    view: &'a LocalView,
    stream: TcpStream,
    serve: bool,
    host: String,
}

struct Rig<P: Provider> {
    qp: Qp<P>,
    cq: Cq<P>,
    mr: Mr<P>,
    _pd: Arc<Pd<P>>,
}

fn access() -> AccessFlags {
    AccessFlags::LOCAL_WRITE | AccessFlags::REMOTE_WRITE | AccessFlags::REMOTE_READ
}

fn pattern(seed: u8, len: usize) -> Vec<u8> {
    (0..len).map(|i| (i as u8).wrapping_mul(31).wrapping_add(seed)).collect()
}

impl<P: Provider> Rig<P> {
    fn new(ctx: &Arc<Context<P>>, port: u8) -> Result<Self, String> {
        let e = |e: uverbs::Error| e.to_string();
        let pd = Pd::new(ctx).map_err(e)?;
        let mr = Mr::alloc(&pd, MR_LEN, access(), false).map_err(e)?;
        let cq = Cq::new(ctx, 16, None, 0).map_err(e)?;
        let caps = QpCaps { max_send_wr: 8, max_recv_wr: 2, max_send_sge: 1, max_recv_sge: 1, max_inline_data: 0 };
        let mut qp = Qp::new(&pd, &QpInit { qp_type: QpType::Rc, send_cq: &cq, recv_cq: &cq, srq: None, caps, sq_sig_all: false }).map_err(e)?;
        qp.to_init(port, 0, access()).map_err(e)?;
        Ok(Rig { qp, cq, mr, _pd: pd })
    }

    fn connect(&mut self, v: &LocalView, me: &Hello, peer: &Hello) -> Result<(), String> {
        let ah = if v.ll == LINK_LAYER_INFINIBAND {
            RtrParams::ib_path(v.port, peer.lid as u16, 0)
        } else {
            RtrParams::roce_path(v.port, peer.gid, v.gid.index as u8, 64)
        };
        // As perftest: this side's own active MTU.
        let path_mtu = match me.mtu {
            256 => 1,
            512 => 2,
            1024 => 3,
            2048 => 4,
            _ => 5,
        };
        let rtr = RtrParams { path_mtu, dest_qpn: peer.qpn, rq_psn: peer.psn, max_dest_rd_atomic: 1, min_rnr_timer: 12, ah };
        self.qp.to_rtr(&rtr).map_err(|e| format!("QP to RTR: {e}"))?;
        let rts = RtsParams { sq_psn: me.psn, timeout: ACK_TIMEOUT, retry_cnt: RETRY_CNT, rnr_retry: 7, max_rd_atomic: 1 };
        self.qp.to_rts(&rts).map_err(|e| format!("QP to RTS: {e}"))
    }

    fn post_recv(&mut self) -> Result<(), String> {
        let sge = [Sge { addr: self.mr.addr() + RECV_OFF as u64, length: 256, lkey: self.mr.lkey() }];
        // SAFETY: the SGE lies inside `self.mr`, which lives as long as the QP (same struct);
        // the slot is read only after the receive completed.
        unsafe { self.qp.post_recv(&[RecvWr { wr_id: 9, sgl: &sge }]) }.map_err(|e| format!("post recv: {e}"))
    }

    fn post(&mut self, op: WrOpcode, off: usize, len: usize, remote: RemoteAddr) -> Result<(), String> {
        let sge = [Sge { addr: self.mr.addr() + off as u64, length: len as u32, lkey: self.mr.lkey() }];
        let mut wr = SendWr::new(1, op, &sge);
        wr.flags = SendFlags::SIGNALED;
        wr.remote = remote;
        // SAFETY: off + len lies inside `self.mr` (the layout constants); the buffer is not
        // touched until this request's completion is polled (or the QP is destroyed).
        unsafe { self.qp.post_send(&[wr]) }.map_err(|e| format!("post send: {e}"))
    }

    /// One completion within WC_WAIT.
    fn wait(&mut self) -> Result<Option<WorkCompletion>, String> {
        let mut wc = [WorkCompletion::default(); 1];
        let deadline = Instant::now() + WC_WAIT;
        loop {
            if self.cq.poll(&mut wc).map_err(|e| format!("poll CQ: {e}"))? == 1 {
                return Ok(Some(wc[0]));
            }
            if Instant::now() > deadline {
                return Ok(None);
            }
            std::thread::sleep(Duration::from_micros(200));
        }
    }
}

fn hello_of<P: Provider>(v: &LocalView, rig: &Rig<P>, ctx: &Context<P>, role: &str, host: &str) -> Result<Hello, String> {
    let pa = ctx.query_port(v.port).map_err(|e| format!("query port {}: {e}", v.port))?;
    let mtu = 128u32 << pa.legacy_resp.active_mtu.clamp(1, 5);
    Ok(Hello {
        role: role.into(),
        host: host.into(),
        dev: v.dev.ibdev.clone(),
        port: u32::from(v.port),
        link_layer: if v.ll == LINK_LAYER_INFINIBAND { "InfiniBand".into() } else { "Ethernet".into() },
        lid: u32::from(v.lid),
        gid: v.gid.gid,
        gid_index: v.gid.index,
        gid_type: v.gid.gid_type.to_string(),
        mtu,
        netdev_mtu: v.netdev_mtu,
        qpn: rig.qp.qpn(),
        psn: (rig.qp.qpn().wrapping_mul(2_654_435_761) >> 8) & 0xff_ffff,
        addr: rig.mr.addr(),
        rkey: rig.mr.rkey(),
        len: XFER as u32,
        err: String::new(),
    })
}

impl providers::ContextUser for Job<'_> {
    type Output = Vec<Check>;
    fn run<P: Provider>(mut self, ctx: Arc<Context<P>>) -> Vec<Check> {
        let v = self.view;
        let mut out = Vec::new();
        let mut rig = match Rig::new(&ctx, v.port) {
            Ok(r) => r,
            Err(e) => {
                out.push(Check::fail("peer QP", format!("cannot make the test QP on {} port {}: {e}", v.dev.ibdev, v.port), "run 'rperftest doctor' for the local checks"));
                return out;
            }
        };
        let role = if self.serve { "serve" } else { "check" };
        let me = match hello_of(v, &rig, &ctx, role, &self.host) {
            Ok(h) => h,
            Err(e) => {
                out.push(Check::fail("peer QP", e, ""));
                return out;
            }
        };
        if self.serve {
            serve_one(&mut self.stream, &mut rig, v, &me, &mut out);
        } else {
            check_one(&mut self.stream, &mut rig, v, &me, &mut out);
        }
        out
    }
}

fn serve_one<P: Provider>(s: &mut TcpStream, rig: &mut Rig<P>, v: &LocalView, me: &Hello, out: &mut Vec<Check>) {
    let deadline = Instant::now() + TCP_WAIT;
    let peer = match read_line(s, deadline).and_then(|l| Hello::parse(&l)) {
        Ok(p) => p,
        Err(e) => {
            out.push(Check::fail("peer message", e, "run 'rperftest doctor PEER' (the same version) on the client"));
            return;
        }
    };
    out.push(Check::ok("peer", format!("client {} ({} port {}, {})", peer.host, peer.dev, peer.port, gid_words(&peer))));
    let sys = SysfsRoot::system();
    let before = read_counters(&sys, &v.dev.ibdev, u32::from(v.port), v.netdev.as_deref());
    if let Err(e) = rig.connect(v, me, &peer).and_then(|_| rig.post_recv()) {
        out.push(Check::fail("peer QP", format!("cannot connect the QP to the client's {}: {e}", gid_words(&peer)), "see the client's lines"));
        // Our view still goes back: the client names the cause from both.
        let _ = send_line(s, &Hello { err: e, ..me.clone() }.encode());
        return;
    }
    if send_line(s, &me.encode()).is_err() {
        out.push(Check::fail("peer TCP", "the client went away before our answer", ""));
        return;
    }
    // The client says `done` after its SEND, WRITE and READ (or their failure).
    let _ = read_line(s, Instant::now() + TCP_WAIT + 3 * WC_WAIT);
    let mut wc = [WorkCompletion::default(); 1];
    let got = matches!(rig.cq.poll(&mut wc), Ok(1)) && wc[0].status == WcStatus::Success && wc[0].opcode == WcOpcode::Recv;
    let mut body = vec![0u8; SEND_LEN];
    let recv_ok = got && rig.mr.read_at(RECV_OFF, &mut body).is_ok() && body == pattern(7, SEND_LEN);
    let after = read_counters(&sys, &v.dev.ibdev, u32::from(v.port), v.netdev.as_deref());
    let r = Result1 { recv_ok, tx: after.nd_tx.saturating_sub(before.nd_tx), rx: after.nd_rx.saturating_sub(before.nd_rx) };
    let _ = send_line(s, &r.encode());
    out.push(if recv_ok {
        Check::ok("peer RC SEND", format!("received the client's {SEND_LEN}-byte SEND intact"))
    } else {
        Check::fail("peer RC SEND", "the client's SEND did not arrive", "see the client's lines")
    });
}

fn check_one<P: Provider>(s: &mut TcpStream, rig: &mut Rig<P>, v: &LocalView, me: &Hello, out: &mut Vec<Check>) {
    out.push(Check::ok("peer local GID", v.why.clone()));
    if let Err(e) = send_line(s, &me.encode()) {
        out.push(Check::fail("peer message", e, ""));
        return;
    }
    let peer = match read_line(s, Instant::now() + TCP_WAIT).and_then(|l| Hello::parse(&l)) {
        Ok(p) => p,
        Err(e) if e.contains("did not answer as rperftest doctor") || e.contains("closed the TCP connection") => {
            out.push(Check::warn("peer message", format!("{e}: the TCP port is reachable, the RDMA checks are skipped"), "run 'rperftest doctor --serve' on the peer for the RDMA checks"));
            return;
        }
        Err(e) => {
            out.push(Check::fail("peer message", e, "run 'rperftest doctor --serve' (the same version) on the peer"));
            return;
        }
    };
    let nd = v.netdev.clone().unwrap_or_else(|| "the netdev".into());
    let views = compare(me, &peer, v.v2_index, &nd);
    let mismatch = views.iter().any(|c| c.level == super::report::Level::Fail);
    out.extend(views);
    if !peer.err.is_empty() {
        out.push(Check::fail(
            "peer QP",
            format!(
                "the peer could not connect its QP to this side's {}: {}{}",
                gid_words(me),
                peer.err,
                if mismatch { " (the mismatch above)" } else { "" }
            ),
            if mismatch { "fix the mismatch above" } else { "" },
        ));
        let _ = send_line(s, &format!("{MAGIC} {VERSION} done\n"));
        return;
    }
    let sys = SysfsRoot::system();
    let before = read_counters(&sys, &v.dev.ibdev, u32::from(v.port), v.netdev.as_deref());
    if let Err(e) = rig.connect(v, me, &peer) {
        out.push(Check::fail("peer QP", e, ""));
        let _ = send_line(s, &format!("{MAGIC} {VERSION} done\n"));
        return;
    }
    let remote = RemoteAddr { addr: peer.addr, rkey: peer.rkey };
    let xfer = XFER.min(peer.len as usize);
    let src = pattern(3, xfer);
    let ok_so_far = rig.mr.write_at(SEND_OFF, &pattern(7, SEND_LEN)).is_ok() && rig.mr.write_at(SRC, &src).is_ok();
    let t0 = Instant::now();
    let ops: [(&str, WrOpcode, usize, usize); 3] = [
        ("SEND", WrOpcode::Send, SEND_OFF, SEND_LEN),
        ("WRITE", WrOpcode::RdmaWrite, SRC, xfer),
        ("READ", WrOpcode::RdmaRead, SINK, xfer),
    ];
    let mut all_ok = ok_so_far;
    for (op, code, off, len) in ops {
        if !all_ok {
            out.push(Check::fail(format!("peer RC {op}"), "not run: an earlier step failed", ""));
            continue;
        }
        let t = Instant::now();
        let r = rig.post(code, off, len, remote).and_then(|_| rig.wait());
        let c = match r {
            Err(e) => Check::fail(format!("peer RC {op}"), e, ""),
            Ok(None) => name_no_completion(op, me, &peer, v.v2_index),
            Ok(Some(wc)) if wc.status != WcStatus::Success => name_wc_failure(op, wc.status, me, &peer, v.v2_index),
            Ok(Some(_)) if code == WrOpcode::RdmaRead => {
                let mut back = vec![0u8; xfer];
                if rig.mr.read_at(SINK, &mut back).is_ok() && back == src {
                    Check::ok(format!("peer RC {op}"), format!("{} read back what WRITE put there ({} ms)", human(xfer), t.elapsed().as_millis()))
                } else {
                    Check::fail(format!("peer RC {op}"), "READ returned other bytes than WRITE put there", "")
                }
            }
            Ok(Some(_)) => Check::ok(format!("peer RC {op}"), format!("{} ({} ms)", human(len), t.elapsed().as_millis())),
        };
        all_ok = c.level == super::report::Level::Ok;
        out.push(c);
    }
    let _ = send_line(s, &format!("{MAGIC} {VERSION} done\n"));
    let res = read_line(s, Instant::now() + TCP_WAIT).and_then(|l| Result1::parse(&l));
    let after = read_counters(&sys, &v.dev.ibdev, u32::from(v.port), v.netdev.as_deref());
    match &res {
        Ok(r) if !r.recv_ok && all_ok => out.push(Check::fail("peer RC SEND", "the SEND completed here but the peer saw no intact receive", "")),
        Ok(_) => {}
        Err(e) => out.push(Check::warn("peer result", e.clone(), "")),
    }
    let same_host = me.gid == peer.gid && me.gid != [0u8; 16];
    out.push(counters_check(&nd, &before, &after, res.as_ref().ok(), same_host));
    let _ = t0;
}

fn human(n: usize) -> String {
    if n >= 1024 && n & 1023 == 0 {
        format!("{} KiB", n / 1024)
    } else {
        format!("{n} B")
    }
}

/// `doctor PEER`.
pub fn check(peer: &str, o: &PeerOpts) -> Vec<Check> {
    let mut out = Vec::new();
    let (c, stream) = tcp_check(peer, o.port);
    out.push(c);
    let Some(stream) = stream else {
        return out;
    };
    let view = match local_view(&o.target) {
        Ok(v) => v,
        Err(e) => {
            out.push(Check::fail("peer local", e, ""));
            return out;
        }
    };
    let job = Job { view: &view, stream, serve: false, host: hostname() };
    match providers::open(&view.dev.desc(), &o.providers, job) {
        Ok(v) => out.extend(v),
        Err(e) => out.push(Check::fail("peer QP", format!("cannot open {}: {e}", view.dev.ibdev), "run 'rperftest doctor' for the local checks")),
    }
    out
}

/// `doctor --serve`: one client (or, with -P, one after another); each client's checks are
/// printed as it ends. Returns the exit code of the last one.
pub fn serve(o: &PeerOpts, print: &mut dyn FnMut(&[Check])) -> Result<(), String> {
    let view = local_view(&o.target)?;
    let l = TcpListener::bind(("0.0.0.0", o.port)).map_err(|e| format!("cannot listen on TCP {}: {e} (another server on this port? use -p)", o.port))?;
    l.set_nonblocking(true).map_err(|e| e.to_string())?;
    println!("doctor: serving on TCP {} with {} port {}, {}", o.port, view.dev.ibdev, view.port, view.why);
    let _ = std::io::stdout().flush();
    loop {
        let t0 = Instant::now();
        let stream = loop {
            match l.accept() {
                Ok((s, _)) => break s,
                Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {}
                Err(e) => return Err(format!("accept: {e}")),
            }
            if o.listen_timeout.is_some_and(|t| t0.elapsed() > t) {
                return Err(format!("no client within {} s", o.listen_timeout.unwrap_or_default().as_secs()));
            }
            std::thread::sleep(Duration::from_millis(20));
        };
        let _ = stream.set_nonblocking(false);
        let job = Job { view: &view, stream, serve: true, host: hostname() };
        let checks = match providers::open(&view.dev.desc(), &o.providers, job) {
            Ok(v) => v,
            Err(e) => vec![Check::fail("peer QP", format!("cannot open {}: {e}", view.dev.ibdev), "")],
        };
        print(&checks);
        if !o.persistent {
            return if super::report::exit_code(&checks) == 0 { Ok(()) } else { Err("the client's test failed".into()) };
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn h(gtype: &str, idx: u32, v4: bool, mtu: u32, nd: u32) -> Hello {
        let mut gid = [0u8; 16];
        if v4 {
            gid[10] = 0xff;
            gid[11] = 0xff;
            gid[12..].copy_from_slice(&[10, 99, 0, 3]);
        } else {
            gid[0] = 0xfe;
            gid[1] = 0x80;
            gid[15] = 1;
        }
        Hello { link_layer: "Ethernet".into(), gid, gid_index: idx, gid_type: gtype.into(), mtu, netdev_mtu: nd, ..Default::default() }
    }

    #[test]
    fn compare_golden() {
        let a = h("RoCE v2", 1, true, 1024, 1500);
        let lines: Vec<String> = compare(&a, &a, Some(1), "eth0").iter().map(Check::line).collect();
        assert_eq!(
            lines,
            [
                "ok    peer link layer: both Ethernet",
                "ok    peer GID: this side RoCE v2 index 1 (IPv4 10.99.0.3), peer RoCE v2 index 1 (IPv4 10.99.0.3)",
                "ok    peer MTU: active MTU 1024 and netdev MTU 1500 on both",
            ]
        );
        let v1 = h("RoCE v1", 4, true, 1024, 1500);
        let c = compare(&v1, &a, Some(1), "eth0");
        assert_eq!(
            c[1].line(),
            "FAIL  peer GID: GID types differ: this side RoCE v1 index 4 (IPv4 10.99.0.3), peer RoCE v2 index 1 (IPv4 10.99.0.3); fix: use -x 1 on this side (its RoCE v2 IPv4 GID)"
        );
        let v6 = h("RoCE v2", 0, false, 1024, 1500);
        let c = compare(&v6, &a, Some(1), "eth0");
        assert!(c[1].line().starts_with("FAIL  peer GID: GID types differ: this side RoCE v2 index 0 (IPv6 fe80::1)"), "{}", c[1].line());
        let small = h("RoCE v2", 1, true, 512, 1000);
        let c = compare(&a, &small, Some(1), "eth0");
        assert_eq!(
            c[2].line(),
            "FAIL  peer MTU: active MTUs differ: this side 1024 (netdev eth0 MTU 1500), peer 512 (netdev MTU 1000): perftest uses each side's own, so this side's larger packets are dropped; fix: set the same netdev MTU on both (ip link set dev IF mtu 1500), or run the tools with -m 512 on both sides"
        );
    }

    #[test]
    fn wc_failures_named() {
        let a = h("RoCE v2", 1, true, 1024, 1500);
        let c = name_wc_failure("SEND", WcStatus::RetryExcErr, &a, &a, Some(1));
        assert_eq!(
            c.line(),
            "FAIL  peer RC SEND: RETRY_EXC_ERR with the peer reachable over TCP: the RoCE packets get no answer: UDP 4791 (RoCE v2) is dropped on the path or by a host firewall (this side RoCE v2 index 1 (IPv4 10.99.0.3), peer RoCE v2 index 1 (IPv4 10.99.0.3)); fix: allow UDP 4791 both ways on both hosts (nft list ruleset; tc filter show dev IF ingress); ping shows only that IP works"
        );
        let v1 = h("RoCE v1", 4, true, 1024, 1500);
        let c = name_wc_failure("WRITE", WcStatus::RetryExcErr, &v1, &a, Some(1));
        assert!(c.detail.contains("the GID types differ: this side RoCE v1 index 4"), "{}", c.detail);
        assert!(c.fix.as_deref().unwrap_or("").starts_with("use -x 1 here"));
        let small = h("RoCE v2", 1, true, 512, 1000);
        assert_eq!(
            name_wc_failure("WRITE", WcStatus::RemInvReqErr, &a, &small, Some(1)).line(),
            "FAIL  peer RC WRITE: REM_INV_REQ_ERR: the peer refused packets larger than its MTU: active MTUs differ: this side 1024, peer 512 (perftest uses each side's own); fix: set the same netdev MTU on both hosts, or run the tools with -m 512 on both sides"
        );
        let c = name_no_completion("SEND", &a, &a, Some(1));
        assert!(c.detail.starts_with("no completion within 4 s (the device retries past the QP's bound) with the peer reachable over TCP: the RoCE packets get no answer: UDP 4791"), "{}", c.detail);
    }

    #[test]
    fn counters_proof() {
        let b = Counters { nd_tx: 10, nd_rx: 10, lo_tx: 5, port_tx: Some(0), port_rx: Some(0) };
        let a = Counters { nd_tx: 18, nd_rx: 17, lo_tx: 5, port_tx: Some(8), port_rx: Some(7) };
        assert_eq!(
            counters_check("eth0", &b, &a, Some(&Result1 { recv_ok: true, tx: 7, rx: 8 }), false).line(),
            "ok    peer counters: eth0 sent 8 packets, received 7; port sent 8, received 7; lo sent 0; the peer's netdev sent 7, received 8"
        );
        let lo = Counters { nd_tx: 10, nd_rx: 10, lo_tx: 30, ..b };
        let c = counters_check("eth0", &b, &lo, None, false);
        assert_eq!(c.level, super::super::report::Level::Warn);
        assert!(c.detail.contains("only loopback moved"), "{}", c.detail);
        // The peer is this host (its GID is ours) and no counter moved at all: still loopback.
        let c = counters_check("eth0", &b, &b, None, true);
        assert!(c.detail.contains("only loopback moved"), "{}", c.detail);
        assert!(counters_check("eth0", &b, &b, None, false).detail.contains("too few packets"));
        // rxe to its own address: the port counts, the netdev and lo do not.
        let rxe_lo = Counters { port_tx: Some(20), port_rx: Some(20), ..b };
        assert_eq!(
            counters_check("eth0", &b, &rxe_lo, None, false).line(),
            "warn  peer counters: eth0 sent 0 packets, received 0; port sent 20, received 20; lo sent 0: only loopback moved, so the test never left this host (PEER is this host: rxe loops its own addresses back, or a route sends it over lo); fix: give the other host's address as PEER"
        );
        // UDP 4791 dropped at the peer: requests leave, nothing answers.
        let dropped = Counters { nd_tx: 17, nd_rx: 11, port_tx: Some(4), ..b };
        // The TCP exchange alone moves the netdev's receive count: the port's says no.
        let tcp_only = Counters { nd_tx: 17, nd_rx: 15, port_tx: Some(4), ..b };
        assert!(counters_check("eth0", &b, &tcp_only, None, false).detail.ends_with("but few came back: the path or the peer drops them"));
        assert_eq!(
            counters_check("eth0", &b, &dropped, None, false).line(),
            "warn  peer counters: eth0 sent 7 packets, received 1; port sent 4, received 0; lo sent 0: the packets left through eth0 but few came back: the path or the peer drops them; fix: look for drops on the path and the peer's firewall (UDP 4791)"
        );
        // The port's counters never moved while the netdev carried the test both ways: they
        // are not counting (rxe on the bed), so the netdev's counts decide: ok.
        let stale = Counters { nd_tx: 21, nd_rx: 21, ..b };
        assert_eq!(counters_check("eth0", &b, &stale, None, false).level, super::super::report::Level::Ok);
        let none = counters_check("eth0", &b, &b, None, false);
        assert!(none.detail.ends_with("too few packets for the test's 3 requests"), "{}", none.detail);
    }

    #[test]
    fn refused_port_is_named() {
        // A port nothing listens on: bind one, learn its number, close it.
        let l = TcpListener::bind("127.0.0.1:0").unwrap();
        let port = l.local_addr().unwrap().port();
        drop(l);
        let (c, s) = tcp_check("127.0.0.1", port);
        assert!(s.is_none());
        assert!(c.line().starts_with(&format!("FAIL  peer TCP: 127.0.0.1:{port} refused the connection")), "{}", c.line());
        assert!(c.fix.unwrap().contains("rperftest doctor --serve"));
    }

    #[test]
    fn malformed_peer_line_is_one_error() {
        let l = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = l.local_addr().unwrap();
        let t = std::thread::spawn(move || {
            let (mut s, _) = l.accept().unwrap();
            s.write_all(b"garbage \x01\x02 no newline").unwrap();
            drop(s);
        });
        let mut c = TcpStream::connect(addr).unwrap();
        let e = read_line(&mut c, Instant::now() + Duration::from_secs(2)).unwrap_err();
        assert!(e.contains("closed the TCP connection in the middle of a line"), "{e}");
        t.join().unwrap();
    }
}
