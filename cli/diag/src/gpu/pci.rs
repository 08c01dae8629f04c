//! PCI devices from `/sys/bus/pci/devices`: where each sits in the tree (the bridges from its
//! root complex down, from the resolved symlink), its vendor, class and NUMA node; which of
//! them are GPUs, and which PCI function is behind each RDMA device.

use std::path::{Component, Path};

use uverbs::discovery::SysfsRoot;

use crate::csys::{read_string, sorted_names};

pub const VENDOR_NVIDIA: u16 = 0x10de;
pub const VENDOR_AMD: u16 = 0x1002;

/// Where a function sits: its root complex (`pci0000:00`) and the functions from the root port
/// down to itself (`0000:00:01.0`, `0000:01:00.0`, ..., the function last).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PciPath {
    pub root: String,
    pub chain: Vec<String>,
}

impl PciPath {
    /// The bridges above the function, root port first.
    pub fn bridges(&self) -> &[String] {
        &self.chain[..self.chain.len().saturating_sub(1)]
    }
}

fn is_hex(s: &str, min: usize, max: usize) -> bool {
    (min..=max).contains(&s.len()) && s.bytes().all(|b| b.is_ascii_hexdigit())
}

/// `0000:17:00.0` (a VMD domain has five hex digits: `10000:01:00.0`).
pub fn is_bdf(s: &str) -> bool {
    let mut it = s.split(':');
    match (it.next(), it.next(), it.next(), it.next()) {
        (Some(dom), Some(bus), Some(df), None) => {
            let Some((dev, func)) = df.split_once('.') else {
                return false;
            };
            is_hex(dom, 4, 8)
                && is_hex(bus, 2, 2)
                && is_hex(dev, 2, 2)
                && func.len() == 1
                && matches!(func.as_bytes()[0], b'0'..=b'7')
        }
        _ => false,
    }
}

/// `pci0000:00`: a PCI root complex (host bridge) in /sys/devices.
fn is_root(s: &str) -> bool {
    s.strip_prefix("pci")
        .and_then(|r| r.split_once(':'))
        .is_some_and(|(d, b)| is_hex(d, 4, 8) && is_hex(b, 2, 2))
}

/// The path of a function from the target of its `/sys/bus/pci/devices/BDF` symlink
/// (`../../../devices/pci0000:00/0000:00:01.0/0000:01:00.0`): the last root complex named in
/// it and the functions after it. `None` when the target names no root complex or function.
pub fn parse_path(target: &Path) -> Option<PciPath> {
    let comps: Vec<&str> = target
        .components()
        .filter_map(|c| match c {
            Component::Normal(s) => s.to_str(),
            _ => None,
        })
        .collect();
    let r = comps.iter().rposition(|c| is_root(c))?;
    let chain: Vec<String> = comps[r + 1..]
        .iter()
        .take_while(|c| is_bdf(c))
        .map(|c| c.to_string())
        .collect();
    if chain.is_empty() {
        return None;
    }
    Some(PciPath {
        root: comps[r].to_string(),
        chain,
    })
}

/// One PCI function as the GDR checks see it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PciDev {
    pub bdf: String,
    pub path: PciPath,
    pub vendor: u16,
    /// The 24-bit class code (`0x030200`: 3D controller).
    pub class: u32,
    /// `numa_node` (-1: the firmware names none).
    pub numa: i32,
}

fn hex_attr(p: &Path) -> Option<u32> {
    let t = read_string(p, 64)?;
    u32::from_str_radix(t.trim().trim_start_matches("0x"), 16).ok()
}

/// The function `bdf` from `/sys/bus/pci/devices`; `None` when it is not there or its
/// symlink names no PCI path.
pub fn read_dev(sys: &SysfsRoot, bdf: &str) -> Option<PciDev> {
    let d = sys.0.join("bus/pci/devices").join(bdf);
    let path = parse_path(&std::fs::read_link(&d).ok()?)?;
    Some(PciDev {
        bdf: bdf.to_string(),
        path,
        vendor: u16::try_from(hex_attr(&d.join("vendor"))?).ok()?,
        class: hex_attr(&d.join("class")).unwrap_or(0),
        numa: read_string(&d.join("numa_node"), 32)
            .and_then(|t| t.trim().parse().ok())
            .unwrap_or(-1),
    })
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum GpuVendor {
    Nvidia,
    Amd,
}

impl GpuVendor {
    pub fn name(self) -> &'static str {
        match self {
            GpuVendor::Nvidia => "nvidia",
            GpuVendor::Amd => "amd",
        }
    }
    pub fn parse(s: &str) -> Option<GpuVendor> {
        match s {
            "nvidia" => Some(GpuVendor::Nvidia),
            "amd" => Some(GpuVendor::Amd),
            _ => None,
        }
    }
}

/// A GPU and its index: per vendor, in PCI address order, which is nvidia-smi's numbering and
/// CUDA's with CUDA_DEVICE_ORDER=PCI_BUS_ID (and CUDA's default on a box of identical GPUs).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Gpu {
    pub index: usize,
    pub vendor: GpuVendor,
    pub dev: PciDev,
}

impl Gpu {
    /// `GPU0` (NVIDIA) or `ROCm GPU0` (AMD), as the tables name it.
    pub fn label(&self) -> String {
        match self.vendor {
            GpuVendor::Nvidia => format!("GPU{}", self.index),
            GpuVendor::Amd => format!("AMD GPU{}", self.index),
        }
    }
}

/// The vendor of a GPU function: class VGA (0x0300) or 3D controller (0x0302), and for AMD
/// also "display controller" (0x0380), which AMD Instinct cards report.
pub fn gpu_vendor(vendor: u16, class: u32) -> Option<GpuVendor> {
    let sub = class >> 8;
    match vendor {
        VENDOR_NVIDIA if sub == 0x0300 || sub == 0x0302 => Some(GpuVendor::Nvidia),
        VENDOR_AMD if sub == 0x0300 || sub == 0x0302 || sub == 0x0380 => Some(GpuVendor::Amd),
        _ => None,
    }
}

/// Every GPU in `/sys/bus/pci/devices`, in PCI address order.
pub fn gpus(sys: &SysfsRoot) -> Vec<Gpu> {
    let mut out: Vec<Gpu> = Vec::new();
    for bdf in sorted_names(&sys.0.join("bus/pci/devices")) {
        let Some(dev) = read_dev(sys, &bdf) else {
            continue;
        };
        let Some(vendor) = gpu_vendor(dev.vendor, dev.class) else {
            continue;
        };
        let index = out.iter().filter(|g| g.vendor == vendor).count();
        out.push(Gpu { index, vendor, dev });
    }
    out
}

/// An RDMA device backed by a PCI function.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Nic {
    pub ibdev: String,
    pub dev: PciDev,
}

/// Every RDMA device whose `device` link names a PCI function (software devices such as rxe
/// have none and are left out), in name order.
pub fn nics(sys: &SysfsRoot) -> Vec<Nic> {
    sorted_names(&sys.ib_class())
        .into_iter()
        .filter_map(|ibdev| {
            let target = std::fs::read_link(sys.ibdev(&ibdev).join("device")).ok()?;
            let bdf = target.file_name()?.to_str()?.to_string();
            let dev = is_bdf(&bdf).then(|| read_dev(sys, &bdf)).flatten()?;
            Some(Nic { ibdev, dev })
        })
        .collect()
}
