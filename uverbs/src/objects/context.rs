//! An opened device ([`Context`]): GET_CONTEXT, the device and port queries, and its async
//! events.

use std::os::fd::{AsFd, AsRawFd, BorrowedFd, OwnedFd};
use std::sync::Arc;
use std::time::Duration;

use zerocopy::FromBytes;

use crate::cmd::{self, Cmd, Transport};
use crate::device::{self, DeviceAttr, DeviceAttrEx, PortAttr};
use crate::error::{Error, Result};
use crate::dv::DevxProvider;
use crate::provider::{DeviceDesc, Provider, SharedFd, Udata};
use crate::sys;

/// An async event read from the context's async fd.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct AsyncEvent {
    /// The object's `user_handle` (CQ/QP/SRQ) or the port number, by event type.
    pub element: u64,
    /// `enum ib_event_type`.
    pub event_type: u32,
}

/// An opened device: the uverbs fd after GET_CONTEXT, its async event fd, and the provider.
pub struct Context<P: Provider> {
    pub(super) provider: P,
    pub(super) async_fd: OwnedFd,
    fd: SharedFd,
    dev: DeviceDesc,
    pub(super) transport: Transport,
    num_comp_vectors: u32,
    core_support: u64,
}

impl<P: Provider> std::fmt::Debug for Context<P> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Context")
            .field("provider", &P::NAME)
            .field("dev", &self.dev)
            .field("transport", &self.transport)
            .finish()
    }
}

/// How the provider context is built from GET_CONTEXT's driver response and its configuration.
type NewContext<P> = fn(SharedFd, &DeviceDesc, &[u8], &<P as Provider>::Config) -> Result<P>;

impl<P: DevxProvider> Context<P> {
    /// Open `dev` as a DEVX context (libmlx5's `mlx5dv_open_device` with
    /// `MLX5DV_CONTEXT_FLAGS_DEVX`), which crypto login, DEKs and crypto mkeys need; commands go
    /// by `transport`, the provider is built as `config` chooses.
    pub fn open_devx(dev: &DeviceDesc, transport: Transport, config: &P::Config) -> Result<Arc<Self>> {
        Self::open_impl(dev, transport, P::context_udata_devx(dev, config), config, P::new_context_devx)
    }
}

impl<P: Provider> Context<P> {
    /// Open `dev` with the default (`write()`) transport and provider configuration, as
    /// libibverbs does.
    pub fn open(dev: &DeviceDesc) -> Result<Arc<Self>> {
        Self::open_with(dev, Transport::default(), &P::Config::default())
    }

    /// Open `/dev/infiniband/<dev.uverbs>`, run GET_CONTEXT (commands go by `transport`) with the
    /// provider's driver data and build the provider context from the answer as `config` chooses.
    pub fn open_with(dev: &DeviceDesc, transport: Transport, config: &P::Config) -> Result<Arc<Self>> {
        Self::open_impl(dev, transport, P::context_udata(dev, config), config, P::new_context)
    }

    /// The open of either kind: GET_CONTEXT with `udata`, the provider context from
    /// `new_context` (plain verbs, or an extension's such as DEVX).
    fn open_impl(
        dev: &DeviceDesc,
        transport: Transport,
        udata: Udata,
        config: &P::Config,
        new_context: NewContext<P>,
    ) -> Result<Arc<Self>> {
        let what = format!("open {} ({})", dev.ibdev, P::NAME);
        let (lo, hi) = P::ABI_RANGE;
        if dev.driver_abi < lo || dev.driver_abi > hi {
            return Err(Error::msg(what, format!("driver ABI {} outside what the {} provider speaks ({lo}..={hi})", dev.driver_abi, P::NAME))
                .with_hint("the kernel driver is newer or older than this tool supports"));
        }
        if dev.driver_id != sys::RDMA_DRIVER_UNKNOWN && dev.driver_id != P::DRIVER_ID {
            return Err(Error::msg(what, format!("driver id {} is not {} ({})", dev.driver_id, P::NAME, P::DRIVER_ID)));
        }
        let fd: SharedFd = Arc::new(device::open_uverbs(&dev.uverbs)?);
        let c = Cmd { fd: fd.as_fd(), transport, driver_id: P::DRIVER_ID };
        if transport == Transport::Ioctl && !cmd::invoke_write_probe(fd.as_fd(), P::DRIVER_ID)? {
            return Err(Error::msg(what, "the kernel has no uverbs ioctl interface")
                .with_hint(format!("use the {}", crate::knob::named(crate::knob::Knob::WriteTransport))));
        }
        let created = cmd::get_context(&c, &udata)?;
        let provider = new_context(fd.clone(), dev, &created.drv_resp, config)?;
        Ok(Arc::new(Context {
            provider,
            async_fd: created.async_fd,
            fd,
            dev: dev.clone(),
            transport,
            num_comp_vectors: created.num_comp_vectors,
            core_support: created.core_support,
        }))
    }

    /// The command target for `uverbs::cmd` functions.
    pub fn cmd(&self) -> Cmd<'_> {
        Cmd { fd: self.fd.as_fd(), transport: self.transport, driver_id: P::DRIVER_ID }
    }
    pub fn provider(&self) -> &P {
        &self.provider
    }
    pub fn fd(&self) -> BorrowedFd<'_> {
        self.fd.as_fd()
    }
    pub fn shared_fd(&self) -> &SharedFd {
        &self.fd
    }
    pub fn async_fd(&self) -> BorrowedFd<'_> {
        self.async_fd.as_fd()
    }
    pub fn device(&self) -> &DeviceDesc {
        &self.dev
    }
    pub fn transport(&self) -> Transport {
        self.transport
    }
    pub fn num_comp_vectors(&self) -> u32 {
        self.num_comp_vectors
    }
    /// `CORE_SUPPORT` bits from the ioctl GET_CONTEXT (0 over write).
    pub fn core_support(&self) -> u64 {
        self.core_support
    }

    pub fn query_device(&self) -> Result<DeviceAttr> {
        cmd::query_device(&self.cmd())
    }
    pub fn query_device_ex(&self) -> Result<DeviceAttrEx> {
        cmd::query_device_ex(&self.cmd())
    }
    pub fn query_port(&self, port: u8) -> Result<PortAttr> {
        cmd::query_port(&self.cmd(), port)
    }
    /// The GID table of every port (ioctl, kernel ≥ 5.10; works whatever the transport).
    pub fn query_gid_table(&self, max_entries: usize) -> Result<Vec<sys::GidEntry>> {
        cmd::query_gid_table(&self.cmd(), max_entries)
    }
    /// One GID entry (ioctl, kernel ≥ 5.10).
    pub fn query_gid_entry(&self, port: u32, index: u32) -> Result<sys::GidEntry> {
        cmd::query_gid_entry(&self.cmd(), port, index)
    }

    /// Wait up to `timeout` (None: forever) for an async event.
    pub fn read_async_event(&self, timeout: Option<Duration>) -> Result<Option<AsyncEvent>> {
        let mut buf = [0u8; 16];
        match poll_read("read async event", self.async_fd.as_fd(), &mut buf, timeout)? {
            None => Ok(None),
            Some(n) => {
                let d = sys::AsyncEventDesc::read_from_prefix(&buf[..n])
                    .map(|(d, _)| d)
                    .map_err(|_| Error::msg("read async event", format!("short event of {n} bytes")))?;
                Ok(Some(AsyncEvent { element: d.element, event_type: d.event_type }))
            }
        }
    }
}

/// poll(2) for readability, then read(2) once. None on timeout.
pub(super) fn poll_read(what: &str, fd: BorrowedFd<'_>, buf: &mut [u8], timeout: Option<Duration>) -> Result<Option<usize>> {
    let ms: i32 = match timeout {
        None => -1,
        Some(d) => d.as_millis().min(i32::MAX as u128) as i32,
    };
    let mut pfd = libc::pollfd { fd: fd.as_raw_fd(), events: libc::POLLIN, revents: 0 };
    loop {
        // SAFETY: `pfd` is one valid pollfd, alive for the call.
        let r = unsafe { libc::poll(&mut pfd, 1, ms) };
        if r < 0 {
            let e = std::io::Error::last_os_error().raw_os_error().unwrap_or(libc::EIO);
            if e == libc::EINTR {
                continue;
            }
            return Err(Error::errno(what, e));
        }
        if r == 0 {
            return Ok(None);
        }
        break;
    }
    // SAFETY: `buf` is a live, exclusively borrowed byte buffer of `buf.len()` bytes.
    let n = unsafe { libc::read(fd.as_raw_fd(), buf.as_mut_ptr().cast(), buf.len()) };
    if n < 0 {
        let e = std::io::Error::last_os_error().raw_os_error().unwrap_or(libc::EIO);
        if e == libc::EAGAIN {
            return Ok(None);
        }
        return Err(Error::errno(what, e));
    }
    Ok(Some(n as usize))
}
