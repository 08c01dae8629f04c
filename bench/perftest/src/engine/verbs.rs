//! The real [`Endpoint`]: one side's QPs, CQs, optional SRQ and completion channel, and the one
//! memory region the test uses, over `uverbs` objects. Generic over the provider, so the loops'
//! post/poll calls are static and inline.
//!
//! Buffer layout (docs/perftest-wire.md, "Buffer layout"): `B = max(size, cycle_buffer)`; the
//! send area of QP `i` starts at `i × B`, its receive/target area (the advertised VAddr) at
//! `(num_qps + i) × B`; the region is `round_up(B, cache_line) × 2 × num_qps` bytes (+ one cache
//! line for UD, whose receives carry a 40-byte GRH in front of the payload).
//!
//! This is the only module of the engine with `unsafe`: posting work requests hands buffer
//! addresses to the device. Every SGE is checked to lie inside this endpoint's own MR under its
//! lkey before it is posted, and the MR outlives every QP (field order), which is the buffer
//! contract of `Qp::post_send` / `Qp::post_recv` / `Srq::post_recv`.

use std::sync::Arc;
use std::time::Duration;

use uverbs::objects::{
    AccessFlags, Ah, CompChannel, Context, Cq, Mr, Pd, Qp, QpInit, RtrParams, RtsParams, Srq, Xrcd, DEFAULT_QKEY,
};
use uverbs::provider::{AhAttr, Provider, QpCaps, QpType};
use uverbs::wr::{RecvWr, SendFlags, SendWr, Sge, UdDest, WorkCompletion};

use super::memsrc::{pattern_chunk, Fill};
use super::xrc::XrcPlan;
use super::{CqKind, Endpoint, EngineError};

/// Bytes of the GRH in front of every UD receive.
pub const UD_GRH: u64 = 40;

/// `--aes_xts`: marks the wr_id of a request signaled only because perftest's encrypted path
/// signals every request (the loops' wr_ids use the low 48 bits).
const FORCED_SIGNAL: u64 = 1 << 63;

/// Where each QP's areas lie inside the MR.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct BufLayout {
    pub num_qps: usize,
    /// `B = max(largest size, cycle buffer)`.
    pub area: u64,
    pub cache_line: u64,
    pub ud: bool,
}

impl BufLayout {
    pub fn new(num_qps: usize, max_size: u64, cycle_buffer: u64, cache_line: u64, ud: bool) -> Self {
        BufLayout { num_qps: num_qps.max(1), area: max_size.max(cycle_buffer).max(1), cache_line: cache_line.max(1), ud }
    }
    /// Total bytes to allocate.
    pub fn total(&self) -> u64 {
        let c = self.area.div_ceil(self.cache_line) * self.cache_line;
        c * 2 * self.num_qps as u64 + if self.ud { self.cache_line } else { 0 }
    }
    /// Offset of QP `q`'s send area.
    pub fn send_off(&self, q: usize) -> u64 {
        q as u64 * self.area
    }
    /// Offset of QP `q`'s receive/target area (the advertised VAddr).
    pub fn recv_off(&self, q: usize) -> u64 {
        (self.num_qps + q) as u64 * self.area
    }
    /// Offset where receives are posted (UD: shifted so the payload after the GRH starts on a
    /// cache line).
    pub fn recv_post_off(&self, q: usize) -> u64 {
        if self.ud {
            self.recv_off(q) + self.cache_line.max(UD_GRH) - UD_GRH
        } else {
            self.recv_off(q)
        }
    }
}

/// What to create.
#[derive(Clone, Debug)]
pub struct VerbsSetup {
    pub qp_type: QpType,
    pub num_qps: usize,
    pub tx_depth: u32,
    /// Receive queue depth per QP (0 with SRQ); the SRQ depth when `use_srq`.
    pub rx_depth: u32,
    pub inline_size: u32,
    pub use_srq: bool,
    /// `-e`: CQs report to a completion channel.
    pub use_event: bool,
    pub comp_vector: u32,
    /// Separate receive CQ (send / write-with-imm tests); else the send CQ serves both.
    pub recv_cq: bool,
    pub send_cq_depth: u32,
    pub recv_cq_depth: u32,
    pub layout: BufLayout,
    pub access: AccessFlags,
    pub port: u8,
    /// `-O`: the second port; the second half of the QPs uses it ([`super::dualport`]).
    pub port2: Option<u8>,
    pub pkey_index: u16,
    /// What the buffer holds after registration (zeros for write_lat, pseudo-random words or a
    /// `--payload_file_path` pattern otherwise).
    pub fill: Fill,
    pub hugepages: bool,
    /// `--mmap <file>` / `--mmap-offset`: the buffer is the file mapped from that offset.
    pub mmap: Option<(std::path::PathBuf, u64)>,
    /// `--odp`: register the MR with IBV_ACCESS_ON_DEMAND (the caps are checked beforehand).
    pub odp: bool,
    /// `--use_cuda`: the buffer is accelerator memory the tool allocated (crate::gpu), registered
    /// instead of fresh host memory and never filled by the CPU (6.29's `can_init = false`).
    pub device_mem: Option<DeviceMem>,
    /// `-c DC`: the QPs are DCIs/DCTs ([`super::dc`]); `qp_type` is then ignored.
    pub dc: Option<super::dc::DcSetup>,
    /// `--use-null-mr`: the SGEs and the advertised rkey use the device's null MR
    /// ([`Provider::null_mr_lkey`]) instead of the buffer's MR, which stays registered.
    pub null_mr: bool,
    /// `-c XRC`: an XRC domain, one XRC SRQ and XRC initiator/target QPs laid out by the plan
    /// (`qp_type` and `use_srq` are then ignored); the loops drive the plan's lanes.
    pub xrc: Option<XrcPlan>,
    /// `--aes_xts`: DEKs and one crypto mkey per QP ([`super::crypto`]); the QPs get twice the
    /// send queue (a UMR before every request) and perftest's 512-byte inline size.
    pub crypto: Option<super::crypto::CryptoSetup>,
}

/// Accelerator memory to register: its device address and length, and with dma-buf the exported
/// fd and the buffer's offset in it. The owner (the tool) keeps the memory and the fd alive until
/// the endpoint is dropped.
#[derive(Clone, Copy, Debug)]
pub struct DeviceMem {
    pub addr: u64,
    pub len: usize,
    pub dmabuf: Option<(std::os::fd::RawFd, u64)>,
}

/// The peer's side of one QP connection plus our path settings.
#[derive(Clone, Copy, Debug)]
pub struct ConnectParams {
    pub path_mtu: u8,
    pub remote_qpn: u32,
    pub remote_psn: u32,
    pub remote_lid: u16,
    pub remote_gid: [u8; 16],
    /// Our GID index (GRH) if one is in use.
    pub sgid_index: Option<u8>,
    pub sl: u8,
    pub traffic_class: u8,
    pub flow_label: u32,
    pub own_psn: u32,
    /// RTR max_dest_rd_atomic (our out_reads).
    pub max_dest_rd_atomic: u8,
    /// RTS max_rd_atomic (the peer's out_reads).
    pub max_rd_atomic: u8,
    pub timeout: u8,
    pub retry_cnt: u8,
    pub rnr_retry: u8,
    /// Move on to RTS (LAT tests, the BW client, both sides with `-b`).
    pub to_rts: bool,
    /// `enum ibv_rate` for the path (perftest's HW rate limiter; 0 = the port's rate).
    pub static_rate: u8,
}

/// One side's verbs resources. Field order is drop order: QPs (and AHs) go before the CQs, SRQ
/// and the MR they reference.
pub struct VerbsEndpoint<P: Provider> {
    qps: Vec<Qp<P>>,
    /// `--aes_xts`: after the QPs (which post through its mkeys), before the MR the mkeys map.
    crypto: Option<Box<dyn super::dv::CryptoPosts<P>>>,
    /// The crypto state posts through the mkeys (perftest's `use_enc`); chosen once.
    encrypt: bool,
    ahs: Vec<Option<Ah<P>>>,
    ud_dest: Vec<Option<UdDest>>,
    srq: Option<Srq<P>>,
    send_cq: Cq<P>,
    recv_cq: Option<Cq<P>>,
    channel: Option<CompChannel>,
    /// Armed state of (send, recv) CQ.
    armed: [bool; 2],
    mr: Mr<P>,
    /// `--use-null-mr`: the null MR's lkey, used instead of the MR's keys.
    null_lkey: Option<u32>,
    pd: Arc<Pd<P>>,
    layout: BufLayout,
    max_inline: u32,
    /// The port of each QP.
    ports: Vec<u8>,
    /// `-c XRC`, `-c DC` split: the lane layout (the QPs, SRQ and MR keep the domain alive).
    xrc: Option<XrcPlan>,
    /// `-c DC`: each QP's DCI stream rotation (inactive for DCTs and without active streams).
    dci_streams: Vec<super::dc::DciStreamCycle>,
}

/// perftest's `ctx_xrc_qp_create`: a target asks for the receive side (rx_depth, 1 SGE) and
/// the inline size, an initiator for the send side (tx_depth, 1 SGE, inline size).
fn xrc_caps(plan: &XrcPlan, q: usize, s: &VerbsSetup) -> (QpCaps, QpType) {
    let t = plan.qp_type(q);
    let caps = if t == QpType::XrcTgt {
        QpCaps { max_send_wr: 0, max_recv_wr: s.rx_depth.max(1), max_send_sge: 0, max_recv_sge: 1, max_inline_data: s.inline_size }
    } else {
        QpCaps { max_send_wr: s.tx_depth.max(1), max_recv_wr: 0, max_send_sge: 1, max_recv_sge: 0, max_inline_data: s.inline_size }
    };
    (caps, t)
}

/// `--use-null-mr` on a device without a null MR (libibverbs: `ibv_alloc_null_mr` fails with
/// EOPNOTSUPP, perftest prints `Couldn't create null MR`): one line, what to do.
pub fn null_mr_missing(ibdev: &str, provider: &str) -> String {
    format!(
        " Couldn't create null MR: --use-null-mr needs a device with a null memory key (mlx5's dump-fill mkey); \
         {ibdev} ({provider}) has none (ibv_alloc_null_mr: Operation not supported); run without --use-null-mr"
    )
}

fn verr(what: &str, e: uverbs::Error) -> EngineError {
    EngineError::Verbs(format!("{what}: {e}"))
}

/// The completion channel, the send CQ and the receive CQ, in creation order (a tuple, so the
/// bindings drop in reverse: the CQs before the channel they report to).
type Cqs<P> = (Option<CompChannel>, Cq<P>, Option<Cq<P>>);

/// `-c XRC`'s domain and the SRQ (XRC or plain), in creation order.
type SrqParts<P> = (Option<Arc<Xrcd<P>>>, Option<Srq<P>>);

/// The caps of a QP outside XRC.
fn qp_caps(s: &VerbsSetup) -> QpCaps {
    match s.crypto {
        // perftest's mlx5dv_create_qp with MKEY_CONFIGURE: room for a UMR per
        // request, AES_XTS_INLINE.
        Some(_) => QpCaps {
            max_send_wr: s.tx_depth.max(1).saturating_mul(2),
            max_recv_wr: if s.use_srq { 0 } else { s.rx_depth.max(1) },
            max_send_sge: 1,
            max_recv_sge: 1,
            max_inline_data: super::crypto::AES_XTS_INLINE,
        },
        None => QpCaps {
            max_send_wr: s.tx_depth.max(1),
            max_recv_wr: if s.use_srq { 0 } else { s.rx_depth.max(1) },
            max_send_sge: 1,
            max_recv_sge: 1,
            max_inline_data: s.inline_size,
        },
    }
}

/// The port of each QP: `-O` puts the second half on the second port.
fn qp_ports(s: &VerbsSetup, lanes: Option<XrcPlan>) -> Vec<u8> {
    (0..s.num_qps)
        .map(|q| match s.port2 {
            // -c XRC / DC split: per half in a split run (perftest's halved num_of_qps).
            Some(p2) => super::dualport::port_of_qp(q, lanes.map_or(s.num_qps, |x| x.lanes()), [s.port, p2]),
            None => s.port,
        })
        .collect()
}

/// `-c DC`: each DCI's stream rotation (inactive for the other QPs).
fn dci_streams<P: Provider>(s: &VerbsSetup, qps: &[Qp<P>]) -> Vec<super::dc::DciStreamCycle> {
    qps.iter()
        .map(|qp| {
            let log = match &s.dc {
                Some(d) if qp.qp_type() == QpType::Dci => d.log_active_dci_streams,
                _ => 0,
            };
            super::dc::DciStreamCycle::new(log)
        })
        .collect()
}

/// 6.29's `Couldn't allocate MR with error=N`, in one line with what to try.
fn device_mem_refusal(e: &uverbs::Error, dmabuf: bool) -> String {
    let errno = e.errno.unwrap_or(0);
    let why = match (dmabuf, errno) {
        (true, libc::EOPNOTSUPP) | (true, libc::EPROTONOSUPPORT) => {
            "the device does not take dma-buf MRs (OFED stack does not support DMA-BUF); leave out --use_cuda_dmabuf/--use_rocm_dmabuf to register the device pointer (peer memory)".to_string()
        }
        (true, _) => format!("dma-buf registration failed: {e}"),
        (false, libc::EFAULT) | (false, libc::EINVAL) => format!(
            "the kernel could not resolve the GPU pointer ({e}): is nvidia-peermem (or amdgpu's peer memory) loaded? Or try --use_cuda_dmabuf/--use_rocm_dmabuf"
        ),
        (false, _) => format!("{e}"),
    };
    format!("Couldn't allocate MR with error={errno}: {why}")
}

/// What the buffer holds before the test: a `--payload_file_path` pattern, pseudo-random words,
/// or zeros (written only into a mapped file: fresh anonymous memory is already zero).
fn fill_buffer<P: Provider>(mr: &Mr<P>, s: &VerbsSetup, total: usize) -> Result<(), EngineError> {
    if let Fill::Pattern(pat) = &s.fill {
        let mut chunk = vec![0u8; 4096.min(total)];
        let mut off = 0;
        while off < total {
            let n = chunk.len().min(total - off);
            pattern_chunk(pat, off, &mut chunk[..n]);
            mr.write_at(off, &chunk[..n]).map_err(|e| verr("fill buffer", e))?;
            off += n;
        }
    } else if s.fill == Fill::Zero && s.mmap.is_some() {
        // Anonymous memory starts zeroed; a mapped file does not.
        mr.fill(0);
    }
    if s.fill == Fill::Random {
        let mut x: u32 = 0x9e37_79b9 ^ (bench_core::clock::now() as u32);
        let mut chunk = vec![0u8; 4096.min(total)];
        let mut off = 0;
        while off < total {
            for w in chunk.chunks_mut(4) {
                x ^= x << 13;
                x ^= x >> 17;
                x ^= x << 5;
                let b = x.to_ne_bytes();
                w.copy_from_slice(&b[..w.len()]);
            }
            let n = chunk.len().min(total - off);
            mr.write_at(off, &chunk[..n]).map_err(|e| verr("fill buffer", e))?;
            off += n;
        }
    }
    Ok(())
}

impl<P: Provider> VerbsEndpoint<P> {
    /// Create PD, MR, CQs, [SRQ], QPs and move the QPs to INIT. `ext`: the provider's
    /// extensions, which `-c DC`, `-c XRC` and `--aes_xts` need ([`super::dv`]). The steps
    /// follow perftest's ctx_init; on an error the resources made so far go in reverse order.
    pub fn create(ctx: &Arc<Context<P>>, s: &VerbsSetup, ext: super::dv::Ext<P>) -> Result<Self, EngineError> {
        let pd = Pd::new(ctx).map_err(|e| verr("allocate PD", e))?;
        // perftest's ctx_init: the DEKs and crypto mkeys come right after the PD.
        let crypto = match &s.crypto {
            Some(c) => Some(
                super::dv::new_crypto(ext, &pd, c, s.num_qps, super::crypto::KEY_APP_TIMEOUT).map_err(EngineError::Verbs)?,
            ),
            None => None,
        };
        let (mr, null_lkey) = Self::create_buffer(ctx, &pd, s)?;
        let (channel, send_cq, recv_cq) = Self::create_cqs(ctx, s)?;
        let (xrcd, srq) = Self::create_srq(ctx, ext, &pd, s, &send_cq, recv_cq.as_ref())?;
        // -c XRC, or -c DC split into DCIs and DCTs: the loops drive the plan's lanes.
        let lanes = s.xrc.or_else(|| s.dc.as_ref().and_then(|d| d.lanes));
        let ports = qp_ports(s, lanes);
        let cqs = (&send_cq, recv_cq.as_ref().unwrap_or(&send_cq));
        let (qps, max_inline) = Self::create_qps(ext, &pd, s, &ports, cqs, srq.as_ref(), xrcd.as_ref())?;
        let n = qps.len();
        let dci_streams = dci_streams(s, &qps);
        let encrypt = crypto.as_ref().is_some_and(|c| c.encrypted_posts());
        Ok(VerbsEndpoint {
            qps,
            crypto,
            encrypt,
            ahs: (0..n).map(|_| None).collect(),
            ud_dest: vec![None; n],
            srq,
            send_cq,
            recv_cq,
            channel,
            armed: [false; 2],
            mr,
            null_lkey,
            pd,
            layout: s.layout,
            max_inline,
            ports,
            xrc: lanes,
            dci_streams,
        })
    }

    /// The buffer and its MR (a `--mmap` file or fresh memory), the null MR's lkey with
    /// `--use-null-mr`, and the buffer's initial contents.
    fn create_buffer(ctx: &Arc<Context<P>>, pd: &Arc<Pd<P>>, s: &VerbsSetup) -> Result<(Mr<P>, Option<u32>), EngineError> {
        let total = usize::try_from(s.layout.total()).map_err(|_| EngineError::Verbs("buffer too large".into()))?;
        let mut mr_access = s.access | AccessFlags::LOCAL_WRITE;
        if s.odp {
            mr_access |= AccessFlags::ON_DEMAND;
        }
        let mr = match (&s.device_mem, &s.mmap) {
            (Some(d), _) => Self::register_device_mem(pd, d, total, mr_access)?,
            (None, Some((path, offset))) => Mr::register_file(pd, path, *offset, total, mr_access)
                .map_err(|e| verr(&format!("Couldn't register the --mmap buffer of {total} bytes"), e))?,
            (None, None) => Mr::alloc(pd, total, mr_access, s.hugepages)
                .map_err(|e| verr(&format!("Couldn't allocate MR of {total} bytes"), e))?,
        };
        // perftest (6.13+) allocates the null MR right after registering the buffer.
        let null_lkey = if s.null_mr {
            Some(ctx.provider().null_mr_lkey().ok_or_else(|| EngineError::Verbs(null_mr_missing(&ctx.device().ibdev, P::NAME)))?)
        } else {
            None
        };
        if s.device_mem.is_none() {
            fill_buffer(&mr, s, total)?;
        }
        Ok((mr, null_lkey))
    }

    /// `--use_cuda`: the device pointer through REG_MR (peer memory: the GPU driver's peer-memory
    /// client resolves it in the kernel), or with `--use_cuda_dmabuf` the exported dma-buf through
    /// the dma-buf MR method. 6.29's line on failure, and one line for a device without dma-buf MRs.
    fn register_device_mem(pd: &Arc<Pd<P>>, d: &DeviceMem, total: usize, access: AccessFlags) -> Result<Mr<P>, EngineError> {
        if d.len < total {
            return Err(EngineError::Verbs(format!("GPU buffer of {} bytes is smaller than the {total} bytes the test needs", d.len)));
        }
        let r = match d.dmabuf {
            Some((fd, offset)) => {
                // SAFETY: the tool keeps the exported fd open while the endpoint lives (DeviceMem's
                // contract); it is only borrowed for the registration call.
                let fd = unsafe { std::os::fd::BorrowedFd::borrow_raw(fd) };
                Mr::register_dmabuf(pd, fd, offset, total, d.addr, access)
            }
            // SAFETY: the device allocation outlives this MR (the tool drops the endpoint first,
            // DeviceMem's contract); the CPU never dereferences it: no fill, and the loops that
            // poll the buffer (write_lat) are refused with CUDA memory.
            None => unsafe { Mr::register_raw(pd, d.addr, total, access) },
        };
        r.map_err(|e| EngineError::Verbs(device_mem_refusal(&e, d.dmabuf.is_some())))
    }

    /// The completion channel (`-e`), the send CQ and the separate receive CQ where there is one.
    fn create_cqs(ctx: &Arc<Context<P>>, s: &VerbsSetup) -> Result<Cqs<P>, EngineError> {
        let channel = if s.use_event { Some(CompChannel::new(ctx).map_err(|e| verr("create completion channel", e))?) } else { None };
        let send_cq = Cq::new(ctx, s.send_cq_depth.max(1), channel.as_ref(), s.comp_vector)
            .map_err(|e| verr("Couldn't create send CQ", e))?;
        let recv_cq = if s.recv_cq {
            Some(
                Cq::new(ctx, s.recv_cq_depth.max(1), channel.as_ref(), s.comp_vector)
                    .map_err(|e| verr("Couldn't create receive CQ", e))?,
            )
        } else {
            None
        };
        Ok((channel, send_cq, recv_cq))
    }

    /// The XRC domain and XRC SRQ (`-c XRC`), or the plain SRQ (`--use-srq`, DC with DCTs).
    fn create_srq(
        ctx: &Arc<Context<P>>,
        ext: super::dv::Ext<P>,
        pd: &Arc<Pd<P>>,
        s: &VerbsSetup,
        send_cq: &Cq<P>,
        recv_cq: Option<&Cq<P>>,
    ) -> Result<SrqParts<P>, EngineError> {
        // -c XRC (perftest's ctx_xrcd_create / ctx_xrc_srq_create): the domain, then the XRC
        // SRQ, completing into the receive CQ where there is one (SEND) and else the send CQ.
        let xrcd = match s.xrc {
            Some(_) => Some(Xrcd::open(ctx).map_err(|e| verr("Error opening XRC domain", e))?),
            None => None,
        };
        let srq = if let Some(x) = &xrcd {
            let cq = recv_cq.unwrap_or(send_cq);
            Some(super::dv::new_xrc_srq(ext, pd, x, cq, s.rx_depth.max(1), 1).map_err(|e| verr("Couldn't open XRC SRQ", e))?)
        } else if s.use_srq && s.dc.as_ref().is_none_or(|d| d.has_dct()) {
            // DC: the SRQ serves the DCTs only (perftest creates none on a DCI-only side).
            Some(Srq::new(pd, s.rx_depth.max(1), 1, 0).map_err(|e| verr("Couldn't create SRQ", e))?)
        } else {
            None
        };
        Ok((xrcd, srq))
    }

    /// The QPs on their ports, moved to INIT, and the inline size they all allow. `cqs`: the
    /// send CQ and the CQ the receives complete into.
    fn create_qps(
        ext: super::dv::Ext<P>,
        pd: &Arc<Pd<P>>,
        s: &VerbsSetup,
        ports: &[u8],
        cqs: (&Cq<P>, &Cq<P>),
        srq: Option<&Srq<P>>,
        xrcd: Option<&Arc<Xrcd<P>>>,
    ) -> Result<(Vec<Qp<P>>, u32), EngineError> {
        let (send_cq, recv_cq) = cqs;
        let mut qps = Vec::with_capacity(s.num_qps);
        let mut max_inline = s.inline_size;
        for (q, &port) in ports.iter().enumerate() {
            let (caps, qp_type) = match s.xrc {
                Some(plan) => xrc_caps(&plan, q, s),
                None => (qp_caps(s), s.qp_type),
            };
            let init = QpInit {
                qp_type,
                send_cq,
                recv_cq,
                // XRC: the initiator names the peer's SRQ on each send; no QP has one.
                srq: if s.xrc.is_some() { None } else { srq },
                caps,
                sq_sig_all: false,
            };
            let mut qp = match &s.dc {
                Some(dc) => super::dc::create_qp(ext, pd, dc, q, &init)?,
                None => match (xrcd, qp_type) {
                    (Some(x), QpType::XrcTgt) => Qp::new_xrc_tgt(pd, x, &init),
                    _ => Qp::new(pd, &init),
                }
                .map_err(|e| {
                    verr("Failed to create QP (Requested QP size might be too big. Try reducing TX depth and/or inline size)", e)
                })?,
            };
            if !matches!(qp.qp_type(), QpType::Dct | QpType::XrcTgt) {
                // A DCT or an XRC target sends nothing: its (empty) send caps do not limit the
                // inline size.
                max_inline = max_inline.min(qp.caps().max_inline_data);
            }
            qp.set_qkey(DEFAULT_QKEY);
            qp.to_init(port, s.pkey_index, s.access).map_err(|e| verr("Failed to modify QP to INIT", e))?;
            qps.push(qp);
        }
        Ok((qps, max_inline))
    }

    /// `-c XRC`: the lane layout.
    pub fn xrc_plan(&self) -> Option<XrcPlan> {
        self.xrc
    }

    /// Local QP that lane `l` of the loops sends on (the QP itself without XRC).
    fn send_qp(&self, l: usize) -> usize {
        self.xrc.map_or(l, |x| x.send_qp(l))
    }

    /// The port QP `q` was created on.
    pub fn qp_port(&self, q: usize) -> u8 {
        self.ports[q]
    }
    pub fn qpn(&self, q: usize) -> u32 {
        self.qps[q].qpn()
    }
    /// QP `q` itself (rdma_cm `-R` moves it INIT/RTR/RTS with the kernel's attributes).
    pub fn qp_mut(&mut self, q: usize) -> &mut Qp<P> {
        &mut self.qps[q]
    }
    /// Address of the registered buffer (perftest prints it for `--mmap`).
    pub fn buf_addr(&self) -> u64 {
        self.mr.addr()
    }
    /// The lkey the SGEs use: the MR's, or the null MR's with `--use-null-mr`.
    pub fn lkey(&self) -> u32 {
        self.null_lkey.unwrap_or_else(|| self.mr.lkey())
    }
    /// The rkey this side advertises: the MR's, or (as perftest) the null MR's lkey.
    pub fn rkey(&self) -> u32 {
        self.null_lkey.unwrap_or_else(|| self.mr.rkey())
    }

    /// QUERY_QP of QP `q`'s address vector: the static rate the QP runs at (perftest's HW
    /// rate limiter check). None when the query fails.
    pub fn qp_static_rate(&self, q: usize) -> Option<u8> {
        let qp = self.qps.get(q)?;
        qp.query(uverbs::objects::QpAttrMask::AV).ok().map(|(a, _)| a.ah_attr.static_rate)
    }
    /// Address of QP `q`'s send area.
    pub fn send_addr(&self, q: usize) -> u64 {
        self.mr.addr() + self.layout.send_off(q)
    }
    /// The VAddr QP `q` advertises (its receive/target area).
    pub fn recv_addr(&self, q: usize) -> u64 {
        self.mr.addr() + self.layout.recv_off(q)
    }
    /// Where receives of QP `q` are posted (with XRC: of lane `q`, [`XrcPlan::recv_post_off`]).
    pub fn recv_post_addr(&self, q: usize) -> u64 {
        match self.xrc {
            Some(x) => self.mr.addr() + x.recv_post_off(q, self.layout.area),
            None => self.mr.addr() + self.layout.recv_post_off(q),
        }
    }
    /// Inline size the QPs actually accept (≤ what was asked).
    pub fn max_inline(&self) -> u32 {
        self.max_inline
    }
    pub fn srqn(&self) -> Option<u32> {
        self.srq.as_ref().map(|s| s.srqn())
    }
    /// DC: QP `q` (a DCI) sends to DCT `dctn` from now on (perftest re-exchanges the QP
    /// information after connecting, because a DCT gets its number only at RTR).
    pub fn set_dc_target(&mut self, q: usize, dctn: u32) {
        if let Some(Some(d)) = self.ud_dest.get_mut(q) {
            if self.qps[q].qp_type() == QpType::Dci {
                d.remote_qpn = dctn;
            }
        }
    }

    /// UD destination of QP `q` (after [`Self::connect`]).
    pub fn ud_dest(&self, q: usize) -> Option<UdDest> {
        self.ud_dest[q]
    }

    /// UD: QP `q` sends to `remote_qpn`/`remote_qkey` through a new AH for `attr` (rdma_cm
    /// gives all three; `-g` uses the group's address and QPN 0xFFFFFF).
    pub fn set_ud_peer(&mut self, q: usize, attr: &AhAttr, remote_qpn: u32, remote_qkey: u32) -> Result<(), EngineError> {
        if q >= self.qps.len() {
            return Err(EngineError::Verbs(format!("no QP #{q}")));
        }
        let a = Ah::new(&self.pd, attr).map_err(|e| verr("Failed to create AH for UD", e))?;
        self.ud_dest[q] = Some(UdDest { ah: a.number(), remote_qpn, remote_qkey });
        self.ahs[q] = Some(a);
        Ok(())
    }

    /// INIT → RTR [→ RTS] for QP `q`; UD and SRD: also the address handle towards the peer.
    pub fn connect(&mut self, q: usize, c: &ConnectParams) -> Result<(), EngineError> {
        let port = self.ports[q];
        let mut ah = match c.sgid_index {
            Some(ix) => RtrParams::roce_path(port, c.remote_gid, ix, 0xff),
            None => RtrParams::ib_path(port, c.remote_lid, c.sl),
        };
        ah.dlid = c.remote_lid;
        ah.sl = c.sl;
        ah.traffic_class = c.traffic_class;
        ah.flow_label = c.flow_label;
        ah.static_rate = c.static_rate;
        let qp_type = self.qps[q].qp_type();
        let rtr = RtrParams {
            path_mtu: c.path_mtu,
            dest_qpn: c.remote_qpn,
            rq_psn: c.remote_psn,
            max_dest_rd_atomic: c.max_dest_rd_atomic.max(1),
            min_rnr_timer: 12,
            ah,
        };
        let qpn = self.qps[q].qpn();
        self.qps[q].to_rtr(&rtr).map_err(|e| verr(&format!("Failed to modify QP {qpn:#x} to RTR"), e))?;
        if qp_type == QpType::Dct {
            // A DCT only receives: RTR is its last state.
            return Ok(());
        }
        if c.to_rts || qp_type.is_datagram() {
            let rts = RtsParams {
                sq_psn: c.own_psn,
                timeout: c.timeout,
                retry_cnt: c.retry_cnt,
                rnr_retry: c.rnr_retry,
                max_rd_atomic: c.max_rd_atomic.max(1),
            };
            self.qps[q].to_rts(&rts).map_err(|e| verr("Failed to modify QP to RTS", e))?;
        }
        if qp_type.is_datagram() || qp_type == QpType::Dci {
            // DC: each send names the remote DCT (its number is the peer's QPN; see
            // `set_dc_target` for the refreshed value after the peer's RTR).
            let attr = AhAttr { port_num: port, ..ah };
            let a = Ah::new(&self.pd, &attr).map_err(|e| verr("Failed to create AH", e))?;
            // SRD is addressed as UD: an AH, the remote QPN and perftest's QKEY on every send.
            let qkey = if qp_type.is_datagram() { DEFAULT_QKEY } else { 0 };
            self.ud_dest[q] = Some(UdDest { ah: a.number(), remote_qpn: c.remote_qpn, remote_qkey: qkey });
            self.ahs[q] = Some(a);
        }
        Ok(())
    }

    #[inline(always)]
    fn check_sges(&self, sgl: &[Sge]) -> Result<(), EngineError> {
        let base = self.mr.addr();
        let end = base + self.mr.len() as u64;
        for s in sgl {
            // With --use-null-mr the SGEs carry the null MR's lkey but still point into the
            // buffer (as perftest's): the memory stays valid whatever the device does with it.
            let ok = s.lkey == self.lkey()
                && s.addr >= base
                && s.addr.checked_add(u64::from(s.length)).is_some_and(|e| e <= end);
            if !ok {
                return Err(EngineError::Verbs(format!(
                    "refusing to post an SGE outside the test buffer (addr {:#x} len {} lkey {:#x})",
                    s.addr, s.length, s.lkey
                )));
            }
        }
        Ok(())
    }

    /// `--aes_xts` on RC SEND/WRITE/READ (perftest's `_new_post_send` with `enc`): one UMR that
    /// configures QP `qi`'s crypto mkey over the whole buffer with the next DEK, then the
    /// requests, each signaled, reading through the mkey from its address 0. The SGEs the loop
    /// built were checked by the caller; the mkey maps exactly this endpoint's MR.
    #[inline(never)]
    fn post_send_encrypted(&mut self, qi: usize, wrs: &[SendWr<'_>]) -> Result<(), EngineError> {
        let map = Sge {
            addr: self.mr.addr(),
            length: u32::try_from(self.layout.total())
                .map_err(|_| EngineError::Verbs("--aes_xts: the buffer is larger than one crypto mkey maps (4 GiB)".into()))?,
            lkey: self.mr.lkey(),
        };
        let crypto = self.crypto.as_mut().ok_or_else(|| EngineError::Verbs("--aes_xts: no crypto state".into()))?;
        let q = self.qps.get_mut(qi).ok_or_else(|| EngineError::Verbs(format!("no QP #{qi}")))?;
        let access = AccessFlags::REMOTE_READ | AccessFlags::REMOTE_WRITE | AccessFlags::LOCAL_WRITE;
        // SAFETY: `map` is exactly this endpoint's MR under its lkey; the MR is dropped after the
        // QPs and the crypto mkeys (field order), so what the mkey maps stays registered.
        let lkey = unsafe { crypto.configure(qi, q, &map, access) }?;
        let sge = |w: &SendWr<'_>| [Sge { addr: 0, length: w.sgl.first().map_or(0, |g| g.length), lkey }];
        // perftest signals every encrypted request; the ones the loop did not ask to be
        // signaled carry FORCED_SIGNAL in their wr_id and poll_send drops their completions,
        // so the loops count as without --aes_xts.
        fn through<'b>(w: &SendWr<'_>, g: &'b [Sge]) -> SendWr<'b> {
            let forced = !w.flags.contains(SendFlags::SIGNALED);
            SendWr {
                wr_id: if forced { w.wr_id | FORCED_SIGNAL } else { w.wr_id },
                opcode: w.opcode,
                flags: w.flags | SendFlags::SIGNALED,
                sgl: g,
                imm_data: w.imm_data,
                remote: w.remote,
                compare_add: w.compare_add,
                swap: w.swap,
                ud: w.ud,
                remote_srqn: w.remote_srqn,
                dci_stream: w.dci_stream,
            }
        }
        if let [w] = wrs {
            let g = sge(w);
            let one = [through(w, &g)];
            // SAFETY: the SGE names the crypto mkey at offsets 0..size, inside the range the
            // UMR just mapped (size <= the buffer); that range is our MR, which outlives the QPs.
            return unsafe { q.post_send(&one) }.map_err(EngineError::from);
        }
        let sges: Vec<[Sge; 1]> = wrs.iter().map(sge).collect();
        let list: Vec<SendWr<'_>> = wrs.iter().zip(&sges).map(|(w, g)| through(w, &g[..])).collect();
        // SAFETY: as for one request above.
        unsafe { q.post_send(&list) }.map_err(EngineError::from)
    }

    /// `--aes_xts`: drop the completions of requests only perftest's encrypted path signals;
    /// an error completion stays (with its wr_id restored).
    #[inline(never)]
    fn drop_forced(out: &mut [WorkCompletion], n: usize) -> usize {
        let mut k = 0;
        for i in 0..n {
            let mut wc = out[i];
            if wc.wr_id & FORCED_SIGNAL != 0 {
                if wc.status == uverbs::wr::WcStatus::Success {
                    continue;
                }
                wc.wr_id &= !FORCED_SIGNAL;
            }
            out[k] = wc;
            k += 1;
        }
        k
    }

    /// [`Endpoint::post_send`] with encryption or DCI streams (SGEs already checked).
    #[inline(never)]
    fn post_send_special(&mut self, qi: usize, wrs: &[SendWr<'_>]) -> Result<(), EngineError> {
        if self.encrypt {
            return self.post_send_encrypted(qi, wrs);
        }
        let q = self.qps.get_mut(qi).ok_or_else(|| EngineError::Verbs(format!("no QP #{qi}")))?;
        let streamed: Vec<SendWr<'_>>;
        let wrs = match self.dci_streams.get_mut(qi).filter(|c| c.active()) {
            // -c DC with DCI streams: each request on the next stream, as perftest's post_send.
            Some(c) => {
                streamed = super::dc::on_streams(c, wrs);
                &streamed[..]
            }
            None => wrs,
        };
        // SAFETY: as in post_send: the caller checked every SGE inside our MR, which outlives
        // the QPs.
        unsafe { q.post_send(wrs) }.map_err(EngineError::from)
    }

    fn area_ptr(&self, off: u64) -> Option<*mut u8> {
        if off < self.mr.len() as u64 {
            // In bounds of the mapping: the offset is below the MR length.
            Some(self.mr.as_mut_ptr().wrapping_add(off as usize))
        } else {
            None
        }
    }
}

impl<P: Provider> Endpoint for VerbsEndpoint<P> {
    fn num_qps(&self) -> usize {
        self.xrc.map_or(self.qps.len(), |x| x.lanes())
    }

    /// Inlined into the loops (the common case: checked SGEs, one QP, no DCI streams, no
    /// encryption); the other cases stay out of line.
    #[inline(always)]
    fn post_send(&mut self, qp: usize, wrs: &[SendWr<'_>]) -> Result<(), EngineError> {
        for w in wrs {
            self.check_sges(w.sgl)?;
        }
        let qi = self.send_qp(qp);
        if self.encrypt || self.dci_streams.get(qi).is_some_and(|c| c.active()) {
            return self.post_send_special(qi, wrs);
        }
        let q = self.qps.get_mut(qi).ok_or_else(|| EngineError::Verbs(format!("no QP #{qp}")))?;
        // SAFETY: every SGE was just checked to lie inside `self.mr` under its lkey; the MR is
        // owned by this endpoint and is dropped after the QPs (field order), so the memory stays
        // registered and mapped until the device is done with it.
        unsafe { q.post_send(wrs) }.map_err(EngineError::from)
    }

    #[inline]
    fn post_recv(&mut self, qp: usize, wrs: &[RecvWr<'_>]) -> Result<(), EngineError> {
        for w in wrs {
            self.check_sges(w.sgl)?;
        }
        if let Some(srq) = self.srq.as_mut() {
            // SAFETY: as in post_send: SGEs checked inside our MR, which outlives the SRQ.
            return unsafe { srq.post_recv(wrs) }.map_err(EngineError::from);
        }
        let q = self.qps.get_mut(qp).ok_or_else(|| EngineError::Verbs(format!("no QP #{qp}")))?;
        // SAFETY: as in post_send.
        unsafe { q.post_recv(wrs) }.map_err(EngineError::from)
    }

    #[inline(always)]
    fn poll_send(&mut self, out: &mut [WorkCompletion]) -> Result<usize, EngineError> {
        let n = self.send_cq.poll(out).map_err(|e| verr("poll CQ failed", e))?;
        if self.encrypt {
            return Ok(Self::drop_forced(out, n));
        }
        Ok(n)
    }

    #[inline]
    fn poll_recv(&mut self, out: &mut [WorkCompletion]) -> Result<usize, EngineError> {
        match self.recv_cq.as_mut() {
            Some(cq) => cq.poll(out).map_err(|e| verr("poll CQ failed", e)),
            None => self.send_cq.poll(out).map_err(|e| verr("poll CQ failed", e)),
        }
    }

    fn wait_cq_event(&mut self, which: CqKind, timeout: Duration) -> Result<bool, EngineError> {
        let Some(ch) = self.channel.as_ref() else {
            return Ok(true);
        };
        let idx = if which == CqKind::Recv && self.recv_cq.is_some() { 1 } else { 0 };
        if !self.armed[idx] {
            // Arm, then let the caller poll once more: a completion may have arrived between
            // its empty poll and the arming.
            let cq = if idx == 1 { self.recv_cq.as_mut().unwrap_or(&mut self.send_cq) } else { &mut self.send_cq };
            cq.arm(false).map_err(|e| verr("Couldn't request CQ notification", e))?;
            self.armed[idx] = true;
            return Ok(true);
        }
        match ch.wait(Some(timeout)).map_err(|e| verr("Failed to get cq_event", e))? {
            None => Ok(false),
            Some(handle) => {
                if handle == self.send_cq.user_handle() {
                    self.send_cq.event_received();
                    self.armed[0] = false;
                } else if let Some(r) = self.recv_cq.as_mut().filter(|c| c.user_handle() == handle) {
                    r.event_received();
                    self.armed[1] = false;
                }
                Ok(true)
            }
        }
    }

    fn recv_area_byte(&self, qp: usize, offset: usize) -> u8 {
        let q = self.xrc.map_or(qp, |x| x.recv_qp(qp));
        match self.area_ptr(self.layout.recv_off(q) + offset as u64) {
            // SAFETY: in bounds of the live mapping (checked by area_ptr); a volatile read because
            // the device writes this memory behind the compiler's back.
            Some(p) => unsafe { std::ptr::read_volatile(p) },
            None => 0,
        }
    }

    fn set_send_area_byte(&mut self, qp: usize, offset: usize, value: u8) {
        if let Some(p) = self.area_ptr(self.layout.send_off(self.send_qp(qp)) + offset as u64) {
            // SAFETY: in bounds of the live mapping; volatile so the store is not elided before
            // the device reads it at post time.
            unsafe { std::ptr::write_volatile(p, value) }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn aes_xts_drops_only_the_completions_perftest_forces() {
        use uverbs::wr::WcStatus;
        let wc = |wr_id: u64, status: WcStatus| WorkCompletion { wr_id, status, ..Default::default() };
        let mut out = [
            wc(0x1_0000_0005 | FORCED_SIGNAL, WcStatus::Success),
            wc(0x1_0000_0063, WcStatus::Success),
            wc(0x2_0000_0007 | FORCED_SIGNAL, WcStatus::RemAccessErr),
            wc(0x2_0000_0008 | FORCED_SIGNAL, WcStatus::Success),
            wc(9, WcStatus::Success),
        ];
        let n = VerbsEndpoint::<providers::rxe::Rxe>::drop_forced(&mut out, 4);
        assert_eq!(n, 2);
        assert_eq!(out[0], wc(0x1_0000_0063, WcStatus::Success));
        // an error completion stays, with the loop's own wr_id
        assert_eq!(out[1], wc(0x2_0000_0007, WcStatus::RemAccessErr));
        assert_eq!(crate::engine::wr_id_qp(out[1].wr_id), 2);
    }

    #[test]
    fn layout_matches_perftest() {
        let l = BufLayout::new(2, 65536, 4096, 64, false);
        assert_eq!(l.total(), 65536 * 4);
        assert_eq!(l.send_off(1), 65536);
        assert_eq!(l.recv_off(0), 2 * 65536);
        assert_eq!(l.recv_off(1), 3 * 65536);
        let s = BufLayout::new(1, 2, 4096, 64, false);
        assert_eq!(s.total(), 8192);
        assert_eq!(s.recv_off(0), 4096);
    }

    #[test]
    fn ud_receives_put_the_payload_on_a_cache_line() {
        let l = BufLayout::new(1, 1024, 4096, 64, true);
        assert_eq!(l.total(), 8192 + 64);
        assert_eq!(l.recv_post_off(0) + UD_GRH, l.recv_off(0) + 64);
        // the last receive (GRH + payload) stays inside the allocation
        assert!(l.recv_post_off(0) + UD_GRH + 4096 <= l.total());
    }

    #[test]
    fn xrc_qps_ask_for_their_side_only() {
        let s = VerbsSetup {
            qp_type: QpType::Rc,
            num_qps: 2,
            tx_depth: 128,
            rx_depth: 512,
            inline_size: 220,
            use_srq: true,
            use_event: false,
            comp_vector: 0,
            recv_cq: true,
            send_cq_depth: 256,
            recv_cq_depth: 1024,
            layout: BufLayout::new(2, 2, 4096, 64, false),
            access: AccessFlags::REMOTE_WRITE,
            port: 1,
            port2: None,
            pkey_index: 0,
            fill: Fill::Zero,
            hugepages: false,
            mmap: None,
            odp: false,
            device_mem: None,
            dc: None,
            null_mr: false,
            xrc: Some(XrcPlan::new(2, true, false)),
            crypto: None,
        };
        let plan = s.xrc.unwrap();
        let (ini, t0) = xrc_caps(&plan, 0, &s);
        assert_eq!(t0, QpType::XrcIni);
        assert_eq!((ini.max_send_wr, ini.max_send_sge, ini.max_recv_wr, ini.max_recv_sge, ini.max_inline_data), (128, 1, 0, 0, 220));
        let (tgt, t1) = xrc_caps(&plan, 1, &s);
        assert_eq!(t1, QpType::XrcTgt);
        assert_eq!((tgt.max_send_wr, tgt.max_send_sge, tgt.max_recv_wr, tgt.max_recv_sge, tgt.max_inline_data), (0, 0, 512, 1, 220));
    }
}
