//! qperf 0.4.x control-connection messages: REQ (200 bytes), NODE (40), STAT (256), CONF (256),
//! the data-port word, the sync strings and the out-of-band error text.
//!
//! Every integer is little-endian at its declared width and fields are packed without padding;
//! NODE and STAT are sent with the size of the C struct on LP64, so they carry 4 trailing bytes
//! that stock qperf leaves uninitialised: we send zeros there and ignore whatever arrives.
//! Decoders take untrusted bytes: the length is checked first, every field is read through a
//! bounded cursor, and nothing here can panic. The layouts are documented in docs/qperf.md.

use std::fmt;

pub const REQ_LEN: usize = 200;
/// The server reads the three version fields first, then the rest.
pub const REQ_VERSION_LEN: usize = 6;
pub const NODE_LEN: usize = 40;
pub const NODE_ENCODED_LEN: usize = 36;
pub const STAT_LEN: usize = 256;
pub const STAT_ENCODED_LEN: usize = 252;
pub const CONF_LEN: usize = 256;
pub const STR_LEN: usize = 64;
pub const PORT_LEN: usize = 4;

pub const SYNC_BEFORE: &[u8] = b"synchronization before test";
pub const SYNC_AFTER: &[u8] = b"synchronization after test";

/// The version we claim: a stock server accepts only major 0, minor 4.
pub const VER_MAJ: u16 = 0;
pub const VER_MIN: u16 = 4;
pub const VER_INC: u16 = 11;
pub const VERSION_TEXT: &str = "0.4.11";

/// The urgent byte that announces an error text on the control stream.
pub const OOB_ERROR: u8 = b'?';
/// Longest error text a stock receiver reads (its buffer is 256 bytes, prefix included).
pub const MAX_ERROR_TEXT: usize = 255;

/// Stock qperf's test table, in its compiled order: the request carries the index, not the
/// name. Debian's build has RDMA but not XRC, so it ends at index 32.
pub const TESTS: [&str; 33] = [
    "conf",
    "quit",
    "rds_bw",
    "rds_lat",
    "sctp_bw",
    "sctp_lat",
    "sdp_bw",
    "sdp_lat",
    "tcp_bw",
    "tcp_lat",
    "udp_bw",
    "udp_lat",
    "rc_bi_bw",
    "rc_bw",
    "rc_compare_swap_mr",
    "rc_fetch_add_mr",
    "rc_lat",
    "rc_rdma_read_bw",
    "rc_rdma_read_lat",
    "rc_rdma_write_bw",
    "rc_rdma_write_lat",
    "rc_rdma_write_poll_lat",
    "uc_bi_bw",
    "uc_bw",
    "uc_lat",
    "uc_rdma_write_bw",
    "uc_rdma_write_lat",
    "uc_rdma_write_poll_lat",
    "ud_bi_bw",
    "ud_bw",
    "ud_lat",
    "ver_rc_compare_swap",
    "ver_rc_fetch_add",
];

pub fn test_index(name: &str) -> Option<u16> {
    TESTS.iter().position(|t| *t == name).and_then(|i| u16::try_from(i).ok())
}

pub fn test_name(index: u16) -> Option<&'static str> {
    TESTS.get(usize::from(index)).copied()
}

/// Why a block of peer bytes was not accepted.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum WireError {
    Length { what: &'static str, want: usize, got: usize },
    BadPort(u32),
}

impl fmt::Display for WireError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            WireError::Length { what, want, got } => {
                write!(f, "{what}: expected {want} bytes, got {got}")
            }
            WireError::BadPort(p) => write!(f, "peer sent data port {p}, not in 1..65535"),
        }
    }
}

impl std::error::Error for WireError {}

fn check_len(what: &'static str, data: &[u8], want: usize) -> Result<(), WireError> {
    if data.len() == want {
        Ok(())
    } else {
        Err(WireError::Length { what, want, got: data.len() })
    }
}

/// Reads little-endian fields from a slice whose length was checked; a read past the end
/// yields zeros rather than a panic (it cannot happen after the check, but the decoder must
/// not rely on that to be safe).
struct Cursor<'a> {
    buf: &'a [u8],
    pos: usize,
}

impl<'a> Cursor<'a> {
    fn new(buf: &'a [u8]) -> Self {
        Cursor { buf, pos: 0 }
    }
    fn bytes<const N: usize>(&mut self) -> [u8; N] {
        let mut out = [0u8; N];
        if let Some(s) = self.pos.checked_add(N).and_then(|end| self.buf.get(self.pos..end)) {
            out.copy_from_slice(s);
        }
        self.pos = self.pos.saturating_add(N);
        out
    }
    fn u16(&mut self) -> u16 {
        u16::from_le_bytes(self.bytes())
    }
    fn u32(&mut self) -> u32 {
        u32::from_le_bytes(self.bytes())
    }
    fn u64(&mut self) -> u64 {
        u64::from_le_bytes(self.bytes())
    }
}

/// A fixed 64-byte string field, kept byte for byte (stock peers leave garbage after the NUL).
#[derive(Clone, Copy, PartialEq, Eq)]
pub struct FixedStr(pub [u8; STR_LEN]);

impl Default for FixedStr {
    fn default() -> Self {
        FixedStr([0; STR_LEN])
    }
}

impl fmt::Debug for FixedStr {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{:?}", self.text())
    }
}

impl FixedStr {
    /// Up to 63 bytes of `s` (a longer string is cut at a character boundary), NUL-padded.
    pub fn new(s: &str) -> Self {
        let mut end = s.len().min(STR_LEN - 1);
        while !s.is_char_boundary(end) {
            end -= 1;
        }
        let mut b = [0u8; STR_LEN];
        b[..end].copy_from_slice(&s.as_bytes()[..end]);
        FixedStr(b)
    }
    /// The bytes before the first NUL (all 64 if there is none).
    pub fn raw(&self) -> &[u8] {
        let end = self.0.iter().position(|&c| c == 0).unwrap_or(STR_LEN);
        &self.0[..end]
    }
    /// Printable text: the bytes before the NUL, control characters and invalid UTF-8
    /// replaced, so a peer cannot write escape sequences to our terminal.
    pub fn text(&self) -> String {
        printable(self.raw())
    }
}

/// Peer bytes as text safe to print: lossy UTF-8 with control characters shown as '?'.
pub fn printable(b: &[u8]) -> String {
    String::from_utf8_lossy(b).chars().map(|c| if c.is_control() { '?' } else { c }).collect()
}

/// REQ: what the client asks of the server. The server uses these values, not its own options.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Req {
    pub ver_maj: u16,
    pub ver_min: u16,
    pub ver_inc: u16,
    pub req_index: u16,
    pub access_recv: u32,
    pub affinity: u32,
    pub alt_port: u32,
    pub flip: u32,
    pub msg_size: u32,
    pub mtu_size: u32,
    pub no_msgs: u32,
    pub poll_mode: u32,
    pub port: u32,
    pub rd_atomic: u32,
    pub sl: u32,
    pub sock_buf_size: u32,
    pub src_path_bits: u32,
    pub time: u32,
    pub timeout: u32,
    pub use_cm: u32,
    pub id: FixedStr,
    pub static_rate: FixedStr,
}

impl Req {
    pub fn encode(&self) -> [u8; REQ_LEN] {
        let mut out = [0u8; REQ_LEN];
        let mut w = Writer::new(&mut out);
        for v in [self.ver_maj, self.ver_min, self.ver_inc, self.req_index] {
            w.put(&v.to_le_bytes());
        }
        for v in self.u32_fields() {
            w.put(&v.to_le_bytes());
        }
        w.put(&self.id.0);
        w.put(&self.static_rate.0);
        out
    }

    fn u32_fields(&self) -> [u32; 16] {
        [
            self.access_recv,
            self.affinity,
            self.alt_port,
            self.flip,
            self.msg_size,
            self.mtu_size,
            self.no_msgs,
            self.poll_mode,
            self.port,
            self.rd_atomic,
            self.sl,
            self.sock_buf_size,
            self.src_path_bits,
            self.time,
            self.timeout,
            self.use_cm,
        ]
    }

    /// The first 6 bytes: (major, minor, incremental).
    pub fn decode_version(data: &[u8]) -> Result<(u16, u16, u16), WireError> {
        check_len("request version", data, REQ_VERSION_LEN)?;
        let mut c = Cursor::new(data);
        Ok((c.u16(), c.u16(), c.u16()))
    }

    pub fn decode(data: &[u8]) -> Result<Req, WireError> {
        check_len("request", data, REQ_LEN)?;
        let mut c = Cursor::new(data);
        Ok(Req {
            ver_maj: c.u16(),
            ver_min: c.u16(),
            ver_inc: c.u16(),
            req_index: c.u16(),
            access_recv: c.u32(),
            affinity: c.u32(),
            alt_port: c.u32(),
            flip: c.u32(),
            msg_size: c.u32(),
            mtu_size: c.u32(),
            no_msgs: c.u32(),
            poll_mode: c.u32(),
            port: c.u32(),
            rd_atomic: c.u32(),
            sl: c.u32(),
            sock_buf_size: c.u32(),
            src_path_bits: c.u32(),
            time: c.u32(),
            timeout: c.u32(),
            use_cm: c.u32(),
            id: FixedStr(c.bytes()),
            static_rate: FixedStr(c.bytes()),
        })
    }

    /// Stock qperf's version gate: major and minor must match, the incremental is ignored.
    /// On a mismatch, the text the server sends back (which side should be upgraded).
    pub fn version_error(maj: u16, min: u16, inc: u16) -> Option<String> {
        if maj == VER_MAJ && min == VER_MIN {
            return None;
        }
        let ours = (VER_MAJ, VER_MIN, VER_INC);
        let theirs = (maj, min, inc);
        let (side, lo, hi) = if (ours.0, ours.1) > (theirs.0, theirs.1) {
            ("client", theirs, ours)
        } else {
            ("server", ours, theirs)
        };
        Some(format!(
            "upgrade qperf on {side} from {}.{}.{} to {}.{}.{}",
            lo.0, lo.1, lo.2, hi.0, hi.1, hi.2
        ))
    }
}

struct Writer<'a> {
    buf: &'a mut [u8],
    pos: usize,
}

impl<'a> Writer<'a> {
    fn new(buf: &'a mut [u8]) -> Self {
        Writer { buf, pos: 0 }
    }
    fn put(&mut self, b: &[u8]) {
        let end = self.pos.saturating_add(b.len());
        if let Some(dst) = self.buf.get_mut(self.pos..end) {
            dst.copy_from_slice(b);
        }
        self.pos = end;
    }
}

/// NODE: one side's RDMA endpoint (buffer, keys, QP). Exchanged both ways in RDMA tests.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Node {
    pub vaddr: u64,
    pub lid: u32,
    pub qpn: u32,
    pub psn: u32,
    pub srqn: u32,
    pub rkey: u32,
    pub alt_lid: u32,
    pub rd_atomic: u32,
}

impl Node {
    pub fn encode(&self) -> [u8; NODE_LEN] {
        let mut out = [0u8; NODE_LEN];
        let mut w = Writer::new(&mut out);
        w.put(&self.vaddr.to_le_bytes());
        for v in [self.lid, self.qpn, self.psn, self.srqn, self.rkey, self.alt_lid, self.rd_atomic] {
            w.put(&v.to_le_bytes());
        }
        out
    }

    /// The 40 bytes as sent; the 4 padding bytes at the end are ignored.
    pub fn decode(data: &[u8]) -> Result<Node, WireError> {
        check_len("node information", data, NODE_LEN)?;
        let mut c = Cursor::new(data);
        Ok(Node {
            vaddr: c.u64(),
            lid: c.u32(),
            qpn: c.u32(),
            psn: c.u32(),
            srqn: c.u32(),
            rkey: c.u32(),
            alt_lid: c.u32(),
            rd_atomic: c.u32(),
        })
    }
}

/// Bytes, messages and errors one side counted in one direction.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Ustat {
    pub bytes: u64,
    pub msgs: u64,
    pub errs: u64,
}

impl Ustat {
    pub fn add(&mut self, o: &Ustat) {
        self.bytes = self.bytes.wrapping_add(o.bytes);
        self.msgs = self.msgs.wrapping_add(o.msgs);
        self.errs = self.errs.wrapping_add(o.errs);
    }
}

/// Index of each clock in `time_s`/`time_e`: real time, then the `/proc/stat` "cpu" columns.
pub const T_REAL: usize = 0;
pub const T_USER: usize = 1;
pub const T_NICE: usize = 2;
pub const T_KERNEL: usize = 3;
pub const T_IDLE: usize = 4;
pub const T_IOWAIT: usize = 5;
pub const T_IRQ: usize = 6;
pub const T_SOFTIRQ: usize = 7;
pub const T_STEAL: usize = 8;
pub const T_N: usize = 9;

/// STAT: one side's counters and clocks. Only the server sends it.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Stat {
    pub no_cpus: u32,
    pub no_ticks: u32,
    pub max_cqes: u32,
    pub time_s: [u64; T_N],
    pub time_e: [u64; T_N],
    pub s: Ustat,
    pub r: Ustat,
    pub rem_s: Ustat,
    pub rem_r: Ustat,
}

impl Stat {
    pub fn encode(&self) -> [u8; STAT_LEN] {
        let mut out = [0u8; STAT_LEN];
        let mut w = Writer::new(&mut out);
        for v in [self.no_cpus, self.no_ticks, self.max_cqes] {
            w.put(&v.to_le_bytes());
        }
        for v in self.time_s.iter().chain(self.time_e.iter()) {
            w.put(&v.to_le_bytes());
        }
        for u in [self.s, self.r, self.rem_s, self.rem_r] {
            for v in [u.bytes, u.msgs, u.errs] {
                w.put(&v.to_le_bytes());
            }
        }
        out
    }

    pub fn decode(data: &[u8]) -> Result<Stat, WireError> {
        check_len("results", data, STAT_LEN)?;
        let mut c = Cursor::new(data);
        let mut st = Stat { no_cpus: c.u32(), no_ticks: c.u32(), max_cqes: c.u32(), ..Stat::default() };
        for t in st.time_s.iter_mut() {
            *t = c.u64();
        }
        for t in st.time_e.iter_mut() {
            *t = c.u64();
        }
        for u in [&mut st.s, &mut st.r, &mut st.rem_s, &mut st.rem_r] {
            *u = Ustat { bytes: c.u64(), msgs: c.u64(), errs: c.u64() };
        }
        Ok(st)
    }
}

/// CONF: the server's description of itself, four 64-byte strings.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Conf {
    pub node: FixedStr,
    pub cpu: FixedStr,
    pub os: FixedStr,
    pub qperf: FixedStr,
}

impl Conf {
    pub fn encode(&self) -> [u8; CONF_LEN] {
        let mut out = [0u8; CONF_LEN];
        let mut w = Writer::new(&mut out);
        for s in [&self.node, &self.cpu, &self.os, &self.qperf] {
            w.put(&s.0);
        }
        out
    }

    pub fn decode(data: &[u8]) -> Result<Conf, WireError> {
        check_len("configuration", data, CONF_LEN)?;
        let mut c = Cursor::new(data);
        Ok(Conf { node: FixedStr(c.bytes()), cpu: FixedStr(c.bytes()), os: FixedStr(c.bytes()), qperf: FixedStr(c.bytes()) })
    }
}

/// The data port the server announces for socket tests (u32 LE).
pub fn encode_port(port: u16) -> [u8; PORT_LEN] {
    u32::from(port).to_le_bytes()
}

pub fn decode_port(data: &[u8]) -> Result<u16, WireError> {
    check_len("port", data, PORT_LEN)?;
    let v = Cursor::new(data).u32();
    match u16::try_from(v) {
        Ok(p) if p != 0 => Ok(p),
        _ => Err(WireError::BadPort(v)),
    }
}

/// The text that follows an urgent `?`: at most 255 bytes, cut at the first NUL or newline,
/// made printable.
pub fn decode_error_text(data: &[u8]) -> String {
    let data = &data[..data.len().min(MAX_ERROR_TEXT)];
    let end = data.iter().position(|&c| c == 0 || c == b'\n').unwrap_or(data.len());
    printable(&data[..end])
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hex(b: &[u8]) -> String {
        b.iter().map(|x| format!("{x:02x}")).collect()
    }

    /// The request a stock 0.4.11 client sends for `tcp_lat` with its defaults (index 9,
    /// msg_size 1, time 2, timeout 5), field by field at the fact sheet's offsets.
    #[test]
    fn req_golden_tcp_lat_defaults() {
        let req = Req {
            ver_maj: 0,
            ver_min: 4,
            ver_inc: 11,
            req_index: 9,
            msg_size: 1,
            time: 2,
            timeout: 5,
            ..Req::default()
        };
        let b = req.encode();
        assert_eq!(b.len(), 200);
        assert_eq!(hex(&b[..8]), "000004000b000900");
        assert_eq!(hex(&b[24..28]), "01000000"); // msg_size at 24
        assert_eq!(hex(&b[60..64]), "02000000"); // time at 60
        assert_eq!(hex(&b[64..68]), "05000000"); // timeout at 64
        assert!(b[8..24].iter().chain(&b[28..60]).chain(&b[68..]).all(|&c| c == 0));
        assert_eq!(Req::decode(&b).unwrap(), req);
        assert_eq!(Req::decode_version(&b[..6]).unwrap(), (0, 4, 11));
    }

    #[test]
    fn req_every_field_at_its_offset() {
        let req = Req {
            ver_maj: 0x0102,
            ver_min: 0x0304,
            ver_inc: 0x0506,
            req_index: 0x0708,
            access_recv: 0x11,
            affinity: 0x12,
            alt_port: 0x13,
            flip: 0x14,
            msg_size: 0x15,
            mtu_size: 0x16,
            no_msgs: 0x17,
            poll_mode: 0x18,
            port: 0x19,
            rd_atomic: 0x1a,
            sl: 0x1b,
            sock_buf_size: 0x1c,
            src_path_bits: 0x1d,
            time: 0x1e,
            timeout: 0x1f,
            use_cm: 0x20,
            id: FixedStr::new("rxe0:1"),
            static_rate: FixedStr::new("max"),
        };
        let b = req.encode();
        assert_eq!(hex(&b[..8]), "0201040306050807");
        for (i, off) in (8..72).step_by(4).enumerate() {
            assert_eq!(b[off], 0x11 + i as u8, "field at {off}");
            assert_eq!(&b[off + 1..off + 4], &[0, 0, 0]);
        }
        assert_eq!(&b[72..78], b"rxe0:1");
        assert!(b[78..136].iter().all(|&c| c == 0));
        assert_eq!(&b[136..139], b"max");
        assert_eq!(Req::decode(&b).unwrap(), req);
    }

    #[test]
    fn req_keeps_bytes_after_the_nul() {
        let mut b = [0u8; REQ_LEN];
        b[72..76].copy_from_slice(b"ab\0z");
        let r = Req::decode(&b).unwrap();
        assert_eq!(r.id.text(), "ab");
        assert_eq!(r.encode(), b);
    }

    #[test]
    fn wrong_lengths_are_errors() {
        assert!(Req::decode(&[0; 199]).is_err());
        assert!(Req::decode(&[0; 201]).is_err());
        assert!(Req::decode_version(&[0; 5]).is_err());
        assert!(Node::decode(&[0; 36]).is_err());
        assert!(Stat::decode(&[0; 252]).is_err());
        assert!(Conf::decode(&[0; 255]).is_err());
        assert!(decode_port(&[0; 3]).is_err());
    }

    #[test]
    fn version_gate_texts() {
        assert_eq!(Req::version_error(0, 4, 0), None);
        assert_eq!(Req::version_error(0, 4, 99), None);
        assert_eq!(Req::version_error(0, 5, 0).unwrap(), "upgrade qperf on server from 0.4.11 to 0.5.0");
        assert_eq!(Req::version_error(0, 3, 9).unwrap(), "upgrade qperf on client from 0.3.9 to 0.4.11");
    }

    /// STAT as the fact sheet decoded it from Debian's server after `tcp_lat -t 1`: 2 CPUs,
    /// 100 ticks/s, 100 ticks of real time, 192550 one-byte messages each way.
    #[test]
    fn stat_golden_layout() {
        let mut st = Stat { no_cpus: 2, no_ticks: 100, max_cqes: 0, ..Stat::default() };
        st.time_s[T_REAL] = 1000;
        st.time_e[T_REAL] = 1100;
        st.time_s[T_STEAL] = 7;
        st.time_e[T_USER] = 0x0102030405060708;
        st.s = Ustat { bytes: 192550, msgs: 192550, errs: 0 };
        st.r = Ustat { bytes: 192550, msgs: 192550, errs: 0 };
        st.rem_r.errs = 3;
        let b = st.encode();
        assert_eq!(b.len(), 256);
        assert_eq!(hex(&b[..12]), "020000006400000000000000");
        assert_eq!(hex(&b[12..20]), "e803000000000000"); // time_s[real] at 12
        assert_eq!(hex(&b[76..84]), "0700000000000000"); // time_s[steal] at 76
        assert_eq!(hex(&b[84..92]), "4c04000000000000"); // time_e[real] at 84
        assert_eq!(hex(&b[92..100]), "0807060504030201"); // time_e[user] at 92
        assert_eq!(hex(&b[156..164]), "26f0020000000000"); // s.bytes at 156
        assert_eq!(hex(&b[180..188]), "26f0020000000000"); // r.bytes at 180
        assert_eq!(hex(&b[244..252]), "0300000000000000"); // rem_r.errs at 244
        assert_eq!(&b[252..], &[0, 0, 0, 0]);
        assert_eq!(Stat::decode(&b).unwrap(), st);
        // Stock peers send garbage in the padding: ignored.
        let mut g = b;
        g[252..].copy_from_slice(&[0xde, 0xad, 0xbe, 0xef]);
        assert_eq!(Stat::decode(&g).unwrap(), st);
    }

    #[test]
    fn node_golden_layout() {
        let n = Node { vaddr: 0x7f00_1122_3344_5566, lid: 1, qpn: 0x11, psn: 0xabcdef, srqn: 0, rkey: 0x1234, alt_lid: 0, rd_atomic: 16 };
        let b = n.encode();
        assert_eq!(hex(&b), concat!("665544332211007f", "01000000", "11000000", "efcdab00", "00000000", "34120000", "00000000", "10000000", "00000000"));
        let mut g = b;
        g[36..].copy_from_slice(&[1, 2, 3, 4]);
        assert_eq!(Node::decode(&g).unwrap(), n);
    }

    #[test]
    fn conf_golden_layout() {
        let c = Conf {
            node: FixedStr::new("vm"),
            cpu: FixedStr::new("2 Cores: Intel Xeon Processor 2.6GHz"),
            os: FixedStr::new("Linux 6.1.0-57-amd64"),
            qperf: FixedStr::new("0.4.11"),
        };
        let b = c.encode();
        assert_eq!(&b[0..3], b"vm\0");
        assert_eq!(&b[64..72], b"2 Cores:");
        assert_eq!(&b[128..133], b"Linux");
        assert_eq!(&b[192..199], b"0.4.11\0");
        let d = Conf::decode(&b).unwrap();
        assert_eq!(d, c);
        assert_eq!(d.cpu.text(), "2 Cores: Intel Xeon Processor 2.6GHz");
    }

    #[test]
    fn conf_without_nul_and_with_escapes() {
        let mut b = [b'x'; CONF_LEN];
        b[0] = 0x1b;
        let d = Conf::decode(&b).unwrap();
        assert_eq!(d.node.text().len(), 64);
        assert!(d.node.text().starts_with('?'));
    }

    #[test]
    fn port_word() {
        assert_eq!(encode_port(19765), [0x35, 0x4d, 0, 0]);
        assert_eq!(decode_port(&[0x35, 0x4d, 0, 0]).unwrap(), 19765);
        assert_eq!(decode_port(&[0, 0, 0, 0]), Err(WireError::BadPort(0)));
        assert_eq!(decode_port(&[0, 0, 1, 0]), Err(WireError::BadPort(65536)));
    }

    #[test]
    fn sync_strings_and_table() {
        assert_eq!(SYNC_BEFORE.len(), 27);
        assert_eq!(SYNC_AFTER.len(), 26);
        for (name, idx) in [("conf", 0), ("quit", 1), ("tcp_bw", 8), ("tcp_lat", 9), ("rc_bw", 13), ("ver_rc_fetch_add", 32)] {
            assert_eq!(test_index(name), Some(idx));
            assert_eq!(test_name(idx), Some(name));
        }
        assert_eq!(test_name(33), None);
        assert_eq!(test_index("xrc_bw"), None);
    }

    #[test]
    fn error_text() {
        assert_eq!(decode_error_text(b"bad request index: 200"), "bad request index: 200");
        assert_eq!(decode_error_text(b"a\x1b[2Jb\nrest"), "a?[2Jb");
        assert_eq!(decode_error_text(&[b'y'; 400]).len(), 255);
    }
}
