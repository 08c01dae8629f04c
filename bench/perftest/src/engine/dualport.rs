//! `-O/--dualport` and `--report-per-port` (BW tools): perftest doubles the QPs and puts the
//! first half on the `-i` port and the second half on the second port (port 2) of the same
//! device; with `--report-per-port` (duration mode only) each port's share of the messages
//! counted in the sample window is reported next to the total, and the report exchange carries
//! four more doubles (docs/perftest-wire.md, "Report exchange", items 6–9).
//!
//! Pure logic only (port of a QP, per-port sums, the port-count check); the verbs side takes the
//! port of each QP from [`port_slot`]. **Never run on a two-port device**: rxe has one port, so
//! the VM bed only shows the one-port refusal.

/// Which of the two ports QP `q` of `num_qps` (after `-O` doubled them) uses: 0 = the `-i`
/// port, 1 = the second port. perftest: `q % num_qps < num_qps / 2` → first port.
pub fn port_slot(q: usize, num_qps: usize) -> usize {
    let n = num_qps.max(1);
    if q % n < n / 2 {
        0
    } else {
        1
    }
}

/// The port number QP `q` uses (`ports` = [`-i` port, second port]).
pub fn port_of_qp(q: usize, num_qps: usize, ports: [u8; 2]) -> u8 {
    ports[port_slot(q, num_qps)]
}

/// Messages of each port (perftest's `iters_per_port`) from the per-QP counts of the sample
/// window.
pub fn iters_per_port(per_qp: &[u64]) -> [u64; 2] {
    let mut v = [0u64; 2];
    for (q, n) in per_qp.iter().enumerate() {
        let s = port_slot(q, per_qp.len());
        v[s] = v[s].saturating_add(*n);
    }
    v
}

/// `-O` needs a device with both ports: one line naming the device and its port count.
pub fn check_ports(dev: &str, phys_port_cnt: u8, port1: u8, port2: u8) -> Result<(), String> {
    if port2 <= phys_port_cnt && port1 <= phys_port_cnt {
        return Ok(());
    }
    Err(format!(
        " -O/--dualport: {dev} has {phys_port_cnt} port{}; dual-port mode runs half of the QPs on port {port1} and half on port {port2} of one device, so it needs a device with at least {} ports (leave out -O and --report-per-port)",
        if phys_port_cnt == 1 { "" } else { "s" },
        port1.max(port2)
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn first_half_of_the_qps_on_the_first_port() {
        // -O with -q 1 → 2 QPs: one per port.
        assert_eq!((port_slot(0, 2), port_slot(1, 2)), (0, 1));
        // -O with -q 3 → 6 QPs: 0..3 on port 1, 3..6 on port 2.
        let v: Vec<usize> = (0..6).map(|q| port_slot(q, 6)).collect();
        assert_eq!(v, [0, 0, 0, 1, 1, 1]);
        assert_eq!(port_of_qp(4, 6, [1, 2]), 2);
        assert_eq!(port_of_qp(2, 6, [1, 2]), 1);
        // Never out of range, even for odd or zero counts.
        for n in 0..9 {
            for q in 0..12 {
                assert!(port_slot(q, n) < 2);
            }
        }
    }

    #[test]
    fn per_port_sums_follow_the_assignment() {
        assert_eq!(iters_per_port(&[10, 20, 1, 2]), [30, 3]);
        assert_eq!(iters_per_port(&[5, 7]), [5, 7]);
        assert_eq!(iters_per_port(&[]), [0, 0]);
        assert_eq!(iters_per_port(&[u64::MAX, 1, 0, 0]), [u64::MAX, 0]);
    }

    #[test]
    fn a_one_port_device_is_refused_in_one_line_naming_it() {
        let e = check_ports("rxe0", 1, 1, 2).unwrap_err();
        assert!(e.contains("rxe0 has 1 port;") && e.contains("-O/--dualport") && !e.contains('\n'), "{e}");
        assert!(check_ports("mlx5_0", 2, 1, 2).is_ok());
        assert!(check_ports("mlx5_0", 2, 3, 2).is_err());
    }
}
