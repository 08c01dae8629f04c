//! The socket tests (tcp_bw, tcp_lat, sctp_bw, sctp_lat, udp_bw, udp_lat): the server and
//! client halves of the data phase, counting as stock qperf counts (fact sheet §1.3: bw tests
//! count full blocks on each side, latency tests count each message both ways). SCTP runs the
//! TCP code over an SCTP stream socket (sctp.rs), as stock qperf does.
//!
//! Stock qperf stops each side on a SIGALRM timer. Here every socket has a short timeout and
//! each side checks its own end condition between calls: the duration, the message count
//! (`-n`, which stock qperf does not honour for socket tests and then never ends), the peer
//! closing, or (count-based runs only) no progress for the control timeout.

use std::io::{ErrorKind, Read, Write};
use std::net::{IpAddr, Ipv6Addr, SocketAddr, TcpListener, TcpStream, UdpSocket};
use std::os::fd::AsFd;
use std::time::{Duration, Instant};

use nix::poll::{poll, PollFd, PollFlags, PollTimeout};

use super::clock::get_times;
use super::ctrl::{Ctrl, CtrlError};
use super::results::Measure;
use super::sctp;
use super::wire::{decode_port, encode_port, Req, Stat, SYNC_AFTER, SYNC_BEFORE, PORT_LEN, STAT_LEN};

/// How often a blocked data call comes back to check the end condition.
const SLICE: Duration = Duration::from_millis(50);

/// A count-based UDP server stops after this long without a datagram (see `serve`).
const UDP_IDLE: Duration = Duration::from_secs(1);

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SockTest {
    TcpBw,
    TcpLat,
    SctpBw,
    SctpLat,
    UdpBw,
    UdpLat,
}

impl SockTest {
    pub fn from_name(name: &str) -> Option<SockTest> {
        Some(match name {
            "tcp_bw" => SockTest::TcpBw,
            "tcp_lat" => SockTest::TcpLat,
            "sctp_bw" => SockTest::SctpBw,
            "sctp_lat" => SockTest::SctpLat,
            "udp_bw" => SockTest::UdpBw,
            "udp_lat" => SockTest::UdpLat,
            _ => return None,
        })
    }
    pub fn default_size(self) -> u32 {
        match self {
            SockTest::TcpBw => 64 * 1024,
            SockTest::SctpBw | SockTest::UdpBw => 32 * 1024,
            SockTest::TcpLat | SockTest::SctpLat | SockTest::UdpLat => 1,
        }
    }
    pub fn measure(self) -> Measure {
        match self {
            SockTest::TcpBw | SockTest::SctpBw => Measure::Bandwidth,
            SockTest::UdpBw => Measure::BandwidthSr,
            SockTest::TcpLat | SockTest::SctpLat | SockTest::UdpLat => Measure::Latency,
        }
    }
    pub fn is_bw(self) -> bool {
        matches!(self, SockTest::TcpBw | SockTest::SctpBw | SockTest::UdpBw)
    }
    fn is_udp(self) -> bool {
        matches!(self, SockTest::UdpBw | SockTest::UdpLat)
    }
    fn is_sctp(self) -> bool {
        matches!(self, SockTest::SctpBw | SockTest::SctpLat)
    }
    /// The protocol's name in stock qperf's messages.
    pub fn kind(self) -> &'static str {
        if self.is_udp() {
            "UDP"
        } else if self.is_sctp() {
            "SCTP"
        } else {
            "TCP"
        }
    }
}

/// When one side's data phase ends.
#[derive(Clone, Copy, Debug)]
pub struct Plan {
    pub time: u32,
    pub no_msgs: u32,
    pub msg_size: u32,
    pub timeout: Duration,
    pub access_recv: bool,
}

struct Stopper {
    deadline: Option<Instant>,
    no_msgs: u64,
    idle: Duration,
    last_progress: Instant,
}

impl Stopper {
    fn start(p: &Plan) -> Self {
        let now = Instant::now();
        Stopper {
            deadline: (p.time > 0).then(|| now + Duration::from_secs(u64::from(p.time))),
            no_msgs: u64::from(p.no_msgs),
            idle: p.timeout,
            last_progress: now,
        }
    }
    fn progress(&mut self) {
        self.last_progress = Instant::now();
    }
    /// Time is up, or (count-based only) the peer has been silent for the whole timeout.
    fn expired(&self) -> bool {
        let now = Instant::now();
        match self.deadline {
            Some(d) => now >= d,
            None => now.duration_since(self.last_progress) >= self.idle,
        }
    }
    fn count_done(&self, msgs: u64) -> bool {
        self.no_msgs != 0 && msgs >= self.no_msgs
    }
}

enum Io {
    Full(usize),
    Stopped,
    Closed,
}

fn would_block(e: &std::io::Error) -> bool {
    matches!(e.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut | ErrorKind::Interrupted)
}

fn write_full(s: &mut TcpStream, buf: &[u8], stop: &mut Stopper) -> Io {
    transfer_full(buf.len(), stop, |at| s.write(&buf[at..]))
}

fn read_full(s: &mut TcpStream, buf: &mut [u8], stop: &mut Stopper) -> Io {
    transfer_full(buf.len(), stop, |at| s.read(&mut buf[at..]))
}

/// Move `len` bytes through `step(offset)` (one read or write from `offset` on), until done, the
/// peer closes, an error, or the stopper expires (the socket is non-blocking: a would-block
/// retries).
fn transfer_full(len: usize, stop: &mut Stopper, mut step: impl FnMut(usize) -> std::io::Result<usize>) -> Io {
    let mut done = 0;
    while done < len {
        if stop.expired() {
            return Io::Stopped;
        }
        match step(done) {
            Ok(0) => return Io::Closed,
            Ok(n) => {
                done += n;
                stop.progress();
            }
            Err(e) if would_block(&e) => {}
            Err(_) => return Io::Closed,
        }
    }
    Io::Full(done)
}

fn touch(buf: &[u8]) -> u8 {
    buf.iter().fold(0u8, |a, &b| a ^ b)
}

fn local_err(what: &str, e: impl std::fmt::Display) -> CtrlError {
    CtrlError::local(format!("{what}: {e}"))
}

fn set_buf_size<F: AsFd>(fd: &F, size: u32) -> Result<(), CtrlError> {
    use nix::sys::socket::{setsockopt, sockopt};
    if size == 0 {
        return Ok(());
    }
    let n = size as usize;
    setsockopt(fd, sockopt::SndBuf, &n).map_err(|e| local_err("Failed to set send buffer size on socket", e))?;
    setsockopt(fd, sockopt::RcvBuf, &n).map_err(|e| local_err("Failed to set receive buffer size on socket", e))
}

/// The wildcard address, dual-stack where IPv6 exists, IPv4 where it is disabled (stock
/// qperf fails there: "unable to bind to listen port").
pub fn wildcard(port: u16) -> [SocketAddr; 2] {
    [SocketAddr::new(IpAddr::V6(Ipv6Addr::UNSPECIFIED), port), SocketAddr::from(([0, 0, 0, 0], port))]
}

fn data_port(req: &Req) -> Result<u16, CtrlError> {
    u16::try_from(req.port).map_err(|_| CtrlError::local(format!("bad port: {}", req.port)))
}

/// Server half: bind, announce the port, accept, sync, move data, send STAT.
pub fn serve(test: SockTest, ctrl: &Ctrl, req: &Req, stat: &mut Stat) -> Result<(), CtrlError> {
    let plan = Plan {
        time: req.time,
        no_msgs: req.no_msgs,
        msg_size: req.msg_size,
        timeout: ctrl.timeout,
        access_recv: req.access_recv != 0,
    };
    let port = data_port(req)?;
    let mut buf = vec![0u8; plan.msg_size as usize];
    let unable = || CtrlError::local(format!("unable to make {} socket", test.kind()));
    if test.is_udp() {
        let sock = UdpSocket::bind(&wildcard(port)[..]).map_err(|_| unable())?;
        set_buf_size(&sock, req.sock_buf_size)?;
        let port = sock.local_addr().map_err(|e| local_err("getsockname failed", e))?.port();
        ctrl.send("port", &encode_port(port))?;
        sock.set_read_timeout(Some(SLICE)).map_err(|e| local_err("setsockopt failed", e))?;
        ctrl.sync(SYNC_BEFORE)?;
        stat.time_s = get_times();
        let mut stop = Stopper::start(&plan);
        while !stop.expired() && !stop.count_done(stat.r.msgs) {
            let (n, from) = match sock.recv_from(&mut buf) {
                Ok(x) => x,
                Err(e) if would_block(&e) => continue,
                Err(_) => {
                    stat.r.errs += 1;
                    continue;
                }
            };
            stop.progress();
            // Datagrams get lost: once they flow, a count-based run ends after 1 s of
            // silence, well before the client gives up waiting for our results.
            stop.idle = stop.idle.min(UDP_IDLE);
            stat.r.bytes += n as u64;
            stat.r.msgs += 1;
            if test == SockTest::UdpLat {
                match sock.send_to(&buf, from) {
                    Ok(n) => {
                        stat.s.bytes += n as u64;
                        stat.s.msgs += 1;
                    }
                    Err(_) => stat.s.errs += 1,
                }
            } else if plan.access_recv {
                std::hint::black_box(touch(&buf[..n]));
            }
        }
        stat.time_e = get_times();
    } else {
        let listener = if test.is_sctp() { sctp::listen(&wildcard(port)) } else { TcpListener::bind(&wildcard(port)[..]) }
            .map_err(|_| unable())?;
        let port = listener.local_addr().map_err(|e| local_err("getsockname failed", e))?.port();
        ctrl.send("port", &encode_port(port))?;
        let mut s = accept_within(&listener, test.kind(), ctrl.timeout)?;
        set_buf_size(&s, req.sock_buf_size)?;
        drop(listener);
        set_slices(&s)?;
        ctrl.sync(SYNC_BEFORE)?;
        stat.time_s = get_times();
        let mut stop = Stopper::start(&plan);
        loop {
            if stop.count_done(stat.r.msgs) {
                break;
            }
            match read_full(&mut s, &mut buf, &mut stop) {
                Io::Full(n) => {
                    stat.r.bytes += n as u64;
                    stat.r.msgs += 1;
                }
                Io::Stopped | Io::Closed => break,
            }
            if !test.is_bw() {
                match write_full(&mut s, &buf, &mut stop) {
                    Io::Full(n) => {
                        stat.s.bytes += n as u64;
                        stat.s.msgs += 1;
                    }
                    Io::Stopped | Io::Closed => break,
                }
            } else if plan.access_recv {
                std::hint::black_box(touch(&buf));
            }
        }
        stat.time_e = get_times();
    }
    ctrl.send("results", &stat.encode())?;
    ctrl.recv_sync(SYNC_AFTER)
}

fn set_slices(s: &TcpStream) -> Result<(), CtrlError> {
    s.set_read_timeout(Some(SLICE)).map_err(|e| local_err("setsockopt failed", e))?;
    s.set_write_timeout(Some(SLICE)).map_err(|e| local_err("setsockopt failed", e))
}

fn accept_within(l: &TcpListener, kind: &str, timeout: Duration) -> Result<TcpStream, CtrlError> {
    let deadline = Instant::now() + timeout;
    loop {
        let left = deadline.saturating_duration_since(Instant::now());
        if left.is_zero() {
            return Err(CtrlError::local(format!("failed to accept {kind} connection: timed out")));
        }
        let mut fds = [PollFd::new(l.as_fd(), PollFlags::POLLIN)];
        let ms = left.as_millis().clamp(1, 60_000) as u16;
        match poll(&mut fds, PollTimeout::from(ms)) {
            Ok(n) if n > 0 => {
                let (s, _) = l.accept().map_err(|e| local_err("accept failed", e))?;
                s.set_nonblocking(false).map_err(|e| local_err("accept failed", e))?;
                return Ok(s);
            }
            Ok(_) | Err(nix::errno::Errno::EINTR) => {}
            Err(e) => return Err(local_err("accept failed", e)),
        }
    }
}

/// Client half, after the request went out: connect to the announced port, sync, move data,
/// read the server's STAT. Returns it; `stat` is ours.
pub fn run_client(test: SockTest, ctrl: &Ctrl, plan: &Plan, stat: &mut Stat) -> Result<Stat, CtrlError> {
    let port = decode_port(&ctrl.recv("port", PORT_LEN)?).map_err(|e| CtrlError::local(e.to_string()))?;
    let server_ip = ctrl.stream.peer_addr().map_err(|e| local_err("getpeername failed", e))?.ip();
    let to = SocketAddr::new(server_ip, port);
    let mut buf = vec![0u8; plan.msg_size as usize];
    let cannot = || CtrlError::local(format!("could not make {} connection to server", test.kind()));
    let count_based = plan.time == 0;
    if test.is_udp() {
        let any = if to.is_ipv4() { SocketAddr::from(([0, 0, 0, 0], 0)) } else { SocketAddr::new(IpAddr::V6(Ipv6Addr::UNSPECIFIED), 0) };
        let sock = UdpSocket::bind(any).map_err(|_| cannot())?;
        sock.connect(to).map_err(|_| cannot())?;
        sock.set_read_timeout(Some(SLICE)).map_err(|e| local_err("setsockopt failed", e))?;
        ctrl.sync(SYNC_BEFORE)?;
        stat.time_s = get_times();
        let mut stop = Stopper::start(plan);
        'run: while !stop.expired() && !stop.count_done(stat.s.msgs) {
            match sock.send(&buf) {
                Ok(n) => {
                    stop.progress();
                    stat.s.bytes += n as u64;
                    stat.s.msgs += 1;
                }
                // A refused port (ICMP) or a full buffer: counted, as stock qperf counts them.
                Err(_) => {
                    stat.s.errs += 1;
                    continue;
                }
            }
            if test == SockTest::UdpLat {
                loop {
                    if stop.expired() {
                        break 'run;
                    }
                    match sock.recv(&mut buf) {
                        Ok(n) => {
                            stop.progress();
                            stat.r.bytes += n as u64;
                            stat.r.msgs += 1;
                            break;
                        }
                        Err(e) if would_block(&e) => {}
                        Err(_) => {
                            stat.r.errs += 1;
                            break;
                        }
                    }
                }
            }
        }
        stat.time_e = get_times();
    } else {
        let mut s = if test.is_sctp() { sctp::connect(&to, ctrl.timeout) } else { TcpStream::connect_timeout(&to, ctrl.timeout) }
            .map_err(|_| cannot())?;
        set_slices(&s)?;
        ctrl.sync(SYNC_BEFORE)?;
        stat.time_s = get_times();
        let mut stop = Stopper::start(plan);
        loop {
            if stop.count_done(stat.s.msgs) {
                break;
            }
            match write_full(&mut s, &buf, &mut stop) {
                Io::Full(n) => {
                    stat.s.bytes += n as u64;
                    stat.s.msgs += 1;
                }
                Io::Stopped | Io::Closed => break,
            }
            if !test.is_bw() {
                match read_full(&mut s, &mut buf, &mut stop) {
                    Io::Full(n) => {
                        stat.r.bytes += n as u64;
                        stat.r.msgs += 1;
                    }
                    Io::Stopped | Io::Closed => break,
                }
            }
        }
        stat.time_e = get_times();
        if count_based {
            // A stock server has no timer without -t: our close is what ends its loop.
            drop(s);
            return finish(ctrl, stat);
        }
        let r = finish(ctrl, stat);
        drop(s);
        return r;
    }
    let _ = count_based;
    finish(ctrl, stat)
}

fn finish(ctrl: &Ctrl, _stat: &Stat) -> Result<Stat, CtrlError> {
    let b = ctrl.recv("results", STAT_LEN)?;
    let r = Stat::decode(&b).map_err(|e| CtrlError::local(e.to_string()))?;
    ctrl.send("synchronization after test", SYNC_AFTER)?;
    Ok(r)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sctp_tests_are_the_stream_tests_with_stock_defaults() {
        // Stock qperf 0.4.11: sctp_bw sends 32 KiB blocks (tcp_bw 64 KiB), sctp_lat 1 byte;
        // both are stream tests (full blocks counted), their errors name SCTP.
        let bw = SockTest::from_name("sctp_bw").unwrap();
        let lat = SockTest::from_name("sctp_lat").unwrap();
        assert_eq!((bw.default_size(), bw.measure(), bw.is_bw(), bw.kind()), (32 * 1024, Measure::Bandwidth, true, "SCTP"));
        assert_eq!((lat.default_size(), lat.measure(), lat.is_bw(), lat.kind()), (1, Measure::Latency, false, "SCTP"));
        assert!(!bw.is_udp() && !lat.is_udp());
        assert_eq!(SockTest::from_name("tcp_bw").unwrap().kind(), "TCP");
        assert_eq!(SockTest::from_name("udp_lat").unwrap().kind(), "UDP");
        assert_eq!(SockTest::from_name("sdp_bw"), None);
    }
}
