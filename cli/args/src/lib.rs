//! The one place our own commands hand their arguments to clap: help and `--version` go to
//! stdout with exit 0, a usage error goes to stderr with exit 2 (clap's wording names the
//! option). The C-compatible tools (ib_*, qperf, devinfo as ibv_devinfo, ibstat, rping) keep
//! their getopt-style parsers and never come here.
#![forbid(unsafe_code)]

use std::io::Write;

use clap::{ArgMatches, Command};

/// Exit status of a usage error, as most getopt tools and clap itself use.
pub const USAGE_EXIT: u8 = 2;

/// Parse `args` (without the command name) for `cmd`, shown as `name` in help and errors.
/// `Err(code)` means the text is already written and the command should exit with `code`.
pub fn parse(cmd: Command, name: &str, args: &[String], out: &mut dyn Write, err: &mut dyn Write) -> Result<ArgMatches, u8> {
    cmd.try_get_matches_from(std::iter::once(name.to_string()).chain(args.iter().cloned())).map_err(|e| {
        if e.use_stderr() {
            let _ = write!(err, "{e}");
            USAGE_EXIT
        } else {
            let _ = write!(out, "{e}");
            0
        }
    })
}

/// [`parse`] on the process's stdout and stderr.
pub fn parse_std(cmd: Command, name: &str, args: &[String]) -> Result<ArgMatches, u8> {
    parse(cmd, name, args, &mut std::io::stdout(), &mut std::io::stderr())
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::{Arg, ArgAction};

    fn cmd() -> Command {
        Command::new("t").about("a test command").arg(Arg::new("v").short('v').action(ArgAction::SetTrue))
    }

    fn run(args: &[&str]) -> (Result<bool, u8>, String, String) {
        let a: Vec<String> = args.iter().map(|s| s.to_string()).collect();
        let (mut o, mut e) = (Vec::new(), Vec::new());
        let r = parse(cmd(), "rperftest t", &a, &mut o, &mut e).map(|m| m.get_flag("v"));
        (r, String::from_utf8(o).unwrap(), String::from_utf8(e).unwrap())
    }

    #[test]
    fn help_goes_to_stdout_and_exits_0() {
        let (r, o, e) = run(&["--help"]);
        assert_eq!(r.unwrap_err(), 0);
        assert!(o.contains("Usage: rperftest t"), "{o}");
        assert!(e.is_empty());
    }

    #[test]
    fn a_bad_option_goes_to_stderr_and_exits_2() {
        let (r, o, e) = run(&["--bogus"]);
        assert_eq!(r.unwrap_err(), 2);
        assert!(o.is_empty());
        assert!(e.contains("--bogus"), "{e}");
    }

    #[test]
    fn good_arguments_come_back() {
        assert_eq!(run(&["-v"]).0, Ok(true));
        assert_eq!(run(&[]).0, Ok(false));
    }
}
