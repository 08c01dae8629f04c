//! The chart model: what a picture shows, decided before anything is drawn, so the choices
//! (series, axis ranges, scales, units, labels) are plain data that tests can read.

/// How an axis maps values to positions.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Scale {
    Linear,
    /// Message sizes: one tick per power of two, labelled 1, 2, … 1K, … 8M.
    Log2,
    /// Figures that span several decades (latency tails): one tick per power of ten.
    Log10,
}

#[derive(Clone, Debug, PartialEq)]
pub struct Axis {
    /// What is measured, e.g. "Message size".
    pub label: String,
    /// Unit shown after the label, e.g. "MB/sec" (empty for none).
    pub unit: String,
    pub scale: Scale,
    /// Range in data units (not transformed).
    pub min: f64,
    pub max: f64,
    /// A categorical axis (one run each): the name at positions 0, 1, …; empty for a numeric
    /// axis.
    pub categories: Vec<String>,
}

impl Axis {
    /// A numeric axis.
    pub fn numeric(label: &str, unit: &str, scale: Scale, min: f64, max: f64) -> Axis {
        Axis { label: label.into(), unit: unit.into(), scale, min, max, categories: Vec::new() }
    }

    /// "Label [unit]", or the label alone.
    pub fn caption(&self) -> String {
        if self.unit.is_empty() {
            self.label.clone()
        } else {
            format!("{} [{}]", self.label, self.unit)
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Style {
    /// Line through the points, with a dot on each.
    Line,
    /// Vertical bars from 0 (histograms): each point is (bin centre, count).
    Bars,
    /// A step line (CDF).
    Step,
    /// Bars on a categorical x axis, side by side with the chart's other grouped series: each
    /// point is (category index, value).
    GroupedBars,
}

#[derive(Clone, Debug, PartialEq)]
pub struct Series {
    pub name: String,
    pub style: Style,
    pub points: Vec<(f64, f64)>,
}

/// Samples a histogram counts beyond the end of its x axis (an overflow or underflow bin),
/// drawn in a slot past the axis's end.
#[derive(Clone, Debug, PartialEq)]
pub struct EdgeBin {
    /// Above the axis's max (else below its min).
    pub above: bool,
    /// The axis end the samples lie beyond.
    pub bound: f64,
    pub count: u64,
    /// Legend text, e.g. "> 42.1 usec: 5 samples (max 12100)".
    pub label: String,
}

/// Where a chart's legend goes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LegendPlace {
    /// Inside the plot, in the corner that covers the least data (chosen when drawn).
    Corner,
    /// In a column right of the plot area: nothing is ever under it.
    Right,
}

/// An x interval shaded on the chart (burn-in intervals below the running median).
#[derive(Clone, Debug, PartialEq)]
pub struct Band {
    pub x0: f64,
    pub x1: f64,
}

#[derive(Clone, Debug, PartialEq)]
pub struct Chart {
    pub title: String,
    pub x: Axis,
    pub y: Axis,
    pub series: Vec<Series>,
    pub bands: Vec<Band>,
    /// Legend text of the bands (empty: none).
    pub band_label: String,
    /// Overflow and underflow bins of a histogram.
    pub edges: Vec<EdgeBin>,
    pub legend: LegendPlace,
}

/// One picture: a heading (test, device, hosts, options) over one or more charts stacked
/// vertically.
#[derive(Clone, Debug, PartialEq)]
pub struct Figure {
    pub heading: String,
    pub subheading: String,
    pub charts: Vec<Chart>,
}

/// Axis range over the finite values of `vals`, widened so the extremes do not sit on the frame;
/// `from_zero` starts a linear axis at 0 (bandwidth, counts). Empty or single-valued inputs still
/// give a non-empty range.
pub fn range_for(vals: impl IntoIterator<Item = f64>, scale: Scale, from_zero: bool) -> (f64, f64) {
    let mut lo = f64::INFINITY;
    let mut hi = f64::NEG_INFINITY;
    for v in vals {
        if v.is_finite() && (scale == Scale::Linear || v > 0.0) {
            lo = lo.min(v);
            hi = hi.max(v);
        }
    }
    if !lo.is_finite() {
        return match scale {
            Scale::Linear => (0.0, 1.0),
            _ => (1.0, 2.0),
        };
    }
    match scale {
        Scale::Linear => {
            let lo = if from_zero { lo.min(0.0) } else { lo };
            let span = if hi > lo { hi - lo } else { hi.abs().max(1.0) };
            let lo = if from_zero && lo >= 0.0 { lo } else { lo - span * 0.05 };
            (lo, hi + span * 0.08)
        }
        // Whole powers of two around the data: the ticks fall on sizes people type (-s 4096).
        Scale::Log2 => {
            let a = lo.log2().floor();
            let b = hi.log2().ceil().max(a + 1.0);
            (a.exp2(), b.exp2())
        }
        Scale::Log10 => {
            let a = lo.log10().floor();
            let b = hi.log10().ceil().max(a + 1.0);
            (10f64.powf(a), 10f64.powf(b))
        }
    }
}

/// The y scale for figures whose largest is more than 100 times their smallest positive one
/// (latency at 8 MiB vs 2 B, a p99.9 spike) is logarithmic, else linear: a linear axis would
/// flatten everything but the top decade.
pub fn y_scale_for(vals: impl IntoIterator<Item = f64>) -> Scale {
    let (mut lo, mut hi) = (f64::INFINITY, 0f64);
    for v in vals {
        if v.is_finite() && v > 0.0 {
            lo = lo.min(v);
            hi = hi.max(v);
        }
    }
    if lo.is_finite() && hi / lo > 100.0 {
        Scale::Log10
    } else {
        Scale::Linear
    }
}

/// Sizes as perftest users write them: 2, 64, 4K, 1M (binary prefixes).
pub fn size_label(v: f64) -> String {
    if !v.is_finite() || v < 1.0 {
        return format!("{v}");
    }
    let v = v.round() as u64;
    for (shift, suffix) in [(30, "G"), (20, "M"), (10, "K")] {
        if v >= 1 << shift && v & ((1 << shift) - 1) == 0 {
            return format!("{}{suffix}", v >> shift);
        }
    }
    v.to_string()
}

/// A tick value on a linear or log-10 axis, short: 0.5, 12, 1.2e5.
pub fn value_label(v: f64) -> String {
    let a = v.abs();
    if v == 0.0 {
        "0".into()
    } else if !(1e-3..1e5).contains(&a) {
        format!("{v:.1e}")
    } else if a >= 100.0 {
        format!("{v:.0}")
    } else if a >= 1.0 {
        let s = format!("{v:.2}");
        s.trim_end_matches('0').trim_end_matches('.').to_string()
    } else {
        let s = format!("{v:.3}");
        s.trim_end_matches('0').trim_end_matches('.').to_string()
    }
}

/// Seconds as a tick: 42 s, 5 min, 2.5 h.
pub fn seconds_label(v: f64) -> String {
    if v >= 7200.0 {
        format!("{}h", value_label(v / 3600.0))
    } else if v >= 600.0 {
        format!("{}m", value_label(v / 60.0))
    } else {
        format!("{}s", value_label(v))
    }
}
