//! Pure formatters reproducing rdma-core 44's `ibv_devices` and `ibv_devinfo [-v]` output byte
//! for byte (field names, tabs, value formats), from [`DeviceInfo`], [`DeviceAttr`] and the
//! ports' [`PortAttr`] and GID tables. No I/O.
//!
//! Where rdma-core prints a C `int` with `%d`, values above `i32::MAX` print negative, as there.

use std::fmt::Write as _;

use uverbs::attr::{DeviceAttr, GidEntry, GidType, PortAttr, LINK_LAYER_ETHERNET};
use uverbs::discovery::{format_gid_hex, format_ipv6, DeviceInfo};
use uverbs::sys::ExQueryDeviceResp;

/// `writeln!` into a `String`, which cannot fail.
macro_rules! put {
    ($s:expr, $($t:tt)*) => { let _ = writeln!($s, $($t)*); };
}

/// One port as `ibv_devinfo` shows it.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct PortReport {
    /// Port number (1-based).
    pub port: u32,
    pub attr: PortAttr,
    /// This port's valid GIDs (any order; printed by index).
    pub gids: Vec<GidEntry>,
}

/// `ibv_devices`: a header and one line per device with its node GUID.
pub fn format_ibv_devices(devs: &[DeviceInfo]) -> String {
    let mut s = String::new();
    let _ = writeln!(s, "    {:<16}\t   node GUID", "device");
    let _ = writeln!(s, "    {:<16}\t----------------", "------");
    for d in devs {
        let _ = writeln!(s, "    {:<16}\t{:016x}", d.ibdev, d.node_guid);
    }
    s
}

/// `ibv_devinfo -l`: `N HCA(s) found:` and one tab-indented name per line, then a blank line.
pub fn format_devinfo_list(devs: &[DeviceInfo]) -> String {
    let mut s = format!(
        "{} HCA{} found:\n",
        devs.len(),
        if devs.len() != 1 { "s" } else { "" }
    );
    for d in devs {
        let _ = writeln!(s, "\t{}", d.ibdev);
    }
    s.push('\n');
    s
}

/// A GUID as `xxxx:xxxx:xxxx:xxxx`.
pub fn guid_str(g: u64) -> String {
    format!(
        "{:04x}:{:04x}:{:04x}:{:04x}",
        (g >> 48) & 0xffff,
        (g >> 32) & 0xffff,
        (g >> 16) & 0xffff,
        g & 0xffff
    )
}

/// `enum ibv_transport_type` name.
pub fn transport_str(t: i32) -> &'static str {
    match t {
        0 => "InfiniBand",
        1 => "iWARP",
        2 => "usNIC",
        3 => "usNIC UDP",
        4 => "unspecified",
        _ => "invalid transport",
    }
}

pub fn port_state_str(s: u32) -> &'static str {
    match s {
        1 => "PORT_DOWN",
        2 => "PORT_INIT",
        3 => "PORT_ARMED",
        4 => "PORT_ACTIVE",
        _ => "invalid state",
    }
}

pub fn port_phy_state_str(s: u8) -> &'static str {
    match s {
        1 => "SLEEP",
        2 => "POLLING",
        3 => "DISABLED",
        4 => "PORT_CONFIGURATION TRAINNING",
        5 => "LINK_UP",
        6 => "LINK_ERROR_RECOVERY",
        7 => "PHY TEST",
        _ => "invalid physical state",
    }
}

pub fn atomic_cap_str(a: u32) -> &'static str {
    match a {
        0 => "ATOMIC_NONE",
        1 => "ATOMIC_HCA",
        2 => "ATOMIC_GLOB",
        _ => "invalid atomic capability",
    }
}

pub fn mtu_str(m: u32) -> &'static str {
    match m {
        1 => "256",
        2 => "512",
        3 => "1024",
        4 => "2048",
        5 => "4096",
        _ => "invalid MTU",
    }
}

pub fn width_str(w: u8) -> &'static str {
    match w {
        1 => "1",
        2 => "4",
        4 => "8",
        8 => "12",
        16 => "2",
        _ => "invalid width",
    }
}

pub fn speed_str(s: u8) -> &'static str {
    match s {
        1 => "2.5 Gbps",
        2 => "5.0 Gbps",
        4 | 8 => "10.0 Gbps",
        16 => "14.0 Gbps",
        32 => "25.0 Gbps",
        64 => "50.0 Gbps",
        128 => "100.0 Gbps",
        _ => "invalid speed",
    }
}

pub fn vl_str(v: u8) -> &'static str {
    match v {
        1 => "1",
        2 => "2",
        3 => "4",
        4 => "8",
        5 => "15",
        _ => "invalid value",
    }
}

pub fn link_layer_str(l: u8) -> &'static str {
    match l {
        0 => "Unspecified",
        1 => "InfiniBand",
        2 => "Ethernet",
        _ => "Unknown",
    }
}

/// `device_cap_flags` bit names in the order `ibv_devinfo -v` prints them.
pub const DEVICE_CAP_FLAGS: &[(u32, &str)] = &[
    (1, "RESIZE_MAX_WR"),
    (1 << 1, "BAD_PKEY_CNTR"),
    (1 << 2, "BAD_QKEY_CNTR"),
    (1 << 3, "RAW_MULTI"),
    (1 << 4, "AUTO_PATH_MIG"),
    (1 << 5, "CHANGE_PHY_PORT"),
    (1 << 6, "UD_AV_PORT_ENFORCE"),
    (1 << 7, "CURR_QP_STATE_MOD"),
    (1 << 8, "SHUTDOWN_PORT"),
    (1 << 9, "INIT_TYPE"),
    (1 << 10, "PORT_ACTIVE_EVENT"),
    (1 << 11, "SYS_IMAGE_GUID"),
    (1 << 12, "RC_RNR_NAK_GEN"),
    (1 << 13, "SRQ_RESIZE"),
    (1 << 14, "N_NOTIFY_CQ"),
    (1 << 17, "MEM_WINDOW"),
    (1 << 18, "UD_IP_CSUM"),
    (1 << 20, "XRC"),
    (1 << 21, "MEM_MGT_EXTENSIONS"),
    (1 << 23, "MEM_WINDOW_TYPE_2A"),
    (1 << 24, "MEM_WINDOW_TYPE_2B"),
    (1 << 25, "RC_IP_CSUM"),
    (1 << 26, "RAW_IP_CSUM"),
    (1 << 29, "MANAGED_FLOW_STEERING"),
];

const ODP_TRANSPORT: &[(u32, &str)] = &[
    (1, "SUPPORT_SEND"),
    (1 << 1, "SUPPORT_RECV"),
    (1 << 2, "SUPPORT_WRITE"),
    (1 << 3, "SUPPORT_READ"),
    (1 << 4, "SUPPORT_ATOMIC"),
    (1 << 5, "SUPPORT_SRQ"),
];

const FLAG_INDENT: &str = "\t\t\t\t\t";
const QPT_UD: u32 = 4;
const QPT_RAW_PACKET: u32 = 8;

fn flag_lines(s: &mut String, v: u32, table: &[(u32, &str)]) {
    let mut known = 0u32;
    for &(bit, name) in table {
        known |= bit;
        if v & bit != 0 {
            let _ = writeln!(s, "{FLAG_INDENT}{name}");
        }
    }
    if v & !known != 0 {
        let _ = writeln!(s, "{FLAG_INDENT}Unknown flags: 0x{:X}", v & !known);
    }
}

fn odp_trans(s: &mut String, v: u32) {
    if v == 0 {
        let _ = writeln!(s, "{FLAG_INDENT}NO SUPPORT");
    } else {
        flag_lines(s, v, ODP_TRANSPORT);
    }
}

fn qpt_lines(s: &mut String, qpts: u32) {
    if qpts & (1 << QPT_RAW_PACKET) != 0 {
        let _ = writeln!(s, "{FLAG_INDENT}SUPPORT_RAW_PACKET");
    }
    if qpts & (1 << QPT_UD) != 0 {
        let _ = writeln!(s, "{FLAG_INDENT}SUPPORT_UD");
    }
    let unknown = qpts & !((1 << QPT_RAW_PACKET) | (1 << QPT_UD));
    if unknown != 0 {
        let _ = writeln!(s, "{FLAG_INDENT}Unknown flags: 0x{unknown:X}");
    }
}

/// `ibv_devinfo`'s null-GID test: only the interface id (bytes 8..16) is looked at.
fn null_gid(g: &[u8; 16]) -> bool {
    g[8..].iter().all(|&b| b == 0)
}

/// One `GID[  i]:` line as `ibv_devinfo -v` prints it (with its newline).
pub fn format_gid_line(e: &GidEntry, link_layer: u8) -> String {
    let suffix = if link_layer == LINK_LAYER_ETHERNET {
        match e.gid_type {
            GidType::RoceV2 => ", RoCE v2",
            GidType::Ib | GidType::RoceV1 => ", RoCE v1",
        }
    } else {
        ""
    };
    let text = match e.gid_type {
        GidType::RoceV2 => format_ipv6(&e.gid),
        GidType::Ib | GidType::RoceV1 => format_gid_hex(&e.gid),
    };
    format!("\t\t\tGID[{:3}]:\t\t{text}{suffix}\n", e.index)
}

/// The device part of `ibv_devinfo -v`, after `phys_port_cnt`: the QUERY_DEVICE limits, then
/// the extended (EX_QUERY_DEVICE) capabilities, then the completion vector count.
fn device_verbose(s: &mut String, a: &DeviceAttr) {
    device_limits(s, a);
    let r = &a.resp;
    odp_caps(s, r);
    clock_and_raw_packet_caps(s, r);
    cap_flags_ex(s, r);
    offload_caps(s, r);
    tag_matching_caps(s, r);
    moderation_and_memory_caps(s, r);
    put!(s, "\tnum_comp_vectors:\t\t{}", a.num_comp_vectors as i32);
}

/// The base QUERY_DEVICE limits, `max_mr_size` to `local_ca_ack_delay`.
fn device_limits(s: &mut String, a: &DeviceAttr) {
    put!(s, "\tmax_mr_size:\t\t\t0x{:x}", a.max_mr_size);
    put!(s, "\tpage_size_cap:\t\t\t0x{:x}", a.page_size_cap);
    put!(s, "\tmax_qp:\t\t\t\t{}", a.max_qp as i32);
    put!(s, "\tmax_qp_wr:\t\t\t{}", a.max_qp_wr as i32);
    put!(s, "\tdevice_cap_flags:\t\t0x{:08x}", a.device_cap_flags);
    flag_lines(s, a.device_cap_flags, DEVICE_CAP_FLAGS);
    put!(s, "\tmax_sge:\t\t\t{}", a.max_sge as i32);
    put!(s, "\tmax_sge_rd:\t\t\t{}", a.max_sge_rd as i32);
    put!(s, "\tmax_cq:\t\t\t\t{}", a.max_cq as i32);
    put!(s, "\tmax_cqe:\t\t\t{}", a.max_cqe as i32);
    put!(s, "\tmax_mr:\t\t\t\t{}", a.max_mr as i32);
    put!(s, "\tmax_pd:\t\t\t\t{}", a.max_pd as i32);
    put!(s, "\tmax_qp_rd_atom:\t\t\t{}", a.max_qp_rd_atom as i32);
    put!(s, "\tmax_ee_rd_atom:\t\t\t{}", a.max_ee_rd_atom as i32);
    put!(s, "\tmax_res_rd_atom:\t\t{}", a.max_res_rd_atom as i32);
    put!(s, "\tmax_qp_init_rd_atom:\t\t{}", a.max_qp_init_rd_atom as i32);
    put!(s, "\tmax_ee_init_rd_atom:\t\t{}", a.max_ee_init_rd_atom as i32);
    put!(
        s,
        "\tatomic_cap:\t\t\t{} ({})",
        atomic_cap_str(a.atomic_cap),
        a.atomic_cap as i32
    );
    put!(s, "\tmax_ee:\t\t\t\t{}", a.max_ee as i32);
    put!(s, "\tmax_rdd:\t\t\t{}", a.max_rdd as i32);
    put!(s, "\tmax_mw:\t\t\t\t{}", a.max_mw as i32);
    put!(s, "\tmax_raw_ipv6_qp:\t\t{}", a.max_raw_ipv6_qp as i32);
    put!(s, "\tmax_raw_ethy_qp:\t\t{}", a.max_raw_ethy_qp as i32);
    put!(s, "\tmax_mcast_grp:\t\t\t{}", a.max_mcast_grp as i32);
    put!(s, "\tmax_mcast_qp_attach:\t\t{}", a.max_mcast_qp_attach as i32);
    put!(
        s,
        "\tmax_total_mcast_qp_attach:\t{}",
        a.max_total_mcast_qp_attach as i32
    );
    put!(s, "\tmax_ah:\t\t\t\t{}", a.max_ah as i32);
    put!(s, "\tmax_fmr:\t\t\t{}", a.max_fmr as i32);
    if a.max_fmr != 0 {
        put!(s, "\tmax_map_per_fmr:\t\t{}", a.max_map_per_fmr as i32);
    }
    put!(s, "\tmax_srq:\t\t\t{}", a.max_srq as i32);
    if a.max_srq != 0 {
        put!(s, "\tmax_srq_wr:\t\t\t{}", a.max_srq_wr as i32);
        put!(s, "\tmax_srq_sge:\t\t\t{}", a.max_srq_sge as i32);
    }
    put!(s, "\tmax_pkeys:\t\t\t{}", a.max_pkeys);
    put!(s, "\tlocal_ca_ack_delay:\t\t{}", a.local_ca_ack_delay);
}

/// On-demand paging: the general flags, then the per-transport ones.
fn odp_caps(s: &mut String, r: &ExQueryDeviceResp) {
    put!(s, "\tgeneral_odp_caps:");
    if r.odp_caps.general_caps & 1 != 0 {
        put!(s, "{FLAG_INDENT}ODP_SUPPORT");
    }
    if r.odp_caps.general_caps & 2 != 0 {
        put!(s, "{FLAG_INDENT}ODP_SUPPORT_IMPLICIT");
    }
    if r.odp_caps.general_caps & !3 != 0 {
        put!(
            s,
            "{FLAG_INDENT}Unknown flags: 0x{:X}",
            r.odp_caps.general_caps & !3
        );
    }
    put!(s, "\trc_odp_caps:");
    odp_trans(s, r.odp_caps.rc_odp_caps);
    put!(s, "\tuc_odp_caps:");
    odp_trans(s, r.odp_caps.uc_odp_caps);
    put!(s, "\tud_odp_caps:");
    odp_trans(s, r.odp_caps.ud_odp_caps);
    put!(s, "\txrc_odp_caps:");
    odp_trans(s, r.xrc_odp_caps);
}

/// The completion timestamp mask, the core clock, and the raw packet offloads (only when any).
fn clock_and_raw_packet_caps(s: &mut String, r: &ExQueryDeviceResp) {
    if r.timestamp_mask != 0 {
        put!(
            s,
            "\tcompletion timestamp_mask:\t\t\t0x{:016x}",
            r.timestamp_mask
        );
    } else {
        put!(s, "\tcompletion_timestamp_mask not supported");
    }
    if r.hca_core_clock != 0 {
        put!(s, "\thca_core_clock:\t\t\t{}kHZ", r.hca_core_clock);
    } else {
        put!(s, "\tcore clock not supported");
    }
    if r.raw_packet_caps != 0 {
        put!(s, "\traw packet caps:");
        for (bit, name) in [
            (1u32, "C-VLAN stripping offload"),
            (2, "Scatter FCS offload"),
            (4, "IP csum offload"),
            (8, "Delay drop"),
        ] {
            if r.raw_packet_caps & bit != 0 {
                put!(s, "{FLAG_INDENT}{name}");
            }
        }
    }
}

/// `device_cap_flags_ex` and the names of its upper 32 bits (the lower ones repeat
/// `device_cap_flags`, printed above).
fn cap_flags_ex(s: &mut String, r: &ExQueryDeviceResp) {
    put!(s, "\tdevice_cap_flags_ex:\t\t0x{:X}", r.device_cap_flags_ex);
    let ex = r.device_cap_flags_ex & 0xffff_ffff_0000_0000;
    if ex & (1 << 34) != 0 {
        put!(s, "{FLAG_INDENT}RAW_SCATTER_FCS");
    }
    if ex & (1 << 36) != 0 {
        put!(s, "{FLAG_INDENT}PCI_WRITE_END_PADDING");
    }
    let ex_unknown = ex & !((1u64 << 34) | (1u64 << 36));
    if ex_unknown != 0 {
        put!(s, "{FLAG_INDENT}Unknown flags: 0x{ex_unknown:X}");
    }
}

/// TSO, RSS, the WQ limit and packet pacing.
fn offload_caps(s: &mut String, r: &ExQueryDeviceResp) {
    // TSO, the RSS hash and packet pacing are not in the kernel's answer: libibverbs takes them
    // from the provider's driver data (mlx5's), which we do not decode, so they print as zero,
    // as `ibv_devinfo` prints them on rxe.
    put!(s, "\ttso_caps:");
    put!(s, "\t\tmax_tso:\t\t\t0");
    put!(s, "\trss_caps:");
    put!(
        s,
        "\t\tmax_rwq_indirection_tables:\t\t\t{}",
        r.rss_caps.max_rwq_indirection_tables
    );
    put!(
        s,
        "\t\tmax_rwq_indirection_table_size:\t\t\t{}",
        r.rss_caps.max_rwq_indirection_table_size
    );
    put!(s, "\t\trx_hash_function:\t\t\t\t0x0");
    put!(s, "\t\trx_hash_fields_mask:\t\t\t\t0x0");
    if r.rss_caps.supported_qpts != 0 {
        put!(s, "\t\tsupported_qp:");
        qpt_lines(s, r.rss_caps.supported_qpts);
    }
    put!(s, "\tmax_wq_type_rq:\t\t\t{}", r.max_wq_type_rq);
    put!(s, "\tpacket_pacing_caps:");
    put!(s, "\t\tqp_rate_limit_min:\t0kbps");
    put!(s, "\t\tqp_rate_limit_max:\t0kbps");
}

/// Tag matching limits, or the line saying there is none.
fn tag_matching_caps(s: &mut String, r: &ExQueryDeviceResp) {
    if r.tm_caps.max_num_tags != 0 {
        put!(s, "\tmax_rndv_hdr_size:\t\t{}", r.tm_caps.max_rndv_hdr_size);
        put!(s, "\tmax_num_tags:\t\t\t{}", r.tm_caps.max_num_tags);
        put!(s, "\tmax_ops:\t\t\t{}", r.tm_caps.max_ops);
        put!(s, "\tmax_sge:\t\t\t{}", r.tm_caps.max_sge);
        put!(s, "\tflags:");
        if r.tm_caps.flags & 1 != 0 {
            put!(s, "{FLAG_INDENT}IBV_TM_CAP_RC");
        }
    } else {
        put!(s, "\ttag matching not supported");
    }
}

/// CQ moderation and device memory, each only when the device has it.
fn moderation_and_memory_caps(s: &mut String, r: &ExQueryDeviceResp) {
    if r.cq_moderation_caps.max_cq_moderation_count != 0 && r.cq_moderation_caps.max_cq_moderation_period != 0 {
        put!(s, "\n\tcq moderation caps:");
        put!(s, "\t\tmax_cq_count:\t{}", r.cq_moderation_caps.max_cq_moderation_count);
        put!(s, "\t\tmax_cq_period:\t{} us\n", r.cq_moderation_caps.max_cq_moderation_period);
    }
    if r.max_dm_size != 0 {
        put!(
            s,
            "\tmaximum available device memory:\t{}Bytes\n",
            r.max_dm_size
        );
    }
}

/// One device's block of `ibv_devinfo [-v]` output (one `hca_id:` block; the ports in `ports`
/// are printed in the order given, which the caller has already filtered for `-i`).
pub fn format_devinfo(
    dev: &DeviceInfo,
    attr: &DeviceAttr,
    ports: &[PortReport],
    verbose: bool,
) -> String {
    let mut s = String::new();
    device_header(&mut s, dev, attr);
    if verbose {
        device_verbose(&mut s, attr);
    }
    let transport = dev.node_type.transport();
    for p in ports {
        port_lines(&mut s, p);
        if verbose {
            port_verbose(&mut s, p, transport);
        }
        s.push('\n');
    }
    s
}

/// `hca_id:` to `phys_port_cnt:`, the lines every `ibv_devinfo` prints.
fn device_header(s: &mut String, dev: &DeviceInfo, attr: &DeviceAttr) {
    let transport = dev.node_type.transport();
    put!(s, "hca_id:\t{}", dev.ibdev);
    put!(
        s,
        "\ttransport:\t\t\t{} ({})",
        transport_str(transport),
        transport
    );
    if !attr.fw_ver.is_empty() {
        put!(s, "\tfw_ver:\t\t\t\t{}", attr.fw_ver);
    }
    put!(s, "\tnode_guid:\t\t\t{}", guid_str(attr.node_guid.get()));
    put!(
        s,
        "\tsys_image_guid:\t\t\t{}",
        guid_str(attr.sys_image_guid.get())
    );
    put!(s, "\tvendor_id:\t\t\t0x{:04x}", attr.vendor_id);
    put!(s, "\tvendor_part_id:\t\t\t{}", attr.vendor_part_id as i32);
    put!(s, "\thw_ver:\t\t\t\t0x{:X}", attr.hw_ver);
    if let Some(b) = dev.board_id.as_deref().filter(|b| !b.is_empty()) {
        put!(s, "\tboard_id:\t\t\t{b}");
    }
    put!(s, "\tphys_port_cnt:\t\t\t{}", attr.phys_port_cnt);
}

/// `port:` to `link_layer:`, the port lines every `ibv_devinfo` prints.
fn port_lines(s: &mut String, p: &PortReport) {
    let a = &p.attr;
    put!(s, "\t\tport:\t{}", p.port);
    put!(
        s,
        "\t\t\tstate:\t\t\t{} ({})",
        port_state_str(a.state),
        a.state as i32
    );
    put!(
        s,
        "\t\t\tmax_mtu:\t\t{} ({})",
        mtu_str(a.max_mtu),
        a.max_mtu as i32
    );
    put!(
        s,
        "\t\t\tactive_mtu:\t\t{} ({})",
        mtu_str(a.active_mtu),
        a.active_mtu as i32
    );
    put!(s, "\t\t\tsm_lid:\t\t\t{}", a.sm_lid);
    put!(s, "\t\t\tport_lid:\t\t{}", a.port_lid);
    put!(s, "\t\t\tport_lmc:\t\t0x{:02x}", a.port_lmc);
    put!(s, "\t\t\tlink_layer:\t\t{}", link_layer_str(a.link_layer));
}

/// The port's `-v` lines: its counters and limits, the physical state (InfiniBand transport
/// only), and its non-null GIDs by index.
fn port_verbose(s: &mut String, p: &PortReport, transport: i32) {
    let a = &p.attr;
    put!(s, "\t\t\tmax_msg_sz:\t\t0x{:x}", a.max_msg_sz);
    put!(s, "\t\t\tport_cap_flags:\t\t0x{:08x}", a.port_cap_flags);
    put!(s, "\t\t\tport_cap_flags2:\t0x{:04x}", a.port_cap_flags2);
    put!(
        s,
        "\t\t\tmax_vl_num:\t\t{} ({})",
        vl_str(a.max_vl_num),
        a.max_vl_num
    );
    put!(s, "\t\t\tbad_pkey_cntr:\t\t0x{:x}", a.bad_pkey_cntr);
    put!(s, "\t\t\tqkey_viol_cntr:\t\t0x{:x}", a.qkey_viol_cntr);
    put!(s, "\t\t\tsm_sl:\t\t\t{}", a.sm_sl);
    put!(s, "\t\t\tpkey_tbl_len:\t\t{}", a.pkey_tbl_len);
    put!(s, "\t\t\tgid_tbl_len:\t\t{}", a.gid_tbl_len as i32);
    put!(s, "\t\t\tsubnet_timeout:\t\t{}", a.subnet_timeout);
    put!(s, "\t\t\tinit_type_reply:\t{}", a.init_type_reply);
    put!(
        s,
        "\t\t\tactive_width:\t\t{}X ({})",
        width_str(a.active_width),
        a.active_width
    );
    put!(
        s,
        "\t\t\tactive_speed:\t\t{} ({})",
        speed_str(a.active_speed),
        a.active_speed
    );
    if transport == 0 {
        put!(
            s,
            "\t\t\tphys_state:\t\t{} ({})",
            port_phy_state_str(a.phys_state),
            a.phys_state
        );
    }
    let mut gids: Vec<&GidEntry> = p.gids.iter().filter(|g| !null_gid(&g.gid)).collect();
    gids.sort_by_key(|g| g.index);
    for g in gids {
        s.push_str(&format_gid_line(g, a.link_layer));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn small_formatters() {
        assert_eq!(guid_str(0xfc3c7afffeba5df3), "fc3c:7aff:feba:5df3");
        assert_eq!(guid_str(0), "0000:0000:0000:0000");
        assert_eq!(mtu_str(0), "invalid MTU");
        assert_eq!(width_str(16), "2");
        assert_eq!(speed_str(8), "10.0 Gbps");
        assert_eq!(speed_str(3), "invalid speed");
        assert_eq!(vl_str(5), "15");
        assert_eq!(link_layer_str(9), "Unknown");
        assert_eq!(transport_str(-1), "invalid transport");
        assert_eq!(port_state_str(0), "invalid state");
        assert_eq!(port_phy_state_str(4), "PORT_CONFIGURATION TRAINNING");
        assert_eq!(atomic_cap_str(7), "invalid atomic capability");
    }

    #[test]
    fn cap_flag_lines_and_unknown() {
        let mut s = String::new();
        flag_lines(&mut s, 1 | (1 << 15) | (1 << 31), DEVICE_CAP_FLAGS);
        assert_eq!(
            s,
            "\t\t\t\t\tRESIZE_MAX_WR\n\t\t\t\t\tUnknown flags: 0x80008000\n"
        );
    }

    #[test]
    fn gid_lines() {
        let mut e = GidEntry {
            index: 0,
            port: 1,
            gid: [0xfe, 0x80, 0, 0, 0, 0, 0, 0, 0, 2, 0xc9, 3, 0, 1, 2, 3],
            gid_type: GidType::Ib,
            netdev: None,
        };
        assert_eq!(
            format_gid_line(&e, 1),
            "\t\t\tGID[  0]:\t\tfe80:0000:0000:0000:0002:c903:0001:0203\n"
        );
        e.gid_type = GidType::RoceV1;
        e.index = 17;
        assert_eq!(
            format_gid_line(&e, 2),
            "\t\t\tGID[ 17]:\t\tfe80:0000:0000:0000:0002:c903:0001:0203, RoCE v1\n"
        );
        e.gid_type = GidType::RoceV2;
        e.index = 1000;
        assert_eq!(
            format_gid_line(&e, 2),
            "\t\t\tGID[1000]:\t\tfe80::2:c903:1:203, RoCE v2\n"
        );
    }

    #[test]
    fn negative_like_c() {
        let mut a = DeviceAttr::default();
        a.resp.base.max_qp = u32::MAX;
        let mut s = String::new();
        device_verbose(&mut s, &a);
        assert!(s.contains("\tmax_qp:\t\t\t\t-1\n"));
        assert!(!s.contains("max_srq_wr"));
        assert!(!s.contains("max_map_per_fmr"));
    }
}
