//! The client: one control connection per test (and per loop step), the request built from
//! the remote-side parameters, the local side run with the local ones, then the figures.

use std::net::{SocketAddr, TcpStream, ToSocketAddrs};
use std::time::{Duration, Instant};

use super::clock::new_stat;
use super::conf::local_conf;
use super::ctrl::{Ctrl, CtrlError};
use super::format::{Class, Table};
use super::options::{Fatal, Par, Pars, Side, State};
use super::rdma::{self, plan::RdmaTest};
use super::results::{calc, show_info, to_json, Measure};
use super::server::Pin;
use super::tests_sock::{run_client, Plan, SockTest};
use super::wire::{test_index, Conf, FixedStr, Req, Stat, CONF_LEN, SYNC_BEFORE, VER_INC, VER_MAJ, VER_MIN};

/// A test failed: stock qperf prints local errors on stdout and the server's on stderr
/// ("server: …"), and exits 1.
pub fn report(e: CtrlError) -> Fatal {
    match e {
        CtrlError::Local(m) => Fatal(m),
        CtrlError::Remote(m) => {
            eprintln!("server: {m}");
            Fatal(String::new())
        }
    }
}

pub fn build_req(pars: &Pars, index: u16) -> Req {
    let r = |p| pars.rem(p);
    Req {
        ver_maj: VER_MAJ,
        ver_min: VER_MIN,
        ver_inc: VER_INC,
        req_index: index,
        access_recv: r(Par::AccessRecv),
        affinity: r(Par::Affinity),
        alt_port: r(Par::AltPort),
        flip: r(Par::Flip),
        msg_size: r(Par::MsgSize),
        mtu_size: r(Par::MtuSize),
        no_msgs: r(Par::NoMsgs),
        poll_mode: r(Par::PollMode),
        port: r(Par::Port),
        rd_atomic: r(Par::RdAtomic),
        sl: r(Par::Sl),
        sock_buf_size: r(Par::SockBufSize),
        src_path_bits: r(Par::SrcPathBits),
        time: r(Par::Time),
        timeout: r(Par::Timeout),
        use_cm: r(Par::UseCm),
        id: FixedStr::new(&pars.get(Side::Rem, Par::Id).text),
        static_rate: FixedStr::new(&pars.get(Side::Rem, Par::StaticRate).text),
    }
}

/// Connect to the control port, trying every address, retrying once a second for
/// `wait_server` seconds (-ws).
fn connect(host: &str, port: u16, wait: u64, timeout: Duration) -> Result<TcpStream, Fatal> {
    let deadline = Instant::now() + Duration::from_secs(wait);
    loop {
        let addrs: Vec<SocketAddr> = (host, port)
            .to_socket_addrs()
            .map_err(|e| Fatal(format!("getaddrinfo failed: {e}")))?
            .collect();
        for a in &addrs {
            if let Ok(s) = TcpStream::connect_timeout(a, timeout) {
                return Ok(s);
            }
        }
        if Instant::now() + Duration::from_secs(1) > deadline {
            return Err(Fatal(format!("{host}: failed to connect")));
        }
        std::thread::sleep(Duration::from_secs(1));
    }
}

fn open(st: &State, index: u16) -> Result<Ctrl, Fatal> {
    open_req(st, &build_req(&st.pars, index))
}

/// Connect to the server and send `req`.
pub fn open_req(st: &State, req: &Req) -> Result<Ctrl, Fatal> {
    let host = st.g.host.clone().unwrap_or_default();
    let timeout = Duration::from_secs(u64::from(st.pars.loc(Par::Timeout).max(1)));
    let s = connect(&host, st.g.listen_port, st.g.wait_server, timeout)?;
    let ctrl = Ctrl::new(s, timeout, "server").map_err(report)?;
    ctrl.send("request data", &req.encode()).map_err(report)?;
    Ok(ctrl)
}

pub fn warn_unused(st: &mut State, test: &str) {
    for w in st.pars.unused_warnings(test) {
        println!("{w}");
    }
}

/// Run one test with the state as parsed so far.
pub fn run_test(st: &mut State, test: &str) -> Result<(), Fatal> {
    let index = test_index(test).ok_or_else(|| super::options::bad_test(test))?;
    let p = &mut st.pars;
    p.start_test();
    for side in [Side::Loc, Side::Rem] {
        // Stock qperf: 2 s unless -n was given for that side; a 5 s message timeout.
        if !p.is_set(side, Par::NoMsgs) {
            p.set_default_side(side, Par::Time, 2);
        }
        p.set_default_side(side, Par::Timeout, 5);
    }
    p.use_par(Par::Affinity);
    p.use_par(Par::Time);
    p.use_par(Par::Timeout);
    let _pin = Pin::new(p.loc(Par::Affinity)).map_err(report)?;
    if !st.g.json {
        println!("{test}:");
    }
    match test {
        "conf" => run_conf(st, index),
        "quit" => {
            warn_unused(st, test);
            let ctrl = open(st, index)?;
            ctrl.sync(SYNC_BEFORE).map_err(report)?;
            Ok(())
        }
        _ => match SockTest::from_name(test) {
            Some(t) => run_sock(st, t, index, test),
            None => match RdmaTest::by_name(test) {
                Some(t) => rdma::run_client(st, t, index),
                None => run_other(st, index, test),
            },
        },
    }
}

/// sdp/rds: the request goes out and the server answers (a stock server without the
/// protocol with an error); we have no client side for these.
fn run_other(st: &mut State, index: u16, test: &str) -> Result<(), Fatal> {
    warn_unused(st, test);
    let ctrl = open(st, index)?;
    let kind = if test.starts_with("sdp") { "SDP" } else { "RDS" };
    ctrl.recv("port", 4).map_err(report)?;
    Err(Fatal(format!("could not make {kind} connection to server (rperftest qperf has no {kind} client)")))
}

fn run_conf(st: &State, index: u16) -> Result<(), Fatal> {
    let ctrl = open(st, index)?;
    let b = ctrl.recv("configuration", CONF_LEN).map_err(report)?;
    let rc = Conf::decode(&b).map_err(|e| Fatal(e.to_string()))?;
    let lc = local_conf();
    if st.g.json {
        let j = serde_json::json!({
            "test": "conf",
            "loc": {"node": lc.node.text(), "cpu": lc.cpu.text(), "os": lc.os.text(), "qperf": lc.qperf.text()},
            "rem": {"node": rc.node.text(), "cpu": rc.cpu.text(), "os": rc.os.text(), "qperf": rc.qperf.text()},
        });
        println!("{j}");
        return Ok(());
    }
    let mut t = Table::new(st.g.units, st.g.verbosity);
    for (p, c) in [("loc", &lc), ("rem", &rc)] {
        t.strn(Class::Always, &format!("{p}_node"), &c.node.text());
        t.strn(Class::Always, &format!("{p}_cpu"), &c.cpu.text());
        t.strn(Class::Always, &format!("{p}_os"), &c.os.text());
        t.strn(Class::Always, &format!("{p}_qperf"), &c.qperf.text());
    }
    print!("{}", t.render());
    Ok(())
}

fn run_sock(st: &mut State, t: SockTest, index: u16, test: &str) -> Result<(), Fatal> {
    let p = &mut st.pars;
    if t.is_bw() {
        p.use_par(Par::AccessRecv);
    }
    p.set_default(Par::MsgSize, t.default_size());
    p.use_par(Par::Port);
    p.use_par(Par::SockBufSize);
    // Unlike stock qperf, -n is honoured by the socket tests (stock runs for ever).
    p.use_par(Par::NoMsgs);
    warn_unused(st, test);
    let p = &st.pars;
    if p.loc(Par::Time) == 0 && p.loc(Par::NoMsgs) == 0 {
        return Err(Fatal(format!("{test}: -t 0 without -n would never end; give a duration (-t 2) or a count (-n 1000)")));
    }
    if p.loc(Par::MsgSize) == 0 {
        return Err(Fatal(format!("{test}: message size must be at least 1 byte")));
    }
    if p.loc(Par::MsgSize) > 1 << 30 {
        return Err(Fatal(format!("{test}: message size {} is above 1 GiB", p.loc(Par::MsgSize))));
    }
    let ctrl = open(st, index)?;
    let plan = Plan {
        time: p.loc(Par::Time),
        no_msgs: p.loc(Par::NoMsgs),
        msg_size: p.loc(Par::MsgSize),
        timeout: ctrl.timeout,
        access_recv: p.loc(Par::AccessRecv) != 0,
    };
    let mut l = new_stat();
    let mut r = run_client(t, &ctrl, &plan, &mut l).map_err(report)?;
    drop(ctrl);
    show_results(st, test, t.measure(), &mut l, &mut r);
    Ok(())
}

/// The figures of a finished test from our STAT and the server's: rows, or one JSON line.
pub fn show_results(st: &State, test: &str, measure: Measure, l: &mut Stat, r: &mut Stat) {
    let res = calc(l, r);
    if st.g.json {
        println!("{}", to_json(test, measure, &res, l, r, &st.pars));
        return;
    }
    let mut tb = Table::new(st.g.units, st.g.verbosity);
    show_info(&mut tb, measure, &res, l, r, &st.pars, st.g.unify_nodes);
    print!("{}", tb.render());
}
