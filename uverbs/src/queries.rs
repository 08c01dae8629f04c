//! Device and port attributes from a live context, in the provider-neutral shapes of
//! [`crate::attr`] that `devinfo` prints and the engine reads.
//!
//! [`DeviceQueries`] lets code that does not care about the provider (devinfo, GID selection)
//! hold any opened context behind one trait object; the data path never goes through it.

use crate::attr::{self, GidType};
use crate::error::Result;
use crate::objects::Context;
use crate::provider::Provider;
use crate::sys;

/// `ibv_devinfo`'s firmware version text for a raw QUERY_DEVICE `fw_ver`, per driver
/// (mlx5 prints the sub-minor with four digits; bnxt_re the first four bytes of the value as
/// `a.b.c.d`, as libbnxt_re formats it; everything else `major.minor.sub`).
pub fn fw_ver_text(driver_id: u32, raw: u64) -> String {
    let (major, minor, sub) = ((raw >> 32) & 0xffff, (raw >> 16) & 0xffff, raw & 0xffff);
    if driver_id == sys::RDMA_DRIVER_BNXT_RE {
        let b = raw.to_le_bytes();
        format!("{}.{}.{}.{}", b[0], b[1], b[2], b[3])
    } else if driver_id == sys::RDMA_DRIVER_MLX5 {
        format!("{major}.{minor}.{sub:04}")
    } else {
        format!("{major}.{minor}.{sub}")
    }
}

/// QUERY_DEVICE (+EX) answer → [`attr::DeviceAttr`]: the answer kept whole, the firmware
/// version formatted the driver's way.
pub fn device_attr(
    driver_id: u32,
    ex: &sys::ExQueryDeviceResp,
    num_comp_vectors: u32,
) -> attr::DeviceAttr {
    attr::DeviceAttr { fw_ver: fw_ver_text(driver_id, ex.base.fw_ver), resp: *ex, num_comp_vectors }
}

/// QUERY_PORT answer → [`attr::PortAttr`].
pub fn port_attr(p: &sys::QueryPortRespEx) -> attr::PortAttr {
    let l = &p.legacy_resp;
    attr::PortAttr {
        state: l.state as u32,
        max_mtu: l.max_mtu as u32,
        active_mtu: l.active_mtu as u32,
        sm_lid: l.sm_lid,
        port_lid: l.lid,
        port_lmc: l.lmc,
        link_layer: l.link_layer,
        max_msg_sz: l.max_msg_sz,
        port_cap_flags: l.port_cap_flags,
        port_cap_flags2: p.port_cap_flags2,
        max_vl_num: l.max_vl_num,
        bad_pkey_cntr: l.bad_pkey_cntr,
        qkey_viol_cntr: l.qkey_viol_cntr,
        sm_sl: l.sm_sl,
        pkey_tbl_len: l.pkey_tbl_len,
        gid_tbl_len: l.gid_tbl_len,
        subnet_timeout: l.subnet_timeout,
        init_type_reply: l.init_type_reply,
        active_width: l.active_width,
        active_speed: l.active_speed,
        phys_state: l.phys_state,
        flags: l.flags,
    }
}

/// A kernel GID entry (QUERY_GID_TABLE) → [`attr::GidEntry`]; the netdev name is looked up
/// from its ifindex. Entries of an unknown type are dropped (None).
pub fn gid_entry(e: &sys::GidEntry) -> Option<attr::GidEntry> {
    Some(attr::GidEntry {
        index: e.gid_index,
        port: e.port_num,
        gid: e.gid,
        gid_type: GidType::from_kernel(e.gid_type)?,
        netdev: ifindex_name(e.netdev_ifindex),
    })
}

fn ifindex_name(ifindex: u32) -> Option<String> {
    if ifindex == 0 {
        return None;
    }
    let mut buf = [0 as libc::c_char; libc::IF_NAMESIZE];
    // SAFETY: `buf` has IF_NAMESIZE bytes as if_indextoname requires; on success it holds a
    // NUL-terminated name, on failure the call returns NULL and we do not read `buf`.
    let p = unsafe { libc::if_indextoname(ifindex, buf.as_mut_ptr()) };
    if p.is_null() {
        return None;
    }
    // SAFETY: non-NULL return means `buf` now holds a NUL-terminated string.
    let name = unsafe { std::ffi::CStr::from_ptr(buf.as_ptr()) };
    Some(name.to_string_lossy().into_owned())
}

/// What provider-independent code asks of an opened device.
pub trait DeviceQueries {
    fn device_attr(&self) -> Result<attr::DeviceAttr>;
    fn port_attr(&self, port: u8) -> Result<attr::PortAttr>;
    /// The valid GIDs of `port` from QUERY_GID_TABLE (kernel ≥ 5.10).
    fn gid_table(&self, port: u32, table_len: u32) -> Result<Vec<attr::GidEntry>>;
}

impl<P: Provider> DeviceQueries for Context<P> {
    fn device_attr(&self) -> Result<attr::DeviceAttr> {
        let ex = self.query_device_ex()?;
        Ok(device_attr(P::DRIVER_ID, &ex, self.num_comp_vectors()))
    }
    fn port_attr(&self, port: u8) -> Result<attr::PortAttr> {
        Ok(port_attr(&self.query_port(port)?))
    }
    fn gid_table(&self, port: u32, table_len: u32) -> Result<Vec<attr::GidEntry>> {
        let all = self.query_gid_table(table_len.max(1) as usize * 2)?;
        let mut v: Vec<attr::GidEntry> =
            all.iter().filter(|e| e.port_num == port).filter_map(gid_entry).collect();
        v.sort_by_key(|e| e.index);
        Ok(v)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fw_ver_formats() {
        assert_eq!(fw_ver_text(14, 0), "0.0.0");
        assert_eq!(fw_ver_text(1, (16 << 32) | (35 << 16) | 2000), "16.35.2000");
        assert_eq!(fw_ver_text(1, (22 << 32) | (1 << 16) | 12), "22.1.0012");
        // bnxt_re: the value's first four bytes (the oracle's 0x00e00b02 reads 2.11.224.0).
        assert_eq!(fw_ver_text(6, 0x00e0_0b02), "2.11.224.0");
    }

    #[test]
    fn guids_are_big_endian_on_the_wire() {
        let mut ex = sys::ExQueryDeviceResp::default();
        ex.base.node_guid = zerocopy::FromBytes::read_from_bytes(&[0x58, 0x9f, 0x07, 0xff, 0xfe, 0xd0, 0x57, 0x88][..]).unwrap();
        let a = device_attr(14, &ex, 2);
        assert_eq!(a.node_guid.get(), 0x589f_07ff_fed0_5788);
        assert_eq!(a.num_comp_vectors, 2);
    }

    #[test]
    fn unknown_gid_types_are_dropped() {
        let e = sys::GidEntry { gid_type: 9, ..Default::default() };
        assert!(gid_entry(&e).is_none());
        let e = sys::GidEntry { gid_type: 2, gid_index: 1, port_num: 1, ..Default::default() };
        assert_eq!(gid_entry(&e).unwrap().gid_type, GidType::RoceV2);
    }
}
