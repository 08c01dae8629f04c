//! perftest's statistics, with its quirks (docs/perftest-wire.md, "Statistics"):
//!
//! * latency: samples are differences of consecutive post timestamps; the two largest are
//!   dropped; t_max is the second largest; the median of an even count is the *integer* mean of
//!   the two middle cycle counts; each deviation is truncated to an integer before squaring
//!   (x86-64 C conversion semantics); percentiles index `ceil(m × p)`;
//! * bandwidth: average over first post → last completion; peak as the minimum integer
//!   cycles-per-message over windows, formed in 64-bit integers before the final division.
//!
//! Timestamps are raw counter ticks; `ticks_per_usec` converts (a nanosecond clock → 1000.0;
//! `-C` → 1.0 so values stay in ticks). Pure functions over plain values; nothing panics.

// `u64::is_multiple_of` needs Rust 1.87; the workspace supports 1.80.
#![allow(clippy::manual_is_multiple_of)]

use std::fmt;

/// Samples perftest drops from the top before computing statistics.
pub const LAT_MEASURE_TAIL: usize = 2;

/// Why statistics could not be produced.
#[derive(Clone, Debug, PartialEq)]
pub enum StatsError {
    /// Too few timestamps (`have`), at least `need` are required.
    TooFewSamples { have: usize, need: usize },
    /// A timestamp array is shorter than the iteration count says.
    MissingTimestamps { what: &'static str, have: usize, need: usize },
    /// Zero or negative clock rate.
    BadClock(f64),
}

impl fmt::Display for StatsError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            StatsError::TooFewSamples { have, need } => write!(
                f,
                "cannot compute latency statistics from {have} timestamps (need at least {need}); run more iterations (-n)"
            ),
            StatsError::MissingTimestamps { what, have, need } => write!(
                f,
                "only {have} {what} timestamps recorded, {need} needed; this is a bug in the measurement loop"
            ),
            StatsError::BadClock(v) => {
                write!(f, "clock rate {v} is not positive; Can't produce a report (check the CPU frequency / clock source)")
            }
        }
    }
}

impl std::error::Error for StatsError {}

/// Latency statistics of one run (values already in µs, or ticks with `-C`).
#[derive(Clone, Debug, PartialEq)]
pub struct LatencyStats {
    /// Number of samples the statistics are over (`iters - 1 - 2`).
    pub measured: usize,
    pub t_min: f64,
    pub t_max: f64,
    pub t_typical: f64,
    pub t_avg: f64,
    pub t_stdev: f64,
    pub p99: f64,
    pub p99_9: f64,
}

/// Everything perftest derives from one latency run, including what `-U`/`-H` print.
#[derive(Clone, Debug, PartialEq)]
pub struct LatencyReport {
    pub stats: LatencyStats,
    /// Sample values in the original order (all `iters - 1`), for `-U`.
    pub unsorted: Vec<f64>,
    /// Sorted samples without the two largest, for `-H`.
    pub sorted: Vec<f64>,
}

/// Samples d[k] = t[k+1] − t[k] (wrapping like C unsigned arithmetic).
pub fn latency_deltas(tposted: &[u64]) -> Vec<u64> {
    tposted.windows(2).map(|w| w[1].wrapping_sub(w[0])).collect()
}

/// perftest's median: the integer mean of the two middle values when `n` is even.
fn median(n: usize, d: &[u64]) -> u64 {
    if n % 2 == 0 {
        // (n - 1) % 2 != 0
        ((u128::from(d[n / 2]) + u128::from(d[n / 2 - 1])) / 2) as u64
    } else {
        d[n / 2]
    }
}

/// Latency statistics from the post timestamps of an iteration-mode run.
///
/// `ticks_per_usec`: clock ticks per µs (1.0 for `-C`); `rtt_factor`: 2 for write/send
/// (ping-pong, reported one way), 1 for read/atomic.
pub fn latency(tposted: &[u64], ticks_per_usec: f64, rtt_factor: u32) -> Result<LatencyReport, StatsError> {
    latency_from_deltas(&latency_deltas(tposted), ticks_per_usec, rtt_factor)
}

/// Same as [`latency`] from already computed samples (e.g. LAT_BY_BW completion − post).
pub fn latency_from_deltas(deltas: &[u64], ticks_per_usec: f64, rtt_factor: u32) -> Result<LatencyReport, StatsError> {
    if ticks_per_usec.is_nan() || ticks_per_usec <= 0.0 {
        return Err(StatsError::BadClock(ticks_per_usec));
    }
    // Need at least one sample after dropping the tail.
    if deltas.len() < LAT_MEASURE_TAIL + 1 {
        return Err(StatsError::TooFewSamples { have: deltas.len() + 1, need: LAT_MEASURE_TAIL + 2 });
    }
    let q = ticks_per_usec * f64::from(rtt_factor.max(1));
    let unsorted: Vec<f64> = deltas.iter().map(|&d| d as f64 / q).collect();
    let mut d = deltas.to_vec();
    d.sort_unstable();
    let m = d.len() - LAT_MEASURE_TAIL;
    let med = median(m, &d);

    let mut average_sum = 0.0f64;
    for &x in &d[..m] {
        average_sum += x as f64 / q;
    }
    let average = average_sum / m as f64;
    let mut stdev_sum = 0.0f64;
    for &x in &d[..m] {
        // perftest truncates each deviation and its square to a 32-bit int, so one sample
        // 46.3 ms or more from the mean (common under TCG) overflows its square into INT_MIN
        // and the stdev comes out -nan. The same truncation in 64 bits gives perftest's figure
        // whenever perftest has one, and a true figure where it has none.
        let temp_var = (average - x as f64 / q).trunc();
        stdev_sum += (temp_var * temp_var).trunc();
    }
    let i99 = ((m as f64) * 0.99).ceil() as usize;
    let i999 = ((m as f64) * 0.999).ceil() as usize;
    // Indices are ≤ m < d.len(); `get` keeps this panic-free regardless.
    let at = |i: usize| d.get(i).map_or(f64::NAN, |&v| v as f64 / q);
    let stats = LatencyStats {
        measured: m,
        t_min: at(0),
        t_max: at(m),
        t_typical: med as f64 / q,
        t_avg: average,
        t_stdev: (stdev_sum / m as f64).sqrt(),
        p99: at(i99),
        p99_9: at(i999),
    };
    let sorted = d[..m].iter().map(|&v| v as f64 / q).collect();
    Ok(LatencyReport { stats, unsorted, sorted })
}

/// Duration-mode latency (`-D`): (t_avg µs, transactions per second).
pub fn latency_duration(sample_ticks: u64, ticks_per_usec: f64, rtt_factor: u32, iters: u64) -> (f64, f64) {
    let t = sample_ticks as f64;
    let latency = ((t / ticks_per_usec) / f64::from(rtt_factor.max(1))) / iters as f64;
    let tps = iters as f64 / (t / (ticks_per_usec * 1_000_000.0));
    (latency, tps)
}

/// Unit factor of BW figures: MiB/s (2^20) or `--report_gbits` (10^9 bit/s = 125000000 B/s).
pub fn format_factor(report_gbits: bool) -> u64 {
    if report_gbits {
        125_000_000
    } else {
        0x10_0000
    }
}

/// Inputs of perftest's `print_report_bw`.
#[derive(Clone, Copy, Debug)]
pub struct BwInput<'a> {
    /// Post timestamps (index = global post count); at least `[0]`.
    pub tposted: &'a [u64],
    /// Completion timestamps (index = completed WR count − 1); with peak off only `[0]` (end).
    pub tcompleted: &'a [u64],
    /// Iterations per QP (iteration mode) or sampled completions (duration mode).
    pub iters: u64,
    pub num_qps: u64,
    pub size: u64,
    pub post_list: u64,
    pub cq_mod: u64,
    /// Clock ticks per second (CPU MHz × 10^6; 10^9 for a nanosecond clock).
    pub ticks_per_sec: f64,
    /// Peak is computed (not `-N`, not duration, not send server, ≤ 20000 iterations).
    pub peak: bool,
    /// Duration mode: `iters` is already the total.
    pub duration: bool,
    pub report_gbits: bool,
    /// 2 for bidirectional `--run_infinitely` with non-send verbs, else 1.
    pub run_inf_bi_factor: u64,
    /// Completions per port (`--report-per-port`), else zeros.
    pub iters_per_port: [u64; 2],
}

/// BW results (already in MiB/s or Gb/s). The same values are what the report exchange carries
/// (`oob::BwReport`) and what a result line prints (`report::BwLine`): one type under three names.
#[derive(Clone, Copy, Debug, PartialEq, Default)]
pub struct BwResult {
    pub size: u64,
    pub iters: u64,
    pub bw_peak: f64,
    pub bw_avg: f64,
    pub msg_rate: f64,
    pub bw_avg_p1: f64,
    pub msg_rate_p1: f64,
    pub bw_avg_p2: f64,
    pub msg_rate_p2: f64,
}

fn round_up(x: u64, y: u64) -> u64 {
    x.div_ceil(y) * y
}

/// perftest's BW arithmetic.
pub fn bandwidth(inp: &BwInput<'_>) -> Result<BwResult, StatsError> {
    if inp.ticks_per_sec.is_nan() || inp.ticks_per_sec <= 0.0 {
        return Err(StatsError::BadClock(inp.ticks_per_sec));
    }
    let qps = inp.num_qps.max(1);
    let post_list = inp.post_list.max(1);
    let cq_mod = inp.cq_mod.max(1);
    let total = inp.iters.saturating_mul(qps);
    let first = |what: &'static str, v: &[u64], need: usize| -> Result<(), StatsError> {
        if v.len() < need {
            Err(StatsError::MissingTimestamps { what, have: v.len(), need })
        } else {
            Ok(())
        }
    };
    first("post", inp.tposted, 1)?;
    first("completion", inp.tcompleted, 1)?;
    let mut opt_delta = inp.tcompleted[0].wrapping_sub(inp.tposted[0]);
    if inp.peak {
        let n = usize::try_from(total).unwrap_or(usize::MAX);
        first("post", inp.tposted, n)?;
        first("completion", inp.tcompleted, n)?;
        let mut i = 0u64;
        while i < total {
            let mut j = round_up(i + 1, cq_mod) - 1;
            while j < total {
                let t = inp.tcompleted[j as usize].wrapping_sub(inp.tposted[i as usize]) / (j - i + 1);
                opt_delta = opt_delta.min(t);
                j += cq_mod;
            }
            if total % cq_mod != 0 {
                let j = total - 1;
                if j >= i {
                    let t = inp.tcompleted[j as usize].wrapping_sub(inp.tposted[i as usize]) / (j - i + 1);
                    opt_delta = opt_delta.min(t);
                }
            }
            i += post_list;
        }
    }
    let factor = format_factor(inp.report_gbits);
    let tsize = inp.run_inf_bi_factor.max(1).wrapping_mul(inp.size);
    let n = if inp.duration { inp.iters } else { total };
    let location = if inp.peak { n.saturating_sub(1) as usize } else { 0 };
    let end = *inp.tcompleted.get(location).ok_or(StatsError::MissingTimestamps {
        what: "completion",
        have: inp.tcompleted.len(),
        need: location + 1,
    })?;
    let sum = end.wrapping_sub(inp.tposted[0]) as f64;
    let hz = inp.ticks_per_sec;
    let ff = factor as f64;
    let bi = inp.run_inf_bi_factor.max(1) as f64;
    let bw = |count: u64| (tsize as f64 * count as f64 * hz) / (sum * ff);
    let rate = |count: u64| (count as f64 * hz * bi) / (sum * 1_000_000.0);
    let peak_up = if inp.peak { tsize.wrapping_mul(hz as u64) } else { 0 };
    let peak_down = opt_delta.wrapping_mul(factor);
    Ok(BwResult {
        size: inp.size,
        iters: n,
        bw_peak: peak_up as f64 / peak_down as f64,
        bw_avg: bw(n),
        msg_rate: rate(n),
        bw_avg_p1: bw(inp.iters_per_port[0]),
        msg_rate_p1: rate(inp.iters_per_port[0]),
        bw_avg_p2: bw(inp.iters_per_port[1]),
        msg_rate_p2: rate(inp.iters_per_port[1]),
    })
}

/// `--cpu_util`: user jiffies / (user + idle) × 100, in single precision like perftest.
pub fn cpu_util(user: [u64; 2], idle: [u64; 2]) -> f32 {
    let u = user[1].wrapping_sub(user[0]) as i64;
    let i = idle[1].wrapping_sub(idle[0]) as i64;
    if u + i != 0 {
        (u as f32 / (u + i) as f32) * 100.0
    } else {
        0.0
    }
}
