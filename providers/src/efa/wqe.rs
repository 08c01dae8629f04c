//! TX and RX descriptor encoding: pure, byte-exact with what libefa 44 writes (`efa_post_send`,
//! `efa_send_wr_*`, `efa_post_recv`). The caller owns the ring state (request id, phase) and
//! copies the bytes to the LLQ or the RQ ring.

use uverbs::wr::Sge;

use super::hw::{self, ctrl1, ctrl2, meta};

/// What a send carries: a scatter list (up to two buffers), or inline bytes (up to 32) the
/// caller has gathered from the application's buffers.
#[derive(Clone, Copy, Debug)]
pub enum TxPayload<'a> {
    Sgl(&'a [Sge]),
    Inline(&'a [u8]),
}

/// Where a request goes: UD and SRD address every request (`wr.ud` / `ibv_wr_set_ud_addr`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct TxDest {
    /// The device's address handle number (`efa_ibv_create_ah_resp.efa_address_handle`).
    pub ah: u16,
    pub remote_qpn: u16,
    pub qkey: u32,
}

/// The ring's part of a TX descriptor: the request id from the index pool and the SQ phase.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct TxSlot {
    pub req_id: u16,
    pub phase: u8,
}

/// A request the encoder refuses (the same checks as libefa's, before anything is written).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum WqeError {
    TooManySges {
        got: usize,
        max: usize,
    },
    InlineTooLong {
        got: usize,
        max: usize,
    },
    /// An RDMA read or write takes exactly one local buffer.
    ReadSges {
        got: usize,
    },
}

impl std::fmt::Display for WqeError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            WqeError::TooManySges { got, max } => {
                write!(f, "{got} SGEs, an EFA send takes at most {max}")
            }
            WqeError::InlineTooLong { got, max } => {
                write!(f, "{got} inline bytes, an EFA send takes at most {max}")
            }
            WqeError::ReadSges { got } => {
                write!(f, "{got} SGEs, an EFA RDMA read or write takes exactly one")
            }
        }
    }
}

fn put16(b: &mut [u8], off: usize, v: u16) {
    b[off..off + 2].copy_from_slice(&v.to_le_bytes());
}

fn put32(b: &mut [u8], off: usize, v: u32) {
    b[off..off + 4].copy_from_slice(&v.to_le_bytes());
}

/// The meta descriptor every TX WQE starts with (`efa_set_common_ctrl_flags` and the address):
/// meta_desc, first, last and comp_req always set (libefa requests a completion for every WQE).
fn put_meta(b: &mut [u8; hw::TX_WQE_SIZE], slot: TxSlot, op: u8, dest: TxDest) {
    put16(b, meta::REQ_ID, slot.req_id);
    b[meta::CTRL1] = ctrl1::META_DESC | (op & ctrl1::OP_TYPE_MASK);
    b[meta::CTRL2] = (slot.phase & ctrl2::PHASE) | ctrl2::FIRST | ctrl2::LAST | ctrl2::COMP_REQ;
    put16(b, meta::DEST_QP_NUM, dest.remote_qpn);
    put16(b, meta::AH, dest.ah);
    put32(b, meta::QKEY, dest.qkey);
}

/// One buffer descriptor (`efa_set_tx_buf`) at `off`: length, lkey (24 bits), address.
fn put_buf(b: &mut [u8], off: usize, sge: &Sge) {
    put32(b, off, sge.length);
    put32(b, off + 4, sge.lkey & hw::LKEY_MASK);
    put32(b, off + 8, sge.addr as u32);
    put32(b, off + 12, (sge.addr >> 32) as u32);
}

/// A SEND (with `imm`, the immediate in host order, for SEND_WITH_IMM): the 64 bytes libefa's
/// `efa_post_send` copies to the LLQ.
pub fn encode_send(
    slot: TxSlot,
    dest: TxDest,
    imm: Option<u32>,
    payload: TxPayload<'_>,
) -> Result<[u8; hw::TX_WQE_SIZE], WqeError> {
    let mut b = [0u8; hw::TX_WQE_SIZE];
    put_meta(&mut b, slot, hw::OP_SEND, dest);
    match payload {
        TxPayload::Sgl(sgl) => {
            if sgl.len() > hw::TX_NUM_BUFS {
                return Err(WqeError::TooManySges {
                    got: sgl.len(),
                    max: hw::TX_NUM_BUFS,
                });
            }
            put16(&mut b, meta::LENGTH, sgl.len() as u16);
            for (i, sge) in sgl.iter().enumerate() {
                put_buf(&mut b, hw::TX_META_SIZE + i * hw::TX_BUF_DESC_SIZE, sge);
            }
        }
        TxPayload::Inline(data) => {
            if data.len() > hw::TX_INLINE_MAX {
                return Err(WqeError::InlineTooLong {
                    got: data.len(),
                    max: hw::TX_INLINE_MAX,
                });
            }
            b[meta::CTRL1] |= ctrl1::INLINE_MSG;
            put16(&mut b, meta::LENGTH, data.len() as u16);
            b[hw::TX_META_SIZE..hw::TX_META_SIZE + data.len()].copy_from_slice(data);
        }
    }
    if let Some(v) = imm {
        put32(&mut b, meta::IMMEDIATE_DATA, v);
        b[meta::CTRL1] |= ctrl1::HAS_IMM;
    }
    Ok(b)
}

/// An RDMA READ of `local.length` bytes from `remote_addr`/`rkey` into `local` (SRD only, where
/// the device's caps have RDMA read): what `ibv_wr_rdma_read` + `ibv_wr_set_sge` +
/// `ibv_wr_set_ud_addr` build in libefa 44. The remote descriptor takes the local length.
pub fn encode_rdma_read(
    slot: TxSlot,
    dest: TxDest,
    remote_addr: u64,
    rkey: u32,
    local: &[Sge],
) -> Result<[u8; hw::TX_WQE_SIZE], WqeError> {
    encode_rdma(slot, dest, hw::OP_RDMA_READ, remote_addr, rkey, local)
}

/// An RDMA WRITE of `local` to `remote_addr`/`rkey`, with the immediate `imm` (host order) for
/// WRITE_WITH_IMM (SRD only, where the device's caps have RDMA write): what rdma-core 46's
/// `ibv_wr_rdma_write[_imm]` + `ibv_wr_set_sge` + `ibv_wr_set_ud_addr` build: the READ's
/// layout with op type 2, and the immediate and its flag as a SEND carries them. No libefa we
/// can run writes it (44 has no RDMA write): its bytes have no oracle.
pub fn encode_rdma_write(
    slot: TxSlot,
    dest: TxDest,
    remote_addr: u64,
    rkey: u32,
    local: &[Sge],
    imm: Option<u32>,
) -> Result<[u8; hw::TX_WQE_SIZE], WqeError> {
    let mut b = encode_rdma(slot, dest, hw::OP_RDMA_WRITE, remote_addr, rkey, local)?;
    if let Some(v) = imm {
        put32(&mut b, meta::IMMEDIATE_DATA, v);
        b[meta::CTRL1] |= ctrl1::HAS_IMM;
    }
    Ok(b)
}

/// An RDMA request (`efa_io_rdma_req`): the remote descriptor (length of the one local buffer,
/// rkey, address), then the local buffer.
fn encode_rdma(
    slot: TxSlot,
    dest: TxDest,
    op: u8,
    remote_addr: u64,
    rkey: u32,
    local: &[Sge],
) -> Result<[u8; hw::TX_WQE_SIZE], WqeError> {
    let [sge] = local else {
        return Err(WqeError::ReadSges { got: local.len() });
    };
    let mut b = [0u8; hw::TX_WQE_SIZE];
    put_meta(&mut b, slot, op, dest);
    put16(&mut b, meta::LENGTH, 1);
    let r = hw::TX_META_SIZE;
    put32(&mut b, r, sge.length);
    put32(&mut b, r + 4, rkey);
    put32(&mut b, r + 8, remote_addr as u32);
    put32(&mut b, r + 12, (remote_addr >> 32) as u32);
    put_buf(&mut b, r + hw::TX_BUF_DESC_SIZE, sge);
    Ok(b)
}

/// The RX descriptors of one receive, one per SGE (`efa_post_recv`): `req_id` only in the
/// first, first set on the first, last on the last. An empty list gives no descriptor (libefa
/// posts nothing for it, yet takes a request id).
pub fn encode_recv(req_id: u16, sgl: &[Sge]) -> impl Iterator<Item = [u8; hw::RX_DESC_SIZE]> + '_ {
    let n = sgl.len();
    sgl.iter().enumerate().map(move |(i, sge)| {
        let mut b = [0u8; hw::RX_DESC_SIZE];
        put32(&mut b, 0, sge.addr as u32);
        put32(&mut b, 4, (sge.addr >> 32) as u32);
        if i == 0 {
            put16(&mut b, 8, req_id);
        }
        put16(&mut b, 10, sge.length as u16);
        let mut ctrl = sge.lkey & hw::LKEY_MASK;
        if i == 0 {
            ctrl |= hw::RX_FIRST;
        }
        if i + 1 == n {
            ctrl |= hw::RX_LAST;
        }
        put32(&mut b, 12, ctrl);
        b
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hex(b: &[u8]) -> String {
        b.iter().map(|x| format!("{x:02x}")).collect()
    }

    const DEST: TxDest = TxDest {
        ah: 0x0102,
        remote_qpn: 0x0304,
        qkey: 0x1122_3344,
    };

    #[test]
    fn send_with_two_sges() {
        let sgl = [
            Sge {
                addr: 0x1122_3344_5566_7788,
                length: 0x100,
                lkey: 0xab12_3456,
            },
            Sge {
                addr: 0x10,
                length: 7,
                lkey: 9,
            },
        ];
        let b = encode_send(
            TxSlot {
                req_id: 5,
                phase: 1,
            },
            DEST,
            None,
            TxPayload::Sgl(&sgl),
        )
        .unwrap();
        assert_eq!(
            hex(&b),
            concat!(
                "0500",
                "80",
                "1d",
                "0403",
                "0200",
                "00000000",
                "0201",
                "0000",
                "44332211",
                "000000000000000000000000",
                "00010000",
                "56341200",
                "88776655",
                "44332211",
                "07000000",
                "09000000",
                "10000000",
                "00000000",
            )
        );
    }

    #[test]
    fn send_inline_with_imm_phase_zero() {
        let b = encode_send(
            TxSlot {
                req_id: 0xfffe,
                phase: 0,
            },
            DEST,
            Some(0xdead_beef),
            TxPayload::Inline(b"hello"),
        )
        .unwrap();
        assert_eq!(&b[0..4], &[0xfe, 0xff, 0x80 | 0x20 | 0x10, 0x1c]);
        assert_eq!(&b[6..8], &5u16.to_le_bytes());
        assert_eq!(&b[8..12], &0xdead_beefu32.to_le_bytes());
        assert_eq!(&b[32..37], b"hello");
        assert!(b[37..].iter().all(|&x| x == 0));
    }

    #[test]
    fn phase_takes_only_bit_zero() {
        let b = encode_send(
            TxSlot {
                req_id: 0,
                phase: 2,
            },
            DEST,
            None,
            TxPayload::Sgl(&[]),
        )
        .unwrap();
        assert_eq!(b[3], 0x1c);
    }

    #[test]
    fn refusals() {
        let s = Sge {
            addr: 0,
            length: 1,
            lkey: 1,
        };
        assert_eq!(
            encode_send(TxSlot::default(), DEST, None, TxPayload::Sgl(&[s, s, s])),
            Err(WqeError::TooManySges { got: 3, max: 2 })
        );
        assert_eq!(
            encode_send(TxSlot::default(), DEST, None, TxPayload::Inline(&[0; 33])),
            Err(WqeError::InlineTooLong { got: 33, max: 32 })
        );
        assert_eq!(
            encode_rdma_read(TxSlot::default(), DEST, 0, 0, &[s, s]),
            Err(WqeError::ReadSges { got: 2 })
        );
    }

    #[test]
    fn rdma_read() {
        let sge = Sge {
            addr: 0xaaaa_bbbb_cccc_dddd,
            length: 4096,
            lkey: 0x77,
        };
        let b = encode_rdma_read(
            TxSlot {
                req_id: 3,
                phase: 1,
            },
            DEST,
            0x1_0000_2000,
            0x55,
            &[sge],
        )
        .unwrap();
        assert_eq!(b[2], 0x81);
        assert_eq!(&b[6..8], &1u16.to_le_bytes());
        assert_eq!(hex(&b[32..48]), "00100000550000000020000001000000");
        assert_eq!(hex(&b[48..64]), "0010000077000000ddddccccbbbbaaaa");
    }

    #[test]
    fn rdma_write_is_the_reads_layout_with_op_type_2() {
        // rdma-core 46's efa_send_wr_rdma_write[_imm]: no libefa here writes it, so the bytes
        // are checked against the read's (which libefa 44's oracle fixed) and the send's imm.
        let sge = Sge {
            addr: 0xaaaa_bbbb_cccc_dddd,
            length: 4096,
            lkey: 0x77,
        };
        let slot = TxSlot {
            req_id: 3,
            phase: 1,
        };
        let read = encode_rdma_read(slot, DEST, 0x1_0000_2000, 0x55, &[sge]).unwrap();
        let w = encode_rdma_write(slot, DEST, 0x1_0000_2000, 0x55, &[sge], None).unwrap();
        assert_eq!(w[2], 0x82, "meta_desc and op type 2, no immediate");
        assert_eq!(w[..2], read[..2]);
        assert_eq!(w[3..], read[3..]);
        let wi =
            encode_rdma_write(slot, DEST, 0x1_0000_2000, 0x55, &[sge], Some(0xa1b2_c3d4)).unwrap();
        assert_eq!(wi[2], 0x92, "has_imm");
        assert_eq!(hex(&wi[8..12]), "d4c3b2a1");
        assert_eq!(wi[12..], w[12..]);
        assert_eq!(
            encode_rdma_write(slot, DEST, 0, 0, &[sge, sge], None),
            Err(WqeError::ReadSges { got: 2 })
        );
    }

    #[test]
    fn recv_descriptors() {
        let sgl = [
            Sge {
                addr: 0x1_0000_0010,
                length: 64,
                lkey: 0x0100_0002,
            },
            Sge {
                addr: 0x20,
                length: 8,
                lkey: 3,
            },
        ];
        let d: Vec<_> = encode_recv(9, &sgl).collect();
        assert_eq!(hex(&d[0]), "10000000010000000900400002000040");
        assert_eq!(hex(&d[1]), "20000000000000000000080003000080");
        let one: Vec<_> = encode_recv(1, &sgl[..1]).collect();
        assert_eq!(hex(&one[0]), "100000000100000001004000020000c0");
        assert_eq!(encode_recv(1, &[]).count(), 0);
    }
}
