//! The GPU memory options as perftest 6.29 applies them (`perftest_parameters.c`, the long-option
//! arm): each is applied where it stands on the command line, so `--use_cuda_dmabuf` and
//! `--gpu_touch` see only what came before them (`--use_cuda=0 --use_cuda_dmabuf` works,
//! the reverse is refused, as in 6.29). The messages are 6.29's.

use super::getopt::{invalid, Found};
use super::{conflict, ParamError, Params};
use crate::gpu::{GpuDevice, GpuRequest, GpuRuntime, GpuTouch};
use bench_core::cparse::strtol0;

/// The options this module applies (the option table maps its own variants onto these, so this
/// module does not name the table).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum GpuOpt {
    UseCuda,
    UseCudaBusId,
    UseCudaDmabuf,
    UseRocm,
    UseRocmDmabuf,
    GpuTouch,
    /// `--mmap`: another memory type.
    Mmap,
}

fn arg<O>(f: &Found<O>) -> &str {
    f.arg.as_deref().unwrap_or("")
}

/// 6.29: `Can't use multiple memory types` when a second memory type follows the first (`--mmap`,
/// `--use_cuda`, `--use_rocm` in any order; the same type twice is allowed).
pub(super) fn check_single_memory_type<O>(
    p: &Params,
    o: GpuOpt,
    f: &Found<O>,
) -> Result<(), ParamError> {
    let wanted = match o {
        GpuOpt::UseCuda | GpuOpt::UseCudaBusId => Some(GpuRuntime::Cuda),
        GpuOpt::UseRocm => Some(GpuRuntime::Rocm),
        _ => None, // --mmap
    };
    let clash = match (&p.buf.gpu, wanted) {
        (Some(g), Some(w)) => g.runtime != w,
        (Some(_), None) => true,
        (None, Some(_)) => p.buf.mmap_file.is_some(),
        (None, None) => false,
    };
    if clash {
        return Err(conflict(&f.spelling, "Can't use multiple memory types"));
    }
    Ok(())
}

/// CHECK_VALUE_NON_NEGATIVE(…, int, name): strtol's value cast to `int`.
fn device_index<O>(f: &Found<O>, name: &str) -> Result<u32, ParamError> {
    let a = arg(f);
    let v = match strtol0(a) {
        None => return Err(invalid(f, format!("{name} argument {a} should be int"))),
        // strtol saturates and the cast to int keeps the low 32 bits.
        Some(Ok(v)) => v as i32,
        Some(Err(())) => -1,
    };
    u32::try_from(v).map_err(|_| invalid(f, format!("{name} must be non-negative int")))
}

pub(super) fn apply<O>(p: &mut Params, o: GpuOpt, f: &Found<O>) -> Result<(), ParamError> {
    match o {
        GpuOpt::UseCuda | GpuOpt::UseCudaBusId | GpuOpt::UseRocm => {
            check_single_memory_type(p, o, f)?;
            let (runtime, device) = match o {
                GpuOpt::UseCuda => (
                    GpuRuntime::Cuda,
                    GpuDevice::Index(device_index(f, "CUDA device")?),
                ),
                GpuOpt::UseRocm => (
                    GpuRuntime::Rocm,
                    GpuDevice::Index(device_index(f, "ROCm device")?),
                ),
                _ => {
                    p.notice_out(&format!("Got PCIe address of: {}\n", arg(f)));
                    (GpuRuntime::Cuda, GpuDevice::BusId(arg(f).to_string()))
                }
            };
            let g = p.buf.gpu.get_or_insert(GpuRequest {
                runtime,
                device: device.clone(),
                dmabuf: false,
                touch: None,
            });
            g.device = device;
        }
        GpuOpt::UseCudaDmabuf | GpuOpt::UseRocmDmabuf => {
            let (runtime, msg) = if o == GpuOpt::UseCudaDmabuf {
                (GpuRuntime::Cuda, "CUDA DMA-BUF cannot be used without CUDA")
            } else {
                (GpuRuntime::Rocm, "ROCm DMA-BUF cannot be used without ROCm")
            };
            match &mut p.buf.gpu {
                Some(g) if g.runtime == runtime => g.dmabuf = true,
                _ => return Err(conflict(&f.spelling, msg)),
            }
        }
        GpuOpt::GpuTouch => apply_touch(p, f)?,
        GpuOpt::Mmap => {}
    }
    Ok(())
}

/// `--gpu_touch`: CUDA memory and `--odp` first, then the keyword (6.29's order of checks).
fn apply_touch<O>(p: &mut Params, f: &Found<O>) -> Result<(), ParamError> {
    let odp = p.buf.odp;
    let Some(g) = p.buf.gpu.as_mut().filter(|g| g.runtime == GpuRuntime::Cuda) else {
        return Err(conflict(
            &f.spelling,
            "GPU touch is not supported for this MEMORY_TYPE",
        ));
    };
    if !odp {
        return Err(conflict(
            &f.spelling,
            "GPU touch is only supported for ODP MR",
        ));
    }
    g.touch = Some(match arg(f) {
        "ONCE" | "once" => GpuTouch::Once,
        "INFINITE" | "infinite" => GpuTouch::Infinite,
        _ => return Err(invalid(f, "Unsupported value for gpu_touch".to_string())),
    });
    Ok(())
}

/// 6.29's `force_dependecies` for CUDA memory: no WRITE latency test
/// (it polls the buffer from the CPU), no inline messages (the CPU would read device memory).
/// ROCm memory gets the same two rules with our own lines: 6.29 lets the CPU poll and read
/// `hipMalloc` memory (large-BAR machines map it), while our HSA allocation is never mapped for
/// the CPU (docs/gpu.md).
pub(super) fn dependencies(p: &Params) -> Result<(), ParamError> {
    let Some(g) = p.buf.gpu.as_ref() else {
        return Ok(());
    };
    let (option, lat, inline) = match g.runtime {
        GpuRuntime::Cuda => (
            "--use_cuda",
            "Perftest doesn't support CUDA latency test with write (without immediate) verb",
            "Perftest doesn't support CUDA tests with inline messages",
        ),
        GpuRuntime::Rocm => (
            "--use_rocm",
            "rperftest doesn't support a ROCm latency test with write (without immediate) verb: the CPU would poll GPU memory; use --write_with_imm or ib_read_lat",
            "rperftest doesn't support ROCm tests with inline messages: the CPU would read GPU memory; leave out -I",
        ),
    };
    if p.kind == super::TestKind::Lat && p.verb == super::Verb::Write {
        return Err(conflict(option, lat));
    }
    // The default inline size becomes 0 where the device is known (tool::limits, as 6.29's
    // ctx_set_max_inline, with its note for CUDA); an explicit one must stay below the size.
    match p.inline_size {
        Some(i) if p.size <= u64::from(i) => {
            Err(conflict(&format!("{option}, -I/--inline_size"), inline))
        }
        _ => Ok(()),
    }
}

/// What this binary cannot do with a GPU request: without the GPU flavour there is no runtime
/// loader at all (the static musl binary).
pub(super) fn refusal(p: &Params) -> Option<ParamError> {
    let g = p.buf.gpu.as_ref()?;
    let opt = match (g.runtime, &g.device) {
        (GpuRuntime::Rocm, _) => "--use_rocm",
        (GpuRuntime::Cuda, GpuDevice::BusId(_)) => "--use_cuda_bus_id",
        (GpuRuntime::Cuda, GpuDevice::Index(_)) => "--use_cuda",
    };
    if crate::gpu::BUILT_IN {
        return None;
    }
    Some(super::error::unsupported(
        opt,
        crate::gpu::refusal(opt).trim_start(),
    ))
}
