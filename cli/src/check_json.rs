//! `rperftest check-json FILE...`: exit 0 when every file parses as JSON, else 1 with the
//! parser's position. The VM cases use it: the guest has neither python nor jq.

use std::io::Write;

use clap::{Arg, ArgAction, Command};

fn cli() -> Command {
    Command::new("rperftest check-json")
        .about("Checks that each file is valid JSON (exit 1 naming the first error's position)")
        .arg(Arg::new("files").value_name("FILE").required(true).action(ArgAction::Append).help("files to check"))
}

/// One line per file on `out` (valid) or `err` (unreadable or invalid); the exit status.
pub fn check_files(files: &[String], out: &mut dyn Write, err: &mut dyn Write) -> u8 {
    let mut rc = 0;
    for f in files {
        let verdict = std::fs::read_to_string(f)
            .map_err(|e| e.to_string())
            .and_then(|s| serde_json::from_str::<serde_json::Value>(&s).map(|_| ()).map_err(|e| format!("invalid JSON: {e}")));
        match verdict {
            Ok(()) => {
                let _ = writeln!(out, "{f}: valid JSON");
            }
            Err(e) => {
                let _ = writeln!(err, "{f}: {e}");
                rc = 1;
            }
        }
    }
    rc
}

pub fn run(args: &[String]) -> u8 {
    match cli_args::parse_std(cli(), "rperftest check-json", args) {
        Ok(m) => {
            let files: Vec<String> = m.get_many::<String>("files").map(|v| v.cloned().collect()).unwrap_or_default();
            check_files(&files, &mut std::io::stdout(), &mut std::io::stderr())
        }
        Err(code) => code,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_each_file_and_fails_on_any_bad_one() {
        let dir = std::env::temp_dir().join(format!("check-json-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let good = dir.join("good.json");
        let bad = dir.join("bad.json");
        std::fs::write(&good, "{\"a\": [1, 2]}").unwrap();
        std::fs::write(&bad, "{\"a\": [1, 2}").unwrap();
        let name = |p: &std::path::Path| p.to_string_lossy().into_owned();
        let (mut o, mut e) = (Vec::new(), Vec::new());
        assert_eq!(check_files(&[name(&good)], &mut o, &mut e), 0);
        assert_eq!(String::from_utf8_lossy(&o), format!("{}: valid JSON\n", name(&good)));
        let (mut o, mut e) = (Vec::new(), Vec::new());
        let missing = dir.join("missing.json");
        assert_eq!(check_files(&[name(&good), name(&bad), name(&missing)], &mut o, &mut e), 1);
        let e = String::from_utf8_lossy(&e);
        assert!(e.contains(&format!("{}: invalid JSON: ", name(&bad))) && e.contains("column"), "{e}");
        assert!(e.contains(&format!("{}: ", name(&missing))), "{e}");
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
