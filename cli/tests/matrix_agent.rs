//! `rperftest matrix-agent` as the coordinator drives it: sides start through it, their lines
//! come back tagged with their id and end with their exit code; bad commands are named on
//! stderr and start nothing; the end of stdin ends the agent. (No RDMA device is needed: the
//! side here is a tool that fails to find its device, which is still a side that runs and ends.)

use std::io::{BufRead, BufReader, Write};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

#[test]
fn sides_run_through_the_agent_and_end_with_their_code() {
    let mut agent = Command::new(env!("CARGO_BIN_EXE_rperftest"))
        .arg("matrix-agent")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start the agent");
    let mut stdin = agent.stdin.take().expect("stdin");
    writeln!(stdin, "run 7 [\"--deadline\",\"20\",\"--\",\"ib_write_bw\",\"-d\",\"no_such_dev\"]").expect("write");
    writeln!(stdin, "run x []").expect("write");
    writeln!(stdin, "exec 8 [\"/bin/sh\"]").expect("write");
    writeln!(stdin, "stop 99").expect("write");
    stdin.flush().expect("flush");
    let t = Instant::now();
    let mut lines = Vec::new();
    for line in BufReader::new(agent.stdout.take().expect("stdout")).lines() {
        let line = line.expect("line");
        let end = line.starts_with("@rpt-agent 7 x ");
        lines.push(line);
        if end {
            break;
        }
        assert!(t.elapsed() < Duration::from_secs(60), "no end in 60 s: {lines:?}");
    }
    drop(stdin);
    let status = agent.wait().expect("wait");
    let mut err = String::new();
    std::io::Read::read_to_string(&mut agent.stderr.take().expect("stderr"), &mut err).expect("stderr");
    assert!(status.success(), "{status:?} {err}");
    assert!(lines.iter().all(|l| l.starts_with("@rpt-agent 7 ")), "{lines:?}");
    // matrix-exec's own protocol line, then the agent's end of the side with the same code.
    let code = lines.last().and_then(|l| l.strip_prefix("@rpt-agent 7 x ")).expect("end").to_string();
    assert_ne!(code, "0", "{lines:?}");
    assert!(lines.iter().any(|l| l == &format!("@rpt-agent 7 o @rpt-matrix exit {code}")), "{lines:?}");
    assert!(lines.iter().any(|l| l.starts_with("@rpt-agent 7 e ") && l.contains("no_such_dev")), "{lines:?}");
    assert!(err.contains("bad id in run x []"), "{err}");
    assert!(err.contains("unknown command exec 8"), "{err}");
}

#[test]
fn the_agent_takes_no_arguments() {
    let out = Command::new(env!("CARGO_BIN_EXE_rperftest")).args(["matrix-agent", "--help"]).output().expect("run");
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("takes no arguments"));
}
