//! The enums of the command line: tools, transports, test shapes and report options, with the
//! wire values perftest gives them (the verb and atomic type are `oob::msg`'s).

use std::fmt;

/// The verb and the atomic operation are the wire's enums (one numbering, one set of names).
pub use crate::oob::msg::{AtomicType, Verb};

/// The eight tools.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Tool {
    WriteBw,
    WriteLat,
    ReadBw,
    ReadLat,
    SendBw,
    SendLat,
    AtomicBw,
    AtomicLat,
}

/// BW or latency test ("tst" in perftest; wire values LAT=0, BW=1).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum TestKind {
    Lat,
    Bw,
}

/// Transport (wire values RC=0, UC=1, UD=2, RawEth=3, XRC=4, DC=5, SRD=6). Only RC, UC and UD
/// ever appear in a successfully parsed [`Params`](super::Params).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Connection {
    Rc,
    Uc,
    Ud,
    Xrc,
    Dc,
    Srd,
}

/// Iterations (`-n`) or duration (`-D`, `--run_infinitely`); wire ITERATIONS=0, DURATION=1.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum TestType {
    Iterations,
    Duration,
}

/// RUN_REGULAR=0, RUN_ALL (`-a`)=1, RUN_INFINITELY=2.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum TestMethod {
    Regular,
    All,
    Infinitely,
}

/// GBS=0 (`--report_gbits`), MBS=1 (default).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ReportFormat {
    Gbs,
    Mbs,
}

/// `--output=…`: Full is the default (all lines).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Output {
    Full,
    Bandwidth,
    MessageRate,
    Latency,
}

/// `--force-link`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum LinkType {
    Ib,
    Ethernet,
}

/// Which side of the *test* this process plays (after `--reversed`); the TCP role is
/// [`Params::is_tcp_client`](super::Params::is_tcp_client).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Role {
    Server,
    Client,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum RateLimitType {
    Disabled,
    Hw,
    Sw,
    Pp,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum RateUnits {
    /// `M`: MiB/s
    MegaBytes,
    /// `g`: Gb/s (default)
    GigaBits,
    /// `p`: packets/s
    Packets,
}

impl Tool {
    pub const ALL: [Tool; 8] = [
        Tool::WriteBw,
        Tool::WriteLat,
        Tool::ReadBw,
        Tool::ReadLat,
        Tool::SendBw,
        Tool::SendLat,
        Tool::AtomicBw,
        Tool::AtomicLat,
    ];

    /// `ib_write_bw`, or a path ending in it (busybox-style argv[0]: `/usr/bin/ib_write_bw`).
    pub fn from_name(name: &str) -> Option<Tool> {
        let base = name.rsplit('/').next().unwrap_or(name);
        Tool::ALL.into_iter().find(|t| t.name() == base)
    }

    pub fn name(self) -> &'static str {
        match self {
            Tool::WriteBw => "ib_write_bw",
            Tool::WriteLat => "ib_write_lat",
            Tool::ReadBw => "ib_read_bw",
            Tool::ReadLat => "ib_read_lat",
            Tool::SendBw => "ib_send_bw",
            Tool::SendLat => "ib_send_lat",
            Tool::AtomicBw => "ib_atomic_bw",
            Tool::AtomicLat => "ib_atomic_lat",
        }
    }

    pub fn kind(self) -> TestKind {
        match self {
            Tool::WriteBw | Tool::ReadBw | Tool::SendBw | Tool::AtomicBw => TestKind::Bw,
            _ => TestKind::Lat,
        }
    }

    /// The tool's base verb: Write, Read, Send or Atomic.
    pub fn verb(self) -> Verb {
        match self {
            Tool::WriteBw | Tool::WriteLat => Verb::Write,
            Tool::ReadBw | Tool::ReadLat => Verb::Read,
            Tool::SendBw | Tool::SendLat => Verb::Send,
            Tool::AtomicBw | Tool::AtomicLat => Verb::Atomic,
        }
    }

    /// `-n` default: 5000 for ib_write_bw, 1000 for the others.
    pub fn default_iters(self) -> u64 {
        if self == Tool::WriteBw {
            5000
        } else {
            1000
        }
    }
}

impl fmt::Display for Tool {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl TestKind {
    pub fn wire_value(self) -> u32 {
        match self {
            TestKind::Lat => 0,
            TestKind::Bw => 1,
        }
    }
}

impl Connection {
    pub fn wire_value(self) -> u32 {
        match self {
            Connection::Rc => 0,
            Connection::Uc => 1,
            Connection::Ud => 2,
            Connection::Xrc => 4,
            Connection::Dc => 5,
            Connection::Srd => 6,
        }
    }
    pub fn as_str(self) -> &'static str {
        match self {
            Connection::Rc => "RC",
            Connection::Uc => "UC",
            Connection::Ud => "UD",
            Connection::Xrc => "XRC",
            Connection::Dc => "DC",
            Connection::Srd => "SRD",
        }
    }
}

impl TestType {
    pub fn wire_value(self) -> u32 {
        match self {
            TestType::Iterations => 0,
            TestType::Duration => 1,
        }
    }
}

impl TestMethod {
    pub fn wire_value(self) -> u32 {
        match self {
            TestMethod::Regular => 0,
            TestMethod::All => 1,
            TestMethod::Infinitely => 2,
        }
    }
}

impl ReportFormat {
    pub fn wire_value(self) -> u32 {
        match self {
            ReportFormat::Gbs => 0,
            ReportFormat::Mbs => 1,
        }
    }
}
