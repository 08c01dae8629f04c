//! The BW loops against the in-memory model of a device (`engine::model`).

use super::super::model::{Model, ModelSide};
use super::*;
use std::sync::atomic::Ordering;

fn cfg(opcode: WrOpcode, iters: u64, tx: u32, cq_mod: u32, post_list: u32) -> BwConfig {
    BwConfig {
        iters,
        tx_depth: tx,
        rx_depth: 512,
        cq_mod,
        post_list,
        size: 64,
        opcode,
        inline: false,
        wait: WaitMode::Busy,
        record_peak: true,
        duration: None,
        stall_timeout: Duration::from_secs(2),
        cycle_buffer: 4096,
        cache_line: 64,
        compare_add: 0,
        swap: 0,
        cpu_probe: None,
        rate_limit: None,
    }
}

fn targets(model: &Model, nq: usize) -> Vec<QpTarget> {
    (0..nq)
        .map(|q| QpTarget {
            lkey: 1,
            local_addr: model.local_addr(q),
            recv_addr: model.local_addr(q) + 8192,
            remote: RemoteAddr { addr: model.remote_addr(q), rkey: 2 },
            ud: None,
            remote_srqn: 0,
        })
        .collect()
}

#[test]
fn write_bw_completes_all_iterations_with_moderation() {
    let mut m = Model::new(ModelSide::Sender, 1);
    let t = targets(&m, 1);
    let c = cfg(WrOpcode::RdmaWrite, 1000, 128, 100, 1);
    let s = run_sender(&mut m, &c, &t, &AtomicBool::new(false)).unwrap();
    assert_eq!(s.messages, 1000);
    assert_eq!(m.posted(0), 1000);
    // signaled: every 100th, plus the last
    assert_eq!(m.signaled(0), 10);
    assert!(m.max_outstanding(0) <= 128);
    assert!(s.tposted.iter().all(|&t| t != 0));
    assert!(s.tcompleted[99] != 0 && s.tcompleted[999] != 0);
    assert!(s.elapsed() > 0);
}

#[test]
fn partial_last_group_is_signaled_and_counted() {
    let mut m = Model::new(ModelSide::Sender, 2);
    let t = targets(&m, 2);
    let c = cfg(WrOpcode::RdmaWrite, 250, 64, 100, 1);
    let s = run_sender(&mut m, &c, &t, &AtomicBool::new(false)).unwrap();
    assert_eq!(s.messages, 500);
    for q in 0..2 {
        assert_eq!(m.posted(q), 250);
        assert_eq!(m.signaled(q), 4); // cq_mod clamped to 64: #63, #127, #191 and the last (#249)
        assert!(m.max_outstanding(q) <= 64);
    }
}

#[test]
fn post_list_posts_chains() {
    let mut m = Model::new(ModelSide::Sender, 1);
    let t = targets(&m, 1);
    let c = cfg(WrOpcode::Send, 640, 128, 8, 8);
    let s = run_sender(&mut m, &c, &t, &AtomicBool::new(false)).unwrap();
    assert_eq!(s.messages, 640);
    assert_eq!(m.post_calls(0), 80);
    assert_eq!(m.signaled(0), 80);
}

#[test]
fn remote_addresses_stay_in_the_cycle_buffer() {
    let mut m = Model::new(ModelSide::Sender, 1);
    let t = targets(&m, 1);
    let c = cfg(WrOpcode::RdmaWrite, 300, 16, 1, 1);
    run_sender(&mut m, &c, &t, &AtomicBool::new(false)).unwrap();
    let base = m.remote_addr(0);
    assert!(m.remote_addrs(0).iter().all(|&a| a >= base && a + 64 <= base + 4096));
    assert_eq!(m.remote_addrs(0)[1] - m.remote_addrs(0)[0], 64);
}

#[test]
fn completion_error_is_named_with_cause() {
    let mut m = Model::new(ModelSide::Sender, 1);
    m.fail_after(5, uverbs::wr::WcStatus::RetryExcErr);
    let t = targets(&m, 1);
    let c = cfg(WrOpcode::RdmaWrite, 100, 16, 1, 1);
    let e = run_sender(&mut m, &c, &t, &AtomicBool::new(false)).unwrap_err();
    let s = e.to_string();
    assert!(s.contains("RETRY_EXC_ERR") && s.contains("GID"), "{s}");
}

#[test]
fn dead_peer_stalls_with_a_bounded_wait() {
    let mut m = Model::new(ModelSide::Sender, 1);
    m.go_silent();
    let t = targets(&m, 1);
    let mut c = cfg(WrOpcode::RdmaWrite, 100, 16, 1, 1);
    c.stall_timeout = Duration::from_millis(200);
    let t0 = std::time::Instant::now();
    let e = run_sender(&mut m, &c, &t, &AtomicBool::new(false)).unwrap_err();
    assert!(matches!(e, EngineError::Stalled { .. }), "{e}");
    assert!(t0.elapsed() < Duration::from_secs(5));
}

#[test]
fn duration_mode_counts_only_the_sample_window() {
    let mut m = Model::new(ModelSide::Sender, 1);
    let t = targets(&m, 1);
    let mut c = cfg(WrOpcode::RdmaWrite, 0, 32, 1, 1);
    c.record_peak = false;
    // A sample window long enough that a loaded machine cannot deschedule the loop for all of it.
    c.duration = Some(DurationWindow { total: Duration::from_millis(1200), margin: Duration::from_millis(100) });
    let s = run_sender(&mut m, &c, &t, &AtomicBool::new(false)).unwrap();
    let (a, b) = s.window.unwrap();
    assert!(b > a);
    assert!(s.messages > 0 && s.messages < m.posted(0));
}

#[test]
fn sample_clock_walks_the_states_in_order() {
    let w = DurationWindow { total: Duration::from_secs(4), margin: Duration::from_secs(1) };
    let s = TICKS_PER_SEC;
    let mut c = SampleClock::new(100, w);
    assert_eq!(c.advance(100), None);
    assert!(!c.sampling());
    assert_eq!(c.advance(100 + s), Some(Transition::Sample));
    assert!(c.sampling());
    assert_eq!(c.advance(100 + 2 * s), None);
    assert_eq!(c.advance(100 + 3 * s), Some(Transition::StopSample));
    assert!(!c.sampling());
    assert_eq!(c.advance(100 + 4 * s - 1), None);
    assert_eq!(c.advance(100 + 4 * s), Some(Transition::End));
    assert_eq!(c.advance(u64::MAX), None);
    // A late caller still sees every transition, one per call, in order.
    let mut c = SampleClock::new(0, w);
    assert_eq!(c.advance(10 * s), Some(Transition::Sample));
    assert_eq!(c.advance(10 * s), Some(Transition::StopSample));
    assert_eq!(c.advance(10 * s), Some(Transition::End));
    // Margin 0: SAMPLE at the start; no overflow near the end of the clock.
    let mut c = SampleClock::new(u64::MAX - 5, DurationWindow { total: Duration::from_secs(1), margin: Duration::ZERO });
    assert_eq!(c.advance(u64::MAX - 5), Some(Transition::Sample));
}

static PROBES: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
fn counting_probe() -> Option<(u64, u64)> {
    let n = PROBES.fetch_add(1, Ordering::SeqCst);
    Some((n, 1000 + n))
}

#[test]
fn cpu_is_read_at_sample_and_stop_sample_only() {
    let mut m = Model::new(ModelSide::Sender, 1);
    let t = targets(&m, 1);
    let mut c = cfg(WrOpcode::RdmaWrite, 0, 32, 1, 1);
    c.record_peak = false;
    c.cpu_probe = Some(counting_probe);
    c.duration = Some(DurationWindow { total: Duration::from_millis(300), margin: Duration::from_millis(100) });
    let s = run_sender(&mut m, &c, &t, &AtomicBool::new(false)).unwrap();
    assert_eq!(PROBES.load(Ordering::SeqCst), 2);
    assert_eq!(s.cpu, [Some((0, 1000)), Some((1, 1001))]);
    // Without --cpu_util nothing is read.
    c.cpu_probe = None;
    let s = run_sender(&mut m, &c, &t, &AtomicBool::new(false)).unwrap();
    assert_eq!(s.cpu, [None, None]);
}

#[test]
fn run_infinitely_reports_every_period_until_stopped() {
    let mut m = Model::new(ModelSide::Sender, 1);
    let t = targets(&m, 1);
    let c = cfg(WrOpcode::RdmaWrite, 5, 32, 4, 1);
    let stop = AtomicBool::new(false);
    let mut reports: Vec<(u64, u64)> = Vec::new();
    let mut report = |n: u64, ticks: u64| {
        reports.push((n, ticks));
        if reports.len() == 3 {
            stop.store(true, Ordering::Relaxed);
        }
    };
    let e = run_sender_infinitely(&mut m, &c, &t, &stop, Duration::from_millis(50), &mut report).unwrap_err();
    assert_eq!(e, EngineError::Interrupted);
    assert_eq!(reports.len(), 3);
    // Far more than -n 5: the loop ignores iterations; each report covers about one period.
    assert!(reports.iter().all(|&(n, ticks)| n > 5 && ticks >= TICKS_PER_SEC / 20), "{reports:?}");
    assert!(m.max_outstanding(0) <= 32);
}

#[test]
fn receiver_counts_and_reposts() {
    let mut m = Model::new(ModelSide::Receiver { incoming: 300 }, 1);
    let t = targets(&m, 1);
    let mut c = cfg(WrOpcode::Send, 300, 128, 1, 1);
    c.rx_depth = 64;
    let posted = prepost_receives(&mut m, &c, &t, 64).unwrap();
    assert_eq!(posted, vec![64]);
    let s = run_receiver(&mut m, &c, &t, 64, posted, &AtomicBool::new(false)).unwrap();
    assert_eq!(s.messages, 300);
    assert_eq!(m.recvs_posted(0), 300);
    assert!(s.window.is_some());
}

#[test]
fn duplex_send_sends_and_receives_on_both_roles() {
    for server in [false, true] {
        let mut m = Model::new(ModelSide::Receiver { incoming: 300 }, 1);
        let t = targets(&m, 1);
        let mut c = cfg(WrOpcode::Send, 300, 64, 16, 1);
        c.rx_depth = 64;
        c.record_peak = false;
        let posted = prepost_receives(&mut m, &c, &t, 64).unwrap();
        let s = run_duplex_send(&mut m, &c, &t, 64, posted, server, &AtomicBool::new(false)).unwrap();
        assert_eq!(s.messages, 300);
        assert_eq!(m.posted(0), 300);
        assert_eq!(m.recvs_posted(0), 300);
        assert!(m.max_outstanding(0) <= 64);
        let (a, b) = s.window.unwrap();
        assert!(b >= a);
    }
}

#[test]
fn duplex_send_stalls_with_a_bounded_wait() {
    let mut m = Model::new(ModelSide::Receiver { incoming: 0 }, 1);
    let t = targets(&m, 1);
    let mut c = cfg(WrOpcode::Send, 100, 16, 1, 1);
    c.rx_depth = 16;
    c.stall_timeout = Duration::from_millis(200);
    let posted = prepost_receives(&mut m, &c, &t, 64).unwrap();
    let e = run_duplex_send(&mut m, &c, &t, 64, posted, true, &AtomicBool::new(false)).unwrap_err();
    assert!(matches!(e, EngineError::Stalled { .. }), "{e}");
}

#[test]
fn rate_limiter_posts_bursts_separated_by_the_gap() {
    let mut m = Model::new(ModelSide::Sender, 2);
    let t = targets(&m, 2);
    let mut c = cfg(WrOpcode::RdmaWrite, 20, 64, 1, 1);
    // A gap far longer than ten posts take, even on a loaded host where the thread may lose
    // the CPU for tens of ms: the last check tells "no gap inside a burst" from "a gap".
    let gap = 100 * TICKS_PER_SEC / 1000;
    c.rate_limit = Some(RateLimiter { burst: 10, gap_ticks: gap });
    let s = run_sender(&mut m, &c, &t, &AtomicBool::new(false)).unwrap();
    assert_eq!(s.messages, 40);
    assert_eq!((m.posted(0), m.posted(1)), (20, 20));
    // One burst is 10 posts (across the QPs); each starts one gap after the previous one's
    // start (the post is stamped a little after the limiter read the clock: 1 ms slack).
    let slack = TICKS_PER_SEC / 1000;
    for k in 1..4 {
        let d = s.tposted[10 * k] - s.tposted[10 * (k - 1)];
        assert!(d + slack >= gap, "burst {k} began {d} ticks after the previous one");
    }
    assert!(s.tposted[30] - s.tposted[0] + slack >= 3 * gap);
    // Within a burst the posts are back to back (no gap between them).
    assert!(s.tposted[9] - s.tposted[0] < gap);
}

#[test]
fn rate_limiter_in_event_mode_does_not_sleep_through_the_gap() {
    let mut m = Model::new(ModelSide::Sender, 1);
    let t = targets(&m, 1);
    let mut c = cfg(WrOpcode::RdmaWrite, 30, 64, 1, 1);
    c.wait = WaitMode::Event;
    c.stall_timeout = Duration::from_millis(500);
    c.rate_limit = Some(RateLimiter { burst: 10, gap_ticks: TICKS_PER_SEC / 50 });
    let s = run_sender(&mut m, &c, &t, &AtomicBool::new(false)).unwrap();
    assert_eq!(s.messages, 30);
}

#[test]
fn duplex_send_duration_counts_both_directions_in_the_window() {
    for server in [false, true] {
        let mut m = Model::new(ModelSide::Receiver { incoming: u64::MAX / 2 }, 1);
        let t = targets(&m, 1);
        let mut c = cfg(WrOpcode::Send, 0, 64, 16, 1);
        c.rx_depth = 64;
        c.record_peak = false;
        c.duration = Some(DurationWindow { total: Duration::from_millis(1200), margin: Duration::from_millis(100) });
        let posted = prepost_receives(&mut m, &c, &t, 64).unwrap();
        let s = run_duplex_send(&mut m, &c, &t, 64, posted, server, &AtomicBool::new(false)).unwrap();
        let (a, b) = s.window.unwrap();
        assert!(b > a);
        // Receives and send completions of the window, fewer than all that happened.
        assert!(s.messages > 0, "server={server}");
        assert!(s.messages < m.posted(0) + m.recvs_posted(0), "server={server}");
        assert!(m.max_outstanding(0) <= 64);
    }
}

#[test]
fn long_windows_do_not_overflow() {
    assert_eq!(DurationWindow::ticks(Duration::from_secs(60)), 60 * TICKS_PER_SEC);
    assert_eq!(DurationWindow::ticks(Duration::from_secs(24 * 3600)), 24 * 3600 * TICKS_PER_SEC);
    assert_eq!(DurationWindow::ticks(Duration::from_millis(1)), TICKS_PER_SEC / 1000);
    assert_eq!(DurationWindow::ticks(Duration::MAX), u64::MAX);
}

#[test]
fn interrupted_run_stops() {
    let mut m = Model::new(ModelSide::Sender, 1);
    let t = targets(&m, 1);
    let c = cfg(WrOpcode::RdmaWrite, 100, 16, 1, 1);
    let e = run_sender(&mut m, &c, &t, &AtomicBool::new(true)).unwrap_err();
    assert_eq!(e, EngineError::Interrupted);
}

#[test]
fn xrc_every_send_names_its_targets_srqn() {
    // -c XRC: each QP's sends carry the SRQ number of the peer key it targets, in single
    // posts, post lists and the duplex loop alike.
    for post_list in [1, 8] {
        let mut m = Model::new(ModelSide::Sender, 2);
        let mut t = targets(&m, 2);
        t[0].remote_srqn = 0x00ab_cdef;
        t[1].remote_srqn = 0x0000_0042;
        let c = cfg(WrOpcode::Send, 64, 16, 8, post_list);
        run_sender(&mut m, &c, &t, &AtomicBool::new(false)).unwrap();
        assert_eq!(m.remote_srqns(0).len(), 64);
        assert!(m.remote_srqns(0).iter().all(|&n| n == 0x00ab_cdef));
        assert!(m.remote_srqns(1).iter().all(|&n| n == 0x42) && m.remote_srqns(1).len() == 64);
    }
    let mut m = Model::new(ModelSide::Receiver { incoming: 50 }, 1);
    let mut t = targets(&m, 1);
    t[0].remote_srqn = 7;
    let mut c = cfg(WrOpcode::Send, 50, 16, 4, 1);
    c.rx_depth = 16;
    c.record_peak = false;
    let posted = prepost_receives(&mut m, &c, &t, 64).unwrap();
    run_duplex_send(&mut m, &c, &t, 64, posted, false, &AtomicBool::new(false)).unwrap();
    assert_eq!(m.remote_srqns(0), vec![7u32; 50].as_slice());
}

#[test]
fn srd_read_bw_names_the_address_and_signals_every_read() {
    // -c SRD (CQ moderation 1): every read is signaled and carries the AH, the peer's QPN and
    // perftest's QKEY besides its rkey and cycling remote address.
    let ud = uverbs::wr::UdDest { ah: 7, remote_qpn: 0x99, remote_qkey: 0x1111_1111 };
    let mut m = Model::new(ModelSide::Sender, 2);
    let t: Vec<QpTarget> = targets(&m, 2).into_iter().map(|t| QpTarget { ud: Some(ud), ..t }).collect();
    let c = cfg(WrOpcode::RdmaRead, 300, 16, 1, 1);
    let s = run_sender(&mut m, &c, &t, &AtomicBool::new(false)).unwrap();
    assert_eq!(s.messages, 600);
    for (q, tq) in t.iter().enumerate() {
        assert_eq!((m.posted(q), m.signaled(q)), (300, 300));
        assert!(m.ud_dests(q).iter().all(|d| *d == Some(ud)));
        assert!(m.remote_addrs(q).iter().all(|&a| a >= tq.remote.addr && a < tq.remote.addr + 4096));
    }
}
