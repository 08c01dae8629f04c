//! An SRQ's ring state shared between the SRQ (posting) and CQ polling (completing): the
//! entries' work request ids and the free list linked through each WQE's next segment. Its own
//! module so that the registry and the CQ reach it without reaching SRQ creation.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Mutex;

use uverbs::wr::{WcStatus, WorkCompletion};

use super::cqe;
use super::mem::DmaBuf;
use super::scatter::scatter_into;

/// SRQ state shared with CQ polling (which returns completed entries to the free list).
pub struct SrqShared {
    pub srqn: u32,
    /// An XRC SRQ (CREATE_XSRQ).
    pub(super) xrc: bool,
    pub(super) buf: DmaBuf,
    pub(super) cnt: u32,
    pub(super) shift: u32,
    pub(super) wrid: Box<[AtomicU64]>,
    /// Free list: head (next to post) and tail (last free entry); entries linked through
    /// `next_wqe_index` in each WQE's first segment.
    pub(super) state: Mutex<(u32, u32)>,
}

impl SrqShared {
    pub(super) fn next_of(&self, i: u32) -> u32 {
        let mut b = [0u8; 2];
        self.buf.read(((i as usize) << self.shift) + 2, &mut b);
        u16::from_be_bytes(b) as u32 & (self.cnt - 1)
    }
    pub(super) fn set_next(&self, i: u32, next: u32) {
        self.buf.write(
            ((i as usize) << self.shift) + 2,
            &(next as u16).to_be_bytes(),
        );
    }
    /// A receive completed from this SRQ (basic or XRC): the work request id from the entry the
    /// CQE's WQE counter names (masked: the counter comes from the device), the payload the
    /// device scattered into the CQE copied out, and the entry back on the free list.
    pub(super) fn complete_recv(&self, c: &cqe::CqeInfo, raw: &[u8; 64], wc: &mut WorkCompletion) {
        let idx = c.wqe_counter as u32 & (self.cnt - 1);
        wc.wr_id = self.wrid[idx as usize].load(Ordering::Relaxed);
        if c.inline_scatter_32 && wc.status == WcStatus::Success {
            // The entry's scatter list after its 16-byte next segment, on the stack as for a
            // QP's receive queue (no allocation per completion; 31 SGEs cover any 32 bytes).
            let mut slot = [0u8; 512];
            let n = ((1usize << self.shift) - 16).min(slot.len());
            self.buf.read(((idx as usize) << self.shift) + 16, &mut slot[..n]);
            wc.status = scatter_into(&slot[..n], raw, wc.byte_len);
        }
        self.free(idx);
    }

    pub(super) fn free(&self, idx: u32) {
        let mut st = self.state.lock().unwrap_or_else(|e| e.into_inner());
        self.set_next(st.1, idx);
        st.1 = idx;
    }
}
