//! The header block's values from the parameters and what the device and the run decided, as a
//! pure function, so that golden tests can build a tool's whole header from a command line
//! (`bench/perftest/tests/persona629_golden.rs`) the same way the running tool does.

use crate::params::{Params, TestKind, Tool};
use crate::report::{self, ReportHeader};

use super::setup::conn_type;

/// What the header needs beyond the parameters: the device and the values the run settled.
#[derive(Clone, Debug, PartialEq)]
pub struct HeaderFacts {
    pub device: String,
    /// `vendor_part_id` of the device (decides `ibv_wr* API`).
    pub vendor_part_id: u32,
    /// RoCE (else InfiniBand).
    pub ethernet: bool,
    pub gid_index: Option<u8>,
    /// `-O`: the second port's GID index.
    pub gid_index2: Option<u8>,
    /// This side runs the test as client (prints TX depth).
    pub is_client: bool,
    pub mtu_bytes: u32,
    pub inline_size: u32,
    pub out_reads: u32,
    /// The NUMA node of the CPU this process runs on (6.29's `NUMA node` line; None omits it).
    pub numa_node: Option<i32>,
}

/// The header of a run with parameters `p` on the device and run described by `f`.
pub fn report_header(p: &Params, f: &HeaderFacts) -> ReportHeader {
    let mut h = ReportHeader::new(p.verb, p.kind == TestKind::Bw, &f.device);
    h.atomic_type = p.atomic_type;
    h.bidirectional = p.duplex;
    h.post_list = p.post_list;
    h.recv_post_list = p.recv_post_list;
    h.events_comp = if p.use_event { Some(p.eq_num.unwrap_or(0) as i32) } else { None };
    h.dual_port = p.dev.dualport;
    h.multicast = p.use_mcg;
    h.num_qps = p.num_qps;
    h.connection = conn_type(p.connection);
    h.use_srq = p.use_srq;
    h.pcie_relax_order = Some(p.tool != Tool::WriteLat && !p.buf.disable_pcie_relaxed);
    // 6.29 (built with thread domains): `--no_lock` turns the lock-free mode on.
    h.lock_free = Some(p.buf.no_lock);
    h.new_post_send = !p.buf.use_old_post_send && report::has_new_post_send(f.vendor_part_id);
    // Enhanced reorder needs mlx5dv support of the device, which rperftest does not ask for.
    h.enhanced_reorder = false;
    h.is_client = f.is_client;
    h.tx_depth = p.tx_depth;
    h.rx_depth = p.rx_depth;
    h.cq_mod = p.cq_mod;
    h.cqe_poll = if p.buf.dynamic_cqe_poll { None } else { Some(p.buf.cqe_poll_batch) };
    h.dci_streams = (p.log_dci_streams, p.log_active_dci_streams);
    h.aes_xts = p.aes.enabled.then(|| (i32::from(p.aes.keys_number), p.aes.block_size()));
    h.mtu_bytes = f.mtu_bytes;
    h.link_type = if f.ethernet { report::LinkType::Ethernet } else { report::LinkType::Ib };
    h.gid_index = f.gid_index.map(i32::from);
    h.gid_index2 = f.gid_index2.map(i32::from);
    h.inline_size = f.inline_size;
    h.out_reads = f.out_reads;
    h.rdma_cm_qps = p.conn.work_rdma_cm;
    h.data_ex_rdma_cm = p.conn.use_rdma_cm;
    // perftest built with ROCm prints `Use ROCm memory : ON|OFF` in every header, one built
    // without it never: we print it where only a ROCm build can run (ROCm memory), so a run
    // without ROCm memory has the header of the usual (CUDA or host-only) build.
    h.rocm_memory = p.buf.gpu.as_ref().is_some_and(|g| g.runtime == crate::gpu::GpuRuntime::Rocm).then_some(true);
    h.tos = p.conn.tos.map(i32::from);
    h.numa_node = f.numa_node;
    h
}

/// The NUMA node of the CPU this thread runs on, as 6.29 finds it: the `node<N>` entry of the
/// CPU's sysfs directory (None where there is none, and 6.29 then prints no NUMA line).
pub fn current_numa_node() -> Option<i32> {
    // SAFETY: sched_getcpu takes no arguments and touches no memory of ours.
    let cpu = unsafe { libc::sched_getcpu() };
    if cpu < 0 {
        return None;
    }
    let dir = std::fs::read_dir(format!("/sys/devices/system/cpu/cpu{cpu}")).ok()?;
    let names: Vec<String> = dir.filter_map(|e| e.ok()).map(|e| e.file_name().to_string_lossy().into_owned()).collect();
    numa_node_in(names.iter().map(String::as_str))
}

/// The first `node<N>` name among a CPU directory's entries.
pub fn numa_node_in<'a>(names: impl IntoIterator<Item = &'a str>) -> Option<i32> {
    names.into_iter().find_map(|n| n.strip_prefix("node").and_then(|d| d.parse::<i32>().ok()).filter(|v| *v >= 0))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numa_node_from_cpu_dir_entries() {
        assert_eq!(numa_node_in(["topology", "cache", "node1", "online"]), Some(1));
        assert_eq!(numa_node_in(["topology", "nodex", "cpufreq"]), None);
        assert_eq!(numa_node_in([]), None);
    }
}
