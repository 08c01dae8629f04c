//! perftest-compatible benchmark engine.

pub mod engine;
pub mod params;
pub mod oob;
pub mod report;
pub mod stats;
pub mod tool;
pub mod fuzzing;
