//! Every offset/size constant of `providers::rxe::layout` against the installed uAPI headers
//! (`<rdma/rdma_user_rxe.h>`, `<rdma/ib_user_verbs.h>`), through a gcc-compiled `offsetof`
//! probe. Skipped (with a note) where gcc or the headers are missing.

use std::path::Path;
use std::process::Command;

use providers::rxe::layout::C_LAYOUT;

#[test]
fn layout_matches_the_kernel_headers() {
    if !Path::new("/usr/include/rdma/rdma_user_rxe.h").exists() {
        eprintln!("skipped: /usr/include/rdma/rdma_user_rxe.h not installed");
        return;
    }
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("rxe_layout_probe");
    std::fs::create_dir_all(&dir).unwrap();
    let src = dir.join("probe.c");
    let bin = dir.join("probe");
    let mut c = String::from(
        "#include <stddef.h>\n#include <stdio.h>\n#include <rdma/rdma_user_rxe.h>\n#include <rdma/ib_user_verbs.h>\nint main(void) {\n",
    );
    for (expr, _) in C_LAYOUT {
        c.push_str(&format!("    printf(\"%zu\\n\", (size_t)({expr}));\n"));
    }
    c.push_str("    return 0;\n}\n");
    std::fs::write(&src, c).unwrap();
    let out = match Command::new("gcc").arg("-o").arg(&bin).arg(&src).output() {
        Ok(o) => o,
        Err(e) => {
            eprintln!("skipped: cannot run gcc: {e}");
            return;
        }
    };
    assert!(
        out.status.success(),
        "probe did not compile:\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let run = Command::new(&bin).output().unwrap();
    assert!(run.status.success());
    let text = String::from_utf8(run.stdout).unwrap();
    let got: Vec<usize> = text.lines().map(|l| l.parse().unwrap()).collect();
    assert_eq!(got.len(), C_LAYOUT.len());
    let mut bad = Vec::new();
    for ((expr, ours), theirs) in C_LAYOUT.iter().zip(&got) {
        if ours != theirs {
            bad.push(format!("{expr}: ours {ours}, header {theirs}"));
        }
    }
    assert!(bad.is_empty(), "layout mismatches:\n{}", bad.join("\n"));
}
