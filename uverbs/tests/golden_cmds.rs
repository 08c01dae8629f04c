//! Our command buffers against what rdma-core 44 sent to a real 6.1 kernel (rxe), captured
//! by an LD_PRELOAD tap (fixtures/ are excerpts of that capture; the full capture is not kept in
//! the repository).
//! Pointer values are the captured ones, passed to our encoders explicitly.
//!
//! The fixture parser rebuilds each call's header + attribute bytes from the decoded fields and,
//! where the capture has the raw bytes too, first checks that the two agree.

use std::collections::HashMap;

use uverbs::cmd::{self, CqCreatePtrs, CreateCqArgs, CreateQpArgs, InvokePtrs, Legacy, QpCreatePtrs};
use uverbs::objects::{self, AccessFlags, RtrParams, RtsParams};
use uverbs::provider::{AhAttr, QpType};
use uverbs::sys;
use zerocopy::IntoBytes;

const RXE: u32 = 14;

#[derive(Debug, Default, Clone)]
struct Attr {
    id: u16,
    len: u16,
    flags_in: u16,
    data: u64,
    in_bytes: Option<Vec<u8>>,
}

#[derive(Debug, Default, Clone)]
struct Event {
    title: String,
    raw_in: Option<Vec<u8>>,
    raw_write: Option<Vec<u8>>,
    hdr: Option<(u16, u16, u16, u16, u32)>,
    attrs: Vec<Attr>,
}

fn unhex(s: &str) -> Vec<u8> {
    let s = s.trim();
    (0..s.len() / 2).map(|i| u8::from_str_radix(&s[2 * i..2 * i + 2], 16).unwrap()).collect()
}

fn field<'a>(line: &'a str, key: &str) -> Option<&'a str> {
    let i = line.find(key)?;
    let rest = &line[i + key.len()..];
    Some(rest.split_whitespace().next().unwrap_or(""))
}

fn num(s: &str) -> u64 {
    let s = s.trim_end_matches(|c: char| !c.is_ascii_hexdigit() && c != 'x');
    if let Some(h) = s.strip_prefix("0x") {
        u64::from_str_radix(h, 16).unwrap()
    } else {
        s.split('(').next().unwrap().parse().unwrap()
    }
}

fn parse(text: &str) -> HashMap<String, Event> {
    let mut out = HashMap::new();
    let mut cur: Option<Event> = None;
    for line in text.lines() {
        let t = line.trim_start();
        if line.starts_with('#') {
            if let Some(e) = cur.take() {
                out.insert(e.title.clone(), e);
            }
            let n = line.split_whitespace().next().unwrap().to_string();
            cur = Some(Event { title: n, ..Default::default() });
            continue;
        }
        let Some(e) = cur.as_mut() else { continue };
        if let Some(h) = t.strip_prefix("raw ioctl header+attrs in : ") {
            e.raw_in = Some(unhex(h));
        } else if let Some(h) = t.strip_prefix("raw write buffer (32 bytes): ") {
            e.raw_write = Some(unhex(h));
        } else if t.starts_with("hdr: length=") {
            e.hdr = Some((
                num(field(t, "length=").unwrap()) as u16,
                num(field(t, "object_id=").unwrap().split('(').next().unwrap()) as u16,
                num(field(t, "method_id=").unwrap().split('(').next().unwrap()) as u16,
                num(field(t, "num_attrs=").unwrap()) as u16,
                num(field(t, "driver_id=").unwrap().split('(').next().unwrap()) as u32,
            ));
        } else if t.starts_with("attr[") {
            let flags = field(t, "flags=").unwrap().split("->").next().unwrap();
            let data = if let Some(p) = field(t, "ptr=") {
                num(p)
            } else if let Some(i) = field(t, "inline=") {
                let mut b = unhex(i);
                b.resize(8, 0);
                u64::from_le_bytes(b.try_into().unwrap())
            } else if let Some(h) = field(t, "handle=") {
                num(h)
            } else if let Some(f) = field(t, "fd=") {
                num(f)
            } else if let Some(d) = field(t, "data(in)=") {
                num(d)
            } else {
                panic!("attr line without data: {t}")
            };
            e.attrs.push(Attr {
                id: num(field(t, "id=").unwrap()) as u16,
                len: num(field(t, "len=").unwrap()) as u16,
                flags_in: num(flags) as u16,
                data,
                in_bytes: None,
            });
        } else if let Some(h) = t.strip_prefix("in  bytes: ") {
            e.attrs.last_mut().unwrap().in_bytes = Some(unhex(h));
        }
    }
    if let Some(e) = cur.take() {
        out.insert(e.title.clone(), e);
    }
    out
}

impl Event {
    /// Header + attributes rebuilt from the decoded fields (checked against the raw bytes when
    /// the capture has them).
    fn ioctl_bytes(&self) -> Vec<u8> {
        let (length, object_id, method_id, num_attrs, driver_id) = self.hdr.expect("an ioctl event");
        let hdr = sys::IoctlHdr { length, object_id, method_id, num_attrs, reserved1: 0, driver_id, reserved2: 0 };
        let mut v = hdr.as_bytes().to_vec();
        for a in &self.attrs {
            let attr = sys::IoctlAttr { attr_id: a.id, len: a.len, flags: a.flags_in, attr_data: 0, data: a.data };
            v.extend_from_slice(attr.as_bytes());
        }
        if let Some(raw) = &self.raw_in {
            assert_eq!(hex(raw), hex(&v), "fixture parser disagrees with the raw capture for {}", self.title);
        }
        v
    }
    fn ptr(&self, id: u16) -> u64 {
        self.attrs.iter().find(|a| a.id == id).unwrap().data
    }
    fn in_bytes(&self, id: u16) -> Vec<u8> {
        self.attrs.iter().find(|a| a.id == id).unwrap().in_bytes.clone().unwrap()
    }
}

fn hex(b: &[u8]) -> String {
    b.iter().map(|x| format!("{x:02x}")).collect()
}

fn write_bw() -> HashMap<String, Event> {
    parse(include_str!("fixtures/ib_write_bw.client.txt"))
}
fn devinfo() -> HashMap<String, Event> {
    parse(include_str!("fixtures/ibv_devinfo.head.txt"))
}
fn ud() -> HashMap<String, Event> {
    parse(include_str!("fixtures/ib_send_bw_UD.client.ah.txt"))
}

/// Check an INVOKE_WRITE: our ioctl bytes and (for pointed CORE_IN) our core request bytes.
fn check_invoke(ev: &Event, l: &Legacy<'_>) {
    let core_in = ev.attrs.iter().find(|a| a.id == sys::attr::CORE_IN).unwrap();
    let p = InvokePtrs {
        core_in: if core_in.len > 8 { core_in.data } else { 0 },
        core_out: ev.attrs.iter().find(|a| a.id == sys::attr::CORE_OUT).map_or(0, |a| a.data),
        drv_in: 0,
        drv_out: ev.attrs.iter().find(|a| a.id == sys::UVERBS_ATTR_UHW_OUT).map_or(0, |a| a.data),
    };
    let (bytes, core) = cmd::encode_invoke_write(l, RXE, &p).unwrap();
    assert_eq!(hex(&bytes), hex(&ev.ioctl_bytes()), "{} {}", ev.title, l.name);
    if let Some(b) = &core_in.in_bytes {
        assert_eq!(hex(&core), hex(b), "{} {} CORE_IN bytes", ev.title, l.name);
    }
}

fn legacy<'a>(name: &'static str, command: u32, core_in: &'a [u8], core_out_len: usize, drv_out_len: usize) -> Legacy<'a> {
    Legacy { name, command, core_in, drv_in: &[], core_out_len, drv_out_len }
}

#[test]
fn invoke_write_probe() {
    let ev = &write_bw()["#1"];
    assert_eq!(hex(&cmd::encode_invoke_write_probe(RXE).unwrap()), hex(&ev.ioctl_bytes()));
}

#[test]
fn get_context_and_async_fd() {
    let evs = write_bw();
    let ev = &evs["#2"];
    let b = cmd::encode_get_context_ioctl(RXE, ev.ptr(0), ev.ptr(1), &[], 0, 0, 0).unwrap();
    assert_eq!(hex(&b), hex(&ev.ioctl_bytes()));
    assert_eq!(hex(&cmd::encode_async_event_alloc(RXE).unwrap()), hex(&evs["#3"].ioctl_bytes()));
}

#[test]
fn query_device_invoke_write() {
    let evs = write_bw();
    let req = sys::QueryDevice::default();
    for n in ["#4", "#6", "#8"] {
        check_invoke(&evs[n], &legacy("QUERY_DEVICE", sys::CMD_QUERY_DEVICE, req.as_bytes(), 176, 0));
    }
    // EX_QUERY_DEVICE (ibv_devinfo): no response field in the ex core request.
    let req = sys::ExQueryDevice::default();
    let l = legacy("EX_QUERY_DEVICE", sys::IB_USER_VERBS_CMD_FLAG_EXTENDED | sys::CMD_EX_QUERY_DEVICE, req.as_bytes(), 304, 0);
    check_invoke(&devinfo()["#4"], &l);
}

#[test]
fn query_port_and_gid_entry() {
    let evs = write_bw();
    for n in ["#5", "#7", "#14", "#16"] {
        let ev = &evs[n];
        let b = cmd::encode_query_port_ioctl(RXE, 1, ev.ptr(sys::attr::QUERY_PORT_RESP)).unwrap();
        assert_eq!(hex(&b), hex(&ev.ioctl_bytes()), "{n}");
    }
    let ev = &evs["#15"];
    let b = cmd::encode_query_gid_entry(RXE, 1, 1, ev.ptr(sys::attr::QUERY_GID_ENTRY_RESP_ENTRY)).unwrap();
    assert_eq!(hex(&b), hex(&ev.ioctl_bytes()));
    let di = devinfo();
    let ev = &di["#6"];
    let b = cmd::encode_query_gid_entry(RXE, 1, 0, ev.ptr(sys::attr::QUERY_GID_ENTRY_RESP_ENTRY)).unwrap();
    assert_eq!(hex(&b), hex(&ev.ioctl_bytes()));
}

#[test]
fn alloc_pd_and_reg_mr() {
    let evs = write_bw();
    let req = sys::AllocPd::default();
    check_invoke(&evs["#9"], &legacy("ALLOC_PD", sys::CMD_ALLOC_PD, req.as_bytes(), 4, 0));
    let acc = AccessFlags::LOCAL_WRITE | AccessFlags::REMOTE_WRITE | AccessFlags::RELAXED_ORDERING;
    let req = cmd::reg_mr_req(0x7f2534ede000, 0x20000, 0x7f2534ede000, 0, acc.bits());
    check_invoke(&evs["#10"], &legacy("REG_MR", sys::CMD_REG_MR, req.as_bytes(), 12, 0));
}

#[test]
fn cq_create_ioctl() {
    let ev = &write_bw()["#11"];
    let a = CreateCqArgs { user_handle: 0x55fee808f6e0, cqe: 50, comp_vector: 0, channel: None, event_fd: Some(5) };
    let p = CqCreatePtrs { resp_cqe: ev.ptr(sys::attr::CREATE_CQ_RESP_CQE), drv_in: 0, drv_out: ev.ptr(sys::UVERBS_ATTR_UHW_OUT) };
    let b = cmd::encode_cq_create(RXE, &a, &[], 16, &p).unwrap();
    assert_eq!(hex(&b), hex(&ev.ioctl_bytes()));
}

#[test]
fn qp_create_ioctl() {
    let ev = &write_bw()["#12"];
    let a = CreateQpArgs {
        user_handle: 0x55fee808f860,
        pd: 0,
        send_cq: 2,
        recv_cq: 2,
        srq: None,
        xrcd: None,
        qp_type: sys::IB_UVERBS_QPT_RC,
        caps: sys::QpCap { max_send_wr: 50, max_recv_wr: 1, max_send_sge: 1, max_recv_sge: 1, max_inline_data: 0 },
        sq_sig_all: false,
        event_fd: Some(5),
    };
    let p = QpCreatePtrs {
        cap: ev.ptr(sys::attr::CREATE_QP_CAP),
        resp_cap: ev.ptr(sys::attr::CREATE_QP_RESP_CAP),
        resp_qp_num: ev.ptr(sys::attr::CREATE_QP_RESP_QP_NUM),
        drv_in: 0,
        drv_out: ev.ptr(sys::UVERBS_ATTR_UHW_OUT),
    };
    let (b, h) = cmd::encode_qp_create(RXE, &a, &[], 32, &p).unwrap();
    assert_eq!(hex(&b), hex(&ev.ioctl_bytes()));
    assert_eq!(ev.attrs[h].id, sys::attr::CREATE_QP_HANDLE);
    assert_eq!(hex(a.caps.as_bytes()), hex(&ev.in_bytes(sys::attr::CREATE_QP_CAP)));
}

#[test]
fn modify_qp_init_rtr_rts() {
    let evs = write_bw();
    let dgid = [0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff, 0x0a, 0x63, 0, 1];
    let (a, m) = objects::init_attr(QpType::Rc, 1, 0, AccessFlags::REMOTE_WRITE, 0);
    let req = objects::modify_request(3, &a, m);
    check_invoke(&evs["#13"], &legacy("MODIFY_QP", sys::CMD_MODIFY_QP, req.as_bytes(), 0, 0));

    let p = RtrParams {
        path_mtu: 3,
        dest_qpn: 0x13,
        rq_psn: 0xc9613b,
        max_dest_rd_atomic: 1,
        min_rnr_timer: 12,
        ah: RtrParams::roce_path(1, dgid, 1, 255),
    };
    let (a, m) = objects::rtr_attr(QpType::Rc, &p);
    let req = objects::modify_request(3, &a, m);
    check_invoke(&evs["#17"], &legacy("MODIFY_QP", sys::CMD_MODIFY_QP, req.as_bytes(), 0, 0));

    let p = RtsParams { sq_psn: 0x168d25, timeout: 14, retry_cnt: 7, rnr_retry: 7, max_rd_atomic: 1 };
    let (a, m) = objects::rts_attr(QpType::Rc, &p);
    let req = objects::modify_request(3, &a, m);
    check_invoke(&evs["#18"], &legacy("MODIFY_QP", sys::CMD_MODIFY_QP, req.as_bytes(), 0, 0));
}

#[test]
fn rxe_doorbell_write() {
    let ev = &write_bw()["#19"];
    let raw = ev.raw_write.as_ref().unwrap();
    let resp = u64::from_le_bytes(raw[8..16].try_into().unwrap());
    assert_eq!(hex(&cmd::encode_post_send_doorbell(resp, 3)), hex(raw));
}

#[test]
fn destroys() {
    let evs = write_bw();
    let ev = &evs["#69"];
    let b = cmd::encode_destroy_with_resp(RXE, sys::obj::QP, sys::method::QP_DESTROY, 3, ev.ptr(sys::attr::DESTROY_QP_RESP), 4).unwrap();
    assert_eq!(hex(&b), hex(&ev.ioctl_bytes()));
    let ev = &evs["#70"];
    let b = cmd::encode_destroy_with_resp(RXE, sys::obj::CQ, sys::method::CQ_DESTROY, 2, ev.ptr(sys::attr::DESTROY_CQ_RESP), 8).unwrap();
    assert_eq!(hex(&b), hex(&ev.ioctl_bytes()));
    let b = cmd::encode_destroy_handle(RXE, sys::obj::MR, sys::method::MR_DESTROY, 1).unwrap();
    assert_eq!(hex(&b), hex(&evs["#71"].ioctl_bytes()));
    let b = cmd::encode_destroy_handle(RXE, sys::obj::PD, sys::method::PD_DESTROY, 0).unwrap();
    assert_eq!(hex(&b), hex(&evs["#72"].ioctl_bytes()));
    let b = cmd::encode_destroy_handle(RXE, sys::obj::AH, sys::method::AH_DESTROY, 5).unwrap();
    assert_eq!(hex(&b), hex(&ud()["#71"].ioctl_bytes()));
}

#[test]
fn create_ah_invoke_write() {
    let ev = &ud()["#20"];
    let dgid = [0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff, 0x0a, 0x63, 0, 1];
    let ah = AhAttr { dgid, sgid_index: 1, hop_limit: 255, is_global: true, port_num: 1, ..Default::default() };
    let req = cmd::create_ah_req(0x560e8d5e0050, 0, &objects::uverbs_ah_attr(&ah));
    check_invoke(ev, &legacy("CREATE_AH", sys::CMD_CREATE_AH, req.as_bytes(), 4, 8));
}

/// The write() path for the same commands: header words as the kernel checks them, and a body
/// identical to the core request rdma-core sent through INVOKE_WRITE.
#[test]
fn write_framing_matches_captured_core_requests() {
    let evs = write_bw();
    struct Case<'a> {
        ev: &'a Event,
        l: Legacy<'a>,
        words: (u16, u16),
    }
    let acc = AccessFlags::LOCAL_WRITE | AccessFlags::REMOTE_WRITE | AccessFlags::RELAXED_ORDERING;
    let qd = sys::QueryDevice::default();
    let pd = sys::AllocPd::default();
    let mr = cmd::reg_mr_req(0x7f2534ede000, 0x20000, 0x7f2534ede000, 0, acc.bits());
    let (a, m) = objects::init_attr(QpType::Rc, 1, 0, AccessFlags::REMOTE_WRITE, 0);
    let init = objects::modify_request(3, &a, m);
    let ud_evs = ud();
    let dgid = [0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff, 0x0a, 0x63, 0, 1];
    let ah = AhAttr { dgid, sgid_index: 1, hop_limit: 255, is_global: true, port_num: 1, ..Default::default() };
    let ah_req = cmd::create_ah_req(0x560e8d5e0050, 0, &objects::uverbs_ah_attr(&ah));
    let cases = [
        Case { ev: &evs["#4"], l: legacy("QUERY_DEVICE", 1, qd.as_bytes(), 176, 0), words: (4, 44) },
        Case { ev: &evs["#9"], l: legacy("ALLOC_PD", 3, pd.as_bytes(), 4, 0), words: (4, 1) },
        Case { ev: &evs["#10"], l: legacy("REG_MR", 9, mr.as_bytes(), 12, 0), words: (12, 3) },
        Case { ev: &evs["#13"], l: legacy("MODIFY_QP", 26, init.as_bytes(), 0, 0), words: (30, 0) },
        Case { ev: &ud_evs["#20"], l: legacy("CREATE_AH", 5, ah_req.as_bytes(), 4, 8), words: (16, 3) },
    ];
    for c in &cases {
        let core_out = c.ev.attrs.iter().find(|a| a.id == sys::attr::CORE_OUT).map_or(0, |a| a.data);
        let b = cmd::encode_write(&c.l, core_out).unwrap();
        let hdr = &b[..8];
        assert_eq!(u32::from_le_bytes(hdr[..4].try_into().unwrap()), c.l.command);
        assert_eq!(
            (u16::from_le_bytes([hdr[4], hdr[5]]), u16::from_le_bytes([hdr[6], hdr[7]])),
            c.words,
            "{} words",
            c.l.name
        );
        assert_eq!(b.len(), c.words.0 as usize * 4);
        // The captured core request (inline for 8-byte requests).
        let cin = c.ev.attrs.iter().find(|a| a.id == sys::attr::CORE_IN).unwrap();
        let expect = cin.in_bytes.clone().unwrap_or_else(|| cin.data.to_le_bytes()[..cin.len as usize].to_vec());
        assert_eq!(hex(&b[8..]), hex(&expect), "{} body", c.l.name);
    }

    // Commands rdma-core sent as native ioctls: the in/out word counts of their legacy write()
    // form.
    let cq = cmd::create_cq_req(&CreateCqArgs { user_handle: 1, cqe: 50, ..Default::default() });
    let qp = cmd::create_qp_req(&CreateQpArgs::default());
    let dq = sys::DestroyQp::default();
    let dc = sys::DestroyCq::default();
    let qport = sys::QueryPort { port_num: 1, ..Default::default() };
    let gc = sys::GetContext::default();
    let more = [
        (legacy("GET_CONTEXT", 0, gc.as_bytes(), 8, 0), (4, 2)),
        (legacy("QUERY_PORT", 2, qport.as_bytes(), 40, 0), (6, 10)),
        (legacy("CREATE_CQ", 18, cq.as_bytes(), 8, 16), (10, 6)),
        (legacy("CREATE_QP", 24, qp.as_bytes(), 32, 32), (16, 16)),
        (legacy("DESTROY_QP", 27, dq.as_bytes(), 4, 0), (6, 1)),
        (legacy("DESTROY_CQ", 20, dc.as_bytes(), 8, 0), (6, 2)),
        (legacy("DEREG_MR", 13, sys::DeregMr { mr_handle: 1 }.as_bytes(), 0, 0), (3, 0)),
        (legacy("DEALLOC_PD", 4, sys::DeallocPd { pd_handle: 0 }.as_bytes(), 0, 0), (3, 0)),
    ];
    for (l, words) in &more {
        let b = cmd::encode_write(l, 0x1000).unwrap();
        assert_eq!((u16::from_le_bytes([b[4], b[5]]), u16::from_le_bytes([b[6], b[7]])), *words, "{}", l.name);
    }
    let cq_bytes = cmd::encode_write(&more[2].0, 0).unwrap();
    // comp_channel -1 = none.
    assert_eq!(&cq_bytes[8 + 24..8 + 28], &(-1i32).to_le_bytes());
}

/// MR.REG_DMABUF_MR against rdma-core 44's `ibv_reg_dmabuf_mr`, captured through the fake mlx5
/// kernel of tests/dmabuf-oracle/ (its harness's fixed arguments; the key pointers are the
/// captured ones). rxe has no dma-buf MRs, so no real-kernel capture exists for this method.
#[test]
fn dmabuf_mr_matches_rdma_core() {
    let hex_text = include_str!("fixtures/reg_dmabuf_mr.hex").trim();
    let want = unhex(hex_text);
    // The two PTR_OUT attributes (lkey, rkey) are the second and third: data at bytes 8..16 of each.
    let ptr = |i: usize| {
        let off = 24 + i * 16 + 8;
        u64::from_le_bytes(want[off..off + 8].try_into().unwrap())
    };
    let args = cmd::DmabufMrArgs {
        pd: 1,
        fd: 9,
        offset: 0x234,
        length: 1 << 20,
        iova: 0x7f00_0020_0000,
        access: (AccessFlags::LOCAL_WRITE | AccessFlags::REMOTE_WRITE | AccessFlags::REMOTE_READ).bits(),
    };
    const MLX5: u32 = 1;
    let got = cmd::encode_reg_dmabuf_mr(MLX5, &args, ptr(1), ptr(2)).unwrap();
    assert_eq!(hex(&got), hex_text);
    // Header: object MR (7), method REG_DMABUF_MR (4), nine attributes, driver mlx5.
    assert_eq!(&got[..8], &[0xa8, 0, 7, 0, 4, 0, 9, 0]);
}
