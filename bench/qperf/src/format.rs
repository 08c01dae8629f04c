//! qperf's result text: numbers to `precision` significant digits (all integer digits once
//! there are more), thousands separators, units that step by 1000, `KiB (32,768)` sizes, and
//! the aligned `name  =  value unit` block printed after each test.
//!
//! Stock qperf collects the rows of a test and prints them at the end, aligned on the longest
//! name and on the widest value among rows with a unit. A row whose value is not positive is
//! left out unless it belongs to the "always" class.

/// Display switches: `-e`, `-uu`, `-ub`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Units {
    pub precision: usize,
    pub unify_units: bool,
    pub bits_per_sec: bool,
}

impl Default for Units {
    fn default() -> Self {
        Units { precision: 3, unify_units: false, bits_per_sec: false }
    }
}

/// Verbosity levels per class (`-v*` options, 0..=2) and `-D`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Verbosity {
    pub conf: u8,
    pub stat: u8,
    pub time: u8,
    pub used: u8,
    pub debug: bool,
}

/// When a row is shown: always, or from a verbosity level of one class.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Class {
    Always,
    Stat(u8),
    Time(u8),
    Used(u8),
    Debug,
}

impl Verbosity {
    fn shows(&self, class: Class, value: f64) -> bool {
        if class == Class::Always {
            return true;
        }
        // NaN compares false: not shown, like any value that is not positive.
        if value.partial_cmp(&0.0) != Some(std::cmp::Ordering::Greater) {
            return false;
        }
        match class {
            Class::Always => true,
            Class::Stat(l) => self.stat >= l,
            Class::Time(l) => self.time >= l,
            Class::Used(l) => self.used >= l,
            Class::Debug => self.debug,
        }
    }
}

/// `value` with `precision` significant digits, or all its integer digits when it has at
/// least that many; trailing zeros and a trailing point removed; commas unless `-uu`.
pub fn place_val(value: f64, units: &Units) -> String {
    let whole = format!("{value:.0}");
    let digits = whole.trim_start_matches('-').bytes().take_while(u8::is_ascii_digit).count();
    let text = if digits < units.precision {
        let decimals = units.precision - digits;
        let s = format!("{value:.decimals$}");
        let t = s.trim_end_matches('0');
        t.strip_suffix('.').unwrap_or(t).to_string()
    } else {
        whole
    };
    if units.unify_units {
        text
    } else {
        commify(&text)
    }
}

/// Commas every three digits in the integer part of the number that ends the text.
pub fn commify(s: &str) -> String {
    let b = s.as_bytes();
    let mut end = b.len();
    let mut start = end;
    while start > 0 && b[start - 1].is_ascii_digit() {
        start -= 1;
    }
    if start > 0 && b[start - 1] == b'.' {
        end = start - 1;
        start = end;
        while start > 0 && b[start - 1].is_ascii_digit() {
            start -= 1;
        }
    }
    let int = &s[start..end];
    if int.len() <= 3 {
        return s.to_string();
    }
    let mut out = String::with_capacity(s.len() + int.len() / 3);
    out.push_str(&s[..start]);
    for (i, c) in int.chars().enumerate() {
        if i > 0 && (int.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out.push_str(&s[end..]);
    out
}

/// One output row.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Row {
    pub name: String,
    pub data: String,
    /// None for strings (conf): no alignment, no unit.
    pub unit: Option<&'static str>,
    /// The exact value in parentheses after a binary size.
    pub altn: Option<String>,
}

/// Divides by 1000 while the value is at least 1000 and a larger unit is left.
fn scale(mut value: f64, table: &[&'static str], units: &Units) -> (f64, &'static str) {
    let mut n = 0;
    if !units.unify_units {
        while value >= 1000.0 && n + 1 < table.len() {
            value /= 1000.0;
            n += 1;
        }
    }
    (value, table[n])
}

/// The rows of one test, in the order they are placed.
#[derive(Clone, Debug)]
pub struct Table {
    pub units: Units,
    pub verbosity: Verbosity,
    pub rows: Vec<Row>,
}

impl Table {
    pub fn new(units: Units, verbosity: Verbosity) -> Self {
        Table { units, verbosity, rows: Vec::new() }
    }

    fn val(&mut self, name: String, unit: &'static str, value: f64) {
        let data = place_val(value, &self.units);
        self.rows.push(Row { name, data, unit: Some(unit), altn: None });
    }

    /// A time given in seconds: ns, us, ms, sec.
    pub fn time(&mut self, class: Class, name: &str, secs: f64) {
        let v = secs * 1e9;
        if self.verbosity.shows(class, v) {
            let (v, u) = scale(v, &["ns", "us", "ms", "sec"], &self.units);
            self.val(name.to_string(), u, v);
        }
    }

    /// Bytes per second, or bits with `-ub`.
    pub fn band(&mut self, class: Class, name: &str, bytes_per_sec: f64) {
        if !self.verbosity.shows(class, bytes_per_sec) {
            return;
        }
        let (v, table): (f64, &[&'static str]) = if self.units.bits_per_sec {
            (bytes_per_sec * 8.0, &["bits/sec", "Kb/sec", "Mb/sec", "Gb/sec", "Tb/sec"])
        } else {
            (bytes_per_sec, &["bytes/sec", "KB/sec", "MB/sec", "GB/sec", "TB/sec"])
        };
        let (v, u) = scale(v, table, &self.units);
        self.val(name.to_string(), u, v);
    }

    pub fn rate(&mut self, class: Class, name: &str, per_sec: f64) {
        if self.verbosity.shows(class, per_sec) {
            let (v, u) = scale(per_sec, &["/sec", "K/sec", "M/sec", "G/sec", "T/sec"], &self.units);
            self.val(name.to_string(), u, v);
        }
    }

    /// CPU seconds per 10^9 bytes.
    pub fn cost(&mut self, class: Class, name: &str, secs_per_gb: f64) {
        let v = secs_per_gb * 1e9;
        if self.verbosity.shows(class, v) {
            let (v, u) = scale(v, &["ns/GB", "us/GB", "ms/GB", "sec/GB"], &self.units);
            self.val(name.to_string(), u, v);
        }
    }

    /// A fraction of one CPU, shown as a percentage, never scaled.
    pub fn cpus(&mut self, class: Class, name: &str, fraction: f64) {
        let v = fraction * 100.0;
        if self.verbosity.shows(class, v) {
            self.val(name.to_string(), "% cpus", v);
        }
    }

    /// A count: no unit below a million, then thousand, million, ….
    pub fn long(&mut self, class: Class, name: &str, value: u64) {
        let v = value as f64;
        if !self.verbosity.shows(class, v) {
            return;
        }
        let table = ["", "thousand", "million", "billion", "trillion"];
        let (v, u) = if v >= 1e6 { scale(v, &table, &self.units) } else { (v, "") };
        self.val(name.to_string(), u, v);
    }

    /// A size in bytes: an exact multiple of a power of 1024 as KiB/MiB/GiB/TiB with the
    /// exact byte count after it, anything else in decimal units.
    pub fn size(&mut self, class: Class, name: &str, value: u64) {
        let v = value as f64;
        if !self.verbosity.shows(class, v) {
            return;
        }
        if !self.units.unify_units {
            if let Some((n, unit)) = nice_1024(value) {
                self.rows.push(Row {
                    name: name.to_string(),
                    data: commify(&n.to_string()),
                    unit: Some(unit),
                    altn: Some(commify(&value.to_string())),
                });
                return;
            }
        }
        let (v, u) = scale(v, &["bytes", "KB", "MB", "GB", "TB"], &self.units);
        self.val(name.to_string(), u, v);
    }

    /// A string row (conf, ids): shown when not empty, or always.
    pub fn strn(&mut self, class: Class, name: &str, value: &str) {
        if self.verbosity.shows(class, if value.is_empty() { 0.0 } else { 1.0 }) {
            self.rows.push(Row { name: name.to_string(), data: value.to_string(), unit: None, altn: None });
        }
    }

    /// The block as stock qperf prints it.
    pub fn render(&self) -> String {
        let name_len = self.rows.iter().map(|r| r.name.len()).max().unwrap_or(0);
        let data_len = self.rows.iter().filter(|r| r.unit.is_some()).map(|r| r.data.len()).max().unwrap_or(0);
        let mut out = String::new();
        for r in &self.rows {
            out.push_str("    ");
            out.push_str(&format!("{:<name_len$}", r.name));
            match r.unit {
                Some(u) => out.push_str(&format!("  =  {:>data_len$} {u}", r.data)),
                None => out.push_str(&format!("  =  {}", r.data)),
            }
            if let Some(a) = &r.altn {
                out.push_str(&format!(" ({a})"));
            }
            out.push('\n');
        }
        out
    }
}

/// `value` as (n, unit) if it is a whole number of KiB, MiB, GiB or TiB (the largest that is
/// exact), else None.
fn nice_1024(value: u64) -> Option<(u64, &'static str)> {
    if value < 1024 || !value.is_multiple_of(1024) {
        return None;
    }
    let table = ["KiB", "MiB", "GiB", "TiB"];
    let mut v = value / 1024;
    let mut n = 0;
    while v >= 1024 && n + 1 < table.len() {
        if !v.is_multiple_of(1024) {
            // Stock qperf gives up here rather than stopping at the last exact unit.
            return None;
        }
        v /= 1024;
        n += 1;
    }
    Some((v, table[n]))
}

#[cfg(test)]
mod tests {
    use super::*;

    const DEF: Units = Units { precision: 3, unify_units: false, bits_per_sec: false };
    const UU: Units = Units { precision: 3, unify_units: true, bits_per_sec: false };
    const ALL: Verbosity = Verbosity { conf: 2, stat: 2, time: 2, used: 2, debug: true };

    fn one(units: Units, f: impl FnOnce(&mut Table)) -> String {
        let mut t = Table::new(units, ALL);
        f(&mut t);
        assert_eq!(t.rows.len(), 1, "one row expected");
        let r = &t.rows[0];
        let mut s = r.data.clone();
        if let Some(u) = r.unit {
            s = format!("{s} {u}");
        }
        if let Some(a) = &r.altn {
            s = format!("{s} ({a})");
        }
        s
    }

    /// (value, precision, flags) → text, from stock qperf 0.4.11 runs (fact sheet §6.5) and
    /// the rules of §6.2/§6.4.
    #[test]
    fn observed_values() {
        let a = Class::Always;
        let ub = Units { bits_per_sec: true, ..DEF };
        let cases: Vec<(String, &str)> = vec![
            (one(DEF, |t| t.time(a, "latency", 2.44e-6)), "2.44 us"),
            (one(DEF, |t| t.time(a, "latency", 10.66e-6)), "10.7 us"),
            (one(DEF, |t| t.time(a, "latency", 237.2e-6)), "237 us"),
            (one(DEF, |t| t.time(a, "time", 1.0)), "1 sec"),
            (one(DEF, |t| t.time(a, "timeout", 5.0)), "5 sec"),
            (one(DEF, |t| t.rate(a, "msg_rate", 412_345.0)), "412 K/sec"),
            (one(ub, |t| t.band(a, "bw", 23.1e9 / 8.0)), "23.1 Gb/sec"),
            (one(DEF, |t| t.band(a, "send_bw", 13.2e9)), "13.2 GB/sec"),
            (one(DEF, |t| t.band(a, "recv_bw", 987.4e6)), "987 MB/sec"),
            (one(DEF, |t| t.cost(a, "send_cost", 0.152)), "152 ms/GB"),
            (one(DEF, |t| t.cpus(a, "loc_cpus_used", 1.82)), "182 % cpus"),
            (one(DEF, |t| t.cpus(a, "loc_cpus_used", 1.93)), "193 % cpus"),
            (one(DEF, |t| t.long(a, "loc_send_msgs", 206_932)), "206,932 "),
            (one(DEF, |t| t.long(a, "send_msgs", 403_907)), "403,907 "),
            (one(DEF, |t| t.long(a, "msgs", 2_500_000)), "2.5 million"),
            (one(DEF, |t| t.size(a, "msg_size", 1)), "1 bytes"),
            (one(DEF, |t| t.size(a, "msg_size", 32768)), "32 KiB (32,768)"),
            (one(DEF, |t| t.size(a, "msg_size", 1 << 20)), "1 MiB (1,048,576)"),
            (one(DEF, |t| t.size(a, "msg_size", 1000)), "1 KB"),
            (one(DEF, |t| t.size(a, "bytes", 1_360_000_000_000)), "1.36 TB"),
            (one(DEF, |t| t.size(a, "bytes", 1_360_123 * 1_000_000_000)), "1,360 TB"),
            // 1025 KiB is not a whole MiB: stock qperf then falls back to decimal units.
            (one(DEF, |t| t.size(a, "odd", 1024 * 1025)), "1.05 MB"),
            (one(DEF, |t| t.size(a, "odd", 3 << 30)), "3 GiB (3,221,225,472)"),
            (one(UU, |t| t.band(a, "bw", 2_964_520_960.0)), "2964520960 bytes/sec"),
            (one(UU, |t| t.rate(a, "msg_rate", 45_235.0)), "45235 /sec"),
            (one(UU, |t| t.time(a, "time", 1.0)), "1000000000 ns"),
            (one(UU, |t| t.size(a, "msg_size", 32768)), "32768 bytes"),
            (one(UU, |t| t.long(a, "msgs", 2_500_000)), "2500000 "),
            (one(Units { precision: 5, ..DEF }, |t| t.time(a, "latency", 2.44123e-6)), "2.4412 us"),
            (one(Units { precision: 1, ..DEF }, |t| t.time(a, "latency", 2.44e-6)), "2 us"),
            (one(Units { precision: 0, ..DEF }, |t| t.time(a, "latency", 2.64e-6)), "3 us"),
            (one(DEF, |t| t.time(a, "latency", 0.0)), "0 ns"),
            (one(DEF, |t| t.time(a, "latency", 9.9996e-6)), "10 us"),
        ];
        for (got, want) in cases {
            assert_eq!(got, want);
        }
    }

    #[test]
    fn commify_integer_part_only() {
        assert_eq!(commify("1234567"), "1,234,567");
        assert_eq!(commify("1234.56"), "1,234.56");
        assert_eq!(commify("123"), "123");
        assert_eq!(commify("-1234"), "-1,234");
        assert_eq!(commify(""), "");
        assert_eq!(commify("inf"), "inf");
    }

    #[test]
    fn non_positive_rows_hidden_unless_always() {
        let mut t = Table::new(DEF, ALL);
        t.long(Class::Stat(2), "loc_send_errors", 0);
        t.cpus(Class::Time(1), "loc_cpus_used", f64::NAN);
        t.strn(Class::Used(1), "id", "");
        assert!(t.rows.is_empty());
        let mut t = Table::new(DEF, Verbosity::default());
        t.rate(Class::Stat(1), "msg_rate", 5.0);
        t.time(Class::Always, "latency", 0.0);
        assert_eq!(t.rows.len(), 1);
    }

    /// The -vv tcp_lat rows of fact sheet §6.5 (a subset of that block, so the name column is
    /// our own longest name here): value column right-aligned, empty unit keeps its space.
    #[test]
    fn block_alignment() {
        let mut t = Table::new(DEF, ALL);
        t.time(Class::Always, "latency", 2.44e-6);
        t.rate(Class::Stat(1), "msg_rate", 412e3);
        t.size(Class::Used(1), "msg_size", 1);
        t.time(Class::Used(1), "time", 1.0);
        t.time(Class::Used(1), "timeout", 5.0);
        t.cpus(Class::Time(1), "loc_cpus_used", 1.82);
        t.long(Class::Stat(2), "loc_send_msgs", 206_932);
        assert_eq!(
            t.render(),
            "    latency        =     2.44 us\n\
             \x20   msg_rate       =      412 K/sec\n\
             \x20   msg_size       =        1 bytes\n\
             \x20   time           =        1 sec\n\
             \x20   timeout        =        5 sec\n\
             \x20   loc_cpus_used  =      182 % cpus\n\
             \x20   loc_send_msgs  =  206,932 \n"
        );
    }

    #[test]
    fn conf_rows_are_not_aligned_on_values() {
        let mut t = Table::new(DEF, Verbosity::default());
        t.strn(Class::Always, "loc_node", "vm");
        t.strn(Class::Always, "loc_qperf", "0.4.11");
        t.size(Class::Always, "msg_size", 32768);
        assert_eq!(
            t.render(),
            "    loc_node   =  vm\n    loc_qperf  =  0.4.11\n    msg_size   =  32 KiB (32,768)\n"
        );
    }
}
