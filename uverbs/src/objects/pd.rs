//! Protection domains, XRC domains, and the crypto objects that live in a PD (DEKs and crypto
//! mkeys).

use std::sync::Arc;

use super::context::Context;
use super::report_drop;
use crate::cmd;
use crate::error::Result;
use crate::dv::CryptoProvider;
use crate::provider::Provider;

/// A protection domain.
pub struct Pd<P: Provider> {
    pub(super) ctx: Arc<Context<P>>,
    pub(super) handle: u32,
    pdn: Option<u32>,
}

impl<P: Provider> Pd<P> {
    pub fn new(ctx: &Arc<Context<P>>) -> Result<Arc<Self>> {
        let (handle, drv_resp) = cmd::alloc_pd(&ctx.cmd(), &ctx.provider().pd_udata())?;
        let pdn = match ctx.provider().pd_number(&drv_resp) {
            Ok(n) => n,
            Err(e) => {
                report_drop(cmd::dealloc_pd(&ctx.cmd(), handle));
                return Err(e);
            }
        };
        Ok(Arc::new(Pd { ctx: ctx.clone(), handle, pdn }))
    }
    pub fn handle(&self) -> u32 {
        self.handle
    }
    /// The device's number for this PD, where the provider learns it (mlx5's `pdn`).
    pub fn pdn(&self) -> Option<u32> {
        self.pdn
    }
    pub fn context(&self) -> &Arc<Context<P>> {
        &self.ctx
    }
}

impl<P: Provider> Drop for Pd<P> {
    fn drop(&mut self) {
        report_drop(cmd::dealloc_pd(&self.ctx.cmd(), self.handle));
    }
}

fn pdn_for_crypto<P: Provider>(pd: &Pd<P>, what: &str) -> Result<u32> {
    pd.pdn().ok_or_else(|| crate::dv::no_crypto_offload(what, P::NAME))
}

/// A data encryption key in a PD (AES-XTS crypto offload). Holds the PD so that the key goes
/// before the PD does; the provider object destroys the device object when dropped.
pub struct Dek<P: CryptoProvider> {
    pub(super) dek: P::Dek,
    _pd: Arc<Pd<P>>,
}

impl<P: CryptoProvider> Dek<P> {
    /// `mlx5dv_dek_create` for AES-XTS from a key wrapped by the device's KEK.
    pub fn new(pd: &Arc<Pd<P>>, wrapped_key: &[u8]) -> Result<Self> {
        let pdn = pdn_for_crypto(pd, "create DEK")?;
        let dek = pd.context().provider().create_dek(pdn, wrapped_key)?;
        Ok(Dek { dek, _pd: pd.clone() })
    }
    pub fn provider_dek(&self) -> &P::Dek {
        &self.dek
    }
}

/// A crypto-capable memory key in a PD, configured by UMR work requests
/// ([`Qp::post_crypto_mkey_configure`]).
pub struct CryptoMkey<P: CryptoProvider> {
    pub(super) mkey: P::CryptoMkey,
    lkey: u32,
    _pd: Arc<Pd<P>>,
}

impl<P: CryptoProvider> CryptoMkey<P> {
    pub fn new(pd: &Arc<Pd<P>>, max_entries: u16) -> Result<Self> {
        let pdn = pdn_for_crypto(pd, "create crypto mkey")?;
        let mkey = pd.context().provider().create_crypto_mkey(pdn, max_entries)?;
        let lkey = pd.context().provider().crypto_mkey_lkey(&mkey);
        Ok(CryptoMkey { mkey, lkey, _pd: pd.clone() })
    }
    /// The key work requests name the mkey by, locally and remotely.
    pub fn lkey(&self) -> u32 {
        self.lkey
    }
    pub fn provider_mkey(&mut self) -> &mut P::CryptoMkey {
        &mut self.mkey
    }
}

/// An XRC domain (OPEN_XRCD): the scope in which XRC SRQs and XRC target QPs live.
pub struct Xrcd<P: Provider> {
    ctx: Arc<Context<P>>,
    pub(super) handle: u32,
}

impl<P: Provider> Xrcd<P> {
    /// A domain private to this context (no file: `fd` -1). A device without XRC refuses it;
    /// callers that want a clear message check [`crate::attr::DeviceAttr::supports_xrc`] first.
    pub fn open(ctx: &Arc<Context<P>>) -> Result<Arc<Self>> {
        let handle = cmd::open_xrcd(&ctx.cmd(), -1, 0)?;
        Ok(Arc::new(Xrcd { ctx: ctx.clone(), handle }))
    }
    pub fn handle(&self) -> u32 {
        self.handle
    }
}

impl<P: Provider> Drop for Xrcd<P> {
    fn drop(&mut self) {
        report_drop(cmd::close_xrcd(&self.ctx.cmd(), self.handle));
    }
}
