//! `qperf` with no test: serve one client at a time on the control port, for ever. Stock
//! qperf forks a child per client and waits for it; we serve in-process with every wait
//! bounded, so one client that stalls delays the next by at most its timeouts.

use std::net::{TcpListener, TcpStream};
use std::time::Duration;

use super::clock::new_stat;
use super::conf::local_conf;
use super::rdma::{self, plan::RdmaTest};
use super::ctrl::{Ctrl, CtrlError};
use super::pin::Pin;
use super::tests_sock::{serve, wildcard, SockTest};
use super::wire::{test_name, Req, REQ_LEN, REQ_VERSION_LEN, SYNC_BEFORE};

pub struct ServerOpts {
    pub port: u16,
    /// Timeout until the request has arrived (-lto); after that, the request's own.
    pub timeout: Duration,
    pub debug: bool,
    pub allow_quit: bool,
    /// How RDMA tests open their device.
    pub providers: providers::ProviderSettings,
}

/// Why the session ended.
enum End {
    Served,
    Quit,
}

pub fn run(opts: &ServerOpts) -> i32 {
    let listener = match TcpListener::bind(&wildcard(opts.port)[..]) {
        Ok(l) => l,
        Err(e) => {
            println!("unable to bind to listen port {}: {e}; is another qperf server running? try -lp PORT", opts.port);
            return 1;
        }
    };
    if opts.debug {
        eprintln!("qperf server: listening on {}", listener.local_addr().map(|a| a.to_string()).unwrap_or_default());
    }
    serve_listener(&listener, opts)
}

/// Serve clients from `listener` one after another until a permitted `quit`.
pub fn serve_listener(listener: &TcpListener, opts: &ServerOpts) -> i32 {
    loop {
        let stream = match listener.accept() {
            Ok((s, _)) => s,
            Err(e) => {
                println!("accept failed: {e}");
                std::thread::sleep(Duration::from_millis(100));
                continue;
            }
        };
        match session(stream, opts) {
            Ok(End::Served) => {}
            Ok(End::Quit) => return 0,
            Err(()) => {}
        }
    }
}

fn session(stream: TcpStream, opts: &ServerOpts) -> Result<End, ()> {
    let mut ctrl = match Ctrl::new(stream, opts.timeout, "client") {
        Ok(c) => c,
        Err(CtrlError::Local(m) | CtrlError::Remote(m)) => {
            println!("{m}");
            return Err(());
        }
    };
    let r = handle(&mut ctrl, opts);
    match r {
        Ok(end) => Ok(end),
        Err(CtrlError::Local(m)) => {
            // Stock qperf prints its own errors on stdout, then tells the peer.
            println!("{m}");
            ctrl.send_error(&m);
            Err(())
        }
        Err(CtrlError::Remote(m)) => {
            if opts.debug {
                eprintln!("client: {m}");
            }
            Err(())
        }
    }
}

fn handle(ctrl: &mut Ctrl, opts: &ServerOpts) -> Result<End, CtrlError> {
    let v = ctrl.recv("request version", REQ_VERSION_LEN)?;
    let (maj, min, inc) = Req::decode_version(&v).map_err(|e| CtrlError::local(e.to_string()))?;
    if let Some(text) = Req::version_error(maj, min, inc) {
        return Err(CtrlError::Local(text));
    }
    let rest = ctrl.recv("request data", REQ_LEN - REQ_VERSION_LEN)?;
    let mut all = v;
    all.extend_from_slice(&rest);
    let req = Req::decode(&all).map_err(|e| CtrlError::local(e.to_string()))?;
    // The table of Debian's build: RDMA, no XRC (indexes 33-35).
    let name = match test_name(req.req_index) {
        Some(n) => n,
        None => return Err(CtrlError::Local(format!("bad request index: {}", req.req_index))),
    };
    if opts.debug {
        eprintln!("received request: {name}");
    }
    ctrl.timeout = Duration::from_secs(u64::from(if req.timeout == 0 { 5 } else { req.timeout }));
    let _pin = Pin::new(req.affinity)?;
    match name {
        "conf" => {
            ctrl.send("configuration", &local_conf().encode())?;
            Ok(End::Served)
        }
        "quit" => {
            if !opts.allow_quit {
                return Err(CtrlError::local("quit refused: this server was started without --allow-quit"));
            }
            ctrl.sync(SYNC_BEFORE)?;
            ctrl.wait_close(ctrl.timeout);
            Ok(End::Quit)
        }
        "sdp_bw" | "sdp_lat" => Err(CtrlError::local("unable to make SDP socket")),
        "rds_bw" | "rds_lat" => Err(CtrlError::local("socket failed: Address family not supported by protocol")),
        other => {
            if let Some(t) = RdmaTest::by_name(other) {
                rdma::serve(ctrl, &req, t, &opts.providers)?;
                return Ok(End::Served);
            }
            let Some(t) = SockTest::from_name(other) else {
                return Err(CtrlError::Local(format!("bad request index: {}", req.req_index)));
            };
            if req.msg_size == 0 || (t.is_bw() && req.msg_size > 1 << 30) || (!t.is_bw() && req.msg_size > 64 << 20) {
                return Err(CtrlError::Local(format!("message size {} not supported for {other}", req.msg_size)));
            }
            let mut stat = new_stat();
            serve(t, ctrl, &req, &mut stat)?;
            Ok(End::Served)
        }
    }
}
