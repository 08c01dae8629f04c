// Included by the other mlx5 tests with #[path]; built alone it is an empty test binary.
//! Shared helpers for the mlx5 integration tests.
#![allow(dead_code)]

use std::os::fd::OwnedFd;
use std::sync::Arc;

use providers::mlx5::uar::RecordingUar;
use providers::mlx5::{Mlx5, Mlx5Config};
use uverbs::provider::SharedFd;

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
