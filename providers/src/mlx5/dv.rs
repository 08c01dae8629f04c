//! mlx5's direct-verbs extensions (the role of libmlx5's mlx5dv): DC QPs, XRC SRQs, DEVX
//! contexts and AES-XTS crypto, as the [`uverbs::dv`] traits. The work is in dc.rs, srq.rs,
//! crypto.rs and umr.rs; this file only connects it to the traits.

use uverbs::dv::{CryptoAttr, CryptoProvider, DcInit, DcProvider, DevxProvider, XrcSrqProvider};
use uverbs::provider::{DeviceDesc, PostError, QpInitAttr, SharedFd, Udata};
use uverbs::wr::Sge;
use uverbs::Result;

use super::qp::{Mlx5Qp, Mlx5QpPrep};
use super::srq::Mlx5SrqPrep;
use super::uar::UarMap;
use super::{abi, crypto, umr, Mlx5, Mlx5Config};

impl<U: UarMap> DcProvider for Mlx5<U> {
    fn prepare_dc_qp(&self, attr: &QpInitAttr, dc: &DcInit) -> Result<(Mlx5QpPrep, Udata)> {
        let (prep, req) = self.dc_qp_request(attr, dc)?;
        Ok((
            prep,
            Udata {
                req,
                resp_len: abi::CREATE_QP_RESP_LEN,
            },
        ))
    }
}

impl<U: UarMap> XrcSrqProvider for Mlx5<U> {
    fn prepare_xrc_srq(&self, max_wr: u32, max_sge: u32) -> Result<(Mlx5SrqPrep, Udata)> {
        self.xrc_srq_prepare(max_wr, max_sge)
    }
}

impl<U: UarMap> DevxProvider for Mlx5<U> {
    fn context_udata_devx(_dev: &DeviceDesc, config: &Mlx5Config) -> Udata {
        Udata {
            req: config.uctx.encode_devx(),
            resp_len: abi::ALLOC_UCONTEXT_RESP_LEN,
        }
    }

    fn new_context_devx(fd: SharedFd, _dev: &DeviceDesc, drv_resp: &[u8], config: &Mlx5Config) -> Result<Self> {
        let mut m = Self::with_config(fd, drv_resp, *config)?;
        m.crypto = crypto::CryptoCtx::new(true);
        Ok(m)
    }
}

impl<U: UarMap> CryptoProvider for Mlx5<U> {
    type Dek = crypto::Mlx5Dek;
    type CryptoMkey = crypto::Mlx5CryptoMkey;

    fn crypto_login(&self, credential: &[u8; 48]) -> Result<()> {
        let r = self.crypto.login(&self.fd, credential);
        self.sync_crypto_engines();
        r
    }

    fn create_dek(&self, pdn: u32, wrapped_key: &[u8]) -> Result<crypto::Mlx5Dek> {
        let r = self.crypto.create_dek(&self.fd, pdn, wrapped_key);
        self.sync_crypto_engines();
        r
    }

    fn create_crypto_mkey(&self, pdn: u32, max_entries: u16) -> Result<crypto::Mlx5CryptoMkey> {
        let r = self.crypto.create_mkey(&self.fd, pdn, max_entries);
        self.sync_crypto_engines();
        r
    }

    fn crypto_mkey_lkey(&self, mkey: &crypto::Mlx5CryptoMkey) -> u32 {
        mkey.lkey()
    }

    unsafe fn post_crypto_mkey_configure(
        &self,
        qp: &mut Mlx5Qp,
        mkey: &mut crypto::Mlx5CryptoMkey,
        sge: &Sge,
        access: u32,
        attr: &CryptoAttr,
        dek: &crypto::Mlx5Dek,
    ) -> Result<(), PostError> {
        let m = umr::MkeyConfigure {
            mkey_lkey: mkey.lkey(),
            max_entries: mkey.max_entries(),
            sgl: std::slice::from_ref(sge),
            access,
            attr,
            dek_id: dek.id(),
            engines: self.crypto_engines(),
            update_tag: self.resp.comp_mask & umr::UCTX_RESP_MASK_MKEY_UPDATE_TAG != 0,
            fm_cache: qp.fm_cache(),
        };
        // SAFETY: the caller keeps this trait method's contract (`sge`, now `m.sgl`, names
        // registered memory), which is the callee's.
        unsafe { self.qp_post_mkey_configure(qp, &m) }
    }
}
