//! The host side of GPUDirect RDMA: the GPU driver and its version, the peer-memory module,
//! the kernel's dma-buf support, the IOMMU mode. Read from the roots given (sysfs, /proc,
//! /boot), never from the process's own environment.

use std::path::PathBuf;

use uverbs::discovery::SysfsRoot;

use crate::csys::{read_string, sorted_names};

/// Where the readers look: `/sys`, `/proc`, `/boot`.
pub struct Roots {
    pub sys: SysfsRoot,
    pub proc_root: PathBuf,
    pub boot: PathBuf,
}

fn text(p: &std::path::Path) -> Option<String> {
    read_string(p, 4096).map(|t| t.trim().to_string())
}

/// The NVIDIA kernel driver.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct NvidiaDriver {
    /// `535.104.05`; None when the module is loaded but says no version.
    pub version: Option<String>,
    /// The open kernel modules (`NVIDIA UNIX Open Kernel Module`); None when unknown.
    pub open: Option<bool>,
}

impl NvidiaDriver {
    pub fn major(&self) -> Option<u32> {
        self.version.as_deref()?.split('.').next()?.parse().ok()
    }
}

/// The first token that looks like a driver version (`535.104.05`).
fn version_token(line: &str) -> Option<String> {
    line.split_whitespace()
        .find(|t| {
            t.contains('.')
                && t.split('.')
                    .all(|p| !p.is_empty() && p.bytes().all(|b| b.is_ascii_digit()))
        })
        .map(str::to_string)
}

/// From `/proc/driver/nvidia/version` (`NVRM version: NVIDIA UNIX x86_64 Kernel Module
/// 535.104.05 ...`, or `... Open Kernel Module for x86_64 ...`), else `/sys/module/nvidia`.
pub fn nvidia_driver(r: &Roots) -> Option<NvidiaDriver> {
    if let Some(t) = text(&r.proc_root.join("driver/nvidia/version")) {
        let line = t.lines().next().unwrap_or("");
        return Some(NvidiaDriver {
            version: version_token(line),
            open: Some(line.contains("Open Kernel Module")),
        });
    }
    let m = r.sys.0.join("module/nvidia");
    if !m.is_dir() {
        return None;
    }
    Some(NvidiaDriver {
        version: text(&m.join("version")).filter(|v| !v.is_empty()),
        open: None,
    })
}

/// amdgpu: loaded, and its version where a DKMS build writes one (the in-tree module has none).
pub fn amdgpu(r: &Roots) -> Option<Option<String>> {
    let m = r.sys.0.join("module/amdgpu");
    m.is_dir()
        .then(|| text(&m.join("version")).filter(|v| !v.is_empty()))
}

pub fn module_loaded(r: &Roots, name: &str) -> bool {
    r.sys.0.join("module").join(name).is_dir()
}

/// `uname -r`, from `/proc/sys/kernel/osrelease`.
pub fn kernel_release(r: &Roots) -> Option<String> {
    text(&r.proc_root.join("sys/kernel/osrelease")).filter(|t| !t.is_empty())
}

/// Whether release `6.8.0-45-generic` is at least `major.minor`.
pub fn release_at_least(release: &str, major: u32, minor: u32) -> Option<bool> {
    let mut it = release.split(|c: char| !c.is_ascii_digit());
    let a: u32 = it.next()?.parse().ok()?;
    let b: u32 = it.next()?.parse().ok()?;
    Some((a, b) >= (major, minor))
}

/// The kernel's dma-buf support: `Some(true/false)` with where that was read, or `None` with
/// why it is unknown.
pub fn kernel_dma_buf(r: &Roots) -> (Option<bool>, String) {
    if let Some(rel) = kernel_release(r) {
        let p = r.boot.join(format!("config-{rel}"));
        if let Ok(cfg) = std::fs::read_to_string(&p) {
            for l in cfg.lines() {
                if l == "CONFIG_DMA_SHARED_BUFFER=y" {
                    return (
                        Some(true),
                        format!("CONFIG_DMA_SHARED_BUFFER=y in {}", p.display()),
                    );
                }
                if l.starts_with("# CONFIG_DMA_SHARED_BUFFER is not set") {
                    return (
                        Some(false),
                        format!("CONFIG_DMA_SHARED_BUFFER is not set in {}", p.display()),
                    );
                }
            }
            return (
                Some(false),
                format!("no CONFIG_DMA_SHARED_BUFFER in {}", p.display()),
            );
        }
    }
    let s = r.sys.0.join("kernel/dmabuf");
    if s.is_dir() {
        return (Some(true), format!("{} exists", s.display()));
    }
    let gz = r.proc_root.join("config.gz");
    if gz.exists() {
        return (
            None,
            format!(
                "only {} (compressed; not read): zcat {} | grep DMA_SHARED_BUFFER",
                gz.display(),
                gz.display()
            ),
        );
    }
    (
        None,
        "no kernel config in /boot and no /sys/kernel/dmabuf".into(),
    )
}

/// The IOMMU units the kernel set up (`dmar0`, `ivhd0`, ...): none means the IOMMU is off.
pub fn iommu_units(r: &Roots) -> Vec<String> {
    sorted_names(&r.sys.0.join("class/iommu"))
}

/// The domain type of `bdf`'s IOMMU group (`identity`: passthrough; `DMA`, `DMA-FQ`:
/// translated; `unmanaged`: a VFIO or similar owner). None without a group.
pub fn group_type(r: &Roots, bdf: &str) -> Option<String> {
    let link = std::fs::read_link(
        r.sys
            .0
            .join("bus/pci/devices")
            .join(bdf)
            .join("iommu_group"),
    )
    .ok()?;
    let group = link.file_name()?.to_str()?.to_string();
    text(&r.sys.0.join("kernel/iommu_groups").join(group).join("type"))
}

/// The IOMMU words of the kernel command line (`iommu=pt`, `intel_iommu=on`, `amd_iommu=off`,
/// `iommu.passthrough=1`, ...).
pub fn cmdline_iommu(r: &Roots) -> Vec<String> {
    text(&r.proc_root.join("cmdline"))
        .unwrap_or_default()
        .split_whitespace()
        .filter(|w| {
            w.starts_with("iommu") || w.starts_with("intel_iommu") || w.starts_with("amd_iommu")
        })
        .map(str::to_string)
        .collect()
}
