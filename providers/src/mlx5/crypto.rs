//! AES-XTS crypto offload objects (perftest `--aes_xts`): the DEVX objects behind a data
//! encryption key and a crypto-capable memory key.
//!
//! Skeleton: the types the data path (UMR posting) and the control path (DEVX creation) share.
//! A `detached` object has no kernel object behind it; device models in tests use those.

use uverbs::provider::SharedFd;

/// A DEVX object (`MLX5_IB_OBJECT_DEVX_OBJ`): the uobject handle DEVX_OBJ_CREATE returned,
/// destroyed with DEVX_OBJ_DESTROY when dropped. `None` for detached objects.
#[allow(dead_code)] // read by the DEVX destroy path
pub struct DevxObj {
    pub(crate) fd: Option<SharedFd>,
    pub(crate) handle: u32,
}

impl DevxObj {
    /// An object with nothing in the kernel behind it (device models, tests).
    pub fn detached() -> Self {
        DevxObj { fd: None, handle: 0 }
    }
}

/// A data encryption key: the DEK general object and its id (what a crypto BSF names).
pub struct Mlx5Dek {
    pub(crate) id: u32,
    #[allow(dead_code)]
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
pub struct Mlx5CryptoMkey {
    /// The key (mkey index << 8 | variant byte), lkey = rkey.
    pub(crate) lkey: u32,
    /// The most layout entries a UMR may give it (`max_entries` at creation).
    pub(crate) max_entries: u16,
    #[allow(dead_code)]
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
