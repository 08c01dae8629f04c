//! The small tools people reach for when RDMA does not work: `doctor` ("ping works, RDMA
//! fails"), `devices`/`devinfo` (ibv_devices, ibv_devinfo), `gids` (show_gids), `ibdev2netdev`,
//! `ibstat` (infiniband-diags) and `rping` (rdma-core). A library so that the fuzz targets reach their parsers; the binary dispatches.
//!
//! Each tool reads sysfs into a plain data model and renders text from it, so the text is
//! tested with golden strings and the readers with fake sysfs trees. See docs/tools.md.

#[forbid(unsafe_code)]
pub mod csys;
#[forbid(unsafe_code)]
pub mod devinfo;
pub mod doctor;
#[forbid(unsafe_code)]
pub mod gpu;
#[forbid(unsafe_code)]
pub mod fuzzing;
#[forbid(unsafe_code)]
pub mod gids;
#[forbid(unsafe_code)]
pub mod ibdev2netdev;
#[forbid(unsafe_code)]
pub mod ibstat;
pub mod rping;

#[cfg(test)]
pub mod fake;
