//! mlx5 driver data ("udata") for the verbs commands: encoders for what we send, validating
//! decoders for what the kernel answers. Byte layouts follow `/usr/include/rdma/mlx5-abi.h`
//! (offsets are checked against that header by `providers/tests/mlx5_layout.rs`, which compiles an
//! `offsetof` probe with gcc). All multi-byte fields are host-endian (little-endian on every
//! platform mlx5 ships on), as the kernel copies these structs verbatim.
//!
//! Pure: no I/O, no unsafe.
//!
//! The structs themselves are defined once, as `#[repr(C)]` mirrors in `uverbs::sys::mlx5`
//! (checked against the header by uverbs' `tests/layout.rs`); the sizes and offsets here are
//! taken from those mirrors rather than written down a second time.

use core::mem::size_of;

use uverbs::error::{Error, Result};
use uverbs::sys::mlx5 as sys;

/// `MLX5_IB_UVERBS_ABI_VERSION`.
pub const ABI_VERSION: u32 = sys::MLX5_IB_UVERBS_ABI_VERSION;

// ---- GET_CONTEXT ------------------------------------------------------------------------------

/// `struct mlx5_ib_alloc_ucontext_req_v2` size.
pub const ALLOC_UCONTEXT_REQ_V2_LEN: usize = size_of::<sys::AllocUcontextReqV2>();
/// `struct mlx5_ib_alloc_ucontext_resp` size.
pub const ALLOC_UCONTEXT_RESP_LEN: usize = size_of::<sys::AllocUcontextResp>();
/// `MLX5_LIB_CAP_4K_UAR`.
pub const LIB_CAP_4K_UAR: u64 = sys::MLX5_LIB_CAP_4K_UAR;
/// `MLX5_LIB_CAP_DYN_UAR` (never requested: see docs/mlx5.md).
pub const LIB_CAP_DYN_UAR: u64 = sys::MLX5_LIB_CAP_DYN_UAR;
/// `MLX5_IB_ALLOC_UCTX_DEVX` (never requested).
pub const ALLOC_UCTX_DEVX: u32 = 1 << 0;
/// `MLX5_MAX_BFREGS` (kernel limit on total_num_bfregs).
pub const MAX_BFREGS: u32 = 512 * 4;

/// Offsets in `mlx5_ib_alloc_ucontext_req_v2`.
pub mod uctx_req {
    use core::mem::offset_of;

    use uverbs::sys::mlx5::AllocUcontextReqV2;

    pub const TOTAL_NUM_BFREGS: usize = offset_of!(AllocUcontextReqV2, total_num_bfregs);
    pub const NUM_LOW_LATENCY_BFREGS: usize = offset_of!(AllocUcontextReqV2, num_low_latency_bfregs);
    pub const FLAGS: usize = offset_of!(AllocUcontextReqV2, flags);
    pub const COMP_MASK: usize = offset_of!(AllocUcontextReqV2, comp_mask);
    pub const MAX_CQE_VERSION: usize = offset_of!(AllocUcontextReqV2, max_cqe_version);
    pub const LIB_CAPS: usize = offset_of!(AllocUcontextReqV2, lib_caps);
}

/// Offsets in `mlx5_ib_alloc_ucontext_resp`.
pub mod uctx_resp {
    use core::mem::offset_of;

    use uverbs::sys::mlx5::AllocUcontextResp;

    pub const QP_TAB_SIZE: usize = offset_of!(AllocUcontextResp, qp_tab_size);
    pub const BF_REG_SIZE: usize = offset_of!(AllocUcontextResp, bf_reg_size);
    pub const TOT_BFREGS: usize = offset_of!(AllocUcontextResp, tot_bfregs);
    pub const CACHE_LINE_SIZE: usize = offset_of!(AllocUcontextResp, cache_line_size);
    pub const MAX_SQ_DESC_SZ: usize = offset_of!(AllocUcontextResp, max_sq_desc_sz);
    pub const MAX_RQ_DESC_SZ: usize = offset_of!(AllocUcontextResp, max_rq_desc_sz);
    pub const MAX_SEND_WQEBB: usize = offset_of!(AllocUcontextResp, max_send_wqebb);
    pub const MAX_RECV_WR: usize = offset_of!(AllocUcontextResp, max_recv_wr);
    pub const MAX_SRQ_RECV_WR: usize = offset_of!(AllocUcontextResp, max_srq_recv_wr);
    pub const NUM_PORTS: usize = offset_of!(AllocUcontextResp, num_ports);
    pub const FLOW_ACTION_FLAGS: usize = offset_of!(AllocUcontextResp, flow_action_flags);
    pub const COMP_MASK: usize = offset_of!(AllocUcontextResp, comp_mask);
    pub const RESPONSE_LENGTH: usize = offset_of!(AllocUcontextResp, response_length);
    pub const CQE_VERSION: usize = offset_of!(AllocUcontextResp, cqe_version);
    pub const CMDS_SUPP_UHW: usize = offset_of!(AllocUcontextResp, cmds_supp_uhw);
    pub const ETH_MIN_INLINE: usize = offset_of!(AllocUcontextResp, eth_min_inline);
    pub const CLOCK_INFO_VERSIONS: usize = offset_of!(AllocUcontextResp, clock_info_versions);
    pub const HCA_CORE_CLOCK_OFFSET: usize = offset_of!(AllocUcontextResp, hca_core_clock_offset);
    pub const LOG_UAR_SIZE: usize = offset_of!(AllocUcontextResp, log_uar_size);
    pub const NUM_UARS_PER_PAGE: usize = offset_of!(AllocUcontextResp, num_uars_per_page);
    pub const NUM_DYN_BFREGS: usize = offset_of!(AllocUcontextResp, num_dyn_bfregs);
    pub const DUMP_FILL_MKEY: usize = offset_of!(AllocUcontextResp, dump_fill_mkey);
}

/// What we ask for in GET_CONTEXT.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct UctxReq {
    pub total_num_bfregs: u32,
    pub num_low_latency_bfregs: u32,
    pub max_cqe_version: u8,
    pub lib_caps: u64,
}

impl Default for UctxReq {
    /// rdma-core's defaults on a 4 KiB-page host, minus DEVX and DYN_UAR: 16 bfregs, 4 of them
    /// low-latency (dedicated to one QP each), CQE version 1 (CQEs carry our user index), 4K UARs.
    fn default() -> Self {
        UctxReq {
            total_num_bfregs: 16,
            num_low_latency_bfregs: 4,
            max_cqe_version: 1,
            lib_caps: LIB_CAP_4K_UAR,
        }
    }
}

impl UctxReq {
    pub fn encode(&self) -> Vec<u8> {
        let mut b = vec![0u8; ALLOC_UCONTEXT_REQ_V2_LEN];
        put32(&mut b, uctx_req::TOTAL_NUM_BFREGS, self.total_num_bfregs);
        put32(
            &mut b,
            uctx_req::NUM_LOW_LATENCY_BFREGS,
            self.num_low_latency_bfregs,
        );
        put32(&mut b, uctx_req::FLAGS, 0);
        put32(&mut b, uctx_req::COMP_MASK, 0);
        b[uctx_req::MAX_CQE_VERSION] = self.max_cqe_version;
        put64(&mut b, uctx_req::LIB_CAPS, self.lib_caps);
        b
    }

    /// The same request for a DEVX context: `flags` = `MLX5_IB_ALLOC_UCTX_DEVX`, as libmlx5's
    /// `mlx5dv_open_device` with `MLX5DV_CONTEXT_FLAGS_DEVX` sends it.
    pub fn encode_devx(&self) -> Vec<u8> {
        let mut b = self.encode();
        put32(&mut b, uctx_req::FLAGS, ALLOC_UCTX_DEVX);
        b
    }
}

/// `struct mlx5_ib_alloc_pd_resp`: the driver part of ALLOC_PD's response.
pub const ALLOC_PD_RESP_LEN: usize = 4;
/// `offsetof(struct mlx5_ib_alloc_pd_resp, pdn)`.
pub const ALLOC_PD_RESP_PDN: usize = 0;

/// The PD number from ALLOC_PD's driver response.
pub fn parse_alloc_pd_resp(b: &[u8]) -> Result<u32> {
    b.get(ALLOC_PD_RESP_PDN..ALLOC_PD_RESP_PDN + 4)
        .map(|s| u32::from_le_bytes([s[0], s[1], s[2], s[3]]))
        .ok_or_else(|| {
            Error::msg("mlx5 ALLOC_PD", format!("driver response of {} bytes, expected {ALLOC_PD_RESP_LEN} (pdn)", b.len()))
                .with_hint("the kernel's answer does not match the mlx5 ABI (kernel/driver version mismatch?)")
        })
}

/// The GET_CONTEXT driver response, validated by [`UctxResp::parse`]: the kernel's struct
/// itself (`uverbs::sys::mlx5::AllocUcontextResp`), with what the kernel did not write read as
/// zero. Its fields read through `Deref`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct UctxResp(pub sys::AllocUcontextResp);

impl core::ops::Deref for UctxResp {
    type Target = sys::AllocUcontextResp;
    fn deref(&self) -> &sys::AllocUcontextResp {
        &self.0
    }
}

/// `MLX5_IB_ALLOC_UCONTEXT_RESP_MASK_DUMP_FILL_MKEY`.
pub const UCTX_RESP_MASK_DUMP_FILL_MKEY: u32 = 1 << 1;

/// `MLX5_USER_CMDS_SUPP_UHW_CREATE_AH`.
pub const CMDS_SUPP_UHW_CREATE_AH: u8 = 1 << 1;

/// Where each field of the response ends, from the first one past the mandatory part (the
/// kernel's response is at least that long) to the end of the struct.
pub const UCTX_RESP_FIELD_ENDS: [usize; 9] = [
    uctx_resp::CQE_VERSION + 1,
    uctx_resp::CMDS_SUPP_UHW + 1,
    uctx_resp::ETH_MIN_INLINE + 1,
    uctx_resp::CLOCK_INFO_VERSIONS + 1,
    uctx_resp::HCA_CORE_CLOCK_OFFSET + 8,
    uctx_resp::LOG_UAR_SIZE + 4,
    uctx_resp::NUM_UARS_PER_PAGE + 4,
    uctx_resp::NUM_DYN_BFREGS + 4,
    uctx_resp::DUMP_FILL_MKEY + 4,
];
const _: () = assert!(UCTX_RESP_FIELD_ENDS[UCTX_RESP_FIELD_ENDS.len() - 1] == ALLOC_UCONTEXT_RESP_LEN);

impl UctxResp {
    /// The dump-fill mkey (`MLX5_IB_ALLOC_UCONTEXT_RESP_MASK_DUMP_FILL_MKEY` in `comp_mask`):
    /// the lkey of the null MR (reads return a fill pattern, writes are dropped). `None` when
    /// the kernel does not report one (libmlx5 then fails `ibv_alloc_null_mr` with ENOTSUP):
    /// as libmlx5, the bit decides (the kernel sets it only together with the field).
    pub fn dump_fill_mkey(&self) -> Option<u32> {
        (self.comp_mask & UCTX_RESP_MASK_DUMP_FILL_MKEY != 0).then_some(self.0.dump_fill_mkey)
    }

    /// Parse and validate. The kernel writes at most what we asked for; fields beyond a short
    /// (old-kernel) response read as zero, which the rules below treat as "not reported".
    pub fn parse(b: &[u8]) -> Result<UctxResp> {
        const WHAT: &str = "parse mlx5 GET_CONTEXT response";
        if b.len() < uctx_resp::CQE_VERSION + 1 {
            return Err(Error::msg(
                WHAT,
                format!("{} bytes, need at least 45", b.len()),
            ));
        }
        // A field cut short reads as absent (zero), like one the kernel did not write; bytes
        // past the struct are ignored.
        let keep = UCTX_RESP_FIELD_ENDS.iter().copied().filter(|&e| e <= b.len()).max().unwrap_or(0);
        let mut raw = [0u8; ALLOC_UCONTEXT_RESP_LEN];
        raw[..keep].copy_from_slice(&b[..keep]);
        let r = UctxResp(zerocopy::transmute!(raw));
        if r.tot_bfregs == 0 {
            return Err(Error::msg(WHAT, "the kernel granted no static bfregs (tot_bfregs 0)").with_hint(
                "this kernel only offers dynamic UARs, which rperftest's mlx5 provider does not implement yet",
            ));
        }
        if r.tot_bfregs > MAX_BFREGS {
            return Err(Error::msg(
                WHAT,
                format!(
                    "tot_bfregs {} beyond the kernel maximum {MAX_BFREGS}",
                    r.tot_bfregs
                ),
            ));
        }
        if r.cqe_version > 1 {
            return Err(Error::msg(
                WHAT,
                format!("cqe_version {} (we asked for at most 1)", r.cqe_version),
            ));
        }
        if r.bf_reg_size != 0 && (r.bf_reg_size & 127 != 0 || r.bf_reg_size > 2048) {
            return Err(Error::msg(
                WHAT,
                format!("implausible bf_reg_size {}", r.bf_reg_size),
            ));
        }
        if r.log_uar_size != 0 && !(12..=16).contains(&r.log_uar_size) {
            return Err(Error::msg(
                WHAT,
                format!("implausible log_uar_size {}", r.log_uar_size),
            ));
        }
        if r.num_uars_per_page > 16 {
            return Err(Error::msg(
                WHAT,
                format!("implausible num_uars_per_page {}", r.num_uars_per_page),
            ));
        }
        if r.max_sq_desc_sz < 64 || r.max_rq_desc_sz < 16 || r.max_send_wqebb == 0 {
            return Err(Error::msg(
                WHAT,
                format!(
                    "queue limits missing (max_sq_desc_sz {}, max_rq_desc_sz {}, max_send_wqebb {})",
                    r.max_sq_desc_sz, r.max_rq_desc_sz, r.max_send_wqebb
                ),
            ));
        }
        Ok(r)
    }
}

// ---- CREATE_CQ --------------------------------------------------------------------------------

pub const CREATE_CQ_REQ_LEN: usize = size_of::<sys::CreateCq>();
pub const CREATE_CQ_RESP_LEN: usize = size_of::<sys::CreateCqResp>();

pub mod cq_req {
    use core::mem::offset_of;

    use uverbs::sys::mlx5::CreateCq;

    pub const BUF_ADDR: usize = offset_of!(CreateCq, buf_addr);
    pub const DB_ADDR: usize = offset_of!(CreateCq, db_addr);
    pub const CQE_SIZE: usize = offset_of!(CreateCq, cqe_size);
    pub const CQE_COMP_EN: usize = offset_of!(CreateCq, cqe_comp_en);
    pub const CQE_COMP_RES_FORMAT: usize = offset_of!(CreateCq, cqe_comp_res_format);
    pub const FLAGS: usize = offset_of!(CreateCq, flags);
    pub const UAR_PAGE_INDEX: usize = offset_of!(CreateCq, uar_page_index);
}

/// `mlx5_ib_create_cq`: 64-byte CQEs, compression off, no flags.
pub fn create_cq_req(buf_addr: u64, db_addr: u64, cqe_size: u32) -> Vec<u8> {
    let mut b = vec![0u8; CREATE_CQ_REQ_LEN];
    put64(&mut b, cq_req::BUF_ADDR, buf_addr);
    put64(&mut b, cq_req::DB_ADDR, db_addr);
    put32(&mut b, cq_req::CQE_SIZE, cqe_size);
    b
}

/// `mlx5_ib_create_cq_resp.cqn`.
pub fn parse_create_cq_resp(b: &[u8]) -> Result<u32> {
    if b.len() < 4 {
        return Err(Error::msg(
            "parse mlx5 CREATE_CQ response",
            format!("{} bytes, need 4", b.len()),
        ));
    }
    let cqn = get32(b, 0);
    if cqn > 0xff_ffff {
        return Err(Error::msg(
            "parse mlx5 CREATE_CQ response",
            format!("cqn {cqn:#x} wider than 24 bits"),
        ));
    }
    Ok(cqn)
}

// ---- CREATE_QP --------------------------------------------------------------------------------

pub const CREATE_QP_REQ_LEN: usize = size_of::<sys::CreateQp>();
pub const CREATE_QP_RESP_LEN: usize = size_of::<sys::CreateQpResp>();
/// `MLX5_QP_FLAG_SCATTER_CQE`: not set by us (see docs/mlx5.md).
pub const QP_FLAG_SCATTER_CQE: u32 = 1 << 1;

pub mod qp_req {
    use core::mem::offset_of;

    use uverbs::sys::mlx5::CreateQp;

    pub const BUF_ADDR: usize = offset_of!(CreateQp, buf_addr);
    pub const DB_ADDR: usize = offset_of!(CreateQp, db_addr);
    pub const SQ_WQE_COUNT: usize = offset_of!(CreateQp, sq_wqe_count);
    pub const RQ_WQE_COUNT: usize = offset_of!(CreateQp, rq_wqe_count);
    pub const RQ_WQE_SHIFT: usize = offset_of!(CreateQp, rq_wqe_shift);
    pub const FLAGS: usize = offset_of!(CreateQp, flags);
    pub const UIDX: usize = offset_of!(CreateQp, uidx);
    pub const BFREG_INDEX: usize = offset_of!(CreateQp, bfreg_index);
    pub const SQ_BUF_ADDR: usize = offset_of!(CreateQp, sq_buf_addr);
    pub const ECE_OPTIONS: usize = offset_of!(CreateQp, ece_options);
    pub const DCI_STREAMS: usize = offset_of!(CreateQp, dci_log_num_concurent);
}

/// The CREATE_QP driver request as we fill it: the kernel's struct (`mlx5_ib_create_qp`), with
/// the buffer, doorbell record, counts, flags and user index set and the rest zero (DC adds its
/// key or streams). bfreg_index 0 without MLX5_QP_FLAG_BFREG_INDEX: the kernel picks the bfreg
/// (static mode).
pub type QpReq = sys::CreateQp;

/// The request's bytes, as the kernel reads them.
pub fn encode_qp_req(r: &QpReq) -> Vec<u8> {
    zerocopy::IntoBytes::as_bytes(r).to_vec()
}

/// `mlx5_ib_create_qp_resp.bfreg_index` (a "gross" index: 4 per UAR, see `uar::UarPlan`).
pub fn parse_create_qp_resp(b: &[u8]) -> Result<u32> {
    if b.len() < 4 {
        return Err(Error::msg(
            "parse mlx5 CREATE_QP response",
            format!("{} bytes, need 4", b.len()),
        ));
    }
    Ok(get32(b, 0))
}

// ---- CREATE_SRQ -------------------------------------------------------------------------------

pub const CREATE_SRQ_REQ_LEN: usize = size_of::<sys::CreateSrq>();
pub const CREATE_SRQ_RESP_LEN: usize = size_of::<sys::CreateSrqResp>();

pub mod srq_req {
    use core::mem::offset_of;

    use uverbs::sys::mlx5::CreateSrq;

    pub const BUF_ADDR: usize = offset_of!(CreateSrq, buf_addr);
    pub const DB_ADDR: usize = offset_of!(CreateSrq, db_addr);
    pub const FLAGS: usize = offset_of!(CreateSrq, flags);
    pub const UIDX: usize = offset_of!(CreateSrq, uidx);
}

pub fn create_srq_req(buf_addr: u64, db_addr: u64, uidx: u32) -> Vec<u8> {
    let mut b = vec![0u8; CREATE_SRQ_REQ_LEN];
    put64(&mut b, srq_req::BUF_ADDR, buf_addr);
    put64(&mut b, srq_req::DB_ADDR, db_addr);
    put32(&mut b, srq_req::UIDX, uidx);
    b
}

/// `mlx5_ib_create_srq_resp.srqn`.
pub fn parse_create_srq_resp(b: &[u8]) -> Result<u32> {
    if b.len() < 4 {
        return Err(Error::msg(
            "parse mlx5 CREATE_SRQ response",
            format!("{} bytes, need 4", b.len()),
        ));
    }
    Ok(get32(b, 0) & 0xff_ffff)
}

// ---- CREATE_AH --------------------------------------------------------------------------------

pub const CREATE_AH_RESP_LEN: usize = size_of::<sys::CreateAhResp>();

/// `mlx5_ib_create_ah_resp.dmac` (the kernel resolved the peer's MAC for RoCE).
pub fn parse_create_ah_resp(b: &[u8]) -> Result<[u8; 6]> {
    if b.len() < 10 {
        return Err(Error::msg(
            "parse mlx5 CREATE_AH response",
            format!("{} bytes, need 10", b.len()),
        ));
    }
    let mut mac = [0u8; 6];
    mac.copy_from_slice(&b[4..10]);
    Ok(mac)
}

// ---- little helpers ---------------------------------------------------------------------------

fn put32(b: &mut [u8], off: usize, v: u32) {
    b[off..off + 4].copy_from_slice(&v.to_ne_bytes());
}
fn put64(b: &mut [u8], off: usize, v: u64) {
    b[off..off + 8].copy_from_slice(&v.to_ne_bytes());
}
fn get32(b: &[u8], off: usize) -> u32 {
    match b.get(off..off + 4) {
        Some(s) => u32::from_ne_bytes([s[0], s[1], s[2], s[3]]),
        None => 0,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn uctx_req_bytes() {
        // What libmlx5 sent in the oracle run after its DEVX retry, minus DYN_UAR (lib_caps 3 → 1).
        let b = UctxReq::default().encode();
        assert_eq!(b.len(), 32);
        assert_eq!(&b[..16], &[16, 0, 0, 0, 4, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0]);
        assert_eq!(b[16], 1);
        assert_eq!(&b[24..32], &[1, 0, 0, 0, 0, 0, 0, 0]);
    }

    #[test]
    fn uctx_resp_rejects_short_and_dynamic() {
        assert!(UctxResp::parse(&[0u8; 20]).is_err());
        let e = UctxResp::parse(&[0u8; 72]).unwrap_err();
        assert!(e.to_string().contains("tot_bfregs 0"), "{e}");
    }

    #[test]
    fn uctx_resp_dump_fill_mkey_only_with_its_comp_mask_bit() {
        let mut b = [0u8; ALLOC_UCONTEXT_RESP_LEN];
        b[uctx_resp::TOT_BFREGS..][..4].copy_from_slice(&4u32.to_ne_bytes());
        b[uctx_resp::MAX_SQ_DESC_SZ..][..2].copy_from_slice(&512u16.to_ne_bytes());
        b[uctx_resp::MAX_RQ_DESC_SZ..][..2].copy_from_slice(&512u16.to_ne_bytes());
        b[uctx_resp::MAX_SEND_WQEBB..][..4].copy_from_slice(&65536u32.to_ne_bytes());
        b[uctx_resp::DUMP_FILL_MKEY..][..4].copy_from_slice(&0x0000_0d00u32.to_ne_bytes());
        // Bit clear (e.g. CORE_CLOCK_OFFSET only): no null MR, even with a value in the field.
        b[uctx_resp::COMP_MASK..][..4].copy_from_slice(&1u32.to_ne_bytes());
        assert_eq!(UctxResp::parse(&b).unwrap().dump_fill_mkey(), None);
        // Bit set: the key.
        b[uctx_resp::COMP_MASK..][..4].copy_from_slice(&(1u32 | UCTX_RESP_MASK_DUMP_FILL_MKEY).to_ne_bytes());
        assert_eq!(UctxResp::parse(&b).unwrap().dump_fill_mkey(), Some(0xd00));
        // Bit set but the response ends before the field: read as zero, as libmlx5 (whose
        // response buffer starts zeroed) and as every other short field here.
        assert_eq!(UctxResp::parse(&b[..uctx_resp::DUMP_FILL_MKEY]).unwrap().dump_fill_mkey(), Some(0));
    }

    #[test]
    fn qp_req_layout() {
        let b = QpReq {
            buf_addr: 1,
            db_addr: 2,
            sq_wqe_count: 3,
            rq_wqe_count: 4,
            rq_wqe_shift: 5,
            flags: 6,
            uidx: 7,
            ..QpReq::default()
        };
        let b = encode_qp_req(&b);
        assert_eq!(b.len(), 56);
        assert_eq!(b[qp_req::SQ_WQE_COUNT], 3);
        assert_eq!(b[qp_req::UIDX], 7);
        assert!(b[qp_req::BFREG_INDEX..].iter().all(|&x| x == 0));
    }
}
