//! `--gpu_touch`: perftest 6.29's GPU page touch. 6.29 launches a CUDA kernel from its
//! CUDA-runtime plugin (`cuda_touch_pages<<<1, 1>>>`): one thread writes a zero byte every 4 KiB
//! of the buffer, once, or again and again until the host sets a stop flag in managed memory;
//! the launch is asynchronous, and freeing the buffer sets the flag and waits for the kernel.
//!
//! The driver API has no kernels of its own, so ours is a few lines of PTX written here
//! ([`ptx`]), compiled by the driver at run time (`cuModuleLoadData`) and launched with
//! `cuLaunchKernel`, with the same parameters, grid and stop flag (`cuMemAllocManaged`).

use std::ffi::{c_int, c_uint, c_void};
use std::sync::Arc;

use super::{Api, CuContext, CuDevicePtr, CUDA_SUCCESS};

pub(super) type CuModule = *mut c_void;
pub(super) type CuFunction = *mut c_void;

/// The kernel's name in the PTX.
pub const ENTRY: &str = "rperftest_touch_pages";
/// `CU_MEM_ATTACH_GLOBAL`: the managed flag is reachable from any stream and the host.
const MEM_ATTACH_GLOBAL: c_uint = 1;
/// The targets tried in order: sm_75 (the oldest CUDA 13 compiles for), then sm_50 for older
/// GPUs whose drivers still take it. PTX for an older target runs on every newer GPU.
const TARGETS: [&str; 2] = ["sm_75", "sm_50"];

/// The touch kernel as PTX for `target`: `(u8 *buf, s32 size, s32 *stop, s32 infinite)`, one
/// thread; each pass stores a zero byte at `buf + i` for `i = 0, 4096, …` below `size`; it
/// repeats while `infinite` is set and `*stop` is 0 (both loads volatile, as 6.29's kernel).
pub fn ptx(target: &str) -> String {
    format!(
        r#".version 6.3
.target {target}
.address_size 64

.visible .entry {ENTRY}(
	.param .u64 buf,
	.param .u32 size,
	.param .u64 stop,
	.param .u32 infinite
)
{{
	.reg .pred %p<4>;
	.reg .b16 %rs<2>;
	.reg .b32 %r<5>;
	.reg .b64 %rd<5>;

	ld.param.u64 %rd1, [buf];
	ld.param.u32 %r1, [size];
	ld.param.u64 %rd2, [stop];
	ld.param.u32 %r2, [infinite];
	cvta.to.global.u64 %rd1, %rd1;
	cvta.to.global.u64 %rd2, %rd2;
	mov.u16 %rs1, 0;
PASS:
	mov.u32 %r3, 0;
PAGE:
	setp.ge.s32 %p1, %r3, %r1;
	@%p1 bra PASS_DONE;
	cvt.s64.s32 %rd3, %r3;
	add.s64 %rd4, %rd1, %rd3;
	st.volatile.global.u8 [%rd4], %rs1;
	add.s32 %r3, %r3, 4096;
	bra.uni PAGE;
PASS_DONE:
	setp.eq.s32 %p2, %r2, 0;
	@%p2 bra DONE;
	ld.volatile.global.u32 %r4, [%rd2];
	setp.eq.s32 %p3, %r4, 0;
	@%p3 bra PASS;
DONE:
	ret;
}}
"#
    )
}

/// The loaded kernel and its managed stop flag, for one context. Dropped with that context
/// current and before it is released (its owners' order).
pub(super) struct TouchKernel {
    api: Arc<Api>,
    ctx: CuContext,
    module: CuModule,
    function: CuFunction,
    flag: CuDevicePtr,
}

// SAFETY: module, function, context and flag are opaque driver handles valid on any thread.
unsafe impl Send for TouchKernel {}
// SAFETY: as above; the handles are not mutated after loading (the flag's memory is written
// only through `stop`, by the owner that also waits for the kernel).
unsafe impl Sync for TouchKernel {}

impl TouchKernel {
    /// 6.29's part of `init_gpu` for the touch: the kernel (here compiled from our PTX) and the
    /// stop flag, zeroed. On failure 6.29's line with the driver's error.
    pub(super) fn load(api: &Arc<Api>, ctx: CuContext) -> Result<TouchKernel, String> {
        let mut module: CuModule = std::ptr::null_mut();
        let mut r = CUDA_SUCCESS;
        for target in TARGETS {
            let text = std::ffi::CString::new(ptx(target)).expect("the PTX has no NUL byte");
            // SAFETY: `text` is a NUL-terminated PTX image alive across the call (the driver
            // copies it); `module` is a live local.
            r = unsafe { (api.module_load_data)(&mut module, text.as_ptr().cast()) };
            if r == CUDA_SUCCESS {
                break;
            }
        }
        if r != CUDA_SUCCESS {
            return Err(format!(
                "Failed to load kernel plugin for GPU touch: cuModuleLoadData error={r} (rperftest's PTX kernel)"
            ));
        }
        let mut k = TouchKernel {
            api: api.clone(),
            ctx,
            module,
            function: std::ptr::null_mut(),
            flag: 0,
        };
        let name = std::ffi::CString::new(ENTRY).expect("no NUL byte");
        // SAFETY: `module` was just loaded; `name` is NUL terminated; `function` a live field.
        let r = unsafe { (api.module_get_function)(&mut k.function, k.module, name.as_ptr()) };
        if r != CUDA_SUCCESS {
            return Err(format!(
                "GPU touch not available in kernel plugin (cuModuleGetFunction error={r})"
            ));
        }
        // SAFETY: `flag` is a live field the call writes.
        let r = unsafe {
            (api.mem_alloc_managed)(&mut k.flag, std::mem::size_of::<c_int>(), MEM_ATTACH_GLOBAL)
        };
        if r != CUDA_SUCCESS {
            k.flag = 0;
            return Err(format!("init_gpu_stop_flag() error={r}"));
        }
        // SAFETY: managed memory is reachable by the host at its device address (unified
        // addressing); no kernel runs yet.
        unsafe { std::ptr::write_volatile(k.flag as *mut c_int, 0) };
        Ok(k)
    }

    /// 6.29's `touch_gpu_pages`: launch the kernel on one thread over `[ptr, ptr+size)`,
    /// asynchronously; `infinite` keeps it going until [`TouchKernel::stop`].
    pub(super) fn launch(&self, ptr: CuDevicePtr, size: u64, infinite: bool) -> Result<(), String> {
        let mut buf = ptr;
        // 6.29 passes the size as an int.
        let mut len: c_int = c_int::try_from(size).unwrap_or(c_int::MAX);
        let mut stop = self.flag;
        let mut inf: c_int = infinite.into();
        // SAFETY: the flag is host-reachable managed memory and no kernel of ours runs now (a
        // previous one was waited for in `stop`): a new infinite kernel starts un-stopped.
        unsafe { std::ptr::write_volatile(self.flag as *mut c_int, 0) };
        let mut params: [*mut c_void; 4] = [
            (&mut buf as *mut CuDevicePtr).cast(),
            (&mut len as *mut c_int).cast(),
            (&mut stop as *mut CuDevicePtr).cast(),
            (&mut inf as *mut c_int).cast(),
        ];
        // SAFETY: the function is this module's kernel; `params` points at four live locals of
        // the kernel's parameter types in order (the driver copies them at launch); the buffer
        // and flag stay allocated until `stop` has waited for the kernel.
        let r = unsafe {
            (self.api.ctx_set_current)(self.ctx);
            (self.api.launch_kernel)(
                self.function,
                1,
                1,
                1,
                1,
                1,
                1,
                0,
                std::ptr::null_mut(),
                params.as_mut_ptr(),
                std::ptr::null_mut(),
            )
        };
        if r != CUDA_SUCCESS {
            return Err(format!(
                "GPU touch kernel launch error: cuLaunchKernel error={r}"
            ));
        }
        Ok(())
    }

    /// 6.29's stop in `cuda_memory_free_buffer`: set the flag, wait for the kernel.
    pub(super) fn stop(&self) {
        // SAFETY: the flag is managed memory (host reachable); the kernel reads it volatile, and
        // cuCtxSynchronize below waits for the kernel to see it and finish.
        unsafe {
            std::ptr::write_volatile(self.flag as *mut c_int, 1);
            (self.api.ctx_set_current)(self.ctx);
            (self.api.ctx_synchronize)();
        }
    }
}

impl Drop for TouchKernel {
    fn drop(&mut self) {
        // SAFETY: the flag and module were made in `load` in this context, freed once here, after
        // the kernel was waited for (`stop`, or the synchronize below).
        unsafe {
            (self.api.ctx_set_current)(self.ctx);
            (self.api.ctx_synchronize)();
            if self.flag != 0 {
                (self.api.mem_free)(self.flag);
            }
            (self.api.module_unload)(self.module);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ptx_has_the_entry_its_parameters_in_order_and_the_target() {
        let p = ptx("sm_75");
        assert!(
            p.starts_with(".version 6.3\n.target sm_75\n.address_size 64\n"),
            "{p}"
        );
        let sig = &p[p.find(".entry").unwrap()..p.find(")\n{").unwrap()];
        let params: Vec<&str> = sig
            .lines()
            .filter_map(|l| l.trim().strip_prefix(".param "))
            .collect();
        assert_eq!(
            params,
            [".u64 buf,", ".u32 size,", ".u64 stop,", ".u32 infinite"]
        );
        assert!(p.contains(&format!("\n.visible .entry {ENTRY}(\n")));
        // one byte per 4 KiB, volatile, the flag read only in infinite mode
        assert!(
            p.contains("st.volatile.global.u8 [%rd4], %rs1;")
                && p.contains("add.s32 %r3, %r3, 4096;")
        );
        assert!(
            p.find("@%p2 bra DONE;").unwrap()
                < p.find("ld.volatile.global.u32 %r4, [%rd2];").unwrap()
        );
        // balanced braces, every branch target defined once
        assert_eq!(p.matches('{').count(), p.matches('}').count());
        for label in ["PASS", "PAGE", "PASS_DONE", "DONE"] {
            assert_eq!(p.matches(&format!("\n{label}:\n")).count(), 1, "{label}");
        }
    }
}
