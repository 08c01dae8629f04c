//! The driver: scan the arguments, apply each option once, then refuse what rperftest lacks and
//! derive what perftest derives.

use bench_core::settings::RunSettings;
use providers::ProviderSettings;

use super::derive::derive;
use super::error::unsupported;
use super::getopt::{self, invalid, ScanError};
use super::options::{apply, arg, dup_key, Opt, TABLE};
use super::state::State;
use super::{conflict, usage, usage629, xrc};
use super::{ErrorKind, ParamError, Params, Persona, Role, TestKind, Tool, ENV_PERSONA};

/// What the command line asks for.
#[derive(Clone, Debug, PartialEq)]
pub enum ParseOutcome {
    Run(Box<Params>),
    /// `-h`: print to stdout as is, exit [`EXIT_HELP`](super::EXIT_HELP).
    Help(String),
    /// `-V`: print to stdout as is, exit [`EXIT_VERSION`](super::EXIT_VERSION).
    Version(String),
}

/// The `-h` text of `persona` for `tool` (`prog` in the "Usage:" lines).
pub fn usage_for(persona: Persona, tool: Tool, prog: &str) -> String {
    match persona {
        Persona::V606 => usage(tool, prog),
        Persona::V629 => usage629(tool, prog),
    }
}

/// The persona a command line asks for, without parsing the rest of it (the tool's entry point
/// needs it to print the right usage text after a parser error); a bad value gives the default.
pub fn persona_hint(args: &[String], env_persona: Option<&str>) -> Persona {
    persona_of(&getopt::scan(&TABLE, args).0, env_persona).unwrap_or_default()
}

/// `--perftest-version` wins over the environment; -h and -V follow it wherever it stands.
fn persona_of(found: &getopt::Scanned<Opt>, env_persona: Option<&str>) -> Result<Persona, ParamError> {
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

/// Parse the arguments that follow argv[0] for `tool`, with nothing set outside the command
/// line (the persona of `--perftest-version`, else the default).
pub fn parse(tool: Tool, args: &[String]) -> Result<ParseOutcome, ParamError> {
    parse_with_env(tool, args, None)
}

/// Parse for a run: the persona of `--perftest-version`, else of `settings.persona`
/// ([`ENV_PERSONA`] as the program read it); the run keeps `settings` and opens its device as
/// `providers` choose.
pub fn parse_run(tool: Tool, args: &[String], settings: &RunSettings, providers: &ProviderSettings) -> Result<ParseOutcome, ParamError> {
    let mut r = parse_with_env(tool, args, settings.persona.as_deref());
    if let Ok(ParseOutcome::Run(p)) = &mut r {
        p.settings = settings.clone();
        p.providers = providers.clone();
    }
    r
}

/// [`parse`] with `env_persona` standing for the value of [`ENV_PERSONA`] (None: unset).
pub fn parse_with_env(tool: Tool, args: &[String], env_persona: Option<&str>) -> Result<ParseOutcome, ParamError> {
    let (found, scan_err) = getopt::scan(&TABLE, args);
    let persona = persona_of(&found, env_persona)?;
    let mut p = Params::defaults(tool);
    p.persona = persona;
    let mut st = State::default();
    let mut seen: Vec<String> = Vec::new();
    for f in &found.options {
        if f.opt != Opt::Help && f.opt != Opt::Version {
            let key = dup_key(f);
            if seen.contains(&key) {
                return Err(ParamError::new(
                    ErrorKind::Duplicate,
                    f.spelling.clone(),
                    format!("Duplicated argument: {key}"),
                ));
            }
            seen.push(key);
        }
        match f.opt {
            Opt::Help => return Ok(ParseOutcome::Help(usage_for(persona, tool, tool.name()))),
            Opt::Version => return Ok(ParseOutcome::Version(persona.version_text())),
            _ => apply(&mut p, &mut st, f)?,
        }
    }
    if let Some(e) = scan_err {
        return Err(match e {
            ScanError::Unknown(o) => {
                let hint = getopt::long_hint(&TABLE, &o);
                ParamError::new(ErrorKind::Usage, o, "Invalid Command or flag (unknown option)")
                    .with_hint(hint)
            }
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

/// Features perftest has and rperftest does not: refused with a clear message.
fn refuse_unsupported(p: &Params, st: &State) -> Result<(), ParamError> {
    if p.reversed && p.kind == TestKind::Lat {
        return Err(unsupported(
            "--reversed",
            "only the BW tools reverse the traffic (the latency tests run both directions already); leave --reversed out",
        ));
    }
    if p.reversed && (p.conn.use_rdma_cm || p.conn.work_rdma_cm) {
        return Err(unsupported(
            "--reversed, -R/-z",
            "reversed traffic over rdma_cm is not supported (perftest 6.06 then connects from the side without a host); leave out -R/-z",
        ));
    }
    // `-c SRD` passes here: whether the device has SRD is decided once it is found
    // (`tool::setup::srd_refusal`).
    if st.use_rss {
        return Err(unsupported("--use_rss", "RSS isn't supported"));
    }
    if let Some(o) = &st.gpu {
        return Err(unsupported(
            o,
            "this accelerator memory option is not supported by rperftest (GPU memory: --use_cuda, --use_cuda_bus_id, --use_cuda_dmabuf, --gpu_touch; docs/gpu.md)",
        ));
    }
    if let Some(e) = super::gpu::refusal(p) {
        return Err(e);
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
