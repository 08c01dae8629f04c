//! Queue sizing, as the kernel's bnxt_re driver expects the user buffers it is handed (it
//! derives the same sizes from the same requested capacities): SQ with its PSN search area, RQ,
//! SRQ, CQ. Pure arithmetic.

use super::hw::*;

/// libbnxt_re's power-of-two round-up: at least 2.
pub fn roundup_pow2(v: u32) -> u32 {
    if v <= 1 {
        2
    } else {
        v.checked_next_power_of_two().unwrap_or(1 << 31)
    }
}

fn align(v: u32, to: u32) -> u32 {
    v.div_ceil(to) * to
}

/// Bytes of a WQE with `nsge` SGEs (header + SGEs).
pub fn wqe_bytes(nsge: u32) -> u32 {
    SLOT as u32 * nsge + SQE_HDR as u32
}

/// The send queue.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SqGeom {
    /// Software entries (WR ids and PSN entries): a power of two.
    pub nswr: u32,
    /// Ring length in 16-byte slots (without the PSN area).
    pub depth: u32,
    /// Slots kept free (static mode's delta).
    pub diff: u32,
    /// Bytes of a full-size WQE.
    pub esize: u32,
    /// Slots per doorbell index step (8 in static mode, 1 in variable mode).
    pub max_slots: u32,
    /// Bytes of one PSN search entry.
    pub psns_size: u32,
    /// Bytes of the whole buffer (ring + PSN area), rounded to the page size.
    pub bytes: usize,
    /// The inline capacity the queue actually has (`max_inline_data` after rounding).
    pub max_inline: u32,
}

impl SqGeom {
    pub fn new(
        max_send_wr: u32,
        max_send_sge: u32,
        max_inline: u32,
        variable: bool,
        gen_p5: bool,
        pg_size: u32,
    ) -> SqGeom {
        let diff = if variable { 0 } else { FULL_FLAG_DELTA };
        let nswr = roundup_pow2(max_send_wr.saturating_add(1 + diff));
        let nsge = max_send_sge + (max_send_sge & 1);
        let hdr = SQE_HDR as u32;
        let mut wqe = wqe_bytes(nsge);
        let ils = align(max_inline, hdr);
        if ils != 0 {
            wqe = align(wqe.max(hdr + ils), hdr);
        }
        if !variable {
            wqe = wqe_bytes(STATIC_SGES);
        }
        let max_inline = if max_inline != 0 { wqe - hdr } else { 0 };
        let depth = nswr.saturating_mul(wqe) / SLOT as u32;
        let psns_size = if gen_p5 { PSNS_EXT_SIZE } else { PSNS_SIZE } as u32;
        let psn_depth = (nswr as usize * psns_size as usize).div_ceil(SLOT);
        let bytes = (depth as usize + psn_depth) * SLOT;
        SqGeom {
            nswr,
            depth,
            diff: diff * wqe / SLOT as u32,
            esize: wqe,
            max_slots: if variable { 1 } else { wqe / SLOT as u32 },
            psns_size,
            bytes: bytes.div_ceil(pg_size as usize) * pg_size as usize,
            max_inline,
        }
    }
    /// Byte offset of the PSN search entry of software entry `i`.
    pub fn psns_off(&self, i: u32) -> usize {
        self.depth as usize * SLOT + i as usize * self.psns_size as usize
    }
}

/// The receive queue.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RqGeom {
    pub nrwr: u32,
    pub depth: u32,
    /// Slots each receive WQE takes (and the doorbell index step).
    pub max_slots: u32,
    pub bytes: usize,
}

impl RqGeom {
    pub fn new(max_recv_wr: u32, max_recv_sge: u32, variable: bool, pg_size: u32) -> RqGeom {
        let nrwr = roundup_pow2(max_recv_wr.saturating_add(1));
        let nsge = max_recv_sge + (max_recv_sge & 1);
        let wqe = if variable {
            wqe_bytes(nsge)
        } else {
            wqe_bytes(STATIC_SGES)
        };
        let depth = nrwr.saturating_mul(wqe) / SLOT as u32;
        let bytes = depth as usize * SLOT;
        RqGeom {
            nrwr,
            depth,
            max_slots: wqe / SLOT as u32,
            bytes: bytes.div_ceil(pg_size as usize) * pg_size as usize,
        }
    }
}

/// The shared receive queue: fixed 128-byte entries.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SrqGeom {
    pub depth: u32,
    pub bytes: usize,
}

impl SrqGeom {
    pub fn new(max_wr: u32, pg_size: u32) -> SrqGeom {
        let depth = roundup_pow2(max_wr.saturating_add(1));
        let bytes = depth as usize * SRQE_SIZE;
        SrqGeom {
            depth,
            bytes: bytes.div_ceil(pg_size as usize) * pg_size as usize,
        }
    }
}

/// The CQ ring: `None` when `entries` is 0 or beyond the device's depth.
pub fn cq_depth(entries: u32, max_cqd: u32) -> Option<u32> {
    if entries == 0 || entries > max_cqd {
        return None;
    }
    Some(roundup_pow2(entries + 1).min(max_cqd + 1))
}

/// Slots a send WQE occupies in variable mode (its header field in either mode): header plus
/// SGEs, or header plus the inline bytes rounded to slots.
pub fn send_wqe_slots(nsge: usize, inline_len: Option<u32>) -> u32 {
    match inline_len {
        Some(l) => (align(l, SLOT as u32) + SQE_HDR as u32) / SLOT as u32,
        None => wqe_bytes(nsge as u32) / SLOT as u32,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn static_sq_of_perftest_defaults() {
        // perftest's -t 128, one SGE, inline 0 on a Whitney+ chip in static mode.
        let g = SqGeom::new(128, 1, 0, false, false, 4096);
        assert_eq!(g.nswr, 512);
        assert_eq!(g.esize, 128);
        assert_eq!(g.depth, 512 * 8);
        assert_eq!(g.diff, 0x80 * 8);
        assert_eq!(g.max_slots, 8);
        assert_eq!(g.bytes, (512 * 128 + 512 * 8usize).div_ceil(4096) * 4096);
        assert_eq!(g.max_inline, 0);
        assert_eq!(SqGeom::new(128, 1, 1, false, true, 4096).max_inline, 96);
    }

    #[test]
    fn variable_sq_rounds_inline_to_headers() {
        let g = SqGeom::new(63, 1, 40, true, true, 4096);
        assert_eq!(g.nswr, 64);
        assert_eq!(g.esize, 96, "32-byte header + 64 (40 rounded to 32)");
        assert_eq!(g.max_inline, 64);
        assert_eq!((g.max_slots, g.diff, g.psns_size), (1, 0, 16));
    }

    #[test]
    fn rq_srq_cq() {
        let r = RqGeom::new(512, 1, false, 4096);
        assert_eq!((r.nrwr, r.max_slots, r.depth), (1024, 8, 8192));
        assert_eq!(
            RqGeom::new(3, 3, true, 4096).max_slots,
            6,
            "3 SGEs rounded to 4, plus the header"
        );
        assert_eq!(SrqGeom::new(1000, 4096).depth, 1024);
        assert_eq!(cq_depth(1, 100), Some(2));
        assert_eq!(cq_depth(100, 100), Some(101));
        assert_eq!(cq_depth(0, 100), None);
        assert_eq!(cq_depth(101, 100), None);
        assert_eq!(roundup_pow2(u32::MAX), 1 << 31);
    }

    #[test]
    fn posted_slots() {
        assert_eq!(send_wqe_slots(1, None), 3);
        assert_eq!(send_wqe_slots(0, Some(0)), 2);
        assert_eq!(send_wqe_slots(1, Some(17)), 4);
    }
}
