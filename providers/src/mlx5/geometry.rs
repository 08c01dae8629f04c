//! Queue sizing: pure arithmetic from the requested capacities and the device limits to the ring
//! sizes we allocate and tell the kernel (which recomputes and checks the buffer size).
//! Same rules as libmlx5, so a QP gets the same geometry under both.

use uverbs::error::{Error, Result};
use uverbs::provider::{QpInitAttr, QpType};

use super::abi::UctxResp;
use super::wqe::WQEBB;

/// Send-WQE overhead in bytes before the scatter list. RC/UC reserve room for the largest
/// segment set libmlx5 can build on them (ctrl + UMR ctrl + mkey context + 64 bytes of KLMs, for
/// memory-window binds), so the SQ geometry is identical to libmlx5's; UD adds the datagram
/// segment to the control segment.
pub fn sq_overhead(t: QpType) -> u32 {
    match t {
        QpType::Rc | QpType::Uc => 16 + 48 + 64 + 64,
        QpType::Ud => 16 + 48,
        // libmlx5 _sq_overhead for IBV_QPT_DRIVER/DCI: RC's largest set plus the datagram
        // segment (the AV with the DCT number and DC key).
        QpType::Dci => 16 + 48 + 64 + 64 + 48,
        // A DCT has no send queue.
        QpType::Dct => 0,
        // XRC: RC's set plus the 16-byte XRC segment (libmlx5's _sq_overhead for XRC_SEND and
        // XRC_RECV).
        QpType::XrcIni | QpType::XrcTgt => 16 + 48 + 64 + 64 + 16,
        // SRD is EFA's; mlx5's qp_prepare refuses it before any geometry.
        QpType::Srd => 0,
    }
}

#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct QpGeometry {
    /// SQ size in basic blocks (power of two; 0 = no SQ).
    pub sq_wqe_cnt: u32,
    /// Per-WQE budget in bytes (multiple of 64).
    pub sq_wqe_size: u32,
    /// Outstanding send WQEs allowed.
    pub sq_max_post: u32,
    pub max_inline: u32,
    pub max_send_sge: u32,
    /// RQ entries (power of two; 0 = none, e.g. with an SRQ).
    pub rq_wqe_cnt: u32,
    pub rq_wqe_shift: u32,
    pub rq_max_post: u32,
    pub max_recv_sge: u32,
    /// Byte offset of the SQ in the QP buffer (the RQ comes first).
    pub sq_offset: usize,
    /// Bytes of buffer the rings need (before page rounding).
    pub buf_len: usize,
}

fn einval(detail: String) -> Error {
    let mut e = Error::msg("size mlx5 QP", detail);
    e.errno = Some(libc::EINVAL);
    e
}

pub fn qp_geometry(dev: &UctxResp, attr: &QpInitAttr) -> Result<QpGeometry> {
    let c = &attr.caps;
    let mut g = QpGeometry::default();
    if attr.qp_type == QpType::XrcTgt {
        // An XRC target has no queues in user space: its receives land in the XRC SRQ the
        // initiator names, and it sends nothing but acknowledgements.
        return Ok(g);
    }
    let max_sq_desc = dev.max_sq_desc_sz as u32;
    if c.max_send_wr > 0 {
        let ovh = sq_overhead(attr.qp_type);
        if ovh >= max_sq_desc {
            return Err(einval(format!(
                "device WQE limit {max_sq_desc} below the {ovh}-byte overhead"
            )));
        }
        let inl = if c.max_inline_data > 0 {
            ovh + (4 + c.max_inline_data.min(1 << 16)).div_ceil(16) * 16
        } else {
            0
        };
        let max_gather = (max_sq_desc - ovh) / 16;
        if c.max_send_sge > max_gather {
            return Err(einval(format!(
                "{} send SGEs, the device allows {max_gather}",
                c.max_send_sge
            )));
        }
        let tot = (ovh + c.max_send_sge * 16).max(inl);
        if tot > max_sq_desc {
            return Err(einval(format!(
                "inline size {} needs {tot}-byte WQEs, the device allows {max_sq_desc}",
                c.max_inline_data
            )));
        }
        let wqe = tot.div_ceil(WQEBB as u32) * WQEBB as u32;
        if c.max_send_wr > 0x7fff_ffff / max_sq_desc {
            return Err(einval(format!("max_send_wr {} too large", c.max_send_wr)));
        }
        let wq = (c.max_send_wr * wqe).next_power_of_two();
        g.sq_wqe_cnt = wq / WQEBB as u32;
        if g.sq_wqe_cnt > dev.max_send_wqebb {
            return Err(einval(format!(
                "{} send WQEBBs, the device allows {}",
                g.sq_wqe_cnt, dev.max_send_wqebb
            )));
        }
        g.sq_wqe_size = wqe;
        g.sq_max_post = wq / wqe;
        g.max_inline = wqe - ovh - 4;
        g.max_send_sge = c.max_send_sge;
    }
    if c.max_recv_wr > 0 && !attr.uses_srq && attr.qp_type != QpType::XrcIni {
        if dev.max_recv_wr != 0 && c.max_recv_wr > dev.max_recv_wr {
            return Err(einval(format!(
                "max_recv_wr {}, the device allows {}",
                c.max_recv_wr, dev.max_recv_wr
            )));
        }
        let size = 16 * c.max_recv_sge.max(1);
        if size > dev.max_rq_desc_sz as u32 {
            return Err(einval(format!(
                "{} receive SGEs, the device allows {}",
                c.max_recv_sge,
                dev.max_rq_desc_sz / 16
            )));
        }
        let stride = size.next_power_of_two();
        let wq = (c.max_recv_wr.next_power_of_two() * stride).max(WQEBB as u32);
        g.rq_wqe_cnt = wq / stride;
        g.rq_wqe_shift = stride.trailing_zeros();
        g.rq_max_post = g.rq_wqe_cnt;
        g.max_recv_sge = stride / 16;
    }
    g.sq_offset = (g.rq_wqe_cnt as usize) << g.rq_wqe_shift;
    g.buf_len = g.sq_offset + g.sq_wqe_cnt as usize * WQEBB;
    Ok(g)
}

/// SRQ geometry: (entries, log2 stride, max SGEs). Entry 0..n form a free list; one is always
/// kept free, so `entries = roundup_pow2(max_wr + 1)`.
pub fn srq_geometry(dev: &UctxResp, max_wr: u32, max_sge: u32) -> Result<(u32, u32, u32)> {
    let desc = 16 + 16 * max_sge.max(1);
    if desc > dev.max_rq_desc_sz as u32 {
        return Err(einval(format!(
            "{max_sge} SRQ SGEs, the device allows {}",
            (dev.max_rq_desc_sz as u32 - 16) / 16
        )));
    }
    if max_wr == 0 || (dev.max_srq_recv_wr != 0 && max_wr > dev.max_srq_recv_wr) {
        return Err(einval(format!(
            "SRQ max_wr {max_wr}, the device allows 1..={}",
            dev.max_srq_recv_wr
        )));
    }
    let stride = desc.next_power_of_two().max(32);
    let n = (max_wr + 1).next_power_of_two();
    Ok((n, stride.trailing_zeros(), (stride - 16) / 16))
}

#[cfg(test)]
mod tests {
    use super::*;
    use uverbs::provider::QpCaps;

    pub(crate) fn dev() -> UctxResp {
        UctxResp(uverbs::sys::mlx5::AllocUcontextResp {
            max_sq_desc_sz: 512,
            max_rq_desc_sz: 512,
            max_send_wqebb: 32768,
            max_recv_wr: 32768,
            max_srq_recv_wr: 32767,
            tot_bfregs: 16,
            ..Default::default() })
    }

    #[test]
    fn oracle_geometry() {
        let attr = QpInitAttr {
            qp_type: QpType::Rc,
            caps: QpCaps {
                max_send_wr: 16,
                max_recv_wr: 16,
                max_send_sge: 2,
                max_recv_sge: 2,
                max_inline_data: 64,
            },
            sq_sig_all: false,
            uses_srq: false,
        };
        let g = qp_geometry(&dev(), &attr).unwrap();
        assert_eq!((g.sq_wqe_cnt, g.rq_wqe_cnt, g.rq_wqe_shift), (128, 16, 5));
        assert_eq!((g.sq_max_post, g.max_inline), (25, 124));
        assert_eq!(g.sq_offset, 512);
        assert_eq!(g.buf_len, 512 + 128 * 64);
    }

    #[test]
    fn limits() {
        let mut attr = QpInitAttr {
            qp_type: QpType::Rc,
            caps: QpCaps {
                max_send_wr: 16,
                max_recv_wr: 16,
                max_send_sge: 30,
                max_recv_sge: 1,
                max_inline_data: 0,
            },
            sq_sig_all: false,
            uses_srq: true,
        };
        assert!(qp_geometry(&dev(), &attr).is_err());
        attr.caps.max_send_sge = 1;
        let g = qp_geometry(&dev(), &attr).unwrap();
        assert_eq!(g.rq_wqe_cnt, 0);
        assert_eq!(g.sq_offset, 0);
        assert_eq!(srq_geometry(&dev(), 15, 1).unwrap(), (16, 5, 1));
    }
}
