//! `rperftest ibdev2netdev [-v]`: which netdev each RDMA port runs over, as Mellanox's
//! `ibdev2netdev` script prints it (`mlx5_0 port 1 ==> ens6f0np0 (Up)`), for every RDMA
//! device (the script stays silent unless a Mellanox NIC is present, and only finds netdevs
//! that share the RDMA device's PCI function).
//!
//! The netdev of a port, first match wins:
//! 1. RoCE/iWARP: `gid_attrs/ndevs/0` of the port, then the device's `parent` (rxe, siw).
//! 2. InfiniBand: the IPoIB netdev whose 20-byte hardware address ends with the port GUID.
//! 3. A netdev whose `device/resource` equals the RDMA device's and whose `dev_port` (or
//!    `dev_id`, the larger) + 1 is the port number (the script's own rule).
//!
//! The link word is `Up` when `class/net/<if>/carrier` reads 1, `Down` when it reads anything
//! else or cannot be read (an interface that is administratively down), `NA` when there is no
//! carrier file. A port with no netdev prints `==> NA (NA)` (the script prints nothing).
//!
//! `-v` adds, as the script does: the PCI address, `(MT<device id> - <part number>)`, the
//! VPD's product name, `fw <fw_ver>` and the port state word padded to 6.

use std::io::Write;
use std::path::Path;

use clap::{Arg, ArgAction, Command};
use uverbs::discovery::SysfsRoot;

use bench_core::cparse::strtoul;

use super::csys::{read_string, sorted_names};

#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct PortLink {
    pub ibdev: String,
    pub port: u32,
    pub netdev: Option<String>,
    /// `Up`, `Down` or `NA`.
    pub link: &'static str,
    pub detail: Detail,
}

/// What `-v` adds; each field already in the script's spelling: `NA` when unknown, and the
/// part number, product name and state padded (to 11, 15 and 6) only when they were read.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Detail {
    /// PCI address (`0000:3b:00.0`), empty for devices not on PCI.
    pub pci: String,
    /// `MT4125` or `NA`.
    pub devid: String,
    pub partid: String,
    pub desc: String,
    pub fw: String,
    /// `ACTIVE`, `DOWN`, ... or `NA`.
    pub state: String,
}

pub fn render(links: &[PortLink], verbose: bool) -> String {
    let mut s = String::new();
    for l in links {
        let nd = l.netdev.as_deref().unwrap_or("NA");
        if verbose {
            let d = &l.detail;
            s.push_str(&format!(
                "{} {} ({} - {}) {} fw {} port {} ({}) ==> {nd} ({})\n",
                d.pci, l.ibdev, d.devid, d.partid, d.desc, d.fw, l.port, d.state, l.link
            ));
        } else {
            s.push_str(&format!("{} port {} ==> {nd} ({})\n", l.ibdev, l.port, l.link));
        }
    }
    s
}

fn attr(p: &Path) -> Option<String> {
    read_string(p, 4096).map(|t| t.trim().to_string())
}

/// `Up` / `Down` / `NA` from the carrier file of `netdev`.
pub fn link_word(root: &SysfsRoot, netdev: &str) -> &'static str {
    let p = root.0.join("class/net").join(netdev).join("carrier");
    if !p.exists() {
        return "NA";
    }
    match attr(&p) {
        Some(t) if strtoul(&t, 0) == 1 => "Up",
        _ => "Down",
    }
}

/// The last 8 bytes of a colon-separated hardware address, if it has 20 bytes (IPoIB).
fn ipoib_guid(addr: &str) -> Option<[u8; 8]> {
    let b: Vec<u8> = addr
        .split(':')
        .map(|h| u8::from_str_radix(h, 16).ok())
        .collect::<Option<Vec<u8>>>()?;
    if b.len() != 20 {
        return None;
    }
    let mut g = [0u8; 8];
    g.copy_from_slice(&b[12..]);
    Some(g)
}

pub fn find_netdev(root: &SysfsRoot, ibdev: &str, port: u32) -> Option<String> {
    let pdir = root.port(ibdev, port);
    if let Some(n) = attr(&pdir.join("gid_attrs/ndevs/0")).filter(|s| !s.is_empty()) {
        return Some(n);
    }
    let ll = attr(&pdir.join("link_layer")).unwrap_or_default();
    if ll != "InfiniBand" {
        if let Some(n) = attr(&root.ibdev(ibdev).join("parent")).filter(|s| !s.is_empty()) {
            return Some(n);
        }
    }
    let net = root.0.join("class/net");
    let netdevs = sorted_names(&net);
    if ll == "InfiniBand" {
        let gid = attr(&pdir.join("gids/0")).and_then(|t| super::csys::gid_like_libibumad(&t));
        if let Some(g) = gid {
            for n in &netdevs {
                let a = attr(&net.join(n).join("address")).and_then(|a| ipoib_guid(&a));
                if a.is_some_and(|a| a[..] == g[8..]) {
                    return Some(n.clone());
                }
            }
        }
    }
    let res = attr(&root.ibdev(ibdev).join("device/resource"))?;
    netdevs.into_iter().find(|n| {
        let d = net.join(n);
        if attr(&d.join("device/resource")).as_deref() != Some(res.as_str()) {
            return false;
        }
        let num = |f: &str| attr(&d.join(f)).map(|t| strtoul(&t, 0)).unwrap_or(0);
        num("dev_port").max(num("dev_id")) + 1 == u64::from(port)
    })
}

/// The product name (identifier string, tag 0x82) and part number (keyword `PN` of the
/// read-only section, tag 0x90) of a PCI VPD image. Bounds are checked on every step.
pub fn parse_vpd(vpd: &[u8]) -> (Option<String>, Option<String>) {
    let (mut desc, mut pn) = (None, None);
    let mut i = 0;
    while i + 3 <= vpd.len() {
        let tag = vpd[i];
        if tag & 0x80 == 0 {
            // Small resource: 0x78 (end tag) or anything else ends the walk.
            break;
        }
        let len = u16::from_le_bytes([vpd[i + 1], vpd[i + 2]]) as usize;
        let body = match vpd.get(i + 3..i + 3 + len) {
            Some(b) => b,
            None => break,
        };
        match tag {
            0x82 => desc = Some(String::from_utf8_lossy(body).trim().to_string()),
            0x90 => {
                let mut k = 0;
                while k + 3 <= body.len() {
                    let klen = body[k + 2] as usize;
                    let val = match body.get(k + 3..k + 3 + klen) {
                        Some(v) => v,
                        None => break,
                    };
                    if &body[k..k + 2] == b"PN" {
                        pn = Some(String::from_utf8_lossy(val).trim().to_string());
                    }
                    k += 3 + klen;
                }
            }
            _ => {}
        }
        i += 3 + len;
    }
    (desc, pn)
}

fn read_detail(root: &SysfsRoot, ibdev: &str, port: u32) -> Detail {
    let d = root.ibdev(ibdev);
    let pci = std::fs::canonicalize(d.join("device"))
        .ok()
        .filter(|p| p.to_string_lossy().contains("/pci"))
        .and_then(|p| p.file_name().map(|n| n.to_string_lossy().into_owned()))
        .unwrap_or_default();
    let devid = attr(&d.join("device/device"))
        .map(|t| format!("MT{}", strtoul(&t, 0)))
        .unwrap_or_else(|| "NA".into());
    let (desc, pn) = std::fs::read(d.join("device/vpd"))
        .map(|b| parse_vpd(&b))
        .unwrap_or((None, None));
    let state = attr(&root.port(ibdev, port).join("state"))
        .and_then(|t| t.split_whitespace().nth(1).map(|w| format!("{w:<6}")))
        .unwrap_or_else(|| "NA".into());
    // The script pads the VPD fields only when the VPD file exists.
    let (partid, desc) = match (desc, pn) {
        (None, None) => ("NA".to_string(), String::new()),
        (d, p) => (format!("{:<11}", p.unwrap_or_default()), format!("{:<15}", d.unwrap_or_default())),
    };
    Detail {
        pci,
        devid,
        partid,
        desc,
        fw: attr(&d.join("fw_ver")).unwrap_or_else(|| "NA".into()),
        state,
    }
}

/// Every port of every RDMA device, devices by name, ports by number.
pub fn read_links(root: &SysfsRoot) -> Vec<PortLink> {
    let mut out = Vec::new();
    for ibdev in sorted_names(&root.ib_class()) {
        let mut ports: Vec<u32> = sorted_names(&root.ibdev(&ibdev).join("ports"))
            .iter()
            .filter_map(|n| n.parse().ok())
            .collect();
        ports.sort_unstable();
        for port in ports {
            let netdev = find_netdev(root, &ibdev, port);
            let link = netdev.as_deref().map(|n| link_word(root, n)).unwrap_or("NA");
            out.push(PortLink {
                detail: read_detail(root, &ibdev, port),
                ibdev: ibdev.clone(),
                port,
                netdev,
                link,
            });
        }
    }
    out
}

fn cli() -> Command {
    Command::new("rperftest ibdev2netdev")
        .about("the netdev behind every RDMA port, as ibdev2netdev prints it (from sysfs)")
        .arg(Arg::new("verbose").short('v').long("verbose").action(ArgAction::SetTrue).help("add PCI address, device id, part number, firmware and port state"))
}

pub fn main_with(root: &SysfsRoot, args: &[String], out: &mut dyn Write, err: &mut dyn Write) -> u8 {
    let m = match cli_args::parse(cli(), "ibdev2netdev", args, out, err) {
        Ok(m) => m,
        Err(code) => return code,
    };
    let links = read_links(root);
    if links.is_empty() {
        let _ = writeln!(err, "ibdev2netdev: no RDMA device in {}; load a driver (modprobe rdma_rxe; rdma link add rxe0 type rxe netdev eth0)", root.ib_class().display());
        return 1;
    }
    let _ = out.write_all(render(&links, m.get_flag("verbose")).as_bytes());
    0
}

pub fn run(args: &[String]) -> u8 {
    main_with(&SysfsRoot::system(), args, &mut std::io::stdout(), &mut std::io::stderr())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fake::FakeSys;

    #[test]
    fn plain_and_verbose_golden() {
        let l = PortLink {
            ibdev: "mlx5_0".into(),
            port: 1,
            netdev: Some("ens6f0np0".into()),
            link: "Up",
            detail: Detail {
                pci: "0000:3b:00.0".into(),
                devid: "MT4125".into(),
                partid: "MCX653106A ".into(),
                desc: "ConnectX-6     ".into(),
                fw: "20.31.1014".into(),
                state: "ACTIVE".into(),
            },
        };
        let none = PortLink { ibdev: "rxe1".into(), port: 1, netdev: None, link: "NA", detail: Detail { state: "DOWN  ".into(), devid: "NA".into(), partid: "NA".into(), fw: "".into(), ..Detail::default() } };
        assert_eq!(render(&[l.clone(), none.clone()], false), "mlx5_0 port 1 ==> ens6f0np0 (Up)\nrxe1 port 1 ==> NA (NA)\n");
        assert_eq!(
            render(&[l, none], true),
            concat!(
                "0000:3b:00.0 mlx5_0 (MT4125 - MCX653106A ) ConnectX-6      fw 20.31.1014 port 1 (ACTIVE) ==> ens6f0np0 (Up)\n",
                " rxe1 (NA - NA)  fw  port 1 (DOWN  ) ==> NA (NA)\n"
            )
        );
    }

    #[test]
    fn reads_rxe_and_ib_ports() {
        let f = FakeSys::new();
        f.rxe("rxe0", "eth0", false);
        f.rxe("rxe1", "eth1", false);
        f.file("class/net/eth1/carrier", "0\n");
        // An IB port: no ndevs, IPoIB netdev found by the port GUID.
        f.rxe("mlx5_0", "unused", false);
        f.file("class/infiniband/mlx5_0/ports/1/link_layer", "InfiniBand\n");
        std::fs::remove_dir_all(f.path("class/infiniband/mlx5_0/ports/1/gid_attrs")).unwrap();
        std::fs::remove_file(f.path("class/infiniband/mlx5_0/parent")).unwrap();
        f.file("class/net/ib0/address", "00:00:10:87:fe:80:00:00:00:00:00:00:fc:3c:7a:ff:fe:ba:5d:f3\n");
        f.file("class/net/ib1/address", "00:00:10:87:fe:80:00:00:00:00:00:00:00:00:00:00:00:00:00:01\n");
        let links = read_links(&f.root());
        assert_eq!(
            render(&links, false),
            "mlx5_0 port 1 ==> ib0 (NA)\nrxe0 port 1 ==> eth0 (Up)\nrxe1 port 1 ==> eth1 (Down)\n"
        );
        assert_eq!(links[1].detail.state, "ACTIVE");
        assert_eq!(links[1].detail.devid, "NA");
    }

    #[test]
    fn vpd_parsing_is_bounded() {
        let mut v = vec![0x82, 10, 0];
        v.extend_from_slice(b"ConnectX-6");
        let ro = b"PN\x0aMCX653106AEC\x02ab";
        v.push(0x90);
        v.extend_from_slice(&(ro.len() as u16).to_le_bytes());
        v.extend_from_slice(ro);
        v.push(0x78);
        assert_eq!(parse_vpd(&v), (Some("ConnectX-6".into()), Some("MCX653106A".into())));
        for cut in 0..v.len() {
            let _ = parse_vpd(&v[..cut]);
        }
        assert_eq!(parse_vpd(&[0x82, 0xff, 0xff, b'x']), (None, None));
    }

    #[test]
    fn no_devices_is_an_error() {
        let f = FakeSys::new();
        let (mut o, mut e) = (Vec::new(), Vec::new());
        assert_eq!(main_with(&f.root(), &[], &mut o, &mut e), 1);
        assert!(String::from_utf8(e).unwrap().contains("no RDMA device"));
    }
}
