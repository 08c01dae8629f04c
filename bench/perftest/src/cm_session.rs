//! perftest's rdma_cm paths without librdmacm (docs/perftest-wire.md, "rdma_cm (-z, -R)"; our
//! capture of `ib_write_bw -R`, excerpted in uverbs/tests/fixtures/cm/):
//!
//! - `-z` (also implied by `-R`): the out-of-band exchange runs over an RC "control" QP of its
//!   own, connected through rdma_cm on the same port as the TCP exchange would use. Every block
//!   of the TCP exchange becomes one signaled SEND of exactly the block's size, received into a
//!   single pre-posted receive that is re-posted after each message ([`CmOob`]). The key records
//!   are not text there but perftest's raw `struct pingpong_dest` with big-endian integers: 56
//!   bytes up to 6.28, 64 in 6.29. We send the size the peer's version implies and accept either
//!   (the receive buffer holds both; the completion's length tells which).
//! - `-R`: additionally the data QPs are connected through rdma_cm ([`CmData`]): one connection
//!   per QP, same port number, no private data of our own (perftest passes none for IP
//!   addressing), responder_resources/initiator_depth = out_reads for READ/ATOMIC, the server
//!   clamping to what the request offers, retry counts from `--retry_count`, the ToS (`-T`) set on
//!   the client's ids before route resolution, and min_rnr_timer 12 on the server's QPs after
//!   ACCEPT. QPs are created with our own verbs objects on the device the connection resolved
//!   to and moved INIT/RTR/RTS with the attributes the kernel computes (INIT_QP_ATTR).
//!
//! Every wait is bounded; failures are one line with a hint (address that maps to no RDMA
//! device, route failure, e.g. 127.0.0.1, rejected connection, timeout).

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr, ToSocketAddrs};
use std::sync::Arc;
use std::time::{Duration, Instant};

use uverbs::cm::{self, CmChannel, CmDevice, CmEvent, CmEventKind, CmId, ConnParam, PortSpace};
use uverbs::objects::{AccessFlags, Context, Cq, Mr, Pd, Qp, QpAttr, QpAttrMask, QpInit};
use uverbs::provider::{Provider, QpCaps, QpState, QpType};
use uverbs::wr::{RecvWr, SendFlags, SendWr, Sge, WcOpcode, WcStatus, WorkCompletion, WrOpcode};

use crate::engine::verbs::VerbsEndpoint;
use crate::engine::Endpoint;
use crate::oob::msg::{
    self, BwReport, KeyFormat, KeyMsg, Negotiate, NegotiateLayout, PeerVersion, SysData, CM_KEY_LEN_V606,
    CM_KEY_LEN_V629,
};
use crate::oob::{Channel, Exchange, OobError, Role};

/// perftest's rdma_resolve_addr/route timeout is 2 s; the VM is ~50× slower, so be generous
/// (a failure that the kernel reports arrives at once anyway).
const RESOLVE_TIMEOUT: Duration = Duration::from_secs(10);
/// How long a client keeps retrying a connection the server rejected because nothing listens
/// yet (perftest: 10 tries 100 ms apart for the data connections; the server starts listening
/// only after the sync exchange).
const REJECT_RETRY_FOR: Duration = Duration::from_secs(8);
const REJECT_RETRY_DELAY: Duration = Duration::from_millis(100);
/// IB CM reject reason "invalid service ID": no listener on that port (yet).
const REJ_INVALID_SERVICE_ID: i32 = 8;
/// Bound on waiting for the peer's DISCONNECTED at the end (the peer may already be gone).
const DISCONNECT_WAIT: Duration = Duration::from_secs(2);

/// perftest's wr_id for control-channel work requests (SYNC_SPEC_ID).
const SYNC_SPEC_ID: u64 = 5;
/// Control MR layout: receive area (large enough for a 6.29 NEGOTIATE block), send area.
const RECV_OFF: usize = 0;
const RECV_LEN: usize = 1024;
const SEND_OFF: usize = 2048;
const CTRL_MR_LEN: usize = 4096;

fn uerr(e: uverbs::Error) -> String {
    e.to_string()
}

/// The IPv4/IPv6 address a host name resolves to (the family perftest asks for).
pub fn resolve_host(host: &str, port: u16, ipv6: bool) -> Result<SocketAddr, String> {
    let addrs: Vec<SocketAddr> = (host, port)
        .to_socket_addrs()
        .map_err(|e| format!("rdma_cm: cannot resolve host {host}: {e}; give the server's RDMA interface IP"))?
        .collect();
    addrs
        .iter()
        .copied()
        .find(|a| a.is_ipv6() == ipv6)
        .or_else(|| addrs.first().copied())
        .ok_or_else(|| format!("rdma_cm: host {host} resolves to no address; give the server's RDMA interface IP"))
}

/// The control connection, resolved/requested but not yet connected (before the device is
/// opened: the connection decides the device).
pub enum CmStart {
    Client { id: CmId, dst: SocketAddr, dev: CmDevice },
    Server { listener: CmId, id: CmId, dev: CmDevice },
}

impl CmStart {
    pub fn device(&self) -> &CmDevice {
        match self {
            CmStart::Client { dev, .. } | CmStart::Server { dev, .. } => dev,
        }
    }
}

/// Client: resolve the server's address and route for the control connection.
/// `src` (`--source_ip`) is the source address of the resolution, as perftest 6.06's
/// rdma_client_connect passes it to rdma_resolve_addr.
pub fn start_client(dst: SocketAddr, src: Option<IpAddr>, ack_timeout: u8) -> Result<CmStart, String> {
    let chan = CmChannel::open().map_err(uerr)?;
    let src = src.map(|ip| SocketAddr::new(ip, 0));
    let mut id = resolved_id_of(&chan, src.as_ref(), &dst, None, ack_timeout, QpType::Rc)?;
    let dev = id.device().map_err(uerr)?;
    id.set_qp_type(QpType::Rc);
    Ok(CmStart::Client { id, dst, dev })
}

/// One id resolved to `dst` (address, [ToS], route).
fn resolved_id(chan: &Arc<CmChannel>, dst: &SocketAddr, tos: Option<u8>, ack_timeout: u8) -> Result<CmId, String> {
    resolved_id_of(chan, None, dst, tos, ack_timeout, QpType::Rc)
}

/// [`resolved_id`] for a QP type: UD ids live in the UDP port space (RDMA_PS_UDP).
fn resolved_id_of(
    chan: &Arc<CmChannel>,
    src: Option<&SocketAddr>,
    dst: &SocketAddr,
    tos: Option<u8>,
    ack_timeout: u8,
    qp_type: QpType,
) -> Result<CmId, String> {
    let mut id = chan.create_id(PortSpace::for_qp_type(qp_type), qp_type).map_err(uerr)?;
    id.resolve_addr(src, dst, RESOLVE_TIMEOUT).map_err(uerr)?;
    id.expect(CmEventKind::AddrResolved, RESOLVE_TIMEOUT).map_err(uerr)?;
    if let Some(t) = tos {
        id.set_tos(t).map_err(uerr)?;
    }
    // As perftest; an older kernel without the option still works with the default.
    let _ = id.set_ack_timeout(ack_timeout);
    id.resolve_route(RESOLVE_TIMEOUT).map_err(uerr)?;
    id.expect(CmEventKind::RouteResolved, RESOLVE_TIMEOUT).map_err(uerr)?;
    Ok(id)
}

/// Server: listen on `bind:port` and wait (up to `wait`, None: practically forever, like C)
/// for the client's control connection request.
pub fn start_server(bind: Option<IpAddr>, port: u16, ipv6: bool, wait: Option<Duration>) -> Result<CmStart, String> {
    let chan = CmChannel::open().map_err(uerr)?;
    let listener = chan.create_id(PortSpace::Tcp, QpType::Rc).map_err(uerr)?;
    let _ = listener.set_reuseaddr(true);
    let ip = bind.unwrap_or(if ipv6 { IpAddr::V6(Ipv6Addr::UNSPECIFIED) } else { IpAddr::V4(Ipv4Addr::UNSPECIFIED) });
    listener.bind(&SocketAddr::new(ip, port)).map_err(uerr)?;
    listener.listen(1).map_err(uerr)?;
    let (id, _req) = listener.get_request(wait.unwrap_or(Duration::from_secs(7 * 24 * 3600))).map_err(uerr)?;
    let dev = id.device().map_err(uerr)?;
    Ok(CmStart::Server { listener, id, dev })
}

/// The device check shared by every connection: the QPs live on the context we opened.
fn check_device(dev: &CmDevice, ibdev: &str, what: &str) -> Result<(), String> {
    if dev.info.ibdev != ibdev {
        return Err(format!(
            "rdma_cm: the {what} uses {} (port {}), but this run opened {ibdev}; use the IP of {ibdev}'s netdev or -d {}",
            dev.info.ibdev, dev.port, dev.info.ibdev
        ));
    }
    Ok(())
}

// ================================================================================================
// The control channel (-z)
// ================================================================================================

/// The out-of-band exchange over the rdma_cm control QP. Field order is drop order: the QP
/// before its CQs, MR and PD, the id last.
pub struct CmOob<P: Provider> {
    qp: Qp<P>,
    send_cq: Cq<P>,
    recv_cq: Cq<P>,
    mr: Mr<P>,
    _pd: Arc<Pd<P>>,
    id: CmId,
    role: Role,
    timeout: Duration,
    /// Size of the key struct we send: 64 to a 6.29 peer, else 56.
    key_len: usize,
    /// Our GID index as the key struct carries it (-1: none).
    gid_index: i32,
}

impl<P: Provider> CmOob<P> {
    /// Create the control QP on `ctx` and complete the control connection (client: CONNECT,
    /// retrying while nothing listens yet for up to `retry_for`; server: ACCEPT, then the
    /// listener goes, which frees the port for the `-R` data listener).
    pub fn establish(
        ctx: &Arc<Context<P>>,
        start: CmStart,
        timeout: Duration,
        retry_for: Duration,
        ack_timeout: u8,
    ) -> Result<Self, String> {
        let ibdev = ctx.device().ibdev.clone();
        check_device(start.device(), &ibdev, "control connection")?;
        let pd = Pd::new(ctx).map_err(uerr)?;
        let mr = Mr::alloc(&pd, CTRL_MR_LEN, AccessFlags::LOCAL_WRITE, false).map_err(uerr)?;
        let send_cq = Cq::new(ctx, 4, None, 0).map_err(uerr)?;
        let recv_cq = Cq::new(ctx, 4, None, 0).map_err(uerr)?;
        let caps = QpCaps { max_send_wr: 2, max_recv_wr: 2, max_send_sge: 1, max_recv_sge: 1, max_inline_data: 0 };
        let init =
            QpInit { qp_type: QpType::Rc, send_cq: &send_cq, recv_cq: &recv_cq, srq: None, caps, sq_sig_all: false };
        let mut qp = Qp::new(&pd, &init).map_err(|e| format!("create the rdma_cm control QP: {e}"))?;
        let what = "the rdma_cm control connection";
        let param = ConnParam { retry_count: 7, rnr_retry_count: 7, ..Default::default() };
        let (id, role) = match start {
            CmStart::Client { id, dst, .. } => {
                let id = connect_with_retry(
                    id,
                    &dst,
                    &mut qp,
                    &param,
                    None,
                    ack_timeout,
                    timeout,
                    retry_for,
                    &ibdev,
                    what,
                    |qp, id| {
                        id.modify_qp(qp, QpState::Init).map_err(uerr)?;
                        post_ctrl_recv(qp, &mr)
                    },
                )?;
                (id, Role::Client)
            }
            CmStart::Server { listener, id, .. } => {
                let _ = id.set_ack_timeout(ack_timeout);
                id.modify_qp(&mut qp, QpState::Init).map_err(uerr)?;
                post_ctrl_recv(&mut qp, &mr)?;
                id.accept_qp(&mut qp, &param).map_err(uerr)?;
                id.expect(CmEventKind::Established, timeout.min(Duration::from_secs(60))).map_err(uerr)?;
                drop(listener);
                (id, Role::Server)
            }
        };
        Ok(CmOob { qp, send_cq, recv_cq, mr, _pd: pd, id, role, timeout, key_len: CM_KEY_LEN_V606, gid_index: -1 })
    }

    /// Our GID index as the key struct carries it.
    pub fn set_gid_index(&mut self, ix: Option<u8>) {
        self.gid_index = ix.map(i32::from).unwrap_or(-1);
    }

    /// One block out: a signaled SEND of exactly `block`, waited for.
    fn send_block(&mut self, step: &str, block: &[u8]) -> Result<(), OobError> {
        if block.len() > RECV_LEN {
            return Err(OobError::InvalidLocal {
                what: "rdma_cm control message",
                detail: format!("{} bytes", block.len()),
            });
        }
        self.mr.write_at(SEND_OFF, block).map_err(|e| io_err(step, e.to_string()))?;
        let sge = [Sge { addr: self.mr.addr() + SEND_OFF as u64, length: block.len() as u32, lkey: self.mr.lkey() }];
        let mut wr = SendWr::new(SYNC_SPEC_ID, WrOpcode::Send, &sge);
        wr.flags = SendFlags::SIGNALED;
        // SAFETY: the SGE lies inside `self.mr` (registered, CTRL_MR_LEN bytes), which is dropped
        // after the QP (field order); the send area is not rewritten before this send completes
        // (we wait for its completion below).
        unsafe { self.qp.post_send(&[wr]) }
            .map_err(|e| io_err(step, format!("post SEND on the rdma_cm control QP: {e}")))?;
        let wc = self.wait_wc(step, false, block.len())?;
        if wc.opcode != WcOpcode::Send {
            return Err(io_err(step, format!("control QP: unexpected completion {:?} for our SEND", wc.opcode)));
        }
        Ok(())
    }

    /// One block in: the next receive completion; its bytes, then the receive is re-posted.
    fn recv_block(&mut self, step: &str, expected: usize) -> Result<Vec<u8>, OobError> {
        let wc = self.wait_wc(step, true, expected)?;
        let n = (wc.byte_len as usize).min(RECV_LEN);
        let mut buf = vec![0u8; n];
        self.mr.read_at(RECV_OFF, &mut buf).map_err(|e| io_err(step, e.to_string()))?;
        post_ctrl_recv(&mut self.qp, &self.mr).map_err(|e| io_err(step, e))?;
        Ok(buf)
    }

    /// Wait for one completion on the send or receive CQ, bounded by the timeout; a DISCONNECTED
    /// on the control id (the peer exited) ends the wait at once.
    fn wait_wc(&mut self, step: &str, recv: bool, expected: usize) -> Result<WorkCompletion, OobError> {
        let start = Instant::now();
        let mut last_cm_check = start;
        let mut spins = 0u32;
        let mut wc = [WorkCompletion::default(); 1];
        loop {
            let cq = if recv { &mut self.recv_cq } else { &mut self.send_cq };
            let n = cq.poll(&mut wc).map_err(|e| io_err(step, format!("poll the rdma_cm control CQ: {e}")))?;
            if n == 1 {
                let c = wc[0];
                if c.status != WcStatus::Success {
                    let dir = if recv { "receive" } else { "SEND" };
                    return Err(io_err(
                        step,
                        format!(
                            "the rdma_cm control QP's {dir} completed with {} ({}); the peer may have exited, or speaks \
                             another perftest key-struct size",
                            c.status,
                            c.status.likely_cause()
                        ),
                    ));
                }
                return Ok(c);
            }
            let now = Instant::now();
            if !self.timeout.is_zero() && now.duration_since(start) >= self.timeout {
                return Err(OobError::Timeout {
                    step: step.to_string(),
                    secs: self.timeout.as_secs(),
                    got: 0,
                    expected,
                });
            }
            if now.duration_since(last_cm_check) >= Duration::from_millis(100) {
                last_cm_check = now;
                if let Ok(Some(ev)) = self.id.wait_event(Duration::ZERO) {
                    if matches!(ev.kind, CmEventKind::Disconnected | CmEventKind::DeviceRemoval) {
                        return Err(OobError::PeerClosed { step: step.to_string(), got: 0, expected });
                    }
                }
            }
            spins = spins.saturating_add(1);
            if spins < 2000 {
                std::hint::spin_loop();
            } else {
                let us = (50u64 << ((spins - 2000) / 200).min(5)).min(2000);
                std::thread::sleep(Duration::from_micros(us));
            }
        }
    }

    /// One exchange: client sends then receives, server receives then sends.
    fn xchg(&mut self, step: &str, mine: &[u8], theirs: usize) -> Result<Vec<u8>, OobError> {
        let got = match self.role {
            Role::Client => {
                self.send_block(step, mine)?;
                self.recv_block(step, theirs)?
            }
            Role::Server => {
                let v = self.recv_block(step, theirs)?;
                self.send_block(step, mine)?;
                v
            }
        };
        if got.len() != theirs {
            return Err(OobError::Malformed {
                step: step.to_string(),
                detail: format!("the peer sent {} bytes, expected {theirs}", got.len()),
                hint: "both sides must run the same tool with the same options (-z/-R on both)",
            });
        }
        Ok(got)
    }
}

/// The size of the key struct a peer of this version posts its receive for: 64 bytes from 6.29
/// on (tail_markers_vaddr), 56 before (6.28 still sends 56; docs/perftest-wire.md, "Binary key
/// struct").
pub fn key_len_for(peer: &PeerVersion) -> usize {
    if peer.value >= 6.285 {
        CM_KEY_LEN_V629
    } else {
        CM_KEY_LEN_V606
    }
}

fn io_err(step: &str, msg: String) -> OobError {
    OobError::Io { step: step.to_string(), source: std::io::Error::other(msg) }
}

fn post_ctrl_recv<P: Provider>(qp: &mut Qp<P>, mr: &Mr<P>) -> Result<(), String> {
    let sge = [Sge { addr: mr.addr() + RECV_OFF as u64, length: RECV_LEN as u32, lkey: mr.lkey() }];
    // SAFETY: the SGE lies inside `mr` (registered, CTRL_MR_LEN bytes), which outlives the QP in
    // `CmOob` (field order) and during `establish`; the receive area is read only after the
    // receive completed.
    unsafe { qp.post_recv(&[RecvWr { wr_id: SYNC_SPEC_ID, sgl: &sge }]) }
        .map_err(|e| format!("post a receive on the rdma_cm control QP: {e}"))
}

impl<P: Provider> Exchange for CmOob<P> {
    fn set_timeout(&mut self, timeout: Duration) -> Result<(), OobError> {
        self.timeout = timeout;
        Ok(())
    }

    fn exchange_version(&mut self, own: &str, mark: bool) -> Result<PeerVersion, OobError> {
        // The mark only advertises; the option exchange itself is not carried here.
        let mine = if mark { msg::encode_version_marked(own)? } else { msg::encode_version(own)? };
        let theirs = self.xchg("the version exchange", &mine, msg::VERSION_LEN)?;
        let peer = msg::decode_version(&theirs)?;
        msg::check_version(&peer)?;
        // 6.29 grew the key struct (tail_markers_vaddr); it posts a 320-byte receive, older
        // versions one of exactly 56 bytes, which a 64-byte SEND would overrun.
        self.key_len = key_len_for(&peer);
        Ok(peer)
    }

    fn exchange_sysdata(&mut self, local: SysData) -> Result<SysData, OobError> {
        let p = self.xchg("the page size exchange", &msg::encode_i32(local.page_size), msg::SYSDATA_LEN)?;
        let page_size = msg::decode_page_size(&p)?;
        let c = self.xchg("the cache line exchange", &msg::encode_i32(local.cache_line), msg::SYSDATA_LEN)?;
        let cache_line = msg::decode_cache_line(&c)?;
        Ok(SysData { page_size, cache_line })
    }

    fn exchange_mtu(&mut self, local_enum: u8, peer: &PeerVersion) -> Result<Option<u8>, OobError> {
        let Some(len) = peer.mtu_len() else { return Ok(None) };
        let mine = msg::encode_mtu(local_enum, len)?;
        let theirs = self.xchg("the MTU exchange", &mine, len)?;
        msg::decode_mtu(&theirs)
    }

    fn exchange_negotiate(&mut self, local: &Negotiate, layout: NegotiateLayout) -> Result<Negotiate, OobError> {
        let theirs = self.xchg("the parameter negotiation", &local.encode(layout), layout.len())?;
        let remote = Negotiate::decode(&theirs)?;
        msg::compare_negotiation(local, &remote)?;
        Ok(remote)
    }

    fn exchange_key(&mut self, mine: &KeyMsg, _fmt: KeyFormat) -> Result<KeyMsg, OobError> {
        const STEP: &str = "the rdma_cm key exchange";
        let block = mine.encode_cm(self.key_len, self.gid_index)?;
        if self.role == Role::Client {
            self.send_block(STEP, &block)?;
        }
        // Either size is accepted: the completion's length says which layout the peer uses.
        let theirs = self.recv_block(STEP, self.key_len)?;
        if self.role == Role::Server {
            self.send_block(STEP, &block)?;
        }
        let (k, _gid_index) = KeyMsg::decode_cm(&theirs)?;
        Ok(k)
    }

    fn exchange_report(&mut self, mine: &BwReport, per_port: bool, peer: &PeerVersion) -> Result<BwReport, OobError> {
        let iters_len = peer.report_iters_len();
        let mut remote = BwReport::default();
        for &f in BwReport::fields(per_port) {
            let step = format!("the report exchange ({})", f.name());
            let theirs = self.xchg(&step, &mine.encode_field(f, iters_len), BwReport::field_len(f, iters_len))?;
            remote.decode_field(f, &theirs)?;
        }
        Ok(remote)
    }

    fn send(&mut self, step: &str, block: &[u8]) -> Result<(), OobError> {
        self.send_block(step, block)
    }
}

/// The exchange channel of a run: TCP (perftest's default) or the rdma_cm control QP.
pub enum OobLink<P: Provider> {
    Tcp(Channel),
    Cm(Box<CmOob<P>>),
}

macro_rules! delegate {
    ($self:ident, $m:ident($($a:expr),*)) => {
        match $self {
            OobLink::Tcp(c) => Exchange::$m(c, $($a),*),
            OobLink::Cm(c) => Exchange::$m(&mut **c, $($a),*),
        }
    };
}

impl<P: Provider> Exchange for OobLink<P> {
    fn set_timeout(&mut self, timeout: Duration) -> Result<(), OobError> {
        delegate!(self, set_timeout(timeout))
    }
    fn exchange_version(&mut self, own: &str, mark: bool) -> Result<PeerVersion, OobError> {
        delegate!(self, exchange_version(own, mark))
    }
    fn exchange_options(
        &mut self,
        mine: &mut crate::oob::transport::OptionsBuilder<'_>,
    ) -> Result<Option<Vec<u8>>, OobError> {
        delegate!(self, exchange_options(mine))
    }
    fn exchange_sysdata(&mut self, local: SysData) -> Result<SysData, OobError> {
        delegate!(self, exchange_sysdata(local))
    }
    fn exchange_mtu(&mut self, local_enum: u8, peer: &PeerVersion) -> Result<Option<u8>, OobError> {
        delegate!(self, exchange_mtu(local_enum, peer))
    }
    fn exchange_negotiate(&mut self, local: &Negotiate, layout: NegotiateLayout) -> Result<Negotiate, OobError> {
        delegate!(self, exchange_negotiate(local, layout))
    }
    fn exchange_key(&mut self, mine: &KeyMsg, fmt: KeyFormat) -> Result<KeyMsg, OobError> {
        delegate!(self, exchange_key(mine, fmt))
    }
    fn exchange_report(&mut self, mine: &BwReport, per_port: bool, peer: &PeerVersion) -> Result<BwReport, OobError> {
        delegate!(self, exchange_report(mine, per_port, peer))
    }
    fn send(&mut self, step: &str, block: &[u8]) -> Result<(), OobError> {
        delegate!(self, send(step, block))
    }
}

// ================================================================================================
// Connecting one QP as the active side
// ================================================================================================

/// CONNECT `qp` through `id` (resolved to `dst`), retrying with a fresh id while the server
/// rejects because nothing listens yet (until `retry_for` has passed); then INIT → RTR → RTS
/// with the kernel's attributes and the RTU. `prepare` runs before each CONNECT (move the QP to
/// INIT, post receives).
#[allow(clippy::too_many_arguments)]
fn connect_with_retry<P: Provider>(
    mut id: CmId,
    dst: &SocketAddr,
    qp: &mut Qp<P>,
    param: &ConnParam,
    tos: Option<u8>,
    ack_timeout: u8,
    timeout: Duration,
    retry_for: Duration,
    ibdev: &str,
    what: &str,
    mut prepare: impl FnMut(&mut Qp<P>, &CmId) -> Result<(), String>,
) -> Result<CmId, String> {
    let start = Instant::now();
    let mut prepared = false;
    loop {
        check_device(&id.device().map_err(uerr)?, ibdev, what)?;
        if !prepared {
            prepare(qp, &id)?;
            prepared = true;
        } else {
            id.modify_qp(qp, QpState::Init).map_err(uerr)?;
        }
        let mut p = param.clone();
        p.qp_num = qp.qpn();
        id.connect(&p).map_err(uerr)?;
        let ev: CmEvent = match id.wait_event(timeout.min(Duration::from_secs(60))).map_err(uerr)? {
            Some(ev) => ev,
            None => {
                return Err(cm::timeout_error(
                    "RDMA_CM_EVENT_CONNECT_RESPONSE",
                    timeout.min(Duration::from_secs(60)),
                    Some(dst),
                )
                .to_string())
            }
        };
        match ev.kind {
            CmEventKind::ConnectResponse => {
                id.finish_active_connect(qp).map_err(|e| format!("{what}: {e}"))?;
                return Ok(id);
            }
            CmEventKind::Rejected if ev.status == REJ_INVALID_SERVICE_ID && start.elapsed() < retry_for => {
                drop(id);
                std::thread::sleep(REJECT_RETRY_DELAY);
                let chan = CmChannel::open().map_err(uerr)?;
                id = resolved_id(&chan, dst, tos, ack_timeout)?;
            }
            _ => {
                let e =
                    cm::event_error(&ev, "CONNECT_RESPONSE", Some(dst)).map(|e| e.to_string()).unwrap_or_else(|| {
                        format!("rdma_cm connect to {dst}: unexpected {} (status {})", ev.kind.name(), ev.status)
                    });
                return Err(format!("{what}: {e}"));
            }
        }
    }
}

// ================================================================================================
// The data connections (-R)
// ================================================================================================

/// Settings of the data connections.
#[derive(Clone, Debug)]
pub struct CmDataConfig {
    /// Client: the server's address (port = `-p`); None on the server.
    pub dst: Option<SocketAddr>,
    pub port: u16,
    pub bind: Option<IpAddr>,
    pub ipv6: bool,
    pub tos: Option<u8>,
    pub ack_timeout: u8,
    pub retry_count: u8,
    /// READ/ATOMIC: the depth offered in both directions (out_reads); else 0.
    pub rd_atomic: u8,
    pub timeout: Duration,
    /// UD data QPs (`-c UD`): SIDR in the UDP port space instead of a connection.
    pub ud: bool,
    /// UD, latency tests and `-b`: the client also tells the server its QPN with one
    /// SEND_WITH_IMM (perftest's rdma_cm_send_ud_connection_parameters), from which the server
    /// builds its address handle back.
    pub ud_reply: bool,
    /// Our GID index (the server's AH back to the client uses it).
    pub sgid_index: u8,
}

/// The `-R` data connections: the server's listener (from right after the control connection,
/// the port being free again), then one connected id per QP.
pub struct CmData {
    cfg: CmDataConfig,
    listener: Option<CmId>,
    ids: Vec<CmId>,
}

impl CmData {
    /// Server: listen for the data connections now (the client connects after the sync
    /// exchange; listening early means it never finds the port closed).
    pub fn server(cfg: CmDataConfig, num_qps: u32) -> Result<Self, String> {
        let chan = CmChannel::open().map_err(uerr)?;
        let qt = if cfg.ud { QpType::Ud } else { QpType::Rc };
        let listener = chan.create_id(PortSpace::for_qp_type(qt), qt).map_err(uerr)?;
        let _ = listener.set_reuseaddr(true);
        let ip = cfg.bind.unwrap_or(if cfg.ipv6 {
            IpAddr::V6(Ipv6Addr::UNSPECIFIED)
        } else {
            IpAddr::V4(Ipv4Addr::UNSPECIFIED)
        });
        listener.bind(&SocketAddr::new(ip, cfg.port)).map_err(uerr)?;
        listener.listen(num_qps.max(1)).map_err(uerr)?;
        Ok(CmData { cfg, listener: Some(listener), ids: Vec::new() })
    }

    pub fn client(cfg: CmDataConfig) -> Self {
        CmData { cfg, listener: None, ids: Vec::new() }
    }

    /// Connect (client) or accept (server) every QP of `ep` (in INIT) in order.
    pub fn connect_all<P: Provider>(&mut self, ibdev: &str, ep: &mut VerbsEndpoint<P>) -> Result<(), String> {
        for q in 0..ep.num_qps() {
            if self.cfg.ud {
                self.connect_one_ud(ibdev, q, ep)?;
            } else {
                self.connect_one(ibdev, q, ep.qp_mut(q))?;
            }
        }
        // All connected: the listener goes (perftest destroys it too).
        self.listener = None;
        Ok(())
    }

    fn connect_one<P: Provider>(&mut self, ibdev: &str, q: usize, qp: &mut Qp<P>) -> Result<(), String> {
        let c = self.cfg.clone();
        let what = format!("rdma_cm data connection of QP #{q}");
        match (c.dst, self.listener.as_ref()) {
            (Some(dst), _) => {
                let chan = CmChannel::open().map_err(uerr)?;
                let id = resolved_id(&chan, &dst, c.tos, c.ack_timeout)?;
                let param = ConnParam {
                    responder_resources: c.rd_atomic,
                    initiator_depth: c.rd_atomic,
                    retry_count: c.retry_count,
                    rnr_retry_count: c.retry_count,
                    ..Default::default()
                };
                let id = connect_with_retry(
                    id,
                    &dst,
                    qp,
                    &param,
                    c.tos,
                    c.ack_timeout,
                    c.timeout,
                    REJECT_RETRY_FOR,
                    ibdev,
                    &what,
                    |qp, id| id.modify_qp(qp, QpState::Init).map_err(uerr),
                )?;
                self.ids.push(id);
            }
            (None, Some(listener)) => {
                let wait = c.timeout.min(Duration::from_secs(120));
                let (id, req) = listener.get_request(wait).map_err(|e| {
                    format!("{what}: {}", e.with_hint("the client did not connect its data QP; look at its output"))
                })?;
                if let Err(e) = id.device().map_err(uerr).and_then(|d| check_device(&d, ibdev, &what)) {
                    let _ = id.reject(0, &[]);
                    return Err(e);
                }
                let param = ConnParam {
                    responder_resources: c.rd_atomic.min(req.conn.initiator_depth),
                    initiator_depth: c.rd_atomic.min(req.conn.responder_resources),
                    retry_count: c.retry_count,
                    rnr_retry_count: c.retry_count,
                    ..Default::default()
                };
                let _ = id.set_ack_timeout(c.ack_timeout);
                id.accept_qp(qp, &param).map_err(|e| format!("{what}: {e}"))?;
                // As perftest after rdma_accept (RC): a short RNR NAK timer for the receiver.
                let attr = QpAttr { min_rnr_timer: 12, ..Default::default() };
                qp.modify(&attr, QpAttrMask::MIN_RNR_TIMER).map_err(|e| format!("{what}: set min_rnr_timer: {e}"))?;
                id.expect(CmEventKind::Established, wait).map_err(|e| format!("{what}: {e}"))?;
                self.ids.push(id);
            }
            (None, None) => return Err(format!("{what}: internal error: no listener")),
        }
        Ok(())
    }

    /// UD: move the QP to RTS as librdmacm does for UD ids (INIT with the kernel's pkey, port
    /// and Q_Key, then RTR, then RTS with SQ PSN 0).
    fn ud_qp_to_rts<P: Provider>(id: &CmId, qp: &mut Qp<P>) -> Result<(), String> {
        id.modify_qp(qp, QpState::Init).map_err(uerr)?;
        let rtr = QpAttr { qp_state: QpState::Rtr, ..Default::default() };
        qp.modify(&rtr, QpAttrMask::STATE).map_err(uerr)?;
        let rts = QpAttr { qp_state: QpState::Rts, sq_psn: 0, ..Default::default() };
        qp.modify(&rts, QpAttrMask::STATE | QpAttrMask::SQ_PSN).map_err(uerr)
    }

    /// One UD "connection" (perftest 6.06 over librdmacm): the client's CONNECT is a SIDR
    /// request; the server ACCEPTs with its QPN, and the client's ESTABLISHED event carries the
    /// server's QPN, Q_Key and address. With `ud_reply` the client then SENDs its QPN as
    /// immediate data, and the server builds its AH from that receive.
    fn connect_one_ud<P: Provider>(&mut self, ibdev: &str, q: usize, ep: &mut VerbsEndpoint<P>) -> Result<(), String> {
        let c = self.cfg.clone();
        let what = format!("rdma_cm UD data connection of QP #{q}");
        let wait = c.timeout.min(Duration::from_secs(120));
        match (c.dst, self.listener.as_ref()) {
            (Some(dst), _) => {
                let start = Instant::now();
                let mut qp_ready = false;
                let (id, ev) = loop {
                    let chan = CmChannel::open().map_err(uerr)?;
                    let id = resolved_id_of(&chan, None, &dst, c.tos, c.ack_timeout, QpType::Ud)?;
                    id.device().map_err(uerr).and_then(|d| check_device(&d, ibdev, &what))?;
                    if !qp_ready {
                        // Once: a retry (no listener yet) reuses the QP already in RTS.
                        Self::ud_qp_to_rts(&id, ep.qp_mut(q)).map_err(|e| format!("{what}: {e}"))?;
                        qp_ready = true;
                    }
                    let param = ConnParam { qp_num: ep.qpn(q), retry_count: c.retry_count, rnr_retry_count: c.retry_count, ..Default::default() };
                    id.connect(&param).map_err(|e| format!("{what}: {e}"))?;
                    let ev = id.wait_event(wait).map_err(|e| format!("{what}: {e}"))?.ok_or_else(|| {
                        format!("{what}: {}", cm::timeout_error("RDMA_CM_EVENT_ESTABLISHED", wait, Some(&dst)))
                    })?;
                    match ev.kind {
                        CmEventKind::Established => break (id, ev),
                        // No listener yet (SIDR answered "unsupported"): retry as perftest does.
                        CmEventKind::Unreachable | CmEventKind::Rejected if start.elapsed() < REJECT_RETRY_FOR => {
                            drop(id);
                            std::thread::sleep(REJECT_RETRY_DELAY);
                        }
                        _ => {
                            let e = cm::event_error(&ev, "ESTABLISHED", Some(&dst)).map(|e| e.to_string()).unwrap_or_else(|| {
                                format!("rdma_cm connect to {dst}: unexpected {} (status {})", ev.kind.name(), ev.status)
                            });
                            return Err(format!("{what}: {e}"));
                        }
                    }
                };
                let ud = ev.ud();
                ep.set_ud_peer(q, &ud.ah, ud.qp_num, ud.qkey).map_err(|e| format!("{what}: {e}"))?;
                if c.ud_reply {
                    ep.send_qpn_to_peer(q, c.timeout).map_err(|e| format!("{what}: sending our QPN to the server: {e}"))?;
                }
                self.ids.push(id);
            }
            (None, Some(listener)) => {
                let (id, _req) = listener.get_request(wait).map_err(|e| {
                    format!("{what}: {}", e.with_hint("the client did not connect its data QP; look at its output"))
                })?;
                if let Err(e) = id.device().map_err(uerr).and_then(|d| check_device(&d, ibdev, &what)) {
                    let _ = id.reject(0, &[]);
                    return Err(e);
                }
                let r = (|| {
                    Self::ud_qp_to_rts(&id, ep.qp_mut(q))?;
                    if c.ud_reply {
                        ep.post_qpn_receive(q).map_err(|e| e.to_string())?;
                    }
                    let param = ConnParam { qp_num: ep.qpn(q), retry_count: c.retry_count, rnr_retry_count: c.retry_count, ..Default::default() };
                    id.accept(&param).map_err(uerr)
                })();
                if let Err(e) = r {
                    let _ = id.reject(0, &[]);
                    return Err(format!("{what}: {e}"));
                }
                if c.ud_reply {
                    let (qkey, _) = ep.qp_mut(q).query(QpAttrMask::QKEY).map_err(|e| format!("{what}: query Q_Key: {e}"))?;
                    let port = ep.qp_port(q);
                    ep.receive_peer_qpn(q, qkey.qkey, c.sgid_index, port, c.timeout)
                        .map_err(|e| format!("{what}: waiting for the client's QPN: {e}"))?;
                }
                self.ids.push(id);
            }
            (None, None) => return Err(format!("{what}: internal error: no listener")),
        }
        Ok(())
    }

    /// Disconnect every data connection and wait (bounded) for the peer's side of it.
    pub fn finish(&mut self) {
        if self.cfg.ud {
            // No connection to take down (perftest does not disconnect UD ids either).
            self.ids.clear();
            return;
        }
        for id in &self.ids {
            let _ = id.disconnect();
        }
        let deadline = Instant::now() + DISCONNECT_WAIT;
        for id in &self.ids {
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                break;
            }
            while let Ok(Some(ev)) = id.wait_event(left) {
                if ev.kind == CmEventKind::Disconnected || Instant::now() >= deadline {
                    break;
                }
            }
        }
        self.ids.clear();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::oob::plan::{plan, wire_shape, Action, KeyPurpose, PlanOptions, Step, Tool};

    #[test]
    fn key_struct_size_follows_the_peer_version() {
        for (v, len) in [("6.06", 56), ("5.93", 56), ("6.27", 56), ("6.28", 56), ("6.29", 64), ("7.0", 64)] {
            assert_eq!(key_len_for(&PeerVersion::from_text(v)), len, "{v}");
        }
    }

    /// The control-QP SENDs of a `-R` ib_write_bw client, as the capture shows them
    /// (sequence.md: 1 + 2 + 1 + 1 before the data connection, 1 after it, 3 before the run,
    /// 1 + 5 + 1 after it: 16), and no `done` (rdma_cm mode).
    #[test]
    fn dash_r_write_bw_client_matches_the_capture() {
        let o = PlanOptions { rdma_cm: true, cm_qps: true, ..Default::default() };
        let p = plan(Tool::WriteBw, Role::Client, &o);
        let shape = wire_shape(&p, 5);
        assert_eq!(
            shape,
            [
                "ver", "u32", "u32", "mtu", "key", "key", "key", "key", "key", "key", "u64", "u64", "u64", "u64",
                "u64", "key"
            ]
        );
        // One token per SEND: 16, as the capture's POST_SENDs on the control QP.
        assert_eq!(shape.len(), 16);
        let i = p.iter().position(|s| *s == Step::Do(Action::ConnectCm)).unwrap();
        assert_eq!(p[i - 1], Step::Key { qp: 0, purpose: KeyPurpose::Sync });
        assert_eq!(p[i + 1], Step::Key { qp: 0, purpose: KeyPurpose::Sync });
        assert_eq!(p[i - 2], Step::Mtu);
        assert!(!p.contains(&Step::Done));
        // -z alone: no data connection steps, still no `done`.
        let z = plan(Tool::WriteBw, Role::Server, &PlanOptions { rdma_cm: true, ..Default::default() });
        assert!(!z.contains(&Step::Do(Action::ConnectCm)) && !z.contains(&Step::Done));
    }

    #[test]
    fn every_tool_gets_the_data_connection_once_per_role() {
        for t in Tool::ALL {
            for r in [Role::Client, Role::Server] {
                let p = plan(t, r, &PlanOptions { rdma_cm: true, cm_qps: true, num_qps: 2, ..Default::default() });
                assert_eq!(p.iter().filter(|s| **s == Step::Do(Action::ConnectCm)).count(), 1, "{t:?} {r:?}");
            }
        }
    }

    #[test]
    fn host_resolution() {
        assert_eq!(resolve_host("10.99.0.1", 18515, false).unwrap(), "10.99.0.1:18515".parse().unwrap());
        let e = resolve_host("no-such-host.invalid", 1, false).unwrap_err();
        assert!(e.contains("cannot resolve host no-such-host.invalid") && !e.contains('\n'), "{e}");
    }
}
