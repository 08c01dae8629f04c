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
/// (mlx5 prints the sub-minor with four digits; everything else `major.minor.sub`).
pub fn fw_ver_text(driver_id: u32, raw: u64) -> String {
    let (major, minor, sub) = ((raw >> 32) & 0xffff, (raw >> 16) & 0xffff, raw & 0xffff);
    if driver_id == sys::RDMA_DRIVER_MLX5 {
        format!("{major}.{minor}.{sub:04}")
    } else {
        format!("{major}.{minor}.{sub}")
    }
}

/// QUERY_DEVICE (+EX) answer → [`attr::DeviceAttr`]. GUIDs arrive big-endian.
pub fn device_attr(
    driver_id: u32,
    ex: &sys::ExQueryDeviceResp,
    num_comp_vectors: u32,
) -> attr::DeviceAttr {
    let b = &ex.base;
    attr::DeviceAttr {
        fw_ver: fw_ver_text(driver_id, b.fw_ver),
        node_guid: b.node_guid.get(),
        sys_image_guid: b.sys_image_guid.get(),
        max_mr_size: b.max_mr_size,
        page_size_cap: b.page_size_cap,
        vendor_id: b.vendor_id,
        vendor_part_id: b.vendor_part_id,
        hw_ver: b.hw_ver,
        max_qp: b.max_qp,
        max_qp_wr: b.max_qp_wr,
        device_cap_flags: b.device_cap_flags,
        max_sge: b.max_sge,
        max_sge_rd: b.max_sge_rd,
        max_cq: b.max_cq,
        max_cqe: b.max_cqe,
        max_mr: b.max_mr,
        max_pd: b.max_pd,
        max_qp_rd_atom: b.max_qp_rd_atom,
        max_ee_rd_atom: b.max_ee_rd_atom,
        max_res_rd_atom: b.max_res_rd_atom,
        max_qp_init_rd_atom: b.max_qp_init_rd_atom,
        max_ee_init_rd_atom: b.max_ee_init_rd_atom,
        atomic_cap: b.atomic_cap,
        max_ee: b.max_ee,
        max_rdd: b.max_rdd,
        max_mw: b.max_mw,
        max_raw_ipv6_qp: b.max_raw_ipv6_qp,
        max_raw_ethy_qp: b.max_raw_ethy_qp,
        max_mcast_grp: b.max_mcast_grp,
        max_mcast_qp_attach: b.max_mcast_qp_attach,
        max_total_mcast_qp_attach: b.max_total_mcast_qp_attach,
        max_ah: b.max_ah,
        max_fmr: b.max_fmr,
        max_map_per_fmr: b.max_map_per_fmr,
        max_srq: b.max_srq,
        max_srq_wr: b.max_srq_wr,
        max_srq_sge: b.max_srq_sge,
        max_pkeys: b.max_pkeys,
        local_ca_ack_delay: b.local_ca_ack_delay,
        phys_port_cnt: b.phys_port_cnt,
        odp_general_caps: ex.odp_caps.general_caps,
        rc_odp_caps: ex.odp_caps.rc_odp_caps,
        uc_odp_caps: ex.odp_caps.uc_odp_caps,
        ud_odp_caps: ex.odp_caps.ud_odp_caps,
        xrc_odp_caps: ex.xrc_odp_caps,
        completion_timestamp_mask: ex.timestamp_mask,
        hca_core_clock: ex.hca_core_clock,
        device_cap_flags_ex: ex.device_cap_flags_ex,
        max_tso: 0,
        tso_supported_qpts: 0,
        rss_supported_qpts: ex.rss_caps.supported_qpts,
        max_rwq_indirection_tables: ex.rss_caps.max_rwq_indirection_tables,
        max_rwq_indirection_table_size: ex.rss_caps.max_rwq_indirection_table_size,
        rx_hash_function: 0,
        rx_hash_fields_mask: 0,
        max_wq_type_rq: ex.max_wq_type_rq,
        raw_packet_caps: ex.raw_packet_caps,
        qp_rate_limit_min: 0,
        qp_rate_limit_max: 0,
        packet_pacing_supported_qpts: 0,
        tm_max_rndv_hdr_size: ex.tm_caps.max_rndv_hdr_size,
        tm_max_num_tags: ex.tm_caps.max_num_tags,
        tm_flags: ex.tm_caps.flags,
        tm_max_ops: ex.tm_caps.max_ops,
        tm_max_sge: ex.tm_caps.max_sge,
        max_cq_moderation_count: ex.cq_moderation_caps.max_cq_moderation_count,
        max_cq_moderation_period: ex.cq_moderation_caps.max_cq_moderation_period,
        max_dm_size: ex.max_dm_size,
        num_comp_vectors,
    }
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
    }

    #[test]
    fn guids_are_big_endian_on_the_wire() {
        let mut ex = sys::ExQueryDeviceResp::default();
        ex.base.node_guid = zerocopy::FromBytes::read_from_bytes(&[0x58, 0x9f, 0x07, 0xff, 0xfe, 0xd0, 0x57, 0x88][..]).unwrap();
        let a = device_attr(14, &ex, 2);
        assert_eq!(a.node_guid, 0x589f_07ff_fed0_5788);
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
