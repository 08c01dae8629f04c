//! The BlueFlame register lock: one per bfreg, taken around every doorbell.

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

/// Per-bfreg state: the BlueFlame half toggle, under a lock because medium-latency bfregs may be
/// shared by QPs driven from different threads (the lock also keeps one doorbell's stores and
/// its flush together).
///
/// The lock is a test-and-set spin lock rather than a `std::sync::Mutex`: the critical section
/// is a handful of stores and two `sfence`s and never blocks, so there is no reason to sleep,
/// and the toggle is a single word that is valid at every instant, so there is nothing to poison
/// (the guard still unlocks if a bug assertion inside unwinds); uncontended it costs one
/// `lock cmpxchg` and one plain store (the `Mutex` added an unlock RMW and two
/// `thread::panicking()` poison checks per ring).
/// Memory ordering:
/// - taking the lock is an `Acquire` compare-exchange, releasing it a `Release` store; they
///   synchronise, so the `offset` toggle (accessed `Relaxed`, only while holding the lock) that
///   one holder stored is the value the next holder loads, whichever thread either runs on;
/// - the MMIO stores of the previous holder were pushed out of the write-combining buffer by its
///   `flush()` (`sfence`) before its `Release` unlock store, which our `Acquire` observed: its
///   doorbell / BlueFlame block reaches the register before ours (what libmlx5's bf lock gives);
/// - the critical section's volatile stores and fences cannot move out of it: nothing after an
///   `Acquire` load moves before it, nothing before a `Release` store moves after it.
pub(super) struct BfReg {
    locked: AtomicBool,
    /// Offset of the half the next doorbell uses (0 or `bf_reg_size / 2`); only touched while
    /// holding `locked`.
    pub(super) offset: AtomicUsize,
}

impl BfReg {
    pub(super) fn new() -> Self {
        BfReg { locked: AtomicBool::new(false), offset: AtomicUsize::new(0) }
    }

    #[inline(always)]
    pub(super) fn lock(&self) -> BfGuard<'_> {
        if self
            .locked
            .compare_exchange_weak(false, true, Ordering::Acquire, Ordering::Relaxed)
            .is_err()
        {
            self.lock_contended();
        }
        BfGuard(self)
    }

    #[cold]
    #[inline(never)]
    fn lock_contended(&self) {
        let mut spins = 0u32;
        loop {
            // Test before test-and-set: spin on a plain load so the line stays shared.
            while self.locked.load(Ordering::Relaxed) {
                spins = spins.wrapping_add(1);
                if spins.is_multiple_of(64) {
                    // The holder may have been preempted: let it run.
                    std::thread::yield_now();
                } else {
                    std::hint::spin_loop();
                }
            }
            if self
                .locked
                .compare_exchange_weak(false, true, Ordering::Acquire, Ordering::Relaxed)
                .is_ok()
            {
                return;
            }
        }
    }
}

/// Holds a [`BfReg`]'s lock; dropping it releases the lock (`Release` store).
pub(super) struct BfGuard<'a>(&'a BfReg);

impl Drop for BfGuard<'_> {
    #[inline(always)]
    fn drop(&mut self) {
        self.0.locked.store(false, Ordering::Release);
    }
}
