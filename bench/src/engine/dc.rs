//! `-c DC`: the Dynamically Connected QPs of a perftest run (mlx5 only).
//!
//! perftest 6.06's layout: one-way BW tests give the client only DCIs (senders) and the server
//! only DCTs (targets, receiving through the SRQ); the latency tests and `-b` double the QPs,
//! the first half DCIs and the second half DCTs. A DCI is created with a send queue only; a DCT
//! with no queues, the SRQ and the receive CQ (perftest: the send CQ unless the test receives).
//! Each DCI send names the remote DCT number and presents perftest's `DC_KEY`.

use std::sync::Arc;

use uverbs::objects::{Cq, Pd, Qp, QpInit, Srq};
use uverbs::provider::{DcInit, DciStreams, Provider, QpCaps, QpType};

use super::EngineError;

/// What the DC QPs need beyond [`super::verbs::VerbsSetup`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DcSetup {
    /// Per QP index: `true` = DCT, `false` = DCI.
    pub dct: Vec<bool>,
    pub access_key: u64,
    /// `--log_dci_streams` (0 = plain DCIs).
    pub log_dci_streams: u16,
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

/// Create DC QP `q` (role from `dc`). `caps` are the RC caps the run would use; a DCT takes
/// none of them (no queues of its own), a DCI no receive side.
pub fn create_qp<P: Provider>(
    pd: &Arc<Pd<P>>,
    dc: &DcSetup,
    q: usize,
    caps: QpCaps,
    send_cq: &Cq<P>,
    recv_cq: &Cq<P>,
    srq: Option<&Srq<P>>,
) -> Result<Qp<P>, EngineError> {
    let role = dc.role(q);
    let caps = match role {
        QpType::Dct => QpCaps::default(),
        _ => QpCaps { max_recv_wr: 0, max_recv_sge: 0, ..caps },
    };
    let init = QpInit {
        qp_type: role,
        send_cq,
        recv_cq,
        srq: if role == QpType::Dct { srq } else { None },
        caps,
        sq_sig_all: false,
    };
    if role == QpType::Dct && srq.is_none() {
        return Err(EngineError::Verbs("-c DC: a DCT needs the SRQ, which was not created".into()));
    }
    Qp::new_dc(pd, &init, &dc.init(role)?).map_err(|e| {
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
        let d = DcSetup { dct: vec![false, true], access_key: 0xffee_ddcc, log_dci_streams: 3 };
        assert_eq!((d.role(0), d.role(1), d.role(9)), (QpType::Dci, QpType::Dct, QpType::Dci));
        assert!(d.has_dct());
        let i = d.init(QpType::Dci).unwrap();
        assert_eq!(i.dci_streams, Some(DciStreams { log_num_concurent: 3, log_num_errored: 0 }));
        assert_eq!(i.access_key, 0xffee_ddcc);
        assert_eq!(d.init(QpType::Dct).unwrap().dci_streams, None, "streams are a DCI attribute");
        let big = DcSetup { log_dci_streams: 300, ..d };
        assert!(big.init(QpType::Dci).is_err());
    }
}
