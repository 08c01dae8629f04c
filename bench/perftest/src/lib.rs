//! perftest's eight tools (`ib_write_bw` … `ib_atomic_lat`): the command line ([`params`]), the
//! out-of-band exchange ([`oob`], [`cm_session`]), the measured loops ([`engine`]), statistics
//! and perftest's output text ([`stats`], [`report`]), and one run end to end ([`tool`]).
//! The time base, signals and C number scans come from `bench_core`; charts from `plot`.

pub mod cm_session;
#[forbid(unsafe_code)]
pub mod counters;
pub mod engine;
pub mod gpu;
#[forbid(unsafe_code)]
pub mod mcast;
#[forbid(unsafe_code)]
pub mod params;
pub mod oob;
#[forbid(unsafe_code)]
pub mod report;
#[forbid(unsafe_code)]
pub mod stats;
pub mod tool;
#[forbid(unsafe_code)]
pub mod fuzzing;
