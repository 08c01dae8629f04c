//! What one side may use, decided from the parameters and the device before anything is
//! printed or connected: the inline size, the outstanding reads, the local MTU, the message
//! sizes and the bound of the measurement's waits. Pure, so every branch is tested here;
//! `side::run_with_context` prints the notes of the caps that applied, in this order.

use std::time::Duration;

use super::bound;
use crate::params::{Connection, Params, TestKind, TestMethod, TestType, Verb};

/// The device facts the limits depend on.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct DevCaps {
    /// In perftest's known-device table (inline supported).
    pub(super) known: bool,
    /// `max_qp_rd_atom` of the device (0 counts as 1).
    pub(super) max_qp_rd_atom: u32,
    /// The port's active MTU as an `ibv_mtu` enum (clamped to 1..=5).
    pub(super) active_mtu: u32,
}

/// A cap that lowered what the command line asked for; each has a perftest note.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Cap {
    /// An inline size was given (or implied: read/atomic) for a device missing from perftest's
    /// table: inline is off.
    InlineDisabled,
    /// `--use_cuda` on a known device without `-I`: inline off, with 6.29's note.
    CudaInline,
    /// `-o` above the device's `max_qp_rd_atom`: lowered to `max`.
    OutReads { max: u32 },
    /// `-m` above the port's active MTU: lowered to `active` (an `ibv_mtu` enum).
    Mtu { active: u8 },
}

/// The limits of one side's run.
#[derive(Clone, Debug, PartialEq)]
pub(super) struct SideLimits {
    pub(super) inline: u32,
    pub(super) out_reads: u32,
    /// `ibv_mtu` enum before the MTU exchange.
    pub(super) local_mtu: u8,
    /// Message sizes of the run (before the UD clamp to the MTU).
    pub(super) sizes: Vec<u64>,
    /// Bound of an out-of-band wait during the measurement.
    pub(super) run_bound: bound::Bound,
    /// The caps that applied, in the order perftest prints their notes.
    pub(super) caps: Vec<Cap>,
}

/// The limits for `p` on a device with `dev`; `setup_timeout` is the bound of one setup message.
pub(super) fn side_limits(p: &Params, dev: DevCaps, setup_timeout: Duration) -> SideLimits {
    let mut caps = Vec::new();
    let read_like = matches!(p.verb, Verb::Read | Verb::Atomic);
    // ctx_set_max_inline: unknown devices get 0, with a note if a value was set (read/atomic
    // tools always set 0 while parsing).
    let inline = if !dev.known {
        if p.inline_size.is_some() || read_like {
            caps.push(Cap::InlineDisabled);
        }
        0
    } else if read_like {
        0
    } else if p.inline_size.is_none() && p.buf.gpu.as_ref().is_some_and(|g| g.runtime == crate::gpu::GpuRuntime::Cuda) {
        caps.push(Cap::CudaInline);
        0
    } else if p.inline_size.is_none() && p.buf.gpu.as_ref().is_some_and(|g| g.runtime == crate::gpu::GpuRuntime::Rocm) {
        // ROCm memory is not mapped for the CPU here (params::gpu): no inline, and 6.29 has no
        // note for ROCm to print.
        0
    } else {
        p.inline_size.unwrap_or_else(|| p.default_inline(true))
    };
    // Outstanding reads (read/atomic): -o capped to the device maximum, default that maximum.
    let out_reads = if read_like {
        let max = dev.max_qp_rd_atom.max(1);
        match p.out_reads {
            Some(o) if o > max => {
                caps.push(Cap::OutReads { max });
                max
            }
            Some(o) if o > 0 => o,
            _ => max,
        }
    } else {
        1
    };
    let (local_mtu, mtu_cap) = local_mtu(p, dev.active_mtu);
    caps.extend(mtu_cap);
    let sizes = p.sizes();
    let run_bound = run_bound_for(p, &sizes, setup_timeout);
    SideLimits { inline, out_reads, local_mtu, sizes, run_bound, caps }
}

/// The local MTU: the port's active MTU, or `-m` lowered to it (with the cap that says so).
pub(super) fn local_mtu(p: &Params, active_mtu: u32) -> (u8, Option<Cap>) {
    let active = active_mtu.clamp(1, 5) as u8;
    match p.dev.mtu.and_then(crate::params::mtu_enum) {
        Some(m) if m > active => (active, Some(Cap::Mtu { active })),
        Some(m) => (m, None),
        None => (active, None),
    }
}

/// How long an out-of-band wait of the measurement phase may take ([`bound::run_wait`]).
pub(super) fn run_bound_for(p: &Params, sizes: &[u64], setup_timeout: Duration) -> bound::Bound {
    bound::run_wait(
        &bound::Work {
            sizes,
            iters: p.iters,
            qps: u64::from(p.num_qps),
            both_ways: p.duplex || p.kind == TestKind::Lat,
            duration: (p.test_type == TestType::Duration).then_some(p.duration),
            infinite: p.test_method == TestMethod::Infinitely,
        },
        setup_timeout,
        // The rdma_cm control channel cannot wait without a deadline.
        p.conn.use_rdma_cm,
    )
}

/// The run's message sizes as the exchange plan counts them: `-c UD -a` drops the sizes above
/// the local MTU (`mtu_bytes`) before the run, so the plan needs that count.
pub(super) fn planned_sizes(p: &Params, sizes: &[u64], mtu_bytes: u64) -> Option<usize> {
    if p.test_method != TestMethod::All {
        return None;
    }
    if p.connection == Connection::Ud {
        return Some(sizes.iter().filter(|&&s| s <= mtu_bytes).count());
    }
    Some(sizes.len())
}

#[cfg(test)]
mod tests {
    use super::{local_mtu, planned_sizes, side_limits, Cap, DevCaps};
    use crate::params::{parsed, Tool};
    use std::time::Duration;

    const SETUP: Duration = Duration::from_secs(30);
    const MLX: DevCaps = DevCaps { known: true, max_qp_rd_atom: 16, active_mtu: 5 };
    const RXE: DevCaps = DevCaps { known: false, max_qp_rd_atom: 128, active_mtu: 3 };

    fn limits(t: Tool, args: &[&str], dev: DevCaps) -> super::SideLimits {
        side_limits(&parsed(t, args), dev, SETUP)
    }

    /// 6.29's ctx_set_max_inline: an unknown device (rxe) returns before its CUDA note.
    #[cfg(feature = "gpu")]
    #[test]
    fn cuda_turns_the_default_inline_off_with_a_note_on_known_devices() {
        let w = limits(Tool::SendBw, &["--use_cuda=0"], MLX);
        assert_eq!((w.inline, w.caps.as_slice()), (0, &[Cap::CudaInline][..]));
        let w = limits(Tool::SendBw, &["--use_cuda=0"], RXE);
        assert_eq!((w.inline, w.caps.as_slice()), (0, &[][..]));
        assert_eq!(limits(Tool::SendBw, &["--use_cuda=0", "-I", "8"], MLX).inline, 8);
    }

    #[test]
    fn inline_follows_the_device_table_and_the_verb() {
        // Known device: the tool's default, or -I as given; read/atomic never inline.
        assert_eq!(limits(Tool::WriteLat, &[], MLX).inline, 220);
        assert_eq!(limits(Tool::SendLat, &[], MLX).inline, 236);
        assert_eq!(limits(Tool::WriteBw, &[], MLX).inline, 0);
        assert_eq!(limits(Tool::WriteBw, &["-I", "64"], MLX).inline, 64);
        let r = limits(Tool::ReadLat, &[], MLX);
        assert_eq!((r.inline, r.caps.as_slice()), (0, &[][..]));
        // Unknown device: 0, and a note only when a size was given or implied.
        let w = limits(Tool::WriteLat, &[], RXE);
        assert_eq!((w.inline, w.caps.as_slice()), (0, &[][..]));
        let w = limits(Tool::WriteLat, &["-I", "100"], RXE);
        assert_eq!((w.inline, w.caps.as_slice()), (0, &[Cap::InlineDisabled][..]));
        let r = limits(Tool::ReadBw, &[], RXE);
        assert_eq!((r.inline, r.caps.as_slice()), (0, &[Cap::InlineDisabled][..]));
    }

    #[test]
    fn out_reads_default_to_the_device_maximum_and_are_capped_to_it() {
        assert_eq!(limits(Tool::WriteBw, &[], MLX).out_reads, 1);
        assert_eq!(limits(Tool::SendLat, &["-I", "0"], MLX).out_reads, 1);
        assert_eq!(limits(Tool::ReadBw, &[], MLX).out_reads, 16);
        assert_eq!(limits(Tool::ReadBw, &["-o", "0"], MLX).out_reads, 16);
        let r = limits(Tool::ReadBw, &["-o", "4"], MLX);
        assert_eq!((r.out_reads, r.caps.as_slice()), (4, &[][..]));
        let r = limits(Tool::AtomicBw, &["-o", "32"], MLX);
        assert_eq!((r.out_reads, r.caps.as_slice()), (16, &[Cap::OutReads { max: 16 }][..]));
        // A device that reports 0 still allows one.
        assert_eq!(limits(Tool::ReadLat, &[], DevCaps { max_qp_rd_atom: 0, ..MLX }).out_reads, 1);
    }

    #[test]
    fn the_local_mtu_is_the_active_one_or_a_lower_m() {
        let p = |args: &[&str]| parsed(Tool::WriteBw, args);
        assert_eq!(local_mtu(&p(&[]), 5), (5, None));
        assert_eq!(local_mtu(&p(&["-m", "1024"]), 5), (3, None));
        assert_eq!(local_mtu(&p(&["-m", "4096"]), 3), (3, Some(Cap::Mtu { active: 3 })));
        // Not one of the five IB MTUs: the active one, silently (perftest warned while parsing).
        assert_eq!(local_mtu(&p(&["-m", "1000"]), 4), (4, None));
        // Out-of-range port values are clamped to the enum.
        assert_eq!(local_mtu(&p(&[]), 0), (1, None));
        assert_eq!(local_mtu(&p(&[]), 9), (5, None));
    }

    #[test]
    fn caps_come_in_perftests_order() {
        let r = limits(Tool::ReadBw, &["-o", "64", "-m", "4096"], RXE);
        assert_eq!(r.caps, [Cap::InlineDisabled, Cap::Mtu { active: 3 }]);
        assert_eq!((r.out_reads, r.local_mtu), (64, 3));
        let r = limits(Tool::ReadBw, &["-o", "200", "-m", "4096"], RXE);
        assert_eq!(r.caps, [Cap::InlineDisabled, Cap::OutReads { max: 128 }, Cap::Mtu { active: 3 }]);
    }

    #[test]
    fn sizes_and_the_run_bound_follow_the_test_shape() {
        let one = limits(Tool::WriteBw, &["-s", "4096"], MLX);
        assert_eq!(one.sizes, [4096]);
        assert!(one.run_bound.limit.is_some_and(|l| l >= SETUP), "{:?}", one.run_bound);
        let all = limits(Tool::WriteBw, &["-a"], MLX);
        assert_eq!((all.sizes.len(), all.sizes[0], all.sizes[22]), (23, 2, 1 << 23));
        // An infinite run over TCP waits without a deadline.
        assert_eq!(limits(Tool::WriteBw, &["--run_infinitely"], MLX).run_bound.limit, None);
    }

    #[test]
    fn the_plan_counts_the_sizes_a_ud_sweep_keeps() {
        let sizes: Vec<u64> = (1..=23).map(|e| 1u64 << e).collect();
        assert_eq!(planned_sizes(&parsed(Tool::WriteBw, &[]), &[65536], 4096), None);
        assert_eq!(planned_sizes(&parsed(Tool::WriteBw, &["-a"]), &sizes, 4096), Some(23));
        assert_eq!(planned_sizes(&parsed(Tool::SendBw, &["-a", "-c", "UD"]), &sizes, 4096), Some(12));
    }
}
