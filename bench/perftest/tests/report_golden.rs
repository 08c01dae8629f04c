//! Golden tests of the text and JSON output against real perftest 6.06 / 6.29 outputs
//! (tests/fixtures/perftest-6.29-observed/). Run-dependent values (QPN, PSN, keys, addresses,
//! numbers) are read back from the captured file and fed to our formatters; everything else —
//! every space, tab and dash — must come out identical.

use std::fs;
use std::path::PathBuf;

use perftest::oob::msg::{KeyMsg, Verb};
use perftest::report::json::{json_report, JsonResults};
use perftest::report::{
    address_line, bw_result_header, bw_result_line, header, lat_result_header, lat_result_line, sample_dump, AddrShow,
    BwColumns, BwLine, LinkType, OutputMode, ReportHeader, Side, Style, DASH_LINE,
};
use perftest::stats::LatencyStats;

fn dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/perftest-6.29-observed")
}

struct Capture {
    cmd: String,
    body: String,
}

fn load(name: &str) -> Capture {
    let text = fs::read_to_string(dir().join(name)).expect(name);
    let (first, rest) = text.split_once('\n').expect("command line");
    Capture { cmd: first.trim_start_matches("$ ").to_string(), body: rest.to_string() }
}

fn hexval(tok: &str) -> u64 {
    let t = tok.trim_start_matches("0x");
    u64::from_str_radix(t, 16).expect(tok)
}

/// Parse ` local address: LID 0000 QPN 0x0012 PSN 0x7e1fc1 [OUT 0x80] [RKey … VAddr …]` + GID line.
fn parse_addr(line: &str, gid_line: &str) -> KeyMsg {
    let t: Vec<&str> = line.split_whitespace().collect();
    let mut k = KeyMsg::default();
    let mut i = 0;
    while i + 1 < t.len() {
        match t[i] {
            "LID" => k.lid = hexval(t[i + 1]) as u16,
            "QPN" => k.qpn = hexval(t[i + 1]) as u32,
            "PSN" => k.psn = hexval(t[i + 1]) as u32,
            "OUT" => k.out_reads = hexval(t[i + 1]) as u16,
            "RKey" => k.rkey = hexval(t[i + 1]) as u32,
            "VAddr" => k.vaddr = hexval(t[i + 1]),
            _ => {}
        }
        i += 1;
    }
    let g = gid_line.trim().trim_start_matches("GID: ");
    for (i, b) in g.split(':').enumerate() {
        k.gid[i] = b.parse().expect("gid byte");
    }
    k
}

struct Setup {
    verb: Verb,
    bw: bool,
    client: bool,
    style: Style,
    rdma_cm: bool,
}

fn setup(cmd: &str) -> Setup {
    let tool = cmd.split_whitespace().next().unwrap().rsplit('/').next().unwrap().to_string();
    let verb = match tool.as_str() {
        "ib_write_bw" | "ib_write_lat" => Verb::Write,
        "ib_read_bw" | "ib_read_lat" => Verb::Read,
        "ib_send_bw" | "ib_send_lat" => Verb::Send,
        _ => Verb::Atomic,
    };
    let last = cmd.split_whitespace().last().unwrap();
    Setup {
        verb,
        bw: tool.ends_with("_bw"),
        client: last.contains('.') && last.chars().next().unwrap().is_ascii_digit(),
        style: if cmd.starts_with("/usr/bin") { Style::V606 } else { Style::V629 },
        rdma_cm: cmd.contains(" -R "),
    }
}

fn report_header(s: &Setup) -> ReportHeader {
    let mut h = ReportHeader::new(s.verb, s.bw, "rxe0");
    h.is_client = s.client;
    h.link_type = LinkType::Ethernet;
    h.gid_index = Some(1);
    h.mtu_bytes = 1024;
    h.pcie_relax_order = Some(s.verb != Verb::Write || s.bw); // write_lat forces RO off
    h.lock_free = Some(false);
    h.cqe_poll = Some(16);
    h.numa_node = Some(0);
    h.cq_mod = if s.verb == Verb::Atomic { 100 } else { 1 };
    h.tx_depth = if s.bw { 128 } else { 1 };
    h.rx_depth = 200;
    h.out_reads = 128;
    h.rdma_cm_qps = s.rdma_cm;
    h.data_ex_rdma_cm = s.rdma_cm;
    h
}

/// The captured text from the header's opening dash line to the end.
fn from_header(body: &str) -> String {
    let lines: Vec<&str> = body.split_inclusive('\n').collect();
    let title = lines.iter().position(|l| l.starts_with("                    ")).expect("title line");
    lines[title - 1..].concat()
}

/// Rebuild the whole output from the header on, with values taken from the capture.
fn rebuild(c: &Capture) -> String {
    let s = setup(&c.cmd);
    let h = report_header(&s);
    let body = from_header(&c.body);
    let lines: Vec<&str> = body.lines().collect();
    let li = lines.iter().position(|l| l.starts_with(" local address:")).expect("local");
    let ri = lines.iter().position(|l| l.starts_with(" remote address:")).expect("remote");
    let local = parse_addr(lines[li], lines[li + 1]);
    let remote = parse_addr(lines[ri], lines[ri + 1]);
    let show = AddrShow { verb: s.verb, rdma_cm: s.rdma_cm, srqn: false, gid: true, mgid: false, dlid: None };
    let mut out = header(&h, s.style);
    out.push_str(&address_line(Side::Local, &local, &show));
    out.push_str(&address_line(Side::Remote, &remote, &show));
    let res = lines[lines.len() - 2];
    let v: Vec<&str> = res.split_whitespace().collect();
    let num = |i: usize| -> f64 { v[i].parse().expect("number") };
    if s.bw {
        out.push_str(&bw_result_header(s.style, BwColumns::default()));
        let l = BwLine {
            size: v[0].parse().unwrap(),
            iters: v[1].parse().unwrap(),
            bw_peak: num(2),
            bw_avg: num(3),
            msg_rate: num(4),
            ..Default::default()
        };
        out.push_str(&bw_result_line(s.style, BwColumns::default(), &l, None, OutputMode::Full));
    } else {
        out.push_str(&lat_result_header(false, false));
        out.push_str(&lat_result_line(
            v[0].parse().unwrap(),
            v[1].parse().unwrap(),
            &lat_stats(&v),
            None,
            OutputMode::Full,
        ));
    }
    out.push_str(DASH_LINE);
    out
}

fn lat_stats(v: &[&str]) -> LatencyStats {
    let n = |i: usize| -> f64 { v[i].parse().unwrap() };
    LatencyStats {
        measured: 0,
        t_min: n(2),
        t_max: n(3),
        t_typical: n(4),
        t_avg: n(5),
        t_stdev: n(6),
        p99: n(7),
        p99_9: n(8),
    }
}

#[test]
fn text_output_matches_every_capture() {
    let mut checked = 0;
    for e in fs::read_dir(dir()).unwrap() {
        let name = e.unwrap().file_name().into_string().unwrap();
        if !name.starts_with("ib_") || !name.ends_with(".txt") {
            continue;
        }
        // Cross-version -R pairs fail before any output.
        if name.contains(".R.") && (name.contains("NEWcli-OLDsrv") || name.contains("OLDcli-NEWsrv")) {
            continue;
        }
        let c = load(&name);
        let want = from_header(&c.body);
        let got = rebuild(&c);
        if got != want {
            for (i, (a, b)) in got.lines().zip(want.lines()).enumerate() {
                if a != b {
                    panic!("{name}: line {i} differs\n ours: {a:?}\n real: {b:?}");
                }
            }
            panic!("{name}: differs in length\nours:\n{got}\nreal:\n{want}");
        }
        checked += 1;
    }
    assert!(checked >= 24, "only {checked} captures checked");
}

#[test]
fn histogram_dump_matches_and_stats_agree() {
    for name in [
        "H.ib_write_lat.OLDcli-OLDsrv.client.txt",
        "H.ib_write_lat.OLDcli-OLDsrv.server.txt",
        "H.ib_write_lat.NEWcli-NEWsrv.client.txt",
        "H.ib_write_lat.NEWcli-NEWsrv.server.txt",
    ] {
        let c = load(name);
        let body = from_header(&c.body);
        let start = body.find("#, usec\n").expect("dump");
        let dump_end = start + body[start..].find(DASH_LINE).expect("dash after dump");
        let dump = &body[start..dump_end];
        let samples: Vec<f64> = dump.lines().skip(1).map(|l| l.split_once(", ").unwrap().1.parse().unwrap()).collect();
        assert_eq!(samples.len(), 197, "{name}: -n 200 dumps 197 samples");
        assert_eq!(sample_dump(&samples, false), dump, "{name}");

        let tail = &body[dump_end..];
        let res: Vec<&str> = tail.lines().nth(2).unwrap().split_whitespace().collect();
        let st = lat_stats(&res);
        let want_tail = format!(
            "{}{}{DASH_LINE}",
            lat_result_header(false, false),
            lat_result_line(2, 200, &st, None, OutputMode::Full)
        );
        assert_eq!(tail, want_tail, "{name}");

        // The statistics follow from the (6-digit) dumped samples: min, median index m/2,
        // 99% = index ceil(0.99 m) = the last dumped sample.
        let m = samples.len();
        let r2 = |x: f64| format!("{x:.2}");
        assert_eq!(r2(samples[0]), r2(st.t_min), "{name} t_min");
        assert_eq!(r2(samples[m / 2]), r2(st.t_typical), "{name} t_typical");
        assert_eq!(r2(samples[(m as f64 * 0.99).ceil() as usize]), r2(st.p99), "{name} p99");
        let avg = samples.iter().sum::<f64>() / m as f64;
        assert!((avg - st.t_avg).abs() < 0.011, "{name} t_avg {avg} vs {}", st.t_avg);
        let var: f64 = samples.iter().map(|x| f64::from(((avg - x) as i32).pow(2))).sum::<f64>() / m as f64;
        assert!((var.sqrt() - st.t_stdev).abs() < 0.02, "{name} stdev {} vs {}", var.sqrt(), st.t_stdev);
    }
}

fn json_header(style: Style, client: bool) -> ReportHeader {
    let s = Setup { verb: Verb::Write, bw: true, client, style, rdma_cm: false };
    report_header(&s)
}

#[test]
fn json_files_match() {
    for (file, style, client) in [
        ("x.json", Style::V629, true),
        ("xs.json", Style::V629, false),
        ("x606.json", Style::V606, true),
        ("xs606.json", Style::V606, false),
    ] {
        let want = fs::read_to_string(dir().join(file)).unwrap();
        let get = |key: &str| -> f64 {
            let l = want.lines().find(|l| l.trim_start_matches('"').starts_with(key)).expect(key);
            l.rsplit(':').next().unwrap().trim().trim_end_matches(',').parse().unwrap()
        };
        let r = JsonResults::Bw {
            size: 65536,
            iters: 200,
            bw_peak: get("BW_peak"),
            bw_avg: get("BW_average"),
            msg_rate: get("MsgRate"),
            high_precision: false,
        };
        let got = json_report(&json_header(style, client), &r, style, None, OutputMode::Full);
        assert_eq!(got, want, "{file}");
        if style == Style::V629 {
            serde_json::from_str::<serde_json::Value>(&got).expect("6.29 JSON parses");
        }
    }
}
