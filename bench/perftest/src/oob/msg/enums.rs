//! The wire enums perftest numbers (docs/perftest-wire.md, "Wire enums"). [`Verb`] and
//! [`AtomicType`] are also the command line's (`crate::params` re-exports them): one numbering,
//! one set of names.

/// Connection type as perftest numbers it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ConnType {
    Rc = 0,
    Uc = 1,
    Ud = 2,
    RawEth = 3,
    Xrc = 4,
    Dc = 5,
    Srd = 6,
}

impl ConnType {
    pub const NAMES: [&'static str; 7] = ["RC", "UC", "UD", "RawEth", "XRC", "DC", "SRD"];
    /// Header / JSON spelling (`RC`, `UD`, …).
    pub fn name(self) -> &'static str {
        Self::NAMES[self as usize]
    }
}

/// Verb as perftest ≥ 6.20 numbers it (this numbering goes on the wire in NEGOTIATE). A tool's
/// base verb is one of Send/Write/Read/Atomic; `--write_with_imm` / `--send_with_imm` switch
/// `Params::verb` to the *Imm variant.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Verb {
    Send = 0,
    SendImm = 1,
    Write = 2,
    WriteImm = 3,
    Read = 4,
    Atomic = 5,
}

impl Verb {
    pub const NAMES: [&'static str; 6] = ["SEND", "SEND_IMM", "WRITE", "WRITE_IMM", "READ", "ATOMIC"];
    /// The wire value (SEND=0 … ATOMIC=5).
    pub fn wire_value(self) -> u32 {
        self as u32
    }
    /// perftest's name in negotiation mismatch messages.
    pub fn name(self) -> &'static str {
        Self::NAMES[self as usize]
    }
    /// Verbs whose data path produces receive completions (SEND, SEND_IMM, WRITE_IMM).
    pub fn has_recv_comp(self) -> bool {
        matches!(self, Verb::Send | Verb::SendImm | Verb::WriteImm)
    }
    /// The test name printed in the header (`RDMA_Write`, `Send`, …).
    pub fn test_name(self) -> &'static str {
        match self {
            Verb::Send => "Send",
            Verb::SendImm => "Send_imm",
            Verb::Write => "RDMA_Write",
            Verb::WriteImm => "RDMA_Write_imm",
            Verb::Read => "RDMA_Read",
            Verb::Atomic => "Atomic",
        }
    }
    /// Latency is reported as RTT/2 for ping-pong verbs, as-is for read/atomic.
    pub fn rtt_factor(self) -> u32 {
        match self {
            Verb::Read | Verb::Atomic => 1,
            _ => 2,
        }
    }
}

/// Atomic operation (`-A`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum AtomicType {
    CmpAndSwap = 0,
    FetchAndAdd = 1,
}

impl AtomicType {
    pub const NAMES: [&'static str; 2] = ["CMP_AND_SWAP", "FETCH_AND_ADD"];
    /// The wire value (CMP_AND_SWAP=0, FETCH_AND_ADD=1).
    pub fn wire_value(self) -> u32 {
        self as u32
    }
    pub fn name(self) -> &'static str {
        Self::NAMES[self as usize]
    }
}
