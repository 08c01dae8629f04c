//! Ctrl-C (SIGINT), SIGTERM and SIGHUP: stop the run cleanly instead of dying with resources
//! half-built and the peer left waiting.
//!
//! The handler only stores into atomics (async-signal-safe). Everything that waits checks
//! [`requested`]: the engine loops directly and through [`watch_tick`] (which also notices a
//! peer that hung up), the out-of-band reads and the accept loop (both wait in short slices).
//! The tool then unwinds normally, so every verbs object and socket is released by `Drop`,
//! prints one line and exits with 128 + the signal number, like a shell reports a killed
//! command.
//!
//! A second signal while the first is being handled exits at once (`_exit`), in case something
//! does not stop.

use std::cell::Cell;
use std::sync::atomic::{AtomicBool, AtomicI32, Ordering};
use std::time::Duration;

use crate::clock;

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

/// True once SIGINT/SIGTERM/SIGHUP arrived.
#[inline]
pub fn requested() -> bool {
    STOP.load(Ordering::Relaxed)
}

/// The signal that stopped us (0: none, or a stop requested without a signal).
pub fn signal_number() -> i32 {
    SIGNO.load(Ordering::Relaxed)
}

/// How often [`watch_tick`] asks the kernel whether the peer hung up (one poll(2)).
pub const WATCH_POLL_EVERY: Duration = Duration::from_millis(50);

/// The watch registered by [`watch`] on this thread.
#[derive(Clone, Copy)]
struct Watch {
    sock: Option<std::os::fd::RawFd>,
    stop: *const AtomicBool,
    peer_gone: *const AtomicBool,
    /// [`clock::now`] ticks of the next poll(2).
    next_poll: u64,
}

thread_local! {
    static WATCH: Cell<Option<Watch>> = const { Cell::new(None) };
}

/// Run `f` (an engine loop) under a watch: while it runs, [`watch_tick`] on this thread sets
/// `stop` when a stop signal has arrived or the peer closed `sock` (then `peer_gone` as well),
/// so a survivor ends within a fraction of a second instead of at the stall timeout.
///
/// No watcher thread: a second thread makes the file table shared, and then the kernel takes
/// and drops a reference on the uverbs file at every system call (`fdget`), so every doorbell
/// `write()` of the measured loop paid two atomic operations more than perftest's (measured in
/// docs/benchmarks-data/2026-12-01-split.md). The loops call [`watch_tick`] where they already
/// look at the clock while waiting; a loop that is making progress does not need to know the
/// peer is gone.
pub fn watch<R>(stop: &AtomicBool, peer_gone: &AtomicBool, sock: Option<std::os::fd::RawFd>, f: impl FnOnce() -> R) -> R {
    /// Puts back the watch that was registered before (nested watches), on every exit path.
    struct Restore(Option<Watch>);
    impl Drop for Restore {
        fn drop(&mut self) {
            WATCH.with(|w| w.set(self.0.take()));
        }
    }
    let mine = Watch { sock, stop, peer_gone, next_poll: 0 };
    let _restore = Restore(WATCH.with(|w| w.replace(Some(mine))));
    f()
}

/// For waiting loops, now and then (each call costs a thread-local read and a clock read, and
/// at most every [`WATCH_POLL_EVERY`] one poll(2)): under a [`watch`] on this thread, set its
/// `stop` flag when a stop signal arrived or the peer hung up. Outside a watch it does nothing.
pub fn watch_tick() {
    let Some(mut w) = WATCH.with(|c| c.get()) else { return };
    // SAFETY: `watch` registers these pointers from references that outlive its call to `f`,
    // and its `Restore` guard removes them before returning or unwinding; only this thread
    // reads the registration, and only from inside `f`.
    let (stop, peer_gone) = unsafe { (&*w.stop, &*w.peer_gone) };
    if requested() {
        stop.store(true, Ordering::Release);
        return;
    }
    let Some(fd) = w.sock else { return };
    let now = clock::now();
    if now < w.next_poll {
        return;
    }
    w.next_poll = now + WATCH_POLL_EVERY.as_nanos() as u64;
    WATCH.with(|c| c.set(Some(w)));
    if peer_hung_up(fd, Duration::ZERO) {
        peer_gone.store(true, Ordering::Release);
        stop.store(true, Ordering::Release);
    }
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
    fn watch_tick_sees_a_hang_up_and_only_inside_the_watch() {
        let l = TcpListener::bind("127.0.0.1:0").unwrap();
        let mut c = TcpStream::connect(l.local_addr().unwrap()).unwrap();
        let (s, _) = l.accept().unwrap();
        let (stop, gone) = (AtomicBool::new(false), AtomicBool::new(false));
        // Data from the peer is not a hang-up.
        c.write_all(b"x").unwrap();
        watch(&stop, &gone, Some(s.as_raw_fd()), watch_tick);
        assert!(!stop.load(Ordering::Acquire) && !gone.load(Ordering::Acquire));
        drop(c);
        std::thread::sleep(Duration::from_millis(50));
        // Outside a watch a tick does nothing.
        watch_tick();
        assert!(!stop.load(Ordering::Acquire));
        // Inside, the first tick polls and sees the close; both flags are set.
        let r = watch(&stop, &gone, Some(s.as_raw_fd()), || {
            watch_tick();
            stop.load(Ordering::Acquire)
        });
        assert!(r && gone.load(Ordering::Acquire));
    }

    #[test]
    fn watch_ticks_poll_at_most_every_interval_and_nest() {
        let l = TcpListener::bind("127.0.0.1:0").unwrap();
        let c = TcpStream::connect(l.local_addr().unwrap()).unwrap();
        let (s, _) = l.accept().unwrap();
        let (stop, gone) = (AtomicBool::new(false), AtomicBool::new(false));
        let (stop2, gone2) = (AtomicBool::new(false), AtomicBool::new(false));
        watch(&stop, &gone, Some(s.as_raw_fd()), || {
            watch_tick(); // polls now: the peer is there
            drop(c);
            std::thread::sleep(Duration::from_millis(5));
            watch_tick(); // within the interval: no poll, so the close is not seen yet
            assert!(!stop.load(Ordering::Acquire));
            // A nested watch (no socket) takes over, then hands back.
            watch(&stop2, &gone2, None, watch_tick);
            std::thread::sleep(WATCH_POLL_EVERY);
            watch_tick();
            assert!(stop.load(Ordering::Acquire) && gone.load(Ordering::Acquire));
        });
        assert!(!stop2.load(Ordering::Acquire) && !gone2.load(Ordering::Acquire));
    }

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
