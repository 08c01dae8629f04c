//! The device formats of `providers::mlx5::hw` (WQE segments, address vector, CQEs) against
//! Debian 12's installed `<infiniband/mlx5dv.h>` (rdma-core 44, package libibverbs-dev),
//! through the gcc probe of tests/support/c_probe.rs. The XRC segment and the crypto BSF live in
//! rdma-core's private wqe.h (not installed): their sizes are checked at compile time in hw.rs,
//! the BSF's bytes by umr.rs's unit tests.

#[path = "../../tests/support/c_probe.rs"]
mod c_probe;

use std::mem::{offset_of, size_of};

use providers::mlx5::hw::*;

macro_rules! fields {
    ($t:ident, $cty:literal, $($f:ident),*) => {{
        let mut v: Vec<(String, u64)> = vec![(format!("sizeof(struct {})", $cty), size_of::<$t>() as u64)];
        $( v.push((format!("offsetof(struct {}, {})", $cty, stringify!($f)), offset_of!($t, $f) as u64)); )*
        v
    }};
}

#[test]
fn device_formats_match_installed_mlx5dv_h() {
    assert!(
        std::path::Path::new("/usr/include/infiniband/mlx5dv.h").exists(),
        "this layout test reads <infiniband/mlx5dv.h>: apt-get install libibverbs-dev (.ci/run installs it)"
    );
    let mut t = Vec::new();
    t.extend(fields!(CtrlSeg, "mlx5_wqe_ctrl_seg", opmod_idx_opcode, qpn_ds, signature, dci_stream_channel_id, fm_ce_se, imm));
    t.extend(fields!(RaddrSeg, "mlx5_wqe_raddr_seg", raddr, rkey, reserved));
    t.extend(fields!(AtomicSeg, "mlx5_wqe_atomic_seg", swap_add, compare));
    t.extend(fields!(DataSeg, "mlx5_wqe_data_seg", byte_count, lkey, addr));
    t.extend(fields!(
        Av, "mlx5_wqe_av", key, dqp_dct, stat_rate_sl, fl_mlid, rlid, reserved0, rmac, tclass, hop_limit, grh_gid_fl, rgid
    ));
    t.push(("sizeof(struct mlx5_wqe_datagram_seg)".into(), size_of::<Av>() as u64));
    t.extend(fields!(
        Cqe64, "mlx5_cqe64", ml_path, slid, flags_rqpn, hds_ip_ext, l4_hdr_type_etc, vlan_info, srqn_uidx, imm_inval_pkey,
        byte_cnt, timestamp, sop_drop_qpn, wqe_counter, signature, op_own
    ));
    t.extend(fields!(
        ErrCqe, "mlx5_err_cqe", srqn, vendor_err_synd, syndrome, s_wqe_opcode_qpn, wqe_counter, signature, op_own
    ));
    t.extend(fields!(UmrCtrlSeg, "mlx5_wqe_umr_ctrl_seg", flags, klm_octowords, bsf_octowords, mkey_mask, rsvd1));
    t.extend(fields!(
        MkeyContextSeg, "mlx5_wqe_mkey_context_seg", free, access_flags, sf, qpn_mkey, flags_pd, start_addr, len,
        bsf_octword_size, reserved3, translations_octword_size, log_page_size, reserved
    ));
    let exprs: Vec<&str> = t.iter().map(|(e, _)| e.as_str()).collect();
    let c = c_probe::c_values("mlx5-hw-layout", &["infiniband/mlx5dv.h"], "", &exprs);
    let bad = c_probe::mismatches(t.iter().map(|(e, ours)| (e.as_str(), *ours, e.as_str())), &c);
    assert!(bad.is_empty(), "layout mismatches:\n{}", bad.join("\n"));
}
