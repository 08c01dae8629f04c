//! Replays every message of every captured perftest 6.06 TCP exchange (tests/fixtures/tcp/)
//! against our decoders and encoders, and checks that our per-tool plans produce exactly the
//! captured sequence of blocks in both directions.

use std::fs;
use std::path::PathBuf;

use perftest::oob::msg::{self, BwReport, KeyFormat, KeyMsg};
use perftest::oob::plan::{plan, PlanOptions, Role, Step, Tool};

#[derive(Debug, Clone)]
struct Msg {
    idx: usize,
    c2s: bool,
    bytes: Vec<u8>,
}

fn fixtures() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/tcp")
}

fn unhex(s: &str) -> Vec<u8> {
    (0..s.len() / 2).map(|i| u8::from_str_radix(&s[2 * i..2 * i + 2], 16).expect("hex")).collect()
}

fn parse(name: &str) -> Vec<Msg> {
    let text = fs::read_to_string(fixtures().join(format!("{name}.transcript.txt"))).expect("fixture");
    let mut out = Vec::new();
    let mut cur: Option<(usize, bool, usize)> = None;
    for line in text.lines() {
        if let Some(rest) = line.strip_prefix('[') {
            let idx: usize = rest[..2].parse().expect("index");
            let c2s = line.contains(" C->S ");
            let len: usize =
                line.split("len=").nth(1).and_then(|s| s.split_whitespace().next()).expect("len").parse().expect("len");
            cur = Some((idx, c2s, len));
        } else if let Some(h) = line.trim_start().strip_prefix("hex : ") {
            let (idx, c2s, len) = cur.take().expect("hex line after header");
            let bytes = unhex(h.trim());
            assert_eq!(bytes.len(), len, "{name} [{idx}] length");
            out.push(Msg { idx, c2s, bytes });
        }
    }
    out
}

/// Transcript name → (tool, options) as captured (all 6.06 ↔ 6.06, RoCE with -x).
fn case(name: &str) -> (Tool, PlanOptions) {
    let tool = Tool::from_name(name.split(['.', '_']).take(3).collect::<Vec<_>>().join("_").as_str()).expect("tool");
    let mut o = PlanOptions::default();
    if name.ends_with("_q2") {
        o.num_qps = 2;
    }
    if name.ends_with("_b") {
        o.bidirectional = true;
    }
    if name.ends_with("_a") {
        o.all_sizes = Some(23);
    }
    (tool, o)
}

const CASES: &[&str] = &[
    "ib_atomic_bw",
    "ib_atomic_lat",
    "ib_read_bw",
    "ib_read_bw_o4",
    "ib_read_lat",
    "ib_send_bw",
    "ib_send_bw_ud",
    "ib_send_lat",
    "ib_write_bw",
    "ib_write_bw.run2",
    "ib_write_bw.run3",
    "ib_write_bw_a",
    "ib_write_bw_b",
    "ib_write_bw_gid0",
    "ib_write_bw_m512",
    "ib_write_bw_q2",
    "ib_write_bw_s1024",
    "ib_write_lat",
];

/// Expand a plan into the blocks one side writes: (kind, length).
fn wire(p: &[Step]) -> Vec<(&'static str, usize)> {
    let mut v = Vec::new();
    for s in p {
        match s {
            Step::Version => v.push(("ver", 16)),
            Step::PageSize => v.push(("page", 4)),
            Step::CacheLine => v.push(("cache", 4)),
            Step::Mtu => v.push(("mtu", 2)),
            Step::Negotiate => v.push(("neg", 320)),
            Step::Key { .. } => v.push(("key", 108)),
            Step::Report => v.extend(BwReport::fields(false).iter().map(|_| ("rep", 8))),
            Step::Done => v.push(("done", 5)),
            Step::Do(_) | Step::LocalMtu => {}
        }
    }
    v
}

/// Check one direction: decode each block by its planned kind and re-encode it.
fn replay(name: &str, msgs: &[&Msg], plan_wire: &[(&'static str, usize)], is_client: bool) {
    assert_eq!(
        msgs.iter().map(|m| m.bytes.len()).collect::<Vec<_>>(),
        plan_wire.iter().map(|w| w.1).collect::<Vec<_>>(),
        "{name}: {} block sizes differ from our plan",
        if is_client { "client" } else { "server" }
    );
    let mut rep_field = 0;
    let mut report = BwReport::default();
    let mut first_key: Option<KeyMsg> = None;
    for (m, (kind, _)) in msgs.iter().zip(plan_wire) {
        let b = &m.bytes;
        let at = format!("{name} [{:02}] {kind}", m.idx);
        match *kind {
            "ver" => {
                let v = msg::decode_version(b).expect(&at);
                assert_eq!(v.text, "6.06", "{at}");
                assert!(v.is_supported() && v.has_sysdata() && v.mtu_len() == Some(2) && v.report_iters_len() == 8);
                assert!(!v.negotiates_with(&v), "6.06 never negotiates");
                assert_eq!(&msg::encode_version(&v.text).expect(&at)[..], &b[..], "{at}");
            }
            "page" => {
                let p = msg::decode_page_size(b).expect(&at);
                assert_eq!(p, 4096);
                assert_eq!(&msg::encode_i32(p)[..], &b[..], "{at}");
            }
            "cache" => {
                let c = msg::decode_cache_line(b).expect(&at);
                assert_eq!(c, 64);
                assert_eq!(&msg::encode_i32(c)[..], &b[..], "{at}");
            }
            "mtu" => {
                let e = msg::decode_mtu(b).expect(&at).expect("valid mtu");
                let want = if name.contains("m512") { 2 } else { 3 };
                assert_eq!(e, want, "{at}");
                assert_eq!(msg::encode_mtu(e, 2).expect(&at), *b, "{at}");
            }
            "key" => {
                assert_eq!(KeyMsg::detect_format(b), Some(KeyFormat::Gid));
                let k = KeyMsg::decode(b, KeyFormat::Gid).expect(&at);
                assert_eq!(k.encode(KeyFormat::Gid).expect(&at), *b, "{at}");
                // The other formats must reject this block with an error, not a panic.
                assert!(KeyMsg::decode(b, KeyFormat::Short).is_err());
                assert!(KeyMsg::decode(&b[..59], KeyFormat::Short).is_err());
                if let Some(f) = first_key {
                    // Sync records repeat QP 0's record (or another QP's for -q 2).
                    assert_eq!((k.lid, k.rkey, k.gid), (f.lid, f.rkey, f.gid), "{at}");
                } else {
                    first_key = Some(k);
                }
            }
            "rep" => {
                let f = BwReport::fields(false)[rep_field];
                report.decode_field(f, b).expect(&at);
                assert_eq!(report.encode_field(f, 8), *b, "{at}");
                rep_field += 1;
            }
            "done" => assert_eq!(&b[..], &msg::DONE[..], "{at}"),
            other => panic!("unexpected kind {other}"),
        }
    }
    if is_client && rep_field == 5 {
        assert_eq!(
            report.size,
            if name.contains("s1024") {
                1024
            } else if name.ends_with("_a") {
                8_388_608
            } else if name.contains("atomic") {
                8
            } else {
                65536
            },
            "{name}"
        );
        let iters = if name.ends_with("_q2") {
            100
        } else if name.ends_with("_a") {
            5
        } else {
            50
        };
        assert_eq!(report.iters, iters, "{name}");
        // (the captured ib_atomic_bw client reported 0.0 for all three figures)
        assert!(report.bw_avg.is_finite() && report.bw_avg >= 0.0, "{name}");
    }
}

#[test]
fn every_transcript_replays_in_both_directions() {
    for name in CASES {
        let msgs = parse(name);
        assert!(!msgs.is_empty(), "{name}");
        let (tool, o) = case(name);
        let c: Vec<&Msg> = msgs.iter().filter(|m| m.c2s).collect();
        let s: Vec<&Msg> = msgs.iter().filter(|m| !m.c2s).collect();
        replay(name, &c, &wire(&plan(tool, Role::Client, &o)), true);
        replay(name, &s, &wire(&plan(tool, Role::Server, &o)), false);
    }
}

#[test]
fn noxchg_capture_has_no_traffic() {
    assert!(parse("ib_write_bw_noxchg").is_empty());
}

#[test]
fn write_bw_values_decode_exactly() {
    let msgs = parse("ib_write_bw");
    let k = KeyMsg::decode(&msgs[8].bytes, KeyFormat::Gid).unwrap();
    assert_eq!(k.lid, 0);
    assert_eq!(k.out_reads, 1);
    assert_eq!(k.qpn, 0x12);
    assert_eq!(k.psn, 0x6c7b86);
    assert_eq!(k.rkey, 0x39e);
    assert_eq!(k.vaddr, 0x7fd4_c599_1000);
    assert_eq!(k.gid, [0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff, 10, 99, 0, 1]);
    assert_eq!(k.srqn, 0);
    let s = KeyMsg::decode(&msgs[9].bytes, KeyFormat::Gid).unwrap();
    assert_eq!((s.qpn, s.psn, s.rkey, s.vaddr), (0x11, 0x0bdb7a, 0x26b, 0x7f62_d623_7000));

    // Encoding our own record with the same inputs gives the captured bytes.
    let ours = KeyMsg {
        lid: 0,
        out_reads: 1,
        qpn: 0x12,
        psn: 0x6c7b86,
        rkey: 0x39e,
        vaddr: 0x7fd4_c599_1000,
        tail_markers_vaddr: 0,
        gid: [0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff, 10, 99, 0, 1],
        srqn: 0,
    };
    assert_eq!(ours.encode(KeyFormat::Gid).unwrap(), msgs[8].bytes);

    let mut r = BwReport::default();
    for (i, f) in BwReport::fields(false).iter().enumerate() {
        r.decode_field(*f, &msgs[16 + 2 * i].bytes).unwrap();
    }
    assert_eq!(r.size, 65536);
    assert_eq!(r.iters, 50);
    assert!((r.bw_peak - 22.0885).abs() < 1e-4);
    assert!((r.bw_avg - 21.0079).abs() < 1e-4);
    assert!((r.msg_rate - 0.000336126).abs() < 1e-9);
    let ours = BwReport {
        size: 65536,
        iters: 50,
        bw_peak: r.bw_peak,
        bw_avg: r.bw_avg,
        msg_rate: r.msg_rate,
        ..Default::default()
    };
    for (i, f) in BwReport::fields(false).iter().enumerate() {
        assert_eq!(ours.encode_field(*f, 8), msgs[16 + 2 * i].bytes);
    }
}

#[test]
fn read_bw_out_reads() {
    let k = KeyMsg::decode(&parse("ib_read_bw")[8].bytes, KeyFormat::Gid).unwrap();
    assert_eq!(k.out_reads, 0x80);
    let k = KeyMsg::decode(&parse("ib_read_bw_o4")[8].bytes, KeyFormat::Gid).unwrap();
    assert_eq!(k.out_reads, 4);
}

#[test]
fn q2_keys_are_per_qp_then_qp0() {
    let msgs = parse("ib_write_bw_q2");
    let qpns: Vec<u32> = msgs
        .iter()
        .filter(|m| m.c2s && m.bytes.len() == 108)
        .map(|m| KeyMsg::decode(&m.bytes, KeyFormat::Gid).unwrap().qpn)
        .collect();
    // QpInfo×2, RemoteInfo×2, Sync, AfterRun, Close.
    assert_eq!(qpns, vec![0x26, 0x28, 0x26, 0x28, 0x26, 0x26, 0x26]);
    let p = plan(Tool::WriteBw, Role::Client, &PlanOptions { num_qps: 2, ..Default::default() });
    let planned: Vec<usize> =
        p.iter().filter_map(|s| if let Step::Key { qp, .. } = s { Some(*qp) } else { None }).collect();
    assert_eq!(planned, vec![0, 1, 0, 1, 0, 0, 0]);
}

#[test]
fn dont_xchg_versions_starts_with_the_keys() {
    // --dont_xchg_versions: no version, SYSDATA or MTU block; the MTU step stays local (it is
    // where the resources get created), everything after it is unchanged.
    let o = PlanOptions { exchange_versions: false, ..Default::default() };
    for tool in Tool::ALL {
        for role in [Role::Client, Role::Server] {
            let full = plan(tool, role, &PlanOptions::default());
            let short = plan(tool, role, &o);
            assert_eq!(short[0], Step::LocalMtu, "{tool:?} {role:?}");
            assert_eq!(&short[1..], &full[4..], "{tool:?} {role:?}");
            let w: Vec<&str> = wire(&short).into_iter().map(|(k, _)| k).collect();
            assert_eq!(w.first(), Some(&"key"), "{tool:?} {role:?}");
            assert!(!w.iter().any(|k| ["ver", "page", "cache", "mtu"].contains(k)), "{tool:?} {role:?}");
        }
    }
}

#[test]
fn key_exchange_counts_per_tool() {
    use perftest::oob::plan::key_exchanges;
    let o = PlanOptions::default();
    for (tool, n) in [
        (Tool::WriteBw, 5),
        (Tool::ReadBw, 5),
        (Tool::AtomicBw, 5),
        (Tool::SendBw, 5),
        (Tool::WriteLat, 4),
        (Tool::ReadLat, 5),
        (Tool::AtomicLat, 5),
        (Tool::SendLat, 5),
    ] {
        for role in [Role::Client, Role::Server] {
            assert_eq!(key_exchanges(&plan(tool, role, &o)), n, "{tool:?} {role:?}");
        }
    }
    // write_lat has no close handshake and no `done`.
    assert!(!plan(Tool::WriteLat, Role::Client, &o).contains(&Step::Done));
    // -b -a: K, run, K, R per size on both sides.
    let o = PlanOptions { bidirectional: true, all_sizes: Some(23), ..Default::default() };
    for role in [Role::Client, Role::Server] {
        let p = plan(Tool::WriteBw, role, &o);
        assert_eq!(key_exchanges(&p), 3 + 2 * 23 + 1);
        assert_eq!(p.iter().filter(|s| **s == Step::Report).count(), 23);
    }
    // Both roles always have the same wire shape.
    for tool in Tool::ALL {
        for o in [
            PlanOptions::default(),
            PlanOptions { num_qps: 3, ..Default::default() },
            PlanOptions { bidirectional: true, ..Default::default() },
            PlanOptions { all_sizes: Some(5), ..Default::default() },
            PlanOptions { all_sizes: Some(5), bidirectional: true, ..Default::default() },
            PlanOptions { write_with_imm: true, ..Default::default() },
            PlanOptions { write_with_imm: true, all_sizes: Some(3), ..Default::default() },
            PlanOptions { negotiate: true, ..Default::default() },
            PlanOptions { duration: true, bidirectional: true, ..Default::default() },
            PlanOptions { exchange_versions: false, ..Default::default() },
        ] {
            let c = wire(&plan(tool, Role::Client, &o));
            let s = wire(&plan(tool, Role::Server, &o));
            assert_eq!(c, s, "{tool:?} {o:?}");
        }
    }
}
