//! perftest's out-of-band exchange over TCP (port 18515): byte-exact messages
//! ([`msg`]), the per-tool order of exchanges ([`plan`]), a blocking transport
//! ([`transport`]) and a plan executor ([`session`]).
//!
//! Wire facts: docs/perftest-wire.md, "The TCP exchange", and our 6.06 captures in
//! tests/fixtures/tcp/ (replayed by tests/oob_golden.rs).

#[forbid(unsafe_code)]
pub mod error;
#[forbid(unsafe_code)]
pub mod msg;
#[forbid(unsafe_code)]
pub mod plan;
#[forbid(unsafe_code)]
pub mod plausible;
#[forbid(unsafe_code)]
pub mod session;
#[forbid(unsafe_code)]
pub mod source;
pub mod transport;

pub use error::OobError;
pub use msg::{
    AtomicType, BwReport, ConnType, KeyFormat, KeyMsg, Negotiate, NegotiateLayout, PeerVersion, ReportField, SysData,
    Verb,
};
pub use plan::{plan, Action, KeyPurpose, PlanOptions, Role, Step, Tool};
pub use session::{execute, Exchange, Hooks};
pub use transport::{Channel, Listener, OobConfig, DEFAULT_TIMEOUT};
