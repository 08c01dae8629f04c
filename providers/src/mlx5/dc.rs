//! Dynamically Connected transport (mlx5dv's DCI and DCT), as libmlx5 creates them.
//!
//! Both are `IB_UVERBS_QPT_DRIVER` QPs created through the ordinary CREATE_QP command (write or
//! ioctl); the role travels in the driver request (`struct mlx5_ib_create_qp`):
//!
//! - **DCI** (initiator): `flags = MLX5_QP_FLAG_TYPE_DCI` (+ `MLX5_QP_FLAG_DCI_STREAM` and the
//!   `dci_streams` log2 counts for DCI streams), a send queue sized like a UD SQ on top of RC's
//!   overhead (the datagram segment), no receive queue. Each send carries a datagram segment:
//!   the AH's address vector, the target DCT number with the extended-AV bit, the 64-bit DC key
//!   ([`super::wqe::dc_datagram_seg`]).
//! - **DCT** (target): `flags = MLX5_QP_FLAG_TYPE_DCT`, `access_key` (the union with
//!   `sq_buf_addr`), our user index; no buffer and no doorbell record (address fields 0). It
//!   needs an SRQ and a receive CQ; the kernel only builds the hardware object at INIT → RTR.
//!
//! Modify sequences (kernel `modify_dci_qp_is_ok` / `mlx5_ib_modify_dct`): DCI RESET → INIT
//! (pkey, port) → RTR (AV, path MTU) → RTS (RC's set); DCT RESET → INIT (+ access flags) → RTR
//! (+ min RNR timer) and stays there. See `uverbs::objects::{init_attr, rtr_attr, rts_attr}`.
//!
//! Not done (libmlx5 does): ECE options (0 here: the kernel then uses none), scatter-to-CQE on
//! DCT (we never ask for it on any QP).

use std::sync::atomic::Ordering;

use uverbs::error::{Error, Result};
use uverbs::dv::DcInit;
use uverbs::provider::{QpInitAttr, QpState, QpType, Udata};

use super::abi;
use super::geometry::{self, QpGeometry};
use super::uar::UarWriter;
use super::{Mlx5, Mlx5Qp, Mlx5QpPrep, UidxReservation, MAX_UIDX};

/// A DCT's modify to RTR: the driver data it sends and the DCT number the kernel answers with.
/// (DC's own, so that the generic QP code in `qp.rs` needs nothing of DC.)
impl<U: UarWriter> Mlx5<U> {
    pub(super) fn qp_modify_udata(&self, qp: &Mlx5Qp, state: Option<QpState>) -> Option<Udata> {
        (qp.params.qp_type == QpType::Dct && state == Some(QpState::Rtr)).then(|| Udata {
            req: vec![0u8; MODIFY_QP_REQ_LEN],
            resp_len: MODIFY_QP_RESP_LEN,
        })
    }

    pub(super) fn qp_modify_done(&self, qp: &mut Mlx5Qp, state: QpState, drv_resp: &[u8]) -> Result<Option<u32>> {
        if qp.params.qp_type != QpType::Dct || state != QpState::Rtr {
            return Ok(None);
        }
        let dctn = parse_modify_dct_resp(drv_resp)?;
        qp.params.qpn = dctn;
        // CQE version 0 looks QPs up by the CQE's QPN: from now on that is the DCT number.
        qp.shared.dctn.store(dctn & 0xff_ffff, Ordering::Release);
        Ok(Some(dctn))
    }
}

/// `MLX5_QP_FLAG_TYPE_DCT`.
pub const QP_FLAG_TYPE_DCT: u32 = 1 << 4;
/// `MLX5_QP_FLAG_TYPE_DCI`.
pub const QP_FLAG_TYPE_DCI: u32 = 1 << 5;
/// `MLX5_QP_FLAG_DCI_STREAM`.
pub const QP_FLAG_DCI_STREAM: u32 = 1 << 11;

/// The CREATE_QP driver request of a DC QP: `base` (addresses, counts, uidx) with the DC
/// flags, the DCT access key and the DCI stream counts filled in.
pub fn dc_qp_req(base: &abi::QpReq, qp_type: QpType, dc: &DcInit) -> Result<Vec<u8>> {
    let mut r = *base;
    match qp_type {
        QpType::Dct => {
            if dc.dci_streams.is_some() {
                return Err(Error::msg("mlx5 create DCT", "DCI streams are a DCI attribute"));
            }
            r.flags |= QP_FLAG_TYPE_DCT;
        }
        QpType::Dci => {
            r.flags |= QP_FLAG_TYPE_DCI;
            if dc.dci_streams.is_some() {
                r.flags |= QP_FLAG_DCI_STREAM;
            }
        }
        t => return Err(Error::msg("mlx5 create DC QP", format!("{} is not a DC type", t.name()))),
    }
    if qp_type == QpType::Dct {
        // `access_key` shares its slot with `sq_buf_addr` (a DCT has no send queue).
        r.sq_buf_addr = dc.access_key;
    }
    if let (QpType::Dci, Some(s)) = (qp_type, dc.dci_streams) {
        r.dci_log_num_concurent = s.log_num_concurent;
        r.dci_log_num_errored = s.log_num_errored;
    }
    Ok(abi::encode_qp_req(&r))
}

/// `struct mlx5_ib_modify_qp` size (the driver request of EX_MODIFY_QP; all zero here: no
/// ECE, no burst info).
pub const MODIFY_QP_REQ_LEN: usize = 16;
/// `struct mlx5_ib_modify_qp_resp` size.
pub const MODIFY_QP_RESP_LEN: usize = 16;
/// Offsets in `mlx5_ib_modify_qp_resp`.
pub const MODIFY_RESP_RESPONSE_LENGTH: usize = 0;
pub const MODIFY_RESP_DCTN: usize = 4;

/// The DCT number from the driver response of the modify to RTR (the hardware object, and so
/// the number, exists from then on). The kernel must have written at least up to `dctn`, as
/// libmlx5 requires.
pub fn parse_modify_dct_resp(b: &[u8]) -> Result<u32> {
    const WHAT: &str = "parse mlx5 MODIFY_QP response (DCT)";
    if b.len() < MODIFY_RESP_DCTN + 4 {
        return Err(Error::msg(WHAT, format!("{} bytes, need {}", b.len(), MODIFY_RESP_DCTN + 4)));
    }
    let len = u32::from_ne_bytes(b[MODIFY_RESP_RESPONSE_LENGTH..][..4].try_into().expect("4 bytes"));
    if (len as usize) < MODIFY_RESP_DCTN + 4 {
        return Err(Error::msg(WHAT, format!("the kernel wrote {len} bytes, no DCT number (an older kernel?)")));
    }
    let dctn = u32::from_ne_bytes(b[MODIFY_RESP_DCTN..][..4].try_into().expect("4 bytes"));
    if dctn == 0 || dctn > 0xff_ffff {
        return Err(Error::msg(WHAT, format!("implausible DCT number {dctn:#x}")));
    }
    Ok(dctn)
}

/// A DCT's geometry: no queues at all.
pub fn dct_geometry() -> QpGeometry {
    QpGeometry::default()
}

impl<U: UarWriter> Mlx5<U> {
    /// State and driver request for a DCI or DCT (the `prepare_dc_qp` of the provider).
    pub(super) fn dc_qp_request(&self, attr: &QpInitAttr, dc: &DcInit) -> Result<(Mlx5QpPrep, Vec<u8>)> {
        let (geo, has_buf) = match attr.qp_type {
            QpType::Dct => {
                if !attr.uses_srq {
                    return Err(Error::msg("mlx5 create DCT", "a DCT receives from an SRQ: create it with one"));
                }
                (dct_geometry(), false)
            }
            QpType::Dci => {
                if attr.caps.max_send_wr == 0 {
                    return Err(Error::msg("mlx5 create DCI", "a DCI needs a send queue (max_send_wr 0)"));
                }
                // A DCI only sends: no receive queue whatever the caps say.
                let mut a = *attr;
                a.caps.max_recv_wr = 0;
                a.caps.max_recv_sge = 0;
                (geometry::qp_geometry(&self.resp, &a)?, true)
            }
            t => {
                return Err(Error::msg("mlx5 create DC QP", format!("{} is not a DC type", t.name())));
            }
        };
        let (buf, db) = Mlx5QpPrep::alloc_bufs(&geo)?;
        let uidx = UidxReservation::take(&self.registry)?;
        let dc_key = if attr.qp_type == QpType::Dci { dc.access_key } else { 0 };
        let prep = Mlx5QpPrep { buf, db, geo, uidx, dc_key };
        let req_uidx = if self.resp.cqe_version == 1 { prep.uidx.uidx } else { MAX_UIDX as u32 };
        let req = dc_qp_req(&prep.request(has_buf, req_uidx), attr.qp_type, dc)?;
        Ok((prep, req))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use super::super::abi::qp_req;
    use uverbs::dv::DciStreams;

    fn base() -> abi::QpReq {
        abi::QpReq {
            buf_addr: 0x1000,
            db_addr: 0x2000,
            sq_wqe_count: 64,
            rq_wqe_count: 0,
            rq_wqe_shift: 0,
            flags: 0,
            uidx: 7,
            ..abi::QpReq::default()
        }
    }

    fn le32(b: &[u8], o: usize) -> u32 {
        u32::from_le_bytes(b[o..o + 4].try_into().unwrap())
    }

    #[test]
    fn dct_number_from_the_modify_response() {
        let mut b = [0u8; MODIFY_QP_RESP_LEN];
        b[0..4].copy_from_slice(&8u32.to_ne_bytes());
        b[4..8].copy_from_slice(&0x1a2bu32.to_ne_bytes());
        assert_eq!(parse_modify_dct_resp(&b).unwrap(), 0x1a2b);
        let mut short = b;
        short[0..4].copy_from_slice(&4u32.to_ne_bytes());
        assert!(parse_modify_dct_resp(&short).is_err(), "response_length without dctn");
        assert!(parse_modify_dct_resp(&b[..6]).is_err());
        let mut zero = b;
        zero[4..8].fill(0);
        assert!(parse_modify_dct_resp(&zero).is_err());
    }

    #[test]
    fn dct_request_carries_flag_and_access_key() {
        let dc = DcInit { access_key: 0x0102_0304_ffee_ddcc, dci_streams: None };
        let b = dc_qp_req(&base(), QpType::Dct, &dc).unwrap();
        assert_eq!(b.len(), abi::CREATE_QP_REQ_LEN);
        assert_eq!(le32(&b, qp_req::FLAGS), 0x10, "MLX5_QP_FLAG_TYPE_DCT");
        assert_eq!(&b[qp_req::SQ_BUF_ADDR..qp_req::SQ_BUF_ADDR + 8], &0x0102_0304_ffee_ddccu64.to_le_bytes());
        assert_eq!(le32(&b, qp_req::UIDX), 7);
        assert_eq!(&b[qp_req::DCI_STREAMS..], &[0, 0, 0, 0]);
        let with_streams = DcInit { dci_streams: Some(DciStreams { log_num_concurent: 2, log_num_errored: 0 }), ..dc };
        assert!(dc_qp_req(&base(), QpType::Dct, &with_streams).is_err());
    }

    #[test]
    fn dci_request_carries_flag_streams_and_no_key() {
        let plain = DcInit { access_key: 0xffee_ddcc, dci_streams: None };
        let b = dc_qp_req(&base(), QpType::Dci, &plain).unwrap();
        assert_eq!(le32(&b, qp_req::FLAGS), 0x20, "MLX5_QP_FLAG_TYPE_DCI");
        assert_eq!(&b[qp_req::SQ_BUF_ADDR..qp_req::SQ_BUF_ADDR + 8], &[0; 8], "the key goes in each send, not here");
        assert_eq!(le32(&b, qp_req::SQ_WQE_COUNT), 64);
        let s = DcInit { dci_streams: Some(DciStreams { log_num_concurent: 3, log_num_errored: 1 }), ..plain };
        let b = dc_qp_req(&base(), QpType::Dci, &s).unwrap();
        assert_eq!(le32(&b, qp_req::FLAGS), 0x20 | 0x800, "DCI + DCI_STREAM");
        assert_eq!(&b[qp_req::DCI_STREAMS..qp_req::DCI_STREAMS + 2], &[3, 1]);
        assert!(dc_qp_req(&base(), QpType::Rc, &plain).is_err());
    }
}
