//! The text a person reads at the end: one matrix per test and rail, flagged cells marked.
//!
//! Cell (i, j) is the pair with node i serving and node j the client; a pair that ran one way
//! only (the default) fills both cells, so the matrix is symmetric unless `--both-directions`
//! ran each way. A
//! number is the judged figure; a mark after it (`!`) says LOW; a pair without a figure shows
//! its status word. Beyond [`MAX_MATRIX`] nodes a matrix no longer fits a terminal, so only the
//! pairs that are not OK are listed.

use std::collections::BTreeMap;
use std::fmt::Write as _;

use super::results::Status;
use super::view::View;

pub const MAX_MATRIX: usize = 32;

fn cell<'a>(r: impl View<'a>) -> String {
    match (r.status(), r.value()) {
        (Status::Ok, Some(v)) => fmt_value(v),
        (Status::Low, Some(v)) => format!("{}!", fmt_value(v)),
        (Status::Unreachable, _) => "UNREACH".into(),
        (Status::Skipped, _) => "SKIP".into(),
        (s, _) => s.name().into(),
    }
}

fn fmt_value(v: f64) -> String {
    if v >= 1000.0 {
        format!("{v:.0}")
    } else {
        format!("{v:.2}")
    }
}

/// The matrices of every test and rail in `records`, for the nodes in `nodes` (their order).
pub fn text<'a, V: View<'a>>(nodes: &[String], records: impl IntoIterator<Item = V>) -> String {
    // Beyond MAX_MATRIX nodes only the pairs not OK are listed, so only they are kept.
    let listed_only = nodes.len() > MAX_MATRIX;
    let mut groups: BTreeMap<(&str, &str), Group<V>> = BTreeMap::new();
    for r in records {
        let g = groups.entry((r.test(), r.rail())).or_default();
        g.add(r);
        if !listed_only || r.status() != Status::Ok {
            g.kept.push(r);
        }
    }
    let index: BTreeMap<&str, usize> = nodes.iter().enumerate().map(|(i, n)| (n.as_str(), i)).collect();
    let mut s = String::new();
    for ((test, rail), g) in groups {
        let (unit, rs) = (g.unit.unwrap_or(""), g.kept);
        let what = if super::judge::is_lat(test) { "typical latency" } else { "BW average" };
        let _ = write!(s, "{test} on rail {rail}: {what} [{unit}], {} of {} pairs OK", g.ok, g.total);
        if let Some(m) = g.median {
            let _ = write!(s, ", median {}", fmt_value(m));
        }
        s.push_str(" (! = LOW)\n");
        if listed_only {
            for &r in &rs {
                let _ = writeln!(s, "  {} - {}: {} {}", r.server().node, r.client().node, cell(r), r.reason());
            }
            s.push('\n');
            continue;
        }
        let n = nodes.len();
        let mut grid = vec![vec![String::new(); n]; n];
        for (i, row) in grid.iter_mut().enumerate() {
            row[i] = ".".into();
        }
        for &r in &rs {
            if let (Some(&i), Some(&j)) = (index.get(r.server().node.as_str()), index.get(r.client().node.as_str())) {
                grid[i][j] = cell(r);
            }
        }
        mirror_missing(&mut grid, String::is_empty);
        let name_w = nodes.iter().map(|x| x.len()).max().unwrap_or(0);
        let col_w = grid.iter().flatten().map(String::len).chain(nodes.iter().map(String::len)).max().unwrap_or(1);
        let _ = write!(s, "  {:name_w$}", "");
        for x in nodes {
            let _ = write!(s, " {x:>col_w$}");
        }
        s.push('\n');
        for (x, row) in nodes.iter().zip(&grid) {
            let _ = write!(s, "  {x:<name_w$}");
            for c in row {
                let c = if c.is_empty() { "-" } else { c.as_str() };
                let _ = write!(s, " {c:>col_w$}");
            }
            s.push('\n');
        }
        for r in rs.iter().filter(|r| !matches!(r.status(), Status::Ok | Status::Unreachable | Status::Skipped)) {
            let _ = writeln!(s, "  {} - {}: {}: {}", r.server().node, r.client().node, r.status().name(), r.reason());
        }
        s.push('\n');
    }
    s
}

/// One test and rail's heading figures for [`text`], and the pairs it shows.
struct Group<'a, V> {
    total: usize,
    ok: usize,
    /// The first unit given, the first median.
    unit: Option<&'a str>,
    median: Option<f64>,
    kept: Vec<V>,
}

impl<V> Default for Group<'_, V> {
    fn default() -> Self {
        Group { total: 0, ok: 0, unit: None, median: None, kept: Vec::new() }
    }
}

impl<'a, V: View<'a>> Group<'a, V> {
    fn add(&mut self, r: V) {
        self.total += 1;
        self.ok += usize::from(r.status() == Status::Ok);
        if self.unit.is_none() && !r.unit().is_empty() {
            self.unit = Some(r.unit());
        }
        if self.median.is_none() {
            self.median = r.median();
        }
    }
}

/// A pair measured one way only shows the same cell both ways: fill each missing cell of the
/// square `grid` from its mirror across the diagonal (the diagonal itself stays as it is).
// Both indices address the cell and its mirror, so an iterator would not read better.
#[allow(clippy::needless_range_loop)]
pub(crate) fn mirror_missing<T: Clone>(grid: &mut [Vec<T>], missing: impl Fn(&T) -> bool) {
    let n = grid.len();
    for i in 0..n {
        for j in 0..n {
            if i != j && missing(&grid[i][j]) && !missing(&grid[j][i]) {
                grid[i][j] = grid[j][i].clone();
            }
        }
    }
}

/// The node x rail grid's cells: the rails (by name), and per node and rail that NIC's worst
/// pair over every test (None: it had none). Empty with fewer than two rails.
pub fn grid_cells<'a, V: View<'a>>(nodes: &[String], records: impl IntoIterator<Item = V>) -> (Vec<String>, Vec<Vec<Option<Status>>>) {
    let rank = |s: Status| {
        [
            Status::Ok,
            Status::Low,
            Status::Timeout,
            Status::Fail,
            Status::Unreachable,
            Status::Skipped,
        ]
        .iter()
        .position(|&x| x == s)
        .unwrap_or(0)
    };
    // One pass: per (node, rail) the worst status seen.
    let mut worst: BTreeMap<(&str, &str), Status> = BTreeMap::new();
    let mut rails: Vec<&str> = Vec::new();
    for r in records {
        if !rails.contains(&r.rail()) {
            rails.push(r.rail());
        }
        for n in [r.server().node.as_str(), r.client().node.as_str()] {
            let w = worst.entry((n, r.rail())).or_insert(r.status());
            if rank(r.status()) > rank(*w) {
                *w = r.status();
            }
        }
    }
    rails.sort_unstable();
    if rails.len() < 2 {
        return (Vec::new(), Vec::new());
    }
    let cells = nodes.iter().map(|n| rails.iter().map(|rail| worst.get(&(n.as_str(), *rail)).copied()).collect()).collect();
    (rails.into_iter().map(str::to_string).collect(), cells)
}

/// The node x rail grid as text: each NIC's worst pair (OK, LOW, TIMEOUT, FAIL, UNREACHABLE,
/// SKIPPED, or - when it had none); with one rail it says nothing the matrix does not, so it
/// is left out.
pub fn grid<'a, V: View<'a>>(nodes: &[String], records: impl IntoIterator<Item = V>) -> String {
    let (rails, cells) = grid_cells(nodes, records);
    if rails.is_empty() {
        return String::new();
    }
    let w = nodes.iter().map(String::len).max().unwrap_or(4).max(4);
    let cw = rails.iter().map(String::len).max().unwrap_or(0).max(11);
    let mut s = format!("node x rail: each NIC's worst pair\n{:w$}", "");
    for r in &rails {
        let _ = write!(s, "  {r:>cw$}");
    }
    s.push('\n');
    for (n, row) in nodes.iter().zip(&cells) {
        let _ = write!(s, "{n:w$}");
        for c in row {
            let _ = write!(s, "  {:>cw$}", c.map_or("-", Status::name));
        }
        s.push('\n');
    }
    s.push('\n');
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_node_by_rail_grid_shows_each_nics_worst_pair() {
        use crate::results::sample;
        let nodes: Vec<String> = ["n1", "n2", "n3"].iter().map(|s| s.to_string()).collect();
        let rs = vec![
            sample("ib_write_bw", "rxe0", "n1", "n2", Status::Ok, Some(1.0)),
            sample("ib_write_bw", "rxe0", "n1", "n3", Status::Ok, Some(1.0)),
            sample("ib_write_bw", "rxe0", "n2", "n3", Status::Ok, Some(1.0)),
            sample("ib_write_bw", "rxe1", "n1", "n2", Status::Ok, Some(1.0)),
            sample("ib_write_bw", "rxe1", "n1", "n3", Status::Low, Some(0.1)),
            sample("ib_write_bw", "rxe1", "n2", "n3", Status::Skipped, None),
        ];
        assert_eq!(
            grid(&nodes, &rs),
            "node x rail: each NIC's worst pair\n             rxe0         rxe1\nn1             OK          LOW\nn2             OK      SKIPPED\nn3             OK      SKIPPED\n\n"
        );
        assert_eq!(grid(&nodes, &rs[..3]), "", "one rail: no grid");
    }
    use crate::results::sample;

    #[test]
    fn a_four_node_matrix() {
        let nodes: Vec<String> = ["node1", "node2", "node3", "node4"].iter().map(|s| s.to_string()).collect();
        let mut rs = vec![
            sample("ib_write_bw", "rxe0", "node1", "node2", Status::Ok, Some(5.12)),
            sample("ib_write_bw", "rxe0", "node3", "node4", Status::Low, Some(1.01)),
            sample("ib_write_bw", "rxe0", "node1", "node3", Status::Ok, Some(4.9)),
            sample("ib_write_bw", "rxe0", "node4", "node2", Status::Timeout, None),
            sample("ib_write_bw", "rxe0", "node1", "node4", Status::Unreachable, None),
            sample("ib_write_bw", "rxe0", "node2", "node3", Status::Ok, Some(1234.6)),
        ];
        rs[1].reason = "1.01 MB/sec below 0.9 x the median 5.01".into();
        rs[3].reason = "killed at the deadline".into();
        for r in &mut rs {
            r.median = Some(5.01);
        }
        let t = text(&nodes, &rs);
        let want = "\
ib_write_bw on rail rxe0: BW average [MB/sec], 3 of 6 pairs OK, median 5.01 (! = LOW)
          node1   node2   node3   node4
  node1       .    5.12    4.90 UNREACH
  node2    5.12       .    1235 TIMEOUT
  node3    4.90    1235       .   1.01!
  node4 UNREACH TIMEOUT   1.01!       .
  node3 - node4: LOW: 1.01 MB/sec below 0.9 x the median 5.01
  node4 - node2: TIMEOUT: killed at the deadline

";
        assert_eq!(t, want, "\n{t}");
    }

    #[test]
    fn both_directions_fill_their_own_cells() {
        let nodes: Vec<String> = ["a", "b"].iter().map(|s| s.to_string()).collect();
        let rs = vec![sample("ib_write_bw", "r", "a", "b", Status::Ok, Some(5.0)), sample("ib_write_bw", "r", "b", "a", Status::Low, Some(1.0))];
        let t = text(&nodes, &rs);
        assert!(t.contains("\n  a     .  5.00\n  b 1.00!     .\n"), "\n{t}");
    }

    #[test]
    fn a_synthetic_256_node_two_rail_run_renders_and_is_diagnosed() {
        use crate::{judge, schedule};
        let n = 256;
        let nodes: Vec<String> = (1..=n).map(|i| format!("gpu{i:03}")).collect();
        let mut rs = Vec::new();
        for rail in ["mlx5_0", "mlx5_1"] {
            for (k, round) in schedule::circle_rounds(n).iter().enumerate() {
                for p in round {
                    let bad = rail == "mlx5_1" && (p.a == 16 || p.b == 16);
                    let v = if bad { 3000.0 } else { 11_000.0 + (k % 7) as f64 };
                    let mut r = sample("ib_write_bw", rail, &nodes[p.a], &nodes[p.b], Status::Ok, Some(v));
                    r.round = k;
                    rs.push(r);
                }
            }
        }
        assert_eq!(rs.len(), 2 * n * (n - 1) / 2);
        judge::judge(&mut rs, &judge::Rules { min_bw: None, max_lat: None, rel: 0.9, rel_lat: 1.5, port_rate: None });
        let t = text(&nodes, &rs);
        assert!(t.contains("ib_write_bw on rail mlx5_0: BW average [MB/sec], 32640 of 32640 pairs OK"), "{}", &t[..200]);
        assert!(t.contains("ib_write_bw on rail mlx5_1: BW average [MB/sec], 32385 of 32640 pairs OK"), "{}", &t[..400]);
        // Above 32 nodes only the 255 LOW pairs are listed, each once.
        let low: Vec<&str> = t.lines().filter(|l| l.contains("gpu017") && l.contains("below")).collect();
        assert_eq!(low.len(), 255, "{:?}", &low[..low.len().min(3)]);
        let d = judge::diagnose(&rs);
        assert_eq!(d, ["255 of 255 bad pairs of ib_write_bw on rail mlx5_1 include gpu017; gpu017's pairs on rail mlx5_0 are fine"]);
    }

    #[test]
    fn big_clusters_list_only_the_bad_pairs() {
        let nodes: Vec<String> = (0..40).map(|i| format!("n{i}")).collect();
        let rs = vec![
            sample("ib_send_lat", "mlx5_0", "n1", "n2", Status::Ok, Some(2.0)),
            sample("ib_send_lat", "mlx5_0", "n3", "n39", Status::Fail, None),
        ];
        let t = text(&nodes, &rs);
        assert!(t.starts_with("ib_send_lat on rail mlx5_0: typical latency"), "{t}");
        assert!(t.contains("  n3 - n39: FAIL"), "{t}");
        assert!(!t.contains("n1 - n2"), "{t}");
    }
}
