use std::path::Path;

use super::acs::{self, AcsRead};
use super::host::{self, Roots};
use super::pci::{self, GpuVendor};
use super::topo::{self, Link};
use crate::fake::FakeSys;

fn roots(f: &FakeSys) -> Roots {
    Roots {
        sys: f.root(),
        proc_root: f.path("proc"),
        boot: f.path("boot"),
    }
}

#[test]
fn paths_from_the_kernels_symlinks() {
    let p = pci::parse_path(Path::new(
        "../../../devices/pci0000:00/0000:00:01.1/0000:01:00.0/0000:02:00.0",
    ))
    .unwrap();
    assert_eq!(p.root, "pci0000:00");
    assert_eq!(p.chain, ["0000:00:01.1", "0000:01:00.0", "0000:02:00.0"]);
    assert_eq!(p.bridges(), ["0000:00:01.1", "0000:01:00.0"]);
    // A VMD domain below a root port of another domain: the last root complex counts.
    let v = pci::parse_path(Path::new(
        "/sys/devices/pci0000:00/0000:00:0e.0/pci10000:00/10000:00:02.0/10000:01:00.0",
    ))
    .unwrap();
    assert_eq!(v.root, "pci10000:00");
    assert_eq!(v.chain, ["10000:00:02.0", "10000:01:00.0"]);
    assert_eq!(
        pci::parse_path(Path::new("../../devices/virtual/net/eth0")),
        None
    );
    assert_eq!(pci::parse_path(Path::new("../../devices/pci0000:00")), None);
    assert!(
        pci::is_bdf("0000:17:00.0")
            && !pci::is_bdf("0000:17:00.8")
            && !pci::is_bdf("0000:17:00")
            && !pci::is_bdf("x")
    );
}

#[test]
fn gpus_and_nics_of_a_two_socket_host() {
    let f = FakeSys::new();
    f.gpu_host();
    let g = pci::gpus(&f.root());
    let names: Vec<(String, &str, i32)> = g
        .iter()
        .map(|g| (g.label(), g.dev.bdf.as_str(), g.dev.numa))
        .collect();
    assert_eq!(
        names,
        [
            ("GPU0".to_string(), "0000:07:00.0", 0),
            ("GPU1".into(), "0000:0f:00.0", 0),
            ("GPU2".into(), "0000:83:00.0", 1)
        ]
    );
    assert!(g.iter().all(|g| g.vendor == GpuVendor::Nvidia));
    let n: Vec<(String, String)> = pci::nics(&f.root())
        .into_iter()
        .map(|n| (n.ibdev, n.dev.bdf))
        .collect();
    assert_eq!(
        n,
        [
            ("mlx5_0".to_string(), "0000:0c:00.0".to_string()),
            ("mlx5_1".into(), "0000:20:00.0".into()),
            ("mlx5_2".into(), "0000:84:00.0".into()),
            ("mlx5_3".into(), "0000:41:00.0".into())
        ]
    );
    assert_eq!(pci::gpu_vendor(0x1002, 0x038000), Some(GpuVendor::Amd));
    assert_eq!(
        pci::gpu_vendor(0x10de, 0x068000),
        None,
        "NVSwitch is a bridge, not a GPU"
    );
}

#[test]
fn distances_as_nvidia_smi_topo_names_them() {
    let f = FakeSys::new();
    f.gpu_host();
    let gpus = pci::gpus(&f.root());
    let nics = pci::nics(&f.root());
    let row = |nic: &str| -> Vec<&str> {
        let n = nics.iter().find(|n| n.ibdev == nic).unwrap();
        gpus.iter()
            .map(|g| topo::classify(&g.dev, &n.dev).name())
            .collect()
    };
    // One switch between GPU0 and mlx5_0; two levels to GPU1; another socket for GPU2.
    assert_eq!(row("mlx5_0"), ["PIX", "PXB", "SYS"]);
    assert_eq!(row("mlx5_1"), ["PHB", "PHB", "SYS"]);
    assert_eq!(row("mlx5_2"), ["SYS", "SYS", "PIX"]);
    assert_eq!(row("mlx5_3"), ["NODE", "NODE", "SYS"]);
    // Functions of one card (a dual-port NIC) and the symmetric case.
    let a = pci::read_dev(&f.root(), "0000:07:00.0").unwrap();
    let mut b = a.clone();
    b.path.chain.last_mut().unwrap().replace_range(11.., "1");
    assert_eq!(topo::classify(&a, &b), Link::Pix);
    let n0 = &nics[0].dev;
    assert_eq!(
        topo::classify(n0, &gpus[1].dev),
        topo::classify(&gpus[1].dev, n0)
    );
    // Unknown NUMA nodes on both sides read as one node.
    let (mut x, mut y) = (gpus[0].dev.clone(), nics[3].dev.clone());
    x.numa = -1;
    y.numa = -1;
    assert_eq!(topo::classify(&x, &y), Link::Node);
    assert!(
        Link::Pix < Link::Pxb
            && Link::Pxb < Link::Phb
            && Link::Phb < Link::Node
            && Link::Node < Link::Sys
    );
    assert_eq!(Link::parse("NODE"), Some(Link::Node));
}

#[test]
fn the_bridges_between_a_gpu_and_a_nic() {
    let f = FakeSys::new();
    f.gpu_host();
    let d = |b: &str| pci::read_dev(&f.root(), b).unwrap().path;
    assert_eq!(
        topo::bridges_between(&d("0000:07:00.0"), &d("0000:0c:00.0")),
        ["0000:03:00.0", "0000:04:00.0", "0000:04:08.0"]
    );
    assert_eq!(
        topo::bridges_between(&d("0000:0f:00.0"), &d("0000:0c:00.0")),
        [
            "0000:01:00.0",
            "0000:02:04.0",
            "0000:05:00.0",
            "0000:06:00.0",
            "0000:02:00.0",
            "0000:03:00.0",
            "0000:04:08.0"
        ]
    );
    assert_eq!(
        topo::bridges_between(&d("0000:83:00.0"), &d("0000:41:00.0")),
        [
            "0000:80:01.1",
            "0000:81:00.0",
            "0000:82:00.0",
            "0000:40:01.1"
        ]
    );
}

#[test]
fn acs_is_found_and_printed_as_lspci_does() {
    let c = FakeSys::acs_config(0x005f, 0x001d);
    let AcsRead::Found(a) = acs::find(&c) else {
        panic!("no ACS")
    };
    assert_eq!((a.offset, a.cap, a.ctl), (0xf24, 0x005f, 0x001d));
    assert!(a.redirects());
    assert_eq!(
        acs::flags(a.cap),
        "SrcValid+ TransBlk+ ReqRedir+ CmpltRedir+ UpstreamFwd+ EgressCtrl- DirectTrans+"
    );
    assert_eq!(
        acs::flags(a.ctl),
        "SrcValid+ TransBlk- ReqRedir+ CmpltRedir+ UpstreamFwd+ EgressCtrl- DirectTrans-"
    );
    let AcsRead::Found(off) = acs::find(&FakeSys::acs_config(0x005f, 0)) else {
        panic!()
    };
    assert!(!off.redirects());
    // Source validation alone redirects nothing.
    let AcsRead::Found(sv) = acs::find(&FakeSys::acs_config(0x005f, 0x0001)) else {
        panic!()
    };
    assert!(!sv.redirects());
    assert_eq!(acs::find(&[0u8; 64]), AcsRead::Short(64));
    assert_eq!(acs::find(&[0u8; 4096]), AcsRead::Absent);
    // A list that points at itself ends; one that points below 0x100 ends.
    let mut lp = vec![0u8; 4096];
    lp[0x100..0x104].copy_from_slice(&(0x0001u32 | (0x100 << 20)).to_le_bytes());
    assert_eq!(acs::find(&lp), AcsRead::Absent);
    lp[0x100..0x104].copy_from_slice(&(0x0001u32 | (0x40 << 20)).to_le_bytes());
    assert_eq!(acs::find(&lp), AcsRead::Absent);
    // Cut short inside the capability.
    assert_eq!(
        acs::find(&FakeSys::acs_config(1, 1)[..0xf27]),
        AcsRead::Absent
    );
}

#[test]
fn iommu_mode_from_groups_and_cmdline() {
    let f = FakeSys::new();
    f.gpu_host();
    let r = roots(&f);
    assert!(host::iommu_units(&r).is_empty());
    assert_eq!(host::group_type(&r, "0000:07:00.0"), None);
    f.dir("class/iommu/dmar0");
    f.file("kernel/iommu_groups/17/type", "DMA-FQ\n");
    f.file("kernel/iommu_groups/18/type", "identity\n");
    f.link("devices/pci0000:00/0000:00:01.1/0000:01:00.0/0000:02:00.0/0000:03:00.0/0000:04:00.0/0000:07:00.0/iommu_group", "../../../../../../../../kernel/iommu_groups/17");
    f.link(
        "devices/pci0000:00/0000:00:03.1/0000:20:00.0/iommu_group",
        "../../../../kernel/iommu_groups/18",
    );
    assert_eq!(host::iommu_units(&r), ["dmar0"]);
    assert_eq!(
        host::group_type(&r, "0000:07:00.0").as_deref(),
        Some("DMA-FQ")
    );
    assert_eq!(
        host::group_type(&r, "0000:20:00.0").as_deref(),
        Some("identity")
    );
    f.file(
        "proc/cmdline",
        "BOOT_IMAGE=/vmlinuz ro intel_iommu=on iommu=pt quiet\n",
    );
    assert_eq!(host::cmdline_iommu(&r), ["intel_iommu=on", "iommu=pt"]);
}

#[test]
fn drivers_peer_memory_and_dma_buf() {
    let f = FakeSys::new();
    let r = roots(&f);
    assert_eq!(host::nvidia_driver(&r), None);
    f.file("module/nvidia/version", "550.54.15\n");
    let d = host::nvidia_driver(&r).unwrap();
    assert_eq!(
        (d.version.as_deref(), d.open, d.major()),
        (Some("550.54.15"), None, Some(550))
    );
    f.file(
        "proc/driver/nvidia/version",
        "NVRM version: NVIDIA UNIX Open Kernel Module for x86_64  535.104.05  Release Build  (dvs-builder@U16-I3-B03-4-3)  Thu Aug 10 21:07:20 UTC 2023\nGCC version:  gcc version 12.3.0 (Ubuntu 12.3.0-1ubuntu1~22.04)\n",
    );
    let d = host::nvidia_driver(&r).unwrap();
    assert_eq!(
        (d.version.as_deref(), d.open),
        (Some("535.104.05"), Some(true))
    );
    f.file("proc/driver/nvidia/version", "NVRM version: NVIDIA UNIX x86_64 Kernel Module  470.223.02  Sat Oct  7 15:39:11 UTC 2023\n");
    let d = host::nvidia_driver(&r).unwrap();
    assert_eq!(
        (d.version.as_deref(), d.open, d.major()),
        (Some("470.223.02"), Some(false), Some(470))
    );
    assert!(!host::module_loaded(&r, "nvidia_peermem"));
    f.dir("module/nvidia_peermem");
    assert!(host::module_loaded(&r, "nvidia_peermem"));
    assert_eq!(host::amdgpu(&r), None);
    f.dir("module/amdgpu");
    assert_eq!(host::amdgpu(&r), Some(None));

    assert_eq!(host::kernel_dma_buf(&r).0, None);
    f.file("proc/config.gz", "");
    assert!(host::kernel_dma_buf(&r).1.contains("zcat"));
    f.file("proc/sys/kernel/osrelease", "6.8.0-45-generic\n");
    f.file(
        "boot/config-6.8.0-45-generic",
        "CONFIG_FOO=y\nCONFIG_DMA_SHARED_BUFFER=y\n",
    );
    assert_eq!(host::kernel_dma_buf(&r).0, Some(true));
    f.file(
        "boot/config-6.8.0-45-generic",
        "# CONFIG_DMA_SHARED_BUFFER is not set\n",
    );
    assert_eq!(host::kernel_dma_buf(&r).0, Some(false));
    assert_eq!(
        host::release_at_least("6.8.0-45-generic", 5, 12),
        Some(true)
    );
    assert_eq!(
        host::release_at_least("5.4.0-150-generic", 5, 12),
        Some(false)
    );
    assert_eq!(host::release_at_least("junk", 5, 12), None);
}
