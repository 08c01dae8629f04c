//! The provider boundary: what a userspace provider (rxe, mlx5, bnxt_re, efa) supplies to the verbs layer.
//!
//! The verbs layer (`uverbs`) owns every kernel command and every object's lifetime; a provider
//! owns the driver ("udata") bytes appended to those commands and the data path over the queues
//! it shares with the hardware or the kernel. Creation is two-phase because the providers differ
//! in *when* their memory exists:
//!
//! - mlx5 allocates the CQ/QP buffers and doorbell records *before* the command and passes their
//!   addresses in the driver request (`prepare_*`), then learns the CQN/bfreg from the response;
//! - rxe sends no driver request and *maps* the kernel's rings *after* the command from the
//!   `mminfo` the response carries (`finish_*`).
//!
//! So each object goes `prepare_*` → kernel create (by `uverbs`) → `finish_*`. If the kernel
//! refuses, the `Prep` value is dropped and frees whatever `prepare_*` allocated. On destroy,
//! `uverbs` issues the kernel destroy first and drops the provider object afterwards, so rings
//! are unmapped and buffers freed only once the kernel no longer uses them.
//!
//! Features beyond plain verbs (DC, DEVX, AES-XTS crypto, a provider's XRC SRQs) are not here:
//! they are the extension traits of [`crate::dv`], implemented only by the providers that have
//! them.
//!
//! The data path takes the provider context by shared reference and the queue by exclusive
//! reference: one thread drives a QP, and no call allocates or dispatches dynamically. The engine
//! is generic over `P: Provider` and chooses the provider once, at the top.

use std::os::fd::OwnedFd;
use std::sync::Arc;

use crate::error::{Error, Result};
use crate::wr::{RecvWr, SendWr, WorkCompletion};

/// The opened `/dev/infiniband/uverbsN`, shared by the context and every object that must keep
/// it alive (rings are mmap'd from it; rxe rings its doorbell through it).
pub type SharedFd = Arc<OwnedFd>;

/// Driver data for one command: bytes appended to the core request, and how many bytes of
/// driver response to make room for after the core response.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Udata {
    pub req: Vec<u8>,
    pub resp_len: usize,
}

impl Udata {
    pub fn none() -> Self {
        Udata::default()
    }
}

/// QP transport types. RC/UC/UD carry their `enum ib_uverbs_qp_type` values; the mlx5
/// Dynamically Connected pair (DCI initiator, DCT target) is created as
/// `IB_UVERBS_QPT_DRIVER` with the role in the driver data, so their discriminants are ours
/// (use [`QpType::uverbs_type`] for the kernel value).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[repr(u8)]
pub enum QpType {
    Rc = 2,
    Uc = 3,
    Ud = 4,
    /// DC initiator: a send queue only; each send names its target DCT (mlx5 only).
    Dci = 0xf0,
    /// DC target: no queues of its own; receives from an SRQ, completes on the receive CQ
    /// (mlx5 only).
    Dct = 0xf1,
    /// XRC initiator (`IB_UVERBS_QPT_XRC_INI`): a send queue only; each send names the target
    /// SRQ ([`crate::wr::SendWr::remote_srqn`]).
    XrcIni = 9,
    /// XRC target (`IB_UVERBS_QPT_XRC_TGT`): lives in an XRC domain, has no queues of its own;
    /// what it receives lands in the XRC SRQ the initiator names.
    XrcTgt = 10,
    /// EFA's Scalable Reliable Datagram: addressed like UD (an AH, the remote QPN and QKEY on
    /// every send) but reliable; created as `IB_UVERBS_QPT_DRIVER` with the type in the driver
    /// data (EFA only).
    Srd = 0xf2,
}

/// The one-sided operations an SRD QP may carry, as the device reports them.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct SrdCaps {
    pub rdma_read: bool,
    pub rdma_write: bool,
    /// The largest RDMA read or write request, in bytes.
    pub max_rdma_size: u32,
}

/// `IB_UVERBS_QPT_DRIVER`: the QP type a driver-specific QP (mlx5 DCI/DCT) is created with.
pub const QPT_DRIVER: u8 = 0xff;

impl QpType {
    pub fn name(self) -> &'static str {
        match self {
            QpType::Rc => "RC",
            QpType::Uc => "UC",
            QpType::Ud => "UD",
            QpType::Dci => "DCI",
            QpType::Dct => "DCT",
            QpType::XrcIni => "XRC_INI",
            QpType::XrcTgt => "XRC_TGT",
            QpType::Srd => "SRD",
        }
    }
    /// Either XRC type.
    pub fn is_xrc(self) -> bool {
        matches!(self, QpType::XrcIni | QpType::XrcTgt)
    }
    /// The `qp_type` value of CREATE_QP.
    pub fn uverbs_type(self) -> u8 {
        match self {
            QpType::Dci | QpType::Dct | QpType::Srd => QPT_DRIVER,
            t => t as u8,
        }
    }
    /// A datagram type: every send names its destination (UD, SRD).
    pub fn is_datagram(self) -> bool {
        matches!(self, QpType::Ud | QpType::Srd)
    }
    /// One of the two Dynamically Connected roles.
    pub fn is_dc(self) -> bool {
        matches!(self, QpType::Dci | QpType::Dct)
    }
}

/// QP capacities, asked for at create time and reported back (possibly larger) by the kernel:
/// the kernel's own `struct ib_uverbs_qp_cap`, so that requests and answers need no copying.
pub type QpCaps = crate::sys::QpCap;

/// What the provider needs to know to size a QP.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct QpInitAttr {
    pub qp_type: QpType,
    pub caps: QpCaps,
    /// Every send generates a completion (`sq_sig_all`).
    pub sq_sig_all: bool,
    /// Receives come from an SRQ: the QP has no receive queue of its own.
    pub uses_srq: bool,
}

/// The kernel's answer to CREATE_CQ (core part).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CqCreated {
    pub handle: u32,
    /// Capacity the kernel granted.
    pub cqe: u32,
}

/// The kernel's answer to CREATE_QP (core part).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct QpCreated {
    pub handle: u32,
    pub qpn: u32,
    pub caps: QpCaps,
}

/// The kernel's answer to CREATE_SRQ (core part).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SrqCreated {
    pub handle: u32,
    pub max_wr: u32,
    pub max_sge: u32,
    pub srqn: u32,
}

/// Address-handle attributes as the provider needs them (RoCE: the GRH fields).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct AhAttr {
    pub dgid: [u8; 16],
    pub flow_label: u32,
    pub sgid_index: u8,
    pub hop_limit: u8,
    pub traffic_class: u8,
    pub is_global: bool,
    pub dlid: u16,
    pub sl: u8,
    pub port_num: u8,
    /// `enum ibv_rate` (0 = the port's rate; 3 = 10 Gb/s, ...): a static rate limit on the path.
    pub static_rate: u8,
}

/// The kernel's answer to CREATE_AH (core part).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct AhCreated {
    pub handle: u32,
}

/// QP states (values of `enum ib_qp_state`); a new QP is in `Reset`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
#[repr(u8)]
pub enum QpState {
    #[default]
    Reset = 0,
    Init = 1,
    Rtr = 2,
    Rts = 3,
    Sqd = 4,
    Sqe = 5,
    Err = 6,
}

impl QpState {
    /// The state a kernel answer names (QUERY_QP, rdma_cm INIT_QP_ATTR); a value outside
    /// `enum ib_qp_state` reads as `Reset`.
    pub fn from_raw(v: u32) -> QpState {
        match v {
            1 => QpState::Init,
            2 => QpState::Rtr,
            3 => QpState::Rts,
            4 => QpState::Sqd,
            5 => QpState::Sqe,
            6 => QpState::Err,
            _ => QpState::Reset,
        }
    }
}

/// The attributes of a successful MODIFY_QP a provider's data path may need; `None` where the
/// modify's mask did not name the attribute.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct QpModified {
    pub sq_psn: Option<u32>,
    /// `enum ibv_mtu` (1 = 256 .. 5 = 4096).
    pub path_mtu: Option<u8>,
}

/// A post that stopped part-way: requests before `index` were posted, the one at `index` and
/// after were not (the meaning of `bad_wr` in verbs).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PostError {
    pub index: usize,
    pub error: Error,
}

impl std::fmt::Display for PostError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "work request #{}: {}", self.index, self.error)
    }
}

impl std::error::Error for PostError {}

/// What the verbs layer knows about the device when it opens a provider context.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DeviceDesc {
    /// IB device name (`rxe0`, `mlx5_0`).
    pub ibdev: String,
    /// Character device name (`uverbs0`).
    pub uverbs: String,
    /// `enum rdma_driver_id` value (rxe 14, mlx5 1).
    pub driver_id: u32,
    /// The per-device driver ABI version (`/sys/class/infiniband_verbs/uverbsN/abi_version`).
    pub driver_abi: u32,
}

/// A userspace provider. See the module documentation for the creation protocol.
pub trait Provider: Sized + Send + Sync + 'static {
    /// Short name used in messages and `devinfo` (`"rxe"`, `"mlx5"`).
    const NAME: &'static str;
    /// The `enum rdma_driver_id` this provider serves.
    const DRIVER_ID: u32;
    /// Driver ABI versions (`uverbsN/abi_version`) this provider speaks.
    const ABI_RANGE: (u32, u32);

    type CqPrep;
    type Cq: Send;
    type QpPrep;
    type Qp: Send;
    type SrqPrep;
    type Srq: Send;
    type AhPrep;
    type Ah: Send;
    /// What the program chose for this provider, handed in when a context is opened (rxe: the
    /// doorbell; mlx5: BlueFlame). `Default`: what libibverbs' provider does.
    type Config: Default;

    // ---- context --------------------------------------------------------------------------
    /// Driver data for GET_CONTEXT.
    fn context_udata(dev: &DeviceDesc, config: &Self::Config) -> Udata;
    /// Build the provider context from GET_CONTEXT's driver response (map UARs etc.).
    fn new_context(fd: SharedFd, dev: &DeviceDesc, drv_resp: &[u8], config: &Self::Config) -> Result<Self>;

    /// Driver data for ALLOC_PD (mlx5: room for the PD number in the response).
    fn pd_udata(&self) -> Udata {
        Udata::none()
    }
    /// The device's number for a new PD from ALLOC_PD's driver response (mlx5: `pdn`, which
    /// DEVX objects name); `None` where the provider does not learn one.
    fn pd_number(&self, drv_resp: &[u8]) -> Result<Option<u32>> {
        let _ = drv_resp;
        Ok(None)
    }

    // ---- objects --------------------------------------------------------------------------
    /// Prepare a CQ of at least `entries` completions. Returns the `cqe` value to ask the
    /// kernel for (providers round differently), the driver data, and state for `finish_cq`.
    fn prepare_cq(&self, entries: u32) -> Result<(Self::CqPrep, u32, Udata)>;
    /// As [`Provider::prepare_cq`] for a CQ that will (`with_channel`) or will not report to a
    /// completion channel: for providers whose driver data says so (EFA asks the kernel for
    /// the CQ's notifications and doorbell this way). The default ignores it.
    fn prepare_cq_for(&self, entries: u32, with_channel: bool) -> Result<(Self::CqPrep, u32, Udata)> {
        let _ = with_channel;
        self.prepare_cq(entries)
    }
    fn finish_cq(&self, prep: Self::CqPrep, core: &CqCreated, drv_resp: &[u8]) -> Result<Self::Cq>;

    fn prepare_qp(&self, attr: &QpInitAttr) -> Result<(Self::QpPrep, Udata)>;
    fn finish_qp(&self, prep: Self::QpPrep, attr: &QpInitAttr, core: &QpCreated, drv_resp: &[u8])
        -> Result<Self::Qp>;

    fn prepare_srq(&self, max_wr: u32, max_sge: u32) -> Result<(Self::SrqPrep, Udata)>;
    fn finish_srq(&self, prep: Self::SrqPrep, core: &SrqCreated, drv_resp: &[u8]) -> Result<Self::Srq>;

    fn prepare_ah(&self, attr: &AhAttr) -> Result<(Self::AhPrep, Udata)>;
    fn finish_ah(&self, prep: Self::AhPrep, attr: &AhAttr, core: &AhCreated, drv_resp: &[u8])
        -> Result<Self::Ah>;
    /// The number a UD send names this AH by (`UdDest::ah`).
    fn ah_number(&self, ah: &Self::Ah) -> u32;

    /// Driver data for a MODIFY_QP to `state` (`None`: not a state change). `Some` makes the
    /// verbs layer send EX_MODIFY_QP with it and hand the driver response to
    /// [`Provider::modify_qp_done`] (mlx5: a DCT learns its number at RTR).
    fn modify_qp_udata(&self, qp: &Self::Qp, state: Option<QpState>) -> Option<Udata> {
        let _ = (qp, state);
        None
    }
    /// The driver response of a modify that [`Provider::modify_qp_udata`] asked for; returns
    /// the QP's new number if the modify gave it one.
    fn modify_qp_done(&self, qp: &mut Self::Qp, state: QpState, drv_resp: &[u8]) -> Result<Option<u32>> {
        let _ = (qp, state, drv_resp);
        Ok(None)
    }

    /// The QP was created to receive from `srq` (called right after `finish_qp`): mlx5 records
    /// it, so that its receive completions find the SRQ's buffers; rxe needs nothing.
    fn qp_attached_srq(&self, _qp: &mut Self::Qp, _srq: &Self::Srq) {}

    /// Called after a successful MODIFY_QP (mlx5 resets its indices on RESET; rxe needs nothing).
    fn qp_state_changed(&self, qp: &mut Self::Qp, state: QpState);

    /// Called after every successful MODIFY_QP, before [`Provider::qp_state_changed`], with the
    /// attributes the data path may need: bnxt_re writes each RC request's PSNs into the send
    /// queue, so it keeps the send PSN and the path MTU. Default: nothing.
    fn qp_modified(&self, qp: &mut Self::Qp, m: &QpModified) {
        let _ = (qp, m);
    }

    /// The lkey of the device's null memory region (`ibv_alloc_null_mr`): a key that reads
    /// as a fill pattern and discards writes, without any memory behind it. `None` where the
    /// device has none (libibverbs then fails with EOPNOTSUPP): rxe, and mlx5 when the kernel
    /// reports no dump-fill mkey.
    fn null_mr_lkey(&self) -> Option<u32> {
        None
    }

    /// What the device's SRD QPs can do beyond sends (EFA's `efadv_query_device` caps); `None`
    /// where the provider has no SRD.
    fn srd_caps(&self) -> Option<SrdCaps> {
        None
    }

    /// Whether this device's CQs can report to a completion channel (`ibv_req_notify_cq`
    /// works). Only EFA says no, where its caps lack CQ notifications.
    fn cq_events(&self) -> bool {
        true
    }

    // ---- data path ------------------------------------------------------------------------
    /// Post send work requests.
    ///
    /// # Safety
    /// Every SGE must describe memory that is valid for reads for its whole length and lies in
    /// a live MR registered under its `lkey`: the provider reads INLINE payloads from those
    /// addresses in user space (the kernel or the HCA checks the lkey only for non-inline data),
    /// and for RDMA READ / atomics the device writes the result there. The memory must stay
    /// valid (and, for READ/atomics, not otherwise accessed) until the request completes.
    unsafe fn post_send(&self, qp: &mut Self::Qp, wrs: &[SendWr<'_>]) -> Result<(), PostError>;
    /// Post receive work requests.
    ///
    /// # Safety
    /// Every SGE must describe memory valid for writes for its whole length, in a live MR
    /// registered under its `lkey`, until the receive completes: the device writes the message
    /// there, and a provider may copy small payloads delivered inside a CQE there from
    /// `poll_cq` (mlx5 inline scatter).
    unsafe fn post_recv(&self, qp: &mut Self::Qp, wrs: &[RecvWr<'_>]) -> Result<(), PostError>;
    /// Post receives to a shared receive queue.
    ///
    /// # Safety
    /// As for [`Provider::post_recv`].
    unsafe fn post_srq_recv(&self, srq: &mut Self::Srq, wrs: &[RecvWr<'_>]) -> Result<(), PostError>;
    /// Fill `out` with up to `out.len()` completions; returns how many.
    fn poll_cq(&self, cq: &mut Self::Cq, out: &mut [WorkCompletion]) -> Result<usize>;
    /// Request an event on the CQ's completion channel for the next (or next solicited)
    /// completion. The caller polls again after arming to close the arm/complete race.
    fn arm_cq(&self, cq: &mut Self::Cq, solicited_only: bool) -> Result<()>;
    /// Called once per completion event read from the channel for this CQ.
    fn cq_event(&self, cq: &mut Self::Cq);
}
