//! Every ABI struct in `uverbs::sys` against the installed kernel headers (/usr/include/rdma):
//! size, alignment, and every field's offset and size, plus the numeric constants.
//!
//! The test writes a C probe that includes the headers and prints one number per check, builds it
//! with gcc into a temporary directory, runs it, and compares with `size_of` / `offset_of!` on our
//! structs. Union members are probed by their C path (`wr.ud.av`); arms of a union that we model as
//! separate structs are probed relative to the union's offset.

use std::mem::{offset_of, size_of};

use uverbs::sys::{self, mlx5, rxe};

#[path = "../../tests/support/c_probe.rs"]
mod c_probe;
#[macro_use]
#[path = "../../tests/support/layout_check.rs"]
mod layout_check;

use layout_check::Check;

const HEADERS: &[&str] = &[
    "rdma/ib_user_verbs.h",
    "rdma/ib_user_ioctl_verbs.h",
    "rdma/rdma_user_ioctl_cmds.h",
    "rdma/ib_user_ioctl_cmds.h",
    "rdma/rdma_user_ioctl.h",
    "rdma/rdma_user_rxe.h",
    "rdma/mlx5-abi.h",
];

fn all_checks() -> Vec<Check> {
    let mut v = Vec::new();
    layout!(v;
        sys::CmdHdr = "struct ib_uverbs_cmd_hdr" { command, in_words, out_words }
        sys::ExCmdHdr = "struct ib_uverbs_ex_cmd_hdr" { response, provider_in_words, provider_out_words, cmd_hdr_reserved }
        sys::GetContext = "struct ib_uverbs_get_context" { response }
        sys::GetContextResp = "struct ib_uverbs_get_context_resp" { async_fd, num_comp_vectors }
        sys::QueryDevice = "struct ib_uverbs_query_device" { response }
        sys::QueryDeviceResp = "struct ib_uverbs_query_device_resp" {
            fw_ver, node_guid, sys_image_guid, max_mr_size, page_size_cap, vendor_id, vendor_part_id, hw_ver,
            max_qp, max_qp_wr, device_cap_flags, max_sge, max_sge_rd, max_cq, max_cqe, max_mr, max_pd,
            max_qp_rd_atom, max_ee_rd_atom, max_res_rd_atom, max_qp_init_rd_atom, max_ee_init_rd_atom,
            atomic_cap, max_ee, max_rdd, max_mw, max_raw_ipv6_qp, max_raw_ethy_qp, max_mcast_grp,
            max_mcast_qp_attach, max_total_mcast_qp_attach, max_ah, max_fmr, max_map_per_fmr, max_srq,
            max_srq_wr, max_srq_sge, max_pkeys, local_ca_ack_delay, phys_port_cnt, reserved
        }
        sys::ExQueryDevice = "struct ib_uverbs_ex_query_device" { comp_mask, reserved }
        sys::OdpCaps = "struct ib_uverbs_odp_caps" {
            general_caps, rc_odp_caps = "per_transport_caps.rc_odp_caps", uc_odp_caps = "per_transport_caps.uc_odp_caps",
            ud_odp_caps = "per_transport_caps.ud_odp_caps", reserved
        }
        sys::RssCaps = "struct ib_uverbs_rss_caps" { supported_qpts, max_rwq_indirection_tables, max_rwq_indirection_table_size, reserved }
        sys::TmCaps = "struct ib_uverbs_tm_caps" { max_rndv_hdr_size, max_num_tags, flags, max_ops, max_sge, reserved }
        sys::CqModerationCaps = "struct ib_uverbs_cq_moderation_caps" { max_cq_moderation_count, max_cq_moderation_period, reserved }
        sys::ExQueryDeviceResp = "struct ib_uverbs_ex_query_device_resp" {
            base, comp_mask, response_length, odp_caps, timestamp_mask, hca_core_clock, device_cap_flags_ex,
            rss_caps, max_wq_type_rq, raw_packet_caps, tm_caps, cq_moderation_caps, max_dm_size, xrc_odp_caps, reserved
        }
        sys::QueryPort = "struct ib_uverbs_query_port" { response, port_num, reserved }
        sys::QueryPortResp = "struct ib_uverbs_query_port_resp" {
            port_cap_flags, max_msg_sz, bad_pkey_cntr, qkey_viol_cntr, gid_tbl_len, pkey_tbl_len, lid, sm_lid,
            state, max_mtu, active_mtu, lmc, max_vl_num, sm_sl, subnet_timeout, init_type_reply, active_width,
            active_speed, phys_state, link_layer, flags, reserved
        }
        sys::QueryPortRespEx = "struct ib_uverbs_query_port_resp_ex" { legacy_resp, port_cap_flags2, reserved }
        sys::AllocPd = "struct ib_uverbs_alloc_pd" { response }
        sys::AllocPdResp = "struct ib_uverbs_alloc_pd_resp" { pd_handle }
        sys::DeallocPd = "struct ib_uverbs_dealloc_pd" { pd_handle }
        sys::RegMr = "struct ib_uverbs_reg_mr" { response, start, length, hca_va, pd_handle, access_flags }
        sys::RegMrResp = "struct ib_uverbs_reg_mr_resp" { mr_handle, lkey, rkey }
        sys::DeregMr = "struct ib_uverbs_dereg_mr" { mr_handle }
        sys::CreateCompChannel = "struct ib_uverbs_create_comp_channel" { response }
        sys::CreateCompChannelResp = "struct ib_uverbs_create_comp_channel_resp" { fd }
        sys::CreateCq = "struct ib_uverbs_create_cq" { response, user_handle, cqe, comp_vector, comp_channel, reserved }
        sys::CreateCqResp = "struct ib_uverbs_create_cq_resp" { cq_handle, cqe }
        sys::ExCreateCq = "struct ib_uverbs_ex_create_cq" { user_handle, cqe, comp_vector, comp_channel, comp_mask, flags, reserved }
        sys::ExCreateCqResp = "struct ib_uverbs_ex_create_cq_resp" { base, comp_mask, response_length }
        sys::DestroyCq = "struct ib_uverbs_destroy_cq" { response, cq_handle, reserved }
        sys::DestroyCqResp = "struct ib_uverbs_destroy_cq_resp" { comp_events_reported, async_events_reported }
        sys::ReqNotifyCq = "struct ib_uverbs_req_notify_cq" { cq_handle, solicited_only }
        sys::Wc = "struct ib_uverbs_wc" {
            wr_id, status, opcode, vendor_err, byte_len, ex = "ex.imm_data", qp_num, src_qp, wc_flags,
            pkey_index, slid, sl, dlid_path_bits, port_num, reserved
        }
        sys::GlobalRoute = "struct ib_uverbs_global_route" { dgid, flow_label, sgid_index, hop_limit, traffic_class, reserved }
        sys::AhAttr = "struct ib_uverbs_ah_attr" { grh, dlid, sl, src_path_bits, static_rate, is_global, port_num, reserved }
        sys::CreateQp = "struct ib_uverbs_create_qp" {
            response, user_handle, pd_handle, send_cq_handle, recv_cq_handle, srq_handle, max_send_wr, max_recv_wr,
            max_send_sge, max_recv_sge, max_inline_data, sq_sig_all, qp_type, is_srq, reserved
        }
        sys::CreateQpResp = "struct ib_uverbs_create_qp_resp" {
            qp_handle, qpn, max_send_wr, max_recv_wr, max_send_sge, max_recv_sge, max_inline_data, reserved
        }
        sys::ExCreateQpResp = "struct ib_uverbs_ex_create_qp_resp" { base, comp_mask, response_length }
        sys::QpCap = "struct ib_uverbs_qp_cap" { max_send_wr, max_recv_wr, max_send_sge, max_recv_sge, max_inline_data }
        sys::QpDest = "struct ib_uverbs_qp_dest" {
            dgid, flow_label, dlid, reserved, sgid_index, hop_limit, traffic_class, sl, src_path_bits, static_rate, is_global, port_num
        }
        sys::ModifyQp = "struct ib_uverbs_modify_qp" {
            dest, alt_dest, qp_handle, attr_mask, qkey, rq_psn, sq_psn, dest_qp_num, qp_access_flags, pkey_index,
            alt_pkey_index, qp_state, cur_qp_state, path_mtu, path_mig_state, en_sqd_async_notify, max_rd_atomic,
            max_dest_rd_atomic, min_rnr_timer, port_num, timeout, retry_cnt, rnr_retry, alt_port_num, alt_timeout, reserved
        }
        sys::QueryQp = "struct ib_uverbs_query_qp" { response, qp_handle, attr_mask }
        sys::QueryQpResp = "struct ib_uverbs_query_qp_resp" {
            dest, alt_dest, max_send_wr, max_recv_wr, max_send_sge, max_recv_sge, max_inline_data, qkey, rq_psn,
            sq_psn, dest_qp_num, qp_access_flags, pkey_index, alt_pkey_index, qp_state, cur_qp_state, path_mtu,
            path_mig_state, sq_draining, max_rd_atomic, max_dest_rd_atomic, min_rnr_timer, port_num, timeout,
            retry_cnt, rnr_retry, alt_port_num, alt_timeout, sq_sig_all, reserved
        }
        sys::DestroyQp = "struct ib_uverbs_destroy_qp" { response, qp_handle, reserved }
        sys::DestroyQpResp = "struct ib_uverbs_destroy_qp_resp" { events_reported }
        sys::UverbsSge = "struct ib_uverbs_sge" { addr, length, lkey }
        sys::UverbsSendWr = "struct ib_uverbs_send_wr" { wr_id, num_sge, opcode, send_flags, ex = "ex.imm_data", wr }
        sys::PostSend = "struct ib_uverbs_post_send" { response, qp_handle, wr_count, sge_count, wqe_size }
        sys::PostSendResp = "struct ib_uverbs_post_send_resp" { bad_wr }
        sys::CreateAh = "struct ib_uverbs_create_ah" { response, user_handle, pd_handle, reserved, attr }
        sys::CreateAhResp = "struct ib_uverbs_create_ah_resp" { ah_handle }
        sys::DestroyAh = "struct ib_uverbs_destroy_ah" { ah_handle }
        sys::AttachMcast = "struct ib_uverbs_attach_mcast" { gid, qp_handle, mlid, reserved }
        sys::DetachMcast = "struct ib_uverbs_detach_mcast" { gid, qp_handle, mlid, reserved }
        sys::CreateSrq = "struct ib_uverbs_create_srq" { response, user_handle, pd_handle, max_wr, max_sge, srq_limit }
        sys::CreateSrqResp = "struct ib_uverbs_create_srq_resp" { srq_handle, max_wr, max_sge, srqn }
        sys::CreateXsrq = "struct ib_uverbs_create_xsrq" { response, user_handle, srq_type, pd_handle, max_wr, max_sge, srq_limit, max_num_tags, xrcd_handle, cq_handle }
        sys::OpenXrcd = "struct ib_uverbs_open_xrcd" { response, fd, oflags }
        sys::OpenXrcdResp = "struct ib_uverbs_open_xrcd_resp" { xrcd_handle }
        sys::CloseXrcd = "struct ib_uverbs_close_xrcd" { xrcd_handle }
        sys::DestroySrq = "struct ib_uverbs_destroy_srq" { response, srq_handle, reserved }
        sys::DestroySrqResp = "struct ib_uverbs_destroy_srq_resp" { events_reported }
        sys::CompEventDesc = "struct ib_uverbs_comp_event_desc" { cq_handle }
        sys::AsyncEventDesc = "struct ib_uverbs_async_event_desc" { element, event_type, reserved }
        sys::GidEntry = "struct ib_uverbs_gid_entry" { gid, gid_index, port_num, gid_type, netdev_ifindex }
        sys::IoctlAttr = "struct ib_uverbs_attr" { attr_id, len, flags, attr_data, data }
        sys::IoctlHdr = "struct ib_uverbs_ioctl_hdr" { length, object_id, method_id, num_attrs, reserved1, driver_id, reserved2 }

        // ---- rxe ----
        rxe::Av = "struct rxe_av" { port_num, network_type, dmac, grh, sgid_addr, dgid_addr }
        rxe::SendWr = "struct rxe_send_wr" { wr_id, reserved, opcode, send_flags, ex = "ex.imm_data", wr }
        rxe::WrRdma = "struct rxe_send_wr" @ "wr.rdma" { remote_addr, rkey, reserved }
        rxe::WrAtomic = "struct rxe_send_wr" @ "wr.atomic" { remote_addr, compare_add, swap, rkey, reserved }
        rxe::WrUd = "struct rxe_send_wr" @ "wr.ud" { remote_qpn, remote_qkey, pkey_index, reserved, ah_num, pad, av }
        rxe::WrMw = "struct rxe_send_wr" @ "wr.mw" { addr, length, mr_lkey, mw_rkey, rkey, access }
        rxe::Sge = "struct rxe_sge" { addr, length, lkey }
        rxe::Mminfo = "struct mminfo" { offset, size, pad }
        rxe::DmaInfo = "struct rxe_dma_info" { length, resid, cur_sge, num_sge, sge_offset, reserved }
        rxe::SendWqe = "struct rxe_send_wqe" {
            wr, status, state, iova, mask, first_psn, last_psn, ack_length, ssn, has_rd_atomic, dma
        }
        rxe::RecvWqe = "struct rxe_recv_wqe" { wr_id, reserved, padding, dma }
        rxe::CreateAhResp = "struct rxe_create_ah_resp" { ah_num, reserved }
        rxe::CreateCqResp = "struct rxe_create_cq_resp" { mi }
        rxe::ResizeCqResp = "struct rxe_resize_cq_resp" { mi }
        rxe::CreateQpResp = "struct rxe_create_qp_resp" { rq_mi, sq_mi }
        rxe::CreateSrqResp = "struct rxe_create_srq_resp" { mi, srq_num, reserved }
        rxe::ModifySrqCmd = "struct rxe_modify_srq_cmd" { mmap_info_addr }
        rxe::QueueBufHdr = "struct rxe_queue_buf" { log2_elem_size, index_mask, pad_1, producer_index, pad_2, consumer_index, pad_3 }

        // ---- mlx5 ----
        mlx5::AllocUcontextReqV2 = "struct mlx5_ib_alloc_ucontext_req_v2" {
            total_num_bfregs, num_low_latency_bfregs, flags, comp_mask, max_cqe_version, reserved0, reserved1, reserved2, lib_caps
        }
        mlx5::AllocUcontextResp = "struct mlx5_ib_alloc_ucontext_resp" {
            qp_tab_size, bf_reg_size, tot_bfregs, cache_line_size, max_sq_desc_sz, max_rq_desc_sz, max_send_wqebb,
            max_recv_wr, max_srq_recv_wr, num_ports, flow_action_flags, comp_mask, response_length, cqe_version,
            cmds_supp_uhw, eth_min_inline, clock_info_versions, hca_core_clock_offset, log_uar_size,
            num_uars_per_page, num_dyn_bfregs, dump_fill_mkey
        }
        mlx5::CreateCq = "struct mlx5_ib_create_cq" {
            buf_addr, db_addr, cqe_size, cqe_comp_en, cqe_comp_res_format, flags, uar_page_index, reserved0, reserved1
        }
        mlx5::CreateCqResp = "struct mlx5_ib_create_cq_resp" { cqn, reserved }
        mlx5::CreateSrq = "struct mlx5_ib_create_srq" { buf_addr, db_addr, flags, reserved0, uidx, reserved1 }
        mlx5::CreateSrqResp = "struct mlx5_ib_create_srq_resp" { srqn, reserved }
        mlx5::CreateQp = "struct mlx5_ib_create_qp" {
            buf_addr, db_addr, sq_wqe_count, rq_wqe_count, rq_wqe_shift, flags, uidx, bfreg_index, sq_buf_addr,
            ece_options, dci_log_num_concurent = "dci_streams.log_num_concurent",
            dci_log_num_errored = "dci_streams.log_num_errored", reserved
        }
        mlx5::CreateQpResp = "struct mlx5_ib_create_qp_resp" {
            bfreg_index, ece_options, comp_mask, tirn, tisn, rqn, sqn, reserved1, tir_icm_addr
        }
        mlx5::CreateAhResp = "struct mlx5_ib_create_ah_resp" { response_length, dmac, reserved }
    );

    // Union members we model with one field: their other spellings and the flexible arrays.
    v.push(Check { what: "rxe_send_wqe payload".into(), rust: rxe::SEND_WQE_PAYLOAD_OFFSET as u64, c_expr: "offsetof(struct rxe_send_wqe, dma.sge)".into() });
    v.push(Check { what: "rxe_send_wqe inline".into(), rust: rxe::SEND_WQE_PAYLOAD_OFFSET as u64, c_expr: "offsetof(struct rxe_send_wqe, dma.inline_data)".into() });
    v.push(Check { what: "rxe_recv_wqe payload".into(), rust: rxe::RECV_WQE_PAYLOAD_OFFSET as u64, c_expr: "offsetof(struct rxe_recv_wqe, dma.sge)".into() });
    v.push(Check { what: "rxe_queue_buf data".into(), rust: rxe::QUEUE_DATA_OFFSET as u64, c_expr: "offsetof(struct rxe_queue_buf, data)".into() });
    v.push(Check { what: "rxe_queue_buf producer".into(), rust: rxe::QUEUE_PRODUCER_INDEX_OFFSET as u64, c_expr: "offsetof(struct rxe_queue_buf, producer_index)".into() });
    v.push(Check { what: "rxe_queue_buf consumer".into(), rust: rxe::QUEUE_CONSUMER_INDEX_OFFSET as u64, c_expr: "offsetof(struct rxe_queue_buf, consumer_index)".into() });
    v.push(Check { what: "rxe_queue_buf mask".into(), rust: rxe::QUEUE_INDEX_MASK_OFFSET as u64, c_expr: "offsetof(struct rxe_queue_buf, index_mask)".into() });
    v.push(Check { what: "wc invalidate_rkey".into(), rust: offset_of!(sys::Wc, ex) as u64, c_expr: "offsetof(struct ib_uverbs_wc, ex.invalidate_rkey)".into() });
    // rxe_global_route is sys::GlobalRoute (ib_uverbs_global_route's fields, which rxe_av holds at
    // offset 8): every field and the size, but not the alignment, which its `union ib_gid` raises
    // to 8 and rxe_av's own checked alignment provides.
    for (f, rust) in [
        ("dgid", offset_of!(rxe::GlobalRoute, dgid)),
        ("flow_label", offset_of!(rxe::GlobalRoute, flow_label)),
        ("sgid_index", offset_of!(rxe::GlobalRoute, sgid_index)),
        ("hop_limit", offset_of!(rxe::GlobalRoute, hop_limit)),
        ("traffic_class", offset_of!(rxe::GlobalRoute, traffic_class)),
    ] {
        v.push(Check { what: format!("rxe_global_route {f}"), rust: rust as u64, c_expr: format!("offsetof(struct rxe_global_route, {f})") });
    }
    v.push(Check { what: "rxe_global_route size".into(), rust: size_of::<rxe::GlobalRoute>() as u64, c_expr: "sizeof(struct rxe_global_route)".into() });
    v.push(Check { what: "rxe av sockaddr_in6 size".into(), rust: 28, c_expr: "sizeof(((struct rxe_av *)0)->sgid_addr)".into() });
    v.push(Check { what: "send_wr rdma.rkey".into(), rust: 32, c_expr: "offsetof(struct ib_uverbs_send_wr, wr.rdma.rkey)".into() });
    v.push(Check { what: "send_wr atomic.rkey".into(), rust: 48, c_expr: "offsetof(struct ib_uverbs_send_wr, wr.atomic.rkey)".into() });
    v.push(Check { what: "send_wr ud.remote_qkey".into(), rust: 32, c_expr: "offsetof(struct ib_uverbs_send_wr, wr.ud.remote_qkey)".into() });
    v.push(Check { what: "ioctl_hdr attrs".into(), rust: size_of::<sys::IoctlHdr>() as u64, c_expr: "offsetof(struct ib_uverbs_ioctl_hdr, attrs)".into() });

    consts!(v;
        sys::RDMA_VERBS_IOCTL => "RDMA_VERBS_IOCTL",
        sys::IB_USER_VERBS_ABI_VERSION => "IB_USER_VERBS_ABI_VERSION",
        sys::IB_USER_VERBS_CMD_COMMAND_MASK => "IB_USER_VERBS_CMD_COMMAND_MASK",
        sys::IB_USER_VERBS_CMD_FLAG_EXTENDED => "IB_USER_VERBS_CMD_FLAG_EXTENDED",
        sys::CMD_GET_CONTEXT => "IB_USER_VERBS_CMD_GET_CONTEXT",
        sys::CMD_QUERY_DEVICE => "IB_USER_VERBS_CMD_QUERY_DEVICE",
        sys::CMD_QUERY_PORT => "IB_USER_VERBS_CMD_QUERY_PORT",
        sys::CMD_ALLOC_PD => "IB_USER_VERBS_CMD_ALLOC_PD",
        sys::CMD_DEALLOC_PD => "IB_USER_VERBS_CMD_DEALLOC_PD",
        sys::CMD_CREATE_AH => "IB_USER_VERBS_CMD_CREATE_AH",
        sys::CMD_DESTROY_AH => "IB_USER_VERBS_CMD_DESTROY_AH",
        sys::CMD_REG_MR => "IB_USER_VERBS_CMD_REG_MR",
        sys::CMD_DEREG_MR => "IB_USER_VERBS_CMD_DEREG_MR",
        sys::CMD_CREATE_COMP_CHANNEL => "IB_USER_VERBS_CMD_CREATE_COMP_CHANNEL",
        sys::CMD_CREATE_CQ => "IB_USER_VERBS_CMD_CREATE_CQ",
        sys::CMD_DESTROY_CQ => "IB_USER_VERBS_CMD_DESTROY_CQ",
        sys::CMD_POLL_CQ => "IB_USER_VERBS_CMD_POLL_CQ",
        sys::CMD_REQ_NOTIFY_CQ => "IB_USER_VERBS_CMD_REQ_NOTIFY_CQ",
        sys::CMD_CREATE_QP => "IB_USER_VERBS_CMD_CREATE_QP",
        sys::CMD_QUERY_QP => "IB_USER_VERBS_CMD_QUERY_QP",
        sys::CMD_MODIFY_QP => "IB_USER_VERBS_CMD_MODIFY_QP",
        sys::CMD_DESTROY_QP => "IB_USER_VERBS_CMD_DESTROY_QP",
        sys::CMD_ATTACH_MCAST => "IB_USER_VERBS_CMD_ATTACH_MCAST",
        sys::CMD_DETACH_MCAST => "IB_USER_VERBS_CMD_DETACH_MCAST",
        sys::CMD_POST_SEND => "IB_USER_VERBS_CMD_POST_SEND",
        sys::CMD_POST_RECV => "IB_USER_VERBS_CMD_POST_RECV",
        sys::CMD_CREATE_SRQ => "IB_USER_VERBS_CMD_CREATE_SRQ",
        sys::CMD_MODIFY_SRQ => "IB_USER_VERBS_CMD_MODIFY_SRQ",
        sys::CMD_DESTROY_SRQ => "IB_USER_VERBS_CMD_DESTROY_SRQ",
        sys::CMD_OPEN_XRCD => "IB_USER_VERBS_CMD_OPEN_XRCD",
        sys::CMD_CLOSE_XRCD => "IB_USER_VERBS_CMD_CLOSE_XRCD",
        sys::CMD_CREATE_XSRQ => "IB_USER_VERBS_CMD_CREATE_XSRQ",
        sys::obj::XRCD => "UVERBS_OBJECT_XRCD",
        sys::method::XRCD_DESTROY => "UVERBS_METHOD_XRCD_DESTROY",
        sys::attr::DESTROY_XRCD_HANDLE => "UVERBS_ATTR_DESTROY_XRCD_HANDLE",
        sys::IB_UVERBS_QPT_XRC_INI => "IB_UVERBS_QPT_XRC_INI",
        sys::IB_UVERBS_QPT_XRC_TGT => "IB_UVERBS_QPT_XRC_TGT",
        sys::IB_UVERBS_SRQT_BASIC => "IB_UVERBS_SRQT_BASIC",
        sys::IB_UVERBS_SRQT_XRC => "IB_UVERBS_SRQT_XRC",
        sys::IB_UVERBS_DEVICE_XRC => "IB_UVERBS_DEVICE_XRC",
        uverbs::provider::QpType::XrcIni as u8 => "IB_UVERBS_QPT_XRC_INI",
        uverbs::provider::QpType::XrcTgt as u8 => "IB_UVERBS_QPT_XRC_TGT",
        sys::CMD_EX_QUERY_DEVICE => "IB_USER_VERBS_EX_CMD_QUERY_DEVICE",
        sys::CMD_EX_CREATE_CQ => "IB_USER_VERBS_EX_CMD_CREATE_CQ",
        sys::CMD_EX_CREATE_QP => "IB_USER_VERBS_EX_CMD_CREATE_QP",
        sys::CMD_EX_MODIFY_QP => "IB_USER_VERBS_EX_CMD_MODIFY_QP",
        sys::UVERBS_ATTR_F_MANDATORY => "UVERBS_ATTR_F_MANDATORY",
        sys::UVERBS_ATTR_F_VALID_OUTPUT => "UVERBS_ATTR_F_VALID_OUTPUT",
        sys::UVERBS_ID_NS_MASK => "UVERBS_ID_NS_MASK",
        sys::UVERBS_UDATA_DRIVER_DATA_FLAG => "UVERBS_UDATA_DRIVER_DATA_FLAG",
        sys::UVERBS_ATTR_UHW_IN => "UVERBS_ATTR_UHW_IN",
        sys::UVERBS_ATTR_UHW_OUT => "UVERBS_ATTR_UHW_OUT",
        sys::obj::DEVICE => "UVERBS_OBJECT_DEVICE",
        sys::obj::PD => "UVERBS_OBJECT_PD",
        sys::obj::COMP_CHANNEL => "UVERBS_OBJECT_COMP_CHANNEL",
        sys::obj::CQ => "UVERBS_OBJECT_CQ",
        sys::obj::QP => "UVERBS_OBJECT_QP",
        sys::obj::SRQ => "UVERBS_OBJECT_SRQ",
        sys::obj::AH => "UVERBS_OBJECT_AH",
        sys::obj::MR => "UVERBS_OBJECT_MR",
        sys::obj::MW => "UVERBS_OBJECT_MW",
        sys::obj::ASYNC_EVENT => "UVERBS_OBJECT_ASYNC_EVENT",
        sys::method::INVOKE_WRITE => "UVERBS_METHOD_INVOKE_WRITE",
        sys::method::INFO_HANDLES => "UVERBS_METHOD_INFO_HANDLES",
        sys::method::QUERY_PORT => "UVERBS_METHOD_QUERY_PORT",
        sys::method::GET_CONTEXT => "UVERBS_METHOD_GET_CONTEXT",
        sys::method::QUERY_CONTEXT => "UVERBS_METHOD_QUERY_CONTEXT",
        sys::method::QUERY_GID_TABLE => "UVERBS_METHOD_QUERY_GID_TABLE",
        sys::method::QUERY_GID_ENTRY => "UVERBS_METHOD_QUERY_GID_ENTRY",
        sys::method::CQ_CREATE => "UVERBS_METHOD_CQ_CREATE",
        sys::method::CQ_DESTROY => "UVERBS_METHOD_CQ_DESTROY",
        sys::method::QP_CREATE => "UVERBS_METHOD_QP_CREATE",
        sys::method::QP_DESTROY => "UVERBS_METHOD_QP_DESTROY",
        sys::method::SRQ_CREATE => "UVERBS_METHOD_SRQ_CREATE",
        sys::method::SRQ_DESTROY => "UVERBS_METHOD_SRQ_DESTROY",
        sys::method::PD_DESTROY => "UVERBS_METHOD_PD_DESTROY",
        sys::method::AH_DESTROY => "UVERBS_METHOD_AH_DESTROY",
        sys::method::MR_DESTROY => "UVERBS_METHOD_MR_DESTROY",
        sys::method::ASYNC_EVENT_ALLOC => "UVERBS_METHOD_ASYNC_EVENT_ALLOC",
        sys::attr::CORE_IN => "UVERBS_ATTR_CORE_IN",
        sys::attr::CORE_OUT => "UVERBS_ATTR_CORE_OUT",
        sys::attr::WRITE_CMD => "UVERBS_ATTR_WRITE_CMD",
        sys::attr::QUERY_PORT_PORT_NUM => "UVERBS_ATTR_QUERY_PORT_PORT_NUM",
        sys::attr::QUERY_PORT_RESP => "UVERBS_ATTR_QUERY_PORT_RESP",
        sys::attr::GET_CONTEXT_NUM_COMP_VECTORS => "UVERBS_ATTR_GET_CONTEXT_NUM_COMP_VECTORS",
        sys::attr::GET_CONTEXT_CORE_SUPPORT => "UVERBS_ATTR_GET_CONTEXT_CORE_SUPPORT",
        sys::attr::QUERY_GID_TABLE_ENTRY_SIZE => "UVERBS_ATTR_QUERY_GID_TABLE_ENTRY_SIZE",
        sys::attr::QUERY_GID_TABLE_FLAGS => "UVERBS_ATTR_QUERY_GID_TABLE_FLAGS",
        sys::attr::QUERY_GID_TABLE_RESP_ENTRIES => "UVERBS_ATTR_QUERY_GID_TABLE_RESP_ENTRIES",
        sys::attr::QUERY_GID_TABLE_RESP_NUM_ENTRIES => "UVERBS_ATTR_QUERY_GID_TABLE_RESP_NUM_ENTRIES",
        sys::attr::QUERY_GID_ENTRY_PORT => "UVERBS_ATTR_QUERY_GID_ENTRY_PORT",
        sys::attr::QUERY_GID_ENTRY_GID_INDEX => "UVERBS_ATTR_QUERY_GID_ENTRY_GID_INDEX",
        sys::attr::QUERY_GID_ENTRY_FLAGS => "UVERBS_ATTR_QUERY_GID_ENTRY_FLAGS",
        sys::attr::QUERY_GID_ENTRY_RESP_ENTRY => "UVERBS_ATTR_QUERY_GID_ENTRY_RESP_ENTRY",
        sys::attr::ASYNC_EVENT_ALLOC_FD_HANDLE => "UVERBS_ATTR_ASYNC_EVENT_ALLOC_FD_HANDLE",
        sys::attr::CREATE_CQ_HANDLE => "UVERBS_ATTR_CREATE_CQ_HANDLE",
        sys::attr::CREATE_CQ_CQE => "UVERBS_ATTR_CREATE_CQ_CQE",
        sys::attr::CREATE_CQ_USER_HANDLE => "UVERBS_ATTR_CREATE_CQ_USER_HANDLE",
        sys::attr::CREATE_CQ_COMP_CHANNEL => "UVERBS_ATTR_CREATE_CQ_COMP_CHANNEL",
        sys::attr::CREATE_CQ_COMP_VECTOR => "UVERBS_ATTR_CREATE_CQ_COMP_VECTOR",
        sys::attr::CREATE_CQ_FLAGS => "UVERBS_ATTR_CREATE_CQ_FLAGS",
        sys::attr::CREATE_CQ_RESP_CQE => "UVERBS_ATTR_CREATE_CQ_RESP_CQE",
        sys::attr::CREATE_CQ_EVENT_FD => "UVERBS_ATTR_CREATE_CQ_EVENT_FD",
        sys::attr::DESTROY_CQ_HANDLE => "UVERBS_ATTR_DESTROY_CQ_HANDLE",
        sys::attr::DESTROY_CQ_RESP => "UVERBS_ATTR_DESTROY_CQ_RESP",
        sys::attr::CREATE_QP_HANDLE => "UVERBS_ATTR_CREATE_QP_HANDLE",
        sys::attr::CREATE_QP_XRCD_HANDLE => "UVERBS_ATTR_CREATE_QP_XRCD_HANDLE",
        sys::attr::CREATE_QP_PD_HANDLE => "UVERBS_ATTR_CREATE_QP_PD_HANDLE",
        sys::attr::CREATE_QP_SRQ_HANDLE => "UVERBS_ATTR_CREATE_QP_SRQ_HANDLE",
        sys::attr::CREATE_QP_SEND_CQ_HANDLE => "UVERBS_ATTR_CREATE_QP_SEND_CQ_HANDLE",
        sys::attr::CREATE_QP_RECV_CQ_HANDLE => "UVERBS_ATTR_CREATE_QP_RECV_CQ_HANDLE",
        sys::attr::CREATE_QP_IND_TABLE_HANDLE => "UVERBS_ATTR_CREATE_QP_IND_TABLE_HANDLE",
        sys::attr::CREATE_QP_USER_HANDLE => "UVERBS_ATTR_CREATE_QP_USER_HANDLE",
        sys::attr::CREATE_QP_CAP => "UVERBS_ATTR_CREATE_QP_CAP",
        sys::attr::CREATE_QP_TYPE => "UVERBS_ATTR_CREATE_QP_TYPE",
        sys::attr::CREATE_QP_FLAGS => "UVERBS_ATTR_CREATE_QP_FLAGS",
        sys::attr::CREATE_QP_SOURCE_QPN => "UVERBS_ATTR_CREATE_QP_SOURCE_QPN",
        sys::attr::CREATE_QP_EVENT_FD => "UVERBS_ATTR_CREATE_QP_EVENT_FD",
        sys::attr::CREATE_QP_RESP_CAP => "UVERBS_ATTR_CREATE_QP_RESP_CAP",
        sys::attr::CREATE_QP_RESP_QP_NUM => "UVERBS_ATTR_CREATE_QP_RESP_QP_NUM",
        sys::attr::DESTROY_QP_HANDLE => "UVERBS_ATTR_DESTROY_QP_HANDLE",
        sys::attr::DESTROY_QP_RESP => "UVERBS_ATTR_DESTROY_QP_RESP",
        sys::attr::DESTROY_PD_HANDLE => "UVERBS_ATTR_DESTROY_PD_HANDLE",
        sys::attr::DESTROY_MR_HANDLE => "UVERBS_ATTR_DESTROY_MR_HANDLE",
        sys::attr::DESTROY_AH_HANDLE => "UVERBS_ATTR_DESTROY_AH_HANDLE",
        sys::IB_UVERBS_QP_CREATE_SQ_SIG_ALL => "IB_UVERBS_QP_CREATE_SQ_SIG_ALL",
        sys::RDMA_DRIVER_UNKNOWN => "RDMA_DRIVER_UNKNOWN",
        sys::RDMA_DRIVER_MLX5 => "RDMA_DRIVER_MLX5",
        sys::RDMA_DRIVER_MLX4 => "RDMA_DRIVER_MLX4",
        sys::RDMA_DRIVER_BNXT_RE => "RDMA_DRIVER_BNXT_RE",
        sys::RDMA_DRIVER_RXE => "RDMA_DRIVER_RXE",
        sys::RDMA_DRIVER_EFA => "RDMA_DRIVER_EFA",
        sys::RDMA_DRIVER_SIW => "RDMA_DRIVER_SIW",
        sys::IB_UVERBS_QPT_RC => "IB_UVERBS_QPT_RC",
        sys::IB_UVERBS_QPT_UC => "IB_UVERBS_QPT_UC",
        sys::IB_UVERBS_QPT_UD => "IB_UVERBS_QPT_UD",
        sys::access::LOCAL_WRITE => "IB_UVERBS_ACCESS_LOCAL_WRITE",
        sys::access::REMOTE_WRITE => "IB_UVERBS_ACCESS_REMOTE_WRITE",
        sys::access::REMOTE_READ => "IB_UVERBS_ACCESS_REMOTE_READ",
        sys::access::REMOTE_ATOMIC => "IB_UVERBS_ACCESS_REMOTE_ATOMIC",
        sys::access::MW_BIND => "IB_UVERBS_ACCESS_MW_BIND",
        sys::access::ZERO_BASED => "IB_UVERBS_ACCESS_ZERO_BASED",
        sys::access::ON_DEMAND => "IB_UVERBS_ACCESS_ON_DEMAND",
        sys::access::HUGETLB => "IB_UVERBS_ACCESS_HUGETLB",
        sys::access::RELAXED_ORDERING => "IB_UVERBS_ACCESS_RELAXED_ORDERING",
        sys::IB_UVERBS_GID_TYPE_IB => "IB_UVERBS_GID_TYPE_IB",
        sys::IB_UVERBS_GID_TYPE_ROCE_V1 => "IB_UVERBS_GID_TYPE_ROCE_V1",
        sys::IB_UVERBS_GID_TYPE_ROCE_V2 => "IB_UVERBS_GID_TYPE_ROCE_V2",
        rxe::RXE_NETWORK_TYPE_IPV4 => "RXE_NETWORK_TYPE_IPV4",
        rxe::RXE_NETWORK_TYPE_IPV6 => "RXE_NETWORK_TYPE_IPV6",
        mlx5::MLX5_IB_UVERBS_ABI_VERSION => "MLX5_IB_UVERBS_ABI_VERSION",
        mlx5::MLX5_LIB_CAP_4K_UAR => "MLX5_LIB_CAP_4K_UAR",
        mlx5::MLX5_LIB_CAP_DYN_UAR => "MLX5_LIB_CAP_DYN_UAR",
    );
    v
}

#[test]
fn abi_layout_matches_kernel_headers() {
    let checks = all_checks();
    let bad = layout_check::mismatches("uverbs-layout", HEADERS, "", &checks);
    assert!(bad.is_empty(), "{} of {} layout checks differ:\n{}", bad.len(), checks.len(), bad.join("\n"));
    eprintln!("{} layout checks passed", checks.len());
}

/// EX_MODIFY_QP (the DC target's modify to RTR carries a driver response).
#[test]
fn ex_modify_qp_layout_matches_kernel_headers() {
    let mut v: Vec<Check> = Vec::new();
    layout!(v;
        sys::ExModifyQp = "struct ib_uverbs_ex_modify_qp" { base, rate_limit, reserved }
        sys::ExModifyQpResp = "struct ib_uverbs_ex_modify_qp_resp" { comp_mask, response_length }
    );
    let bad = layout_check::mismatches("uverbs-ex-modify-layout", HEADERS, "", &v);
    assert!(bad.is_empty(), "{} of {} layout checks differ:\n{}", bad.len(), v.len(), bad.join("\n"));
}
