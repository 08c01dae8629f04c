//! Golden `ibv_devices` / `ibv_devinfo [-v]` text: our formatters over the rxe fixture sysfs
//! tree (uverbs/tests/fixtures/sysfs, see its README) and the QUERY_DEVICE / QUERY_PORT answers
//! decoded from our capture of the real `ibv_devinfo`, against that tool's output on the same
//! boot (fixtures/sysfs/golden/).

use std::path::{Path, PathBuf};

use diag::devinfo::format::{format_devinfo, format_devinfo_list, format_ibv_devices, PortReport};
use uverbs::attr::{DeviceAttr, PortAttr};
use uverbs::discovery::{gid, list_devices_with, pick_device, SysfsRoot};

fn fixtures() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../uverbs/tests/fixtures/sysfs")
}
fn rxe_root() -> SysfsRoot {
    SysfsRoot::new(fixtures().join("rxe"))
}
fn golden(name: &str) -> String {
    std::fs::read_to_string(fixtures().join("golden").join(name)).unwrap()
}

/// QUERY_DEVICE (EX) response values of rxe, decoded from our capture of `ibv_devinfo`'s uverbs
/// commands (its 4th command), with the GUIDs of the boot the sysfs and text captures come from.
fn rxe_device_attr() -> DeviceAttr {
    use uverbs::sys::{ExQueryDeviceResp, QueryDeviceResp};
    let mut base = QueryDeviceResp {
        max_mr_size: 0xffffffffffffffff,
        page_size_cap: 0xfffff000,
        vendor_id: 16777215,
        vendor_part_id: 0,
        hw_ver: 0,
        max_qp: 1048560,
        max_qp_wr: 1048576,
        device_cap_flags: 0x1223c76,
        max_sge: 32,
        max_sge_rd: 32,
        max_cq: 1048576,
        max_cqe: 32767,
        max_mr: 524287,
        max_pd: 1048576,
        max_qp_rd_atom: 128,
        max_ee_rd_atom: 0,
        max_res_rd_atom: 258048,
        max_qp_init_rd_atom: 128,
        max_ee_init_rd_atom: 0,
        atomic_cap: 1,
        max_ee: 0,
        max_rdd: 0,
        max_mw: 524287,
        max_raw_ipv6_qp: 0,
        max_raw_ethy_qp: 0,
        max_mcast_grp: 8192,
        max_mcast_qp_attach: 56,
        max_total_mcast_qp_attach: 458752,
        max_ah: 32767,
        max_fmr: 0,
        max_map_per_fmr: 0,
        max_srq: 917503,
        max_srq_wr: 1048576,
        max_srq_sge: 27,
        max_pkeys: 64,
        local_ca_ack_delay: 15,
        phys_port_cnt: 1,
        ..Default::default()
    };
    base.node_guid.set(0xfc3c7afffeba5df3);
    base.sys_image_guid.set(0xfc3c7afffeba5df3);
    DeviceAttr {
        fw_ver: uverbs::attr::fw_ver_from_raw(0),
        resp: ExQueryDeviceResp { base, device_cap_flags_ex: 0x1223c76, ..Default::default() },
        num_comp_vectors: 2, // GET_CONTEXT NUM_COMP_VECTORS (#2)
    }
}

/// QUERY_PORT response of rxe port 1 (#5 of the same decode).
fn rxe_port_attr() -> PortAttr {
    PortAttr {
        state: 4,
        max_mtu: 5,
        active_mtu: 3,
        sm_lid: 0,
        port_lid: 0,
        port_lmc: 0,
        link_layer: 2,
        max_msg_sz: 8388608,
        port_cap_flags: 0x10000,
        port_cap_flags2: 0,
        max_vl_num: 1,
        bad_pkey_cntr: 0,
        qkey_viol_cntr: 0,
        sm_sl: 0,
        pkey_tbl_len: 1,
        gid_tbl_len: 1024,
        subnet_timeout: 0,
        init_type_reply: 0,
        active_width: 1,
        active_speed: 1,
        phys_state: 5,
        flags: 1,
    }
}

#[test]
fn golden_ibv_devices() {
    let devs = list_devices_with(&rxe_root(), false).unwrap();
    assert_eq!(format_ibv_devices(&devs), golden("ibv_devices.txt"));
    assert_eq!(format_devinfo_list(&devs), "1 HCA found:\n\trxe0\n\n");
}

fn rxe_ports() -> Vec<PortReport> {
    let root = rxe_root();
    vec![PortReport {
        port: 1,
        attr: rxe_port_attr(),
        gids: gid::read_gid_table(&root, "rxe0", 1, 2).unwrap(),
    }]
}

#[test]
fn golden_ibv_devinfo() {
    let dev = pick_device(list_devices_with(&rxe_root(), false).unwrap(), None).unwrap();
    let out = format_devinfo(&dev, &rxe_device_attr(), &rxe_ports(), false);
    assert_eq!(out, golden("ibv_devinfo.txt"));
}

#[test]
fn golden_ibv_devinfo_verbose() {
    let dev = pick_device(list_devices_with(&rxe_root(), false).unwrap(), None).unwrap();
    let out = format_devinfo(&dev, &rxe_device_attr(), &rxe_ports(), true);
    let want = golden("ibv_devinfo_v.txt");
    if out != want {
        for (i, (a, b)) in out.lines().zip(want.lines()).enumerate() {
            assert_eq!(a, b, "first difference at line {}", i + 1);
        }
    }
    assert_eq!(out, want);
}

