//! The things a user can change, named in error hints without knowing the program's flags.
//!
//! A library hint says what to change ("pick a populated GID index"); the program that owns the
//! command line installs a [`Spelling`] so the same hint also names its flag ("… (-x)"). Without
//! one the hint stays in plain words. The ib_* tools spell knobs the perftest way; another tool
//! can spell them its own way or not at all.

use std::sync::RwLock;

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

static SPELLING: RwLock<Option<Spelling>> = RwLock::new(None);

/// The program's spelling from now on (`None`: plain words only).
pub fn set_spelling(s: Option<Spelling>) {
    *SPELLING.write().unwrap_or_else(|p| p.into_inner()) = s;
}

/// The program's spelling of `k`, if it has one.
pub fn spelled(k: Knob) -> Option<&'static str> {
    let s = *SPELLING.read().unwrap_or_else(|p| p.into_inner());
    s.and_then(|f| f(k))
}

/// `" (-x)"` where the program spells `k` as `-x`; empty otherwise. For a hint that already names
/// the knob in its own words.
pub fn flag(k: Knob) -> String {
    spelled(k).map(|f| format!(" ({f})")).unwrap_or_default()
}

/// The knob's words and, where the program has one, its flag: `"GID index (-x)"`.
pub fn named(k: Knob) -> String {
    format!("{}{}", k.what(), flag(k))
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

    // The spelling is process-wide: one test sets and clears it.
    #[test]
    fn hints_name_the_flag_only_where_the_program_has_one() {
        assert_eq!(named(Knob::GidIndex), "GID index");
        set_spelling(Some(perftestish));
        assert_eq!(named(Knob::GidIndex), "GID index (-x)");
        assert_eq!(flag(Knob::GidIndex), " (-x)");
        assert_eq!(named(Knob::IbPort), "port");
        set_spelling(None);
        assert_eq!(flag(Knob::GidIndex), "");
    }
}
