//! perftest-compatible benchmark engine.

pub mod cm_session;
#[forbid(unsafe_code)]
pub mod counters;
pub mod engine;
#[forbid(unsafe_code)]
pub mod mcast;
#[forbid(unsafe_code)]
pub mod params;
#[forbid(unsafe_code)]
pub mod plot;
pub mod oob;
#[forbid(unsafe_code)]
pub mod report;
pub mod settings;
pub mod signal;
#[forbid(unsafe_code)]
pub mod stats;
#[forbid(unsafe_code)]
pub mod suggest;
pub mod tool;
#[forbid(unsafe_code)]
pub mod fuzzing;
// Denied, not forbidden: qperf::rdma::rig posts work requests over its own MR (the only
// unsafe there, each block with its SAFETY note).
#[deny(unsafe_code)]
pub mod qperf;
