//! The rxe shared rings (`struct rxe_queue_buf`): a 384-byte header — `log2_elem_size` @0,
//! `index_mask` @4, `producer_index` @128, `consumer_index` @256 — then `index_mask + 1` slots of
//! `1 << log2_elem_size` bytes from @384.
//!
//! - [`Producer`]: SQ, RQ and SRQ, where user space produces and the kernel consumes.
//! - [`Consumer`]: the CQ, where the kernel produces and user space consumes.
//!
//! The ring works over any [`RingMem`]: the kernel's mapping in production ([`super::mem::Mapping`]),
//! a heap region ([`HeapRing`]) in tests, where a mock kernel plays the other side.
//!
//! Trust: the header geometry is read and validated once, when the ring is built, against the
//! region's length; from then on we use only our own copy of `index_mask` and `log2_elem_size`,
//! and our own private copy of the index we own. The other side's index is re-read on every
//! batch, and a value with bits outside the mask (which the kernel never writes, since it masks
//! every index it stores) is reported as a corrupted ring instead of being used. Every slot
//! address is computed from a masked index, so no value in shared memory can move an access
//! outside the region.
//!
//! Capacity is `index_mask` (one slot always stays empty), taken from the ring header and not
//! from what CREATE_QP reported: on 6.1 the response echoes the request (docs/rxe-kernel.md,
//! "E1 QP capacity comes from the ring").
//!
//! This module and [`super::mem`] are the only ones of the provider that touch shared memory;
//! each `unsafe` block says why it is sound.

use core::ptr::NonNull;
use core::sync::atomic::{AtomicU32, AtomicU64, Ordering};
use std::sync::Arc;

use uverbs::error::{Error, Result};

use super::layout::{
    QB_CONSUMER_INDEX, QB_DATA, QB_INDEX_MASK, QB_LOG2_ELEM_SIZE, QB_PRODUCER_INDEX, WC_SIZE,
};

/// Smallest slot the kernel creates (one cache line).
pub const MIN_LOG2_ELEM: u32 = 6;
/// Largest slot we accept (64 KiB; rxe's largest is an SQ slot of 208 + 512 bytes → 1 KiB).
pub const MAX_LOG2_ELEM: u32 = 16;
/// Most slots we accept (rxe: max_qp_wr 2^20 → 2^21 slots; max_cqe 2^15).
pub const MAX_SLOTS: u64 = 1 << 22;

/// A region of memory holding one `rxe_queue_buf`, shared with whoever plays the other side.
///
/// # Safety
/// An implementation guarantees that `base()` returns the same non-null, 8-byte-aligned pointer
/// for the whole life of the value, valid for reads and writes of `len_bytes()` bytes until the value
/// is dropped; and that the other side touches the indices only atomically and the slots only
/// while the ring protocol gives them to it (the kernel's rxe rings, or a test's mock).
pub unsafe trait RingMem: Send {
    fn base(&self) -> *mut u8;
    fn len_bytes(&self) -> usize;
}

/// Validated geometry over a region.
struct Ring<M: RingMem> {
    /// Owns the memory: unmapped/freed only when the ring is dropped (never read otherwise).
    _mem: M,
    base: NonNull<u8>,
    log2: u32,
    mask: u32,
    what: &'static str,
}

// SAFETY: `base` points into `mem`, which is `Send`; the ring has no thread-affine state.
unsafe impl<M: RingMem> Send for Ring<M> {}

impl<M: RingMem> Ring<M> {
    fn new(mem: M, min_elem: usize, what: &'static str) -> Result<Self> {
        let step = || format!("map the rxe {what} ring");
        let len = mem.len_bytes();
        let Some(base) = NonNull::new(mem.base()) else {
            return Err(Error::msg(step(), "null ring address"));
        };
        if (base.as_ptr() as usize) & 7 != 0 {
            return Err(Error::msg(step(), "ring address not 8-byte aligned"));
        }
        if len < QB_DATA {
            return Err(Error::msg(
                step(),
                format!("mapping of {len} bytes is smaller than the 384-byte ring header"),
            ));
        }
        let mut r = Ring {
            _mem: mem,
            base,
            log2: 0,
            mask: 0,
            what,
        };
        // The kernel wrote the geometry before it handed out the mapping; we read it once.
        let log2 = r.index(QB_LOG2_ELEM_SIZE).load(Ordering::Acquire);
        let mask = r.index(QB_INDEX_MASK).load(Ordering::Acquire);
        let bad = |d: String| {
            Err(Error::msg(step(), d).with_hint("the kernel's rxe ring header is not what this tool understands; report it with `uname -r`"))
        };
        if !(MIN_LOG2_ELEM..=MAX_LOG2_ELEM).contains(&log2) {
            return bad(format!(
                "log2_elem_size {log2} outside {MIN_LOG2_ELEM}..={MAX_LOG2_ELEM}"
            ));
        }
        let slots = mask as u64 + 1;
        if !slots.is_power_of_two() || slots > MAX_SLOTS {
            return bad(format!(
                "index_mask {mask:#x} is not 2^n - 1 (at most {MAX_SLOTS} slots)"
            ));
        }
        if (1usize << log2) < min_elem {
            return bad(format!(
                "slots of {} bytes are smaller than the {min_elem} bytes we write",
                1u32 << log2
            ));
        }
        let need = (slots << log2) + QB_DATA as u64;
        if need > len as u64 {
            return bad(format!(
                "{slots} slots of {} bytes need {need} bytes but the mapping has {len}",
                1u32 << log2
            ));
        }
        r.log2 = log2;
        r.mask = mask;
        Ok(r)
    }

    /// One of the header's u32 words (`log2_elem_size`, `index_mask`, `producer_index`,
    /// `consumer_index`) as an atomic.
    #[inline(always)]
    fn index(&self, off: usize) -> &AtomicU32 {
        debug_assert!(off & 3 == 0 && off + 4 <= QB_DATA);
        // SAFETY: `off` is one of the header constants, all < 384 ≤ len (checked in new) and
        // 4-aligned on an 8-aligned base; the memory lives as long as `self` (RingMem). AtomicU32
        // has u32's layout, and the other side accesses these words only atomically
        // (the kernel uses smp_load_acquire / smp_store_release on them).
        unsafe { &*(self.base.as_ptr().add(off) as *const AtomicU32) }
    }

    #[inline(always)]
    fn elem_size(&self) -> usize {
        1usize << self.log2
    }

    /// Address of slot `idx & mask`.
    #[inline(always)]
    fn slot_ptr(&self, idx: u32) -> *mut u8 {
        let i = (idx & self.mask) as usize;
        // SAFETY: i ≤ mask, and new() checked (mask + 1) << log2 + 384 ≤ len, so the slot
        // [384 + i << log2, + 1 << log2) lies inside the region.
        unsafe { self.base.as_ptr().add(QB_DATA + (i << self.log2)) }
    }

    /// Our own index (`which`: "producer" or "consumer", at `off`) as a freshly created ring
    /// holds it; one past `index_mask` means the memory is not a ring header.
    fn own_index(&self, off: usize, which: &str) -> Result<u32> {
        let v = self.index(off).load(Ordering::Relaxed);
        if v > self.mask {
            return Err(self.corrupt(which, v));
        }
        Ok(v)
    }

    fn corrupt(&self, which: &str, v: u32) -> Error {
        Error::msg(
            format!("read the rxe {} ring", self.what),
            format!(
                "{which} index {v:#x} exceeds the ring's index_mask {:#x}: ring memory corrupted",
                self.mask
            ),
        )
    }
}

/// `capacity` and `slot_size` of a ring end (`Producer`, `Consumer`: each holds its `Ring` as
/// `ring`); a macro because the two ends share the geometry but no trait a caller would import.
macro_rules! ring_geometry {
    () => {
        /// Usable slots (`index_mask`: one slot always stays empty).
        #[inline]
        pub fn capacity(&self) -> u32 {
            self.ring.mask
        }

        /// Bytes per slot (`1 << log2_elem_size`).
        #[inline]
        pub fn slot_size(&self) -> usize {
            self.ring.elem_size()
        }
    };
}

/// The user-produced side: SQ, RQ or SRQ.
pub struct Producer<M: RingMem> {
    ring: Ring<M>,
    /// Our private, always-masked copy of `producer_index`; never read back from shared memory.
    prod: u32,
    /// Hint for a full queue ("raise the send queue depth / poll completions"); read only on
    /// the error path.
    full_hint: Box<str>,
}

impl<M: RingMem> Producer<M> {
    /// Take over a freshly created ring. `min_elem`: the bytes of the fixed WQE header we write
    /// (208 for send WQEs, 40 for receive WQEs). `what` names the queue in messages ("send
    /// queue"); `full_hint` is what a user should do when it is full.
    pub fn new(
        mem: M,
        min_elem: usize,
        what: &'static str,
        full_hint: impl Into<Box<str>>,
    ) -> Result<Self> {
        let ring = Ring::new(mem, min_elem, what)?;
        let prod = ring.own_index(QB_PRODUCER_INDEX, "producer")?;
        Ok(Producer {
            ring,
            prod,
            full_hint: full_hint.into(),
        })
    }

    ring_geometry!();

    /// Our producer index (masked).
    #[inline]
    pub fn producer(&self) -> u32 {
        self.prod
    }

    /// Slots posted and not yet consumed by the other side.
    #[inline]
    pub fn outstanding(&self) -> Result<u32> {
        // Acquire: pairs with the kernel's release store of consumer_index, so that once we see
        // a slot as consumed, the kernel's last access to it (it writes state back into SQ
        // slots: docs/rxe-kernel.md, "E4 kernel-owned WQE fields") happens-before our next
        // write to it.
        let cons = self.ring.index(QB_CONSUMER_INDEX).load(Ordering::Acquire);
        if cons > self.ring.mask {
            return Err(self.ring.corrupt("consumer", cons));
        }
        Ok(self.prod.wrapping_sub(cons) & self.ring.mask)
    }

    /// Write `items` into consecutive free slots with `fill`, then publish them all with one
    /// release store of `producer_index`.
    ///
    /// On failure returns `(i, error)`: items `..i` were published, item `i` and later were not
    /// (a full queue, or `fill` refused item `i`). `fill` receives the whole slot.
    #[inline]
    pub fn push_batch<T>(
        &mut self,
        items: &[T],
        mut fill: impl FnMut(&mut [u8], &T) -> Result<()>,
    ) -> Result<(), (usize, Error)> {
        let mut free = match self.outstanding() {
            Ok(o) => self.ring.mask - o,
            Err(e) => return Err((0, e)),
        };
        let mut prod = self.prod;
        let mut failed = None;
        for (i, item) in items.iter().enumerate() {
            if free == 0 {
                // Look once more: the other side may have consumed since the batch began.
                free = match self.outstanding_from(prod) {
                    Ok(o) => self.ring.mask - o,
                    Err(e) => {
                        failed = Some((i, e));
                        break;
                    }
                };
                if free == 0 {
                    failed = Some((i, self.full_error()));
                    break;
                }
            }
            let p = self.ring.slot_ptr(prod);
            // SAFETY: `p` is a slot inside the region (slot_ptr). It is free: fewer than `mask`
            // slots are outstanding counting the ones filled in this batch, so it lies outside
            // the consumer..producer window the other side may access, and the Acquire load in
            // outstanding() ordered the other side's last use of it before this write. `&mut self`
            // guarantees no other slice into the ring exists on our side.
            let slot = unsafe { core::slice::from_raw_parts_mut(p, self.ring.elem_size()) };
            if let Err(e) = fill(slot, item) {
                failed = Some((i, e));
                break;
            }
            prod = (prod + 1) & self.ring.mask;
            free -= 1;
        }
        if prod != self.prod {
            self.prod = prod;
            // Release: every slot write above happens-before the other side's acquire load of
            // producer_index that makes those slots visible to it.
            self.ring
                .index(QB_PRODUCER_INDEX)
                .store(prod, Ordering::Release);
        }
        match failed {
            None => Ok(()),
            Some(f) => Err(f),
        }
    }

    /// [`Self::push_batch`] for exactly one item (the data path's common case), without the
    /// batch bookkeeping: the same free-slot check, slot write and release publication, and the
    /// same errors. On error nothing was published.
    #[inline(always)]
    pub fn push_one<T>(&mut self, item: &T, fill: impl FnOnce(&mut [u8], &T) -> Result<()>) -> Result<()> {
        if self.outstanding()? >= self.ring.mask {
            return Err(self.full_error());
        }
        let p = self.ring.slot_ptr(self.prod);
        // SAFETY: as in push_batch: `p` is a slot inside the region (slot_ptr), free (fewer than
        // `mask` slots are outstanding, so it lies outside the consumer..producer window the
        // other side may access, and the Acquire load in outstanding() ordered the other side's
        // last use of it before this write); `&mut self` guarantees no other slice into the ring.
        let slot = unsafe { core::slice::from_raw_parts_mut(p, self.ring.elem_size()) };
        fill(slot, item)?;
        self.prod = (self.prod + 1) & self.ring.mask;
        // Release: the slot write above happens-before the other side's acquire load of
        // producer_index that makes the slot visible to it.
        self.ring.index(QB_PRODUCER_INDEX).store(self.prod, Ordering::Release);
        Ok(())
    }

    /// The error for a post to a full queue.
    #[cold]
    #[inline(never)]
    fn full_error(&self) -> Error {
        Error::msg(
            format!("post to the {}", self.ring.what),
            format!("{} full: {} outstanding", self.ring.what, self.ring.mask),
        )
        .with_hint(&*self.full_hint)
    }

    fn outstanding_from(&self, prod: u32) -> Result<u32> {
        let cons = self.ring.index(QB_CONSUMER_INDEX).load(Ordering::Acquire);
        if cons > self.ring.mask {
            return Err(self.ring.corrupt("consumer", cons));
        }
        Ok(prod.wrapping_sub(cons) & self.ring.mask)
    }
}

/// The user-consumed side: the CQ.
pub struct Consumer<M: RingMem> {
    ring: Ring<M>,
    /// Our private, always-masked copy of `consumer_index`.
    cons: u32,
}

impl<M: RingMem> Consumer<M> {
    /// Take over a freshly created CQ ring (slots must hold at least an `ib_uverbs_wc`).
    pub fn new(mem: M, what: &'static str) -> Result<Self> {
        let ring = Ring::new(mem, WC_SIZE, what)?;
        let cons = ring.own_index(QB_CONSUMER_INDEX, "consumer")?;
        Ok(Consumer { ring, cons })
    }

    ring_geometry!();

    /// Hand up to `max` completions, oldest first, to `f` (the first 48 bytes of each slot),
    /// then release them to the producer with one store. Returns how many.
    #[inline(always)]
    pub fn poll_with(&mut self, max: usize, mut f: impl FnMut(&[u8; WC_SIZE])) -> Result<usize> {
        // Acquire: pairs with the kernel's release store of producer_index, so the CQE bytes it
        // wrote before that store are visible to the reads below.
        let prod = self.ring.index(QB_PRODUCER_INDEX).load(Ordering::Acquire);
        if prod > self.ring.mask {
            return Err(self.ring.corrupt("producer", prod));
        }
        let mut c = self.cons;
        let mut n = 0;
        while n < max && c != prod {
            let mut wc = [0u8; WC_SIZE];
            // SAFETY: slot_ptr(c) is inside the region and the slot is at least WC_SIZE bytes
            // (checked in new). The slot lies in the consumer..producer window, so the kernel
            // finished writing it (ordered by the Acquire above) and will not touch it again
            // until we release it below.
            unsafe {
                core::ptr::copy_nonoverlapping(self.ring.slot_ptr(c), wc.as_mut_ptr(), WC_SIZE)
            };
            f(&wc);
            c = (c + 1) & self.ring.mask;
            n += 1;
        }
        if n > 0 {
            self.cons = c;
            // Release: our reads of the slots above happen-before the kernel's acquire load of
            // consumer_index that lets it overwrite them.
            self.ring
                .index(QB_CONSUMER_INDEX)
                .store(c, Ordering::Release);
        }
        Ok(n)
    }

    /// Completions waiting now.
    #[inline]
    pub fn pending(&self) -> Result<u32> {
        let prod = self.ring.index(QB_PRODUCER_INDEX).load(Ordering::Acquire);
        if prod > self.ring.mask {
            return Err(self.ring.corrupt("producer", prod));
        }
        Ok(prod.wrapping_sub(self.cons) & self.ring.mask)
    }
}

/// The other side's view of any ring region — what a mock kernel in a test (or a fuzz target)
/// uses to read WQEs, write CQEs and move indices. Bounds-checked: an offset outside the region
/// panics (this is test tooling, never on the data path).
pub trait RingAccess: RingMem {
    /// The header word at `off` (4-aligned, inside the region) as an atomic.
    fn word_u32(&self, off: usize) -> &AtomicU32 {
        assert!(
            off & 3 == 0 && off + 4 <= self.len_bytes(),
            "offset {off} outside the region"
        );
        // SAFETY: in bounds and 4-aligned (asserted; base is 8-aligned per RingMem); the memory
        // is valid while `self` lives (RingMem) and is shared memory, accessed atomically at
        // these offsets by both sides.
        unsafe { &*(self.base().add(off) as *const AtomicU32) }
    }

    /// Atomic load (Acquire) of the u32 at `off` — the other side's view of an index.
    fn load_u32(&self, off: usize) -> u32 {
        self.word_u32(off).load(Ordering::Acquire)
    }

    /// Atomic store (Release) of the u32 at `off` — publish an index, or corrupt a header.
    fn store_u32(&self, off: usize, v: u32) {
        self.word_u32(off).store(v, Ordering::Release)
    }

    /// Copy bytes out of the region. Bounds are checked (panic outside the region).
    ///
    /// # Safety
    /// The bytes must not be written concurrently by anyone else (in the ring protocol: the
    /// caller owns the slot — a mock kernel reads only between consumer and producer).
    unsafe fn read_bytes(&self, off: usize, out: &mut [u8]) {
        assert!(
            off.checked_add(out.len())
                .is_some_and(|e| e <= self.len_bytes()),
            "read outside the region"
        );
        // SAFETY: in bounds (asserted); valid memory (RingMem); no concurrent writer (caller).
        unsafe {
            core::ptr::copy_nonoverlapping(
                self.base().add(off) as *const u8,
                out.as_mut_ptr(),
                out.len(),
            )
        }
    }

    /// Copy bytes into the region. Bounds are checked (panic outside the region).
    ///
    /// # Safety
    /// The bytes must not be accessed concurrently by anyone else (in the ring protocol: the
    /// caller owns the slot).
    unsafe fn write_bytes(&self, off: usize, data: &[u8]) {
        assert!(
            off.checked_add(data.len())
                .is_some_and(|e| e <= self.len_bytes()),
            "write outside the region"
        );
        // SAFETY: in bounds (asserted); RingMem memory is writable through `base()`; no
        // concurrent access (caller).
        unsafe { core::ptr::copy_nonoverlapping(data.as_ptr(), self.base().add(off), data.len()) }
    }

    /// Byte offset of slot `idx & index_mask`, from the header.
    fn slot_offset(&self, idx: u32) -> usize {
        let log2 = self.load_u32(QB_LOG2_ELEM_SIZE);
        let mask = self.load_u32(QB_INDEX_MASK);
        QB_DATA + (((idx & mask) as usize) << log2)
    }

    /// Write a ring header as the kernel does at creation: geometry, indices 0.
    fn init_header(&self, log2: u32, slots: u32) {
        self.store_u32(QB_LOG2_ELEM_SIZE, log2);
        self.store_u32(QB_INDEX_MASK, slots.wrapping_sub(1));
        self.store_u32(QB_PRODUCER_INDEX, 0);
        self.store_u32(QB_CONSUMER_INDEX, 0);
    }
}

impl<M: RingMem> RingAccess for M {}

/// A ring region on the heap, for tests and fuzzing. Cloning shares the memory: the ring owns
/// one clone, a mock kernel another (it plays the other side through [`RingAccess`]).
#[derive(Clone)]
pub struct HeapRing {
    words: Arc<[AtomicU64]>,
}

impl HeapRing {
    /// A zeroed region of `len` bytes (rounded up to 8), header not initialised.
    pub fn zeroed(len: usize) -> Self {
        let n = len.div_ceil(8).max(1);
        HeapRing {
            words: (0..n).map(|_| AtomicU64::new(0)).collect(),
        }
    }

    /// A ring as the kernel creates it: `slots` (a power of two) slots of `1 << log2` bytes,
    /// indices 0.
    pub fn new(log2: u32, slots: u32) -> Self {
        assert!(slots.is_power_of_two(), "slots must be a power of two");
        let r = HeapRing::zeroed(QB_DATA + ((slots as usize) << log2));
        r.init_header(log2, slots);
        r
    }
}

// SAFETY: the pointer comes from the Arc'd slice, which never moves while any clone lives; it is
// 8-aligned (AtomicU64) and valid for len_bytes(); the memory is made of atomics (UnsafeCell), so
// writes through it are allowed while other clones hold shared references.
unsafe impl RingMem for HeapRing {
    fn base(&self) -> *mut u8 {
        self.words.as_ptr() as *const u8 as *mut u8
    }
    fn len_bytes(&self) -> usize {
        self.words.len() * 8
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fill_u64(slot: &mut [u8], v: &u64) -> Result<()> {
        slot[..8].copy_from_slice(&v.to_ne_bytes());
        Ok(())
    }

    #[test]
    fn geometry_is_validated() {
        // Good.
        assert!(Producer::new(HeapRing::new(8, 8), 208, "send queue", "h").is_ok());
        // log2 out of range.
        for log2 in [0u32, 5, 17, 31, 0xffff_ffff] {
            let r = HeapRing::new(6, 4);
            r.store_u32(QB_LOG2_ELEM_SIZE, log2);
            assert!(Producer::new(r, 40, "q", "h").is_err(), "log2 {log2}");
        }
        // mask not 2^n-1, or too big for the mapping.
        for mask in [2u32, 5, 6, 15, 0xffff_ffff] {
            let r = HeapRing::new(6, 8);
            r.store_u32(QB_INDEX_MASK, mask);
            assert!(Consumer::new(r, "cq").is_err(), "mask {mask:#x}");
        }
        // Slots smaller than our WQE header.
        assert!(Producer::new(HeapRing::new(7, 8), 208, "send queue", "h").is_err());
        // Too short for the header.
        assert!(Consumer::new(HeapRing::zeroed(100), "cq").is_err());
        // A nonsense initial index.
        let r = HeapRing::new(6, 8);
        r.store_u32(QB_PRODUCER_INDEX, 8);
        assert!(Producer::new(r, 40, "q", "h").is_err());
        // mask 0: capacity 0, every post is "full".
        let mut p = Producer::new(HeapRing::new(6, 1), 40, "receive queue", "h").unwrap();
        assert_eq!(p.capacity(), 0);
        assert!(p.push_batch(&[1u64], fill_u64).is_err());
    }

    #[test]
    fn full_is_an_error_not_an_overwrite() {
        let mem = HeapRing::new(8, 8);
        let mut p = Producer::new(
            mem.clone(),
            208,
            "send queue",
            "raise -t / poll completions",
        )
        .unwrap();
        assert_eq!(p.capacity(), 7);
        let items: Vec<u64> = (100..110).collect();
        let (i, e) = p.push_batch(&items, fill_u64).unwrap_err();
        assert_eq!(i, 7);
        assert_eq!(e.to_string(), "post to the send queue failed: send queue full: 7 outstanding; raise -t / poll completions");
        assert_eq!(mem.load_u32(QB_PRODUCER_INDEX), 7);
        // Slot 7 (the one that must stay empty) was never written.
        let mut b = [0u8; 8];
        // SAFETY: single-threaded test; the slot is not in use.
        unsafe { mem.read_bytes(mem.slot_offset(7), &mut b) };
        assert_eq!(b, [0u8; 8]);
        // The kernel consumes 3; 3 more fit.
        mem.store_u32(QB_CONSUMER_INDEX, 3);
        assert_eq!(p.outstanding().unwrap(), 4);
        let (i, _) = p.push_batch(&items[..5], fill_u64).unwrap_err();
        assert_eq!(i, 3);
        assert_eq!(mem.load_u32(QB_PRODUCER_INDEX), 2);
    }

    #[test]
    fn push_one_is_push_batch_of_one() {
        // Same slot bytes and index as a batch of one, the same full and corrupt-index errors,
        // and nothing published when the fill refuses.
        let (a, b) = (HeapRing::new(8, 8), HeapRing::new(8, 8));
        let mut pa = Producer::new(a.clone(), 208, "send queue", "raise -t").unwrap();
        let mut pb = Producer::new(b.clone(), 208, "send queue", "raise -t").unwrap();
        for v in 100..107u64 {
            pa.push_one(&v, fill_u64).unwrap();
            pb.push_batch(&[v], fill_u64).unwrap();
            assert_eq!(a.load_u32(QB_PRODUCER_INDEX), b.load_u32(QB_PRODUCER_INDEX));
            let (mut x, mut y) = ([0u8; 256], [0u8; 256]);
            let at = a.slot_offset(pa.producer().wrapping_sub(1) & 7);
            // SAFETY: single-threaded test; the slots are not in use.
            unsafe { a.read_bytes(at, &mut x) };
            // SAFETY: as above.
            unsafe { b.read_bytes(at, &mut y) };
            assert_eq!(x, y);
        }
        let full = pa.push_one(&1u64, fill_u64).unwrap_err();
        let (_, full_b) = pb.push_batch(&[1u64], fill_u64).unwrap_err();
        assert_eq!(full.to_string(), full_b.to_string());
        assert_eq!(full.to_string(), "post to the send queue failed: send queue full: 7 outstanding; raise -t");
        assert_eq!(a.load_u32(QB_PRODUCER_INDEX), 7);
        a.store_u32(QB_CONSUMER_INDEX, 7);
        assert!(pa.push_one(&1u64, |_, _| Err(Error::msg("post", "bad"))).is_err());
        assert_eq!(a.load_u32(QB_PRODUCER_INDEX), 7);
        assert_eq!(pa.producer(), 7);
        a.store_u32(QB_CONSUMER_INDEX, 0xffff_ffff);
        assert!(pa.push_one(&1u64, fill_u64).unwrap_err().to_string().contains("corrupted"));
        assert_eq!(a.load_u32(QB_PRODUCER_INDEX), 7);
        // mask 0: every post is "full"
        let mut p = Producer::new(HeapRing::new(6, 1), 40, "receive queue", "h").unwrap();
        assert!(p.push_one(&1u64, fill_u64).is_err());
    }

    #[test]
    fn fill_error_publishes_only_the_prefix() {
        let mem = HeapRing::new(6, 16);
        let mut p = Producer::new(mem.clone(), 40, "receive queue", "h").unwrap();
        let items = [1u64, 2, 3, 4];
        let r = p.push_batch(&items, |s, v| {
            if *v == 3 {
                Err(Error::msg("post", "bad"))
            } else {
                fill_u64(s, v)
            }
        });
        assert_eq!(r.unwrap_err().0, 2);
        assert_eq!(mem.load_u32(QB_PRODUCER_INDEX), 2);
        assert_eq!(p.producer(), 2);
    }

    #[test]
    fn hostile_indices_are_errors() {
        let mem = HeapRing::new(7, 8);
        let mut c = Consumer::new(mem.clone(), "completion queue").unwrap();
        for bad in [8u32, 9, 0x8000_0000, 0xffff_ffff] {
            mem.store_u32(QB_PRODUCER_INDEX, bad);
            let e = c
                .poll_with(16, |_| panic!("must not read a slot"))
                .unwrap_err();
            assert!(e.to_string().contains("corrupted"), "{e}");
            assert!(c.pending().is_err());
        }
        let mem = HeapRing::new(8, 8);
        let mut p = Producer::new(mem.clone(), 208, "send queue", "h").unwrap();
        mem.store_u32(QB_CONSUMER_INDEX, 0xffff_ffff);
        assert!(p.push_batch(&[1u64], fill_u64).is_err());
        assert!(p.outstanding().is_err());
        assert_eq!(mem.load_u32(QB_PRODUCER_INDEX), 0);
        // Geometry changed under us after creation: we keep using our own copy.
        mem.store_u32(QB_CONSUMER_INDEX, 0);
        mem.store_u32(QB_INDEX_MASK, 0xffff_ffff);
        mem.store_u32(QB_LOG2_ELEM_SIZE, 30);
        p.push_batch(&[1u64, 2], fill_u64).unwrap();
        assert_eq!(p.capacity(), 7);
        assert_eq!(mem.load_u32(QB_PRODUCER_INDEX), 2);
    }

    #[test]
    fn consumer_wraps_and_batches() {
        let mem = HeapRing::new(7, 4);
        let mut c = Consumer::new(mem.clone(), "completion queue").unwrap();
        let mut next = 0u64;
        let mut seen = Vec::new();
        for _round in 0..20 {
            // The mock kernel writes up to 3 CQEs (capacity) then publishes.
            let mut p = mem.load_u32(QB_PRODUCER_INDEX);
            for _ in 0..3 {
                if (p + 1) & 3 == mem.load_u32(QB_CONSUMER_INDEX) {
                    break;
                }
                // SAFETY: single-threaded test; the mock kernel owns slot p.
                unsafe { mem.write_bytes(mem.slot_offset(p), &next.to_ne_bytes()) };
                next += 1;
                p = (p + 1) & 3;
            }
            mem.store_u32(QB_PRODUCER_INDEX, p);
            // Poll in batches of 2.
            while c
                .poll_with(2, |wc| {
                    seen.push(u64::from_ne_bytes(wc[..8].try_into().unwrap()))
                })
                .unwrap()
                > 0
            {}
        }
        assert_eq!(seen, (0..next).collect::<Vec<_>>());
        assert_eq!(next, 60);
    }
}
