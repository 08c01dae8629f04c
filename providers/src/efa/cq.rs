//! CQs: creation (EFA's udata, the CQ buffer and the optional doorbell mapped at the kernel's
//! keys, every size checked), polling (the sub-CQ consumer of [`super::ring`]; a completion names
//! its QP by number and its request by id, both checked), arming.

use uverbs::error::{Error, Result};
use uverbs::provider::{CqCreated, Udata};
use uverbs::wr::WorkCompletion;

use super::mem::{checked_db, Region};
use super::ring::{CqMem, CqState};
use super::{abi, cqe, hw, Efa};

pub struct EfaCqPrep;

pub struct EfaCq<M: Region> {
    buf: M,
    /// The CQ doorbell and its offset, when the kernel gave one (a CQ with a completion
    /// channel on a device with CQ notifications).
    db: Option<(M, usize)>,
    pub state: CqState,
    pub entries: u32,
}

impl<M: Region> EfaCq<M> {
    /// The CQ buffer (tests play the device through it).
    pub fn buf(&self) -> &M {
        &self.buf
    }
    pub fn doorbell(&self) -> Option<&M> {
        self.db.as_ref().map(|(m, _)| m)
    }
}

/// The device's CQ memory as the sub-CQ consumer reads it.
struct Mem<'a, M: Region>(&'a M);

impl<M: Region> CqMem for Mem<'_, M> {
    fn flags(&self, off: usize) -> u8 {
        let o = off + hw::cdesc::FLAGS;
        if o < self.0.len() {
            self.0.read8_acquire(o)
        } else {
            0
        }
    }
    fn entry(&self, off: usize, len: usize) -> [u8; hw::CDESC_EX_SIZE] {
        let mut e = [0u8; hw::CDESC_EX_SIZE];
        let len = len.min(hw::CDESC_EX_SIZE);
        if off + len <= self.0.len() {
            self.0.read(off, &mut e[..len]);
        }
        e
    }
}

fn bad_completion(detail: String) -> Error {
    let mut e = Error::msg("EFA poll CQ", detail);
    e.errno = Some(libc::EIO);
    e
}

impl<M: Region> Efa<M> {
    /// The CQ entry size: libefa 44's 16 bytes, or on a device that can RDMA write 32
    /// (rdma-core 46 always asks for those): a received write's length has its high 16 bits in
    /// the extension.
    fn cqe_size(&self) -> usize {
        if self.caps.rdma_write() {
            hw::CDESC_EX_SIZE
        } else {
            hw::CDESC_SIZE
        }
    }

    /// libefa's `create_cq`: the size rounded up to a power of two, [`Efa::cqe_size`] entries,
    /// one sub-CQ per the context's count; with a completion channel, the flag that asks the
    /// kernel for the CQ's notifications (and its doorbell), refused as libefa does
    /// (EOPNOTSUPP) where the device's caps have no CQ notifications.
    pub(super) fn cq_prepare(
        &self,
        entries: u32,
        with_channel: bool,
    ) -> Result<(EfaCqPrep, u32, Udata)> {
        if with_channel && !self.caps.cq_notifications() {
            let mut e = Error::msg(
                "EFA create CQ",
                "a completion channel on a device without CQ notifications (its EFA caps lack them)",
            )
            .with_hint("poll without events (leave out -e/--events)");
            e.errno = Some(libc::EOPNOTSUPP);
            return Err(e);
        }
        let Some(cqe) = entries
            .max(1)
            .checked_next_power_of_two()
            .filter(|&n| n <= 1 << 16)
        else {
            let mut e = Error::msg(
                "EFA create CQ",
                format!("{entries} entries is more than 65536"),
            );
            e.errno = Some(libc::EINVAL);
            return Err(e);
        };
        let flags = if with_channel {
            abi::CREATE_CQ_WITH_COMPLETION_CHANNEL
        } else {
            0
        };
        let req =
            abi::create_cq_cmd(self.cqe_size() as u32, self.uctx.sub_cqs_per_cq, flags).to_vec();
        Ok((
            EfaCqPrep,
            cqe,
            Udata {
                req,
                resp_len: abi::CREATE_CQ_RESP_LEN,
            },
        ))
    }

    pub(super) fn cq_finish(&self, core: &CqCreated, drv_resp: &[u8]) -> Result<EfaCq<M>> {
        let r =
            abi::parse_cq_resp(drv_resp).map_err(|e| Error::msg("EFA create CQ", e.to_string()))?;
        let size = usize::try_from(r.q_mmap_size).unwrap_or(usize::MAX);
        let subs = self.uctx.sub_cqs_per_cq;
        // Check the kernel's numbers before mapping anything.
        let geometry = |size| {
            CqState::new(subs, core.cqe, self.cqe_size(), size).map_err(|e| {
                Error::msg(
                    "EFA create CQ",
                    format!("{e} (kernel: {} entries, {size} bytes)", core.cqe),
                )
            })
        };
        let mut state = geometry(size)?;
        let buf = M::map(&self.fd, r.q_mmap_key, size, false, "CQ buffer")?;
        let db = match r.db {
            Some((off, key)) => {
                let off = checked_db(off, self.page_size, "CQ doorbell")?;
                Some((
                    M::map(&self.fd, key, self.page_size, true, "CQ doorbell")?,
                    off,
                ))
            }
            None => None,
        };
        // Every sub-CQ is polled: a QP's sub-CQ index comes in its own create answer, which the
        // CQ never sees, and a sub-CQ no QP uses holds only entries of the old phase, so polling
        // it finds nothing, as libefa's skipping it does (its round-robin moves on over it too).
        for i in 0..subs {
            state
                .attach(i)
                .map_err(|e| Error::msg("EFA create CQ", e.to_string()))?;
        }
        Ok(EfaCq {
            buf,
            db,
            state,
            entries: core.cqe,
        })
    }

    /// libefa's `efa_poll_cq`: completions in sub-CQ round-robin order, each matched to its QP
    /// and request; then the consumer counter to the CQ doorbell, where there is one.
    pub(super) fn cq_poll(&self, cq: &mut EfaCq<M>, out: &mut [WorkCompletion]) -> Result<usize> {
        let mut n = 0;
        while n < out.len() {
            let Some(c) = cq.state.next(&Mem(&cq.buf)) else {
                break;
            };
            let c = c.map_err(|e| bad_completion(e.to_string()))?;
            let q = self.registry.lookup(c.qp_num).ok_or_else(|| {
                bad_completion(format!(
                    "a completion names QP {}, which this context does not have",
                    c.qp_num
                ))
            })?;
            let wr_id = q
                .complete(c.queue == hw::QUEUE_SEND, c.req_id)
                .map_err(|e| bad_completion(e.to_string()))?;
            out[n] = cqe::to_wc(&c, wr_id);
            n += 1;
        }
        if n > 0 {
            if let Some((db, off)) = &cq.db {
                db.ring32(*off, hw::cq_doorbell(cq.state.cc, cq.state.cmd_sn, false));
            }
        }
        Ok(n)
    }

    /// libefa's `efa_arm_cq`: the consumer counter, the command sequence number (completion
    /// events seen, low two bits) and the arm bit. EFA has no solicited-only events, and a CQ
    /// the kernel gave no doorbell cannot be armed (both EOPNOTSUPP, as libefa).
    pub(super) fn cq_arm(&self, cq: &mut EfaCq<M>, solicited_only: bool) -> Result<()> {
        if solicited_only {
            let mut e = Error::msg("EFA arm CQ", "EFA has no solicited-only CQ events");
            e.errno = Some(libc::EOPNOTSUPP);
            return Err(e);
        }
        let Some((db, off)) = &cq.db else {
            let mut e = Error::msg(
                "EFA arm CQ",
                "this CQ has no doorbell (no completion channel on it)",
            )
            .with_hint("poll without events (leave out -e/--events)");
            e.errno = Some(libc::EOPNOTSUPP);
            return Err(e);
        };
        db.ring32(*off, hw::cq_doorbell(cq.state.cc, cq.state.cmd_sn, true));
        Ok(())
    }
}
