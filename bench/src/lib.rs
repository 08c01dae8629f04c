//! perftest-compatible benchmark engine.

pub mod cm_session;
pub mod counters;
pub mod engine;
pub mod mcast;
pub mod params;
pub mod plot;
pub mod oob;
pub mod report;
pub mod signal;
pub mod stats;
pub mod tool;
pub mod fuzzing;
pub mod qperf;
