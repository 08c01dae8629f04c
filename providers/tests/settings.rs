//! The program's choices reach each provider as a value when its context is built: no global,
//! so these tests may run in any order and beside any other.

mod support;

use providers::mlx5::uar::RecordingUar;
use providers::mlx5::{abi, Mlx5, Mlx5Config};
use providers::rxe::doorbell::{self, DoorbellMode, RxeConfig};
use providers::rxe::Rxe;
use providers::settings::ProviderSettings;
use uverbs::cmd::Transport;
use uverbs::provider::{DeviceDesc, Provider};

use support::mlx5::{dev_null, golden_uctx_resp};

fn desc(ibdev: &str, driver_id: u32, driver_abi: u32) -> DeviceDesc {
    DeviceDesc { ibdev: ibdev.into(), uverbs: "uverbs0".into(), driver_id, driver_abi }
}

fn bad_doorbell() -> ProviderSettings {
    ProviderSettings {
        rxe_doorbell: Err("RPERFTEST_RXE_DOORBELL=mmio: expected write, uring or uring-sqpoll".into()),
        ..ProviderSettings::default()
    }
}

#[test]
fn the_defaults_are_libibverbs() {
    let s = ProviderSettings::default();
    assert_eq!(s.transport, Transport::Write);
    assert_eq!(s.rxe(), RxeConfig::default());
    assert_eq!(doorbell::chosen_mode(&s.rxe()).unwrap(), DoorbellMode::Write);
    assert_eq!(s.mlx5(), Mlx5Config::default());
    assert!(s.mlx5().blueflame && s.mlx5().prefer_bf);
}

#[test]
fn each_provider_takes_its_part() {
    let s = ProviderSettings { rxe_doorbell: Ok(DoorbellMode::Uring), mlx5_blueflame: false, mlx5_prefer_bf: false, ..ProviderSettings::default() };
    assert_eq!(doorbell::chosen_mode(&s.rxe()).unwrap(), DoorbellMode::Uring);
    let c = s.mlx5();
    assert!(!c.blueflame && !c.prefer_bf);
    // The context keeps what it was built with.
    let m = <Mlx5<RecordingUar> as Provider>::new_context(dev_null(), &desc("mlx5_0", 1, abi::ABI_VERSION), &golden_uctx_resp(), &c).unwrap();
    assert_eq!(m.config, c);
}

#[test]
fn a_bad_doorbell_is_refused_only_by_an_rxe_open() {
    let s = bad_doorbell();
    let e = doorbell::chosen_mode(&s.rxe()).unwrap_err().to_string();
    assert!(e.starts_with("choose the rxe doorbell") && e.contains("RPERFTEST_RXE_DOORBELL=mmio"), "{e}");
    let e = Rxe::new_context(dev_null(), &desc("rxe0", 14, 2), &[], &s.rxe()).err().expect("refused").to_string();
    assert!(e.contains("RPERFTEST_RXE_DOORBELL=mmio: expected write, uring or uring-sqpoll"), "{e}");
    // The same settings open an mlx5 context, and rxe with the write doorbell.
    assert!(<Mlx5<RecordingUar> as Provider>::new_context(dev_null(), &desc("mlx5_0", 1, abi::ABI_VERSION), &golden_uctx_resp(), &s.mlx5()).is_ok());
    assert!(Rxe::new_context(dev_null(), &desc("rxe0", 14, 2), &[], &ProviderSettings::default().rxe()).is_ok());
}
