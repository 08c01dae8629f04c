//! Doorbells and the two pages bnxt_re maps from the uverbs fd: the doorbell page (DPI, mmap
//! offset from ALLOC_PD) and the shared page (offset 0, where the kernel leaves a new AH's id).
//!
//! A doorbell is one 64-bit little-endian store: the low word the queue index (20 bits), the
//! high word the queue id (20 bits) and the queue type (bits 28..32), as rdma-core 44 writes it
//! for every chip. Gen P7 (Thor 2) chips get rdma-core 50's format ([`doorbell_p7`]): epoch,
//! toggle and valid bits besides, and a CQ's toggle page ([`Page::toggle_mem`]) that the kernel
//! offers for those chips only. No byte oracle covers that format (libbnxt_re 44 predates it).
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

/// The gen P7 doorbell: `epoch` the queue's epoch bit, `toggle` the CQ toggle (arms only, 0
/// otherwise), and the valid bit set.
pub fn doorbell_p7(indx: u32, epoch: bool, toggle: u32, qid: u32, typ: u32) -> u64 {
    use super::hw::{DB_EPOCH_SHIFT, DB_TOGGLE_SHIFT, DB_VALID_SHIFT};
    let lo = (indx & 0xff_ffff) | u32::from(epoch) << DB_EPOCH_SHIFT | toggle << DB_TOGGLE_SHIFT;
    let hi = (qid & 0xf_ffff) | 1 << DB_VALID_SHIFT | (typ & 0xf) << 28;
    lo as u64 | (hi as u64) << 32
}

/// GET_TOGGLE_MEM as libbnxt_re 50 calls it: the new handle, the resource type and id, then
/// the mmap offset (8 bytes), length and offset in the page (4 each).
fn toggle_mem_method<'a>(ty: &'a [u8], id: &'a [u8]) -> uverbs::cmd::DriverMethod<'a> {
    use super::abi::toggle_mem as t;
    uverbs::cmd::DriverMethod {
        name: "bnxt_re GET_TOGGLE_MEM",
        object: t::OBJECT,
        method: t::METHOD,
        idr_new: Some(t::ATTR_HANDLE),
        idr_in: None,
        ins: vec![(t::ATTR_TYPE, ty), (t::ATTR_RES_ID, id)],
        outs: vec![
            (t::ATTR_MMAP_PAGE, 8),
            (t::ATTR_MMAP_LENGTH, 4),
            (t::ATTR_MMAP_OFFSET, 4),
        ],
    }
}

/// A page mapped from the uverbs fd.
pub trait Page: Send + Sync + Sized + 'static {
    fn map(fd: &SharedFd, offset: u64, len: usize, what: &str) -> Result<Self>;
    /// Map a page the kernel refuses to map writable (a CQ's toggle page: EFAULT otherwise);
    /// only [`Page::read32`] may be used on it.
    fn map_read_only(fd: &SharedFd, offset: u64, len: usize, what: &str) -> Result<Self> {
        Self::map(fd, offset, len, what)
    }
    /// Ring: one untorn 64-bit store at `off`, after every earlier store to queue memory.
    fn ring(&self, off: usize, v: u64);
    /// One 32-bit little-endian load at `off` (the shared page's AH id).
    fn read32(&self, off: usize) -> u32;
    /// MODIFY_QP of the kernel's QP `qp_handle` to RTS with nothing else in the mask (a UD QP
    /// in RTS stays there): libbnxt_re's workaround for a hardware stall of chips before Thor,
    /// issued every [`super::hw::UD_QP_HW_STALL`] UD send WQEs. Called on the doorbell page.
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
    /// GET_TOGGLE_MEM for CQ `cqid` (the kernel offered its toggle page at CREATE_CQ): the
    /// mmap offset and length of the page. The kernel's toggle-mem object lives as long as the
    /// context, as with libbnxt_re (which never releases it either).
    fn toggle_mem(fd: &SharedFd, cqid: u32) -> Result<(u64, usize)> {
        let (ty, id) = (
            super::abi::toggle_mem::TYPE_CQ.to_le_bytes(),
            cqid.to_le_bytes(),
        );
        let m = toggle_mem_method(&ty, &id);
        let fd = std::os::fd::AsFd::as_fd(&**fd);
        let r = uverbs::cmd::driver_method(fd, uverbs::sys::RDMA_DRIVER_BNXT_RE, &m)?;
        if let Some(e) = r.errno {
            return Err(uverbs::cmd::command_error("bnxt_re GET_TOGGLE_MEM", e));
        }
        let off = u64::from_le_bytes(r.outs[0][..8].try_into().unwrap_or([0; 8]));
        let len = u32::from_le_bytes(r.outs[1][..4].try_into().unwrap_or([0; 4])) as usize;
        if !(4..=1 << 21).contains(&len) {
            return Err(Error::msg(
                "bnxt_re GET_TOGGLE_MEM",
                format!("a toggle page of {len} bytes"),
            ));
        }
        Ok((off, len))
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

impl MmapPage {
    fn map_prot(fd: &SharedFd, offset: u64, len: usize, what: &str, prot: i32) -> Result<Self> {
        use std::os::fd::AsRawFd;
        // SAFETY: a shared mapping of the device file at the offset the kernel gave; checked.
        let p = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                len,
                prot,
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
}

impl Page for MmapPage {
    fn map(fd: &SharedFd, offset: u64, len: usize, what: &str) -> Result<Self> {
        Self::map_prot(fd, offset, len, what, libc::PROT_READ | libc::PROT_WRITE)
    }
    fn map_read_only(fd: &SharedFd, offset: u64, len: usize, what: &str) -> Result<Self> {
        Self::map_prot(fd, offset, len, what, libc::PROT_READ)
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

/// Where [`RecordingPage`]'s GET_TOGGLE_MEM puts a CQ's toggle page (its `offset`).
pub const RECORDED_TOGGLE_BASE: u64 = 0x7_0000_0000;

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
    /// Plays the kernel: the toggle page of CQ `cqid` at an offset of its own.
    fn toggle_mem(_fd: &SharedFd, cqid: u32) -> Result<(u64, usize)> {
        Ok((RECORDED_TOGGLE_BASE | u64::from(cqid) << 12, 4096))
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
    fn the_toggle_page_is_mapped_read_only() {
        // The kernel fails a writable mapping of a toggle page with EFAULT.
        let fd: SharedFd = std::sync::Arc::new(std::fs::File::open("/dev/zero").unwrap().into());
        let p = MmapPage::map_read_only(&fd, 0, 4096, "toggle page").unwrap();
        assert_eq!(p.read32(0), 0);
        let start = format!("{:x}-", p.ptr as usize);
        let maps = std::fs::read_to_string("/proc/self/maps").unwrap();
        let line = maps
            .lines()
            .find(|l| l.starts_with(&start))
            .expect("the mapping");
        assert!(line.split_whitespace().nth(1) == Some("r--s"), "{line}");
    }

    #[test]
    fn get_toggle_mem_is_encoded_as_the_kernel_declares_it() {
        let (ty, id) = (0u64.to_le_bytes(), 0x42u32.to_le_bytes());
        let m = toggle_mem_method(&ty, &id);
        let b = uverbs::cmd::encode_driver_method(6, &m, &[], &[0xa000, 0xb000, 0xc000]).unwrap();
        let u16_at = |o: usize| u16::from_le_bytes([b[o], b[o + 1]]);
        let u64_at = |o: usize| u64::from_le_bytes(b[o..o + 8].try_into().unwrap());
        // `struct ib_uverbs_ioctl_hdr`: length, object, method, attribute count; driver id.
        assert_eq!(
            (u16_at(0) as usize, u16_at(2), u16_at(4), u16_at(6)),
            (b.len(), 0x1002, 0x1000, 6)
        );
        assert_eq!(u32::from_le_bytes(b[16..20].try_into().unwrap()), 6);
        // Each `struct ib_uverbs_attr`: id, length, then the data (inline when 8 bytes or less).
        let attrs: Vec<(u16, u16, u64)> = (0..6)
            .map(|i| 24 + 16 * i)
            .map(|o| (u16_at(o), u16_at(o + 2), u64_at(o + 8)))
            .collect();
        assert_eq!(
            attrs[1..],
            [
                (0x1001, 8, 0),
                (0x1002, 4, 0x42),
                (0x1003, 8, 0xa000),
                (0x1005, 4, 0xb000),
                (0x1004, 4, 0xc000)
            ]
        );
        assert_eq!(attrs[0].0, 0x1000, "the new toggle-mem handle first");
    }

    #[test]
    fn gen_p7_doorbells_carry_epoch_toggle_and_valid() {
        // rdma-core 50's bnxt_re_init_db_hdr: index | epoch << 24 | toggle << 25; qid, valid
        // bit 26 and type << 28 in the high word.
        assert_eq!(
            doorbell_p7(0x12345, false, 0, 0x400, 0),
            0x0400_0400_0001_2345
        );
        assert_eq!(doorbell_p7(8, true, 0, 7, 0), 0x0400_0007_0100_0008);
        assert_eq!(doorbell_p7(3, true, 2, 7, 6), 0x6400_0007_0500_0003);
        assert_eq!(
            doorbell_p7(0xfff_ffff, false, 0, 0xfff_ffff, 0xff),
            0xf40f_ffff_00ff_ffff
        );
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
