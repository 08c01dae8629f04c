//! The x axis of a latency histogram and CDF, chosen from the samples: a run with a tail (a few
//! 12 ms outliers among 40 µs samples) would squeeze its body into one bar of a 0–12 000 µs axis,
//! so such a run gets an axis over the body with counted overflow (underflow) bins, and a log
//! CDF axis. Pure: sorted samples in, ranges and counts out.

use super::model::Scale;

/// Where the body of the samples ends: a sample is an outlier when it lies more than this many
/// p1–p99 spreads beyond p1 or p99. 1.5 keeps every sample of a normal or a skewed (exponential)
/// body of up to a million samples inside; outliers ten times the body's spread away are out.
pub const FENCE_SPREADS: f64 = 1.5;
/// The axis is cut to the body when a full-range axis would give the body less than this share
/// of its width: below a third the body's shape is no longer visible.
pub const MIN_BODY_SHARE: f64 = 1.0 / 3.0;

/// A latency histogram's bins over `lo..=hi`, with the samples outside counted.
#[derive(Clone, Debug, PartialEq)]
pub struct LatencyBins {
    pub lo: f64,
    pub hi: f64,
    pub counts: Vec<u64>,
    /// Samples below `lo` (underflow bin) and above `hi` (overflow bin); 0 without a cut.
    pub below: u64,
    pub above: u64,
    pub min: f64,
    pub max: f64,
    /// Whether the range was cut to the body (else it spans min..max).
    pub cut: bool,
}

impl LatencyBins {
    /// Width of one bin.
    pub fn width(&self) -> f64 {
        (self.hi - self.lo) / self.counts.len().max(1) as f64
    }

    /// The CDF's x scale: log-10 when the histogram was cut (the body's rise and the tail's
    /// steps are decades apart), linear otherwise.
    pub fn cdf_scale(&self) -> Scale {
        if self.cut && self.min > 0.0 {
            Scale::Log10
        } else {
            Scale::Linear
        }
    }
}

/// The value at quantile `q` (0..=1) of sorted `s` (nearest rank; `s` not empty).
fn quantile(s: &[f64], q: f64) -> f64 {
    s[((s.len() - 1) as f64 * q).round() as usize]
}

/// The body's range: the smallest and largest samples within the fences around p1..p99.
fn body_range(s: &[f64]) -> (f64, f64) {
    let (p1, p99) = (quantile(s, 0.01), quantile(s, 0.99));
    // A body of one repeated value (a coarse clock) still gets a fence off the value itself.
    let spread = if p99 > p1 { p99 - p1 } else { (quantile(s, 0.5).abs() * 0.01).max(1e-9) };
    let (fence_lo, fence_hi) = (p1 - FENCE_SPREADS * spread, p99 + FENCE_SPREADS * spread);
    let lo = s.iter().copied().find(|v| *v >= fence_lo).unwrap_or(p1);
    let hi = s.iter().rev().copied().find(|v| *v <= fence_hi).unwrap_or(p99);
    (lo, hi)
}

/// Bins for sorted finite samples: over min..max, or over the body when a min..max axis would
/// give the body less than [`MIN_BODY_SHARE`] of its width (then the samples beyond the body are
/// counted in `below`/`above`). An empty input gives 0..1 with no counts.
pub fn latency_bins(sorted: &[f64], bins: usize) -> LatencyBins {
    let bins = bins.max(1);
    let (Some(&min), Some(&max)) = (sorted.first(), sorted.last()) else {
        return LatencyBins { lo: 0.0, hi: 1.0, counts: vec![0; bins], below: 0, above: 0, min: 0.0, max: 0.0, cut: false };
    };
    let (body_lo, body_hi) = body_range(sorted);
    let cut = (max - min) * MIN_BODY_SHARE > body_hi - body_lo;
    let (lo, hi) = if cut { (body_lo, body_hi) } else { (min, max) };
    // A single value still gets a bin of some width.
    let hi = if hi > lo { hi } else { lo + (lo.abs() * 0.01).max(1.0) };
    let width = (hi - lo) / bins as f64;
    let mut b = LatencyBins { lo, hi, counts: vec![0; bins], below: 0, above: 0, min, max, cut };
    for &v in sorted {
        if v < lo {
            b.below += 1;
        } else if v > hi {
            b.above += 1;
        } else {
            b.counts[(((v - lo) / width) as usize).min(bins - 1)] += 1;
        }
    }
    b
}

#[cfg(test)]
mod tests {
    use super::*;

    /// 3000 samples spread over 38..42 µs (a fixed scramble, no RNG), sorted.
    fn body() -> Vec<f64> {
        (0..3000u64).map(|i| 38.0 + 4.0 * ((i * 7919) % 1000) as f64 / 1000.0).collect()
    }

    fn sorted(mut v: Vec<f64>) -> Vec<f64> {
        v.sort_by(f64::total_cmp);
        v
    }

    #[test]
    fn outliers_go_to_the_overflow_bin_and_the_body_fills_the_bins() {
        let mut s = body();
        s.extend([12_000.0, 12_100.0, 11_900.0, 12_050.0, 12_000.0]);
        let b = latency_bins(&sorted(s), 40);
        assert!(b.cut);
        assert_eq!((b.above, b.below), (5, 0));
        assert_eq!(b.counts.iter().sum::<u64>(), 3000);
        assert!(b.lo >= 38.0 && b.hi < 42.0, "{}..{}", b.lo, b.hi);
        let filled = b.counts.iter().filter(|c| **c > 0).count();
        assert!(filled >= 36, "the body fills {filled} of 40 bins");
        assert_eq!(b.max, 12_100.0);
        assert_eq!(b.cdf_scale(), Scale::Log10);
    }

    #[test]
    fn a_run_without_a_tail_keeps_the_linear_min_to_max_axis() {
        let s = sorted((0..1000).map(|i| 1.0 + (i % 10) as f64 * 0.1).collect());
        let b = latency_bins(&s, 40);
        assert!(!b.cut);
        assert_eq!((b.lo, b.hi, b.below, b.above), (1.0, 1.9, 0, 0));
        assert_eq!(b.cdf_scale(), Scale::Linear);
        // A skewed body (exponential, 10k samples, max about 9 means) is a body, not a tail.
        let exp = sorted((1..10_000).map(|i| 3.0 - 2.0 * (1.0 - i as f64 / 10_000.0).ln()).collect());
        let b = latency_bins(&exp, 40);
        assert!(!b.cut, "{}..{} of {}..{}", b.lo, b.hi, b.min, b.max);
        assert_eq!(b.counts.iter().sum::<u64>(), exp.len() as u64);
    }

    #[test]
    fn low_outliers_go_to_the_underflow_bin() {
        let mut s = body();
        s.extend([0.5, 0.6]);
        let b = latency_bins(&sorted(s), 40);
        assert!(b.cut);
        assert_eq!((b.below, b.above), (2, 0));
        assert!(b.lo >= 38.0);
        // Log CDF only for positive samples.
        assert_eq!(b.cdf_scale(), Scale::Log10);
    }

    #[test]
    fn degenerate_inputs_give_a_range() {
        let b = latency_bins(&[], 40);
        assert_eq!((b.lo, b.hi, b.counts.len()), (0.0, 1.0, 40));
        let b = latency_bins(&[5.0; 10], 40);
        assert!(!b.cut && b.hi > b.lo);
        assert_eq!(b.counts.iter().sum::<u64>(), 10);
        // 99 % one clock tick, a few far out: the body is that tick, the rest overflows.
        let mut s = vec![3.0; 990];
        s.extend([9000.0; 10]);
        let b = latency_bins(&s, 40);
        assert!(b.cut);
        assert_eq!((b.above, b.counts.iter().sum::<u64>()), (10, 990));
        let b = latency_bins(&[1.0], 0);
        assert_eq!(b.counts, vec![1]);
    }
}
