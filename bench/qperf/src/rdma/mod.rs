//! The RDMA tests (rc_*, uc_*, ud_*, ver_rc_*) on this project's verbs stack, as client and
//! as server, wire-compatible with qperf 0.4.11 (docs/qperf.md, "RDMA tests").
//!
//! Both sides: open the device (non-CM: from the REQ's id, "dev[:port]"; -cm1: the device
//! rdma_cm resolves to), create the CQ (optionally on a completion channel), PD, QP and one
//! buffer, swap NODE messages over the control connection, connect the QP, post receives,
//! sync, run the data phase, then STAT (server → client) and the "after" sync.
//! Non-CM on RoCE needs the peer's GID, which stock qperf never sends: two rperftest peers
//! swap it through the GID extension (node_ext); against a stock peer such a test fails at
//! once with one line that points at -cm1. Two rperftest peers on RoCE also swap their ports'
//! active MTU (node_ext's MTU block), and pick the sizes the user left open from both (path).

pub mod cm;
pub mod dev;
pub mod node_ext;
pub mod path;
pub mod plan;
#[allow(unsafe_code)]
pub mod rig;
pub mod run;

use std::sync::Arc;
use std::time::{SystemTime, UNIX_EPOCH};

use providers::ProviderSettings;
use uverbs::objects::{Ah, Context, RtrParams, RtsParams};
use uverbs::provider::Provider;
use uverbs::wr::{RemoteAddr, UdDest};

use super::request::{build_req, open_req, report, show_results, warn_unused};
use super::clock::new_stat;
use super::ctrl::{Ctrl, CtrlError};
use super::options::{Fatal, Par, Side, State};
use super::wire::{Node, Req, Stat, NODE_LEN, STAT_LEN, SYNC_AFTER, SYNC_BEFORE};
use dev::Local;
use node_ext::{ext_from_id, id_with_ext, mark_node, mtu_from_id, node_marked, Follows, GidExt, MtuExt, EXT_LEN, MTU_EXT_LEN};
use path::{Asked, Ports};
use plan::{Kind, RdmaTest, Transport, ACK_TIMEOUT, DEFAULT_MTU, DEPTH, MIN_RNR_TIMER, QKEY, RETRY_CNT, RNR_RETRY};
use rig::{qp_access, Rig};
use run::{data_phase, Run};

/// Largest message a request may ask for (the buffer is registered memory).
pub const MAX_MSG: u32 = 1 << 30;

/// The values one side runs with: the client's own (-l…/both) options, or the server's REQ.
#[derive(Clone, Debug)]
pub struct Params {
    pub msg_size: u32,
    pub time: u32,
    pub no_msgs: u32,
    pub poll: bool,
    pub access_recv: bool,
    pub rd_atomic: u32,
    pub mtu: u32,
    pub sl: u8,
    pub rate: u8,
    pub src_path_bits: u32,
    /// The user gave the path MTU (-mt) / the message size (-m); server: as the client's MTU
    /// block says (true without one). What was not given may be chosen (path.rs).
    pub mtu_given: bool,
    pub msg_given: bool,
}

enum CmSide {
    None,
    Client(cm::CmClient),
    Server(cm::CmServer),
}

struct Job<'a> {
    ctrl: &'a Ctrl,
    test: RdmaTest,
    server: bool,
    p: Params,
    /// Non-CM: the device, port and GID in use.
    local: Option<Local>,
    /// Server: the client's GID extension and MTU block from the REQ.
    peer_ext: Option<GidExt>,
    peer_mtu: Option<MtuExt>,
    cm: CmSide,
}

/// What a session leaves: (our STAT, the server's) on the client, and for a non-CM test what
/// the ports carry, ours and (from an rperftest peer) the peer's.
pub struct Done {
    stats: Option<(Stat, Stat)>,
    ports: Option<Ports>,
    /// The peer's GID extension said Ethernet.
    peer_ethernet: bool,
}

/// The one line for a non-CM test on RoCE whose peer sent no GID.
pub fn no_gid_line(test: &str, local: &Local, server: bool) -> String {
    let who = if server { "the client" } else { "the server" };
    format!(
        "{test}: {who} sent no GID (stock qperf's NODE has none) and this link layer is Ethernet ({} port {} is RoCE): non-CM tests need InfiniBand; use -cm1 (RC tests only; UC/UD have no CM path in qperf)",
        local.info.ibdev, local.port
    )
}

fn psn() -> u32 {
    let n = SystemTime::now().duration_since(UNIX_EPOCH).map(|d| d.as_nanos() as u64).unwrap_or(0);
    let x = n ^ (u64::from(std::process::id()) << 32);
    (x.wrapping_mul(0x9E37_79B9_7F4A_7C15) >> 40) as u32 & 0xff_ffff
}

fn l(s: String) -> CtrlError {
    CtrlError::Local(s)
}

impl providers::ContextUser for Job<'_> {
    type Output = Result<Done, CtrlError>;
    fn run<P: Provider>(self, ctx: Arc<Context<P>>) -> Self::Output {
        session(&ctx, self)
    }
}

/// What the connection set-up leaves for the rest of the session: the CM id (None: non-CM)
/// and the server's CM listener (kept to the end).
struct Setup {
    cm_id: Option<uverbs::cm::CmId>,
    listener: Option<uverbs::cm::CmId>,
}

/// A non-CM side's port: the LID its peer addresses and the active MTU in bytes.
#[derive(Clone, Copy)]
struct PortFacts {
    lid: u32,
    active_mtu: u32,
}

fn session<P: Provider>(ctx: &Arc<Context<P>>, job: Job<'_>) -> Result<Done, CtrlError> {
    let Job { ctrl, test: t, server, mut p, local, peer_ext, peer_mtu, cm: cm_side } = job;
    let name = t.name;
    let (cs, ss) = t.shapes();
    let shape = if server { ss } else { cs };
    let (own_rd, max_rd) = rd_atomic(ctx, &p)?;
    let port = local.as_ref().map(|lo| port_facts(ctx, lo, &p)).transpose()?;
    let mut ports = port.zip(local.as_ref()).map(|(pf, lo)| Ports { ethernet: lo.ethernet(), local: pf.active_mtu, peer: peer_mtu.map(|m| m.active_mtu) });
    // The server has its peer's MTU from the REQ; the client has it only after the NODE swap,
    // so it sizes its buffer for the largest message its port could carry.
    let mut buf_msg = p.msg_size;
    if let Some(pt) = ports {
        if server {
            settle(t, &mut p, pt)?;
            buf_msg = p.msg_size;
        } else if pt.ethernet && t.transport == Transport::Ud && !p.msg_given {
            buf_msg = buf_msg.max(pt.local);
        }
    }
    let buf = t.buffer_size(server, buf_msg);
    let mut rig = Rig::new(ctx, t.transport, shape, buf, p.msg_size, p.poll).map_err(l)?;
    let Setup { cm_id, listener: _listener } = set_up(&mut rig, ctrl, t, local.as_ref(), cm_side)?;
    let non_cm = cm_id.is_none();
    let my_psn = if non_cm { psn() } else { 0 };
    let lnode = Node {
        vaddr: rig.mr.addr(),
        lid: port.map_or(0, |pf| pf.lid),
        qpn: if non_cm { rig.qp.qpn() } else { 0 },
        psn: my_psn,
        srqn: 0,
        rkey: rig.mr.rkey(),
        alt_lid: 0,
        rd_atomic: own_rd,
    };
    let own_mtu = ports.map(|pt| MtuExt { active_mtu: pt.local, mtu_given: false, msg_given: false });
    let peers = Peers { ext: peer_ext, mtu: peer_mtu };
    let (rnode, peers) = swap_nodes(ctrl, name, server, non_cm, lnode.encode(), local.as_ref(), peers, own_mtu)?;
    if let (Some(pt), false) = (ports.as_mut(), server) {
        pt.peer = peers.mtu.map(|m| m.active_mtu);
        settle(t, &mut p, *pt)?;
        rig.msg_size = p.msg_size;
    }
    if non_cm {
        let lo = local.as_ref().ok_or_else(|| CtrlError::local("internal: no device"))?;
        connect_non_cm(&mut rig, lo, &p, &rnode, peers.ext.as_ref(), own_rd.min(max_rd), my_psn, p.mtu).map_err(l)?;
    }
    rig.remote = RemoteAddr { addr: rnode.vaddr, rkey: rnode.rkey };
    prepare_buffers(&mut rig, t, server, p.msg_size)?;
    ctrl.sync(SYNC_BEFORE)?;
    let run = Run {
        test: t,
        server,
        time: p.time,
        no_msgs: p.no_msgs,
        access_recv: p.access_recv,
        idle: ctrl.timeout,
        ethernet: local.as_ref().is_some_and(Local::ethernet),
    };
    let mut stat = new_stat();
    data_phase(&mut rig, &run, ctrl, &mut stat).map_err(l)?;
    let stats = swap_results(ctrl, t, server, &p, stat)?;
    if let Some(id) = &cm_id {
        cm::close(id, !server);
    }
    drop(rig);
    let peer_ethernet = peers.ext.is_some_and(|e| e.link_layer == node_ext::LL_ETHERNET);
    Ok(Done { stats, ports, peer_ethernet })
}

/// The path MTU and message size this side runs with (path.rs), into `p`.
fn settle(t: RdmaTest, p: &mut Params, ports: Ports) -> Result<(), CtrlError> {
    let asked = Asked { mtu: p.mtu, msg_size: p.msg_size, mtu_given: p.mtu_given, msg_given: p.msg_given };
    let c = path::choose(t.name, asked, ports, t.transport == Transport::Ud).map_err(l)?;
    p.mtu = c.mtu;
    p.msg_size = c.msg_size;
    Ok(())
}

/// RDMA reads or atomics in flight: (ours, the device's most). Ours is what -rd asked for
/// (0: the device's most), never more than the device has.
fn rd_atomic<P: Provider>(ctx: &Arc<Context<P>>, p: &Params) -> Result<(u32, u32), CtrlError> {
    let dattr = ctx.query_device().map_err(|e| l(format!("query device failed: {e}")))?;
    let max_rd = dattr.max_qp_rd_atom;
    let own_rd = match p.rd_atomic {
        0 => max_rd,
        n if n <= max_rd => n,
        n => return Err(l(format!("device only supports {max_rd} (< {n}) RDMA reads or atomics"))),
    };
    Ok((own_rd, max_rd))
}

/// The port's LID (plus -sp's path bits, as qperf) and active MTU.
fn port_facts<P: Provider>(ctx: &Arc<Context<P>>, lo: &Local, p: &Params) -> Result<PortFacts, CtrlError> {
    let pa = ctx.query_port(lo.port).map_err(|e| l(format!("query port failed: {e}")))?;
    let r = &pa.legacy_resp;
    let mut lid = u32::from(r.lid);
    if r.lmc > 0 {
        lid += p.src_path_bits & ((1u32 << r.lmc.min(7)) - 1);
    }
    Ok(PortFacts { lid, active_mtu: mtu_bytes(r.active_mtu) })
}

/// A port's `enum ibv_mtu` in bytes, an out-of-range code taken as the nearest of 256..4096
/// (the test's own port and the MTU block's read it the same way).
fn mtu_bytes(code: u8) -> u32 {
    128u32 << code.clamp(1, 5)
}

/// The port's active MTU in bytes, from a context opened for that alone: the client's MTU
/// block goes in the REQ, before the test opens the device. None: the device did not open or
/// answer (the test's own open then says why).
pub fn active_mtu(desc: &uverbs::provider::DeviceDesc, settings: &ProviderSettings, port: u8) -> Option<u32> {
    struct Query(u8);
    impl providers::ContextUser for Query {
        type Output = Option<u32>;
        fn run<P: Provider>(self, ctx: Arc<Context<P>>) -> Option<u32> {
            let pa = ctx.query_port(self.0).ok()?;
            Some(mtu_bytes(pa.legacy_resp.active_mtu))
        }
    }
    providers::open(desc, settings, Query(port)).ok().flatten()
}

/// The QP connected through rdma_cm (-cm1), or without CM brought to INIT on the device's port.
fn set_up<P: Provider>(rig: &mut Rig<P>, ctrl: &Ctrl, t: RdmaTest, local: Option<&Local>, cm_side: CmSide) -> Result<Setup, CtrlError> {
    let mut cm_id = None;
    let mut listener = None;
    match cm_side {
        CmSide::Client(c) => cm_id = Some(cm::client_connect(c, &mut rig.qp, ctrl.timeout).map_err(l)?),
        CmSide::Server(sv) => {
            cm::server_accept(&sv.id, &mut rig.qp, ctrl.timeout).map_err(l)?;
            cm_id = Some(sv.id);
            listener = Some(sv.listener);
        }
        CmSide::None => {
            let lo = local.ok_or_else(|| CtrlError::local("internal: non-CM test without a device"))?;
            rig.qp.to_init(lo.port, 0, qp_access(t.transport)).map_err(|e| l(format!("failed to modify QP to INIT state: {e}")))?;
        }
    }
    Ok(Setup { cm_id, listener })
}

/// The peer's GID extension and MTU block, when it is an rperftest side that sent them.
#[derive(Clone, Copy, Debug)]
struct Peers {
    ext: Option<GidExt>,
    mtu: Option<MtuExt>,
}

/// Swap NODE messages (and, non-CM between two rperftest peers, GID extensions and MTU
/// blocks): the peer's NODE and what it sent of those (the server has them from the REQ).
#[allow(clippy::too_many_arguments)]
fn swap_nodes(ctrl: &Ctrl, name: &str, server: bool, non_cm: bool, mut nb: [u8; NODE_LEN], local: Option<&Local>, peers: Peers, own_mtu: Option<MtuExt>) -> Result<(Node, Peers), CtrlError> {
    let rnode;
    let mut peer = peers;
    if server {
        let announce = non_cm && peer.ext.is_some();
        // Only a client that sent its MTU block reads ours (an older one would not).
        let with_mtu = own_mtu.filter(|_| peer.mtu.is_some());
        if announce {
            mark_node(&mut nb, if with_mtu.is_some() { Follows::GidMtu } else { Follows::Gid });
        }
        ctrl.send("node information", &nb)?;
        if announce {
            let ext = local.map(Local::ext).ok_or_else(|| CtrlError::local("internal: no device"))?;
            ctrl.send("GID extension", &ext.encode())?;
            if let Some(m) = with_mtu {
                ctrl.send("MTU block", &m.encode())?;
            }
        }
        rnode = Node::decode(&ctrl.recv("node information", NODE_LEN)?).map_err(|e| l(e.to_string()))?;
    } else {
        // Both kinds of server send their NODE first, so we may read before we send: a
        // missing GID is then reported before a stock server tries to use our NODE.
        let rb = ctrl.recv("node information", NODE_LEN)?;
        rnode = Node::decode(&rb).map_err(|e| l(e.to_string()))?;
        let malformed = |what: &str| CtrlError::Local(format!("the server's {what} is malformed (a different rperftest version?)"));
        if let Some(follows) = node_marked(&rb).filter(|_| non_cm) {
            let e = ctrl.recv("GID extension", EXT_LEN)?;
            peer.ext = Some(GidExt::decode(&e).ok_or_else(|| malformed("GID extension"))?);
            if follows == Follows::GidMtu {
                let m = ctrl.recv("MTU block", MTU_EXT_LEN)?;
                peer.mtu = Some(MtuExt::decode(&m).ok_or_else(|| malformed("MTU block"))?);
            }
        }
        if let Some(lo) = local {
            if lo.ethernet() && peer.ext.is_none() {
                return Err(l(no_gid_line(name, lo, false)));
            }
        }
        ctrl.send("node information", &nb)?;
    }
    Ok((rnode, peer))
}

/// Before the start: the receives the test needs posted, and the poll-latency test's
/// marks written at both ends of the buffer.
fn prepare_buffers<P: Provider>(rig: &mut Rig<P>, t: RdmaTest, server: bool, msg_size: u32) -> Result<(), CtrlError> {
    match t.kind {
        Kind::Bw | Kind::WriteBw if server => rig.post_recv(DEPTH).map_err(l)?,
        Kind::BiBw => rig.post_recv(DEPTH).map_err(l)?,
        Kind::Lat | Kind::WriteLat => rig.post_recv(1).map_err(l)?,
        _ => {}
    }
    if t.kind == Kind::WritePollLat {
        let mark = if server { plan::POLL_SERVER_ID } else { plan::POLL_CLIENT_ID };
        rig.set_byte(0, mark);
        rig.set_byte(msg_size.saturating_sub(1) as usize, mark);
    }
    Ok(())
}

/// After the data phase: the server sends its STAT and waits for the "after" sync; the
/// client returns (its STAT, the server's).
fn swap_results(ctrl: &Ctrl, t: RdmaTest, server: bool, p: &Params, stat: Stat) -> Result<Option<(Stat, Stat)>, CtrlError> {
    let out = if server {
        ctrl.send("results", &stat.encode())?;
        ctrl.recv_sync(SYNC_AFTER)?;
        None
    } else {
        // Count-based against an idle server: our "after" sync goes first, it is what ends
        // that server's wait (a stock server reads it after sending STAT either way).
        let early = p.time == 0 && t.server_idles();
        if early {
            ctrl.send("synchronization after test", SYNC_AFTER)?;
        }
        let r = Stat::decode(&ctrl.recv("results", STAT_LEN)?).map_err(|e| l(e.to_string()))?;
        if !early {
            ctrl.send("synchronization after test", SYNC_AFTER)?;
        }
        Some((stat, r))
    };
    Ok(out)
}

#[allow(clippy::too_many_arguments)]
fn connect_non_cm<P: Provider>(rig: &mut Rig<P>, lo: &Local, p: &Params, peer: &Node, ext: Option<&GidExt>, own_rd: u32, my_psn: u32, mtu: u32) -> Result<(), String> {
    let path_mtu = plan::mtu_enum(mtu).or_else(|| plan::mtu_enum(mtu.next_power_of_two() / 2)).unwrap_or(3);
    let mut ah = if lo.ethernet() {
        let g = lo.gid.as_ref().ok_or_else(|| format!("{} port {} has no GID; run 'rperftest doctor'", lo.info.ibdev, lo.port))?;
        let e = ext.ok_or_else(|| "the peer sent no GID".to_string())?;
        RtrParams::roce_path(lo.port, e.gid, u8::try_from(g.index).unwrap_or(0), 64)
    } else {
        RtrParams::ib_path(lo.port, peer.lid as u16, p.sl)
    };
    ah.sl = p.sl;
    ah.static_rate = p.rate;
    let clamp = |v: u32| u8::try_from(v.min(255)).unwrap_or(255);
    let rtr_err = |e: uverbs::Error| format!("failed to modify QP to RTR: {e}");
    let rts_err = |e: uverbs::Error| format!("failed to modify QP to RTS: {e}");
    match rig.transport {
        Transport::Rc | Transport::Uc => {
            let rtr = RtrParams {
                path_mtu,
                dest_qpn: peer.qpn,
                rq_psn: peer.psn,
                max_dest_rd_atomic: clamp(own_rd),
                min_rnr_timer: MIN_RNR_TIMER,
                ah,
            };
            rig.qp.to_rtr(&rtr).map_err(rtr_err)?;
            let rts = RtsParams {
                sq_psn: my_psn,
                timeout: ACK_TIMEOUT,
                retry_cnt: RETRY_CNT,
                rnr_retry: RNR_RETRY,
                // The peer's responder depth, capped by what this device can initiate.
                max_rd_atomic: clamp(peer.rd_atomic.min(own_rd).max(1)),
            };
            rig.qp.to_rts(&rts).map_err(rts_err)?;
        }
        Transport::Ud => {
            rig.qp.to_rtr(&RtrParams::default()).map_err(rtr_err)?;
            rig.qp.to_rts(&RtsParams { sq_psn: my_psn, ..RtsParams::default() }).map_err(rts_err)?;
            let a = Ah::new(&rig.pd, &ah).map_err(|e| format!("failed to create address handle: {e}"))?;
            rig.ud = Some(UdDest { ah: a.number(), remote_qpn: peer.qpn, remote_qkey: QKEY });
            rig.ah = Some(a);
        }
    }
    Ok(())
}

fn check_sizes(t: &RdmaTest, msg_size: u32) -> Result<(), String> {
    if matches!(t.kind, Kind::AtomicMr(_)) {
        return Ok(());
    }
    if matches!(t.kind, Kind::VerAtomic(_)) && msg_size < 8 {
        return Err("message size must be at least 8".into());
    }
    if msg_size == 0 {
        return Err(format!("{}: message size must be at least 1 byte", t.name));
    }
    if msg_size > MAX_MSG {
        return Err(format!("{}: message size {msg_size} is above 1 GiB", t.name));
    }
    Ok(())
}

fn text_of(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

/// Client side of one RDMA test (`index`: its place in the request table).
pub fn run_client(st: &mut State, t: RdmaTest, index: u16) -> Result<(), Fatal> {
    let p = &mut st.pars;
    p.use_par(Par::UseCm);
    let use_cm = t.cm_capable() && p.loc(Par::UseCm) != 0;
    if !use_cm {
        p.set_default(Par::MtuSize, DEFAULT_MTU);
        for u in [Par::Id, Par::Sl, Par::StaticRate, Par::SrcPathBits] {
            p.use_par(u);
        }
    }
    if let Some(sz) = t.default_size() {
        p.set_default(Par::MsgSize, sz);
    }
    for u in t.uses() {
        p.use_par(u);
    }
    // Unlike qperf, every RDMA test honours -n (qperf: the *_bw ones; others run for ever).
    p.use_par(Par::NoMsgs);
    warn_unused(st, t.name);
    let p = &st.pars;
    if p.loc(Par::Time) == 0 && p.loc(Par::NoMsgs) == 0 {
        return Err(Fatal(format!("{}: -t 0 without -n would never end; give a duration (-t 2) or a count (-n 1000)", t.name)));
    }
    check_sizes(&t, p.loc(Par::MsgSize)).map_err(Fatal)?;
    let rate_text = p.get(Side::Loc, Par::StaticRate).text.clone();
    let rate = plan::static_rate(&rate_text).ok_or_else(|| Fatal(format!("bad static rate: {rate_text}")))?;
    let params = Params {
        msg_size: p.loc(Par::MsgSize),
        time: p.loc(Par::Time),
        no_msgs: p.loc(Par::NoMsgs),
        poll: p.loc(Par::PollMode) != 0,
        access_recv: p.loc(Par::AccessRecv) != 0,
        rd_atomic: p.loc(Par::RdAtomic),
        mtu: p.loc(Par::MtuSize),
        sl: u8::try_from(p.loc(Par::Sl)).unwrap_or(0),
        rate,
        src_path_bits: p.loc(Par::SrcPathBits),
        mtu_given: p.is_set(Side::Loc, Par::MtuSize),
        msg_given: p.is_set(Side::Loc, Par::MsgSize),
    };
    if !use_cm && plan::mtu_enum(params.mtu).is_none() {
        return Err(Fatal(format!("bad MTU: {}; must be 256/512/1K/2K/4K", params.mtu)));
    }
    let local = if use_cm { None } else { Some(dev::select(&p.get(Side::Loc, Par::Id).text).map_err(Fatal)?) };
    let mut req: Req = build_req(p, index);
    req.use_cm = u32::from(use_cm);
    if let Some(lo) = &local {
        // On RoCE our port's MTU goes along, for an rperftest server to pick sizes with.
        let mtu = lo.ethernet().then(|| active_mtu(&lo.info.desc(), &st.providers, lo.port)).flatten();
        let block = mtu.map(|m| MtuExt { active_mtu: m, mtu_given: p.is_set(Side::Rem, Par::MtuSize), msg_given: p.is_set(Side::Rem, Par::MsgSize) });
        req.id = id_with_ext(&p.get(Side::Rem, Par::Id).text, Some(&lo.ext()), block.as_ref());
    }
    let ctrl = open_req(st, &req)?;
    let res = client_session(&ctrl, t, params.clone(), local, use_cm, &st.providers);
    let (mut l, mut r, done) = match res {
        Ok(v) => v,
        Err(CtrlError::Local(m)) => {
            // As qperf: our error goes to the peer too (it ends the server's wait at once).
            ctrl.send_error(&m);
            return Err(Fatal(m));
        }
        Err(e) => return Err(report(e)),
    };
    drop(ctrl);
    show_chosen(st, t, &params, &done);
    show_results(st, t.name, t.measure(), &mut l, &mut r);
    Ok(())
}

/// Sizes chosen between two rperftest sides (path.rs) replace stock's defaults in the
/// parameters (`-vvu`, `--json`) for both sides, and `-v` says so in one line.
fn show_chosen(st: &mut State, t: RdmaTest, params: &Params, done: &Done) {
    let (Some(ours), Some(theirs)) = (done.ports, done.ports.and_then(|pt| pt.peer)) else {
        return;
    };
    let ud = t.transport == Transport::Ud;
    let asked = Asked { mtu: params.mtu, msg_size: params.msg_size, mtu_given: params.mtu_given, msg_given: params.msg_given };
    let server_ports = Ports { ethernet: done.peer_ethernet, local: theirs, peer: Some(ours.local) };
    let p = &mut st.pars;
    let server_asked = Asked {
        mtu: p.rem(Par::MtuSize),
        msg_size: p.rem(Par::MsgSize),
        mtu_given: p.is_set(Side::Rem, Par::MtuSize),
        msg_given: p.is_set(Side::Rem, Par::MsgSize),
    };
    for (side, a, pt) in [(Side::Loc, asked, ours), (Side::Rem, server_asked, server_ports)] {
        if let Ok(c) = path::choose(t.name, a, pt, ud) {
            // set_default_side leaves a value the user gave alone.
            p.set_default_side(side, Par::MtuSize, c.mtu);
            p.set_default_side(side, Par::MsgSize, c.msg_size);
        }
    }
    let line = path::choose(t.name, asked, ours, ud).ok().and_then(|c| path::note(asked, ours, c));
    if let (Some(line), true, false) = (line, st.g.verbosity.used > 0, st.g.json) {
        println!("{line}");
    }
}

fn client_session(
    ctrl: &Ctrl,
    t: RdmaTest,
    p: Params,
    local: Option<Local>,
    use_cm: bool,
    settings: &ProviderSettings,
) -> Result<(Stat, Stat, Done), CtrlError> {
    let (desc, cm_side) = if use_cm {
        let c = cm::client_start(ctrl)?;
        (c.dev.info.desc(), CmSide::Client(c))
    } else {
        let lo = local.as_ref().ok_or_else(|| CtrlError::local("internal: no device"))?;
        (lo.info.desc(), CmSide::None)
    };
    let dev_name = desc.ibdev.clone();
    let job = Job { ctrl, test: t, server: false, p, local, peer_ext: None, peer_mtu: None, cm: cm_side };
    match providers::open(&desc, settings, job) {
        Ok(Ok(Done { stats: Some((l, r)), ports, peer_ethernet })) => Ok((l, r, Done { stats: None, ports, peer_ethernet })),
        Ok(Ok(Done { stats: None, .. })) => Err(CtrlError::local("internal: the client got no results")),
        Ok(Err(e)) => Err(e),
        Err(e) => Err(CtrlError::Local(format!("failed to open device {dev_name}: {e}"))),
    }
}

/// Server side of one RDMA test, with the values of the client's REQ; the device opens as
/// `settings` choose.
pub fn serve(ctrl: &Ctrl, req: &Req, t: RdmaTest, settings: &ProviderSettings) -> Result<(), CtrlError> {
    let use_cm = req.use_cm != 0 && t.cm_capable();
    if req.time == 0 && req.no_msgs == 0 {
        return Err(CtrlError::Local(format!("{}: the request has neither a time nor a message count", t.name)));
    }
    check_sizes(&t, req.msg_size).map_err(CtrlError::Local)?;
    let rate_text = text_of(req.static_rate.raw());
    let rate = plan::static_rate(&rate_text).ok_or_else(|| CtrlError::Local(format!("bad static rate: {}", req.static_rate.text())))?;
    let mut params = Params {
        msg_size: req.msg_size,
        time: req.time,
        no_msgs: req.no_msgs,
        poll: req.poll_mode != 0,
        access_recv: req.access_recv != 0,
        rd_atomic: req.rd_atomic,
        mtu: req.mtu_size,
        sl: u8::try_from(req.sl.min(15)).unwrap_or(0),
        rate,
        src_path_bits: req.src_path_bits,
        mtu_given: true,
        msg_given: true,
    };
    let (desc, local, peer_ext, cm_side) = if use_cm {
        let sv = cm::server_start(ctrl)?;
        (sv.dev.info.desc(), None, None, CmSide::Server(sv))
    } else {
        if plan::mtu_enum(req.mtu_size).is_none() {
            return Err(CtrlError::Local(format!("bad MTU: {}; must be 256/512/1K/2K/4K", req.mtu_size)));
        }
        let lo = dev::select(&text_of(req.id.raw())).map_err(CtrlError::Local)?;
        let ext = ext_from_id(&req.id);
        if lo.ethernet() && ext.is_none() {
            return Err(CtrlError::Local(no_gid_line(t.name, &lo, true)));
        }
        (lo.info.desc(), Some(lo), ext, CmSide::None)
    };
    let dev_name = desc.ibdev.clone();
    // A client's MTU block says which of our sizes its user left to us.
    let peer_mtu = if use_cm { None } else { mtu_from_id(&req.id) };
    if let Some(m) = peer_mtu {
        params.mtu_given = m.mtu_given;
        params.msg_given = m.msg_given;
    }
    let job = Job { ctrl, test: t, server: true, p: params, local, peer_ext, peer_mtu, cm: cm_side };
    match providers::open(&desc, settings, job) {
        Ok(r) => r.map(|_| ()),
        Err(e) => Err(CtrlError::Local(format!("failed to open device {dev_name}: {e}"))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use uverbs::attr::{GidEntry, GidType, NodeType};
    use uverbs::discovery::{DeviceInfo, Source};

    fn pair() -> (Ctrl, Ctrl) {
        crate::ctrl::loopback_pair()
    }

    fn roce(last: u8) -> Local {
        let info = DeviceInfo {
            index: None,
            ibdev: "rxe0".into(),
            uverbs: "uverbs0".into(),
            uverbs_dev: None,
            driver_id: 14,
            driver_abi: 2,
            node_guid: 0,
            sys_image_guid: 0,
            node_type: NodeType::Ca,
            fw_ver: String::new(),
            board_id: None,
            port_count: 1,
            source: Source::Sysfs,
        };
        let mut gid = [0u8; 16];
        gid[10..].copy_from_slice(&[0xff, 0xff, 10, 0, 0, last]);
        let gid = GidEntry { index: 1, port: 1, gid, gid_type: GidType::RoceV2, netdev: None };
        Local { info, port: 1, ll: node_ext::LL_ETHERNET, gid: Some(gid) }
    }

    fn node(qpn: u32) -> [u8; NODE_LEN] {
        Node { vaddr: 0x1000, lid: 0, qpn, psn: 7, srqn: 0, rkey: 9, alt_lid: 0, rd_atomic: 1 }.encode()
    }

    const NONE: Peers = Peers { ext: None, mtu: None };

    /// The server's swap_nodes against the client's, the client's REQ having carried `client`;
    /// then one sync each way, which fails if either side read too few or too many bytes.
    fn swap(client_mtu: Option<MtuExt>) -> (Peers, Node) {
        let (c, s) = pair();
        let peers = Peers { ext: Some(roce(1).ext()), mtu: client_mtu };
        let h = std::thread::spawn(move || {
            let own = Some(MtuExt { active_mtu: 4096, mtu_given: false, msg_given: false });
            let (n, p) = swap_nodes(&s, "ud_bw", true, true, node(0x22), Some(&roce(2)), peers, own).unwrap();
            s.sync(SYNC_BEFORE).unwrap();
            (n, p.mtu)
        });
        let (n, p) = swap_nodes(&c, "ud_bw", false, true, node(0x11), Some(&roce(1)), NONE, None).unwrap();
        c.sync(SYNC_BEFORE).unwrap();
        let (server_saw, server_mtu) = h.join().unwrap();
        assert_eq!(server_saw.qpn, 0x11);
        assert_eq!(server_mtu, client_mtu);
        assert_eq!(p.ext, Some(roce(2).ext()));
        (p, n)
    }

    #[test]
    fn swap_nodes_sends_the_mtu_block_only_to_a_client_that_sent_one() {
        let client = MtuExt { active_mtu: 1024, mtu_given: false, msg_given: true };
        let (p, n) = swap(Some(client));
        assert_eq!(p.mtu, Some(MtuExt { active_mtu: 4096, mtu_given: false, msg_given: false }));
        assert_eq!(n.qpn, 0x22);
        // An older rperftest client (GID extension, no block) gets RPQG and 24 bytes only.
        let (p, _) = swap(None);
        assert_eq!(p.mtu, None);
    }

    #[test]
    fn client_against_stock_or_older_servers() {
        // Stock: padding that is no mark; on RoCE our client stops with the no-GID line.
        let (c, s) = pair();
        s.send("node", &node(0x22)).unwrap();
        let e = swap_nodes(&c, "ud_bw", false, true, node(0x11), Some(&roce(1)), NONE, None).unwrap_err();
        assert_eq!(e, CtrlError::Local(no_gid_line("ud_bw", &roce(1), false)));
        // An older rperftest server: RPQG and a GID extension, no MTU block: stock's sizes.
        let (c, s) = pair();
        let mut nb = node(0x22);
        mark_node(&mut nb, Follows::Gid);
        s.send("node", &nb).unwrap();
        s.send("ext", &roce(2).ext().encode()).unwrap();
        let (_, p) = swap_nodes(&c, "ud_bw", false, true, node(0x11), Some(&roce(1)), NONE, None).unwrap();
        assert_eq!((p.ext, p.mtu), (Some(roce(2).ext()), None));
        assert_eq!(s.recv("node", NODE_LEN).unwrap(), node(0x11).to_vec());
        // A malformed block after RPQM: one line, not a hang.
        let (c, s) = pair();
        let mut nb = node(0x22);
        mark_node(&mut nb, Follows::GidMtu);
        s.send("node", &nb).unwrap();
        s.send("ext", &roce(2).ext().encode()).unwrap();
        s.send("mtu", &[0u8; MTU_EXT_LEN]).unwrap();
        let e = swap_nodes(&c, "ud_bw", false, true, node(0x11), Some(&roce(1)), NONE, None).unwrap_err();
        assert_eq!(e, CtrlError::local("the server's MTU block is malformed (a different rperftest version?)"));
    }
}
