//! rxe (Soft-RoCE) provider.
//!
//! rxe is a software RoCE device inside the kernel. User space shares four kinds of rings with
//! it (SQ, RQ, SRQ, CQ), each an mmap of the uverbs fd; posting a send writes a WQE into the SQ
//! ring and then rings a "doorbell" (a POST_SEND write() with no work requests); posting a
//! receive and polling the CQ are pure memory operations.
//!
//! Modules, bottom to top:
//! - [`layout`]: byte offsets of the shared structures, each named after its header field.
//! - [`wqe`], [`cqe`]: pure encode/decode (no I/O, no unsafe; fuzzable).
//! - [`queue`]: ring indices over any [`queue::RingMem`] — validated geometry, explicit
//!   acquire/release ordering, full-queue errors, untrusted indices.
//! - [`mem`]: the kernel's ring mappings and the application memory read for INLINE sends.
//! - [`verbs`]: the objects and `impl uverbs::provider::Provider for Rxe`. The two data-path
//!   syscalls are `uverbs::cmd::post_send_doorbell` (POST_SEND with zero work requests, one per
//!   post call) and `uverbs::cmd::req_notify_cq`.
//! - [`doorbell`]: the doorbell through io_uring instead of `write()` (`RPERFTEST_RXE_DOORBELL`,
//!   an experiment; `write` is the default).

#[forbid(unsafe_code)]
pub mod cqe;
pub mod doorbell;
#[forbid(unsafe_code)]
pub mod layout;
pub mod mem;
pub mod queue;
pub mod verbs;
#[forbid(unsafe_code)]
pub mod wqe;

pub use verbs::{Rxe, RxeAh, RxeCq, RxeQp, RxeSrq, RDMA_DRIVER_RXE};
