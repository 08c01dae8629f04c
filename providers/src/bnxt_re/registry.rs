//! Our QP handle → the QP's state that CQ polling needs. The device copies the handle we gave
//! CREATE_QP into every completion of the QP; libbnxt_re gives a pointer and follows it, we
//! give a number and look it up, so a wrong or stale handle finds nothing instead of memory.

use std::collections::HashMap;
use std::sync::{Arc, RwLock};

use super::shared::QpShared;

#[derive(Default)]
pub struct Registry {
    qps: RwLock<HashMap<u64, Arc<QpShared>>>,
}

impl Registry {
    pub fn insert(&self, handle: u64, qp: Arc<QpShared>) {
        self.qps
            .write()
            .unwrap_or_else(|e| e.into_inner())
            .insert(handle, qp);
    }
    pub fn remove(&self, handle: u64) {
        self.qps
            .write()
            .unwrap_or_else(|e| e.into_inner())
            .remove(&handle);
    }
    pub fn get(&self, handle: u64) -> Option<Arc<QpShared>> {
        if handle == 0 {
            return None;
        }
        self.qps
            .read()
            .unwrap_or_else(|e| e.into_inner())
            .get(&handle)
            .cloned()
    }
}
