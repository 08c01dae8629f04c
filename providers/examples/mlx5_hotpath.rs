//! Microbenchmark of the mlx5 post/poll hot path in user space, the twin of
//! `tests/mlx5-oracle/hotpath/src/hotpath.c` (the same loops over rdma-core's libmlx5): post one
//! 64-byte RDMA WRITE WQE (1 SGE, not inline) and ring it (BlueFlame copy of the WQE into the UAR,
//! as on hardware), play the device by writing a requester CQE for each signaled WR, and poll it.
//! No hardware and no kernel: the context, CQ and QP are built from the answers the oracle's fake
//! kernel gave libmlx5 (tests/fixtures/mlx5/crypto/shim_log_multi_block.txt, qpn 0xb1c, cqn 0x407,
//! bfreg 24), and the UAR pages are the real [`MmapUar`] over a memfd (plain memory).
//!
//! Cases: `bw` (perftest's BW loop: post while fewer than 128 outstanding, one WR in 100
//! signaled, poll batches of 16) and `lat` (every WR signaled, polled with a 1-entry poll right
//! after). Prints ns per post; under valgrind it gives instructions per post:
//!
//!   cargo build --release -p providers --example mlx5_hotpath
//!   target/release/examples/mlx5_hotpath bw 2000000
//!   valgrind --tool=callgrind --toggle-collect='*hot_loop_bw*' --callgrind-out-file=cg.out \
//!       target/release/examples/mlx5_hotpath bw 200000
//!   callgrind_annotate cg.out | head -40
//!
//! (The release profile keeps symbols but strips line tables: for per-line figures build with
//! `--profile profiling` and run `target/profiling/examples/mlx5_hotpath` the same way.)
//!
//! `tests/mlx5-oracle/hotpath/run.sh` runs both sides and prints the comparison table.

#[path = "../tests/support/mlx5.rs"]
#[allow(dead_code)]
mod common;
#[path = "common/hotpath.rs"]
mod hotpath;

use providers::mlx5::abi::UctxResp;
use providers::mlx5::uar::{MmapUar, UarPlan};
use providers::mlx5::{Mlx5, Mlx5Config, Mlx5Qp};
use uverbs::provider::{CqCreated, PostError, Provider, QpCaps, QpCreated, QpState};
use uverbs::wr::SendWr;

use hotpath::{Peer, MSG_SIZE, TX_DEPTH};

const LKEY: u32 = 0x0012_3442; // what the fake kernel's REG_MR hands out first
const CQN: u32 = 0x407;
const QPN: u32 = 0xb1c;
const BFREG: u32 = 24;

/// The device role: writes requester CQEs into the CQ ring.
struct Dev {
    cqbuf: *mut u8,
    ncqe: u32,
    pi: u32,
    /// CQE bytes 0..56: srqn_uidx (the QP's user index) at 32, byte_cnt at 44, the rest 0.
    tmpl: [u64; 7],
    /// CQE bytes 56..60 in memory order: opcode RDMA_WRITE (0x08) << 24 | qpn, big-endian.
    sop_drop_qpn: u32,
}

impl Dev {
    /// One 64-byte requester CQE for the WQE at `wqe_counter`: body first, op_own (opcode REQ,
    /// owner bit of this lap) last: 7 x 8-byte + 4 + 2 + 1 stores, compiler barrier, 1-byte
    /// store. Identical to dev_req_cqe in hotpath.c.
    #[inline(always)]
    fn req_cqe(&mut self, wqe_counter: u16) {
        let off = (self.pi & (self.ncqe - 1)) as usize * 64;
        // SAFETY: `cqbuf` is the CQ ring of `ncqe` 64-byte entries (it outlives the loop: the
        // CQ is alive in main), `off + 64 <= ncqe * 64`, and the slot at the producer index
        // belongs to the device: the loops never have more than `ncqe` unpolled CQEs.
        unsafe {
            let s = self.cqbuf.add(off);
            let w = s.cast::<u64>();
            for (i, &t) in self.tmpl.iter().enumerate() {
                std::ptr::write_volatile(w.add(i), t);
            }
            std::ptr::write_volatile(s.add(56).cast::<u32>(), self.sop_drop_qpn);
            std::ptr::write_volatile(s.add(60).cast::<u16>(), wqe_counter.to_be());
            std::ptr::write_volatile(s.add(62), 0u8);
            std::sync::atomic::compiler_fence(std::sync::atomic::Ordering::SeqCst);
            std::ptr::write_volatile(s.add(63), u8::from(self.pi & self.ncqe != 0));
        }
        self.pi = self.pi.wrapping_add(1);
    }
}

type Bench = hotpath::Bench<Mlx5<MmapUar>, Dev>;

impl Peer<Mlx5<MmapUar>> for Dev {
    #[inline(always)]
    unsafe fn post(ctx: &Mlx5<MmapUar>, qp: &mut Mlx5Qp, wr: &SendWr<'_>) -> Result<(), PostError> {
        // SAFETY: the caller keeps `Peer::post`'s contract, which is `post_send`'s.
        unsafe { ctx.post_send(qp, std::slice::from_ref(wr)) }
    }
    #[inline(always)]
    fn complete(&mut self, n: u64) {
        self.req_cqe(n as u16); // every WQE is one WQEBB
    }
}

fn setup() -> Bench {
    let resp = common::uctx_resp_from_shim_log("crypto/shim_log_multi_block.txt");
    let cfg = Mlx5Config::default();
    // A memfd stands in for the uverbs fd: MmapUar maps its pages as plain shared memory.
    let plan = UarPlan::new(&UctxResp::parse(&resp).unwrap(), uverbs::objects::page_size(), cfg.blueflame).unwrap();
    let len = plan.mmap_offsets.iter().max().unwrap() + plan.page_size as u64;
    let (fd, _) = hotpath::memfd(c"mlx5-hotpath-uar", len as usize);
    let ctx = Mlx5::<MmapUar>::with_config(fd, &resp, cfg).expect("context");

    // The CQ and QP as the C harness creates them (the same caps), finished with the fake
    // kernel's answers.
    let (cprep, cqe, _) = ctx.prepare_cq(TX_DEPTH as u32 * 2).expect("prepare_cq");
    let mut cresp = vec![0u8; 8];
    cresp[..4].copy_from_slice(&CQN.to_ne_bytes());
    let cq = ctx.finish_cq(cprep, &CqCreated { handle: 1, cqe }, &cresp).expect("finish_cq");
    let attr = common::rc_qp_attr(QpCaps {
        max_send_wr: TX_DEPTH as u32,
        max_recv_wr: 16,
        max_send_sge: 1,
        max_recv_sge: 1,
        max_inline_data: 0,
    });
    let (qprep, _) = ctx.prepare_qp(&attr).expect("prepare_qp");
    let mut qresp = vec![0u8; 40];
    qresp[..4].copy_from_slice(&BFREG.to_ne_bytes());
    let core = QpCreated { handle: 2, qpn: QPN, caps: attr.caps };
    let mut qp = ctx.finish_qp(qprep, &attr, &core, &qresp).expect("finish_qp");
    for s in [QpState::Init, QpState::Rtr, QpState::Rts] {
        ctx.qp_state_changed(&mut qp, s);
    }

    let mut t = [0u8; 56];
    t[32..36].copy_from_slice(&qp.uidx().to_be_bytes());
    t[44..48].copy_from_slice(&MSG_SIZE.to_be_bytes());
    let mut tmpl = [0u64; 7];
    for (i, w) in tmpl.iter_mut().enumerate() {
        *w = u64::from_ne_bytes(t[8 * i..8 * i + 8].try_into().unwrap());
    }
    let dev = Dev {
        cqbuf: cq.addrs().0 as *mut u8,
        ncqe: cq.ncqe(),
        pi: 0,
        tmpl,
        sop_drop_qpn: ((0x08u32 << 24) | qp.qpn()).to_be(),
    };
    Bench::new(ctx, cq, qp, dev, LKEY)
}

fn main() {
    let (case, bw, iters) = hotpath::args();
    let mut b = setup();
    let el = hotpath::run(&mut b, bw, iters);
    let dbrec = b.qp.dbrec();
    let sq_pi = u32::from_be_bytes(dbrec[4..8].try_into().unwrap()) & 0xffff;
    println!(
        "case={case} iters={iters} ns_per_op={:.2} completions={} sq_pi={sq_pi} last_wr_id={} impl=ours sq_wqe_cnt={} ncqe={} qpn={:#x}",
        el.as_nanos() as f64 / iters as f64,
        b.completions,
        b.last_wr_id,
        b.qp.geo.sq_wqe_cnt,
        b.cq.ncqe(),
        b.qp.qpn(),
    );
}
