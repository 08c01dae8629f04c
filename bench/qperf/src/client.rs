//! The client: one control connection per test (and per loop step), the request built from
//! the remote-side parameters, the local side run with the local ones, then the figures.

use super::clock::new_stat;
use super::conf::local_conf;
use super::format::{Class, Table};
use super::options::{Fatal, Par, Side, State};
use super::pin::Pin;
use super::rdma::{self, plan::RdmaTest};
use super::request::{open, report, show_results, warn_unused};
use super::tests_sock::{run_client, Plan, SockTest};
use super::wire::{test_index, Conf, CONF_LEN, SYNC_BEFORE};

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
