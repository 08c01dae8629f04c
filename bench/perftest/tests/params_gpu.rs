//! The GPU memory options against perftest 6.29's parser (`perftest_parameters.c`, the long-option
//! arm, `force_dependecies`, `ctx_set_max_inline`): messages, the order they are applied in, the
//! conflicts. A binary without the GPU flavour refuses every request in one line naming the build;
//! the tests of what a GPU build accepts run with `cargo test -p perftest --features gpu`.

use perftest::params::{ErrorKind, Tool};

mod common;
use common::err;

/// Errors raised while the options are applied: the same in every build.
#[test]
fn conflicts_as_6_29() {
    let rows: &[(&[&str], ErrorKind, &str)] = &[
        (
            &["--use_cuda_dmabuf", "--use_cuda=0"],
            ErrorKind::Conflict,
            "CUDA DMA-BUF cannot be used without CUDA",
        ),
        (
            &["--use_rocm_dmabuf"],
            ErrorKind::Conflict,
            "ROCm DMA-BUF cannot be used without ROCm",
        ),
        (
            &["--use_cuda=0", "--use_rocm_dmabuf"],
            ErrorKind::Conflict,
            "ROCm DMA-BUF cannot be used without ROCm",
        ),
        (
            &["--use_cuda=0", "--use_rocm=0"],
            ErrorKind::Conflict,
            "Can't use multiple memory types",
        ),
        (
            &["--use_rocm=0", "--use_cuda_bus_id=0000:3b:00.0"],
            ErrorKind::Conflict,
            "Can't use multiple memory types",
        ),
        (
            &["--mmap=/tmp/f", "--use_cuda=0"],
            ErrorKind::Conflict,
            "Can't use multiple memory types",
        ),
        (
            &["--use_cuda=0", "--mmap=/tmp/f"],
            ErrorKind::Conflict,
            "Can't use multiple memory types",
        ),
        (
            &["--use_cuda=x"],
            ErrorKind::InvalidValue,
            "CUDA device argument x should be int",
        ),
        (
            &["--use_cuda=-1"],
            ErrorKind::InvalidValue,
            "CUDA device must be non-negative int",
        ),
        (
            &["--use_rocm=1z"],
            ErrorKind::InvalidValue,
            "ROCm device argument 1z should be int",
        ),
        (
            &["--gpu_touch=once"],
            ErrorKind::Conflict,
            "GPU touch is not supported for this MEMORY_TYPE",
        ),
        (
            &["--use_rocm=0", "--gpu_touch=once"],
            ErrorKind::Conflict,
            "GPU touch is not supported for this MEMORY_TYPE",
        ),
        (
            &["--use_cuda=0", "--gpu_touch=once"],
            ErrorKind::Conflict,
            "GPU touch is only supported for ODP MR",
        ),
        (
            &["--use_cuda=0", "--gpu_touch=once", "--odp"],
            ErrorKind::Conflict,
            "GPU touch is only supported for ODP MR",
        ),
        (
            &["--use_cuda=0", "--odp", "--gpu_touch=twice"],
            ErrorKind::InvalidValue,
            "Unsupported value for gpu_touch",
        ),
    ];
    for (a, kind, msg) in rows {
        let e = err(Tool::WriteBw, a);
        assert_eq!((e.kind, e.message.as_str()), (*kind, *msg), "{a:?}");
    }
}

/// The accelerators rperftest does not load keep one line each.
#[test]
fn other_accelerators_refused_in_one_line() {
    for o in [
        "--use_neuron=0",
        "--use_hl=0000:01:00.0",
        "--use_mlu=0",
        "--use_musa=0",
        "--use_opencl=0",
        "--use_cuda_pcie_mapping",
        "--cuda_mem_type=1",
    ] {
        let e = err(Tool::WriteBw, &[o]);
        assert_eq!(e.kind, ErrorKind::Unsupported, "{o}");
        assert!(!e.to_string().contains('\n'), "{o}: {e}");
        assert!(e.message.contains("--use_cuda"), "{o}: {e}");
    }
}

#[cfg(not(feature = "gpu"))]
#[test]
fn without_the_gpu_flavour_one_line_names_the_build() {
    for a in [
        &["--use_cuda=0"][..],
        &["--use_cuda_bus_id=0000:3b:00.0"],
        &["--use_rocm=0"],
        &["--use_cuda=0", "--use_cuda_dmabuf"],
    ] {
        let e = err(Tool::WriteBw, a);
        assert_eq!(e.kind, ErrorKind::Unsupported, "{a:?}");
        assert_eq!(e.exit_code(), 1);
        let line = e.to_string();
        assert!(!line.contains('\n'), "{line}");
        assert!(
            line.contains("Unsupported memory type") && line.contains("--features gpu"),
            "{line}"
        );
    }
}

#[cfg(feature = "gpu")]
mod gpu_build {
    use super::common::{args, err, parse};
    use perftest::gpu::{GpuDevice, GpuRequest, GpuRuntime, GpuTouch};
    use perftest::params::{ErrorKind, ParseOutcome, Tool};

    fn ok(tool: Tool, a: &[&str]) -> perftest::params::Params {
        match parse(tool, &args(a)) {
            Ok(ParseOutcome::Run(p)) => *p,
            other => panic!("{a:?}: {other:?}"),
        }
    }

    #[test]
    fn cuda_requests() {
        let p = ok(Tool::WriteBw, &["--use_cuda=1", "--use_cuda_dmabuf"]);
        let want = GpuRequest {
            runtime: GpuRuntime::Cuda,
            device: GpuDevice::Index(1),
            dmabuf: true,
            touch: None,
        };
        assert_eq!(p.buf.gpu, Some(want));
        // The default inline size stays to the device check (tool::limits, 6.29's ctx_set_max_inline).
        assert_eq!(p.inline_size, None);
        let p = ok(
            Tool::ReadBw,
            &[
                "--use_cuda_bus_id=0000:3b:00.0",
                "--odp",
                "--gpu_touch=INFINITE",
            ],
        );
        assert_eq!(
            p.buf.gpu.as_ref().map(|g| (&g.device, g.touch)),
            Some((
                &GpuDevice::BusId("0000:3b:00.0".into()),
                Some(GpuTouch::Infinite)
            ))
        );
        assert!(p
            .notices
            .iter()
            .any(|n| n.text == "Got PCIe address of: 0000:3b:00.0\n" && !n.to_stderr));
        // The same type twice is allowed; the later device wins.
        let p = ok(
            Tool::WriteBw,
            &["--use_cuda=0", "--use_cuda_bus_id=0000:3b:00.0"],
        );
        assert_eq!(
            p.buf.gpu.map(|g| g.device),
            Some(GpuDevice::BusId("0000:3b:00.0".into()))
        );
    }

    #[test]
    fn cuda_rules_of_force_dependencies() {
        let e = err(Tool::WriteLat, &["--use_cuda=0"]);
        assert_eq!(
            e.message,
            "Perftest doesn't support CUDA latency test with write (without immediate) verb"
        );
        let e = err(Tool::WriteBw, &["--use_cuda=0", "-s", "64", "-I", "64"]);
        assert_eq!(
            e.message,
            "Perftest doesn't support CUDA tests with inline messages"
        );
        // write_lat with immediate and the other latency tests take CUDA memory.
        ok(Tool::WriteLat, &["--use_cuda=0", "--write_with_imm"]);
        ok(Tool::ReadLat, &["--use_cuda=0"]);
    }

    #[test]
    fn rocm_requests_and_our_rules() {
        let p = ok(Tool::WriteBw, &["--use_rocm=1", "--use_rocm_dmabuf"]);
        let want = GpuRequest {
            runtime: GpuRuntime::Rocm,
            device: GpuDevice::Index(1),
            dmabuf: true,
            touch: None,
        };
        assert_eq!(p.buf.gpu, Some(want));
        // 6.29 lets the CPU poll and inline from hipMalloc memory; ours is not CPU-mapped.
        let e = err(Tool::WriteLat, &["--use_rocm=0"]);
        assert_eq!(e.kind, ErrorKind::Conflict);
        assert!(
            e.message
                .starts_with("rperftest doesn't support a ROCm latency test with write"),
            "{e}"
        );
        let e = err(Tool::SendBw, &["--use_rocm=0", "-s", "64", "-I", "64"]);
        assert!(
            e.message
                .starts_with("rperftest doesn't support ROCm tests with inline messages"),
            "{e}"
        );
        ok(Tool::WriteLat, &["--use_rocm=0", "--write_with_imm"]);
        ok(Tool::ReadLat, &["--use_rocm=0"]);
    }
}
