//! `-c DC`: the Dynamically Connected QPs of a perftest run (mlx5 only).
//!
//! perftest 6.06's layout: one-way BW tests give the client only DCIs (senders) and the server
//! only DCTs (targets, receiving through the SRQ); the latency tests and `-b` double the QPs,
//! the first half DCIs and the second half DCTs. A DCI is created with a send queue only; a DCT
//! with no queues, the SRQ and the receive CQ (perftest: the send CQ unless the test receives).
//! Each DCI send names the remote DCT number and presents perftest's `DC_KEY`, on the DCI
//! stream [`DciStreamCycle`] gives it.
//!
//! The split of the latency tests and `-b` is the XRC one ([`super::xrc::XrcPlan`], the
//! "split lanes" plan shared by both): DCI `i` sends to the peer's DCT `half + i` (perftest's
//! `ctx_connect` and `ctx_set_send_wqes`: `r_dctn[i] = rem_dest[num_qps/2 + i].qpn`), the
//! loops drive the DCIs as lanes and their receives arrive through the SRQ of the DCTs.

use std::sync::Arc;

use uverbs::objects::{Pd, Qp, QpInit};
use uverbs::dv::{DcInit, DciStreams};
use uverbs::provider::{Provider, QpCaps, QpType};
use uverbs::wr::SendWr;

use super::EngineError;

/// What the DC QPs need beyond [`super::verbs::VerbsSetup`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DcSetup {
    /// Per QP index: `true` = DCT, `false` = DCI.
    pub dct: Vec<bool>,
    pub access_key: u64,
    /// `--log_dci_streams` (0 = plain DCIs).
    pub log_dci_streams: u16,
    /// `--log_active_dci_streams`: the DCI sends rotate over 2^this streams (0 = stream 0).
    pub log_active_dci_streams: u16,
    /// Latency tests and `-b`: the split into DCI and DCT halves as lanes (`None`: one-way BW,
    /// every QP is its own lane).
    pub lanes: Option<super::xrc::XrcPlan>,
}

impl DcSetup {
    pub fn role(&self, q: usize) -> QpType {
        if self.dct.get(q).copied().unwrap_or(false) {
            QpType::Dct
        } else {
            QpType::Dci
        }
    }
    pub fn has_dct(&self) -> bool {
        self.dct.iter().any(|&d| d)
    }
    fn init(&self, role: QpType) -> Result<DcInit, EngineError> {
        let dci_streams = if role == QpType::Dci && self.log_dci_streams > 0 {
            let log = u8::try_from(self.log_dci_streams).map_err(|_| {
                EngineError::Verbs(format!(
                    "-c DC, --log_dci_streams {}: the driver takes at most 255 (log2 of the stream count)",
                    self.log_dci_streams
                ))
            })?;
            Some(DciStreams { log_num_concurent: log, log_num_errored: 0 })
        } else {
            None
        };
        Ok(DcInit { access_key: self.access_key, dci_streams })
    }
}

/// perftest 6.06's DCI stream rotation (`_new_post_send` with HAVE_DCS): each send of a DCI
/// goes on its current stream id, then the id steps to `(id + 1) & (2^log_active - 1)`; every
/// DCI starts at stream 0. With `--log_active_dci_streams 0` perftest masks with
/// `0xffffffff >> 32`, an undefined shift in C; rperftest keeps such DCIs on stream 0 (the
/// streams were not enabled at creation either).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DciStreamCycle {
    next: u32,
    mask: u32,
}

impl DciStreamCycle {
    pub fn new(log_active: u16) -> Self {
        let mask = match log_active {
            0 => 0,
            l if l >= 32 => u32::MAX,
            l => (1u32 << l) - 1,
        };
        DciStreamCycle { next: 0, mask }
    }
    /// Whether the sends rotate at all (`--log_active_dci_streams` > 0).
    pub fn active(&self) -> bool {
        self.mask != 0
    }
    /// The stream of the next send (the control segment holds 16 bits, as libmlx5's
    /// `uint16_t stream_id`), and step on.
    pub fn take(&mut self) -> u16 {
        let s = self.next as u16;
        self.next = self.next.wrapping_add(1) & self.mask;
        s
    }
}

/// The requests of one post with their DCI streams (perftest sets one per request, a post list
/// included), stepping `cycle` once per request.
pub fn on_streams<'a>(cycle: &mut DciStreamCycle, wrs: &[SendWr<'a>]) -> Vec<SendWr<'a>> {
    wrs.iter().map(|w| SendWr { dci_stream: cycle.take(), ..*w }).collect()
}

/// Create DC QP `q` (role from `dc`). `base` carries the RC caps, CQs and SRQ the run would
/// use; a DCT takes none of the caps (no queues of its own) and the SRQ, a DCI no receive side.
pub fn create_qp<P: Provider>(ext: super::dv::Ext<P>, pd: &Arc<Pd<P>>, dc: &DcSetup, q: usize, base: &QpInit<'_, P>) -> Result<Qp<P>, EngineError> {
    let role = dc.role(q);
    let caps = match role {
        QpType::Dct => QpCaps::default(),
        _ => QpCaps { max_recv_wr: 0, max_recv_sge: 0, ..base.caps },
    };
    let init = QpInit {
        qp_type: role,
        send_cq: base.send_cq,
        recv_cq: base.recv_cq,
        srq: if role == QpType::Dct { base.srq } else { None },
        caps,
        sq_sig_all: false,
    };
    if role == QpType::Dct && base.srq.is_none() {
        return Err(EngineError::Verbs("-c DC: a DCT needs the SRQ, which was not created".into()));
    }
    super::dv::new_dc_qp(ext, pd, &init, &dc.init(role)?).map_err(|e| {
        EngineError::Verbs(format!(
            "-c DC: {} #{q}: {e} (DC runs on mlx5 devices only; try -c RC)\nUnable to create QP.\nFailed to create QP.",
            role.name()
        ))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn roles_and_streams() {
        let d = DcSetup { dct: vec![false, true], access_key: 0xffee_ddcc, log_dci_streams: 3, log_active_dci_streams: 3, lanes: None };
        assert_eq!((d.role(0), d.role(1), d.role(9)), (QpType::Dci, QpType::Dct, QpType::Dci));
        assert!(d.has_dct());
        let i = d.init(QpType::Dci).unwrap();
        assert_eq!(i.dci_streams, Some(DciStreams { log_num_concurent: 3, log_num_errored: 0 }));
        assert_eq!(i.access_key, 0xffee_ddcc);
        assert_eq!(d.init(QpType::Dct).unwrap().dci_streams, None, "streams are a DCI attribute");
        let big = DcSetup { log_dci_streams: 300, ..d };
        assert!(big.init(QpType::Dci).is_err());
    }

    #[test]
    fn streams_rotate_as_perftest() {
        // --log_active_dci_streams 2: 0,1,2,3,0,1,...
        let mut c = DciStreamCycle::new(2);
        assert!(c.active());
        let got: Vec<u16> = (0..9).map(|_| c.take()).collect();
        assert_eq!(got, [0, 1, 2, 3, 0, 1, 2, 3, 0]);
        let mut one = DciStreamCycle::new(1);
        assert_eq!((0..4).map(|_| one.take()).collect::<Vec<_>>(), [0, 1, 0, 1]);
        // no streams: always 0
        let mut z = DciStreamCycle::new(0);
        assert!(!z.active());
        assert!((0..5).all(|_| z.take() == 0));
        // 2^16 and beyond: the 16-bit field takes the low bits, as htobe16 in libmlx5
        let mut big = DciStreamCycle::new(20);
        for _ in 0..0x1_0001 {
            big.take();
        }
        assert_eq!(big.take(), 1);
        let mut all = DciStreamCycle::new(40);
        assert_eq!((all.take(), all.take()), (0, 1));
    }

    #[test]
    fn a_post_list_steps_the_stream_per_request_and_the_next_post_goes_on() {
        use uverbs::wr::{Sge, WrOpcode};
        let sg = [Sge { addr: 0x1000, length: 8, lkey: 1 }];
        let wrs: Vec<SendWr<'_>> = (0..3).map(|i| SendWr::new(i, WrOpcode::RdmaWrite, &sg)).collect();
        let mut c = DciStreamCycle::new(2);
        let a = on_streams(&mut c, &wrs);
        let b = on_streams(&mut c, &wrs);
        let ids: Vec<u16> = a.iter().chain(b.iter()).map(|w| w.dci_stream).collect();
        assert_eq!(ids, [0, 1, 2, 3, 0, 1]);
        // everything else of the requests is kept
        assert!(a.iter().zip(&wrs).all(|(x, y)| x.wr_id == y.wr_id && x.opcode == y.opcode && x.sgl.as_ptr() == y.sgl.as_ptr()));
    }
}
