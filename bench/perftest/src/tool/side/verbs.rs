//! The verbs resources of a side: the device context, the endpoint (PD, CQs, QPs, buffers)
//! with this side's key records, the receives posted ahead of a run, the static rate the QPs
//! took, and `-R`'s rdma_cm data connections.

use std::sync::Arc;

use uverbs::objects::Context;
use uverbs::provider::Provider;

use crate::cm_session;
use crate::engine::bw::QpTarget;
use crate::engine::dv::Ext;
use crate::engine::verbs::VerbsEndpoint;
use crate::oob::msg::KeyMsg;
use crate::params::Params;
use crate::tool::ToolError;

pub(super) struct Verbs<P: Provider> {
    pub(super) ctx: Arc<Context<P>>,
    /// The provider's extensions (`-c DC`, `-c XRC`, `--aes_xts`); `None` unless mlx5.
    pub(super) ext: Ext<P>,
    pub(super) ep: Option<VerbsEndpoint<P>>,
    pub(super) my_keys: Vec<KeyMsg>,
    /// The receives posted ahead of the run (Action::PostReceives), handed to the engine loop.
    pub(super) posted: Vec<u64>,
    /// perftest's HW rate limiter: every QP took the static rate, so no SW limiter runs.
    pub(super) hw_rate_taken: bool,
    /// `-R`: the rdma_cm data connections.
    pub(super) cm_data: Option<cm_session::CmData>,
    /// `--use_cuda`: the GPU memory the endpoint's MR registers. Declared after `ep` so that it
    /// is dropped after it (the MR is deregistered before the memory is freed).
    pub(super) gpu: Option<crate::gpu::GpuBuffer>,
}

impl<P: Provider> Verbs<P> {
    pub(super) fn new(ctx: Arc<Context<P>>, ext: Ext<P>, cm_data: Option<cm_session::CmData>) -> Self {
        Verbs { ctx, ext, ep: None, my_keys: Vec::new(), posted: Vec::new(), hw_rate_taken: false, cm_data, gpu: None }
    }

    pub(super) fn ep(&mut self) -> Result<&mut VerbsEndpoint<P>, ToolError> {
        self.ep.as_mut().ok_or_else(|| ToolError::new(1, "internal error: resources not created"))
    }

    /// `-g`: attach the QPs to this side's group; its key then carries the group (MGID, MLID 0
    /// on RoCE, QPN 0xFFFFFF), as perftest's send_set_up_connection.
    pub(super) fn attach_group(&mut self, p: &Params) -> Result<(), ToolError> {
        let user = match p.mgid.as_deref().map(crate::mcast::parse_mgid) {
            Some(Ok(g)) => Some(g),
            Some(Err(e)) => return Err(ToolError::new(1, e)),
            None => None,
        };
        let mgid = crate::mcast::group_gid(user, p.is_tcp_client());
        let nq = p.num_qps as usize;
        let ep = self.ep()?;
        for q in 0..nq {
            ep.qp_mut(q)
                .attach_mcast(mgid, 0)
                .map_err(|e| ToolError::new(1, format!("Couldn't attach QP to MultiCast group: {e}\n Unable to set up socket connection")))?;
        }
        for k in &mut self.my_keys {
            k.gid = mgid;
            k.lid = 0;
            k.qpn = crate::mcast::QPN_MCAST;
        }
        Ok(())
    }

    pub(super) fn targets(&self, p: &Params, remote_keys: &[KeyMsg], size: u64) -> Vec<QpTarget> {
        let Some(ep) = self.ep.as_ref() else { return Vec::new() };
        let _ = size;
        if let Some(x) = ep.xrc_plan() {
            let remote = |k: usize| {
                let r = remote_keys.get(k).copied().unwrap_or_default();
                (uverbs::wr::RemoteAddr { addr: r.vaddr, rkey: r.rkey }, r.srqn)
            };
            let mut t = crate::engine::xrc::lane_targets(&x, ep.lkey(), |q| ep.send_addr(q), |l| ep.recv_post_addr(l), remote);
            // -c DC: a lane's DCI sends to its partner DCT (set at connect).
            t.iter_mut().enumerate().for_each(|(l, t)| t.ud = ep.ud_dest(x.send_qp(l)));
            return t;
        }
        (0..p.num_qps as usize)
            .map(|q| QpTarget {
                lkey: ep.lkey(),
                local_addr: ep.send_addr(q),
                recv_addr: ep.recv_post_addr(q),
                remote: uverbs::wr::RemoteAddr { addr: remote_keys[q].vaddr, rkey: remote_keys[q].rkey },
                ud: ep.ud_dest(q),
                remote_srqn: 0,
            })
            .collect()
    }
}
