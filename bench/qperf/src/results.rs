//! From the two STATs to figures (stock qperf's `calc_results`) and to the rows it prints.
//!
//! The server's STAT and our local one are merged first (each side may count for the other),
//! then each node's real and CPU time come from its own clocks and tick rate.

use super::format::{Class, Table};
use super::options::{Par, ParKind, Pars, Side, PAR_NAMES};
use super::wire::{Stat, T_IDLE, T_IOWAIT, T_IRQ, T_KERNEL, T_N, T_NICE, T_REAL, T_SOFTIRQ, T_STEAL, T_USER};

/// What a test reports: its "always" rows.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Measure {
    Latency,
    MsgRate,
    Bandwidth,
    BandwidthSr,
}

/// One node's times (seconds) and CPU use (fractions of one CPU).
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Resn {
    pub time_real: f64,
    pub time_cpu: f64,
    pub cpu_total: f64,
    pub cpu_user: f64,
    pub cpu_intr: f64,
    pub cpu_idle: f64,
    pub cpu_kernel: f64,
    pub cpu_io_wait: f64,
}

#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Res {
    pub l: Resn,
    pub r: Resn,
    pub send_bw: f64,
    pub recv_bw: f64,
    pub msg_rate: f64,
    pub send_cost: f64,
    pub recv_cost: f64,
    pub latency: f64,
}

fn delta(st: &Stat, i: usize) -> f64 {
    st.time_e[i].wrapping_sub(st.time_s[i]) as i64 as f64
}

pub fn calc_node(st: &Stat) -> Resn {
    let s = delta(st, T_REAL);
    if s == 0.0 || st.no_ticks == 0 {
        return Resn::default();
    }
    let ticks = f64::from(st.no_ticks);
    let cpu: f64 = (0..T_N).filter(|&i| i != T_REAL && i != T_IDLE).map(|i| delta(st, i)).sum();
    let user = (delta(st, T_USER) + delta(st, T_NICE)) / s;
    let intr = (delta(st, T_IRQ) + delta(st, T_SOFTIRQ)) / s;
    let kernel = (delta(st, T_KERNEL) + delta(st, T_STEAL)) / s;
    let io = delta(st, T_IOWAIT) / s;
    Resn {
        time_real: s / ticks,
        // Stock qperf computes this one in single precision.
        time_cpu: f64::from(cpu as f32 / st.no_ticks as f32),
        cpu_total: user + intr + kernel + io,
        cpu_user: user,
        cpu_intr: intr,
        cpu_idle: delta(st, T_IDLE) / s,
        cpu_kernel: kernel,
        cpu_io_wait: io,
    }
}

/// Merge the counters each side kept for the other, then compute. `l` is ours, `r` the
/// server's STAT; both are updated by the merge (the rows show the merged counters).
pub fn calc(l: &mut Stat, r: &mut Stat) -> Res {
    let (lc, rc) = (*l, *r);
    l.s.add(&rc.rem_s);
    l.r.add(&rc.rem_r);
    r.s.add(&lc.rem_s);
    r.r.add(&lc.rem_r);
    let mut res = Res { l: calc_node(l), r: calc_node(r), ..Res::default() };
    let no_msgs = l.r.msgs as f64 + r.r.msgs as f64;
    if no_msgs > 0.0 {
        res.latency = res.l.time_real / no_msgs;
    }
    let (lt, rt) = (res.l.time_real, res.r.time_real);
    let mid = (lt + rt) / 2.0;
    if lt == 0.0 || rt == 0.0 {
        return res;
    }
    let f = |x: u64| x as f64;
    // As stock qperf writes it: a lone side's count is divided by the other side's time.
    res.msg_rate = if r.r.msgs == 0 {
        f(l.r.msgs) / rt
    } else if l.r.msgs == 0 {
        f(r.r.msgs) / lt
    } else {
        (f(l.r.msgs) + f(r.r.msgs)) / mid
    };
    let both = |lv: u64, rv: u64| {
        if rv == 0 {
            f(lv) / lt
        } else if lv == 0 {
            f(rv) / rt
        } else {
            (f(lv) + f(rv)) / mid
        }
    };
    res.send_bw = both(l.s.bytes, r.s.bytes);
    res.recv_bw = both(l.r.bytes, r.r.bytes);
    let gb = 1e9;
    if l.s.bytes != 0 && l.r.bytes == 0 && r.s.bytes == 0 {
        res.send_cost = res.l.time_cpu * gb / f(l.s.bytes);
    } else if r.s.bytes != 0 && r.r.bytes == 0 && l.s.bytes == 0 {
        res.send_cost = res.r.time_cpu * gb / f(r.s.bytes);
    }
    if r.r.bytes != 0 && r.s.bytes == 0 && l.r.bytes == 0 {
        res.recv_cost = res.r.time_cpu * gb / f(r.r.bytes);
    } else if l.r.bytes != 0 && l.s.bytes == 0 && r.r.bytes == 0 {
        res.recv_cost = res.l.time_cpu * gb / f(l.r.bytes);
    }
    res
}

/// The `-vu`/`-vvu` rows: parameters the test used that the user set (or, at level 2, all
/// that the test used); `loc_`/`rem_` when the two sides differ.
pub fn show_used(t: &mut Table, pars: &Pars) {
    if t.verbosity.used == 0 {
        return;
    }
    for (name, p) in PAR_NAMES {
        let (l, r) = (pars.get(Side::Loc, p), pars.get(Side::Rem, p));
        if !l.inuse && !r.inuse {
            continue;
        }
        if t.verbosity.used < 2 && !l.set && !r.set {
            continue;
        }
        let c = Class::Used(1);
        let row = |t: &mut Table, n: &str, side: &super::options::ParInfo| match p.kind() {
            ParKind::Long => t.long(c, n, u64::from(side.val)),
            ParKind::Size => t.size(c, n, u64::from(side.val)),
            ParKind::Time => t.time(c, n, f64::from(side.val)),
            ParKind::Str => t.strn(c, n, &side.text),
        };
        let same = if p.kind() == ParKind::Str { l.text == r.text } else { l.val == r.val };
        if same {
            row(t, name, l);
        } else {
            row(t, &format!("loc_{name}"), l);
            row(t, &format!("rem_{name}"), r);
        }
    }
}

/// Every row of a finished test, in stock qperf's order.
pub fn show_info(t: &mut Table, measure: Measure, res: &Res, l: &Stat, r: &Stat, pars: &Pars, unify_nodes: bool) {
    let a = Class::Always;
    match measure {
        Measure::Latency => {
            t.time(a, "latency", res.latency);
            t.rate(Class::Stat(1), "msg_rate", res.msg_rate);
        }
        Measure::MsgRate => t.rate(a, "msg_rate", res.msg_rate),
        Measure::Bandwidth => {
            t.band(a, "bw", res.recv_bw);
            t.rate(Class::Stat(1), "msg_rate", res.msg_rate);
        }
        Measure::BandwidthSr => {
            t.band(a, "send_bw", res.send_bw);
            t.band(a, "recv_bw", res.recv_bw);
            t.rate(Class::Stat(1), "msg_rate", res.msg_rate);
        }
    }
    show_used(t, pars);
    t.cost(Class::Time(1), "send_cost", res.send_cost);
    t.cost(Class::Time(1), "recv_cost", res.recv_cost);
    show_rest(t, res, l, r, unify_nodes);
    if t.verbosity.debug {
        show_debug(t, "l", l);
        show_debug(t, "r", r);
    }
}

fn node_rows(t: &mut Table, p: &str, n: &Resn) {
    t.cpus(Class::Time(1), &format!("{p}_cpus_used"), n.cpu_total);
    t.cpus(Class::Time(2), &format!("{p}_cpus_user"), n.cpu_user);
    t.cpus(Class::Time(2), &format!("{p}_cpus_intr"), n.cpu_intr);
    t.cpus(Class::Time(2), &format!("{p}_cpus_kernel"), n.cpu_kernel);
    t.cpus(Class::Time(2), &format!("{p}_cpus_iowait"), n.cpu_io_wait);
    t.time(Class::Time(2), &format!("{p}_real_time"), n.time_real);
    t.time(Class::Time(2), &format!("{p}_cpu_time"), n.time_cpu);
}

/// Per-node rows: `send_`/`recv_` when one side only sends and the other only receives
/// (and not -un), else `loc_`/`rem_`.
fn show_rest(t: &mut Table, res: &Res, l: &Stat, r: &Stat, unify_nodes: bool) {
    let s2 = Class::Stat(2);
    let sr = if unify_nodes {
        None
    } else if l.s.bytes != 0 && r.s.bytes == 0 && r.r.bytes != 0 && l.r.bytes == 0 {
        Some(((&res.l, l), (&res.r, r)))
    } else if r.s.bytes != 0 && l.s.bytes == 0 && l.r.bytes != 0 && r.r.bytes == 0 {
        Some(((&res.r, r), (&res.l, l)))
    } else {
        None
    };
    if let Some(((ns, ss), (nr, sr))) = sr {
        node_rows(t, "send", ns);
        t.long(s2, "send_errors", ss.s.errs);
        t.size(s2, "send_bytes", ss.s.bytes);
        t.long(s2, "send_msgs", ss.s.msgs);
        t.long(s2, "send_max_cqe", u64::from(ss.max_cqes));
        node_rows(t, "recv", nr);
        t.long(s2, "recv_errors", sr.r.errs);
        t.size(s2, "recv_bytes", sr.r.bytes);
        t.long(s2, "recv_msgs", sr.r.msgs);
        t.long(s2, "recv_max_cqe", u64::from(sr.max_cqes));
    } else {
        for (p, n, st) in [("loc", &res.l, l), ("rem", &res.r, r)] {
            node_rows(t, p, n);
            t.long(s2, &format!("{p}_send_errors"), st.s.errs);
            t.long(s2, &format!("{p}_recv_errors"), st.r.errs);
            t.size(s2, &format!("{p}_send_bytes"), st.s.bytes);
            t.size(s2, &format!("{p}_recv_bytes"), st.r.bytes);
            t.long(s2, &format!("{p}_send_msgs"), st.s.msgs);
            t.long(s2, &format!("{p}_recv_msgs"), st.r.msgs);
            t.long(s2, &format!("{p}_max_cqe"), u64::from(st.max_cqes));
        }
    }
}

/// `-D`: the raw counters and clocks.
fn show_debug(t: &mut Table, p: &str, st: &Stat) {
    let d = Class::Debug;
    t.long(d, &format!("{p}_no_cpus"), u64::from(st.no_cpus));
    t.long(d, &format!("{p}_no_ticks"), u64::from(st.no_ticks));
    t.long(d, &format!("{p}_max_cqes"), u64::from(st.max_cqes));
    if st.no_ticks != 0 {
        let names = ["real", "user", "nice", "system", "idle", "iowait", "irq", "softirq", "steal"];
        for (i, n) in names.iter().enumerate() {
            t.time(d, &format!("{p}_timer_{n}"), delta(st, i) / f64::from(st.no_ticks));
        }
    }
    for (k, u) in [("s", st.s), ("r", st.r), ("rem_s", st.rem_s), ("rem_r", st.rem_r)] {
        t.size(d, &format!("{p}_{k}_no_bytes"), u.bytes);
        t.long(d, &format!("{p}_{k}_no_msgs"), u.msgs);
        t.long(d, &format!("{p}_{k}_no_errs"), u.errs);
    }
}

/// `--json` (ours): every figure unrounded, in base units (seconds, bytes, bytes/s, /s,
/// CPU-seconds per 10^9 bytes, fractions of a CPU), and the merged counters.
pub fn to_json(test: &str, measure: Measure, res: &Res, l: &Stat, r: &Stat, pars: &Pars) -> serde_json::Value {
    use serde_json::json;
    let node = |n: &Resn, st: &Stat| {
        // Double precision here (the text path keeps stock qperf's single-precision CPU time).
        let busy: f64 = (0..T_N).filter(|&i| i != T_REAL && i != T_IDLE).map(|i| delta(st, i)).sum();
        let cpu_s = if st.no_ticks == 0 || n.time_real == 0.0 { 0.0 } else { busy / f64::from(st.no_ticks) };
        json!({
            "real_time_s": n.time_real, "cpu_time_s": cpu_s,
            "cpus_used": n.cpu_total, "cpus_user": n.cpu_user, "cpus_intr": n.cpu_intr,
            "cpus_kernel": n.cpu_kernel, "cpus_iowait": n.cpu_io_wait, "cpus_idle": n.cpu_idle,
            "send_bytes": st.s.bytes, "send_msgs": st.s.msgs, "send_errors": st.s.errs,
            "recv_bytes": st.r.bytes, "recv_msgs": st.r.msgs, "recv_errors": st.r.errs,
            "max_cqe": st.max_cqes, "no_cpus": st.no_cpus,
        })
    };
    let finite = |v: f64| if v.is_finite() { json!(v) } else { serde_json::Value::Null };
    json!({
        "test": test,
        "measure": format!("{measure:?}"),
        "msg_size": pars.loc(Par::MsgSize),
        "latency_s": finite(res.latency),
        "msg_rate_per_s": finite(res.msg_rate),
        "send_bw_bytes_per_s": finite(res.send_bw),
        "recv_bw_bytes_per_s": finite(res.recv_bw),
        "send_cost_cpu_s_per_gb": finite(res.send_cost),
        "recv_cost_cpu_s_per_gb": finite(res.recv_cost),
        "loc": node(&res.l, l),
        "rem": node(&res.r, r),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::format::{Units, Verbosity};
    use crate::wire::Ustat;

    fn stat(ticks: u32, real: u64, busy: u64) -> Stat {
        let mut s = Stat { no_cpus: 2, no_ticks: ticks, ..Stat::default() };
        s.time_s[T_REAL] = 500;
        s.time_e[T_REAL] = 500 + real;
        s.time_e[T_USER] = busy;
        s.time_e[T_IDLE] = real;
        s
    }

    /// The fact sheet's check: 1.01 s over 413,863 messages is 2.44 us.
    #[test]
    fn latency_is_half_round_trip() {
        let mut l = stat(100, 101, 50);
        let mut r = stat(100, 100, 40);
        l.s = Ustat { bytes: 206_932, msgs: 206_932, errs: 0 };
        l.r = Ustat { bytes: 206_931, msgs: 206_931, errs: 0 };
        r.s = l.r;
        r.r = Ustat { bytes: 206_932, msgs: 206_932, errs: 0 };
        let res = calc(&mut l, &mut r);
        assert!((res.latency - 1.01 / 413_863.0).abs() < 1e-15);
        let mut t = Table::new(Units::default(), Verbosity::default());
        show_info(&mut t, Measure::Latency, &res, &l, &r, &Pars::new(), false);
        assert_eq!(t.render(), "    latency  =  2.44 us\n");
        assert!((res.l.cpu_total - 50.0 / 101.0).abs() < 1e-12);
    }

    /// tcp_bw: the client only sends, the server only receives → send_/recv_ rows; costs
    /// from the sender's and receiver's CPU time; two tick rates mixed.
    #[test]
    fn one_way_bandwidth_rows() {
        let mut l = stat(1_000_000, 2_000_000, 1_000_000);
        let mut r = stat(100, 200, 50);
        l.s = Ustat { bytes: 2_000_000_000, msgs: 30518, errs: 0 };
        r.r = Ustat { bytes: 1_999_900_000, msgs: 30516, errs: 0 };
        let res = calc(&mut l, &mut r);
        assert!((res.recv_bw - 1_999_900_000.0 / 2.0).abs() < 1e-3);
        assert!((res.send_cost - 1.0 * 1e9 / 2e9).abs() < 1e-9);
        assert!((res.recv_cost - 0.5 * 1e9 / 1_999_900_000.0).abs() < 1e-9);
        let mut t = Table::new(Units::default(), Verbosity { stat: 2, time: 1, ..Verbosity::default() });
        show_info(&mut t, Measure::Bandwidth, &res, &l, &r, &Pars::new(), false);
        let names: Vec<&str> = t.rows.iter().map(|r| r.name.as_str()).collect();
        assert_eq!(
            names,
            ["bw", "msg_rate", "send_cost", "recv_cost", "send_cpus_used", "send_bytes", "send_msgs", "recv_cpus_used", "recv_bytes", "recv_msgs"]
        );
        // 999.95 MB/s rounds to 4 integer digits: all shown, not rescaled.
        assert_eq!(t.rows[0].data, "1,000");
        assert_eq!(t.rows[0].unit, Some("MB/sec"));
        let mut t = Table::new(Units::default(), Verbosity { stat: 2, ..Verbosity::default() });
        show_info(&mut t, Measure::Bandwidth, &res, &l, &r, &Pars::new(), true);
        assert!(t.rows.iter().any(|r| r.name == "loc_send_bytes"));
    }

    #[test]
    fn json_has_unrounded_figures() {
        let mut l = stat(1_000_000, 1_000_000, 300_001);
        let mut r = stat(100, 100, 30);
        l.s = Ustat { bytes: 123_456_789, msgs: 1884, errs: 0 };
        r.r = l.s;
        let res = calc(&mut l, &mut r);
        let j = to_json("tcp_bw", Measure::Bandwidth, &res, &l, &r, &Pars::new());
        assert_eq!(j["test"], "tcp_bw");
        assert_eq!(j["recv_bw_bytes_per_s"].as_f64(), Some(123_456_789.0));
        assert_eq!(j["loc"]["cpu_time_s"].as_f64(), Some(0.300001));
        assert_eq!(j["loc"]["send_msgs"].as_u64(), Some(1884));
        assert_eq!(j["rem"]["recv_bytes"].as_u64(), Some(123_456_789));
        assert!(j["latency_s"].as_f64().unwrap() > 0.0);
    }

    #[test]
    fn zero_time_gives_no_rates() {
        let mut l = Stat::default();
        let mut r = Stat::default();
        l.s.bytes = 10;
        let res = calc(&mut l, &mut r);
        assert_eq!(res, Res::default());
    }

    #[test]
    fn used_rows_loc_rem_split() {
        let mut p = Pars::new();
        p.set_user(Side::Loc, Par::SockBufSize, "-lsb", 1000, "1000");
        p.set_default(Par::MsgSize, 65536);
        p.use_par(Par::SockBufSize);
        p.set_default(Par::Time, 2);
        let mut t = Table::new(Units::default(), Verbosity { used: 1, ..Verbosity::default() });
        show_used(&mut t, &p);
        assert_eq!(t.render(), "    loc_sock_buf_size  =  1 KB\n");
        let mut t = Table::new(Units::default(), Verbosity { used: 2, ..Verbosity::default() });
        show_used(&mut t, &p);
        let names: Vec<&str> = t.rows.iter().map(|r| r.name.as_str()).collect();
        assert_eq!(names, ["msg_size", "loc_sock_buf_size", "time"]);
    }
}
