//! One short command on many nodes at once (at most 64 at a time), each bounded: the wire
//! check and the port-counter snapshots. The preflight has its own (it also decides which
//! nodes are up); these run only on nodes it found up.

use std::time::Duration;

use super::launcher::{self, Launcher};

/// What one node answered: its protocol line's payload (after `prefix`), or why there is none.
pub type Answer = Result<String, String>;

/// Run `remote(i)` on `nodes[i]` for every `i` where it is `Some`, and pick from each node's
/// stdout the last line starting with `prefix`.
pub fn run_all(
    l: &Launcher,
    nodes: &[String],
    remote: &[Option<Vec<String>>],
    prefix: &str,
    bound: Duration,
) -> Vec<Option<Answer>> {
    let mut out: Vec<Option<Answer>> = vec![None; nodes.len()];
    let idx: Vec<usize> = (0..nodes.len())
        .filter(|&i| remote.get(i).is_some_and(Option::is_some))
        .collect();
    for chunk in idx.chunks(64) {
        std::thread::scope(|s| {
            let hs: Vec<_> = chunk
                .iter()
                .map(|&i| {
                    let argv = l.argv(&nodes[i], remote[i].as_deref().unwrap_or_default());
                    s.spawn(move || one(argv, prefix, bound))
                })
                .collect();
            for (&i, h) in chunk.iter().zip(hs) {
                out[i] = Some(h.join().unwrap_or_else(|_| Err("thread failed".into())));
            }
        });
    }
    out
}

fn one(argv: Result<Vec<String>, String>, prefix: &str, bound: Duration) -> Answer {
    let argv = argv?;
    match launcher::run_bounded(&argv, bound) {
        Err(e) => Err(format!("cannot start {}: {e}", argv[0])),
        Ok((None, _, _)) => Err(format!("no answer within {} s", bound.as_secs())),
        Ok((Some(code), out, err)) => match out.iter().rev().find_map(|l| l.strip_prefix(prefix)) {
            Some(line) => Ok(line.to_string()),
            None => Err(format!(
                "exited {code} without its line: {}",
                err.iter()
                    .chain(out.iter())
                    .rev()
                    .find(|l| !l.trim().is_empty())
                    .map(String::as_str)
                    .unwrap_or("no output")
            )),
        },
    }
}
