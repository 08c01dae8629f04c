//! How the rxe doorbell reaches the kernel: a plain `write()` of POST_SEND (what librxe does, the
//! default), or — an experiment, chosen by the program (`rperftest` reads `RPERFTEST_RXE_DOORBELL`
//! into a [`crate::settings::RxeConfig`]) — the same 32-byte write
//! submitted through io_uring (`IORING_OP_WRITE` on the uverbs fd), optionally with SQPOLL so
//! that the hot path makes no syscall at all. docs/benchmarks.md records what it measured.
//!
//! io_uring reads the command asynchronously, so each QP handle gets one persistent command
//! buffer (the POST_SEND bytes never change for a handle: no work requests, a fixed response
//! address), kept until the ring is torn down; teardown waits for every submitted write first.
//! Completions are reaped lazily, at the next doorbell; a failed write is reported there.

use std::os::fd::{AsRawFd, BorrowedFd, RawFd};
use std::ptr::NonNull;

use io_uring::{opcode, types, IoUring};
use uverbs::cmd::encode_post_send_doorbell;
use uverbs::error::{Error, Result};

/// Submission queue entries (one per doorbell in flight; the SQPOLL thread drains them).
const SQ_ENTRIES: u32 = 64;
/// How long the SQPOLL kernel thread spins without work before it sleeps (ms).
const SQPOLL_IDLE_MS: u32 = 50;

pub use crate::settings::{DoorbellMode, RxeConfig};

/// The program's choice of doorbell in `config` (default `write`); a choice it did not
/// understand is refused here, when an rxe context is opened.
pub fn chosen_mode(config: &RxeConfig) -> Result<DoorbellMode> {
    config.doorbell.clone().map_err(|e| Error::msg("choose the rxe doorbell", e))
}

/// One QP handle's POST_SEND command and the word the kernel writes its response into.
#[repr(C, align(8))]
struct DbCmd {
    cmd: [u8; 32],
    resp: u32,
}

/// The io_uring doorbell of one rxe context.
pub struct UringDoorbell {
    ring: IoUring,
    fd: RawFd,
    /// The uverbs fd is registered as fixed file 0 (saves an fget per write).
    fixed: bool,
    sqpoll: bool,
    /// Persistent command buffers by QP handle. Owned through raw pointers because the kernel
    /// writes `resp` asynchronously; freed only in Drop, after every submitted write completed.
    cmds: Vec<(u32, NonNull<DbCmd>)>,
    /// Writes submitted whose completion was not reaped yet.
    inflight: u32,
    /// The first failed write seen while reaping, reported by the next doorbell.
    failed: Option<Error>,
}

// SAFETY: the raw pointers are heap buffers owned by this value alone (nothing else refers to
// them on our side); the kernel's accesses do not depend on which thread owns the value.
unsafe impl Send for UringDoorbell {}

fn os_err(what: &str, e: std::io::Error) -> Error {
    Error::msg(what.to_string(), e.to_string())
}

impl UringDoorbell {
    /// Set up the ring for `fd` (the context's uverbs fd, which must outlive this value).
    /// Puts the fd in O_NONBLOCK mode: a uverbs fd has no FMODE_NOWAIT, so without O_NONBLOCK
    /// io_uring hands every write to an io-wq worker thread instead of issuing it inline (the
    /// uverbs command fd has no read or poll, so nothing else sees the flag).
    pub fn new(fd: BorrowedFd<'_>, mode: DoorbellMode) -> Result<Self> {
        let sqpoll = mode == DoorbellMode::UringSqpoll;
        let mut b = IoUring::builder();
        if sqpoll {
            b.setup_sqpoll(SQPOLL_IDLE_MS);
        }
        let ring = b.build(SQ_ENTRIES).map_err(|e| {
            let mut err = os_err("set up io_uring for the rxe doorbell", e);
            if let Ok(v) = std::fs::read_to_string("/proc/sys/kernel/io_uring_disabled") {
                if v.trim() != "0" {
                    err = err.with_hint(format!("kernel.io_uring_disabled = {}", v.trim()));
                }
            }
            err
        })?;
        let raw = fd.as_raw_fd();
        // SAFETY: fcntl on a valid, borrowed fd; F_GETFL/F_SETFL take no pointers.
        let fl = unsafe { libc::fcntl(raw, libc::F_GETFL) };
        // SAFETY: as above.
        if fl < 0 || unsafe { libc::fcntl(raw, libc::F_SETFL, fl | libc::O_NONBLOCK) } < 0 {
            return Err(os_err("set O_NONBLOCK on the uverbs fd", std::io::Error::last_os_error()));
        }
        let fixed = ring.submitter().register_files(&[raw]).is_ok();
        Ok(UringDoorbell { ring, fd: raw, fixed, sqpoll, cmds: Vec::new(), inflight: 0, failed: None })
    }

    pub fn sqpoll(&self) -> bool {
        self.sqpoll
    }

    /// The persistent command for `handle` (built on first use).
    fn cmd_for(&mut self, handle: u32) -> NonNull<DbCmd> {
        if let Some(&(_, p)) = self.cmds.iter().find(|(h, _)| *h == handle) {
            return p;
        }
        let p = NonNull::from(Box::leak(Box::new(DbCmd { cmd: [0; 32], resp: 0 })));
        // SAFETY: p is a fresh allocation no one else sees yet.
        unsafe {
            let resp = core::ptr::addr_of_mut!((*p.as_ptr()).resp) as u64;
            (*p.as_ptr()).cmd = encode_post_send_doorbell(resp, handle);
        }
        self.cmds.push((handle, p));
        p
    }

    /// Take every completion there is; remember the first failure.
    fn reap(&mut self) {
        let mut cq = self.ring.completion();
        cq.sync();
        for cqe in &mut cq {
            self.inflight = self.inflight.saturating_sub(1);
            let r = cqe.result();
            if r != 32 && self.failed.is_none() {
                let detail = if r < 0 {
                    std::io::Error::from_raw_os_error(-r).to_string()
                } else {
                    format!("short write of {r} bytes")
                };
                self.failed = Some(
                    Error::msg(format!("POST_SEND doorbell for QP handle {} (io_uring)", cqe.user_data()), detail)
                        .with_hint(format!("retry with the {}", uverbs::knob::named(uverbs::knob::Knob::WriteDoorbell))),
                );
            }
        }
    }

    /// Ring the doorbell of `handle`.
    #[inline]
    pub fn ring(&mut self, handle: u32) -> Result<()> {
        self.reap();
        if let Some(e) = self.failed.take() {
            return Err(e);
        }
        let cq_cap = self.ring.params().cq_entries();
        while self.inflight >= cq_cap {
            // Never more writes in flight than the CQ holds.
            self.ring.submit_and_wait(1).map_err(|e| os_err("wait for io_uring doorbells", e))?;
            self.reap();
        }
        let cmd = self.cmd_for(handle);
        // SAFETY: only the address is taken; the buffer lives until Drop (see `cmds`).
        let buf = unsafe { core::ptr::addr_of!((*cmd.as_ptr()).cmd) } as *const u8;
        let sqe = if self.fixed {
            opcode::Write::new(types::Fixed(0), buf, 32)
        } else {
            opcode::Write::new(types::Fd(self.fd), buf, 32)
        }
        // -1: the file position is not used (uverbs is a stream file).
        .offset(u64::MAX)
        .build()
        .user_data(handle as u64);
        loop {
            // SAFETY: the SQE points at a 32-byte buffer that stays valid and unchanged until
            // its completion is reaped (it is freed only in Drop, after all are).
            let pushed = unsafe { self.ring.submission().push(&sqe) }.is_ok();
            if pushed {
                break;
            }
            // SQ full (the SQPOLL thread has not caught up): submit / wake it, then retry.
            self.ring.submit().map_err(|e| os_err("submit io_uring doorbells", e))?;
            std::hint::spin_loop();
        }
        self.inflight += 1;
        // Without SQPOLL this is io_uring_enter (the write runs inline); with SQPOLL it is a
        // syscall only when the kernel thread went to sleep and needs waking.
        self.ring.submit().map_err(|e| os_err("submit the io_uring doorbell", e))?;
        Ok(())
    }
}

impl Drop for UringDoorbell {
    fn drop(&mut self) {
        // Wait for every submitted write: the kernel may still read a command buffer.
        let mut tries = 0;
        while self.inflight > 0 && tries < 1000 {
            tries += 1;
            if self.ring.submit_and_wait(1).is_err() {
                std::thread::sleep(std::time::Duration::from_millis(1));
            }
            self.reap();
        }
        if self.inflight > 0 {
            // Leak rather than free memory the kernel may still read.
            return;
        }
        for (_, p) in self.cmds.drain(..) {
            // SAFETY: allocated by Box::leak in cmd_for, and no write that refers to it is
            // still in flight.
            drop(unsafe { Box::from_raw(p.as_ptr()) });
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn modes() {
        assert_eq!(DoorbellMode::parse("").unwrap(), DoorbellMode::Write);
        assert_eq!(DoorbellMode::parse("write").unwrap(), DoorbellMode::Write);
        assert_eq!(DoorbellMode::parse("uring").unwrap(), DoorbellMode::Uring);
        assert_eq!(DoorbellMode::parse("uring-sqpoll").unwrap(), DoorbellMode::UringSqpoll);
        assert!(DoorbellMode::parse("mmio").unwrap_err().contains("write, uring or uring-sqpoll"));
    }

    /// The io_uring path end to end over a pipe instead of a uverbs fd: the 32 command bytes
    /// arrive intact, once per doorbell, and the buffers survive until the writes complete.
    #[test]
    fn uring_writes_the_command_over_a_pipe() {
        let mut fds = [0i32; 2];
        // SAFETY: pipe2 fills two fds.
        assert_eq!(unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) }, 0);
        // SAFETY: fresh fds we own.
        let (r, w) = unsafe {
            use std::os::fd::FromRawFd;
            (std::os::fd::OwnedFd::from_raw_fd(fds[0]), std::os::fd::OwnedFd::from_raw_fd(fds[1]))
        };
        use std::os::fd::AsFd;
        // No early return where io_uring is missing: a pass must mean the path ran. Every
        // machine the project tests on has io_uring; one without it fails here, named.
        let mut db = UringDoorbell::new(w.as_fd(), DoorbellMode::Uring)
            .unwrap_or_else(|e| panic!("this test needs io_uring, which this kernel refused: {e}"));
        for _ in 0..3 {
            db.ring(7).unwrap();
        }
        db.ring(9).unwrap();
        drop(db);
        let mut got = [0u8; 4 * 32];
        let mut off = 0;
        while off < got.len() {
            // SAFETY: reading into our own buffer.
            let n = unsafe { libc::read(r.as_raw_fd(), got[off..].as_mut_ptr().cast(), got.len() - off) };
            assert!(n > 0);
            off += n as usize;
        }
        for (i, c) in got.chunks(32).enumerate() {
            assert_eq!(&c[..8], &[0x1c, 0, 0, 0, 8, 0, 1, 0]);
            let handle = u32::from_le_bytes([c[16], c[17], c[18], c[19]]);
            assert_eq!(handle, if i < 3 { 7 } else { 9 });
        }
    }
}
