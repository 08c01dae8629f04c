//! Discovery against fixture sysfs trees built from our rxe captures (fixtures/sysfs/, see its
//! README). The golden `ibv_devices` / `ibv_devinfo [-v]` text over the same fixtures is tested
//! where that text is made, in cli/diag/tests/devinfo_golden.rs.

use std::path::{Path, PathBuf};

use uverbs::attr::{GidType, NodeType};
use uverbs::discovery::{
    self, gid, list_devices_with, pick_device, sysfs, GidRule, Source, SysfsRoot,
};

fn fixtures() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/sysfs")
}
fn rxe_root() -> SysfsRoot {
    SysfsRoot::new(fixtures().join("rxe"))
}

/// A scratch directory under the target dir, removed first.
fn scratch(name: &str) -> PathBuf {
    let p = std::env::temp_dir().join(format!("uverbs-disc-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&p);
    std::fs::create_dir_all(&p).unwrap();
    p
}
fn put(root: &Path, rel: &str, text: &str) {
    let p = root.join(rel);
    std::fs::create_dir_all(p.parent().unwrap()).unwrap();
    std::fs::write(p, format!("{text}\n")).unwrap();
}

#[test]
fn sysfs_device_list() {
    let devs = list_devices_with(&rxe_root(), false).unwrap();
    assert_eq!(devs.len(), 1);
    let d = &devs[0];
    assert_eq!(d.ibdev, "rxe0");
    assert_eq!(d.uverbs, "uverbs0");
    assert_eq!(d.uverbs_dev, Some((231, 192)));
    assert_eq!(d.driver_id, 14);
    assert_eq!(d.driver_abi, 2);
    assert_eq!(d.node_guid, 0xfc3c7afffeba5df3);
    assert_eq!(d.sys_image_guid, 0xfc3c7afffeba5df3);
    assert_eq!(d.node_type, NodeType::Ca);
    assert_eq!(d.fw_ver, "");
    assert_eq!(d.board_id, None);
    assert_eq!(d.port_count, 1);
    assert_eq!(d.source, Source::Sysfs);
    assert_eq!(d.uverbs_path(), PathBuf::from("/dev/infiniband/uverbs0"));
    let desc = d.desc();
    assert_eq!(
        (
            desc.ibdev.as_str(),
            desc.uverbs.as_str(),
            desc.driver_id,
            desc.driver_abi
        ),
        ("rxe0", "uverbs0", 14, 2)
    );
}

#[test]
fn pick_first_or_named_device() {
    // The hint names the program's flag once the program installs its spelling (the ib_* tools').
    uverbs::knob::set_spelling(|k| (k == uverbs::knob::Knob::Device).then_some("-d/--ib-dev"));
    let devs = list_devices_with(&rxe_root(), false).unwrap();
    assert_eq!(pick_device(devs.clone(), None).unwrap().ibdev, "rxe0");
    assert_eq!(
        pick_device(devs.clone(), Some("rxe0")).unwrap().ibdev,
        "rxe0"
    );
    let e = pick_device(devs, Some("mlx5_0")).unwrap_err().to_string();
    assert_eq!(
        e,
        "find RDMA device failed: no device named \"mlx5_0\" (devices: rxe0); pick one of those with -d/--ib-dev"
    );
    let e = pick_device(Vec::new(), None).unwrap_err().to_string();
    assert!(e.contains("modprobe rdma_rxe"), "{e}");
}

#[test]
fn empty_sysfs_errors_are_one_clear_line() {
    let root = scratch("empty");
    let e = list_devices_with(&SysfsRoot::new(&root), false)
        .unwrap_err()
        .to_string();
    assert!(!e.contains('\n'));
    assert!(
        e.starts_with("find RDMA device failed: no RDMA device: "),
        "{e}"
    );
    assert!(e.contains("class/infiniband is empty or missing; load a driver (modprobe rdma_rxe; rdma link add rxe0 type rxe netdev eth0)"), "{e}");
    // A device without a uverbs char device.
    put(&root, "class/infiniband/rxe0/node_type", "1: CA");
    let e = list_devices_with(&SysfsRoot::new(&root), false)
        .unwrap_err()
        .to_string();
    assert!(e.contains("rxe0 exist but none has a uverbs char device; load the userspace verbs module (modprobe ib_uverbs)"), "{e}");
    let _ = std::fs::remove_dir_all(&root);
}

#[test]
fn malformed_sysfs_is_an_error_not_a_panic() {
    let root = scratch("bad");
    put(&root, "class/infiniband_verbs/uverbs0/ibdev", "rxe0");
    put(&root, "class/infiniband_verbs/uverbs0/abi_version", "two");
    put(&root, "class/infiniband/rxe0/node_guid", "zz");
    let e = list_devices_with(&SysfsRoot::new(&root), false)
        .unwrap_err()
        .to_string();
    assert!(e.contains("parse sysfs number"), "{e}");
    put(&root, "class/infiniband_verbs/uverbs0/abi_version", "2");
    let e = list_devices_with(&SysfsRoot::new(&root), false)
        .unwrap_err()
        .to_string();
    assert!(e.contains("parse sysfs GUID"), "{e}");
    put(&root, "class/infiniband/rxe0/node_guid", "0:0:0:1");
    put(&root, "class/infiniband/rxe0/ports/1/gids/0", "not a gid");
    let devs = list_devices_with(&SysfsRoot::new(&root), false).unwrap();
    assert_eq!(devs[0].node_guid, 1);
    assert_eq!(devs[0].node_type, NodeType::Unknown(0));
    assert!(gid::read_gid_table(&SysfsRoot::new(&root), "rxe0", 1, 2).is_err());
    let _ = std::fs::remove_dir_all(&root);
}

#[test]
fn mlx5_driver_id_from_modalias() {
    let root = scratch("mlx5");
    put(&root, "class/infiniband_verbs/uverbs1/ibdev", "ibp3s0");
    put(&root, "class/infiniband_verbs/uverbs1/abi_version", "1");
    put(&root, "class/infiniband_verbs/uverbs10/ibdev", "rxe0");
    put(&root, "class/infiniband_verbs/uverbs10/abi_version", "2");
    put(
        &root,
        "class/infiniband/ibp3s0/device/modalias",
        "pci:v000015B3d0000101Dsv000015B3sd00000008bc02sc00i00",
    );
    put(&root, "class/infiniband/ibp3s0/fw_ver", "22.31.1014");
    put(&root, "class/infiniband/ibp3s0/board_id", "MT_0000000359");
    put(&root, "class/infiniband/ibp3s0/ports/1/state", "4: ACTIVE");
    put(&root, "class/infiniband/ibp3s0/ports/2/state", "1: DOWN");
    put(&root, "class/infiniband/rxe0/node_type", "1: CA");
    let devs = list_devices_with(&SysfsRoot::new(&root), false).unwrap();
    let names: Vec<_> = devs
        .iter()
        .map(|d| (d.uverbs.as_str(), d.ibdev.as_str(), d.driver_id))
        .collect();
    assert_eq!(
        names,
        vec![("uverbs1", "ibp3s0", 1), ("uverbs10", "rxe0", 14)]
    );
    assert_eq!(devs[0].fw_ver, "22.31.1014");
    assert_eq!(devs[0].board_id.as_deref(), Some("MT_0000000359"));
    assert_eq!(devs[0].port_count, 2);
    let _ = std::fs::remove_dir_all(&root);
}

#[test]
fn sysfs_port_and_gid_table() {
    let root = rxe_root();
    assert_eq!(sysfs::port_numbers(&root, "rxe0").unwrap(), vec![1]);
    let p = sysfs::read_port(&root, "rxe0", 1).unwrap();
    assert_eq!((p.state, p.phys_state, p.link_layer), (4, 5, 2));
    assert_eq!((p.active_width, p.active_speed), (1, 1));
    assert_eq!(p.port_cap_flags, 0x10000);
    assert_eq!((p.port_lid, p.sm_lid, p.sm_sl, p.port_lmc), (0, 0, 0, 0));
    assert_eq!(p.pkey_tbl_len, 1);
    assert_eq!(p.gid_tbl_len, 4); // the fixture keeps 4 of the 1024 entries
    assert!(sysfs::read_port(&root, "rxe0", 2)
        .unwrap_err()
        .to_string()
        .contains("rxe0 has no port 2"));

    let gids = gid::read_gid_table(&root, "rxe0", 1, p.link_layer).unwrap();
    assert_eq!(gids.len(), 2);
    assert_eq!(gids[0].index, 0);
    assert_eq!(gid::format_ipv6(&gids[0].gid), "fe80::fc3c:7aff:feba:5df3");
    assert_eq!(gids[1].index, 1);
    assert_eq!(gid::format_ipv6(&gids[1].gid), "::ffff:10.99.0.1");
    for g in &gids {
        assert_eq!(g.gid_type, GidType::RoceV2);
        assert_eq!(g.netdev.as_deref(), Some("rxedummy0"));
        assert_eq!(g.port, 1);
    }
    let c = discovery::select_gid(&gids, false, GidRule::default()).unwrap();
    assert_eq!(c.index, 1);
    assert_eq!(
        c.reason,
        "GID index 1: RoCE v2, IPv4 10.99.0.1 on rxedummy0 (preferred: RoCE v2 + IPv4; index 0 is RoCE v2 IPv6 link-local)"
    );
    assert_eq!(
        discovery::select_gid(&gids, false, GidRule::Walk606)
            .unwrap()
            .index,
        1
    );
}

#[test]
fn full_1024_entry_table_is_read_quickly() {
    let root = scratch("gid1024");
    let port = "class/infiniband/rxe0/ports/1";
    for i in 0..1024 {
        let g = match i {
            0 => "fe80:0000:0000:0000:fc3c:7aff:feba:5df3",
            1 => "0000:0000:0000:0000:0000:ffff:0a63:0001",
            _ => "0000:0000:0000:0000:0000:0000:0000:0000",
        };
        put(&root, &format!("{port}/gids/{i}"), g);
    }
    put(&root, &format!("{port}/gid_attrs/types/0"), "RoCE v2");
    put(&root, &format!("{port}/gid_attrs/types/1"), "IB/RoCE v1");
    put(&root, &format!("{port}/gid_attrs/ndevs/0"), "eth0");
    let t = std::time::Instant::now();
    let gids = gid::read_gid_table(&SysfsRoot::new(&root), "rxe0", 1, 2).unwrap();
    let took = t.elapsed();
    assert_eq!(gids.len(), 2);
    assert_eq!(gids[1].gid_type, GidType::RoceV1);
    assert_eq!(gids[1].netdev, None);
    assert!(took.as_secs() < 5, "reading 1024 GID files took {took:?}");
    // No gid_attrs at all (old kernels): IB / RoCE v1 by link layer.
    std::fs::remove_dir_all(root.join(port).join("gid_attrs")).unwrap();
    let gids = gid::read_gid_table(&SysfsRoot::new(&root), "rxe0", 1, 1).unwrap();
    assert!(gids.iter().all(|g| g.gid_type == GidType::Ib));
    let _ = std::fs::remove_dir_all(&root);
}

#[test]
fn rdma_cm_from_sysfs() {
    let c = discovery::rdma_cm_chardev_sysfs(&rxe_root()).unwrap();
    assert_eq!(
        (c.name.as_str(), c.abi, c.dev),
        ("rdma_cm", 4, Some((10, 124)))
    );
    let e = discovery::rdma_cm_chardev_sysfs(&SysfsRoot::new("/nonexistent")).unwrap_err();
    assert!(e.to_string().contains("modprobe rdma_ucm"), "{e}");
}

#[test]
fn live_host_discovery_never_panics() {
    // Whatever this machine has (often no RDMA at all): a list, or one clear line.
    match discovery::list_devices() {
        Ok(v) => {
            for d in v {
                assert!(!d.ibdev.is_empty() && !d.uverbs.is_empty());
            }
        }
        Err(e) => assert!(!e.to_string().contains('\n')),
    }
}
