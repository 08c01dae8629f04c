//! mlx5 (ConnectX-4 and later) provider, in Rust, without libmlx5.
//!
//! Layers:
//! - [`abi`]: driver data for the verbs commands (encode requests, validate responses);
//! - [`geometry`]: queue sizing;
//! - [`wqe`] / [`cqe`]: pure encode/decode of work-queue entries and completion entries;
//! - [`mem`]: memory shared with the device ([`mem::DmaBuf`], mmap- or heap-backed);
//! - [`uar`]: the MMIO doorbell layer behind [`uar::UarWriter`];
//! - queue state (indices, wraparound, doorbell records), one module per object, as libmlx5's
//!   qp.c / cq.c / srq.c: `qp` (creation, the post paths, `ring_sq`), `cq` (creation,
//!   `poll_cq` and CQE completion, arming), `srq`; `registry` (the per-context user-index →
//!   QP table that CQ polling uses) and `bfreg` (the BlueFlame register lock);
//! - this module: the context ([`Mlx5`], [`Mlx5Config`]), address handles and
//!   `impl Provider for Mlx5`, which hands each object's calls to its module.
//!
//! docs/mlx5.md walks through every store and load of the hot path and its barriers.

#[forbid(unsafe_code)]
pub mod abi;
#[forbid(unsafe_code)]
mod bfreg;
mod cq;
#[forbid(unsafe_code)]
pub mod cqe;
pub mod crypto;
#[forbid(unsafe_code)]
pub mod dc;
#[forbid(unsafe_code)]
pub mod devx;
mod dv;
#[forbid(unsafe_code)]
pub mod geometry;
#[forbid(unsafe_code)]
pub mod hw;
pub mod mem;
mod qp;
#[forbid(unsafe_code)]
mod registry;
mod scatter;
mod srq;
mod srq_ring;
pub mod uar;
#[forbid(unsafe_code)]
pub mod umr;
#[forbid(unsafe_code)]
pub mod wqe;

use std::sync::atomic::{AtomicU32, AtomicU8, Ordering};
use std::sync::{Arc, RwLock};

use uverbs::error::{Error, Result};
use uverbs::provider::{
    AhAttr, AhCreated, CqCreated, DeviceDesc, PostError, Provider, QpCreated, QpInitAttr, QpState,
    SharedFd, SrqCreated, Udata,
};
use uverbs::wr::{RecvWr, SendWr, WorkCompletion};

use abi::UctxResp;
use bfreg::BfReg;
pub use cq::{Mlx5Cq, Mlx5CqPrep};
pub use qp::{Mlx5Qp, Mlx5QpPrep};
pub use registry::{QpShared, Registry};
use registry::{UidxReservation, MAX_UIDX};
pub use srq::{Mlx5Srq, Mlx5SrqPrep};
pub use srq_ring::SrqShared;
use uar::{MmapUar, UarMap, UarPlan, UarWriter};

/// Behaviour switches (libmlx5's environment variables, with the same defaults).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Mlx5Config {
    /// Use BlueFlame (write-combining copies of small WQEs). `MLX5_SHUT_UP_BF=1` turns it off;
    /// the UAR pages are then mapped non-cached.
    pub blueflame: bool,
    /// BlueFlame single-WR posts even without inline data (`MLX5_POST_SEND_PREFER_BF`, default on).
    pub prefer_bf: bool,
    /// What to ask for in GET_CONTEXT.
    pub uctx: abi::UctxReq,
}

impl Default for Mlx5Config {
    fn default() -> Self {
        Mlx5Config {
            blueflame: true,
            prefer_bf: true,
            uctx: abi::UctxReq::default(),
        }
    }
}

/// An open mlx5 context. `U` is the MMIO layer: [`MmapUar`] on hardware, a recording one in tests.
pub struct Mlx5<U: UarWriter = MmapUar> {
    fd: SharedFd,
    pub resp: UctxResp,
    pub plan: UarPlan,
    pub config: Mlx5Config,
    uar: U,
    bfregs: Box<[BfReg]>,
    registry: Arc<Registry>,
    avs: Arc<RwLock<Vec<Option<[u8; 48]>>>>,
    ah_spread: AtomicU32,
    /// DEVX and AES-XTS state (crypto login); see [`crypto`].
    crypto: crypto::CryptoCtx,
    /// The device's AES-XTS engines (`umr::engines` bits, from QUERY_HCA_CAP); 0 until the
    /// crypto control path sets them with [`Mlx5::set_crypto_engines`].
    crypto_engines: AtomicU8,
}

impl<U: UarWriter> std::fmt::Debug for Mlx5<U> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Mlx5")
            .field("resp", &self.resp)
            .field("plan", &self.plan)
            .finish()
    }
}

impl<U: UarMap> Mlx5<U> {
    /// Build a context from the GET_CONTEXT driver response with explicit settings.
    pub fn with_config(fd: SharedFd, drv_resp: &[u8], config: Mlx5Config) -> Result<Self> {
        let resp = UctxResp::parse(drv_resp)?;
        let plan = UarPlan::new(&resp, uverbs::objects::page_size(), config.blueflame)?;
        let uar = U::map(&fd, &plan)?;
        let nbf = plan.num_pages * plan.uars_per_page * uar::BFREGS_PER_UAR;
        let bfregs = (0..nbf)
            .map(|_| BfReg::new())
            .collect();
        Ok(Mlx5 {
            fd,
            resp,
            plan,
            config,
            uar,
            bfregs,
            registry: Arc::default(),
            avs: Arc::default(),
            ah_spread: AtomicU32::new(0),
            crypto: crypto::CryptoCtx::new(false),
            crypto_engines: AtomicU8::new(0),
        })
    }
}

impl<U: UarWriter> Mlx5<U> {
    /// The MMIO layer (tests read the recording from here).
    pub fn uar(&self) -> &U {
        &self.uar
    }

    /// Record the device's AES-XTS engines (`umr::engines` bits: libmlx5's
    /// `crypto_caps.crypto_engines`): they decide the tweak byte order in a crypto BSF and
    /// whether a crypto mapping may span several data units.
    pub fn set_crypto_engines(&self, engines: u8) {
        self.crypto_engines.store(engines, Ordering::Relaxed);
    }
    pub fn crypto_engines(&self) -> u8 {
        self.crypto_engines.load(Ordering::Relaxed)
    }

    /// Hand the engines the crypto control path learnt from QUERY_HCA_CAP to the data path.
    fn sync_crypto_engines(&self) {
        if let Some(e) = self.crypto.engines() {
            self.set_crypto_engines(e);
        }
    }
}

// ---- address handles ---------------------------------------------------------------------------

pub struct Mlx5AhPrep {
    attr: AhAttr,
}

pub struct Mlx5Ah {
    num: u32,
    pub av: [u8; 48],
    table: Arc<RwLock<Vec<Option<[u8; 48]>>>>,
}

impl Drop for Mlx5Ah {
    fn drop(&mut self) {
        let mut t = self.table.write().unwrap_or_else(|e| e.into_inner());
        if let Some(s) = t.get_mut(self.num as usize) {
            *s = None;
        }
    }
}

fn post_err(index: usize, e: Error) -> PostError {
    PostError { index, error: e }
}

fn enomem(what: &str, detail: String) -> Error {
    let mut e = Error::msg(what, detail);
    e.errno = Some(libc::ENOMEM);
    e
}

impl<U: UarMap> Provider for Mlx5<U> {
    const NAME: &'static str = "mlx5";
    const DRIVER_ID: u32 = uverbs::sys::RDMA_DRIVER_MLX5;
    const ABI_RANGE: (u32, u32) = (abi::ABI_VERSION, abi::ABI_VERSION);

    type CqPrep = Mlx5CqPrep;
    type Cq = Mlx5Cq;
    type QpPrep = Mlx5QpPrep;
    type Qp = Mlx5Qp;
    type SrqPrep = Mlx5SrqPrep;
    type Srq = Mlx5Srq;
    type AhPrep = Mlx5AhPrep;
    type Ah = Mlx5Ah;
    type Config = Mlx5Config;

    fn context_udata(_dev: &DeviceDesc, config: &Mlx5Config) -> Udata {
        Udata {
            req: config.uctx.encode(),
            resp_len: abi::ALLOC_UCONTEXT_RESP_LEN,
        }
    }

    fn null_mr_lkey(&self) -> Option<u32> {
        self.resp.dump_fill_mkey()
    }

    fn new_context(fd: SharedFd, _dev: &DeviceDesc, drv_resp: &[u8], config: &Mlx5Config) -> Result<Self> {
        Self::with_config(fd, drv_resp, *config)
    }

    fn pd_udata(&self) -> Udata {
        Udata { req: Vec::new(), resp_len: abi::ALLOC_PD_RESP_LEN }
    }

    fn pd_number(&self, drv_resp: &[u8]) -> Result<Option<u32>> {
        abi::parse_alloc_pd_resp(drv_resp).map(Some)
    }

    fn prepare_cq(&self, entries: u32) -> Result<(Mlx5CqPrep, u32, Udata)> {
        self.cq_prepare(entries)
    }

    fn finish_cq(&self, prep: Mlx5CqPrep, core: &CqCreated, drv_resp: &[u8]) -> Result<Mlx5Cq> {
        self.cq_finish(prep, core, drv_resp)
    }

    fn prepare_qp(&self, attr: &QpInitAttr) -> Result<(Mlx5QpPrep, Udata)> {
        self.qp_prepare(attr)
    }

    fn finish_qp(&self, prep: Mlx5QpPrep, attr: &QpInitAttr, core: &QpCreated, drv_resp: &[u8]) -> Result<Mlx5Qp> {
        self.qp_finish(prep, attr, core, drv_resp)
    }

    fn prepare_srq(&self, max_wr: u32, max_sge: u32) -> Result<(Mlx5SrqPrep, Udata)> {
        self.srq_prepare(max_wr, max_sge)
    }

    fn finish_srq(&self, prep: Mlx5SrqPrep, core: &SrqCreated, drv_resp: &[u8]) -> Result<Mlx5Srq> {
        self.srq_finish(prep, core, drv_resp)
    }

    fn prepare_ah(&self, attr: &AhAttr) -> Result<(Mlx5AhPrep, Udata)> {
        if attr.is_global && self.resp.cmds_supp_uhw & abi::CMDS_SUPP_UHW_CREATE_AH == 0 {
            return Err(Error::msg("mlx5 create AH", "the kernel does not resolve the peer MAC (no CREATE_AH driver data)")
                .with_hint("this kernel is too old for rperftest's mlx5 provider; RoCE needs kernel MAC resolution"));
        }
        let resp_len = if attr.is_global {
            abi::CREATE_AH_RESP_LEN
        } else {
            0
        };
        Ok((
            Mlx5AhPrep { attr: *attr },
            Udata {
                req: Vec::new(),
                resp_len,
            },
        ))
    }

    fn finish_ah(
        &self,
        prep: Mlx5AhPrep,
        attr: &AhAttr,
        _core: &AhCreated,
        drv_resp: &[u8],
    ) -> Result<Mlx5Ah> {
        let _ = prep.attr;
        let av = if attr.is_global {
            let dmac = abi::parse_create_ah_resp(drv_resp)?;
            let spread = self
                .ah_spread
                .fetch_add(1, Ordering::Relaxed)
                .wrapping_mul(0x9e37);
            wqe::roce_av(attr, dmac, wqe::roce_udp_sport(attr.flow_label, spread))
        } else {
            // InfiniBand, LID-routed.
            let mut a = [0u8; 48];
            a[12] = attr.sl & 0xf;
            a[14..16].copy_from_slice(&attr.dlid.to_be_bytes());
            a
        };
        let mut t = self.avs.write().unwrap_or_else(|e| e.into_inner());
        let num = match t.iter().position(|s| s.is_none()) {
            Some(i) => {
                t[i] = Some(av);
                i
            }
            None => {
                t.push(Some(av));
                t.len() - 1
            }
        } as u32;
        Ok(Mlx5Ah {
            num,
            av,
            table: self.avs.clone(),
        })
    }

    fn ah_number(&self, ah: &Mlx5Ah) -> u32 {
        ah.num
    }
    fn modify_qp_udata(&self, qp: &Mlx5Qp, state: Option<QpState>) -> Option<Udata> {
        self.qp_modify_udata(qp, state)
    }

    fn modify_qp_done(&self, qp: &mut Mlx5Qp, state: QpState, drv_resp: &[u8]) -> Result<Option<u32>> {
        self.qp_modify_done(qp, state, drv_resp)
    }

    fn qp_attached_srq(&self, qp: &mut Mlx5Qp, srq: &Mlx5Srq) {
        self.bind_srq(qp, srq)
    }

    fn qp_state_changed(&self, qp: &mut Mlx5Qp, state: QpState) {
        self.qp_reset_if_reset(qp, state)
    }

    // Forced inline, like `qp_post_send` under it: the post must land in the caller's loop
    // for the gain measured there (docs/benchmarks-data/2026-12-06-hotpath-inline.md); with
    // the body inlined into it this wrapper is large, and with several callers (the tool's bw
    // and lat loops) the compiler may otherwise keep it out of line.
    #[inline(always)]
    unsafe fn post_send(&self, qp: &mut Mlx5Qp, wrs: &[SendWr<'_>]) -> Result<(), PostError> {
        // SAFETY: the caller keeps this trait method's contract, which is the callee's.
        unsafe { self.qp_post_send(qp, wrs) }
    }

    unsafe fn post_recv(&self, qp: &mut Mlx5Qp, wrs: &[RecvWr<'_>]) -> Result<(), PostError> {
        // SAFETY: the caller keeps this trait method's contract, which is the callee's.
        unsafe { self.qp_post_recv(qp, wrs) }
    }

    unsafe fn post_srq_recv(&self, srq: &mut Mlx5Srq, wrs: &[RecvWr<'_>]) -> Result<(), PostError> {
        // SAFETY: the caller keeps this trait method's contract, which is the callee's.
        unsafe { self.srq_post_recv(srq, wrs) }
    }

    // Forced inline with `cq_poll`: left to itself the compiler keeps this wrapper out of
    // line (a call per poll, lat 393 Ir/op instead of 341 in the host hot-path loop).
    #[inline(always)]
    fn poll_cq(&self, cq: &mut Mlx5Cq, out: &mut [WorkCompletion]) -> Result<usize> {
        self.cq_poll(cq, out)
    }

    fn arm_cq(&self, cq: &mut Mlx5Cq, solicited_only: bool) -> Result<()> {
        self.cq_arm(cq, solicited_only)
    }

    fn cq_event(&self, cq: &mut Mlx5Cq) {
        cq.arm_sn = cq.arm_sn.wrapping_add(1);
    }
}
