//! Golden-byte tests: replay the oracle's run (rdma-core 44 libmlx5 against a fake kernel; the
//! mlx5 golden captures, copied into providers/tests/fixtures/mlx5) through our provider and
//! compare every WQE block, doorbell record, UAR/BlueFlame store and work completion it recorded.
//!
//! Not compared (deliberate differences, see docs/mlx5.md): the CREATE_QP driver flags (libmlx5
//! asks for SCATTER_CQE, we do not) and GET_CONTEXT lib_caps (we never ask for DYN_UAR);
//! completion fields libmlx5 leaves unwritten (0xee fill in the fixture).

mod support;

use std::sync::Mutex;

use support::mlx5::*;
use providers::mlx5::uar::RecordingUar;
use providers::mlx5::uar::UarEvent;
use providers::mlx5::{abi, Mlx5, Mlx5Cq, Mlx5Qp};
use serde_json::Value;
use uverbs::provider::{Provider, QpCaps};
use uverbs::wr::{RecvWr, SendFlags, SendWr, Sge, WorkCompletion, WrOpcode};

const DATA_VA: usize = 0x2_0000_0000;
const DATA_LEN: usize = 1 << 20;

/// The oracle's data buffer at its fixed address (inline payloads are read from it, inline
/// scattered receives are written into it). One test at a time uses it.
static DATA: Mutex<bool> = Mutex::new(false);

fn map_data(mapped: &mut bool) {
    if !*mapped {
        // SAFETY: a fresh anonymous mapping at an address nothing else in this process uses;
        // MAP_FIXED_NOREPLACE fails instead of clobbering.
        let p = unsafe {
            libc::mmap(
                DATA_VA as *mut libc::c_void,
                DATA_LEN,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_PRIVATE | libc::MAP_ANONYMOUS | libc::MAP_FIXED_NOREPLACE,
                -1,
                0,
            )
        };
        assert_eq!(
            p as usize, DATA_VA,
            "cannot map the oracle data buffer at {DATA_VA:#x}"
        );
        *mapped = true;
    }
    // SAFETY: mapped above, DATA_LEN bytes; the DATA lock serialises users.
    let d = unsafe { std::slice::from_raw_parts_mut(DATA_VA as *mut u8, DATA_LEN) };
    for (i, b) in d.iter_mut().enumerate() {
        *b = (7 * i + 3) as u8;
    }
}

fn opcode(s: &str) -> WrOpcode {
    match s {
        "RDMA_WRITE" => WrOpcode::RdmaWrite,
        "RDMA_WRITE_WITH_IMM" => WrOpcode::RdmaWriteWithImm,
        "SEND" => WrOpcode::Send,
        "SEND_WITH_IMM" => WrOpcode::SendWithImm,
        "RDMA_READ" => WrOpcode::RdmaRead,
        "ATOMIC_CMP_AND_SWP" => WrOpcode::AtomicCmpAndSwp,
        "ATOMIC_FETCH_AND_ADD" => WrOpcode::AtomicFetchAndAdd,
        o => panic!("opcode {o}"),
    }
}

fn sges(v: &Value) -> Vec<Sge> {
    v.as_array()
        .unwrap()
        .iter()
        .map(|s| Sge {
            addr: num(&s["addr"]),
            length: num(&s["length"]) as u32,
            lkey: num(&s["lkey"]) as u32,
        })
        .collect()
}

struct Rig {
    ctx: Mlx5<RecordingUar>,
    cq: Mlx5Cq,
    qp: Mlx5Qp,
    variant: &'static str,
}

fn setup(variant: &'static str) -> Rig {
    let shut = variant == "shut_up_bf";
    let setup = setup_file(if shut { "setup_shut_up_bf.json" } else { "setup.json" });
    let ctx = context(!shut);
    // UAR mapping plan = the offsets libmlx5 mmap'd.
    assert_uar_mmap_offsets(&ctx, &setup);
    assert_eq!(
        ctx.plan.num_pages as u64,
        num(&setup["num_uar_pages_mapped"])
    );

    let (prep, cqe_arg, ud) = ctx.prepare_cq(15).unwrap();
    assert_eq!(cqe_arg as u64, num(&setup["cq_create_cqe_arg"]));
    assert_eq!(ud.req.len(), abi::CREATE_CQ_REQ_LEN);
    assert_eq!(
        u32::from_ne_bytes(ud.req[16..20].try_into().unwrap()) as u64,
        num(&setup["cqe_size"])
    );
    let cq = finish_recorded_cq(&ctx, prep, 15, &setup);

    let attr = rc_qp_attr(QpCaps {
        max_send_wr: 16,
        max_recv_wr: 16,
        max_send_sge: 2,
        max_recv_sge: 2,
        max_inline_data: 64,
    });
    let (prep, ud) = ctx.prepare_qp(&attr).unwrap();
    let r = &ud.req;
    let rd = |o: usize| u32::from_ne_bytes(r[o..o + 4].try_into().unwrap()) as u64;
    assert_eq!(rd(abi::qp_req::SQ_WQE_COUNT), num(&setup["sq_wqe_count"]));
    assert_eq!(rd(abi::qp_req::RQ_WQE_COUNT), num(&setup["rq_wqe_count"]));
    assert_eq!(rd(abi::qp_req::RQ_WQE_SHIFT), num(&setup["rq_wqe_shift"]));
    assert_eq!(rd(abi::qp_req::UIDX), num(&setup["uidx"]));
    // Deliberate difference: libmlx5 asks for SCATTER_CQE (0x2), we ask for nothing.
    assert_eq!(num(&setup["qp_create_flags_drv"]), 2);
    assert_eq!(rd(abi::qp_req::FLAGS), 0);
    let caps = &setup["qp_cap_after_create"];
    let qp = finish_recorded_qp(&ctx, prep, &attr, &setup);
    assert_eq!(qp.geo.sq_max_post as u64, num(&caps["max_send_wr"]));
    assert_eq!(qp.geo.max_inline as u64, num(&caps["max_inline_data"]));
    assert_eq!(qp.geo.sq_offset, 512);
    Rig {
        ctx,
        cq,
        qp,
        variant,
    }
}

/// Recorded stores as (uar page, offset in page, bytes), checking the barrier bracket.
fn stores(ctx: &Mlx5<RecordingUar>) -> Vec<(u64, u64, String)> {
    let ev = ctx.uar().take();
    if ev.is_empty() {
        return vec![];
    }
    assert_eq!(
        ev.first(),
        Some(&UarEvent::WcStart),
        "MMIO stores must follow mmio_wc_start"
    );
    assert_eq!(
        ev.last(),
        Some(&UarEvent::Flush),
        "MMIO stores must end with mmio_flush_writes"
    );
    uar_stores(ctx, &ev)
}

fn post_send_record(rig: &mut Rig, rec: &Value) {
    let name = rec["name"].as_str().unwrap();
    assert_eq!(
        rig.qp.sq_cur_post() as u64,
        num(&rec["sq_cur_post_before"]),
        "{name}: cur_post before"
    );
    let wrs_json = rec["wrs"].as_array().unwrap();
    let sgls: Vec<Vec<Sge>> = wrs_json.iter().map(|w| sges(&w["sg_list"])).collect();
    let wrs: Vec<SendWr> = wrs_json
        .iter()
        .zip(&sgls)
        .map(|(w, sgl)| {
            let mut wr = SendWr::new(num(&w["wr_id"]), opcode(w["opcode"].as_str().unwrap()), sgl);
            wr.flags = SendFlags(num(&w["send_flags"]) as u32);
            wr.imm_data = num(&w["imm_data_be"]) as u32;
            if let Some(r) = w.get("rdma") {
                wr.remote.addr = num(&r["remote_addr"]);
                wr.remote.rkey = num(&r["rkey"]) as u32;
            }
            if let Some(a) = w.get("atomic") {
                wr.remote.addr = num(&a["remote_addr"]);
                wr.remote.rkey = num(&a["rkey"]) as u32;
                wr.compare_add = num(&a["compare_add"]);
                wr.swap = num(&a["swap"]);
            }
            wr
        })
        .collect();
    // SAFETY: the recorded SGEs point into the oracle's data buffer, mapped at its fixed
    // address for the whole test (map_data); nothing else touches it meanwhile.
    unsafe { rig.ctx
        .post_send(&mut rig.qp, &wrs) }
        .unwrap_or_else(|e| panic!("{name}: {e}"));
    assert_eq!(
        rig.qp.sq_cur_post() as u64,
        num(&rec["sq_cur_post_after"]),
        "{name}: cur_post after"
    );
    let sq_off = rig.qp.geo.sq_offset;
    for bb in rec["wqebbs"].as_array().unwrap() {
        let slot = num(&bb["slot"]) as usize;
        let mut ours = [0u8; 64];
        rig.qp.buf().read(sq_off + slot * 64, &mut ours);
        assert_eq!(
            to_hex(&ours),
            bb["bytes"].as_str().unwrap(),
            "{name} ({}): WQEBB slot {slot}",
            rig.variant
        );
    }
    assert_eq!(
        to_hex(&rig.qp.dbrec()),
        rec["qp_dbrec"].as_str().unwrap(),
        "{name}: QP doorbell record"
    );
    assert_eq!(
        stores(&rig.ctx),
        golden_stores(&rec["uar_writes"]),
        "{name} ({}): UAR stores",
        rig.variant
    );
}

fn check_wc(name: &str, ours: &WorkCompletion, g: &Value) {
    const UNSET32: u64 = 0xeeee_eeee;
    let cmp = |field: &str, our: u64, unset: u64| {
        let v = num(&g[field]);
        if v != unset {
            assert_eq!(our, v, "{name}: wc.{field}");
        }
    };
    cmp("wr_id", ours.wr_id, 0xeeee_eeee_eeee_eeee);
    cmp("status", ours.status.raw() as u64, UNSET32);
    let op = g["opcode"].as_i64().unwrap();
    if op != -286331154 {
        assert_eq!(ours.opcode.raw() as i64, op, "{name}: wc.opcode");
    }
    cmp("vendor_err", ours.vendor_err as u64, UNSET32);
    cmp("byte_len", ours.byte_len as u64, UNSET32);
    cmp("imm_data_raw", ours.imm_data as u64, UNSET32);
    cmp("qp_num", ours.qp_num as u64, UNSET32);
    cmp("src_qp", ours.src_qp as u64, UNSET32);
    cmp("wc_flags", ours.wc_flags as u64, UNSET32);
    cmp("pkey_index", ours.pkey_index as u64, 0xeeee);
    cmp("slid", ours.slid as u64, 0xeeee);
    cmp("sl", ours.sl as u64, 0xee);
    cmp("dlid_path_bits", ours.dlid_path_bits as u64, 0xee);
}

fn post_recvs(rig: &mut Rig, upto: usize, recv_recs: &[Value]) {
    while (rig.qp.rq_head() as usize) < upto {
        let i = rig.qp.rq_head() as usize;
        let rec = recv_recs
            .iter()
            .find(|r| r.get("rq_head_before").map(num) == Some(i as u64));
        let (wr_id, sgl) = match rec {
            Some(r) => (num(&r["wr_id"]), sges(&r["sg_list"])),
            // recvs 4..7 are not in recv_wqe.jsonl; same pattern (the 5th is the inline-scatter
            // target at 0x200009000, per recv_buffer_after_inline_scatter).
            None => {
                let addr = DATA_VA + 0x8000 + 0x400 * i;
                // The oracle's harness cleared this buffer (the fixture shows zeros after the
                // 24 scattered bytes).
                // SAFETY: inside the mapped data buffer.
                unsafe { std::ptr::write_bytes(addr as *mut u8, 0, 512) };
                (
                    0x2000 + i as u64,
                    vec![Sge {
                        addr: addr as u64,
                        length: 512,
                        lkey: 0x123442,
                    }],
                )
            }
        };
        // SAFETY: the recorded SGEs point into the oracle's data buffer, mapped at its fixed
        // address for the whole test (map_data); nothing else touches it meanwhile.
        unsafe { rig.ctx
            .post_recv(&mut rig.qp, &[RecvWr { wr_id, sgl: &sgl }]) }
            .unwrap();
        if let Some(r) = rec {
            let slot = num(&r["slot"]) as usize;
            let mut ours = [0u8; 32];
            rig.qp.buf().read(slot * 32, &mut ours);
            assert_eq!(
                to_hex(&ours),
                r["wqe"].as_str().unwrap(),
                "{}: RQ slot",
                r["name"]
            );
            assert_eq!(
                to_hex(&rig.qp.dbrec()[..4]),
                &r["qp_dbrec"].as_str().unwrap()[..8],
                "{}: RQ dbrec",
                r["name"]
            );
            assert!(r["uar_writes"].as_array().unwrap().is_empty());
            assert!(
                rig.ctx.uar().take().is_empty(),
                "post_recv must not touch the UAR"
            );
        }
    }
}

fn replay(variant: &'static str) {
    let mut data = DATA.lock().unwrap_or_else(|e| e.into_inner());
    map_data(&mut data);
    let sfx = if variant == "shut_up_bf" {
        "_shut_up_bf"
    } else {
        ""
    };
    let sends = jsonl(&format!("send_wqe{sfx}.jsonl"));
    let recvs = jsonl(&format!("recv_wqe{sfx}.jsonl"));
    let cqes = jsonl(&format!("cqe_to_wc{sfx}.jsonl"));
    let mut rig = setup(variant);
    let mut next_send = 0;
    let mut checked = (0, 0);
    // The oracle posted its 4 recorded receives first (the send records' doorbell records show
    // an RQ counter of 4).
    post_recvs(&mut rig, 4, &recvs);

    for rec in &cqes {
        let name = rec["name"].as_str().unwrap();
        match name {
            "cq_initial" => {
                let mut slot0 = [0u8; 64];
                rig.cq.buf().read(0, &mut slot0);
                assert_eq!(to_hex(&slot0), rec["cqe0"].as_str().unwrap());
                assert_eq!(to_hex(&rig.cq.dbrec()), rec["cq_dbrec"].as_str().unwrap());
                continue;
            }
            "recv_buffer_after_inline_scatter" => {
                let want = hex(rec["bytes"].as_str().unwrap());
                // SAFETY: inside the mapped data buffer.
                let got = unsafe {
                    std::slice::from_raw_parts(num(&rec["addr"]) as usize as *const u8, want.len())
                };
                assert_eq!(
                    to_hex(got),
                    to_hex(&want),
                    "inline-scattered payload in the receive buffer"
                );
                continue;
            }
            "empty_poll" => {
                let mut out = [WorkCompletion::default(); 4];
                assert_eq!(rig.ctx.poll_cq(&mut rig.cq, &mut out).unwrap(), 0);
                assert_eq!(to_hex(&rig.cq.dbrec()), rec["cq_dbrec"].as_str().unwrap());
                continue;
            }
            n if n.starts_with("arm_cq_solicited_only_") => {
                assert_eq!(rig.cq.consumer_index() as u64, num(&rec["consumer_index"]));
                rig.ctx.arm_cq(&mut rig.cq, n.ends_with('1')).unwrap();
                assert_eq!(
                    to_hex(&rig.cq.dbrec()),
                    rec["cq_dbrec"].as_str().unwrap(),
                    "{n}: CQ dbrec"
                );
                assert_eq!(
                    stores(&rig.ctx),
                    golden_stores(&rec["uar_writes"]),
                    "{n}: arm doorbell"
                );
                continue;
            }
            _ => {}
        }
        // Post what this completion completes: sends up to the WR it names, or the receives.
        let want_wr = num(&rec["wcs"][0]["wr_id"]);
        if name.starts_with("resp_") {
            post_recvs(&mut rig, 8, &recvs);
        } else {
            while !rig_has_posted(&sends[..next_send], want_wr) {
                post_send_record(&mut rig, &sends[next_send]);
                next_send += 1;
                checked.0 += 1;
            }
        }
        assert_eq!(
            rig.cq.consumer_index() as u64,
            num(&rec["consumer_index_before"]),
            "{name}: CI before"
        );
        let cqe = hex(rec["cqe"].as_str().unwrap());
        let slot = num(&rec["cqe_slot"]) as usize;
        rig.cq.buf().write(slot * 64, &cqe);
        let mut out = [WorkCompletion::default(); 4];
        let n = rig
            .ctx
            .poll_cq(&mut rig.cq, &mut out)
            .unwrap_or_else(|e| panic!("{name}: {e}"));
        assert_eq!(n as u64, num(&rec["poll_rc"]), "{name}: poll count");
        for (i, g) in rec["wcs"].as_array().unwrap().iter().enumerate() {
            check_wc(name, &out[i], g);
        }
        assert_eq!(
            to_hex(&rig.cq.dbrec()),
            rec["cq_dbrec_after"].as_str().unwrap(),
            "{name}: CQ dbrec after"
        );
        let mut after = [0u8; 64];
        rig.cq.buf().read(slot * 64, &mut after);
        assert_eq!(
            to_hex(&after),
            rec["cqe_after_poll"].as_str().unwrap(),
            "{name}: CQE untouched"
        );
        checked.1 += 1;
    }
    // Anything the CQE file did not need.
    while next_send < sends.len() {
        post_send_record(&mut rig, &sends[next_send]);
        next_send += 1;
        checked.0 += 1;
    }
    // The extra 4 receives: doorbell record as in after_8_recvs (RQ word).
    post_recvs(&mut rig, 8, &recvs);
    let after8 = recvs.iter().find(|r| r["name"] == "after_8_recvs").unwrap();
    assert_eq!(
        to_hex(&rig.qp.dbrec()),
        after8["qp_dbrec"].as_str().unwrap()
    );
    assert_eq!(
        checked,
        (sends.len(), cqes.len() - 5),
        "every send record and every CQE case replayed"
    );
}

fn rig_has_posted(done: &[Value], wr_id: u64) -> bool {
    done.iter().any(|r| {
        r["wrs"]
            .as_array()
            .unwrap()
            .iter()
            .any(|w| num(&w["wr_id"]) == wr_id)
    })
}

#[test]
fn golden_default_blueflame() {
    replay("default");
}

#[test]
fn golden_shut_up_bf() {
    replay("shut_up_bf");
}

/// `--use-null-mr`: the context's null-MR lkey is the GET_CONTEXT dump-fill mkey, present only
/// with its comp_mask bit (libmlx5's `ibv_alloc_null_mr` otherwise fails with ENOTSUP).
#[test]
fn null_mr_lkey_is_the_dump_fill_mkey_of_get_context() {
    let golden = golden_uctx_resp();
    let mask_at = abi::uctx_resp::COMP_MASK;
    let key_at = abi::uctx_resp::DUMP_FILL_MKEY;
    let mask = u32::from_ne_bytes(golden[mask_at..mask_at + 4].try_into().unwrap());
    let with = |mask: u32, key: u32| {
        let mut b = golden.clone();
        b[mask_at..mask_at + 4].copy_from_slice(&mask.to_ne_bytes());
        b[key_at..key_at + 4].copy_from_slice(&key.to_ne_bytes());
        Mlx5::<RecordingUar>::with_config(dev_null(), &b, providers::mlx5::Mlx5Config::default()).unwrap()
    };
    // The oracle's fake kernel: whatever its response says.
    assert_eq!(context(false).null_mr_lkey().is_some(), mask & abi::UCTX_RESP_MASK_DUMP_FILL_MKEY != 0);
    assert_eq!(with(mask | abi::UCTX_RESP_MASK_DUMP_FILL_MKEY, 0x0000_1a00).null_mr_lkey(), Some(0x1a00));
    assert_eq!(with(mask & !abi::UCTX_RESP_MASK_DUMP_FILL_MKEY, 0x0000_1a00).null_mr_lkey(), None);
}
