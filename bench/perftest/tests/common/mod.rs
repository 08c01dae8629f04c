//! What more than one integration test builds the same way (each test crate uses a part).
#![allow(dead_code)]

use perftest::oob::msg::{Negotiate, DEVICE_ATTR_LEN};
use perftest::params::{parse_with_env, ParamError, ParseOutcome, Params, Tool};

/// The NEGOTIATE block of a plain ib_write_bw run (RC, 64 KiB messages, one QP, 5 s, MiB/s)
/// with `iters`, the peer's raw `device_attr` and the mlx5dv `comp_mask`.
pub fn write_bw_negotiate(iters: u64, device_attr: [u8; DEVICE_ATTR_LEN], mlx5dv_comp_mask: u64) -> Negotiate {
    Negotiate {
        test_method: 0,
        connection_type: 0,
        verb: 2,
        tst: 1,
        atomic_type: 1,
        test_type: 0,
        report_fmt: 1,
        size: 65536,
        iters,
        aes_xts: 0,
        num_of_qps: 1,
        duration: 5,
        use_rdma_cm: 0,
        use_write_with_imm: 0,
        no_enhanced_reorder: 0,
        sig_offload: 0,
        data_validation: 0,
        device_attr,
        mlx5dv_comp_mask,
    }
}

/// These goldens are Debian's perftest 6.06 (tests/fixtures/help); the 6.29 persona, the
/// default, has its own in persona629_golden.rs. The persona is fixed here, whatever the
/// environment says.
pub fn parse(tool: Tool, a: &[String]) -> Result<ParseOutcome, ParamError> {
    parse_with_env(tool, a, Some("6.06"))
}


pub fn args(a: &[&str]) -> Vec<String> {
    a.iter().map(|s| s.to_string()).collect()
}

pub fn run(tool: Tool, a: &[&str]) -> Params {
    match parse(tool, &args(a)) {
        Ok(ParseOutcome::Run(p)) => *p,
        other => panic!("{tool} {a:?}: expected Run, got {other:?}"),
    }
}

pub fn err(tool: Tool, a: &[&str]) -> ParamError {
    match parse(tool, &args(a)) {
        Err(e) => e,
        other => panic!("{tool} {a:?}: expected an error, got {other:?}"),
    }
}
