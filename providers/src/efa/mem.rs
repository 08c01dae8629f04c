//! The memory EFA shares with the device, all of it mapped from the uverbs fd at the keys the
//! kernel hands out: the LLQ (send descriptors, in the device's write-combined BAR), the RQ ring
//! (host memory the device reads), the CQ buffer (host memory the device writes) and the
//! doorbell pages.
//!
//! [`Region`] is that layer: [`MmapRegion`] on a device, [`HeapRegion`] in tests and in the
//! device model (heap memory that records every doorbell and lets a test play the device).
//! Every offset is checked against the mapping's length before use; the kernel's offsets are
//! checked again where a queue is set up ([`checked_db`]).

use std::sync::atomic::{fence, Ordering};
use std::sync::Mutex;

use uverbs::error::{Error, Result};
use uverbs::provider::SharedFd;

/// One mapping of the uverbs fd.
pub trait Region: Send + Sync + Sized + 'static {
    /// Map `len` bytes at mmap offset `key` (`prot_write`: the provider writes it; otherwise
    /// it only reads, as libefa maps the CQ).
    fn map(fd: &SharedFd, key: u64, len: usize, prot_write: bool, what: &str) -> Result<Self>;
    fn len(&self) -> usize;
    fn is_empty(&self) -> bool {
        self.len() == 0
    }
    /// Copy `b` to `off` (a descriptor: plain stores, in 64-bit units where `b` allows; a
    /// write-combined LLQ merges them). Not ordered against the device: [`Region::ring32`] is.
    fn write(&self, off: usize, b: &[u8]);
    /// A doorbell: one 32-bit store at `off`, after every earlier store to queue memory has
    /// reached the device.
    fn ring32(&self, off: usize, v: u32);
    /// The byte at `off` with Acquire ordering (a completion's phase byte: the rest of the
    /// entry is read only after it).
    fn read8_acquire(&self, off: usize) -> u8;
    /// Copy `out.len()` bytes from `off`.
    fn read(&self, off: usize, out: &mut [u8]);
}

fn in_bounds(off: usize, n: usize, len: usize) -> bool {
    off.checked_add(n).is_some_and(|end| end <= len)
}

/// A mapping on a device.
pub struct MmapRegion {
    ptr: *mut u8,
    len: usize,
}

// SAFETY: the pointer is a mapping owned by this value; the `&self` methods do volatile
// accesses of their own bounds-checked range, which the device tolerates from any thread (one
// thread drives a queue: the verbs layer hands the queue out by `&mut`).
unsafe impl Send for MmapRegion {}
// SAFETY: see above.
unsafe impl Sync for MmapRegion {}

impl Region for MmapRegion {
    fn map(fd: &SharedFd, key: u64, len: usize, prot_write: bool, what: &str) -> Result<Self> {
        use std::os::fd::AsRawFd;
        let prot = if prot_write {
            libc::PROT_WRITE
        } else {
            libc::PROT_READ
        };
        // SAFETY: a shared mapping of the device file at the key the kernel gave; the result
        // is checked, and the mapping is owned by the value returned.
        let p = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                len,
                prot,
                libc::MAP_SHARED,
                fd.as_raw_fd(),
                key as libc::off_t,
            )
        };
        if p == libc::MAP_FAILED {
            return Err(Error::last_os(format!(
                "mmap EFA {what} (key {key:#x}, {len} bytes)"
            )));
        }
        Ok(MmapRegion { ptr: p.cast(), len })
    }

    fn len(&self) -> usize {
        self.len
    }

    fn write(&self, off: usize, b: &[u8]) {
        assert!(
            in_bounds(off, b.len(), self.len),
            "EFA write of {} bytes at {off} outside the mapping",
            b.len()
        );
        let mut i = 0;
        // 64-bit stores where aligned (the LLQ's descriptors are 64-byte aligned, so all of a
        // TX descriptor goes this way, as libefa's mmio_memcpy_x64).
        while i + 8 <= b.len() && (off + i).is_multiple_of(8) {
            let v = u64::from_ne_bytes(b[i..i + 8].try_into().unwrap_or_default());
            // SAFETY: in bounds (checked above) and 8-byte aligned (mappings are page aligned).
            unsafe { std::ptr::write_volatile(self.ptr.add(off + i).cast::<u64>(), v) };
            i += 8;
        }
        for (j, &x) in b[i..].iter().enumerate() {
            // SAFETY: in bounds (checked above).
            unsafe { std::ptr::write_volatile(self.ptr.add(off + i + j), x) };
        }
    }

    fn ring32(&self, off: usize, v: u32) {
        assert!(
            in_bounds(off, 4, self.len) && off.is_multiple_of(4),
            "EFA doorbell at {off} outside its page"
        );
        // Queue memory (host stores, or write-combined LLQ stores) must reach the device before
        // it sees the doorbell: release fence, and sfence to drain write-combining buffers.
        fence(Ordering::Release);
        crate::mlx5::uar::sfence();
        // SAFETY: in bounds and aligned (checked); a live device mapping.
        unsafe { std::ptr::write_volatile(self.ptr.add(off).cast::<u32>(), v.to_le()) };
    }

    fn read8_acquire(&self, off: usize) -> u8 {
        assert!(
            in_bounds(off, 1, self.len),
            "EFA read at {off} outside the mapping"
        );
        // SAFETY: in bounds (checked); the device writes this memory, a volatile load sees it.
        let v = unsafe { std::ptr::read_volatile(self.ptr.add(off)) };
        // What the device wrote before this byte is read after it (libefa's
        // udma_from_device_barrier after the phase check).
        fence(Ordering::Acquire);
        v
    }

    fn read(&self, off: usize, out: &mut [u8]) {
        assert!(
            in_bounds(off, out.len(), self.len),
            "EFA read of {} bytes at {off} outside the mapping",
            out.len()
        );
        for (i, o) in out.iter_mut().enumerate() {
            // SAFETY: in bounds (checked).
            *o = unsafe { std::ptr::read_volatile(self.ptr.add(off + i)) };
        }
    }
}

impl Drop for MmapRegion {
    fn drop(&mut self) {
        // SAFETY: unmapping the mapping this value owns.
        unsafe { libc::munmap(self.ptr.cast(), self.len) };
    }
}

/// Heap memory in a mapping's place: records the key it was mapped at and every doorbell, and
/// lets a test or a device model read what the provider wrote and write what a device would.
/// Each map is also logged (per thread: tests run side by side) for [`HeapRegion::take_maps`].
pub struct HeapRegion {
    pub key: u64,
    pub prot_write: bool,
    bytes: Mutex<Vec<u8>>,
    doorbells: Mutex<Vec<(usize, u32)>>,
}

/// One mapping as a test sees it: key, length, writable (else read-only).
pub type MapRecord = (u64, usize, bool);

thread_local! {
    static MAPS: std::cell::RefCell<Vec<MapRecord>> = const { std::cell::RefCell::new(Vec::new()) };
}

impl HeapRegion {
    /// The mappings this thread made so far, oldest first, and forget them.
    pub fn take_maps() -> Vec<MapRecord> {
        MAPS.with(|m| std::mem::take(&mut *m.borrow_mut()))
    }
    fn lock(&self) -> std::sync::MutexGuard<'_, Vec<u8>> {
        self.bytes.lock().unwrap_or_else(|e| e.into_inner())
    }
    /// The doorbells rung so far (offset, value), oldest first, and forget them.
    pub fn take_doorbells(&self) -> Vec<(usize, u32)> {
        std::mem::take(&mut *self.doorbells.lock().unwrap_or_else(|e| e.into_inner()))
    }
    /// A copy of the whole region.
    pub fn snapshot(&self) -> Vec<u8> {
        self.lock().clone()
    }
    /// Play the device: put `b` at `off` (in bounds, or the test is wrong).
    pub fn device_write(&self, off: usize, b: &[u8]) {
        self.lock()[off..off + b.len()].copy_from_slice(b);
    }
}

impl Region for HeapRegion {
    fn map(_fd: &SharedFd, key: u64, len: usize, prot_write: bool, _what: &str) -> Result<Self> {
        MAPS.with(|m| m.borrow_mut().push((key, len, prot_write)));
        Ok(HeapRegion {
            key,
            prot_write,
            bytes: Mutex::new(vec![0; len]),
            doorbells: Mutex::default(),
        })
    }
    fn len(&self) -> usize {
        self.lock().len()
    }
    fn write(&self, off: usize, b: &[u8]) {
        self.lock()[off..off + b.len()].copy_from_slice(b);
    }
    fn ring32(&self, off: usize, v: u32) {
        self.lock()[off..off + 4].copy_from_slice(&v.to_le_bytes());
        self.doorbells
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .push((off, v));
    }
    fn read8_acquire(&self, off: usize) -> u8 {
        self.lock()[off]
    }
    fn read(&self, off: usize, out: &mut [u8]) {
        out.copy_from_slice(&self.lock()[off..off + out.len()]);
    }
}

/// A doorbell the kernel placed at `off` in a page of `page` bytes: a 4-byte aligned word
/// inside it, or an error naming what the kernel gave.
pub fn checked_db(off: u32, page: usize, what: &str) -> Result<usize> {
    let o = off as usize;
    if !in_bounds(o, 4, page) || !o.is_multiple_of(4) {
        return Err(Error::msg(
            format!("EFA {what}"),
            format!("the kernel placed the doorbell at offset {off:#x}, outside a {page}-byte page or unaligned"),
        ));
    }
    Ok(o)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn doorbell_offsets_checked() {
        assert_eq!(checked_db(0x10, 4096, "SQ").unwrap(), 0x10);
        assert_eq!(checked_db(4092, 4096, "SQ").unwrap(), 4092);
        assert!(checked_db(4093, 4096, "SQ").is_err());
        assert!(checked_db(4096, 4096, "SQ").is_err());
        assert!(checked_db(2, 4096, "SQ").is_err());
        assert!(checked_db(u32::MAX, 4096, "SQ").is_err());
    }
}
