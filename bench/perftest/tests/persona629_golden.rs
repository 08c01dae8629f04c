//! Golden tests of the 6.29 persona against upstream perftest 6.29's own output on the VM bed's
//! rxe device (tests/fixtures/perftest-6.29/, see its README.md), and of the 6.06 persona's
//! header against Debian's 6.06 on the same bed (tests/fixtures/perftest-6.29/compare606/).
//!
//! * `-h`, `--help`, `--version` of the eight tools: stdout byte for byte, stderr empty, exit 1.
//! * Every captured run (the eight defaults and the variants): the command line of each side is
//!   parsed as the tool parses it, and what the persona decides — the parser-time notes, the
//!   server's banner and the whole header block — must equal the capture up to the header's
//!   closing dash line. The address lines, the result-table titles and every result line are
//!   then rendered from the values read back from the capture (QPN, PSN, RKey, VAddr, GID and
//!   all figures are run-dependent: that is the masking) and must equal the captured lines.
//! * `--out_json` files: rendered from the run's header and the captured figures, byte for byte.
//!
//! Device facts are those of the bed: rxe0, RoCE, GID index 1, MTU 1024, no inline, 128
//! outstanding reads, NUMA node 0.

use std::fs;
use std::path::PathBuf;

use perftest::oob::msg::{KeyMsg, Verb as WireVerb};
use perftest::params::{self, ParseOutcome, Params, Persona, TestKind, Tool};
use perftest::report::json::{json_report, JsonResults};
use perftest::report::{
    address_line, bw_result_header, bw_result_line, header, lat_result_header, lat_result_line, AddrShow, BwColumns,
    BwLine, OutputMode, Side, Style, DASH_LINE, WAITING_FOR_CLIENT,
};
use perftest::stats::LatencyStats;
use perftest::tool::header::{report_header, HeaderFacts};

const TOOLS: [(&str, Tool); 8] = [
    ("ib_write_bw", Tool::WriteBw),
    ("ib_write_lat", Tool::WriteLat),
    ("ib_read_bw", Tool::ReadBw),
    ("ib_read_lat", Tool::ReadLat),
    ("ib_send_bw", Tool::SendBw),
    ("ib_send_lat", Tool::SendLat),
    ("ib_atomic_bw", Tool::AtomicBw),
    ("ib_atomic_lat", Tool::AtomicLat),
];

fn fixtures() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/perftest-6.29")
}

fn read(rel: &str) -> String {
    fs::read_to_string(fixtures().join(rel)).unwrap_or_else(|e| panic!("{rel}: {e}"))
}

fn tool_of(name: &str) -> Tool {
    TOOLS.iter().find(|(n, _)| *n == name).unwrap_or_else(|| panic!("tool {name}")).1
}

fn args(words: &[&str]) -> Vec<String> {
    words.iter().map(|s| s.to_string()).collect()
}

fn parse_run(tool: Tool, a: &[String], persona: Persona) -> Box<Params> {
    match params::parse_with_env(tool, a, Some(persona.version())) {
        Ok(ParseOutcome::Run(p)) => p,
        other => panic!("{a:?} does not parse to a run: {other:?}"),
    }
}

// ------------------------------------------------------------------------------------------------
// -h / --help / --version

#[test]
fn help_and_version_of_all_eight_tools_are_629s() {
    for (name, tool) in TOOLS {
        for (flag, stem) in [("-h", "h"), ("--help", "help"), ("--version", "version")] {
            let want = read(&format!("help/{name}.{stem}.stdout"));
            assert_eq!(read(&format!("help/{name}.{stem}.stderr")), "", "{name} {flag}: 6.29 prints nothing on stderr");
            assert_eq!(read(&format!("help/{name}.{stem}.rc")).trim(), "1", "{name} {flag}");
            // The option and the environment variable, the option before or after the flag.
            let outcomes = [
                params::parse_with_env(tool, &args(&["--perftest-version", "6.29", flag]), None),
                params::parse_with_env(tool, &args(&[flag, "--perftest-version=6.29"]), Some("6.06")),
                params::parse_with_env(tool, &args(&[flag]), Some("6.29")),
            ];
            for o in outcomes {
                let (text, rc) = match o {
                    Ok(ParseOutcome::Help(t)) => (t, params::EXIT_HELP),
                    Ok(ParseOutcome::Version(t)) => (t, params::EXIT_VERSION),
                    other => panic!("{name} {flag}: {other:?}"),
                };
                assert_eq!(rc, 1);
                if text != want {
                    let first = text.lines().zip(want.lines()).position(|(a, b)| a != b);
                    panic!("{name} {flag} differs from 6.29 (first differing line {first:?}):\n--- ours\n{text}\n--- 6.29\n{want}");
                }
            }
        }
    }
}

#[test]
fn the_default_persona_is_629() {
    for (name, tool) in TOOLS {
        let v = params::parse_with_env(tool, &args(&["-V"]), None);
        assert_eq!(v, Ok(ParseOutcome::Version("Version: 6.29\n".into())), "{name}");
    }
}

#[test]
fn the_606_persona_still_prints_606s_help_and_version() {
    for (name, tool) in TOOLS {
        let h = params::parse_with_env(tool, &args(&["-h"]), Some("6.06"));
        let want = fs::read_to_string(PathBuf::from(env!("CARGO_MANIFEST_DIR")).join(format!("tests/fixtures/help/{name}.help.txt")))
            .unwrap();
        assert_eq!(h, Ok(ParseOutcome::Help(want)), "{name}");
        let v = params::parse_with_env(tool, &args(&["--perftest-version", "6.06", "-V"]), Some("6.29"));
        assert_eq!(v, Ok(ParseOutcome::Version("Version: 6.06\n".into())), "{name}");
    }
}

#[test]
fn a_bad_persona_is_one_clear_error() {
    let e = params::parse_with_env(Tool::WriteBw, &args(&["--perftest-version", "6.28"]), None).unwrap_err();
    assert_eq!(e.exit_code(), 1);
    assert!(e.to_string().contains("give 6.06 or 6.29"), "{e}");
    let e = params::parse_with_env(Tool::WriteBw, &args(&["-V"]), Some("629")).unwrap_err();
    assert!(e.to_string().contains(params::ENV_PERSONA), "{e}");
}

// ------------------------------------------------------------------------------------------------
// runs

/// The command line of each side of a captured run, from output/commands.txt.
fn commands(dir: &str, run: &str) -> (Vec<String>, Vec<String>) {
    let text = read(&format!("{dir}/commands.txt"));
    let mut lines = text.lines().skip_while(|l| l.trim() != run).skip(1);
    let mut side = |which: &str| -> Vec<String> {
        let l = lines.find(|l| l.trim_start().starts_with(which)).unwrap_or_else(|| panic!("{run}: no {which} line"));
        l.trim_start().trim_start_matches(which).split_whitespace().map(String::from).collect()
    };
    let server = side("server:");
    let client = side("client:");
    (server, client)
}

fn facts(p: &Params) -> HeaderFacts {
    let read_like = matches!(p.tool, Tool::ReadBw | Tool::ReadLat | Tool::AtomicBw | Tool::AtomicLat);
    HeaderFacts {
        device: "rxe0".into(),
        vendor_part_id: 0,
        ethernet: true,
        gid_index: Some(1),
        gid_index2: None,
        is_client: p.machine == params::Role::Client,
        mtu_bytes: 1024,
        inline_size: 0,
        out_reads: if read_like { 128 } else { 0 },
        numa_node: Some(0),
    }
}

fn hexval(tok: &str) -> u64 {
    u64::from_str_radix(tok.trim_start_matches("0x"), 16).expect(tok)
}

fn parse_addr(line: &str, gid_line: Option<&str>) -> KeyMsg {
    let t: Vec<&str> = line.split_whitespace().collect();
    let mut k = KeyMsg::default();
    for w in t.windows(2) {
        match w[0] {
            "LID" => k.lid = hexval(w[1]) as u16,
            "QPN" => k.qpn = hexval(w[1]) as u32,
            "PSN" => k.psn = hexval(w[1]) as u32,
            "OUT" => k.out_reads = hexval(w[1]) as u16,
            "RKey" => k.rkey = hexval(w[1]) as u32,
            "VAddr" => k.vaddr = hexval(w[1]),
            _ => {}
        }
    }
    if let Some(g) = gid_line {
        for (i, b) in g.trim().trim_start_matches("GID: ").split(':').enumerate() {
            k.gid[i] = b.parse().expect("gid byte");
        }
    }
    k
}

fn nums(line: &str) -> Vec<f64> {
    line.split_whitespace().map(|w| w.parse::<f64>().unwrap_or_else(|_| panic!("number {w:?} in {line:?}"))).collect()
}

fn wire_verb(p: &Params) -> WireVerb {
    match p.tool {
        Tool::WriteBw | Tool::WriteLat => WireVerb::Write,
        Tool::ReadBw | Tool::ReadLat => WireVerb::Read,
        Tool::SendBw | Tool::SendLat => WireVerb::Send,
        Tool::AtomicBw | Tool::AtomicLat => WireVerb::Atomic,
    }
}

fn columns(p: &Params) -> BwColumns {
    BwColumns { gbits: p.report.fmt == params::ReportFormat::Gbs, per_port: false, cpu_util: false }
}

/// Checks one side of a captured run; returns how many lines were rendered and compared.
fn check_side(dir: &str, run: &str, side: &str, cmd: &[String], persona: Persona) -> usize {
    let style = persona.style();
    let tool = tool_of(&cmd[0]);
    let p = parse_run(tool, &cmd[1..], persona);
    let got = read(&format!("{dir}/{run}.{side}.stdout"));
    let what = format!("{dir}/{run}.{side}");

    // Exact: notes, banner, header.
    let mut ours: String = p.notices.iter().filter(|n| !n.to_stderr).map(|n| n.text.as_str()).collect();
    // The device stage: rxe is not in perftest's inline table, so tools that set an inline size
    // (read/atomic always do) print a dash line here and their note on stderr.
    let read_like = matches!(p.tool, Tool::ReadBw | Tool::ReadLat | Tool::AtomicBw | Tool::AtomicLat);
    if read_like || p.inline_size.is_some() {
        ours.push_str(DASH_LINE);
    }
    if p.server_name.is_none() {
        ours.push_str(WAITING_FOR_CLIENT);
    }
    let h = report_header(&p, &facts(&p));
    ours.push_str(&header(&h, style));
    if !got.starts_with(&ours) {
        let n = got.lines().zip(ours.lines()).position(|(a, b)| a != b);
        panic!("{what}: preamble/header differ at line {n:?}\n--- ours\n{ours}--- captured\n{got}");
    }
    let mut compared = ours.lines().count();

    // Rendered from the captured values: address lines, table titles, result lines.
    let rest: Vec<&str> = got[ours.len()..].split_inclusive('\n').collect();
    let rdma_cm = p.conn.use_rdma_cm;
    let show = AddrShow {
        verb: if rdma_cm { WireVerb::Send } else { wire_verb(&p) },
        rdma_cm,
        srqn: false,
        gid: true,
        mgid: false,
        dlid: None,
    };
    let bw = p.kind == TestKind::Bw;
    let mut i = 0;
    while i < rest.len() {
        let line = rest[i];
        let next = rest.get(i + 1).copied();
        let (rendered, used) = if let Some(s) =
            line.strip_prefix(" local address:").map(|_| Side::Local).or(line.strip_prefix(" remote address:").map(|_| Side::Remote))
        {
            let gid = next.filter(|n| n.starts_with(" GID:"));
            (address_line(s, &parse_addr(line, gid), &show), 1 + usize::from(gid.is_some()))
        } else if line.starts_with(" #bytes") {
            if bw {
                (bw_result_header(style, columns(&p))[DASH_LINE.len()..].to_string(), 1)
            } else {
                (lat_result_header(false, false)[DASH_LINE.len()..].to_string(), 1)
            }
        } else if line.starts_with(' ') && line[1..].starts_with(|c: char| c.is_ascii_digit()) {
            let v = nums(line);
            if bw {
                let l = BwLine { size: v[0] as u64, iters: v[1] as u64, bw_peak: v[2], bw_avg: v[3], msg_rate: v[4], ..Default::default() };
                (bw_result_line(style, columns(&p), &l, None, OutputMode::Full), 1)
            } else {
                let st = LatencyStats {
                    t_min: v[2],
                    t_max: v[3],
                    t_typical: v[4],
                    t_avg: v[5],
                    t_stdev: v[6],
                    p99: v[7],
                    p99_9: v[8],
                    measured: 0,
                };
                (lat_result_line(v[0] as u64, v[1] as u64, &st, None, OutputMode::Full), 1)
            }
        } else {
            // Dash lines, the -H/-U sample dumps, the end of an infinite run: not persona-made.
            i += 1;
            continue;
        };
        let want: String = rest[i..i + used].concat();
        assert_eq!(rendered, want, "{what}: line {}", compared + i + 1);
        i += used;
        compared += used;
    }
    compared
}

fn runs(dir: &str) -> Vec<String> {
    let text = read(&format!("{dir}/commands.txt"));
    text.lines().filter(|l| l.starts_with("ib_")).map(|l| l.trim().to_string()).collect()
}

#[test]
fn every_captured_629_run_matches_its_header_and_lines() {
    let all = runs("output");
    // The eight defaults and every variant the captures hold.
    assert!(all.len() >= 31, "{all:?}");
    for (name, _) in TOOLS {
        assert!(all.contains(&format!("{name}.default")), "{name}.default missing");
    }
    for run in &all {
        let (server, client) = commands("output", run);
        for (side, cmd) in [("server", &server), ("client", &client)] {
            let n = check_side("output", run, side, cmd, Persona::V629);
            assert!(n > 20, "{run}.{side}: only {n} lines compared");
        }
    }
}

#[test]
fn the_606_persona_matches_606s_headers_on_the_same_bed() {
    for (name, _) in TOOLS {
        let run = format!("{name}.default");
        let (server, client) = commands("compare606", &run);
        for (side, cmd) in [("server", &server), ("client", &client)] {
            check_side("compare606", &run, side, cmd, Persona::V606);
        }
    }
}

#[test]
fn json_files_match_629s() {
    let mut files = 0;
    for (name, tool) in TOOLS {
        let run = format!("{name}.json");
        let (server, client) = commands("output", &run);
        for (side, cmd) in [("server", &server), ("client", &client)] {
            let path = fixtures().join(format!("output/{run}.{side}.json"));
            let Ok(want) = fs::read_to_string(&path) else {
                // The read_lat and atomic_lat servers write no file (6.06 neither).
                assert!(matches!(tool, Tool::ReadLat | Tool::AtomicLat) && side == "server", "{run}.{side}.json missing");
                continue;
            };
            let p = parse_run(tool, &cmd[1..], Persona::V629);
            assert!(p.report.out_json, "{run}");
            let h = report_header(&p, &facts(&p));
            let v: serde_json::Value = serde_json::from_str(&want).expect("6.29 writes valid JSON");
            let r = &v["results"];
            let f = |k: &str| r[k].as_f64().unwrap_or_else(|| panic!("{run}: {k}"));
            let res = if p.kind == TestKind::Bw {
                JsonResults::Bw {
                    size: f("MsgSize") as u64,
                    iters: f("n_iterations") as u64,
                    bw_peak: f("BW_peak"),
                    bw_avg: f("BW_average"),
                    msg_rate: f("MsgRate"),
                    high_precision: false,
                }
            } else {
                JsonResults::Lat {
                    size: f("MsgSize") as u64,
                    iters: f("n_iterations") as u64,
                    t_min: f("t_min"),
                    t_max: f("t_max"),
                    t_typical: f("t_typical"),
                    t_avg: f("t_avg"),
                    t_stdev: f("t_stdev"),
                    p99: f("percentile_99"),
                    p99_9: f("percentile_99.9"),
                }
            };
            assert_eq!(json_report(&h, &res, Style::V629, None, OutputMode::Full), want, "{run}.{side}.json");
            files += 1;
        }
    }
    assert_eq!(files, 14);
}

#[test]
fn notes_follow_the_persona() {
    let notes = |tool: Tool, a: &[&str], persona: Persona| -> String {
        parse_run(tool, &args(a), persona).notices.iter().filter(|n| !n.to_stderr).map(|n| n.text.clone()).collect()
    };
    const PEAK: &str = " WARNING: BW peak won't be measured in this run.\n";
    const DYN: &str = "Disabling dynamic polling\n";
    assert_eq!(notes(Tool::SendBw, &[], Persona::V629), format!("{PEAK}{DYN}"));
    assert_eq!(notes(Tool::SendBw, &["host"], Persona::V629), DYN);
    assert_eq!(notes(Tool::WriteBw, &["host"], Persona::V629), "");
    assert_eq!(notes(Tool::WriteBw, &["-D", "3", "host"], Persona::V629), PEAK);
    assert_eq!(notes(Tool::WriteBw, &["-n", "30000", "host"], Persona::V629), PEAK);
    assert_eq!(notes(Tool::WriteBw, &["-N", "-n", "30000", "host"], Persona::V629), "");
    assert_eq!(notes(Tool::WriteLat, &["host"], Persona::V629), DYN);
    assert_eq!(notes(Tool::SendBw, &["-b", "-n", "5000", "host"], Persona::V629), DYN);
    // 6.06 prints none of these.
    for (t, a) in [(Tool::SendBw, &[][..]), (Tool::WriteBw, &["-D", "3", "host"][..]), (Tool::WriteLat, &["host"][..])] {
        assert_eq!(notes(t, a, Persona::V606), "", "{t:?} {a:?}");
    }
    // --cqe_poll fixes the batch: the header says so (6.29 prints the number).
    let p = parse_run(Tool::WriteBw, &args(&["--cqe_poll", "8", "host"]), Persona::V629);
    assert!(!p.buf.dynamic_cqe_poll);
    assert_eq!(p.buf.cqe_poll_batch, 8);
    let p = parse_run(Tool::WriteBw, &args(&["host"]), Persona::V629);
    assert!(p.buf.dynamic_cqe_poll);
}

// ------------------------------------------------------------------------------------------------
// NEGOTIATE (tcp/): the block our parameters make against 6.29's on the wire

/// The 320-byte blocks of a transcript: (client's, server's).
fn negotiate_blocks(name: &str) -> (Vec<u8>, Vec<u8>) {
    let text = read(&format!("tcp/{name}.transcript.txt"));
    let lines: Vec<&str> = text.lines().collect();
    let block = |dir: &str| -> Vec<u8> {
        let at = lines
            .iter()
            .position(|l| l.contains(&format!("{dir} len=320")))
            .unwrap_or_else(|| panic!("{name}: no {dir} block"));
        let hex = lines[at..].iter().find_map(|l| l.trim_start().strip_prefix("hex : ")).expect("hex line");
        (0..hex.len()).step_by(2).map(|i| u8::from_str_radix(&hex[i..i + 2], 16).unwrap()).collect()
    };
    (block("C->S"), block("S->C"))
}

#[test]
fn negotiate_blocks_equal_629s_on_the_wire() {
    use perftest::oob::msg::{Negotiate, NegotiateLayout};
    use perftest::tool::negotiate::negotiate_block;
    // transcript, tool, extra options of (server, client), effective size of (server, client)
    type Case<'a> = (&'a str, &'a str, &'a [&'a str], &'a [&'a str], u64, u64);
    let cases: [Case; 13] = [
        ("ib_write_bw", "ib_write_bw", &[], &[], 65536, 65536),
        ("ib_write_lat", "ib_write_lat", &[], &[], 2, 2),
        ("ib_read_bw", "ib_read_bw", &[], &[], 65536, 65536),
        ("ib_read_lat", "ib_read_lat", &[], &[], 2, 2),
        ("ib_send_bw", "ib_send_bw", &[], &[], 65536, 65536),
        ("ib_send_lat", "ib_send_lat", &[], &[], 2, 2),
        ("ib_atomic_bw", "ib_atomic_bw", &[], &[], 8, 8),
        ("ib_atomic_lat", "ib_atomic_lat", &[], &[], 8, 8),
        ("ib_write_bw_q2", "ib_write_bw", &["-q", "2"], &["-q", "2"], 65536, 65536),
        // -c UD: the size after the clamp to the 1024-byte MTU, as the tool sends it
        ("ib_send_bw_ud", "ib_send_bw", &["-c", "UD"], &["-c", "UD"], 1024, 1024),
        ("ib_read_bw_o4", "ib_read_bw", &["-o", "4"], &["-o", "4"], 65536, 65536),
        ("ib_write_bw_n50", "ib_write_bw", &["-F", "-n", "50"], &["-F", "-n", "50"], 65536, 65536),
        ("ib_write_bw_mismatch_s", "ib_write_bw", &["-s", "65536"], &["-s", "4096"], 65536, 4096),
    ];
    for (name, tool, srv_opts, cli_opts, srv_size, cli_size) in cases {
        let (cli_wire, srv_wire) = negotiate_blocks(name);
        for (wire, opts, size, host) in [(&cli_wire, cli_opts, cli_size, true), (&srv_wire, srv_opts, srv_size, false)] {
            let mut a = args(&["-d", "rxe0", "-x", "1"]);
            a.extend(args(opts));
            if host {
                a.push("127.0.0.1".into());
            }
            let p = parse_run(tool_of(tool), &a, Persona::V629);
            let theirs = Negotiate::decode(wire).expect("6.29's block decodes");
            // The device image is the kernel's (GUIDs change per boot): carry theirs, and check
            // that the fields we fill sit where 6.29 has them.
            let ours = negotiate_block(&p, size, theirs.device_attr);
            let bytes = ours.encode(NegotiateLayout::WithMlx5dv);
            assert_eq!(bytes.len(), 320);
            assert_eq!(&bytes[..80], &wire[..80], "{name} {}: parameter fields", if host { "client" } else { "server" });
            assert_eq!(&bytes, wire, "{name}: whole block");
            let blob = perftest::oob::msg::device_attr_blob(0x00ff_ffff, 0, 128);
            let mine = Negotiate { device_attr: blob, ..ours };
            assert_eq!((mine.vendor_id(), mine.max_qp_rd_atom()), (theirs.vendor_id(), theirs.max_qp_rd_atom()), "{name}");
        }
    }
}

#[test]
fn negotiation_mismatch_lines_are_629s() {
    use perftest::oob::msg::{compare_negotiation, Negotiate};
    let (cli, srv) = negotiate_blocks("ib_write_bw_mismatch_s");
    let (cli, srv) = (Negotiate::decode(&cli).unwrap(), Negotiate::decode(&srv).unwrap());
    for (local, remote, side) in [(&cli, &srv, "client"), (&srv, &cli, "server")] {
        let e = compare_negotiation(local, remote).unwrap_err();
        assert_eq!(e.perftest_lines().unwrap(), read(&format!("mismatch/s4096_vs_s65536.{side}.stderr")), "{side}");
    }
}

#[test]
fn who_negotiates_with_whom() {
    use perftest::oob::msg::PeerVersion;
    let v = PeerVersion::from_text;
    // (peer, own): 6.29 only with ≥ 6.28; a 6.28 peer sends its block to anyone.
    for (peer, own, want) in [
        ("6.29", "6.29", true),
        ("6.28", "6.29", true),
        ("6.06", "6.29", false),
        ("6.29", "6.06", false),
        ("6.28", "6.06", true),
        ("6.06", "6.06", false),
    ] {
        assert_eq!(v(peer).negotiates_with(&v(own)), want, "peer {peer}, own {own}");
    }
    for p in Persona::ALL {
        assert_eq!(p.wire_version(), p.version());
    }
}

#[test]
fn our_option_leaves_perftest_prefixes_alone() {
    // `--perf` is perftest's `--perform_warm_up` (our `--perftest-version` does not make it
    // ambiguous); a prefix only ours has still selects ours.
    let p = parse_run(Tool::WriteBw, &args(&["--perf", "host"]), Persona::V606);
    assert!(p.buf.perform_warm_up);
    let p = parse_run(Tool::WriteBw, &args(&["--perftest=6.29", "host"]), Persona::V606);
    assert_eq!(p.persona, Persona::V629);
}
