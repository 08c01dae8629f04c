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
//! Modules (all pure so far, no I/O and no `unsafe`):
//! - [`abi`]: the driver data (udata) of each command, checked against `efa-abi.h`;
//! - [`hw`]: the device formats' constants (sizes, bits, op types, statuses);
//! - [`wqe`]: TX and RX descriptor encoding;
//! - [`cqe`]: completion descriptor decoding (device-written memory: untrusted, fuzzed);
//! - [`ring`]: the queue state (producer counters and phases, the request-id pool, the sub-CQ
//!   consumer), with every device-given index checked.
//!
//! Not here yet: the `Provider` implementation (mmaps of the LLQ, RQ ring, CQ and doorbells) and
//! its dispatch; docs/efa.md says what is proven where.

#[forbid(unsafe_code)]
pub mod abi;
#[forbid(unsafe_code)]
pub mod cqe;
#[forbid(unsafe_code)]
pub mod hw;
#[forbid(unsafe_code)]
pub mod ring;
#[forbid(unsafe_code)]
pub mod wqe;

/// `RDMA_DRIVER_EFA` in `enum rdma_driver_id` (`rdma/ib_user_ioctl_verbs.h`).
pub use uverbs::sys::RDMA_DRIVER_EFA;
