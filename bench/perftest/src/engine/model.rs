//! A model of "the rest of the world" for the engine's tests: the device completes our work
//! requests a few at a time, and a scripted peer answers ping-pongs.

use std::collections::VecDeque;
use std::time::Duration;

use uverbs::wr::{RecvWr, SendFlags, SendWr, UdDest, WcOpcode, WcStatus, WorkCompletion};

use super::{CqKind, Endpoint, EngineError};

#[derive(Clone, Copy, Debug)]
pub enum ModelSide {
    /// We send; the device completes what we post.
    Sender,
    /// The peer sends `incoming` messages into our posted receives.
    Receiver { incoming: u64 },
    /// A ping-pong peer. `server_first`: write_lat (the server writes first, over memory);
    /// otherwise send_lat (the client sends first, over receives).
    PingPong { server_first: bool, role_is_server: bool },
}

#[derive(Default)]
struct QpModel {
    posted: u64,
    completed: u64,
    signaled: u64,
    post_calls: u64,
    max_outstanding: u64,
    remote_addrs: Vec<u64>,
    /// The XRC SRQ number each posted send named.
    remote_srqns: Vec<u32>,
    /// The datagram address (UD, SRD) each posted send named.
    ud_dests: Vec<Option<UdDest>>,
    /// (wr_id, signaled) of posted, not yet completed sends.
    inflight: VecDeque<(u64, bool, WcOpcode)>,
    recvs_posted: u64,
    recv_queue: VecDeque<u64>,
}

pub struct Model {
    side: ModelSide,
    qps: Vec<QpModel>,
    send_wcs: VecDeque<WorkCompletion>,
    recv_wcs: VecDeque<WorkCompletion>,
    fail_at: Option<(u64, WcStatus)>,
    silent: bool,
    incoming_left: u64,
    recv_area: Vec<u8>,
    send_area: Vec<u8>,
    peer_sent: u64,
    /// The ping-pong peer sends at most this many messages.
    peer_limit: Option<u64>,
}

const PER_POLL: usize = 7;

impl Model {
    pub fn new(side: ModelSide, nq: usize) -> Self {
        let mut m = Model {
            side,
            qps: (0..nq).map(|_| QpModel::default()).collect(),
            send_wcs: VecDeque::new(),
            recv_wcs: VecDeque::new(),
            fail_at: None,
            silent: false,
            incoming_left: 0,
            recv_area: vec![0; 1 << 16],
            send_area: vec![0; 1 << 16],
            peer_sent: 0,
            peer_limit: None,
        };
        if let ModelSide::Receiver { incoming } = side {
            m.incoming_left = incoming;
        }
        if matches!(side, ModelSide::PingPong { server_first: true, .. }) && m.peer_first() {
            m.peer_send();
        }
        m
    }
    pub fn local_addr(&self, q: usize) -> u64 {
        0x10_0000 + (q as u64) * 0x1_0000
    }
    pub fn remote_addr(&self, q: usize) -> u64 {
        0x90_0000 + (q as u64) * 0x1_0000
    }
    pub fn fail_after(&mut self, n: u64, status: WcStatus) {
        self.fail_at = Some((n, status));
    }
    /// The peer (and the device) stop answering from now on; anything the peer already "sent"
    /// is forgotten.
    pub fn go_silent(&mut self) {
        self.silent = true;
        self.peer_sent = 0;
        self.recv_area.iter_mut().for_each(|b| *b = 0);
        self.recv_wcs.clear();
    }
    pub fn posted(&self, q: usize) -> u64 {
        self.qps[q].posted
    }
    pub fn signaled(&self, q: usize) -> u64 {
        self.qps[q].signaled
    }
    pub fn post_calls(&self, q: usize) -> u64 {
        self.qps[q].post_calls
    }
    pub fn max_outstanding(&self, q: usize) -> u64 {
        self.qps[q].max_outstanding
    }
    pub fn remote_addrs(&self, q: usize) -> &[u64] {
        &self.qps[q].remote_addrs
    }
    pub fn remote_srqns(&self, q: usize) -> &[u32] {
        &self.qps[q].remote_srqns
    }
    pub fn ud_dests(&self, q: usize) -> &[Option<UdDest>] {
        &self.qps[q].ud_dests
    }
    pub fn recvs_posted(&self, q: usize) -> u64 {
        self.qps[q].recvs_posted
    }
    /// Receives posted and not yet consumed by a message.
    pub fn recvs_outstanding(&self, q: usize) -> usize {
        self.qps[q].recv_queue.len()
    }

    fn peer_first(&self) -> bool {
        match self.side {
            ModelSide::PingPong { server_first, role_is_server } => server_first != role_is_server,
            _ => false,
        }
    }

    /// The ping-pong peer starts over, as it does for each message size of `-a`.
    pub fn next_size(&mut self) {
        self.peer_sent = 0;
    }

    /// The ping-pong peer stops after sending `n` messages (its QP stays up).
    pub fn peer_stops_after(&mut self, n: u64) {
        self.peer_limit = Some(n);
    }

    /// The ping-pong peer sends its next message.
    fn peer_send(&mut self) {
        if self.silent || self.peer_limit.is_some_and(|n| self.peer_sent >= n) {
            return;
        }
        self.peer_sent += 1;
        match self.side {
            ModelSide::PingPong { server_first: true, .. } => {
                // write_lat: the peer's write lands in our receive area; only the last byte matters
                self.recv_area[1] = self.peer_sent as u8; // size 2 in the tests: last byte is index 1
            }
            _ => {
                if let Some(wr_id) = self.qps[0].recv_queue.pop_front() {
                    self.recv_wcs.push_back(WorkCompletion {
                        wr_id,
                        opcode: WcOpcode::Recv,
                        byte_len: 2,
                        ..Default::default()
                    });
                }
            }
        }
    }

    fn progress(&mut self) {
        if self.silent {
            return;
        }
        if matches!(self.side, ModelSide::PingPong { .. }) && self.peer_sent == 0 && self.peer_first() {
            self.peer_send();
        }
        for q in 0..self.qps.len() {
            for _ in 0..PER_POLL {
                let Some((wr_id, signaled, op)) = self.qps[q].inflight.pop_front() else { break };
                let n = self.qps[q].completed;
                self.qps[q].completed += 1;
                let status = match self.fail_at {
                    Some((at, st)) if at == n => st,
                    _ => WcStatus::Success,
                };
                if signaled || status != WcStatus::Success {
                    self.send_wcs.push_back(WorkCompletion { wr_id, status, opcode: op, ..Default::default() });
                }
            }
        }
        if let ModelSide::Receiver { .. } = self.side {
            for q in 0..self.qps.len() {
                for _ in 0..PER_POLL {
                    if self.incoming_left == 0 {
                        break;
                    }
                    let Some(wr_id) = self.qps[q].recv_queue.pop_front() else { break };
                    self.incoming_left -= 1;
                    self.recv_wcs.push_back(WorkCompletion { wr_id, opcode: WcOpcode::Recv, ..Default::default() });
                }
            }
        }
    }
}

fn drain(q: &mut VecDeque<WorkCompletion>, out: &mut [WorkCompletion]) -> usize {
    let mut n = 0;
    while n < out.len() {
        match q.pop_front() {
            Some(wc) => {
                out[n] = wc;
                n += 1;
            }
            None => break,
        }
    }
    n
}

impl Endpoint for Model {
    fn num_qps(&self) -> usize {
        self.qps.len()
    }
    fn post_send(&mut self, qp: usize, wrs: &[SendWr<'_>]) -> Result<(), EngineError> {
        let m = &mut self.qps[qp];
        m.post_calls += 1;
        for wr in wrs {
            m.posted += 1;
            let sig = wr.flags.contains(SendFlags::SIGNALED);
            if sig {
                m.signaled += 1;
            }
            m.remote_addrs.push(wr.remote.addr);
            m.remote_srqns.push(wr.remote_srqn);
            m.ud_dests.push(wr.ud);
            m.inflight.push_back((wr.wr_id, sig, WcOpcode::for_send(wr.opcode)));
            m.max_outstanding = m.max_outstanding.max(m.posted - m.completed);
        }
        if matches!(self.side, ModelSide::PingPong { .. }) {
            self.peer_send();
        }
        Ok(())
    }
    fn post_recv(&mut self, qp: usize, wrs: &[RecvWr<'_>]) -> Result<(), EngineError> {
        for wr in wrs {
            self.qps[qp].recvs_posted += 1;
            self.qps[qp].recv_queue.push_back(wr.wr_id);
        }
        Ok(())
    }
    fn poll_send(&mut self, out: &mut [WorkCompletion]) -> Result<usize, EngineError> {
        self.progress();
        Ok(drain(&mut self.send_wcs, out))
    }
    fn poll_recv(&mut self, out: &mut [WorkCompletion]) -> Result<usize, EngineError> {
        self.progress();
        Ok(drain(&mut self.recv_wcs, out))
    }
    fn wait_cq_event(&mut self, _which: CqKind, _timeout: Duration) -> Result<bool, EngineError> {
        Ok(!self.silent)
    }
    fn recv_area_byte(&self, _qp: usize, offset: usize) -> u8 {
        self.recv_area.get(offset).copied().unwrap_or(0)
    }
    fn set_send_area_byte(&mut self, _qp: usize, offset: usize, value: u8) {
        if let Some(b) = self.send_area.get_mut(offset) {
            *b = value;
        }
    }
}
