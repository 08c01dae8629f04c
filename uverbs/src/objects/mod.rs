//! Verbs objects with RAII: [`Context`], [`Pd`], [`Mr`], [`CompChannel`], [`Cq`], [`Qp`],
//! [`Srq`], [`Ah`].
//!
//! Lifetimes: every object keeps what it depends on alive through an `Arc` (a QP holds its PD
//! and CQs, a PD holds the context), so any drop order is safe. Objects that other objects refer
//! to (CQ, SRQ) are split into a unique owner (`Cq`, `Srq`: the only way to reach the provider's
//! data-path state, by `&mut`) and a shared inner part whose last reference destroys the kernel
//! object. On destroy the kernel object goes first and the provider state (rings, buffers) is
//! dropped afterwards, so memory is released only once the kernel no longer uses it.
//!
//! Destroy failures in `Drop` are reported on stderr once per process (never a panic); EIO (the
//! device was disassociated) counts as success.
//!
//! One file per object family: `context` (the opened device and its async events), `pd` (PD,
//! XRC domain, crypto keys), `mr` (mappings and memory regions), `cq` (completion channel and
//! CQ), `srq`, `qp_attr` (the pure QP attribute and state-transition rules), `qp`, `ah`, and
//! `shared` (the unique-owner / shared-inner pattern of CQs and SRQs). Every public item is
//! re-exported here, so paths stay `objects::Name`.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

use crate::error::Result;

mod ah;
mod context;
mod cq;
mod flags;
mod mr;
mod pd;
mod qp;
mod qp_attr;
mod shared;
mod srq;

pub use ah::Ah;
pub use context::{AsyncEvent, Context};
pub use cq::{CompChannel, Cq};
pub use flags::{AccessFlags, QpAttrMask};
pub use mr::{page_size, MmapBuf, Mr, HUGE_PAGE_SIZE};
pub use pd::{CryptoMkey, Dek, Pd, Xrcd};
pub use qp::{Qp, QpInit};
pub use qp_attr::{
    ah_from_uverbs, init_attr, modify_request, qp_dest, query_attr, rtr_attr, rts_attr, uverbs_ah_attr, QpAttr,
    RtrParams, RtsParams, DEFAULT_QKEY,
};
pub use srq::Srq;
/// For rdma_cm's INIT_QP_ATTR answer, which carries the QUERY_QP fields under the same names.
pub(crate) use qp_attr::qp_attr_from_kernel;

/// Set once the first teardown error has been printed: later ones are not shown.
static TEARDOWN_ERROR_LOGGED: AtomicBool = AtomicBool::new(false);

/// Report a destroy failure from `Drop`: once per process, as a warning; EIO is success.
fn report_drop(r: Result<()>) {
    if let Err(e) = r {
        if e.errno == Some(libc::EIO) {
            return;
        }
        if !TEARDOWN_ERROR_LOGGED.swap(true, Ordering::Relaxed) {
            crate::settings::warn(format!("{e} (further teardown errors are not shown)"));
        }
    }
}

/// Process-unique `user_handle` values for kernel objects (CQ handles come back in events).
static NEXT_USER_HANDLE: AtomicU64 = AtomicU64::new(1);

fn next_user_handle() -> u64 {
    NEXT_USER_HANDLE.fetch_add(1, Ordering::Relaxed)
}
