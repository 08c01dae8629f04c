//! perftest's SW rate limiter (`--rate_limit_type SW`): the sender posts bursts of
//! `--burst_size` messages; a burst may start only when the gap since the previous burst's start
//! has passed. The gap follows perftest 6.06's arithmetic (run_iter_bw): the rate in packets per
//! second (truncated to an integer), divided by the burst size (truncated) gives bursts per
//! second; the gap is one second over that, in clock ticks.

use bench_core::clock::TICKS_PER_SEC;

/// The unit of `--rate_limit` (`--rate_units`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RateUnit {
    /// `M`: MiB/s.
    MegaBytes,
    /// `g`: Gb/s (10^9 bits).
    GigaBits,
    /// `p`: packets (messages) per second.
    Packets,
}

impl RateUnit {
    pub fn flag(self) -> &'static str {
        match self {
            RateUnit::MegaBytes => "M",
            RateUnit::GigaBits => "g",
            RateUnit::Packets => "p",
        }
    }
}

/// The limiter of one message size, ready for the sender loop.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RateLimiter {
    /// Messages per burst (post-list chains count in full).
    pub burst: u64,
    /// Ticks from the start of one burst to the earliest start of the next.
    pub gap_ticks: u64,
}

/// The rate as perftest computes it: messages per second, truncated to an int.
pub fn packets_per_sec(rate: f64, unit: RateUnit, size: u64) -> u64 {
    let size = size.max(1) as f64;
    let pps = match unit {
        RateUnit::MegaBytes => rate / size * 1_048_576.0,
        RateUnit::GigaBits => rate / (size * 8.0) * 1_000_000_000.0,
        RateUnit::Packets => rate,
    };
    // perftest stores it in an int; larger rates would be undefined there, we saturate.
    if pps.is_finite() && pps > 0.0 {
        pps.min(i32::MAX as f64) as u64
    } else {
        0
    }
}

impl RateLimiter {
    /// The limiter for messages of `size` bytes, or a one-line reason why this rate cannot be
    /// limited with bursts of `burst` (fewer than one burst per second: perftest divides by
    /// zero there and, after the first burst, never sends again).
    pub fn new(rate: f64, unit: RateUnit, size: u64, burst: u32) -> Result<RateLimiter, String> {
        let burst = u64::from(burst.max(1));
        let pps = packets_per_sec(rate, unit, size);
        let bursts = pps / burst;
        if bursts == 0 {
            return Err(format!(
                "a rate of {rate} ({}) is {pps} messages of {size} bytes per second, less than one burst of {burst}; \
                 give a smaller --burst_size (at most {pps}) or a higher --rate_limit",
                unit.flag()
            ));
        }
        // perftest: gap_time = 1e6 / bursts [usec], gap_cycles = cpu_mhz * gap_time (truncated).
        let gap_us = 1_000_000.0 / bursts as f64;
        let gap_ticks = (gap_us * (TICKS_PER_SEC as f64 / 1_000_000.0)) as u64;
        Ok(RateLimiter { burst, gap_ticks })
    }
}

/// The limiter's state in a loop: whether a burst is being sent, how much of it, and when the
/// next one may start.
#[derive(Clone, Copy, Debug)]
pub struct Bursts {
    lim: RateLimiter,
    sending: bool,
    sent: u64,
    deadline: u64,
}

impl Bursts {
    pub fn new(lim: RateLimiter) -> Self {
        Bursts { lim, sending: false, sent: 0, deadline: 0 }
    }

    /// Before posting (perftest checks this per QP): true if posting is allowed now. Starts a
    /// new burst when the gap has passed.
    #[inline]
    pub fn may_post(&mut self, now: impl FnOnce() -> u64) -> bool {
        if self.sending {
            return true;
        }
        let t = now();
        if self.deadline > t {
            return false;
        }
        self.deadline = t.saturating_add(self.lim.gap_ticks);
        self.sending = true;
        self.sent = 0;
        true
    }

    /// Inside a burst: true while it is not complete.
    #[inline]
    pub fn sending(&self) -> bool {
        self.sending
    }

    /// Count `n` posted messages; the burst ends once it reaches the burst size.
    #[inline]
    pub fn posted(&mut self, n: u64) {
        self.sent += n;
        if self.sent >= self.lim.burst {
            self.sending = false;
        }
    }

    /// Waiting out a gap (no burst in progress).
    pub fn in_gap(&self) -> bool {
        !self.sending
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn gap_follows_perftest_arithmetic() {
        // 50 MiB/s of 64 KiB messages: 800 pps; bursts of 128 → 6 per second (768 pps).
        let l = RateLimiter::new(50.0, RateUnit::MegaBytes, 65536, 128).unwrap();
        assert_eq!(l.burst, 128);
        assert_eq!(l.gap_ticks, 166_666_666);
        // 1 Gb/s of 1000-byte messages: 125000 pps; bursts of 100 → 1250/s → 800 µs.
        let l = RateLimiter::new(1.0, RateUnit::GigaBits, 1000, 100).unwrap();
        assert_eq!(l.gap_ticks, 800_000);
        // packets: 1000 pps, bursts of 10 → 100/s → 10 ms.
        let l = RateLimiter::new(1000.0, RateUnit::Packets, 65536, 10).unwrap();
        assert_eq!(l.gap_ticks, 10_000_000);
        // The pps is truncated first: 2.9 pps with bursts of 1 → 2 bursts per second.
        let l = RateLimiter::new(2.9, RateUnit::Packets, 8, 1).unwrap();
        assert_eq!(l.gap_ticks, 500_000_000);
    }

    #[test]
    fn fewer_than_one_burst_per_second_is_refused() {
        let e = RateLimiter::new(100.0, RateUnit::Packets, 64, 128).unwrap_err();
        assert!(e.contains("--burst_size") && e.contains("at most 100"), "{e}");
        assert!(RateLimiter::new(f64::NAN, RateUnit::Packets, 64, 1).is_err());
        // Huge rates saturate instead of overflowing.
        let l = RateLimiter::new(1e300, RateUnit::GigaBits, 2, 1).unwrap();
        assert_eq!(l.gap_ticks, 0);
    }

    #[test]
    fn bursts_alternate_with_gaps() {
        let lim = RateLimiter { burst: 4, gap_ticks: 100 };
        let mut b = Bursts::new(lim);
        assert!(b.may_post(|| 1000));
        b.posted(2);
        assert!(b.sending() && b.may_post(|| 5000));
        b.posted(2);
        assert!(b.in_gap());
        // The gap counts from the start of the burst (t=1000).
        assert!(!b.may_post(|| 1099));
        assert!(b.may_post(|| 1100));
        b.posted(8); // a post list larger than the burst still ends it
        assert!(!b.may_post(|| 1150));
        assert!(b.may_post(|| 1200));
    }
}
