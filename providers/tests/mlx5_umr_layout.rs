//! The UMR segments and constants of `providers::mlx5::umr` against Debian 12's installed
//! `<infiniband/mlx5dv.h>` (rdma-core 44, package libibverbs-dev), through the gcc probe of
//! tests/support/c_probe.rs. The crypto BSF (`struct mlx5_crypto_bsf`) lives in rdma-core's
//! private wqe.h, which is not installed: umr.rs's unit tests check it byte by byte instead.

#[path = "../../tests/support/c_probe.rs"]
mod c_probe;

use providers::mlx5::umr::*;

#[test]
fn umr_segments_and_constants_match_installed_mlx5dv_h() {
    let t: Vec<(&str, u64)> = vec![
        ("sizeof(struct mlx5_wqe_umr_ctrl_seg)", UMR_CTRL_LEN as u64),
        ("offsetof(struct mlx5_wqe_umr_ctrl_seg, flags)", off::UMR_FLAGS as u64),
        ("offsetof(struct mlx5_wqe_umr_ctrl_seg, klm_octowords)", off::UMR_KLM_OCTOWORDS as u64),
        ("offsetof(struct mlx5_wqe_umr_ctrl_seg, bsf_octowords)", off::UMR_BSF_OCTOWORDS as u64),
        ("offsetof(struct mlx5_wqe_umr_ctrl_seg, mkey_mask)", off::UMR_MKEY_MASK as u64),
        ("sizeof(struct mlx5_wqe_mkey_context_seg)", MKEY_CTX_LEN as u64),
        ("offsetof(struct mlx5_wqe_mkey_context_seg, free)", off::MKC_FREE as u64),
        ("offsetof(struct mlx5_wqe_mkey_context_seg, access_flags)", off::MKC_ACCESS_FLAGS as u64),
        ("offsetof(struct mlx5_wqe_mkey_context_seg, qpn_mkey)", off::MKC_QPN_MKEY as u64),
        ("offsetof(struct mlx5_wqe_mkey_context_seg, flags_pd)", off::MKC_FLAGS_PD as u64),
        ("offsetof(struct mlx5_wqe_mkey_context_seg, start_addr)", off::MKC_START_ADDR as u64),
        ("offsetof(struct mlx5_wqe_mkey_context_seg, len)", off::MKC_LEN as u64),
        ("sizeof(struct mlx5_wqe_ctrl_seg)", 16),
        ("sizeof(struct mlx5_wqe_data_seg)", 16),
        ("MLX5_OPCODE_UMR", OPCODE_UMR as u64),
        ("MLX5_WQE_CTRL_INITIATOR_SMALL_FENCE", INITIATOR_SMALL_FENCE as u64),
        ("MLX5_WQE_UMR_CTRL_FLAG_INLINE", UMR_CTRL_FLAG_INLINE as u64),
        ("MLX5_WQE_UMR_CTRL_MKEY_MASK_LEN", mkey_mask::LEN),
        ("MLX5_WQE_UMR_CTRL_MKEY_MASK_START_ADDR", mkey_mask::START_ADDR),
        ("MLX5_WQE_UMR_CTRL_MKEY_MASK_BSF_ENABLE", mkey_mask::BSF_ENABLE),
        ("MLX5_WQE_UMR_CTRL_MKEY_MASK_MKEY", mkey_mask::MKEY),
        ("MLX5_WQE_UMR_CTRL_MKEY_MASK_QPN", mkey_mask::QPN),
        ("MLX5_WQE_UMR_CTRL_MKEY_MASK_ACCESS_LOCAL_WRITE", mkey_mask::ACCESS_LOCAL_WRITE),
        ("MLX5_WQE_UMR_CTRL_MKEY_MASK_ACCESS_REMOTE_READ", mkey_mask::ACCESS_REMOTE_READ),
        ("MLX5_WQE_UMR_CTRL_MKEY_MASK_ACCESS_REMOTE_WRITE", mkey_mask::ACCESS_REMOTE_WRITE),
        ("MLX5_WQE_UMR_CTRL_MKEY_MASK_ACCESS_ATOMIC", mkey_mask::ACCESS_ATOMIC),
        ("MLX5_WQE_UMR_CTRL_MKEY_MASK_FREE", mkey_mask::FREE),
        ("MLX5_WQE_MKEY_CONTEXT_ACCESS_FLAGS_ATOMIC", mkc_access::ATOMIC as u64),
        ("MLX5_WQE_MKEY_CONTEXT_ACCESS_FLAGS_REMOTE_WRITE", mkc_access::REMOTE_WRITE as u64),
        ("MLX5_WQE_MKEY_CONTEXT_ACCESS_FLAGS_REMOTE_READ", mkc_access::REMOTE_READ as u64),
        ("MLX5_WQE_MKEY_CONTEXT_ACCESS_FLAGS_LOCAL_WRITE", mkc_access::LOCAL_WRITE as u64),
        ("MLX5DV_CRYPTO_ENGINES_CAP_AES_XTS", engines::AES_XTS as u64),
        ("MLX5DV_CRYPTO_ENGINES_CAP_AES_XTS_SINGLE_BLOCK", engines::SINGLE_BLOCK as u64),
        ("MLX5DV_CRYPTO_ENGINES_CAP_AES_XTS_MULTI_BLOCK", engines::MULTI_BLOCK as u64),
        ("IBV_ACCESS_LOCAL_WRITE", ibv_access::LOCAL_WRITE as u64),
        ("IBV_ACCESS_REMOTE_WRITE", ibv_access::REMOTE_WRITE as u64),
        ("IBV_ACCESS_REMOTE_READ", ibv_access::REMOTE_READ as u64),
        ("IBV_ACCESS_REMOTE_ATOMIC", ibv_access::REMOTE_ATOMIC as u64),
    ];
    let exprs: Vec<&str> = t.iter().map(|(e, _)| *e).collect();
    let c = c_probe::c_values("mlx5-umr-layout", &["infiniband/mlx5dv.h"], "", &exprs);
    let bad = c_probe::mismatches(t.iter().map(|(e, ours)| (*e, *ours, *e)), &c);
    assert!(bad.is_empty(), "layout mismatches:\n{}", bad.join("\n"));
}
