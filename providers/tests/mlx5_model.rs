//! A device model that plays the HCA for our mlx5 provider, so the whole data path runs end to
//! end without hardware: the model acts as the kernel at create time (reads the buffer and
//! doorbell-record addresses from our driver data, answers CQN/QPN/bfreg), and as the device at
//! each doorbell (the recording UAR calls it on every MMIO event): it reads the SQ doorbell
//! record, checks the doorbell/BlueFlame bytes against the WQE in the SQ, parses our WQEs,
//! performs WRITE / READ / SEND into posted receives / CAS / FAA / immediates on process memory,
//! and writes CQEs with the owner bit of the current lap, honouring the CQ consumer index.
//!
//! UD QPs: the model reads the datagram segment (address vector, remote QPN with the extended-AV
//! bit, Q_Key), delivers by destination QPN, drops a datagram whose Q_Key does not match the
//! receiving QP's (or that finds no receive posted), and scatters a 40-byte GRH before the
//! payload, as the device does for UD receives. SRQs: the model consumes the SRQ's WQEs in the
//! order of their `next_wqe_index` links, starting at entry 0, as far as the SRQ doorbell
//! record's counter allows.
//!
//! Model choices (not hardware facts): atomics operate on native-endian u64s; rkeys are checked
//! against one key per peer; an RNR condition on RC is a test failure; the GRH is an IPv6 header
//! with the port GID as both source and destination (one port).

#[path = "mlx5_common.rs"]
mod common;

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use common::*;
use providers::mlx5::uar::{RecordingUar, UarEvent};
use providers::mlx5::{abi, Mlx5, Mlx5Cq, Mlx5Qp, Mlx5Srq};
use uverbs::dv::{CryptoProvider, DcProvider, XrcSrqProvider};
use uverbs::provider::{
    AhAttr, AhCreated, CqCreated, Provider, QpCaps, QpCreated, QpInitAttr, QpType, SrqCreated,
};
use uverbs::wr::{
    RecvWr, SendFlags, SendWr, Sge, UdDest, WcOpcode, WcStatus, WorkCompletion, WrOpcode,
};

const RKEY: u32 = 0x5151;

fn rd(addr: u64, len: usize) -> Vec<u8> {
    let mut v = vec![0u8; len];
    // SAFETY: test-owned memory (queue buffers, doorbell records, data buffers) at these addresses.
    unsafe { std::ptr::copy_nonoverlapping(addr as usize as *const u8, v.as_mut_ptr(), len) };
    v
}
fn wr(addr: u64, b: &[u8]) {
    // SAFETY: as above.
    unsafe { std::ptr::copy_nonoverlapping(b.as_ptr(), addr as usize as *mut u8, b.len()) };
}
fn be32(b: &[u8], o: usize) -> u32 {
    u32::from_be_bytes(b[o..o + 4].try_into().unwrap())
}
fn be64(b: &[u8], o: usize) -> u64 {
    u64::from_be_bytes(b[o..o + 8].try_into().unwrap())
}

#[derive(Clone, Copy)]
struct MCq {
    buf: u64,
    db: u64,
    ncqe: u32,
    pi: u32,
}

#[derive(Clone, Copy)]
struct MQp {
    qpn: u32,
    uidx: u32,
    buf: u64,
    db: u64,
    sq_cnt: u32,
    sq_off: u64,
    rq_cnt: u32,
    rq_shift: u32,
    sq_ci: u32,
    rq_ci: u32,
    cqn: u32,
    peer: u32,
    bf: usize,
    ud: bool,
    qkey: u32,
    srq: Option<u32>,
}

#[derive(Clone, Copy)]
struct MSrq {
    buf: u64,
    db: u64,
    shift: u32,
    cnt: u32,
    /// The next entry the device consumes (followed through `next_wqe_index`).
    head: u32,
    /// Entries consumed so far (compared with the doorbell record's counter).
    consumed: u32,
}

impl MQp {
    /// A QP the device learns from its CREATE_QP driver request `req` (buffer, doorbell record,
    /// SQ size, user index), with no receive queue, no peer and no SRQ until the caller sets them.
    fn from_req(req: &[u8], qpn: u32, cqn: u32, bf: usize) -> MQp {
        let g32 = |o: usize| u32::from_ne_bytes(req[o..o + 4].try_into().unwrap());
        let g64 = |o: usize| u64::from_ne_bytes(req[o..o + 8].try_into().unwrap());
        MQp {
            qpn,
            uidx: g32(abi::qp_req::UIDX),
            buf: g64(abi::qp_req::BUF_ADDR),
            db: g64(abi::qp_req::DB_ADDR),
            sq_cnt: g32(abi::qp_req::SQ_WQE_COUNT),
            sq_off: 0,
            rq_cnt: 0,
            rq_shift: 0,
            sq_ci: 0,
            rq_ci: 0,
            cqn,
            peer: 0,
            bf,
            ud: false,
            qkey: 0,
            srq: None,
        }
    }

    /// The address of SQ basic block `i` (wrapping at the SQ end).
    fn sq_slot(&self, i: u32) -> u64 {
        self.buf + self.sq_off + ((i & (self.sq_cnt - 1)) as u64) * 64
    }

    /// The WQE starting at basic block `idx`: its `ds * 16` bytes, its size in basic blocks and
    /// whether it runs past the SQ end.
    fn wqe(&self, idx: u32) -> (Vec<u8>, u32, bool) {
        let ds = (be32(&rd(self.sq_slot(idx), 8), 4) & 0x3f) as usize;
        let nbb = (ds * 16).div_ceil(64) as u32;
        let wrapped = (idx & (self.sq_cnt - 1)) + nbb > self.sq_cnt;
        let mut w = Vec::new();
        for b in 0..nbb {
            w.extend(rd(self.sq_slot(idx + b), 64));
        }
        w.truncate(ds * 16);
        (w, nbb, wrapped)
    }
}

/// The model port's GID (RoCE, IPv4-mapped 192.168.7.1): every AV must name it.
const PORT_GID: [u8; 16] = [0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff, 192, 168, 7, 1];
const GRH_LEN: usize = 40;

/// The 8-byte UAR stores of one write-combining bracket, as (offset, bytes).
type Stores = Vec<(usize, [u8; 8])>;

#[derive(Default)]
struct Hca {
    cqs: HashMap<u32, MCq>,
    qps: HashMap<u32, MQp>,
    srqs: HashMap<u32, MSrq>,
    /// UD datagrams dropped (Q_Key mismatch or no receive posted).
    ud_dropped: usize,
    pending: Stores,
    doorbells: usize,
    blueflames: usize,
    arms: usize,
    wrapped_wqes: usize,
    /// DC: the DCIs (by QPN), the DCTs' access keys (by DCT number), and the sends a DCT
    /// dropped for a wrong DC key.
    dcis: std::collections::HashSet<u32>,
    dct_keys: HashMap<u32, u64>,
    dc_key_violations: usize,
    /// DC: the stream id of each executed DCI WQE (control segment bytes 9..11), in order.
    dci_streams: Vec<u16>,
    /// XRC: the QPNs of XRC initiators (their WQEs carry the XRC segment), and the XRC SRQs
    /// that exist at the target: srqn → (CQN, the CQE's srqn/user-index field).
    xrc_ini: std::collections::HashSet<u32>,
    xrc_srqs: HashMap<u32, (u32, u32)>,
    /// XRC sends NAKed because they named no XRC SRQ.
    xrc_bad_srqn: usize,
}

impl Hca {
    fn on_event(&mut self, e: &UarEvent, half: usize) {
        if let Some((qpn, stores)) = self.uar_event(e, half) {
            self.doorbell(qpn, &stores, |h, ci| h.execute(qpn, ci));
        }
    }

    /// Collect one `mmio_wc_start .. mmio_flush_writes` bracket of UAR stores. A CQ arm
    /// (offset 0x20) is counted; an SQ doorbell returns its QP and stores.
    fn uar_event(&mut self, e: &UarEvent, half: usize) -> Option<(u32, Stores)> {
        match e {
            UarEvent::WcStart => self.pending.clear(),
            UarEvent::Store { offset, bytes } => self.pending.push((*offset, *bytes)),
            UarEvent::Flush => {
                let stores = std::mem::take(&mut self.pending);
                let first = stores[0].0;
                if first == 0x20 {
                    self.arms += 1;
                    return None;
                }
                let qpn = self
                    .qps
                    .values()
                    .find(|q| first == q.bf || first == q.bf + half)
                    .expect("doorbell to a known bfreg")
                    .qpn;
                return Some((qpn, stores));
            }
        }
        None
    }

    /// An SQ doorbell: run every WQE up to the doorbell record's counter through `exec`
    /// (which returns the WQE's size in basic blocks), then check the doorbell or BlueFlame
    /// stores against the last WQE. Returns that WQE's index and whether it came by BlueFlame.
    fn doorbell(
        &mut self,
        qpn: u32,
        stores: &[(usize, [u8; 8])],
        mut exec: impl FnMut(&mut Hca, u32) -> u32,
    ) -> (u32, bool) {
        let q = self.qps[&qpn];
        let pi = be32(&rd(q.db, 8), 4); // the SQ counter in the doorbell record
                                        // The doorbell names the last WQE posted: its first 8 control bytes.
        let mut last_start = None;
        let mut ci = q.sq_ci;
        while (ci & 0xffff) != pi {
            let n = exec(self, ci);
            last_start = Some(ci);
            ci = ci.wrapping_add(n);
        }
        let start = last_start.expect("doorbell without new WQEs");
        assert_eq!(
            &stores[0].1[..],
            &rd(q.sq_slot(start), 8)[..],
            "doorbell value = first 8 bytes of the last WQE's ctrl"
        );
        let blueflame = stores.len() > 1;
        if blueflame {
            self.blueflames += 1;
            // BlueFlame: whole 64-byte blocks of that WQE, wrapping at the SQ end.
            assert_eq!(stores.len() % 8, 0);
            for (k, (off, bytes)) in stores.iter().enumerate() {
                assert_eq!(*off, stores[0].0 + 8 * k, "ascending 8-byte stores");
                let blk = q.sq_slot(start.wrapping_add(k as u32 / 8));
                assert_eq!(
                    &bytes[..],
                    &rd(blk + (k as u64 % 8) * 8, 8)[..],
                    "BlueFlame bytes = SQ bytes"
                );
            }
        } else {
            self.doorbells += 1;
        }
        self.qps.get_mut(&qpn).unwrap().sq_ci = ci;
        (start, blueflame)
    }

    /// Complete the WQE at `idx` of `q` with a requester CQE (send opcode `op`), or a
    /// requester error CQE with syndrome `synd` (vendor syndrome 0x88).
    fn req_cqe(&mut self, q: &MQp, idx: u32, op: u8, byte_cnt: u32, synd: Option<u8>) {
        let mut c = [0u8; 64];
        c[32..36].copy_from_slice(&q.uidx.to_be_bytes());
        c[44..48].copy_from_slice(&byte_cnt.to_be_bytes());
        c[56..60].copy_from_slice(&(((op as u32) << 24) | q.qpn).to_be_bytes());
        c[60..62].copy_from_slice(&(idx as u16).to_be_bytes());
        let opcode = match synd {
            Some(s) => {
                c[55] = s;
                c[54] = 0x88;
                13
            }
            None => 0,
        };
        self.push_cqe(q.cqn, c, opcode);
    }

    /// Execute the WQE at basic block `idx`; returns its size in basic blocks.
    fn execute(&mut self, qpn: u32, idx: u32) -> u32 {
        let q = self.qps[&qpn];
        let ctrl = rd(q.sq_slot(idx), 16);
        let opmod_idx_op = be32(&ctrl, 0);
        assert_eq!(
            (opmod_idx_op >> 8) & 0xffff,
            idx & 0xffff,
            "wqe index in ctrl"
        );
        let op = (opmod_idx_op & 0xff) as u8;
        let qpn_ds = be32(&ctrl, 4);
        assert_eq!(qpn_ds >> 8, qpn);
        let fm_ce_se = ctrl[11];
        let imm = [ctrl[12], ctrl[13], ctrl[14], ctrl[15]];
        let (w, nbb, wrapped) = q.wqe(idx);
        if wrapped {
            self.wrapped_wqes += 1;
        }
        let mut pos = 16;
        let mut peer = q.peer;
        let mut ud_qkey = None;
        if q.ud {
            // Datagram segment: the 48-byte address vector with the Q_Key in bytes 0..4 and
            // the destination QPN (extended-AV bit set) in bytes 8..12.
            assert!(matches!(op, 0x0a | 0x0b), "model: UD allows SEND only, got {op:#x}");
            let av = &w[pos..pos + 48];
            let dqpn = be32(av, 8);
            assert_ne!(dqpn & 0x8000_0000, 0, "extended AV bit in the datagram segment");
            assert_eq!(&av[32..48], &PORT_GID[..], "AV names the port GID");
            assert_eq!(av[27], 64, "AV hop limit");
            assert_eq!(av[14] & 0xc0, 0xc0, "RoCE v2: AV carries a UDP source port (0xc000..)");
            peer = dqpn & 0xff_ffff;
            ud_qkey = Some(be32(av, 0));
            pos += 48;
        }
        let mut dc_key_violation = false;
        if self.dcis.contains(&qpn) {
            // DC datagram segment: the AV with the 64-bit DC key in bytes 0..8 and the target
            // DCT number (extended-AV bit set) in bytes 8..12; any RC opcode follows.
            let av = &w[pos..pos + 48];
            let dqp = be32(av, 8);
            assert_ne!(dqp & 0x8000_0000, 0, "extended AV bit in the DC datagram segment");
            assert_eq!(&av[32..48], &PORT_GID[..], "AV names the port GID");
            peer = dqp & 0xff_ffff;
            let key = *self.dct_keys.get(&peer).unwrap_or_else(|| panic!("model: DC send to unknown DCT {peer:#x}"));
            self.dci_streams.push(u16::from_be_bytes([ctrl[9], ctrl[10]]));
            dc_key_violation = be64(av, 0) != key;
            pos += 48;
        }
        // XRC initiator: the XRC segment (target SRQ number, 12 reserved bytes) comes first.
        let mut xrc_srqn = None;
        if self.xrc_ini.contains(&qpn) {
            assert!(w[pos + 4..pos + 16].iter().all(|&b| b == 0), "XRC segment reserved bytes");
            xrc_srqn = Some(be32(&w, pos) & 0xff_ffff);
            pos += 16;
        }
        let (mut raddr, mut rkey) = (0, 0);
        if matches!(op, 0x08 | 0x09 | 0x10 | 0x11 | 0x12) {
            raddr = be64(&w, pos);
            rkey = be32(&w, pos + 8);
            pos += 16;
        }
        let (mut swap_add, mut compare) = (0, 0);
        if matches!(op, 0x11 | 0x12) {
            swap_add = be64(&w, pos);
            compare = be64(&w, pos + 8);
            pos += 16;
        }
        // Local gather/scatter list, or inline payload.
        let mut local: Vec<(u64, usize)> = Vec::new();
        let mut inline: Option<Vec<u8>> = None;
        if pos < w.len() && be32(&w, pos) & 0x8000_0000 != 0 {
            let n = (be32(&w, pos) & 0x7fff_ffff) as usize;
            inline = Some(w[pos + 4..pos + 4 + n].to_vec());
        } else {
            while pos < w.len() {
                local.push((be64(&w, pos + 8), be32(&w, pos) as usize));
                pos += 16;
            }
        }
        let gather = || -> Vec<u8> {
            match &inline {
                Some(d) => d.clone(),
                None => local.iter().flat_map(|&(a, n)| rd(a, n)).collect(),
            }
        };
        let mut status_synd = None;
        if matches!(op, 0x08 | 0x09 | 0x10 | 0x11 | 0x12) && rkey != RKEY {
            status_synd = Some(0x13u8); // remote access error
        }
        if dc_key_violation {
            // The DCT drops a request with the wrong DC access key silently (like a Q_Key
            // violation on UD): nothing reaches the target, the DCI hears nothing back and
            // exhausts its retries: "transport retry counter exceeded".
            self.dc_key_violations += 1;
            status_synd = Some(0x15u8);
        }
        if xrc_srqn.is_some_and(|n| !self.xrc_srqs.contains_key(&n)) {
            // The target NAKs a request naming no XRC SRQ of its domain: remote invalid request.
            status_synd = Some(0x12u8);
            self.xrc_bad_srqn += 1;
        }
        let mut byte_cnt = 0u32;
        if status_synd.is_none() {
            match op {
                0x08 | 0x09 => {
                    let d = gather();
                    wr(raddr, &d);
                    if op == 0x09 {
                        match xrc_srqn {
                            Some(n) => self.receive_xrc(n, None, Some(imm), d.len() as u32, 1, qpn),
                            None => self.receive(peer, None, Some(imm), d.len() as u32, 1, qpn, None),
                        }
                    }
                }
                0x0a | 0x0b if xrc_srqn.is_some() => {
                    let d = gather();
                    let opcode = if op == 0x0b { 3 } else { 2 };
                    let n = xrc_srqn.unwrap_or_default();
                    self.receive_xrc(n, Some(&d), (op == 0x0b).then_some(imm), d.len() as u32, opcode, qpn);
                }
                0x0a | 0x0b => {
                    let d = gather();
                    self.receive(
                        peer,
                        Some(&d),
                        (op == 0x0b).then_some(imm),
                        d.len() as u32,
                        if op == 0x0b { 3 } else { 2 },
                        qpn,
                        ud_qkey,
                    );
                }
                0x10 => {
                    let total: usize = local.iter().map(|l| l.1).sum();
                    let d = rd(raddr, total);
                    let mut o = 0;
                    for &(a, n) in &local {
                        wr(a, &d[o..o + n]);
                        o += n;
                    }
                    byte_cnt = total as u32;
                }
                0x11 | 0x12 => {
                    assert_eq!(local.len(), 1);
                    assert_eq!(local[0].1, 8, "atomic data segment carries 8 bytes");
                    let old = u64::from_ne_bytes(rd(raddr, 8).try_into().unwrap());
                    let new = if op == 0x11 {
                        if old == compare {
                            swap_add
                        } else {
                            old
                        }
                    } else {
                        old.wrapping_add(swap_add)
                    };
                    wr(raddr, &new.to_ne_bytes());
                    wr(local[0].0, &old.to_ne_bytes());
                    byte_cnt = 8;
                }
                o => panic!("model: unexpected opcode {o:#x}"),
            }
        }
        if fm_ce_se & 0x08 != 0 || status_synd.is_some() {
            self.req_cqe(&q, idx, op, byte_cnt, status_synd);
        }
        nbb
    }

    /// Consume the peer's next receive (its RQ, or its SRQ): scatter `data` (if any; on UD after
    /// a GRH) and complete it. `ud_qkey`: the datagram's Q_Key (UD only).
    #[allow(clippy::too_many_arguments)]
    fn receive(
        &mut self,
        qpn: u32,
        data: Option<&[u8]>,
        imm: Option<[u8; 4]>,
        len: u32,
        opcode: u8,
        src: u32,
        ud_qkey: Option<u32>,
    ) {
        let q = self.qps[&qpn];
        assert_eq!(q.ud, ud_qkey.is_some(), "model: transport mismatch with QP {qpn:#x}");
        if ud_qkey.is_some_and(|k| k != q.qkey) {
            self.ud_dropped += 1; // Q_Key violation: the datagram is silently dropped
            return;
        }
        // Which receive WQE: (scatter list bytes, wqe_counter for the CQE).
        let (wqe, counter) = match q.srq {
            Some(srqn) => {
                let sq = self.srqs[&srqn];
                let posted = be32(&rd(sq.db, 4), 0);
                if posted & 0xffff == sq.consumed & 0xffff {
                    assert!(q.ud, "model: RNR (SRQ {srqn:#x} empty)");
                    self.ud_dropped += 1;
                    return;
                }
                let whole = self.srq_take(srqn);
                (whole[16..].to_vec(), sq.head)
            }
            None => {
                let posted = be32(&rd(q.db, 4), 0);
                if posted & 0xffff == q.rq_ci & 0xffff {
                    assert!(q.ud, "model: RNR (no receive posted on QP {qpn:#x})");
                    self.ud_dropped += 1;
                    return;
                }
                let slot = q.buf + (((q.rq_ci & (q.rq_cnt - 1)) as u64) << q.rq_shift);
                let c = q.rq_ci;
                self.qps.get_mut(&qpn).unwrap().rq_ci += 1;
                (rd(slot, 1 << q.rq_shift), c)
            }
        };
        let mut len = len;
        let mut payload: Option<Vec<u8>> = data.map(|d| d.to_vec());
        if q.ud {
            // UD receives start with the 40-byte GRH (model: IPv6 header, next header 0x1b).
            let mut grh = [0u8; GRH_LEN];
            grh[0] = 0x60;
            grh[4..6].copy_from_slice(&(len as u16 + 8).to_be_bytes());
            grh[6] = 0x1b;
            grh[7] = 64;
            grh[8..24].copy_from_slice(&PORT_GID);
            grh[24..40].copy_from_slice(&PORT_GID);
            let mut v = grh.to_vec();
            v.extend_from_slice(data.unwrap_or(&[]));
            payload = Some(v);
            len += GRH_LEN as u32;
        }
        if let Some(d) = payload.as_deref() {
            scatter(&wqe, d, "receive");
        }
        // flags_rqpn: bits 28..29 = L3 header type (non-zero: a GRH was received), source QPN.
        let grh_bits: u32 = if q.ud { 2 << 28 } else { 0 };
        let c = recv_cqe(grh_bits | src, q.uidx, imm, len, qpn, counter);
        self.push_cqe(q.cqn, c, opcode);
    }

    /// Take SRQ `srqn`'s next entry (its whole WQE) off the list: the head follows its
    /// next-WQE index.
    fn srq_take(&mut self, srqn: u32) -> Vec<u8> {
        let sq = self.srqs[&srqn];
        let at = sq.buf + ((sq.head as u64) << sq.shift);
        let whole = rd(at, 1 << sq.shift);
        let next = u16::from_be_bytes([whole[2], whole[3]]) as u32 & (sq.cnt - 1);
        let m = self.srqs.get_mut(&srqn).unwrap();
        m.head = next;
        m.consumed += 1;
        whole
    }

    /// An XRC receive: the next entry of XRC SRQ `srqn` takes the message; the CQE goes to the
    /// SRQ's CQ and names the SRQ (its user index, or its number under CQE version 0) and the
    /// target QP (`XRC_TGT_QPN`, which has no user-space state).
    fn receive_xrc(&mut self, srqn: u32, data: Option<&[u8]>, imm: Option<[u8; 4]>, len: u32, opcode: u8, src: u32) {
        let (cqn, srqn_uidx) = self.xrc_srqs[&srqn];
        let sq = self.srqs[&srqn];
        let posted = be32(&rd(sq.db, 4), 0);
        assert_ne!(posted & 0xffff, sq.consumed & 0xffff, "model: RNR (XRC SRQ {srqn:#x} empty)");
        let whole = self.srq_take(srqn);
        if let Some(d) = data {
            scatter(&whole[16..], d, "XRC receive");
        }
        let c = recv_cqe(src, srqn_uidx, imm, len, XRC_TGT_QPN, sq.head);
        self.push_cqe(cqn, c, opcode);
    }

    fn push_cqe(&mut self, cqn: u32, mut c: [u8; 64], opcode: u8) {
        let cq = self.cqs.get_mut(&cqn).unwrap();
        let ci = be32(&rd(cq.db, 4), 0);
        assert!(
            cq.pi.wrapping_sub(ci) & 0xff_ffff < cq.ncqe,
            "model: CQ {cqn:#x} overrun (software did not advance set_ci)"
        );
        let owner = u8::from(cq.pi & cq.ncqe != 0);
        let addr = cq.buf + ((cq.pi & (cq.ncqe - 1)) as u64) * 64;
        c[63] = (opcode << 4) | owner;
        wr(addr, &c[..63]); // body first, op_own last, as the device does
        wr(addr + 63, &c[63..]);
        cq.pi += 1;
    }
}

/// Scatter `d` over a receive WQE's data segments (`segs`, 16 bytes each), up to the first
/// invalid-lkey (0x100) terminator; `what` names the receive when `d` does not fit.
fn scatter(segs: &[u8], d: &[u8], what: &str) {
    let mut o = 0;
    for s in segs.chunks_exact(16) {
        let (n, lkey, addr) = (be32(s, 0) as usize, be32(s, 4), be64(s, 8));
        if lkey == 0x100 || o == d.len() {
            break;
        }
        let k = n.min(d.len() - o);
        wr(addr, &d[o..o + k]);
        o += k;
    }
    assert_eq!(o, d.len(), "model: {what} buffer too small");
}

/// A responder CQE's body: flags_rqpn, the user index (or SRQ number), immediate, byte count,
/// QP number and WQE counter (the owner byte is `push_cqe`'s).
fn recv_cqe(flags_rqpn: u32, uidx: u32, imm: Option<[u8; 4]>, len: u32, qpn: u32, counter: u32) -> [u8; 64] {
    let mut c = [0u8; 64];
    c[24..28].copy_from_slice(&flags_rqpn.to_be_bytes());
    c[32..36].copy_from_slice(&uidx.to_be_bytes());
    if let Some(i) = imm {
        c[36..40].copy_from_slice(&i);
    }
    c[44..48].copy_from_slice(&len.to_be_bytes());
    c[56..60].copy_from_slice(&qpn.to_be_bytes());
    c[60..62].copy_from_slice(&(counter as u16).to_be_bytes());
    c
}

struct Pair {
    ctx: Mlx5<RecordingUar>,
    hca: Arc<Mutex<Hca>>,
    cq: [Mlx5Cq; 2],
    qp: [Mlx5Qp; 2],
    /// Side 1's SRQ, when the pair was created with one.
    srq: Option<Mlx5Srq>,
}

const QKEY: u32 = 0x1234_5678; // byte-asymmetric: an endianness slip cannot match

fn create_pair(caps: QpCaps, cq_entries: u32, blueflame: bool) -> Pair {
    create_pair_ex(QpType::Rc, caps, cq_entries, blueflame, None)
}

/// A QP pair on one CQ each. `srq_on_side1`: (max_wr, max_sge) of an SRQ that QP 1 receives
/// from (QP 0 keeps its own RQ).
fn create_pair_ex(
    qp_type: QpType,
    caps: QpCaps,
    cq_entries: u32,
    blueflame: bool,
    srq_on_side1: Option<(u32, u32)>,
) -> Pair {
    create_pair_sig(qp_type, caps, cq_entries, blueflame, srq_on_side1, false)
}

/// As [`create_pair_ex`]; `sq_sig_all`: both QPs signal every send request.
fn create_pair_sig(
    qp_type: QpType,
    caps: QpCaps,
    cq_entries: u32,
    blueflame: bool,
    srq_on_side1: Option<(u32, u32)>,
    sq_sig_all: bool,
) -> Pair {
    let ctx = context(blueflame);
    let hca = Arc::new(Mutex::new(Hca::default()));
    let half = ctx.plan.toggle();
    {
        let h = hca.clone();
        ctx.uar()
            .set_hook(move |e| h.lock().unwrap().on_event(e, half));
    }
    let mut cqs = Vec::new();
    for i in 0..2u32 {
        let (prep, cqe, ud) = ctx.prepare_cq(cq_entries).unwrap();
        let (buf, db) = (
            u64::from_ne_bytes(ud.req[abi::cq_req::BUF_ADDR..][..8].try_into().unwrap()),
            u64::from_ne_bytes(ud.req[abi::cq_req::DB_ADDR..][..8].try_into().unwrap()),
        );
        let cqn = 0x400 + i;
        hca.lock().unwrap().cqs.insert(
            cqn,
            MCq {
                buf,
                db,
                ncqe: cqe + 1,
                pi: 0,
            },
        );
        cqs.push(
            ctx.finish_cq(prep, &CqCreated { handle: i, cqe }, &cqn.to_ne_bytes())
                .unwrap(),
        );
    }
    let srq = srq_on_side1.map(|(max_wr, max_sge)| {
        let (prep, ud) = ctx.prepare_srq(max_wr, max_sge).unwrap();
        let r = &ud.req;
        let g64 = |o: usize| u64::from_ne_bytes(r[o..o + 8].try_into().unwrap());
        let (buf, db) = (g64(abi::srq_req::BUF_ADDR), g64(abi::srq_req::DB_ADDR));
        let srqn = 0x77;
        let srq = ctx
            .finish_srq(
                prep,
                &SrqCreated { handle: 30, max_wr, max_sge, srqn },
                &srqn.to_ne_bytes(),
            )
            .unwrap();
        // The kernel's SRQ geometry (mlx5_ib create_srq): entries = (max_wr + 1) rounded up to a
        // power of two; stride = next segment + max_sge data segments, a power of two >= 32.
        let cnt = (max_wr + 1).next_power_of_two();
        let stride = (16 + 16 * max_sge).next_power_of_two().max(32) as usize;
        assert_eq!(rd(buf + 2, 2), [0, 1], "entry 0 links to entry 1");
        assert_eq!(
            rd(buf + ((cnt as u64 - 1) * stride as u64) + 2, 2),
            [0, 0],
            "the last entry links back to entry 0"
        );
        hca.lock().unwrap().srqs.insert(
            srqn,
            MSrq { buf, db, shift: stride.trailing_zeros(), cnt, head: 0, consumed: 0 },
        );
        srq
    });
    let mut qps = Vec::new();
    for i in 0..2u32 {
        let attr = QpInitAttr {
            qp_type,
            caps,
            sq_sig_all,
            uses_srq: i == 1 && srq.is_some(),
        };
        let (prep, ud) = ctx.prepare_qp(&attr).unwrap();
        let r = &ud.req;
        let g32 = |o: usize| u32::from_ne_bytes(r[o..o + 4].try_into().unwrap());
        let (rq_cnt, rq_shift) = (
            g32(abi::qp_req::RQ_WQE_COUNT),
            g32(abi::qp_req::RQ_WQE_SHIFT),
        );
        let qpn = 0x100 + i;
        let bfreg = 24 + i; // UAR page 6, bfregs 0 and 1
        let bf = ctx.plan.bfreg_offset(bfreg).unwrap();
        hca.lock().unwrap().qps.insert(
            qpn,
            MQp {
                sq_off: (rq_cnt as u64) << rq_shift,
                rq_cnt,
                rq_shift,
                peer: 0x100 + (1 - i),
                ud: qp_type == QpType::Ud,
                qkey: QKEY,
                srq: (i == 1 && srq.is_some()).then_some(0x77),
                ..MQp::from_req(r, qpn, 0x400 + i, bf)
            },
        );
        let core = QpCreated {
            handle: 10 + i,
            qpn,
            caps,
        };
        qps.push(
            ctx.finish_qp(prep, &attr, &core, &bfreg.to_ne_bytes())
                .unwrap(),
        );
    }
    let cq: [Mlx5Cq; 2] = cqs.try_into().ok().unwrap();
    let qp: [Mlx5Qp; 2] = qps.try_into().ok().unwrap();
    if let Some(s) = &srq {
        ctx.bind_srq(&qp[1], s);
    }
    Pair { ctx, hca, cq, qp, srq }
}

fn poll_all(p: &mut Pair, side: usize, want: usize) -> Vec<WorkCompletion> {
    let mut got = Vec::new();
    let mut out = [WorkCompletion::default(); 3];
    for _ in 0..100 {
        let n = p.ctx.poll_cq(&mut p.cq[side], &mut out).unwrap();
        got.extend_from_slice(&out[..n]);
        if n == 0 {
            break;
        }
    }
    assert_eq!(got.len(), want, "completions on side {side}: {got:?}");
    got
}

struct Bufs {
    mem: Vec<Vec<u8>>,
}
impl Bufs {
    fn addr(&self, i: usize) -> u64 {
        self.mem[i].as_ptr() as u64
    }
}

#[test]
fn model_end_to_end_both_directions_with_wraparound() {
    for blueflame in [true, false] {
        let caps = QpCaps {
            max_send_wr: 4,
            max_recv_wr: 4,
            max_send_sge: 2,
            max_recv_sge: 2,
            max_inline_data: 64,
        };
        let mut p = create_pair(caps, 7, blueflame);
        assert_eq!(p.cq[0].ncqe(), 8);
        let sq_cnt = p.qp[0].geo.sq_wqe_cnt;
        // Per side: [0] source, [1] remote target, [2] receive buffer, [3] read-back / atomic result.
        let mut bufs = Bufs {
            mem: (0..8).map(|_| vec![0u8; 256]).collect(),
        };
        let mut seen_ops = std::collections::HashSet::new();
        for iter in 0..300u64 {
            let s = (iter % 2) as usize; // alternate which QP of the pair sends
            let d = 1 - s;
            let (src, dst, rbuf, res) = (4 * s, 4 * d + 1, 4 * d + 2, 4 * s + 3);
            for (k, b) in bufs.mem[src].iter_mut().enumerate() {
                *b = (iter as u8).wrapping_mul(31).wrapping_add(k as u8);
            }
            let kind = iter % 9;
            let len = 1 + (iter as u32 * 7) % 60;
            let sg = [Sge {
                addr: bufs.addr(src),
                length: len,
                lkey: 1,
            }];
            let sg2 = [
                Sge {
                    addr: bufs.addr(src),
                    length: 20,
                    lkey: 1,
                },
                Sge {
                    addr: bufs.addr(src) + 100,
                    length: 30,
                    lkey: 1,
                },
            ];
            let res_sg = [Sge {
                addr: bufs.addr(res),
                length: 64,
                lkey: 1,
            }];
            let at_sg = [Sge {
                addr: bufs.addr(res),
                length: 8,
                lkey: 1,
            }];
            let recv_sg = [
                Sge {
                    addr: bufs.addr(rbuf),
                    length: 100,
                    lkey: 2,
                },
                Sge {
                    addr: bufs.addr(rbuf) + 128,
                    length: 100,
                    lkey: 2,
                },
            ];
            let needs_recv = matches!(kind, 1 | 2 | 3 | 4 | 8);
            if needs_recv {
                // SAFETY: the SGEs point into the model's registered buffers, alive for the whole
                // test.
                unsafe { p.ctx
                    .post_recv(
                        &mut p.qp[d],
                        &[RecvWr {
                            wr_id: 0x9000 + iter,
                            sgl: &recv_sg,
                        }],
                    ) }
                    .unwrap();
            }
            let remote = uverbs::wr::RemoteAddr {
                addr: bufs.addr(dst),
                rkey: RKEY,
            };
            let mut w = match kind {
                0 => SendWr::new(iter, WrOpcode::RdmaWrite, &sg),
                1 => SendWr::new(iter, WrOpcode::RdmaWriteWithImm, &sg),
                2 => SendWr::new(iter, WrOpcode::Send, &sg),
                3 => SendWr::new(iter, WrOpcode::SendWithImm, &sg2),
                4 => {
                    let mut w = SendWr::new(iter, WrOpcode::Send, &sg);
                    w.flags = SendFlags::INLINE;
                    w
                }
                5 => SendWr::new(iter, WrOpcode::RdmaRead, &res_sg),
                6 => SendWr::new(iter, WrOpcode::AtomicCmpAndSwp, &at_sg),
                7 => SendWr::new(iter, WrOpcode::AtomicFetchAndAdd, &at_sg),
                _ => {
                    let mut w = SendWr::new(iter, WrOpcode::SendWithImm, &sg);
                    w.flags = SendFlags::INLINE | SendFlags::SOLICITED | SendFlags::FENCE;
                    w
                }
            };
            w.remote = remote;
            w.imm_data = (iter as u32).to_be();
            w.flags = w.flags | SendFlags::SIGNALED;
            let before_atomic = u64::from_ne_bytes(bufs.mem[dst][..8].try_into().unwrap());
            w.compare_add = if kind == 6 { before_atomic } else { 5 };
            w.swap = 0x1234_5678_0000 + iter;
            // Every third round: an unsignaled RDMA WRITE first, in the same post list (one
            // doorbell; retired silently by the signaled WQE's completion).
            let pre_sg = [Sge {
                addr: bufs.addr(src),
                length: 8,
                lkey: 1,
            }];
            let mut pre = SendWr::new(0xdead, WrOpcode::RdmaWrite, &pre_sg);
            pre.remote = uverbs::wr::RemoteAddr {
                addr: bufs.addr(dst) + 200,
                rkey: RKEY,
            };
            let list: Vec<SendWr> = if iter % 3 == 0 { vec![pre, w] } else { vec![w] };
            // SAFETY: the SGEs point into the model's registered buffers, alive for the whole test.
            unsafe { p.ctx.post_send(&mut p.qp[s], &list) }.unwrap();
            seen_ops.insert(kind);

            let wcs = poll_all(&mut p, s, 1);
            let wc = wcs[0];
            assert_eq!(
                (wc.wr_id, wc.status, wc.qp_num),
                (iter, WcStatus::Success, 0x100 + s as u32),
                "requester {iter}"
            );
            let want_op = WcOpcode::for_send(w.opcode);
            assert_eq!(wc.opcode, want_op);
            let src_bytes = bufs.mem[src][..len as usize].to_vec();
            match kind {
                0 | 1 => assert_eq!(&bufs.mem[dst][..len as usize], &src_bytes[..]),
                5 => {
                    assert_eq!(wc.byte_len, 64);
                    assert_eq!(bufs.mem[res][..64], bufs.mem[dst][..64]);
                }
                6 => {
                    assert_eq!(wc.byte_len, 8);
                    assert_eq!(
                        u64::from_ne_bytes(bufs.mem[res][..8].try_into().unwrap()),
                        before_atomic
                    );
                    assert_eq!(
                        u64::from_ne_bytes(bufs.mem[dst][..8].try_into().unwrap()),
                        0x1234_5678_0000 + iter
                    );
                }
                7 => {
                    assert_eq!(
                        u64::from_ne_bytes(bufs.mem[res][..8].try_into().unwrap()),
                        before_atomic
                    );
                    assert_eq!(
                        u64::from_ne_bytes(bufs.mem[dst][..8].try_into().unwrap()),
                        before_atomic.wrapping_add(5)
                    );
                }
                _ => {}
            }
            if needs_recv {
                let r = poll_all(&mut p, d, 1)[0];
                assert_eq!(
                    (r.wr_id, r.status, r.qp_num, r.src_qp),
                    (
                        0x9000 + iter,
                        WcStatus::Success,
                        0x100 + d as u32,
                        0x100 + s as u32
                    )
                );
                let with_imm = matches!(kind, 1 | 3 | 8);
                assert_eq!(r.wc_flags & uverbs::wr::wc_flags::WITH_IMM != 0, with_imm);
                if with_imm {
                    assert_eq!(r.imm_data, (iter as u32).to_be());
                }
                if kind == 1 {
                    assert_eq!(r.opcode, WcOpcode::RecvRdmaWithImm);
                } else {
                    assert_eq!(r.opcode, WcOpcode::Recv);
                    let got: Vec<u8> = if kind == 3 {
                        [&bufs.mem[rbuf][..50]].concat()
                    } else {
                        bufs.mem[rbuf][..len as usize].to_vec()
                    };
                    let want: Vec<u8> = if kind == 3 {
                        [&bufs.mem[src][..20], &bufs.mem[src][100..130]].concat()
                    } else {
                        src_bytes.clone()
                    };
                    assert_eq!(got, want, "received payload {iter}");
                    assert_eq!(r.byte_len, want.len() as u32);
                }
            } else {
                poll_all(&mut p, d, 0);
            }
        }
        assert_eq!(seen_ops.len(), 9);
        // Force a WQE across the SQ end: one-block writes up to the last slot, then a two-block
        // inline send (its payload continues at the SQ start; BlueFlame copies wrap too).
        let mask = sq_cnt - 1;
        let sg = [Sge {
            addr: bufs.addr(0),
            length: 8,
            lkey: 1,
        }];
        while p.qp[0].sq_cur_post() & mask != mask {
            let mut w = SendWr::new(1, WrOpcode::RdmaWrite, &sg);
            w.remote = uverbs::wr::RemoteAddr {
                addr: bufs.addr(5),
                rkey: RKEY,
            };
            w.flags = SendFlags::SIGNALED;
            // SAFETY: the SGEs point into the model's registered buffers, alive for the whole test.
            unsafe { p.ctx.post_send(&mut p.qp[0], &[w]) }.unwrap();
            poll_all(&mut p, 0, 1);
        }
        let payload: Vec<u8> = (0..60u8).map(|x| x ^ 0x5a).collect();
        let recv_sg = [Sge {
            addr: bufs.addr(6),
            length: 100,
            lkey: 2,
        }];
        // SAFETY: the SGEs point into the model's registered buffers, alive for the whole test.
        unsafe { p.ctx
            .post_recv(
                &mut p.qp[1],
                &[RecvWr {
                    wr_id: 4242,
                    sgl: &recv_sg,
                }],
            ) }
            .unwrap();
        let sg = [Sge {
            addr: payload.as_ptr() as u64,
            length: 60,
            lkey: 1,
        }];
        let mut w = SendWr::new(4243, WrOpcode::Send, &sg);
        w.flags = SendFlags::SIGNALED | SendFlags::INLINE;
        // SAFETY: the SGEs point into the model's registered buffers, alive for the whole test.
        unsafe { p.ctx.post_send(&mut p.qp[0], &[w]) }.unwrap();
        assert_eq!(poll_all(&mut p, 0, 1)[0].wr_id, 4243);
        let r = poll_all(&mut p, 1, 1)[0];
        assert_eq!((r.wr_id, r.byte_len), (4242, 60));
        assert_eq!(&bufs.mem[6][..60], &payload[..]);
        let h = p.hca.lock().unwrap();
        // 300 rounds on 8-entry CQs and a small SQ: both rings lapped many times.
        assert!(p.cq[0].consumer_index() > 8 * 10 && p.cq[1].consumer_index() > 8 * 10);
        assert!(p.qp[0].sq_cur_post() > 4 * sq_cnt && p.qp[1].sq_cur_post() > 4 * sq_cnt);
        assert!(h.wrapped_wqes > 0, "some WQE straddled the SQ end");
        if blueflame {
            assert!(
                h.blueflames > 0 && h.doorbells > 0,
                "both BlueFlame (single WR) and plain doorbells (lists)"
            );
        } else {
            assert_eq!(h.blueflames, 0);
        }
    }
}

#[test]
fn model_error_completion_and_flow_control() {
    let caps = QpCaps {
        max_send_wr: 2,
        max_recv_wr: 2,
        max_send_sge: 1,
        max_recv_sge: 1,
        max_inline_data: 0,
    };
    let mut p = create_pair(caps, 3, true);
    let buf = [0u8; 64];
    let sg = [Sge {
        addr: buf.as_ptr() as u64,
        length: 8,
        lkey: 1,
    }];
    // Bad rkey: the model answers with a requester error CQE (remote access).
    let mut w = SendWr::new(77, WrOpcode::RdmaWrite, &sg);
    w.remote = uverbs::wr::RemoteAddr {
        addr: buf.as_ptr() as u64 + 32,
        rkey: 0xbad,
    };
    // SAFETY: the SGEs point into the model's registered buffers, alive for the whole test.
    unsafe { p.ctx.post_send(&mut p.qp[0], &[w]) }.unwrap();
    let wc = poll_all(&mut p, 0, 1)[0];
    assert_eq!(
        (wc.wr_id, wc.status, wc.vendor_err),
        (77, WcStatus::RemAccessErr, 0x88)
    );
    // Unsignaled writes are not completed individually: the SQ fills, then refuses cleanly.
    let max = p.qp[0].geo.sq_max_post as usize;
    let mut w = SendWr::new(1, WrOpcode::RdmaWrite, &sg);
    w.remote = uverbs::wr::RemoteAddr {
        addr: buf.as_ptr() as u64 + 32,
        rkey: RKEY,
    };
    let list = vec![w; max + 1];
    // SAFETY: the SGEs point into the model's registered buffers, alive for the whole test.
    let e = unsafe { p.ctx.post_send(&mut p.qp[0], &list) }.unwrap_err();
    assert_eq!(
        e.index, max,
        "max_post WQEs outstanding, the next one is refused"
    );
    // One signaled WQE retires all of them.
    let mut s = w;
    s.wr_id = 2;
    s.flags = SendFlags::SIGNALED;
    // The queue is full now; signal through a fresh QP state: poll nothing, then reset.
    // SAFETY: the SGEs point into the model's registered buffers, alive for the whole test.
    assert!(unsafe { p.ctx.post_send(&mut p.qp[0], &[s]) }.is_err());
    assert_eq!(poll_all(&mut p, 0, 0).len(), 0);
}

/// An address handle naming the model port's GID (RoCE: the kernel answered the peer MAC).
fn port_ah(p: &Pair) -> providers::mlx5::Mlx5Ah {
    let attr = AhAttr {
        dgid: PORT_GID,
        flow_label: 0,
        sgid_index: 1,
        hop_limit: 64,
        traffic_class: 0,
        is_global: true,
        dlid: 0,
        sl: 0,
        port_num: 1,
        static_rate: 0,
    };
    let (prep, _) = p.ctx.prepare_ah(&attr).unwrap();
    let mut resp = [0u8; abi::CREATE_AH_RESP_LEN];
    resp[4..10].copy_from_slice(&[0x02, 0, 0, 0, 0, 0x07]);
    let ah = p.ctx.finish_ah(prep, &attr, &AhCreated { handle: 40 }, &resp).unwrap();
    assert_eq!(&ah.av[20..26], &[0x02, 0, 0, 0, 0, 0x07], "AV carries the resolved MAC");
    ah
}

#[test]
fn model_ud_datagrams_grh_qkey_and_drops() {
    for blueflame in [true, false] {
        let caps = QpCaps {
            max_send_wr: 4,
            max_recv_wr: 4,
            max_send_sge: 1,
            max_recv_sge: 2,
            max_inline_data: 32,
        };
        let mut p = create_pair_ex(QpType::Ud, caps, 7, blueflame, None);
        let ah = port_ah(&p);
        let ah_num = p.ctx.ah_number(&ah);
        let src: Vec<u8> = (0..256u32).map(|x| (x * 7 + 1) as u8).collect();
        let mut rbuf = [vec![0u8; GRH_LEN + 256], vec![0u8; GRH_LEN + 256]];
        for iter in 0..120u64 {
            let s = (iter % 2) as usize;
            let d = 1 - s;
            let len = 1 + (iter as u32 * 13) % 200;
            rbuf[d].iter_mut().for_each(|b| *b = 0xcc);
            let base = rbuf[d].as_ptr() as u64;
            // Every other receive splits the GRH into its own SGE, as some applications do.
            let one = [Sge { addr: base, length: GRH_LEN as u32 + 256, lkey: 2 }];
            let two = [
                Sge { addr: base, length: GRH_LEN as u32, lkey: 2 },
                Sge { addr: base + GRH_LEN as u64, length: 256, lkey: 2 },
            ];
            let sgl: &[Sge] = if iter % 4 < 2 { &one } else { &two };
            // SAFETY: the SGEs point into the model's registered buffers, alive for the whole test.
            unsafe { p.ctx.post_recv(&mut p.qp[d], &[RecvWr { wr_id: 0x7000 + iter, sgl }]) }.unwrap();
            let sg = [Sge { addr: src.as_ptr() as u64 + iter % 7, length: len, lkey: 1 }];
            let op = if iter % 3 == 0 { WrOpcode::SendWithImm } else { WrOpcode::Send };
            let mut w = SendWr::new(iter, op, &sg);
            w.flags = SendFlags::SIGNALED;
            if len <= 24 {
                w.flags = w.flags | SendFlags::INLINE;
            }
            w.imm_data = (iter as u32 ^ 0xabcd).to_be();
            w.ud = Some(UdDest { ah: ah_num, remote_qpn: 0x100 + d as u32, remote_qkey: QKEY });
            // SAFETY: the SGEs point into the model's registered buffers, alive for the whole test.
            unsafe { p.ctx.post_send(&mut p.qp[s], &[w]) }.unwrap();
            let wc = poll_all(&mut p, s, 1)[0];
            assert_eq!((wc.wr_id, wc.status, wc.opcode), (iter, WcStatus::Success, WcOpcode::Send));
            let r = poll_all(&mut p, d, 1)[0];
            assert_eq!(
                (r.wr_id, r.status, r.opcode, r.qp_num, r.src_qp, r.byte_len),
                (0x7000 + iter, WcStatus::Success, WcOpcode::Recv, 0x100 + d as u32, 0x100 + s as u32, len + GRH_LEN as u32),
                "receive {iter}"
            );
            assert_ne!(r.wc_flags & uverbs::wr::wc_flags::GRH, 0, "UD receive reports a GRH");
            assert_eq!(r.wc_flags & uverbs::wr::wc_flags::WITH_IMM != 0, op == WrOpcode::SendWithImm);
            if op == WrOpcode::SendWithImm {
                assert_eq!(r.imm_data, (iter as u32 ^ 0xabcd).to_be());
            }
            assert_eq!(rbuf[d][0] >> 4, 6, "GRH first");
            assert_eq!(&rbuf[d][24..40], &PORT_GID[..]);
            let off = (iter % 7) as usize;
            assert_eq!(&rbuf[d][GRH_LEN..GRH_LEN + len as usize], &src[off..off + len as usize], "payload {iter}");
            assert_eq!(rbuf[d][GRH_LEN + len as usize], 0xcc, "nothing past the payload");
        }
        // A wrong Q_Key: the sender completes, the datagram is dropped, the receive stays posted
        // and takes the next good datagram.
        let rb = [0u8; GRH_LEN + 64];
        let rsg = [Sge { addr: rb.as_ptr() as u64, length: rb.len() as u32, lkey: 2 }];
        // SAFETY: the SGEs point into the model's registered buffers, alive for the whole test.
        unsafe { p.ctx.post_recv(&mut p.qp[1], &[RecvWr { wr_id: 0xbeef, sgl: &rsg }]) }.unwrap();
        let sg = [Sge { addr: src.as_ptr() as u64, length: 16, lkey: 1 }];
        let mut w = SendWr::new(1, WrOpcode::Send, &sg);
        w.flags = SendFlags::SIGNALED;
        w.ud = Some(UdDest { ah: ah_num, remote_qpn: 0x101, remote_qkey: QKEY ^ 1 });
        // SAFETY: the SGEs point into the model's registered buffers, alive for the whole test.
        unsafe { p.ctx.post_send(&mut p.qp[0], &[w]) }.unwrap();
        assert_eq!(poll_all(&mut p, 0, 1)[0].status, WcStatus::Success);
        poll_all(&mut p, 1, 0);
        assert_eq!(p.hca.lock().unwrap().ud_dropped, 1);
        w.ud = Some(UdDest { ah: ah_num, remote_qpn: 0x101, remote_qkey: QKEY });
        w.wr_id = 2;
        // SAFETY: the SGEs point into the model's registered buffers, alive for the whole test.
        unsafe { p.ctx.post_send(&mut p.qp[0], &[w]) }.unwrap();
        poll_all(&mut p, 0, 1);
        let r = poll_all(&mut p, 1, 1)[0];
        assert_eq!((r.wr_id, r.byte_len), (0xbeef, 16 + GRH_LEN as u32));
        // No receive posted: dropped, not an RNR stall.
        w.wr_id = 3;
        // SAFETY: the SGEs point into the model's registered buffers, alive for the whole test.
        unsafe { p.ctx.post_send(&mut p.qp[0], &[w]) }.unwrap();
        assert_eq!(poll_all(&mut p, 0, 1)[0].status, WcStatus::Success);
        poll_all(&mut p, 1, 0);
        assert_eq!(p.hca.lock().unwrap().ud_dropped, 2);
        // An address handle number that does not exist is refused at post time.
        w.ud = Some(UdDest { ah: ah_num + 5, remote_qpn: 0x101, remote_qkey: QKEY });
        // SAFETY: the SGEs point into the model's registered buffers, alive for the whole test.
        let e = unsafe { p.ctx.post_send(&mut p.qp[0], &[w]) }.unwrap_err();
        assert_eq!(e.index, 0);
        assert!(e.error.to_string().contains("address handle"), "{}", e.error);
        drop(ah);
    }
}

#[test]
fn model_srq_receives_in_posting_order_across_reposts() {
    let caps = QpCaps {
        max_send_wr: 4,
        max_recv_wr: 4,
        max_send_sge: 1,
        max_recv_sge: 1,
        max_inline_data: 0,
    };
    let mut p = create_pair_ex(QpType::Rc, caps, 15, true, Some((7, 1)));
    let bufs: Vec<Vec<u8>> = (0..8).map(|_| vec![0u8; 64]).collect();
    let mut srq = p.srq.take().unwrap();
    // Capacity: max_wr entries (one link is kept as the free list's tail).
    let mut posted = std::collections::VecDeque::new();
    let mut next_id = 0x5000u64;
    let mut post = |p: &mut Pair, srq: &mut Mlx5Srq, b: usize, posted: &mut std::collections::VecDeque<(u64, usize)>| {
        let sg = [Sge { addr: bufs[b].as_ptr() as u64, length: 64, lkey: 2 }];
        // SAFETY: the SGEs point into the model's registered buffers, alive for the whole test.
        unsafe { p.ctx.post_srq_recv(srq, &[RecvWr { wr_id: next_id, sgl: &sg }]) }.unwrap();
        posted.push_back((next_id, b));
        next_id += 1;
    };
    for b in 0..7 {
        post(&mut p, &mut srq, b, &mut posted);
    }
    let extra = [Sge { addr: bufs[7].as_ptr() as u64, length: 64, lkey: 2 }];
    // SAFETY: the SGEs point into the model's registered buffers, alive for the whole test.
    let e = unsafe { p.ctx.post_srq_recv(&mut srq, &[RecvWr { wr_id: 1, sgl: &extra }]) }.unwrap_err();
    assert_eq!(e.index, 0, "an 8th receive does not fit a 7-entry SRQ");
    let src: Vec<u8> = (0..64u8).collect();
    let mut done = Vec::new();
    for m in 0..100u64 {
        let len = 1 + (m as u32 * 11) % 60;
        let sg = [Sge { addr: src.as_ptr() as u64, length: len, lkey: 1 }];
        let mut w = SendWr::new(m, WrOpcode::Send, &sg);
        w.flags = SendFlags::SIGNALED;
        // SAFETY: the SGEs point into the model's registered buffers, alive for the whole test.
        unsafe { p.ctx.post_send(&mut p.qp[0], &[w]) }.unwrap();
        assert_eq!(poll_all(&mut p, 0, 1)[0].wr_id, m);
        let r = poll_all(&mut p, 1, 1)[0];
        let (want_id, b) = posted.pop_front().unwrap();
        assert_eq!(
            (r.wr_id, r.status, r.byte_len, r.qp_num, r.src_qp),
            (want_id, WcStatus::Success, len, 0x101, 0x100),
            "message {m}"
        );
        assert_eq!(&bufs[b][..len as usize], &src[..len as usize]);
        done.push(b);
        // Re-post in batches of three, newest first, so the free list is relinked out of order.
        if done.len() == 3 {
            while let Some(b) = done.pop() {
                post(&mut p, &mut srq, b, &mut posted);
            }
        }
    }
    let h = p.hca.lock().unwrap();
    assert_eq!(h.srqs[&0x77].consumed, 100, "every message came from the SRQ");
    assert_eq!(h.ud_dropped, 0);
}

const DC_KEY: u64 = 0x0000_0000_ffee_ddcc; // perftest's DC_KEY

/// A DC set-up in a [`Pair`]: `qp[0]` a DCI on CQ 0x400, `qp[1]` a DCT on CQ 0x401 receiving
/// from the SRQ in `srq` (7 entries, one SGE). `extra_dci_key`: also create a second DCI (QPN
/// 0x102) that presents this key, returned alongside.
fn create_dc_pair(blueflame: bool, extra_dci_key: Option<u64>) -> (Pair, Option<Mlx5Qp>) {
    use uverbs::dv::DcInit;
    // An RC pair gives the context, the model, both CQs and the SRQ; its two RC QPs are
    // dropped and replaced by the DC QPs.
    let caps = QpCaps { max_send_wr: 1, max_recv_wr: 1, max_send_sge: 1, max_recv_sge: 1, max_inline_data: 0 };
    let mut p = create_pair_ex(QpType::Rc, caps, 15, blueflame, Some((7, 1)));
    p.hca.lock().unwrap().qps.clear();
    let dci_caps = QpCaps { max_send_wr: 8, max_recv_wr: 0, max_send_sge: 1, max_recv_sge: 0, max_inline_data: 32 };
    let make = |qp_type: QpType, qpn: u32, key: u64| -> Mlx5Qp {
        let attr = QpInitAttr { qp_type, caps: if qp_type == QpType::Dci { dci_caps } else { QpCaps::default() }, sq_sig_all: false, uses_srq: qp_type == QpType::Dct };
        let (prep, ud) = p.ctx.prepare_dc_qp(&attr, &DcInit { access_key: key, dci_streams: None }).unwrap();
        let r = &ud.req;
        let g32 = |o: usize| u32::from_ne_bytes(r[o..o + 4].try_into().unwrap());
        let g64 = |o: usize| u64::from_ne_bytes(r[o..o + 8].try_into().unwrap());
        let flags = g32(abi::qp_req::FLAGS);
        let (bfreg, bf, cqn) = if qp_type == QpType::Dci {
            assert_eq!(flags, providers::mlx5::dc::QP_FLAG_TYPE_DCI);
            assert_eq!(g32(abi::qp_req::RQ_WQE_COUNT), 0, "a DCI has no receive queue");
            assert_ne!(g64(abi::qp_req::BUF_ADDR), 0);
            let bfreg = [24, 25, 28][(qpn - 0x100) as usize]; // UAR 6 bfregs 0, 1; UAR 7 bfreg 0
            (bfreg, p.ctx.plan.bfreg_offset(bfreg).unwrap(), 0x400)
        } else {
            assert_eq!(flags, providers::mlx5::dc::QP_FLAG_TYPE_DCT);
            assert_eq!(g64(abi::qp_req::SQ_BUF_ADDR), key, "the DCT's access key (union with sq_buf_addr)");
            assert_eq!((g64(abi::qp_req::BUF_ADDR), g64(abi::qp_req::DB_ADDR)), (0, 0), "a DCT has no buffer");
            assert_eq!((g32(abi::qp_req::SQ_WQE_COUNT), g32(abi::qp_req::RQ_WQE_COUNT)), (0, 0));
            (0, usize::MAX / 2, 0x401) // no doorbell register: matches no UAR store
        };
        let mut h = p.hca.lock().unwrap();
        h.qps.insert(qpn, MQp { srq: (qp_type == QpType::Dct).then_some(0x77), ..MQp::from_req(r, qpn, cqn, bf) });
        if qp_type == QpType::Dci {
            h.dcis.insert(qpn);
        } else {
            h.dct_keys.insert(qpn, key);
        }
        drop(h);
        // A DCT has no number until RTR (the hardware object is created then): CREATE_QP
        // answers 0, and the modify to RTR's driver response carries the DCT number.
        let core = QpCreated { handle: qpn, qpn: if qp_type == QpType::Dct { 0 } else { qpn }, caps: attr.caps };
        // The kernel answers a DCT without a bfreg: the provider must not need one.
        let resp = if qp_type == QpType::Dct { [0u8; 4] } else { bfreg.to_ne_bytes() };
        let mut qp = p.ctx.finish_qp(prep, &attr, &core, &resp).unwrap();
        use uverbs::provider::QpState;
        assert!(p.ctx.modify_qp_udata(&qp, Some(QpState::Init)).is_none());
        if qp_type == QpType::Dct {
            let ud = p.ctx.modify_qp_udata(&qp, Some(QpState::Rtr)).expect("EX_MODIFY_QP with driver data at RTR");
            assert_eq!((ud.req.len(), ud.resp_len), (16, 16));
            let mut mresp = [0u8; 16];
            mresp[0..4].copy_from_slice(&8u32.to_ne_bytes());
            mresp[4..8].copy_from_slice(&qpn.to_ne_bytes());
            assert_eq!(p.ctx.modify_qp_done(&mut qp, QpState::Rtr, &mresp).unwrap(), Some(qpn));
        } else {
            assert!(p.ctx.modify_qp_udata(&qp, Some(QpState::Rtr)).is_none(), "a DCI modifies as usual");
        }
        qp
    };
    let dci = make(QpType::Dci, 0x100, DC_KEY);
    let dct = make(QpType::Dct, 0x101, DC_KEY);
    let extra = extra_dci_key.map(|k| make(QpType::Dci, 0x102, k));
    p.qp = [dci, dct];
    let srq = p.srq.as_ref().unwrap();
    p.ctx.bind_srq(&p.qp[1], srq);
    (p, extra)
}

#[test]
fn model_dc_dci_to_dct_send_write_read_atomic_through_the_srq() {
    for blueflame in [true, false] {
        let (mut p, _) = create_dc_pair(blueflame, None);
        let ah = port_ah(&p);
        let ah_num = p.ctx.ah_number(&ah);
        let dest = Some(UdDest { ah: ah_num, remote_qpn: 0x101, remote_qkey: 0 });
        let mut srq = p.srq.take().unwrap();
        let rbufs: Vec<Vec<u8>> = (0..7).map(|_| vec![0u8; 64]).collect();
        let mut target = [0u8; 128]; // the DCT side's registered memory (WRITE/READ/atomics)
        let mut local = [0u8; 128];
        let src: Vec<u8> = (0..128u32).map(|x| (x * 5 + 3) as u8).collect();
        for m in 0..60u64 {
            let b = (m % 7) as usize;
            let len = 1 + (m as u32 * 11) % 60;
            // SEND (with immediate every third) into the DCT's SRQ.
            let rsg = [Sge { addr: rbufs[b].as_ptr() as u64, length: 64, lkey: 2 }];
            // SAFETY: the SGEs point into the model's registered buffers, alive for the whole test.
            unsafe { p.ctx.post_srq_recv(&mut srq, &[RecvWr { wr_id: 0x9000 + m, sgl: &rsg }]) }.unwrap();
            let sg = [Sge { addr: src.as_ptr() as u64 + m % 5, length: len, lkey: 1 }];
            let op = if m % 3 == 0 { WrOpcode::SendWithImm } else { WrOpcode::Send };
            let mut w = SendWr::new(m, op, &sg);
            w.flags = SendFlags::SIGNALED;
            if len <= 24 {
                w.flags = w.flags | SendFlags::INLINE;
            }
            w.imm_data = (m as u32 ^ 0x5a5a).to_be();
            w.ud = dest;
            // SAFETY: the SGEs point into the model's registered buffers, alive for the whole test.
            unsafe { p.ctx.post_send(&mut p.qp[0], &[w]) }.unwrap();
            let wc = poll_all(&mut p, 0, 1)[0];
            assert_eq!((wc.wr_id, wc.status, wc.opcode, wc.qp_num), (m, WcStatus::Success, WcOpcode::Send, 0x100));
            let r = poll_all(&mut p, 1, 1)[0];
            assert_eq!(
                (r.wr_id, r.status, r.opcode, r.qp_num, r.src_qp, r.byte_len),
                (0x9000 + m, WcStatus::Success, WcOpcode::Recv, 0x101, 0x100, len),
                "DCT receive {m}"
            );
            assert_eq!(r.wc_flags & uverbs::wr::wc_flags::GRH, 0, "DC is connected-mode: no GRH");
            if op == WrOpcode::SendWithImm {
                assert_eq!(r.imm_data, (m as u32 ^ 0x5a5a).to_be());
            }
            let off = (m % 5) as usize;
            assert_eq!(&rbufs[b][..len as usize], &src[off..off + len as usize], "payload {m}");
            // RDMA WRITE, then READ it back, through the same DCI to the same DCT.
            let wsg = [Sge { addr: src.as_ptr() as u64, length: 64, lkey: 1 }];
            let mut w = SendWr::new(1000 + m, WrOpcode::RdmaWrite, &wsg);
            w.flags = SendFlags::SIGNALED;
            w.remote.addr = target.as_mut_ptr() as u64 + m % 64;
            w.remote.rkey = RKEY;
            w.ud = dest;
            // SAFETY: the SGEs point into the model's registered buffers, alive for the whole test.
            unsafe { p.ctx.post_send(&mut p.qp[0], &[w]) }.unwrap();
            assert_eq!(poll_all(&mut p, 0, 1)[0].opcode, WcOpcode::RdmaWrite);
            poll_all(&mut p, 1, 0);
            assert_eq!(&target[(m % 64) as usize..][..64], &src[..64]);
            let lsg = [Sge { addr: local.as_mut_ptr() as u64, length: 64, lkey: 1 }];
            let mut w = SendWr::new(2000 + m, WrOpcode::RdmaRead, &lsg);
            w.flags = SendFlags::SIGNALED;
            w.remote.addr = target.as_mut_ptr() as u64 + m % 64;
            w.remote.rkey = RKEY;
            w.ud = dest;
            // SAFETY: the SGEs point into the model's registered buffers, alive for the whole test.
            unsafe { p.ctx.post_send(&mut p.qp[0], &[w]) }.unwrap();
            let wc = poll_all(&mut p, 0, 1)[0];
            assert_eq!((wc.opcode, wc.byte_len), (WcOpcode::RdmaRead, 64));
            assert_eq!(&local[..64], &src[..64]);
        }
        // Fetch-and-add on the DCT side's memory.
        let mut counter = [0u8; 8];
        let mut result = [0u8; 8];
        for k in 0..5u64 {
            let sg = [Sge { addr: result.as_mut_ptr() as u64, length: 8, lkey: 1 }];
            let mut w = SendWr::new(3000 + k, WrOpcode::AtomicFetchAndAdd, &sg);
            w.flags = SendFlags::SIGNALED;
            w.remote.addr = counter.as_mut_ptr() as u64;
            w.remote.rkey = RKEY;
            w.compare_add = 10;
            w.ud = dest;
            // SAFETY: the SGEs point into the model's registered buffers, alive for the whole test.
            unsafe { p.ctx.post_send(&mut p.qp[0], &[w]) }.unwrap();
            assert_eq!(poll_all(&mut p, 0, 1)[0].status, WcStatus::Success);
            assert_eq!(u64::from_ne_bytes(result[..].try_into().unwrap()), 10 * k, "old value");
        }
        assert_eq!(u64::from_ne_bytes(counter[..].try_into().unwrap()), 50);
        let h = p.hca.lock().unwrap();
        assert_eq!(h.srqs[&0x77].consumed, 60, "every DC message came from the SRQ");
        assert_eq!(h.dc_key_violations, 0);
        drop(h);
        // Neither queue of a DCT can be posted to.
        let sg = [Sge { addr: src.as_ptr() as u64, length: 8, lkey: 1 }];
        let mut w = SendWr::new(1, WrOpcode::Send, &sg);
        w.ud = dest;
        // SAFETY: the SGEs point into the model's registered buffers, alive for the whole test.
        assert!(unsafe { p.ctx.post_send(&mut p.qp[1], &[w]) }.is_err(), "a DCT has no send queue");
        let rsg = [Sge { addr: rbufs[0].as_ptr() as u64, length: 64, lkey: 2 }];
        // SAFETY: the SGEs point into the model's registered buffers, alive for the whole test.
        let e = unsafe { p.ctx.post_recv(&mut p.qp[1], &[RecvWr { wr_id: 1, sgl: &rsg }]) }.unwrap_err();
        assert!(e.error.to_string().contains("SRQ"), "{}", e.error);
        // A DCI send without a destination is refused at post time.
        let bare = SendWr::new(1, WrOpcode::Send, &sg);
        // SAFETY: the SGEs point into the model's registered buffers, alive for the whole test.
        assert!(unsafe { p.ctx.post_send(&mut p.qp[0], &[bare]) }.is_err());
        p.srq = Some(srq);
        drop(ah);
    }
}

#[test]
fn model_dc_wrong_key_is_dropped_and_the_dci_errors() {
    let (mut p, bad) = create_dc_pair(true, Some(DC_KEY ^ 0xffff_0000_0000));
    let mut bad = bad.unwrap();
    let ah = port_ah(&p);
    let dest = Some(UdDest { ah: p.ctx.ah_number(&ah), remote_qpn: 0x101, remote_qkey: 0 });
    let mut srq = p.srq.take().unwrap();
    let rbuf = vec![0u8; 64];
    let rsg = [Sge { addr: rbuf.as_ptr() as u64, length: 64, lkey: 2 }];
    // SAFETY: the SGEs point into the model's registered buffers, alive for the whole test.
    unsafe { p.ctx.post_srq_recv(&mut srq, &[RecvWr { wr_id: 0x77, sgl: &rsg }]) }.unwrap();
    let src = [0xabu8; 16];
    let sg = [Sge { addr: src.as_ptr() as u64, length: 16, lkey: 1 }];
    let mut w = SendWr::new(5, WrOpcode::Send, &sg);
    w.flags = SendFlags::SIGNALED;
    w.ud = dest;
    // The DCI with the wrong key: the DCT drops it, the DCI gets a retry-exceeded error
    // completion (on CQ 0x400, where the model puts every DCI's completions).
    // SAFETY: the SGEs point into the model's registered buffers, alive for the whole test.
    unsafe { p.ctx.post_send(&mut bad, &[w]) }.unwrap();
    let wc = poll_all(&mut p, 0, 1)[0];
    assert_eq!((wc.wr_id, wc.status, wc.qp_num), (5, WcStatus::RetryExcErr, 0x102));
    poll_all(&mut p, 1, 0);
    assert_eq!(rbuf, vec![0u8; 64], "nothing written on the DCT side");
    assert_eq!(p.hca.lock().unwrap().dc_key_violations, 1);
    // A WRITE with the wrong key does not land either.
    let target = vec![0u8; 16];
    let mut w2 = SendWr::new(6, WrOpcode::RdmaWrite, &sg);
    w2.flags = SendFlags::SIGNALED;
    w2.remote.addr = target.as_ptr() as u64;
    w2.remote.rkey = RKEY;
    w2.ud = dest;
    // SAFETY: the SGEs point into the model's registered buffers, alive for the whole test.
    unsafe { p.ctx.post_send(&mut bad, &[w2]) }.unwrap();
    assert_eq!(poll_all(&mut p, 0, 1)[0].status, WcStatus::RetryExcErr);
    assert_eq!(target, vec![0u8; 16]);
    // The right key: the receive that stayed posted takes it.
    w.wr_id = 7;
    // SAFETY: the SGEs point into the model's registered buffers, alive for the whole test.
    unsafe { p.ctx.post_send(&mut p.qp[0], &[w]) }.unwrap();
    assert_eq!(poll_all(&mut p, 0, 1)[0].status, WcStatus::Success);
    let r = poll_all(&mut p, 1, 1)[0];
    assert_eq!((r.wr_id, r.byte_len, r.src_qp), (0x77, 16, 0x100));
    assert_eq!(&rbuf[..16], &src[..]);
    assert_eq!(p.hca.lock().unwrap().dc_key_violations, 2);
    p.srq = Some(srq);
    drop(ah);
}

// ---- XRC ---------------------------------------------------------------------------------------

/// The model's XRC target QP number (kernel-owned: no user-space state, no doorbells).
const XRC_TGT_QPN: u32 = 0x300;

/// An XRC setup in one context: side 0 an XRC initiator on CQ 0, side 1 an XRC target QP and
/// an XRC SRQ (number 0x88) whose receives complete on CQ 1. Returns the pair (its `qp[1]` is
/// the target, `srq` the XRC SRQ) and the XRC SRQ number.
fn create_xrc(caps: QpCaps, srq_wr: u32, blueflame: bool) -> (Pair, u32) {
    let ctx = context(blueflame);
    let hca = Arc::new(Mutex::new(Hca::default()));
    let half = ctx.plan.toggle();
    {
        let h = hca.clone();
        ctx.uar().set_hook(move |e| h.lock().unwrap().on_event(e, half));
    }
    let mut cqs = Vec::new();
    for i in 0..2u32 {
        let (prep, cqe, ud) = ctx.prepare_cq(16).unwrap();
        let g64 = |o: usize| u64::from_ne_bytes(ud.req[o..o + 8].try_into().unwrap());
        let cqn = 0x400 + i;
        hca.lock().unwrap().cqs.insert(
            cqn,
            MCq { buf: g64(abi::cq_req::BUF_ADDR), db: g64(abi::cq_req::DB_ADDR), ncqe: cqe + 1, pi: 0 },
        );
        cqs.push(ctx.finish_cq(prep, &CqCreated { handle: i, cqe }, &cqn.to_ne_bytes()).unwrap());
    }
    // The XRC SRQ: the same ring and driver request as a basic SRQ, plus a user index of its
    // own under CQE version 1.
    let srqn = 0x88;
    let (prep, ud) = ctx.prepare_xrc_srq(srq_wr, 1).unwrap();
    let r = &ud.req;
    let g64 = |o: usize| u64::from_ne_bytes(r[o..o + 8].try_into().unwrap());
    let g32 = |o: usize| u32::from_ne_bytes(r[o..o + 4].try_into().unwrap());
    let (buf, db, srq_uidx) = (g64(abi::srq_req::BUF_ADDR), g64(abi::srq_req::DB_ADDR), g32(abi::srq_req::UIDX));
    let v1 = ctx.resp.cqe_version == 1;
    if v1 {
        assert_ne!(srq_uidx, 0xff_ffff, "an XRC SRQ takes a user index under CQE version 1");
    } else {
        assert_eq!(srq_uidx, 0xff_ffff);
    }
    let srq = ctx
        .finish_srq(prep, &SrqCreated { handle: 31, max_wr: srq_wr, max_sge: 1, srqn }, &srqn.to_ne_bytes())
        .unwrap();
    let cnt = (srq_wr + 1).next_power_of_two();
    {
        let mut h = hca.lock().unwrap();
        h.srqs.insert(srqn, MSrq { buf, db, shift: 5, cnt, head: 0, consumed: 0 });
        h.xrc_srqs.insert(srqn, (0x401, if v1 { srq_uidx } else { srqn }));
    }
    // The initiator: a send queue with room for the XRC segment, no receive queue.
    let ini_attr = QpInitAttr { qp_type: QpType::XrcIni, caps, sq_sig_all: false, uses_srq: false };
    let (prep, ud) = ctx.prepare_qp(&ini_attr).unwrap();
    let r = &ud.req;
    let g32 = |o: usize| u32::from_ne_bytes(r[o..o + 4].try_into().unwrap());
    assert_eq!(g32(abi::qp_req::RQ_WQE_COUNT), 0, "an XRC initiator has no receive queue");
    let qpn = 0x100;
    let bfreg = 24;
    let bf = ctx.plan.bfreg_offset(bfreg).unwrap();
    {
        let mut h = hca.lock().unwrap();
        h.qps.insert(qpn, MQp { peer: XRC_TGT_QPN, ..MQp::from_req(r, qpn, 0x400, bf) });
        h.xrc_ini.insert(qpn);
    }
    let ini = ctx.finish_qp(prep, &ini_attr, &QpCreated { handle: 10, qpn, caps }, &bfreg.to_ne_bytes()).unwrap();
    // The target: no queues, no user index, no doorbell.
    let tgt_attr = QpInitAttr { qp_type: QpType::XrcTgt, caps, sq_sig_all: false, uses_srq: false };
    let (prep, ud) = ctx.prepare_qp(&tgt_attr).unwrap();
    let r = &ud.req;
    let g32 = |o: usize| u32::from_ne_bytes(r[o..o + 4].try_into().unwrap());
    assert_eq!((g32(abi::qp_req::SQ_WQE_COUNT), g32(abi::qp_req::RQ_WQE_COUNT)), (0, 0), "XRC target: no rings");
    assert_eq!(g32(abi::qp_req::UIDX), if v1 { 0 } else { 0xff_ffff }, "XRC target: libmlx5's uidx");
    let tgt = ctx
        .finish_qp(prep, &tgt_attr, &QpCreated { handle: 11, qpn: XRC_TGT_QPN, caps }, &[0u8; 40])
        .unwrap();
    let cq: [Mlx5Cq; 2] = cqs.try_into().ok().unwrap();
    (Pair { ctx, hca, cq, qp: [ini, tgt], srq: Some(srq) }, srqn)
}

#[test]
fn model_xrc_initiator_sends_into_the_xrc_srq() {
    for blueflame in [true, false] {
        let caps = QpCaps { max_send_wr: 8, max_recv_wr: 8, max_send_sge: 1, max_recv_sge: 1, max_inline_data: 64 };
        let (mut p, srqn) = create_xrc(caps, 15, blueflame);
        let mut srq = p.srq.take().unwrap();
        let bufs = Bufs { mem: (0..6).map(|i| vec![i as u8; 256]).collect() };
        // Receives into the XRC SRQ (buffers 3..6), ids 300..303.
        for k in 0..3 {
            let sg = [Sge { addr: bufs.addr(3 + k), length: 256, lkey: 7 }];
            // SAFETY: the SGEs point into the model's registered buffers, alive for the whole test.
            unsafe { p.ctx.post_srq_recv(&mut srq, &[RecvWr { wr_id: 300 + k as u64, sgl: &sg }]) }.unwrap();
        }
        // An XRC target QP has no send queue.
        let sg0 = [Sge { addr: bufs.addr(0), length: 100, lkey: 7 }];
        // SAFETY: the SGEs point into the model's registered buffers, alive for the whole test.
        let e = unsafe { p.ctx.post_send(&mut p.qp[1], &[SendWr::new(1, WrOpcode::Send, &sg0)]) }.unwrap_err();
        assert!(e.error.to_string().contains("no send queue"), "{e}");
        // SEND (gathered), SEND_WITH_IMM (inline), RDMA_WRITE_WITH_IMM, each naming the SRQ.
        let sg1 = [Sge { addr: bufs.addr(1), length: 40, lkey: 7 }];
        let mut w0 = SendWr::new(10, WrOpcode::Send, &sg0);
        w0.flags = SendFlags::SIGNALED;
        w0.remote_srqn = srqn;
        let mut w1 = SendWr::new(11, WrOpcode::SendWithImm, &sg1);
        w1.flags = SendFlags::SIGNALED | SendFlags::INLINE;
        w1.imm_data = 0xa1b2c3d4;
        w1.remote_srqn = srqn;
        let mut w2 = SendWr::new(12, WrOpcode::RdmaWriteWithImm, &sg1);
        w2.flags = SendFlags::SIGNALED;
        w2.remote = uverbs::wr::RemoteAddr { addr: bufs.addr(2), rkey: RKEY };
        w2.imm_data = 0x01020304;
        w2.remote_srqn = srqn;
        // SAFETY: the SGEs point into the model's registered buffers, alive for the whole test.
        unsafe { p.ctx.post_send(&mut p.qp[0], &[w0, w1, w2]) }.unwrap();
        // The WQEs carry the XRC segment right after the control segment.
        let (qbuf, _) = p.qp[0].addrs();
        let first = rd(qbuf, 32);
        assert_eq!(be32(&first, 16), srqn, "XRC segment: the remote SRQ number at byte 16");
        assert_eq!(be32(&first, 4) & 0x3f, 3, "ctrl + XRC + one data segment");
        // Sender completions on CQ 0, in order.
        let s = poll_all(&mut p, 0, 3);
        assert_eq!(s.iter().map(|w| w.wr_id).collect::<Vec<_>>(), vec![10, 11, 12]);
        assert!(s.iter().all(|w| w.status == WcStatus::Success));
        // Receives on the SRQ's CQ (CQ 1), in SRQ order, with the payloads.
        let r = poll_all(&mut p, 1, 3);
        assert_eq!(r.iter().map(|w| w.wr_id).collect::<Vec<_>>(), vec![300, 301, 302]);
        assert!(r.iter().all(|w| w.status == WcStatus::Success), "{r:?}");
        assert_eq!((r[0].opcode, r[0].byte_len), (WcOpcode::Recv, 100));
        assert_eq!(&bufs.mem[3][..100], &bufs.mem[0][..100]);
        assert_eq!((r[1].byte_len, r[1].imm_data), (40, 0xa1b2c3d4));
        assert_eq!(&bufs.mem[4][..40], &bufs.mem[1][..40]);
        assert_eq!(r[2].opcode, WcOpcode::RecvRdmaWithImm);
        assert_eq!(r[2].imm_data, 0x01020304);
        assert_eq!(&bufs.mem[2][..40], &bufs.mem[1][..40], "the write landed");
        assert!(r.iter().all(|w| w.qp_num == XRC_TGT_QPN), "completions name the target QP: {r:?}");
        // The entries went back to the SRQ's free list: more receives post and complete.
        for k in 0..3 {
            let sg = [Sge { addr: bufs.addr(3 + k), length: 256, lkey: 7 }];
            // SAFETY: the SGEs point into the model's registered buffers, alive for the whole test.
            unsafe { p.ctx.post_srq_recv(&mut srq, &[RecvWr { wr_id: 400 + k as u64, sgl: &sg }]) }.unwrap();
        }
        let mut w = SendWr::new(20, WrOpcode::Send, &sg1);
        w.flags = SendFlags::SIGNALED;
        w.remote_srqn = srqn;
        // SAFETY: the SGEs point into the model's registered buffers, alive for the whole test.
        unsafe { p.ctx.post_send(&mut p.qp[0], &[w]) }.unwrap();
        poll_all(&mut p, 0, 1);
        assert_eq!(poll_all(&mut p, 1, 1)[0].wr_id, 400);
        drop(srq);
    }
}

#[test]
fn model_xrc_send_to_an_unknown_srqn_completes_in_error() {
    let caps = QpCaps { max_send_wr: 8, max_recv_wr: 0, max_send_sge: 1, max_recv_sge: 1, max_inline_data: 0 };
    let (mut p, srqn) = create_xrc(caps, 7, false);
    let srq = p.srq.take().unwrap();
    let bufs = Bufs { mem: vec![vec![5u8; 64]] };
    let sg = [Sge { addr: bufs.addr(0), length: 64, lkey: 7 }];
    let mut w = SendWr::new(77, WrOpcode::Send, &sg);
    w.flags = SendFlags::SIGNALED;
    w.remote_srqn = srqn + 1; // no such SRQ at the target
    // SAFETY: the SGEs point into the model's registered buffers, alive for the whole test.
    unsafe { p.ctx.post_send(&mut p.qp[0], &[w]) }.unwrap();
    let s = poll_all(&mut p, 0, 1);
    assert_eq!((s[0].wr_id, s[0].status), (77, WcStatus::RemInvReqErr));
    poll_all(&mut p, 1, 0);
    let h = p.hca.lock().unwrap();
    assert_eq!((h.xrc_bad_srqn, h.srqs[&srqn].consumed), (1, 0), "nothing reached the SRQ");
    drop(h);
    drop(srq);
}

#[test]
fn mlx5_xrc_geometry_matches_libmlx5() {
    // libmlx5's _sq_overhead for XRC_SEND: RC's largest set (ctrl + UMR ctrl + mkey context +
    // 64 bytes of KLMs = 192) plus the 16-byte XRC segment.
    assert_eq!(providers::mlx5::geometry::sq_overhead(QpType::XrcIni), 208);
    assert_eq!(providers::mlx5::geometry::sq_overhead(QpType::Rc) + 16, 208);
    assert_eq!(providers::mlx5::wqe::xrc_seg(0x12_3456), [0, 0x12, 0x34, 0x56, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0]);
}

// ---- DC: DCI streams, CQE version 0 ------------------------------------------------------------

#[test]
fn model_dc_dci_streams_reach_the_device_per_request() {
    // Each request's SendWr::dci_stream lands in its own WQE's control segment, in single posts
    // and in a post list, and the DCT receives as before.
    let (mut p, _) = create_dc_pair(false, None);
    let ah = port_ah(&p);
    let dest = Some(UdDest { ah: p.ctx.ah_number(&ah), remote_qpn: 0x101, remote_qkey: 0 });
    let mut srq = p.srq.take().unwrap();
    let mut rbuf = [0u8; 64];
    let src = [0xa5u8; 16];
    let sg = [Sge { addr: src.as_ptr() as u64, length: 16, lkey: 1 }];
    let rsg = [Sge { addr: rbuf.as_mut_ptr() as u64, length: 64, lkey: 2 }];
    let mut want = Vec::new();
    for m in 0..6u16 {
        // SAFETY: the SGEs point into the model's registered buffers, alive for the whole test.
        unsafe { p.ctx.post_srq_recv(&mut srq, &[RecvWr { wr_id: u64::from(m), sgl: &rsg }]) }.unwrap();
        let mut w = SendWr::new(u64::from(m), WrOpcode::Send, &sg);
        w.flags = SendFlags::SIGNALED;
        w.ud = dest;
        w.dci_stream = m % 4; // perftest's rotation for --log_active_dci_streams 2
        want.push(m % 4);
        // SAFETY: the SGEs point into the model's registered buffers, alive for the whole test.
        unsafe { p.ctx.post_send(&mut p.qp[0], &[w]) }.unwrap();
        assert_eq!(poll_all(&mut p, 0, 1)[0].status, WcStatus::Success);
        assert_eq!(poll_all(&mut p, 1, 1)[0].wr_id, u64::from(m));
    }
    // a post list of three writes on streams 0x0102, 3, 0xffff
    let mut target = [0u8; 64];
    let mut ws = Vec::new();
    for (k, st) in [0x0102u16, 3, 0xffff].into_iter().enumerate() {
        let mut w = SendWr::new(100 + k as u64, WrOpcode::RdmaWrite, &sg);
        w.flags = if k == 2 { SendFlags::SIGNALED } else { SendFlags::empty() };
        w.remote.addr = target.as_mut_ptr() as u64;
        w.remote.rkey = RKEY;
        w.ud = dest;
        w.dci_stream = st;
        ws.push(w);
        want.push(st);
    }
    // SAFETY: the SGEs point into the model's registered buffers, alive for the whole test.
    unsafe { p.ctx.post_send(&mut p.qp[0], &ws) }.unwrap();
    assert_eq!(poll_all(&mut p, 0, 1)[0].wr_id, 102);
    assert_eq!(&target[..16], &src[..]);
    assert_eq!(p.hca.lock().unwrap().dci_streams, want);
    p.srq = Some(srq);
    drop(ah);
}

#[test]
fn model_dc_dct_receives_resolve_under_cqe_version_0() {
    // Under CQE version 0 the provider finds a CQE's QP by the CQE's QPN. A DCT is created
    // without a number (CREATE_QP answers 0) and gets it at RTR: its receive CQEs name that
    // DCT number, which must lead to the DCT (and so to its SRQ's work request ids).
    let (mut p, _) = create_dc_pair(true, None);
    p.ctx.resp.cqe_version = 0;
    let ah = port_ah(&p);
    let dest = Some(UdDest { ah: p.ctx.ah_number(&ah), remote_qpn: 0x101, remote_qkey: 0 });
    let mut srq = p.srq.take().unwrap();
    let mut rbuf = [0u8; 64];
    let src: Vec<u8> = (0..32u8).collect();
    for m in 0..4u64 {
        let rsg = [Sge { addr: rbuf.as_mut_ptr() as u64, length: 64, lkey: 2 }];
        // SAFETY: the SGEs point into the model's registered buffers, alive for the whole test.
        unsafe { p.ctx.post_srq_recv(&mut srq, &[RecvWr { wr_id: 0x700 + m, sgl: &rsg }]) }.unwrap();
        let sg = [Sge { addr: src.as_ptr() as u64, length: 32, lkey: 1 }];
        let mut w = SendWr::new(m, WrOpcode::Send, &sg);
        w.flags = SendFlags::SIGNALED;
        w.ud = dest;
        // SAFETY: the SGEs point into the model's registered buffers, alive for the whole test.
        unsafe { p.ctx.post_send(&mut p.qp[0], &[w]) }.unwrap();
        let wc = poll_all(&mut p, 0, 1)[0];
        assert_eq!((wc.wr_id, wc.qp_num), (m, 0x100));
        let r = poll_all(&mut p, 1, 1)[0];
        assert_eq!((r.wr_id, r.status, r.qp_num, r.src_qp, r.byte_len), (0x700 + m, WcStatus::Success, 0x101, 0x100, 32));
        assert_eq!(&rbuf[..32], &src[..]);
    }
    p.srq = Some(srq);
    drop(ah);
}

// ---- AES-XTS data path: UMR + crypto BSF (perftest --aes_xts) --------------------------------
//
// The model device learns crypto mkeys from UMR WQEs (opcode 0x25): the key in the control
// segment's imm, the UMR control segment's mask and sizes, the mkey context (access, length,
// the key's variant byte, BSF enable), the inline translation (data segments: address, length)
// and the crypto BSF (order, data-unit size, initial tweak, DEK id, key tag). A later request
// whose local SGE names such a key at an offset reads or writes the mapped ranges.
//
// Model choice, NOT AES: "encryption" is a keyed byte-wise add (decryption the matching
// subtract) of a keystream derived from (DEK id, data-unit tweak, byte index in the unit); the
// tweak of data unit k is the BSF's initial tweak read as a big-endian 128-bit number, plus k
// (the multi-block engine's convention). It only shows which bytes are ciphertext and that
// they decrypt back; it says nothing about AES-XTS itself.
//
// The model also counts requests that follow a UMR on the same QP without the initiator small
// fence (libmlx5 sets it through `fm_cache`), and asserts everything it parses.

use providers::mlx5::crypto::{Mlx5CryptoMkey, Mlx5Dek};
use providers::mlx5::umr;
use uverbs::dv::CryptoAttr;

#[derive(Clone, Debug)]
struct CMkey {
    ranges: Vec<(u64, u32)>,
    len: u64,
    access: u8,
    dek: u32,
    tweak: u128,
    dus: u32,
    encrypt_on_tx: bool,
}

#[derive(Default)]
struct CryptoModel {
    /// Crypto mkeys that exist, by key: `None` until a UMR configures them.
    mkeys: HashMap<u32, Option<CMkey>>,
    umrs: usize,
    umr_wrapped: usize,
    umr_blueflame: usize,
    crypto_requests: usize,
    unfenced_after_umr: usize,
    /// What each crypto request carried on the wire, in order.
    wire: Vec<Vec<u8>>,
    /// Per QP: the previous WQE was a UMR.
    after_umr: HashMap<u32, bool>,
}

fn model_keystream(dek: u32, tweak: u128, i: u64) -> u8 {
    let mut x = (dek as u64).rotate_left(40) ^ (tweak as u64) ^ ((tweak >> 64) as u64).rotate_left(17) ^ i.wrapping_mul(0x1000_0001);
    x = x.wrapping_add(0x9e37_79b9_7f4a_7c15);
    x = (x ^ (x >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    x = (x ^ (x >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    (x ^ (x >> 31)) as u8
}

/// The model's transform of `data` found at mkey offset `offset`.
fn model_cipher(dek: u32, tweak0: u128, dus: u32, offset: u64, data: &mut [u8], encrypt: bool) {
    for (j, b) in data.iter_mut().enumerate() {
        let o = offset + j as u64;
        let k = model_keystream(dek, tweak0.wrapping_add((o / dus as u64) as u128), o % dus as u64);
        *b = if encrypt { b.wrapping_add(k) } else { b.wrapping_sub(k) };
    }
}

/// What the test expects on the wire for plaintext at mkey offset `offset` under `attr`/`dek`
/// (perftest's multi-block convention: the initial tweak's bytes are a little-endian number).
fn expect_cipher(attr: &CryptoAttr, dek: u32, offset: u64, plain: &[u8]) -> Vec<u8> {
    let mut v = plain.to_vec();
    model_cipher(dek, u128::from_le_bytes(attr.initial_tweak), attr.data_unit_size, offset, &mut v, true);
    v
}

impl CMkey {
    fn read(&self, off: u64, len: usize) -> Vec<u8> {
        let mut v = Vec::with_capacity(len);
        let (mut o, mut left) = (off, len as u64);
        for &(a, n) in &self.ranges {
            if left == 0 {
                break;
            }
            if o >= n as u64 {
                o -= n as u64;
                continue;
            }
            let k = (n as u64 - o).min(left);
            v.extend(rd(a + o, k as usize));
            left -= k;
            o = 0;
        }
        v
    }
    fn write(&self, off: u64, data: &[u8]) {
        let (mut o, mut d) = (off, data);
        for &(a, n) in &self.ranges {
            if d.is_empty() {
                break;
            }
            if o >= n as u64 {
                o -= n as u64;
                continue;
            }
            let k = ((n as u64 - o) as usize).min(d.len());
            wr(a + o, &d[..k]);
            d = &d[k..];
            o = 0;
        }
    }
}

impl CryptoModel {
    fn on_event(&mut self, hca: &mut Hca, e: &UarEvent, half: usize) {
        if let Some((qpn, stores)) = hca.uar_event(e, half) {
            self.doorbell(hca, qpn, &stores);
        }
    }

    /// As `Hca::on_event`'s doorbell, dispatching UMR WQEs and requests through crypto mkeys
    /// here and everything else to `Hca::execute`.
    fn doorbell(&mut self, hca: &mut Hca, qpn: u32, stores: &[(usize, [u8; 8])]) {
        let (start, blueflame) = hca.doorbell(qpn, stores, |hca, ci| {
            let q = hca.qps[&qpn];
            let ctrl = rd(q.sq_slot(ci), 16);
            let op = ctrl[3];
            if self.after_umr.get(&qpn).copied().unwrap_or(false) && ctrl[11] & 0xa0 == 0 {
                self.unfenced_after_umr += 1;
            }
            let n = if op == umr::OPCODE_UMR {
                self.umr(hca, qpn, ci)
            } else if self.names_crypto_mkey(&q, ci) {
                self.crypto_request(hca, qpn, ci)
            } else {
                hca.execute(qpn, ci)
            };
            self.after_umr.insert(qpn, op == umr::OPCODE_UMR);
            n
        });
        if blueflame && rd(hca.qps[&qpn].sq_slot(start), 4)[3] == umr::OPCODE_UMR {
            self.umr_blueflame += 1;
        }
    }

    /// The RC request's local data segments (none for inline payloads).
    fn local_segs(w: &[u8]) -> Vec<(u32, u32, u64)> {
        let op = w[3];
        let mut pos = 16;
        if matches!(op, 0x08 | 0x09 | 0x10 | 0x11 | 0x12) {
            pos += 16;
        }
        if matches!(op, 0x11 | 0x12) {
            pos += 16;
        }
        if pos < w.len() && be32(w, pos) & 0x8000_0000 != 0 {
            return Vec::new();
        }
        w[pos..].chunks_exact(16).map(|s| (be32(s, 0), be32(s, 4), be64(s, 8))).collect()
    }

    fn names_crypto_mkey(&self, q: &MQp, idx: u32) -> bool {
        let (w, _, _) = q.wqe(idx);
        Self::local_segs(&w).iter().any(|s| self.mkeys.contains_key(&s.1))
    }

    fn umr(&mut self, hca: &mut Hca, qpn: u32, idx: u32) -> u32 {
        let q = hca.qps[&qpn];
        let (w, nbb, wrapped) = q.wqe(idx);
        assert_eq!(w[3], umr::OPCODE_UMR);
        let key = be32(&w, 12);
        assert!(self.mkeys.contains_key(&key), "model: UMR on an mkey that does not exist ({key:#x})");
        // UMR control segment.
        assert_eq!(w[16] & umr::UMR_CTRL_FLAG_INLINE, umr::UMR_CTRL_FLAG_INLINE, "translation inline");
        let klm_oct = u16::from_be_bytes([w[20], w[21]]) as usize;
        let bsf_oct = u16::from_be_bytes([w[22], w[23]]) as usize;
        let mask = be64(&w, 24);
        assert!(w[17..20].iter().all(|&b| b == 0) && w[32..64].iter().all(|&b| b == 0), "UMR ctrl reserved bytes");
        assert_eq!(w.len(), 128 + 16 * (klm_oct + bsf_oct), "ds covers ctrl, UMR ctrl, mkey context, translation, BSF");
        // Mkey context.
        let mkc = &w[64..128];
        assert_ne!(mask & umr::mkey_mask::FREE, 0);
        assert_eq!(mkc[0], 0, "free bit written as 0: the mkey becomes usable");
        assert_ne!(mask & umr::mkey_mask::MKEY, 0);
        assert_eq!(be32(mkc, 4), 0xffff_ff00 | (key & 0xff), "qpn 0xffffff and the key's variant");
        assert_ne!(mask & umr::mkey_mask::LEN, 0);
        let len = be64(mkc, 24);
        assert_eq!(be64(mkc, 16), 0, "start address 0");
        assert_eq!(mask & umr::mkey_mask::ACCESS, umr::mkey_mask::ACCESS);
        // Translation: data segments, zero entries pad to 64 bytes.
        let klm = &w[128..128 + 16 * klm_oct];
        let ranges: Vec<(u64, u32)> = klm
            .chunks_exact(16)
            .filter(|s| be32(s, 0) != 0)
            .map(|s| (be64(s, 8), be32(s, 0)))
            .collect();
        assert_eq!(ranges.iter().map(|r| r.1 as u64).sum::<u64>(), len, "mkey length = the ranges");
        // Crypto BSF.
        assert_eq!(bsf_oct, 4, "one 64-byte crypto BSF");
        assert_ne!(mask & umr::mkey_mask::BSF_ENABLE, 0);
        assert_eq!(be32(mkc, 12), umr::MKC_FLAGS_BSF_ENABLE);
        let bsf = &w[128 + 16 * klm_oct..];
        assert_eq!(bsf[0], umr::CRYPTO_BSF_SIZE_TYPE);
        assert_eq!(bsf[3], umr::ENCRYPTION_STANDARD_AES_XTS);
        assert_eq!(be32(bsf, 4), u32::MAX, "raw_data_size");
        let dus = match bsf[8] {
            1 => 512,
            2 => 520,
            6 => 4048,
            3 => 4096,
            4 => 4160,
            s => panic!("model: bad data-unit selector {s}"),
        };
        let m = CMkey {
            ranges,
            len,
            access: mkc[2],
            dek: be32(bsf, 32) & 0xff_ffff,
            tweak: u128::from_be_bytes(bsf[16..32].try_into().unwrap()),
            dus,
            encrypt_on_tx: matches!(bsf[1], umr::enc_order::ENCRYPTED_RAW_WIRE | umr::enc_order::ENCRYPTED_WIRE_SIGNATURE),
        };
        self.mkeys.insert(key, Some(m));
        self.umrs += 1;
        if wrapped {
            self.umr_wrapped += 1;
        }
        if w[11] & 0x08 != 0 {
            hca.req_cqe(&q, idx, umr::OPCODE_UMR, 0, None);
        }
        nbb
    }

    fn crypto_request(&mut self, hca: &mut Hca, qpn: u32, idx: u32) -> u32 {
        let q = hca.qps[&qpn];
        let (w, nbb, _) = q.wqe(idx);
        let op = w[3];
        let (raddr, rkey) = (be64(&w, 16), be32(&w, 24));
        let segs = Self::local_segs(&w);
        let mut synd = None;
        if matches!(op, 0x08 | 0x09 | 0x10) && rkey != RKEY {
            synd = Some(0x13);
        }
        // Every local SGE naming a crypto mkey must fall inside a configured mapping with the
        // access the direction needs; anything else is a local protection error.
        for &(n, lkey, addr) in &segs {
            if let Some(m) = self.mkeys.get(&lkey) {
                let ok = m.as_ref().is_some_and(|m| {
                    addr.checked_add(n as u64).is_some_and(|end| end <= m.len)
                        && (op != 0x10 || m.access & umr::mkc_access::LOCAL_WRITE != 0)
                });
                if !ok {
                    synd = Some(0x04);
                }
            }
        }
        self.crypto_requests += 1;
        let mut byte_cnt = 0;
        if synd.is_none() {
            // Out of memory: gather (and transform through the mkey).
            let gather = |this: &Self| -> Vec<u8> {
                let mut v = Vec::new();
                for &(n, lkey, addr) in &segs {
                    match this.mkeys.get(&lkey) {
                        Some(Some(m)) => {
                            let mut d = m.read(addr, n as usize);
                            model_cipher(m.dek, m.tweak, m.dus, addr, &mut d, m.encrypt_on_tx);
                            v.extend(d);
                        }
                        _ => v.extend(rd(addr, n as usize)),
                    }
                }
                v
            };
            match op {
                0x08 => {
                    let d = gather(self);
                    wr(raddr, &d);
                    self.wire.push(d);
                }
                0x0a => {
                    let d = gather(self);
                    hca.receive(q.peer, Some(&d), None, d.len() as u32, 2, qpn, None);
                    self.wire.push(d);
                }
                0x10 => {
                    let total: usize = segs.iter().map(|s| s.0 as usize).sum();
                    let d = rd(raddr, total);
                    let mut o = 0;
                    for &(n, lkey, addr) in &segs {
                        let mut part = d[o..o + n as usize].to_vec();
                        match self.mkeys.get(&lkey) {
                            Some(Some(m)) => {
                                model_cipher(m.dek, m.tweak, m.dus, addr, &mut part, !m.encrypt_on_tx);
                                m.write(addr, &part);
                            }
                            _ => wr(addr, &part),
                        }
                        o += n as usize;
                    }
                    byte_cnt = total as u32;
                    self.wire.push(d);
                }
                o => panic!("model: crypto mkey with opcode {o:#x} not modelled"),
            }
        }
        if w[11] & 0x08 != 0 || synd.is_some() {
            hca.req_cqe(&q, idx, op, byte_cnt, synd);
        }
        nbb
    }
}

const CRYPTO_MKEY: u32 = 0x0004_5600;

/// An RC pair (max_inline_data 124: the least a crypto UMR fits in) whose device is the crypto
/// model in front of the plain one; the context reports single- and multi-block engines.
fn crypto_pair(blueflame: bool, max_send_wr: u32) -> (Pair, Arc<Mutex<CryptoModel>>) {
    crypto_device(create_pair(crypto_caps(max_send_wr), 15, blueflame))
}

fn crypto_caps(max_send_wr: u32) -> QpCaps {
    QpCaps { max_send_wr, max_recv_wr: 4, max_send_sge: 1, max_recv_sge: 1, max_inline_data: 124 }
}

/// Put the crypto model in front of `p`'s device.
fn crypto_device(p: Pair) -> (Pair, Arc<Mutex<CryptoModel>>) {
    let dev = Arc::new(Mutex::new(CryptoModel::default()));
    let (h, d) = (p.hca.clone(), dev.clone());
    let half = p.ctx.plan.toggle();
    p.ctx.uar().set_hook(move |e| {
        let mut hca = h.lock().unwrap();
        d.lock().unwrap().on_event(&mut hca, e, half)
    });
    p.ctx.set_crypto_engines(umr::engines::AES_XTS | umr::engines::SINGLE_BLOCK | umr::engines::MULTI_BLOCK);
    (p, dev)
}

fn perftest_crypto_attr(dus: u32) -> CryptoAttr {
    let mut tweak = [0u8; 16];
    for (i, t) in tweak.iter_mut().enumerate() {
        *t = i as u8;
    }
    CryptoAttr { encrypt_on_tx: true, signature_before_crypto_on_tx: false, initial_tweak: tweak, keytag: [0; 8], data_unit_size: dus }
}

const RR_RW_LW: u32 = 4 | 2 | 1;

#[test]
fn model_crypto_umr_then_write_send_read_move_the_mapped_bytes() {
    for blueflame in [true, false] {
        let (mut p, dev) = crypto_pair(blueflame, 8);
        dev.lock().unwrap().mkeys.insert(CRYPTO_MKEY, None);
        let mut mkey = Mlx5CryptoMkey::detached(CRYPTO_MKEY, 1);
        let dek = Mlx5Dek::detached(0x31);
        let dek2 = Mlx5Dek::detached(0x32);
        let attr = perftest_crypto_attr(512);
        let plain: Vec<u8> = (0..2048u32).map(|i| (i * 7 + 3) as u8).collect();
        let mut bufs = Bufs { mem: vec![plain.clone(), vec![0u8; 2048], vec![0u8; 2048], vec![0u8; 2048]] };
        let (a, remote, back, rbuf) = (bufs.addr(0), bufs.addr(1), bufs.addr(2), bufs.addr(3));
        let via_mkey = |off: u64, len: u32| [Sge { addr: off, length: len, lkey: CRYPTO_MKEY }];

        // 1. UMR maps A (plaintext), then a signaled WRITE of the whole mkey: the remote gets
        //    ciphertext; only the WRITE completes.
        let map_a = Sge { addr: a, length: 2048, lkey: 1 };
        // SAFETY: the SGEs point into the model's registered buffers, alive for the whole test.
        unsafe { p.ctx.post_crypto_mkey_configure(&mut p.qp[0], &mut mkey, &map_a, RR_RW_LW, &attr, &dek) }.unwrap();
        let umr_at = p.qp[0].sq_cur_post() - 4;
        let sg = via_mkey(0, 2048);
        let mut w = SendWr::new(0x501, WrOpcode::RdmaWrite, &sg);
        w.flags = SendFlags::SIGNALED;
        w.remote = uverbs::wr::RemoteAddr { addr: remote, rkey: RKEY };
        // SAFETY: the SGEs point into the model's registered buffers, alive for the whole test.
        unsafe { p.ctx.post_send(&mut p.qp[0], &[w]) }.unwrap();
        let wc = poll_all(&mut p, 0, 1)[0];
        assert_eq!((wc.wr_id, wc.status, wc.opcode), (0x501, WcStatus::Success, WcOpcode::RdmaWrite));
        let cipher = expect_cipher(&attr, 0x31, 0, &plain);
        assert_ne!(cipher, plain);
        assert_eq!(rd(remote, 2048), cipher, "ciphertext on the wire side (tweak and DEK as posted)");
        // The WQE after the UMR carries the initiator small fence with its CQ update.
        let sq = p.qp[0].geo.sq_offset as u64 + p.qp[0].addrs().0;
        let slot = |i: u32| sq + ((i & (p.qp[0].geo.sq_wqe_cnt - 1)) as u64) * 64;
        assert_eq!(rd(slot(umr_at), 16)[3], 0x25);
        assert_eq!(rd(slot(umr_at + 4), 16)[11], 0x28, "small fence | CQ update");

        // 2. UMR maps the empty buffer `back`; READ the ciphertext through the mkey: the
        //    device decrypts on the way into memory.
        let map_back = Sge { addr: back, length: 2048, lkey: 1 };
        // SAFETY: the SGEs point into the model's registered buffers, alive for the whole test.
        unsafe { p.ctx.post_crypto_mkey_configure(&mut p.qp[0], &mut mkey, &map_back, RR_RW_LW, &attr, &dek) }.unwrap();
        let mut r = SendWr::new(0x502, WrOpcode::RdmaRead, &sg);
        r.flags = SendFlags::SIGNALED;
        r.remote = uverbs::wr::RemoteAddr { addr: remote, rkey: RKEY };
        // SAFETY: the SGEs point into the model's registered buffers, alive for the whole test.
        unsafe { p.ctx.post_send(&mut p.qp[0], &[r]) }.unwrap();
        let wc = poll_all(&mut p, 0, 1)[0];
        assert_eq!((wc.wr_id, wc.status, wc.opcode, wc.byte_len), (0x502, WcStatus::Success, WcOpcode::RdmaRead, 2048));
        assert_eq!(rd(back, 2048), plain, "plaintext after decryption");

        // 3. Another DEK, a SEND of the second data unit (mkey offset 512): the receiver gets
        //    that unit's ciphertext under DEK 2 and tweak + 1.
        // SAFETY: the SGEs point into the model's registered buffers, alive for the whole test.
        unsafe { p.ctx.post_crypto_mkey_configure(&mut p.qp[0], &mut mkey, &map_a, RR_RW_LW, &attr, &dek2) }.unwrap();
        let rsg = [Sge { addr: rbuf, length: 2048, lkey: 2 }];
        // SAFETY: the SGEs point into the model's registered buffers, alive for the whole test.
        unsafe { p.ctx.post_recv(&mut p.qp[1], &[RecvWr { wr_id: 0x900, sgl: &rsg }]) }.unwrap();
        let ssg = via_mkey(512, 512);
        let mut s = SendWr::new(0x503, WrOpcode::Send, &ssg);
        s.flags = SendFlags::SIGNALED;
        // SAFETY: the SGEs point into the model's registered buffers, alive for the whole test.
        unsafe { p.ctx.post_send(&mut p.qp[0], &[s]) }.unwrap();
        assert_eq!(poll_all(&mut p, 0, 1)[0].wr_id, 0x503);
        let rwc = poll_all(&mut p, 1, 1)[0];
        assert_eq!((rwc.wr_id, rwc.byte_len, rwc.opcode), (0x900, 512, WcOpcode::Recv));
        let unit1 = expect_cipher(&attr, 0x32, 512, &plain[512..1024]);
        assert_eq!(rd(rbuf, 512), unit1);
        assert_ne!(unit1, cipher[512..1024].to_vec(), "a different DEK gives different ciphertext");
        assert_eq!(cipher[512..1024], expect_cipher(&attr, 0x31, 512, &plain[512..1024])[..], "per-unit tweak");
        let d = dev.lock().unwrap();
        assert_eq!((d.umrs, d.crypto_requests, d.unfenced_after_umr), (3, 3, 0));
        assert_eq!(d.wire.len(), 3);
        assert_eq!(d.umr_blueflame > 0, blueflame, "a single UMR is BlueFlamed like any 16-DS inline WQE");
        drop(d);
        bufs.mem.clear();
    }
}

#[test]
fn model_crypto_request_on_an_unconfigured_mkey_is_a_local_protection_error() {
    let (mut p, dev) = crypto_pair(true, 8);
    dev.lock().unwrap().mkeys.insert(CRYPTO_MKEY, None);
    let remote = vec![0u8; 256];
    let sg = [Sge { addr: 0, length: 64, lkey: CRYPTO_MKEY }];
    let mut w = SendWr::new(0x77, WrOpcode::RdmaWrite, &sg);
    w.flags = SendFlags::SIGNALED;
    w.remote = uverbs::wr::RemoteAddr { addr: remote.as_ptr() as u64, rkey: RKEY };
    // SAFETY: the SGEs point into the model's registered buffers, alive for the whole test.
    unsafe { p.ctx.post_send(&mut p.qp[0], &[w]) }.unwrap();
    let wc = poll_all(&mut p, 0, 1)[0];
    assert_eq!((wc.wr_id, wc.status, wc.vendor_err), (0x77, WcStatus::LocProtErr, 0x88));
    assert!(remote.iter().all(|&b| b == 0), "nothing moved");

    // Configured, but the request runs past the mapping: also a protection error (side 1).
    dev.lock().unwrap().mkeys.insert(CRYPTO_MKEY + 0x100, None);
    let mut mkey = Mlx5CryptoMkey::detached(CRYPTO_MKEY + 0x100, 1);
    let src = vec![5u8; 256];
    let map = Sge { addr: src.as_ptr() as u64, length: 256, lkey: 1 };
    let attr = perftest_crypto_attr(512);
    // SAFETY: the SGEs point into the model's registered buffers, alive for the whole test.
    unsafe { p.ctx.post_crypto_mkey_configure(&mut p.qp[1], &mut mkey, &map, RR_RW_LW, &attr, &Mlx5Dek::detached(9)) }.unwrap();
    let sg = [Sge { addr: 200, length: 64, lkey: CRYPTO_MKEY + 0x100 }];
    let mut w = SendWr::new(0x78, WrOpcode::RdmaWrite, &sg);
    w.flags = SendFlags::SIGNALED;
    w.remote = uverbs::wr::RemoteAddr { addr: remote.as_ptr() as u64, rkey: RKEY };
    // SAFETY: the SGEs point into the model's registered buffers, alive for the whole test.
    unsafe { p.ctx.post_send(&mut p.qp[1], &[w]) }.unwrap();
    let wc = poll_all(&mut p, 1, 1)[0];
    assert_eq!((wc.wr_id, wc.status), (0x78, WcStatus::LocProtErr));
    assert_eq!(dev.lock().unwrap().umrs, 1);
}

#[test]
fn model_crypto_umr_refusals_happen_at_post_and_touch_nothing() {
    let (mut p, dev) = crypto_pair(true, 8);
    dev.lock().unwrap().mkeys.insert(CRYPTO_MKEY, None);
    let buf = vec![0u8; 4096];
    let map = Sge { addr: buf.as_ptr() as u64, length: 4096, lkey: 1 };
    let attr = perftest_crypto_attr(4096);
    let dek = Mlx5Dek::detached(1);
    let _ = p.ctx.uar().take();
    let before = p.qp[0].sq_cur_post();
    // An mkey created for 0 entries cannot take the one range: too many entries.
    let mut none = Mlx5CryptoMkey::detached(CRYPTO_MKEY, 0);
    // SAFETY: the SGEs point into the model's registered buffers, alive for the whole test.
    let e = unsafe { p.ctx.post_crypto_mkey_configure(&mut p.qp[0], &mut none, &map, RR_RW_LW, &attr, &dek) }.unwrap_err();
    assert_eq!((e.index, e.error.errno), (0, Some(libc::ENOMEM)));
    assert!(e.error.to_string().contains("layout entries"), "{}", e.error);
    let mut mkey = Mlx5CryptoMkey::detached(CRYPTO_MKEY, 1);
    let mut bad = attr;
    bad.data_unit_size = 1000;
    // SAFETY: the SGEs point into the model's registered buffers, alive for the whole test.
    let e = unsafe { p.ctx.post_crypto_mkey_configure(&mut p.qp[0], &mut mkey, &map, RR_RW_LW, &bad, &dek) }.unwrap_err();
    assert_eq!(e.error.errno, Some(libc::EINVAL));
    assert!(e.error.to_string().contains("data unit size 1000"), "{}", e.error);
    // SAFETY: the SGEs point into the model's registered buffers, alive for the whole test.
    let e = unsafe { p.ctx.post_crypto_mkey_configure(&mut p.qp[0], &mut mkey, &map, 0x20, &attr, &dek) }.unwrap_err();
    assert_eq!(e.error.errno, Some(libc::EINVAL));
    // A variant byte the device cannot update (the oracle context has no MKEY_UPDATE_TAG).
    let mut tagged = Mlx5CryptoMkey::detached(CRYPTO_MKEY | 0x07, 1);
    // SAFETY: the SGEs point into the model's registered buffers, alive for the whole test.
    let e = unsafe { p.ctx.post_crypto_mkey_configure(&mut p.qp[0], &mut tagged, &map, RR_RW_LW, &attr, &dek) }.unwrap_err();
    assert_eq!(e.error.errno, Some(libc::EOPNOTSUPP));
    assert_eq!(p.qp[0].sq_cur_post(), before, "nothing posted");
    assert!(p.ctx.uar().take().is_empty(), "no doorbell");
    assert_eq!(dev.lock().unwrap().umrs, 0);

    // Only RC QPs take a UMR.
    let caps = crypto_caps(8);
    let mut ud = create_pair_ex(QpType::Ud, caps, 15, true, None);
    // SAFETY: the SGEs point into the model's registered buffers, alive for the whole test.
    let e = unsafe { ud.ctx.post_crypto_mkey_configure(&mut ud.qp[0], &mut mkey, &map, RR_RW_LW, &attr, &dek) }.unwrap_err();
    assert_eq!(e.error.errno, Some(libc::EOPNOTSUPP));
    assert!(e.error.to_string().contains("RC"), "{}", e.error);
    // A QP with too little inline room for translation + BSF.
    let small = QpCaps { max_inline_data: 60, ..caps };
    let mut sp = create_pair(small, 15, true);
    // SAFETY: the SGEs point into the model's registered buffers, alive for the whole test.
    let e = unsafe { sp.ctx.post_crypto_mkey_configure(&mut sp.qp[0], &mut mkey, &map, RR_RW_LW, &attr, &dek) }.unwrap_err();
    assert_eq!(e.error.errno, Some(libc::ENOMEM));
}

#[test]
fn model_crypto_umr_wqes_wrap_at_the_sq_end() {
    for blueflame in [true, false] {
        let (mut p, dev) = crypto_pair(blueflame, 4);
        let sq_cnt = p.qp[0].geo.sq_wqe_cnt;
        assert!(p.qp[0].geo.sq_wqe_size >= 256, "RC WQEs admit the UMR");
        dev.lock().unwrap().mkeys.insert(CRYPTO_MKEY, None);
        let mut mkey = Mlx5CryptoMkey::detached(CRYPTO_MKEY, 1);
        let attr = perftest_crypto_attr(512);
        let plain: Vec<u8> = (0..1024u32).map(|i| (i ^ 0x5a) as u8).collect();
        let remote = vec![0u8; 1024];
        let sg = [Sge { addr: 0, length: 1024, lkey: CRYPTO_MKEY }];
        let mut wrapped_umr_seen = false;
        for iter in 0..(3 * sq_cnt) as u64 {
            let mut src = plain.clone();
            src[0] = iter as u8;
            let dek = Mlx5Dek::detached(0x100 + iter as u32);
            let map = Sge { addr: src.as_ptr() as u64, length: 1024, lkey: 1 };
            let at = p.qp[0].sq_cur_post() & (sq_cnt - 1);
            wrapped_umr_seen |= at + 4 > sq_cnt;
            // SAFETY: the SGEs point into the model's registered buffers, alive for the whole test.
            unsafe { p.ctx.post_crypto_mkey_configure(&mut p.qp[0], &mut mkey, &map, RR_RW_LW, &attr, &dek) }.unwrap();
            let mut w = SendWr::new(iter, WrOpcode::RdmaWrite, &sg);
            w.flags = SendFlags::SIGNALED;
            w.remote = uverbs::wr::RemoteAddr { addr: remote.as_ptr() as u64, rkey: RKEY };
            // SAFETY: the SGEs point into the model's registered buffers, alive for the whole test.
            unsafe { p.ctx.post_send(&mut p.qp[0], &[w]) }.unwrap();
            let wc = poll_all(&mut p, 0, 1)[0];
            assert_eq!((wc.wr_id, wc.status), (iter, WcStatus::Success));
            assert_eq!(rd(remote.as_ptr() as u64, 1024), expect_cipher(&attr, 0x100 + iter as u32, 0, &src), "iteration {iter}");
        }
        assert!(wrapped_umr_seen, "some UMR started within 4 blocks of the SQ end");
        let d = dev.lock().unwrap();
        assert!(d.umr_wrapped > 0, "the device read a UMR across the SQ end");
        assert_eq!((d.umrs, d.unfenced_after_umr), (3 * sq_cnt as usize, 0));
    }
}

#[test]
fn model_crypto_signaled_umr_completes_as_driver1() {
    // On a QP that signals every send (sq_sig_all), the UMR asks for a CQE too; libmlx5 reports
    // it as IBV_WC_DRIVER1 with the QP's wr_id (ours: 0), then the request through the mkey
    // completes as usual.
    for blueflame in [true, false] {
        let (mut p, dev) = crypto_device(create_pair_sig(QpType::Rc, crypto_caps(8), 15, blueflame, None, true));
        dev.lock().unwrap().mkeys.insert(CRYPTO_MKEY, None);
        let mut mkey = Mlx5CryptoMkey::detached(CRYPTO_MKEY, 1);
        let attr = perftest_crypto_attr(512);
        let plain: Vec<u8> = (0..1024u32).map(|i| (i * 3 + 1) as u8).collect();
        let mut remote = vec![0u8; 1024];
        let map = Sge { addr: plain.as_ptr() as u64, length: 1024, lkey: 1 };
        for round in 0..3u64 {
            // SAFETY: the SGEs point into the model's registered buffers, alive for the whole test.
            unsafe { p.ctx.post_crypto_mkey_configure(&mut p.qp[0], &mut mkey, &map, RR_RW_LW, &attr, &Mlx5Dek::detached(0x40)) }.unwrap();
            let umr_at = p.qp[0].sq_cur_post() - 4;
            let sq = p.qp[0].geo.sq_offset as u64 + p.qp[0].addrs().0;
            let ctrl = rd(sq + ((umr_at & (p.qp[0].geo.sq_wqe_cnt - 1)) as u64) * 64, 16);
            assert_eq!((ctrl[3], ctrl[11] & 0x08), (umr::OPCODE_UMR, 0x08), "the UMR asks for a CQE");
            let umr_wc = poll_all(&mut p, 0, 1)[0];
            assert_eq!(
                (umr_wc.wr_id, umr_wc.status, umr_wc.opcode, umr_wc.byte_len, umr_wc.qp_num),
                (0, WcStatus::Success, WcOpcode::Driver1, 0, 0x100),
                "round {round}"
            );
            let sg = [Sge { addr: 0, length: 1024, lkey: CRYPTO_MKEY }];
            let mut w = SendWr::new(0x600 + round, WrOpcode::RdmaWrite, &sg);
            w.remote = uverbs::wr::RemoteAddr { addr: remote.as_mut_ptr() as u64, rkey: RKEY };
            // SAFETY: the SGEs point into the model's registered buffers, alive for the whole test.
            unsafe { p.ctx.post_send(&mut p.qp[0], &[w]) }.unwrap();
            let wc = poll_all(&mut p, 0, 1)[0];
            assert_eq!((wc.wr_id, wc.status, wc.opcode), (0x600 + round, WcStatus::Success, WcOpcode::RdmaWrite));
            assert_eq!(remote, expect_cipher(&attr, 0x40, 0, &plain), "round {round}");
        }
        let d = dev.lock().unwrap();
        assert_eq!((d.umrs, d.crypto_requests, d.unfenced_after_umr), (3, 3, 0));
    }
}
