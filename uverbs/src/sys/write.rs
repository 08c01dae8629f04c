//! The legacy write() commands: their numbers (`enum ib_uverbs_write_cmds`, the extended
//! ones) and the headers that frame them.

use zerocopy::{FromBytes, FromZeros, Immutable, IntoBytes, KnownLayout};

pub const IB_USER_VERBS_ABI_VERSION: u32 = 6;
pub const IB_USER_VERBS_CMD_COMMAND_MASK: u32 = 0xff;
pub const IB_USER_VERBS_CMD_FLAG_EXTENDED: u32 = 0x8000_0000;

pub const CMD_GET_CONTEXT: u32 = 0;
pub const CMD_QUERY_DEVICE: u32 = 1;
pub const CMD_QUERY_PORT: u32 = 2;
pub const CMD_ALLOC_PD: u32 = 3;
pub const CMD_DEALLOC_PD: u32 = 4;
pub const CMD_CREATE_AH: u32 = 5;
pub const CMD_DESTROY_AH: u32 = 8;
pub const CMD_REG_MR: u32 = 9;
pub const CMD_DEREG_MR: u32 = 13;
pub const CMD_CREATE_COMP_CHANNEL: u32 = 17;
pub const CMD_CREATE_CQ: u32 = 18;
pub const CMD_DESTROY_CQ: u32 = 20;
pub const CMD_POLL_CQ: u32 = 21;
pub const CMD_REQ_NOTIFY_CQ: u32 = 23;
pub const CMD_CREATE_QP: u32 = 24;
pub const CMD_QUERY_QP: u32 = 25;
pub const CMD_MODIFY_QP: u32 = 26;
pub const CMD_DESTROY_QP: u32 = 27;
pub const CMD_POST_SEND: u32 = 28;
pub const CMD_POST_RECV: u32 = 29;
pub const CMD_ATTACH_MCAST: u32 = 30;
pub const CMD_DETACH_MCAST: u32 = 31;
pub const CMD_CREATE_SRQ: u32 = 32;
pub const CMD_MODIFY_SRQ: u32 = 33;
pub const CMD_DESTROY_SRQ: u32 = 35;
pub const CMD_OPEN_XRCD: u32 = 37;
pub const CMD_CLOSE_XRCD: u32 = 38;
pub const CMD_CREATE_XSRQ: u32 = 39;

/// Extended commands (`enum ib_uverbs_ex_write_cmds`), without the EXTENDED flag.
pub const CMD_EX_QUERY_DEVICE: u32 = 1;
pub const CMD_EX_CREATE_CQ: u32 = 18;
pub const CMD_EX_CREATE_QP: u32 = 24;
pub const CMD_EX_MODIFY_QP: u32 = 26;

abi! {
    /// `struct ib_uverbs_cmd_hdr`: in/out words are 4-byte units, `in_words` includes this header.
    pub struct CmdHdr {
        pub command: u32,
        pub in_words: u16,
        pub out_words: u16,
    }

    /// `struct ib_uverbs_ex_cmd_hdr`: follows [`CmdHdr`] for extended commands; 8-byte units.
    pub struct ExCmdHdr {
        pub response: u64,
        pub provider_in_words: u16,
        pub provider_out_words: u16,
        pub cmd_hdr_reserved: u32,
    }
}
