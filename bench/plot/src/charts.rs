//! Figures from runs: a sweep against message size, a burn-in against time, a latency
//! histogram with its CDF. Pure: runs in, [`Figure`] out.

use super::burnin::drops_below_running_median;
use super::model::*;
use super::run::{metric_name, RunData, LAT_METRICS};

/// A run and its legend label.
pub type Labeled = (String, RunData);

/// Bins of a latency histogram.
pub const HISTOGRAM_BINS: usize = 40;
/// Most points a CDF line keeps (a 100k-sample run would otherwise write 100k path points).
pub const CDF_POINTS: usize = 400;

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
    Axis { label: "Message size".into(), unit: "bytes".into(), scale: Scale::Log2, min, max }
}

fn value_axis(label: &str, unit: &str, series: &[Series], scale: Scale) -> Axis {
    let (min, max) = range_for(series.iter().flat_map(|s| s.points.iter().map(|p| p.1)), scale, true);
    Axis { label: label.into(), unit: unit.into(), scale, min, max }
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
    Chart { title: title.into(), x, y, series, bands: Vec::new(), band_label: String::new() }
}

/// A `-a` sweep (or single sizes, one point each): bandwidth and message rate against size for
/// bandwidth runs, latency figures against size for latency runs.
pub fn sweep_figure(runs: &[Labeled]) -> Figure {
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
    let x = Axis { label: "Time since start".into(), unit: "s".into(), scale: Scale::Linear, min, max };
    let y = if bw { value_axis("Bandwidth", &bw_unit(runs), &series, Scale::Linear) } else { value_axis("Latency", "usec", &series, Scale::Linear) };
    let n: usize = marked.iter().map(|m| m.1.len()).sum();
    let band_label = format!("more than {}% below running median ({n})", value_label(drop * 100.0));
    let title = if bw { "Bandwidth per interval" } else { "Latency per interval" };
    let mut c = chart(title, x, y, series);
    c.bands = bands;
    c.band_label = band_label;
    (Figure { heading, subheading, charts: vec![c] }, marked)
}

/// A single-size `-H` latency run: histogram of the samples and their CDF.
pub fn histogram_figure(label: &str, run: &RunData) -> Figure {
    let runs = [(label.to_string(), run.clone())];
    let (heading, subheading) = headings(&runs);
    let mut s: Vec<f64> = run.samples.iter().copied().filter(|v| v.is_finite()).collect();
    s.sort_by(f64::total_cmp);
    let n = s.len();
    let size = run.points.first().map(|p| p.size).unwrap_or(0);
    let (lo, hi) = match (s.first(), s.last()) {
        (Some(a), Some(_)) => {
            // The top 0.1 % folds into the last bin: one 1 ms outlier would squeeze the body into
            // a single bar.
            let cap = s[((n as f64 * 0.999) as usize).min(n - 1)];
            (*a, if cap > *a { cap } else { *a + 1.0 })
        }
        _ => (0.0, 1.0),
    };
    let width = (hi - lo) / HISTOGRAM_BINS as f64;
    let mut counts = vec![0u64; HISTOGRAM_BINS];
    for v in &s {
        let b = (((v - lo) / width) as usize).min(HISTOGRAM_BINS - 1);
        counts[b] += 1;
    }
    let bars: Vec<(f64, f64)> = counts.iter().enumerate().map(|(i, c)| (lo + (i as f64 + 0.5) * width, *c as f64)).collect();
    let step = n.div_ceil(CDF_POINTS).max(1);
    let mut cdf: Vec<(f64, f64)> = (0..n).step_by(step).map(|i| (s[i], (i + 1) as f64 * 100.0 / n as f64)).collect();
    if let Some(last) = s.last() {
        if cdf.last().map(|p| p.1) != Some(100.0) {
            cdf.push((*last, 100.0));
        }
    }
    let hist = Series { name: format!("{n} samples, {} bytes", size), style: Style::Bars, points: bars };
    let hx = Axis { label: "Latency".into(), unit: "usec".into(), scale: Scale::Linear, min: lo, max: hi };
    let hy = value_axis("Samples", "", std::slice::from_ref(&hist), Scale::Linear);
    let cdf = Series { name: "CDF".into(), style: Style::Step, points: cdf };
    let (cmin, cmax) = range_for(cdf.points.iter().map(|p| p.0), Scale::Linear, false);
    let cx = Axis { label: "Latency".into(), unit: "usec".into(), scale: Scale::Linear, min: cmin, max: cmax };
    let cy = Axis { label: "Samples at or below".into(), unit: "%".into(), scale: Scale::Linear, min: 0.0, max: 100.0 };
    Figure {
        heading,
        subheading,
        charts: vec![chart("Latency histogram (top 0.1% in the last bin)", hx, hy, vec![hist]), chart("Latency CDF", cx, cy, vec![cdf])],
    }
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
mod tests {
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
