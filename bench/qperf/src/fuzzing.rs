//! Fuzz target bodies for what a qperf peer sends on the control connection. Each
//! `pub fn <target>(data: &[u8])` is run by the cargo-fuzz target of the same name
//! (`fuzz/fuzz_targets/<target>.rs`, nightly) and by the stable replay test
//! (`bench/qperf/tests/fuzz_replay.rs`) over every file of `fuzz/corpus/<target>/`.
#![doc(hidden)]

/// Target `qperf_wire`: the bytes a qperf peer sends on the control connection (REQ, NODE,
/// STAT, CONF, the data-port word, the error text, our GID extension). The input goes to every decoder as it is,
/// and also cut or zero-extended to each message's exact length.
///
/// Checks: a decoder accepts exactly its length; REQ and CONF re-encode byte for byte
/// (strings are kept with what follows their NUL); NODE and STAT re-encode their meaningful
/// 36 / 252 bytes and ignore the padding; the version gate is consistent with the version
/// fields; a port is accepted exactly when the u32 is in 1..=65535; texts shown to the user
/// (CONF strings, the error text) hold no control characters and are bounded.
pub fn qperf_wire(data: &[u8]) {
    use crate::wire::{self, Conf, Node, Req, Stat};
    let sized = |n: usize| {
        let mut v = data[..data.len().min(n)].to_vec();
        v.resize(n, 0);
        v
    };
    for (len, ok) in [
        (wire::REQ_LEN, Req::decode(data).is_ok()),
        (wire::NODE_LEN, Node::decode(data).is_ok()),
        (wire::STAT_LEN, Stat::decode(data).is_ok()),
        (wire::CONF_LEN, Conf::decode(data).is_ok()),
        (wire::REQ_VERSION_LEN, Req::decode_version(data).is_ok()),
    ] {
        assert_eq!(ok, data.len() == len, "a decoder accepted {} bytes for a {len}-byte message", data.len());
    }
    let b = sized(wire::REQ_LEN);
    let req = Req::decode(&b).expect("exact length");
    assert_eq!(&req.encode()[..], &b[..], "REQ round trip");
    let (maj, min, inc) = Req::decode_version(&b[..wire::REQ_VERSION_LEN]).expect("exact length");
    assert_eq!((maj, min, inc), (req.ver_maj, req.ver_min, req.ver_inc));
    assert_eq!(Req::version_error(maj, min, inc).is_none(), maj == 0 && min == 4);
    assert!(req.id.text().chars().all(|c| !c.is_control()));

    let b = sized(wire::NODE_LEN);
    let node = Node::decode(&b).expect("exact length");
    let enc = node.encode();
    assert_eq!(&enc[..wire::NODE_ENCODED_LEN], &b[..wire::NODE_ENCODED_LEN], "NODE round trip");
    assert!(enc[wire::NODE_ENCODED_LEN..].iter().all(|&c| c == 0));

    let b = sized(wire::STAT_LEN);
    let stat = Stat::decode(&b).expect("exact length");
    let enc = stat.encode();
    assert_eq!(&enc[..wire::STAT_ENCODED_LEN], &b[..wire::STAT_ENCODED_LEN], "STAT round trip");
    assert_eq!(Stat::decode(&enc).expect("exact length"), stat);
    // The figures computed from a hostile STAT never panic, whatever the clocks say.
    let mut l = stat;
    let mut r = stat;
    let res = crate::results::calc(&mut l, &mut r);
    let mut t = crate::format::Table::new(
        crate::format::Units::default(),
        crate::format::Verbosity { conf: 2, stat: 2, time: 2, used: 2, debug: true },
    );
    crate::results::show_info(&mut t, crate::results::Measure::BandwidthSr, &res, &l, &r, &crate::options::Pars::new(), false);
    let _ = t.render();

    let b = sized(wire::CONF_LEN);
    let conf = Conf::decode(&b).expect("exact length");
    assert_eq!(&conf.encode()[..], &b[..], "CONF round trip");
    for s in [conf.node, conf.cpu, conf.os, conf.qperf] {
        let t = s.text();
        assert!(t.chars().all(|c| !c.is_control()) && t.chars().count() <= wire::STR_LEN);
    }

    let b = sized(wire::PORT_LEN);
    let v = u32::from_le_bytes([b[0], b[1], b[2], b[3]]);
    assert_eq!(wire::decode_port(&b).ok().map(u32::from), (1..=65535).contains(&v).then_some(v));

    let text = wire::decode_error_text(data);
    assert!(text.chars().all(|c| !c.is_control()));
    assert!(text.chars().count() <= wire::MAX_ERROR_TEXT);

    // The GID extension (REQ id tail, NODE padding mark, the 24-byte message).
    use crate::rdma::node_ext::{self, Follows, GidExt, MtuExt};
    let ext = GidExt::decode(data);
    assert_eq!(ext.is_some() && data.len() == node_ext::EXT_LEN, ext.is_some());
    let b = sized(node_ext::EXT_LEN);
    if let Some(e) = GidExt::decode(&b) {
        assert_eq!(&e.encode()[..], &b[..], "GID extension round trip");
    }
    // The MTU block: only the low two flag bits and byte 7 are not kept.
    let b = sized(node_ext::MTU_EXT_LEN);
    if let Some(m) = MtuExt::decode(&b) {
        assert_eq!(&m.encode()[..6], &b[..6], "MTU block round trip");
        assert_eq!(MtuExt::decode(&m.encode()), Some(m));
    }
    let b = sized(wire::REQ_LEN);
    let req = Req::decode(&b).expect("exact length");
    if let Some(e) = node_ext::ext_from_id(&req.id) {
        // Only after a NUL that ends the text before the extension; re-embedding keeps it.
        assert!(req.id.raw().len() < node_ext::ID_EXT_OFF);
        let text = String::from_utf8_lossy(req.id.raw()).into_owned();
        if text.len() == req.id.raw().len() {
            let m = node_ext::mtu_from_id(&req.id);
            let id = node_ext::id_with_ext(&text, Some(&e), m.as_ref());
            assert_eq!(node_ext::ext_from_id(&id), Some(e));
            assert_eq!(node_ext::mtu_from_id(&id), m);
        }
    }
    let b = sized(wire::NODE_LEN);
    let pad = &b[wire::NODE_ENCODED_LEN..];
    let want = if pad == node_ext::NODE_MARK {
        Some(Follows::Gid)
    } else if pad == node_ext::NODE_MARK_MTU {
        Some(Follows::GidMtu)
    } else {
        None
    };
    assert_eq!(node_ext::node_marked(&b), want);
    assert_eq!(node_ext::node_marked(&b[..wire::NODE_LEN - 1]), None);
    let mut arr = [0u8; wire::NODE_LEN];
    arr.copy_from_slice(&b);
    node_ext::mark_node(&mut arr, if b[0] & 1 == 0 { Follows::Gid } else { Follows::GidMtu });
    assert_eq!(Node::decode(&arr).expect("exact length"), node, "the mark is not part of NODE");
}
