//! Every decoder over random, truncated and mutated input: errors, never panics.

use perftest::oob::msg::{self, BwReport, KeyFormat, KeyMsg, Negotiate};

mod common;

fn rng(seed: &mut u64) -> u64 {
    *seed ^= *seed << 13;
    *seed ^= *seed >> 7;
    *seed ^= *seed << 17;
    *seed
}

fn inputs() -> Vec<Vec<u8>> {
    let good =
        KeyMsg { qpn: 0x12, psn: 0x6c7b86, rkey: 0x39e, vaddr: 0x7fd4c5991000, out_reads: 1, ..Default::default() };
    let mut seeds: Vec<Vec<u8>> = vec![
        vec![],
        b"6.06\0\0\0\0\0\0\0\0\0\0\0\0".to_vec(),
        b"3\0".to_vec(),
        vec![0, 0, 16, 0],
        good.encode(KeyFormat::Gid).unwrap(),
        good.encode(KeyFormat::Short).unwrap(),
        good.encode(KeyFormat::GidDv).unwrap(),
        good.encode(KeyFormat::ShortDv).unwrap(),
        good.encode_cm(56, 3).unwrap(),
        good.encode_cm(64, -1).unwrap(),
        vec![0xff; 320],
        vec![0; 312],
    ];
    let mut s = 0x9e3779b97f4a7c15u64;
    let base = seeds.clone();
    for b in &base {
        for _ in 0..300 {
            let mut m = b.clone();
            match rng(&mut s) % 4 {
                0 if !m.is_empty() => {
                    let i = (rng(&mut s) as usize) % m.len();
                    m[i] = rng(&mut s) as u8;
                }
                1 if !m.is_empty() => {
                    let n = (rng(&mut s) as usize) % m.len();
                    m.truncate(n);
                }
                2 => m.extend((0..(rng(&mut s) % 16)).map(|_| rng(&mut s) as u8)),
                _ => {
                    let i = (rng(&mut s) as usize) % (m.len() + 1);
                    m.insert(i.min(m.len()), b":0123456789abcdefxyz\0"[(rng(&mut s) % 21) as usize]);
                }
            }
            seeds.push(m);
        }
    }
    for len in 0..400 {
        seeds.push((0..len).map(|_| rng(&mut s) as u8).collect());
    }
    seeds
}

#[test]
fn decoders_never_panic() {
    let fmts = [KeyFormat::Short, KeyFormat::Gid, KeyFormat::ShortDv, KeyFormat::GidDv];
    for b in inputs() {
        let _ = msg::decode_version(&b);
        let _ = msg::decode_page_size(&b);
        let _ = msg::decode_cache_line(&b);
        let _ = msg::decode_mtu(&b);
        if let Ok(n) = Negotiate::decode(&b) {
            let _ = n.max_qp_rd_atom();
            let _ = msg::compare_negotiation(&n, &n);
        }
        for f in fmts {
            if let Ok(k) = KeyMsg::decode(&b, f) {
                // What we accept we can re-encode in the same format.
                assert_eq!(KeyMsg::decode(&k.encode(f).unwrap(), f).unwrap(), k);
            }
        }
        let _ = KeyMsg::decode_cm(&b);
        let mut r = BwReport::default();
        for f in BwReport::fields(true) {
            let _ = r.decode_field(*f, &b);
        }
        let _ = bench_core::cparse::atof(&String::from_utf8_lossy(&b));
    }
}

#[test]
fn errors_are_one_line() {
    for b in inputs() {
        for e in [
            msg::decode_version(&b).err(),
            msg::decode_mtu(&b).err(),
            KeyMsg::decode(&b, KeyFormat::Gid).err(),
            KeyMsg::decode_cm(&b).err(),
            Negotiate::decode(&b).err(),
        ]
        .into_iter()
        .flatten()
        {
            let s = e.to_string();
            assert!(!s.contains('\n') && !s.is_empty(), "{s:?}");
        }
    }
}

#[test]
fn versions_and_gates() {
    assert_eq!(bench_core::cparse::atof("6.06"), 6.06);
    assert_eq!(bench_core::cparse::atof(" 6.29abc"), 6.29);
    assert_eq!(bench_core::cparse::atof(""), 0.0);
    assert_eq!(bench_core::cparse::atof("x"), 0.0);
    let v = |t: &str| msg::PeerVersion::from_text(t);
    assert!(!v("5.60").is_supported());
    assert!(v("5.70").is_supported());
    assert!(v("6.29").negotiates_with(&v("6.29")));
    assert!(v("6.28").negotiates_with(&v("6.29")));
    assert!(!v("6.06").negotiates_with(&v("6.29")));
    assert!(v("6.06").negotiates_with(&v("6.28")), "6.28 always negotiates");
    assert!(!v("6.29").negotiates_with(&v("6.06")));
    assert!(msg::encode_version("6.290000000000000").is_err());
    assert_eq!(msg::decode_mtu(b"9\0").unwrap(), None);
    assert_eq!(msg::effective_mtu(5, Some(3)), 3);
    assert_eq!(msg::effective_mtu(3, None), 3);
    assert_eq!(msg::mtu_bytes(5), Some(4096));
    assert_eq!(msg::mtu_enum(512), Some(2));
}

#[test]
fn key_formats_and_cm_layouts() {
    let k = KeyMsg {
        lid: 0x1a,
        out_reads: 0x80,
        qpn: 0xabcdef,
        psn: 0x123,
        rkey: 0xdeadbeef,
        vaddr: 0x7f00_1234_5000,
        tail_markers_vaddr: 0x7f00_0000_0040,
        gid: [0xfe, 0x80, 0, 0, 0, 0, 0, 0, 0, 1, 2, 3, 4, 5, 6, 7],
        srqn: 0x42,
    };
    assert_eq!(
        k.encode(KeyFormat::Short).unwrap(),
        b"001a:0080:abcdef:000123:deadbeef:00007f0012345000:00000042\0".to_vec()
    );
    for f in [KeyFormat::Short, KeyFormat::Gid, KeyFormat::ShortDv, KeyFormat::GidDv] {
        let b = k.encode(f).unwrap();
        assert_eq!(b.len(), f.len());
        let d = KeyMsg::decode(&b, f).unwrap();
        assert_eq!(d.qpn, k.qpn);
        assert_eq!(d.gid, if f.has_gid() { k.gid } else { [0; 16] });
        assert_eq!(d.tail_markers_vaddr, if f.has_dv() { k.tail_markers_vaddr } else { 0 });
    }
    // Upper-case hex from a foreign peer is accepted.
    let up = String::from_utf8(k.encode(KeyFormat::Short).unwrap()).unwrap().to_uppercase();
    assert_eq!(KeyMsg::decode(up.as_bytes(), KeyFormat::Short).unwrap().rkey, 0xdeadbeef);
    // 24-bit limits.
    assert!(KeyMsg { qpn: 0x100_0000, ..k }.encode(KeyFormat::Short).is_err());
    // rdma_cm struct: both sizes decode; GID offset moves from 32 to 40.
    let b56 = k.encode_cm(56, 1).unwrap();
    let b64 = k.encode_cm(64, 1).unwrap();
    assert_eq!(&b56[32..48], &k.gid);
    assert_eq!(&b64[40..56], &k.gid);
    assert_eq!(&b56[0..4], &[0, 0, 0, 0x1a]);
    let (d56, gi) = KeyMsg::decode_cm(&b56).unwrap();
    assert_eq!((d56.tail_markers_vaddr, gi), (0, 1));
    assert_eq!(KeyMsg::decode_cm(&b64).unwrap().0, k);
}

#[test]
fn negotiate_layout_and_mismatch_text() {
    let mut n = common::write_bw_negotiate(5000, msg::device_attr_blob(0x2c9, 4129, 16), 0x1234);
    let b = n.encode(msg::NegotiateLayout::WithMlx5dv);
    assert_eq!(b.len(), 320);
    assert_eq!(&b[8..12], &[0, 0, 0, 2]);
    assert_eq!(&b[32..40], &65536u64.to_be_bytes());
    assert_eq!(&b[40..48], &5000u64.to_be_bytes());
    assert_eq!(&b[80 + 144..80 + 148], &16i32.to_ne_bytes());
    assert_eq!(Negotiate::decode(&b).unwrap(), n);
    assert_eq!(n.encode(msg::NegotiateLayout::NoMlx5dv).len(), 312);
    let mut r = n.clone();
    r.connection_type = 2;
    let e = msg::compare_negotiation(&n, &r).unwrap_err();
    assert!(e.to_string().starts_with("connection_type mismatch: local=RC, remote=UD;"), "{e}");
    r.connection_type = 99;
    assert!(msg::compare_negotiation(&n, &r).unwrap_err().to_string().contains("remote=<unknown 99>"));
    n.iters = 0;
    let mut r = n.clone();
    r.report_fmt = 0;
    assert_eq!(
        msg::compare_negotiation(&n, &r).unwrap_err().perftest_lines().unwrap(),
        " report_fmt mismatch: local=MBS, remote=GBS\n Failed to negotiate parameters\n"
    );
    // --aes_xts: big-endian at offset 48, compared after iters as ON/OFF (6.28+ peers)
    let mut a = n.clone();
    a.aes_xts = 1;
    let b = a.encode(msg::NegotiateLayout::WithMlx5dv);
    assert_eq!(&b[48..52], &[0, 0, 0, 1]);
    assert_eq!(Negotiate::decode(&b).unwrap().aes_xts, 1);
    assert_eq!(
        msg::compare_negotiation(&a, &n).unwrap_err().perftest_lines().unwrap(),
        " aes_xts mismatch: local=ON, remote=OFF\n Failed to negotiate parameters\n"
    );
    assert!(msg::compare_negotiation(&a, &a).is_ok());
}
