//! The bit sets of the verbs objects: access flags and the MODIFY_QP attribute mask.

use bitflags::bitflags;

use crate::sys::{self, qp_attr};

bitflags! {
    /// Memory / QP access flags (`enum ib_uverbs_access_flags`).
    #[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
    pub struct AccessFlags: u32 {
        const LOCAL_WRITE = sys::access::LOCAL_WRITE;
        const REMOTE_WRITE = sys::access::REMOTE_WRITE;
        const REMOTE_READ = sys::access::REMOTE_READ;
        const REMOTE_ATOMIC = sys::access::REMOTE_ATOMIC;
        const MW_BIND = sys::access::MW_BIND;
        const ZERO_BASED = sys::access::ZERO_BASED;
        const ON_DEMAND = sys::access::ON_DEMAND;
        const HUGETLB = sys::access::HUGETLB;
        const RELAXED_ORDERING = sys::access::RELAXED_ORDERING;
    }
}

bitflags! {
    /// QP attribute mask (`enum ibv_qp_attr_mask`, the bits a non-ex MODIFY_QP accepts).
    #[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
    pub struct QpAttrMask: u32 {
        const STATE = qp_attr::STATE;
        const CUR_STATE = qp_attr::CUR_STATE;
        const EN_SQD_ASYNC_NOTIFY = qp_attr::EN_SQD_ASYNC_NOTIFY;
        const ACCESS_FLAGS = qp_attr::ACCESS_FLAGS;
        const PKEY_INDEX = qp_attr::PKEY_INDEX;
        const PORT = qp_attr::PORT;
        const QKEY = qp_attr::QKEY;
        const AV = qp_attr::AV;
        const PATH_MTU = qp_attr::PATH_MTU;
        const TIMEOUT = qp_attr::TIMEOUT;
        const RETRY_CNT = qp_attr::RETRY_CNT;
        const RNR_RETRY = qp_attr::RNR_RETRY;
        const RQ_PSN = qp_attr::RQ_PSN;
        const MAX_QP_RD_ATOMIC = qp_attr::MAX_QP_RD_ATOMIC;
        const ALT_PATH = qp_attr::ALT_PATH;
        const MIN_RNR_TIMER = qp_attr::MIN_RNR_TIMER;
        const SQ_PSN = qp_attr::SQ_PSN;
        const MAX_DEST_RD_ATOMIC = qp_attr::MAX_DEST_RD_ATOMIC;
        const PATH_MIG_STATE = qp_attr::PATH_MIG_STATE;
        const CAP = qp_attr::CAP;
        const DEST_QPN = qp_attr::DEST_QPN;
    }
}

#[cfg(test)]
mod tests {
    use super::AccessFlags;

    #[test]
    fn access_flag_values() {
        assert_eq!((AccessFlags::LOCAL_WRITE | AccessFlags::REMOTE_WRITE | AccessFlags::RELAXED_ORDERING).bits(), 0x100003);
    }
}
