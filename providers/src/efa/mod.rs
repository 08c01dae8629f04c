//! EFA (AWS Elastic Fabric Adapter) provider: the device formats and the pure data path.
//!
//! EFA has no RC or UC: its transports are UD and SRD (Scalable Reliable Datagram, created as a
//! driver QP: `IB_QPT_DRIVER` with `EFA_QP_DRIVER_TYPE_SRD` in the create udata). The user space
//! data path, from rdma-core 44's `providers/efa` and the kernel's `rdma/efa-abi.h`:
//! - send: a 64-byte TX descriptor (`efa_io_tx_wqe`: a 32-byte meta descriptor, then two buffer
//!   descriptors or 32 bytes of inline data, or the RDMA read's remote and local buffers) copied
//!   to the LLQ (the write-combined device BAR page the kernel maps) at `pc & mask`, then the
//!   producer counter written to the SQ doorbell;
//! - receive: one 16-byte RX descriptor per SGE (`efa_io_rx_desc`) in a host-memory ring, then
//!   the producer counter written to the RQ doorbell;
//! - completion: a CQ is `sub_cqs_per_cq` sub-rings of completion descriptors the device writes
//!   with a phase bit that flips on each wrap; `req_id` names the request through a per-queue
//!   index pool (completions may come out of order).
//!
//! Modules: pure ones (no I/O, no `unsafe`):
//! - [`abi`]: the driver data (udata) of each command, checked against `efa-abi.h`;
//! - [`hw`]: the device formats' constants (sizes, bits, op types, statuses);
//! - [`wqe`]: TX and RX descriptor encoding;
//! - [`cqe`]: completion descriptor decoding (device-written memory: untrusted, fuzzed);
//! - [`ring`]: the queue state (producer counters and phases, the request-id pool, the sub-CQ
//!   consumer), with every device-given index checked;
//!
//! and the glue: [`mem`] (the mappings: LLQ, RQ ring, CQ buffer, doorbells), `qp`, `cq`, and
//! here the context ([`Efa`]: EFA's caps as efadv reports them), address handles and
//! `impl Provider for Efa`.
//!
//! What is proven where: docs/providers.md. This provider has never run on EFA hardware: it is
//! checked against libefa 44 through a fake kernel and against a device model only.

#[forbid(unsafe_code)]
pub mod abi;
mod cq;
#[forbid(unsafe_code)]
pub mod cqe;
#[forbid(unsafe_code)]
pub mod hw;
pub mod mem;
mod qp;
#[forbid(unsafe_code)]
pub mod ring;
#[forbid(unsafe_code)]
pub mod wqe;

use std::collections::HashMap;
use std::os::fd::AsFd;
use std::sync::{Arc, Mutex};

use uverbs::cmd::{Cmd, Transport};
use uverbs::error::{Error, Result};
use uverbs::provider::{
    AhAttr, AhCreated, CqCreated, DeviceDesc, PostError, Provider, QpCreated, QpInitAttr, QpState,
    SharedFd, SrdCaps, SrqCreated, Udata,
};
use uverbs::wr::{RecvWr, SendWr, WorkCompletion};

pub use abi::{DeviceCaps, UctxResp};
pub use cq::{EfaCq, EfaCqPrep};
use mem::{MmapRegion, Region};
pub use qp::{EfaQp, EfaQpPrep, QpShared, Queues};

/// `RDMA_DRIVER_EFA` in `enum rdma_driver_id` (`rdma/ib_user_ioctl_verbs.h`).
pub use uverbs::sys::RDMA_DRIVER_EFA;

/// What a program (or a test) chooses for an EFA context.
#[derive(Clone, Copy, Debug, Default)]
pub struct EfaConfig {
    /// The device's caps when the caller already has them (a device model, a replay of the
    /// oracle); `None`: ask the kernel, as libefa does when it opens a context.
    pub caps: Option<DeviceCaps>,
}

/// QP number (the 16 bits a completion carries) → the QP's queues: how a completion finds the
/// request it ends (libefa's `qp_table`).
#[derive(Default)]
pub struct Registry(Mutex<HashMap<u16, QpShared>>);

impl Registry {
    fn map(&self) -> std::sync::MutexGuard<'_, HashMap<u16, QpShared>> {
        self.0.lock().unwrap_or_else(|e| e.into_inner())
    }
    fn insert(&self, qpn: u16, q: QpShared) {
        self.map().insert(qpn, q);
    }
    fn lookup(&self, qpn: u16) -> Option<QpShared> {
        self.map().get(&qpn).cloned()
    }
    /// Forget `qpn` if it is still `q`'s (a QP destroyed after its number was reused is not).
    fn remove(&self, qpn: u16, q: &QpShared) {
        let mut m = self.map();
        if m.get(&qpn).is_some_and(|x| x.same(q)) {
            m.remove(&qpn);
        }
    }
}

/// An open EFA context. `M` is the mapping layer: [`MmapRegion`] on a device,
/// [`mem::HeapRegion`] in tests and the device model.
pub struct Efa<M: Region = MmapRegion> {
    fd: SharedFd,
    pub uctx: UctxResp,
    caps: DeviceCaps,
    page_size: usize,
    registry: Arc<Registry>,
    _mem: std::marker::PhantomData<fn() -> M>,
}

impl<M: Region> std::fmt::Debug for Efa<M> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Efa")
            .field("uctx", &self.uctx)
            .field("caps", &self.caps)
            .finish()
    }
}

/// The caps from EX_QUERY_DEVICE: EFA's driver data where the kernel fills it (the context
/// says so), else the core answer's limits and no EFA caps (libefa's fallback).
fn query_caps(fd: &SharedFd, uctx: &UctxResp) -> Result<DeviceCaps> {
    let c = Cmd {
        fd: fd.as_fd(),
        transport: Transport::Write,
        driver_id: RDMA_DRIVER_EFA,
    };
    let with_udata = uctx.cmds_supp_udata_mask & abi::SUPP_UDATA_QUERY_DEVICE != 0;
    let len = if with_udata {
        abi::EX_QUERY_DEVICE_RESP_LEN
    } else {
        0
    };
    let (core, drv) = uverbs::cmd::query_device_ex_drv(&c, len)?;
    if with_udata {
        return abi::parse_query_device_resp(&drv)
            .map_err(|e| Error::msg("EFA query device", e.to_string()));
    }
    let b = &core.base;
    Ok(DeviceCaps {
        max_sq_wr: b.max_qp_wr,
        max_rq_wr: b.max_qp_wr,
        max_sq_sge: b.max_sge.min(u32::from(u16::MAX)) as u16,
        max_rq_sge: b.max_sge.min(u32::from(u16::MAX)) as u16,
        max_rdma_size: 0,
        device_caps: 0,
    })
}

impl<M: Region> Efa<M> {
    /// EFA's caps, as `efadv_query_device` reports them (max SQ/RQ WRs and SGEs, the largest
    /// RDMA request, RDMA read and the other cap bits), with the context's inline size and LLQ
    /// depth in [`Efa::uctx`].
    pub fn caps(&self) -> DeviceCaps {
        self.caps
    }
}

// ---- address handles ---------------------------------------------------------------------------

pub struct EfaAhPrep;

/// An address handle: the device's number for it (from the kernel's CREATE_AH answer), which
/// every UD or SRD send carries.
pub struct EfaAh {
    pub efa_ah: u16,
}

impl<M: Region> Provider for Efa<M> {
    const NAME: &'static str = "efa";
    const DRIVER_ID: u32 = RDMA_DRIVER_EFA;
    const ABI_RANGE: (u32, u32) = (abi::ABI_VERSION, abi::ABI_VERSION);

    type CqPrep = EfaCqPrep;
    type Cq = EfaCq<M>;
    type QpPrep = EfaQpPrep;
    type Qp = EfaQp<M>;
    type SrqPrep = ();
    type Srq = ();
    type AhPrep = EfaAhPrep;
    type Ah = EfaAh;
    type Config = EfaConfig;

    fn context_udata(_dev: &DeviceDesc, _config: &EfaConfig) -> Udata {
        Udata {
            req: abi::alloc_ucontext_cmd().to_vec(),
            resp_len: abi::ALLOC_UCONTEXT_RESP_LEN,
        }
    }

    fn new_context(
        fd: SharedFd,
        _dev: &DeviceDesc,
        drv_resp: &[u8],
        config: &EfaConfig,
    ) -> Result<Self> {
        let uctx = abi::parse_uctx_resp(drv_resp)
            .map_err(|e| Error::msg("EFA open context", e.to_string()))?;
        if uctx.sub_cqs_per_cq == 0 {
            return Err(Error::msg(
                "EFA open context",
                "the kernel reports 0 sub-CQs per CQ",
            ));
        }
        let caps = match config.caps {
            Some(c) => c,
            None => query_caps(&fd, &uctx)?,
        };
        Ok(Efa {
            fd,
            uctx,
            caps,
            // what libefa maps doorbell pages with
            page_size: uverbs::objects::page_size(),
            registry: Arc::default(),
            _mem: std::marker::PhantomData,
        })
    }

    fn pd_udata(&self) -> Udata {
        Udata {
            req: Vec::new(),
            resp_len: abi::ALLOC_PD_RESP_LEN,
        }
    }

    fn pd_number(&self, drv_resp: &[u8]) -> Result<Option<u32>> {
        let pdn =
            abi::parse_pd_resp(drv_resp).map_err(|e| Error::msg("EFA alloc PD", e.to_string()))?;
        Ok(Some(u32::from(pdn)))
    }

    fn prepare_cq(&self, entries: u32) -> Result<(EfaCqPrep, u32, Udata)> {
        self.cq_prepare(entries, false)
    }

    fn prepare_cq_for(&self, entries: u32, with_channel: bool) -> Result<(EfaCqPrep, u32, Udata)> {
        self.cq_prepare(entries, with_channel)
    }

    fn cq_events(&self) -> bool {
        self.caps.cq_notifications()
    }

    fn finish_cq(&self, _prep: EfaCqPrep, core: &CqCreated, drv_resp: &[u8]) -> Result<EfaCq<M>> {
        self.cq_finish(core, drv_resp)
    }

    fn prepare_qp(&self, attr: &QpInitAttr) -> Result<(EfaQpPrep, Udata)> {
        self.qp_prepare(attr)
    }

    fn finish_qp(
        &self,
        prep: EfaQpPrep,
        attr: &QpInitAttr,
        core: &QpCreated,
        drv_resp: &[u8],
    ) -> Result<EfaQp<M>> {
        self.qp_finish(prep, attr, core, drv_resp)
    }

    fn prepare_srq(&self, _max_wr: u32, _max_sge: u32) -> Result<((), Udata)> {
        let mut e =
            Error::msg("EFA create SRQ", "EFA has no SRQs").with_hint("leave out --use-srq");
        e.errno = Some(libc::EOPNOTSUPP);
        Err(e)
    }

    fn finish_srq(&self, _prep: (), _core: &SrqCreated, _drv_resp: &[u8]) -> Result<()> {
        Err(Error::msg("EFA create SRQ", "EFA has no SRQs"))
    }

    fn prepare_ah(&self, _attr: &AhAttr) -> Result<(EfaAhPrep, Udata)> {
        Ok((
            EfaAhPrep,
            Udata {
                req: Vec::new(),
                resp_len: abi::CREATE_AH_RESP_LEN,
            },
        ))
    }

    fn finish_ah(
        &self,
        _prep: EfaAhPrep,
        _attr: &AhAttr,
        _core: &AhCreated,
        drv_resp: &[u8],
    ) -> Result<EfaAh> {
        let efa_ah =
            abi::parse_ah_resp(drv_resp).map_err(|e| Error::msg("EFA create AH", e.to_string()))?;
        Ok(EfaAh { efa_ah })
    }

    fn ah_number(&self, ah: &EfaAh) -> u32 {
        u32::from(ah.efa_ah)
    }

    fn srd_caps(&self) -> Option<SrdCaps> {
        Some(SrdCaps {
            rdma_read: self.caps.rdma_read(),
            rdma_write: self.caps.rdma_write(),
            max_rdma_size: self.caps.max_rdma_size,
        })
    }

    fn qp_state_changed(&self, qp: &mut EfaQp<M>, state: QpState) {
        qp.state_changed(state);
    }

    unsafe fn post_send(&self, qp: &mut EfaQp<M>, wrs: &[SendWr<'_>]) -> Result<(), PostError> {
        // SAFETY: the caller keeps this trait method's contract, which is the callee's.
        unsafe { self.qp_post_send(qp, wrs) }
    }

    unsafe fn post_recv(&self, qp: &mut EfaQp<M>, wrs: &[RecvWr<'_>]) -> Result<(), PostError> {
        self.qp_post_recv(qp, wrs)
    }

    unsafe fn post_srq_recv(&self, _srq: &mut (), _wrs: &[RecvWr<'_>]) -> Result<(), PostError> {
        let mut e = Error::msg("EFA post SRQ receive", "EFA has no SRQs");
        e.errno = Some(libc::EOPNOTSUPP);
        Err(PostError { index: 0, error: e })
    }

    fn poll_cq(&self, cq: &mut EfaCq<M>, out: &mut [WorkCompletion]) -> Result<usize> {
        self.cq_poll(cq, out)
    }

    fn arm_cq(&self, cq: &mut EfaCq<M>, solicited_only: bool) -> Result<()> {
        self.cq_arm(cq, solicited_only)
    }

    /// One completion event: the next arm carries the next command sequence number.
    fn cq_event(&self, cq: &mut EfaCq<M>) {
        cq.state.cmd_sn = cq.state.cmd_sn.wrapping_add(1);
    }
}
