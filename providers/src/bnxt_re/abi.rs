//! Driver data of the bnxt_re verbs commands (`<rdma/bnxt_re-abi.h>`, ABI version 1): the
//! requests we append and the responses we check. Responses come from the kernel and are
//! checked before use; short ones read as zero (what libbnxt_re sees: it zeroes the buffer).

use uverbs::error::{Error, Result};

/// `BNXT_RE_ABI_VERSION`.
pub const ABI_VERSION: u32 = 1;

/// `struct bnxt_re_uctx_resp`.
pub const UCTX_RESP_LEN: usize = 48;
/// `struct bnxt_re_pd_resp` (packed: `pdid`, `dpi`, `dbr`).
pub const PD_RESP_LEN: usize = 16;
/// `struct bnxt_re_cq_resp` of the kernel uAPI this was first written against (6.1).
pub const CQ_RESP_LEN: usize = 16;
/// `struct bnxt_re_cq_resp` of newer kernels (6.8 on): `comp_mask` after the 16 bytes. We ask
/// for this much; an older kernel writes its 16 and the mask reads as zero.
pub const CQ_RESP_V2_LEN: usize = 24;
/// `struct bnxt_re_qp_resp`.
pub const QP_RESP_LEN: usize = 8;
/// `struct bnxt_re_srq_resp`.
pub const SRQ_RESP_LEN: usize = 4;

/// Field offsets of `struct bnxt_re_uctx_resp`.
pub mod uctx {
    pub const DEV_ID: usize = 0;
    pub const MAX_QP: usize = 4;
    pub const PG_SIZE: usize = 8;
    pub const CQE_SZ: usize = 12;
    pub const MAX_CQD: usize = 16;
    pub const COMP_MASK: usize = 24;
    pub const CHIP_ID0: usize = 32;
    pub const CHIP_ID1: usize = 36;
    pub const MODE: usize = 40;
}
/// Field offsets of `struct bnxt_re_pd_resp`.
pub mod pd {
    pub const PDID: usize = 0;
    pub const DPI: usize = 4;
    pub const DBR: usize = 8;
}
/// Field offsets of the CREATE_CQ / CREATE_QP / CREATE_SRQ driver data.
pub mod obj {
    /// `bnxt_re_cq_req.cq_va`, `bnxt_re_qp_req.qpsva`, `bnxt_re_srq_req.srqva`.
    pub const VA: usize = 0;
    /// `bnxt_re_cq_req.cq_handle`, `bnxt_re_srq_req.srq_handle`, `bnxt_re_qp_req.qprva`.
    pub const SECOND: usize = 8;
    /// `bnxt_re_qp_req.qp_handle`.
    pub const QP_HANDLE: usize = 16;
    /// `bnxt_re_cq_resp.tail`, `.phase`.
    pub const CQ_TAIL: usize = 4;
    pub const CQ_PHASE: usize = 8;
    /// `bnxt_re_cq_resp.comp_mask` (newer kernels only).
    pub const CQ_COMP_MASK: usize = 16;
}
/// `sizeof` of the requests.
pub const CQ_REQ_LEN: usize = 16;
pub const QP_REQ_LEN: usize = 24;
pub const SRQ_REQ_LEN: usize = 16;

/// `BNXT_RE_UCNTX_CMASK_HAVE_CCTX`, `_HAVE_MODE`.
pub const CMASK_HAVE_CCTX: u64 = 0x1;
pub const CMASK_HAVE_MODE: u64 = 0x2;
/// `BNXT_RE_UCNTX_CMASK_MSN_TABLE_ENABLED` (newer kernels): the SQ's PSN area is an MSN table,
/// a format this provider does not write.
pub const CMASK_MSN_TABLE_ENABLED: u64 = 0x40;
/// `BNXT_RE_CQ_TOGGLE_PAGE_SUPPORT` in CREATE_CQ's `comp_mask` (newer kernels, Gen P7 chips):
/// the CQ has a toggle page, to be fetched with GET_TOGGLE_MEM and mapped.
pub const CQ_TOGGLE_PAGE_SUPPORT: u64 = 0x1;

/// The GET_TOGGLE_MEM driver method (`BNXT_RE_OBJECT_GET_TOGGLE_MEM`,
/// `BNXT_RE_METHOD_GET_TOGGLE_MEM` and its attributes; driver namespace ids start at 1 << 12).
pub mod toggle_mem {
    pub const OBJECT: u16 = 0x1002;
    pub const METHOD: u16 = 0x1000;
    pub const ATTR_HANDLE: u16 = 0x1000;
    pub const ATTR_TYPE: u16 = 0x1001;
    pub const ATTR_RES_ID: u16 = 0x1002;
    pub const ATTR_MMAP_PAGE: u16 = 0x1003;
    pub const ATTR_MMAP_OFFSET: u16 = 0x1004;
    pub const ATTR_MMAP_LENGTH: u16 = 0x1005;
    /// `BNXT_RE_CQ_TOGGLE_MEM` of `enum bnxt_re_get_toggle_mem_type`.
    pub const TYPE_CQ: u64 = 0;
}

fn u32_at(b: &[u8], off: usize) -> u32 {
    let mut w = [0u8; 4];
    if let Some(s) = b.get(off..off + 4) {
        w.copy_from_slice(s);
    }
    u32::from_le_bytes(w)
}

fn u64_at(b: &[u8], off: usize) -> u64 {
    u32_at(b, off) as u64 | (u32_at(b, off + 4) as u64) << 32
}

fn bad(what: &str, detail: String) -> Error {
    Error::msg(format!("bnxt_re {what}"), detail)
        .with_hint("the kernel's bnxt_re driver answered something this provider does not understand; report it with `rperftest devinfo -v`")
}

/// GET_CONTEXT's answer: the device's queue geometry and chip.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct UctxResp {
    pub dev_id: u32,
    pub max_qp: u32,
    /// The page size queues are rounded to and the doorbell / shared pages are mapped with.
    pub pg_size: u32,
    /// Bytes per CQE the CQ buffer is sized with.
    pub cqe_sz: u32,
    /// Largest CQ depth.
    pub max_cqd: u32,
    pub comp_mask: u64,
    pub chip_id0: u32,
    pub chip_id1: u32,
    /// [`super::hw::WQE_MODE_STATIC`] or `_VARIABLE` (static when the kernel does not say).
    pub mode: u32,
}

impl UctxResp {
    pub fn parse(b: &[u8]) -> Result<UctxResp> {
        let r = UctxResp {
            dev_id: u32_at(b, uctx::DEV_ID),
            max_qp: u32_at(b, uctx::MAX_QP),
            pg_size: u32_at(b, uctx::PG_SIZE),
            cqe_sz: u32_at(b, uctx::CQE_SZ),
            max_cqd: u32_at(b, uctx::MAX_CQD),
            comp_mask: u64_at(b, uctx::COMP_MASK),
            chip_id0: u32_at(b, uctx::CHIP_ID0),
            chip_id1: u32_at(b, uctx::CHIP_ID1),
            mode: u32_at(b, uctx::MODE),
        };
        if !r.pg_size.is_power_of_two() || !(4096..=1 << 21).contains(&r.pg_size) {
            return Err(bad(
                "GET_CONTEXT",
                format!(
                    "page size {} is not a power of two in 4 KiB..2 MiB",
                    r.pg_size
                ),
            ));
        }
        if !(32..=256).contains(&r.cqe_sz) {
            return Err(bad(
                "GET_CONTEXT",
                format!("CQE size {} is outside 32..256 bytes", r.cqe_sz),
            ));
        }
        if r.max_cqd == 0 || r.max_cqd > 1 << 24 {
            return Err(bad(
                "GET_CONTEXT",
                format!("max CQ depth {} is outside 1..2^24", r.max_cqd),
            ));
        }
        Ok(r)
    }
    /// The chip number, when the kernel reports the chip (`HAVE_CCTX`).
    pub fn chip_num(&self) -> u16 {
        if self.comp_mask & CMASK_HAVE_CCTX != 0 {
            self.chip_id0 as u16
        } else {
            0
        }
    }
    /// Thor-class chip or later (gen P5 and P7, libbnxt_re's `gen_p5_p7`): 16-byte PSN search
    /// entries, and no UD stall workaround.
    pub fn gen_p5(&self) -> bool {
        use super::hw::*;
        self.gen_p7()
            || matches!(
                self.chip_num(),
                CHIP_NUM_57508 | CHIP_NUM_57504 | CHIP_NUM_57502
            )
    }
    /// Thor 2 (gen P7): doorbells carry the epoch and valid bits (and arms the CQ's toggle).
    pub fn gen_p7(&self) -> bool {
        use super::hw::*;
        matches!(self.chip_num(), CHIP_NUM_57608 | CHIP_NUM_58818)
    }
    /// The kernel keeps an MSN table where this provider writes PSN search entries.
    pub fn msn_table(&self) -> bool {
        self.comp_mask & CMASK_MSN_TABLE_ENABLED != 0
    }
    /// Variable-size WQEs (the kernel says so with `HAVE_MODE`).
    pub fn variable_wqe(&self) -> bool {
        self.comp_mask & CMASK_HAVE_MODE != 0 && self.mode & super::hw::WQE_MODE_VARIABLE != 0
    }
}

/// ALLOC_PD's answer: the doorbell page (DPI) to map, at mmap offset `dbr`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct PdResp {
    pub pdid: u32,
    pub dpi: u32,
    pub dbr: u64,
}

impl PdResp {
    pub fn parse(b: &[u8]) -> Result<PdResp> {
        if b.len() < PD_RESP_LEN {
            return Err(bad(
                "ALLOC_PD",
                format!(
                    "driver response of {} bytes, expected {PD_RESP_LEN}",
                    b.len()
                ),
            ));
        }
        Ok(PdResp {
            pdid: u32_at(b, pd::PDID),
            dpi: u32_at(b, pd::DPI),
            dbr: u64_at(b, pd::DBR),
        })
    }
}

/// `struct bnxt_re_cq_req`.
pub fn cq_req(cq_va: u64, cq_handle: u64) -> Vec<u8> {
    [cq_va.to_le_bytes(), cq_handle.to_le_bytes()].concat()
}

/// `struct bnxt_re_qp_req`: the SQ buffer, the RQ buffer (0 with an SRQ), our handle.
pub fn qp_req(qpsva: u64, qprva: u64, qp_handle: u64) -> Vec<u8> {
    [
        qpsva.to_le_bytes(),
        qprva.to_le_bytes(),
        qp_handle.to_le_bytes(),
    ]
    .concat()
}

/// `struct bnxt_re_srq_req`.
pub fn srq_req(srqva: u64, srq_handle: u64) -> Vec<u8> {
    [srqva.to_le_bytes(), srq_handle.to_le_bytes()].concat()
}

/// CREATE_CQ's answer: the CQ id, the phase the first valid CQE carries, and (newer kernels)
/// whether the CQ has a toggle page.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct CqResp {
    pub cqid: u32,
    pub tail: u32,
    pub phase: u8,
    pub toggle_page: bool,
}

impl CqResp {
    pub fn parse(b: &[u8]) -> Result<CqResp> {
        if b.len() < 12 {
            return Err(bad(
                "CREATE_CQ",
                format!(
                    "driver response of {} bytes, expected {CQ_RESP_LEN}",
                    b.len()
                ),
            ));
        }
        let phase = u32_at(b, obj::CQ_PHASE);
        if phase > 1 {
            return Err(bad("CREATE_CQ", format!("phase {phase} is not 0 or 1")));
        }
        Ok(CqResp {
            cqid: u32_at(b, 0),
            tail: u32_at(b, obj::CQ_TAIL),
            phase: phase as u8,
            toggle_page: u64_at(b, obj::CQ_COMP_MASK) & CQ_TOGGLE_PAGE_SUPPORT != 0,
        })
    }
}

/// CREATE_QP's answer: the QP id doorbells name.
pub fn parse_qp_resp(b: &[u8]) -> Result<u32> {
    if b.len() < 4 {
        return Err(bad(
            "CREATE_QP",
            format!(
                "driver response of {} bytes, expected {QP_RESP_LEN}",
                b.len()
            ),
        ));
    }
    Ok(u32_at(b, 0))
}

/// CREATE_SRQ's answer: the SRQ id.
pub fn parse_srq_resp(b: &[u8]) -> Result<u32> {
    if b.len() < SRQ_RESP_LEN {
        return Err(bad(
            "CREATE_SRQ",
            format!(
                "driver response of {} bytes, expected {SRQ_RESP_LEN}",
                b.len()
            ),
        ));
    }
    Ok(u32_at(b, 0))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn uctx(pg: u32, cqe: u32, cqd: u32, cmask: u64, chip: u32, mode: u32) -> Vec<u8> {
        let mut b = vec![0u8; UCTX_RESP_LEN];
        b[0..4].copy_from_slice(&7u32.to_le_bytes());
        b[4..8].copy_from_slice(&65536u32.to_le_bytes());
        b[8..12].copy_from_slice(&pg.to_le_bytes());
        b[12..16].copy_from_slice(&cqe.to_le_bytes());
        b[16..20].copy_from_slice(&cqd.to_le_bytes());
        b[24..32].copy_from_slice(&cmask.to_le_bytes());
        b[32..36].copy_from_slice(&chip.to_le_bytes());
        b[40..44].copy_from_slice(&mode.to_le_bytes());
        b
    }

    #[test]
    fn uctx_reads_chip_and_mode() {
        let r = UctxResp::parse(&uctx(4096, 32, 65535, 3, 0x1750, 1)).unwrap();
        assert_eq!(
            (r.dev_id, r.max_qp, r.pg_size, r.cqe_sz, r.max_cqd),
            (7, 65536, 4096, 32, 65535)
        );
        assert!(r.gen_p5() && r.variable_wqe() && !r.gen_p7());
        let r = UctxResp::parse(&uctx(4096, 32, 65535, 0x43, 0x1760, 1)).unwrap();
        assert!(
            r.gen_p5() && r.gen_p7() && r.msn_table(),
            "Thor 2 is P5-class too"
        );
        let r = UctxResp::parse(&uctx(4096, 32, 65535, 0, 0x1750, 1)).unwrap();
        assert!(
            !r.gen_p5() && !r.variable_wqe(),
            "without comp_mask bits neither field counts"
        );
    }

    #[test]
    fn uctx_refuses_nonsense() {
        assert!(UctxResp::parse(&uctx(4095, 32, 1, 0, 0, 0)).is_err());
        assert!(UctxResp::parse(&uctx(4096, 16, 1, 0, 0, 0)).is_err());
        assert!(UctxResp::parse(&uctx(4096, 32, 0, 0, 0, 0)).is_err());
        assert!(
            UctxResp::parse(&[]).is_err(),
            "an empty answer has page size 0"
        );
    }

    #[test]
    fn requests_are_little_endian_words() {
        assert_eq!(qp_req(0x1122, 0, 5).len(), 24);
        assert_eq!(
            &cq_req(0x0102030405060708, 9)[..8],
            &[8, 7, 6, 5, 4, 3, 2, 1]
        );
        let pd = PdResp::parse(&[1, 0, 0, 0, 2, 0, 0, 0, 0, 0x10, 0, 0, 0, 0, 0, 0]).unwrap();
        assert_eq!(
            pd,
            PdResp {
                pdid: 1,
                dpi: 2,
                dbr: 0x1000
            }
        );
        assert!(PdResp::parse(&[0; 8]).is_err());
        assert!(CqResp::parse(&[0, 0, 0, 0, 0, 0, 0, 0, 2, 0, 0, 0]).is_err());
    }

    #[test]
    fn cq_response_with_and_without_the_comp_mask() {
        let mut b = [5u32, 0, 1, 0, 1, 0].map(u32::to_le_bytes).concat();
        let r = CqResp::parse(&b).unwrap();
        assert_eq!((r.cqid, r.phase, r.toggle_page), (5, 1, true));
        b.truncate(CQ_RESP_LEN);
        assert!(
            !CqResp::parse(&b).unwrap().toggle_page,
            "a 6.1 kernel's 16 bytes"
        );
    }
}
