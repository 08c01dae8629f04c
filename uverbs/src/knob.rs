//! The things a user can change, named in error hints without knowing the program's flags.
//!
//! A library hint says what to change ("pick a populated GID index"); the program that owns the
//! command line names its [`Spelling`] once, at start ([`set_spelling`]), so the same hint also
//! names its flag ("… (-x)"). Without one the hint stays in plain words. The ib_* tools spell
//! knobs the perftest way; another tool can spell them its own way or not at all.
//!
//! This is a process-wide output convention, not a run setting: it is written once and then
//! only read, so it stays a global rather than a value threaded to every hint.

use std::sync::OnceLock;

/// A setting a hint may ask the user to change.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Knob {
    /// Which RDMA device to open.
    Device,
    /// The HCA port number.
    IbPort,
    /// The GID table index (source address on RoCE).
    GidIndex,
    /// The TCP/rdma_cm port the server listens on.
    ServerPort,
    /// Send queue depth.
    SendDepth,
    /// Receive queue (or SRQ) depth.
    RecvDepth,
    /// Bytes sent inline in the WQE.
    InlineSize,
    /// Buffers from huge pages.
    HugePages,
    /// The `write()` command transport instead of `RDMA_VERBS_IOCTL`.
    WriteTransport,
    /// The `write()` rxe doorbell instead of io_uring.
    WriteDoorbell,
    /// The crypto-officer credential used for the mlx5 crypto login.
    CryptoCredential,
    /// The program that prints the wrapped data-encryption key.
    KeyProgram,
}

impl Knob {
    /// The plain words for it, as a hint's noun.
    pub fn what(self) -> &'static str {
        match self {
            Knob::Device => "device",
            Knob::IbPort => "port",
            Knob::GidIndex => "GID index",
            Knob::ServerPort => "port",
            Knob::SendDepth => "send queue depth",
            Knob::RecvDepth => "receive queue depth",
            Knob::InlineSize => "inline size",
            Knob::HugePages => "huge pages",
            Knob::WriteTransport => "write transport",
            Knob::WriteDoorbell => "write() doorbell",
            Knob::CryptoCredential => "crypto credential",
            Knob::KeyProgram => "key program",
        }
    }
}

/// How the program spells a knob on its command line (or environment), if it has one.
pub type Spelling = fn(Knob) -> Option<&'static str>;

static SPELLING: OnceLock<Spelling> = OnceLock::new();

/// Name the program's spelling, once, before any hint is made (until then: plain words only).
/// Returns false, changing nothing, when a spelling was named already.
pub fn set_spelling(s: Spelling) -> bool {
    SPELLING.set(s).is_ok()
}

/// The program's spelling of `k`, if it has one.
pub fn spelled(k: Knob) -> Option<&'static str> {
    spelled_by(SPELLING.get().copied(), k)
}

fn spelled_by(s: Option<Spelling>, k: Knob) -> Option<&'static str> {
    s.and_then(|f| f(k))
}

/// `" (-x)"` where the program spells `k` as `-x`; empty otherwise. For a hint that already names
/// the knob in its own words.
pub fn flag(k: Knob) -> String {
    flag_by(SPELLING.get().copied(), k)
}

fn flag_by(s: Option<Spelling>, k: Knob) -> String {
    spelled_by(s, k).map(|f| format!(" ({f})")).unwrap_or_default()
}

/// The knob's words and, where the program has one, its flag: `"GID index (-x)"`.
pub fn named(k: Knob) -> String {
    named_by(SPELLING.get().copied(), k)
}

fn named_by(s: Option<Spelling>, k: Knob) -> String {
    format!("{}{}", k.what(), flag_by(s, k))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn perftestish(k: Knob) -> Option<&'static str> {
        match k {
            Knob::GidIndex => Some("-x"),
            _ => None,
        }
    }

    // Through the spelling as a value: the process-wide one is left to the program (and to the
    // integration tests, each its own process).
    #[test]
    fn hints_name_the_flag_only_where_the_program_has_one() {
        assert_eq!(named_by(None, Knob::GidIndex), "GID index");
        assert_eq!(named_by(Some(perftestish), Knob::GidIndex), "GID index (-x)");
        assert_eq!(flag_by(Some(perftestish), Knob::GidIndex), " (-x)");
        assert_eq!(named_by(Some(perftestish), Knob::IbPort), "port");
        assert_eq!(flag_by(None, Knob::GidIndex), "");
    }
}
