//! The environment variables the program honours for the libraries, read once at start into
//! the values each command hands to the libraries it calls (the libraries themselves read no
//! environment and keep no settings), and the warning sink that puts their warnings on stderr.
//!
//! - `RPERFTEST_VERBS_TRANSPORT=write|ioctl`: how uverbs commands reach the kernel (default write;
//!   an unknown value means write).
//! - `RPERFTEST_RXE_DOORBELL=write|uring|uring-sqpoll`: the rxe doorbell experiment (default
//!   write; an unknown value is refused when an rxe context is opened).
//! - `MLX5_SHUT_UP_BF` (set and not `0`: no BlueFlame) and `MLX5_POST_SEND_PREFER_BF` (`0`: a
//!   plain doorbell where BlueFlame is optional), with libmlx5's meaning.
//! - The perftest tools' own, handed to them as a [`RunSettings`] value:
//!   `RPERFTEST_PERFTEST_VERSION`, `RPERFTEST_OOB_TIMEOUT`, `RPERFTEST_STALL_TIMEOUT`; and
//!   `RPERFTEST_CLOCK=monotonic`, the time base's source, chosen before its first reading
//!   (docs/faults.md, docs/compat.md).

use bench_core::clock;
use bench_core::settings::RunSettings;
use providers::rxe::doorbell::DoorbellMode;
use providers::settings::ProviderSettings;
use uverbs::cmd::Transport;
use uverbs::knob::Knob;
use uverbs::settings::Warning;

pub const TRANSPORT_ENV: &str = "RPERFTEST_VERBS_TRANSPORT";
pub const DOORBELL_ENV: &str = "RPERFTEST_RXE_DOORBELL";
pub const MLX5_SHUT_UP_BF: &str = "MLX5_SHUT_UP_BF";
pub const MLX5_PREFER_BF: &str = "MLX5_POST_SEND_PREFER_BF";
/// `monotonic` makes every measurement read `CLOCK_MONOTONIC` instead of the calibrated TSC.
pub const CLOCK_ENV: &str = "RPERFTEST_CLOCK";

/// The perftest tools' settings from `var`, kept as written (the tool refuses a bad value
/// with its own line when it uses it).
pub fn run_settings(var: impl Fn(&str) -> Option<String>) -> RunSettings {
    RunSettings {
        persona: var(perftest::params::ENV_PERSONA),
        oob_timeout: var(perftest::tool::ENV_OOB_TIMEOUT),
        stall_timeout: var(perftest::tool::ENV_STALL_TIMEOUT),
    }
}

/// The matrix's part of the environment (Slurm's allocation, TMPDIR on a node); the names are
/// the matrix's (`matrix::args::Env::from_vars`).
pub fn matrix_env() -> matrix::args::Env {
    matrix::args::Env::from_vars(|k| std::env::var_os(k))
}

/// The clock source `var` asks for.
pub fn clock_source(var: impl Fn(&str) -> Option<String>) -> clock::Source {
    match var(CLOCK_ENV).as_deref() {
        Some("monotonic") => clock::Source::Monotonic,
        _ => clock::Source::Tsc,
    }
}

/// What the program chose, as values: every command that opens a device takes `providers`; the
/// perftest tools take `run` too.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Settings {
    pub run: RunSettings,
    pub providers: ProviderSettings,
}

/// How devices are opened, from `var` (the environment, or a table in tests).
pub fn from_vars(var: impl Fn(&str) -> Option<String>) -> ProviderSettings {
    let transport = var(TRANSPORT_ENV).and_then(|v| Transport::parse(&v)).unwrap_or_default();
    let flag = |k: &str| var(k).map(|v| v.trim() != "0");
    let rxe_doorbell = match var(DOORBELL_ENV) {
        None => Ok(DoorbellMode::Write),
        Some(v) => DoorbellMode::parse(&v).map_err(|why| format!("{DOORBELL_ENV}={why}")),
    };
    ProviderSettings {
        transport,
        rxe_doorbell,
        mlx5_blueflame: flag(MLX5_SHUT_UP_BF) != Some(true),
        mlx5_prefer_bf: flag(MLX5_PREFER_BF).unwrap_or(true),
    }
}

fn to_stderr(w: &Warning) {
    eprintln!("rperftest: warning: {w}");
}

/// How hints name a knob in the ib_* tools and our own commands: the two environment knobs, and
/// perftest's options for the rest.
pub fn perftest_spelling(k: Knob) -> Option<&'static str> {
    env_spelling(k).or_else(|| perftest::params::knobs::perftest_flag(k))
}

/// The knobs every command of this program has: the environment variables above.
pub fn env_spelling(k: Knob) -> Option<&'static str> {
    match k {
        Knob::WriteTransport => Some("RPERFTEST_VERBS_TRANSPORT=write"),
        Knob::WriteDoorbell => Some("RPERFTEST_RXE_DOORBELL=write"),
        _ => None,
    }
}

/// Read the environment, name the stderr warning sink, choose the clock, and return the
/// settings the commands take as values; hints name knobs the perftest way unless `tool` has its
/// own flags (qperf: only the environment knobs).
pub fn install_from_env(tool: &str) -> Settings {
    let env = |k: &str| std::env::var(k).ok();
    // Process-wide output conventions, named once here at start (write-once in uverbs).
    uverbs::settings::set_warning_sink(to_stderr);
    let spelling: uverbs::knob::Spelling = if tool == "qperf" { env_spelling } else { perftest_spelling };
    uverbs::knob::set_spelling(spelling);
    clock::choose(clock_source(env));
    Settings { run: run_settings(env), providers: from_vars(env) }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn vars<'a>(t: &'a [(&'a str, &'a str)]) -> impl Fn(&str) -> Option<String> + 'a {
        move |k| t.iter().find(|(n, _)| *n == k).map(|(_, v)| v.to_string())
    }

    #[test]
    fn unset_gives_the_defaults() {
        let p = from_vars(vars(&[]));
        assert_eq!(p, ProviderSettings::default());
        assert_eq!(p.transport, Transport::Write);
    }

    #[test]
    fn each_variable_maps_to_its_knob() {
        let p = from_vars(vars(&[
            ("RPERFTEST_VERBS_TRANSPORT", " IOCTL "),
            ("RPERFTEST_RXE_DOORBELL", "uring-sqpoll"),
            ("MLX5_SHUT_UP_BF", "1"),
            ("MLX5_POST_SEND_PREFER_BF", "0"),
        ]));
        assert_eq!(p.transport, Transport::Ioctl);
        assert_eq!(p.rxe_doorbell, Ok(DoorbellMode::UringSqpoll));
        assert!(!p.mlx5_blueflame && !p.mlx5_prefer_bf);
        // "0" keeps BlueFlame on; an unknown transport is write.
        let p = from_vars(vars(&[("RPERFTEST_VERBS_TRANSPORT", "rdma"), ("MLX5_SHUT_UP_BF", "0")]));
        assert_eq!(p.transport, Transport::Write);
        assert!(p.mlx5_blueflame && p.mlx5_prefer_bf);
    }

    #[test]
    fn perftest_spelling_keeps_the_old_hints() {
        assert_eq!(perftest_spelling(Knob::GidIndex), Some("-x"));
        assert_eq!(perftest_spelling(Knob::WriteTransport), Some("RPERFTEST_VERBS_TRANSPORT=write"));
        assert_eq!(env_spelling(Knob::GidIndex), None);
        // `devinfo -d` with an unknown device: the hint names devinfo's own option, which
        // diag's devinfo tests assume when they install this spelling for the device.
        assert_eq!(perftest_spelling(Knob::Device), Some("-d/--ib-dev"));
    }

    #[test]
    fn run_settings_keep_values_as_found() {
        let t = [
            ("RPERFTEST_PERFTEST_VERSION", "6.06"),
            ("RPERFTEST_OOB_TIMEOUT", "abc"),
            ("RPERFTEST_STALL_TIMEOUT", " 5 "),
            ("RPERFTEST_CLOCK", "monotonic"),
        ];
        let s = run_settings(vars(&t));
        assert_eq!(s.persona.as_deref(), Some("6.06"));
        assert_eq!(s.oob_timeout.as_deref(), Some("abc"));
        assert_eq!(s.stall_timeout.as_deref(), Some(" 5 "));
        assert_eq!(clock_source(vars(&t)), clock::Source::Monotonic);
        assert_eq!(run_settings(vars(&[])), RunSettings::default());
        assert_eq!(clock_source(vars(&[("RPERFTEST_CLOCK", "tsc")])), clock::Source::Tsc);
    }

    #[test]
    fn a_bad_doorbell_names_the_variable() {
        let p = from_vars(vars(&[("RPERFTEST_RXE_DOORBELL", "mmio")]));
        assert_eq!(p.rxe_doorbell, Err("RPERFTEST_RXE_DOORBELL=mmio: expected write, uring or uring-sqpoll".into()));
    }
}
