//! Broadcom NetXtreme-E / Thor (bnxt_re) provider, in Rust, without libbnxt_re.
//!
//! Layers, as mlx5's:
//! - [`abi`]: driver data of the verbs commands (`<rdma/bnxt_re-abi.h>`);
//! - [`hw`]: the device formats' constants; [`geometry`]: queue sizing;
//! - [`wqe`] / [`cqe`]: pure encode/decode of queue entries and completion entries;
//! - [`db`]: the doorbell word and the pages mapped from the uverbs fd ([`db::Page`]);
//! - queue state, one module per object: `qp` (creation, post paths), `cq` (poll, arm, the
//!   software flush of a QP in error), `srq`; `registry` (our QP handle → the QP's state CQ
//!   polling needs, the role of libbnxt_re's pointer in the CQE), `shared` (that state);
//! - this module: the context ([`Bnxt`]), address handles and `impl Provider for Bnxt`.
//!
//! What is proven where: docs/providers.md. This provider has never run on hardware.

#[forbid(unsafe_code)]
pub mod abi;
mod cq;
#[forbid(unsafe_code)]
pub mod cqe;
pub mod db;
#[forbid(unsafe_code)]
pub mod geometry;
#[forbid(unsafe_code)]
pub mod hw;
mod qp;
#[forbid(unsafe_code)]
mod registry;
#[forbid(unsafe_code)]
mod shared;
mod srq;
#[forbid(unsafe_code)]
pub mod wqe;

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, OnceLock};

use uverbs::error::{Error, Result};
use uverbs::provider::{
    AhAttr, AhCreated, CqCreated, DeviceDesc, PostError, Provider, QpCreated, QpInitAttr,
    QpModified, QpState, SharedFd, SrqCreated, Udata,
};
use uverbs::wr::{RecvWr, SendWr, WorkCompletion};

pub use abi::UctxResp;
pub use cq::{BnxtCq, BnxtCqPrep};
use db::{MmapPage, Page};
pub use qp::{BnxtQp, BnxtQpPrep};
use registry::Registry;
pub use srq::{BnxtSrq, BnxtSrqPrep};

/// An open bnxt_re context. `P` is the MMIO layer: [`MmapPage`] on hardware,
/// [`db::RecordingPage`] in tests.
pub struct Bnxt<P: Page = MmapPage> {
    fd: SharedFd,
    pub resp: UctxResp,
    /// The shared page (offset 0): the kernel leaves a new AH's id here.
    shpg: P,
    /// The doorbell page, mapped when the first PD tells where it is.
    dpi: OnceLock<P>,
    registry: Arc<Registry>,
    /// Handles we give the kernel for CQs, QPs and SRQs (libbnxt_re gives pointers); the
    /// device copies a QP's into its completions, and we look it up, never dereference it.
    next_handle: AtomicU64,
    /// CREATE_AH and the read of the id it leaves in the shared page go together.
    ah_lock: Mutex<()>,
}

impl<P: Page> std::fmt::Debug for Bnxt<P> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Bnxt").field("resp", &self.resp).finish()
    }
}

impl<P: Page> Bnxt<P> {
    /// The shared page (tests play the kernel through it).
    pub fn shared_page(&self) -> &P {
        &self.shpg
    }
    /// The doorbell page, once a PD mapped it.
    pub fn doorbell_page(&self) -> Option<&P> {
        self.dpi.get()
    }
    fn handle(&self) -> u64 {
        self.next_handle.fetch_add(1, Ordering::Relaxed)
    }
    fn pg_size(&self) -> u32 {
        self.resp.pg_size
    }
    /// Ring a doorbell. Without a PD there is no doorbell page, and nothing to ring for: no QP
    /// or SRQ exists, and a CQ has no completions.
    fn ring(&self, v: u64) {
        if let Some(d) = self.dpi.get() {
            d.ring(0, v);
        }
    }
    /// The doorbell for queue `qid` at `indx`: rdma-core 44's format, or on gen P7 chips
    /// rdma-core 50's with the queue's `epoch` and (CQ arms) the `toggle`.
    fn db(&self, indx: u32, epoch: bool, toggle: u32, qid: u32, typ: u32) -> u64 {
        if self.resp.gen_p7() {
            db::doorbell_p7(indx, epoch, toggle, qid, typ)
        } else {
            db::doorbell(indx, qid, typ)
        }
    }
}

fn post_err(index: usize, errno: i32, what: &str, detail: String) -> PostError {
    let mut e = Error::msg(format!("bnxt_re {what}"), detail);
    e.errno = Some(errno);
    PostError { index, error: e }
}

// ---- address handles ---------------------------------------------------------------------------

pub struct BnxtAhPrep;

/// An address handle: the id the kernel gave it (UD sends name it).
pub struct BnxtAh {
    pub avid: u32,
}

impl<P: Page> Provider for Bnxt<P> {
    const NAME: &'static str = "bnxt_re";
    const DRIVER_ID: u32 = uverbs::sys::RDMA_DRIVER_BNXT_RE;
    const ABI_RANGE: (u32, u32) = (abi::ABI_VERSION, abi::ABI_VERSION);

    type CqPrep = BnxtCqPrep;
    type Cq = BnxtCq<P>;
    type QpPrep = BnxtQpPrep;
    type Qp = BnxtQp;
    type SrqPrep = BnxtSrqPrep;
    type Srq = BnxtSrq;
    type AhPrep = BnxtAhPrep;
    type Ah = BnxtAh;
    type Config = ();

    fn context_udata(_dev: &DeviceDesc, _config: &()) -> Udata {
        Udata {
            req: Vec::new(),
            resp_len: abi::UCTX_RESP_LEN,
        }
    }

    fn new_context(fd: SharedFd, _dev: &DeviceDesc, drv_resp: &[u8], _config: &()) -> Result<Self> {
        let resp = UctxResp::parse(drv_resp)?;
        let shpg = P::map(&fd, 0, resp.pg_size as usize, "shared page")?;
        Ok(Bnxt {
            fd,
            resp,
            shpg,
            dpi: OnceLock::new(),
            registry: Arc::default(),
            next_handle: AtomicU64::new(1),
            ah_lock: Mutex::new(()),
        })
    }

    fn pd_udata(&self) -> Udata {
        Udata {
            req: Vec::new(),
            resp_len: abi::PD_RESP_LEN,
        }
    }

    /// Every PD of a context shares the doorbell page the first one names (libbnxt_re maps it
    /// once, on the first ALLOC_PD, and ignores the later ones').
    fn pd_number(&self, drv_resp: &[u8]) -> Result<Option<u32>> {
        let pd = abi::PdResp::parse(drv_resp)?;
        if self.dpi.get().is_none() {
            let page = P::map(&self.fd, pd.dbr, self.pg_size() as usize, "doorbell page")?;
            let _ = self.dpi.set(page);
        }
        Ok(Some(pd.pdid))
    }

    fn prepare_cq(&self, entries: u32) -> Result<(BnxtCqPrep, u32, Udata)> {
        self.cq_prepare(entries)
    }

    fn finish_cq(&self, prep: BnxtCqPrep, core: &CqCreated, drv_resp: &[u8]) -> Result<BnxtCq<P>> {
        self.cq_finish(prep, core, drv_resp)
    }

    fn prepare_qp(&self, attr: &QpInitAttr) -> Result<(BnxtQpPrep, Udata)> {
        self.qp_prepare(attr)
    }

    fn finish_qp(
        &self,
        prep: BnxtQpPrep,
        attr: &QpInitAttr,
        core: &QpCreated,
        drv_resp: &[u8],
    ) -> Result<BnxtQp> {
        self.qp_finish(prep, attr, core, drv_resp)
    }

    fn prepare_srq(&self, max_wr: u32, max_sge: u32) -> Result<(BnxtSrqPrep, Udata)> {
        self.srq_prepare(max_wr, max_sge)
    }

    fn finish_srq(&self, prep: BnxtSrqPrep, core: &SrqCreated, drv_resp: &[u8]) -> Result<BnxtSrq> {
        self.srq_finish(prep, core, drv_resp)
    }

    fn prepare_ah(&self, _attr: &AhAttr) -> Result<(BnxtAhPrep, Udata)> {
        Ok((BnxtAhPrep, Udata::none()))
    }

    /// The kernel wrote the new AH's id into the shared page during CREATE_AH.
    fn finish_ah(
        &self,
        _prep: BnxtAhPrep,
        _attr: &AhAttr,
        _core: &AhCreated,
        _drv_resp: &[u8],
    ) -> Result<BnxtAh> {
        let _g = self.ah_lock.lock().unwrap_or_else(|e| e.into_inner());
        Ok(BnxtAh {
            avid: self.shpg.read32(hw::SHPG_AVID_OFF) & 0xf_ffff,
        })
    }

    fn ah_number(&self, ah: &BnxtAh) -> u32 {
        ah.avid
    }

    fn qp_attached_srq(&self, qp: &mut BnxtQp, srq: &BnxtSrq) {
        qp.attach_srq(srq);
    }

    fn qp_modified(&self, qp: &mut BnxtQp, m: &QpModified) {
        qp.modified(m);
    }

    fn qp_state_changed(&self, qp: &mut BnxtQp, state: QpState) {
        qp.state_changed(state);
    }

    unsafe fn post_send(&self, qp: &mut BnxtQp, wrs: &[SendWr<'_>]) -> Result<(), PostError> {
        // SAFETY: the caller keeps this trait method's contract, which is the callee's.
        unsafe { self.qp_post_send(qp, wrs) }
    }

    unsafe fn post_recv(&self, qp: &mut BnxtQp, wrs: &[RecvWr<'_>]) -> Result<(), PostError> {
        self.qp_post_recv(qp, wrs)
    }

    unsafe fn post_srq_recv(&self, srq: &mut BnxtSrq, wrs: &[RecvWr<'_>]) -> Result<(), PostError> {
        self.srq_post_recv(srq, wrs)
    }

    fn poll_cq(&self, cq: &mut BnxtCq<P>, out: &mut [WorkCompletion]) -> Result<usize> {
        Ok(self.cq_poll(cq, out))
    }

    fn arm_cq(&self, cq: &mut BnxtCq<P>, solicited_only: bool) -> Result<()> {
        self.cq_arm(cq, solicited_only);
        Ok(())
    }

    fn cq_event(&self, _cq: &mut BnxtCq<P>) {}
}
