//! Microbenchmark of the rxe post/poll path in user space: encode a send WQE into the SQ ring,
//! publish it, and poll the CQ, over heap rings (no kernel, no syscall: the doorbell is a no-op
//! and a "kernel" loop consumes the SQ and produces one CQE per `cq_mod` sends, like a BW test).
//! Prints ns per post; under valgrind it gives instructions per post:
//!
//!   cargo build --release -p providers --example rxe_hotpath
//!   valgrind --tool=callgrind --callgrind-out-file=cg.out target/release/examples/rxe_hotpath 200000
//!   callgrind_annotate cg.out | head -30
//!
//! docs/benchmarks.md records the figures.

use std::hint::black_box;
use std::time::Instant;

use providers::rxe::cqe::encode_wc;
use providers::rxe::layout::{QB_CONSUMER_INDEX, QB_PRODUCER_INDEX, WC_SIZE};
use providers::rxe::queue::{HeapRing, RingAccess};
use providers::rxe::wqe::NoInline;
use providers::rxe::{RxeCq, RxeQp};
use uverbs::provider::{QpCaps, QpInitAttr, QpState, QpType};
use uverbs::wr::{RemoteAddr, SendFlags, SendWr, Sge, WorkCompletion, WrOpcode};

fn main() {
    let n: u64 = std::env::args().nth(1).and_then(|a| a.parse().ok()).unwrap_or(2_000_000);
    let cq_mod = 100u64;
    // What rxe on 6.1 creates for ib_write_bw: SQ of 256 slots x 256 B, CQ of 256 x 128 B.
    let (sq, cq) = (HeapRing::new(8, 256), HeapRing::new(7, 256));
    let attr = QpInitAttr {
        qp_type: QpType::Rc,
        caps: QpCaps { max_send_wr: 128, max_recv_wr: 0, max_send_sge: 1, max_recv_sge: 1, max_inline_data: 0 },
        sq_sig_all: false,
        uses_srq: false,
    };
    let mut qp = RxeQp::from_rings(1, 17, &attr, &attr.caps, sq.clone(), None).expect("qp");
    qp.set_state(QpState::Rts);
    let mut cqo = RxeCq::from_ring(2, cq.clone()).expect("cq");
    let sq_mask = sq.load_u32(providers::rxe::layout::QB_INDEX_MASK);
    let cq_mask = cq.load_u32(providers::rxe::layout::QB_INDEX_MASK);
    let sge = [Sge { addr: 0x10_0000, length: 64, lkey: 0x55 }];
    let mut wcs = [WorkCompletion::default(); 16];
    let (mut cq_prod, mut done) = (0u32, 0u64);
    let t = Instant::now();
    for i in 0..n {
        let mut wr = SendWr::new(i, WrOpcode::RdmaWrite, &sge);
        wr.remote = RemoteAddr { addr: 0x20_0000 + (i & 63) * 64, rkey: 0x66 };
        if i % cq_mod == cq_mod - 1 {
            wr.flags = SendFlags::SIGNALED;
        }
        qp.post_send_with(std::slice::from_ref(&wr), &NoInline, |h| {
            black_box(h);
            Ok(())
        })
        .expect("post");
        // The "kernel": consume everything, complete the signaled WQE.
        let p = sq.load_u32(QB_PRODUCER_INDEX);
        sq.store_u32(QB_CONSUMER_INDEX, p & sq_mask);
        if i % cq_mod == cq_mod - 1 {
            let b: [u8; WC_SIZE] = encode_wc(&WorkCompletion { wr_id: i, ..Default::default() }, 1);
            let off = cq.slot_offset(cq_prod);
            // SAFETY: the slot at the producer index is the kernel's (mock's) to write: the CQ
            // has 255 usable slots and at most one completion is outstanding here.
            unsafe { cq.write_bytes(off, &b) };
            cq_prod = (cq_prod + 1) & cq_mask;
            cq.store_u32(QB_PRODUCER_INDEX, cq_prod);
        }
        done += cqo.poll(&mut wcs).expect("poll") as u64;
    }
    let el = t.elapsed();
    println!(
        "{n} posts, {done} completions polled: {:.1} ns/post (user space only, no doorbell syscall)",
        el.as_nanos() as f64 / n as f64
    );
}
