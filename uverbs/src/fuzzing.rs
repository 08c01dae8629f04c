//! Fuzz target bodies for the parsers of this crate that read untrusted bytes (netlink replies
//! from the kernel, sysfs attribute text), plus [`Bytes`], the little input reader every
//! crate's `fuzzing` module uses to turn fuzzer bytes into structured values.
//!
//! Each `pub fn <target>(data: &[u8])` is called both by the cargo-fuzz target of the same name
//! (`fuzz/fuzz_targets/<target>.rs`, nightly) and by the stable replay test
//! (`tests/fuzz_replay.rs`), which feeds it every file of `fuzz/corpus/<target>/`. A body never
//! panics on any input unless a property it checks is violated: every panic is a finding.
//! See `docs/fuzzing.md`.
//!
//! Not part of the API: test tooling, compiled in so that the replay runs on stable.
#![doc(hidden)]

use std::net::Ipv6Addr;

use crate::discovery::gid::{format_gid_hex, format_ipv6};
use crate::discovery::netlink::{
    self, parse_attrs, parse_chardev, parse_device, parse_error, parse_messages, NlAttr, NlMsg,
};
use crate::discovery::sysfs;

/// A reader over fuzzer bytes: every getter returns a value (zeros once the input runs out), so
/// a target never has to deal with "not enough input".
pub struct Bytes<'a> {
    data: &'a [u8],
}

impl<'a> Bytes<'a> {
    pub fn new(data: &'a [u8]) -> Self {
        Bytes { data }
    }
    /// Bytes not consumed yet.
    pub fn rest(&self) -> &'a [u8] {
        self.data
    }
    pub fn is_empty(&self) -> bool {
        self.data.is_empty()
    }
    /// Up to `n` bytes (fewer at the end of the input).
    pub fn take(&mut self, n: usize) -> &'a [u8] {
        let n = n.min(self.data.len());
        let (a, b) = self.data.split_at(n);
        self.data = b;
        a
    }
    fn fixed<const N: usize>(&mut self) -> [u8; N] {
        let mut a = [0u8; N];
        let s = self.take(N);
        a[..s.len()].copy_from_slice(s);
        a
    }
    pub fn u8(&mut self) -> u8 {
        self.fixed::<1>()[0]
    }
    pub fn bool(&mut self) -> bool {
        self.u8() & 1 != 0
    }
    pub fn u16(&mut self) -> u16 {
        u16::from_le_bytes(self.fixed())
    }
    pub fn u32(&mut self) -> u32 {
        u32::from_le_bytes(self.fixed())
    }
    pub fn u64(&mut self) -> u64 {
        u64::from_le_bytes(self.fixed())
    }
    /// A value in `0..n` (`n > 0`).
    pub fn below(&mut self, n: u32) -> u32 {
        self.u32() % n.max(1)
    }
}

// ------------------------------------------------------------------------------------------------
// netlink
// ------------------------------------------------------------------------------------------------

fn align4(n: usize) -> usize {
    (n + 3) & !3
}

/// Serialize messages the way the kernel lays them out (each padded to 4 bytes).
fn encode_messages(msgs: &[NlMsg<'_>]) -> Vec<u8> {
    let mut b = Vec::new();
    for m in msgs {
        let len = netlink::NLMSG_HDRLEN + m.payload.len();
        b.extend_from_slice(&(len as u32).to_ne_bytes());
        b.extend_from_slice(&m.ty.to_ne_bytes());
        b.extend_from_slice(&m.flags.to_ne_bytes());
        b.extend_from_slice(&m.seq.to_ne_bytes());
        b.extend_from_slice(&m.pid.to_ne_bytes());
        b.extend_from_slice(m.payload);
        b.resize(align4(b.len()), 0);
    }
    b
}

/// Serialize attributes (type with the NESTED flag as parsed, data, padding).
fn encode_attrs(attrs: &[NlAttr<'_>]) -> Vec<u8> {
    let mut b = Vec::new();
    for a in attrs {
        let len = 4 + a.data.len();
        b.extend_from_slice(&(len as u16).to_ne_bytes());
        let ty = a.ty | if a.nested { 0x8000 } else { 0 };
        b.extend_from_slice(&ty.to_ne_bytes());
        b.extend_from_slice(a.data);
        b.resize(align4(b.len()), 0);
    }
    b
}

/// Target `netlink`: a datagram from the kernel's `NETLINK_RDMA` socket.
///
/// Checks: `parse_messages` and `parse_attrs` never panic; what they return re-encodes (header
/// lengths recomputed, padding zeroed) to bytes that parse to the same messages / attributes;
/// `parse_device` / `parse_chardev` results honour their documented requirements; `absorb`
/// never panics and never takes more than [`netlink::MAX_REPLY_MESSAGES`] payloads.
pub fn netlink(data: &[u8]) {
    let Ok(msgs) = parse_messages(data) else {
        // Also try the bytes as one message's attribute payload.
        attrs_and_records(data);
        return;
    };
    let again = encode_messages(&msgs);
    let back = parse_messages(&again).expect("re-encoded messages must parse");
    assert_eq!(back, msgs, "message round trip");
    for m in &msgs {
        assert!(m.payload.len() + netlink::NLMSG_HDRLEN <= data.len());
        attrs_and_records(m.payload);
        if m.ty == netlink::NLMSG_ERROR {
            let _ = parse_error(m.payload);
        }
    }
    for dump in [false, true] {
        let seq = msgs.first().map_or(0, |m| m.seq);
        let mut reply = netlink::Reply::default();
        let _ = netlink::absorb(&mut reply, data, seq, dump, "fuzz");
        assert!(reply.payloads.len() <= netlink::MAX_REPLY_MESSAGES);
        assert!(reply.payloads.len() <= msgs.len());
    }
}

fn attrs_and_records(payload: &[u8]) {
    let Ok(attrs) = parse_attrs(payload) else {
        return;
    };
    let again = encode_attrs(&attrs);
    let back = parse_attrs(&again).expect("re-encoded attributes must parse");
    assert_eq!(back, attrs, "attribute round trip");
    for a in &attrs {
        assert!(a.ty <= 0x3fff);
        if let Some(v) = a.uint() {
            assert!(matches!(a.data.len(), 1 | 2 | 4 | 8));
            if a.data.len() < 8 {
                assert!(v < 1u64 << (8 * a.data.len()));
            }
        }
        let s = a.string();
        assert!(!s.contains('\0'));
        if a.nested {
            // Nested attributes hold attributes: parse them too.
            let _ = parse_attrs(a.data);
        }
    }
    if let Ok(d) = parse_device(&attrs) {
        assert!(!d.name.is_empty(), "device without a name accepted");
        assert!(attrs.iter().any(|a| a.ty == netlink::ATTR_DEV_INDEX));
        let last = attrs
            .iter()
            .rev()
            .find(|a| a.ty == netlink::ATTR_DEV_INDEX)
            .unwrap();
        assert_eq!(Some(u64::from(d.index)), last.uint());
    }
    if let Ok(c) = parse_chardev(&attrs) {
        assert!(!c.name.is_empty(), "char device without a name accepted");
        if let Some((major, minor)) = c.dev {
            assert!(major <= 0xfff && minor <= 0xf_ffff);
        }
    }
}

// ------------------------------------------------------------------------------------------------
// sysfs
// ------------------------------------------------------------------------------------------------

fn rate_text(width: u8, speed: u8) -> Option<String> {
    let w = match width {
        1 => "1",
        2 => "4",
        4 => "8",
        8 => "12",
        16 => "2",
        _ => return None,
    };
    let s = match speed {
        1 => "SDR",
        2 => "DDR",
        4 => "QDR",
        8 => "FDR10",
        16 => "FDR",
        32 => "EDR",
        64 => "HDR",
        128 => "NDR",
        _ => return None,
    };
    Some(format!("100 Gb/sec ({w}X {s})"))
}

/// Target `sysfs`: the text of one sysfs attribute file, given to every sysfs parser.
///
/// Checks, for each parser that accepts the text: the value re-formatted the way the kernel
/// writes it parses back to the same value (decimal, hex, `n: NAME`, GUID, GID — where the
/// canonical GID text must also equal the input modulo case and surrounding blanks —, rate,
/// `major:minor`, PCI modalias). Independently of the text, the first 16 bytes as a GID format
/// (sysfs hex and `inet_ntop` IPv6) back to the same 16 bytes.
pub fn sysfs(data: &[u8]) {
    let text = String::from_utf8_lossy(data);
    let t: &str = &text;

    if let Ok(v) = sysfs::parse_dec(t) {
        assert_eq!(sysfs::parse_dec(&format!("{v}\n")).unwrap(), v);
    }
    if let Ok(v) = sysfs::parse_hex(t) {
        assert_eq!(sysfs::parse_hex(&format!("0x{v:x}\n")).unwrap(), v);
        assert_eq!(sysfs::parse_hex(&format!("{v:016X}")).unwrap(), v);
    }
    if let Ok(v) = sysfs::parse_numbered(t) {
        assert_eq!(sysfs::parse_numbered(&format!("{v}: ACTIVE\n")).unwrap(), v);
        let n = sysfs::parse_node_type(t).expect("node_type agrees with parse_numbered");
        assert_eq!(n.raw(), v);
    } else {
        assert!(sysfs::parse_node_type(t).is_err());
    }
    if let Ok(g) = sysfs::parse_guid(t) {
        let s = format!(
            "{:04x}:{:04x}:{:04x}:{:04x}\n",
            g >> 48,
            (g >> 32) & 0xffff,
            (g >> 16) & 0xffff,
            g & 0xffff
        );
        assert_eq!(sysfs::parse_guid(&s).unwrap(), g);
    }
    match sysfs::parse_gid(t) {
        Ok(g) => {
            let canon = format_gid_hex(&g);
            assert_eq!(
                canon,
                t.trim().to_ascii_lowercase(),
                "GID text is canonical"
            );
            assert_eq!(sysfs::parse_gid(&canon).unwrap(), g);
            assert_eq!(sysfs::parse_gid_bytes(canon.as_bytes()), Some(g));
        }
        Err(_) => {
            // What the byte parser accepts, the text parser (which trims more) accepts too.
            assert_eq!(
                sysfs::parse_gid_bytes(data),
                None,
                "parse_gid_bytes accepts what parse_gid refuses"
            );
        }
    }
    if let Some(g) = sysfs::parse_gid_bytes(data) {
        assert_eq!(sysfs::parse_gid(&format_gid_hex(&g)).unwrap(), g);
    }
    let _ = sysfs::parse_link_layer(t);
    for ll in [0u8, 1, 2] {
        let _ = sysfs::parse_gid_type(t, ll);
    }
    if let Ok((w, s)) = sysfs::parse_rate(t) {
        let again = rate_text(w, s).expect("rate codes are among the known ones");
        assert_eq!(sysfs::parse_rate(&again).unwrap(), (w, s));
    }
    if let Ok((a, b)) = sysfs::parse_dev_numbers(t) {
        assert_eq!(
            sysfs::parse_dev_numbers(&format!("{a}:{b}\n")).unwrap(),
            (a, b)
        );
    }
    if let Ok((v, d)) = sysfs::parse_pci_modalias(t) {
        let s = format!("pci:v{v:08X}d{d:08X}sv000015B3sd00000008bc02sc00i00\n");
        assert_eq!(sysfs::parse_pci_modalias(&s).unwrap(), (v, d));
    }
    let id = sysfs::infer_driver_id(t, Some(t));
    assert!([0, 1, 2, 6, 14, 17, 18].contains(&id), "driver id {id}");

    // GID formatting round trips on any 16 bytes.
    if data.len() >= 16 {
        let mut g = [0u8; 16];
        g.copy_from_slice(&data[..16]);
        assert_eq!(sysfs::parse_gid(&format_gid_hex(&g)).unwrap(), g);
        let ip = format_ipv6(&g);
        let parsed: Ipv6Addr = ip
            .parse()
            .unwrap_or_else(|e| panic!("format_ipv6 gave {ip:?}: {e}"));
        assert_eq!(parsed.octets(), g, "format_ipv6 {ip:?}");
    }
}

/// Target `cm_event`: bytes the kernel's rdma_cm hands back — a GET_EVENT answer, a QUERY
/// answer (ADDR/GID, PATH, ROUTE) or an INIT_QP_ATTR answer; every decoder sees the same input.
///
/// Checks: no decoder panics; an event decodes exactly when the kernel's minimum length is
/// there, and a short answer decodes as the same answer zero-padded (old kernels omit the
/// trailing fields, which then read as zero); private data never exceeds the ABI array and
/// follows its length byte; the UD view of the parameters is bounded the same way; the QP
/// attribute mask from INIT_QP_ATTR keeps only the bits a legacy MODIFY_QP accepts.
pub fn cm_event(data: &[u8]) {
    use crate::cm::{sys as cmsys, wire};
    const EVENT_MIN: usize = 20 + 304;
    let full = core::mem::size_of::<cmsys::EventResp>();
    match wire::decode_event(data) {
        Ok(ev) => {
            assert!(data.len() >= EVENT_MIN, "decoded an event from {} bytes", data.len());
            let mut padded = data.to_vec();
            if padded.len() < full {
                padded.resize(full, 0);
                assert_eq!(wire::decode_event(&padded).ok().as_ref(), Some(&ev), "short event = zero-padded event");
            }
            assert!(ev.private_data().len() <= cmsys::RDMA_MAX_PRIVATE_DATA);
            // The length byte of the connection parameters sits right after the 256-byte array.
            let len_byte = data[20 + 8 + cmsys::RDMA_MAX_PRIVATE_DATA] as usize;
            assert_eq!(ev.private_data().len(), len_byte.min(cmsys::RDMA_MAX_PRIVATE_DATA));
            assert_eq!(ev.private_data(), &data[20 + 8..20 + 8 + ev.private_data().len()]);
            let ud = ev.ud();
            assert!(ud.private_data.len() <= cmsys::RDMA_MAX_PRIVATE_DATA);
            let _ = wire::reject_reason_name(ev.status);
        }
        Err(e) => {
            assert!(data.len() < EVENT_MIN, "event of {} bytes refused: {e}", data.len());
            assert!(!e.to_string().contains('\n'));
        }
    }
    let _ = wire::decode_query_addr(data);
    let _ = wire::decode_query_path(data);
    let _ = wire::decode_query_route(data);
    let _ = wire::decode_sockaddr(data);
    if let Ok((_, mask)) = wire::decode_qp_attr(data) {
        assert_eq!(mask.bits() & !((1u32 << 21) - 1), 0, "INIT_QP_ATTR mask beyond bit 20: {:#x}", mask.bits());
    }
}

/// Reproducible pseudo-random bytes for the generated-input tests beside the corpora
/// (xorshift64: no dependency, the same sequence on every run and host).
#[derive(Clone, Debug)]
pub struct XorShift(u64);

impl XorShift {
    /// A generator from a non-zero seed (zero would stay zero).
    pub fn new(seed: u64) -> XorShift {
        XorShift(seed.max(1))
    }

    pub fn next_u64(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }

    /// `len` bytes, each the low byte of the next value.
    pub fn bytes(&mut self, len: usize) -> Vec<u8> {
        (0..len).map(|_| self.next_u64() as u8).collect()
    }
}

/// The directory of a target's committed seed corpus (`fuzz/corpus/<target>` in the workspace).
pub fn corpus_dir(target: &str) -> std::path::PathBuf {
    std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../fuzz/corpus").join(target)
}

/// Replay a target's corpus through its body on the stable toolchain (the crates' `fuzz_replay`
/// tests call this): run `f` on every file and panic naming every file that failed; a missing
/// or empty corpus is a failure too.
pub fn replay(target: &str, f: fn(&[u8])) {
    use std::path::PathBuf;
    let dir = corpus_dir(target);
    let rd = std::fs::read_dir(&dir).unwrap_or_else(|e| panic!("corpus {}: {e}", dir.display()));
    let mut files: Vec<PathBuf> = rd.filter_map(|e| e.ok().map(|e| e.path())).filter(|p| p.is_file()).collect();
    files.sort();
    assert!(!files.is_empty(), "corpus {} is empty", dir.display());
    let mut failed = Vec::new();
    for p in &files {
        let data = std::fs::read(p).unwrap_or_else(|e| panic!("read {}: {e}", p.display()));
        if std::panic::catch_unwind(|| f(&data)).is_err() {
            failed.push(p.display().to_string());
        }
    }
    assert!(failed.is_empty(), "{target}: {} of {} corpus files fail:\n{}", failed.len(), files.len(), failed.join("\n"));
    eprintln!("{target}: {} corpus files replayed", files.len());
}
