//! Golden lines of every local check, healthy and failing, over a fake sysfs, /proc and /dev.

use std::net::IpAddr;

use super::local::{self, Env, Target};
use super::report::{Check, Level};
use super::*;
use crate::fake::FakeSys;

fn env(f: &FakeSys) -> Env {
    Env {
        sys: f.root(),
        proc_root: f.path("proc"),
        dev_root: f.path("dev"),
        boot_root: f.path("boot"),
        ifaddrs: vec![
            ("eth0".into(), "10.99.0.1".parse::<IpAddr>().unwrap()),
            ("eth0".into(), "fe80::fc3c:7aff:feba:5df3".parse::<IpAddr>().unwrap()),
            ("lo".into(), "127.0.0.1".parse::<IpAddr>().unwrap()),
        ],
        open_rw: Box::new(|_| Ok(())),
        uid: 1000,
        active_mtu: Box::new(|_, _| Some(1024)),
        providers: Default::default(),
        run_tool: Box::new(|_, _| panic!("the local checks run no tool")),
    }
}

fn healthy() -> FakeSys {
    let f = FakeSys::new();
    f.rxe("rxe0", "eth0", false);
    f.doctor_host("rxe0", "eth0");
    f
}

fn lines(e: &Env, t: &Target) -> Vec<String> {
    local::run_all(e, t).iter().map(Check::line).collect()
}

fn find(e: &Env, t: &Target, name: &str) -> Check {
    local::run_all(e, t).into_iter().find(|c| c.name == name).unwrap_or_else(|| panic!("no check {name}"))
}

#[test]
fn healthy_rxe_golden() {
    let f = healthy();
    let e = env(&f);
    let dev = f.path("dev").display().to_string();
    let want = [
        "ok    devices: rxe0 (1 port)".to_string(),
        "ok    rxe0/1 state: ACTIVE, LinkUp (port state, physical state)".into(),
        "ok    rxe0/1 link layer: Ethernet (RoCE: the tools need a GID, -x)".into(),
        "ok    rxe0/1 netdev: eth0 up (operstate up), IPv4 10.99.0.1, IPv6 fe80::fc3c:7aff:feba:5df3".into(),
        "ok    rxe0/1 GID: RoCE v2 GID of IPv4 10.99.0.1 is index 1; without -x the tools choose GID index 1: RoCE v2, IPv4 10.99.0.1 on eth0 (preferred: RoCE v2 + IPv4; index 0 is RoCE v2 IPv6 link-local)".into(),
        "ok    rxe0/1 MTU: active MTU 1024 for netdev MTU 1500".into(),
        "ok    memlock: RLIMIT_MEMLOCK is 8 MiB: bw tests up to -s 4 MiB fit".into(),
        format!("ok    rxe0 access: {dev}/infiniband/uverbs0 opens for read/write as uid 1000"),
        format!("ok    rdma_cm access: {dev}/infiniband/rdma_cm opens for read/write as uid 1000"),
        "ok    hugepages: none reserved (2048 kB pages); only --use_hugepages needs them (echo 64 > /proc/sys/vm/nr_hugepages)".into(),
        "n/a   rxe0 NUMA: rxe0 has no NUMA node in sysfs (a software device such as rxe)".into(),
        "n/a   rxe0 PCIe: n/a: rxe0 has no PCIe link in sysfs (rxe and siw are software devices)".into(),
        "n/a   CPU governor: no cpufreq in sysfs (a VM, or a fixed clock)".into(),
    ];
    assert_eq!(lines(&e, &Target::default()), want);
    let (mut o, mut err) = (Vec::new(), Vec::new());
    assert_eq!(main_with(&e, &["--json".into()], &mut o, &mut err), 0);
    let v: serde_json::Value = serde_json::from_slice(&o).unwrap();
    assert_eq!(v["ok"], true);
    assert_eq!(v["checks"][0]["check"], "devices");
    assert_eq!(v["checks"][0]["status"], "ok");
    assert_eq!(v["checks"].as_array().map(Vec::len), Some(13));
    let (mut o, mut err) = (Vec::new(), Vec::new());
    assert_eq!(main_with(&e, &[], &mut o, &mut err), 0);
    assert!(String::from_utf8(o).unwrap().ends_with("doctor: 10 ok, 0 warn, 0 FAIL, 3 n/a\n"));
}

#[test]
fn no_device() {
    let f = FakeSys::new();
    f.file("class/net/lo/carrier", "1\n");
    f.file("class/net/ens3/carrier", "1\n");
    f.dir("class/infiniband");
    let e = env(&f);
    let c = find(&e, &Target::default(), "devices");
    let ib = f.path("class/infiniband").display().to_string();
    assert_eq!(
        c.line(),
        format!("FAIL  devices: no RDMA device in {ib}; fix: modprobe rdma_rxe && rdma link add rxe0 type rxe netdev ens3 (or load the NIC's RDMA driver: modprobe mlx5_ib)")
    );
    f.dir("module/rdma_rxe");
    let c = find(&e, &Target::default(), "devices");
    assert!(c.fix.unwrap().starts_with("rdma link add rxe0 type rxe netdev ens3 (rdma_rxe is loaded"));
    let (mut o, mut err) = (Vec::new(), Vec::new());
    assert_eq!(main_with(&e, &[], &mut o, &mut err), 1);
    let t = Target { dev: Some("mlx5_0".into()), ..Default::default() };
    f.rxe("rxe0", "ens3", false);
    assert_eq!(find(&e, &t, "devices").line(), "FAIL  devices: no RDMA device \"mlx5_0\" (devices: rxe0); fix: use -d rxe0");
}

#[test]
fn netdev_down() {
    let f = healthy();
    f.file("class/infiniband/rxe0/ports/1/state", "1: DOWN\n");
    f.file("class/infiniband/rxe0/ports/1/phys_state", "3: Disabled\n");
    f.file("class/net/eth0/carrier", "0\n");
    f.file("class/net/eth0/operstate", "down\n");
    let e = env(&f);
    let t = Target::default();
    assert_eq!(
        find(&e, &t, "rxe0/1 state").line(),
        "FAIL  rxe0/1 state: DOWN, Disabled: the port is not ACTIVE (its link is down: netdev eth0); fix: ip link set dev eth0 up, and check the cable or the peer's port"
    );
    assert_eq!(
        find(&e, &t, "rxe0/1 netdev").line(),
        "FAIL  rxe0/1 netdev: eth0 is down (operstate down, carrier 0): RoCE traffic cannot leave; fix: ip link set dev eth0 up"
    );
    let (mut o, mut err) = (Vec::new(), Vec::new());
    assert_eq!(main_with(&e, &[], &mut o, &mut err), 1);
}

#[test]
fn no_ipv4() {
    let f = healthy();
    let mut e = env(&f);
    e.ifaddrs.retain(|(_, a)| a.is_ipv6());
    let c = find(&e, &Target::default(), "rxe0/1 netdev");
    assert_eq!(c.level, Level::Warn);
    assert!(c.line().ends_with("no IPv4 address, so no RoCE v2 IPv4 GID (the tools' default); fix: ip addr add ADDR/PREFIX dev eth0"), "{}", c.line());
}

#[test]
fn gid_choices() {
    let f = FakeSys::new();
    f.rxe("rxe0", "eth0", true);
    f.doctor_host("rxe0", "eth0");
    let e = env(&f);
    let t = Target { gid_index: Some(5), ..Default::default() };
    assert_eq!(
        find(&e, &t, "rxe0/1 GID").line(),
        "warn  rxe0/1 GID: -x 5 is RoCE v1, IPv4 10.99.0.1 on eth0, not the RoCE v2 IPv4 GID (index 1: RoCE v2, IPv4 10.99.0.1 on eth0); a peer on RoCE v2 IPv4 cannot talk to it; fix: use -x 1 on both sides"
    );
    let t = Target { gid_index: Some(1), ..Default::default() };
    assert_eq!(find(&e, &t, "rxe0/1 GID").line(), "ok    rxe0/1 GID: -x 1: RoCE v2, IPv4 10.99.0.1 on eth0");
    let t = Target { gid_index: Some(3), ..Default::default() };
    assert_eq!(find(&e, &t, "rxe0/1 GID").line(), "FAIL  rxe0/1 GID: -x 3: GID index 3 is empty; fix: use -x 1 (RoCE v2, IPv4)");
    // The IPv4 GID gone while the netdev has an IPv4 address.
    f.file("class/infiniband/rxe0/ports/1/gids/1", "0000:0000:0000:0000:0000:0000:0000:0000\n");
    f.file("class/infiniband/rxe0/ports/1/gids/5", "0000:0000:0000:0000:0000:0000:0000:0000\n");
    let c = find(&e, &Target::default(), "rxe0/1 GID");
    assert_eq!(c.level, Level::Fail);
    assert!(c.detail.starts_with("eth0 has IPv4 10.99.0.1 but the port has no RoCE v2 GID for it; without -x the tools choose GID index"), "{}", c.detail);
}

#[test]
fn mtu_lines() {
    let n = || "MTU".to_string();
    assert_eq!(local::mtu_check(n(), Some(1500), Some(1024), "eth0").line(), "ok    MTU: active MTU 1024 for netdev MTU 1500");
    assert_eq!(
        local::mtu_check(n(), Some(1500), Some(4096), "eth0").line(),
        "FAIL  MTU: active MTU 4096 does not fit in netdev MTU 1500 (at most 1024): large messages are dropped; fix: ip link set dev eth0 mtu 4176, or run the tools with -m 1024"
    );
    assert_eq!(
        local::mtu_check(n(), Some(9000), Some(1024), "eth0").line(),
        "warn  MTU: active MTU 1024 for netdev MTU 9000, which carries 4096; fix: the device caps its MTU (check the NIC's firmware settings)"
    );
    assert_eq!(
        local::mtu_check(n(), Some(1000), None, "eth0").line(),
        "ok    MTU: netdev MTU 1000: RoCE active MTU 512 (derived; the device could not be opened to ask)"
    );
    assert_eq!(local::mtu_check(n(), Some(300), None, "eth0").level, Level::Fail);
    assert_eq!(local::roce_mtu_for(1500), Some(1024));
    assert_eq!(local::roce_mtu_for(9000), Some(4096));
    assert_eq!(local::roce_mtu_for(40), None);
}

#[test]
fn memlock_lines() {
    let f = healthy();
    let e = env(&f);
    f.file("proc/self/limits", "Max locked memory         65536                65536                bytes     \n");
    assert_eq!(
        find(&e, &Target::default(), "memlock").line(),
        "FAIL  memlock: RLIMIT_MEMLOCK is 64 KiB; a default ib_write_bw (-s 65536, one QP) registers 128 KiB (send and target areas) and the queue rings besides; the doctor asks for 256 KiB: registration fails (ENOMEM / 'Cannot allocate memory'); fix: ulimit -l unlimited (for a service: LimitMEMLOCK=infinity; for users: memlock in /etc/security/limits.conf)"
    );
    f.file("proc/self/status", "Uid:\t0\t0\t0\t0\nCapEff:\t000001ffffffffff\n");
    let c = find(&e, &Target::default(), "memlock");
    assert_eq!(c.level, Level::Warn);
    assert!(c.detail.ends_with("this process has CAP_IPC_LOCK, which lifts the limit for it, but not for users without it"));
    f.file("proc/self/limits", "Max locked memory         unlimited            unlimited            bytes     \n");
    assert_eq!(find(&e, &Target::default(), "memlock").line(), "ok    memlock: RLIMIT_MEMLOCK unlimited");
    assert_eq!(local::parse_memlock("nothing"), None);
    assert!(!local::has_ipc_lock("CapEff:\t0000000000000000"));
    assert!(local::has_ipc_lock("CapEff:\t0000000000004000"));
}

#[test]
fn access_denied() {
    let f = healthy();
    let mut e = env(&f);
    e.open_rw = Box::new(|p| if p.ends_with("uverbs0") { Err("Permission denied".into()) } else { Ok(()) });
    e.uid = 65534;
    let dev = f.path("dev").display().to_string();
    assert_eq!(
        find(&e, &Target::default(), "rxe0 access").line(),
        format!("FAIL  rxe0 access: {dev}/infiniband/uverbs0 does not open for read/write as uid 65534 (Permission denied); fix: chmod 666 {dev}/infiniband/uverbs0 (persistently: a udev rule KERNEL==\"uverbs*\", MODE=\"0666\"), or run as a user in the device's group")
    );
    std::fs::remove_file(f.path("dev/infiniband/rdma_cm")).unwrap();
    assert_eq!(
        find(&e, &Target::default(), "rdma_cm access").line(),
        format!("warn  rdma_cm access: {dev}/infiniband/rdma_cm is missing: -R and rping need it; fix: modprobe rdma_ucm")
    );
    std::fs::remove_file(f.path("dev/infiniband/uverbs0")).unwrap();
    let cls = f.path("class/infiniband_verbs").display().to_string();
    std::fs::rename(f.path("class/infiniband_verbs"), f.path("class/verbs_gone")).unwrap();
    assert_eq!(
        find(&e, &Target::default(), "rxe0 access").line(),
        format!("FAIL  rxe0 access: rxe0 has no uverbs device in {cls}: no verbs program can open it; fix: modprobe ib_uverbs")
    );
    std::fs::rename(f.path("class/verbs_gone"), f.path("class/infiniband_verbs")).unwrap();
    assert!(find(&e, &Target::default(), "rxe0 access").line().contains("is missing (no device node for rxe0); fix: modprobe ib_uverbs"));
}

#[test]
fn hugepages_numa_pcie_governor() {
    let f = healthy();
    let e = env(&f);
    let t = Target::default();
    f.file("proc/meminfo", "HugePages_Total:      16\nHugePages_Free:        0\nHugepagesize:       2048 kB\n");
    assert_eq!(
        find(&e, &t, "hugepages").line(),
        "warn  hugepages: all 16 hugepages of 2048 kB are in use: --use_hugepages fails; fix: echo 80 > /proc/sys/vm/nr_hugepages"
    );
    f.file("proc/meminfo", "HugePages_Total:      16\nHugePages_Free:        9\nHugepagesize:       2048 kB\n");
    assert_eq!(find(&e, &t, "hugepages").line(), "ok    hugepages: 9 of 16 hugepages of 2048 kB free (for --use_hugepages)");
    // A PCI device on node 1; this process on CPU 2 (node 0).
    f.file("class/infiniband/rxe0/device/numa_node", "1\n");
    f.file("devices/system/node/node1/cpulist", "8-15\n");
    assert_eq!(
        find(&e, &t, "rxe0 NUMA").line(),
        "warn  rxe0 NUMA: device on node 1 (CPUs 8-15), this process on CPU 2: traffic crosses the socket interconnect; fix: numactl --cpunodebind=1 --membind=1 ib_write_bw ... (or taskset -c 8-15)"
    );
    f.file("devices/system/node/node1/cpulist", "0-3,8-15\n");
    assert_eq!(find(&e, &t, "rxe0 NUMA").line(), "ok    rxe0 NUMA: device on node 1, this process on CPU 2 of node 1 (CPUs 0-3,8-15)");
    f.file("class/infiniband/rxe0/device/numa_node", "-1\n");
    assert_eq!(find(&e, &t, "rxe0 NUMA").level, Level::Na);
    for (k, v) in [("current_link_speed", "8.0 GT/s PCIe"), ("current_link_width", "8"), ("max_link_speed", "16.0 GT/s PCIe"), ("max_link_width", "16")] {
        f.file(&format!("class/infiniband/rxe0/device/{k}"), &format!("{v}\n"));
    }
    assert_eq!(
        find(&e, &t, "rxe0 PCIe").line(),
        "warn  rxe0 PCIe: running at 8.0 GT/s PCIe x8, the device can do 16.0 GT/s PCIe x16: bandwidth is capped by the slot or link training; fix: move the card to a slot wired for its full width, check the BIOS PCIe settings, reseat it"
    );
    f.file("class/infiniband/rxe0/device/current_link_speed", "16.0 GT/s PCIe\n");
    f.file("class/infiniband/rxe0/device/current_link_width", "16\n");
    assert_eq!(find(&e, &t, "rxe0 PCIe").line(), "ok    rxe0 PCIe: 16.0 GT/s PCIe x16 (the device's maximum)");
    f.file("devices/system/cpu/cpu2/cpufreq/scaling_governor", "powersave\n");
    assert_eq!(
        find(&e, &t, "CPU governor").line(),
        "warn  CPU governor: powersave: latency tests vary while the clock scales; fix: cpupower frequency-set -g performance (or echo performance > /sys/devices/system/cpu/cpu*/cpufreq/scaling_governor)"
    );
    f.file("devices/system/cpu/cpu2/cpufreq/scaling_governor", "performance\n");
    assert_eq!(find(&e, &t, "CPU governor").line(), "ok    CPU governor: performance");
}

#[test]
fn small_parsers() {
    assert_eq!(local::stat_cpu("1 (a) b c"), None);
    assert_eq!(local::stat_cpu(""), None);
    assert!(local::cpulist_has("0-3,8", 8));
    assert!(!local::cpulist_has("0-3,8", 5));
    assert!(!local::cpulist_has("x-y,", 0));
    assert_eq!(local::parse_hugepages("HugePages_Total: 4\nHugePages_Free: 2\n"), Some((4, 2, 2048)));
}

#[test]
fn infiniband_port() {
    let f = healthy();
    f.file("class/infiniband/rxe0/ports/1/link_layer", "InfiniBand\n");
    f.file("class/infiniband/rxe0/ports/1/state", "2: INIT\n");
    let e = env(&f);
    let t = Target::default();
    assert_eq!(
        find(&e, &t, "rxe0/1 state").line(),
        "FAIL  rxe0/1 state: INIT, LinkUp: the link is up but no subnet manager made the port ACTIVE; fix: start a subnet manager on the fabric (systemctl start opensm)"
    );
    assert_eq!(
        find(&e, &t, "rxe0/1 link layer").line(),
        "FAIL  rxe0/1 link layer: InfiniBand with LID 0: no subnet manager assigned one; fix: systemctl start opensm (on one host of the fabric)"
    );
}

#[test]
fn arguments() {
    let f = healthy();
    let e = env(&f);
    let (mut o, mut err) = (Vec::new(), Vec::new());
    assert_eq!(main_with(&e, &["--bogus".into()], &mut o, &mut err), 2);
    let (mut o, mut err) = (Vec::new(), Vec::new());
    assert_eq!(main_with(&e, &["--serve".into(), "host".into()], &mut o, &mut err), 2);
    assert!(String::from_utf8(err).unwrap().contains("--serve takes no PEER"));
    let (mut o, mut err) = (Vec::new(), Vec::new());
    assert_eq!(main_with(&e, &["-i".into(), "2".into()], &mut o, &mut err), 1);
    assert!(String::from_utf8(o).unwrap().contains("FAIL  rxe0/2 port: rxe0 has no port 2; fix: use -i with one of: 1"));
}
