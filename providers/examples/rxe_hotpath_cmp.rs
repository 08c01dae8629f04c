//! Microbenchmark of the rxe post/poll hot path in user space, the twin of
//! `tests/rxe-oracle/hotpath/src/hotpath.c` (the same loops over rdma-core's librxe): post one
//! 64-byte RDMA WRITE WQE (1 SGE, not inline) into the SQ ring and ring the doorbell, play the
//! kernel by consuming the SQ and writing a completion into the CQ ring for each signaled WR, and
//! poll it. No kernel: the context, CQ and QP are made through the `Provider` trait
//! (`new_context`, `finish_cq`, `finish_qp`) with the answers the C side's fake kernel gives
//! librxe (the same ring geometry, mminfo offsets and sizes, qpn, caps), and the rings are the
//! provider's real `Mapping`s, mmap'd from a memfd that stands in for the uverbs fd.
//!
//! The one difference from `Rxe::post_send` (what `uverbs::Qp::post_send` forwards to): the
//! doorbell. The provider's is a raw `write()` syscall on the uverbs fd; here the same
//! POST_SEND command is built (`uverbs::cmd::encode_post_send_doorbell`) and handed to
//! `rxe_hotpath_fake_write`, an out-of-line function that checks the fd and the command and
//! returns the byte count, as the C side's shim `write()` does for librxe. Polling goes through
//! `Provider::poll_cq` unchanged.
//!
//! Cases: `bw` (perftest's BW loop: post while fewer than 128 outstanding, one WR in 100
//! signaled, poll batches of 16) and `lat` (every WR signaled, polled with a 1-entry poll right
//! after):
//!
//!   cargo build --release -p providers --example rxe_hotpath_cmp
//!   target/release/examples/rxe_hotpath_cmp bw 2000000
//!   valgrind --tool=callgrind --toggle-collect='*hot_loop_bw*' --callgrind-out-file=cg.out \
//!       target/release/examples/rxe_hotpath_cmp bw 200000
//!
//! `tests/rxe-oracle/hotpath/run.sh` runs both sides and prints the comparison table.

#[path = "common/hotpath.rs"]
mod hotpath;

use std::os::fd::{AsFd, AsRawFd, BorrowedFd};
use std::sync::atomic::{AtomicI32, AtomicU32, Ordering};

use providers::rxe::layout::{
    CREATE_CQ_RESP_LEN, CREATE_QP_RESP_LEN, CREATE_QP_RESP_RQ_MI, CREATE_QP_RESP_SQ_MI, MMINFO_OFFSET, MMINFO_SIZE,
    QB_CONSUMER_INDEX, QB_DATA, QB_INDEX_MASK, QB_LOG2_ELEM_SIZE, QB_PRODUCER_INDEX, RECV_WQE_SIZE, SEND_WQE_SIZE,
    SGE_SIZE, WC_SIZE,
};
use providers::rxe::mem::UserMemory;
use providers::rxe::{Rxe, RxeQp};
use uverbs::cmd::encode_post_send_doorbell;
use uverbs::error::{Error, Result};
use uverbs::provider::{CqCreated, DeviceDesc, PostError, Provider, QpCaps, QpCreated, QpInitAttr, QpState, QpType};
use uverbs::wr::SendWr;

use hotpath::{Peer, MSG_SIZE, TX_DEPTH};

const LKEY: u32 = 0x0001_2355; // what the C side's fake kernel's REG_MR hands out first
const QPN: u32 = 0x11; // its first qpn
const MAX_RECV_WR: u32 = 16;
/// `IB_USER_VERBS_CMD_POST_SEND`.
const CMD_POST_SEND: u32 = 28;
/// `IB_UVERBS_WC_RDMA_WRITE`.
const WC_RDMA_WRITE: u32 = 1;
/// The kernel's `struct rxe_cqe` (72 bytes on x86_64) rounded up to a power of two.
const CQE_ELEM: u32 = 128;

/// The fd the fake doorbell answers (the memfd standing in for the uverbs fd).
static FAKE_FD: AtomicI32 = AtomicI32::new(-1);

/// The stand-in for the doorbell's `write()`: what the C side's shim `write()` does on the
/// uverbs fd for a POST_SEND command, return the byte count (no system call on either side).
/// Out of line and exported (not specialised for its callers), like the shim's `write`.
///
/// # Safety
/// `buf` must be readable for `n` bytes.
#[no_mangle]
#[inline(never)]
pub unsafe extern "C" fn rxe_hotpath_fake_write(fd: libc::c_int, buf: *const u8, n: usize) -> isize {
    if fd == FAKE_FD.load(Ordering::Relaxed) && fd >= 0 {
        // SAFETY: the caller guarantees `buf` is readable for `n >= 8` bytes; read_unaligned
        // needs no alignment.
        if n >= 8 && unsafe { buf.cast::<u32>().read_unaligned() } == CMD_POST_SEND {
            return n as isize;
        }
    }
    -1
}

#[cold]
#[inline(never)]
fn doorbell_failed(what: &str) -> Error {
    Error::msg("ring the rxe doorbell", what.to_string())
}

/// `uverbs::cmd::post_send_doorbell` with its `write()` syscall replaced by
/// [`rxe_hotpath_fake_write`]: the same command bytes, the same result checks.
#[inline(always)]
fn fake_post_send_doorbell(fd: BorrowedFd<'_>, qp_handle: u32) -> Result<()> {
    let mut resp = 0u32;
    let buf = encode_post_send_doorbell(&mut resp as *mut u32 as u64, qp_handle);
    // SAFETY: `buf` is a live 32-byte array.
    let ret = unsafe { rxe_hotpath_fake_write(fd.as_raw_fd(), buf.as_ptr(), buf.len()) };
    if ret != buf.len() as isize {
        return Err(doorbell_failed("write failed"));
    }
    if resp != 0 {
        return Err(doorbell_failed("bad_wr with no work requests"));
    }
    Ok(())
}

/// `Rxe::post_send` (write-doorbell mode) with the fake doorbell.
///
/// # Safety
/// As `Provider::post_send`: every SGE must be readable for its length.
#[inline(always)]
unsafe fn post_send(ctx: &Rxe, qp: &mut RxeQp, wrs: &[SendWr<'_>]) -> Result<(), PostError> {
    let fd = ctx.fd().as_fd();
    // SAFETY: the caller guarantees every SGE is readable for its length.
    let user = unsafe { UserMemory::new() };
    qp.post_send_with(wrs, &user, |h| fake_post_send_doorbell(fd, h))
}

/// The kernel role: consumes the SQ and writes completions into the CQ ring, through its own
/// view of the rings (a second mapping of the memfd).
struct Kern {
    sq: *mut u8,
    cq: *mut u8,
    sq_mask: u32,
    cq_mask: u32,
    cq_log2: u32,
    cq_pi: u32,
    /// `ib_uverbs_wc` bytes 8..48: status 0, opcode RDMA_WRITE, byte_len, qp_num, port_num 1.
    tmpl: [u64; 5],
}

impl Kern {
    /// The kernel completes the signaled WQE at SQ index `idx`: consumer_index = idx + 1
    /// (release), the 48-byte completion as 6 x 8-byte stores (wr_id, then the template) into the
    /// CQ slot at its producer index, producer_index + 1 (release). Identical to kern_complete
    /// in hotpath.c.
    #[inline(always)]
    fn complete(&mut self, idx: u32, wr_id: u64) {
        // SAFETY: `sq` and `cq` are the kernel view of the rings (a live mapping for the whole
        // run, see setup), the header words are 4-aligned u32s that both sides access only
        // atomically, and the CQ slot at the producer index is the kernel's to write: the loops
        // never have more than CQ capacity unpolled completions.
        unsafe {
            (*self.sq.add(QB_CONSUMER_INDEX).cast::<AtomicU32>()).store((idx + 1) & self.sq_mask, Ordering::Release);
            let w = self.cq.add(QB_DATA + ((self.cq_pi as usize) << self.cq_log2)).cast::<u64>();
            std::ptr::write_volatile(w, wr_id);
            for (i, &t) in self.tmpl.iter().enumerate() {
                std::ptr::write_volatile(w.add(1 + i), t);
            }
            self.cq_pi = (self.cq_pi + 1) & self.cq_mask;
            (*self.cq.add(QB_PRODUCER_INDEX).cast::<AtomicU32>()).store(self.cq_pi, Ordering::Release);
        }
    }
}

type Bench = hotpath::Bench<Rxe, Kern>;

impl Peer<Rxe> for Kern {
    #[inline(always)]
    unsafe fn post(ctx: &Rxe, qp: &mut RxeQp, wr: &SendWr<'_>) -> Result<(), PostError> {
        // SAFETY: the caller keeps `Peer::post`'s contract, which is `post_send`'s.
        unsafe { post_send(ctx, qp, std::slice::from_ref(wr)) }
    }
    #[inline(always)]
    fn complete(&mut self, n: u64) {
        self.complete(n as u32, n);
    }
}

/// One ring as the kernel's rxe_queue_init sizes it (and as the C side's shim does): `nelem + 1`
/// slots rounded up to a power of two, elements rounded up to a power of two, the mapping
/// page-aligned. Returns (log2_elem, slots, mapping size).
fn geometry(nelem: u32, elem: u32) -> (u32, u32, usize) {
    let slots = (nelem + 1).next_power_of_two();
    let log2 = elem.next_power_of_two().trailing_zeros();
    let pg = uverbs::objects::page_size() as usize;
    let size = (QB_DATA + ((slots as usize) << log2)).div_ceil(pg) * pg;
    (log2, slots, size)
}

fn put_mminfo(resp: &mut [u8], at: usize, offset: u64, size: usize) {
    resp[at + MMINFO_OFFSET..at + MMINFO_OFFSET + 8].copy_from_slice(&offset.to_ne_bytes());
    resp[at + MMINFO_SIZE..at + MMINFO_SIZE + 4].copy_from_slice(&(size as u32).to_ne_bytes());
}

fn setup() -> Bench {
    let caps_req =
        QpCaps { max_send_wr: TX_DEPTH as u32, max_recv_wr: MAX_RECV_WR, max_send_sge: 1, max_recv_sge: 1, max_inline_data: 0 };
    // The rings as the fake kernel lays them out: CQ at mmap offset 0, then the SQ, then the RQ.
    let (cq_log2, cq_slots, cq_size) = geometry(TX_DEPTH as u32 * 2, CQE_ELEM);
    let payload = (caps_req.max_send_sge * SGE_SIZE as u32).max(caps_req.max_inline_data);
    let (sq_log2, sq_slots, sq_size) = geometry(caps_req.max_send_wr, SEND_WQE_SIZE as u32 + payload);
    let (rq_log2, rq_slots, rq_size) =
        geometry(caps_req.max_recv_wr, RECV_WQE_SIZE as u32 + caps_req.max_recv_sge * SGE_SIZE as u32);
    let (cq_off, sq_off, rq_off) = (0usize, cq_size, cq_size + sq_size);
    let total = rq_off + rq_size;

    let (fd, raw) = hotpath::memfd(c"rxe-hotpath-rings", total);
    // The kernel's view of all rings. Never unmapped: it lives as long as the process.
    // SAFETY: a fresh shared mapping of our own memfd at an address the kernel picks; checked.
    let kv = unsafe {
        libc::mmap(std::ptr::null_mut(), total, libc::PROT_READ | libc::PROT_WRITE, libc::MAP_SHARED, raw, 0)
    };
    assert!(kv != libc::MAP_FAILED, "mmap: {}", std::io::Error::last_os_error());
    let kv = kv.cast::<u8>();
    for (off, log2, slots) in [(cq_off, cq_log2, cq_slots), (sq_off, sq_log2, sq_slots), (rq_off, rq_log2, rq_slots)] {
        // SAFETY: `off` + the 384-byte header lies inside the `total`-byte mapping; the words are
        // 4-aligned (page-aligned ring start); nothing else accesses the rings yet.
        unsafe {
            (*kv.add(off + QB_LOG2_ELEM_SIZE).cast::<AtomicU32>()).store(log2, Ordering::Relaxed);
            (*kv.add(off + QB_INDEX_MASK).cast::<AtomicU32>()).store(slots - 1, Ordering::Release);
        }
    }
    FAKE_FD.store(raw, Ordering::Relaxed);

    let dev = DeviceDesc { ibdev: "rxe0".into(), uverbs: "uverbs0".into(), driver_id: 14, driver_abi: 2 };
    let ctx = Rxe::new_context(fd, &dev, &[], &Default::default()).expect("context");
    let (cprep, entries, _) = ctx.prepare_cq(TX_DEPTH as u32 * 2).expect("prepare_cq");
    assert_eq!(entries, TX_DEPTH as u32 * 2);
    let mut cresp = vec![0u8; CREATE_CQ_RESP_LEN];
    put_mminfo(&mut cresp, 0, cq_off as u64, cq_size);
    let cq = ctx.finish_cq(cprep, &CqCreated { handle: 3, cqe: cq_slots - 1 }, &cresp).expect("finish_cq");
    let attr = QpInitAttr { qp_type: QpType::Rc, caps: caps_req, sq_sig_all: false, uses_srq: false };
    let (qprep, _) = ctx.prepare_qp(&attr).expect("prepare_qp");
    let mut qresp = vec![0u8; CREATE_QP_RESP_LEN];
    put_mminfo(&mut qresp, CREATE_QP_RESP_RQ_MI, rq_off as u64, rq_size);
    put_mminfo(&mut qresp, CREATE_QP_RESP_SQ_MI, sq_off as u64, sq_size);
    // The caps the fake kernel answers (rxe's: capacities from the rings, inline = SGE payload).
    let caps = QpCaps {
        max_send_wr: sq_slots - 1,
        max_recv_wr: rq_slots - 1,
        max_send_sge: payload / SGE_SIZE as u32,
        max_recv_sge: caps_req.max_recv_sge,
        max_inline_data: payload,
    };
    let mut qp = ctx.finish_qp(qprep, &attr, &QpCreated { handle: 4, qpn: QPN, caps }, &qresp).expect("finish_qp");
    for s in [QpState::Init, QpState::Rtr, QpState::Rts] {
        ctx.qp_state_changed(&mut qp, s);
    }

    let mut t = [0u8; WC_SIZE];
    t[12..16].copy_from_slice(&WC_RDMA_WRITE.to_ne_bytes()); // opcode (status 0 at 8)
    t[20..24].copy_from_slice(&MSG_SIZE.to_ne_bytes()); // byte_len
    t[28..32].copy_from_slice(&qp.qpn().to_ne_bytes()); // qp_num
    t[46] = 1; // port_num
    let mut tmpl = [0u64; 5];
    for (i, w) in tmpl.iter_mut().enumerate() {
        *w = u64::from_ne_bytes(t[8 + 8 * i..16 + 8 * i].try_into().unwrap());
    }
    // SAFETY: both offsets lie inside the `total`-byte kernel view.
    let (ksq, kcq) = unsafe { (kv.add(sq_off), kv.add(cq_off)) };
    let kern = Kern { sq: ksq, cq: kcq, sq_mask: sq_slots - 1, cq_mask: cq_slots - 1, cq_log2, cq_pi: 0, tmpl };
    Bench::new(ctx, cq, qp, kern, LKEY)
}

fn main() {
    let (case, bw, iters) = hotpath::args();
    let mut b = setup();
    let el = hotpath::run(&mut b, bw, iters);
    // SAFETY: the kernel view's SQ header word, as in Kern::complete.
    let sq_pi = unsafe { (*b.peer.sq.add(QB_PRODUCER_INDEX).cast::<AtomicU32>()).load(Ordering::Acquire) };
    // SAFETY: as above.
    let sq_log2 = unsafe { (*b.peer.sq.add(QB_LOG2_ELEM_SIZE).cast::<AtomicU32>()).load(Ordering::Relaxed) };
    // FNV-1a of the last WQE posted (its first 224 bytes: rxe_send_wqe + one rxe_sge), skipping
    // the SGE address (208..216, a heap address of this process) and ssn (176..180: librxe
    // stores a per-QP send sequence number there, ours leaves the 0 it found); as in hotpath.c.
    let last = ((sq_pi.wrapping_sub(1) & b.peer.sq_mask) as usize) << sq_log2;
    let mut wqe_hash = 0xcbf2_9ce4_8422_2325u64;
    for i in (0..224).filter(|i| !(176..180).contains(i) && !(208..216).contains(i)) {
        // SAFETY: the slot lies inside the kernel view's SQ ring (index <= mask, 224 <= slot size).
        let byte = unsafe { *b.peer.sq.add(QB_DATA + last + i) };
        wqe_hash = (wqe_hash ^ u64::from(byte)).wrapping_mul(0x100_0000_01b3);
    }
    if std::env::var_os("HOTPATH_DUMP_WQE").is_some() {
        // The WQE bytes, 16 per line, to compare with librxe's.
        for i in 0..224 {
            // SAFETY: as above.
            let byte = unsafe { *b.peer.sq.add(QB_DATA + last + i) };
            eprint!("{byte:02x}{}", if i % 16 == 15 { "\n" } else { " " });
        }
    }
    println!(
        "case={case} iters={iters} ns_per_op={:.2} completions={} sq_pi={sq_pi} last_wr_id={} wqe_hash={wqe_hash:016x} impl=ours sq_slots={} sq_elem={} cq_slots={} cq_elem={} qpn={:#x}",
        el.as_nanos() as f64 / iters as f64,
        b.completions,
        b.last_wr_id,
        b.peer.sq_mask + 1,
        1u32 << sq_log2,
        b.peer.cq_mask + 1,
        1u32 << b.peer.cq_log2,
        b.qp.qpn(),
    );
}
