//! UARs (User Access Regions): the MMIO pages through which we ring doorbells, and the BlueFlame
//! registers inside them.
//!
//! [`UarPlan`] is pure arithmetic from the GET_CONTEXT response: which pages to mmap (offsets),
//! where each bfreg and the CQ doorbell lives. [`UarWriter`] is the only way the provider touches
//! MMIO: a real implementation over the mmap'd pages ([`MmapUar`], volatile 8-byte stores and
//! `sfence`), and a recording one for tests ([`RecordingUar`]), which also lets a device model
//! react to each doorbell at the moment it is rung.
//!
//! UAR addresses are given as one flat offset: `page_index * page_size + offset_in_page`.

use std::sync::Mutex;

use uverbs::error::{Error, Result};
use uverbs::provider::SharedFd;

use super::abi::UctxResp;

/// `MLX5_BF_OFFSET`: first BlueFlame register inside a UAR.
pub const BF_OFFSET: usize = 0x800;
/// `MLX5_CQ_DOORBELL`: CQ arm doorbell inside UAR 0.
pub const CQ_DOORBELL: usize = 0x20;
/// bfregs per UAR in the gross numbering, of which the first two are usable.
pub const BFREGS_PER_UAR: u32 = 4;
pub const NON_FP_BFREGS_PER_UAR: u32 = 2;
/// mmap commands (`enum mlx5_ib_mmap_cmd`).
pub const MMAP_REGULAR_PAGE: u64 = 0;
pub const MMAP_NC_PAGE: u64 = 3;
pub const MMAP_CMD_SHIFT: u32 = 8;

/// Where things are in UAR space, derived from the GET_CONTEXT answer (static UAR mode).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct UarPlan {
    pub page_size: usize,
    pub uar_size: usize,
    pub uars_per_page: u32,
    pub num_pages: u32,
    /// `bf_reg_size`: each bfreg has two halves of `bf_reg_size / 2` used alternately.
    pub bf_reg_size: u32,
    /// BlueFlame enabled (device reports a BF size and the user did not disable it).
    pub blueflame: bool,
    /// mmap offsets of the pages, in page order.
    pub mmap_offsets: Vec<u64>,
}

impl UarPlan {
    pub fn new(r: &UctxResp, page_size: usize, blueflame: bool) -> Result<UarPlan> {
        let uar_size = if r.log_uar_size != 0 {
            1usize << r.log_uar_size
        } else {
            page_size
        };
        let uars_per_page = if r.num_uars_per_page != 0 {
            r.num_uars_per_page
        } else {
            1
        };
        if uar_size * uars_per_page as usize != page_size && r.log_uar_size != 0 {
            return Err(Error::msg(
                "plan mlx5 UAR mapping",
                format!(
                    "{uars_per_page} UARs of {uar_size} bytes do not fill a {page_size}-byte page"
                ),
            ));
        }
        let num_pages = r.tot_bfregs / (uars_per_page * NON_FP_BFREGS_PER_UAR);
        if num_pages == 0 || num_pages > 255 {
            return Err(Error::msg(
                "plan mlx5 UAR mapping",
                format!("{num_pages} UAR pages (tot_bfregs {})", r.tot_bfregs),
            ));
        }
        let blueflame = blueflame && r.bf_reg_size != 0;
        let cmd = if blueflame {
            MMAP_REGULAR_PAGE
        } else {
            MMAP_NC_PAGE
        };
        let mmap_offsets = (0..num_pages as u64)
            .map(|i| ((cmd << MMAP_CMD_SHIFT) | i) * page_size as u64)
            .collect();
        Ok(UarPlan {
            page_size,
            uar_size,
            uars_per_page,
            num_pages,
            bf_reg_size: r.bf_reg_size,
            blueflame,
            mmap_offsets,
        })
    }

    /// Flat UAR-space offset of the register for gross bfreg index `bfreg`.
    pub fn bfreg_offset(&self, bfreg: u32) -> Result<usize> {
        let uar = bfreg / BFREGS_PER_UAR;
        let k = bfreg % BFREGS_PER_UAR;
        let page = uar / self.uars_per_page;
        let j = uar % self.uars_per_page;
        if k >= NON_FP_BFREGS_PER_UAR || page >= self.num_pages {
            return Err(Error::msg(
                "map mlx5 QP doorbell",
                format!(
                    "kernel gave bfreg index {bfreg}, outside the {} mapped UAR pages",
                    self.num_pages
                ),
            ));
        }
        Ok(page as usize * self.page_size
            + j as usize * self.uar_size
            + BF_OFFSET
            + k as usize * self.bf_reg_size as usize)
    }

    /// Size of one BlueFlame half (0: no BlueFlame; doorbells only).
    pub fn bf_half(&self) -> usize {
        if self.blueflame {
            self.bf_reg_size as usize / 2
        } else {
            0
        }
    }

    /// Doorbell offsets still toggle between the halves without BlueFlame (as libmlx5 does).
    pub fn toggle(&self) -> usize {
        self.bf_reg_size as usize / 2
    }

    /// CQ arm doorbell: UAR page 0 + 0x20.
    pub fn cq_doorbell_offset(&self) -> usize {
        CQ_DOORBELL
    }
}

/// The MMIO layer. `be_value` / `src` words are given in memory order: `to_ne_bytes()` is the
/// byte sequence that appears on the bus.
pub trait UarWriter: Send + Sync + 'static {
    /// One 64-bit store at `offset` (doorbell, CQ arm).
    fn write64(&self, offset: usize, be_value: u64);
    /// BlueFlame: 8-byte stores of `src`, ascending, starting at `offset`.
    fn bf_copy(&self, offset: usize, src: &[u64]);
    /// `mmio_wc_start`: order the doorbell-record store (ordinary memory) before the following
    /// write-combining MMIO stores. x86-64: `sfence`.
    fn wc_start(&self);
    /// `mmio_flush_writes`: push the write-combining buffer out now, before anyone else may use
    /// this register. x86-64: `sfence`.
    fn flush(&self);
}

/// How a [`UarWriter`] comes to exist from the opened device.
pub trait UarMap: UarWriter + Sized {
    fn map(fd: &SharedFd, plan: &UarPlan) -> Result<Self>;
}

#[inline(always)]
pub(crate) fn sfence() {
    #[cfg(target_arch = "x86_64")]
    {
        // SAFETY: sfence has no preconditions (SSE is baseline on x86-64).
        #[allow(unused_unsafe)]
        unsafe {
            core::arch::x86_64::_mm_sfence()
        }
    }
    #[cfg(not(target_arch = "x86_64"))]
    std::sync::atomic::fence(std::sync::atomic::Ordering::SeqCst);
}

#[inline(always)]
pub(crate) fn lfence() {
    #[cfg(target_arch = "x86_64")]
    {
        // SAFETY: lfence has no preconditions (SSE2 is baseline on x86-64).
        #[allow(unused_unsafe)]
        unsafe {
            core::arch::x86_64::_mm_lfence()
        }
    }
    #[cfg(not(target_arch = "x86_64"))]
    std::sync::atomic::fence(std::sync::atomic::Ordering::Acquire);
}

/// The real UAR pages, mmap'd from the uverbs fd.
pub struct MmapUar {
    pages: Vec<*mut u8>,
    page_shift: u32,
    page_size: usize,
}

// SAFETY: the pointers are MMIO mappings owned by this value; stores to them are serialised by
// the callers (per-bfreg lock, per-CQ &mut).
unsafe impl Send for MmapUar {}
// SAFETY: see above; &self methods only perform volatile stores and fences.
unsafe impl Sync for MmapUar {}

impl UarMap for MmapUar {
    fn map(fd: &SharedFd, plan: &UarPlan) -> Result<Self> {
        use std::os::fd::AsRawFd;
        let mut pages = Vec::with_capacity(plan.mmap_offsets.len());
        for (i, &off) in plan.mmap_offsets.iter().enumerate() {
            // SAFETY: maps one page of the device file; the result is checked.
            let p = unsafe {
                libc::mmap(
                    std::ptr::null_mut(),
                    plan.page_size,
                    libc::PROT_WRITE,
                    libc::MAP_SHARED,
                    fd.as_raw_fd(),
                    off as libc::off_t,
                )
            };
            if p == libc::MAP_FAILED {
                let e = Error::last_os(format!("mmap mlx5 UAR page {i} (offset {off:#x})"));
                for &q in &pages {
                    // SAFETY: pages mapped above.
                    unsafe { libc::munmap(q as *mut libc::c_void, plan.page_size) };
                }
                return Err(e.with_hint(
                    "the kernel refused the static UAR mapping; check dmesg for mlx5_ib",
                ));
            }
            pages.push(p as *mut u8);
        }
        Ok(MmapUar {
            pages,
            page_shift: plan.page_size.trailing_zeros(),
            page_size: plan.page_size,
        })
    }
}

impl MmapUar {
    #[inline(always)]
    fn at(&self, offset: usize, len: usize) -> *mut u64 {
        let page = offset >> self.page_shift;
        let in_page = offset & (self.page_size - 1);
        // Offsets come from UarPlan (validated at QP/CQ creation); a bad one is a bug here.
        assert!(
            page < self.pages.len() && in_page & 7 == 0 && in_page + len <= self.page_size,
            "bad UAR offset {offset:#x}"
        );
        // SAFETY: within the mapped page (checked).
        unsafe { self.pages[page].add(in_page).cast::<u64>() }
    }
}

impl UarWriter for MmapUar {
    #[inline(always)]
    fn write64(&self, offset: usize, be_value: u64) {
        let p = self.at(offset, 8);
        // SAFETY: mapped, aligned. One 64-bit store: the device must see the doorbell untorn.
        unsafe { std::ptr::write_volatile(p, be_value) }
    }
    #[inline(always)]
    fn bf_copy(&self, offset: usize, src: &[u64]) {
        let p = self.at(offset, src.len() * 8);
        for (i, &w) in src.iter().enumerate() {
            // SAFETY: within the page (checked above). Individual 8-byte volatile stores in
            // ascending order: never a memcpy, whose string instructions may reorder or merge.
            unsafe { std::ptr::write_volatile(p.add(i), w) }
        }
    }
    #[inline(always)]
    fn wc_start(&self) {
        sfence();
    }
    #[inline(always)]
    fn flush(&self) {
        sfence();
    }
}

impl Drop for MmapUar {
    fn drop(&mut self) {
        for &p in &self.pages {
            // SAFETY: mapped in `map`, unmapped once.
            unsafe { libc::munmap(p as *mut libc::c_void, self.page_size) };
        }
    }
}

/// One recorded MMIO event.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum UarEvent {
    /// An 8-byte store: flat offset and the bytes as they hit the bus.
    Store {
        offset: usize,
        bytes: [u8; 8],
    },
    WcStart,
    Flush,
}

type Hook = Box<dyn FnMut(&UarEvent) + Send>;

/// Records every MMIO event (BlueFlame copies as their individual 8-byte stores, as the oracle
/// recorded them), optionally calling a hook (the device model) on each one as it happens.
#[derive(Default)]
pub struct RecordingUar {
    events: Mutex<Vec<UarEvent>>,
    hook: Mutex<Option<Hook>>,
    pub plan: Option<UarPlan>,
}

impl RecordingUar {
    pub fn new() -> Self {
        Self::default()
    }
    /// Take the events recorded so far.
    pub fn take(&self) -> Vec<UarEvent> {
        std::mem::take(&mut *self.events.lock().unwrap_or_else(|e| e.into_inner()))
    }
    /// Install a hook called on every event (after it is recorded).
    pub fn set_hook(&self, f: impl FnMut(&UarEvent) + Send + 'static) {
        *self.hook.lock().unwrap_or_else(|e| e.into_inner()) = Some(Box::new(f));
    }
    fn push(&self, e: UarEvent) {
        self.events
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .push(e.clone());
        if let Some(h) = self.hook.lock().unwrap_or_else(|e| e.into_inner()).as_mut() {
            h(&e);
        }
    }
}

impl UarWriter for RecordingUar {
    fn write64(&self, offset: usize, be_value: u64) {
        self.push(UarEvent::Store {
            offset,
            bytes: be_value.to_ne_bytes(),
        });
    }
    fn bf_copy(&self, offset: usize, src: &[u64]) {
        for (i, &w) in src.iter().enumerate() {
            self.push(UarEvent::Store {
                offset: offset + 8 * i,
                bytes: w.to_ne_bytes(),
            });
        }
    }
    fn wc_start(&self) {
        self.push(UarEvent::WcStart);
    }
    fn flush(&self) {
        self.push(UarEvent::Flush);
    }
}

impl UarMap for RecordingUar {
    fn map(_fd: &SharedFd, plan: &UarPlan) -> Result<Self> {
        Ok(RecordingUar {
            plan: Some(plan.clone()),
            ..Default::default()
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn golden_resp() -> UctxResp {
        UctxResp(uverbs::sys::mlx5::AllocUcontextResp {
            tot_bfregs: 16,
            bf_reg_size: 512,
            log_uar_size: 12,
            num_uars_per_page: 1,
            ..Default::default() })
    }

    #[test]
    fn golden_plan() {
        let p = UarPlan::new(&golden_resp(), 4096, true).unwrap();
        assert_eq!(p.num_pages, 8);
        assert_eq!(
            p.mmap_offsets,
            (0..8).map(|i| i * 4096).collect::<Vec<u64>>()
        );
        // The oracle's QP got bfreg 24: UAR page 6, offset 0x800.
        assert_eq!(p.bfreg_offset(24).unwrap(), 6 * 4096 + 0x800);
        assert_eq!(p.bfreg_offset(25).unwrap(), 6 * 4096 + 0x800 + 512);
        assert!(p.bfreg_offset(26).is_err());
        assert!(p.bfreg_offset(32).is_err());
        assert_eq!(p.bf_half(), 256);
        let nc = UarPlan::new(&golden_resp(), 4096, false).unwrap();
        assert_eq!(nc.mmap_offsets[0], 3145728);
        assert_eq!(nc.bf_half(), 0);
        assert_eq!(nc.toggle(), 256);
    }
}
