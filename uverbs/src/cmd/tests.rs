//! Byte-exact encodings of the commands, the doorbell write, hints and response checks.

use super::doorbell::doorbell_write;
use super::*;

#[test]
fn doorbell_write_delivers_the_bytes_and_reports_errno() {
    use std::io::Read;
    use std::os::fd::AsFd;
    let (mut rd, wr) = std::io::pipe().unwrap();
    let mut resp = 0u32;
    let buf = encode_post_send_doorbell(&mut resp as *mut u32 as u64, 7);
    assert_eq!(doorbell_write(wr.as_fd(), &buf), Ok(()));
    let mut got = [0u8; 32];
    rd.read_exact(&mut got).unwrap();
    assert_eq!(got, buf);
    // The read end refuses writes: the kernel's -EBADF comes back as EBADF.
    assert_eq!(doorbell_write(rd.as_fd(), &buf), Err(libc::EBADF));
    // The same through post_send_doorbell: a one-line error naming the command.
    let e = post_send_doorbell(rd.as_fd(), 7).unwrap_err().to_string();
    assert!(e.contains("POST_SEND") && !e.contains('\n'), "{e}");
}

fn hex(b: &[u8]) -> String {
    b.iter().map(|x| format!("{x:02x}")).collect()
}

/// The attribute ids of an encoded ioctl buffer, in order (24-byte header, 16-byte attrs).
fn ioctl_attr_ids(b: &[u8]) -> Vec<u16> {
    let n = u16::from_le_bytes([b[6], b[7]]) as usize;
    (0..n).map(|i| u16::from_le_bytes([b[24 + 16 * i], b[25 + 16 * i]])).collect()
}

fn xrc_qp_args(qp_type: u8, xrcd: Option<u32>) -> CreateQpArgs {
    CreateQpArgs {
        user_handle: 0x1122,
        pd: 3,
        send_cq: 4,
        recv_cq: 5,
        srq: None,
        xrcd,
        qp_type,
        caps: sys::QpCap { max_send_wr: 64, max_recv_wr: 32, max_send_sge: 1, max_recv_sge: 1, max_inline_data: 16 },
        sq_sig_all: false,
        event_fd: None,
    }
}

#[test]
fn open_and_close_xrcd_bytes() {
    // OPEN_XRCD 37: 8 + 16 bytes in (6 words), 4 bytes out (1 word); fd -1, no oflags.
    let req = open_xrcd_req(-1, 0);
    let l = Legacy { name: "OPEN_XRCD", command: sys::CMD_OPEN_XRCD, core_in: req.as_bytes(), drv_in: &[], core_out_len: 4, drv_out_len: 0 };
    let b = encode_write(&l, 0x7000).unwrap();
    assert_eq!(hex(&b), "2500000006000100".to_string() + "0070000000000000" + "ffffffff" + "00000000");
    // A shared domain: the file's fd and O_CREAT.
    let req = open_xrcd_req(7, libc::O_CREAT as u32);
    assert_eq!((req.fd, req.oflags), (7, 0o100));
    // CLOSE_XRCD 38: the handle only, no response.
    let c = sys::CloseXrcd { xrcd_handle: 9 };
    let l = Legacy { name: "CLOSE_XRCD", command: sys::CMD_CLOSE_XRCD, core_in: c.as_bytes(), drv_in: &[], core_out_len: 0, drv_out_len: 0 };
    assert_eq!(hex(&encode_write(&l, 0x7000).unwrap()), "260000000300000009000000");
    // Over ioctl: XRCD.DESTROY with the handle.
    let b = encode_destroy_handle(1, obj::XRCD, method::XRCD_DESTROY, 9).unwrap();
    assert_eq!(u16::from_le_bytes([b[2], b[3]]), 10, "UVERBS_OBJECT_XRCD");
    assert_eq!(ioctl_attr_ids(&b), vec![attr::DESTROY_XRCD_HANDLE]);
}

#[test]
fn create_xsrq_request_carries_type_domain_and_cq() {
    let a = CreateXrcSrqArgs { user_handle: 0xabc, pd: 1, xrcd: 2, cq: 3, max_wr: 512, max_sge: 1, srq_limit: 0 };
    let req = create_xrc_srq_req(&a);
    let mlx5_drv = [0xeeu8; 32];
    let l = Legacy { name: "CREATE_XSRQ", command: sys::CMD_CREATE_XSRQ, core_in: req.as_bytes(), drv_in: &mlx5_drv, core_out_len: 16, drv_out_len: 8 };
    let b = encode_write(&l, 0x8000).unwrap();
    // 8 + 48 + 32 = 88 bytes = 22 words in; 16 + 8 = 24 bytes = 6 words out.
    assert_eq!(&b[..8], &[39, 0, 0, 0, 22, 0, 6, 0]);
    let words: Vec<u32> = b[24..56].chunks(4).map(|c| u32::from_le_bytes(c.try_into().unwrap())).collect();
    // srq_type XRC, pd, max_wr, max_sge, srq_limit, max_num_tags, xrcd, cq.
    assert_eq!(words, vec![1, 1, 512, 1, 0, 0, 2, 3]);
    assert_eq!(&b[56..], &mlx5_drv);
}

#[test]
fn xrc_target_qp_names_the_domain_not_pd_or_cqs() {
    // write: pd_handle carries the XRC domain; both CQ handles 0.
    let a = xrc_qp_args(sys::IB_UVERBS_QPT_XRC_TGT, Some(8));
    let r = create_qp_req(&a);
    assert_eq!((r.pd_handle, r.send_cq_handle, r.recv_cq_handle, r.qp_type), (8, 0, 0, 10));
    assert_eq!((r.max_recv_wr, r.max_recv_sge), (32, 1));
    // ioctl: the XRCD attribute, no PD / SEND_CQ / RECV_CQ.
    let p = QpCreatePtrs::default();
    let (b, _) = encode_qp_create(1, &a, &[], 0, &p).unwrap();
    let ids = ioctl_attr_ids(&b);
    assert!(ids.contains(&attr::CREATE_QP_XRCD_HANDLE));
    for no in [attr::CREATE_QP_PD_HANDLE, attr::CREATE_QP_SEND_CQ_HANDLE, attr::CREATE_QP_RECV_CQ_HANDLE] {
        assert!(!ids.contains(&no), "attribute {no} in an XRC_TGT create: {ids:?}");
    }
    // Without a domain it is refused before reaching the kernel.
    let bad = xrc_qp_args(sys::IB_UVERBS_QPT_XRC_TGT, None);
    assert!(encode_qp_create(1, &bad, &[], 0, &p).is_err());
}

#[test]
fn xrc_initiator_qp_has_a_send_side_only() {
    let a = xrc_qp_args(sys::IB_UVERBS_QPT_XRC_INI, None);
    let r = create_qp_req(&a);
    assert_eq!((r.pd_handle, r.send_cq_handle, r.recv_cq_handle, r.qp_type), (3, 4, 0, 9));
    assert_eq!((r.max_send_wr, r.max_recv_wr, r.max_recv_sge, r.max_inline_data), (64, 0, 0, 16));
    let p = QpCreatePtrs::default();
    let (b, _) = encode_qp_create(1, &a, &[], 0, &p).unwrap();
    let ids = ioctl_attr_ids(&b);
    assert!(ids.contains(&attr::CREATE_QP_PD_HANDLE) && ids.contains(&attr::CREATE_QP_SEND_CQ_HANDLE));
    assert!(!ids.contains(&attr::CREATE_QP_RECV_CQ_HANDLE) && !ids.contains(&attr::CREATE_QP_XRCD_HANDLE));
    // An RC QP is unchanged: both CQs, its receive capacities.
    let rc = create_qp_req(&xrc_qp_args(sys::IB_UVERBS_QPT_RC, None));
    assert_eq!((rc.recv_cq_handle, rc.max_recv_wr), (5, 32));
}

#[test]
fn doorbell_bytes() {
    // Captured from rdma-core 44 on 6.1 (ib_write_bw client, every doorbell identical).
    let b = encode_post_send_doorbell(0x7fff622c55ac, 3);
    assert_eq!(hex(&b), "1c00000008000100ac552c62ff7f000003000000000000000000000080000000");
}

#[test]
fn req_notify_bytes() {
    let b = encode_req_notify_cq(2, true);
    assert_eq!(hex(&b), "170000000400000002000000" .to_string() + "01000000");
}

#[test]
fn write_framing_words() {
    // REG_MR: 8 + 40 bytes in (12 words), 12 bytes out (3 words).
    let req = reg_mr_req(0x1000, 0x2000, 0x1000, 0, 7);
    let l = Legacy { name: "REG_MR", command: sys::CMD_REG_MR, core_in: req.as_bytes(), drv_in: &[], core_out_len: 12, drv_out_len: 0 };
    let b = encode_write(&l, 0xabcdef).unwrap();
    assert_eq!(b.len(), 48);
    assert_eq!(&b[..8], &[9, 0, 0, 0, 12, 0, 3, 0]);
    assert_eq!(&b[8..16], &0xabcdefu64.to_le_bytes());
    // Driver data appended after the core request, driver response counted in out_words.
    let drv = [1u8; 8];
    let l = Legacy { drv_in: &drv, drv_out_len: 16, ..l };
    let b = encode_write(&l, 0).unwrap();
    assert_eq!(b.len(), 56);
    assert_eq!(&b[4..8], &[14, 0, 7, 0]);
    assert_eq!(&b[48..], &drv);
    // Not a multiple of 4.
    let odd = [0u8; 3];
    assert!(encode_write(&Legacy { drv_in: &odd, ..l }, 0).is_err());
    // No response field: MODIFY_QP 8 + 112 = 120 bytes = 30 words, out 0.
    let m = sys::ModifyQp::default();
    let l = Legacy { name: "MODIFY_QP", command: sys::CMD_MODIFY_QP, core_in: m.as_bytes(), drv_in: &[], core_out_len: 0, drv_out_len: 0 };
    let b = encode_write(&l, 0x1234).unwrap();
    assert_eq!(&b[..8], &[26, 0, 0, 0, 30, 0, 0, 0]);
    assert!(b[8..].iter().all(|&x| x == 0), "no response pointer patched into MODIFY_QP");
}

#[test]
fn query_qp_framing() {
    // QUERY_QP: 8 + 16 bytes in (6 words), the 128-byte response (32 words); the response
    // pointer goes into the request's first field, handle and IBV_QP_AV (0x80) follow.
    let req = sys::QueryQp { response: 0, qp_handle: 5, attr_mask: 0x80 };
    let l = Legacy {
        name: "QUERY_QP",
        command: sys::CMD_QUERY_QP,
        core_in: req.as_bytes(),
        drv_in: &[],
        core_out_len: std::mem::size_of::<sys::QueryQpResp>(),
        drv_out_len: 0,
    };
    let b = encode_write(&l, 0x7000).unwrap();
    assert_eq!(b.len(), 24);
    assert_eq!(&b[..8], &[25, 0, 0, 0, 6, 0, 32, 0]);
    assert_eq!(&b[8..16], &0x7000u64.to_le_bytes());
    assert_eq!(&b[16..24], &[5, 0, 0, 0, 0x80, 0, 0, 0]);
}

#[test]
fn ex_write_framing() {
    let req = sys::ExQueryDevice::default();
    let l = Legacy {
        name: "EX_QUERY_DEVICE",
        command: sys::IB_USER_VERBS_CMD_FLAG_EXTENDED | 1,
        core_in: req.as_bytes(),
        drv_in: &[],
        core_out_len: 304,
        drv_out_len: 0,
    };
    let b = encode_write(&l, 0x5000).unwrap();
    assert_eq!(b.len(), 8 + 16 + 8);
    assert_eq!(&b[..8], &[1, 0, 0, 0x80, 1, 0, 38, 0]);
    assert_eq!(&b[8..16], &0x5000u64.to_le_bytes());
    assert_eq!(&b[16..24], &[0u8; 8]);
    // Driver data: 8-byte units in provider_in/out_words.
    let drv = [0u8; 16];
    let b = encode_write(&Legacy { drv_in: &drv, drv_out_len: 8, ..l }, 0x5000).unwrap();
    assert_eq!(&b[16..20], &[2, 0, 1, 0]);
    assert!(encode_write(&Legacy { drv_in: &[0u8; 4], ..l }, 0).is_err());
    // No output at all: response must be 0.
    let b = encode_write(&Legacy { core_out_len: 0, ..l }, 0x5000).unwrap();
    assert_eq!(&b[8..16], &[0u8; 8]);
}

#[test]
fn ex_modify_qp_framing_with_driver_data() {
    // The mlx5 DCT's modify to RTR: ib_uverbs_ex_modify_qp (120 B) + mlx5_ib_modify_qp (16 B),
    // answered by ib_uverbs_ex_modify_qp_resp (8 B) + mlx5_ib_modify_qp_resp (16 B).
    let mut req = sys::ExModifyQp::default();
    req.base.qp_handle = 7;
    req.base.attr_mask = 0x8181;
    req.base.qp_state = 2;
    let drv = [0u8; 16];
    let l = Legacy {
        name: "EX_MODIFY_QP",
        command: sys::IB_USER_VERBS_CMD_FLAG_EXTENDED | sys::CMD_EX_MODIFY_QP,
        core_in: req.as_bytes(),
        drv_in: &drv,
        core_out_len: core::mem::size_of::<sys::ExModifyQpResp>(),
        drv_out_len: 16,
    };
    let b = encode_write(&l, 0x7000).unwrap();
    assert_eq!(b.len(), 8 + 16 + 120 + 16);
    // command 26 | EXTENDED; in_words = 120/8, out_words = 8/8 (8-byte units, headers excluded)
    assert_eq!(&b[..8], &[26, 0, 0, 0x80, 15, 0, 1, 0]);
    assert_eq!(&b[8..16], &0x7000u64.to_le_bytes());
    assert_eq!(&b[16..20], &[2, 0, 2, 0], "provider in/out words");
    assert_eq!(&b[24..24 + 120], req.as_bytes());
}

#[test]
fn invoke_write_patches_response_and_inlines() {
    let req = sys::AllocPd::default();
    let l = Legacy { name: "ALLOC_PD", command: 3, core_in: req.as_bytes(), drv_in: &[], core_out_len: 4, drv_out_len: 0 };
    let (b, core) = encode_invoke_write(&l, 14, &InvokePtrs { core_out: 0x7fff622c557c, ..Default::default() }).unwrap();
    assert_eq!(core, 0x7fff622c557cu64.to_le_bytes());
    assert_eq!(
        hex(&b),
        "480000000000030000000000000000000e000000000000000200080001000000030000000000000000000800010000007c552c62ff7f000001000400010000007c552c62ff7f0000"
    );
}

#[test]
fn hints() {
    assert!(command_error("REG_MR", libc::ENOMEM).to_string().contains("ulimit -l"));
    assert!(command_error("GET_CONTEXT", libc::EACCES).to_string().contains("/dev/infiniband/uverbs"));
    assert!(command_error("MODIFY_QP", libc::EINVAL).to_string().contains("GID index"));
    assert!(command_error("CREATE_CQ", libc::EOPNOTSUPP).to_string().contains("not supported"));
    assert!(command_error("QUERY_PORT", libc::EPROTONOSUPPORT).to_string().contains("write transport"));
    assert!(command_error("X", 9999).hint.is_none());
}

#[test]
fn transport_parse() {
    assert_eq!(Transport::parse("IOCTL"), Some(Transport::Ioctl));
    assert_eq!(Transport::parse(" write "), Some(Transport::Write));
    assert_eq!(Transport::parse("x"), None);
    assert_eq!(Transport::default(), Transport::Write);
}

#[test]
fn parse_response_checks_length() {
    assert!(parse_response::<sys::RegMrResp>("REG_MR", &[0u8; 11]).is_err());
    let r = parse_response::<sys::RegMrResp>("REG_MR", &[1, 0, 0, 0, 2, 0, 0, 0, 3, 0, 0, 0, 9]).unwrap();
    assert_eq!((r.mr_handle, r.lkey, r.rkey), (1, 2, 3));
}

#[test]
fn attach_detach_mcast_bytes() {
    // write(): header (command 30/31, in_words (8 + 24) / 4 = 8, out_words 0), then the
    // kernel struct: gid[16], qp_handle, mlid, reserved. perftest's default MGID
    // ff01:0:0:2:c985:: on QP handle 3, MLID 0 (RoCE).
    let gid = [0xff, 1, 0, 0, 0, 2, 0xc9, 0x85, 0, 0, 0, 0, 0, 0, 0, 0];
    let req = attach_mcast_req(3, gid, 0);
    let l = Legacy { name: "ATTACH_MCAST", command: sys::CMD_ATTACH_MCAST, core_in: req.as_bytes(), drv_in: &[], core_out_len: 0, drv_out_len: 0 };
    let b = encode_write(&l, 0).unwrap();
    assert_eq!(hex(&b), "1e00000008000000ff0100000002c9850000000000000000030000000000" .to_string() + "0000");
    let req = sys::DetachMcast { gid, qp_handle: 0x11, mlid: 0xc001, reserved: 0 };
    let l = Legacy { name: "DETACH_MCAST", command: sys::CMD_DETACH_MCAST, core_in: req.as_bytes(), drv_in: &[], core_out_len: 0, drv_out_len: 0 };
    let b = encode_write(&l, 0).unwrap();
    assert_eq!(hex(&b), "1f00000008000000ff0100000002c98500000000000000001100000001c0" .to_string() + "0000");
}

#[test]
fn driver_method_encoding_and_refusal() {
    // mlx5 DEVX_OBJ_DESTROY: object 0x1001, method 0x1001, one IDR attribute 0x1000.
    let m = DriverMethod { name: "DEVX_OBJ_DESTROY", object: 0x1001, method: 0x1001, idr_in: Some((0x1000, 7)), ..Default::default() };
    let b = encode_driver_method(1, &m, &[], &[]).unwrap();
    assert_eq!(hex(&b), "280001100110010000000000000000000100000000000000".to_string() + "00100000010000000700000000000000");
    // DEVX_OTHER: inputs before outputs; a short input travels inline.
    let m = DriverMethod { name: "X", object: 0x1000, method: 0x1000, ins: vec![(0x1000, &[1, 2][..])], outs: vec![(0x1001, 16)], ..Default::default() };
    let b = encode_driver_method(1, &m, &[0xdead], &[0x2000]).unwrap();
    assert_eq!(&b[24..40], &[0x00, 0x10, 2, 0, 1, 0, 0, 0, 1, 2, 0, 0, 0, 0, 0, 0]);
    assert_eq!(&b[40..56], &[0x01, 0x10, 16, 0, 1, 0, 0, 0, 0, 0x20, 0, 0, 0, 0, 0, 0]);
    // On a fd that is not uverbs the call fails with the errno and zeroed outputs.
    // SAFETY: memfd_create with a valid C string; the descriptor is ours alone.
    let fd = unsafe { libc::memfd_create(c"drv-mock".as_ptr(), libc::MFD_CLOEXEC) };
    assert!(fd >= 0);
    // SAFETY: `fd` was just created and nothing else owns it.
    let fd = unsafe { OwnedFd::from_raw_fd(fd) };
    let m = DriverMethod { name: "X", object: 0x1001, method: 0x1000, idr_new: Some(0x1000), ins: vec![(0x1001, &[0u8; 16][..])], outs: vec![(0x1002, 16)], ..Default::default() };
    let r = driver_method(std::os::fd::AsFd::as_fd(&fd), 1, &m).unwrap();
    assert_eq!(r.errno, Some(libc::ENOTTY));
    assert_eq!((r.handle, r.outs), (None, vec![vec![0u8; 16]]));
}
