//! `libcuda.so.1`, the CUDA driver API, loaded at run time with `dlopen` (libloading) and never
//! linked: the GPU flavour still starts where no NVIDIA driver is installed, and says so in one
//! line when asked for GPU memory. The calls and the lines printed follow perftest 6.29's
//! `cuda_memory.c` (`init_gpu`, `cuda_memory_init`, `cuda_allocate_device_memory_buffer`).
//!
//! Differences, on purpose: the primary context is retained (`cuDevicePrimaryCtxRetain`) where
//! 6.29 creates one (`cuCtxCreate`, whose ABI changed in CUDA 12/13); integrated (Tegra) GPUs
//! are refused; `--gpu_touch` launches our own PTX kernel (`touch.rs`) where 6.29 launches one
//! from its CUDA-runtime plugin.
//!
//! Every `unsafe` here is a call into the loaded library through a pointer whose C signature is
//! the CUDA driver API's (`cuda.h`); the arguments are plain values or pointers to locals.

use std::ffi::{c_char, c_int, c_uint, c_void, CString};
use std::fmt::Write as _;
use std::os::fd::{AsFd, BorrowedFd, FromRawFd, OwnedFd};
use std::sync::Arc;

use super::{device_alloc_size, dmabuf_range, lines, GpuDevice, GpuRequest, GpuTouch};

mod touch;
use touch::{CuFunction, CuModule, TouchKernel};

type CuResult = c_int;
type CuDevice = c_int;
type CuContext = *mut c_void;
type CuDevicePtr = u64;

const CUDA_SUCCESS: CuResult = 0;
const ATTR_INTEGRATED: c_int = 18;
const ATTR_PCI_BUS_ID: c_int = 33;
const ATTR_PCI_DEVICE_ID: c_int = 34;
const ATTR_DMA_BUF_SUPPORTED: c_int = 124;
const HANDLE_TYPE_DMA_BUF_FD: c_int = 1;

/// The entry points used, resolved once. The `_v2` names are the 64-bit ABI `cuda.h` maps the
/// plain names to.
struct Api {
    init: unsafe extern "C" fn(c_uint) -> CuResult,
    device_get_count: unsafe extern "C" fn(*mut c_int) -> CuResult,
    device_get: unsafe extern "C" fn(*mut CuDevice, c_int) -> CuResult,
    device_get_attribute: unsafe extern "C" fn(*mut c_int, c_int, CuDevice) -> CuResult,
    device_get_name: unsafe extern "C" fn(*mut c_char, c_int, CuDevice) -> CuResult,
    device_get_by_pci_bus_id: unsafe extern "C" fn(*mut CuDevice, *const c_char) -> CuResult,
    primary_ctx_retain: unsafe extern "C" fn(*mut CuContext, CuDevice) -> CuResult,
    primary_ctx_release: unsafe extern "C" fn(CuDevice) -> CuResult,
    ctx_set_current: unsafe extern "C" fn(CuContext) -> CuResult,
    ctx_synchronize: unsafe extern "C" fn() -> CuResult,
    mem_alloc: unsafe extern "C" fn(*mut CuDevicePtr, usize) -> CuResult,
    mem_free: unsafe extern "C" fn(CuDevicePtr) -> CuResult,
    mem_alloc_managed: unsafe extern "C" fn(*mut CuDevicePtr, usize, c_uint) -> CuResult,
    module_load_data: unsafe extern "C" fn(*mut CuModule, *const c_void) -> CuResult,
    module_unload: unsafe extern "C" fn(CuModule) -> CuResult,
    module_get_function: unsafe extern "C" fn(*mut CuFunction, CuModule, *const c_char) -> CuResult,
    #[allow(clippy::type_complexity)]
    launch_kernel: unsafe extern "C" fn(
        CuFunction,
        c_uint,
        c_uint,
        c_uint,
        c_uint,
        c_uint,
        c_uint,
        c_uint,
        *mut c_void,
        *mut *mut c_void,
        *mut *mut c_void,
    ) -> CuResult,
    get_handle_for_address_range:
        unsafe extern "C" fn(*mut c_void, CuDevicePtr, usize, c_int, u64) -> CuResult,
    /// Kept last: the pointers above are valid while the library stays loaded.
    _lib: libloading::Library,
}

// SAFETY: the API is a table of plain function pointers into a library that stays loaded while
// the table lives; the CUDA driver API is thread safe.
unsafe impl Send for Api {}
// SAFETY: as above; nothing in the table is mutated after loading.
unsafe impl Sync for Api {}

/// The library's file name (the driver's ABI name; the double in tests/gpu-double/ uses it too).
pub const LIBRARY: &str = "libcuda.so.1";

impl Api {
    fn load(library: &str) -> Result<Api, String> {
        // SAFETY: loading libcuda runs its initialisers, which have no preconditions on us.
        let lib = unsafe { libloading::Library::new(library) }.map_err(|e| {
            format!("Failed to load CUDA library dynamically ({e}); is the NVIDIA driver installed? (docs/gpu.md)")
        })?;
        macro_rules! sym {
            ($name:literal) => {
                // SAFETY: the symbol is the CUDA driver API function of that name; the field's
                // type is its C signature from cuda.h.
                *unsafe { lib.get(concat!($name, "\0").as_bytes()) }
                    .map_err(|e| format!("{library} has no {}: {e} (driver too old?)", $name))?
            };
        }
        Ok(Api {
            init: sym!("cuInit"),
            device_get_count: sym!("cuDeviceGetCount"),
            device_get: sym!("cuDeviceGet"),
            device_get_attribute: sym!("cuDeviceGetAttribute"),
            device_get_name: sym!("cuDeviceGetName"),
            device_get_by_pci_bus_id: sym!("cuDeviceGetByPCIBusId"),
            primary_ctx_retain: sym!("cuDevicePrimaryCtxRetain"),
            primary_ctx_release: sym!("cuDevicePrimaryCtxRelease_v2"),
            ctx_set_current: sym!("cuCtxSetCurrent"),
            ctx_synchronize: sym!("cuCtxSynchronize"),
            mem_alloc: sym!("cuMemAlloc_v2"),
            mem_free: sym!("cuMemFree_v2"),
            mem_alloc_managed: sym!("cuMemAllocManaged"),
            module_load_data: sym!("cuModuleLoadData"),
            module_unload: sym!("cuModuleUnload"),
            module_get_function: sym!("cuModuleGetFunction"),
            launch_kernel: sym!("cuLaunchKernel"),
            get_handle_for_address_range: sym!("cuMemGetHandleForAddressRange"),
            _lib: lib,
        })
    }

    fn attribute(&self, attr: c_int, dev: CuDevice) -> Result<c_int, CuResult> {
        let mut v: c_int = 0;
        // SAFETY: `v` is a live c_int the call writes.
        let r = unsafe { (self.device_get_attribute)(&mut v, attr, dev) };
        if r == CUDA_SUCCESS {
            Ok(v)
        } else {
            Err(r)
        }
    }
}

/// A CUDA device with its primary context current on this thread.
pub struct CudaMemory {
    api: Arc<Api>,
    dev: CuDevice,
    ctx: CuContext,
    /// `--gpu_touch`: the kernel and its stop flag, loaded at init as 6.29 does.
    touch: Option<Arc<TouchKernel>>,
}

// SAFETY: the context handle is an opaque token the driver accepts from any thread.
unsafe impl Send for CudaMemory {}

impl CudaMemory {
    /// 6.29's `cuda_memory_init`: load, find the device (by index or PCIe address), list the
    /// devices, make a context current; with dma-buf, check that the GPU exports them. The
    /// lines 6.29 prints are appended to `log`; an error is 6.29's line.
    pub fn open(req: &GpuRequest, log: &mut String) -> Result<CudaMemory, String> {
        Self::open_library(LIBRARY, req, log)
    }

    /// [`CudaMemory::open`] with the library named by path (the tests load the double this way).
    pub fn open_library(
        library: &str,
        req: &GpuRequest,
        log: &mut String,
    ) -> Result<CudaMemory, String> {
        let api = Arc::new(Api::load(library)?);
        let index = match &req.device {
            GpuDevice::Index(i) => *i as c_int,
            GpuDevice::BusId(bus) => by_bus_id(&api, bus, log)?,
        };
        let (dev, ctx) = init_gpu(&api, index, log)?;
        let mut mem = CudaMemory {
            api,
            dev,
            ctx,
            touch: None,
        };
        if req.touch.is_some() {
            mem.touch = Some(Arc::new(TouchKernel::load(&mem.api, ctx)?));
        }
        if req.dmabuf && mem.api.attribute(ATTR_DMA_BUF_SUPPORTED, dev).unwrap_or(0) == 0 {
            return Err("DMA-BUF is not supported on this GPU".into());
        }
        Ok(mem)
    }

    /// 6.29's `cuda_allocate_device_memory_buffer`: `size` bytes (rounded up to 64 KiB) of device
    /// memory and, with `dmabuf`, its host-page-aligned range exported as a dma-buf fd.
    pub fn alloc(
        &self,
        size: u64,
        dmabuf: bool,
        touch: Option<GpuTouch>,
        log: &mut String,
    ) -> Result<GpuAlloc, String> {
        let integrated = self.api.attribute(ATTR_INTEGRATED, self.dev).unwrap_or(0);
        let _ = writeln!(log, "CUDA device integrated: {:X}", integrated as u32);
        if integrated == 1 {
            return Err("integrated (Tegra) GPUs are not supported by rperftest: their memory is host memory (cuMemAllocHost)".into());
        }
        let len = usize::try_from(device_alloc_size(size))
            .map_err(|_| format!("GPU buffer of {size} bytes too large"))?;
        let mut ptr: CuDevicePtr = 0;
        // SAFETY: `ptr` is a live local the call writes; the context is current on this thread.
        let r = unsafe { (self.api.mem_alloc)(&mut ptr, len) };
        if r != CUDA_SUCCESS {
            return Err(format!("cuMemAlloc error={r}"));
        }
        let mut a = GpuAlloc {
            api: self.api.clone(),
            ctx: self.ctx,
            ptr,
            size,
            dmabuf: None,
            touch: None,
        };
        let kernel = match (touch, &self.touch) {
            (None, _) => None,
            (Some(_), Some(k)) => Some(k.clone()),
            (Some(_), None) => Some(Arc::new(TouchKernel::load(&self.api, self.ctx)?)),
        };
        if dmabuf {
            a.dmabuf = Some(self.export(ptr, size, log)?);
        }
        log.push_str(&lines::allocated(size, ptr));
        if let (Some(t), Some(k)) = (touch, kernel) {
            log.push_str("Starting GPU touching process\n");
            k.launch(ptr, size, t == GpuTouch::Infinite)?;
            a.touch = Some(k);
        }
        Ok(a)
    }

    fn export(
        &self,
        ptr: CuDevicePtr,
        size: u64,
        log: &mut String,
    ) -> Result<(OwnedFd, u64), String> {
        // SAFETY: sysconf has no preconditions.
        let page = unsafe { libc::sysconf(libc::_SC_PAGESIZE) }.max(4096) as u64;
        let range = dmabuf_range(ptr, size, page);
        log.push_str(&lines::dmabuf(ptr, &range));
        let mut fd: c_int = -1;
        let len = range.aligned_size as usize;
        // SAFETY: the handle output is a live c_int (the DMA_BUF_FD handle type writes an int);
        // the range lies inside the allocation made above (rounded to 64 KiB, page aligned).
        let r = unsafe {
            (self.api.get_handle_for_address_range)(
                (&mut fd as *mut c_int).cast(),
                range.aligned_ptr,
                len,
                HANDLE_TYPE_DMA_BUF_FD,
                0,
            )
        };
        if r != CUDA_SUCCESS || fd < 0 {
            return Err(format!("cuMemGetHandleForAddressRange error={r}"));
        }
        // SAFETY: the driver just created this descriptor for us; nothing else owns it.
        Ok((unsafe { OwnedFd::from_raw_fd(fd) }, range.offset))
    }
}

impl Drop for CudaMemory {
    fn drop(&mut self) {
        // The touch kernel's module and flag go while the context still exists.
        self.touch = None;
        // SAFETY: releases the primary context retained in `open`; allocations (GpuAlloc) hold
        // their own reference to the API and are dropped first by their owner.
        unsafe { (self.api.primary_ctx_release)(self.dev) };
    }
}

fn by_bus_id(api: &Api, bus: &str, log: &mut String) -> Result<c_int, String> {
    log.push_str("initializing CUDA\n");
    // SAFETY: cuInit takes flags only.
    let r = unsafe { (api.init)(0) };
    if r != CUDA_SUCCESS {
        return Err(format!("cuInit(0) returned {r}"));
    }
    let _ = writeln!(log, "Finding PCIe BUS {bus}");
    let c = CString::new(bus).map_err(|_| format!("PCIe address {bus:?} contains a NUL byte"))?;
    let mut dev: CuDevice = 0;
    // SAFETY: `c` is a NUL-terminated string alive across the call; `dev` a live local.
    let r = unsafe { (api.device_get_by_pci_bus_id)(&mut dev, c.as_ptr()) };
    if r != CUDA_SUCCESS {
        return Err(format!(
            "cuDeviceGetByPCIBusId failed with error: {r}; Failed to get PCI Bus ID ({bus})"
        ));
    }
    let _ = writeln!(log, "Picking GPU number {dev}");
    Ok(dev)
}

/// 6.29's `init_gpu`.
fn init_gpu(api: &Api, index: c_int, log: &mut String) -> Result<(CuDevice, CuContext), String> {
    log.push_str("initializing CUDA\n");
    // SAFETY: cuInit takes flags only.
    let r = unsafe { (api.init)(0) };
    if r != CUDA_SUCCESS {
        return Err(format!("cuInit(0) returned {r}"));
    }
    let mut count: c_int = 0;
    // SAFETY: `count` is a live local.
    let r = unsafe { (api.device_get_count)(&mut count) };
    if r != CUDA_SUCCESS {
        return Err(format!("cuDeviceGetCount() returned {r}"));
    }
    if count == 0 {
        return Err("There are no available device(s) that support CUDA".into());
    }
    if index >= count {
        return Err(format!("No such device ID ({index}) exists in system"));
    }
    log.push_str("Listing all CUDA devices in system:\n");
    for i in 0..count {
        let d = device(api, i)?;
        let bus = api.attribute(ATTR_PCI_BUS_ID, d).unwrap_or(0);
        let slot = api.attribute(ATTR_PCI_DEVICE_ID, d).unwrap_or(0);
        log.push_str(&lines::pcie(i, bus, slot));
    }
    let _ = writeln!(log, "\nPicking device No. {index}");
    let dev = device(api, index)?;
    let mut name = [0 as c_char; 128];
    // SAFETY: `name` is a live buffer of the length passed.
    unsafe { (api.device_get_name)(name.as_mut_ptr(), name.len() as c_int, dev) };
    let name: Vec<u8> = name
        .iter()
        .take_while(|&&c| c != 0)
        .map(|&c| c as u8)
        .collect();
    log.push_str(&lines::device_name(
        std::process::id(),
        dev,
        &String::from_utf8_lossy(&name),
    ));
    log.push_str("creating CUDA Ctx\n");
    let mut ctx: CuContext = std::ptr::null_mut();
    // SAFETY: `ctx` is a live local; `dev` came from cuDeviceGet.
    let r = unsafe { (api.primary_ctx_retain)(&mut ctx, dev) };
    if r != CUDA_SUCCESS {
        return Err(format!("cuCtxCreate() error={r}"));
    }
    log.push_str("making it the current CUDA Ctx\n");
    // SAFETY: `ctx` was just retained.
    let r = unsafe { (api.ctx_set_current)(ctx) };
    if r != CUDA_SUCCESS {
        // SAFETY: undoes the retain above.
        unsafe { (api.primary_ctx_release)(dev) };
        return Err(format!("cuCtxSetCurrent() error={r}"));
    }
    Ok((dev, ctx))
}

fn device(api: &Api, i: c_int) -> Result<CuDevice, String> {
    let mut d: CuDevice = 0;
    // SAFETY: `d` is a live local.
    let r = unsafe { (api.device_get)(&mut d, i) };
    if r == CUDA_SUCCESS {
        Ok(d)
    } else {
        Err(format!("cuDeviceGet({i}) returned {r}"))
    }
}

/// One device allocation, with its dma-buf fd when exported. Must be dropped before the MR that
/// registers it is used again, after the MR is deregistered (its owner's field order).
pub struct GpuAlloc {
    api: Arc<Api>,
    ctx: CuContext,
    ptr: CuDevicePtr,
    size: u64,
    dmabuf: Option<(OwnedFd, u64)>,
    /// The running (or finished) touch kernel, stopped before the memory is freed.
    touch: Option<Arc<TouchKernel>>,
}

// SAFETY: the device pointer and context are opaque values valid on any thread.
unsafe impl Send for GpuAlloc {}

impl GpuAlloc {
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
        self.dmabuf.as_ref().map(|(fd, off)| (fd.as_fd(), *off))
    }
    /// Stop the touching, free the memory, and say so as 6.29 does.
    pub fn release(mut self, log: &mut String) {
        if let Some(t) = self.touch.take() {
            t.stop();
            log.push_str("stopping CUDA gpu touch running kernel\n");
        }
        log.push_str(&lines::deallocating(self.ptr));
    }
}

impl Drop for GpuAlloc {
    fn drop(&mut self) {
        if let Some(t) = self.touch.take() {
            t.stop();
        }
        self.dmabuf = None;
        // SAFETY: the context is made current on this thread (the drop may run elsewhere) and
        // the pointer is the allocation made in `alloc`, freed once here.
        unsafe {
            (self.api.ctx_set_current)(self.ctx);
            (self.api.mem_free)(self.ptr);
        }
    }
}
