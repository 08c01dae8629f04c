//! Per-tool order of the out-of-band exchanges (docs/perftest-wire.md, "Handshake order per
//! tool", checked against the 6.06 TCP captures and the HEAD mains), as a flat list of steps for
//! each role.
//!
//! A plan interleaves exchanges (`Step::Exchange*`) with the local actions the engine performs
//! between them (`Step::Do`). The engine walks the list in order; [`super::session::execute`]
//! does that for the exchanges and calls back for the actions.

/// The eight tools.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Tool {
    WriteBw,
    ReadBw,
    SendBw,
    AtomicBw,
    WriteLat,
    ReadLat,
    SendLat,
    AtomicLat,
}

impl Tool {
    pub const ALL: [Tool; 8] = [
        Tool::WriteBw,
        Tool::ReadBw,
        Tool::SendBw,
        Tool::AtomicBw,
        Tool::WriteLat,
        Tool::ReadLat,
        Tool::SendLat,
        Tool::AtomicLat,
    ];
    pub fn name(self) -> &'static str {
        match self {
            Tool::WriteBw => "ib_write_bw",
            Tool::ReadBw => "ib_read_bw",
            Tool::SendBw => "ib_send_bw",
            Tool::AtomicBw => "ib_atomic_bw",
            Tool::WriteLat => "ib_write_lat",
            Tool::ReadLat => "ib_read_lat",
            Tool::SendLat => "ib_send_lat",
            Tool::AtomicLat => "ib_atomic_lat",
        }
    }
    pub fn from_name(name: &str) -> Option<Tool> {
        let base = name.rsplit('/').next().unwrap_or(name);
        Tool::ALL.into_iter().find(|t| t.name() == base)
    }
    pub fn is_bw(self) -> bool {
        matches!(self, Tool::WriteBw | Tool::ReadBw | Tool::SendBw | Tool::AtomicBw)
    }
}

/// TCP role: the side with a host argument is the client (writes first in every exchange).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Role {
    Client,
    Server,
}

/// The options that change the shape of the exchange.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PlanOptions {
    /// Number of QPs (after `-O` doubling).
    pub num_qps: usize,
    /// `-b` (BW tools only).
    pub bidirectional: bool,
    /// `-a`: the number of message sizes run back to back (None: one size).
    pub all_sizes: Option<usize>,
    /// `--write_with_imm` (write tools).
    pub write_with_imm: bool,
    /// `-D` (duplex send_bw then exchanges no report).
    pub duration: bool,
    /// `--report-per-port`: 9 report blocks instead of 5.
    pub report_per_port: bool,
    /// Send and expect the 6.28+ NEGOTIATE block (peer and own version ≥ 6.28).
    pub negotiate: bool,
    /// rdma_cm exchange (`-z`/`-R`): no `done` is written at close.
    pub rdma_cm: bool,
    /// `-R`: the data QPs are connected through rdma_cm between two sync key exchanges right
    /// after the MTU [and NEGOTIATE] exchange (perftest's `create_rdma_cm_connection`).
    pub cm_qps: bool,
    /// Exchange versions, SYSDATA and the MTU first (false: `--dont_xchg_versions`, both sides
    /// start with the key records and each uses its own MTU, page size and cache line).
    pub exchange_versions: bool,
}

impl Default for PlanOptions {
    fn default() -> Self {
        PlanOptions {
            num_qps: 1,
            bidirectional: false,
            all_sizes: None,
            write_with_imm: false,
            duration: false,
            report_per_port: false,
            negotiate: false,
            rdma_cm: false,
            cm_qps: false,
            exchange_versions: true,
        }
    }
}

/// Why a key record is exchanged (the record itself is always the same `my_dest[qp]`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum KeyPurpose {
    /// Initial QP information (one per QP); the peer connects its QP from it.
    QpInfo,
    /// Re-sent per QP after connecting; the receiver prints it as the remote address line.
    RemoteInfo,
    /// Barrier (the content is parsed but carries nothing new).
    Sync,
    /// Barrier right before the measurement starts.
    Start,
    /// Barrier after the measurement (uni BW: the server sits here during the whole test).
    AfterRun,
    /// Last exchange before `done` and close().
    Close,
}

/// Local work the engine does between exchanges.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Action {
    /// Move the QPs to RTR (and RTS where the role sends) with the remote keys received so far.
    ConnectQps,
    /// `-R`: create the resources and connect every data QP through rdma_cm.
    ConnectCm,
    /// Print the local address line(s) of every QP.
    PrintLocal,
    /// Print the remote address line of this QP (just received).
    PrintRemote { qp: usize },
    /// Dash line + result column header.
    PrintResultHeader,
    /// Post the receive WQEs of a size (receivers of send / write-with-imm).
    PostReceives { size_index: usize },
    /// Run the measurement for a size.
    Run { size_index: usize },
    /// Print this side's own result line for a size.
    PrintOwnResult { size_index: usize },
    /// Print local + remote (duplex) after the report exchange.
    PrintSummedResult { size_index: usize },
    /// Uni BW server: print the client's numbers received in the report exchange.
    PrintPeerResult,
    /// The closing dash line.
    PrintDashLine,
}

/// One entry of a plan.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Step {
    /// 16-byte version strings.
    Version,
    /// Page size (4 bytes).
    PageSize,
    /// Cache line (4 bytes).
    CacheLine,
    /// MTU enum (2 bytes).
    Mtu,
    /// `--dont_xchg_versions`: no bytes; the MTU is this side's own (where `Mtu` would run).
    LocalMtu,
    /// 6.28+ parameter negotiation (312/320 bytes).
    Negotiate,
    /// One key-record exchange for QP `qp`.
    Key { qp: usize, purpose: KeyPurpose },
    /// The report exchange (5 or 9 blocks).
    Report,
    /// Write `done\0` (never read) before close.
    Done,
    /// Local action, no bytes on the wire.
    Do(Action),
}

impl Step {
    pub fn is_key(&self) -> bool {
        matches!(self, Step::Key { .. })
    }
}

/// The complete, ordered plan of one side.
pub fn plan(tool: Tool, role: Role, o: &PlanOptions) -> Vec<Step> {
    let sh = Shape {
        n: o.num_qps.max(1),
        sizes: o.all_sizes.unwrap_or(1).max(1),
        all: o.all_sizes.is_some(),
        server: role == Role::Server,
        bidir: o.bidirectional && tool.is_bw(),
        o,
    };
    let mut p = opening(o);
    match tool {
        Tool::WriteBw | Tool::ReadBw | Tool::AtomicBw => rdma_bw(&mut p, tool, &sh),
        Tool::SendBw => send_bw(&mut p, &sh),
        Tool::WriteLat => write_lat(&mut p, &sh),
        Tool::SendLat => send_lat(&mut p, &sh),
        Tool::ReadLat | Tool::AtomicLat => read_or_atomic_lat(&mut p, tool, &sh),
    }
    p
}

/// What every tool's plan depends on, from the options and the role.
struct Shape<'a> {
    /// Number of QPs (at least 1).
    n: usize,
    /// Number of message sizes (1 without `-a`).
    sizes: usize,
    /// `-a`.
    all: bool,
    server: bool,
    /// `-b` on a BW tool.
    bidir: bool,
    o: &'a PlanOptions,
}

/// The exchanges before any QP record: versions, page size, cache line and MTU (or the local
/// MTU), NEGOTIATE, and with `-R` the rdma_cm connection between two syncs.
fn opening(o: &PlanOptions) -> Vec<Step> {
    let mut p = if o.exchange_versions {
        vec![Step::Version, Step::PageSize, Step::CacheLine, Step::Mtu]
    } else {
        vec![Step::LocalMtu]
    };
    if o.negotiate {
        p.push(Step::Negotiate);
    }
    if o.cm_qps {
        p.extend([key(0, KeyPurpose::Sync), Step::Do(Action::ConnectCm), key(0, KeyPurpose::Sync)]);
    }
    p
}

/// One key-record exchange for QP `qp`.
fn key(qp: usize, purpose: KeyPurpose) -> Step {
    Step::Key { qp, purpose }
}

/// The close exchange, then `done` unless rdma_cm.
fn close(p: &mut Vec<Step>, o: &PlanOptions) {
    p.push(key(0, KeyPurpose::Close));
    if !o.rdma_cm {
        p.push(Step::Done);
    }
}

/// Every tool's QP records, then the connection.
fn connect_qps(p: &mut Vec<Step>, n: usize) {
    p.extend((0..n).map(|i| key(i, KeyPurpose::QpInfo)));
    p.push(Step::Do(Action::ConnectQps));
}

/// The local address lines, then each remote record with its line.
fn addresses(p: &mut Vec<Step>, n: usize) {
    p.push(Step::Do(Action::PrintLocal));
    for i in 0..n {
        p.push(key(i, KeyPurpose::RemoteInfo));
        p.push(Step::Do(Action::PrintRemote { qp: i }));
    }
}

/// ib_write_bw, ib_read_bw, ib_atomic_bw: the passive server of a unidirectional test waits in
/// one key exchange for the whole run; otherwise each size runs between barriers as needed.
fn rdma_bw(p: &mut Vec<Step>, tool: Tool, sh: &Shape<'_>) {
    let Shape { n, sizes, all, server, bidir, o } = *sh;
    let imm = tool == Tool::WriteBw && o.write_with_imm;
    connect_qps(p, n);
    addresses(p, n);
    p.push(key(0, KeyPurpose::Sync));
    p.push(Step::Do(Action::PrintResultHeader));
    if server && !bidir && !imm {
        // Passive server: blocks in the next key exchange for the whole test.
        p.push(key(0, KeyPurpose::AfterRun));
        p.push(Step::Report);
        p.push(Step::Do(Action::PrintPeerResult));
        close(p, o);
        p.push(Step::Do(Action::PrintDashLine));
        return;
    }
    let receiver = imm && (server || bidir);
    if all {
        for s in 0..sizes {
            if receiver {
                p.push(Step::Do(Action::PostReceives { size_index: s }));
            }
            if bidir || imm {
                p.push(key(0, KeyPurpose::Start));
            }
            p.push(Step::Do(Action::Run { size_index: s }));
            if bidir || imm {
                p.push(key(0, KeyPurpose::AfterRun));
            }
            if bidir {
                if !(imm && o.duration) {
                    p.push(Step::Report);
                    p.push(Step::Do(Action::PrintSummedResult { size_index: s }));
                }
            } else {
                p.push(Step::Do(Action::PrintOwnResult { size_index: s }));
            }
        }
    } else {
        if receiver {
            p.push(Step::Do(Action::PostReceives { size_index: 0 }));
        }
        if bidir || imm {
            p.push(key(0, KeyPurpose::Start));
        }
        p.push(Step::Do(Action::Run { size_index: 0 }));
        if bidir {
            if !(imm && o.duration) {
                p.push(Step::Report);
                p.push(Step::Do(Action::PrintSummedResult { size_index: 0 }));
            }
        } else {
            p.push(Step::Do(Action::PrintOwnResult { size_index: 0 }));
        }
    }
    p.push(Step::Do(Action::PrintDashLine));
    if !server && !bidir && !imm {
        p.push(key(0, KeyPurpose::AfterRun));
        p.push(Step::Report);
    }
    close(p, o);
}

/// ib_send_bw: the receivers post before each size's start barrier.
fn send_bw(p: &mut Vec<Step>, sh: &Shape<'_>) {
    let Shape { n, sizes, all, server, bidir, o } = *sh;
    connect_qps(p, n);
    p.push(key(0, KeyPurpose::Sync));
    addresses(p, n);
    p.push(Step::Do(Action::PrintResultHeader));
    for s in 0..sizes {
        if server || bidir {
            p.push(Step::Do(Action::PostReceives { size_index: s }));
        }
        p.push(key(0, KeyPurpose::Start));
        p.push(Step::Do(Action::Run { size_index: s }));
        if bidir && !o.duration {
            p.push(Step::Report);
            p.push(Step::Do(Action::PrintSummedResult { size_index: s }));
        } else {
            p.push(Step::Do(Action::PrintOwnResult { size_index: s }));
        }
        if all {
            p.push(key(0, KeyPurpose::AfterRun));
        }
    }
    p.push(Step::Do(Action::PrintDashLine));
    close(p, o);
}

/// ib_write_lat: a sync before the QP records, no close handshake.
fn write_lat(p: &mut Vec<Step>, sh: &Shape<'_>) {
    let Shape { n, sizes, o, .. } = *sh;
    p.push(key(0, KeyPurpose::Sync));
    connect_qps(p, n);
    addresses(p, n);
    p.push(key(0, KeyPurpose::Sync));
    p.push(Step::Do(Action::PrintResultHeader));
    for s in 0..sizes {
        if o.write_with_imm {
            p.push(Step::Do(Action::PostReceives { size_index: s }));
            p.push(key(0, KeyPurpose::Start));
        }
        p.push(Step::Do(Action::Run { size_index: s }));
        p.push(Step::Do(Action::PrintOwnResult { size_index: s }));
    }
    p.push(Step::Do(Action::PrintDashLine));
    // No close handshake and no `done`: the process just exits.
}

/// ib_send_lat: each size posts its receives before its start barrier.
fn send_lat(p: &mut Vec<Step>, sh: &Shape<'_>) {
    let Shape { n, sizes, o, .. } = *sh;
    connect_qps(p, n);
    p.push(key(0, KeyPurpose::Sync));
    addresses(p, n);
    p.push(Step::Do(Action::PrintResultHeader));
    for s in 0..sizes {
        p.push(Step::Do(Action::PostReceives { size_index: s }));
        p.push(key(0, KeyPurpose::Start));
        p.push(Step::Do(Action::Run { size_index: s }));
        p.push(Step::Do(Action::PrintOwnResult { size_index: s }));
    }
    p.push(Step::Do(Action::PrintDashLine));
    close(p, o);
}

/// ib_read_lat, ib_atomic_lat: the server only connects and closes; ATOMIC runs one size.
fn read_or_atomic_lat(p: &mut Vec<Step>, tool: Tool, sh: &Shape<'_>) {
    let Shape { n, sizes, server, o, .. } = *sh;
    p.push(key(0, KeyPurpose::Sync));
    connect_qps(p, n);
    addresses(p, n);
    p.push(key(0, KeyPurpose::Sync));
    if server {
        close(p, o);
        p.push(Step::Do(Action::PrintDashLine));
        return;
    }
    p.push(Step::Do(Action::PrintResultHeader));
    let sizes = if tool == Tool::AtomicLat { 1 } else { sizes };
    for s in 0..sizes {
        p.push(Step::Do(Action::Run { size_index: s }));
        p.push(Step::Do(Action::PrintOwnResult { size_index: s }));
    }
    close(p, o);
    p.push(Step::Do(Action::PrintDashLine));
}

/// The wire-level shape of a plan: the exchanges only, one token per block each side writes,
/// in the notation of tests/fixtures/tcp/summary.md (`ver u32 u32 mtu key… u64×5 key done`).
pub fn wire_shape(plan: &[Step], report_blocks: usize) -> Vec<&'static str> {
    let mut v = Vec::new();
    for s in plan {
        match s {
            Step::Version => v.push("ver"),
            Step::PageSize | Step::CacheLine => v.push("u32"),
            Step::Mtu => v.push("mtu"),
            Step::Negotiate => v.push("neg"),
            Step::Key { .. } => v.push("key"),
            Step::Report => v.extend((0..report_blocks).map(|_| "u64")),
            Step::Done => v.push("done"),
            Step::Do(_) | Step::LocalMtu => {}
        }
    }
    v
}

/// Number of key-record exchanges in a plan.
pub fn key_exchanges(plan: &[Step]) -> usize {
    plan.iter().filter(|s| s.is_key()).count()
}
