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
//!   refused with a one-line [`ErrorKind::Unsupported`] error:
//!   GPU memory, the PP rate limiter, data validation and vendor-specific options.
//! * Raw-Ethernet options (`-B -E -J -j -K -k -Y -Z -P -v`, `--tcp`, `--remote_mac`, …) are
//!   accepted and ignored, as perftest's ib_* tools do.
//!
//! Layout: `types` (the enums), `error` (outcome, errors, notices), `fields` (the [`Params`]
//! record and its defaults), `parse` (the driver), `getopt` (the scanner, handed the option
//! tables as values), `options` (the tables, and `apply`: one option into the record), `state`
//! (what options leave besides the record), `derive` (`force_dependecies()`), one module per
//! feature with derivations of its own (`aes`, `dc`, `xrc`, `rate`, `cqe`), and `knobs` (the
//! library's knobs in perftest's spelling). The imports run one way: `parse` uses `options`,
//! which uses `getopt`; `error` and `state` name none of them.

pub mod aes;
mod cqe;
pub mod dc;
mod derive;
mod error;
mod fields;
mod getopt;
mod gpu;
mod options;
#[forbid(unsafe_code)]
pub mod knobs;
mod parse;
pub mod persona;
pub mod rate;
mod srd;
mod state;
mod types;
mod usage;
mod usage629;
mod usage_shared;
mod xrc;
pub use xrc::{lane_plan, xrc_plan};

pub use error::{ErrorKind, Notice, ParamError};
pub use fields::Params;
#[cfg(test)]
pub(crate) use parse::parsed;
pub use parse::{parse, parse_run, ParseOutcome, parse_with_env, persona_hint, usage_for};
pub use persona::{Persona, DEFAULT_PERSONA, ENV_PERSONA};
pub use types::{
    AtomicType, Connection, LinkType, Output, RateLimitType, RateUnits, ReportFormat, Role, TestKind, TestMethod, TestType,
    Tool, Verb,
};
pub use usage::{extensions_help, usage};
pub use usage629::usage629;

use error::conflict;

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
/// Default UD QKey.
pub const DEF_QKEY: u32 = 0x1111_1111;
/// Message sizes above this disable the default CQ moderation.
pub const MSG_SIZE_CQ_MOD_LIMIT: u64 = 8192;

/// ibv_mtu enum (256→1 … 4096→5) for a byte size, None if not one of the five IB MTUs.
pub use uverbs::device::mtu_enum;

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
