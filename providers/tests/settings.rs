//! The providers' settings are process-wide: this binary holds the only test that changes them.

use providers::mlx5::Mlx5Config;
use providers::rxe::doorbell::{self, DoorbellMode};
use providers::settings::{current, install, ProviderSettings};

#[test]
fn installed_settings_reach_the_providers() {
    assert_eq!(current(), ProviderSettings::default());
    assert_eq!(doorbell::chosen_mode().unwrap(), DoorbellMode::Write);
    let c = Mlx5Config::from_settings();
    assert!(c.blueflame && c.prefer_bf);

    install(ProviderSettings { rxe_doorbell: Ok(DoorbellMode::Uring), mlx5_blueflame: false, mlx5_prefer_bf: false, ..ProviderSettings::default() });
    assert_eq!(doorbell::chosen_mode().unwrap(), DoorbellMode::Uring);
    let c = Mlx5Config::from_settings();
    assert!(!c.blueflame && !c.prefer_bf);

    install(ProviderSettings { rxe_doorbell: Err("RPERFTEST_RXE_DOORBELL=mmio: expected write, uring or uring-sqpoll".into()), ..ProviderSettings::default() });
    let e = doorbell::chosen_mode().unwrap_err().to_string();
    assert!(e.starts_with("choose the rxe doorbell") && e.contains("RPERFTEST_RXE_DOORBELL=mmio"), "{e}");
}
