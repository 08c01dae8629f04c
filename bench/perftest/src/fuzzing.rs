//! Fuzz target bodies for the bytes a perftest peer sends us over the out-of-band TCP exchange
//! (version, system data, MTU, negotiation, keys in text and rdma_cm form, report fields) and
//! for the command-line parser.
//!
//! Each `pub fn <target>(data: &[u8])` is called by the cargo-fuzz target of the same name
//! (`fuzz/fuzz_targets/<target>.rs`, nightly) and by the stable replay test
//! (`tests/fuzz_replay.rs`) with every file of `fuzz/corpus/<target>/`. A panic is a finding:
//! either a crash of the code under test or a violated property. See `docs/fuzzing.md`.
//!
//! rdma_cm events are not parsed anywhere yet (uverbs `cm` is not written); add a target when
//! they are.
//!
//! Not part of the API: test tooling, compiled in so that the replay runs on stable.
#![doc(hidden)]

use crate::oob::msg::{
    self, decode_cache_line, decode_mtu, decode_page_size, decode_version, encode_i32, encode_mtu,
    encode_version, BwReport, KeyFormat, KeyMsg, Negotiate, NegotiateLayout, ReportField,
};
use crate::params::{self, ParseOutcome, Tool};

/// Target `oob_version`: the 16-byte version block (any length is tried).
///
/// Checks: only 16-byte blocks are accepted; the text is the printable prefix up to the first
/// NUL; re-encoding it gives the input's prefix with zero padding, which decodes to the same
/// version; the numeric value is C `atof` of the text (finite or not, never a panic) and the
/// version gates are consistent with it.
pub fn oob_version(data: &[u8]) {
    let Ok(v) = decode_version(data) else {
        return;
    };
    assert_eq!(data.len(), msg::VERSION_LEN);
    let end = data.iter().position(|&c| c == 0).unwrap_or(data.len());
    assert_eq!(v.text.as_bytes(), &data[..end]);
    assert!(v.text.bytes().all(|c| (0x20..0x7f).contains(&c)));
    // rperftest's mark only where it follows the NUL exactly.
    assert_eq!(v.rperftest, data.get(end + 1..end + 1 + msg::RPERFTEST_MARK.len()) == Some(msg::RPERFTEST_MARK));
    if v.text.len() < msg::VERSION_LEN {
        let enc = encode_version(&v.text).expect("a decoded version re-encodes");
        assert_eq!(&enc[..end], &data[..end]);
        assert!(enc[end..].iter().all(|&c| c == 0));
        assert_eq!(decode_version(&enc).unwrap(), msg::PeerVersion { rperftest: false, ..v.clone() });
        let marked = msg::encode_version_marked(&v.text).expect("a decoded version re-encodes");
        let fits = end + 1 + msg::RPERFTEST_MARK.len() < msg::VERSION_LEN;
        assert_eq!(decode_version(&marked).unwrap().rperftest, fits);
    } else {
        // 16 printable characters without a NUL: perftest would read past its buffer; we cannot
        // send such a block ourselves.
        assert!(encode_version(&v.text).is_err());
    }
    let value = bench_core::cparse::atof(&v.text);
    assert!(value.to_bits() == v.value.to_bits() || (value.is_nan() && v.value.is_nan()));
    if v.value >= 5.32 {
        assert!(v.has_sysdata() && v.mtu_len() == Some(msg::MTU_LEN));
    }
    if v.is_supported() {
        assert!(v.has_sysdata());
        assert_eq!(v.report_iters_len(), 8);
        assert!(msg::check_version(&v).is_ok());
    } else {
        assert!(msg::check_version(&v).is_err());
    }
}

/// Target `oob_sysdata`: the page size and cache line blocks (4 bytes, BE i32).
///
/// Checks: only 4-byte blocks in 1..=max are accepted; encode(decode(b)) == b.
pub fn oob_sysdata(data: &[u8]) {
    for (r, max) in [
        (decode_page_size(data), msg::MAX_PEER_PAGE_SIZE),
        (decode_cache_line(data), msg::MAX_PEER_CACHE_LINE),
    ] {
        if let Ok(v) = r {
            assert_eq!(data.len(), msg::SYSDATA_LEN);
            assert!(v > 0 && v <= max, "{v} outside 1..={max}");
            assert_eq!(&encode_i32(v)[..], data, "encode(decode(b)) == b");
        }
    }
}

/// Target `oob_mtu`: the MTU block (2 bytes, or 4 for old peers; any length is tried).
///
/// Checks: an accepted block is a decimal number (after leading blanks, up to a NUL); `Some(e)`
/// only for 1..=5, and `e` re-encodes, in both widths, to a block that decodes to `Some(e)`;
/// the effective MTU never exceeds the local one.
pub fn oob_mtu(data: &[u8]) {
    let Ok(m) = decode_mtu(data) else {
        return;
    };
    let end = data.iter().position(|&c| c == 0).unwrap_or(data.len());
    let text: Vec<u8> = data[..end]
        .iter()
        .copied()
        .skip_while(|&c| c == b' ')
        .collect();
    assert!(!text.is_empty() && text.iter().all(u8::is_ascii_digit));
    let n: u64 = std::str::from_utf8(&text).unwrap().parse().unwrap();
    match m {
        Some(e) => {
            assert!((1..=5).contains(&e));
            assert_eq!(n, u64::from(e));
            for len in [msg::MTU_LEN, msg::MTU_LEN_OLD] {
                let enc = encode_mtu(e, len).unwrap();
                assert_eq!(enc.len(), len);
                assert_eq!(decode_mtu(&enc).unwrap(), Some(e));
            }
            assert_eq!(msg::mtu_enum(msg::mtu_bytes(e).unwrap()), Some(e));
        }
        None => assert!(!(1..=5).contains(&n)),
    }
    for local in 1..=5u8 {
        assert!(msg::effective_mtu(local, m) <= local);
    }
}

/// rperftest's option block (run from the `oob_negotiate` target: blocks of that size).
///
/// Checks: a decoded block is text lines of `label\tvalue`; re-encoding them decodes to the
/// same lines; a block compared with itself shows no difference.
fn oob_options(data: &[u8]) {
    let Ok(lines) = msg::decode_options(data) else { return };
    for (k, v) in &lines {
        assert!(!k.contains('\n') && !v.contains('\n'));
    }
    let borrowed: Vec<(&str, String)> = lines.iter().map(|(k, v)| (k.as_str(), v.clone())).collect();
    if let Ok(enc) = msg::encode_options(&borrowed) {
        // Lines that are empty or hold a second tab do not survive as such; the rest does.
        if lines.iter().all(|(k, v)| !k.contains('\t') && !v.contains('\t')) {
            assert_eq!(msg::decode_options(&enc).unwrap(), lines);
        }
    }
    assert!(msg::option_differences(&borrowed, &lines).is_empty());
}

/// Target `oob_negotiate`: the 312/320-byte NEGOTIATE block (any length is tried).
///
/// Checks: only the two layouts are accepted; encode(decode(b)) == b except the 4 padding bytes
/// before `size` (sent as zeros) and decodes to the same value; comparing the block with itself
/// finds no mismatch, and with a copy differing in one field finds one whose perftest message
/// is two lines.
pub fn oob_negotiate(data: &[u8]) {
    oob_options(data);
    let Ok(n) = Negotiate::decode(data) else {
        assert!(
            NegotiateLayout::from_len(data.len()).is_none(),
            "a {}-byte block refused",
            data.len()
        );
        return;
    };
    let layout = NegotiateLayout::from_len(data.len()).expect("accepted length is a layout");
    let enc = n.encode(layout);
    assert_eq!(enc.len(), data.len());
    let mut want = data.to_vec();
    want[28..32].fill(0);
    assert_eq!(enc, want, "encode(decode(b)) == b with zero padding");
    assert_eq!(Negotiate::decode(&enc).unwrap(), n);
    let _ = (n.max_qp_rd_atom(), n.vendor_id());
    assert!(msg::compare_negotiation(&n, &n).is_ok());
    let mut other = n.clone();
    other.iters = other.iters.wrapping_add(1);
    match msg::compare_negotiation(&n, &other) {
        Err(e) => {
            let lines = e.perftest_lines().expect("a mismatch has perftest's lines");
            assert_eq!(lines.matches('\n').count(), 2);
        }
        Ok(()) => panic!("a differing iters was not found"),
    }
}

const KEY_FORMATS: [KeyFormat; 4] = [
    KeyFormat::Short,
    KeyFormat::Gid,
    KeyFormat::ShortDv,
    KeyFormat::GidDv,
];

/// Target `oob_key`: a key block in perftest's text form (`LID:OUT_READS:QPN:PSN:RKEY:VADDR…`),
/// decoded in each of the four formats.
///
/// Checks: a block is accepted only in the format of its length; every field has exactly its
/// full width, so re-encoding gives back the input byte for byte (hex case aside), and the
/// result decodes to the same key; values fit their widths (QPN and PSN 24 bits); fields a
/// format does not carry are zero; `detect_format` names the format of the length.
pub fn oob_key(data: &[u8]) {
    let detected = KeyMsg::detect_format(data);
    for fmt in KEY_FORMATS {
        let Ok(k) = KeyMsg::decode(data, fmt) else {
            continue;
        };
        assert_eq!(data.len(), fmt.len());
        assert_eq!(detected, Some(fmt));
        assert!(k.qpn <= 0xff_ffff && k.psn <= 0xff_ffff);
        if !fmt.has_dv() {
            assert_eq!(k.tail_markers_vaddr, 0);
        }
        if !fmt.has_gid() {
            assert_eq!(k.gid, [0u8; 16]);
        }
        let enc = k.encode(fmt).expect("a decoded key re-encodes");
        assert_eq!(
            enc,
            data.to_ascii_lowercase(),
            "encode(decode(b)) == lowercase(b)"
        );
        assert_eq!(KeyMsg::decode(&enc, fmt).unwrap(), k);
    }
}

/// Target `oob_cm_key`: the binary key struct exchanged over rdma_cm (56 or 64 bytes, BE).
///
/// Checks: only the two sizes are accepted; LID/out_reads fit 16 bits, QPN/PSN 24 bits;
/// encode_cm(decode_cm(b)) == b except the 4 padding bytes after the rkey, and decodes again to
/// the same key and gid_index.
pub fn oob_cm_key(data: &[u8]) {
    let Ok((k, gid_index)) = KeyMsg::decode_cm(data) else {
        return;
    };
    assert!(data.len() == msg::CM_KEY_LEN_V606 || data.len() == msg::CM_KEY_LEN_V629);
    assert!(k.qpn <= 0xff_ffff && k.psn <= 0xff_ffff);
    if data.len() == msg::CM_KEY_LEN_V606 {
        assert_eq!(k.tail_markers_vaddr, 0);
    }
    let enc = k
        .encode_cm(data.len(), gid_index)
        .expect("a decoded rdma_cm key re-encodes");
    let mut want = data.to_vec();
    want[20..24].fill(0);
    assert_eq!(enc, want, "encode_cm(decode_cm(b)) == b with zero padding");
    assert_eq!(KeyMsg::decode_cm(&enc).unwrap(), (k, gid_index));
}

/// Target `oob_report`: a stream of report fields as `xchg_bw_reports` reads them. The first
/// byte picks per-port (9 fields) or not (5) and the iterations width (4 or 8); the rest is
/// cut into the fields in wire order (a short tail is tried as a truncated field).
///
/// Checks: a field is accepted only at its length; every bit pattern (NaN, infinities
/// included) survives decode → encode byte for byte; the summed duplex report keeps the local
/// size and iterations.
pub fn oob_report(data: &[u8]) {
    let Some((&sel, mut rest)) = data.split_first() else {
        return;
    };
    let per_port = sel & 1 != 0;
    let iters_len = if sel & 2 != 0 { 4 } else { 8 };
    let fields = BwReport::fields(per_port);
    assert_eq!(fields.len(), if per_port { 9 } else { 5 });
    let mut rep = BwReport::default();
    for &f in fields {
        let want = BwReport::field_len(f, iters_len);
        let take = want.min(rest.len());
        let (chunk, tail) = rest.split_at(take);
        rest = tail;
        let r = rep.decode_field(f, chunk);
        if chunk.len() != want && !(f == ReportField::Iters && chunk.len() == 4) {
            assert!(
                r.is_err(),
                "{} field of {} bytes accepted",
                f.name(),
                chunk.len()
            );
            break;
        }
        r.expect("a full-length field decodes");
        assert_eq!(
            rep.encode_field(f, chunk.len()),
            chunk,
            "decode → encode of {}",
            f.name()
        );
    }
    // Every field also in isolation, at every length up to 9.
    for f in ReportField::ALL {
        for len in 0..=9usize.min(rest.len()) {
            let mut r = BwReport::default();
            let ok = r.decode_field(f, &rest[..len]).is_ok();
            assert_eq!(ok, len == 8 || (len == 4 && f == ReportField::Iters));
        }
    }
    let s = rep.summed(&rep);
    assert_eq!((s.size, s.iters), (rep.size, rep.iters));
    // The plausibility check of a report about to be printed: a verdict, never a panic, and
    // one line either way.
    if let Err(e) = crate::oob::plausible::check_report(&rep, Some(rep.size), 1) {
        assert!(!e.to_string().contains('\n'));
    }
}

/// Target `params`: a command line. The first byte picks the tool; the rest is split at NUL
/// bytes into arguments (invalid UTF-8 replaced, as an OS string would be lossily converted).
///
/// Checks: parsing never panics and is deterministic; an error renders as one line naming the
/// option; a run's parameters belong to the tool asked for and have at least one message size;
/// help and version texts are non-empty.
pub fn params(data: &[u8]) {
    let Some((&sel, rest)) = data.split_first() else {
        return;
    };
    let tool = Tool::ALL[usize::from(sel) % Tool::ALL.len()];
    let args: Vec<String> = if rest.is_empty() {
        Vec::new()
    } else {
        rest.split(|&c| c == 0)
            .map(|a| String::from_utf8_lossy(a).into_owned())
            .collect()
    };
    let r = params::parse(tool, &args);
    // Compared as text: a NaN limit (`--limit_bw=nan`) is not equal to itself.
    assert_eq!(
        format!("{:?}", params::parse(tool, &args)),
        format!("{r:?}"),
        "parse is deterministic"
    );
    match r {
        Ok(ParseOutcome::Run(p)) => {
            assert_eq!(p.tool, tool);
            assert_eq!(p.kind, tool.kind());
            assert!(!p.sizes().is_empty());
        }
        Ok(ParseOutcome::Help(t)) | Ok(ParseOutcome::Version(t)) => assert!(!t.is_empty()),
        Err(e) => {
            let line = e.to_string();
            // Arguments are quoted in messages; control characters in them are shown escaped
            // (found by this target: fuzz/corpus/params/regress-newline-in-error-*).
            assert!(!line.contains('\n'), "error is not one line: {line:?}");
            assert!(!e.message.is_empty());
            assert_eq!(e.exit_code(), 1);
        }
    }
}
