//! Device discovery: which RDMA devices exist, their uverbs char devices and driver ids, their
//! ports and GID tables.
//!
//! Netlink (`RDMA_NLDEV`) first, as rdma-core does; sysfs when netlink is unavailable (old
//! kernels, restricted containers) or finds nothing. Only devices with a uverbs char device are
//! listed — the others cannot be opened from userspace.

#[forbid(unsafe_code)]
pub mod gid;
pub mod netlink;
#[forbid(unsafe_code)]
pub mod sysfs;

use std::path::PathBuf;

use crate::attr::NodeType;
use crate::error::{Error, Result};
use crate::provider::DeviceDesc;

pub use gid::{
    describe, format_gid_hex, format_ipv6, read_gid_table, select_gid, GidChoice, GidRule,
};
pub use sysfs::SysfsRoot;

/// Where a [`DeviceInfo`] came from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Source {
    Netlink,
    Sysfs,
}

/// One RDMA device that userspace can open.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DeviceInfo {
    /// The kernel's device index (netlink only).
    pub index: Option<u32>,
    /// IB device name (`rxe0`, `mlx5_0`).
    pub ibdev: String,
    /// uverbs char device name (`uverbs0`); the node is `/dev/infiniband/<uverbs>`.
    pub uverbs: String,
    /// (major, minor) of the char device, if known.
    pub uverbs_dev: Option<(u32, u32)>,
    /// `enum rdma_driver_id` (rxe 14, mlx5 1; 0 unknown).
    pub driver_id: u32,
    /// Per-device driver ABI version (rxe 2, mlx5 1).
    pub driver_abi: u32,
    pub node_guid: u64,
    pub sys_image_guid: u64,
    pub node_type: NodeType,
    /// Firmware version text (empty for rxe).
    pub fw_ver: String,
    /// `board_id` from sysfs, if the device has one (ibv_devinfo prints it).
    pub board_id: Option<String>,
    pub port_count: u32,
    pub source: Source,
}

impl DeviceInfo {
    /// What the verbs layer needs to open the device with a provider.
    pub fn desc(&self) -> DeviceDesc {
        DeviceDesc {
            ibdev: self.ibdev.clone(),
            uverbs: self.uverbs.clone(),
            driver_id: self.driver_id,
            driver_abi: self.driver_abi,
        }
    }
    /// `/dev/infiniband/<uverbs>`.
    pub fn uverbs_path(&self) -> PathBuf {
        PathBuf::from("/dev/infiniband").join(&self.uverbs)
    }
}

fn hint_load_driver() -> &'static str {
    "load a driver (modprobe rdma_rxe; rdma link add rxe0 type rxe netdev eth0), or check that \
     /sys is mounted and this network namespace sees the devices"
}

/// Every device, netlink first and sysfs as the fallback, in kernel order.
pub fn list_devices() -> Result<Vec<DeviceInfo>> {
    list_devices_with(&SysfsRoot::system(), true)
}

/// [`list_devices`] against a given sysfs root; `use_netlink = false` reads sysfs only (tests).
pub fn list_devices_with(root: &SysfsRoot, use_netlink: bool) -> Result<Vec<DeviceInfo>> {
    if use_netlink {
        if let Ok(v) = list_devices_netlink(root) {
            if !v.is_empty() {
                return Ok(v);
            }
        }
    }
    let v = list_devices_sysfs(root)?;
    if v.is_empty() {
        return Err(no_devices_error(root));
    }
    Ok(v)
}

fn no_devices_error(root: &SysfsRoot) -> Error {
    let ibdevs = sysfs::list_ibdevs(root);
    if ibdevs.is_empty() {
        Error::msg(
            "find RDMA device",
            format!(
                "no RDMA device: {} is empty or missing",
                root.ib_class().display()
            ),
        )
        .with_hint(hint_load_driver())
    } else {
        Error::msg(
            "find RDMA device",
            format!(
                "{} exist but none has a uverbs char device",
                ibdevs.join(", ")
            ),
        )
        .with_hint("load the userspace verbs module (modprobe ib_uverbs)")
    }
}

/// The device list from netlink (GET dump, then GET_CHARDEV "uverbs" per device). Devices
/// without a uverbs char device are left out. `fw_ver` and `board_id`, which netlink may not
/// carry, are read from `root` when present.
pub fn list_devices_netlink(root: &SysfsRoot) -> Result<Vec<DeviceInfo>> {
    let mut sock = netlink::NlSocket::open()?;
    let devs = sock.devices()?;
    let mut out = Vec::new();
    for d in devs {
        let cd = match sock.chardev(Some(d.index), "uverbs") {
            Ok(c) => c,
            Err(_) => continue,
        };
        let sysdev = sysfs::read_device(root, &d.name).ok();
        let fw_ver = match (&d.fw_ver, &sysdev) {
            (Some(f), _) => f.clone(),
            (None, Some(s)) => s.fw_ver.clone(),
            (None, None) => String::new(),
        };
        let modalias = sysdev.as_ref().and_then(|s| s.modalias.clone());
        out.push(DeviceInfo {
            index: Some(d.index),
            ibdev: d.name.clone(),
            uverbs: cd.name,
            uverbs_dev: cd.dev,
            driver_id: cd
                .driver_id
                .unwrap_or_else(|| sysfs::infer_driver_id(&d.name, modalias.as_deref())),
            driver_abi: (cd.abi & 0xffff_ffff) as u32,
            node_guid: d.node_guid.unwrap_or(0),
            sys_image_guid: d.sys_image_guid.unwrap_or(0),
            node_type: NodeType::from_raw(d.node_type.map(u32::from).unwrap_or(0)),
            fw_ver,
            board_id: sysdev.and_then(|s| s.board_id),
            port_count: d.port_count,
            source: Source::Netlink,
        });
    }
    out.sort_by_key(|d| d.index);
    Ok(out)
}

/// The device list from sysfs alone: `class/infiniband_verbs/uverbsN` in number order.
pub fn list_devices_sysfs(root: &SysfsRoot) -> Result<Vec<DeviceInfo>> {
    let entries = match sysfs::list_uverbs(root) {
        Ok(e) => e,
        Err(e) if e.errno == Some(libc::ENOENT) => Vec::new(),
        Err(e) => return Err(e),
    };
    let mut out = Vec::new();
    for u in entries {
        let s = sysfs::read_device(root, &u.ibdev)?;
        out.push(DeviceInfo {
            index: None,
            driver_id: sysfs::infer_driver_id(&u.ibdev, s.modalias.as_deref()),
            ibdev: u.ibdev,
            uverbs: u.name,
            uverbs_dev: u.dev,
            driver_abi: u.abi,
            node_guid: s.node_guid.unwrap_or(0),
            sys_image_guid: s.sys_image_guid.unwrap_or(0),
            node_type: s.node_type.unwrap_or(NodeType::Unknown(0)),
            fw_ver: s.fw_ver,
            board_id: s.board_id,
            port_count: s.port_count,
            source: Source::Sysfs,
        });
    }
    Ok(out)
}

/// The device named `name`, or the first device when `None` (as perftest does).
pub fn find_device(name: Option<&str>) -> Result<DeviceInfo> {
    pick_device(list_devices()?, name)
}

/// [`find_device`] over a list already read.
pub fn pick_device(devs: Vec<DeviceInfo>, name: Option<&str>) -> Result<DeviceInfo> {
    let names: Vec<String> = devs.iter().map(|d| d.ibdev.clone()).collect();
    match name {
        None => devs.into_iter().next().ok_or_else(|| {
            Error::msg("find RDMA device", "no RDMA device").with_hint(hint_load_driver())
        }),
        Some(n) => devs.into_iter().find(|d| d.ibdev == n).ok_or_else(|| {
            let there = if names.is_empty() {
                "none".to_string()
            } else {
                names.join(", ")
            };
            Error::msg(
                "find RDMA device",
                format!("no device named {n:?} (devices: {there})"),
            )
            .with_hint(match crate::knob::spelled(crate::knob::Knob::Device) {
                Some(f) => format!("pick one of those with {f}"),
                None => "pick one of those".to_string(),
            })
        }),
    }
}

/// The rdma_cm char device: its name, ABI and dev numbers. Netlink first (GET_CHARDEV
/// "rdma_cm" without a device index, as librdmacm asks), then `class/misc/rdma_cm`.
pub fn rdma_cm_chardev(root: &SysfsRoot) -> Result<netlink::NlChardev> {
    if let Ok(mut s) = netlink::NlSocket::open() {
        if let Ok(c) = s.chardev(None, "rdma_cm") {
            return Ok(c);
        }
    }
    rdma_cm_chardev_sysfs(root)
}

/// The rdma_cm char device from `class/misc/rdma_cm/{abi_version,dev}`.
pub fn rdma_cm_chardev_sysfs(root: &SysfsRoot) -> Result<netlink::NlChardev> {
    let d = root.0.join("class/misc/rdma_cm");
    let abi = sysfs::read_attr(&d.join("abi_version"))
        .and_then(|t| sysfs::parse_dec(&t))
        .map_err(|e| e.with_hint("load the RDMA CM module (modprobe rdma_ucm)"))?;
    let dev = sysfs::read_attr(&d.join("dev"))
        .ok()
        .and_then(|t| sysfs::parse_dev_numbers(&t).ok());
    Ok(netlink::NlChardev {
        name: "rdma_cm".into(),
        abi,
        dev,
        driver_id: None,
    })
}
