//! `uverbs`: the Linux kernel verbs ABI spoken directly, with no libibverbs.
//!
//! Layers, bottom to top (see `docs/architecture.md`):
//! - [`sys`]: raw `#[repr(C)]` ABI structs and constants, hand-written, no logic.
//! - `cmd`: one function per kernel command (legacy `write()` framing and `RDMA_VERBS_IOCTL`),
//!   errors carrying the command, the errno and a hint.
//! - `discovery`: devices, ports, GIDs from netlink and sysfs.
//! - verbs objects with RAII (Context, Pd, Mr, Cq, Qp, Srq, Ah, CompChannel).
//! - [`provider`]: the boundary every userspace provider (rxe, mlx5, bnxt_re) implements, and the
//!   data-path types shared by all of them ([`wr`]).
//!
//! `unsafe` is allowed only in the modules that touch the kernel or mapped memory.
#![deny(unsafe_op_in_unsafe_fn)]

pub mod cmd;
#[forbid(unsafe_code)]
pub mod attr;
pub mod discovery;
pub mod dv;
#[forbid(unsafe_code)]
pub mod error;
pub mod ioctl;
#[forbid(unsafe_code)]
pub mod knob;
pub mod objects;
#[forbid(unsafe_code)]
pub mod sys;
pub mod device;
pub mod provider;
pub mod queries;
#[forbid(unsafe_code)]
pub mod settings;
#[forbid(unsafe_code)]
pub mod wr;
pub mod cm;
#[forbid(unsafe_code)]
pub mod fuzzing;

pub use error::{Error, Result};
