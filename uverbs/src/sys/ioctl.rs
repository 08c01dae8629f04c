//! The ioctl interface: `struct ib_uverbs_ioctl_hdr` / `ib_uverbs_attr` and the object,
//! method and attribute numbers.

use zerocopy::{FromBytes, FromZeros, Immutable, IntoBytes, KnownLayout};

abi! {

    /// `struct ib_uverbs_attr` (16 bytes).
    pub struct IoctlAttr {
        pub attr_id: u16,
        pub len: u16,
        pub flags: u16,
        /// `attr_data` union (`enum_data.{elem_id, reserved}` or `reserved`).
        pub attr_data: u16,
        /// `data` / `data_s64`: pointer, inline bytes, handle or fd.
        pub data: u64,
    }

    /// `struct ib_uverbs_ioctl_hdr` (24 bytes; `attrs[]` follow).
    pub struct IoctlHdr {
        pub length: u16,
        pub object_id: u16,
        pub method_id: u16,
        pub num_attrs: u16,
        pub reserved1: u64,
        pub driver_id: u32,
        pub reserved2: u32,
    }
}

/// `RDMA_VERBS_IOCTL` = `_IOWR(0x1b, 1, struct ib_uverbs_ioctl_hdr)`.
pub const RDMA_VERBS_IOCTL: u64 = 0xC018_1B01;

pub const UVERBS_ATTR_F_MANDATORY: u16 = 1 << 0;
pub const UVERBS_ATTR_F_VALID_OUTPUT: u16 = 1 << 1;

pub const UVERBS_ID_NS_MASK: u16 = 0xF000;
pub const UVERBS_UDATA_DRIVER_DATA_FLAG: u16 = 1 << 12;
pub const UVERBS_ATTR_UHW_IN: u16 = 0x1000;
pub const UVERBS_ATTR_UHW_OUT: u16 = 0x1001;

/// `enum uverbs_default_objects`.
pub mod obj {
    pub const DEVICE: u16 = 0;
    pub const PD: u16 = 1;
    pub const COMP_CHANNEL: u16 = 2;
    pub const CQ: u16 = 3;
    pub const QP: u16 = 4;
    pub const SRQ: u16 = 5;
    pub const AH: u16 = 6;
    pub const MR: u16 = 7;
    pub const MW: u16 = 8;
    pub const XRCD: u16 = 10;
    pub const ASYNC_EVENT: u16 = 16;
}

/// Method ids per object.
pub mod method {
    // DEVICE
    pub const INVOKE_WRITE: u16 = 0;
    pub const INFO_HANDLES: u16 = 1;
    pub const QUERY_PORT: u16 = 2;
    pub const GET_CONTEXT: u16 = 3;
    pub const QUERY_CONTEXT: u16 = 4;
    pub const QUERY_GID_TABLE: u16 = 5;
    pub const QUERY_GID_ENTRY: u16 = 6;
    // CQ / QP / SRQ
    pub const CQ_CREATE: u16 = 0;
    pub const CQ_DESTROY: u16 = 1;
    pub const QP_CREATE: u16 = 0;
    pub const QP_DESTROY: u16 = 1;
    pub const SRQ_CREATE: u16 = 0;
    pub const SRQ_DESTROY: u16 = 1;
    // single-method objects
    pub const PD_DESTROY: u16 = 0;
    pub const AH_DESTROY: u16 = 0;
    pub const MR_DESTROY: u16 = 1;
    /// `UVERBS_METHOD_REG_DMABUF_MR` (kernel 5.12+).
    pub const REG_DMABUF_MR: u16 = 4;
    pub const XRCD_DESTROY: u16 = 0;
    pub const ASYNC_EVENT_ALLOC: u16 = 0;
}

/// Attribute ids per method.
pub mod attr {
    // DEVICE.INVOKE_WRITE
    pub const CORE_IN: u16 = 0;
    pub const CORE_OUT: u16 = 1;
    pub const WRITE_CMD: u16 = 2;
    // DEVICE.QUERY_PORT
    pub const QUERY_PORT_PORT_NUM: u16 = 0;
    pub const QUERY_PORT_RESP: u16 = 1;
    // DEVICE.GET_CONTEXT
    pub const GET_CONTEXT_NUM_COMP_VECTORS: u16 = 0;
    pub const GET_CONTEXT_CORE_SUPPORT: u16 = 1;
    // DEVICE.QUERY_GID_TABLE
    pub const QUERY_GID_TABLE_ENTRY_SIZE: u16 = 0;
    pub const QUERY_GID_TABLE_FLAGS: u16 = 1;
    pub const QUERY_GID_TABLE_RESP_ENTRIES: u16 = 2;
    pub const QUERY_GID_TABLE_RESP_NUM_ENTRIES: u16 = 3;
    // DEVICE.QUERY_GID_ENTRY
    pub const QUERY_GID_ENTRY_PORT: u16 = 0;
    pub const QUERY_GID_ENTRY_GID_INDEX: u16 = 1;
    pub const QUERY_GID_ENTRY_FLAGS: u16 = 2;
    pub const QUERY_GID_ENTRY_RESP_ENTRY: u16 = 3;
    // ASYNC_EVENT.ALLOC
    pub const ASYNC_EVENT_ALLOC_FD_HANDLE: u16 = 0;
    // CQ.CREATE
    pub const CREATE_CQ_HANDLE: u16 = 0;
    pub const CREATE_CQ_CQE: u16 = 1;
    pub const CREATE_CQ_USER_HANDLE: u16 = 2;
    pub const CREATE_CQ_COMP_CHANNEL: u16 = 3;
    pub const CREATE_CQ_COMP_VECTOR: u16 = 4;
    pub const CREATE_CQ_FLAGS: u16 = 5;
    pub const CREATE_CQ_RESP_CQE: u16 = 6;
    pub const CREATE_CQ_EVENT_FD: u16 = 7;
    // CQ.DESTROY
    pub const DESTROY_CQ_HANDLE: u16 = 0;
    pub const DESTROY_CQ_RESP: u16 = 1;
    // QP.CREATE
    pub const CREATE_QP_HANDLE: u16 = 0;
    pub const CREATE_QP_XRCD_HANDLE: u16 = 1;
    pub const CREATE_QP_PD_HANDLE: u16 = 2;
    pub const CREATE_QP_SRQ_HANDLE: u16 = 3;
    pub const CREATE_QP_SEND_CQ_HANDLE: u16 = 4;
    pub const CREATE_QP_RECV_CQ_HANDLE: u16 = 5;
    pub const CREATE_QP_IND_TABLE_HANDLE: u16 = 6;
    pub const CREATE_QP_USER_HANDLE: u16 = 7;
    pub const CREATE_QP_CAP: u16 = 8;
    pub const CREATE_QP_TYPE: u16 = 9;
    pub const CREATE_QP_FLAGS: u16 = 10;
    pub const CREATE_QP_SOURCE_QPN: u16 = 11;
    pub const CREATE_QP_EVENT_FD: u16 = 12;
    pub const CREATE_QP_RESP_CAP: u16 = 13;
    pub const CREATE_QP_RESP_QP_NUM: u16 = 14;
    // QP.DESTROY
    pub const DESTROY_QP_HANDLE: u16 = 0;
    pub const DESTROY_QP_RESP: u16 = 1;
    // single-handle destroys
    pub const DESTROY_PD_HANDLE: u16 = 0;
    pub const DESTROY_MR_HANDLE: u16 = 0;
    pub const DESTROY_AH_HANDLE: u16 = 0;
    pub const DESTROY_XRCD_HANDLE: u16 = 0;
    // MR.REG_DMABUF_MR (`enum uverbs_attrs_reg_dmabuf_mr_cmd_attr_ids`)
    pub const REG_DMABUF_MR_HANDLE: u16 = 0;
    pub const REG_DMABUF_MR_PD_HANDLE: u16 = 1;
    pub const REG_DMABUF_MR_OFFSET: u16 = 2;
    pub const REG_DMABUF_MR_LENGTH: u16 = 3;
    pub const REG_DMABUF_MR_IOVA: u16 = 4;
    pub const REG_DMABUF_MR_FD: u16 = 5;
    pub const REG_DMABUF_MR_ACCESS_FLAGS: u16 = 6;
    pub const REG_DMABUF_MR_RESP_LKEY: u16 = 7;
    pub const REG_DMABUF_MR_RESP_RKEY: u16 = 8;
}
