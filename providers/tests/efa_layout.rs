//! EFA driver-data layouts (`providers::efa::abi`) against the installed kernel header
//! `<rdma/efa-abi.h>`, and EFA's driver id against `<rdma/ib_user_ioctl_verbs.h>`, through a
//! gcc-compiled `offsetof`/`sizeof` probe (tests/support/c_probe.rs). The device formats
//! (`efa_io_defs.h`) are rdma-core's, not the kernel's: the oracle's golden bytes check those.

#[path = "../../tests/support/c_probe.rs"]
mod c_probe;

use providers::efa::abi::*;
use providers::efa::RDMA_DRIVER_EFA;

fn table() -> Vec<(&'static str, u64)> {
    vec![
        (
            "sizeof(struct efa_ibv_alloc_ucontext_cmd)",
            ALLOC_UCONTEXT_CMD_LEN as u64,
        ),
        (
            "sizeof(struct efa_ibv_alloc_ucontext_resp)",
            ALLOC_UCONTEXT_RESP_LEN as u64,
        ),
        (
            "offsetof(struct efa_ibv_alloc_ucontext_resp, comp_mask)",
            uctx_resp::COMP_MASK as u64,
        ),
        (
            "offsetof(struct efa_ibv_alloc_ucontext_resp, cmds_supp_udata_mask)",
            uctx_resp::CMDS_SUPP_UDATA_MASK as u64,
        ),
        (
            "offsetof(struct efa_ibv_alloc_ucontext_resp, sub_cqs_per_cq)",
            uctx_resp::SUB_CQS_PER_CQ as u64,
        ),
        (
            "offsetof(struct efa_ibv_alloc_ucontext_resp, inline_buf_size)",
            uctx_resp::INLINE_BUF_SIZE as u64,
        ),
        (
            "offsetof(struct efa_ibv_alloc_ucontext_resp, max_llq_size)",
            uctx_resp::MAX_LLQ_SIZE as u64,
        ),
        (
            "offsetof(struct efa_ibv_alloc_ucontext_resp, max_tx_batch)",
            uctx_resp::MAX_TX_BATCH as u64,
        ),
        (
            "offsetof(struct efa_ibv_alloc_ucontext_resp, min_sq_wr)",
            uctx_resp::MIN_SQ_WR as u64,
        ),
        (
            "sizeof(struct efa_ibv_alloc_pd_resp)",
            ALLOC_PD_RESP_LEN as u64,
        ),
        (
            "offsetof(struct efa_ibv_alloc_pd_resp, pdn)",
            PD_RESP_PDN as u64,
        ),
        ("sizeof(struct efa_ibv_create_cq)", CREATE_CQ_CMD_LEN as u64),
        (
            "offsetof(struct efa_ibv_create_cq, comp_mask)",
            cq_cmd::COMP_MASK as u64,
        ),
        (
            "offsetof(struct efa_ibv_create_cq, cq_entry_size)",
            cq_cmd::CQ_ENTRY_SIZE as u64,
        ),
        (
            "offsetof(struct efa_ibv_create_cq, num_sub_cqs)",
            cq_cmd::NUM_SUB_CQS as u64,
        ),
        (
            "offsetof(struct efa_ibv_create_cq, flags)",
            cq_cmd::FLAGS as u64,
        ),
        (
            "sizeof(struct efa_ibv_create_cq_resp)",
            CREATE_CQ_RESP_LEN as u64,
        ),
        (
            "offsetof(struct efa_ibv_create_cq_resp, comp_mask)",
            cq_resp::COMP_MASK as u64,
        ),
        (
            "offsetof(struct efa_ibv_create_cq_resp, q_mmap_key)",
            cq_resp::Q_MMAP_KEY as u64,
        ),
        (
            "offsetof(struct efa_ibv_create_cq_resp, q_mmap_size)",
            cq_resp::Q_MMAP_SIZE as u64,
        ),
        (
            "offsetof(struct efa_ibv_create_cq_resp, cq_idx)",
            cq_resp::CQ_IDX as u64,
        ),
        (
            "offsetof(struct efa_ibv_create_cq_resp, db_off)",
            cq_resp::DB_OFF as u64,
        ),
        (
            "offsetof(struct efa_ibv_create_cq_resp, db_mmap_key)",
            cq_resp::DB_MMAP_KEY as u64,
        ),
        ("sizeof(struct efa_ibv_create_qp)", CREATE_QP_CMD_LEN as u64),
        (
            "offsetof(struct efa_ibv_create_qp, comp_mask)",
            qp_cmd::COMP_MASK as u64,
        ),
        (
            "offsetof(struct efa_ibv_create_qp, rq_ring_size)",
            qp_cmd::RQ_RING_SIZE as u64,
        ),
        (
            "offsetof(struct efa_ibv_create_qp, sq_ring_size)",
            qp_cmd::SQ_RING_SIZE as u64,
        ),
        (
            "offsetof(struct efa_ibv_create_qp, driver_qp_type)",
            qp_cmd::DRIVER_QP_TYPE as u64,
        ),
        (
            "sizeof(struct efa_ibv_create_qp_resp)",
            CREATE_QP_RESP_LEN as u64,
        ),
        (
            "offsetof(struct efa_ibv_create_qp_resp, comp_mask)",
            qp_resp::COMP_MASK as u64,
        ),
        (
            "offsetof(struct efa_ibv_create_qp_resp, rq_db_offset)",
            qp_resp::RQ_DB_OFFSET as u64,
        ),
        (
            "offsetof(struct efa_ibv_create_qp_resp, sq_db_offset)",
            qp_resp::SQ_DB_OFFSET as u64,
        ),
        (
            "offsetof(struct efa_ibv_create_qp_resp, llq_desc_offset)",
            qp_resp::LLQ_DESC_OFFSET as u64,
        ),
        (
            "offsetof(struct efa_ibv_create_qp_resp, rq_mmap_key)",
            qp_resp::RQ_MMAP_KEY as u64,
        ),
        (
            "offsetof(struct efa_ibv_create_qp_resp, rq_mmap_size)",
            qp_resp::RQ_MMAP_SIZE as u64,
        ),
        (
            "offsetof(struct efa_ibv_create_qp_resp, rq_db_mmap_key)",
            qp_resp::RQ_DB_MMAP_KEY as u64,
        ),
        (
            "offsetof(struct efa_ibv_create_qp_resp, sq_db_mmap_key)",
            qp_resp::SQ_DB_MMAP_KEY as u64,
        ),
        (
            "offsetof(struct efa_ibv_create_qp_resp, llq_desc_mmap_key)",
            qp_resp::LLQ_DESC_MMAP_KEY as u64,
        ),
        (
            "offsetof(struct efa_ibv_create_qp_resp, send_sub_cq_idx)",
            qp_resp::SEND_SUB_CQ_IDX as u64,
        ),
        (
            "offsetof(struct efa_ibv_create_qp_resp, recv_sub_cq_idx)",
            qp_resp::RECV_SUB_CQ_IDX as u64,
        ),
        (
            "sizeof(struct efa_ibv_create_ah_resp)",
            CREATE_AH_RESP_LEN as u64,
        ),
        (
            "offsetof(struct efa_ibv_create_ah_resp, efa_address_handle)",
            AH_RESP_EFA_ADDRESS_HANDLE as u64,
        ),
        (
            "sizeof(struct efa_ibv_ex_query_device_resp)",
            EX_QUERY_DEVICE_RESP_LEN as u64,
        ),
        (
            "offsetof(struct efa_ibv_ex_query_device_resp, comp_mask)",
            qdev_resp::COMP_MASK as u64,
        ),
        (
            "offsetof(struct efa_ibv_ex_query_device_resp, max_sq_wr)",
            qdev_resp::MAX_SQ_WR as u64,
        ),
        (
            "offsetof(struct efa_ibv_ex_query_device_resp, max_rq_wr)",
            qdev_resp::MAX_RQ_WR as u64,
        ),
        (
            "offsetof(struct efa_ibv_ex_query_device_resp, max_sq_sge)",
            qdev_resp::MAX_SQ_SGE as u64,
        ),
        (
            "offsetof(struct efa_ibv_ex_query_device_resp, max_rq_sge)",
            qdev_resp::MAX_RQ_SGE as u64,
        ),
        (
            "offsetof(struct efa_ibv_ex_query_device_resp, max_rdma_size)",
            qdev_resp::MAX_RDMA_SIZE as u64,
        ),
        (
            "offsetof(struct efa_ibv_ex_query_device_resp, device_caps)",
            qdev_resp::DEVICE_CAPS as u64,
        ),
        ("EFA_UVERBS_ABI_VERSION", ABI_VERSION as u64),
        (
            "EFA_ALLOC_UCONTEXT_CMD_COMP_TX_BATCH",
            UCTX_CMD_COMP_TX_BATCH as u64,
        ),
        (
            "EFA_ALLOC_UCONTEXT_CMD_COMP_MIN_SQ_WR",
            UCTX_CMD_COMP_MIN_SQ_WR as u64,
        ),
        (
            "EFA_USER_CMDS_SUPP_UDATA_QUERY_DEVICE",
            SUPP_UDATA_QUERY_DEVICE as u64,
        ),
        (
            "EFA_USER_CMDS_SUPP_UDATA_CREATE_AH",
            SUPP_UDATA_CREATE_AH as u64,
        ),
        (
            "EFA_CREATE_CQ_WITH_COMPLETION_CHANNEL",
            CREATE_CQ_WITH_COMPLETION_CHANNEL as u64,
        ),
        ("EFA_CREATE_CQ_WITH_SGID", CREATE_CQ_WITH_SGID as u64),
        ("EFA_CREATE_CQ_RESP_DB_OFF", CREATE_CQ_RESP_DB_OFF as u64),
        ("EFA_QP_DRIVER_TYPE_SRD", QP_DRIVER_TYPE_SRD as u64),
        ("EFA_QUERY_DEVICE_CAPS_RDMA_READ", CAPS_RDMA_READ as u64),
        ("EFA_QUERY_DEVICE_CAPS_RNR_RETRY", CAPS_RNR_RETRY as u64),
        (
            "EFA_QUERY_DEVICE_CAPS_CQ_NOTIFICATIONS",
            CAPS_CQ_NOTIFICATIONS as u64,
        ),
        (
            "EFA_QUERY_DEVICE_CAPS_CQ_WITH_SGID",
            CAPS_CQ_WITH_SGID as u64,
        ),
        ("RDMA_DRIVER_EFA", RDMA_DRIVER_EFA as u64),
    ]
}

#[test]
fn layout_matches_the_kernel_header() {
    let t = table();
    let exprs: Vec<&str> = t.iter().map(|(e, _)| *e).collect();
    let c = c_probe::c_values(
        "efa-layout",
        &["rdma/efa-abi.h", "rdma/ib_user_ioctl_verbs.h"],
        "",
        &exprs,
    );
    let bad = c_probe::mismatches(t.iter().map(|(e, ours)| (*e, *ours, *e)), &c);
    assert!(bad.is_empty(), "layout mismatches:\n{}", bad.join("\n"));
}
