//! The state of a QP that both its posts and CQ polling touch: the rings' indices and software
//! entries (under a lock each post and each poll takes, as libbnxt_re's queue lock), the QP's
//! state and its SRQ.

use std::sync::atomic::{AtomicBool, AtomicU8, Ordering};
use std::sync::{Arc, Mutex, RwLock};

use uverbs::provider::{QpState, QpType};
use uverbs::wr::WcOpcode;

use super::srq::SrqShared;

/// One posted request as the poller needs it.
#[derive(Clone, Copy, Debug, Default)]
pub(super) struct SwEntry {
    pub wrid: u64,
    pub bytes: u32,
    pub slots: u32,
    pub sig: bool,
    pub opcode: WcOpcode,
}

/// Indices of one ring: `head`/`tail` in slots (consumer/producer), `start`/`last` the
/// software entries (next to fill / oldest outstanding).
pub(super) struct Ring {
    pub head: u32,
    pub tail: u32,
    depth: u32,
    diff: u32,
    pub start: u32,
    last: u32,
    entries: Vec<SwEntry>,
    /// The producer's epoch: flips each time `tail` wraps (gen P7 doorbells carry it).
    pub epoch: bool,
}

impl Ring {
    pub fn new(depth: u32, diff: u32, n: u32) -> Ring {
        Ring {
            head: 0,
            tail: 0,
            depth,
            diff,
            start: 0,
            last: 0,
            entries: vec![SwEntry::default(); n as usize],
            epoch: false,
        }
    }
    /// libbnxt_re's full test: fewer than `slots + diff` free slots (an empty ring reads as
    /// all free).
    pub fn is_full(&self, slots: u32) -> bool {
        let mut avail = self.head as i64 - self.tail as i64;
        if self.head <= self.tail {
            avail += self.depth as i64;
        }
        avail <= (slots + self.diff) as i64
    }
    pub fn is_empty(&self) -> bool {
        self.head == self.tail
    }
    pub fn push(&mut self, e: SwEntry) {
        self.entries[self.start as usize] = e;
        self.start = (self.start + 1) % self.entries.len() as u32;
        let t = self.tail + e.slots;
        if t >= self.depth {
            self.epoch = !self.epoch;
        }
        self.tail = t % self.depth;
    }
    /// The oldest outstanding entry.
    pub fn oldest(&self) -> SwEntry {
        self.entries[self.last as usize]
    }
    /// Index of the oldest outstanding entry.
    pub fn last(&self) -> u32 {
        self.last
    }
    /// Retire the oldest entry: the consumer index moves past its slots.
    pub fn retire(&mut self) -> SwEntry {
        let e = self.oldest();
        self.last = (self.last + 1) % self.entries.len() as u32;
        self.head = (self.head + e.slots) % self.depth;
        e
    }
    /// Back to empty. The epoch stays as it is (rdma-core 50 does not reset it either).
    pub fn reset(&mut self) {
        self.head = 0;
        self.tail = 0;
    }
}

/// What CQ polling needs of a QP.
pub struct QpShared {
    pub qpid: u32,
    pub qp_type: QpType,
    /// Software entries of the SQ (a power of two): a send completion's consumer index is
    /// masked with `nswr - 1`.
    pub nswr: u32,
    pub(super) sq: Mutex<Ring>,
    pub(super) rq: Option<Mutex<Ring>>,
    pub(super) srq: RwLock<Option<Arc<SrqShared>>>,
    /// `enum ib_qp_state`: what the last modify set, or ERR once a completion said so.
    pub(super) state: AtomicU8,
    /// Cleared when the QP is destroyed: a flush list holding it skips it.
    pub(super) alive: AtomicBool,
}

impl QpShared {
    pub(super) fn set_error(&self) {
        self.state.store(QpState::Err as u8, Ordering::Release);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ring_fullness_keeps_the_delta() {
        let mut r = Ring::new(64, 16, 8);
        assert!(!r.is_full(8));
        for _ in 0..4 {
            r.push(SwEntry {
                slots: 8,
                ..Default::default()
            });
        }
        assert_eq!(r.tail, 32);
        assert!(!r.is_full(8), "32 free > 8 + 16");
        r.push(SwEntry {
            slots: 8,
            ..Default::default()
        });
        assert!(r.is_full(8), "24 free <= 8 + 16");
        r.retire();
        assert_eq!((r.head, r.last()), (8, 1));
        assert!(!r.is_empty());
        assert!(!r.epoch);
        for _ in 0..3 {
            r.push(SwEntry {
                slots: 8,
                ..Default::default()
            });
        }
        assert_eq!(
            (r.tail, r.epoch),
            (0, true),
            "the tail wrapped: the epoch flips"
        );
    }
}
