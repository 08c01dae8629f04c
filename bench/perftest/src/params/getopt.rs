//! A small `getopt_long`-compatible scanner. Like getopt_long, which is handed its short-option
//! string and `struct option` array, it is handed the option table as a value ([`Table`], generic
//! over the option id): perftest's table and what each option does live in `options`, which
//! calls this module, never the other way round.
//!
//! Conventions reproduced from GNU getopt_long as perftest calls it (no leading `+`/`-`/`:` in the
//! short-option string, POSIXLY_CORRECT unset):
//! * argv is permuted: options may come after the positional host name;
//! * `--` ends option processing; a lone `-` is a positional;
//! * short options cluster (`-bN`); an option that takes an argument consumes the rest of its
//!   cluster (`-s1024`) or else the next word (`-s 1024`), even if that word starts with `-`;
//! * long options take `--name=value` or `--name value`; unambiguous prefixes are accepted, and a
//!   prefix matching several spellings of the *same* option is not ambiguous;
//! * `--flag=value` for a flag is an error.

use super::error::{ErrorKind, ParamError};

/// The options to scan for: each entry is (spelling, the option's id, whether it takes an
/// argument); several spellings may share one id (aliases, `--size` and `-s`).
pub(crate) struct Table<O: 'static> {
    /// The short options, without the `-`.
    pub short: &'static [(char, O, bool)],
    /// The long options, without the `--`; an exact name wins over a longer name it prefixes.
    pub long: &'static [(&'static str, O, bool)],
    /// Options whose long names step aside for a prefix: when a prefix matches these and others,
    /// it means the others (options added to a table later do not make an old abbreviation
    /// ambiguous).
    pub prefix_yields: &'static [O],
}

/// One recognised option occurrence.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Found<O> {
    pub opt: O,
    /// How the user wrote it, for messages: `-s` or `--size` (the full long name, even when a
    /// prefix was typed).
    pub spelling: String,
    pub arg: Option<String>,
}

/// A value the option `f` does not take: the error names the option as the user wrote it.
pub(crate) fn invalid<O>(f: &Found<O>, msg: String) -> ParamError {
    ParamError::new(ErrorKind::InvalidValue, f.spelling.clone(), msg)
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum ScanError {
    /// `-G`, `--bogus`
    Unknown(String),
    /// `--re` matches several options
    Ambiguous(String, Vec<String>),
    /// `-s` at the end of argv
    MissingArgument(String),
    /// `--all=3`
    UnexpectedArgument(String),
}

pub(crate) struct Scanned<O> {
    pub options: Vec<Found<O>>,
    pub positionals: Vec<String>,
}

/// Scan argv (without argv[0]) the way getopt_long does. On an error, the options found before
/// it are returned with it (getopt reports problems in order, so `-h` before a bad option wins).
pub(crate) fn scan<O: Copy + PartialEq>(
    table: &Table<O>,
    args: &[String],
) -> (Scanned<O>, Option<ScanError>) {
    let mut options = Vec::new();
    let mut positionals = Vec::new();
    let err = scan_into(table, args, &mut options, &mut positionals).err();
    (
        Scanned {
            options,
            positionals,
        },
        err,
    )
}

fn scan_into<O: Copy + PartialEq>(
    table: &Table<O>,
    args: &[String],
    options: &mut Vec<Found<O>>,
    positionals: &mut Vec<String>,
) -> Result<(), ScanError> {
    let mut i = 0;
    while i < args.len() {
        let a = &args[i];
        i += 1;
        if a == "--" {
            positionals.extend(args[i..].iter().cloned());
            break;
        }
        if let Some(body) = a.strip_prefix("--") {
            let (name, inline) = match body.find('=') {
                Some(eq) => (&body[..eq], Some(body[eq + 1..].to_string())),
                None => (body, None),
            };
            let (lname, opt, has_arg) = lookup_long(table, name)?;
            let spelling = format!("--{lname}");
            let arg = if has_arg {
                match inline {
                    Some(v) => Some(v),
                    None => {
                        if i < args.len() {
                            i += 1;
                            Some(args[i - 1].clone())
                        } else {
                            return Err(ScanError::MissingArgument(spelling));
                        }
                    }
                }
            } else {
                if inline.is_some() {
                    return Err(ScanError::UnexpectedArgument(spelling));
                }
                None
            };
            options.push(Found { opt, spelling, arg });
            continue;
        }
        if a.len() > 1 && a.starts_with('-') {
            let chars: Vec<char> = a[1..].chars().collect();
            let mut k = 0;
            while k < chars.len() {
                let c = chars[k];
                k += 1;
                let Some(&(_, opt, has_arg)) = table.short.iter().find(|(sc, _, _)| *sc == c)
                else {
                    return Err(ScanError::Unknown(format!("-{c}")));
                };
                let spelling = format!("-{c}");
                let arg = if has_arg {
                    if k < chars.len() {
                        let rest: String = chars[k..].iter().collect();
                        k = chars.len();
                        Some(rest)
                    } else if i < args.len() {
                        i += 1;
                        Some(args[i - 1].clone())
                    } else {
                        return Err(ScanError::MissingArgument(spelling));
                    }
                } else {
                    None
                };
                options.push(Found { opt, spelling, arg });
            }
            continue;
        }
        positionals.push(a.clone());
    }
    Ok(())
}

/// For an unknown `--name`: the long option probably meant (`did you mean --size?`), when one
/// is close. Short options get none: one letter is one edit from every other.
pub(crate) fn long_hint<O>(table: &Table<O>, unknown: &str) -> Option<String> {
    let name = unknown.strip_prefix("--")?;
    let mut names: Vec<&str> = table.long.iter().map(|(n, _, _)| *n).collect();
    names.dedup();
    let near = bench_core::suggest::nearest(name, &names, &[]);
    let spelled: Vec<String> = near.iter().map(|n| format!("--{n}")).collect();
    bench_core::suggest::did_you_mean(&spelled.iter().map(String::as_str).collect::<Vec<_>>())
}

fn lookup_long<O: Copy + PartialEq>(
    table: &Table<O>,
    name: &str,
) -> Result<(&'static str, O, bool), ScanError> {
    if name.is_empty() {
        return Err(ScanError::Unknown("--".into()));
    }
    if let Some(&(n, o, h)) = table.long.iter().find(|(n, _, _)| *n == name) {
        return Ok((n, o, h));
    }
    let mut cands: Vec<&(&str, O, bool)> = table
        .long
        .iter()
        .filter(|(n, _, _)| n.starts_with(name))
        .collect();
    if cands
        .iter()
        .any(|(_, o, _)| !table.prefix_yields.contains(o))
    {
        cands.retain(|(_, o, _)| !table.prefix_yields.contains(o));
    }
    match cands.first() {
        None => Err(ScanError::Unknown(format!("--{name}"))),
        Some(&&(n, o, h)) => {
            if cands.iter().all(|(_, o2, h2)| *o2 == o && *h2 == h) {
                Ok((n, o, h))
            } else {
                Err(ScanError::Ambiguous(
                    format!("--{name}"),
                    cands.iter().map(|(n, _, _)| format!("--{n}")).collect(),
                ))
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A table of its own: the scanner knows nothing of perftest's options.
    #[derive(Clone, Copy, Debug, PartialEq, Eq)]
    enum Toy {
        Size,
        All,
        Perform,
        PerfVersion,
        Report,
        Reply,
    }

    const TOY: Table<Toy> = Table {
        short: &[('s', Toy::Size, true), ('a', Toy::All, false)],
        long: &[
            ("size", Toy::Size, true),
            ("all", Toy::All, false),
            ("perform", Toy::Perform, false),
            ("perf-version", Toy::PerfVersion, true),
            ("report", Toy::Report, false),
            ("reply", Toy::Reply, true),
        ],
        prefix_yields: &[Toy::PerfVersion],
    };

    fn args(a: &[&str]) -> Vec<String> {
        a.iter().map(|s| s.to_string()).collect()
    }

    fn found(opt: Toy, spelling: &str, arg: Option<&str>) -> Found<Toy> {
        Found {
            opt,
            spelling: spelling.into(),
            arg: arg.map(str::to_string),
        }
    }

    #[test]
    fn scans_a_table_it_is_handed() {
        let (s, err) = scan(
            &TOY,
            &args(&["-as64", "host", "--si=8", "--perf", "--", "-a"]),
        );
        assert_eq!(err, None);
        assert_eq!(
            s.options,
            vec![
                found(Toy::All, "-a", None),
                found(Toy::Size, "-s", Some("64")),
                found(Toy::Size, "--size", Some("8")),
                // `--perf` also prefixes `--perf-version`, which yields.
                found(Toy::Perform, "--perform", None),
            ]
        );
        assert_eq!(s.positionals, args(&["host", "-a"]));
    }

    #[test]
    fn reports_the_first_problem_with_what_came_before() {
        let (s, err) = scan(&TOY, &args(&["-a", "--rep", "-s"]));
        assert_eq!(s.options, vec![found(Toy::All, "-a", None)]);
        assert_eq!(
            err,
            Some(ScanError::Ambiguous(
                "--rep".into(),
                args(&["--report", "--reply"])
            ))
        );
        assert_eq!(
            scan(&TOY, &args(&["-s"])).1,
            Some(ScanError::MissingArgument("-s".into()))
        );
        assert_eq!(
            scan(&TOY, &args(&["--all=1"])).1,
            Some(ScanError::UnexpectedArgument("--all".into()))
        );
        assert_eq!(
            scan(&TOY, &args(&["-x"])).1,
            Some(ScanError::Unknown("-x".into()))
        );
        assert_eq!(
            scan(&TOY, &args(&["--perf-v", "6"])).0.options,
            vec![found(Toy::PerfVersion, "--perf-version", Some("6"))]
        );
    }

    #[test]
    fn invalid_names_the_option_as_written() {
        let e = invalid(&found(Toy::Size, "--size", Some("x")), "bad size".into());
        assert_eq!(
            (e.kind, e.option.as_str(), e.message.as_str()),
            (ErrorKind::InvalidValue, "--size", "bad size")
        );
    }
}
