//! `rperftest qperf` (also run as a link named `qperf`): a re-implementation of qperf 0.4.11
//! that talks to a stock qperf on either side. See docs/qperf.md for what it covers and
//! where it differs.
//!
//! The socket tests (tcp/sctp/udp bw and lat), conf, quit and the RDMA tests (rc/uc/ud, with
//! rdma_cm for RC) are implemented; SDP, RDS and XRC are not.
//!
//! Denied, not forbidden: rdma::rig posts work requests over its own MR (the only unsafe
//! here, each block with its SAFETY note).
#![deny(unsafe_code)]

#[forbid(unsafe_code)]
pub mod clock;
#[forbid(unsafe_code)]
pub mod client;
#[forbid(unsafe_code)]
pub mod conf;
#[forbid(unsafe_code)]
pub mod ctrl;
#[forbid(unsafe_code)]
pub mod format;
#[forbid(unsafe_code)]
pub mod fuzzing;
#[forbid(unsafe_code)]
pub mod options;
#[forbid(unsafe_code)]
pub mod pars;
#[forbid(unsafe_code)]
pub mod pin;
// Only rdma::rig has unsafe (posting over its MR); the rest of rdma forbids it.
pub mod rdma;
#[forbid(unsafe_code)]
pub mod request;
#[forbid(unsafe_code)]
pub mod results;
#[forbid(unsafe_code)]
pub mod sctp;
#[forbid(unsafe_code)]
pub mod server;
#[forbid(unsafe_code)]
pub mod tests_sock;
#[forbid(unsafe_code)]
pub mod wire;

use options::{do_args, Outcome, Par, Side, State};
use std::time::Duration;

/// Entry point: `args` without the program name; RDMA devices open as `providers` choose.
/// Returns the exit status.
pub fn run(args: &[String], providers: &providers::ProviderSettings) -> i32 {
    let mut st = State { providers: providers.clone(), ..State::default() };
    let mut out = |l: &str| println!("{l}");
    let r = do_args(args, &mut st, &mut out, &mut |st, test| client::run_test(st, test));
    match r {
        Ok(Outcome::Client) | Ok(Outcome::Done) => 0,
        Ok(Outcome::Server) => {
            let lto = st.pars.get(Side::Loc, Par::Timeout);
            let timeout = if lto.set_by.is_some() && lto.val > 0 { lto.val } else { 5 };
            server::run(&server::ServerOpts {
                port: st.g.listen_port,
                timeout: Duration::from_secs(u64::from(timeout)),
                debug: st.g.verbosity.debug,
                allow_quit: st.g.allow_quit,
                providers: st.providers.clone(),
            })
        }
        Err(options::Fatal(m)) => {
            // An empty message: the server's text was already printed on stderr.
            if !m.is_empty() {
                println!("{m}");
            }
            1
        }
    }
}
