//! Shared helpers for the mlx5 integration tests.

use std::os::fd::OwnedFd;
use std::sync::Arc;

use providers::mlx5::uar::{RecordingUar, UarEvent};
use providers::mlx5::{Mlx5, Mlx5Config, Mlx5Cq, Mlx5CqPrep, Mlx5Qp, Mlx5QpPrep};
use serde_json::Value;
use uverbs::provider::{CqCreated, Provider, QpCaps, QpCreated, QpInitAttr, QpType, SharedFd};

pub fn hex(s: &str) -> Vec<u8> {
    let s = s.trim_start_matches("0x");
    (0..s.len() / 2)
        .map(|i| u8::from_str_radix(&s[2 * i..2 * i + 2], 16).unwrap())
        .collect()
}

pub fn to_hex(b: &[u8]) -> String {
    b.iter().map(|x| format!("{x:02x}")).collect()
}

pub fn num(v: &serde_json::Value) -> u64 {
    match v {
        serde_json::Value::Number(n) => {
            n.as_u64().or_else(|| n.as_i64().map(|x| x as u64)).unwrap()
        }
        serde_json::Value::String(s) => {
            u64::from_str_radix(s.trim_start_matches("0x"), 16).unwrap()
        }
        other => panic!("not a number: {other}"),
    }
}

pub fn dev_null() -> SharedFd {
    Arc::new(OwnedFd::from(std::fs::File::open("/dev/null").unwrap()))
}

/// The 72-byte GET_CONTEXT driver response the oracle's fake kernel gave libmlx5.
pub fn golden_uctx_resp() -> Vec<u8> {
    uctx_resp_from_shim_log("shim_log.txt")
}

/// The GET_CONTEXT driver response recorded in an oracle's shim log (a fixture path).
pub fn uctx_resp_from_shim_log(name: &str) -> Vec<u8> {
    let log = std::fs::read_to_string(fixture(name)).unwrap();
    let mut lines = log.lines().skip_while(|l| !l.contains("GET_CONTEXT req"));
    lines.next().unwrap();
    assert!(lines.next().unwrap().contains("resp (80)"));
    let h: String = lines.take(3).map(|l| l.trim()).collect();
    let b = hex(&h);
    assert_eq!(b.len(), 80);
    b[8..].to_vec()
}

pub fn fixture(name: &str) -> String {
    format!("{}/tests/fixtures/mlx5/{name}", env!("CARGO_MANIFEST_DIR"))
}

pub fn jsonl(name: &str) -> Vec<serde_json::Value> {
    std::fs::read_to_string(fixture(name))
        .unwrap()
        .lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

pub fn context(blueflame: bool) -> Mlx5<RecordingUar> {
    let cfg = Mlx5Config {
        blueflame,
        ..Mlx5Config::default()
    };
    Mlx5::<RecordingUar>::with_config(dev_null(), &golden_uctx_resp(), cfg).unwrap()
}

// ---- an oracle's recorded set-up (setup*.json) -------------------------------------------------

/// An oracle's setup file (a fixture path).
pub fn setup_file(name: &str) -> Value {
    serde_json::from_str(&std::fs::read_to_string(fixture(name)).unwrap()).unwrap()
}

/// Our context maps the UAR pages at the mmap offsets the oracle's libmlx5 used.
pub fn assert_uar_mmap_offsets(ctx: &Mlx5<RecordingUar>, setup: &Value) {
    let offs: Vec<u64> = setup["uar_mmap_offsets"].as_array().unwrap().iter().map(num).collect();
    assert_eq!(ctx.plan.mmap_offsets, offs, "UAR mmap offsets");
}

/// Finish a CQ as the oracle's fake kernel answered (handle 1, `cqe` entries, the recorded
/// CQN) and check its size against the recorded one.
pub fn finish_recorded_cq(ctx: &Mlx5<RecordingUar>, prep: Mlx5CqPrep, cqe: u32, setup: &Value) -> Mlx5Cq {
    let mut resp = vec![0u8; 8];
    resp[..4].copy_from_slice(&(num(&setup["cqn"]) as u32).to_ne_bytes());
    let cq = ctx.finish_cq(prep, &CqCreated { handle: 1, cqe }, &resp).unwrap();
    assert_eq!(cq.ncqe() as u64, num(&setup["ncqe"]));
    cq
}

/// The init attributes of an RC QP with `caps` (own RQ, signaled per request).
pub fn rc_qp_attr(caps: QpCaps) -> QpInitAttr {
    QpInitAttr { qp_type: QpType::Rc, caps, sq_sig_all: false, uses_srq: false }
}

/// Finish a QP as the oracle's fake kernel answered (handle 2, the recorded QPN and bfreg
/// index, the caps as asked).
pub fn finish_recorded_qp(ctx: &Mlx5<RecordingUar>, prep: Mlx5QpPrep, attr: &QpInitAttr, setup: &Value) -> Mlx5Qp {
    let mut resp = vec![0u8; 40];
    resp[..4].copy_from_slice(&(num(&setup["bfreg_index"]) as u32).to_ne_bytes());
    let core = QpCreated { handle: 2, qpn: num(&setup["qpn"]) as u32, caps: attr.caps };
    ctx.finish_qp(prep, attr, &core, &resp).unwrap()
}

/// An oracle's recorded UAR writes as (UAR page, offset in the page, bytes).
pub fn golden_stores(v: &Value) -> Vec<(u64, u64, String)> {
    v.as_array()
        .unwrap()
        .iter()
        .map(|w| (num(&w["uar_page"]), num(&w["offset"]), w["bytes"].as_str().unwrap().to_string()))
        .collect()
}

/// The MMIO stores among recorded UAR events as (UAR page, offset in the page, bytes).
pub fn uar_stores(ctx: &Mlx5<RecordingUar>, events: &[UarEvent]) -> Vec<(u64, u64, String)> {
    let ps = ctx.plan.page_size as u64;
    events
        .iter()
        .filter_map(|e| match e {
            UarEvent::Store { offset, bytes } => Some((*offset as u64 / ps, *offset as u64 % ps, to_hex(bytes))),
            _ => None,
        })
        .collect()
}
