//! `rperftest matrix-agent`: one long-lived process per node that starts the node's pair sides
//! for the coordinator, so a pair costs one local process start per side on its nodes instead of
//! two remote logins or sessions (an ssh channel, a login shell and the ssh client each time).
//!
//! The coordinator ([`super::agents`]) starts one agent per node through its launcher and
//! writes commands to its stdin, one per line:
//!
//! - `run ID ["--deadline","30",...]`: run a side as `matrix-exec` would with those arguments
//!   (a JSON array of strings), in a thread of the agent ([`super::exec::run_side`]): this
//!   binary's tool subcommand in a process group of its own, with the side's deadline, ready
//!   port and report. It runs nothing but this binary, whatever the line says.
//! - `stop ID`: stop that side (SIGINT to its tool, SIGKILL 3 s later).
//! - `kill ID`: SIGKILL that side's process group (its tool).
//!
//! It answers on stdout, one line each: `@rpt-agent ID o TEXT` and `@rpt-agent ID e TEXT` for
//! the side's stdout and stderr lines (matrix-exec's `@rpt-matrix` lines among the first), then
//! `@rpt-agent ID x CODE` once the side has ended and its output is all sent. The end of stdin
//! (the coordinator is done, or its connection died) stops every side still running, then the
//! agent. Each side's deadline is the agent's own: the tool never outlives it while the agent
//! lives, and a tool whose agent was killed ends at its peer's deadline or its own bounds.
//! (Earlier the agent started a `matrix-exec` process per side: one more start of this binary
//! for every side, which on a node that many sides share, as on the netns bed, was CPU.)

use std::collections::HashMap;
use std::io::{BufRead, Write};
use std::sync::atomic::{AtomicI32, Ordering};
use std::sync::mpsc::{channel, Sender};
use std::sync::{Arc, Mutex};
use std::path::Path;
use std::time::{Duration, Instant};

use super::exec::{parse_side, run_side, Event, Sink};

/// The start of every line the agent writes on stdout.
pub const TAG: &str = "@rpt-agent ";

/// How long the sides have to end by themselves after the agent's stdin ended (a side gives
/// its tool 3 s after SIGINT), before their process groups are killed.
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

/// Where the agent's lines go: its stdout (a buffer in tests).
type Out = Arc<Mutex<dyn Write + Send>>;

fn say(out: &Out, line: &str) {
    if let Ok(mut o) = out.lock() {
        let _ = writeln!(o, "{line}");
        let _ = o.flush();
    }
}

/// A running side: how to stop it, and its tool's process group (0 until the tool started).
struct Running {
    cancel: Sender<Event>,
    pgid: Arc<AtomicI32>,
}

type Table = Arc<Mutex<HashMap<u64, Running>>>;

/// A side's lines, tagged with its id, on the agent's stdout.
struct Tagged {
    id: u64,
    out: Out,
}

impl Sink for Tagged {
    fn out(&self, line: &str) {
        say(&self.out, &format!("{TAG}{} o {line}", self.id));
    }

    fn err(&self, line: &str) {
        say(&self.out, &format!("{TAG}{} e {line}", self.id));
    }
}

/// Starts side `id` in a thread of its own, which says its end.
fn start(exe: &Path, tmpdir: Option<&Path>, id: u64, args: &[String], table: &Table, out: &Out) -> Result<(), String> {
    let side = parse_side(args).map_err(|e| format!("run {id}: {}", e.to_string().lines().next().unwrap_or_default()))?;
    let (tx, rx) = channel();
    let pgid = Arc::new(AtomicI32::new(0));
    {
        let mut t = table.lock().map_err(|_| "poisoned")?;
        if t.contains_key(&id) {
            return Err(format!("side {id} is already running"));
        }
        t.insert(id, Running { cancel: tx.clone(), pgid: pgid.clone() });
    }
    let (exe, tmpdir, table, out) = (exe.to_path_buf(), tmpdir.map(Path::to_path_buf), table.clone(), out.clone());
    std::thread::spawn(move || {
        let sink: Arc<dyn Sink> = Arc::new(Tagged { id, out: out.clone() });
        let on_spawn = |pid: u32| pgid.store(i32::try_from(pid).unwrap_or(0), Ordering::SeqCst);
        let code = run_side(&exe, &side, tmpdir.as_deref(), true, (tx, rx), on_spawn, &sink);
        if let Ok(mut t) = table.lock() {
            t.remove(&id);
        }
        say(&out, &format!("{TAG}{id} x {}", u8::try_from(code).unwrap_or(255)));
    });
    Ok(())
}

fn kill_group(pgid: &AtomicI32) {
    // 0 (the tool has not started, or could not): no group to kill, and kill(0) would be ours.
    let pgid = pgid.load(Ordering::SeqCst);
    if pgid > 0 {
        // SAFETY: kill(2) with a negative pid signals the process group that the side's tool
        // leads (made by `process_group(0)` at its start); it touches no memory of ours.
        unsafe { libc::kill(-pgid, libc::SIGKILL) };
    }
}

/// stdin ended: every side is stopped, and the groups still there after the grace are killed.
fn stop_all(table: &Table) {
    if let Ok(t) = table.lock() {
        t.values().for_each(|r| {
            let _ = r.cancel.send(Event::Cancel);
        });
    }
    let until = Instant::now() + STOP_GRACE;
    while Instant::now() < until && table.lock().map(|t| !t.is_empty()).unwrap_or(false) {
        std::thread::sleep(Duration::from_millis(50));
    }
    if let Ok(t) = table.lock() {
        t.values().for_each(|r| kill_group(&r.pgid));
    }
}

/// `rperftest matrix-agent`: reads commands until stdin ends. Exit 0, or 1 when this binary
/// cannot be found. `env` as the binary read it (`TMPDIR`, for the sides' reports).
pub fn run(args: &[String], env: &crate::env::Env) -> u8 {
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
            Ok(Request::Run { id, args }) => start(&exe, env.tmpdir.as_deref(), id, &args, &table, &out).map_err(|e| (id, e)),
            Ok(Request::Stop(id)) => {
                if let Some(r) = table.lock().ok().as_ref().and_then(|t| t.get(&id)) {
                    let _ = r.cancel.send(Event::Cancel);
                }
                Ok(())
            }
            Ok(Request::Kill(id)) => {
                if let Some(r) = table.lock().ok().as_ref().and_then(|t| t.get(&id)) {
                    kill_group(&r.pgid);
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

    /// Side 1 runs `sh -c SCRIPT` (as the tool) through [`start`]; `then` acts on the table
    /// once "hi" is out; the lines said, up to the side's end.
    fn sh_side(script: &str, then: impl FnOnce(&Table)) -> Vec<String> {
        let buf = Arc::new(Mutex::new(Vec::<u8>::new()));
        let out: Out = buf.clone();
        let table: Table = Arc::new(Mutex::new(HashMap::new()));
        let args = s(&["--deadline", "600", "--", "-c", script]);
        start(Path::new("/bin/sh"), None, 1, &args, &table, &out).expect("start");
        let text = || String::from_utf8(buf.lock().expect("buf").clone()).expect("utf-8");
        let t = Instant::now();
        while !text().contains("@rpt-agent 1 o hi\n") {
            assert!(t.elapsed() < Duration::from_secs(30), "no hi: {}", text());
            std::thread::sleep(Duration::from_millis(10));
        }
        then(&table);
        while !text().contains("@rpt-agent 1 x ") {
            assert!(t.elapsed() < Duration::from_secs(60), "no end: {}", text());
            std::thread::sleep(Duration::from_millis(10));
        }
        assert!(table.lock().expect("table").is_empty(), "the side left the table");
        text().lines().map(String::from).collect()
    }

    #[test]
    fn stop_ends_a_side_and_its_tool() {
        let lines = sh_side("echo hi; exec sleep 600", |t| {
            let _ = t.lock().expect("table")[&1].cancel.send(Event::Cancel);
        });
        assert_eq!(lines, ["@rpt-agent 1 o hi", "@rpt-agent 1 o @rpt-matrix cancelled", "@rpt-agent 1 o @rpt-matrix exit 124", "@rpt-agent 1 x 124"]);
    }

    #[test]
    fn kill_ends_the_tools_process_group() {
        // The tool's child is in its group too: the side ends only when both are gone (the
        // child holds the stdout pipe open).
        let lines = sh_side("sleep 600 & echo hi; wait", |t| kill_group(&t.lock().expect("table")[&1].pgid));
        assert_eq!(lines, ["@rpt-agent 1 o hi", "@rpt-agent 1 o @rpt-matrix exit 128", "@rpt-agent 1 x 128"]);
    }

    #[test]
    fn a_side_with_bad_arguments_does_not_start() {
        let out: Out = Arc::new(Mutex::new(Vec::<u8>::new()));
        let table: Table = Arc::new(Mutex::new(HashMap::new()));
        let e = start(Path::new("/bin/sh"), None, 4, &s(&["--", "x"]), &table, &out).expect_err("no deadline");
        assert!(e.starts_with("run 4: error:"), "{e}");
        assert!(table.lock().expect("table").is_empty());
        assert!(kill_group_is_safe_before_the_tool_starts());
    }

    fn kill_group_is_safe_before_the_tool_starts() -> bool {
        // pgid 0 must not become kill(0, ...): that would be the agent's own group.
        kill_group(&AtomicI32::new(0));
        true
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
