//! The RDMA tests as tables: transport, what each side does, QP shapes, measures, default
//! sizes, the parameters each test uses, who counts what in STAT, the atomic value sequences
//! of the ver_* tests and qperf's names for completion errors. Pure: no verbs here.
//!
//! The facts follow qperf 0.4.11 (see docs/qperf.md, "RDMA tests"): 1024 work requests in
//! flight for streaming tests, one for latency tests; the receiving server of a stream test
//! counts receive completions; RDMA READ and atomics are counted by the client alone, for
//! both sides (the server's CPU never sees them).

#![forbid(unsafe_code)]

use super::super::options::Par;
use super::super::results::Measure;
use super::super::wire::Stat;
use uverbs::wr::WcStatus;

/// Work requests kept in flight by streaming tests (qperf's NCQE).
pub const DEPTH: u32 = 1024;
/// UD receive buffers have room for the 40-byte GRH in front of the payload.
pub const GRH_SIZE: u32 = 40;
/// qperf's Q_Key for UD QPs.
pub const QKEY: u32 = 0x1111_1111;
/// Non-CM RC attributes: RNR NAK timer code, local ACK timeout code, retries.
pub const MIN_RNR_TIMER: u8 = 12;
pub const ACK_TIMEOUT: u8 = 14;
pub const RETRY_CNT: u8 = 7;
pub const RNR_RETRY: u8 = 7;
/// Path MTU the client asks for in non-CM tests when -mt is not given.
pub const DEFAULT_MTU: u32 = 2048;
/// Work request ids: sends, receives, RDMA (writes, reads).
pub const WRID_SEND: u64 = 1;
pub const WRID_RECV: u64 = 2;
pub const WRID_RDMA: u64 = 3;
/// The markers of the *_rdma_write_poll_lat tests: each side waits until the first and last
/// byte of its buffer hold the peer's marker.
pub const POLL_CLIENT_ID: u8 = 0x55;
pub const POLL_SERVER_ID: u8 = 0xAA;
/// The compare-and-swap sequence of ver_rc_compare_swap starts from this value.
pub const CAS_MAGIC: u64 = 0x0123_4567_89ab_cdef;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Transport {
    Rc,
    Uc,
    Ud,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Atomic {
    CompareSwap,
    FetchAdd,
}

/// What the two sides do.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    /// Client streams SENDs, server receives.
    Bw,
    /// Both stream SENDs and receive.
    BiBw,
    /// SEND ping-pong.
    Lat,
    /// Client streams RDMA WRITE with immediate, each consuming a server receive.
    WriteBw,
    /// RDMA WRITE with immediate ping-pong.
    WriteLat,
    /// Plain RDMA WRITE ping-pong, arrival seen by polling the buffer's first and last byte.
    WritePollLat,
    /// Client keeps RDMA READs in flight; the server idles.
    ReadBw,
    /// One RDMA READ at a time.
    ReadLat,
    /// 8-byte atomics at one remote address; the server idles.
    AtomicMr(Atomic),
    /// Atomics with one local result slot each, the values checked against the sequence.
    VerAtomic(Atomic),
}

/// One RDMA test.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RdmaTest {
    pub name: &'static str,
    pub transport: Transport,
    pub kind: Kind,
}

const fn t(name: &'static str, transport: Transport, kind: Kind) -> RdmaTest {
    RdmaTest { name, transport, kind }
}

use Kind as K;
use Transport as T;

/// Every RDMA test of Debian's qperf 0.4.11 (XRC is not built there).
pub const RDMA_TESTS: [RdmaTest; 21] = [
    t("rc_bi_bw", T::Rc, K::BiBw),
    t("rc_bw", T::Rc, K::Bw),
    t("rc_compare_swap_mr", T::Rc, K::AtomicMr(Atomic::CompareSwap)),
    t("rc_fetch_add_mr", T::Rc, K::AtomicMr(Atomic::FetchAdd)),
    t("rc_lat", T::Rc, K::Lat),
    t("rc_rdma_read_bw", T::Rc, K::ReadBw),
    t("rc_rdma_read_lat", T::Rc, K::ReadLat),
    t("rc_rdma_write_bw", T::Rc, K::WriteBw),
    t("rc_rdma_write_lat", T::Rc, K::WriteLat),
    t("rc_rdma_write_poll_lat", T::Rc, K::WritePollLat),
    t("uc_bi_bw", T::Uc, K::BiBw),
    t("uc_bw", T::Uc, K::Bw),
    t("uc_lat", T::Uc, K::Lat),
    t("uc_rdma_write_bw", T::Uc, K::WriteBw),
    t("uc_rdma_write_lat", T::Uc, K::WriteLat),
    t("uc_rdma_write_poll_lat", T::Uc, K::WritePollLat),
    t("ud_bi_bw", T::Ud, K::BiBw),
    t("ud_bw", T::Ud, K::Bw),
    t("ud_lat", T::Ud, K::Lat),
    t("ver_rc_compare_swap", T::Rc, K::VerAtomic(Atomic::CompareSwap)),
    t("ver_rc_fetch_add", T::Rc, K::VerAtomic(Atomic::FetchAdd)),
];

/// Send and receive queue depths of one side.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Shape {
    pub send: u32,
    pub recv: u32,
}

const fn sh(send: u32, recv: u32) -> Shape {
    Shape { send, recv }
}

impl RdmaTest {
    pub fn by_name(name: &str) -> Option<RdmaTest> {
        RDMA_TESTS.iter().copied().find(|t| t.name == name)
    }

    /// Only RC tests may use rdma_cm (qperf forces -cm off for UC and UD).
    pub fn cm_capable(self) -> bool {
        self.transport == Transport::Rc
    }

    pub fn measure(self) -> Measure {
        let sr = self.transport != Transport::Rc;
        match self.kind {
            K::Bw | K::BiBw | K::WriteBw if sr => Measure::BandwidthSr,
            K::Bw | K::BiBw | K::WriteBw | K::ReadBw => Measure::Bandwidth,
            K::Lat | K::WriteLat | K::WritePollLat | K::ReadLat => Measure::Latency,
            K::AtomicMr(_) | K::VerAtomic(_) => Measure::MsgRate,
        }
    }

    /// The message size when -m is not given; None: the test has no size (8-byte atomics).
    pub fn default_size(self) -> Option<u32> {
        match self.kind {
            K::AtomicMr(_) => None,
            K::Bw | K::BiBw if self.transport == Transport::Ud => Some(2 * 1024),
            K::Bw | K::BiBw | K::WriteBw | K::ReadBw | K::VerAtomic(_) => Some(64 * 1024),
            K::Lat | K::WriteLat | K::WritePollLat | K::ReadLat => Some(1),
        }
    }

    /// Queue depths: (client, server).
    pub fn shapes(self) -> (Shape, Shape) {
        match self.kind {
            K::Bw | K::WriteBw => (sh(DEPTH, 0), sh(0, DEPTH)),
            K::BiBw => (sh(DEPTH, DEPTH), sh(DEPTH, DEPTH)),
            K::Lat | K::WriteLat => (sh(1, 1), sh(1, 1)),
            K::WritePollLat => (sh(DEPTH, 0), sh(DEPTH, 0)),
            // The idle server keeps one receive slot (qperf works around a driver that
            // refuses an empty receive queue).
            K::ReadBw | K::AtomicMr(_) | K::VerAtomic(_) => (sh(DEPTH, 0), sh(0, 1)),
            K::ReadLat => (sh(1, 0), sh(0, 1)),
        }
    }

    /// Bytes of this side's registered buffer for `msg_size` (`server`: the server's side).
    pub fn buffer_size(self, server: bool, msg_size: u32) -> u32 {
        let base = match self.kind {
            K::AtomicMr(_) => 8,
            K::VerAtomic(_) if server => 8,
            _ => msg_size,
        };
        let size = if self.transport == Transport::Ud { base.saturating_add(GRH_SIZE) } else { base };
        size.max(1)
    }

    /// The server only idles (the client's READs and atomics need no CPU there).
    pub fn server_idles(self) -> bool {
        matches!(self.kind, K::ReadBw | K::ReadLat | K::AtomicMr(_) | K::VerAtomic(_))
    }

    /// Parameters the client marks as used, beyond time/timeout/affinity (which every test
    /// uses) and the non-CM path parameters (id, sl, static_rate, src_path_bits, mtu_size).
    pub fn uses(self) -> Vec<Par> {
        let mut v = Vec::new();
        match self.kind {
            K::Bw => v.extend([Par::AccessRecv, Par::NoMsgs]),
            K::BiBw => v.push(Par::AccessRecv),
            K::ReadBw => v.extend([Par::AccessRecv, Par::RdAtomic]),
            _ => {}
        }
        // qperf's rc_rdma_write_poll_lat does not use -cp (it spins on memory); the UC one
        // marks it used anyway.
        if !(self.kind == K::WritePollLat && self.transport == Transport::Rc) {
            v.push(Par::PollMode);
        }
        if matches!(self.kind, K::AtomicMr(_) | K::VerAtomic(_)) {
            v.push(Par::RdAtomic);
        }
        v.dedup();
        v
    }

    /// ver_* tests: the number of result slots for `msg_size` (at least 1 needed).
    pub fn ver_slots(msg_size: u32) -> u32 {
        (msg_size / 8).min(DEPTH)
    }
}

/// The i-th value of an atomic sequence: (the value the i-th atomic must return, its
/// compare_add, its swap). CAS: the target goes 0, magic, magic+1, …; each CAS expects the
/// previous value and installs the next. FAA: the target counts up by 1.
pub fn atomic_seq(a: Atomic, i: u64) -> (u64, u64, u64) {
    match a {
        Atomic::CompareSwap => {
            let v = if i == 0 { 0 } else { CAS_MAGIC.wrapping_add(i - 1) };
            (v, v, CAS_MAGIC.wrapping_add(i))
        }
        Atomic::FetchAdd => (i, 1, 0),
    }
}

/// The check of one returned value (`seq` counts from 1, as qperf reports it).
pub fn check_atomic(a: Atomic, index: u64, seen: u64) -> Result<(), String> {
    let want = atomic_seq(a, index).0;
    if seen == want {
        Ok(())
    } else {
        Err(format!("mismatch, sequence {}, expected {want:x}, got {seen:x}", index + 1))
    }
}

/// What happened on one side, for the STAT counters.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Event {
    /// A SEND or RDMA WRITE (with or without immediate) was posted.
    Posted,
    /// An atomic was posted (8 bytes each).
    AtomicPosted,
    /// A receive completed (for SEND or WRITE with immediate), or a polled write arrived.
    Received,
    /// An RDMA READ completed: read here, sent by the peer.
    ReadDone,
    /// An atomic completed: the peer's memory received it.
    AtomicDone,
}

/// Count `ev` for a message of `size` bytes the way qperf counts it.
pub fn count(stat: &mut Stat, ev: Event, size: u32) {
    let b = u64::from(size);
    let add = |u: &mut super::super::wire::Ustat, bytes: u64| {
        u.bytes = u.bytes.wrapping_add(bytes);
        u.msgs = u.msgs.wrapping_add(1);
    };
    match ev {
        Event::Posted => add(&mut stat.s, b),
        Event::AtomicPosted => add(&mut stat.s, 8),
        Event::Received => add(&mut stat.r, b),
        Event::ReadDone => {
            add(&mut stat.r, b);
            add(&mut stat.rem_s, b);
        }
        Event::AtomicDone => add(&mut stat.rem_r, 8),
    }
}

/// qperf's text for a failed completion ("<test> failed: <this>").
pub fn cq_reason(s: WcStatus) -> String {
    use WcStatus::*;
    let t = match s {
        Success => "Success",
        LocLenErr => "Local length error",
        LocQpOpErr => "Local QP operation failure",
        LocEecOpErr => "Local EEC operation failure",
        LocProtErr => "Local protection error",
        WrFlushErr => "WR flush failure",
        MwBindErr => "Memory window bind failure",
        BadRespErr => "Bad response",
        LocAccessErr => "Local access failure",
        RemInvReqErr => "Remote invalid request",
        RemAccessErr => "Remote access failure",
        RemOpErr => "Remote operation failure",
        RetryExcErr => "Retries exceeded",
        RnrRetryExcErr => "RNR retry exceeded",
        LocRddViolErr => "Local RDD violation",
        RemInvRdReqErr => "Remote invalid read request",
        RemAbortErr => "Remote abort",
        InvEecnErr => "Invalid EECN",
        InvEecStateErr => "Invalid EEC state",
        FatalErr => "Fatal error",
        RespTimeoutErr => "Responder timeout",
        GeneralErr => "General error",
        Unknown(n) => return format!("CQ error {n}"),
    };
    t.to_string()
}

/// The whole line for a failed completion: qperf's wording first, then our likely cause.
pub fn cq_error_line(test: &str, s: WcStatus, ethernet: bool) -> String {
    let mut cause = s.likely_cause().to_string();
    if s == WcStatus::RetryExcErr && ethernet {
        cause.push_str("; on RoCE also that both sides use GIDs of the same type and family and that UDP 4791 passes");
    }
    format!("{test} failed: {}; {} ({})", cq_reason(s), cause, s.name())
}

/// `enum ibv_mtu` for a byte size (qperf accepts exactly these five).
pub use uverbs::device::mtu_enum;

/// `enum ibv_rate` for qperf's static rate names ("" and "max": no limit).
pub fn static_rate(name: &str) -> Option<u8> {
    Some(match name {
        "" | "max" => 0,
        "2.5" | "1xSDR" => 2,
        "5" | "1xDDR" => 5,
        "10" | "1xQDR" | "4xSDR" => 3,
        "20" | "4xDDR" | "8xSDR" => 6,
        "30" => 4,
        "40" | "4xQDR" | "8xDDR" => 7,
        "60" => 8,
        "80" | "8xQDR" => 9,
        "120" => 10,
        _ => return None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn table_matches_the_request_indexes() {
        for t in RDMA_TESTS {
            let i = super::super::super::wire::test_index(t.name).unwrap();
            assert!((12..=32).contains(&i), "{} at {i}", t.name);
        }
        assert_eq!(RDMA_TESTS.len(), 21);
        assert!(RdmaTest::by_name("xrc_bw").is_none());
    }

    #[test]
    fn shapes_measures_sizes() {
        let g = |n: &str| RdmaTest::by_name(n).unwrap();
        assert_eq!(g("rc_bw").shapes(), (sh(1024, 0), sh(0, 1024)));
        assert_eq!(g("ud_bi_bw").shapes(), (sh(1024, 1024), sh(1024, 1024)));
        assert_eq!(g("uc_lat").shapes(), (sh(1, 1), sh(1, 1)));
        assert_eq!(g("rc_rdma_write_lat").shapes(), (sh(1, 1), sh(1, 1)));
        assert_eq!(g("uc_rdma_write_poll_lat").shapes(), (sh(1024, 0), sh(1024, 0)));
        assert_eq!(g("rc_rdma_read_bw").shapes(), (sh(1024, 0), sh(0, 1)));
        assert_eq!(g("rc_rdma_read_lat").shapes(), (sh(1, 0), sh(0, 1)));
        assert_eq!(g("ver_rc_fetch_add").shapes(), (sh(1024, 0), sh(0, 1)));
        assert_eq!(g("rc_bw").measure(), Measure::Bandwidth);
        assert_eq!(g("rc_bi_bw").measure(), Measure::Bandwidth);
        assert_eq!(g("uc_bw").measure(), Measure::BandwidthSr);
        assert_eq!(g("ud_bi_bw").measure(), Measure::BandwidthSr);
        assert_eq!(g("uc_rdma_write_bw").measure(), Measure::BandwidthSr);
        assert_eq!(g("rc_rdma_write_bw").measure(), Measure::Bandwidth);
        assert_eq!(g("rc_rdma_read_bw").measure(), Measure::Bandwidth);
        assert_eq!(g("rc_rdma_read_lat").measure(), Measure::Latency);
        assert_eq!(g("ud_lat").measure(), Measure::Latency);
        assert_eq!(g("rc_fetch_add_mr").measure(), Measure::MsgRate);
        assert_eq!(g("ver_rc_compare_swap").measure(), Measure::MsgRate);
        assert_eq!(g("ud_bw").default_size(), Some(2048));
        assert_eq!(g("rc_bw").default_size(), Some(65536));
        assert_eq!(g("ver_rc_fetch_add").default_size(), Some(65536));
        assert_eq!(g("rc_compare_swap_mr").default_size(), None);
        assert_eq!(g("uc_rdma_write_poll_lat").default_size(), Some(1));
        assert_eq!(g("ud_bw").buffer_size(true, 2048), 2088);
        assert_eq!(g("rc_fetch_add_mr").buffer_size(false, 0), 8);
        assert_eq!(g("ver_rc_fetch_add").buffer_size(true, 65536), 8);
        assert_eq!(g("ver_rc_fetch_add").buffer_size(false, 65536), 65536);
        assert_eq!(RdmaTest::ver_slots(65536), 1024);
        assert_eq!(RdmaTest::ver_slots(64), 8);
        assert!(g("rc_lat").cm_capable() && !g("uc_lat").cm_capable() && !g("ud_bw").cm_capable());
        assert!(g("rc_rdma_read_lat").server_idles() && !g("rc_rdma_write_bw").server_idles());
        assert_eq!(g("rc_bw").uses(), vec![Par::AccessRecv, Par::NoMsgs, Par::PollMode]);
        assert_eq!(g("rc_rdma_write_poll_lat").uses(), vec![]);
        assert_eq!(g("uc_rdma_write_poll_lat").uses(), vec![Par::PollMode]);
        assert_eq!(g("rc_rdma_read_bw").uses(), vec![Par::AccessRecv, Par::RdAtomic, Par::PollMode]);
        assert_eq!(g("rc_fetch_add_mr").uses(), vec![Par::PollMode, Par::RdAtomic]);
    }

    #[test]
    fn stat_counting_rules() {
        let mut s = Stat::default();
        count(&mut s, Event::Posted, 100);
        count(&mut s, Event::Received, 100);
        assert_eq!((s.s.bytes, s.s.msgs, s.r.bytes, s.r.msgs), (100, 1, 100, 1));
        let mut s = Stat::default();
        count(&mut s, Event::ReadDone, 64);
        assert_eq!((s.r.bytes, s.r.msgs, s.rem_s.bytes, s.rem_s.msgs, s.s.msgs), (64, 1, 64, 1, 0));
        let mut s = Stat::default();
        count(&mut s, Event::AtomicPosted, 0);
        count(&mut s, Event::AtomicDone, 0);
        assert_eq!((s.s.bytes, s.s.msgs, s.rem_r.bytes, s.rem_r.msgs, s.r.msgs), (8, 1, 8, 1, 0));
    }

    #[test]
    fn ver_sequences() {
        assert_eq!(atomic_seq(Atomic::CompareSwap, 0), (0, 0, CAS_MAGIC));
        assert_eq!(atomic_seq(Atomic::CompareSwap, 1), (CAS_MAGIC, CAS_MAGIC, CAS_MAGIC + 1));
        assert_eq!(atomic_seq(Atomic::CompareSwap, 5), (CAS_MAGIC + 4, CAS_MAGIC + 4, CAS_MAGIC + 5));
        assert_eq!(atomic_seq(Atomic::FetchAdd, 7), (7, 1, 0));
        // Simulate the target: each CAS that expects the current value installs the next.
        let mut target = 0u64;
        for i in 0..2000 {
            let (want, cmp, swap) = atomic_seq(Atomic::CompareSwap, i);
            let old = target;
            if old == cmp {
                target = swap;
            }
            assert_eq!(old, want);
            check_atomic(Atomic::CompareSwap, i, old).unwrap();
        }
        assert_eq!(
            check_atomic(Atomic::FetchAdd, 2, 5),
            Err("mismatch, sequence 3, expected 2, got 5".to_string())
        );
        assert_eq!(
            check_atomic(Atomic::CompareSwap, 1, 0),
            Err("mismatch, sequence 2, expected 123456789abcdef, got 0".to_string())
        );
    }

    #[test]
    fn cq_reasons_and_params() {
        assert_eq!(cq_reason(WcStatus::RetryExcErr), "Retries exceeded");
        assert_eq!(cq_reason(WcStatus::RnrRetryExcErr), "RNR retry exceeded");
        assert_eq!(cq_reason(WcStatus::Unknown(99)), "CQ error 99");
        let l = cq_error_line("rc_bw", WcStatus::RetryExcErr, true);
        assert!(l.starts_with("rc_bw failed: Retries exceeded; no ACK from the peer"), "{l}");
        assert!(l.ends_with("UDP 4791 passes (RETRY_EXC_ERR)"), "{l}");
        assert_eq!(mtu_enum(2048), Some(4));
        assert_eq!(mtu_enum(0), None);
        assert_eq!(static_rate("max"), Some(0));
        assert_eq!(static_rate("4xQDR"), Some(7));
        assert_eq!(static_rate("7"), None);
    }
}
