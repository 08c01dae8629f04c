//! CPU pinning for the length of one request, as REQ's affinity asks (client and server alike).

use super::ctrl::CtrlError;

/// CPU pinning for the length of one request (REQ.affinity N pins to CPU N-1), undone after.
pub struct Pin(Option<nix::sched::CpuSet>);

impl Pin {
    pub fn new(affinity: u32) -> Result<Pin, CtrlError> {
        use nix::sched::{sched_getaffinity, sched_setaffinity, CpuSet};
        use nix::unistd::Pid;
        if affinity == 0 {
            return Ok(Pin(None));
        }
        let cpu = (affinity - 1) as usize;
        let old = sched_getaffinity(Pid::from_raw(0)).ok();
        let mut set = CpuSet::new();
        set.set(cpu)
            .and_then(|_| sched_setaffinity(Pid::from_raw(0), &set))
            .map_err(|e| CtrlError::Local(format!("cannot set processor affinity (cpu {cpu}): {e}")))?;
        Ok(Pin(old))
    }
}

impl Drop for Pin {
    fn drop(&mut self) {
        if let Some(old) = &self.0 {
            let _ = nix::sched::sched_setaffinity(nix::unistd::Pid::from_raw(0), old);
        }
    }
}
