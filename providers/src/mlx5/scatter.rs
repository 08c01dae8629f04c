//! The payload a CQE carries inline (up to 32 bytes, `inline_scatter_32`) copied into the
//! buffers a receive WQE names: shared by the QP's receive queue and the SRQ.

use uverbs::wr::WcStatus;

use super::wqe;

/// Copy up to 32 bytes of payload carried in the CQE into the receive buffers named by the
/// receive WQE's scatter list. LOC_LEN_ERR if they do not fit.
pub(super) fn scatter_into(slot: &[u8], raw: &[u8; 64], byte_len: u32) -> WcStatus {
    let mut left = &raw[..(byte_len as usize).min(32)];
    for s in wqe::recv_scatter(slot) {
        if left.is_empty() {
            break;
        }
        let n = (s.length as usize).min(left.len());
        // SAFETY: the address and length come from a receive request the application posted
        // (registered memory it promised to keep valid until completion), as with any DMA target.
        unsafe { std::ptr::copy_nonoverlapping(left.as_ptr(), s.addr as usize as *mut u8, n) };
        left = &left[n..];
    }
    if left.is_empty() {
        WcStatus::Success
    } else {
        WcStatus::LocLenErr
    }
}
