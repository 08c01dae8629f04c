//! The client's side of one request: the REQ built from the remote-side parameters, the control
//! connection that carries it, errors as stock qperf reports them, and the figures at the end.
//! Shared by the socket tests' client (`client`) and the RDMA tests (`rdma`).

use std::net::{SocketAddr, TcpStream, ToSocketAddrs};
use std::time::{Duration, Instant};

use super::ctrl::{Ctrl, CtrlError};
use super::format::Table;
use super::options::{Fatal, Par, Pars, Side, State};
use super::results::{calc, show_info, to_json, Measure};
use super::wire::{FixedStr, Req, Stat, VER_INC, VER_MAJ, VER_MIN};

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

pub fn open(st: &State, index: u16) -> Result<Ctrl, Fatal> {
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
