//! One side's verbs objects for an RDMA test: PD, one CQ for both queues (optionally on a
//! completion channel), the QP, one registered buffer, and for UD the address handle. Posting
//! follows qperf: every request signalled, sends and writes inline when the message fits the
//! QP's max_inline_data, one SGE over the buffer (receives: the whole buffer, +40 for UD).

use std::sync::Arc;
use std::time::{Duration, Instant};

use uverbs::objects::{AccessFlags, Ah, CompChannel, Context, Cq, Mr, Pd, Qp, QpInit};
use uverbs::provider::{Provider, QpCaps, QpType};
use uverbs::wr::{RecvWr, RemoteAddr, SendFlags, SendWr, Sge, UdDest, WorkCompletion, WrOpcode};

use super::plan::{Atomic, Shape, Transport, QKEY, WRID_RDMA, WRID_RECV, WRID_SEND};

pub fn buffer_access() -> AccessFlags {
    AccessFlags::LOCAL_WRITE | AccessFlags::REMOTE_READ | AccessFlags::REMOTE_WRITE | AccessFlags::REMOTE_ATOMIC
}

/// QP access flags at INIT (non-CM): what the peer may do to our buffer.
pub fn qp_access(t: Transport) -> AccessFlags {
    match t {
        Transport::Rc => AccessFlags::REMOTE_READ | AccessFlags::REMOTE_WRITE | AccessFlags::REMOTE_ATOMIC,
        Transport::Uc => AccessFlags::REMOTE_WRITE,
        Transport::Ud => AccessFlags::empty(),
    }
}

pub fn qp_type(t: Transport) -> QpType {
    match t {
        Transport::Rc => QpType::Rc,
        Transport::Uc => QpType::Uc,
        Transport::Ud => QpType::Ud,
    }
}

/// Field order is drop order: the QP and AH before the CQ, channel, buffer and PD.
pub struct Rig<P: Provider> {
    pub qp: Qp<P>,
    pub ah: Option<Ah<P>>,
    pub cq: Cq<P>,
    chan: Option<CompChannel>,
    pub mr: Mr<P>,
    pub pd: Arc<Pd<P>>,
    pub transport: Transport,
    pub msg_size: u32,
    max_inline: u32,
    pub remote: RemoteAddr,
    pub ud: Option<UdDest>,
    armed: bool,
}

fn e(what: &str) -> impl Fn(uverbs::Error) -> String + '_ {
    move |err| format!("{what}: {err}")
}

impl<P: Provider> Rig<P> {
    /// `shape` as qperf asks; an empty queue is created with one slot (some providers refuse
    /// zero), which changes nothing for the test.
    pub fn new(ctx: &Arc<Context<P>>, t: Transport, shape: Shape, buf_size: u32, msg_size: u32, poll: bool) -> Result<Self, String> {
        let chan = if poll { None } else { Some(CompChannel::new(ctx).map_err(e("failed to create completion channel"))?) };
        let pd = Pd::new(ctx).map_err(e("failed to allocate protection domain"))?;
        let entries = (shape.send + shape.recv).max(1);
        let cq = Cq::new(ctx, entries, chan.as_ref(), 0).map_err(e("failed to create completion queue"))?;
        let mr = Mr::alloc(&pd, buf_size as usize, buffer_access(), false).map_err(e("failed to allocate memory region"))?;
        let caps = QpCaps {
            max_send_wr: shape.send.max(1),
            max_recv_wr: shape.recv.max(1),
            max_send_sge: 1,
            max_recv_sge: 1,
            max_inline_data: 0,
        };
        let init = QpInit { qp_type: qp_type(t), send_cq: &cq, recv_cq: &cq, srq: None, caps, sq_sig_all: false };
        let mut qp = Qp::new(&pd, &init).map_err(e("failed to create QP"))?;
        if t == Transport::Ud {
            qp.set_qkey(QKEY);
        }
        let max_inline = qp.caps().max_inline_data;
        Ok(Rig { qp, ah: None, cq, chan, mr, pd, transport: t, msg_size, max_inline, remote: RemoteAddr::default(), ud: None, armed: false })
    }

    fn sge(&self, off: u64, len: u32) -> Sge {
        Sge { addr: self.mr.addr() + off, length: len, lkey: self.mr.lkey() }
    }

    fn inline(&self) -> SendFlags {
        if self.msg_size <= self.max_inline {
            SendFlags::SIGNALED | SendFlags::INLINE
        } else {
            SendFlags::SIGNALED
        }
    }

    fn post_one(&mut self, wr: SendWr<'_>, what: &str) -> Result<(), String> {
        // SAFETY: every SGE built here lies inside `self.mr` (offset + length ≤ its size,
        // checked by the callers' sizes: msg_size ≤ buffer size, 8-byte atomic slots inside
        // it); the MR outlives the QP (field order), and the buffer is only read or written
        // through the MR's copy helpers, never through references the device could race.
        unsafe { self.qp.post_send(&[wr]) }.map_err(|err| format!("failed to post {what}: {err}"))
    }

    /// `n` SENDs of msg_size from the buffer's start.
    pub fn post_send(&mut self, n: u32) -> Result<(), String> {
        let sge = [self.sge(0, self.msg_size)];
        for _ in 0..n {
            let mut wr = SendWr::new(WRID_SEND, WrOpcode::Send, &sge);
            wr.flags = self.inline();
            wr.ud = self.ud;
            self.post_one(wr, "send")?;
        }
        Ok(())
    }

    /// `n` receives over the whole buffer.
    pub fn post_recv(&mut self, n: u32) -> Result<(), String> {
        let sge = [self.sge(0, self.mr.len() as u32)];
        for _ in 0..n {
            // SAFETY: the SGE is exactly the registered buffer, which outlives the QP (field
            // order); received bytes are read only through the MR's copy helpers.
            unsafe { self.qp.post_recv(&[RecvWr { wr_id: WRID_RECV, sgl: &sge }]) }
                .map_err(|err| format!("failed to post receive: {err}"))?;
        }
        Ok(())
    }

    /// `n` RDMA requests (WRITE, WRITE with immediate 0, READ) of msg_size to the peer's buffer.
    pub fn post_rdma(&mut self, op: WrOpcode, n: u32) -> Result<(), String> {
        let sge = [self.sge(0, self.msg_size)];
        let what = match op {
            WrOpcode::RdmaRead => "rdma read",
            WrOpcode::RdmaWrite => "rdma write",
            _ => "rdma write with immediate",
        };
        for _ in 0..n {
            let mut wr = SendWr::new(WRID_RDMA, op, &sge);
            wr.flags = if op == WrOpcode::RdmaRead { SendFlags::SIGNALED } else { self.inline() };
            wr.remote = self.remote;
            self.post_one(wr, what)?;
        }
        Ok(())
    }

    /// One 8-byte atomic at the peer's buffer, its result into our buffer at `off`.
    pub fn post_atomic(&mut self, a: Atomic, wr_id: u64, off: u64, compare_add: u64, swap: u64) -> Result<(), String> {
        if off + 8 > self.mr.len() as u64 {
            return Err(format!("atomic result slot at {off} is outside the {}-byte buffer", self.mr.len()));
        }
        let sge = [self.sge(off, 8)];
        let (op, what) = match a {
            Atomic::CompareSwap => (WrOpcode::AtomicCmpAndSwp, "compare and swap"),
            Atomic::FetchAdd => (WrOpcode::AtomicFetchAndAdd, "fetch and add"),
        };
        let mut wr = SendWr::new(wr_id, op, &sge);
        wr.flags = SendFlags::SIGNALED;
        wr.remote = self.remote;
        wr.compare_add = compare_add;
        wr.swap = swap;
        self.post_one(wr, what)
    }

    /// Completions within `slice`: busy polls in poll mode, else waits on the channel (the CQ
    /// re-armed after each event, and polled again after arming so none is missed).
    pub fn poll(&mut self, wc: &mut [WorkCompletion], slice: Duration) -> Result<usize, String> {
        let until = Instant::now() + slice;
        let mut spins = 0u32;
        loop {
            let n = self.cq.poll(wc).map_err(e("CQ poll failed"))?;
            if n > 0 {
                return Ok(n);
            }
            let now = Instant::now();
            if now >= until {
                return Ok(0);
            }
            match &self.chan {
                None => backoff(&mut spins),
                Some(chan) => {
                    if !self.armed {
                        self.cq.arm(false).map_err(e("failed to request CQ notification"))?;
                        self.armed = true;
                        continue;
                    }
                    if chan.wait(Some(until - now)).map_err(e("failed to get CQ event"))?.is_some() {
                        self.cq.event_received();
                        self.armed = false;
                    }
                }
            }
        }
    }

    pub fn byte(&self, off: usize) -> u8 {
        let mut b = [0u8; 1];
        let _ = self.mr.read_at(off, &mut b);
        b[0]
    }

    pub fn set_byte(&self, off: usize, v: u8) {
        let _ = self.mr.write_at(off, &[v]);
    }

    pub fn u64_at(&self, off: usize) -> u64 {
        let mut b = [0u8; 8];
        let _ = self.mr.read_at(off, &mut b);
        u64::from_ne_bytes(b)
    }

    /// Read the buffer (access_recv: touch what arrived).
    pub fn touch(&self) {
        let mut v = vec![0u8; self.msg_size as usize];
        if self.mr.read_at(0, &mut v).is_ok() {
            std::hint::black_box(v.iter().fold(0u8, |a, &b| a ^ b));
        }
    }
}

/// Spin a little, then sleep in growing steps (at most 1 ms): a busy poll must leave CPU to a
/// software device (rxe) and to the peer on the same host.
pub fn backoff(spins: &mut u32) {
    *spins = spins.saturating_add(1);
    if *spins < 500 {
        std::hint::spin_loop();
    } else {
        let us = (20u64 << ((*spins - 500) / 100).min(5)).min(1000);
        std::thread::sleep(Duration::from_micros(us));
    }
}
