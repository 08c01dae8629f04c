//! The rate limiter options (`--rate_limit`, `--rate_units`, `--rate_limit_type`,
//! `--burst_size`) as perftest 6.06's `force_dependecies()` checks them, and the SW limiter of
//! one message size for the engine.
//!
//! perftest 6.06 makes the HW limiter the default when only `--rate_limit` is given. The HW
//! limiter sets the QP's static rate; perftest then queries the QP and, on a device that did not
//! take it (and on every non-InfiniBand port, so on every RoCE device such as rxe), falls back to
//! the SW limiter with a red message, or fails when `--rate_limit_type HW` was given explicitly.
//! rperftest never sets a static rate, so it always behaves as perftest does on such a device:
//! the implicit HW limiter becomes the SW one with perftest's message, and an explicit HW
//! limiter is refused while parsing (perftest fails later, at connect time, on those devices).

use super::{conflict, unsupported, ParamError, Params, RateLimitType, RateUnits, TestKind};
use crate::engine::rate::{RateLimiter, RateUnit};

/// perftest's table of rates the HW limiter accepts (the `--rate_limit` text must be one of
/// them, compared as strings).
const HW_RATES: [&str; 17] =
    ["2.5", "5", "10", "14", "20", "25", "30", "40", "56", "60", "80", "100", "112", "120", "168", "200", "300"];

/// perftest's message when the QP does not take the HW limit and it falls back to SW.
pub const HW_FALLBACK_NOTICE: &str = "\x1b[31mThe QP failed to accept HW rate limit, providing SW rate limit \x1b[0m\n";

fn unit(u: RateUnits) -> RateUnit {
    match u {
        RateUnits::MegaBytes => RateUnit::MegaBytes,
        RateUnits::GigaBits => RateUnit::GigaBits,
        RateUnits::Packets => RateUnit::Packets,
    }
}

/// The HW checks perftest makes while parsing, then rperftest's choice for HW (see the module
/// docs). `rate_text` is the `--rate_limit` argument as given; `explicit` says whether
/// `--rate_limit_type` was given.
pub(super) fn check_hw(p: &mut Params, rate_text: Option<&str>, explicit: bool) -> Result<(), ParamError> {
    if p.use_rdma_cm || p.work_rdma_cm {
        return Err(conflict("--rate_limit, -R/-z", "HW rate limit isn't supported yet with rdma_cm scenarios"));
    }
    if p.rate_units == RateUnits::Packets {
        return Err(conflict(
            "--rate_units p, --rate_limit_type HW",
            "Failed: pps rate limit units is not supported when setting HW rate limit (use --rate_limit_type SW)",
        ));
    }
    // perftest looks the text up only when a rate was given.
    if let Some(text) = rate_text.filter(|t| !HW_RATES.contains(t)) {
        return Err(conflict(
            "--rate_limit",
            &format!(
                "Failed: Unknown rate limit value '{text}': the HW rate limiter takes one of {} Gbps; \
                 add --rate_limit_type SW for any other rate",
                HW_RATES.join(", ")
            ),
        ));
    }
    if explicit {
        return Err(unsupported(
            "--rate_limit_type HW",
            "rperftest does not set HW (static rate) limits; perftest 6.06 also fails on RoCE devices \
             such as rxe (The QP failed to accept HW rate limit); use --rate_limit_type SW",
        ));
    }
    // perftest: the QP does not take it, so the SW limiter runs instead.
    p.notice_err(HW_FALLBACK_NOTICE);
    Ok(())
}

/// Every message size of the run must allow at least one burst per second (perftest divides by
/// zero otherwise and stops sending after the first burst).
pub(super) fn check_sizes(p: &Params) -> Result<(), ParamError> {
    if p.kind != TestKind::Bw || p.verb.has_recv_comp() && p.duplex {
        return Ok(());
    }
    for size in p.sizes() {
        if let Some(Err(e)) = sw_limiter(p, size) {
            return Err(conflict("--rate_limit, --burst_size", &e));
        }
    }
    Ok(())
}

/// The SW limiter for messages of `size` bytes, when this side runs one: `--rate_limit_type SW`
/// or the implicit HW type (which falls back to SW). None without a rate limiter.
pub fn sw_limiter(p: &Params, size: u64) -> Option<Result<RateLimiter, String>> {
    match p.rate_limit_type {
        RateLimitType::Sw | RateLimitType::Hw => {}
        RateLimitType::Disabled | RateLimitType::Pp => return None,
    }
    if p.kind != TestKind::Bw {
        return None;
    }
    Some(RateLimiter::new(p.rate_limit, unit(p.rate_units), size, p.burst_size))
}
