//! Replays the committed fuzz corpora (`fuzz/corpus/<target>/*`) through the same target
//! bodies the cargo-fuzz targets run (`uverbs::fuzzing`), on the stable toolchain. A missing or
//! empty corpus directory is a failure. See docs/fuzzing.md.

use std::path::PathBuf;

fn corpus_dir(target: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../fuzz/corpus")
        .join(target)
}

/// Run `f` on every file of the target's corpus; report every failing file by name.
fn replay(target: &str, f: fn(&[u8])) {
    let dir = corpus_dir(target);
    let rd = std::fs::read_dir(&dir).unwrap_or_else(|e| panic!("corpus {}: {e}", dir.display()));
    let mut files: Vec<PathBuf> = rd
        .map(|e| e.unwrap().path())
        .filter(|p| p.is_file())
        .collect();
    files.sort();
    assert!(!files.is_empty(), "corpus {} is empty", dir.display());
    let mut failed = Vec::new();
    for p in &files {
        let data = std::fs::read(p).unwrap();
        if std::panic::catch_unwind(|| f(&data)).is_err() {
            failed.push(p.display().to_string());
        }
    }
    assert!(
        failed.is_empty(),
        "{target}: {} of {} corpus files fail:\n{}",
        failed.len(),
        files.len(),
        failed.join("\n")
    );
    eprintln!("{target}: {} corpus files replayed", files.len());
}

use uverbs::fuzzing;

#[test]
fn netlink() {
    replay("netlink", fuzzing::netlink);
}

#[test]
fn sysfs() {
    replay("sysfs", fuzzing::sysfs);
}

#[test]
fn cm_event() {
    replay("cm_event", fuzzing::cm_event);
}
