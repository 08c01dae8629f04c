//! A small bnxt_re device model for the provider's end-to-end tests: one context (static or
//! variable WQE mode) with a CQ per QP, optionally one SRQ all QPs receive from, over the
//! provider's own queue buffers and a [`RecordingPage`] doorbell page. The model plays the
//! kernel too: it answers the create commands and reads the handles the provider gives them.
//!
//! The device, at each [`Fabric::run`], first takes every doorbell rung since the last run (the
//! SQ, RQ and SRQ producer indices, the CQ consumer indices and arms), then, QP by QP, reads
//! the SQ WQEs from its consumer index up to the doorbell's, decoding them here on their own
//! (not with the provider's code): header (opcode, flags, size), extension, SGEs or inline
//! bytes, and the WQE's PSN search entry (its completion opcode, and on RC the start and next
//! PSN the model tracks itself; on Thor the WQE's first slot). Then it executes:
//!
//! - RC and UC QPs are connected in pairs (0↔1, 2↔3, ...). SEND takes the peer's next receive
//!   (its RQ from the consumer index, or the SRQ) and scatters the payload into it; RDMA WRITE
//!   copies into the peer's memory; WRITE with immediate does both, the receive getting no
//!   data; READ copies the peer's memory into the local SGEs; compare-and-swap and
//!   fetch-and-add act on 8 aligned bytes of the peer's memory and return the old value.
//! - A UD SEND goes to the QP its destination names, with the model's one AH, if that QP's Q_Key
//!   is the WQE's; the receive gets 40 zero bytes where a GRH goes and then the payload, and
//!   its length counts the 40. A UD message nobody can take (unknown QP, other Q_Key, no
//!   receive, a receive too small) is dropped and the sender completes successfully, as UD.
//! - Memory: the test registers its buffers ([`Fabric::register`]); every SGE and remote range
//!   must lie inside one registration and carry its key, or the request fails. The model
//!   touches no other memory.
//! - Completions: one send CQE per signalled WQE (its consumer index the WQE's software index
//!   plus one, so the provider retires the unsignalled ones before it silently), one receive CQE
//!   per consumed receive (RC/UD type, length, immediate as the header carries it, SRQ tag,
//!   UD source QP), each written with the CQ's phase (the create's phase, 1, on the first pass,
//!   flipping at each wrap). A CQ the provider lets overflow fails the test.
//! - Errors: an SGE outside its registration
//!   completes with LOC_PROT; a remote range or key that is wrong with REM_ACCESS, and the
//!   responder QP gets a terminal CQE; no receive posted with RNR_RETRY_EXC (retries are not
//!   modelled: the first RNR is final); a message longer than the receive with REM_INV_REQ, the
//!   receive with LOC_LEN (a UC message with no receive to take is dropped and the requester
//!   completes successfully); a UD AH the model did not make with LOC_QP_OP. A QP in error stops:
//!   the model consumes nothing more of it and writes no flush entries, which is the provider's
//!   software flush to complete (as libbnxt_re does).
//! - Doorbells: on the 44-era chips, nothing beyond the 20-bit index, id and type; on Thor 2
//!   (BCM57608) rdma-core 50's format: the valid bit, the queue's epoch (which the model tracks
//!   itself: it flips when a producer index, or a CQ's consumer index, comes back below the
//!   last), and in CQ arms the toggle the model, playing the kernel, last left in the CQ's
//!   toggle page (a new one, counting modulo 4, at each completion event of an armed CQ).
//! - The MODIFY_QP to RTS a post issues on its own (libbnxt_re's UD hardware-stall workaround)
//!   is noted with the QP it names and the doorbells rung before it; the QP stays in RTS.

use providers::bnxt_re::db::RecordingPage;
use providers::bnxt_re::{Bnxt, BnxtCq, BnxtQp, BnxtSrq};
use uverbs::provider::{
    AhAttr, AhCreated, CqCreated, DeviceDesc, Provider, QpCaps, QpCreated, QpInitAttr, QpModified,
    QpState, QpType, SrqCreated,
};
use uverbs::wr::{WcOpcode, WorkCompletion};

use super::{dev_null, le32, le64};

pub type Ctx = Bnxt<RecordingPage>;

pub const QKEY: u32 = 0x1111_1111;
pub const AVID: u32 = 0x2345;
/// Path MTU the model's QPs are given (`IBV_MTU_1024`).
pub const MTU_ENUM: u8 = 3;
pub const MTU: u32 = 1024;
/// What a UD receive holds before the payload.
pub const GRH: usize = 40;

/// Requester and responder statuses the model writes (`bnxt_re_req_wc_status`, `_rsp_`).
pub const REQ_LOC_QP_OP: u8 = 0x03;
pub const REQ_LOC_PROT: u8 = 0x04;
pub const REQ_REM_INV_REQ: u8 = 0x06;
pub const REQ_REM_ACCESS: u8 = 0x07;
pub const REQ_RNR: u8 = 0x09;
pub const RSP_LOC_LEN: u8 = 0x02;

const SLOT: usize = 16;
const SRQE: usize = 128;
/// CQE types and receive flags (`bnxt_re_wc_type`, `BNXT_RE_RC_FLAGS_*`).
const T_SEND: u32 = 0x0;
const T_RECV_RC: u32 = 0x1;
const T_RECV_UD: u32 = 0x2;
const T_TERM: u32 = 0xe;
const F_IMM: u32 = 0x02;
const F_RDMA: u32 = 0x08;

/// What the test asks for.
#[derive(Clone, Copy, Debug)]
pub struct Config {
    pub qp_type: QpType,
    pub nqp: usize,
    pub caps: QpCaps,
    pub cq_entries: u32,
    /// Variable WQE mode on a Thor chip (BCM57508), or static mode on a BCM57414.
    pub variable: bool,
    /// A Thor 2 chip (BCM57608, variable mode) instead: rdma-core 50's doorbells (epoch,
    /// toggle, valid bit) and a toggle page per CQ.
    pub p7: bool,
    /// One SRQ of this many entries that every QP receives from.
    pub srq: Option<u32>,
}

/// The device's side of one QP.
struct DevQp {
    qpid: u32,
    /// The handle the provider gave CREATE_QP (what the CQEs carry).
    handle: u64,
    qp_type: QpType,
    qkey: u32,
    sq_depth: u32,
    /// SQ slots per doorbell index step, and per WQE in static mode.
    sq_step: u32,
    nswr: u32,
    /// SQ consumer and producer (slots).
    sq_cons: u32,
    sq_prod: u32,
    /// Send WQEs consumed so far (the software index of the next).
    swqes: u32,
    psn: u32,
    rq: Option<(u32, u32)>,
    rq_cons: u32,
    rq_prod: u32,
    /// The epochs the producer's doorbells must carry (Thor 2).
    sq_epoch: bool,
    rq_epoch: bool,
    err: bool,
}

struct DevCq {
    cqid: u32,
    depth: u32,
    produced: u64,
    consumed: u64,
    head: u32,
    armed: Option<u32>,
    epoch: bool,
    /// What the kernel last left in the CQ's toggle page (Thor 2), and the events so far.
    toggle: u32,
    events: u32,
}

struct DevSrq {
    srqid: u32,
    depth: u32,
    cons: u32,
    prod: u32,
    epoch: bool,
}

/// A receive the device took: where its data goes, what to tell.
struct Taken {
    sges: Vec<(u64, u32, u32)>,
    tag: u32,
}

enum Fail {
    Req(u8),
    /// The requester's status, and the responder QP's fate: a terminal entry.
    ReqTerm(u8, usize),
}

pub struct Fabric {
    pub ctx: Ctx,
    pub cqs: Vec<BnxtCq<RecordingPage>>,
    pub qps: Vec<BnxtQp>,
    pub srq: Option<BnxtSrq>,
    pub ah: u32,
    variable: bool,
    p7: bool,
    dev: Vec<DevQp>,
    dcq: Vec<DevCq>,
    dsrq: Option<DevSrq>,
    /// Registered memory: (start, length, key).
    mrs: Vec<(u64, u64, u32)>,
    /// RTS→RTS modifies the provider issued: (QP index, doorbells rung before it in all).
    pub rts_again: Vec<(usize, usize)>,
    doorbells: usize,
}

fn uctx(variable: bool, p7: bool) -> Vec<u8> {
    let mut u = vec![0u8; 48];
    u[8..12].copy_from_slice(&4096u32.to_le_bytes());
    u[12..16].copy_from_slice(&32u32.to_le_bytes());
    u[16..20].copy_from_slice(&65535u32.to_le_bytes());
    u[24] = if variable { 3 } else { 1 };
    let chip: u32 = match (p7, variable) {
        (true, _) => 0x1760,
        (false, true) => 0x1750,
        (false, false) => 0x16d7,
    };
    u[32..36].copy_from_slice(&chip.to_le_bytes());
    u[40] = variable as u8;
    u
}

/// `len` bytes of `depth` 16-byte slots from `buf` at slot `at`, wrapping at the ring's end.
fn ring_read(buf: &providers::mlx5::mem::DmaBuf, depth: u32, at: u32, len: usize) -> Vec<u8> {
    let ring = depth as usize * SLOT;
    let all = buf.to_vec();
    let mut out = Vec::with_capacity(len);
    for i in 0..len {
        out.push(all[(at as usize * SLOT + i) % ring]);
    }
    out
}

/// The SGEs of a WQE from byte `at`: (address, key, length).
fn sges_at(w: &[u8], at: usize, n: usize) -> Vec<(u64, u32, u32)> {
    (0..n)
        .map(|i| {
            let o = at + i * SLOT;
            (le64(w, o), le32(w, o + 8), le32(w, o + 12))
        })
        .collect()
}

impl Fabric {
    pub fn new(cfg: Config) -> Fabric {
        let dev = DeviceDesc {
            ibdev: "bnxt_model".into(),
            uverbs: "uverbs0".into(),
            driver_id: 6,
            driver_abi: 1,
        };
        let ctx =
            Ctx::new_context(dev_null(), &dev, &uctx(cfg.variable || cfg.p7, cfg.p7), &()).unwrap();
        let pd = [1u32, 5, 0x5000, 0].map(u32::to_le_bytes).concat();
        assert_eq!(ctx.pd_number(&pd).unwrap(), Some(1));
        let mut f = Fabric {
            ctx,
            cqs: vec![],
            qps: vec![],
            srq: None,
            ah: 0,
            variable: cfg.variable || cfg.p7,
            p7: cfg.p7,
            dev: vec![],
            dcq: vec![],
            dsrq: None,
            mrs: vec![],
            rts_again: vec![],
            doorbells: 0,
        };
        if let Some(max_wr) = cfg.srq {
            f.create_srq(max_wr, cfg.caps.max_recv_sge);
        }
        for i in 0..cfg.nqp {
            f.create_cq(cfg.cq_entries);
            f.create_qp(i, &cfg);
        }
        f.ctx.shared_page().set32(0x10, AVID);
        let (prep, _) = f.ctx.prepare_ah(&AhAttr::default()).unwrap();
        let ah = f
            .ctx
            .finish_ah(prep, &AhAttr::default(), &AhCreated { handle: 1 }, &[])
            .unwrap();
        f.ah = f.ctx.ah_number(&ah);
        f
    }

    fn create_cq(&mut self, entries: u32) {
        let (prep, cqe, ud) = self.ctx.prepare_cq(entries).unwrap();
        let cqid = 0x40 + self.cqs.len() as u32;
        // Thor 2: the comp_mask offers the toggle page, as newer kernels do for those chips.
        let resp = [cqid, 0, 1, 0, self.p7 as u32, 0]
            .map(u32::to_le_bytes)
            .concat();
        let cq = self
            .ctx
            .finish_cq(prep, &CqCreated { handle: cqid, cqe }, &resp)
            .unwrap();
        assert_eq!(
            le64(&ud.req, 0),
            cq.buf().addr(),
            "CREATE_CQ names the ring"
        );
        assert_eq!(ud.resp_len, 24, "room for the comp_mask of newer kernels");
        assert_eq!(
            cq.toggle_page().is_some(),
            self.p7,
            "a toggle page where offered"
        );
        self.dcq.push(DevCq {
            cqid,
            depth: cq.depth,
            produced: 0,
            consumed: 0,
            head: 0,
            armed: None,
            epoch: false,
            toggle: 0,
            events: 0,
        });
        self.cqs.push(cq);
    }

    fn create_srq(&mut self, max_wr: u32, max_sge: u32) {
        let (prep, ud) = self.ctx.prepare_srq(max_wr, max_sge).unwrap();
        let srqid = 0x70;
        let core = SrqCreated {
            handle: srqid,
            max_wr,
            max_sge,
            srqn: srqid,
        };
        let s = self
            .ctx
            .finish_srq(prep, &core, &srqid.to_le_bytes())
            .unwrap();
        assert_eq!(
            le64(&ud.req, 0),
            s.buf().addr(),
            "CREATE_SRQ names the ring"
        );
        self.dsrq = Some(DevSrq {
            srqid,
            depth: s.geom.depth,
            cons: 0,
            prod: 0,
            epoch: false,
        });
        self.srq = Some(s);
    }

    fn create_qp(&mut self, i: usize, cfg: &Config) {
        let attr = QpInitAttr {
            qp_type: cfg.qp_type,
            caps: cfg.caps,
            sq_sig_all: false,
            uses_srq: cfg.srq.is_some(),
        };
        let (prep, ud) = self.ctx.prepare_qp(&attr).unwrap();
        let qpid = 0x100 + i as u32;
        let core = QpCreated {
            handle: qpid,
            qpn: qpid,
            caps: cfg.caps,
        };
        let resp = [qpid, 0].map(u32::to_le_bytes).concat();
        let mut qp = self.ctx.finish_qp(prep, &attr, &core, &resp).unwrap();
        assert_eq!(
            le64(&ud.req, 0),
            qp.sq_buf().addr(),
            "CREATE_QP names the SQ"
        );
        assert_eq!(
            le64(&ud.req, 8),
            qp.rq_buf().map_or(0, |b| b.addr()),
            "CREATE_QP names the RQ"
        );
        if let Some(s) = &self.srq {
            self.ctx.qp_attached_srq(&mut qp, s);
        }
        let psn = 0x10_0000 * (i as u32 + 1) + 0xff_f000;
        let m = QpModified {
            sq_psn: Some(psn),
            path_mtu: Some(MTU_ENUM),
        };
        self.ctx.qp_modified(&mut qp, &m);
        for s in [QpState::Init, QpState::Rtr, QpState::Rts] {
            self.ctx.qp_state_changed(&mut qp, s);
        }
        self.dev.push(DevQp {
            qpid,
            handle: le64(&ud.req, 16),
            qp_type: cfg.qp_type,
            qkey: QKEY,
            sq_depth: qp.sq.depth,
            sq_step: qp.sq.max_slots,
            nswr: qp.sq.nswr,
            sq_cons: 0,
            sq_prod: 0,
            swqes: 0,
            psn: psn & 0xff_ffff,
            rq: qp.rq.map(|g| (g.depth, g.max_slots)),
            rq_cons: 0,
            rq_prod: 0,
            sq_epoch: false,
            rq_epoch: false,
            err: false,
        });
        self.qps.push(qp);
    }

    pub fn qpn(&self, i: usize) -> u32 {
        self.dev[i].qpid
    }
    pub fn set_qkey(&mut self, i: usize, qkey: u32) {
        self.dev[i].qkey = qkey;
    }
    /// Whether the device put QP `i` in error.
    pub fn in_error(&self, i: usize) -> bool {
        self.dev[i].err
    }
    /// The arm the last CQ doorbell of CQ `c` asked for (the `dbtype` of an arm).
    pub fn armed(&self, c: usize) -> Option<u32> {
        self.dcq[c].armed
    }
    /// Completion events of CQ `c`: completions written while it was armed.
    pub fn events(&self, c: usize) -> u32 {
        self.dcq[c].events
    }

    /// Register `b` (the test keeps it alive and does not touch it while the device runs);
    /// returns its key (lkey and rkey alike).
    pub fn register(&mut self, b: &mut [u8]) -> u32 {
        let key = 0x1000 + self.mrs.len() as u32 * 0x100 + 0x11;
        self.mrs.push((b.as_mut_ptr() as u64, b.len() as u64, key));
        key
    }

    fn mr_ok(&self, addr: u64, len: u32, key: u32) -> bool {
        self.mrs.iter().any(|&(a, l, k)| {
            k == key && addr >= a && addr.checked_add(len as u64).is_some_and(|e| e <= a + l)
        })
    }

    /// Poll CQ `c` for up to `max` completions.
    pub fn poll(&mut self, c: usize, max: usize) -> Vec<WorkCompletion> {
        let mut wc = vec![WorkCompletion::default(); max];
        let n = self.ctx.poll_cq(&mut self.cqs[c], &mut wc).unwrap();
        wc.truncate(n);
        wc
    }

    /// Take the doorbells, then run every QP's SQ up to its producer index.
    pub fn run(&mut self) {
        self.take_doorbells();
        for q in 0..self.dev.len() {
            while !self.dev[q].err && self.dev[q].sq_cons != self.dev[q].sq_prod {
                self.step(q);
            }
        }
    }

    fn take_doorbells(&mut self) {
        let page = self.ctx.doorbell_page().unwrap();
        for (handle, before) in page.take_modifies() {
            let q = self.dev.iter().position(|d| d.qpid == handle);
            let q = q.unwrap_or_else(|| panic!("MODIFY_QP of QP handle {handle:#x}, not ours"));
            self.rts_again.push((q, before));
        }
        let dbs = page.take();
        self.doorbells += dbs.len();
        for v in dbs {
            let db = self.decode_db(v);
            match db.typ {
                0 | 1 => self.qp_doorbell(&db),
                2 => {
                    let s = self.dsrq.as_mut().expect("SRQ doorbell without an SRQ");
                    assert_eq!(s.srqid, db.qid);
                    assert!(
                        db.indx < s.depth,
                        "SRQ doorbell index {} beyond the ring",
                        db.indx
                    );
                    check_epoch(self.p7, &mut s.epoch, s.prod, db.indx, &db);
                    s.prod = db.indx;
                }
                4..=6 => self.cq_doorbell(&db),
                t => panic!("doorbell of unknown type {t}: {v:#018x}"),
            }
        }
    }

    /// Split a doorbell, checking its format: rdma-core 44's (nothing beyond the 20-bit index,
    /// id and type), or on Thor 2 rdma-core 50's (epoch, toggle, valid bit).
    fn decode_db(&self, v: u64) -> Db {
        let (lo, hi) = (v as u32, (v >> 32) as u32);
        let (qid, typ) = (hi & 0xf_ffff, hi >> 28);
        if !self.p7 {
            assert_eq!(lo >> 20, 0, "{v:#018x}: bits beyond the index");
            assert_eq!(
                hi & 0x0ff0_0000,
                0,
                "{v:#018x}: bits between the id and the type"
            );
            return Db {
                indx: lo,
                epoch: false,
                toggle: 0,
                qid,
                typ,
            };
        }
        assert_eq!(
            hi & 0x0ff0_0000,
            0x0400_0000,
            "{v:#018x}: the valid bit alone"
        );
        Db {
            indx: lo & 0xff_ffff,
            epoch: lo >> 24 & 1 != 0,
            toggle: lo >> 25,
            qid,
            typ,
        }
    }

    fn qp_doorbell(&mut self, db: &Db) {
        let q = self.dev.iter().position(|d| d.qpid == db.qid);
        let q = q.unwrap_or_else(|| panic!("doorbell for QP {:#x}, not the device's", db.qid));
        let d = &mut self.dev[q];
        assert_eq!(db.toggle, 0, "a toggle outside a CQ arm");
        if db.typ == 0 {
            let at = db.indx * d.sq_step;
            assert!(
                at < d.sq_depth,
                "SQ doorbell index {} beyond the ring",
                db.indx
            );
            check_epoch(self.p7, &mut d.sq_epoch, d.sq_prod, at, db);
            d.sq_prod = at;
        } else {
            let (depth, step) = d.rq.expect("RQ doorbell for a QP with an SRQ");
            let at = db.indx * step;
            assert!(at < depth, "RQ doorbell index {} beyond the ring", db.indx);
            check_epoch(self.p7, &mut d.rq_epoch, d.rq_prod, at, db);
            d.rq_prod = at;
        }
    }

    fn cq_doorbell(&mut self, db: &Db) {
        let p7 = self.p7;
        let c = self.dcq.iter_mut().find(|c| c.cqid == db.qid);
        let c = c.unwrap_or_else(|| panic!("doorbell for CQ {:#x}, not the device's", db.qid));
        assert!(
            db.indx < c.depth,
            "CQ doorbell index {} beyond the ring",
            db.indx
        );
        check_epoch(p7, &mut c.epoch, c.head, db.indx, db);
        c.consumed += ((db.indx + c.depth - c.head) % c.depth) as u64;
        c.head = db.indx;
        assert!(
            c.consumed <= c.produced,
            "the provider consumed CQEs the device never wrote"
        );
        if db.typ == 4 {
            assert_eq!(db.toggle, 0, "a toggle in a CQ consumer doorbell");
        } else {
            assert_eq!(
                db.toggle, c.toggle,
                "an arm carries the toggle the kernel left"
            );
            c.armed = Some(db.typ);
        }
    }
}

/// A doorbell, split.
struct Db {
    indx: u32,
    epoch: bool,
    toggle: u32,
    qid: u32,
    typ: u32,
}

/// Thor 2: the queue's epoch flips when its index wraps (the new index below the old), and the
/// doorbell must carry it.
fn check_epoch(p7: bool, epoch: &mut bool, old: u32, new: u32, db: &Db) {
    if !p7 {
        return;
    }
    if new < old {
        *epoch = !*epoch;
    }
    assert_eq!(
        db.epoch, *epoch,
        "type {} queue {:#x} at {new}: epoch",
        db.typ, db.qid
    );
}

// ---- executing a send WQE ----------------------------------------------------------------------

impl Fabric {
    /// Consume and execute the WQE at QP `q`'s SQ consumer index.
    fn step(&mut self, q: usize) {
        let d = &self.dev[q];
        let (depth, at) = (d.sq_depth, d.sq_cons);
        let hdr = ring_read(self.qps[q].sq_buf(), depth, at, SLOT);
        let ws = u32::from(hdr[2]);
        assert!(ws >= 2, "QP {q}: WQE at slot {at} declares {ws} slots");
        if !self.variable {
            assert!(ws <= 8, "QP {q}: a static-mode WQE of {ws} slots");
        }
        let w = ring_read(self.qps[q].sq_buf(), depth, at, ws as usize * SLOT);
        let k = d.swqes;
        let used = if self.variable { ws } else { d.sq_step };
        let d = &mut self.dev[q];
        d.sq_cons = (d.sq_cons + used) % depth;
        d.swqes = d.swqes.wrapping_add(1);
        self.check_psns(q, &w, k, at);
        let signalled = w[1] & 0x01 != 0;
        match self.execute(q, &w) {
            Ok(()) if signalled => self.send_cqe(q, k, 0),
            Ok(()) => {}
            Err(Fail::Req(st)) => self.send_cqe(q, k, st),
            Err(Fail::ReqTerm(st, r)) => {
                self.send_cqe(q, k, st);
                self.dev[r].err = true;
                let mut body = [0u8; 24];
                body[0..8].copy_from_slice(&self.dev[r].handle.to_le_bytes());
                self.cqe(r, body, T_TERM, 0, 0, 0);
            }
        }
    }

    /// The PSN search entry of software index `k`: the completion opcode, and on RC the PSNs.
    fn check_psns(&mut self, q: usize, w: &[u8], k: u32, slot: u32) {
        let qp = &self.qps[q];
        let off = qp.sq.psns_off(k % self.dev[q].nswr);
        let mut e = [0u8; 16];
        qp.sq_buf().read(off, &mut e[..qp.sq.psns_size as usize]);
        let opc = match w[0] {
            0 | 1 => WcOpcode::Send,
            4 | 5 => WcOpcode::RdmaWrite,
            6 => WcOpcode::RdmaRead,
            8 => WcOpcode::CompSwap,
            0x0b => WcOpcode::FetchAdd,
            o => panic!("QP {q}: send WQE opcode {o:#x}"),
        };
        let (w0, w1) = (le32(&e, 0), le32(&e, 4));
        assert_eq!(w0 >> 24, opc.raw(), "QP {q} WQE {k}: PSN entry's opcode");
        if qp.sq.psns_size == 16 {
            assert_eq!(
                u16::from_le_bytes([e[8], e[9]]) as u32,
                slot,
                "QP {q} WQE {k}: PSN entry's first slot"
            );
        }
        let d = &mut self.dev[q];
        if d.qp_type == QpType::Rc {
            // Atomics carry the remote address where the others carry the length.
            let len = if matches!(w[0], 8 | 0x0b) {
                le32(w, 44)
            } else {
                le32(w, 8)
            };
            let next = (d.psn + len.div_ceil(MTU).max(1)) & 0xff_ffff;
            assert_eq!(
                (w0 & 0xff_ffff, w1 & 0xff_ffff),
                (d.psn, next),
                "QP {q} WQE {k}: PSNs"
            );
            d.psn = next;
        }
    }

    fn execute(&mut self, q: usize, w: &[u8]) -> Result<(), Fail> {
        let (op, inline) = (w[0], w[1] & 0x10 != 0);
        let nsge = (w[2] as usize).saturating_sub(2);
        let len = le32(w, 8);
        if self.dev[q].qp_type == QpType::Ud {
            return self.ud_send(q, w, inline, nsge);
        }
        let r = q ^ 1;
        match op {
            0 | 1 => {
                let data = self.gather(w, inline, nsge, len)?;
                if let Some(t) = self.take_recv(q, r, data.len())? {
                    self.scatter(&t.sges, &data);
                    let (imm, flags) = if op == 1 { (le32(w, 4), F_IMM) } else { (0, 0) };
                    self.recv_cqe(r, data.len() as u32, imm, flags, t.tag, None);
                }
            }
            4 | 5 => {
                let data = self.gather(w, inline, nsge, len)?;
                let (raddr, rkey) = (le64(w, 16), le32(w, 24));
                if !self.mr_ok(raddr, data.len() as u32, rkey) {
                    return Err(Fail::ReqTerm(REQ_REM_ACCESS, r));
                }
                if op == 5 {
                    let Some(t) = self.take_recv(q, r, 0)? else {
                        return Ok(());
                    };
                    self.recv_cqe(
                        r,
                        data.len() as u32,
                        le32(w, 4),
                        F_IMM | F_RDMA,
                        t.tag,
                        None,
                    );
                }
                self.scatter(&[(raddr, rkey, data.len() as u32)], &data);
            }
            6 => {
                let sges = sges_at(w, 32, nsge);
                self.check_local(&sges)?;
                let (raddr, rkey) = (le64(w, 16), le32(w, 24));
                if !self.mr_ok(raddr, len, rkey) {
                    return Err(Fail::ReqTerm(REQ_REM_ACCESS, r));
                }
                self.scatter(&sges, &self.read_mem(raddr, len as usize));
            }
            8 | 0x0b => self.atomic(w, r, op == 8)?,
            o => panic!("QP {q}: opcode {o:#x} on a connected QP"),
        }
        Ok(())
    }

    fn atomic(&mut self, w: &[u8], r: usize, cas: bool) -> Result<(), Fail> {
        let (rkey, raddr) = (le32(w, 4), le64(w, 8));
        let (swap, cmp_add) = (le64(w, 16), le64(w, 24));
        let local = sges_at(w, 32, 1);
        assert_eq!(local[0].2, 8, "an atomic's local SGE is 8 bytes");
        self.check_local(&local)?;
        if raddr % 8 != 0 || !self.mr_ok(raddr, 8, rkey) {
            return Err(Fail::ReqTerm(REQ_REM_ACCESS, r));
        }
        let old = le64(&self.read_mem(raddr, 8), 0);
        let new = if cas {
            if old == cmp_add {
                swap
            } else {
                old
            }
        } else {
            old.wrapping_add(cmp_add)
        };
        self.scatter(&[(raddr, rkey, 8)], &new.to_le_bytes());
        self.scatter(&local, &old.to_le_bytes());
        Ok(())
    }

    fn ud_send(&mut self, q: usize, w: &[u8], inline: bool, nsge: usize) -> Result<(), Fail> {
        assert!(matches!(w[0], 0 | 1), "QP {q}: UD opcode {:#x}", w[0]);
        let (len, qkey) = (le32(w, 8), le32(w, 12));
        let (dqp, avid) = (le32(w, 16) & 0xff_ffff, le32(w, 20) & 0xf_ffff);
        let data = self.gather(w, inline, nsge, len)?;
        if avid != self.ah {
            return Err(Fail::Req(REQ_LOC_QP_OP));
        }
        let Some(r) = self
            .dev
            .iter()
            .position(|d| d.qpid == dqp && d.qkey == qkey && !d.err)
        else {
            return Ok(());
        };
        let Some(t) = self.peek_recv(r) else {
            return Ok(());
        };
        let room: u64 = t.sges.iter().map(|s| s.2 as u64).sum();
        if room < (GRH + data.len()) as u64 {
            return Ok(());
        }
        self.consume_recv(r);
        let mut msg = vec![0u8; GRH];
        msg.extend_from_slice(&data);
        self.scatter(&t.sges, &msg);
        let (imm, flags) = if w[0] == 1 {
            (le32(w, 4), F_IMM)
        } else {
            (0, 0)
        };
        self.recv_cqe(
            r,
            msg.len() as u32,
            imm,
            flags,
            t.tag,
            Some(self.dev[q].qpid),
        );
        Ok(())
    }

    /// The payload: the inline bytes, or the SGEs' memory (each checked against its key).
    fn gather(&self, w: &[u8], inline: bool, nsge: usize, len: u32) -> Result<Vec<u8>, Fail> {
        if inline {
            let end = 32 + len as usize;
            assert!(
                end <= w.len(),
                "inline payload of {len} bytes past the WQE's {} bytes",
                w.len()
            );
            return Ok(w[32..end].to_vec());
        }
        let sges = sges_at(w, 32, nsge);
        self.check_local(&sges)?;
        let data: Vec<u8> = sges
            .iter()
            .flat_map(|s| self.read_mem(s.0, s.2 as usize))
            .collect();
        assert_eq!(
            data.len() as u32,
            len,
            "the header's length is the SGEs' sum"
        );
        Ok(data)
    }

    fn check_local(&self, sges: &[(u64, u32, u32)]) -> Result<(), Fail> {
        match sges.iter().all(|s| self.mr_ok(s.0, s.2, s.1)) {
            true => Ok(()),
            false => Err(Fail::Req(REQ_LOC_PROT)),
        }
    }

    fn read_mem(&self, addr: u64, len: usize) -> Vec<u8> {
        assert!(self
            .mrs
            .iter()
            .any(|&(a, l, _)| addr >= a && addr + len as u64 <= a + l));
        // SAFETY: inside a registration (checked), memory the test keeps alive and leaves alone
        // while the device runs.
        unsafe { std::slice::from_raw_parts(addr as *const u8, len) }.to_vec()
    }

    /// Write `data` across `sges` (which were checked to lie in registrations, and hold it).
    fn scatter(&self, sges: &[(u64, u32, u32)], data: &[u8]) {
        let mut at = 0;
        for &(addr, key, len) in sges {
            let n = (len as usize).min(data.len() - at);
            assert!(self.mr_ok(addr, n as u32, key));
            // SAFETY: inside a registration (checked): the test's memory, alive and untouched
            // by the test while the device runs.
            unsafe { std::ptr::copy(data[at..].as_ptr(), addr as *mut u8, n) };
            at += n;
        }
        assert_eq!(at, data.len(), "the receive holds the message");
    }
}

// ---- receives and completions ------------------------------------------------------------------

impl Fabric {
    /// Take QP `r`'s next receive for an RC/UC message of `len` bytes from QP `q` (None: a UC
    /// message dropped).
    fn take_recv(&mut self, q: usize, r: usize, len: usize) -> Result<Option<Taken>, Fail> {
        let uc = self.dev[q].qp_type == QpType::Uc;
        if self.dev[r].err {
            return Err(Fail::Req(REQ_REM_INV_REQ));
        }
        let Some(t) = self.peek_recv(r) else {
            return if uc {
                Ok(None)
            } else {
                Err(Fail::Req(REQ_RNR))
            };
        };
        self.consume_recv(r);
        let room: u64 = t.sges.iter().map(|s| s.2 as u64).sum();
        let keys_ok = t.sges.iter().all(|s| self.mr_ok(s.0, s.2, s.1));
        if room < len as u64 || !keys_ok {
            self.dev[r].err = true;
            self.recv_err_cqe(r, RSP_LOC_LEN, t.tag);
            return Err(Fail::Req(REQ_REM_INV_REQ));
        }
        Ok(Some(t))
    }

    /// QP `r`'s next posted receive (from its RQ or the SRQ), not yet consumed.
    fn peek_recv(&self, r: usize) -> Option<Taken> {
        let d = &self.dev[r];
        let e = match (&self.dsrq, d.rq) {
            (Some(s), _) => {
                if s.cons == s.prod {
                    return None;
                }
                let mut e = vec![0u8; SRQE];
                self.srq
                    .as_ref()
                    .unwrap()
                    .buf()
                    .read(s.cons as usize * SRQE, &mut e);
                e
            }
            (None, Some((depth, step))) => {
                if d.rq_cons == d.rq_prod {
                    return None;
                }
                ring_read(
                    self.qps[r].rq_buf().unwrap(),
                    depth,
                    d.rq_cons,
                    step as usize * SLOT,
                )
            }
            (None, None) => unreachable!("a QP without RQ or SRQ"),
        };
        assert_eq!(e[0], 0x80, "QP {r}: a receive WQE's opcode");
        let nsge = (e[2] as usize).saturating_sub(2);
        assert!(
            32 + nsge * SLOT <= e.len(),
            "QP {r}: receive of {nsge} SGEs past its entry"
        );
        Some(Taken {
            sges: sges_at(&e, 32, nsge),
            tag: le32(&e, 8),
        })
    }

    fn consume_recv(&mut self, r: usize) {
        match (&mut self.dsrq, self.dev[r].rq) {
            (Some(s), _) => s.cons = (s.cons + 1) % s.depth,
            (None, Some((depth, step))) => {
                let d = &mut self.dev[r];
                d.rq_cons = (d.rq_cons + step) % depth;
            }
            (None, None) => unreachable!(),
        }
    }

    /// Write a CQE into QP `q`'s CQ: `body` the 24 type-specific bytes.
    fn cqe(&mut self, q: usize, body: [u8; 24], typ: u32, status: u8, flags: u32, w1: u32) {
        let c = q;
        let dc = &mut self.dcq[c];
        assert!(
            dc.produced - dc.consumed < dc.depth as u64 - 1,
            "CQ {c} overflows: the provider did not poll"
        );
        let n = dc.produced;
        dc.produced += 1;
        if dc.armed.take().is_some() {
            // The event: on Thor 2 the kernel leaves the next toggle in the CQ's page.
            dc.events += 1;
            dc.toggle = (dc.toggle + 1) & 3;
            if let Some(t) = self.cqs[c].toggle_page() {
                t.set32(0, dc.toggle);
            }
        }
        let phase = 1 ^ ((n / dc.depth as u64) & 1) as u32;
        let mut e = [0u8; 32];
        e[..24].copy_from_slice(&body);
        let w0 = phase | typ << 1 | u32::from(status) << 8 | flags << 16;
        e[24..28].copy_from_slice(&w0.to_le_bytes());
        e[28..32].copy_from_slice(&w1.to_le_bytes());
        self.cqs[c]
            .buf()
            .write((n % dc.depth as u64) as usize * 32, &e);
    }

    fn send_cqe(&mut self, q: usize, k: u32, status: u8) {
        let mut body = [0u8; 24];
        body[0..8].copy_from_slice(&self.dev[q].handle.to_le_bytes());
        body[8..12].copy_from_slice(&k.wrapping_add(1).to_le_bytes());
        if status != 0 {
            self.dev[q].err = true;
        }
        self.cqe(q, body, T_SEND, status, 0, 0);
    }

    fn recv_cqe(&mut self, r: usize, len: u32, imm: u32, flags: u32, tag: u32, src: Option<u32>) {
        let mut body = [0u8; 24];
        body[0..4].copy_from_slice(&len.to_le_bytes());
        body[4..8].copy_from_slice(&imm.to_le_bytes());
        body[8..16].copy_from_slice(&self.dev[r].handle.to_le_bytes());
        let (typ, w1) = match src {
            Some(s) => {
                body[22..24].copy_from_slice(&(s as u16).to_le_bytes());
                (T_RECV_UD, tag & 0xf_ffff | (s >> 16) << 24)
            }
            None => (T_RECV_RC, tag & 0xf_ffff),
        };
        self.cqe(r, body, typ, 0, flags, w1);
    }

    fn recv_err_cqe(&mut self, r: usize, status: u8, tag: u32) {
        let mut body = [0u8; 24];
        body[8..16].copy_from_slice(&self.dev[r].handle.to_le_bytes());
        self.cqe(r, body, T_RECV_RC, status, 0, tag & 0xf_ffff);
    }
}
