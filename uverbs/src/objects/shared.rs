//! The "unique owner + shared inner" pattern of CQs and SRQs.

use std::cell::UnsafeCell;
use std::mem::ManuallyDrop;
use std::sync::Arc;

/// A kernel object whose destroy command must run before its provider state is dropped.
pub(super) trait KernelObject {
    fn destroy(&self);
}

/// The "unique owner + shared inner" pattern of CQs and SRQs: the kernel object's immutable
/// facts (`meta`) are shared (QPs hold an `Arc` that keeps the kernel object alive), while the
/// provider state is reached only through the one owning handle (by `&mut`) or by the final
/// `Drop`, which destroys the kernel object first and then drops the provider state.
pub(super) struct Shared<M: KernelObject, S> {
    pub(super) meta: M,
    state: UnsafeCell<ManuallyDrop<S>>,
}

// SAFETY: `state` is reached only from the unique owner (by `&mut`, see `state_mut`) or from
// `Drop` of the last reference; other holders read only `meta`, which is `Sync`.
unsafe impl<M: KernelObject + Sync, S: Send> Sync for Shared<M, S> {}
// SAFETY: as above; moving the inner between threads moves an `S: Send` and an `M: Send`.
unsafe impl<M: KernelObject + Send, S: Send> Send for Shared<M, S> {}

impl<M: KernelObject, S> Shared<M, S> {
    pub(super) fn new(meta: M, state: S) -> Arc<Self> {
        Arc::new(Shared { meta, state: UnsafeCell::new(ManuallyDrop::new(state)) })
    }

    /// The provider state.
    ///
    /// # Safety
    /// Only the unique owning handle may call this, through its own `&mut self`, so that no two
    /// `&mut S` exist at once.
    #[allow(clippy::mut_from_ref)]
    #[inline]
    pub(super) unsafe fn state_mut(&self) -> &mut S {
        // SAFETY: exclusivity is the caller's contract (see above).
        unsafe { &mut *self.state.get() }
    }
}

impl<M: KernelObject, S> Shared<M, S> {
    /// The provider state, read-only.
    ///
    /// # Safety
    /// Only the unique owning handle may call this, through its own `&self`: while that borrow
    /// lives the owner cannot be borrowed mutably, so no `&mut S` exists alongside.
    #[inline]
    pub(super) unsafe fn state_ref(&self) -> &S {
        // SAFETY: no `&mut S` can coexist (the caller's contract, see above).
        unsafe { &*self.state.get() }
    }
}

impl<M: KernelObject, S> Drop for Shared<M, S> {
    fn drop(&mut self) {
        self.meta.destroy();
        // SAFETY: dropped exactly once, here, after the kernel object is gone; this is the last
        // reference.
        unsafe { ManuallyDrop::drop(self.state.get_mut()) };
    }
}
