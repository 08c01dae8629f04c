//! The PRM encoders byte by byte. Every expected byte position below was worked out by hand
//! from the `mlx5_ifc.h` bit offsets (rdma-core v44.0, unchanged at HEAD for these fields):
//! bit offset `o` is byte `o / 8`, bit `7 - o % 8` (big-endian, `DEVX_SET`).

use super::*;

fn hex(b: &[u8]) -> String {
    b.iter().map(|x| format!("{x:02x}")).collect()
}

/// Only the listed (offset, byte) pairs are non-zero.
fn assert_sparse(b: &[u8], want: &[(usize, u8)]) {
    for (i, &x) in b.iter().enumerate() {
        let w = want.iter().find(|(o, _)| *o == i).map_or(0, |(_, v)| *v);
        assert_eq!(x, w, "byte {i} ({i:#x}): got {x:#04x}, want {w:#04x}\n{}", hex(b));
    }
}

#[test]
fn bit_helpers_follow_devx_set() {
    let mut b = [0u8; 8];
    set_bits(&mut b, 0, 16, 0xa00);
    assert_eq!(b[..2], [0x0a, 0x00]);
    set_bits(&mut b, 0x14, 4, 0x3); // a nibble at bit 20: byte 2, low half
    assert_eq!(b[2], 0x03);
    set_bits(&mut b, 0x1d, 2, 0x2); // straddles nothing: byte 3, bits 5-6
    assert_eq!(b[3], 0b0000_0100);
    set_bits(&mut b, 0x1f, 2, 0x3); // straddles bytes 3 and 4
    assert_eq!((b[3], b[4]), (0b0000_0101, 0b1000_0000));
    assert_eq!(get_bits(&b, 0x1f, 2), 3);
    assert_eq!(get_bits(&b, 0, 16), 0xa00);
    // Values are truncated to the width; clearing works.
    set_bits(&mut b, 0x14, 4, 0xf5);
    assert_eq!(b[2], 0x05);
    set_bits(&mut b, 0, 16, 0);
    assert_eq!(b[..2], [0, 0]);
    // 64-bit fields, and reads/writes past the end neither panic nor write.
    let mut w = [0u8; 8];
    set_bits(&mut w, 0, 64, 0x0102_0304_0506_0708);
    assert_eq!(w, [1, 2, 3, 4, 5, 6, 7, 8]);
    assert_eq!(get_bits(&w, 0, 64), 0x0102_0304_0506_0708);
    set_bits(&mut w, 60, 16, 0xffff);
    assert_eq!(w[7], 0x0f);
    assert_eq!(get_bits(&w, 60, 16), 0xf000);
    assert_eq!(get_bits(&[], 0, 32), 0);
}

#[test]
fn query_hca_cap_in_bytes() {
    assert_eq!(hex(&query_hca_cap_in(OP_MOD_GENERAL_DEVICE_CUR)), "01000000000000010000000000000000");
    // MLX5_SET_HCA_CAP_OP_MOD_CRYPTO = 0x1a << 1, | GET_CUR = 0x35.
    assert_eq!(hex(&query_hca_cap_in(OP_MOD_CRYPTO_CUR)), "01000000000000350000000000000000");
}

#[test]
fn crypto_login_in_bytes() {
    let mut cred = [0u8; 48];
    for (i, c) in cred.iter_mut().enumerate() {
        *c = 0x80 + i as u8;
    }
    let b = crypto_login_in(0x0a_0b0c, 0x01_0203, &cred);
    assert_eq!(b.len(), 272);
    let mut want = vec![
        (0, 0x0a), // opcode 0xa00 CREATE_GENERAL_OBJECT
        (7, 0x1f), // obj_type CRYPTO_LOGIN (bits 0x30..0x40)
        // login_obj at byte 16: credential_pointer bits 0x88..0xa0 -> bytes 33..36
        (33, 0x0a),
        (34, 0x0b),
        (35, 0x0c),
        // session_import_kek_ptr bits 0xa8..0xc0 -> bytes 37..40
        (37, 0x01),
        (38, 0x02),
        (39, 0x03),
    ];
    // credential at bit 0x200 of the object -> bytes 80..128
    want.extend((0..48).map(|i| (80 + i, 0x80 + i as u8)));
    assert_sparse(&b, &want);
    // perftest's call: both ids 0.
    let b = crypto_login_in(0, 0, &cred);
    assert_eq!(&b[16..80], &[0u8; 64][..]);
    assert_eq!(&b[80..128], &cred[..]);
}

#[test]
fn create_dek_in_bytes() {
    let key: Vec<u8> = (1..=40).collect();
    let b = create_dek_in(&DekParams {
        key_size: KEY_SIZE_128,
        has_keytag: false,
        pdn: 0x12_3456,
        opaque: [0x11, 0, 0, 0, 0, 0, 0, 0],
        key: &key,
    })
    .unwrap();
    assert_eq!(b.len(), 272);
    let mut want = vec![
        (0, 0x0a),
        (7, 0x0c), // obj_type DEK
        // key_obj at byte 16: key_size (0x54, 4 bits) = 0 -> byte 26 low nibble; has_keytag
        // (0x58) = 0 and key_purpose (0x5c, 4 bits) = AES_XTS 3 -> byte 27
        (27, 0x03),
        // pd bits 0x68..0x80 -> bytes 29..32
        (29, 0x12),
        (30, 0x34),
        (31, 0x56),
        // opaque at bit 0x180 -> byte 16 + 48 = 64
        (64, 0x11),
    ];
    // key at bit 0x200 -> byte 16 + 64 = 80; the rest of the 128-byte field stays 0.
    want.extend((0..40).map(|i| (80 + i, 1 + i as u8)));
    assert_sparse(&b, &want);

    // 256-bit, with keytag: byte 26 low nibble = 1, byte 27 = 0x80 | 0x03.
    let b = create_dek_in(&DekParams { key_size: KEY_SIZE_256, has_keytag: true, pdn: 1, opaque: [0; 8], key: &[] }).unwrap();
    assert_eq!((b[26], b[27], b[31]), (0x01, 0x83, 0x01));

    assert!(create_dek_in(&DekParams { key_size: 2, has_keytag: false, pdn: 1, opaque: [0; 8], key: &[] }).is_err());
    assert!(create_dek_in(&DekParams { key_size: 0, has_keytag: false, pdn: 1, opaque: [0; 8], key: &[0; 129] }).is_err());
}

#[test]
fn create_mkey_in_bytes() {
    let b = create_mkey_in(0xab_cdef, 1, true);
    assert_eq!(b.len(), 272);
    let m = 16; // memory_key_mkey_entry at bit 0x80
    assert_sparse(
        &b,
        &[
            (0, 0x02), // opcode 0x200 CREATE_MKEY
            (m, 0x40), // free (bit 1)
            // umr_en (0x10) 0x80 | lr (0x15) 0x04 | access_mode_1_0 (0x16..0x18) = KLMs 2 -> 0x02
            (m + 2, 0x86),
            // qpn 0xffffff (0x20..0x38), mkey_7_0 0 (0x38..0x40)
            (m + 4, 0xff),
            (m + 5, 0xff),
            (m + 6, 0xff),
            (m + 12, 0x40), // bsf_en (0x61)
            // pd (0x68..0x80)
            (m + 13, 0xab),
            (m + 14, 0xcd),
            (m + 15, 0xef),
            // bsf_octword_size (0x100..0x120) = sizeof(mlx5_crypto_bsf) / 16 = 4
            (m + 35, 0x04),
            // translations_octword_size (0x1a0..0x1c0) = align(1, 4) = 4
            (m + 55, 0x04),
            // crypto_en (0x1e3, 2 bits) = 1 -> bit 0x1e4 -> byte 60, 0x08
            (m + 60, 0x08),
        ],
    );
    // Without the crypto flag: no bsf_en, BSF size or crypto_en; 5 entries -> 8 descriptors.
    let b = create_mkey_in(1, 5, false);
    assert_eq!((b[m + 12], b[m + 35], b[m + 60]), (0, 0, 0));
    assert_eq!(b[m + 55], 8);
    assert_eq!((mkey_num_desc(1), mkey_num_desc(4), mkey_num_desc(5), mkey_num_desc(u16::MAX)), (4, 4, 8, 65536));
}

#[test]
fn destroy_encoders_bytes() {
    assert_eq!(hex(&destroy_general_obj_in(OBJ_TYPE_DEK, 0x0102_0304)), "0a030000" .to_string() + "0000000c" + "01020304" + "00000000");
    assert_eq!(hex(&destroy_mkey_in(0x12_3456)), "02020000" .to_string() + "00000000" + "00123456" + "00000000");
    assert_eq!(mkey_key(0x12_3456, 0), 0x1234_5600);
}

#[test]
fn status_and_syndrome_become_errors() {
    let mut out = [0u8; 16];
    check_out("CREATE_MKEY", &out).unwrap();
    out[0] = 0x03;
    out[4..8].copy_from_slice(&[0x12, 0x34, 0x56, 0x78]);
    let e = check_out("CREATE_MKEY", &out).unwrap_err();
    let s = e.to_string();
    assert!(s.contains("CREATE_MKEY") && s.contains("BAD_PARAM_ERR") && s.contains("0x12345678"), "{s}");
    assert_eq!(e.errno, Some(libc::EINVAL));
    assert_eq!(out_status(&out), Some((3, 0x1234_5678)));
    // The errno mapping is libmlx5's mlx5_cmd_status_to_err.
    for (st, name, errno) in [
        (0x1, "INT_ERR", libc::EIO),
        (0x4, "BAD_SYS_STATE_ERR", libc::EIO),
        (0x5, "BAD_RES_ERR", libc::EINVAL),
        (0x6, "RES_BUSY", libc::EBUSY),
        (0x8, "LIM_ERR", libc::ENOMEM),
        (0xa, "IX_ERR", libc::EINVAL),
        (0xf, "NO_RES_ERR", libc::EAGAIN),
        (0x50, "BAD_INP_LEN_ERR", libc::EIO),
        (0x77, "unknown status", libc::EIO),
    ] {
        assert_eq!((status_name(st), status_errno(st)), (name, errno));
    }
    // Short outputs are errors, not panics.
    assert!(check_out("X", &[0; 7]).unwrap_err().to_string().contains("shorter"));
    assert!(general_obj_out_id("X", &[0; 8]).is_err());
    assert!(create_mkey_out_index(&[0; 12]).is_err());
}

#[test]
fn object_outputs_decode() {
    let mut out = [0u8; 16];
    out[8..12].copy_from_slice(&[0xde, 0xad, 0xbe, 0xef]);
    assert_eq!(general_obj_out_id("CREATE_GENERAL_OBJECT (DEK)", &out).unwrap(), 0xdead_beef);
    // mkey_index: bits 0x48..0x60 -> bytes 9..12 (byte 8 reserved, ignored)
    let mut out = [0u8; 16];
    out[8..12].copy_from_slice(&[0xff, 0x00, 0x12, 0x34]);
    assert_eq!(create_mkey_out_index(&out).unwrap(), 0x1234);
}

#[test]
fn capability_outputs_decode() {
    let mut out = vec![0u8; QUERY_HCA_CAP_OUT_LEN];
    assert_eq!(parse_general_caps(&out).unwrap(), GeneralCaps::default());
    // capability at byte 16. crypto: 0x469 -> byte 16 + 141 = 157, bit 1 (0x40).
    out[157] = 0x40;
    // aes_xts_single_block_le_tweak 0x3f1 / multi 0x3f2 -> byte 16 + 126 = 142, 0x40 / 0x20.
    out[142] = 0x40;
    // general_obj_types 0x400..0x440 -> bytes 144..152, big-endian.
    out[144..152].copy_from_slice(&((1u64 << 0xc) | (1u64 << 0x1f)).to_be_bytes());
    let g = parse_general_caps(&out).unwrap();
    assert!(g.crypto && g.aes_xts_single_block && !g.aes_xts_multi_block && g.aes_xts());
    assert!(g.obj_type(OBJ_TYPE_DEK) && g.obj_type(OBJ_TYPE_CRYPTO_LOGIN) && !g.obj_type(0x13) && !g.obj_type(64));
    out[142] = 0x20;
    let g = parse_general_caps(&out).unwrap();
    assert!(!g.aes_xts_single_block && g.aes_xts_multi_block && g.aes_xts());

    let mut out = vec![0u8; QUERY_HCA_CAP_OUT_LEN];
    out[16] = 0x80; // wrapped_crypto_operational (bit 0)
    out[19] = WRAPPED_IMPORT_METHOD_AES; // wrapped_import_method bits 0x18..0x20
    out[21] = 0x1f & 10; // log_max_num_deks bits 0x2b..0x30: low 5 bits of byte 21
    out[24..26].copy_from_slice(&[0x00, 0x05]); // failed_selftests bits 0x40..0x50
    let c = parse_crypto_caps(&out).unwrap();
    assert_eq!(
        c,
        CryptoCaps {
            wrapped_crypto_operational: true,
            wrapped_crypto_going_to_commissioning: false,
            wrapped_import_method: 4,
            log_max_num_deks: 10,
            failed_selftests: 5
        }
    );
    assert!(c.wrapped_aes_xts_import());
    out[16] = 0x40;
    let c = parse_crypto_caps(&out).unwrap();
    assert!(!c.wrapped_crypto_operational && c.wrapped_crypto_going_to_commissioning);

    // A failed query reports its status; a short one its length.
    out[0] = 0x02;
    assert!(parse_crypto_caps(&out).unwrap_err().to_string().contains("BAD_OP_ERR"));
    assert!(parse_general_caps(&[0u8; 100]).unwrap_err().to_string().contains("100 bytes"));
}

#[test]
fn decoders_never_panic_on_garbage() {
    let mut x: u64 = 0x9e37_79b9_7f4a_7c15;
    let mut next = || {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        x
    };
    for round in 0..400 {
        let len = match round % 4 {
            0 => (next() % 24) as usize,
            1 => (next() % 5000) as usize,
            2 => QUERY_HCA_CAP_OUT_LEN,
            _ => 16,
        };
        let buf: Vec<u8> = (0..len).map(|_| next() as u8).collect();
        let _ = check_out("X", &buf);
        let _ = out_status(&buf);
        let _ = general_obj_out_id("X", &buf);
        let _ = create_mkey_out_index(&buf);
        let _ = parse_general_caps(&buf);
        let _ = parse_crypto_caps(&buf);
        let bit = (next() % 50_000) as usize;
        let _ = get_bits(&buf, bit, (next() % 80) as usize);
        let mut m = buf.clone();
        set_bits(&mut m, bit, (next() % 80) as usize, next());
        assert_eq!(m.len(), buf.len());
    }
}

#[test]
fn devx_obj_create_ioctl_bytes() {
    let b = encode_obj_create(&[0u8; 272], 0x1000, 0x2000, 16).unwrap();
    let want = String::new()
        // ib_uverbs_ioctl_hdr: length 24 + 3 * 16, object MLX5_IB_OBJECT_DEVX_OBJ 0x1001,
        // method DEVX_OBJ_CREATE 0x1000, 3 attributes, driver_id RDMA_DRIVER_MLX5
        + "4800" + "0110" + "0010" + "0300" + "0000000000000000" + "01000000" + "00000000"
        // HANDLE (0x1000): IDR new, mandatory
        + "0010" + "0000" + "0100" + "0000" + "0000000000000000"
        // CMD_IN (0x1001): 272 bytes at 0x1000
        + "0110" + "1001" + "0100" + "0000" + "0010000000000000"
        // CMD_OUT (0x1002): 16 bytes at 0x2000
        + "0210" + "1000" + "0100" + "0000" + "0020000000000000";
    assert_eq!(hex(&b), want);
}

#[test]
fn kernel_refusals_name_the_device_status_when_the_kernel_copied_it() {
    // Kernels whose DEVX uses mlx5_cmd_do answer EREMOTEIO and copy the mailbox out.
    let mut out = [0u8; 16];
    out[0] = 0x08;
    out[4..8].copy_from_slice(&[0, 0, 0x0b, 0xad]);
    let e = devx_error("CREATE_GENERAL_OBJECT (DEK)", libc::EREMOTEIO, &out);
    let s = e.to_string();
    assert!(s.contains("CREATE_GENERAL_OBJECT (DEK)") && s.contains("LIM_ERR") && s.contains("0x00000bad"), "{s}");
    assert_eq!(e.errno, Some(libc::ENOMEM));
    // Older kernels (mlx5_cmd_exec) return the errno and leave the output untouched.
    let e = devx_error("CREATE_MKEY (crypto)", libc::EINVAL, &[0u8; 16]);
    assert_eq!(e.errno, Some(libc::EINVAL));
    assert!(e.to_string().contains("CREATE_MKEY (crypto)"), "{e}");
    assert!(e.hint.is_some());
    // Nothing at all (a short or empty output) is still an error, not a panic.
    assert_eq!(devx_error("X", libc::EPERM, &[]).errno, Some(libc::EPERM));
}

#[test]
fn kernel_refusals_of_both_devx_methods_name_the_command() {
    // /dev/null is no uverbs device: the DEVX ioctl fails with ENOTTY and leaves the output
    // zeroed, so both methods report the kernel's errno under the command's name.
    let fd: SharedFd = std::sync::Arc::new(std::fs::File::open("/dev/null").unwrap().into());
    let e = general_cmd(&fd, "QUERY_HCA_CAP (crypto)", &query_hca_cap_in(OP_MOD_CRYPTO_CUR), QUERY_HCA_CAP_OUT_LEN).unwrap_err();
    assert_eq!((e.what.as_str(), e.errno), ("mlx5 QUERY_HCA_CAP (crypto) (DEVX)", Some(libc::ENOTTY)), "{e}");
    let e = obj_create(&fd, "CREATE_MKEY (crypto)", &create_mkey_in(5, 1, true), CREATE_MKEY_OUT_LEN).err().unwrap();
    assert_eq!((e.what.as_str(), e.errno), ("mlx5 CREATE_MKEY (crypto) (DEVX)", Some(libc::ENOTTY)), "{e}");
    assert!(obj_destroy(&fd, 1).unwrap_err().to_string().starts_with("mlx5 DEVX_OBJ_DESTROY failed"));
}
