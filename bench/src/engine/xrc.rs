//! `-c XRC` against the device: perftest 6.06 opens an XRC domain in `ctx_init` (after the
//! version and MTU exchanges) and, on a device without XRC (rxe), fails there with three lines
//! and exit 1; its peer then sees the connection close. rperftest fails at the same point
//! with the same lines, followed by one line that names `-c XRC` and the reason.

use uverbs::attr::DeviceAttr;

/// perftest 6.06's lines when `ibv_open_xrcd` fails (`ctx_xrcd_create` and `ctx_init`).
pub const PERFTEST_XRCD_FAILURE: &str = "Error opening XRC domain\nCouldn't create XRC resources\n Couldn't create IB resources\n";

/// Why `-c XRC` cannot run on this device, as the text to print (perftest's lines and ours),
/// or `None` when it can.
///
/// A device without `IB_UVERBS_DEVICE_XRC` has no XRC domains: perftest's failure, then the
/// reason. A device with XRC (mlx5): the verbs layer and the mlx5 provider build XRC domains,
/// XRC SRQs and XRC QPs (checked against a device model only), but the benchmark loops do not
/// drive XRC QPs yet, so the run stops here rather than measure something else.
pub fn device_problem(dev: &str, attr: &DeviceAttr) -> Option<String> {
    if !attr.supports_xrc() {
        return Some(format!(
            "{PERFTEST_XRCD_FAILURE} -c XRC: device {dev} has no XRC support (IB_DEVICE_XRC is not in its capability flags; rxe never has it): use -c RC"
        ));
    }
    Some(format!(
        " -c XRC: rperftest's benchmark loops do not drive XRC QPs yet (device {dev} has XRC; rperftest's verbs layer and mlx5 provider support it, checked against a model only): use -c RC"
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_device_without_xrc_fails_like_perftest_then_says_why() {
        let rxe = DeviceAttr { device_cap_flags: 0x0022_1c76, ..Default::default() };
        assert!(!rxe.supports_xrc());
        let m = device_problem("rxe0", &rxe).unwrap();
        let lines: Vec<&str> = m.lines().collect();
        assert_eq!(
            lines[..3],
            ["Error opening XRC domain", "Couldn't create XRC resources", " Couldn't create IB resources"]
        );
        assert_eq!(lines.len(), 4);
        assert!(lines[3].starts_with(" -c XRC: device rxe0 has no XRC support"), "{}", lines[3]);
    }

    #[test]
    fn a_device_with_xrc_is_told_what_is_missing() {
        let mlx5 = DeviceAttr { device_cap_flags: 1 << 20, ..Default::default() };
        assert!(mlx5.supports_xrc());
        let m = device_problem("mlx5_0", &mlx5).unwrap();
        assert_eq!(m.lines().count(), 1);
        assert!(m.contains("-c XRC") && m.contains("mlx5_0 has XRC"), "{m}");
    }
}
