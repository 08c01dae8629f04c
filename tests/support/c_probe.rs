// Included with #[path] by the layout tests of uverbs and providers; built alone it is nothing.
//! The C side of every layout test: a program that includes the kernel's uAPI headers and prints
//! one number per C expression (`sizeof`, `offsetof`, a constant), built with gcc and run. The
//! tests compare those numbers with our Rust definitions.
//!
//! gcc and the headers (Debian's linux-libc-dev) are required: without them the test fails with
//! a message saying what to install, rather than passing without checking anything.
#![allow(dead_code)]

use std::fmt::Write as _;
use std::process::Command;

/// Build and run a probe that includes `<stddef.h>`, `<stdio.h>`, then `headers` (e.g.
/// `"rdma/ib_user_verbs.h"`) and `prelude` (extra C lines), and prints `exprs` in order.
pub fn c_values(tag: &str, headers: &[&str], prelude: &str, exprs: &[&str]) -> Vec<u64> {
    let mut src = String::from("#include <stddef.h>\n#include <stdio.h>\n");
    for h in headers {
        // The kernel's uAPI headers live in /usr/include/rdma; libc headers are multiarch and are
        // left to gcc.
        let path = std::path::Path::new("/usr/include").join(h);
        assert!(
            !h.starts_with("rdma/") || path.exists(),
            "{tag}: {} is missing: install the kernel uAPI headers (Debian: linux-libc-dev)",
            path.display()
        );
        writeln!(src, "#include <{h}>").unwrap();
    }
    src.push_str(prelude);
    src.push_str("\nint main(void) {\n");
    for (i, e) in exprs.iter().enumerate() {
        writeln!(src, "    printf(\"{i} %llu\\n\", (unsigned long long)({e}));").unwrap();
    }
    src.push_str("    return 0;\n}\n");

    let dir = std::env::temp_dir().join(format!("rperftest-{tag}-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let (c, bin) = (dir.join("probe.c"), dir.join("probe"));
    std::fs::write(&c, &src).unwrap();
    let out = Command::new("gcc")
        .args(["-std=gnu11", "-O0", "-o"])
        .arg(&bin)
        .arg(&c)
        .output()
        .unwrap_or_else(|e| panic!("{tag}: the layout tests need gcc; running it failed: {e}"));
    assert!(
        out.status.success(),
        "{tag}: the probe did not compile against the installed headers:\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let run = Command::new(&bin).output().expect("run the layout probe");
    assert!(run.status.success(), "{tag}: the probe failed");
    let _ = std::fs::remove_dir_all(&dir);
    let mut got = vec![None; exprs.len()];
    for line in String::from_utf8(run.stdout).unwrap().lines() {
        let (i, v) = line.split_once(' ').expect("probe line: index value");
        got[i.parse::<usize>().unwrap()] = Some(v.parse::<u64>().unwrap());
    }
    got.into_iter().map(|v| v.expect("the probe printed every expression")).collect()
}

/// One line per check whose Rust value differs from C's: `what: Rust r != C c (expr)`.
pub fn mismatches<'a>(checks: impl IntoIterator<Item = (&'a str, u64, &'a str)>, c: &[u64]) -> Vec<String> {
    checks
        .into_iter()
        .zip(c)
        .filter(|((_, rust, _), c)| rust != *c)
        .map(|((what, rust, expr), c)| format!("{what}: Rust {rust} != C {c} ({expr})"))
        .collect()
}
