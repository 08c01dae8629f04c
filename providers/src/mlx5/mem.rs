//! Memory shared with the HCA: queue buffers and doorbell records.
//!
//! [`DmaBuf`] is a bounds-checked window onto a page-aligned allocation that the device reads
//! (send/receive queues, doorbell records) or writes (CQ). It is backed either by an anonymous
//! `mmap` (what the kernel pins for a real device) or by plain heap memory (tests and the device
//! model), and every access goes through the same checked methods, so the queue logic runs the
//! same on both.
//!
//! Accesses use raw-pointer copies (never a long-lived `&[u8]` over memory the device may write),
//! and the few places that must be single, untorn loads/stores (CQE owner byte, doorbell-record
//! words) use volatile operations.

use std::ptr::NonNull;

use uverbs::error::{Error, Result};

/// Allocation granule for queue buffers and doorbell records (the kernel pins whole pages).
pub const PAGE: usize = 4096;

enum Backing {
    Mmap,
    /// Heap memory of `u64`s, so the start is 8-byte aligned; used by tests / the device model.
    Heap(#[allow(dead_code)] Box<[u64]>),
}

/// The accessors of a queue that holds its buffer as `buf` and its doorbell record as `db`
/// (CQ, QP): a macro, so that callers keep plain inherent methods and need no trait import.
macro_rules! queue_mem_accessors {
    () => {
        /// Buffer and doorbell-record addresses (what the kernel was given).
        pub fn addrs(&self) -> (u64, u64) {
            (self.buf.addr(), self.db.addr())
        }
        /// The doorbell record as the device sees it (8 bytes).
        pub fn dbrec(&self) -> [u8; 8] {
            let mut b = [0u8; 8];
            self.db.read(0, &mut b);
            b
        }
        /// The queue buffer (tests and the device model play the HCA with this).
        pub fn buf(&self) -> &DmaBuf {
            &self.buf
        }
    };
}
pub(super) use queue_mem_accessors;

/// A page-aligned region of memory shared with the device.
pub struct DmaBuf {
    ptr: NonNull<u8>,
    len: usize,
    backing: Backing,
}

// SAFETY: DmaBuf owns its allocation; the raw pointer is not tied to a thread. Concurrent access
// from several threads is governed by the queue protocol of its owner (each ring has one writer).
unsafe impl Send for DmaBuf {}
// SAFETY: all shared-reference accesses are raw-pointer copies or volatile operations on memory
// that is also concurrently accessed by a DMA engine; the owners serialise their own accesses.
unsafe impl Sync for DmaBuf {}

impl DmaBuf {
    /// Anonymous, zeroed, page-aligned memory (`len` rounded up to pages), excluded from fork.
    pub fn alloc(len: usize, what: &str) -> Result<DmaBuf> {
        let len = len.max(1).div_ceil(PAGE) * PAGE;
        // SAFETY: anonymous private mapping with no address hint; the result is checked.
        let p = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                len,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_PRIVATE | libc::MAP_ANONYMOUS,
                -1,
                0,
            )
        };
        if p == libc::MAP_FAILED {
            return Err(Error::last_os(format!("allocate {what} ({len} bytes)")));
        }
        // The HCA keeps DMA-ing into these pages; a fork must not make them copy-on-write in the
        // parent (same as rdma-core's ibv_dontfork_range). Failure is harmless when nobody forks.
        // SAFETY: p/len is the mapping just created.
        unsafe { libc::madvise(p, len, libc::MADV_DONTFORK) };
        Ok(DmaBuf {
            ptr: NonNull::new(p.cast()).expect("mmap never returns null on success"),
            len,
            backing: Backing::Mmap,
        })
    }

    /// Zeroed heap memory (8-byte aligned), for tests and the device model: the same queue code
    /// runs on it, with no kernel involved.
    pub fn heap(len: usize) -> DmaBuf {
        let words = len.max(8).div_ceil(8);
        let mut b = vec![0u64; words].into_boxed_slice();
        let ptr = NonNull::new(b.as_mut_ptr().cast::<u8>()).expect("Box pointer is non-null");
        DmaBuf {
            ptr,
            len: words * 8,
            backing: Backing::Heap(b),
        }
    }

    pub fn len(&self) -> usize {
        self.len
    }
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }
    /// Virtual address of byte 0 (what the kernel is given as `buf_addr` / `db_addr`).
    pub fn addr(&self) -> u64 {
        self.ptr.as_ptr() as u64
    }

    #[inline]
    fn check(&self, off: usize, n: usize) {
        // A failed check is a bug in this module (all offsets are masked to ring sizes first),
        // never a reaction to device or peer data.
        assert!(
            off <= self.len && n <= self.len - off,
            "DmaBuf access {off}+{n} beyond {}",
            self.len
        );
    }

    /// Copy `src` into the buffer at `off`.
    #[inline]
    pub fn write(&self, off: usize, src: &[u8]) {
        self.check(off, src.len());
        // SAFETY: bounds checked above; src cannot overlap our private allocation.
        unsafe {
            std::ptr::copy_nonoverlapping(src.as_ptr(), self.ptr.as_ptr().add(off), src.len())
        }
    }

    /// Copy bytes at `off` out into `dst`.
    #[inline]
    pub fn read(&self, off: usize, dst: &mut [u8]) {
        self.check(off, dst.len());
        // SAFETY: bounds checked above.
        unsafe {
            std::ptr::copy_nonoverlapping(self.ptr.as_ptr().add(off), dst.as_mut_ptr(), dst.len())
        }
    }

    /// A single volatile byte load (the CQE `op_own` byte the device writes last).
    #[inline]
    pub fn read_u8_volatile(&self, off: usize) -> u8 {
        self.check(off, 1);
        // SAFETY: bounds checked.
        unsafe { std::ptr::read_volatile(self.ptr.as_ptr().add(off)) }
    }

    /// A single, untorn 32-bit store of a big-endian value (doorbell-record words). `off` must be
    /// 4-byte aligned (doorbell records are).
    #[inline]
    pub fn write_be32_volatile(&self, off: usize, v: u32) {
        self.check(off, 4);
        assert!(off & 3 == 0, "unaligned doorbell-record store at {off}");
        // SAFETY: bounds and alignment checked (the allocation is page- or 8-aligned).
        unsafe { std::ptr::write_volatile(self.ptr.as_ptr().add(off).cast::<u32>(), v.to_be()) }
    }

    /// A single 32-bit load, decoded from big-endian.
    #[inline]
    pub fn read_be32_volatile(&self, off: usize) -> u32 {
        self.check(off, 4);
        assert!(off & 3 == 0, "unaligned doorbell-record load at {off}");
        // SAFETY: bounds and alignment checked.
        u32::from_be(unsafe { std::ptr::read_volatile(self.ptr.as_ptr().add(off).cast::<u32>()) })
    }

    /// Eight native-endian 64-bit words at `off` (one bounds check for the block: the
    /// BlueFlame copy reads a whole 64-byte basic block per post).
    #[inline]
    pub fn read_u64x8(&self, off: usize) -> [u64; 8] {
        self.check(off, 64);
        // SAFETY: `off..off + 64` is inside the buffer (checked above); unaligned read of plain
        // bytes into an array of integers (every bit pattern is valid).
        unsafe { std::ptr::read_unaligned(self.ptr.as_ptr().add(off).cast::<[u64; 8]>()) }
    }

    /// An 8-byte native-order load at an 8-aligned offset (the BlueFlame source words).
    #[inline]
    pub fn read_u64(&self, off: usize) -> u64 {
        let mut b = [0u8; 8];
        self.read(off, &mut b);
        u64::from_ne_bytes(b)
    }

    /// Shared view of the `N` bytes at `off` (a software-owned CQE, decoded in place instead of
    /// copied out first).
    ///
    /// # Safety
    /// Nobody, CPU or device, may write that range for the lifetime of the reference. For a CQE:
    /// once its owner bit says software owns it, the device writes that slot again only after the
    /// consumer index moved past it, and the poller (`&mut` CQ) moves it only after the last use.
    #[inline]
    pub unsafe fn array_ref<const N: usize>(&self, off: usize) -> &[u8; N] {
        self.check(off, N);
        // SAFETY: `off..off + N` is inside the buffer (checked above); `[u8; N]` has alignment 1
        // and every bit pattern is valid; no writer during the borrow is the caller's contract.
        unsafe { &*self.ptr.as_ptr().add(off).cast::<[u8; N]>() }
    }

    /// Exclusive byte view of `off..off+len`.
    ///
    /// # Safety
    /// The caller must be the only one accessing that range for the lifetime of the slice (the
    /// device only reads it). Queue owners use this for the ring they alone write (SQ, RQ).
    #[inline]
    #[allow(clippy::mut_from_ref)] // exclusivity is the documented caller contract
    pub unsafe fn slice_mut(&self, off: usize, len: usize) -> &mut [u8] {
        self.check(off, len);
        // SAFETY: bounds checked; exclusivity is the caller's contract.
        unsafe { std::slice::from_raw_parts_mut(self.ptr.as_ptr().add(off), len) }
    }

    /// A snapshot copy of the whole buffer (tests).
    pub fn to_vec(&self) -> Vec<u8> {
        let mut v = vec![0u8; self.len];
        self.read(0, &mut v);
        v
    }
}

impl Drop for DmaBuf {
    fn drop(&mut self) {
        if let Backing::Mmap = self.backing {
            // SAFETY: ptr/len is the mapping created in `alloc`, unmapped once.
            unsafe { libc::munmap(self.ptr.as_ptr().cast(), self.len) };
        }
    }
}

impl std::fmt::Debug for DmaBuf {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "DmaBuf({:#x}, {} bytes)", self.addr(), self.len)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn heap_and_mmap_behave_alike() {
        for b in [DmaBuf::heap(100), DmaBuf::alloc(100, "test").unwrap()] {
            assert!(b.len() >= 100);
            b.write(8, &[1, 2, 3, 4]);
            let mut d = [0u8; 4];
            b.read(8, &mut d);
            assert_eq!(d, [1, 2, 3, 4]);
            b.write_be32_volatile(12, 0x0102_0304);
            assert_eq!(b.to_vec()[12..16], [1, 2, 3, 4]);
            assert_eq!(b.read_be32_volatile(12), 0x0102_0304);
        }
        assert_eq!(DmaBuf::alloc(1, "t").unwrap().addr() % PAGE as u64, 0);
    }

    #[test]
    #[should_panic]
    fn out_of_bounds_is_caught() {
        let b = DmaBuf::heap(16);
        b.write(10, &[0u8; 8]);
    }
}
