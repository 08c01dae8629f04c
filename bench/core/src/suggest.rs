//! Nearest names: what a mistyped or half-remembered name probably meant.
//!
//! Guides people copy from hold names the tools never had (`rdma_read_lat` for qperf's
//! `rc_rdma_read_lat`, a misspelt perftest long option). The tools keep their stock error
//! line and add `did you mean X?` when one of their real names is close. Pure: names in,
//! names out; the callers decide the wording around them.

/// Suggest nothing when more names than this are equally close: a list that long does not
/// say what was meant.
pub const MAX_SUGGESTIONS: usize = 3;

/// Edit distance between `a` and `b` in characters: insertions, deletions, substitutions and
/// swaps of two neighbours (optimal string alignment), each counting 1, so `tcp_wb` is 1 from
/// `tcp_bw`, as a typist would count it.
pub fn distance(a: &str, b: &str) -> usize {
    let (a, b): (Vec<char>, Vec<char>) = (a.chars().collect(), b.chars().collect());
    // Three rows of the table: two back (for swaps), one back, and the one being filled.
    let mut back2: Vec<usize> = vec![0; b.len() + 1];
    let mut back1: Vec<usize> = (0..=b.len()).collect();
    for i in 1..=a.len() {
        let mut row = vec![i; b.len() + 1];
        for j in 1..=b.len() {
            let cost = usize::from(a[i - 1] != b[j - 1]);
            row[j] = (back1[j] + 1).min(row[j - 1] + 1).min(back1[j - 1] + cost);
            if i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1] {
                row[j] = row[j].min(back2[j - 2] + 1);
            }
        }
        back2 = std::mem::replace(&mut back1, row);
    }
    back1[b.len()]
}

/// How many edits a name of `len` characters (leading dashes not counted) may be from a known
/// name and still count as a typo of it. Short names get none: one edit turns `-b` into any
/// other one-letter option, and `bw` into `rc_bw` is no typo.
fn max_edits(len: usize) -> usize {
    match len {
        0..=2 => 0,
        3..=5 => 1,
        6..=11 => 2,
        _ => 3,
    }
}

/// The known names `typed` probably meant, best first, at most [`MAX_SUGGESTIONS`] (none when
/// more are equally good, or none is close):
/// 1. `typed` with one of `prefixes` in front (a missing transport: `rdma_read_lat` is
///    `rc_rdma_read_lat`);
/// 2. otherwise the names fewest edits away, within a bound that grows with the length.
pub fn nearest<'k>(typed: &str, known: &[&'k str], prefixes: &[&str]) -> Vec<&'k str> {
    if typed.is_empty() || known.contains(&typed) {
        return Vec::new();
    }
    let prefixed: Vec<&str> =
        known.iter().copied().filter(|k| prefixes.iter().any(|p| k.strip_prefix(p) == Some(typed))).collect();
    if !prefixed.is_empty() {
        return if prefixed.len() <= MAX_SUGGESTIONS { prefixed } else { Vec::new() };
    }
    let bound = max_edits(typed.trim_start_matches('-').chars().count());
    let scored: Vec<(usize, &str)> = known.iter().map(|k| (distance(typed, k), *k)).filter(|(d, _)| *d <= bound).collect();
    let Some(best) = scored.iter().map(|(d, _)| *d).min() else { return Vec::new() };
    let top: Vec<&str> = scored.into_iter().filter(|(d, _)| *d == best).map(|(_, k)| k).collect();
    if top.len() <= MAX_SUGGESTIONS {
        top
    } else {
        Vec::new()
    }
}

/// `did you mean a?`, `did you mean a or b?`, `did you mean a, b or c?`; None for no names.
pub fn did_you_mean(names: &[&str]) -> Option<String> {
    let (last, rest) = names.split_last()?;
    Some(if rest.is_empty() { format!("did you mean {last}?") } else { format!("did you mean {} or {last}?", rest.join(", ")) })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn distance_counts_typist_edits() {
        assert_eq!(distance("", ""), 0);
        assert_eq!(distance("abc", ""), 3);
        assert_eq!(distance("", "ab"), 2);
        assert_eq!(distance("tcp_bw", "tcp_bw"), 0);
        assert_eq!(distance("tcp_wb", "tcp_bw"), 1, "a swap is one edit");
        assert_eq!(distance("tcp_bww", "tcp_bw"), 1);
        assert_eq!(distance("tcp_b", "tcp_bw"), 1);
        assert_eq!(distance("tcp_lw", "tcp_bw"), 1);
        assert_eq!(distance("kitten", "sitting"), 3);
        assert_eq!(distance("rdma_read_lat", "rc_rdma_read_lat"), 3);
        assert_eq!(distance("größe", "grösse"), 2, "characters, not bytes");
    }

    #[test]
    fn nearest_prefers_a_missing_prefix_then_the_fewest_edits() {
        let known = ["rc_rdma_read_lat", "rc_rdma_write_lat", "uc_rdma_write_lat", "rc_bw", "uc_bw", "ud_bw", "tcp_bw", "udp_bw"];
        let px = ["rc_", "uc_", "ud_"];
        assert_eq!(nearest("rdma_read_lat", &known, &px), ["rc_rdma_read_lat"]);
        assert_eq!(nearest("rdma_write_lat", &known, &px), ["rc_rdma_write_lat", "uc_rdma_write_lat"]);
        assert_eq!(nearest("tcp_wb", &known, &px), ["tcp_bw"]);
        assert_eq!(nearest("abcdex", &["abcxyz", "abcdef"], &[]), ["abcdef"], "1 edit beats 2");
        assert_eq!(nearest("ucp_bw", &known, &px), ["uc_bw", "tcp_bw", "udp_bw"], "all 1 away, in table order");
        // The prefix rule gives even a short name its transports.
        assert_eq!(nearest("bw", &known, &px), ["rc_bw", "uc_bw", "ud_bw"]);
        // Too many equally good names say nothing.
        assert!(nearest("x_bw", &["a_bw", "b_bw", "c_bw", "d_bw"], &[]).is_empty());
        assert!(nearest("bw", &["a_bw", "b_bw", "c_bw", "d_bw"], &["a_", "b_", "c_", "d_"]).is_empty());
        // Nothing close, an exact name, or nothing typed: no suggestion.
        assert!(nearest("bandwidth", &known, &px).is_empty());
        assert!(nearest("rc_bw", &known, &px).is_empty());
        assert!(nearest("", &known, &px).is_empty());
        // Short names get no edits; dashes do not count towards the length.
        assert!(nearest("-b", &["-m", "-n", "-t"], &[]).is_empty());
        assert!(nearest("--mz", &["--m"], &[]).is_empty());
        assert_eq!(nearest("--msgsize", &["--msg_size", "--mtu_size"], &[]), ["--msg_size"]);
    }

    #[test]
    fn the_question_lists_names_in_order() {
        assert_eq!(did_you_mean(&[]), None);
        assert_eq!(did_you_mean(&["a"]).as_deref(), Some("did you mean a?"));
        assert_eq!(did_you_mean(&["a", "b"]).as_deref(), Some("did you mean a or b?"));
        assert_eq!(did_you_mean(&["a", "b", "c"]).as_deref(), Some("did you mean a, b or c?"));
    }
}
