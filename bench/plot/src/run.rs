//! One run's figures as the charts and `rperftest compare` read them, from the tool itself or
//! from files: a perftest 6.29-style `--out_json` report (one result line: perftest rewrites the
//! file at every line, so a sweep leaves only its last size) or an rperftest series file
//! (`--series FILE`, JSON Lines: a header, then every result line of the run). docs/plots.md
//! describes both.

use std::collections::BTreeMap;

use serde_json::{Map, Value};

/// Marks the first line of a series file (value: format version).
pub const SERIES_TAG: &str = "rperftest_series";
pub const SERIES_VERSION: u64 = 1;

/// What produced a run, for titles and legends.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct RunMeta {
    /// perftest's test name, e.g. `RDMA_Write_BW`.
    pub test: String,
    pub device: String,
    /// "this host → peer", where known.
    pub hosts: String,
    /// The tool's command line options, where known.
    pub options: String,
    /// Bandwidth unit of the BW figures: `MB/sec` or `Gb/sec` (`--report_gbits`).
    pub bw_unit: String,
}

/// One result line: a size, the time since the start for periodic lines (`--run_infinitely`),
/// and the figures under their perftest JSON names (`BW_average`, `t_typical`, `percentile_99` …).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Point {
    pub size: u64,
    pub t: Option<f64>,
    pub values: BTreeMap<String, f64>,
}

impl Point {
    pub fn get(&self, k: &str) -> Option<f64> {
        self.values.get(k).copied().filter(|v| v.is_finite())
    }
}

#[derive(Clone, Debug, Default, PartialEq)]
pub struct RunData {
    pub meta: RunMeta,
    pub points: Vec<Point>,
    /// Latency samples (µs, sorted) of a single-size `-H` run, for its histogram.
    pub samples: Vec<f64>,
}

/// Bandwidth figures, in the order charts and tables show them.
pub const BW_METRICS: [&str; 3] = ["BW_average", "BW_peak", "MsgRate"];
/// Latency figures, in the order charts and tables show them.
pub const LAT_METRICS: [&str; 5] = ["t_min", "t_typical", "t_avg", "percentile_99", "percentile_99.9"];

/// Whether larger is better for a figure (bandwidth, rate) or worse (latency).
pub fn higher_is_better(metric: &str) -> bool {
    !(metric.starts_with("t_") || metric.starts_with("percentile") || metric == "avg_lat")
}

/// The legend name of a figure.
pub fn metric_name(metric: &str) -> &str {
    match metric {
        "BW_average" | "bw_avg" => "BW average",
        "BW_peak" => "BW peak",
        "MsgRate" | "msgRate_avg" => "MsgRate",
        "percentile_99" => "p99",
        "percentile_99.9" => "p99.9",
        "tps_average" => "tps",
        "avg_lat" => "t_avg",
        other => other,
    }
}

impl RunData {
    /// A bandwidth run (else latency).
    pub fn is_bw(&self) -> bool {
        self.points.iter().any(|p| p.values.contains_key("BW_average") || p.values.contains_key("bw_avg") || p.values.contains_key("MsgRate"))
    }

    /// The periodic lines of a `--run_infinitely` run.
    pub fn is_time_series(&self) -> bool {
        self.points.len() > 1 && self.points.iter().all(|p| p.t.is_some())
    }

    /// The figures that occur in the run, in display order.
    pub fn metrics(&self) -> Vec<&'static str> {
        let all: &[&'static str] = if self.is_bw() {
            &["BW_average", "BW_peak", "MsgRate", "bw_avg", "msgRate_avg"]
        } else {
            &["t_min", "t_typical", "t_avg", "percentile_99", "percentile_99.9", "t_max", "avg_lat", "tps_average"]
        };
        all.iter().copied().filter(|m| self.points.iter().any(|p| p.get(m).is_some())).collect()
    }
}

/// A result object (`"results": {...}`) as a point.
pub fn point_from_results(r: &Map<String, Value>, t: Option<f64>) -> Point {
    let mut p = Point { t, ..Default::default() };
    for (k, v) in r {
        match (k.as_str(), v) {
            ("MsgSize", v) => p.size = v.as_u64().unwrap_or(0),
            // Iterations and CPU use are facts about the run, not figures to chart.
            ("n_iterations" | "CPU_util", _) => {}
            (k, Value::Number(n)) => {
                if let Some(f) = n.as_f64() {
                    p.values.insert(k.to_string(), f);
                }
            }
            _ => {}
        }
    }
    p
}

fn meta_from_test_info(ti: &Map<String, Value>) -> RunMeta {
    let s = |k: &str| ti.get(k).and_then(Value::as_str).unwrap_or("").to_string();
    RunMeta { test: s("test"), device: s("Device"), bw_unit: "MB/sec".into(), ..Default::default() }
}

/// Parse a file's text: a 6.29 `--out_json` report or a series file. `what` names the file in
/// error messages.
pub fn parse_run(text: &str, what: &str) -> Result<RunData, String> {
    let first = text.lines().find(|l| !l.trim().is_empty()).unwrap_or("");
    if first.contains(SERIES_TAG) {
        return parse_series(text, what);
    }
    let v: Value = serde_json::from_str(text).map_err(|e| {
        format!(
            "{what}: not a perftest 6.29 JSON report nor an rperftest series file ({e}); \
             perftest 6.06's pseudo-JSON cannot be read: rerun with rperftest's --out_json or --series"
        )
    })?;
    let obj = v.as_object().ok_or_else(|| format!("{what}: the JSON is not an object"))?;
    let ti = obj.get("test_info").and_then(Value::as_object).ok_or_else(|| format!("{what}: no \"test_info\" object"))?;
    let res = obj.get("results").and_then(Value::as_object).ok_or_else(|| format!("{what}: no \"results\" object"))?;
    Ok(RunData { meta: meta_from_test_info(ti), points: vec![point_from_results(res, None)], samples: Vec::new() })
}

fn parse_series(text: &str, what: &str) -> Result<RunData, String> {
    let mut run = RunData::default();
    let mut seen_header = false;
    for (i, line) in text.lines().enumerate() {
        if line.trim().is_empty() {
            continue;
        }
        let v: Value = match serde_json::from_str(line) {
            Ok(v) => v,
            // A run killed mid-write leaves a torn last line: keep what came before it.
            Err(_) if i + 1 == text.lines().count() && seen_header => break,
            Err(e) => return Err(format!("{what}:{}: not a JSON line ({e})", i + 1)),
        };
        let Some(o) = v.as_object() else { return Err(format!("{what}:{}: not a JSON object", i + 1)) };
        if o.contains_key(SERIES_TAG) {
            let ti = o.get("test_info").and_then(Value::as_object).cloned().unwrap_or_default();
            run.meta = meta_from_test_info(&ti);
            let s = |k: &str| o.get(k).and_then(Value::as_str).map(str::to_string);
            if let Some(u) = s("bw_unit") {
                run.meta.bw_unit = u;
            }
            run.meta.hosts = s("hosts").unwrap_or_default();
            run.meta.options = s("options").unwrap_or_default();
            seen_header = true;
        } else if let Some(r) = o.get("results").and_then(Value::as_object) {
            run.points.push(point_from_results(r, o.get("t").and_then(Value::as_f64)));
        } else if let Some(h) = o.get("samples").and_then(Value::as_array) {
            run.samples = h.iter().filter_map(Value::as_f64).collect();
        }
    }
    if !seen_header {
        return Err(format!("{what}: no \"{SERIES_TAG}\" header line"));
    }
    Ok(run)
}

/// The header line of a series file (without the newline).
pub fn series_header(meta: &RunMeta, test_info: &Value) -> String {
    let mut o = Map::new();
    o.insert(SERIES_TAG.into(), SERIES_VERSION.into());
    o.insert("test_info".into(), test_info.clone());
    o.insert("bw_unit".into(), meta.bw_unit.clone().into());
    o.insert("hosts".into(), meta.hosts.clone().into());
    o.insert("options".into(), meta.options.clone().into());
    Value::Object(o).to_string()
}

/// One result line of a series file: `{"t": seconds, "results": {...}}` (`t` only for periodic
/// lines).
pub fn series_line(t: Option<f64>, results: &Value) -> String {
    let mut o = Map::new();
    if let Some(t) = t {
        o.insert("t".into(), ((t * 1000.0).round() / 1000.0).into());
    }
    o.insert("results".into(), results.clone());
    Value::Object(o).to_string()
}

/// The `-H` samples line of a series file.
pub fn samples_line(samples: &[f64]) -> String {
    let v: Vec<Value> = samples.iter().map(|s| ((s * 1000.0).round() / 1000.0).into()).collect();
    let mut o = Map::new();
    o.insert("samples".into(), Value::Array(v));
    Value::Object(o).to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    const OUT_JSON: &str = "{\n\"test_info\": {\n\"test\": \"RDMA_Write_BW\",\n\"Device\": \"rxe0\",\n\"Number_of_qps\": 1\n},\n\"results\": {\n\"MsgSize\": 65536,\n\"n_iterations\": 5000,\n\"BW_peak\": 1021.50,\n\"BW_average\": 1020.25,\n\"MsgRate\": 0.016324,\n\"CPU_util\": 12.00\n}\n}\n";

    #[test]
    fn reads_an_out_json_report() {
        let r = parse_run(OUT_JSON, "a.json").unwrap();
        assert_eq!(r.meta.test, "RDMA_Write_BW");
        assert_eq!(r.meta.device, "rxe0");
        assert_eq!(r.points.len(), 1);
        assert_eq!(r.points[0].size, 65536);
        assert_eq!(r.points[0].get("BW_average"), Some(1020.25));
        assert_eq!(r.points[0].get("MsgRate"), Some(0.016324));
        assert_eq!(r.points[0].get("CPU_util"), None);
        assert!(r.is_bw());
        assert_eq!(r.metrics(), vec!["BW_average", "BW_peak", "MsgRate"]);
    }

    #[test]
    fn series_round_trip_keeps_every_line_and_the_unit() {
        let meta = RunMeta { test: "x".into(), bw_unit: "Gb/sec".into(), hosts: "a → b".into(), options: "-a".into(), device: "d".into() };
        let ti = serde_json::json!({"test": "Send_Latency", "Device": "rxe0"});
        let mut text = series_header(&meta, &ti) + "\n";
        for (s, t) in [(2u64, 1.5f64), (4, 2.0)] {
            let r = serde_json::json!({"MsgSize": s, "n_iterations": 10, "t_typical": t, "percentile_99": t * 2.0});
            text += &(series_line(None, &r) + "\n");
        }
        text += &(samples_line(&[1.0, 1.25]) + "\n");
        let r = parse_run(&text, "s.jsonl").unwrap();
        assert_eq!(r.meta.test, "Send_Latency");
        assert_eq!(r.meta.bw_unit, "Gb/sec");
        assert_eq!(r.meta.hosts, "a → b");
        assert_eq!(r.points.iter().map(|p| p.size).collect::<Vec<_>>(), vec![2, 4]);
        assert_eq!(r.points[1].get("percentile_99"), Some(4.0));
        assert_eq!(r.samples, vec![1.0, 1.25]);
        assert!(!r.is_bw());
        assert!(!r.is_time_series());
    }

    #[test]
    fn a_torn_last_line_is_dropped_but_a_torn_middle_is_an_error() {
        let h = series_header(&RunMeta::default(), &serde_json::json!({}));
        let ok = format!("{h}\n{{\"t\":1,\"results\":{{\"MsgSize\":8,\"BW_average\":5}}}}\n{{\"t\":2,\"res");
        let r = parse_run(&ok, "s").unwrap();
        assert_eq!(r.points.len(), 1);
        assert!(r.is_bw());
        let bad = format!("{h}\n{{\"t\":1,\"res\n{{\"t\":2,\"results\":{{}}}}\n");
        assert!(parse_run(&bad, "s").unwrap_err().starts_with("s:2:"));
    }

    #[test]
    fn pseudo_json_is_refused_with_a_hint() {
        let e = parse_run("{\ntest_info: {\n},\n}\n", "old.json").unwrap_err();
        assert!(e.starts_with("old.json: not a perftest 6.29 JSON report"), "{e}");
        assert!(e.contains("--series"));
    }
}
