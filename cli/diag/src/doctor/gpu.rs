//! `doctor --gpu`: the GPUDirect RDMA part of the failure cookbook, one line per check with
//! its fix: the GPU driver, the peer-memory module, dma-buf support, the IOMMU mode, ACS on the
//! bridges between each GPU and each NIC, each NIC's distance to the GPUs, and the NUMA node of
//! each. On a host without a GPU every check is `n/a` with that reason and none is `ok`.

use crate::gpu::acs::{self, AcsRead};
use crate::gpu::host::{self, Roots};
use crate::gpu::pci::{self, Gpu, GpuVendor, Nic};
use crate::gpu::topo::{self, Link};

use super::report::{Check, Level};

/// The checks' names, in the order they print (ACS and distance get the pair or NIC after it).
pub const NAMES: [&str; 7] = [
    "GPU driver",
    "GPU peer memory",
    "GPU dma-buf",
    "GPU IOMMU",
    "GPU ACS",
    "GPU distance",
    "GPU NUMA",
];

/// The lowest NVIDIA driver whose open kernel modules export GPU memory as dma-buf for RDMA.
pub const NVIDIA_DMABUF_MIN: u32 = 515;
/// The first kernel with dma-buf memory regions in the RDMA core (ib_umem_dmabuf).
pub const KERNEL_DMABUF_MR: (u32, u32) = (5, 12);

/// The GPU checks of this host (with PEER, `gpu_write` adds the GPU-memory WRITE both ways).
pub fn checks(r: &Roots) -> Vec<Check> {
    let gpus = pci::gpus(&r.sys);
    let mut out = Vec::new();
    if gpus.is_empty() {
        let why =
            "no GPU (no NVIDIA or AMD VGA/3D/display controller in /sys/bus/pci/devices)";
        out.extend(NAMES.iter().map(|n| Check::na(*n, why)));
    } else {
        let nics = pci::nics(&r.sys);
        out.push(driver(r, &gpus));
        out.push(peer_memory(r, &gpus));
        out.push(dma_buf(r, &gpus));
        out.push(iommu(r, &gpus, &nics));
        if nics.is_empty() {
            let why = "no RDMA device on a PCI function (rxe and siw are software devices)";
            out.push(Check::na("GPU ACS", why));
            out.push(Check::na("GPU distance", why));
        } else {
            for n in &nics {
                out.extend(gpus.iter().map(|g| acs_check(r, g, n)));
            }
            out.extend(nics.iter().map(|n| distance(&gpus, n)));
        }
        out.push(numa(&gpus, &nics));
    }
    out
}

fn has(gpus: &[Gpu], v: GpuVendor) -> usize {
    gpus.iter().filter(|g| g.vendor == v).count()
}

/// The worst level of `parts`, and their texts joined.
fn joined(name: &str, parts: Vec<Check>) -> Check {
    let level = parts
        .iter()
        .map(|c| c.level)
        .max_by_key(|l| rank(*l))
        .unwrap_or(Level::Na);
    let detail: Vec<String> = parts.iter().map(|c| c.detail.clone()).collect();
    let fix: Vec<String> = parts.iter().filter_map(|c| c.fix.clone()).collect();
    Check::new(name, level, detail.join("; ")).with_fix(fix.join("; "))
}

fn rank(l: Level) -> u8 {
    match l {
        Level::Na => 0,
        Level::Ok => 1,
        Level::Warn => 2,
        Level::Fail => 3,
    }
}

fn driver(r: &Roots, gpus: &[Gpu]) -> Check {
    let mut parts = Vec::new();
    let n = has(gpus, GpuVendor::Nvidia);
    if n > 0 {
        parts.push(match host::nvidia_driver(r) {
            None => Check::fail("", format!("{n} NVIDIA GPU(s) but no nvidia kernel module (no /proc/driver/nvidia/version, no /sys/module/nvidia)"), "install the NVIDIA driver (its open kernel modules, 515 or newer, for dma-buf) and modprobe nvidia"),
            Some(d) => {
                let kind = match d.open {
                    Some(true) => "open kernel modules",
                    Some(false) => "proprietary kernel module",
                    None => "open or proprietary: unknown without /proc/driver/nvidia/version",
                };
                Check::ok("", format!("nvidia {} ({kind}) for {n} GPU(s)", d.version.as_deref().unwrap_or("(version unknown)")))
            }
        });
    }
    let a = has(gpus, GpuVendor::Amd);
    if a > 0 {
        parts.push(match host::amdgpu(r) {
            None => Check::fail(
                "",
                format!("{a} AMD GPU(s) but amdgpu is not loaded"),
                "modprobe amdgpu (ROCm's amdgpu-dkms for the peer-memory path)",
            ),
            Some(v) => Check::ok(
                "",
                format!(
                    "amdgpu {} for {a} GPU(s)",
                    v.unwrap_or_else(|| "(in-tree: no version)".into())
                ),
            ),
        });
    }
    joined("GPU driver", parts)
}

/// Whether the GPUs can be registered through dma-buf: kernel and driver.
fn dma_buf_parts(r: &Roots, gpus: &[Gpu]) -> Vec<Check> {
    let mut parts = Vec::new();
    let rel = host::kernel_release(r);
    let (kcfg, src) = host::kernel_dma_buf(r);
    let new_enough = rel
        .as_deref()
        .and_then(|v| host::release_at_least(v, KERNEL_DMABUF_MR.0, KERNEL_DMABUF_MR.1));
    let relw = rel.clone().unwrap_or_else(|| "unknown".into());
    parts.push(match (kcfg, new_enough) {
        (Some(false), _) => Check::warn(
            "",
            format!("kernel {relw} without dma-buf ({src})"),
            "a kernel with CONFIG_DMA_SHARED_BUFFER (every distribution kernel has it)",
        ),
        (_, Some(false)) => Check::warn(
            "",
            format!("kernel {relw} predates dma-buf memory regions (5.12)"),
            "a 5.12 or newer kernel, or the peer-memory path",
        ),
        (Some(true), Some(true)) => Check::ok(
            "",
            format!("kernel {relw}: dma-buf and dma-buf MRs ({src})"),
        ),
        (None, _) | (_, None) => Check::warn(
            "",
            format!("kernel {relw}: dma-buf support unknown ({src})"),
            "",
        ),
    });
    if has(gpus, GpuVendor::Nvidia) > 0 {
        parts.push(match host::nvidia_driver(r) {
            None => Check::fail("", "no nvidia driver to export GPU memory", ""),
            Some(d) => match (d.open, d.major()) {
                (Some(true), Some(m)) if m >= NVIDIA_DMABUF_MIN => Check::ok("", format!("nvidia {m} open kernel modules export dma-buf (--use_cuda_dmabuf)")),
                (Some(true), _) => Check::warn("", format!("nvidia open kernel modules older than {NVIDIA_DMABUF_MIN}: no dma-buf export"), format!("driver {NVIDIA_DMABUF_MIN} or newer")),
                (Some(false), _) => Check::warn("", "the proprietary nvidia kernel module: no dma-buf export for RDMA (the open kernel modules have it)", "install the driver's open kernel modules (nvidia-open / -m=kernel-open)"),
                (None, _) => Check::warn("", "nvidia module open or proprietary: unknown (no /proc/driver/nvidia/version), so dma-buf export is unknown", ""),
            },
        });
    }
    if has(gpus, GpuVendor::Amd) > 0 {
        parts.push(match host::amdgpu(r) {
            Some(_) => Check::ok("", "amdgpu exports dma-buf (--use_rocm_dmabuf)"),
            None => Check::fail("", "no amdgpu to export GPU memory", ""),
        });
    }
    parts
}

fn dma_buf(r: &Roots, gpus: &[Gpu]) -> Check {
    joined("GPU dma-buf", dma_buf_parts(r, gpus))
}

fn peer_memory(r: &Roots, gpus: &[Gpu]) -> Check {
    let dmabuf_ok = dma_buf_parts(r, gpus).iter().all(|c| c.level == Level::Ok);
    let other = if dmabuf_ok {
        "the dma-buf path works without it"
    } else {
        "and the dma-buf path is not available either"
    };
    let lvl = |msg: String, fix: &str| {
        if dmabuf_ok {
            Check::warn("", msg, fix)
        } else {
            Check::fail("", msg, fix)
        }
    };
    let mut parts = Vec::new();
    if has(gpus, GpuVendor::Nvidia) > 0 {
        parts.push(match ["nvidia_peermem", "nv_peer_mem"].into_iter().find(|m| host::module_loaded(r, m)) {
            Some(m) => Check::ok("", format!("{m} loaded: GPU memory registers through the ordinary REG_MR (--use_cuda)")),
            None => lvl(
                format!("nvidia_peermem not loaded: REG_MR of GPU memory (--use_cuda) fails with 'Couldn't allocate MR'; {other}"),
                "modprobe nvidia-peermem (it comes with the driver; at boot: echo nvidia-peermem > /etc/modules-load.d/nvidia-peermem.conf)",
            ),
        });
    }
    if has(gpus, GpuVendor::Amd) > 0 {
        parts.push(if host::module_loaded(r, "ib_peer_mem") {
            Check::ok("", "ib_peer_mem loaded (the peer-memory API amdgpu-dkms registers with)")
        } else {
            lvl(format!("no peer-memory API (ib_peer_mem) loaded: REG_MR of AMD GPU memory (--use_rocm) fails; {other}"), "use --use_rocm_dmabuf, or MLNX_OFED's ib_peer_mem with ROCm's amdgpu-dkms")
        });
    }
    joined("GPU peer memory", parts)
}

fn iommu(r: &Roots, gpus: &[Gpu], nics: &[Nic]) -> Check {
    let name = "GPU IOMMU";
    let cmd = host::cmdline_iommu(r);
    let cmdw = if cmd.is_empty() {
        "no iommu words on the kernel command line".to_string()
    } else {
        format!("cmdline: {}", cmd.join(" "))
    };
    let units = host::iommu_units(r);
    if units.is_empty() {
        return Check::ok(
            name,
            format!("off (no unit in /sys/class/iommu; {cmdw}): peer DMA is not translated"),
        );
    }
    let devs: Vec<(String, &str)> = gpus
        .iter()
        .map(|g| (g.label(), g.dev.bdf.as_str()))
        .chain(nics.iter().map(|n| (n.ibdev.clone(), n.dev.bdf.as_str())))
        .collect();
    let mut translated = Vec::new();
    let mut unknown = Vec::new();
    for (label, bdf) in &devs {
        match host::group_type(r, bdf).as_deref() {
            Some("identity") => {}
            Some(t) => translated.push(format!("{label} {t}")),
            None => unknown.push(label.clone()),
        }
    }
    let fix = "boot with iommu=pt (Intel: intel_iommu=on iommu=pt; AMD: amd_iommu=on iommu=pt) or turn the IOMMU off in the BIOS";
    if !translated.is_empty() {
        return Check::warn(
            name,
            format!("on ({}), translating for {} ({cmdw}): NIC<->GPU peer DMA goes through IOMMU translation, which fails or slows GPUDirect RDMA", units.join(" "), translated.join(", ")),
            fix,
        );
    }
    if !unknown.is_empty() {
        return Check::warn(
            name,
            format!(
                "on ({}), but no IOMMU group for {} ({cmdw})",
                units.join(" "),
                unknown.join(", ")
            ),
            "",
        );
    }
    Check::ok(
        name,
        format!("passthrough: every GPU's and NIC's IOMMU group is identity ({cmdw})"),
    )
}

fn acs_check(r: &Roots, g: &Gpu, n: &Nic) -> Check {
    let name = format!("GPU ACS {}-{}", g.label(), n.ibdev);
    let link = topo::classify(&g.dev, &n.dev);
    let bridges = topo::bridges_between(&g.dev.path, &n.dev.path);
    let (mut redirect, mut short, mut with_acs) = (Vec::new(), Vec::new(), 0usize);
    for b in &bridges {
        let cfg = std::fs::read(r.sys.0.join("bus/pci/devices").join(b).join("config"))
            .unwrap_or_default();
        match acs::find(&cfg) {
            AcsRead::Found(a) => {
                with_acs += 1;
                if a.redirects() {
                    redirect.push((b.clone(), a));
                }
            }
            AcsRead::Short(_) => short.push(b.clone()),
            AcsRead::Absent => {}
        }
    }
    let head = format!(
        "{} bridge(s) between {} and {} ({})",
        bridges.len(),
        g.label(),
        n.ibdev,
        link.name()
    );
    if !redirect.is_empty() {
        let what: Vec<String> = redirect
            .iter()
            .map(|(b, a)| format!("{b} ACSCtl: {}", acs::flags(a.ctl)))
            .collect();
        let fix: Vec<String> = redirect
            .iter()
            .map(|(b, _)| format!("setpci -s {b} ECAP_ACS+0x6.w=0000"))
            .collect();
        let detail = format!(
            "{head}: {}: peer traffic is redirected up to the root complex",
            what.join("; ")
        );
        let fix = format!(
            "{} (until reboot; for good: the BIOS's ACS setting or a boot script)",
            fix.join("; ")
        );
        return if link.below_root() {
            Check::fail(name, detail, fix)
        } else {
            Check::warn(name, detail, fix)
        };
    }
    if !short.is_empty() {
        return Check::na(name, format!("{head}: the extended config space of {} is unreadable (only root reads past 64 bytes)", short.join(", ")));
    }
    Check::ok(name, format!("{head}, {with_acs} with ACS: none redirects peer traffic (ReqRedir- CmpltRedir- EgressCtrl-)"))
}

fn distance(gpus: &[Gpu], n: &Nic) -> Check {
    let name = format!("GPU distance {}", n.ibdev);
    let mut row: Vec<(Link, &Gpu)> = gpus
        .iter()
        .map(|g| (topo::classify(&g.dev, &n.dev), g))
        .collect();
    let table: Vec<String> = row
        .iter()
        .map(|(l, g)| format!("{} {}", g.label(), l.name()))
        .collect();
    row.sort_by_key(|(l, g)| (*l, g.vendor.name(), g.index));
    let (best, g) = row[0];
    let detail = format!(
        "nearest {} ({}, {}: {}); {}",
        g.label(),
        g.dev.bdf,
        best.name(),
        best.meaning(),
        table.join(", ")
    );
    match best {
        Link::Pix | Link::Pxb => Check::ok(name, detail),
        Link::Phb => Check::warn(
            name,
            format!("{detail}: every GPU's traffic crosses the CPU's host bridge"),
            format!(
                "pair {} with a NIC behind its own PCIe switch where the board has one",
                n.ibdev
            ),
        ),
        Link::Node | Link::Sys => Check::warn(
            name,
            format!("{detail}: no GPU on {}'s host bridge", n.ibdev),
            format!(
                "use {} with a GPU of its NUMA node ({}), or test the cross-NUMA case on purpose",
                n.ibdev, n.dev.numa
            ),
        ),
    }
}

fn numa(gpus: &[Gpu], nics: &[Nic]) -> Check {
    let node = |n: i32| {
        if n < 0 {
            "none".to_string()
        } else {
            n.to_string()
        }
    };
    let words: Vec<String> = gpus
        .iter()
        .map(|g| format!("{} {} node {}", g.label(), g.dev.bdf, node(g.dev.numa)))
        .chain(
            nics.iter()
                .map(|n| format!("{} {} node {}", n.ibdev, n.dev.bdf, node(n.dev.numa))),
        )
        .collect();
    Check::ok("GPU NUMA", words.join(", "))
}
