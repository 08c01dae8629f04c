//! `rperftest compare`: base against new, per size and figure, with a tolerance. Pure
//! arithmetic on parsed runs; the command around it reads files and prints.

use plot::run::{higher_is_better, RunData};
use serde_json::{json, Value};

/// Figures compared (the noisy extremes t_max and t_stdev are left out: a gate on them fails on
/// one scheduler hiccup).
pub const COMPARED: [&str; 11] = [
    "BW_average",
    "BW_peak",
    "MsgRate",
    "bw_avg",
    "msgRate_avg",
    "t_min",
    "t_typical",
    "t_avg",
    "percentile_99",
    "percentile_99.9",
    "tps_average",
];

/// Median and spread of one figure over the runs of a side.
#[derive(Clone, Debug, PartialEq)]
pub struct Stat {
    pub median: f64,
    /// (max − min) / median: 0 for a single run.
    pub spread: f64,
    pub runs: usize,
}

#[derive(Clone, Debug, PartialEq)]
pub struct Row {
    pub size: u64,
    pub metric: &'static str,
    pub base: Stat,
    pub new: Stat,
    /// new / base.
    pub ratio: f64,
    pub regression: bool,
}

pub fn median(v: &mut [f64]) -> f64 {
    v.sort_by(f64::total_cmp);
    let n = v.len();
    if n == 0 {
        f64::NAN
    } else if n % 2 == 1 {
        v[n / 2]
    } else {
        (v[n / 2 - 1] + v[n / 2]) / 2.0
    }
}

fn stat(mut v: Vec<f64>) -> Stat {
    let runs = v.len();
    let m = median(&mut v);
    let spread = match (v.first(), v.last()) {
        (Some(a), Some(b)) if m != 0.0 => (b - a) / m.abs(),
        _ => 0.0,
    };
    Stat { median: m, spread, runs }
}

/// One run's value of a figure at a size: the median of its lines there (a time series has many).
fn run_value(r: &RunData, size: u64, metric: &str) -> Option<f64> {
    let mut v: Vec<f64> = r.points.iter().filter(|p| p.size == size).filter_map(|p| p.get(metric)).collect();
    (!v.is_empty()).then(|| median(&mut v))
}

fn sizes(runs: &[RunData]) -> Vec<u64> {
    let mut s: Vec<u64> = runs.iter().flat_map(|r| r.points.iter().map(|p| p.size)).collect();
    s.sort_unstable();
    s.dedup();
    s
}

/// Every (size, figure) both sides have, in size order; `tolerance` is a fraction (0.05).
/// A row is a regression when new is worse than base by more than the tolerance: lower for
/// bandwidth and rate, higher for latency. A base of 0 (perftest's peak in duration mode) is
/// not compared.
pub fn compare(base: &[RunData], new: &[RunData], tolerance: f64) -> Result<Vec<Row>, String> {
    if base.is_empty() || new.is_empty() {
        return Err("compare needs at least one file on each side".into());
    }
    let bw = |s: &[RunData]| s.iter().map(RunData::is_bw).collect::<Vec<_>>();
    let kinds: Vec<bool> = bw(base).into_iter().chain(bw(new)).collect();
    if kinds.iter().any(|k| *k != kinds[0]) {
        return Err("the files mix bandwidth and latency runs: compare runs of the same test".into());
    }
    let base_sizes = sizes(base);
    let new_sizes = sizes(new);
    let mut rows = Vec::new();
    for &size in base_sizes.iter().filter(|s| new_sizes.contains(s)) {
        for metric in COMPARED {
            let b: Vec<f64> = base.iter().filter_map(|r| run_value(r, size, metric)).collect();
            let n: Vec<f64> = new.iter().filter_map(|r| run_value(r, size, metric)).collect();
            if b.is_empty() || n.is_empty() {
                continue;
            }
            let (b, n) = (stat(b), stat(n));
            if b.median == 0.0 {
                continue;
            }
            let ratio = n.median / b.median;
            let regression = if higher_is_better(metric) { ratio < 1.0 - tolerance } else { ratio > 1.0 + tolerance };
            rows.push(Row { size, metric, base: b, new: n, ratio, regression });
        }
    }
    if rows.is_empty() {
        return Err("the two sides have no message size and figure in common".into());
    }
    Ok(rows)
}

/// The sizes with at least one regression, in order.
pub fn regressed_sizes(rows: &[Row]) -> Vec<u64> {
    let mut s: Vec<u64> = rows.iter().filter(|r| r.regression).map(|r| r.size).collect();
    s.dedup();
    s
}

fn fmt_stat(s: &Stat) -> String {
    if s.runs > 1 {
        format!("{} ±{:.1}%", fmt_num(s.median), s.spread * 50.0)
    } else {
        fmt_num(s.median)
    }
}

fn fmt_num(v: f64) -> String {
    if v.abs() >= 100.0 {
        format!("{v:.2}")
    } else {
        format!("{v:.6}").trim_end_matches('0').trim_end_matches('.').to_string()
    }
}

/// The table a person reads; `tolerance` for the verdict line.
pub fn table(rows: &[Row], tolerance: f64) -> String {
    let mut s = format!(" {:>10}  {:<16} {:>22} {:>22} {:>8}\n", "#bytes", "figure", "base", "new", "new/base");
    for r in rows {
        s.push_str(&format!(
            " {:>10}  {:<16} {:>22} {:>22} {:>8.3}{}\n",
            r.size,
            r.metric,
            fmt_stat(&r.base),
            fmt_stat(&r.new),
            r.ratio,
            if r.regression { "  REGRESSION" } else { "" }
        ));
    }
    let bad = regressed_sizes(rows);
    let tol = plot::model::value_label(tolerance * 100.0);
    if bad.is_empty() {
        s.push_str(&format!(" No regression beyond {tol}% in {} comparisons\n", rows.len()));
    } else {
        let n = rows.iter().filter(|r| r.regression).count();
        let list: Vec<String> = bad.iter().map(u64::to_string).collect();
        s.push_str(&format!(" {n} regressions beyond {tol}% at sizes {}\n", list.join(", ")));
    }
    s
}

pub fn to_json(rows: &[Row], tolerance: f64, base_files: &[String], new_files: &[String]) -> Value {
    let st = |s: &Stat| json!({"median": s.median, "spread": s.spread, "runs": s.runs});
    json!({
        "tolerance": tolerance,
        "base_files": base_files,
        "new_files": new_files,
        "rows": rows.iter().map(|r| json!({
            "size": r.size,
            "metric": r.metric,
            "higher_is_better": higher_is_better(r.metric),
            "base": st(&r.base),
            "new": st(&r.new),
            "ratio": r.ratio,
            "regression": r.regression,
        })).collect::<Vec<_>>(),
        "regressions": rows.iter().filter(|r| r.regression).count(),
        "regressed_sizes": regressed_sizes(rows),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use plot::run::parse_run;

    fn bw(points: &[(u64, f64)]) -> RunData {
        let mut s = String::from("{\"rperftest_series\":1,\"test_info\":{\"test\":\"RDMA_Write_BW\"}}\n");
        for (size, v) in points {
            s += &format!("{{\"results\":{{\"MsgSize\":{size},\"BW_peak\":0,\"BW_average\":{v},\"MsgRate\":{}}}}}\n", v / 100.0);
        }
        parse_run(&s, "t").unwrap()
    }

    fn lat(size: u64, typical: f64) -> RunData {
        parse_run(&format!("{{\"test_info\":{{\"test\":\"Send_Latency\"}},\"results\":{{\"MsgSize\":{size},\"t_typical\":{typical},\"t_max\":99}}}}"), "l").unwrap()
    }

    #[test]
    fn within_tolerance_is_no_regression() {
        let rows = compare(&[bw(&[(2, 100.0), (4096, 1000.0)])], &[bw(&[(2, 96.0), (4096, 1040.0)])], 0.05).unwrap();
        // BW_peak 0 is skipped: two figures per size.
        assert_eq!(rows.len(), 4);
        assert_eq!((rows[0].size, rows[0].metric), (2, "BW_average"));
        assert!((rows[0].ratio - 0.96).abs() < 1e-12);
        assert!(rows.iter().all(|r| !r.regression));
        assert!(regressed_sizes(&rows).is_empty());
        assert!(table(&rows, 0.05).ends_with(" No regression beyond 5% in 4 comparisons\n"));
    }

    #[test]
    fn a_drop_beyond_tolerance_names_the_size() {
        let rows = compare(&[bw(&[(2, 100.0), (4096, 1000.0)])], &[bw(&[(2, 100.0), (4096, 900.0)])], 0.05).unwrap();
        let bad: Vec<(u64, &str)> = rows.iter().filter(|r| r.regression).map(|r| (r.size, r.metric)).collect();
        assert_eq!(bad, vec![(4096, "BW_average"), (4096, "MsgRate")]);
        assert_eq!(regressed_sizes(&rows), vec![4096]);
        let t = table(&rows, 0.05);
        assert!(t.ends_with(" 2 regressions beyond 5% at sizes 4096\n"), "{t}");
        assert!(t.contains("  REGRESSION"));
        let j = to_json(&rows, 0.05, &["a".into()], &["b".into()]);
        assert_eq!(j["regressions"], 2);
        assert_eq!(j["regressed_sizes"], json!([4096]));
    }

    #[test]
    fn latency_regresses_upwards() {
        let rows = compare(&[lat(2, 10.0)], &[lat(2, 10.6)], 0.05).unwrap();
        assert_eq!(rows.len(), 1, "t_max is not compared");
        assert!(rows[0].regression);
        let rows = compare(&[lat(2, 10.0)], &[lat(2, 8.0)], 0.05).unwrap();
        assert!(!rows[0].regression, "faster is not a regression");
    }

    #[test]
    fn several_runs_use_medians_so_one_outlier_does_not_fail() {
        let base = [bw(&[(64, 1000.0)]), bw(&[(64, 1010.0)]), bw(&[(64, 990.0)])];
        let new = [bw(&[(64, 1005.0)]), bw(&[(64, 400.0)]), bw(&[(64, 995.0)])];
        let rows = compare(&base, &new, 0.05).unwrap();
        let r = &rows[0];
        assert_eq!(r.base, Stat { median: 1000.0, spread: 0.02, runs: 3 });
        assert_eq!(r.new.median, 995.0);
        assert!((r.new.spread - 0.6080402010050251).abs() < 1e-12);
        assert!(!r.regression);
        assert!(table(&rows, 0.05).contains("1000.00 ±1.0%"));
    }

    #[test]
    fn bad_inputs_are_errors() {
        assert!(compare(&[], &[bw(&[(2, 1.0)])], 0.05).is_err());
        assert!(compare(&[bw(&[(2, 1.0)])], &[lat(2, 1.0)], 0.05).unwrap_err().contains("mix"));
        assert!(compare(&[bw(&[(2, 1.0)])], &[bw(&[(4, 1.0)])], 0.05).unwrap_err().contains("in common"));
    }

    #[test]
    fn medians() {
        assert_eq!(median(&mut [3.0, 1.0, 2.0]), 2.0);
        assert_eq!(median(&mut [4.0, 1.0, 2.0, 3.0]), 2.5);
        assert!(median(&mut []).is_nan());
    }
}
