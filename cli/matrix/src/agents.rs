//! The coordinator's side of the node agents ([`super::agent`]): one `matrix-agent` per node,
//! started through the launcher the first time a pair side goes to that node, kept for the
//! run, and started again if it ended (a node back from a fault is not written off).
//!
//! Each side gets an id; a thread per agent reads the agent's stdout and hands each line to its
//! side's channel, so a side reads like a command of its own ([`Proc`]). When an agent's
//! output ends (the node or its connection died), every side still waiting on it ends with
//! exit 255 and the agent's last words on stderr, as a dead ssh would have said them.

use std::collections::{HashMap, VecDeque};
use std::io::{BufRead, BufReader, Write};
use std::os::unix::process::CommandExt;
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use super::agent::{parse_said, run_line, Said};
use super::launcher::{sigterm, Launcher, Line, LineTx, Proc, RemoteSide, SideStarter};

/// How many of an agent's stderr lines are kept to say why it ended.
const LAST_WORDS: usize = 3;

/// After the agent's stdin is closed, how long it has to stop its sides and end (its own
/// grace is 5 s) before its launcher process is killed.
const CLOSE_BOUND: Duration = Duration::from_secs(10);

/// After SIGTERM, how long an agent's launcher has to end before SIGKILL.
const TERM_BOUND: Duration = Duration::from_secs(3);

/// One node's agent.
struct Conn {
    node: String,
    stdin: Mutex<Option<ChildStdin>>,
    child: Mutex<Child>,
    /// The sides waiting on this agent; `None` once its output ended (no side may join).
    routes: Mutex<Option<HashMap<u64, LineTx>>>,
    last_words: Arc<Mutex<VecDeque<String>>>,
}

/// A side that an agent runs (what [`Proc`] holds).
pub struct Side {
    conn: Arc<Conn>,
    id: u64,
    stopped: bool,
}

impl RemoteSide for Side {
    fn stop(&mut self) {
        if !std::mem::replace(&mut self.stopped, true) {
            self.conn.send(&format!("stop {}", self.id));
        }
    }

    /// SIGKILL the side's process group on the node.
    fn kill(&mut self) {
        self.conn.send(&format!("kill {}", self.id));
    }
}

impl Conn {
    fn send(&self, line: &str) {
        if let Ok(mut g) = self.stdin.lock() {
            // A write that fails means the agent is gone; its reader says so to every side.
            if let Some(w) = g.as_mut() {
                if writeln!(w, "{line}").and_then(|()| w.flush()).is_err() {
                    *g = None;
                }
            }
        }
    }

    fn alive(&self) -> bool {
        self.routes.lock().map(|r| r.is_some()).unwrap_or(false)
    }

    /// The agent's output ended: every waiting side ends, with why.
    fn ended(&self) {
        let code = self.exit_code(Duration::from_secs(2));
        let words: Vec<String> = self.last_words.lock().map(|w| w.iter().cloned().collect()).unwrap_or_default();
        let routes = self.routes.lock().ok().and_then(|mut r| r.take()).unwrap_or_default();
        for tx in routes.into_values() {
            let _ = tx.send(Line::Err(format!("the node agent on {} ended (launcher exit {})", self.node, code.map_or("unknown".into(), |c| c.to_string()))));
            for w in &words {
                let _ = tx.send(Line::Err(w.clone()));
            }
            let _ = tx.send(Line::Exit(255));
        }
    }

    /// The launcher's exit code, waiting at most `bound` for it.
    fn exit_code(&self, bound: Duration) -> Option<i32> {
        let until = Instant::now() + bound;
        let mut child = self.child.lock().ok()?;
        loop {
            if let Ok(Some(s)) = child.try_wait() {
                return Some(s.code().unwrap_or(128));
            }
            if Instant::now() >= until {
                return None;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}

/// Hands each line of the agent's stdout to its side; at the end, [`Conn::ended`].
fn demux(conn: Arc<Conn>, stdout: std::process::ChildStdout) {
    for line in BufReader::new(stdout).lines() {
        let Ok(line) = line else { break };
        let Some(said) = parse_said(&line) else { continue };
        let Ok(mut g) = conn.routes.lock() else { break };
        let Some(routes) = g.as_mut() else { break };
        match said {
            Said::Out(id, t) => routes.get(&id).map(|tx| tx.send(Line::Out(t.to_string()))),
            Said::Err(id, t) => routes.get(&id).map(|tx| tx.send(Line::Err(t.to_string()))),
            Said::Exit(id, c) => routes.remove(&id).map(|tx| tx.send(Line::Exit(c))),
        };
    }
    conn.ended();
}

/// Every node's agent for one run.
pub struct Agents {
    conns: Mutex<HashMap<String, Arc<Conn>>>,
    next_id: AtomicU64,
}

impl std::fmt::Debug for Agents {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let n = self.conns.lock().map(|c| c.len()).unwrap_or(0);
        write!(f, "Agents({n} node(s))")
    }
}

impl Default for Agents {
    fn default() -> Self {
        Agents { conns: Mutex::new(HashMap::new()), next_id: AtomicU64::new(1) }
    }
}

impl SideStarter for Agents {
    /// Starts `matrix-exec ARGS` on `node` through its agent (started with `l` if need be).
    fn start(&self, l: &Launcher, node: &str, bin: &str, args: &[String]) -> Result<Proc, String> {
        let id = self.next_id.fetch_add(1, Ordering::Relaxed);
        let (tx, rx) = super::launcher::lines();
        // Twice at most: an agent found dead as the side joins is started again once.
        for _ in 0..2 {
            let conn = self.conn(l, node, bin)?;
            let joined = conn.routes.lock().ok().and_then(|mut r| r.as_mut().map(|r| r.insert(id, tx.clone()))).is_some();
            if joined {
                conn.send(&run_line(id, args));
                return Ok(Proc::remote_side(Box::new(Side { conn, id, stopped: false }), rx));
            }
        }
        Err(format!("the node agent on {node} ended as it was started"))
    }

    fn close(&self) {
        self.close_all();
    }
}

impl Agents {

    /// The node's live agent, started if there is none.
    fn conn(&self, l: &Launcher, node: &str, bin: &str) -> Result<Arc<Conn>, String> {
        let mut conns = self.conns.lock().map_err(|_| "agents: poisoned lock")?;
        if let Some(c) = conns.get(node).filter(|c| c.alive()) {
            return Ok(c.clone());
        }
        let argv = l.argv(node, &[bin.to_string(), "matrix-agent".into()])?;
        let (prog, args) = argv.split_first().ok_or("empty launcher command")?;
        let mut child = Command::new(prog)
            .args(args)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            // Not in the terminal's process group: a Ctrl-C reaches the coordinator, which
            // stops the sides and then the agents, rather than killing every connection at once.
            .process_group(0)
            .spawn()
            .map_err(|e| format!("cannot start {}: {e}", l.program))?;
        let (stdout, stderr) = (child.stdout.take(), child.stderr.take());
        let last_words = Arc::new(Mutex::new(VecDeque::new()));
        let conn = Arc::new(Conn {
            node: node.to_string(),
            stdin: Mutex::new(child.stdin.take()),
            child: Mutex::new(child),
            routes: Mutex::new(Some(HashMap::new())),
            last_words: last_words.clone(),
        });
        if let Some(e) = stderr {
            std::thread::spawn(move || {
                for line in BufReader::new(e).lines().map_while(Result::ok) {
                    if let Ok(mut w) = last_words.lock() {
                        if w.len() == LAST_WORDS {
                            w.pop_front();
                        }
                        w.push_back(line);
                    }
                }
            });
        }
        match stdout {
            Some(o) => {
                let c = conn.clone();
                std::thread::spawn(move || demux(c, o));
            }
            None => conn.ended(),
        }
        conns.insert(node.to_string(), conn.clone());
        Ok(conn)
    }

    /// Ends every agent: its stdin closes (it stops what still runs, then ends); a launcher
    /// still there after [`CLOSE_BOUND`] gets SIGTERM, and SIGKILL [`TERM_BOUND`] later. No
    /// process of ours stays behind.
    fn close_all(&self) {
        let conns: Vec<Arc<Conn>> = self.conns.lock().map(|mut c| c.drain().map(|(_, v)| v).collect()).unwrap_or_default();
        for c in &conns {
            if let Ok(mut s) = c.stdin.lock() {
                *s = None;
            }
        }
        let until = Instant::now() + CLOSE_BOUND;
        let stuck: Vec<&Arc<Conn>> = conns.iter().filter(|c| c.exit_code(until.saturating_duration_since(Instant::now())).is_none()).collect();
        // SIGTERM before SIGKILL: srun then cancels its step, and Slurm ends every process
        // in it, the sides included (a SIGKILL gives srun no say; ssh closes either way).
        for c in &stuck {
            if let Ok(mut ch) = c.child.lock() {
                sigterm(&mut ch);
            }
        }
        let until = Instant::now() + TERM_BOUND;
        for c in stuck {
            if c.exit_code(until.saturating_duration_since(Instant::now())).is_none() {
                if let Ok(mut ch) = c.child.lock() {
                    let _ = ch.kill();
                    let _ = ch.wait();
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::launcher::Kind;

    /// A launcher that does not end when its agent's stdin closes gets SIGTERM (on which srun
    /// cancels its step, and Slurm ends all of it), not at once SIGKILL.
    #[test]
    fn a_launcher_deaf_to_its_stdin_gets_sigterm_before_sigkill() {
        let dir = std::env::temp_dir().join(format!("rperftest-agents-term-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).expect("dir");
        let prog = dir.join("launcher");
        let script = format!("#!/bin/sh\ntrap 'echo term >{}/got; exit 0' TERM\nwhile :; do sleep 0.1; done\n", dir.display());
        std::fs::write(&prog, script).expect("script");
        std::fs::set_permissions(&prog, std::os::unix::fs::PermissionsExt::from_mode(0o755)).expect("chmod");
        let l = Launcher { kind: Kind::Srun, program: prog.display().to_string(), connect_timeout: 5, in_allocation: false, control_dir: None, agents: None };
        let agents = Agents::default();
        let mut side = agents.start(&l, "n1", "rperftest", &["--deadline".into(), "5".into()]).expect("start");
        let t = Instant::now();
        agents.close();
        assert!(t.elapsed() < CLOSE_BOUND + TERM_BOUND, "{:?}", t.elapsed());
        assert_eq!(std::fs::read_to_string(dir.join("got")).ok().as_deref(), Some("term\n"));
        // The side waiting on it ends as its agent did.
        assert!(side.wait_until(Instant::now() + Duration::from_secs(5)));
        assert_eq!(side.exit, Some(255));
        let _ = std::fs::remove_dir_all(&dir);
    }
}
