//! The AES-XTS part of the device model: UMR-configured crypto mkeys in front of the plain
//! model (see the section comment below).

use super::*;
use providers::mlx5::umr;
use uverbs::dv::CryptoAttr;

// ---- AES-XTS data path: UMR + crypto BSF (perftest --aes_xts) --------------------------------
//
// The model device learns crypto mkeys from UMR WQEs (opcode 0x25): the key in the control
// segment's imm, the UMR control segment's mask and sizes, the mkey context (access, length,
// the key's variant byte, BSF enable), the inline translation (data segments: address, length)
// and the crypto BSF (order, data-unit size, initial tweak, DEK id, key tag). A later request
// whose local SGE names such a key at an offset reads or writes the mapped ranges.
//
// Model choice, NOT AES: "encryption" is a keyed byte-wise add (decryption the matching
// subtract) of a keystream derived from (DEK id, data-unit tweak, byte index in the unit); the
// tweak of data unit k is the BSF's initial tweak read as a big-endian 128-bit number, plus k
// (the multi-block engine's convention). It only shows which bytes are ciphertext and that
// they decrypt back; it says nothing about AES-XTS itself.
//
// The model also counts requests that follow a UMR on the same QP without the initiator small
// fence (libmlx5 sets it through `fm_cache`), and asserts everything it parses.


#[derive(Clone, Debug)]
pub struct CMkey {
    pub ranges: Vec<(u64, u32)>,
    pub len: u64,
    pub access: u8,
    pub dek: u32,
    pub tweak: u128,
    pub dus: u32,
    pub encrypt_on_tx: bool,
}

#[derive(Default)]
pub struct CryptoModel {
    /// Crypto mkeys that exist, by key: `None` until a UMR configures them.
    pub mkeys: HashMap<u32, Option<CMkey>>,
    pub umrs: usize,
    pub umr_wrapped: usize,
    pub umr_blueflame: usize,
    pub crypto_requests: usize,
    pub unfenced_after_umr: usize,
    /// What each crypto request carried on the wire, in order.
    pub wire: Vec<Vec<u8>>,
    /// Per QP: the previous WQE was a UMR.
    pub after_umr: HashMap<u32, bool>,
}

pub fn model_keystream(dek: u32, tweak: u128, i: u64) -> u8 {
    let mut x = (dek as u64).rotate_left(40) ^ (tweak as u64) ^ ((tweak >> 64) as u64).rotate_left(17) ^ i.wrapping_mul(0x1000_0001);
    x = x.wrapping_add(0x9e37_79b9_7f4a_7c15);
    x = (x ^ (x >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    x = (x ^ (x >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    (x ^ (x >> 31)) as u8
}

/// The model's transform of `data` found at mkey offset `offset`.
pub fn model_cipher(dek: u32, tweak0: u128, dus: u32, offset: u64, data: &mut [u8], encrypt: bool) {
    for (j, b) in data.iter_mut().enumerate() {
        let o = offset + j as u64;
        let k = model_keystream(dek, tweak0.wrapping_add((o / dus as u64) as u128), o % dus as u64);
        *b = if encrypt { b.wrapping_add(k) } else { b.wrapping_sub(k) };
    }
}

/// What the test expects on the wire for plaintext at mkey offset `offset` under `attr`/`dek`
/// (perftest's multi-block convention: the initial tweak's bytes are a little-endian number).
pub fn expect_cipher(attr: &CryptoAttr, dek: u32, offset: u64, plain: &[u8]) -> Vec<u8> {
    let mut v = plain.to_vec();
    model_cipher(dek, u128::from_le_bytes(attr.initial_tweak), attr.data_unit_size, offset, &mut v, true);
    v
}

impl CMkey {
    pub fn read(&self, off: u64, len: usize) -> Vec<u8> {
        let mut v = Vec::with_capacity(len);
        let (mut o, mut left) = (off, len as u64);
        for &(a, n) in &self.ranges {
            if left == 0 {
                break;
            }
            if o >= n as u64 {
                o -= n as u64;
                continue;
            }
            let k = (n as u64 - o).min(left);
            v.extend(rd(a + o, k as usize));
            left -= k;
            o = 0;
        }
        v
    }
    pub fn write(&self, off: u64, data: &[u8]) {
        let (mut o, mut d) = (off, data);
        for &(a, n) in &self.ranges {
            if d.is_empty() {
                break;
            }
            if o >= n as u64 {
                o -= n as u64;
                continue;
            }
            let k = ((n as u64 - o) as usize).min(d.len());
            wr(a + o, &d[..k]);
            d = &d[k..];
            o = 0;
        }
    }
}

impl CryptoModel {
    pub fn on_event(&mut self, hca: &mut Hca, e: &UarEvent, half: usize) {
        if let Some((qpn, stores)) = hca.uar_event(e, half) {
            self.doorbell(hca, qpn, &stores);
        }
    }

    /// As `Hca::on_event`'s doorbell, dispatching UMR WQEs and requests through crypto mkeys
    /// here and everything else to `Hca::execute`.
    pub fn doorbell(&mut self, hca: &mut Hca, qpn: u32, stores: &[(usize, [u8; 8])]) {
        let (start, blueflame) = hca.doorbell(qpn, stores, |hca, ci| {
            let q = hca.qps[&qpn];
            let ctrl = rd(q.sq_slot(ci), 16);
            let op = ctrl[3];
            if self.after_umr.get(&qpn).copied().unwrap_or(false) && ctrl[11] & 0xa0 == 0 {
                self.unfenced_after_umr += 1;
            }
            let n = if op == umr::OPCODE_UMR {
                self.umr(hca, qpn, ci)
            } else if self.names_crypto_mkey(&q, ci) {
                self.crypto_request(hca, qpn, ci)
            } else {
                hca.execute(qpn, ci)
            };
            self.after_umr.insert(qpn, op == umr::OPCODE_UMR);
            n
        });
        if blueflame && rd(hca.qps[&qpn].sq_slot(start), 4)[3] == umr::OPCODE_UMR {
            self.umr_blueflame += 1;
        }
    }

    /// The RC request's local data segments (none for inline payloads).
    pub fn local_segs(w: &[u8]) -> Vec<(u32, u32, u64)> {
        let op = w[3];
        let mut pos = 16;
        if matches!(op, 0x08 | 0x09 | 0x10 | 0x11 | 0x12) {
            pos += 16;
        }
        if matches!(op, 0x11 | 0x12) {
            pos += 16;
        }
        if pos < w.len() && be32(w, pos) & 0x8000_0000 != 0 {
            return Vec::new();
        }
        w[pos..].chunks_exact(16).map(|s| (be32(s, 0), be32(s, 4), be64(s, 8))).collect()
    }

    pub fn names_crypto_mkey(&self, q: &MQp, idx: u32) -> bool {
        let (w, _, _) = q.wqe(idx);
        Self::local_segs(&w).iter().any(|s| self.mkeys.contains_key(&s.1))
    }

    pub fn umr(&mut self, hca: &mut Hca, qpn: u32, idx: u32) -> u32 {
        let q = hca.qps[&qpn];
        let (w, nbb, wrapped) = q.wqe(idx);
        assert_eq!(w[3], umr::OPCODE_UMR);
        let key = be32(&w, 12);
        assert!(self.mkeys.contains_key(&key), "model: UMR on an mkey that does not exist ({key:#x})");
        // UMR control segment.
        assert_eq!(w[16] & umr::UMR_CTRL_FLAG_INLINE, umr::UMR_CTRL_FLAG_INLINE, "translation inline");
        let klm_oct = u16::from_be_bytes([w[20], w[21]]) as usize;
        let bsf_oct = u16::from_be_bytes([w[22], w[23]]) as usize;
        let mask = be64(&w, 24);
        assert!(w[17..20].iter().all(|&b| b == 0) && w[32..64].iter().all(|&b| b == 0), "UMR ctrl reserved bytes");
        assert_eq!(w.len(), 128 + 16 * (klm_oct + bsf_oct), "ds covers ctrl, UMR ctrl, mkey context, translation, BSF");
        // Mkey context.
        let mkc = &w[64..128];
        assert_ne!(mask & umr::mkey_mask::FREE, 0);
        assert_eq!(mkc[0], 0, "free bit written as 0: the mkey becomes usable");
        assert_ne!(mask & umr::mkey_mask::MKEY, 0);
        assert_eq!(be32(mkc, 4), 0xffff_ff00 | (key & 0xff), "qpn 0xffffff and the key's variant");
        assert_ne!(mask & umr::mkey_mask::LEN, 0);
        let len = be64(mkc, 24);
        assert_eq!(be64(mkc, 16), 0, "start address 0");
        assert_eq!(mask & umr::mkey_mask::ACCESS, umr::mkey_mask::ACCESS);
        // Translation: data segments, zero entries pad to 64 bytes.
        let klm = &w[128..128 + 16 * klm_oct];
        let ranges: Vec<(u64, u32)> = klm
            .chunks_exact(16)
            .filter(|s| be32(s, 0) != 0)
            .map(|s| (be64(s, 8), be32(s, 0)))
            .collect();
        assert_eq!(ranges.iter().map(|r| r.1 as u64).sum::<u64>(), len, "mkey length = the ranges");
        // Crypto BSF.
        assert_eq!(bsf_oct, 4, "one 64-byte crypto BSF");
        assert_ne!(mask & umr::mkey_mask::BSF_ENABLE, 0);
        assert_eq!(be32(mkc, 12), umr::MKC_FLAGS_BSF_ENABLE);
        let bsf = &w[128 + 16 * klm_oct..];
        assert_eq!(bsf[0], umr::CRYPTO_BSF_SIZE_TYPE);
        assert_eq!(bsf[3], umr::ENCRYPTION_STANDARD_AES_XTS);
        assert_eq!(be32(bsf, 4), u32::MAX, "raw_data_size");
        let dus = match bsf[8] {
            1 => 512,
            2 => 520,
            6 => 4048,
            3 => 4096,
            4 => 4160,
            s => panic!("model: bad data-unit selector {s}"),
        };
        let m = CMkey {
            ranges,
            len,
            access: mkc[2],
            dek: be32(bsf, 32) & 0xff_ffff,
            tweak: u128::from_be_bytes(bsf[16..32].try_into().unwrap()),
            dus,
            encrypt_on_tx: matches!(bsf[1], umr::enc_order::ENCRYPTED_RAW_WIRE | umr::enc_order::ENCRYPTED_WIRE_SIGNATURE),
        };
        self.mkeys.insert(key, Some(m));
        self.umrs += 1;
        if wrapped {
            self.umr_wrapped += 1;
        }
        if w[11] & 0x08 != 0 {
            hca.req_cqe(&q, idx, umr::OPCODE_UMR, 0, None);
        }
        nbb
    }

    pub fn crypto_request(&mut self, hca: &mut Hca, qpn: u32, idx: u32) -> u32 {
        let q = hca.qps[&qpn];
        let (w, nbb, _) = q.wqe(idx);
        let op = w[3];
        let (raddr, rkey) = (be64(&w, 16), be32(&w, 24));
        let segs = Self::local_segs(&w);
        let mut synd = None;
        if matches!(op, 0x08 | 0x09 | 0x10) && rkey != RKEY {
            synd = Some(0x13);
        }
        // Every local SGE naming a crypto mkey must fall inside a configured mapping with the
        // access the direction needs; anything else is a local protection error.
        for &(n, lkey, addr) in &segs {
            if let Some(m) = self.mkeys.get(&lkey) {
                let ok = m.as_ref().is_some_and(|m| {
                    addr.checked_add(n as u64).is_some_and(|end| end <= m.len)
                        && (op != 0x10 || m.access & umr::mkc_access::LOCAL_WRITE != 0)
                });
                if !ok {
                    synd = Some(0x04);
                }
            }
        }
        self.crypto_requests += 1;
        let mut byte_cnt = 0;
        if synd.is_none() {
            // Out of memory: gather (and transform through the mkey).
            let gather = |this: &Self| -> Vec<u8> {
                let mut v = Vec::new();
                for &(n, lkey, addr) in &segs {
                    match this.mkeys.get(&lkey) {
                        Some(Some(m)) => {
                            let mut d = m.read(addr, n as usize);
                            model_cipher(m.dek, m.tweak, m.dus, addr, &mut d, m.encrypt_on_tx);
                            v.extend(d);
                        }
                        _ => v.extend(rd(addr, n as usize)),
                    }
                }
                v
            };
            match op {
                0x08 => {
                    let d = gather(self);
                    wr(raddr, &d);
                    self.wire.push(d);
                }
                0x0a => {
                    let d = gather(self);
                    hca.receive(q.peer, Some(&d), None, d.len() as u32, 2, qpn, None);
                    self.wire.push(d);
                }
                0x10 => {
                    let total: usize = segs.iter().map(|s| s.0 as usize).sum();
                    let d = rd(raddr, total);
                    let mut o = 0;
                    for &(n, lkey, addr) in &segs {
                        let mut part = d[o..o + n as usize].to_vec();
                        match self.mkeys.get(&lkey) {
                            Some(Some(m)) => {
                                model_cipher(m.dek, m.tweak, m.dus, addr, &mut part, !m.encrypt_on_tx);
                                m.write(addr, &part);
                            }
                            _ => wr(addr, &part),
                        }
                        o += n as usize;
                    }
                    byte_cnt = total as u32;
                    self.wire.push(d);
                }
                o => panic!("model: crypto mkey with opcode {o:#x} not modelled"),
            }
        }
        if w[11] & 0x08 != 0 || synd.is_some() {
            hca.req_cqe(&q, idx, op, byte_cnt, synd);
        }
        nbb
    }
}

pub const CRYPTO_MKEY: u32 = 0x0004_5600;

/// An RC pair (max_inline_data 124: the least a crypto UMR fits in) whose device is the crypto
/// model in front of the plain one; the context reports single- and multi-block engines.
pub fn crypto_pair(blueflame: bool, max_send_wr: u32) -> (Pair, Arc<Mutex<CryptoModel>>) {
    crypto_device(create_pair(crypto_caps(max_send_wr), 15, blueflame))
}

pub fn crypto_caps(max_send_wr: u32) -> QpCaps {
    QpCaps { max_send_wr, max_recv_wr: 4, max_send_sge: 1, max_recv_sge: 1, max_inline_data: 124 }
}

/// Put the crypto model in front of `p`'s device.
pub fn crypto_device(p: Pair) -> (Pair, Arc<Mutex<CryptoModel>>) {
    let dev = Arc::new(Mutex::new(CryptoModel::default()));
    let (h, d) = (p.hca.clone(), dev.clone());
    let half = p.ctx.plan.toggle();
    p.ctx.uar().set_hook(move |e| {
        let mut hca = h.lock().unwrap();
        d.lock().unwrap().on_event(&mut hca, e, half)
    });
    p.ctx.set_crypto_engines(umr::engines::AES_XTS | umr::engines::SINGLE_BLOCK | umr::engines::MULTI_BLOCK);
    (p, dev)
}

pub fn perftest_crypto_attr(dus: u32) -> CryptoAttr {
    let mut tweak = [0u8; 16];
    for (i, t) in tweak.iter_mut().enumerate() {
        *t = i as u8;
    }
    CryptoAttr { encrypt_on_tx: true, signature_before_crypto_on_tx: false, initial_tweak: tweak, keytag: [0; 8], data_unit_size: dus }
}

pub const RR_RW_LW: u32 = 4 | 2 | 1;
