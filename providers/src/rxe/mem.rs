//! Raw memory the rxe provider touches outside its own heap: the kernel's ring mappings
//! ([`Mapping`]) and the application's buffers read for INLINE sends ([`UserMemory`]).

use std::os::fd::{AsRawFd, BorrowedFd};
use std::ptr::NonNull;

use uverbs::error::{Error, Result};
use uverbs::wr::Sge;

use super::layout::{MMINFO_OFFSET, MMINFO_SIZE};
use super::queue::RingMem;
use super::wqe::{InlineSource, WqeError};

/// The `struct mminfo` a create response carries: where to mmap a ring on the uverbs fd.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct MmInfo {
    pub offset: u64,
    pub size: u32,
}

impl MmInfo {
    /// Parse the 16-byte `mminfo` at `at` in a driver response.
    pub fn parse(resp: &[u8], at: usize, what: &str) -> Result<MmInfo> {
        let b = resp.get(at..at + 16).ok_or_else(|| {
            Error::msg(
                format!("parse the rxe {what} response"),
                format!(
                    "driver response of {} bytes has no mminfo at {at}",
                    resp.len()
                ),
            )
        })?;
        let offset = u64::from_ne_bytes(
            b[MMINFO_OFFSET..MMINFO_OFFSET + 8]
                .try_into()
                .unwrap_or([0; 8]),
        );
        let size = u32::from_ne_bytes(b[MMINFO_SIZE..MMINFO_SIZE + 4].try_into().unwrap_or([0; 4]));
        Ok(MmInfo { offset, size })
    }
}

/// A shared, read-write mapping of one rxe ring, unmapped on drop. `uverbs` destroys the kernel
/// object before it drops the provider object that owns this, so the kernel is done with the
/// ring by then.
pub struct Mapping {
    ptr: NonNull<u8>,
    len: usize,
}

// SAFETY: the mapping is plain shared memory with no thread affinity; access discipline is
// the ring's (Producer/Consumer take &mut self).
unsafe impl Send for Mapping {}
// SAFETY: &Mapping hands out only the raw pointer and length.
unsafe impl Sync for Mapping {}

impl Mapping {
    /// mmap `mi.size` bytes at cookie `mi.offset` of the uverbs fd, PROT_READ|PROT_WRITE,
    /// MAP_SHARED. Always read-write: a read-only map consumes the single-use cookie and the
    /// CQ consumer index could then never be written (docs/rxe-kernel.md, "E6 ring mappings
    /// are read-write").
    ///
    /// # Safety
    /// Nothing else in this process may access the mapped pages except through the ring protocol
    /// (the kernel on the other side). For a uverbs fd and an `mminfo` from a create response
    /// this holds: the kernel hands each cookie out once and refuses a second map. For any other
    /// fd (a memfd in tests) the caller guarantees it, as with any shared file mapping.
    pub unsafe fn map(fd: BorrowedFd<'_>, mi: MmInfo, what: &str) -> Result<Mapping> {
        let step = || format!("mmap the rxe {what} ring");
        if mi.size == 0 {
            return Err(Error::msg(
                step(),
                "the kernel returned an empty mminfo (size 0)",
            ));
        }
        let off = libc::off_t::try_from(mi.offset).map_err(|_| {
            Error::msg(
                step(),
                format!("mmap offset {:#x} does not fit off_t", mi.offset),
            )
        })?;
        let len = mi.size as usize;
        // SAFETY: a fresh mapping chosen by the kernel (addr NULL), so no existing memory is
        // affected; the arguments are plain values; the result is checked for MAP_FAILED.
        let p = unsafe {
            libc::mmap(
                core::ptr::null_mut(),
                len,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_SHARED,
                fd.as_raw_fd(),
                off,
            )
        };
        if p == libc::MAP_FAILED {
            return Err(Error::last_os(step()).with_hint(
                "each rxe ring cookie maps once, read-write, at most its size; EINVAL here usually means a reused or foreign cookie",
            ));
        }
        let ptr =
            NonNull::new(p as *mut u8).ok_or_else(|| Error::msg(step(), "mmap returned NULL"))?;
        Ok(Mapping { ptr, len })
    }
}

impl Drop for Mapping {
    fn drop(&mut self) {
        // SAFETY: ptr/len are exactly what mmap returned; nothing borrows the mapping any more
        // (the ring that owned this value is being dropped with it).
        unsafe {
            libc::munmap(self.ptr.as_ptr() as *mut libc::c_void, self.len);
        }
    }
}

// SAFETY: the pointer is the start of a live page-aligned mapping of `len` bytes that stays
// mapped until drop; the kernel touches the indices with smp_load_acquire/smp_store_release and
// the slots only inside its side of the ring.
unsafe impl RingMem for Mapping {
    fn base(&self) -> *mut u8 {
        self.ptr.as_ptr()
    }
    fn len_bytes(&self) -> usize {
        self.len
    }
}

/// The application's own memory, read for INLINE sends.
///
/// The verbs contract (as with `ibv_post_send`): the SGEs of an INLINE request name memory the
/// caller owns and can read for the duration of the call. The provider cannot check that: an
/// INLINE SGE is not looked up in any MR by the kernel — the bytes are copied here. Callers that
/// build SGEs from untrusted input must not set INLINE.
pub struct UserMemory {
    _contract: (),
}

impl UserMemory {
    /// # Safety
    /// Every SGE later handed to [`InlineSource::copy`] through this value must name memory that
    /// is readable for its whole length for the duration of the call.
    pub unsafe fn new() -> Self {
        UserMemory { _contract: () }
    }
}

impl InlineSource for UserMemory {
    #[inline]
    fn copy(&self, sge: &Sge, dst: &mut [u8]) -> Result<(), WqeError> {
        if dst.is_empty() {
            return Ok(());
        }
        if sge.addr == 0 {
            return Err(WqeError::InlineSource("SGE address is NULL"));
        }
        let fits =
            matches!(sge.addr.checked_add(dst.len() as u64), Some(e) if e <= usize::MAX as u64);
        if !fits {
            return Err(WqeError::InlineSource("SGE range wraps the address space"));
        }
        // SAFETY: per the verbs contract above, [addr, addr + length) is readable memory of the
        // caller for this call; it cannot overlap `dst`, which is a ring slot of ours.
        unsafe {
            core::ptr::copy_nonoverlapping(
                sge.addr as usize as *const u8,
                dst.as_mut_ptr(),
                dst.len(),
            )
        };
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mminfo_parse() {
        let mut b = [0u8; 32];
        b[16..24].copy_from_slice(&0x1c000u64.to_ne_bytes());
        b[24..28].copy_from_slice(&0x3000u32.to_ne_bytes());
        assert_eq!(
            MmInfo::parse(&b, 16, "sq").unwrap(),
            MmInfo {
                offset: 0x1c000,
                size: 0x3000
            }
        );
        assert!(MmInfo::parse(&b, 20, "sq").is_err());
        assert!(MmInfo::parse(&[], 0, "cq").is_err());
    }

    #[test]
    fn user_memory_inline() {
        let src = *b"hello, rdma";
        let sge = Sge {
            addr: src.as_ptr() as u64,
            length: 5,
            lkey: 0,
        };
        let mut dst = [0u8; 5];
        // SAFETY: the one SGE copied through it names `src`, alive and readable for 5 bytes.
        unsafe { UserMemory::new() }.copy(&sge, &mut dst).unwrap();
        assert_eq!(&dst, b"hello");
        // SAFETY: `copy` refuses a NULL address before it reads: this SGE is never read.
        assert!(unsafe { UserMemory::new() }
            .copy(
                &Sge {
                    addr: 0,
                    length: 1,
                    lkey: 0
                },
                &mut [0u8; 1]
            )
            .is_err());
        // SAFETY: `copy` refuses a range that wraps the address space before it reads: this SGE
        // is never read.
        assert!(unsafe { UserMemory::new() }
            .copy(
                &Sge {
                    addr: u64::MAX - 1,
                    length: 4,
                    lkey: 0
                },
                &mut [0u8; 4]
            )
            .is_err());
    }

    #[test]
    fn map_on_a_non_uverbs_fd_fails_cleanly() {
        // A pipe cannot be mapped: the error is an errno, not a crash.
        let mut fds = [0i32; 2];
        // SAFETY: fds is a valid 2-int array.
        assert_eq!(unsafe { libc::pipe(fds.as_mut_ptr()) }, 0);
        // SAFETY: fds[0] is open and stays open for this test.
        let fd = unsafe { BorrowedFd::borrow_raw(fds[0]) };
        let mi = MmInfo {
            offset: 0x1000,
            size: 4096,
        };
        // SAFETY: the map fails (a pipe cannot be mapped), so nothing is shared.
        let e = unsafe { Mapping::map(fd, mi, "completion queue") }
            .err()
            .unwrap();
        assert!(e.errno.is_some(), "{e}");
        // SAFETY: refused before any mmap (size 0).
        assert!(unsafe { Mapping::map(fd, MmInfo { offset: 0, size: 0 }, "cq") }.is_err());
        // SAFETY: closing the fds this test opened.
        unsafe {
            libc::close(fds[0]);
            libc::close(fds[1]);
        }
    }
}
