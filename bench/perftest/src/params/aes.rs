//! `--aes_xts` and its family (perftest 6.06 built with HAVE_AES_XTS, as Debian 12's is):
//! perftest's casts and its parameter checks in its order (`force_dependecies`, right after the
//! DCI stream checks). The option values themselves ([`AesXts`]) are a `types` leaf, so that
//! `Params` holds them without importing these rules.
//!
//! The key material (credentials file, data-encryption-key app) and the verbs side live in
//! [`crate::engine::crypto`].

use bench_core::cparse::strtol0;

use super::getopt::{invalid, Found};
use super::{conflict, Connection, ParamError, Params, TestKind, Verb};

pub use super::types::{AesXts, BLOCK_SIZES};

/// perftest's `CHECK_VALUE(.., uint16_t, ..)`: `strtol(arg, &end, 0)` with nothing left over,
/// then the C cast to `uint16_t` (so `-1` is 65535 and 70000 is 4464, as in perftest).
pub(super) fn u16_arg<O>(f: &Found<O>, name: &str) -> Result<u16, ParamError> {
    let a = f.arg.as_deref().unwrap_or("");
    match strtol0(a) {
        None => Err(invalid(f, format!("{name} argument '{a}' should be an integer (perftest: uint16_t)"))),
        // strtol saturates at LONG_MAX/LONG_MIN before the cast.
        Some(Err(())) => Ok(if a.trim_start().starts_with('-') { 0 } else { u16::MAX }),
        Some(Ok(v)) => Ok(v as u16),
    }
}

/// perftest 6.06's AES-XTS checks, in its order (each one its ` <message>` line, exit 1).
pub(super) fn dependencies(p: &Params) -> Result<(), ParamError> {
    let a = &p.aes;
    if a.enabled {
        if p.connection != Connection::Rc {
            return Err(conflict("--aes_xts, -c", "aes_xts supported only on RC"));
        }
        if a.kek_path.is_none() {
            return Err(conflict("--aes_xts without --kek_path", "Please provide key encryption key file path"));
        }
        if a.app_path.is_none() {
            return Err(conflict("--aes_xts without --data_enc_key_app_path", "Please provide data encryption key app path"));
        }
        if a.credentials_path.is_none() {
            return Err(conflict("--aes_xts without --credentials_path", "Please provide credentials file path"));
        }
        if p.buf.use_old_post_send {
            return Err(conflict("--aes_xts, --use_old_post_send", "aes_xts doesn't support old post send"));
        }
        if p.conn.work_rdma_cm {
            // 6.06 checks -R only; -z passes (the exchange over rdma_cm is not the data path).
            return Err(conflict("--aes_xts, -R/--rdma_cm", "rdma_cm doesn't support aes_xts"));
        }
        // --write_with_imm is newer than 6.06; newer perftest refuses it here too.
        if p.kind == TestKind::Lat && matches!(p.verb, Verb::Write | Verb::WriteImm) {
            return Err(conflict("--aes_xts", "aes_xts isn't supported on write_lat"));
        }
        // `(int)size <= inline_size`: the inline size is still -1 here unless -I set it (or a
        // read/atomic tool set 0).
        if let Some(inl) = p.inline_size {
            if (p.size as i32) <= inl as i32 {
                return Err(conflict("--aes_xts, -I/--inline_size", "aes_xts doesn't support Inline messages"));
            }
        }
        if a.keys_number == 0 {
            // perftest 6.06 accepts 0 and then divides by it on the first post (SIGFPE).
            return Err(conflict(
                "--data_enc_keys_number",
                "aes_xts needs at least one data encryption key (perftest 6.06 crashes with 0); give 1 or more",
            ));
        }
    } else {
        if a.encrypt_on_tx {
            return Err(conflict("--encrypt_on_tx", "encrypt_on_tx supported only when enc/dec traffic"));
        }
        if a.sig_before {
            return Err(conflict("--sig_before", "sig_before supported only when enc/dec traffic"));
        }
        if a.credentials_path.is_some() {
            return Err(conflict("--credentials_path", "giving credentials path supported only with enc/dec traffic"));
        }
        if a.kek_path.is_some() {
            return Err(conflict("--kek_path", "giving kek path supported only with enc/dec traffic"));
        }
        if a.app_path.is_some() {
            // perftest's text for this one repeats the kek path message.
            return Err(conflict("--data_enc_key_app_path", "giving kek path supported only with enc/dec traffic"));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn setup_follows_perftests_attributes() {
        let a = AesXts { enabled: true, encrypt_on_tx: true, block_size_arg: 4096, keys_number: 3, ..AesXts::default() };
        let s = a.engine_setup(true).unwrap();
        assert!(s.attr.encrypt_on_tx && !s.attr.signature_before_crypto_on_tx);
        assert_eq!(s.attr.initial_tweak, [0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15]);
        assert_eq!(s.attr.keytag, [0; 8]);
        assert_eq!(s.attr.data_unit_size, 4096);
        assert_eq!(s.keys, 3);
        assert!(AesXts::default().engine_setup(true).is_none());
    }
}
