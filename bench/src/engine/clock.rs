//! The time base: nanoseconds from CLOCK_MONOTONIC, so "cycles per second" is exactly 1e9.

use std::sync::OnceLock;
use std::time::Instant;

/// Ticks per second of [`now`].
pub const TICKS_PER_SEC: u64 = 1_000_000_000;

fn origin() -> Instant {
    static ORIGIN: OnceLock<Instant> = OnceLock::new();
    *ORIGIN.get_or_init(Instant::now)
}

/// Nanoseconds since the first call in this process.
#[inline]
pub fn now() -> u64 {
    origin().elapsed().as_nanos() as u64
}
