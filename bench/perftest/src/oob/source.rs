//! `--source_ip` / `--bind_source_ip`: the local address connections are made from.
//!
//! perftest 6.06 (perftest_communication.c) uses the address in four places, and so do we:
//! * TCP exchange, client: the socket is bound to it before `connect()`;
//! * TCP exchange, server: the listening socket is bound to it instead of the wildcard;
//! * `-z`/`-R` control connection over rdma_cm: the client's `rdma_resolve_addr` gets it as
//!   the source, the server's `rdma_bind_addr` binds it;
//! * `-R` data connections: the server's listener binds it (6.06's client resolves its data
//!   connections from the routing table, without the source address; we do the same).
//!
//! 6.06 parses it with `inet_addr` (IPv4 only); we also take an IPv6 literal or a host name.
//! Before anything else happens the address is checked to be one of this host's (a throwaway
//! bind to port 0), so a wrong address is one clear line instead of a failure deep in setup.

use std::io::{self, ErrorKind};
use std::net::{IpAddr, SocketAddr, TcpListener, TcpStream, ToSocketAddrs};
use std::os::fd::{AsFd, AsRawFd};
use std::time::{Duration, Instant};

use nix::errno::Errno;
use nix::poll::{PollFd, PollFlags};
use nix::sys::socket::{self, sockopt, AddressFamily, SockFlag, SockType, SockaddrStorage};

/// The option as perftest 6.06's help names it (6.29 calls it `--bind_source_ip`).
pub const OPTION: &str = "--source_ip";

/// The address `spec` names: an IPv4/IPv6 literal (IPv6 may be in brackets) or a host name.
pub fn parse(spec: &str) -> Result<IpAddr, String> {
    let lit = spec.strip_prefix('[').and_then(|s| s.strip_suffix(']')).unwrap_or(spec);
    if let Ok(ip) = lit.parse::<IpAddr>() {
        return Ok(ip);
    }
    let bad = || format!(" {OPTION} {spec}: not an IP address of this host; give one that `ip addr` lists");
    match (lit, 0u16).to_socket_addrs() {
        Ok(mut a) => a.next().map(|a| a.ip()).ok_or_else(bad),
        Err(_) => Err(bad()),
    }
}

/// The one-line message for a failed bind to the source address.
pub fn bind_error(ip: IpAddr, e: &io::Error) -> String {
    match e.raw_os_error() {
        Some(libc::EADDRNOTAVAIL) => format!(
            " {OPTION} {ip}: no local interface has this address; give one that `ip addr` lists, or leave the option out"
        ),
        Some(libc::EINVAL) if matches!(ip, IpAddr::V6(v6) if v6.segments()[0] & 0xffc0 == 0xfe80) => format!(
            " {OPTION} {ip}: a link-local IPv6 address needs an interface; give a global address instead"
        ),
        _ => format!(" {OPTION} {ip}: cannot bind to this address: {e}"),
    }
}

/// Check that `ip` is an address of this host (bind a throwaway TCP socket to it).
pub fn check_local(ip: IpAddr) -> Result<(), String> {
    TcpListener::bind(SocketAddr::new(ip, 0)).map(drop).map_err(|e| bind_error(ip, &e))
}

/// The parsed, checked `--source_ip` (None when the option is not given).
pub fn from_option(spec: Option<&str>) -> Result<Option<IpAddr>, String> {
    match spec {
        None => Ok(None),
        Some(s) => {
            let ip = parse(s)?;
            check_local(ip)?;
            Ok(Some(ip))
        }
    }
}

/// Why a connection from a source address failed.
#[derive(Debug)]
pub enum ConnectFromError {
    /// `bind()` to the source address failed (not retryable).
    Bind(io::Error),
    /// `connect()` failed or timed out.
    Connect(io::Error),
}

/// A TCP connection to `dst` made from `src` (port chosen by the kernel), as perftest's
/// `bind()` before `connect()`; at most `timeout` for the handshake.
pub fn connect_from(src: IpAddr, dst: &SocketAddr, timeout: Duration) -> Result<TcpStream, ConnectFromError> {
    let fam = if dst.is_ipv6() { AddressFamily::Inet6 } else { AddressFamily::Inet };
    let fd = socket::socket(fam, SockType::Stream, SockFlag::SOCK_CLOEXEC | SockFlag::SOCK_NONBLOCK, None)
        .map_err(|e| ConnectFromError::Bind(io::Error::from(e)))?;
    socket::bind(fd.as_raw_fd(), &SockaddrStorage::from(SocketAddr::new(src, 0)))
        .map_err(|e| ConnectFromError::Bind(io::Error::from(e)))?;
    let conn = |e: io::Error| ConnectFromError::Connect(e);
    match socket::connect(fd.as_raw_fd(), &SockaddrStorage::from(*dst)) {
        Ok(()) => {}
        Err(Errno::EINPROGRESS) | Err(Errno::EINTR) => {
            let deadline = Instant::now() + timeout;
            loop {
                if bench_core::signal::requested() {
                    return Err(conn(io::Error::from(ErrorKind::Interrupted)));
                }
                let left = deadline.saturating_duration_since(Instant::now());
                if left.is_zero() {
                    return Err(conn(io::Error::new(ErrorKind::TimedOut, "connection timed out")));
                }
                let ms = left.as_millis().clamp(1, 200) as u16;
                let mut pfd = [PollFd::new(fd.as_fd(), PollFlags::POLLOUT)];
                match nix::poll::poll(&mut pfd, ms) {
                    Ok(0) | Err(Errno::EINTR) => continue,
                    Ok(_) => break,
                    Err(e) => return Err(conn(io::Error::from(e))),
                }
            }
            let err = socket::getsockopt(&fd, sockopt::SocketError).map_err(|e| conn(io::Error::from(e)))?;
            if err != 0 {
                return Err(conn(io::Error::from_raw_os_error(err)));
            }
        }
        Err(e) => return Err(conn(io::Error::from(e))),
    }
    let s = TcpStream::from(fd);
    s.set_nonblocking(false).map_err(conn)?;
    Ok(s)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::net::{Ipv4Addr, Ipv6Addr};

    #[test]
    fn parses_literals_and_brackets() {
        assert_eq!(parse("10.99.0.2").unwrap(), IpAddr::V4(Ipv4Addr::new(10, 99, 0, 2)));
        assert_eq!(parse("::1").unwrap(), IpAddr::V6(Ipv6Addr::LOCALHOST));
        assert_eq!(parse("[::1]").unwrap(), IpAddr::V6(Ipv6Addr::LOCALHOST));
        let e = parse("not an address!").unwrap_err();
        assert!(e.contains("--source_ip not an address!") && !e.contains('\n'), "{e}");
    }

    #[test]
    fn a_foreign_address_is_one_clear_line() {
        // TEST-NET-3 is never assigned to an interface.
        let e = from_option(Some("203.0.113.77")).unwrap_err();
        assert_eq!(
            e,
            " --source_ip 203.0.113.77: no local interface has this address; give one that `ip addr` lists, or leave the option out"
        );
        assert_eq!(from_option(None).unwrap(), None);
        assert_eq!(from_option(Some("127.0.0.1")).unwrap(), Some(IpAddr::V4(Ipv4Addr::LOCALHOST)));
    }

    #[test]
    fn connects_from_the_given_address() {
        let l = TcpListener::bind("127.0.0.1:0").unwrap();
        let dst = l.local_addr().unwrap();
        // 127.0.0.2 is local too (all of 127/8 is on lo).
        let src = IpAddr::V4(Ipv4Addr::new(127, 0, 0, 2));
        let s = connect_from(src, &dst, Duration::from_secs(5)).unwrap();
        let (_a, peer) = l.accept().unwrap();
        assert_eq!(peer.ip(), src);
        assert_eq!(s.local_addr().unwrap().ip(), src);
        // Nothing listens on a port of a closed listener: refused, not a bind error.
        drop(l);
        match connect_from(src, &dst, Duration::from_secs(5)) {
            Err(ConnectFromError::Connect(e)) => assert_eq!(e.kind(), ErrorKind::ConnectionRefused),
            other => panic!("{other:?}"),
        }
        match connect_from(IpAddr::V4(Ipv4Addr::new(203, 0, 113, 77)), &dst, Duration::from_secs(5)) {
            Err(ConnectFromError::Bind(e)) => assert_eq!(e.raw_os_error(), Some(libc::EADDRNOTAVAIL)),
            other => panic!("{other:?}"),
        }
    }
}
