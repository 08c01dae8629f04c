//! The options two rperftest sides compare after the version exchange, and `--adopt`, which
//! lets a server take the client's test options instead of refusing to run.

use crate::params::{Params, TestMethod, TestType, Verb};

use super::setup::to_tool;

/// The options two rperftest sides must agree on, as (option, value) in the user's terms: a
/// difference in any of them falsifies the run or makes the two sides' exchanges drift apart.
/// Compared right after the version exchange, before any resource exists.
pub(super) fn option_summary(p: &Params) -> Vec<(&'static str, String)> {
    let on = |b: bool| if b { "on" } else { "off" }.to_string();
    let all = p.test_method == TestMethod::All;
    let dur = p.test_type == TestType::Duration;
    let mut v = vec![
        ("tool", to_tool(p.tool).name().to_string()),
        ("-c", p.connection.as_str().to_string()),
        ("-q", p.num_qps.to_string()),
        ("-a", on(all)),
        ("--run_infinitely", on(p.test_method == TestMethod::Infinitely)),
        ("-b", on(p.duplex)),
        ("-D", if dur { p.duration.to_string() } else { "off".into() }),
        ("-t", p.tx_depth.to_string()),
        ("-m", p.dev.mtu.map_or_else(|| "the port's".to_string(), |m| m.to_string())),
    ];
    if !all {
        v.push(("-s", p.size.to_string()));
    }
    if !dur {
        v.push(("-n", p.iters.to_string()));
    }
    if p.verb == Verb::Atomic {
        v.push(("-A", p.atomic_type.name().to_string()));
    }
    v
}

/// Options `--adopt` takes from the client, with their long spellings (to refuse a server
/// command line that sets them itself).
const ADOPTED: [(&str, &str); 7] =
    [("-s", "--size"), ("-q", "--qp"), ("-n", "--iters"), ("-t", "--tx-depth"), ("-m", "--mtu"), ("-a", "--all"), ("-D", "--duration")];

/// `--adopt`: the server's command line with the client's values of [`ADOPTED`] added, or why
/// not (`Ok(None)`: options other than those differ, which the ordinary lines report).
pub(super) fn adopted_cmdline(p: &Params, theirs: &[(String, String)]) -> Result<Option<Vec<String>>, String> {
    let mine = option_summary(p);
    let differs = |k: &str| {
        let m = mine.iter().find(|(mk, _)| *mk == k).map(|(_, v)| v.as_str());
        let t = theirs.iter().find(|(tk, _)| tk == k).map(|(_, v)| v.as_str());
        m != t
    };
    let fixed = ["tool", "-c", "-b", "--run_infinitely", "-A"];
    if fixed.iter().any(|k| differs(k)) {
        return Ok(None);
    }
    for a in &p.cmdline {
        let given = ADOPTED.iter().find(|(short, long)| {
            (a.starts_with(short) && !a.starts_with("--")) || a == long || a.starts_with(&format!("{long}="))
        });
        if let Some((short, _)) = given {
            return Err(format!(
                "--adopt: the server takes -s, -q, -n, -t, -m, -a and -D from the client; do not give {short} ({a:?}) to the server"
            ));
        }
    }
    let mut args = p.cmdline.clone();
    for (k, v) in theirs {
        match k.as_str() {
            "-a" if v == "on" => args.push("-a".into()),
            "-D" if v != "off" => args.extend(["-D".into(), v.clone()]),
            "-m" if v == "the port's" => {}
            "-s" | "-q" | "-n" | "-t" | "-m" if differs(k) => args.extend([k.clone(), v.clone()]),
            _ => {}
        }
    }
    Ok(Some(args))
}
