//! `OUT/report.html`: one heatmap per test and rail (the project's plotting code, inline SVG),
//! the pairs that are not OK with their reasons, the node diagnosis and the run's notes. One
//! self-contained file: no script, no style sheet or font fetched.

use std::collections::BTreeMap;

use plot::heatmap::{self, Cell, Heatmap};
use plot::render::html_escape;

use super::results::Status;
use super::view::View;

fn cell_of<'a>(r: impl View<'a>) -> Cell {
    let text = match (r.status(), r.value()) {
        (_, Some(v)) if v >= 1000.0 => format!("{v:.0}"),
        (_, Some(v)) => format!("{v:.2}"),
        (Status::Unreachable, None) => "UNREACH".into(),
        (Status::Skipped, None) => "SKIP".into(),
        (s, None) => s.name().into(),
    };
    Cell { value: if r.status().measured() { r.value() } else { None }, text, flagged: r.status() != Status::Ok }
}

/// The heatmap of one test and rail: row = server, column = client; a pair run one way only
/// fills both cells (as the text matrix does).
pub fn heatmap_of<'a, V: View<'a>>(nodes: &[String], test: &str, rail: &str, records: &[V]) -> Heatmap {
    let index: BTreeMap<&str, usize> = nodes.iter().enumerate().map(|(i, n)| (n.as_str(), i)).collect();
    let n = nodes.len();
    let mut cells: Vec<Vec<Option<Cell>>> = vec![vec![None; n]; n];
    for &r in records {
        if let (Some(&i), Some(&j)) = (index.get(r.server().node.as_str()), index.get(r.client().node.as_str())) {
            cells[i][j] = Some(cell_of(r));
        }
    }
    super::report::mirror_missing(&mut cells, Option::is_none);
    let lat = super::judge::is_lat(test);
    let unit = records.iter().map(|r| r.unit()).find(|u| !u.is_empty()).unwrap_or_default().to_string();
    let what = if lat { "typical latency" } else { "BW average" };
    Heatmap {
        title: format!("{test} on rail {rail}: {what} [{unit}]"),
        unit,
        rows: nodes.to_vec(),
        cols: nodes.to_vec(),
        cells,
        higher_is_better: !lat,
    }
}

/// How many of the notes the page shows before folding the rest into a `<details>`.
const NOTES_SHOWN: usize = 8;

/// The whole page. `notes`: the preflight's and the re-runs' lines; `diagnosis`: the judge's.
pub fn page<'a, V: View<'a>>(nodes: &[String], records: impl IntoIterator<Item = V>, notes: &[String], diagnosis: &[String], summary: &str) -> Result<String, String> {
    let mut groups: BTreeMap<(&str, &str), Vec<V>> = BTreeMap::new();
    for r in records {
        groups.entry((r.test(), r.rail())).or_default().push(r);
    }
    let mut h = String::new();
    h.push_str("<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\"/>\n<title>rperftest matrix</title>\n");
    h.push_str("<style>body{font-family:sans-serif;margin:16px}table{border-collapse:collapse;margin:8px 0 24px}td,th{border:1px solid #bbb;padding:2px 8px;text-align:left}th{background:#eee}.bad{color:#960000}</style>\n</head>\n<body>\n");
    h.push_str(&format!("<h1>rperftest matrix: {} nodes</h1>\n<p>{}</p>\n", nodes.len(), html_escape(summary)));
    if !diagnosis.is_empty() || !notes.is_empty() {
        // At scale the notes (a re-run line per LOW pair) would push the heatmaps off the first
        // screen: the judge's lines and the first notes stay in view, the rest folds away.
        let (shown, folded) = notes.split_at(notes.len().min(NOTES_SHOWN));
        h.push_str("<h2>Diagnosis</h2>\n<ul>\n");
        for l in diagnosis.iter().chain(shown) {
            h.push_str(&format!("<li>{}</li>\n", html_escape(l)));
        }
        h.push_str("</ul>\n");
        if !folded.is_empty() {
            h.push_str(&format!("<details><summary>{} more line(s): re-runs and notes</summary>\n<ul>\n", folded.len()));
            for l in folded {
                h.push_str(&format!("<li>{}</li>\n", html_escape(l)));
            }
            h.push_str("</ul>\n</details>\n");
        }
    }
    h.push_str(&grid_table(nodes, groups.values().flatten().copied()));
    for ((test, rail), rs) in &groups {
        let ok = rs.iter().filter(|r| r.status() == Status::Ok).count();
        h.push_str(&format!("<h2>{} on rail {}: {ok} of {} pairs OK</h2>\n", html_escape(test), html_escape(rail), rs.len()));
        if let Some(m) = rs.iter().find_map(|r| r.median()) {
            h.push_str(&format!("<p>median {m:.2} {}; outlined cells are not OK</p>\n", html_escape(rs[0].unit())));
        }
        let svg = heatmap::to_svg(&heatmap_of(nodes, test, rail, rs))?;
        let svg = svg.find("<svg").map_or(svg.as_str(), |i| &svg[i..]);
        h.push_str(svg);
        h.push('\n');
        let bad: Vec<V> = rs.iter().copied().filter(|r| r.status() != Status::Ok).collect();
        if !bad.is_empty() {
            h.push_str("<table>\n<tr><th>server</th><th>client</th><th>status</th><th>figure</th><th>reason</th></tr>\n");
            for r in bad {
                let v = r.value().map(|v| format!("{v:.2} {}", r.unit())).unwrap_or_default();
                h.push_str(&format!(
                    "<tr class=\"bad\"><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>\n",
                    html_escape(&r.server().node),
                    html_escape(&r.client().node),
                    r.status().name(),
                    html_escape(&v),
                    html_escape(r.reason())
                ));
            }
            h.push_str("</table>\n");
        }
    }
    h.push_str("</body>\n</html>\n");
    Ok(h)
}

/// The node x rail grid (two rails or more): each NIC's worst pair, the cells not OK marked.
fn grid_table<'a, V: View<'a>>(nodes: &[String], records: impl IntoIterator<Item = V>) -> String {
    let (rails, cells) = super::report::grid_cells(nodes, records);
    if rails.is_empty() {
        return String::new();
    }
    let mut h =
        String::from("<h2>Node x rail: each NIC's worst pair</h2>\n<table>\n<tr><th>node</th>");
    for r in &rails {
        h.push_str(&format!("<th>{}</th>", html_escape(r)));
    }
    h.push_str("</tr>\n");
    for (n, row) in nodes.iter().zip(&cells) {
        h.push_str(&format!("<tr><td>{}</td>", html_escape(n)));
        for c in row {
            let class = if c.is_some_and(|s| s != Status::Ok) {
                " class=\"bad\""
            } else {
                ""
            };
            h.push_str(&format!("<td{class}>{}</td>", c.map_or("-", Status::name)));
        }
        h.push_str("</tr>\n");
    }
    h.push_str("</table>\n");
    h
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::results::sample;

    #[test]
    fn a_page_with_a_heatmap_per_test_and_rail() {
        let nodes: Vec<String> = ["node1", "node2", "node3"].iter().map(|s| s.to_string()).collect();
        let mut rs = vec![
            sample("ib_write_bw", "rxe0", "node1", "node2", Status::Ok, Some(5.0)),
            sample("ib_write_bw", "rxe0", "node2", "node3", Status::Low, Some(1.0)),
            sample("ib_write_bw", "rxe0", "node3", "node1", Status::Fail, None),
            sample("ib_send_lat", "rxe0", "node1", "node2", Status::Ok, Some(8.0)),
        ];
        rs[1].reason = "1.00 MB/sec below 0.9 x the median <5>".into();
        let h = heatmap_of(&nodes, "ib_write_bw", "rxe0", &rs[..3].iter().collect::<Vec<_>>());
        assert_eq!(h.cells[0][1].as_ref().map(|c| c.text.as_str()), Some("5.00"));
        assert_eq!(h.cells[1][0], h.cells[0][1], "one way fills both cells");
        assert!(h.cells[1][2].as_ref().is_some_and(|c| c.flagged && c.value == Some(1.0)));
        assert!(h.cells[2][0].as_ref().is_some_and(|c| c.flagged && c.value.is_none() && c.text == "FAIL"));
        assert!(h.cells[0][0].is_none() && h.higher_is_better);
        let page = page(&nodes, &rs, &["node4 unreachable: x".into()], &["2 of 2 bad pairs include node3".into()], "4 pairs").expect("page");
        assert_eq!(page.matches("<svg").count(), 2, "one heatmap per test and rail");
        assert!(page.contains("median &lt;5&gt;"), "reasons are escaped");
        assert!(page.contains("<li>2 of 2 bad pairs include node3</li>"));
        assert!(!page.contains("<script") && !page.contains("http://") || page.matches("http://").count() == page.matches("xmlns=\"http://www.w3.org/2000/svg\"").count(), "nothing fetched");
        plot::render::check_xml(&page.replace("<!DOCTYPE html>", "").replace("<meta charset=\"utf-8\"/>", "")).expect("well-formed");
    }

    #[test]
    fn many_notes_fold_after_the_first_ones() {
        let nodes: Vec<String> = ["node1", "node2"].iter().map(|s| s.to_string()).collect();
        let rs = vec![sample("ib_write_bw", "rxe0", "node1", "node2", Status::Low, Some(1.0))];
        let notes: Vec<String> = (0..20).map(|i| format!("re-run {i}")).collect();
        let page = page(&nodes, &rs, &notes, &["node2 is slow".into()], "1 pair").expect("page");
        let (head, tail) = page.split_at(page.find("<details>").expect("the rest folded"));
        assert!(head.contains("<li>node2 is slow</li>") && head.contains("<li>re-run 7</li>") && !head.contains("re-run 8<"));
        assert!(tail.contains("<summary>12 more line(s): re-runs and notes</summary>") && tail.contains("<li>re-run 19</li>"));
        let short = super::page(&nodes, &rs, &notes[..3], &[], "1 pair").expect("page");
        assert!(!short.contains("<details>"), "a few notes are all shown");
        plot::render::check_xml(&page.replace("<!DOCTYPE html>", "").replace("<meta charset=\"utf-8\"/>", "")).expect("well-formed");
    }
}
