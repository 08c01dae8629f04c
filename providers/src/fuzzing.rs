//! Fuzz target bodies for the provider code that reads untrusted bytes or indices: rxe
//! completions and rings, rxe WQE encoding under hostile limits, mlx5 CQEs and mlx5 driver
//! responses.
//!
//! Each `pub fn <target>(data: &[u8])` is called by the cargo-fuzz target of the same name
//! (`fuzz/fuzz_targets/<target>.rs`, nightly) and by the stable replay test
//! (`tests/fuzz_replay.rs`) with every file of `fuzz/corpus/<target>/`. A panic is a finding:
//! either a crash of the code under test or a violated property. See `docs/fuzzing.md`.
//!
//! Not part of the API: test tooling, compiled in so that the replay runs on stable.
#![doc(hidden)]

use uverbs::fuzzing::Bytes;
use uverbs::provider::QpType;
use uverbs::wr::{
    wc_flags, RecvWr, RemoteAddr, SendFlags, SendWr, Sge, UdDest, WcOpcode, WcStatus, WorkCompletion, WrOpcode,
};

use crate::mlx5::{abi, cqe as mcqe};
use crate::rxe::cqe::{decode_wc, decode_wc_slice, encode_wc, wc_port_num};
use crate::rxe::layout::*;
use crate::rxe::queue::{Consumer, HeapRing, Producer, RingAccess, MAX_SLOTS};
use crate::rxe::wqe::{self, InlineSource, SqLimits, WqeError};

// ------------------------------------------------------------------------------------------------
// rxe_cqe
// ------------------------------------------------------------------------------------------------

/// Target `rxe_cqe`: bytes of an rxe CQ slot (an `ib_uverbs_wc`).
///
/// Checks: `decode_wc_slice` is `None` exactly for inputs shorter than 48 bytes and otherwise
/// ignores the bytes after 48; decode → encode gives back the 47 meaningful input bytes (only
/// the trailing pad byte may differ) and decode → encode → decode the same completion.
pub fn rxe_cqe(data: &[u8]) {
    let r = decode_wc_slice(data);
    assert_eq!(r.is_some(), data.len() >= WC_SIZE);
    let Some(wc) = r else { return };
    let head: &[u8; WC_SIZE] = data[..WC_SIZE].try_into().unwrap();
    assert_eq!(decode_wc(head), wc);
    let port = wc_port_num(head);
    let enc = encode_wc(&wc, port);
    assert_eq!(enc[..WC_SIZE - 1], head[..WC_SIZE - 1], "decode → encode");
    assert_eq!(decode_wc(&enc), wc, "decode → encode → decode");
    assert_eq!(WcStatus::from_raw(wc.status.raw()), wc.status);
    assert_eq!(WcOpcode::from_raw(wc.opcode.raw()), wc.opcode);
}

// ------------------------------------------------------------------------------------------------
// rxe_ring
// ------------------------------------------------------------------------------------------------

/// Largest region the ring target allocates (bytes after the 384-byte header).
const RING_MAX_DATA: usize = 64 * 1024;

/// What `Ring::new` must decide for this header and region length.
fn geometry_ok(log2: u32, mask: u32, len: usize, min_elem: usize) -> bool {
    if !(6..=16).contains(&log2) {
        return false;
    }
    let slots = mask as u64 + 1;
    if !slots.is_power_of_two() || slots > MAX_SLOTS {
        return false;
    }
    if (1usize << log2) < min_elem {
        return false;
    }
    (slots << log2) + QB_DATA as u64 <= len as u64
}

fn slot_off(log2: u32, mask: u32, idx: u32) -> usize {
    QB_DATA + (((idx & mask) as usize) << log2)
}

fn read_tag(mem: &HeapRing, off: usize) -> u64 {
    let mut b = [0u8; 8];
    // SAFETY: single-threaded; the fuzz target plays the other side and nobody else touches the
    // region concurrently. Bounds are checked by read_bytes.
    unsafe { mem.read_bytes(off, &mut b) };
    u64::from_ne_bytes(b)
}

fn write_tag(mem: &HeapRing, off: usize, v: u64) {
    // SAFETY: as in read_tag.
    unsafe { mem.write_bytes(off, &v.to_ne_bytes()) };
}

/// Target `rxe_ring`: a hostile "kernel" side of an rxe ring. The input chooses the header
/// (log2_elem_size, index_mask, initial indices — any u32s) and the region length, then a
/// sequence of moves: store any value into producer_index / consumer_index / the geometry
/// words, poll, post.
///
/// Checks against a model of the ring protocol: construction succeeds exactly for a valid
/// geometry that fits the region; every poll hands out exactly the slots between our consumer
/// index and the published producer index (each slot is tagged with its number, so a wrong slot
/// is seen), at most `max`, and publishes the new consumer index; an index with bits outside the
/// mask is an error that reads nothing and moves nothing; posts fill exactly the free slots the
/// model predicts, whole-slot sized, stop at the first failing item, and publish the prefix;
/// rewriting the geometry words after creation changes nothing. Any access outside the region
/// panics in the bounds-checked helpers or is caught by the address sanitizer.
pub fn rxe_ring(data: &[u8]) {
    let mut r = Bytes::new(data);
    let producer_side = r.bool();
    // Mostly plausible geometry, sometimes anything.
    let log2 = if r.bool() { r.u32() } else { 6 + r.below(5) };
    let mask = if r.bool() {
        r.u32()
    } else {
        (1u32 << r.below(8)).wrapping_sub(1)
    };
    let len = r.u32() as usize % (QB_DATA + RING_MAX_DATA + 1);
    let init_prod = if r.bool() { r.u32() } else { r.u32() & mask };
    let init_cons = if r.bool() { r.u32() } else { r.u32() & mask };
    let min_elem = match r.below(4) {
        0 => SEND_WQE_SIZE,
        1 => RECV_WQE_SIZE,
        2 => WC_SIZE,
        _ => r.below(2048) as usize,
    };

    let mem = HeapRing::zeroed(len);
    let len = crate::rxe::queue::RingMem::len_bytes(&mem);
    if len < QB_DATA {
        // Too short for a header: construction must fail without touching it.
        if producer_side {
            assert!(Producer::new(mem, min_elem, "fuzz queue", "h").is_err());
        } else {
            assert!(Consumer::new(mem, "fuzz cq").is_err());
        }
        return;
    }
    mem.store_u32(QB_LOG2_ELEM_SIZE, log2);
    mem.store_u32(QB_INDEX_MASK, mask);
    mem.store_u32(QB_PRODUCER_INDEX, init_prod);
    mem.store_u32(QB_CONSUMER_INDEX, init_cons);
    let want = if producer_side { min_elem } else { WC_SIZE };
    let valid = geometry_ok(log2, mask, len, want);
    if valid {
        // Tag every slot with its number so that reading a wrong slot shows.
        for i in 0..=mask {
            write_tag(
                &mem,
                slot_off(log2, mask, i),
                0xA000_0000_0000_0000 | u64::from(i),
            );
        }
    }
    if producer_side {
        let p = Producer::new(mem.clone(), min_elem, "fuzz queue", "h");
        match p {
            Err(_) => assert!(!valid || init_prod > mask, "valid ring refused"),
            Ok(p) => {
                assert!(valid && init_prod <= mask, "invalid ring accepted");
                producer_moves(&mut r, &mem, p, log2, mask);
            }
        }
    } else {
        match Consumer::new(mem.clone(), "fuzz cq") {
            Err(_) => assert!(!valid || init_cons > mask, "valid ring refused"),
            Ok(c) => {
                assert!(valid && init_cons <= mask, "invalid ring accepted");
                assert_eq!(c.capacity(), mask);
                assert_eq!(c.slot_size(), 1usize << log2);
                consumer_moves(&mut r, &mem, c, mask, init_cons);
            }
        }
    }
}

/// Hostile writes the other side can make; returns true if it did one.
fn hostile_store(r: &mut Bytes<'_>, mem: &HeapRing, op: u8, mask: u32) -> bool {
    match op {
        0 => mem.store_u32(QB_PRODUCER_INDEX, r.u32()),
        1 => mem.store_u32(QB_PRODUCER_INDEX, r.u32() & mask),
        2 => mem.store_u32(QB_CONSUMER_INDEX, r.u32()),
        3 => mem.store_u32(QB_CONSUMER_INDEX, r.u32() & mask),
        4 => mem.store_u32(QB_LOG2_ELEM_SIZE, r.u32()),
        5 => mem.store_u32(QB_INDEX_MASK, r.u32()),
        _ => return false,
    }
    true
}

/// Up to 256 steps while the input lasts, each on an op byte (mod 9): ops the other side's
/// hostile stores take (`hostile_store`) happen here, the rest are `step`'s.
fn ring_steps<'a>(
    r: &mut Bytes<'a>,
    mem: &HeapRing,
    mask: u32,
    mut step: impl FnMut(&mut Bytes<'a>, u8),
) {
    let mut steps = 0;
    while !r.is_empty() && steps < 256 {
        steps += 1;
        let op = r.u8() % 9;
        if hostile_store(r, mem, op, mask) {
            continue;
        }
        step(r, op);
    }
}

/// Op 8: a ring end's count of the slots between `cons` and `prod` (`what`: `pending`,
/// `outstanding`), which holds while the other side's index `theirs` is in range.
fn check_count(n: uverbs::Result<u32>, prod: u32, cons: u32, theirs: u32, mask: u32, what: &str) {
    match n {
        Ok(n) => {
            assert!(theirs <= mask);
            assert_eq!(n, prod.wrapping_sub(cons) & mask);
        }
        Err(_) => assert!(theirs > mask, "{what} refused a valid index"),
    }
}

fn consumer_moves(
    r: &mut Bytes<'_>,
    mem: &HeapRing,
    mut c: Consumer<HeapRing>,
    mask: u32,
    init_cons: u32,
) {
    let mut cons = init_cons;
    ring_steps(r, mem, mask, |r, op| {
        let prod = mem.load_u32(QB_PRODUCER_INDEX);
        let cons_word_before = mem.load_u32(QB_CONSUMER_INDEX);
        if op == 8 {
            check_count(c.pending(), prod, cons, prod, mask, "pending");
            return;
        }
        let max = r.u8() as usize % 40;
        let mut seen = Vec::new();
        let res = c.poll_with(max, |wc| {
            seen.push(u64::from_ne_bytes(wc[..8].try_into().unwrap()))
        });
        if prod > mask {
            assert!(
                res.is_err(),
                "producer index {prod:#x} > mask {mask:#x} accepted"
            );
            assert!(seen.is_empty());
            assert_eq!(mem.load_u32(QB_CONSUMER_INDEX), cons_word_before);
            return;
        }
        let n = res.expect("poll with a valid producer index");
        let avail = (prod.wrapping_sub(cons) & mask) as usize;
        assert_eq!(n, avail.min(max), "polled count");
        assert_eq!(seen.len(), n);
        for (k, tag) in seen.iter().enumerate() {
            let want = 0xA000_0000_0000_0000 | u64::from(cons.wrapping_add(k as u32) & mask);
            assert_eq!(*tag, want, "slot read out of order");
        }
        if n > 0 {
            cons = cons.wrapping_add(n as u32) & mask;
            assert_eq!(
                mem.load_u32(QB_CONSUMER_INDEX),
                cons,
                "consumer index published"
            );
        } else {
            assert_eq!(mem.load_u32(QB_CONSUMER_INDEX), cons_word_before);
        }
    });
}

fn producer_moves(
    r: &mut Bytes<'_>,
    mem: &HeapRing,
    mut p: Producer<HeapRing>,
    log2: u32,
    mask: u32,
) {
    let elem = 1usize << log2;
    assert_eq!(p.capacity(), mask);
    assert_eq!(p.slot_size(), elem);
    let mut prod = mem.load_u32(QB_PRODUCER_INDEX);
    assert_eq!(p.producer(), prod);
    let mut next_item = 1u64;
    ring_steps(r, mem, mask, |r, op| {
        let cons = mem.load_u32(QB_CONSUMER_INDEX);
        if op == 8 {
            check_count(p.outstanding(), prod, cons, cons, mask, "outstanding");
            return;
        }
        let count = r.u8() as usize % 24;
        // Item index at which fill refuses (none if >= count).
        let fail_at = r.u8() as usize;
        let items: Vec<u64> = (0..count as u64).map(|k| next_item + k).collect();
        next_item += count as u64;
        let prod_word_before = mem.load_u32(QB_PRODUCER_INDEX);
        let mut filled = 0usize;
        let res = p.push_batch(&items, |slot, v| {
            assert_eq!(slot.len(), elem, "fill got a partial slot");
            if filled == fail_at {
                return Err(uverbs::Error::msg("fuzz", "refused"));
            }
            filled += 1;
            slot[..8].copy_from_slice(&v.to_ne_bytes());
            // Scribble over the whole slot: it must all be ours.
            slot[8..].fill(0x5a);
            Ok(())
        });
        if cons > mask {
            let (i, _) = res.expect_err("consumer index beyond the mask accepted");
            assert_eq!(i, 0);
            assert_eq!(mem.load_u32(QB_PRODUCER_INDEX), prod_word_before);
            return;
        }
        let free = (mask - (prod.wrapping_sub(cons) & mask)) as usize;
        let expect_ok = count.min(free).min(fail_at);
        match res {
            Ok(()) => assert!(
                count <= free && fail_at >= count,
                "post succeeded past a full queue or a refusal"
            ),
            Err((i, _)) => assert_eq!(i, expect_ok, "failing item index"),
        }
        assert_eq!(filled, expect_ok);
        for (k, item) in items.iter().enumerate().take(expect_ok) {
            let off = slot_off(log2, mask, prod.wrapping_add(k as u32));
            assert_eq!(read_tag(mem, off), *item, "item written to the wrong slot");
        }
        if expect_ok > 0 {
            prod = prod.wrapping_add(expect_ok as u32) & mask;
            assert_eq!(
                mem.load_u32(QB_PRODUCER_INDEX),
                prod,
                "producer index published"
            );
        } else {
            assert_eq!(mem.load_u32(QB_PRODUCER_INDEX), prod_word_before);
        }
        assert_eq!(p.producer(), prod);
    });
}

// ------------------------------------------------------------------------------------------------
// rxe_wqe
// ------------------------------------------------------------------------------------------------

/// Inline bytes derived from the SGE address: byte `i` of an SGE is `(addr + i) as u8`.
struct PatternInline;

impl InlineSource for PatternInline {
    fn copy(&self, sge: &Sge, dst: &mut [u8]) -> Result<(), WqeError> {
        assert_eq!(dst.len(), sge.length as usize, "inline destination length");
        for (i, b) in dst.iter_mut().enumerate() {
            *b = sge.addr.wrapping_add(i as u64) as u8;
        }
        Ok(())
    }
}

fn rd_u16(b: &[u8], off: usize) -> u16 {
    u16::from_ne_bytes(b[off..off + 2].try_into().unwrap())
}
fn rd_u32(b: &[u8], off: usize) -> u32 {
    u32::from_ne_bytes(b[off..off + 4].try_into().unwrap())
}
fn rd_u64(b: &[u8], off: usize) -> u64 {
    u64::from_ne_bytes(b[off..off + 8].try_into().unwrap())
}

const WRITE_OPS: [WrOpcode; 7] = [
    WrOpcode::RdmaWrite,
    WrOpcode::RdmaWriteWithImm,
    WrOpcode::Send,
    WrOpcode::SendWithImm,
    WrOpcode::RdmaRead,
    WrOpcode::AtomicCmpAndSwp,
    WrOpcode::AtomicFetchAndAdd,
];

/// Target `rxe_wqe`: a send and a receive work request with fuzzed fields (opcode, any flag
/// bits, 0..40 SGEs with any lengths, UD destination or not) against fuzzed limits (any
/// `max_sge` / `max_inline`, or limits derived by `SqLimits::new`) and a slot of 0..4 KiB.
///
/// Checks: the slot is the only memory written (a canary after it stays intact); `encode_send`
/// agrees with `validate_send`; an accepted request obeys every rule independently (known flags,
/// opcode allowed on the QP type, UD destination present, SGEs / inline bytes fit the slot and
/// the limits, atomic SGE and alignment) and its bytes decode back to the request: wr_id,
/// opcode, flags, immediate, remote address and rkey, atomic operands, UD destination, DMA
/// length = resid = total, number of SGEs, then either the SGE list or the inline payload.
/// The same for `encode_recv`.
pub fn rxe_wqe(data: &[u8]) {
    let mut r = Bytes::new(data);
    rxe_send_wqe(&mut r);
    // The receive side with the rest of the input.
    rxe_recv_wqe(&mut r);
}

/// Guard bytes after a WQE slot: an encoder that writes past its slot changes them.
const CANARY: usize = 64;

/// [`rxe_wqe`]'s send half: a send request and limits from the input, encoded and checked.
fn rxe_send_wqe(r: &mut Bytes<'_>) {
    let qp_type = [QpType::Rc, QpType::Uc, QpType::Ud][r.below(3) as usize];
    let slot_len = match r.below(4) {
        0 => 1usize << (6 + r.below(7)),
        _ => r.below(4097) as usize,
    };
    let lim = if r.bool() {
        SqLimits::new(qp_type, r.u32(), r.u32(), slot_len)
    } else {
        SqLimits {
            qp_type,
            max_sge: r.u32(),
            max_inline: r.u32(),
        }
    };
    let opcode = WRITE_OPS[r.below(7) as usize];
    let flags = if r.bool() {
        SendFlags(r.u32())
    } else {
        SendFlags(r.u32() & 0xf)
    };
    let nsge = r.below(41) as usize;
    let small = r.bool();
    let sgl: Vec<Sge> = (0..nsge)
        .map(|_| Sge {
            addr: r.u64(),
            length: if small { r.u32() % 300 } else { r.u32() },
            lkey: r.u32(),
        })
        .collect();
    let wr = SendWr {
        wr_id: r.u64(),
        opcode,
        flags,
        sgl: &sgl,
        imm_data: r.u32(),
        remote: RemoteAddr {
            addr: r.u64(),
            rkey: r.u32(),
        },
        compare_add: r.u64(),
        swap: r.u64(),
        ud: if r.bool() {
            Some(UdDest {
                ah: r.u32(),
                remote_qpn: r.u32(),
                remote_qkey: r.u32(),
            })
        } else {
            None
        },
        // Not read from the input: rxe has no XRC, and the corpora keep their meaning.
        remote_srqn: 0,
        dci_stream: 0,
    };
    let mut buf = vec![0xC3u8; slot_len + CANARY];
    let (slot, guard) = buf.split_at_mut(slot_len);
    let res = wqe::encode_send(slot, &wr, &lim, &PatternInline);
    assert!(
        guard.iter().all(|&b| b == 0xC3),
        "encode_send wrote past the slot"
    );
    let v = wqe::validate_send(&wr, &lim, slot_len);
    match (&res, &v) {
        (Ok(()), Ok(_)) => {}
        (Err(a), Err(b)) => assert_eq!(a, b, "encode_send and validate_send disagree"),
        _ => panic!("encode_send {res:?} but validate_send {v:?}"),
    }
    if res.is_ok() {
        check_send(slot, &wr, &lim);
    }
}

/// [`rxe_wqe`]'s receive half, from the rest of the input.
fn rxe_recv_wqe(r: &mut Bytes<'_>) {
    let rlen = match r.below(3) {
        0 => 1usize << (5 + r.below(8)),
        _ => r.below(4097) as usize,
    };
    let max_sge = if r.bool() {
        wqe::recv_max_sge(r.u32(), rlen)
    } else {
        r.u32()
    };
    let rn = r.below(41) as usize;
    let rsgl: Vec<Sge> = (0..rn)
        .map(|_| Sge {
            addr: r.u64(),
            length: r.u32(),
            lkey: r.u32(),
        })
        .collect();
    let rwr = RecvWr {
        wr_id: r.u64(),
        sgl: &rsgl,
    };
    let mut buf = vec![0xC3u8; rlen + CANARY];
    let (slot, guard) = buf.split_at_mut(rlen);
    let res = wqe::encode_recv(slot, &rwr, max_sge);
    assert!(
        guard.iter().all(|&b| b == 0xC3),
        "encode_recv wrote past the slot"
    );
    if res.is_ok() {
        assert!(
            rlen >= RECV_WQE_SIZE + rn * SGE_SIZE,
            "receive SGEs do not fit the slot"
        );
        assert!(
            rn as u64 <= u64::from(max_sge),
            "more SGEs than max_sge accepted"
        );
        let total: u64 = rsgl.iter().map(|s| u64::from(s.length)).sum();
        assert!(total <= u64::from(u32::MAX));
        assert_eq!(rd_u64(slot, RECV_WR_ID), rwr.wr_id);
        assert_eq!(rd_u32(slot, RECV_DMA + DMA_LENGTH) as u64, total);
        assert_eq!(rd_u32(slot, RECV_DMA + DMA_RESID) as u64, total);
        assert_eq!(rd_u32(slot, RECV_DMA + DMA_NUM_SGE) as usize, rn);
        for (i, s) in rsgl.iter().enumerate() {
            let o = RECV_WQE_SIZE + i * SGE_SIZE;
            assert_eq!(rd_u64(slot, o + SGE_ADDR), s.addr);
            assert_eq!(rd_u32(slot, o + SGE_LENGTH), s.length);
            assert_eq!(rd_u32(slot, o + SGE_LKEY), s.lkey);
        }
    }
}

fn check_send(slot: &[u8], wr: &SendWr<'_>, lim: &SqLimits) {
    let op = wr.opcode;
    let inline = wr.flags.contains(SendFlags::INLINE);
    let total: u64 = wr.sgl.iter().map(|s| u64::from(s.length)).sum();
    // The rules, restated independently of validate_send.
    assert!(slot.len() >= SEND_WQE_SIZE);
    assert_eq!(wr.flags.0 & !0xf, 0, "unknown flags accepted");
    match lim.qp_type {
        QpType::Rc => {}
        QpType::Uc => assert!(!matches!(op, WrOpcode::RdmaRead) && !op.is_atomic()),
        QpType::Ud => {
            assert!(matches!(op, WrOpcode::Send | WrOpcode::SendWithImm));
            assert!(wr.ud.is_some());
        }
        QpType::Dci | QpType::Dct => unreachable!("rxe has no DC QPs"),
        QpType::XrcIni | QpType::XrcTgt => panic!("rxe accepted a send on an XRC QP"),
        QpType::Srd => panic!("rxe accepted a send on an SRD QP"),
    }
    assert!(total <= u64::from(u32::MAX));
    let payload = (slot.len() - SEND_WQE_SIZE) as u64;
    if inline {
        assert!(!matches!(op, WrOpcode::RdmaRead) && !op.is_atomic());
        assert!(
            total <= payload && total <= u64::from(lim.max_inline),
            "inline too long accepted"
        );
    } else {
        let n = wr.sgl.len() as u64;
        assert!(
            n * SGE_SIZE as u64 <= payload && n <= u64::from(lim.max_sge),
            "too many SGEs accepted"
        );
    }
    if op.is_atomic() {
        assert!(wr.sgl.len() == 1 && total == 8 && wr.remote.addr & 7 == 0);
    }
    // The bytes.
    assert_eq!(rd_u64(slot, WR_ID), wr.wr_id);
    assert_eq!(rd_u32(slot, WR_OPCODE), op as u32);
    assert_eq!(rd_u32(slot, WR_SEND_FLAGS), wr.flags.0);
    assert_eq!(
        rd_u32(slot, WR_IMM_DATA),
        if op.has_imm() { wr.imm_data } else { 0 }
    );
    match op {
        WrOpcode::RdmaWrite | WrOpcode::RdmaWriteWithImm | WrOpcode::RdmaRead => {
            assert_eq!(rd_u64(slot, WR_RDMA_REMOTE_ADDR), wr.remote.addr);
            assert_eq!(rd_u32(slot, WR_RDMA_RKEY), wr.remote.rkey);
            assert_eq!(rd_u64(slot, WQE_IOVA), wr.remote.addr);
        }
        WrOpcode::AtomicCmpAndSwp | WrOpcode::AtomicFetchAndAdd => {
            assert_eq!(rd_u64(slot, WR_ATOMIC_REMOTE_ADDR), wr.remote.addr);
            assert_eq!(rd_u64(slot, WR_ATOMIC_COMPARE_ADD), wr.compare_add);
            assert_eq!(rd_u64(slot, WR_ATOMIC_SWAP), wr.swap);
            assert_eq!(rd_u32(slot, WR_ATOMIC_RKEY), wr.remote.rkey);
            assert_eq!(rd_u64(slot, WQE_IOVA), wr.remote.addr);
        }
        WrOpcode::Send | WrOpcode::SendWithImm => {
            if lim.qp_type == QpType::Ud {
                let ud = wr.ud.unwrap();
                assert_eq!(rd_u32(slot, WR_UD_REMOTE_QPN), ud.remote_qpn);
                assert_eq!(rd_u32(slot, WR_UD_REMOTE_QKEY), ud.remote_qkey);
                assert_eq!(rd_u16(slot, WR_UD_PKEY_INDEX), 0);
                assert_eq!(rd_u32(slot, WR_UD_AH_NUM), ud.ah);
            }
            assert_eq!(rd_u64(slot, WQE_IOVA), 0);
        }
    }
    // Kernel-owned fields are reset on every post
    // (docs/rxe-kernel.md, "E4 kernel-owned WQE fields").
    for off in [
        WQE_STATUS,
        WQE_STATE,
        WQE_MASK,
        WQE_FIRST_PSN,
        WQE_LAST_PSN,
        WQE_ACK_LENGTH,
        WQE_SSN,
    ] {
        assert_eq!(rd_u32(slot, off), 0, "stale kernel field at {off}");
    }
    let dma = WQE_DMA;
    assert_eq!(rd_u32(slot, dma + DMA_LENGTH) as u64, total);
    assert_eq!(rd_u32(slot, dma + DMA_RESID) as u64, total);
    assert_eq!(rd_u32(slot, dma + DMA_CUR_SGE), 0);
    assert_eq!(rd_u32(slot, dma + DMA_SGE_OFFSET), 0);
    assert_eq!(rd_u32(slot, dma + DMA_NUM_SGE) as usize, wr.sgl.len());
    if inline {
        let mut at = SEND_WQE_SIZE;
        for s in wr.sgl {
            for i in 0..s.length as usize {
                assert_eq!(
                    slot[at + i],
                    s.addr.wrapping_add(i as u64) as u8,
                    "inline payload"
                );
            }
            at += s.length as usize;
        }
    } else {
        for (i, s) in wr.sgl.iter().enumerate() {
            let o = SEND_WQE_SIZE + i * SGE_SIZE;
            assert_eq!(rd_u64(slot, o + SGE_ADDR), s.addr);
            assert_eq!(rd_u32(slot, o + SGE_LENGTH), s.length);
            assert_eq!(rd_u32(slot, o + SGE_LKEY), s.lkey);
        }
    }
}

// ------------------------------------------------------------------------------------------------
// mlx5_cqe
// ------------------------------------------------------------------------------------------------

/// CQE bytes `parse` must not look at: inline-scattered payload and fields this provider does
/// not use (timestamp, checksum, flow tag, ...). Everything else is a field it decodes.
const MLX5_UNUSED: [core::ops::Range<usize>; 6] = [0..17, 18..22, 28..32, 40..44, 48..54, 62..63];

/// Target `mlx5_cqe`: one 64-byte CQE (shorter input is zero-padded).
///
/// Checks: compressed format ⇔ `Compressed`; unsupported opcodes are refused; an accepted CQE
/// has 24-bit QPN / SRQN, a 4-bit SL, 7-bit path bits, `wr_id` 0, the queue (send/receive)
/// that its opcode implies, success exactly for non-error opcodes, and byte_len 8 for
/// atomics. Metamorphic: flipping every bit `parse` must ignore (unused bytes, reserved bits of
/// the SL/GRH/QPN words and of ml_path) gives the same result. `sw_owned` follows the owner bit
/// parity for any index and ring size.
pub fn mlx5_cqe(data: &[u8]) {
    let mut b = [0u8; 64];
    let n = data.len().min(64);
    b[..n].copy_from_slice(&data[..n]);
    let res = mcqe::parse(&b);
    // The in-place decoder (what poll_cq uses) agrees with `parse` and, on success, overwrites
    // every field of a completion that held garbage.
    let mut dirty = WorkCompletion {
        wr_id: u64::MAX,
        status: WcStatus::GeneralErr,
        opcode: WcOpcode::Unknown(0xdead),
        vendor_err: !0,
        byte_len: !0,
        imm_data: !0,
        qp_num: !0,
        src_qp: !0,
        wc_flags: !0,
        pkey_index: !0,
        slid: !0,
        sl: !0,
        dlid_path_bits: !0,
    };
    match (mcqe::parse_into(&b, &mut dirty), &res) {
        (Ok(i), Ok(c)) => {
            assert_eq!(dirty, c.wc, "parse_into left a field of the completion unwritten");
            assert_eq!(
                (i.queue, i.wqe_counter, i.qpn, i.srqn_uidx, i.inline_scatter_32),
                (c.queue, c.wqe_counter, c.qpn, c.srqn_uidx, c.inline_scatter_32)
            );
        }
        (Err(e), Err(f)) => assert_eq!(e, *f),
        (a, b) => panic!("parse_into {a:?} vs parse {b:?}"),
    }
    let op_own = b[mcqe::off::OP_OWN];
    let opcode = op_own >> 4;
    let format = (op_own >> 2) & 3;

    // Metamorphic: bits that do not matter.
    let mut m = b;
    for r in MLX5_UNUSED {
        for x in &mut m[r] {
            *x = !*x;
        }
    }
    m[mcqe::off::ML_PATH] ^= 0x80;
    // flags_rqpn: bits 30..31 are reserved above the 2-bit GRH field.
    m[mcqe::off::FLAGS_RQPN] ^= 0xc0;
    // srqn_uidx: the top byte is not part of the 24-bit value.
    m[mcqe::off::SRQN_UIDX] ^= 0xff;
    // op_own bits 1 (se) does not change decoding; bit 0 is the owner bit.
    m[mcqe::off::OP_OWN] ^= 0x03;
    let send_op_used = matches!(opcode, mcqe::op::REQ | mcqe::op::REQ_ERR);
    let mut m2 = m;
    if !send_op_used {
        // The send opcode byte only matters for requester CQEs.
        m2[mcqe::off::SOP_DROP_QPN] ^= 0xff;
    }
    assert_eq!(
        mcqe::parse(&m2),
        res,
        "parse depends on bits it must ignore"
    );

    match res {
        Err(mcqe::CqeError::Compressed) => assert_eq!(format, mcqe::FORMAT_COMPRESSED),
        Err(mcqe::CqeError::InlineScatter64) => {
            assert_eq!(format, mcqe::FORMAT_INLINE_64);
            assert!((1..=4).contains(&opcode));
        }
        Err(mcqe::CqeError::Opcode(o)) => {
            assert_eq!(o, opcode);
            assert!(matches!(o, 5..=12 | 15), "opcode {o} refused");
        }
        Ok(c) => {
            assert_ne!(format, mcqe::FORMAT_COMPRESSED);
            assert!(c.qpn <= 0xff_ffff && c.srqn_uidx <= 0xff_ffff);
            assert_eq!(c.qpn, c.wc.qp_num);
            assert_eq!(c.wc.wr_id, 0);
            assert!(c.wc.sl <= 15 && c.wc.dlid_path_bits <= 0x7f);
            let is_recv = matches!(opcode, 1..=4 | 14);
            assert_eq!(
                c.queue == mcqe::Queue::Recv,
                is_recv,
                "queue for opcode {opcode}"
            );
            let is_err = matches!(opcode, 13 | 14);
            assert_eq!(
                c.wc.status != WcStatus::Success,
                is_err,
                "status for opcode {opcode}"
            );
            if matches!(c.wc.opcode, WcOpcode::CompSwap | WcOpcode::FetchAdd) && !is_err {
                assert_eq!(c.wc.byte_len, 8);
            }
            if c.wc.wc_flags & wc_flags::WITH_IMM != 0 {
                assert!(matches!(opcode, 0 | 1 | 3));
            }
            if c.inline_scatter_32 {
                assert_eq!(format, mcqe::FORMAT_INLINE_32);
            }
        }
    }

    let ci = u32::from_le_bytes([b[0], b[1], b[2], b[3]]);
    let ncqe = 1u32 << (b[4] % 24);
    let owned = mcqe::sw_owned(op_own, ci, ncqe);
    let want = opcode != mcqe::op::INVALID && ((op_own & 1) != 0) == ((ci & ncqe) != 0);
    assert_eq!(owned, want);
    assert_eq!(
        mcqe::sw_owned(op_own ^ 1, ci, ncqe),
        opcode != mcqe::op::INVALID && !want
    );
}

// ------------------------------------------------------------------------------------------------
// mlx5_abi
// ------------------------------------------------------------------------------------------------

/// Target `mlx5_abi`: a driver response as the kernel writes it after the common part, given to
/// every mlx5 response parser (GET_CONTEXT, CREATE_CQ/QP/SRQ/AH).
///
/// Checks: an accepted GET_CONTEXT response satisfies every documented validation rule; a short
/// response behaves exactly like its last complete field zero-extended to the full length
/// (fields beyond it, or cut short, read as zero), and bytes past the last field are ignored; the CQN / SRQN are 24-bit and
/// come from the first word; the AH MAC is bytes 4..10.
pub fn mlx5_abi(data: &[u8]) {
    const FULL: usize = abi::ALLOC_UCONTEXT_RESP_LEN;
    let u = abi::UctxResp::parse(data);
    if data.len() < 45 {
        assert!(
            u.is_err(),
            "GET_CONTEXT response of {} bytes accepted",
            data.len()
        );
    } else {
        // Field ends after the mandatory part: a field cut short reads as absent (zero), so the
        // response must behave like its last complete field boundary, zero-extended. Derived
        // from the parser's offsets so that the table cannot end before the struct does (it
        // once stopped at 68 and dropped `dump_fill_mkey`, 68..72).
        const ENDS: [usize; 9] = abi::UCTX_RESP_FIELD_ENDS;
        let cut = ENDS
            .iter()
            .copied()
            .filter(|&e| e <= data.len())
            .max()
            .unwrap();
        let mut full = data[..cut].to_vec();
        full.resize(FULL, 0);
        let z = abi::UctxResp::parse(&full);
        match (&u, &z) {
            (Ok(a), Ok(b)) => {
                assert_eq!(a, b, "zero extension / trailing bytes changed the result")
            }
            (Err(_), Err(_)) => {}
            _ => panic!(
                "zero extension changed acceptance: {:?} vs {:?}",
                u.is_ok(),
                z.is_ok()
            ),
        }
    }
    if let Ok(r) = u {
        assert!(r.tot_bfregs >= 1 && r.tot_bfregs <= abi::MAX_BFREGS);
        assert!(r.cqe_version <= 1);
        assert!(r.bf_reg_size == 0 || (r.bf_reg_size % 128 == 0 && r.bf_reg_size <= 2048));
        assert!(r.log_uar_size == 0 || (12..=16).contains(&r.log_uar_size));
        assert!(r.num_uars_per_page <= 16);
        assert!(r.max_sq_desc_sz >= 64 && r.max_rq_desc_sz >= 16 && r.max_send_wqebb > 0);
    }
    let w0 = data
        .get(..4)
        .map(|s| u32::from_ne_bytes(s.try_into().unwrap()));
    match abi::parse_create_cq_resp(data) {
        Ok(cqn) => assert!(cqn <= 0xff_ffff && Some(cqn) == w0),
        Err(_) => assert!(w0.is_none_or(|w| w > 0xff_ffff)),
    }
    match abi::parse_create_qp_resp(data) {
        Ok(v) => assert_eq!(Some(v), w0),
        Err(_) => assert!(w0.is_none()),
    }
    match abi::parse_create_srq_resp(data) {
        Ok(v) => assert_eq!(Some(v), w0.map(|w| w & 0xff_ffff)),
        Err(_) => assert!(w0.is_none()),
    }
    match abi::parse_create_ah_resp(data) {
        Ok(mac) => assert_eq!(&mac[..], &data[4..10]),
        Err(_) => assert!(data.len() < 10),
    }
}

// ------------------------------------------------------------------------------------------------
// efa_cqe
// ------------------------------------------------------------------------------------------------

/// Target `efa_cqe`: EFA completion descriptors and the CQ consumer over device-written memory.
///
/// The input's first 4 bytes choose a geometry (sub-CQ count 1–4, entries 2^0–2^6, entry size
/// 16 or 32, one sub-CQ without users); the rest is the CQ buffer as the device left it, then
/// one byte per poll saying which entries to rewrite. Checks: `cqe::parse` accepts exactly the
/// 16-byte-or-longer entries whose queue type is send or receive, reads past byte 16 only the
/// high length bits of a received RDMA write, and fills receive-only fields only for receives; `to_wc` keeps the status as `vendor_err`;
/// the consumer never reads outside the buffer (a slice: ASan and bounds checks), takes an
/// entry only when its phase matches, counts every taken entry in `cc`, skips sub-CQs without
/// users, and gives back a request id only once (the pool refuses the rest).
pub fn efa_cqe(data: &[u8]) {
    use crate::efa::{cqe as ecqe, hw, ring};

    let r = ecqe::parse(data);
    let queue = data.get(3).map(|f| (f >> 1) & 3);
    assert_eq!(
        r.is_ok(),
        data.len() >= hw::CDESC_SIZE && matches!(queue, Some(1 | 2)),
        "{r:?}"
    );
    if let Ok(c) = r {
        if data.len() > hw::CDESC_SIZE {
            let short = ecqe::parse(&data[..hw::CDESC_SIZE]);
            assert_eq!(short, Ok(ecqe::Cdesc { length_hi: 0, ..c }));
        }
        if c.length_hi != 0 {
            assert!(c.queue == hw::QUEUE_RECV && c.op_type == hw::OP_RDMA_WRITE, "{c:?}");
        }
        if c.queue == hw::QUEUE_SEND {
            assert_eq!((c.ah, c.src_qp_num, c.imm, c.has_imm), (0, 0, 0, false));
        }
        let wc = ecqe::to_wc(&c, 7);
        assert_eq!((wc.wr_id, wc.vendor_err), (7, u32::from(c.status)));
    }

    let mut b = Bytes::new(data);
    let num_sub = 1 + b.u8() % 4;
    let entries = 1u32 << (b.u8() % 7);
    let cqe_size = if b.u8() & 1 == 0 {
        hw::CDESC_SIZE
    } else {
        hw::CDESC_EX_SIZE
    };
    let idle = b.u8() % num_sub;
    let need = usize::from(num_sub) * entries as usize * cqe_size;
    let mut mem = b.take(need).to_vec();
    mem.resize(need, 0);
    let mut cq =
        ring::CqState::new(u16::from(num_sub), entries, cqe_size, need).expect("valid geometry");
    for i in 0..u16::from(num_sub) {
        if i != u16::from(idle) || num_sub == 1 {
            cq.attach(i).unwrap();
        }
    }
    let mut pool = ring::WridPool::new(entries).unwrap();
    for i in 0..entries {
        assert_eq!(pool.take(u64::from(i)), Ok(i as u16));
    }
    let mut taken = 0u16;
    let mut returned = std::collections::HashSet::new();
    for _ in 0..(4 * need / cqe_size + 4) {
        match cq.next(&mem[..]) {
            Some(Ok(c)) => {
                taken += 1;
                match pool.complete(c.req_id) {
                    Ok(w) => assert!(
                        returned.insert(w),
                        "request id {} given back twice",
                        c.req_id
                    ),
                    Err(e) => assert!(matches!(e, ring::RingError::BadReqId { .. })),
                }
            }
            // An entry taken that is not a completion (a bad queue type): counted all the same.
            Some(Err(_)) => taken += 1,
            None => {}
        }
        assert_eq!(cq.cc, taken);
        // The "device" flips the phase of the entries the next input byte names.
        let flip = b.u8();
        for (k, e) in mem.chunks_mut(cqe_size).enumerate() {
            if (k as u8) & flip != 0 {
                e[hw::cdesc::FLAGS] ^= 1;
            }
        }
    }
}

// ------------------------------------------------------------------------------------------------
// bnxt_re_cqe
// ------------------------------------------------------------------------------------------------

/// Target `bnxt_re_cqe`: completion entries a hostile bnxt_re device writes. Input: byte 0 the
/// CQ's initial phase and how many sends and receives to post on an RC QP first (bits 0, 1..3,
/// 4..6), then 32-byte entries (a short tail is zero-padded); in each, bit 7 of byte 31 puts our
/// QP's handle where the entry's kind keeps one, and bit 6 gives the entry the phase the CQ
/// expects (else the raw phase bit stands).
///
/// Checks: `decode` reads each field from where the format puts it; polling every entry
/// (with a budget from its byte 0) returns at most the budget, terminates, rings the CQ doorbell
/// only with its own CQ id, and every completion names our QP and a WR id we posted (or 0, an
/// entry never posted to: libbnxt_re also retires those when the device says so).
pub fn bnxt_re_cqe(data: &[u8]) {
    use crate::bnxt_re::cqe::{decode, qp_handle_off, CqeKind};
    use crate::bnxt_re::db::RecordingPage;
    use crate::bnxt_re::hw::CQE_SIZE;
    use uverbs::provider::{CqCreated, DeviceDesc, Provider, QpCaps, QpCreated, QpInitAttr, QpState};

    let Some((&head, rest)) = data.split_first() else { return };
    let chunks: Vec<[u8; CQE_SIZE]> = rest
        .chunks(CQE_SIZE)
        .take(64)
        .map(|c| {
            let mut b = [0u8; CQE_SIZE];
            b[..c.len()].copy_from_slice(c);
            b
        })
        .collect();
    for b in &chunks {
        let c = decode(b);
        assert_eq!(c.phase, b[24] & 1);
        assert_eq!((c.status, c.flags), (b[25], u16::from_le_bytes([b[26], b[27]])));
        assert_eq!(c.rwrid, u32::from_le_bytes([b[28], b[29], b[30], b[31]]) & 0xf_ffff);
        let h = qp_handle_off(c.kind).map_or(0, |o| u64::from_le_bytes(b[o..o + 8].try_into().unwrap()));
        assert_eq!(c.qp_handle, h);
        assert_eq!(matches!(c.kind, CqeKind::Other(_)), matches!((b[24] >> 1) & 0xf, 4..=13));
    }

    let Ok(null) = std::fs::File::open("/dev/null") else { return };
    let dev = DeviceDesc { ibdev: "fuzz".into(), uverbs: "uverbs0".into(), driver_id: 6, driver_abi: 1 };
    let mut uctx = [0u8; 48];
    uctx[8..12].copy_from_slice(&4096u32.to_le_bytes());
    uctx[12..16].copy_from_slice(&32u32.to_le_bytes());
    uctx[16..20].copy_from_slice(&65535u32.to_le_bytes());
    let ctx = crate::bnxt_re::Bnxt::<RecordingPage>::new_context(std::sync::Arc::new(null.into()), &dev, &uctx, &())
        .expect("a valid GET_CONTEXT answer");
    ctx.pd_number(&[0u8; 16]).expect("a valid ALLOC_PD answer");
    let (prep, _, _) = ctx.prepare_cq(15).expect("CQ");
    let resp = [7u32, 0, (head & 1) as u32, 0].map(u32::to_le_bytes).concat();
    let mut cq = ctx.finish_cq(prep, &CqCreated { handle: 1, cqe: 15 }, &resp).expect("CQ");
    let caps = QpCaps { max_send_wr: 8, max_recv_wr: 8, max_send_sge: 2, max_recv_sge: 2, max_inline_data: 0 };
    let attr = QpInitAttr { qp_type: QpType::Rc, caps, sq_sig_all: false, uses_srq: false };
    let (prep, _) = ctx.prepare_qp(&attr).expect("QP");
    let created = QpCreated { handle: 2, qpn: 0x55, caps };
    let mut qp = ctx.finish_qp(prep, &attr, &created, &[0x55, 0, 0, 0, 0, 0, 0, 0]).expect("QP");
    ctx.qp_state_changed(&mut qp, QpState::Rts);
    let buf = [0u8; 64];
    let sge = [Sge { addr: buf.as_ptr() as u64, length: 64, lkey: 1 }];
    for i in 0..(head >> 1) & 7 {
        let mut wr = SendWr::new(100 + i as u64, WrOpcode::RdmaWrite, &sge);
        wr.flags = if i % 2 == 0 { SendFlags::SIGNALED } else { SendFlags::empty() };
        // SAFETY: the SGE points into `buf`, which outlives the call; nothing is inline, and no
        // device reads it.
        let _ = unsafe { ctx.post_send(&mut qp, &[wr]) };
    }
    for i in 0..(head >> 4) & 7 {
        // SAFETY: as above; nothing writes the receive buffer.
        let _ = unsafe { ctx.post_recv(&mut qp, &[RecvWr { wr_id: 200 + i as u64, sgl: &sge }]) };
    }
    let _ = ctx.doorbell_page().map(|d| d.take());

    let mut out = [WorkCompletion::default(); 16];
    for (i, mut b) in chunks.into_iter().enumerate() {
        let kind = decode(&b).kind;
        if b[31] & 0x80 != 0 {
            if let Some(o) = qp_handle_off(kind) {
                b[o..o + 8].copy_from_slice(&qp.handle().to_le_bytes());
            }
        }
        if b[31] & 0x40 != 0 {
            b[24] = (b[24] & !1) | cq.phase;
        }
        cq.buf().write((cq.head as usize + i % 2) % cq.depth as usize * CQE_SIZE, &b);
        let budget = 1 + b[0] as usize % 16;
        let n = ctx.poll_cq(&mut cq, &mut out[..budget]).expect("poll");
        assert!(n <= budget);
        for wc in &out[..n] {
            assert_eq!(wc.qp_num, 0x55, "a completion for a QP that does not exist");
            assert!(wc.wr_id == 0 || (100..108).contains(&wc.wr_id) || (200..208).contains(&wc.wr_id), "{wc:?}");
        }
        for v in ctx.doorbell_page().map(|d| d.take()).unwrap_or_default() {
            assert_eq!((v >> 32) as u32 & 0xf_ffff, 7, "a CQ doorbell for another CQ: {v:#x}");
        }
    }
}
