//! Shared receive queues: fixed 128-byte entries, a free list of tags (the device returns the
//! tag in the completion, and the tag finds the WR id).

use std::sync::{Arc, Mutex};

use uverbs::error::Result;
use uverbs::provider::{PostError, SrqCreated, Udata};
use uverbs::wr::RecvWr;

use super::db::Page;
use super::geometry::SrqGeom;
use super::hw::*;
use super::{abi, post_err, wqe, Bnxt};
use crate::mlx5::mem::DmaBuf;

/// Ring indices and the tag free list (libbnxt_re's `srwrid` with `next_idx`; -1 ends it).
pub(super) struct SrqRing {
    pub head: u32,
    tail: u32,
    start: i32,
    last: i32,
    next: Vec<i32>,
    wrid: Vec<u64>,
    /// Flips each time `tail` wraps (gen P7 doorbells carry it).
    epoch: bool,
}

impl SrqRing {
    fn new(depth: u32) -> SrqRing {
        let mut next: Vec<i32> = (1..=depth as i32).collect();
        next[depth as usize - 1] = -1;
        SrqRing {
            head: 0,
            tail: 0,
            start: 0,
            last: depth as i32 - 1,
            next,
            wrid: vec![0; depth as usize],
            epoch: false,
        }
    }
    /// The WR id of tag `tag` (from a completion: untrusted), and give the tag back.
    pub fn take(&mut self, tag: u32) -> Option<u64> {
        let t = tag as usize;
        let id = *self.wrid.get(t)?;
        let last = self.last as usize;
        self.next[last] = tag as i32;
        self.last = tag as i32;
        self.next[t] = -1;
        Some(id)
    }
    pub fn consumed(&mut self) {
        self.head = (self.head + 1) % self.wrid.len() as u32;
    }
}

pub struct SrqShared {
    pub srqid: u32,
    pub(super) ring: Mutex<SrqRing>,
}

pub struct BnxtSrqPrep {
    buf: DmaBuf,
    geom: SrqGeom,
}

pub struct BnxtSrq {
    pub shared: Arc<SrqShared>,
    buf: DmaBuf,
    pub geom: SrqGeom,
    max_sge: u32,
}

impl BnxtSrq {
    pub fn buf(&self) -> &DmaBuf {
        &self.buf
    }
}

impl<P: Page> Bnxt<P> {
    pub(super) fn srq_prepare(&self, max_wr: u32, _max_sge: u32) -> Result<(BnxtSrqPrep, Udata)> {
        let geom = SrqGeom::new(max_wr, self.pg_size());
        let buf = DmaBuf::alloc(geom.bytes, "bnxt_re shared receive queue")?;
        let req = abi::srq_req(buf.addr(), self.handle());
        Ok((
            BnxtSrqPrep { buf, geom },
            Udata {
                req,
                resp_len: abi::SRQ_RESP_LEN,
            },
        ))
    }

    pub(super) fn srq_finish(
        &self,
        prep: BnxtSrqPrep,
        core: &SrqCreated,
        drv_resp: &[u8],
    ) -> Result<BnxtSrq> {
        let srqid = abi::parse_srq_resp(drv_resp)?;
        Ok(BnxtSrq {
            shared: Arc::new(SrqShared {
                srqid,
                ring: Mutex::new(SrqRing::new(prep.geom.depth)),
            }),
            buf: prep.buf,
            geom: prep.geom,
            max_sge: core.max_sge,
        })
    }

    pub(super) fn srq_post_recv(
        &self,
        srq: &mut BnxtSrq,
        wrs: &[RecvWr<'_>],
    ) -> Result<(), PostError> {
        let max = (SRQE_SIZE - RQE_HDR) / SLOT;
        for (i, wr) in wrs.iter().enumerate() {
            let mut r = srq.shared.ring.lock().unwrap_or_else(|e| e.into_inner());
            if r.start == r.last
                || r.start < 0
                || wr.sgl.len() > srq.max_sge as usize
                || wr.sgl.len() > max
            {
                return Err(post_err(
                    i,
                    libc::ENOMEM,
                    "post SRQ receive",
                    "the SRQ is full or the request has too many SGEs".into(),
                ));
            }
            let tag = r.start as u32;
            let mut w = [0u8; SRQE_SIZE];
            wqe::encode_srq_recv(&mut w, wr.sgl, tag);
            srq.buf.write(r.tail as usize * SRQE_SIZE, &w);
            r.wrid[tag as usize] = wr.wr_id;
            r.start = r.next[tag as usize];
            r.tail = (r.tail + 1) % srq.geom.depth;
            if r.tail == 0 {
                r.epoch = !r.epoch;
            }
            let (tail, epoch) = (r.tail, r.epoch);
            drop(r);
            self.ring(self.db(tail, epoch, 0, srq.shared.srqid, dbtype::SRQ));
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tags_cycle_through_the_free_list() {
        let mut r = SrqRing::new(4);
        assert_eq!((r.start, r.last), (0, 3));
        r.start = r.next[0];
        assert_eq!(r.take(0), Some(0));
        assert_eq!((r.last, r.next[3], r.next[0]), (0, 0, -1));
        assert_eq!(r.take(4), None, "a tag beyond the SRQ is refused");
    }
}
