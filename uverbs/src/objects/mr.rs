//! Memory: page-aligned mappings ([`MmapBuf`]) and registered memory regions ([`Mr`]).

use std::ptr::NonNull;
use std::sync::Arc;

use super::flags::AccessFlags;
use super::pd::Pd;
use super::report_drop;
use crate::cmd;
use crate::error::{Error, Result};
use crate::provider::Provider;

/// Huge page size assumed for [`MmapBuf`] with hugepages (the x86-64 default).
pub const HUGE_PAGE_SIZE: usize = 2 << 20;

/// The system page size (sysconf), 4096 if it cannot be read. Shared by the providers (UAR and
/// ring mappings) and the tools (perftest exchanges it with the peer).
pub fn page_size() -> usize {
    // SAFETY: sysconf has no memory-safety preconditions.
    let p = unsafe { libc::sysconf(libc::_SC_PAGESIZE) };
    if p > 0 {
        p as usize
    } else {
        4096
    }
}

/// A page-aligned mmap(2) mapping owned by this value, marked MADV_DONTFORK (registered memory
/// must not be copied-on-write into a child): anonymous zeroed memory ([`MmapBuf::new`]) or a
/// shared file mapping ([`MmapBuf::map_file`]).
pub struct MmapBuf {
    ptr: NonNull<u8>,
    len: usize,
}

// SAFETY: MmapBuf owns its mapping exclusively; the raw pointer is just its address.
unsafe impl Send for MmapBuf {}
// SAFETY: shared access only exposes the address and length, or raw copies via &self methods
// that the device may race with anyway (see `Mr`).
unsafe impl Sync for MmapBuf {}

impl MmapBuf {
    /// Map at least `len` bytes (rounded up to the page or huge page size).
    pub fn new(len: usize, hugepages: bool) -> Result<Self> {
        let what = if hugepages { "mmap hugepage buffer" } else { "mmap buffer" };
        let unit = if hugepages { HUGE_PAGE_SIZE } else { page_size() };
        let len = len.max(1).checked_next_multiple_of(unit).ok_or_else(|| Error::msg(what, "size overflows"))?;
        let mut flags = libc::MAP_PRIVATE | libc::MAP_ANONYMOUS;
        if hugepages {
            flags |= libc::MAP_HUGETLB;
        }
        // SAFETY: an anonymous private mapping at a kernel-chosen address; no existing memory is
        // affected.
        let p = unsafe { libc::mmap(std::ptr::null_mut(), len, libc::PROT_READ | libc::PROT_WRITE, flags, -1, 0) };
        if p == libc::MAP_FAILED && hugepages {
            return Err(Error::last_os(what)
                .with_hint(format!(
                    "no free huge pages: reserve some (echo N > /proc/sys/vm/nr_hugepages) or run without {}",
                    crate::knob::named(crate::knob::Knob::HugePages)
                )));
        }
        // SAFETY: `p` is mmap's answer for `len` bytes, checked for MAP_FAILED by `adopt`.
        unsafe { Self::adopt(p, len, what) }
    }

    /// Map `len` bytes of the file `path` from `offset` (a multiple of the page size),
    /// read-write and `MAP_SHARED` so that writes reach the file (perftest's `--mmap` buffer).
    /// The file must hold `offset + len` bytes: a mapping past the end of the file would raise
    /// SIGBUS on the first access instead of failing here.
    pub fn map_file(path: &std::path::Path, offset: u64, len: usize) -> Result<Self> {
        use std::os::fd::AsRawFd;
        let what = format!("mmap '{}'", path.display());
        let f = std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .open(path)
            .map_err(|e| Error::errno(format!("open '{}'", path.display()), e.raw_os_error().unwrap_or(libc::EIO)))?;
        let size = f
            .metadata()
            .map_err(|e| Error::errno(format!("stat '{}'", path.display()), e.raw_os_error().unwrap_or(libc::EIO)))?
            .len();
        let need = offset.checked_add(len as u64).ok_or_else(|| Error::msg(what.clone(), "offset + length overflows"))?;
        if size < need {
            return Err(Error::msg(
                what,
                format!("the file has {size} bytes, the buffer needs {len} bytes from offset {offset} ({need} bytes)"),
            ));
        }
        let ps = page_size() as u64;
        if !offset.is_multiple_of(ps) {
            return Err(Error::msg(what, format!("offset {offset} is not a multiple of the page size ({ps})")));
        }
        let off = libc::off_t::try_from(offset).map_err(|_| Error::msg(what.clone(), "offset too large"))?;
        let len = len.max(1);
        // SAFETY: a new shared mapping of an open file at a kernel-chosen address; no existing
        // memory is affected. The fd may be closed afterwards, the mapping keeps the file.
        let p = unsafe {
            libc::mmap(std::ptr::null_mut(), len, libc::PROT_READ | libc::PROT_WRITE, libc::MAP_SHARED, f.as_raw_fd(), off)
        };
        // SAFETY: `p` is mmap's answer for `len` bytes, checked for MAP_FAILED by `adopt`.
        unsafe { Self::adopt(p, len, &what) }
    }

    /// Take ownership of mmap's answer `p` for `len` bytes and mark it MADV_DONTFORK.
    ///
    /// # Safety
    /// `p` must be what mmap(2) just returned for a mapping of `len` bytes that nothing else owns.
    unsafe fn adopt(p: *mut libc::c_void, len: usize, what: &str) -> Result<Self> {
        if p == libc::MAP_FAILED {
            return Err(Error::last_os(what));
        }
        let ptr = NonNull::new(p.cast::<u8>()).ok_or_else(|| Error::msg(what, "mmap returned NULL"))?;
        // Owned from here on: an error below unmaps it.
        let buf = MmapBuf { ptr, len };
        // SAFETY: the range is exactly the mapping just created.
        let r = unsafe { libc::madvise(p, len, libc::MADV_DONTFORK) };
        if r != 0 {
            return Err(Error::last_os("madvise(MADV_DONTFORK)"));
        }
        Ok(buf)
    }
    pub fn as_ptr(&self) -> *mut u8 {
        self.ptr.as_ptr()
    }
    pub fn len(&self) -> usize {
        self.len
    }
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }
}

impl Drop for MmapBuf {
    fn drop(&mut self) {
        // SAFETY: unmapping exactly the mapping this value owns; no references into it outlive
        // `self`.
        unsafe { libc::munmap(self.ptr.as_ptr().cast(), self.len) };
    }
}

enum MrMem {
    Mmap(#[allow(dead_code)] MmapBuf),
    Vec(#[allow(dead_code)] Vec<u8>),
    Foreign,
}

/// A registered memory region. The memory is either owned by the `Mr` (an mmap'd buffer or a
/// `Vec`) or the caller's ([`Mr::register_raw`]).
///
/// The device may read or write the memory at any time while operations are in flight, so
/// access goes through raw copies ([`Mr::write_at`], [`Mr::read_at`]) rather than references.
pub struct Mr<P: Provider> {
    pd: Arc<Pd<P>>,
    handle: u32,
    lkey: u32,
    rkey: u32,
    addr: u64,
    len: usize,
    access: AccessFlags,
    _mem: MrMem,
}

impl<P: Provider> Mr<P> {
    /// Allocate a zeroed, page-aligned buffer of at least `len` bytes and register it.
    pub fn alloc(pd: &Arc<Pd<P>>, len: usize, access: AccessFlags, hugepages: bool) -> Result<Self> {
        let buf = MmapBuf::new(len, hugepages)?;
        let addr = buf.as_ptr() as u64;
        let full = buf.len();
        // SAFETY: the buffer is owned by the Mr and lives as long as the registration.
        unsafe { Self::register_inner(pd, addr, full, access, MrMem::Mmap(buf)) }
    }

    /// Map `len` bytes of the file `path` from `offset` (see [`MmapBuf::map_file`]) and register
    /// the mapping; the `Mr` keeps the mapping until it is deregistered.
    pub fn register_file(
        pd: &Arc<Pd<P>>,
        path: &std::path::Path,
        offset: u64,
        len: usize,
        access: AccessFlags,
    ) -> Result<Self> {
        let map = MmapBuf::map_file(path, offset, len)?;
        let addr = map.as_ptr() as u64;
        let n = map.len();
        // SAFETY: the mapping is owned by the Mr and lives as long as the registration.
        unsafe { Self::register_inner(pd, addr, n, access, MrMem::Mmap(map)) }
    }

    /// Register memory the `Mr` takes ownership of.
    pub fn register_vec(pd: &Arc<Pd<P>>, v: Vec<u8>, access: AccessFlags) -> Result<Self> {
        let addr = v.as_ptr() as u64;
        let len = v.len();
        // SAFETY: the Vec is owned by the Mr and never reallocated; it lives as long as the
        // registration.
        unsafe { Self::register_inner(pd, addr, len, access, MrMem::Vec(v)) }
    }

    /// Register the caller's memory `[addr, addr+len)`.
    ///
    /// # Safety
    /// The memory must stay mapped, and must not be reused for anything the device may
    /// corrupt, until this `Mr` is dropped.
    pub unsafe fn register_raw(pd: &Arc<Pd<P>>, addr: u64, len: usize, access: AccessFlags) -> Result<Self> {
        // SAFETY: forwarded to the caller.
        unsafe { Self::register_inner(pd, addr, len, access, MrMem::Foreign) }
    }

    /// Register `len` bytes of the dma-buf `fd` from `offset`, addressed by the device (and in
    /// work requests) as `iova`: GPU memory a driver exported (`cuMemGetHandleForAddressRange`),
    /// through MR.REG_DMABUF_MR. The kernel holds its own reference on the dma-buf, so `fd` may
    /// be closed afterwards. The memory is not the process's: [`Mr::write_at`], [`Mr::read_at`]
    /// and [`Mr::fill`] must not be used on such an MR unless `iova` is also a mapping of it in
    /// this process (the caller's contract, as with [`Mr::register_raw`]).
    pub fn register_dmabuf(
        pd: &Arc<Pd<P>>,
        fd: std::os::fd::BorrowedFd<'_>,
        offset: u64,
        len: usize,
        iova: u64,
        access: AccessFlags,
    ) -> Result<Self> {
        use std::os::fd::AsRawFd;
        let args = cmd::DmabufMrArgs {
            pd: pd.handle,
            fd: fd.as_raw_fd(),
            offset,
            length: len as u64,
            iova,
            access: access.bits(),
        };
        let r = cmd::reg_dmabuf_mr(&pd.ctx.cmd(), &args)?;
        Ok(Mr { pd: pd.clone(), handle: r.mr_handle, lkey: r.lkey, rkey: r.rkey, addr: iova, len, access, _mem: MrMem::Foreign })
    }

    /// # Safety
    /// `[addr, addr+len)` must be owned by `mem` or satisfy `register_raw`'s contract.
    unsafe fn register_inner(pd: &Arc<Pd<P>>, addr: u64, len: usize, access: AccessFlags, mem: MrMem) -> Result<Self> {
        let r = cmd::reg_mr(&pd.ctx.cmd(), addr, len as u64, addr, pd.handle, access.bits())?;
        Ok(Mr { pd: pd.clone(), handle: r.mr_handle, lkey: r.lkey, rkey: r.rkey, addr, len, access, _mem: mem })
    }

    pub fn handle(&self) -> u32 {
        self.handle
    }
    pub fn lkey(&self) -> u32 {
        self.lkey
    }
    pub fn rkey(&self) -> u32 {
        self.rkey
    }
    pub fn addr(&self) -> u64 {
        self.addr
    }
    pub fn len(&self) -> usize {
        self.len
    }
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }
    pub fn access(&self) -> AccessFlags {
        self.access
    }
    pub fn as_mut_ptr(&self) -> *mut u8 {
        self.addr as *mut u8
    }
    pub fn pd(&self) -> &Arc<Pd<P>> {
        &self.pd
    }

    fn check(&self, what: &str, off: usize, n: usize) -> Result<()> {
        match off.checked_add(n) {
            Some(end) if end <= self.len => Ok(()),
            _ => Err(Error::msg(what.to_string(), format!("range {off}+{n} beyond MR of {} bytes", self.len))),
        }
    }
    /// Copy `data` into the region at `off`.
    pub fn write_at(&self, off: usize, data: &[u8]) -> Result<()> {
        self.check("MR write", off, data.len())?;
        // SAFETY: the range is inside the registered memory (checked), which stays mapped while
        // `self` lives; a raw copy does not create references the device could invalidate.
        unsafe { std::ptr::copy_nonoverlapping(data.as_ptr(), self.as_mut_ptr().add(off), data.len()) };
        Ok(())
    }
    /// Copy bytes from the region at `off` into `out`.
    pub fn read_at(&self, off: usize, out: &mut [u8]) -> Result<()> {
        self.check("MR read", off, out.len())?;
        // SAFETY: as in `write_at`.
        unsafe { std::ptr::copy_nonoverlapping(self.as_mut_ptr().add(off), out.as_mut_ptr(), out.len()) };
        Ok(())
    }
    /// Fill the whole region with `byte`.
    pub fn fill(&self, byte: u8) {
        // SAFETY: exactly the registered range, mapped while `self` lives.
        unsafe { std::ptr::write_bytes(self.as_mut_ptr(), byte, self.len) };
    }
}

impl<P: Provider> Drop for Mr<P> {
    fn drop(&mut self) {
        // Deregister before the memory (`_mem`, dropped after this body) is unmapped.
        report_drop(cmd::dereg_mr(&self.pd.ctx.cmd(), self.handle));
    }
}

#[cfg(test)]
mod tests {
    use super::{page_size, MmapBuf};

    #[test]
    fn mmap_buf_is_page_aligned_and_zeroed() {
        let b = MmapBuf::new(100, false).unwrap();
        assert_eq!(b.as_ptr() as usize % page_size(), 0);
        assert_eq!(b.len(), page_size());
        // SAFETY: reading inside the fresh mapping.
        let first = unsafe { *b.as_ptr() };
        assert_eq!(first, 0);
    }

    #[test]
    fn file_map_is_shared_with_the_file_and_checks_its_size() {
        let ps = page_size();
        let path = std::env::temp_dir().join(format!("uverbs-filemap-{}", std::process::id()));
        std::fs::write(&path, vec![7u8; 3 * ps]).unwrap();
        // Too small: offset one page + 3 pages needs 4 pages, the file has 3.
        let e = MmapBuf::map_file(&path, ps as u64, 3 * ps).err().expect("accepted a too-small file").to_string();
        assert!(e.contains(&format!("the file has {} bytes", 3 * ps)) && e.contains(&format!("({} bytes)", 4 * ps)), "{e}");
        // Unaligned offset.
        let e = MmapBuf::map_file(&path, 10, 100).err().expect("accepted an unaligned offset").to_string();
        assert!(e.contains("not a multiple of the page size"), "{e}");
        assert!(MmapBuf::map_file(&path.with_extension("missing"), 0, 1).is_err());
        {
            let m = MmapBuf::map_file(&path, ps as u64, 2 * ps).unwrap();
            assert_eq!(m.len(), 2 * ps);
            // SAFETY: inside the fresh mapping.
            unsafe {
                assert_eq!(*m.as_ptr(), 7);
                *m.as_ptr() = 0xab;
            }
        }
        let back = std::fs::read(&path).unwrap();
        assert_eq!((back[ps - 1], back[ps], back[ps + 1]), (7, 0xab, 7));
        let _ = std::fs::remove_file(&path);
    }
}
