//! End-to-end through the bnxt_re provider and the device model of `support/bnxt_model.rs`,
//! in static WQE mode (BCM57414) and variable mode (Thor): every WQE kind perftest and qperf
//! post (send with one or two SGEs, inline, with immediate; RDMA write, inline and with
//! immediate; read; compare-and-swap; fetch-and-add) both ways over RC, send and write over UC,
//! UD sends with their Q_Key and source QP, SRQ receives, unsignalled requests retired by a
//! later completion, over enough requests to wrap every ring and CQ many times; and the error
//! completions with the software flush that follows them.

mod support;

use support::bnxt_model::*;
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
    max_inline_data: 64,
};

fn cfg(qp_type: QpType, variable: bool) -> Config {
    Config {
        qp_type,
        nqp: 2,
        caps: CAPS,
        cq_entries: 4,
        variable,
        p7: false,
        srq: None,
    }
}

/// One registered buffer of the test.
struct Buf {
    b: Vec<u8>,
    key: u32,
}

impl Buf {
    fn new(f: &mut Fabric, len: usize) -> Buf {
        let mut b = vec![0u8; len];
        let key = f.register(&mut b);
        Buf { b, key }
    }
    fn sge(&self, off: usize, len: u32) -> Sge {
        Sge {
            addr: self.b.as_ptr() as u64 + off as u64,
            length: len,
            lkey: self.key,
        }
    }
    fn addr(&self, off: usize) -> u64 {
        self.b.as_ptr() as u64 + off as u64
    }
}

fn post_recv(f: &mut Fabric, q: usize, wr_id: u64, sgl: &[Sge]) {
    let wr = [RecvWr { wr_id, sgl }];
    // SAFETY: the SGEs name registered buffers the test keeps alive and unread until the
    // receive completes.
    let r = unsafe {
        match f.srq.as_mut() {
            Some(s) => f.ctx.post_srq_recv(s, &wr),
            None => f.ctx.post_recv(&mut f.qps[q], &wr),
        }
    };
    r.unwrap();
}

fn post_send(f: &mut Fabric, q: usize, wr: SendWr<'_>) {
    // SAFETY: the SGEs name registered buffers alive and unchanged until the request completes.
    unsafe { f.ctx.post_send(&mut f.qps[q], &[wr]) }.unwrap();
}

fn one(f: &mut Fabric, c: usize) -> WorkCompletion {
    let wc = f.poll(c, 4);
    assert_eq!(wc.len(), 1, "CQ {c}: one completion, got {wc:?}");
    wc[0]
}

/// The ten request kinds, in the order the loop cycles through them.
const KINDS: [&str; 10] = [
    "send",
    "send2",
    "send-inline",
    "send-imm",
    "write",
    "write-inline",
    "write-imm",
    "read",
    "cas",
    "faa",
];

/// Pattern of iteration `i`.
fn fill(b: &mut [u8], i: u64) {
    for (k, x) in b.iter_mut().enumerate() {
        *x = (i as u8).wrapping_mul(31).wrapping_add(k as u8 ^ 0x5a);
    }
}

fn every_kind_both_ways(c: Config, iters: u64) {
    let qp_type = c.qp_type;
    let mut f = Fabric::new(c);
    let mut src = [Buf::new(&mut f, 512), Buf::new(&mut f, 512)];
    let mut dst = [Buf::new(&mut f, 512), Buf::new(&mut f, 512)];
    let uc = qp_type == QpType::Uc;
    let mut silent_pending = [0u32; 2];
    for iter in 0..iters {
        let s = (iter % 2) as usize;
        let d = 1 - s;
        let mut kind = (iter / 2 % KINDS.len() as u64) as usize;
        if uc && kind >= 7 {
            kind -= 3; // no READ or atomics on UC: writes again
        }
        fill(&mut src[s].b, iter);
        dst[d].b.fill(0);
        let len = 1 + (iter as u32 * 37) % 60;
        let needs_recv = matches!(kind, 0..=3 | 6);
        if needs_recv {
            post_recv(
                &mut f,
                d,
                9000 + iter,
                &[dst[d].sge(0, 20), dst[d].sge(100, 300)],
            );
        }
        let one_sge = [src[s].sge(8, len)];
        let two = [src[s].sge(8, len / 2), src[s].sge(200, len - len / 2)];
        let local8 = [src[s].sge(0, 8)];
        let (op, sgl): (WrOpcode, &[Sge]) = match kind {
            0 | 2 => (WrOpcode::Send, &one_sge),
            1 => (WrOpcode::Send, &two),
            3 => (WrOpcode::SendWithImm, &one_sge),
            4 | 5 => (WrOpcode::RdmaWrite, &two),
            6 => (WrOpcode::RdmaWriteWithImm, &one_sge),
            7 => (WrOpcode::RdmaRead, &one_sge),
            8 => (WrOpcode::AtomicCmpAndSwp, &local8),
            _ => (WrOpcode::AtomicFetchAndAdd, &local8),
        };
        let mut wr = SendWr::new(iter, op, sgl);
        // One request in five unsignalled (never a READ or atomic, whose result the test reads).
        let silent = iter % 5 == 4 && kind < 7;
        wr.flags = if silent {
            SendFlags::empty()
        } else {
            SendFlags::SIGNALED
        };
        if matches!(kind, 2 | 5) {
            wr.flags = wr.flags | SendFlags::INLINE;
        }
        wr.imm_data = (0xc0de_0000 | iter as u32).to_be();
        let roff = 64 + (iter as usize % 4) * 8;
        wr.remote = RemoteAddr {
            addr: dst[d].addr(roff),
            rkey: dst[d].key,
        };
        let old = 0x1111_0000_0000_0000 | iter;
        if kind >= 7 {
            dst[d].b[roff..roff + 8].copy_from_slice(&old.to_le_bytes());
            wr.compare_add = if kind == 8 { old } else { 5 };
            wr.swap = 0xabcd_ef00 | iter;
        }
        if kind == 7 {
            fill(&mut dst[d].b[roff..roff + 64], iter ^ 0x77);
            src[s].b[8..8 + len as usize].fill(0);
        }
        post_send(&mut f, s, wr);
        f.run();

        let sent = f.poll(s, 4);
        if silent {
            assert!(
                sent.is_empty(),
                "{iter}: an unsignalled request completes silently"
            );
            silent_pending[s] += 1;
        } else {
            assert_eq!(sent.len(), 1, "{iter} {}: {sent:?}", KINDS[kind]);
            let want_op = WcOpcode::for_send(op);
            assert_eq!(
                (
                    sent[0].wr_id,
                    sent[0].status,
                    sent[0].opcode,
                    sent[0].qp_num
                ),
                (iter, WcStatus::Success, want_op, f.qpn(s)),
                "{iter} {}",
                KINDS[kind]
            );
            silent_pending[s] = 0;
        }
        let want: Vec<u8> = sgl
            .iter()
            .flat_map(|g| {
                let o = (g.addr - src[s].addr(0)) as usize;
                src[s].b[o..o + g.length as usize].to_vec()
            })
            .collect();
        match kind {
            0..=3 | 6 => {
                let got = one(&mut f, d);
                let imm = matches!(kind, 3 | 6);
                let opc = if kind == 6 {
                    WcOpcode::RecvRdmaWithImm
                } else {
                    WcOpcode::Recv
                };
                assert_eq!(
                    (
                        got.wr_id,
                        got.status,
                        got.opcode,
                        got.byte_len as usize,
                        got.qp_num
                    ),
                    (9000 + iter, WcStatus::Success, opc, want.len(), f.qpn(d)),
                    "{iter} {}",
                    KINDS[kind]
                );
                assert_eq!(got.wc_flags & wc_flags::WITH_IMM != 0, imm, "{iter}");
                if imm {
                    assert_eq!(u32::from_be(got.imm_data), 0xc0de_0000 | iter as u32);
                }
                if kind == 6 {
                    assert_eq!(
                        &dst[d].b[roff..roff + want.len()],
                        &want[..],
                        "{iter}: written"
                    );
                } else {
                    let mut landed = dst[d].b[..20.min(want.len())].to_vec();
                    if want.len() > 20 {
                        landed.extend_from_slice(&dst[d].b[100..100 + want.len() - 20]);
                    }
                    assert_eq!(landed, want, "{iter} {}: the message", KINDS[kind]);
                }
            }
            4 | 5 => assert_eq!(
                &dst[d].b[roff..roff + want.len()],
                &want[..],
                "{iter}: written"
            ),
            7 => {
                assert_eq!(sent[0].byte_len, len, "a READ reports its length");
                assert_eq!(
                    src[s].b[8..8 + len as usize],
                    dst[d].b[roff..roff + len as usize]
                );
            }
            _ => {
                assert_eq!(
                    le(&src[s].b[0..8]),
                    old,
                    "{iter}: the atomic returns the old value"
                );
                let now = le(&dst[d].b[roff..roff + 8]);
                let new = if kind == 8 {
                    0xabcd_ef00 | iter
                } else {
                    old + 5
                };
                assert_eq!(now, new, "{iter}: {}", KINDS[kind]);
            }
        }
        if !matches!(kind, 0..=3 | 6) {
            assert!(f.poll(d, 4).is_empty(), "{iter}: nothing received");
        }
    }
    // Every ring wrapped: each QP posted more requests than its SQ has software entries.
    for q in 0..2 {
        assert!(
            u64::from(f.qps[q].sq.nswr) * 2 < iters / 2,
            "SQ of QP {q} wraps twice"
        );
    }
}

fn le(b: &[u8]) -> u64 {
    u64::from_le_bytes(b.try_into().unwrap())
}

fn thor2(qp_type: QpType) -> Config {
    Config {
        p7: true,
        ..cfg(qp_type, true)
    }
}

#[test]
fn rc_every_wqe_kind_both_ways_static_mode() {
    // Static mode keeps 128 spare entries: 256 software entries, wrapped twice by 1100 requests.
    every_kind_both_ways(cfg(QpType::Rc, false), 2200);
}

#[test]
fn rc_every_wqe_kind_both_ways_variable_mode() {
    every_kind_both_ways(cfg(QpType::Rc, true), 400);
}

#[test]
fn uc_sends_and_writes_both_ways() {
    every_kind_both_ways(cfg(QpType::Uc, true), 400);
}

fn ud_sends(c: Config) {
    let mut f = Fabric::new(c);
    let mut src = [Buf::new(&mut f, 256), Buf::new(&mut f, 256)];
    let mut dst = [Buf::new(&mut f, 256), Buf::new(&mut f, 256)];
    for iter in 0..300u64 {
        let s = (iter % 2) as usize;
        let d = 1 - s;
        fill(&mut src[s].b, iter);
        dst[d].b.fill(0xee);
        post_recv(
            &mut f,
            d,
            7000 + iter,
            &[dst[d].sge(0, 64), dst[d].sge(128, 128)],
        );
        let len = 1 + (iter as u32 * 13) % 64;
        let sg = [src[s].sge(16, len)];
        let kind = iter % 3;
        let op = if kind == 2 {
            WrOpcode::SendWithImm
        } else {
            WrOpcode::Send
        };
        let mut wr = SendWr::new(iter, op, &sg);
        wr.flags = SendFlags::SIGNALED;
        if kind == 1 {
            wr.flags = wr.flags | SendFlags::INLINE;
        }
        wr.imm_data = (0x0bad_0000 | iter as u32).to_be();
        wr.ud = Some(UdDest {
            ah: f.ah,
            remote_qpn: f.qpn(d),
            remote_qkey: QKEY,
        });
        post_send(&mut f, s, wr);
        f.run();
        let sent = one(&mut f, s);
        assert_eq!((sent.wr_id, sent.status), (iter, WcStatus::Success));
        let got = one(&mut f, d);
        assert_eq!(
            (got.wr_id, got.status, got.byte_len, got.src_qp, got.qp_num),
            (
                7000 + iter,
                WcStatus::Success,
                GRH as u32 + len,
                f.qpn(s),
                f.qpn(d)
            ),
            "{iter}"
        );
        assert!(got.wc_flags & wc_flags::GRH != 0);
        assert_eq!(got.wc_flags & wc_flags::WITH_IMM != 0, kind == 2);
        let mut landed = dst[d].b[..64].to_vec();
        landed.extend_from_slice(&dst[d].b[128..256]);
        assert_eq!(&landed[..GRH], &[0; GRH], "the GRH room");
        assert_eq!(
            &landed[GRH..GRH + len as usize],
            &src[s].b[16..16 + len as usize]
        );
    }
}

#[test]
fn ud_sends_static_mode() {
    ud_sends(cfg(QpType::Ud, false));
}

#[test]
fn ud_sends_variable_mode() {
    ud_sends(cfg(QpType::Ud, true));
}

#[test]
fn ud_drops_what_nobody_may_receive() {
    let mut f = Fabric::new(cfg(QpType::Ud, true));
    let src = Buf::new(&mut f, 64);
    let mut dst = Buf::new(&mut f, 128);
    dst.b.fill(0xee);
    post_recv(&mut f, 1, 1, &[dst.sge(0, 128)]);
    let sg = [src.sge(0, 16)];
    let send = |wr_id, qkey, qpn| {
        let mut wr = SendWr::new(wr_id, WrOpcode::Send, &sg);
        wr.flags = SendFlags::SIGNALED;
        wr.ud = Some(UdDest {
            ah: f.ah,
            remote_qpn: qpn,
            remote_qkey: qkey,
        });
        wr
    };
    let (wrong_qkey, nobody, good) = (
        send(10, QKEY + 1, f.qpn(1)),
        send(11, QKEY, 0x999),
        send(12, QKEY, f.qpn(1)),
    );
    let mut bad_ah = send(13, QKEY, f.qpn(1));
    bad_ah.ud.as_mut().unwrap().ah = AVID + 1;
    for wr in [wrong_qkey, nobody, good, bad_ah] {
        post_send(&mut f, 0, wr);
    }
    f.run();
    let wc = f.poll(0, 8);
    let got: Vec<_> = wc.iter().map(|w| (w.wr_id, w.status)).collect();
    // The three sends complete; an AH the device does not know fails the QP.
    assert_eq!(
        got,
        [
            (10, WcStatus::Success),
            (11, WcStatus::Success),
            (12, WcStatus::Success),
            (13, WcStatus::LocQpOpErr)
        ]
    );
    let r = one(&mut f, 1);
    assert_eq!(
        (r.wr_id, r.byte_len),
        (1, GRH as u32 + 16),
        "only the right Q_Key arrives"
    );
}

#[test]
fn srq_receives_for_two_qps() {
    srq_receives(cfg(QpType::Rc, true));
}

fn srq_receives(mut c: Config) {
    c.srq = Some(6);
    let mut f = Fabric::new(c);
    let src = Buf::new(&mut f, 64);
    let mut dst = Buf::new(&mut f, 64 * 8);
    for iter in 0..200u64 {
        // Keep the SRQ topped up (8 entries: one stays free) for whichever QP receives.
        let s = (iter % 3 == 0) as usize;
        let slot = (iter % 7) as usize;
        dst.b[slot * 64..slot * 64 + 64].fill(0);
        post_recv(&mut f, 0, 5000 + iter, &[dst.sge(slot * 64, 64)]);
        let len = 1 + (iter as u32 % 40);
        let sg = [src.sge(0, len)];
        let mut wr = SendWr::new(iter, WrOpcode::SendWithImm, &sg);
        wr.flags = SendFlags::SIGNALED;
        wr.imm_data = (iter as u32).to_be();
        post_send(&mut f, s, wr);
        f.run();
        assert_eq!(one(&mut f, s).status, WcStatus::Success);
        let got = one(&mut f, 1 - s);
        assert_eq!(
            (
                got.wr_id,
                got.status,
                got.byte_len,
                got.qp_num,
                u32::from_be(got.imm_data)
            ),
            (
                5000 + iter,
                WcStatus::Success,
                len,
                f.qpn(1 - s),
                iter as u32
            ),
            "{iter}: the SRQ's entries in order, whichever QP receives"
        );
        assert_eq!(
            &dst.b[slot * 64..slot * 64 + len as usize],
            &src.b[..len as usize]
        );
    }
}

#[test]
fn an_error_completion_and_the_software_flush() {
    for variable in [false, true] {
        let mut f = Fabric::new(cfg(QpType::Rc, variable));
        let src = Buf::new(&mut f, 64);
        let dst = Buf::new(&mut f, 64);
        // The first receive is too small for the message.
        post_recv(&mut f, 1, 100, &[dst.sge(0, 8)]);
        post_recv(&mut f, 1, 101, &[dst.sge(8, 32)]);
        post_recv(&mut f, 1, 102, &[dst.sge(40, 24)]);
        let sg = [src.sge(0, 16)];
        for id in 1..=3 {
            let mut wr = SendWr::new(id, WrOpcode::Send, &sg);
            wr.flags = SendFlags::SIGNALED;
            post_send(&mut f, 0, wr);
        }
        f.run();
        assert!(f.in_error(0) && f.in_error(1));
        let sent: Vec<_> = f.poll(0, 8).iter().map(|w| (w.wr_id, w.status)).collect();
        assert_eq!(
            sent,
            [
                (1, WcStatus::RemInvReqErr),
                (2, WcStatus::WrFlushErr),
                (3, WcStatus::WrFlushErr)
            ],
            "variable {variable}: the error, then software flushes what the device never did"
        );
        let recv: Vec<_> = f.poll(1, 8).iter().map(|w| (w.wr_id, w.status)).collect();
        assert_eq!(
            recv,
            [
                (100, WcStatus::LocLenErr),
                (101, WcStatus::WrFlushErr),
                (102, WcStatus::WrFlushErr)
            ]
        );
        assert!(
            f.poll(0, 8).is_empty() && f.poll(1, 8).is_empty(),
            "flushed once"
        );
        let wr = SendWr::new(4, WrOpcode::Send, &sg);
        // SAFETY: as post_send.
        let e = unsafe { f.ctx.post_send(&mut f.qps[0], &[wr]) }.unwrap_err();
        assert_eq!(
            e.error.errno,
            Some(libc::EINVAL),
            "a QP in error takes no sends"
        );
    }
}

#[test]
fn rnr_and_remote_access_errors() {
    let mut f = Fabric::new(cfg(QpType::Rc, true));
    let src = Buf::new(&mut f, 64);
    let sg = [src.sge(0, 8)];
    let mut wr = SendWr::new(1, WrOpcode::Send, &sg);
    wr.flags = SendFlags::SIGNALED;
    post_send(&mut f, 0, wr);
    f.run();
    assert_eq!(
        one(&mut f, 0).status,
        WcStatus::RnrRetryExcErr,
        "no receive posted"
    );
    assert!(!f.in_error(1), "RNR leaves the responder alone");

    // A write with a wrong key: the requester fails, the responder gets a terminal entry and
    // its posted receive is flushed.
    let mut f = Fabric::new(cfg(QpType::Rc, false));
    let src = Buf::new(&mut f, 64);
    let dst = Buf::new(&mut f, 64);
    let sg = [src.sge(0, 8)];
    post_recv(&mut f, 0, 50, &[src.sge(32, 32)]);
    let mut w = SendWr::new(2, WrOpcode::RdmaWrite, &sg);
    w.flags = SendFlags::SIGNALED;
    w.remote = RemoteAddr {
        addr: dst.addr(0),
        rkey: dst.key + 1,
    };
    post_send(&mut f, 1, w);
    f.run();
    assert_eq!(one(&mut f, 1).status, WcStatus::RemAccessErr);
    let flushed = one(&mut f, 0);
    assert_eq!((flushed.wr_id, flushed.status), (50, WcStatus::WrFlushErr));

    // A local SGE outside its registration.
    let mut g = Fabric::new(cfg(QpType::Rc, false));
    let b = Buf::new(&mut g, 16);
    let bad = [b.sge(8, 16)];
    let mut wr = SendWr::new(3, WrOpcode::RdmaWrite, &bad);
    wr.flags = SendFlags::SIGNALED;
    wr.remote = RemoteAddr {
        addr: b.addr(0),
        rkey: b.key,
    };
    post_send(&mut g, 0, wr);
    g.run();
    assert_eq!(one(&mut g, 0).status, WcStatus::LocProtErr);
}

#[test]
fn arming_reaches_the_device() {
    let mut f = Fabric::new(cfg(QpType::Rc, true));
    f.ctx.arm_cq(&mut f.cqs[0], true).unwrap();
    f.run();
    assert_eq!(f.armed(0), Some(5), "solicited-only arm");
    f.ctx.arm_cq(&mut f.cqs[1], false).unwrap();
    let _ = f.poll(1, 1);
    f.run();
    assert_eq!(
        f.armed(1),
        Some(6),
        "arm all, rung on the first arm and after the poll"
    );
}

#[test]
fn ud_goes_rts_to_rts_every_4m_wqes_and_keeps_sending() {
    use providers::bnxt_re::hw::UD_QP_HW_STALL;
    let mut f = Fabric::new(cfg(QpType::Ud, false));
    let src = Buf::new(&mut f, 64);
    let dst = Buf::new(&mut f, 64 * 8);
    // Start three WQEs short of the count rather than post 4M.
    f.qps[0].ud_wqes = UD_QP_HW_STALL - 3;
    for iter in 0..8u64 {
        post_recv(&mut f, 1, iter, &[dst.sge(iter as usize * 64, 64)]);
        let sg = [src.sge(0, 16)];
        let mut wr = SendWr::new(iter, WrOpcode::Send, &sg);
        wr.flags = SendFlags::SIGNALED;
        wr.ud = Some(UdDest {
            ah: f.ah,
            remote_qpn: f.qpn(1),
            remote_qkey: QKEY,
        });
        post_send(&mut f, 0, wr);
        f.run();
        // Each iteration rings four doorbells (RQ, SQ, and the CQ of each poll): the modify
        // after the third request follows two iterations and that one's RQ doorbell, and
        // precedes its SQ doorbell.
        let want: &[(usize, usize)] = if iter < 2 { &[] } else { &[(0, 4 * 2 + 1)] };
        assert_eq!(f.rts_again, want, "after request {iter}");
        assert_eq!(one(&mut f, 0).status, WcStatus::Success, "{iter}");
        assert_eq!(one(&mut f, 1).byte_len, GRH as u32 + 16, "{iter}");
    }
    assert_eq!(f.qps[0].ud_wqes, 5, "counting again after the modify");
}

// ---- Thor 2: rdma-core 50's doorbells and the CQ toggle page (no byte oracle: libbnxt_re 44
// predates them; the model checks the epochs and toggles it tracks itself) --------------------

#[test]
fn thor2_every_wqe_kind_with_epochs_through_many_wraps() {
    every_kind_both_ways(thor2(QpType::Rc), 400);
}

#[test]
fn thor2_ud_and_srq_doorbells_carry_their_epochs() {
    ud_sends(thor2(QpType::Ud));
    srq_receives(thor2(QpType::Rc));
}

#[test]
fn thor2_arms_carry_the_toggle_the_kernel_left() {
    let mut f = Fabric::new(thor2(QpType::Rc));
    let src = Buf::new(&mut f, 64);
    let dst = Buf::new(&mut f, 64);
    for iter in 0..10u64 {
        // Arm the receiving CQ, then a message: the completion is an event, and the kernel
        // leaves a new toggle, which the arm rung after the next poll must carry.
        f.ctx.arm_cq(&mut f.cqs[1], iter % 2 == 0).unwrap();
        post_recv(&mut f, 1, iter, &[dst.sge(0, 64)]);
        let sg = [src.sge(0, 8)];
        let mut wr = SendWr::new(iter, WrOpcode::Send, &sg);
        wr.flags = SendFlags::SIGNALED;
        post_send(&mut f, 0, wr);
        f.run();
        assert_eq!(
            f.events(1),
            iter as u32 + 1,
            "{iter}: an event per armed completion"
        );
        assert_eq!(one(&mut f, 0).status, WcStatus::Success);
        assert_eq!(one(&mut f, 1).wr_id, iter);
        f.run();
        let want = if iter % 2 == 0 { 5 } else { 6 };
        assert_eq!(
            f.armed(1),
            Some(want),
            "{iter}: armed again, with the new toggle"
        );
    }
}
