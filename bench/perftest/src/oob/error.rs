//! The one error type of the out-of-band exchange.
//!
//! Every variant renders as a single line: what happened, what was expected, what to try.
//! Nothing here panics on peer input; decoders and the transport return these instead.

use std::fmt;
use std::io;

/// Error of the perftest out-of-band (TCP port 18515) exchange.
#[derive(Debug)]
pub enum OobError {
    /// A value we were asked to send does not fit perftest's wire format (a local bug or a
    /// nonsense parameter, never peer input).
    InvalidLocal { what: &'static str, detail: String },
    /// Bytes from the peer that do not form the message expected at this step.
    Malformed { step: String, detail: String, hint: &'static str },
    /// The peer speaks a perftest version we cannot talk to.
    IncompatibleVersion { peer: String },
    /// A symmetric option differs between the two sides (found by the 6.28+ negotiation).
    Mismatch { field: &'static str, local: String, remote: String, option: &'static str },
    /// A decodable message that cannot be right where it came: the two sides run different
    /// options (a perftest < 6.28 peer cannot say which); the whole line, naming the option.
    PeerOutOfStep { detail: String },
    /// The peer closed the TCP connection in the middle of a message or before it.
    PeerClosed { step: String, got: usize, expected: usize },
    /// The peer closed the connection in the measurement phase: it stopped or failed during
    /// its run (the usual sign of options that differ between the sides).
    PeerClosedInRun { step: String, got: usize, expected: usize },
    /// No (complete) message within the read timeout.
    Timeout { step: String, secs: u64, got: usize, expected: usize },
    /// No message within the measurement-phase bound, which the test's own size allows for
    /// (`basis` says what it was computed from).
    RunTimeout { step: String, secs: u64, got: usize, expected: usize, basis: String },
    /// `connect()` failed (after the configured retries).
    Connect { target: String, tries: u32, source: io::Error },
    /// Bind/listen failed on the server.
    Listen { port: u16, source: io::Error },
    /// `accept()` failed or timed out.
    Accept { port: u16, source: io::Error },
    /// Any other socket error during a step.
    Io { step: String, source: io::Error },
    /// A wait was cut short by SIGINT/SIGTERM/SIGHUP ([`crate::signal`]).
    Interrupted { step: String },
    /// `--source_ip` cannot be used (not local, wrong family): the whole line.
    Source { msg: String },
}

impl OobError {
    pub(crate) fn malformed(step: impl Into<String>, detail: impl Into<String>, hint: &'static str) -> Self {
        OobError::Malformed { step: step.into(), detail: detail.into(), hint }
    }

    /// The lines C perftest prints on stderr for the same failure, where it has its own wording
    /// (negotiation mismatch). `None` for errors where our one-line message is all there is.
    pub fn perftest_lines(&self) -> Option<String> {
        match self {
            OobError::Mismatch { field, local, remote, .. } => {
                Some(format!(" {field} mismatch: local={local}, remote={remote}\n Failed to negotiate parameters\n"))
            }
            OobError::IncompatibleVersion { .. } => {
                Some("Current implementation is not compatible with versions older than 5.70\n".to_string())
            }
            _ => None,
        }
    }
}

impl fmt::Display for OobError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            OobError::InvalidLocal { what, detail } => {
                write!(f, "cannot encode {what}: {detail} (this is a bug in the caller's parameters)")
            }
            OobError::Malformed { step, detail, hint } => {
                write!(f, "bad message from peer during {step}: {detail}; {hint}")
            }
            OobError::IncompatibleVersion { peer } => write!(
                f,
                "peer reports perftest version {peer:?}, older than 5.70 which is the oldest this tool can talk to; \
                 run perftest 5.92 or newer (or rperftest) on the other side, and give --dont_xchg_versions to \
                 both sides or to neither"
            ),
            OobError::Mismatch { field, local, remote, option } => write!(
                f,
                "{field} mismatch: local={local}, remote={remote}; the two sides were started with different \
                 options, give both the same {option}"
            ),
            OobError::PeerOutOfStep { detail } => f.write_str(detail),
            OobError::PeerClosed { step, got, expected } => write!(
                f,
                "peer closed the connection during {step} (received {got} of {expected} bytes); \
                 look at the other side's error output"
            ),
            OobError::PeerClosedInRun { step, got, expected } => write!(
                f,
                "peer closed the connection during {step} (received {got} of {expected} bytes) while its test ran: it \
                 was stopped or failed; look at its output (a completion error there, e.g. REM_ACCESS_ERR, usually \
                 means the two sides run different -s, -a or -q)"
            ),
            OobError::Timeout { step, secs, got, expected } => write!(
                f,
                "no answer from peer for {secs} s during {step} (received {got} of {expected} bytes); the peer \
                 may be stuck, slow or run with different options; check it or raise the OOB timeout"
            ),
            OobError::RunTimeout { step, secs, got, expected, basis } => write!(
                f,
                "no answer from peer for {secs} s during {step} (received {got} of {expected} bytes), longer than this \
                 side's test needs ({basis}); the peer is stuck, or it runs a longer test than this side: give both \
                 sides the same -n, -s, -a, -q and -D"
            ),
            OobError::Connect { target, tries, source } => write!(
                f,
                "couldn't connect to {target} ({tries} attempt{}): {source}; start the server side first and \
                 check the address and the -p port; run: rperftest doctor {}",
                if *tries == 1 { "" } else { "s" },
                doctor_host(target)
            ),
            OobError::Listen { port, source } => {
                write!(f, "couldn't listen to port {port}: {source}; another process may use it, pick another with -p")
            }
            OobError::Accept { port, source } => {
                write!(f, "accept() on port {port} failed: {source}; is the client able to reach this host?")
            }
            OobError::Io { step, source } => {
                write!(f, "socket error during {step}: {source}; check the network and the peer")
            }
            OobError::Interrupted { step } => f.write_str(&bench_core::signal::stop_message(bench_core::signal::signal_number(), step)),
            OobError::Source { msg } => f.write_str(msg.trim_start()),
        }
    }
}

impl std::error::Error for OobError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            OobError::Connect { source, .. }
            | OobError::Listen { source, .. }
            | OobError::Accept { source, .. }
            | OobError::Io { source, .. } => Some(source),
            _ => None,
        }
    }
}

/// The host of a `host:port` / `[v6]:port` target, for the `rperftest doctor HOST` hint.
fn doctor_host(target: &str) -> &str {
    let host = target.rsplit_once(':').map_or(target, |(h, _)| h);
    host.trim_start_matches('[').trim_end_matches(']')
}

#[cfg(test)]
mod doctor_hint_tests {
    use super::*;

    #[test]
    fn connect_failure_ends_with_the_doctor() {
        assert_eq!(doctor_host("node4:18515"), "node4");
        assert_eq!(doctor_host("[fe80::1]:18515"), "fe80::1");
        let e = OobError::Connect {
            target: "10.0.0.2:18515".into(),
            tries: 3,
            source: std::io::Error::new(std::io::ErrorKind::ConnectionRefused, "Connection refused"),
        };
        let s = e.to_string();
        assert!(s.ends_with("; run: rperftest doctor 10.0.0.2"), "{s}");
        assert!(!s.contains('\n'));
    }
}
