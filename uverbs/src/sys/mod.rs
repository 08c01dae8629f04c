//! The raw kernel ABI: hand-written `#[repr(C)]` mirrors of the uAPI structs in
//! `<rdma/ib_user_verbs.h>`, `<rdma/ib_user_ioctl_verbs.h>`, `<rdma/rdma_user_ioctl_cmds.h>`,
//! `<rdma/ib_user_ioctl_cmds.h>`, `<rdma/rdma_user_rxe.h>` and `<rdma/mlx5-abi.h>`, and the
//! command, object, method and attribute numbers. No logic lives here.
//!
//! Naming: `struct ib_uverbs_reg_mr` is [`RegMr`], `struct rxe_send_wqe` is [`rxe::SendWqe`],
//! `struct mlx5_ib_create_qp` is [`mlx5::CreateQp`]. Unions become one field holding the
//! union's bytes (or its only integer), with one struct per member where the members are
//! structured. Flexible array members (`driver_data[]`, `data[]`) are not fields; their offset
//! is the struct size or a named constant. Implicit C padding is spelled out as `_padN` fields so
//! that every struct can be `IntoBytes`.
//!
//! Every size, alignment and field offset is checked against the installed kernel headers by
//! `tests/layout.rs` (compiled with gcc at test time).
//!
//! One module per concern, re-exported here so every path stays `sys::Name`: `write` (legacy
//! command numbers and headers), `device` (context, device, port, GID), `pd` (PD, MR, XRCD,
//! access flags), `cq`, `qp` (QPs, AHs, posted WRs), `srq`, `ioctl` (the ioctl interface and its
//! object / method / attribute numbers), and the drivers' [`rxe`] and [`mlx5`].

/// Declares ABI structs: `#[repr(C)]`, the zerocopy traits, `Clone`, `Copy`, `Debug`,
/// `PartialEq`, `Eq`, and a zeroed `Default`.
macro_rules! abi {
    ($(
        $(#[$m:meta])*
        pub struct $name:ident { $( $(#[$fm:meta])* pub $f:ident : $t:ty ),* $(,)? }
    )*) => {$(
        $(#[$m])*
        #[repr(C)]
        #[derive(Clone, Copy, Debug, PartialEq, Eq, FromBytes, IntoBytes, Immutable, KnownLayout)]
        pub struct $name { $( $(#[$fm])* pub $f : $t ),* }

        impl Default for $name {
            fn default() -> Self {
                <Self as FromZeros>::new_zeroed()
            }
        }
    )*};
}
// Also declares the rdma_cm ABI structs (`crate::cm::sys`).
pub(crate) use abi;

mod cq;
mod device;
mod ioctl;
mod pd;
mod qp;
mod srq;
mod write;
pub mod mlx5;
pub mod rxe;

pub use cq::{
    CompEventDesc, CreateCompChannel, CreateCompChannelResp, CreateCq, CreateCqResp, DestroyCq,
    DestroyCqResp, ExCreateCq, ExCreateCqResp, ReqNotifyCq, Wc,
};
pub use device::{
    AsyncEventDesc, CqModerationCaps, ExQueryDevice, ExQueryDeviceResp, GetContext, GetContextResp,
    GidEntry, OdpCaps, QueryDevice, QueryDeviceResp, QueryPort, QueryPortResp, QueryPortRespEx,
    RssCaps, TmCaps, IB_LINK_LAYER_ETHERNET, IB_LINK_LAYER_INFINIBAND, IB_PORT_ACTIVE,
    IB_UVERBS_DEVICE_XRC, IB_UVERBS_GID_TYPE_IB, IB_UVERBS_GID_TYPE_ROCE_V1,
    IB_UVERBS_GID_TYPE_ROCE_V2, RDMA_DRIVER_BNXT_RE, RDMA_DRIVER_EFA, RDMA_DRIVER_MLX4, RDMA_DRIVER_MLX5, RDMA_DRIVER_RXE,
    RDMA_DRIVER_SIW, RDMA_DRIVER_UNKNOWN,
};
pub use ioctl::{
    IoctlAttr, IoctlHdr, RDMA_VERBS_IOCTL, UVERBS_ATTR_F_MANDATORY, UVERBS_ATTR_F_VALID_OUTPUT,
    UVERBS_ATTR_UHW_IN, UVERBS_ATTR_UHW_OUT, UVERBS_ID_NS_MASK, UVERBS_UDATA_DRIVER_DATA_FLAG, attr,
    method, obj,
};
pub use pd::{
    AllocPd, AllocPdResp, CloseXrcd, DeallocPd, DeregMr, OpenXrcd, OpenXrcdResp, RegMr, RegMrResp,
    access,
};
pub use qp::{
    AhAttr, AttachMcast, CreateAh, CreateAhResp, CreateQp, CreateQpResp, DestroyAh, DestroyQp,
    DestroyQpResp, DetachMcast, ExCreateQpResp, ExModifyQp, ExModifyQpResp, GlobalRoute,
    ModifyQp, PostSend, PostSendResp, QpAttrResp, QpCap, QpDest, QueryQp, QueryQpResp, UverbsSendWr, UverbsSge,
    IB_UVERBS_QPT_RC, IB_UVERBS_QPT_UC, IB_UVERBS_QPT_UD, IB_UVERBS_QPT_XRC_INI,
    IB_UVERBS_QPT_XRC_TGT, IB_UVERBS_QP_CREATE_SQ_SIG_ALL, qp_attr,
};
pub use srq::{
    CreateSrq, CreateSrqResp, CreateXsrq, DestroySrq, DestroySrqResp, IB_UVERBS_SRQT_BASIC,
    IB_UVERBS_SRQT_XRC,
};
pub use write::{
    CmdHdr, ExCmdHdr, CMD_ALLOC_PD, CMD_ATTACH_MCAST, CMD_CLOSE_XRCD, CMD_CREATE_AH,
    CMD_CREATE_COMP_CHANNEL, CMD_CREATE_CQ, CMD_CREATE_QP, CMD_CREATE_SRQ, CMD_CREATE_XSRQ,
    CMD_DEALLOC_PD, CMD_DEREG_MR, CMD_DESTROY_AH, CMD_DESTROY_CQ, CMD_DESTROY_QP, CMD_DESTROY_SRQ,
    CMD_DETACH_MCAST, CMD_EX_CREATE_CQ, CMD_EX_CREATE_QP, CMD_EX_MODIFY_QP, CMD_EX_QUERY_DEVICE,
    CMD_GET_CONTEXT, CMD_MODIFY_QP, CMD_MODIFY_SRQ, CMD_OPEN_XRCD, CMD_POLL_CQ, CMD_POST_RECV,
    CMD_POST_SEND, CMD_QUERY_DEVICE, CMD_QUERY_PORT, CMD_QUERY_QP, CMD_REG_MR, CMD_REQ_NOTIFY_CQ,
    IB_USER_VERBS_ABI_VERSION, IB_USER_VERBS_CMD_COMMAND_MASK, IB_USER_VERBS_CMD_FLAG_EXTENDED,
};
