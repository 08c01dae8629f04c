//! RDMA netlink (`NETLINK_RDMA`, client `RDMA_NL_NLDEV`): the device list and char devices.
//!
//! Two layers: pure message building and parsing over bytes (no I/O; every length bounded,
//! malformed input is an error, never a panic or an endless loop — fuzzed), and a small
//! blocking client over a `libc` netlink socket with a receive timeout.
//!
//! RDMA netlink messages have no family header: the attributes follow the `nlmsghdr` directly.
//! Integers are host-endian; strings are NUL-terminated.

use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};

use crate::error::{Error, Result};

/// `NETLINK_RDMA` protocol number.
pub const NETLINK_RDMA: i32 = 20;
/// `RDMA_NL_NLDEV` client.
pub const RDMA_NL_NLDEV: u16 = 5;

/// `RDMA_NLDEV_CMD_*` operations used here.
pub const CMD_GET: u16 = 1;
pub const CMD_PORT_GET: u16 = 5;
pub const CMD_SYS_GET: u16 = 6;
pub const CMD_GET_CHARDEV: u16 = 15;

/// `RDMA_NLDEV_ATTR_*` / `RDMA_NLDEV_SYS_ATTR_*` numbers (rdma_netlink.h, kernel 6.1).
pub const ATTR_DEV_INDEX: u16 = 1;
pub const ATTR_DEV_NAME: u16 = 2;
pub const ATTR_PORT_INDEX: u16 = 3;
pub const ATTR_CAP_FLAGS: u16 = 4;
pub const ATTR_FW_VERSION: u16 = 5;
pub const ATTR_NODE_GUID: u16 = 6;
pub const ATTR_SYS_IMAGE_GUID: u16 = 7;
pub const ATTR_PORT_STATE: u16 = 12;
pub const ATTR_PORT_PHYS_STATE: u16 = 13;
pub const ATTR_DEV_NODE_TYPE: u16 = 14;
pub const ATTR_NDEV_INDEX: u16 = 50;
pub const ATTR_NDEV_NAME: u16 = 51;
pub const ATTR_DEV_PROTOCOL: u16 = 67;
pub const ATTR_CHARDEV_TYPE: u16 = 69;
pub const ATTR_CHARDEV_NAME: u16 = 70;
pub const ATTR_CHARDEV_ABI: u16 = 71;
pub const ATTR_CHARDEV: u16 = 72;
pub const ATTR_UVERBS_DRIVER_ID: u16 = 73;
pub const SYS_ATTR_COPY_ON_FORK: u16 = 93;

/// Netlink header constants (linux/netlink.h).
pub const NLMSG_HDRLEN: usize = 16;
pub const NLMSG_NOOP: u16 = 1;
pub const NLMSG_ERROR: u16 = 2;
pub const NLMSG_DONE: u16 = 3;
pub const NLM_F_REQUEST: u16 = 0x1;
pub const NLM_F_MULTI: u16 = 0x2;
pub const NLM_F_ACK: u16 = 0x4;
pub const NLM_F_DUMP: u16 = 0x300;
const NLA_HDRLEN: usize = 4;
const NLA_TYPE_MASK: u16 = 0x3fff;
const NLA_F_NESTED: u16 = 0x8000;

/// `RDMA_NL_GET_TYPE(client, op)`.
pub const fn nldev_type(op: u16) -> u16 {
    (RDMA_NL_NLDEV << 10) + op
}

const fn align4(n: usize) -> usize {
    (n + 3) & !3
}

fn bad(detail: impl Into<String>) -> Error {
    Error::msg("parse RDMA netlink reply", detail)
}

/// One netlink message: header fields and the payload after the 16-byte header.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct NlMsg<'a> {
    pub ty: u16,
    pub flags: u16,
    pub seq: u32,
    pub pid: u32,
    pub payload: &'a [u8],
}

fn rd_u16(b: &[u8], off: usize) -> Option<u16> {
    b.get(off..off.checked_add(2)?)
        .map(|s| u16::from_ne_bytes([s[0], s[1]]))
}
fn rd_u32(b: &[u8], off: usize) -> Option<u32> {
    b.get(off..off.checked_add(4)?)
        .map(|s| u32::from_ne_bytes([s[0], s[1], s[2], s[3]]))
}

/// Split a datagram into netlink messages. Each `nlmsg_len` must be at least the header and fit
/// in the buffer; messages are 4-byte aligned (the last one may omit its padding).
pub fn parse_messages(buf: &[u8]) -> Result<Vec<NlMsg<'_>>> {
    let mut out = Vec::new();
    let mut off = 0usize;
    while off < buf.len() {
        let rest = buf.len() - off;
        if rest < NLMSG_HDRLEN {
            return Err(bad(format!(
                "{rest} trailing bytes at offset {off}, shorter than a header"
            )));
        }
        let len = rd_u32(buf, off).unwrap_or(0) as usize;
        if len < NLMSG_HDRLEN || len > rest {
            return Err(bad(format!(
                "message at offset {off} claims length {len}, buffer has {rest} bytes left"
            )));
        }
        out.push(NlMsg {
            ty: rd_u16(buf, off + 4).unwrap_or(0),
            flags: rd_u16(buf, off + 6).unwrap_or(0),
            seq: rd_u32(buf, off + 8).unwrap_or(0),
            pid: rd_u32(buf, off + 12).unwrap_or(0),
            payload: &buf[off + NLMSG_HDRLEN..off + len],
        });
        // len >= 16, so this always advances.
        off = off.saturating_add(align4(len)).min(buf.len());
    }
    Ok(out)
}

/// One netlink attribute: its type (flags masked off), whether it was marked nested, its data.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct NlAttr<'a> {
    pub ty: u16,
    pub nested: bool,
    pub data: &'a [u8],
}

impl<'a> NlAttr<'a> {
    /// An unsigned integer of 1, 2, 4 or 8 bytes (host order); `None` for any other length.
    pub fn uint(&self) -> Option<u64> {
        let d = self.data;
        match d.len() {
            1 => Some(d[0] as u64),
            2 => Some(u16::from_ne_bytes([d[0], d[1]]) as u64),
            4 => Some(u32::from_ne_bytes([d[0], d[1], d[2], d[3]]) as u64),
            8 => Some(u64::from_ne_bytes([
                d[0], d[1], d[2], d[3], d[4], d[5], d[6], d[7],
            ])),
            _ => None,
        }
    }
    /// A string: up to the first NUL, invalid UTF-8 replaced.
    pub fn string(&self) -> String {
        let end = self
            .data
            .iter()
            .position(|&b| b == 0)
            .unwrap_or(self.data.len());
        String::from_utf8_lossy(&self.data[..end]).into_owned()
    }
}

/// Parse the attributes of a payload. Each `nla_len` must be at least 4 and fit.
pub fn parse_attrs(payload: &[u8]) -> Result<Vec<NlAttr<'_>>> {
    let mut out = Vec::new();
    let mut off = 0usize;
    while off < payload.len() {
        let rest = payload.len() - off;
        if rest < NLA_HDRLEN {
            return Err(bad(format!(
                "{rest} trailing bytes at attribute offset {off}"
            )));
        }
        let len = rd_u16(payload, off).unwrap_or(0) as usize;
        let raw_ty = rd_u16(payload, off + 2).unwrap_or(0);
        if len < NLA_HDRLEN || len > rest {
            return Err(bad(format!(
                "attribute {} at offset {off} claims length {len}, {rest} bytes left",
                raw_ty & NLA_TYPE_MASK
            )));
        }
        out.push(NlAttr {
            ty: raw_ty & NLA_TYPE_MASK,
            nested: raw_ty & NLA_F_NESTED != 0,
            data: &payload[off + NLA_HDRLEN..off + len],
        });
        off = off.saturating_add(align4(len)).min(payload.len());
    }
    Ok(out)
}

/// An attribute value to put in a request.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum AttrValue<'a> {
    U32(u32),
    U64(u64),
    Str(&'a str),
}

/// Build one request message: header, then the attributes, each padded to 4 bytes.
pub fn build_request(ty: u16, flags: u16, seq: u32, attrs: &[(u16, AttrValue<'_>)]) -> Vec<u8> {
    let mut b = vec![0u8; NLMSG_HDRLEN];
    for (aty, v) in attrs {
        let data: Vec<u8> = match v {
            AttrValue::U32(x) => x.to_ne_bytes().to_vec(),
            AttrValue::U64(x) => x.to_ne_bytes().to_vec(),
            AttrValue::Str(s) => {
                let mut d = s.as_bytes().to_vec();
                d.push(0);
                d
            }
        };
        let len = NLA_HDRLEN + data.len();
        b.extend_from_slice(&(len as u16).to_ne_bytes());
        b.extend_from_slice(&aty.to_ne_bytes());
        b.extend_from_slice(&data);
        b.resize(align4(b.len()), 0);
    }
    let total = b.len() as u32;
    b[0..4].copy_from_slice(&total.to_ne_bytes());
    b[4..6].copy_from_slice(&ty.to_ne_bytes());
    b[6..8].copy_from_slice(&flags.to_ne_bytes());
    b[8..12].copy_from_slice(&seq.to_ne_bytes());
    // nlmsg_pid 0: the kernel fills in our port id.
    b
}

/// The `RDMA_NLDEV_CMD_GET` dump request (what rdma-core sends: 16 bytes, REQUEST|DUMP).
pub fn build_get_dump(seq: u32) -> Vec<u8> {
    build_request(nldev_type(CMD_GET), NLM_F_REQUEST | NLM_F_DUMP, seq, &[])
}

/// The `RDMA_NLDEV_CMD_GET_CHARDEV` request for `kind` (`"uverbs"`, `"rdma_cm"`), optionally for
/// one device index (rdma_cm is asked without one).
pub fn build_get_chardev(seq: u32, dev_index: Option<u32>, kind: &str) -> Vec<u8> {
    let mut attrs = Vec::new();
    if let Some(i) = dev_index {
        attrs.push((ATTR_DEV_INDEX, AttrValue::U32(i)));
    }
    attrs.push((ATTR_CHARDEV_TYPE, AttrValue::Str(kind)));
    build_request(nldev_type(CMD_GET_CHARDEV), NLM_F_REQUEST, seq, &attrs)
}

/// `RDMA_NLDEV_CMD_SYS_GET` request.
pub fn build_sys_get(seq: u32) -> Vec<u8> {
    build_request(nldev_type(CMD_SYS_GET), NLM_F_REQUEST, seq, &[])
}

/// One device from the `GET` dump.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct NlDevice {
    pub index: u32,
    pub name: String,
    /// For `CMD_GET` the kernel puts the number of ports in `PORT_INDEX`.
    pub port_count: u32,
    pub cap_flags: Option<u64>,
    pub fw_ver: Option<String>,
    pub node_guid: Option<u64>,
    pub sys_image_guid: Option<u64>,
    pub node_type: Option<u8>,
    /// `"roce"`, `"ib"`, `"iw"`.
    pub protocol: Option<String>,
}

fn need_uint(a: &NlAttr<'_>, what: &str) -> Result<u64> {
    a.uint()
        .ok_or_else(|| bad(format!("{what} has {} bytes, not an integer", a.data.len())))
}

/// Read a device from the attributes of one `GET` reply. `DEV_INDEX` and `DEV_NAME` are required.
pub fn parse_device(attrs: &[NlAttr<'_>]) -> Result<NlDevice> {
    let mut d = NlDevice::default();
    let (mut have_index, mut have_name) = (false, false);
    for a in attrs {
        match a.ty {
            ATTR_DEV_INDEX => {
                d.index = u32::try_from(need_uint(a, "DEV_INDEX")?)
                    .map_err(|_| bad("DEV_INDEX out of range"))?;
                have_index = true;
            }
            ATTR_DEV_NAME => {
                d.name = a.string();
                have_name = !d.name.is_empty();
            }
            ATTR_PORT_INDEX => {
                d.port_count = u32::try_from(need_uint(a, "PORT_INDEX")?)
                    .map_err(|_| bad("PORT_INDEX out of range"))?;
            }
            ATTR_CAP_FLAGS => d.cap_flags = Some(need_uint(a, "CAP_FLAGS")?),
            ATTR_FW_VERSION => d.fw_ver = Some(a.string()),
            ATTR_NODE_GUID => d.node_guid = Some(need_uint(a, "NODE_GUID")?),
            ATTR_SYS_IMAGE_GUID => d.sys_image_guid = Some(need_uint(a, "SYS_IMAGE_GUID")?),
            ATTR_DEV_NODE_TYPE => d.node_type = Some(need_uint(a, "DEV_NODE_TYPE")? as u8),
            ATTR_DEV_PROTOCOL => d.protocol = Some(a.string()),
            _ => {}
        }
    }
    if !have_index || !have_name {
        return Err(bad("device record without DEV_INDEX or DEV_NAME"));
    }
    Ok(d)
}

/// The reply to `GET_CHARDEV`.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct NlChardev {
    /// `uverbs0`, `rdma_cm`.
    pub name: String,
    /// Full `CHARDEV_ABI` value; the driver ABI is its low 32 bits.
    pub abi: u64,
    /// (major, minor) decoded from `CHARDEV`.
    pub dev: Option<(u32, u32)>,
    /// `UVERBS_DRIVER_ID` (absent for rdma_cm, and for drivers that opt out).
    pub driver_id: Option<u32>,
}

/// Decode the kernel's "huge" dev_t encoding (`huge_encode_dev`).
pub fn decode_dev_t(v: u64) -> (u32, u32) {
    let major = ((v & 0xfff00) >> 8) as u32;
    let minor = ((v & 0xff) | ((v >> 12) & 0xfff00)) as u32;
    (major, minor)
}

/// Read a `GET_CHARDEV` reply. `CHARDEV_NAME` is required.
pub fn parse_chardev(attrs: &[NlAttr<'_>]) -> Result<NlChardev> {
    let mut c = NlChardev::default();
    for a in attrs {
        match a.ty {
            ATTR_CHARDEV_NAME => c.name = a.string(),
            ATTR_CHARDEV_ABI => c.abi = need_uint(a, "CHARDEV_ABI")?,
            ATTR_CHARDEV => c.dev = Some(decode_dev_t(need_uint(a, "CHARDEV")?)),
            ATTR_UVERBS_DRIVER_ID => {
                c.driver_id = Some(
                    u32::try_from(need_uint(a, "UVERBS_DRIVER_ID")?)
                        .map_err(|_| bad("UVERBS_DRIVER_ID out of range"))?,
                )
            }
            _ => {}
        }
    }
    if c.name.is_empty() {
        return Err(bad("char device reply without CHARDEV_NAME"));
    }
    Ok(c)
}

/// The errno carried by an `NLMSG_ERROR` payload (0 = an ACK).
pub fn parse_error(payload: &[u8]) -> Result<i32> {
    let e = rd_u32(payload, 0).ok_or_else(|| bad("NLMSG_ERROR shorter than 4 bytes"))? as i32;
    Ok(e.checked_neg().unwrap_or(i32::MAX))
}

/// What a request got back, message by message, already checked for sequence numbers.
#[derive(Debug, Default)]
pub struct Reply {
    /// The payloads of the data messages, in order.
    pub payloads: Vec<Vec<u8>>,
}

/// Fold one received datagram into a reply. Returns `Ok(true)` when the reply is complete:
/// `NLMSG_DONE` for a dump, the first data message otherwise, or an ACK. An `NLMSG_ERROR` with
/// a non-zero errno becomes that errno. Messages with another sequence number are ignored.
pub fn absorb(
    reply: &mut Reply,
    datagram: &[u8],
    seq: u32,
    dump: bool,
    what: &str,
) -> Result<bool> {
    for m in parse_messages(datagram)? {
        if m.seq != seq {
            continue;
        }
        match m.ty {
            NLMSG_NOOP => {}
            NLMSG_DONE => return Ok(true),
            NLMSG_ERROR => {
                let e = parse_error(m.payload)?;
                if e == 0 {
                    return Ok(true);
                }
                return Err(Error::errno(what.to_string(), e));
            }
            _ => {
                if reply.payloads.len() >= MAX_REPLY_MESSAGES {
                    return Err(bad(format!(
                        "more than {MAX_REPLY_MESSAGES} reply messages"
                    )));
                }
                reply.payloads.push(m.payload.to_vec());
                if !dump && m.flags & NLM_F_MULTI == 0 {
                    return Ok(true);
                }
            }
        }
    }
    Ok(false)
}

/// Bound on messages per reply (a host has far fewer RDMA devices).
pub const MAX_REPLY_MESSAGES: usize = 4096;
/// Bound on `recv` calls per request.
const MAX_RECVS: usize = 4096;
const RECV_BUF: usize = 64 * 1024;

/// A blocking `NETLINK_RDMA` socket.
pub struct NlSocket {
    fd: OwnedFd,
    seq: u32,
}

impl NlSocket {
    /// Open and bind the socket, with a 2-second receive timeout.
    pub fn open() -> Result<NlSocket> {
        // SAFETY: plain socket(2) call; the fd is owned immediately.
        let raw = unsafe {
            libc::socket(
                libc::AF_NETLINK,
                libc::SOCK_RAW | libc::SOCK_CLOEXEC,
                NETLINK_RDMA,
            )
        };
        if raw < 0 {
            return Err(Error::last_os("open NETLINK_RDMA socket")
                .with_hint("is ib_core loaded? (modprobe ib_core); falling back to sysfs"));
        }
        // SAFETY: raw is a fresh, valid descriptor we own.
        let fd = unsafe { OwnedFd::from_raw_fd(raw) };
        let tv = libc::timeval {
            tv_sec: 2,
            tv_usec: 0,
        };
        // SAFETY: valid fd, pointer to a live timeval of the stated size.
        unsafe {
            libc::setsockopt(
                fd.as_raw_fd(),
                libc::SOL_SOCKET,
                libc::SO_RCVTIMEO,
                &tv as *const libc::timeval as *const libc::c_void,
                std::mem::size_of::<libc::timeval>() as libc::socklen_t,
            );
        }
        // SAFETY: zeroed sockaddr_nl is valid; family set below.
        let mut sa: libc::sockaddr_nl = unsafe { std::mem::zeroed() };
        sa.nl_family = libc::AF_NETLINK as libc::sa_family_t;
        // SAFETY: valid fd and sockaddr of the stated size.
        let r = unsafe {
            libc::bind(
                fd.as_raw_fd(),
                &sa as *const libc::sockaddr_nl as *const libc::sockaddr,
                std::mem::size_of::<libc::sockaddr_nl>() as libc::socklen_t,
            )
        };
        if r < 0 {
            return Err(Error::last_os("bind NETLINK_RDMA socket"));
        }
        let seed = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.subsec_nanos())
            .unwrap_or(1);
        Ok(NlSocket { fd, seq: seed | 1 })
    }

    fn next_seq(&mut self) -> u32 {
        self.seq = self.seq.wrapping_add(1);
        self.seq
    }

    /// Send one request and collect the reply payloads.
    fn transact(&mut self, msg: &mut [u8], dump: bool, what: &str) -> Result<Reply> {
        let seq = self.next_seq();
        if msg.len() >= 12 {
            msg[8..12].copy_from_slice(&seq.to_ne_bytes());
        }
        // SAFETY: zeroed sockaddr_nl (pid 0 = the kernel) is valid.
        let mut sa: libc::sockaddr_nl = unsafe { std::mem::zeroed() };
        sa.nl_family = libc::AF_NETLINK as libc::sa_family_t;
        // SAFETY: msg is a live buffer of msg.len() bytes; sa is a valid sockaddr_nl.
        let n = unsafe {
            libc::sendto(
                self.fd.as_raw_fd(),
                msg.as_ptr() as *const libc::c_void,
                msg.len(),
                0,
                &sa as *const libc::sockaddr_nl as *const libc::sockaddr,
                std::mem::size_of::<libc::sockaddr_nl>() as libc::socklen_t,
            )
        };
        if n < 0 {
            return Err(Error::last_os(format!("send netlink {what}")));
        }
        let mut reply = Reply::default();
        let mut buf = vec![0u8; RECV_BUF];
        for _ in 0..MAX_RECVS {
            // SAFETY: buf is a live, writable buffer of buf.len() bytes.
            let n = unsafe {
                libc::recv(
                    self.fd.as_raw_fd(),
                    buf.as_mut_ptr() as *mut libc::c_void,
                    buf.len(),
                    0,
                )
            };
            if n < 0 {
                let e = std::io::Error::last_os_error()
                    .raw_os_error()
                    .unwrap_or(libc::EIO);
                if e == libc::EINTR {
                    continue;
                }
                let mut err = Error::errno(format!("receive netlink {what}"), e);
                if e == libc::EAGAIN {
                    err = err.with_detail("no answer from the kernel within 2 s");
                }
                return Err(err);
            }
            let n = (n as usize).min(buf.len());
            if absorb(&mut reply, &buf[..n], seq, dump, what)? {
                return Ok(reply);
            }
        }
        Err(bad(format!(
            "{what}: no end of reply after {MAX_RECVS} datagrams"
        )))
    }

    /// `RDMA_NLDEV_CMD_GET` dump: every RDMA device in this network namespace.
    pub fn devices(&mut self) -> Result<Vec<NlDevice>> {
        let mut msg = build_get_dump(0);
        let reply = self.transact(&mut msg, true, "RDMA_NLDEV_CMD_GET")?;
        let mut out = Vec::new();
        for p in &reply.payloads {
            out.push(parse_device(&parse_attrs(p)?)?);
        }
        Ok(out)
    }

    /// `RDMA_NLDEV_CMD_GET_CHARDEV` of `kind` (`"uverbs"` with a device index; `"rdma_cm"`
    /// without).
    pub fn chardev(&mut self, dev_index: Option<u32>, kind: &str) -> Result<NlChardev> {
        let mut msg = build_get_chardev(0, dev_index, kind);
        let reply = self.transact(&mut msg, false, "RDMA_NLDEV_CMD_GET_CHARDEV")?;
        let p = reply
            .payloads
            .first()
            .ok_or_else(|| bad(format!("GET_CHARDEV {kind}: empty reply")))?;
        parse_chardev(&parse_attrs(p)?)
    }

    /// `RDMA_NLDEV_CMD_SYS_GET`: `Some(true)` if the kernel reports copy-on-fork for pinned pages,
    /// `None` if it does not say.
    pub fn copy_on_fork(&mut self) -> Result<Option<bool>> {
        let mut msg = build_sys_get(0);
        let reply = self.transact(&mut msg, false, "RDMA_NLDEV_CMD_SYS_GET")?;
        for p in &reply.payloads {
            for a in parse_attrs(p)? {
                if a.ty == SYS_ATTR_COPY_ON_FORK {
                    return Ok(a.uint().map(|v| v != 0));
                }
            }
        }
        Ok(None)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn attr(ty: u16, data: &[u8]) -> Vec<u8> {
        let mut v = Vec::new();
        v.extend_from_slice(&((4 + data.len()) as u16).to_ne_bytes());
        v.extend_from_slice(&ty.to_ne_bytes());
        v.extend_from_slice(data);
        v.resize(align4(v.len()), 0);
        v
    }
    fn msg(ty: u16, flags: u16, seq: u32, payload: &[u8]) -> Vec<u8> {
        let mut v = Vec::new();
        v.extend_from_slice(&((16 + payload.len()) as u32).to_ne_bytes());
        v.extend_from_slice(&ty.to_ne_bytes());
        v.extend_from_slice(&flags.to_ne_bytes());
        v.extend_from_slice(&seq.to_ne_bytes());
        v.extend_from_slice(&0u32.to_ne_bytes());
        v.extend_from_slice(payload);
        v
    }

    /// The device record rxe0 returned in our capture of rdma-core's netlink discovery on the rxe
    /// VM bed: 108 bytes.
    fn captured_dev_payload() -> Vec<u8> {
        let mut p = Vec::new();
        p.extend(attr(ATTR_DEV_INDEX, &0u32.to_ne_bytes()));
        p.extend(attr(ATTR_DEV_NAME, b"rxe0\0"));
        p.extend(attr(ATTR_PORT_INDEX, &1u32.to_ne_bytes()));
        p.extend(attr(ATTR_CAP_FLAGS, &0x1223c76u64.to_ne_bytes()));
        p.extend(attr(ATTR_NODE_GUID, &0xd0a31dfffeb917d0u64.to_ne_bytes()));
        p.extend(attr(
            ATTR_SYS_IMAGE_GUID,
            &0xd0a31dfffeb917d0u64.to_ne_bytes(),
        ));
        p.extend(attr(ATTR_DEV_NODE_TYPE, &[1u8]));
        p.extend(attr(84, &[0u8]));
        p.extend(attr(ATTR_DEV_PROTOCOL, b"roce\0"));
        p
    }

    #[test]
    fn request_bytes_match_rdma_core() {
        let g = build_get_dump(7);
        assert_eq!(g.len(), 16);
        assert_eq!(u16::from_ne_bytes([g[4], g[5]]), 0x1401);
        assert_eq!(u16::from_ne_bytes([g[6], g[7]]), 0x301);
        let c = build_get_chardev(9, Some(0), "uverbs");
        assert_eq!(c.len(), 36); // as in the capture
        assert_eq!(u16::from_ne_bytes([c[4], c[5]]), 0x140f);
        let m = parse_messages(&c).unwrap();
        let a = parse_attrs(m[0].payload).unwrap();
        assert_eq!(a.len(), 2);
        assert_eq!(a[0].ty, ATTR_DEV_INDEX);
        assert_eq!(a[0].uint(), Some(0));
        assert_eq!(a[1].ty, ATTR_CHARDEV_TYPE);
        assert_eq!(a[1].string(), "uverbs");
        assert_eq!(build_get_chardev(1, None, "rdma_cm").len(), 16 + 12);
    }

    #[test]
    fn parse_captured_device_dump() {
        let p = captured_dev_payload();
        let mut dg = msg(0x1401, NLM_F_MULTI, 5, &p);
        assert_eq!(dg.len(), 108);
        dg.extend(msg(NLMSG_DONE, NLM_F_MULTI, 5, &0i32.to_ne_bytes()));
        let mut r = Reply::default();
        assert!(absorb(&mut r, &dg, 5, true, "GET").unwrap());
        assert_eq!(r.payloads.len(), 1);
        let d = parse_device(&parse_attrs(&r.payloads[0]).unwrap()).unwrap();
        assert_eq!(d.index, 0);
        assert_eq!(d.name, "rxe0");
        assert_eq!(d.port_count, 1);
        assert_eq!(d.node_guid, Some(0xd0a31dfffeb917d0));
        assert_eq!(d.node_type, Some(1));
        assert_eq!(d.protocol.as_deref(), Some("roce"));
        assert_eq!(d.cap_flags, Some(0x1223c76));
    }

    #[test]
    fn parse_captured_chardev() {
        let mut p = Vec::new();
        p.extend(attr(ATTR_UVERBS_DRIVER_ID, &14u32.to_ne_bytes()));
        p.extend(attr(ATTR_CHARDEV, &0xe7c0u64.to_ne_bytes()));
        p.extend(attr(ATTR_CHARDEV_ABI, &2u64.to_ne_bytes()));
        p.extend(attr(ATTR_CHARDEV_NAME, b"uverbs0\0"));
        let dg = msg(0x140f, 0, 3, &p);
        assert_eq!(dg.len(), 60); // as in the capture
        let mut r = Reply::default();
        assert!(absorb(&mut r, &dg, 3, false, "GET_CHARDEV").unwrap());
        let c = parse_chardev(&parse_attrs(&r.payloads[0]).unwrap()).unwrap();
        assert_eq!(c.name, "uverbs0");
        assert_eq!(c.abi, 2);
        assert_eq!(c.dev, Some((231, 192)));
        assert_eq!(c.driver_id, Some(14));
    }

    #[test]
    fn error_and_ack_and_foreign_seq() {
        let mut e = Vec::new();
        e.extend_from_slice(&(-libc::EOPNOTSUPP).to_ne_bytes());
        e.extend_from_slice(&[0u8; 16]);
        let dg = msg(NLMSG_ERROR, 0, 4, &e);
        let mut r = Reply::default();
        let err = absorb(&mut r, &dg, 4, false, "GET_CHARDEV").unwrap_err();
        assert_eq!(err.errno, Some(libc::EOPNOTSUPP));
        // Another sequence number: ignored, not complete.
        let mut r = Reply::default();
        assert!(!absorb(&mut r, &dg, 5, false, "x").unwrap());
        // ACK.
        let ack = msg(NLMSG_ERROR, 0, 6, &[0u8; 20]);
        assert!(absorb(&mut r, &ack, 6, false, "x").unwrap());
        assert_eq!(decode_dev_t(0xe7c0), (231, 192));
        assert_eq!(
            decode_dev_t((0x12 << 8) | 0x34 | (0x56 << 20)),
            (0x12, 0x5634)
        );
    }

    #[test]
    fn malformed_input_is_an_error() {
        assert!(parse_messages(&[]).unwrap().is_empty());
        assert!(parse_messages(&[1, 2, 3]).is_err());
        let mut m = msg(1, 0, 0, &[]);
        m[0..4].copy_from_slice(&8u32.to_ne_bytes()); // shorter than a header
        assert!(parse_messages(&m).is_err());
        m[0..4].copy_from_slice(&1000u32.to_ne_bytes()); // beyond the buffer
        assert!(parse_messages(&m).is_err());
        m[0..4].copy_from_slice(&u32::MAX.to_ne_bytes());
        assert!(parse_messages(&m).is_err());
        assert!(parse_attrs(&[0, 0, 1, 0]).is_err()); // nla_len 0
        assert!(parse_attrs(&[200, 0, 1, 0, 0]).is_err());
        assert!(parse_attrs(&[4, 0]).is_err());
        // Unpadded final attribute is fine.
        let a = parse_attrs(&[5, 0, 2, 0, b'x']).unwrap();
        assert_eq!(a[0].string(), "x");
        // Missing required attributes.
        assert!(parse_device(&[]).is_err());
        assert!(parse_chardev(&[]).is_err());
        // Wrong integer width.
        let p = attr(ATTR_DEV_INDEX, &[1, 2, 3]);
        assert!(parse_device(&parse_attrs(&p).unwrap()).is_err());
        assert!(parse_error(&[1]).is_err());
        assert_eq!(parse_error(&i32::MIN.to_ne_bytes()).unwrap(), i32::MAX);
    }

    #[test]
    fn pseudo_random_bytes_never_panic() {
        // A tiny deterministic fuzz: xorshift bytes through every parser.
        let mut x = crate::fuzzing::XorShift::new(0x9e3779b97f4a7c15);
        for len in 0..400usize {
            let mut b = x.bytes(len);
            if len >= 4 {
                b[0..2].copy_from_slice(&((len as u16) & 0xff).to_ne_bytes());
            }
            let _ = parse_messages(&b);
            if let Ok(a) = parse_attrs(&b) {
                let _ = parse_device(&a);
                let _ = parse_chardev(&a);
            }
            let mut r = Reply::default();
            let _ = absorb(&mut r, &b, 0, true, "fuzz");
        }
    }
}
