//! qperf's command line, parsed the way stock qperf parses it (C-compatible tools keep their
//! own parser): options and bare words in one left-to-right pass; the first bare word is the
//! server, every later one a test that runs at once with the options seen so far.
//!
//! Most options set a local and a remote parameter (`-m`), or one of them (`--loc_…`/`-l…`,
//! `--rem_…`/`-r…`); the parameters themselves live in pars.rs.

use super::format::{Units, Verbosity};

pub use super::pars::{Par, ParInfo, ParKind, Pars, Side, PAR_N, PAR_NAMES};

/// What an option does.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Kind {
    Int,
    Set1,
    Size,
    Sl,
    Str,
    Time,
    /// A server option that takes a time (-lto).
    ServerTime,
    Debug,
    Help,
    Host,
    Loop,
    ListenPort,
    Precision,
    Ub,
    Un,
    Uu,
    V,
    Vc,
    Vs,
    Vt,
    Vu,
    Vv,
    Vvc,
    Vvs,
    Vvt,
    Vvu,
    Version,
    Wait,
    /// Ours: a remote `quit` may stop this server.
    AllowQuit,
    /// Ours: results as JSON.
    Json,
}

impl Kind {
    fn is_server_option(self) -> bool {
        matches!(self, Kind::Debug | Kind::ListenPort | Kind::ServerTime | Kind::AllowQuit)
    }
}

struct Opt {
    name: &'static str,
    kind: Kind,
    loc: Option<Par>,
    rem: Option<Par>,
}

const fn o(name: &'static str, kind: Kind, loc: Option<Par>, rem: Option<Par>) -> Opt {
    Opt { name, kind, loc, rem }
}

const fn both(name: &'static str, kind: Kind, p: Par) -> Opt {
    o(name, kind, Some(p), Some(p))
}
const fn loc(name: &'static str, kind: Kind, p: Par) -> Opt {
    o(name, kind, Some(p), None)
}
const fn rem(name: &'static str, kind: Kind, p: Par) -> Opt {
    o(name, kind, None, Some(p))
}
const fn plain(name: &'static str, kind: Kind) -> Opt {
    o(name, kind, None, None)
}

use Kind as K;
use Par as P;

static OPTIONS: &[Opt] = &[
    both("--access_recv", K::Int, P::AccessRecv),
    both("-ar", K::Int, P::AccessRecv),
    both("-ar1", K::Set1, P::AccessRecv),
    both("--alt_port", K::Int, P::AltPort),
    both("-ap", K::Int, P::AltPort),
    loc("--loc_alt_port", K::Int, P::AltPort),
    loc("-lap", K::Int, P::AltPort),
    rem("--rem_alt_port", K::Int, P::AltPort),
    rem("-rap", K::Int, P::AltPort),
    both("--cpu_affinity", K::Int, P::Affinity),
    both("-ca", K::Int, P::Affinity),
    loc("--loc_cpu_affinity", K::Int, P::Affinity),
    loc("-lca", K::Int, P::Affinity),
    rem("--rem_cpu_affinity", K::Int, P::Affinity),
    rem("-rca", K::Int, P::Affinity),
    plain("--debug", K::Debug),
    plain("-D", K::Debug),
    both("--flip", K::Int, P::Flip),
    both("-f", K::Int, P::Flip),
    both("-f1", K::Set1, P::Flip),
    plain("--help", K::Help),
    plain("-h", K::Help),
    plain("--host", K::Host),
    plain("-H", K::Host),
    both("--id", K::Str, P::Id),
    both("-i", K::Str, P::Id),
    loc("--loc_id", K::Str, P::Id),
    loc("-li", K::Str, P::Id),
    rem("--rem_id", K::Str, P::Id),
    rem("-ri", K::Str, P::Id),
    plain("--listen_port", K::ListenPort),
    plain("-lp", K::ListenPort),
    plain("--loop", K::Loop),
    plain("-oo", K::Loop),
    both("--msg_size", K::Size, P::MsgSize),
    both("-m", K::Size, P::MsgSize),
    both("--mtu_size", K::Size, P::MtuSize),
    both("-mt", K::Size, P::MtuSize),
    both("--no_msgs", K::Int, P::NoMsgs),
    both("-n", K::Int, P::NoMsgs),
    both("--cq_poll", K::Int, P::PollMode),
    both("-cp", K::Int, P::PollMode),
    both("-cp1", K::Set1, P::PollMode),
    loc("--loc_cq_poll", K::Int, P::PollMode),
    loc("-lcp", K::Int, P::PollMode),
    loc("-lcp1", K::Set1, P::PollMode),
    rem("--rem_cq_poll", K::Int, P::PollMode),
    rem("-rcp", K::Int, P::PollMode),
    rem("-rcp1", K::Set1, P::PollMode),
    both("--ip_port", K::Int, P::Port),
    both("-ip", K::Int, P::Port),
    plain("--precision", K::Precision),
    plain("-e", K::Precision),
    both("--rd_atomic", K::Int, P::RdAtomic),
    both("-nr", K::Int, P::RdAtomic),
    loc("--loc_rd_atomic", K::Int, P::RdAtomic),
    loc("-lnr", K::Int, P::RdAtomic),
    rem("--rem_rd_atomic", K::Int, P::RdAtomic),
    rem("-rnr", K::Int, P::RdAtomic),
    both("--service_level", K::Sl, P::Sl),
    both("-sl", K::Sl, P::Sl),
    loc("--loc_service_level", K::Sl, P::Sl),
    loc("-lsl", K::Sl, P::Sl),
    rem("--rem_service_level", K::Sl, P::Sl),
    rem("-rsl", K::Sl, P::Sl),
    both("--sock_buf_size", K::Size, P::SockBufSize),
    both("-sb", K::Size, P::SockBufSize),
    loc("--loc_sock_buf_size", K::Size, P::SockBufSize),
    loc("-lsb", K::Size, P::SockBufSize),
    rem("--rem_sock_buf_size", K::Size, P::SockBufSize),
    rem("-rsb", K::Size, P::SockBufSize),
    both("--src_path_bits", K::Size, P::SrcPathBits),
    both("-sp", K::Size, P::SrcPathBits),
    loc("--loc_src_path_bits", K::Size, P::SrcPathBits),
    loc("-lsp", K::Size, P::SrcPathBits),
    rem("--rem_src_path_bits", K::Size, P::SrcPathBits),
    rem("-rsp", K::Size, P::SrcPathBits),
    both("--static_rate", K::Str, P::StaticRate),
    both("-sr", K::Str, P::StaticRate),
    loc("--loc_static_rate", K::Str, P::StaticRate),
    loc("-lsr", K::Str, P::StaticRate),
    rem("--rem_static_rate", K::Str, P::StaticRate),
    rem("-rsr", K::Str, P::StaticRate),
    both("--time", K::Time, P::Time),
    both("-t", K::Time, P::Time),
    both("--timeout", K::Time, P::Timeout),
    both("-to", K::Time, P::Timeout),
    loc("--loc_timeout", K::ServerTime, P::Timeout),
    loc("-lto", K::ServerTime, P::Timeout),
    rem("--rem_timeout", K::Time, P::Timeout),
    rem("-rto", K::Time, P::Timeout),
    plain("--unify_nodes", K::Un),
    plain("-un", K::Un),
    plain("--unify_units", K::Uu),
    plain("-uu", K::Uu),
    plain("--use_bits_per_sec", K::Ub),
    plain("-ub", K::Ub),
    both("--use_cm", K::Int, P::UseCm),
    both("-cm", K::Int, P::UseCm),
    both("-cm1", K::Set1, P::UseCm),
    plain("--verbose", K::V),
    plain("-v", K::V),
    plain("--verbose_conf", K::Vc),
    plain("-vc", K::Vc),
    plain("--verbose_stat", K::Vs),
    plain("-vs", K::Vs),
    plain("--verbose_time", K::Vt),
    plain("-vt", K::Vt),
    plain("--verbose_used", K::Vu),
    plain("-vu", K::Vu),
    plain("--verbose_more", K::Vv),
    plain("-vv", K::Vv),
    plain("--verbose_more_conf", K::Vvc),
    plain("-vvc", K::Vvc),
    plain("--verbose_more_stat", K::Vvs),
    plain("-vvs", K::Vvs),
    plain("--verbose_more_time", K::Vvt),
    plain("-vvt", K::Vvt),
    plain("--verbose_more_used", K::Vvu),
    plain("-vvu", K::Vvu),
    plain("--version", K::Version),
    plain("-V", K::Version),
    plain("--wait_server", K::Wait),
    plain("-ws", K::Wait),
    plain("--allow-quit", K::AllowQuit),
    plain("--json", K::Json),
];

/// Obsolete spellings still accepted, with a warning naming the new one.
static RENAMED: &[(&str, &str)] = &[
    ("--affinity", "--cpu_affinity"),
    ("-a", "-ca"),
    ("--loc_affinity", "--loc_cpu_affinity"),
    ("-la", "-lca"),
    ("--rem_affinity", "--rem_cpu_affinity"),
    ("-ra", "-rca"),
    ("--rate", "--static_rate"),
    ("-r", "-sr"),
    ("--loc_rate", "--loc_static_rate"),
    ("-lr", "-lsr"),
    ("--rem_rate", "--rem_static_rate"),
    ("-rr", "-rsr"),
    ("--port", "--ip_port"),
    ("-p", "-ip"),
    ("--poll", "--cq_poll"),
    ("-P", "-cp"),
    ("--loc_poll", "--loc_cq_poll"),
    ("-lP", "-lcp"),
    ("--rem_poll", "--rem_cq_poll"),
    ("-rP", "-rcp"),
    ("-R", "-nr"),
    ("-lR", "-lnr"),
    ("-rR", "-rnr"),
    ("-T", "-to"),
    ("-lT", "-lto"),
    ("-rT", "-rto"),
    ("-S", "-sb"),
    ("-lS", "-lsb"),
    ("-rS", "-rsb"),
    ("--wait", "--wait_server"),
    ("-W", "-ws"),
    ("-vC", "-vvc"),
    ("-vS", "-vvs"),
    ("-vT", "-vvt"),
    ("-vU", "-vvu"),
    ("-aro", "-ar1"),
    ("-cmo", "-cm1"),
    ("-fo", "-f1"),
    ("-cpo", "-cp1"),
    ("-lcpo", "-lcp1"),
    ("-rcpo", "-rcp1"),
    ("-Ar", "-ar"),
    ("-M", "-mt"),
    ("-u", "-uu"),
];

/// A fatal command-line error: printed on stdout, exit 1 (as stock qperf does).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Fatal(pub String);

/// Sizes: a decimal number with an optional suffix, k/kb/m/mb/g/gb decimal and
/// K/kib/M/mib/G/gib binary (case-sensitive). Fractions are truncated after scaling.
pub fn parse_size(opt: &str, s: &str) -> Result<u64, Fatal> {
    let (num, rest) = split_number(s);
    let m: f64 = match rest {
        "" => 1.0,
        "k" | "kb" => 1e3,
        "m" | "mb" => 1e6,
        "g" | "gb" => 1e9,
        "K" | "kib" => 1024.0,
        "M" | "mib" => 1048576.0,
        "G" | "gib" => 1073741824.0,
        _ => return Err(Fatal(format!("{opt}: bad size: {s}"))),
    };
    let v = num.ok_or_else(|| Fatal(format!("{opt}: bad size: {s}")))? * m;
    if v < 0.0 {
        return Err(Fatal(format!("{opt} requires a non-negative number")));
    }
    to_u32_range(opt, v)
}

fn to_u32_range(opt: &str, v: f64) -> Result<u64, Fatal> {
    if !(v.is_finite() && v < 4294967296.0) {
        return Err(Fatal(format!("{opt}: value too large (at most 4294967295)")));
    }
    Ok(v as u64)
}

/// Times: seconds with an optional one-letter suffix s, m, h or d (either case), truncated to
/// whole seconds.
pub fn parse_time(opt: &str, s: &str) -> Result<u64, Fatal> {
    let (num, rest) = split_number(s);
    let Some(d) = num else { return Err(Fatal(format!("bad argument: {s}"))) };
    if d < 0.0 {
        return Err(Fatal(format!("{opt} requires a non-negative number")));
    }
    let m = match rest {
        "" | "s" | "S" => 1.0,
        "m" | "M" => 60.0,
        "h" | "H" => 3600.0,
        "d" | "D" => 86400.0,
        _ => return Err(Fatal(format!("bad argument: {s}"))),
    };
    to_u32_range(opt, (d * m).trunc())
}

/// Integers: decimal, the whole word, not negative.
pub fn parse_long(opt: &str, s: &str) -> Result<u64, Fatal> {
    let t = s.trim_start();
    let v: i64 = t.parse().map_err(|_| {
        if t.is_empty() || !t.trim_start_matches(['-', '+']).bytes().all(|c| c.is_ascii_digit()) {
            Fatal(format!("bad argument: {s}"))
        } else {
            Fatal(format!("{opt}: value too large (at most 4294967295)"))
        }
    })?;
    if v < 0 {
        return Err(Fatal(format!("{opt} requires a non-negative number")));
    }
    to_u32_range(opt, v as f64)
}

/// The longest prefix that is a decimal number (like strtold, without hex or inf), and the rest.
fn split_number(s: &str) -> (Option<f64>, &str) {
    // Leading spaces only (not tabs or newlines), as qperf's own scan.
    match bench_core::cparse::c_float_span(s, |c| c == b' ') {
        Some((start, end)) => (s[start..end].parse().ok(), &s[end..]),
        None => (None, s),
    }
}

/// A `-oo name:init:last:incr` loop.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Loop {
    pub option: &'static str,
    pub init: u64,
    pub last: u64,
    pub incr: u64,
    pub mult: bool,
}

/// Everything outside the per-side parameters.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Global {
    pub units: Units,
    pub verbosity: Verbosity,
    pub unify_nodes: bool,
    pub listen_port: u16,
    pub wait_server: u64,
    pub host: Option<String>,
    pub loops: Vec<Loop>,
    pub allow_quit: bool,
    pub json: bool,
}

impl Default for Global {
    fn default() -> Self {
        Global {
            units: Units::default(),
            verbosity: Verbosity::default(),
            unify_nodes: false,
            listen_port: 19765,
            wait_server: 5,
            host: None,
            loops: Vec::new(),
            allow_quit: false,
            json: false,
        }
    }
}

/// Parsed state, updated as the words are read.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct State {
    pub pars: Pars,
    pub g: Global,
    /// How the program opens RDMA devices (not an option: the program's entry point sets it).
    pub providers: providers::ProviderSettings,
}

impl Default for State {
    fn default() -> Self {
        State { pars: Pars::new(), g: Global::default(), providers: Default::default() }
    }
}

/// What the command line asks for, besides the tests run while parsing.
#[derive(Debug, PartialEq, Eq)]
pub enum Outcome {
    /// No client option and no bare word: be a server.
    Server,
    /// The tests ran (through the callback).
    Client,
    /// Printed help or the version.
    Done,
}

fn find_option(name: &str, out: &mut dyn FnMut(&str)) -> Option<&'static Opt> {
    let mut name = name;
    if let Some((old, new)) = RENAMED.iter().find(|(old, _)| *old == name) {
        out(&format!("warning: obsolete option: {old}; use {new} instead"));
        name = new;
    }
    OPTIONS.iter().find(|o| o.name == name)
}

/// A stock error line, then (on a line of its own, so that a script reading the first line
/// still finds the stock text) what was probably meant.
fn with_hint(stock: String, hint: Option<String>) -> Fatal {
    Fatal(match hint {
        Some(h) => format!("{stock}\n{h}"),
        None => stock,
    })
}

/// Guides often drop the RDMA transport (`rdma_read_lat` for `rc_rdma_read_lat`).
const TRANSPORTS: [&str; 3] = ["rc_", "uc_", "ud_"];

/// `NAME: bad test; try: qperf --help tests`, and the test probably meant.
pub fn bad_test(name: &str) -> Fatal {
    let hint = bench_core::suggest::did_you_mean(&bench_core::suggest::nearest(name, &super::wire::TESTS, &TRANSPORTS));
    with_hint(format!("{name}: bad test; try: qperf --help tests"), hint)
}

/// Spellings of "bidirectional" that guides carry over from perftest or iperf; qperf 0.4.11
/// has no such option (`-b` is a bad option there too): its bidirectional runs are tests of
/// their own.
const BIDIRECTIONAL: [&str; 2] = ["-b", "--bidirectional"];

/// What a guide's `-b` probably wanted: the `_bi_bw` form of the tests after it, or the list.
fn bidirectional_hint(rest: &[String]) -> String {
    let bi: Vec<&str> = super::wire::TESTS.iter().copied().filter(|t| t.contains("_bi_")).collect();
    let meant: Vec<&str> = bi.iter().copied().filter(|b| rest.iter().any(|w| b.replacen("_bi_", "_", 1) == *w)).collect();
    let names = if meant.is_empty() { bi.clone() } else { meant };
    let q = bench_core::suggest::did_you_mean(&names).unwrap_or_default();
    format!("{q} (qperf has no -b: a bidirectional run is a test of its own, {})", bi.join(", "))
}

/// `OPT: bad option; try: qperf --help options`, and the option (or test) probably meant.
/// `rest`: the words after the option.
fn bad_option(name: &str, rest: &[String]) -> Fatal {
    let hint = if BIDIRECTIONAL.contains(&name) {
        Some(bidirectional_hint(rest))
    } else {
        let names: Vec<&str> = OPTIONS.iter().map(|o| o.name).collect();
        bench_core::suggest::did_you_mean(&bench_core::suggest::nearest(name, &names, &[]))
    };
    with_hint(format!("{name}: bad option; try: qperf --help options"), hint)
}

fn arg(args: &[String], i: usize) -> Result<&str, Fatal> {
    args.get(i + 1).map(String::as_str).ok_or_else(|| Fatal(format!("missing argument to {}", args[i])))
}

/// Apply one option with its value (if it takes one). Returns how many words it used
/// (`usize::MAX`: help or the version was printed). One arm per kind of option; the checks
/// of a value are in the helpers below.
fn do_option(
    st: &mut State,
    opt: &Opt,
    name: &str,
    value: Option<&str>,
    out: &mut dyn FnMut(&str),
) -> Result<usize, Fatal> {
    match opt.kind {
        K::Int => set_par(st, opt, name, value, parse_long),
        K::Set1 => {
            set_sides(st, opt, name, 1, "1");
            Ok(1)
        }
        K::Size => set_par(st, opt, name, value, parse_size),
        K::Sl => set_par(st, opt, name, value, parse_sl),
        K::Str => set_par(st, opt, name, value, check_str),
        K::Time | K::ServerTime => set_par(st, opt, name, value, parse_time),
        K::Debug => flag(&mut st.g.verbosity.debug),
        K::Help => {
            out(&help(value));
            Ok(usize::MAX)
        }
        K::Version => {
            out(&format!("qperf {}", super::wire::VERSION_TEXT));
            Ok(usize::MAX)
        }
        K::Host => {
            st.g.host = Some(need(value, name)?.to_string());
            Ok(2)
        }
        K::Loop => {
            let s = value.ok_or_else(|| Fatal(format!("{name}: missing argument")))?;
            st.g.loops.push(parse_loop(name, s)?);
            Ok(2)
        }
        K::ListenPort => {
            st.g.listen_port = parse_port(name, need(value, name)?)?;
            Ok(2)
        }
        K::Precision => {
            st.g.units.precision = parse_precision(name, need(value, name)?)?;
            Ok(2)
        }
        K::Ub => flag(&mut st.g.units.bits_per_sec),
        K::Un => flag(&mut st.g.unify_nodes),
        K::Uu => flag(&mut st.g.units.unify_units),
        K::V => {
            st.g.verbosity.conf = st.g.verbosity.conf.max(1);
            st.g.verbosity.stat = st.g.verbosity.stat.max(1);
            st.g.verbosity.time = st.g.verbosity.time.max(1);
            st.g.verbosity.used = st.g.verbosity.used.max(1);
            Ok(1)
        }
        K::Vc => level(&mut st.g.verbosity.conf, 1),
        K::Vs => level(&mut st.g.verbosity.stat, 1),
        K::Vt => level(&mut st.g.verbosity.time, 1),
        K::Vu => level(&mut st.g.verbosity.used, 1),
        K::Vv => {
            let d = st.g.verbosity.debug;
            st.g.verbosity = Verbosity { conf: 2, stat: 2, time: 2, used: 2, debug: d };
            Ok(1)
        }
        K::Vvc => level(&mut st.g.verbosity.conf, 2),
        K::Vvs => level(&mut st.g.verbosity.stat, 2),
        K::Vvt => level(&mut st.g.verbosity.time, 2),
        K::Vvu => level(&mut st.g.verbosity.used, 2),
        K::Wait => {
            st.g.wait_server = parse_time(name, need(value, name)?)?;
            Ok(2)
        }
        K::AllowQuit => flag(&mut st.g.allow_quit),
        K::Json => flag(&mut st.g.json),
    }
}

fn need<'v>(v: Option<&'v str>, name: &str) -> Result<&'v str, Fatal> {
    v.ok_or_else(|| Fatal(format!("missing argument to {name}")))
}

/// An option that sets a parameter: its value, checked by `parse`, on the side or sides the
/// option names. Uses two words.
fn set_par(st: &mut State, opt: &Opt, name: &str, value: Option<&str>, parse: fn(&str, &str) -> Result<u64, Fatal>) -> Result<usize, Fatal> {
    let s = need(value, name)?;
    let v = parse(name, s)?;
    set_sides(st, opt, name, v, s);
    Ok(2)
}

/// Set the option's local and remote parameters (those it has), as given by `name` as `text`.
fn set_sides(st: &mut State, opt: &Opt, name: &str, v: u64, text: &str) {
    let v = v as u32;
    if let Some(p) = opt.loc {
        st.pars.set_user(Side::Loc, p, name, v, text);
    }
    if let Some(p) = opt.rem {
        st.pars.set_user(Side::Rem, p, name, v, text);
    }
}

/// `-sl`: a service level is 0 to 15.
fn parse_sl(name: &str, s: &str) -> Result<u64, Fatal> {
    let v = parse_long(name, s)?;
    if v > 15 {
        return Err(Fatal(format!("service level must be between 0 and 15: {v} given")));
    }
    Ok(v)
}

/// A string parameter (`-i`) must fit the request's field; its number is 0.
fn check_str(_name: &str, s: &str) -> Result<u64, Fatal> {
    if s.len() >= super::wire::STR_LEN {
        return Err(Fatal(format!("{s}: too long")));
    }
    Ok(0)
}

fn parse_port(name: &str, s: &str) -> Result<u16, Fatal> {
    let v = parse_long(name, s)?;
    u16::try_from(v).map_err(|_| Fatal(format!("{name}: port must be at most 65535")))
}

fn parse_precision(name: &str, s: &str) -> Result<usize, Fatal> {
    let v = parse_long(name, s)?;
    // Stock qperf takes any number; more than 40 digits of a double are noise.
    if v > 40 {
        return Err(Fatal(format!("{name}: precision must be at most 40: {v} given")));
    }
    Ok(v as usize)
}

/// An option without a value that turns something on.
fn flag(f: &mut bool) -> Result<usize, Fatal> {
    *f = true;
    Ok(1)
}

/// An option without a value that sets one class's verbosity.
fn level(class: &mut u8, v: u8) -> Result<usize, Fatal> {
    *class = v;
    Ok(1)
}

fn takes_value(k: Kind) -> bool {
    matches!(
        k,
        K::Int | K::Size | K::Sl | K::Str | K::Time | K::ServerTime | K::Host | K::Loop | K::ListenPort | K::Precision | K::Wait
    )
}

/// `-oo [name]:[init]:last[:[*]incr]`: name defaults to msg_size, init to 0 (1 when
/// multiplying). Stock qperf loops for ever without an increment; we refuse that.
pub fn parse_loop(opt: &str, s: &str) -> Result<Loop, Fatal> {
    let mut parts = s.splitn(4, ':').map(|p| if p.is_empty() { None } else { Some(p) });
    let name = parts.next().flatten().unwrap_or("msg_size");
    let init = parts.next().flatten();
    let last = parts.next().flatten();
    let incr = parts.next().flatten();
    let option = OPTIONS
        .iter()
        .find(|o| o.name.trim_start_matches('-') == name && o.name.starts_with('-'))
        .ok_or_else(|| Fatal(format!("{opt}: {name}: no such variable")))?;
    if !takes_value(option.kind) || matches!(option.kind, K::Loop | K::Host | K::Str) {
        return Err(Fatal(format!("{opt}: {name}: not a numeric option")));
    }
    let last = parse_size(opt, last.ok_or_else(|| Fatal(format!("{opt}: must specify limit")))?)?;
    let (mult, incr) = match incr {
        None => return Err(Fatal(format!("{opt}: must specify an increment (stock qperf would loop for ever)"))),
        Some(i) => match i.strip_prefix('*') {
            Some(m) => (true, m),
            None => (false, i),
        },
    };
    let incr = parse_size(opt, incr)?;
    if incr < 1 || (mult && incr < 2) {
        return Err(Fatal(format!("{opt}: {incr}: increment must be positive{}", if mult { " and above 1 when multiplying" } else { "" })));
    }

    let init = match init {
        Some(v) => parse_size(opt, v)?,
        None => u64::from(mult),
    };
    if mult && init == 0 {
        return Err(Fatal(format!("{opt}: a multiplying loop cannot start at 0")));
    }
    Ok(Loop { option: option.name, init, last, incr, mult })
}

/// Parse `args` (after the program name). Each test is handed to `run` with the state as it
/// is at that word, once per loop step. `out` receives warnings and help text.
pub fn do_args(
    args: &[String],
    st: &mut State,
    out: &mut dyn FnMut(&str),
    run: &mut dyn FnMut(&mut State, &str) -> Result<(), Fatal>,
) -> Result<Outcome, Fatal> {
    let mut is_client = false;
    let mut tested = false;
    let mut i = 0;
    while i < args.len() {
        let a = args[i].as_str();
        if a.starts_with('-') {
            let opt = find_option(a, out).ok_or_else(|| bad_option(a, &args[i + 1..]))?;
            if !opt.kind.is_server_option() {
                is_client = true;
            }
            let value = if opt.kind == K::Help { args.get(i + 1).map(String::as_str) } else if takes_value(opt.kind) { Some(arg(args, i)?) } else { None };
            let used = do_option(st, opt, a, value, out)?;
            if used == usize::MAX {
                return Ok(Outcome::Done);
            }
            i += used;
        } else {
            is_client = true;
            if st.g.host.is_none() {
                st.g.host = Some(a.to_string());
            } else {
                if super::wire::test_index(a).is_none() {
                    return Err(bad_test(a));
                }
                let loops = st.g.loops.clone();
                run_loops(st, &loops, a, out, run)?;
                tested = true;
            }
            i += 1;
        }
    }
    if !is_client {
        return Ok(Outcome::Server);
    }
    if !tested {
        return match &st.g.host {
            None => Err(Fatal(
                "you used a client-only option but did not specify the server name.\nDo you want to be a client or server?".into(),
            )),
            Some(h) if super::wire::test_index(h).is_some() => {
                Err(Fatal("must specify host name first; try: qperf --help".into()))
            }
            Some(_) => Err(Fatal("must specify a test type; try: qperf --help".into())),
        };
    }
    Ok(Outcome::Client)
}

fn run_loops(
    st: &mut State,
    loops: &[Loop],
    test: &str,
    out: &mut dyn FnMut(&str),
    run: &mut dyn FnMut(&mut State, &str) -> Result<(), Fatal>,
) -> Result<(), Fatal> {
    let Some((l, rest)) = loops.split_first() else {
        return run(st, test);
    };
    let opt = OPTIONS.iter().find(|o| o.name == l.option).ok_or_else(|| Fatal("loop option vanished".into()))?;
    let mut v = l.init;
    while v <= l.last {
        let text = v.to_string();
        do_option(st, opt, l.option, Some(&text), out)?;
        run_loops(st, rest, test, out, run)?;
        let next = if l.mult { v.checked_mul(l.incr) } else { v.checked_add(l.incr) };
        match next {
            Some(n) if n > v => v = n,
            _ => break,
        }
    }
    Ok(())
}

/// Our own short help (stock qperf's long help text is not reproduced).
pub fn help(topic: Option<&str>) -> String {
    match topic {
        Some("tests") => {
            let mut s = String::from("Tests (this implementation runs all of them but rds_*, sdp_* and xrc_*):\n");
            for t in super::wire::TESTS {
                s.push_str(&format!("    {t}\n"));
            }
            s.pop();
            s
        }
        Some("options") | Some("opts") => {
            let mut s = String::from("Options:\n");
            for o in OPTIONS {
                s.push_str(&format!("    {}\n", o.name));
            }
            s.pop();
            s
        }
        _ => "Synopsis:\n    qperf\n    qperf SERVERNODE [OPTIONS] TESTS\n\n\
              With no arguments (or only -lp, -lto, -D, --allow-quit) qperf is a server on port 19765.\n\
              A client names the server and then the tests; each test runs with the options before it.\n\
              More: qperf --help options, qperf --help tests, and docs/qperf.md."
            .to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(s: &str) -> Vec<String> {
        s.split_whitespace().map(String::from).collect()
    }

    /// One run the parser asked for: (test, loc msg_size, rem msg_size, loc time).
    type Run = (String, u32, u32, u32);

    /// Runs the parser; returns (outcome or error, printed lines, the runs).
    fn parse(s: &str) -> (Result<Outcome, Fatal>, Vec<String>, Vec<Run>) {
        let mut st = State::default();
        let mut lines = Vec::new();
        let mut runs = Vec::new();
        let r = do_args(&args(s), &mut st, &mut |l| lines.push(l.to_string()), &mut |st, t| {
            runs.push((t.to_string(), st.pars.loc(Par::MsgSize), st.pars.rem(Par::MsgSize), st.pars.loc(Par::Time)));
            Ok(())
        });
        (r, lines, runs)
    }

    #[test]
    fn server_when_only_server_options() {
        assert_eq!(parse("").0, Ok(Outcome::Server));
        assert_eq!(parse("-lp 5000 -D -lto 3").0, Ok(Outcome::Server));
        assert_eq!(parse("--allow-quit").0, Ok(Outcome::Server));
    }

    #[test]
    fn each_test_runs_with_options_seen_so_far() {
        let (r, _, runs) = parse("host -m 1K tcp_bw -t 1m tcp_lat -m 9");
        assert_eq!(r, Ok(Outcome::Client));
        assert_eq!(runs, vec![("tcp_bw".into(), 1024, 1024, 0), ("tcp_lat".into(), 1024, 1024, 60)]);
    }

    #[test]
    fn loc_and_rem_forms() {
        let mut st = State::default();
        do_args(&args("h -lsb 1k -rsb 2kib --rem_timeout 7 -lca 2 udp_bw"), &mut st, &mut |_| {}, &mut |_, _| Ok(())).unwrap();
        assert_eq!((st.pars.loc(Par::SockBufSize), st.pars.rem(Par::SockBufSize)), (1000, 2048));
        assert_eq!((st.pars.loc(Par::Timeout), st.pars.rem(Par::Timeout)), (0, 7));
        assert_eq!((st.pars.loc(Par::Affinity), st.pars.rem(Par::Affinity)), (2, 0));
    }

    #[test]
    fn errors_and_warnings_match_stock_texts() {
        assert_eq!(parse("h -zz").0, Err(Fatal("-zz: bad option; try: qperf --help options".into())));
        assert_eq!(parse("h nosuch").0, Err(Fatal("nosuch: bad test; try: qperf --help tests".into())));
        assert_eq!(parse("h").0, Err(Fatal("must specify a test type; try: qperf --help".into())));
        assert_eq!(parse("tcp_bw").0, Err(Fatal("must specify host name first; try: qperf --help".into())));
        assert!(parse("-m 5").0.unwrap_err().0.starts_with("you used a client-only option"));
        assert_eq!(parse("h -m").0, Err(Fatal("missing argument to -m".into())));
        assert_eq!(parse("h -m 5q tcp_bw").0, Err(Fatal("-m: bad size: 5q".into())));
        assert_eq!(parse("h -n -1 tcp_bw").0, Err(Fatal("-n requires a non-negative number".into())));
        assert_eq!(parse("h -n 1x tcp_bw").0, Err(Fatal("bad argument: 1x".into())));
        assert_eq!(parse("h -sl 16 tcp_bw").0, Err(Fatal("service level must be between 0 and 15: 16 given".into())));
        assert_eq!(parse("h -t 2x tcp_bw").0, Err(Fatal("bad argument: 2x".into())));
        let (r, lines, _) = parse("h -r 10 tcp_bw");
        assert_eq!(r, Ok(Outcome::Client));
        assert_eq!(lines, vec!["warning: obsolete option: -r; use -sr instead"]);
    }

    /// The stock line first, then a guess; the exit status (Fatal: 1) is unchanged.
    #[test]
    fn bad_names_from_guides_get_a_guess_on_a_second_line() {
        let err = |s: &str| parse(s).0.unwrap_err().0;
        let (r, _, runs) = parse("h tcp_bw rdma_read_lat");
        assert_eq!(r, Err(Fatal("rdma_read_lat: bad test; try: qperf --help tests\ndid you mean rc_rdma_read_lat?".into())));
        assert_eq!(runs.len(), 1, "tcp_bw ran before the bad word, as in stock qperf");
        assert_eq!(err("h rdma_write_lat"), "rdma_write_lat: bad test; try: qperf --help tests\ndid you mean rc_rdma_write_lat or uc_rdma_write_lat?");
        assert_eq!(err("h bi_bw"), "bi_bw: bad test; try: qperf --help tests\ndid you mean rc_bi_bw, uc_bi_bw or ud_bi_bw?");
        assert_eq!(err("h tcp_lta"), "tcp_lta: bad test; try: qperf --help tests\ndid you mean tcp_lat?");
        assert_eq!(err("h rc_rdma_raed_bw"), "rc_rdma_raed_bw: bad test; try: qperf --help tests\ndid you mean rc_rdma_read_bw?");
        // Nothing close: the stock line alone.
        assert_eq!(err("h nosuch"), "nosuch: bad test; try: qperf --help tests");
        // Options.
        assert_eq!(err("h --msgsize 4k tcp_bw"), "--msgsize: bad option; try: qperf --help options\ndid you mean --msg_size?");
        assert_eq!(err("h -msg_size 4k tcp_bw"), "-msg_size: bad option; try: qperf --help options\ndid you mean --msg_size?");
        assert_eq!(err("h --use-cm 1 rc_bw"), "--use-cm: bad option; try: qperf --help options\ndid you mean --use_cm?");
        assert_eq!(err("h -zz"), "-zz: bad option; try: qperf --help options");
        // -b: perftest's and iperf's bidirectional switch; qperf names those runs as tests.
        let bi = " (qperf has no -b: a bidirectional run is a test of its own, rc_bi_bw, uc_bi_bw, ud_bi_bw)";
        assert_eq!(err("h -b rc_bw"), format!("-b: bad option; try: qperf --help options\ndid you mean rc_bi_bw?{bi}"));
        assert_eq!(err("h -b ud_bw uc_bw"), format!("-b: bad option; try: qperf --help options\ndid you mean uc_bi_bw or ud_bi_bw?{bi}"));
        assert_eq!(err("h -b tcp_bw"), format!("-b: bad option; try: qperf --help options\ndid you mean rc_bi_bw, uc_bi_bw or ud_bi_bw?{bi}"));
        assert_eq!(err("h --bidirectional"), format!("--bidirectional: bad option; try: qperf --help options\ndid you mean rc_bi_bw, uc_bi_bw or ud_bi_bw?{bi}"));
        // Every name suggested is a real one.
        for t in ["rc_bi_bw", "uc_bi_bw", "ud_bi_bw", "rc_rdma_read_lat", "uc_rdma_write_lat"] {
            assert!(super::super::wire::test_index(t).is_some(), "{t}");
        }
    }

    #[test]
    fn sizes_and_times() {
        for (s, v) in [("1", 1), ("1k", 1000), ("1kb", 1000), ("1K", 1024), ("1kib", 1024), ("2m", 2_000_000), ("2M", 2 << 20), ("1g", 1_000_000_000), ("1G", 1 << 30), ("1.5K", 1536), ("0.5", 0)] {
            assert_eq!(parse_size("-m", s), Ok(v), "{s}");
        }
        assert!(parse_size("-m", "5G").is_err());
        assert!(parse_size("-m", "1KB").is_err());
        for (s, v) in [("2", 2), ("2.9", 2), ("3s", 3), ("1m", 60), ("1M", 60), ("1h", 3600), ("1d", 86400), ("0.5m", 30)] {
            assert_eq!(parse_time("-t", s), Ok(v), "{s}");
        }
        assert!(parse_time("-t", "1ms").is_err());
        assert!(parse_time("-t", "-1").is_err());
    }

    /// Each kind of option lands where it belongs: parameters on the sides the option names,
    /// with its text and name; the settings of the run in `Global`.
    #[test]
    fn each_kind_of_option_sets_its_place() {
        let mut st = State::default();
        let line = "-H h2 -D -lp 7000 -e 5 -ub -un -uu -ws 3 --allow-quit --json -vv -vc -vu -vvs \
                    -sl 3 -ri abc -lcp1 --mtu_size 2k -lto 9 -oo msg_size:1:2:1 -rca 4 tcp_lat";
        let r = do_args(&args(line), &mut st, &mut |_| {}, &mut |_, _| Ok(()));
        assert_eq!(r, Ok(Outcome::Client));
        let g = &st.g;
        assert_eq!((g.host.as_deref(), g.listen_port, g.wait_server, g.allow_quit, g.json, g.unify_nodes), (Some("h2"), 7000, 3, true, true, true));
        assert_eq!(g.units, Units { precision: 5, unify_units: true, bits_per_sec: true });
        // -vv keeps -D; -vc and -vu then lower two classes to 1, -vvs keeps stat at 2.
        assert_eq!(g.verbosity, Verbosity { conf: 1, stat: 2, time: 2, used: 1, debug: true });
        assert_eq!(g.loops.len(), 1);
        let side = |s, p| {
            let i = st.pars.get(s, p);
            (i.val, i.text.as_str(), i.set_by.as_deref())
        };
        assert_eq!(side(Side::Loc, Par::Sl), (3, "3", Some("-sl")));
        assert_eq!(side(Side::Rem, Par::Sl), (3, "3", Some("-sl")));
        assert_eq!(side(Side::Rem, Par::Id), (0, "abc", Some("-ri")));
        assert_eq!(side(Side::Loc, Par::Id).2, None);
        assert_eq!(side(Side::Loc, Par::PollMode), (1, "1", Some("-lcp1")));
        assert_eq!(side(Side::Rem, Par::PollMode).2, None);
        assert_eq!(side(Side::Loc, Par::MtuSize), (2000, "2k", Some("--mtu_size")));
        // The loop ran last with msg_size 2.
        assert_eq!(side(Side::Rem, Par::MsgSize), (2, "2", Some("--msg_size")));
        assert_eq!(side(Side::Loc, Par::Timeout), (9, "9", Some("-lto")));
        assert_eq!(side(Side::Rem, Par::Affinity), (4, "4", Some("-rca")));
        let mut v = State::default();
        do_args(&args("h -v -vvt tcp_bw"), &mut v, &mut |_| {}, &mut |_, _| Ok(())).unwrap();
        assert_eq!(v.g.verbosity, Verbosity { conf: 1, stat: 1, time: 2, used: 1, debug: false });
        // The value checks of the kinds that have one.
        assert_eq!(parse("h -i 0123456789012345678901234567890123456789012345678901234567890123456789 tcp_bw").0.unwrap_err().0, "0123456789012345678901234567890123456789012345678901234567890123456789: too long");
        assert_eq!(parse("-lp 70000").0, Err(Fatal("-lp: port must be at most 65535".into())));
        assert_eq!(parse("h -e 41 tcp_bw").0, Err(Fatal("-e: precision must be at most 40: 41 given".into())));
        assert_eq!(parse("h -oo").0, Err(Fatal("missing argument to -oo".into())));
        assert_eq!(parse("h -H").0, Err(Fatal("missing argument to -H".into())));
        assert_eq!(parse("h -ws 2x tcp_bw").0, Err(Fatal("bad argument: 2x".into())));
    }

    #[test]
    fn loops() {
        let (r, _, runs) = parse("h -oo msg_size:1:4:*2 tcp_lat");
        assert_eq!(r, Ok(Outcome::Client));
        assert_eq!(runs.iter().map(|r| r.1).collect::<Vec<_>>(), vec![1, 2, 4]);
        let (_, _, runs) = parse("h -oo ::3K:1K tcp_bw");
        assert_eq!(runs.iter().map(|r| r.1).collect::<Vec<_>>(), vec![0, 1024, 2048, 3072]);
        assert!(parse("h -oo msg_size:1:4 tcp_bw").0.unwrap_err().0.contains("increment"));
        assert_eq!(parse("h -oo nosuch:1:4:1 tcp_bw").0, Err(Fatal("-oo: nosuch: no such variable".into())));
        assert_eq!(parse("h -oo msg_size:1 tcp_bw").0.unwrap_err().0, "-oo: must specify limit");
    }

    #[test]
    fn help_and_version_end_parsing() {
        let (r, lines, runs) = parse("-V h tcp_bw");
        assert_eq!(r, Ok(Outcome::Done));
        assert_eq!(lines, vec!["qperf 0.4.11"]);
        assert!(runs.is_empty());
        assert_eq!(parse("--help tests").0, Ok(Outcome::Done));
    }

    #[test]
    fn unused_warning_once_per_option() {
        let mut st = State::default();
        do_args(&args("h -cm1 -ar1"), &mut st, &mut |_| {}, &mut |_, _| Ok(())).ok();
        st.pars.start_test();
        st.pars.use_par(Par::AccessRecv);
        assert_eq!(st.pars.unused_warnings("tcp_lat"), vec!["warning: -cm1 set but not used in test tcp_lat"]);
    }
}
