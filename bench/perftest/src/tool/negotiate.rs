//! The 6.28+ parameter-negotiation block this side would send, as a pure function of the
//! parameters, so that golden tests can compare it with perftest 6.29's blocks on the wire
//! (`bench/perftest/tests/persona629_golden.rs`). rperftest advertises version 6.06 on the wire for now
//! (`params::WIRE_VERSION`), so no C peer asks for it yet; see docs/compat.md, Personas.

use crate::oob::msg::{Negotiate, DEVICE_ATTR_LEN};
use crate::params::{Params, ReportFormat, TestType, Verb};

/// The block for parameters `p`. `size` is the message size in effect (perftest sends it after
/// the UD clamp to the MTU); `device_attr` is the raw `ibv_device_attr` image to carry.
pub fn negotiate_block(p: &Params, size: u64, device_attr: [u8; DEVICE_ATTR_LEN]) -> Negotiate {
    Negotiate {
        test_method: p.test_method.wire_value() as i32,
        connection_type: p.connection.wire_value() as i32,
        verb: p.verb.wire_value() as i32,
        tst: p.kind.wire_value() as i32,
        // perftest sets an atomic type only for the atomic tools; every other tool sends 0.
        atomic_type: if p.verb == Verb::Atomic { p.atomic_type.wire_value() as i32 } else { 0 },
        test_type: if p.test_type == TestType::Duration { 1 } else { 0 },
        report_fmt: if p.report.fmt == ReportFormat::Gbs { 0 } else { 1 },
        size,
        iters: p.iters,
        aes_xts: i32::from(p.aes.enabled),
        num_of_qps: p.num_qps as i32,
        // The -D value goes on the wire even in iteration mode (default 5).
        duration: p.duration as i32,
        use_rdma_cm: i32::from(p.conn.use_rdma_cm),
        use_write_with_imm: i32::from(p.verb == Verb::WriteImm),
        no_enhanced_reorder: i32::from(p.buf.no_enhanced_reorder),
        sig_offload: 0,
        data_validation: 0,
        device_attr,
        mlx5dv_comp_mask: 0,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::params::{parsed, TestKind, Tool};

    #[test]
    fn atomic_type_only_for_atomics_and_duration_always() {
        let w = negotiate_block(&parsed(Tool::WriteBw, &["h"]), 65536, [0; DEVICE_ATTR_LEN]);
        assert_eq!((w.atomic_type, w.duration, w.tst, w.iters), (0, 5, 1, 5000));
        let a = negotiate_block(&parsed(Tool::AtomicLat, &["h"]), 8, [0; DEVICE_ATTR_LEN]);
        assert_eq!((a.atomic_type, a.tst, a.verb), (1, 0, 5));
        assert_eq!(TestKind::Lat.wire_value(), 0);
    }
}
