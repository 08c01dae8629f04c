//! `doctor --gpu` over fake hosts: no GPU (every check n/a), and the two-socket GPU host of
//! `FakeSys::gpu_host` in good and bad states.

use super::gpu::{checks, NAMES};
use super::report::{Check, Level};
use crate::fake::FakeSys;
use crate::gpu::host::Roots;

fn roots(f: &FakeSys) -> Roots {
    Roots {
        sys: f.root(),
        proc_root: f.path("proc"),
        boot: f.path("boot"),
    }
}

fn get(cs: &[Check], name: &str) -> Check {
    cs.iter()
        .find(|c| c.name == name)
        .cloned()
        .unwrap_or_else(|| panic!("no check {name}: {cs:#?}"))
}

const S0: &str = "pci0000:00/0000:00:01.1/0000:01:00.0/0000:02:00.0/0000:03:00.0";

/// The GPU host with a good GDR setup: the open driver 550, nvidia_peermem, a 6.8 kernel
/// with dma-buf, the IOMMU in passthrough, config space readable (as root) with ACS off.
fn good() -> FakeSys {
    let f = FakeSys::new();
    f.gpu_host();
    f.file("proc/driver/nvidia/version", "NVRM version: NVIDIA UNIX Open Kernel Module for x86_64  550.54.15  Release Build  (dvs-builder@U16-I3-B03-4-3)  Tue Mar  5 22:15:33 UTC 2024\n");
    f.dir("module/nvidia");
    f.dir("module/nvidia_peermem");
    f.file("proc/sys/kernel/osrelease", "6.8.0-45-generic\n");
    f.file(
        "boot/config-6.8.0-45-generic",
        "CONFIG_DMA_SHARED_BUFFER=y\n",
    );
    f.file(
        "proc/cmdline",
        "BOOT_IMAGE=/vmlinuz ro intel_iommu=on iommu=pt\n",
    );
    f.dir("class/iommu/dmar0");
    f.file("kernel/iommu_groups/1/type", "identity\n");
    for d in [
        "0000:07:00.0",
        "0000:0f:00.0",
        "0000:83:00.0",
        "0000:0c:00.0",
        "0000:20:00.0",
        "0000:84:00.0",
        "0000:41:00.0",
    ] {
        let dir = std::fs::read_link(f.path(&format!("bus/pci/devices/{d}"))).unwrap();
        let rel = dir.to_str().unwrap().trim_start_matches("../../../");
        let depth = rel.split('/').count() + 1;
        f.link(
            &format!("{rel}/iommu_group"),
            &format!("{}kernel/iommu_groups/1", "../".repeat(depth)),
        );
    }
    for b in std::fs::read_dir(f.path("bus/pci/devices")).unwrap() {
        let b = b.unwrap().file_name().into_string().unwrap();
        let rel = std::fs::read_link(f.path(&format!("bus/pci/devices/{b}"))).unwrap();
        let rel = rel
            .to_str()
            .unwrap()
            .trim_start_matches("../../../")
            .to_string();
        f.bytes(&format!("{rel}/config"), &FakeSys::acs_config(0x005f, 0));
    }
    f
}

#[test]
fn no_gpu_every_check_is_na() {
    let f = FakeSys::new();
    f.rxe("rxe0", "eth0", false);
    f.dir("class/iommu/dmar0");
    let cs = checks(&roots(&f));
    assert_eq!(
        cs.iter().map(|c| c.name.as_str()).collect::<Vec<_>>(),
        NAMES
    );
    assert!(
        cs.iter()
            .all(|c| c.level == Level::Na && c.detail.starts_with("no GPU (")),
        "{cs:#?}"
    );
}

#[test]
fn a_good_gdr_host() {
    let f = good();
    let cs = checks(&roots(&f));
    let bad: Vec<&Check> = cs.iter().filter(|c| c.level != Level::Ok).collect();
    // Only the distances of the NICs without a GPU behind their own switch warn.
    assert_eq!(
        bad.iter().map(|c| c.name.as_str()).collect::<Vec<_>>(),
        ["GPU distance mlx5_1", "GPU distance mlx5_3"]
    );
    assert_eq!(
        get(&cs, "GPU driver").line(),
        "ok    GPU driver: nvidia 550.54.15 (open kernel modules) for 3 GPU(s)"
    );
    assert_eq!(get(&cs, "GPU peer memory").line(), "ok    GPU peer memory: nvidia_peermem loaded: GPU memory registers through the ordinary REG_MR (--use_cuda)");
    assert!(get(&cs, "GPU dma-buf").line().starts_with("ok    GPU dma-buf: kernel 6.8.0-45-generic: dma-buf and dma-buf MRs (CONFIG_DMA_SHARED_BUFFER=y in "));
    assert_eq!(get(&cs, "GPU IOMMU").line(), "ok    GPU IOMMU: passthrough: every GPU's and NIC's IOMMU group is identity (cmdline: intel_iommu=on iommu=pt)");
    assert_eq!(
        get(&cs, "GPU ACS GPU0-mlx5_0").line(),
        "ok    GPU ACS GPU0-mlx5_0: 3 bridge(s) between GPU0 and mlx5_0 (PIX), 3 with ACS: none redirects peer traffic (ReqRedir- CmpltRedir- EgressCtrl-)"
    );
    assert_eq!(
        get(&cs, "GPU distance mlx5_0").line(),
        "ok    GPU distance mlx5_0: nearest GPU0 (0000:07:00.0, PIX: one PCIe switch); GPU0 PIX, GPU1 PXB, GPU2 SYS"
    );
    assert_eq!(
        get(&cs, "GPU distance mlx5_3").line(),
        "warn  GPU distance mlx5_3: nearest GPU0 (0000:07:00.0, NODE: two host bridges of one NUMA node); GPU0 NODE, GPU1 NODE, GPU2 SYS: no GPU on mlx5_3's host bridge; fix: use mlx5_3 with a GPU of its NUMA node (0), or test the cross-NUMA case on purpose"
    );
    assert_eq!(
        get(&cs, "GPU NUMA").detail,
        "GPU0 0000:07:00.0 node 0, GPU1 0000:0f:00.0 node 0, GPU2 0000:83:00.0 node 1, mlx5_0 0000:0c:00.0 node 0, mlx5_1 0000:20:00.0 node 0, mlx5_2 0000:84:00.0 node 1, mlx5_3 0000:41:00.0 node 0"
    );
    // 3 GPUs x 4 NICs ACS lines, 4 distance lines.
    assert_eq!(
        cs.iter().filter(|c| c.name.starts_with("GPU ACS ")).count(),
        12
    );
}

#[test]
fn acs_redirect_on_a_switch_port_fails_with_setpci() {
    let f = good();
    f.bytes(
        &format!("devices/{S0}/0000:04:00.0/config"),
        &FakeSys::acs_config(0x005f, 0x001d),
    );
    let cs = checks(&roots(&f));
    let c = get(&cs, "GPU ACS GPU0-mlx5_0");
    assert_eq!(
        c.line(),
        "FAIL  GPU ACS GPU0-mlx5_0: 3 bridge(s) between GPU0 and mlx5_0 (PIX): 0000:04:00.0 ACSCtl: SrcValid+ TransBlk- ReqRedir+ CmpltRedir+ UpstreamFwd+ EgressCtrl- DirectTrans-: peer traffic is redirected up to the root complex; fix: setpci -s 0000:04:00.0 ECAP_ACS+0x6.w=0000 (until reboot; for good: the BIOS's ACS setting or a boot script)"
    );
    // Across the host bridge the traffic goes up anyway: a warning.
    assert_eq!(get(&cs, "GPU ACS GPU0-mlx5_1").level, Level::Warn);
    assert_eq!(get(&cs, "GPU ACS GPU2-mlx5_2").level, Level::Ok);
    // Not root: 64 bytes of config space.
    f.bytes(&format!("devices/{S0}/0000:04:00.0/config"), &[0u8; 64]);
    let c = get(&checks(&roots(&f)), "GPU ACS GPU0-mlx5_0");
    assert_eq!(c.level, Level::Na);
    assert!(
        c.detail
            .contains("0000:04:00.0 is unreadable (only root reads past 64 bytes)"),
        "{}",
        c.detail
    );
}

#[test]
fn missing_driver_peermem_and_a_translating_iommu() {
    let f = good();
    std::fs::remove_dir(f.path("module/nvidia_peermem")).unwrap();
    let cs = checks(&roots(&f));
    let p = get(&cs, "GPU peer memory");
    assert_eq!(p.level, Level::Warn, "dma-buf still works: {p:?}");
    assert!(p.line().contains("'Couldn't allocate MR'; the dma-buf path works without it; fix: modprobe nvidia-peermem"), "{}", p.line());
    // The proprietary module: no dma-buf, so no peer memory is a FAIL.
    f.file("proc/driver/nvidia/version", "NVRM version: NVIDIA UNIX x86_64 Kernel Module  535.104.05  Sat Aug 19 01:15:15 UTC 2023\n");
    let cs = checks(&roots(&f));
    assert_eq!(get(&cs, "GPU peer memory").level, Level::Fail);
    assert_eq!(get(&cs, "GPU dma-buf").level, Level::Warn);
    assert!(get(&cs, "GPU dma-buf")
        .detail
        .contains("the proprietary nvidia kernel module: no dma-buf export"));
    // No driver at all.
    std::fs::remove_file(f.path("proc/driver/nvidia/version")).unwrap();
    std::fs::remove_dir(f.path("module/nvidia")).unwrap();
    let d = get(&checks(&roots(&f)), "GPU driver");
    assert_eq!(d.level, Level::Fail);
    assert!(d
        .detail
        .starts_with("3 NVIDIA GPU(s) but no nvidia kernel module"));
    // The IOMMU translating for the GPUs.
    f.file("kernel/iommu_groups/1/type", "DMA-FQ\n");
    let i = get(&checks(&roots(&f)), "GPU IOMMU");
    assert_eq!(i.level, Level::Warn);
    assert!(
        i.line()
            .contains("translating for GPU0 DMA-FQ, GPU1 DMA-FQ, GPU2 DMA-FQ, mlx5_0 DMA-FQ"),
        "{}",
        i.line()
    );
    assert!(i.line().contains("fix: boot with iommu=pt"));
    // No IOMMU unit: off.
    std::fs::remove_dir(f.path("class/iommu/dmar0")).unwrap();
    assert!(get(&checks(&roots(&f)), "GPU IOMMU")
        .line()
        .starts_with("ok    GPU IOMMU: off (no unit in /sys/class/iommu;"));
}

#[test]
fn gpu_flag_adds_the_checks_to_doctor() {
    let f = FakeSys::new();
    f.rxe("rxe0", "eth0", false);
    f.doctor_host("rxe0", "eth0");
    let e = super::Env {
        sys: f.root(),
        proc_root: f.path("proc"),
        dev_root: f.path("dev"),
        boot_root: f.path("boot"),
        ifaddrs: vec![("eth0".into(), "10.99.0.1".parse().unwrap())],
        open_rw: Box::new(|_| Ok(())),
        uid: 1000,
        active_mtu: Box::new(|_, _| Some(1024)),
        providers: Default::default(),
        run_tool: Box::new(|_, _| panic!("no tool runs without PEER")),
    };
    let (mut o, mut err) = (Vec::new(), Vec::new());
    assert_eq!(super::main_with(&e, &["--gpu".into()], &mut o, &mut err), 0);
    let text = String::from_utf8(o).unwrap();
    let gpu: Vec<&str> = text.lines().filter(|l| l.contains(" GPU ")).collect();
    assert_eq!(gpu.len(), NAMES.len(), "{text}");
    assert!(gpu.iter().all(|l| l.starts_with("n/a   GPU ")), "{text}");
}

/// With PEER and no GPU here the GPU-memory WRITE is one `n/a` line with the reason and runs
/// nothing (the env's tool runner panics if called); `--gpu-mem` forces the runs.
#[test]
fn gpu_peer_write_without_a_gpu_is_na_and_forced_runs_both_ways() {
    let f = FakeSys::new();
    f.rxe("rxe0", "eth0", false);
    f.doctor_host("rxe0", "eth0");
    let mut e = super::Env {
        sys: f.root(),
        proc_root: f.path("proc"),
        dev_root: f.path("dev"),
        boot_root: f.path("boot"),
        ifaddrs: vec![("eth0".into(), "10.99.0.1".parse().unwrap())],
        open_rw: Box::new(|_| Ok(())),
        uid: 1000,
        active_mtu: Box::new(|_, _| Some(1024)),
        providers: Default::default(),
        run_tool: Box::new(|_, _| panic!("no GPU: nothing may run")),
    };
    // Port 1 on loopback: the TCP check fails at once; the GPU lines still come.
    let args: Vec<String> = ["--gpu", "-p", "1", "127.0.0.1"].map(String::from).to_vec();
    let (mut o, mut err) = (Vec::new(), Vec::new());
    super::main_with(&e, &args, &mut o, &mut err);
    let text = String::from_utf8(o).unwrap();
    let line = text.lines().find(|l| l.contains("GPU peer WRITE")).unwrap_or_else(|| panic!("{text}"));
    assert!(line.starts_with("n/a   GPU peer WRITE: no GPU ("), "{line}");
    assert!(!text.lines().any(|l| l.starts_with("ok    GPU")), "{text}");
    e.run_tool = Box::new(|a, _| (1, format!("couldn't connect to {}:2 (1 attempt): refused\n", a.last().unwrap())));
    let args: Vec<String> = ["--gpu", "--gpu-mem=--use_cuda=0", "-p", "1", "127.0.0.1"].map(String::from).to_vec();
    let mut o = Vec::new();
    super::main_with(&e, &args, &mut o, &mut err);
    let text = String::from_utf8(o).unwrap();
    let lines: Vec<&str> = text.lines().filter(|l| l.contains("GPU peer WRITE")).collect();
    assert_eq!(lines.len(), 2, "{text}");
    assert!(lines[0].starts_with("FAIL  GPU peer WRITE to 127.0.0.1: --use_cuda=0: rc=1: couldn't connect"), "{}", lines[0]);
    assert!(lines[1].starts_with("FAIL  GPU peer WRITE from 127.0.0.1:"), "{}", lines[1]);
    assert!(lines[1].ends_with("fix: start 'rperftest doctor --serve --gpu -p 1' (the GPU flavour) on 127.0.0.1"), "{}", lines[1]);
}
