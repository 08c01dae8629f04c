//! What GPUDirect RDMA depends on, read from sysfs and /proc as plain values: the PCI tree
//! between each GPU and each RDMA NIC and its `nvidia-smi topo -m` class (`pci`, `topo`), the
//! ACS control of the bridges on those paths (`acs`), and the IOMMU mode, GPU driver, peer
//! memory module and dma-buf support of the host (`host`). Every reader takes its roots as
//! values, so the tests run them over fake trees built like real machines (`crate::fake`).
//! `doctor --gpu` turns them into checks; `matrix-probe` reports the GPU nearest each NIC.

pub mod acs;
pub mod host;
pub mod pci;
pub mod topo;

#[cfg(test)]
mod tests;
