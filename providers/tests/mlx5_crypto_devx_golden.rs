//! The AES-XTS control path against Debian 12's libmlx5 (rdma-core 44.0): every DEVX command
//! the oracle's fake kernel saw for perftest's `--aes_xts` calls (fixtures/mlx5/crypto/devx_*.jsonl,
//! see its README), rebuilt with our encoders from the same inputs and compared byte for byte,
//! with our decoders run on the answers. The ids and capability answers are the fake kernel's.

mod support;

use support::mlx5::*;
use providers::mlx5::crypto::PERFTEST_DEK_OPAQUE;
use providers::mlx5::devx;
use providers::mlx5::umr::engines;
use serde_json::Value;
use uverbs::cmd::{encode_driver_method, DriverMethod};

fn records(variant: &str) -> Vec<Value> {
    jsonl(&format!("crypto/devx_{variant}.jsonl"))
}

fn setup(variant: &str) -> Value {
    serde_json::from_str(&std::fs::read_to_string(fixture(&format!("crypto/setup_{variant}.json"))).unwrap()).unwrap()
}

fn s<'a>(v: &'a Value, k: &str) -> &'a str {
    v[k].as_str().unwrap_or_else(|| panic!("{k} missing in {v}"))
}

/// The ioctl framing libmlx5 sent, as (object, method, [(attr id, len, flags)]).
fn framing(v: &Value) -> (u64, u64, Vec<(u64, u64, u64)>) {
    let io = &v["ioctl"];
    assert_eq!(num(&io["driver_id"]), 1);
    let attrs = io["attrs"].as_array().unwrap().iter().map(|a| (num(&a["attr_id"]), num(&a["len"]), num(&a["flags"]))).collect();
    (num(&io["object_id"]), num(&io["method_id"]), attrs)
}

/// Our encoding of the same method, decoded back to the same shape.
fn our_framing(m: &DriverMethod<'_>) -> (u64, u64, Vec<(u64, u64, u64)>) {
    let b = encode_driver_method(devx::DRIVER_ID, m, &[0x1000; 4], &[0x2000; 4]).unwrap();
    let u16at = |o: usize| u16::from_le_bytes([b[o], b[o + 1]]) as u64;
    assert_eq!(u16at(0) as usize, b.len());
    assert_eq!(u32::from_le_bytes([b[16], b[17], b[18], b[19]]), devx::DRIVER_ID);
    let n = u16at(6) as usize;
    let attrs = (0..n).map(|i| (u16at(24 + 16 * i), u16at(26 + 16 * i), u16at(28 + 16 * i))).collect();
    (u16at(2), u16at(4), attrs)
}

fn check_variant(variant: &str) {
    let recs = records(variant);
    let setup = setup(variant);
    let pdn = num(&setup["pdn"]) as u32;
    let mut general = None;
    let mut seen = Vec::new();
    let mut dek_n = 0;
    for r in &recs {
        let label = s(r, "label");
        let cmd_in = r.get("cmd_in").and_then(Value::as_str).map(hex);
        let cmd_out = r.get("cmd_out").and_then(Value::as_str).map(hex);
        match s(r, "method") {
            "DEVX_OTHER" => {
                let (cin, cout) = (cmd_in.unwrap(), cmd_out.unwrap());
                let op_mod = num(&r["op_mod"]) as u16;
                assert_eq!(to_hex(&devx::query_hca_cap_in(op_mod)), to_hex(&cin), "{label}");
                let m = DriverMethod {
                    name: "DEVX_OTHER",
                    object: devx::OBJECT_DEVX,
                    method: devx::METHOD_DEVX_OTHER,
                    ins: vec![(devx::ATTR_DEVX_OTHER_CMD_IN, &cin[..])],
                    outs: vec![(devx::ATTR_DEVX_OTHER_CMD_OUT, devx::QUERY_HCA_CAP_OUT_LEN)],
                    ..Default::default()
                };
                assert_eq!(our_framing(&m), framing(r), "{label}");
                match op_mod {
                    devx::OP_MOD_GENERAL_DEVICE_CUR => {
                        let g = devx::parse_general_caps(&cout).unwrap();
                        assert!(g.crypto && g.obj_type(devx::OBJ_TYPE_DEK) && g.obj_type(devx::OBJ_TYPE_CRYPTO_LOGIN));
                        general = Some(g);
                        seen.push("general");
                    }
                    devx::OP_MOD_CRYPTO_CUR => {
                        let c = devx::parse_crypto_caps(&cout).unwrap();
                        let want = &setup["crypto_caps"];
                        assert!(c.wrapped_crypto_operational && c.wrapped_aes_xts_import());
                        assert_eq!(c.log_max_num_deks as u64, num(&want["log_max_num_deks"]));
                        assert_eq!(c.failed_selftests as u64, num(&want["failed_selftests"]));
                        // libmlx5's derived engines equal ours from the general caps.
                        assert_eq!(general.unwrap().crypto_engines() as u64, num(&want["crypto_engines"]), "{variant}");
                        seen.push("crypto");
                    }
                    other => panic!("unexpected op_mod {other:#x}"),
                }
            }
            "DEVX_OBJ_CREATE" => {
                let (cin, cout) = (cmd_in.unwrap(), cmd_out.unwrap());
                let ours = match s(r, "what") {
                    "CREATE_GENERAL_OBJECT(CRYPTO_LOGIN)" => {
                        let mut cred = [0u8; 48];
                        for (i, c) in cred.iter_mut().enumerate() {
                            *c = (i * 3 + 1) as u8;
                        }
                        assert_eq!(devx::general_obj_out_id("login", &cout).unwrap() as u64, num(&r["id"]));
                        seen.push("login");
                        devx::crypto_login_in(0, 0, &cred)
                    }
                    "CREATE_GENERAL_OBJECT(DEK)" => {
                        let base = [0xa0u8, 0xc0][dek_n];
                        let key: Vec<u8> = (0..40).map(|i| base + i as u8).collect();
                        let id = devx::general_obj_out_id("DEK", &cout).unwrap();
                        assert_eq!(id as u64, num(&r["id"]));
                        assert_eq!(id as u64, num(&setup["dek_obj_ids"][dek_n]));
                        dek_n += 1;
                        seen.push("dek");
                        devx::create_dek_in(&devx::DekParams { key_size: devx::KEY_SIZE_128, has_keytag: false, pdn, opaque: PERFTEST_DEK_OPAQUE, key: &key }).unwrap()
                    }
                    "CREATE_MKEY" => {
                        let index = devx::create_mkey_out_index(&cout).unwrap();
                        assert_eq!(index as u64, num(&r["id"]));
                        assert_eq!(devx::mkey_key(index, 0) as u64, num(&setup["mkey_lkey"]));
                        assert_eq!(devx::mkey_num_desc(1) as u64, num(&setup["mkey_max_entries_after_create"]));
                        seen.push("mkey");
                        devx::create_mkey_in(pdn, 1, true)
                    }
                    other => panic!("unexpected create {other}"),
                };
                assert_eq!(to_hex(&ours), to_hex(&cin), "{label}: all {} bytes", cin.len());
                let ours_io = devx::encode_obj_create(&cin, 0x1000, 0x2000, cout.len()).unwrap();
                let m_shape = {
                    let u16at = |o: usize| u16::from_le_bytes([ours_io[o], ours_io[o + 1]]) as u64;
                    let attrs = (0..3).map(|i| (u16at(24 + 16 * i), u16at(26 + 16 * i), u16at(28 + 16 * i))).collect();
                    (u16at(2), u16at(4), attrs)
                };
                assert_eq!(m_shape, framing(r), "{label}");
            }
            "DEVX_OBJ_DESTROY" => {
                // Destroy carries the handle alone; the kernel builds the destroy command.
                let m = DriverMethod {
                    name: "DEVX_OBJ_DESTROY",
                    object: devx::OBJECT_DEVX_OBJ,
                    method: devx::METHOD_DEVX_OBJ_DESTROY,
                    idr_in: Some((devx::ATTR_DEVX_OBJ_DESTROY_HANDLE, num(&r["handle"]) as u32)),
                    ..Default::default()
                };
                assert_eq!(our_framing(&m), framing(r), "{label}");
                assert_eq!(num(&r["ioctl"]["attrs"][0]["data"]), num(&r["handle"]));
                seen.push("destroy");
            }
            other => panic!("unexpected method {other}"),
        }
    }
    // libmlx5's order: both capability queries, login, DEK 0, DEK 1, mkey, then destroys.
    assert_eq!(&seen[..6], &["general", "crypto", "login", "dek", "dek", "mkey"], "{variant}");
    assert!(seen[6..].iter().all(|x| *x == "destroy"));
}

#[test]
fn devx_commands_match_libmlx5_multi_block() {
    check_variant("multi_block");
}

#[test]
fn devx_commands_match_libmlx5_single_block() {
    check_variant("single_block");
    let g = {
        let r = &records("single_block")[0];
        devx::parse_general_caps(&hex(s(r, "cmd_out"))).unwrap()
    };
    assert_eq!(g.crypto_engines(), engines::SINGLE_BLOCK);
}

#[test]
fn devx_commands_match_libmlx5_without_blueflame() {
    check_variant("multi_block_shut_up_bf");
}
