//! perftest's `force_dependecies()`: the values that follow from other options, the notes it
//! prints on the way, and the combinations it refuses.

use super::state::State;
use super::{aes, conflict, cqe, dc, narrow, not_multiple, rate, srd, xrc, ParamError, Params};
use super::{Connection, Output, RateLimitType, Role, TestKind, TestMethod, TestType, Verb};
use super::{MAX_SIZE, MSG_SIZE_CQ_MOD_LIMIT, RESULT_LINE};

/// What perftest 6.29 prints when a run cannot measure the BW peak.
const NO_PEAK_WARNING: &str = " WARNING: BW peak won't be measured in this run.\n";

/// perftest's `force_dependecies()`, in its order: each step holds a run of consecutive rules,
/// and the steps run in perftest's order, so the first rule that fails is still the one whose
/// message the user sees.
pub(super) fn derive(p: &mut Params, st: &State) -> Result<(), ParamError> {
    if st.run_infinitely {
        p.test_method = TestMethod::Infinitely;
    }
    let bw = p.kind == TestKind::Bw;
    // perftest 6.29 says why the peak column will read 0 (6.06 is silent).
    let peak_note = p.persona.parser_notes();

    depths_for_iterations(p);
    cq_moderation_for_size(p);
    size_rules(p)?;
    srq_rules(p)?;
    dualport_rules(p, bw)?;
    post_list_rules(p, bw)?;
    duration_rules(p, bw, peak_note)?;
    // -g: perftest sets GID index 0 here, but on RoCE its GID lookup then picks the best index
    // anyway (the user did not give -x), so the automatic choice stands; on IB, -g is refused.
    rdma_cm_rules(p)?;
    multicast_rules(p)?;
    send_server_no_peak(p, bw, peak_note);
    run_infinitely_rules(p, bw, peak_note)?;
    xrc::force_dependencies(p)?;
    rate_limit_rules(p, st, bw)?;
    null_mr_rule(p)?;
    report_rules(p, bw)?;
    even_rx_depth_and_long_runs(p, bw, peak_note);
    margin_and_vector_rules(p)?;

    cqe::polling(p);
    dc::dependencies(p, st.dci_active_given)?;
    srd::dependencies(p)?;
    aes::dependencies(p)?;
    super::gpu::dependencies(p)?;
    if p.buf.numa_node.is_some() && p.buf.pin_cores.is_some() {
        return Err(conflict("--numa_node, --pin_cores", "--numa_node and --pin_cores cannot be used together"));
    }
    Ok(())
}

/// WRITE needs one receive; in iteration mode the queues are no deeper than the iterations,
/// and UD/UC size the receive queue from them (at least 100 with an SRQ, the default up to 16000).
fn depths_for_iterations(p: &mut Params) {
    if p.verb == Verb::Write {
        p.rx_depth = 1;
    }

    if p.test_method != TestMethod::Infinitely && p.test_type == TestType::Iterations {
        if u64::from(p.tx_depth) > p.iters {
            p.tx_depth = narrow(p.iters as i64);
        }
        if p.verb.has_recv_comp() && u64::from(p.rx_depth) > p.iters {
            p.rx_depth = narrow(p.iters as i64);
        }
        if matches!(p.connection, Connection::Ud | Connection::Uc) {
            if p.use_srq && p.iters <= 100 {
                p.rx_depth = 100;
            }
            if p.rx_depth == 512 {
                p.rx_depth = p.iters.min(16000) as u32;
            }
        }
    }
}

/// Large messages: no CQ moderation unless the user asked for it (then only a warning); the
/// moderation never exceeds the send queue.
fn cq_moderation_for_size(p: &mut Params) {
    if p.size > MSG_SIZE_CQ_MOD_LIMIT
        && p.connection != Connection::Ud
        && p.test_method != TestMethod::All
        && !p.use_event
    {
        if !p.cq_mod_requested {
            p.cq_mod = 1;
        } else if p.cq_mod > 1 {
            p.notice_out(RESULT_LINE);
            p.notice_out("Warning: Large message requested and CQ moderation enabled\n");
            p.notice_out("Warning: It can lead to inaccurate results\n");
        }
    }

    if p.cq_mod > p.tx_depth {
        p.cq_mod = p.tx_depth;
    }
}

/// READ and ATOMIC send nothing inline; `-a` runs up to the largest size; ATOMIC is 8 bytes.
fn size_rules(p: &mut Params) -> Result<(), ParamError> {
    if matches!(p.verb, Verb::Read | Verb::Atomic) {
        p.inline_size = Some(0);
    }

    if p.test_method == TestMethod::All {
        p.size = MAX_SIZE;
    }

    if p.verb == Verb::Atomic && p.size != 8 {
        let opt = if p.test_method == TestMethod::All {
            "-a/--all"
        } else {
            "-s/--size"
        };
        return Err(conflict(
            opt,
            "Message size cannot be changed for Atomic tests",
        ));
    }
    Ok(())
}

/// `--use-srq`: SEND tests only, and deep enough for every QP.
fn srq_rules(p: &Params) -> Result<(), ParamError> {
    if p.use_srq && !p.verb.has_recv_comp() {
        return Err(conflict(
            "--use-srq",
            "Using SRQ only available in SEND tests",
        ));
    }
    if p.use_srq && p.num_qps > p.rx_depth {
        return Err(conflict(
            "--use-srq, -q/--qp, -r/--rx-depth",
            "Using SRQ depth should be greater than number of QPs",
        ));
    }
    Ok(())
}

/// `-O` doubles the QPs; BW tests only, no multicast.
fn dualport_rules(p: &mut Params, bw: bool) -> Result<(), ParamError> {
    if p.dev.dualport {
        p.num_qps *= 2;
        if !bw {
            return Err(conflict(
                "-O/--dualport",
                "Dual-port mode only supports BW tests",
            ));
        }
        if p.use_mcg {
            return Err(conflict(
                "-O/--dualport, -g/--mcg",
                "Dual-port mode not supported in multicast feature",
            ));
        }
    }
    Ok(())
}

/// `-l` and `--recv_post_list`: BW tests only, dividing the iterations (and `-l` sets or must
/// be a multiple of the CQ moderation).
fn post_list_rules(p: &mut Params, bw: bool) -> Result<(), ParamError> {
    if p.post_list > 1 {
        if !bw {
            return Err(conflict(
                "-l/--post_list",
                "Post list is supported in BW tests only",
            ));
        }
        if p.test_type == TestType::Iterations && not_multiple(p.iters, u64::from(p.post_list)) {
            return Err(conflict(
                "-l/--post_list, -n/--iters",
                "Number of iterations must be a multiple of post list size",
            ));
        }
        if !p.cq_mod_requested {
            p.cq_mod = p.post_list;
            p.notice_out(RESULT_LINE);
            p.notice_out("Post List requested - CQ moderation will be the size of the post list\n");
        } else if not_multiple(u64::from(p.post_list), u64::from(p.cq_mod)) {
            return Err(conflict(
                "-l/--post_list, -Q/--cq-mod",
                "Post list size must be a multiple of CQ moderation",
            ));
        }
    }
    if p.recv_post_list > 1 {
        if !bw {
            return Err(conflict(
                "--recv_post_list",
                "Receive post list is supported in BW tests only",
            ));
        }
        if p.test_type == TestType::Iterations && not_multiple(p.iters, u64::from(p.recv_post_list))
        {
            return Err(conflict(
                "--recv_post_list, -n/--iters",
                "Number of iterations must be a multiple of receive post list size",
            ));
        }
    }
    Ok(())
}

/// `-D`: no iteration count, no peak, no events, no `-a`; CPU utilization needs it.
fn duration_rules(p: &mut Params, bw: bool, peak_note: bool) -> Result<(), ParamError> {
    if p.test_type == TestType::Duration {
        p.iters = 0;
        if peak_note && !p.no_peak && bw {
            p.notice_out(NO_PEAK_WARNING);
        }
        p.no_peak = true;
        if p.use_event {
            return Err(conflict(
                "-D/--duration, -e/--events",
                "Duration mode doesn't work with events",
            ));
        }
        if p.test_method == TestMethod::All {
            return Err(conflict(
                "-D/--duration, -a/--all",
                "Duration mode currently doesn't support running on all sizes",
            ));
        }
    }
    if p.test_type != TestType::Duration && p.report.cpu_util {
        p.notice_out(RESULT_LINE);
        p.notice_err(" CPU Utilization works only with Duration mode.\n");
    }
    Ok(())
}

/// `-R` (not with UC, multicast or dual port), `-T` (rdma_cm only), `--hop_limit` (RawEth only).
fn rdma_cm_rules(p: &mut Params) -> Result<(), ParamError> {
    if p.conn.work_rdma_cm {
        if p.connection == Connection::Uc {
            return Err(conflict(
                "-R/--rdma_cm, -c UC",
                "UC is not supported in librdmacm",
            ));
        }
        if p.use_mcg {
            return Err(conflict(
                "-R/--rdma_cm, -g/--mcg",
                "Perftest still doesn't support Multicast with rdma_cm",
            ));
        }
        if p.dev.dualport {
            return Err(conflict(
                "-R/--rdma_cm, -O/--dualport",
                "Perftest still doesn't support Dual Port with rdma_cm",
            ));
        }
        p.conn.use_rdma_cm = true;
    } else if p.conn.tos.is_some() {
        return Err(conflict(
            "-T/--tos",
            "TOS only valid for rdma_cm based QP (add -R) and RawEth QP",
        ));
    }

    if p.conn.hop_limit != 64 {
        return Err(conflict(
            "-L/--hop_limit",
            "Hop limit only valid for RawEth QP",
        ));
    }
    Ok(())
}

/// `-g`: UD, one QP, not bidirectional.
fn multicast_rules(p: &mut Params) -> Result<(), ParamError> {
    if p.use_mcg {
        p.connection = Connection::Ud;
        if p.duplex {
            return Err(conflict(
                "-g/--mcg, -b/--bidirectional",
                "Bidirectional mode not supported in multicast",
            ));
        }
        if p.num_qps > 1 {
            return Err(conflict(
                "-g/--mcg, -q/--qp",
                "Only 1 QP supported in multicast",
            ));
        }
    }
    Ok(())
}

/// The server of a unidirectional SEND BW test only receives: it has no peak to measure.
fn send_server_no_peak(p: &mut Params, bw: bool, peak_note: bool) {
    if p.verb.has_recv_comp() && bw && p.machine == Role::Server && !p.duplex {
        if peak_note && !p.no_peak {
            p.notice_out(NO_PEAK_WARNING);
        }
        p.no_peak = true;
    }
}

/// `--run_infinitely`: a duration run without peak; BW only, no events, no bidirectional
/// SEND, no rate limit.
fn run_infinitely_rules(p: &mut Params, bw: bool, peak_note: bool) -> Result<(), ParamError> {
    if p.test_method == TestMethod::Infinitely {
        if peak_note && !p.no_peak && bw {
            p.notice_out(NO_PEAK_WARNING);
        }
        p.no_peak = true;
        p.test_type = TestType::Duration;
        if p.use_event {
            return Err(conflict(
                "--run_infinitely, -e/--events",
                "run_infinitely does not support events feature yet",
            ));
        }
        if !bw {
            return Err(conflict(
                "--run_infinitely",
                "run_infinitely exists only in BW tests for now",
            ));
        }
        if p.duplex && p.verb.has_recv_comp() {
            return Err(conflict(
                "--run_infinitely, -b/--bidirectional",
                "run_infinitely mode is not supported in SEND Bidirectional BW test",
            ));
        }
        if p.rate.limit_type != RateLimitType::Disabled {
            return Err(conflict(
                "--run_infinitely, --rate_limit",
                "run_infinitely does not support rate limit feature yet",
            ));
        }
    }
    Ok(())
}

/// `--burst_size`, `--typical_pkt_size` and `--rate_limit_type`, then the sizes they allow.
fn rate_limit_rules(p: &mut Params, st: &State, bw: bool) -> Result<(), ParamError> {
    if p.rate.burst_size > 0 && p.rate.limit_type == RateLimitType::Disabled {
        return Err(conflict(
            "--burst_size",
            "Can't enable burst mode when rate limiter is off",
        ));
    }
    if p.rate.burst_size == 0 {
        if p.rate.limit_type == RateLimitType::Sw {
            let t = format!(" Setting burst size to tx depth = {}\n", p.tx_depth);
            p.notice_err(&t);
        }
        if p.rate.limit_type != RateLimitType::Pp {
            p.rate.burst_size = p.tx_depth;
        }
    }
    if p.rate.typical_pkt_size != 0 && p.rate.limit_type != RateLimitType::Pp {
        return Err(conflict(
            "--typical_pkt_size",
            "Typical packet size only supports PP rate limiter",
        ));
    }
    match p.rate.limit_type {
        RateLimitType::Disabled => {}
        RateLimitType::Sw => {
            if !bw || p.verb == Verb::Atomic || (p.verb.has_recv_comp() && p.duplex) {
                return Err(conflict(
                    "--rate_limit_type SW",
                    "SW Rate limiter can't be executed on non-BW, ATOMIC or bidirectional SEND tests",
                ));
            }
            if !st.rate_limit_given {
                return Err(conflict(
                    "--rate_limit_type SW",
                    "Must specify a rate limit (--rate_limit=<rate>)",
                ));
            }
        }
        RateLimitType::Hw => {
            let text = st.rate_limit_text.clone();
            rate::check_hw(p, text.as_deref(), st.rate_limit_type_given)?;
        }
        RateLimitType::Pp => {
            return Err(conflict(
                "--rate_limit_type PP",
                "Packet Pacing is only supported for Raw Ethernet",
            ));
        }
    }
    rate::check_sizes(p)?;
    Ok(())
}

/// `--use-null-mr`: RDMA verbs only.
fn null_mr_rule(p: &Params) -> Result<(), ParamError> {
    // perftest 6.13+ (6.06 has no --use-null-mr): the null MR replaces the data MR's keys,
    // which only the RDMA verbs can use.
    if p.buf.use_null_mr && !matches!(p.verb, Verb::Write | Verb::WriteImm | Verb::Read) {
        return Err(conflict("--use-null-mr", "Perftest supports using a null memory region with write/read verbs only"));
    }
    Ok(())
}

/// `--output`, `--latency_gap`, the default margin of `-D`, `--report-per-port`.
fn report_rules(p: &mut Params, bw: bool) -> Result<(), ParamError> {
    if p.report.output != Output::Full {
        if bw && !matches!(p.report.output, Output::Bandwidth | Output::MessageRate) {
            return Err(conflict(
                "--output",
                "Output verbosity level for BW can be: bandwidth, message_rate",
            ));
        }
        if !bw && p.report.output != Output::Latency {
            return Err(conflict(
                "--output",
                "Output verbosity level for LAT can be: latency",
            ));
        }
    }

    if p.buf.latency_gap > 0 && bw {
        return Err(conflict(
            "--latency_gap",
            "Latency gap feature is only for latency tests",
        ));
    }

    if p.test_type == TestType::Duration && p.margin.is_none() {
        p.margin = Some(p.duration / 4);
    }

    if p.report.per_port && (p.test_type != TestType::Duration || !p.dev.dualport) {
        return Err(conflict(
            "--report-per-port",
            "report per port feature work only with Duration (-D) and Dualport (-O)",
        ));
    }
    Ok(())
}

/// Receivers keep an even receive queue; long BW iteration runs measure no peak.
fn even_rx_depth_and_long_runs(p: &mut Params, bw: bool, peak_note: bool) {
    if p.verb.has_recv_comp() && p.rx_depth % 2 == 1 && p.test_method == TestMethod::Regular {
        p.rx_depth += 1;
    }

    if p.test_type == TestType::Iterations && p.iters > 20000 && bw {
        if peak_note && !p.no_peak {
            p.notice_out(NO_PEAK_WARNING);
        }
        p.no_peak = true;
    }
}

/// `-D` must be more than twice `-f`; `-X` needs `-e`.
fn margin_and_vector_rules(p: &Params) -> Result<(), ParamError> {
    let margin = p.margin.map_or(-1, i64::from);
    if i64::from(p.duration) <= 2 * margin {
        return Err(conflict(
            "-D/--duration, -f/--margin",
            "please check that DURATION > 2*MARGIN",
        ));
    }

    if !p.use_event && p.eq_num.is_some() {
        return Err(conflict(
            "-X/--vector",
            "Events (-e) must be enabled to select a completion vector",
        ));
    }
    Ok(())
}
