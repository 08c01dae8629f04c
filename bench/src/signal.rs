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
/// Write end / read end of a self-pipe: the handler writes one byte, so a thread can sleep in
/// poll(2) until a signal arrives instead of waking up periodically to look at [`STOP`]. The
/// byte is never read back: once stopped, the pipe stays readable for every waiter. -1 until
/// [`install`] ran (or if pipe2 failed; then waiters fall back to their own timeouts).
static WAKE_WR: AtomicI32 = AtomicI32::new(-1);
static WAKE_RD: AtomicI32 = AtomicI32::new(-1);

/// How often waits look at the stop flag (an OOB read or an accept wakes this often).
pub const POLL_SLICE: Duration = Duration::from_millis(200);

extern "C" fn on_signal(signo: libc::c_int) {
    // Only atomics and _exit: both are async-signal-safe.
    if STOP.swap(true, Ordering::SeqCst) {
        // SAFETY: _exit is async-signal-safe and takes no pointers.
        unsafe { libc::_exit(128 + signo) };
    }
    SIGNO.store(signo, Ordering::SeqCst);
    let fd = WAKE_WR.load(Ordering::SeqCst);
    if fd >= 0 {
        let b = 1u8;
        // SAFETY: write(2) is async-signal-safe; one byte from a local; a full or closed pipe
        // only makes the write fail, which is fine (the pipe is already readable then).
        unsafe { libc::write(fd, (&b as *const u8).cast(), 1) };
    }
}

/// Install the handler for SIGINT, SIGTERM and SIGHUP (once per process; later calls do
/// nothing). Without SA_RESTART, so a blocking read returns EINTR at once.
pub fn install() {
    if INSTALLED.swap(true, Ordering::SeqCst) {
        return;
    }
    let mut fds = [-1 as libc::c_int; 2];
    // SAFETY: pipe2 writes two fds into the local array.
    if unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC | libc::O_NONBLOCK) } == 0 {
        WAKE_RD.store(fds[0], Ordering::SeqCst);
        WAKE_WR.store(fds[1], Ordering::SeqCst);
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
    let fd = WAKE_WR.load(Ordering::SeqCst);
    if fd >= 0 {
        let b = 1u8;
        // SAFETY: one byte from a local into our own pipe.
        unsafe { libc::write(fd, (&b as *const u8).cast(), 1) };
    }
}

/// A fd that becomes readable (and stays so) once a stop was requested, for poll(2); None if
/// [`install`] has not run.
pub fn wake_fd() -> Option<std::os::fd::RawFd> {
    let fd = WAKE_RD.load(Ordering::SeqCst);
    (fd >= 0).then_some(fd)
}

/// A pipe that tells a watcher its watched work finished: [`DonePipe::notify`] makes
/// [`DonePipe::fd`] readable. Both ends close on drop.
pub struct DonePipe {
    rd: std::os::fd::OwnedFd,
    wr: std::os::fd::OwnedFd,
}

impl DonePipe {
    pub fn new() -> std::io::Result<DonePipe> {
        use std::os::fd::FromRawFd;
        let mut fds = [-1 as libc::c_int; 2];
        // SAFETY: pipe2 writes two fds into the local array.
        if unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) } != 0 {
            return Err(std::io::Error::last_os_error());
        }
        // SAFETY: pipe2 succeeded, so both fds are open and owned by nobody else.
        let (rd, wr) = unsafe { (std::os::fd::OwnedFd::from_raw_fd(fds[0]), std::os::fd::OwnedFd::from_raw_fd(fds[1])) };
        Ok(DonePipe { rd, wr })
    }
    /// The end to poll for readability.
    pub fn fd(&self) -> std::os::fd::RawFd {
        use std::os::fd::AsRawFd;
        self.rd.as_raw_fd()
    }
    /// Make [`DonePipe::fd`] readable.
    pub fn notify(&self) {
        use std::os::fd::AsRawFd;
        let b = 1u8;
        // SAFETY: one byte from a local into our own pipe's write end.
        unsafe { libc::write(self.wr.as_raw_fd(), (&b as *const u8).cast(), 1) };
    }
}

/// What ended a [`wait_for_stop_or_hangup`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Wake {
    /// A stop signal (or [`request_stop`]).
    Stop,
    /// The peer closed `sock`.
    HungUp,
    /// `done` became readable: the watched work finished.
    Done,
}

/// Sleep in the kernel until a stop is requested, the peer closes `sock` (POLLRDHUP; data
/// waiting to be read is not a close), or `done` becomes readable — with no periodic wake-ups,
/// which matter on a machine where every CPU is busy-polling (a watcher that wakes every few
/// milliseconds preempts a spinning test loop and shows up as latency outliers).
pub fn wait_for_stop_or_hangup(sock: Option<std::os::fd::RawFd>, done: std::os::fd::RawFd) -> Wake {
    loop {
        if requested() {
            return Wake::Stop;
        }
        let mut pfd = [
            libc::pollfd { fd: done, events: libc::POLLIN, revents: 0 },
            libc::pollfd { fd: wake_fd().unwrap_or(-1), events: libc::POLLIN, revents: 0 },
            libc::pollfd { fd: sock.unwrap_or(-1), events: libc::POLLRDHUP, revents: 0 },
        ];
        // Without the self-pipe (install not run), look at the flag once a second.
        let timeout = if wake_fd().is_some() { -1 } else { 1000 };
        // SAFETY: three valid pollfds on the stack (fd -1 entries are ignored by poll).
        let n = unsafe { libc::poll(pfd.as_mut_ptr(), 3, timeout) };
        if n <= 0 {
            continue; // EINTR (a signal: checked at the top) or the fallback timeout
        }
        if pfd[0].revents != 0 {
            return Wake::Done;
        }
        if requested() {
            return Wake::Stop;
        }
        if pfd[2].revents & (libc::POLLRDHUP | libc::POLLHUP | libc::POLLERR) != 0 {
            return Wake::HungUp;
        }
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
    fn watcher_wakes_on_done_and_on_hangup_without_polling() {
        let l = TcpListener::bind("127.0.0.1:0").unwrap();
        let c = TcpStream::connect(l.local_addr().unwrap()).unwrap();
        let (s, _) = l.accept().unwrap();
        // Data from the peer is not a hang-up; `done` ends the wait.
        (&c).write_all(b"x").unwrap();
        let done = DonePipe::new().unwrap();
        let (fd, dfd) = (s.as_raw_fd(), done.fd());
        let t = std::thread::spawn(move || wait_for_stop_or_hangup(Some(fd), dfd));
        std::thread::sleep(Duration::from_millis(50));
        done.notify();
        assert_eq!(t.join().unwrap(), Wake::Done);
        // The peer closes: HungUp.
        drop(c);
        let done2 = DonePipe::new().unwrap();
        assert_eq!(wait_for_stop_or_hangup(Some(s.as_raw_fd()), done2.fd()), Wake::HungUp);
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
