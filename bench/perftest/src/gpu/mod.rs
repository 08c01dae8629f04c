//! Accelerator (GPU) memory for the test buffer: perftest 6.29's `--use_cuda`, `--use_cuda_bus_id`,
//! `--use_cuda_dmabuf`, `--use_rocm`, `--use_rocm_dmabuf` and `--gpu_touch` (its `cuda_memory.c`,
//! `rocm_memory.c`, `memory.h`).
//!
//! * What was asked ([`GpuRequest`]) and the pure arithmetic and text of 6.29 (buffer rounding,
//!   the dma-buf range, the lines it prints) live here and are unit tested.
//! * The GPU runtime itself (`libcuda.so.1`) is loaded at run time, never linked, and only in
//!   the glibc GPU flavour (cargo feature `gpu`): `cuda.rs`. A static musl binary cannot
//!   `dlopen`, so without the feature every GPU option is refused with [`refusal`]'s one line.
//!   docs/gpu.md says why and how to build the flavour.
//!
//! Two registration paths, as 6.29: the device pointer through the ordinary REG_MR (peer memory:
//! nvidia-peermem or amdgpu's peer-memory client resolve it in the kernel), or with
//! `--use_cuda_dmabuf` a dma-buf fd exported by the runtime, registered with uverbs' dma-buf MR
//! method (`uverbs::objects::Mr::register_dmabuf`).

#[cfg(feature = "gpu")]
mod cuda;
#[cfg(feature = "gpu")]
mod rocm;
#[cfg(feature = "gpu")]
pub use cuda::{CudaMemory, GpuAlloc};
#[cfg(feature = "gpu")]
pub use rocm::{RocmAlloc, RocmMemory};

/// What one run holds: the allocation and the runtime it came from, dropped in that order.
#[cfg(feature = "gpu")]
enum Held {
    Cuda(cuda::GpuAlloc, cuda::CudaMemory),
    Rocm(rocm::RocmAlloc, rocm::RocmMemory),
}

/// GPU memory held for one run: the runtime's device context and one allocation (freed first).
/// Its owner keeps it until the MR registering it is deregistered.
pub struct GpuBuffer {
    #[cfg(feature = "gpu")]
    held: Option<Held>,
    #[cfg(not(feature = "gpu"))]
    never: std::convert::Infallible,
}

impl GpuBuffer {
    /// Open the runtime and allocate `size` bytes as `req` asks; the lines 6.29 prints on the
    /// way go to `log`. An error is one line (6.29's where it has one).
    #[cfg(feature = "gpu")]
    pub fn allocate(req: &GpuRequest, size: u64, log: &mut String) -> Result<GpuBuffer, String> {
        let held = match req.runtime {
            GpuRuntime::Cuda => {
                let mem = CudaMemory::open(req, log)?;
                Held::Cuda(mem.alloc(size, req.dmabuf, req.touch, log)?, mem)
            }
            GpuRuntime::Rocm => {
                let mem = RocmMemory::open(req, log)?;
                Held::Rocm(mem.alloc(size, req.dmabuf, log)?, mem)
            }
        };
        Ok(GpuBuffer { held: Some(held) })
    }

    /// Without the GPU flavour there is no runtime to load (the parser refuses first).
    #[cfg(not(feature = "gpu"))]
    pub fn allocate(req: &GpuRequest, _size: u64, _log: &mut String) -> Result<GpuBuffer, String> {
        let opt = if req.runtime == GpuRuntime::Rocm {
            "--use_rocm"
        } else {
            "--use_cuda"
        };
        Err(refusal(opt).trim_start().to_string())
    }

    /// The device address of the buffer (what work requests and the peer's rkey use).
    pub fn addr(&self) -> u64 {
        #[cfg(feature = "gpu")]
        return match &self.held {
            Some(Held::Cuda(a, _)) => a.addr(),
            Some(Held::Rocm(a, _)) => a.addr(),
            None => 0,
        };
        #[cfg(not(feature = "gpu"))]
        match self.never {}
    }

    /// The exported dma-buf and the buffer's offset in it (`--use_cuda_dmabuf`, `--use_rocm_dmabuf`).
    pub fn dmabuf(&self) -> Option<(std::os::fd::BorrowedFd<'_>, u64)> {
        #[cfg(feature = "gpu")]
        return match &self.held {
            Some(Held::Cuda(a, _)) => a.dmabuf(),
            Some(Held::Rocm(a, _)) => a.dmabuf(),
            None => None,
        };
        #[cfg(not(feature = "gpu"))]
        match self.never {}
    }

    /// Free the memory and the context, with 6.29's lines.
    pub fn release(mut self, log: &mut String) {
        #[cfg(feature = "gpu")]
        match self.held.take() {
            Some(Held::Cuda(a, mem)) => {
                a.release(log);
                drop(mem);
                log.push_str("destroying current CUDA Ctx\n");
            }
            Some(Held::Rocm(a, mem)) => {
                a.release(log);
                drop(mem);
            }
            None => {}
        }
        #[cfg(not(feature = "gpu"))]
        {
            let _ = (&mut self, log);
            match self.never {}
        }
    }
}

/// Which runtime owns the memory.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum GpuRuntime {
    Cuda,
    Rocm,
}

/// Which device: by index (`--use_cuda=N`, `--use_rocm=N`) or by PCIe address (`--use_cuda_bus_id`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum GpuDevice {
    Index(u32),
    BusId(String),
}

/// `--gpu_touch=once|infinite`: the GPU reads the buffer once, or keeps reading it while the
/// test runs (memory traffic on the GPU beside the RDMA traffic).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum GpuTouch {
    Once,
    Infinite,
}

/// What the command line asked for.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct GpuRequest {
    pub runtime: GpuRuntime,
    pub device: GpuDevice,
    /// `--use_cuda_dmabuf` / `--use_rocm_dmabuf`: register through a dma-buf fd.
    pub dmabuf: bool,
    pub touch: Option<GpuTouch>,
}

/// Whether this binary can load a GPU runtime (the glibc flavour built with `--features gpu`).
pub const BUILT_IN: bool = cfg!(feature = "gpu");

/// The one line a binary without the GPU flavour prints for a GPU option (6.29 prints
/// ` Unsupported memory type` when it was built without that memory type; we add the way out).
pub fn refusal(option: &str) -> String {
    format!(
        " Unsupported memory type: {option} needs rperftest's GPU build, which loads the GPU runtime \
         (libcuda.so.1, libhsa-runtime64.so.1) at run time (a static musl binary cannot): cargo build --release --features gpu --target x86_64-unknown-linux-gnu; see docs/gpu.md"
    )
}

/// 6.29's ACCEL_PAGE_SIZE: device allocations are rounded up to 64 KiB.
pub const ACCEL_PAGE_SIZE: u64 = 64 * 1024;

/// The size 6.29 allocates on the device for a buffer of `size` bytes.
pub fn device_alloc_size(size: u64) -> u64 {
    size.div_ceil(ACCEL_PAGE_SIZE) * ACCEL_PAGE_SIZE
}

/// The host-page-aligned range 6.29 exports as a dma-buf for `[ptr, ptr+size)`: the start rounded
/// down to the page, the buffer's offset inside the dma-buf, the length rounded up to pages.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DmabufRange {
    pub aligned_ptr: u64,
    pub offset: u64,
    pub aligned_size: u64,
}

pub fn dmabuf_range(ptr: u64, size: u64, host_page: u64) -> DmabufRange {
    let page = host_page.max(1);
    let aligned_ptr = ptr & !(page - 1);
    let offset = ptr - aligned_ptr;
    let aligned_size = (size + offset).div_ceil(page) * page;
    DmabufRange {
        aligned_ptr,
        offset,
        aligned_size,
    }
}

/// 6.29's `rocm_memory_init` test of a kernel config text: both features built in (`strstr` of
/// each `=y` line, as 6.29).
pub fn dmabuf_config_ok(config: &str) -> bool {
    config.contains("CONFIG_DMABUF_MOVE_NOTIFY=y") && config.contains("CONFIG_PCI_P2PDMA=y")
}

/// perftest's fallback after 6.29 where no config file exists: the features' symbols in
/// `/proc/kallsyms` (` dma_buf_move_notify` and a ` pci_p2pdma…` symbol).
pub fn dmabuf_kallsyms_ok(kallsyms: &str) -> bool {
    kallsyms.contains(" dma_buf_move_notify") && kallsyms.contains(" pci_p2pdma")
}

/// The lines 6.29's `cuda_memory.c` and `rocm_memory.c` print, one function each so the text is tested once.
pub mod lines {
    /// `CUDA device %d: PCIe address is %02X:%02X` (bus and device number).
    pub fn pcie(index: i32, bus: i32, dev: i32) -> String {
        format!(
            "CUDA device {index}: PCIe address is {:02X}:{:02X}\n",
            bus as u32, dev as u32
        )
    }
    /// `[pid = %d, dev = %d] device name = [%s]`.
    pub fn device_name(pid: u32, dev: i32, name: &str) -> String {
        format!("[pid = {pid}, dev = {dev}] device name = [{name}]\n")
    }
    /// `using DMA-BUF for GPU buffer address at %#llx aligned at %#llx with aligned size %zu`.
    pub fn dmabuf(ptr: u64, r: &super::DmabufRange) -> String {
        format!(
            "using DMA-BUF for GPU buffer address at {} aligned at {} with aligned size {}\n",
            hash_x(ptr),
            hash_x(r.aligned_ptr),
            r.aligned_size
        )
    }
    /// `allocated GPU buffer of a %lu address at %p for type CUDA_MEM_DEVICE`. 6.29 prints the
    /// address of its local pointer variable there (`addr`, not `*addr`); we print the buffer.
    pub fn allocated(size: u64, ptr: u64) -> String {
        format!(
            "allocated GPU buffer of a {size} address at {} for type CUDA_MEM_DEVICE\n",
            pointer(ptr)
        )
    }
    /// `deallocating GPU buffer %016llx`.
    pub fn deallocating(ptr: u64) -> String {
        format!("deallocating GPU buffer {ptr:016x}\n")
    }
    /// `rocm_memory.c`'s `init_rocm`: `Using ROCm Device with ID: %d, Name: %s, PCI Bus ID: 0x%x,
    /// GCN Arch: %s`.
    pub fn rocm_device(id: u32, name: &str, bus: u32, arch: &str) -> String {
        format!(
            "Using ROCm Device with ID: {id}, Name: {name}, PCI Bus ID: 0x{bus:x}, GCN Arch: {arch}\n"
        )
    }
    /// `using DMA-BUF for GPU buffer address at %p aligned at %p with aligned size %zu` (ROCm
    /// prints pointers with `%p`, CUDA with `%#llx`).
    pub fn rocm_dmabuf(ptr: u64, r: &super::DmabufRange) -> String {
        format!(
            "using DMA-BUF for GPU buffer address at {} aligned at {} with aligned size {}\n",
            pointer(ptr),
            pointer(r.aligned_ptr),
            r.aligned_size
        )
    }
    /// `dmabuf export addr %p %zu to dmabuf fd %d offset %lu`.
    pub fn rocm_exported(ptr: u64, size: u64, fd: i32, offset: u64) -> String {
        format!(
            "dmabuf export addr {} {size} to dmabuf fd {fd} offset {offset}\n",
            pointer(ptr)
        )
    }
    /// `failed to export dmabuf handle for addr %p / %zu` (6.29 ends it without a newline).
    pub fn rocm_export_failed(ptr: u64, size: u64) -> String {
        format!(
            "failed to export dmabuf handle for addr {} / {size}",
            pointer(ptr)
        )
    }
    /// `allocated %lu bytes of GPU buffer at %p` (the size rounded up to 64 KiB).
    pub fn rocm_allocated(buf_size: u64, ptr: u64) -> String {
        format!(
            "allocated {buf_size} bytes of GPU buffer at {}\n",
            pointer(ptr)
        )
    }
    /// `rocm_memory_free_buffer`'s `deallocating GPU buffer %p`.
    pub fn rocm_deallocating(ptr: u64) -> String {
        format!("deallocating GPU buffer {}\n", pointer(ptr))
    }
    /// C's `%#llx`: `0` for zero, else `0x…`.
    fn hash_x(v: u64) -> String {
        if v == 0 {
            "0".into()
        } else {
            format!("{v:#x}")
        }
    }
    /// glibc's `%p`: `(nil)` for null, else `0x…`.
    pub fn pointer(v: u64) -> String {
        if v == 0 {
            "(nil)".into()
        } else {
            format!("{v:#x}")
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn device_allocations_round_to_64k() {
        assert_eq!(device_alloc_size(1), 65536);
        assert_eq!(device_alloc_size(65536), 65536);
        assert_eq!(device_alloc_size(65537), 131072);
        assert_eq!(device_alloc_size(0), 0);
    }

    #[test]
    fn dmabuf_range_rounds_start_down_and_length_up() {
        let r = dmabuf_range(0x7f00_0000_1234, 8192, 4096);
        assert_eq!(
            r,
            DmabufRange {
                aligned_ptr: 0x7f00_0000_1000,
                offset: 0x234,
                aligned_size: 12288
            }
        );
        let r = dmabuf_range(0x20_0000, 65536, 4096);
        assert_eq!(
            r,
            DmabufRange {
                aligned_ptr: 0x20_0000,
                offset: 0,
                aligned_size: 65536
            }
        );
    }

    #[test]
    fn printed_lines_as_cuda_memory_c() {
        assert_eq!(
            lines::pcie(0, 0x3b, 0),
            "CUDA device 0: PCIe address is 3B:00\n"
        );
        assert_eq!(
            lines::device_name(42, 0, "NVIDIA H100"),
            "[pid = 42, dev = 0] device name = [NVIDIA H100]\n"
        );
        let r = dmabuf_range(0x7f00_0020_0000, 65536, 4096);
        assert_eq!(
            lines::dmabuf(0x7f00_0020_0000, &r),
            "using DMA-BUF for GPU buffer address at 0x7f0000200000 aligned at 0x7f0000200000 with aligned size 65536\n"
        );
        assert_eq!(
            lines::deallocating(0x7f00_0020_0000),
            "deallocating GPU buffer 00007f0000200000\n"
        );
        assert_eq!(lines::pointer(0), "(nil)");
    }

    #[test]
    fn printed_lines_as_rocm_memory_c() {
        assert_eq!(
            lines::rocm_device(0, "AMD Instinct MI300X", 0x0c, "gfx942"),
            "Using ROCm Device with ID: 0, Name: AMD Instinct MI300X, PCI Bus ID: 0xc, GCN Arch: gfx942\n"
        );
        let r = dmabuf_range(0x7f00_0020_0000, 65536, 4096);
        assert_eq!(
            lines::rocm_dmabuf(0x7f00_0020_0000, &r),
            "using DMA-BUF for GPU buffer address at 0x7f0000200000 aligned at 0x7f0000200000 with aligned size 65536\n"
        );
        assert_eq!(
            lines::rocm_exported(0x7f00_0020_0000, 65536, 7, 0),
            "dmabuf export addr 0x7f0000200000 65536 to dmabuf fd 7 offset 0\n"
        );
        assert_eq!(
            lines::rocm_export_failed(0x7f00_0020_0000, 65536),
            "failed to export dmabuf handle for addr 0x7f0000200000 / 65536"
        );
        assert_eq!(
            lines::rocm_allocated(131072, 0x7f00_0020_0000),
            "allocated 131072 bytes of GPU buffer at 0x7f0000200000\n"
        );
        assert_eq!(
            lines::rocm_deallocating(0x7f00_0020_0000),
            "deallocating GPU buffer 0x7f0000200000\n"
        );
    }

    #[test]
    fn dmabuf_kernel_checks_as_6_29_and_its_fallback() {
        let both = "CONFIG_DMA_SHARED_BUFFER=y\nCONFIG_DMABUF_MOVE_NOTIFY=y\nCONFIG_PCI_P2PDMA=y\n";
        assert!(dmabuf_config_ok(both));
        assert!(!dmabuf_config_ok(
            "CONFIG_DMABUF_MOVE_NOTIFY=y\n# CONFIG_PCI_P2PDMA is not set\n"
        ));
        assert!(!dmabuf_config_ok(
            "CONFIG_DMABUF_MOVE_NOTIFY=m\nCONFIG_PCI_P2PDMA=y\n"
        ));
        let syms = "ffffffff81a0 T dma_buf_move_notify\nffffffff81b0 T pci_p2pdma_add_resource\n";
        assert!(dmabuf_kallsyms_ok(syms));
        assert!(!dmabuf_kallsyms_ok("ffffffff81a0 T dma_buf_move_notify\n"));
    }

    #[test]
    fn refusal_is_one_line_naming_the_build() {
        let l = refusal("--use_cuda");
        assert!(!l.contains('\n'));
        assert!(l.starts_with(" Unsupported memory type"), "{l}");
        assert!(
            l.contains("--features gpu") && l.contains("docs/gpu.md"),
            "{l}"
        );
    }
}
