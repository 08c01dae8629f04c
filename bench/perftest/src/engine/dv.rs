//! The engine's reach into provider extensions ([`uverbs::dv`]): `-c DC` QPs, `-c XRC` SRQs and
//! `--aes_xts` crypto objects.
//!
//! The engine is generic over `P: Provider` (plain verbs). The tool hands it an [`Ext`]: `Some`
//! only for a context that was opened as mlx5 (`providers::ContextUser::run_mlx5`), `None` for
//! any other. Without extensions each of these features fails where perftest's would (at QP,
//! SRQ or key creation) with the line the verbs layer gives for a provider that lacks it.

use std::sync::Arc;
use std::time::Duration;

use uverbs::dv::{CryptoProvider, DcInit, DcProvider, XrcSrqProvider};
use uverbs::objects::{AccessFlags, Cq, CryptoMkey, Dek, Pd, Qp, QpInit, Srq, Xrcd};
use uverbs::provider::Provider;
use uverbs::wr::Sge;

use super::crypto::{CryptoSetup, CryptoState};
use super::EngineError;

/// What the engine asks of a provider's extensions.
pub trait Extensions<P: Provider>: Sync {
    /// A DC QP ([`Qp::new_dc`]).
    fn new_dc_qp(&self, pd: &Arc<Pd<P>>, init: &QpInit<'_, P>, dc: &DcInit) -> uverbs::Result<Qp<P>>;
    /// An XRC SRQ ([`Srq::new_xrc`]).
    fn new_xrc_srq(&self, pd: &Arc<Pd<P>>, xrcd: &Arc<Xrcd<P>>, cq: &Cq<P>, max_wr: u32, max_sge: u32) -> uverbs::Result<Srq<P>>;
    /// The DEKs and per-QP crypto mkeys of `--aes_xts` ([`CryptoState::create`]). `Err`: the
    /// lines to print.
    fn new_crypto(&self, pd: &Arc<Pd<P>>, s: &CryptoSetup, num_qps: usize, key_app_timeout: Duration)
        -> Result<Box<dyn CryptoPosts<P>>, String>;
}

/// How the engine reaches the extensions of its context: `None` for a plain-verbs provider.
pub type Ext<P> = Option<&'static dyn Extensions<P>>;

/// The extensions of a provider that has all of them (mlx5).
pub struct Direct;

impl<M: DcProvider + XrcSrqProvider + CryptoProvider> Extensions<M> for Direct {
    fn new_dc_qp(&self, pd: &Arc<Pd<M>>, init: &QpInit<'_, M>, dc: &DcInit) -> uverbs::Result<Qp<M>> {
        Qp::new_dc(pd, init, dc)
    }
    fn new_xrc_srq(&self, pd: &Arc<Pd<M>>, xrcd: &Arc<Xrcd<M>>, cq: &Cq<M>, max_wr: u32, max_sge: u32) -> uverbs::Result<Srq<M>> {
        Srq::new_xrc(pd, xrcd, cq, max_wr, max_sge, 0)
    }
    fn new_crypto(&self, pd: &Arc<Pd<M>>, s: &CryptoSetup, num_qps: usize, key_app_timeout: Duration)
        -> Result<Box<dyn CryptoPosts<M>>, String> {
        let st = CryptoState::create(s, num_qps, key_app_timeout, |key| Dek::new(pd, key), || CryptoMkey::new(pd, 1))?;
        Ok(Box::new(st))
    }
}

/// Posting through crypto mkeys (perftest's encrypted paths).
pub trait CryptoPosts<P: Provider>: Send {
    /// Does the tool post through the mkeys (perftest's `use_enc`)?
    fn encrypted_posts(&self) -> bool;
    /// Post the UMR that configures QP `qi`'s mkey over `map` with the next DEK (round robin);
    /// returns the key the data requests then name.
    ///
    /// # Safety
    /// `map` lies in a live MR under `map.lkey` for as long as the mkey maps it.
    unsafe fn configure(&mut self, qi: usize, qp: &mut Qp<P>, map: &Sge, access: AccessFlags) -> Result<u32, EngineError>;
}

impl<M: CryptoProvider> CryptoPosts<M> for CryptoState<Dek<M>, CryptoMkey<M>> {
    fn encrypted_posts(&self) -> bool {
        self.encrypted_posts
    }
    unsafe fn configure(&mut self, qi: usize, qp: &mut Qp<M>, map: &Sge, access: AccessFlags) -> Result<u32, EngineError> {
        let d = self.take_dek_index();
        let mkey = self.mkeys.get_mut(qi).ok_or_else(|| EngineError::Verbs(format!("--aes_xts: no crypto mkey for QP #{qi}")))?;
        let dek = self.deks.get(d).ok_or_else(|| EngineError::Verbs("--aes_xts: no data encryption key".into()))?;
        // SAFETY: the caller's contract is this call's.
        unsafe { qp.post_crypto_mkey_configure(mkey, map, access, &self.attr, dek) }.map_err(EngineError::from)?;
        Ok(mkey.lkey())
    }
}

/// A DC QP where the context may have no extensions.
pub fn new_dc_qp<P: Provider>(ext: Ext<P>, pd: &Arc<Pd<P>>, init: &QpInit<'_, P>, dc: &DcInit) -> uverbs::Result<Qp<P>> {
    match ext {
        Some(x) => x.new_dc_qp(pd, init, dc),
        None => Err(uverbs::dv::no_dc(init.qp_type, P::NAME)),
    }
}

/// An XRC SRQ where the context may have no extensions.
pub fn new_xrc_srq<P: Provider>(ext: Ext<P>, pd: &Arc<Pd<P>>, xrcd: &Arc<Xrcd<P>>, cq: &Cq<P>, max_wr: u32, max_sge: u32) -> uverbs::Result<Srq<P>> {
    match ext {
        Some(x) => x.new_xrc_srq(pd, xrcd, cq, max_wr, max_sge),
        None => Err(uverbs::dv::no_xrc_srq(P::NAME)),
    }
}

/// The `--aes_xts` objects where the context may have no extensions. Without them perftest's
/// order still holds: the key app runs, then the DEK fails (on a provider with no crypto).
pub fn new_crypto<P: Provider>(ext: Ext<P>, pd: &Arc<Pd<P>>, s: &CryptoSetup, num_qps: usize, key_app_timeout: Duration)
    -> Result<Box<dyn CryptoPosts<P>>, String> {
    match ext {
        Some(x) => x.new_crypto(pd, s, num_qps, key_app_timeout),
        None => {
            let missing = |what: &str| uverbs::dv::no_crypto_offload(what, P::NAME);
            let r: Result<CryptoState<(), ()>, String> =
                CryptoState::create(s, num_qps, key_app_timeout, |_| Err(missing("create DEK")), || Err(missing("create crypto mkey")));
            match r {
                Err(m) => Err(m),
                // No keys and no QPs asked for: nothing to post through.
                Ok(_) => Err(format!(" --aes_xts: {}", missing("create crypto objects"))),
            }
        }
    }
}

