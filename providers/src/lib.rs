//! Userspace RDMA providers: `rxe` (Soft-RoCE) and `mlx5` (ConnectX).
//!
//! Each provider splits into pure encode/decode (WQE bytes out, CQE bytes in: no I/O, no unsafe,
//! fuzzable), queue state (indices, wraparound, doorbell records), and the glue implementing
//! [`uverbs::provider::Provider`].

pub mod mlx5;
pub mod rxe;
