//! SCTP stream sockets for sctp_bw and sctp_lat, as stock qperf makes them: SOCK_STREAM with
//! IPPROTO_SCTP (one-to-one style), so the data phase is the TCP tests' own byte stream code.
//! The sockets are handed back as std's `TcpListener`/`TcpStream`: those types only wrap a
//! connected or listening stream socket (read, write, accept, timeouts, addresses), which an
//! SCTP one-to-one socket is; nothing TCP-specific is called on them.
//!
//! socket2 builds them safely; nix 0.29 has no SCTP protocol value.

use std::io;
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::time::Duration;

use socket2::{Domain, Protocol, Socket, Type};

/// IPPROTO_SCTP (netinet/in.h).
pub const IPPROTO_SCTP: i32 = 132;

fn socket_for(addr: &SocketAddr) -> io::Result<Socket> {
    let s = Socket::new(Domain::for_address(*addr), Type::STREAM, Some(Protocol::from(IPPROTO_SCTP)))?;
    // As stock qperf, on both the listening and the connecting socket.
    s.set_reuse_address(true)?;
    Ok(s)
}

/// A listening SCTP socket on the first address that binds (stock qperf listens with a
/// backlog of 1).
pub fn listen(addrs: &[SocketAddr]) -> io::Result<TcpListener> {
    let mut last = io::Error::new(io::ErrorKind::InvalidInput, "no address to bind");
    for a in addrs {
        let r = socket_for(a).and_then(|s| {
            s.bind(&(*a).into())?;
            s.listen(1)?;
            Ok(s)
        });
        match r {
            Ok(s) => return Ok(s.into()),
            Err(e) => last = e,
        }
    }
    Err(last)
}

/// An SCTP association to `to`, within `timeout`; the socket is left blocking.
pub fn connect(to: &SocketAddr, timeout: Duration) -> io::Result<TcpStream> {
    let s = socket_for(to)?;
    s.connect_timeout(&(*to).into(), timeout)?;
    s.set_nonblocking(false)?;
    Ok(s.into())
}

/// Whether this kernel makes SCTP sockets (sctp.ko loaded or loadable); for the tests.
pub fn supported() -> bool {
    Socket::new(Domain::IPV4, Type::STREAM, Some(Protocol::from(IPPROTO_SCTP))).is_ok()
}
