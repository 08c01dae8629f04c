//! Golden tests for the rdma_ucm wire layer against our capture of `ib_write_bw -R` (librdmacm
//! 44, kernel 6.1; fixtures/cm/write_bw_R.{client,server}.txt): every command buffer librdmacm
//! wrote is rebuilt by `uverbs::cm::wire` from its parameters (response pointers, ids and uids
//! taken from the capture, everything else from what the command means) and must match byte
//! for byte; the kernel's answers (events, QUERY, INIT_QP_ATTR) decode to the values the
//! capture's decoder printed.

use std::net::SocketAddr;

use uverbs::cm::wire::{self, CmAddr, CmEventKind, ConnParam, PortSpace};
use uverbs::objects::{modify_request, QpAttrMask};
use uverbs::provider::{QpState, QpType};

struct Rec {
    seq: u32,
    cmd: String,
    raw: Vec<u8>,
    resp: Option<Vec<u8>>,
}

fn hex(s: &str) -> Vec<u8> {
    (0..s.len()).step_by(2).map(|i| u8::from_str_radix(&s[i..i + 2], 16).unwrap()).collect()
}

fn load(side: &str) -> Vec<Rec> {
    let path = format!("{}/tests/fixtures/cm/write_bw_R.{side}.txt", env!("CARGO_MANIFEST_DIR"));
    let text = std::fs::read_to_string(&path).unwrap();
    text.lines()
        .filter(|l| l.starts_with('#') && l.as_bytes().get(1).is_some_and(|b| b.is_ascii_digit()))
        .map(|l| {
            let mut it = l.split_whitespace();
            let seq = it.next().unwrap()[1..].parse().unwrap();
            let _fd = it.next();
            let cmd = it.next().unwrap().to_string();
            let mut raw = None;
            let mut resp = None;
            for kv in it {
                if let Some(h) = kv.strip_prefix("raw=") {
                    raw = Some(hex(h));
                } else if let Some(h) = kv.strip_prefix("resp=") {
                    resp = Some(hex(h));
                }
            }
            Rec { seq, cmd, raw: raw.unwrap(), resp }
        })
        .collect()
}

fn find(recs: &[Rec], seq: u32) -> &Rec {
    recs.iter().find(|r| r.seq == seq).unwrap_or_else(|| panic!("no record #{seq}"))
}

fn u16at(b: &[u8], o: usize) -> u16 {
    u16::from_ne_bytes(b[o..o + 2].try_into().unwrap())
}
fn u32at(b: &[u8], o: usize) -> u32 {
    u32::from_ne_bytes(b[o..o + 4].try_into().unwrap())
}
fn u64at(b: &[u8], o: usize) -> u64 {
    u64::from_ne_bytes(b[o..o + 8].try_into().unwrap())
}

fn state(v: u32) -> QpState {
    match v {
        1 => QpState::Init,
        2 => QpState::Rtr,
        3 => QpState::Rts,
        _ => panic!("state {v}"),
    }
}

/// Rebuild a captured command from the parameters the API takes (pointers/ids/uids from the
/// capture). `None` for forms we do not produce (AF_IB binds: librdmacm's start-up probe).
fn rebuild(r: &Rec) -> Option<Vec<u8>> {
    let b = &r.raw[8..];
    let out = u16at(&r.raw, 6) as usize;
    Some(match r.cmd.as_str() {
        "CREATE_ID" => {
            let ps = match u16at(b, 16) {
                0x106 => PortSpace::Tcp,
                0x13f => PortSpace::Ib,
                p => panic!("ps {p:#x}"),
            };
            assert_eq!(b[18], 2);
            wire::create_id(u64at(b, 0), u64at(b, 8), ps, QpType::Rc)
        }
        "DESTROY_ID" => wire::destroy_id(u64at(b, 0), u32at(b, 8)),
        "BIND" => match wire::decode_sockaddr(&b[8..8 + u16at(b, 4) as usize]) {
            CmAddr::Ip(a) => wire::bind(u32at(b, 0), &a),
            _ => return None,
        },
        "RESOLVE_ADDR" => {
            let dst: SocketAddr = "10.99.0.1:18515".parse().unwrap();
            assert_eq!(u32at(b, 4), 2000);
            wire::resolve_addr(u32at(b, 0), None, &dst, 2000)
        }
        "RESOLVE_ROUTE" => wire::resolve_route(u32at(b, 0), 2000),
        "QUERY" => wire::query(u64at(b, 0), u32at(b, 8), u32at(b, 12), out),
        "LISTEN" => wire::listen(u32at(b, 0), 1),
        "GET_EVENT" => wire::get_event(u64at(b, 0)),
        "INIT_QP_ATTR" => wire::init_qp_attr(u64at(b, 0), u32at(b, 8), state(u32at(b, 12))),
        "DISCONNECT" => wire::disconnect(u32at(b, 0)),
        "CONNECT" => {
            let p = ConnParam { qp_num: u32at(b, 0), retry_count: 7, rnr_retry_count: 7, ..Default::default() };
            wire::connect(u32at(b, 272), &p)
        }
        "ACCEPT" => {
            let (uid, id, valid) = (u64at(b, 0), u32at(b, 280), b[8 + 271]);
            if valid == 0 {
                wire::accept(uid, id, None)
            } else {
                let p = ConnParam { qp_num: u32at(b, 8), retry_count: 7, rnr_retry_count: 7, ..Default::default() };
                wire::accept(uid, id, Some(&p))
            }
        }
        other => panic!("command {other} in the fixture has no encoder"),
    })
}

#[test]
fn every_captured_command_is_rebuilt_byte_for_byte() {
    let mut n = 0;
    for side in ["client", "server"] {
        for r in load(side) {
            if let Some(ours) = rebuild(&r) {
                assert_eq!(ours, r.raw, "{side} #{} {}: our buffer differs from librdmacm's", r.seq, r.cmd);
                n += 1;
            }
        }
    }
    assert!(n >= 70, "only {n} commands compared");
}

#[test]
fn known_buffers() {
    let c = load("client");
    // CREATE_ID(TCP, RC): uid and response pointer substituted.
    assert_eq!(wire::create_id(0x559af0f427a0, 0x7ffff54f1b14, PortSpace::Tcp, QpType::Rc), find(&c, 12).raw);
    // RESOLVE_ADDR 10.99.0.1:18515, 2000 ms.
    let dst: SocketAddr = "10.99.0.1:18515".parse().unwrap();
    assert_eq!(wire::resolve_addr(1, None, &dst, 2000), find(&c, 13).raw);
    // CONNECT qp 0x15, retry 7/7, valid.
    let p = ConnParam { qp_num: 0x15, retry_count: 7, rnr_retry_count: 7, ..Default::default() };
    assert_eq!(wire::connect(1, &p), find(&c, 33).raw);
    // The active side's parameterless ACCEPT.
    assert_eq!(wire::accept(0, 1, None), find(&c, 41).raw);
    let s = load("server");
    let any: SocketAddr = "0.0.0.0:18515".parse().unwrap();
    assert_eq!(wire::bind(3, &any), find(&s, 51).raw);
    assert_eq!(wire::listen(3, 1), find(&s, 54).raw);
    let p = ConnParam { qp_num: 0x18, retry_count: 7, rnr_retry_count: 7, ..Default::default() };
    assert_eq!(wire::accept(0x557414a04750, 4, Some(&p)), find(&s, 72).raw);
    assert_eq!(wire::disconnect(4), find(&s, 4180).raw);
}

#[test]
fn private_data_is_carried() {
    let p = ConnParam { qp_num: 7, private_data: (0..56).collect(), ..Default::default() };
    let b = wire::connect(9, &p);
    assert_eq!(&b[8 + 8..8 + 8 + 56], &(0..56).collect::<Vec<u8>>()[..]);
    assert_eq!(b[8 + 264], 56);
    assert_eq!(b[8 + 271], 1);
}

#[test]
fn captured_events_decode() {
    let c = load("client");
    let ev = |recs: &[Rec], seq| wire::decode_event(find(recs, seq).resp.as_ref().unwrap()).unwrap();

    let e = ev(&c, 14);
    assert_eq!((e.kind, e.id, e.uid, e.status), (CmEventKind::AddrResolved, 1, 0x559af0f427a0, 0));
    assert_eq!(ev(&c, 24).kind, CmEventKind::RouteResolved);

    let e = ev(&c, 34);
    assert_eq!(e.kind, CmEventKind::ConnectResponse);
    assert_eq!((e.conn.qp_num, e.conn.private_data.len(), e.conn.rnr_retry_count, e.conn.retry_count), (0x16, 196, 7, 0));

    let e = ev(&c, 4228);
    assert_eq!((e.kind, e.id, e.uid), (CmEventKind::Disconnected, 0, 0x559af0f46620));

    let s = load("server");
    let e = ev(&s, 56);
    assert_eq!(e.kind, CmEventKind::ConnectRequest);
    // uid is the listener's, id the new connection's.
    assert_eq!((e.uid, e.id), (0x557414a044f0, 4));
    assert_eq!((e.conn.qp_num, e.conn.private_data.len(), e.conn.retry_count, e.conn.rnr_retry_count), (0x17, 56, 7, 7));
    assert!(e.conn.private_data.iter().all(|&b| b == 0));
}

#[test]
fn captured_queries_decode() {
    let c = load("client");
    let a = wire::decode_query_addr(find(&c, 15).resp.as_ref().unwrap()).unwrap();
    assert_eq!((a.node_guid, a.port_num, a.ibdev_index), (0x0cfb_7fff_fec6_0a9b, 1, 0));
    assert_eq!(a.src, CmAddr::Ip("10.99.0.1:59040".parse().unwrap()));
    assert_eq!(a.dst, CmAddr::Ip("10.99.0.1:18515".parse().unwrap()));

    let g = wire::decode_query_addr(find(&c, 22).resp.as_ref().unwrap()).unwrap();
    let mapped = [0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff, 10, 99, 0, 1];
    match (g.src, g.dst) {
        (CmAddr::Ib(s), CmAddr::Ib(d)) => {
            assert_eq!((s.gid, d.gid), (mapped, mapped));
            // The service id carries the port space and port: 0x106 << 16 | port.
            assert_eq!(d.sid, 0x0106_4853);
        }
        other => panic!("{other:?}"),
    }

    let paths = wire::decode_query_path(find(&c, 25).resp.as_ref().unwrap()).unwrap();
    assert_eq!(paths.len(), 1);
    let p = paths[0];
    assert_eq!((p.flags, p.dgid(), p.sgid(), p.hop_limit(), p.traffic_class(), p.mtu(), p.pkey()), (0x2b, mapped, mapped, 64, 0, 3, 0xffff));
}

#[test]
fn init_qp_attr_answers_become_modify_qp_requests() {
    let c = load("client");
    let qa = |seq| wire::decode_qp_attr(find(&c, seq).resp.as_ref().unwrap()).unwrap();

    let (a, m) = qa(31);
    assert_eq!(m, QpAttrMask::STATE | QpAttrMask::ACCESS_FLAGS | QpAttrMask::PKEY_INDEX | QpAttrMask::PORT);
    assert_eq!((a.qp_state, a.port_num, a.pkey_index, a.qp_access_flags.bits()), (QpState::Init, 1, 0, 0));
    // After the REP the kernel grants REMOTE_WRITE.
    assert_eq!(qa(35).0.qp_access_flags.bits(), 2);

    let (a, m) = qa(37);
    assert_eq!(m.bits(), 0x129181);
    let r = modify_request(5, &a, m);
    let mapped = [0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff, 10, 99, 0, 1];
    assert_eq!((r.qp_state, r.path_mtu, r.dest_qp_num, r.rq_psn, r.max_dest_rd_atomic, r.min_rnr_timer), (2, 3, 0x16, 0x5873b4, 0, 0));
    assert_eq!((r.dest.dgid, r.dest.sgid_index, r.dest.hop_limit, r.dest.is_global, r.dest.port_num), (mapped, 1, 64, 1, 1));

    let (a, m) = qa(39);
    assert_eq!(m.bits(), 0x12e01);
    let r = modify_request(5, &a, m);
    assert_eq!((r.qp_state, r.sq_psn, r.timeout, r.retry_cnt, r.rnr_retry, r.max_rd_atomic), (3, 0x911922, 19, 7, 7, 0));
}
