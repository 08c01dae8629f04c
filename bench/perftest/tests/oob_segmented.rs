//! Our TCP server's side of the exchange against perftest 6.29's client (issue #39), driven by
//! that client's captured bytes (tests/fixtures/perftest-6.29/tcp/, all eight tools and the
//! captured variants) with every client block cut into pieces: at every byte offset, one byte
//! per write, and at random offsets with random pauses (seeded, so a failure replays).
//!
//! The scripted client behaves as the C client does on the wire: it writes one block, then
//! takes the server's answer with a single read() of the block's size (perftest fails on a
//! short read, so our server must write each block whole) and, at the end, closes without
//! reading the `done` a 6.29 client never reads. Every run must give the server the same
//! decoded values as the capture holds, send exactly the captured server bytes (our version
//! block carries the rperftest mark after its NUL), end Ok, and never hang (every wait is bounded).
//!
//! The rdma_cm variant (`-R`, `-z`) has no TCP part to replay: perftest runs the whole exchange
//! over its rdma_cm control QP, where each block is one message (the captures hold no bytes of it).

use std::io::{Read, Write};
use std::net::TcpStream;
use std::sync::mpsc;
use std::thread;
use std::time::Duration;

use perftest::oob::msg::{self, BwReport, KeyFormat, KeyMsg, Negotiate, NegotiateLayout, PeerVersion, SysData};
use perftest::oob::plan::{plan, Action, KeyPurpose, PlanOptions, Role, Step, Tool};
use perftest::oob::plausible::{check_report, KeyLedger};
use perftest::oob::session::{execute, Hooks};
use perftest::oob::transport::{Listener, OobConfig, NEGOTIATE_TAIL_GRACE};
use perftest::oob::OobError;

/// The eight tools' default runs: every byte offset is cut in these.
const TOOLS: [&str; 8] = [
    "ib_write_bw",
    "ib_read_bw",
    "ib_send_bw",
    "ib_atomic_bw",
    "ib_write_lat",
    "ib_read_lat",
    "ib_send_lat",
    "ib_atomic_lat",
];
/// The other captures with a 6.29 on either side (our server answers as the captured server's
/// version, 6.06 in `cli629-srv606`): random cuts.
const VARIANTS: [&str; 8] = [
    "ib_send_bw_ud",
    "ib_read_bw_o4",
    "ib_write_bw_q2",
    "ib_write_bw_n50",
    "ib_write_bw.run2",
    "ib_write_bw.run3",
    "ib_write_bw.cli629-srv606",
    "ib_write_bw.cli606-srv629",
];

/// Bound of every wait of either side: far above what a run takes, far below a hang.
const WAIT: Duration = Duration::from_secs(10);

// ------------------------------------------------------------------------------------------------
// The captures
// ------------------------------------------------------------------------------------------------

/// One capture: the tool, its plan options, and its blocks in wire order (`true`: client's).
struct Capture {
    name: &'static str,
    tool: Tool,
    opts: PlanOptions,
    blocks: Vec<(bool, Vec<u8>)>,
}

impl Capture {
    fn load(name: &'static str) -> Capture {
        let path = std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR"))
            .join(format!("tests/fixtures/perftest-6.29/tcp/{name}.transcript.txt"));
        let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        let mut blocks = Vec::new();
        let mut dir = None;
        for line in text.lines() {
            if line.starts_with('[') {
                dir = Some(line.contains(" C->S "));
            } else if let Some(h) = line.trim_start().strip_prefix("hex : ") {
                let h = h.trim();
                let bytes: Vec<u8> = (0..h.len() / 2).map(|i| u8::from_str_radix(&h[2 * i..2 * i + 2], 16).expect("hex")).collect();
                blocks.push((dir.take().expect("a hex line follows its header"), bytes));
            }
        }
        let base = name.split(['.', '_']).take(3).collect::<Vec<_>>().join("_");
        let tool = Tool::from_name(&base).expect("tool");
        let versions: Vec<&[u8]> = blocks.iter().filter(|b| b.1.len() == msg::VERSION_LEN).map(|b| &b.1[..]).take(2).collect();
        let both_629 = versions.iter().all(|v| v.starts_with(b"6.29\0"));
        let opts = PlanOptions {
            num_qps: if name.ends_with("_q2") { 2 } else { 1 },
            // The step is always planned; it runs only when both versions call for it.
            negotiate: true,
            ..PlanOptions::default()
        };
        assert!(!blocks.is_empty(), "{name}: no blocks");
        assert_eq!(
            both_629,
            blocks.iter().any(|b| b.1.len() == msg::NEGOTIATE_LEN),
            "{name}: NEGOTIATE runs exactly between two 6.29s"
        );
        Capture { name, tool, opts, blocks }
    }

    fn server_plan(&self) -> Vec<Step> {
        plan(self.tool, Role::Server, &self.opts)
    }

    fn client_blocks(&self) -> impl Iterator<Item = &[u8]> {
        self.blocks.iter().filter(|b| b.0).map(|b| &b.1[..])
    }

    fn server_blocks(&self) -> impl Iterator<Item = &[u8]> {
        self.blocks.iter().filter(|b| !b.0).map(|b| &b.1[..])
    }

    /// The captured server's version text (the version our server advertises in its place).
    fn server_version(&self) -> String {
        msg::decode_version(self.server_blocks().next().expect("version")).expect("server version").text
    }

    /// What our server must receive, decoded straight from the client's blocks.
    fn expected(&self) -> Received {
        let plan = self.server_plan();
        let mut keys = plan.iter().filter_map(|s| match *s {
            Step::Key { qp, purpose } => Some((qp, purpose)),
            _ => None,
        });
        let mut r = Received::default();
        let mut report = BwReport::default();
        let mut fields = BwReport::fields(false).iter();
        let mut sysdata = Vec::new();
        for b in self.client_blocks() {
            match b.len() {
                msg::VERSION_LEN => r.version = Some(msg::decode_version(b).expect("version").text),
                msg::SYSDATA_LEN => sysdata.push(b),
                msg::MTU_LEN => r.mtu = Some(msg::decode_mtu(b).expect("mtu")),
                msg::NEGOTIATE_LEN => r.negotiate = Some(Negotiate::decode(b).expect("negotiate")),
                8 => report.decode_field(*fields.next().expect("a report field"), b).expect("report"),
                5 => assert_eq!(b, msg::DONE, "{}: a 6.06 client's done", self.name),
                108 => {
                    let (qp, purpose) = keys.next().expect("the plan has this key exchange");
                    r.keys.push((qp, purpose, KeyMsg::decode(b, KeyFormat::Gid).expect("key")));
                }
                n => panic!("{}: a client block of {n} bytes", self.name),
            }
        }
        if let [p, c] = sysdata[..] {
            r.sysdata = Some(SysData {
                page_size: msg::decode_page_size(p).expect("page"),
                cache_line: msg::decode_cache_line(c).expect("cache"),
            });
        }
        if fields.len() < BwReport::fields(false).len() {
            r.reports.push(report);
        }
        r.actions = plan.iter().filter_map(|s| if let Step::Do(a) = s { Some(*a) } else { None }).collect();
        assert!(keys.next().is_none(), "{}: the plan has more key exchanges than the capture", self.name);
        r
    }

    /// Our server's script: the captured server's own values, so that its bytes can be compared.
    fn server_script(&self) -> ServerScript {
        let plan = self.server_plan();
        let key_steps = plan.iter().filter_map(|s| match *s {
            Step::Key { qp, purpose } => Some((qp, purpose)),
            _ => None,
        });
        let mut keys = vec![KeyMsg::default(); self.opts.num_qps];
        for ((qp, purpose), b) in key_steps.zip(self.server_blocks().filter(|b| b.len() == 108)) {
            if purpose == KeyPurpose::QpInfo {
                keys[qp] = KeyMsg::decode(b, KeyFormat::Gid).expect("server key");
            }
        }
        let negotiate = self.server_blocks().find(|b| b.len() == msg::NEGOTIATE_LEN).map(|b| Negotiate::decode(b).expect("neg"));
        let mut report = BwReport::default();
        for (f, b) in BwReport::fields(false).iter().zip(self.server_blocks().filter(|b| b.len() == 8)) {
            report.decode_field(*f, b).expect("server report");
        }
        ServerScript { version: self.server_version(), keys, negotiate, report, num_qps: self.opts.num_qps }
    }

    /// The bytes our server must write: the captured server's, with our marked version block
    /// and the `done` we write (a 6.06 server's is in the capture already).
    fn expected_server_bytes(&self) -> Vec<Vec<u8>> {
        let mut v: Vec<Vec<u8>> = self.server_blocks().map(<[u8]>::to_vec).collect();
        v[0] = msg::encode_version_marked(&self.server_version()).expect("version").to_vec();
        if self.server_plan().contains(&Step::Done) && v.last().map(Vec::as_slice) != Some(&msg::DONE[..]) {
            v.push(msg::DONE.to_vec());
        }
        v
    }
}

// ------------------------------------------------------------------------------------------------
// Our server: hooks as the tools' (version, marks, ledger, report check), values from the capture
// ------------------------------------------------------------------------------------------------

#[derive(Clone)]
struct ServerScript {
    version: String,
    keys: Vec<KeyMsg>,
    negotiate: Option<Negotiate>,
    report: BwReport,
    num_qps: usize,
}

/// What the server's hooks were handed, in order.
#[derive(Debug, Default, PartialEq)]
struct Received {
    version: Option<String>,
    sysdata: Option<SysData>,
    mtu: Option<Option<u8>>,
    negotiate: Option<Negotiate>,
    keys: Vec<(usize, KeyPurpose, KeyMsg)>,
    reports: Vec<BwReport>,
    actions: Vec<Action>,
}

struct ServerHooks {
    script: ServerScript,
    ledger: KeyLedger,
    got: Received,
}

impl Hooks for ServerHooks {
    type Error = OobError;
    fn own_version(&self) -> &str {
        &self.script.version
    }
    fn options(&self) -> Option<Vec<(&'static str, String)>> {
        // As the tools: advertise rperftest (a C client never answers it).
        Some(vec![("-q", self.script.num_qps.to_string())])
    }
    fn sysdata(&self) -> SysData {
        SysData { page_size: 4096, cache_line: 64 }
    }
    fn mtu_enum(&self) -> u8 {
        3
    }
    fn negotiate(&mut self) -> (Negotiate, NegotiateLayout) {
        let n = self.script.negotiate.clone().expect("NEGOTIATE runs only where the capture has it");
        (n, NegotiateLayout::WithMlx5dv)
    }
    fn key_format(&self) -> KeyFormat {
        KeyFormat::Gid
    }
    fn key(&mut self, qp: usize) -> KeyMsg {
        self.script.keys[qp]
    }
    fn report(&mut self) -> BwReport {
        self.script.report
    }
    fn on_version(&mut self, peer: &PeerVersion) -> Result<(), OobError> {
        self.got.version = Some(peer.text.clone());
        Ok(())
    }
    fn on_sysdata(&mut self, remote: SysData) -> Result<(), OobError> {
        self.got.sysdata = Some(remote);
        Ok(())
    }
    fn on_mtu(&mut self, remote: Option<u8>) -> Result<(), OobError> {
        self.got.mtu = Some(remote);
        Ok(())
    }
    fn on_negotiate(&mut self, remote: &Negotiate) -> Result<(), OobError> {
        self.got.negotiate = Some(remote.clone());
        Ok(())
    }
    fn on_key(&mut self, qp: usize, purpose: KeyPurpose, remote: KeyMsg) -> Result<(), OobError> {
        self.ledger.check(qp, purpose, &remote)?;
        self.got.keys.push((qp, purpose, remote));
        Ok(())
    }
    fn on_report(&mut self, remote: BwReport) -> Result<(), OobError> {
        check_report(&remote, None, self.script.num_qps as u32)?;
        self.got.reports.push(remote);
        Ok(())
    }
    fn action(&mut self, action: Action) -> Result<(), OobError> {
        self.got.actions.push(action);
        Ok(())
    }
}

// ------------------------------------------------------------------------------------------------
// The scripted client
// ------------------------------------------------------------------------------------------------

/// Where one client block is cut: (offset of the next piece, pause before writing it).
type Cuts = Vec<(usize, Duration)>;

/// How the client ends: as perftest (close without reading what is left), reading to EOF, or
/// reading the server's last block (and then to EOF) only once the server has finished and
/// closed its socket.
#[derive(Clone, Copy, PartialEq)]
enum End {
    CloseLikeC,
    ReadToEof,
    ReadAfterServerExit,
}

/// Write `block` in the pieces `cuts` makes (each its own segment: TCP_NODELAY).
fn write_cut(s: &mut TcpStream, block: &[u8], cuts: &Cuts) -> std::io::Result<()> {
    let mut from = 0;
    for &(at, pause) in cuts.iter().filter(|c| c.0 > 0 && c.0 < block.len()) {
        s.write_all(&block[from..at])?;
        from = at;
        if pause.is_zero() {
            thread::yield_now();
        } else {
            thread::sleep(pause);
        }
    }
    s.write_all(&block[from..])
}

/// Play the capture's client over `s`, connected to our server: returns the server's blocks as
/// the client read them (each with one read(), as perftest does) and what followed them (read
/// to EOF unless `End::CloseLikeC`), or the first failure in words. `wait_for_server` returns
/// once the server has finished (`End::ReadAfterServerExit`).
fn play_client(
    cap: &Capture,
    mut s: TcpStream,
    cut: &mut dyn FnMut(usize, &[u8]) -> Cuts,
    end: End,
    wait_for_server: &mut dyn FnMut(),
) -> Result<(Vec<Vec<u8>>, Vec<u8>), String> {
    let last_server_block = cap.blocks.iter().rposition(|b| !b.0).expect("server blocks");
    s.set_nodelay(true).map_err(|e| e.to_string())?;
    s.set_read_timeout(Some(WAIT)).map_err(|e| e.to_string())?;
    let mut got = Vec::new();
    let mut client_i = 0;
    for (i, (from_client, block)) in cap.blocks.iter().enumerate() {
        if i == last_server_block && end == End::ReadAfterServerExit {
            wait_for_server();
        }
        if *from_client {
            let cuts = cut(client_i, block);
            let written = write_cut(&mut s, block, &cuts);
            // A 6.06 client's closing `done` is never read: the server may be gone already.
            if block[..] != msg::DONE[..] {
                written.map_err(|e| format!("client block #{client_i}: write: {e}"))?;
            }
            client_i += 1;
        } else {
            // perftest reads each block with one read() of its size and fails on less.
            let mut buf = vec![0u8; block.len()];
            let n = s.read(&mut buf).map_err(|e| format!("server block #{}: read: {e}", got.len()))?;
            if n != block.len() {
                return Err(format!("server block #{}: one read() gave {n} of {} bytes", got.len(), block.len()));
            }
            got.push(buf);
        }
    }
    let mut tail = Vec::new();
    if end != End::CloseLikeC {
        s.read_to_end(&mut tail).map_err(|e| format!("after the last block: {e}"))?;
    }
    Ok((got, tail))
}

/// One run: our server on a fresh port, the scripted client cut by `cut`. Checks everything
/// the module doc promises and returns the server's received values.
fn run(cap: &Capture, cut: &mut dyn FnMut(usize, &[u8]) -> Cuts, end: End, what: &str) -> Received {
    let listener = Listener::bind(&OobConfig { port: 0, timeout: WAIT, ..Default::default() }).expect("bind");
    // Connected before the server accepts (the backlog holds it), so accept() never sleeps.
    let stream = TcpStream::connect(("127.0.0.1", listener.port())).expect("connect");
    let (tx, rx) = mpsc::channel();
    let script = cap.server_script();
    let steps = cap.server_plan();
    let num_qps = cap.opts.num_qps;
    thread::spawn(move || {
        let mut h = ServerHooks { script, ledger: KeyLedger::new(num_qps, true, false), got: Received::default() };
        let r = listener.accept().and_then(|ch| execute(ch, &steps, &mut h));
        let _ = tx.send(r.map(|()| h.got));
    });
    let mut server = None;
    let mut wait_for_server = || server = Some(rx.recv_timeout(WAIT + Duration::from_secs(5)));
    let client = play_client(cap, stream, cut, end, &mut wait_for_server);
    let server = server.unwrap_or_else(|| rx.recv_timeout(WAIT + Duration::from_secs(5)));
    let at = format!("{} ({what})", cap.name);
    let got = match server {
        Ok(Ok(got)) => got,
        Ok(Err(e)) => panic!("{at}: our server failed: {e} (client: {client:?})"),
        Err(_) => panic!("{at}: our server did not finish within {WAIT:?} after its client (client: {client:?})"),
    };
    let (blocks, tail) = client.unwrap_or_else(|e| panic!("{at}: the client failed: {e}"));
    let mut want = cap.expected_server_bytes();
    if blocks.len() < want.len() {
        let last = want.pop().expect("a tail block");
        if end != End::CloseLikeC {
            assert_eq!(tail, last, "{at}: what the server wrote after its last block");
        }
    } else {
        assert!(tail.is_empty(), "{at}: bytes after the last block: {tail:?}");
    }
    assert_eq!(blocks, want, "{at}: the server's blocks");
    got
}

// ------------------------------------------------------------------------------------------------
// Cutting schedules
// ------------------------------------------------------------------------------------------------

/// A small deterministic generator (xorshift64*), so every random schedule replays.
struct XorShift(u64);

impl XorShift {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }
    fn below(&mut self, n: u64) -> u64 {
        self.next() % n.max(1)
    }
}

fn whole(_: usize, _: &[u8]) -> Cuts {
    Vec::new()
}

/// Every block cut once at `at` (blocks not longer than `at` go whole).
fn cut_at(at: usize) -> impl FnMut(usize, &[u8]) -> Cuts {
    move |_, _| vec![(at, Duration::ZERO)]
}

/// One byte per write.
fn bytewise(_: usize, b: &[u8]) -> Cuts {
    (1..b.len()).map(|i| (i, Duration::ZERO)).collect()
}

/// Up to three cuts per block at random offsets, each followed by a pause of up to `max_pause`.
fn random_cuts(rng: &mut XorShift, max_pause: Duration) -> impl FnMut(usize, &[u8]) -> Cuts + '_ {
    move |_, b| {
        let n = rng.below(4);
        let mut cuts: Cuts = (0..n)
            .map(|_| {
                let at = 1 + rng.below(b.len() as u64 - 1) as usize;
                (at, Duration::from_micros(rng.below(max_pause.as_micros() as u64 + 1)))
            })
            .collect();
        cuts.sort_by_key(|c| c.0);
        cuts.dedup_by_key(|c| c.0);
        cuts
    }
}

// ------------------------------------------------------------------------------------------------
// The tests
// ------------------------------------------------------------------------------------------------

/// Whole blocks: the reference every cut run must equal, and the capture's own values.
#[test]
fn whole_blocks_give_the_captured_values_and_bytes() {
    for name in TOOLS.iter().chain(&VARIANTS) {
        let cap = Capture::load(name);
        // A 6.06 client ends with a `done` nobody reads, so our server's close resets the
        // connection (harmless: that client reads nothing after it): no read to EOF there.
        if cap.client_blocks().last() != Some(&msg::DONE[..]) {
            let got = run(&cap, &mut whole, End::ReadToEof, "whole blocks, read to EOF");
            assert_eq!(got, cap.expected(), "{name}: decoded values");
            // The server's close must not cost the client its last block.
            let got = run(&cap, &mut whole, End::ReadAfterServerExit, "last block read after the server closed");
            assert_eq!(got, cap.expected(), "{name}: decoded values");
        }
        let got = run(&cap, &mut whole, End::CloseLikeC, "whole blocks, closed like perftest");
        assert_eq!(got, cap.expected(), "{name}: decoded values");
    }
}

/// Every block of every tool's capture cut in two at every byte offset (run k cuts every block
/// longer than k at k), and one byte per write.
fn every_offset(name: &'static str) {
    let cap = Capture::load(name);
    let want = cap.expected();
    let longest = cap.client_blocks().map(<[u8]>::len).max().expect("blocks");
    for at in 1..longest {
        let got = run(&cap, &mut cut_at(at), End::CloseLikeC, &format!("every block cut at {at}"));
        assert_eq!(got, want, "{name}: cut at {at}");
    }
    let got = run(&cap, &mut bytewise, End::CloseLikeC, "one byte per write");
    assert_eq!(got, want, "{name}: one byte per write");
}

#[test]
fn write_bw_survives_a_cut_at_every_offset() {
    every_offset("ib_write_bw");
}
#[test]
fn read_bw_survives_a_cut_at_every_offset() {
    every_offset("ib_read_bw");
}
#[test]
fn send_bw_survives_a_cut_at_every_offset() {
    every_offset("ib_send_bw");
}
#[test]
fn atomic_bw_survives_a_cut_at_every_offset() {
    every_offset("ib_atomic_bw");
}
#[test]
fn write_lat_survives_a_cut_at_every_offset() {
    every_offset("ib_write_lat");
}
#[test]
fn read_lat_survives_a_cut_at_every_offset() {
    every_offset("ib_read_lat");
}
#[test]
fn send_lat_survives_a_cut_at_every_offset() {
    every_offset("ib_send_lat");
}
#[test]
fn atomic_lat_survives_a_cut_at_every_offset() {
    every_offset("ib_atomic_lat");
}

/// Random cuts with random pauses of up to 2 ms, several seeded runs of every capture.
#[test]
fn random_cuts_and_pauses_in_every_capture() {
    let mut rng = XorShift(0x0003_9629);
    for name in TOOLS.iter().chain(&VARIANTS) {
        let cap = Capture::load(name);
        let want = cap.expected();
        for round in 0..3 {
            let seed = rng.next();
            let mut r = XorShift(seed | 1);
            let got = run(&cap, &mut random_cuts(&mut r, Duration::from_millis(2)), End::CloseLikeC, &format!("seed {seed:#x}"));
            assert_eq!(got, want, "{name}: round {round}, seed {seed:#x}");
        }
    }
}

/// A client that stalls inside a block far longer than a scheduler hiccup: inside the last 8
/// bytes of the NEGOTIATE block (where a 312-byte block would have ended: the server must not
/// take what it has for a short block), and inside a key record.
#[test]
fn a_long_pause_inside_a_block_is_waited_out() {
    let cap = Capture::load("ib_read_bw");
    let pause = NEGOTIATE_TAIL_GRACE + Duration::from_millis(200);
    for at in [msg::NEGOTIATE_LEN_NO_MLX5DV + 1, msg::NEGOTIATE_LEN - 1] {
        let mut cut = |_: usize, b: &[u8]| -> Cuts {
            if b.len() == msg::NEGOTIATE_LEN {
                vec![(at, pause)]
            } else {
                Vec::new()
            }
        };
        let got = run(&cap, &mut cut, End::CloseLikeC, &format!("NEGOTIATE paused after {at} bytes"));
        assert_eq!(got, cap.expected());
    }
    let mut first_key = true;
    let mut cut = |_: usize, b: &[u8]| -> Cuts {
        if b.len() == 108 && std::mem::take(&mut first_key) {
            vec![(59, pause)]
        } else {
            Vec::new()
        }
    };
    let got = run(&cap, &mut cut, End::CloseLikeC, "first key record paused after 59 bytes");
    assert_eq!(got, cap.expected());
}
