//! Names copied from guides, end to end through the binary: the stock error lines come first
//! and unchanged, `did you mean …?` follows on a line of its own, and the exit status is the
//! stock one (issue #39).

use std::process::{Command, Output};

fn run(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_rperftest")).args(args).env_remove("RPERFTEST_PERFTEST_VERSION").output().expect("run rperftest")
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

#[test]
fn a_perftest_long_option_typo_gets_a_second_line_after_the_stock_ones() {
    let o = run(&["ib_write_bw", "--tx_depth=64"]);
    assert_eq!(o.status.code(), Some(1));
    assert_eq!(
        text(&o.stderr),
        " Invalid Command or flag.\n Please check command line and run again.\n\n\
         --tx_depth: Invalid Command or flag (unknown option)\ndid you mean --tx-depth?\n"
    );
    assert!(text(&o.stdout).contains("Usage:"), "the usage text still follows on stdout");
    // Nothing close: no extra line.
    let o = run(&["ib_write_bw", "--bogus"]);
    assert_eq!(o.status.code(), Some(1));
    assert!(text(&o.stderr).ends_with("--bogus: Invalid Command or flag (unknown option)\n"), "{}", text(&o.stderr));
}

#[test]
fn a_qperf_test_without_its_transport_gets_the_real_name() {
    // No server is contacted: the bad word ends the parse first.
    let o = run(&["qperf", "h", "rdma_read_lat"]);
    assert_eq!(o.status.code(), Some(1));
    assert_eq!(text(&o.stdout), "rdma_read_lat: bad test; try: qperf --help tests\ndid you mean rc_rdma_read_lat?\n");
    let o = run(&["qperf", "h", "-b", "rc_bw"]);
    assert_eq!(o.status.code(), Some(1));
    let out = text(&o.stdout);
    assert_eq!(out.lines().next(), Some("-b: bad option; try: qperf --help options"));
    assert!(out.lines().nth(1).is_some_and(|l| l.starts_with("did you mean rc_bi_bw? (qperf has no -b")), "{out}");
}
