//! The few C printf conversions perftest's output uses, reproduced exactly:
//! `%.Nf` / `%-W.Nf` (with C's `nan`/`inf` spellings), `%g`, and the `#` (alternate) hex forms
//! whose zero value prints without `0x`.

/// C `%.{prec}f`.
pub fn f(v: f64, prec: usize) -> String {
    if v.is_nan() {
        return if v.is_sign_negative() { "-nan".into() } else { "nan".into() };
    }
    if v.is_infinite() {
        return if v < 0.0 { "-inf".into() } else { "inf".into() };
    }
    format!("{v:.prec$}")
}

/// C `%-{width}.{prec}f` (left-aligned, space padded).
pub fn lf(v: f64, width: usize, prec: usize) -> String {
    format!("{:<width$}", f(v, prec))
}

/// C `%lf` / `%f` (6 decimals).
pub fn f6(v: f64) -> String {
    f(v, 6)
}

/// C `%g` (precision 6).
pub fn g(v: f64) -> String {
    g_prec(v, 6)
}

/// C `%.{p}g`.
pub fn g_prec(v: f64, p: usize) -> String {
    if v.is_nan() || v.is_infinite() {
        return f(v, 0);
    }
    let p = p.max(1);
    if v == 0.0 {
        return if v.is_sign_negative() { "-0".into() } else { "0".into() };
    }
    // Exponent after rounding to p significant digits.
    let e_form = format!("{:.*e}", p - 1, v);
    let (mant, exp) = match e_form.split_once('e') {
        Some((m, e)) => (m.to_string(), e.parse::<i32>().unwrap_or(0)),
        None => (e_form.clone(), 0),
    };
    if exp < -4 || exp >= p as i32 {
        let mant = strip_zeros(&mant);
        let sign = if exp < 0 { '-' } else { '+' };
        format!("{mant}e{sign}{:02}", exp.abs())
    } else {
        let decimals = (p as i32 - 1 - exp).max(0) as usize;
        strip_zeros(&format!("{v:.decimals$}"))
    }
}

fn strip_zeros(s: &str) -> String {
    if s.contains('.') {
        s.trim_end_matches('0').trim_end_matches('.').to_string()
    } else {
        s.to_string()
    }
}

/// C `%#0{width}x`: `0x`-prefixed, zero padded to `width` characters in total; zero prints as
/// plain zeros (`%#04x` of 0 is `0000`).
pub fn alt_hex(v: u64, width: usize) -> String {
    if v == 0 {
        format!("{:0width$}", 0)
    } else {
        let digits = format!("{v:x}");
        let pad = width.saturating_sub(2 + digits.len());
        format!("0x{}{digits}", "0".repeat(pad))
    }
}
