//! Data-path types shared by every provider: work requests in, work completions out.
//!
//! These are plain values with no pointers into provider state, so the engine can build them once
//! and post them over and over. Numeric values follow the kernel uAPI (`ib_user_verbs.h`) so that
//! a provider that hands opcodes to the kernel (rxe) can use them as they are.

/// One scatter/gather element: `length` bytes at virtual address `addr`, registered under `lkey`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Sge {
    pub addr: u64,
    pub length: u32,
    pub lkey: u32,
}

/// Send work request opcodes (values of `enum ib_uverbs_wr_opcode`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[repr(u32)]
pub enum WrOpcode {
    RdmaWrite = 0,
    RdmaWriteWithImm = 1,
    Send = 2,
    SendWithImm = 3,
    RdmaRead = 4,
    AtomicCmpAndSwp = 5,
    AtomicFetchAndAdd = 6,
}

impl WrOpcode {
    pub fn name(self) -> &'static str {
        match self {
            WrOpcode::RdmaWrite => "RDMA_WRITE",
            WrOpcode::RdmaWriteWithImm => "RDMA_WRITE_WITH_IMM",
            WrOpcode::Send => "SEND",
            WrOpcode::SendWithImm => "SEND_WITH_IMM",
            WrOpcode::RdmaRead => "RDMA_READ",
            WrOpcode::AtomicCmpAndSwp => "ATOMIC_CMP_AND_SWP",
            WrOpcode::AtomicFetchAndAdd => "ATOMIC_FETCH_AND_ADD",
        }
    }
    pub fn is_atomic(self) -> bool {
        matches!(self, WrOpcode::AtomicCmpAndSwp | WrOpcode::AtomicFetchAndAdd)
    }
    pub fn has_imm(self) -> bool {
        matches!(self, WrOpcode::RdmaWriteWithImm | WrOpcode::SendWithImm)
    }
}

/// `IBV_SEND_*` flags (values of `enum ibv_send_flags`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct SendFlags(pub u32);

impl SendFlags {
    pub const FENCE: SendFlags = SendFlags(1);
    pub const SIGNALED: SendFlags = SendFlags(2);
    pub const SOLICITED: SendFlags = SendFlags(4);
    pub const INLINE: SendFlags = SendFlags(8);
    pub const fn empty() -> Self {
        SendFlags(0)
    }
    pub const fn contains(self, other: SendFlags) -> bool {
        self.0 & other.0 == other.0
    }
    pub const fn union(self, other: SendFlags) -> Self {
        SendFlags(self.0 | other.0)
    }
}

impl core::ops::BitOr for SendFlags {
    type Output = SendFlags;
    fn bitor(self, rhs: SendFlags) -> SendFlags {
        self.union(rhs)
    }
}

/// Remote side of an RDMA WRITE/READ or atomic.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct RemoteAddr {
    pub addr: u64,
    pub rkey: u32,
}

/// Where a UD send goes. `ah` is the provider's address handle number (rxe: the kernel's
/// `ah_num`; mlx5: an index into the provider's AV table); providers define what it names.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct UdDest {
    pub ah: u32,
    pub remote_qpn: u32,
    pub remote_qkey: u32,
}

/// A send work request. Borrowed SGEs: no allocation per post.
#[derive(Clone, Copy, Debug)]
pub struct SendWr<'a> {
    pub wr_id: u64,
    pub opcode: WrOpcode,
    pub flags: SendFlags,
    pub sgl: &'a [Sge],
    /// Immediate data in network byte order as the application gives it (like `ibv_send_wr`).
    pub imm_data: u32,
    /// RDMA WRITE/READ and atomics: the remote buffer.
    pub remote: RemoteAddr,
    /// Atomics: compare value (CAS) or the addend (FAA).
    pub compare_add: u64,
    /// Atomics: swap value (CAS only).
    pub swap: u64,
    /// UD only.
    pub ud: Option<UdDest>,
    /// XRC initiator QPs only: the SRQ number at the target that receives this request (0
    /// otherwise).
    pub remote_srqn: u32,
    /// DCI QPs only: the DCI stream this request goes on (`mlx5dv_wr_set_dc_addr_stream`'s
    /// `stream_id`, the control segment's `dci_stream_channel_id`); 0 otherwise.
    pub dci_stream: u16,
}

impl<'a> SendWr<'a> {
    /// A request with everything but the opcode and SGEs zeroed.
    pub fn new(wr_id: u64, opcode: WrOpcode, sgl: &'a [Sge]) -> Self {
        SendWr {
            wr_id,
            opcode,
            flags: SendFlags::empty(),
            sgl,
            imm_data: 0,
            remote: RemoteAddr::default(),
            compare_add: 0,
            swap: 0,
            ud: None,
            remote_srqn: 0,
            dci_stream: 0,
        }
    }
    /// Total payload bytes described by the SGE list (saturating: a hostile list cannot overflow).
    pub fn total_len(&self) -> u64 {
        self.sgl.iter().fold(0u64, |a, s| a.saturating_add(s.length as u64))
    }
}

/// A receive work request.
#[derive(Clone, Copy, Debug)]
pub struct RecvWr<'a> {
    pub wr_id: u64,
    pub sgl: &'a [Sge],
}

/// Completion status (values of `enum ibv_wc_status`), with the name perftest and rdma-core print
/// and the most likely cause, so no user ever sees a bare number.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum WcStatus {
    #[default]
    Success,
    LocLenErr,
    LocQpOpErr,
    LocEecOpErr,
    LocProtErr,
    WrFlushErr,
    MwBindErr,
    BadRespErr,
    LocAccessErr,
    RemInvReqErr,
    RemAccessErr,
    RemOpErr,
    RetryExcErr,
    RnrRetryExcErr,
    LocRddViolErr,
    RemInvRdReqErr,
    RemAbortErr,
    InvEecnErr,
    InvEecStateErr,
    FatalErr,
    RespTimeoutErr,
    GeneralErr,
    /// A value outside the known range, kept so it can still be printed.
    Unknown(u32),
}

impl WcStatus {
    pub fn from_raw(v: u32) -> WcStatus {
        use WcStatus::*;
        match v {
            0 => Success,
            1 => LocLenErr,
            2 => LocQpOpErr,
            3 => LocEecOpErr,
            4 => LocProtErr,
            5 => WrFlushErr,
            6 => MwBindErr,
            7 => BadRespErr,
            8 => LocAccessErr,
            9 => RemInvReqErr,
            10 => RemAccessErr,
            11 => RemOpErr,
            12 => RetryExcErr,
            13 => RnrRetryExcErr,
            14 => LocRddViolErr,
            15 => RemInvRdReqErr,
            16 => RemAbortErr,
            17 => InvEecnErr,
            18 => InvEecStateErr,
            19 => FatalErr,
            20 => RespTimeoutErr,
            21 => GeneralErr,
            other => Unknown(other),
        }
    }
    pub fn raw(self) -> u32 {
        use WcStatus::*;
        match self {
            Success => 0,
            LocLenErr => 1,
            LocQpOpErr => 2,
            LocEecOpErr => 3,
            LocProtErr => 4,
            WrFlushErr => 5,
            MwBindErr => 6,
            BadRespErr => 7,
            LocAccessErr => 8,
            RemInvReqErr => 9,
            RemAccessErr => 10,
            RemOpErr => 11,
            RetryExcErr => 12,
            RnrRetryExcErr => 13,
            LocRddViolErr => 14,
            RemInvRdReqErr => 15,
            RemAbortErr => 16,
            InvEecnErr => 17,
            InvEecStateErr => 18,
            FatalErr => 19,
            RespTimeoutErr => 20,
            GeneralErr => 21,
            Unknown(v) => v,
        }
    }
    /// The name `ibv_wc_status_str()` would give, in the `IBV_WC_*` spelling.
    pub fn name(self) -> &'static str {
        use WcStatus::*;
        match self {
            Success => "SUCCESS",
            LocLenErr => "LOC_LEN_ERR",
            LocQpOpErr => "LOC_QP_OP_ERR",
            LocEecOpErr => "LOC_EEC_OP_ERR",
            LocProtErr => "LOC_PROT_ERR",
            WrFlushErr => "WR_FLUSH_ERR",
            MwBindErr => "MW_BIND_ERR",
            BadRespErr => "BAD_RESP_ERR",
            LocAccessErr => "LOC_ACCESS_ERR",
            RemInvReqErr => "REM_INV_REQ_ERR",
            RemAccessErr => "REM_ACCESS_ERR",
            RemOpErr => "REM_OP_ERR",
            RetryExcErr => "RETRY_EXC_ERR",
            RnrRetryExcErr => "RNR_RETRY_EXC_ERR",
            LocRddViolErr => "LOC_RDD_VIOL_ERR",
            RemInvRdReqErr => "REM_INV_RD_REQ_ERR",
            RemAbortErr => "REM_ABORT_ERR",
            InvEecnErr => "INV_EECN_ERR",
            InvEecStateErr => "INV_EEC_STATE_ERR",
            FatalErr => "FATAL_ERR",
            RespTimeoutErr => "RESP_TIMEOUT_ERR",
            GeneralErr => "GENERAL_ERR",
            Unknown(_) => "UNKNOWN",
        }
    }
    /// What usually causes this status, phrased as something the user can check (knobs named
    /// as in [`crate::knob`]).
    pub fn likely_cause(self) -> String {
        use WcStatus::*;
        match self {
            Success => "no error",
            LocLenErr => "a receive buffer was too small for the incoming message, or a length exceeds the port MTU (UD)",
            LocQpOpErr => "the work request is invalid for this QP type or state",
            LocProtErr => "the local buffer is not inside a registered MR (wrong lkey or range)",
            WrFlushErr => "the QP moved to the error state; this request was flushed after an earlier failure",
            MwBindErr => "memory window bind failed",
            BadRespErr => "unexpected transport response from the peer",
            LocAccessErr => "a local access violation on an incoming RDMA READ response or atomic",
            RemInvReqErr => "the peer rejected the request: size beyond its limits or an opcode its QP does not allow",
            RemAccessErr => "the peer rejected the rkey or address: check the exchanged rkey/vaddr and the MR's remote access flags",
            RemOpErr => "the peer could not complete the operation (its receive or memory failed)",
            RetryExcErr => {
                return format!(
                    "no ACK from the peer: check the {}, the MTU, the route and that the peer is alive",
                    crate::knob::named(crate::knob::Knob::GidIndex)
                )
            }
            RnrRetryExcErr => "the peer had no receive posted (receiver not ready): post receives before the sender starts",
            RemAbortErr => "the peer aborted the operation",
            FatalErr => "the device reported a fatal error",
            RespTimeoutErr => "response timeout",
            GeneralErr => "a general device error",
            LocEecOpErr | LocRddViolErr | RemInvRdReqErr | InvEecnErr | InvEecStateErr => {
                "an EE-context error (not used by RC/UC/UD)"
            }
            Unknown(_) => "a status this tool does not know",
        }
        .to_string()
    }
}

impl core::fmt::Display for WcStatus {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        write!(f, "{} ({})", self.name(), self.raw())
    }
}

/// Completion opcodes (values of `enum ibv_wc_opcode`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum WcOpcode {
    #[default]
    Send,
    RdmaWrite,
    RdmaRead,
    CompSwap,
    FetchAdd,
    Recv,
    RecvRdmaWithImm,
    /// `IBV_WC_DRIVER1` (135): a provider opcode outside the kernel's `ib_uverbs_wc_opcode`.
    /// libmlx5 reports it for a signaled UMR that `mlx5dv_wr_mkey_configure` posted.
    Driver1,
    Unknown(u32),
}

impl WcOpcode {
    pub fn from_raw(v: u32) -> WcOpcode {
        match v {
            0 => WcOpcode::Send,
            1 => WcOpcode::RdmaWrite,
            2 => WcOpcode::RdmaRead,
            3 => WcOpcode::CompSwap,
            4 => WcOpcode::FetchAdd,
            0x80 => WcOpcode::Recv,
            0x81 => WcOpcode::RecvRdmaWithImm,
            0x87 => WcOpcode::Driver1,
            other => WcOpcode::Unknown(other),
        }
    }
    pub fn raw(self) -> u32 {
        match self {
            WcOpcode::Send => 0,
            WcOpcode::RdmaWrite => 1,
            WcOpcode::RdmaRead => 2,
            WcOpcode::CompSwap => 3,
            WcOpcode::FetchAdd => 4,
            WcOpcode::Recv => 0x80,
            WcOpcode::RecvRdmaWithImm => 0x81,
            WcOpcode::Driver1 => 0x87,
            WcOpcode::Unknown(v) => v,
        }
    }
    /// The completion opcode a successful send request of this kind produces.
    pub fn for_send(op: WrOpcode) -> WcOpcode {
        match op {
            WrOpcode::RdmaWrite | WrOpcode::RdmaWriteWithImm => WcOpcode::RdmaWrite,
            WrOpcode::Send | WrOpcode::SendWithImm => WcOpcode::Send,
            WrOpcode::RdmaRead => WcOpcode::RdmaRead,
            WrOpcode::AtomicCmpAndSwp => WcOpcode::CompSwap,
            WrOpcode::AtomicFetchAndAdd => WcOpcode::FetchAdd,
        }
    }
}

/// `IBV_WC_*` completion flags.
pub mod wc_flags {
    pub const GRH: u32 = 1;
    pub const WITH_IMM: u32 = 2;
    pub const IP_CSUM_OK: u32 = 4;
    pub const WITH_INV: u32 = 8;
}

/// One completion, provider-neutral (the fields of `struct ibv_wc`). The default is a zeroed
/// successful send.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct WorkCompletion {
    pub wr_id: u64,
    pub status: WcStatus,
    pub opcode: WcOpcode,
    pub vendor_err: u32,
    pub byte_len: u32,
    /// Immediate data in network byte order, as `ibv_wc.imm_data`; valid with `wc_flags::WITH_IMM`.
    pub imm_data: u32,
    pub qp_num: u32,
    pub src_qp: u32,
    pub wc_flags: u32,
    pub pkey_index: u16,
    pub slid: u16,
    pub sl: u8,
    pub dlid_path_bits: u8,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn status_round_trips_and_has_names() {
        for v in 0..=22u32 {
            let s = WcStatus::from_raw(v);
            assert_eq!(s.raw(), v);
            assert!(!s.name().is_empty());
            assert!(!s.likely_cause().is_empty());
        }
        assert_eq!(WcStatus::from_raw(12).name(), "RETRY_EXC_ERR");
        assert!(WcStatus::from_raw(12).likely_cause().contains("GID"));
        assert_eq!(WcStatus::from_raw(99), WcStatus::Unknown(99));
    }

    #[test]
    fn wc_opcode_for_send() {
        assert_eq!(WcOpcode::for_send(WrOpcode::RdmaWriteWithImm), WcOpcode::RdmaWrite);
        assert_eq!(WcOpcode::for_send(WrOpcode::AtomicFetchAndAdd).raw(), 4);
        assert_eq!(WcOpcode::from_raw(0x81), WcOpcode::RecvRdmaWithImm);
    }

    #[test]
    fn wc_opcode_raw_values_follow_ibv_wc_opcode() {
        // IBV_WC_RECV = 1 << 7, then RECV_RDMA_WITH_IMM, TM_ADD, TM_DEL, TM_SYNC, TM_RECV,
        // TM_NO_TAG, DRIVER1 (verbs.h, rdma-core 44).
        let known = [
            (0, WcOpcode::Send),
            (1, WcOpcode::RdmaWrite),
            (2, WcOpcode::RdmaRead),
            (3, WcOpcode::CompSwap),
            (4, WcOpcode::FetchAdd),
            (128, WcOpcode::Recv),
            (129, WcOpcode::RecvRdmaWithImm),
            (135, WcOpcode::Driver1),
        ];
        for (v, o) in known {
            assert_eq!((WcOpcode::from_raw(v), o.raw()), (o, v));
        }
        for v in (0..=300u32).filter(|v| !known.iter().any(|(k, _)| k == v)) {
            assert_eq!(WcOpcode::from_raw(v), WcOpcode::Unknown(v));
        }
    }

    #[test]
    fn total_len_saturates() {
        let sg = [Sge { addr: 0, length: u32::MAX, lkey: 0 }; 3];
        let wr = SendWr::new(1, WrOpcode::Send, &sg);
        assert_eq!(wr.total_len(), 3 * u32::MAX as u64);
    }
}
