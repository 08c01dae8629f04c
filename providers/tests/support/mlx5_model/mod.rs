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

pub mod crypto;

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use super::mlx5::*;
use providers::mlx5::uar::{RecordingUar, UarEvent};
use providers::mlx5::{abi, Mlx5, Mlx5Cq, Mlx5Qp, Mlx5Srq};
use uverbs::dv::{DcProvider, XrcSrqProvider};
use uverbs::provider::{
    AhAttr, AhCreated, CqCreated, Provider, QpCaps, QpCreated, QpInitAttr, QpType, SrqCreated,
};
use uverbs::wr::WorkCompletion;

pub const RKEY: u32 = 0x5151;

pub fn rd(addr: u64, len: usize) -> Vec<u8> {
    let mut v = vec![0u8; len];
    // SAFETY: test-owned memory (queue buffers, doorbell records, data buffers) at these addresses.
    unsafe { std::ptr::copy_nonoverlapping(addr as usize as *const u8, v.as_mut_ptr(), len) };
    v
}
pub fn wr(addr: u64, b: &[u8]) {
    // SAFETY: as above.
    unsafe { std::ptr::copy_nonoverlapping(b.as_ptr(), addr as usize as *mut u8, b.len()) };
}
pub fn be32(b: &[u8], o: usize) -> u32 {
    u32::from_be_bytes(b[o..o + 4].try_into().unwrap())
}
pub fn be64(b: &[u8], o: usize) -> u64 {
    u64::from_be_bytes(b[o..o + 8].try_into().unwrap())
}

#[derive(Clone, Copy)]
pub struct MCq {
    pub buf: u64,
    pub db: u64,
    pub ncqe: u32,
    pub pi: u32,
}

#[derive(Clone, Copy)]
pub struct MQp {
    pub qpn: u32,
    pub uidx: u32,
    pub buf: u64,
    pub db: u64,
    pub sq_cnt: u32,
    pub sq_off: u64,
    pub rq_cnt: u32,
    pub rq_shift: u32,
    pub sq_ci: u32,
    pub rq_ci: u32,
    pub cqn: u32,
    pub peer: u32,
    pub bf: usize,
    pub ud: bool,
    pub qkey: u32,
    pub srq: Option<u32>,
}

#[derive(Clone, Copy)]
pub struct MSrq {
    pub buf: u64,
    pub db: u64,
    pub shift: u32,
    pub cnt: u32,
    /// The next entry the device consumes (followed through `next_wqe_index`).
    pub head: u32,
    /// Entries consumed so far (compared with the doorbell record's counter).
    pub consumed: u32,
}

impl MQp {
    /// A QP the device learns from its CREATE_QP driver request `req` (buffer, doorbell record,
    /// SQ size, user index), with no receive queue, no peer and no SRQ until the caller sets them.
    pub fn from_req(req: &[u8], qpn: u32, cqn: u32, bf: usize) -> MQp {
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
    pub fn sq_slot(&self, i: u32) -> u64 {
        self.buf + self.sq_off + ((i & (self.sq_cnt - 1)) as u64) * 64
    }

    /// The WQE starting at basic block `idx`: its `ds * 16` bytes, its size in basic blocks and
    /// whether it runs past the SQ end.
    pub fn wqe(&self, idx: u32) -> (Vec<u8>, u32, bool) {
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
pub const PORT_GID: [u8; 16] = [0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff, 192, 168, 7, 1];
pub const GRH_LEN: usize = 40;

/// The 8-byte UAR stores of one write-combining bracket, as (offset, bytes).
pub type Stores = Vec<(usize, [u8; 8])>;

#[derive(Default)]
pub struct Hca {
    pub cqs: HashMap<u32, MCq>,
    pub qps: HashMap<u32, MQp>,
    pub srqs: HashMap<u32, MSrq>,
    /// UD datagrams dropped (Q_Key mismatch or no receive posted).
    pub ud_dropped: usize,
    pub pending: Stores,
    pub doorbells: usize,
    pub blueflames: usize,
    pub arms: usize,
    pub wrapped_wqes: usize,
    /// DC: the DCIs (by QPN), the DCTs' access keys (by DCT number), and the sends a DCT
    /// dropped for a wrong DC key.
    pub dcis: std::collections::HashSet<u32>,
    pub dct_keys: HashMap<u32, u64>,
    pub dc_key_violations: usize,
    /// DC: the stream id of each executed DCI WQE (control segment bytes 9..11), in order.
    pub dci_streams: Vec<u16>,
    /// XRC: the QPNs of XRC initiators (their WQEs carry the XRC segment), and the XRC SRQs
    /// that exist at the target: srqn → (CQN, the CQE's srqn/user-index field).
    pub xrc_ini: std::collections::HashSet<u32>,
    pub xrc_srqs: HashMap<u32, (u32, u32)>,
    /// XRC sends NAKed because they named no XRC SRQ.
    pub xrc_bad_srqn: usize,
}

impl Hca {
    pub fn on_event(&mut self, e: &UarEvent, half: usize) {
        if let Some((qpn, stores)) = self.uar_event(e, half) {
            self.doorbell(qpn, &stores, |h, ci| h.execute(qpn, ci));
        }
    }

    /// Collect one `mmio_wc_start .. mmio_flush_writes` bracket of UAR stores. A CQ arm
    /// (offset 0x20) is counted; an SQ doorbell returns its QP and stores.
    pub fn uar_event(&mut self, e: &UarEvent, half: usize) -> Option<(u32, Stores)> {
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
    pub fn doorbell(
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
    pub fn req_cqe(&mut self, q: &MQp, idx: u32, op: u8, byte_cnt: u32, synd: Option<u8>) {
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
    pub fn execute(&mut self, qpn: u32, idx: u32) -> u32 {
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
    pub fn receive(
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
    pub fn srq_take(&mut self, srqn: u32) -> Vec<u8> {
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
    pub fn receive_xrc(&mut self, srqn: u32, data: Option<&[u8]>, imm: Option<[u8; 4]>, len: u32, opcode: u8, src: u32) {
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

    pub fn push_cqe(&mut self, cqn: u32, mut c: [u8; 64], opcode: u8) {
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
pub fn scatter(segs: &[u8], d: &[u8], what: &str) {
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
pub fn recv_cqe(flags_rqpn: u32, uidx: u32, imm: Option<[u8; 4]>, len: u32, qpn: u32, counter: u32) -> [u8; 64] {
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

pub struct Pair {
    pub ctx: Mlx5<RecordingUar>,
    pub hca: Arc<Mutex<Hca>>,
    pub cq: [Mlx5Cq; 2],
    pub qp: [Mlx5Qp; 2],
    /// Side 1's SRQ, when the pair was created with one.
    pub srq: Option<Mlx5Srq>,
}

pub const QKEY: u32 = 0x1234_5678; // byte-asymmetric: an endianness slip cannot match

pub fn create_pair(caps: QpCaps, cq_entries: u32, blueflame: bool) -> Pair {
    create_pair_ex(QpType::Rc, caps, cq_entries, blueflame, None)
}

/// A QP pair on one CQ each. `srq_on_side1`: (max_wr, max_sge) of an SRQ that QP 1 receives
/// from (QP 0 keeps its own RQ).
pub fn create_pair_ex(
    qp_type: QpType,
    caps: QpCaps,
    cq_entries: u32,
    blueflame: bool,
    srq_on_side1: Option<(u32, u32)>,
) -> Pair {
    create_pair_sig(qp_type, caps, cq_entries, blueflame, srq_on_side1, false)
}

/// As [`create_pair_ex`]; `sq_sig_all`: both QPs signal every send request.
pub fn create_pair_sig(
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

pub fn poll_all(p: &mut Pair, side: usize, want: usize) -> Vec<WorkCompletion> {
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

pub struct Bufs {
    pub mem: Vec<Vec<u8>>,
}
impl Bufs {
    pub fn addr(&self, i: usize) -> u64 {
        self.mem[i].as_ptr() as u64
    }
}



/// An address handle naming the model port's GID (RoCE: the kernel answered the peer MAC).
pub fn port_ah(p: &Pair) -> providers::mlx5::Mlx5Ah {
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



pub const DC_KEY: u64 = 0x0000_0000_ffee_ddcc; // perftest's DC_KEY

/// A DC set-up in a [`Pair`]: `qp[0]` a DCI on CQ 0x400, `qp[1]` a DCT on CQ 0x401 receiving
/// from the SRQ in `srq` (7 entries, one SGE). `extra_dci_key`: also create a second DCI (QPN
/// 0x102) that presents this key, returned alongside.
pub fn create_dc_pair(blueflame: bool, extra_dci_key: Option<u64>) -> (Pair, Option<Mlx5Qp>) {
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



// ---- XRC ---------------------------------------------------------------------------------------

/// The model's XRC target QP number (kernel-owned: no user-space state, no doorbells).
pub const XRC_TGT_QPN: u32 = 0x300;

/// An XRC setup in one context: side 0 an XRC initiator on CQ 0, side 1 an XRC target QP and
/// an XRC SRQ (number 0x88) whose receives complete on CQ 1. Returns the pair (its `qp[1]` is
/// the target, `srq` the XRC SRQ) and the XRC SRQ number.
pub fn create_xrc(caps: QpCaps, srq_wr: u32, blueflame: bool) -> (Pair, u32) {
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
