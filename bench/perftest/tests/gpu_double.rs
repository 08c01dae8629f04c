//! The CUDA loader (`perftest::gpu`, GPU flavour) against the test double of tests/gpu-double/,
//! which hands out host memory: NOT A GPU. What this proves: the symbols resolve, 6.29's lines
//! come out in its order, the buffer is allocated, exported (where the double can) and freed.
//! Nothing about a GPU. Run with `cargo test -p perftest --features gpu --test gpu_double`.
#![cfg(feature = "gpu")]

use std::path::PathBuf;
use std::process::Command;

use perftest::gpu::{CudaMemory, GpuDevice, GpuRequest, GpuRuntime, GpuTouch};

/// Build the double into this test's own directory; None (test skipped, said so) without a C compiler.
fn double() -> Option<PathBuf> {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..");
    let out = std::env::temp_dir().join(format!("gpu-double-{}", std::process::id()));
    let ok = Command::new(root.join("tests/gpu-double/build.sh")).arg(&out).output().map(|o| o.status.success()).unwrap_or(false);
    if !ok {
        eprintln!("SKIPPED: cannot build tests/gpu-double (no C compiler?)");
        return None;
    }
    Some(out.join("libcuda.so.1"))
}

fn req(device: GpuDevice, dmabuf: bool) -> GpuRequest {
    GpuRequest { runtime: GpuRuntime::Cuda, device, dmabuf, touch: None }
}

#[test]
fn loader_against_the_double() {
    let Some(lib) = double() else { return };
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
    let a = mem.alloc(100_000, false, Some(GpuTouch::Once), &mut log).unwrap();
    assert_eq!(a.len(), 100_000);
    assert!(a.dmabuf().is_none());
    assert!(log.starts_with("CUDA device integrated: 0\nallocated GPU buffer of a 100000 address at 0x"), "{log}");
    assert!(log.ends_with(" for type CUDA_MEM_DEVICE\nStarting GPU touching process\n"), "{log}");
    // The double's memory is host memory: the touch (cuMemsetD8) wrote zeros there.
    // SAFETY: the double maps the allocation in this process, 128 KiB (rounded to 64 KiB).
    let first = unsafe { *(a.addr() as *const u8) };
    assert_eq!(first, 0);
    log.clear();
    let addr = a.addr();
    a.release(&mut log);
    // 6.29 stops its touch kernel (and says so) whether it was once or infinite.
    assert_eq!(log, format!("stopping CUDA gpu touch running kernel\ndeallocating GPU buffer {addr:016x}\n"));
}

#[test]
fn bus_id_and_errors_as_6_29() {
    let Some(lib) = double() else { return };
    let lib = lib.to_str().unwrap();
    let mut log = String::new();
    let bus = GpuDevice::BusId("0000:d0:00.0".into());
    CudaMemory::open_library(lib, &req(bus, false), &mut log).unwrap();
    assert!(log.starts_with("initializing CUDA\nFinding PCIe BUS 0000:d0:00.0\nPicking GPU number 0\ninitializing CUDA\n"), "{log}");
    let e = CudaMemory::open_library(lib, &req(GpuDevice::BusId("0000:3b:00.0".into()), false), &mut String::new()).err().unwrap();
    assert_eq!(e, "cuDeviceGetByPCIBusId failed with error: 101; Failed to get PCI Bus ID (0000:3b:00.0)");
    let e = CudaMemory::open_library(lib, &req(GpuDevice::Index(3), false), &mut String::new()).err().unwrap();
    assert_eq!(e, "No such device ID (3) exists in system");
    let e = CudaMemory::open_library("/nonexistent/libcuda.so.1", &req(GpuDevice::Index(0), false), &mut String::new()).err().unwrap();
    assert!(e.starts_with("Failed to load CUDA library dynamically (") && !e.contains('\n'), "{e}");
    // dma-buf: the double exports only through /dev/udmabuf (or a memfd stand-in on request).
    if !std::path::Path::new("/dev/udmabuf").exists() {
        let e = CudaMemory::open_library(lib, &req(GpuDevice::Index(0), true), &mut String::new()).err().unwrap();
        assert_eq!(e, "DMA-BUF is not supported on this GPU");
    }
}

/// On a machine with an NVIDIA GPU (tests/hw/gpu-check.sh runs it): the real libcuda.so.1
/// loads, device 0's memory is allocated, exported as a dma-buf and touched, then freed.
#[test]
#[ignore = "needs an NVIDIA GPU and driver: tests/hw/gpu-check.sh"]
fn real_libcuda() {
    let mut log = String::new();
    let r = req(GpuDevice::Index(0), true);
    let mem = CudaMemory::open(&r, &mut log).unwrap_or_else(|e| panic!("{log}{e}"));
    let a = mem.alloc(1 << 20, true, Some(GpuTouch::Once), &mut log).unwrap_or_else(|e| panic!("{log}{e}"));
    assert!(a.dmabuf().is_some(), "no dma-buf fd");
    a.release(&mut log);
    print!("{log}");
}
