//! The rate limiter options (`--rate_limit`, `--rate_units`, `--rate_limit_type`,
//! `--burst_size`) as perftest 6.06's `force_dependecies()` checks them, and the SW limiter of
//! one message size for the engine.
//!
//! perftest 6.06 makes the HW limiter the default when only `--rate_limit` is given. The HW
//! limiter sets the QP's static rate (the `enum ibv_rate` value of the rate, [`hw_rate_enum`])
//! when moving to RTR; perftest then queries the QP and, on a device that did not take it (and
//! on every non-InfiniBand port, so on every RoCE device such as rxe), falls back to the SW
//! limiter with a red message, or fails when `--rate_limit_type HW` was given explicitly.
//! Parsing checks what perftest checks and finds the rate's enum; the connect-time part is
//! `engine::hw_rate`.

use super::{conflict, ParamError, Params, RateLimitType, RateUnits, TestKind};
use crate::engine::rate::{RateLimiter, RateUnit};

/// perftest's table of rates the HW limiter accepts (the `--rate_limit` text must be one of
/// them, compared as strings) with their `enum ibv_rate` values (verbs.h).
const HW_RATES: [(&str, u8); 17] = [
    ("2.5", 2),
    ("5", 5),
    ("10", 3),
    ("14", 11),
    ("20", 6),
    ("25", 15),
    ("30", 4),
    ("40", 7),
    ("56", 12),
    ("60", 8),
    ("80", 9),
    ("100", 16),
    ("112", 13),
    ("120", 10),
    ("168", 14),
    ("200", 17),
    ("300", 18),
];

/// The `enum ibv_rate` value of a `--rate_limit` text in Gb/s, if the HW limiter takes it.
pub fn hw_rate_enum(text: &str) -> Option<u8> {
    HW_RATES.iter().find(|(t, _)| *t == text).map(|&(_, v)| v)
}

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
    if p.conn.use_rdma_cm || p.conn.work_rdma_cm {
        return Err(conflict("--rate_limit, -R/-z", "HW rate limit isn't supported yet with rdma_cm scenarios"));
    }
    if p.rate.units == RateUnits::Packets {
        return Err(conflict(
            "--rate_units p, --rate_limit_type HW",
            "Failed: pps rate limit units is not supported when setting HW rate limit (use --rate_limit_type SW)",
        ));
    }
    // perftest looks the text up only when a rate was given; without one the static rate
    // stays 0 (the port's rate), which the QP "takes" only on InfiniBand.
    p.rate.hw_rate = 0;
    if let Some(text) = rate_text {
        match hw_rate_enum(text) {
            Some(v) => p.rate.hw_rate = v,
            None => {
                let all: Vec<&str> = HW_RATES.iter().map(|(t, _)| *t).collect();
                return Err(conflict(
                    "--rate_limit",
                    &format!(
                        "Failed: Unknown rate limit value '{text}': the HW rate limiter takes one of {} Gbps; \
                         add --rate_limit_type SW for any other rate",
                        all.join(", ")
                    ),
                ));
            }
        }
    }
    p.rate.limit_type_explicit = explicit;
    Ok(())
}

/// Every message size of the run must allow at least one burst per second (perftest divides by
/// zero otherwise and stops sending after the first burst).
pub(super) fn check_sizes(p: &Params) -> Result<(), ParamError> {
    if p.kind != TestKind::Bw || p.verb.has_recv_comp() && p.duplex {
        return Ok(());
    }
    // An explicit HW limiter never falls back to SW: the QP takes the rate or the run fails.
    if p.rate.limit_type == RateLimitType::Hw && p.rate.limit_type_explicit {
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
/// or the implicit HW type once the QP did not take the static rate (the caller asks only
/// then: `engine::hw_rate`). None without a rate limiter.
pub fn sw_limiter(p: &Params, size: u64) -> Option<Result<RateLimiter, String>> {
    match p.rate.limit_type {
        RateLimitType::Sw | RateLimitType::Hw => {}
        RateLimitType::Disabled | RateLimitType::Pp => return None,
    }
    if p.kind != TestKind::Bw {
        return None;
    }
    Some(RateLimiter::new(p.rate.limit, unit(p.rate.units), size, p.rate.burst_size))
}
