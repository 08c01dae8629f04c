//! Userspace RDMA providers: `rxe` (Soft-RoCE), `mlx5` (ConnectX), `bnxt_re` (Broadcom
//! NetXtreme-E / Thor) and `efa` (AWS Elastic Fabric Adapter).
//!
//! Each provider splits into pure encode/decode (WQE bytes out, CQE bytes in: no I/O, no unsafe,
//! fuzzable), queue state (indices, wraparound, doorbell records), and the glue implementing
//! [`uverbs::provider::Provider`].
//!
//! [`open`] picks the provider by the device's driver id, once, at the top: code below it is
//! generic over `P: Provider` (see [`ContextUser`]), so no call on the data path is dynamic.
//! mlx5's extensions beyond plain verbs ([`uverbs::dv`], libmlx5's mlx5dv) are reached
//! explicitly: an mlx5 context also arrives at [`ContextUser::run_mlx5`], and [`open_devx`]
//! hands only mlx5 contexts to an [`Mlx5User`].

pub mod efa;
pub mod bnxt_re;
pub mod fuzzing;
pub mod mlx5;
pub mod rxe;
#[forbid(unsafe_code)]
pub mod settings;

use std::sync::Arc;

use uverbs::objects::Context;
use uverbs::provider::{DeviceDesc, Provider};
use uverbs::queries::DeviceQueries;
use uverbs::sys::{RDMA_DRIVER_BNXT_RE, RDMA_DRIVER_EFA, RDMA_DRIVER_MLX5, RDMA_DRIVER_RXE};
use uverbs::Error;

pub use settings::ProviderSettings;

/// Driver ids (`enum rdma_driver_id`) this build has a provider for.
pub const SUPPORTED: &[(u32, &str)] = &[
    (RDMA_DRIVER_RXE, "rxe"),
    (RDMA_DRIVER_MLX5, "mlx5"),
    (RDMA_DRIVER_BNXT_RE, "bnxt_re"),
    (RDMA_DRIVER_EFA, "efa"),
];

/// Code that runs on an opened context of whatever provider the device needs.
pub trait ContextUser: Sized {
    type Output;
    fn run<P: Provider>(self, ctx: Arc<Context<P>>) -> Self::Output;
    /// The context is mlx5's: a user that wants mlx5's extensions ([`uverbs::dv`]) takes them
    /// here. The default forgets that the provider is mlx5.
    fn run_mlx5(self, ctx: Arc<Context<mlx5::Mlx5>>) -> Self::Output {
        self.run(ctx)
    }
}

/// Code that needs mlx5's extensions from the start (a DEVX context: crypto login, DEKs).
pub trait Mlx5User {
    type Output;
    fn run(self, ctx: Arc<Context<mlx5::Mlx5>>) -> Self::Output;
}

/// The provider's name for a driver id, if this build has one.
pub fn provider_name(driver_id: u32) -> Option<&'static str> {
    SUPPORTED.iter().find(|(id, _)| *id == driver_id).map(|(_, n)| *n)
}

fn unsupported(dev: &DeviceDesc) -> Error {
    let names: Vec<&str> = SUPPORTED.iter().map(|(_, n)| *n).collect();
    Error::msg(
        format!("open {}", dev.ibdev),
        format!("no userspace provider for driver id {} in this build", dev.driver_id),
    )
    .with_hint(format!("supported drivers: {}", names.join(", ")))
}

/// Open `dev` with its provider, as `settings` choose, and hand the context to `user`.
pub fn open<U: ContextUser>(dev: &DeviceDesc, settings: &ProviderSettings, user: U) -> Result<U::Output, Error> {
    let t = settings.transport;
    match dev.driver_id {
        RDMA_DRIVER_RXE => Ok(user.run(Context::<rxe::Rxe>::open_with(dev, t, &settings.rxe())?)),
        RDMA_DRIVER_MLX5 => Ok(user.run_mlx5(Context::<mlx5::Mlx5>::open_with(dev, t, &settings.mlx5())?)),
        RDMA_DRIVER_BNXT_RE => Ok(user.run(Context::<bnxt_re::Bnxt>::open_with(dev, t, &())?)),
        RDMA_DRIVER_EFA => Ok(user.run(Context::<efa::Efa>::open_with(dev, t, &efa::EfaConfig::default())?)),
        _ => Err(unsupported(dev)),
    }
}

/// Open `dev` as a DEVX context (libmlx5's `mlx5dv_open_device` with DEVX, which crypto login,
/// DEKs and crypto mkeys need) and hand it to `user`. A device another provider serves (rxe)
/// is refused with `EOPNOTSUPP`, as `mlx5dv_open_device` refuses it.
pub fn open_devx<U: Mlx5User>(dev: &DeviceDesc, settings: &ProviderSettings, user: U) -> Result<U::Output, Error> {
    match dev.driver_id {
        RDMA_DRIVER_MLX5 => Ok(user.run(Context::<mlx5::Mlx5>::open_devx(dev, settings.transport, &settings.mlx5())?)),
        id => match provider_name(id) {
            Some(name) => Err(uverbs::dv::no_devx(dev, name)),
            None => Err(unsupported(dev)),
        },
    }
}

/// Open `dev` for attribute queries only (devinfo, GID selection), as `settings` choose.
pub fn open_queries(dev: &DeviceDesc, settings: &ProviderSettings) -> Result<Arc<dyn DeviceQueries>, Error> {
    struct Q;
    impl ContextUser for Q {
        type Output = Arc<dyn DeviceQueries>;
        fn run<P: Provider>(self, ctx: Arc<Context<P>>) -> Self::Output {
            ctx
        }
    }
    open(dev, settings, Q)
}
