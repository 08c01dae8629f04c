//! Driver-namespace methods (`UVERBS_ID_NS` ids; mlx5 DEVX): one call, its encoding and its
//! reply with the outputs a failed call may still carry.

use std::os::fd::BorrowedFd;

use crate::error::{Error, Result};
use crate::ioctl::{self, IoctlBuilder, IoctlReply};

use super::AlignedBuf;

/// One call of a driver-namespace method (`UVERBS_ID_NS` object/method/attribute ids), e.g.
/// mlx5's DEVX_OBJ_CREATE. Attributes go in rdma-core's order: the new handle, the existing
/// handle, the inputs, then the outputs.
#[derive(Clone, Debug, Default)]
pub struct DriverMethod<'a> {
    /// Name for messages (`"DEVX_OBJ_CREATE"`).
    pub name: &'a str,
    pub object: u16,
    pub method: u16,
    /// IDR_NEW attribute: the kernel writes a new object handle there.
    pub idr_new: Option<u16>,
    /// IDR attribute naming an existing object.
    pub idr_in: Option<(u16, u32)>,
    /// PTR_IN attributes (inline when at most 8 bytes).
    pub ins: Vec<(u16, &'a [u8])>,
    /// PTR_OUT attributes and their sizes.
    pub outs: Vec<(u16, usize)>,
}

/// What a driver method left behind. A driver may fail the call and still fill its outputs
/// (mlx5 DEVX answers `EREMOTEIO` with the device's status in the output mailbox), so the
/// outputs come back with the errno.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct DriverReply {
    /// The errno of a failed call; `None` on success.
    pub errno: Option<i32>,
    /// The new handle (`idr_new`), on success.
    pub handle: Option<u32>,
    /// The output buffers, in the order of [`DriverMethod::outs`] (zeros where not written).
    pub outs: Vec<Vec<u8>>,
}

/// Encode `m` with explicit buffer addresses: `in_ptrs[i]` for `m.ins[i]` (unused when inline)
/// and `out_ptrs[i]` for `m.outs[i]`.
pub fn encode_driver_method(driver_id: u32, m: &DriverMethod<'_>, in_ptrs: &[u64], out_ptrs: &[u64]) -> Result<Vec<u8>> {
    let mut b = IoctlBuilder::new(m.object, m.method, driver_id);
    if let Some(id) = m.idr_new {
        b.idr_new(id);
    }
    if let Some((id, h)) = m.idr_in {
        b.idr_in(id, h);
    }
    for (i, (id, bytes)) in m.ins.iter().enumerate() {
        b.ptr_in(*id, bytes, in_ptrs.get(i).copied().unwrap_or(0));
    }
    for (i, (id, len)) in m.outs.iter().enumerate() {
        b.ptr_out(*id, out_ptrs.get(i).copied().unwrap_or(0), *len);
    }
    b.encode().map_err(|e| Error::msg(m.name.to_string(), e.detail.unwrap_or_default()))
}

/// Run a driver-namespace method. `Err` only when the call cannot be encoded or the reply
/// cannot be read; a kernel refusal comes back as [`DriverReply::errno`].
pub fn driver_method(fd: BorrowedFd<'_>, driver_id: u32, m: &DriverMethod<'_>) -> Result<DriverReply> {
    let mut ins: Vec<AlignedBuf> = m.ins.iter().map(|(_, b)| AlignedBuf::from_bytes(b)).collect();
    let mut outs: Vec<AlignedBuf> = m.outs.iter().map(|(_, l)| AlignedBuf::zeroed(*l)).collect();
    let in_ptrs: Vec<u64> = ins.iter_mut().map(|b| b.addr()).collect();
    let out_ptrs: Vec<u64> = outs.iter_mut().map(|b| b.addr()).collect();
    let mut buf = AlignedBuf::from_bytes(&encode_driver_method(driver_id, m, &in_ptrs, &out_ptrs)?);
    // SAFETY: every pointer attribute was encoded from `ins`/`outs`, which live until this
    // function returns, are sized as declared and are not otherwise borrowed during the call.
    let r = unsafe { ioctl::execute(fd, buf.bytes_mut()) };
    let errno = r.err();
    let handle = match (errno, m.idr_new) {
        (None, Some(_)) => Some(IoctlReply::parse(buf.bytes())?.handle(m.name, 0)?),
        _ => None,
    };
    Ok(DriverReply { errno, handle, outs: outs.iter().map(|b| b.bytes().to_vec()).collect() })
}
