//! Verbs objects with RAII: [`Context`], [`Pd`], [`Mr`], [`CompChannel`], [`Cq`], [`Qp`],
//! [`Srq`], [`Ah`].
//!
//! Lifetimes: every object keeps what it depends on alive through an `Arc` (a QP holds its PD
//! and CQs, a PD holds the context), so any drop order is safe. Objects that other objects refer
//! to (CQ, SRQ) are split into a unique owner (`Cq`, `Srq`: the only way to reach the provider's
//! data-path state, by `&mut`) and a shared inner part whose last reference destroys the kernel
//! object. On destroy the kernel object goes first and the provider state (rings, buffers) is
//! dropped afterwards, so memory is released only once the kernel no longer uses it.
//!
//! Destroy failures in `Drop` are reported on stderr once per process (never a panic); EIO (the
//! device was disassociated) counts as success.

use std::cell::UnsafeCell;
use std::mem::ManuallyDrop;
use std::os::fd::{AsFd, AsRawFd, BorrowedFd, OwnedFd};
use std::ptr::NonNull;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use bitflags::bitflags;
use zerocopy::FromBytes;

use crate::cmd::{self, Cmd, CreateCqArgs, CreateQpArgs, Transport};
use crate::device::{self, DeviceAttr, DeviceAttrEx, PortAttr};
use crate::error::{Error, Result};
use crate::provider::{
    AhAttr, AhCreated, CqCreated, DcInit, DeviceDesc, PostError, Provider, QpCaps, QpCreated, QpInitAttr, QpState,
    QpType, SharedFd, SrqCreated,
};
use crate::sys::{self, qp_attr};
use crate::wr::{RecvWr, SendWr, WorkCompletion};

// ================================================================================================
// Teardown error reporting
// ================================================================================================

static TEARDOWN_ERROR_LOGGED: AtomicBool = AtomicBool::new(false);

/// A GID as eight colon-separated groups of four hex digits (`ff01:0000:…`).
fn gid_text(g: &[u8; 16]) -> String {
    g.chunks(2).map(|c| format!("{:02x}{:02x}", c[0], c[1])).collect::<Vec<_>>().join(":")
}

/// Report a destroy failure from `Drop`: once per process, as a warning; EIO is success.
fn report_drop(r: Result<()>) {
    if let Err(e) = r {
        if e.errno == Some(libc::EIO) {
            return;
        }
        if !TEARDOWN_ERROR_LOGGED.swap(true, Ordering::Relaxed) {
            crate::settings::warn(format!("{e} (further teardown errors are not shown)"));
        }
    }
}

/// Process-unique `user_handle` values for kernel objects (CQ handles come back in events).
static NEXT_USER_HANDLE: AtomicU64 = AtomicU64::new(1);

fn next_user_handle() -> u64 {
    NEXT_USER_HANDLE.fetch_add(1, Ordering::Relaxed)
}

// ================================================================================================
// Flags
// ================================================================================================

bitflags! {
    /// Memory / QP access flags (`enum ib_uverbs_access_flags`).
    #[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
    pub struct AccessFlags: u32 {
        const LOCAL_WRITE = sys::access::LOCAL_WRITE;
        const REMOTE_WRITE = sys::access::REMOTE_WRITE;
        const REMOTE_READ = sys::access::REMOTE_READ;
        const REMOTE_ATOMIC = sys::access::REMOTE_ATOMIC;
        const MW_BIND = sys::access::MW_BIND;
        const ZERO_BASED = sys::access::ZERO_BASED;
        const ON_DEMAND = sys::access::ON_DEMAND;
        const HUGETLB = sys::access::HUGETLB;
        const RELAXED_ORDERING = sys::access::RELAXED_ORDERING;
    }
}

bitflags! {
    /// QP attribute mask (`enum ibv_qp_attr_mask`, the bits a non-ex MODIFY_QP accepts).
    #[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
    pub struct QpAttrMask: u32 {
        const STATE = qp_attr::STATE;
        const CUR_STATE = qp_attr::CUR_STATE;
        const EN_SQD_ASYNC_NOTIFY = qp_attr::EN_SQD_ASYNC_NOTIFY;
        const ACCESS_FLAGS = qp_attr::ACCESS_FLAGS;
        const PKEY_INDEX = qp_attr::PKEY_INDEX;
        const PORT = qp_attr::PORT;
        const QKEY = qp_attr::QKEY;
        const AV = qp_attr::AV;
        const PATH_MTU = qp_attr::PATH_MTU;
        const TIMEOUT = qp_attr::TIMEOUT;
        const RETRY_CNT = qp_attr::RETRY_CNT;
        const RNR_RETRY = qp_attr::RNR_RETRY;
        const RQ_PSN = qp_attr::RQ_PSN;
        const MAX_QP_RD_ATOMIC = qp_attr::MAX_QP_RD_ATOMIC;
        const ALT_PATH = qp_attr::ALT_PATH;
        const MIN_RNR_TIMER = qp_attr::MIN_RNR_TIMER;
        const SQ_PSN = qp_attr::SQ_PSN;
        const MAX_DEST_RD_ATOMIC = qp_attr::MAX_DEST_RD_ATOMIC;
        const PATH_MIG_STATE = qp_attr::PATH_MIG_STATE;
        const CAP = qp_attr::CAP;
        const DEST_QPN = qp_attr::DEST_QPN;
    }
}

// ================================================================================================
// Context
// ================================================================================================

/// An async event read from the context's async fd.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct AsyncEvent {
    /// The object's `user_handle` (CQ/QP/SRQ) or the port number, by event type.
    pub element: u64,
    /// `enum ib_event_type`.
    pub event_type: u32,
}

/// An opened device: the uverbs fd after GET_CONTEXT, its async event fd, and the provider.
pub struct Context<P: Provider> {
    provider: P,
    async_fd: OwnedFd,
    fd: SharedFd,
    dev: DeviceDesc,
    transport: Transport,
    num_comp_vectors: u32,
    core_support: u64,
}

impl<P: Provider> std::fmt::Debug for Context<P> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Context")
            .field("provider", &P::NAME)
            .field("dev", &self.dev)
            .field("transport", &self.transport)
            .finish()
    }
}

impl<P: Provider> Context<P> {
    /// Open `dev` with the transport the program installed ([`crate::settings`]; default write).
    pub fn open(dev: &DeviceDesc) -> Result<Arc<Self>> {
        Self::open_with(dev, crate::settings::current().transport)
    }

    /// Open `/dev/infiniband/<dev.uverbs>`, run GET_CONTEXT with the provider's driver data and
    /// build the provider context from the answer.
    pub fn open_with(dev: &DeviceDesc, transport: Transport) -> Result<Arc<Self>> {
        Self::open_impl(dev, transport, false)
    }

    /// Open `dev` as a DEVX context (libmlx5's `mlx5dv_open_device` with
    /// `MLX5DV_CONTEXT_FLAGS_DEVX`), which crypto login, DEKs and crypto mkeys need. Fails with
    /// `EOPNOTSUPP` where the provider has no DEVX (rxe).
    pub fn open_devx(dev: &DeviceDesc) -> Result<Arc<Self>> {
        Self::open_impl(dev, crate::settings::current().transport, true)
    }

    fn open_impl(dev: &DeviceDesc, transport: Transport, devx: bool) -> Result<Arc<Self>> {
        let what = format!("open {} ({})", dev.ibdev, P::NAME);
        let udata = if devx {
            P::context_udata_devx(dev).ok_or_else(|| {
                let mut e = Error::msg(what.clone(), format!("the {} provider has no DEVX context (an mlx5 feature)", P::NAME));
                e.errno = Some(libc::EOPNOTSUPP);
                e
            })?
        } else {
            P::context_udata(dev)
        };
        let (lo, hi) = P::ABI_RANGE;
        if dev.driver_abi < lo || dev.driver_abi > hi {
            return Err(Error::msg(what, format!("driver ABI {} outside what the {} provider speaks ({lo}..={hi})", dev.driver_abi, P::NAME))
                .with_hint("the kernel driver is newer or older than this tool supports"));
        }
        if dev.driver_id != 0 && dev.driver_id != P::DRIVER_ID {
            return Err(Error::msg(what, format!("driver id {} is not {} ({})", dev.driver_id, P::NAME, P::DRIVER_ID)));
        }
        let fd: SharedFd = Arc::new(device::open_uverbs(&dev.uverbs)?);
        let c = Cmd { fd: fd.as_fd(), transport, driver_id: P::DRIVER_ID };
        if transport == Transport::Ioctl && !cmd::invoke_write_probe(fd.as_fd(), P::DRIVER_ID)? {
            return Err(Error::msg(what, "the kernel has no uverbs ioctl interface")
                .with_hint(format!("use the {}", crate::knob::named(crate::knob::Knob::WriteTransport))));
        }
        let created = cmd::get_context(&c, &udata)?;
        let provider = if devx {
            P::new_context_devx(fd.clone(), dev, &created.drv_resp)?
        } else {
            P::new_context(fd.clone(), dev, &created.drv_resp)?
        };
        Ok(Arc::new(Context {
            provider,
            async_fd: created.async_fd,
            fd,
            dev: dev.clone(),
            transport,
            num_comp_vectors: created.num_comp_vectors,
            core_support: created.core_support,
        }))
    }

    /// The command target for `uverbs::cmd` functions.
    pub fn cmd(&self) -> Cmd<'_> {
        Cmd { fd: self.fd.as_fd(), transport: self.transport, driver_id: P::DRIVER_ID }
    }
    pub fn provider(&self) -> &P {
        &self.provider
    }
    pub fn fd(&self) -> BorrowedFd<'_> {
        self.fd.as_fd()
    }
    pub fn shared_fd(&self) -> &SharedFd {
        &self.fd
    }
    pub fn async_fd(&self) -> BorrowedFd<'_> {
        self.async_fd.as_fd()
    }
    pub fn device(&self) -> &DeviceDesc {
        &self.dev
    }
    pub fn transport(&self) -> Transport {
        self.transport
    }
    pub fn num_comp_vectors(&self) -> u32 {
        self.num_comp_vectors
    }
    /// `CORE_SUPPORT` bits from the ioctl GET_CONTEXT (0 over write).
    pub fn core_support(&self) -> u64 {
        self.core_support
    }

    pub fn query_device(&self) -> Result<DeviceAttr> {
        cmd::query_device(&self.cmd())
    }
    pub fn query_device_ex(&self) -> Result<DeviceAttrEx> {
        cmd::query_device_ex(&self.cmd())
    }
    pub fn query_port(&self, port: u8) -> Result<PortAttr> {
        cmd::query_port(&self.cmd(), port)
    }
    /// The GID table of every port (ioctl, kernel ≥ 5.10; works whatever the transport).
    pub fn query_gid_table(&self, max_entries: usize) -> Result<Vec<sys::GidEntry>> {
        cmd::query_gid_table(&self.cmd(), max_entries)
    }
    /// One GID entry (ioctl, kernel ≥ 5.10).
    pub fn query_gid_entry(&self, port: u32, index: u32) -> Result<sys::GidEntry> {
        cmd::query_gid_entry(&self.cmd(), port, index)
    }

    /// Wait up to `timeout` (None: forever) for an async event.
    pub fn read_async_event(&self, timeout: Option<Duration>) -> Result<Option<AsyncEvent>> {
        let mut buf = [0u8; 16];
        match poll_read("read async event", self.async_fd.as_fd(), &mut buf, timeout)? {
            None => Ok(None),
            Some(n) => {
                let d = sys::AsyncEventDesc::read_from_prefix(&buf[..n])
                    .map(|(d, _)| d)
                    .map_err(|_| Error::msg("read async event", format!("short event of {n} bytes")))?;
                Ok(Some(AsyncEvent { element: d.element, event_type: d.event_type }))
            }
        }
    }
}

/// poll(2) for readability, then read(2) once. None on timeout.
fn poll_read(what: &str, fd: BorrowedFd<'_>, buf: &mut [u8], timeout: Option<Duration>) -> Result<Option<usize>> {
    let ms: i32 = match timeout {
        None => -1,
        Some(d) => d.as_millis().min(i32::MAX as u128) as i32,
    };
    let mut pfd = libc::pollfd { fd: fd.as_raw_fd(), events: libc::POLLIN, revents: 0 };
    loop {
        // SAFETY: `pfd` is one valid pollfd, alive for the call.
        let r = unsafe { libc::poll(&mut pfd, 1, ms) };
        if r < 0 {
            let e = std::io::Error::last_os_error().raw_os_error().unwrap_or(libc::EIO);
            if e == libc::EINTR {
                continue;
            }
            return Err(Error::errno(what, e));
        }
        if r == 0 {
            return Ok(None);
        }
        break;
    }
    // SAFETY: `buf` is a live, exclusively borrowed byte buffer of `buf.len()` bytes.
    let n = unsafe { libc::read(fd.as_raw_fd(), buf.as_mut_ptr().cast(), buf.len()) };
    if n < 0 {
        let e = std::io::Error::last_os_error().raw_os_error().unwrap_or(libc::EIO);
        if e == libc::EAGAIN {
            return Ok(None);
        }
        return Err(Error::errno(what, e));
    }
    Ok(Some(n as usize))
}

// ================================================================================================
// PD
// ================================================================================================

/// A protection domain.
pub struct Pd<P: Provider> {
    ctx: Arc<Context<P>>,
    handle: u32,
    pdn: Option<u32>,
}

impl<P: Provider> Pd<P> {
    pub fn new(ctx: &Arc<Context<P>>) -> Result<Arc<Self>> {
        let (handle, drv_resp) = cmd::alloc_pd(&ctx.cmd(), &ctx.provider().pd_udata())?;
        let pdn = match ctx.provider().pd_number(&drv_resp) {
            Ok(n) => n,
            Err(e) => {
                report_drop(cmd::dealloc_pd(&ctx.cmd(), handle));
                return Err(e);
            }
        };
        Ok(Arc::new(Pd { ctx: ctx.clone(), handle, pdn }))
    }
    pub fn handle(&self) -> u32 {
        self.handle
    }
    /// The device's number for this PD, where the provider learns it (mlx5's `pdn`).
    pub fn pdn(&self) -> Option<u32> {
        self.pdn
    }
    pub fn context(&self) -> &Arc<Context<P>> {
        &self.ctx
    }
}

impl<P: Provider> Drop for Pd<P> {
    fn drop(&mut self) {
        report_drop(cmd::dealloc_pd(&self.ctx.cmd(), self.handle));
    }
}

fn pdn_for_crypto<P: Provider>(pd: &Pd<P>, what: &str) -> Result<u32> {
    pd.pdn().ok_or_else(|| crate::provider::no_crypto_offload(what, P::NAME))
}

/// A data encryption key in a PD (AES-XTS crypto offload). Holds the PD so that the key goes
/// before the PD does; the provider object destroys the device object when dropped.
pub struct Dek<P: Provider> {
    dek: P::Dek,
    _pd: Arc<Pd<P>>,
}

impl<P: Provider> Dek<P> {
    /// `mlx5dv_dek_create` for AES-XTS from a key wrapped by the device's KEK.
    pub fn new(pd: &Arc<Pd<P>>, wrapped_key: &[u8]) -> Result<Self> {
        let pdn = pdn_for_crypto(pd, "create DEK")?;
        let dek = pd.context().provider().create_dek(pdn, wrapped_key)?;
        Ok(Dek { dek, _pd: pd.clone() })
    }
    pub fn provider_dek(&self) -> &P::Dek {
        &self.dek
    }
}

/// A crypto-capable memory key in a PD, configured by UMR work requests
/// ([`Qp::post_crypto_mkey_configure`]).
pub struct CryptoMkey<P: Provider> {
    mkey: P::CryptoMkey,
    lkey: u32,
    _pd: Arc<Pd<P>>,
}

impl<P: Provider> CryptoMkey<P> {
    pub fn new(pd: &Arc<Pd<P>>, max_entries: u16) -> Result<Self> {
        let pdn = pdn_for_crypto(pd, "create crypto mkey")?;
        let mkey = pd.context().provider().create_crypto_mkey(pdn, max_entries)?;
        let lkey = pd.context().provider().crypto_mkey_lkey(&mkey);
        Ok(CryptoMkey { mkey, lkey, _pd: pd.clone() })
    }
    /// The key work requests name the mkey by, locally and remotely.
    pub fn lkey(&self) -> u32 {
        self.lkey
    }
    pub fn provider_mkey(&mut self) -> &mut P::CryptoMkey {
        &mut self.mkey
    }
}

/// An XRC domain (OPEN_XRCD): the scope in which XRC SRQs and XRC target QPs live.
pub struct Xrcd<P: Provider> {
    ctx: Arc<Context<P>>,
    handle: u32,
}

impl<P: Provider> Xrcd<P> {
    /// A domain private to this context (no file: `fd` -1). A device without XRC refuses it;
    /// callers that want a clear message check [`crate::attr::DeviceAttr::supports_xrc`] first.
    pub fn open(ctx: &Arc<Context<P>>) -> Result<Arc<Self>> {
        let handle = cmd::open_xrcd(&ctx.cmd(), -1, 0)?;
        Ok(Arc::new(Xrcd { ctx: ctx.clone(), handle }))
    }
    pub fn handle(&self) -> u32 {
        self.handle
    }
}

impl<P: Provider> Drop for Xrcd<P> {
    fn drop(&mut self) {
        report_drop(cmd::close_xrcd(&self.ctx.cmd(), self.handle));
    }
}

// ================================================================================================
// Memory
// ================================================================================================

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

// ================================================================================================
// Completion channel
// ================================================================================================

/// A completion event channel: a fd that becomes readable when an armed CQ completes.
pub struct CompChannel {
    fd: OwnedFd,
}

impl CompChannel {
    pub fn new<P: Provider>(ctx: &Arc<Context<P>>) -> Result<Self> {
        Ok(CompChannel { fd: cmd::create_comp_channel(&ctx.cmd())? })
    }
    pub fn fd(&self) -> BorrowedFd<'_> {
        self.fd.as_fd()
    }
    /// Wait up to `timeout` (None: forever) for one completion event; returns the CQ's
    /// `user_handle` ([`Cq::user_handle`]). Call [`Cq::event_received`] on that CQ, re-arm, and
    /// poll it.
    pub fn wait(&self, timeout: Option<Duration>) -> Result<Option<u64>> {
        let mut buf = [0u8; 8];
        match poll_read("read completion event", self.fd.as_fd(), &mut buf, timeout)? {
            None => Ok(None),
            Some(8) => Ok(Some(u64::from_ne_bytes(buf))),
            Some(n) => Err(Error::msg("read completion event", format!("short event of {n} bytes"))),
        }
    }
}

// ================================================================================================
// CQ
// ================================================================================================

/// A kernel object whose destroy command must run before its provider state is dropped.
trait KernelObject {
    fn destroy(&self);
}

/// The "unique owner + shared inner" pattern of CQs and SRQs: the kernel object's immutable
/// facts (`meta`) are shared (QPs hold an `Arc` that keeps the kernel object alive), while the
/// provider state is reached only through the one owning handle (by `&mut`) or by the final
/// `Drop`, which destroys the kernel object first and then drops the provider state.
struct Shared<M: KernelObject, S> {
    meta: M,
    state: UnsafeCell<ManuallyDrop<S>>,
}

// SAFETY: `state` is reached only from the unique owner (by `&mut`, see `state_mut`) or from
// `Drop` of the last reference; other holders read only `meta`, which is `Sync`.
unsafe impl<M: KernelObject + Sync, S: Send> Sync for Shared<M, S> {}
// SAFETY: as above; moving the inner between threads moves an `S: Send` and an `M: Send`.
unsafe impl<M: KernelObject + Send, S: Send> Send for Shared<M, S> {}

impl<M: KernelObject, S> Shared<M, S> {
    fn new(meta: M, state: S) -> Arc<Self> {
        Arc::new(Shared { meta, state: UnsafeCell::new(ManuallyDrop::new(state)) })
    }

    /// The provider state.
    ///
    /// # Safety
    /// Only the unique owning handle may call this, through its own `&mut self`, so that no two
    /// `&mut S` exist at once.
    #[allow(clippy::mut_from_ref)]
    #[inline]
    unsafe fn state_mut(&self) -> &mut S {
        // SAFETY: exclusivity is the caller's contract (see above).
        unsafe { &mut *self.state.get() }
    }
}

impl<M: KernelObject, S> Drop for Shared<M, S> {
    fn drop(&mut self) {
        self.meta.destroy();
        // SAFETY: dropped exactly once, here, after the kernel object is gone; this is the last
        // reference.
        unsafe { ManuallyDrop::drop(self.state.get_mut()) };
    }
}

struct CqMeta<P: Provider> {
    ctx: Arc<Context<P>>,
    handle: u32,
    cqe: u32,
    user_handle: u64,
}

impl<P: Provider> KernelObject for CqMeta<P> {
    fn destroy(&self) {
        report_drop(cmd::destroy_cq(&self.ctx.cmd(), self.handle).map(|_| ()));
    }
}

type CqInner<P> = Shared<CqMeta<P>, <P as Provider>::Cq>;

/// A completion queue. Unique owner of the provider state; QPs hold only a reference that keeps
/// the kernel CQ alive.
pub struct Cq<P: Provider> {
    inner: Arc<CqInner<P>>,
}

impl<P: Provider> Cq<P> {
    /// Create a CQ of at least `entries` completions, optionally reporting to `channel`.
    pub fn new(ctx: &Arc<Context<P>>, entries: u32, channel: Option<&CompChannel>, comp_vector: u32) -> Result<Self> {
        let (prep, cqe, udata) = ctx.provider.prepare_cq(entries)?;
        let user_handle = next_user_handle();
        let args = CreateCqArgs {
            user_handle,
            cqe,
            comp_vector,
            channel: channel.map(|c| c.fd.as_raw_fd()),
            event_fd: (ctx.transport == Transport::Ioctl).then(|| ctx.async_fd.as_raw_fd()),
        };
        let c = ctx.cmd();
        let (resp, drv) = cmd::create_cq(&c, &args, &udata)?;
        let core = CqCreated { handle: resp.cq_handle, cqe: resp.cqe };
        let state = match ctx.provider.finish_cq(prep, &core, &drv) {
            Ok(s) => s,
            Err(e) => {
                let _ = cmd::destroy_cq(&c, resp.cq_handle);
                return Err(e);
            }
        };
        let meta = CqMeta { ctx: ctx.clone(), handle: resp.cq_handle, cqe: resp.cqe, user_handle };
        Ok(Cq { inner: Shared::new(meta, state) })
    }

    /// The provider context and the CQ's provider state, without touching reference counts.
    fn parts(&mut self) -> (&P, &mut P::Cq) {
        let inner = &*self.inner;
        // SAFETY: `Cq` is the unique owner, and `&mut self` makes this access exclusive.
        let state = unsafe { inner.state_mut() };
        (&inner.meta.ctx.provider, state)
    }

    /// Fill `out` with up to `out.len()` completions; returns how many.
    #[inline(always)]
    pub fn poll(&mut self, out: &mut [WorkCompletion]) -> Result<usize> {
        let (p, state) = self.parts();
        p.poll_cq(state, out)
    }

    /// Request a completion event for the next (or next solicited) completion. Poll again after
    /// arming: a completion may have arrived in between.
    pub fn arm(&mut self, solicited_only: bool) -> Result<()> {
        let (p, state) = self.parts();
        p.arm_cq(state, solicited_only)
    }

    /// Tell the provider one completion event for this CQ was read from the channel.
    pub fn event_received(&mut self) {
        let (p, state) = self.parts();
        p.cq_event(state)
    }

    pub fn handle(&self) -> u32 {
        self.inner.meta.handle
    }
    /// The capacity the kernel granted.
    pub fn cqe(&self) -> u32 {
        self.inner.meta.cqe
    }
    /// What completion events for this CQ carry.
    pub fn user_handle(&self) -> u64 {
        self.inner.meta.user_handle
    }
    pub fn context(&self) -> &Arc<Context<P>> {
        &self.inner.meta.ctx
    }
}

// ================================================================================================
// SRQ
// ================================================================================================

struct SrqMeta<P: Provider> {
    pd: Arc<Pd<P>>,
    created: SrqCreated,
    /// XRC SRQs: the domain and the CQ stay alive as long as the SRQ.
    _xrc: Option<XrcKeepAlive<P>>,
}

/// What an XRC SRQ keeps alive: its domain and its CQ.
type XrcKeepAlive<P> = (Arc<Xrcd<P>>, Arc<CqInner<P>>);

impl<P: Provider> KernelObject for SrqMeta<P> {
    fn destroy(&self) {
        report_drop(cmd::destroy_srq(&self.pd.ctx.cmd(), self.created.handle).map(|_| ()));
    }
}

type SrqInner<P> = Shared<SrqMeta<P>, <P as Provider>::Srq>;

/// A shared receive queue.
pub struct Srq<P: Provider> {
    inner: Arc<SrqInner<P>>,
}

impl<P: Provider> Srq<P> {
    pub fn new(pd: &Arc<Pd<P>>, max_wr: u32, max_sge: u32, srq_limit: u32) -> Result<Self> {
        let ctx = &pd.ctx;
        let (prep, udata) = ctx.provider.prepare_srq(max_wr, max_sge)?;
        let c = ctx.cmd();
        let (r, drv) = cmd::create_srq(&c, next_user_handle(), pd.handle, max_wr, max_sge, srq_limit, &udata)?;
        Self::finish(pd, &c, prep, &r, &drv, None)
    }

    /// An XRC SRQ (CREATE_XSRQ): receives of every XRC target QP in `xrcd` whose initiator names
    /// this SRQ's number land here and complete on `cq`.
    pub fn new_xrc(pd: &Arc<Pd<P>>, xrcd: &Arc<Xrcd<P>>, cq: &Cq<P>, max_wr: u32, max_sge: u32, srq_limit: u32) -> Result<Self> {
        let ctx = &pd.ctx;
        let (prep, udata) = ctx.provider.prepare_xrc_srq(max_wr, max_sge)?;
        let c = ctx.cmd();
        let args = cmd::CreateXrcSrqArgs {
            user_handle: next_user_handle(),
            pd: pd.handle,
            xrcd: xrcd.handle,
            cq: cq.handle(),
            max_wr,
            max_sge,
            srq_limit,
        };
        let (r, drv) = cmd::create_xrc_srq(&c, &args, &udata)?;
        Self::finish(pd, &c, prep, &r, &drv, Some((xrcd.clone(), cq.inner.clone())))
    }

    /// The provider's half of either create (basic or XRC); the kernel's SRQ is destroyed again
    /// if the provider refuses it.
    fn finish(
        pd: &Arc<Pd<P>>,
        c: &cmd::Cmd<'_>,
        prep: P::SrqPrep,
        r: &sys::CreateSrqResp,
        drv: &[u8],
        xrc: Option<XrcKeepAlive<P>>,
    ) -> Result<Self> {
        let created = SrqCreated { handle: r.srq_handle, max_wr: r.max_wr, max_sge: r.max_sge, srqn: r.srqn };
        let state = match pd.ctx.provider.finish_srq(prep, &created, drv) {
            Ok(s) => s,
            Err(e) => {
                let _ = cmd::destroy_srq(c, r.srq_handle);
                return Err(e);
            }
        };
        Ok(Srq { inner: Shared::new(SrqMeta { pd: pd.clone(), created, _xrc: xrc }, state) })
    }

    /// Post receives to the SRQ.
    ///
    /// # Safety
    /// The contract of [`Provider::post_srq_recv`]: each SGE's memory stays valid for writes, in
    /// a live MR under its lkey, until the receive completes.
    #[inline]
    pub unsafe fn post_recv(&mut self, wrs: &[RecvWr<'_>]) -> std::result::Result<(), PostError> {
        let inner = &*self.inner;
        // SAFETY: `Srq` is the unique owner, and `&mut self` makes this access exclusive.
        let state = unsafe { inner.state_mut() };
        // SAFETY: the caller upholds post_srq_recv's buffer contract (this fn's own contract).
        unsafe { inner.meta.pd.ctx.provider.post_srq_recv(state, wrs) }
    }
    pub fn handle(&self) -> u32 {
        self.inner.meta.created.handle
    }
    pub fn srqn(&self) -> u32 {
        self.inner.meta.created.srqn
    }
    pub fn max_wr(&self) -> u32 {
        self.inner.meta.created.max_wr
    }
    pub fn max_sge(&self) -> u32 {
        self.inner.meta.created.max_sge
    }
}

// ================================================================================================
// QP attributes (pure)
// ================================================================================================

/// perftest's default Q_Key for UD.
pub const DEFAULT_QKEY: u32 = 0x1111_1111;

/// QP attributes for MODIFY_QP (the fields of `ibv_qp_attr` that a non-ex MODIFY_QP carries).
/// Only the fields named in the mask are sent.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct QpAttr {
    pub qp_state: QpState,
    pub cur_qp_state: QpState,
    /// `enum ibv_mtu` (1 = 256 .. 5 = 4096).
    pub path_mtu: u8,
    pub path_mig_state: u8,
    pub qkey: u32,
    pub rq_psn: u32,
    pub sq_psn: u32,
    pub dest_qp_num: u32,
    pub qp_access_flags: AccessFlags,
    pub pkey_index: u16,
    pub alt_pkey_index: u16,
    pub en_sqd_async_notify: u8,
    pub max_rd_atomic: u8,
    pub max_dest_rd_atomic: u8,
    pub min_rnr_timer: u8,
    pub port_num: u8,
    pub timeout: u8,
    pub retry_cnt: u8,
    pub rnr_retry: u8,
    pub alt_port_num: u8,
    pub alt_timeout: u8,
    /// The primary path (AV).
    pub ah_attr: AhAttr,
    pub alt_ah_attr: AhAttr,
}

impl Default for QpAttr {
    fn default() -> Self {
        QpAttr {
            qp_state: QpState::Reset,
            cur_qp_state: QpState::Reset,
            path_mtu: 0,
            path_mig_state: 0,
            qkey: 0,
            rq_psn: 0,
            sq_psn: 0,
            dest_qp_num: 0,
            qp_access_flags: AccessFlags::empty(),
            pkey_index: 0,
            alt_pkey_index: 0,
            en_sqd_async_notify: 0,
            max_rd_atomic: 0,
            max_dest_rd_atomic: 0,
            min_rnr_timer: 0,
            port_num: 0,
            timeout: 0,
            retry_cnt: 0,
            rnr_retry: 0,
            alt_port_num: 0,
            alt_timeout: 0,
            ah_attr: AhAttr::default(),
            alt_ah_attr: AhAttr::default(),
        }
    }
}

/// An address vector as the kernel's `ib_uverbs_qp_dest`.
pub fn qp_dest(ah: &AhAttr) -> sys::QpDest {
    sys::QpDest {
        dgid: ah.dgid,
        flow_label: ah.flow_label,
        dlid: ah.dlid,
        reserved: 0,
        sgid_index: ah.sgid_index,
        hop_limit: ah.hop_limit,
        traffic_class: ah.traffic_class,
        sl: ah.sl,
        src_path_bits: 0,
        static_rate: ah.static_rate,
        is_global: ah.is_global as u8,
        port_num: ah.port_num,
    }
}

/// An address vector as the kernel's `ib_uverbs_ah_attr` (CREATE_AH).
pub fn uverbs_ah_attr(ah: &AhAttr) -> sys::AhAttr {
    sys::AhAttr {
        grh: sys::GlobalRoute {
            dgid: ah.dgid,
            flow_label: ah.flow_label,
            sgid_index: ah.sgid_index,
            hop_limit: ah.hop_limit,
            traffic_class: ah.traffic_class,
            reserved: 0,
        },
        dlid: ah.dlid,
        sl: ah.sl,
        src_path_bits: 0,
        static_rate: ah.static_rate,
        is_global: ah.is_global as u8,
        port_num: ah.port_num,
        reserved: 0,
    }
}

/// An address vector from the kernel's `ib_uverbs_ah_attr` (rdma_cm INIT_QP_ATTR answers and
/// UD event parameters); the inverse of [`uverbs_ah_attr`] for the fields [`AhAttr`] carries.
pub fn ah_from_uverbs(a: &sys::AhAttr) -> AhAttr {
    AhAttr {
        dgid: a.grh.dgid,
        flow_label: a.grh.flow_label,
        sgid_index: a.grh.sgid_index,
        hop_limit: a.grh.hop_limit,
        traffic_class: a.grh.traffic_class,
        is_global: a.is_global != 0,
        dlid: a.dlid,
        sl: a.sl,
        port_num: a.port_num,
        static_rate: a.static_rate,
    }
}

/// The attributes and capacities a QUERY_QP response reports.
pub fn query_attr(r: &sys::QueryQpResp) -> (QpAttr, QpCaps) {
    let ah = |d: &sys::QpDest| AhAttr {
        dgid: d.dgid,
        flow_label: d.flow_label,
        sgid_index: d.sgid_index,
        hop_limit: d.hop_limit,
        traffic_class: d.traffic_class,
        is_global: d.is_global != 0,
        dlid: d.dlid,
        sl: d.sl,
        port_num: d.port_num,
        static_rate: d.static_rate,
    };
    let attr = QpAttr {
        qp_state: QpState::from_raw(r.qp_state.into()),
        cur_qp_state: QpState::from_raw(r.cur_qp_state.into()),
        path_mtu: r.path_mtu,
        path_mig_state: r.path_mig_state,
        qkey: r.qkey,
        rq_psn: r.rq_psn,
        sq_psn: r.sq_psn,
        dest_qp_num: r.dest_qp_num,
        qp_access_flags: AccessFlags::from_bits_retain(r.qp_access_flags),
        pkey_index: r.pkey_index,
        alt_pkey_index: r.alt_pkey_index,
        en_sqd_async_notify: 0,
        max_rd_atomic: r.max_rd_atomic,
        max_dest_rd_atomic: r.max_dest_rd_atomic,
        min_rnr_timer: r.min_rnr_timer,
        port_num: r.port_num,
        timeout: r.timeout,
        retry_cnt: r.retry_cnt,
        rnr_retry: r.rnr_retry,
        alt_port_num: r.alt_port_num,
        alt_timeout: r.alt_timeout,
        ah_attr: ah(&r.dest),
        alt_ah_attr: ah(&r.alt_dest),
    };
    let caps = QpCaps {
        max_send_wr: r.max_send_wr,
        max_recv_wr: r.max_recv_wr,
        max_send_sge: r.max_send_sge,
        max_recv_sge: r.max_recv_sge,
        max_inline_data: r.max_inline_data,
    };
    (attr, caps)
}

/// The MODIFY_QP request for `attr` under `mask`: only masked fields are copied (the rest are
/// zero), as rdma-core does.
pub fn modify_request(qp_handle: u32, attr: &QpAttr, mask: QpAttrMask) -> sys::ModifyQp {
    let m = |b: QpAttrMask| mask.contains(b);
    let mut r = sys::ModifyQp { qp_handle, attr_mask: mask.bits(), ..Default::default() };
    if m(QpAttrMask::STATE) {
        r.qp_state = attr.qp_state as u8;
    }
    if m(QpAttrMask::CUR_STATE) {
        r.cur_qp_state = attr.cur_qp_state as u8;
    }
    if m(QpAttrMask::EN_SQD_ASYNC_NOTIFY) {
        r.en_sqd_async_notify = attr.en_sqd_async_notify;
    }
    if m(QpAttrMask::ACCESS_FLAGS) {
        r.qp_access_flags = attr.qp_access_flags.bits();
    }
    if m(QpAttrMask::PKEY_INDEX) {
        r.pkey_index = attr.pkey_index;
    }
    if m(QpAttrMask::PORT) {
        r.port_num = attr.port_num;
    }
    if m(QpAttrMask::QKEY) {
        r.qkey = attr.qkey;
    }
    if m(QpAttrMask::AV) {
        r.dest = qp_dest(&attr.ah_attr);
    }
    if m(QpAttrMask::PATH_MTU) {
        r.path_mtu = attr.path_mtu;
    }
    if m(QpAttrMask::TIMEOUT) {
        r.timeout = attr.timeout;
    }
    if m(QpAttrMask::RETRY_CNT) {
        r.retry_cnt = attr.retry_cnt;
    }
    if m(QpAttrMask::RNR_RETRY) {
        r.rnr_retry = attr.rnr_retry;
    }
    if m(QpAttrMask::RQ_PSN) {
        r.rq_psn = attr.rq_psn;
    }
    if m(QpAttrMask::MAX_QP_RD_ATOMIC) {
        r.max_rd_atomic = attr.max_rd_atomic;
    }
    if m(QpAttrMask::ALT_PATH) {
        r.alt_dest = qp_dest(&attr.alt_ah_attr);
        r.alt_pkey_index = attr.alt_pkey_index;
        r.alt_port_num = attr.alt_port_num;
        r.alt_timeout = attr.alt_timeout;
    }
    if m(QpAttrMask::MIN_RNR_TIMER) {
        r.min_rnr_timer = attr.min_rnr_timer;
    }
    if m(QpAttrMask::SQ_PSN) {
        r.sq_psn = attr.sq_psn;
    }
    if m(QpAttrMask::MAX_DEST_RD_ATOMIC) {
        r.max_dest_rd_atomic = attr.max_dest_rd_atomic;
    }
    if m(QpAttrMask::PATH_MIG_STATE) {
        r.path_mig_state = attr.path_mig_state;
    }
    if m(QpAttrMask::DEST_QPN) {
        r.dest_qp_num = attr.dest_qp_num;
    }
    r
}

/// RESET → INIT attributes and mask for a QP type. UD uses `qkey`; RC/UC use `access`.
pub fn init_attr(qp_type: QpType, port: u8, pkey_index: u16, access: AccessFlags, qkey: u32) -> (QpAttr, QpAttrMask) {
    let mut a = QpAttr { qp_state: QpState::Init, port_num: port, pkey_index, ..Default::default() };
    let mut mask = QpAttrMask::STATE | QpAttrMask::PKEY_INDEX | QpAttrMask::PORT;
    match qp_type {
        QpType::Ud => {
            a.qkey = qkey;
            mask |= QpAttrMask::QKEY;
        }
        QpType::Rc | QpType::Uc | QpType::Dct | QpType::XrcIni | QpType::XrcTgt => {
            a.qp_access_flags = access;
            mask |= QpAttrMask::ACCESS_FLAGS;
        }
        // mlx5 modify_dci_qp_is_ok: RESET→INIT takes exactly state, pkey index and port.
        QpType::Dci => {}
    }
    (a, mask)
}

/// The remote side for INIT → RTR (RC and UC; UD needs none of it).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct RtrParams {
    /// `enum ibv_mtu`.
    pub path_mtu: u8,
    pub dest_qpn: u32,
    /// The peer's initial send PSN (24 bits).
    pub rq_psn: u32,
    /// RC: incoming RDMA READ / atomic depth (≥ 1 if the peer reads or does atomics).
    pub max_dest_rd_atomic: u8,
    /// RC: RNR NAK timer code (12 ≈ 0.64 ms, perftest's value).
    pub min_rnr_timer: u8,
    /// The path: RoCE needs `is_global` with dgid, sgid_index, hop_limit; IB uses dlid and no GRH.
    pub ah: AhAttr,
}

impl RtrParams {
    /// A RoCE (v2) path: GRH with `dgid`, `sgid_index`, hop limit 64 — or whatever `hop_limit` says.
    pub fn roce_path(port: u8, dgid: [u8; 16], sgid_index: u8, hop_limit: u8) -> AhAttr {
        AhAttr { dgid, sgid_index, hop_limit, is_global: true, port_num: port, ..Default::default() }
    }
    /// An InfiniBand path inside a subnet: destination LID, no GRH.
    pub fn ib_path(port: u8, dlid: u16, sl: u8) -> AhAttr {
        AhAttr { dlid, sl, is_global: false, port_num: port, ..Default::default() }
    }
}

/// INIT → RTR attributes and mask for a QP type.
pub fn rtr_attr(qp_type: QpType, p: &RtrParams) -> (QpAttr, QpAttrMask) {
    let mut a = QpAttr { qp_state: QpState::Rtr, ..Default::default() };
    let mut mask = QpAttrMask::STATE;
    if qp_type.is_dc() {
        // DC has no fixed peer: the path (AV, MTU) only. A DCT also takes its RNR NAK timer
        // (mlx5 modify_dci_qp_is_ok / mlx5_ib_modify_dct, perftest's masks).
        a.ah_attr = p.ah;
        a.path_mtu = p.path_mtu;
        mask |= QpAttrMask::AV | QpAttrMask::PATH_MTU;
        if qp_type == QpType::Dct {
            a.min_rnr_timer = p.min_rnr_timer;
            mask |= QpAttrMask::MIN_RNR_TIMER;
        }
        return (a, mask);
    }
    if qp_type != QpType::Ud {
        a.ah_attr = p.ah;
        a.path_mtu = p.path_mtu;
        a.dest_qp_num = p.dest_qpn;
        a.rq_psn = p.rq_psn & 0xff_ffff;
        mask |= QpAttrMask::AV | QpAttrMask::PATH_MTU | QpAttrMask::DEST_QPN | QpAttrMask::RQ_PSN;
    }
    // The responder attributes: RC and the XRC target (the kernel's qp_state_table requires
    // them for those types only; an XRC initiator never responds).
    if matches!(qp_type, QpType::Rc | QpType::XrcTgt) {
        a.max_dest_rd_atomic = p.max_dest_rd_atomic;
        a.min_rnr_timer = p.min_rnr_timer;
        mask |= QpAttrMask::MAX_DEST_RD_ATOMIC | QpAttrMask::MIN_RNR_TIMER;
    }
    (a, mask)
}

/// RTR → RTS parameters.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RtsParams {
    /// Own initial send PSN (24 bits).
    pub sq_psn: u32,
    /// RC: local ACK timeout code (≤ 31; 14 ≈ 67 ms).
    pub timeout: u8,
    /// RC: transport retries (≤ 7).
    pub retry_cnt: u8,
    /// RC: RNR retries (7 = infinite).
    pub rnr_retry: u8,
    /// RC: outstanding RDMA READ / atomic depth. Must be ≥ 1 when READs or atomics are posted
    /// (0 is accepted by rxe but such requests then never complete).
    pub max_rd_atomic: u8,
}

impl Default for RtsParams {
    fn default() -> Self {
        RtsParams { sq_psn: 0, timeout: 14, retry_cnt: 7, rnr_retry: 7, max_rd_atomic: 1 }
    }
}

/// RTR → RTS attributes and mask for a QP type.
pub fn rts_attr(qp_type: QpType, p: &RtsParams) -> (QpAttr, QpAttrMask) {
    let mut a = QpAttr { qp_state: QpState::Rts, sq_psn: p.sq_psn & 0xff_ffff, ..Default::default() };
    let mut mask = QpAttrMask::STATE | QpAttrMask::SQ_PSN;
    // A DCI takes RC's RTS set (modify_dci_qp_is_ok). A DCT never leaves RTR.
    if matches!(qp_type, QpType::Rc | QpType::Dci | QpType::XrcIni) {
        a.timeout = p.timeout;
        a.retry_cnt = p.retry_cnt;
        a.rnr_retry = p.rnr_retry;
        a.max_rd_atomic = p.max_rd_atomic;
        mask |= QpAttrMask::TIMEOUT | QpAttrMask::RETRY_CNT | QpAttrMask::RNR_RETRY | QpAttrMask::MAX_QP_RD_ATOMIC;
    } else if qp_type == QpType::XrcTgt {
        // A target sends only ACKs: the timeout is all it takes (as for RC's responder side).
        a.timeout = p.timeout;
        mask |= QpAttrMask::TIMEOUT;
    }
    (a, mask)
}

// ================================================================================================
// QP
// ================================================================================================

/// What to create a QP with.
pub struct QpInit<'a, P: Provider> {
    pub qp_type: QpType,
    pub send_cq: &'a Cq<P>,
    pub recv_cq: &'a Cq<P>,
    pub srq: Option<&'a Srq<P>>,
    pub caps: QpCaps,
    pub sq_sig_all: bool,
}

/// A queue pair.
pub struct Qp<P: Provider> {
    state: ManuallyDrop<P::Qp>,
    ctx: Arc<Context<P>>,
    handle: u32,
    qpn: u32,
    qp_type: QpType,
    caps: QpCaps,
    qp_state: QpState,
    qkey: u32,
    /// Multicast groups (gid, mlid) attached with [`Qp::attach_mcast`], detached on drop.
    mcast: Vec<([u8; 16], u16)>,
    _pd: Arc<Pd<P>>,
    _send_cq: Arc<CqInner<P>>,
    _recv_cq: Arc<CqInner<P>>,
    _srq: Option<Arc<SrqInner<P>>>,
    _xrcd: Option<Arc<Xrcd<P>>>,
}

impl<P: Provider> Qp<P> {
    pub fn new(pd: &Arc<Pd<P>>, init: &QpInit<'_, P>) -> Result<Self> {
        if init.qp_type == QpType::XrcTgt {
            return Err(crate::error::Error::msg("CREATE_QP", "an XRC target QP is created with Qp::new_xrc_tgt (it needs an XRC domain)"));
        }
        Self::create(pd, init, None, None)
    }

    /// An XRC target QP in `xrcd` (`init.qp_type` must be [`QpType::XrcTgt`]). The kernel gets
    /// the domain instead of the PD and CQs; `init`'s CQs are only kept alive with the QP.
    pub fn new_xrc_tgt(pd: &Arc<Pd<P>>, xrcd: &Arc<Xrcd<P>>, init: &QpInit<'_, P>) -> Result<Self> {
        if init.qp_type != QpType::XrcTgt {
            return Err(crate::error::Error::msg("CREATE_QP", format!("Qp::new_xrc_tgt with QP type {}", init.qp_type.name())));
        }
        Self::create(pd, init, None, Some(xrcd))
    }

    /// A Dynamically Connected QP (`init.qp_type` `Dci` or `Dct`; mlx5 only, other providers
    /// refuse). A DCT needs `init.srq`; it has no queues of its own.
    pub fn new_dc(pd: &Arc<Pd<P>>, init: &QpInit<'_, P>, dc: &DcInit) -> Result<Self> {
        if !init.qp_type.is_dc() {
            return Err(Error::msg("create DC QP", format!("QP type {} is not a DC type (DCI or DCT)", init.qp_type.name())));
        }
        if init.qp_type == QpType::Dct && init.srq.is_none() {
            return Err(Error::msg("create DC QP", "a DCT receives from an SRQ: pass one"));
        }
        Self::create(pd, init, Some(dc), None)
    }

    fn create(pd: &Arc<Pd<P>>, init: &QpInit<'_, P>, dc: Option<&DcInit>, xrcd: Option<&Arc<Xrcd<P>>>) -> Result<Self> {
        let ctx = pd.ctx.clone();
        let attr = QpInitAttr { qp_type: init.qp_type, caps: init.caps, sq_sig_all: init.sq_sig_all, uses_srq: init.srq.is_some() };
        let (prep, udata) = match dc {
            Some(dc) => ctx.provider.prepare_dc_qp(&attr, dc)?,
            None if init.qp_type.is_dc() => {
                return Err(Error::msg("create QP", format!("{} QPs are created with Qp::new_dc", init.qp_type.name())));
            }
            None => ctx.provider.prepare_qp(&attr)?,
        };
        let args = CreateQpArgs {
            user_handle: next_user_handle(),
            pd: pd.handle,
            send_cq: init.send_cq.handle(),
            recv_cq: init.recv_cq.handle(),
            srq: init.srq.map(|s| s.handle()),
            xrcd: xrcd.map(|x| x.handle),
            qp_type: init.qp_type.uverbs_type(),
            caps: sys::QpCap {
                max_send_wr: init.caps.max_send_wr,
                max_recv_wr: init.caps.max_recv_wr,
                max_send_sge: init.caps.max_send_sge,
                max_recv_sge: init.caps.max_recv_sge,
                max_inline_data: init.caps.max_inline_data,
            },
            sq_sig_all: init.sq_sig_all,
            event_fd: (ctx.transport == Transport::Ioctl).then(|| ctx.async_fd.as_raw_fd()),
        };
        let c = ctx.cmd();
        let (r, drv) = cmd::create_qp(&c, &args, &udata)?;
        let caps = QpCaps {
            max_send_wr: r.max_send_wr,
            max_recv_wr: r.max_recv_wr,
            max_send_sge: r.max_send_sge,
            max_recv_sge: r.max_recv_sge,
            max_inline_data: r.max_inline_data,
        };
        let created = QpCreated { handle: r.qp_handle, qpn: r.qpn, caps };
        let state = match ctx.provider.finish_qp(prep, &attr, &created, &drv) {
            Ok(s) => s,
            Err(e) => {
                let _ = cmd::destroy_qp(&c, r.qp_handle);
                return Err(e);
            }
        };
        Ok(Qp {
            state: ManuallyDrop::new(state),
            ctx: ctx.clone(),
            handle: r.qp_handle,
            qpn: r.qpn,
            qp_type: init.qp_type,
            caps,
            qp_state: QpState::Reset,
            qkey: DEFAULT_QKEY,
            mcast: Vec::new(),
            _pd: pd.clone(),
            _send_cq: init.send_cq.inner.clone(),
            _recv_cq: init.recv_cq.inner.clone(),
            _srq: init.srq.map(|s| s.inner.clone()),
            _xrcd: xrcd.cloned(),
        })
    }

    pub fn handle(&self) -> u32 {
        self.handle
    }
    pub fn qpn(&self) -> u32 {
        self.qpn
    }
    pub fn qp_type(&self) -> QpType {
        self.qp_type
    }
    /// Capacities as the kernel answered CREATE_QP (see the provider for real ring capacity).
    pub fn caps(&self) -> QpCaps {
        self.caps
    }
    /// The state after the last successful MODIFY_QP.
    pub fn state(&self) -> QpState {
        self.qp_state
    }
    /// The Q_Key [`Qp::to_init`] gives a UD QP (default [`DEFAULT_QKEY`]).
    pub fn set_qkey(&mut self, qkey: u32) {
        self.qkey = qkey;
    }
    pub fn provider_qp(&mut self) -> &mut P::Qp {
        &mut self.state
    }

    /// MODIFY_QP with the masked fields of `attr`; tells the provider about state changes.
    pub fn modify(&mut self, attr: &QpAttr, mask: QpAttrMask) -> Result<()> {
        let req = modify_request(self.handle, attr, mask);
        let detail = |e: Error| {
            let what = format!("{:?} → {:?}", self.qp_state, attr.qp_state);
            if mask.contains(QpAttrMask::STATE) {
                e.with_detail(format!("{} QP {:#x}, {what}, mask {:#x}", self.qp_type.name(), self.qpn, mask.bits()))
            } else {
                e
            }
        };
        let state = mask.contains(QpAttrMask::STATE).then_some(attr.qp_state);
        match self.ctx.provider.modify_qp_udata(&self.state, state) {
            None => cmd::modify_qp(&self.ctx.cmd(), &req).map_err(detail)?,
            Some(udata) => {
                // The driver answers this modify (mlx5: a DCT's number at RTR).
                let ex = sys::ExModifyQp { base: req, ..Default::default() };
                let (_, drv) = cmd::modify_qp_ex(&self.ctx.cmd(), &ex, &udata).map_err(detail)?;
                if let Some(n) = self.ctx.provider.modify_qp_done(&mut self.state, attr.qp_state, &drv)? {
                    self.qpn = n;
                }
            }
        }
        if mask.contains(QpAttrMask::STATE) {
            self.qp_state = attr.qp_state;
            self.ctx.provider.qp_state_changed(&mut self.state, attr.qp_state);
        }
        Ok(())
    }

    /// RESET → INIT (RC/UC: access flags; UD: the Q_Key from [`Qp::set_qkey`]).
    pub fn to_init(&mut self, port: u8, pkey_index: u16, access: AccessFlags) -> Result<()> {
        let (a, m) = init_attr(self.qp_type, port, pkey_index, access, self.qkey);
        self.modify(&a, m)
    }

    /// INIT → RTR.
    pub fn to_rtr(&mut self, p: &RtrParams) -> Result<()> {
        let (a, m) = rtr_attr(self.qp_type, p);
        self.modify(&a, m)
    }

    /// RTR → RTS.
    pub fn to_rts(&mut self, p: &RtsParams) -> Result<()> {
        if self.qp_type == QpType::Dct {
            return Err(Error::msg("modify QP to RTS", "a DCT only receives: it stays in RTR"));
        }
        let (a, m) = rts_attr(self.qp_type, p);
        self.modify(&a, m)
    }

    /// QUERY_QP: the kernel's view of the QP (the fields `mask` asks for; see [`query_attr`]).
    pub fn query(&self, mask: QpAttrMask) -> Result<(QpAttr, QpCaps)> {
        let r = cmd::query_qp(&self.ctx.cmd(), self.handle, mask.bits())?;
        Ok(query_attr(&r))
    }

    /// ATTACH_MCAST: this (UD) QP receives sends to the multicast group `gid` (`mlid`: the
    /// group's LID on InfiniBand, 0 on RoCE). Detached again on drop.
    pub fn attach_mcast(&mut self, gid: [u8; 16], mlid: u16) -> Result<()> {
        cmd::attach_mcast(&self.ctx.cmd(), self.handle, gid, mlid)
            .map_err(|e| e.with_detail(format!("{} QP {:#x}, group {}", self.qp_type.name(), self.qpn, gid_text(&gid))))?;
        self.mcast.push((gid, mlid));
        Ok(())
    }

    /// DETACH_MCAST of a group attached with [`Qp::attach_mcast`].
    pub fn detach_mcast(&mut self, gid: [u8; 16], mlid: u16) -> Result<()> {
        cmd::detach_mcast(&self.ctx.cmd(), self.handle, gid, mlid)
            .map_err(|e| e.with_detail(format!("{} QP {:#x}, group {}", self.qp_type.name(), self.qpn, gid_text(&gid))))?;
        self.mcast.retain(|&(g, l)| (g, l) != (gid, mlid));
        Ok(())
    }

    /// The groups this QP is attached to.
    pub fn mcast_groups(&self) -> &[([u8; 16], u16)] {
        &self.mcast
    }

    /// Post send work requests.
    ///
    /// # Safety
    /// The contract of [`Provider::post_send`]: each SGE's memory is valid for reads (and for
    /// writes with READ/atomics), in a live MR under its lkey, until the request completes.
    #[inline(always)]
    pub unsafe fn post_send(&mut self, wrs: &[SendWr<'_>]) -> std::result::Result<(), PostError> {
        // SAFETY: forwarded contract.
        unsafe { self.ctx.provider.post_send(&mut self.state, wrs) }
    }

    /// Post a UMR that configures `mkey` for AES-XTS over `sge` (see
    /// [`Provider::post_crypto_mkey_configure`]).
    ///
    /// # Safety
    /// The contract of [`Provider::post_crypto_mkey_configure`].
    pub unsafe fn post_crypto_mkey_configure(
        &mut self,
        mkey: &mut CryptoMkey<P>,
        sge: &crate::wr::Sge,
        access: AccessFlags,
        attr: &crate::provider::CryptoAttr,
        dek: &Dek<P>,
    ) -> std::result::Result<(), PostError> {
        // SAFETY: forwarded contract.
        unsafe {
            self.ctx.provider.post_crypto_mkey_configure(&mut self.state, &mut mkey.mkey, sge, access.bits(), attr, &dek.dek)
        }
    }

    /// Post receive work requests.
    ///
    /// # Safety
    /// The contract of [`Provider::post_recv`].
    #[inline]
    pub unsafe fn post_recv(&mut self, wrs: &[RecvWr<'_>]) -> std::result::Result<(), PostError> {
        // SAFETY: forwarded contract.
        unsafe { self.ctx.provider.post_recv(&mut self.state, wrs) }
    }
}

impl<P: Provider> Drop for Qp<P> {
    fn drop(&mut self) {
        // The kernel refuses (EBUSY) to destroy a QP that is still attached to a group.
        for (gid, mlid) in std::mem::take(&mut self.mcast) {
            report_drop(cmd::detach_mcast(&self.ctx.cmd(), self.handle, gid, mlid));
        }
        report_drop(cmd::destroy_qp(&self.ctx.cmd(), self.handle).map(|_| ()));
        // SAFETY: dropped exactly once, here, after the kernel QP is gone; the PD/CQ/SRQ
        // references (dropped after this body) keep those objects alive until now.
        unsafe { ManuallyDrop::drop(&mut self.state) };
    }
}

// ================================================================================================
// AH
// ================================================================================================

/// An address handle (UD destinations).
pub struct Ah<P: Provider> {
    state: ManuallyDrop<P::Ah>,
    pd: Arc<Pd<P>>,
    handle: u32,
    number: u32,
}

impl<P: Provider> Ah<P> {
    pub fn new(pd: &Arc<Pd<P>>, attr: &AhAttr) -> Result<Self> {
        let ctx = &pd.ctx;
        let (prep, udata) = ctx.provider.prepare_ah(attr)?;
        let c = ctx.cmd();
        let (handle, drv) = cmd::create_ah(&c, next_user_handle(), pd.handle, &uverbs_ah_attr(attr), &udata)?;
        let state = match ctx.provider.finish_ah(prep, attr, &AhCreated { handle }, &drv) {
            Ok(s) => s,
            Err(e) => {
                let _ = cmd::destroy_ah(&c, handle);
                return Err(e);
            }
        };
        let number = ctx.provider.ah_number(&state);
        Ok(Ah { state: ManuallyDrop::new(state), pd: pd.clone(), handle, number })
    }
    pub fn handle(&self) -> u32 {
        self.handle
    }
    /// What a UD send names this AH by (`UdDest::ah`).
    pub fn number(&self) -> u32 {
        self.number
    }
    pub fn provider_ah(&self) -> &P::Ah {
        &self.state
    }
}

impl<P: Provider> Drop for Ah<P> {
    fn drop(&mut self) {
        report_drop(cmd::destroy_ah(&self.pd.ctx.cmd(), self.handle));
        // SAFETY: dropped once, after the kernel AH is gone.
        unsafe { ManuallyDrop::drop(&mut self.state) };
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn qp_states_and_address_vectors_decode_as_encoded() {
        for v in 0..=6u32 {
            assert_eq!(QpState::from_raw(v) as u32, v);
        }
        // Outside enum ib_qp_state (also a u32 whose low byte is a valid state): Reset.
        for v in [7, 0xff, 0x101, u32::MAX] {
            assert_eq!(QpState::from_raw(v), QpState::Reset);
        }
        let ah = AhAttr {
            dgid: std::array::from_fn(|i| i as u8 + 1),
            flow_label: 0x000a_bcde,
            sgid_index: 3,
            hop_limit: 64,
            traffic_class: 0x28,
            is_global: true,
            dlid: 0x1234,
            sl: 5,
            port_num: 2,
            static_rate: 7,
        };
        assert_eq!(ah_from_uverbs(&uverbs_ah_attr(&ah)), ah);
        let local = AhAttr { is_global: false, ..ah };
        assert_eq!(ah_from_uverbs(&uverbs_ah_attr(&local)), local);
    }

    const RC_INIT: u32 = 0x39;
    const RC_RTR: u32 = 0x129181;
    const RC_RTS: u32 = 0x12E01;

    #[test]
    fn masks_per_type() {
        let acc = AccessFlags::REMOTE_WRITE;
        assert_eq!(init_attr(QpType::Rc, 1, 0, acc, 0).1.bits(), RC_INIT);
        assert_eq!(init_attr(QpType::Uc, 1, 0, acc, 0).1.bits(), RC_INIT);
        assert_eq!(init_attr(QpType::Ud, 1, 0, acc, 7).1.bits(), 0x71);
        let p = RtrParams { path_mtu: 3, dest_qpn: 0x13, rq_psn: 0xc9613b, max_dest_rd_atomic: 1, min_rnr_timer: 12, ..Default::default() };
        assert_eq!(rtr_attr(QpType::Rc, &p).1.bits(), RC_RTR);
        assert_eq!(rtr_attr(QpType::Uc, &p).1.bits(), 0x1 | 0x80 | 0x100 | 0x100000 | 0x1000);
        assert_eq!(rtr_attr(QpType::Ud, &p).1.bits(), 0x1);
        let r = RtsParams::default();
        assert_eq!(rts_attr(QpType::Rc, &r).1.bits(), RC_RTS);
        assert_eq!(rts_attr(QpType::Uc, &r).1.bits(), 0x10001);
        assert_eq!(rts_attr(QpType::Ud, &r).1.bits(), 0x10001);
    }

    #[test]
    fn dc_modify_masks_match_the_mlx5_kernel_rules() {
        // Kernel mlx5 modify_dci_qp_is_ok (DCI) and mlx5_ib_modify_dct (DCT); also perftest's.
        let (a, m) = init_attr(QpType::Dci, 1, 0, AccessFlags::REMOTE_WRITE, 0x1111);
        assert_eq!(m.bits(), 0x1 | 0x10 | 0x20, "DCI INIT: state, pkey index, port");
        assert!(a.qp_access_flags.is_empty());
        let (a, m) = init_attr(QpType::Dct, 1, 0, AccessFlags::REMOTE_WRITE, 0x1111);
        assert_eq!(m.bits(), 0x1 | 0x8 | 0x10 | 0x20, "DCT INIT: + access flags");
        assert_eq!(a.qp_access_flags, AccessFlags::REMOTE_WRITE);
        let p = RtrParams { path_mtu: 3, dest_qpn: 0x99, rq_psn: 5, max_dest_rd_atomic: 4, min_rnr_timer: 12, ah: RtrParams::roce_path(1, [7; 16], 1, 64) };
        let (a, m) = rtr_attr(QpType::Dci, &p);
        assert_eq!(m.bits(), 0x1 | 0x80 | 0x100, "DCI RTR: state, AV, path MTU");
        assert_eq!((a.dest_qp_num, a.rq_psn, a.path_mtu), (0, 0, 3), "no fixed peer");
        assert_eq!(a.ah_attr.dgid, [7; 16]);
        let (a, m) = rtr_attr(QpType::Dct, &p);
        assert_eq!(m.bits(), 0x1 | 0x80 | 0x100 | 0x8000, "DCT RTR: + min RNR timer");
        assert_eq!(a.min_rnr_timer, 12);
        let r = RtsParams { sq_psn: 0x123, ..Default::default() };
        assert_eq!(rts_attr(QpType::Dci, &r).1.bits(), RC_RTS, "DCI RTS: RC's set");
        assert_eq!(QpType::Dci.uverbs_type(), 0xff);
        assert_eq!(QpType::Dct.uverbs_type(), 0xff);
        assert_eq!(QpType::Ud.uverbs_type(), 4);
    }

    #[test]
    fn xrc_masks_are_the_kernels_required_sets() {
        // The kernel's qp_state_table (core/verbs.c): RESET→INIT as RC for both XRC types;
        // INIT→RTR: the initiator as UC (no responder resources), the target as RC;
        // RTR→RTS: the initiator as RC, the target TIMEOUT | SQ_PSN only (anything more is
        // refused by ib_modify_qp_is_ok).
        let acc = AccessFlags::REMOTE_WRITE;
        assert_eq!(init_attr(QpType::XrcIni, 1, 0, acc, 0).1.bits(), RC_INIT);
        assert_eq!(init_attr(QpType::XrcTgt, 1, 0, acc, 0).1.bits(), RC_INIT);
        let p = RtrParams { path_mtu: 3, dest_qpn: 0x13, rq_psn: 1, max_dest_rd_atomic: 1, min_rnr_timer: 12, ..Default::default() };
        assert_eq!(rtr_attr(QpType::XrcIni, &p).1.bits(), 0x1 | 0x80 | 0x100 | 0x100000 | 0x1000);
        assert_eq!(rtr_attr(QpType::XrcTgt, &p).1.bits(), RC_RTR);
        let r = RtsParams::default();
        assert_eq!(rts_attr(QpType::XrcIni, &r).1.bits(), RC_RTS);
        assert_eq!(rts_attr(QpType::XrcTgt, &r).1.bits(), 0x1 | 0x200 | 0x10000);
    }

    #[test]
    fn modify_copies_only_masked_fields() {
        let (mut a, m) = init_attr(QpType::Ud, 1, 0, AccessFlags::all(), 0x11111111);
        a.sq_psn = 99; // not in mask
        let r = modify_request(3, &a, m);
        assert_eq!((r.qp_handle, r.attr_mask, r.qp_state, r.port_num, r.qkey), (3, 0x71, 1, 1, 0x11111111));
        assert_eq!(r.qp_access_flags, 0);
        assert_eq!(r.sq_psn, 0);
    }

    #[test]
    fn roce_and_ib_paths() {
        let p = RtrParams { ah: RtrParams::roce_path(1, [9; 16], 1, 255), path_mtu: 3, ..Default::default() };
        let r = modify_request(3, &rtr_attr(QpType::Rc, &p).0, rtr_attr(QpType::Rc, &p).1);
        assert_eq!((r.dest.is_global, r.dest.sgid_index, r.dest.hop_limit, r.dest.port_num), (1, 1, 255, 1));
        assert_eq!(r.dest.dgid, [9; 16]);
        let p = RtrParams { ah: RtrParams::ib_path(1, 0x17, 2), ..Default::default() };
        let (a, m) = rtr_attr(QpType::Uc, &p);
        let r = modify_request(3, &a, m);
        assert_eq!((r.dest.is_global, r.dest.dlid, r.dest.sl, r.dest.dgid), (0, 0x17, 2, [0; 16]));
    }

    #[test]
    fn static_rate_goes_into_modify_and_comes_back_from_query() {
        use zerocopy::IntoBytes;
        // perftest's HW rate limiter: ah_attr.static_rate = IBV_RATE_10_GBPS (3) at RTR.
        let p = RtrParams { ah: AhAttr { static_rate: 3, ..RtrParams::roce_path(1, [9; 16], 1, 255) }, ..Default::default() };
        let (a, m) = rtr_attr(QpType::Rc, &p);
        let r = modify_request(3, &a, m);
        assert_eq!(r.dest.static_rate, 3);
        assert_eq!(r.alt_dest.static_rate, 0);
        // Byte 29 of ib_uverbs_qp_dest, the first member of the request.
        assert_eq!(r.as_bytes()[29], 3);
        // UD carries no AV at RTR: the rate goes to the address handle instead.
        assert_eq!(modify_request(3, &rtr_attr(QpType::Ud, &p).0, rtr_attr(QpType::Ud, &p).1).dest.static_rate, 0);
        assert_eq!(uverbs_ah_attr(&p.ah).static_rate, 3);

        let mut resp = sys::QueryQpResp::default();
        resp.as_mut_bytes()[29] = 7; // dest.static_rate
        resp.as_mut_bytes()[32 + 29] = 2; // alt_dest.static_rate
        resp.qp_state = 3;
        resp.max_inline_data = 64;
        let (attr, caps) = query_attr(&resp);
        assert_eq!((attr.ah_attr.static_rate, attr.alt_ah_attr.static_rate), (7, 2));
        assert_eq!((attr.qp_state, caps.max_inline_data), (QpState::Rts, 64));
    }

    #[test]
    fn psn_masked_to_24_bits() {
        let p = RtrParams { rq_psn: 0xffff_ffff, ..Default::default() };
        assert_eq!(rtr_attr(QpType::Rc, &p).0.rq_psn, 0xff_ffff);
        let r = RtsParams { sq_psn: 0x1ff_ffff, ..Default::default() };
        assert_eq!(rts_attr(QpType::Rc, &r).0.sq_psn, 0xff_ffff);
    }

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

    #[test]
    fn access_flag_values() {
        assert_eq!((AccessFlags::LOCAL_WRITE | AccessFlags::REMOTE_WRITE | AccessFlags::RELAXED_ORDERING).bits(), 0x100003);
    }
}
