//! `--aes_xts`: the key material and the crypto objects of one side, as perftest 6.06 uses them.
//!
//! * Credentials (perftest's `set_valid_cred`, read in `ctx_open_device` before the device is
//!   opened): the file holds 48 lines, one byte each in hex; more than 48 lines is perftest's
//!   `Invalid credentials file`. perftest reads each line with `strtol(line, 16)` and leaves
//!   missing bytes uninitialised; rperftest refuses a line that is not one hex byte and a file
//!   of fewer than 48 lines instead.
//! * Data encryption keys (perftest's `set_valid_dek`, in `ctx_init`, once per key): perftest
//!   runs `system("<app> <kek_path> /tmp/<6 random [a-z0-9]>")`, reads the file the app wrote
//!   (40 lines, one hex byte each: the key wrapped by the device's key-encryption key) and
//!   removes it. rperftest runs the app directly (no shell: the path is the program, the two
//!   paths its arguments), with a timeout, and removes the file whatever happened.
//! * Objects (perftest's `ctx_open_device` / `ctx_init`): a DEVX context and crypto login, one
//!   DEK per key, one crypto mkey (`max_entries` 1) per QP; before every post on the encrypted
//!   paths a UMR configures the QP's mkey over the whole buffer with the next DEK (round
//!   robin), and the data request reads through the mkey at address 0
//!   ([`super::verbs::VerbsEndpoint`]).

use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};

use uverbs::dv::{CryptoAttr, CryptoProvider};
use uverbs::provider::Provider;


/// perftest's `AES_XTS_CREDENTIALS_SIZE`.
pub const CREDENTIALS_SIZE: usize = 48;
/// perftest's `AES_XTS_DEK_SIZE`: the wrapped key's bytes.
pub const DEK_SIZE: usize = 40;
/// perftest's `AES_XTS_INLINE`: the QPs' max_inline_data with `--aes_xts`.
pub const AES_XTS_INLINE: u32 = 512;
/// How long the data-encryption-key app may run (perftest waits forever).
pub const KEY_APP_TIMEOUT: Duration = Duration::from_secs(60);

/// Parse `text` as perftest's key files: one byte per line in hex (`0x` prefix allowed,
/// surrounding blanks ignored), at most `max` lines. `Err((perftest_line, ours))`: perftest's
/// own message where it has one (`None` where perftest would go on with garbage), and ours.
pub fn parse_hex_lines(text: &str, max: usize, perftest_invalid: &'static str) -> Result<Vec<u8>, (Option<&'static str>, String)> {
    let mut out = Vec::with_capacity(max);
    // getline(): every '\n' ends a line; a last line without one still counts.
    let body = text.strip_suffix('\n').unwrap_or(text);
    if text.is_empty() {
        return Err((None, format!("the file is empty; want {max} lines, one hex byte each")));
    }
    for (i, line) in body.split('\n').enumerate() {
        if i >= max {
            return Err((Some(perftest_invalid), format!("more than {max} lines; want {max} lines, one hex byte each")));
        }
        let t = line.trim();
        let h = t.strip_prefix("0x").or_else(|| t.strip_prefix("0X")).unwrap_or(t);
        match u8::from_str_radix(h, 16) {
            Ok(b) if !h.is_empty() && !h.starts_with('+') => out.push(b),
            _ => {
                let shown: String = line.chars().take(40).flat_map(char::escape_default).collect();
                return Err((None, format!("line {} is '{shown}', not a byte in hex (00..ff)", i + 1)));
            }
        }
    }
    if out.len() < max {
        return Err((None, format!("{} lines; want {max} lines, one hex byte each", out.len())));
    }
    Ok(out)
}

/// Read the `--credentials_path` file. `Err`: the whole message, ours first, then perftest's
/// lines in its order up to the tool's ` Couldn't get context for the device`.
pub fn read_credentials(path: &str) -> Result<[u8; CREDENTIALS_SIZE], String> {
    let tail = "Couldn't set credentials\n Couldn't get context for the device";
    let text = match std::fs::read(path) {
        Ok(b) => String::from_utf8_lossy(&b).into_owned(),
        Err(e) => {
            return Err(format!(
                " --credentials_path {path}: {e} (want a file of {CREDENTIALS_SIZE} lines, one hex byte each)\nCan not open the credentials file\n{tail}"
            ))
        }
    };
    match parse_hex_lines(&text, CREDENTIALS_SIZE, "Invalid credentials file") {
        Ok(v) => {
            let mut c = [0u8; CREDENTIALS_SIZE];
            c.copy_from_slice(&v);
            Ok(c)
        }
        Err((pt, ours)) => {
            let mut m = format!(" --credentials_path {path}: {ours}\n");
            if let Some(l) = pt {
                m.push_str(l);
                m.push('\n');
            }
            m.push_str(tail);
            Err(m)
        }
    }
}

/// A fresh `/tmp/<6 of [a-z0-9]>` name that does not exist yet (perftest's `file_path`).
fn temp_key_path() -> PathBuf {
    const LETTERS: &[u8] = b"abcdefghijklmnopqrstuvwxyz1234567890";
    use std::hash::{BuildHasher, Hasher};
    let mut h = std::collections::hash_map::RandomState::new().build_hasher();
    h.write_u128(std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_nanos()));
    h.write_u32(std::process::id());
    let mut x = h.finish();
    loop {
        let mut name = String::from("/tmp/");
        for _ in 0..6 {
            name.push(LETTERS[(x % LETTERS.len() as u64) as usize] as char);
            x /= LETTERS.len() as u64;
        }
        let p = PathBuf::from(name);
        if !p.exists() {
            return p;
        }
        // Taken: another name from a fresh hash.
        h.write_u8(1);
        x = h.finish();
    }
}

/// Removes the key file when dropped (after a read, a failure or a timeout alike).
struct Remove<'a>(&'a Path);
impl Drop for Remove<'_> {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(self.0);
    }
}

/// Run the data-encryption-key app once (`<app> <kek_path> <tmpfile>`) and read the wrapped
/// key it wrote. `Err`: ours, then perftest's lines up to `Failed to set dek`.
pub fn wrapped_key(app: &str, kek_path: &str, timeout: Duration) -> Result<[u8; DEK_SIZE], String> {
    let file = temp_key_path();
    let _rm = Remove(&file);
    let shown = format!("{app} {kek_path} {}", file.display());
    let tail = "Failed to set dek";
    let failed = |ours: String| format!(" --data_enc_key_app_path: {ours}\nExecution of {shown} has failed\n{tail}");
    let mut child = match Command::new(app).arg(kek_path).arg(&file).stdin(Stdio::null()).stderr(Stdio::piped()).spawn() {
        Ok(c) => c,
        Err(e) => return Err(failed(format!("cannot run {app}: {e} (give the path of an executable; no shell is involved)"))),
    };
    let deadline = Instant::now() + timeout;
    let status = loop {
        match child.try_wait() {
            Ok(Some(s)) => break s,
            Ok(None) if Instant::now() >= deadline => {
                // Our own child: end it and reap it.
                let _ = child.kill();
                let _ = child.wait();
                return Err(failed(format!("{app} did not finish within {} s; it was stopped", timeout.as_secs())));
            }
            Ok(None) => std::thread::sleep(Duration::from_millis(20)),
            Err(e) => {
                let _ = child.kill();
                let _ = child.wait();
                return Err(failed(format!("waiting for {app}: {e}")));
            }
        }
    };
    if !status.success() {
        let mut err = String::new();
        if let Some(mut s) = child.stderr.take() {
            let _ = s.by_ref().take(4096).read_to_string(&mut err);
        }
        let first = err.lines().find(|l| !l.trim().is_empty()).map(|l| format!(": {}", l.trim())).unwrap_or_default();
        return Err(failed(format!("{app} {status}{first}")));
    }
    let text = match std::fs::read(&file) {
        Ok(b) => String::from_utf8_lossy(&b).into_owned(),
        Err(e) => {
            return Err(format!(
                " --data_enc_key_app_path: {app} ended but {} cannot be read: {e}\nCan not open the data_encryption_key file\n{tail}",
                file.display()
            ))
        }
    };
    match parse_hex_lines(&text, DEK_SIZE, "Invalid data_encryption_key file") {
        Ok(v) => {
            let mut k = [0u8; DEK_SIZE];
            k.copy_from_slice(&v);
            Ok(k)
        }
        Err((pt, ours)) => {
            let mut m = format!(" --data_enc_key_app_path: the key file {app} wrote: {ours}\n");
            if let Some(l) = pt {
                m.push_str(l);
                m.push('\n');
            }
            m.push_str(tail);
            Err(m)
        }
    }
}

/// perftest's `ctx_open_device` with `--aes_xts` (every tool but the atomic ones, which open
/// the device plainly): read the credentials, open a DEVX context (`mlx5dv_open_device`), log
/// in to the crypto engine, and hand the context to `user`. `Err`: the lines to print (ours,
/// then perftest's, ending with the tool's ` Couldn't get context for the device`).
pub fn open_devx<U: providers::ContextUser>(
    dev: &uverbs::provider::DeviceDesc,
    settings: &providers::ProviderSettings,
    credentials_path: &str,
    user: U,
) -> Result<U::Output, String> {
    let cred = read_credentials(credentials_path)?;
    if providers::provider_name(dev.driver_id).is_none() {
        return Err(format!(
            " --aes_xts: {}: no userspace provider for driver id {} in this build\nCouldn't get context for the device\n Couldn't get context for the device",
            dev.ibdev, dev.driver_id
        ));
    }
    // mlx5dv_open_device fails on a device that is not mlx5 (EOPNOTSUPP): perftest prints its
    // own line, then the tool's.
    providers::open_devx(dev, settings, LoginThen { cred: &cred, user }).map_err(|e| {
        format!(" --aes_xts needs an mlx5 device with DEVX (AES-XTS crypto offload): {e}\nCouldn't get context for the device\n Couldn't get context for the device")
    })?
}

/// [`open_devx`] without a run: open, log in, close (`-z`, whose device comes with the rdma_cm
/// connection, checks this before connecting, as perftest opens the device first).
pub fn check_devx(dev: &uverbs::provider::DeviceDesc, settings: &providers::ProviderSettings, credentials_path: &str) -> Result<(), String> {
    struct Nothing;
    impl providers::ContextUser for Nothing {
        type Output = ();
        fn run<P: Provider>(self, _ctx: Arc<uverbs::objects::Context<P>>) {}
    }
    open_devx(dev, settings, credentials_path, Nothing)
}

/// Log the freshly opened DEVX context in to the crypto engine, then hand it to `user`.
struct LoginThen<'a, U> {
    cred: &'a [u8; CREDENTIALS_SIZE],
    user: U,
}

impl<U: providers::ContextUser> providers::Mlx5User for LoginThen<'_, U> {
    type Output = Result<U::Output, String>;
    fn run(self, ctx: Arc<uverbs::objects::Context<providers::mlx5::Mlx5>>) -> Self::Output {
        if let Err(e) = ctx.provider().crypto_login(self.cred) {
            return Err(format!(
                " --aes_xts: crypto login with --credentials_path failed: {e}\nCouldn't login. err={}.\n Couldn't get context for the device",
                e.errno.unwrap_or(libc::EINVAL)
            ));
        }
        Ok(self.user.run_mlx5(ctx))
    }
}

/// What one side needs to set up AES-XTS (`params::aes::AesXts::engine_setup` builds it).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CryptoSetup {
    pub attr: CryptoAttr,
    pub keys: u16,
    pub app_path: String,
    pub kek_path: String,
    /// Does this tool post through the mkey (perftest's `use_enc`: RC SEND, WRITE and READ; the
    /// atomic tools create the keys but post as usual).
    pub encrypted_posts: bool,
}

/// One side's DEKs and per-QP crypto mkeys, and the round-robin DEK counter (perftest's
/// `ctx->dek_number`, shared by all QPs). `D`/`K`: the DEK and mkey objects
/// ([`uverbs::objects::Dek`], [`uverbs::objects::CryptoMkey`]); posting through them is
/// [`super::dv::CryptoPosts`].
pub struct CryptoState<D, K> {
    pub(super) mkeys: Vec<K>,
    pub(super) deks: Vec<D>,
    pub(super) next_dek: u64,
    pub(super) attr: CryptoAttr,
    pub(super) encrypted_posts: bool,
}

impl<D, K> CryptoState<D, K> {
    /// perftest's `ctx_init` with `--aes_xts`: per key run the app and create the DEK
    /// (`new_dek` from the wrapped key), then one crypto mkey per QP (`new_mkey`). `Err`: the
    /// lines to print (ours, then perftest's).
    pub fn create(
        s: &CryptoSetup,
        num_qps: usize,
        key_app_timeout: Duration,
        mut new_dek: impl FnMut(&[u8]) -> uverbs::Result<D>,
        mut new_mkey: impl FnMut() -> uverbs::Result<K>,
    ) -> Result<Self, String> {
        let mut deks = Vec::with_capacity(usize::from(s.keys));
        for i in 0..s.keys {
            let key = wrapped_key(&s.app_path, &s.kek_path, key_app_timeout)?;
            let dek = new_dek(&key).map_err(|e| format!(" --aes_xts: data encryption key #{i}: {e}\nFailed to create dek"))?;
            deks.push(dek);
        }
        let mut mkeys = Vec::with_capacity(num_qps);
        for q in 0..num_qps {
            let m = new_mkey().map_err(|e| format!(" --aes_xts: crypto mkey for QP #{q}: {e}\nFailed to create mkey"))?;
            mkeys.push(m);
        }
        Ok(CryptoState { mkeys, deks, next_dek: 0, attr: s.attr, encrypted_posts: s.encrypted_posts })
    }

    /// The DEK for the next configure (perftest: `dek[dek_number++ % keys]`).
    pub(super) fn take_dek_index(&mut self) -> usize {
        let i = (self.next_dek % self.deks.len().max(1) as u64) as usize;
        self.next_dek = self.next_dek.wrapping_add(1);
        i
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lines(n: usize) -> String {
        (0..n).map(|i| format!("{:x}\n", i * 5 % 256)).collect()
    }

    #[test]
    fn credentials_are_48_hex_lines() {
        let v = parse_hex_lines(&lines(48), 48, "Invalid credentials file").unwrap();
        assert_eq!(v.len(), 48);
        assert_eq!(v[3], 15);
        // 0x prefix, blanks, upper case, no final newline
        let mut t = String::new();
        for i in 0..47 {
            t.push_str(&format!(" 0x{:02X} \n", i));
        }
        t.push_str("ff");
        let v = parse_hex_lines(&t, 48, "x").unwrap();
        assert_eq!(v[46], 46);
        assert_eq!(v[47], 0xff);
    }

    #[test]
    fn too_many_lines_is_perftests_invalid_file() {
        let e = parse_hex_lines(&lines(49), 48, "Invalid credentials file").unwrap_err();
        assert_eq!(e.0, Some("Invalid credentials file"));
    }

    #[test]
    fn short_empty_and_garbage_files_are_refused() {
        let e = parse_hex_lines(&lines(47), 48, "I").unwrap_err();
        assert_eq!(e.0, None);
        assert!(e.1.contains("47 lines"), "{}", e.1);
        assert!(parse_hex_lines("", 48, "I").unwrap_err().1.contains("empty"));
        let mut t = lines(10);
        t.push_str("zz\n");
        t.push_str(&lines(37));
        let e = parse_hex_lines(&t, 48, "I").unwrap_err();
        assert!(e.1.contains("line 11 is 'zz'"), "{}", e.1);
        let mut t = lines(47);
        t.push_str("100\n");
        assert!(parse_hex_lines(&t, 48, "I").is_err(), "256 is not a byte");
        let mut t = lines(47);
        t.push('\n');
        assert!(parse_hex_lines(&t, 48, "I").is_err(), "an empty line is not a byte");
        let mut t = lines(47);
        t.push_str("+1\n");
        assert!(parse_hex_lines(&t, 48, "I").is_err());
    }

    #[test]
    fn credentials_file_errors_end_with_perftests_lines() {
        let e = read_credentials("/nonexistent/rperftest-cred").unwrap_err();
        let l: Vec<&str> = e.lines().collect();
        assert_eq!(l.len(), 4, "{e}");
        assert!(l[0].contains("--credentials_path /nonexistent/rperftest-cred"));
        assert_eq!(&l[1..], ["Can not open the credentials file", "Couldn't set credentials", " Couldn't get context for the device"]);
        let dir = std::env::temp_dir().join(format!("rperftest-cred-{}", std::process::id()));
        std::fs::write(&dir, lines(50)).unwrap();
        let e = read_credentials(dir.to_str().unwrap()).unwrap_err();
        let l: Vec<&str> = e.lines().collect();
        assert_eq!(&l[1..], ["Invalid credentials file", "Couldn't set credentials", " Couldn't get context for the device"]);
        std::fs::write(&dir, lines(48)).unwrap();
        assert_eq!(read_credentials(dir.to_str().unwrap()).unwrap()[1], 5);
        let _ = std::fs::remove_file(&dir);
    }

    fn script(name: &str, body: &str) -> PathBuf {
        use std::os::unix::fs::PermissionsExt;
        let p = std::env::temp_dir().join(format!("rperftest-keyapp-{}-{name}", std::process::id()));
        std::fs::write(&p, format!("#!/bin/sh\n{body}\n")).unwrap();
        std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o755)).unwrap();
        p
    }

    #[test]
    fn key_app_writes_the_wrapped_key_and_the_file_goes() {
        // The app gets the kek path and the output path; it writes 40 lines (the kek's first
        // line, then 1..39) and records the output path so the test can check it is removed.
        let log = std::env::temp_dir().join(format!("rperftest-keyapp-{}-log", std::process::id()));
        let kek = std::env::temp_dir().join(format!("rperftest-keyapp-{}-kek", std::process::id()));
        std::fs::write(&kek, "a5\n").unwrap();
        let app = script(
            "ok",
            &format!("echo \"$2\" > {log}\nhead -n 1 \"$1\" > \"$2\"\ni=1; while [ $i -lt 40 ]; do printf '%x\\n' $i >> \"$2\"; i=$((i+1)); done", log = log.display()),
        );
        let k = wrapped_key(app.to_str().unwrap(), kek.to_str().unwrap(), Duration::from_secs(20)).unwrap();
        assert_eq!(k[0], 0xa5);
        assert_eq!(k[39], 39);
        let out = std::fs::read_to_string(&log).unwrap();
        let out = out.trim();
        assert!(out.starts_with("/tmp/") && out.len() == 11, "{out}");
        assert!(out[5..].bytes().all(|b| b.is_ascii_lowercase() || b.is_ascii_digit()), "{out}");
        assert!(!Path::new(out).exists(), "the key file is removed");
        for p in [&log, &kek, &app] {
            let _ = std::fs::remove_file(p);
        }
    }

    #[test]
    fn key_app_failures_are_one_clear_line_then_perftests() {
        let bad = script("fail", "echo 'no kek here' >&2; exit 3");
        let e = wrapped_key(bad.to_str().unwrap(), "/kek", Duration::from_secs(20)).unwrap_err();
        let l: Vec<&str> = e.lines().collect();
        assert_eq!(l.len(), 3, "{e}");
        assert!(l[0].contains("exit status: 3") && l[0].contains("no kek here"), "{e}");
        assert!(l[1].starts_with("Execution of ") && l[1].ends_with(" has failed"), "{e}");
        assert_eq!(l[2], "Failed to set dek");

        let hang = script("hang", "sleep 30");
        let t0 = Instant::now();
        let e = wrapped_key(hang.to_str().unwrap(), "/kek", Duration::from_millis(300)).unwrap_err();
        assert!(t0.elapsed() < Duration::from_secs(10));
        assert!(e.contains("did not finish within"), "{e}");

        let short = script("short", "printf '1\\n2\\n' > \"$2\"");
        let e = wrapped_key(short.to_str().unwrap(), "/kek", Duration::from_secs(20)).unwrap_err();
        assert!(e.contains("2 lines; want 40"), "{e}");
        assert!(e.ends_with("Failed to set dek"));

        let long = script("long", "i=0; while [ $i -lt 41 ]; do echo 1 >> \"$2\"; i=$((i+1)); done");
        let e = wrapped_key(long.to_str().unwrap(), "/kek", Duration::from_secs(20)).unwrap_err();
        assert!(e.contains("\nInvalid data_encryption_key file\nFailed to set dek"), "{e}");

        let none = script("none", "exit 0");
        let e = wrapped_key(none.to_str().unwrap(), "/kek", Duration::from_secs(20)).unwrap_err();
        assert!(e.contains("\nCan not open the data_encryption_key file\n"), "{e}");

        let e = wrapped_key("/nonexistent/keyapp", "/kek", Duration::from_secs(20)).unwrap_err();
        assert!(e.contains("cannot run /nonexistent/keyapp"), "{e}");
        for p in [&bad, &hang, &short, &long, &none] {
            let _ = std::fs::remove_file(p);
        }
    }
}
