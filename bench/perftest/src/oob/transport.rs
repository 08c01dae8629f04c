//! Blocking TCP transport of the exchange: connect (with retry) / listen+accept one client,
//! then fixed-size exchanges (client writes then reads, server reads then writes), each block
//! in one `write()`, every read bounded by a timeout.

use std::io::{self, ErrorKind, Read, Write};
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr, TcpListener, TcpStream, ToSocketAddrs};
use std::os::fd::AsFd;
use std::time::{Duration, Instant};

use nix::poll::{poll, PollFd, PollFlags, PollTimeout};

use super::error::OobError;
use super::msg::{self, BwReport, KeyFormat, KeyMsg, Negotiate, NegotiateLayout, PeerVersion, SysData};
use super::plan::Role;

/// Default read timeout once connected: generous enough for a 50× slow VM.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(60);

/// Server: how long to wait after a NEGOTIATE block's first 312 bytes for a 320-byte client's
/// tail to begin. A 320-byte client writes its block with one write(), which TCP delivers
/// whole, so the tail is normally there at once; a 312-byte client pays this once.
pub const NEGOTIATE_TAIL_GRACE: Duration = Duration::from_millis(300);

/// Transport settings.
#[derive(Clone, Debug)]
pub struct OobConfig {
    /// TCP port (`-p`), 18515 by default. 0 lets the server pick one (tests).
    pub port: u16,
    /// Timeout of every read (and write) after the connection is made.
    pub timeout: Duration,
    /// Client: keep retrying a refused/unreachable connect for this long (0: one attempt, like C).
    pub connect_retry_for: Duration,
    /// Client: pause between connect attempts.
    pub connect_retry_delay: Duration,
    /// Server: give up waiting for a client after this long (None: wait forever, like C).
    pub accept_timeout: Option<Duration>,
    /// Server: address to bind (None: any address of the family).
    pub bind_addr: Option<IpAddr>,
    /// Use IPv6 (`--ipv6-addr`) for the wildcard bind / name resolution.
    pub ipv6: bool,
    /// Client: local source address (`--source_ip`/`--bind_source_ip`): bound before connect.
    pub source_addr: Option<IpAddr>,
}

impl Default for OobConfig {
    fn default() -> Self {
        OobConfig {
            port: msg::DEFAULT_PORT,
            timeout: DEFAULT_TIMEOUT,
            connect_retry_for: Duration::from_secs(5),
            connect_retry_delay: Duration::from_millis(100),
            accept_timeout: None,
            bind_addr: None,
            ipv6: false,
            source_addr: None,
        }
    }
}

/// A listening server socket (one client will be accepted).
pub struct Listener {
    inner: TcpListener,
    cfg: OobConfig,
}

impl Listener {
    /// Bind and listen (SO_REUSEADDR like perftest).
    pub fn bind(cfg: &OobConfig) -> Result<Listener, OobError> {
        let ip = cfg.bind_addr.unwrap_or(if cfg.ipv6 {
            IpAddr::V6(Ipv6Addr::UNSPECIFIED)
        } else {
            IpAddr::V4(Ipv4Addr::UNSPECIFIED)
        });
        // std sets SO_REUSEADDR on Unix for TcpListener::bind.
        let inner = TcpListener::bind(SocketAddr::new(ip, cfg.port))
            .map_err(|source| OobError::Listen { port: cfg.port, source })?;
        Ok(Listener { inner, cfg: cfg.clone() })
    }

    /// The bound port (useful with port 0).
    pub fn port(&self) -> u16 {
        self.inner.local_addr().map(|a| a.port()).unwrap_or(self.cfg.port)
    }

    /// Accept exactly one client and close the listening socket.
    pub fn accept(self) -> Result<Channel, OobError> {
        let port = self.port();
        // Always a non-blocking loop: std's blocking accept() restarts on EINTR, so Ctrl-C
        // would not end a server waiting for its client.
        self.inner.set_nonblocking(true).map_err(|source| OobError::Accept { port, source })?;
        let start = Instant::now();
        let stream = loop {
            match self.inner.accept() {
                Ok((s, _)) => {
                    s.set_nonblocking(false).map_err(|source| OobError::Accept { port, source })?;
                    break s;
                }
                Err(e) if e.kind() == ErrorKind::WouldBlock || e.kind() == ErrorKind::Interrupted => {
                    if bench_core::signal::requested() {
                        return Err(OobError::Interrupted { step: "the wait for a client".into() });
                    }
                    if let Some(limit) = self.cfg.accept_timeout {
                        if start.elapsed() >= limit {
                            return Err(OobError::Accept {
                                port,
                                source: io::Error::new(
                                    ErrorKind::TimedOut,
                                    format!("no client connected within {} s", limit.as_secs()),
                                ),
                            });
                        }
                    }
                    // Sleep until a client knocks (or a slice passes, to look at the stop
                    // flag and the bound again), rather than wake every 20 ms: on a node that
                    // many sides share, a server waiting for its client cost CPU. An error or
                    // EINTR only ends the slice early.
                    let mut fds = [PollFd::new(self.inner.as_fd(), PollFlags::POLLIN)];
                    let _ = poll(&mut fds, PollTimeout::from(bench_core::signal::POLL_SLICE.as_millis() as u16));
                }
                Err(source) => return Err(OobError::Accept { port, source }),
            }
        };
        Channel::from_stream(stream, Role::Server, self.cfg.timeout)
    }
}

/// A connected exchange channel.
/// Builds our option block, given the peer's where this side has read it first.
pub type OptionsBuilder<'a> = dyn FnMut(Option<&[u8]>) -> Result<Vec<u8>, OobError> + 'a;

pub struct Channel {
    stream: TcpStream,
    role: Role,
    timeout: Duration,
}

impl Channel {
    /// Wrap a connected stream (sets the timeouts; TCP_NODELAY so a block never waits for an ACK).
    pub fn from_stream(stream: TcpStream, role: Role, timeout: Duration) -> Result<Channel, OobError> {
        let io = |source| OobError::Io { step: "socket setup".into(), source };
        let t = if timeout.is_zero() { None } else { Some(timeout) };
        stream.set_read_timeout(t).map_err(io)?;
        stream.set_write_timeout(t).map_err(io)?;
        stream.set_nodelay(true).map_err(io)?;
        keep_alive(&stream);
        Ok(Channel { stream, role, timeout })
    }

    /// Client: resolve `host` and connect, retrying refused/unreachable attempts for
    /// `cfg.connect_retry_for`.
    pub fn connect(host: &str, cfg: &OobConfig) -> Result<Channel, OobError> {
        let target = if host.contains(':') && !host.starts_with('[') {
            format!("[{host}]:{}", cfg.port)
        } else {
            format!("{host}:{}", cfg.port)
        };
        let addrs: Vec<SocketAddr> = match (host, cfg.port).to_socket_addrs() {
            Ok(a) => a.collect(),
            Err(source) => return Err(OobError::Connect { target, tries: 1, source }),
        };
        let addrs: Vec<SocketAddr> = {
            // Prefer the requested family (the source address's, when one is given), fall
            // back to whatever resolved.
            let v6 = cfg.source_addr.map_or(cfg.ipv6, |s| s.is_ipv6());
            let fam: Vec<SocketAddr> = addrs.iter().copied().filter(|a| a.is_ipv6() == v6).collect();
            if fam.is_empty() {
                if let Some(src) = cfg.source_addr {
                    return Err(OobError::Source {
                        msg: format!(
                            " {} {src}: {host} has no {} address to connect to from it; give a source address \
                             of the server's family",
                            super::source::OPTION,
                            if v6 { "IPv6" } else { "IPv4" }
                        ),
                    });
                }
                addrs
            } else {
                fam
            }
        };
        if addrs.is_empty() {
            return Err(OobError::Connect {
                target,
                tries: 1,
                source: io::Error::new(ErrorKind::NotFound, "the name resolves to no usable address"),
            });
        }
        let start = Instant::now();
        let mut tries = 0u32;
        loop {
            let mut last_err = None;
            for a in &addrs {
                tries += 1;
                if bench_core::signal::requested() {
                    return Err(OobError::Interrupted { step: format!("the connection to {target}") });
                }
                // A SYN that gets no answer should not hold a client for the whole OOB timeout.
                let per_try = cfg.timeout.clamp(Duration::from_secs(1), Duration::from_secs(10));
                let attempt = match cfg.source_addr {
                    // --source_ip: bind() before connect(), as perftest.
                    Some(src) => super::source::connect_from(src, a, per_try).map_err(|e| match e {
                        super::source::ConnectFromError::Bind(e) => Err(super::source::bind_error(src, &e)),
                        super::source::ConnectFromError::Connect(e) => Ok(e),
                    }),
                    None => TcpStream::connect_timeout(a, per_try).map_err(Ok),
                };
                match attempt {
                    Ok(s) => return Channel::from_stream(s, Role::Client, cfg.timeout),
                    Err(Ok(e)) => last_err = Some(e),
                    Err(Err(msg)) => return Err(OobError::Source { msg }),
                }
            }
            let e = last_err.unwrap_or_else(|| io::Error::other("no address"));
            let retryable = matches!(
                e.kind(),
                ErrorKind::ConnectionRefused
                    | ErrorKind::ConnectionReset
                    | ErrorKind::TimedOut
                    | ErrorKind::Interrupted
            ) || e.raw_os_error() == Some(libc::EHOSTUNREACH)
                || e.raw_os_error() == Some(libc::ENETUNREACH);
            if !retryable || start.elapsed() >= cfg.connect_retry_for {
                return Err(OobError::Connect { target, tries, source: e });
            }
            std::thread::sleep(cfg.connect_retry_delay);
        }
    }

    pub fn role(&self) -> Role {
        self.role
    }

    pub fn timeout(&self) -> Duration {
        self.timeout
    }

    /// Change the read/write timeout (e.g. longer while the peer runs a long test).
    pub fn set_timeout(&mut self, timeout: Duration) -> Result<(), OobError> {
        let t = if timeout.is_zero() { None } else { Some(timeout) };
        let io = |source| OobError::Io { step: "socket setup".into(), source };
        self.stream.set_read_timeout(t).map_err(io)?;
        self.stream.set_write_timeout(t).map_err(io)?;
        self.timeout = timeout;
        Ok(())
    }

    /// The underlying stream (e.g. for shutdown on Ctrl-C).
    pub fn stream(&self) -> &TcpStream {
        &self.stream
    }

    /// Write one block with a single write() (looping only if the kernel takes it partially).
    pub fn send(&mut self, step: &str, block: &[u8]) -> Result<(), OobError> {
        let mut off = 0;
        while off < block.len() {
            match self.stream.write(&block[off..]) {
                Ok(0) => return Err(OobError::PeerClosed { step: step.to_string(), got: off, expected: block.len() }),
                Ok(n) => off += n,
                Err(e) if e.kind() == ErrorKind::Interrupted => {}
                Err(e) => return Err(self.map_io(step, e, off, block.len())),
            }
        }
        Ok(())
    }

    /// Read exactly `len` bytes within the timeout.
    pub fn recv(&mut self, step: &str, len: usize) -> Result<Vec<u8>, OobError> {
        let mut buf = vec![0u8; len];
        self.recv_into(step, &mut buf, 0)?;
        Ok(buf)
    }

    fn recv_into(&mut self, step: &str, buf: &mut [u8], mut got: usize) -> Result<(), OobError> {
        let expected = buf.len();
        // The whole message must arrive within the timeout (a peer trickling bytes does not
        // extend it). Reads wait in short slices so a stop signal is seen within POLL_SLICE.
        let deadline = if self.timeout.is_zero() { None } else { Some(Instant::now() + self.timeout) };
        while got < expected {
            if bench_core::signal::requested() {
                return Err(OobError::Interrupted { step: step.to_string() });
            }
            let slice = match deadline {
                Some(d) => {
                    let left = d.saturating_duration_since(Instant::now());
                    if left.is_zero() {
                        return Err(OobError::Timeout { step: step.to_string(), secs: self.timeout.as_secs(), got, expected });
                    }
                    left.min(bench_core::signal::POLL_SLICE)
                }
                None => bench_core::signal::POLL_SLICE,
            };
            let _ = self.stream.set_read_timeout(Some(slice.max(Duration::from_millis(1))));
            match self.stream.read(&mut buf[got..]) {
                Ok(0) => return Err(OobError::PeerClosed { step: step.to_string(), got, expected }),
                Ok(n) => got += n,
                Err(e) if matches!(e.kind(), ErrorKind::Interrupted | ErrorKind::WouldBlock | ErrorKind::TimedOut) => {}
                Err(e) => return Err(self.map_io(step, e, got, expected)),
            }
        }
        Ok(())
    }

    fn map_io(&self, step: &str, e: io::Error, got: usize, expected: usize) -> OobError {
        match e.kind() {
            ErrorKind::WouldBlock | ErrorKind::TimedOut => {
                OobError::Timeout { step: step.to_string(), secs: self.timeout.as_secs(), got, expected }
            }
            ErrorKind::ConnectionReset | ErrorKind::BrokenPipe | ErrorKind::UnexpectedEof => {
                OobError::PeerClosed { step: step.to_string(), got, expected }
            }
            _ => OobError::Io { step: step.to_string(), source: e },
        }
    }

    /// One exchange: client writes then reads, server reads then writes. Returns the peer's block.
    pub fn exchange(&mut self, step: &str, mine: &[u8], theirs_len: usize) -> Result<Vec<u8>, OobError> {
        match self.role {
            Role::Client => {
                self.send(step, mine)?;
                self.recv(step, theirs_len)
            }
            Role::Server => {
                let v = self.recv(step, theirs_len)?;
                self.send(step, mine)?;
                Ok(v)
            }
        }
    }

    /// VERSION exchange; rejects peers older than 5.70 (after our block went out, like C).
    pub fn exchange_version(&mut self, own: &str) -> Result<PeerVersion, OobError> {
        self.exchange_version_marked(own, false)
    }

    /// The version exchange; `mark`: append [`msg::RPERFTEST_MARK`] (invisible to perftest).
    pub fn exchange_version_marked(&mut self, own: &str, mark: bool) -> Result<PeerVersion, OobError> {
        let mine = if mark { msg::encode_version_marked(own)? } else { msg::encode_version(own)? };
        let theirs = self.exchange("the version exchange", &mine, msg::VERSION_LEN)?;
        let peer = msg::decode_version(&theirs)?;
        msg::check_version(&peer)?;
        Ok(peer)
    }

    /// The rperftest-only option exchange (both sides rperftest), in perftest's order (the
    /// client writes first). `mine` builds our block from the peer's where the server has read
    /// it first (so a `--adopt` server can answer with the options it took); the peer's block.
    pub fn exchange_options(
        &mut self,
        mine: &mut OptionsBuilder<'_>,
    ) -> Result<Vec<u8>, OobError> {
        const STEP: &str = "the rperftest option exchange";
        if self.role == Role::Server {
            let theirs = self.recv(STEP, msg::OPTIONS_LEN)?;
            let block = mine(Some(&theirs))?;
            self.send(STEP, &block)?;
            Ok(theirs)
        } else {
            let block = mine(None)?;
            self.send(STEP, &block)?;
            self.recv(STEP, msg::OPTIONS_LEN)
        }
    }

    /// SYSDATA (page size, cache line) as two exchanges; returns the peer's values.
    pub fn exchange_sysdata(&mut self, local: SysData) -> Result<SysData, OobError> {
        let p = self.exchange("the page size exchange", &msg::encode_i32(local.page_size), msg::SYSDATA_LEN)?;
        let page_size = msg::decode_page_size(&p)?;
        let c = self.exchange("the cache line exchange", &msg::encode_i32(local.cache_line), msg::SYSDATA_LEN)?;
        let cache_line = msg::decode_cache_line(&c)?;
        Ok(SysData { page_size, cache_line })
    }

    /// MTU exchange (block length from the peer's version); returns the peer's enum if valid.
    pub fn exchange_mtu(&mut self, local_enum: u8, peer: &PeerVersion) -> Result<Option<u8>, OobError> {
        let Some(len) = peer.mtu_len() else { return Ok(None) };
        let mine = msg::encode_mtu(local_enum, len)?;
        let theirs = self.exchange("the MTU exchange", &mine, len)?;
        msg::decode_mtu(&theirs)
    }

    /// NEGOTIATE exchange and comparison. The server adapts to a 312- or 320-byte client (it
    /// reads 312 bytes; if anything follows within [`NEGOTIATE_TAIL_GRACE`] the client sent
    /// 320 and the rest is read under the ordinary timeout), and answers in the client's size;
    /// the client sends `layout` and expects the same size back.
    pub fn exchange_negotiate(&mut self, local: &Negotiate, layout: NegotiateLayout) -> Result<Negotiate, OobError> {
        const STEP: &str = "the parameter negotiation";
        let remote = match self.role {
            Role::Client => {
                let theirs = self.exchange(STEP, &local.encode(layout), layout.len())?;
                Negotiate::decode(&theirs)?
            }
            Role::Server => {
                let mut buf = vec![0u8; msg::NEGOTIATE_LEN];
                self.recv_into(STEP, &mut buf[..msg::NEGOTIATE_LEN_NO_MLX5DV], 0)?;
                // A 312-byte client is now blocked reading our answer, so nothing follows. A
                // 320-byte client's tail is normally here already, but may come in pieces: one
                // byte of it decides, the whole of it is waited for (issue #39: a tail that had
                // only partly arrived used to be taken for a 312-byte client).
                let len = if self.bytes_follow_within(NEGOTIATE_TAIL_GRACE) {
                    self.recv_into(STEP, &mut buf, msg::NEGOTIATE_LEN_NO_MLX5DV)?;
                    msg::NEGOTIATE_LEN
                } else if bench_core::signal::requested() {
                    return Err(OobError::Interrupted { step: STEP.to_string() });
                } else {
                    msg::NEGOTIATE_LEN_NO_MLX5DV
                };
                buf.truncate(len);
                let remote = Negotiate::decode(&buf)?;
                let answer = NegotiateLayout::from_len(len).unwrap_or(layout);
                self.send(STEP, &local.encode(answer))?;
                remote
            }
        };
        msg::compare_negotiation(local, &remote)?;
        Ok(remote)
    }

    /// Whether at least one byte is waiting, or arrives within `wait` (false on EOF, an error
    /// or a stop signal: the next read reports those).
    fn bytes_follow_within(&mut self, wait: Duration) -> bool {
        let deadline = Instant::now() + wait;
        let mut tmp = [0u8; 1];
        let found = loop {
            if bench_core::signal::requested() {
                break false;
            }
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                break false;
            }
            let _ = self.stream.set_read_timeout(Some(left.min(bench_core::signal::POLL_SLICE).max(Duration::from_millis(1))));
            match self.stream.peek(&mut tmp) {
                Ok(n) => break n > 0,
                Err(e) if matches!(e.kind(), ErrorKind::Interrupted | ErrorKind::WouldBlock | ErrorKind::TimedOut) => {}
                Err(_) => break false,
            }
        };
        let t = if self.timeout.is_zero() { None } else { Some(self.timeout) };
        let _ = self.stream.set_read_timeout(t);
        found
    }

    /// One key-record exchange. A peer using the other text format is reported at once (we read
    /// the shorter length first and look at it) instead of both sides waiting for bytes that
    /// never come.
    pub fn exchange_key(&mut self, mine: &KeyMsg, fmt: KeyFormat) -> Result<KeyMsg, OobError> {
        const STEP: &str = "the key exchange";
        let block = mine.encode(fmt)?;
        if self.role == Role::Client {
            self.send(STEP, &block)?;
        }
        let theirs = self.recv_key(fmt)?;
        if self.role == Role::Server {
            self.send(STEP, &block)?;
        }
        KeyMsg::decode(&theirs, fmt)
    }

    fn recv_key(&mut self, fmt: KeyFormat) -> Result<Vec<u8>, OobError> {
        const STEP: &str = "the key exchange";
        let want = fmt.len();
        let mut buf = vec![0u8; want];
        // Lengths of the other formats that are shorter than ours: if the peer's block ends
        // (NUL) exactly there, it uses another format.
        let mut shorter: Vec<usize> = [KeyFormat::Short, KeyFormat::ShortDv, KeyFormat::Gid]
            .iter()
            .map(|f| f.len())
            .filter(|&l| l < want)
            .collect();
        shorter.sort_unstable();
        let mut got = 0;
        // Errors name the full record length, not the shorter prefix being read.
        let full = |e: OobError| match e {
            OobError::PeerClosed { step, got, .. } => OobError::PeerClosed { step, got, expected: want },
            OobError::Timeout { step, secs, got, .. } => OobError::Timeout { step, secs, got, expected: want },
            e => e,
        };
        for l in shorter {
            self.recv_into(STEP, &mut buf[..l], got).map_err(full)?;
            got = l;
            if buf[l - 1] == 0 {
                return Err(OobError::malformed(
                    STEP,
                    format!("peer sent a {l}-byte key record, we expect {want} bytes: {}", msg::show_text(&buf[..l])),
                    "both sides must agree on the GID setting: use the same -x on both (RoCE always uses a GID)",
                ));
            }
        }
        self.recv_into(STEP, &mut buf, got)?;
        Ok(buf)
    }

    /// The report exchange (5 blocks, 9 with `--report-per-port`); returns the peer's report.
    pub fn exchange_report(
        &mut self,
        mine: &BwReport,
        per_port: bool,
        peer: &PeerVersion,
    ) -> Result<BwReport, OobError> {
        let iters_len = peer.report_iters_len();
        let mut remote = BwReport::default();
        for &f in BwReport::fields(per_port) {
            let step = format!("the report exchange ({})", f.name());
            let theirs = self.exchange(&step, &mine.encode_field(f, iters_len), BwReport::field_len(f, iters_len))?;
            remote.decode_field(f, &theirs)?;
        }
        Ok(remote)
    }

    /// Write `done\0` (the peer never reads it) and close.
    pub fn finish(mut self) -> Result<(), OobError> {
        self.send("closing the connection", msg::DONE)?;
        Ok(())
    }
}

/// TCP keepalive probes: a peer whose host died without closing the connection is seen within
/// about 35 s (15 s idle, then 4 probes 5 s apart), also during a measurement-phase wait whose
/// bound is hours long or absent (`--run_infinitely`). Best effort: a failure leaves the
/// ordinary bounds in force.
fn keep_alive(stream: &TcpStream) {
    use std::os::fd::AsRawFd;
    let fd = stream.as_raw_fd();
    let set = |level: libc::c_int, name: libc::c_int, v: libc::c_int| {
        // SAFETY: fd is an open socket owned by `stream`; the option value is a c_int on the stack.
        unsafe {
            libc::setsockopt(
                fd,
                level,
                name,
                (&v as *const libc::c_int).cast(),
                std::mem::size_of::<libc::c_int>() as libc::socklen_t,
            )
        }
    };
    set(libc::SOL_SOCKET, libc::SO_KEEPALIVE, 1);
    set(libc::IPPROTO_TCP, libc::TCP_KEEPIDLE, 15);
    set(libc::IPPROTO_TCP, libc::TCP_KEEPINTVL, 5);
    set(libc::IPPROTO_TCP, libc::TCP_KEEPCNT, 4);
}
