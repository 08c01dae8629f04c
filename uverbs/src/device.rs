//! Opening a uverbs character device and the typed answers of the device/port queries.

use std::ffi::CString;
use std::os::fd::{FromRawFd, OwnedFd};

use crate::attr;
use crate::error::{Error, Result};
use crate::sys;

/// Where uverbs character devices live.
pub const DEV_DIR: &str = "/dev/infiniband";

/// Open `/dev/infiniband/<uverbs>` read-write (mmap of rings needs write access), close-on-exec.
pub fn open_uverbs(uverbs: &str) -> Result<OwnedFd> {
    if uverbs.is_empty() || uverbs.contains('/') || uverbs.contains('\0') {
        return Err(Error::msg("open uverbs device", format!("invalid device name {uverbs:?}")));
    }
    let path = format!("{DEV_DIR}/{uverbs}");
    let what = format!("open {path}");
    let c = CString::new(path.clone()).map_err(|_| Error::msg(what.clone(), "NUL in path"))?;
    // SAFETY: `c` is a valid NUL-terminated path; open(2) does not retain it.
    let fd = unsafe { libc::open(c.as_ptr(), libc::O_RDWR | libc::O_CLOEXEC) };
    if fd < 0 {
        let e = Error::last_os(what);
        let hint = match e.errno {
            Some(libc::ENOENT) => "no such device node: is the RDMA driver loaded (rdma link show) and udev running?",
            Some(libc::EACCES) | Some(libc::EPERM) => {
                "no permission: add the user to the group owning /dev/infiniband (often rdma) or run as root"
            }
            _ => "check that the device exists and is not being removed",
        };
        return Err(e.with_hint(hint));
    }
    // SAFETY: open(2) just returned this descriptor and nothing else owns it.
    Ok(unsafe { OwnedFd::from_raw_fd(fd) })
}

/// `enum ibv_mtu` → bytes (0 for unknown values): [`attr::mtu_bytes`] for the kernel's `u8`
/// port and QP fields.
pub fn mtu_bytes(mtu: u8) -> u32 {
    attr::mtu_bytes(mtu.into()).unwrap_or(0)
}

/// Bytes → `enum ibv_mtu` (None unless one of 256..4096): [`attr::mtu_enum`] as the kernel's
/// `u8`.
pub fn mtu_enum(bytes: u32) -> Option<u8> {
    // The five values are 1..=5.
    attr::mtu_enum(bytes).map(|e| e as u8)
}

/// Port attributes (the ioctl QUERY_PORT answer; over write, the `_ex` part is zero).
pub type PortAttr = sys::QueryPortRespEx;
/// Device attributes (QUERY_DEVICE).
pub type DeviceAttr = sys::QueryDeviceResp;
/// Extended device attributes (EX_QUERY_DEVICE).
pub type DeviceAttrEx = sys::ExQueryDeviceResp;

/// Convenience views of a port answer.
pub trait PortAttrExt {
    fn is_active(&self) -> bool;
    fn is_ethernet(&self) -> bool;
    /// The GRH is mandatory (RoCE): address vectors must be global.
    fn grh_required(&self) -> bool;
    fn active_mtu_bytes(&self) -> u32;
}

impl PortAttrExt for PortAttr {
    fn is_active(&self) -> bool {
        self.legacy_resp.state == sys::IB_PORT_ACTIVE
    }
    fn is_ethernet(&self) -> bool {
        self.legacy_resp.link_layer == sys::IB_LINK_LAYER_ETHERNET
    }
    fn grh_required(&self) -> bool {
        self.legacy_resp.flags & 1 != 0 || self.is_ethernet()
    }
    fn active_mtu_bytes(&self) -> u32 {
        mtu_bytes(self.legacy_resp.active_mtu)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mtu_round_trip() {
        for e in 1..=5u8 {
            assert_eq!(mtu_enum(mtu_bytes(e)), Some(e));
        }
        assert_eq!(mtu_bytes(0), 0);
        assert_eq!(mtu_enum(1500), None);
    }

    #[test]
    fn bad_names_refused() {
        assert!(open_uverbs("../x").is_err());
        assert!(open_uverbs("").is_err());
        let e = open_uverbs("uverbs-does-not-exist-42").unwrap_err();
        assert_eq!(e.errno, Some(libc::ENOENT));
        assert!(e.hint.is_some());
    }
}
