//! Golden bytes for perftest's `--aes_xts` data path: replay the crypto oracle's posts (Debian's
//! rdma-core 44 libmlx5 against a fake kernel, see tests/mlx5-oracle/crypto/ and
//! tests/fixtures/mlx5/crypto/README.md) through our provider's `CryptoProvider::post_crypto_mkey_configure`
//! and `post_send`, and compare the UMR WQE (control, UMR control, mkey context, KLM, crypto BSF),
//! the following data WQE, the SQ counter, the doorbell record and every UAR/BlueFlame store.
//!
//! It calls only the shared provider interface (the detached `Mlx5CryptoMkey` / `Mlx5Dek` stand
//! in for the DEVX objects: lkey 0xabc100 with 4 KLM entries, DEK ids 0xd0e1 / 0xd0e2, as the
//! fake kernel handed them to libmlx5).
//!
//! Every signaled data WR is completed with a requester CQE the test writes (as the oracle did),
//! and the `wrap_*` records are reached by the oracle's own means: plain one-WQEBB RDMA writes,
//! each completed, until the SQ head sits 1..4 WQEBBs before the ring end, so the UMR WQE's
//! mkey context, KLM, crypto BSF and finally the data WQE in turn continue at slot 0.
//!
//! The device's AES-XTS engines (single- or multi-block: the tweak's byte order and the
//! single-block length limit) are context state the DEVX capability query sets; here they are
//! set from the setup file's `crypto_caps.crypto_engines` with `Mlx5::set_crypto_engines`, so the
//! `single_block` variant is replayed too, including its refused post. The DEVX command mailboxes in `devx_*.jsonl` are not compared here either: they need
//! the DEVX encoders' own entry points.

mod support;

use support::mlx5::*;
use providers::mlx5::crypto::{Mlx5CryptoMkey, Mlx5Dek};
use providers::mlx5::uar::RecordingUar;
use providers::mlx5::{Mlx5, Mlx5Config, Mlx5Cq, Mlx5Qp};
use serde_json::Value;
use uverbs::dv::{CryptoAttr, CryptoProvider};
use uverbs::provider::{Provider, QpCaps};
use uverbs::wr::{SendFlags, SendWr, Sge, WcStatus, WorkCompletion, WrOpcode};

fn crypto(name: &str) -> String {
    format!("crypto/{name}")
}

/// The GET_CONTEXT driver response (72 bytes) the crypto oracle's fake kernel gave libmlx5
/// (same as the first oracle's except max_sq_desc_sz 1024).
fn uctx_resp() -> Vec<u8> {
    uctx_resp_from_shim_log(&crypto("shim_log_multi_block.txt"))
}

fn stores(ctx: &Mlx5<RecordingUar>) -> Vec<(u64, u64, String)> {
    uar_stores(ctx, &ctx.uar().take())
}

/// One `ibv_wr_start..ibv_wr_complete` span of the oracle against what we just posted.
fn check_span(ctx: &Mlx5<RecordingUar>, qp: &Mlx5Qp, span: &Value, name: &str) {
    assert_eq!(
        qp.sq_cur_post() as u64,
        num(&span["sq_cur_post_after"]),
        "{name}: SQ counter after"
    );
    let cnt = qp.geo.sq_wqe_cnt as usize;
    let start = num(&span["start_slot"]) as usize;
    let mut ours = Vec::new();
    for i in 0..num(&span["wqebb_count"]) as usize {
        let mut bb = [0u8; 64];
        qp.buf()
            .read(qp.geo.sq_offset + ((start + i) % cnt) * 64, &mut bb);
        ours.extend_from_slice(&bb);
    }
    let want = span["wqe_bytes"].as_str().unwrap();
    assert_eq!(
        to_hex(&ours[..want.len() / 2]),
        want,
        "{name}: WQE bytes (ds*16)"
    );
    assert_eq!(
        to_hex(&qp.dbrec()),
        span["qp_dbrec"].as_str().unwrap(),
        "{name}: doorbell record"
    );
    assert_eq!(stores(ctx), golden_stores(&span["uar_writes"]), "{name}: UAR stores");
}

/// Complete the WQE at `wqe_counter` with a requester CQE (mlx5 opcode `op`) written at the
/// consumer index, as the oracle's harness did, and poll it.
fn complete(
    ctx: &Mlx5<RecordingUar>,
    cq: &mut Mlx5Cq,
    qpn: u32,
    op: u8,
    wqe_counter: u16,
) -> WorkCompletion {
    let ci = cq.consumer_index();
    let mut c = [0u8; 64];
    // struct mlx5_cqe64: srqn_uidx @32 (uidx 0), sop_drop_qpn @56, wqe_counter @60, op_own @63.
    c[56..60].copy_from_slice(&(((op as u32) << 24) | qpn).to_be_bytes());
    c[60..62].copy_from_slice(&wqe_counter.to_be_bytes());
    // op_own: MLX5_CQE_REQ (0) in the high nibble, the owner bit of this lap in bit 0.
    c[63] = u8::from(ci & cq.ncqe() != 0);
    cq.buf().write((ci & (cq.ncqe() - 1)) as usize * 64, &c);
    let mut out = [WorkCompletion::default(); 2];
    assert_eq!(
        ctx.poll_cq(cq, &mut out).unwrap(),
        1,
        "completion of WQE {wqe_counter}"
    );
    out[0]
}

const MR_LKEY: u32 = 0x123442;
const DATA_VA: u64 = 0x2_0000_0000;

#[test]
fn aes_xts_posts_match_libmlx5_blueflame() {
    assert_eq!(replay("multi_block", true), (15, 0));
}

#[test]
fn aes_xts_posts_match_libmlx5_shut_up_bf() {
    assert_eq!(replay("multi_block_shut_up_bf", false), (15, 0));
}

#[test]
fn aes_xts_posts_match_libmlx5_single_block_engine() {
    // Only the single-block engine: the 8192-byte mapping over a 512-byte data unit is refused
    // (EINVAL, nothing posted), then 512 and 4096 bytes work with the tweak as given.
    assert_eq!(replay("single_block", true), (2, 1));
}

/// Replay `umr_wqe_<variant>.jsonl` on a context with BlueFlame on or off (MLX5_SHUT_UP_BF).
/// Returns (records posted and compared, records whose UMR libmlx5 refused and we refused too).
fn replay(variant: &str, blueflame: bool) -> (usize, usize) {
    let setup = setup_file(&crypto(&format!("setup_{variant}.json")));
    let cfg = Mlx5Config {
        blueflame,
        ..Mlx5Config::default()
    };
    let ctx = Mlx5::<RecordingUar>::with_config(dev_null(), &uctx_resp(), cfg).unwrap();
    ctx.set_crypto_engines(num(&setup["crypto_caps"]["crypto_engines"]) as u8);
    assert_uar_mmap_offsets(&ctx, &setup);
    let (prep, cqe_arg, _ud) = ctx.prepare_cq(256).unwrap();
    let mut cq = finish_recorded_cq(&ctx, prep, cqe_arg, &setup);

    // perftest 6.06 --aes_xts QP: max_send_wr = 2 * tx_depth (128), one SGE, max_inline_data 512.
    let attr = rc_qp_attr(QpCaps {
        max_send_wr: 256,
        max_recv_wr: 16,
        max_send_sge: 1,
        max_recv_sge: 1,
        max_inline_data: 512,
    });
    let (prep, _ud) = ctx.prepare_qp(&attr).unwrap();
    let mut qp = finish_recorded_qp(&ctx, prep, &attr, &setup);
    assert_eq!(
        qp.geo.sq_wqe_cnt as u64,
        num(&setup["sq_wqe_count"]),
        "SQ size in WQEBBs"
    );

    let mkey_lkey = num(&setup["mkey_lkey"]) as u32;
    let mut mkey = Mlx5CryptoMkey::detached(
        mkey_lkey,
        num(&setup["mkey_max_entries_after_create"]) as u16,
    );
    let ids: Vec<u32> = setup["dek_obj_ids"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| num(v) as u32)
        .collect();
    let deks: Vec<Mlx5Dek> = ids.iter().map(|&id| Mlx5Dek::detached(id)).collect();

    let qpn = num(&setup["qpn"]) as u32;
    let cnt = qp.geo.sq_wqe_cnt;
    let mut replayed = 0;
    let mut refused = 0;
    let mut fill_id = 0x10_0000u64;
    for rec in jsonl(&crypto(&format!("umr_wqe_{variant}.jsonl"))) {
        let name = rec["name"].as_str().unwrap();
        if let Some(k) = name
            .strip_prefix("wrap_umr_starts_")
            .and_then(|r| r.split('_').next())
        {
            let target = cnt - k.parse::<u32>().unwrap();
            let sgl = [Sge {
                addr: DATA_VA,
                length: 64,
                lkey: MR_LKEY,
            }];
            while qp.sq_cur_post() & (cnt - 1) != target {
                let at = qp.sq_cur_post() as u16;
                let mut wr = SendWr::new(fill_id, WrOpcode::RdmaWrite, &sgl);
                fill_id += 1;
                wr.flags = SendFlags::SIGNALED;
                wr.remote.addr = 0x7f00_1234_0000;
                wr.remote.rkey = 0xabcd;
                // SAFETY: not inline: nothing is read from DATA_VA in user space.
                unsafe { ctx.post_send(&mut qp, &[wr]) }.unwrap();
                assert_eq!(
                    complete(&ctx, &mut cq, qpn, 0x08, at).status,
                    WcStatus::Success
                );
            }
            ctx.uar().take();
        }
        let p = &rec["params"];
        let umr = &rec["umr"];
        assert_eq!(
            qp.sq_cur_post() as u64,
            num(&umr["sq_cur_post_before"]),
            "{name}: SQ counter before"
        );
        let ls = &p["layout_sge"];
        let sge = Sge {
            addr: num(&ls["addr"]),
            length: num(&ls["length"]) as u32,
            lkey: num(&ls["lkey"]) as u32,
        };
        let mut initial_tweak = [0u8; 16];
        initial_tweak.copy_from_slice(&hex(p["initial_tweak"].as_str().unwrap()));
        let mut keytag = [0u8; 8];
        keytag.copy_from_slice(&hex(p["keytag"].as_str().unwrap()));
        let cattr = CryptoAttr {
            encrypt_on_tx: num(&p["encrypt_on_tx"]) == 1,
            signature_before_crypto_on_tx: p["signature_crypto_order"].as_str().unwrap()
                == "SIGNATURE_BEFORE_CRYPTO_ON_TX",
            initial_tweak,
            keytag,
            data_unit_size: num(&p["data_unit_size"]) as u32,
        };
        let dek = &deks[num(&p["dek_index"]) as usize];
        let want_rc = num(&umr["rc"]);
        if want_rc != 0 {
            // libmlx5 refused at ibv_wr_complete: we refuse at post with the same errno, and
            // nothing reaches the SQ, the doorbell record or the UAR.
            let before = qp.sq_cur_post();
            // SAFETY: as below.
            let e = unsafe {
                ctx.post_crypto_mkey_configure(&mut qp, &mut mkey, &sge, num(&p["access_flags"]) as u32, &cattr, dek)
            }
            .expect_err(name);
            assert_eq!(e.error.errno, Some(want_rc as i32), "{name}: errno ({})", e.error);
            assert_eq!(qp.sq_cur_post(), before, "{name}: nothing posted");
            assert_eq!(qp.sq_cur_post() as u64, num(&umr["sq_cur_post_after"]), "{name}: SQ counter");
            assert!(stores(&ctx).is_empty(), "{name}: no doorbell");
            assert!(rec.get("data_wr").is_none(), "{name}: the oracle posted no data WR either");
            refused += 1;
            continue;
        }
        // SAFETY: the UMR only records sge's address range in the mkey; nothing reads it here.
        unsafe {
            ctx.post_crypto_mkey_configure(
                &mut qp,
                &mut mkey,
                &sge,
                num(&p["access_flags"]) as u32,
                &cattr,
                dek,
            )
        }
        .unwrap_or_else(|e| panic!("{name}: UMR post: {}", e.error));
        check_span(&ctx, &qp, umr, &format!("{name} (UMR)"));

        let d = &rec["data_wr"];
        let op = match d["opcode"].as_str().unwrap() {
            "RDMA_WRITE" => WrOpcode::RdmaWrite,
            "SEND" => WrOpcode::Send,
            "RDMA_READ" => WrOpcode::RdmaRead,
            o => panic!("opcode {o}"),
        };
        let ds = &d["sge"];
        let sgl = [Sge {
            addr: num(&ds["addr"]),
            length: num(&ds["length"]) as u32,
            lkey: num(&ds["lkey"]) as u32,
        }];
        assert_eq!(sgl[0].lkey, mkey_lkey);
        let mut wr = SendWr::new(num(&d["wr_id"]), op, &sgl);
        wr.flags = SendFlags(num(&d["wr_flags"]) as u32);
        wr.remote.addr = num(&d["remote_addr"]);
        wr.remote.rkey = num(&d["rkey"]) as u32;
        // SAFETY: not inline, so nothing is read from the (mkey-relative) address 0 in user space.
        unsafe { ctx.post_send(&mut qp, &[wr]) }
            .unwrap_or_else(|e| panic!("{name}: data post: {}", e.error));
        check_span(&ctx, &qp, &rec["data"], &format!("{name} (data)"));
        let mop = match op {
            WrOpcode::Send => 0x0a,
            WrOpcode::RdmaRead => 0x10,
            _ => 0x08,
        };
        let wc = complete(
            &ctx,
            &mut cq,
            qpn,
            mop,
            num(&rec["data"]["sq_cur_post_before"]) as u16,
        );
        assert_eq!(
            (wc.wr_id, wc.status),
            (num(&d["wr_id"]), WcStatus::Success),
            "{name}: completion"
        );
        replayed += 1;
    }
    (replayed, refused)
}
