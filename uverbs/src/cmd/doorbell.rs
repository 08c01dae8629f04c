//! The rxe send doorbell: POST_SEND with no work requests, written with an inline `syscall`
//! on x86_64 (the one system call on the rxe send path).

use std::os::fd::{AsRawFd, BorrowedFd};

use zerocopy::IntoBytes;

use crate::error::{Error, Result};
use crate::sys::{self};

use super::{bad_response, command_error};

/// The rxe doorbell: POST_SEND with zero work requests, response at `resp_ptr` (a u32).
/// hdr {28, in_words 8, out_words 1}, body {response, qp_handle, 0, 0, wqe_size 128}.
#[inline]
pub fn encode_post_send_doorbell(resp_ptr: u64, qp_handle: u32) -> [u8; 32] {
    let hdr = sys::CmdHdr { command: sys::CMD_POST_SEND, in_words: 8, out_words: 1 };
    // 128 = sizeof(struct ibv_send_wr), what rdma-core passes; kernels with the 2026 check
    // refuse anything below 56 even with no work requests.
    let body = sys::PostSend { response: resp_ptr, qp_handle, wr_count: 0, sge_count: 0, wqe_size: 128 };
    let mut out = [0u8; 32];
    out[..8].copy_from_slice(hdr.as_bytes());
    out[8..].copy_from_slice(body.as_bytes());
    out
}

/// Ring the rxe doorbell for `qp_handle` (always plain `write()`, as rdma-core does).
#[inline(always)]
pub fn post_send_doorbell(fd: BorrowedFd<'_>, qp_handle: u32) -> Result<()> {
    let mut resp = 0u32;
    let buf = encode_post_send_doorbell(&mut resp as *mut u32 as u64, qp_handle);
    if let Err(e) = doorbell_write(fd, &buf) {
        return Err(doorbell_error(e));
    }
    // With no work requests the kernel reports bad_wr 0; anything else is nonsense.
    if resp != 0 {
        return Err(doorbell_bad_wr(resp));
    }
    Ok(())
}

#[cold]
#[inline(never)]
fn doorbell_error(e: i32) -> Error {
    command_error("POST_SEND", e)
}

#[cold]
#[inline(never)]
fn doorbell_bad_wr(resp: u32) -> Error {
    bad_response("POST_SEND", format!("bad_wr = {resp} with no work requests"))
}

/// write(2) for the doorbell, the one system call on the rxe send path, issued inline on
/// x86_64: libc's wrapper is an indirect call (through the GOT in a static PIE) and, in musl,
/// three more calls for its cancellation point, each of which every post pays.
#[cfg(target_arch = "x86_64")]
#[inline(always)]
pub(super) fn doorbell_write(fd: BorrowedFd<'_>, buf: &[u8]) -> std::result::Result<(), i32> {
    let ret: isize;
    // SAFETY: write(2) reads `buf.len()` bytes at `buf`, a live slice, and writes only the
    // response word whose address the command carries (the caller keeps it alive across the
    // call). The asm names the syscall ABI's clobbers (rcx, r11; rax holds the result), and
    // without `nomem` the compiler keeps `buf` and the response in memory around it.
    unsafe {
        core::arch::asm!(
            "syscall",
            inlateout("rax") libc::SYS_write as isize => ret,
            in("rdi") fd.as_raw_fd(),
            in("rsi") buf.as_ptr(),
            in("rdx") buf.len(),
            lateout("rcx") _,
            lateout("r11") _,
            options(nostack, preserves_flags),
        );
    }
    if ret < 0 {
        // The kernel returns -errno.
        Err(-ret as i32)
    } else if ret as usize != buf.len() {
        Err(libc::EIO)
    } else {
        Ok(())
    }
}

#[cfg(not(target_arch = "x86_64"))]
#[inline(always)]
pub(super) fn doorbell_write(fd: BorrowedFd<'_>, buf: &[u8]) -> std::result::Result<(), i32> {
    sys_write(fd, buf)
}
