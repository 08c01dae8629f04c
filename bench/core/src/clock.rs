//! The time base: nanoseconds, so "cycles per second" is exactly 1e9.
//!
//! On x86_64 the ticks come from the TSC (`rdtsc`, as perftest's `get_cycles`), scaled to
//! nanoseconds by a rate measured once against CLOCK_MONOTONIC (50 ms, at the first call — the
//! tools make that call while setting up, never inside a measured loop). The reason is cost:
//! where the kernel does not use the TSC as its clocksource (virtual machines with an unstable
//! TSC, like the qemu test bed, which runs on HPET), `clock_gettime` is a real syscall plus an
//! emulated HPET read, and the loops stamp every post. [`choose`]`(Source::Monotonic)` (the
//! binary's `RPERFTEST_CLOCK=monotonic`) forces CLOCK_MONOTONIC; other architectures always use
//! it. Readings never go backwards within a
//! thread (a migration between CPUs whose TSCs disagree is clamped).

use std::cell::Cell;
use std::sync::OnceLock;
use std::time::{Duration, Instant};

/// Which clock [`now`] reads where both exist.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Source {
    /// The calibrated TSC (x86_64; elsewhere always the monotonic clock).
    #[default]
    Tsc,
    /// `CLOCK_MONOTONIC` (`RPERFTEST_CLOCK=monotonic`).
    Monotonic,
}

/// The time base is one per process, like `Instant`'s origin: the program may choose its source
/// once, before the first reading; the first reading fixes it.
static CHOSEN: OnceLock<Source> = OnceLock::new();

/// Choose the clock before the first reading. `false` (and no change) once the time base is
/// fixed, by an earlier choice or a reading.
pub fn choose(source: Source) -> bool {
    CHOSEN.set(source).is_ok()
}

/// Ticks per second of [`now`].
pub const TICKS_PER_SEC: u64 = 1_000_000_000;

fn origin() -> Instant {
    static ORIGIN: OnceLock<Instant> = OnceLock::new();
    *ORIGIN.get_or_init(Instant::now)
}

fn mono_ns() -> u64 {
    origin().elapsed().as_nanos() as u64
}

/// TSC → nanoseconds since `origin()`, in fixed point: `ns = ns0 + (ticks * mult) >> MULT_SHIFT`.
/// Integer arithmetic on purpose: the loops read the clock several times per iteration, and
/// under emulation (the qemu bed) every floating-point instruction is a helper call costing
/// tens of nanoseconds, while a 64×64→128 multiply is one native instruction.
#[derive(Clone, Copy, Debug)]
struct Tsc {
    tsc0: u64,
    ns0: u64,
    /// Nanoseconds per tick × 2^MULT_SHIFT.
    mult: u64,
}

const MULT_SHIFT: u32 = 48; // ns_per_tick < 10 (TSC > 100 MHz): ticks × mult stays below 2^116

impl Tsc {
    #[inline(always)]
    fn ns(&self, tsc: u64) -> u64 {
        let d = tsc.saturating_sub(self.tsc0);
        self.ns0 + ((d as u128 * self.mult as u128) >> MULT_SHIFT) as u64
    }
}

#[cfg(target_arch = "x86_64")]
#[inline(always)]
fn rdtsc() -> u64 {
    // SAFETY: rdtsc is unprivileged on Linux (CR4.TSD is clear for user processes) and has
    // no memory effects.
    unsafe { core::arch::x86_64::_rdtsc() }
}

/// A (monotonic ns, tsc) pair: the tightest of 16 back-to-back readings. Where clock_gettime
/// is a syscall plus an emulated HPET read (the qemu bed), one reading takes tens of µs, so the
/// bound is loose (1 ms); the 50 ms window keeps the rate's error below 1 %, typically 0.05 %.
#[cfg(target_arch = "x86_64")]
fn pair() -> Option<(u64, u64)> {
    let mut best: Option<(u64, u64, u64)> = None;
    for _ in 0..16 {
        let a = mono_ns();
        let c = rdtsc();
        let b = mono_ns();
        let gap = b - a;
        if !matches!(best, Some((g, _, _)) if g <= gap) {
            best = Some((gap, a + gap / 2, c));
        }
    }
    match best {
        Some((gap, n, c)) if gap < 1_000_000 => Some((n, c)),
        _ => None,
    }
}

#[cfg(target_arch = "x86_64")]
fn calibrate() -> Option<Tsc> {
    if *CHOSEN.get_or_init(Source::default) == Source::Monotonic {
        return None;
    }
    let (n0, c0) = pair()?;
    // Sleep through the window rather than spin on the clock: where clock_gettime is a
    // syscall (the qemu bed), spinning made thousands of them at every start.
    let until = n0 + Duration::from_millis(50).as_nanos() as u64;
    loop {
        let now = mono_ns();
        if now >= until {
            break;
        }
        std::thread::sleep(Duration::from_nanos(until - now));
    }
    let (n1, c1) = pair()?;
    if c1 <= c0 || n1 <= n0 {
        return None;
    }
    let hz = (c1 - c0) as f64 * 1e9 / (n1 - n0) as f64;
    // A plausible TSC: 100 MHz .. 20 GHz; anything else means rdtsc is not a usable clock here.
    if !(1e8..2e10).contains(&hz) {
        return None;
    }
    let mult = (1e9 / hz * (1u64 << MULT_SHIFT) as f64).round() as u64;
    Some(Tsc { tsc0: c1, ns0: n1, mult })
}

#[cfg(not(target_arch = "x86_64"))]
fn calibrate() -> Option<Tsc> {
    None
}

fn tsc() -> Option<Tsc> {
    static TSC: OnceLock<Option<Tsc>> = OnceLock::new();
    *TSC.get_or_init(calibrate)
}

thread_local! {
    static LAST: Cell<u64> = const { Cell::new(0) };
}

/// Nanoseconds since the first call in this process.
#[inline]
pub fn now() -> u64 {
    #[cfg(target_arch = "x86_64")]
    if let Some(t) = tsc() {
        let ns = t.ns(rdtsc());
        return LAST.with(|l| {
            let v = ns.max(l.get());
            l.set(v);
            v
        });
    }
    mono_ns()
}

/// Time stamps for a measured loop, taken raw and converted after it.
///
/// [`now`] converts every reading (a multiply, a shift and a thread-local clamp); a latency
/// loop that stamps each iteration needs only the reading itself, as perftest's `get_cycles`.
/// `read` is one `rdtsc` where [`now`] uses the TSC (else the monotonic clock in ns), and
/// [`RawStamps::to_ns`] turns a slice of readings into what [`now`] would have returned.
#[derive(Clone, Copy, Debug)]
pub struct RawStamps {
    tsc: Option<Tsc>,
}

impl RawStamps {
    /// The clock [`now`] uses (calibrating it on the first call, as [`now`] does).
    pub fn get() -> Self {
        RawStamps { tsc: tsc() }
    }

    /// One raw reading: TSC ticks, or ns where the TSC is not used.
    #[inline(always)]
    pub fn read(&self) -> u64 {
        #[cfg(target_arch = "x86_64")]
        if self.tsc.is_some() {
            return rdtsc();
        }
        mono_ns()
    }

    /// Convert readings from [`RawStamps::read`], in the order taken, to [`now`]'s ns in
    /// place, never going backwards within the slice. (Not clamped against [`now`]'s own last
    /// value: the loop may read [`now`] between stamps, later than the stamps themselves.)
    pub fn to_ns(&self, raw: &mut [u64]) {
        let mut last = 0;
        for v in raw.iter_mut() {
            let ns = match self.tsc {
                Some(t) => t.ns(*v),
                None => *v,
            };
            last = last.max(ns);
            *v = last;
        }
    }
}

/// Which clock [`now`] reads (for diagnostics).
pub fn source() -> &'static str {
    if tsc().is_some() {
        "tsc"
    } else {
        "monotonic"
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ticks_track_the_monotonic_clock() {
        let a = now();
        let m0 = Instant::now();
        std::thread::sleep(Duration::from_millis(50));
        let b = now();
        let real = m0.elapsed().as_nanos() as u64;
        assert!(b > a);
        let got = b - a;
        // Within 5 % (a loaded CI machine can stretch the sleep, not the ratio).
        assert!(got as f64 > real as f64 * 0.95 && (got as f64) < real as f64 * 1.05, "{got} vs {real} ({})", source());
    }

    #[test]
    fn fixed_point_conversion() {
        // 2.5 GHz: 0.4 ns per tick.
        let t = Tsc { tsc0: 1000, ns0: 7, mult: (0.4 * (1u64 << MULT_SHIFT) as f64) as u64 };
        assert_eq!(t.ns(1000), 7);
        assert_eq!(t.ns(999), 7, "a TSC behind the calibration point clamps to it");
        assert!((t.ns(1000 + 2_500_000_000) as i64 - 1_000_000_007).abs() <= 1);
        // A day of ticks does not overflow.
        let day = 2_500_000_000u64 * 86_400;
        assert!((t.ns(1000 + day) as i128 - (86_400_000_000_000i128 + 7)).abs() < 1_000);
    }

    #[test]
    fn raw_stamps_convert_to_what_now_reads() {
        let r = RawStamps::get();
        let before = now();
        let mut v: Vec<u64> = (0..1000).map(|_| r.read()).collect();
        std::thread::sleep(Duration::from_millis(20));
        v.push(r.read());
        r.to_ns(&mut v);
        let after = now();
        assert!(v.windows(2).all(|w| w[1] >= w[0]), "converted stamps go backwards");
        assert!(v[0] >= before && *v.last().unwrap() <= after, "{before} {:?} {after}", (v[0], v.last()));
        // The sleep shows up in the converted span (at least 20 ms, well under a second).
        let span = v[1000] - v[999];
        assert!((20_000_000..1_000_000_000).contains(&span), "span {span} ns ({})", source());
    }

    #[test]
    fn raw_stamps_conversion_clamps_like_now() {
        let r = RawStamps { tsc: Some(Tsc { tsc0: 1000, ns0: 0, mult: 1u64 << MULT_SHIFT }) };
        // A reading behind an earlier one (a migration between CPUs whose TSCs disagree)
        // converts to the earlier value, as `now` clamps.
        let mut v = [3000, 6000, 4000, 10_000];
        r.to_ns(&mut v);
        assert_eq!(v, [2000, 5000, 5000, 9000]);
    }

    #[test]
    fn never_backwards() {
        let mut last = now();
        for _ in 0..100_000 {
            let t = now();
            assert!(t >= last);
            last = t;
        }
    }
}
