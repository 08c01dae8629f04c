//! `uverbs::cm::sys` against `<rdma/rdma_user_cm.h>` (and the ib_user_sa / ib_user_verbs
//! structs it embeds): every struct's size and alignment, every field's offset and size, and
//! the constants. Same approach and helpers as `tests/layout.rs` (a gcc-built probe prints the C
//! values; tests/support/layout_check.rs pairs them with ours).

use std::mem::{offset_of, size_of};
#[path = "../../tests/support/c_probe.rs"]
mod c_probe;
#[macro_use]
#[path = "../../tests/support/layout_check.rs"]
mod layout_check;

use layout_check::Check;

use uverbs::cm::sys;

fn checks() -> Vec<Check> {
    let mut v = Vec::new();
    layout!(v;
        sys::CmdHdr = "struct rdma_ucm_cmd_hdr" { cmd, in_len = "in", out_len = "out" }
        sys::SockaddrIn6 = "struct sockaddr_in6" { family = "sin6_family", port = "sin6_port", flowinfo = "sin6_flowinfo", addr = "sin6_addr", scope_id = "sin6_scope_id" }
        sys::SockaddrStorage = "struct __kernel_sockaddr_storage" { family = "ss_family", data = "__data" }
        sys::CreateId = "struct rdma_ucm_create_id" { uid, response, ps, qp_type, reserved }
        sys::CreateIdResp = "struct rdma_ucm_create_id_resp" { id }
        sys::DestroyId = "struct rdma_ucm_destroy_id" { response, id, reserved }
        sys::DestroyIdResp = "struct rdma_ucm_destroy_id_resp" { events_reported }
        sys::BindIp = "struct rdma_ucm_bind_ip" { response, addr, id }
        sys::Bind = "struct rdma_ucm_bind" { id, addr_size, reserved, addr }
        sys::ResolveIp = "struct rdma_ucm_resolve_ip" { src_addr, dst_addr, id, timeout_ms }
        sys::ResolveAddr = "struct rdma_ucm_resolve_addr" { id, timeout_ms, src_size, dst_size, reserved, src_addr, dst_addr }
        sys::ResolveRoute = "struct rdma_ucm_resolve_route" { id, timeout_ms }
        sys::Query = "struct rdma_ucm_query" { response, id, option }
        sys::UserPathRec = "struct ib_user_path_rec" {
            dgid, sgid, dlid, slid, raw_traffic, flow_label, reversible, mtu, pkey, hop_limit, traffic_class,
            numb_path, sl, mtu_selector, rate_selector, rate, packet_life_time_selector, packet_life_time, preference
        }
        sys::QueryRouteResp = "struct rdma_ucm_query_route_resp" { node_guid, ib_route, src_addr, dst_addr, num_paths, port_num, reserved, ibdev_index, reserved1 }
        sys::QueryAddrResp = "struct rdma_ucm_query_addr_resp" { node_guid, port_num, reserved, pkey, src_size, dst_size, src_addr, dst_addr, ibdev_index, reserved1 }
        sys::PathRecData = "struct ib_path_rec_data" { flags, reserved, path_rec }
        sys::QueryPathResp = "struct rdma_ucm_query_path_resp" { num_paths, reserved }
        sys::ConnParam = "struct rdma_ucm_conn_param" {
            qp_num, qkey, private_data, private_data_len, srq, responder_resources, initiator_depth, flow_control,
            retry_count, rnr_retry_count, valid
        }
        sys::UdParam = "struct rdma_ucm_ud_param" { qp_num, qkey, ah_attr, private_data, private_data_len, reserved }
        sys::Ece = "struct rdma_ucm_ece" { vendor_id, attr_mod }
        sys::Connect = "struct rdma_ucm_connect" { conn_param, id, reserved, ece }
        sys::Listen = "struct rdma_ucm_listen" { id, backlog }
        sys::Accept = "struct rdma_ucm_accept" { uid, conn_param, id, reserved, ece }
        sys::Reject = "struct rdma_ucm_reject" { id, private_data_len, reason, reserved, private_data }
        sys::Disconnect = "struct rdma_ucm_disconnect" { id }
        sys::InitQpAttr = "struct rdma_ucm_init_qp_attr" { response, id, qp_state }
        sys::QpAttrResp = "struct ib_uverbs_qp_attr" {
            qp_attr_mask, qp_state, cur_qp_state, path_mtu, path_mig_state, qkey, rq_psn, sq_psn, dest_qp_num,
            qp_access_flags, ah_attr, alt_ah_attr, max_send_wr, max_recv_wr, max_send_sge, max_recv_sge,
            max_inline_data, pkey_index, alt_pkey_index, en_sqd_async_notify, sq_draining, max_rd_atomic,
            max_dest_rd_atomic, min_rnr_timer, port_num, timeout, retry_cnt, rnr_retry, alt_port_num, alt_timeout, reserved
        }
        sys::Notify = "struct rdma_ucm_notify" { id, event }
        sys::GetEvent = "struct rdma_ucm_get_event" { response }
        sys::EventResp = "struct rdma_ucm_event_resp" { uid, id, event, status, param, reserved, ece }
        sys::SetOption = "struct rdma_ucm_set_option" { optval, id, level, optname, optlen }
        sys::MigrateId = "struct rdma_ucm_migrate_id" { response, id, fd }
        sys::MigrateResp = "struct rdma_ucm_migrate_resp" { events_reported }
    );
    // The union's arms sit at the union's offset.
    v.push(Check { what: "EventResp.param.conn offset".into(), rust: offset_of!(sys::EventResp, param) as u64, c_expr: "offsetof(struct rdma_ucm_event_resp, param.conn)".into() });
    v.push(Check { what: "EventResp.param.ud offset".into(), rust: offset_of!(sys::EventResp, param) as u64, c_expr: "offsetof(struct rdma_ucm_event_resp, param.ud)".into() });
    v.push(Check { what: "sizeof param.ud".into(), rust: size_of::<sys::UdParam>() as u64, c_expr: "sizeof(((struct rdma_ucm_event_resp *)0)->param.ud)".into() });
    consts!(v;
        sys::RDMA_USER_CM_ABI_VERSION => "RDMA_USER_CM_ABI_VERSION",
        sys::RDMA_MAX_PRIVATE_DATA => "RDMA_MAX_PRIVATE_DATA",
        sys::CMD_CREATE_ID => "RDMA_USER_CM_CMD_CREATE_ID",
        sys::CMD_DESTROY_ID => "RDMA_USER_CM_CMD_DESTROY_ID",
        sys::CMD_BIND_IP => "RDMA_USER_CM_CMD_BIND_IP",
        sys::CMD_RESOLVE_IP => "RDMA_USER_CM_CMD_RESOLVE_IP",
        sys::CMD_RESOLVE_ROUTE => "RDMA_USER_CM_CMD_RESOLVE_ROUTE",
        sys::CMD_QUERY_ROUTE => "RDMA_USER_CM_CMD_QUERY_ROUTE",
        sys::CMD_CONNECT => "RDMA_USER_CM_CMD_CONNECT",
        sys::CMD_LISTEN => "RDMA_USER_CM_CMD_LISTEN",
        sys::CMD_ACCEPT => "RDMA_USER_CM_CMD_ACCEPT",
        sys::CMD_REJECT => "RDMA_USER_CM_CMD_REJECT",
        sys::CMD_DISCONNECT => "RDMA_USER_CM_CMD_DISCONNECT",
        sys::CMD_INIT_QP_ATTR => "RDMA_USER_CM_CMD_INIT_QP_ATTR",
        sys::CMD_GET_EVENT => "RDMA_USER_CM_CMD_GET_EVENT",
        sys::CMD_GET_OPTION => "RDMA_USER_CM_CMD_GET_OPTION",
        sys::CMD_SET_OPTION => "RDMA_USER_CM_CMD_SET_OPTION",
        sys::CMD_NOTIFY => "RDMA_USER_CM_CMD_NOTIFY",
        sys::CMD_JOIN_IP_MCAST => "RDMA_USER_CM_CMD_JOIN_IP_MCAST",
        sys::CMD_LEAVE_MCAST => "RDMA_USER_CM_CMD_LEAVE_MCAST",
        sys::CMD_MIGRATE_ID => "RDMA_USER_CM_CMD_MIGRATE_ID",
        sys::CMD_QUERY => "RDMA_USER_CM_CMD_QUERY",
        sys::CMD_BIND => "RDMA_USER_CM_CMD_BIND",
        sys::CMD_RESOLVE_ADDR => "RDMA_USER_CM_CMD_RESOLVE_ADDR",
        sys::CMD_JOIN_MCAST => "RDMA_USER_CM_CMD_JOIN_MCAST",
        sys::RDMA_PS_IPOIB => "RDMA_PS_IPOIB",
        sys::RDMA_PS_IB => "RDMA_PS_IB",
        sys::RDMA_PS_TCP => "RDMA_PS_TCP",
        sys::RDMA_PS_UDP => "RDMA_PS_UDP",
        sys::QUERY_ADDR => "RDMA_USER_CM_QUERY_ADDR",
        sys::QUERY_PATH => "RDMA_USER_CM_QUERY_PATH",
        sys::QUERY_GID => "RDMA_USER_CM_QUERY_GID",
        sys::RDMA_OPTION_ID => "RDMA_OPTION_ID",
        sys::RDMA_OPTION_IB => "RDMA_OPTION_IB",
        sys::RDMA_OPTION_ID_TOS => "RDMA_OPTION_ID_TOS",
        sys::RDMA_OPTION_ID_REUSEADDR => "RDMA_OPTION_ID_REUSEADDR",
        sys::RDMA_OPTION_ID_AFONLY => "RDMA_OPTION_ID_AFONLY",
        sys::RDMA_OPTION_ID_ACK_TIMEOUT => "RDMA_OPTION_ID_ACK_TIMEOUT",
        sys::RDMA_OPTION_IB_PATH => "RDMA_OPTION_IB_PATH",
        sys::AF_INET => "AF_INET",
        sys::AF_INET6 => "AF_INET6",
        sys::AF_IB => "AF_IB",
    );
    v
}

#[test]
fn rdma_ucm_layout_matches_kernel_headers() {
    let checks = checks();
    let headers = ["sys/socket.h", "netinet/in.h", "rdma/rdma_user_cm.h"];
    let bad = layout_check::mismatches("uverbs-cm-layout", &headers, "#ifndef AF_IB\n#define AF_IB 27\n#endif\n", &checks);
    assert!(bad.is_empty(), "{} of {} checks differ:\n{}", bad.len(), checks.len(), bad.join("\n"));
}
