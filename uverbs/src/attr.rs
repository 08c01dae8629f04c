//! Provider-neutral device, port and GID attributes.
//!
//! [`DeviceAttr`] is the kernel's QUERY_DEVICE answer itself (sysfs fills the few fields it
//! knows); the port and GID structs have integer fields named as `ibv_devinfo` names them, so
//! that either source (QUERY_PORT / QUERY_GID_TABLE, or sysfs) can fill them. The diag crate's
//! `devinfo` prints them all. No logic beyond small, total conversions.
//!
//! A GUID's host-order number has hex digits that read the way `ibv_devinfo` prints them
//! (`fc3c:7aff:feba:5df3` is `0xfc3c_7aff_feba_5df3`). The kernel sends them big-endian
//! (`__be64`), and [`DeviceAttr`] keeps them so: `a.node_guid.get()` is that number.

use std::fmt;

/// `enum ibv_gid_type` as the kernel reports it (`ib_uverbs_gid_entry.gid_type`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum GidType {
    /// An InfiniBand GID (sysfs `IB/RoCE v1` on an InfiniBand port). Kernel value 0.
    Ib,
    /// RoCE v1 (sysfs `IB/RoCE v1` on an Ethernet port). Kernel value 1.
    RoceV1,
    /// RoCE v2 (UDP/IP encapsulated). Kernel value 2.
    RoceV2,
}

impl GidType {
    /// From the kernel's `ib_uverbs_gid_entry.gid_type` (0 IB, 1 RoCE v1, 2 RoCE v2).
    pub fn from_kernel(v: u32) -> Option<GidType> {
        match v {
            0 => Some(GidType::Ib),
            1 => Some(GidType::RoceV1),
            2 => Some(GidType::RoceV2),
            _ => None,
        }
    }
    /// The kernel's value (0, 1, 2).
    pub fn to_kernel(self) -> u32 {
        match self {
            GidType::Ib => 0,
            GidType::RoceV1 => 1,
            GidType::RoceV2 => 2,
        }
    }
    /// Short human name: `IB`, `RoCE v1`, `RoCE v2`.
    pub fn name(self) -> &'static str {
        match self {
            GidType::Ib => "IB",
            GidType::RoceV1 => "RoCE v1",
            GidType::RoceV2 => "RoCE v2",
        }
    }
}

impl fmt::Display for GidType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// One valid (non-empty) entry of a port's GID table.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct GidEntry {
    /// Index in the port's GID table (the `-x` / `sgid_index` value).
    pub index: u32,
    /// Port number (1-based).
    pub port: u32,
    /// The raw 16 bytes, network order (as carried in a GRH and in perftest's key record).
    pub gid: [u8; 16],
    pub gid_type: GidType,
    /// The net device the GID belongs to (RoCE), if any.
    pub netdev: Option<String>,
}

impl GidEntry {
    /// True if the GID is an IPv4-mapped IPv6 address (`::ffff:a.b.c.d`), or the IPv4-encoded
    /// multicast form `ff0e::ffff:a.b.c.d` — perftest's `ipv6_addr_v4mapped`.
    pub fn is_ipv4(&self) -> bool {
        gid_is_ipv4(&self.gid)
    }
}

/// perftest's IPv4-mapped test over raw GID bytes (see [`GidEntry::is_ipv4`]).
pub fn gid_is_ipv4(g: &[u8; 16]) -> bool {
    let mapped_tail = g[8..10] == [0, 0] && g[10..12] == [0xff, 0xff];
    (g[..8].iter().all(|&b| b == 0) && mapped_tail)
        || (g[..4] == [0xff, 0x0e, 0, 0] && g[4..8].iter().all(|&b| b == 0) && mapped_tail)
}

/// Link-local scope: fe80::/10 for IPv6, 169.254.0.0/16 for IPv4-mapped (perftest's rule).
pub fn gid_is_link_local(g: &[u8; 16]) -> bool {
    if gid_is_ipv4(g) {
        g[12] == 169 && g[13] == 254
    } else {
        g[0] == 0xfe && (g[1] & 0xc0) == 0x80
    }
}

/// `ibv_node_type` as sysfs `node_type` and netlink `DEV_NODE_TYPE` report it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum NodeType {
    Ca,
    Switch,
    Router,
    Rnic,
    Usnic,
    UsnicUdp,
    Unspecified,
    Unknown(u32),
}

impl NodeType {
    pub fn from_raw(v: u32) -> NodeType {
        match v {
            1 => NodeType::Ca,
            2 => NodeType::Switch,
            3 => NodeType::Router,
            4 => NodeType::Rnic,
            5 => NodeType::Usnic,
            6 => NodeType::UsnicUdp,
            7 => NodeType::Unspecified,
            x => NodeType::Unknown(x),
        }
    }
    pub fn raw(self) -> u32 {
        match self {
            NodeType::Ca => 1,
            NodeType::Switch => 2,
            NodeType::Router => 3,
            NodeType::Rnic => 4,
            NodeType::Usnic => 5,
            NodeType::UsnicUdp => 6,
            NodeType::Unspecified => 7,
            NodeType::Unknown(x) => x,
        }
    }
    /// The transport rdma-core derives from the node type (`enum ibv_transport_type`):
    /// IB 0, iWARP 1, usNIC 2, usNIC UDP 3, unspecified 4, unknown -1.
    pub fn transport(self) -> i32 {
        match self {
            NodeType::Ca | NodeType::Switch | NodeType::Router => 0,
            NodeType::Rnic => 1,
            NodeType::Usnic => 2,
            NodeType::UsnicUdp => 3,
            NodeType::Unspecified => 4,
            NodeType::Unknown(_) => -1,
        }
    }
}

/// Port states (`enum ibv_port_state`).
pub const PORT_DOWN: u32 = 1;
pub const PORT_INIT: u32 = 2;
pub const PORT_ARMED: u32 = 3;
pub const PORT_ACTIVE: u32 = 4;

/// Link layers (`IBV_LINK_LAYER_*`).
pub const LINK_LAYER_UNSPECIFIED: u8 = 0;
pub const LINK_LAYER_INFINIBAND: u8 = 1;
pub const LINK_LAYER_ETHERNET: u8 = 2;

/// `enum ibv_mtu` → bytes (1 → 256 … 5 → 4096); `None` for anything else.
pub fn mtu_bytes(mtu: u32) -> Option<u32> {
    match mtu {
        1..=5 => Some(128u32 << mtu),
        _ => None,
    }
}

/// Bytes → `enum ibv_mtu` for the five IB MTUs; `None` otherwise.
pub fn mtu_enum(bytes: u32) -> Option<u32> {
    match bytes {
        256 => Some(1),
        512 => Some(2),
        1024 => Some(3),
        2048 => Some(4),
        4096 => Some(5),
        _ => None,
    }
}

/// The IB MTU the kernel reports as `active_mtu` for a RoCE port over a netdev of `netdev_mtu`
/// bytes: the largest IB MTU that fits once the RoCE headers are taken off (the kernel's
/// `iboe_get_mtu` rule; rxe's own rule gives the same answer for common MTUs).
pub fn roce_active_mtu(netdev_mtu: u32) -> Option<u32> {
    // The kernel subtracts IB_GRH_BYTES + IB_UDP_BYTES + IB_BTH_BYTES + IB_EXT_XRC_BYTES +
    // IB_EXT_ATOMICETH_BYTES + IB_ICRC_BYTES = 40 + 8 + 12 + 4 + 28 + 4 = 96.
    let avail = netdev_mtu.checked_sub(96)?;
    [4096u32, 2048, 1024, 512, 256]
        .into_iter()
        .find(|&m| m <= avail)
        .and_then(mtu_enum)
}

/// `fw_ver` text from the 64-bit raw value the generic providers (rxe) format:
/// `major.minor.sub_minor` from bits 47..32, 31..16 and 15..0.
pub fn fw_ver_from_raw(raw: u64) -> String {
    format!(
        "{}.{}.{}",
        (raw >> 32) & 0xffff,
        (raw >> 16) & 0xffff,
        raw & 0xffff
    )
}

/// Every device attribute `ibv_devinfo -v` prints: the kernel's (EX_)QUERY_DEVICE answer as it
/// came, with the firmware text and GET_CONTEXT's vector count beside it. The plain attributes
/// read through `Deref` (`a.max_qp`), except `fw_ver`, which is the text here (the raw number is
/// `a.resp.base.fw_ver`); the GUIDs stay big-endian as the kernel sends them
/// (`a.node_guid.get()`), the extended ones are under [`Self::resp`] (`a.resp.odp_caps`).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct DeviceAttr {
    /// Firmware version text; empty means "none" and `ibv_devinfo` omits the line.
    pub fw_ver: String,
    /// The EX_QUERY_DEVICE answer (`base` alone, the rest zero, from a plain QUERY_DEVICE or
    /// from sysfs).
    pub resp: crate::sys::ExQueryDeviceResp,
    /// From GET_CONTEXT (`NUM_COMP_VECTORS`), not QUERY_DEVICE.
    pub num_comp_vectors: u32,
}

impl std::ops::Deref for DeviceAttr {
    type Target = crate::sys::QueryDeviceResp;
    fn deref(&self) -> &Self::Target {
        &self.resp.base
    }
}

impl DeviceAttr {
    /// `IB_UVERBS_DEVICE_XRC` in `device_cap_flags`: XRC domains, XRC SRQs and XRC QPs exist
    /// on this device (mlx5 sets it; rxe does not).
    pub fn supports_xrc(&self) -> bool {
        self.device_cap_flags & crate::sys::IB_UVERBS_DEVICE_XRC != 0
    }
}

/// Every port attribute `ibv_devinfo -v` prints (`struct ibv_port_attr`).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct PortAttr {
    /// `enum ibv_port_state` (4 = ACTIVE).
    pub state: u32,
    /// `enum ibv_mtu` (1..5).
    pub max_mtu: u32,
    pub active_mtu: u32,
    pub sm_lid: u16,
    pub port_lid: u16,
    pub port_lmc: u8,
    /// `IBV_LINK_LAYER_*` (1 InfiniBand, 2 Ethernet).
    pub link_layer: u8,
    pub max_msg_sz: u32,
    pub port_cap_flags: u32,
    pub port_cap_flags2: u16,
    /// Encoded as the kernel reports it (1 → 1 VL, 2 → 2, 3 → 4, 4 → 8, 5 → 15).
    pub max_vl_num: u8,
    pub bad_pkey_cntr: u32,
    pub qkey_viol_cntr: u32,
    pub sm_sl: u8,
    pub pkey_tbl_len: u16,
    pub gid_tbl_len: u32,
    pub subnet_timeout: u8,
    pub init_type_reply: u8,
    /// IB width code (1 → 1X, 2 → 4X, 4 → 8X, 8 → 12X, 16 → 2X).
    pub active_width: u8,
    /// IB speed code (1 SDR 2.5, 2 DDR 5, 4 QDR 10, 8 FDR10 10, 16 FDR 14, 32 EDR 25, 64 HDR 50,
    /// 128 NDR 100).
    pub active_speed: u8,
    /// Physical state (5 = LinkUp).
    pub phys_state: u8,
    /// `IBV_QPF_*`-style port flags from QUERY_PORT (bit 0 = GRH required).
    pub flags: u8,
}

impl PortAttr {
    pub fn is_ethernet(&self) -> bool {
        self.link_layer == LINK_LAYER_ETHERNET
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn g(s: &[u8]) -> [u8; 16] {
        let mut a = [0u8; 16];
        a.copy_from_slice(s);
        a
    }

    #[test]
    fn ipv4_mapped_and_link_local() {
        let v4 = g(&[0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff, 10, 99, 0, 1]);
        assert!(gid_is_ipv4(&v4));
        assert!(!gid_is_link_local(&v4));
        let v4ll = g(&[0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff, 169, 254, 3, 4]);
        assert!(gid_is_link_local(&v4ll));
        let mc = g(&[0xff, 0x0e, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff, 224, 0, 0, 1]);
        assert!(gid_is_ipv4(&mc));
        let ll = g(&[
            0xfe, 0x80, 0, 0, 0, 0, 0, 0, 0xfc, 0x3c, 0x7a, 0xff, 0xfe, 0xba, 0x5d, 0xf3,
        ]);
        assert!(!gid_is_ipv4(&ll));
        assert!(gid_is_link_local(&ll));
        let glob = g(&[0x20, 0x01, 0xd, 0xb8, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1]);
        assert!(!gid_is_link_local(&glob));
        assert!(!gid_is_ipv4(&[0u8; 16]));
    }

    #[test]
    fn mtu_and_fw() {
        assert_eq!(mtu_bytes(5), Some(4096));
        assert_eq!(mtu_bytes(1), Some(256));
        assert_eq!(mtu_bytes(0), None);
        assert_eq!(mtu_bytes(200), None);
        assert_eq!(mtu_enum(1024), Some(3));
        assert_eq!(roce_active_mtu(1500), Some(3));
        assert_eq!(roce_active_mtu(9000), Some(5));
        assert_eq!(roce_active_mtu(50), None);
        assert_eq!(fw_ver_from_raw(0), "0.0.0");
        assert_eq!(fw_ver_from_raw((1 << 32) | (2 << 16) | 3), "1.2.3");
    }

    #[test]
    fn node_type_and_gid_type() {
        assert_eq!(NodeType::from_raw(1), NodeType::Ca);
        assert_eq!(NodeType::Ca.transport(), 0);
        assert_eq!(NodeType::Rnic.transport(), 1);
        assert_eq!(NodeType::from_raw(99).transport(), -1);
        assert_eq!(NodeType::from_raw(99).raw(), 99);
        assert_eq!(GidType::from_kernel(2), Some(GidType::RoceV2));
        assert_eq!(GidType::from_kernel(3), None);
        assert_eq!(GidType::RoceV1.to_kernel(), 1);
        assert_eq!(GidType::RoceV2.to_string(), "RoCE v2");
    }
}
