//! AES-XTS crypto offload objects (perftest `--aes_xts`): the DEVX objects behind the context's
//! crypto login, a data encryption key and a crypto-capable memory key, and the control path
//! that creates them the way libmlx5 does (`mlx5dv_crypto_login`, `mlx5dv_dek_create`,
//! `mlx5dv_create_mkey` with `MLX5DV_MKEY_INIT_ATTR_FLAGS_CRYPTO`; rdma-core v44
//! providers/mlx5/verbs.c). The PRM mailboxes are built in [`super::devx`].
//!
//! A `detached` object has no kernel object behind it; device models in tests use those.
//! Nothing here has run on an mlx5 device: see docs/mlx5.md, "AES-XTS control path".

use std::sync::Mutex;

use uverbs::error::{Error, Result};
use uverbs::provider::SharedFd;

use super::devx::{self, CryptoCaps, GeneralCaps};

/// A DEVX object (`MLX5_IB_OBJECT_DEVX_OBJ`): the uobject handle DEVX_OBJ_CREATE returned,
/// destroyed with DEVX_OBJ_DESTROY when dropped. `None` for detached objects.
#[derive(Debug)]
pub struct DevxObj {
    pub(crate) fd: Option<SharedFd>,
    pub(crate) handle: u32,
}

impl DevxObj {
    /// An object with nothing in the kernel behind it (device models, tests).
    pub fn detached() -> Self {
        DevxObj { fd: None, handle: 0 }
    }
    /// The uobject handle (0 for a detached object).
    pub fn handle(&self) -> u32 {
        self.handle
    }
}

impl Drop for DevxObj {
    fn drop(&mut self) {
        if let Some(fd) = self.fd.take() {
            if let Err(e) = devx::obj_destroy(&fd, self.handle) {
                // EIO: the device is gone (the kernel already cleaned up).
                if e.errno != Some(libc::EIO) {
                    uverbs::settings::warn(e.to_string());
                }
            }
        }
    }
}

/// A data encryption key: the DEK general object and its id (what a crypto BSF names).
#[derive(Debug)]
pub struct Mlx5Dek {
    pub(crate) id: u32,
    #[allow(dead_code)] // destroyed on drop
    pub(crate) obj: DevxObj,
}

impl Mlx5Dek {
    /// A DEK numbered `id` without a kernel object (device models, tests).
    pub fn detached(id: u32) -> Self {
        Mlx5Dek { id, obj: DevxObj::detached() }
    }
    /// The DEK object's id.
    pub fn id(&self) -> u32 {
        self.id
    }
}

/// A crypto-capable indirect memory key that UMR work requests configure.
#[derive(Debug)]
pub struct Mlx5CryptoMkey {
    /// The key (mkey index << 8 | variant byte), lkey = rkey.
    pub(crate) lkey: u32,
    /// The most layout entries a UMR may give it: libmlx5's `num_desc`, the requested
    /// `max_entries` rounded up to a multiple of 4 (what `mlx5dv_create_mkey` writes back).
    pub(crate) max_entries: u16,
    #[allow(dead_code)] // destroyed on drop
    pub(crate) obj: DevxObj,
}

impl Mlx5CryptoMkey {
    /// An mkey with key `lkey` and room for `max_entries` entries, without a kernel object
    /// (device models, tests).
    pub fn detached(lkey: u32, max_entries: u16) -> Self {
        Mlx5CryptoMkey { lkey, max_entries, obj: DevxObj::detached() }
    }
    pub fn lkey(&self) -> u32 {
        self.lkey
    }
    pub fn max_entries(&self) -> u16 {
        self.max_entries
    }
}

/// The capabilities libmlx5 consults before crypto (queried once per context).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Caps {
    pub general: GeneralCaps,
    /// Only queried when the general capabilities report crypto (as libmlx5 does).
    pub crypto: CryptoCaps,
}

/// The refusal with errno `errno` for crypto step `what`.
fn refuse(what: &str, errno: i32, detail: String) -> Error {
    let mut e = Error::msg(format!("mlx5 {what}"), detail);
    e.errno = Some(errno);
    e
}

/// `crypto_login_create`'s checks: crypto and wrapped-crypto-operational, the CRYPTO_LOGIN
/// general object type, 24-bit ids.
pub fn check_login(c: &Caps, credential_id: u32, import_kek_id: u32) -> Result<()> {
    if !c.general.crypto || !c.crypto.wrapped_crypto_operational {
        return Err(refuse("crypto login", libc::EOPNOTSUPP, "the device has no operational wrapped crypto (HCA cap crypto / crypto_caps.wrapped_crypto_operational)".into())
            .with_hint("--aes_xts needs a ConnectX with crypto enabled and commissioned (wrapped mode)"));
    }
    if !c.general.obj_type(devx::OBJ_TYPE_CRYPTO_LOGIN) {
        return Err(refuse("crypto login", libc::EOPNOTSUPP, "the device has no CRYPTO_LOGIN general object".into()));
    }
    if credential_id & 0xff00_0000 != 0 || import_kek_id & 0xff00_0000 != 0 {
        return Err(refuse("crypto login", libc::EINVAL, format!("credential id {credential_id:#x} / import KEK id {import_kek_id:#x} beyond 24 bits")));
    }
    Ok(())
}

/// `_mlx5dv_dek_create`'s checks for a wrapped AES-XTS DEK under the context's login.
pub fn check_dek(c: &Caps, logged_in: bool) -> Result<()> {
    if !c.general.aes_xts() {
        return Err(refuse("create DEK", libc::EOPNOTSUPP, "the device has no AES-XTS crypto engine".into()));
    }
    if !c.general.obj_type(devx::OBJ_TYPE_DEK) {
        return Err(refuse("create DEK", libc::EOPNOTSUPP, "the device has no DEK general object".into()));
    }
    if !logged_in || !c.crypto.wrapped_aes_xts_import() {
        let why = if logged_in { "the device cannot import wrapped AES-XTS keys" } else { "the context is not logged in to the crypto engine" };
        return Err(refuse("create DEK", libc::EINVAL, why.into()).with_hint(format!("crypto login comes first{}", uverbs::knob::flag(uverbs::knob::Knob::CryptoCredential))));
    }
    Ok(())
}

/// `_mlx5dv_create_mkey`'s check for the crypto flag.
pub fn check_crypto_mkey(c: &Caps) -> Result<()> {
    if !c.general.aes_xts() {
        return Err(refuse("create crypto mkey", libc::EOPNOTSUPP, "the device has no AES-XTS crypto engine".into()));
    }
    Ok(())
}

#[derive(Default)]
struct State {
    caps: Option<Caps>,
    login: Option<DevxObj>,
}

/// A context's crypto state: whether it was opened for DEVX, its capabilities and its login.
#[derive(Default)]
pub struct CryptoCtx {
    devx: bool,
    state: Mutex<State>,
}

impl CryptoCtx {
    pub fn new(devx: bool) -> Self {
        CryptoCtx { devx, state: Mutex::default() }
    }

    /// Whether GET_CONTEXT asked for DEVX (`MLX5_IB_ALLOC_UCTX_DEVX`).
    pub fn is_devx(&self) -> bool {
        self.devx
    }

    /// The device's AES-XTS engines (libmlx5's `crypto_engines`), once the capabilities are
    /// known (after the first crypto call); `None` before.
    pub fn engines(&self) -> Option<u8> {
        self.state.lock().unwrap_or_else(|e| e.into_inner()).caps.map(|c| c.general.crypto_engines())
    }

    /// Whether the context has logged in.
    pub fn logged_in(&self) -> bool {
        self.state.lock().unwrap_or_else(|e| e.into_inner()).login.is_some()
    }

    fn require_devx(&self, what: &str) -> Result<()> {
        if self.devx {
            Ok(())
        } else {
            Err(refuse(what, libc::EOPNOTSUPP, "the context was not opened for DEVX".into())
                .with_hint("open the device with Context::open_devx (mlx5dv_open_device with MLX5DV_CONTEXT_FLAGS_DEVX)"))
        }
    }

    fn caps(&self, fd: &SharedFd, st: &mut State) -> Result<Caps> {
        if let Some(c) = st.caps {
            return Ok(c);
        }
        let out = devx::general_cmd(fd, "QUERY_HCA_CAP (general device)", &devx::query_hca_cap_in(devx::OP_MOD_GENERAL_DEVICE_CUR), devx::QUERY_HCA_CAP_OUT_LEN)?;
        let general = devx::parse_general_caps(&out)?;
        let crypto = if general.crypto {
            let out = devx::general_cmd(fd, "QUERY_HCA_CAP (crypto)", &devx::query_hca_cap_in(devx::OP_MOD_CRYPTO_CUR), devx::QUERY_HCA_CAP_OUT_LEN)?;
            devx::parse_crypto_caps(&out)?
        } else {
            CryptoCaps::default()
        };
        let c = Caps { general, crypto };
        st.caps = Some(c);
        Ok(c)
    }

    /// `mlx5dv_crypto_login` with credential id and import KEK id 0 (perftest's): one login per
    /// context; a second one fails with EEXIST, as in libmlx5.
    pub fn login(&self, fd: &SharedFd, credential: &[u8; devx::CREDENTIAL_LEN]) -> Result<()> {
        self.require_devx("crypto login")?;
        let mut st = self.state.lock().unwrap_or_else(|e| e.into_inner());
        if st.login.is_some() {
            return Err(refuse("crypto login", libc::EEXIST, "this context is already logged in (one login per context)".into()));
        }
        let caps = self.caps(fd, &mut st)?;
        check_login(&caps, 0, 0)?;
        let created = devx::obj_create(fd, "CREATE_GENERAL_OBJECT (crypto login)", &devx::crypto_login_in(0, 0, credential), devx::GENERAL_OBJ_OUT_LEN)?;
        st.login = Some(DevxObj { fd: Some(fd.clone()), handle: created.handle });
        Ok(())
    }

    /// `mlx5dv_dek_create` as perftest calls it: a 128-bit AES-XTS key (the 40-byte wrapped
    /// form), no keytag, `opaque[0] = 0x11`, under the context's login.
    pub fn create_dek(&self, fd: &SharedFd, pdn: u32, wrapped_key: &[u8]) -> Result<Mlx5Dek> {
        self.require_devx("create DEK")?;
        if wrapped_key.len() != devx::WRAPPED_AES_XTS_128_LEN {
            return Err(refuse("create DEK", libc::EINVAL, format!("a wrapped key of {} bytes; a wrapped 128-bit AES-XTS key is {}", wrapped_key.len(), devx::WRAPPED_AES_XTS_128_LEN))
                .with_hint(format!("the {} must print 40 hex bytes, one per line", uverbs::knob::named(uverbs::knob::Knob::KeyProgram))));
        }
        let mut st = self.state.lock().unwrap_or_else(|e| e.into_inner());
        let caps = self.caps(fd, &mut st)?;
        check_dek(&caps, st.login.is_some())?;
        drop(st);
        let cmd_in = devx::create_dek_in(&devx::DekParams {
            key_size: devx::KEY_SIZE_128,
            has_keytag: false,
            pdn,
            opaque: PERFTEST_DEK_OPAQUE,
            key: wrapped_key,
        })?;
        let created = devx::obj_create(fd, "CREATE_GENERAL_OBJECT (DEK)", &cmd_in, devx::GENERAL_OBJ_OUT_LEN)?;
        let obj = DevxObj { fd: Some(fd.clone()), handle: created.handle };
        let id = devx::general_obj_out_id("CREATE_GENERAL_OBJECT (DEK)", &created.out)?;
        Ok(Mlx5Dek { id, obj })
    }

    /// `mlx5dv_create_mkey` with `INDIRECT | CRYPTO` and `max_entries`.
    pub fn create_mkey(&self, fd: &SharedFd, pdn: u32, max_entries: u16) -> Result<Mlx5CryptoMkey> {
        self.require_devx("create crypto mkey")?;
        let num_desc = devx::mkey_num_desc(max_entries);
        if max_entries == 0 || num_desc > u16::MAX as u32 {
            return Err(refuse("create crypto mkey", libc::EINVAL, format!("max_entries {max_entries}, expected 1..={}", u16::MAX - 3)));
        }
        let mut st = self.state.lock().unwrap_or_else(|e| e.into_inner());
        let caps = self.caps(fd, &mut st)?;
        check_crypto_mkey(&caps)?;
        drop(st);
        let created = devx::obj_create(fd, "CREATE_MKEY (crypto)", &devx::create_mkey_in(pdn, max_entries, true), devx::CREATE_MKEY_OUT_LEN)?;
        let obj = DevxObj { fd: Some(fd.clone()), handle: created.handle };
        let index = devx::create_mkey_out_index(&created.out)?;
        Ok(Mlx5CryptoMkey { lkey: devx::mkey_key(index, 0), max_entries: num_desc as u16, obj })
    }
}

/// The `opaque` perftest gives every DEK (`dek_attr.opaque[0] = 0x11`).
pub const PERFTEST_DEK_OPAQUE: [u8; 8] = [0x11, 0, 0, 0, 0, 0, 0, 0];

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::fd::{FromRawFd, OwnedFd};
    use std::sync::Arc;

    fn memfd() -> SharedFd {
        // SAFETY: memfd_create with a valid C string; the returned descriptor is ours alone.
        let fd = unsafe { libc::memfd_create(c"devx-mock".as_ptr(), libc::MFD_CLOEXEC) };
        assert!(fd >= 0);
        // SAFETY: `fd` was just created and nothing else owns it.
        Arc::new(unsafe { OwnedFd::from_raw_fd(fd) })
    }

    fn caps(crypto: bool, operational: bool, types: &[u16], aes: bool, import: u8) -> Caps {
        let mut t = 0u64;
        for x in types {
            t |= 1 << x;
        }
        Caps {
            general: GeneralCaps { crypto, aes_xts_single_block: aes, aes_xts_multi_block: false, general_obj_types: t },
            crypto: CryptoCaps { wrapped_crypto_operational: operational, wrapped_import_method: import, ..Default::default() },
        }
    }

    #[test]
    fn non_devx_context_refuses_every_crypto_call_without_a_syscall() {
        let c = CryptoCtx::new(false);
        let fd = memfd();
        let e = c.login(&fd, &[0; 48]).unwrap_err();
        assert_eq!(e.errno, Some(libc::EOPNOTSUPP));
        assert!(e.to_string().contains("DEVX"), "{e}");
        assert!(c.create_dek(&fd, 1, &[0; 40]).unwrap_err().to_string().contains("DEVX"));
        assert!(c.create_mkey(&fd, 1, 1).unwrap_err().to_string().contains("DEVX"));
        assert!(!c.logged_in());
    }

    #[test]
    fn devx_calls_on_a_non_uverbs_fd_fail_naming_the_command() {
        let c = CryptoCtx::new(true);
        let fd = memfd();
        let e = c.login(&fd, &[0; 48]).unwrap_err();
        assert!(e.to_string().contains("QUERY_HCA_CAP"), "{e}");
        assert_eq!(e.errno, Some(libc::ENOTTY));
        assert!(!c.logged_in());
        // Bad input is refused before any command.
        let e = c.create_dek(&fd, 1, &[0; 39]).unwrap_err();
        assert_eq!(e.errno, Some(libc::EINVAL));
        assert!(e.to_string().contains("40"), "{e}");
        assert_eq!(c.create_mkey(&fd, 1, 0).unwrap_err().errno, Some(libc::EINVAL));
        assert_eq!(c.create_mkey(&fd, 1, u16::MAX).unwrap_err().errno, Some(libc::EINVAL));
        // A mkey within range gets as far as the capability query.
        assert!(c.create_mkey(&fd, 1, 1).unwrap_err().to_string().contains("QUERY_HCA_CAP"));
    }

    #[test]
    fn login_checks_follow_libmlx5() {
        let ok = caps(true, true, &[devx::OBJ_TYPE_CRYPTO_LOGIN, devx::OBJ_TYPE_DEK], true, devx::WRAPPED_IMPORT_METHOD_AES);
        check_login(&ok, 0, 0).unwrap();
        assert_eq!(check_login(&caps(false, true, &[0x1f], true, 4), 0, 0).unwrap_err().errno, Some(libc::EOPNOTSUPP));
        assert_eq!(check_login(&caps(true, false, &[0x1f], true, 4), 0, 0).unwrap_err().errno, Some(libc::EOPNOTSUPP));
        assert_eq!(check_login(&caps(true, true, &[0xc], true, 4), 0, 0).unwrap_err().errno, Some(libc::EOPNOTSUPP));
        assert_eq!(check_login(&ok, 0x0100_0000, 0).unwrap_err().errno, Some(libc::EINVAL));
        assert_eq!(check_login(&ok, 0, 0x0100_0000).unwrap_err().errno, Some(libc::EINVAL));
        check_login(&ok, 0xff_ffff, 0xff_ffff).unwrap();
    }

    #[test]
    fn dek_and_mkey_checks_follow_libmlx5() {
        let ok = caps(true, true, &[devx::OBJ_TYPE_CRYPTO_LOGIN, devx::OBJ_TYPE_DEK], true, devx::WRAPPED_IMPORT_METHOD_AES);
        check_dek(&ok, true).unwrap();
        // Not logged in, or no wrapped import: EINVAL (check_dek_import_method).
        assert_eq!(check_dek(&ok, false).unwrap_err().errno, Some(libc::EINVAL));
        assert_eq!(check_dek(&caps(true, true, &[0x1f, 0xc], true, 0x2), true).unwrap_err().errno, Some(libc::EINVAL));
        // No engine or no DEK object: EOPNOTSUPP.
        assert_eq!(check_dek(&caps(true, true, &[0x1f, 0xc], false, 4), true).unwrap_err().errno, Some(libc::EOPNOTSUPP));
        assert_eq!(check_dek(&caps(true, true, &[0x1f], true, 4), true).unwrap_err().errno, Some(libc::EOPNOTSUPP));
        check_crypto_mkey(&ok).unwrap();
        assert_eq!(check_crypto_mkey(&caps(true, true, &[], false, 0)).unwrap_err().errno, Some(libc::EOPNOTSUPP));
        // The multi-block engine counts as well.
        let mut multi = ok;
        multi.general.aes_xts_single_block = false;
        multi.general.aes_xts_multi_block = true;
        check_crypto_mkey(&multi).unwrap();
    }

    #[test]
    fn second_login_is_eexist_and_commands_follow_the_checks() {
        let c = CryptoCtx::new(true);
        let fd = memfd();
        assert_eq!(c.engines(), None);
        let ok = caps(true, true, &[devx::OBJ_TYPE_CRYPTO_LOGIN, devx::OBJ_TYPE_DEK], true, devx::WRAPPED_IMPORT_METHOD_AES);
        // Capabilities already known: no query; not logged in: a DEK is refused (EINVAL).
        c.state.lock().unwrap().caps = Some(ok);
        assert_eq!(c.create_dek(&fd, 1, &[0; 40]).unwrap_err().errno, Some(libc::EINVAL));
        // The login itself reaches DEVX_OBJ_CREATE (refused by the memfd).
        let e = c.login(&fd, &[0; 48]).unwrap_err();
        assert!(e.to_string().contains("CREATE_GENERAL_OBJECT (crypto login)"), "{e}");
        assert!(!c.logged_in());
        // Logged in (a detached stand-in for the login object): a second login is EEXIST, a DEK
        // and an mkey get as far as their create commands.
        c.state.lock().unwrap().login = Some(DevxObj::detached());
        assert!(c.logged_in());
        assert_eq!(c.login(&fd, &[0; 48]).unwrap_err().errno, Some(libc::EEXIST));
        assert!(c.create_dek(&fd, 1, &[0; 40]).unwrap_err().to_string().contains("CREATE_GENERAL_OBJECT (DEK)"));
        assert!(c.create_mkey(&fd, 1, 1).unwrap_err().to_string().contains("CREATE_MKEY (crypto)"));
        assert_eq!(c.engines(), Some(super::super::umr::engines::SINGLE_BLOCK));
        // A device without the engine refuses the mkey before the command.
        c.state.lock().unwrap().caps = Some(caps(true, true, &[0x1f, 0xc], false, 4));
        assert_eq!(c.create_mkey(&fd, 1, 1).unwrap_err().errno, Some(libc::EOPNOTSUPP));
    }

    #[test]
    fn detached_objects_destroy_nothing() {
        let d = Mlx5Dek::detached(7);
        assert_eq!(d.id(), 7);
        let m = Mlx5CryptoMkey::detached(0x1200, 4);
        assert_eq!((m.lkey(), m.max_entries()), (0x1200, 4));
        drop((d, m));
    }
}
