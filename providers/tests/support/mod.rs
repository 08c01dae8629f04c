//! What the providers' integration tests share (Cargo builds each file of `tests/` as its own
//! test binary; this folder is a module of those that say `mod support;`, not a binary): the
//! bnxt_re and EFA oracle runs and replays, the mlx5 fixtures and oracle-log readers, the mlx5 device model, the
//! rxe mock-kernel helpers.
//! Each binary uses a part of it, hence `dead_code` allowed here.
#![allow(dead_code)]

pub mod bnxt_re;
pub mod efa;
pub mod efa_model;
pub mod mlx5;
pub mod mlx5_model;
pub mod oracle;
pub mod rxe;
