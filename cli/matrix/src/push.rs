//! `--push`: this static binary onto every node for the run, and off again at the end.
//!
//! The binary goes to `/tmp/rperftest-push-<16 random hex digits>/rperftest`. The directory is
//! made on each node with `mkdir -m 700`, which fails if the name exists, so nothing another
//! user prepared is ever used, and only this user can reach the file. ssh copies with scp over
//! the shared connection; srun copies with one `sbcast` to the allocation's nodes (sbcast writes
//! to every node of the job, so every one of them needs the directory: the hosts should be the
//! allocation, as they are by default inside one).

use std::time::Duration;

use super::launcher::{run_bounded, Kind, Launcher};

pub struct Pushed {
    pub dir: String,
    pub bin: String,
    /// Per host (same order): `None` when the copy is there, else why not.
    pub failed: Vec<Option<String>>,
}

/// A name no one can guess: 64 bits from the kernel's generator.
fn random_dir() -> std::io::Result<String> {
    use std::io::Read;
    let mut b = [0u8; 8];
    std::fs::File::open("/dev/urandom")?.read_exact(&mut b)?;
    Ok(format!("/tmp/rperftest-push-{}", b.iter().map(|x| format!("{x:02x}")).collect::<String>()))
}

fn last(out: &[String], err: &[String]) -> String {
    err.iter().chain(out).rev().find(|l| !l.trim().is_empty()).cloned().unwrap_or_else(|| "(no output)".into())
}

/// Run `argv` bounded; `Err(why)` unless it exited 0.
fn ok(argv: &[String], bound: Duration, what: &str) -> Result<(), String> {
    match run_bounded(argv, bound) {
        Err(e) => Err(format!("{what}: cannot start {}: {e}", argv[0])),
        Ok((None, _, err)) => Err(format!("{what}: no answer within {} s{}", bound.as_secs(), err.last().map(|l| format!(": {l}")).unwrap_or_default())),
        Ok((Some(0), _, _)) => Ok(()),
        Ok((Some(c), out, err)) => Err(format!("{what}: {} exited {c}: {}", argv[0], last(&out, &err))),
    }
}

/// On every host at once (64 at a time), each bounded.
fn each<F>(hosts: &[String], f: F) -> Vec<Option<String>>
where
    F: Fn(&str) -> Result<(), String> + Sync,
{
    let mut out: Vec<Option<String>> = vec![None; hosts.len()];
    for (c, chunk) in hosts.chunks(64).enumerate() {
        std::thread::scope(|s| {
            let hs: Vec<_> = chunk.iter().map(|h| s.spawn(|| f(h))).collect();
            for (i, h) in hs.into_iter().enumerate() {
                out[c * 64 + i] = match h.join() {
                    Ok(Ok(())) => None,
                    Ok(Err(e)) => Some(e),
                    Err(_) => Some("push thread failed".into()),
                };
            }
        });
    }
    out
}

/// Copy this binary to every host; `bound` is each step's limit (the preflight's).
pub fn push(l: &Launcher, hosts: &[String], bound: Duration) -> Result<Pushed, String> {
    let exe = std::env::current_exe().map_err(|e| format!("--push: cannot find this binary: {e}"))?;
    let exe = exe.to_str().ok_or("--push: this binary's path is not UTF-8")?.to_string();
    let dir = random_dir().map_err(|e| format!("--push: /dev/urandom: {e}"))?;
    let bin = format!("{dir}/rperftest");
    let mkdir = |h: &str| -> Result<(), String> {
        let argv = l.argv(h, &["mkdir".into(), "-m".into(), "700".into(), "--".into(), dir.clone()])?;
        ok(&argv, bound, "push: mkdir")
    };
    let mut failed = each(hosts, mkdir);
    match l.kind {
        Kind::Ssh => {
            let copy = each(hosts, |h| {
                if failed[hosts.iter().position(|x| x == h).unwrap_or(0)].is_some() {
                    return Ok(());
                }
                // A copy of a few MB: the bound is the preflight's plus 1 s per MB at 1 MB/s.
                ok(&l.copy_argv(h, &exe, &bin), bound + Duration::from_secs(16), "push: scp")
            });
            for (f, c) in failed.iter_mut().zip(copy) {
                if f.is_none() {
                    *f = c;
                }
            }
        }
        Kind::Srun => {
            if failed.iter().all(Option::is_none) {
                if let Err(e) = ok(&l.copy_argv("", &exe, &bin), bound + Duration::from_secs(16), "push: sbcast") {
                    failed = vec![Some(e); hosts.len()];
                }
            }
        }
    }
    Ok(Pushed { dir, bin, failed })
}

/// Remove the directory from every host it was made on (bounded; a node that died keeps it,
/// in /tmp, mode 0700).
pub fn remove(l: &Launcher, hosts: &[String], p: &Pushed) -> Vec<String> {
    let gone = each(hosts, |h| {
        let argv = l.argv(h, &["rm".into(), "-rf".into(), "--".into(), p.dir.clone()])?;
        ok(&argv, Duration::from_secs(30), "push: rm")
    });
    hosts.iter().zip(gone).filter_map(|(h, e)| e.map(|e| format!("{h}: {e} ({} left there)", p.dir))).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_directory_name_is_random_and_plain() {
        let (a, b) = (random_dir().expect("urandom"), random_dir().expect("urandom"));
        assert_ne!(a, b);
        let tail = a.strip_prefix("/tmp/rperftest-push-").expect("prefix");
        assert!(tail.len() == 16 && tail.chars().all(|c| c.is_ascii_hexdigit()), "{a}");
    }

    #[test]
    fn copies_go_over_scp_or_sbcast() {
        let ssh = Launcher { kind: Kind::Ssh, program: "/usr/bin/ssh".into(), connect_timeout: 5, in_allocation: false, control_dir: None, agents: None };
        let v = ssh.copy_argv("node2", "/opt/rperftest", "/tmp/rperftest-push-00/rperftest");
        assert_eq!(v.join(" "), "/usr/bin/scp -q -p -o BatchMode=yes -o ConnectTimeout=5 -- /opt/rperftest node2:/tmp/rperftest-push-00/rperftest");
        let srun = Launcher { kind: Kind::Srun, program: "srun".into(), connect_timeout: 5, in_allocation: true, control_dir: None, agents: None };
        assert_eq!(srun.copy_argv("x", "/a", "/b").join(" "), "sbcast --force --preserve /a /b");
    }

    #[test]
    fn a_host_that_cannot_be_reached_is_named() {
        // `false` as the ssh program: every step fails, each host gets its reason.
        let l = Launcher { kind: Kind::Ssh, program: "false".into(), connect_timeout: 1, in_allocation: false, control_dir: None, agents: None };
        let hosts = vec!["n1".to_string(), "n2".to_string()];
        let p = push(&l, &hosts, Duration::from_secs(5)).expect("push runs");
        assert!(p.failed.iter().all(|f| f.as_deref().is_some_and(|e| e.contains("push: mkdir") && e.contains("exited 1"))), "{:?}", p.failed);
        assert_eq!(remove(&l, &hosts, &p).len(), 2);
    }
}
