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
//! The port's active MTU travels in a second, 8-byte block ([`MtuExt`]), added later without
//! touching the first: a client puts it at bytes 32..40 of `id` (when the text is at most 31
//! bytes), where an older rperftest server does not look; a server that got it answers with
//! [`NODE_MARK_MTU`] instead of [`NODE_MARK`] and sends its own block right after its
//! [`GidExt`]. An older client never sends the block, so it never sees the second mark.
//!
//! | off | size | field |
//! |---|---|---|
//! | 0 | 4 | magic `RPQM` |
//! | 4 | 1 | version, 1 |
//! | 5 | 1 | the sender's port's active MTU, `enum ibv_mtu` (1 = 256 … 5 = 4096) |
//! | 6 | 1 | flags (client only): 1 the user gave the server's path MTU, 2 its message size |
//! | 7 | 1 | 0 |
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

pub const MTU_MAGIC: [u8; 4] = *b"RPQM";
pub const MTU_EXT_LEN: usize = 8;
pub const MTU_EXT_VERSION: u8 = 1;
/// Where the MTU block sits inside the REQ's `id`, right before the GID extension.
pub const ID_MTU_OFF: usize = ID_EXT_OFF - MTU_EXT_LEN;
/// Our server's NODE padding when a GID extension and then an MTU block follow.
pub const NODE_MARK_MTU: [u8; 4] = MTU_MAGIC;
pub const FLAG_MTU_GIVEN: u8 = 1;
pub const FLAG_MSG_GIVEN: u8 = 2;

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

/// One side's port MTU for its rperftest peer; from a client, also which of the server's
/// sizes the user gave (the server picks the others itself).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct MtuExt {
    /// The port's active MTU in bytes (256..4096, a power of two).
    pub active_mtu: u32,
    pub mtu_given: bool,
    pub msg_given: bool,
}

impl MtuExt {
    pub fn encode(&self) -> [u8; MTU_EXT_LEN] {
        let mut b = [0u8; MTU_EXT_LEN];
        b[..4].copy_from_slice(&MTU_MAGIC);
        b[4] = MTU_EXT_VERSION;
        b[5] = mtu_code(self.active_mtu);
        b[6] = if self.mtu_given { FLAG_MTU_GIVEN } else { 0 } | if self.msg_given { FLAG_MSG_GIVEN } else { 0 };
        b
    }

    /// The 8 bytes, if they are a block of the version we know with an MTU in range.
    pub fn decode(b: &[u8]) -> Option<MtuExt> {
        if b.len() != MTU_EXT_LEN || b[..4] != MTU_MAGIC || b[4] != MTU_EXT_VERSION || !(1..=5).contains(&b[5]) {
            return None;
        }
        Some(MtuExt { active_mtu: 128 << b[5], mtu_given: b[6] & FLAG_MTU_GIVEN != 0, msg_given: b[6] & FLAG_MSG_GIVEN != 0 })
    }
}

/// `enum ibv_mtu` of a byte size, rounded down into 256..4096.
fn mtu_code(bytes: u32) -> u8 {
    let mut code = 1u8;
    while code < 5 && (128u32 << (code + 1)) <= bytes {
        code += 1;
    }
    code
}

/// The REQ `id` for `text` with `ext` after the NUL, and `mtu` before it; each left out when
/// the text is too long to leave room for it (the id text itself always wins).
pub fn id_with_ext(text: &str, ext: Option<&GidExt>, mtu: Option<&MtuExt>) -> FixedStr {
    let mut id = FixedStr::new(text);
    if let Some(e) = ext {
        if id.raw().len() < ID_EXT_OFF {
            id.0[ID_EXT_OFF..].copy_from_slice(&e.encode());
        }
        if let Some(m) = mtu.filter(|_| id.raw().len() < ID_MTU_OFF) {
            id.0[ID_MTU_OFF..ID_EXT_OFF].copy_from_slice(&m.encode());
        }
    }
    id
}

/// The MTU block a client put in its REQ's `id` (with a GID extension): only when the text
/// ends before it.
pub fn mtu_from_id(id: &FixedStr) -> Option<MtuExt> {
    if id.raw().len() >= ID_MTU_OFF || ext_from_id(id).is_none() {
        return None;
    }
    MtuExt::decode(&id.0[ID_MTU_OFF..ID_EXT_OFF])
}

/// The extension a client put in its REQ's `id`: only when the text ends (NUL) before it.
pub fn ext_from_id(id: &FixedStr) -> Option<GidExt> {
    if id.raw().len() >= ID_EXT_OFF {
        return None;
    }
    GidExt::decode(&id.0[ID_EXT_OFF..])
}

/// What follows a server's NODE, by the mark in its padding.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Follows {
    /// A [`GidExt`].
    Gid,
    /// A [`GidExt`], then an [`MtuExt`].
    GidMtu,
}

/// Our 40-byte NODE with the mark for what follows it in its padding.
pub fn mark_node(node: &mut [u8; NODE_LEN], follows: Follows) {
    let mark = match follows {
        Follows::Gid => NODE_MARK,
        Follows::GidMtu => NODE_MARK_MTU,
    };
    node[NODE_ENCODED_LEN..].copy_from_slice(&mark);
}

/// What a NODE's padding says follows it (stock qperf leaves arbitrary bytes there).
pub fn node_marked(node: &[u8]) -> Option<Follows> {
    if node.len() != NODE_LEN {
        return None;
    }
    match &node[NODE_ENCODED_LEN..] {
        m if m == NODE_MARK => Some(Follows::Gid),
        m if m == NODE_MARK_MTU => Some(Follows::GidMtu),
        _ => None,
    }
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
        let id = id_with_ext("rxe0:1", Some(&ext()), None);
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
        let id = id_with_ext(&long, Some(&ext()), None);
        assert_eq!(id.raw(), long.as_bytes());
        assert_eq!(ext_from_id(&id), None);
        // 39 bytes still fit (the NUL sits at 39).
        let edge = "e".repeat(39);
        assert_eq!(ext_from_id(&id_with_ext(&edge, Some(&ext()), None)), Some(ext()));
        // Bytes that look like the magic inside a long text are not an extension.
        let mut id = FixedStr([b'x'; 64]);
        id.0[40..].copy_from_slice(&ext().encode());
        assert_eq!(ext_from_id(&id), None);
    }

    #[test]
    fn node_mark_golden() {
        let n = Node { vaddr: 0x1122_3344_5566_7788, lid: 1, qpn: 0x11, psn: 0xabcdef, srqn: 0, rkey: 0x99, alt_lid: 0, rd_atomic: 16 };
        let mut b = n.encode();
        assert_eq!(node_marked(&b), None);
        mark_node(&mut b, Follows::Gid);
        assert_eq!(&b[36..], b"RPQG");
        assert_eq!(&b[..8], &[0x88, 0x77, 0x66, 0x55, 0x44, 0x33, 0x22, 0x11]);
        assert_eq!(node_marked(&b), Some(Follows::Gid));
        // A stock peer decodes the same NODE: the padding is not part of it.
        assert_eq!(Node::decode(&b).unwrap(), n);
        assert_eq!(node_marked(&b[..39]), None);
        mark_node(&mut b, Follows::GidMtu);
        assert_eq!(&b[36..], b"RPQM");
        assert_eq!(node_marked(&b), Some(Follows::GidMtu));
        assert_eq!(Node::decode(&b).unwrap(), n);
    }

    fn mtu() -> MtuExt {
        MtuExt { active_mtu: 1024, mtu_given: false, msg_given: true }
    }

    #[test]
    fn mtu_ext_golden_bytes() {
        let b = mtu().encode();
        assert_eq!(b, [b'R', b'P', b'Q', b'M', 1, 3, 2, 0]);
        assert_eq!(MtuExt::decode(&b), Some(mtu()));
        let all = MtuExt { active_mtu: 4096, mtu_given: true, msg_given: true };
        assert_eq!(all.encode(), [b'R', b'P', b'Q', b'M', 1, 5, 3, 0]);
        assert_eq!(MtuExt::decode(&all.encode()), Some(all));
        // Sizes between the five round down; out-of-range codes are not a block.
        assert_eq!(MtuExt { active_mtu: 1500, ..mtu() }.encode()[5], 3);
        assert_eq!(MtuExt { active_mtu: 9000, ..mtu() }.encode()[5], 5);
        assert_eq!(MtuExt { active_mtu: 0, ..mtu() }.encode()[5], 1);
        for bad_code in [0u8, 6, 255] {
            let mut x = b;
            x[5] = bad_code;
            assert_eq!(MtuExt::decode(&x), None);
        }
        let mut v2 = b;
        v2[4] = 2;
        assert_eq!(MtuExt::decode(&v2), None);
        assert_eq!(MtuExt::decode(&b[..7]), None);
        assert_eq!(MtuExt::decode(&ext().encode()), None);
    }

    #[test]
    fn id_with_mtu_block_golden_and_older_views() {
        let id = id_with_ext("rxe0:1", Some(&ext()), Some(&mtu()));
        let mut want = [0u8; 64];
        want[..6].copy_from_slice(b"rxe0:1");
        want[32..40].copy_from_slice(&mtu().encode());
        want[40..].copy_from_slice(&ext().encode());
        assert_eq!(id.0, want);
        // Stock reads the C string; an older rperftest server reads the text and bytes 40..64.
        assert_eq!(id.raw(), b"rxe0:1");
        assert_eq!(ext_from_id(&id), Some(ext()));
        assert_eq!(mtu_from_id(&id), Some(mtu()));
        // An older rperftest client: GID extension, no block.
        assert_eq!(mtu_from_id(&id_with_ext("rxe0:1", Some(&ext()), None)), None);
        // 31 bytes of text leave room (NUL at 31); 32 do not, the GID extension stays.
        let edge = "e".repeat(31);
        assert_eq!(mtu_from_id(&id_with_ext(&edge, Some(&ext()), Some(&mtu()))), Some(mtu()));
        let over = "o".repeat(32);
        let id = id_with_ext(&over, Some(&ext()), Some(&mtu()));
        assert_eq!(id.raw(), over.as_bytes());
        assert_eq!(mtu_from_id(&id), None);
        assert_eq!(ext_from_id(&id), Some(ext()));
        // No GID extension, no block.
        assert_eq!(mtu_from_id(&id_with_ext("rxe0", None, Some(&mtu()))), None);
    }
}
