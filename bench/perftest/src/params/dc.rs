//! `-c DC` (mlx5 Dynamically Connected) and the DCI stream options: perftest 6.06's parameter
//! rules (`force_dependecies` with HAVE_MLX5DV and HAVE_DCS, and the tools' `main`s).

use super::{conflict, Connection, ParamError, Params, TestKind};

pub use super::types::{DC_KEY, DEF_INLINE_DC};

/// The DC rules, in perftest's order. `active_given`: `--log_active_dci_streams` was on the
/// command line (otherwise it defaults to `--log_dci_streams`).
pub(super) fn dependencies(p: &mut Params, active_given: bool) -> Result<(), ParamError> {
    let dc = p.connection == Connection::Dc;
    if dc {
        // DC receives through an SRQ, always (after the SRQ checks, as in perftest: write/read
        // tests get one too).
        p.use_srq = true;
        if p.buf.use_old_post_send {
            return Err(conflict("-c DC, --use_old_post_send", "DC does not support old post send flow"));
        }
        if p.conn.work_rdma_cm || p.conn.use_rdma_cm {
            // 6.06 refuses -R here; -z passes its parser and fails later in the rdma_cm
            // connection (rdma_resolve_route): refused here too.
            let opt = if p.conn.work_rdma_cm { "-c DC, -R/--rdma_cm" } else { "-c DC, -z/--comm_rdma_cm" };
            return Err(conflict(opt, "DC does not support RDMA_CM"));
        }
    }
    if p.log_dci_streams > 0 && !dc {
        return Err(conflict("--log_dci_streams", "log_dci_streams supported only on DC"));
    }
    if p.log_active_dci_streams > 0 {
        if !dc {
            return Err(conflict("--log_active_dci_streams", "log_active_dci_streams supported only on DC"));
        }
        if p.log_dci_streams == 0 {
            return Err(conflict("--log_active_dci_streams", "log_dci_streams must be greater than 0"));
        }
    }
    if !active_given {
        p.log_active_dci_streams = p.log_dci_streams;
    }
    // The tools' mains: DC doubles the QPs (DCI senders + DCT targets) where both directions
    // run: latency tests always, BW tests with -b. One-way BW: client DCIs, server DCTs.
    if dc && (p.kind == TestKind::Lat || p.duplex) {
        p.num_qps = p.num_qps.saturating_mul(2);
    }
    Ok(())
}

/// The DC role of QP `q` on this side (perftest's `is_dc_server_side`): `true` = DCT target.
/// One-way BW: the server has only DCTs, the client only DCIs; latency and `-b`: the first
/// half are DCIs, the second half DCTs.
pub fn is_dct(p: &Params, q: usize) -> bool {
    if p.kind == TestKind::Lat || p.duplex {
        q >= (p.num_qps as usize) / 2
    } else {
        p.machine == super::Role::Server
    }
}

/// The engine's DC set-up for this run (`None` unless `-c DC`).
pub fn engine_setup(p: &Params) -> Option<crate::engine::dc::DcSetup> {
    (p.connection == Connection::Dc).then(|| crate::engine::dc::DcSetup {
        dct: (0..p.num_qps as usize).map(|q| is_dct(p, q)).collect(),
        access_key: DC_KEY,
        log_dci_streams: p.log_dci_streams,
        log_active_dci_streams: p.log_active_dci_streams,
        lanes: split_lanes(p),
    })
}

/// `-c DC` with a latency test or `-b`: the DCI/DCT halves as the XRC split's lanes (perftest
/// 6.06 pairs them with the same `xrc_offset` as XRC). `None` otherwise, one-way BW included
/// (every QP is its own lane there, as without DC).
pub fn split_lanes(p: &Params) -> Option<crate::engine::xrc::XrcPlan> {
    (p.connection == Connection::Dc && (p.kind == TestKind::Lat || p.duplex))
        .then(|| crate::engine::xrc::XrcPlan::new(p.num_qps as usize, true, p.machine == super::Role::Server))
}
