//! Doorbells and the two pages bnxt_re maps from the uverbs fd: the doorbell page (DPI, mmap
//! offset from ALLOC_PD) and the shared page (offset 0, where the kernel leaves a new AH's id).
//!
//! A doorbell is one 64-bit little-endian store: the low word the queue index (20 bits), the
//! high word the queue id (20 bits) and the queue type (bits 28..32). rdma-core 44 has no
//! epoch or toggle bits in it (the kernel uAPI of that age has no toggle page either).
//!
//! [`Page`] is the device-access layer of the data path: [`MmapPage`] on a device,
//! [`RecordingPage`] in tests (heap memory that logs every doorbell). Besides the doorbells it
//! issues the one command a post may need, libbnxt_re's UD "RTS to RTS" (see [`Page::rts_again`]),
//! so that tests can see it where a real kernel would act on it.

use std::sync::Mutex;

use uverbs::error::{Error, Result};
use uverbs::provider::SharedFd;

/// The doorbell value for queue `qid` of type `typ` (`super::hw::dbtype`) at index `indx`.
pub fn doorbell(indx: u32, qid: u32, typ: u32) -> u64 {
    let hi = (qid & 0xf_ffff) | (typ & 0xf) << 28;
    (indx & 0xf_ffff) as u64 | (hi as u64) << 32
}

/// A page mapped from the uverbs fd.
pub trait Page: Send + Sync + Sized + 'static {
    fn map(fd: &SharedFd, offset: u64, len: usize, what: &str) -> Result<Self>;
    /// Ring: one untorn 64-bit store at `off`, after every earlier store to queue memory.
    fn ring(&self, off: usize, v: u64);
    /// One 32-bit little-endian load at `off` (the shared page's AH id).
    fn read32(&self, off: usize) -> u32;
    /// MODIFY_QP of the kernel's QP `qp_handle` to RTS with nothing else in the mask (a UD QP
    /// in RTS stays there): libbnxt_re's workaround for a hardware stall, issued every
    /// [`super::hw::UD_QP_HW_STALL`] UD send WQEs. Called on the doorbell page.
    fn rts_again(&self, fd: &SharedFd, qp_handle: u32) -> Result<()> {
        let req = uverbs::sys::ModifyQp {
            qp_handle,
            attr_mask: uverbs::sys::qp_attr::STATE,
            qp_state: uverbs::provider::QpState::Rts as u8,
            ..Default::default()
        };
        let cmd = uverbs::cmd::Cmd {
            fd: std::os::fd::AsFd::as_fd(&**fd),
            transport: uverbs::cmd::Transport::Write,
            driver_id: uverbs::sys::RDMA_DRIVER_BNXT_RE,
        };
        uverbs::cmd::modify_qp(&cmd, &req)
    }
}

/// The real page.
pub struct MmapPage {
    ptr: *mut u8,
    len: usize,
}

// SAFETY: the pointer is a mapping owned by this value; `&self` methods do single volatile
// accesses, which the device tolerates from any thread.
unsafe impl Send for MmapPage {}
// SAFETY: see above.
unsafe impl Sync for MmapPage {}

impl Page for MmapPage {
    fn map(fd: &SharedFd, offset: u64, len: usize, what: &str) -> Result<Self> {
        use std::os::fd::AsRawFd;
        // SAFETY: a shared mapping of the device file at the offset the kernel gave; checked.
        let p = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                len,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_SHARED,
                fd.as_raw_fd(),
                offset as libc::off_t,
            )
        };
        if p == libc::MAP_FAILED {
            return Err(Error::last_os(format!(
                "mmap bnxt_re {what} (offset {offset:#x}, {len} bytes)"
            )));
        }
        Ok(MmapPage { ptr: p.cast(), len })
    }

    fn ring(&self, off: usize, v: u64) {
        assert!(
            off + 8 <= self.len && off.is_multiple_of(8),
            "doorbell offset {off} outside the page"
        );
        // Queue entries (plain stores to DMA memory) must reach memory before the device sees
        // the doorbell: release fence, and sfence for any write-combining buffer on x86.
        std::sync::atomic::fence(std::sync::atomic::Ordering::Release);
        crate::mlx5::uar::sfence();
        // SAFETY: in bounds and aligned (checked); the page is a live device mapping.
        unsafe { std::ptr::write_volatile(self.ptr.add(off).cast::<u64>(), v.to_le()) };
        // Push the store out now rather than when the buffer happens to drain.
        crate::mlx5::uar::sfence();
    }

    fn read32(&self, off: usize) -> u32 {
        assert!(
            off + 4 <= self.len && off.is_multiple_of(4),
            "shared-page offset {off} outside the page"
        );
        // SAFETY: in bounds and aligned (checked); the kernel writes the word before CREATE_AH
        // returns, and the command's return orders that write before this load.
        u32::from_le(unsafe { std::ptr::read_volatile(self.ptr.add(off).cast::<u32>()) })
    }
}

impl Drop for MmapPage {
    fn drop(&mut self) {
        // SAFETY: unmapping the mapping this value owns.
        unsafe { libc::munmap(self.ptr.cast(), self.len) };
    }
}

/// A page in heap memory that records every doorbell (tests, the oracle comparison).
pub struct RecordingPage {
    pub offset: u64,
    words: Mutex<Vec<u32>>,
    log: Mutex<Vec<u64>>,
    /// RTS→RTS modifies asked for: the QP handle, and how many doorbells were rung before.
    modifies: Mutex<Vec<(u32, usize)>>,
    rung: Mutex<usize>,
}

impl RecordingPage {
    /// The doorbells rung so far, oldest first, and forget them.
    pub fn take(&self) -> Vec<u64> {
        std::mem::take(&mut *self.log.lock().unwrap_or_else(|e| e.into_inner()))
    }
    /// The RTS→RTS modifies asked for so far (QP handle, doorbells rung before it), and
    /// forget them.
    pub fn take_modifies(&self) -> Vec<(u32, usize)> {
        std::mem::take(&mut *self.modifies.lock().unwrap_or_else(|e| e.into_inner()))
    }
    /// Play the kernel: put `v` at `off` (the AH id).
    pub fn set32(&self, off: usize, v: u32) {
        self.words.lock().unwrap_or_else(|e| e.into_inner())[off / 4] = v;
    }
}

impl Page for RecordingPage {
    fn map(_fd: &SharedFd, offset: u64, len: usize, _what: &str) -> Result<Self> {
        Ok(RecordingPage {
            offset,
            words: Mutex::new(vec![0; len / 4]),
            log: Mutex::default(),
            modifies: Mutex::default(),
            rung: Mutex::default(),
        })
    }
    fn ring(&self, _off: usize, v: u64) {
        self.log.lock().unwrap_or_else(|e| e.into_inner()).push(v);
        *self.rung.lock().unwrap_or_else(|e| e.into_inner()) += 1;
    }
    fn rts_again(&self, _fd: &SharedFd, qp_handle: u32) -> Result<()> {
        let rung = *self.rung.lock().unwrap_or_else(|e| e.into_inner());
        self.modifies
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .push((qp_handle, rung));
        Ok(())
    }
    fn read32(&self, off: usize) -> u32 {
        self.words
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .get(off / 4)
            .copied()
            .unwrap_or(0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A page that keeps `Page`'s own `rts_again`, the one a device gets.
    struct Plain;
    impl Page for Plain {
        fn map(_: &SharedFd, _: u64, _: usize, _: &str) -> Result<Self> {
            Ok(Plain)
        }
        fn ring(&self, _: usize, _: u64) {}
        fn read32(&self, _: usize) -> u32 {
            0
        }
    }

    #[test]
    fn rts_again_writes_modify_qp_with_the_state_alone() {
        use std::io::Read;
        let (a, mut b) = std::os::unix::net::UnixStream::pair().unwrap();
        let fd: SharedFd = std::sync::Arc::new(a.into());
        Plain.rts_again(&fd, 0x1234).unwrap();
        let mut got = vec![0u8; 120];
        b.read_exact(&mut got).unwrap();
        // `struct ib_uverbs_cmd_hdr`: MODIFY_QP (26), 120 bytes in, nothing out; then
        // `struct ib_uverbs_modify_qp`: qp_handle at 64, attr_mask at 68 (IBV_QP_STATE),
        // qp_state at 96 (IBV_QPS_RTS), everything else zero.
        let mut want = vec![0u8; 120];
        want[0..4].copy_from_slice(&26u32.to_le_bytes());
        want[4..6].copy_from_slice(&30u16.to_le_bytes());
        want[8 + 64..8 + 68].copy_from_slice(&0x1234u32.to_le_bytes());
        want[8 + 68] = 1;
        want[8 + 96] = 3;
        assert_eq!(got, want);
    }

    #[test]
    fn doorbell_words() {
        assert_eq!(
            doorbell(0x12345, 0x400, 0).to_le_bytes(),
            [0x45, 0x23, 0x01, 0, 0x00, 0x04, 0, 0x00]
        );
        assert_eq!(doorbell(8, 0x7, 6), 0x6000_0007_0000_0008);
        assert_eq!(
            doorbell(0xfff_ffff, 0xfff_ffff, 0xff),
            0xf00f_ffff_000f_ffff
        );
    }
}
