//! `rperftest selftest [-d DEV] [-i PORT] [-x GID_INDEX] [-t SECONDS]`: in one process on one
//! device, run every verb the provider implements between two QPs, check every payload byte,
//! and report each check. The first thing to run on a new device type.
//!
//! The checks talk to the device only through `uverbs` objects, so they exercise exactly the
//! provider the tools use. Every wait is bounded by the timeout (`-t`, default 10 s per
//! completion): a dead device or a lost packet fails one check, it never hangs the run.

use std::sync::Arc;
use std::time::{Duration, Instant};

use clap::{value_parser, Arg, ArgAction, Command};
use providers::ProviderSettings;
use uverbs::discovery::{self, gid, SysfsRoot};
use uverbs::objects::{
    AccessFlags, Ah, CompChannel, Context, Cq, Mr, Pd, Qp, QpInit, RtrParams, RtsParams, Srq,
};
use uverbs::provider::{AhAttr, Provider, QpCaps, QpState, QpType};
use uverbs::wr::{
    wc_flags, RecvWr, RemoteAddr, SendFlags, SendWr, Sge, UdDest, WcOpcode, WcStatus,
    WorkCompletion, WrOpcode,
};

struct Opts {
    dev: Option<String>,
    port: u8,
    gid_index: Option<u32>,
    timeout: Duration,
    verbose: bool,
}

fn cli() -> Command {
    Command::new("rperftest selftest")
        .about("Runs every verb between two QPs on one device and checks every byte")
        .arg(Arg::new("dev").short('d').long("ib-dev").value_name("DEV").help("device (default: the first one)"))
        .arg(
            Arg::new("port")
                .short('i')
                .long("ib-port")
                .value_name("PORT")
                .value_parser(value_parser!(u8).range(1..))
                .default_value("1")
                .help("port"),
        )
        .arg(
            Arg::new("gid_index")
                .short('x')
                .long("gid-index")
                .value_name("N")
                .value_parser(value_parser!(u32))
                .help("GID index (default: chosen like perftest, and explained)"),
        )
        .arg(
            Arg::new("timeout")
                .short('t')
                .long("timeout")
                .value_name("SECONDS")
                .value_parser(value_parser!(u64).range(1..))
                .default_value("10")
                .help("bound on every wait for a completion"),
        )
        .arg(Arg::new("verbose").short('v').long("verbose").action(ArgAction::SetTrue).help("print what each check did"))
}

fn parse(args: &[String]) -> Result<Opts, u8> {
    let m = cli_args::parse_std(cli(), "rperftest selftest", args)?;
    Ok(Opts {
        dev: m.get_one::<String>("dev").cloned(),
        port: *m.get_one::<u8>("port").unwrap_or(&1),
        gid_index: m.get_one::<u32>("gid_index").copied(),
        timeout: Duration::from_secs(*m.get_one::<u64>("timeout").unwrap_or(&10)),
        verbose: m.get_flag("verbose"),
    })
}

/// Entry point: returns the exit code (0 all checks passed, 1 a check failed, 2 bad usage or
/// setup failure).
/// The device opens as `settings` choose.
pub fn run_selftest(args: &[String], settings: &ProviderSettings) -> u8 {
    let opts = match parse(args) {
        Ok(o) => o,
        Err(code) => return code,
    };
    let dev = match discovery::find_device(opts.dev.as_deref()) {
        Ok(d) => d,
        Err(e) => {
            eprintln!("rperftest selftest: {e}");
            return 2;
        }
    };
    let port = opts.port;
    if u32::from(port) > dev.port_count.max(1) {
        eprintln!("rperftest selftest: {} has {} port(s); no port {port}", dev.ibdev, dev.port_count);
        return 2;
    }
    let chosen = match opts.gid_index {
        Some(i) => Ok((i, format!("GID index {i} (from -x)"))),
        None => gid::read_gid_table(&SysfsRoot::system(), &dev.ibdev, u32::from(port), uverbs::attr::LINK_LAYER_ETHERNET)
            .map_err(|e| e.to_string())
            .and_then(|t| {
                gid::select_gid(&t, false, gid::GidRule::Scored)
                    .map(|c| (c.index, c.reason))
                    .ok_or_else(|| format!("{} port {port} has no valid GID; give one with -x", dev.ibdev))
            }),
    };
    let (gid_index, why) = match chosen {
        Ok(c) => c,
        Err(e) => {
            eprintln!("rperftest selftest: {e}");
            return 2;
        }
    };
    let run = SelfTest { opts, gid_index, why };
    match providers::open(&dev.desc(), settings, run) {
        Ok(code) => code,
        Err(e) => {
            eprintln!("rperftest selftest: {e}");
            2
        }
    }
}

struct SelfTest {
    opts: Opts,
    gid_index: u32,
    why: String,
}

impl providers::ContextUser for SelfTest {
    type Output = u8;
    fn run<P: Provider>(self, ctx: Arc<Context<P>>) -> u8 {
        let mut s = match Session::<P>::setup(self, ctx) {
            Ok(s) => s,
            Err(e) => {
                eprintln!("rperftest selftest: setup failed: {e}");
                return 2;
            }
        };
        s.run_all();
        println!("selftest: {} passed, {} failed", s.passed, s.failed);
        if s.failed == 0 {
            0
        } else {
            1
        }
    }
}

// ---- the rig --------------------------------------------------------------------------------

/// Layout of the one MR all checks use: a source and a destination region per side.
const MIB: usize = 1 << 20;
const SRC: usize = 0;
const DST: usize = 2 * MIB;
const SCRATCH: usize = 4 * MIB;
const MR_LEN: usize = 6 * MIB;
const DEPTH: u32 = 16;

type Check = Result<String, String>;

struct Pair<P: Provider> {
    a: Qp<P>,
    b: Qp<P>,
    a_cq: Cq<P>,
    b_cq: Cq<P>,
}

struct Session<P: Provider> {
    t: SelfTest,
    ctx: Arc<Context<P>>,
    pd: Arc<Pd<P>>,
    mr: Mr<P>,
    gid: [u8; 16],
    mtu: u8,
    max_rd_atomic: u8,
    passed: u32,
    failed: u32,
    seed: u64,
}

impl<P: Provider> Session<P> {
    /// Query the port and device, find the GID, register the one MR every check uses.
    fn setup(t: SelfTest, ctx: Arc<Context<P>>) -> Result<Self, String> {
        let port = t.opts.port;
        let pa = ctx.query_port(port).map_err(|e| e.to_string())?;
        if pa.legacy_resp.state != 4 {
            return Err(format!("port {port} is not ACTIVE (state {})", pa.legacy_resp.state));
        }
        let mtu = pa.legacy_resp.active_mtu;
        let da = ctx.query_device().map_err(|e| e.to_string())?;
        let max_rd_atomic = da.max_qp_rd_atom.clamp(1, 16) as u8;
        let gid = match ctx.query_gid_entry(u32::from(port), t.gid_index) {
            Ok(g) => g.gid,
            Err(_) => {
                // Kernels before 5.10: sysfs has the same table.
                let table = gid::read_gid_table(&SysfsRoot::system(), &ctx.device().ibdev, u32::from(port), uverbs::attr::LINK_LAYER_ETHERNET)
                    .map_err(|e| e.to_string())?;
                table.iter().find(|g| g.index == t.gid_index).map(|g| g.gid).ok_or(format!("GID index {} is empty", t.gid_index))?
            }
        };
        let pd = Pd::new(&ctx).map_err(|e| e.to_string())?;
        let mr = Mr::alloc(&pd, MR_LEN, Self::access(), false).map_err(|e| e.to_string())?;
        println!(
            "rperftest selftest: {} ({} provider), port {port}, {}, path MTU {} B, transport {:?}",
            ctx.device().ibdev,
            P::NAME,
            t.why,
            128u32 << mtu,
            ctx.transport()
        );
        Ok(Session { t, ctx, pd, mr, gid, mtu, max_rd_atomic, passed: 0, failed: 0, seed: 0x9e37_79b9_7f4a_7c15 })
    }

    fn pd(&self) -> &Arc<Pd<P>> {
        &self.pd
    }
    fn mr(&self) -> &Mr<P> {
        &self.mr
    }

    fn report(&mut self, name: &str, r: Check) {
        match r {
            Ok(detail) => {
                self.passed += 1;
                if self.t.opts.verbose && !detail.is_empty() {
                    println!("  ok    {name}: {detail}");
                } else {
                    println!("  ok    {name}");
                }
            }
            Err(why) => {
                self.failed += 1;
                println!("  FAIL  {name}: {why}");
            }
        }
    }

    fn run_all(&mut self) {
        macro_rules! check {
            ($name:expr, $body:expr) => {{
                let r: Check = $body;
                self.report(AsRef::<str>::as_ref(&$name), r);
            }};
        }
        for qt in [QpType::Rc, QpType::Uc] {
            let tn = qt.name();
            let mut pair = match self.pair(qt, 64, None) {
                Ok(p) => p,
                Err(e) => {
                    self.report(&format!("{tn}: create and connect two QPs"), Err(e));
                    continue;
                }
            };
            self.report(&format!("{tn}: create and connect two QPs"), Ok(String::new()));
            for size in [1usize, 4096, MIB] {
                check!(format!("{tn} RDMA_WRITE {}", human(size)), self.write(&mut pair, size, None));
                check!(format!("{tn} SEND {}", human(size)), self.send(&mut pair, size, None, 1));
            }
            check!(format!("{tn} RDMA_WRITE_WITH_IMM"), self.write(&mut pair, 4096, Some(0x1234_5678)));
            check!(format!("{tn} SEND_WITH_IMM"), self.send(&mut pair, 256, Some(0xdead_beef), 1));
            check!(format!("{tn} SEND with 3-entry gather and scatter lists"), self.send(&mut pair, 3000, None, 3));
            check!(format!("{tn} SEND inline at the QP maximum"), self.inline(&mut pair, WrOpcode::Send));
            check!(format!("{tn} RDMA_WRITE inline at the QP maximum"), self.inline(&mut pair, WrOpcode::RdmaWrite));
            check!(format!("{tn} {} unsignaled+signaled WRITEs (3x the queue depth)", 3 * DEPTH + 7), self.wraparound(&mut pair));
            check!(format!("{tn} {} SENDs through a {DEPTH}-deep receive queue", 3 * DEPTH + 5), self.recv_wraparound(&mut pair));
            if qt == QpType::Rc {
                for size in [1usize, 4096, MIB] {
                    check!(format!("RC RDMA_READ {}", human(size)), self.read(&mut pair, size));
                }
                check!("RC ATOMIC_CMP_AND_SWP (match and mismatch)", self.cas(&mut pair));
                check!("RC ATOMIC_FETCH_AND_ADD", self.faa(&mut pair));
            }
        }
        check!("RC receives from an SRQ", self.srq());
        check!("RC event-driven completion (armed CQ, completion channel)", self.events());
        check!("UD SEND through an address handle", self.ud());
        check!("RC bad rkey gives REM_ACCESS_ERR, then WR_FLUSH_ERR", self.bad_rkey());
        check!("QP moved to ERR flushes posted receives with WR_FLUSH_ERR", self.flush());
    }

    // ---- building blocks ----------------------------------------------------------------

    fn caps(inline: u32) -> QpCaps {
        QpCaps { max_send_wr: DEPTH, max_recv_wr: DEPTH, max_send_sge: 4, max_recv_sge: 4, max_inline_data: inline }
    }

    fn cq(&self, channel: Option<&CompChannel>) -> Result<Cq<P>, String> {
        Cq::new(&self.ctx, 4 * DEPTH, channel, 0).map_err(|e| e.to_string())
    }

    /// Create a QP, asking for the largest inline size the device grants (rxe: 512).
    fn qp(&self, qt: QpType, send_cq: &Cq<P>, recv_cq: &Cq<P>, srq: Option<&Srq<P>>) -> Result<Qp<P>, String> {
        let mut last = String::new();
        for inline in [512u32, 256, 128, 64, 0] {
            let init = QpInit { qp_type: qt, send_cq, recv_cq, srq, caps: Self::caps(inline), sq_sig_all: false };
            match Qp::new(self.pd(), &init) {
                Ok(q) => return Ok(q),
                Err(e) => last = e.to_string(),
            }
        }
        Err(last)
    }

    fn access() -> AccessFlags {
        AccessFlags::LOCAL_WRITE | AccessFlags::REMOTE_WRITE | AccessFlags::REMOTE_READ | AccessFlags::REMOTE_ATOMIC
    }

    fn connect(&self, q: &mut Qp<P>, peer_qpn: u32, psn: u32, peer_psn: u32) -> Result<(), String> {
        let port = self.t.opts.port;
        q.to_init(port, 0, Self::access()).map_err(|e| e.to_string())?;
        if q.qp_type() == QpType::Ud {
            q.to_rtr(&RtrParams::default()).map_err(|e| e.to_string())?;
        } else {
            let ah = RtrParams::roce_path(port, self.gid, self.t.gid_index as u8, 64);
            let rtr = RtrParams { path_mtu: self.mtu, dest_qpn: peer_qpn, rq_psn: peer_psn, max_dest_rd_atomic: self.max_rd_atomic, min_rnr_timer: 12, ah };
            q.to_rtr(&rtr).map_err(|e| e.to_string())?;
        }
        let rts = RtsParams { sq_psn: psn, max_rd_atomic: self.max_rd_atomic, ..RtsParams::default() };
        q.to_rts(&rts).map_err(|e| e.to_string())
    }

    fn pair(&self, qt: QpType, _depth: u32, srq: Option<&Srq<P>>) -> Result<Pair<P>, String> {
        let a_cq = self.cq(None)?;
        let b_cq = self.cq(None)?;
        let mut a = self.qp(qt, &a_cq, &a_cq, None)?;
        let mut b = self.qp(qt, &b_cq, &b_cq, srq)?;
        let (pa, pb) = (0x1000 + a.qpn() % 4096, 0x2000 + b.qpn() % 4096);
        self.connect(&mut a, b.qpn(), pa, pb)?;
        self.connect(&mut b, a.qpn(), pb, pa)?;
        Ok(Pair { a, b, a_cq, b_cq })
    }

    fn next_rand(&mut self) -> u64 {
        // xorshift64*: reproducible patterns, different for every transfer.
        self.seed ^= self.seed >> 12;
        self.seed ^= self.seed << 25;
        self.seed ^= self.seed >> 27;
        self.seed.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }

    fn pattern(&mut self, len: usize) -> Vec<u8> {
        let mut v = Vec::with_capacity(len + 8);
        while v.len() < len {
            v.extend_from_slice(&self.next_rand().to_le_bytes());
        }
        v.truncate(len);
        v
    }

    fn put(&self, off: usize, data: &[u8]) -> Result<(), String> {
        self.mr().write_at(off, data).map_err(|e| e.to_string())
    }

    fn get(&self, off: usize, len: usize) -> Result<Vec<u8>, String> {
        let mut v = vec![0u8; len];
        self.mr().read_at(off, &mut v).map_err(|e| e.to_string())?;
        Ok(v)
    }

    fn sge(&self, off: usize, len: usize) -> Sge {
        Sge { addr: self.mr().addr() + off as u64, length: len as u32, lkey: self.mr().lkey() }
    }

    fn remote(&self, off: usize) -> RemoteAddr {
        RemoteAddr { addr: self.mr().addr() + off as u64, rkey: self.mr().rkey() }
    }

    fn post_send(q: &mut Qp<P>, wr: &SendWr<'_>) -> Result<(), String> {
        // SAFETY: every SGE the checks build lies inside `self.mr` (registered, alive for the
        // whole session), and each check waits for the completion before touching the buffer.
        unsafe { q.post_send(std::slice::from_ref(wr)) }.map_err(|e| e.to_string())
    }

    fn post_recv(q: &mut Qp<P>, wr: &RecvWr<'_>) -> Result<(), String> {
        // SAFETY: as in post_send: the SGEs lie in the session's MR.
        unsafe { q.post_recv(std::slice::from_ref(wr)) }.map_err(|e| e.to_string())
    }

    /// Wait for one completion (bounded by the timeout).
    fn wait(&self, cq: &mut Cq<P>, what: &str) -> Result<WorkCompletion, String> {
        let mut wc = [WorkCompletion::default(); 1];
        let t0 = Instant::now();
        loop {
            match cq.poll(&mut wc) {
                Ok(1) => return Ok(wc[0]),
                Ok(_) => {}
                Err(e) => return Err(format!("poll CQ while waiting for {what}: {e}")),
            }
            if t0.elapsed() > self.t.opts.timeout {
                return Err(format!("no completion for {what} within {} s", self.t.opts.timeout.as_secs()));
            }
            std::thread::yield_now();
        }
    }

    fn wait_ok(&self, cq: &mut Cq<P>, what: &str, op: WcOpcode) -> Result<WorkCompletion, String> {
        let wc = self.wait(cq, what)?;
        if wc.status != WcStatus::Success {
            return Err(format!("{what} completed with {} (vendor error {:#x}): {}", wc.status, wc.vendor_err, wc.status.likely_cause()));
        }
        if wc.opcode != op {
            return Err(format!("{what}: completion opcode {:?}, expected {op:?}", wc.opcode));
        }
        Ok(wc)
    }

    fn same(&self, what: &str, got: &[u8], want: &[u8]) -> Result<(), String> {
        if got == want {
            return Ok(());
        }
        let i = got.iter().zip(want).position(|(a, b)| a != b).unwrap_or(got.len().min(want.len()));
        Err(format!(
            "{what}: payload differs at byte {i} of {} (got {:#04x}, want {:#04x})",
            want.len(),
            got.get(i).copied().unwrap_or(0),
            want.get(i).copied().unwrap_or(0)
        ))
    }

    // ---- checks -----------------------------------------------------------------------

    fn write(&mut self, p: &mut Pair<P>, size: usize, imm: Option<u32>) -> Check {
        let data = self.pattern(size);
        self.put(SRC, &data)?;
        self.put(DST, &vec![0u8; size])?;
        let sg = [self.sge(SRC, size)];
        if imm.is_some() {
            // WRITE_WITH_IMM consumes a receive at the target (no scatter list needed).
            Self::post_recv(&mut p.b, &RecvWr { wr_id: 77, sgl: &[] })?;
        }
        let mut wr = SendWr::new(11, if imm.is_some() { WrOpcode::RdmaWriteWithImm } else { WrOpcode::RdmaWrite }, &sg);
        wr.flags = SendFlags::SIGNALED;
        wr.remote = self.remote(DST);
        wr.imm_data = imm.unwrap_or(0).to_be();
        Self::post_send(&mut p.a, &wr)?;
        let wc = self.wait_ok(&mut p.a_cq, "the write", WcOpcode::RdmaWrite)?;
        if wc.wr_id != 11 {
            return Err(format!("wr_id {} came back as {}", 11, wc.wr_id));
        }
        if let Some(imm) = imm {
            let rc = self.wait_ok(&mut p.b_cq, "the receive of the immediate", WcOpcode::RecvRdmaWithImm)?;
            if rc.wc_flags & wc_flags::WITH_IMM == 0 || u32::from_be(rc.imm_data) != imm || rc.wr_id != 77 {
                return Err(format!("immediate {:#x} (flags {:#x}, wr_id {}), expected {imm:#x}", u32::from_be(rc.imm_data), rc.wc_flags, rc.wr_id));
            }
        }
        self.same("target buffer", &self.get(DST, size)?, &data)?;
        Ok(format!("{size} bytes verified"))
    }

    fn send(&mut self, p: &mut Pair<P>, size: usize, imm: Option<u32>, pieces: usize) -> Check {
        let data = self.pattern(size);
        self.put(SRC, &data)?;
        self.put(DST, &vec![0u8; size + 4096])?;
        // Gather from `pieces` spots of SRC, scatter into `pieces` spots of DST (out of order
        // offsets so a wrong SGE walk shows as a payload mismatch).
        let cut = |i: usize| i * size / pieces;
        let sends: Vec<Sge> = (0..pieces).map(|i| self.sge(SRC + cut(i), cut(i + 1) - cut(i))).collect();
        let recvs: Vec<Sge> = (0..pieces).map(|i| self.sge(DST + cut(i) + i * 64, cut(i + 1) - cut(i))).collect();
        Self::post_recv(&mut p.b, &RecvWr { wr_id: 21, sgl: &recvs })?;
        let mut wr = SendWr::new(22, if imm.is_some() { WrOpcode::SendWithImm } else { WrOpcode::Send }, &sends);
        wr.flags = SendFlags::SIGNALED;
        wr.imm_data = imm.unwrap_or(0).to_be();
        Self::post_send(&mut p.a, &wr)?;
        self.wait_ok(&mut p.a_cq, "the send", WcOpcode::Send)?;
        let rc = self.wait_ok(&mut p.b_cq, "the receive", WcOpcode::Recv)?;
        if rc.byte_len as usize != size || rc.wr_id != 21 {
            return Err(format!("receive reported {} bytes, wr_id {} (expected {size}, 21)", rc.byte_len, rc.wr_id));
        }
        if let Some(imm) = imm {
            if rc.wc_flags & wc_flags::WITH_IMM == 0 || u32::from_be(rc.imm_data) != imm {
                return Err(format!("immediate {:#x} flags {:#x}, expected {imm:#x}", u32::from_be(rc.imm_data), rc.wc_flags));
            }
        }
        let mut got = Vec::with_capacity(size);
        for i in 0..pieces {
            got.extend(self.get(DST + cut(i) + i * 64, cut(i + 1) - cut(i))?);
        }
        self.same("received message", &got, &data)?;
        Ok(format!("{size} bytes in {pieces} piece(s) verified"))
    }

    fn inline(&mut self, p: &mut Pair<P>, op: WrOpcode) -> Check {
        let max = p.a.caps().max_inline_data as usize;
        if max == 0 {
            return Err("the QP grants no inline data".into());
        }
        let data = self.pattern(max);
        self.put(SRC, &data)?;
        self.put(DST, &vec![0u8; max])?;
        let sg = [self.sge(SRC, max)];
        if op == WrOpcode::Send {
            let rs = [self.sge(DST, max)];
            Self::post_recv(&mut p.b, &RecvWr { wr_id: 31, sgl: &rs })?;
        }
        let mut wr = SendWr::new(32, op, &sg);
        wr.flags = SendFlags::SIGNALED | SendFlags::INLINE;
        wr.remote = self.remote(DST);
        Self::post_send(&mut p.a, &wr)?;
        // The payload was copied into the WQE: scribbling over the source now must not matter.
        self.put(SRC, &vec![0xAA; max])?;
        self.wait_ok(&mut p.a_cq, "the inline request", WcOpcode::for_send(op))?;
        if op == WrOpcode::Send {
            self.wait_ok(&mut p.b_cq, "the receive", WcOpcode::Recv)?;
        }
        self.same("target buffer", &self.get(DST, max)?, &data)?;
        Ok(format!("{max} bytes inline"))
    }

    /// More operations than three times the send queue depth, most unsignaled: the SQ ring
    /// wraps several times; one signaled completion retires the unsignaled ones before it.
    fn wraparound(&mut self, p: &mut Pair<P>) -> Check {
        let n = 3 * DEPTH as usize + 7;
        let chunk = 64usize;
        let data = self.pattern(n * chunk);
        self.put(SRC, &data)?;
        self.put(DST, &vec![0u8; n * chunk])?;
        let mut outstanding = 0usize;
        let mut signaled = 0usize;
        for i in 0..n {
            let sg = [self.sge(SRC + i * chunk, chunk)];
            let mut wr = SendWr::new(1000 + i as u64, WrOpcode::RdmaWrite, &sg);
            let sig = i % 4 == 3 || i == n - 1;
            if sig {
                wr.flags = SendFlags::SIGNALED;
            }
            wr.remote = self.remote(DST + i * chunk);
            Self::post_send(&mut p.a, &wr)?;
            outstanding += 1;
            if sig {
                let wc = self.wait_ok(&mut p.a_cq, &format!("write #{i}"), WcOpcode::RdmaWrite)?;
                if wc.wr_id != 1000 + i as u64 {
                    return Err(format!("completion for wr_id {} while waiting for {}", wc.wr_id, 1000 + i));
                }
                signaled += 1;
                outstanding = 0;
            }
        }
        let _ = outstanding;
        self.same("target buffer", &self.get(DST, n * chunk)?, &data)?;
        Ok(format!("{n} writes, {signaled} completions"))
    }

    /// More receives than three times the receive queue depth, re-posted as they complete.
    fn recv_wraparound(&mut self, p: &mut Pair<P>) -> Check {
        let n = 3 * DEPTH as usize + 5;
        let size = 128usize;
        for i in 0..DEPTH as usize {
            let rs = [self.sge(DST + i * size, size)];
            Self::post_recv(&mut p.b, &RecvWr { wr_id: 5000 + i as u64, sgl: &rs })?;
        }
        for i in 0..n {
            let data = self.pattern(size);
            self.put(SRC, &data)?;
            let sg = [self.sge(SRC, size)];
            let mut wr = SendWr::new(6000 + i as u64, WrOpcode::Send, &sg);
            wr.flags = SendFlags::SIGNALED;
            Self::post_send(&mut p.a, &wr)?;
            self.wait_ok(&mut p.a_cq, &format!("send #{i}"), WcOpcode::Send)?;
            let rc = self.wait_ok(&mut p.b_cq, &format!("receive #{i}"), WcOpcode::Recv)?;
            let slot = (rc.wr_id - 5000) as usize;
            if slot != i % DEPTH as usize {
                return Err(format!("receive #{i} landed in slot {slot}, expected {} (receives complete in order)", i % DEPTH as usize));
            }
            self.same(&format!("message #{i}"), &self.get(DST + slot * size, size)?, &data)?;
            let rs = [self.sge(DST + slot * size, size)];
            Self::post_recv(&mut p.b, &RecvWr { wr_id: rc.wr_id, sgl: &rs })?;
        }
        // Drain: move b to a clean state for later checks by consuming nothing more; the
        // posted receives stay (harmless) until the pair is dropped.
        Ok(format!("{n} messages through {DEPTH} receive slots"))
    }

    fn read(&mut self, p: &mut Pair<P>, size: usize) -> Check {
        let data = self.pattern(size);
        self.put(DST, &data)?;
        self.put(SCRATCH, &vec![0u8; size])?;
        let sg = [self.sge(SCRATCH, size)];
        let mut wr = SendWr::new(41, WrOpcode::RdmaRead, &sg);
        wr.flags = SendFlags::SIGNALED;
        wr.remote = self.remote(DST);
        Self::post_send(&mut p.a, &wr)?;
        let wc = self.wait_ok(&mut p.a_cq, "the read", WcOpcode::RdmaRead)?;
        if wc.byte_len as usize != size {
            return Err(format!("read completion reports {} bytes, expected {size}", wc.byte_len));
        }
        self.same("read buffer", &self.get(SCRATCH, size)?, &data)?;
        Ok(format!("{size} bytes verified"))
    }

    fn atomic(&mut self, p: &mut Pair<P>, op: WrOpcode, compare_add: u64, swap: u64) -> Result<u64, String> {
        self.put(SCRATCH, &[0u8; 8])?;
        let sg = [self.sge(SCRATCH, 8)];
        let mut wr = SendWr::new(51, op, &sg);
        wr.flags = SendFlags::SIGNALED;
        wr.remote = self.remote(DST);
        wr.compare_add = compare_add;
        wr.swap = swap;
        Self::post_send(&mut p.a, &wr)?;
        self.wait_ok(&mut p.a_cq, op.name(), WcOpcode::for_send(op))?;
        let old = self.get(SCRATCH, 8)?;
        Ok(u64::from_ne_bytes(old.try_into().map_err(|_| "short read")?))
    }

    fn target_u64(&self) -> Result<u64, String> {
        let v = self.get(DST, 8)?;
        Ok(u64::from_ne_bytes(v.try_into().map_err(|_| "short read")?))
    }

    fn cas(&mut self, p: &mut Pair<P>) -> Check {
        let (x, y) = (0x0123_4567_89ab_cdefu64, 0xfedc_ba98_7654_3210u64);
        self.put(DST, &x.to_ne_bytes())?;
        let old = self.atomic(p, WrOpcode::AtomicCmpAndSwp, x, y)?;
        if old != x || self.target_u64()? != y {
            return Err(format!("matching CAS: returned {old:#x}, target now {:#x} (want {x:#x}, {y:#x})", self.target_u64()?));
        }
        let old = self.atomic(p, WrOpcode::AtomicCmpAndSwp, x, 7)?;
        if old != y || self.target_u64()? != y {
            return Err(format!("mismatching CAS: returned {old:#x}, target now {:#x} (want {y:#x} unchanged)", self.target_u64()?));
        }
        Ok("swap on match, no swap on mismatch".into())
    }

    fn faa(&mut self, p: &mut Pair<P>) -> Check {
        let x = 1_000_000_007u64;
        self.put(DST, &x.to_ne_bytes())?;
        for k in 0..5u64 {
            let old = self.atomic(p, WrOpcode::AtomicFetchAndAdd, 3, 0)?;
            if old != x + 3 * k {
                return Err(format!("add #{k} returned {old}, expected {}", x + 3 * k));
            }
        }
        let now = self.target_u64()?;
        if now != x + 15 {
            return Err(format!("target {now}, expected {}", x + 15));
        }
        Ok("5 adds, every old value checked".into())
    }

    fn srq(&mut self) -> Check {
        let mut srq = Srq::new(self.pd(), DEPTH, 2, 0).map_err(|e| format!("create SRQ: {e}"))?;
        let mut p = self.pair(QpType::Rc, DEPTH, Some(&srq))?;
        let size = 256usize;
        for i in 0..DEPTH as usize {
            let rs = [self.sge(DST + i * size, size)];
            // SAFETY: the SGE lies in the session's MR.
            unsafe { srq.post_recv(&[RecvWr { wr_id: 7000 + i as u64, sgl: &rs }]) }.map_err(|e| e.to_string())?;
        }
        let n = 3 * DEPTH as usize + 1;
        for i in 0..n {
            let data = self.pattern(size);
            self.put(SRC, &data)?;
            let sg = [self.sge(SRC, size)];
            let mut wr = SendWr::new(8000 + i as u64, WrOpcode::Send, &sg);
            wr.flags = SendFlags::SIGNALED;
            Self::post_send(&mut p.a, &wr)?;
            self.wait_ok(&mut p.a_cq, &format!("send #{i}"), WcOpcode::Send)?;
            let rc = self.wait_ok(&mut p.b_cq, &format!("SRQ receive #{i}"), WcOpcode::Recv)?;
            let slot = rc.wr_id.checked_sub(7000).filter(|s| *s < DEPTH as u64).ok_or(format!("unexpected wr_id {}", rc.wr_id))? as usize;
            self.same(&format!("message #{i}"), &self.get(DST + slot * size, size)?, &data)?;
            let rs = [self.sge(DST + slot * size, size)];
            // SAFETY: as above.
            unsafe { srq.post_recv(&[RecvWr { wr_id: rc.wr_id, sgl: &rs }]) }.map_err(|e| e.to_string())?;
        }
        Ok(format!("{n} messages through a {DEPTH}-deep SRQ"))
    }

    fn events(&mut self) -> Check {
        let ch = CompChannel::new(&self.ctx).map_err(|e| format!("create completion channel: {e}"))?;
        let mut a_cq = self.cq(Some(&ch))?;
        let b_cq = self.cq(None)?;
        let mut a = self.qp(QpType::Rc, &a_cq, &a_cq, None)?;
        let mut b = self.qp(QpType::Rc, &b_cq, &b_cq, None)?;
        self.connect(&mut a, b.qpn(), 0x333, 0x444)?;
        self.connect(&mut b, a.qpn(), 0x444, 0x333)?;
        let mut events = 0;
        for i in 0..3 {
            a_cq.arm(false).map_err(|e| format!("arm CQ: {e}"))?;
            let data = self.pattern(512);
            self.put(SRC, &data)?;
            let sg = [self.sge(SRC, 512)];
            let mut wr = SendWr::new(90 + i, WrOpcode::RdmaWrite, &sg);
            wr.flags = SendFlags::SIGNALED;
            wr.remote = self.remote(DST);
            Self::post_send(&mut a, &wr)?;
            match ch.wait(Some(self.t.opts.timeout)).map_err(|e| e.to_string())? {
                Some(h) if h == a_cq.user_handle() => {
                    a_cq.event_received();
                    events += 1;
                }
                Some(h) => return Err(format!("event for CQ handle {h:#x}, expected {:#x}", a_cq.user_handle())),
                None => return Err(format!("no completion event within {} s", self.t.opts.timeout.as_secs())),
            }
            let wc = self.wait_ok(&mut a_cq, "the write after the event", WcOpcode::RdmaWrite)?;
            if wc.wr_id != 90 + i {
                return Err(format!("wr_id {} after event, expected {}", wc.wr_id, 90 + i));
            }
            self.same("target buffer", &self.get(DST, 512)?, &data)?;
        }
        drop((a, b, b_cq));
        Ok(format!("{events} events, each followed by its completion"))
    }

    fn ud(&mut self) -> Check {
        let a_cq = self.cq(None)?;
        let mut b_cq = self.cq(None)?;
        let mut a_cq = a_cq;
        let mut a = self.qp(QpType::Ud, &a_cq, &a_cq, None)?;
        let mut b = self.qp(QpType::Ud, &b_cq, &b_cq, None)?;
        self.connect(&mut a, 0, 0x55, 0)?;
        self.connect(&mut b, 0, 0x66, 0)?;
        let port = self.t.opts.port;
        let attr = AhAttr { dgid: self.gid, sgid_index: self.t.gid_index as u8, hop_limit: 64, is_global: true, port_num: port, ..Default::default() };
        let ah = Ah::new(self.pd(), &attr).map_err(|e| format!("create AH: {e}"))?;
        let size = 256usize.min((128usize << self.mtu) - 64);
        let data = self.pattern(size);
        self.put(SRC, &data)?;
        self.put(DST, &vec![0u8; size + 40])?;
        // UD receives start with the 40-byte GRH.
        let rs = [self.sge(DST, size + 40)];
        Self::post_recv(&mut b, &RecvWr { wr_id: 61, sgl: &rs })?;
        let sg = [self.sge(SRC, size)];
        let mut wr = SendWr::new(62, WrOpcode::Send, &sg);
        wr.flags = SendFlags::SIGNALED;
        wr.ud = Some(UdDest { ah: ah.number(), remote_qpn: b.qpn(), remote_qkey: uverbs::objects::DEFAULT_QKEY });
        Self::post_send(&mut a, &wr)?;
        self.wait_ok(&mut a_cq, "the UD send", WcOpcode::Send)?;
        let rc = self.wait_ok(&mut b_cq, "the UD receive", WcOpcode::Recv)?;
        if rc.byte_len as usize != size + 40 || rc.src_qp != a.qpn() {
            return Err(format!("receive: {} bytes from QP {:#x}, expected {} from {:#x}", rc.byte_len, rc.src_qp, size + 40, a.qpn()));
        }
        self.same("UD payload after the GRH", &self.get(DST + 40, size)?, &data)?;
        Ok(format!("{size} bytes + GRH, src QP {:#x}, AH #{}", rc.src_qp, ah.number()))
    }

    fn bad_rkey(&mut self) -> Check {
        let mut p = self.pair(QpType::Rc, DEPTH, None)?;
        let sg = [self.sge(SRC, 64)];
        let mut wr = SendWr::new(71, WrOpcode::RdmaWrite, &sg);
        wr.flags = SendFlags::SIGNALED;
        wr.remote = RemoteAddr { addr: self.mr().addr() + DST as u64, rkey: self.mr().rkey() ^ 0x00ff_ff00 };
        let mut wr2 = wr;
        wr2.wr_id = 72;
        Self::post_send(&mut p.a, &wr)?;
        Self::post_send(&mut p.a, &wr2)?;
        let wc = self.wait(&mut p.a_cq, "the write with a bad rkey")?;
        if wc.status != WcStatus::RemAccessErr || wc.wr_id != 71 {
            return Err(format!("got {} for wr_id {}, expected REM_ACCESS_ERR for 71", wc.status, wc.wr_id));
        }
        let wc2 = self.wait(&mut p.a_cq, "the request after the failed one")?;
        if wc2.status != WcStatus::WrFlushErr || wc2.wr_id != 72 {
            return Err(format!("got {} for wr_id {}, expected WR_FLUSH_ERR for 72", wc2.status, wc2.wr_id));
        }
        Ok(format!("{}: {}", wc.status.name(), wc.status.likely_cause()))
    }

    fn flush(&mut self) -> Check {
        let mut p = self.pair(QpType::Rc, DEPTH, None)?;
        let n = 5u64;
        for i in 0..n {
            let rs = [self.sge(DST + i as usize * 64, 64)];
            Self::post_recv(&mut p.b, &RecvWr { wr_id: 100 + i, sgl: &rs })?;
        }
        let (attr, mask) = (
            uverbs::objects::QpAttr { qp_state: QpState::Err, ..Default::default() },
            uverbs::objects::QpAttrMask::STATE,
        );
        p.b.modify(&attr, mask).map_err(|e| format!("modify QP to ERR: {e}"))?;
        for i in 0..n {
            let wc = self.wait(&mut p.b_cq, &format!("flushed receive #{i}"))?;
            if wc.status != WcStatus::WrFlushErr || wc.wr_id != 100 + i {
                return Err(format!("got {} for wr_id {}, expected WR_FLUSH_ERR for {}", wc.status, wc.wr_id, 100 + i));
            }
        }
        Ok(format!("{n} receives flushed in order"))
    }
}

fn human(size: usize) -> String {
    match size {
        s if s >= MIB && s % MIB == 0 => format!("{} MiB", s / MIB),
        s if s >= 1024 && s % 1024 == 0 => format!("{} KiB", s / 1024),
        s => format!("{s} B"),
    }
}
