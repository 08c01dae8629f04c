//! Fixed-size records (`N` bytes each, encoded by the caller) in memory up to a threshold,
//! then in an unnamed temporary file: what lets the coordinator hold a record per pair of a
//! 1,024-node run without that many in memory ([`super::cells`] keeps its 64-byte cells here).
//!
//! The file is created in a directory the caller names (the run's `--out`: a library does not
//! pick a place on its own) and unlinked at once, so nothing is left behind, even on a crash;
//! it lives as long as its descriptor. Records are read and written by `pread`/`pwrite` through
//! a one-block cache ([`BLOCK`] bytes, written back when another block is needed), so that the
//! sequential passes of the judgement and the reports are a syscall per block, not per record.
//!
//! A failure of the file (the disk full, an I/O error) never panics: it is kept, the first one
//! only, and [`Spill::error`] hands it to the caller, who checks it where the run can stop
//! cleanly; a read that failed gives zeroes.

use std::cell::RefCell;
use std::fs::{File, OpenOptions};
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

/// The cache's block: 1,024 cells of 64 bytes.
pub const BLOCK: usize = 64 * 1024;

/// Records in memory up to `threshold`, then all of them in the file.
pub struct Spill<const N: usize> {
    len: usize,
    mem: Vec<[u8; N]>,
    threshold: usize,
    /// Where the file goes; None: never spilled (tests, small uses).
    dir: Option<PathBuf>,
    file: Option<RefCell<Cached>>,
    /// The first failure of the file, in words.
    error: RefCell<Option<String>>,
    /// Creating the file failed once: the records stay in memory, not tried again.
    gave_up: bool,
}

/// The file and its one cached block.
struct Cached {
    file: File,
    block: Option<usize>,
    buf: Vec<u8>,
    dirty: bool,
}

impl<const N: usize> Default for Spill<N> {
    /// Memory only.
    fn default() -> Self {
        Spill::new(None, usize::MAX)
    }
}

impl<const N: usize> Spill<N> {
    const PER_BLOCK: usize = {
        assert!(
            N > 0 && BLOCK.is_multiple_of(N),
            "a record size that divides the block"
        );
        BLOCK / N
    };

    /// Records in memory up to `threshold` of them, then in a file in `dir` (None: memory).
    pub fn new(dir: Option<&Path>, threshold: usize) -> Self {
        Spill {
            len: 0,
            mem: Vec::new(),
            threshold,
            dir: dir.map(Path::to_path_buf),
            file: None,
            error: RefCell::new(None),
            gave_up: false,
        }
    }

    pub fn len(&self) -> usize {
        self.len
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Are the records in the file?
    pub fn spilled(&self) -> bool {
        self.file.is_some()
    }

    /// The first failure of the file, if any (then some records may read as zeroes).
    pub fn error(&self) -> Result<(), String> {
        self.error.borrow().clone().map_or(Ok(()), Err)
    }

    /// Notes a failure the caller found (a record that does not decode); the first one stays.
    pub fn fail(&self, why: String) {
        self.error.borrow_mut().get_or_insert(why);
    }

    pub fn push(&mut self, rec: [u8; N]) {
        if self.file.is_none() && self.len >= self.threshold && !self.gave_up {
            self.spill();
        }
        if self.file.is_some() {
            // Put before it counts: the cache reads only the records already there.
            self.put(self.len, rec);
        } else {
            self.mem.push(rec);
        }
        self.len += 1;
    }

    /// The last record goes.
    pub fn pop(&mut self) {
        self.len = self.len.saturating_sub(1);
        if self.file.is_none() {
            self.mem.pop();
        }
    }

    pub fn get(&self, i: usize) -> [u8; N] {
        assert!(i < self.len, "record {i} of {}", self.len);
        let Some(f) = &self.file else {
            return self.mem[i];
        };
        let mut out = [0; N];
        let mut c = f.borrow_mut();
        match c.load(i / Self::PER_BLOCK, self.len, N) {
            Ok(()) => out.copy_from_slice(&c.buf[(i % Self::PER_BLOCK) * N..][..N]),
            Err(e) => self.fail(format!("cannot read back the records' file: {e}")),
        }
        out
    }

    pub fn set(&mut self, i: usize, rec: [u8; N]) {
        assert!(i < self.len, "record {i} of {}", self.len);
        if self.file.is_some() {
            self.put(i, rec);
        } else {
            self.mem[i] = rec;
        }
    }

    /// Record `i` (one there, or the next one) into the cache.
    fn put(&mut self, i: usize, rec: [u8; N]) {
        let (len, per) = (self.len, Self::PER_BLOCK);
        let Some(f) = self.file.as_mut().map(RefCell::get_mut) else {
            return;
        };
        match f.load(i / per, len, N) {
            Ok(()) => {
                f.buf[(i % per) * N..][..N].copy_from_slice(&rec);
                f.dirty = true;
            }
            Err(e) => self.fail(format!("cannot write the records' file: {e}")),
        }
    }

    /// The records so far move to a new file; on failure they stay in memory, the error kept.
    fn spill(&mut self) {
        let Some(dir) = self.dir.clone() else {
            return;
        };
        let c = match unnamed_file(&dir) {
            Ok(file) => Cached {
                file,
                block: None,
                buf: vec![0; BLOCK],
                dirty: false,
            },
            Err(e) => {
                self.gave_up = true;
                return self.fail(format!(
                    "cannot make a temporary file in {} for the records: {e}",
                    dir.display()
                ));
            }
        };
        let bytes: Vec<u8> = std::mem::take(&mut self.mem).concat();
        if let Err(e) = c.file.write_all_at(&bytes, 0) {
            self.mem = bytes
                .chunks_exact(N)
                .map(|b| b.try_into().expect("N bytes"))
                .collect();
            self.gave_up = true;
            return self.fail(format!("cannot write the records' file: {e}"));
        }
        self.file = Some(RefCell::new(c));
    }
}

impl Cached {
    /// Block `b` into the cache (the one there written back first): its records below `len`.
    fn load(&mut self, b: usize, len: usize, n: usize) -> std::io::Result<()> {
        if self.block == Some(b) {
            return Ok(());
        }
        self.write_back(len, n)?;
        let per = BLOCK / n;
        let have = len.saturating_sub(b * per).min(per) * n;
        self.file
            .read_exact_at(&mut self.buf[..have], (b * BLOCK) as u64)?;
        self.block = Some(b);
        Ok(())
    }

    fn write_back(&mut self, len: usize, n: usize) -> std::io::Result<()> {
        let Some(b) = self.block.filter(|_| self.dirty) else {
            return Ok(());
        };
        let per = BLOCK / n;
        let have = len.saturating_sub(b * per).min(per) * n;
        self.file
            .write_all_at(&self.buf[..have], (b * BLOCK) as u64)?;
        self.dirty = false;
        Ok(())
    }
}

/// A new file in `dir`, unlinked at once: only its descriptor holds it.
fn unnamed_file(dir: &Path) -> std::io::Result<File> {
    static NEXT: AtomicU64 = AtomicU64::new(0);
    loop {
        let name = format!(
            ".rperftest-spill-{}-{}",
            std::process::id(),
            NEXT.fetch_add(1, Ordering::Relaxed)
        );
        let path = dir.join(name);
        match OpenOptions::new()
            .read(true)
            .write(true)
            .create_new(true)
            .open(&path)
        {
            Ok(f) => {
                std::fs::remove_file(&path)?;
                return Ok(f);
            }
            // Another process's file of that name (a pid reused): the next name.
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => continue,
            Err(e) => return Err(e),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rec(i: usize) -> [u8; 64] {
        let mut r = [0u8; 64];
        r[..8].copy_from_slice(&(i as u64).to_le_bytes());
        r[63] = (i % 251) as u8;
        r
    }

    fn dir(tag: &str) -> PathBuf {
        let d = std::env::temp_dir().join(format!("rpt-spill-{tag}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        std::fs::create_dir_all(&d).expect("dir");
        d
    }

    #[test]
    fn records_past_the_threshold_go_to_an_unlinked_file_and_read_back() {
        let d = dir("rw");
        let mut s: Spill<64> = Spill::new(Some(&d), 100);
        for i in 0..100 {
            s.push(rec(i));
        }
        assert!(!s.spilled());
        // Past the threshold, across several blocks (1,024 records each).
        for i in 100..5000 {
            s.push(rec(i));
        }
        assert!(s.spilled());
        assert_eq!(
            std::fs::read_dir(&d).expect("dir").count(),
            0,
            "the file is unlinked"
        );
        // Random access, writes in place, reads in another block between them.
        for i in (0..5000).step_by(7) {
            assert_eq!(s.get(i), rec(i), "{i}");
        }
        s.set(3, rec(9999));
        s.set(4999, rec(8888));
        assert_eq!((s.get(4999), s.get(3)), (rec(8888), rec(9999)));
        s.pop();
        s.push(rec(7777));
        assert_eq!(
            (s.len(), s.get(4999), s.get(4998)),
            (5000, rec(7777), rec(4998))
        );
        assert!(s.error().is_ok());
        let _ = std::fs::remove_dir_all(&d);
    }

    #[test]
    fn small_records_and_memory_only() {
        let mut s: Spill<4> = Spill::default();
        for i in 0..70_000u32 {
            s.push(i.to_le_bytes());
        }
        assert!(!s.spilled());
        let d = dir("u32");
        let mut f: Spill<4> = Spill::new(Some(&d), 0);
        for i in 0..70_000u32 {
            f.push(i.to_le_bytes());
        }
        assert!(f.spilled());
        assert!((0..70_000u32).all(|i| f.get(i as usize) == i.to_le_bytes()));
        let _ = std::fs::remove_dir_all(&d);
    }

    #[test]
    fn a_directory_that_cannot_hold_the_file_is_an_error_not_a_panic() {
        let mut s: Spill<64> = Spill::new(Some(Path::new("/nonexistent/rpt-spill")), 2);
        for i in 0..10 {
            s.push(rec(i));
        }
        let e = s.error().expect_err("no directory");
        assert!(
            e.starts_with("cannot make a temporary file in /nonexistent/rpt-spill"),
            "{e}"
        );
        // Nothing lost: the records stayed in memory.
        assert!((0..10).all(|i| s.get(i) == rec(i)));
    }

    #[cfg(target_os = "linux")]
    #[test]
    fn a_full_disk_is_an_error_not_a_panic() {
        // /dev/full: every write fails with ENOSPC. Stand in for the file via the cache.
        let Ok(full) = OpenOptions::new().read(true).write(true).open("/dev/full") else {
            eprintln!("skipped: no /dev/full");
            return;
        };
        let mut s: Spill<64> = Spill::new(None, 0);
        s.file = Some(RefCell::new(Cached {
            file: full,
            block: None,
            buf: vec![0; BLOCK],
            dirty: false,
        }));
        for i in 0..3000 {
            s.push(rec(i));
        }
        let e = s.error().expect_err("disk full");
        assert!(e.starts_with("cannot write the records' file"), "{e}");
    }
}
