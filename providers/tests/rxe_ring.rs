//! The rxe data path over heap rings with a mock kernel: posting, doorbells, completions,
//! wraparound, full queues, hostile indices, and a threaded run.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use providers::rxe::layout::*;
use providers::rxe::queue::{HeapRing, RingAccess};
use providers::rxe::wqe::NoInline;
use providers::rxe::{RxeCq, RxeQp, RxeSrq};
use uverbs::provider::{QpCaps, QpInitAttr, QpState, QpType};
use uverbs::wr::{
    wc_flags, RecvWr, RemoteAddr, SendFlags, SendWr, Sge, WcOpcode, WcStatus, WorkCompletion,
    WrOpcode,
};

mod support;
use support::rxe::{rc_attr, rd, wr_bytes};

fn u32_at(b: &[u8], off: usize) -> u32 {
    u32::from_ne_bytes(b[off..off + 4].try_into().unwrap())
}
fn u64_at(b: &[u8], off: usize) -> u64 {
    u64::from_ne_bytes(b[off..off + 8].try_into().unwrap())
}

/// The kernel's side of one QP and its CQ, reduced to ring bookkeeping.
struct MockKernel {
    sq: HeapRing,
    rq: HeapRing,
    cq: HeapRing,
    qpn: u32,
    sq_cons: u32,
    rq_cons: u32,
    cq_prod: u32,
    /// Completions the kernel had to drop because the CQ was full (docs/rxe-kernel.md,
    /// "E11 CQ overflow drops completions").
    dropped: u32,
}

impl MockKernel {
    fn mask(r: &HeapRing) -> u32 {
        r.load_u32(QB_INDEX_MASK)
    }

    fn push_cqe(&mut self, wc: &WorkCompletion) {
        let mask = Self::mask(&self.cq);
        if (self.cq_prod + 1) & mask == self.cq.load_u32(QB_CONSUMER_INDEX) {
            self.dropped += 1;
            return;
        }
        let b = providers::rxe::cqe::encode_wc(wc, 0);
        wr_bytes(&self.cq, self.cq.slot_offset(self.cq_prod), &b);
        self.cq_prod = (self.cq_prod + 1) & mask;
        // Release: the CQE bytes before the index, like smp_store_release in the kernel.
        self.cq.store_u32(QB_PRODUCER_INDEX, self.cq_prod);
    }

    /// Run the "requester": consume every published SQ WQE, complete the signaled ones.
    /// Returns the WQEs it saw, as (wr_id, opcode, flags, length).
    fn run_sq(&mut self) -> Vec<(u64, u32, u32, u32)> {
        let mut seen = Vec::new();
        let mask = Self::mask(&self.sq);
        // Acquire, then mask what the user wrote, as the kernel does.
        let prod = self.sq.load_u32(QB_PRODUCER_INDEX) & mask;
        while self.sq_cons != prod {
            let off = self.sq.slot_offset(self.sq_cons);
            let mut w = [0u8; SEND_WQE_SIZE];
            rd(&self.sq, off, &mut w);
            let (wr_id, op, flags) = (
                u64_at(&w, WR_ID),
                u32_at(&w, WR_OPCODE),
                u32_at(&w, WR_SEND_FLAGS),
            );
            let len = u32_at(&w, WQE_DMA + DMA_LENGTH);
            assert_eq!(
                u32_at(&w, WQE_DMA + DMA_RESID),
                len,
                "resid must equal length (docs/rxe-kernel.md, E4)"
            );
            assert_eq!(u32_at(&w, WQE_STATE), 0, "state must be 'posted'");
            assert_eq!(u32_at(&w, WQE_MASK), 0, "slot must be re-initialised");
            // The kernel writes its bookkeeping back into the slot (docs/rxe-kernel.md,
            // "E4 kernel-owned WQE fields").
            let mut back = [0u8; 8];
            back[..4].copy_from_slice(&2u32.to_ne_bytes());
            back[4..].copy_from_slice(&0x11u32.to_ne_bytes());
            wr_bytes(&self.sq, off + WQE_STATE, &back[..4]);
            wr_bytes(&self.sq, off + WQE_MASK, &back[4..]);
            wr_bytes(&self.sq, off + WQE_DMA + DMA_RESID, &0u32.to_ne_bytes());
            seen.push((wr_id, op, flags, len));
            self.sq_cons = (self.sq_cons + 1) & mask;
            self.sq.store_u32(QB_CONSUMER_INDEX, self.sq_cons);
            if flags & SendFlags::SIGNALED.0 != 0 {
                let opcode = match op {
                    0 | 1 => WcOpcode::RdmaWrite,
                    2 | 3 => WcOpcode::Send,
                    4 => WcOpcode::RdmaRead,
                    5 => WcOpcode::CompSwap,
                    _ => WcOpcode::FetchAdd,
                };
                let wc = WorkCompletion {
                    wr_id,
                    opcode,
                    byte_len: len,
                    qp_num: self.qpn,
                    ..Default::default()
                };
                self.push_cqe(&wc);
            }
        }
        seen
    }

    /// Deliver `n` incoming SENDs with immediate data into posted receives.
    fn deliver(&mut self, n: usize) -> usize {
        let mask = Self::mask(&self.rq);
        let mut done = 0;
        while done < n {
            let prod = self.rq.load_u32(QB_PRODUCER_INDEX) & mask;
            if self.rq_cons == prod {
                break; // RNR
            }
            let mut w = [0u8; RECV_WQE_SIZE + SGE_SIZE];
            rd(&self.rq, self.rq.slot_offset(self.rq_cons), &mut w);
            let wc = WorkCompletion {
                wr_id: u64_at(&w, RECV_WR_ID),
                opcode: WcOpcode::Recv,
                byte_len: u32_at(&w, RECV_DMA + DMA_LENGTH),
                imm_data: u32::from_ne_bytes([0xde, 0xad, 0xbe, 0xef]),
                qp_num: self.qpn,
                wc_flags: wc_flags::GRH | wc_flags::WITH_IMM,
                ..Default::default()
            };
            self.rq_cons = (self.rq_cons + 1) & mask;
            self.rq.store_u32(QB_CONSUMER_INDEX, self.rq_cons);
            self.push_cqe(&wc);
            done += 1;
        }
        done
    }
}

/// A QP with an 8-slot SQ (256-byte slots: the kernel's size for 1 SGE / 16 inline), an 8-slot
/// RQ (64-byte slots), a CQ of `cq_slots` 128-byte slots; what 6.1 creates for max_*_wr = 4.
fn setup(cq_slots: u32) -> (RxeQp<HeapRing>, RxeCq<HeapRing>, MockKernel) {
    let (sq, rq, cq) = (
        HeapRing::new(8, 8),
        HeapRing::new(6, 8),
        HeapRing::new(7, cq_slots),
    );
    let attr = rc_attr(false);
    // CREATE_QP on 6.1 echoes the requested max_send_wr (4) but grows inline to 16
    // (docs/rxe-kernel.md, "E1 QP capacity comes from the ring").
    let caps = QpCaps {
        max_inline_data: 16,
        ..attr.caps
    };
    let mut qp = RxeQp::from_rings(3, 17, &attr, &caps, sq.clone(), Some(rq.clone())).unwrap();
    qp.set_state(QpState::Rts);
    let cqo = RxeCq::from_ring(1, cq.clone()).unwrap();
    let k = MockKernel {
        sq,
        rq,
        cq,
        qpn: 17,
        sq_cons: 0,
        rq_cons: 0,
        cq_prod: 0,
        dropped: 0,
    };
    (qp, cqo, k)
}

const BUF: Sge = Sge {
    addr: 0x10_0000,
    length: 64,
    lkey: 0x55,
};

fn write_wr(id: u64, sg: &[Sge]) -> SendWr<'_> {
    let mut wr = SendWr::new(id, WrOpcode::RdmaWrite, sg);
    wr.flags = SendFlags::SIGNALED;
    wr.remote = RemoteAddr {
        addr: 0x20_0000,
        rkey: 0x66,
    };
    wr
}

#[test]
fn capacity_comes_from_the_ring_not_create_qp() {
    let (qp, cq, _k) = setup(16);
    assert_eq!(
        qp.send_capacity(),
        7,
        "8 slots → 7 usable, although CREATE_QP said 4"
    );
    assert_eq!(qp.recv_capacity(), 7);
    assert_eq!(cq.capacity(), 15);
    assert_eq!(qp.sq_limits().max_inline, 16);
    assert_eq!(qp.sq_limits().max_sge, 1);
}

#[test]
fn wraparound_many_times_the_depth() {
    let (mut qp, mut cq, mut k) = setup(16);
    let sg = [BUF];
    let mut doorbells = 0u32;
    let mut next_id = 0u64;
    let mut completed = Vec::new();
    let mut wcs = [WorkCompletion::default(); 4];
    // 300 operations through a 7-deep SQ: > 40 laps of the ring.
    let mut batch = 1usize;
    while next_id < 300 {
        let n = batch.min(7).min((300 - next_id) as usize);
        let wrs: Vec<SendWr<'_>> = (0..n as u64).map(|i| write_wr(next_id + i, &sg)).collect();
        qp.post_send_with(&wrs, &NoInline, |h| {
            assert_eq!(h, 3);
            doorbells += 1;
            Ok(())
        })
        .unwrap();
        next_id += n as u64;
        let seen = k.run_sq();
        assert_eq!(seen.len(), n);
        for (j, (id, op, flags, len)) in seen.iter().enumerate() {
            assert_eq!(
                (*id, *op, *flags, *len),
                (next_id - n as u64 + j as u64, 0, 2, 64)
            );
        }
        loop {
            let got = cq.poll(&mut wcs).unwrap();
            if got == 0 {
                break;
            }
            for wc in &wcs[..got] {
                assert_eq!(wc.status, WcStatus::Success);
                assert_eq!(wc.opcode, WcOpcode::RdmaWrite);
                assert_eq!((wc.byte_len, wc.qp_num), (64, 17));
                completed.push(wc.wr_id);
            }
        }
        batch = batch % 7 + 1;
    }
    assert_eq!(completed, (0..300).collect::<Vec<_>>());
    assert_eq!(k.dropped, 0);
    // One doorbell per post call, not per WQE.
    let calls = {
        let (mut b, mut done, mut c) = (1usize, 0u64, 0u32);
        while done < 300 {
            done += b.min(7).min((300 - done) as usize) as u64;
            b = b % 7 + 1;
            c += 1;
        }
        c
    };
    assert_eq!(doorbells, calls);
}

#[test]
fn full_queue_is_an_error_and_never_overwrites() {
    // The hint names the knob; with the ib_* tools' spelling installed it also names the flag.
    uverbs::knob::set_spelling(|k| (k == uverbs::knob::Knob::SendDepth).then_some("-t"));
    let (mut qp, _cq, mut k) = setup(16);
    let sg = [BUF];
    let mut doorbells = 0;
    let wrs: Vec<SendWr<'_>> = (0..10).map(|i| write_wr(i, &sg)).collect();
    // 10 into an empty 7-deep SQ: 7 go in, rung once; #7 is the bad one.
    let e = qp.post_send_with(&wrs, &NoInline, |_| {
        doorbells += 1;
        Ok(())
    });
    let e = e.unwrap_err();
    assert_eq!(e.index, 7);
    assert_eq!(doorbells, 1);
    assert!(
        e.error
            .to_string()
            .contains("send queue full: 7 outstanding; raise the send queue depth (-t) / poll completions"),
        "{}",
        e.error
    );
    // Now completely full: nothing written, no doorbell.
    let e = qp
        .post_send_with(&wrs[..1], &NoInline, |_| {
            panic!("no doorbell for an empty batch")
        })
        .unwrap_err();
    assert_eq!(e.index, 0);
    // The kernel drains 7; exactly those 7 were in the ring, in order.
    let seen: Vec<u64> = k.run_sq().iter().map(|s| s.0).collect();
    assert_eq!(seen, (0..7).collect::<Vec<_>>());
    qp.post_send_with(&wrs[7..], &NoInline, |_| Ok(())).unwrap();
    assert_eq!(
        k.run_sq().iter().map(|s| s.0).collect::<Vec<_>>(),
        vec![7, 8, 9]
    );
}

#[test]
fn invalid_request_mid_batch_posts_the_prefix() {
    let (mut qp, _cq, mut k) = setup(16);
    let sg = [BUF];
    let two = [BUF, BUF]; // the QP has max_send_sge 1
    let wrs = [
        write_wr(1, &sg),
        write_wr(2, &sg),
        write_wr(3, &two),
        write_wr(4, &sg),
    ];
    let mut rung = 0;
    let e = qp
        .post_send_with(&wrs, &NoInline, |_| {
            rung += 1;
            Ok(())
        })
        .unwrap_err();
    assert_eq!(e.index, 2);
    assert!(e.error.to_string().contains("at most 1"), "{}", e.error);
    assert_eq!(rung, 1);
    assert_eq!(
        k.run_sq().iter().map(|s| s.0).collect::<Vec<_>>(),
        vec![1, 2]
    );
}

#[test]
fn doorbell_failure_reports_what_was_queued() {
    let (mut qp, _cq, mut k) = setup(16);
    let sg = [BUF];
    let wrs = [write_wr(1, &sg), write_wr(2, &sg)];
    let e = qp
        .post_send_with(&wrs, &NoInline, |_| {
            Err(uverbs::Error::errno("POST_SEND doorbell", libc::EINVAL))
        })
        .unwrap_err();
    assert_eq!(e.index, 2);
    assert_eq!(e.error.errno, Some(libc::EINVAL));
    assert_eq!(k.run_sq().len(), 2, "the WQEs are in the ring");
}

#[test]
fn posting_before_rts_touches_nothing() {
    let (mut qp, _cq, k) = setup(16);
    let sg = [BUF];
    for st in [QpState::Reset, QpState::Init, QpState::Rtr] {
        qp.set_state(st);
        let e = qp
            .post_send_with(&[write_wr(1, &sg)], &NoInline, |_| panic!("no doorbell"))
            .unwrap_err();
        assert_eq!(e.index, 0);
        assert!(e.error.to_string().contains("RTS"), "{}", e.error);
    }
    assert_eq!(k.sq.load_u32(QB_PRODUCER_INDEX), 0);
    // Receives: refused in RESET, fine from INIT.
    let rsg = [BUF];
    qp.set_state(QpState::Reset);
    assert!(qp
        .post_recv(&[RecvWr {
            wr_id: 1,
            sgl: &rsg
        }])
        .is_err());
    qp.set_state(QpState::Init);
    qp.post_recv(&[RecvWr {
        wr_id: 1,
        sgl: &rsg,
    }])
    .unwrap();
    assert_eq!(k.rq.load_u32(QB_PRODUCER_INDEX), 1);
}

#[test]
fn receives_and_their_completions() {
    let (mut qp, mut cq, mut k) = setup(16);
    let sg = [Sge {
        addr: 0x30_0000,
        length: 4096,
        lkey: 9,
    }];
    let mut delivered = 0u64;
    let mut wcs = [WorkCompletion::default(); 8];
    let mut got_ids = Vec::new();
    // 40 receives through a 7-deep RQ.
    for round in 0..8u64 {
        let wrs: Vec<RecvWr<'_>> = (0..5)
            .map(|i| RecvWr {
                wr_id: round * 5 + i,
                sgl: &sg,
            })
            .collect();
        qp.post_recv(&wrs).unwrap();
        delivered += k.deliver(5) as u64;
        let n = cq.poll(&mut wcs).unwrap();
        for wc in &wcs[..n] {
            assert_eq!(wc.opcode, WcOpcode::Recv);
            assert_eq!(wc.byte_len, 4096);
            assert_eq!(wc.imm_data.to_ne_bytes(), [0xde, 0xad, 0xbe, 0xef]);
            assert_eq!(wc.wc_flags, 3);
            got_ids.push(wc.wr_id);
        }
    }
    assert_eq!(delivered, 40);
    assert_eq!(got_ids, (0..40).collect::<Vec<_>>());
    // RQ full.
    let wrs: Vec<RecvWr<'_>> = (0..8).map(|i| RecvWr { wr_id: i, sgl: &sg }).collect();
    let e = qp.post_recv(&wrs).unwrap_err();
    assert_eq!(e.index, 7);
    assert!(
        e.error
            .to_string()
            .contains("receive queue full: 7 outstanding"),
        "{}",
        e.error
    );
}

#[test]
fn cq_batches_respect_the_output_slice_and_overflow_drops() {
    // A CQ of 4 slots (capacity 3): the mock kernel drops the 4th completion, as rxe does.
    let (mut qp, mut cq, mut k) = setup(4);
    let sg = [BUF];
    let wrs: Vec<SendWr<'_>> = (0..5).map(|i| write_wr(i, &sg)).collect();
    qp.post_send_with(&wrs, &NoInline, |_| Ok(())).unwrap();
    k.run_sq();
    assert_eq!(k.dropped, 2);
    let mut one = [WorkCompletion::default(); 1];
    assert_eq!(cq.poll(&mut one).unwrap(), 1);
    assert_eq!(one[0].wr_id, 0);
    assert_eq!(
        k.cq.load_u32(QB_CONSUMER_INDEX),
        1,
        "consumer released after the batch"
    );
    let mut many = [WorkCompletion::default(); 8];
    assert_eq!(cq.poll(&mut many).unwrap(), 2);
    assert_eq!((many[0].wr_id, many[1].wr_id), (1, 2));
    assert_eq!(cq.poll(&mut many).unwrap(), 0);
    assert_eq!(cq.poll(&mut []).unwrap(), 0);
}

#[test]
fn hostile_indices_never_reach_memory() {
    let (mut qp, mut cq, k) = setup(16);
    let mut wcs = [WorkCompletion::default(); 16];
    for bad in [16u32, 0x1234_5678, 0xffff_ffff] {
        k.cq.store_u32(QB_PRODUCER_INDEX, bad);
        let e = cq.poll(&mut wcs).unwrap_err();
        assert!(e.to_string().contains("corrupted"), "{e}");
    }
    k.cq.store_u32(QB_PRODUCER_INDEX, 0);
    assert_eq!(cq.poll(&mut wcs).unwrap(), 0);

    let sg = [BUF];
    k.sq.store_u32(QB_CONSUMER_INDEX, 0xffff_ffff);
    let e = qp
        .post_send_with(&[write_wr(1, &sg)], &NoInline, |_| panic!("no doorbell"))
        .unwrap_err();
    assert!(e.error.to_string().contains("corrupted"), "{}", e.error);
    k.rq.store_u32(QB_CONSUMER_INDEX, 8);
    assert!(qp.post_recv(&[RecvWr { wr_id: 1, sgl: &sg }]).is_err());

    // A header that lies about its geometry is refused when the ring is built.
    let r = HeapRing::new(7, 8);
    r.store_u32(QB_INDEX_MASK, 0xffff_ffff);
    assert!(RxeCq::from_ring(1, r).is_err());
    let r = HeapRing::new(7, 8);
    r.store_u32(QB_LOG2_ELEM_SIZE, 12); // 8 slots of 4 KiB do not fit the region
    assert!(RxeCq::from_ring(1, r).is_err());
    // An SQ slot too small for a send WQE.
    let attr = rc_attr(false);
    assert!(RxeQp::from_rings(
        1,
        17,
        &attr,
        &attr.caps,
        HeapRing::new(7, 8),
        Some(HeapRing::new(6, 8))
    )
    .is_err());
}

#[test]
fn srq_and_qp_without_rq() {
    let attr = rc_attr(true);
    let mut qp = RxeQp::from_rings(1, 17, &attr, &attr.caps, HeapRing::new(8, 8), None).unwrap();
    qp.set_state(QpState::Rts);
    assert_eq!(qp.recv_capacity(), 0);
    let sg = [BUF];
    let e = qp.post_recv(&[RecvWr { wr_id: 1, sgl: &sg }]).unwrap_err();
    assert!(e.error.to_string().contains("SRQ"), "{}", e.error);

    let ring = HeapRing::new(6, 16);
    let mut srq = RxeSrq::from_ring(5, 0x40, 1, ring.clone()).unwrap();
    assert_eq!((srq.handle(), srq.srq_num(), srq.capacity()), (5, 0x40, 15));
    let wrs: Vec<RecvWr<'_>> = (0..15)
        .map(|i| RecvWr {
            wr_id: 100 + i,
            sgl: &sg,
        })
        .collect();
    srq.post_recv(&wrs).unwrap();
    assert_eq!(ring.load_u32(QB_PRODUCER_INDEX), 15);
    let mut w = [0u8; 56];
    rd(&ring, ring.slot_offset(14), &mut w);
    assert_eq!(u64_at(&w, RECV_WR_ID), 114);
    assert_eq!(u32_at(&w, RECV_DMA + DMA_NUM_SGE), 1);
    assert_eq!(u64_at(&w, RECV_WQE_SIZE + SGE_ADDR), BUF.addr);
    assert!(srq.post_recv(&wrs[..1]).is_err());
}

#[test]
fn ud_atomic_and_inline_reach_the_ring() {
    // UD QP.
    let attr = QpInitAttr {
        qp_type: QpType::Ud,
        ..rc_attr(false)
    };
    let sq = HeapRing::new(8, 8);
    let mut qp = RxeQp::from_rings(
        1,
        17,
        &attr,
        &attr.caps,
        sq.clone(),
        Some(HeapRing::new(6, 8)),
    )
    .unwrap();
    qp.set_state(QpState::Rts);
    let sg = [BUF];
    let mut wr = SendWr::new(1, WrOpcode::Send, &sg);
    wr.ud = Some(uverbs::wr::UdDest {
        ah: 2,
        remote_qpn: 0x12,
        remote_qkey: 0x1111_1111,
    });
    qp.post_send_with(&[wr], &NoInline, |_| Ok(())).unwrap();
    let mut w = [0u8; 256];
    rd(&sq, sq.slot_offset(0), &mut w);
    assert_eq!(u32_at(&w, WR_UD_REMOTE_QPN), 0x12);
    assert_eq!(u32_at(&w, WR_UD_AH_NUM), 2);
    wr.opcode = WrOpcode::RdmaWrite;
    assert!(qp.post_send_with(&[wr], &NoInline, |_| Ok(())).is_err());

    // RC atomic with a 4-byte SGE: refused before the kernel sees it (docs/rxe-kernel.md,
    // "E3 atomic SGE length").
    let (mut qp, _cq, k) = setup(16);
    let small = [Sge {
        addr: 0x1000,
        length: 4,
        lkey: 1,
    }];
    let mut a = SendWr::new(9, WrOpcode::AtomicFetchAndAdd, &small);
    a.remote = RemoteAddr {
        addr: 0x2000,
        rkey: 1,
    };
    let e = qp
        .post_send_with(&[a], &NoInline, |_| panic!("no doorbell"))
        .unwrap_err();
    assert!(
        e.error.to_string().contains("exactly 8 bytes"),
        "{}",
        e.error
    );
    assert_eq!(k.sq.load_u32(QB_PRODUCER_INDEX), 0);

    // Inline through the real UserMemory source: bytes land at +208.
    let payload = *b"0123456789abcdef";
    let isg = [Sge {
        addr: payload.as_ptr() as u64,
        length: 16,
        lkey: 0,
    }];
    let mut iw = SendWr::new(3, WrOpcode::Send, &isg);
    iw.flags = SendFlags::INLINE | SendFlags::SIGNALED;
    // SAFETY: `payload` is a live local array of 16 bytes.
    let user = unsafe { providers::rxe::mem::UserMemory::new() };
    qp.post_send_with(&[iw], &user, |_| Ok(()))
        .unwrap();
    let mut w = [0u8; 256];
    rd(&k.sq, k.sq.slot_offset(0), &mut w);
    assert_eq!(&w[SEND_WQE_SIZE..SEND_WQE_SIZE + 16], &payload);
    assert_eq!(u32_at(&w, WQE_DMA + DMA_LENGTH), 16);
    // 17 bytes exceed the QP's max_inline (16).
    let big = [0u8; 17];
    let bsg = [Sge {
        addr: big.as_ptr() as u64,
        length: 17,
        lkey: 0,
    }];
    iw.sgl = &bsg;
    assert!(qp
        .post_send_with(&[iw], &user, |_| Ok(()))
        .is_err());
}

/// The mock kernel runs in its own thread, consuming and completing while the test posts and
/// polls: exercises the acquire/release pairs under real concurrency.
#[test]
fn threaded_kernel() {
    let (mut qp, mut cq, mut k) = setup(16);
    let stop = Arc::new(AtomicBool::new(false));
    let stop2 = stop.clone();
    let kernel = std::thread::spawn(move || {
        let mut total = 0usize;
        while !stop2.load(Ordering::Acquire) {
            let n = k.run_sq().len();
            total += n;
            if n == 0 {
                std::thread::yield_now();
            }
        }
        total += k.run_sq().len();
        (total, k.dropped)
    });
    const N: u64 = 5_000;
    let sg = [BUF];
    let (mut posted, mut outstanding, mut expect) = (0u64, 0u64, 0u64);
    let mut wcs = [WorkCompletion::default(); 16];
    while expect < N {
        // Keep at most 7 outstanding signaled sends: the CQ (15) can never overflow.
        if posted < N && outstanding < 7 {
            let n = (7 - outstanding).min(N - posted).min(3);
            let wrs: Vec<SendWr<'_>> = (0..n).map(|i| write_wr(posted + i, &sg)).collect();
            qp.post_send_with(&wrs, &NoInline, |_| Ok(())).unwrap();
            posted += n;
            outstanding += n;
        }
        let got = cq.poll(&mut wcs).unwrap();
        for wc in &wcs[..got] {
            assert_eq!(wc.wr_id, expect);
            assert_eq!(wc.byte_len, 64);
            expect += 1;
        }
        outstanding -= got as u64;
        if got == 0 {
            std::thread::yield_now();
        }
    }
    stop.store(true, Ordering::Release);
    let (total, dropped) = kernel.join().unwrap();
    assert_eq!(total as u64, N);
    assert_eq!(dropped, 0);
}
