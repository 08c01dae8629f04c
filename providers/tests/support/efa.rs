//! The EFA oracle replay through the provider itself (tests/efa-oracle/ writes the captures;
//! `efa_provider.rs` replays the committed ones, `efa_differential.rs` fresh random ones): drive
//! `Efa<HeapRegion>` with the same calls and the same device answers as libefa got, and compare
//! the create-QP udata, every descriptor byte a post left in the LLQ or RQ ring, every doorbell
//! value, and every completion `ibv_poll_cq` gave.

use std::collections::HashMap;
use std::os::fd::OwnedFd;
use std::sync::Arc;

use providers::efa::mem::HeapRegion;
use providers::efa::{abi, hw, DeviceCaps, Efa, EfaConfig, EfaCq, EfaQp};
use serde_json::Value;
use uverbs::provider::{
    AhAttr, AhCreated, CqCreated, DeviceDesc, Provider, QpCaps, QpCreated, QpInitAttr, QpType,
};
use uverbs::wr::{RecvWr, RemoteAddr, SendFlags, SendWr, Sge, UdDest, WorkCompletion, WrOpcode};

pub type Ctx = Efa<HeapRegion>;

pub const CQ_KEY: u64 = 0x1000;
pub const CQ_DB_KEY: u64 = 0x2000;

/// The events of fixture `name` (`fixtures/efa/`).
pub fn events(name: &str) -> Vec<Value> {
    events_at(&format!(
        "{}/tests/fixtures/efa/{name}",
        env!("CARGO_MANIFEST_DIR")
    ))
}

pub fn events_at(path: &str) -> Vec<Value> {
    let text = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{path}: {e}"));
    text.lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| serde_json::from_str(l).expect("a JSON line"))
        .collect()
}

pub fn n(v: &Value, k: &str) -> u64 {
    v[k].as_u64().unwrap_or_else(|| panic!("field {k} in {v}"))
}

pub fn unhex(s: &str) -> Vec<u8> {
    (0..s.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&s[i..i + 2], 16).unwrap())
        .collect()
}

pub fn hex(b: &[u8]) -> String {
    b.iter().map(|x| format!("{x:02x}")).collect()
}

pub fn sges(v: &Value) -> Vec<Sge> {
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

/// The fake kernel's context answer: 2 sub-CQs per CQ, 32 inline bytes, no TX batch limit, no
/// minimum SQ depth, both udata extensions.
pub fn uctx_resp(subs: u16, inline: u16) -> Vec<u8> {
    let mut u = vec![0u8; abi::ALLOC_UCONTEXT_RESP_LEN];
    u[4] = (abi::SUPP_UDATA_QUERY_DEVICE | abi::SUPP_UDATA_CREATE_AH) as u8;
    u[8..10].copy_from_slice(&subs.to_le_bytes());
    u[10..12].copy_from_slice(&inline.to_le_bytes());
    u[12..16].copy_from_slice(&0x1_0000u32.to_le_bytes());
    u
}

pub fn context(dev: &Value) -> Ctx {
    let fd: OwnedFd = std::fs::File::open("/dev/null").unwrap().into();
    let desc = DeviceDesc {
        ibdev: "efa_0".into(),
        uverbs: "uverbs0".into(),
        driver_id: 17,
        driver_abi: 1,
    };
    let ud = Ctx::context_udata(&desc, &EfaConfig::default());
    assert_eq!(
        (ud.req.as_slice(), ud.resp_len),
        (&[3u8, 0, 0, 0, 0, 0, 0, 0][..], 24)
    );
    let caps = DeviceCaps {
        max_sq_wr: n(dev, "max_sq_wr") as u32,
        max_rq_wr: n(dev, "max_rq_wr") as u32,
        max_sq_sge: n(dev, "max_sq_sge") as u16,
        max_rq_sge: n(dev, "max_rq_sge") as u16,
        max_rdma_size: n(dev, "max_rdma_size") as u32,
        // efadv's caps; the events run also gives the kernel's (CQ notifications has no
        // efadv bit in rdma-core 44).
        device_caps: dev
            .get("kernel_caps")
            .map_or(n(dev, "device_caps"), |_| n(dev, "kernel_caps")) as u32,
    };
    let resp = uctx_resp(n(dev, "sub_cqs") as u16, n(dev, "inline_buf_size") as u16);
    let config = EfaConfig { caps: Some(caps) };
    let ctx = Ctx::new_context(Arc::new(fd), &desc, &resp, &config).unwrap();
    assert_eq!(ctx.caps(), caps);
    assert_eq!(ctx.pd_number(&[0, 0, 0, 0, 9, 0, 0, 0]).unwrap(), Some(9));
    ctx
}

/// The CQ answer: the buffer at `CQ_KEY`, a doorbell at offset `db_off` of the page at
/// `CQ_DB_KEY`.
pub fn cq_resp(size: u64, db_off: Option<u32>) -> Vec<u8> {
    let mut c = vec![0u8; abi::CREATE_CQ_RESP_LEN];
    c[8..16].copy_from_slice(&CQ_KEY.to_le_bytes());
    c[16..24].copy_from_slice(&size.to_le_bytes());
    c[24] = 3;
    if let Some(off) = db_off {
        c[0] = abi::CREATE_CQ_RESP_DB_OFF as u8;
        c[28..32].copy_from_slice(&off.to_le_bytes());
        c[32..40].copy_from_slice(&CQ_DB_KEY.to_le_bytes());
    }
    c
}

pub fn create_cq(ctx: &Ctx, dev: &Value) -> EfaCq<HeapRegion> {
    let entries = n(dev, "cqe") as u32;
    // The events run's CQ has a completion channel.
    let channel = dev.get("channel").is_some();
    let (prep, cqe, ud) = ctx.prepare_cq_for(entries - 3, channel).unwrap();
    assert_eq!(cqe, entries, "CQ size rounded up to a power of two");
    let subs = n(dev, "sub_cqs") as u16;
    let flags = if channel {
        abi::CREATE_CQ_WITH_COMPLETION_CHANNEL
    } else {
        0
    };
    assert_eq!(
        ud.req,
        abi::create_cq_cmd(16, subs, flags),
        "create CQ udata"
    );
    let size = u64::from(subs) * u64::from(entries) * 16;
    let cq = ctx
        .finish_cq(
            prep,
            &CqCreated { handle: 1, cqe },
            &cq_resp(size, Some(0x40)),
        )
        .unwrap();
    assert_eq!(
        (cq.buf().key, cq.doorbell().unwrap().key),
        (CQ_KEY, CQ_DB_KEY)
    );
    cq
}

/// The QP answer: distinct keys for each mapping, the doorbells at small offsets, the LLQ
/// descriptors at `llq_off`; sends complete into sub-CQ 0, receives into 1.
pub fn qp_resp(qpn: u32, rq_size: u32, llq_off: u32) -> Vec<u8> {
    let mut q = vec![0u8; abi::CREATE_QP_RESP_LEN];
    let put32 = |q: &mut Vec<u8>, o: usize, v: u32| q[o..o + 4].copy_from_slice(&v.to_le_bytes());
    let put64 = |q: &mut Vec<u8>, o: usize, v: u64| q[o..o + 8].copy_from_slice(&v.to_le_bytes());
    let base = u64::from(qpn) << 20;
    put32(&mut q, 4, 0x8);
    put32(&mut q, 8, 0x10);
    put32(&mut q, 12, llq_off);
    put64(&mut q, 16, base | 1);
    put64(&mut q, 24, u64::from(rq_size));
    put64(&mut q, 32, base | 2);
    put64(&mut q, 40, base | 3);
    put64(&mut q, 48, base | 4);
    q[58] = 1;
    q
}

pub fn create_qp(ctx: &Ctx, t: QpType, q: &Value, caps: (u32, u32, u32)) -> EfaQp<HeapRegion> {
    let attr = QpInitAttr {
        qp_type: t,
        caps: QpCaps {
            max_send_wr: caps.0,
            max_recv_wr: caps.1,
            max_send_sge: 2,
            max_recv_sge: caps.2,
            max_inline_data: 32,
        },
        sq_sig_all: false,
        uses_srq: false,
    };
    let (prep, ud) = ctx.prepare_qp(&attr).unwrap();
    let want = abi::create_qp_cmd(
        n(q, "rq_ring") as u32,
        n(q, "sq_ring") as u32,
        n(q, "type") as u32,
    );
    assert_eq!(
        (ud.req.as_slice(), ud.resp_len),
        (&want[..], 64),
        "{} create QP udata",
        t.name()
    );
    let qpn = n(q, "qpn") as u32;
    let core = QpCreated {
        handle: qpn,
        qpn,
        caps: attr.caps,
    };
    let qp = ctx
        .finish_qp(prep, &attr, &core, &qp_resp(qpn, n(q, "rq_ring") as u32, 0))
        .unwrap();
    let base = u64::from(qpn) << 20;
    assert_eq!(
        (
            qp.rq_ring().unwrap().key,
            qp.rq_doorbell().unwrap().key,
            qp.sq_doorbell().key,
            qp.llq().0.key
        ),
        (base | 1, base | 2, base | 3, base | 4),
        "each mapping at its key"
    );
    qp
}

pub struct Rig {
    pub ctx: Ctx,
    pub cq: EfaCq<HeapRegion>,
    pub qps: HashMap<String, EfaQp<HeapRegion>>,
    pub ah: u32,
}

pub fn send(rig: &mut Rig, ev: &Value) {
    let what = format!("send wr_id {}", n(ev, "wr_id"));
    let qp = rig.qps.get_mut(ev["qp"].as_str().unwrap()).unwrap();
    let mut sgl = sges(ev);
    // Inline payloads: the harness's gathered bytes, split over buffers of ours with the
    // same lengths (its addresses are in its own process).
    let inline = ev["inline_data"].as_str().map(unhex);
    if let Some(data) = &inline {
        let mut at = 0;
        for s in &mut sgl {
            s.addr = data[at..].as_ptr() as u64;
            at += s.length as usize;
        }
    }
    let opcode = match ev["op"].as_str().unwrap() {
        "send" => WrOpcode::Send,
        "send_imm" => WrOpcode::SendWithImm,
        "read" => WrOpcode::RdmaRead,
        o => panic!("op {o}"),
    };
    let mut wr = SendWr::new(n(ev, "wr_id"), opcode, &sgl);
    wr.imm_data = (n(ev, "imm") as u32).to_be();
    wr.remote = RemoteAddr {
        addr: n(ev, "remote_addr"),
        rkey: n(ev, "rkey") as u32,
    };
    wr.ud = Some(UdDest {
        ah: rig.ah,
        remote_qpn: n(ev, "remote_qpn") as u32,
        remote_qkey: n(ev, "qkey") as u32,
    });
    assert_eq!(u64::from(rig.ah), n(ev, "ah"));
    wr.flags = SendFlags::SIGNALED;
    if inline.is_some() {
        wr.flags = SendFlags(SendFlags::SIGNALED.0 | SendFlags::INLINE.0);
    }
    // SAFETY: the inline SGEs point into `inline`, alive here; nothing else is read.
    unsafe { rig.ctx.post_send(qp, &[wr]) }.unwrap_or_else(|e| panic!("{what}: {e}"));
    let (llq, off) = qp.llq();
    let slot = off + n(ev, "slot") as usize * hw::TX_WQE_SIZE;
    assert_eq!(
        hex(&llq.snapshot()[slot..slot + 64]),
        ev["wqe"].as_str().unwrap(),
        "{what}: TX descriptor"
    );
    assert_eq!(
        qp.sq_doorbell().take_doorbells(),
        [(0x10, n(ev, "sq_db") as u32)],
        "{what}: SQ doorbell"
    );
}

pub fn recv(rig: &mut Rig, ev: &Value) {
    let what = format!("recv wr_id {}", n(ev, "wr_id"));
    let qp = rig.qps.get_mut(ev["qp"].as_str().unwrap()).unwrap();
    let before = qp.queues().rq.pc as usize;
    let sgl = sges(ev);
    // SAFETY: the model never writes to receive buffers; nothing is dereferenced.
    unsafe {
        rig.ctx.post_recv(
            qp,
            &[RecvWr {
                wr_id: n(ev, "wr_id"),
                sgl: &sgl,
            }],
        )
    }
    .unwrap();
    let ring = qp.rq_ring().unwrap().snapshot();
    let mask = ring.len() / hw::RX_DESC_SIZE - 1;
    let ours: Vec<String> = (0..sgl.len())
        .map(|i| {
            let o = ((before + i) & mask) * hw::RX_DESC_SIZE;
            hex(&ring[o..o + hw::RX_DESC_SIZE])
        })
        .collect();
    let theirs: Vec<&str> = ev["descs"]
        .as_array()
        .unwrap()
        .iter()
        .map(|d| d.as_str().unwrap())
        .collect();
    assert_eq!(ours, theirs, "{what}: RX descriptors");
    assert_eq!(
        qp.rq_doorbell().unwrap().take_doorbells(),
        [(0x8, n(ev, "rq_db") as u32)],
        "{what}: RQ doorbell"
    );
}

pub fn poll(rig: &mut Rig, ev: &Value, entries: u64) {
    let what = format!("completion of wr_id {}", n(ev, "wr_id"));
    let off = ((n(ev, "sub") * entries + n(ev, "index")) * hw::CDESC_SIZE as u64) as usize;
    rig.cq
        .buf()
        .device_write(off, &unhex(ev["cdesc"].as_str().unwrap()));
    let mut wc = [WorkCompletion::default(); 2];
    assert_eq!(
        rig.ctx.poll_cq(&mut rig.cq, &mut wc).unwrap(),
        1,
        "{what}: one new completion"
    );
    let wc = wc[0];
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
    if wc.wc_flags & uverbs::wr::wc_flags::WITH_IMM != 0 {
        assert_eq!(
            u64::from(u32::from_be(wc.imm_data)),
            n(ev, "imm_data"),
            "{what}: immediate"
        );
    }
    let db = rig.cq.doorbell().unwrap().take_doorbells();
    assert_eq!(db, [(0x40, n(ev, "cq_db") as u32)], "{what}: CQ doorbell");
}

/// `ibv_req_notify_cq`: libefa's answer (0, or EOPNOTSUPP for solicited-only) and the CQ
/// doorbell value it left (the consumer counter, the event count's low two bits, the arm bit).
pub fn arm(rig: &mut Rig, ev: &Value) {
    let solicited = n(ev, "solicited") != 0;
    let r = rig.ctx.arm_cq(&mut rig.cq, solicited);
    let errno = r.err().map_or(0, |e| e.errno.unwrap_or(-1));
    assert_eq!(
        i64::from(errno),
        ev["ret"].as_i64().unwrap(),
        "arm (solicited {solicited}): libefa's answer"
    );
    let db = rig.cq.doorbell().unwrap().take_doorbells();
    if errno == 0 {
        assert_eq!(db, [(0x40, n(ev, "cq_db") as u32)], "arm: CQ doorbell");
    } else {
        assert!(db.is_empty(), "a refused arm rings nothing");
    }
}

/// Replay a capture (a `device` event, a `qps` event, then posts and completions) through the
/// provider; returns how many events of each kind there were.
pub fn replay(evs: &[Value]) -> HashMap<String, usize> {
    let dev = &evs[0];
    assert_eq!(dev["ev"], "device");
    let ctx = context(dev);
    let cq = create_cq(&ctx, dev);
    // The harness's caps: UD send 4 / recv 4 x 2 SGEs, SRD send 8 / recv 2 x 1 SGE.
    let q = &evs[1];
    let mut qps = HashMap::new();
    qps.insert(
        "ud".to_string(),
        create_qp(&ctx, QpType::Ud, &q["ud"], (4, 4, 2)),
    );
    qps.insert(
        "srd".to_string(),
        create_qp(&ctx, QpType::Srd, &q["srd"], (8, 2, 1)),
    );
    let (prep, ud) = ctx.prepare_ah(&AhAttr::default()).unwrap();
    assert_eq!(
        (ud.req.len(), ud.resp_len),
        (0, 8),
        "create AH udata: room for the AH number"
    );
    let ah = ctx
        .finish_ah(
            prep,
            &AhAttr::default(),
            &AhCreated { handle: 1 },
            &[0, 0, 0, 0, 0xbc, 0x0a, 0, 0],
        )
        .unwrap();
    let ah = ctx.ah_number(&ah);
    let mut rig = Rig { ctx, cq, qps, ah };
    let mut counts = HashMap::new();
    for ev in &evs[2..] {
        let kind = ev["ev"].as_str().unwrap();
        *counts.entry(kind.to_string()).or_insert(0) += 1;
        match kind {
            "send" => send(&mut rig, ev),
            "recv" => recv(&mut rig, ev),
            "poll" => poll(&mut rig, ev, n(dev, "cqe")),
            "arm" => arm(&mut rig, ev),
            "event" => rig.ctx.cq_event(&mut rig.cq),
            other => panic!("unknown event {other}"),
        }
    }
    let mut wc = [WorkCompletion::default(); 4];
    assert_eq!(
        rig.ctx.poll_cq(&mut rig.cq, &mut wc).unwrap(),
        0,
        "no completion left over"
    );
    counts
}
