//! Buffer addresses: perftest's cycling of local and remote addresses in BW tests.
//!
//! If the message fits twice into the cycle buffer, each post moves both the local SGE and the
//! remote address forward by `stride` (the size rounded up to the cache line) and wraps back to
//! the base after `cycle_buffer / stride` posts; larger messages always use the base. All remote
//! accesses therefore stay inside `[base, base + max(size, cycle_buffer))`.

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct AddrCycle {
    local_base: u64,
    remote_base: u64,
    stride: u64,
    /// Number of distinct positions (1 = no cycling).
    slots: u64,
    pos: u64,
}

impl AddrCycle {
    pub fn new(local_base: u64, remote_base: u64, size: u64, cycle_buffer: u64, cache_line: u64) -> Self {
        let cache_line = cache_line.max(1);
        let stride = size.div_ceil(cache_line).max(1) * cache_line;
        let slots = if size <= cycle_buffer / 2 { (cycle_buffer / stride).max(1) } else { 1 };
        AddrCycle { local_base, remote_base, stride, slots, pos: 0 }
    }

    /// Current (local, remote) addresses.
    #[inline]
    pub fn current(&self) -> (u64, u64) {
        let off = self.pos * self.stride;
        (self.local_base + off, self.remote_base + off)
    }

    /// Move to the next position (wrapping).
    #[inline]
    pub fn advance(&mut self) {
        self.pos += 1;
        if self.pos == self.slots {
            self.pos = 0;
        }
    }

    pub fn slots(&self) -> u64 {
        self.slots
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn small_messages_cycle_within_the_buffer() {
        let mut c = AddrCycle::new(0x1000, 0x9000, 2, 4096, 64);
        assert_eq!(c.slots(), 64);
        let mut seen = Vec::new();
        for _ in 0..130 {
            seen.push(c.current());
            c.advance();
        }
        assert_eq!(seen[0], (0x1000, 0x9000));
        assert_eq!(seen[1], (0x1040, 0x9040));
        assert_eq!(seen[63], (0x1000 + 63 * 64, 0x9000 + 63 * 64));
        assert_eq!(seen[64], (0x1000, 0x9000));
        // every remote access stays within [base, base + cycle_buffer)
        assert!(seen.iter().all(|&(_, r)| r + 2 <= 0x9000 + 4096));
    }

    #[test]
    fn large_messages_use_the_base() {
        let mut c = AddrCycle::new(0, 1 << 20, 65536, 4096, 64);
        assert_eq!(c.slots(), 1);
        c.advance();
        assert_eq!(c.current(), (0, 1 << 20));
    }

    #[test]
    fn stride_rounds_up_to_cache_line() {
        let mut c = AddrCycle::new(0, 0, 100, 4096, 64);
        c.advance();
        assert_eq!(c.current(), (128, 128));
        assert_eq!(c.slots(), 32);
    }
}
