//! The CUDA and ROCm (HSA) loaders (`perftest::gpu`, GPU flavour) against the test doubles of
//! tests/gpu-double/, which hand out host memory: NOT A GPU. What this proves: the symbols resolve, 6.29's lines
//! come out in its order, the buffer is allocated, exported (where the double can) and freed.
//! Nothing about a GPU. Run with `cargo test -p perftest --features gpu --test gpu_double`.
#![cfg(feature = "gpu")]

use std::path::PathBuf;
use std::process::Command;

use perftest::gpu::{CudaMemory, GpuDevice, GpuRequest, GpuRuntime, GpuTouch, RocmMemory};

/// Build the doubles once into this test binary's own directory (the tests run in parallel);
/// None (test skipped, said so) without a C compiler.
fn doubles() -> Option<PathBuf> {
    static BUILT: std::sync::OnceLock<Option<PathBuf>> = std::sync::OnceLock::new();
    let built = BUILT.get_or_init(|| {
        let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..");
        let out = std::env::temp_dir().join(format!("gpu-double-{}", std::process::id()));
        let ok = Command::new(root.join("tests/gpu-double/build.sh"))
            .arg(&out)
            .output()
            .map(|o| o.status.success())
            .unwrap_or(false);
        ok.then_some(out)
    });
    if built.is_none() {
        eprintln!("SKIPPED: cannot build tests/gpu-double (no C compiler?)");
    }
    built.clone()
}

fn double() -> Option<PathBuf> {
    doubles().map(|d| d.join("libcuda.so.1"))
}

fn hsa_double() -> Option<PathBuf> {
    doubles().map(|d| d.join("libhsa-runtime64.so.1"))
}

/// The double runs one touch kernel at a time (as one process has one GPU here): the tests
/// that launch one take turns.
static ONE_KERNEL: std::sync::Mutex<()> = std::sync::Mutex::new(());

fn req(device: GpuDevice, dmabuf: bool) -> GpuRequest {
    GpuRequest {
        runtime: GpuRuntime::Cuda,
        device,
        dmabuf,
        touch: None,
    }
}

#[test]
fn loader_against_the_double() {
    let Some(lib) = double() else { return };
    let _turn = ONE_KERNEL.lock().unwrap_or_else(|e| e.into_inner());
    let lib = lib.to_str().unwrap();
    let mut log = String::new();
    let mem = CudaMemory::open_library(lib, &req(GpuDevice::Index(0), false), &mut log).unwrap();
    let pid = std::process::id();
    assert_eq!(
        log,
        format!(
            "initializing CUDA\nListing all CUDA devices in system:\nCUDA device 0: PCIe address is D0:00\n\nPicking device No. 0\n\
             [pid = {pid}, dev = 0] device name = [rperftest GPU test double 0 (host memory, not a GPU)]\n\
             creating CUDA Ctx\nmaking it the current CUDA Ctx\n"
        )
    );
    log.clear();
    let a = mem
        .alloc(100_000, false, Some(GpuTouch::Once), &mut log)
        .unwrap();
    assert_eq!(a.len(), 100_000);
    assert!(a.dmabuf().is_none());
    assert!(
        log.starts_with(
            "CUDA device integrated: 0\nallocated GPU buffer of a 100000 address at 0x"
        ),
        "{log}"
    );
    assert!(
        log.ends_with(" for type CUDA_MEM_DEVICE\nStarting GPU touching process\n"),
        "{log}"
    );
    // The double ran the kernel's launch on its host memory: the page starts are zero (they were
    // zero already; the infinite-mode test below sees the kernel write).
    // SAFETY: the double maps the allocation in this process, 128 KiB (rounded to 64 KiB).
    let first = unsafe { *(a.addr() as *const u8) };
    assert_eq!(first, 0);
    log.clear();
    let addr = a.addr();
    a.release(&mut log);
    // 6.29 stops its touch kernel (and says so) whether it was once or infinite.
    assert_eq!(
        log,
        format!("stopping CUDA gpu touch running kernel\ndeallocating GPU buffer {addr:016x}\n")
    );
}

/// `--gpu_touch=infinite`: our PTX kernel is loaded at init (the double checks its entry and four
/// parameters), launched at allocation, keeps writing a zero byte every 4 KiB until release sets
/// the stop flag, and release waits for it (the double bounds a kernel that never stops).
#[test]
fn gpu_touch_infinite_writes_page_starts_until_stopped() {
    let Some(lib) = double() else { return };
    let _turn = ONE_KERNEL.lock().unwrap_or_else(|e| e.into_inner());
    let lib = lib.to_str().unwrap();
    let mut r = req(GpuDevice::Index(0), false);
    r.touch = Some(GpuTouch::Infinite);
    let mut log = String::new();
    let mem = CudaMemory::open_library(lib, &r, &mut log).unwrap();
    log.clear();
    let a = mem.alloc(3 * 4096, false, r.touch, &mut log).unwrap();
    assert!(
        log.ends_with(" for type CUDA_MEM_DEVICE\nStarting GPU touching process\n"),
        "{log}"
    );
    let page = (a.addr() + 4096) as *mut u8;
    // SAFETY: the double's allocation is host memory mapped here (64 KiB); the kernel's thread
    // writes only page starts, and these writes race with it on purpose (volatile, bytes).
    unsafe {
        std::ptr::write_volatile(page, 0xab);
        std::ptr::write_volatile(page.add(1), 0xab);
    }
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    // SAFETY: as above.
    while unsafe { std::ptr::read_volatile(page) } != 0 {
        assert!(
            std::time::Instant::now() < deadline,
            "the touch kernel never rewrote the page start"
        );
        std::thread::yield_now();
    }
    // SAFETY: as above.
    let next = unsafe { std::ptr::read_volatile(page.add(1)) };
    assert_eq!(next, 0xab, "the kernel wrote past the page start");
    log.clear();
    let addr = a.addr();
    a.release(&mut log);
    assert_eq!(
        log,
        format!("stopping CUDA gpu touch running kernel\ndeallocating GPU buffer {addr:016x}\n")
    );
}

#[test]
fn bus_id_and_errors_as_6_29() {
    let Some(lib) = double() else { return };
    let lib = lib.to_str().unwrap();
    let mut log = String::new();
    let bus = GpuDevice::BusId("0000:d0:00.0".into());
    CudaMemory::open_library(lib, &req(bus, false), &mut log).unwrap();
    assert!(log.starts_with("initializing CUDA\nFinding PCIe BUS 0000:d0:00.0\nPicking GPU number 0\ninitializing CUDA\n"), "{log}");
    let e = CudaMemory::open_library(
        lib,
        &req(GpuDevice::BusId("0000:3b:00.0".into()), false),
        &mut String::new(),
    )
    .err()
    .unwrap();
    assert_eq!(
        e,
        "cuDeviceGetByPCIBusId failed with error: 101; Failed to get PCI Bus ID (0000:3b:00.0)"
    );
    let e = CudaMemory::open_library(lib, &req(GpuDevice::Index(3), false), &mut String::new())
        .err()
        .unwrap();
    assert_eq!(e, "No such device ID (3) exists in system");
    let e = CudaMemory::open_library(
        "/nonexistent/libcuda.so.1",
        &req(GpuDevice::Index(0), false),
        &mut String::new(),
    )
    .err()
    .unwrap();
    assert!(
        e.starts_with("Failed to load CUDA library dynamically (") && !e.contains('\n'),
        "{e}"
    );
    // dma-buf: the double exports only through /dev/udmabuf (or a memfd stand-in on request).
    if !std::path::Path::new("/dev/udmabuf").exists() {
        let e = CudaMemory::open_library(lib, &req(GpuDevice::Index(0), true), &mut String::new())
            .err()
            .unwrap();
        assert_eq!(e, "DMA-BUF is not supported on this GPU");
    }
}

fn rocm(device: u32, dmabuf: bool) -> GpuRequest {
    GpuRequest {
        runtime: GpuRuntime::Rocm,
        device: GpuDevice::Index(device),
        dmabuf,
        touch: None,
    }
}

#[test]
fn rocm_loader_against_the_double() {
    let Some(lib) = hsa_double() else { return };
    let lib = lib.to_str().unwrap();
    let mut log = String::new();
    let mem = RocmMemory::open_library(lib, &rocm(0, false), &mut log).unwrap();
    assert_eq!(
        log,
        "Using ROCm Device with ID: 0, Name: rperftest GPU test double 0 (host memory, not a GPU), PCI Bus ID: 0xd0, GCN Arch: gfx000\n"
    );
    log.clear();
    // The double refuses allocations from its fine-grained pool: this proves the coarse-grained
    // device pool was picked, as hipMalloc does.
    let a = mem.alloc(100_000, false, &mut log).unwrap();
    assert_eq!(a.len(), 100_000);
    assert!(a.dmabuf().is_none());
    let addr = a.addr();
    assert_eq!(
        log,
        format!("allocated 131072 bytes of GPU buffer at {addr:#x}\n")
    );
    // SAFETY: the double maps the allocation in this process (128 KiB).
    unsafe { std::ptr::write_volatile((addr + 131_071) as *mut u8, 7) };
    log.clear();
    a.release(&mut log);
    assert_eq!(log, format!("deallocating GPU buffer {addr:#x}\n"));
}

#[test]
fn rocm_errors_as_6_29() {
    let Some(lib) = hsa_double() else { return };
    let lib = lib.to_str().unwrap();
    let e = RocmMemory::open_library(lib, &rocm(2, false), &mut String::new())
        .err()
        .unwrap();
    assert_eq!(e, "Requested ROCm device 2 but found only 1 device(s)");
    let e = RocmMemory::open_library(
        "/nonexistent/libhsa-runtime64.so.1",
        &rocm(0, false),
        &mut String::new(),
    )
    .err()
    .unwrap();
    assert!(
        e.starts_with("Failed to load the ROCm runtime dynamically (") && !e.contains('\n'),
        "{e}"
    );
}

/// `--use_rocm_dmabuf`: 6.29's kernel config check passes or says in one line what is missing;
/// the export (asked of an open device directly, so it runs whatever the check says) gives
/// 6.29's lines in its order and an fd where the double can export (udmabuf), else 6.29's line.
#[test]
fn rocm_dmabuf_against_the_double() {
    let Some(lib) = hsa_double() else { return };
    let lib = lib.to_str().unwrap();
    if let Err(e) = RocmMemory::open_library(lib, &rocm(0, true), &mut String::new()) {
        assert!(
            e.starts_with("could not verify dmabuf support from kernel config (")
                && !e.contains('\n'),
            "{e}"
        );
    }
    let mut log = String::new();
    let mem = RocmMemory::open_library(lib, &rocm(0, false), &mut log).unwrap();
    log.clear();
    match mem.alloc(8192, true, &mut log) {
        Ok(a) => {
            let addr = a.addr();
            let (_, off) = a.dmabuf().expect("an exported fd");
            assert_eq!(off, 0);
            assert!(log.starts_with(&format!(
                "using DMA-BUF for GPU buffer address at {addr:#x} aligned at {addr:#x} with aligned size 8192\ndmabuf export addr {addr:#x} 8192 to dmabuf fd "
            )), "{log}");
            assert!(
                log.ends_with(&format!(
                    " offset 0\nallocated 65536 bytes of GPU buffer at {addr:#x}\n"
                )),
                "{log}"
            );
        }
        Err(e) => {
            assert!(
                !std::path::Path::new("/dev/udmabuf").exists(),
                "udmabuf is here but the export failed: {e}"
            );
            assert!(
                log.starts_with("using DMA-BUF for GPU buffer address at 0x"),
                "{log}"
            );
            assert!(
                e.starts_with("failed to export dmabuf handle for addr 0x")
                    && e.ends_with(" / 8192"),
                "{e}"
            );
            eprintln!(
                "SKIPPED the exported fd: no /dev/udmabuf here (VM case 35 covers the memfd stand-in)"
            );
        }
    }
}

/// On a machine with an NVIDIA GPU (tests/hw/gpu-check.sh runs it): the real libcuda.so.1
/// loads, device 0's memory is allocated, exported as a dma-buf and touched, then freed.
#[test]
#[ignore = "needs an NVIDIA GPU and driver: tests/hw/gpu-check.sh"]
fn real_libcuda() {
    let mut log = String::new();
    let mut r = req(GpuDevice::Index(0), true);
    r.touch = Some(GpuTouch::Once);
    let mem = CudaMemory::open(&r, &mut log).unwrap_or_else(|e| panic!("{log}{e}"));
    let a = mem
        .alloc(1 << 20, true, Some(GpuTouch::Once), &mut log)
        .unwrap_or_else(|e| panic!("{log}{e}"));
    assert!(a.dmabuf().is_some(), "no dma-buf fd");
    a.release(&mut log);
    print!("{log}");
}

/// On a machine with an AMD GPU (tests/hw/gpu-check.sh runs it): the real HSA runtime loads,
/// device 0's memory is allocated from its coarse-grained pool, exported as a dma-buf, then freed.
#[test]
#[ignore = "needs an AMD GPU and ROCm: tests/hw/gpu-check.sh"]
fn real_hsa() {
    let mut log = String::new();
    let mem = RocmMemory::open(&rocm(0, false), &mut log).unwrap_or_else(|e| panic!("{log}{e}"));
    let a = mem
        .alloc(1 << 20, true, &mut log)
        .unwrap_or_else(|e| panic!("{log}{e}"));
    assert!(a.dmabuf().is_some(), "no dma-buf fd");
    a.release(&mut log);
    print!("{log}");
}
