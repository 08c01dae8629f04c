//! The rxe objects and `impl Provider for Rxe`: driver data for each create command, mapping
//! the kernel's rings from the responses, and the data path over those rings.
//!
//! The objects are generic over the ring memory (`M`, the kernel's [`Mapping`] by default) so
//! the whole data path — encoding, ring indices, one doorbell per post call, CQ polling — runs
//! in tests over heap rings with a mock kernel (`providers/tests/rxe_*.rs`).

use uverbs::knob::{self, Knob};
use std::os::fd::AsFd;
use std::sync::Mutex;

use uverbs::cmd::{post_send_doorbell, req_notify_cq};
use uverbs::error::{Error, Result};
use uverbs::provider::{
    AhAttr, AhCreated, CqCreated, DeviceDesc, PostError, Provider, QpCaps, QpCreated, QpInitAttr,
    QpState, SharedFd, SrqCreated, Udata,
};
use uverbs::wr::{RecvWr, SendWr, WorkCompletion};

use super::cqe::decode_wc;
use super::doorbell::{DoorbellMode, UringDoorbell};
use super::layout::*;
use super::mem::{Mapping, MmInfo, UserMemory};
use super::queue::{Consumer, Producer, RingMem};
use super::wqe::{encode_recv, encode_send, recv_max_sge, InlineSource, SqLimits};

/// `enum rdma_driver_id`: RDMA_DRIVER_RXE.
pub use uverbs::sys::RDMA_DRIVER_RXE;

/// What to do when the send or receive queue is full (resolved when the queue is made).
fn full_hint(depth: Knob) -> String {
    format!("raise the {} / poll completions", knob::named(depth))
}

/// The rxe provider context: the uverbs fd (rings are mapped from it; the doorbell is a write
/// on it). rxe's GET_CONTEXT carries no driver data.
pub struct Rxe {
    /// `RPERFTEST_RXE_DOORBELL=uring|uring-sqpoll`: the doorbell goes through io_uring (declared
    /// before `fd` so that it is dropped, and waits for its writes, while the fd is still open).
    uring: Option<Mutex<UringDoorbell>>,
    fd: SharedFd,
}

impl Rxe {
    pub fn fd(&self) -> &SharedFd {
        &self.fd
    }
}

/// A completion queue: the CQ ring, consumed by us.
pub struct RxeCq<M: RingMem = Mapping> {
    handle: u32,
    ring: Consumer<M>,
}

impl<M: RingMem> RxeCq<M> {
    pub fn from_ring(handle: u32, mem: M) -> Result<Self> {
        Ok(RxeCq {
            handle,
            ring: Consumer::new(mem, "completion queue")?,
        })
    }

    pub fn handle(&self) -> u32 {
        self.handle
    }

    /// Completions the ring can hold (`index_mask`). The kernel drops completions beyond it
    /// (docs/rxe-kernel.md, "E11 CQ overflow drops completions"), so size CQs for every
    /// signaled send and posted receive feeding them.
    pub fn capacity(&self) -> u32 {
        self.ring.capacity()
    }

    /// Fill `out` with up to `out.len()` completions; one release store for the whole batch.
    #[inline(always)]
    pub fn poll(&mut self, out: &mut [WorkCompletion]) -> Result<usize> {
        let mut k = 0;
        let n = self.ring.poll_with(out.len(), |b| {
            // poll_with hands out at most out.len() entries.
            if let Some(slot) = out.get_mut(k) {
                *slot = decode_wc(b);
            }
            k += 1;
        })?;
        Ok(n)
    }
}

/// A queue pair: the SQ ring, and the RQ ring unless receives come from an SRQ.
pub struct RxeQp<M: RingMem = Mapping> {
    handle: u32,
    qpn: u32,
    state: QpState,
    sq: Producer<M>,
    sq_limits: SqLimits,
    rq: Option<Producer<M>>,
    rq_max_sge: u32,
}

impl<M: RingMem> RxeQp<M> {
    /// Build over the two rings. `caps` are what CREATE_QP reported (SGE and inline limits; the
    /// work-request capacities come from the rings: docs/rxe-kernel.md, "E1 QP capacity comes
    /// from the ring").
    pub fn from_rings(
        handle: u32,
        qpn: u32,
        attr: &QpInitAttr,
        caps: &QpCaps,
        sq: M,
        rq: Option<M>,
    ) -> Result<Self> {
        let sq = Producer::new(sq, SEND_WQE_SIZE, "send queue", full_hint(Knob::SendDepth))?;
        let sq_limits = SqLimits::new(
            attr.qp_type,
            caps.max_send_sge,
            caps.max_inline_data,
            sq.slot_size(),
        );
        let rq = match rq {
            Some(m) => Some(Producer::new(
                m,
                RECV_WQE_SIZE,
                "receive queue",
                full_hint(Knob::RecvDepth),
            )?),
            None => None,
        };
        let rq_max_sge = rq
            .as_ref()
            .map_or(0, |r| recv_max_sge(caps.max_recv_sge, r.slot_size()));
        Ok(RxeQp {
            handle,
            qpn,
            state: QpState::Reset,
            sq,
            sq_limits,
            rq,
            rq_max_sge,
        })
    }

    pub fn handle(&self) -> u32 {
        self.handle
    }
    pub fn qpn(&self) -> u32 {
        self.qpn
    }
    pub fn state(&self) -> QpState {
        self.state
    }
    /// Record a successful MODIFY_QP.
    pub fn set_state(&mut self, state: QpState) {
        self.state = state;
    }
    /// Sends that can be outstanding at once (from the SQ ring's `index_mask`).
    pub fn send_capacity(&self) -> u32 {
        self.sq.capacity()
    }
    /// Receives that can be posted at once (0 with an SRQ).
    pub fn recv_capacity(&self) -> u32 {
        self.rq.as_ref().map_or(0, |r| r.capacity())
    }
    pub fn sq_limits(&self) -> SqLimits {
        self.sq_limits
    }
    pub fn recv_max_sge(&self) -> u32 {
        self.rq_max_sge
    }

    /// Post `wrs` to the SQ ring, then ring the doorbell once (`doorbell(qp_handle)`) if any
    /// were written.
    ///
    /// Error index: requests before it are in the ring. A full queue or an invalid request
    /// stops the batch there; the ones before it are still published and rung. If the
    /// doorbell itself fails, the index is the number of requests written (`wrs.len()` when all
    /// were): they sit in the ring and run at the next successful doorbell.
    #[inline(always)]
    pub fn post_send_with(
        &mut self,
        wrs: &[SendWr<'_>],
        inline: &impl InlineSource,
        doorbell: impl FnOnce(u32) -> Result<()>,
    ) -> Result<(), PostError> {
        if wrs.is_empty() {
            return Ok(());
        }
        if !matches!(self.state, QpState::Rts | QpState::Sqd | QpState::Err) {
            // Refuse before touching the ring: a WQE published now would sit there and run at
            // some later doorbell, long after the caller was told the post failed.
            return Err(not_ready_for_sends(self.qpn, self.state));
        }
        let lim = &self.sq_limits;
        if let [wr] = wrs {
            // One request (the data path's common case): no batch bookkeeping.
            self.sq
                .push_one(wr, |slot, wr| encode_send(slot, wr, lim, inline).map_err(encode_error))
                .map_err(|error| PostError { index: 0, error })?;
            return doorbell(self.handle).map_err(|error| PostError { index: 1, error });
        }
        match self.sq.push_batch(wrs, |slot, wr| encode_send(slot, wr, lim, inline).map_err(encode_error)) {
            // The common case first: everything written, one doorbell.
            Ok(()) => doorbell(self.handle).map_err(|error| PostError { index: wrs.len(), error }),
            // Request `index` was refused: ring for the ones before it, then report it.
            Err((index, error)) => {
                if index > 0 {
                    doorbell(self.handle).map_err(|error| PostError { index, error })?;
                }
                Err(PostError { index, error })
            }
        }
    }

    /// Post receives to the RQ ring (no syscall: the kernel reads the ring when packets arrive).
    #[inline]
    pub fn post_recv(&mut self, wrs: &[RecvWr<'_>]) -> Result<(), PostError> {
        let Some(rq) = self.rq.as_mut() else {
            let error = Error::msg("post receive", "this QP takes its receives from an SRQ")
                .with_hint("post receives to the SRQ");
            return Err(PostError { index: 0, error });
        };
        if self.state == QpState::Reset && !wrs.is_empty() {
            // librxe's policy; the kernel does not check user rings (docs/rxe-kernel.md,
            // "E7 receives posted in RESET").
            let error = Error::msg("post receive", format!("QP {:#x} is in RESET", self.qpn))
                .with_hint("move the QP to INIT before posting receives");
            return Err(PostError { index: 0, error });
        }
        post_recv_ring(rq, self.rq_max_sge, wrs)
    }
}

/// The error for a send posted to a QP that is not in RTS, SQD or ERR (out of line: the post
/// path only branches).
#[cold]
#[inline(never)]
fn not_ready_for_sends(qpn: u32, state: QpState) -> PostError {
    let error = Error::msg("post send", format!("QP {qpn:#x} is in state {state:?}"))
        .with_hint("move the QP to RTS before posting sends");
    PostError { index: 0, error }
}

/// A request the WQE encoder refused, as a post error (out of line).
#[cold]
#[inline(never)]
fn encode_error(e: impl std::fmt::Display) -> Error {
    Error::msg("post send", e.to_string())
}

#[inline]
fn post_recv_ring<M: RingMem>(
    rq: &mut Producer<M>,
    max_sge: u32,
    wrs: &[RecvWr<'_>],
) -> Result<(), PostError> {
    rq.push_batch(wrs, |slot, wr| {
        encode_recv(slot, wr, max_sge).map_err(|e| Error::msg("post receive", e.to_string()))
    })
    .map_err(|(index, error)| PostError { index, error })
}

/// A shared receive queue.
pub struct RxeSrq<M: RingMem = Mapping> {
    handle: u32,
    srq_num: u32,
    rq: Producer<M>,
    max_sge: u32,
}

impl<M: RingMem> RxeSrq<M> {
    pub fn from_ring(handle: u32, srq_num: u32, max_sge: u32, mem: M) -> Result<Self> {
        let rq = Producer::new(mem, RECV_WQE_SIZE, "shared receive queue", full_hint(Knob::RecvDepth))?;
        let max_sge = recv_max_sge(max_sge, rq.slot_size());
        Ok(RxeSrq {
            handle,
            srq_num,
            rq,
            max_sge,
        })
    }
    pub fn handle(&self) -> u32 {
        self.handle
    }
    pub fn srq_num(&self) -> u32 {
        self.srq_num
    }
    pub fn capacity(&self) -> u32 {
        self.rq.capacity()
    }
    #[inline]
    pub fn post_recv(&mut self, wrs: &[RecvWr<'_>]) -> Result<(), PostError> {
        post_recv_ring(&mut self.rq, self.max_sge, wrs)
    }
}

/// An address handle: the kernel's `ah_num`, which UD sends name (`UdDest::ah`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RxeAh {
    ah_num: u32,
}

impl RxeAh {
    pub fn ah_num(&self) -> u32 {
        self.ah_num
    }
}

fn short_resp(what: &str, got: usize, want: usize) -> Error {
    Error::msg(
        format!("parse the rxe {what} response"),
        format!("driver response of {got} bytes, expected {want}"),
    )
}

fn udata_resp(len: usize) -> Udata {
    Udata {
        req: Vec::new(),
        resp_len: len,
    }
}

impl Provider for Rxe {
    const NAME: &'static str = "rxe";
    const DRIVER_ID: u32 = RDMA_DRIVER_RXE;
    /// ABI 1 and 2 have the same 64-bit layout (ABI 2 declared it 32/64-bit clean).
    const ABI_RANGE: (u32, u32) = (1, 2);

    type CqPrep = ();
    type Cq = RxeCq;
    type QpPrep = ();
    type Qp = RxeQp;
    type SrqPrep = ();
    type Srq = RxeSrq;
    type AhPrep = ();
    type Ah = RxeAh;
    type Config = super::doorbell::RxeConfig;

    fn context_udata(_dev: &DeviceDesc, _config: &Self::Config) -> Udata {
        Udata::none()
    }

    fn new_context(fd: SharedFd, _dev: &DeviceDesc, _drv_resp: &[u8], config: &Self::Config) -> Result<Self> {
        let uring = match super::doorbell::chosen_mode(config)? {
            DoorbellMode::Write => None,
            mode => match UringDoorbell::new(fd.as_fd(), mode) {
                Ok(u) => Some(Mutex::new(u)),
                Err(e) => {
                    // A clean fallback: the experiment is optional, the write() doorbell works.
                    uverbs::settings::warn(format!("io_uring doorbell unavailable ({e}); using write()"));
                    None
                }
            },
        };
        Ok(Rxe { uring, fd })
    }

    fn prepare_cq(&self, entries: u32) -> Result<((), u32, Udata)> {
        Ok(((), entries.max(1), udata_resp(CREATE_CQ_RESP_LEN)))
    }

    fn finish_cq(&self, _prep: (), core: &CqCreated, drv_resp: &[u8]) -> Result<RxeCq> {
        if drv_resp.len() < CREATE_CQ_RESP_LEN {
            return Err(short_resp("CREATE_CQ", drv_resp.len(), CREATE_CQ_RESP_LEN));
        }
        let mi = MmInfo::parse(drv_resp, 0, "CREATE_CQ")?;
        // SAFETY: a uverbs fd and an mminfo from the create response just made: the kernel
        // hands each cookie out once, so this is the only mapping of the ring in the process.
        let map = unsafe { Mapping::map(self.fd.as_fd(), mi, "completion queue")? };
        RxeCq::from_ring(core.handle, map)
    }

    fn prepare_qp(&self, attr: &QpInitAttr) -> Result<((), Udata)> {
        if attr.qp_type.is_dc() {
            let mut e = Error::msg(
                "create QP",
                format!("{} QPs (Dynamically Connected) are an mlx5 feature; rxe has none", attr.qp_type.name()),
            );
            e.errno = Some(libc::EOPNOTSUPP);
            return Err(e);
        }
        if attr.qp_type == uverbs::provider::QpType::Srd {
            let mut e = Error::msg("rxe create QP", "SRD QPs are an EFA feature; rxe has none");
            e.errno = Some(libc::EOPNOTSUPP);
            return Err(e);
        }
        if attr.qp_type.is_xrc() {
            // The kernel's rxe implements no XRC (no IB_DEVICE_XRC, no XRC domains).
            let mut e = Error::msg(
                "rxe create QP",
                format!("QP type {} is XRC, which the kernel's rxe does not implement", attr.qp_type.name()),
            );
            e.errno = Some(libc::EOPNOTSUPP);
            return Err(e);
        }
        // rxe refuses any driver input on CREATE_QP; it answers with two mminfos.
        Ok(((), udata_resp(CREATE_QP_RESP_LEN)))
    }

    fn finish_qp(
        &self,
        _prep: (),
        attr: &QpInitAttr,
        core: &QpCreated,
        drv_resp: &[u8],
    ) -> Result<RxeQp> {
        if drv_resp.len() < CREATE_QP_RESP_LEN {
            return Err(short_resp("CREATE_QP", drv_resp.len(), CREATE_QP_RESP_LEN));
        }
        let sq_mi = MmInfo::parse(drv_resp, CREATE_QP_RESP_SQ_MI, "CREATE_QP")?;
        // SAFETY: a uverbs fd and an mminfo from the create response just made: the kernel
        // hands each cookie out once, so this is the only mapping of the ring in the process.
        let sq = unsafe { Mapping::map(self.fd.as_fd(), sq_mi, "send queue")? };
        let rq = if attr.uses_srq {
            None
        } else {
            let rq_mi = MmInfo::parse(drv_resp, CREATE_QP_RESP_RQ_MI, "CREATE_QP")?;
            // SAFETY: as for the SQ: a single-use cookie from this CREATE_QP.
            Some(unsafe { Mapping::map(self.fd.as_fd(), rq_mi, "receive queue")? })
        };
        RxeQp::from_rings(core.handle, core.qpn, attr, &core.caps, sq, rq)
    }

    fn prepare_srq(&self, _max_wr: u32, _max_sge: u32) -> Result<((), Udata)> {
        Ok(((), udata_resp(CREATE_SRQ_RESP_LEN)))
    }

    fn finish_srq(&self, _prep: (), core: &SrqCreated, drv_resp: &[u8]) -> Result<RxeSrq> {
        if drv_resp.len() < CREATE_SRQ_RESP_LEN {
            return Err(short_resp(
                "CREATE_SRQ",
                drv_resp.len(),
                CREATE_SRQ_RESP_LEN,
            ));
        }
        let mi = MmInfo::parse(drv_resp, 0, "CREATE_SRQ")?;
        let n = &drv_resp[CREATE_SRQ_RESP_SRQ_NUM..CREATE_SRQ_RESP_SRQ_NUM + 4];
        let srq_num = u32::from_ne_bytes([n[0], n[1], n[2], n[3]]);
        // SAFETY: a uverbs fd and an mminfo from the create response just made: the kernel
        // hands each cookie out once, so this is the only mapping of the ring in the process.
        let map = unsafe { Mapping::map(self.fd.as_fd(), mi, "shared receive queue")? };
        RxeSrq::from_ring(core.handle, srq_num, core.max_sge, map)
    }

    fn prepare_ah(&self, _attr: &AhAttr) -> Result<((), Udata)> {
        Ok(((), udata_resp(CREATE_AH_RESP_LEN)))
    }

    fn finish_ah(
        &self,
        _prep: (),
        _attr: &AhAttr,
        _core: &AhCreated,
        drv_resp: &[u8],
    ) -> Result<RxeAh> {
        parse_ah_resp(drv_resp)
    }

    fn ah_number(&self, ah: &RxeAh) -> u32 {
        ah.ah_num
    }

    fn qp_state_changed(&self, qp: &mut RxeQp, state: QpState) {
        qp.set_state(state);
    }

    #[inline(always)]
    unsafe fn post_send(&self, qp: &mut RxeQp, wrs: &[SendWr<'_>]) -> Result<(), PostError> {
        let fd = self.fd.as_fd();
        // SAFETY: the caller guarantees every SGE is readable for its length (post_send's
        // contract), which is what reading INLINE payloads from user memory needs.
        let user = unsafe { UserMemory::new() };
        match &self.uring {
            None => qp.post_send_with(wrs, &user, |h| post_send_doorbell(fd, h)),
            Some(u) => qp.post_send_with(wrs, &user, |h| {
                u.lock()
                    .map_err(|_| Error::msg("ring the rxe doorbell", "io_uring state poisoned"))?
                    .ring(h)
            }),
        }
    }

    #[inline]
    unsafe fn post_recv(&self, qp: &mut RxeQp, wrs: &[RecvWr<'_>]) -> Result<(), PostError> {
        // rxe only records the SGEs in the ring; the kernel checks them against the MR.
        qp.post_recv(wrs)
    }

    #[inline]
    unsafe fn post_srq_recv(&self, srq: &mut RxeSrq, wrs: &[RecvWr<'_>]) -> Result<(), PostError> {
        srq.post_recv(wrs)
    }

    #[inline(always)]
    fn poll_cq(&self, cq: &mut RxeCq, out: &mut [WorkCompletion]) -> Result<usize> {
        cq.poll(out)
    }

    fn arm_cq(&self, cq: &mut RxeCq, solicited_only: bool) -> Result<()> {
        req_notify_cq(self.fd.as_fd(), cq.handle, solicited_only)
    }

    fn cq_event(&self, _cq: &mut RxeCq) {}
}

/// `rxe_create_ah_resp` → the AH. Kernels before ≈5.16 answer ah_num 0 (or nothing) and expect a
/// full `rxe_av` in every UD WQE instead, which this provider does not build.
pub fn parse_ah_resp(drv_resp: &[u8]) -> Result<RxeAh> {
    let what = "parse the rxe CREATE_AH response";
    let b = drv_resp
        .get(CREATE_AH_RESP_AH_NUM..CREATE_AH_RESP_AH_NUM + 4)
        .ok_or_else(|| short_resp("CREATE_AH", drv_resp.len(), CREATE_AH_RESP_LEN))?;
    let ah_num = u32::from_ne_bytes([b[0], b[1], b[2], b[3]]);
    if ah_num == 0 {
        return Err(Error::msg(what, "the kernel returned no ah_num")
            .with_hint("UD on rxe needs Linux 5.16 or newer (address handles by number)"));
    }
    Ok(RxeAh { ah_num })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ah_resp() {
        assert_eq!(
            parse_ah_resp(&[3, 0, 0, 0, 0, 0, 0, 0]).unwrap().ah_num(),
            u32::from_ne_bytes([3, 0, 0, 0])
        );
        assert!(parse_ah_resp(&[0; 8])
            .unwrap_err()
            .to_string()
            .contains("5.16"));
        assert!(parse_ah_resp(&[1, 0]).is_err());
    }

    #[test]
    fn udata_sizes() {
        let dev = DeviceDesc {
            ibdev: "rxe0".into(),
            uverbs: "uverbs0".into(),
            driver_id: RDMA_DRIVER_RXE,
            driver_abi: 2,
        };
        assert_eq!(Rxe::context_udata(&dev, &Default::default()), Udata::none());
        assert_eq!(
            udata_resp(CREATE_QP_RESP_LEN),
            Udata {
                req: vec![],
                resp_len: 32
            }
        );
    }
}
