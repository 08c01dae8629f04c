//! perftest's command line: the eight `ib_*` tools' options, defaults and derived values.
//!
//! [`parse`] turns the arguments after argv[0] into [`ParseOutcome`]: a fully derived [`Params`]
//! (every value perftest computes in its parser and `force_dependecies()` before anything goes on
//! the wire), or the `-h` / `-V` text. The caller prints and exits; perftest exits with status 1
//! for `-h`, `-V` and every parser error ([`EXIT_HELP`], [`EXIT_VERSION`], [`ParamError::exit_code`]).
//!
//! Compatibility choices (see also the module docs of `getopt` and `usage`):
//! * Option syntax is GNU getopt_long's: permutation, clustering, `-s64`, `--size=64`, long
//!   prefixes, `--` (see [`getopt`]).
//! * Defaults and derivations follow perftest HEAD (6.29) where it only widened 6.06 (e.g. `-n` up
//!   to 2^32, `-I` up to 1024, `-q 1` allowed on latency tools, `-r` accepted on write tools), and
//!   6.06 for anything printed (the notices in [`Params::notices`]).
//! * Every option may be given once (perftest ≥ 6.1x: ` Duplicated argument: …`).
//! * Both 6.06 and 6.29 long-option spellings are accepted: `--com_rdma_cm`/`--comm_rdma_cm`,
//!   `--source_ip`/`--bind_source_ip`, and `--report-histogram` (what the help prints) as well as
//!   `--report-histogrm` (perftest's real name; it rejects the help's spelling — we do not).
//! * `-V`, `-h`, the parser-time notes and everything printed later follow the persona
//!   ([`Persona`]: `--perftest-version 6.06|6.29` or [`ENV_PERSONA`], default
//!   [`DEFAULT_PERSONA`]), and so does the version sent in the TCP version exchange. With
//!   "6.06" a 6.29 peer skips its NEGOTIATE message (6.29 sends it only to ≥6.28 peers); with
//!   "6.29" both sides exchange it, as two 6.29s do.
//! * Features rperftest does not implement are parsed (so they are never "unknown") and then
//!   refused with a one-line [`ErrorKind::Unsupported`] error: SRD connections,
//!   GPU memory, the PP rate limiter, data validation and vendor-specific options.
//! * Raw-Ethernet options (`-B -E -J -j -K -k -Y -Z -P -v`, `--tcp`, `--remote_mac`, …) are
//!   accepted and ignored, as perftest's ib_* tools do.

pub mod aes;
pub mod dc;
mod getopt;
#[forbid(unsafe_code)]
pub mod knobs;
pub mod persona;
pub mod rate;
mod usage;
mod usage629;
mod xrc;
pub use xrc::{lane_plan, xrc_plan};

pub use persona::{Persona, DEFAULT_PERSONA, ENV_PERSONA};
pub use usage::{extensions_help, usage};
pub use usage629::usage629;

use getopt::{Found, Opt, ScanError};
use std::fmt;

/// The version of the default persona (printed by `-V`, sent in the version exchange).
pub const PERFTEST_VERSION: &str = DEFAULT_PERSONA.version();
/// perftest exits with 1 after printing the help text.
pub const EXIT_HELP: i32 = 1;
/// perftest exits with 1 after printing the version.
pub const EXIT_VERSION: i32 = 1;
/// The 87-character dash line perftest prints before most notices.
pub const RESULT_LINE: &str =
    "---------------------------------------------------------------------------------------\n";

/// Largest message of the `-a` sweep (2^23); with `-a` perftest sizes buffers for it.
pub const MAX_SIZE: u64 = 8_388_608;
/// Default TCP port of the out-of-band exchange.
pub const DEF_PORT: u16 = 18515;
/// Default UD QKey.
pub const DEF_QKEY: u32 = 0x1111_1111;
/// Message sizes above this disable the default CQ moderation.
pub const MSG_SIZE_CQ_MOD_LIMIT: u64 = 8192;

// ------------------------------------------------------------------------------------------------
// Enums

/// The eight tools.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Tool {
    WriteBw,
    WriteLat,
    ReadBw,
    ReadLat,
    SendBw,
    SendLat,
    AtomicBw,
    AtomicLat,
}

/// BW or latency test ("tst" in perftest; wire values LAT=0, BW=1).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum TestKind {
    Lat,
    Bw,
}

/// The verb (wire values SEND=0, SEND_IMM=1, WRITE=2, WRITE_IMM=3, READ=4, ATOMIC=5). A tool's
/// base verb is one of Send/Write/Read/Atomic; `--write_with_imm` / `--send_with_imm` switch
/// [`Params::verb`] to the *Imm variant.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Verb {
    Send,
    SendImm,
    Write,
    WriteImm,
    Read,
    Atomic,
}

/// Transport (wire values RC=0, UC=1, UD=2, RawEth=3, XRC=4, DC=5, SRD=6). Only RC, UC and UD
/// ever appear in a successfully parsed [`Params`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Connection {
    Rc,
    Uc,
    Ud,
    Xrc,
    Dc,
    Srd,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum AtomicType {
    CmpAndSwap,
    FetchAndAdd,
}

/// Iterations (`-n`) or duration (`-D`, `--run_infinitely`); wire ITERATIONS=0, DURATION=1.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum TestType {
    Iterations,
    Duration,
}

/// RUN_REGULAR=0, RUN_ALL (`-a`)=1, RUN_INFINITELY=2.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum TestMethod {
    Regular,
    All,
    Infinitely,
}

/// GBS=0 (`--report_gbits`), MBS=1 (default).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ReportFormat {
    Gbs,
    Mbs,
}

/// `--output=…`: Full is the default (all lines).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Output {
    Full,
    Bandwidth,
    MessageRate,
    Latency,
}

/// `--force-link`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum LinkType {
    Ib,
    Ethernet,
}

/// Which side of the *test* this process plays (after `--reversed`); the TCP role is
/// [`Params::is_tcp_client`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Role {
    Server,
    Client,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum RateLimitType {
    Disabled,
    Hw,
    Sw,
    Pp,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum RateUnits {
    /// `M`: MiB/s
    MegaBytes,
    /// `g`: Gb/s (default)
    GigaBits,
    /// `p`: packets/s
    Packets,
}

impl Tool {
    pub const ALL: [Tool; 8] = [
        Tool::WriteBw,
        Tool::WriteLat,
        Tool::ReadBw,
        Tool::ReadLat,
        Tool::SendBw,
        Tool::SendLat,
        Tool::AtomicBw,
        Tool::AtomicLat,
    ];

    /// `ib_write_bw`, or a path ending in it (busybox-style argv[0]: `/usr/bin/ib_write_bw`).
    pub fn from_name(name: &str) -> Option<Tool> {
        let base = name.rsplit('/').next().unwrap_or(name);
        Tool::ALL.into_iter().find(|t| t.name() == base)
    }

    pub fn name(self) -> &'static str {
        match self {
            Tool::WriteBw => "ib_write_bw",
            Tool::WriteLat => "ib_write_lat",
            Tool::ReadBw => "ib_read_bw",
            Tool::ReadLat => "ib_read_lat",
            Tool::SendBw => "ib_send_bw",
            Tool::SendLat => "ib_send_lat",
            Tool::AtomicBw => "ib_atomic_bw",
            Tool::AtomicLat => "ib_atomic_lat",
        }
    }

    pub fn kind(self) -> TestKind {
        match self {
            Tool::WriteBw | Tool::ReadBw | Tool::SendBw | Tool::AtomicBw => TestKind::Bw,
            _ => TestKind::Lat,
        }
    }

    /// The tool's base verb: Write, Read, Send or Atomic.
    pub fn verb(self) -> Verb {
        match self {
            Tool::WriteBw | Tool::WriteLat => Verb::Write,
            Tool::ReadBw | Tool::ReadLat => Verb::Read,
            Tool::SendBw | Tool::SendLat => Verb::Send,
            Tool::AtomicBw | Tool::AtomicLat => Verb::Atomic,
        }
    }

    /// `-n` default: 5000 for ib_write_bw, 1000 for the others.
    pub fn default_iters(self) -> u64 {
        if self == Tool::WriteBw {
            5000
        } else {
            1000
        }
    }
}

impl fmt::Display for Tool {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl TestKind {
    pub fn wire_value(self) -> u32 {
        match self {
            TestKind::Lat => 0,
            TestKind::Bw => 1,
        }
    }
}

impl Verb {
    pub fn wire_value(self) -> u32 {
        match self {
            Verb::Send => 0,
            Verb::SendImm => 1,
            Verb::Write => 2,
            Verb::WriteImm => 3,
            Verb::Read => 4,
            Verb::Atomic => 5,
        }
    }
    /// Verbs whose data path produces receive completions (SEND, SEND_IMM, WRITE_IMM).
    pub fn has_recv_comp(self) -> bool {
        matches!(self, Verb::Send | Verb::SendImm | Verb::WriteImm)
    }
    /// perftest's name in negotiation mismatch messages.
    pub fn as_str(self) -> &'static str {
        match self {
            Verb::Send => "SEND",
            Verb::SendImm => "SEND_IMM",
            Verb::Write => "WRITE",
            Verb::WriteImm => "WRITE_IMM",
            Verb::Read => "READ",
            Verb::Atomic => "ATOMIC",
        }
    }
}

impl Connection {
    pub fn wire_value(self) -> u32 {
        match self {
            Connection::Rc => 0,
            Connection::Uc => 1,
            Connection::Ud => 2,
            Connection::Xrc => 4,
            Connection::Dc => 5,
            Connection::Srd => 6,
        }
    }
    pub fn as_str(self) -> &'static str {
        match self {
            Connection::Rc => "RC",
            Connection::Uc => "UC",
            Connection::Ud => "UD",
            Connection::Xrc => "XRC",
            Connection::Dc => "DC",
            Connection::Srd => "SRD",
        }
    }
}

impl AtomicType {
    pub fn wire_value(self) -> u32 {
        match self {
            AtomicType::CmpAndSwap => 0,
            AtomicType::FetchAndAdd => 1,
        }
    }
    pub fn as_str(self) -> &'static str {
        match self {
            AtomicType::CmpAndSwap => "CMP_AND_SWAP",
            AtomicType::FetchAndAdd => "FETCH_AND_ADD",
        }
    }
}

impl TestType {
    pub fn wire_value(self) -> u32 {
        match self {
            TestType::Iterations => 0,
            TestType::Duration => 1,
        }
    }
}

impl TestMethod {
    pub fn wire_value(self) -> u32 {
        match self {
            TestMethod::Regular => 0,
            TestMethod::All => 1,
            TestMethod::Infinitely => 2,
        }
    }
}

impl ReportFormat {
    pub fn wire_value(self) -> u32 {
        match self {
            ReportFormat::Gbs => 0,
            ReportFormat::Mbs => 1,
        }
    }
}

/// ibv_mtu enum (256→1 … 4096→5) for a byte size, None if not one of the five IB MTUs.
pub use uverbs::device::mtu_enum;

// ------------------------------------------------------------------------------------------------
// Outcome, errors, notices

/// What the command line asks for.
#[derive(Clone, Debug, PartialEq)]
pub enum ParseOutcome {
    Run(Box<Params>),
    /// `-h`: print to stdout as is, exit [`EXIT_HELP`].
    Help(String),
    /// `-V`: print to stdout as is, exit [`EXIT_VERSION`].
    Version(String),
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ErrorKind {
    /// Unknown/ambiguous option, missing or unexpected argument: perftest prints
    /// ` Invalid Command or flag.` and then the usage text.
    Usage,
    /// A value perftest rejects (not a number, out of range, unknown keyword).
    InvalidValue,
    /// The same option twice.
    Duplicate,
    /// Options that perftest refuses together, or an option the tool refuses.
    Conflict,
    /// A perftest feature rperftest does not implement.
    Unsupported,
}

/// A command-line error: one line, naming the option(s).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ParamError {
    pub kind: ErrorKind,
    /// The option(s) concerned, as the user wrote them (`-s`, `--size`) or canonically
    /// (`-D/--duration`), or `<host>` for positional arguments.
    pub option: String,
    pub message: String,
}

impl ParamError {
    fn new(kind: ErrorKind, option: impl Into<String>, message: impl Into<String>) -> Self {
        ParamError {
            kind,
            option: option.into(),
            message: message.into(),
        }
    }
    /// perftest's exit status for every parser failure.
    pub fn exit_code(&self) -> i32 {
        1
    }
    /// perftest prints the usage text after ` Invalid Command or flag.`
    pub fn shows_usage(&self) -> bool {
        self.kind == ErrorKind::Usage
    }
}

impl fmt::Display for ParamError {
    /// One line, always: the option and the message quote user arguments, and a control
    /// character in an argument (a newline, an escape sequence) is shown escaped.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write_escaped(f, &self.option)?;
        f.write_str(": ")?;
        write_escaped(f, &self.message)
    }
}

fn write_escaped(f: &mut fmt::Formatter<'_>, s: &str) -> fmt::Result {
    for c in s.chars() {
        if c.is_control() {
            write!(f, "{}", c.escape_default())?;
        } else {
            fmt::Write::write_char(f, c)?;
        }
    }
    Ok(())
}

impl std::error::Error for ParamError {}

/// A line perftest prints while parsing (warnings and informational notes), reproduced so the
/// caller can print it: `text` is exact, newlines included.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Notice {
    pub to_stderr: bool,
    pub text: String,
}

// ------------------------------------------------------------------------------------------------
// Params

/// Everything the command line decides, after perftest's derivations. Device-dependent values
/// (active MTU, inline default, max outstanding reads, GID auto-selection) stay `None` here and
/// are resolved by the engine once the device is open.
#[derive(Clone, Debug, PartialEq)]
pub struct Params {
    pub tool: Tool,
    /// The tool's verb, or the *Imm variant with `--write_with_imm` / `--send_with_imm`.
    pub verb: Verb,
    pub kind: TestKind,

    // roles
    /// The positional argument: its presence makes this process the TCP client.
    pub server_name: Option<String>,
    /// Test role after `--reversed`.
    pub machine: Role,
    pub reversed: bool,
    /// rperftest: run server and client in one process.
    pub loopback: bool,
    /// `--adopt` (rperftest extension, server): take an rperftest client's -s/-q/-n/-t/-m/-a/-D
    /// instead of refusing to run when they differ.
    pub adopt: bool,
    /// `--plot FILE.svg` (rperftest extension): draw the run's result lines (docs/plots.md).
    pub plot_file: Option<String>,
    /// `--series FILE` (rperftest extension): every result line as JSON Lines, for
    /// `rperftest plot` and `compare` (a `--out_json` file keeps only the last line).
    pub series_file: Option<String>,
    /// `--perftest-version` (or [`ENV_PERSONA`]): which perftest's text this run prints.
    pub persona: Persona,
    /// The command line after argv[0], where `--adopt` needs it to re-parse with the client's
    /// options (set by the tool's entry point; empty otherwise).
    pub cmdline: Vec<String>,

    // device, port, addressing
    pub ib_dev: Option<String>,
    pub ib_port: u8,
    /// Second port with `-O` (2).
    pub ib_port2: u8,
    pub dualport: bool,
    /// `-x`; None = auto (IB: no GRH; RoCE: chosen from the GID table). `-g` defaults it to 0.
    pub gid_index: Option<u8>,
    pub ipv6: bool,
    /// `--ipv6-addr`: AF_INET6 for the TCP/rdma_cm exchange.
    pub ipv6_addr: bool,
    /// `--source_ip` / `--bind_source_ip`.
    pub source_ip: Option<String>,
    pub force_link: Option<LinkType>,
    /// `-m` as given (bytes); None = the port's active MTU. Not validated here: perftest warns and
    /// falls back to the active MTU for values other than 256…4096 (see [`mtu_enum`]).
    pub mtu: Option<u32>,
    pub sl: u8,
    pub qp_timeout: u8,
    pub pkey_index: u32,
    pub tclass: u16,
    /// `--flow_label` list (round-robin per QP).
    pub flow_labels: Vec<u32>,
    pub dlid: Option<u16>,

    // connection establishment
    pub connection: Connection,
    /// TCP (or rdma_cm with `-z`) port.
    pub port: u16,
    /// `-z`, also implied by `-R`: exchange data over rdma_cm.
    pub use_rdma_cm: bool,
    /// `-R`: connect the QPs with rdma_cm.
    pub work_rdma_cm: bool,
    pub tos: Option<u8>,
    pub hop_limit: u8,
    pub retry_count: u32,
    pub dont_xchg_versions: bool,

    // test shape
    pub test_method: TestMethod,
    pub test_type: TestType,
    /// Message size; 8 MiB with `-a` (buffers sized for the largest message), 8 for atomics.
    pub size: u64,
    pub size_requested: bool,
    /// Iterations; 0 in `-D` mode (there it counts samples).
    pub iters: u64,
    /// Seconds (`-D`; default 5, also the `--run_infinitely` report period).
    pub duration: u32,
    /// `-f`; in duration mode defaults to duration/4. None only in iteration mode without `-f`.
    pub margin: Option<u32>,
    pub tx_depth: u32,
    pub rx_depth: u32,
    pub cq_mod: u32,
    pub cq_mod_requested: bool,
    /// Number of QPs (doubled by `-O`).
    pub num_qps: u32,
    pub post_list: u32,
    pub recv_post_list: u32,
    /// `-I`; None = device/tool default (see [`Params::default_inline`]). 0 for read/atomic.
    pub inline_size: Option<u32>,
    pub inline_recv_size: u32,
    /// `-o`; None = the device's max_qp_rd_atom (read/atomic only).
    pub out_reads: Option<u32>,
    pub atomic_type: AtomicType,
    /// `-b`
    pub duplex: bool,
    pub no_peak: bool,
    pub use_event: bool,
    /// `-X` completion vector.
    pub eq_num: Option<u32>,
    pub use_mcg: bool,
    pub mgid: Option<String>,
    pub use_srq: bool,
    pub connectionless: bool,
    /// `--aes_xts` and its family ([`aes`]).
    pub aes: aes::AesXts,
    /// `--log_dci_streams` (DC only; 0 = plain DCI).
    pub log_dci_streams: u16,
    /// `--log_active_dci_streams` (default: `log_dci_streams`).
    pub log_active_dci_streams: u16,

    // reporting
    pub report_fmt: ReportFormat,
    pub report_both: bool,
    pub report_per_port: bool,
    pub cycles: bool,
    pub histogram: bool,
    pub unsorted: bool,
    pub output: Output,
    pub out_json: bool,
    pub out_json_file: String,
    pub cpu_util: bool,
    pub cpu_freq_f: bool,
    pub limit_bw: Option<f64>,
    pub limit_msgrate: Option<f64>,
    /// `-W` counter names (`counters/port_xmit_data`, `hw_counters/out_of_buffer`).
    pub report_counters: Vec<String>,

    // buffers and posting
    pub use_hugepages: bool,
    pub mr_per_qp: bool,
    pub use_old_post_send: bool,
    pub perform_warm_up: bool,
    pub use_null_mr: bool,
    pub mmap_file: Option<String>,
    pub mmap_offset: u64,
    pub payload_file_path: Option<String>,
    /// `--odp`: register the MR with IBV_ACCESS_ON_DEMAND (after checking the device's ODP caps).
    pub odp: bool,
    pub wait_destroy: u32,
    /// `--latency_gap` (µs busy-wait before each post, LAT only).
    pub latency_gap: u32,
    pub disable_pcie_relaxed: bool,
    pub cqe_poll: Option<u16>,
    pub disable_dynamic_polling: bool,
    /// Derived: whether 6.29 would adapt its CQE poll batch (header `CQE Poll Batch : Dynamic`).
    pub dynamic_cqe_poll: bool,
    /// Derived: the fixed CQE poll batch when not dynamic (16, `--cqe_poll`, or 64 for very
    /// many QPs with large messages).
    pub cqe_poll_batch: u16,
    pub no_lock: bool,
    pub no_enhanced_reorder: bool,
    pub pin_cores: Option<String>,
    pub numa_node: Option<i32>,
    pub disable_numa: bool,

    // rate limiter (SW; HW as perftest: a static rate at RTR, checked by QUERY_QP, falling
    // back to SW when implicit: see params::rate and engine::hw_rate)
    pub rate_limit_type: RateLimitType,
    /// `--rate_limit_type` was given (perftest's `is_rate_limit_type`): a HW limit the QP does
    /// not take is then an error instead of a fallback to SW.
    pub rate_limit_type_explicit: bool,
    /// HW limiter: the `enum ibv_rate` value of `--rate_limit` (perftest's
    /// `valid_hw_rate_limit_index`; 0 when no rate was given).
    pub hw_rate: u8,
    pub rate_limit: f64,
    pub rate_units: RateUnits,
    pub burst_size: u32,
    pub typical_pkt_size: u32,

    /// Lines perftest prints while parsing, in order.
    pub notices: Vec<Notice>,
}

impl Params {
    /// perftest's defaults for `tool`, before any option and before derivation.
    pub fn defaults(tool: Tool) -> Params {
        let kind = tool.kind();
        let verb = tool.verb();
        Params {
            tool,
            verb,
            kind,
            server_name: None,
            machine: Role::Server,
            reversed: false,
            loopback: false,
            adopt: false,
            plot_file: None,
            series_file: None,
            persona: Persona::default(),
            cmdline: Vec::new(),
            ib_dev: None,
            ib_port: 1,
            ib_port2: 2,
            dualport: false,
            gid_index: None,
            ipv6: false,
            ipv6_addr: false,
            source_ip: None,
            force_link: None,
            mtu: None,
            sl: 0,
            qp_timeout: 14,
            pkey_index: 0,
            tclass: 0,
            flow_labels: Vec::new(),
            dlid: None,
            connection: Connection::Rc,
            port: DEF_PORT,
            use_rdma_cm: false,
            work_rdma_cm: false,
            tos: None,
            hop_limit: 64,
            retry_count: 7,
            dont_xchg_versions: false,
            test_method: TestMethod::Regular,
            test_type: TestType::Iterations,
            size: match (verb, kind) {
                (Verb::Atomic, _) => 8,
                (_, TestKind::Bw) => 65536,
                (_, TestKind::Lat) => 2,
            },
            size_requested: false,
            iters: tool.default_iters(),
            duration: 5,
            margin: None,
            tx_depth: if kind == TestKind::Bw { 128 } else { 1 },
            rx_depth: if matches!(verb, Verb::Send | Verb::Write) {
                512
            } else {
                1
            },
            cq_mod: 100,
            cq_mod_requested: false,
            num_qps: 1,
            post_list: 1,
            recv_post_list: 1,
            inline_size: None,
            inline_recv_size: 0,
            out_reads: None,
            atomic_type: AtomicType::FetchAndAdd,
            duplex: false,
            no_peak: false,
            use_event: false,
            eq_num: None,
            use_mcg: false,
            mgid: None,
            use_srq: false,
            connectionless: false,
            aes: aes::AesXts::default(),
            log_dci_streams: 0,
            log_active_dci_streams: 0,
            report_fmt: ReportFormat::Mbs,
            report_both: false,
            report_per_port: false,
            cycles: false,
            histogram: false,
            unsorted: false,
            output: Output::Full,
            out_json: false,
            out_json_file: "perftest_out.json".to_string(),
            cpu_util: false,
            cpu_freq_f: false,
            limit_bw: None,
            limit_msgrate: None,
            report_counters: Vec::new(),
            use_hugepages: false,
            mr_per_qp: false,
            use_old_post_send: false,
            perform_warm_up: false,
            use_null_mr: false,
            mmap_file: None,
            mmap_offset: 0,
            payload_file_path: None,
            odp: false,
            wait_destroy: 0,
            latency_gap: 0,
            disable_pcie_relaxed: false,
            cqe_poll: None,
            disable_dynamic_polling: false,
            dynamic_cqe_poll: true,
            cqe_poll_batch: 16,
            no_lock: false,
            no_enhanced_reorder: false,
            pin_cores: None,
            numa_node: None,
            disable_numa: false,
            rate_limit_type: RateLimitType::Disabled,
            rate_limit_type_explicit: false,
            hw_rate: 0,
            rate_limit: 0.0,
            rate_units: RateUnits::GigaBits,
            burst_size: 0,
            typical_pkt_size: 0,
            notices: Vec::new(),
        }
    }

    /// The side that has the host argument is the TCP client (writes first in every exchange).
    pub fn is_tcp_client(&self) -> bool {
        self.server_name.is_some()
    }

    /// Message sizes of the run: 2^1 … 2^23 with `-a` (send over UD is further capped to the MTU
    /// by the engine), else just [`Params::size`].
    pub fn sizes(&self) -> Vec<u64> {
        if self.test_method == TestMethod::All {
            (1..=23).map(|e| 1u64 << e).collect()
        } else {
            vec![self.size]
        }
    }

    /// perftest's inline default when `-I` is not given, for a device in perftest's known-device
    /// table (Mellanox/mlx5 and friends): BW 0; LAT write 220, send 236 (UD 188); read/atomic 0.
    /// Devices missing from that table (rxe) get 0, and perftest also overrides an explicit `-I`
    /// to 0 for them.
    pub fn default_inline(&self, device_known: bool) -> u32 {
        if !device_known || self.kind == TestKind::Bw {
            return 0;
        }
        match self.verb {
            Verb::Write | Verb::WriteImm | Verb::Send | Verb::SendImm if self.connection == Connection::Dc => dc::DEF_INLINE_DC,
            Verb::Write | Verb::WriteImm => 220,
            Verb::Send | Verb::SendImm => {
                if self.connection == Connection::Ud {
                    188
                } else {
                    236
                }
            }
            Verb::Read | Verb::Atomic => 0,
        }
    }

    /// perftest's `fill_count`: iterations not a multiple of the CQ moderation.
    pub fn fill_count(&self) -> bool {
        self.test_type == TestType::Iterations
            && self.cq_mod > 0
            && not_multiple(self.iters, u64::from(self.cq_mod))
    }

    /// Whether SRQ objects exist on this side (perftest's `srq_exists`; XRC: always).
    pub fn srq_exists(&self) -> bool {
        (self.use_srq && (self.kind == TestKind::Lat || self.machine == Role::Server || self.duplex))
            || self.connection == Connection::Xrc
    }

    /// Receives each QP pre-posts (perftest's `size_per_qp` in `ctx_set_recv_wqes`): `-r`, or
    /// with an SRQ (`--use-srq`, XRC, DC) that depth shared by all the QPs posting into it,
    /// since the SRQ holds only `-r` receives.
    pub fn recv_depth_per_qp(&self) -> u32 {
        if self.use_srq || self.connection == Connection::Xrc {
            (self.rx_depth / self.num_qps.max(1)).max(1)
        } else {
            self.rx_depth
        }
    }

    fn notice_out(&mut self, text: &str) {
        self.notices.push(Notice {
            to_stderr: false,
            text: text.to_string(),
        });
    }
    fn notice_err(&mut self, text: &str) {
        self.notices.push(Notice {
            to_stderr: true,
            text: text.to_string(),
        });
    }
}

// ------------------------------------------------------------------------------------------------
// Parsing

/// The `-h` text of `persona` for `tool` (`prog` in the "Usage:" lines).
pub fn usage_for(persona: Persona, tool: Tool, prog: &str) -> String {
    match persona {
        Persona::V606 => usage(tool, prog),
        Persona::V629 => usage629(tool, prog),
    }
}

/// The persona a command line asks for, without parsing the rest of it (the tool's entry point
/// needs it to print the right usage text after a parser error); a bad value gives the default.
pub fn persona_hint(args: &[String]) -> Persona {
    let env = std::env::var(ENV_PERSONA).ok();
    persona_of(&getopt::scan(args).0, env.as_deref()).unwrap_or_default()
}

/// `--perftest-version` wins over the environment; -h and -V follow it wherever it stands.
fn persona_of(found: &getopt::Scanned, env_persona: Option<&str>) -> Result<Persona, ParamError> {
    if let Some(f) = found.options.iter().find(|f| f.opt == Opt::PerftestVersion) {
        return Persona::from_version(arg(f)).ok_or_else(|| {
            invalid(f, format!("{:?} is not a perftest version rperftest presents; give 6.06 or 6.29", arg(f)))
        });
    }
    Persona::from_env_value(env_persona)
        .map(Option::unwrap_or_default)
        .map_err(|m| ParamError::new(ErrorKind::InvalidValue, ENV_PERSONA, m))
}

/// Test helper: the parameters of a command line that must parse to a run.
#[cfg(test)]
pub(crate) fn parsed(t: Tool, args: &[&str]) -> Box<Params> {
    let a: Vec<String> = args.iter().map(|s| s.to_string()).collect();
    match parse(t, &a) {
        Ok(ParseOutcome::Run(p)) => p,
        _ => panic!("{args:?} does not parse"),
    }
}

/// Parse the arguments that follow argv[0] for `tool`, with the persona of
/// `--perftest-version`, else of [`ENV_PERSONA`] in this process's environment.
pub fn parse(tool: Tool, args: &[String]) -> Result<ParseOutcome, ParamError> {
    let env = std::env::var(ENV_PERSONA).ok();
    parse_with_env(tool, args, env.as_deref())
}

/// [`parse`] with `env_persona` standing for the value of [`ENV_PERSONA`] (None: unset).
pub fn parse_with_env(tool: Tool, args: &[String], env_persona: Option<&str>) -> Result<ParseOutcome, ParamError> {
    let (found, scan_err) = getopt::scan(args);
    let persona = persona_of(&found, env_persona)?;
    let mut p = Params::defaults(tool);
    p.persona = persona;
    let mut st = State::default();
    let mut seen: Vec<String> = Vec::new();
    for f in &found.options {
        if f.opt != Opt::Help && f.opt != Opt::Version {
            if seen.contains(&f.dup_key) {
                return Err(ParamError::new(
                    ErrorKind::Duplicate,
                    f.spelling.clone(),
                    format!("Duplicated argument: {}", f.dup_key),
                ));
            }
            seen.push(f.dup_key.clone());
        }
        match f.opt {
            Opt::Help => return Ok(ParseOutcome::Help(usage_for(persona, tool, tool.name()))),
            Opt::Version => return Ok(ParseOutcome::Version(persona.version_text())),
            _ => apply(&mut p, &mut st, f)?,
        }
    }
    if let Some(e) = scan_err {
        return Err(match e {
            ScanError::Unknown(o) => ParamError::new(
                ErrorKind::Usage,
                o,
                "Invalid Command or flag (unknown option)",
            ),
            ScanError::Ambiguous(o, c) => ParamError::new(
                ErrorKind::Usage,
                o,
                format!(
                    "Invalid Command or flag (ambiguous option; possibilities: {})",
                    c.join(" ")
                ),
            ),
            ScanError::MissingArgument(o) => ParamError::new(
                ErrorKind::Usage,
                o,
                "Invalid Command or flag (option requires an argument)",
            ),
            ScanError::UnexpectedArgument(o) => ParamError::new(
                ErrorKind::Usage,
                o,
                "Invalid Command or flag (option doesn't allow an argument)",
            ),
        });
    }
    match found.positionals.len() {
        0 => {}
        1 => p.server_name = Some(found.positionals[0].clone()),
        _ => {
            return Err(ParamError::new(
                ErrorKind::Usage,
                "<host>",
                format!(
                    "Invalid Command line: only one server name may be given (got {})",
                    found.positionals.join(" ")
                ),
            ))
        }
    }
    if p.loopback && p.server_name.is_some() {
        return Err(conflict(
            "--loopback, <host>",
            "--loopback runs both sides in this process and takes no server name",
        ));
    }
    p.machine = if p.server_name.is_some() {
        Role::Client
    } else {
        Role::Server
    };
    if p.reversed {
        p.machine = match p.machine {
            Role::Server => Role::Client,
            Role::Client => Role::Server,
        };
    }
    refuse_unsupported(&p, &st)?;
    derive(&mut p, &st)?;
    xrc::double_qps(&mut p);
    Ok(ParseOutcome::Run(Box::new(p)))
}

/// Options seen that do not map to a field, or whose refusal waits until all options are known.
#[derive(Default)]
struct State {
    use_rss: bool,
    /// `--log_active_dci_streams` was given.
    dci_active_given: bool,
    gpu: Option<String>,
    vendor: Option<String>,
    use_ooo: bool,
    data_validation: Option<String>,
    write_with_imm: bool,
    send_with_imm: bool,
    run_infinitely: bool,
    rate_limit_given: bool,
    /// `--rate_limit` as written (perftest matches it against its HW rate table as text).
    rate_limit_text: Option<String>,
    /// `--rate_limit_type` was given (perftest's `is_rate_limit_type`).
    rate_limit_type_given: bool,
}

fn conflict(opts: &str, msg: &str) -> ParamError {
    ParamError::new(ErrorKind::Conflict, opts, msg)
}

fn unsupported(opts: &str, msg: &str) -> ParamError {
    ParamError::new(ErrorKind::Unsupported, opts, msg)
}

fn invalid(f: &Found, msg: String) -> ParamError {
    ParamError::new(ErrorKind::InvalidValue, f.spelling.clone(), msg)
}

/// The sign, base and digits of a C integer as `strtol(s, _, 0)` reads it once leading white
/// space is gone: an optional `-`/`+`, then `0x`/`0X` hex, a leading-zero octal, or decimal.
/// Shared by the perftest options here and `rperftest devinfo`'s port number.
pub fn c_integer_parts(t: &str) -> (bool, u32, &str) {
    let (neg, t) = match t.as_bytes().first() {
        Some(b'-') => (true, &t[1..]),
        Some(b'+') => (false, &t[1..]),
        _ => (false, t),
    };
    if let Some(h) = t.strip_prefix("0x").or_else(|| t.strip_prefix("0X")) {
        (neg, 16, h)
    } else if t.len() > 1 && t.starts_with('0') {
        (neg, 8, &t[1..])
    } else {
        (neg, 10, t)
    }
}

/// `strtol(s, &end, 0)` with `*end == '\0'` required: optional leading whitespace and sign,
/// `0x` hex, leading-zero octal, decimal. Returns None for no digits or trailing garbage, and
/// Some(Err) when the value does not fit in an i64 (strtol would saturate).
pub(crate) fn strtol0(s: &str) -> Option<Result<i64, ()>> {
    let t = s.trim_start_matches([' ', '\t', '\n', '\r', '\x0b', '\x0c']);
    let (neg, radix, digits) = c_integer_parts(t);
    if digits.is_empty() || !digits.chars().all(|c| c.is_digit(radix)) {
        return None;
    }
    let mut v: i128 = 0;
    for c in digits.chars() {
        v = v * i128::from(radix) + i128::from(c.to_digit(radix).unwrap_or(0));
        if v > i128::from(i64::MAX) + 1 {
            return Some(Err(()));
        }
    }
    let v = if neg { -v } else { v };
    Some(i64::try_from(v).map_err(|_| ()))
}

fn arg(f: &Found) -> &str {
    f.arg.as_deref().unwrap_or("")
}

/// An integer argument in `min..=max`; `name` is perftest's name for it.
fn int_in(f: &Found, name: &str, min: i64, max: i64) -> Result<i64, ParamError> {
    let a = arg(f);
    match strtol0(a) {
        None => Err(invalid(
            f,
            format!("{name} argument '{a}' should be an integer"),
        )),
        Some(Ok(v)) if v >= min && v <= max => Ok(v),
        Some(_) => Err(invalid(
            f,
            format!("{name} should be between {min} and {max}"),
        )),
    }
}

fn float_nonneg(f: &Found, what: &str) -> Result<f64, ParamError> {
    let a = arg(f).trim();
    match a.parse::<f64>() {
        Ok(v) if v.is_finite() && v >= 0.0 => Ok(v),
        Ok(_) => Err(invalid(
            f,
            format!("Invalid {what} (must be a non-negative number)"),
        )),
        Err(_) => Err(invalid(
            f,
            format!("{what} argument '{a}' should be a number"),
        )),
    }
}

fn narrow<T: TryFrom<i64>>(v: i64) -> T {
    // Values were range-checked against T's range by the caller.
    T::try_from(v).unwrap_or_else(|_| unreachable_narrow())
}

#[cold]
fn unreachable_narrow<T>() -> T {
    panic!("range-checked value does not fit")
}

/// `a` is not a multiple of `b` (false for b == 0; MSRV 1.80 has no `is_multiple_of`).
fn not_multiple(a: u64, b: u64) -> bool {
    a.checked_rem(b).is_some_and(|r| r != 0)
}

const I32_MAX: i64 = i32::MAX as i64;

fn apply(p: &mut Params, st: &mut State, f: &Found) -> Result<(), ParamError> {
    let verb = p.tool.verb();
    let kind = p.tool.kind();
    match f.opt {
        Opt::Port => p.port = narrow(int_in(f, "Port", 1, 65535)?),
        Opt::IbDev => p.ib_dev = Some(arg(f).to_string()),
        Opt::IbPort => p.ib_port = narrow(int_in(f, "IB Port", 1, 255)?),
        Opt::Mtu => p.mtu = Some(narrow(int_in(f, "MTU", 0, I32_MAX)?)),
        Opt::Size => {
            let a = arg(f);
            let (num, factor) = if let Some(n) = a.strip_suffix('K') {
                (n, 1024)
            } else if let Some(n) = a.strip_suffix('M') {
                (n, 1024 * 1024)
            } else {
                (a, 1)
            };
            let v = match strtol0(num) {
                None => return Err(invalid(f, format!("Message Size argument '{a}' should be an integer (optionally followed by K or M)"))),
                Some(Ok(v)) => v.checked_mul(factor),
                Some(Err(())) => None,
            };
            match v {
                Some(v) if (1..=2_147_483_647).contains(&v) => {
                    p.size = narrow(v);
                    p.size_requested = true;
                }
                _ => return Err(invalid(f, "Message Size should be between 1 and 2147483647".into())),
            }
        }
        Opt::Iters => p.iters = narrow(int_in(f, "Iteration num", 5, 4_294_967_296)?),
        Opt::TxDepth => p.tx_depth = narrow(int_in(f, "Tx depth", 1, 15000)?),
        Opt::Tos => p.tos = Some(narrow(int_in(f, "TOS", 0, 255)?)),
        Opt::HopLimit => p.hop_limit = narrow(int_in(f, "Hop Limit", 0, 255)?),
        Opt::QpTimeout => p.qp_timeout = narrow(int_in(f, "QP Timeout", 0, 255)?),
        Opt::Sl => p.sl = narrow(int_in(f, "Service Level", 0, 15)?),
        Opt::GidIndex => p.gid_index = Some(narrow(int_in(f, "Gid index", 0, 64)?)),
        Opt::Connection => {
            let c = match arg(f) {
                "RC" => Connection::Rc,
                "UC" => Connection::Uc,
                "UD" => Connection::Ud,
                "XRC" => Connection::Xrc,
                "DC" => Connection::Dc,
                "SRD" => Connection::Srd,
                "RawEth" => {
                    return Err(unsupported(&f.spelling, "RawEth connections are only for the raw_ethernet_* tools"))
                }
                other => {
                    return Err(invalid(
                        f,
                        format!("Invalid Connection type '{other}'. Please choose from {{RC,UC,UD,XRC,DC,SRD}}"),
                    ))
                }
            };
            if c == Connection::Uc && matches!(verb, Verb::Read | Verb::Atomic) {
                return Err(conflict(&f.spelling, "UC connection not possible in READ/ATOMIC verbs"));
            }
            if c == Connection::Ud && verb != Verb::Send {
                return Err(conflict(&f.spelling, "UD connection only possible in SEND verb"));
            }
            if c == Connection::Srd && !matches!(verb, Verb::Send | Verb::Read | Verb::Write) {
                return Err(conflict(&f.spelling, "SRD connection only possible in SEND/READ/WRITE verbs"));
            }
            p.connection = c;
        }
        Opt::Qp => {
            let v = int_in(f, "num of Qps", 1, 16384)?;
            if kind != TestKind::Bw && v > 1 {
                return Err(conflict(&f.spelling, "Multiple QPs only available on bw tests"));
            }
            p.num_qps = narrow(v);
        }
        Opt::InlineSize => {
            let v = int_in(f, "Max inline", 0, 1024)?;
            if matches!(verb, Verb::Read | Verb::Atomic) {
                return Err(conflict(&f.spelling, "Inline feature not available on READ/Atomic verbs"));
            }
            p.inline_size = Some(narrow(v));
        }
        Opt::Outs => {
            let v = int_in(f, "Outstanding Reads", 0, 65535)?;
            if !matches!(verb, Verb::Read | Verb::Atomic) {
                return Err(conflict(&f.spelling, "Setting Outstanding reads only available on READ verb"));
            }
            // 0 means "device maximum", as in perftest.
            p.out_reads = if v == 0 { None } else { Some(narrow(v)) };
        }
        Opt::Mgid => p.mgid = Some(arg(f).to_string()),
        Opt::RxDepth => {
            let v = int_in(f, "Rx depth", 1, 16384)?;
            if !matches!(verb, Verb::Send | Verb::Write) && v > 1 {
                return Err(conflict(&f.spelling, "On RDMA verbs rx depth can be only 1"));
            }
            p.rx_depth = narrow(v);
        }
        Opt::CqMod => {
            p.cq_mod = narrow(int_in(f, "CQ moderation", 1, 1024)?);
            p.cq_mod_requested = true;
        }
        Opt::AtomicType => {
            if verb != Verb::Atomic {
                return Err(conflict(
                    &f.spelling,
                    "You are not running the atomic_lat/bw test! To change the atomic action type, you must run one of the atomic tests",
                ));
            }
            p.atomic_type = match arg(f) {
                "CMP_AND_SWAP" => AtomicType::CmpAndSwap,
                "FETCH_AND_ADD" => AtomicType::FetchAndAdd,
                other => {
                    return Err(invalid(
                        f,
                        format!("Invalid Atomic type '{other}'! please choose from {{CMP_AND_SWAP,FETCH_AND_ADD}}"),
                    ))
                }
            };
        }
        Opt::PostList => p.post_list = narrow(int_in(f, "Send Post List size", 1, I32_MAX)?),
        Opt::RecvPostList => p.recv_post_list = narrow(int_in(f, "Receive Post List size", 1, I32_MAX)?),
        Opt::Duration => {
            p.duration = narrow(int_in(f, "Duration period", 1, I32_MAX)?);
            p.test_type = TestType::Duration;
        }
        Opt::Margin => p.margin = Some(narrow(int_in(f, "Margin", 0, I32_MAX)?)),
        Opt::DualPort => {
            p.ib_port = 1;
            p.ib_port2 = 2;
            p.dualport = true;
        }
        Opt::All => p.test_method = TestMethod::All,
        Opt::CpuFreq => p.cpu_freq_f = true,
        Opt::CommRdmaCm => p.use_rdma_cm = true,
        Opt::RdmaCm => p.work_rdma_cm = true,
        Opt::Events => {
            if verb == Verb::Write {
                return Err(conflict(&f.spelling, "Events feature not available on WRITE verb"));
            }
            p.use_event = true;
        }
        Opt::Vector => {
            if verb == Verb::Write {
                return Err(conflict(&f.spelling, "Events feature not available on WRITE verb"));
            }
            p.eq_num = Some(narrow(int_in(f, "EQN", 0, 2048)?));
        }
        Opt::Bidirectional => {
            if kind == TestKind::Lat {
                return Err(conflict(&f.spelling, "Bidirectional is only available in BW test"));
            }
            p.duplex = true;
        }
        Opt::NoPeak => {
            if kind == TestKind::Lat {
                return Err(conflict(&f.spelling, "NoPeak only valid for BW tests"));
            }
            p.no_peak = true;
        }
        Opt::ReportCycles => {
            if kind != TestKind::Lat {
                return Err(conflict(&f.spelling, "Available only on Latency tests"));
            }
            p.cycles = true;
        }
        Opt::Mcg => {
            if verb != Verb::Send {
                return Err(conflict(&f.spelling, "MultiCast feature only available on SEND verb"));
            }
            p.use_mcg = true;
        }
        Opt::ReportHistogram => {
            if kind == TestKind::Bw {
                return Err(conflict(&f.spelling, "Available only on Latency tests"));
            }
            p.histogram = true;
        }
        Opt::ReportUnsorted => {
            if kind == TestKind::Bw {
                return Err(conflict(&f.spelling, "Available only on Latency tests"));
            }
            p.unsorted = true;
        }
        Opt::LimitBw => p.limit_bw = Some(float_nonneg(f, "Minimum BW Limit")?),
        Opt::LimitMsgrate => p.limit_msgrate = Some(float_nonneg(f, "Minimum msgRate Limit")?),
        Opt::ReportCounters => {
            let list: Vec<String> =
                arg(f).split(',').filter(|s| !s.is_empty()).map(str::to_string).collect();
            if list.is_empty() {
                return Err(invalid(f, "Failed to parse the performance counter list".into()));
            }
            p.report_counters = list;
        }
        // raw Ethernet: accepted and ignored by the ib_* tools, as in perftest
        Opt::RawSourceMac
        | Opt::RawDestMac
        | Opt::RawDestIp
        | Opt::RawSourceIp
        | Opt::RawDestPort
        | Opt::RawSourcePort
        | Opt::RawEthertype
        | Opt::RawServer
        | Opt::RawClient
        | Opt::RawMacFwd
        | Opt::RawLongWithArg
        | Opt::RawLongFlag => {}
        Opt::UseRss => st.use_rss = true,
        Opt::ForceLink => {
            p.force_link = Some(match arg(f) {
                "IB" => LinkType::Ib,
                "Ethernet" | "ETHERNET" | "ethernet" => LinkType::Ethernet,
                other => {
                    return Err(invalid(f, format!("Invalid link layer value '{other}': should be IB or Ethernet")))
                }
            })
        }
        Opt::RunInfinitely => st.run_infinitely = true,
        Opt::ReportGbits => p.report_fmt = ReportFormat::Gbs,
        Opt::UseSrq => p.use_srq = true,
        Opt::NoLock => p.no_lock = true,
        Opt::UseNullMr => p.use_null_mr = true,
        Opt::ReportBoth => p.report_both = true,
        Opt::Reversed => p.reversed = true,
        Opt::PkeyIndex => p.pkey_index = narrow(int_in(f, "Pkey index", 0, 65535)?),
        Opt::InlineRecv => p.inline_recv_size = narrow(int_in(f, "Inline Receive size", 0, I32_MAX)?),
        Opt::BurstSize => p.burst_size = narrow(int_in(f, "Burst size", 0, I32_MAX)?),
        Opt::TypicalPktSize => p.typical_pkt_size = narrow(int_in(f, "Typical pkt size", 0, 0xFFFF)?),
        Opt::RateLimit => {
            let a = arg(f).trim();
            match a.parse::<f64>() {
                Ok(v) if v.is_finite() && v > 0.0 => p.rate_limit = v,
                _ => return Err(invalid(f, format!("Rate limit '{a}' must be a positive number"))),
            }
            st.rate_limit_given = true;
            st.rate_limit_text = Some(a.to_string());
            if p.rate_limit_type == RateLimitType::Disabled {
                p.rate_limit_type = RateLimitType::Hw;
            }
        }
        Opt::RateUnits => {
            p.rate_units = match arg(f) {
                "M" => RateUnits::MegaBytes,
                "g" => RateUnits::GigaBits,
                "p" => RateUnits::Packets,
                other => return Err(invalid(f, format!("Invalid rate limit units '{other}'. Please use M, g or p"))),
            }
        }
        Opt::RateLimitType => {
            st.rate_limit_type_given = true;
            p.rate_limit_type_explicit = true;
            p.rate_limit_type = match arg(f) {
                "SW" => RateLimitType::Sw,
                "HW" => RateLimitType::Hw,
                "PP" => RateLimitType::Pp,
                other => {
                    return Err(invalid(f, format!("Invalid rate limit type '{other}'. Please use HW, SW or PP")))
                }
            }
        }
        Opt::Output => {
            p.output = match arg(f) {
                "bandwidth" => Output::Bandwidth,
                "message_rate" => Output::MessageRate,
                "latency" => Output::Latency,
                other => {
                    return Err(invalid(
                        f,
                        format!("Invalid verbosity level output '{other}'. Please use bandwidth, latency, message_rate"),
                    ))
                }
            }
        }
        Opt::CpuUtil => p.cpu_util = true,
        Opt::OutJson => p.out_json = true,
        Opt::OutJsonFile => {
            if arg(f).is_empty() {
                return Err(invalid(f, "JSON file name is empty".into()));
            }
            p.out_json_file = arg(f).to_string();
        }
        Opt::LatencyGap => p.latency_gap = narrow(int_in(f, "Latency gap time", 0, I32_MAX)?),
        Opt::FlowLabel => {
            let mut v = Vec::new();
            for part in arg(f).split(',') {
                match strtol0(part) {
                    Some(Ok(x)) if (0..=0xFFFFF).contains(&x) => v.push(narrow(x)),
                    _ => {
                        return Err(invalid(
                            f,
                            format!("flow label '{part}' should be an integer between 0 and 1048575"),
                        ))
                    }
                }
            }
            p.flow_labels = v;
        }
        Opt::RetryCount => p.retry_count = narrow(int_in(f, "Retry Count", 0, 7)?),
        Opt::DontXchgVersions => p.dont_xchg_versions = true,
        Opt::PayloadFilePath => p.payload_file_path = Some(arg(f).to_string()),
        Opt::GpuWithArg | Opt::GpuFlag => st.gpu = Some(f.spelling.clone()),
        Opt::Mmap => p.mmap_file = Some(arg(f).to_string()),
        Opt::MmapOffset => p.mmap_offset = narrow::<u64>(int_in(f, "mmap offset", 0, i64::MAX)?),
        Opt::Ipv6 => p.ipv6 = true,
        Opt::Ipv6Addr => p.ipv6_addr = true,
        Opt::ReportPerPort => p.report_per_port = true,
        Opt::Odp => p.odp = true,
        Opt::UseHugepages => p.use_hugepages = true,
        Opt::UseOldPostSend => p.use_old_post_send = true,
        Opt::MrPerQp => p.mr_per_qp = true,
        Opt::Dlid => p.dlid = Some(narrow(int_in(f, "dlid", 0, 65535)?)),
        Opt::Tclass => p.tclass = narrow(int_in(f, "traffic class", 0, 255)?),
        Opt::WaitDestroy => p.wait_destroy = narrow(int_in(f, "wait_destroy", 0, I32_MAX)?),
        Opt::PerformWarmUp => p.perform_warm_up = true,
        Opt::AesXts => p.aes.enabled = true,
        Opt::EncryptOnTx => p.aes.encrypt_on_tx = true,
        Opt::SigBefore => p.aes.sig_before = true,
        Opt::AesBlockSize => p.aes.block_size_arg = aes::u16_arg(f, "aes_block_size")?,
        Opt::DataEncKeysNumber => p.aes.keys_number = aes::u16_arg(f, "data_enc_keys_number")?,
        Opt::KekPath => p.aes.kek_path = Some(arg(f).to_string()),
        Opt::CredentialsPath => p.aes.credentials_path = Some(arg(f).to_string()),
        Opt::DataEncKeyAppPath => p.aes.app_path = Some(arg(f).to_string()),
        Opt::LogDciStreams => p.log_dci_streams = narrow(int_in(f, "log_dci_streams", 0, 65535)?),
        Opt::LogActiveDciStreams => {
            p.log_active_dci_streams = narrow(int_in(f, "log_active_dci_streams", 0, 65535)?);
            st.dci_active_given = true;
        }
        Opt::DisablePcieRelaxed => p.disable_pcie_relaxed = true,
        Opt::UseOoo => st.use_ooo = true,
        Opt::VendorWithArg | Opt::VendorFlag => {
            st.vendor.get_or_insert_with(|| f.spelling.clone());
        }
        Opt::BindSourceIp => {
            if arg(f).is_empty() {
                return Err(invalid(f, "source IP is empty".into()));
            }
            p.source_ip = Some(arg(f).to_string());
        }
        Opt::WriteWithImm => {
            if verb != Verb::Write {
                return Err(conflict(&f.spelling, "Write_with_imm can only be used with write_lat and write_bw tests"));
            }
            st.write_with_imm = true;
            p.verb = Verb::WriteImm;
        }
        Opt::SendWithImm => {
            if verb != Verb::Send {
                return Err(conflict(&f.spelling, "Send_with_imm can only be used with send_lat and send_bw tests"));
            }
            st.send_with_imm = true;
            p.verb = Verb::SendImm;
        }
        Opt::NoEnhancedReorder => p.no_enhanced_reorder = true,
        Opt::Connectionless => p.connectionless = true,
        Opt::CqePoll => p.cqe_poll = Some(narrow(int_in(f, "CQE Poll", 1, 65535)?)),
        Opt::DisableDynamicPolling => p.disable_dynamic_polling = true,
        Opt::DataValidation | Opt::DataValidationDebug => {
            st.data_validation.get_or_insert_with(|| f.spelling.clone());
        }
        Opt::PinCores => {
            let a = arg(f);
            let ok = !a.is_empty()
                && a.split(',').all(|r| {
                    let mut it = r.splitn(2, '-');
                    let lo = it.next().and_then(|x| x.parse::<u32>().ok());
                    let hi = it.next().map(|x| x.parse::<u32>().ok());
                    match (lo, hi) {
                        (Some(_), None) => true,
                        (Some(l), Some(Some(h))) => l <= h,
                        _ => false,
                    }
                });
            if !ok {
                return Err(invalid(f, format!("Invalid CPU list '{a}' (expected e.g. 0,2-5)")));
            }
            p.pin_cores = Some(a.to_string());
        }
        Opt::NumaNode => p.numa_node = Some(narrow(int_in(f, "NUMA node", 0, I32_MAX)?)),
        Opt::DisableNuma => p.disable_numa = true,
        Opt::Loopback => p.loopback = true,
        Opt::Adopt => p.adopt = true,
        Opt::Plot | Opt::Series => {
            let (what, slot) = if f.opt == Opt::Plot { ("--plot", &mut p.plot_file) } else { ("--series", &mut p.series_file) };
            if arg(f).is_empty() {
                return Err(invalid(f, format!("{what} needs a file name, e.g. {what} run.{}", if what == "--plot" { "svg" } else { "jsonl" })));
            }
            *slot = Some(arg(f).to_string());
        }
        Opt::Help | Opt::Version | Opt::PerftestVersion => {}
    }
    Ok(())
}

/// Features perftest has and rperftest does not: refused with a clear message.
fn refuse_unsupported(p: &Params, st: &State) -> Result<(), ParamError> {
    if p.reversed && p.kind == TestKind::Lat {
        return Err(unsupported(
            "--reversed",
            "only the BW tools reverse the traffic (the latency tests run both directions already); leave --reversed out",
        ));
    }
    if p.reversed && (p.use_rdma_cm || p.work_rdma_cm) {
        return Err(unsupported(
            "--reversed, -R/-z",
            "reversed traffic over rdma_cm is not supported (perftest 6.06 then connects from the side without a host); leave out -R/-z",
        ));
    }
    if p.connection == Connection::Srd {
        return Err(unsupported(
            "-c/--connection",
            "connection type SRD is not supported by rperftest (an EFA transport; supported: RC, UC, UD, XRC, DC)",
        ));
    }
    if st.use_rss {
        return Err(unsupported("--use_rss", "RSS isn't supported"));
    }
    if let Some(o) = &st.gpu {
        return Err(unsupported(
            o,
            "accelerator (GPU) memory is not supported by rperftest",
        ));
    }
    if let Some(o) = &st.vendor {
        return Err(unsupported(
            o,
            "this vendor-specific option is not supported by rperftest",
        ));
    }
    if st.use_ooo {
        return Err(unsupported(
            "--use_ooo",
            "out-of-order data placement is not supported by rperftest",
        ));
    }
    if let Some(o) = &st.data_validation {
        return Err(unsupported(
            o,
            "data validation is not supported by rperftest",
        ));
    }
    Ok(())
}

/// perftest's `force_dependecies()`, in its order.
fn derive(p: &mut Params, st: &State) -> Result<(), ParamError> {
    if st.run_infinitely {
        p.test_method = TestMethod::Infinitely;
    }
    let bw = p.kind == TestKind::Bw;
    // perftest 6.29 says why the peak column will read 0 (6.06 is silent).
    let peak_note = p.persona.parser_notes();
    const NO_PEAK_WARNING: &str = " WARNING: BW peak won't be measured in this run.\n";

    if p.verb == Verb::Write {
        p.rx_depth = 1;
    }

    if p.test_method != TestMethod::Infinitely && p.test_type == TestType::Iterations {
        if u64::from(p.tx_depth) > p.iters {
            p.tx_depth = narrow(p.iters as i64);
        }
        if p.verb.has_recv_comp() && u64::from(p.rx_depth) > p.iters {
            p.rx_depth = narrow(p.iters as i64);
        }
        if matches!(p.connection, Connection::Ud | Connection::Uc) {
            if p.use_srq && p.iters <= 100 {
                p.rx_depth = 100;
            }
            if p.rx_depth == 512 {
                p.rx_depth = p.iters.min(16000) as u32;
            }
        }
    }

    if p.size > MSG_SIZE_CQ_MOD_LIMIT
        && p.connection != Connection::Ud
        && p.test_method != TestMethod::All
        && !p.use_event
    {
        if !p.cq_mod_requested {
            p.cq_mod = 1;
        } else if p.cq_mod > 1 {
            p.notice_out(RESULT_LINE);
            p.notice_out("Warning: Large message requested and CQ moderation enabled\n");
            p.notice_out("Warning: It can lead to inaccurate results\n");
        }
    }

    if p.cq_mod > p.tx_depth {
        p.cq_mod = p.tx_depth;
    }

    if matches!(p.verb, Verb::Read | Verb::Atomic) {
        p.inline_size = Some(0);
    }

    if p.test_method == TestMethod::All {
        p.size = MAX_SIZE;
    }

    if p.verb == Verb::Atomic && p.size != 8 {
        let opt = if p.test_method == TestMethod::All {
            "-a/--all"
        } else {
            "-s/--size"
        };
        return Err(conflict(
            opt,
            "Message size cannot be changed for Atomic tests",
        ));
    }

    if p.use_srq && !p.verb.has_recv_comp() {
        return Err(conflict(
            "--use-srq",
            "Using SRQ only available in SEND tests",
        ));
    }
    if p.use_srq && p.num_qps > p.rx_depth {
        return Err(conflict(
            "--use-srq, -q/--qp, -r/--rx-depth",
            "Using SRQ depth should be greater than number of QPs",
        ));
    }

    if p.dualport {
        p.num_qps *= 2;
        if !bw {
            return Err(conflict(
                "-O/--dualport",
                "Dual-port mode only supports BW tests",
            ));
        }
        if p.use_mcg {
            return Err(conflict(
                "-O/--dualport, -g/--mcg",
                "Dual-port mode not supported in multicast feature",
            ));
        }
    }

    if p.post_list > 1 {
        if !bw {
            return Err(conflict(
                "-l/--post_list",
                "Post list is supported in BW tests only",
            ));
        }
        if p.test_type == TestType::Iterations && not_multiple(p.iters, u64::from(p.post_list)) {
            return Err(conflict(
                "-l/--post_list, -n/--iters",
                "Number of iterations must be a multiple of post list size",
            ));
        }
        if !p.cq_mod_requested {
            p.cq_mod = p.post_list;
            p.notice_out(RESULT_LINE);
            p.notice_out("Post List requested - CQ moderation will be the size of the post list\n");
        } else if not_multiple(u64::from(p.post_list), u64::from(p.cq_mod)) {
            return Err(conflict(
                "-l/--post_list, -Q/--cq-mod",
                "Post list size must be a multiple of CQ moderation",
            ));
        }
    }
    if p.recv_post_list > 1 {
        if !bw {
            return Err(conflict(
                "--recv_post_list",
                "Receive post list is supported in BW tests only",
            ));
        }
        if p.test_type == TestType::Iterations && not_multiple(p.iters, u64::from(p.recv_post_list))
        {
            return Err(conflict(
                "--recv_post_list, -n/--iters",
                "Number of iterations must be a multiple of receive post list size",
            ));
        }
    }

    if p.test_type == TestType::Duration {
        p.iters = 0;
        if peak_note && !p.no_peak && bw {
            p.notice_out(NO_PEAK_WARNING);
        }
        p.no_peak = true;
        if p.use_event {
            return Err(conflict(
                "-D/--duration, -e/--events",
                "Duration mode doesn't work with events",
            ));
        }
        if p.test_method == TestMethod::All {
            return Err(conflict(
                "-D/--duration, -a/--all",
                "Duration mode currently doesn't support running on all sizes",
            ));
        }
    }
    if p.test_type != TestType::Duration && p.cpu_util {
        p.notice_out(RESULT_LINE);
        p.notice_err(" CPU Utilization works only with Duration mode.\n");
    }

    // -g: perftest sets GID index 0 here, but on RoCE its GID lookup then picks the best index
    // anyway (the user did not give -x), so the automatic choice stands; on IB, -g is refused.

    if p.work_rdma_cm {
        if p.connection == Connection::Uc {
            return Err(conflict(
                "-R/--rdma_cm, -c UC",
                "UC is not supported in librdmacm",
            ));
        }
        if p.use_mcg {
            return Err(conflict(
                "-R/--rdma_cm, -g/--mcg",
                "Perftest still doesn't support Multicast with rdma_cm",
            ));
        }
        if p.dualport {
            return Err(conflict(
                "-R/--rdma_cm, -O/--dualport",
                "Perftest still doesn't support Dual Port with rdma_cm",
            ));
        }
        p.use_rdma_cm = true;
    } else if p.tos.is_some() {
        return Err(conflict(
            "-T/--tos",
            "TOS only valid for rdma_cm based QP (add -R) and RawEth QP",
        ));
    }

    if p.hop_limit != 64 {
        return Err(conflict(
            "-L/--hop_limit",
            "Hop limit only valid for RawEth QP",
        ));
    }

    if p.use_mcg {
        p.connection = Connection::Ud;
        if p.duplex {
            return Err(conflict(
                "-g/--mcg, -b/--bidirectional",
                "Bidirectional mode not supported in multicast",
            ));
        }
        if p.num_qps > 1 {
            return Err(conflict(
                "-g/--mcg, -q/--qp",
                "Only 1 QP supported in multicast",
            ));
        }
    }

    if p.verb.has_recv_comp() && bw && p.machine == Role::Server && !p.duplex {
        if peak_note && !p.no_peak {
            p.notice_out(NO_PEAK_WARNING);
        }
        p.no_peak = true;
    }

    if p.test_method == TestMethod::Infinitely {
        if peak_note && !p.no_peak && bw {
            p.notice_out(NO_PEAK_WARNING);
        }
        p.no_peak = true;
        p.test_type = TestType::Duration;
        if p.use_event {
            return Err(conflict(
                "--run_infinitely, -e/--events",
                "run_infinitely does not support events feature yet",
            ));
        }
        if !bw {
            return Err(conflict(
                "--run_infinitely",
                "run_infinitely exists only in BW tests for now",
            ));
        }
        if p.duplex && p.verb.has_recv_comp() {
            return Err(conflict(
                "--run_infinitely, -b/--bidirectional",
                "run_infinitely mode is not supported in SEND Bidirectional BW test",
            ));
        }
        if p.rate_limit_type != RateLimitType::Disabled {
            return Err(conflict(
                "--run_infinitely, --rate_limit",
                "run_infinitely does not support rate limit feature yet",
            ));
        }
    }

    xrc::force_dependencies(p)?;

    if p.burst_size > 0 && p.rate_limit_type == RateLimitType::Disabled {
        return Err(conflict(
            "--burst_size",
            "Can't enable burst mode when rate limiter is off",
        ));
    }
    if p.burst_size == 0 {
        if p.rate_limit_type == RateLimitType::Sw {
            let t = format!(" Setting burst size to tx depth = {}\n", p.tx_depth);
            p.notice_err(&t);
        }
        if p.rate_limit_type != RateLimitType::Pp {
            p.burst_size = p.tx_depth;
        }
    }
    if p.typical_pkt_size != 0 && p.rate_limit_type != RateLimitType::Pp {
        return Err(conflict(
            "--typical_pkt_size",
            "Typical packet size only supports PP rate limiter",
        ));
    }
    match p.rate_limit_type {
        RateLimitType::Disabled => {}
        RateLimitType::Sw => {
            if !bw || p.verb == Verb::Atomic || (p.verb.has_recv_comp() && p.duplex) {
                return Err(conflict(
                    "--rate_limit_type SW",
                    "SW Rate limiter can't be executed on non-BW, ATOMIC or bidirectional SEND tests",
                ));
            }
            if !st.rate_limit_given {
                return Err(conflict(
                    "--rate_limit_type SW",
                    "Must specify a rate limit (--rate_limit=<rate>)",
                ));
            }
        }
        RateLimitType::Hw => {
            let text = st.rate_limit_text.clone();
            rate::check_hw(p, text.as_deref(), st.rate_limit_type_given)?;
        }
        RateLimitType::Pp => {
            return Err(conflict(
                "--rate_limit_type PP",
                "Packet Pacing is only supported for Raw Ethernet",
            ));
        }
    }
    rate::check_sizes(p)?;
    // perftest 6.13+ (6.06 has no --use-null-mr): the null MR replaces the data MR's keys,
    // which only the RDMA verbs can use.
    if p.use_null_mr && !matches!(p.verb, Verb::Write | Verb::WriteImm | Verb::Read) {
        return Err(conflict("--use-null-mr", "Perftest supports using a null memory region with write/read verbs only"));
    }

    if p.output != Output::Full {
        if bw && !matches!(p.output, Output::Bandwidth | Output::MessageRate) {
            return Err(conflict(
                "--output",
                "Output verbosity level for BW can be: bandwidth, message_rate",
            ));
        }
        if !bw && p.output != Output::Latency {
            return Err(conflict(
                "--output",
                "Output verbosity level for LAT can be: latency",
            ));
        }
    }

    if p.latency_gap > 0 && bw {
        return Err(conflict(
            "--latency_gap",
            "Latency gap feature is only for latency tests",
        ));
    }

    if p.test_type == TestType::Duration && p.margin.is_none() {
        p.margin = Some(p.duration / 4);
    }

    if p.report_per_port && (p.test_type != TestType::Duration || !p.dualport) {
        return Err(conflict(
            "--report-per-port",
            "report per port feature work only with Duration (-D) and Dualport (-O)",
        ));
    }

    if p.verb.has_recv_comp() && p.rx_depth % 2 == 1 && p.test_method == TestMethod::Regular {
        p.rx_depth += 1;
    }

    if p.test_type == TestType::Iterations && p.iters > 20000 && bw {
        if peak_note && !p.no_peak {
            p.notice_out(NO_PEAK_WARNING);
        }
        p.no_peak = true;
    }

    let margin = p.margin.map_or(-1, i64::from);
    if i64::from(p.duration) <= 2 * margin {
        return Err(conflict(
            "-D/--duration, -f/--margin",
            "please check that DURATION > 2*MARGIN",
        ));
    }

    if !p.use_event && p.eq_num.is_some() {
        return Err(conflict(
            "-X/--vector",
            "Events (-e) must be enabled to select a completion vector",
        ));
    }

    cqe_polling(p);
    dc::dependencies(p, st.dci_active_given)?;
    aes::dependencies(p)?;
    Ok(())
}

/// CQEs per poll of a 6.27+ perftest, which adapts the batch to the completion rate
/// ("dynamic") unless `--disable_dynamic_polling` or `--cqe_poll` is given, and turns that off
/// (with a note) for short iteration runs, duplex send / write-with-immediate and every latency
/// test. Thousands of QPs with large messages then poll 64 at a time unless `--cqe_poll` says
/// otherwise. rperftest's engines poll their own way; this decides what the header says, and the
/// notes are printed by the 6.29 persona only.
fn cqe_polling(p: &mut Params) {
    /// perftest's fixed batch, and the batch and thresholds of its "intense" case.
    const BATCH: u16 = 16;
    const BATCH_INTENSE: u16 = 64;
    const INTENSE_QPS: u32 = 2048;
    const INTENSE_SIZE: u64 = 8192;
    let notes = p.persona.parser_notes();
    let bw = p.kind == TestKind::Bw;
    let user_batch = p.cqe_poll.is_some();
    p.dynamic_cqe_poll = !p.disable_dynamic_polling && !user_batch;
    if (p.test_type == TestType::Iterations && p.iters < 3000)
        || (bw && p.duplex && matches!(p.verb, Verb::Send | Verb::WriteImm))
        || !bw
    {
        if notes {
            p.notice_out("Disabling dynamic polling\n");
        }
        p.dynamic_cqe_poll = false;
    }
    p.cqe_poll_batch = p.cqe_poll.unwrap_or(BATCH);
    if !p.dynamic_cqe_poll && !user_batch && p.num_qps > INTENSE_QPS && p.size > INTENSE_SIZE {
        if notes {
            p.notice_out(&format!("Increasing CQE polling batch to {BATCH_INTENSE}\n"));
        }
        p.cqe_poll_batch = BATCH_INTENSE;
    }
}
