//! perftest command-line compatibility: golden help/version, every option of every tool,
//! defaults, derived values, invalid combinations, 6.06/6.29 spellings, getopt conventions, and a
//! deterministic fuzz loop.
use perftest::params::{Connection, ErrorKind, ParseOutcome, TestKind, Tool, Verb};

mod common;
use common::{args, err, parse, run};

fn fixture(name: &str) -> String {
    let path = format!("{}/tests/fixtures/help/{name}", env!("CARGO_MANIFEST_DIR"));
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path}: {e}"))
}

// ---------------------------------------------------------------------------------------------
// -h / -V

#[test]
fn help_is_byte_exact_for_all_tools() {
    for tool in Tool::ALL {
        let want = fixture(&format!("{}.help.txt", tool.name()));
        for flag in ["-h", "--help", "--he"] {
            match parse(tool, &args(&[flag])) {
                Ok(ParseOutcome::Help(got)) => {
                    if got != want {
                        for (i, (g, w)) in got.lines().zip(want.lines()).enumerate() {
                            assert_eq!(g, w, "{tool} {flag}: first difference at line {}", i + 1);
                        }
                        panic!(
                            "{tool} {flag}: help differs in length ({} vs {})",
                            got.len(),
                            want.len()
                        );
                    }
                }
                other => panic!("{tool} {flag}: {other:?}"),
            }
        }
    }
}

#[test]
fn version_is_exact_for_all_tools() {
    for tool in Tool::ALL {
        let want = fixture(&format!("{}.version.txt", tool.name()));
        assert_eq!(want, "Version: 6.06\n");
        for flag in ["-V", "--version", "--vers"] {
            assert_eq!(
                parse(tool, &args(&[flag])),
                Ok(ParseOutcome::Version(want.clone())),
                "{tool} {flag}"
            );
        }
    }
    assert_eq!(perftest::params::EXIT_HELP, 1);
    assert_eq!(perftest::params::EXIT_VERSION, 1);
}

#[test]
fn help_and_version_win_like_getopt_order() {
    // -h stops parsing: later bad options are never seen.
    assert!(matches!(
        parse(Tool::WriteBw, &args(&["-s", "64", "-h", "--bogus"])),
        Ok(ParseOutcome::Help(_))
    ));
    // a bad option before -h is reported first.
    assert_eq!(
        err(Tool::WriteBw, &["--bogus", "-h"]).kind,
        ErrorKind::Usage
    );
    assert_eq!(
        err(Tool::WriteBw, &["-n", "2", "-h"]).kind,
        ErrorKind::InvalidValue
    );
    // -h inside a cluster
    assert!(matches!(
        parse(Tool::WriteBw, &args(&["-ah"])),
        Ok(ParseOutcome::Help(_))
    ));
}

#[test]
fn usage_uses_given_program_name() {
    let u = perftest::params::usage(Tool::ReadLat, "/usr/bin/ib_read_lat");
    assert!(u.starts_with("Usage:\n  /usr/bin/ib_read_lat            start a server"));
    assert!(!perftest::params::extensions_help().is_empty());
}

// ---------------------------------------------------------------------------------------------
// Every option each tool's help lists

/// (short, long) pairs printed by a help text.
fn help_options(text: &str) -> Vec<(Option<String>, String)> {
    let mut out = Vec::new();
    for line in text.lines() {
        let t = line.trim_start();
        if let Some(rest) = t.strip_prefix('-') {
            if let Some(rest2) = rest.strip_prefix('-') {
                let name: String = rest2
                    .chars()
                    .take_while(|c| c.is_alphanumeric() || *c == '_' || *c == '-')
                    .collect();
                out.push((None, name));
            } else {
                // "-a, --all ..."
                let short = rest.chars().next().unwrap().to_string();
                let after = &rest[1..];
                let long = after.trim_start_matches(", --");
                let name: String = long
                    .chars()
                    .take_while(|c| c.is_alphanumeric() || *c == '_' || *c == '-')
                    .collect();
                out.push((Some(short), name));
            }
        }
    }
    out
}

/// A command line exercising `long` for `tool`, and whether it is expected to run (Ok) or be
/// refused as unsupported/conflicting by design.
fn sample(tool: Tool, long: &str) -> (Vec<&'static str>, Option<ErrorKind>) {
    let bw = tool.kind() == TestKind::Bw;
    match long {
        "all" => (vec![], None),
        "atomic_type" => (vec!["CMP_AND_SWAP"], None),
        "bidirectional"
        | "CPU-freq"
        | "help"
        | "version"
        | "noPeak"
        | "dualport"
        | "rdma_cm"
        | "report-cycles"
        | "report-histogram"
        | "report-unsorted"
        | "com_rdma_cm"
        | "mcg"
        | "out_json"
        | "dont_xchg_versions"
        | "use-srq"
        | "ipv6"
        | "mr_per_qp"
        | "use_old_post_send"
        | "perform_warm_up"
        | "report-both"
        | "report_gbits"
        | "reversed"
        | "run_infinitely"
        | "use_hugepages"
        | "disable_pcie_relaxed" => (vec![], None),
        "connection" => (
            vec!["UC"],
            if matches!(tool.verb(), Verb::Read | Verb::Atomic) {
                Some(ErrorKind::Conflict)
            } else {
                None
            },
        ),
        // DCI streams: DC only (perftest's own rule), with -c DC they parse.
        "log_dci_streams" => (vec!["1", "-c", "DC"], None),
        "log_active_dci_streams" => (vec!["1", "--log_dci_streams", "2", "-c", "DC"], None),
        // AES-XTS (perftest's rules): block size and key count parse alone; --aes_xts needs the
        // three paths and refuses write_lat; the rest need --aes_xts.
        "aes_block_size" | "data_enc_keys_number" => (vec!["1"], None),
        "odp" => (vec![], None),
        "aes_xts" => (
            vec!["--kek_path", "/tmp/k", "--credentials_path", "/tmp/c", "--data_enc_key_app_path", "/tmp/a"],
            if tool == Tool::WriteLat { Some(ErrorKind::Conflict) } else { None },
        ),
        "encrypt_on_tx" | "sig_before" => (vec![], Some(ErrorKind::Conflict)),
        "kek_path" | "credentials_path" | "data_enc_key_app_path" => {
            (vec!["/tmp/x"], Some(ErrorKind::Conflict))
        }
        "ib-dev" => (vec!["rxe0"], None),
        "duration" => (vec!["10"], None),
        "events" => (vec![], None),
        "vector" => (vec!["1", "-e"], None),
        "margin" => (vec!["1", "-D", "5"], None),
        "ib-port" => (vec!["1"], None),
        "inline_size" => (vec!["64"], None),
        "post_list" => (vec!["4"], None),
        "recv_post_list" => (vec!["4"], None),
        "hop_limit" => (vec!["64"], None),
        "mtu" => (vec!["1024"], None),
        "MGID" => (vec!["ff0e::1"], None),
        "iters" => (vec!["2000"], None),
        "outs" => (vec!["4"], None),
        "port" => (vec!["18600"], None),
        "qp" => (vec!["2"], None),
        "cq-mod" => (vec!["10"], None),
        "rx-depth" => (vec!["64"], None),
        "size" => (vec!["4096"], None),
        "sl" => (vec!["3"], None),
        "tx-depth" => (vec!["64"], None),
        "tos" => (vec!["32", "-R"], None),
        "qp-timeout" => (vec!["18"], None),
        "limit_bw" | "limit_msgrate" => (vec!["1.5"], None),
        "report-counters" => (
            vec!["counters/port_xmit_data,hw_counters/out_of_buffer"],
            None,
        ),
        "gid-index" => (vec!["1"], None),
        "out_json_file" => (vec!["x.json"], None),
        "cpu_util" => (vec!["-D", "6"], None),
        "dlid" => (vec!["5"], None),
        "force-link" => (vec!["Ethernet"], None),
        "inline_recv" => (vec!["64"], None),
        "source_ip" => (vec!["10.0.0.1"], None),
        "latency_gap" => (vec!["10"], None),
        "mmap" => (vec!["/tmp/buf"], None),
        "mmap-offset" => (vec!["4096"], None),
        "output" => (vec![if bw { "bandwidth" } else { "latency" }], None),
        "pkey_index" => (vec!["0"], None),
        "report-per-port" => (vec!["-D", "10", "-O"], None),
        "retry_count" => (vec!["5"], None),
        "tclass" => (vec!["96"], None),
        "wait_destroy" => (vec!["2"], None),
        "burst_size" => (
            vec!["8", "--rate_limit_type=SW", "--rate_limit=5"],
            sw_rate(tool),
        ),
        "typical_pkt_size" => (vec!["1024"], Some(ErrorKind::Conflict)),
        "rate_limit" => (vec!["5", "--rate_limit_type=SW"], sw_rate(tool)),
        "rate_units" => (
            vec!["M", "--rate_limit_type=SW", "--rate_limit=100"],
            sw_rate(tool),
        ),
        "rate_limit_type" => (vec!["SW", "--rate_limit=5"], sw_rate(tool)),
        other => panic!("no sample for --{other}"),
    }
}

fn sw_rate(tool: Tool) -> Option<ErrorKind> {
    if tool.verb() == Verb::Atomic {
        Some(ErrorKind::Conflict)
    } else {
        None
    }
}

#[test]
fn every_option_in_every_help_parses() {
    for tool in Tool::ALL {
        let help = fixture(&format!("{}.help.txt", tool.name()));
        let opts = help_options(&help);
        assert!(opts.len() > 40, "{tool}: {} options", opts.len());
        for (short, long) in opts {
            let (extra, expect) = sample(tool, &long);
            let mut spellings = vec![format!("--{long}")];
            if let Some(s) = &short {
                spellings.push(format!("-{s}"));
            }
            for sp in spellings {
                let mut a = vec![sp.clone()];
                a.extend(extra.iter().map(|s| s.to_string()));
                let r = parse(tool, &a);
                match (&r, expect) {
                    (Ok(_), None) => {}
                    (Err(e), Some(k)) if e.kind == k => {}
                    _ => panic!("{tool} {a:?}: got {r:?}, expected {expect:?}"),
                }
                if let Err(e) = &r {
                    assert_ne!(e.kind, ErrorKind::Usage, "{tool} {a:?}");
                    assert!(!e.option.is_empty());
                }
            }
        }
    }
}

#[test]
fn options_a_tool_does_not_list_are_handled_like_perftest() {
    use ErrorKind::*;
    let cases: &[(Tool, &[&str], ErrorKind, &str)] = &[
        (
            Tool::WriteLat,
            &["-b"],
            Conflict,
            "Bidirectional is only available in BW test",
        ),
        (
            Tool::ReadLat,
            &["-N"],
            Conflict,
            "NoPeak only valid for BW tests",
        ),
        (
            Tool::WriteLat,
            &["-q", "2"],
            Conflict,
            "Multiple QPs only available on bw tests",
        ),
        (
            Tool::WriteBw,
            &["-e"],
            Conflict,
            "Events feature not available on WRITE verb",
        ),
        (
            Tool::WriteLat,
            &["-X", "1"],
            Conflict,
            "Events feature not available on WRITE verb",
        ),
        (
            Tool::ReadBw,
            &["-I", "64"],
            Conflict,
            "Inline feature not available on READ/Atomic verbs",
        ),
        (
            Tool::AtomicLat,
            &["-I", "64"],
            Conflict,
            "Inline feature not available on READ/Atomic verbs",
        ),
        (
            Tool::WriteBw,
            &["-o", "4"],
            Conflict,
            "Setting Outstanding reads only available on READ verb",
        ),
        (
            Tool::ReadBw,
            &["-r", "64"],
            Conflict,
            "On RDMA verbs rx depth can be only 1",
        ),
        (
            Tool::SendBw,
            &["-A", "CMP_AND_SWAP"],
            Conflict,
            "You are not running the atomic_lat/bw test!",
        ),
        (
            Tool::WriteBw,
            &["-C"],
            Conflict,
            "Available only on Latency tests",
        ),
        (
            Tool::WriteBw,
            &["-H"],
            Conflict,
            "Available only on Latency tests",
        ),
        (
            Tool::SendBw,
            &["-U"],
            Conflict,
            "Available only on Latency tests",
        ),
        (
            Tool::WriteBw,
            &["-g"],
            Conflict,
            "MultiCast feature only available on SEND verb",
        ),
        (
            Tool::WriteLat,
            &["-l", "2"],
            Conflict,
            "Post list is supported in BW tests only",
        ),
        (
            Tool::SendLat,
            &["--recv_post_list", "2"],
            Conflict,
            "Receive post list is supported in BW tests only",
        ),
        (
            Tool::WriteLat,
            &["-O"],
            Conflict,
            "Dual-port mode only supports BW tests",
        ),
        (
            Tool::WriteBw,
            &["--latency_gap", "5"],
            Conflict,
            "Latency gap feature is only for latency tests",
        ),
        (
            Tool::WriteLat,
            &["--run_infinitely"],
            Conflict,
            "run_infinitely exists only in BW tests for now",
        ),
        (
            Tool::WriteBw,
            &["--use-srq"],
            Conflict,
            "Using SRQ only available in SEND tests",
        ),
        (
            Tool::AtomicBw,
            &["-s", "16"],
            Conflict,
            "Message size cannot be changed for Atomic tests",
        ),
        (
            Tool::AtomicBw,
            &["-a"],
            Conflict,
            "Message size cannot be changed for Atomic tests",
        ),
        (
            Tool::WriteBw,
            &["-c", "UD"],
            Conflict,
            "UD connection only possible in SEND verb",
        ),
        (
            Tool::ReadBw,
            &["-c", "UC"],
            Conflict,
            "UC connection not possible in READ/ATOMIC verbs",
        ),
        (
            Tool::WriteBw,
            &["--write_with_imm", "--send_with_imm"],
            Conflict,
            "Send_with_imm can only be used",
        ),
        (
            Tool::ReadLat,
            &["--write_with_imm"],
            Conflict,
            "Write_with_imm can only be used",
        ),
        (
            Tool::WriteBw,
            &["--use_rss"],
            Unsupported,
            "RSS isn't supported",
        ),
        (Tool::WriteBw, &["--use_hl=0"], Unsupported, "accelerator memory option"),
        (Tool::WriteBw, &["--use_ooo"], Unsupported, "out-of-order"),
        (
            Tool::WriteBw,
            &["--data_validation"],
            Unsupported,
            "data validation",
        ),
        (
            Tool::WriteBw,
            &["--report-histogramX"],
            Usage,
            "Invalid Command or flag",
        ),
        (Tool::WriteBw, &["-G"], Usage, "Invalid Command or flag"),
    ];
    for (tool, a, kind, msg) in cases {
        let e = err(*tool, a);
        assert_eq!(e.kind, *kind, "{tool} {a:?}: {e}");
        assert!(e.message.contains(msg), "{tool} {a:?}: {e}");
        assert_eq!(e.exit_code(), 1);
        let line = e.to_string();
        assert!(!line.contains('\n') && line.starts_with('-'), "{line}");
    }
    assert!(err(Tool::WriteBw, &["--bogus"]).shows_usage());
}

/// A long option copied with a typo gets `did you mean --x?` (printed on a line after the
/// error); the error itself, its kind and exit status are what they were.
#[test]
fn unknown_long_options_name_the_option_probably_meant() {
    for (tool, a, hint) in [
        (Tool::WriteBw, "--tx_depth=64", Some("did you mean --tx-depth?")),
        (Tool::WriteBw, "--ib_dev", Some("did you mean --ib-dev?")),
        (Tool::SendLat, "--report-histogramm", Some("did you mean --report-histogram?")),
        (Tool::WriteBw, "--bidirectonal", Some("did you mean --bidirectional?")),
        (Tool::ReadBw, "--gid_index", Some("did you mean --gid-index?")),
        (Tool::WriteBw, "--run_infinitly", Some("did you mean --run_infinitely?")),
        (Tool::WriteBw, "--bogus", None),
        (Tool::WriteBw, "--x", None),
        // Short options get no guess: one letter is one edit from every other.
        (Tool::WriteBw, "-G", None),
    ] {
        let e = err(tool, &[a]);
        assert_eq!(e.hint.as_deref(), hint, "{tool} {a}");
        assert_eq!((e.kind, e.exit_code()), (ErrorKind::Usage, 1), "{tool} {a}");
        assert_eq!(e.message, "Invalid Command or flag (unknown option)");
        assert!(!e.to_string().contains("did you mean"), "the error line itself is unchanged");
    }
}

#[test]
fn raw_ethernet_options_are_accepted_and_ignored() {
    let p = run(
        Tool::WriteBw,
        &[
            "-B",
            "00:11:22:33:44:55",
            "-E",
            "00:11:22:33:44:66",
            "-J",
            "1.2.3.4",
            "-j",
            "1.2.3.5",
            "-K",
            "5000",
            "-k",
            "5001",
            "-Z",
            "-P",
            "-v",
            "--tcp",
            "--ethertype",
            "0x800",
            "--vlan_pcp=3",
            "--raw_mcast",
        ],
    );
    assert_eq!(p, run(Tool::WriteBw, &[]));
}

// ---------------------------------------------------------------------------------------------
// Spellings and getopt conventions

#[test]
fn both_606_and_629_spellings() {
    let pairs: &[(Tool, &[&str], &[&str])] = &[
        (Tool::WriteBw, &["--com_rdma_cm"], &["--comm_rdma_cm"]),
        (
            Tool::WriteBw,
            &["--source_ip", "10.0.0.2"],
            &["--bind_source_ip", "10.0.0.2"],
        ),
        (
            Tool::WriteLat,
            &["--report-histogram"],
            &["--report-histogrm"],
        ),
        (Tool::WriteLat, &["-z"], &["--comm_rdma_cm"]),
    ];
    for (tool, a, b) in pairs {
        assert_eq!(run(*tool, a), run(*tool, b), "{a:?} vs {b:?}");
    }
    assert!(run(Tool::WriteBw, &["--com_rdma_cm"]).conn.use_rdma_cm);
    assert_eq!(
        run(Tool::WriteBw, &["--bind_source_ip=1.2.3.4"])
            .dev.source_ip
            .as_deref(),
        Some("1.2.3.4")
    );
    assert!(run(Tool::WriteLat, &["--report-histogr"]).report.histogram); // prefix of both spellings
                                                                   // the same option under both spellings is a duplicate
    assert_eq!(
        err(Tool::WriteBw, &["-z", "--comm_rdma_cm"]).kind,
        ErrorKind::Duplicate
    );
    assert_eq!(
        err(Tool::WriteBw, &["--source_ip=a", "--bind_source_ip=b"]).kind,
        ErrorKind::Duplicate
    );
    // 6.29-only options
    let p = run(
        Tool::ReadBw,
        &[
            "--ipv6-addr",
            "--use-null-mr",
            "--payload_file_path=/tmp/p",
            "--cqe_poll=32",
            "--disable_dynamic_polling",
            "--no_lock",
            "--no_enhanced_reorder",
            "--pin_cores=0,2-3",
            "--connectionless",
            "--disable_numa",
        ],
    );
    assert!(
        p.dev.ipv6_addr
            && p.buf.use_null_mr
            && p.buf.disable_dynamic_polling
            && p.buf.no_lock
            && p.buf.no_enhanced_reorder
    );
    assert_eq!(p.buf.cqe_poll, Some(32));
    assert_eq!(p.buf.pin_cores.as_deref(), Some("0,2-3"));
    assert!(run(Tool::WriteBw, &["--loopback"]).loopback);
}

#[test]
fn getopt_conventions() {
    let base = run(Tool::WriteBw, &["-s", "1024"]);
    for a in [
        &["-s1024"][..],
        &["--size=1024"],
        &["--size", "1024"],
        &["--siz=1024"],
        &["--siz", "1024"],
    ] {
        assert_eq!(run(Tool::WriteBw, a), base, "{a:?}");
    }
    // clustering, with an argument taking the rest of the cluster
    let p = run(Tool::WriteBw, &["-bNFs64"]);
    assert!(p.duplex && p.no_peak && p.report.cpu_freq_f);
    assert_eq!(p.size, 64);
    let p = run(Tool::WriteBw, &["-bs", "64"]);
    assert_eq!(p.size, 64);
    // an option argument may start with '-'
    assert_eq!(
        run(Tool::WriteBw, &["-d", "-weird-dev"]).dev.ib_dev.as_deref(),
        Some("-weird-dev")
    );
    // permutation: host before options; `--` ends options; '-' is a positional
    let p = run(Tool::WriteBw, &["10.0.0.1", "-s", "64", "-n", "100"]);
    assert_eq!(
        (p.server_name.as_deref(), p.size, p.iters),
        (Some("10.0.0.1"), 64, 100)
    );
    assert_eq!(
        run(Tool::WriteBw, &["--", "-host"]).server_name.as_deref(),
        Some("-host")
    );
    assert_eq!(run(Tool::WriteBw, &["-"]).server_name.as_deref(), Some("-"));
    // errors
    let e = err(Tool::WriteBw, &["-s"]);
    assert_eq!((e.kind, e.option.as_str()), (ErrorKind::Usage, "-s"));
    assert!(e.message.contains("requires an argument"));
    let e = err(Tool::WriteBw, &["--all=1"]);
    assert_eq!((e.kind, e.option.as_str()), (ErrorKind::Usage, "--all"));
    // `--si` is ambiguous in perftest too (--size, --sig_before)
    assert_eq!(err(Tool::WriteBw, &["--si=1024"]).kind, ErrorKind::Usage);
    let e = err(Tool::WriteBw, &["--re"]);
    assert_eq!(e.kind, ErrorKind::Usage);
    assert!(e.message.contains("ambiguous"), "{e}");
    assert_eq!(run(Tool::WriteBw, &["--"]), run(Tool::WriteBw, &[]));
    assert_eq!(err(Tool::WriteBw, &["--=x"]).kind, ErrorKind::Usage);
    let e = err(Tool::WriteBw, &["-s", "64", "--size=128"]);
    assert_eq!(e.kind, ErrorKind::Duplicate);
    assert!(e.message.contains("Duplicated argument: -s"));
    assert_eq!(err(Tool::WriteBw, &["-F", "-F"]).kind, ErrorKind::Duplicate);
    assert_eq!(
        err(Tool::WriteBw, &["--out_json", "--out_json"]).kind,
        ErrorKind::Duplicate
    );
}

#[test]
fn tool_names() {
    for t in Tool::ALL {
        assert_eq!(Tool::from_name(t.name()), Some(t));
        assert_eq!(Tool::from_name(&format!("/usr/bin/{}", t.name())), Some(t));
        assert_eq!(t.to_string(), t.name());
    }
    assert_eq!(Tool::from_name("ib_write"), None);
    assert_eq!(Tool::from_name("raw_ethernet_bw"), None);
    assert_eq!(Tool::WriteBw.kind(), TestKind::Bw);
    assert_eq!(Tool::AtomicLat.kind(), TestKind::Lat);
    assert_eq!(Tool::AtomicLat.verb(), Verb::Atomic);
    assert_eq!(Verb::WriteImm.wire_value(), 3);
    assert_eq!(Connection::Ud.wire_value(), 2);
    assert_eq!(perftest::params::mtu_enum(4096), Some(5));
    assert_eq!(perftest::params::mtu_enum(1500), None);
}
