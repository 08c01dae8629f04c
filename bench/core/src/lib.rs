//! The leaf of the benchmark crates (perftest, qperf, the matrix): what every tool that runs
//! a measured loop needs and none of them owns. Nothing here imports another crate of ours.
//!
//! - [`clock`]: the time base (TSC or CLOCK_MONOTONIC, chosen once by the program)
//! - [`signal`]: Ctrl-C and dead peers, seen from inside a loop
//! - [`settings`]: the run's settings from outside its command line, as a value
//! - [`cparse`]: C's number scans (`strtol`, `strtoul`, `atof`) with their quirks
//! - [`suggest`]: the name probably meant, for a command copied from a guide

pub mod clock;
#[forbid(unsafe_code)]
pub mod cparse;
#[forbid(unsafe_code)]
pub mod settings;
pub mod signal;
#[forbid(unsafe_code)]
pub mod suggest;
