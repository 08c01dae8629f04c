//! The EFA provider (`impl Provider for Efa`) against Debian's libefa (rdma-core 44): the
//! oracle captures of `fixtures/efa/` (tests/efa-oracle/ writes them) replayed through our
//! provider itself, over heap memory in the mappings' place ([`HeapRegion`]; the replay is
//! `support/efa.rs`): the create-QP udata must ask for libefa's ring sizes, every post must leave
//! libefa's descriptor bytes in the LLQ or RQ ring and ring libefa's doorbell value, and every
//! completion the device writes must come out of `poll_cq` as libefa's `ibv_poll_cq` reported
//! it, with libefa's CQ doorbell. The set-up record (`setup.jsonl`): the same udata for every
//! set-up command and the same mappings.
//!
//! Also the set-up checks: every kernel-given offset and size that does not fit is refused.

mod support;

use std::os::fd::OwnedFd;
use std::sync::Arc;

use providers::efa::abi;
use providers::efa::mem::HeapRegion;
use providers::efa::EfaConfig;
use serde_json::Value;
use support::efa::*;
use uverbs::provider::{
    AhAttr, AhCreated, CqCreated, DeviceDesc, Provider, QpCaps, QpCreated, QpInitAttr, QpType,
};
use uverbs::wr::{SendFlags, SendWr, Sge, UdDest, WorkCompletion, WrOpcode};

#[test]
fn the_provider_writes_and_reports_what_libefa_does() {
    let counts = replay(&events("golden.jsonl"));
    assert!(
        counts["send"] >= 20 && counts["recv"] >= 4 && counts["poll"] >= 25,
        "{counts:?}"
    );
}

#[test]
fn the_provider_matches_libefa_on_a_random_sequence() {
    let counts = replay(&events("random.jsonl"));
    assert!(
        counts["send"] >= 100 && counts["recv"] >= 50 && counts["poll"] >= 150,
        "{counts:?}"
    );
}

/// CQ events: libefa's CREATE_CQ with a completion channel, its arm doorbells (the consumer
/// counter, the two-bit count of events seen, the arm bit), the poll doorbells between them,
/// the count wrapping after four events, and its refusal of a solicited-only arm.
#[test]
fn cq_events_arm_and_count_as_libefa_does() {
    let evs = events("events.jsonl");
    let counts = replay(&evs);
    assert_eq!(
        (counts["arm"], counts["event"], counts["poll"]),
        (7, 6, 6),
        "{counts:?}"
    );
    // The set-up: the channel flag in CREATE_CQ's driver data, nothing else changed.
    let setup = events("setup-events.jsonl");
    let cq = setup.iter().find(|e| e["cmd"] == "CREATE_CQ").unwrap();
    let ctx = context(&evs[0]);
    let (_, _, ud) = ctx.prepare_cq_for(16, true).unwrap();
    assert_eq!(ud.req, unhex(cq["drv_in"].as_str().unwrap()));
    // Without CQ notifications in its caps, a channel is refused as libefa refuses it.
    let ctx = context(&test_dev());
    assert!(!ctx.cq_events());
    assert_eq!(
        errno(ctx.prepare_cq_for(16, true).map(|_| ())),
        Some(libc::EOPNOTSUPP)
    );
    assert!(ctx.prepare_cq_for(16, false).is_ok());
}

fn test_dev() -> Value {
    events("golden.jsonl").swap_remove(0)
}

fn attr(t: QpType) -> QpInitAttr {
    QpInitAttr {
        qp_type: t,
        caps: QpCaps {
            max_send_wr: 4,
            max_recv_wr: 4,
            max_send_sge: 2,
            max_recv_sge: 1,
            max_inline_data: 32,
        },
        sq_sig_all: false,
        uses_srq: false,
    }
}

fn errno<T>(r: uverbs::Result<T>) -> Option<i32> {
    r.err().and_then(|e| e.errno)
}

#[test]
fn kernel_offsets_and_sizes_that_do_not_fit_are_refused() {
    let ctx = context(&test_dev());
    let a = attr(QpType::Srd);
    let core = QpCreated {
        handle: 1,
        qpn: 5,
        caps: a.caps,
    };
    let finish = |resp: Vec<u8>| {
        let (prep, _) = ctx.prepare_qp(&a).unwrap();
        ctx.finish_qp(prep, &a, &core, &resp).map(|_| ())
    };
    assert!(finish(qp_resp(5, 64, 0)).is_ok());
    assert!(
        finish(qp_resp(5, 64, 0x40)).is_ok(),
        "LLQ descriptors a 64-byte step into the page"
    );
    assert!(
        finish(qp_resp(5, 64, 0x20)).is_err(),
        "LLQ descriptors not 64-byte aligned"
    );
    assert!(
        finish(qp_resp(5, 64, 1 << 20)).is_err(),
        "LLQ descriptors beyond the first page"
    );
    assert!(
        finish(qp_resp(5, 32, 0)).is_err(),
        "an RQ ring smaller than asked"
    );
    let mut r = qp_resp(5, 64, 0);
    r[8..12].copy_from_slice(&0xfffe_u32.to_le_bytes());
    assert!(finish(r).is_err(), "SQ doorbell outside its page");
    let mut r = qp_resp(5, 64, 0);
    r[4..8].copy_from_slice(&6u32.to_le_bytes());
    assert!(finish(r).is_err(), "unaligned RQ doorbell");
    assert!(
        finish(qp_resp(5, 64, 0)[..63].to_vec()).is_err(),
        "a short answer"
    );

    let cq = |size: u64, db: Option<u32>, cqe: u32| {
        let (prep, _, _) = ctx.prepare_cq(cqe).unwrap();
        ctx.finish_cq(prep, &CqCreated { handle: 1, cqe }, &cq_resp(size, db))
            .map(|_| ())
    };
    assert!(cq(512, Some(0), 16).is_ok());
    assert!(
        cq(511, None, 16).is_err(),
        "a CQ buffer smaller than its sub-CQs"
    );
    assert!(
        cq(512, Some(1 << 20), 16).is_err(),
        "a CQ doorbell outside its page"
    );
    assert!(
        cq(1024, None, 24).is_err(),
        "a kernel CQ size that is no power of two"
    );
}

#[test]
fn requests_efa_cannot_carry_are_refused_in_one_line() {
    let ctx = context(&test_dev());
    assert_eq!(
        errno(ctx.prepare_qp(&attr(QpType::Rc)).map(|_| ())),
        Some(libc::EOPNOTSUPP)
    );
    let mut a = attr(QpType::Ud);
    a.uses_srq = true;
    assert_eq!(
        errno(ctx.prepare_qp(&a).map(|_| ())),
        Some(libc::EOPNOTSUPP)
    );
    let mut a = attr(QpType::Ud);
    a.caps.max_send_sge = 3;
    let e = ctx.prepare_qp(&a).map(|_| ()).unwrap_err();
    assert_eq!(e.errno, Some(libc::EINVAL));
    assert!(
        e.to_string()
            .contains("3 send SGEs asked for, the device takes at most 2"),
        "{e}"
    );
    assert!(ctx.prepare_srq(4, 1).is_err());

    let a = attr(QpType::Ud);
    let (prep, _) = ctx.prepare_qp(&a).unwrap();
    let core = QpCreated {
        handle: 1,
        qpn: 5,
        caps: a.caps,
    };
    let mut qp = ctx.finish_qp(prep, &a, &core, &qp_resp(5, 64, 0)).unwrap();
    let sge = [Sge {
        addr: 0x1000,
        length: 8,
        lkey: 1,
    }];
    let dest = UdDest {
        ah: 1,
        remote_qpn: 2,
        remote_qkey: 3,
    };
    let mut ok = SendWr::new(1, WrOpcode::Send, &sge);
    ok.ud = Some(dest);
    ok.flags = SendFlags::SIGNALED;
    let mut unsignaled = ok;
    unsignaled.flags = SendFlags::empty();
    let mut read = ok;
    read.opcode = WrOpcode::RdmaRead;
    let mut write = ok;
    write.opcode = WrOpcode::RdmaWrite;
    let mut no_dest = SendWr::new(2, WrOpcode::Send, &sge);
    no_dest.flags = SendFlags::SIGNALED;
    for (bad, why) in [
        (read, "RDMA_READ on an EFA UD QP"),
        (write, "RDMA_WRITE"),
        (no_dest, "needs an address"),
        (unsignaled, "an unsignaled send"),
    ] {
        // SAFETY: no request is inline: nothing is read from the SGEs.
        let e = unsafe { ctx.post_send(&mut qp, &[ok, bad, ok]) }.unwrap_err();
        assert_eq!((e.index, e.error.errno), (1, Some(libc::EINVAL)), "{why}");
        assert!(e.to_string().contains(why), "{e}");
        // The one before the refused request went out, and the doorbell says so.
        assert_eq!(
            qp.sq_doorbell().take_doorbells().last().map(|d| d.1),
            Some(u32::from(qp.queues().sq.pc))
        );
    }
    // Four requests out of a 4-deep SQ: the fifth finds it full.
    let more = [ok; 2];
    // SAFETY: as above.
    let e = unsafe { ctx.post_send(&mut qp, &more) }.unwrap_err();
    assert_eq!((e.index, e.error.errno), (0, Some(libc::ENOMEM)));
}

#[test]
fn a_completion_naming_nothing_posted_is_an_error_not_a_panic() {
    let dev = test_dev();
    let ctx = context(&dev);
    let mut cq = create_cq(&ctx, &dev);
    let mut wc = [WorkCompletion::default(); 1];
    // A send completion (queue 1, phase 1) of QP 99, which does not exist.
    cq.buf()
        .device_write(0, &[0, 0, 0, 0b011, 99, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0]);
    let e = ctx.poll_cq(&mut cq, &mut wc).unwrap_err();
    assert!(e.to_string().contains("QP 99"), "{e}");
    // A completion of QP 5's request 3, which was never posted.
    let a = attr(QpType::Ud);
    let (prep, _) = ctx.prepare_qp(&a).unwrap();
    let _qp = ctx
        .finish_qp(
            prep,
            &a,
            &QpCreated {
                handle: 1,
                qpn: 5,
                caps: a.caps,
            },
            &qp_resp(5, 64, 0),
        )
        .unwrap();
    cq.buf()
        .device_write(16, &[3, 0, 0, 0b011, 5, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0]);
    let e = ctx.poll_cq(&mut cq, &mut wc).unwrap_err();
    assert!(e.to_string().contains("request id 3"), "{e}");
    // Arming a CQ the kernel gave a doorbell rings it with the arm bit.
    ctx.arm_cq(&mut cq, false).unwrap();
    assert_eq!(
        cq.doorbell().unwrap().take_doorbells().last(),
        Some(&(0x40, 0x8000_0002))
    );
}

/// The set-up record of the golden run (`fixtures/efa/setup.jsonl`): each set-up command's
/// driver data as libefa sent it, the fake kernel's answer, and the mappings libefa made of it.
/// Ours, given the same answers, must send the same driver data, ask for the same response
/// room, and map the same keys with the same lengths and protections, in the same order.
#[test]
fn set_up_udata_and_mappings_match_libefa() {
    let evs = events("setup.jsonl");
    let mut i = 0;
    let mut next_cmd = |name: &str| -> (Value, Vec<(u64, usize, bool)>) {
        let ev = evs[i].clone();
        assert_eq!(
            (ev["ev"].as_str(), ev["cmd"].as_str()),
            (Some("cmd"), Some(name)),
            "event {i}"
        );
        i += 1;
        let mut maps = Vec::new();
        while i < evs.len() && evs[i]["ev"] == "mmap" {
            let m = &evs[i];
            // PROT_READ 1, PROT_WRITE 2.
            maps.push((n(m, "key"), n(m, "len") as usize, n(m, "prot") & 2 != 0));
            i += 1;
        }
        (ev, maps)
    };
    let drv_in = |ev: &Value| unhex(ev["drv_in"].as_str().unwrap());
    let drv_out = |ev: &Value| unhex(ev["drv_out"].as_str().unwrap());
    let desc = DeviceDesc {
        ibdev: "efa_0".into(),
        uverbs: "uverbs0".into(),
        driver_id: 17,
        driver_abi: 1,
    };
    HeapRegion::take_maps();

    let (ev, _) = next_cmd("GET_CONTEXT");
    let ud = Ctx::context_udata(&desc, &EfaConfig::default());
    assert_eq!(
        (ud.req, ud.resp_len),
        (drv_in(&ev), drv_out(&ev).len()),
        "GET_CONTEXT udata"
    );
    let uctx = drv_out(&ev);

    let (ev, _) = next_cmd("EX_QUERY_DEVICE");
    assert_eq!(
        (drv_in(&ev).len(), drv_out(&ev).len()),
        (0, abi::EX_QUERY_DEVICE_RESP_LEN),
        "EX_QUERY_DEVICE udata"
    );
    let caps = abi::parse_query_device_resp(&drv_out(&ev)).unwrap();
    let fd: OwnedFd = std::fs::File::open("/dev/null").unwrap().into();
    let ctx =
        Ctx::new_context(Arc::new(fd), &desc, &uctx, &EfaConfig { caps: Some(caps) }).unwrap();
    assert_eq!(
        (
            ctx.uctx.sub_cqs_per_cq,
            ctx.uctx.inline_buf_size,
            ctx.caps().rdma_read()
        ),
        (2, 32, true)
    );

    let (ev, _) = next_cmd("ALLOC_PD");
    let ud = ctx.pd_udata();
    assert_eq!(
        (ud.req, ud.resp_len),
        (drv_in(&ev), drv_out(&ev).len()),
        "ALLOC_PD udata"
    );
    assert_eq!(ctx.pd_number(&drv_out(&ev)).unwrap(), Some(3));

    let (ev, maps) = next_cmd("CREATE_CQ");
    let (prep, cqe, ud) = ctx.prepare_cq(16).unwrap();
    assert_eq!(u64::from(cqe), n(&ev, "arg"), "CQ size asked");
    assert_eq!(
        (ud.req, ud.resp_len),
        (drv_in(&ev), drv_out(&ev).len()),
        "CREATE_CQ udata"
    );
    let _cq = ctx
        .finish_cq(prep, &CqCreated { handle: 1, cqe }, &drv_out(&ev))
        .unwrap();
    assert_eq!(
        HeapRegion::take_maps(),
        maps,
        "CQ mappings (key, length, writable)"
    );

    let (ev, _) = next_cmd("CREATE_AH");
    let (prep, ud) = ctx.prepare_ah(&AhAttr::default()).unwrap();
    assert_eq!(
        (ud.req, ud.resp_len),
        (drv_in(&ev), drv_out(&ev).len()),
        "CREATE_AH udata"
    );
    let ah = ctx
        .finish_ah(
            prep,
            &AhAttr::default(),
            &AhCreated { handle: 2 },
            &drv_out(&ev),
        )
        .unwrap();
    assert_eq!(ctx.ah_number(&ah), 0x0abc);

    // The harness's QPs: UD (4 send x 2 SGEs, 4 receives x 2), SRD (8 x 1, 2 x 1).
    for (t, caps) in [(QpType::Ud, (4, 4, 2, 2)), (QpType::Srd, (8, 2, 1, 1))] {
        let (ev, maps) = next_cmd("CREATE_QP");
        let attr = QpInitAttr {
            qp_type: t,
            caps: QpCaps {
                max_send_wr: caps.0,
                max_recv_wr: caps.1,
                max_send_sge: caps.2,
                max_recv_sge: caps.3,
                max_inline_data: 32,
            },
            sq_sig_all: false,
            uses_srq: false,
        };
        let (prep, ud) = ctx.prepare_qp(&attr).unwrap();
        assert_eq!(
            u64::from(t.uverbs_type()),
            n(&ev, "arg"),
            "{} QP type",
            t.name()
        );
        assert_eq!(
            (ud.req, ud.resp_len),
            (drv_in(&ev), drv_out(&ev).len()),
            "{} CREATE_QP udata",
            t.name()
        );
        let core = QpCreated {
            handle: 3,
            qpn: 0x11,
            caps: attr.caps,
        };
        let _qp = ctx.finish_qp(prep, &attr, &core, &drv_out(&ev)).unwrap();
        assert_eq!(
            HeapRegion::take_maps(),
            maps,
            "{} QP mappings (key, length, writable)",
            t.name()
        );
    }
    assert_eq!(i, evs.len(), "every set-up event compared");
}
