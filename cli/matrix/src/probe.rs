//! `rperftest matrix-probe` (run on each node by the preflight): the node's RDMA devices as one
//! JSON line, from sysfs alone (no device is opened, so it is quick even on a slow VM).
//!
//! Per device, port 1: its state, rate and link layer, and for RoCE the lowest-numbered RoCE v2
//! GID holding an IPv4 address: that address is the rail's netdev address (what `ibdev2netdev`
//! and `ip addr` would give) and its index is the `-x` for the tools. Per device also its
//! PCIe distance to each GPU of the node (`gpus`: index, vendor, address, nvidia-smi's class),
//! for `matrix --gpu`.

use serde_json::{json, Value};
use uverbs::attr::{gid_is_ipv4, GidType, LINK_LAYER_ETHERNET, LINK_LAYER_INFINIBAND};
use uverbs::discovery::{gid, sysfs, SysfsRoot};

use super::gpu::{probe_links, GpuLink, Pick};

/// One device as the coordinator sees it.
#[derive(Clone, Debug, PartialEq)]
pub struct DevProbe {
    pub name: String,
    pub active: bool,
    pub state: String,
    pub rate: String,
    pub ethernet: bool,
    pub ipv4: Option<String>,
    pub gid_index: Option<u32>,
    pub netdev: Option<String>,
    /// The netdev's MAC (RoCE): how the wire check knows which NIC answered.
    pub mac: Option<String>,
    /// The prefix length of the netdev's subnet holding `ipv4`, from its connected route.
    pub prefix: Option<u8>,
    /// This device's distance to each GPU of the node (none without a GPU or a PCI function).
    pub gpus: Vec<GpuLink>,
    /// `--gpu`: the GPU the coordinator chose for this device (not part of the probe's line).
    pub gpu: Option<Pick>,
}

/// The prefix length of the connected route of `netdev` that holds `ip`, from the text of
/// `/proc/net/route` (`Iface Destination Gateway Flags ... Mask ...`, addresses as
/// little-endian hex words).
pub fn prefix_from_routes(routes: &str, netdev: &str, ip: std::net::Ipv4Addr) -> Option<u8> {
    let ip = u32::from_le_bytes(ip.octets());
    routes.lines().skip(1).find_map(|l| {
        let f: Vec<&str> = l.split_whitespace().collect();
        let (dest, gw, mask) = (
            u32::from_str_radix(f.get(1)?, 16).ok()?,
            u32::from_str_radix(f.get(2)?, 16).ok()?,
            u32::from_str_radix(f.get(7)?, 16).ok()?,
        );
        (f[0] == netdev && gw == 0 && mask != 0 && ip & mask == dest)
            .then(|| u8::try_from(mask.count_ones()).unwrap_or(32))
    })
}

fn probe_dev(root: &SysfsRoot, name: &str) -> DevProbe {
    let port = root.port(name, 1);
    let read = |f: &str| sysfs::read_attr(&port.join(f)).map(|s| s.trim().to_string()).unwrap_or_default();
    // "4: ACTIVE"
    let state = read("state");
    let state = state.split_once(':').map(|(_, s)| s.trim().to_string()).unwrap_or(state);
    let ethernet = read("link_layer") == "Ethernet";
    let ll = if ethernet { LINK_LAYER_ETHERNET } else { LINK_LAYER_INFINIBAND };
    let mut d = DevProbe {
        name: name.to_string(),
        active: state == "ACTIVE",
        state,
        rate: read("rate"),
        ethernet,
        ipv4: None,
        gid_index: None,
        netdev: None,
        mac: None,
        prefix: None,
        gpus: Vec::new(),
        gpu: None,
    };
    if ethernet {
        if let Ok(table) = gid::read_gid_table(root, name, 1, ll) {
            if let Some(e) = table.iter().filter(|e| e.gid_type == GidType::RoceV2 && gid_is_ipv4(&e.gid)).min_by_key(|e| e.index) {
                d.ipv4 = Some(format!("{}.{}.{}.{}", e.gid[12], e.gid[13], e.gid[14], e.gid[15]));
                d.gid_index = Some(e.index);
                d.netdev = e.netdev.clone();
            }
        }
    }
    d
}

/// The MAC and prefix of a RoCE device's netdev (from the live system; the probe's fixture
/// tests cover the parsing).
fn with_netdev_facts(mut d: DevProbe, routes: &str) -> DevProbe {
    if let Some(nd) = d.netdev.clone() {
        d.mac = std::fs::read_to_string(format!("/sys/class/net/{nd}/address"))
            .ok()
            .map(|m| m.trim().to_string());
        d.prefix = d
            .ipv4
            .as_deref()
            .and_then(|a| a.parse().ok())
            .and_then(|ip| prefix_from_routes(routes, &nd, ip));
    }
    d
}

pub fn to_json(devs: &[DevProbe]) -> Value {
    let list: Vec<Value> = devs
        .iter()
        .map(|d| {
            json!({"name": d.name, "active": d.active, "state": d.state, "rate": d.rate,
                   "ethernet": d.ethernet, "ipv4": d.ipv4, "gid_index": d.gid_index, "netdev": d.netdev,
                   "mac": d.mac, "prefix": d.prefix,
                   "gpus": d.gpus.iter().map(GpuLink::to_json).collect::<Vec<_>>()})
        })
        .collect();
    json!({"rperftest": env!("CARGO_PKG_VERSION"), "devices": list})
}

/// Parse the probe's line; `None` if it is not one (an old binary, a login banner).
pub fn from_json(v: &Value) -> Option<(String, Vec<DevProbe>)> {
    let version = v.get("rperftest")?.as_str()?.to_string();
    let mut out = Vec::new();
    for d in v.get("devices")?.as_array()? {
        let s = |k: &str| d.get(k).and_then(Value::as_str).map(str::to_string);
        out.push(DevProbe {
            name: s("name")?,
            active: d.get("active").and_then(Value::as_bool).unwrap_or(false),
            state: s("state").unwrap_or_default(),
            rate: s("rate").unwrap_or_default(),
            ethernet: d.get("ethernet").and_then(Value::as_bool).unwrap_or(false),
            ipv4: s("ipv4"),
            gid_index: d.get("gid_index").and_then(Value::as_u64).and_then(|x| u32::try_from(x).ok()),
            netdev: s("netdev"),
            mac: s("mac"),
            prefix: d
                .get("prefix")
                .and_then(Value::as_u64)
                .and_then(|x| u8::try_from(x).ok())
                .filter(|&p| p <= 32),
            gpus: d.get("gpus").and_then(Value::as_array).map(|a| a.iter().filter_map(GpuLink::from_json).collect()).unwrap_or_default(),
            gpu: None,
        });
    }
    Some((version, out))
}

/// The probe's line among whatever else the launcher printed (motd, warnings).
pub fn find_in_output(lines: &[String]) -> Option<(String, Vec<DevProbe>)> {
    lines
        .iter()
        .rev()
        .filter_map(|l| l.strip_prefix(PREFIX))
        .find_map(|l| serde_json::from_str::<Value>(l).ok().as_ref().and_then(from_json))
}

pub const PREFIX: &str = "@rpt-matrix probe ";

pub fn run(args: &[String]) -> u8 {
    if !args.is_empty() {
        eprintln!("usage: rperftest matrix-probe (no arguments; run by rperftest matrix on each node)");
        return 2;
    }
    let root = SysfsRoot::system();
    let mut names = sysfs::list_dir(&root.ib_class()).unwrap_or_default();
    names.sort();
    let routes = std::fs::read_to_string("/proc/net/route").unwrap_or_default();
    let mut links = probe_links(&root);
    let devs: Vec<DevProbe> = names
        .iter()
        .map(|n| DevProbe { gpus: links.remove(n).unwrap_or_default(), ..with_netdev_facts(probe_dev(&root, n), &routes) })
        .collect();
    println!("{PREFIX}{}", to_json(&devs));
    0
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fake_sysfs(dir: &std::path::Path) {
        let p = dir.join("class/infiniband/rxe0/ports/1");
        for sub in ["gids", "gid_attrs/types", "gid_attrs/ndevs"] {
            std::fs::create_dir_all(p.join(sub)).expect("mkdir");
        }
        std::fs::write(p.join("state"), "4: ACTIVE\n").expect("w");
        std::fs::write(p.join("rate"), "10 Gb/sec (4X QDR)\n").expect("w");
        std::fs::write(p.join("link_layer"), "Ethernet\n").expect("w");
        let gids = [
            ("fe80:0000:0000:0000:5054:0aff:fe4d:0003", "RoCE v2"),
            ("0000:0000:0000:0000:0000:ffff:0a4d:0003", "IB/RoCE v1"),
            ("0000:0000:0000:0000:0000:ffff:0a4d:0003", "RoCE v2"),
            ("0000:0000:0000:0000:0000:0000:0000:0000", "RoCE v2"),
        ];
        for (i, (g, t)) in gids.iter().enumerate() {
            std::fs::write(p.join(format!("gids/{i}")), format!("{g}\n")).expect("w");
            std::fs::write(p.join(format!("gid_attrs/types/{i}")), format!("{t}\n")).expect("w");
            std::fs::write(p.join(format!("gid_attrs/ndevs/{i}")), "eth0\n").expect("w");
        }
        let q = dir.join("class/infiniband/rxe1/ports/1");
        std::fs::create_dir_all(&q).expect("mkdir");
        std::fs::write(q.join("state"), "1: DOWN\n").expect("w");
        std::fs::write(q.join("link_layer"), "InfiniBand\n").expect("w");
    }

    /// A GPU and a NIC on two downstream ports of one switch (PIX), a second GPU on another
    /// root port (PHB), as /sys/bus/pci/devices and /sys/class/infiniband link them.
    #[test]
    fn each_nics_distance_to_each_gpu() {
        let dir = std::env::temp_dir().join(format!("rpt-probe-gpu-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        let sw = "pci0000:00/0000:00:01.0/0000:01:00.0";
        let devs = [
            (format!("{sw}/0000:02:00.0/0000:03:00.0"), "0x10de", "0x030200"),
            (format!("{sw}/0000:02:08.0/0000:04:00.0"), "0x15b3", "0x020700"),
            ("pci0000:00/0000:00:02.0/0000:05:00.0".to_string(), "0x10de", "0x030200"),
        ];
        for (path, vendor, class) in &devs {
            let d = dir.join("devices").join(path);
            std::fs::create_dir_all(&d).expect("mkdir");
            std::fs::write(d.join("vendor"), format!("{vendor}\n")).expect("w");
            std::fs::write(d.join("class"), format!("{class}\n")).expect("w");
            std::fs::write(d.join("numa_node"), "0\n").expect("w");
            let bdf = path.rsplit('/').next().expect("bdf");
            std::fs::create_dir_all(dir.join("bus/pci/devices")).expect("mkdir");
            std::os::unix::fs::symlink(format!("../../../devices/{path}"), dir.join("bus/pci/devices").join(bdf)).expect("ln");
        }
        std::fs::create_dir_all(dir.join("class/infiniband/mlx5_0")).expect("mkdir");
        std::os::unix::fs::symlink(format!("../../../devices/{}", devs[1].0), dir.join("class/infiniband/mlx5_0/device")).expect("ln");
        std::fs::create_dir_all(dir.join("class/infiniband/rxe0")).expect("mkdir");
        let links = probe_links(&SysfsRoot::new(&dir));
        let row: Vec<(usize, &str, &str)> = links["mlx5_0"].iter().map(|l| (l.index, l.bdf.as_str(), l.link.as_str())).collect();
        assert_eq!(row, [(0, "0000:03:00.0", "PIX"), (1, "0000:05:00.0", "PHB")]);
        assert!(!links.contains_key("rxe0"));
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn the_rails_address_and_gid_come_from_the_roce_v2_ipv4_gid() {
        let dir = std::env::temp_dir().join(format!("rpt-probe-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        fake_sysfs(&dir);
        let root = SysfsRoot::new(&dir);
        let d = probe_dev(&root, "rxe0");
        assert!(d.active && d.ethernet, "{d:?}");
        assert_eq!(d.ipv4.as_deref(), Some("10.77.0.3"));
        assert_eq!(d.gid_index, Some(2));
        assert_eq!(d.netdev.as_deref(), Some("eth0"));
        assert_eq!(d.rate, "10 Gb/sec (4X QDR)");
        let down = probe_dev(&root, "rxe1");
        assert!(!down.active && !down.ethernet && down.ipv4.is_none(), "{down:?}");
        assert_eq!(down.state, "DOWN");
        // The line survives a round trip and is found among other output.
        let mut d = d;
        d.gpus = vec![GpuLink { index: 1, vendor: "nvidia".into(), bdf: "0000:0f:00.0".into(), link: "PXB".into() }];
        let lines = vec!["Welcome".to_string(), format!("{PREFIX}{}", to_json(&[d.clone(), down.clone()])), "bye".into()];
        let (v, back) = find_in_output(&lines).expect("probe line");
        assert_eq!(v, env!("CARGO_PKG_VERSION"));
        assert_eq!(back, vec![d, down]);
        assert!(find_in_output(&["@rpt-matrix probe {not json".to_string()]).is_none());
        // An older probe without "gpus": none.
        let old = serde_json::json!({"rperftest": "0.1.0", "devices": [{"name": "mlx5_0"}]});
        assert!(from_json(&old).unwrap().1[0].gpus.is_empty());
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn the_prefix_comes_from_the_netdevs_connected_route() {
        // /proc/net/route of a 2-rail bed node: 10.77.0.0/24 on eth0, 10.77.1.0/24 on eth1
        let routes =
            "Iface\tDestination\tGateway \tFlags\tRefCnt\tUse\tMetric\tMask\t\tMTU\tWindow\tIRTT\n\
                      eth0\t00000000\t01004D0A\t0003\t0\t0\t0\t00000000\t0\t0\t0\n\
                      eth0\t00004D0A\t00000000\t0001\t0\t0\t0\t00FFFFFF\t0\t0\t0\n\
                      eth1\t00014D0A\t00000000\t0001\t0\t0\t0\t00FFFFFF\t0\t0\t0\n\
                      eth1\t0000100A\t00000000\t0001\t0\t0\t0\t00F0FFFF\t0\t0\t0\n";
        assert_eq!(
            prefix_from_routes(routes, "eth1", "10.77.1.2".parse().expect("ip")),
            Some(24)
        );
        assert_eq!(
            prefix_from_routes(routes, "eth0", "10.77.0.9".parse().expect("ip")),
            Some(24)
        );
        assert_eq!(
            prefix_from_routes(routes, "eth1", "10.16.3.4".parse().expect("ip")),
            Some(20)
        );
        assert_eq!(
            prefix_from_routes(routes, "eth1", "10.77.0.2".parse().expect("ip")),
            None,
            "that subnet is eth0's"
        );
        assert_eq!(
            prefix_from_routes("Iface\nbad line\n", "eth0", "1.2.3.4".parse().expect("ip")),
            None
        );
    }
}
