//! The local checks: everything read through [`Env`]'s roots (sysfs, /proc, /dev) so the unit
//! tests run them over a fake tree.

use std::net::IpAddr;
use std::path::{Path, PathBuf};

use uverbs::attr::{GidEntry, GidType, LINK_LAYER_ETHERNET, LINK_LAYER_INFINIBAND};
use uverbs::discovery::{gid, SysfsRoot};

use super::report::{human_bytes, Check};
use bench_core::cparse::strtoul;

use crate::csys::{read_string, sorted_names};
use crate::ibdev2netdev::find_netdev;

/// Opens a device node for read and write; the error's text.
pub type OpenRw = Box<dyn Fn(&Path) -> Result<(), String>>;
/// The active MTU in bytes of (device, port).
pub type ActiveMtu = Box<dyn Fn(&str, u32) -> Option<u32>>;
/// Runs one of this binary's tools (`ib_write_bw …`) bounded in time: its exit code (-1 when it
/// could not start or was killed) and its stdout and stderr.
pub type RunTool = Box<dyn Fn(&[String], std::time::Duration) -> (i32, String)>;

/// Where the checks read from, and the few facts that do not come from files.
pub struct Env {
    pub sys: SysfsRoot,
    /// `/proc` (self/limits, self/stat, self/status, meminfo, net/if_inet6).
    pub proc_root: PathBuf,
    /// `/dev` (infiniband/uverbs*, infiniband/rdma_cm).
    pub dev_root: PathBuf,
    /// `/boot` (the kernel's config, for `--gpu`'s dma-buf check).
    pub boot_root: PathBuf,
    /// Every interface address (name, address).
    pub ifaddrs: Vec<(String, IpAddr)>,
    /// Open a device node for read and write (and close it); the error text on failure.
    pub open_rw: OpenRw,
    /// Who runs the checks (for the access check's words).
    pub uid: u32,
    /// The active MTU in bytes of (device, port) as the device reports it (query_port), when
    /// the device can be opened.
    pub active_mtu: ActiveMtu,
    /// How the peer test opens the device.
    pub providers: providers::ProviderSettings,
    /// `--gpu PEER`'s GPU-memory WRITE runs (`gpu_write`).
    pub run_tool: RunTool,
}

/// What the checks look at: `-d`, `-i`, `-x`.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Target {
    pub dev: Option<String>,
    pub port: Option<u32>,
    pub gid_index: Option<u32>,
}

/// A default `ib_write_bw` (`-s 65536`, one QP) registers one region of 2 x 64 KiB: the send
/// area and the target area (docs/perftest-wire.md, "Buffer layout").
pub const DEFAULT_TEST_MR: u64 = 2 * 65536;
/// The least RLIMIT_MEMLOCK the doctor calls enough: the default test's region, plus room for
/// the queues' rings a provider with user-memory rings (mlx5) pins besides.
pub const MEMLOCK_NEED: u64 = 256 * 1024;

fn attr(p: &Path) -> Option<String> {
    read_string(p, 4096).map(|t| t.trim().to_string())
}

/// `4: ACTIVE` -> (4, "ACTIVE").
fn numbered(text: &str) -> (u64, String) {
    let word = text.split_once(':').map(|(_, w)| w.trim()).unwrap_or(text.trim());
    (strtoul(text, 0), word.to_string())
}

/// Every check, in the order they print.
pub fn run_all(env: &Env, t: &Target) -> Vec<Check> {
    let mut out = Vec::new();
    let devs = devices(env, t, &mut out);
    for d in &devs {
        let ports: Vec<u32> = match t.port {
            Some(p) => vec![p],
            None => sorted_names(&env.sys.ibdev(d).join("ports")).iter().filter_map(|p| p.parse().ok()).collect(),
        };
        for p in ports {
            port_checks(env, t, d, p, &mut out);
        }
    }
    out.push(memlock(env));
    out.extend(access(env, &devs));
    out.push(hugepages(env));
    for d in &devs {
        out.push(numa(env, d));
        out.push(pcie(env, d));
    }
    out.push(governor(env));
    out
}

/// The first netdev (not `lo`) whose carrier is up, for the `rdma link add` hint.
fn an_up_netdev(sys: &SysfsRoot) -> String {
    let net = sys.0.join("class/net");
    sorted_names(&net)
        .into_iter()
        .filter(|n| n != "lo")
        .find(|n| attr(&net.join(n).join("carrier")).as_deref() == Some("1"))
        .unwrap_or_else(|| "ETH".to_string())
}

/// `devices`: the RDMA devices; when there is none, how to get one.
fn devices(env: &Env, t: &Target, out: &mut Vec<Check>) -> Vec<String> {
    let all = sorted_names(&env.sys.ib_class());
    if all.is_empty() {
        let eth = an_up_netdev(&env.sys);
        let rxe_loaded = env.sys.0.join("module/rdma_rxe").is_dir();
        let fix = if rxe_loaded {
            format!("rdma link add rxe0 type rxe netdev {eth} (rdma_rxe is loaded; a NIC's own driver, e.g. mlx5_ib, makes its device by itself)")
        } else {
            format!("modprobe rdma_rxe && rdma link add rxe0 type rxe netdev {eth} (or load the NIC's RDMA driver: modprobe mlx5_ib)")
        };
        out.push(Check::fail(
            "devices",
            format!("no RDMA device in {}", env.sys.ib_class().display()),
            fix,
        ));
        return Vec::new();
    }
    let pick: Vec<String> = match &t.dev {
        Some(d) if all.contains(d) => vec![d.clone()],
        Some(d) => {
            out.push(Check::fail(
                "devices",
                format!("no RDMA device {d:?} (devices: {})", all.join(", ")),
                format!("use -d {}", all[0]),
            ));
            return Vec::new();
        }
        None => all.clone(),
    };
    let words: Vec<String> = pick
        .iter()
        .map(|d| {
            let n = sorted_names(&env.sys.ibdev(d).join("ports")).len();
            format!("{d} ({n} port{})", if n == 1 { "" } else { "s" })
        })
        .collect();
    out.push(Check::ok("devices", words.join(", ")));
    pick
}

fn port_checks(env: &Env, t: &Target, dev: &str, port: u32, out: &mut Vec<Check>) {
    let pdir = env.sys.port(dev, port);
    let name = |what: &str| format!("{dev}/{port} {what}");
    if !pdir.is_dir() {
        out.push(Check::fail(
            name("port"),
            format!("{dev} has no port {port}"),
            format!("use -i with one of: {}", sorted_names(&env.sys.ibdev(dev).join("ports")).join(", ")),
        ));
        return;
    }
    let ll_text = attr(&pdir.join("link_layer")).unwrap_or_default();
    let ll = if ll_text == "InfiniBand" { LINK_LAYER_INFINIBAND } else { LINK_LAYER_ETHERNET };
    let netdev = find_netdev(&env.sys, dev, port);

    // State and physical state.
    let (st, st_word) = numbered(&attr(&pdir.join("state")).unwrap_or_default());
    let (ph, ph_word) = numbered(&attr(&pdir.join("phys_state")).unwrap_or_default());
    let both = format!("{st_word}, {ph_word}");
    out.push(if st == 4 && ph == 5 {
        Check::ok(name("state"), format!("{both} (port state, physical state)"))
    } else if ll == LINK_LAYER_INFINIBAND && ph == 5 {
        Check::fail(
            name("state"),
            format!("{both}: the link is up but no subnet manager made the port ACTIVE"),
            "start a subnet manager on the fabric (systemctl start opensm)",
        )
    } else {
        let nd = netdev.as_deref().unwrap_or("ETH");
        Check::fail(
            name("state"),
            format!("{both}: the port is not ACTIVE (its link is down{})", netdev.as_ref().map(|n| format!(": netdev {n}")).unwrap_or_default()),
            format!("ip link set dev {nd} up, and check the cable or the peer's port"),
        )
    });

    // Link layer.
    out.push(match ll_text.as_str() {
        "Ethernet" => Check::ok(name("link layer"), "Ethernet (RoCE: the tools need a GID, -x)"),
        "InfiniBand" => {
            let lid = attr(&pdir.join("lid")).map(|l| strtoul(&l, 0)).unwrap_or(0);
            if lid == 0 {
                Check::fail(name("link layer"), "InfiniBand with LID 0: no subnet manager assigned one", "systemctl start opensm (on one host of the fabric)")
            } else {
                Check::ok(name("link layer"), format!("InfiniBand, LID {lid:#x}"))
            }
        }
        other => Check::warn(name("link layer"), format!("unknown link layer {other:?}"), ""),
    });
    if ll == LINK_LAYER_INFINIBAND {
        return;
    }

    // The netdev, its carrier and addresses.
    let Some(nd) = netdev else {
        out.push(Check::fail(name("netdev"), "no netdev behind this RoCE port", "rdma link add rxe0 type rxe netdev ETH (rxe), or check the NIC's Ethernet driver"));
        return;
    };
    let ndir = env.sys.0.join("class/net").join(&nd);
    let oper = attr(&ndir.join("operstate")).unwrap_or_else(|| "unknown".into());
    let carrier = attr(&ndir.join("carrier"));
    let v4: Vec<String> = env.ifaddrs.iter().filter(|(n, a)| *n == nd && a.is_ipv4()).map(|(_, a)| a.to_string()).collect();
    let v6: Vec<String> = env.ifaddrs.iter().filter(|(n, a)| *n == nd && a.is_ipv6()).map(|(_, a)| a.to_string()).collect();
    let addrs = format!(
        "IPv4 {}, IPv6 {}",
        if v4.is_empty() { "none".into() } else { v4.join(" ") },
        if v6.is_empty() { "none".into() } else { v6.join(" ") }
    );
    let up = carrier.as_deref() == Some("1") && oper != "down";
    out.push(if !up {
        Check::fail(
            name("netdev"),
            format!("{nd} is down (operstate {oper}, carrier {}): RoCE traffic cannot leave", carrier.as_deref().unwrap_or("unreadable")),
            format!("ip link set dev {nd} up"),
        )
    } else if v4.is_empty() {
        Check::warn(
            name("netdev"),
            format!("{nd} up, {addrs}: no IPv4 address, so no RoCE v2 IPv4 GID (the tools' default)"),
            format!("ip addr add ADDR/PREFIX dev {nd}"),
        )
    } else {
        Check::ok(name("netdev"), format!("{nd} up (operstate {oper}), {addrs}"))
    });

    // The GID table.
    let table = gid::read_gid_table(&env.sys, dev, port, ll).unwrap_or_default();
    out.push(gid_check(name("GID"), &table, &nd, &v4, t.gid_index));

    // Active MTU against the netdev MTU.
    let nd_mtu = attr(&ndir.join("mtu")).map(|m| strtoul(&m, 0));
    out.push(mtu_check(name("MTU"), nd_mtu, (env.active_mtu)(dev, port), &nd));
}

/// The RoCE v2 GID of an IPv4 address on `nd`.
pub fn v2_ipv4(table: &[GidEntry], nd: &str) -> Option<GidEntry> {
    let mut v: Vec<&GidEntry> = table
        .iter()
        .filter(|e| e.gid_type == GidType::RoceV2 && e.is_ipv4() && !matches!(e.netdev.as_deref(), Some(n) if n != nd))
        .collect();
    v.sort_by_key(|e| e.index);
    v.first().map(|e| (*e).clone())
}

pub fn gid_check(name: String, table: &[GidEntry], nd: &str, v4: &[String], forced: Option<u32>) -> Check {
    if table.is_empty() {
        return Check::fail(name, "the GID table is empty: the netdev has no address the device took", format!("ip link set dev {nd} up; ip addr add ADDR/PREFIX dev {nd}"));
    }
    let v2 = v2_ipv4(table, nd);
    let auto = gid::select_gid(table, false, gid::GidRule::Scored);
    let auto_txt = auto.as_ref().map(|c| format!("without -x the tools choose {}", c.reason)).unwrap_or_else(|| "without -x the tools find no GID".into());
    if let Some(x) = forced {
        let Some(e) = table.iter().find(|e| e.index == x) else {
            return Check::fail(name, format!("-x {x}: GID index {x} is empty"), v2.map(|g| format!("use -x {} (RoCE v2, IPv4)", g.index)).unwrap_or_default());
        };
        if v2.as_ref().is_some_and(|g| g.index != x) {
            let g = v2.unwrap_or_else(|| e.clone());
            return Check::warn(
                name,
                format!("-x {x} is {}, not the RoCE v2 IPv4 GID (index {}: {}); a peer on RoCE v2 IPv4 cannot talk to it", gid::describe(e), g.index, gid::describe(&g)),
                format!("use -x {} on both sides", g.index),
            );
        }
        return Check::ok(name, format!("-x {x}: {}", gid::describe(e)));
    }
    match (v2, auto) {
        (Some(g), Some(c)) if c.index == g.index => {
            Check::ok(name, format!("RoCE v2 GID of IPv4 {} is index {}; {}", v4_of(&g), g.index, auto_txt))
        }
        (Some(g), _) => Check::warn(
            name,
            format!("RoCE v2 GID of IPv4 {} is index {}, but {auto_txt}", v4_of(&g), g.index),
            format!("give -x {} to every tool", g.index),
        ),
        (None, _) if v4.is_empty() => Check::warn(
            name,
            format!("no RoCE v2 IPv4 GID ({nd} has no IPv4 address); {auto_txt}"),
            format!("ip addr add ADDR/PREFIX dev {nd}, or use the same IPv6 GID type on both sides"),
        ),
        (None, _) => Check::fail(
            name,
            format!("{nd} has IPv4 {} but the port has no RoCE v2 GID for it; {auto_txt}", v4.join(" ")),
            format!("ip link set dev {nd} down; ip link set dev {nd} up (the GID table is rebuilt), or check the kernel's RoCE v2 support"),
        ),
    }
}

fn v4_of(e: &GidEntry) -> String {
    format!("{}.{}.{}.{}", e.gid[12], e.gid[13], e.gid[14], e.gid[15])
}

/// The largest IB MTU (256..4096) a RoCE frame of `netdev_mtu` bytes carries: rxe's rule, the
/// netdev MTU less 80 bytes of headers (IP, UDP, BTH, RETH, ICRC) rounded down.
pub fn roce_mtu_for(netdev_mtu: u64) -> Option<u32> {
    let room = netdev_mtu.checked_sub(80)?;
    [4096u32, 2048, 1024, 512, 256].into_iter().find(|m| u64::from(*m) <= room)
}

pub fn mtu_check(name: String, nd_mtu: Option<u64>, active: Option<u32>, nd: &str) -> Check {
    let Some(n) = nd_mtu else {
        return Check::warn(name, format!("{nd}'s MTU is unreadable"), "");
    };
    let fit = roce_mtu_for(n);
    match (active, fit) {
        (_, None) => Check::fail(name, format!("netdev MTU {n} is too small for RoCE (256-byte payloads need 336)"), format!("ip link set dev {nd} mtu 1500")),
        (None, Some(f)) => Check::ok(name, format!("netdev MTU {n}: RoCE active MTU {f} (derived; the device could not be opened to ask)")),
        (Some(a), Some(f)) if a > f => Check::fail(
            name,
            format!("active MTU {a} does not fit in netdev MTU {n} (at most {f}): large messages are dropped"),
            format!("ip link set dev {nd} mtu {}, or run the tools with -m {f}", u64::from(a) + 80),
        ),
        (Some(a), Some(f)) if a < f => Check::warn(
            name,
            format!("active MTU {a} for netdev MTU {n}, which carries {f}"),
            "the device caps its MTU (check the NIC's firmware settings)",
        ),
        (Some(a), Some(_)) => Check::ok(name, format!("active MTU {a} for netdev MTU {n}")),
    }
}

/// RLIMIT_MEMLOCK's soft limit from `limits` text: `None` for unlimited.
pub fn parse_memlock(limits: &str) -> Option<Option<u64>> {
    let line = limits.lines().find(|l| l.starts_with("Max locked memory"))?;
    let soft = line["Max locked memory".len()..].split_whitespace().next()?;
    if soft == "unlimited" {
        return Some(None);
    }
    soft.parse().ok().map(Some)
}

/// CAP_IPC_LOCK (bit 14) in `CapEff:` of `status` text.
pub fn has_ipc_lock(status: &str) -> bool {
    status
        .lines()
        .find_map(|l| l.strip_prefix("CapEff:"))
        .and_then(|h| u64::from_str_radix(h.trim(), 16).ok())
        .is_some_and(|c| c & (1 << 14) != 0)
}

fn memlock(env: &Env) -> Check {
    let name = "memlock";
    let limits = std::fs::read_to_string(env.proc_root.join("self/limits")).unwrap_or_default();
    let status = std::fs::read_to_string(env.proc_root.join("self/status")).unwrap_or_default();
    let soft = match parse_memlock(&limits) {
        None => return Check::warn(name, "RLIMIT_MEMLOCK unreadable (no /proc/self/limits)", ""),
        Some(None) => return Check::ok(name, "RLIMIT_MEMLOCK unlimited"),
        Some(Some(b)) => b,
    };
    let what = format!(
        "RLIMIT_MEMLOCK is {}; a default ib_write_bw (-s 65536, one QP) registers {} (send and target areas) and the queue rings besides; the doctor asks for {}",
        human_bytes(soft),
        human_bytes(DEFAULT_TEST_MR),
        human_bytes(MEMLOCK_NEED)
    );
    let fix = "ulimit -l unlimited (for a service: LimitMEMLOCK=infinity; for users: memlock in /etc/security/limits.conf)";
    if soft >= MEMLOCK_NEED {
        return Check::ok(name, format!("RLIMIT_MEMLOCK is {}: bw tests up to -s {} fit", human_bytes(soft), human_bytes(soft / 2)));
    }
    if has_ipc_lock(&status) {
        return Check::warn(name, format!("{what}; this process has CAP_IPC_LOCK, which lifts the limit for it, but not for users without it"), fix);
    }
    Check::fail(name, format!("{what}: registration fails (ENOMEM / 'Cannot allocate memory')"), fix)
}

/// Who the access check ran as, in words.
fn who(uid: u32) -> String {
    if uid == 0 {
        "root".into()
    } else {
        format!("uid {uid}")
    }
}

fn access(env: &Env, devs: &[String]) -> Vec<Check> {
    let mut out = Vec::new();
    let ib = env.dev_root.join("infiniband");
    let verbs_class = env.sys.verbs_class();
    for u in sorted_names(&verbs_class) {
        let ibdev = attr(&verbs_class.join(&u).join("ibdev")).unwrap_or_default();
        if !devs.contains(&ibdev) {
            continue;
        }
        let node = ib.join(&u);
        let name = format!("{ibdev} access");
        out.push(if !node.exists() {
            Check::fail(name, format!("{} is missing (no device node for {ibdev})", node.display()), "modprobe ib_uverbs; check that udev created /dev/infiniband")
        } else {
            match (env.open_rw)(&node) {
                Ok(()) => Check::ok(name, format!("{} opens for read/write as {}", node.display(), who(env.uid))),
                Err(e) => Check::fail(
                    name,
                    format!("{} does not open for read/write as {} ({e})", node.display(), who(env.uid)),
                    format!("chmod 666 {} (persistently: a udev rule KERNEL==\"uverbs*\", MODE=\"0666\"), or run as a user in the device's group", node.display()),
                ),
            }
        });
    }
    for d in devs {
        let has = sorted_names(&verbs_class).iter().any(|u| attr(&verbs_class.join(u).join("ibdev")).as_deref() == Some(d.as_str()));
        if !has {
            out.push(Check::fail(
                format!("{d} access"),
                format!("{d} has no uverbs device in {}: no verbs program can open it", verbs_class.display()),
                "modprobe ib_uverbs",
            ));
        }
    }
    if devs.is_empty() {
        return out;
    }
    let cm = ib.join("rdma_cm");
    out.push(if !cm.exists() {
        Check::warn("rdma_cm access", format!("{} is missing: -R and rping need it", cm.display()), "modprobe rdma_ucm")
    } else {
        match (env.open_rw)(&cm) {
            Ok(()) => Check::ok("rdma_cm access", format!("{} opens for read/write as {}", cm.display(), who(env.uid))),
            Err(e) => Check::warn(
                "rdma_cm access",
                format!("{} does not open for read/write as {} ({e}): -R and rping fail", cm.display(), who(env.uid)),
                format!("chmod 666 {}", cm.display()),
            ),
        }
    });
    out
}

/// (total, free, page size in kB) from `/proc/meminfo` text.
pub fn parse_hugepages(meminfo: &str) -> Option<(u64, u64, u64)> {
    let get = |k: &str| {
        meminfo
            .lines()
            .find_map(|l| l.strip_prefix(k))
            .and_then(|v| v.trim_start_matches(':').split_whitespace().next()?.parse::<u64>().ok())
    };
    Some((get("HugePages_Total")?, get("HugePages_Free")?, get("Hugepagesize").unwrap_or(2048)))
}

fn hugepages(env: &Env) -> Check {
    let name = "hugepages";
    let text = std::fs::read_to_string(env.proc_root.join("meminfo")).unwrap_or_default();
    match parse_hugepages(&text) {
        None => Check::na(name, "no hugepage counters in /proc/meminfo"),
        Some((0, _, sz)) => Check::ok(name, format!("none reserved ({sz} kB pages); only --use_hugepages needs them (echo 64 > /proc/sys/vm/nr_hugepages)")),
        Some((t, 0, sz)) => Check::warn(name, format!("all {t} hugepages of {sz} kB are in use: --use_hugepages fails"), format!("echo {} > /proc/sys/vm/nr_hugepages", t + 64)),
        Some((t, f, sz)) => Check::ok(name, format!("{f} of {t} hugepages of {sz} kB free (for --use_hugepages)")),
    }
}

/// The CPU in field 39 of `/proc/self/stat` (after the command's closing parenthesis).
pub fn stat_cpu(stat: &str) -> Option<u32> {
    let rest = &stat[stat.rfind(')')? + 1..];
    // Fields after the comm start at field 3 (state); the CPU is field 39.
    rest.split_whitespace().nth(39 - 3).and_then(|c| c.parse().ok())
}

/// Whether a kernel cpulist (`0-3,8,10-11`) contains `cpu`.
pub fn cpulist_has(list: &str, cpu: u32) -> bool {
    list.trim().split(',').any(|r| match r.split_once('-') {
        Some((a, b)) => match (a.parse::<u32>(), b.parse::<u32>()) {
            (Ok(a), Ok(b)) => (a..=b).contains(&cpu),
            _ => false,
        },
        None => r.parse::<u32>().ok() == Some(cpu),
    })
}

fn numa(env: &Env, dev: &str) -> Check {
    let name = format!("{dev} NUMA");
    let devdir = env.sys.ibdev(dev).join("device");
    let Some(node) = attr(&devdir.join("numa_node")) else {
        return Check::na(name, format!("{dev} has no NUMA node in sysfs (a software device such as rxe)"));
    };
    let node: i64 = node.parse().unwrap_or(-1);
    if node < 0 {
        return Check::na(name, "the device reports no NUMA node (numa_node -1: one node, or the firmware does not say)");
    }
    let stat = std::fs::read_to_string(env.proc_root.join("self/stat")).unwrap_or_default();
    let Some(cpu) = stat_cpu(&stat) else {
        return Check::warn(name, format!("device on node {node}; the CPU this runs on is unknown"), "");
    };
    let list = attr(&env.sys.0.join(format!("devices/system/node/node{node}/cpulist"))).unwrap_or_default();
    if cpulist_has(&list, cpu) {
        Check::ok(name, format!("device on node {node}, this process on CPU {cpu} of node {node} (CPUs {list})"))
    } else {
        Check::warn(
            name,
            format!("device on node {node} (CPUs {list}), this process on CPU {cpu}: traffic crosses the socket interconnect"),
            format!("numactl --cpunodebind={node} --membind={node} ib_write_bw ... (or taskset -c {list})"),
        )
    }
}

fn pcie(env: &Env, dev: &str) -> Check {
    let name = format!("{dev} PCIe");
    let d = env.sys.ibdev(dev).join("device");
    let get = |f: &str| attr(&d.join(f));
    match (get("current_link_speed"), get("current_link_width"), get("max_link_speed"), get("max_link_width")) {
        (Some(cs), Some(cw), Some(ms), Some(mw)) => {
            if cs == ms && cw == mw {
                Check::ok(name, format!("{cs} x{cw} (the device's maximum)"))
            } else {
                Check::warn(
                    name,
                    format!("running at {cs} x{cw}, the device can do {ms} x{mw}: bandwidth is capped by the slot or link training"),
                    "move the card to a slot wired for its full width, check the BIOS PCIe settings, reseat it",
                )
            }
        }
        _ => Check::na(name, format!("n/a: {dev} has no PCIe link in sysfs (rxe and siw are software devices)")),
    }
}

fn governor(env: &Env) -> Check {
    let name = "CPU governor";
    let cpu = stat_cpu(&std::fs::read_to_string(env.proc_root.join("self/stat")).unwrap_or_default()).unwrap_or(0);
    let p = |c: u32| env.sys.0.join(format!("devices/system/cpu/cpu{c}/cpufreq/scaling_governor"));
    let Some(g) = attr(&p(cpu)).or_else(|| attr(&p(0))) else {
        return Check::na(name, "no cpufreq in sysfs (a VM, or a fixed clock)");
    };
    if g == "performance" {
        Check::ok(name, "performance")
    } else {
        Check::warn(
            name,
            format!("{g}: latency tests vary while the clock scales"),
            "cpupower frequency-set -g performance (or echo performance > /sys/devices/system/cpu/cpu*/cpufreq/scaling_governor)",
        )
    }
}
