//! Queue state of an EFA QP and CQ, without the memory: the SQ and RQ producer counters and
//! phases, the pool of request ids (`wrid_idx_pool`: completions come back out of order, so
//! each posted request borrows a free index and its completion returns it), queue geometry, and
//! the sub-CQ consumer with its phase bit. Every number the device hands back (a request id, an
//! entry's phase) is checked here before it indexes anything.

use super::cqe::{self, Cdesc, CdescError};
use super::hw;

/// Something a queue refuses or a completion that names nothing we posted.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RingError {
    /// All `wqe_cnt` request ids are out: the queue is full.
    Full { wqe_cnt: u32 },
    /// A completion's request id is beyond the queue or not outstanding.
    BadReqId { req_id: u16, wqe_cnt: u32 },
    /// Geometry the kernel or the caller gave that the rings cannot use.
    Geometry(&'static str),
}

impl std::fmt::Display for RingError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            RingError::Full { wqe_cnt } => {
                write!(f, "EFA queue full ({wqe_cnt} requests outstanding)")
            }
            RingError::BadReqId { req_id, wqe_cnt } => {
                write!(f, "EFA completion for request id {req_id}, which is not outstanding (queue of {wqe_cnt})")
            }
            RingError::Geometry(why) => write!(f, "EFA queue geometry: {why}"),
        }
    }
}

/// The request-id pool of one work queue (libefa's `wrid`, `wrid_idx_pool`).
#[derive(Clone, Debug)]
pub struct WridPool {
    wrid: Vec<u64>,
    free: Vec<u16>,
    /// How many of `free` are handed out: `free[..next]` are in use, `free[next..]` free.
    next: usize,
    outstanding: Vec<bool>,
}

impl WridPool {
    /// A pool of `wqe_cnt` ids; entry N starts as N (libefa's order, so ids match its bytes).
    pub fn new(wqe_cnt: u32) -> Result<Self, RingError> {
        if wqe_cnt > 1 << 16 {
            return Err(RingError::Geometry("more than 65536 requests on one queue"));
        }
        let n = wqe_cnt as usize;
        Ok(WridPool {
            wrid: vec![0; n],
            free: (0..n).map(|i| i as u16).collect(),
            next: 0,
            outstanding: vec![false; n],
        })
    }

    pub fn wqe_cnt(&self) -> u32 {
        self.wrid.len() as u32
    }

    pub fn outstanding(&self) -> usize {
        self.next
    }

    /// Borrow the next free id for `wr_id`.
    pub fn take(&mut self, wr_id: u64) -> Result<u16, RingError> {
        let Some(&id) = self.free.get(self.next) else {
            return Err(RingError::Full {
                wqe_cnt: self.wqe_cnt(),
            });
        };
        self.next += 1;
        self.wrid[usize::from(id)] = wr_id;
        self.outstanding[usize::from(id)] = true;
        Ok(id)
    }

    /// Give back the id a completion names (untrusted) and return its `wr_id`.
    pub fn complete(&mut self, req_id: u16) -> Result<u64, RingError> {
        let i = usize::from(req_id);
        if !self.outstanding.get(i).copied().unwrap_or(false) || self.next == 0 {
            return Err(RingError::BadReqId {
                req_id,
                wqe_cnt: self.wqe_cnt(),
            });
        }
        self.outstanding[i] = false;
        self.next -= 1;
        self.free[self.next] = req_id;
        Ok(self.wrid[i])
    }

    /// Back to the state after creation (a QP moved to RESET: libefa's `efa_qp_init_indices`).
    pub fn reset(&mut self) {
        let n = self.wrid.len();
        self.free = (0..n).map(|i| i as u16).collect();
        self.next = 0;
        self.outstanding.iter_mut().for_each(|o| *o = false);
    }
}

/// A work queue's producer side: counter, phase and ring mask (libefa's `efa_wq` pc/phase).
#[derive(Clone, Debug)]
pub struct WqState {
    pub pc: u16,
    pub phase: u8,
    pub desc_mask: u16,
    pub pool: WridPool,
}

impl WqState {
    /// `desc_cnt` ring slots (a power of two), `wqe_cnt` requests outstanding at most.
    pub fn new(desc_cnt: u32, wqe_cnt: u32) -> Result<Self, RingError> {
        if desc_cnt != 0 && (!desc_cnt.is_power_of_two() || desc_cnt > 1 << 16) {
            return Err(RingError::Geometry(
                "ring size not a power of two up to 65536",
            ));
        }
        Ok(WqState {
            pc: 0,
            phase: 0,
            desc_mask: desc_cnt.saturating_sub(1) as u16,
            pool: WridPool::new(wqe_cnt)?,
        })
    }

    /// The slot the next descriptor goes to.
    pub fn slot(&self) -> usize {
        usize::from(self.pc & self.desc_mask)
    }

    /// One descriptor written: move on, and flip the phase each time the ring wraps.
    pub fn advance(&mut self) {
        self.pc = self.pc.wrapping_add(1);
        if self.pc & self.desc_mask == 0 {
            self.phase = self.phase.wrapping_add(1);
        }
    }

    pub fn reset(&mut self) {
        self.pc = 0;
        self.phase = 0;
        self.pool.reset();
    }
}

fn pow2_at_least(n: u32) -> Option<u32> {
    n.max(1).checked_next_power_of_two()
}

/// QP geometry as libefa 44's `efa_setup_qp` computes it, and the ring sizes it asks the
/// kernel for (`efa_ibv_create_qp.sq_ring_size`, `rq_ring_size`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct QpGeometry {
    pub sq_wqe_cnt: u32,
    pub rq_desc_cnt: u32,
    pub rq_wqe_cnt: u32,
    pub sq_ring_size: u32,
    pub rq_ring_size: u32,
}

/// `min_sq_wr` comes from the context (`efa_ibv_alloc_ucontext_resp`). A QP without receives
/// (`max_recv_wr` 0) gets no RQ ring (libefa's arithmetic is undefined there).
pub fn qp_geometry(
    max_send_wr: u32,
    min_sq_wr: u32,
    max_recv_wr: u32,
    max_recv_sge: u32,
) -> Result<QpGeometry, RingError> {
    let too_big = RingError::Geometry("queue larger than 65536 entries");
    let sq_wqe_cnt = pow2_at_least(max_send_wr.max(min_sq_wr))
        .filter(|&n| n <= 1 << 16)
        .ok_or(too_big)?;
    let (rq_desc_cnt, rq_wqe_cnt) = if max_recv_wr == 0 {
        (0, 0)
    } else {
        if max_recv_sge == 0 {
            return Err(RingError::Geometry("receives need at least one SGE"));
        }
        let d = max_recv_sge
            .checked_mul(max_recv_wr)
            .and_then(pow2_at_least)
            .filter(|&n| n <= 1 << 16)
            .ok_or(too_big)?;
        (d, d / max_recv_sge)
    };
    Ok(QpGeometry {
        sq_wqe_cnt,
        rq_desc_cnt,
        rq_wqe_cnt,
        sq_ring_size: sq_wqe_cnt * hw::TX_WQE_SIZE as u32,
        rq_ring_size: rq_desc_cnt * hw::RX_DESC_SIZE as u32,
    })
}

/// SQ descriptors one doorbell may cover (libefa's `max_batch_wr`): `max_tx_batch` is in
/// 64-byte units (0: no limit), and with `min_sq_wr` set the device never takes a whole SQ.
pub fn max_batch_wr(max_tx_batch: u16, min_sq_wr: u16, sq_wqe_cnt: u32) -> u32 {
    let mut b = if max_tx_batch == 0 {
        u32::from(u16::MAX)
    } else {
        u32::from(max_tx_batch) * 64 / hw::TX_WQE_SIZE as u32
    };
    if min_sq_wr != 0 {
        b = b.min(sq_wqe_cnt.saturating_sub(1));
    }
    b.max(1)
}

/// Read access to a CQ buffer the device writes.
pub trait CqMem {
    /// The flags byte of the entry at `off`, with Acquire ordering: what the device wrote
    /// before it flipped the phase is visible to reads after this one (libefa's
    /// `udma_from_device_barrier` after the phase check).
    fn flags(&self, off: usize) -> u8;
    /// The first `len` bytes (at most [`hw::CDESC_EX_SIZE`]) of the entry at `off` (read after
    /// `flags` saw the entry's phase); the rest of the array is zero.
    fn entry(&self, off: usize, len: usize) -> [u8; hw::CDESC_EX_SIZE];
}

impl CqMem for [u8] {
    fn flags(&self, off: usize) -> u8 {
        self.get(off + hw::cdesc::FLAGS).copied().unwrap_or(0)
    }
    fn entry(&self, off: usize, len: usize) -> [u8; hw::CDESC_EX_SIZE] {
        let mut e = [0u8; hw::CDESC_EX_SIZE];
        let len = len.min(hw::CDESC_EX_SIZE);
        if let Some(s) = self.get(off..off + len) {
            e[..len].copy_from_slice(s);
        }
        e
    }
}

/// One sub-CQ's consumer (libefa's `efa_sub_cq`): its first phase is 1.
#[derive(Clone, Debug)]
pub struct SubCq {
    base: usize,
    consumed: u16,
    phase: u8,
    qmask: u16,
    cqe_size: usize,
    /// QPs whose send or receive queue completes here (libefa skips sub-CQs without one).
    pub users: u32,
}

/// A CQ's consumer: its sub-CQs polled round-robin, the consumer counter for the doorbell.
#[derive(Clone, Debug)]
pub struct CqState {
    subs: Vec<SubCq>,
    next_poll: usize,
    /// Completions taken (libefa's `cc`), what the CQ doorbell reports.
    pub cc: u16,
    /// Completion events seen (libefa's `cmd_sn`, bumped by `cq_event`).
    pub cmd_sn: u8,
}

impl CqState {
    /// `num_sub_cqs` rings of `entries` (the kernel's CQ size: a power of two) entries of
    /// `cqe_size` bytes, one after another in a buffer of `buf_size` bytes (checked: every
    /// value here comes from the kernel).
    pub fn new(
        num_sub_cqs: u16,
        entries: u32,
        cqe_size: usize,
        buf_size: usize,
    ) -> Result<Self, RingError> {
        if num_sub_cqs == 0 {
            return Err(RingError::Geometry("a CQ with no sub-CQ"));
        }
        if !entries.is_power_of_two() || entries > 1 << 16 {
            return Err(RingError::Geometry(
                "CQ size not a power of two up to 65536",
            ));
        }
        if cqe_size < hw::CDESC_SIZE {
            return Err(RingError::Geometry(
                "completion entries smaller than 16 bytes",
            ));
        }
        let sub_bytes = cqe_size * entries as usize;
        if sub_bytes
            .checked_mul(usize::from(num_sub_cqs))
            .is_none_or(|t| t > buf_size)
        {
            return Err(RingError::Geometry("CQ buffer smaller than its sub-CQs"));
        }
        let subs = (0..usize::from(num_sub_cqs))
            .map(|i| SubCq {
                base: i * sub_bytes,
                consumed: 0,
                phase: 1,
                qmask: (entries - 1) as u16,
                cqe_size,
                users: 0,
            })
            .collect();
        Ok(CqState {
            subs,
            next_poll: 0,
            cc: 0,
            cmd_sn: 0,
        })
    }

    pub fn num_sub_cqs(&self) -> usize {
        self.subs.len()
    }

    /// A QP's queue completes into sub-CQ `idx` (from the create-QP response; checked).
    pub fn attach(&mut self, idx: u16) -> Result<(), RingError> {
        let s = self
            .subs
            .get_mut(usize::from(idx))
            .ok_or(RingError::Geometry("sub-CQ index beyond the CQ"))?;
        s.users += 1;
        Ok(())
    }

    pub fn detach(&mut self, idx: u16) {
        if let Some(s) = self.subs.get_mut(usize::from(idx)) {
            s.users = s.users.saturating_sub(1);
        }
    }

    /// The next completion, if one is new (libefa's `efa_poll_sub_cqs`): the sub-CQs with
    /// users in turn from where the last poll stopped; a taken entry advances `cc`.
    pub fn next<M: CqMem + ?Sized>(&mut self, mem: &M) -> Option<Result<Cdesc, CdescError>> {
        let n = self.subs.len();
        for _ in 0..n {
            let i = self.next_poll;
            self.next_poll = (self.next_poll + 1) % n;
            let s = &mut self.subs[i];
            if s.users == 0 {
                continue;
            }
            let off = s.base + usize::from(s.consumed & s.qmask) * s.cqe_size;
            if mem.flags(off) & hw::cflags::PHASE != s.phase {
                continue;
            }
            s.consumed = s.consumed.wrapping_add(1);
            if s.consumed & s.qmask == 0 {
                s.phase ^= 1;
            }
            self.cc = self.cc.wrapping_add(1);
            // The extended entry's tail (an RDMA write's length bits) where the CQ has one.
            let len = s.cqe_size.min(hw::CDESC_EX_SIZE);
            return Some(cqe::parse(&mem.entry(off, len)[..len]));
        }
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pool_takes_in_order_and_returns_out_of_order() {
        let mut p = WridPool::new(4).unwrap();
        assert_eq!((p.take(10), p.take(11), p.take(12)), (Ok(0), Ok(1), Ok(2)));
        assert_eq!(p.complete(1), Ok(11));
        // The id given back is the next one handed out (libefa's stack of free ids).
        assert_eq!(p.take(13), Ok(1));
        assert_eq!(p.take(14), Ok(3));
        assert_eq!(p.take(15), Err(RingError::Full { wqe_cnt: 4 }));
        assert_eq!(
            p.complete(9),
            Err(RingError::BadReqId {
                req_id: 9,
                wqe_cnt: 4
            })
        );
        assert_eq!(p.complete(0), Ok(10));
        assert_eq!(
            p.complete(0),
            Err(RingError::BadReqId {
                req_id: 0,
                wqe_cnt: 4
            })
        );
        assert_eq!(p.outstanding(), 3);
    }

    #[test]
    fn wq_phase_flips_on_wrap() {
        let mut w = WqState::new(4, 4).unwrap();
        let mut seen = vec![];
        for _ in 0..9 {
            seen.push((w.slot(), w.phase & 1));
            w.advance();
        }
        assert_eq!(
            seen,
            [
                (0, 0),
                (1, 0),
                (2, 0),
                (3, 0),
                (0, 1),
                (1, 1),
                (2, 1),
                (3, 1),
                (0, 0)
            ]
        );
        assert!(WqState::new(3, 3).is_err());
    }

    #[test]
    fn geometry_like_libefa() {
        let g = qp_geometry(100, 0, 100, 1).unwrap();
        assert_eq!(
            (
                g.sq_wqe_cnt,
                g.rq_desc_cnt,
                g.rq_wqe_cnt,
                g.sq_ring_size,
                g.rq_ring_size
            ),
            (128, 128, 128, 8192, 2048)
        );
        let g = qp_geometry(2, 16, 10, 2).unwrap();
        assert_eq!((g.sq_wqe_cnt, g.rq_desc_cnt, g.rq_wqe_cnt), (16, 32, 16));
        assert_eq!(qp_geometry(1, 0, 0, 0).unwrap().rq_ring_size, 0);
        assert!(qp_geometry(1, 0, 1, 0).is_err());
        assert!(qp_geometry(u32::MAX, 0, 1, 1).is_err());
        assert_eq!(max_batch_wr(0, 0, 128), 65535);
        assert_eq!(max_batch_wr(64, 0, 128), 64);
        assert_eq!(max_batch_wr(64, 1, 32), 31);
    }

    fn put(buf: &mut [u8], off: usize, req: u16, flags: u8) {
        buf[off..off + 2].copy_from_slice(&req.to_le_bytes());
        buf[off + 3] = flags;
    }

    #[test]
    fn sub_cqs_round_robin_and_phase() {
        let mut buf = vec![0u8; 2 * 4 * 16];
        let mut cq = CqState::new(2, 4, 16, buf.len()).unwrap();
        assert!(cq.next(&buf[..]).is_none(), "no users: nothing polled");
        cq.attach(0).unwrap();
        cq.attach(1).unwrap();
        assert!(cq.attach(2).is_err());
        assert!(cq.next(&buf[..]).is_none(), "phase 0 entries are old");
        // A send completion (queue 1, phase 1) in each sub-CQ's first entry.
        put(&mut buf, 0, 7, 0b011);
        put(&mut buf, 64, 8, 0b011);
        let a = cq.next(&buf[..]).unwrap().unwrap();
        let b = cq.next(&buf[..]).unwrap().unwrap();
        assert_eq!((a.req_id, b.req_id, cq.cc), (7, 8, 2));
        assert!(cq.next(&buf[..]).is_none());
        // Fill sub-CQ 0 to its wrap: the fifth entry is new with phase 0.
        for i in 1..4 {
            put(&mut buf, i * 16, i as u16, 0b011);
        }
        for i in 1..4 {
            assert_eq!(cq.next(&buf[..]).unwrap().unwrap().req_id, i);
        }
        assert!(
            cq.next(&buf[..]).is_none(),
            "entry 0 still has phase 1: old after the wrap"
        );
        put(&mut buf, 0, 20, 0b010);
        assert_eq!(cq.next(&buf[..]).unwrap().unwrap().req_id, 20);
        // A garbage entry with the right phase is taken and reported as an error.
        put(&mut buf, 80, 0, 0b111);
        assert_eq!(cq.next(&buf[..]), Some(Err(CdescError::QueueType(3))));
    }

    #[test]
    fn cq_geometry_checked() {
        assert!(CqState::new(0, 4, 16, 64).is_err());
        assert!(CqState::new(1, 3, 16, 64).is_err());
        assert!(CqState::new(1, 4, 8, 64).is_err());
        assert!(CqState::new(2, 4, 16, 127).is_err());
        assert!(CqState::new(2, 4, 16, 128).is_ok());
    }
}
