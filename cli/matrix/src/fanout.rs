//! One short command on many nodes, each bounded, at most `window` at a time (like pdsh's
//! fan-out): the preflight, the wire check and the port-counter snapshots. A sliding window,
//! not batches: a node that answers only at its bound holds one slot, not a whole batch, and
//! the logins are spread over the run instead of landing on every sshd at once.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;
use std::time::Duration;

use super::launcher::{self, Launcher};

/// What one node answered: its protocol line's payload (after `prefix`), or why there is none.
pub type Answer = Result<String, String>;

/// `f(i)` for every `i` in `0..n`, on at most `window` threads at once; each thread takes the
/// next index as soon as its last call returns. The results come back in index order.
pub fn each<T: Send>(n: usize, window: usize, f: impl Fn(usize) -> T + Sync) -> Vec<T> {
    let next = AtomicUsize::new(0);
    let out: Mutex<Vec<Option<T>>> = Mutex::new((0..n).map(|_| None).collect());
    std::thread::scope(|s| {
        for _ in 0..window.clamp(1, n.max(1)) {
            s.spawn(|| loop {
                let i = next.fetch_add(1, Ordering::Relaxed);
                if i >= n {
                    break;
                }
                let r = f(i);
                out.lock().unwrap_or_else(|e| e.into_inner())[i] = Some(r);
            });
        }
    });
    let out = out.into_inner().unwrap_or_else(|e| e.into_inner());
    // every index below n was taken by exactly one thread, which stored its result
    out.into_iter().map(|r| r.expect("each index answered")).collect()
}

/// Run `remote(i)` on `nodes[i]` for every `i` where it is `Some`, at most `window` at a time,
/// and pick from each node's stdout the last line starting with `prefix`.
pub fn run_all(
    l: &Launcher,
    nodes: &[String],
    remote: &[Option<Vec<String>>],
    prefix: &str,
    bound: Duration,
    window: usize,
) -> Vec<Option<Answer>> {
    each(nodes.len(), window, |i| {
        let r = remote.get(i)?.as_deref()?;
        Some(one(l.argv(&nodes[i], r), prefix, bound))
    })
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

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Instant;

    #[test]
    fn each_answers_in_order_and_keeps_the_window() {
        let running = AtomicUsize::new(0);
        let peak = AtomicUsize::new(0);
        let out = each(20, 4, |i| {
            let now = running.fetch_add(1, Ordering::SeqCst) + 1;
            peak.fetch_max(now, Ordering::SeqCst);
            std::thread::sleep(Duration::from_millis(5));
            running.fetch_sub(1, Ordering::SeqCst);
            i * 10
        });
        assert_eq!(out, (0..20).map(|i| i * 10).collect::<Vec<_>>());
        assert!(peak.load(Ordering::SeqCst) <= 4, "peak {}", peak.load(Ordering::SeqCst));
        assert!(each(0, 8, |i| i).is_empty());
    }

    #[test]
    fn a_slow_node_holds_one_slot_not_a_batch() {
        // Node 0 answers only once the 15 others have: with batches of 4 it would wait for
        // ever for nodes 4..15 (a batch ends with its slowest); with a sliding window they run
        // on the 3 other slots meanwhile.
        let others_done = AtomicUsize::new(0);
        let out = each(16, 4, |i| {
            if i > 0 {
                others_done.fetch_add(1, Ordering::SeqCst);
                return true;
            }
            let t0 = Instant::now();
            while others_done.load(Ordering::SeqCst) < 15 && t0.elapsed() < Duration::from_secs(20) {
                std::thread::sleep(Duration::from_millis(1));
            }
            others_done.load(Ordering::SeqCst) == 15
        });
        assert!(out[0], "node 0 held back the others");
    }
}
