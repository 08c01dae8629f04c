//! The mlx5 AES-XTS control path through `impl Provider for Mlx5`, without a device: a context
//! built as `Context::open` builds it refuses every crypto call before any syscall, one built as
//! `Context::open_devx` builds it issues DEVX commands (here on /dev/null, which refuses them,
//! so the error must name the command), and the PD number comes from the driver response.

mod support;

use support::mlx5::*;
use providers::mlx5::uar::RecordingUar;
use providers::mlx5::{abi, Mlx5};
use uverbs::dv::{CryptoProvider, DevxProvider};
use uverbs::provider::{DeviceDesc, Provider};

fn desc() -> DeviceDesc {
    DeviceDesc { ibdev: "mlx5_0".into(), uverbs: "uverbs0".into(), driver_id: 1, driver_abi: abi::ABI_VERSION }
}

#[test]
fn a_plain_context_refuses_crypto_naming_devx() {
    let ctx = context(false);
    let e = ctx.crypto_login(&[7; 48]).unwrap_err();
    assert_eq!(e.errno, Some(libc::EOPNOTSUPP));
    assert!(e.to_string().contains("mlx5 crypto login") && e.to_string().contains("DEVX"), "{e}");
    assert!(ctx.create_dek(5, &[0; 40]).unwrap_err().to_string().contains("DEVX"));
    assert!(ctx.create_crypto_mkey(5, 1).unwrap_err().to_string().contains("DEVX"));
}

#[test]
fn a_devx_context_sends_devx_commands() {
    let ctx = <Mlx5<RecordingUar> as DevxProvider>::new_context_devx(dev_null(), &desc(), &golden_uctx_resp(), &Default::default()).unwrap();
    // /dev/null answers the DEVX ioctl with ENOTTY: the first command is the capability query.
    let e = ctx.crypto_login(&[7; 48]).unwrap_err();
    assert_eq!(e.errno, Some(libc::ENOTTY));
    assert!(e.to_string().contains("QUERY_HCA_CAP (general device)"), "{e}");
    // Input the DEK and mkey cannot take is refused before any command.
    assert_eq!(ctx.create_dek(5, &[0; 41]).unwrap_err().errno, Some(libc::EINVAL));
    assert_eq!(ctx.create_crypto_mkey(5, 0).unwrap_err().errno, Some(libc::EINVAL));
    // A plain context from the same response is not DEVX.
    let plain = <Mlx5<RecordingUar> as Provider>::new_context(dev_null(), &desc(), &golden_uctx_resp(), &Default::default()).unwrap();
    assert_eq!(plain.crypto_login(&[7; 48]).unwrap_err().errno, Some(libc::EOPNOTSUPP));
}

#[test]
fn devx_request_and_pd_number() {
    let plain = <Mlx5<RecordingUar> as Provider>::context_udata(&desc(), &Default::default());
    let devx = <Mlx5<RecordingUar> as DevxProvider>::context_udata_devx(&desc(), &Default::default());
    assert_eq!(devx.resp_len, plain.resp_len);
    assert_eq!(devx.req[8..12], abi::ALLOC_UCTX_DEVX.to_le_bytes());
    assert_eq!(plain.req[8..12], [0; 4]);
    assert_eq!((&devx.req[..8], &devx.req[12..]), (&plain.req[..8], &plain.req[12..]));
    let ctx = context(false);
    let u = ctx.pd_udata();
    assert!(u.req.is_empty());
    assert_eq!(u.resp_len, 4);
    assert_eq!(ctx.pd_number(&[0x21, 0x43, 0x05, 0x00]).unwrap(), Some(0x54321));
    assert!(ctx.pd_number(&[]).is_err());
}

#[test]
fn devx_request_matches_libmlx5s_first_get_context() {
    // libmlx5 (rdma-core 44, captured by the oracle's fake kernel) tries DEVX first: its first
    // GET_CONTEXT's 32 driver bytes follow the 16-byte write header + response pointer.
    let log = std::fs::read_to_string(fixture("shim_log.txt")).unwrap();
    let mut lines = log.lines().skip_while(|l| !l.starts_with("write cmd 0 in_words 12"));
    lines.next().unwrap();
    assert!(lines.next().unwrap().contains("req (48)"));
    let h: String = lines.take(2).map(|l| l.trim()).collect();
    assert!(lines_mention_devx(&log));
    let req = hex(&h);
    let drv = &req[16..48];
    // Same settings as that capture (libmlx5 also asks for DYN_UAR, which ours leaves out).
    let ours = abi::UctxReq { total_num_bfregs: 16, num_low_latency_bfregs: 4, max_cqe_version: 1, lib_caps: abi::LIB_CAP_4K_UAR | abi::LIB_CAP_DYN_UAR };
    assert_eq!(to_hex(&ours.encode_devx()), to_hex(drv));
}

fn lines_mention_devx(log: &str) -> bool {
    log.lines().take(10).any(|l| l.contains("DEVX requested"))
}

#[test]
fn encoders_match_rdma_cores_devx_set_over_mlx5_ifc() {
    use providers::mlx5::devx;
    let text = std::fs::read_to_string(fixture("devx_crypto_cmd_in.txt")).unwrap();
    let golden = |name: &str| -> String {
        text.lines().find_map(|l| l.strip_prefix(&format!("{name} "))).unwrap_or_else(|| panic!("{name} missing")).to_string()
    };
    assert_eq!(to_hex(&devx::query_hca_cap_in(devx::OP_MOD_CRYPTO_CUR)), golden("query_crypto"));
    let mut cred = [0u8; 48];
    for (i, c) in cred.iter_mut().enumerate() {
        *c = 0x80 + i as u8;
    }
    assert_eq!(to_hex(&devx::crypto_login_in(0x0a_0b0c, 0x01_0203, &cred)), golden("login"));
    let key: Vec<u8> = (1..=40).collect();
    let dek = devx::create_dek_in(&devx::DekParams {
        key_size: devx::KEY_SIZE_128,
        has_keytag: false,
        pdn: 0x12_3456,
        opaque: providers::mlx5::crypto::PERFTEST_DEK_OPAQUE,
        key: &key,
    })
    .unwrap();
    assert_eq!(to_hex(&dek), golden("dek"));
    assert_eq!(to_hex(&devx::create_mkey_in(0xab_cdef, 1, true)), golden("mkey"));
}
