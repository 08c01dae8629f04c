//! EFA against Debian's libefa (rdma-core 44): `fixtures/efa/golden.jsonl` is what libefa wrote
//! and reported through the fake kernel of `tests/efa-oracle/` (its README says how to
//! regenerate it). This test replays the same sequence of posts and device completions through
//! our pure EFA code (geometry, request-id pools, SQ/RQ producer state, descriptor encoders, the
//! sub-CQ consumer, completion decoding, doorbell values) and requires the same bytes and the
//! same work completions, event by event.

use std::collections::HashMap;

use providers::efa::cqe::to_wc;
use providers::efa::hw::{self, cq_doorbell};
use providers::efa::ring::{qp_geometry, CqState, WqState};
use providers::efa::wqe::{encode_rdma_read, encode_recv, encode_send, TxDest, TxPayload, TxSlot};
use serde_json::Value;
use uverbs::wr::{wc_flags, Sge};

fn events(name: &str) -> Vec<Value> {
    let path = format!("{}/tests/fixtures/efa/{name}", env!("CARGO_MANIFEST_DIR"));
    let text = std::fs::read_to_string(&path)
        .unwrap_or_else(|e| panic!("{path}: {e} (tests/efa-oracle/run.sh writes it)"));
    text.lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| serde_json::from_str(l).expect("a JSON line"))
        .collect()
}

fn hex(s: &str) -> Vec<u8> {
    (0..s.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&s[i..i + 2], 16).unwrap())
        .collect()
}

fn n(v: &Value, k: &str) -> u64 {
    v[k].as_u64().unwrap_or_else(|| panic!("field {k} in {v}"))
}

fn sges(v: &Value) -> Vec<Sge> {
    v["sges"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| Sge {
            addr: s[0].as_u64().unwrap(),
            length: s[1].as_u64().unwrap() as u32,
            lkey: s[2].as_u64().unwrap() as u32,
        })
        .collect()
}

/// One QP as our provider would hold it: the SQ and RQ producer state with their id pools.
struct Qp {
    sq: WqState,
    rq: WqState,
}

/// The QPs the harness created, with the geometry libefa asked the kernel for checked.
fn qps(ev: &Value) -> HashMap<u64, Qp> {
    // The harness's caps: UD send 4 / recv 4 x 2 SGEs, SRD send 8 / recv 2 x 1 SGE.
    let mut m = HashMap::new();
    for (name, caps) in [("ud", (4, 4, 2)), ("srd", (8, 2, 1))] {
        let q = &ev[name];
        let g = qp_geometry(caps.0, 0, caps.1, caps.2).unwrap();
        assert_eq!(
            (u64::from(g.sq_ring_size), u64::from(g.rq_ring_size)),
            (n(q, "sq_ring"), n(q, "rq_ring")),
            "{name} ring sizes"
        );
        assert_eq!(
            n(q, "type"),
            u64::from(providers::efa::abi::QP_DRIVER_TYPE_SRD)
        );
        m.insert(
            n(q, "qpn"),
            Qp {
                sq: WqState::new(g.sq_wqe_cnt, g.sq_wqe_cnt).unwrap(),
                rq: WqState::new(g.rq_desc_cnt, g.rq_wqe_cnt).unwrap(),
            },
        );
    }
    m
}

fn send(q: &mut Qp, ev: &Value) {
    let what = format!("send wr_id {}", n(ev, "wr_id"));
    assert_eq!(q.sq.slot() as u64, n(ev, "slot"), "{what}: slot");
    let slot = TxSlot {
        req_id: q.sq.pool.take(n(ev, "wr_id")).unwrap(),
        phase: q.sq.phase,
    };
    let dest = TxDest {
        ah: n(ev, "ah") as u16,
        remote_qpn: n(ev, "remote_qpn") as u16,
        qkey: n(ev, "qkey") as u32,
    };
    let sgl = sges(ev);
    let inline = ev["inline_data"].as_str().map(hex);
    let ours = match ev["op"].as_str().unwrap() {
        "read" => encode_rdma_read(slot, dest, n(ev, "remote_addr"), n(ev, "rkey") as u32, &sgl),
        op => {
            let imm = (op == "send_imm").then(|| n(ev, "imm") as u32);
            let payload = inline
                .as_deref()
                .map_or(TxPayload::Sgl(&sgl), TxPayload::Inline);
            encode_send(slot, dest, imm, payload)
        }
    }
    .unwrap();
    assert_eq!(
        hex_of(&ours),
        ev["wqe"].as_str().unwrap(),
        "{what}: TX descriptor"
    );
    q.sq.advance();
    assert_eq!(u64::from(q.sq.pc), n(ev, "sq_db"), "{what}: SQ doorbell");
}

fn recv(q: &mut Qp, ev: &Value) {
    let what = format!("recv wr_id {}", n(ev, "wr_id"));
    let req_id = q.rq.pool.take(n(ev, "wr_id")).unwrap();
    let sgl = sges(ev);
    let ours: Vec<String> = encode_recv(req_id, &sgl).map(|d| hex_of(&d)).collect();
    let theirs: Vec<&str> = ev["descs"]
        .as_array()
        .unwrap()
        .iter()
        .map(|d| d.as_str().unwrap())
        .collect();
    assert_eq!(ours, theirs, "{what}: RX descriptors");
    for _ in &ours {
        q.rq.advance();
    }
    assert_eq!(u64::from(q.rq.pc), n(ev, "rq_db"), "{what}: RQ doorbell");
}

fn poll(qps: &mut HashMap<u64, Qp>, cq: &mut CqState, buf: &mut [u8], ev: &Value) {
    let what = format!("completion of wr_id {}", n(ev, "wr_id"));
    let off = ((n(ev, "sub") * 16 + n(ev, "index")) * hw::CDESC_SIZE as u64) as usize;
    buf[off..off + hw::CDESC_SIZE].copy_from_slice(&hex(ev["cdesc"].as_str().unwrap()));
    let c = cq
        .next(&*buf)
        .expect("a new completion")
        .expect("a valid completion");
    let q = qps.get_mut(&u64::from(c.qp_num)).expect("a known QP");
    let pool = if c.queue == hw::QUEUE_SEND {
        &mut q.sq.pool
    } else {
        &mut q.rq.pool
    };
    let wc = to_wc(&c, pool.complete(c.req_id).unwrap());
    let got = (
        wc.wr_id,
        wc.status.raw(),
        wc.opcode.raw(),
        wc.vendor_err,
        wc.byte_len,
        wc.qp_num,
        wc.src_qp,
        wc.wc_flags,
        wc.slid,
    );
    let want = (
        n(ev, "wr_id"),
        n(ev, "status") as u32,
        n(ev, "opcode") as u32,
        n(ev, "vendor_err") as u32,
        n(ev, "byte_len") as u32,
        n(ev, "qp_num") as u32,
        n(ev, "src_qp") as u32,
        n(ev, "wc_flags") as u32,
        n(ev, "slid") as u16,
    );
    assert_eq!(
        got, want,
        "{what}: (wr_id, status, opcode, vendor_err, byte_len, qp_num, src_qp, wc_flags, slid)"
    );
    if wc.wc_flags & wc_flags::WITH_IMM != 0 {
        assert_eq!(
            u64::from(u32::from_be(wc.imm_data)),
            n(ev, "imm_data"),
            "{what}: immediate"
        );
    }
    assert_eq!(
        u64::from(cq_doorbell(cq.cc, cq.cmd_sn, false)),
        n(ev, "cq_db"),
        "{what}: CQ doorbell"
    );
}

fn hex_of(b: &[u8]) -> String {
    b.iter().map(|x| format!("{x:02x}")).collect()
}

/// Replays `evs` (a `device` event, a `qps` event, then posts and completions) through ours;
/// returns how many events of each kind there were.
fn replay(evs: &[Value]) -> HashMap<String, usize> {
    let dev = &evs[0];
    assert_eq!(dev["ev"], "device");
    let (subs, entries, size) = (
        n(dev, "sub_cqs") as u16,
        n(dev, "cqe") as u32,
        n(dev, "cq_entry_size") as usize,
    );
    assert_eq!(size, hw::CDESC_SIZE, "libefa asks for 16-byte completions");
    let mut buf = vec![0u8; usize::from(subs) * entries as usize * size];
    let mut cq = CqState::new(subs, entries, size, buf.len()).unwrap();
    assert_eq!(evs[1]["ev"], "qps");
    let mut qps = qps(&evs[1]);
    // Both QPs send into sub-CQ 0 and receive into sub-CQ 1 (the fake kernel's answer).
    for _ in 0..qps.len() {
        cq.attach(0).unwrap();
        cq.attach(1).unwrap();
    }
    let by_name: HashMap<&str, u64> = [
        ("ud", n(&evs[1]["ud"], "qpn")),
        ("srd", n(&evs[1]["srd"], "qpn")),
    ]
    .into();
    let mut counts = HashMap::new();
    for ev in &evs[2..] {
        let kind = ev["ev"].as_str().unwrap();
        *counts.entry(kind.to_string()).or_insert(0) += 1;
        let qpn = by_name[ev["qp"].as_str().unwrap()];
        match kind {
            "send" => send(qps.get_mut(&qpn).unwrap(), ev),
            "recv" => recv(qps.get_mut(&qpn).unwrap(), ev),
            "poll" => poll(&mut qps, &mut cq, &mut buf, ev),
            other => panic!("unknown event {other}"),
        }
    }
    assert!(cq.next(&buf[..]).is_none(), "no completion left over");
    counts
}

#[test]
fn every_descriptor_doorbell_and_completion_matches_libefa() {
    let evs = events("golden.jsonl");
    let counts = replay(&evs);
    // The fixture covers what it says: sends of each kind, receives, every status 0..=14.
    assert!(
        counts["send"] >= 20 && counts["recv"] >= 4 && counts["poll"] >= 25,
        "{counts:?}"
    );
    let statuses: std::collections::BTreeSet<u64> = evs
        .iter()
        .filter(|e| e["ev"] == "poll")
        .map(|e| u64::from(hex(e["cdesc"].as_str().unwrap())[2]))
        .collect();
    assert_eq!(statuses, (0..=14).collect(), "device statuses covered");
}

/// The differential run: a random sequence of posts on both QPs (every request kind) and
/// completions of random outstanding requests in random order, with random statuses, lengths
/// and immediates (`tests/efa-oracle/run.sh`, seed 0x5eed), ours and libefa fed the same.
#[test]
fn a_random_sequence_matches_libefa() {
    let counts = replay(&events("random.jsonl"));
    assert!(
        counts["send"] >= 100 && counts["recv"] >= 50 && counts["poll"] >= 150,
        "{counts:?}"
    );
}
