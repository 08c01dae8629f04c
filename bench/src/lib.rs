//! perftest-compatible benchmark engine.
