//! perftest's statistics on hand-computed examples (docs/perftest-wire.md, "Statistics").

use perftest::stats::{bandwidth, cpu_util, latency, latency_duration, BwInput, StatsError};

fn close(a: f64, b: f64) -> bool {
    (a - b).abs() < 1e-9 * b.abs().max(1.0)
}

#[test]
fn latency_basic_example() {
    // deltas 10,20,30,40,50,60 → top two dropped, m = 4.
    let r = latency(&[0, 10, 30, 60, 100, 150, 210], 1.0, 1).unwrap();
    let s = &r.stats;
    assert_eq!(s.measured, 4);
    assert_eq!(s.t_min, 10.0);
    assert_eq!(s.t_max, 50.0, "t_max is the second largest sample");
    assert_eq!(s.t_typical, 25.0, "even m: mean of d[m/2-1], d[m/2]");
    assert_eq!(s.t_avg, 25.0);
    assert!(close(s.t_stdev, 125f64.sqrt()), "{}", s.t_stdev); // (225+25+25+225)/4
    assert_eq!(s.p99, 50.0); // d[ceil(3.96)] = d[4]
    assert_eq!(s.p99_9, 50.0);
    assert_eq!(r.unsorted, vec![10.0, 20.0, 30.0, 40.0, 50.0, 60.0]);
    assert_eq!(r.sorted, vec![10.0, 20.0, 30.0, 40.0]);
}

#[test]
fn latency_median_is_integer_in_ticks_and_rtt_halves() {
    // deltas 4,3,200,100 → sorted 3,4,100,200; m = 2; median = (3+4)/2 = 3 ticks (integer).
    let r = latency(&[0, 4, 7, 207, 307], 1.0, 2).unwrap();
    let s = &r.stats;
    assert_eq!(s.t_typical, 1.5); // 3 / 2
    assert_eq!(s.t_min, 1.5);
    assert_eq!(s.t_max, 50.0); // 100 / 2
    assert_eq!(s.t_avg, 1.75); // (1.5 + 2) / 2
    assert_eq!(s.t_stdev, 0.0); // deviations ±0.25 truncate to 0
    assert_eq!(r.unsorted, vec![2.0, 1.5, 100.0, 50.0]);
}

#[test]
fn latency_odd_count_median_and_ns_clock() {
    // ns clock (1000 ticks/µs); deltas 1500, 2500, 1900, 2100, 2000 + two outliers → m = 5.
    let mut t = vec![0u64];
    for d in [1500u64, 2500, 1900, 2100, 2000, 90_000, 80_000] {
        let last = *t.last().unwrap();
        t.push(last + d);
    }
    let s = latency(&t, 1000.0, 1).unwrap().stats;
    assert_eq!(s.t_typical, 2.0); // d[2] of 1500,1900,2000,2100,2500
    assert_eq!(s.t_min, 1.5);
    assert_eq!(s.t_max, 80.0);
    assert!(close(s.t_avg, 2.0));
    assert_eq!(s.t_stdev, 0.0, "sub-µs deviations are truncated to 0 before squaring");
}

#[test]
fn latency_stdev_uses_truncated_deviations() {
    // µs values 1, 4, 10 (+2 dropped): avg 5; deviations 4, 1, -5 → 16+1+25 = 42 / 3 = 14.
    let s = latency(&[0, 1, 5, 15, 1015, 3015], 1.0, 1).unwrap().stats;
    assert_eq!(s.t_avg, 5.0);
    assert!(close(s.t_stdev, 14f64.sqrt()));
    // 2.5-µs steps: avg 3.75 over 2.5, 5 (dev 1.25 → 1, -1.25 → -1) → stdev 1.
    let s = latency(&[0, 5, 15, 1015, 3015], 2.0, 1).unwrap().stats;
    assert_eq!(s.t_avg, 3.75);
    assert_eq!(s.t_stdev, 1.0);
}

#[test]
fn percentiles_for_1000_iterations() {
    // 999 deltas 1..=999 → m = 997; p99 = d[988], p99.9 = d[997] = t_max.
    let t: Vec<u64> = (0..1000u64).map(|k| k * (k + 1) / 2).collect();
    let s = latency(&t, 1.0, 1).unwrap().stats;
    assert_eq!(s.measured, 997);
    assert_eq!(s.p99, 989.0);
    assert_eq!(s.p99_9, 998.0);
    assert_eq!(s.t_max, 998.0);
    assert_eq!(s.t_typical, 499.0); // m odd: d[498]
}

#[test]
fn latency_errors_not_panics() {
    assert!(matches!(latency(&[], 1.0, 2), Err(StatsError::TooFewSamples { .. })));
    assert!(matches!(latency(&[1, 2, 3], 1.0, 2), Err(StatsError::TooFewSamples { .. })));
    assert!(latency(&[1, 2, 3, 4], 1.0, 2).is_ok());
    assert!(matches!(latency(&[1, 2, 3, 4, 5], 0.0, 2), Err(StatsError::BadClock(_))));
    // Non-monotonic stamps wrap like C unsigned arithmetic instead of panicking.
    assert!(latency(&[10, 5, 20, 1, 30, 40], 1.0, 2).is_ok());
}

#[test]
fn stdev_survives_a_sample_far_from_the_mean() {
    // 200 ms round trips among 8 ms ones (seen under TCG in the cluster bed): a deviation
    // squared past i32::MAX, where perftest's int arithmetic gives -nan. 1 µs ticks, rtt 1.
    let mut stamps = vec![0u64];
    for i in 0..40u64 {
        let step = if i % 10 == 3 { 200_000 } else { 8_000 };
        stamps.push(stamps.last().copied().unwrap_or(0) + step);
    }
    let s = latency(&stamps, 1.0, 1).unwrap().stats;
    // 40 samples less the 2 largest: 2 of 200 ms and 36 of 8 ms; deviations truncate to µs.
    assert_eq!(s.measured, 38);
    let avg = (2.0 * 200_000.0 + 36.0 * 8_000.0) / 38.0;
    let dev = |x: f64| (avg - x).trunc().powi(2);
    let want = ((2.0 * dev(200_000.0) + 36.0 * dev(8_000.0)) / 38.0).sqrt();
    assert!(s.t_stdev.is_finite() && close(s.t_stdev, want), "{} vs {want}", s.t_stdev);
}

#[test]
fn latency_duration_mode() {
    let (lat, tps) = latency_duration(1_000_000_000, 1000.0, 2, 1000);
    assert_eq!(lat, 500.0);
    assert_eq!(tps, 1000.0);
}

fn bw_input<'a>(tp: &'a [u64], tc: &'a [u64], iters: u64, size: u64, cq_mod: u64) -> BwInput<'a> {
    BwInput {
        tposted: tp,
        tcompleted: tc,
        iters,
        num_qps: 1,
        size,
        post_list: 1,
        cq_mod,
        ticks_per_sec: 1e9,
        peak: true,
        duration: false,
        report_gbits: false,
        run_inf_bi_factor: 1,
        iters_per_port: [0, 0],
    }
}

#[test]
fn bandwidth_example() {
    // Windows (cycles per message): best is i=0..j=2: 120/3 = 40.
    let tp = [0, 10, 20, 30];
    let tc = [100, 110, 120, 200];
    let r = bandwidth(&bw_input(&tp, &tc, 4, 1000, 1)).unwrap();
    assert_eq!(r.iters, 4);
    assert_eq!(r.bw_peak, 1e12 / (40.0 * 1048576.0));
    assert_eq!(r.bw_avg, 4e12 / (200.0 * 1048576.0));
    assert_eq!(r.msg_rate, 20.0);
    let g = bandwidth(&BwInput { report_gbits: true, ..bw_input(&tp, &tc, 4, 1000, 1) }).unwrap();
    assert_eq!(g.bw_avg, 160.0);
    assert_eq!(g.bw_peak, 1e12 / (40.0 * 125e6));
}

#[test]
fn bandwidth_peak_with_cq_moderation_and_partial_last_group() {
    // cq_mod 2, 5 WRs: completions stamped at indices 1, 3 and 4 (the signaled last WR).
    let tp = [1000, 1010, 1020, 1030, 1040];
    let tc = [0, 1050, 0, 1090, 1120];
    let r = bandwidth(&bw_input(&tp, &tc, 5, 64, 2)).unwrap();
    // min over windows = (1090-1000)/4 = 22 (integer division)
    assert_eq!(r.bw_peak, 64e9 / (22.0 * 1048576.0));
    assert_eq!(r.bw_avg, (64.0 * 5.0 * 1e9) / (120.0 * 1048576.0));
}

#[test]
fn bandwidth_without_peak_and_errors() {
    // Peak off: one stamp each, T = tcompleted[0] - tposted[0].
    let r = bandwidth(&BwInput { peak: false, ..bw_input(&[100], &[1_000_100], 1000, 65536, 1) }).unwrap();
    assert_eq!(r.bw_peak, 0.0);
    assert_eq!(r.bw_avg, 65536.0 * 1000.0 * 1e9 / (1e6 * 1048576.0));
    // Missing stamps are an error, not an index panic.
    assert!(matches!(bandwidth(&bw_input(&[1, 2], &[3, 4], 5, 8, 1)), Err(StatsError::MissingTimestamps { .. })));
    assert!(matches!(bandwidth(&bw_input(&[], &[], 0, 8, 1)), Err(StatsError::MissingTimestamps { .. })));
    assert!(matches!(
        bandwidth(&BwInput { ticks_per_sec: 0.0, ..bw_input(&[1], &[2], 1, 8, 1) }),
        Err(StatsError::BadClock(_))
    ));
}

#[test]
fn bandwidth_multi_qp_and_duration() {
    let tp = [0, 10, 20, 30];
    let tc = [100, 110, 120, 200];
    let r = bandwidth(&BwInput { num_qps: 2, ..bw_input(&tp, &tc, 2, 1000, 1) }).unwrap();
    assert_eq!(r.iters, 4, "iterations column prints iters × QPs");
    let d = bandwidth(&BwInput {
        duration: true,
        peak: false,
        num_qps: 2,
        ..bw_input(&[0], &[1_000_000_000], 5000, 1000, 1)
    })
    .unwrap();
    assert_eq!(d.iters, 5000, "duration: sampled count as-is");
    assert_eq!(d.msg_rate, 0.005);
}

#[test]
fn cpu_util_example() {
    assert_eq!(cpu_util([100, 150], [1000, 1150]), 25.0);
    assert_eq!(cpu_util([5, 5], [7, 7]), 0.0);
}

/// `--report-per-port` (duration mode): each port's BW and message rate use its own share of
/// the sampled messages over the same window (perftest's bw_avg_p1/p2, msgRate_avg_p1/p2).
#[test]
fn per_port_figures_use_each_ports_share_of_the_window() {
    let tp = [0];
    let tc = [1_000_000_000]; // one second of 1 GHz ticks
    let inp = BwInput {
        peak: false,
        duration: true,
        iters_per_port: perftest::engine::dualport::iters_per_port(&[200, 100, 50, 50]),
        ..bw_input(&tp, &tc, 400, 1048576, 1)
    };
    let r = bandwidth(&inp).unwrap();
    assert_eq!((r.iters, r.bw_avg, r.msg_rate), (400, 400.0, 0.0004));
    assert_eq!((r.bw_avg_p1, r.msg_rate_p1), (300.0, 0.0003));
    assert_eq!((r.bw_avg_p2, r.msg_rate_p2), (100.0, 0.0001));
}
