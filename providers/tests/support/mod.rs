//! What the providers' integration tests share (Cargo builds each file of `tests/` as its own
//! test binary; this folder is a module of those that say `mod support;`, not a binary): the
//! bnxt_re and EFA oracle runs and replays, the mlx5 fixtures and oracle-log readers, the mlx5,
//! EFA and bnxt_re device models, the rxe mock-kernel helpers, and below the byte and fixture
//! readers the oracle replays have in common.
//! Each binary uses a part of it, hence `dead_code` allowed here.
#![allow(dead_code)]

pub mod bnxt_model;
pub mod bnxt_re;
pub mod efa;
pub mod efa_model;
pub mod mlx5;
pub mod mlx5_model;
pub mod oracle;
pub mod rxe;

use std::os::fd::OwnedFd;
use std::sync::Arc;

// The byte and fixture readers of the bnxt_re replay and model. mlx5.rs keeps its own copies:
// the mlx5 hot-path example includes that file alone (`#[path]`), without this module.

/// Bytes from hex text (`0x` prefix allowed), as the oracles write them.
pub fn unhex(s: &str) -> Vec<u8> {
    let s = s.trim_start_matches("0x");
    (0..s.len() / 2)
        .map(|i| u8::from_str_radix(&s[2 * i..2 * i + 2], 16).unwrap())
        .collect()
}

/// Lower-case hex text of `b`.
pub fn hex(b: &[u8]) -> String {
    b.iter().map(|x| format!("{x:02x}")).collect()
}

/// A number of an oracle file: a JSON number (negative ones as their two's complement) or hex text.
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

/// An fd for contexts whose kernel is played by the test.
pub fn dev_null() -> uverbs::provider::SharedFd {
    Arc::new(OwnedFd::from(std::fs::File::open("/dev/null").unwrap()))
}

/// Little-endian fields of device memory the models read.
pub fn le32(b: &[u8], o: usize) -> u32 {
    u32::from_le_bytes(b[o..o + 4].try_into().unwrap())
}
pub fn le64(b: &[u8], o: usize) -> u64 {
    u64::from_le_bytes(b[o..o + 8].try_into().unwrap())
}
