//! End-to-end through the EFA provider and the device model of `support/efa_model.rs`: SRD
//! (and UD) sends of every kind land in the peer's posted receives with their data, length,
//! source QP and immediate, RDMA reads fetch the peer's memory, and the completions come back
//! through `poll_cq`, over enough requests to wrap every ring and sub-CQ many times. Also what
//! the device reports for a send nobody can receive (RNR) or with a wrong QKEY.

mod support;

use support::efa_model::*;
use uverbs::provider::{Provider, QpCaps, QpType};
use uverbs::wr::{
    wc_flags, RecvWr, RemoteAddr, SendFlags, SendWr, Sge, UdDest, WcOpcode, WcStatus,
    WorkCompletion, WrOpcode,
};

const CAPS: QpCaps = QpCaps {
    max_send_wr: 4,
    max_recv_wr: 4,
    max_send_sge: 2,
    max_recv_sge: 2,
    max_inline_data: 32,
};

fn poll_one(f: &mut Fabric, cq: usize) -> WorkCompletion {
    let mut wc = [WorkCompletion::default(); 4];
    let n = f.ctx.poll_cq(&mut f.cqs[cq], &mut wc).unwrap();
    assert_eq!(n, 1, "CQ {cq}: one completion");
    wc[0]
}

fn dest(f: &Fabric, to: usize, qkey: u32) -> UdDest {
    UdDest {
        ah: f.ah,
        remote_qpn: f.qpn(to),
        remote_qkey: qkey,
    }
}

fn send_recv_both_ways(t: QpType) {
    let mut f = Fabric::new(t, 2, CAPS, 4);
    let mut src = [vec![0u8; 256], vec![0u8; 256]];
    let mut dst = [vec![0u8; 256], vec![0u8; 256]];
    let mut kinds = std::collections::HashSet::new();
    for iter in 0..400u64 {
        let s = (iter % 2) as usize;
        let d = 1 - s;
        for (k, b) in src[s].iter_mut().enumerate() {
            *b = (iter as u8).wrapping_mul(29).wrapping_add(k as u8);
        }
        dst[d].fill(0);
        // The receive: one buffer, or two of which the message may fill both.
        let rbase = dst[d].as_mut_ptr() as u64;
        let rsg = [
            Sge {
                addr: rbase,
                length: 40,
                lkey: 2,
            },
            Sge {
                addr: rbase + 128,
                length: 100,
                lkey: 2,
            },
        ];
        let nr = 1 + (iter / 2 % 2) as usize;
        // SAFETY: `dst[d]` is alive and unread until this receive completes.
        unsafe {
            f.ctx.post_recv(
                &mut f.qps[d],
                &[RecvWr {
                    wr_id: 9000 + iter,
                    sgl: &rsg[..nr],
                }],
            )
        }
        .unwrap();
        let kind = iter % 4;
        kinds.insert(kind);
        let sbase = src[s].as_ptr() as u64;
        let len = if nr == 1 {
            1 + (iter as u32 * 7) % 40
        } else {
            41 + (iter as u32) % 99
        };
        let one = [Sge {
            addr: sbase,
            length: len,
            lkey: 1,
        }];
        let split = len / 2;
        let two = [
            Sge {
                addr: sbase,
                length: split,
                lkey: 1,
            },
            Sge {
                addr: sbase + 200,
                length: len - split,
                lkey: 1,
            },
        ];
        let inline_len = len.min(32);
        let inl = [Sge {
            addr: sbase,
            length: inline_len,
            lkey: 1,
        }];
        let (sgl, flags, op): (&[Sge], SendFlags, WrOpcode) = match kind {
            0 => (&one, SendFlags::SIGNALED, WrOpcode::Send),
            1 => (&two, SendFlags::SIGNALED, WrOpcode::Send),
            2 => (
                &inl,
                SendFlags::SIGNALED | SendFlags::INLINE,
                WrOpcode::Send,
            ),
            _ => (&one, SendFlags::SIGNALED, WrOpcode::SendWithImm),
        };
        let mut wr = SendWr::new(iter, op, sgl);
        wr.flags = flags;
        wr.imm_data = (0xa0b0_0000 | iter as u32).to_be();
        wr.ud = Some(dest(&f, d, QKEY));
        // SAFETY: `src[s]` is alive and unchanged until the send completes.
        unsafe { f.ctx.post_send(&mut f.qps[s], &[wr]) }.unwrap();
        f.run();

        let sent = poll_one(&mut f, s);
        assert_eq!(
            (sent.wr_id, sent.status, sent.opcode),
            (iter, WcStatus::Success, WcOpcode::Send)
        );
        let got = poll_one(&mut f, d);
        let want: Vec<u8> = sgl
            .iter()
            .flat_map(|g| {
                // SAFETY: the SGEs point into `src[s]`, alive.
                unsafe { std::slice::from_raw_parts(g.addr as *const u8, g.length as usize) }
                    .to_vec()
            })
            .collect();
        assert_eq!(
            (got.wr_id, got.status, got.opcode),
            (9000 + iter, WcStatus::Success, WcOpcode::Recv),
            "{iter}"
        );
        assert_eq!(
            (got.byte_len as usize, got.src_qp, got.qp_num),
            (want.len(), f.qpn(s), f.qpn(d)),
            "{iter}"
        );
        let mut landed = dst[d][..40.min(want.len())].to_vec();
        if want.len() > 40 {
            landed.extend_from_slice(&dst[d][128..128 + want.len() - 40]);
        }
        assert_eq!(
            landed, want,
            "iteration {iter}: the message in the receive buffers"
        );
        let imm = got.wc_flags & wc_flags::WITH_IMM != 0;
        assert_eq!(imm, kind == 3, "{iter}: immediate flag");
        if imm {
            assert_eq!(u32::from_be(got.imm_data), 0xa0b0_0000 | iter as u32);
        }
    }
    assert_eq!(kinds.len(), 4);
    // 400 requests over 4-deep rings and 4-entry sub-CQs: every ring wrapped 50 times or more.
    assert!(f.qps[0].queues().sq.pc >= 200 && f.qps[1].queues().rq.pc >= 200);
}

#[test]
fn srd_send_and_receive_end_to_end_with_wraparound() {
    send_recv_both_ways(QpType::Srd);
}

#[test]
fn ud_send_and_receive_end_to_end_with_wraparound() {
    send_recv_both_ways(QpType::Ud);
}

#[test]
fn srd_rdma_read_fetches_the_peers_memory() {
    let mut f = Fabric::new(QpType::Srd, 2, CAPS, 4);
    let remote: Vec<u8> = (0..200u32).map(|i| (i * 13 + 5) as u8).collect();
    for iter in 0..12u64 {
        let mut local = vec![0u8; 200];
        let len = 10 + 15 * iter as u32;
        let sg = [Sge {
            addr: local.as_mut_ptr() as u64,
            length: len,
            lkey: 3,
        }];
        let mut wr = SendWr::new(50 + iter, WrOpcode::RdmaRead, &sg);
        wr.flags = SendFlags::SIGNALED;
        wr.remote = RemoteAddr {
            addr: remote.as_ptr() as u64,
            rkey: 0x77,
        };
        wr.ud = Some(dest(&f, 1, QKEY));
        // SAFETY: `local` is alive and untouched until the read completes; `remote` is alive.
        unsafe { f.ctx.post_send(&mut f.qps[0], &[wr]) }.unwrap();
        f.run();
        let wc = poll_one(&mut f, 0);
        assert_eq!((wc.wr_id, wc.status), (50 + iter, WcStatus::Success));
        assert_eq!(&local[..len as usize], &remote[..len as usize]);
    }
}

#[test]
fn the_device_reports_rnr_and_a_wrong_qkey() {
    let mut f = Fabric::new(QpType::Srd, 2, CAPS, 4);
    let buf = [7u8; 16];
    let sg = [Sge {
        addr: buf.as_ptr() as u64,
        length: 16,
        lkey: 1,
    }];
    let mut wr = SendWr::new(1, WrOpcode::Send, &sg);
    wr.flags = SendFlags::SIGNALED;
    wr.ud = Some(dest(&f, 1, QKEY));
    let mut bad_qkey = wr;
    bad_qkey.wr_id = 2;
    bad_qkey.ud = Some(dest(&f, 1, QKEY + 1));
    // SAFETY: `buf` is alive until both complete.
    unsafe { f.ctx.post_send(&mut f.qps[0], &[wr, bad_qkey]) }.unwrap();
    f.run();
    let mut wc = [WorkCompletion::default(); 4];
    assert_eq!(f.ctx.poll_cq(&mut f.cqs[0], &mut wc).unwrap(), 2);
    // No receive posted: RNR (libefa: RNR_RETRY_EXC_ERR); a QKEY no QP has: a bad destination.
    assert_eq!(
        (wc[0].wr_id, wc[0].status, wc[0].vendor_err),
        (1, WcStatus::RnrRetryExcErr, u32::from(ST_RNR))
    );
    assert_eq!(
        (wc[1].wr_id, wc[1].status, wc[1].vendor_err),
        (2, WcStatus::RemInvRdReqErr, u32::from(ST_BAD_DEST_QPN))
    );
    assert_eq!(
        f.ctx.poll_cq(&mut f.cqs[1], &mut wc).unwrap(),
        0,
        "nothing received"
    );
}

/// A read request of `len` bytes from the peer's `raddr` under `rkey` into `local`.
fn read_wr(wr_id: u64, sg: &[Sge], raddr: u64, rkey: u32, ud: UdDest) -> SendWr<'_> {
    let mut wr = SendWr::new(wr_id, WrOpcode::RdmaRead, sg);
    wr.flags = SendFlags::SIGNALED;
    wr.remote = RemoteAddr { addr: raddr, rkey };
    wr.ud = Some(ud);
    wr
}

/// ib_read_bw with `-c SRD` as perftest 6.29 drives it: every read signaled (CQ moderation 1),
/// the SQ kept full (tx depth), each read naming the AH, the peer's QPN and QKEY and the rkey
/// and address the peer sent, walking its buffer in message-size steps (perftest's cycle
/// buffer), on two QPs at once; the device runs whenever the SQ is full, and completions are
/// polled in batches. Each completed read's bytes are the peer's at that address.
#[test]
fn srd_read_bw_keeps_the_queue_full_and_every_read_lands() {
    const SIZE: usize = 24;
    const SLOTS: usize = 8;
    const RKEY: [u32; 2] = [0x5500, 0x6600];
    let mut f = Fabric::new(QpType::Srd, 4, CAPS, 4);
    // QPs 0 and 1 read from QPs 2 and 3, whose buffers hold a pattern of their own.
    let remote: Vec<Vec<u8>> = (0..2u32)
        .map(|p| {
            (0..(SIZE * SLOTS) as u32)
                .map(|i| (i * 7 + p * 101 + 3) as u8)
                .collect()
        })
        .collect();
    for p in 0..2 {
        f.expose(2 + p, RKEY[p], &remote[p]);
    }
    let mut local = [vec![0u8; SIZE * SLOTS], vec![0u8; SIZE * SLOTS]];
    let iters = 300u64;
    let (mut posted, mut done) = ([0u64; 2], [0u64; 2]);
    let mut wc = [WorkCompletion::default(); 16];
    while done.iter().sum::<u64>() < 2 * iters {
        for q in 0..2 {
            while posted[q] < iters && posted[q] - done[q] < u64::from(CAPS.max_send_wr) {
                let slot = (posted[q] as usize % SLOTS) * SIZE;
                let sg = [Sge {
                    addr: local[q][slot..].as_mut_ptr() as u64,
                    length: SIZE as u32,
                    lkey: 1,
                }];
                let raddr = remote[q].as_ptr() as u64 + slot as u64;
                let wr = read_wr(posted[q], &sg, raddr, RKEY[q], dest(&f, 2 + q, QKEY));
                // SAFETY: `local[q]` and `remote[q]` are alive; the slot is not read until
                // its read completes.
                unsafe { f.ctx.post_send(&mut f.qps[q], &[wr]) }.unwrap();
                posted[q] += 1;
            }
        }
        f.run();
        for q in 0..2 {
            let n = f.ctx.poll_cq(&mut f.cqs[q], &mut wc).unwrap();
            for c in &wc[..n] {
                assert_eq!((c.wr_id, c.status), (done[q], WcStatus::Success), "QP {q}");
                let slot = (c.wr_id as usize % SLOTS) * SIZE;
                assert_eq!(local[q][slot..slot + SIZE], remote[q][slot..slot + SIZE]);
                local[q][slot..slot + SIZE].fill(0);
                done[q] += 1;
            }
        }
    }
    // 300 reads per QP over a 4-deep SQ and 4-entry sub-CQs: both wrapped many times.
    assert!(f.qps[0].queues().sq.pc >= 300 && f.qps[1].queues().sq.pc >= 300);
}

/// ib_read_lat with `-c SRD`: one read at a time, posted, completed and checked before the
/// next, while the peer's buffer changes between reads (each read must fetch it afresh).
#[test]
fn srd_read_lat_ping_fetches_fresh_bytes_each_time() {
    let mut f = Fabric::new(QpType::Srd, 2, CAPS, 4);
    let mut remote = vec![0u8; 64];
    let mut local = vec![0u8; 64];
    for iter in 0..200u64 {
        for (k, b) in remote.iter_mut().enumerate() {
            *b = (iter as u8).wrapping_mul(31).wrapping_add(k as u8);
        }
        if iter == 0 {
            f.expose(1, 0x42, &remote);
        }
        let sg = [Sge {
            addr: local.as_mut_ptr() as u64,
            length: 64,
            lkey: 1,
        }];
        let wr = read_wr(iter, &sg, remote.as_ptr() as u64, 0x42, dest(&f, 1, QKEY));
        // SAFETY: both buffers are alive and untouched until the read completes.
        unsafe { f.ctx.post_send(&mut f.qps[0], &[wr]) }.unwrap();
        f.run();
        let wc = poll_one(&mut f, 0);
        assert_eq!(
            (wc.wr_id, wc.status, wc.opcode),
            (iter, WcStatus::Success, WcOpcode::Send)
        );
        // (libefa 44 reports a completed read as IBV_WC_SEND; perftest does not look.)
        assert_eq!(local, remote, "read {iter}");
    }
}

/// What the device answers for a read with the wrong rkey, beyond the peer's window, or to a
/// QPN nobody has; nothing is copied for any of them.
#[test]
fn srd_reads_outside_the_peers_window_fail_remotely() {
    let mut f = Fabric::new(QpType::Srd, 2, CAPS, 4);
    let remote = [9u8; 32];
    f.expose(1, 0x42, &remote);
    let mut local = [0u8; 32];
    let sg = [Sge {
        addr: local.as_mut_ptr() as u64,
        length: 32,
        lkey: 1,
    }];
    let base = remote.as_ptr() as u64;
    let mut nobody = dest(&f, 1, QKEY);
    nobody.remote_qpn = 0x7ff;
    let wrs = [
        read_wr(1, &sg, base, 0x43, dest(&f, 1, QKEY)),
        read_wr(2, &sg, base + 1, 0x42, dest(&f, 1, QKEY)),
        read_wr(3, &sg, base, 0x42, nobody),
    ];
    // SAFETY: both buffers are alive until the reads complete.
    unsafe { f.ctx.post_send(&mut f.qps[0], &wrs[..3]) }.unwrap();
    f.run();
    let mut wc = [WorkCompletion::default(); 4];
    assert_eq!(f.ctx.poll_cq(&mut f.cqs[0], &mut wc).unwrap(), 3);
    let got: Vec<_> = wc[..3]
        .iter()
        .map(|c| (c.wr_id, c.status, c.vendor_err))
        .collect();
    assert_eq!(
        got,
        [
            (1, WcStatus::GeneralErr, u32::from(ST_BAD_ADDRESS)),
            (2, WcStatus::GeneralErr, u32::from(ST_BAD_ADDRESS)),
            (3, WcStatus::RemInvRdReqErr, u32::from(ST_BAD_DEST_QPN)),
        ]
    );
    assert_eq!(local, [0u8; 32]);
}

/// A device whose caps lack RDMA read (libefa's fallback, or an EFA without it): the provider
/// says so in `srd_caps` (what the tools refuse `-c SRD` reads on) and refuses the request
/// itself in one line, before anything reaches the device.
#[test]
fn without_the_read_cap_reads_are_refused_before_the_device() {
    let no_read = providers::efa::DeviceCaps {
        device_caps: 0,
        ..caps()
    };
    // (`caps()` has RDMA write as well; without any cap the CQ has libefa 44's 16-byte entries.)
    let mut f = Fabric::with_caps(no_read, QpType::Srd, 2, CAPS, 4);
    let sc = f.ctx.srd_caps().unwrap();
    assert!(!sc.rdma_read && !sc.rdma_write);
    let with = Fabric::new(QpType::Srd, 1, CAPS, 4);
    let sc = with.ctx.srd_caps().unwrap();
    assert!(sc.rdma_read && sc.rdma_write && sc.max_rdma_size == 1 << 30);
    let remote = [1u8; 8];
    let mut local = [0u8; 8];
    let sg = [Sge {
        addr: local.as_mut_ptr() as u64,
        length: 8,
        lkey: 1,
    }];
    let wr = read_wr(1, &sg, remote.as_ptr() as u64, 0, dest(&f, 1, QKEY));
    // SAFETY: nothing is posted: the request is refused.
    let e = unsafe { f.ctx.post_send(&mut f.qps[0], &[wr]) }.unwrap_err();
    assert_eq!(e.error.errno, Some(libc::EINVAL));
    assert!(e.to_string().contains("RDMA_READ on an EFA SRD QP"), "{e}");
    assert_eq!(f.qps[0].queues().sq.pc, 0);
}

/// A write request of `sg` to the peer's `raddr` under `rkey`, with `imm` for WRITE_WITH_IMM.
fn write_wr(
    wr_id: u64,
    sg: &[Sge],
    raddr: u64,
    rkey: u32,
    ud: UdDest,
    imm: Option<u32>,
) -> SendWr<'_> {
    let op = if imm.is_some() {
        WrOpcode::RdmaWriteWithImm
    } else {
        WrOpcode::RdmaWrite
    };
    let mut wr = SendWr::new(wr_id, op, sg);
    wr.flags = SendFlags::SIGNALED;
    wr.remote = RemoteAddr { addr: raddr, rkey };
    wr.imm_data = imm.unwrap_or(0).to_be();
    wr.ud = Some(ud);
    wr
}

/// ib_write_bw with `-c SRD`: writes keep the SQ full, each naming AH, QPN, QKEY and the
/// peer's rkey and address, walking its buffer; each completes as IBV_WC_RDMA_WRITE and its
/// bytes are in the peer's buffer. No receive is consumed at the peer.
#[test]
fn srd_write_bw_lands_every_write_in_the_peers_buffer() {
    const SIZE: usize = 40;
    const SLOTS: usize = 8;
    let mut f = Fabric::new(QpType::Srd, 2, CAPS, 4);
    let remote = vec![0u8; SIZE * SLOTS];
    f.expose(1, 0x99, &remote);
    let mut local = vec![0u8; SIZE * SLOTS];
    let (iters, mut posted, mut done) = (300u64, 0u64, 0u64);
    let mut wc = [WorkCompletion::default(); 16];
    while done < iters {
        while posted < iters && posted - done < u64::from(CAPS.max_send_wr) {
            let slot = (posted as usize % SLOTS) * SIZE;
            for (k, b) in local[slot..slot + SIZE].iter_mut().enumerate() {
                *b = (posted as u8).wrapping_mul(11).wrapping_add(k as u8);
            }
            let sg = [Sge {
                addr: local[slot..].as_ptr() as u64,
                length: SIZE as u32,
                lkey: 1,
            }];
            let raddr = remote.as_ptr() as u64 + slot as u64;
            let wr = write_wr(posted, &sg, raddr, 0x99, dest(&f, 1, QKEY), None);
            // SAFETY: both buffers are alive; the slot is not rewritten before its write completes.
            unsafe { f.ctx.post_send(&mut f.qps[0], &[wr]) }.unwrap();
            posted += 1;
        }
        f.run();
        let n = f.ctx.poll_cq(&mut f.cqs[0], &mut wc).unwrap();
        for c in &wc[..n] {
            assert_eq!(
                (c.wr_id, c.status, c.opcode),
                (done, WcStatus::Success, WcOpcode::RdmaWrite)
            );
            let slot = (c.wr_id as usize % SLOTS) * SIZE;
            assert_eq!(
                remote[slot..slot + SIZE],
                local[slot..slot + SIZE],
                "write {done}"
            );
            done += 1;
        }
    }
    assert_eq!(
        f.ctx.poll_cq(&mut f.cqs[1], &mut wc).unwrap(),
        0,
        "no receive completion"
    );
}

/// ib_write_lat with `-c SRD`: the two sides write to each other in turn, each write's last
/// byte being what the other side waits for in its own buffer (perftest polls memory).
#[test]
fn srd_write_lat_ping_pong_over_memory() {
    let mut f = Fabric::new(QpType::Srd, 2, CAPS, 4);
    let bufs = [vec![0u8; 64], vec![0u8; 64]];
    let mut src = [vec![0u8; 64], vec![0u8; 64]];
    f.expose(0, 0x10, &bufs[0]);
    f.expose(1, 0x11, &bufs[1]);
    for iter in 0..200u64 {
        let (s, d) = ((iter % 2) as usize, 1 - (iter % 2) as usize);
        src[s].fill(iter as u8);
        let sg = [Sge {
            addr: src[s].as_ptr() as u64,
            length: 64,
            lkey: 1,
        }];
        let wr = write_wr(
            iter,
            &sg,
            bufs[d].as_ptr() as u64,
            0x10 + d as u32,
            dest(&f, d, QKEY),
            None,
        );
        // SAFETY: all buffers are alive until the write completes.
        unsafe { f.ctx.post_send(&mut f.qps[s], &[wr]) }.unwrap();
        f.run();
        assert_eq!(
            bufs[d][63], iter as u8,
            "the byte the peer polls, write {iter}"
        );
        assert_eq!(bufs[d], src[s]);
        let wc = poll_one(&mut f, s);
        assert_eq!(
            (wc.wr_id, wc.status, wc.opcode),
            (iter, WcStatus::Success, WcOpcode::RdmaWrite)
        );
    }
}

/// `--write_with_imm` with `-c SRD`: the write takes the peer's next receive, whose completion
/// is IBV_WC_RECV_RDMA_WITH_IMM with the immediate, the source QP and the full length (past
/// 64 KiB: its high bits come from the 32-byte entry); with no receive posted, RNR.
#[test]
fn srd_write_with_imm_completes_a_receive_with_the_whole_length() {
    let mut f = Fabric::new(QpType::Srd, 2, CAPS, 4);
    let len = 70_000usize;
    let remote = vec![0u8; len];
    f.expose(1, 0x5, &remote);
    let local: Vec<u8> = (0..len).map(|i| (i % 251) as u8).collect();
    let sg = [Sge {
        addr: local.as_ptr() as u64,
        length: len as u32,
        lkey: 1,
    }];
    let wr = write_wr(
        1,
        &sg,
        remote.as_ptr() as u64,
        0x5,
        dest(&f, 1, QKEY),
        Some(0xfeed_0001),
    );
    // SAFETY: both buffers are alive until the write completes.
    unsafe { f.ctx.post_send(&mut f.qps[0], &[wr]) }.unwrap();
    f.run();
    let wc = poll_one(&mut f, 0);
    assert_eq!(
        (wc.wr_id, wc.status),
        (1, WcStatus::RnrRetryExcErr),
        "no receive posted"
    );
    let mut rbuf = [0u8; 8];
    let rsg = [Sge {
        addr: rbuf.as_mut_ptr() as u64,
        length: 8,
        lkey: 2,
    }];
    for round in 0..6u64 {
        // SAFETY: the receive buffer stays alive and untouched (a write fills no receive buffer).
        unsafe {
            f.ctx.post_recv(
                &mut f.qps[1],
                &[RecvWr {
                    wr_id: 700 + round,
                    sgl: &rsg,
                }],
            )
        }
        .unwrap();
        let wr = write_wr(
            2 + round,
            &sg,
            remote.as_ptr() as u64,
            0x5,
            dest(&f, 1, QKEY),
            Some(0xfeed_0000 | round as u32),
        );
        // SAFETY: as above.
        unsafe { f.ctx.post_send(&mut f.qps[0], &[wr]) }.unwrap();
        f.run();
        let sent = poll_one(&mut f, 0);
        assert_eq!(
            (sent.wr_id, sent.status, sent.opcode),
            (2 + round, WcStatus::Success, WcOpcode::RdmaWrite)
        );
        let got = poll_one(&mut f, 1);
        assert_eq!(
            (got.wr_id, got.status, got.opcode),
            (700 + round, WcStatus::Success, WcOpcode::RecvRdmaWithImm)
        );
        assert_eq!((got.byte_len as usize, got.src_qp), (len, f.qpn(0)));
        assert_eq!(got.wc_flags & wc_flags::WITH_IMM, wc_flags::WITH_IMM);
        assert_eq!(u32::from_be(got.imm_data), 0xfeed_0000 | round as u32);
        assert_eq!(remote, local);
        assert_eq!(rbuf, [0u8; 8]);
    }
}

/// Writes are refused before the device where they cannot go: a device without the write cap
/// (SRD), and UD, which has no RDMA at all.
#[test]
fn without_the_write_cap_or_on_ud_writes_are_refused() {
    let read_only = providers::efa::DeviceCaps {
        device_caps: providers::efa::abi::CAPS_RDMA_READ,
        ..caps()
    };
    let buf = [0u8; 8];
    let sg = [Sge {
        addr: buf.as_ptr() as u64,
        length: 8,
        lkey: 1,
    }];
    for (c, t) in [(read_only, QpType::Srd), (caps(), QpType::Ud)] {
        let mut f = Fabric::with_caps(c, t, 2, CAPS, 4);
        for imm in [None, Some(1)] {
            let wr = write_wr(1, &sg, buf.as_ptr() as u64, 0, dest(&f, 1, QKEY), imm);
            // SAFETY: nothing is posted: the request is refused.
            let e = unsafe { f.ctx.post_send(&mut f.qps[0], &[wr]) }.unwrap_err();
            assert_eq!(e.error.errno, Some(libc::EINVAL), "{t:?}");
            assert!(e.to_string().contains("RDMA_WRITE"), "{e}");
        }
        assert_eq!(f.qps[0].queues().sq.pc, 0);
    }
    let f = Fabric::with_caps(read_only, QpType::Srd, 1, CAPS, 4);
    assert!(!f.ctx.srd_caps().unwrap().rdma_write);
}
