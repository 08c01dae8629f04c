//! Two QPs on one bfreg, posting from two threads: every doorbell / BlueFlame write sequence
//! (wc_start, its stores, flush) must stay together and in one half of the register, and the
//! halves must alternate across the two QPs' rings exactly as one shared toggle dictates (the
//! bfreg lock in `ring_sq`).

mod support;

use support::mlx5::*;
use providers::mlx5::uar::UarEvent;
use uverbs::provider::{Provider, QpCaps, QpCreated};
use uverbs::wr::{SendWr, Sge, WrOpcode};

#[test]
fn two_threads_on_one_bfreg_keep_the_toggle_and_their_stores_together() {
    let ctx = context(true);
    let attr = rc_qp_attr(QpCaps {
        max_send_wr: 128,
        max_recv_wr: 1,
        max_send_sge: 1,
        max_recv_sge: 1,
        max_inline_data: 0,
    });
    const BFREG: u32 = 1;
    let mut qps = Vec::new();
    for (handle, qpn) in [(2u32, 0x100u32), (3, 0x101)] {
        let (prep, _) = ctx.prepare_qp(&attr).unwrap();
        let mut resp = vec![0u8; 40];
        resp[..4].copy_from_slice(&BFREG.to_ne_bytes());
        let core = QpCreated { handle, qpn, caps: attr.caps };
        qps.push(ctx.finish_qp(prep, &attr, &core, &resp).unwrap());
    }
    let base = ctx.plan.bfreg_offset(BFREG).unwrap();
    let half = ctx.plan.toggle();
    ctx.uar().take();

    const PER_QP: u64 = 100;
    let data = vec![0u8; 64];
    std::thread::scope(|s| {
        for qp in qps.iter_mut() {
            let ctx = &ctx;
            let data = &data;
            s.spawn(move || {
                let sg = [Sge { addr: data.as_ptr() as u64, length: 64, lkey: 1 }];
                for i in 0..PER_QP {
                    let mut wr = SendWr::new(i, WrOpcode::RdmaWrite, &sg);
                    wr.remote.addr = 0x1000;
                    wr.remote.rkey = 2;
                    // SAFETY: the SGE points into `data`, alive for the whole scope; the
                    // recording UAR never reads it (the WQE builder does not copy non-inline).
                    unsafe { ctx.post_send(qp, std::slice::from_ref(&wr)) }.unwrap();
                    std::thread::yield_now();
                }
            });
        }
    });

    let ev = ctx.uar().take();
    let mut rings = 0u64;
    let mut i = 0;
    while i < ev.len() {
        assert_eq!(ev[i], UarEvent::WcStart, "event {i}: a ring starts with wc_start");
        let want = base + (rings as usize % 2) * half;
        let mut j = i + 1;
        while let UarEvent::Store { offset, .. } = &ev[j] {
            assert!(
                (want..want + half).contains(offset),
                "ring {rings}: store at {offset:#x} outside the half at {want:#x}"
            );
            j += 1;
        }
        assert!(j > i + 1, "ring {rings} has no store");
        assert_eq!(ev[j], UarEvent::Flush, "ring {rings}: stores end with the flush");
        rings += 1;
        i = j + 1;
    }
    assert_eq!(rings, 2 * PER_QP);
}
