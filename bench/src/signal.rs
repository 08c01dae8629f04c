//! Ctrl-C (SIGINT), SIGTERM and SIGHUP: stop the run cleanly instead of dying with resources
//! half-built and the peer left waiting.
//!
//! The handler only stores into atomics (async-signal-safe). Everything that waits checks
//! [`requested`]: the engine loops through their `stop` flag (a watcher thread copies it in),
//! the out-of-band reads and the accept loop (both wait in short slices). The tool then unwinds
//! normally, so every verbs object and socket is released by `Drop`, prints one line and exits
//! with 128 + the signal number, like a shell reports a killed command.
//!
//! A second signal while the first is being handled exits at once (`_exit`), in case something
//! does not stop.

use std::sync::atomic::{AtomicBool, AtomicI32, Ordering};
use std::time::Duration;

static STOP: AtomicBool = AtomicBool::new(false);
static SIGNO: AtomicI32 = AtomicI32::new(0);
static INSTALLED: AtomicBool = AtomicBool::new(false);

/// How often waits look at the stop flag (an OOB read or an accept wakes this often).
pub const POLL_SLICE: Duration = Duration::from_millis(200);

extern "C" fn on_signal(signo: libc::c_int) {
    // Only atomics and _exit: both are async-signal-safe.
    if STOP.swap(true, Ordering::SeqCst) {
        // SAFETY: _exit is async-signal-safe and takes no pointers.
        unsafe { libc::_exit(128 + signo) };
    }
    SIGNO.store(signo, Ordering::SeqCst);
}

/// Install the handler for SIGINT, SIGTERM and SIGHUP (once per process; later calls do
/// nothing). Without SA_RESTART, so a blocking read returns EINTR at once.
pub fn install() {
    if INSTALLED.swap(true, Ordering::SeqCst) {
        return;
    }
    for sig in [libc::SIGINT, libc::SIGTERM, libc::SIGHUP] {
        // SAFETY: a zeroed sigaction is a valid "no flags, empty mask" value; the handler is an
        // extern "C" fn that only touches atomics (and _exit); sigemptyset/sigaction get valid
        // pointers to locals.
        unsafe {
            let mut sa: libc::sigaction = std::mem::zeroed();
            sa.sa_sigaction = on_signal as extern "C" fn(libc::c_int) as libc::sighandler_t;
            sa.sa_flags = 0;
            libc::sigemptyset(&mut sa.sa_mask);
            libc::sigaction(sig, &sa, std::ptr::null_mut());
        }
    }
}

/// True once SIGINT/SIGTERM/SIGHUP arrived (or [`request_stop`] was called).
#[inline]
pub fn requested() -> bool {
    STOP.load(Ordering::Relaxed)
}

/// The signal that stopped us (0: none, or a stop requested without a signal).
pub fn signal_number() -> i32 {
    SIGNO.load(Ordering::Relaxed)
}

/// Ask every wait to stop, as a signal would (tests; a fatal error on another thread).
pub fn request_stop() {
    STOP.store(true, Ordering::SeqCst);
}

/// Name of a stop signal for messages.
pub fn signal_name(signo: i32) -> &'static str {
    match signo {
        libc::SIGINT => "SIGINT (Ctrl-C)",
        libc::SIGTERM => "SIGTERM",
        libc::SIGHUP => "SIGHUP",
        _ => "a stop request",
    }
}

/// Exit status after a stop: 128 + signal, 130 (SIGINT's) when no signal number is known.
pub fn exit_code(signo: i32) -> i32 {
    if signo > 0 && signo < 64 {
        128 + signo
    } else {
        130
    }
}

/// The one line printed when a run stops on a signal.
pub fn stop_message(signo: i32, during: &str) -> String {
    format!("stopped by {} during {during}; resources released, connection to the peer closed", signal_name(signo))
}

/// Whether the peer closed its end of `fd` (a TCP socket): POLLRDHUP/POLLHUP/POLLERR within
/// `wait`. Data waiting to be read is not a close. EINTR counts as "no news".
pub fn peer_hung_up(fd: std::os::fd::RawFd, wait: Duration) -> bool {
    let mut pfd = libc::pollfd { fd, events: libc::POLLRDHUP, revents: 0 };
    let ms = wait.as_millis().min(i32::MAX as u128) as libc::c_int;
    // SAFETY: one valid pollfd on the stack, count 1.
    let n = unsafe { libc::poll(&mut pfd, 1, ms) };
    n > 0 && (pfd.revents & (libc::POLLRDHUP | libc::POLLHUP | libc::POLLERR)) != 0
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;
    use std::net::{TcpListener, TcpStream};
    use std::os::fd::AsRawFd;

    #[test]
    fn exit_codes_and_names() {
        assert_eq!(exit_code(libc::SIGINT), 130);
        assert_eq!(exit_code(libc::SIGTERM), 143);
        assert_eq!(exit_code(0), 130);
        assert_eq!(signal_name(libc::SIGINT), "SIGINT (Ctrl-C)");
        let m = stop_message(libc::SIGTERM, "the test");
        assert!(m.starts_with("stopped by SIGTERM during the test;"), "{m}");
        assert!(!m.contains('\n'));
    }

    #[test]
    fn hang_up_is_seen_and_pending_data_is_not() {
        let l = TcpListener::bind("127.0.0.1:0").unwrap();
        let mut c = TcpStream::connect(l.local_addr().unwrap()).unwrap();
        let (s, _) = l.accept().unwrap();
        assert!(!peer_hung_up(s.as_raw_fd(), Duration::from_millis(10)));
        c.write_all(b"data").unwrap();
        assert!(!peer_hung_up(s.as_raw_fd(), Duration::from_millis(10)));
        drop(c);
        assert!(peer_hung_up(s.as_raw_fd(), Duration::from_millis(500)));
    }
}
