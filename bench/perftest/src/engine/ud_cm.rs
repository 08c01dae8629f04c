//! UD data QPs over rdma_cm (`-c UD -R`), the part after the SIDR exchange that perftest 6.06
//! does on the data QPs themselves (latency tests and `-b`): the client SENDs 4 bytes with its
//! QPN as immediate data (rdma_cm_send_ud_connection_parameters); the server, which pre-posted
//! one receive of GRH + 4 bytes before ACCEPT, builds its address handle back from that receive
//! (ibv_create_ah_from_wc: the GRH, or on RoCE v2 over IPv4 the IP header in its last 20 bytes)
//! and takes the QPN from the immediate data and the Q_Key from its own QP.

use std::time::{Duration, Instant};

use uverbs::provider::{AhAttr, Provider};
use uverbs::wr::{RecvWr, SendFlags, SendWr, Sge, WcOpcode, WcStatus, WorkCompletion, WrOpcode};

use super::verbs::{VerbsEndpoint, UD_GRH};
use super::{Endpoint, EngineError};

/// Bytes of the QPN message (perftest sends a `uint32_t`).
const QPN_MSG: u32 = 4;
/// wr_id of the handshake work requests (the engine's own start later).
const HANDSHAKE_WR_ID: u64 = 0;

/// The address back to the sender of a UD receive whose first 40 bytes (`grh`) the device
/// wrote: an IPv6 GRH, or 20 reserved bytes then an IPv4 header (RoCE v2 over IPv4).
pub fn ah_from_grh(grh: &[u8; 40], sgid_index: u8, port: u8, slid: u16, sl: u8) -> AhAttr {
    let v4 = &grh[20..40];
    let mut ah = AhAttr { sgid_index, hop_limit: 0xff, is_global: true, dlid: slid, sl, port_num: port, ..Default::default() };
    if v4[0] == 0x45 {
        // IPv4 header: TOS at 1, source address at 12..16.
        ah.dgid[10] = 0xff;
        ah.dgid[11] = 0xff;
        ah.dgid[12..16].copy_from_slice(&v4[12..16]);
        ah.traffic_class = v4[1];
    } else {
        let w = u32::from_be_bytes([grh[0], grh[1], grh[2], grh[3]]);
        ah.traffic_class = ((w >> 20) & 0xff) as u8;
        ah.flow_label = w & 0xf_ffff;
        ah.dgid.copy_from_slice(&grh[8..24]);
    }
    ah
}

fn wait_one<P: Provider>(ep: &mut VerbsEndpoint<P>, recv: bool, timeout: Duration, what: &str) -> Result<WorkCompletion, EngineError> {
    let deadline = Instant::now() + timeout;
    let mut wc = [WorkCompletion::default(); 1];
    loop {
        let n = if recv { ep.poll_recv(&mut wc)? } else { ep.poll_send(&mut wc)? };
        if n > 0 {
            let w = wc[0];
            if w.status != WcStatus::Success {
                return Err(EngineError::Completion { side: if recv { "receiver" } else { "sender" }, status: w.status, vendor_err: w.vendor_err, wr_id: w.wr_id, qp: 0 });
            }
            return Ok(w);
        }
        if Instant::now() >= deadline {
            return Err(EngineError::Stalled { waiting_for: what.to_string(), seconds: timeout.as_secs() });
        }
        if bench_core::signal::requested() {
            return Err(EngineError::Interrupted);
        }
        std::thread::sleep(Duration::from_millis(1));
    }
}

impl<P: Provider> VerbsEndpoint<P> {
    /// Client: SEND_WITH_IMM of 4 bytes to the server's QP, immediate data = our QPN.
    pub fn send_qpn_to_peer(&mut self, q: usize, timeout: Duration) -> Result<(), EngineError> {
        let ud = self.ud_dest(q).ok_or_else(|| EngineError::Verbs(format!("QP #{q} has no UD destination")))?;
        let sge = [Sge { addr: self.send_addr(q), length: QPN_MSG, lkey: self.lkey() }];
        let wr = SendWr {
            wr_id: HANDSHAKE_WR_ID,
            opcode: WrOpcode::SendWithImm,
            flags: SendFlags::SIGNALED,
            sgl: &sge,
            imm_data: self.qpn(q).to_be(),
            remote: Default::default(),
            compare_add: 0,
            swap: 0,
            ud: Some(ud),
            remote_srqn: 0,
            dci_stream: 0,
        };
        self.post_send(q, &[wr])?;
        let wc = wait_one(self, false, timeout, "the completion of the QPN message to the server")?;
        if wc.opcode != WcOpcode::Send {
            return Err(EngineError::Unexpected { detail: format!("{:?} instead of the SEND of our QPN", wc.opcode) });
        }
        Ok(())
    }

    /// Server: one receive for the client's QPN message (before ACCEPT).
    pub fn post_qpn_receive(&mut self, q: usize) -> Result<(), EngineError> {
        let sge = [Sge { addr: self.recv_post_addr(q), length: UD_GRH as u32 + QPN_MSG, lkey: self.lkey() }];
        self.post_recv(q, &[RecvWr { wr_id: HANDSHAKE_WR_ID, sgl: &sge }])
    }

    /// Server: wait for the client's QPN message and set QP `q`'s UD destination from it.
    pub fn receive_peer_qpn(&mut self, q: usize, own_qkey: u32, sgid_index: u8, port: u8, timeout: Duration) -> Result<(), EngineError> {
        let wc = wait_one(self, true, timeout, "the client's QPN message")?;
        if wc.opcode != WcOpcode::Recv || wc.wc_flags & uverbs::wr::wc_flags::WITH_IMM == 0 {
            return Err(EngineError::Unexpected { detail: format!("{:?} instead of the client's SEND with its QPN", wc.opcode) });
        }
        let delta = (self.recv_post_addr(q) - self.recv_addr(q)) as usize;
        let mut grh = [0u8; 40];
        for (i, b) in grh.iter_mut().enumerate() {
            *b = self.recv_area_byte(q, delta + i);
        }
        let ah = ah_from_grh(&grh, sgid_index, port, wc.slid, wc.sl);
        self.set_ud_peer(q, &ah, u32::from_be(wc.imm_data) & 0xff_ffff, own_qkey)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ah_from_ipv4_header() {
        // rxe: 20 zero bytes, then the IPv4 header of a RoCE v2 packet 10.99.0.2 → 10.99.0.1.
        let mut g = [0u8; 40];
        g[20] = 0x45;
        g[21] = 0x60; // TOS
        g[32..36].copy_from_slice(&[10, 99, 0, 2]);
        g[36..40].copy_from_slice(&[10, 99, 0, 1]);
        let ah = ah_from_grh(&g, 1, 1, 0, 0);
        assert_eq!(ah.dgid, [0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff, 10, 99, 0, 2]);
        assert_eq!((ah.traffic_class, ah.hop_limit, ah.sgid_index, ah.is_global, ah.port_num), (0x60, 0xff, 1, true, 1));
    }

    #[test]
    fn ah_from_ipv6_grh() {
        let mut g = [0u8; 40];
        // version 6, traffic class 0x12, flow label 0x34567
        g[..4].copy_from_slice(&((6u32 << 28) | (0x12 << 20) | 0x34567).to_be_bytes());
        let sgid = [0xfe, 0x80, 0, 0, 0, 0, 0, 0, 1, 2, 3, 4, 5, 6, 7, 8];
        g[8..24].copy_from_slice(&sgid);
        let ah = ah_from_grh(&g, 0, 1, 7, 3);
        assert_eq!(ah.dgid, sgid);
        assert_eq!((ah.traffic_class, ah.flow_label, ah.dlid, ah.sl), (0x12, 0x34567, 7, 3));
    }
}
