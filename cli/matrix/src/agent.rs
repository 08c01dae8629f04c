//! `rperftest matrix-agent`: one long-lived process per node that starts the node's pair sides
//! for the coordinator, so a pair costs two local process starts on its nodes instead of two
//! remote logins or sessions (an ssh channel, a login shell and the ssh client each time).
//!
//! The coordinator ([`super::agents`]) starts one agent per node through its launcher and
//! writes commands to its stdin, one per line:
//!
//! - `run ID ["--deadline","30",...]`: start this binary's `matrix-exec` with those arguments
//!   (a JSON array of strings). Only `matrix-exec` is ever started: the agent runs no other
//!   program, whatever the line says.
//! - `stop ID`: close that side's stdin (`matrix-exec --watch-stdin` stops its tool).
//! - `kill ID`: SIGKILL that side's process group (matrix-exec and its tool).
//!
//! It answers on stdout, one line each: `@rpt-agent ID o TEXT` and `@rpt-agent ID e TEXT` for
//! the side's stdout and stderr lines, then `@rpt-agent ID x CODE` once the side has ended and
//! its output is all sent. The end of stdin (the coordinator is done, or its connection died)
//! stops every side still running, then the agent; a side's `matrix-exec` still holds its own
//! deadline, so nothing outlives its pair even if the agent is killed.

use std::collections::HashMap;
use std::io::{BufRead, BufReader, Read, Write};
use std::os::unix::process::CommandExt;
use std::process::{ChildStdin, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// The start of every line the agent writes on stdout.
pub const TAG: &str = "@rpt-agent ";

/// How long the sides have to end by themselves after the agent's stdin ended (matrix-exec
/// gives its tool 3 s after SIGINT), before their process groups are killed.
const STOP_GRACE: Duration = Duration::from_secs(5);

/// A command from the coordinator.
#[derive(Debug, PartialEq, Eq)]
pub enum Request {
    Run { id: u64, args: Vec<String> },
    Stop(u64),
    Kill(u64),
}

/// Parses one command line; `Err` says what is wrong with it.
pub fn parse_command(line: &str) -> Result<Request, String> {
    let mut it = line.splitn(3, ' ');
    let (verb, id) = (it.next().unwrap_or_default(), it.next().unwrap_or_default());
    let id: u64 = id.parse().map_err(|_| format!("bad id in {:.60}", line))?;
    match (verb, it.next()) {
        ("run", Some(json)) => {
            let args: Vec<String> = serde_json::from_str(json).map_err(|e| format!("run {id}: arguments: {e}"))?;
            Ok(Request::Run { id, args })
        }
        ("stop", None) => Ok(Request::Stop(id)),
        ("kill", None) => Ok(Request::Kill(id)),
        _ => Err(format!("unknown command {:.60}", line)),
    }
}

/// The line that starts side `id` with `args` (for [`parse_command`]).
pub fn run_line(id: u64, args: &[String]) -> String {
    format!("run {id} {}", serde_json::Value::from(args.to_vec()))
}

/// What the agent says, as the coordinator reads it back.
#[derive(Debug, PartialEq, Eq)]
pub enum Said<'a> {
    Out(u64, &'a str),
    Err(u64, &'a str),
    Exit(u64, i32),
}

/// Parses a line of the agent's stdout; `None` for anything that is not ours (a login banner).
pub fn parse_said(line: &str) -> Option<Said<'_>> {
    let rest = line.strip_prefix(TAG)?;
    let (id, rest) = rest.split_once(' ')?;
    let id: u64 = id.parse().ok()?;
    let (kind, text) = rest.split_at_checked(1)?;
    let text = text.strip_prefix(' ').unwrap_or(text);
    match kind {
        "o" => Some(Said::Out(id, text)),
        "e" => Some(Said::Err(id, text)),
        "x" => text.trim().parse().ok().map(|c| Said::Exit(id, c)),
        _ => None,
    }
}

type Out = Arc<Mutex<std::io::Stdout>>;

fn say(out: &Out, line: &str) {
    if let Ok(mut o) = out.lock() {
        let _ = writeln!(o, "{line}");
        let _ = o.flush();
    }
}

/// A running side: its stdin (dropped by `stop`) and its process group (matrix-exec leads it).
struct Running {
    stdin: Option<ChildStdin>,
    pgid: i32,
}

type Table = Arc<Mutex<HashMap<u64, Running>>>;

fn forward<R: Read + Send + 'static>(r: R, id: u64, kind: char, out: Out) -> std::thread::JoinHandle<()> {
    std::thread::spawn(move || {
        for line in BufReader::new(r).lines() {
            let Ok(line) = line else { break };
            say(&out, &format!("{TAG}{id} {kind} {line}"));
        }
    })
}

/// Starts side `id`; its end is said by a thread of its own.
fn start(exe: &std::path::Path, id: u64, args: &[String], table: &Table, out: &Out) -> Result<(), String> {
    if table.lock().map_err(|_| "poisoned")?.contains_key(&id) {
        return Err(format!("side {id} is already running"));
    }
    let mut child = Command::new(exe)
        .arg("matrix-exec")
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        // Its own process group, so `kill` reaches the tool too.
        .process_group(0)
        .spawn()
        .map_err(|e| format!("cannot start {} matrix-exec: {e}", exe.display()))?;
    let pgid = i32::try_from(child.id()).map_err(|_| "pid out of range")?;
    let fo = child.stdout.take().map(|s| forward(s, id, 'o', out.clone()));
    let fe = child.stderr.take().map(|s| forward(s, id, 'e', out.clone()));
    if let Ok(mut t) = table.lock() {
        t.insert(id, Running { stdin: child.stdin.take(), pgid });
    }
    let (table, out) = (table.clone(), out.clone());
    std::thread::spawn(move || {
        let code = child.wait().ok().and_then(|s| s.code()).unwrap_or(128);
        for h in [fo, fe].into_iter().flatten() {
            let _ = h.join();
        }
        if let Ok(mut t) = table.lock() {
            t.remove(&id);
        }
        say(&out, &format!("{TAG}{id} x {code}"));
    });
    Ok(())
}

fn kill_group(pgid: i32) {
    // SAFETY: kill(2) with a negative pid signals the process group that matrix-exec leads
    // (made by `process_group(0)` at its start); it touches no memory of ours.
    unsafe { libc::kill(-pgid, libc::SIGKILL) };
}

/// stdin ended: every side's stdin is closed, and the groups still there after the grace
/// are killed.
fn stop_all(table: &Table) {
    if let Ok(mut t) = table.lock() {
        t.values_mut().for_each(|r| r.stdin = None);
    }
    let until = Instant::now() + STOP_GRACE;
    while Instant::now() < until && table.lock().map(|t| !t.is_empty()).unwrap_or(false) {
        std::thread::sleep(Duration::from_millis(50));
    }
    if let Ok(t) = table.lock() {
        t.values().for_each(|r| kill_group(r.pgid));
    }
}

/// `rperftest matrix-agent`: reads commands until stdin ends. Exit 0, or 1 when this binary
/// cannot be found.
pub fn run(args: &[String]) -> u8 {
    if !args.is_empty() {
        eprintln!("rperftest matrix-agent: takes no arguments (started by rperftest matrix on each node)");
        return 2;
    }
    let exe = match std::env::current_exe() {
        Ok(e) => e,
        Err(e) => {
            eprintln!("rperftest matrix-agent: cannot find this binary: {e}");
            return 1;
        }
    };
    let out: Out = Arc::new(Mutex::new(std::io::stdout()));
    let table: Table = Arc::new(Mutex::new(HashMap::new()));
    for line in std::io::stdin().lock().lines() {
        let Ok(line) = line else { break };
        let done = match parse_command(line.trim_end()) {
            Ok(Request::Run { id, args }) => start(&exe, id, &args, &table, &out).map_err(|e| (id, e)),
            Ok(Request::Stop(id)) => {
                if let Some(r) = table.lock().ok().as_mut().and_then(|t| t.get_mut(&id)) {
                    r.stdin = None;
                }
                Ok(())
            }
            Ok(Request::Kill(id)) => {
                if let Some(r) = table.lock().ok().as_ref().and_then(|t| t.get(&id)) {
                    kill_group(r.pgid);
                }
                Ok(())
            }
            Err(e) => {
                eprintln!("rperftest matrix-agent: {e}");
                Ok(())
            }
        };
        // A side that could not start ends at once, with why, so its pair is not left waiting.
        if let Err((id, why)) = done {
            say(&out, &format!("{TAG}{id} e rperftest matrix-agent: {why}"));
            say(&out, &format!("{TAG}{id} x 127"));
        }
    }
    stop_all(&table);
    0
}

#[cfg(test)]
mod tests {
    use super::*;

    fn s(v: &[&str]) -> Vec<String> {
        v.iter().map(|x| x.to_string()).collect()
    }

    #[test]
    fn commands_round_trip_and_bad_ones_are_named() {
        let args = s(&["--deadline", "30", "--", "ib_write_bw", "-d", "rxe 0", "a\"b"]);
        assert_eq!(parse_command(&run_line(7, &args)), Ok(Request::Run { id: 7, args }));
        assert_eq!(parse_command("stop 12"), Ok(Request::Stop(12)));
        assert_eq!(parse_command("kill 3"), Ok(Request::Kill(3)));
        for bad in ["", "run", "run x []", "run 1", "run 1 [1,2]", "run 1 {\"a\":1}", "stop 1 2", "exec 1 []", "stop -1"] {
            assert!(parse_command(bad).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn what_the_agent_says_is_read_back_and_the_rest_ignored() {
        assert_eq!(parse_said("@rpt-agent 5 o @rpt-matrix ready"), Some(Said::Out(5, "@rpt-matrix ready")));
        assert_eq!(parse_said("@rpt-agent 5 e "), Some(Said::Err(5, "")));
        assert_eq!(parse_said("@rpt-agent 5 e"), Some(Said::Err(5, "")));
        assert_eq!(parse_said("@rpt-agent 9 x 124"), Some(Said::Exit(9, 124)));
        for other in ["Welcome to node3", "@rpt-agent x o y", "@rpt-agent 5 x", "@rpt-agent 5 q z", "@rpt-agent 5", "@rpt-agent 5 é"] {
            assert_eq!(parse_said(other), None, "{other:?}");
        }
    }
}
