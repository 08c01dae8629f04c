//! A small `getopt_long`-compatible scanner over perftest's option table ([`super::options`]).
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

use super::options::{Opt, LONG, SHORT};

/// One recognised option occurrence.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Found {
    pub opt: Opt,
    /// How the user wrote it, for messages: `-s` or `--size` (the full long name, even when a
    /// prefix was typed).
    pub spelling: String,
    /// The key for duplicate detection: the short letter if the option has one, else the option
    /// (aliases such as `--source_ip`/`--bind_source_ip` count as one option).
    pub dup_key: String,
    pub arg: Option<String>,
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

pub(crate) struct Scanned {
    pub options: Vec<Found>,
    pub positionals: Vec<String>,
}

fn short_of(opt: Opt) -> Option<char> {
    SHORT.iter().find(|(_, o, _)| *o == opt).map(|(c, _, _)| *c)
}

/// Scan argv (without argv[0]) the way getopt_long does. On an error, the options found before
/// it are returned with it (getopt reports problems in order, so `-h` before a bad option wins).
pub(crate) fn scan(args: &[String]) -> (Scanned, Option<ScanError>) {
    let mut options = Vec::new();
    let mut positionals = Vec::new();
    let err = scan_into(args, &mut options, &mut positionals).err();
    (
        Scanned {
            options,
            positionals,
        },
        err,
    )
}

fn scan_into(
    args: &[String],
    options: &mut Vec<Found>,
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
            let (lname, opt, has_arg) = lookup_long(name)?;
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
            let dup_key = match (short_of(opt), opt) {
                (Some(c), _) => format!("-{c}"),
                (
                    None,
                    Opt::RawLongWithArg
                    | Opt::RawLongFlag
                    | Opt::GpuWithArg
                    | Opt::GpuFlag
                    | Opt::VendorWithArg
                    | Opt::VendorFlag,
                ) => lname.to_string(),
                (None, _) => format!("{opt:?}"),
            };
            options.push(Found {
                opt,
                spelling,
                dup_key,
                arg,
            });
            continue;
        }
        if a.len() > 1 && a.starts_with('-') {
            let chars: Vec<char> = a[1..].chars().collect();
            let mut k = 0;
            while k < chars.len() {
                let c = chars[k];
                k += 1;
                let Some(&(_, opt, has_arg)) = SHORT.iter().find(|(sc, _, _)| *sc == c) else {
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
                options.push(Found {
                    opt,
                    dup_key: spelling.clone(),
                    spelling,
                    arg,
                });
            }
            continue;
        }
        positionals.push(a.clone());
    }
    Ok(())
}

/// For an unknown `--name`: the long option probably meant (`did you mean --size?`), when one
/// is close. Short options get none: one letter is one edit from every other.
pub(crate) fn long_hint(unknown: &str) -> Option<String> {
    let name = unknown.strip_prefix("--")?;
    let mut names: Vec<&str> = LONG.iter().map(|(n, _, _)| *n).collect();
    names.dedup();
    let near = bench_core::suggest::nearest(name, &names, &[]);
    let spelled: Vec<String> = near.iter().map(|n| format!("--{n}")).collect();
    bench_core::suggest::did_you_mean(&spelled.iter().map(String::as_str).collect::<Vec<_>>())
}

/// Long options that only rperftest has.
const OWN_OPTIONS: [Opt; 3] = [Opt::Loopback, Opt::Adopt, Opt::PerftestVersion];

fn lookup_long(name: &str) -> Result<(&'static str, Opt, bool), ScanError> {
    if name.is_empty() {
        return Err(ScanError::Unknown("--".into()));
    }
    if let Some(&(n, o, h)) = LONG.iter().find(|(n, _, _)| *n == name) {
        return Ok((n, o, h));
    }
    let mut cands: Vec<&(&str, Opt, bool)> = LONG
        .iter()
        .filter(|(n, _, _)| n.starts_with(name))
        .collect();
    // rperftest's own options never make a perftest prefix ambiguous (`--perf` stays
    // `--perform_warm_up`, as in perftest, although `--perftest-version` exists).
    if cands.iter().any(|(_, o, _)| !OWN_OPTIONS.contains(o)) {
        cands.retain(|(_, o, _)| !OWN_OPTIONS.contains(o));
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
