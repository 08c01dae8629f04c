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
