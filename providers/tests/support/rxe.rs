//! Shared helpers for the rxe integration tests: the mock kernel's ring byte access and the
//! RC QP they create.

use providers::rxe::queue::RingAccess;
use uverbs::provider::{QpCaps, QpInitAttr, QpType};

/// Mock-kernel byte access. SAFETY (for both): the mock touches only slots the ring protocol
/// gives it (between consumer and producer for WQEs; its own free slots for CQEs), so the
/// provider never accesses the same bytes at the same time.
pub fn rd<R: RingAccess>(r: &R, off: usize, out: &mut [u8]) {
    // SAFETY: see above.
    unsafe { r.read_bytes(off, out) }
}
pub fn wr_bytes<R: RingAccess>(r: &R, off: usize, data: &[u8]) {
    // SAFETY: see above.
    unsafe { r.write_bytes(off, data) }
}

/// An RC QP of 4 send and 4 receive WRs, one SGE each, no inline data.
pub fn rc_attr(uses_srq: bool) -> QpInitAttr {
    QpInitAttr {
        qp_type: QpType::Rc,
        caps: QpCaps {
            max_send_wr: 4,
            max_recv_wr: 4,
            max_send_sge: 1,
            max_recv_sge: 1,
            max_inline_data: 0,
        },
        sq_sig_all: false,
        uses_srq,
    }
}
