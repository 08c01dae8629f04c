//! A small EFA device model for the provider's end-to-end tests: one context with its CQs and
//! QPs over heap mappings ([`HeapRegion`]), and a device that consumes what the provider posted
//! and answers as an EFA would. It plays the kernel too (the create answers: each QP sends into
//! sub-CQ 0 and receives into sub-CQ 1 of its CQ).
//!
//! The device, at each [`Fabric::run`]: for every QP, the TX descriptors from its consumer
//! counter up to the SQ doorbell (the phase bit each must carry checked), decoded here on their
//! own (not with the provider's code): a SEND gathers its payload (inline, or from the buffers
//! it names, in this process's memory) and goes to the QP its destination names, which must
//! have that QKEY and be reached through the one AH; it takes the receiver's next RX
//! descriptors up to the RQ doorbell (none: the sender gets RNR), scatters the payload into
//! them and writes a receive completion (length, source QP, AH, immediate); an RDMA READ copies
//! the remote buffer into the local one, an RDMA WRITE the local buffer into the remote one (with
//! an immediate it also takes the receiver's next receive, whose completion carries the
//! immediate, op type 2 and the length, its high bits in the 32-byte entry the provider asks for
//! on a device that can write). Each request gets its send completion, written with the
//! sub-CQ's phase (1 on the first pass, flipping each wrap). An RDMA READ is addressed as a
//! SEND (AH, destination QPN, QKEY) and, where the destination QP exposes memory
//! ([`Fabric::expose`], what the peer's rkey and address stand for in perftest's exchange), must
//! fall inside one exposed window under its rkey (else a bad-address status); local keys are not
//! checked.

use std::os::fd::OwnedFd;
use std::sync::Arc;

use providers::efa::mem::HeapRegion;
use providers::efa::{abi, DeviceCaps, Efa, EfaConfig, EfaCq, EfaQp};
use uverbs::provider::{
    AhAttr, AhCreated, CqCreated, DeviceDesc, Provider, QpCaps, QpCreated, QpInitAttr, QpType,
};

pub const QKEY: u32 = 0x1111_1111;
/// Where the fake kernel puts the doorbells in their pages.
const SQ_DB_OFF: usize = 0x10;
const RQ_DB_OFF: usize = 0x8;
const SEND_SUB: u16 = 0;
const RECV_SUB: u16 = 1;

/// Completion statuses the model gives (`enum efa_io_comp_status`).
pub const ST_OK: u8 = 0;
pub const ST_INVALID_AH: u8 = 4;
pub const ST_BAD_ADDRESS: u8 = 7;
pub const ST_BAD_DEST_QPN: u8 = 9;
pub const ST_RNR: u8 = 10;

/// The device's side of one QP.
struct DevQp {
    qpn: u16,
    qkey: u32,
    cq: usize,
    /// TX descriptors consumed (the SQ's consumer counter).
    sq_cc: u16,
    /// RX descriptors consumed.
    rq_cc: u16,
    /// Memory a remote READ may fetch: (rkey, address, length).
    windows: Vec<(u32, u64, usize)>,
}

pub struct Fabric {
    pub ctx: Efa<HeapRegion>,
    pub cqs: Vec<EfaCq<HeapRegion>>,
    pub qps: Vec<EfaQp<HeapRegion>>,
    pub ah: u32,
    dev: Vec<DevQp>,
    /// Completions written per CQ and sub-CQ.
    produced: Vec<[u32; 2]>,
    /// Each CQ's entry size (what the provider asked for in CREATE_CQ).
    cqe_size: Vec<usize>,
}

fn le16(b: &[u8], o: usize) -> u16 {
    u16::from_le_bytes([b[o], b[o + 1]])
}
fn le32(b: &[u8], o: usize) -> u32 {
    u32::from_le_bytes(b[o..o + 4].try_into().unwrap())
}
fn le64(b: &[u8], o: usize) -> u64 {
    u64::from(le32(b, o)) | u64::from(le32(b, o + 4)) << 32
}

/// The model device's caps (efadv's): RDMA read and write, 1 GiB requests.
pub fn caps() -> DeviceCaps {
    DeviceCaps {
        max_sq_wr: 4096,
        max_rq_wr: 4096,
        max_sq_sge: 2,
        max_rq_sge: 2,
        max_rdma_size: 1 << 30,
        device_caps: abi::CAPS_RDMA_READ | abi::CAPS_RDMA_WRITE,
    }
}

fn qp_resp(qpn: u32, rq_size: u32) -> Vec<u8> {
    let mut q = vec![0u8; abi::CREATE_QP_RESP_LEN];
    let base = u64::from(qpn) << 20;
    q[4..8].copy_from_slice(&(RQ_DB_OFF as u32).to_le_bytes());
    q[8..12].copy_from_slice(&(SQ_DB_OFF as u32).to_le_bytes());
    q[16..24].copy_from_slice(&(base | 1).to_le_bytes());
    q[24..32].copy_from_slice(&u64::from(rq_size).to_le_bytes());
    q[32..40].copy_from_slice(&(base | 2).to_le_bytes());
    q[40..48].copy_from_slice(&(base | 3).to_le_bytes());
    q[48..56].copy_from_slice(&(base | 4).to_le_bytes());
    q[56..58].copy_from_slice(&SEND_SUB.to_le_bytes());
    q[58..60].copy_from_slice(&RECV_SUB.to_le_bytes());
    q
}

impl Fabric {
    /// A context with `nqp` QPs of type `t`, each with its own CQ of `cq_entries` per sub-CQ.
    pub fn new(t: QpType, nqp: usize, qcaps: QpCaps, cq_entries: u32) -> Fabric {
        Fabric::with_caps(caps(), t, nqp, qcaps, cq_entries)
    }

    /// As [`Fabric::new`], on a device with the caps `dcaps`.
    pub fn with_caps(
        dcaps: DeviceCaps,
        t: QpType,
        nqp: usize,
        qcaps: QpCaps,
        cq_entries: u32,
    ) -> Fabric {
        let fd: OwnedFd = std::fs::File::open("/dev/null").unwrap().into();
        let desc = DeviceDesc {
            ibdev: "efa_model".into(),
            uverbs: "uverbs0".into(),
            driver_id: 17,
            driver_abi: 1,
        };
        let mut u = vec![0u8; abi::ALLOC_UCONTEXT_RESP_LEN];
        u[8] = 2; // sub-CQs per CQ
        u[10] = 32; // inline bytes
        let config = EfaConfig { caps: Some(dcaps) };
        let ctx = Efa::<HeapRegion>::new_context(Arc::new(fd), &desc, &u, &config).unwrap();
        let mut f = Fabric {
            ctx,
            cqs: vec![],
            qps: vec![],
            ah: 0,
            dev: vec![],
            produced: vec![],
            cqe_size: vec![],
        };
        for i in 0..nqp {
            let (prep, cqe, ud) = f.ctx.prepare_cq(cq_entries).unwrap();
            let esize = le32(&ud.req, abi::cq_cmd::CQ_ENTRY_SIZE) as usize;
            f.cqe_size.push(esize);
            let mut c = vec![0u8; abi::CREATE_CQ_RESP_LEN];
            c[8..16].copy_from_slice(&(0x100 + i as u64).to_le_bytes());
            c[16..24].copy_from_slice(&(2 * u64::from(cqe) * esize as u64).to_le_bytes());
            let cq = f
                .ctx
                .finish_cq(
                    prep,
                    &CqCreated {
                        handle: i as u32,
                        cqe,
                    },
                    &c,
                )
                .unwrap();
            f.cqs.push(cq);
            f.produced.push([0; 2]);
            let attr = QpInitAttr {
                qp_type: t,
                caps: qcaps,
                sq_sig_all: true,
                uses_srq: false,
            };
            let (prep, ud) = f.ctx.prepare_qp(&attr).unwrap();
            let qpn = 0x21 + i as u32;
            let rq_size = le32(&ud.req, abi::qp_cmd::RQ_RING_SIZE);
            let core = QpCreated {
                handle: qpn,
                qpn,
                caps: qcaps,
            };
            let qp = f
                .ctx
                .finish_qp(prep, &attr, &core, &qp_resp(qpn, rq_size))
                .unwrap();
            f.qps.push(qp);
            f.dev.push(DevQp {
                qpn: qpn as u16,
                qkey: QKEY,
                cq: i,
                sq_cc: 0,
                rq_cc: 0,
                windows: vec![],
            });
        }
        let (prep, _) = f.ctx.prepare_ah(&AhAttr::default()).unwrap();
        let ah = f
            .ctx
            .finish_ah(
                prep,
                &AhAttr::default(),
                &AhCreated { handle: 1 },
                &[0, 0, 0, 0, 7, 0, 0, 0],
            )
            .unwrap();
        f.ah = f.ctx.ah_number(&ah);
        f
    }

    pub fn qpn(&self, i: usize) -> u32 {
        self.qps[i].qpn
    }

    /// Let remote READs through QP `q` fetch `buf` under `rkey` (a registration the peer
    /// learnt in the exchange). The buffer must outlive the reads.
    pub fn expose(&mut self, q: usize, rkey: u32, buf: &[u8]) {
        self.dev[q]
            .windows
            .push((rkey, buf.as_ptr() as u64, buf.len()));
    }

    /// Write a completion into sub-CQ `sub` of CQ `c` with the sub-CQ's current phase.
    /// `e` is a 32-byte entry; only the CQ's entry size of it is written.
    fn complete(&mut self, c: usize, sub: usize, mut e: [u8; 32]) {
        let entries = self.cqs[c].entries;
        let esize = self.cqe_size[c];
        let n = self.produced[c][sub];
        self.produced[c][sub] += 1;
        let phase = ((n / entries + 1) & 1) as u8;
        e[3] |= phase;
        let off = (sub * entries as usize + (n % entries) as usize) * esize;
        self.cqs[c].buf().device_write(off, &e[..esize]);
    }

    fn send_cqe(&mut self, q: usize, req_id: u16, status: u8) {
        self.send_cqe_op(q, req_id, status, 0);
    }

    /// A send completion of op type `op` (rdma-core 46's flags bits 6:4).
    fn send_cqe_op(&mut self, q: usize, req_id: u16, status: u8, op: u8) {
        let mut e = [0u8; 32];
        e[0..2].copy_from_slice(&req_id.to_le_bytes());
        e[2] = status;
        e[3] = 1 << 1 | op << 4; // send queue
        e[4..6].copy_from_slice(&self.dev[q].qpn.to_le_bytes());
        self.complete(self.dev[q].cq, SEND_SUB as usize, e);
    }

    /// Process every descriptor posted so far, on every QP.
    pub fn run(&mut self) {
        for q in 0..self.qps.len() {
            loop {
                let db = le32(&self.qps[q].sq_doorbell().snapshot(), SQ_DB_OFF) as u16;
                if self.dev[q].sq_cc == db {
                    break;
                }
                let cnt = u32::from(self.qps[q].queues().sq.desc_mask) + 1;
                let cc = self.dev[q].sq_cc;
                let (llq, off) = self.qps[q].llq();
                let slot = off + (u32::from(cc) % cnt) as usize * 64;
                let w = llq.snapshot()[slot..slot + 64].to_vec();
                let want_phase = (u32::from(cc) / cnt) as u8 & 1;
                assert_eq!(
                    w[3] & 1,
                    want_phase,
                    "QP {q}: descriptor {cc} with the wrong phase"
                );
                assert_eq!(w[3] & 0b1_1100, 0b1_1100, "first, last and comp_req set");
                self.dev[q].sq_cc = cc.wrapping_add(1);
                self.execute(q, &w);
            }
        }
    }

    fn execute(&mut self, q: usize, w: &[u8]) {
        let req_id = le16(w, 0);
        let (op, has_imm, inline) = (w[2] & 0xf, w[2] & 0x10 != 0, w[2] & 0x20 != 0);
        let (dest, ah, qkey) = (le16(w, 4), u32::from(le16(w, 12)), le32(w, 16));
        if ah != self.ah {
            return self.send_cqe(q, req_id, ST_INVALID_AH);
        }
        let Some(d) = self
            .dev
            .iter()
            .position(|x| x.qpn == dest && x.qkey == qkey)
        else {
            return self.send_cqe(q, req_id, ST_BAD_DEST_QPN);
        };
        if op == 1 || op == 2 {
            return self.rdma(q, d, w);
        }
        let payload: Vec<u8> = if inline {
            w[32..32 + le16(w, 6) as usize].to_vec()
        } else {
            (0..le16(w, 6) as usize)
                .flat_map(|i| {
                    let b = 32 + 16 * i;
                    let (len, addr) = (le32(w, b) as usize, le64(w, b + 8));
                    // SAFETY: the test's own buffers, alive, `len` bytes.
                    unsafe { std::slice::from_raw_parts(addr as *const u8, len) }.to_vec()
                })
                .collect()
        };
        let rq_db = le32(&self.qps[d].rq_doorbell().unwrap().snapshot(), RQ_DB_OFF) as u16;
        if self.dev[d].rq_cc == rq_db {
            return self.send_cqe(q, req_id, ST_RNR);
        }
        let recv_id = self.scatter(d, &payload);
        let mut e = [0u8; 32];
        e[0..2].copy_from_slice(&recv_id.to_le_bytes());
        e[3] = 2 << 1 | if has_imm { 1 << 3 } else { 0 };
        e[4..6].copy_from_slice(&self.dev[d].qpn.to_le_bytes());
        e[6..8].copy_from_slice(&(payload.len() as u16).to_le_bytes());
        e[8..10].copy_from_slice(&(self.ah as u16).to_le_bytes());
        e[10..12].copy_from_slice(&self.dev[q].qpn.to_le_bytes());
        e[12..16].copy_from_slice(&w[8..12]);
        self.complete(self.dev[d].cq, RECV_SUB as usize, e);
        self.send_cqe(q, req_id, ST_OK);
    }

    /// An RDMA READ (op 1: the remote buffer into the local one) or WRITE (op 2: the local
    /// into the remote; with an immediate, also a receive completion at the destination), from
    /// QP `q` to QP `d`.
    fn rdma(&mut self, q: usize, d: usize, w: &[u8]) {
        let (req_id, op, has_imm) = (le16(w, 0), w[2] & 0xf, w[2] & 0x10 != 0);
        let (len, raddr, rkey) = (le32(w, 32) as usize, le64(w, 40), le32(w, 36));
        let laddr = le64(w, 56);
        assert_eq!(le32(w, 48) as usize, len, "RDMA: remote and local lengths");
        let inside = |&(k, a, n): &(u32, u64, usize)| {
            k == rkey && raddr >= a && raddr + len as u64 <= a + n as u64
        };
        let windows = &self.dev[d].windows;
        if !windows.is_empty() && !windows.iter().any(inside) {
            return self.send_cqe_op(q, req_id, ST_BAD_ADDRESS, op);
        }
        if op == 1 {
            // SAFETY: the test names buffers of its own, alive and at least `len` bytes long
            // (inside an exposed window where the destination has any).
            unsafe { std::ptr::copy(raddr as *const u8, laddr as *mut u8, len) };
            return self.send_cqe_op(q, req_id, ST_OK, op);
        }
        let rq_db = le32(&self.qps[d].rq_doorbell().unwrap().snapshot(), RQ_DB_OFF) as u16;
        if has_imm && self.dev[d].rq_cc == rq_db {
            return self.send_cqe_op(q, req_id, ST_RNR, op);
        }
        // SAFETY: as for a read, the other way.
        unsafe { std::ptr::copy(laddr as *const u8, raddr as *mut u8, len) };
        if has_imm {
            // The write takes the receive whole (its buffers stay untouched).
            let recv_id = self.take_recv(d);
            let mut e = [0u8; 32];
            e[0..2].copy_from_slice(&recv_id.to_le_bytes());
            e[3] = 2 << 1 | 1 << 3 | 2 << 4;
            e[4..6].copy_from_slice(&self.dev[d].qpn.to_le_bytes());
            e[6..8].copy_from_slice(&(len as u16).to_le_bytes());
            e[8..10].copy_from_slice(&(self.ah as u16).to_le_bytes());
            e[10..12].copy_from_slice(&self.dev[q].qpn.to_le_bytes());
            e[12..16].copy_from_slice(&w[8..12]);
            e[16..18].copy_from_slice(&((len >> 16) as u16).to_le_bytes());
            self.complete(self.dev[d].cq, RECV_SUB as usize, e);
        }
        self.send_cqe_op(q, req_id, ST_OK, op);
    }

    /// Consume QP `d`'s next receive without writing into it; returns its request id.
    fn take_recv(&mut self, d: usize) -> u16 {
        let ring = self.qps[d].rq_ring().unwrap().snapshot();
        let cnt = ring.len() / 16;
        let mut req_id = None;
        loop {
            let o = (self.dev[d].rq_cc as usize % cnt) * 16;
            let r = &ring[o..o + 16];
            self.dev[d].rq_cc = self.dev[d].rq_cc.wrapping_add(1);
            req_id.get_or_insert(le16(r, 8));
            if le32(r, 12) & (1 << 31) != 0 {
                return req_id.unwrap_or(0);
            }
        }
    }

    /// Take QP `d`'s next receive (its RX descriptors, first to last) and scatter `payload`
    /// into it; returns the receive's request id.
    fn scatter(&mut self, d: usize, payload: &[u8]) -> u16 {
        let ring = self.qps[d].rq_ring().unwrap().snapshot();
        let cnt = ring.len() / 16;
        let mut at = 0;
        let mut first = true;
        let mut req_id = 0;
        loop {
            let o = (self.dev[d].rq_cc as usize % cnt) * 16;
            let r = &ring[o..o + 16];
            self.dev[d].rq_cc = self.dev[d].rq_cc.wrapping_add(1);
            let ctrl = le32(r, 12);
            assert_eq!(ctrl & (1 << 30) != 0, first, "RX descriptor's first bit");
            if first {
                req_id = le16(r, 8);
            }
            first = false;
            let (addr, len) = (le64(r, 0), le16(r, 10) as usize);
            let n = len.min(payload.len() - at);
            // SAFETY: the test's receive buffers, alive, at least `len` bytes.
            unsafe { std::ptr::copy(payload[at..].as_ptr(), addr as *mut u8, n) };
            at += n;
            if ctrl & (1 << 31) != 0 {
                break;
            }
        }
        assert_eq!(at, payload.len(), "the receive held the whole message");
        req_id
    }
}
