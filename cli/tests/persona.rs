//! The persona end to end through the binary: `--perftest-version` and RPERFTEST_PERFTEST_VERSION
//! choose what `-h` / `-V` print (byte for byte as perftest 6.29's captures, or 6.06's) and both
//! exit 1 as perftest does; a bad value is one line on stderr and exit 1.

use std::path::PathBuf;
use std::process::{Command, Output};

fn fixture(rel: &str) -> String {
    let p = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../bench/perftest/tests/fixtures").join(rel);
    std::fs::read_to_string(&p).unwrap_or_else(|e| panic!("{}: {e}", p.display()))
}

fn run(args: &[&str], env: Option<&str>) -> Output {
    let mut c = Command::new(env!("CARGO_BIN_EXE_rperftest"));
    c.args(args).env_remove("RPERFTEST_PERFTEST_VERSION");
    if let Some(v) = env {
        c.env("RPERFTEST_PERFTEST_VERSION", v);
    }
    c.output().expect("run rperftest")
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

#[test]
fn option_and_environment_select_629s_help_and_version() {
    for tool in ["ib_write_bw", "ib_read_lat", "ib_send_bw", "ib_atomic_lat"] {
        let help = fixture(&format!("perftest-6.29/help/{tool}.h.stdout"));
        let version = fixture(&format!("perftest-6.29/help/{tool}.version.stdout"));
        for (args, env) in [
            (vec![tool, "--perftest-version", "6.29", "-h"], None),
            (vec![tool, "-h"], Some("6.29")),
        ] {
            let o = run(&args, env);
            assert_eq!(text(&o.stdout), help, "{args:?} {env:?}");
            assert_eq!(text(&o.stderr), "");
            assert_eq!(o.status.code(), Some(1));
        }
        let o = run(&[tool, "--version"], Some("6.29"));
        assert_eq!((text(&o.stdout), o.status.code()), (version, Some(1)));
    }
}

#[test]
fn default_is_629_and_the_option_beats_the_environment() {
    let o = run(&["ib_write_bw", "-V"], None);
    assert_eq!((text(&o.stdout), o.status.code()), (fixture("perftest-6.29/help/ib_write_bw.version.stdout"), Some(1)));
    let o = run(&["ib_write_bw", "-h"], None);
    assert_eq!((text(&o.stdout), o.status.code()), (fixture("perftest-6.29/help/ib_write_bw.h.stdout"), Some(1)));
    let o = run(&["ib_write_bw", "-h"], Some("6.06"));
    assert_eq!((text(&o.stdout), o.status.code()), (fixture("help/ib_write_bw.help.txt"), Some(1)));
    let o = run(&["ib_write_bw", "--perftest-version=6.06", "-h"], Some("6.29"));
    assert_eq!((text(&o.stdout), o.status.code()), (fixture("help/ib_write_bw.help.txt"), Some(1)));
}

#[test]
fn a_bad_persona_is_one_line_and_exit_1() {
    for (args, env) in [(vec!["ib_write_bw", "--perftest-version", "5.0"], None), (vec!["ib_write_bw"], Some("latest"))] {
        let o = run(&args, env);
        assert_eq!(o.status.code(), Some(1), "{args:?}");
        assert_eq!(text(&o.stdout), "");
        let e = text(&o.stderr);
        assert_eq!(e.lines().count(), 1, "{e}");
        assert!(e.contains("6.06 or 6.29"), "{e}");
    }
}
