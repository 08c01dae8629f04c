// Included with #[macro_use] #[path] by uverbs' layout tests (tests/layout.rs, tests/cm_layout.rs),
// next to c_probe.rs (which the including test declares as `mod c_probe` at its root).
//! The Rust side of the struct layout tests: one [`Check`] per size, alignment, field offset,
//! field size or constant, each pairing our value with the C expression that must equal it.
#![allow(dead_code)]

/// One comparison: our value, and the C expression the probe prints.
pub struct Check {
    pub what: String,
    pub rust: u64,
    pub c_expr: String,
}

/// The size of a field's type, from a projection closure.
pub fn field_size<T, F>(_: fn(&T) -> &F) -> usize {
    std::mem::size_of::<F>()
}

/// Runs the probe for `checks` (tag, headers and C prelude as [`crate::c_probe::c_values`]
/// takes them) and returns one line per check whose Rust value differs.
pub fn mismatches(tag: &str, headers: &[&str], prelude: &str, checks: &[Check]) -> Vec<String> {
    let exprs: Vec<&str> = checks.iter().map(|c| c.c_expr.as_str()).collect();
    let c = crate::c_probe::c_values(tag, headers, prelude, &exprs);
    crate::c_probe::mismatches(checks.iter().map(|k| (k.what.as_str(), k.rust, k.c_expr.as_str())), &c)
}

/// `layout!(checks; RustType = "C container type" [ @ "base.path" ] { field [= "c.path"], ... })`
///
/// Without a base path the struct is the C type itself. With one, the Rust struct models the
/// member at `base.path` of the C type (a union arm), and offsets are relative to it.
macro_rules! layout {
    ($checks:ident; $( $rust:ty = $cty:literal $(@ $base:literal)? { $( $f:ident $(= $cpath:literal)? ),* $(,)? } )*) => {$(
        {
        // A function per struct: one function holding every struct's checks took LLVM two
        // minutes to optimize (tests/layout.rs, the dev profile's opt-level 1).
        #[inline(never)]
        fn one_struct($checks: &mut Vec<$crate::layout_check::Check>) {
            use $crate::layout_check::{field_size, Check};
            let rname = stringify!($rust);
            let cty: &str = $cty;
            #[allow(unused_mut, unused_assignments)]
            let mut base: Option<&str> = None;
            $( base = Some($base); )?
            let (size_expr, align_expr) = match base {
                None => (format!("sizeof({cty})"), format!("__alignof__({cty})")),
                Some(b) => (format!("sizeof((({cty} *)0)->{b})"), format!("__alignof__((({cty} *)0)->{b})")),
            };
            $checks.push(Check { what: format!("sizeof {rname}"), rust: std::mem::size_of::<$rust>() as u64, c_expr: size_expr });
            $checks.push(Check { what: format!("alignof {rname}"), rust: std::mem::align_of::<$rust>() as u64, c_expr: align_expr });
            $(
                #[allow(unused_mut, unused_assignments)]
                let mut cpath: &str = stringify!($f);
                $( cpath = $cpath; )?
                let (off_expr, sz_expr) = match base {
                    None => (format!("offsetof({cty}, {cpath})"), format!("sizeof((({cty} *)0)->{cpath})")),
                    Some(b) => (
                        format!("(offsetof({cty}, {b}.{cpath}) - offsetof({cty}, {b}))"),
                        format!("sizeof((({cty} *)0)->{b}.{cpath})"),
                    ),
                };
                $checks.push(Check { what: format!("offsetof {rname}.{}", stringify!($f)), rust: std::mem::offset_of!($rust, $f) as u64, c_expr: off_expr });
                $checks.push(Check { what: format!("sizeof {rname}.{}", stringify!($f)), rust: field_size(|s: &$rust| &s.$f) as u64, c_expr: sz_expr });
            )*
        }
        one_struct(&mut $checks);
        }
    )*};
}

/// `consts!(checks; RUST_EXPR => "C_EXPR", ...)`
macro_rules! consts {
    ($checks:ident; $( $r:expr => $c:literal ),* $(,)?) => {$(
        $checks.push($crate::layout_check::Check { what: format!("const {}", stringify!($r)), rust: ($r) as u64, c_expr: format!("(unsigned long long)({})", $c) });
    )*};
}
