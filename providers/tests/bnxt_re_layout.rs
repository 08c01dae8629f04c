//! bnxt_re driver-data layouts (`providers::bnxt_re::abi`) and constants against the installed
//! kernel headers `<rdma/bnxt_re-abi.h>` and `<rdma/ib_user_ioctl_verbs.h>`, through a
//! gcc-compiled `offsetof`/`sizeof` probe (tests/support/c_probe.rs); and the requests we encode
//! read back through the C structs.

#[path = "../../tests/support/c_probe.rs"]
mod c_probe;

use providers::bnxt_re::abi::*;
use providers::bnxt_re::hw;

fn table() -> Vec<(&'static str, u64)> {
    let u = |v: usize| v as u64;
    vec![
        ("BNXT_RE_ABI_VERSION", ABI_VERSION as u64),
        (
            "RDMA_DRIVER_BNXT_RE",
            uverbs::sys::RDMA_DRIVER_BNXT_RE as u64,
        ),
        ("sizeof(struct bnxt_re_uctx_resp)", u(UCTX_RESP_LEN)),
        (
            "offsetof(struct bnxt_re_uctx_resp, dev_id)",
            u(uctx::DEV_ID),
        ),
        (
            "offsetof(struct bnxt_re_uctx_resp, max_qp)",
            u(uctx::MAX_QP),
        ),
        (
            "offsetof(struct bnxt_re_uctx_resp, pg_size)",
            u(uctx::PG_SIZE),
        ),
        (
            "offsetof(struct bnxt_re_uctx_resp, cqe_sz)",
            u(uctx::CQE_SZ),
        ),
        (
            "offsetof(struct bnxt_re_uctx_resp, max_cqd)",
            u(uctx::MAX_CQD),
        ),
        (
            "offsetof(struct bnxt_re_uctx_resp, comp_mask)",
            u(uctx::COMP_MASK),
        ),
        (
            "offsetof(struct bnxt_re_uctx_resp, chip_id0)",
            u(uctx::CHIP_ID0),
        ),
        (
            "offsetof(struct bnxt_re_uctx_resp, chip_id1)",
            u(uctx::CHIP_ID1),
        ),
        ("offsetof(struct bnxt_re_uctx_resp, mode)", u(uctx::MODE)),
        ("BNXT_RE_UCNTX_CMASK_HAVE_CCTX", CMASK_HAVE_CCTX),
        ("BNXT_RE_UCNTX_CMASK_HAVE_MODE", CMASK_HAVE_MODE),
        ("BNXT_QPLIB_WQE_MODE_STATIC", hw::WQE_MODE_STATIC as u64),
        ("BNXT_QPLIB_WQE_MODE_VARIABLE", hw::WQE_MODE_VARIABLE as u64),
        ("sizeof(struct bnxt_re_pd_resp)", u(PD_RESP_LEN)),
        ("offsetof(struct bnxt_re_pd_resp, pdid)", u(pd::PDID)),
        ("offsetof(struct bnxt_re_pd_resp, dpi)", u(pd::DPI)),
        ("offsetof(struct bnxt_re_pd_resp, dbr)", u(pd::DBR)),
        ("sizeof(struct bnxt_re_cq_req)", u(CQ_REQ_LEN)),
        ("offsetof(struct bnxt_re_cq_req, cq_va)", u(obj::VA)),
        ("offsetof(struct bnxt_re_cq_req, cq_handle)", u(obj::SECOND)),
        ("sizeof(struct bnxt_re_cq_resp)", u(CQ_RESP_LEN)),
        ("offsetof(struct bnxt_re_cq_resp, cqid)", 0),
        ("offsetof(struct bnxt_re_cq_resp, tail)", u(obj::CQ_TAIL)),
        ("offsetof(struct bnxt_re_cq_resp, phase)", u(obj::CQ_PHASE)),
        ("sizeof(struct bnxt_re_qp_req)", u(QP_REQ_LEN)),
        ("offsetof(struct bnxt_re_qp_req, qpsva)", u(obj::VA)),
        ("offsetof(struct bnxt_re_qp_req, qprva)", u(obj::SECOND)),
        (
            "offsetof(struct bnxt_re_qp_req, qp_handle)",
            u(obj::QP_HANDLE),
        ),
        ("sizeof(struct bnxt_re_qp_resp)", u(QP_RESP_LEN)),
        ("offsetof(struct bnxt_re_qp_resp, qpid)", 0),
        ("sizeof(struct bnxt_re_srq_req)", u(SRQ_REQ_LEN)),
        ("offsetof(struct bnxt_re_srq_req, srqva)", u(obj::VA)),
        (
            "offsetof(struct bnxt_re_srq_req, srq_handle)",
            u(obj::SECOND),
        ),
        ("sizeof(struct bnxt_re_srq_resp)", u(SRQ_RESP_LEN)),
        ("BNXT_RE_AVID_OFFT", u(hw::SHPG_AVID_OFF)),
        ("BNXT_RE_CHIP_ID0_CHIP_REV_SFT", 0x10),
    ]
}

#[test]
fn driver_data_matches_the_kernel_header() {
    let t = table();
    let exprs: Vec<&str> = t.iter().map(|(e, _)| *e).collect();
    let c = c_probe::c_values(
        "bnxt-re-layout",
        &[
            "linux/types.h",
            "rdma/bnxt_re-abi.h",
            "rdma/ib_user_ioctl_verbs.h",
        ],
        "",
        &exprs,
    );
    let bad = c_probe::mismatches(t.iter().map(|(e, ours)| (*e, *ours, *e)), &c);
    assert!(bad.is_empty(), "layout mismatches:\n{}", bad.join("\n"));
}

/// Our encoded requests, read through the kernel's structs: each field where the kernel looks.
#[test]
fn requests_read_back_through_the_c_structs() {
    let bytes = |v: &[u8]| {
        v.iter()
            .map(|b| format!("0x{b:02x}"))
            .collect::<Vec<_>>()
            .join(",")
    };
    let prelude = format!(
        "static const unsigned char qp[] = {{{}}};\nstatic const unsigned char cq[] = {{{}}};\nstatic const unsigned char srq[] = {{{}}};\n",
        bytes(&qp_req(0x1111_2222_3333_4444, 0x5555_6666, 0x77)),
        bytes(&cq_req(0x8888_9999, 0xaa)),
        bytes(&srq_req(0xbbbb_cccc, 0xdd)),
    );
    let exprs = [
        "((const struct bnxt_re_qp_req *)qp)->qpsva",
        "((const struct bnxt_re_qp_req *)qp)->qprva",
        "((const struct bnxt_re_qp_req *)qp)->qp_handle",
        "((const struct bnxt_re_cq_req *)cq)->cq_va",
        "((const struct bnxt_re_cq_req *)cq)->cq_handle",
        "((const struct bnxt_re_srq_req *)srq)->srqva",
        "((const struct bnxt_re_srq_req *)srq)->srq_handle",
    ];
    let c = c_probe::c_values(
        "bnxt-re-req",
        &["linux/types.h", "rdma/bnxt_re-abi.h"],
        &prelude,
        &exprs,
    );
    assert_eq!(
        c,
        [
            0x1111_2222_3333_4444,
            0x5555_6666,
            0x77,
            0x8888_9999,
            0xaa,
            0xbbbb_cccc,
            0xdd
        ]
    );
}
