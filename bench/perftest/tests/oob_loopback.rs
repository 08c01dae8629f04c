//! Client and server plans over a real localhost TCP connection, for every tool; and the
//! failure modes (peer closes, silence, garbage, old version, option mismatch) end in one clear
//! error on each side, never a panic or a hang.

use std::io::{Read, Write};
use std::net::TcpStream;
use std::thread;
use std::time::{Duration, Instant};

use perftest::oob::msg::{
    self, device_attr_blob, BwReport, KeyFormat, KeyMsg, Negotiate, NegotiateLayout, PeerVersion, SysData,
};
use perftest::oob::plan::{plan, Action, KeyPurpose, PlanOptions, Role, Step, Tool};
use perftest::oob::session::{execute, Hooks};
use perftest::oob::transport::{Channel, Listener, OobConfig};
use perftest::oob::OobError;

mod common;

fn cfg() -> OobConfig {
    OobConfig { port: 0, timeout: Duration::from_secs(10), ..Default::default() }
}

fn negotiate_block(iters: u64) -> Negotiate {
    common::write_bw_negotiate(iters, device_attr_blob(0x02c9, 4125, 16), 0)
}

struct TestHooks {
    role: Role,
    version: String,
    fmt: KeyFormat,
    iters: u64,
    layout: NegotiateLayout,
    peer_version: Option<PeerVersion>,
    remote_keys: Vec<(usize, KeyPurpose, KeyMsg)>,
    remote_reports: Vec<BwReport>,
    remote_neg: Option<Negotiate>,
    actions: Vec<Action>,
    mtu: Option<Option<u8>>,
    /// How long each `Action::Run` takes (the peer's silence while it measures).
    run_delay: Duration,
    run_timeout: Option<(Duration, String)>,
    /// Check the peer's records as the tools do (None: accept anything).
    ledger: Option<perftest::oob::plausible::KeyLedger>,
    /// rperftest's option lines (None: behave like C perftest, no mark, no option exchange).
    options: Option<Vec<(&'static str, String)>>,
    option_diff: Option<Vec<String>>,
    /// `on_options_match` was called (the options were compared and are equal).
    options_matched: bool,
    /// `--adopt`: take the peer's -q (and the rest of its lines) and continue with this plan
    /// shape for that many QPs.
    adopt: Option<(Tool, PlanOptions)>,
}

impl TestHooks {
    fn new(role: Role) -> Self {
        TestHooks {
            role,
            version: msg::DEFAULT_VERSION.into(),
            fmt: KeyFormat::Gid,
            iters: 1000,
            layout: NegotiateLayout::WithMlx5dv,
            peer_version: None,
            remote_keys: vec![],
            remote_reports: vec![],
            remote_neg: None,
            actions: vec![],
            mtu: None,
            run_delay: Duration::ZERO,
            run_timeout: None,
            ledger: None,
            options: None,
            option_diff: None,
            options_matched: false,
            adopt: None,
        }
    }
    fn my_key(role: Role, qp: usize) -> KeyMsg {
        let base = if role == Role::Client { 0x100 } else { 0x200 };
        KeyMsg {
            lid: 0,
            out_reads: 1,
            qpn: base + qp as u32,
            psn: 0xabcdef - qp as u32,
            rkey: 0x1234 + base,
            vaddr: 0x7f00_0000_0000 + (qp as u64) * 0x10000,
            tail_markers_vaddr: 0,
            gid: [0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff, 10, 99, 0, 1],
            srqn: 0,
        }
    }
}

impl Hooks for TestHooks {
    type Error = OobError;
    fn own_version(&self) -> &str {
        &self.version
    }
    fn sysdata(&self) -> SysData {
        SysData { page_size: 4096, cache_line: 64 }
    }
    fn mtu_enum(&self) -> u8 {
        if self.role == Role::Client {
            3
        } else {
            5
        }
    }
    fn negotiate(&mut self) -> (Negotiate, NegotiateLayout) {
        (negotiate_block(self.iters), self.layout)
    }
    fn key_format(&self) -> KeyFormat {
        self.fmt
    }
    fn key(&mut self, qp: usize) -> KeyMsg {
        Self::my_key(self.role, qp)
    }
    fn report(&mut self) -> BwReport {
        match self.role {
            Role::Client => BwReport {
                size: 65536,
                iters: 1000,
                bw_peak: 11483.93,
                bw_avg: 11483.38,
                msg_rate: 0.183734,
                ..Default::default()
            },
            Role::Server => BwReport::default(),
        }
    }
    fn on_version(&mut self, peer: &PeerVersion) -> Result<(), OobError> {
        self.peer_version = Some(peer.clone());
        Ok(())
    }
    fn on_mtu(&mut self, remote: Option<u8>) -> Result<(), OobError> {
        self.mtu = Some(remote);
        Ok(())
    }
    fn on_negotiate(&mut self, remote: &Negotiate) -> Result<(), OobError> {
        self.remote_neg = Some(remote.clone());
        Ok(())
    }
    fn on_key(&mut self, qp: usize, purpose: KeyPurpose, remote: KeyMsg) -> Result<(), OobError> {
        if let Some(l) = self.ledger.as_mut() {
            l.check(qp, purpose, &remote)?;
        }
        self.remote_keys.push((qp, purpose, remote));
        Ok(())
    }
    fn on_report(&mut self, remote: BwReport) -> Result<(), OobError> {
        self.remote_reports.push(remote);
        Ok(())
    }
    fn action(&mut self, action: Action) -> Result<(), OobError> {
        if matches!(action, Action::Run { .. }) {
            thread::sleep(self.run_delay);
        }
        self.actions.push(action);
        Ok(())
    }
    fn run_timeout(&self) -> Option<(Duration, String)> {
        self.run_timeout.clone()
    }
    fn options(&self) -> Option<Vec<(&'static str, String)>> {
        self.options.clone()
    }
    fn adopt(&mut self, theirs: &[(String, String)]) -> Result<Option<Vec<Step>>, OobError> {
        let Some((tool, mut o)) = self.adopt else { return Ok(None) };
        let q = theirs.iter().find(|(k, _)| k == "-q").map(|(_, v)| v.parse::<usize>().unwrap()).unwrap();
        o.num_qps = q;
        let keys = ["tool", "-q", "-s", "-t"];
        self.options = Some(keys.iter().map(|k| (*k, theirs.iter().find(|(t, _)| t == k).unwrap().1.clone())).collect());
        Ok(Some(plan(tool, self.role, &o)[1..].to_vec()))
    }
    fn on_options_match(&mut self) {
        self.options_matched = true;
    }
    fn on_options_differ(&mut self, lines: Vec<String>) -> Result<(), OobError> {
        self.option_diff = Some(lines.clone());
        Err(OobError::PeerOutOfStep { detail: lines.join("\n") })
    }
}

/// Run both sides; each side may tweak its hooks first.
fn run_pair(
    tool: Tool,
    o: PlanOptions,
    tweak_c: impl FnOnce(&mut TestHooks) + Send + 'static,
    tweak_s: impl FnOnce(&mut TestHooks) + Send + 'static,
) -> (Result<TestHooks, OobError>, Result<TestHooks, OobError>) {
    let listener = Listener::bind(&cfg()).expect("bind");
    let port = listener.port();
    let server = thread::spawn(move || {
        let mut h = TestHooks::new(Role::Server);
        tweak_s(&mut h);
        let ch = listener.accept()?;
        execute(ch, &plan(tool, Role::Server, &o), &mut h).map(|_| h)
    });
    let client = thread::spawn(move || {
        let mut h = TestHooks::new(Role::Client);
        tweak_c(&mut h);
        let ch = Channel::connect("127.0.0.1", &OobConfig { port, ..cfg() })?;
        execute(ch, &plan(tool, Role::Client, &o), &mut h).map(|_| h)
    });
    (client.join().expect("client thread"), server.join().expect("server thread"))
}

#[test]
fn full_exchange_for_every_tool() {
    for tool in Tool::ALL {
        for o in [
            PlanOptions { negotiate: true, ..Default::default() },
            PlanOptions { negotiate: true, num_qps: 2, bidirectional: tool.is_bw(), ..Default::default() },
            PlanOptions { negotiate: true, all_sizes: Some(3), ..Default::default() },
        ] {
            let (c, s) = run_pair(tool, o, |_| {}, |_| {});
            let (c, s) = (c.expect("client"), s.expect("server"));
            assert_eq!(c.peer_version.as_ref().unwrap().text, "6.29");
            assert_eq!(c.mtu, Some(Some(5)));
            assert_eq!(s.mtu, Some(Some(3)));
            assert!(c.remote_neg.is_some() && s.remote_neg.is_some(), "{tool:?}: 6.29 ↔ 6.29 negotiates");
            assert_eq!(s.remote_neg.as_ref().unwrap().max_qp_rd_atom(), 16);
            assert_eq!(c.remote_keys.len(), s.remote_keys.len());
            for (qp, _, k) in &c.remote_keys {
                assert_eq!(*k, TestHooks::my_key(Role::Server, *qp), "{tool:?}");
            }
            for (qp, _, k) in &s.remote_keys {
                assert_eq!(*k, TestHooks::my_key(Role::Client, *qp), "{tool:?}");
            }
            assert_eq!(c.remote_reports.len(), s.remote_reports.len());
            for r in &s.remote_reports {
                assert_eq!(r.size, 65536);
                assert_eq!(r.bw_avg, 11483.38);
            }
            if tool.is_bw() && !o.bidirectional && tool != Tool::SendBw {
                assert_eq!(s.remote_reports.len(), 1, "{tool:?}: uni server gets the client's report");
                assert!(s.actions.contains(&Action::PrintPeerResult));
            }
        }
    }
}

#[test]
fn with_606_peer_no_negotiation_and_short_keys() {
    let o = PlanOptions { negotiate: true, ..Default::default() };
    let (c, s) = run_pair(
        Tool::WriteBw,
        o,
        |c| {
            c.fmt = KeyFormat::Short;
        },
        |s| {
            s.version = "6.06".into();
            s.fmt = KeyFormat::Short;
        },
    );
    let (c, s) = (c.unwrap(), s.unwrap());
    assert!(c.remote_neg.is_none() && s.remote_neg.is_none());
    assert_eq!(s.peer_version.unwrap().text, "6.29");
    assert_eq!(c.remote_keys.len(), 5);
}

#[test]
fn negotiation_312_byte_client_is_accepted_by_server() {
    let o = PlanOptions { negotiate: true, ..Default::default() };
    let (c, s) = run_pair(Tool::SendBw, o, |c| c.layout = NegotiateLayout::NoMlx5dv, |_| {});
    assert!(c.unwrap().remote_neg.is_some());
    assert!(s.unwrap().remote_neg.is_some());
}

#[test]
fn negotiation_mismatch_fails_on_both_sides() {
    let o = PlanOptions { negotiate: true, ..Default::default() };
    let (c, s) = run_pair(Tool::WriteBw, o, |c| c.iters = 300, |s| s.iters = 200);
    let (ce, se) = (c.err().unwrap(), s.err().unwrap());
    assert_eq!(ce.to_string().split(';').next().unwrap(), "iters mismatch: local=300, remote=200");
    assert_eq!(
        se.perftest_lines().unwrap(),
        " iters mismatch: local=200, remote=300\n Failed to negotiate parameters\n"
    );
    assert!(ce.to_string().contains("-n"));
}

#[test]
fn gid_format_disagreement_is_reported_immediately() {
    let start = Instant::now();
    let (c, s) = run_pair(Tool::WriteBw, PlanOptions::default(), |c| c.fmt = KeyFormat::Short, |_| {});
    // The server (GID) sees a 59-byte record at once; the client then sees the server close.
    let se = s.err().expect("server fails");
    assert!(se.to_string().contains("59-byte key record"), "{se}");
    assert!(c.is_err());
    assert!(start.elapsed() < Duration::from_secs(5));
}

#[test]
fn old_version_is_rejected() {
    let (c, s) = run_pair(Tool::ReadLat, PlanOptions::default(), |_| {}, |s| s.version = "5.60".into());
    let ce = c.err().unwrap();
    assert!(matches!(ce, OobError::IncompatibleVersion { .. }), "{ce}");
    assert!(ce.to_string().contains("5.70"));
    let _ = s;
}

/// A raw fake peer: accept, run `script` on the socket.
fn fake_server(script: impl FnOnce(TcpStream) + Send + 'static) -> u16 {
    let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = l.local_addr().unwrap().port();
    thread::spawn(move || {
        if let Ok((s, _)) = l.accept() {
            script(s);
        }
    });
    port
}

fn client(port: u16, timeout: Duration) -> Channel {
    Channel::connect("127.0.0.1", &OobConfig { port, timeout, ..Default::default() }).unwrap()
}

#[test]
fn peer_closing_mid_message_is_a_clear_error() {
    let port = fake_server(|mut s| {
        let mut b = [0u8; 16];
        let _ = s.read_exact(&mut b);
        let _ = s.write_all(b"6.0"); // 3 of 16 bytes, then close
    });
    let mut ch = client(port, Duration::from_secs(5));
    let e = ch.exchange_version("6.29").unwrap_err();
    assert!(matches!(e, OobError::PeerClosed { got: 3, expected: 16, .. }), "{e}");
    assert!(e.to_string().starts_with("peer closed the connection during the version exchange"));
}

#[test]
fn silent_peer_times_out() {
    let port = fake_server(|s| {
        thread::sleep(Duration::from_secs(3));
        drop(s);
    });
    let mut ch = client(port, Duration::from_millis(300));
    let t = Instant::now();
    let e = ch.exchange_version("6.29").unwrap_err();
    assert!(matches!(e, OobError::Timeout { .. }), "{e}");
    assert!(t.elapsed() < Duration::from_secs(2));
    assert!(!e.to_string().contains('\n'));
}

#[test]
fn garbage_peer_is_rejected() {
    let port = fake_server(|mut s| {
        let mut b = [0u8; 16];
        let _ = s.read_exact(&mut b);
        let _ = s.write_all(b"GET / HTTP/1.1\r\n");
        thread::sleep(Duration::from_millis(200));
    });
    let mut ch = client(port, Duration::from_secs(5));
    let e = ch.exchange_version("6.29").unwrap_err();
    assert!(matches!(e, OobError::Malformed { .. }), "{e}");
}

#[test]
fn malformed_key_from_peer() {
    let port = fake_server(|mut s| {
        let mut b = [0u8; 108];
        let _ = s.read_exact(&mut b);
        let mut bad = b;
        bad[10] = b'z';
        let _ = s.write_all(&bad);
        thread::sleep(Duration::from_millis(200));
    });
    let mut ch = client(port, Duration::from_secs(5));
    let e = ch.exchange_key(&TestHooks::my_key(Role::Client, 0), KeyFormat::Gid).unwrap_err();
    assert!(e.to_string().contains("QPN"), "{e}");
}

#[test]
fn connect_refused_after_retries() {
    // Bind then drop to get a port nobody listens on.
    let port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
    let cfg = OobConfig { port, connect_retry_for: Duration::from_millis(300), ..Default::default() };
    let t = Instant::now();
    let e = Channel::connect("127.0.0.1", &cfg).err().unwrap();
    assert!(matches!(e, OobError::Connect { .. }), "{e}");
    assert!(t.elapsed() < Duration::from_secs(3));
    assert!(e.to_string().contains(&format!("127.0.0.1:{port}")));
}

#[test]
fn accept_timeout() {
    let l =
        Listener::bind(&OobConfig { port: 0, accept_timeout: Some(Duration::from_millis(200)), ..Default::default() })
            .unwrap();
    let e = l.accept().err().unwrap();
    assert!(matches!(e, OobError::Accept { .. }), "{e}");
}

#[test]
fn plans_start_with_the_prelude() {
    for tool in Tool::ALL {
        let p = plan(tool, Role::Client, &PlanOptions { negotiate: true, ..Default::default() });
        assert_eq!(&p[..5], &[Step::Version, Step::PageSize, Step::CacheLine, Step::Mtu, Step::Negotiate]);
    }
}

/// `--report-per-port` (docs/perftest-wire.md, "Report exchange", items 6–9): after the five
/// usual blocks, four BE doubles in the order BW port 1, MsgRate port 1, BW port 2, MsgRate
/// port 2; each block is a separate exchange (client writes first). A C 6.06 peer is emulated
/// byte by byte.
#[test]
fn per_port_report_adds_four_blocks_in_perftests_order() {
    let mine = BwReport {
        size: 65536,
        iters: 1234,
        bw_peak: 0.0,
        bw_avg: 300.0,
        msg_rate: 0.0048,
        bw_avg_p1: 100.0,
        msg_rate_p1: 0.0016,
        bw_avg_p2: 200.0,
        msg_rate_p2: 0.0032,
    };
    let theirs = [8u64.to_be_bytes(), 99u64.to_be_bytes()];
    let (tx, rx) = std::sync::mpsc::channel();
    let port = fake_server(move |mut s| {
        let mut got = Vec::new();
        for i in 0..9 {
            let mut b = [0u8; 8];
            s.read_exact(&mut b).unwrap();
            got.push(b);
            // the peer's answer to each block: size, iters, then doubles 1.5 * (i + 1)
            let answer = theirs.get(i).copied().unwrap_or_else(|| (1.5 * (i as f64 + 1.0)).to_bits().to_be_bytes());
            s.write_all(&answer).unwrap();
        }
        tx.send(got).unwrap();
    });
    let mut ch = client(port, Duration::from_secs(5));
    let remote = ch.exchange_report(&mine, true, &PeerVersion::from_text("6.06")).unwrap();
    let got = rx.recv_timeout(Duration::from_secs(5)).unwrap();
    let d = |b: &[u8; 8]| f64::from_bits(u64::from_be_bytes(*b));
    assert_eq!(u64::from_be_bytes(got[0]), 65536);
    assert_eq!(u64::from_be_bytes(got[1]), 1234);
    assert_eq!(
        [d(&got[2]), d(&got[3]), d(&got[4]), d(&got[5]), d(&got[6]), d(&got[7]), d(&got[8])],
        [0.0, 300.0, 0.0048, 100.0, 0.0016, 200.0, 0.0032]
    );
    assert_eq!((remote.size, remote.iters), (8, 99));
    assert_eq!(
        [remote.bw_peak, remote.bw_avg, remote.msg_rate, remote.bw_avg_p1, remote.msg_rate_p1, remote.bw_avg_p2, remote.msg_rate_p2],
        [4.5, 6.0, 7.5, 9.0, 10.5, 12.0, 13.5]
    );
    // Without the flag the exchange stops after five blocks.
    assert_eq!(BwReport::fields(false).len(), 5);
}

/// `--source_ip`: the server bound to one address, the client bound to another before it
/// connects; the server's peer is the client's source address. IPv4 (127.0.0.3 -> 127.0.0.2,
/// both on lo) and IPv6 (::1, where the host has it).
#[test]
fn source_address_binds_client_and_server() {
    use std::net::IpAddr;
    let mut pairs: Vec<(IpAddr, IpAddr, &str)> =
        vec![("127.0.0.2".parse().unwrap(), "127.0.0.3".parse().unwrap(), "127.0.0.2")];
    if std::net::TcpListener::bind("[::1]:0").is_ok() {
        pairs.push(("::1".parse().unwrap(), "::1".parse().unwrap(), "::1"));
    }
    for (server_ip, client_ip, host) in pairs {
        let l = Listener::bind(&OobConfig { bind_addr: Some(server_ip), ..cfg() }).unwrap();
        let port = l.port();
        let t = thread::spawn(move || l.accept().map(|c| c.stream().peer_addr().unwrap()));
        let c = Channel::connect(host, &OobConfig { port, source_addr: Some(client_ip), ..cfg() }).unwrap();
        assert_eq!(c.stream().local_addr().unwrap().ip(), client_ip);
        assert_eq!(c.stream().peer_addr().unwrap().ip(), server_ip);
        assert_eq!(t.join().unwrap().unwrap().ip(), client_ip);
    }
    // The server bound to 127.0.0.2 only: 127.0.0.1 is refused.
    let l = Listener::bind(&OobConfig { bind_addr: Some("127.0.0.2".parse().unwrap()), ..cfg() }).unwrap();
    let no_retry = OobConfig { port: l.port(), connect_retry_for: Duration::ZERO, ..cfg() };
    assert!(matches!(Channel::connect("127.0.0.1", &no_retry), Err(OobError::Connect { .. })));
    // A source of the other family than the host's addresses: one line naming the option.
    let e = Channel::connect("127.0.0.2", &OobConfig { source_addr: Some("::1".parse().unwrap()), ..no_retry })
        .err()
        .unwrap()
        .to_string();
    assert!(e.starts_with("--source_ip ::1: 127.0.0.2 has no IPv6 address") && !e.contains('\n'), "{e}");
    // A source address on no interface: the bind error, not a connect error, and no retries.
    let t0 = Instant::now();
    let bad = OobConfig { port: l.port(), source_addr: Some("203.0.113.5".parse().unwrap()), ..cfg() };
    let e = Channel::connect("127.0.0.2", &bad).err().unwrap().to_string();
    assert!(e.contains("--source_ip 203.0.113.5: no local interface has this address"), "{e}");
    assert!(t0.elapsed() < Duration::from_secs(4), "a bind error must not be retried");
    drop(l);
}

/// Both sides with a setup bound of `setup`; the client's run takes `delay`; the server's
/// measurement-phase bound is `server_run` (None: it keeps the setup bound, the old behaviour).
fn run_pair_slow_client(
    tool: Tool,
    o: PlanOptions,
    setup: Duration,
    delay: Duration,
    server_run: Option<Duration>,
) -> (Result<TestHooks, OobError>, Result<TestHooks, OobError>) {
    let c = OobConfig { port: 0, timeout: setup, ..Default::default() };
    let listener = Listener::bind(&c).expect("bind");
    let port = listener.port();
    let server = thread::spawn(move || {
        let mut h = TestHooks::new(Role::Server);
        h.run_timeout = server_run.map(|t| (t, "1 size x 1 iterations (test)".to_string()));
        let ch = listener.accept()?;
        execute(ch, &plan(tool, Role::Server, &o), &mut h).map(|_| h)
    });
    let client = thread::spawn(move || {
        let mut h = TestHooks::new(Role::Client);
        h.run_delay = delay;
        h.run_timeout = Some((Duration::from_secs(20), "test".into()));
        let ch = Channel::connect("127.0.0.1", &OobConfig { port, timeout: setup, ..Default::default() })?;
        execute(ch, &plan(tool, Role::Client, &o), &mut h).map(|_| h)
    });
    (client.join().expect("client thread"), server.join().expect("server thread"))
}

#[test]
fn a_passive_server_waits_out_its_clients_run_under_the_run_bound() {
    // The read/atomic_lat server goes from the setup keys straight to the closing one while the
    // client measures (issue 18: a C ib_read_lat -a client outlasted the fixed setup bound).
    // Every other tool's passive or waiting side too: uni BW servers, send_bw between sizes.
    let setup = Duration::from_millis(400);
    let delay = Duration::from_millis(1000);
    thread::scope(|sc| {
        let runs: Vec<_> = Tool::ALL
            .into_iter()
            .flat_map(|tool| {
                [PlanOptions::default(), PlanOptions { all_sizes: Some(2), ..Default::default() }].map(|o| (tool, o))
            })
            .map(|(tool, o)| {
                (tool, o, sc.spawn(move || run_pair_slow_client(tool, o, setup, delay, Some(Duration::from_secs(10)))))
            })
            .collect();
        for (tool, o, h) in runs {
            let (c, s) = h.join().expect("pair");
            if let Err(e) = &s {
                panic!("{tool:?} {o:?}: server: {e}");
            }
            if let Err(e) = &c {
                panic!("{tool:?} {o:?}: client: {e}");
            }
        }
    });
}

#[test]
fn without_the_run_bound_the_read_lat_server_fails_as_issue_18_reported() {
    // The test above would fail without the switch: the setup bound alone ends the server.
    let (_, s) = run_pair_slow_client(
        Tool::ReadLat,
        PlanOptions::default(),
        Duration::from_millis(400),
        Duration::from_millis(1200),
        None,
    );
    let e = s.err().expect("the server must time out");
    assert!(matches!(e, OobError::Timeout { .. }), "{e}");
}

#[test]
fn a_peer_silent_past_the_run_bound_is_named_with_the_bound_basis() {
    let t = Instant::now();
    let (_, s) = run_pair_slow_client(
        Tool::ReadLat,
        PlanOptions::default(),
        Duration::from_millis(300),
        Duration::from_millis(2500),
        Some(Duration::from_secs(1)),
    );
    let e = s.err().expect("the server must time out");
    assert!(matches!(e, OobError::RunTimeout { secs: 1, .. }), "{e}");
    let m = e.to_string();
    assert!(m.contains("longer than this side's test needs (1 size x 1 iterations (test))"), "{m}");
    assert!(m.contains("give both sides the same -n, -s, -a"), "{m}");
    assert!(!m.contains('\n'));
    assert!(t.elapsed() < Duration::from_secs(5));
}

#[test]
fn channels_probe_a_silent_peer_with_tcp_keepalive() {
    use std::os::fd::AsRawFd;
    let port = fake_server(|s| {
        thread::sleep(Duration::from_millis(300));
        drop(s);
    });
    let ch = client(port, Duration::from_secs(5));
    let get = |level, name| {
        let mut v: libc::c_int = 0;
        let mut len = std::mem::size_of::<libc::c_int>() as libc::socklen_t;
        // SAFETY: a valid socket fd and an out-parameter of the right size.
        let r = unsafe { libc::getsockopt(ch.stream().as_raw_fd(), level, name, (&mut v as *mut libc::c_int).cast(), &mut len) };
        assert_eq!(r, 0);
        v
    };
    assert_eq!(get(libc::SOL_SOCKET, libc::SO_KEEPALIVE), 1);
    assert_eq!(get(libc::IPPROTO_TCP, libc::TCP_KEEPIDLE), 15);
    assert_eq!(get(libc::IPPROTO_TCP, libc::TCP_KEEPINTVL), 5);
    assert_eq!(get(libc::IPPROTO_TCP, libc::TCP_KEEPCNT), 4);
}

#[test]
fn a_q_mismatch_is_named_on_our_side_before_any_run_whichever_side_has_more() {
    use perftest::oob::plausible::KeyLedger;
    for tool in [Tool::WriteBw, Tool::ReadBw, Tool::SendBw, Tool::AtomicBw] {
        for (qc, qs) in [(2usize, 1usize), (1, 2), (3, 1)] {
            let oc = PlanOptions { num_qps: qc, ..Default::default() };
            let os = PlanOptions { num_qps: qs, ..Default::default() };
            let listener = Listener::bind(&cfg()).expect("bind");
            let port = listener.port();
            let t = Instant::now();
            let server = thread::spawn(move || {
                let mut h = TestHooks::new(Role::Server);
                h.ledger = Some(KeyLedger::new(qs, true, false));
                let ch = listener.accept()?;
                execute(ch, &plan(tool, Role::Server, &os), &mut h).map(|_| h)
            });
            let client = thread::spawn(move || {
                let mut h = TestHooks::new(Role::Client);
                h.ledger = Some(KeyLedger::new(qc, true, false));
                let ch = Channel::connect("127.0.0.1", &OobConfig { port, ..cfg() })?;
                execute(ch, &plan(tool, Role::Client, &oc), &mut h).map(|_| h)
            });
            let (c, s) = (client.join().unwrap(), server.join().unwrap());
            assert!(t.elapsed() < Duration::from_secs(5), "{tool:?} -q {qc}/{qs}: bounded");
            for (who, r, q) in [("client", &c, qc), ("server", &s, qs)] {
                match r {
                    Err(OobError::PeerOutOfStep { detail }) => {
                        assert!(detail.contains(&format!("-q {q}")), "{who}: {detail}");
                    }
                    Err(OobError::PeerClosed { .. }) => {}
                    Err(e) => panic!("{tool:?} -q {qc}/{qs}: {who}: unexpected {e}"),
                    // Completing means a run with the wrong QPs happened.
                    Ok(h) => panic!("{tool:?} -q {qc}/{qs}: {who} completed; actions {:?}", h.actions),
                }
            }
            // At least one side names the option (the other may only see the close).
            assert!(
                matches!(c, Err(OobError::PeerOutOfStep { .. })) || matches!(s, Err(OobError::PeerOutOfStep { .. })),
                "{tool:?} -q {qc}/{qs}"
            );
        }
    }
}

fn opts(size: &str, q: &str) -> Vec<(&'static str, String)> {
    vec![("tool", "ib_write_bw".into()), ("-q", q.into()), ("-s", size.into()), ("-t", "128".into())]
}

#[test]
fn two_rperftest_sides_name_every_differing_option_before_anything_else() {
    let t = Instant::now();
    let (c, s) = run_pair(
        Tool::WriteBw,
        PlanOptions::default(),
        |h| h.options = Some(opts("4096", "1")),
        |h| h.options = Some(opts("65536", "2")),
    );
    assert!(t.elapsed() < Duration::from_secs(3));
    let (Err(ce), Err(se)) = (c, s) else { panic!("both sides must fail") };
    assert_eq!(ce.to_string(), "-q: this side 1, peer 2\n-s: this side 4096, peer 65536");
    assert_eq!(se.to_string(), "-q: this side 2, peer 1\n-s: this side 65536, peer 4096");
}

#[test]
fn equal_options_run_on_and_a_c_like_peer_sees_the_606_wire() {
    let (c, s) = run_pair(Tool::WriteBw, PlanOptions::default(), |h| h.options = Some(opts("4096", "1")), |h| {
        h.options = Some(opts("4096", "1"))
    });
    let (c, s) = (c.expect("client"), s.expect("server"));
    assert!(c.peer_version.as_ref().unwrap().rperftest && s.peer_version.as_ref().unwrap().rperftest);
    assert!(c.option_diff.is_none() && s.option_diff.is_none());
    assert!(c.options_matched && s.options_matched, "both sides know the options were compared");
    // One side rperftest, the other without the mark (as C perftest): no option block is sent,
    // both complete exactly as before.
    for (oc, os) in [(Some(opts("4096", "1")), None), (None, Some(opts("65536", "2")))] {
        let (c, s) = run_pair(Tool::WriteBw, PlanOptions::default(), move |h| h.options = oc, move |h| h.options = os);
        let (c, s) = (c.expect("client"), s.expect("server"));
        assert_eq!(c.remote_reports.len(), s.remote_reports.len());
        assert!(c.option_diff.is_none() && s.option_diff.is_none());
        assert!(!c.options_matched && !s.options_matched, "nothing was compared with a C-like peer");
    }
}

#[test]
fn the_mark_is_after_the_nul_where_perftest_does_not_look() {
    let b = msg::encode_version_marked("6.06").unwrap();
    assert_eq!(&b, b"6.06\0rperftest1\0");
    // perftest's view of the block: the C string up to the NUL.
    let c_string = &b[..b.iter().position(|&c| c == 0).unwrap()];
    assert_eq!(c_string, b"6.06");
    let v = msg::decode_version(&b).unwrap();
    assert_eq!((v.text.as_str(), v.value, v.rperftest), ("6.06", 6.06, true));
    // C perftest's own block (fixtures/tcp/ib_write_bw.transcript.txt: 362e3036 then 12 NULs).
    let v = msg::decode_version(b"6.06\0\0\0\0\0\0\0\0\0\0\0\0").unwrap();
    assert!(!v.rperftest);
    // A version too long for the mark is sent without it.
    assert_eq!(&msg::encode_version_marked("6.06.1-rc22").unwrap()[..12], b"6.06.1-rc22\0");
}

#[test]
fn option_blocks_round_trip_and_refuse_garbage() {
    let mine = opts("4096", "1");
    let b = msg::encode_options(&mine).unwrap();
    assert_eq!(b.len(), msg::OPTIONS_LEN);
    let back = msg::decode_options(&b).unwrap();
    assert_eq!(back.len(), 4);
    assert!(msg::option_differences(&mine, &back).is_empty());
    // Options only the peer knows are not compared.
    let mut more = back.clone();
    more.push(("--future".into(), "x".into()));
    assert!(msg::option_differences(&mine, &more).is_empty());
    assert!(msg::decode_options(&[0xff; msg::OPTIONS_LEN]).is_err());
    assert!(msg::decode_options(b"no tab here\n\0").is_err());
    assert!(msg::decode_options(b"-s\t1\n-s\t2\n\0").is_err());
    assert!(msg::encode_options(&[("-s", "a\tb".into())]).is_err());
}

#[test]
fn an_adopting_server_answers_with_the_clients_options_and_runs_its_plan() {
    // The client runs 2 QPs; the server was planned for 1 and adopts: no difference is seen
    // on either side and every key of both QPs is exchanged.
    let listener = Listener::bind(&cfg()).expect("bind");
    let port = listener.port();
    let server = thread::spawn(move || {
        let mut h = TestHooks::new(Role::Server);
        h.options = Some(opts("65536", "1"));
        h.adopt = Some((Tool::WriteBw, PlanOptions::default()));
        let ch = listener.accept()?;
        execute(ch, &plan(Tool::WriteBw, Role::Server, &PlanOptions::default()), &mut h).map(|_| h)
    });
    let client = thread::spawn(move || {
        let mut h = TestHooks::new(Role::Client);
        h.options = Some(opts("4096", "2"));
        let ch = Channel::connect("127.0.0.1", &OobConfig { port, ..cfg() })?;
        let o = PlanOptions { num_qps: 2, ..Default::default() };
        execute(ch, &plan(Tool::WriteBw, Role::Client, &o), &mut h).map(|_| h)
    });
    let (c, s) = (client.join().unwrap().expect("client"), server.join().unwrap().expect("server"));
    assert!(c.option_diff.is_none() && s.option_diff.is_none());
    assert_eq!(s.options, Some(opts("4096", "2")));
    let qp_info = |h: &TestHooks| h.remote_keys.iter().filter(|(_, p, _)| *p == KeyPurpose::QpInfo).count();
    assert_eq!((qp_info(&c), qp_info(&s)), (2, 2));
    assert_eq!(s.remote_reports.len(), 1);
}
