//! perftest's HW rate limiter at connect time (6.06 `ctx_connect`).
//!
//! The static rate (`enum ibv_rate`, from `params::rate::hw_rate_enum`) goes into the path's
//! address vector when the QP moves to RTR (UD: into the address handle). After the QP is
//! connected, perftest queries its address vector (`ibv_query_qp(IBV_QP_AV)`) and accepts the
//! HW limit only when the query worked, the QP reports the rate it was given, and the port is
//! InfiniBand. Otherwise an implicit HW limiter (`--rate_limit` without `--rate_limit_type`)
//! falls back to the SW limiter with a red note on stderr, and an explicit one
//! (`--rate_limit_type HW`) fails the connection. perftest checks every QP while the limiter is
//! still HW, so the note appears once and the failure stops at the first QP.

/// perftest's note when the QP does not take the limit and the SW limiter runs instead.
pub const FALLBACK_NOTICE: &str = "\x1b[31mThe QP failed to accept HW rate limit, providing SW rate limit \x1b[0m\n";
/// perftest's line when an explicit HW limit is not taken (then `Unable to Connect the HCA's
/// through the link`, exit 1).
pub const FAILED_LINE: &str = "\x1b[31mThe QP failed to accept HW rate limit  \x1b[0m";
/// perftest's note when QUERY_QP fails (the limit then counts as not taken).
pub const QUERY_FAILED_NOTICE: &str = "ibv_query_qp failed to get ah_attr\n";

/// What the check decided for one QP.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Verdict {
    /// The QP runs at the static rate: no SW limiter.
    Taken,
    /// Implicit HW limiter not taken: print [`FALLBACK_NOTICE`], run the SW limiter.
    FallBackToSw,
    /// Explicit HW limiter not taken: [`FAILED_LINE`], the connection fails.
    Fail,
}

/// perftest's decision. `queried`: the static rate QUERY_QP reported (None: the query failed);
/// `wanted`: the rate set at RTR; `infiniband`: the port's link layer is InfiniBand;
/// `explicit`: `--rate_limit_type` was given.
pub fn verdict(queried: Option<u8>, wanted: u8, infiniband: bool, explicit: bool) -> Verdict {
    if queried == Some(wanted) && infiniband {
        Verdict::Taken
    } else if explicit {
        Verdict::Fail
    } else {
        Verdict::FallBackToSw
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn taken_only_on_infiniband_with_the_rate_reported_back() {
        assert_eq!(verdict(Some(3), 3, true, false), Verdict::Taken);
        assert_eq!(verdict(Some(3), 3, true, true), Verdict::Taken);
        // RoCE (rxe): never, even when the QP reports the rate.
        assert_eq!(verdict(Some(3), 3, false, false), Verdict::FallBackToSw);
        assert_eq!(verdict(Some(3), 3, false, true), Verdict::Fail);
        // The QP dropped the rate (rxe keeps 0), or the query failed.
        assert_eq!(verdict(Some(0), 3, true, false), Verdict::FallBackToSw);
        assert_eq!(verdict(None, 3, true, true), Verdict::Fail);
        // No rate given: static rate 0 is "taken" on InfiniBand.
        assert_eq!(verdict(Some(0), 0, true, true), Verdict::Taken);
    }

    #[test]
    fn messages_are_perftest_bytes() {
        assert!(FALLBACK_NOTICE.starts_with("\x1b[31mThe QP failed to accept HW rate limit, "));
        assert!(FALLBACK_NOTICE.ends_with("providing SW rate limit \x1b[0m\n"));
        assert!(FAILED_LINE.ends_with("rate limit  \x1b[0m"));
    }
}
