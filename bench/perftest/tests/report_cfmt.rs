//! Our printf conversions against the C library's own snprintf on many values.

use perftest::report::cfmt;

fn c_fmt_f64(fmt: &str, v: f64) -> String {
    let mut buf = [0u8; 512];
    let f = std::ffi::CString::new(fmt).unwrap();
    // SAFETY: buffer and length match; the format takes exactly one double.
    let n = unsafe { libc::snprintf(buf.as_mut_ptr().cast(), buf.len(), f.as_ptr(), v) };
    String::from_utf8_lossy(&buf[..n as usize]).into_owned()
}

fn c_fmt_u64(fmt: &str, v: u64) -> String {
    let mut buf = [0u8; 64];
    let f = std::ffi::CString::new(fmt).unwrap();
    // SAFETY: buffer and length match; the format takes exactly one unsigned long long.
    let n = unsafe { libc::snprintf(buf.as_mut_ptr().cast(), buf.len(), f.as_ptr(), v as libc::c_ulonglong) };
    String::from_utf8_lossy(&buf[..n as usize]).into_owned()
}

fn values() -> Vec<f64> {
    let mut v = vec![
        0.0, -0.0, 0.5, 1.5, 2.5, 0.125, 0.375, 1.005, 2.675, 0.000373, 0.0001, 0.00001, 123456.0, 1234567.0, 999999.5,
        9.9999995, 19.4213, 243.492, 11483.93, 1e-10, 1e300, -3.25, 0.015, 0.045, 0.155,
    ];
    let mut x: u64 = 0x243f6a8885a308d3;
    for _ in 0..20000 {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        let mant = (x >> 11) as f64 / (1u64 << 53) as f64;
        let exp = ((x & 0x1f) as i32) - 8;
        v.push(mant * 10f64.powi(exp));
        // exact binary ties at 2 decimals, e.g. k/8
        v.push((x % 100_000) as f64 / 8.0);
    }
    v
}

#[test]
fn fixed_point_matches_libc() {
    for v in values() {
        assert_eq!(cfmt::f(v, 2), c_fmt_f64("%.2f", v), "%.2f of {v:e}");
        assert_eq!(cfmt::lf(v, 7, 2), c_fmt_f64("%-7.2f", v), "%-7.2f of {v:e}");
        assert_eq!(cfmt::lf(v, 7, 6), c_fmt_f64("%-7.6f", v), "%-7.6f of {v:e}");
        assert_eq!(cfmt::f6(v), c_fmt_f64("%lf", v), "%lf of {v:e}");
    }
    for v in [f64::NAN, f64::INFINITY, f64::NEG_INFINITY] {
        assert_eq!(cfmt::lf(v, 7, 2), c_fmt_f64("%-7.2f", v));
    }
}

#[test]
fn g_matches_libc() {
    for v in values() {
        assert_eq!(cfmt::g(v), c_fmt_f64("%g", v), "%g of {v:e}");
    }
    for v in [f64::NAN, f64::INFINITY, f64::NEG_INFINITY, 1e-5, 123456.5, 1e15] {
        assert_eq!(cfmt::g(v), c_fmt_f64("%g", v), "%g of {v:e}");
    }
}

#[test]
fn alternate_hex_matches_libc() {
    for v in
        [0u64, 1, 5, 0x11, 0x80, 0xfff, 0x1234, 0x7e1fc1, 0xa257f, 0xffffff, 0x39d, 0x7f41530e0000, u32::MAX as u64]
    {
        assert_eq!(cfmt::alt_hex(v, 4), c_fmt_u64("%#04llx", v));
        assert_eq!(cfmt::alt_hex(v, 6), c_fmt_u64("%#06llx", v));
        assert_eq!(cfmt::alt_hex(v, 8), c_fmt_u64("%#08llx", v));
        assert_eq!(cfmt::alt_hex(v, 16), c_fmt_u64("%#016llx", v));
    }
}
