//! Slurm hostlist expressions (`node[1-8],gpu3`, `n[01-10]`, `rack[1-2]-n[1-4]`) and host files.
//!
//! Slurm's rules as we apply them: a list is comma-separated items (commas inside brackets
//! belong to the bracket); a bracket holds comma-separated numbers or `lo-hi` ranges; the
//! width of `lo` as written is the zero-padded width of every number of the range (`01-10`
//! gives `01 … 10`); several brackets in one item multiply (left to right). Brackets do not nest.
//! Host names may only use letters, digits, `.`, `_` and `-`, and may not start with `-`, so
//! that a name can never be read as an ssh or srun option.

use std::fmt;

/// More names than this from one expression is a typo (`n[1-1000000000]`), not a cluster.
pub const MAX_HOSTS: usize = 65_536;

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HostlistError(pub String);

impl fmt::Display for HostlistError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

fn err<T>(msg: impl Into<String>) -> Result<T, HostlistError> {
    Err(HostlistError(msg.into()))
}

/// Expand a hostlist expression into names, in order; a name given twice is an error (a node
/// cannot be paired with itself).
pub fn expand(expr: &str) -> Result<Vec<String>, HostlistError> {
    let out = expand_unchecked(expr)?;
    check_unique(&out)?;
    Ok(out)
}

/// A host file: one hostlist expression per line (usually one name); `#` starts a comment and
/// anything after the first blank on a line is ignored (MPI host files' `slots=4`).
pub fn parse_hostfile(text: &str) -> Result<Vec<String>, HostlistError> {
    let mut out = Vec::new();
    for (i, line) in text.lines().enumerate() {
        let line = line.split('#').next().unwrap_or("");
        let Some(word) = line.split_whitespace().next() else { continue };
        let names = expand_unchecked(word).map_err(|e| HostlistError(format!("line {}: {e}", i + 1)))?;
        out.extend(names);
        if out.len() > MAX_HOSTS {
            return err(format!("more than {MAX_HOSTS} hosts"));
        }
    }
    check_unique(&out)?;
    Ok(out)
}

fn expand_unchecked(expr: &str) -> Result<Vec<String>, HostlistError> {
    let mut out = Vec::new();
    for item in split_top(expr)? {
        if item.is_empty() {
            return err(format!("hostlist {expr:?}: empty item (two commas, or a comma at an end)"));
        }
        expand_item(item, &mut out)?;
        if out.len() > MAX_HOSTS {
            return err(format!("hostlist {expr:?}: more than {MAX_HOSTS} hosts"));
        }
    }
    Ok(out)
}

fn check_unique(names: &[String]) -> Result<(), HostlistError> {
    let mut seen = std::collections::HashSet::new();
    for n in names {
        if !seen.insert(n.as_str()) {
            return err(format!("host {n} is listed twice"));
        }
    }
    Ok(())
}

/// Split at the commas outside brackets; unbalanced or nested brackets are errors.
fn split_top(expr: &str) -> Result<Vec<&str>, HostlistError> {
    let mut items = Vec::new();
    let (mut depth, mut start) = (0u32, 0usize);
    for (i, c) in expr.char_indices() {
        match c {
            '[' if depth > 0 => return err(format!("hostlist {expr:?}: nested '[' at byte {i}")),
            '[' => depth = 1,
            ']' if depth == 0 => return err(format!("hostlist {expr:?}: ']' without '[' at byte {i}")),
            ']' => depth = 0,
            ',' if depth == 0 => {
                items.push(&expr[start..i]);
                start = i + 1;
            }
            _ => {}
        }
    }
    if depth > 0 {
        return err(format!("hostlist {expr:?}: '[' is never closed"));
    }
    items.push(&expr[start..]);
    Ok(items)
}

/// One item (`rack[1-2]-n[01-03]`): the cartesian product of its brackets, appended to `out`.
fn expand_item(item: &str, out: &mut Vec<String>) -> Result<(), HostlistError> {
    let mut prefixes = vec![String::new()];
    let mut rest = item;
    while !rest.is_empty() {
        let (lit, after) = match rest.find('[') {
            Some(i) => (&rest[..i], Some(&rest[i + 1..])),
            None => (rest, None),
        };
        check_literal(item, lit)?;
        for p in &mut prefixes {
            p.push_str(lit);
        }
        let Some(after) = after else { break };
        // split_top has checked the brackets balance.
        let close = after.find(']').ok_or_else(|| HostlistError(format!("{item:?}: '[' is never closed")))?;
        let nums = expand_bracket(item, &after[..close])?;
        if prefixes.len().saturating_mul(nums.len()) > MAX_HOSTS {
            return err(format!("{item:?}: more than {MAX_HOSTS} hosts"));
        }
        prefixes = prefixes.iter().flat_map(|p| nums.iter().map(move |n| format!("{p}{n}"))).collect();
        rest = &after[close + 1..];
    }
    for p in prefixes {
        if p.is_empty() {
            return err(format!("{item:?}: empty host name"));
        }
        if p.starts_with('-') {
            return err(format!("{item:?}: host name {p:?} starts with '-'"));
        }
        out.push(p);
    }
    Ok(())
}

fn check_literal(item: &str, lit: &str) -> Result<(), HostlistError> {
    match lit.chars().find(|c| !(c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-'))) {
        Some(c) => err(format!("{item:?}: character {c:?} is not allowed in a host name")),
        None => Ok(()),
    }
}

/// The inside of one bracket: `1-3,7,09-11` → the numbers as text, zero-padded per range.
fn expand_bracket(item: &str, body: &str) -> Result<Vec<String>, HostlistError> {
    if body.is_empty() {
        return err(format!("{item:?}: empty brackets"));
    }
    let mut out = Vec::new();
    for part in body.split(',') {
        let (lo, hi) = match part.split_once('-') {
            Some((a, b)) => (a, b),
            None => (part, part),
        };
        let num = |s: &str| -> Result<u64, HostlistError> {
            if s.is_empty() || !s.bytes().all(|b| b.is_ascii_digit()) || s.len() > 18 {
                return err(format!("{item:?}: {part:?} is not a number or a range lo-hi"));
            }
            s.parse::<u64>().map_err(|_| HostlistError(format!("{item:?}: {s:?} is not a number")))
        };
        let (a, b) = (num(lo)?, num(hi)?);
        if a > b {
            return err(format!("{item:?}: range {part:?} runs backwards"));
        }
        if b - a >= MAX_HOSTS as u64 || out.len() + (b - a) as usize >= MAX_HOSTS {
            return err(format!("{item:?}: range {part:?} has more than {MAX_HOSTS} numbers"));
        }
        let width = lo.len();
        for v in a..=b {
            out.push(format!("{v:0width$}"));
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ok(s: &str) -> Vec<String> {
        expand(s).unwrap_or_else(|e| panic!("{s}: {e}"))
    }

    #[test]
    fn plain_names_and_ranges() {
        assert_eq!(ok("node1"), ["node1"]);
        assert_eq!(ok("node[1-3],gpu3"), ["node1", "node2", "node3", "gpu3"]);
        assert_eq!(ok("n[1,3,5-6]"), ["n1", "n3", "n5", "n6"]);
        assert_eq!(ok("a.b-c_d"), ["a.b-c_d"]);
        assert_eq!(ok("node[1-8]").len(), 8);
    }

    #[test]
    fn zero_padding_follows_the_low_bound() {
        assert_eq!(ok("n[01-03]"), ["n01", "n02", "n03"]);
        let v = ok("n[08-10]");
        assert_eq!(v, ["n08", "n09", "n10"]);
        assert_eq!(ok("n[001-002]"), ["n001", "n002"]);
        // Width of the low bound: 9-10 is not padded.
        assert_eq!(ok("n[9-10]"), ["n9", "n10"]);
        assert_eq!(ok("n[01-10]").len(), 10);
        assert_eq!(ok("n[01-10]")[9], "n10");
    }

    #[test]
    fn several_brackets_multiply_and_lists_mix() {
        assert_eq!(ok("r[1-2]n[1-2]"), ["r1n1", "r1n2", "r2n1", "r2n2"]);
        assert_eq!(ok("r[1-2]-n[01,03],login"), ["r1-n01", "r1-n03", "r2-n01", "r2-n03", "login"]);
        assert_eq!(ok("gpu[1-2].ib"), ["gpu1.ib", "gpu2.ib"]);
        assert_eq!(ok("[1-2]x"), ["1x", "2x"]);
    }

    #[test]
    fn malformed_input_is_a_clear_error() {
        for (bad, want) in [
            ("", "empty item"),
            ("a,,b", "empty item"),
            ("a,", "empty item"),
            ("n[1-3", "never closed"),
            ("n1-3]", "without '['"),
            ("n[[1-2]]", "nested"),
            ("n[]", "empty brackets"),
            ("n[3-1]", "backwards"),
            ("n[a-b]", "not a number"),
            ("n[1-]", "not a number"),
            ("n[-1]", "not a number"),
            ("n[1-2-3]", "not a number"),
            ("n[0-99999999]", "more than"),
            ("n[0-999]m[0-999]", "more than"),
            ("n[1-2],n2", "listed twice"),
            ("bad host", "not allowed"),
            ("x;rm", "not allowed"),
            ("$(id)", "not allowed"),
            ("-oProxyCommand=x", "not allowed"),
            ("-x", "starts with '-'"),
            ("n[1-2],-y", "starts with '-'"),
            ("n[99999999999999999999]", "not a number"),
        ] {
            let e = expand(bad).expect_err(bad).0;
            assert!(e.contains(want), "{bad:?}: {e:?} should say {want:?}");
        }
    }

    #[test]
    fn hostfile_lines_comments_and_slots() {
        let v = parse_hostfile("# the rack\nnode1 slots=8\n\n  node[2-3]  # two more\nnode4\n").expect("hostfile");
        assert_eq!(v, ["node1", "node2", "node3", "node4"]);
        let e = parse_hostfile("node1\nno;de\n").expect_err("bad line").0;
        assert!(e.starts_with("line 2:"), "{e}");
        assert!(parse_hostfile("a\na\n").expect_err("dup").0.contains("twice"));
        assert_eq!(parse_hostfile("").expect("empty"), Vec::<String>::new());
    }
}
