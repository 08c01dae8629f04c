//! What the program chose for opening a device, as a value: the `rperftest` binary reads its
//! environment once and hands a [`ProviderSettings`] to [`crate::open`] (a library reads no
//! environment and keeps no settings). Each provider takes its part as its
//! [`uverbs::provider::Provider::Config`] when a context is opened.

use uverbs::cmd::Transport;

use crate::mlx5::Mlx5Config;

/// How the rxe provider rings its doorbell (the POST_SEND command that kicks the kernel's
/// requester): the io_uring experiment of `rxe::doorbell`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DoorbellMode {
    /// `write()` on the uverbs fd, one per post call.
    Write,
    /// `IORING_OP_WRITE` + `io_uring_enter` per post call.
    Uring,
    /// `IORING_OP_WRITE` picked up by the SQPOLL kernel thread (a syscall only to wake it).
    UringSqpoll,
}

impl DoorbellMode {
    pub fn parse(s: &str) -> std::result::Result<Self, String> {
        match s {
            "" | "write" => Ok(DoorbellMode::Write),
            "uring" => Ok(DoorbellMode::Uring),
            "uring-sqpoll" => Ok(DoorbellMode::UringSqpoll),
            other => Err(format!("{other}: expected write, uring or uring-sqpoll")),
        }
    }
}

/// What the program chose for opening a device. The defaults are what libibverbs and its
/// providers do.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ProviderSettings {
    /// How commands reach the kernel (uverbs' `write()` or `RDMA_VERBS_IOCTL`).
    pub transport: Transport,
    /// The rxe doorbell, or why the program's choice was not understood (reported when an rxe
    /// context is opened, so that a command that opens none is not refused).
    pub rxe_doorbell: Result<DoorbellMode, String>,
    /// mlx5: copy WQEs through the BlueFlame register (libmlx5's `MLX5_SHUT_UP_BF` turns it off).
    pub mlx5_blueflame: bool,
    /// mlx5: prefer BlueFlame over a plain doorbell when both are possible
    /// (libmlx5's `MLX5_POST_SEND_PREFER_BF`).
    pub mlx5_prefer_bf: bool,
}

impl Default for ProviderSettings {
    fn default() -> Self {
        ProviderSettings { transport: Transport::default(), rxe_doorbell: Ok(DoorbellMode::Write), mlx5_blueflame: true, mlx5_prefer_bf: true }
    }
}

impl ProviderSettings {
    /// The rxe provider's part.
    pub fn rxe(&self) -> RxeConfig {
        RxeConfig { doorbell: self.rxe_doorbell.clone() }
    }

    /// The mlx5 provider's part: libmlx5's defaults with these BlueFlame choices.
    pub fn mlx5(&self) -> Mlx5Config {
        Mlx5Config { blueflame: self.mlx5_blueflame, prefer_bf: self.mlx5_prefer_bf, ..Mlx5Config::default() }
    }
}

/// What the rxe provider takes when a context is opened.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RxeConfig {
    /// The doorbell, or why the program's choice was not understood (opening refuses it).
    pub doorbell: Result<DoorbellMode, String>,
}

impl Default for RxeConfig {
    fn default() -> Self {
        RxeConfig { doorbell: Ok(DoorbellMode::Write) }
    }
}
