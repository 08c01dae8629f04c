//! The bnxt_re oracle replay (tests/bnxt-oracle/ writes the captures; the golden test replays
//! the committed ones, the differential test fresh random ones): drive our provider with the same
//! calls and the same device answers as libbnxt_re got, and compare every queue byte a post
//! changed, every doorbell, and every completion `ibv_poll_cq` gave.
//!
//! Not compared (deliberate differences, docs/providers.md): the handles we give the kernel
//! (libbnxt_re gives pointers, we give numbers; a completion names its QP by it, so each CQE is
//! written with ours), hence which bytes of a polled CQE's handle field changed (only that the
//! field is zero afterwards); completion fields libbnxt_re leaves unwritten (`null` in the file).

use std::collections::BTreeMap;

use providers::bnxt_re::db::RecordingPage;
use providers::bnxt_re::{Bnxt, BnxtCq, BnxtQp, BnxtSrq};
use serde_json::Value;
use uverbs::provider::{
    AhAttr, AhCreated, CqCreated, DeviceDesc, Provider, QpCaps, QpCreated, QpInitAttr, QpModified,
    QpState, QpType, SrqCreated,
};
use uverbs::wr::{RecvWr, RemoteAddr, SendFlags, SendWr, Sge, UdDest, WorkCompletion, WrOpcode};

use super::{dev_null, hex, num, unhex};

const DATA_VA: usize = 0x2_0000_0000;
const DATA_LEN: usize = 1 << 20;
const FILL: u8 = 0xa5;

type Ctx = Bnxt<RecordingPage>;

/// The oracle's data buffer at its fixed address (inline payloads are read from it), mapped
/// and filled once per test binary: the replays only read it, so they may run side by side.
fn map_data() {
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| {
        // SAFETY: a fresh anonymous mapping at an address nothing else in this process uses;
        // MAP_FIXED_NOREPLACE fails instead of clobbering.
        let p = unsafe {
            libc::mmap(
                DATA_VA as *mut libc::c_void,
                DATA_LEN,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_PRIVATE | libc::MAP_ANONYMOUS | libc::MAP_FIXED_NOREPLACE,
                -1,
                0,
            )
        };
        assert_eq!(
            p as usize, DATA_VA,
            "cannot map the oracle data buffer at {DATA_VA:#x}"
        );
        // SAFETY: mapped above, DATA_LEN bytes, and nobody reads it before call_once returns.
        let d = unsafe { std::slice::from_raw_parts_mut(DATA_VA as *mut u8, DATA_LEN) };
        for (i, b) in d.iter_mut().enumerate() {
            *b = (7 * i + 3) as u8;
        }
    });
}

/// The harness's diff: runs of changed bytes, a single unchanged byte inside a run kept in it.
fn diff(now: &[u8], snap: &mut [u8]) -> Vec<(usize, String)> {
    let mut out = Vec::new();
    let mut i = 0;
    while i < now.len() {
        if now[i] == snap[i] {
            i += 1;
            continue;
        }
        let mut j = i;
        while j < now.len()
            && (now[j] != snap[j] || (j + 1 < now.len() && now[j + 1] != snap[j + 1]))
        {
            j += 1;
        }
        out.push((i, hex(&now[i..j])));
        i = j;
    }
    snap.copy_from_slice(now);
    out
}

fn want_diff(v: &Value) -> Vec<(usize, String)> {
    v.as_array()
        .unwrap()
        .iter()
        .map(|r| (num(&r[0]) as usize, r[1].as_str().unwrap().to_string()))
        .collect()
}

fn sges(v: &Value) -> Vec<Sge> {
    v.as_array()
        .unwrap()
        .iter()
        .map(|s| Sge {
            addr: num(&s[0]),
            length: num(&s[1]) as u32,
            lkey: num(&s[2]) as u32,
        })
        .collect()
}

fn opcode(s: &str) -> WrOpcode {
    match s {
        "RDMA_WRITE" => WrOpcode::RdmaWrite,
        "RDMA_WRITE_WITH_IMM" => WrOpcode::RdmaWriteWithImm,
        "SEND" => WrOpcode::Send,
        "SEND_WITH_IMM" => WrOpcode::SendWithImm,
        "RDMA_READ" => WrOpcode::RdmaRead,
        "ATOMIC_CMP_AND_SWP" => WrOpcode::AtomicCmpAndSwp,
        "ATOMIC_FETCH_AND_ADD" => WrOpcode::AtomicFetchAndAdd,
        o => panic!("opcode {o}"),
    }
}

/// One queue buffer and what the last event left in it.
struct Snap(Vec<u8>);

struct QpRig {
    qp: BnxtQp,
    sq: Snap,
    rq: Snap,
}

struct Rig {
    ctx: Ctx,
    cq: BnxtCq<RecordingPage>,
    cq_snap: Snap,
    qps: Vec<(String, QpRig)>,
    srq: Option<(BnxtSrq, Snap)>,
    line: usize,
}

impl Rig {
    fn qp(&mut self, name: &str) -> &mut QpRig {
        &mut self
            .qps
            .iter_mut()
            .find(|(n, _)| n == name)
            .unwrap_or_else(|| panic!("no QP {name}"))
            .1
    }
    fn doorbells(&self) -> Vec<String> {
        self.ctx
            .doorbell_page()
            .unwrap()
            .take()
            .iter()
            .map(|v| format!("{v:016x}"))
            .collect()
    }
    fn check_db(&self, ev: &Value) {
        let want: Vec<String> = ev["db"]
            .as_array()
            .unwrap()
            .iter()
            .map(|s| s.as_str().unwrap().to_string())
            .collect();
        assert_eq!(self.doorbells(), want, "line {}: doorbells", self.line);
    }
}

fn context(setup: &Value) -> Ctx {
    let chip =
        u32::from_str_radix(setup["chip"].as_str().unwrap().trim_start_matches("0x"), 16).unwrap();
    let variable = setup["mode"] == "variable";
    let mut u = vec![0u8; 48];
    u[8..12].copy_from_slice(&4096u32.to_le_bytes());
    u[12..16].copy_from_slice(&32u32.to_le_bytes());
    u[16..20].copy_from_slice(&65535u32.to_le_bytes());
    u[24] = if variable { 3 } else { 1 };
    u[32..36].copy_from_slice(&chip.to_le_bytes());
    u[40] = variable as u8;
    let dev = DeviceDesc {
        ibdev: "bnxt_re0".into(),
        uverbs: "uverbs0".into(),
        driver_id: 6,
        driver_abi: 1,
    };
    let ctx = Ctx::new_context(dev_null(), &dev, &u, &()).unwrap();
    let pd = [
        3u32.to_le_bytes(),
        5u32.to_le_bytes(),
        0x5000u32.to_le_bytes(),
        [0; 4],
    ]
    .concat();
    assert_eq!(ctx.pd_number(&pd).unwrap(), Some(3));
    assert_eq!(ctx.doorbell_page().unwrap().offset, 0x5000);
    ctx
}

fn setup(ev: &Value) -> Rig {
    let ctx = context(ev);
    let (prep, cqe, ud) = ctx.prepare_cq(num(&ev["cqe"]) as u32).unwrap();
    // We ask for the 24-byte response of newer kernels (its comp_mask); libbnxt_re 44, 16.
    assert_eq!((cqe, ud.req.len(), ud.resp_len), (15, 16, 24));
    let resp = [num(&ev["cqid"]) as u32, 0, 1, 0]
        .map(u32::to_le_bytes)
        .concat();
    let cq = ctx
        .finish_cq(prep, &CqCreated { handle: 1, cqe: 15 }, &resp)
        .unwrap();
    assert_eq!(
        cq.buf().len() as u64,
        num(&ev["cq_bytes"]),
        "CQ buffer size"
    );
    assert_eq!(cq.depth, 16);
    let cq_snap = Snap(cq.buf().to_vec());
    Rig {
        ctx,
        cq,
        cq_snap,
        qps: Vec::new(),
        srq: None,
        line: 1,
    }
}

fn create_qp(rig: &mut Rig, ev: &Value) {
    let r: Vec<u32> = ev["req"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| num(v) as u32)
        .collect();
    let caps = QpCaps {
        max_send_wr: r[0],
        max_recv_wr: r[1],
        max_send_sge: r[2],
        max_recv_sge: r[3],
        max_inline_data: r[4],
    };
    let qp_type = match num(&ev["type"]) {
        2 => QpType::Rc,
        3 => QpType::Uc,
        _ => QpType::Ud,
    };
    let attr = QpInitAttr {
        qp_type,
        caps,
        sq_sig_all: num(&ev["sig_all"]) != 0,
        uses_srq: num(&ev["srq"]) != 0,
    };
    let (prep, ud) = rig.ctx.prepare_qp(&attr).unwrap();
    assert_eq!((ud.req.len(), ud.resp_len), (24, 8));
    let qpid = num(&ev["qpid"]) as u32;
    let created = QpCreated {
        handle: qpid,
        qpn: qpid,
        caps,
    };
    let mut qp = rig
        .ctx
        .finish_qp(
            prep,
            &attr,
            &created,
            &[qpid.to_le_bytes(), [0; 4]].concat(),
        )
        .unwrap();
    if attr.uses_srq {
        rig.ctx
            .qp_attached_srq(&mut qp, &rig.srq.as_ref().unwrap().0);
    }
    let name = ev["name"].as_str().unwrap();
    assert_eq!(
        qp.sq_buf().len() as u64,
        num(&ev["sq_bytes"]),
        "{name}: SQ buffer size"
    );
    assert_eq!(
        qp.rq_buf().map_or(0, |b| b.len()) as u64,
        num(&ev["rq_bytes"]),
        "{name}: RQ buffer size"
    );
    let fill = |b: &providers::mlx5::mem::DmaBuf| {
        b.write(0, &vec![FILL; b.len()]);
        Snap(b.to_vec())
    };
    let sq = fill(qp.sq_buf());
    let rq = qp.rq_buf().map(fill).unwrap_or(Snap(Vec::new()));
    rig.qps.push((name.to_string(), QpRig { qp, sq, rq }));
}

fn post_send(rig: &mut Rig, ev: &Value) {
    let lists: Vec<Vec<Sge>> = ev["wrs"]
        .as_array()
        .unwrap()
        .iter()
        .map(|w| sges(&w["sges"]))
        .collect();
    let wrs: Vec<SendWr<'_>> = ev["wrs"]
        .as_array()
        .unwrap()
        .iter()
        .zip(&lists)
        .map(|(w, sgl)| {
            let mut s = SendWr::new(num(&w["wr_id"]), opcode(w["opcode"].as_str().unwrap()), sgl);
            s.flags = SendFlags(num(&w["flags"]) as u32);
            s.imm_data = num(&w["imm"]) as u32;
            s.remote = RemoteAddr {
                addr: num(&w["raddr"]),
                rkey: num(&w["rkey"]) as u32,
            };
            if s.opcode.is_atomic() {
                s.compare_add = num(&w["cmp"]);
                s.swap = num(&w["swap"]);
            }
            if let Some(ud) = w.get("ud") {
                s.ud = Some(UdDest {
                    ah: num(&ud[0]) as u32,
                    remote_qpn: num(&ud[1]) as u32,
                    remote_qkey: num(&ud[2]) as u32,
                });
            }
            s
        })
        .collect();
    let line = rig.line;
    let ctx = &rig.ctx;
    let q = &mut rig
        .qps
        .iter_mut()
        .find(|(n, _)| n == ev["qp"].as_str().unwrap())
        .unwrap()
        .1;
    // SAFETY: every SGE lies in the data mapping (map_data), readable for its length.
    let r = unsafe { ctx.post_send(&mut q.qp, &wrs) };
    check_post(line, ev, r.as_ref().err().map(|e| (e.index, e.error.errno)));
    assert_eq!(
        diff(&q.qp.sq_buf().to_vec(), &mut q.sq.0),
        want_diff(&ev["diff"]),
        "line {line}: SQ bytes"
    );
    rig.check_db(ev);
}

fn check_post(line: usize, ev: &Value, err: Option<(usize, Option<i32>)>) {
    let ret = num(&ev["ret"]) as i32;
    match err {
        None => assert_eq!(ret, 0, "line {line}: libbnxt_re refused, we posted"),
        Some((i, errno)) => {
            assert_eq!(errno, Some(ret), "line {line}: errno");
            assert_eq!(i as i64, ev["bad"].as_i64().unwrap(), "line {line}: bad_wr");
        }
    }
}

fn post_recv(rig: &mut Rig, ev: &Value, srq: bool) {
    let lists: Vec<Vec<Sge>> = ev["wrs"]
        .as_array()
        .unwrap()
        .iter()
        .map(|w| sges(&w["sges"]))
        .collect();
    let wrs: Vec<RecvWr<'_>> = ev["wrs"]
        .as_array()
        .unwrap()
        .iter()
        .zip(&lists)
        .map(|(w, sgl)| RecvWr {
            wr_id: num(&w["wr_id"]),
            sgl,
        })
        .collect();
    let line = rig.line;
    let ctx = &rig.ctx;
    if srq {
        let (s, snap) = rig.srq.as_mut().unwrap();
        // SAFETY: receives are never written by this test's "device".
        let r = unsafe { ctx.post_srq_recv(s, &wrs) };
        check_post(line, ev, r.as_ref().err().map(|e| (e.index, e.error.errno)));
        assert_eq!(
            diff(&s.buf().to_vec(), &mut snap.0),
            want_diff(&ev["diff"]),
            "line {line}: SRQ bytes"
        );
    } else {
        let q = &mut rig
            .qps
            .iter_mut()
            .find(|(n, _)| n == ev["qp"].as_str().unwrap())
            .unwrap()
            .1;
        // SAFETY: as above.
        let r = unsafe { ctx.post_recv(&mut q.qp, &wrs) };
        check_post(line, ev, r.as_ref().err().map(|e| (e.index, e.error.errno)));
        let now = q.qp.rq_buf().map(|b| b.to_vec()).unwrap_or_default();
        assert_eq!(
            diff(&now, &mut q.rq.0),
            want_diff(&ev["diff"]),
            "line {line}: RQ bytes"
        );
    }
    rig.check_db(ev);
}

fn write_cqe(rig: &mut Rig, ev: &Value) {
    let mut b = unhex(ev["bytes"].as_str().unwrap());
    let name = ev["qp"].as_str().unwrap();
    if !name.is_empty() {
        if let Ok(off) = usize::try_from(ev["handle_off"].as_i64().unwrap()) {
            b[off..off + 8].copy_from_slice(&rig.qp(name).qp.handle().to_le_bytes());
        }
    }
    let off = num(&ev["slot"]) as usize * 32;
    rig.cq.buf().write(off, &b);
    rig.cq_snap.0[off..off + 32].copy_from_slice(&b);
}

fn wc_field(wc: &WorkCompletion, k: &str) -> u64 {
    match k {
        "wr_id" => wc.wr_id,
        "status" => wc.status.raw() as u64,
        "opcode" => wc.opcode.raw() as u64,
        "vendor_err" => wc.vendor_err as u64,
        "byte_len" => wc.byte_len as u64,
        "imm_data" => wc.imm_data as u64,
        "qp_num" => wc.qp_num as u64,
        "src_qp" => wc.src_qp as u64,
        "wc_flags" => wc.wc_flags as u64,
        "pkey_index" => wc.pkey_index as u64,
        "slid" => wc.slid as u64,
        "sl" => wc.sl as u64,
        "dlid_path_bits" => wc.dlid_path_bits as u64,
        _ => panic!("field {k}"),
    }
}

fn poll(rig: &mut Rig, ev: &Value) {
    let line = rig.line;
    let mut out = vec![WorkCompletion::default(); num(&ev["n"]) as usize];
    let n = rig.ctx.poll_cq(&mut rig.cq, &mut out).unwrap();
    let want = ev["wcs"].as_array().unwrap();
    assert_eq!(n, want.len(), "line {line}: completions");
    for (i, (w, got)) in want.iter().zip(&out).enumerate() {
        for (k, v) in w.as_object().unwrap() {
            if !v.is_null() {
                assert_eq!(
                    wc_field(got, k),
                    num(v),
                    "line {line}: completion {i} field {k}"
                );
            }
        }
    }
    // The entries libbnxt_re retired have their QP handle zeroed; ours the same entries.
    let slots = |d: Vec<(usize, String)>| {
        d.iter()
            .map(|(o, _)| o / 32)
            .collect::<std::collections::BTreeSet<_>>()
    };
    let now = rig.cq.buf().to_vec();
    let ours = slots(diff(&now, &mut rig.cq_snap.0));
    assert_eq!(
        ours,
        slots(want_diff(&ev["cq_diff"])),
        "line {line}: CQ entries marked read"
    );
    for s in ours {
        let e = &now[s * 32..s * 32 + 32];
        assert!(
            e[0..8] == [0; 8] || e[8..16] == [0; 8],
            "line {line}: slot {s} handle not zeroed"
        );
    }
    rig.check_db(ev);
}

fn modify(rig: &mut Rig, ev: &Value) {
    let ctx = &rig.ctx;
    let q = &mut rig
        .qps
        .iter_mut()
        .find(|(n, _)| n == ev["qp"].as_str().unwrap())
        .unwrap()
        .1;
    let m = QpModified {
        sq_psn: ev.get("sq_psn").map(|v| num(v) as u32),
        path_mtu: ev.get("path_mtu").map(|v| num(v) as u8),
    };
    ctx.qp_modified(&mut q.qp, &m);
    ctx.qp_state_changed(&mut q.qp, QpState::from_raw(num(&ev["state"]) as u32));
}

/// Replay one oracle capture through our provider, panicking at the first difference (the
/// message names the line); returns how many events of each kind it held.
pub fn replay(text: &str) -> BTreeMap<String, usize> {
    map_data();
    let mut lines = text
        .lines()
        .map(|l| serde_json::from_str::<Value>(l).unwrap());
    let mut rig = setup(&lines.next().unwrap());
    let mut counts = BTreeMap::<String, usize>::new();
    for (i, ev) in lines.enumerate() {
        rig.line = i + 2;
        let kind = ev["ev"].as_str().unwrap().to_string();
        match kind.as_str() {
            "qp" => create_qp(&mut rig, &ev),
            "srq" => {
                let (prep, ud) = rig
                    .ctx
                    .prepare_srq(num(&ev["max_wr"]) as u32, num(&ev["max_sge"]) as u32)
                    .unwrap();
                assert_eq!((ud.req.len(), ud.resp_len), (16, 4));
                let id = num(&ev["srqid"]) as u32;
                let core = SrqCreated {
                    handle: id,
                    max_wr: 7,
                    max_sge: 2,
                    srqn: id,
                };
                let s = rig.ctx.finish_srq(prep, &core, &id.to_le_bytes()).unwrap();
                assert_eq!(s.buf().len() as u64, num(&ev["bytes"]), "SRQ buffer size");
                s.buf().write(0, &vec![FILL; s.buf().len()]);
                let snap = Snap(s.buf().to_vec());
                rig.srq = Some((s, snap));
            }
            "ah" => {
                rig.ctx.shared_page().set32(0x10, num(&ev["avid"]) as u32);
                let (prep, _) = rig.ctx.prepare_ah(&AhAttr::default()).unwrap();
                let ah = rig
                    .ctx
                    .finish_ah(prep, &AhAttr::default(), &AhCreated { handle: 1 }, &[])
                    .unwrap();
                assert_eq!(rig.ctx.ah_number(&ah) as u64, num(&ev["avid"]));
            }
            "modify" => modify(&mut rig, &ev),
            "post_send" => post_send(&mut rig, &ev),
            "post_recv" => post_recv(&mut rig, &ev, false),
            "post_srq_recv" => post_recv(&mut rig, &ev, true),
            "cqe" => write_cqe(&mut rig, &ev),
            "poll" => poll(&mut rig, &ev),
            "arm" => {
                rig.ctx
                    .arm_cq(&mut rig.cq, num(&ev["solicited"]) != 0)
                    .unwrap();
                rig.check_db(&ev);
            }
            k => panic!("line {}: unknown event {k}", rig.line),
        }
        *counts.entry(kind).or_default() += 1;
    }
    counts
}
