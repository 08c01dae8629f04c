//! Direct-verbs extensions: what a provider may offer beyond plain verbs, reached explicitly.
//!
//! rdma-core keeps these out of libibverbs: Dynamically Connected QPs, DEVX objects and the
//! AES-XTS crypto objects are `mlx5dv_*` calls that only libmlx5 answers. Here each is a trait
//! that extends [`Provider`]; only the providers that have the feature implement it (today mlx5
//! implements all four, rxe none), so the plain [`Provider`] trait stays plain verbs and the
//! objects that need a feature ([`crate::objects::Qp::new_dc`], [`crate::objects::Srq::new_xrc`],
//! [`crate::objects::Context::open_devx`], [`crate::objects::Dek`],
//! [`crate::objects::CryptoMkey`]) exist only for such a provider. Code that is generic over
//! `P: Provider` reaches them through a context it opened as mlx5
//! (`providers::ContextUser::run_mlx5`), never through a refusing default.

use crate::error::{Error, Result};
use crate::provider::{DeviceDesc, PostError, Provider, QpInitAttr, SharedFd, Udata};
use crate::wr::Sge;

/// What a DC QP needs beyond [`QpInitAttr`] (mlx5dv's `dc_init_attr`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct DcInit {
    /// DCT: the access key a DCI must present. DCI: the key its sends present (one key per
    /// DCI here; libmlx5 takes it per work request, perftest always passes the same one).
    pub access_key: u64,
    /// DCI only: DCI streams (`MLX5_QP_FLAG_DCI_STREAM`); `None` is a plain DCI.
    pub dci_streams: Option<DciStreams>,
}

/// `struct mlx5_ib_create_qp_dci_streams`: log2 of the concurrent and of the errored streams.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct DciStreams {
    pub log_num_concurent: u8,
    pub log_num_errored: u8,
}

/// One AES-XTS configuration of a crypto memory key (`struct mlx5dv_crypto_attr` with
/// `crypto_standard` AES-XTS), as perftest's `--aes_xts` posts it before every send.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CryptoAttr {
    /// true: memory holds plaintext, the wire carries ciphertext (encrypt on transmit, decrypt
    /// on receive); false: the reverse (`encrypt_on_tx`).
    pub encrypt_on_tx: bool,
    /// The signature/crypto order on transmit: true is
    /// `MLX5DV_SIGNATURE_CRYPTO_ORDER_SIGNATURE_BEFORE_CRYPTO_ON_TX`, false `..._AFTER_...`
    /// (perftest's `--sig_before`; without a signature domain it changes nothing on the wire).
    pub signature_before_crypto_on_tx: bool,
    /// The tweak of the first data unit (perftest: bytes 0, 1, ..., 15).
    pub initial_tweak: [u8; 16],
    /// Must match the DEK's key tag when the DEK has one (perftest: zeros).
    pub keytag: [u8; 8],
    /// Bytes per data unit: 512, 520, 4048, 4096 or 4160 (`--aes_block_size`).
    pub data_unit_size: u32,
}

/// The error for a crypto call the device cannot answer (a DEVX context is missing, or the
/// provider has no crypto offload at all).
pub fn no_crypto_offload(what: &str, provider: &str) -> Error {
    let mut e = Error::msg(what, format!("AES-XTS crypto offload is an mlx5 feature; the {provider} provider has none"));
    e.errno = Some(libc::EOPNOTSUPP);
    e
}

/// The error for a Dynamically Connected QP asked of a provider that has none.
pub fn no_dc(qp_type: crate::provider::QpType, provider: &str) -> Error {
    let mut e = Error::msg(
        "create QP",
        format!("{} QPs (Dynamically Connected) are an mlx5 feature; the {provider} provider has none", qp_type.name()),
    );
    e.errno = Some(libc::EOPNOTSUPP);
    e
}

/// The error for an XRC SRQ asked of a provider that has none.
pub fn no_xrc_srq(provider: &str) -> Error {
    Error::msg("CREATE_XSRQ", format!("the {provider} provider has no XRC SRQs (the device has no XRC)"))
}

/// The error for a DEVX context asked of a provider that has none.
pub fn no_devx(dev: &DeviceDesc, provider: &str) -> Error {
    let mut e = Error::msg(
        format!("open {} ({provider})", dev.ibdev),
        format!("the {provider} provider has no DEVX context (an mlx5 feature)"),
    );
    e.errno = Some(libc::EOPNOTSUPP);
    e
}

/// Dynamically Connected QPs (mlx5dv's `mlx5dv_create_qp` with `MLX5DV_QP_INIT_ATTR_MASK_DC`).
pub trait DcProvider: Provider {
    /// Prepare a DC QP (`attr.qp_type` is `Dci` or `Dct`); [`Provider::finish_qp`] completes it.
    fn prepare_dc_qp(&self, attr: &QpInitAttr, dc: &DcInit) -> Result<(Self::QpPrep, Udata)>;
}

/// XRC shared receive queues (CREATE_XSRQ with `srq_type` XRC) with the provider's driver data.
pub trait XrcSrqProvider: Provider {
    /// Prepare an XRC SRQ; [`Provider::finish_srq`] completes it.
    fn prepare_xrc_srq(&self, max_wr: u32, max_sge: u32) -> Result<(Self::SrqPrep, Udata)>;
}

/// DEVX contexts (libmlx5's `mlx5dv_open_device` with `MLX5DV_CONTEXT_FLAGS_DEVX`), in which
/// general objects (DEKs, crypto login) may be created.
pub trait DevxProvider: Provider {
    /// Driver data for GET_CONTEXT of a DEVX context.
    fn context_udata_devx(dev: &DeviceDesc, config: &Self::Config) -> Udata;
    /// Build the provider context of a DEVX context (GET_CONTEXT ran with
    /// [`DevxProvider::context_udata_devx`]); the provider remembers that DEVX commands may be
    /// used.
    fn new_context_devx(fd: SharedFd, dev: &DeviceDesc, drv_resp: &[u8], config: &Self::Config) -> Result<Self>;
}

/// AES-XTS crypto offload (perftest `--aes_xts`): crypto login, data encryption keys, and
/// memory keys whose crypto attributes a UMR work request configures.
pub trait CryptoProvider: DevxProvider {
    /// A data encryption key (mlx5: a DEK general object).
    type Dek: Send + Sync;
    /// A memory key whose layout and crypto attributes a UMR work request (re)configures
    /// (mlx5: an indirect mkey created with crypto enabled).
    type CryptoMkey: Send;

    /// Log this context in to the device's crypto engine with the 48-byte credential
    /// (`mlx5dv_crypto_login`); the login lasts as long as the context. Needs a DEVX context.
    fn crypto_login(&self, credential: &[u8; 48]) -> Result<()>;
    /// Create a data encryption key for AES-XTS in the PD numbered `pdn` from the key wrapped
    /// by the device's key-encryption key (`mlx5dv_dek_create`, 40 bytes for perftest's keys).
    fn create_dek(&self, pdn: u32, wrapped_key: &[u8]) -> Result<Self::Dek>;
    /// Create a crypto-capable memory key in the PD numbered `pdn` that a UMR can configure with
    /// up to `max_entries` layout entries (`mlx5dv_create_mkey` with the crypto flag).
    fn create_crypto_mkey(&self, pdn: u32, max_entries: u16) -> Result<Self::CryptoMkey>;
    /// The key local and remote work requests name the crypto mkey by (its lkey = rkey).
    fn crypto_mkey_lkey(&self, mkey: &Self::CryptoMkey) -> u32;
    /// Post one UMR work request (unsignaled unless the QP signals every send; then it
    /// completes as [`WcOpcode::Driver1`](crate::wr::WcOpcode::Driver1) with wr_id 0, as
    /// libmlx5's does) that configures `mkey` to map the single range
    /// `sge` (the mkey's address 0 is `sge.addr`) with `access` (`AccessFlags` bits) and the
    /// AES-XTS attributes `attr` under `dek`: `mlx5dv_wr_mkey_configure` +
    /// `wr_set_mkey_access_flags` + `wr_set_mkey_layout_list` + `wr_set_mkey_crypto`, rung
    /// like any post. Requests posted after it on the same QP may use the mkey.
    ///
    /// # Safety
    /// `sge` must lie in a live MR under `sge.lkey` for as long as the mkey maps it.
    unsafe fn post_crypto_mkey_configure(
        &self,
        qp: &mut Self::Qp,
        mkey: &mut Self::CryptoMkey,
        sge: &Sge,
        access: u32,
        attr: &CryptoAttr,
        dek: &Self::Dek,
    ) -> Result<(), PostError>;
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::provider::QpType;

    #[test]
    fn a_missing_extension_names_the_feature_the_provider_and_eopnotsupp() {
        for t in [QpType::Dci, QpType::Dct] {
            let e = no_dc(t, "rxe");
            assert_eq!(e.errno, Some(libc::EOPNOTSUPP));
            let s = e.to_string();
            assert!(s.contains(t.name()) && s.contains("mlx5 feature") && s.contains("rxe provider"), "{s}");
        }
        let e = no_crypto_offload("create DEK", "rxe");
        assert_eq!(e.errno, Some(libc::EOPNOTSUPP));
        assert!(e.to_string().starts_with("create DEK failed") && e.to_string().contains("AES-XTS crypto offload is an mlx5 feature"), "{e}");
        assert!(no_xrc_srq("rxe").to_string().contains("rxe provider has no XRC SRQs"));
        let dev = DeviceDesc { ibdev: "rxe0".into(), uverbs: "uverbs0".into(), driver_id: 14, driver_abi: 2 };
        let e = no_devx(&dev, "rxe");
        assert_eq!(e.errno, Some(libc::EOPNOTSUPP));
        assert!(e.to_string().starts_with("open rxe0 (rxe)") && e.to_string().contains("the rxe provider has no DEVX context"), "{e}");
    }
}
