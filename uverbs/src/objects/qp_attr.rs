//! QP attributes and the state-transition rules (pure): what each MODIFY_QP step carries per
//! QP type, and the conversions between the verbs layer's address vector and the kernel's.

use super::flags::{AccessFlags, QpAttrMask};
use crate::provider::{AhAttr, QpCaps, QpState, QpType};
use crate::sys;

/// perftest's default Q_Key for UD.
pub const DEFAULT_QKEY: u32 = 0x1111_1111;

/// QP attributes for MODIFY_QP (the fields of `ibv_qp_attr` that a non-ex MODIFY_QP carries).
/// Only the fields named in the mask are sent. The default is all zero in `Reset`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct QpAttr {
    pub qp_state: QpState,
    pub cur_qp_state: QpState,
    /// `enum ibv_mtu` (1 = 256 .. 5 = 4096).
    pub path_mtu: u8,
    pub path_mig_state: u8,
    pub qkey: u32,
    pub rq_psn: u32,
    pub sq_psn: u32,
    pub dest_qp_num: u32,
    pub qp_access_flags: AccessFlags,
    pub pkey_index: u16,
    pub alt_pkey_index: u16,
    pub en_sqd_async_notify: u8,
    pub max_rd_atomic: u8,
    pub max_dest_rd_atomic: u8,
    pub min_rnr_timer: u8,
    pub port_num: u8,
    pub timeout: u8,
    pub retry_cnt: u8,
    pub rnr_retry: u8,
    pub alt_port_num: u8,
    pub alt_timeout: u8,
    /// The primary path (AV).
    pub ah_attr: AhAttr,
    pub alt_ah_attr: AhAttr,
}

/// A [`QpAttr`] from a kernel answer that carries its fields under the same names: QUERY_QP's
/// `ib_uverbs_query_qp_resp` and rdma_cm INIT_QP_ATTR's `ib_uverbs_qp_attr`. The two differ in
/// the width of the state, MTU and migration-state fields (`u8` and `u32`: the values fit a
/// byte), in how they carry the paths, and in `en_sqd_async_notify` (QUERY_QP has none), so
/// the caller passes those three.
macro_rules! qp_attr_from_kernel {
    ($r:expr, en_sqd_async_notify: $en:expr, ah_attr: $ah:expr, alt_ah_attr: $alt:expr) => {{
        let r = $r;
        $crate::objects::QpAttr {
            qp_state: $crate::provider::QpState::from_raw(u32::from(r.qp_state)),
            cur_qp_state: $crate::provider::QpState::from_raw(u32::from(r.cur_qp_state)),
            path_mtu: r.path_mtu as u8,
            path_mig_state: r.path_mig_state as u8,
            qkey: r.qkey,
            rq_psn: r.rq_psn,
            sq_psn: r.sq_psn,
            dest_qp_num: r.dest_qp_num,
            qp_access_flags: $crate::objects::AccessFlags::from_bits_retain(r.qp_access_flags),
            pkey_index: r.pkey_index,
            alt_pkey_index: r.alt_pkey_index,
            en_sqd_async_notify: $en,
            max_rd_atomic: r.max_rd_atomic,
            max_dest_rd_atomic: r.max_dest_rd_atomic,
            min_rnr_timer: r.min_rnr_timer,
            port_num: r.port_num,
            timeout: r.timeout,
            retry_cnt: r.retry_cnt,
            rnr_retry: r.rnr_retry,
            alt_port_num: r.alt_port_num,
            alt_timeout: r.alt_timeout,
            ah_attr: $ah,
            alt_ah_attr: $alt,
        }
    }};
}
pub(crate) use qp_attr_from_kernel;

/// The capacities a CREATE_QP or QUERY_QP answer carries: both kernel structs hold the fields of
/// `ib_uverbs_qp_cap` inline, under its names.
macro_rules! caps_of {
    ($r:expr) => {
        $crate::provider::QpCaps {
            max_send_wr: $r.max_send_wr,
            max_recv_wr: $r.max_recv_wr,
            max_send_sge: $r.max_send_sge,
            max_recv_sge: $r.max_recv_sge,
            max_inline_data: $r.max_inline_data,
        }
    };
}
pub(super) use caps_of;

/// An address vector as the kernel's `ib_uverbs_qp_dest`.
pub fn qp_dest(ah: &AhAttr) -> sys::QpDest {
    sys::QpDest {
        dgid: ah.dgid,
        flow_label: ah.flow_label,
        dlid: ah.dlid,
        reserved: 0,
        sgid_index: ah.sgid_index,
        hop_limit: ah.hop_limit,
        traffic_class: ah.traffic_class,
        sl: ah.sl,
        src_path_bits: 0,
        static_rate: ah.static_rate,
        is_global: ah.is_global as u8,
        port_num: ah.port_num,
    }
}

/// An address vector as the kernel's `ib_uverbs_ah_attr` (CREATE_AH).
pub fn uverbs_ah_attr(ah: &AhAttr) -> sys::AhAttr {
    sys::AhAttr {
        grh: sys::GlobalRoute {
            dgid: ah.dgid,
            flow_label: ah.flow_label,
            sgid_index: ah.sgid_index,
            hop_limit: ah.hop_limit,
            traffic_class: ah.traffic_class,
            reserved: 0,
        },
        dlid: ah.dlid,
        sl: ah.sl,
        src_path_bits: 0,
        static_rate: ah.static_rate,
        is_global: ah.is_global as u8,
        port_num: ah.port_num,
        reserved: 0,
    }
}

/// An address vector from the kernel's `ib_uverbs_ah_attr` (rdma_cm INIT_QP_ATTR answers and
/// UD event parameters); the inverse of [`uverbs_ah_attr`] for the fields [`AhAttr`] carries.
pub fn ah_from_uverbs(a: &sys::AhAttr) -> AhAttr {
    AhAttr {
        dgid: a.grh.dgid,
        flow_label: a.grh.flow_label,
        sgid_index: a.grh.sgid_index,
        hop_limit: a.grh.hop_limit,
        traffic_class: a.grh.traffic_class,
        is_global: a.is_global != 0,
        dlid: a.dlid,
        sl: a.sl,
        port_num: a.port_num,
        static_rate: a.static_rate,
    }
}

/// The attributes and capacities a QUERY_QP response reports.
pub fn query_attr(r: &sys::QueryQpResp) -> (QpAttr, QpCaps) {
    let ah = |d: &sys::QpDest| AhAttr {
        dgid: d.dgid,
        flow_label: d.flow_label,
        sgid_index: d.sgid_index,
        hop_limit: d.hop_limit,
        traffic_class: d.traffic_class,
        is_global: d.is_global != 0,
        dlid: d.dlid,
        sl: d.sl,
        port_num: d.port_num,
        static_rate: d.static_rate,
    };
    let attr = qp_attr_from_kernel!(r, en_sqd_async_notify: 0, ah_attr: ah(&r.dest), alt_ah_attr: ah(&r.alt_dest));
    (attr, caps_of!(r))
}

/// The MODIFY_QP request for `attr` under `mask`: only masked fields are copied (the rest are
/// zero), as rdma-core does.
pub fn modify_request(qp_handle: u32, attr: &QpAttr, mask: QpAttrMask) -> sys::ModifyQp {
    let m = |b: QpAttrMask| mask.contains(b);
    let mut r = sys::ModifyQp { qp_handle, attr_mask: mask.bits(), ..Default::default() };
    if m(QpAttrMask::STATE) {
        r.qp_state = attr.qp_state as u8;
    }
    if m(QpAttrMask::CUR_STATE) {
        r.cur_qp_state = attr.cur_qp_state as u8;
    }
    if m(QpAttrMask::EN_SQD_ASYNC_NOTIFY) {
        r.en_sqd_async_notify = attr.en_sqd_async_notify;
    }
    if m(QpAttrMask::ACCESS_FLAGS) {
        r.qp_access_flags = attr.qp_access_flags.bits();
    }
    if m(QpAttrMask::PKEY_INDEX) {
        r.pkey_index = attr.pkey_index;
    }
    if m(QpAttrMask::PORT) {
        r.port_num = attr.port_num;
    }
    if m(QpAttrMask::QKEY) {
        r.qkey = attr.qkey;
    }
    if m(QpAttrMask::AV) {
        r.dest = qp_dest(&attr.ah_attr);
    }
    if m(QpAttrMask::PATH_MTU) {
        r.path_mtu = attr.path_mtu;
    }
    if m(QpAttrMask::TIMEOUT) {
        r.timeout = attr.timeout;
    }
    if m(QpAttrMask::RETRY_CNT) {
        r.retry_cnt = attr.retry_cnt;
    }
    if m(QpAttrMask::RNR_RETRY) {
        r.rnr_retry = attr.rnr_retry;
    }
    if m(QpAttrMask::RQ_PSN) {
        r.rq_psn = attr.rq_psn;
    }
    if m(QpAttrMask::MAX_QP_RD_ATOMIC) {
        r.max_rd_atomic = attr.max_rd_atomic;
    }
    if m(QpAttrMask::ALT_PATH) {
        r.alt_dest = qp_dest(&attr.alt_ah_attr);
        r.alt_pkey_index = attr.alt_pkey_index;
        r.alt_port_num = attr.alt_port_num;
        r.alt_timeout = attr.alt_timeout;
    }
    if m(QpAttrMask::MIN_RNR_TIMER) {
        r.min_rnr_timer = attr.min_rnr_timer;
    }
    if m(QpAttrMask::SQ_PSN) {
        r.sq_psn = attr.sq_psn;
    }
    if m(QpAttrMask::MAX_DEST_RD_ATOMIC) {
        r.max_dest_rd_atomic = attr.max_dest_rd_atomic;
    }
    if m(QpAttrMask::PATH_MIG_STATE) {
        r.path_mig_state = attr.path_mig_state;
    }
    if m(QpAttrMask::DEST_QPN) {
        r.dest_qp_num = attr.dest_qp_num;
    }
    r
}

/// RESET → INIT attributes and mask for a QP type. UD uses `qkey`; RC/UC use `access`.
pub fn init_attr(qp_type: QpType, port: u8, pkey_index: u16, access: AccessFlags, qkey: u32) -> (QpAttr, QpAttrMask) {
    let mut a = QpAttr { qp_state: QpState::Init, port_num: port, pkey_index, ..Default::default() };
    let mut mask = QpAttrMask::STATE | QpAttrMask::PKEY_INDEX | QpAttrMask::PORT;
    match qp_type {
        // EFA's kernel checks an SRD QP's modifies as UD's.
        QpType::Ud | QpType::Srd => {
            a.qkey = qkey;
            mask |= QpAttrMask::QKEY;
        }
        QpType::Rc | QpType::Uc | QpType::Dct | QpType::XrcIni | QpType::XrcTgt => {
            a.qp_access_flags = access;
            mask |= QpAttrMask::ACCESS_FLAGS;
        }
        // mlx5 modify_dci_qp_is_ok: RESET→INIT takes exactly state, pkey index and port.
        QpType::Dci => {}
    }
    (a, mask)
}

/// The remote side for INIT → RTR (RC and UC; UD needs none of it).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct RtrParams {
    /// `enum ibv_mtu`.
    pub path_mtu: u8,
    pub dest_qpn: u32,
    /// The peer's initial send PSN (24 bits).
    pub rq_psn: u32,
    /// RC: incoming RDMA READ / atomic depth (≥ 1 if the peer reads or does atomics).
    pub max_dest_rd_atomic: u8,
    /// RC: RNR NAK timer code (12 ≈ 0.64 ms, perftest's value).
    pub min_rnr_timer: u8,
    /// The path: RoCE needs `is_global` with dgid, sgid_index, hop_limit; IB uses dlid and no GRH.
    pub ah: AhAttr,
}

impl RtrParams {
    /// A RoCE (v2) path: GRH with `dgid`, `sgid_index`, hop limit 64 — or whatever `hop_limit` says.
    pub fn roce_path(port: u8, dgid: [u8; 16], sgid_index: u8, hop_limit: u8) -> AhAttr {
        AhAttr { dgid, sgid_index, hop_limit, is_global: true, port_num: port, ..Default::default() }
    }
    /// An InfiniBand path inside a subnet: destination LID, no GRH.
    pub fn ib_path(port: u8, dlid: u16, sl: u8) -> AhAttr {
        AhAttr { dlid, sl, is_global: false, port_num: port, ..Default::default() }
    }
}

/// INIT → RTR attributes and mask for a QP type.
pub fn rtr_attr(qp_type: QpType, p: &RtrParams) -> (QpAttr, QpAttrMask) {
    let mut a = QpAttr { qp_state: QpState::Rtr, ..Default::default() };
    let mut mask = QpAttrMask::STATE;
    if qp_type.is_dc() {
        // DC has no fixed peer: the path (AV, MTU) only. A DCT also takes its RNR NAK timer
        // (mlx5 modify_dci_qp_is_ok / mlx5_ib_modify_dct, perftest's masks).
        a.ah_attr = p.ah;
        a.path_mtu = p.path_mtu;
        mask |= QpAttrMask::AV | QpAttrMask::PATH_MTU;
        if qp_type == QpType::Dct {
            a.min_rnr_timer = p.min_rnr_timer;
            mask |= QpAttrMask::MIN_RNR_TIMER;
        }
        return (a, mask);
    }
    if !qp_type.is_datagram() {
        a.ah_attr = p.ah;
        a.path_mtu = p.path_mtu;
        a.dest_qp_num = p.dest_qpn;
        a.rq_psn = p.rq_psn & 0xff_ffff;
        mask |= QpAttrMask::AV | QpAttrMask::PATH_MTU | QpAttrMask::DEST_QPN | QpAttrMask::RQ_PSN;
    }
    // The responder attributes: RC and the XRC target (the kernel's qp_state_table requires
    // them for those types only; an XRC initiator never responds).
    if matches!(qp_type, QpType::Rc | QpType::XrcTgt) {
        a.max_dest_rd_atomic = p.max_dest_rd_atomic;
        a.min_rnr_timer = p.min_rnr_timer;
        mask |= QpAttrMask::MAX_DEST_RD_ATOMIC | QpAttrMask::MIN_RNR_TIMER;
    }
    (a, mask)
}

/// RTR → RTS parameters.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RtsParams {
    /// Own initial send PSN (24 bits).
    pub sq_psn: u32,
    /// RC: local ACK timeout code (≤ 31; 14 ≈ 67 ms).
    pub timeout: u8,
    /// RC: transport retries (≤ 7).
    pub retry_cnt: u8,
    /// RC: RNR retries (7 = infinite).
    pub rnr_retry: u8,
    /// RC: outstanding RDMA READ / atomic depth. Must be ≥ 1 when READs or atomics are posted
    /// (0 is accepted by rxe but such requests then never complete).
    pub max_rd_atomic: u8,
}

impl Default for RtsParams {
    fn default() -> Self {
        RtsParams { sq_psn: 0, timeout: 14, retry_cnt: 7, rnr_retry: 7, max_rd_atomic: 1 }
    }
}

/// RTR → RTS attributes and mask for a QP type.
pub fn rts_attr(qp_type: QpType, p: &RtsParams) -> (QpAttr, QpAttrMask) {
    let mut a = QpAttr { qp_state: QpState::Rts, sq_psn: p.sq_psn & 0xff_ffff, ..Default::default() };
    let mut mask = QpAttrMask::STATE | QpAttrMask::SQ_PSN;
    // A DCI takes RC's RTS set (modify_dci_qp_is_ok). A DCT never leaves RTR.
    if matches!(qp_type, QpType::Rc | QpType::Dci | QpType::XrcIni) {
        a.timeout = p.timeout;
        a.retry_cnt = p.retry_cnt;
        a.rnr_retry = p.rnr_retry;
        a.max_rd_atomic = p.max_rd_atomic;
        mask |= QpAttrMask::TIMEOUT | QpAttrMask::RETRY_CNT | QpAttrMask::RNR_RETRY | QpAttrMask::MAX_QP_RD_ATOMIC;
    } else if qp_type == QpType::XrcTgt {
        // A target sends only ACKs: the timeout is all it takes (as for RC's responder side).
        a.timeout = p.timeout;
        mask |= QpAttrMask::TIMEOUT;
    }
    (a, mask)
}

#[cfg(test)]
mod tests {
    use super::{
        ah_from_uverbs, init_attr, modify_request, query_attr, rtr_attr, rts_attr, uverbs_ah_attr, AccessFlags, AhAttr,
        QpState, QpType, RtrParams, RtsParams,
    };
    use crate::sys;

    #[test]
    fn qp_states_and_address_vectors_decode_as_encoded() {
        for v in 0..=6u32 {
            assert_eq!(QpState::from_raw(v) as u32, v);
        }
        // Outside enum ib_qp_state (also a u32 whose low byte is a valid state): Reset.
        for v in [7, 0xff, 0x101, u32::MAX] {
            assert_eq!(QpState::from_raw(v), QpState::Reset);
        }
        let ah = AhAttr {
            dgid: std::array::from_fn(|i| i as u8 + 1),
            flow_label: 0x000a_bcde,
            sgid_index: 3,
            hop_limit: 64,
            traffic_class: 0x28,
            is_global: true,
            dlid: 0x1234,
            sl: 5,
            port_num: 2,
            static_rate: 7,
        };
        assert_eq!(ah_from_uverbs(&uverbs_ah_attr(&ah)), ah);
        let local = AhAttr { is_global: false, ..ah };
        assert_eq!(ah_from_uverbs(&uverbs_ah_attr(&local)), local);
    }

    const RC_INIT: u32 = 0x39;
    const RC_RTR: u32 = 0x129181;
    const RC_RTS: u32 = 0x12E01;

    #[test]
    fn masks_per_type() {
        let acc = AccessFlags::REMOTE_WRITE;
        assert_eq!(init_attr(QpType::Rc, 1, 0, acc, 0).1.bits(), RC_INIT);
        assert_eq!(init_attr(QpType::Uc, 1, 0, acc, 0).1.bits(), RC_INIT);
        assert_eq!(init_attr(QpType::Ud, 1, 0, acc, 7).1.bits(), 0x71);
        let p = RtrParams { path_mtu: 3, dest_qpn: 0x13, rq_psn: 0xc9613b, max_dest_rd_atomic: 1, min_rnr_timer: 12, ..Default::default() };
        assert_eq!(rtr_attr(QpType::Rc, &p).1.bits(), RC_RTR);
        assert_eq!(rtr_attr(QpType::Uc, &p).1.bits(), 0x1 | 0x80 | 0x100 | 0x100000 | 0x1000);
        assert_eq!(rtr_attr(QpType::Ud, &p).1.bits(), 0x1);
        let r = RtsParams::default();
        assert_eq!(rts_attr(QpType::Rc, &r).1.bits(), RC_RTS);
        assert_eq!(rts_attr(QpType::Uc, &r).1.bits(), 0x10001);
        assert_eq!(rts_attr(QpType::Ud, &r).1.bits(), 0x10001);
    }

    #[test]
    fn dc_modify_masks_match_the_mlx5_kernel_rules() {
        // Kernel mlx5 modify_dci_qp_is_ok (DCI) and mlx5_ib_modify_dct (DCT); also perftest's.
        let (a, m) = init_attr(QpType::Dci, 1, 0, AccessFlags::REMOTE_WRITE, 0x1111);
        assert_eq!(m.bits(), 0x1 | 0x10 | 0x20, "DCI INIT: state, pkey index, port");
        assert!(a.qp_access_flags.is_empty());
        let (a, m) = init_attr(QpType::Dct, 1, 0, AccessFlags::REMOTE_WRITE, 0x1111);
        assert_eq!(m.bits(), 0x1 | 0x8 | 0x10 | 0x20, "DCT INIT: + access flags");
        assert_eq!(a.qp_access_flags, AccessFlags::REMOTE_WRITE);
        let p = RtrParams { path_mtu: 3, dest_qpn: 0x99, rq_psn: 5, max_dest_rd_atomic: 4, min_rnr_timer: 12, ah: RtrParams::roce_path(1, [7; 16], 1, 64) };
        let (a, m) = rtr_attr(QpType::Dci, &p);
        assert_eq!(m.bits(), 0x1 | 0x80 | 0x100, "DCI RTR: state, AV, path MTU");
        assert_eq!((a.dest_qp_num, a.rq_psn, a.path_mtu), (0, 0, 3), "no fixed peer");
        assert_eq!(a.ah_attr.dgid, [7; 16]);
        let (a, m) = rtr_attr(QpType::Dct, &p);
        assert_eq!(m.bits(), 0x1 | 0x80 | 0x100 | 0x8000, "DCT RTR: + min RNR timer");
        assert_eq!(a.min_rnr_timer, 12);
        let r = RtsParams { sq_psn: 0x123, ..Default::default() };
        assert_eq!(rts_attr(QpType::Dci, &r).1.bits(), RC_RTS, "DCI RTS: RC's set");
        assert_eq!(QpType::Dci.uverbs_type(), 0xff);
        assert_eq!(QpType::Dct.uverbs_type(), 0xff);
        assert_eq!(QpType::Ud.uverbs_type(), 4);
    }

    #[test]
    fn xrc_masks_are_the_kernels_required_sets() {
        // The kernel's qp_state_table (core/verbs.c): RESET→INIT as RC for both XRC types;
        // INIT→RTR: the initiator as UC (no responder resources), the target as RC;
        // RTR→RTS: the initiator as RC, the target TIMEOUT | SQ_PSN only (anything more is
        // refused by ib_modify_qp_is_ok).
        let acc = AccessFlags::REMOTE_WRITE;
        assert_eq!(init_attr(QpType::XrcIni, 1, 0, acc, 0).1.bits(), RC_INIT);
        assert_eq!(init_attr(QpType::XrcTgt, 1, 0, acc, 0).1.bits(), RC_INIT);
        let p = RtrParams { path_mtu: 3, dest_qpn: 0x13, rq_psn: 1, max_dest_rd_atomic: 1, min_rnr_timer: 12, ..Default::default() };
        assert_eq!(rtr_attr(QpType::XrcIni, &p).1.bits(), 0x1 | 0x80 | 0x100 | 0x100000 | 0x1000);
        assert_eq!(rtr_attr(QpType::XrcTgt, &p).1.bits(), RC_RTR);
        let r = RtsParams::default();
        assert_eq!(rts_attr(QpType::XrcIni, &r).1.bits(), RC_RTS);
        assert_eq!(rts_attr(QpType::XrcTgt, &r).1.bits(), 0x1 | 0x200 | 0x10000);
    }

    #[test]
    fn modify_copies_only_masked_fields() {
        let (mut a, m) = init_attr(QpType::Ud, 1, 0, AccessFlags::all(), 0x11111111);
        a.sq_psn = 99; // not in mask
        let r = modify_request(3, &a, m);
        assert_eq!((r.qp_handle, r.attr_mask, r.qp_state, r.port_num, r.qkey), (3, 0x71, 1, 1, 0x11111111));
        assert_eq!(r.qp_access_flags, 0);
        assert_eq!(r.sq_psn, 0);
    }

    #[test]
    fn roce_and_ib_paths() {
        let p = RtrParams { ah: RtrParams::roce_path(1, [9; 16], 1, 255), path_mtu: 3, ..Default::default() };
        let r = modify_request(3, &rtr_attr(QpType::Rc, &p).0, rtr_attr(QpType::Rc, &p).1);
        assert_eq!((r.dest.is_global, r.dest.sgid_index, r.dest.hop_limit, r.dest.port_num), (1, 1, 255, 1));
        assert_eq!(r.dest.dgid, [9; 16]);
        let p = RtrParams { ah: RtrParams::ib_path(1, 0x17, 2), ..Default::default() };
        let (a, m) = rtr_attr(QpType::Uc, &p);
        let r = modify_request(3, &a, m);
        assert_eq!((r.dest.is_global, r.dest.dlid, r.dest.sl, r.dest.dgid), (0, 0x17, 2, [0; 16]));
    }

    #[test]
    fn static_rate_goes_into_modify_and_comes_back_from_query() {
        use zerocopy::IntoBytes;
        // perftest's HW rate limiter: ah_attr.static_rate = IBV_RATE_10_GBPS (3) at RTR.
        let p = RtrParams { ah: AhAttr { static_rate: 3, ..RtrParams::roce_path(1, [9; 16], 1, 255) }, ..Default::default() };
        let (a, m) = rtr_attr(QpType::Rc, &p);
        let r = modify_request(3, &a, m);
        assert_eq!(r.dest.static_rate, 3);
        assert_eq!(r.alt_dest.static_rate, 0);
        // Byte 29 of ib_uverbs_qp_dest, the first member of the request.
        assert_eq!(r.as_bytes()[29], 3);
        // UD carries no AV at RTR: the rate goes to the address handle instead.
        assert_eq!(modify_request(3, &rtr_attr(QpType::Ud, &p).0, rtr_attr(QpType::Ud, &p).1).dest.static_rate, 0);
        assert_eq!(uverbs_ah_attr(&p.ah).static_rate, 3);

        let mut resp = sys::QueryQpResp::default();
        resp.as_mut_bytes()[29] = 7; // dest.static_rate
        resp.as_mut_bytes()[32 + 29] = 2; // alt_dest.static_rate
        resp.qp_state = 3;
        resp.max_inline_data = 64;
        let (attr, caps) = query_attr(&resp);
        assert_eq!((attr.ah_attr.static_rate, attr.alt_ah_attr.static_rate), (7, 2));
        assert_eq!((attr.qp_state, caps.max_inline_data), (QpState::Rts, 64));
    }

    #[test]
    fn psn_masked_to_24_bits() {
        let p = RtrParams { rq_psn: 0xffff_ffff, ..Default::default() };
        assert_eq!(rtr_attr(QpType::Rc, &p).0.rq_psn, 0xff_ffff);
        let r = RtsParams { sq_psn: 0x1ff_ffff, ..Default::default() };
        assert_eq!(rts_attr(QpType::Rc, &r).0.sq_psn, 0xff_ffff);
    }
}
