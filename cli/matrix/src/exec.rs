//! `rperftest matrix-exec` (run on a node by `rperftest matrix`, through ssh or srun): one side
//! of a pair, with the guarantees the coordinator cannot give from afar.
//!
//! - The tool is killed at `--deadline` on the node itself, so no process outlives its pair
//!   even when the coordinator or its connection is gone.
//! - `--watch-stdin`: the tool is killed when stdin ends. ssh and srun forward the end of the
//!   coordinator's pipe, so closing it stops this side at once, and so does the launcher dying.
//! - `--ready-port P` (server side): `@rpt-matrix ready` once something listens on TCP port P, so
//!   the client starts when the server can take it (no `sleep 2`).
//! - The tool writes `--out_json` into a private temporary directory; the report comes back as
//!   one `@rpt-matrix json` line on stdout, then `@rpt-matrix exit CODE`, and the directory is
//!   removed.
//! - It sleeps while the tool runs: a thread waits for the exit (waitid, not reaping) and another
//!   for the end of stdin; only a server looks for its port, every 20 ms until it listens. On a
//!   node where many sides share a CPU (the netns bed's TCG VM), polling every side every 20 ms
//!   was CPU taken from the pairs.

use std::io::{BufRead, BufReader, Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::os::unix::process::CommandExt;
use std::sync::mpsc::{channel, Receiver, Sender};
use std::sync::Arc;
use std::time::{Duration, Instant};

use clap::{value_parser, Arg, ArgAction};

pub const TAG: &str = "@rpt-matrix ";

fn cli() -> clap::Command {
    clap::Command::new("rperftest matrix-exec")
        .about("one side of a rperftest matrix pair (started by rperftest matrix on each node)")
        .arg(Arg::new("deadline").long("deadline").required(true).value_parser(value_parser!(u64).range(1..=86_400 + 3600)).help("seconds; the tool is killed after them"))
        .arg(Arg::new("ready-port").long("ready-port").value_parser(value_parser!(u16)).help("print '@rpt-matrix ready' once TCP PORT listens"))
        .arg(Arg::new("watch-stdin").long("watch-stdin").action(ArgAction::SetTrue).help("kill the tool when stdin ends"))
        .arg(Arg::new("tool").required(true).num_args(1..).allow_hyphen_values(true).last(true))
}

/// Where a side's lines go: matrix-exec's own stdout and stderr, or the node agent's tagged
/// lines ([`super::agent`]). Lines arrive whole, from several threads.
pub trait Sink: Send + Sync + 'static {
    /// The tool's stdout lines and the `@rpt-matrix` lines the coordinator reads.
    fn out(&self, line: &str);
    /// The tool's stderr lines and this side's own complaints.
    fn err(&self, line: &str);
}

/// matrix-exec's sink: its stdout and stderr (a gone reader is not an error here).
struct StdStreams;

impl Sink for StdStreams {
    fn out(&self, line: &str) {
        let mut o = std::io::stdout().lock();
        let _ = writeln!(o, "{line}");
        let _ = o.flush();
    }

    fn err(&self, line: &str) {
        let _ = writeln!(std::io::stderr(), "{line}");
    }
}

/// One side, as matrix-exec's arguments (and the agent's `run` lines) give it.
#[derive(Debug)]
pub struct SideArgs {
    pub deadline: Duration,
    pub ready_port: Option<u16>,
    /// matrix-exec only: the end of stdin cancels the side (the agent has `stop` for that).
    pub watch_stdin: bool,
    /// This binary's subcommand and its arguments.
    pub tool: Vec<String>,
}

/// Parses matrix-exec's arguments (the agent's `run` lines carry them too).
pub fn parse_side(args: &[String]) -> Result<SideArgs, clap::Error> {
    let m = cli().try_get_matches_from(std::iter::once("rperftest matrix-exec".to_string()).chain(args.iter().cloned()))?;
    Ok(side_from(&m))
}

fn side_from(m: &clap::ArgMatches) -> SideArgs {
    SideArgs {
        deadline: Duration::from_secs(*m.get_one::<u64>("deadline").unwrap_or(&60)),
        ready_port: m.get_one::<u16>("ready-port").copied(),
        watch_stdin: m.get_flag("watch-stdin"),
        tool: m.get_many::<String>("tool").map(|v| v.cloned().collect()).unwrap_or_default(),
    }
}

/// `/tmp/rperftest-matrix-XXXXXX`, mode 0700, made by mkdtemp (no name an attacker can guess).
fn private_dir(tmpdir: Option<&std::path::Path>) -> std::io::Result<PathBuf> {
    let base = tmpdir.map(PathBuf::from).unwrap_or_else(|| PathBuf::from("/tmp"));
    let mut tmpl = base.join("rperftest-matrix-XXXXXX").into_os_string().into_encoded_bytes();
    tmpl.push(0);
    // SAFETY: tmpl is a writable NUL-terminated buffer that mkdtemp fills in place.
    let p = unsafe { libc::mkdtemp(tmpl.as_mut_ptr().cast()) };
    if p.is_null() {
        return Err(std::io::Error::last_os_error());
    }
    tmpl.pop();
    Ok(PathBuf::from(String::from_utf8_lossy(&tmpl).into_owned()))
}

/// Is anything listening on TCP `port` (IPv4 or IPv6)? `/proc/net/tcp*` lines read
/// `sl local_address rem_address st ...` with the port in hex and st 0A for LISTEN.
pub fn tcp_listening(port: u16, tables: &[String]) -> bool {
    let want = format!(":{port:04X}");
    tables.iter().flat_map(|t| t.lines().skip(1)).any(|l| {
        let f: Vec<&str> = l.split_whitespace().collect();
        f.len() > 3 && f[1].ends_with(&want) && f[3] == "0A"
    })
}

fn read_tables() -> Vec<String> {
    ["/proc/net/tcp", "/proc/net/tcp6"].iter().filter_map(|p| std::fs::read_to_string(p).ok()).collect()
}

fn signal(child: &Child, sig: i32) {
    if let Ok(pid) = i32::try_from(child.id()) {
        // SAFETY: kill(2) on our own child's pid; it has not been reaped yet.
        unsafe { libc::kill(pid, sig) };
    }
}

/// Stop the tool: SIGINT first (it releases its resources and exits within a second on its
/// own), SIGKILL 3 s later. Its exit comes on `events` (the waiter thread); should that thread
/// have failed, the 3 s pass and the kill finds it gone or ends it.
fn stop(child: &mut Child, events: &Receiver<Event>) {
    signal(child, libc::SIGINT);
    let until = Instant::now() + Duration::from_secs(3);
    loop {
        match events.recv_timeout(until.saturating_duration_since(Instant::now())) {
            Ok(Event::Exited) => {
                let _ = child.wait();
                return;
            }
            Ok(_) => {} // another cancel, or the waiter's failure: keep to the bound
            Err(_) => break,
        }
    }
    if !matches!(child.try_wait(), Ok(Some(_))) {
        let _ = child.kill();
        let _ = child.wait();
    }
}

fn forward<R: Read + Send + 'static>(r: R, sink: Arc<dyn Sink>, to_out: bool) -> std::thread::JoinHandle<()> {
    std::thread::spawn(move || {
        for line in BufReader::new(r).lines() {
            let Ok(line) = line else { break };
            if to_out {
                sink.out(&line);
            } else {
                sink.err(&line);
            }
        }
    })
}

/// `rperftest matrix-exec` on a node; `env` as the binary read it (`TMPDIR`).
pub fn run(args: &[String], env: &crate::env::Env) -> u8 {
    let m = match cli_args::parse_std(cli(), "matrix-exec", args) {
        Ok(m) => m,
        Err(code) => return code,
    };
    let side = side_from(&m);
    let (tx, rx) = channel();
    if side.watch_stdin {
        let tx = tx.clone();
        // Detached: it may block in read() until we exit, which is fine.
        std::thread::spawn(move || {
            let mut buf = [0u8; 256];
            let mut stdin = std::io::stdin();
            while matches!(stdin.read(&mut buf), Ok(n) if n > 0) {}
            let _ = tx.send(Event::Cancel);
        });
    }
    let sink: Arc<dyn Sink> = Arc::new(StdStreams);
    let code = match std::env::current_exe() {
        Ok(exe) => run_side(&exe, &side, env.tmpdir.as_deref(), false, (tx, rx), |_| {}, &sink),
        Err(e) => {
            sink.err(&format!("rperftest matrix-exec: cannot find this binary: {e}"));
            sink.out(&format!("{TAG}exit 1"));
            1
        }
    };
    u8::try_from(code).unwrap_or(255)
}

/// Runs one side (`exe TOOL...` writing its report into a private directory under `tmpdir`)
/// to its end, says everything on `sink`, `@rpt-matrix exit CODE` last, and returns the code.
/// `own_group`: the tool leads a process group of its own (the agent kills it by group);
/// `on_spawn` gets its pid. An [`Event::Cancel`] sent on `events.0` stops it.
pub fn run_side(exe: &Path, side: &SideArgs, tmpdir: Option<&Path>, own_group: bool, events: Events, on_spawn: impl FnOnce(u32), sink: &Arc<dyn Sink>) -> i32 {
    let code = match private_dir(tmpdir) {
        Ok(dir) => {
            let code = run_in(&dir, exe, side, own_group, events, on_spawn, sink);
            let _ = std::fs::remove_dir_all(&dir);
            code
        }
        Err(e) => {
            sink.err(&format!("rperftest matrix-exec: cannot make a temporary directory: {e}"));
            1
        }
    };
    sink.out(&format!("{TAG}exit {code}"));
    code
}

/// How often a server side looks for its listening port.
const READY_POLL: Duration = Duration::from_millis(20);

/// What ends a side's wait early.
pub enum Event {
    /// The tool exited (not yet reaped: [`Child::wait`] does that).
    Exited,
    /// Stop the side: matrix-exec's stdin ended, or the agent was told `stop`.
    Cancel,
    /// waitid(2) failed: the exit is then looked for every [`READY_POLL`].
    WaitFailed,
}

/// A side's event channel: cancels are sent on the first half, the exit is sent there too.
pub type Events = (Sender<Event>, Receiver<Event>);

/// A thread that sends [`Event::Exited`] on `tx` when `child` exits (detached).
fn watch_exit(child: &Child, tx: Sender<Event>) {
    let pid: libc::id_t = child.id();
    std::thread::spawn(move || {
        let _ = tx.send(if wait_exit(pid) { Event::Exited } else { Event::WaitFailed });
    });
}

/// Blocks until our child `pid` has exited, without reaping it (its `Child::wait` or
/// `try_wait` does that); false when waitid(2) failed (the exit is then to be polled for).
pub fn wait_exit(pid: libc::id_t) -> bool {
    loop {
        // SAFETY: waitid(2) on our own child's pid with WNOWAIT: it only waits for the exit
        // and leaves the child to be reaped by Child::wait, so the pid is not freed (and
        // cannot be reused) while its owner may still signal it. `info` is ours to fill.
        let rc = unsafe {
            let mut info: libc::siginfo_t = std::mem::zeroed();
            libc::waitid(libc::P_PID, pid, &mut info, libc::WEXITED | libc::WNOWAIT)
        };
        match rc {
            0 => return true,
            _ if std::io::Error::last_os_error().kind() == std::io::ErrorKind::Interrupted => continue,
            _ => return false,
        }
    }
}

/// Runs `exe TOOL... --out_json --out_json_file DIR/out.json` (the tool is this binary's
/// subcommand) and says on `sink` what the coordinator reads; returns the exit code.
fn run_in(dir: &Path, exe: &Path, side: &SideArgs, own_group: bool, events: Events, on_spawn: impl FnOnce(u32), sink: &Arc<dyn Sink>) -> i32 {
    let (deadline, ready_port) = (side.deadline, side.ready_port);
    let t0 = Instant::now();
    let json_path = dir.join("out.json");
    let mut cmd = Command::new(exe);
    cmd.args(&side.tool).arg("--out_json").arg("--out_json_file").arg(&json_path);
    cmd.stdin(Stdio::null()).stdout(Stdio::piped()).stderr(Stdio::piped());
    if own_group {
        cmd.process_group(0);
    }
    let mut child = match cmd.spawn() {
        Ok(c) => c,
        Err(e) => {
            sink.err(&format!("rperftest matrix-exec: cannot start {}: {e}", exe.display()));
            return 1;
        }
    };
    on_spawn(child.id());
    let fo = child.stdout.take().map(|s| forward(s, sink.clone(), true));
    let fe = child.stderr.take().map(|s| forward(s, sink.clone(), false));
    // The exit comes on the channel a cancel comes on.
    watch_exit(&child, events.0.clone());
    let events = events.1;
    let mut ready_sent = ready_port.is_none();
    let mut poll_exit = false;
    let status = loop {
        // Until the server listens, look for its port every READY_POLL; after that, sleep
        // until the tool ends, stdin ends or the deadline (no polling: on a busy node every
        // wake-up of every side costs).
        let left = deadline.saturating_sub(t0.elapsed());
        let wait = if ready_sent && !poll_exit { left } else { left.min(READY_POLL) };
        match events.recv_timeout(wait) {
            Ok(Event::Exited) => break child.wait().ok(),
            Ok(Event::WaitFailed) => poll_exit = true,
            Ok(Event::Cancel) => {
                sink.out(&format!("{TAG}cancelled"));
                stop(&mut child, &events);
                break None;
            }
            Err(_) => {}
        }
        if poll_exit {
            if let Ok(Some(st)) = child.try_wait() {
                break Some(st);
            }
        }
        if !ready_sent && tcp_listening(ready_port.unwrap_or(0), &read_tables()) {
            sink.out(&format!("{TAG}ready"));
            ready_sent = true;
        }
        if t0.elapsed() >= deadline {
            sink.out(&format!("{TAG}timeout after {} s", deadline.as_secs()));
            stop(&mut child, &events);
            break None;
        }
    };
    for h in [fo, fe].into_iter().flatten() {
        let _ = h.join();
    }
    if let Ok(text) = std::fs::read_to_string(&json_path) {
        match serde_json::from_str::<serde_json::Value>(&text) {
            Ok(v) => sink.out(&format!("{TAG}json {v}")),
            Err(e) => sink.out(&format!("{TAG}badjson {e}")),
        }
    }
    match status {
        Some(s) => s.code().unwrap_or(128),
        // 124 like timeout(1): the coordinator tells a kill from the tool's own failure.
        None => 124,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn listening_sockets_are_found_by_port_and_state() {
        let v4 = "  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode\n   0: 00000000:4853 00000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 1 1\n   1: 0100007F:4854 0100007F:9999 01 00000000:00000000 00:00000000 00000000     0        0 1 1\n".to_string();
        let v6 = "  sl  local_address ...\n   0: 00000000000000000000000000000000:48B0 00000000000000000000000000000000:0000 0A 0 0 0 0 0 0\n".to_string();
        let t = [v4, v6];
        assert!(tcp_listening(18515, &t));
        assert!(!tcp_listening(18516, &t), "established, not listening");
        assert!(tcp_listening(0x48B0, &t));
        assert!(!tcp_listening(18517, &t));
        assert!(!tcp_listening(18515, &["garbage\nx y\n".to_string()]));
    }

    #[test]
    fn arguments_are_checked() {
        let ok = cli().try_get_matches_from(["x", "--deadline", "5", "--ready-port", "18600", "--", "ib_write_bw", "-d", "rxe0"]);
        let m = ok.expect("parse");
        let tool: Vec<&String> = m.get_many::<String>("tool").expect("tool").collect();
        assert_eq!(tool, ["ib_write_bw", "-d", "rxe0"]);
        assert!(cli().try_get_matches_from(["x", "--deadline", "0", "--", "t"]).is_err());
        assert!(cli().try_get_matches_from(["x", "--deadline", "5"]).is_err());
        assert!(cli().try_get_matches_from(["x", "--deadline", "abc", "--", "t"]).is_err());
    }

    /// Lines said, `e ` before the stderr ones.
    #[derive(Default)]
    struct Said(std::sync::Mutex<Vec<String>>);

    impl Sink for Said {
        fn out(&self, line: &str) {
            self.0.lock().expect("said").push(line.to_string());
        }
        fn err(&self, line: &str) {
            self.0.lock().expect("said").push(format!("e {line}"));
        }
    }

    /// `sh -c SCRIPT` as the tool (the appended `--out_json ...` become sh's $0, $1, ...) in
    /// its own process group; the code and the lines said, without the last (`exit CODE`).
    fn sh_side(script: &str, deadline: Duration, ready_port: Option<u16>, events: Events) -> (i32, Vec<String>) {
        let side = SideArgs { deadline, ready_port, watch_stdin: false, tool: vec!["-c".into(), script.into()] };
        let said = Arc::new(Said::default());
        let sink: Arc<dyn Sink> = said.clone();
        let mut pid = 0;
        let code = run_side(Path::new("/bin/sh"), &side, None, true, events, |p| pid = p, &sink);
        assert_ne!(pid, 0, "on_spawn not called");
        let mut lines = said.0.lock().expect("said").clone();
        assert_eq!(lines.pop(), Some(format!("{TAG}exit {code}")));
        (code, lines)
    }

    fn sh(script: &str, deadline: Duration, ready_port: Option<u16>) -> (i32, Vec<String>) {
        sh_side(script, deadline, ready_port, channel())
    }

    #[test]
    fn a_cancel_stops_the_tool() {
        let (tx, rx) = channel();
        let cancel = tx.clone();
        std::thread::spawn(move || {
            std::thread::sleep(Duration::from_millis(300));
            let _ = cancel.send(Event::Cancel);
        });
        let (code, lines) = sh_side("echo started; exec sleep 600", Duration::from_secs(600), None, (tx, rx));
        assert_eq!((code, lines), (124, vec!["started".to_string(), format!("{TAG}cancelled")]));
    }

    #[test]
    fn a_tool_that_cannot_start_is_one_line_and_exit_1() {
        let side = SideArgs { deadline: Duration::from_secs(5), ready_port: None, watch_stdin: false, tool: vec![] };
        let said = Arc::new(Said::default());
        let sink: Arc<dyn Sink> = said.clone();
        let code = run_side(Path::new("/nonexistent/rperftest"), &side, None, true, channel(), |_| {}, &sink);
        let lines = said.0.lock().expect("said").clone();
        assert_eq!(code, 1);
        assert!(lines[0].starts_with("e rperftest matrix-exec: cannot start /nonexistent/rperftest:"), "{lines:?}");
        assert_eq!(lines[1], format!("{TAG}exit 1"));
    }

    #[test]
    fn side_arguments_parse_as_matrix_execs() {
        let s = parse_side(&["--deadline", "7", "--ready-port", "18600", "--", "ib_write_bw", "-d", "x"].map(String::from)).expect("parse");
        assert_eq!((s.deadline, s.ready_port, s.watch_stdin), (Duration::from_secs(7), Some(18600), false));
        assert_eq!(s.tool, ["ib_write_bw", "-d", "x"]);
        assert!(parse_side(&["--", "ib_write_bw"].map(String::from)).is_err(), "no deadline");
    }

    #[test]
    fn the_tools_exit_ends_the_wait_long_before_the_deadline() {
        // Were the exit missed, the wait would end at the deadline with 124, not 3.
        let (code, lines) = sh("echo hello; exit 3", Duration::from_secs(600), None);
        assert_eq!((code, lines), (3, vec!["hello".to_string()]));
        // The report the tool wrote is one line.
        let (code, lines) = sh(r#"echo '{"a": 1}' > "$2""#, Duration::from_secs(600), None);
        assert_eq!((code, lines), (0, vec![format!("{TAG}json {{\"a\":1}}")]));
    }

    #[test]
    fn the_deadline_stops_the_tool_with_124() {
        let (code, lines) = sh("exec sleep 600", Duration::from_secs(1), None);
        assert_eq!((code, lines), (124, vec![format!("{TAG}timeout after 1 s")]));
    }

    #[test]
    fn a_tool_deaf_to_sigint_is_killed_after_its_grace() {
        let (code, lines) = sh("trap '' INT; exec sleep 600", Duration::from_secs(1), None);
        assert_eq!((code, lines), (124, vec![format!("{TAG}timeout after 1 s")]));
    }

    #[test]
    fn ready_is_said_once_the_port_listens() {
        let l = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
        let port = l.local_addr().expect("addr").port();
        let (code, lines) = sh("sleep 0.3", Duration::from_secs(600), Some(port));
        assert_eq!((code, lines), (0, vec![format!("{TAG}ready")]));
        drop(l);
    }

    #[test]
    fn the_private_directory_is_mode_0700() {
        use std::os::unix::fs::PermissionsExt;
        let d = private_dir(None).expect("mkdtemp");
        let mode = std::fs::metadata(&d).expect("stat").permissions().mode() & 0o777;
        assert_eq!(mode, 0o700);
        assert!(d.file_name().and_then(|n| n.to_str()).is_some_and(|n| n.starts_with("rperftest-matrix-") && !n.ends_with("XXXXXX")));
        std::fs::remove_dir(&d).expect("rmdir");
    }
}
