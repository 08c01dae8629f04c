//! What this side knows of its peer from the out-of-band exchanges: its key records (and the
//! ledger that checks they come in step), its result report, and how far the options were agreed.

use crate::oob;
use crate::oob::msg::{BwReport, KeyMsg};
use crate::params::{Connection, Params};

pub(super) struct Peer {
    pub(super) remote_keys: Vec<KeyMsg>,
    /// The peer's records so far, to catch a peer whose exchanges are out of step with ours.
    pub(super) key_ledger: oob::plausible::KeyLedger,
    pub(super) peer_report: Option<BwReport>,
    /// An rperftest peer compared its options with ours and found them equal: a completion
    /// error then cannot come from a -s/-q/-c mismatch.
    pub(super) options_matched: bool,
    /// The peer's version and ours call for the 6.28+ NEGOTIATE exchange after the MTU: the
    /// resources wait for it, as 6.29 creates nothing before the options are agreed.
    pub(super) negotiating: bool,
}

impl Peer {
    pub(super) fn new(p: &Params) -> Self {
        Peer { remote_keys: Vec::new(), key_ledger: key_ledger_for(p), peer_report: None, options_matched: false, negotiating: false }
    }
}

/// The ledger of the peer's key records for `p`'s QPs (`-g` and `-c DC` records differ).
pub(super) fn key_ledger_for(p: &Params) -> oob::plausible::KeyLedger {
    oob::plausible::KeyLedger::new(p.num_qps as usize, !p.use_mcg && p.connection != Connection::Dc, p.connection == Connection::Dc)
}
