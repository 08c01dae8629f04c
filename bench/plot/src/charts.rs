//! Figures from runs: a sweep against message size, a burn-in against time, a latency
//! histogram with its CDF. Pure: runs in, [`Figure`] out.

use super::burnin::drops_below_running_median;
use super::latency::{latency_bins, LatencyBins};
use super::model::*;
use super::run::{metric_name, RunData, LAT_METRICS};

/// A run and its legend label.
pub type Labeled = (String, RunData);

/// Bins of a latency histogram.
pub const HISTOGRAM_BINS: usize = 40;
/// Most points a CDF line keeps (a 100k-sample run would otherwise write 100k path points).
pub const CDF_POINTS: usize = 400;
/// Most samples beyond the body a CDF marks with a dot.
pub const CDF_MARKS: usize = 64;

fn uniq(items: impl Iterator<Item = String>) -> String {
    let mut v: Vec<String> = Vec::new();
    for i in items {
        if !i.is_empty() && !v.contains(&i) {
            v.push(i);
        }
    }
    v.join(", ")
}

/// Heading: tests and devices; subheading: hosts and options (of the first run that has them).
fn headings(runs: &[Labeled]) -> (String, String) {
    let tests = uniq(runs.iter().map(|(_, r)| r.meta.test.replace('_', " ")));
    let devs = uniq(runs.iter().map(|(_, r)| r.meta.device.clone()));
    let mut heading = if tests.is_empty() { "rperftest run".to_string() } else { tests };
    if !devs.is_empty() {
        heading = format!("{heading} on {devs}");
    }
    let hosts = uniq(runs.iter().map(|(_, r)| r.meta.hosts.clone()));
    let opts = uniq(runs.iter().map(|(_, r)| r.meta.options.clone()));
    let sub = match (hosts.is_empty(), opts.is_empty()) {
        (false, false) => format!("{hosts} · {opts}"),
        (false, true) => hosts,
        (true, false) => opts,
        (true, true) => String::new(),
    };
    (heading, sub)
}

fn prefix(runs: &[Labeled], label: &str) -> String {
    if runs.len() > 1 {
        format!("{label}: ")
    } else {
        String::new()
    }
}

fn bw_unit(runs: &[Labeled]) -> String {
    runs.iter().map(|(_, r)| r.meta.bw_unit.clone()).find(|u| !u.is_empty()).unwrap_or_else(|| "MB/sec".into())
}

fn size_axis(series: &[Series]) -> Axis {
    let (min, max) = range_for(series.iter().flat_map(|s| s.points.iter().map(|p| p.0)), Scale::Log2, false);
    Axis::numeric("Message size", "bytes", Scale::Log2, min, max)
}

fn value_axis(label: &str, unit: &str, series: &[Series], scale: Scale) -> Axis {
    let (min, max) = range_for(series.iter().flat_map(|s| s.points.iter().map(|p| p.1)), scale, true);
    Axis::numeric(label, unit, scale, min, max)
}

fn size_series(name: String, run: &RunData, metric: &str) -> Option<Series> {
    let mut points: Vec<(f64, f64)> = run.points.iter().filter_map(|p| Some((p.size as f64, p.get(metric)?))).collect();
    points.sort_by(|a, b| a.0.total_cmp(&b.0));
    // perftest's duration mode prints BW peak 0: no line of zeros.
    if points.is_empty() || (metric == "BW_peak" && points.iter().all(|p| p.1 == 0.0)) {
        return None;
    }
    Some(Series { name, style: Style::Line, points })
}

fn chart(title: &str, x: Axis, y: Axis, series: Vec<Series>) -> Chart {
    Chart { title: title.into(), x, y, series, bands: Vec::new(), band_label: String::new(), edges: Vec::new(), legend: LegendPlace::Corner }
}

/// Whether every run has one result line (one message size each, e.g. `--out_json` reports).
fn one_point_each(runs: &[Labeled]) -> bool {
    !runs.is_empty() && runs.iter().all(|(_, r)| r.points.len() == 1)
}

/// Runs of one size each side by side: a categorical x axis (one slot per run, named by its label
/// and size) with a bar per figure, the legend right of the plot. Against a size axis such runs
/// are lone dots in the corners of an empty chart.
fn per_run_chart(title: &str, label: &str, unit: &str, runs: &[Labeled], metrics: &[&str], scale: Option<Scale>) -> Option<Chart> {
    let mut series: Vec<Series> = Vec::new();
    for (i, (_, r)) in runs.iter().enumerate() {
        for m in metrics {
            let Some(v) = r.points[0].get(m) else { continue };
            let name = metric_name(m);
            match series.iter_mut().find(|s| s.name == name) {
                Some(s) => s.points.push((i as f64, v)),
                None => series.push(Series { name: name.into(), style: Style::GroupedBars, points: vec![(i as f64, v)] }),
            }
        }
    }
    // perftest's duration mode prints BW peak 0: no bars of zeros.
    series.retain(|s| !(s.name == "BW peak" && s.points.iter().all(|p| p.1 == 0.0)));
    if series.is_empty() {
        return None;
    }
    let categories: Vec<String> = runs.iter().map(|(l, r)| format!("{l} · {}", size_label(r.points[0].size as f64))).collect();
    let x = Axis { categories, ..Axis::numeric("Run · message size", "bytes", Scale::Linear, -0.5, runs.len() as f64 - 0.5) };
    let scale = scale.unwrap_or_else(|| y_scale_for(series.iter().flat_map(|s| s.points.iter().map(|p| p.1))));
    let y = value_axis(label, unit, &series, scale);
    let mut c = chart(title, x, y, series);
    c.legend = LegendPlace::Right;
    Some(c)
}

/// Runs of one size each: bandwidth and message rate (or latency figures) per run.
fn per_run_figure(runs: &[Labeled]) -> Figure {
    let (heading, subheading) = headings(runs);
    let charts = if runs.iter().any(|(_, r)| r.is_bw()) {
        let unit = bw_unit(runs);
        let bw = per_run_chart("Bandwidth per run", "Bandwidth", &unit, runs, &["BW_average", "BW_peak", "bw_avg"], Some(Scale::Linear));
        let rate = per_run_chart("Message rate per run", "Message rate", "Mpps", runs, &["MsgRate", "msgRate_avg"], Some(Scale::Linear));
        bw.into_iter().chain(rate).collect()
    } else {
        per_run_chart("Latency per run", "Latency", "usec", runs, &["t_typical", "t_avg", "percentile_99", "percentile_99.9", "avg_lat"], None).into_iter().collect()
    };
    Figure { heading, subheading, charts }
}

/// A `-a` sweep (or single sizes, one point each): bandwidth and message rate against size for
/// bandwidth runs, latency figures against size for latency runs.
pub fn sweep_figure(runs: &[Labeled]) -> Figure {
    if one_point_each(runs) {
        return per_run_figure(runs);
    }
    let (heading, subheading) = headings(runs);
    let mut charts = Vec::new();
    if runs.iter().any(|(_, r)| r.is_bw()) {
        let unit = bw_unit(runs);
        let mut bw = Vec::new();
        let mut rate = Vec::new();
        for (label, r) in runs {
            let px = prefix(runs, label);
            for m in ["BW_average", "BW_peak", "bw_avg"] {
                bw.extend(size_series(format!("{px}{}", metric_name(m)), r, m));
            }
            for m in ["MsgRate", "msgRate_avg"] {
                rate.extend(size_series(format!("{px}{}", metric_name(m)), r, m));
            }
        }
        if !bw.is_empty() {
            let (x, y) = (size_axis(&bw), value_axis("Bandwidth", &unit, &bw, Scale::Linear));
            charts.push(chart("Bandwidth against message size", x, y, bw));
        }
        if !rate.is_empty() {
            let (x, y) = (size_axis(&rate), value_axis("Message rate", "Mpps", &rate, Scale::Linear));
            charts.push(chart("Message rate against message size", x, y, rate));
        }
    } else {
        // Overlays keep the typical and the tail figure per run; one run shows all five.
        let metrics: Vec<&str> = if runs.len() > 1 { vec!["t_typical", "percentile_99.9"] } else { LAT_METRICS.to_vec() };
        let mut lat = Vec::new();
        for (label, r) in runs {
            let px = prefix(runs, label);
            for m in metrics.iter().copied().chain(["avg_lat"]) {
                lat.extend(size_series(format!("{px}{}", metric_name(m)), r, m));
            }
            // Duration-mode latency has t_avg only; it is in LAT_METRICS already.
        }
        let scale = y_scale_for(lat.iter().flat_map(|s| s.points.iter().map(|p| p.1)));
        let (x, y) = (size_axis(&lat), value_axis("Latency", "usec", &lat, scale));
        charts.push(chart("Latency against message size", x, y, lat));
    }
    Figure { heading, subheading, charts }
}

/// Which intervals of each run were marked by [`time_figure`].
pub type Marked = Vec<(String, Vec<usize>)>;

/// A periodic run (`--run_infinitely`): bandwidth (or latency) per interval against time, with
/// the intervals more than `drop` below the running median shaded.
pub fn time_figure(runs: &[Labeled], drop: f64) -> (Figure, Marked) {
    let (heading, subheading) = headings(runs);
    let bw = runs.iter().any(|(_, r)| r.is_bw());
    let metric = if bw { "BW_average" } else { "t_avg" };
    let mut series = Vec::new();
    let mut bands = Vec::new();
    let mut marked = Vec::new();
    for (label, r) in runs {
        let pts: Vec<(f64, f64)> = r.points.iter().filter_map(|p| Some((p.t?, p.get(metric).or(p.get("bw_avg"))?))).collect();
        let vals: Vec<f64> = pts.iter().map(|p| p.1).collect();
        // Latency drops are rises: compare the inverse so "below the median" means slower.
        let for_drops: Vec<f64> = if bw { vals.clone() } else { vals.iter().map(|v| if *v > 0.0 { 1.0 / v } else { f64::NAN }).collect() };
        let idx = drops_below_running_median(&for_drops, drop);
        for &i in &idx {
            let x0 = if i == 0 { 0.0 } else { pts[i - 1].0 };
            bands.push(Band { x0, x1: pts[i].0 });
        }
        marked.push((label.clone(), idx));
        series.push(Series { name: format!("{}{}", prefix(runs, label), metric_name(metric)), style: Style::Line, points: pts });
    }
    let (min, max) = range_for(series.iter().flat_map(|s| s.points.iter().map(|p| p.0)), Scale::Linear, true);
    let x = Axis::numeric("Time since start", "s", Scale::Linear, min, max);
    let y = if bw { value_axis("Bandwidth", &bw_unit(runs), &series, Scale::Linear) } else { value_axis("Latency", "usec", &series, Scale::Linear) };
    let n: usize = marked.iter().map(|m| m.1.len()).sum();
    let band_label = format!("more than {}% below running median ({n})", value_label(drop * 100.0));
    let title = if bw { "Bandwidth per interval" } else { "Latency per interval" };
    let mut c = chart(title, x, y, series);
    c.bands = bands;
    c.band_label = band_label;
    (Figure { heading, subheading, charts: vec![c] }, marked)
}

/// A single-size `-H` latency run: histogram of the samples and their CDF. A run with a tail
/// gets a histogram over its body with the samples beyond counted in edge bins, and a log-10 CDF
/// axis ([`latency_bins`] decides).
pub fn histogram_figure(label: &str, run: &RunData) -> Figure {
    let runs = [(label.to_string(), run.clone())];
    let (heading, subheading) = headings(&runs);
    let mut s: Vec<f64> = run.samples.iter().copied().filter(|v| v.is_finite()).collect();
    s.sort_by(f64::total_cmp);
    let n = s.len();
    let size = run.points.first().map(|p| p.size).unwrap_or(0);
    let b = latency_bins(&s, HISTOGRAM_BINS);
    let width = b.width();
    let bars: Vec<(f64, f64)> = b.counts.iter().enumerate().map(|(i, c)| (b.lo + (i as f64 + 0.5) * width, *c as f64)).collect();
    let hist = Series { name: format!("{n} samples, {size} bytes"), style: Style::Bars, points: bars };
    let hx = Axis::numeric("Latency", "usec", Scale::Linear, b.lo, b.hi);
    // The y axis also holds the edge bins' bars (defensive: past the p1/p99 fences they are
    // under 1 % of the samples each, below the tallest of 40 body bins).
    let (ymin, ymax) = range_for(hist.points.iter().map(|p| p.1).chain([b.below as f64, b.above as f64]), Scale::Linear, true);
    let hy = Axis::numeric("Samples", "", Scale::Linear, ymin, ymax);
    let title = if b.cut { "Latency histogram (body; samples beyond it counted at the edge)" } else { "Latency histogram" };
    let mut hc = chart(title, hx, hy, vec![hist]);
    if b.below > 0 {
        let label = format!("< {} usec: {} (min {})", value_label(b.lo), samples(b.below), value_label(b.min));
        hc.edges.push(EdgeBin { above: false, bound: b.lo, count: b.below, label });
    }
    if b.above > 0 {
        let label = format!("> {} usec: {} (max {})", value_label(b.hi), samples(b.above), value_label(b.max));
        hc.edges.push(EdgeBin { above: true, bound: b.hi, count: b.above, label });
    }
    Figure { heading, subheading, charts: vec![hc, cdf_chart(&s, &b)] }
}

fn samples(n: u64) -> String {
    format!("{n} sample{}", if n == 1 { "" } else { "s" })
}

/// The CDF of sorted samples, at most [`CDF_POINTS`] points, on the x scale `b` chose; the
/// samples beyond the body (of a cut histogram) marked with dots, which the last percent of a
/// CDF's height would otherwise hide.
fn cdf_chart(s: &[f64], b: &LatencyBins) -> Chart {
    let (n, scale) = (s.len(), b.cdf_scale());
    let step = n.div_ceil(CDF_POINTS).max(1);
    let mut cdf: Vec<(f64, f64)> = (0..n).step_by(step).map(|i| (s[i], (i + 1) as f64 * 100.0 / n as f64)).collect();
    if let Some(last) = s.last() {
        if cdf.last().map(|p| p.1) != Some(100.0) {
            cdf.push((*last, 100.0));
        }
    }
    let (cmin, cmax) = range_for(cdf.iter().map(|p| p.0), scale, false);
    let cx = Axis::numeric("Latency", "usec", scale, cmin, cmax);
    let cy = Axis::numeric("Samples at or below", "%", Scale::Linear, 0.0, 100.0);
    // One title either way (VM case 65 looks for it); the decade ticks show a log axis.
    let title = "Latency CDF";
    let mut series = vec![Series { name: "CDF".into(), style: Style::Step, points: cdf }];
    let beyond: Vec<(f64, f64)> = s.iter().enumerate().filter(|(_, v)| **v < b.lo || **v > b.hi).map(|(i, v)| (*v, (i + 1) as f64 * 100.0 / n as f64)).collect();
    if !beyond.is_empty() {
        // Few enough for the renderer's dots.
        let step = beyond.len().div_ceil(CDF_MARKS);
        let name = format!("beyond the body: {}", samples(beyond.len() as u64));
        series.push(Series { name, style: Style::Line, points: beyond.into_iter().step_by(step).collect() });
    }
    chart(title, cx, cy, series)
}

/// The figure a set of runs calls for: time series when every run is periodic, a histogram for
/// one run with samples, else a sweep. Returns the marked intervals of a time series.
pub fn figure_for(runs: &[Labeled], drop: f64) -> (Figure, Option<Marked>) {
    if !runs.is_empty() && runs.iter().all(|(_, r)| r.is_time_series()) {
        let (f, m) = time_figure(runs, drop);
        return (f, Some(m));
    }
    if let [(label, r)] = runs {
        if !r.samples.is_empty() && r.points.len() <= 1 {
            return (histogram_figure(label, r), None);
        }
    }
    (sweep_figure(runs), None)
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::run::parse_run;

    fn series_file(header: &str, lines: &[&str]) -> String {
        let mut s = format!("{{\"rperftest_series\":1,{header}}}\n");
        for l in lines {
            s.push_str(l);
            s.push('\n');
        }
        s
    }

    fn bw_sweep() -> RunData {
        let text = series_file(
            "\"test_info\":{\"test\":\"RDMA_Write_BW\",\"Device\":\"rxe0\"},\"bw_unit\":\"Gb/sec\",\"hosts\":\"a → b\",\"options\":\"-a\"",
            &[
                r#"{"results":{"MsgSize":2,"n_iterations":5000,"BW_peak":0.10,"BW_average":0.09,"MsgRate":5.6}}"#,
                r#"{"results":{"MsgSize":4,"n_iterations":5000,"BW_peak":0.20,"BW_average":0.18,"MsgRate":5.5}}"#,
                r#"{"results":{"MsgSize":8388608,"n_iterations":5000,"BW_peak":10.5,"BW_average":10.0,"MsgRate":0.00015}}"#,
            ],
        );
        parse_run(&text, "bw").unwrap()
    }

    #[test]
    fn bw_sweep_has_bw_and_rate_charts_on_log2_size_axes() {
        let f = sweep_figure(&[("run".into(), bw_sweep())]);
        assert_eq!(f.heading, "RDMA Write BW on rxe0");
        assert_eq!(f.subheading, "a → b · -a");
        assert_eq!(f.charts.len(), 2);
        let bw = &f.charts[0];
        assert_eq!(bw.x.scale, Scale::Log2);
        assert_eq!((bw.x.min, bw.x.max), (2.0, 8388608.0));
        assert_eq!(bw.x.caption(), "Message size [bytes]");
        // The unit follows --report_gbits as the series file recorded it.
        assert_eq!(bw.y.caption(), "Bandwidth [Gb/sec]");
        assert_eq!(bw.y.scale, Scale::Linear);
        assert_eq!(bw.y.min, 0.0);
        assert!(bw.y.max > 10.5 && bw.y.max < 12.0, "{}", bw.y.max);
        let names: Vec<&str> = bw.series.iter().map(|s| s.name.as_str()).collect();
        assert_eq!(names, vec!["BW average", "BW peak"]);
        assert_eq!(bw.series[0].points, vec![(2.0, 0.09), (4.0, 0.18), (8388608.0, 10.0)]);
        let rate = &f.charts[1];
        assert_eq!(rate.y.caption(), "Message rate [Mpps]");
        assert_eq!(rate.series[0].points[0], (2.0, 5.6));
    }

    #[test]
    fn overlay_prefixes_labels_and_drops_zero_peaks() {
        let mut b = bw_sweep();
        for p in &mut b.points {
            p.values.insert("BW_peak".into(), 0.0);
        }
        let f = sweep_figure(&[("before".into(), bw_sweep()), ("after".into(), b)]);
        let names: Vec<&str> = f.charts[0].series.iter().map(|s| s.name.as_str()).collect();
        assert_eq!(names, vec!["before: BW average", "before: BW peak", "after: BW average"]);
    }

    #[test]
    fn lat_sweep_has_five_figures_and_a_log_axis_when_they_span_decades() {
        let text = series_file(
            "\"test_info\":{\"test\":\"Send_Latency\",\"Device\":\"rxe0\"}",
            &[
                r#"{"results":{"MsgSize":2,"t_min":3.0,"t_max":90.0,"t_typical":4.0,"t_avg":4.5,"t_stdev":1.0,"percentile_99":8.0,"percentile_99.9":20.0}}"#,
                r#"{"results":{"MsgSize":1048576,"t_min":700.0,"t_max":900.0,"t_typical":750.0,"t_avg":760.0,"t_stdev":5.0,"percentile_99":800.0,"percentile_99.9":850.0}}"#,
            ],
        );
        let f = sweep_figure(&[("x".into(), parse_run(&text, "l").unwrap())]);
        assert_eq!(f.charts.len(), 1);
        let c = &f.charts[0];
        let names: Vec<&str> = c.series.iter().map(|s| s.name.as_str()).collect();
        assert_eq!(names, vec!["t_min", "t_typical", "t_avg", "p99", "p99.9"]);
        assert_eq!(c.y.scale, Scale::Log10);
        assert_eq!((c.y.min, c.y.max), (1.0, 1000.0));
        assert_eq!(c.y.caption(), "Latency [usec]");
        assert_eq!(c.x.max, 1048576.0);
    }

    #[test]
    fn close_latencies_stay_linear() {
        assert_eq!(y_scale_for([3.0, 4.0, 250.0]), Scale::Linear);
        assert_eq!(y_scale_for([2.0, 250.0]), Scale::Log10);
        assert_eq!(y_scale_for([0.0, f64::NAN]), Scale::Linear);
    }

    fn burnin(vals: &[f64]) -> RunData {
        let mut lines = Vec::new();
        for (i, v) in vals.iter().enumerate() {
            lines.push(format!("{{\"t\":{},\"results\":{{\"MsgSize\":65536,\"BW_peak\":0,\"BW_average\":{v},\"MsgRate\":0.01}}}}", i + 1));
        }
        let refs: Vec<&str> = lines.iter().map(String::as_str).collect();
        parse_run(&series_file("\"test_info\":{\"test\":\"RDMA_Write_BW\"}", &refs), "t").unwrap()
    }

    #[test]
    fn time_series_marks_drops_as_bands() {
        let r = burnin(&[900.0, 1000.0, 1000.0, 400.0, 420.0, 1000.0]);
        let (f, marked) = figure_for(&[("soak".into(), r)], 0.10);
        let marked = marked.unwrap();
        assert_eq!(marked, vec![("soak".to_string(), vec![3, 4])]);
        let c = &f.charts[0];
        assert_eq!(c.x.caption(), "Time since start [s]");
        assert_eq!(c.x.scale, Scale::Linear);
        assert_eq!(c.bands, vec![Band { x0: 3.0, x1: 4.0 }, Band { x0: 4.0, x1: 5.0 }]);
        assert_eq!(c.band_label, "more than 10% below running median (2)");
        assert_eq!(c.series[0].points.len(), 6);
    }

    #[test]
    fn histogram_bins_and_cdf() {
        let mut r = RunData::default();
        r.meta.test = "Send_Latency".into();
        r.samples = (0..1000).map(|i| 1.0 + (i % 10) as f64 * 0.1).collect();
        let (f, m) = figure_for(&[("h".into(), r)], 0.1);
        assert!(m.is_none());
        assert_eq!(f.charts.len(), 2);
        let h = &f.charts[0].series[0];
        assert_eq!(h.style, Style::Bars);
        assert_eq!(h.points.len(), HISTOGRAM_BINS);
        assert_eq!(h.points.iter().map(|p| p.1).sum::<f64>(), 1000.0);
        let cdf = &f.charts[1].series[0];
        assert_eq!(cdf.points.last(), Some(&(1.9, 100.0)));
        assert!(cdf.points.len() <= CDF_POINTS + 1);
        assert!(cdf.points.windows(2).all(|w| w[0].0 <= w[1].0 && w[0].1 <= w[1].1));
        // No tail: the linear min..max axis, no edge bins, a linear CDF.
        let h = &f.charts[0];
        assert_eq!((h.x.scale, h.x.min, h.x.max), (Scale::Linear, 1.0, 1.9));
        assert!(h.edges.is_empty());
        assert_eq!(f.charts[1].x.scale, Scale::Linear);
    }

    /// 3000 samples of 38..42 µs (a fixed scramble) and `outliers` at about 12 ms.
    pub(crate) fn tail_run(outliers: usize) -> RunData {
        let mut r = RunData::default();
        r.meta.test = "RDMA_Write_Latency".into();
        r.samples = (0..3000u64).map(|i| 38.0 + 4.0 * ((i * 7919) % 1000) as f64 / 1000.0).collect();
        r.samples.extend((0..outliers).map(|i| 12_000.0 + i as f64 * 10.0));
        r
    }

    #[test]
    fn a_tail_gets_a_body_axis_an_overflow_bin_and_a_log_cdf() {
        let (f, _) = figure_for(&[("t".into(), tail_run(4))], 0.1);
        let h = &f.charts[0];
        assert_eq!(h.x.scale, Scale::Linear);
        assert!(h.x.min >= 38.0 && h.x.max < 42.0, "{}..{}", h.x.min, h.x.max);
        let bars = &h.series[0].points;
        assert_eq!(bars.iter().map(|p| p.1).sum::<f64>(), 3000.0);
        assert!(bars.iter().filter(|p| p.1 > 0.0).count() >= HISTOGRAM_BINS * 9 / 10);
        assert_eq!(h.edges.len(), 1);
        let e = &h.edges[0];
        assert!(e.above && e.count == 4 && e.bound == h.x.max);
        assert!(e.label.starts_with(&format!("> {} usec: 4 samples (max 12030)", value_label(h.x.max))), "{}", e.label);
        let cdf = &f.charts[1];
        assert_eq!(cdf.x.scale, Scale::Log10);
        assert_eq!((cdf.x.min, cdf.x.max), (10.0, 100_000.0));
        assert_eq!(cdf.series[0].points.last(), Some(&(12_030.0, 100.0)));
        assert_eq!(cdf.series[1].name, "beyond the body: 4 samples");
        assert_eq!(cdf.series[1].points.len(), 4);
        assert_eq!(cdf.series[1].points[0], (12_000.0, 3001.0 * 100.0 / 3004.0));
    }

    fn report(label: &str, size: u64, figures: &str) -> Labeled {
        let test = if figures.contains("BW") { "RDMA_Write_BW" } else { "RDMA_Write_Latency" };
        let text = format!("{{\"test_info\":{{\"test\":\"{test}\",\"Device\":\"rxe0\"}},\"results\":{{\"MsgSize\":{size},{figures}}}}}");
        (label.into(), parse_run(&text, label).unwrap())
    }

    #[test]
    fn runs_of_one_size_each_go_side_by_side_with_the_legend_outside() {
        let runs = [
            report("b1", 65536, "\"BW_peak\":1021.5,\"BW_average\":1020.25,\"MsgRate\":0.016324"),
            report("b2", 65536, "\"BW_peak\":0,\"BW_average\":880.41,\"MsgRate\":0.014087"),
        ];
        let f = sweep_figure(&runs);
        assert_eq!(f.charts.len(), 2);
        let c = &f.charts[0];
        assert_eq!(c.title, "Bandwidth per run");
        assert_eq!(c.x.categories, vec!["b1 · 64K", "b2 · 64K"]);
        // One slot per run, padded by half a slot: no point sits on the frame.
        assert_eq!((c.x.min, c.x.max), (-0.5, 1.5));
        assert_eq!(c.legend, LegendPlace::Right);
        let names: Vec<&str> = c.series.iter().map(|s| s.name.as_str()).collect();
        assert_eq!(names, vec!["BW average", "BW peak"], "one run's zero peak still leaves the other's");
        assert!(c.series.iter().all(|s| s.style == Style::GroupedBars));
        assert_eq!(c.series[0].points, vec![(0.0, 1020.25), (1.0, 880.41)]);
        assert_eq!(c.y.min, 0.0);
        assert!(c.y.max > 1021.5 && c.y.max < 1150.0, "{}", c.y.max);
        assert_eq!(f.charts[1].series[0].points, vec![(0.0, 0.016324), (1.0, 0.014087)]);
        let lat = sweep_figure(&[
            report("a", 2, "\"t_typical\":3.1,\"percentile_99.9\":9.5"),
            report("b", 4096, "\"t_typical\":5.2,\"percentile_99.9\":700"),
        ]);
        let c = &lat.charts[0];
        assert_eq!(c.x.categories, vec!["a · 2", "b · 4K"]);
        assert_eq!(c.y.scale, Scale::Log10, "3.1 to 700 spans more than 100x");
        assert_eq!(c.series.len(), 2);
    }

    #[test]
    fn labels() {
        assert_eq!(size_label(2.0), "2");
        assert_eq!(size_label(4096.0), "4K");
        assert_eq!(size_label(8388608.0), "8M");
        assert_eq!(size_label(1536.0), "1536");
        assert_eq!(value_label(1234.6), "1235");
        assert_eq!(value_label(12.5), "12.5");
        assert_eq!(value_label(0.016), "0.016");
        assert_eq!(seconds_label(90.0), "90s");
        assert_eq!(seconds_label(7200.0), "2h");
    }
}
