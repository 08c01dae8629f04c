//! mlx5 driver-data layouts (`providers::mlx5::abi`) against the installed kernel header
//! `<rdma/mlx5-abi.h>`, through a gcc-compiled `offsetof`/`sizeof` probe
//! (tests/support/c_probe.rs).

#[path = "../../tests/support/c_probe.rs"]
mod c_probe;

use std::mem::offset_of;

use providers::mlx5::abi::*;

fn table() -> Vec<(&'static str, usize)> {
    vec![
        (
            "sizeof(struct mlx5_ib_alloc_ucontext_req_v2)",
            ALLOC_UCONTEXT_REQ_V2_LEN,
        ),
        (
            "offsetof(struct mlx5_ib_alloc_ucontext_req_v2, total_num_bfregs)",
            uctx_req::TOTAL_NUM_BFREGS,
        ),
        (
            "offsetof(struct mlx5_ib_alloc_ucontext_req_v2, num_low_latency_bfregs)",
            uctx_req::NUM_LOW_LATENCY_BFREGS,
        ),
        (
            "offsetof(struct mlx5_ib_alloc_ucontext_req_v2, flags)",
            uctx_req::FLAGS,
        ),
        (
            "offsetof(struct mlx5_ib_alloc_ucontext_req_v2, comp_mask)",
            uctx_req::COMP_MASK,
        ),
        (
            "offsetof(struct mlx5_ib_alloc_ucontext_req_v2, max_cqe_version)",
            uctx_req::MAX_CQE_VERSION,
        ),
        (
            "offsetof(struct mlx5_ib_alloc_ucontext_req_v2, lib_caps)",
            uctx_req::LIB_CAPS,
        ),
        ("MLX5_LIB_CAP_4K_UAR", LIB_CAP_4K_UAR as usize),
        ("MLX5_LIB_CAP_DYN_UAR", LIB_CAP_DYN_UAR as usize),
        ("MLX5_IB_ALLOC_UCTX_DEVX", ALLOC_UCTX_DEVX as usize),
        (
            "sizeof(struct mlx5_ib_alloc_ucontext_resp)",
            ALLOC_UCONTEXT_RESP_LEN,
        ),
        (
            "offsetof(struct mlx5_ib_alloc_ucontext_resp, qp_tab_size)",
            uctx_resp::QP_TAB_SIZE,
        ),
        (
            "offsetof(struct mlx5_ib_alloc_ucontext_resp, bf_reg_size)",
            uctx_resp::BF_REG_SIZE,
        ),
        (
            "offsetof(struct mlx5_ib_alloc_ucontext_resp, tot_bfregs)",
            uctx_resp::TOT_BFREGS,
        ),
        (
            "offsetof(struct mlx5_ib_alloc_ucontext_resp, cache_line_size)",
            uctx_resp::CACHE_LINE_SIZE,
        ),
        (
            "offsetof(struct mlx5_ib_alloc_ucontext_resp, max_sq_desc_sz)",
            uctx_resp::MAX_SQ_DESC_SZ,
        ),
        (
            "offsetof(struct mlx5_ib_alloc_ucontext_resp, max_rq_desc_sz)",
            uctx_resp::MAX_RQ_DESC_SZ,
        ),
        (
            "offsetof(struct mlx5_ib_alloc_ucontext_resp, max_send_wqebb)",
            uctx_resp::MAX_SEND_WQEBB,
        ),
        (
            "offsetof(struct mlx5_ib_alloc_ucontext_resp, max_recv_wr)",
            uctx_resp::MAX_RECV_WR,
        ),
        (
            "offsetof(struct mlx5_ib_alloc_ucontext_resp, max_srq_recv_wr)",
            uctx_resp::MAX_SRQ_RECV_WR,
        ),
        (
            "offsetof(struct mlx5_ib_alloc_ucontext_resp, num_ports)",
            uctx_resp::NUM_PORTS,
        ),
        (
            "offsetof(struct mlx5_ib_alloc_ucontext_resp, flow_action_flags)",
            uctx_resp::FLOW_ACTION_FLAGS,
        ),
        (
            "offsetof(struct mlx5_ib_alloc_ucontext_resp, comp_mask)",
            uctx_resp::COMP_MASK,
        ),
        (
            "offsetof(struct mlx5_ib_alloc_ucontext_resp, response_length)",
            uctx_resp::RESPONSE_LENGTH,
        ),
        (
            "offsetof(struct mlx5_ib_alloc_ucontext_resp, cqe_version)",
            uctx_resp::CQE_VERSION,
        ),
        (
            "offsetof(struct mlx5_ib_alloc_ucontext_resp, cmds_supp_uhw)",
            uctx_resp::CMDS_SUPP_UHW,
        ),
        (
            "offsetof(struct mlx5_ib_alloc_ucontext_resp, eth_min_inline)",
            uctx_resp::ETH_MIN_INLINE,
        ),
        (
            "offsetof(struct mlx5_ib_alloc_ucontext_resp, clock_info_versions)",
            uctx_resp::CLOCK_INFO_VERSIONS,
        ),
        (
            "offsetof(struct mlx5_ib_alloc_ucontext_resp, hca_core_clock_offset)",
            uctx_resp::HCA_CORE_CLOCK_OFFSET,
        ),
        (
            "offsetof(struct mlx5_ib_alloc_ucontext_resp, log_uar_size)",
            uctx_resp::LOG_UAR_SIZE,
        ),
        (
            "offsetof(struct mlx5_ib_alloc_ucontext_resp, num_uars_per_page)",
            uctx_resp::NUM_UARS_PER_PAGE,
        ),
        (
            "offsetof(struct mlx5_ib_alloc_ucontext_resp, num_dyn_bfregs)",
            uctx_resp::NUM_DYN_BFREGS,
        ),
        (
            "offsetof(struct mlx5_ib_alloc_ucontext_resp, dump_fill_mkey)",
            uctx_resp::DUMP_FILL_MKEY,
        ),
        (
            "MLX5_USER_CMDS_SUPP_UHW_CREATE_AH",
            CMDS_SUPP_UHW_CREATE_AH as usize,
        ),
        ("sizeof(struct mlx5_ib_create_cq)", CREATE_CQ_REQ_LEN),
        (
            "offsetof(struct mlx5_ib_create_cq, buf_addr)",
            cq_req::BUF_ADDR,
        ),
        (
            "offsetof(struct mlx5_ib_create_cq, db_addr)",
            cq_req::DB_ADDR,
        ),
        (
            "offsetof(struct mlx5_ib_create_cq, cqe_size)",
            cq_req::CQE_SIZE,
        ),
        (
            "offsetof(struct mlx5_ib_create_cq, cqe_comp_en)",
            cq_req::CQE_COMP_EN,
        ),
        (
            "offsetof(struct mlx5_ib_create_cq, cqe_comp_res_format)",
            cq_req::CQE_COMP_RES_FORMAT,
        ),
        ("offsetof(struct mlx5_ib_create_cq, flags)", cq_req::FLAGS),
        (
            "offsetof(struct mlx5_ib_create_cq, uar_page_index)",
            cq_req::UAR_PAGE_INDEX,
        ),
        ("sizeof(struct mlx5_ib_create_cq_resp)", CREATE_CQ_RESP_LEN),
        ("sizeof(struct mlx5_ib_create_qp)", CREATE_QP_REQ_LEN),
        (
            "offsetof(struct mlx5_ib_create_qp, buf_addr)",
            qp_req::BUF_ADDR,
        ),
        (
            "offsetof(struct mlx5_ib_create_qp, db_addr)",
            qp_req::DB_ADDR,
        ),
        (
            "offsetof(struct mlx5_ib_create_qp, sq_wqe_count)",
            qp_req::SQ_WQE_COUNT,
        ),
        (
            "offsetof(struct mlx5_ib_create_qp, rq_wqe_count)",
            qp_req::RQ_WQE_COUNT,
        ),
        (
            "offsetof(struct mlx5_ib_create_qp, rq_wqe_shift)",
            qp_req::RQ_WQE_SHIFT,
        ),
        ("offsetof(struct mlx5_ib_create_qp, flags)", qp_req::FLAGS),
        ("offsetof(struct mlx5_ib_create_qp, uidx)", qp_req::UIDX),
        (
            "offsetof(struct mlx5_ib_create_qp, bfreg_index)",
            qp_req::BFREG_INDEX,
        ),
        (
            "offsetof(struct mlx5_ib_create_qp, sq_buf_addr)",
            qp_req::SQ_BUF_ADDR,
        ),
        (
            "offsetof(struct mlx5_ib_create_qp, ece_options)",
            qp_req::ECE_OPTIONS,
        ),
        (
            "offsetof(struct mlx5_ib_create_qp, dci_streams)",
            qp_req::DCI_STREAMS,
        ),
        ("MLX5_QP_FLAG_SCATTER_CQE", QP_FLAG_SCATTER_CQE as usize),
        ("sizeof(struct mlx5_ib_create_qp_resp)", CREATE_QP_RESP_LEN),
        ("offsetof(struct mlx5_ib_create_qp_resp, bfreg_index)", 0),
        ("sizeof(struct mlx5_ib_create_srq)", CREATE_SRQ_REQ_LEN),
        (
            "offsetof(struct mlx5_ib_create_srq, buf_addr)",
            srq_req::BUF_ADDR,
        ),
        (
            "offsetof(struct mlx5_ib_create_srq, db_addr)",
            srq_req::DB_ADDR,
        ),
        ("offsetof(struct mlx5_ib_create_srq, flags)", srq_req::FLAGS),
        ("offsetof(struct mlx5_ib_create_srq, uidx)", srq_req::UIDX),
        (
            "sizeof(struct mlx5_ib_create_srq_resp)",
            CREATE_SRQ_RESP_LEN,
        ),
        ("offsetof(struct mlx5_ib_create_srq_resp, srqn)", 0),
        ("sizeof(struct mlx5_ib_create_ah_resp)", CREATE_AH_RESP_LEN),
        ("offsetof(struct mlx5_ib_create_ah_resp, dmac)", 4),
        (
            "MLX5_IB_MMAP_REGULAR_PAGE",
            providers::mlx5::uar::MMAP_REGULAR_PAGE as usize,
        ),
        (
            "MLX5_IB_MMAP_NC_PAGE",
            providers::mlx5::uar::MMAP_NC_PAGE as usize,
        ),
        ("MLX5_IB_UVERBS_ABI_VERSION", ABI_VERSION as usize),
    ]
}

#[test]
fn layout_matches_the_kernel_header() {
    let t = table();
    let exprs: Vec<&str> = t.iter().map(|(e, _)| *e).collect();
    let c = c_probe::c_values("mlx5-layout", &["rdma/mlx5-abi.h"], "", &exprs);
    let bad = c_probe::mismatches(t.iter().map(|(e, ours)| (*e, *ours as u64, *e)), &c);
    assert!(bad.is_empty(), "layout mismatches:\n{}", bad.join("\n"));
}

/// The Dynamically Connected parts of CREATE_QP (providers::mlx5::dc) and the QP type DC QPs
/// are created with.
#[test]
fn dc_layout_matches_the_kernel_headers() {
    use providers::mlx5::dc;
    let t: Vec<(&str, usize)> = vec![
        ("MLX5_QP_FLAG_TYPE_DCT", dc::QP_FLAG_TYPE_DCT as usize),
        ("MLX5_QP_FLAG_TYPE_DCI", dc::QP_FLAG_TYPE_DCI as usize),
        ("MLX5_QP_FLAG_DCI_STREAM", dc::QP_FLAG_DCI_STREAM as usize),
        ("offsetof(struct mlx5_ib_create_qp, access_key)", qp_req::SQ_BUF_ADDR),
        ("sizeof(((struct mlx5_ib_create_qp *)0)->access_key)", 8),
        ("sizeof(struct mlx5_ib_create_qp_dci_streams)", 2),
        (
            "offsetof(struct mlx5_ib_create_qp_dci_streams, log_num_concurent)",
            // `sys::CreateQp` flattens the struct into two fields at `qp_req::DCI_STREAMS`.
            offset_of!(uverbs::sys::mlx5::CreateQp, dci_log_num_concurent) - qp_req::DCI_STREAMS,
        ),
        (
            "offsetof(struct mlx5_ib_create_qp_dci_streams, log_num_errored)",
            offset_of!(uverbs::sys::mlx5::CreateQp, dci_log_num_errored) - qp_req::DCI_STREAMS,
        ),
        ("IB_UVERBS_QPT_DRIVER", uverbs::provider::QPT_DRIVER as usize),
    ];
    let exprs: Vec<&str> = t.iter().map(|(e, _)| *e).collect();
    let c = c_probe::c_values("mlx5-dc-layout", &["rdma/mlx5-abi.h", "rdma/ib_user_ioctl_verbs.h"], "", &exprs);
    let bad = c_probe::mismatches(t.iter().map(|(e, ours)| (*e, *ours as u64, *e)), &c);
    assert!(bad.is_empty(), "layout mismatches:\n{}", bad.join("\n"));
}

#[test]
fn dc_modify_layout_matches_the_kernel_header() {
    use providers::mlx5::dc;
    let t: Vec<(&str, usize)> = vec![
        ("sizeof(struct mlx5_ib_modify_qp)", dc::MODIFY_QP_REQ_LEN),
        ("sizeof(struct mlx5_ib_modify_qp_resp)", dc::MODIFY_QP_RESP_LEN),
        ("offsetof(struct mlx5_ib_modify_qp_resp, response_length)", dc::MODIFY_RESP_RESPONSE_LENGTH),
        ("offsetof(struct mlx5_ib_modify_qp_resp, dctn)", dc::MODIFY_RESP_DCTN),
    ];
    let exprs: Vec<&str> = t.iter().map(|(e, _)| *e).collect();
    let c = c_probe::c_values("mlx5-dc-modify-layout", &["rdma/mlx5-abi.h"], "", &exprs);
    let bad = c_probe::mismatches(t.iter().map(|(e, ours)| (*e, *ours as u64, *e)), &c);
    assert!(bad.is_empty(), "layout mismatches:\n{}", bad.join("\n"));
}

#[test]
fn devx_ids_and_pd_response_match_the_kernel_headers() {
    use providers::mlx5::devx;
    let t: Vec<(&str, usize)> = vec![
        ("sizeof(struct mlx5_ib_alloc_pd_resp)", ALLOC_PD_RESP_LEN),
        ("offsetof(struct mlx5_ib_alloc_pd_resp, pdn)", ALLOC_PD_RESP_PDN),
        ("MLX5_IB_OBJECT_DEVX", devx::OBJECT_DEVX as usize),
        ("MLX5_IB_OBJECT_DEVX_OBJ", devx::OBJECT_DEVX_OBJ as usize),
        ("MLX5_IB_METHOD_DEVX_OTHER", devx::METHOD_DEVX_OTHER as usize),
        ("MLX5_IB_ATTR_DEVX_OTHER_CMD_IN", devx::ATTR_DEVX_OTHER_CMD_IN as usize),
        ("MLX5_IB_ATTR_DEVX_OTHER_CMD_OUT", devx::ATTR_DEVX_OTHER_CMD_OUT as usize),
        ("MLX5_IB_METHOD_DEVX_OBJ_CREATE", devx::METHOD_DEVX_OBJ_CREATE as usize),
        ("MLX5_IB_METHOD_DEVX_OBJ_DESTROY", devx::METHOD_DEVX_OBJ_DESTROY as usize),
        ("MLX5_IB_ATTR_DEVX_OBJ_CREATE_HANDLE", devx::ATTR_DEVX_OBJ_CREATE_HANDLE as usize),
        ("MLX5_IB_ATTR_DEVX_OBJ_CREATE_CMD_IN", devx::ATTR_DEVX_OBJ_CREATE_CMD_IN as usize),
        ("MLX5_IB_ATTR_DEVX_OBJ_CREATE_CMD_OUT", devx::ATTR_DEVX_OBJ_CREATE_CMD_OUT as usize),
        ("MLX5_IB_ATTR_DEVX_OBJ_DESTROY_HANDLE", devx::ATTR_DEVX_OBJ_DESTROY_HANDLE as usize),
        ("RDMA_DRIVER_MLX5", devx::DRIVER_ID as usize),
    ];
    let exprs: Vec<&str> = t.iter().map(|(e, _)| *e).collect();
    let c = c_probe::c_values(
        "mlx5-devx-layout",
        &["rdma/mlx5-abi.h", "rdma/ib_user_ioctl_verbs.h", "rdma/ib_user_ioctl_cmds.h", "rdma/mlx5_user_ioctl_cmds.h"],
        "",
        &exprs,
    );
    let bad = c_probe::mismatches(t.iter().map(|(e, ours)| (*e, *ours as u64, *e)), &c);
    assert!(bad.is_empty(), "layout mismatches:\n{}", bad.join("\n"));
}

#[test]
fn devx_context_request_sets_only_the_devx_flag() {
    let plain = UctxReq::default().encode();
    let devx = UctxReq::default().encode_devx();
    assert_eq!(devx.len(), plain.len());
    for (i, (a, b)) in plain.iter().zip(&devx).enumerate() {
        if (uctx_req::FLAGS..uctx_req::FLAGS + 4).contains(&i) {
            continue;
        }
        assert_eq!(a, b, "byte {i}");
    }
    assert_eq!(devx[uctx_req::FLAGS..uctx_req::FLAGS + 4], ALLOC_UCTX_DEVX.to_le_bytes());
    assert_eq!(parse_alloc_pd_resp(&[0x34, 0x12, 0, 0]).unwrap(), 0x1234);
    assert!(parse_alloc_pd_resp(&[1, 2, 3]).is_err());
}
