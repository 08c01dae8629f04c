//! Starting a command on a node (the user's `ssh`, or `srun`) and watching it with a bound.
//!
//! ssh hands the remote side one string to its login shell, so every remote argument is
//! quoted for a POSIX shell (shlex); srun runs the argv itself, with no shell. Host names are
//! checked by the host list parser (no leading `-`) and passed after `--` (ssh) or as the
//! value of `-w` (srun), never inside a command string.

use std::io::{BufRead, BufReader, Read};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{channel, Receiver, RecvTimeoutError, SendError, Sender};
use std::sync::{Arc, Condvar, Mutex};
use std::time::{Duration, Instant};

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    Ssh,
    Srun,
}

#[derive(Clone, Debug)]
pub struct Launcher {
    pub kind: Kind,
    /// The ssh or srun program.
    pub program: String,
    /// ssh's ConnectTimeout (seconds).
    pub connect_timeout: u64,
    /// Inside an allocation (SLURM_JOB_ID set): steps may share a node's CPUs (`--overlap`).
    pub in_allocation: bool,
    /// ssh only: a private directory for connection sharing (ControlMaster). Every pair
    /// starts two remote commands; without sharing each pays a full login (key exchange and
    /// authentication), which on a slow login node costs seconds of its CPU per command.
    pub control_dir: Option<std::path::PathBuf>,
    /// One `matrix-agent` per node starts the pair sides ([`super::agents`]), so a pair costs
    /// no ssh session or srun step of its own. `None`: a command per side (`--no-agent`).
    pub agents: Option<std::sync::Arc<dyn SideStarter>>,
}

/// What starts pair sides other than as commands of their own (the node agents,
/// `super::agents`).
pub trait SideStarter: std::fmt::Debug + Send + Sync {
    /// Starts `bin matrix-exec ARGS` on `node`.
    fn start(&self, l: &Launcher, node: &str, bin: &str, args: &[String]) -> Result<Proc, String>;
    /// Ends whatever it keeps running; nothing of it stays behind.
    fn close(&self);
}

/// A side that a [`SideStarter`] runs, as a [`Proc`] holds it.
pub trait RemoteSide: Send {
    /// Close the side's stdin on the node (matrix-exec stops its tool).
    fn stop(&mut self);
    /// Kill the side on the node.
    fn kill(&mut self);
}

impl Launcher {
    /// The local argv that runs `remote` on `node`.
    pub fn argv(&self, node: &str, remote: &[String]) -> Result<Vec<String>, String> {
        let mut v = vec![self.program.clone()];
        match self.kind {
            Kind::Ssh => {
                let cmd = shlex::try_join(remote.iter().map(String::as_str))
                    .map_err(|e| format!("cannot quote the remote command: {e}"))?;
                for o in [
                    "BatchMode=yes".to_string(),
                    format!("ConnectTimeout={}", self.connect_timeout),
                    // A node that dies mid-pair is noticed in 15 s even without our deadline.
                    "ServerAliveInterval=5".into(),
                    "ServerAliveCountMax=3".into(),
                ] {
                    v.push("-o".into());
                    v.push(o);
                }
                if let Some(d) = &self.control_dir {
                    // The first command to a node becomes its master; the master outlives
                    // its own command by ControlPersist, and [`Launcher::close_shared`]
                    // ends it at the end of the run (60 s is the safety net if we are
                    // killed first).
                    for o in ["ControlMaster=auto".to_string(), format!("ControlPath={}/%C", d.display()), "ControlPersist=60".into()] {
                        v.push("-o".into());
                        v.push(o);
                    }
                }
                v.extend(["-T".into(), "--".into(), node.to_string(), cmd]);
            }
            Kind::Srun => {
                v.extend(["-N1", "-n1", "--quiet", "--unbuffered", "--chdir=/tmp", "--job-name=rperftest-matrix"].map(String::from));
                if self.in_allocation {
                    v.push("--overlap".into());
                }
                v.extend(["-w".into(), node.to_string(), "--".into()]);
                v.extend(remote.iter().cloned());
            }
        }
        Ok(v)
    }
}

impl Launcher {
    /// Starts `remote` on `node`: through the node's agent when it is `matrix-exec` and the
    /// launcher has agents, else as a command of its own. `Err` says why it could not start.
    pub fn start(&self, node: &str, remote: &[String]) -> Result<Proc, String> {
        if let (Some(a), [bin, sub, args @ ..]) = (&self.agents, remote) {
            if sub == "matrix-exec" {
                return a.start(self, node, bin, args);
            }
        }
        let argv = self.argv(node, remote)?;
        Proc::spawn(&argv).map_err(|e| format!("cannot start {}: {e}", self.program))
    }

    /// ssh options shared by ssh and scp: no prompts, the connect bound, the shared connection.
    fn ssh_options(&self) -> Vec<String> {
        let mut v = Vec::new();
        let mut opts = vec!["BatchMode=yes".to_string(), format!("ConnectTimeout={}", self.connect_timeout)];
        if let Some(d) = &self.control_dir {
            opts.extend(["ControlMaster=auto".to_string(), format!("ControlPath={}/%C", d.display()), "ControlPersist=60".into()]);
        }
        for o in opts {
            v.push("-o".into());
            v.push(o);
        }
        v
    }

    /// `--push`: the local argv that copies `local` to `remote` on `node` (scp, which uses the
    /// shared ssh connection), or to every node of the allocation (sbcast; `node` unused).
    /// `remote` is ours (letters, digits, `/`, `-`, `.`), never a user's string.
    pub fn copy_argv(&self, node: &str, local: &str, remote: &str) -> Vec<String> {
        match self.kind {
            Kind::Ssh => {
                let scp = match self.program.rsplit_once('/') {
                    Some((dir, _)) => format!("{dir}/scp"),
                    None => "scp".into(),
                };
                let mut v = vec![scp, "-q".into(), "-p".into()];
                v.extend(self.ssh_options());
                v.extend(["--".into(), local.to_string(), format!("{node}:{remote}")]);
                v
            }
            Kind::Srun => vec!["sbcast".into(), "--force".into(), "--preserve".into(), local.to_string(), remote.to_string()],
        }
    }

    /// Makes the private directory for ssh connection sharing (mode 0700: the sockets in it
    /// open sessions as this user).
    pub fn open_shared(&self) -> std::io::Result<()> {
        use std::os::unix::fs::DirBuilderExt;
        match &self.control_dir {
            Some(d) if self.kind == Kind::Ssh => std::fs::DirBuilder::new().mode(0o700).create(d),
            _ => Ok(()),
        }
    }

    /// Ends the shared ssh connections to `nodes` (`ssh -O exit`, bounded) and removes the
    /// directory; no ssh process of ours stays behind.
    pub fn close_shared(&self, nodes: &[String]) {
        if let Some(a) = &self.agents {
            a.close();
        }
        let Some(d) = &self.control_dir else { return };
        if self.kind != Kind::Ssh {
            return;
        }
        for n in nodes {
            let argv: Vec<String> = [self.program.as_str(), "-o", &format!("ControlPath={}/%C", d.display()), "-O", "exit", "--", n]
                .iter()
                .map(|s| s.to_string())
                .collect();
            let _ = run_bounded(&argv, Duration::from_secs(10));
        }
        let _ = std::fs::remove_dir_all(d);
    }
}

/// A line from a launched command.
pub enum Line {
    Out(String),
    Err(String),
    /// A side run by an agent ended with this code (a local command's end is its exit status).
    Exit(i32),
}

/// What runs a [`Proc`]: a local command (ssh or srun with the remote command), or a side that
/// a node's agent runs.
enum Runner {
    Local { child: Child, stdin: Option<ChildStdin> },
    Agent(Box<dyn RemoteSide>),
}

/// What a pair's wait sleeps on: rung by every line and every exit of the sides that ring it
/// ([`Proc::ring`]), so that a wait wakes on news, not on a clock.
#[derive(Default)]
pub struct Bell {
    /// How many times it has rung (a waiter sleeps while this is what it last saw).
    rings: Mutex<u64>,
    rung: Condvar,
}

impl Bell {
    pub fn ring(&self) {
        if let Ok(mut n) = self.rings.lock() {
            *n = n.wrapping_add(1);
        }
        self.rung.notify_all();
    }

    /// The count to wait from: read it before looking at the sides, and a line or exit that
    /// comes after the look ends the next [`Bell::wait`] at once.
    pub fn rings(&self) -> u64 {
        self.rings.lock().map(|n| *n).unwrap_or(0)
    }

    /// Sleep until the bell has rung since `seen` was read, or until `until`.
    pub fn wait(&self, seen: u64, until: Instant) {
        let Ok(mut n) = self.rings.lock() else { return };
        while *n == seen {
            let left = until.saturating_duration_since(Instant::now());
            if left.is_zero() {
                return;
            }
            match self.rung.wait_timeout(n, left) {
                Ok((g, _)) => n = g,
                Err(_) => return,
            }
        }
    }
}

/// Where a [`Proc`]'s readers and exit watcher ring: the bell of whoever waits on it, once
/// someone does.
#[derive(Default)]
struct Ringer {
    bell: Mutex<Option<Arc<Bell>>>,
    /// The command's exit is not watched (the watcher could not start or waitid failed):
    /// a wait must look for it now and then.
    blind: AtomicBool,
}

impl Ringer {
    fn ring(&self) {
        if let Ok(g) = self.bell.lock() {
            if let Some(b) = g.as_ref() {
                b.ring();
            }
        }
    }
}

/// The sending half of a [`Proc`]'s lines: a line sent also rings its bell.
#[derive(Clone)]
pub struct LineTx {
    tx: Sender<Line>,
    ringer: Arc<Ringer>,
}

impl LineTx {
    pub fn send(&self, line: Line) -> Result<(), SendError<Line>> {
        // The line is in the channel before the ring (the bell's mutex orders the two for the
        // waiter), so a waiter woken by it finds the line.
        let r = self.tx.send(line);
        self.ringer.ring();
        r
    }
}

/// The receiving half, for [`Proc::remote_side`].
pub struct LineRx {
    rx: Receiver<Line>,
    ringer: Arc<Ringer>,
}

/// A channel for a side's lines.
pub fn lines() -> (LineTx, LineRx) {
    let (tx, rx) = channel();
    let ringer = Arc::new(Ringer::default());
    (LineTx { tx, ringer: ringer.clone() }, LineRx { rx, ringer })
}

/// A launched command: its output arrives line by line; stdin stays open until [`Proc::close_stdin`].
pub struct Proc {
    runner: Runner,
    rx: Receiver<Line>,
    ringer: Arc<Ringer>,
    pub out: Vec<String>,
    pub err: Vec<String>,
    pub exit: Option<i32>,
}

/// Keep at most this many lines per stream (a chatty remote cannot eat our memory).
const MAX_LINES: usize = 2000;

fn reader<R: Read + Send + 'static>(r: R, tx: LineTx, err: bool) {
    std::thread::spawn(move || {
        for line in BufReader::new(r).lines() {
            let Ok(line) = line else { break };
            if tx.send(if err { Line::Err(line) } else { Line::Out(line) }).is_err() {
                break;
            }
        }
    });
}

/// A thread that rings `ringer` when the local command `pid` exits; if none can watch it, the
/// ringer is marked blind. (It holds no line sender: the channel still ends with the output.)
fn watch_exit(pid: u32, ringer: Arc<Ringer>) {
    let r = ringer.clone();
    let spawned = std::thread::Builder::new().stack_size(64 * 1024).spawn(move || {
        // A command already reaped by the time this runs makes waitid fail: harmless, its exit
        // is known then.
        // Relaxed: the ring after it (the bell's mutex) makes it seen by the woken waiter.
        if !super::exec::wait_exit(pid) {
            r.blind.store(true, Ordering::Relaxed);
        }
        r.ring();
    });
    if spawned.is_err() {
        ringer.blind.store(true, Ordering::Relaxed);
    }
}

impl Proc {
    pub fn spawn(argv: &[String]) -> std::io::Result<Proc> {
        let (prog, args) = argv.split_first().ok_or_else(|| std::io::Error::other("empty command"))?;
        let mut child = Command::new(prog).args(args).stdin(Stdio::piped()).stdout(Stdio::piped()).stderr(Stdio::piped()).spawn()?;
        let (tx, LineRx { rx, ringer }) = lines();
        if let Some(o) = child.stdout.take() {
            reader(o, tx.clone(), false);
        }
        if let Some(e) = child.stderr.take() {
            reader(e, tx, true);
        }
        watch_exit(child.id(), ringer.clone());
        let stdin = child.stdin.take();
        Ok(Proc { runner: Runner::Local { child, stdin }, rx, ringer, out: Vec::new(), err: Vec::new(), exit: None })
    }

    /// A side an agent runs; its lines and its end arrive on `rx`.
    pub fn remote_side(side: Box<dyn RemoteSide>, rx: LineRx) -> Proc {
        Proc { runner: Runner::Agent(side), rx: rx.rx, ringer: rx.ringer, out: Vec::new(), err: Vec::new(), exit: None }
    }

    /// From now on every line and the exit of this command ring `bell` (a wait on several
    /// commands sleeps on one bell). What came before is in the channel: poll after this.
    pub fn ring(&self, bell: &Arc<Bell>) {
        if let Ok(mut g) = self.ringer.bell.lock() {
            *g = Some(bell.clone());
        }
    }

    /// Its end rings the bell or is known already (else a wait must poll for it): a side an
    /// agent runs says its end as a line; a local command has a watcher thread.
    pub fn exit_rings(&self) -> bool {
        self.exit.is_some() || !self.ringer.blind.load(Ordering::Relaxed)
    }

    fn take(&mut self, l: Line) -> Option<String> {
        match l {
            Line::Out(s) => {
                if self.out.len() < MAX_LINES {
                    self.out.push(s.clone());
                }
                Some(s)
            }
            Line::Err(s) => {
                if self.err.len() < MAX_LINES {
                    self.err.push(s);
                }
                None
            }
            Line::Exit(code) => {
                self.exit.get_or_insert(code);
                None
            }
        }
    }

    /// Wait up to `until` for the next stdout line (stderr is collected on the way). `None`
    /// when the time is up or the command's output ended.
    pub fn next_out_line(&mut self, until: Instant) -> Option<String> {
        loop {
            let left = until.saturating_duration_since(Instant::now());
            match self.rx.recv_timeout(left) {
                Ok(l) => {
                    if let Some(s) = self.take(l) {
                        return Some(s);
                    }
                }
                Err(RecvTimeoutError::Timeout) | Err(RecvTimeoutError::Disconnected) => return None,
            }
        }
    }

    /// Collect what has arrived and reap the command if it ended; true once it has.
    pub fn poll(&mut self) -> bool {
        while let Ok(l) = self.rx.try_recv() {
            self.take(l);
        }
        if let (None, Runner::Local { child, .. }) = (self.exit, &mut self.runner) {
            if let Ok(Some(s)) = child.try_wait() {
                // A launcher killed by a signal: 128 + signal, as a shell says it.
                self.exit = Some(s.code().unwrap_or(128));
            }
        }
        self.exit.is_some()
    }

    /// After the command ended: the output still in the pipes (bounded: the readers end
    /// when the pipes close, which a grandchild keeping them open could delay).
    pub fn drain(&mut self, bound: Duration) {
        let until = Instant::now() + bound;
        while let Ok(l) = self.rx.recv_timeout(until.saturating_duration_since(Instant::now())) {
            self.take(l);
        }
    }

    pub fn close_stdin(&mut self) {
        match &mut self.runner {
            Runner::Local { stdin, .. } => *stdin = None,
            Runner::Agent(side) => side.stop(),
        }
    }

    /// Wait until the command ends or `until`; true if it ended.
    pub fn wait_until(&mut self, until: Instant) -> bool {
        loop {
            if self.poll() {
                return true;
            }
            if Instant::now() >= until {
                return false;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// Stop it, politely first: closing stdin makes the remote `matrix-exec` stop its tool and
    /// the launcher end by itself; then SIGTERM (srun passes it to the step), then SIGKILL.
    pub fn terminate(&mut self) {
        self.close_stdin();
        if self.wait_until(Instant::now() + Duration::from_secs(5)) {
            return;
        }
        match &mut self.runner {
            Runner::Local { child, .. } => sigterm(child),
            Runner::Agent(side) => side.kill(),
        }
        if self.wait_until(Instant::now() + Duration::from_secs(3)) {
            return;
        }
        match &mut self.runner {
            Runner::Local { child, .. } => {
                let _ = child.kill();
                if let Ok(s) = child.wait() {
                    self.exit = Some(s.code().unwrap_or(128));
                }
            }
            // The agent did not answer a kill: its connection is as good as gone.
            Runner::Agent(_) => self.exit = Some(137),
        }
    }

    /// The lines the side printed that are not our own protocol, last `n`.
    pub fn tail(&self, n: usize) -> Vec<String> {
        let mine = |l: &&String| !l.starts_with(super::exec::TAG) && !l.trim().is_empty();
        let all: Vec<String> = self.out.iter().filter(mine).chain(self.err.iter().filter(mine)).cloned().collect();
        all[all.len().saturating_sub(n)..].to_vec()
    }
}

impl Drop for Proc {
    fn drop(&mut self) {
        if self.exit.is_none() && !self.poll() {
            self.terminate();
        }
    }
}

/// SIGTERM to `child` if it still runs (srun cancels its job step, and Slurm ends every
/// process in it; ssh closes its connection).
pub fn sigterm(child: &mut Child) {
    if let (Ok(None), Ok(pid)) = (child.try_wait(), i32::try_from(child.id())) {
        // SAFETY: kill(2) on our own child, which try_wait just found not yet reaped (and the
        // `&mut` keeps anyone else from reaping it meanwhile).
        unsafe { libc::kill(pid, libc::SIGTERM) };
    }
}

/// Run `argv` to its end within `bound`, killed past it; (exit, stdout, stderr), exit None when
/// it had to be killed.
pub fn run_bounded(argv: &[String], bound: Duration) -> std::io::Result<(Option<i32>, Vec<String>, Vec<String>)> {
    let mut p = Proc::spawn(argv)?;
    p.close_stdin();
    let done = p.wait_until(Instant::now() + bound);
    if !done {
        p.terminate();
    }
    p.drain(Duration::from_secs(2));
    let exit = if done { p.exit } else { None };
    Ok((exit, std::mem::take(&mut p.out), std::mem::take(&mut p.err)))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn s(v: &[&str]) -> Vec<String> {
        v.iter().map(|x| x.to_string()).collect()
    }

    #[test]
    fn ssh_quotes_every_remote_argument() {
        let l = Launcher { kind: Kind::Ssh, program: "ssh".into(), connect_timeout: 7, in_allocation: false, control_dir: None, agents: None };
        let v = l.argv("node3", &s(&["/opt/r perf/rperftest", "matrix-exec", "--", "ib_write_bw", "x;rm -rf /", "$(id)", "it's"])).expect("argv");
        assert_eq!(
            v[..12],
            s(&["ssh", "-o", "BatchMode=yes", "-o", "ConnectTimeout=7", "-o", "ServerAliveInterval=5", "-o", "ServerAliveCountMax=3", "-T", "--", "node3"])[..]
        );
        // What the remote shell splits it into is exactly the argv we meant.
        assert_eq!(shlex::split(&v[12]).expect("split"), s(&["/opt/r perf/rperftest", "matrix-exec", "--", "ib_write_bw", "x;rm -rf /", "$(id)", "it's"]));
        assert!(!v[12].contains("$(id) "), "{}", v[12]);
    }

    #[test]
    fn srun_passes_the_argv_unquoted_with_the_node_as_a_value() {
        let mut l = Launcher { kind: Kind::Srun, program: "srun".into(), connect_timeout: 7, in_allocation: true, control_dir: None, agents: None };
        let v = l.argv("node2", &s(&["rperftest", "a b"])).expect("argv");
        assert_eq!(v, s(&["srun", "-N1", "-n1", "--quiet", "--unbuffered", "--chdir=/tmp", "--job-name=rperftest-matrix", "--overlap", "-w", "node2", "--", "rperftest", "a b"]));
        l.in_allocation = false;
        assert!(!l.argv("node2", &s(&["x"])).expect("argv").contains(&"--overlap".to_string()));
    }

    #[test]
    fn srun_starts_a_node_agent_as_one_task_with_stdin_and_stdout_piped() {
        // The agent's whole protocol is its stdin and stdout: srun forwards stdin to its one
        // task (the default --input), --unbuffered sends each reply line on at once, and the
        // agent is a plain argument vector after `--` (no shell on the node).
        let l = Launcher { kind: Kind::Srun, program: "srun".into(), connect_timeout: 7, in_allocation: true, control_dir: None, agents: None };
        let v = l.argv("node4", &s(&["/tmp/rperftest-push-ab/rperftest", "matrix-agent"])).expect("argv");
        assert_eq!(
            v,
            s(&["srun", "-N1", "-n1", "--quiet", "--unbuffered", "--chdir=/tmp", "--job-name=rperftest-matrix", "--overlap", "-w", "node4", "--", "/tmp/rperftest-push-ab/rperftest", "matrix-agent"])
        );
    }

    #[test]
    fn bounded_runs_end_and_keep_their_output() {
        let (exit, out, err) = run_bounded(&s(&["sh", "-c", "echo one; echo two >&2; exit 3"]), Duration::from_secs(20)).expect("sh");
        assert_eq!((exit, out, err), (Some(3), s(&["one"]), s(&["two"])));
        let t = Instant::now();
        let (exit, out, _) = run_bounded(&s(&["sh", "-c", "echo started; exec sleep 30"]), Duration::from_millis(300)).expect("sh");
        assert_eq!(exit, None);
        assert_eq!(out, s(&["started"]));
        assert!(t.elapsed() < Duration::from_secs(15), "{:?}", t.elapsed());
        assert!(run_bounded(&s(&["/nonexistent/launcher"]), Duration::from_secs(1)).is_err());
    }

    #[test]
    fn closing_stdin_ends_a_reader() {
        let mut p = Proc::spawn(&s(&["sh", "-c", "cat >/dev/null; echo eof"])).expect("sh");
        assert!(!p.wait_until(Instant::now() + Duration::from_millis(200)));
        p.close_stdin();
        assert_eq!(p.next_out_line(Instant::now() + Duration::from_secs(10)).as_deref(), Some("eof"));
        assert!(p.wait_until(Instant::now() + Duration::from_secs(10)));
        assert_eq!(p.exit, Some(0));
    }
}
