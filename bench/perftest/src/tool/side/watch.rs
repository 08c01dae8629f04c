//! How a running engine loop learns that it must stop: a stop signal, or the peer closing the
//! out-of-band connection (watched on a second handle of its socket).

use std::sync::atomic::AtomicBool;

/// Run `f` (an engine loop) under [`bench_core::signal::watch`]: `stop` is set when a stop signal
/// arrives or the peer closes the out-of-band connection (`peer_gone` says which), so a
/// survivor ends within a fraction of a second instead of at the stall timeout.
pub(super) fn watched<R>(stop: &AtomicBool, peer_gone: &AtomicBool, sock: Option<&std::net::TcpStream>, f: impl FnOnce() -> R) -> R {
    use std::os::fd::AsRawFd;
    bench_core::signal::watch(stop, peer_gone, sock.map(|s| s.as_raw_fd()), f)
}

pub(super) struct Watch {
    pub(super) stop: AtomicBool,
    /// Set by `signal::watch_tick` when the peer closed the OOB connection during a run.
    pub(super) peer_gone: AtomicBool,
    /// A second handle on the OOB socket, watched for a hang-up while the engine runs.
    pub(super) peer_sock: Option<std::net::TcpStream>,
}

impl Watch {
    pub(super) fn new(peer_sock: Option<std::net::TcpStream>) -> Self {
        Watch { stop: AtomicBool::new(false), peer_gone: AtomicBool::new(false), peer_sock }
    }

    /// `; run: rperftest doctor PEER` with the peer's address from the exchange socket.
    pub(super) fn doctor_hint(&self) -> String {
        let peer = self.peer_sock.as_ref().and_then(|s| s.peer_addr().ok()).map_or("PEER".to_string(), |a| a.ip().to_string());
        format!("; run: rperftest doctor {peer}")
    }
}
