//! The `conf` test's strings: node name, CPU description, OS and qperf version, built the
//! way stock qperf builds them so both sides of a `conf` run read alike.

use super::wire::{Conf, FixedStr, VERSION_TEXT};

/// Case-insensitive "starts with".
fn starts_nocase(s: &str, prefix: &str) -> bool {
    s.len() >= prefix.len() && s.as_bytes()[..prefix.len()].eq_ignore_ascii_case(prefix.as_bytes())
}

/// The text after the first ':' and the spaces after it.
fn after_colon(s: &str) -> Option<&str> {
    s.split_once(':').map(|(_, v)| v.trim_start_matches(' '))
}

/// "N Cores: " (left out for one CPU) + the model name with "(R)", "(TM)", "CPU " and
/// "Processor " removed and doubled spaces collapsed + " x.yGHz" (or " NMHz") from "cpu MHz"
/// unless the model already ends in "Hz"; "Mixed CPUs" when models or speeds differ.
pub fn cpu_string(cpuinfo: &str) -> String {
    let (mut cpus, mut mixed) = (0u32, false);
    let (mut model, mut mhz): (Option<&str>, Option<&str>) = (None, None);
    for line in cpuinfo.lines() {
        if starts_nocase(line, "model name") {
            cpus += 1;
            match model {
                None => model = Some(line),
                Some(m) if m != line => mixed = true,
                _ => {}
            }
        } else if starts_nocase(line, "cpu MHz") {
            match mhz {
                None => mhz = Some(line),
                Some(m) if m != line => mixed = true,
                _ => {}
            }
        }
    }
    let name = if mixed {
        "Mixed CPUs".to_string()
    } else {
        let Some(q) = model.and_then(after_colon) else { return String::new() };
        clean_model(q)
    };
    let mut speed = String::new();
    if !(mixed || name.len() >= 3 && name.ends_with("Hz")) {
        if let Some(v) = mhz.and_then(after_colon) {
            let digits: String = v.trim_start().chars().take_while(char::is_ascii_digit).collect();
            let freq: i64 = digits.parse().unwrap_or(0);
            speed = if freq < 1000 { format!(" {freq}MHz") } else { format!(" {:.1}GHz", freq as f64 / 1000.0) };
        }
    }
    let count = if cpus == 1 { String::new() } else { format!("{cpus} Cores: ") };
    format!("{count}{name}{speed}")
}

fn clean_model(q: &str) -> String {
    let mut out = String::new();
    let mut rest = q;
    while !rest.is_empty() {
        if starts_nocase(rest, "(r)") {
            rest = &rest[3..];
        } else if starts_nocase(rest, "(tm)") {
            rest = &rest[4..];
        }
        if starts_nocase(rest, "cpu ") {
            rest = &rest[4..];
        }
        if starts_nocase(rest, "processor ") {
            rest = &rest[10..];
        } else if rest.starts_with("  ") {
            rest = &rest[1..];
        } else if let Some(c) = rest.chars().next() {
            out.push(c);
            rest = &rest[c.len_utf8()..];
        }
    }
    out
}

pub fn local_conf() -> Conf {
    let (node, os) = match nix::sys::utsname::uname() {
        Ok(u) => (
            u.nodename().to_string_lossy().into_owned(),
            format!("{} {}", u.sysname().to_string_lossy(), u.release().to_string_lossy()),
        ),
        Err(_) => (String::new(), String::new()),
    };
    let cpu = std::fs::read_to_string("/proc/cpuinfo").map(|t| cpu_string(&t)).unwrap_or_default();
    Conf { node: FixedStr::new(&node), cpu: FixedStr::new(&cpu), os: FixedStr::new(&os), qperf: FixedStr::new(VERSION_TEXT) }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn observed_vm_cpu() {
        let t = "processor\t: 0\nmodel name\t: Intel Xeon Processor\ncpu MHz\t\t: 2599.998\n\
                 processor\t: 1\nmodel name\t: Intel Xeon Processor\ncpu MHz\t\t: 2599.998\n";
        assert_eq!(cpu_string(t), "2 Cores: Intel Xeon Processor 2.6GHz");
    }

    #[test]
    fn trademarks_and_hz_suffix() {
        let t = "model name\t: Intel(R) Core(TM) i7-8650U CPU @ 1.90GHz\ncpu MHz\t\t: 800.000\n";
        assert_eq!(cpu_string(t), "Intel Core i7-8650U @ 1.90GHz");
        let t = "model name\t: AMD  EPYC 7B13 64-Core Processor\ncpu MHz\t\t: 800.000\n";
        assert_eq!(cpu_string(t), "AMD EPYC 7B13 64-Core Processor 800MHz");
    }

    #[test]
    fn mixed_and_missing() {
        assert_eq!(cpu_string("model name : a\nmodel name : b\n"), "2 Cores: Mixed CPUs");
        assert_eq!(cpu_string("processor : 0\n"), "");
    }
}
