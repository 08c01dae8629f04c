//! `rperftest matrix`: every node pair of a cluster, on every rail, with perftest's tools.
//!
//! The pure parts (host lists, rounds, deadlines, judgement, records, the text matrix) are
//! kept apart from the parts that start processes, so that they can be tested without nodes.

// The command itself (launcher, preflight, rounds) lands in the next change.
#![allow(dead_code)]

pub mod hostlist;
pub mod judge;
pub mod report;
pub mod results;
pub mod schedule;
