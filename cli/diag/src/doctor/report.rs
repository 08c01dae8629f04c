//! One line per check: `ok`, `warn`, `FAIL` or `n/a`, what was found, and for a problem the
//! command that fixes it; the same as JSON.

use std::fmt::Write as _;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Level {
    Ok,
    /// Nothing to check on this host (rxe has no PCIe link, a VM has no cpufreq).
    Na,
    Warn,
    Fail,
}

impl Level {
    pub fn word(self) -> &'static str {
        match self {
            Level::Ok => "ok",
            Level::Na => "n/a",
            Level::Warn => "warn",
            Level::Fail => "FAIL",
        }
    }
}

/// One check's result.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Check {
    /// Short name: `memlock`, `rxe0/1 state`, `peer RC WRITE`.
    pub name: String,
    pub level: Level,
    /// What was found (and, for a problem, what is wrong).
    pub detail: String,
    /// The command (or step) that fixes it.
    pub fix: Option<String>,
}

impl Check {
    pub fn new(name: impl Into<String>, level: Level, detail: impl Into<String>) -> Check {
        Check { name: name.into(), level, detail: detail.into(), fix: None }
    }
    pub fn ok(name: impl Into<String>, detail: impl Into<String>) -> Check {
        Check::new(name, Level::Ok, detail)
    }
    pub fn na(name: impl Into<String>, detail: impl Into<String>) -> Check {
        Check::new(name, Level::Na, detail)
    }
    pub fn warn(name: impl Into<String>, detail: impl Into<String>, fix: impl Into<String>) -> Check {
        Check::new(name, Level::Warn, detail).with_fix(fix)
    }
    pub fn fail(name: impl Into<String>, detail: impl Into<String>, fix: impl Into<String>) -> Check {
        Check::new(name, Level::Fail, detail).with_fix(fix)
    }
    pub fn with_fix(mut self, fix: impl Into<String>) -> Check {
        let f: String = fix.into();
        self.fix = if f.is_empty() { None } else { Some(f) };
        self
    }
    /// The text line: `FAIL  memlock: ...; fix: ulimit -l unlimited`. Control characters
    /// (from sysfs text or a peer's message) are escaped so a check is always one line.
    pub fn line(&self) -> String {
        let mut s = format!("{:<5} {}: {}", self.level.word(), self.name, self.detail);
        if let Some(f) = &self.fix {
            let _ = write!(s, "; fix: {f}");
        }
        one_line(&s)
    }
    pub fn json(&self) -> serde_json::Value {
        serde_json::json!({
            "check": self.name,
            "status": self.level.word(),
            "detail": self.detail,
            "fix": self.fix,
        })
    }
}

/// `s` with control characters escaped.
pub fn one_line(s: &str) -> String {
    s.chars()
        .map(|c| if c.is_control() { c.escape_default().to_string() } else { c.to_string() })
        .collect()
}

/// Exit status: 0 when nothing FAILed, 1 otherwise.
pub fn exit_code(checks: &[Check]) -> u8 {
    u8::from(checks.iter().any(|c| c.level == Level::Fail))
}

pub fn summary(checks: &[Check]) -> String {
    let n = |l: Level| checks.iter().filter(|c| c.level == l).count();
    format!(
        "doctor: {} ok, {} warn, {} FAIL, {} n/a",
        n(Level::Ok),
        n(Level::Warn),
        n(Level::Fail),
        n(Level::Na)
    )
}

pub fn render_text(checks: &[Check]) -> String {
    let mut s = String::new();
    for c in checks {
        s.push_str(&c.line());
        s.push('\n');
    }
    s.push_str(&summary(checks));
    s.push('\n');
    s
}

pub fn render_json(checks: &[Check]) -> String {
    let v: Vec<serde_json::Value> = checks.iter().map(Check::json).collect();
    let doc = serde_json::json!({
        "checks": v,
        "ok": exit_code(checks) == 0,
        "failed": checks.iter().filter(|c| c.level == Level::Fail).count(),
        "warned": checks.iter().filter(|c| c.level == Level::Warn).count(),
    });
    format!("{}\n", serde_json::to_string_pretty(&doc).unwrap_or_default())
}

/// Bytes in words: `64 KiB`, `8 MiB`, `1.5 GiB`.
pub fn human_bytes(b: u64) -> String {
    const K: u64 = 1024;
    if b >= K * K * K && b & (K * K * K - 1) == 0 {
        format!("{} GiB", b / (K * K * K))
    } else if b >= K * K && b & (K * K - 1) == 0 {
        format!("{} MiB", b / (K * K))
    } else if b >= K && b & (K - 1) == 0 {
        format!("{} KiB", b / K)
    } else {
        format!("{b} B")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_and_exit() {
        let c = Check::fail("memlock", "low", "ulimit -l unlimited");
        assert_eq!(c.line(), "FAIL  memlock: low; fix: ulimit -l unlimited");
        assert_eq!(Check::ok("x", "fine").line(), "ok    x: fine");
        assert_eq!(Check::na("pcie", "rxe").line(), "n/a   pcie: rxe");
        assert_eq!(Check::ok("x", "a\nb").line(), "ok    x: a\\nb");
        assert_eq!(exit_code(&[Check::ok("a", ""), Check::warn("b", "", "")]), 0);
        assert_eq!(exit_code(&[Check::ok("a", ""), c.clone()]), 1);
        let j: serde_json::Value = serde_json::from_str(&render_json(&[c])).unwrap();
        assert_eq!(j["ok"], false);
        assert_eq!(j["checks"][0]["status"], "FAIL");
        assert_eq!(j["checks"][0]["fix"], "ulimit -l unlimited");
        assert_eq!(human_bytes(65536), "64 KiB");
        assert_eq!(human_bytes(8 << 20), "8 MiB");
        assert_eq!(human_bytes(1000), "1000 B");
    }
}
