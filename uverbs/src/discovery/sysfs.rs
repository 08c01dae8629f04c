//! sysfs: the fallback device list, and the port and GID facts sysfs offers.
//!
//! Every parser is a pure function over text: malformed text is an error, never a panic.
//! Readers take a [`SysfsRoot`] so tests run against fixture trees.

use std::fs;
use std::io::Read;
use std::path::{Path, PathBuf};

use crate::attr::{NodeType, PortAttr, LINK_LAYER_ETHERNET, LINK_LAYER_INFINIBAND};
use crate::error::{Error, Result};

/// The directory that plays `/sys` (real: `/sys`; tests: a fixture tree).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SysfsRoot(pub PathBuf);

impl Default for SysfsRoot {
    fn default() -> Self {
        SysfsRoot::system()
    }
}

impl SysfsRoot {
    /// `/sys`.
    pub fn system() -> SysfsRoot {
        SysfsRoot(PathBuf::from("/sys"))
    }
    pub fn new(p: impl Into<PathBuf>) -> SysfsRoot {
        SysfsRoot(p.into())
    }
    /// `<root>/class/infiniband`.
    pub fn ib_class(&self) -> PathBuf {
        self.0.join("class/infiniband")
    }
    /// `<root>/class/infiniband_verbs`.
    pub fn verbs_class(&self) -> PathBuf {
        self.0.join("class/infiniband_verbs")
    }
    /// `<root>/class/infiniband/<ibdev>`.
    pub fn ibdev(&self, ibdev: &str) -> PathBuf {
        self.ib_class().join(ibdev)
    }
    /// `<root>/class/infiniband/<ibdev>/ports/<port>`.
    pub fn port(&self, ibdev: &str, port: u32) -> PathBuf {
        self.ibdev(ibdev).join("ports").join(port.to_string())
    }
}

/// The most we read of one attribute file (sysfs attributes are at most a page).
pub const MAX_ATTR: usize = 4096;

/// Read a sysfs attribute: at most [`MAX_ATTR`] bytes, trailing newline/whitespace removed.
pub fn read_attr(path: &Path) -> Result<String> {
    let mut f = fs::File::open(path).map_err(|e| io_err("read", path, e))?;
    let mut buf = [0u8; MAX_ATTR];
    let mut n = 0;
    loop {
        match f.read(&mut buf[n..]) {
            Ok(0) => break,
            Ok(k) => {
                n += k;
                if n == buf.len() {
                    break;
                }
            }
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(io_err("read", path, e)),
        }
    }
    Ok(String::from_utf8_lossy(&buf[..n]).trim_end().to_string())
}

/// Read an attribute into a small caller buffer (no allocation); returns the bytes read.
/// Used for the GID table's 1024 files.
pub fn read_attr_into<'b>(path: &Path, buf: &'b mut [u8]) -> std::io::Result<&'b [u8]> {
    let mut f = fs::File::open(path)?;
    let mut n = 0;
    while n < buf.len() {
        match f.read(&mut buf[n..]) {
            Ok(0) => break,
            Ok(k) => n += k,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(e),
        }
    }
    Ok(&buf[..n])
}

pub(crate) fn io_err(verb: &str, path: &Path, e: std::io::Error) -> Error {
    let mut err = match e.raw_os_error() {
        Some(code) => Error::errno(format!("{verb} {}", path.display()), code),
        None => Error::msg(format!("{verb} {}", path.display()), e.to_string()),
    };
    if e.kind() == std::io::ErrorKind::PermissionDenied {
        err = err.with_hint("check permissions on /sys (containers may hide it)");
    }
    err
}

fn parse_err(what: &str, text: &str) -> Error {
    let shown: String = text.chars().take(64).collect();
    Error::msg(
        format!("parse sysfs {what}"),
        format!("unexpected text {shown:?}"),
    )
}

/// Names in a directory, sorted (names that are not UTF-8 are skipped).
pub fn list_dir(path: &Path) -> Result<Vec<String>> {
    let rd = fs::read_dir(path).map_err(|e| io_err("list", path, e))?;
    let mut v: Vec<String> = rd
        .filter_map(|e| e.ok())
        .filter_map(|e| e.file_name().into_string().ok())
        .collect();
    v.sort();
    Ok(v)
}

/// A decimal unsigned integer (`"2"`, `"15\n"`).
pub fn parse_dec(text: &str) -> Result<u64> {
    let t = text.trim();
    if t.is_empty() || !t.bytes().all(|b| b.is_ascii_digit()) {
        return Err(parse_err("number", text));
    }
    t.parse::<u64>().map_err(|_| parse_err("number", text))
}

/// A hexadecimal unsigned integer, with or without `0x` (`"0x0"`, `"0x00010000"`, `"ffff"`).
pub fn parse_hex(text: &str) -> Result<u64> {
    let t = text.trim();
    let h = t
        .strip_prefix("0x")
        .or_else(|| t.strip_prefix("0X"))
        .unwrap_or(t);
    if h.is_empty() || h.len() > 16 || !h.bytes().all(|b| b.is_ascii_hexdigit()) {
        return Err(parse_err("hex number", text));
    }
    u64::from_str_radix(h, 16).map_err(|_| parse_err("hex number", text))
}

/// The leading integer of `"<n>: <NAME>"` (`node_type` `"1: CA"`, `state` `"4: ACTIVE"`,
/// `phys_state` `"5: LinkUp"`).
pub fn parse_numbered(text: &str) -> Result<u32> {
    let t = text.trim();
    let num = t.split(':').next().unwrap_or("");
    let v = parse_dec(num).map_err(|_| parse_err("numbered value", text))?;
    u32::try_from(v).map_err(|_| parse_err("numbered value", text))
}

/// `node_type` → [`NodeType`].
pub fn parse_node_type(text: &str) -> Result<NodeType> {
    parse_numbered(text).map(NodeType::from_raw)
}

/// A GUID as sysfs writes it: four groups of up to four hex digits (`fc3c:7aff:feba:5df3`).
/// Strict: anything else is an error, so discovery never opens a device on a misread GUID. The
/// diag tools' `csys::guid_like_libibumad` is the lenient C reading, for reproducing their text.
pub fn parse_guid(text: &str) -> Result<u64> {
    let t = text.trim();
    let mut v: u64 = 0;
    let mut groups = 0;
    for g in t.split(':') {
        if g.is_empty() || g.len() > 4 || !g.bytes().all(|b| b.is_ascii_hexdigit()) {
            return Err(parse_err("GUID", text));
        }
        groups += 1;
        if groups > 4 {
            return Err(parse_err("GUID", text));
        }
        v = (v << 16) | u64::from_str_radix(g, 16).map_err(|_| parse_err("GUID", text))?;
    }
    if groups != 4 {
        return Err(parse_err("GUID", text));
    }
    Ok(v)
}

/// A GID file: eight groups of four hex digits → the raw 16 bytes (network order). Strict, as
/// [`parse_guid`]; the diag tools' lenient C reading is `csys::gid_like_libibumad`.
pub fn parse_gid(text: &str) -> Result<[u8; 16]> {
    parse_gid_bytes(text.trim().as_bytes()).ok_or_else(|| parse_err("GID", text))
}

/// [`parse_gid`] over bytes, allocation-free; trailing whitespace allowed. `None` if malformed.
pub fn parse_gid_bytes(b: &[u8]) -> Option<[u8; 16]> {
    let mut end = b.len();
    while end > 0 && b[end - 1].is_ascii_whitespace() {
        end -= 1;
    }
    let b = &b[..end];
    if b.len() != 39 {
        return None;
    }
    let mut out = [0u8; 16];
    for (i, pair) in out.chunks_mut(2).enumerate() {
        let off = i * 5;
        if i > 0 && b[off - 1] != b':' {
            return None;
        }
        let mut w: u16 = 0;
        for &c in &b[off..off + 4] {
            let d = (c as char).to_digit(16)? as u16;
            w = (w << 4) | d;
        }
        pair.copy_from_slice(&w.to_be_bytes());
    }
    Some(out)
}

/// `link_layer` → `IBV_LINK_LAYER_*`.
pub fn parse_link_layer(text: &str) -> Result<u8> {
    match text.trim() {
        "InfiniBand" => Ok(LINK_LAYER_INFINIBAND),
        "Ethernet" => Ok(LINK_LAYER_ETHERNET),
        "Unknown" | "" => Ok(0),
        _ => Err(parse_err("link_layer", text)),
    }
}

/// `gid_attrs/types/<i>` → [`crate::attr::GidType`]: `"RoCE v2"`, or `"IB/RoCE v1"` which is IB
/// on an InfiniBand port and RoCE v1 on an Ethernet port.
pub fn parse_gid_type(text: &str, link_layer: u8) -> Result<crate::attr::GidType> {
    use crate::attr::GidType;
    match text.trim() {
        "RoCE v2" => Ok(GidType::RoceV2),
        "IB/RoCE v1" | "RoCE v1" | "IB" => Ok(if link_layer == LINK_LAYER_ETHERNET {
            GidType::RoceV1
        } else {
            GidType::Ib
        }),
        _ => Err(parse_err("GID type", text)),
    }
}

/// `rate` (`"2.5 Gb/sec (1X SDR)"`, `"100 Gb/sec (4X EDR)"`) → (active_width, active_speed)
/// codes as QUERY_PORT reports them.
pub fn parse_rate(text: &str) -> Result<(u8, u8)> {
    let t = text.trim();
    let inner = t
        .rsplit_once('(')
        .and_then(|(_, r)| r.strip_suffix(')'))
        .ok_or_else(|| parse_err("rate", text))?;
    let mut it = inner.split_whitespace();
    let w = it
        .next()
        .and_then(|w| w.strip_suffix('X'))
        .ok_or_else(|| parse_err("rate", text))?;
    let width = match w {
        "1" => 1,
        "4" => 2,
        "8" => 4,
        "12" => 8,
        "2" => 16,
        _ => return Err(parse_err("rate width", text)),
    };
    let speed = match it.next().unwrap_or("") {
        "SDR" => 1,
        "DDR" => 2,
        "QDR" => 4,
        "FDR10" => 8,
        "FDR" => 16,
        "EDR" => 32,
        "HDR" => 64,
        "NDR" => 128,
        _ => return Err(parse_err("rate speed", text)),
    };
    Ok((width, speed))
}

/// `dev` (`"231:192"`) → (major, minor).
pub fn parse_dev_numbers(text: &str) -> Result<(u32, u32)> {
    let t = text.trim();
    let (a, b) = t.split_once(':').ok_or_else(|| parse_err("dev", text))?;
    let ma = parse_dec(a).ok().and_then(|v| u32::try_from(v).ok());
    let mi = parse_dec(b).ok().and_then(|v| u32::try_from(v).ok());
    match (ma, mi) {
        (Some(x), Some(y)) => Ok((x, y)),
        _ => Err(parse_err("dev", text)),
    }
}

/// A PCI `modalias` (`pci:v000015B3d0000101Dsv...`) → (vendor, device).
pub fn parse_pci_modalias(text: &str) -> Result<(u32, u32)> {
    let t = text.trim();
    let rest = t
        .strip_prefix("pci:v")
        .ok_or_else(|| parse_err("modalias", text))?;
    if rest.len() < 17 || !rest.is_char_boundary(8) || !rest.is_char_boundary(17) {
        return Err(parse_err("modalias", text));
    }
    let vendor = &rest[..8];
    let d = rest[8..]
        .strip_prefix('d')
        .ok_or_else(|| parse_err("modalias", text))?;
    let device = &d[..8];
    let v = u32::from_str_radix(vendor, 16).map_err(|_| parse_err("modalias", text))?;
    let dv = u32::from_str_radix(device, 16).map_err(|_| parse_err("modalias", text))?;
    Ok((v, dv))
}

/// `enum rdma_driver_id` values this crate can name (defined in [`crate::sys`]).
pub use crate::sys::{
    RDMA_DRIVER_BNXT_RE as DRIVER_ID_BNXT_RE, RDMA_DRIVER_EFA as DRIVER_ID_EFA, RDMA_DRIVER_MLX4 as DRIVER_ID_MLX4, RDMA_DRIVER_MLX5 as DRIVER_ID_MLX5,
    RDMA_DRIVER_RXE as DRIVER_ID_RXE, RDMA_DRIVER_SIW as DRIVER_ID_SIW, RDMA_DRIVER_UNKNOWN as DRIVER_ID_UNKNOWN,
};

/// The driver id when netlink cannot say: by device-name prefix (rdma-core's name match), else
/// by the PCI id in `device/modalias`. [`DRIVER_ID_UNKNOWN`] if neither tells.
pub fn infer_driver_id(ibdev: &str, modalias: Option<&str>) -> u32 {
    if ibdev.starts_with("rxe") {
        return DRIVER_ID_RXE;
    }
    if ibdev.starts_with("siw") {
        return DRIVER_ID_SIW;
    }
    if ibdev.starts_with("mlx5_") {
        return DRIVER_ID_MLX5;
    }
    if ibdev.starts_with("mlx4_") {
        return DRIVER_ID_MLX4;
    }
    if ibdev.starts_with("bnxt_re") {
        return DRIVER_ID_BNXT_RE;
    }
    if let Some(Ok((vendor, device))) = modalias.map(parse_pci_modalias) {
        if vendor == 0x15b3 {
            // ConnectX-4 (0x1013) and later, and BlueField, are mlx5; older ids are mlx4.
            return if device >= 0x1011 {
                DRIVER_ID_MLX5
            } else {
                DRIVER_ID_MLX4
            };
        }
        if vendor == 0x1d0f {
            return DRIVER_ID_EFA;
        }
        if vendor == 0x14e4 {
            // Broadcom: the NetXtreme-E RoCE functions bnxt_re serves.
            return DRIVER_ID_BNXT_RE;
        }
    }
    DRIVER_ID_UNKNOWN
}

/// One `class/infiniband_verbs/uverbsN` entry.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct UverbsEntry {
    /// `uverbs0`.
    pub name: String,
    /// The IB device it serves.
    pub ibdev: String,
    /// Driver ABI (`abi_version`).
    pub abi: u32,
    pub dev: Option<(u32, u32)>,
}

/// Sort key for `uverbs10` after `uverbs9`.
fn trailing_number(s: &str) -> (u64, String) {
    let digits: String = s.chars().rev().take_while(|c| c.is_ascii_digit()).collect();
    let n = digits
        .chars()
        .rev()
        .collect::<String>()
        .parse::<u64>()
        .unwrap_or(u64::MAX);
    (n, s.to_string())
}

/// Every uverbs char device sysfs knows, ordered by number.
pub fn list_uverbs(root: &SysfsRoot) -> Result<Vec<UverbsEntry>> {
    let dir = root.verbs_class();
    let mut names: Vec<String> = list_dir(&dir)?
        .into_iter()
        .filter(|n| n.starts_with("uverbs"))
        .collect();
    names.sort_by_key(|n| trailing_number(n));
    let mut out = Vec::new();
    for name in names {
        let d = dir.join(&name);
        let ibdev = read_attr(&d.join("ibdev"))?;
        if ibdev.is_empty() {
            continue;
        }
        let abi = u32::try_from(parse_dec(&read_attr(&d.join("abi_version"))?)?)
            .map_err(|_| parse_err("abi_version", "out of range"))?;
        let dev = read_attr(&d.join("dev"))
            .ok()
            .and_then(|t| parse_dev_numbers(&t).ok());
        out.push(UverbsEntry {
            name,
            ibdev,
            abi,
            dev,
        });
    }
    Ok(out)
}

/// The IB devices in `class/infiniband` (empty if the directory is missing).
pub fn list_ibdevs(root: &SysfsRoot) -> Vec<String> {
    list_dir(&root.ib_class()).unwrap_or_default()
}

/// Port numbers of a device (`ports/*`), ascending.
pub fn port_numbers(root: &SysfsRoot, ibdev: &str) -> Result<Vec<u32>> {
    let mut v: Vec<u32> = list_dir(&root.ibdev(ibdev).join("ports"))?
        .iter()
        .filter_map(|n| n.parse::<u32>().ok())
        .collect();
    v.sort_unstable();
    Ok(v)
}

/// Device-level facts from `class/infiniband/<ibdev>`.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct SysfsDevice {
    pub node_type: Option<NodeType>,
    pub node_guid: Option<u64>,
    pub sys_image_guid: Option<u64>,
    pub fw_ver: String,
    pub node_desc: Option<String>,
    pub hw_rev: Option<String>,
    pub board_id: Option<String>,
    pub modalias: Option<String>,
    /// rxe: the netdev it runs on.
    pub parent: Option<String>,
    pub port_count: u32,
}

/// Read `class/infiniband/<ibdev>`. Missing optional files are `None`; malformed ones are errors.
pub fn read_device(root: &SysfsRoot, ibdev: &str) -> Result<SysfsDevice> {
    let d = root.ibdev(ibdev);
    if !d.is_dir() {
        return Err(Error::msg(
            format!("read {}", d.display()),
            format!("no such RDMA device {ibdev:?}"),
        ));
    }
    let opt = |name: &str| read_attr(&d.join(name)).ok();
    let node_type = opt("node_type").map(|t| parse_node_type(&t)).transpose()?;
    let node_guid = opt("node_guid").map(|t| parse_guid(&t)).transpose()?;
    let sys_image_guid = opt("sys_image_guid").map(|t| parse_guid(&t)).transpose()?;
    let nonempty = |o: Option<String>| o.filter(|s| !s.is_empty());
    Ok(SysfsDevice {
        node_type,
        node_guid,
        sys_image_guid,
        fw_ver: opt("fw_ver").unwrap_or_default(),
        node_desc: opt("node_desc"),
        hw_rev: nonempty(opt("hw_rev")),
        board_id: nonempty(opt("board_id")),
        modalias: nonempty(opt("device/modalias")),
        parent: nonempty(opt("parent")),
        port_count: port_numbers(root, ibdev)
            .map(|v| v.len() as u32)
            .unwrap_or(0),
    })
}

/// What sysfs says about a port, as a [`PortAttr`] with the fields sysfs cannot give left 0
/// (max_mtu, active_mtu, max_msg_sz, max_vl_num, pkey counters, subnet_timeout, ...).
/// `gid_tbl_len` is the number of entries in `gids/`, `pkey_tbl_len` that of `pkeys/`.
pub fn read_port(root: &SysfsRoot, ibdev: &str, port: u32) -> Result<PortAttr> {
    let p = root.port(ibdev, port);
    if !p.is_dir() {
        return Err(Error::msg(
            format!("read {}", p.display()),
            format!("{ibdev} has no port {port}"),
        ));
    }
    let opt = |name: &str| read_attr(&p.join(name)).ok();
    let mut a = PortAttr {
        state: opt("state")
            .map(|t| parse_numbered(&t))
            .transpose()?
            .unwrap_or(0),
        phys_state: opt("phys_state")
            .map(|t| parse_numbered(&t))
            .transpose()?
            .unwrap_or(0) as u8,
        link_layer: opt("link_layer")
            .map(|t| parse_link_layer(&t))
            .transpose()?
            .unwrap_or(0),
        port_lid: opt("lid").map(|t| parse_hex(&t)).transpose()?.unwrap_or(0) as u16,
        sm_lid: opt("sm_lid")
            .map(|t| parse_hex(&t))
            .transpose()?
            .unwrap_or(0) as u16,
        sm_sl: opt("sm_sl")
            .map(|t| parse_dec(&t))
            .transpose()?
            .unwrap_or(0) as u8,
        port_lmc: opt("lid_mask_count")
            .map(|t| parse_dec(&t))
            .transpose()?
            .unwrap_or(0) as u8,
        port_cap_flags: opt("cap_mask")
            .map(|t| parse_hex(&t))
            .transpose()?
            .unwrap_or(0) as u32,
        ..PortAttr::default()
    };
    if let Some(Ok((w, s))) = opt("rate").map(|t| parse_rate(&t)) {
        a.active_width = w;
        a.active_speed = s;
    }
    a.gid_tbl_len = fs::read_dir(p.join("gids"))
        .map(|r| r.count() as u32)
        .unwrap_or(0);
    a.pkey_tbl_len = fs::read_dir(p.join("pkeys"))
        .map(|r| r.count() as u16)
        .unwrap_or(0);
    Ok(a)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::attr::GidType;

    #[test]
    fn numbers() {
        assert_eq!(parse_dec("2\n").unwrap(), 2);
        assert!(parse_dec("").is_err());
        assert!(parse_dec("-1").is_err());
        assert!(parse_dec("99999999999999999999999").is_err());
        assert_eq!(parse_hex("0x0").unwrap(), 0);
        assert_eq!(parse_hex("0x00010000\n").unwrap(), 0x10000);
        assert_eq!(parse_hex("ffff").unwrap(), 0xffff);
        assert!(parse_hex("0x").is_err());
        assert!(parse_hex("0xg").is_err());
        assert!(parse_hex("0x11112222333344445").is_err());
        assert_eq!(parse_numbered("4: ACTIVE").unwrap(), 4);
        assert_eq!(parse_numbered("5: LinkUp\n").unwrap(), 5);
        assert!(parse_numbered(": x").is_err());
        assert!(parse_numbered("ACTIVE").is_err());
        assert_eq!(parse_node_type("1: CA").unwrap(), NodeType::Ca);
        assert_eq!(parse_node_type("4: RNIC").unwrap(), NodeType::Rnic);
    }

    #[test]
    fn guids_and_gids() {
        assert_eq!(
            parse_guid("fc3c:7aff:feba:5df3\n").unwrap(),
            0xfc3c7afffeba5df3
        );
        assert_eq!(parse_guid("0:0:0:1").unwrap(), 1);
        assert!(parse_guid("fc3c:7aff:feba").is_err());
        assert!(parse_guid("fc3c:7aff:feba:5df3:1").is_err());
        assert!(parse_guid("fc3c::feba:5df3").is_err());
        assert!(parse_guid("fc3cc:7aff:feba:5df3").is_err());
        assert!(parse_guid("").is_err());
        let g = parse_gid("0000:0000:0000:0000:0000:ffff:0a63:0001\n").unwrap();
        assert_eq!(g, [0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff, 10, 99, 0, 1]);
        let g = parse_gid("fe80:0000:0000:0000:fc3c:7aff:feba:5df3").unwrap();
        assert_eq!(&g[..2], &[0xfe, 0x80]);
        assert_eq!(&g[8..], &[0xfc, 0x3c, 0x7a, 0xff, 0xfe, 0xba, 0x5d, 0xf3]);
        assert!(parse_gid("fe80::1").is_err());
        assert!(parse_gid("fe80:0000:0000:0000:fc3c:7aff:feba:5dfx").is_err());
        assert!(parse_gid("fe80-0000:0000:0000:fc3c:7aff:feba:5df3").is_err());
        assert!(parse_gid("ééééééééééééééééééé").is_err());
    }

    #[test]
    fn port_texts() {
        assert_eq!(parse_link_layer("Ethernet\n").unwrap(), LINK_LAYER_ETHERNET);
        assert_eq!(
            parse_link_layer("InfiniBand").unwrap(),
            LINK_LAYER_INFINIBAND
        );
        assert!(parse_link_layer("Token Ring").is_err());
        assert_eq!(parse_gid_type("RoCE v2\n", 2).unwrap(), GidType::RoceV2);
        assert_eq!(parse_gid_type("IB/RoCE v1", 2).unwrap(), GidType::RoceV1);
        assert_eq!(parse_gid_type("IB/RoCE v1", 1).unwrap(), GidType::Ib);
        assert!(parse_gid_type("RoCE v3", 2).is_err());
        assert_eq!(parse_rate("2.5 Gb/sec (1X SDR)\n").unwrap(), (1, 1));
        assert_eq!(parse_rate("100 Gb/sec (4X EDR)").unwrap(), (2, 32));
        assert_eq!(parse_rate("200 Gb/sec (2X NDR)").unwrap(), (16, 128));
        assert!(parse_rate("2.5 Gb/sec").is_err());
        assert!(parse_rate("(3X SDR)").is_err());
        assert!(parse_rate("(1X XYZ)").is_err());
        assert!(parse_rate("(").is_err());
        assert_eq!(parse_dev_numbers("231:192\n").unwrap(), (231, 192));
        assert!(parse_dev_numbers("231").is_err());
        assert!(parse_dev_numbers("a:b").is_err());
    }

    #[test]
    fn driver_ids() {
        assert_eq!(infer_driver_id("rxe0", None), DRIVER_ID_RXE);
        assert_eq!(infer_driver_id("mlx5_0", None), DRIVER_ID_MLX5);
        assert_eq!(infer_driver_id("bnxt_re0", None), DRIVER_ID_BNXT_RE);
        assert_eq!(infer_driver_id("rdmap1s0f0", Some("pci:v000014E4d00001750sv000014E4sd00005208bc02sc00i00")), DRIVER_ID_BNXT_RE);
        assert_eq!(
            infer_driver_id(
                "ibp1s0",
                Some("pci:v000015B3d0000101Dsv000015B3sd00000008bc02sc00i00")
            ),
            DRIVER_ID_MLX5
        );
        assert_eq!(
            infer_driver_id("ibp1s0", Some("pci:v000015B3d00001003sv0")),
            DRIVER_ID_MLX4
        );
        assert_eq!(
            infer_driver_id("foo", Some("pci:v00008086d00001234sv0")),
            DRIVER_ID_UNKNOWN
        );
        assert_eq!(infer_driver_id("foo", Some("pci:v0")), DRIVER_ID_UNKNOWN);
        assert_eq!(
            infer_driver_id("foo", Some("pci:vééééééééééééééééé")),
            DRIVER_ID_UNKNOWN
        );
        assert_eq!(infer_driver_id("foo", None), DRIVER_ID_UNKNOWN);
        assert_eq!(
            parse_pci_modalias("pci:v000015B3d0000101Dsv").unwrap(),
            (0x15b3, 0x101d)
        );
        assert!(parse_pci_modalias("platform:foo").is_err());
    }

    #[test]
    fn arbitrary_text_never_panics() {
        let samples = [
            "",
            ":",
            "::::",
            "0x",
            "\u{0}",
            "é:é",
            "1:",
            "(1X",
            "pci:v",
            "pci:v0000000000000000",
            "999999999999999999999:1",
            "4: ACTIVE: x",
            "(X SDR)",
            "0000:0000:0000:0000:0000:0000:0000:000é",
        ];
        for s in samples {
            let _ = parse_dec(s);
            let _ = parse_hex(s);
            let _ = parse_numbered(s);
            let _ = parse_guid(s);
            let _ = parse_gid(s);
            let _ = parse_link_layer(s);
            let _ = parse_gid_type(s, 2);
            let _ = parse_rate(s);
            let _ = parse_dev_numbers(s);
            let _ = parse_pci_modalias(s);
            let _ = infer_driver_id(s, Some(s));
        }
    }
}
