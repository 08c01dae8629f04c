//! `-cm1`: the RC connection through rdma_cm, as qperf makes it, with our own QP.
//!
//! Server: an id in the TCP port space bound to 0.0.0.0 port 0, listening, then the u32 port
//! to the client ("RDMA CM TCP IPv4 server port"); the connect request's id is accepted with
//! responder_resources = initiator_depth = 1, retry 7, RNR retry 7 and no private data; after
//! ESTABLISHED the QP's min_rnr_timer is set to 12 (failure ignored, as qperf: iWARP).
//! Client: the server's IPv4 address (qperf's rdma_cm is IPv4 only) with that port, address
//! and route resolved within the REQ timeout, CONNECT with the same four values. Debian's
//! 0.4.11 server sends its port *before* it listens, so a connect can be rejected: we retry
//! (a new id each time) until the timeout. At the end the client disconnects; both wait for
//! DISCONNECTED (bounded).

#![forbid(unsafe_code)]

use std::net::{IpAddr, SocketAddr};
use std::sync::Arc;
use std::time::{Duration, Instant};

use uverbs::cm::{self, CmChannel, CmDevice, CmEventKind, CmId, ConnParam, PortSpace};
use uverbs::objects::{Qp, QpAttr, QpAttrMask};
use uverbs::provider::{Provider, QpState, QpType};

use super::super::ctrl::{Ctrl, CtrlError};
use super::super::wire::{decode_port, encode_port, PORT_LEN};
use super::plan::{MIN_RNR_TIMER, RETRY_CNT, RNR_RETRY};

pub const PORT_ITEM: &str = "RDMA CM TCP IPv4 server port";
const RETRY_DELAY: Duration = Duration::from_millis(100);
const DISCONNECT_WAIT: Duration = Duration::from_secs(2);

fn param() -> ConnParam {
    ConnParam {
        responder_resources: 1,
        initiator_depth: 1,
        retry_count: RETRY_CNT,
        rnr_retry_count: RNR_RETRY,
        ..Default::default()
    }
}

fn s(e: uverbs::Error) -> String {
    format!("rdma_cm: {e}")
}

/// The server's IPv4 address as the control connection sees it.
pub fn server_ipv4(ctrl: &Ctrl) -> Result<IpAddr, String> {
    let ip = ctrl.stream.peer_addr().map_err(|e| format!("getpeername failed: {e}"))?.ip();
    match ip {
        IpAddr::V4(_) => Ok(ip),
        IpAddr::V6(v6) => match v6.to_ipv4_mapped() {
            Some(v4) => Ok(IpAddr::V4(v4)),
            None => Err(format!("-cm1: qperf's rdma_cm path is IPv4 only and the server {v6} was reached over IPv6; give its IPv4 address")),
        },
    }
}

pub struct CmClient {
    pub id: CmId,
    pub dst: SocketAddr,
    pub dev: CmDevice,
}

fn resolved(dst: &SocketAddr, timeout: Duration) -> Result<CmId, String> {
    let chan = CmChannel::open().map_err(s)?;
    let mut id = chan.create_id(PortSpace::Tcp, QpType::Rc).map_err(s)?;
    id.resolve_addr(None, dst, timeout).map_err(s)?;
    id.expect(CmEventKind::AddrResolved, timeout).map_err(s)?;
    id.resolve_route(timeout).map_err(s)?;
    id.expect(CmEventKind::RouteResolved, timeout).map_err(s)?;
    Ok(id)
}

/// Read the server's port and resolve the route to it: the id's device is the one to open.
pub fn client_start(ctrl: &Ctrl) -> Result<CmClient, CtrlError> {
    let port = decode_port(&ctrl.recv(PORT_ITEM, PORT_LEN)?).map_err(|e| CtrlError::local(e.to_string()))?;
    let ip = server_ipv4(ctrl).map_err(CtrlError::Local)?;
    let dst = SocketAddr::new(ip, port);
    let id = resolved(&dst, ctrl.timeout).map_err(CtrlError::Local)?;
    let dev = id.device().map_err(|e| CtrlError::Local(s(e)))?;
    Ok(CmClient { id, dst, dev })
}

/// CONNECT `qp` (RESET) and complete the connection; a rejected or unreachable attempt is
/// retried with a fresh id until `timeout` has passed since the first.
pub fn client_connect<P: Provider>(c: CmClient, qp: &mut Qp<P>, timeout: Duration) -> Result<CmId, String> {
    let start = Instant::now();
    let CmClient { mut id, dst, dev } = c;
    loop {
        id.modify_qp(qp, QpState::Init).map_err(s)?;
        let mut p = param();
        p.qp_num = qp.qpn();
        id.connect(&p).map_err(s)?;
        let ev = id
            .wait_event(timeout)
            .map_err(s)?
            .ok_or_else(|| s(cm::timeout_error("RDMA_CM_EVENT_CONNECT_RESPONSE", timeout, Some(&dst))))?;
        match ev.kind {
            CmEventKind::ConnectResponse => {
                id.finish_active_connect(qp).map_err(s)?;
                return Ok(id);
            }
            CmEventKind::Rejected | CmEventKind::Unreachable if start.elapsed() + RETRY_DELAY < timeout => {
                drop(id);
                std::thread::sleep(RETRY_DELAY);
                id = resolved(&dst, timeout)?;
                let d = id.device().map_err(s)?;
                if d.info.ibdev != dev.info.ibdev {
                    return Err(format!("rdma_cm: the route to {dst} moved from {} to {}", dev.info.ibdev, d.info.ibdev));
                }
            }
            _ => {
                return Err(cm::event_error(&ev, "CONNECT_RESPONSE", Some(&dst))
                    .map(s)
                    .unwrap_or_else(|| format!("unexpected event from RDMA CM: {} (status {}), expecting: CONNECT_RESPONSE", ev.kind.name(), ev.status)));
            }
        }
    }
}

pub struct CmServer {
    /// Kept until the end: dropping it earlier would not change the connection, but qperf
    /// holds its listener for the whole test too.
    pub listener: CmId,
    pub id: CmId,
    pub dev: CmDevice,
}

/// Listen on an ephemeral port, tell the client, and wait for its connect request (within
/// the REQ timeout). Unlike Debian's 0.4.11 we listen before sending the port.
pub fn server_start(ctrl: &Ctrl) -> Result<CmServer, CtrlError> {
    let l = |e: uverbs::Error| CtrlError::Local(s(e));
    let chan: Arc<CmChannel> = CmChannel::open().map_err(l)?;
    let listener = chan.create_id(PortSpace::Tcp, QpType::Rc).map_err(l)?;
    listener.bind(&SocketAddr::from(([0, 0, 0, 0], 0))).map_err(l)?;
    listener.listen(1).map_err(l)?;
    let port = listener
        .query_addr()
        .map_err(l)?
        .src
        .ip()
        .map(|a| a.port())
        .ok_or_else(|| CtrlError::local("rdma_cm: the listener has no IPv4 address"))?;
    ctrl.send(PORT_ITEM, &encode_port(port))?;
    let (id, _ev) = listener.get_request(ctrl.timeout).map_err(l)?;
    let dev = id.device().map_err(l)?;
    Ok(CmServer { listener, id, dev })
}

/// ACCEPT with our QP, wait for ESTABLISHED, then min_rnr_timer.
pub fn server_accept<P: Provider>(id: &CmId, qp: &mut Qp<P>, timeout: Duration) -> Result<(), String> {
    id.accept_qp(qp, &param()).map_err(s)?;
    id.expect(CmEventKind::Established, timeout).map_err(s)?;
    let a = QpAttr { min_rnr_timer: MIN_RNR_TIMER, ..Default::default() };
    let _ = qp.modify(&a, QpAttrMask::MIN_RNR_TIMER);
    Ok(())
}

/// The end: the client disconnects; both wait (bounded) for DISCONNECTED.
pub fn close(id: &CmId, client: bool) {
    if client {
        let _ = id.disconnect();
    }
    let deadline = Instant::now() + DISCONNECT_WAIT;
    while let Some(left) = deadline.checked_duration_since(Instant::now()) {
        match id.wait_event(left) {
            Ok(Some(ev)) if ev.kind == CmEventKind::Disconnected => {
                if !client {
                    // The DREP to the client's DREQ (the kernel would send it at destroy).
                    let _ = id.disconnect();
                }
                return;
            }
            Ok(Some(_)) => continue,
            _ => return,
        }
    }
}
