//! `-W/--report-counters <list>`: the changes of sysfs port counters over a run, as perftest 6.06
//! reports them.
//!
//! perftest's behaviour (perftest_counters.c, 6.06): each name in the comma-separated list is a
//! path relative to `/sys/class/infiniband/<dev>/ports/<port>/` (e.g. `counters/port_xmit_data`,
//! `hw_counters/rcvd_pkts`). Every file is opened and read once before the connection is set up;
//! an error there ends the tool with ` Unable to access performance counters` (exit 1). After each
//! result line the files are read again and one line per counter is printed, `\t<name>=<delta>`
//! (delta = this reading minus the previous one, unsigned and wrapping), then an empty line.
//!
//! The files' text is untrusted input: it is parsed with [`uverbs::discovery::sysfs::parse_dec`]
//! (covered by the `sysfs` fuzz target); text that is not a decimal `u64` is an error, never a
//! panic, where perftest's `strtoll` would read 0 (or a negative number) and print nonsense.

use std::path::{Path, PathBuf};

use uverbs::discovery::sysfs::{self, SysfsRoot};

/// The message perftest prints when a counter cannot be opened or read at the start.
pub const OPEN_FAILED: &str = " Unable to access performance counters";

#[derive(Debug)]
struct Counter {
    name: String,
    path: PathBuf,
    prev: u64,
    last: u64,
}

/// The counters of one run, with their last two readings.
#[derive(Debug)]
pub struct Counters {
    items: Vec<Counter>,
}

/// A counter name must stay inside the port's directory: relative, no `..`, no empty
/// component, no control characters.
pub fn check_name(name: &str) -> Result<(), String> {
    let why = if name.is_empty() {
        Some("an empty name")
    } else if name.starts_with('/') {
        Some("an absolute path")
    } else if name.split('/').any(|c| c.is_empty() || c == "." || c == "..") {
        Some("a path with an empty, `.` or `..` component")
    } else if name.chars().any(char::is_control) {
        Some("a control character")
    } else {
        None
    };
    match why {
        Some(w) => Err(format!("{name:?} is {w}")),
        None => Ok(()),
    }
}

/// One counter file's text: a decimal `u64`, surrounding blanks and the newline allowed.
pub fn parse_value(text: &str) -> Result<u64, String> {
    sysfs::parse_dec(text).map_err(|e| e.to_string())
}

fn read_value(path: &Path) -> Result<u64, String> {
    let text = sysfs::read_attr(path).map_err(|e| e.to_string())?;
    parse_value(&text).map_err(|e| format!("{}: {e}", path.display()))
}

impl Counters {
    /// Open (read once) every counter of `names` under the system's
    /// `/sys/class/infiniband/<dev>/ports/<port>/`.
    pub fn open(dev: &str, port: u8, names: &[String]) -> Result<Counters, String> {
        let base = SysfsRoot::system().port(dev, u32::from(port));
        Counters::open_in(&base, names).map_err(|e| {
            format!(
                "{OPEN_FAILED}: -W/--report-counters: {e} (the names are files under {}/, e.g. counters/port_xmit_data or hw_counters/sent_pkts)",
                base.display()
            )
        })
    }

    /// Open every counter of `names` under the port directory `base` (tests use a temporary
    /// directory).
    pub fn open_in(base: &Path, names: &[String]) -> Result<Counters, String> {
        if names.is_empty() {
            return Err("no counter names given".into());
        }
        let mut items = Vec::with_capacity(names.len());
        for name in names {
            check_name(name)?;
            let path = base.join(name);
            let v = read_value(&path)?;
            items.push(Counter { name: name.clone(), path, prev: v, last: v });
        }
        Ok(Counters { items })
    }

    /// Number of counters.
    pub fn len(&self) -> usize {
        self.items.len()
    }

    pub fn is_empty(&self) -> bool {
        self.items.is_empty()
    }

    /// Read every counter again and format perftest's report: `\t<name>=<delta>\n` per counter
    /// (delta since the previous reading), then `\n`. A counter that cannot be read or parsed
    /// keeps its old reading, gets no line, and is returned as an error message (for stderr).
    pub fn report(&mut self) -> (String, Vec<String>) {
        let mut out = String::new();
        let mut errs = Vec::new();
        for c in &mut self.items {
            match read_value(&c.path) {
                Ok(v) => {
                    c.prev = c.last;
                    c.last = v;
                    out.push_str(&format!("\t{}={}\n", c.name, c.last.wrapping_sub(c.prev)));
                }
                Err(e) => errs.push(format!(" Unable to read performance counter {}: {e}", c.name)),
            }
        }
        out.push('\n');
        (out, errs)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tmpdir(tag: &str) -> PathBuf {
        let d = std::env::temp_dir().join(format!("rperftest-counters-{tag}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        std::fs::create_dir_all(d.join("hw_counters")).unwrap();
        std::fs::create_dir_all(d.join("counters")).unwrap();
        d
    }

    fn names(v: &[&str]) -> Vec<String> {
        v.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn deltas_are_printed_in_perftests_format() {
        let d = tmpdir("fmt");
        std::fs::write(d.join("hw_counters/sent_pkts"), "100\n").unwrap();
        std::fs::write(d.join("counters/port_xmit_data"), "7\n").unwrap();
        let mut c = Counters::open_in(&d, &names(&["hw_counters/sent_pkts", "counters/port_xmit_data"])).unwrap();
        assert_eq!(c.len(), 2);
        std::fs::write(d.join("hw_counters/sent_pkts"), "1100\n").unwrap();
        let (text, errs) = c.report();
        assert!(errs.is_empty());
        assert_eq!(text, "\thw_counters/sent_pkts=1000\n\tcounters/port_xmit_data=0\n\n");
        // The next report is relative to the previous reading (perftest's -a per-size lines).
        std::fs::write(d.join("hw_counters/sent_pkts"), "1105").unwrap();
        let (text, _) = c.report();
        assert_eq!(text, "\thw_counters/sent_pkts=5\n\tcounters/port_xmit_data=0\n\n");
        // A counter that went down wraps as perftest's unsigned subtraction does.
        std::fs::write(d.join("hw_counters/sent_pkts"), "1104\n").unwrap();
        let (text, _) = c.report();
        assert!(text.starts_with(&format!("\thw_counters/sent_pkts={}\n", u64::MAX)), "{text}");
        let _ = std::fs::remove_dir_all(&d);
    }

    #[test]
    fn odd_counter_text_is_an_error_not_a_panic() {
        for bad in ["", "\n", "abc", "-5", "12abc", "1 2", "18446744073709551616", "0x10", "+3", "\u{0}7", "९"] {
            assert!(parse_value(bad).is_err(), "{bad:?} accepted");
        }
        assert_eq!(parse_value(" 42 \n"), Ok(42));
        assert_eq!(parse_value("18446744073709551615\n"), Ok(u64::MAX));
        let d = tmpdir("odd");
        std::fs::write(d.join("hw_counters/x"), "garbage\n").unwrap();
        let e = Counters::open_in(&d, &names(&["hw_counters/x"])).unwrap_err();
        assert!(e.contains("garbage"), "{e}");
        // A file that turns bad after the start: no line, one error, the others still print.
        std::fs::write(d.join("hw_counters/x"), "5\n").unwrap();
        std::fs::write(d.join("hw_counters/y"), "1\n").unwrap();
        let mut c = Counters::open_in(&d, &names(&["hw_counters/x", "hw_counters/y"])).unwrap();
        std::fs::write(d.join("hw_counters/x"), "5x\n").unwrap();
        std::fs::write(d.join("hw_counters/y"), "3\n").unwrap();
        let (text, errs) = c.report();
        assert_eq!(text, "\thw_counters/y=2\n\n");
        assert_eq!(errs.len(), 1);
        assert!(errs[0].contains("hw_counters/x") && !errs[0].contains('\n'), "{errs:?}");
        let _ = std::fs::remove_dir_all(&d);
    }

    #[test]
    fn names_must_stay_inside_the_port_directory() {
        for bad in ["", "/etc/passwd", "../../x", "hw_counters/../../x", "hw_counters//x", "./x", "a\nb"] {
            assert!(check_name(bad).is_err(), "{bad:?} accepted");
        }
        assert!(check_name("hw_counters/sent_pkts").is_ok());
        assert!(check_name("counters/port_xmit_data").is_ok());
        let d = tmpdir("missing");
        let e = Counters::open_in(&d, &names(&["hw_counters/no_such_counter"])).unwrap_err();
        assert!(e.contains("no_such_counter") && !e.contains('\n'), "{e}");
        let _ = std::fs::remove_dir_all(&d);
    }
}
