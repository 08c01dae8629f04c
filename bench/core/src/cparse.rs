//! C's number scans, as the C tools we stand in for apply them to their arguments and to what
//! peers send: `strtol(s, NULL, 0)` (perftest's options, ibv_devinfo's port), `strtoul`
//! (sysfs text, as rdma-core's tools read it) and `atof`/`strtod` (perftest's version block,
//! qperf's option values). One home, so each quirk (leading-zero octal, a sign before hex, a
//! trailing exponent without digits) is written once.

/// The sign, base and digits of a C integer as `strtol(s, _, 0)` reads it once leading white
/// space is gone: an optional `-`/`+`, then `0x`/`0X` hex, a leading-zero octal, or decimal.
/// Shared by the perftest options here and `rperftest devinfo`'s port number.
pub fn c_integer_parts(t: &str) -> (bool, u32, &str) {
    let (neg, t) = match t.as_bytes().first() {
        Some(b'-') => (true, &t[1..]),
        Some(b'+') => (false, &t[1..]),
        _ => (false, t),
    };
    if let Some(h) = t.strip_prefix("0x").or_else(|| t.strip_prefix("0X")) {
        (neg, 16, h)
    } else if t.len() > 1 && t.starts_with('0') {
        (neg, 8, &t[1..])
    } else {
        (neg, 10, t)
    }
}

/// `strtol(s, &end, 0)` with `*end == '\0'` required: optional leading whitespace and sign,
/// `0x` hex, leading-zero octal, decimal. Returns None for no digits or trailing garbage, and
/// Some(Err) when the value does not fit in an i64 (strtol would saturate).
pub fn strtol0(s: &str) -> Option<Result<i64, ()>> {
    let t = s.trim_start_matches([' ', '\t', '\n', '\r', '\x0b', '\x0c']);
    let (neg, radix, digits) = c_integer_parts(t);
    if digits.is_empty() || !digits.chars().all(|c| c.is_digit(radix)) {
        return None;
    }
    let mut v: i128 = 0;
    for c in digits.chars() {
        v = v * i128::from(radix) + i128::from(c.to_digit(radix).unwrap_or(0));
        if v > i128::from(i64::MAX) + 1 {
            return Some(Err(()));
        }
    }
    let v = if neg { -v } else { v };
    Some(i64::try_from(v).map_err(|_| ()))
}

/// Where C's float scan (`atof`, `strtod`) finds its number in `s`: `(start, end)` byte offsets
/// of sign, digits, optional fraction and exponent, after the leading bytes `blank` accepts;
/// `None` when there is no digit. (qperf's option values share it, with a narrower blank.)
pub fn c_float_span(s: &str, blank: impl Fn(u8) -> bool) -> Option<(usize, usize)> {
    let b = s.as_bytes();
    let mut i = 0;
    while i < b.len() && blank(b[i]) {
        i += 1;
    }
    let start = i;
    if i < b.len() && (b[i] == b'+' || b[i] == b'-') {
        i += 1;
    }
    let mut digits = 0;
    while i < b.len() && b[i].is_ascii_digit() {
        i += 1;
        digits += 1;
    }
    if i < b.len() && b[i] == b'.' {
        i += 1;
        while i < b.len() && b[i].is_ascii_digit() {
            i += 1;
            digits += 1;
        }
    }
    if digits == 0 {
        return None;
    }
    let mut end = i;
    if i < b.len() && (b[i] == b'e' || b[i] == b'E') {
        let mut j = i + 1;
        if j < b.len() && (b[j] == b'+' || b[j] == b'-') {
            j += 1;
        }
        let exp_start = j;
        while j < b.len() && b[j].is_ascii_digit() {
            j += 1;
        }
        if j > exp_start {
            end = j;
        }
    }
    Some((start, end))
}

/// C `atof()` on a string: leading blanks, sign, digits, optional fraction and exponent.
pub fn atof(s: &str) -> f64 {
    c_float_span(s, |c| c == b' ' || (b'\t'..=b'\r').contains(&c))
        .and_then(|(start, end)| s.get(start..end))
        .and_then(|t| t.parse::<f64>().ok())
        .unwrap_or(0.0)
}

/// `strtoul(text, NULL, base)` for base 0 (auto) or 16, truncated to 64 bits (overflow
/// saturates as in C).
pub fn strtoul(text: &str, base: u32) -> u64 {
    let b = text.as_bytes();
    let mut i = 0;
    while i < b.len() && (b[i] == b' ' || (b'\t'..=b'\r').contains(&b[i])) {
        i += 1;
    }
    let mut neg = false;
    if i < b.len() && (b[i] == b'+' || b[i] == b'-') {
        neg = b[i] == b'-';
        i += 1;
    }
    let mut radix = base;
    let has_hex_prefix = i + 1 < b.len()
        && b[i] == b'0'
        && (b[i + 1] == b'x' || b[i + 1] == b'X')
        && b.get(i + 2).is_some_and(|c| c.is_ascii_hexdigit());
    if (radix == 0 || radix == 16) && has_hex_prefix {
        radix = 16;
        i += 2;
    } else if radix == 0 {
        radix = if b.get(i) == Some(&b'0') { 8 } else { 10 };
    }
    let mut v: u64 = 0;
    let mut overflow = false;
    while i < b.len() {
        let d = match (b[i] as char).to_digit(radix) {
            Some(d) => d,
            None => break,
        };
        match v.checked_mul(radix as u64).and_then(|x| x.checked_add(d as u64)) {
            Some(x) => v = x,
            None => overflow = true,
        }
        i += 1;
    }
    if overflow {
        return u64::MAX;
    }
    if neg {
        v.wrapping_neg()
    } else {
        v
    }
}

/// C `strtol(s, NULL, 0)` for a port number: decimal, `0x` hex or leading-0 octal, stopping at
/// the first bad character (so `"2abc"` is 2 and `"abc"` is 0).
pub fn strtol0_prefix(s: &str) -> i64 {
    let t = s.trim_start();
    let (neg, radix, digits) = c_integer_parts(t);
    let mut v: i64 = 0;
    for c in digits.chars() {
        match c.to_digit(radix) {
            Some(d) => v = v.saturating_mul(radix as i64).saturating_add(d as i64),
            None => break,
        }
    }
    if neg {
        -v
    } else {
        v
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn strtoul_like_c() {
        assert_eq!(strtoul("4: ACTIVE", 0), 4);
        assert_eq!(strtoul("2.5 Gb/sec (1X SDR)", 0), 2);
        assert_eq!(strtoul("100 Gb/sec (4X EDR)", 0), 100);
        assert_eq!(strtoul("0x0", 0), 0);
        assert_eq!(strtoul("0x00010000\n", 0), 0x10000);
        assert_eq!(strtoul("010", 0), 8);
        assert_eq!(strtoul("  12abc", 0), 12);
        assert_eq!(strtoul("abc", 0), 0);
        assert_eq!(strtoul("", 0), 0);
        assert_eq!(strtoul("0x", 0), 0);
        assert_eq!(strtoul("-1", 0), u64::MAX);
        assert_eq!(strtoul("99999999999999999999999", 0), u64::MAX);
        assert_eq!(strtoul("fc3c", 16), 0xfc3c);
        assert_eq!(strtoul("0xfc3c", 16), 0xfc3c);
    }

    #[test]
    fn strtol0_like_c() {
        assert_eq!(strtol0(" 0x10"), Some(Ok(16)));
        assert_eq!(strtol0("010"), Some(Ok(8)));
        assert_eq!(strtol0("-3"), Some(Ok(-3)));
        assert_eq!(strtol0("2abc"), None);
        assert_eq!(strtol0(""), None);
        assert_eq!(strtol0("99999999999999999999999"), Some(Err(())));
        assert_eq!(strtol0_prefix("2abc"), 2);
        assert_eq!(strtol0_prefix("-3"), -3);
        assert_eq!(strtol0_prefix("abc"), 0);
        assert_eq!(strtol0_prefix("99999999999999999999999"), i64::MAX);
    }

    #[test]
    fn atof_like_c() {
        assert_eq!(atof("6.29"), 6.29);
        assert_eq!(atof("  5.4.1abc"), 5.4);
        assert_eq!(atof("1e3x"), 1000.0);
        assert_eq!(atof("1e"), 1.0);
        assert_eq!(atof("abc"), 0.0);
        assert_eq!(c_float_span(" -2.5", |c| c == b' '), Some((1, 5)));
    }
}
