//! EFA driver data (udata) of each verbs command, as in the kernel's `rdma/efa-abi.h`: byte
//! offsets (checked against the header by providers/tests/efa_layout.rs), encoders for what we
//! send and decoders for what the kernel answers (too short an answer is an error).

/// `EFA_UVERBS_ABI_VERSION`.
pub const ABI_VERSION: u32 = 1;

/// `EFA_ALLOC_UCONTEXT_CMD_COMP_TX_BATCH`, `..._COMP_MIN_SQ_WR`: the response fields libefa 44
/// understands (it sets both).
pub const UCTX_CMD_COMP_TX_BATCH: u32 = 1 << 0;
pub const UCTX_CMD_COMP_MIN_SQ_WR: u32 = 1 << 1;
/// `EFA_USER_CMDS_SUPP_UDATA_QUERY_DEVICE`, `..._CREATE_AH`.
pub const SUPP_UDATA_QUERY_DEVICE: u32 = 1 << 0;
pub const SUPP_UDATA_CREATE_AH: u32 = 1 << 1;
/// `EFA_CREATE_CQ_WITH_COMPLETION_CHANNEL`, `EFA_CREATE_CQ_WITH_SGID`.
pub const CREATE_CQ_WITH_COMPLETION_CHANNEL: u8 = 1 << 0;
pub const CREATE_CQ_WITH_SGID: u8 = 1 << 1;
/// `EFA_CREATE_CQ_RESP_DB_OFF`: the response carries a CQ doorbell.
pub const CREATE_CQ_RESP_DB_OFF: u32 = 1 << 0;
/// `EFA_QP_DRIVER_TYPE_SRD`.
pub const QP_DRIVER_TYPE_SRD: u32 = 0;
/// `EFA_QUERY_DEVICE_CAPS_*`.
pub const CAPS_RDMA_READ: u32 = 1 << 0;
pub const CAPS_RNR_RETRY: u32 = 1 << 1;
pub const CAPS_CQ_NOTIFICATIONS: u32 = 1 << 2;
pub const CAPS_CQ_WITH_SGID: u32 = 1 << 3;
/// `EFA_QUERY_DEVICE_CAPS_RDMA_WRITE`: not in this host's `efa-abi.h` (kernel 6.1); bit 5 in
/// later kernels' and rdma-core 46's copy (bit 4 is `DATA_POLLING_128`).
pub const CAPS_RDMA_WRITE: u32 = 1 << 5;

/// `sizeof` of each struct.
pub const ALLOC_UCONTEXT_CMD_LEN: usize = 8;
pub const ALLOC_UCONTEXT_RESP_LEN: usize = 24;
pub const ALLOC_PD_RESP_LEN: usize = 8;
pub const CREATE_CQ_CMD_LEN: usize = 16;
pub const CREATE_CQ_RESP_LEN: usize = 40;
pub const CREATE_QP_CMD_LEN: usize = 16;
pub const CREATE_QP_RESP_LEN: usize = 64;
pub const CREATE_AH_RESP_LEN: usize = 8;
pub const EX_QUERY_DEVICE_RESP_LEN: usize = 24;

/// Offsets in `struct efa_ibv_alloc_ucontext_resp`.
pub mod uctx_resp {
    pub const COMP_MASK: usize = 0;
    pub const CMDS_SUPP_UDATA_MASK: usize = 4;
    pub const SUB_CQS_PER_CQ: usize = 8;
    pub const INLINE_BUF_SIZE: usize = 10;
    pub const MAX_LLQ_SIZE: usize = 12;
    pub const MAX_TX_BATCH: usize = 16;
    pub const MIN_SQ_WR: usize = 18;
}

/// Offsets in `struct efa_ibv_create_cq`.
pub mod cq_cmd {
    pub const COMP_MASK: usize = 0;
    pub const CQ_ENTRY_SIZE: usize = 4;
    pub const NUM_SUB_CQS: usize = 8;
    pub const FLAGS: usize = 10;
}

/// Offsets in `struct efa_ibv_create_cq_resp`.
pub mod cq_resp {
    pub const COMP_MASK: usize = 0;
    pub const Q_MMAP_KEY: usize = 8;
    pub const Q_MMAP_SIZE: usize = 16;
    pub const CQ_IDX: usize = 24;
    pub const DB_OFF: usize = 28;
    pub const DB_MMAP_KEY: usize = 32;
}

/// Offsets in `struct efa_ibv_create_qp`.
pub mod qp_cmd {
    pub const COMP_MASK: usize = 0;
    pub const RQ_RING_SIZE: usize = 4;
    pub const SQ_RING_SIZE: usize = 8;
    pub const DRIVER_QP_TYPE: usize = 12;
}

/// Offsets in `struct efa_ibv_create_qp_resp`.
pub mod qp_resp {
    pub const COMP_MASK: usize = 0;
    pub const RQ_DB_OFFSET: usize = 4;
    pub const SQ_DB_OFFSET: usize = 8;
    pub const LLQ_DESC_OFFSET: usize = 12;
    pub const RQ_MMAP_KEY: usize = 16;
    pub const RQ_MMAP_SIZE: usize = 24;
    pub const RQ_DB_MMAP_KEY: usize = 32;
    pub const SQ_DB_MMAP_KEY: usize = 40;
    pub const LLQ_DESC_MMAP_KEY: usize = 48;
    pub const SEND_SUB_CQ_IDX: usize = 56;
    pub const RECV_SUB_CQ_IDX: usize = 58;
}

/// Offsets in `struct efa_ibv_alloc_pd_resp`, `efa_ibv_create_ah_resp`.
pub const PD_RESP_PDN: usize = 4;
pub const AH_RESP_EFA_ADDRESS_HANDLE: usize = 4;

/// Offsets in `struct efa_ibv_ex_query_device_resp`.
pub mod qdev_resp {
    pub const COMP_MASK: usize = 0;
    pub const MAX_SQ_WR: usize = 4;
    pub const MAX_RQ_WR: usize = 8;
    pub const MAX_SQ_SGE: usize = 12;
    pub const MAX_RQ_SGE: usize = 14;
    pub const MAX_RDMA_SIZE: usize = 16;
    pub const DEVICE_CAPS: usize = 20;
}

/// A kernel answer too short for the struct it should hold.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ShortResponse {
    pub what: &'static str,
    pub got: usize,
    pub want: usize,
}

impl std::fmt::Display for ShortResponse {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "EFA {} response of {} bytes, expected {}",
            self.what, self.got, self.want
        )
    }
}

fn need(b: &[u8], what: &'static str, want: usize) -> Result<(), ShortResponse> {
    if b.len() < want {
        return Err(ShortResponse {
            what,
            got: b.len(),
            want,
        });
    }
    Ok(())
}

fn u16_at(b: &[u8], o: usize) -> u16 {
    u16::from_le_bytes([b[o], b[o + 1]])
}
fn u32_at(b: &[u8], o: usize) -> u32 {
    u32::from_le_bytes([b[o], b[o + 1], b[o + 2], b[o + 3]])
}
fn u64_at(b: &[u8], o: usize) -> u64 {
    u64::from(u32_at(b, o)) | (u64::from(u32_at(b, o + 4)) << 32)
}

/// GET_CONTEXT's driver data: libefa 44's (both response extensions asked for).
pub fn alloc_ucontext_cmd() -> [u8; ALLOC_UCONTEXT_CMD_LEN] {
    let mut b = [0u8; ALLOC_UCONTEXT_CMD_LEN];
    b[0..4].copy_from_slice(&(UCTX_CMD_COMP_TX_BATCH | UCTX_CMD_COMP_MIN_SQ_WR).to_le_bytes());
    b
}

/// What the context response says about the device.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct UctxResp {
    pub comp_mask: u32,
    pub cmds_supp_udata_mask: u32,
    pub sub_cqs_per_cq: u16,
    pub inline_buf_size: u16,
    pub max_llq_size: u32,
    pub max_tx_batch: u16,
    pub min_sq_wr: u16,
}

pub fn parse_uctx_resp(b: &[u8]) -> Result<UctxResp, ShortResponse> {
    need(b, "alloc_ucontext", ALLOC_UCONTEXT_RESP_LEN)?;
    Ok(UctxResp {
        comp_mask: u32_at(b, uctx_resp::COMP_MASK),
        cmds_supp_udata_mask: u32_at(b, uctx_resp::CMDS_SUPP_UDATA_MASK),
        sub_cqs_per_cq: u16_at(b, uctx_resp::SUB_CQS_PER_CQ),
        inline_buf_size: u16_at(b, uctx_resp::INLINE_BUF_SIZE),
        max_llq_size: u32_at(b, uctx_resp::MAX_LLQ_SIZE),
        max_tx_batch: u16_at(b, uctx_resp::MAX_TX_BATCH),
        min_sq_wr: u16_at(b, uctx_resp::MIN_SQ_WR),
    })
}

pub fn parse_pd_resp(b: &[u8]) -> Result<u16, ShortResponse> {
    need(b, "alloc_pd", ALLOC_PD_RESP_LEN)?;
    Ok(u16_at(b, PD_RESP_PDN))
}

pub fn parse_ah_resp(b: &[u8]) -> Result<u16, ShortResponse> {
    need(b, "create_ah", CREATE_AH_RESP_LEN)?;
    Ok(u16_at(b, AH_RESP_EFA_ADDRESS_HANDLE))
}

/// CREATE_CQ's driver data: entry size, sub-CQ count (from the context), flags.
pub fn create_cq_cmd(cq_entry_size: u32, num_sub_cqs: u16, flags: u8) -> [u8; CREATE_CQ_CMD_LEN] {
    let mut b = [0u8; CREATE_CQ_CMD_LEN];
    b[cq_cmd::CQ_ENTRY_SIZE..cq_cmd::CQ_ENTRY_SIZE + 4]
        .copy_from_slice(&cq_entry_size.to_le_bytes());
    b[cq_cmd::NUM_SUB_CQS..cq_cmd::NUM_SUB_CQS + 2].copy_from_slice(&num_sub_cqs.to_le_bytes());
    b[cq_cmd::FLAGS] = flags;
    b
}

#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct CqResp {
    pub comp_mask: u32,
    pub q_mmap_key: u64,
    pub q_mmap_size: u64,
    pub cq_idx: u16,
    /// The doorbell's offset in its page and the page's mmap key, when `comp_mask` has
    /// [`CREATE_CQ_RESP_DB_OFF`].
    pub db: Option<(u32, u64)>,
}

pub fn parse_cq_resp(b: &[u8]) -> Result<CqResp, ShortResponse> {
    need(b, "create_cq", CREATE_CQ_RESP_LEN)?;
    let comp_mask = u32_at(b, cq_resp::COMP_MASK);
    Ok(CqResp {
        comp_mask,
        q_mmap_key: u64_at(b, cq_resp::Q_MMAP_KEY),
        q_mmap_size: u64_at(b, cq_resp::Q_MMAP_SIZE),
        cq_idx: u16_at(b, cq_resp::CQ_IDX),
        db: (comp_mask & CREATE_CQ_RESP_DB_OFF != 0)
            .then(|| (u32_at(b, cq_resp::DB_OFF), u64_at(b, cq_resp::DB_MMAP_KEY))),
    })
}

/// CREATE_QP's driver data: ring sizes in bytes and, for a driver QP, its type (SRD).
pub fn create_qp_cmd(
    rq_ring_size: u32,
    sq_ring_size: u32,
    driver_qp_type: u32,
) -> [u8; CREATE_QP_CMD_LEN] {
    let mut b = [0u8; CREATE_QP_CMD_LEN];
    b[qp_cmd::RQ_RING_SIZE..qp_cmd::RQ_RING_SIZE + 4].copy_from_slice(&rq_ring_size.to_le_bytes());
    b[qp_cmd::SQ_RING_SIZE..qp_cmd::SQ_RING_SIZE + 4].copy_from_slice(&sq_ring_size.to_le_bytes());
    b[qp_cmd::DRIVER_QP_TYPE..qp_cmd::DRIVER_QP_TYPE + 4]
        .copy_from_slice(&driver_qp_type.to_le_bytes());
    b
}

#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct QpResp {
    pub comp_mask: u32,
    pub rq_db_offset: u32,
    pub sq_db_offset: u32,
    pub llq_desc_offset: u32,
    pub rq_mmap_key: u64,
    pub rq_mmap_size: u64,
    pub rq_db_mmap_key: u64,
    pub sq_db_mmap_key: u64,
    pub llq_desc_mmap_key: u64,
    pub send_sub_cq_idx: u16,
    pub recv_sub_cq_idx: u16,
}

pub fn parse_qp_resp(b: &[u8]) -> Result<QpResp, ShortResponse> {
    need(b, "create_qp", CREATE_QP_RESP_LEN)?;
    Ok(QpResp {
        comp_mask: u32_at(b, qp_resp::COMP_MASK),
        rq_db_offset: u32_at(b, qp_resp::RQ_DB_OFFSET),
        sq_db_offset: u32_at(b, qp_resp::SQ_DB_OFFSET),
        llq_desc_offset: u32_at(b, qp_resp::LLQ_DESC_OFFSET),
        rq_mmap_key: u64_at(b, qp_resp::RQ_MMAP_KEY),
        rq_mmap_size: u64_at(b, qp_resp::RQ_MMAP_SIZE),
        rq_db_mmap_key: u64_at(b, qp_resp::RQ_DB_MMAP_KEY),
        sq_db_mmap_key: u64_at(b, qp_resp::SQ_DB_MMAP_KEY),
        llq_desc_mmap_key: u64_at(b, qp_resp::LLQ_DESC_MMAP_KEY),
        send_sub_cq_idx: u16_at(b, qp_resp::SEND_SUB_CQ_IDX),
        recv_sub_cq_idx: u16_at(b, qp_resp::RECV_SUB_CQ_IDX),
    })
}

/// EFA's device caps (efadv's `efadv_query_device`): what the extended QUERY_DEVICE returns in
/// its driver data when the context says the kernel fills it.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct DeviceCaps {
    pub max_sq_wr: u32,
    pub max_rq_wr: u32,
    pub max_sq_sge: u16,
    pub max_rq_sge: u16,
    pub max_rdma_size: u32,
    pub device_caps: u32,
}

impl DeviceCaps {
    pub fn rdma_read(&self) -> bool {
        self.device_caps & CAPS_RDMA_READ != 0
    }
    pub fn rdma_write(&self) -> bool {
        self.device_caps & CAPS_RDMA_WRITE != 0
    }
    pub fn cq_notifications(&self) -> bool {
        self.device_caps & CAPS_CQ_NOTIFICATIONS != 0
    }
}

pub fn parse_query_device_resp(b: &[u8]) -> Result<DeviceCaps, ShortResponse> {
    need(b, "query_device", EX_QUERY_DEVICE_RESP_LEN)?;
    Ok(DeviceCaps {
        max_sq_wr: u32_at(b, qdev_resp::MAX_SQ_WR),
        max_rq_wr: u32_at(b, qdev_resp::MAX_RQ_WR),
        max_sq_sge: u16_at(b, qdev_resp::MAX_SQ_SGE),
        max_rq_sge: u16_at(b, qdev_resp::MAX_RQ_SGE),
        max_rdma_size: u32_at(b, qdev_resp::MAX_RDMA_SIZE),
        device_caps: u32_at(b, qdev_resp::DEVICE_CAPS),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn commands() {
        assert_eq!(alloc_ucontext_cmd(), [3, 0, 0, 0, 0, 0, 0, 0]);
        assert_eq!(
            create_cq_cmd(16, 4, CREATE_CQ_WITH_COMPLETION_CHANNEL),
            [0, 0, 0, 0, 16, 0, 0, 0, 4, 0, 1, 0, 0, 0, 0, 0]
        );
        assert_eq!(
            create_qp_cmd(2048, 8192, QP_DRIVER_TYPE_SRD),
            [0, 0, 0, 0, 0, 8, 0, 0, 0, 0x20, 0, 0, 0, 0, 0, 0]
        );
    }

    #[test]
    fn responses() {
        let mut u = [0u8; 24];
        u[4] = 3;
        u[8] = 4;
        u[10] = 32;
        u[12..16].copy_from_slice(&0x1_0000u32.to_le_bytes());
        u[16] = 16;
        u[18] = 1;
        let r = parse_uctx_resp(&u).unwrap();
        assert_eq!(
            (
                r.cmds_supp_udata_mask,
                r.sub_cqs_per_cq,
                r.inline_buf_size,
                r.max_llq_size,
                r.max_tx_batch,
                r.min_sq_wr
            ),
            (3, 4, 32, 0x1_0000, 16, 1)
        );
        assert_eq!(
            parse_uctx_resp(&u[..23]),
            Err(ShortResponse {
                what: "alloc_ucontext",
                got: 23,
                want: 24
            })
        );

        let mut c = [0u8; 40];
        c[8..16].copy_from_slice(&0x1122_3344_5566_7788u64.to_le_bytes());
        c[16] = 0x40;
        c[24] = 9;
        c[28] = 0x80;
        c[32] = 0x99;
        let r = parse_cq_resp(&c).unwrap();
        assert_eq!(
            (r.q_mmap_key, r.q_mmap_size, r.cq_idx, r.db),
            (0x1122_3344_5566_7788, 0x40, 9, None)
        );
        c[0] = 1;
        assert_eq!(parse_cq_resp(&c).unwrap().db, Some((0x80, 0x99)));

        let mut q = [0u8; 64];
        q[12] = 0x40;
        q[48] = 7;
        q[56] = 1;
        q[58] = 2;
        let r = parse_qp_resp(&q).unwrap();
        assert_eq!(
            (
                r.llq_desc_offset,
                r.llq_desc_mmap_key,
                r.send_sub_cq_idx,
                r.recv_sub_cq_idx
            ),
            (0x40, 7, 1, 2)
        );
        assert!(parse_qp_resp(&q[..63]).is_err());

        let mut d = [0u8; 24];
        d[20] = 1 | 4;
        let caps = parse_query_device_resp(&d).unwrap();
        assert!(caps.rdma_read() && caps.cq_notifications());
        assert_eq!(parse_pd_resp(&[0, 0, 0, 0, 5, 0, 0, 0]), Ok(5));
        assert_eq!(parse_ah_resp(&[0, 0, 0, 0, 6, 1, 0, 0]), Ok(0x106));
    }
}
