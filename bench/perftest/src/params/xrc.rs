//! perftest 6.06's `-c XRC` rules (its "XRC Part" of `force_dependecies` and the tools' `main`):
//! XRC forces the SRQ on and is refused with `-R`; the latency tests, and the BW tests with
//! `-b`, double the QP count (each side then has XRC send QPs and XRC receive QPs).

use super::{conflict, Connection, ParamError, Params, Role, TestKind};
use crate::engine::xrc::XrcPlan;

/// The XRC part of `force_dependecies`, at its place (after the `--run_infinitely` rules).
pub(super) fn force_dependencies(p: &mut Params) -> Result<(), ParamError> {
    if p.connection != Connection::Xrc {
        return Ok(());
    }
    if p.conn.work_rdma_cm {
        return Err(conflict("-R/--rdma_cm, -c/--connection", "XRC does not support RDMA_CM"));
    }
    p.use_srq = true;
    Ok(())
}

/// What each tool's `main` does right after parsing: with XRC, the latency tests always, and
/// the BW tests with `-b`, use twice the QPs (the first half send, the second half receive).
pub(super) fn double_qps(p: &mut Params) {
    if p.connection == Connection::Xrc && (p.kind == TestKind::Lat || p.duplex) {
        p.num_qps = p.num_qps.saturating_mul(2);
    }
}

/// The XRC QP layout of this side (`None` without `-c XRC`): split into initiators and
/// targets for the latency tests and `-b`, else all initiators on the client and all targets on
/// the server (perftest's `machine`, which `--reversed` does not change).
pub fn xrc_plan(p: &Params) -> Option<XrcPlan> {
    (p.connection == Connection::Xrc)
        .then(|| XrcPlan::new(p.num_qps as usize, p.kind == TestKind::Lat || p.duplex, p.machine == Role::Server))
}

/// The split-lanes plan of this side: XRC's ([`xrc_plan`]), or DC's split into DCIs and DCTs
/// for the latency tests and `-b` ([`super::dc::split_lanes`]); `None` for everything else.
/// Who pairs with which peer key, how many lanes the loops drive and report.
pub fn lane_plan(p: &Params) -> Option<XrcPlan> {
    xrc_plan(p).or_else(|| super::dc::split_lanes(p))
}

#[cfg(test)]
mod tests {
    use super::super::{parse, ParseOutcome, Tool};
    use super::*;

    fn run(tool: Tool, args: &[&str]) -> Result<Params, ParamError> {
        let a: Vec<String> = args.iter().map(|s| s.to_string()).collect();
        match parse(tool, &a)? {
            ParseOutcome::Run(p) => Ok(*p),
            _ => panic!("not a run"),
        }
    }

    #[test]
    fn xrc_forces_srq_and_doubles_qps_like_perftest() {
        // BW without -b: SRQ on, QP count as given; the SRQ exists on both sides.
        let p = run(Tool::WriteBw, &["-c", "XRC", "-q", "2"]).unwrap();
        assert_eq!((p.connection, p.use_srq, p.num_qps), (Connection::Xrc, true, 2));
        assert!(p.srq_exists());
        let p = run(Tool::SendBw, &["-c", "XRC", "host"]).unwrap();
        assert!(p.srq_exists(), "XRC: the client side has the SRQ too");
        // -b doubles, and so does every latency test.
        assert_eq!(run(Tool::SendBw, &["-c", "XRC", "-b", "-q", "3"]).unwrap().num_qps, 6);
        assert_eq!(run(Tool::SendLat, &["-c", "XRC"]).unwrap().num_qps, 2);
        assert_eq!(run(Tool::ReadLat, &["-c", "XRC"]).unwrap().num_qps, 2);
        // RC is untouched.
        let p = run(Tool::SendLat, &["-c", "RC"]).unwrap();
        assert_eq!((p.use_srq, p.num_qps), (false, 1));
        // write/read/atomic accept XRC although --use-srq alone is a SEND-only option (perftest
        // checks --use-srq before the XRC part turns it on).
        assert!(run(Tool::AtomicBw, &["-c", "XRC"]).is_ok());
        assert!(run(Tool::WriteBw, &["--use-srq"]).is_err());
    }

    #[test]
    fn lane_plans_follow_the_test_kind_and_side() {
        assert_eq!(lane_plan(&run(Tool::WriteBw, &["-q", "2"]).unwrap()), None);
        let c = lane_plan(&run(Tool::WriteBw, &["-c", "XRC", "-q", "2", "host"]).unwrap()).unwrap();
        assert_eq!((c.num_qps, c.split, c.receiver_only, c.lanes()), (2, false, false, 2));
        let s = lane_plan(&run(Tool::WriteBw, &["-c", "XRC", "-q", "2"]).unwrap()).unwrap();
        assert_eq!((s.split, s.receiver_only, s.lanes()), (false, true, 2));
        let d = lane_plan(&run(Tool::SendBw, &["-c", "XRC", "-b", "-q", "2"]).unwrap()).unwrap();
        assert_eq!((d.num_qps, d.split, d.receiver_only, d.lanes()), (4, true, false, 2));
        let l = lane_plan(&run(Tool::WriteLat, &["-c", "XRC"]).unwrap()).unwrap();
        assert_eq!((l.num_qps, l.split, l.lanes(), l.recv_qp(0)), (2, true, 1, 1));
    }

    #[test]
    fn xrc_with_rdma_cm_is_refused_in_perftest_words() {
        let e = run(Tool::ReadBw, &["-c", "XRC", "-R"]).unwrap_err();
        assert_eq!(e.to_string(), "-R/--rdma_cm, -c/--connection: XRC does not support RDMA_CM");
        assert_eq!(e.exit_code(), 1);
    }
}
