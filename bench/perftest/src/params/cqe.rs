//! `--cqe_poll` and `--disable_dynamic_polling`: the CQE poll batch the header reports.

use super::{Params, TestKind, TestType, Verb};

/// CQEs per poll of a 6.27+ perftest, which adapts the batch to the completion rate
/// ("dynamic") unless `--disable_dynamic_polling` or `--cqe_poll` is given, and turns that off
/// (with a note) for short iteration runs, duplex send / write-with-immediate and every latency
/// test. Thousands of QPs with large messages then poll 64 at a time unless `--cqe_poll` says
/// otherwise. rperftest's engines poll their own way; this decides what the header says, and the
/// notes are printed by the 6.29 persona only.
pub(super) fn polling(p: &mut Params) {
    /// perftest's fixed batch, and the batch and thresholds of its "intense" case.
    const BATCH: u16 = 16;
    const BATCH_INTENSE: u16 = 64;
    const INTENSE_QPS: u32 = 2048;
    const INTENSE_SIZE: u64 = 8192;
    let notes = p.persona.parser_notes();
    let bw = p.kind == TestKind::Bw;
    let user_batch = p.buf.cqe_poll.is_some();
    p.buf.dynamic_cqe_poll = !p.buf.disable_dynamic_polling && !user_batch;
    if !bw || (p.test_type == TestType::Iterations && p.iters < 3000) || (p.duplex && matches!(p.verb, Verb::Send | Verb::WriteImm)) {
        if notes {
            p.notice_out("Disabling dynamic polling\n");
        }
        p.buf.dynamic_cqe_poll = false;
    }
    p.buf.cqe_poll_batch = p.buf.cqe_poll.unwrap_or(BATCH);
    if !p.buf.dynamic_cqe_poll && !user_batch && p.num_qps > INTENSE_QPS && p.size > INTENSE_SIZE {
        if notes {
            p.notice_out(&format!("Increasing CQE polling batch to {BATCH_INTENSE}\n"));
        }
        p.buf.cqe_poll_batch = BATCH_INTENSE;
    }
}
