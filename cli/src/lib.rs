//! The library half of the `rperftest` package: the commands whose parsers read bytes from
//! other hosts (the matrix's records and probe lines, rping's advertisements), so that the
//! fuzz targets and their replay tests can reach them. The binary
//! (`src/main.rs`) dispatches to these and to the perftest tools in `bench`.

pub mod args;
pub mod diag;
pub mod fuzzing;
pub mod matrix;
