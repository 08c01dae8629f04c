//! The ROCm runtime through HSA (`libhsa-runtime64.so.1`), loaded at run time with `dlopen`
//! (libloading) and never linked, as `cuda.rs` loads libcuda. What is done and printed follows
//! perftest 6.29's `rocm_memory.c` (`init_rocm`, `rocm_memory_init`,
//! `rocm_memory_allocate_buffer`, `rocm_memory_free_buffer`).
//!
//! 6.29 calls HIP (`hipGetDeviceCount`, `hipSetDevice`, `hipGetDeviceProperties`, `hipMalloc`,
//! `hipFree`) and HSA for the dma-buf (`hsa_amd_portable_export_dmabuf`). HIP is a C++ runtime
//! over HSA; HSA alone gives the same: device N is the N-th GPU agent (HIP numbers its devices in
//! HSA's agent order), `hipMalloc` is an allocation from the agent's coarse-grained global pool.
//! Differences, on purpose: the GCN arch printed is the agent's ISA name (`gfx942`) without
//! HIP's feature suffix (`:sramecc+:xnack-`), and the CPU never writes the buffer (6.29 fills it
//! with `memcpy`, which needs the GPU memory mapped for the CPU; we keep the CUDA rule).
//!
//! Every `unsafe` here is a call into the loaded library through a pointer whose C signature is
//! HSA's (`hsa.h`, `hsa_ext_amd.h`); the arguments are plain values or pointers to locals.

use std::ffi::{c_char, c_int, c_void};
use std::fmt::Write as _;
use std::os::fd::BorrowedFd;
use std::sync::Arc;

use super::{device_alloc_size, dmabuf_range, lines, GpuDevice, GpuRequest};

/// `hsa_status_t` (a C enum: int sized).
type Status = c_int;
const SUCCESS: Status = 0;
/// `HSA_STATUS_INFO_BREAK`: a callback stopped the iteration (not an error).
const INFO_BREAK: Status = 1;

/// `hsa_agent_t` / `hsa_amd_memory_pool_t`: opaque handles passed by value.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
struct Agent {
    handle: u64,
}
#[repr(C)]
#[derive(Clone, Copy, Debug)]
struct Pool {
    handle: u64,
}

const AGENT_INFO_NAME: c_int = 0;
const AGENT_INFO_DEVICE: c_int = 17;
const DEVICE_TYPE_GPU: u32 = 1;
const AMD_AGENT_INFO_BDFID: c_int = 0xA006;
const AMD_AGENT_INFO_PRODUCT_NAME: c_int = 0xA009;
const POOL_INFO_SEGMENT: c_int = 0;
const POOL_INFO_GLOBAL_FLAGS: c_int = 1;
const POOL_INFO_RUNTIME_ALLOC_ALLOWED: c_int = 5;
const SEGMENT_GLOBAL: u32 = 0;
const GLOBAL_FLAG_COARSE_GRAINED: u32 = 4;

type AgentCallback = unsafe extern "C" fn(Agent, *mut c_void) -> Status;
type PoolCallback = unsafe extern "C" fn(Pool, *mut c_void) -> Status;

/// The entry points used, resolved once.
struct Api {
    init: unsafe extern "C" fn() -> Status,
    shut_down: unsafe extern "C" fn() -> Status,
    iterate_agents: unsafe extern "C" fn(AgentCallback, *mut c_void) -> Status,
    agent_get_info: unsafe extern "C" fn(Agent, c_int, *mut c_void) -> Status,
    iterate_pools: unsafe extern "C" fn(Agent, PoolCallback, *mut c_void) -> Status,
    pool_get_info: unsafe extern "C" fn(Pool, c_int, *mut c_void) -> Status,
    pool_allocate: unsafe extern "C" fn(Pool, usize, u32, *mut *mut c_void) -> Status,
    pool_free: unsafe extern "C" fn(*mut c_void) -> Status,
    export_dmabuf: unsafe extern "C" fn(*const c_void, usize, *mut c_int, *mut u64) -> Status,
    close_dmabuf: unsafe extern "C" fn(c_int) -> Status,
    /// Kept last: the pointers above are valid while the library stays loaded.
    _lib: libloading::Library,
}

// SAFETY: a table of plain function pointers into a library that stays loaded while the table
// lives; the HSA runtime is thread safe.
unsafe impl Send for Api {}
// SAFETY: as above; nothing in the table is mutated after loading.
unsafe impl Sync for Api {}

/// The library's file name (ROCm's ABI name; the double in tests/gpu-double/ uses it too).
pub const LIBRARY: &str = "libhsa-runtime64.so.1";

impl Api {
    fn load(library: &str) -> Result<Api, String> {
        // SAFETY: loading the HSA runtime runs its initialisers, which have no preconditions on us.
        let lib = unsafe { libloading::Library::new(library) }.map_err(|e| {
            format!("Failed to load the ROCm runtime dynamically ({e}); is ROCm installed? (docs/gpu.md)")
        })?;
        macro_rules! sym {
            ($name:literal) => {
                // SAFETY: the symbol is the HSA function of that name; the field's type is its C
                // signature from hsa.h / hsa_ext_amd.h.
                *unsafe { lib.get(concat!($name, "\0").as_bytes()) }
                    .map_err(|e| format!("{library} has no {}: {e} (ROCm too old?)", $name))?
            };
        }
        Ok(Api {
            init: sym!("hsa_init"),
            shut_down: sym!("hsa_shut_down"),
            iterate_agents: sym!("hsa_iterate_agents"),
            agent_get_info: sym!("hsa_agent_get_info"),
            iterate_pools: sym!("hsa_amd_agent_iterate_memory_pools"),
            pool_get_info: sym!("hsa_amd_memory_pool_get_info"),
            pool_allocate: sym!("hsa_amd_memory_pool_allocate"),
            pool_free: sym!("hsa_amd_memory_pool_free"),
            export_dmabuf: sym!("hsa_amd_portable_export_dmabuf"),
            close_dmabuf: sym!("hsa_amd_portable_close_dmabuf"),
            _lib: lib,
        })
    }

    /// A fixed-size attribute of an agent (the caller's `T` is the attribute's C type).
    fn agent_info<T: Copy>(&self, agent: Agent, attr: c_int, zero: T) -> Result<T, Status> {
        let mut v = zero;
        // SAFETY: `v` is a live local of the attribute's C type (the callers pick it per attribute).
        let r = unsafe { (self.agent_get_info)(agent, attr, (&mut v as *mut T).cast()) };
        if r == SUCCESS {
            Ok(v)
        } else {
            Err(r)
        }
    }

    /// A `char[64]` attribute (name, product name) as text.
    fn agent_text(&self, agent: Agent, attr: c_int) -> String {
        let raw = self
            .agent_info(agent, attr, [0 as c_char; 64])
            .unwrap_or([0; 64]);
        let bytes: Vec<u8> = raw
            .iter()
            .take_while(|&&c| c != 0)
            .map(|&c| c as u8)
            .collect();
        String::from_utf8_lossy(&bytes).into_owned()
    }

    fn pool_info<T: Copy>(&self, pool: Pool, attr: c_int, zero: T) -> T {
        let mut v = zero;
        // SAFETY: `v` is a live local of the attribute's C type.
        let r = unsafe { (self.pool_get_info)(pool, attr, (&mut v as *mut T).cast()) };
        if r == SUCCESS {
            v
        } else {
            zero
        }
    }
}

/// The GPU agents in HSA's order (HIP's device numbering).
fn gpu_agents(api: &Api) -> Result<Vec<Agent>, String> {
    unsafe extern "C" fn collect(agent: Agent, data: *mut c_void) -> Status {
        // SAFETY: `data` is the `&mut (&Api, Vec<Agent>)` passed below, alive during the iteration.
        let (api, out) = unsafe { &mut *data.cast::<(&Api, Vec<Agent>)>() };
        if api.agent_info(agent, AGENT_INFO_DEVICE, 0u32) == Ok(DEVICE_TYPE_GPU) {
            out.push(agent);
        }
        SUCCESS
    }
    let mut found: (&Api, Vec<Agent>) = (api, Vec::new());
    // SAFETY: the callback matches HSA's agent callback type; `found` outlives the call.
    let r =
        unsafe { (api.iterate_agents)(collect, (&mut found as *mut (&Api, Vec<Agent>)).cast()) };
    if r != SUCCESS {
        return Err(format!("hsa_iterate_agents() returned {r:#x}"));
    }
    Ok(found.1)
}

/// The agent's pool `hipMalloc` allocates from: global segment, coarse grained, allocatable.
fn device_pool(api: &Api, agent: Agent) -> Option<Pool> {
    unsafe extern "C" fn pick(pool: Pool, data: *mut c_void) -> Status {
        // SAFETY: `data` is the `&mut (&Api, Option<Pool>)` passed below, alive during the iteration.
        let (api, out) = unsafe { &mut *data.cast::<(&Api, Option<Pool>)>() };
        let usable = api.pool_info(pool, POOL_INFO_SEGMENT, u32::MAX) == SEGMENT_GLOBAL
            && api.pool_info(pool, POOL_INFO_GLOBAL_FLAGS, 0u32) & GLOBAL_FLAG_COARSE_GRAINED != 0
            && api.pool_info(pool, POOL_INFO_RUNTIME_ALLOC_ALLOWED, false);
        if usable {
            *out = Some(pool);
            return INFO_BREAK;
        }
        SUCCESS
    }
    let mut found: (&Api, Option<Pool>) = (api, None);
    // SAFETY: the callback matches HSA's pool callback type; `found` outlives the call.
    let r = unsafe {
        (api.iterate_pools)(
            agent,
            pick,
            (&mut found as *mut (&Api, Option<Pool>)).cast(),
        )
    };
    if r != SUCCESS && r != INFO_BREAK {
        return None;
    }
    found.1
}

/// A ROCm GPU picked as 6.29's `init_rocm` does, with the HSA runtime open (shut down on drop).
pub struct RocmMemory {
    api: Arc<Api>,
    pool: Pool,
}

impl RocmMemory {
    /// 6.29's `rocm_memory_init`: load, find device N, print its line; with dma-buf, check that
    /// the kernel can take GPU dma-bufs. An error is one line (6.29's where it has one).
    pub fn open(req: &GpuRequest, log: &mut String) -> Result<RocmMemory, String> {
        Self::open_library(LIBRARY, req, log)
    }

    /// [`RocmMemory::open`] with the library named by path (the tests load the double this way).
    pub fn open_library(
        library: &str,
        req: &GpuRequest,
        log: &mut String,
    ) -> Result<RocmMemory, String> {
        let api = Api::load(library)?;
        // SAFETY: hsa_init takes no arguments; it is reference counted, undone in Drop.
        let r = unsafe { (api.init)() };
        if r != SUCCESS {
            return Err(format!(
                "hsa_init() returned {r:#x}; is the amdgpu driver loaded (/dev/kfd)? Couldn't initialize ROCm device"
            ));
        }
        // From here Drop shuts the runtime down again on every error path.
        let mut mem = RocmMemory {
            api: Arc::new(api),
            pool: Pool { handle: 0 },
        };
        let GpuDevice::Index(id) = req.device else {
            return Err("ROCm devices are picked by index (--use_rocm=N)".into());
        };
        let agents = gpu_agents(&mem.api)?;
        let Some(&agent) = agents.get(id as usize) else {
            return Err(format!(
                "Requested ROCm device {id} but found only {} device(s)",
                agents.len()
            ));
        };
        let bdf = mem
            .api
            .agent_info(agent, AMD_AGENT_INFO_BDFID, 0u32)
            .unwrap_or(0);
        let name = mem.api.agent_text(agent, AMD_AGENT_INFO_PRODUCT_NAME);
        let arch = mem.api.agent_text(agent, AGENT_INFO_NAME);
        log.push_str(&lines::rocm_device(id, &name, (bdf >> 8) & 0xff, &arch));
        mem.pool = device_pool(&mem.api, agent).ok_or_else(|| {
            format!("ROCm device {id} has no coarse-grained global memory pool to allocate from")
        })?;
        if req.dmabuf {
            kernel_takes_dmabuf()?;
        }
        Ok(mem)
    }

    /// 6.29's `rocm_memory_allocate_buffer`: `size` bytes rounded up to 64 KiB and, with `dmabuf`,
    /// the buffer exported as a dma-buf (`hsa_amd_portable_export_dmabuf`).
    pub fn alloc(&self, size: u64, dmabuf: bool, log: &mut String) -> Result<RocmAlloc, String> {
        let buf_size = device_alloc_size(size);
        let len = usize::try_from(buf_size)
            .map_err(|_| format!("GPU buffer of {size} bytes too large"))?;
        let mut ptr: *mut c_void = std::ptr::null_mut();
        // SAFETY: `ptr` is a live local the call writes; the pool came from this runtime.
        let r = unsafe { (self.api.pool_allocate)(self.pool, len, 0, &mut ptr) };
        if r != SUCCESS || ptr.is_null() {
            return Err(format!("hipMalloc error={r}"));
        }
        let mut a = RocmAlloc {
            api: self.api.clone(),
            ptr: ptr as u64,
            size,
            dmabuf: None,
        };
        if dmabuf {
            a.dmabuf = Some(self.export(a.ptr, size, log)?);
        }
        log.push_str(&lines::rocm_allocated(buf_size, a.ptr));
        Ok(a)
    }

    fn export(&self, ptr: u64, size: u64, log: &mut String) -> Result<(c_int, u64), String> {
        // SAFETY: sysconf has no preconditions.
        let page = unsafe { libc::sysconf(libc::_SC_PAGESIZE) }.max(4096) as u64;
        let range = dmabuf_range(ptr, size, page);
        log.push_str(&lines::rocm_dmabuf(ptr, &range));
        let (mut fd, mut offset): (c_int, u64) = (0, range.offset);
        // SAFETY: `fd` and `offset` are live locals the call writes; 6.29 exports from the buffer's
        // own address for the page-rounded length, inside the 64 KiB-rounded allocation.
        let r = unsafe {
            (self.api.export_dmabuf)(
                ptr as *const c_void,
                range.aligned_size as usize,
                &mut fd,
                &mut offset,
            )
        };
        if r != SUCCESS || fd < 0 {
            return Err(lines::rocm_export_failed(ptr, range.aligned_size));
        }
        log.push_str(&lines::rocm_exported(ptr, range.aligned_size, fd, offset));
        Ok((fd, offset))
    }
}

impl Drop for RocmMemory {
    fn drop(&mut self) {
        // SAFETY: undoes the hsa_init of `open_library`; allocations are freed first by their
        // owner (GpuBuffer's field order).
        unsafe { (self.api.shut_down)() };
    }
}

/// One allocation from the device pool, with its dma-buf fd when exported.
pub struct RocmAlloc {
    api: Arc<Api>,
    ptr: u64,
    size: u64,
    dmabuf: Option<(c_int, u64)>,
}

impl RocmAlloc {
    pub fn addr(&self) -> u64 {
        self.ptr
    }
    pub fn len(&self) -> u64 {
        self.size
    }
    pub fn is_empty(&self) -> bool {
        self.size == 0
    }
    /// The exported dma-buf and the buffer's offset in it.
    pub fn dmabuf(&self) -> Option<(BorrowedFd<'_>, u64)> {
        // SAFETY: the fd was exported for this allocation and stays open until Drop closes it.
        self.dmabuf
            .map(|(fd, off)| (unsafe { BorrowedFd::borrow_raw(fd) }, off))
    }
    /// Free the memory and say so as 6.29 does.
    pub fn release(self, log: &mut String) {
        log.push_str(&lines::rocm_deallocating(self.ptr));
    }
}

impl Drop for RocmAlloc {
    fn drop(&mut self) {
        // SAFETY: the fd is the runtime's export of this allocation, closed once here; the pointer
        // is the allocation made in `alloc`, freed once here, after the MR using it is gone.
        unsafe {
            if let Some((fd, _)) = self.dmabuf.take() {
                (self.api.close_dmabuf)(fd);
            }
            (self.api.pool_free)(self.ptr as *mut c_void);
        }
    }
}

/// 6.29's check before a ROCm dma-buf: the kernel's config has `CONFIG_DMABUF_MOVE_NOTIFY=y` and
/// `CONFIG_PCI_P2PDMA=y` (`/boot/config-<release>`); where that file is missing (containers),
/// perftest after 6.29 looks for the two features' symbols in `/proc/kallsyms`, and so do we.
fn kernel_takes_dmabuf() -> Result<(), String> {
    let release = kernel_release();
    let config = format!("/boot/config-{release}");
    if std::fs::read_to_string(&config).is_ok_and(|t| super::dmabuf_config_ok(&t)) {
        return Ok(());
    }
    if std::fs::read_to_string("/proc/kallsyms").is_ok_and(|t| super::dmabuf_kallsyms_ok(&t)) {
        return Ok(());
    }
    let mut m = String::from("could not verify dmabuf support from kernel config");
    let _ = write!(
        m,
        " (CONFIG_DMABUF_MOVE_NOTIFY=y and CONFIG_PCI_P2PDMA=y in {config}, or their symbols in /proc/kallsyms); leave out --use_rocm_dmabuf to register the device pointer (peer memory)"
    );
    Err(m)
}

fn kernel_release() -> String {
    // SAFETY: utsname is plain data; uname fills it.
    let mut u: libc::utsname = unsafe { std::mem::zeroed() };
    // SAFETY: `u` is a live utsname.
    if unsafe { libc::uname(&mut u) } != 0 {
        return String::new();
    }
    let bytes: Vec<u8> = u
        .release
        .iter()
        .take_while(|&&c| c != 0)
        .map(|&c| c as u8)
        .collect();
    String::from_utf8_lossy(&bytes).into_owned()
}
