//! perftest command-line compatibility, continued: defaults, derived values, invalid
//! combinations, value ranges, the deterministic fuzz loop, DC, SRQ depth and AES-XTS (the help
//! texts, every option and the spellings are in params.rs).

use perftest::params::{
    AtomicType, Connection, ErrorKind, LinkType, Output, ParseOutcome, RateLimitType, ReportFormat, Role, TestKind,
    TestMethod, TestType, Tool, Verb,
};

mod common;
use common::{err, parse, run};

// ---------------------------------------------------------------------------------------------
// Defaults and derived values

#[test]
fn defaults_per_tool() {
    // (tool, iters, size, tx, rx, cq_mod, inline, kind)
    type Row = (Tool, u64, u64, u32, u32, u32, Option<u32>, TestKind);
    let table: &[Row] = &[
        (Tool::WriteBw, 5000, 65536, 128, 1, 1, None, TestKind::Bw),
        (Tool::ReadBw, 1000, 65536, 128, 1, 1, Some(0), TestKind::Bw),
        (Tool::SendBw, 1000, 65536, 128, 512, 1, None, TestKind::Bw),
        (Tool::AtomicBw, 1000, 8, 128, 1, 100, Some(0), TestKind::Bw),
        (Tool::WriteLat, 1000, 2, 1, 1, 1, None, TestKind::Lat),
        (Tool::ReadLat, 1000, 2, 1, 1, 1, Some(0), TestKind::Lat),
        (Tool::SendLat, 1000, 2, 1, 512, 1, None, TestKind::Lat),
        (Tool::AtomicLat, 1000, 8, 1, 1, 1, Some(0), TestKind::Lat),
    ];
    for &(tool, iters, size, tx, rx, cq, inl, kind) in table {
        let p = run(tool, &[]);
        assert_eq!(p.iters, iters, "{tool}");
        assert_eq!(p.size, size, "{tool}");
        assert_eq!(p.tx_depth, tx, "{tool}");
        assert_eq!(p.rx_depth, rx, "{tool}");
        assert_eq!(p.cq_mod, cq, "{tool}");
        assert_eq!(p.inline_size, inl, "{tool}");
        assert_eq!(p.kind, kind);
        assert_eq!(p.verb, tool.verb());
        assert_eq!(p.conn.port, 18515);
        assert_eq!(p.dev.ib_port, 1);
        assert_eq!(p.connection, Connection::Rc);
        assert_eq!(p.dev.gid_index, None);
        assert_eq!(p.dev.mtu, None);
        assert_eq!(p.num_qps, 1);
        assert_eq!(p.dev.qp_timeout, 14);
        assert_eq!(p.dev.sl, 0);
        assert_eq!(p.duration, 5);
        assert_eq!(p.margin, None);
        assert_eq!(p.out_reads, None);
        assert_eq!(p.test_type, TestType::Iterations);
        assert_eq!(p.test_method, TestMethod::Regular);
        assert_eq!(p.report.fmt, ReportFormat::Mbs);
        assert_eq!(p.atomic_type, AtomicType::FetchAndAdd);
        assert_eq!(p.report.out_json_file, "perftest_out.json");
        assert_eq!(p.conn.retry_count, 7);
        assert_eq!(p.conn.hop_limit, 64);
        assert_eq!(p.machine, Role::Server);
        assert!(!p.is_tcp_client());
        assert!(p.notices.is_empty(), "{tool}: {:?}", p.notices);
        // server of a uni-directional receive-verb BW test: no peak
        assert_eq!(p.no_peak, tool == Tool::SendBw, "{tool}");
        assert_eq!(p.sizes(), vec![size]);
    }
}

#[test]
fn inline_defaults_by_device_class() {
    assert_eq!(run(Tool::WriteLat, &[]).default_inline(true), 220);
    assert_eq!(run(Tool::SendLat, &[]).default_inline(true), 236);
    assert_eq!(run(Tool::SendLat, &["-c", "UD"]).default_inline(true), 188);
    assert_eq!(run(Tool::ReadLat, &[]).default_inline(true), 0);
    assert_eq!(run(Tool::WriteBw, &[]).default_inline(true), 0);
    assert_eq!(run(Tool::WriteLat, &[]).default_inline(false), 0);
}

#[test]
fn derived_values() {
    // tx depth capped by iterations; cq_mod capped by tx depth
    let p = run(Tool::WriteBw, &["-n", "50", "-s", "64"]);
    assert_eq!((p.tx_depth, p.cq_mod), (50, 50));
    // small messages keep the default moderation of 100
    assert_eq!(run(Tool::WriteBw, &["-s", "8192"]).cq_mod, 100);
    assert_eq!(run(Tool::WriteBw, &["-s", "8193"]).cq_mod, 1);
    // -a keeps moderation and sizes buffers for 8 MiB
    let p = run(Tool::WriteBw, &["-a"]);
    assert_eq!(
        (p.cq_mod, p.size, p.test_method),
        (100, 8_388_608, TestMethod::All)
    );
    assert_eq!(p.sizes().len(), 23);
    assert_eq!(p.sizes()[0], 2);
    assert_eq!(*p.sizes().last().unwrap(), 1 << 23);
    // -a wins over -s, as in perftest
    assert_eq!(run(Tool::WriteBw, &["-a", "-s", "64"]).size, 8_388_608);
    // events keep moderation
    assert_eq!(run(Tool::SendBw, &["-e"]).cq_mod, 100);
    // explicit -Q > 1 with a large message: kept, with perftest's warnings
    let p = run(Tool::WriteBw, &["-Q", "10"]);
    assert_eq!(p.cq_mod, 10);
    assert_eq!(p.notices.len(), 3);
    assert!(p.notices[1]
        .text
        .starts_with("Warning: Large message requested"));
    // send: rx depth capped by iterations, then odd bumped by one
    let p = run(Tool::SendBw, &["-n", "101"]);
    assert_eq!(p.rx_depth, 102);
    // UD/UC: default rx depth becomes min(iters, 16000)
    assert_eq!(
        run(Tool::SendBw, &["-c", "UD", "-n", "20000"]).rx_depth,
        16000
    );
    // (512 is the untouched default, so it becomes min(iters, 16000) = 700)
    assert_eq!(run(Tool::SendBw, &["-c", "UC", "-n", "700"]).rx_depth, 700);
    assert_eq!(
        run(Tool::SendBw, &["-c", "UC", "-n", "700", "-r", "256"]).rx_depth,
        256
    );
    assert_eq!(
        run(Tool::SendLat, &["-c", "UD", "--use-srq", "-n", "50"]).rx_depth,
        100
    );
    // write verb: rx depth forced to 1; with write_with_imm it stays a receive verb
    assert_eq!(run(Tool::WriteBw, &["-r", "64"]).rx_depth, 1);
    let p = run(Tool::WriteBw, &["--write_with_imm"]);
    assert_eq!(
        (p.verb, p.rx_depth, p.iters, p.no_peak),
        (Verb::WriteImm, 512, 5000, true)
    );
    assert_eq!(run(Tool::SendLat, &["--send_with_imm"]).verb, Verb::SendImm);
    // post list: cq_mod := post list with a notice
    let p = run(Tool::WriteBw, &["-l", "4", "-s", "64"]);
    assert_eq!((p.post_list, p.cq_mod), (4, 4));
    assert!(p
        .notices
        .iter()
        .any(|n| n.text.starts_with("Post List requested")));
    assert_eq!(run(Tool::WriteBw, &["-l", "8", "-Q", "4"]).cq_mod, 4);
    // duration mode
    let p = run(Tool::WriteBw, &["-D", "10"]);
    assert_eq!(
        (p.test_type, p.iters, p.margin, p.no_peak),
        (TestType::Duration, 0, Some(2), true)
    );
    assert_eq!(run(Tool::WriteBw, &["-D", "10", "-f", "4"]).margin, Some(4));
    // -n with -D: accepted, iterations become the sample counter
    assert_eq!(run(Tool::WriteBw, &["-D", "3", "-n", "100"]).iters, 0);
    // run_infinitely
    let p = run(Tool::WriteBw, &["--run_infinitely"]);
    assert_eq!(
        (p.test_method, p.test_type, p.no_peak, p.margin),
        (TestMethod::Infinitely, TestType::Duration, true, Some(1))
    );
    assert_eq!(p.tx_depth, 128);
    // many iterations: no peak
    assert!(run(Tool::WriteBw, &["-n", "20001"]).no_peak);
    assert!(!run(Tool::WriteBw, &["-n", "20000"]).no_peak);
    // dual port doubles QPs
    let p = run(Tool::WriteBw, &["-O", "-q", "3"]);
    assert_eq!(
        (p.num_qps, p.dev.ib_port, p.dev.ib_port2, p.dev.dualport),
        (6, 1, 2, true)
    );
    // -R implies -z
    let p = run(Tool::WriteBw, &["-R"]);
    assert!(p.conn.use_rdma_cm && p.conn.work_rdma_cm);
    // multicast: UD; the GID index stays automatic (perftest 6.06 sets 0, then on RoCE its GID
    // lookup picks the best index anyway: its header shows `GID index : 1` on rxe)
    let p = run(Tool::SendBw, &["-g"]);
    assert_eq!((p.connection, p.dev.gid_index), (Connection::Ud, None));
    // roles
    let p = run(Tool::WriteBw, &["host"]);
    assert_eq!((p.machine, p.is_tcp_client()), (Role::Client, true));
    let p = run(Tool::WriteBw, &["host", "--reversed"]);
    assert_eq!((p.machine, p.is_tcp_client()), (Role::Server, true));
    let p = run(Tool::SendBw, &["--reversed"]);
    assert_eq!((p.machine, p.is_tcp_client()), (Role::Client, false));
    // the reversed send_bw receiver (the TCP client) drops the peak like any receiver
    assert!(run(Tool::SendBw, &["h", "--reversed"]).no_peak);
    assert!(!run(Tool::SendBw, &["--reversed"]).no_peak);
    // --reversed: BW tools only, not over rdma_cm (one line naming the options)
    for (tool, a) in [
        (Tool::WriteLat, &["--reversed"][..]),
        (Tool::SendLat, &["h", "--reversed"][..]),
        (Tool::WriteBw, &["--reversed", "-R"][..]),
        (Tool::SendBw, &["h", "--reversed", "-z"][..]),
    ] {
        let e = err(tool, a);
        assert_eq!(e.kind, ErrorKind::Unsupported, "{a:?}");
        assert!(e.to_string().contains("--reversed") && !e.to_string().contains('\n'), "{e}");
    }
    // send_bw client keeps the peak, server does not, duplex keeps it
    assert!(!run(Tool::SendBw, &["h"]).no_peak);
    assert!(!run(Tool::SendBw, &["-b"]).no_peak);
    // SW rate limiter: burst defaults to tx depth, with perftest's note
    let p = run(Tool::WriteBw, &["--rate_limit=2", "--rate_limit_type=SW"]);
    assert_eq!((p.rate.limit_type, p.rate.burst_size), (RateLimitType::Sw, 128));
    assert_eq!(p.notices[0].text, " Setting burst size to tx depth = 128\n");
    // --rate_limit alone: perftest's default HW limiter (static rate 40 Gb/s = IBV_RATE_40_GBPS,
    // 7), burst = tx depth silently; the fallback to SW and its red note come at connect time.
    let p = run(Tool::WriteBw, &["--rate_limit=40", "--rate_units=M"]);
    assert_eq!((p.rate.limit_type, p.rate.burst_size, p.rate.hw_rate, p.rate.limit_type_explicit), (RateLimitType::Hw, 128, 7, false));
    assert!(p.notices.is_empty(), "{:?}", p.notices);
    let p2 = run(Tool::WriteBw, &["--rate_limit=2.5", "--rate_limit_type=HW"]);
    assert_eq!((p2.rate.limit_type, p2.rate.hw_rate, p2.rate.limit_type_explicit), (RateLimitType::Hw, 2, true));
    // Explicit HW without a rate: static rate 0 (perftest's index stays 0).
    let p2 = run(Tool::WriteBw, &["--rate_limit_type=HW"]);
    assert_eq!((p2.rate.limit_type, p2.rate.hw_rate), (RateLimitType::Hw, 0));
    assert_eq!(perftest::params::rate::hw_rate_enum("300"), Some(18));
    assert_eq!(perftest::params::rate::hw_rate_enum("10.0"), None);
    let l = perftest::params::rate::sw_limiter(&p, 65536).unwrap().unwrap();
    assert_eq!((l.burst, l.gap_ticks), (128, 200_000_000)); // 640 pps in bursts of 128: 5 per second
    // Latency tools run no limiter.
    assert!(perftest::params::rate::sw_limiter(&run(Tool::WriteLat, &["--rate_limit=40"]), 2).is_none());
    // cpu_util without -D: a note, not an error
    let p = run(Tool::WriteBw, &["--cpu_util"]);
    assert!(p.notices.iter().any(|n| n.to_stderr
        && n.text
            .contains("CPU Utilization works only with Duration mode")));
    // fill_count
    assert!(run(Tool::AtomicBw, &["-n", "150"]).fill_count());
    assert!(!run(Tool::AtomicBw, &["-n", "200"]).fill_count());
    // -o 0 means device maximum
    assert_eq!(run(Tool::ReadBw, &["-o", "0"]).out_reads, None);
    assert_eq!(run(Tool::ReadBw, &["-o", "8"]).out_reads, Some(8));
}

#[test]
fn invalid_combinations() {
    let cases: &[(Tool, &[&str], &str, &str)] = &[
        (
            Tool::SendBw,
            &["-D", "5", "-e"],
            "-e/--events",
            "Duration mode doesn't work with events",
        ),
        (
            Tool::WriteBw,
            &["-D", "5", "-a"],
            "-a/--all",
            "doesn't support running on all sizes",
        ),
        (
            Tool::WriteBw,
            &["-D", "4", "-f", "2"],
            "-f/--margin",
            "DURATION > 2*MARGIN",
        ),
        (
            Tool::WriteBw,
            &["-f", "3"],
            "-f/--margin",
            "DURATION > 2*MARGIN",
        ),
        (
            Tool::WriteBw,
            &["-T", "5"],
            "-T/--tos",
            "TOS only valid for rdma_cm",
        ),
        (
            Tool::WriteBw,
            &["-L", "32"],
            "-L/--hop_limit",
            "Hop limit only valid for RawEth QP",
        ),
        (
            Tool::WriteBw,
            &["-R", "-c", "UC"],
            "-R/--rdma_cm",
            "UC is not supported in librdmacm",
        ),
        (
            Tool::WriteBw,
            &["-R", "-O"],
            "-O/--dualport",
            "Dual Port with rdma_cm",
        ),
        (
            Tool::SendBw,
            &["-R", "-g"],
            "-g/--mcg",
            "Multicast with rdma_cm",
        ),
        (
            Tool::SendBw,
            &["-g", "-b"],
            "-b/--bidirectional",
            "Bidirectional mode not supported in multicast",
        ),
        (
            Tool::SendBw,
            &["-g", "-q", "2"],
            "-q/--qp",
            "Only 1 QP supported in multicast",
        ),
        (
            Tool::SendBw,
            &["-g", "-O"],
            "-g/--mcg",
            "Dual-port mode not supported in multicast",
        ),
        (
            Tool::WriteBw,
            &["-l", "3", "-n", "100"],
            "-n/--iters",
            "multiple of post list size",
        ),
        (
            Tool::WriteBw,
            &["-l", "4", "-Q", "3", "-n", "100"],
            "-Q/--cq-mod",
            "multiple of CQ moderation",
        ),
        (
            Tool::SendBw,
            &["--recv_post_list", "3", "-n", "100"],
            "--recv_post_list",
            "multiple of receive post list size",
        ),
        (
            Tool::SendBw,
            &["--use-srq", "-q", "8", "-r", "4"],
            "--use-srq",
            "greater than number of QPs",
        ),
        (
            Tool::SendBw,
            &["--run_infinitely", "-e"],
            "--run_infinitely",
            "events",
        ),
        (
            Tool::SendBw,
            &["--run_infinitely", "-b"],
            "--run_infinitely",
            "SEND Bidirectional",
        ),
        (
            Tool::WriteBw,
            &["--run_infinitely", "--rate_limit=2", "--rate_limit_type=SW"],
            "--rate_limit",
            "rate limit",
        ),
        (
            Tool::WriteBw,
            &["--burst_size", "4"],
            "--burst_size",
            "rate limiter is off",
        ),
        (
            Tool::AtomicBw,
            &["--rate_limit=2", "--rate_limit_type=SW"],
            "SW",
            "ATOMIC",
        ),
        (
            Tool::WriteBw,
            &["--rate_limit=2"],
            "--rate_limit",
            "Unknown rate limit value '2'",
        ),
        (
            Tool::WriteBw,
            &["--rate_limit=10", "--rate_units=p"],
            "--rate_units p",
            "pps rate limit units is not supported when setting HW rate limit",
        ),
        (
            Tool::SendBw,
            &["--use-null-mr"],
            "--use-null-mr",
            "with write/read verbs only",
        ),
        (
            Tool::AtomicLat,
            &["--use-null-mr"],
            "--use-null-mr",
            "with write/read verbs only",
        ),
        (
            Tool::SendBw,
            &["--rate_limit=100", "--rate_units=p", "--rate_limit_type=SW", "--burst_size=200"],
            "--burst_size",
            "less than one burst of 200",
        ),
        (
            Tool::WriteBw,
            &["-a", "--rate_limit=1", "--rate_units=M", "--rate_limit_type=SW"],
            "--rate_limit",
            "64 messages of 16384 bytes",
        ),
        (
            Tool::WriteBw,
            &["--rate_limit_type=PP", "--rate_limit=1"],
            "PP",
            "Raw Ethernet",
        ),
        (
            Tool::WriteBw,
            &["--output=latency"],
            "--output",
            "for BW can be",
        ),
        (
            Tool::WriteLat,
            &["--output=bandwidth"],
            "--output",
            "for LAT can be",
        ),
        (
            Tool::WriteBw,
            &["--report-per-port", "-D", "5"],
            "--report-per-port",
            "Dualport",
        ),
        (
            Tool::SendBw,
            &["-X", "2"],
            "-X/--vector",
            "Events (-e) must be enabled",
        ),
        (Tool::WriteBw, &["a", "b"], "<host>", "only one server name"),
        (
            Tool::WriteBw,
            &["--loopback", "host"],
            "--loopback",
            "takes no server name",
        ),
        (
            Tool::ReadBw,
            &["-c", "XRC", "-R"],
            "-R/--rdma_cm, -c/--connection",
            "XRC does not support RDMA_CM",
        ),
        (
            Tool::WriteBw,
            &["-c", "DC", "--use_old_post_send"],
            "-c DC, --use_old_post_send",
            "DC does not support old post send flow",
        ),
        (Tool::WriteBw, &["-c", "DC", "-R"], "-c DC, -R/--rdma_cm", "DC does not support RDMA_CM"),
        (Tool::SendLat, &["-c", "DC", "-z"], "-c DC, -z/--comm_rdma_cm", "DC does not support RDMA_CM"),
        (Tool::WriteBw, &["--log_dci_streams", "2"], "--log_dci_streams", "log_dci_streams supported only on DC"),
        (
            Tool::WriteBw,
            &["--log_active_dci_streams", "1", "--log_dci_streams", "2"],
            "--log_dci_streams",
            "log_dci_streams supported only on DC",
        ),
        (
            Tool::SendBw,
            &["--log_active_dci_streams", "1"],
            "--log_active_dci_streams",
            "log_active_dci_streams supported only on DC",
        ),
        (
            Tool::WriteBw,
            &["-c", "DC", "--log_active_dci_streams", "2"],
            "--log_active_dci_streams",
            "log_dci_streams must be greater than 0",
        ),
        (Tool::WriteBw, &["-c", "DC", "--log_dci_streams", "abc"], "--log_dci_streams", "should be an integer"),
        (Tool::WriteBw, &["-c", "DC", "--log_dci_streams", "70000"], "--log_dci_streams", "between 0 and 65535"),
        (
            Tool::SendBw,
            &["-c", "XYZ"],
            "-c",
            "Invalid Connection type",
        ),
        (Tool::AtomicBw, &["-A", "SWAP"], "-A", "Invalid Atomic type"),
        (
            Tool::WriteBw,
            &["--force-link", "RoCE"],
            "--force-link",
            "IB or Ethernet",
        ),
    ];
    for (tool, a, opt, msg) in cases {
        let e = err(*tool, a);
        assert!(
            e.option.contains(opt),
            "{tool} {a:?}: option {:?} lacks {opt}",
            e.option
        );
        assert!(e.message.contains(msg), "{tool} {a:?}: {e}");
        assert!(matches!(
            e.kind,
            ErrorKind::Conflict
                | ErrorKind::Unsupported
                | ErrorKind::InvalidValue
                | ErrorKind::Usage
        ));
    }
}

#[test]
fn value_ranges_and_number_syntax() {
    // strtol base 0: hex, octal, sign, leading blanks
    assert_eq!(run(Tool::WriteBw, &["-s", "0x100"]).size, 256);
    assert_eq!(run(Tool::WriteBw, &["-s", "010"]).size, 8);
    assert_eq!(run(Tool::WriteBw, &["-n", " +40"]).iters, 40);
    assert_eq!(run(Tool::WriteBw, &["-s", "4K"]).size, 4096);
    assert_eq!(run(Tool::WriteBw, &["-s", "2M"]).size, 2 << 20);
    assert_eq!(run(Tool::WriteBw, &["-s", "2147483647"]).size, 2147483647);
    assert_eq!(run(Tool::WriteBw, &["-n", "4294967296"]).iters, 4294967296);
    assert_eq!(run(Tool::WriteBw, &["-x", "64"]).dev.gid_index, Some(64));
    assert_eq!(run(Tool::WriteBw, &["-m", "4096"]).dev.mtu, Some(4096));
    assert_eq!(run(Tool::WriteLat, &["-I", "1024"]).inline_size, Some(1024));
    assert_eq!(run(Tool::WriteBw, &["-w", "10.5"]).report.limit_bw, Some(10.5));
    assert_eq!(
        run(Tool::WriteBw, &["--flow_label", "1,2,0x10"]).dev.flow_labels,
        vec![1, 2, 16]
    );
    assert_eq!(
        run(Tool::WriteBw, &["--force-link", "IB"]).dev.force_link,
        Some(LinkType::Ib)
    );
    assert_eq!(
        run(Tool::WriteBw, &["--output", "message_rate"]).report.output,
        Output::MessageRate
    );
    let bad: &[(&[&str], &str)] = &[
        (
            &["-s", "0"],
            "Message Size should be between 1 and 2147483647",
        ),
        (
            &["-s", "2048M"],
            "Message Size should be between 1 and 2147483647",
        ),
        (&["-s", "12x"], "should be an integer"),
        (&["-s", "1KM"], "should be an integer"),
        (&["-s", ""], "should be an integer"),
        (
            &["-n", "4"],
            "Iteration num should be between 5 and 4294967296",
        ),
        (
            &["-n", "12abc"],
            "Iteration num argument '12abc' should be an integer",
        ),
        (&["-n", "0x"], "should be an integer"),
        (&["-n", "99999999999999999999999"], "should be between"),
        (&["-t", "15001"], "Tx depth should be between 1 and 15000"),
        (&["-S", "16"], "Service Level should be between 0 and 15"),
        (&["-x", "65"], "Gid index should be between 0 and 64"),
        (&["-i", "0"], "IB Port should be between 1 and 255"),
        (&["-p", "70000"], "Port should be between 1 and 65535"),
        (&["-Q", "0"], "CQ moderation should be between 1 and 1024"),
        (&["-q", "16385"], "num of Qps should be between 1 and 16384"),
        (&["-I", "1025"], "Max inline should be between 0 and 1024"),
        (&["-D", "0"], "Duration period should be between 1"),
        (&["-f", "-1"], "Margin should be between 0"),
        (&["-u", "256"], "QP Timeout should be between 0 and 255"),
        (&["-w", "-1"], "Invalid Minimum BW Limit"),
        (&["-w", "fast"], "should be a number"),
        (&["--output", "verbose"], "Invalid verbosity level"),
        (&["--rate_units", "k"], "Invalid rate limit units"),
        (
            &["--cqe_poll", "0"],
            "CQE Poll should be between 1 and 65535",
        ),
        (&["--pin_cores", "3-1"], "Invalid CPU list"),
    ];
    for (a, msg) in bad {
        let e = err(Tool::WriteBw, a);
        assert_eq!(e.kind, ErrorKind::InvalidValue, "{a:?}: {e}");
        assert!(e.message.contains(msg), "{a:?}: {e}");
        assert_eq!(e.option, a[0], "{a:?}");
    }
}

/// perftest after 6.29 (`force_dependecies`): one binding or the other.
#[test]
fn numa_node_and_pin_cores_exclude_each_other() {
    let e = err(Tool::WriteBw, &["--numa_node=1", "--pin_cores=0-3"]);
    assert_eq!((e.kind, e.message.as_str()), (ErrorKind::Conflict, "--numa_node and --pin_cores cannot be used together"));
    let p = common::run(Tool::WriteBw, &["--numa_node=1", "--disable_numa"]);
    assert_eq!((p.buf.numa_node, p.buf.disable_numa), (Some(1), true));
}

// ---------------------------------------------------------------------------------------------
// Robustness

#[test]
fn garbage_never_panics() {
    let vocab = [
        "-a",
        "-b",
        "-c",
        "UD",
        "RC",
        "UC",
        "XRC",
        "-D",
        "-e",
        "-f",
        "-g",
        "-h",
        "-H",
        "-I",
        "-l",
        "-L",
        "-m",
        "-n",
        "-N",
        "-o",
        "-O",
        "-p",
        "-q",
        "-Q",
        "-r",
        "-R",
        "-s",
        "-S",
        "-t",
        "-T",
        "-u",
        "-U",
        "-V",
        "-w",
        "-x",
        "-X",
        "-y",
        "-z",
        "-A",
        "-C",
        "-W",
        "-M",
        "--size",
        "--size=",
        "--iters=",
        "--run_infinitely",
        "--rate_limit=",
        "--rate_limit_type=SW",
        "--burst_size",
        "--use-srq",
        "--report-per-port",
        "--output",
        "latency",
        "bandwidth",
        "--post_list",
        "--recv_post_list",
        "--write_with_imm",
        "--send_with_imm",
        "--loopback",
        "--cpu_util",
        "--",
        "-",
        "0",
        "1",
        "2",
        "3",
        "5",
        "7",
        "8",
        "100",
        "0x",
        "0x10",
        "010",
        "-1",
        "4294967297",
        "1K",
        "1M",
        "99999999999999999999",
        "host",
        "é",
        "--é",
        "-é",
        "-sé",
        "\u{0}",
        "--=",
        "---",
        "-bNaF",
    ];
    let mut x: u64 = 0x9E37_79B9_7F4A_7C15;
    let mut next = || {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        x
    };
    let mut ok = 0;
    for _ in 0..20_000 {
        let n = (next() % 7) as usize;
        let mut a = Vec::with_capacity(n);
        for _ in 0..n {
            let r = next();
            if r % 5 == 0 {
                let len = (r >> 8) % 6;
                let s: String = (0..len)
                    .map(|i| char::from(((r >> (16 + i * 7)) % 94 + 33) as u8))
                    .collect();
                a.push(s);
            } else {
                a.push(vocab[(r >> 3) as usize % vocab.len()].to_string());
            }
        }
        let tool = Tool::ALL[(next() % 8) as usize];
        match parse(tool, &a) {
            Ok(ParseOutcome::Run(p)) => {
                ok += 1;
                assert!(
                    p.tx_depth >= 1 && p.cq_mod >= 1 && p.num_qps >= 1,
                    "{tool} {a:?}"
                );
                assert!(p.cq_mod <= p.tx_depth, "{tool} {a:?}");
            }
            Ok(_) => {}
            Err(e) => {
                let line = e.to_string();
                assert!(!line.contains('\n'), "{line}");
                assert!(!e.option.is_empty());
            }
        }
    }
    assert!(ok > 100, "only {ok} successful parses");
}

#[test]
fn dc_forces_srq_doubles_qps_where_both_directions_run_and_defaults_streams() {
    // One-way BW: client DCIs, server DCTs; the SRQ is forced (even on write/read).
    let p = run(Tool::WriteBw, &["-c", "DC", "-q", "3"]);
    assert_eq!((p.connection, p.use_srq, p.num_qps), (Connection::Dc, true, 3));
    assert!(perftest::params::dc::is_dct(&p, 0), "the BW server only has DCTs");
    let c = run(Tool::WriteBw, &["-c", "DC", "host"]);
    assert!(!perftest::params::dc::is_dct(&c, 0), "the BW client only has DCIs");
    // -b and the latency tests: DCIs then DCTs, twice the QPs.
    let b = run(Tool::SendBw, &["-c", "DC", "-b", "-q", "2"]);
    assert_eq!(b.num_qps, 4);
    assert_eq!((0..4).map(|q| perftest::params::dc::is_dct(&b, q)).collect::<Vec<_>>(), [false, false, true, true]);
    let l = run(Tool::WriteLat, &["-c", "DC"]);
    assert_eq!((l.num_qps, l.use_srq), (2, true));
    assert_eq!(l.default_inline(true), 150, "DEF_INLINE_DC");
    assert_eq!(run(Tool::SendLat, &["-c", "DC"]).default_inline(true), 150);
    assert_eq!(run(Tool::ReadLat, &["-c", "DC"]).default_inline(true), 0);
    // --log_active_dci_streams defaults to --log_dci_streams.
    let s = run(Tool::WriteBw, &["-c", "DC", "--log_dci_streams", "3"]);
    assert_eq!((s.log_dci_streams, s.log_active_dci_streams), (3, 3));
    let s = run(Tool::WriteBw, &["-c", "DC", "--log_dci_streams", "3", "--log_active_dci_streams", "1"]);
    assert_eq!((s.log_dci_streams, s.log_active_dci_streams), (3, 1));
    // The engine's set-up: roles, key, streams and (latency and -b) the split lanes.
    use perftest::params::dc::{engine_setup, split_lanes, DC_KEY};
    let e = engine_setup(&b).unwrap();
    assert_eq!((e.dct, e.access_key, e.log_dci_streams), (vec![false, false, true, true], DC_KEY, 0));
    assert_eq!(engine_setup(&p).unwrap().dct, vec![true; 3]);
    let es = engine_setup(&s).unwrap();
    assert_eq!((es.log_dci_streams, es.log_active_dci_streams), (3, 1));
    assert!(engine_setup(&p).unwrap().lanes.is_none() && engine_setup(&c).unwrap().lanes.is_none(), "one-way BW: no split");
    assert_eq!(e.lanes, split_lanes(&b));
    // Not DC: no doubling, no SRQ.
    let r = run(Tool::WriteLat, &[]);
    assert_eq!((r.num_qps, r.use_srq), (1, false));
    assert!(engine_setup(&r).is_none() && split_lanes(&r).is_none());
}

#[test]
fn dc_latency_and_bidirectional_split_into_dci_and_dct_lanes_as_perftest() {
    use perftest::params::{dc, lane_plan, xrc_plan};
    // -b -q 2 (4 QPs): DCIs 0,1 send to the peer's DCTs 2,3 (perftest's
    // r_dctn[i] = rem_dest[num_qps/2 + i].qpn); the DCTs take their RTR path from the peer's DCIs.
    let b = run(Tool::SendBw, &["-c", "DC", "-b", "-q", "2"]);
    let x = lane_plan(&b).unwrap();
    assert!(xrc_plan(&b).is_none(), "no XRC domain for DC");
    assert_eq!((x.num_qps, x.split, x.lanes()), (4, true, 2));
    assert_eq!((0..4).map(|q| x.peer_key(q)).collect::<Vec<_>>(), [2, 3, 0, 1]);
    assert_eq!((0..2).map(|l| (x.send_qp(l), x.recv_qp(l), x.send_key(l))).collect::<Vec<_>>(), [(0, 2, 2), (1, 3, 3)]);
    // the lane plan's targets are exactly the DCTs of the engine's roles
    let e = dc::engine_setup(&b).unwrap();
    assert!((0..4).all(|q| x.is_target(q) == e.dct[q]));
    // receives through the SRQ, shared among all QPs as perftest (rx_depth / num_of_qps)
    assert_eq!(b.recv_depth_per_qp(), (b.rx_depth / 4).max(1));
    // every latency tool: one lane, DCI 0 -> peer DCT 1; the server is laid out the same
    for (tool, host) in [(Tool::WriteLat, true), (Tool::SendLat, false), (Tool::ReadLat, true), (Tool::AtomicLat, false)] {
        let args: &[&str] = if host { &["-c", "DC", "host"] } else { &["-c", "DC"] };
        let l = lane_plan(&run(tool, args)).unwrap();
        assert_eq!((l.num_qps, l.lanes(), l.send_key(0), l.recv_qp(0), l.peer_key(1)), (2, 1, 1, 1, 0), "{tool:?}");
    }
    // one-way BW over DC keeps the plain per-QP layout
    assert!(lane_plan(&run(Tool::WriteBw, &["-c", "DC", "-q", "2", "host"])).is_none());
    // XRC is unchanged: its plan is both the lane plan and the domain's
    let xr = run(Tool::SendBw, &["-c", "XRC", "-b"]);
    assert_eq!(lane_plan(&xr), xrc_plan(&xr));
    assert!(xrc_plan(&xr).is_some());
}

#[test]
fn srq_depth_is_shared_by_the_qps_posting_into_it() {
    // perftest's ctx_set_recv_wqes: size_per_qp = rx_depth, divided by the QP count with an SRQ
    // (the SRQ holds only rx_depth receives; every QP posting rx_depth overflowed it at -q 2).
    let srq = run(Tool::SendBw, &["--use-srq", "-q", "4", "-r", "512"]);
    assert_eq!(srq.recv_depth_per_qp(), 128);
    assert_eq!(run(Tool::SendBw, &["-q", "4", "-r", "512"]).recv_depth_per_qp(), 512);
    assert_eq!(run(Tool::SendBw, &["--use-srq", "-q", "3", "-r", "8"]).recv_depth_per_qp(), 2);
    assert_eq!(run(Tool::SendBw, &["--use-srq", "-q", "4", "-r", "4"]).recv_depth_per_qp(), 1);
    let xrc = run(Tool::SendBw, &["-c", "XRC", "-q", "2", "-r", "64"]);
    assert_eq!(xrc.recv_depth_per_qp(), 64 / xrc.num_qps);
}

// ---------------------------------------------------------------------------------------------
// --aes_xts (perftest 6.06 with HAVE_AES_XTS)

const AES: [&str; 7] =
    ["--aes_xts", "--kek_path", "/k", "--credentials_path", "/c", "--data_enc_key_app_path", "/a"];

fn aes(extra: &[&str]) -> Vec<&'static str> {
    let mut v: Vec<&'static str> = AES.to_vec();
    for e in extra {
        v.push(Box::leak(e.to_string().into_boxed_str()));
    }
    v
}

#[test]
fn aes_xts_values_and_defaults_follow_perftest() {
    let p = run(Tool::WriteBw, &aes(&[]));
    assert!(p.aes.enabled && !p.aes.encrypt_on_tx && !p.aes.sig_before);
    assert_eq!((p.aes.keys_number, p.aes.block_size()), (1, 512));
    assert_eq!(p.aes.kek_path.as_deref(), Some("/k"));
    assert_eq!(p.aes.credentials_path.as_deref(), Some("/c"));
    assert_eq!(p.aes.app_path.as_deref(), Some("/a"));
    let p = run(Tool::SendBw, &aes(&["--encrypt_on_tx", "--sig_before", "--aes_block_size=4160", "--data_enc_keys_number", "3"]));
    assert!(p.aes.encrypt_on_tx && p.aes.sig_before);
    assert_eq!((p.aes.keys_number, p.aes.block_size(), p.aes.block_index()), (3, 4160, 4));
    // the accepted sizes map to enum mlx5dv_block_size; anything else silently becomes 512
    for (arg, size, ix) in [("512", 512, 0), ("520", 520, 1), ("4048", 4048, 2), ("4096", 4096, 3), ("4160", 4160, 4), ("1000", 512, 0), ("0x1000", 4096, 3)] {
        let p = run(Tool::ReadBw, &aes(&["--aes_block_size", arg]));
        assert_eq!((p.aes.block_size(), p.aes.block_index()), (size, ix), "{arg}");
    }
    // uint16_t casts: -1 is 65535, 70000 is 4464 (perftest's CHECK_VALUE)
    assert_eq!(run(Tool::WriteBw, &aes(&["--data_enc_keys_number=-1"])).aes.keys_number, 65535);
    assert_eq!(run(Tool::WriteBw, &aes(&["--data_enc_keys_number=70000"])).aes.keys_number, 4464);
    // without --aes_xts the block size and key count are accepted and unused
    let p = run(Tool::WriteBw, &["--aes_block_size=520", "--data_enc_keys_number=2"]);
    assert!(!p.aes.enabled);
    // -z is allowed (6.06 checks -R only); atomic tools accept it
    assert!(run(Tool::WriteBw, &aes(&["-z"])).aes.enabled);
    assert!(run(Tool::AtomicBw, &aes(&[])).aes.enabled);
    assert!(run(Tool::WriteBw, &aes(&["-s", "65", "-I", "64"])).aes.enabled);
}

#[test]
fn aes_xts_checks_in_perftests_order_with_its_messages() {
    let cases: Vec<(Tool, Vec<&str>, &str)> = vec![
        (Tool::WriteBw, aes(&["-c", "UC"]), "aes_xts supported only on RC"),
        (Tool::SendBw, aes(&["-c", "UD"]), "aes_xts supported only on RC"),
        // connection first, then the paths in perftest's order
        (Tool::WriteBw, vec!["--aes_xts", "-c", "UC"], "aes_xts supported only on RC"),
        (Tool::WriteBw, vec!["--aes_xts"], "Please provide key encryption key file path"),
        (Tool::WriteBw, vec!["--aes_xts", "--kek_path", "/k", "--credentials_path", "/c"], "Please provide data encryption key app path"),
        (Tool::WriteBw, vec!["--aes_xts", "--kek_path", "/k", "--data_enc_key_app_path", "/a"], "Please provide credentials file path"),
        (Tool::WriteBw, aes(&["--use_old_post_send"]), "aes_xts doesn't support old post send"),
        (Tool::WriteBw, aes(&["-R"]), "rdma_cm doesn't support aes_xts"),
        (Tool::WriteLat, aes(&[]), "aes_xts isn't supported on write_lat"),
        (Tool::WriteLat, aes(&["--write_with_imm"]), "aes_xts isn't supported on write_lat"),
        (Tool::WriteBw, aes(&["-s", "64", "-I", "64"]), "aes_xts doesn't support Inline messages"),
        (Tool::SendLat, aes(&["-s", "2", "-I", "100"]), "aes_xts doesn't support Inline messages"),
        (Tool::WriteBw, aes(&["--data_enc_keys_number", "0"]), "at least one data encryption key"),
        (Tool::WriteBw, vec!["--encrypt_on_tx"], "encrypt_on_tx supported only when enc/dec traffic"),
        (Tool::WriteBw, vec!["--sig_before", "--encrypt_on_tx"], "encrypt_on_tx supported only when enc/dec traffic"),
        (Tool::WriteBw, vec!["--sig_before"], "sig_before supported only when enc/dec traffic"),
        (Tool::WriteBw, vec!["--kek_path", "/k", "--credentials_path", "/c"], "giving credentials path supported only with enc/dec traffic"),
        (Tool::WriteBw, vec!["--kek_path", "/k"], "giving kek path supported only with enc/dec traffic"),
        (Tool::WriteBw, vec!["--data_enc_key_app_path", "/a"], "giving kek path supported only with enc/dec traffic"),
        (Tool::WriteBw, aes(&["--aes_block_size", "x"]), "aes_block_size argument 'x' should be an integer"),
        (Tool::WriteBw, aes(&["--data_enc_keys_number", "2k"]), "data_enc_keys_number argument '2k' should be an integer"),
    ];
    for (tool, a, msg) in cases {
        let e = err(tool, &a);
        let line = e.to_string();
        assert!(line.contains(msg), "{tool} {a:?}: {line}");
        assert!(!line.contains('\n'), "{line}");
        assert_eq!(e.exit_code(), 1);
        assert!(!e.shows_usage());
    }
}

/// `-c SRD` parses for the tools perftest 6.29 allows it with (send, read, write) and is refused
/// for atomics; whether the device has SRD is decided once it is found (tool::setup).
#[test]
fn srd_parses_for_send_read_write_only() {
    for t in [Tool::SendBw, Tool::SendLat, Tool::WriteBw, Tool::ReadBw] {
        assert_eq!(run(t, &["-c", "SRD"]).connection, Connection::Srd, "{t:?}");
    }
    assert!(parse(Tool::AtomicBw, &common::args(&["-c", "SRD"])).is_err());
}
