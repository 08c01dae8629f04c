//! Shared receive queues (basic and XRC): creation, binding to a QP and `post_srq_recv`. The
//! ring state that CQ polling also reaches (the free list, completing a receive) is
//! [`super::srq_ring`].

use std::sync::atomic::{fence, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use uverbs::error::Result;
use uverbs::provider::{PostError, SrqCreated, Udata};
use uverbs::wr::RecvWr;

use super::mem::DmaBuf;
use super::qp::Mlx5Qp;
use super::registry::{Registry, UidxReservation, MAX_UIDX};
use super::srq_ring::SrqShared;
use super::uar::UarWriter;
use super::{abi, enomem, geometry, post_err, wqe, Mlx5};

pub struct Mlx5SrqPrep {
    buf: DmaBuf,
    db: DmaBuf,
    cnt: u32,
    shift: u32,
    max_sge: u32,
    /// XRC SRQs: the reservation of the user index CQEs name it by (CQE version 1; `None`
    /// under version 0, where the SRQ number does).
    xrc: Option<Option<UidxReservation>>,
}

pub struct Mlx5Srq {
    shared: Arc<SrqShared>,
    db: DmaBuf,
    counter: u32,
    registry: Arc<Registry>,
    /// An XRC SRQ's user index (released on drop).
    xrc_uidx: Option<u32>,
}

impl Mlx5Srq {
    pub fn srqn(&self) -> u32 {
        self.shared.srqn
    }
    pub fn addrs(&self) -> (u64, u64) {
        (self.shared.buf.addr(), self.db.addr())
    }
}

impl Drop for Mlx5Srq {
    fn drop(&mut self) {
        let mut v = self
            .registry
            .srqs
            .write()
            .unwrap_or_else(|e| e.into_inner());
        v.retain(|s| !Arc::ptr_eq(s, &self.shared));
        drop(v);
        if let Some(u) = self.xrc_uidx {
            self.registry.release(u);
        }
    }
}

impl<U: UarWriter> Mlx5<U> {
    /// Tell CQ polling which SRQ a QP receives from: the verbs layer does through
    /// `Provider::qp_attached_srq` when it creates a QP on an SRQ; tests that build QPs without
    /// the verbs layer call it directly. Unbound, an SRQ-attached QP uses the context's only SRQ.
    pub fn bind_srq(&self, qp: &Mlx5Qp, srq: &Mlx5Srq) {
        *qp.shared.srq.write().unwrap_or_else(|e| e.into_inner()) = Some(srq.shared.clone());
    }

    pub(super) fn srq_prepare(&self, max_wr: u32, max_sge: u32) -> Result<(Mlx5SrqPrep, Udata)> {
        let (cnt, shift, max_sge) = geometry::srq_geometry(&self.resp, max_wr, max_sge)?;
        let buf = DmaBuf::alloc((cnt as usize) << shift, "mlx5 SRQ buffer")?;
        for i in 0..cnt {
            buf.write(
                ((i as usize) << shift) + 2,
                &(((i + 1) & (cnt - 1)) as u16).to_be_bytes(),
            );
        }
        let db = DmaBuf::alloc(64, "mlx5 SRQ doorbell record")?;
        let uidx = if self.resp.cqe_version == 1 {
            0
        } else {
            MAX_UIDX as u32
        };
        let req = abi::create_srq_req(buf.addr(), db.addr(), uidx);
        Ok((
            Mlx5SrqPrep {
                buf,
                db,
                cnt,
                shift,
                max_sge,
                xrc: None,
            },
            Udata {
                req,
                resp_len: abi::CREATE_SRQ_RESP_LEN,
            },
        ))
    }

    pub(super) fn srq_finish(
        &self,
        prep: Mlx5SrqPrep,
        _core: &SrqCreated,
        drv_resp: &[u8],
    ) -> Result<Mlx5Srq> {
        let srqn = abi::parse_create_srq_resp(drv_resp)?;
        let _ = prep.max_sge;
        let shared = Arc::new(SrqShared {
            srqn,
            xrc: prep.xrc.is_some(),
            buf: prep.buf,
            cnt: prep.cnt,
            shift: prep.shift,
            wrid: (0..prep.cnt).map(|_| AtomicU64::new(0)).collect(),
            state: Mutex::new((0, prep.cnt - 1)),
        });
        self.registry
            .srqs
            .write()
            .unwrap_or_else(|e| e.into_inner())
            .push(shared.clone());
        let mut xrc_uidx = None;
        if let Some(Some(mut r)) = prep.xrc {
            self.registry.fill_xsrq(r.uidx, shared.clone());
            r.armed = false;
            xrc_uidx = Some(r.uidx);
        }
        Ok(Mlx5Srq {
            shared,
            db: prep.db,
            counter: 0,
            registry: self.registry.clone(),
            xrc_uidx,
        })
    }

    pub(super) fn xrc_srq_prepare(&self, max_wr: u32, max_sge: u32) -> Result<(Mlx5SrqPrep, Udata)> {
        // The same ring and the same driver request as a basic SRQ (libmlx5's
        // mlx5_create_xrc_srq sends mlx5_create_srq too); the XRC domain and CQ travel in the
        // core request. Under CQE version 1 the SRQ takes a user index of its own.
        let (mut prep, mut udata) = self.srq_prepare(max_wr, max_sge)?;
        let resv = if self.resp.cqe_version == 1 {
            Some(UidxReservation::take(&self.registry)?)
        } else {
            None
        };
        let uidx = resv.as_ref().map_or(MAX_UIDX as u32, |r| r.uidx);
        let (buf, db) = (prep.buf.addr(), prep.db.addr());
        udata.req = abi::create_srq_req(buf, db, uidx);
        prep.xrc = Some(resv);
        Ok((prep, udata))
    }

    /// # Safety
    /// every SGE names writable memory that stays valid until completion (`Provider::post_srq_recv`'s contract).
    pub(super) unsafe fn srq_post_recv(&self, srq: &mut Mlx5Srq, wrs: &[RecvWr<'_>]) -> Result<(), PostError> {
        let s = &srq.shared;
        let stride = 1usize << s.shift;
        let mut nreq = 0u32;
        let mut err = None;
        {
            let mut st = s.state.lock().unwrap_or_else(|e| e.into_inner());
            for (i, wr) in wrs.iter().enumerate() {
                if st.0 == st.1 {
                    err = Some(post_err(
                        i,
                        enomem(
                            "mlx5 post_srq_recv",
                            format!("SRQ full ({} entries)", s.cnt - 1),
                        ),
                    ));
                    break;
                }
                let idx = st.0;
                // Encode on the stack (no allocation per receive; SRQ strides are at most the
                // device's max_rq_desc_sz, 512 on ConnectX), then copy into the entry.
                let mut stack = [0u8; 512];
                let mut heap = Vec::new();
                let slot: &mut [u8] = if stride - 16 <= stack.len() {
                    &mut stack[..stride - 16]
                } else {
                    heap.resize(stride - 16, 0);
                    &mut heap
                };
                if let Err(e) = wqe::build_recv(slot, wr) {
                    err = Some(post_err(i, e));
                    break;
                }
                s.buf.write(((idx as usize) << s.shift) + 16, slot);
                s.wrid[idx as usize].store(wr.wr_id, Ordering::Relaxed);
                st.0 = s.next_of(idx);
                nreq += 1;
            }
        }
        if nreq > 0 {
            srq.counter = srq.counter.wrapping_add(nreq);
            // udma_to_device_barrier: SRQ WQEs before the counter that exposes them.
            fence(Ordering::Release);
            srq.db.write_be32_volatile(0, srq.counter & 0xffff);
        }
        match err {
            Some(e) => Err(e),
            None => Ok(()),
        }
    }
}
