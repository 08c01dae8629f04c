//! The device-model tests: our mlx5 provider against the model HCA of
//! `support/mlx5_model` (what the model does and the choices it makes are said there).

mod support;

use support::mlx5_model::crypto::*;
use support::mlx5_model::*;
use providers::mlx5::Mlx5Srq;
use uverbs::dv::CryptoProvider;
use uverbs::provider::{Provider, QpCaps, QpType};
use uverbs::wr::{RecvWr, SendFlags, SendWr, Sge, UdDest, WcOpcode, WcStatus, WrOpcode};
use providers::mlx5::crypto::{Mlx5CryptoMkey, Mlx5Dek};
use providers::mlx5::umr;

#[test]
fn model_end_to_end_both_directions_with_wraparound() {
    for blueflame in [true, false] {
        let caps = QpCaps {
            max_send_wr: 4,
            max_recv_wr: 4,
            max_send_sge: 2,
            max_recv_sge: 2,
            max_inline_data: 64,
        };
        let mut p = create_pair(caps, 7, blueflame);
        assert_eq!(p.cq[0].ncqe(), 8);
        let sq_cnt = p.qp[0].geo.sq_wqe_cnt;
        // Per side: [0] source, [1] remote target, [2] receive buffer, [3] read-back / atomic result.
        let mut bufs = Bufs {
            mem: (0..8).map(|_| vec![0u8; 256]).collect(),
        };
        let mut seen_ops = std::collections::HashSet::new();
        for iter in 0..300u64 {
            let s = (iter % 2) as usize; // alternate which QP of the pair sends
            let d = 1 - s;
            let (src, dst, rbuf, res) = (4 * s, 4 * d + 1, 4 * d + 2, 4 * s + 3);
            for (k, b) in bufs.mem[src].iter_mut().enumerate() {
                *b = (iter as u8).wrapping_mul(31).wrapping_add(k as u8);
            }
            let kind = iter % 9;
            let len = 1 + (iter as u32 * 7) % 60;
            let sg = [Sge {
                addr: bufs.addr(src),
                length: len,
                lkey: 1,
            }];
            let sg2 = [
                Sge {
                    addr: bufs.addr(src),
                    length: 20,
                    lkey: 1,
                },
                Sge {
                    addr: bufs.addr(src) + 100,
                    length: 30,
                    lkey: 1,
                },
            ];
            let res_sg = [Sge {
                addr: bufs.addr(res),
                length: 64,
                lkey: 1,
            }];
            let at_sg = [Sge {
                addr: bufs.addr(res),
                length: 8,
                lkey: 1,
            }];
            let recv_sg = [
                Sge {
                    addr: bufs.addr(rbuf),
                    length: 100,
                    lkey: 2,
                },
                Sge {
                    addr: bufs.addr(rbuf) + 128,
                    length: 100,
                    lkey: 2,
                },
            ];
            let needs_recv = matches!(kind, 1 | 2 | 3 | 4 | 8);
            if needs_recv {
                // SAFETY: the SGEs point into the model's registered buffers, alive for the whole
                // test.
                unsafe { p.ctx
                    .post_recv(
                        &mut p.qp[d],
                        &[RecvWr {
                            wr_id: 0x9000 + iter,
                            sgl: &recv_sg,
                        }],
                    ) }
                    .unwrap();
            }
            let remote = uverbs::wr::RemoteAddr {
                addr: bufs.addr(dst),
                rkey: RKEY,
            };
            let mut w = match kind {
                0 => SendWr::new(iter, WrOpcode::RdmaWrite, &sg),
                1 => SendWr::new(iter, WrOpcode::RdmaWriteWithImm, &sg),
                2 => SendWr::new(iter, WrOpcode::Send, &sg),
                3 => SendWr::new(iter, WrOpcode::SendWithImm, &sg2),
                4 => {
                    let mut w = SendWr::new(iter, WrOpcode::Send, &sg);
                    w.flags = SendFlags::INLINE;
                    w
                }
                5 => SendWr::new(iter, WrOpcode::RdmaRead, &res_sg),
                6 => SendWr::new(iter, WrOpcode::AtomicCmpAndSwp, &at_sg),
                7 => SendWr::new(iter, WrOpcode::AtomicFetchAndAdd, &at_sg),
                _ => {
                    let mut w = SendWr::new(iter, WrOpcode::SendWithImm, &sg);
                    w.flags = SendFlags::INLINE | SendFlags::SOLICITED | SendFlags::FENCE;
                    w
                }
            };
            w.remote = remote;
            w.imm_data = (iter as u32).to_be();
            w.flags = w.flags | SendFlags::SIGNALED;
            let before_atomic = u64::from_ne_bytes(bufs.mem[dst][..8].try_into().unwrap());
            w.compare_add = if kind == 6 { before_atomic } else { 5 };
            w.swap = 0x1234_5678_0000 + iter;
            // Every third round: an unsignaled RDMA WRITE first, in the same post list (one
            // doorbell; retired silently by the signaled WQE's completion).
            let pre_sg = [Sge {
                addr: bufs.addr(src),
                length: 8,
                lkey: 1,
            }];
            let mut pre = SendWr::new(0xdead, WrOpcode::RdmaWrite, &pre_sg);
            pre.remote = uverbs::wr::RemoteAddr {
                addr: bufs.addr(dst) + 200,
                rkey: RKEY,
            };
            let list: Vec<SendWr> = if iter % 3 == 0 { vec![pre, w] } else { vec![w] };
            // SAFETY: the SGEs point into the model's registered buffers, alive for the whole test.
            unsafe { p.ctx.post_send(&mut p.qp[s], &list) }.unwrap();
            seen_ops.insert(kind);

            let wcs = poll_all(&mut p, s, 1);
            let wc = wcs[0];
            assert_eq!(
                (wc.wr_id, wc.status, wc.qp_num),
                (iter, WcStatus::Success, 0x100 + s as u32),
                "requester {iter}"
            );
            let want_op = WcOpcode::for_send(w.opcode);
            assert_eq!(wc.opcode, want_op);
            let src_bytes = bufs.mem[src][..len as usize].to_vec();
            match kind {
                0 | 1 => assert_eq!(&bufs.mem[dst][..len as usize], &src_bytes[..]),
                5 => {
                    assert_eq!(wc.byte_len, 64);
                    assert_eq!(bufs.mem[res][..64], bufs.mem[dst][..64]);
                }
                6 => {
                    assert_eq!(wc.byte_len, 8);
                    assert_eq!(
                        u64::from_ne_bytes(bufs.mem[res][..8].try_into().unwrap()),
                        before_atomic
                    );
                    assert_eq!(
                        u64::from_ne_bytes(bufs.mem[dst][..8].try_into().unwrap()),
                        0x1234_5678_0000 + iter
                    );
                }
                7 => {
                    assert_eq!(
                        u64::from_ne_bytes(bufs.mem[res][..8].try_into().unwrap()),
                        before_atomic
                    );
                    assert_eq!(
                        u64::from_ne_bytes(bufs.mem[dst][..8].try_into().unwrap()),
                        before_atomic.wrapping_add(5)
                    );
                }
                _ => {}
            }
            if needs_recv {
                let r = poll_all(&mut p, d, 1)[0];
                assert_eq!(
                    (r.wr_id, r.status, r.qp_num, r.src_qp),
                    (
                        0x9000 + iter,
                        WcStatus::Success,
                        0x100 + d as u32,
                        0x100 + s as u32
                    )
                );
                let with_imm = matches!(kind, 1 | 3 | 8);
                assert_eq!(r.wc_flags & uverbs::wr::wc_flags::WITH_IMM != 0, with_imm);
                if with_imm {
                    assert_eq!(r.imm_data, (iter as u32).to_be());
                }
                if kind == 1 {
                    assert_eq!(r.opcode, WcOpcode::RecvRdmaWithImm);
                } else {
                    assert_eq!(r.opcode, WcOpcode::Recv);
                    let got: Vec<u8> = if kind == 3 {
                        [&bufs.mem[rbuf][..50]].concat()
                    } else {
                        bufs.mem[rbuf][..len as usize].to_vec()
                    };
                    let want: Vec<u8> = if kind == 3 {
                        [&bufs.mem[src][..20], &bufs.mem[src][100..130]].concat()
                    } else {
                        src_bytes.clone()
                    };
                    assert_eq!(got, want, "received payload {iter}");
                    assert_eq!(r.byte_len, want.len() as u32);
                }
            } else {
                poll_all(&mut p, d, 0);
            }
        }
        assert_eq!(seen_ops.len(), 9);
        // Force a WQE across the SQ end: one-block writes up to the last slot, then a two-block
        // inline send (its payload continues at the SQ start; BlueFlame copies wrap too).
        let mask = sq_cnt - 1;
        let sg = [Sge {
            addr: bufs.addr(0),
            length: 8,
            lkey: 1,
        }];
        while p.qp[0].sq_cur_post() & mask != mask {
            let mut w = SendWr::new(1, WrOpcode::RdmaWrite, &sg);
            w.remote = uverbs::wr::RemoteAddr {
                addr: bufs.addr(5),
                rkey: RKEY,
            };
            w.flags = SendFlags::SIGNALED;
            // SAFETY: the SGEs point into the model's registered buffers, alive for the whole test.
            unsafe { p.ctx.post_send(&mut p.qp[0], &[w]) }.unwrap();
            poll_all(&mut p, 0, 1);
        }
        let payload: Vec<u8> = (0..60u8).map(|x| x ^ 0x5a).collect();
        let recv_sg = [Sge {
            addr: bufs.addr(6),
            length: 100,
            lkey: 2,
        }];
        // SAFETY: the SGEs point into the model's registered buffers, alive for the whole test.
        unsafe { p.ctx
            .post_recv(
                &mut p.qp[1],
                &[RecvWr {
                    wr_id: 4242,
                    sgl: &recv_sg,
                }],
            ) }
            .unwrap();
        let sg = [Sge {
            addr: payload.as_ptr() as u64,
            length: 60,
            lkey: 1,
        }];
        let mut w = SendWr::new(4243, WrOpcode::Send, &sg);
        w.flags = SendFlags::SIGNALED | SendFlags::INLINE;
        // SAFETY: the SGEs point into the model's registered buffers, alive for the whole test.
        unsafe { p.ctx.post_send(&mut p.qp[0], &[w]) }.unwrap();
        assert_eq!(poll_all(&mut p, 0, 1)[0].wr_id, 4243);
        let r = poll_all(&mut p, 1, 1)[0];
        assert_eq!((r.wr_id, r.byte_len), (4242, 60));
        assert_eq!(&bufs.mem[6][..60], &payload[..]);
        let h = p.hca.lock().unwrap();
        // 300 rounds on 8-entry CQs and a small SQ: both rings lapped many times.
        assert!(p.cq[0].consumer_index() > 8 * 10 && p.cq[1].consumer_index() > 8 * 10);
        assert!(p.qp[0].sq_cur_post() > 4 * sq_cnt && p.qp[1].sq_cur_post() > 4 * sq_cnt);
        assert!(h.wrapped_wqes > 0, "some WQE straddled the SQ end");
        if blueflame {
            assert!(
                h.blueflames > 0 && h.doorbells > 0,
                "both BlueFlame (single WR) and plain doorbells (lists)"
            );
        } else {
            assert_eq!(h.blueflames, 0);
        }
    }
}
#[test]
fn model_error_completion_and_flow_control() {
    let caps = QpCaps {
        max_send_wr: 2,
        max_recv_wr: 2,
        max_send_sge: 1,
        max_recv_sge: 1,
        max_inline_data: 0,
    };
    let mut p = create_pair(caps, 3, true);
    let buf = [0u8; 64];
    let sg = [Sge {
        addr: buf.as_ptr() as u64,
        length: 8,
        lkey: 1,
    }];
    // Bad rkey: the model answers with a requester error CQE (remote access).
    let mut w = SendWr::new(77, WrOpcode::RdmaWrite, &sg);
    w.remote = uverbs::wr::RemoteAddr {
        addr: buf.as_ptr() as u64 + 32,
        rkey: 0xbad,
    };
    // SAFETY: the SGEs point into the model's registered buffers, alive for the whole test.
    unsafe { p.ctx.post_send(&mut p.qp[0], &[w]) }.unwrap();
    let wc = poll_all(&mut p, 0, 1)[0];
    assert_eq!(
        (wc.wr_id, wc.status, wc.vendor_err),
        (77, WcStatus::RemAccessErr, 0x88)
    );
    // Unsignaled writes are not completed individually: the SQ fills, then refuses cleanly.
    let max = p.qp[0].geo.sq_max_post as usize;
    let mut w = SendWr::new(1, WrOpcode::RdmaWrite, &sg);
    w.remote = uverbs::wr::RemoteAddr {
        addr: buf.as_ptr() as u64 + 32,
        rkey: RKEY,
    };
    let list = vec![w; max + 1];
    // SAFETY: the SGEs point into the model's registered buffers, alive for the whole test.
    let e = unsafe { p.ctx.post_send(&mut p.qp[0], &list) }.unwrap_err();
    assert_eq!(
        e.index, max,
        "max_post WQEs outstanding, the next one is refused"
    );
    // One signaled WQE retires all of them.
    let mut s = w;
    s.wr_id = 2;
    s.flags = SendFlags::SIGNALED;
    // The queue is full now; signal through a fresh QP state: poll nothing, then reset.
    // SAFETY: the SGEs point into the model's registered buffers, alive for the whole test.
    assert!(unsafe { p.ctx.post_send(&mut p.qp[0], &[s]) }.is_err());
    assert_eq!(poll_all(&mut p, 0, 0).len(), 0);
}
#[test]
fn model_ud_datagrams_grh_qkey_and_drops() {
    for blueflame in [true, false] {
        let caps = QpCaps {
            max_send_wr: 4,
            max_recv_wr: 4,
            max_send_sge: 1,
            max_recv_sge: 2,
            max_inline_data: 32,
        };
        let mut p = create_pair_ex(QpType::Ud, caps, 7, blueflame, None);
        let ah = port_ah(&p);
        let ah_num = p.ctx.ah_number(&ah);
        let src: Vec<u8> = (0..256u32).map(|x| (x * 7 + 1) as u8).collect();
        let mut rbuf = [vec![0u8; GRH_LEN + 256], vec![0u8; GRH_LEN + 256]];
        for iter in 0..120u64 {
            let s = (iter % 2) as usize;
            let d = 1 - s;
            let len = 1 + (iter as u32 * 13) % 200;
            rbuf[d].iter_mut().for_each(|b| *b = 0xcc);
            let base = rbuf[d].as_ptr() as u64;
            // Every other receive splits the GRH into its own SGE, as some applications do.
            let one = [Sge { addr: base, length: GRH_LEN as u32 + 256, lkey: 2 }];
            let two = [
                Sge { addr: base, length: GRH_LEN as u32, lkey: 2 },
                Sge { addr: base + GRH_LEN as u64, length: 256, lkey: 2 },
            ];
            let sgl: &[Sge] = if iter % 4 < 2 { &one } else { &two };
            // SAFETY: the SGEs point into the model's registered buffers, alive for the whole test.
            unsafe { p.ctx.post_recv(&mut p.qp[d], &[RecvWr { wr_id: 0x7000 + iter, sgl }]) }.unwrap();
            let sg = [Sge { addr: src.as_ptr() as u64 + iter % 7, length: len, lkey: 1 }];
            let op = if iter % 3 == 0 { WrOpcode::SendWithImm } else { WrOpcode::Send };
            let mut w = SendWr::new(iter, op, &sg);
            w.flags = SendFlags::SIGNALED;
            if len <= 24 {
                w.flags = w.flags | SendFlags::INLINE;
            }
            w.imm_data = (iter as u32 ^ 0xabcd).to_be();
            w.ud = Some(UdDest { ah: ah_num, remote_qpn: 0x100 + d as u32, remote_qkey: QKEY });
            // SAFETY: the SGEs point into the model's registered buffers, alive for the whole test.
            unsafe { p.ctx.post_send(&mut p.qp[s], &[w]) }.unwrap();
            let wc = poll_all(&mut p, s, 1)[0];
            assert_eq!((wc.wr_id, wc.status, wc.opcode), (iter, WcStatus::Success, WcOpcode::Send));
            let r = poll_all(&mut p, d, 1)[0];
            assert_eq!(
                (r.wr_id, r.status, r.opcode, r.qp_num, r.src_qp, r.byte_len),
                (0x7000 + iter, WcStatus::Success, WcOpcode::Recv, 0x100 + d as u32, 0x100 + s as u32, len + GRH_LEN as u32),
                "receive {iter}"
            );
            assert_ne!(r.wc_flags & uverbs::wr::wc_flags::GRH, 0, "UD receive reports a GRH");
            assert_eq!(r.wc_flags & uverbs::wr::wc_flags::WITH_IMM != 0, op == WrOpcode::SendWithImm);
            if op == WrOpcode::SendWithImm {
                assert_eq!(r.imm_data, (iter as u32 ^ 0xabcd).to_be());
            }
            assert_eq!(rbuf[d][0] >> 4, 6, "GRH first");
            assert_eq!(&rbuf[d][24..40], &PORT_GID[..]);
            let off = (iter % 7) as usize;
            assert_eq!(&rbuf[d][GRH_LEN..GRH_LEN + len as usize], &src[off..off + len as usize], "payload {iter}");
            assert_eq!(rbuf[d][GRH_LEN + len as usize], 0xcc, "nothing past the payload");
        }
        // A wrong Q_Key: the sender completes, the datagram is dropped, the receive stays posted
        // and takes the next good datagram.
        let rb = [0u8; GRH_LEN + 64];
        let rsg = [Sge { addr: rb.as_ptr() as u64, length: rb.len() as u32, lkey: 2 }];
        // SAFETY: the SGEs point into the model's registered buffers, alive for the whole test.
        unsafe { p.ctx.post_recv(&mut p.qp[1], &[RecvWr { wr_id: 0xbeef, sgl: &rsg }]) }.unwrap();
        let sg = [Sge { addr: src.as_ptr() as u64, length: 16, lkey: 1 }];
        let mut w = SendWr::new(1, WrOpcode::Send, &sg);
        w.flags = SendFlags::SIGNALED;
        w.ud = Some(UdDest { ah: ah_num, remote_qpn: 0x101, remote_qkey: QKEY ^ 1 });
        // SAFETY: the SGEs point into the model's registered buffers, alive for the whole test.
        unsafe { p.ctx.post_send(&mut p.qp[0], &[w]) }.unwrap();
        assert_eq!(poll_all(&mut p, 0, 1)[0].status, WcStatus::Success);
        poll_all(&mut p, 1, 0);
        assert_eq!(p.hca.lock().unwrap().ud_dropped, 1);
        w.ud = Some(UdDest { ah: ah_num, remote_qpn: 0x101, remote_qkey: QKEY });
        w.wr_id = 2;
        // SAFETY: the SGEs point into the model's registered buffers, alive for the whole test.
        unsafe { p.ctx.post_send(&mut p.qp[0], &[w]) }.unwrap();
        poll_all(&mut p, 0, 1);
        let r = poll_all(&mut p, 1, 1)[0];
        assert_eq!((r.wr_id, r.byte_len), (0xbeef, 16 + GRH_LEN as u32));
        // No receive posted: dropped, not an RNR stall.
        w.wr_id = 3;
        // SAFETY: the SGEs point into the model's registered buffers, alive for the whole test.
        unsafe { p.ctx.post_send(&mut p.qp[0], &[w]) }.unwrap();
        assert_eq!(poll_all(&mut p, 0, 1)[0].status, WcStatus::Success);
        poll_all(&mut p, 1, 0);
        assert_eq!(p.hca.lock().unwrap().ud_dropped, 2);
        // An address handle number that does not exist is refused at post time.
        w.ud = Some(UdDest { ah: ah_num + 5, remote_qpn: 0x101, remote_qkey: QKEY });
        // SAFETY: the SGEs point into the model's registered buffers, alive for the whole test.
        let e = unsafe { p.ctx.post_send(&mut p.qp[0], &[w]) }.unwrap_err();
        assert_eq!(e.index, 0);
        assert!(e.error.to_string().contains("address handle"), "{}", e.error);
        drop(ah);
    }
}
#[test]
fn model_srq_receives_in_posting_order_across_reposts() {
    let caps = QpCaps {
        max_send_wr: 4,
        max_recv_wr: 4,
        max_send_sge: 1,
        max_recv_sge: 1,
        max_inline_data: 0,
    };
    let mut p = create_pair_ex(QpType::Rc, caps, 15, true, Some((7, 1)));
    let bufs: Vec<Vec<u8>> = (0..8).map(|_| vec![0u8; 64]).collect();
    let mut srq = p.srq.take().unwrap();
    // Capacity: max_wr entries (one link is kept as the free list's tail).
    let mut posted = std::collections::VecDeque::new();
    let mut next_id = 0x5000u64;
    let mut post = |p: &mut Pair, srq: &mut Mlx5Srq, b: usize, posted: &mut std::collections::VecDeque<(u64, usize)>| {
        let sg = [Sge { addr: bufs[b].as_ptr() as u64, length: 64, lkey: 2 }];
        // SAFETY: the SGEs point into the model's registered buffers, alive for the whole test.
        unsafe { p.ctx.post_srq_recv(srq, &[RecvWr { wr_id: next_id, sgl: &sg }]) }.unwrap();
        posted.push_back((next_id, b));
        next_id += 1;
    };
    for b in 0..7 {
        post(&mut p, &mut srq, b, &mut posted);
    }
    let extra = [Sge { addr: bufs[7].as_ptr() as u64, length: 64, lkey: 2 }];
    // SAFETY: the SGEs point into the model's registered buffers, alive for the whole test.
    let e = unsafe { p.ctx.post_srq_recv(&mut srq, &[RecvWr { wr_id: 1, sgl: &extra }]) }.unwrap_err();
    assert_eq!(e.index, 0, "an 8th receive does not fit a 7-entry SRQ");
    let src: Vec<u8> = (0..64u8).collect();
    let mut done = Vec::new();
    for m in 0..100u64 {
        let len = 1 + (m as u32 * 11) % 60;
        let sg = [Sge { addr: src.as_ptr() as u64, length: len, lkey: 1 }];
        let mut w = SendWr::new(m, WrOpcode::Send, &sg);
        w.flags = SendFlags::SIGNALED;
        // SAFETY: the SGEs point into the model's registered buffers, alive for the whole test.
        unsafe { p.ctx.post_send(&mut p.qp[0], &[w]) }.unwrap();
        assert_eq!(poll_all(&mut p, 0, 1)[0].wr_id, m);
        let r = poll_all(&mut p, 1, 1)[0];
        let (want_id, b) = posted.pop_front().unwrap();
        assert_eq!(
            (r.wr_id, r.status, r.byte_len, r.qp_num, r.src_qp),
            (want_id, WcStatus::Success, len, 0x101, 0x100),
            "message {m}"
        );
        assert_eq!(&bufs[b][..len as usize], &src[..len as usize]);
        done.push(b);
        // Re-post in batches of three, newest first, so the free list is relinked out of order.
        if done.len() == 3 {
            while let Some(b) = done.pop() {
                post(&mut p, &mut srq, b, &mut posted);
            }
        }
    }
    let h = p.hca.lock().unwrap();
    assert_eq!(h.srqs[&0x77].consumed, 100, "every message came from the SRQ");
    assert_eq!(h.ud_dropped, 0);
}
#[test]
fn model_dc_dci_to_dct_send_write_read_atomic_through_the_srq() {
    for blueflame in [true, false] {
        let (mut p, _) = create_dc_pair(blueflame, None);
        let ah = port_ah(&p);
        let ah_num = p.ctx.ah_number(&ah);
        let dest = Some(UdDest { ah: ah_num, remote_qpn: 0x101, remote_qkey: 0 });
        let mut srq = p.srq.take().unwrap();
        let rbufs: Vec<Vec<u8>> = (0..7).map(|_| vec![0u8; 64]).collect();
        let mut target = [0u8; 128]; // the DCT side's registered memory (WRITE/READ/atomics)
        let mut local = [0u8; 128];
        let src: Vec<u8> = (0..128u32).map(|x| (x * 5 + 3) as u8).collect();
        for m in 0..60u64 {
            let b = (m % 7) as usize;
            let len = 1 + (m as u32 * 11) % 60;
            // SEND (with immediate every third) into the DCT's SRQ.
            let rsg = [Sge { addr: rbufs[b].as_ptr() as u64, length: 64, lkey: 2 }];
            // SAFETY: the SGEs point into the model's registered buffers, alive for the whole test.
            unsafe { p.ctx.post_srq_recv(&mut srq, &[RecvWr { wr_id: 0x9000 + m, sgl: &rsg }]) }.unwrap();
            let sg = [Sge { addr: src.as_ptr() as u64 + m % 5, length: len, lkey: 1 }];
            let op = if m % 3 == 0 { WrOpcode::SendWithImm } else { WrOpcode::Send };
            let mut w = SendWr::new(m, op, &sg);
            w.flags = SendFlags::SIGNALED;
            if len <= 24 {
                w.flags = w.flags | SendFlags::INLINE;
            }
            w.imm_data = (m as u32 ^ 0x5a5a).to_be();
            w.ud = dest;
            // SAFETY: the SGEs point into the model's registered buffers, alive for the whole test.
            unsafe { p.ctx.post_send(&mut p.qp[0], &[w]) }.unwrap();
            let wc = poll_all(&mut p, 0, 1)[0];
            assert_eq!((wc.wr_id, wc.status, wc.opcode, wc.qp_num), (m, WcStatus::Success, WcOpcode::Send, 0x100));
            let r = poll_all(&mut p, 1, 1)[0];
            assert_eq!(
                (r.wr_id, r.status, r.opcode, r.qp_num, r.src_qp, r.byte_len),
                (0x9000 + m, WcStatus::Success, WcOpcode::Recv, 0x101, 0x100, len),
                "DCT receive {m}"
            );
            assert_eq!(r.wc_flags & uverbs::wr::wc_flags::GRH, 0, "DC is connected-mode: no GRH");
            if op == WrOpcode::SendWithImm {
                assert_eq!(r.imm_data, (m as u32 ^ 0x5a5a).to_be());
            }
            let off = (m % 5) as usize;
            assert_eq!(&rbufs[b][..len as usize], &src[off..off + len as usize], "payload {m}");
            // RDMA WRITE, then READ it back, through the same DCI to the same DCT.
            let wsg = [Sge { addr: src.as_ptr() as u64, length: 64, lkey: 1 }];
            let mut w = SendWr::new(1000 + m, WrOpcode::RdmaWrite, &wsg);
            w.flags = SendFlags::SIGNALED;
            w.remote.addr = target.as_mut_ptr() as u64 + m % 64;
            w.remote.rkey = RKEY;
            w.ud = dest;
            // SAFETY: the SGEs point into the model's registered buffers, alive for the whole test.
            unsafe { p.ctx.post_send(&mut p.qp[0], &[w]) }.unwrap();
            assert_eq!(poll_all(&mut p, 0, 1)[0].opcode, WcOpcode::RdmaWrite);
            poll_all(&mut p, 1, 0);
            assert_eq!(&target[(m % 64) as usize..][..64], &src[..64]);
            let lsg = [Sge { addr: local.as_mut_ptr() as u64, length: 64, lkey: 1 }];
            let mut w = SendWr::new(2000 + m, WrOpcode::RdmaRead, &lsg);
            w.flags = SendFlags::SIGNALED;
            w.remote.addr = target.as_mut_ptr() as u64 + m % 64;
            w.remote.rkey = RKEY;
            w.ud = dest;
            // SAFETY: the SGEs point into the model's registered buffers, alive for the whole test.
            unsafe { p.ctx.post_send(&mut p.qp[0], &[w]) }.unwrap();
            let wc = poll_all(&mut p, 0, 1)[0];
            assert_eq!((wc.opcode, wc.byte_len), (WcOpcode::RdmaRead, 64));
            assert_eq!(&local[..64], &src[..64]);
        }
        // Fetch-and-add on the DCT side's memory.
        let mut counter = [0u8; 8];
        let mut result = [0u8; 8];
        for k in 0..5u64 {
            let sg = [Sge { addr: result.as_mut_ptr() as u64, length: 8, lkey: 1 }];
            let mut w = SendWr::new(3000 + k, WrOpcode::AtomicFetchAndAdd, &sg);
            w.flags = SendFlags::SIGNALED;
            w.remote.addr = counter.as_mut_ptr() as u64;
            w.remote.rkey = RKEY;
            w.compare_add = 10;
            w.ud = dest;
            // SAFETY: the SGEs point into the model's registered buffers, alive for the whole test.
            unsafe { p.ctx.post_send(&mut p.qp[0], &[w]) }.unwrap();
            assert_eq!(poll_all(&mut p, 0, 1)[0].status, WcStatus::Success);
            assert_eq!(u64::from_ne_bytes(result[..].try_into().unwrap()), 10 * k, "old value");
        }
        assert_eq!(u64::from_ne_bytes(counter[..].try_into().unwrap()), 50);
        let h = p.hca.lock().unwrap();
        assert_eq!(h.srqs[&0x77].consumed, 60, "every DC message came from the SRQ");
        assert_eq!(h.dc_key_violations, 0);
        drop(h);
        // Neither queue of a DCT can be posted to.
        let sg = [Sge { addr: src.as_ptr() as u64, length: 8, lkey: 1 }];
        let mut w = SendWr::new(1, WrOpcode::Send, &sg);
        w.ud = dest;
        // SAFETY: the SGEs point into the model's registered buffers, alive for the whole test.
        assert!(unsafe { p.ctx.post_send(&mut p.qp[1], &[w]) }.is_err(), "a DCT has no send queue");
        let rsg = [Sge { addr: rbufs[0].as_ptr() as u64, length: 64, lkey: 2 }];
        // SAFETY: the SGEs point into the model's registered buffers, alive for the whole test.
        let e = unsafe { p.ctx.post_recv(&mut p.qp[1], &[RecvWr { wr_id: 1, sgl: &rsg }]) }.unwrap_err();
        assert!(e.error.to_string().contains("SRQ"), "{}", e.error);
        // A DCI send without a destination is refused at post time.
        let bare = SendWr::new(1, WrOpcode::Send, &sg);
        // SAFETY: the SGEs point into the model's registered buffers, alive for the whole test.
        assert!(unsafe { p.ctx.post_send(&mut p.qp[0], &[bare]) }.is_err());
        p.srq = Some(srq);
        drop(ah);
    }
}
#[test]
fn model_dc_wrong_key_is_dropped_and_the_dci_errors() {
    let (mut p, bad) = create_dc_pair(true, Some(DC_KEY ^ 0xffff_0000_0000));
    let mut bad = bad.unwrap();
    let ah = port_ah(&p);
    let dest = Some(UdDest { ah: p.ctx.ah_number(&ah), remote_qpn: 0x101, remote_qkey: 0 });
    let mut srq = p.srq.take().unwrap();
    let rbuf = vec![0u8; 64];
    let rsg = [Sge { addr: rbuf.as_ptr() as u64, length: 64, lkey: 2 }];
    // SAFETY: the SGEs point into the model's registered buffers, alive for the whole test.
    unsafe { p.ctx.post_srq_recv(&mut srq, &[RecvWr { wr_id: 0x77, sgl: &rsg }]) }.unwrap();
    let src = [0xabu8; 16];
    let sg = [Sge { addr: src.as_ptr() as u64, length: 16, lkey: 1 }];
    let mut w = SendWr::new(5, WrOpcode::Send, &sg);
    w.flags = SendFlags::SIGNALED;
    w.ud = dest;
    // The DCI with the wrong key: the DCT drops it, the DCI gets a retry-exceeded error
    // completion (on CQ 0x400, where the model puts every DCI's completions).
    // SAFETY: the SGEs point into the model's registered buffers, alive for the whole test.
    unsafe { p.ctx.post_send(&mut bad, &[w]) }.unwrap();
    let wc = poll_all(&mut p, 0, 1)[0];
    assert_eq!((wc.wr_id, wc.status, wc.qp_num), (5, WcStatus::RetryExcErr, 0x102));
    poll_all(&mut p, 1, 0);
    assert_eq!(rbuf, vec![0u8; 64], "nothing written on the DCT side");
    assert_eq!(p.hca.lock().unwrap().dc_key_violations, 1);
    // A WRITE with the wrong key does not land either.
    let target = vec![0u8; 16];
    let mut w2 = SendWr::new(6, WrOpcode::RdmaWrite, &sg);
    w2.flags = SendFlags::SIGNALED;
    w2.remote.addr = target.as_ptr() as u64;
    w2.remote.rkey = RKEY;
    w2.ud = dest;
    // SAFETY: the SGEs point into the model's registered buffers, alive for the whole test.
    unsafe { p.ctx.post_send(&mut bad, &[w2]) }.unwrap();
    assert_eq!(poll_all(&mut p, 0, 1)[0].status, WcStatus::RetryExcErr);
    assert_eq!(target, vec![0u8; 16]);
    // The right key: the receive that stayed posted takes it.
    w.wr_id = 7;
    // SAFETY: the SGEs point into the model's registered buffers, alive for the whole test.
    unsafe { p.ctx.post_send(&mut p.qp[0], &[w]) }.unwrap();
    assert_eq!(poll_all(&mut p, 0, 1)[0].status, WcStatus::Success);
    let r = poll_all(&mut p, 1, 1)[0];
    assert_eq!((r.wr_id, r.byte_len, r.src_qp), (0x77, 16, 0x100));
    assert_eq!(&rbuf[..16], &src[..]);
    assert_eq!(p.hca.lock().unwrap().dc_key_violations, 2);
    p.srq = Some(srq);
    drop(ah);
}
#[test]
fn model_xrc_initiator_sends_into_the_xrc_srq() {
    for blueflame in [true, false] {
        let caps = QpCaps { max_send_wr: 8, max_recv_wr: 8, max_send_sge: 1, max_recv_sge: 1, max_inline_data: 64 };
        let (mut p, srqn) = create_xrc(caps, 15, blueflame);
        let mut srq = p.srq.take().unwrap();
        let bufs = Bufs { mem: (0..6).map(|i| vec![i as u8; 256]).collect() };
        // Receives into the XRC SRQ (buffers 3..6), ids 300..303.
        for k in 0..3 {
            let sg = [Sge { addr: bufs.addr(3 + k), length: 256, lkey: 7 }];
            // SAFETY: the SGEs point into the model's registered buffers, alive for the whole test.
            unsafe { p.ctx.post_srq_recv(&mut srq, &[RecvWr { wr_id: 300 + k as u64, sgl: &sg }]) }.unwrap();
        }
        // An XRC target QP has no send queue.
        let sg0 = [Sge { addr: bufs.addr(0), length: 100, lkey: 7 }];
        // SAFETY: the SGEs point into the model's registered buffers, alive for the whole test.
        let e = unsafe { p.ctx.post_send(&mut p.qp[1], &[SendWr::new(1, WrOpcode::Send, &sg0)]) }.unwrap_err();
        assert!(e.error.to_string().contains("no send queue"), "{e}");
        // SEND (gathered), SEND_WITH_IMM (inline), RDMA_WRITE_WITH_IMM, each naming the SRQ.
        let sg1 = [Sge { addr: bufs.addr(1), length: 40, lkey: 7 }];
        let mut w0 = SendWr::new(10, WrOpcode::Send, &sg0);
        w0.flags = SendFlags::SIGNALED;
        w0.remote_srqn = srqn;
        let mut w1 = SendWr::new(11, WrOpcode::SendWithImm, &sg1);
        w1.flags = SendFlags::SIGNALED | SendFlags::INLINE;
        w1.imm_data = 0xa1b2c3d4;
        w1.remote_srqn = srqn;
        let mut w2 = SendWr::new(12, WrOpcode::RdmaWriteWithImm, &sg1);
        w2.flags = SendFlags::SIGNALED;
        w2.remote = uverbs::wr::RemoteAddr { addr: bufs.addr(2), rkey: RKEY };
        w2.imm_data = 0x01020304;
        w2.remote_srqn = srqn;
        // SAFETY: the SGEs point into the model's registered buffers, alive for the whole test.
        unsafe { p.ctx.post_send(&mut p.qp[0], &[w0, w1, w2]) }.unwrap();
        // The WQEs carry the XRC segment right after the control segment.
        let (qbuf, _) = p.qp[0].addrs();
        let first = rd(qbuf, 32);
        assert_eq!(be32(&first, 16), srqn, "XRC segment: the remote SRQ number at byte 16");
        assert_eq!(be32(&first, 4) & 0x3f, 3, "ctrl + XRC + one data segment");
        // Sender completions on CQ 0, in order.
        let s = poll_all(&mut p, 0, 3);
        assert_eq!(s.iter().map(|w| w.wr_id).collect::<Vec<_>>(), vec![10, 11, 12]);
        assert!(s.iter().all(|w| w.status == WcStatus::Success));
        // Receives on the SRQ's CQ (CQ 1), in SRQ order, with the payloads.
        let r = poll_all(&mut p, 1, 3);
        assert_eq!(r.iter().map(|w| w.wr_id).collect::<Vec<_>>(), vec![300, 301, 302]);
        assert!(r.iter().all(|w| w.status == WcStatus::Success), "{r:?}");
        assert_eq!((r[0].opcode, r[0].byte_len), (WcOpcode::Recv, 100));
        assert_eq!(&bufs.mem[3][..100], &bufs.mem[0][..100]);
        assert_eq!((r[1].byte_len, r[1].imm_data), (40, 0xa1b2c3d4));
        assert_eq!(&bufs.mem[4][..40], &bufs.mem[1][..40]);
        assert_eq!(r[2].opcode, WcOpcode::RecvRdmaWithImm);
        assert_eq!(r[2].imm_data, 0x01020304);
        assert_eq!(&bufs.mem[2][..40], &bufs.mem[1][..40], "the write landed");
        assert!(r.iter().all(|w| w.qp_num == XRC_TGT_QPN), "completions name the target QP: {r:?}");
        // The entries went back to the SRQ's free list: more receives post and complete.
        for k in 0..3 {
            let sg = [Sge { addr: bufs.addr(3 + k), length: 256, lkey: 7 }];
            // SAFETY: the SGEs point into the model's registered buffers, alive for the whole test.
            unsafe { p.ctx.post_srq_recv(&mut srq, &[RecvWr { wr_id: 400 + k as u64, sgl: &sg }]) }.unwrap();
        }
        let mut w = SendWr::new(20, WrOpcode::Send, &sg1);
        w.flags = SendFlags::SIGNALED;
        w.remote_srqn = srqn;
        // SAFETY: the SGEs point into the model's registered buffers, alive for the whole test.
        unsafe { p.ctx.post_send(&mut p.qp[0], &[w]) }.unwrap();
        poll_all(&mut p, 0, 1);
        assert_eq!(poll_all(&mut p, 1, 1)[0].wr_id, 400);
        drop(srq);
    }
}
#[test]
fn model_xrc_send_to_an_unknown_srqn_completes_in_error() {
    let caps = QpCaps { max_send_wr: 8, max_recv_wr: 0, max_send_sge: 1, max_recv_sge: 1, max_inline_data: 0 };
    let (mut p, srqn) = create_xrc(caps, 7, false);
    let srq = p.srq.take().unwrap();
    let bufs = Bufs { mem: vec![vec![5u8; 64]] };
    let sg = [Sge { addr: bufs.addr(0), length: 64, lkey: 7 }];
    let mut w = SendWr::new(77, WrOpcode::Send, &sg);
    w.flags = SendFlags::SIGNALED;
    w.remote_srqn = srqn + 1; // no such SRQ at the target
    // SAFETY: the SGEs point into the model's registered buffers, alive for the whole test.
    unsafe { p.ctx.post_send(&mut p.qp[0], &[w]) }.unwrap();
    let s = poll_all(&mut p, 0, 1);
    assert_eq!((s[0].wr_id, s[0].status), (77, WcStatus::RemInvReqErr));
    poll_all(&mut p, 1, 0);
    let h = p.hca.lock().unwrap();
    assert_eq!((h.xrc_bad_srqn, h.srqs[&srqn].consumed), (1, 0), "nothing reached the SRQ");
    drop(h);
    drop(srq);
}
#[test]
fn mlx5_xrc_geometry_matches_libmlx5() {
    // libmlx5's _sq_overhead for XRC_SEND: RC's largest set (ctrl + UMR ctrl + mkey context +
    // 64 bytes of KLMs = 192) plus the 16-byte XRC segment.
    assert_eq!(providers::mlx5::geometry::sq_overhead(QpType::XrcIni), 208);
    assert_eq!(providers::mlx5::geometry::sq_overhead(QpType::Rc) + 16, 208);
    assert_eq!(providers::mlx5::wqe::xrc_seg(0x12_3456), [0, 0x12, 0x34, 0x56, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0]);
}
#[test]
fn model_dc_dci_streams_reach_the_device_per_request() {
    // Each request's SendWr::dci_stream lands in its own WQE's control segment, in single posts
    // and in a post list, and the DCT receives as before.
    let (mut p, _) = create_dc_pair(false, None);
    let ah = port_ah(&p);
    let dest = Some(UdDest { ah: p.ctx.ah_number(&ah), remote_qpn: 0x101, remote_qkey: 0 });
    let mut srq = p.srq.take().unwrap();
    let mut rbuf = [0u8; 64];
    let src = [0xa5u8; 16];
    let sg = [Sge { addr: src.as_ptr() as u64, length: 16, lkey: 1 }];
    let rsg = [Sge { addr: rbuf.as_mut_ptr() as u64, length: 64, lkey: 2 }];
    let mut want = Vec::new();
    for m in 0..6u16 {
        // SAFETY: the SGEs point into the model's registered buffers, alive for the whole test.
        unsafe { p.ctx.post_srq_recv(&mut srq, &[RecvWr { wr_id: u64::from(m), sgl: &rsg }]) }.unwrap();
        let mut w = SendWr::new(u64::from(m), WrOpcode::Send, &sg);
        w.flags = SendFlags::SIGNALED;
        w.ud = dest;
        w.dci_stream = m % 4; // perftest's rotation for --log_active_dci_streams 2
        want.push(m % 4);
        // SAFETY: the SGEs point into the model's registered buffers, alive for the whole test.
        unsafe { p.ctx.post_send(&mut p.qp[0], &[w]) }.unwrap();
        assert_eq!(poll_all(&mut p, 0, 1)[0].status, WcStatus::Success);
        assert_eq!(poll_all(&mut p, 1, 1)[0].wr_id, u64::from(m));
    }
    // a post list of three writes on streams 0x0102, 3, 0xffff
    let mut target = [0u8; 64];
    let mut ws = Vec::new();
    for (k, st) in [0x0102u16, 3, 0xffff].into_iter().enumerate() {
        let mut w = SendWr::new(100 + k as u64, WrOpcode::RdmaWrite, &sg);
        w.flags = if k == 2 { SendFlags::SIGNALED } else { SendFlags::empty() };
        w.remote.addr = target.as_mut_ptr() as u64;
        w.remote.rkey = RKEY;
        w.ud = dest;
        w.dci_stream = st;
        ws.push(w);
        want.push(st);
    }
    // SAFETY: the SGEs point into the model's registered buffers, alive for the whole test.
    unsafe { p.ctx.post_send(&mut p.qp[0], &ws) }.unwrap();
    assert_eq!(poll_all(&mut p, 0, 1)[0].wr_id, 102);
    assert_eq!(&target[..16], &src[..]);
    assert_eq!(p.hca.lock().unwrap().dci_streams, want);
    p.srq = Some(srq);
    drop(ah);
}
#[test]
fn model_dc_dct_receives_resolve_under_cqe_version_0() {
    // Under CQE version 0 the provider finds a CQE's QP by the CQE's QPN. A DCT is created
    // without a number (CREATE_QP answers 0) and gets it at RTR: its receive CQEs name that
    // DCT number, which must lead to the DCT (and so to its SRQ's work request ids).
    let (mut p, _) = create_dc_pair(true, None);
    p.ctx.resp.0.cqe_version = 0;
    let ah = port_ah(&p);
    let dest = Some(UdDest { ah: p.ctx.ah_number(&ah), remote_qpn: 0x101, remote_qkey: 0 });
    let mut srq = p.srq.take().unwrap();
    let mut rbuf = [0u8; 64];
    let src: Vec<u8> = (0..32u8).collect();
    for m in 0..4u64 {
        let rsg = [Sge { addr: rbuf.as_mut_ptr() as u64, length: 64, lkey: 2 }];
        // SAFETY: the SGEs point into the model's registered buffers, alive for the whole test.
        unsafe { p.ctx.post_srq_recv(&mut srq, &[RecvWr { wr_id: 0x700 + m, sgl: &rsg }]) }.unwrap();
        let sg = [Sge { addr: src.as_ptr() as u64, length: 32, lkey: 1 }];
        let mut w = SendWr::new(m, WrOpcode::Send, &sg);
        w.flags = SendFlags::SIGNALED;
        w.ud = dest;
        // SAFETY: the SGEs point into the model's registered buffers, alive for the whole test.
        unsafe { p.ctx.post_send(&mut p.qp[0], &[w]) }.unwrap();
        let wc = poll_all(&mut p, 0, 1)[0];
        assert_eq!((wc.wr_id, wc.qp_num), (m, 0x100));
        let r = poll_all(&mut p, 1, 1)[0];
        assert_eq!((r.wr_id, r.status, r.qp_num, r.src_qp, r.byte_len), (0x700 + m, WcStatus::Success, 0x101, 0x100, 32));
        assert_eq!(&rbuf[..32], &src[..]);
    }
    p.srq = Some(srq);
    drop(ah);
}
#[test]
fn model_crypto_umr_then_write_send_read_move_the_mapped_bytes() {
    for blueflame in [true, false] {
        let (mut p, dev) = crypto_pair(blueflame, 8);
        dev.lock().unwrap().mkeys.insert(CRYPTO_MKEY, None);
        let mut mkey = Mlx5CryptoMkey::detached(CRYPTO_MKEY, 1);
        let dek = Mlx5Dek::detached(0x31);
        let dek2 = Mlx5Dek::detached(0x32);
        let attr = perftest_crypto_attr(512);
        let plain: Vec<u8> = (0..2048u32).map(|i| (i * 7 + 3) as u8).collect();
        let mut bufs = Bufs { mem: vec![plain.clone(), vec![0u8; 2048], vec![0u8; 2048], vec![0u8; 2048]] };
        let (a, remote, back, rbuf) = (bufs.addr(0), bufs.addr(1), bufs.addr(2), bufs.addr(3));
        let via_mkey = |off: u64, len: u32| [Sge { addr: off, length: len, lkey: CRYPTO_MKEY }];

        // 1. UMR maps A (plaintext), then a signaled WRITE of the whole mkey: the remote gets
        //    ciphertext; only the WRITE completes.
        let map_a = Sge { addr: a, length: 2048, lkey: 1 };
        // SAFETY: the SGEs point into the model's registered buffers, alive for the whole test.
        unsafe { p.ctx.post_crypto_mkey_configure(&mut p.qp[0], &mut mkey, &map_a, RR_RW_LW, &attr, &dek) }.unwrap();
        let umr_at = p.qp[0].sq_cur_post() - 4;
        let sg = via_mkey(0, 2048);
        let mut w = SendWr::new(0x501, WrOpcode::RdmaWrite, &sg);
        w.flags = SendFlags::SIGNALED;
        w.remote = uverbs::wr::RemoteAddr { addr: remote, rkey: RKEY };
        // SAFETY: the SGEs point into the model's registered buffers, alive for the whole test.
        unsafe { p.ctx.post_send(&mut p.qp[0], &[w]) }.unwrap();
        let wc = poll_all(&mut p, 0, 1)[0];
        assert_eq!((wc.wr_id, wc.status, wc.opcode), (0x501, WcStatus::Success, WcOpcode::RdmaWrite));
        let cipher = expect_cipher(&attr, 0x31, 0, &plain);
        assert_ne!(cipher, plain);
        assert_eq!(rd(remote, 2048), cipher, "ciphertext on the wire side (tweak and DEK as posted)");
        // The WQE after the UMR carries the initiator small fence with its CQ update.
        let sq = p.qp[0].geo.sq_offset as u64 + p.qp[0].addrs().0;
        let slot = |i: u32| sq + ((i & (p.qp[0].geo.sq_wqe_cnt - 1)) as u64) * 64;
        assert_eq!(rd(slot(umr_at), 16)[3], 0x25);
        assert_eq!(rd(slot(umr_at + 4), 16)[11], 0x28, "small fence | CQ update");

        // 2. UMR maps the empty buffer `back`; READ the ciphertext through the mkey: the
        //    device decrypts on the way into memory.
        let map_back = Sge { addr: back, length: 2048, lkey: 1 };
        // SAFETY: the SGEs point into the model's registered buffers, alive for the whole test.
        unsafe { p.ctx.post_crypto_mkey_configure(&mut p.qp[0], &mut mkey, &map_back, RR_RW_LW, &attr, &dek) }.unwrap();
        let mut r = SendWr::new(0x502, WrOpcode::RdmaRead, &sg);
        r.flags = SendFlags::SIGNALED;
        r.remote = uverbs::wr::RemoteAddr { addr: remote, rkey: RKEY };
        // SAFETY: the SGEs point into the model's registered buffers, alive for the whole test.
        unsafe { p.ctx.post_send(&mut p.qp[0], &[r]) }.unwrap();
        let wc = poll_all(&mut p, 0, 1)[0];
        assert_eq!((wc.wr_id, wc.status, wc.opcode, wc.byte_len), (0x502, WcStatus::Success, WcOpcode::RdmaRead, 2048));
        assert_eq!(rd(back, 2048), plain, "plaintext after decryption");

        // 3. Another DEK, a SEND of the second data unit (mkey offset 512): the receiver gets
        //    that unit's ciphertext under DEK 2 and tweak + 1.
        // SAFETY: the SGEs point into the model's registered buffers, alive for the whole test.
        unsafe { p.ctx.post_crypto_mkey_configure(&mut p.qp[0], &mut mkey, &map_a, RR_RW_LW, &attr, &dek2) }.unwrap();
        let rsg = [Sge { addr: rbuf, length: 2048, lkey: 2 }];
        // SAFETY: the SGEs point into the model's registered buffers, alive for the whole test.
        unsafe { p.ctx.post_recv(&mut p.qp[1], &[RecvWr { wr_id: 0x900, sgl: &rsg }]) }.unwrap();
        let ssg = via_mkey(512, 512);
        let mut s = SendWr::new(0x503, WrOpcode::Send, &ssg);
        s.flags = SendFlags::SIGNALED;
        // SAFETY: the SGEs point into the model's registered buffers, alive for the whole test.
        unsafe { p.ctx.post_send(&mut p.qp[0], &[s]) }.unwrap();
        assert_eq!(poll_all(&mut p, 0, 1)[0].wr_id, 0x503);
        let rwc = poll_all(&mut p, 1, 1)[0];
        assert_eq!((rwc.wr_id, rwc.byte_len, rwc.opcode), (0x900, 512, WcOpcode::Recv));
        let unit1 = expect_cipher(&attr, 0x32, 512, &plain[512..1024]);
        assert_eq!(rd(rbuf, 512), unit1);
        assert_ne!(unit1, cipher[512..1024].to_vec(), "a different DEK gives different ciphertext");
        assert_eq!(cipher[512..1024], expect_cipher(&attr, 0x31, 512, &plain[512..1024])[..], "per-unit tweak");
        let d = dev.lock().unwrap();
        assert_eq!((d.umrs, d.crypto_requests, d.unfenced_after_umr), (3, 3, 0));
        assert_eq!(d.wire.len(), 3);
        assert_eq!(d.umr_blueflame > 0, blueflame, "a single UMR is BlueFlamed like any 16-DS inline WQE");
        drop(d);
        bufs.mem.clear();
    }
}
#[test]
fn model_crypto_request_on_an_unconfigured_mkey_is_a_local_protection_error() {
    let (mut p, dev) = crypto_pair(true, 8);
    dev.lock().unwrap().mkeys.insert(CRYPTO_MKEY, None);
    let remote = vec![0u8; 256];
    let sg = [Sge { addr: 0, length: 64, lkey: CRYPTO_MKEY }];
    let mut w = SendWr::new(0x77, WrOpcode::RdmaWrite, &sg);
    w.flags = SendFlags::SIGNALED;
    w.remote = uverbs::wr::RemoteAddr { addr: remote.as_ptr() as u64, rkey: RKEY };
    // SAFETY: the SGEs point into the model's registered buffers, alive for the whole test.
    unsafe { p.ctx.post_send(&mut p.qp[0], &[w]) }.unwrap();
    let wc = poll_all(&mut p, 0, 1)[0];
    assert_eq!((wc.wr_id, wc.status, wc.vendor_err), (0x77, WcStatus::LocProtErr, 0x88));
    assert!(remote.iter().all(|&b| b == 0), "nothing moved");

    // Configured, but the request runs past the mapping: also a protection error (side 1).
    dev.lock().unwrap().mkeys.insert(CRYPTO_MKEY + 0x100, None);
    let mut mkey = Mlx5CryptoMkey::detached(CRYPTO_MKEY + 0x100, 1);
    let src = vec![5u8; 256];
    let map = Sge { addr: src.as_ptr() as u64, length: 256, lkey: 1 };
    let attr = perftest_crypto_attr(512);
    // SAFETY: the SGEs point into the model's registered buffers, alive for the whole test.
    unsafe { p.ctx.post_crypto_mkey_configure(&mut p.qp[1], &mut mkey, &map, RR_RW_LW, &attr, &Mlx5Dek::detached(9)) }.unwrap();
    let sg = [Sge { addr: 200, length: 64, lkey: CRYPTO_MKEY + 0x100 }];
    let mut w = SendWr::new(0x78, WrOpcode::RdmaWrite, &sg);
    w.flags = SendFlags::SIGNALED;
    w.remote = uverbs::wr::RemoteAddr { addr: remote.as_ptr() as u64, rkey: RKEY };
    // SAFETY: the SGEs point into the model's registered buffers, alive for the whole test.
    unsafe { p.ctx.post_send(&mut p.qp[1], &[w]) }.unwrap();
    let wc = poll_all(&mut p, 1, 1)[0];
    assert_eq!((wc.wr_id, wc.status), (0x78, WcStatus::LocProtErr));
    assert_eq!(dev.lock().unwrap().umrs, 1);
}
#[test]
fn model_crypto_umr_refusals_happen_at_post_and_touch_nothing() {
    let (mut p, dev) = crypto_pair(true, 8);
    dev.lock().unwrap().mkeys.insert(CRYPTO_MKEY, None);
    let buf = vec![0u8; 4096];
    let map = Sge { addr: buf.as_ptr() as u64, length: 4096, lkey: 1 };
    let attr = perftest_crypto_attr(4096);
    let dek = Mlx5Dek::detached(1);
    let _ = p.ctx.uar().take();
    let before = p.qp[0].sq_cur_post();
    // An mkey created for 0 entries cannot take the one range: too many entries.
    let mut none = Mlx5CryptoMkey::detached(CRYPTO_MKEY, 0);
    // SAFETY: the SGEs point into the model's registered buffers, alive for the whole test.
    let e = unsafe { p.ctx.post_crypto_mkey_configure(&mut p.qp[0], &mut none, &map, RR_RW_LW, &attr, &dek) }.unwrap_err();
    assert_eq!((e.index, e.error.errno), (0, Some(libc::ENOMEM)));
    assert!(e.error.to_string().contains("layout entries"), "{}", e.error);
    let mut mkey = Mlx5CryptoMkey::detached(CRYPTO_MKEY, 1);
    let mut bad = attr;
    bad.data_unit_size = 1000;
    // SAFETY: the SGEs point into the model's registered buffers, alive for the whole test.
    let e = unsafe { p.ctx.post_crypto_mkey_configure(&mut p.qp[0], &mut mkey, &map, RR_RW_LW, &bad, &dek) }.unwrap_err();
    assert_eq!(e.error.errno, Some(libc::EINVAL));
    assert!(e.error.to_string().contains("data unit size 1000"), "{}", e.error);
    // SAFETY: the SGEs point into the model's registered buffers, alive for the whole test.
    let e = unsafe { p.ctx.post_crypto_mkey_configure(&mut p.qp[0], &mut mkey, &map, 0x20, &attr, &dek) }.unwrap_err();
    assert_eq!(e.error.errno, Some(libc::EINVAL));
    // A variant byte the device cannot update (the oracle context has no MKEY_UPDATE_TAG).
    let mut tagged = Mlx5CryptoMkey::detached(CRYPTO_MKEY | 0x07, 1);
    // SAFETY: the SGEs point into the model's registered buffers, alive for the whole test.
    let e = unsafe { p.ctx.post_crypto_mkey_configure(&mut p.qp[0], &mut tagged, &map, RR_RW_LW, &attr, &dek) }.unwrap_err();
    assert_eq!(e.error.errno, Some(libc::EOPNOTSUPP));
    assert_eq!(p.qp[0].sq_cur_post(), before, "nothing posted");
    assert!(p.ctx.uar().take().is_empty(), "no doorbell");
    assert_eq!(dev.lock().unwrap().umrs, 0);

    // Only RC QPs take a UMR.
    let caps = crypto_caps(8);
    let mut ud = create_pair_ex(QpType::Ud, caps, 15, true, None);
    // SAFETY: the SGEs point into the model's registered buffers, alive for the whole test.
    let e = unsafe { ud.ctx.post_crypto_mkey_configure(&mut ud.qp[0], &mut mkey, &map, RR_RW_LW, &attr, &dek) }.unwrap_err();
    assert_eq!(e.error.errno, Some(libc::EOPNOTSUPP));
    assert!(e.error.to_string().contains("RC"), "{}", e.error);
    // A QP with too little inline room for translation + BSF.
    let small = QpCaps { max_inline_data: 60, ..caps };
    let mut sp = create_pair(small, 15, true);
    // SAFETY: the SGEs point into the model's registered buffers, alive for the whole test.
    let e = unsafe { sp.ctx.post_crypto_mkey_configure(&mut sp.qp[0], &mut mkey, &map, RR_RW_LW, &attr, &dek) }.unwrap_err();
    assert_eq!(e.error.errno, Some(libc::ENOMEM));
}
#[test]
fn model_crypto_umr_wqes_wrap_at_the_sq_end() {
    for blueflame in [true, false] {
        let (mut p, dev) = crypto_pair(blueflame, 4);
        let sq_cnt = p.qp[0].geo.sq_wqe_cnt;
        assert!(p.qp[0].geo.sq_wqe_size >= 256, "RC WQEs admit the UMR");
        dev.lock().unwrap().mkeys.insert(CRYPTO_MKEY, None);
        let mut mkey = Mlx5CryptoMkey::detached(CRYPTO_MKEY, 1);
        let attr = perftest_crypto_attr(512);
        let plain: Vec<u8> = (0..1024u32).map(|i| (i ^ 0x5a) as u8).collect();
        let remote = vec![0u8; 1024];
        let sg = [Sge { addr: 0, length: 1024, lkey: CRYPTO_MKEY }];
        let mut wrapped_umr_seen = false;
        for iter in 0..(3 * sq_cnt) as u64 {
            let mut src = plain.clone();
            src[0] = iter as u8;
            let dek = Mlx5Dek::detached(0x100 + iter as u32);
            let map = Sge { addr: src.as_ptr() as u64, length: 1024, lkey: 1 };
            let at = p.qp[0].sq_cur_post() & (sq_cnt - 1);
            wrapped_umr_seen |= at + 4 > sq_cnt;
            // SAFETY: the SGEs point into the model's registered buffers, alive for the whole test.
            unsafe { p.ctx.post_crypto_mkey_configure(&mut p.qp[0], &mut mkey, &map, RR_RW_LW, &attr, &dek) }.unwrap();
            let mut w = SendWr::new(iter, WrOpcode::RdmaWrite, &sg);
            w.flags = SendFlags::SIGNALED;
            w.remote = uverbs::wr::RemoteAddr { addr: remote.as_ptr() as u64, rkey: RKEY };
            // SAFETY: the SGEs point into the model's registered buffers, alive for the whole test.
            unsafe { p.ctx.post_send(&mut p.qp[0], &[w]) }.unwrap();
            let wc = poll_all(&mut p, 0, 1)[0];
            assert_eq!((wc.wr_id, wc.status), (iter, WcStatus::Success));
            assert_eq!(rd(remote.as_ptr() as u64, 1024), expect_cipher(&attr, 0x100 + iter as u32, 0, &src), "iteration {iter}");
        }
        assert!(wrapped_umr_seen, "some UMR started within 4 blocks of the SQ end");
        let d = dev.lock().unwrap();
        assert!(d.umr_wrapped > 0, "the device read a UMR across the SQ end");
        assert_eq!((d.umrs, d.unfenced_after_umr), (3 * sq_cnt as usize, 0));
    }
}
#[test]
fn model_crypto_signaled_umr_completes_as_driver1() {
    // On a QP that signals every send (sq_sig_all), the UMR asks for a CQE too; libmlx5 reports
    // it as IBV_WC_DRIVER1 with the QP's wr_id (ours: 0), then the request through the mkey
    // completes as usual.
    for blueflame in [true, false] {
        let (mut p, dev) = crypto_device(create_pair_sig(QpType::Rc, crypto_caps(8), 15, blueflame, None, true));
        dev.lock().unwrap().mkeys.insert(CRYPTO_MKEY, None);
        let mut mkey = Mlx5CryptoMkey::detached(CRYPTO_MKEY, 1);
        let attr = perftest_crypto_attr(512);
        let plain: Vec<u8> = (0..1024u32).map(|i| (i * 3 + 1) as u8).collect();
        let mut remote = vec![0u8; 1024];
        let map = Sge { addr: plain.as_ptr() as u64, length: 1024, lkey: 1 };
        for round in 0..3u64 {
            // SAFETY: the SGEs point into the model's registered buffers, alive for the whole test.
            unsafe { p.ctx.post_crypto_mkey_configure(&mut p.qp[0], &mut mkey, &map, RR_RW_LW, &attr, &Mlx5Dek::detached(0x40)) }.unwrap();
            let umr_at = p.qp[0].sq_cur_post() - 4;
            let sq = p.qp[0].geo.sq_offset as u64 + p.qp[0].addrs().0;
            let ctrl = rd(sq + ((umr_at & (p.qp[0].geo.sq_wqe_cnt - 1)) as u64) * 64, 16);
            assert_eq!((ctrl[3], ctrl[11] & 0x08), (umr::OPCODE_UMR, 0x08), "the UMR asks for a CQE");
            let umr_wc = poll_all(&mut p, 0, 1)[0];
            assert_eq!(
                (umr_wc.wr_id, umr_wc.status, umr_wc.opcode, umr_wc.byte_len, umr_wc.qp_num),
                (0, WcStatus::Success, WcOpcode::Driver1, 0, 0x100),
                "round {round}"
            );
            let sg = [Sge { addr: 0, length: 1024, lkey: CRYPTO_MKEY }];
            let mut w = SendWr::new(0x600 + round, WrOpcode::RdmaWrite, &sg);
            w.remote = uverbs::wr::RemoteAddr { addr: remote.as_mut_ptr() as u64, rkey: RKEY };
            // SAFETY: the SGEs point into the model's registered buffers, alive for the whole test.
            unsafe { p.ctx.post_send(&mut p.qp[0], &[w]) }.unwrap();
            let wc = poll_all(&mut p, 0, 1)[0];
            assert_eq!((wc.wr_id, wc.status, wc.opcode), (0x600 + round, WcStatus::Success, WcOpcode::RdmaWrite));
            assert_eq!(remote, expect_cipher(&attr, 0x40, 0, &plain), "round {round}");
        }
        let d = dev.lock().unwrap();
        assert_eq!((d.umrs, d.crypto_requests, d.unfenced_after_umr), (3, 3, 0));
    }
}
