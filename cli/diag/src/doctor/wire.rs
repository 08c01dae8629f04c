//! The doctor's peer message: one line of text, `rperftest-doctor 1` and `key=value` words,
//! each side's view of its port and the QP it made for the test. Bytes from the network:
//! [`Hello::parse`] takes any bytes and answers a value or one line of error, never a panic.

use std::fmt::Write as _;

pub const MAGIC: &str = "rperftest-doctor";
pub const VERSION: u32 = 1;
/// The longest line either side sends or reads.
pub const MAX_LINE: usize = 1024;

#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Hello {
    /// `serve` or `check`.
    pub role: String,
    pub host: String,
    pub dev: String,
    pub port: u32,
    /// `Ethernet` or `InfiniBand`.
    pub link_layer: String,
    pub lid: u32,
    pub gid: [u8; 16],
    pub gid_index: u32,
    /// `RoCE v2`, `RoCE v1`, `IB`.
    pub gid_type: String,
    /// Active MTU in bytes (256..4096).
    pub mtu: u32,
    /// The netdev's MTU (0 for none).
    pub netdev_mtu: u32,
    pub qpn: u32,
    pub psn: u32,
    /// The buffer the peer may WRITE and READ.
    pub addr: u64,
    pub rkey: u32,
    pub len: u32,
    /// Why this side could not connect its QP to the other's (empty: it did). The server
    /// still answers with its view, so the client can name the cause.
    pub err: String,
}

fn hex16(g: &[u8; 16]) -> String {
    g.iter().fold(String::new(), |mut s, b| {
        let _ = write!(s, "{b:02x}");
        s
    })
}

/// Text values travel with spaces as `_` (a GID type is `RoCE_v2`).
fn enc(s: &str) -> String {
    s.chars().map(|c| if c.is_ascii_graphic() && c != '=' { c } else { '_' }).collect()
}

impl Hello {
    /// The line, newline included.
    pub fn encode(&self) -> String {
        let mut s = self.encode_fields();
        if !self.err.is_empty() {
            s.push_str(" err=");
            s.push_str(&enc(&self.err));
        }
        s.push('\n');
        s
    }

    fn encode_fields(&self) -> String {
        format!(
            "{MAGIC} {VERSION} role={} host={} dev={} port={} ll={} lid={} gid={} gidx={} gtype={} mtu={} ndmtu={} qpn={} psn={} addr={:x} rkey={:x} len={}",
            enc(&self.role),
            enc(&self.host),
            enc(&self.dev),
            self.port,
            enc(&self.link_layer),
            self.lid,
            hex16(&self.gid),
            self.gid_index,
            enc(&self.gid_type),
            self.mtu,
            self.netdev_mtu,
            self.qpn,
            self.psn,
            self.addr,
            self.rkey,
            self.len
        )
    }

    /// Parse one line (the newline optional). Errors are one line, quoting at most 40
    /// characters of what came, with control characters escaped.
    pub fn parse(b: &[u8]) -> Result<Hello, String> {
        let shown = || {
            let t: String = String::from_utf8_lossy(&b[..b.len().min(40)]).chars().flat_map(char::escape_default).take(80).collect();
            format!("\"{t}\"")
        };
        if b.len() > MAX_LINE {
            return Err(format!("the peer's message is {} bytes, more than {MAX_LINE}", b.len()));
        }
        let text = std::str::from_utf8(b).map_err(|_| format!("the peer's message is not text: {}", shown()))?;
        let text = text.strip_suffix('\n').unwrap_or(text);
        let mut words = text.split(' ');
        if words.next() != Some(MAGIC) {
            return Err(format!("the peer did not answer as rperftest doctor --serve (got {})", shown()));
        }
        match words.next().map(str::parse::<u32>) {
            Some(Ok(VERSION)) => {}
            Some(Ok(v)) => return Err(format!("the peer speaks doctor protocol {v}, this side {VERSION}: run the same rperftest version on both")),
            _ => return Err(format!("the peer's message has no protocol version: {}", shown())),
        }
        let mut h = Hello::default();
        let mut seen: u32 = 0;
        for w in words {
            let (k, v) = w.split_once('=').ok_or_else(|| format!("the peer's message has a word without '=': {}", shown()))?;
            let num = |radix: u32| u64::from_str_radix(v, radix).map_err(|_| format!("the peer's {k}= is not a number: {}", shown()));
            let n32 = |radix: u32| num(radix).and_then(|x| u32::try_from(x).map_err(|_| format!("the peer's {k}= is out of range")));
            let (bit, ok) = match k {
                "role" => (0, { h.role = v.into(); true }),
                "host" => (1, { h.host = v.into(); true }),
                "dev" => (2, { h.dev = v.into(); true }),
                "port" => (3, { h.port = n32(10)?; true }),
                "ll" => (4, { h.link_layer = v.into(); true }),
                "lid" => (5, { h.lid = n32(10)?; true }),
                "gid" => (6, {
                    if v.len() != 32 || !v.bytes().all(|c| c.is_ascii_hexdigit()) {
                        return Err(format!("the peer's gid= is not 32 hex digits: {}", shown()));
                    }
                    for (i, g) in h.gid.iter_mut().enumerate() {
                        *g = u8::from_str_radix(&v[2 * i..2 * i + 2], 16).unwrap_or(0);
                    }
                    true
                }),
                "gidx" => (7, { h.gid_index = n32(10)?; true }),
                "gtype" => (8, { h.gid_type = v.replace('_', " "); true }),
                "mtu" => (9, { h.mtu = n32(10)?; true }),
                "ndmtu" => (10, { h.netdev_mtu = n32(10)?; true }),
                "qpn" => (11, { h.qpn = n32(10)?; true }),
                "psn" => (12, { h.psn = n32(10)?; true }),
                "addr" => (13, { h.addr = num(16)?; true }),
                "rkey" => (14, { h.rkey = n32(16)?; true }),
                "len" => (15, { h.len = n32(10)?; true }),
                "err" => (16, { h.err = v.replace('_', " ").chars().take(300).collect(); true }),
                // Later versions may add words.
                _ => (0, false),
            };
            if ok {
                if seen & (1 << bit) != 0 {
                    return Err(format!("the peer's message has {k}= twice"));
                }
                seen |= 1 << bit;
            }
        }
        if seen & 0xffff != 0xffff {
            let missing = (0..16).find(|i| seen & (1 << i) == 0).unwrap_or(0);
            let names = ["role", "host", "dev", "port", "ll", "lid", "gid", "gidx", "gtype", "mtu", "ndmtu", "qpn", "psn", "addr", "rkey", "len"];
            return Err(format!("the peer's message lacks {}=", names[missing]));
        }
        if !matches!(h.mtu, 256 | 512 | 1024 | 2048 | 4096) {
            return Err(format!("the peer's MTU {} is not 256..4096", h.mtu));
        }
        if h.qpn > 0xff_ffff || h.psn > 0xff_ffff {
            return Err("the peer's QP number or PSN has more than 24 bits".into());
        }
        Ok(h)
    }
}

/// The closing words: `rperftest-doctor 1 result recv=ok|none tx=N rx=N`.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Result1 {
    /// The server saw the client's SEND arrive with the right bytes.
    pub recv_ok: bool,
    /// The server's netdev packet counters moved by this much during the test.
    pub tx: u64,
    pub rx: u64,
}

impl Result1 {
    pub fn encode(&self) -> String {
        format!("{MAGIC} {VERSION} result recv={} tx={} rx={}\n", if self.recv_ok { "ok" } else { "none" }, self.tx, self.rx)
    }
    pub fn parse(b: &[u8]) -> Result<Result1, String> {
        let text = std::str::from_utf8(b).map_err(|_| "the peer's result is not text".to_string())?;
        let text = text.strip_suffix('\n').unwrap_or(text);
        let w: Vec<&str> = text.split(' ').collect();
        let bad = || format!("the peer's result line is malformed: \"{}\"", text.chars().flat_map(char::escape_default).take(80).collect::<String>());
        if w.len() != 6 || w[0] != MAGIC || w[1] != "1" || w[2] != "result" {
            return Err(bad());
        }
        let val = |i: usize, k: &str| w[i].strip_prefix(k).ok_or_else(bad);
        let recv_ok = match val(3, "recv=")? {
            "ok" => true,
            "none" => false,
            _ => return Err(bad()),
        };
        let tx = val(4, "tx=")?.parse().map_err(|_| bad())?;
        let rx = val(5, "rx=")?.parse().map_err(|_| bad())?;
        Ok(Result1 { recv_ok, tx, rx })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    pub fn sample() -> Hello {
        let mut gid = [0u8; 16];
        gid[10] = 0xff;
        gid[11] = 0xff;
        gid[12..].copy_from_slice(&[10, 99, 0, 1]);
        Hello {
            role: "serve".into(),
            host: "node4".into(),
            dev: "rxe0".into(),
            port: 1,
            link_layer: "Ethernet".into(),
            lid: 0,
            gid,
            gid_index: 1,
            gid_type: "RoCE v2".into(),
            mtu: 1024,
            netdev_mtu: 1500,
            qpn: 17,
            psn: 0x1234,
            addr: 0x7f00_dead_0000,
            rkey: 0xabc,
            len: 8192,
            err: String::new(),
        }
    }

    #[test]
    fn golden_and_round_trip() {
        let h = sample();
        let line = h.encode();
        assert_eq!(
            line,
            "rperftest-doctor 1 role=serve host=node4 dev=rxe0 port=1 ll=Ethernet lid=0 gid=00000000000000000000ffff0a630001 gidx=1 gtype=RoCE_v2 mtu=1024 ndmtu=1500 qpn=17 psn=4660 addr=7f00dead0000 rkey=abc len=8192\n"
        );
        assert_eq!(Hello::parse(line.as_bytes()), Ok(h.clone()));
        let e = Hello { err: "QP to RTR: Invalid argument".into(), ..h };
        let line = e.encode();
        assert!(line.ends_with(" len=8192 err=QP_to_RTR:_Invalid_argument\n"), "{line}");
        assert_eq!(Hello::parse(line.as_bytes()), Ok(e));
        let r = Result1 { recv_ok: true, tx: 5, rx: 7 };
        assert_eq!(Result1::parse(r.encode().as_bytes()), Ok(r));
    }

    #[test]
    fn malformed_is_one_line() {
        let good = sample().encode();
        for bad in [
            b"".to_vec(),
            b"\x00\x00\x00\x01 perftest key".to_vec(),
            good.replace("mtu=1024", "mtu=1000").into_bytes(),
            good.replace("qpn=17", "qpn=99999999").into_bytes(),
            good.replace(" len=8192", "").into_bytes(),
            good.replace("gid=0000", "gid=zz00").into_bytes(),
            format!("{} port=1", good.trim_end()).into_bytes(),
            good.replace("rperftest-doctor 1", "rperftest-doctor 2").into_bytes(),
            vec![b'x'; 5000],
            vec![0xff, 0xfe],
        ] {
            let e = Hello::parse(&bad).unwrap_err();
            assert!(!e.contains('\n') && !e.is_empty(), "{e:?}");
        }
        assert!(Hello::parse(b"0000:0000:...").unwrap_err().contains("did not answer as rperftest doctor --serve"));
        assert!(Result1::parse(b"rperftest-doctor 1 result recv=maybe tx=1 rx=2").is_err());
        // Control bytes escape to several characters each: the quote is cut after escaping.
        let mut ctl = vec![0x17u8; 56];
        ctl.extend("\u{19d}".repeat(4).as_bytes());
        let e = Result1::parse(&ctl).unwrap_err();
        assert!(e.len() < 200, "{e}");
    }
}
