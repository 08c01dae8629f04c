//! The GID extension: how two rperftest qperf peers swap GIDs for non-CM RDMA tests on RoCE
//! without a stock qperf peer ever seeing it (stock's NODE has no GID, so its non-CM tests
//! work only on InfiniBand).
//!
//! - Client → server: the REQ's 64-byte `id` string ("dev[:port]") is read by stock qperf as
//!   a C string, so the bytes after its NUL are ignored. When the text is at most 39 bytes,
//!   our client puts a 24-byte [`GidExt`] at bytes 40..64 of `id`.
//! - Server → client: stock qperf sends NODE with 4 trailing padding bytes it never reads
//!   (uninitialised memory on its side). Our server, and only when the REQ carried the
//!   extension, puts [`NODE_MARK`] there and sends one 24-byte [`GidExt`] right after its
//!   NODE. Our client reads the extension only when the server's NODE padding holds the mark.
//!
//! The layout (also in docs/qperf.md, "GID extension"):
//!
//! | off | size | field |
//! |---|---|---|
//! | 0 | 4 | magic `RPQG` |
//! | 4 | 1 | version, 1 |
//! | 5 | 1 | link layer: 1 InfiniBand, 2 Ethernet |
//! | 6 | 1 | GID type: 0 IB, 1 RoCE v1, 2 RoCE v2 |
//! | 7 | 1 | GID index on the sender's port |
//! | 8 | 16 | GID, network order |
//!
//! Decoders take untrusted bytes and never panic.

#![forbid(unsafe_code)]

use super::super::wire::{FixedStr, NODE_ENCODED_LEN, NODE_LEN, STR_LEN};

pub const MAGIC: [u8; 4] = *b"RPQG";
pub const EXT_LEN: usize = 24;
pub const EXT_VERSION: u8 = 1;
/// Where the extension sits inside the REQ's `id`; the id text must end before it.
pub const ID_EXT_OFF: usize = STR_LEN - EXT_LEN;
/// What our server puts in its NODE's padding when an extension follows.
pub const NODE_MARK: [u8; 4] = MAGIC;

pub const LL_IB: u8 = 1;
pub const LL_ETHERNET: u8 = 2;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct GidExt {
    pub link_layer: u8,
    pub gid_type: u8,
    pub gid_index: u8,
    pub gid: [u8; 16],
}

impl GidExt {
    pub fn encode(&self) -> [u8; EXT_LEN] {
        let mut b = [0u8; EXT_LEN];
        b[..4].copy_from_slice(&MAGIC);
        b[4] = EXT_VERSION;
        b[5] = self.link_layer;
        b[6] = self.gid_type;
        b[7] = self.gid_index;
        b[8..].copy_from_slice(&self.gid);
        b
    }

    /// The 24 bytes, if they are an extension of the version we know.
    pub fn decode(b: &[u8]) -> Option<GidExt> {
        if b.len() != EXT_LEN || b[..4] != MAGIC || b[4] != EXT_VERSION {
            return None;
        }
        let mut gid = [0u8; 16];
        gid.copy_from_slice(&b[8..]);
        Some(GidExt { link_layer: b[5], gid_type: b[6], gid_index: b[7], gid })
    }
}

/// The REQ `id` for `text` with `ext` after the NUL; without the extension when the text is
/// too long to leave room (the id text itself always wins).
pub fn id_with_ext(text: &str, ext: Option<&GidExt>) -> FixedStr {
    let mut id = FixedStr::new(text);
    if let Some(e) = ext {
        if id.raw().len() < ID_EXT_OFF {
            id.0[ID_EXT_OFF..].copy_from_slice(&e.encode());
        }
    }
    id
}

/// The extension a client put in its REQ's `id`: only when the text ends (NUL) before it.
pub fn ext_from_id(id: &FixedStr) -> Option<GidExt> {
    if id.raw().len() >= ID_EXT_OFF {
        return None;
    }
    GidExt::decode(&id.0[ID_EXT_OFF..])
}

/// Our 40-byte NODE with the mark in its padding.
pub fn mark_node(node: &mut [u8; NODE_LEN]) {
    node[NODE_ENCODED_LEN..].copy_from_slice(&NODE_MARK);
}

/// Whether a NODE's padding holds the mark (stock qperf leaves arbitrary bytes there).
pub fn node_marked(node: &[u8]) -> bool {
    node.len() == NODE_LEN && node[NODE_ENCODED_LEN..] == NODE_MARK
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::wire::Node;

    fn ext() -> GidExt {
        let mut gid = [0u8; 16];
        gid[10] = 0xff;
        gid[11] = 0xff;
        gid[12..].copy_from_slice(&[10, 99, 0, 1]);
        GidExt { link_layer: LL_ETHERNET, gid_type: 2, gid_index: 1, gid }
    }

    #[test]
    fn ext_golden_bytes() {
        let b = ext().encode();
        assert_eq!(
            b,
            [
                b'R', b'P', b'Q', b'G', 1, 2, 2, 1, //
                0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff, 10, 99, 0, 1
            ]
        );
        assert_eq!(GidExt::decode(&b), Some(ext()));
        let mut bad = b;
        bad[4] = 2;
        assert_eq!(GidExt::decode(&bad), None);
        assert_eq!(GidExt::decode(&b[..23]), None);
        assert_eq!(GidExt::decode(&[0u8; 24]), None);
    }

    #[test]
    fn id_tail_golden_and_stock_view() {
        let id = id_with_ext("rxe0:1", Some(&ext()));
        let mut want = [0u8; 64];
        want[..6].copy_from_slice(b"rxe0:1");
        want[40..].copy_from_slice(&ext().encode());
        assert_eq!(id.0, want);
        // What a stock server reads: the C string only.
        assert_eq!(id.raw(), b"rxe0:1");
        assert_eq!(ext_from_id(&id), Some(ext()));
        // Stock's id: NUL-padded, no extension.
        assert_eq!(ext_from_id(&FixedStr::new("rxe0")), None);
        // A text reaching into the extension's room: no extension, text intact.
        let long = "d".repeat(45);
        let id = id_with_ext(&long, Some(&ext()));
        assert_eq!(id.raw(), long.as_bytes());
        assert_eq!(ext_from_id(&id), None);
        // 39 bytes still fit (the NUL sits at 39).
        let edge = "e".repeat(39);
        assert_eq!(ext_from_id(&id_with_ext(&edge, Some(&ext()))), Some(ext()));
        // Bytes that look like the magic inside a long text are not an extension.
        let mut id = FixedStr([b'x'; 64]);
        id.0[40..].copy_from_slice(&ext().encode());
        assert_eq!(ext_from_id(&id), None);
    }

    #[test]
    fn node_mark_golden() {
        let n = Node { vaddr: 0x1122_3344_5566_7788, lid: 1, qpn: 0x11, psn: 0xabcdef, srqn: 0, rkey: 0x99, alt_lid: 0, rd_atomic: 16 };
        let mut b = n.encode();
        assert!(!node_marked(&b));
        mark_node(&mut b);
        assert_eq!(&b[36..], b"RPQG");
        assert_eq!(&b[..8], &[0x88, 0x77, 0x66, 0x55, 0x44, 0x33, 0x22, 0x11]);
        assert!(node_marked(&b));
        // A stock peer decodes the same NODE: the padding is not part of it.
        assert_eq!(Node::decode(&b).unwrap(), n);
        assert!(!node_marked(&b[..39]));
    }
}
