//! `rperftest rping`: rdma-core's `rping` over this project's own rdma_cm and verbs, wire
//! compatible with it both ways.
//!
//! The protocol (our notes of rdma-core's rping): an RC connection in the TCP port space
//! (default port 7174), no private data; each side posts a receive before it connects or
//! accepts. The only SEND payload is a 16-byte advertisement, big-endian: buffer address
//! (u64), rkey (u32), length (u32). One ping: the client fills its source buffer with
//! `rdma-ping-<n>: ` and a rotating run of ASCII 'A'..='z' (NUL last) and advertises it; the
//! server RDMA-READs it and answers with a 16-byte "go ahead" (zeros); the client advertises
//! its sink buffer; the server RDMA-WRITEs what it read (its C-string length + 1) there and
//! sends "go ahead" again; the client compares source and sink with `-V`. A receive of any
//! other length than 16 is "Received bogus data, size N". After `-C` pings the client
//! disconnects.
//!
//! Differences from rping: every wait is bounded (`--timeout`, default 10 s; the server waits
//! for its client without bound unless `--listen-timeout` is given) and a dead peer ends
//! with one line naming what was awaited; `-P` serves clients one after another rather than a
//! thread each; the server takes any advertised length up to 65536 bytes (rping's server needs
//! the client's `-S` to be no larger than its own); `-q` is accepted and changes nothing (the
//! QP always moves with the kernel's attributes); at the end the server does not print
//! rping's "wait for RDMA_READ_ADV state 10" line.

use std::net::{IpAddr, SocketAddr};
use std::sync::Arc;
use std::time::{Duration, Instant};

use providers::ProviderSettings;
use uverbs::cm::{CmChannel, CmEventKind, CmId, ConnParam, PortSpace};
use uverbs::objects::{AccessFlags, Context, Cq, Mr, Pd, Qp, QpInit};
use uverbs::provider::{Provider, QpCaps, QpState, QpType};
use uverbs::wr::{RecvWr, SendFlags, SendWr, Sge, WcOpcode, WcStatus, WorkCompletion, WrOpcode};

/// The advertisement's size on the wire.
pub const ADV_LEN: usize = 16;
/// rping's buffer limit: `-S` is at most this - 1, and our server reads at most this much.
pub const BUF_MAX: usize = 64 * 1024;
/// The smallest `-S`: room for the longest "rdma-ping-<int>: " and its NUL (as rping).
pub const MIN_SIZE: usize = 11 + 16;
pub const DEFAULT_PORT: u16 = 7174;

/// `{addr, rkey, len}` of a buffer the peer may READ or WRITE.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Adv {
    pub addr: u64,
    pub rkey: u32,
    pub len: u32,
}

impl Adv {
    pub fn encode(&self) -> [u8; ADV_LEN] {
        let mut b = [0u8; ADV_LEN];
        b[..8].copy_from_slice(&self.addr.to_be_bytes());
        b[8..12].copy_from_slice(&self.rkey.to_be_bytes());
        b[12..].copy_from_slice(&self.len.to_be_bytes());
        b
    }
    /// Decode untrusted bytes: exactly 16 of them (rping's "Received bogus data, size N").
    pub fn decode(b: &[u8]) -> Result<Adv, String> {
        let b: &[u8; ADV_LEN] = b
            .try_into()
            .map_err(|_| format!("Received bogus data, size {}", b.len()))?;
        Ok(Adv {
            addr: u64::from_be_bytes(b[..8].try_into().unwrap_or_default()),
            rkey: u32::from_be_bytes(b[8..12].try_into().unwrap_or_default()),
            len: u32::from_be_bytes(b[12..].try_into().unwrap_or_default()),
        })
    }
    /// The length, if a buffer of `max` bytes can take it (and it is not 0).
    pub fn checked_len(&self, max: usize) -> Result<usize, String> {
        let n = self.len as usize;
        if n == 0 || n > max {
            return Err(format!(
                "the peer advertised a {n}-byte buffer; this side takes 1..={max} (use -S {} or less)",
                max - 1
            ));
        }
        Ok(n)
    }
}

/// The client's source text for ping `ping` whose run starts at `start` ('A'..='z'): as
/// rping's `snprintf` + fill loop + final NUL, `size` bytes.
pub fn ping_text(ping: i32, start: u8, size: usize) -> Vec<u8> {
    let head = format!("rdma-ping-{ping}: ");
    let mut b = vec![0u8; size];
    let n = head.len().min(size.saturating_sub(1));
    b[..n].copy_from_slice(&head.as_bytes()[..n]);
    let mut c = start;
    for x in b.iter_mut().skip(head.len()) {
        *x = c;
        c = if c >= b'z' { b'A' } else { c + 1 };
    }
    if let Some(last) = b.last_mut() {
        *last = 0;
    }
    b
}

/// The next run start after `start` ('A'..='z', wrapping).
pub fn next_start(start: u8) -> u8 {
    if start >= b'z' {
        b'A'
    } else {
        start + 1
    }
}

/// A buffer as C's `%s` prints it: up to the first NUL.
pub fn c_str(b: &[u8]) -> String {
    let end = b.iter().position(|&x| x == 0).unwrap_or(b.len());
    String::from_utf8_lossy(&b[..end]).into_owned()
}

#[derive(Clone, Debug, PartialEq)]
pub struct Opts {
    pub server: bool,
    pub addr: Option<IpAddr>,
    pub src: Option<IpAddr>,
    pub port: u16,
    pub size: usize,
    pub count: u32,
    pub verbose: bool,
    pub validate: bool,
    pub debug: bool,
    pub persistent: bool,
    pub timeout: Duration,
    pub listen_timeout: Option<Duration>,
}

pub const USAGE: &str = "rping -s [-vVd] [-S size] [-C count] [-a addr] [-p port]
rping -c [-vVd] [-S size] [-C count] [-I addr] -a addr [-p port]
\t-c\t\tclient side
\t-I\t\tSource address to bind to for client.
\t-s\t\tserver side.  To bind to any address with IPv6 use -a ::0
\t-v\t\tdisplay ping data to stdout
\t-V\t\tvalidate ping data
\t-d\t\tdebug printfs
\t-S size \tping data size
\t-C count\tping count times
\t-a addr\t\taddress
\t-p port\t\tport
\t-P\t\tpersistent server mode allowing multiple connections
\t-q\t\taccepted for compatibility (no effect)
\t--timeout SECS\tbound on every wait once connecting (default 10)
\t--listen-timeout SECS\tserver: bound on the wait for a client (default none)
";

fn secs(v: &str) -> Result<Duration, String> {
    v.parse::<f64>()
        .ok()
        .filter(|s| *s > 0.0 && *s <= 86_400.0)
        .map(Duration::from_secs_f64)
        .ok_or_else(|| format!("invalid number of seconds '{v}' (0 < s <= 86400)"))
}

/// rping's options (getopt `a:I:Pp:C:S:scvVdq`: clustered flags, values attached or next),
/// plus our two long options. `Ok(None)` for `-h`. An error is one line: control characters
/// of the arguments it quotes are escaped (found by the `rping` fuzz target: a newline in an
/// argument split the message).
pub fn parse(args: &[String]) -> Result<Option<Opts>, String> {
    parse_args(args).map_err(|e| e.chars().map(|c| if c.is_control() { c.escape_default().to_string() } else { c.to_string() }).collect())
}

fn parse_args(args: &[String]) -> Result<Option<Opts>, String> {
    let mut o = Opts {
        server: false,
        addr: None,
        src: None,
        port: DEFAULT_PORT,
        size: 64,
        count: 0,
        verbose: false,
        validate: false,
        debug: false,
        persistent: false,
        timeout: Duration::from_secs(10),
        listen_timeout: None,
    };
    let mut side: Option<bool> = None;
    let mut i = 0;
    let ip = |v: &str| -> Result<IpAddr, String> {
        v.parse()
            .map_err(|_| format!("'{v}' is not an IPv4 or IPv6 address (rperftest rping takes numeric addresses)"))
    };
    while i < args.len() {
        let a = &args[i];
        i += 1;
        if let Some(long) = a.strip_prefix("--") {
            let (name, inline) = match long.split_once('=') {
                Some((n, v)) => (n, Some(v.to_string())),
                None => (long, None),
            };
            let mut val = || -> Result<String, String> {
                if let Some(v) = inline.clone() {
                    return Ok(v);
                }
                i += 1;
                args.get(i - 1).cloned().ok_or_else(|| format!("option --{name} needs a value"))
            };
            match name {
                "timeout" => o.timeout = secs(&val()?)?,
                "listen-timeout" => o.listen_timeout = Some(secs(&val()?)?),
                "help" => return Ok(None),
                _ => return Err(format!("unknown option --{name}")),
            }
            continue;
        }
        let flags = match a.strip_prefix('-') {
            Some(f) if !f.is_empty() => f,
            _ => return Err(format!("unexpected argument '{a}'")),
        };
        for (k, c) in flags.char_indices() {
            if "aIpCS".contains(c) {
                let rest = &flags[k + c.len_utf8()..];
                let v = if !rest.is_empty() {
                    rest.to_string()
                } else {
                    i += 1;
                    args.get(i - 1).cloned().ok_or_else(|| format!("option -{c} needs a value"))?
                };
                match c {
                    'a' => o.addr = Some(ip(&v)?),
                    'I' => o.src = Some(ip(&v)?),
                    'p' => {
                        o.port = v.parse().ok().filter(|p| *p > 0).ok_or_else(|| format!("invalid port '{v}'"))?
                    }
                    'C' => o.count = v.parse().map_err(|_| format!("Invalid count {v}"))?,
                    _ => {
                        let s: usize = v.parse().unwrap_or(0);
                        if !(MIN_SIZE..BUF_MAX).contains(&s) {
                            return Err(format!("Invalid size {v} (valid range is {MIN_SIZE} to {})", BUF_MAX - 1));
                        }
                        o.size = s;
                    }
                }
                break;
            }
            match c {
                's' => side = Some(true),
                'c' => side = Some(false),
                'v' => o.verbose = true,
                'V' => o.validate = true,
                'd' => o.debug = true,
                'P' => o.persistent = true,
                'q' => {}
                'h' => return Ok(None),
                _ => return Err(format!("unknown option -{c}")),
            }
        }
    }
    match side {
        Some(s) => o.server = s,
        None => return Err("one of -s (server) or -c (client) is needed".into()),
    }
    if !o.server && o.addr.is_none() {
        return Err("the client needs the server's address: -a ADDR".into());
    }
    Ok(Some(o))
}

pub fn run(args: &[String], settings: &ProviderSettings) -> u8 {
    let o = match parse(args) {
        Ok(Some(o)) => o,
        Ok(None) => {
            print!("{USAGE}");
            return 0;
        }
        Err(e) => {
            eprintln!("rping: {e}");
            eprint!("{USAGE}");
            return 2;
        }
    };
    let r = if o.server { server(&o, settings) } else { client(&o, settings) };
    match r {
        Ok(()) => 0,
        Err(e) => {
            eprintln!("rping: {e}");
            1
        }
    }
}

fn dbg(o: &Opts, s: impl AsRef<str>) {
    if o.debug {
        println!("{}", s.as_ref());
    }
}

fn server(o: &Opts, settings: &ProviderSettings) -> Result<(), String> {
    let e = |e: uverbs::Error| e.to_string();
    let chan = CmChannel::open().map_err(e)?;
    let listener = chan.create_id(PortSpace::Tcp, QpType::Rc).map_err(e)?;
    let _ = listener.set_reuseaddr(true);
    let any: IpAddr = [0u8, 0, 0, 0].into();
    let at = SocketAddr::new(o.addr.unwrap_or(any), o.port);
    listener.bind(&at).map_err(e)?;
    dbg(o, "rdma_bind_addr successful");
    listener.listen(3).map_err(e)?;
    dbg(o, "rdma_listen");
    loop {
        let ev = match o.listen_timeout {
            Some(t) => listener.wait_request(t).map_err(e)?.ok_or_else(|| {
                format!("no client connected to {at} within {} s; start the client with -a and this host's RDMA address", t.as_secs_f64())
            })?,
            None => loop {
                if let Some(ev) = listener.wait_request(Duration::from_secs(3600)).map_err(e)? {
                    break ev;
                }
            },
        };
        let mut conn = chan.adopt_request(&ev).map_err(e)?;
        conn.set_qp_type(QpType::Rc);
        dbg(o, format!("child cma id {}", conn.handle()));
        // The connection shares the listener's channel: waits on it take only its own events
        // and leave the listener's requests (-P) queued.
        let dev = conn.device().map_err(e)?;
        let job = Conn { o, id: conn, role: Role::Server { init: ev.conn.initiator_depth, resp: ev.conn.responder_resources } };
        let r = providers::open(&dev.info.desc(), settings, job).map_err(e)?;
        if !o.persistent {
            return r;
        }
        if let Err(m) = r {
            eprintln!("rping: {m}");
        }
    }
}

fn client(o: &Opts, settings: &ProviderSettings) -> Result<(), String> {
    let e = |e: uverbs::Error| e.to_string();
    let dst = SocketAddr::new(o.addr.ok_or("no -a address")?, o.port);
    let chan = CmChannel::open().map_err(e)?;
    let mut id = chan.create_id(PortSpace::Tcp, QpType::Rc).map_err(e)?;
    let src = o.src.map(|ip| SocketAddr::new(ip, 0));
    // rping gives address and route resolution 2 s each.
    let resolve = Duration::from_secs(2);
    id.resolve_addr(src.as_ref(), &dst, resolve).map_err(e)?;
    id.expect(CmEventKind::AddrResolved, resolve + Duration::from_secs(1)).map_err(|x| format!("{x}"))?;
    id.resolve_route(resolve).map_err(e)?;
    id.expect(CmEventKind::RouteResolved, resolve + Duration::from_secs(1)).map_err(e)?;
    dbg(o, "rdma_resolve_addr - rdma_resolve_route successful");
    let dev = id.device().map_err(e)?;
    providers::open(&dev.info.desc(), settings, Conn { o, id, role: Role::Client }).map_err(e)?
}

enum Role {
    Client,
    Server { init: u8, resp: u8 },
}

struct Conn<'a> {
    o: &'a Opts,
    id: CmId,
    role: Role,
}

// Layout of the one registered buffer.
const RECV_OFF: usize = 0;
const SEND_OFF: usize = 64;
const RDMA_OFF: usize = 128;

struct Res<'a, P: Provider> {
    o: &'a Opts,
    id: &'a CmId,
    mr: Mr<P>,
    cq: Cq<P>,
    qp: Qp<P>,
    /// Client: where the source buffer starts (after the sink).
    start_off: usize,
    side: &'static str,
}

/// What a wait ended with.
#[derive(Debug, PartialEq)]
enum Got {
    Recv(u32),
    Done(WcOpcode),
    Disconnected,
}

impl<'a> providers::ContextUser for Conn<'a> {
    type Output = Result<(), String>;
    fn run<P: Provider>(self, ctx: Arc<Context<P>>) -> Result<(), String> {
        let e = |e: uverbs::Error| e.to_string();
        let o = self.o;
        let pd = Pd::new(&ctx).map_err(e)?;
        // Client: sink (size) + source (size); server: one staging buffer of the most a
        // client may advertise.
        let (rdma_len, start_off) = match self.role {
            Role::Client => (2 * o.size, RDMA_OFF + o.size),
            Role::Server { .. } => (BUF_MAX, 0),
        };
        let access = AccessFlags::LOCAL_WRITE | AccessFlags::REMOTE_READ | AccessFlags::REMOTE_WRITE;
        let mr = Mr::alloc(&pd, RDMA_OFF + rdma_len, access, false).map_err(e)?;
        let cq = Cq::new(&ctx, 32, None, 0).map_err(e)?;
        let caps = QpCaps { max_send_wr: 16, max_recv_wr: 2, max_send_sge: 1, max_recv_sge: 1, max_inline_data: 0 };
        let qp = Qp::new(&pd, &QpInit { qp_type: QpType::Rc, send_cq: &cq, recv_cq: &cq, srq: None, caps, sq_sig_all: false }).map_err(e)?;
        dbg(o, format!("created qp {:#x}", qp.qpn()));
        let side = if matches!(self.role, Role::Client) { "client" } else { "server" };
        let mut r = Res { o, id: &self.id, mr, cq, qp, start_off, side };
        let out = match self.role {
            Role::Client => client_conn(&mut r),
            Role::Server { init, resp } => server_conn(&mut r, init, resp),
        };
        if out.is_err() {
            let _ = self.id.disconnect();
        }
        drop(r);
        out
    }
}

impl<'a, P: Provider> Res<'a, P> {
    fn post_recv(&mut self) -> Result<(), String> {
        let sge = [Sge { addr: self.mr.addr() + RECV_OFF as u64, length: ADV_LEN as u32, lkey: self.mr.lkey() }];
        // SAFETY: the SGE lies inside `self.mr`, which outlives the QP (same struct, dropped
        // after the QP is destroyed); the slot is read only after the receive completes.
        unsafe { self.qp.post_recv(&[RecvWr { wr_id: 1, sgl: &sge }]) }.map_err(|e| format!("post recv error: {e}"))
    }

    fn send_adv(&mut self, adv: &Adv) -> Result<(), String> {
        self.mr.write_at(SEND_OFF, &adv.encode()).map_err(|e| e.to_string())?;
        let sge = [Sge { addr: self.mr.addr() + SEND_OFF as u64, length: ADV_LEN as u32, lkey: self.mr.lkey() }];
        let mut wr = SendWr::new(2, WrOpcode::Send, &sge);
        wr.flags = SendFlags::SIGNALED;
        // SAFETY: the SGE lies inside `self.mr` (alive past the QP); the peer answers a SEND
        // only after it arrived, so the slot is not rewritten while the HCA still reads it.
        unsafe { self.qp.post_send(&[wr]) }.map_err(|e| format!("post send error: {e}"))
    }

    fn post_rdma(&mut self, op: WrOpcode, local_off: usize, len: usize, remote: &Adv) -> Result<(), String> {
        let sge = [Sge { addr: self.mr.addr() + local_off as u64, length: len as u32, lkey: self.mr.lkey() }];
        let mut wr = SendWr::new(3, op, &sge);
        wr.flags = SendFlags::SIGNALED;
        wr.remote.addr = remote.addr;
        wr.remote.rkey = remote.rkey;
        // SAFETY: local_off + len lies inside `self.mr` (checked by the callers against the
        // buffer sizes); the region is not touched until the completion is polled.
        unsafe { self.qp.post_send(&[wr]) }.map_err(|e| format!("post send error: {e}"))
    }

    /// Wait for a receive or the completion of `want`, up to the timeout. Send completions
    /// and flushed requests are passed over (as rping does); DISCONNECTED ends the wait.
    fn wait(&mut self, want: Option<WcOpcode>, what: &str) -> Result<Got, String> {
        let deadline = Instant::now() + self.o.timeout;
        let mut wc = [WorkCompletion::default(); 4];
        loop {
            let n = self.cq.poll(&mut wc).map_err(|e| format!("poll error: {e}"))?;
            for c in &wc[..n] {
                if c.status == WcStatus::WrFlushErr {
                    continue;
                }
                if c.status != WcStatus::Success {
                    return Err(format!(
                        "cq completion failed status {} ({}) while waiting for {what}: {}",
                        c.status.raw(),
                        c.status,
                        c.status.likely_cause()
                    ));
                }
                match c.opcode {
                    WcOpcode::Recv => {
                        dbg(self.o, "recv completion");
                        return Ok(Got::Recv(c.byte_len));
                    }
                    op if Some(op) == want => {
                        dbg(self.o, format!("{op:?} completion"));
                        return Ok(Got::Done(op));
                    }
                    WcOpcode::Send => dbg(self.o, "send completion"),
                    other => return Err(format!("unexpected {other:?} completion while waiting for {what}")),
                }
            }
            if n > 0 {
                continue;
            }
            if let Some(ev) = self.id.wait_event(Duration::from_millis(1)).map_err(|e| e.to_string())? {
                if ev.kind == CmEventKind::Disconnected {
                    eprintln!("{} DISCONNECT EVENT...", self.side);
                    return Ok(Got::Disconnected);
                }
                if ev.kind != CmEventKind::Established {
                    return Err(format!("cma event {}, error {}", ev.kind.name(), ev.status));
                }
            }
            if Instant::now() > deadline {
                return Err(format!(
                    "no {what} within {} s: the peer is gone or stuck (raise --timeout if it is just slow)",
                    self.o.timeout.as_secs_f64()
                ));
            }
        }
    }

    /// A receive: its 16 bytes decoded, the receive reposted.
    fn recv_adv(&mut self, len: u32) -> Result<Adv, String> {
        let mut b = [0u8; ADV_LEN];
        let n = (len as usize).min(ADV_LEN);
        self.mr.read_at(RECV_OFF, &mut b[..n]).map_err(|e| e.to_string())?;
        if len as usize != ADV_LEN {
            return Err(format!("Received bogus data, size {len}"));
        }
        self.post_recv()?;
        let a = Adv::decode(&b)?;
        dbg(self.o, format!("Received rkey {:x} addr {:x} len {} from peer", a.rkey, a.addr, a.len));
        Ok(a)
    }

    fn expect_recv(&mut self, what: &str) -> Result<Option<Adv>, String> {
        match self.wait(None, what)? {
            Got::Recv(n) => self.recv_adv(n).map(Some),
            Got::Disconnected => Ok(None),
            Got::Done(op) => Err(format!("unexpected {op:?} completion while waiting for {what}")),
        }
    }
}

fn client_conn<P: Provider>(r: &mut Res<'_, P>) -> Result<(), String> {
    let e = |e: uverbs::Error| e.to_string();
    let o = r.o;
    r.id.modify_qp(&mut r.qp, QpState::Init).map_err(e)?;
    r.post_recv()?;
    let p = ConnParam { responder_resources: 1, initiator_depth: 1, retry_count: 7, rnr_retry_count: 7, ..Default::default() };
    let p = ConnParam { qp_num: r.qp.qpn(), ..p };
    r.id.connect(&p).map_err(e)?;
    r.id.complete_connect(&mut r.qp, o.timeout).map_err(e)?;
    dbg(o, "rdma_connect successful");
    let size = o.size;
    let (sink, src) = (RDMA_OFF, r.start_off);
    let mut start = b'A';
    let mut ping: u32 = 0;
    while o.count == 0 || ping < o.count {
        let text = ping_text(ping as i32, start, size);
        start = next_start(start);
        r.mr.write_at(src, &text).map_err(e)?;
        r.send_adv(&Adv { addr: r.mr.addr() + src as u64, rkey: r.mr.rkey(), len: size as u32 })?;
        if r.expect_recv("the server's go-ahead after its RDMA READ")?.is_none() {
            return Err("the server disconnected in the middle of a ping".into());
        }
        r.send_adv(&Adv { addr: r.mr.addr() + sink as u64, rkey: r.mr.rkey(), len: size as u32 })?;
        if r.expect_recv("the server's go-ahead after its RDMA WRITE")?.is_none() {
            return Err("the server disconnected in the middle of a ping".into());
        }
        let mut got = vec![0u8; size];
        r.mr.read_at(sink, &mut got).map_err(e)?;
        if o.validate && got != text {
            return Err("data mismatch!".into());
        }
        if o.verbose {
            println!("ping data: {}", c_str(&got));
        }
        // Clear the sink so that the next ping's check sees only what the server wrote.
        r.mr.write_at(sink, &vec![0u8; size]).map_err(e)?;
        ping = ping.wrapping_add(1);
    }
    r.id.disconnect().map_err(e)?;
    match r.id.expect(CmEventKind::Disconnected, o.timeout) {
        Ok(_) => eprintln!("client DISCONNECT EVENT..."),
        Err(x) => return Err(format!("after {ping} pings: {x}")),
    }
    Ok(())
}

fn server_conn<P: Provider>(r: &mut Res<'_, P>, init: u8, _resp: u8) -> Result<(), String> {
    let e = |e: uverbs::Error| e.to_string();
    let o = r.o;
    r.id.modify_qp(&mut r.qp, QpState::Init).map_err(e)?;
    r.post_recv()?;
    // What librdmacm's accept with default parameters settles on: the client's asks, here
    // at most 1 (one READ in flight is all a ping needs).
    // The server issues the READ: initiator depth 1, whatever the client offers.
    let p = ConnParam { responder_resources: init.min(1), initiator_depth: 1, retry_count: 7, rnr_retry_count: 7, ..Default::default() };
    r.id.accept_qp(&mut r.qp, &p).map_err(e)?;
    dbg(o, "accepting client connection request");
    let mut pings = 0u64;
    while let Some(src) = r.expect_recv("the client's source advertisement")? {
        let n = src.checked_len(BUF_MAX)?;
        r.post_rdma(WrOpcode::RdmaRead, RDMA_OFF, n, &src)?;
        match r.wait(Some(WcOpcode::RdmaRead), "the RDMA READ of the client's data")? {
            Got::Done(_) => {}
            Got::Disconnected => break,
            Got::Recv(_) => return Err("the client sent again before the READ completed".into()),
        }
        let mut data = vec![0u8; n];
        r.mr.read_at(RDMA_OFF, &mut data).map_err(e)?;
        if o.verbose {
            println!("server ping data: {}", c_str(&data));
        }
        r.send_adv(&Adv { addr: 0, rkey: 0, len: 0 })?;
        let Some(sink) = r.expect_recv("the client's sink advertisement")? else { break };
        // rping writes the C string and its NUL; never more than was read or the sink holds.
        let len = (data.iter().position(|&b| b == 0).map(|i| i + 1).unwrap_or(n)).min(sink.checked_len(BUF_MAX)?);
        r.post_rdma(WrOpcode::RdmaWrite, RDMA_OFF, len, &sink)?;
        match r.wait(Some(WcOpcode::RdmaWrite), "the RDMA WRITE to the client")? {
            Got::Done(_) => {}
            Got::Disconnected => break,
            Got::Recv(_) => return Err("the client sent again before the WRITE completed".into()),
        }
        r.send_adv(&Adv { addr: 0, rkey: 0, len: 0 })?;
        pings += 1;
    }
    dbg(o, format!("{pings} pings served"));
    // Answer the client's DREQ so that it sees DISCONNECTED at once.
    let _ = r.id.disconnect();
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(s: &str) -> Vec<String> {
        s.split_whitespace().map(String::from).collect()
    }

    #[test]
    fn advertisement_golden_bytes() {
        let a = Adv { addr: 0x0000_7f12_3456_7000, rkey: 0x1234_5678, len: 64 };
        let b = a.encode();
        assert_eq!(b, [0, 0, 0x7f, 0x12, 0x34, 0x56, 0x70, 0, 0x12, 0x34, 0x56, 0x78, 0, 0, 0, 64]);
        assert_eq!(Adv::decode(&b).unwrap(), a);
        assert_eq!(Adv::decode(&b[..15]).unwrap_err(), "Received bogus data, size 15");
        assert_eq!(Adv::decode(&[0u8; 17]).unwrap_err(), "Received bogus data, size 17");
        assert_eq!(Adv::decode(&[]).unwrap_err(), "Received bogus data, size 0");
        assert_eq!(Adv { len: 65536, ..a }.checked_len(BUF_MAX).unwrap(), 65536);
        assert!(Adv { len: 65537, ..a }.checked_len(BUF_MAX).is_err());
        assert!(Adv { len: u32::MAX, ..a }.checked_len(BUF_MAX).is_err());
        assert!(Adv { len: 0, ..a }.checked_len(BUF_MAX).is_err());
    }

    #[test]
    fn ping_text_as_rping() {
        let t = ping_text(0, b'A', 32);
        assert_eq!(&t[..], b"rdma-ping-0: ABCDEFGHIJKLMNOPQR\0");
        assert_eq!(c_str(&t), "rdma-ping-0: ABCDEFGHIJKLMNOPQR");
        // The run wraps from 'z' to 'A'.
        let t = ping_text(12, b'x', 27);
        assert_eq!(&t[..], b"rdma-ping-12: xyzABCDEFGHI\0");
        assert_eq!(next_start(b'z'), b'A');
        assert_eq!(next_start(b'A'), b'B');
        let t = ping_text(i32::MAX, b'A', MIN_SIZE);
        assert_eq!(c_str(&t), "rdma-ping-2147483647: ABCD");
        assert_eq!(t.len(), MIN_SIZE);
        assert_eq!(c_str(b"abc"), "abc");
    }

    #[test]
    fn options_as_rping() {
        let o = parse(&args("-c -a 10.99.0.1 -C 10 -VvS 100 -p7000")).unwrap().unwrap();
        assert!(!o.server && o.validate && o.verbose);
        assert_eq!((o.count, o.size, o.port), (10, 100, 7000));
        assert_eq!(o.addr, Some("10.99.0.1".parse().unwrap()));
        let o = parse(&args("-s -a ::0 -P -d --timeout 2.5")).unwrap().unwrap();
        assert!(o.server && o.persistent && o.debug);
        assert_eq!(o.addr, Some("::".parse().unwrap()));
        assert_eq!((o.port, o.size, o.count), (DEFAULT_PORT, 64, 0));
        assert_eq!(o.timeout, Duration::from_millis(2500));
        assert_eq!(parse(&args("-s --listen-timeout=3")).unwrap().unwrap().listen_timeout, Some(Duration::from_secs(3)));
        assert!(parse(&args("-h")).unwrap().is_none());
        assert_eq!(parse(&args("-a 1.2.3.4")).unwrap_err(), "one of -s (server) or -c (client) is needed");
        assert!(parse(&args("-c")).unwrap_err().contains("-a ADDR"));
        assert_eq!(parse(&args("-s -S 26")).unwrap_err(), "Invalid size 26 (valid range is 27 to 65535)");
        assert!(parse(&args("-s -S 65535")).is_ok());
        assert!(parse(&args("-s -S 65536")).is_err());
        assert!(parse(&args("-s -C -1")).is_err());
        assert!(parse(&args("-s -p 0")).is_err());
        assert!(parse(&args("-c -a host.example")).unwrap_err().contains("not an IPv4 or IPv6"));
        assert!(parse(&args("-s -x")).is_err());
        assert!(parse(&args("-s -S")).unwrap_err().contains("needs a value"));
        assert!(parse(&args("-s --timeout 0")).is_err());
        assert!(parse(&args("-s stray")).is_err());
    }
}
