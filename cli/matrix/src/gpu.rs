//! `matrix --gpu auto|N`: each side's perftest works on a GPU's memory, `--use_cuda=<idx>`
//! (NVIDIA) or `--use_rocm=<idx>` (AMD). `auto` gives each rail's NIC the GPU nearest it by
//! PCIe distance, as Mellanox's ngc_multinode_perf pairs them (its `get_cudas_per_rdma_device`
//! takes the NIC's row of `nvidia-smi topo -mp` and the first GPU at PIX, else the first at
//! PXB); here the nearest class wins (PIX, PXB, PHB, NODE, SYS), the lowest index on a tie,
//! and a pair farther than PXB is still run, its class recorded. `N` uses GPU N on every node.
//!
//! The distances come from each node: `matrix-probe` adds to each device the class of its path
//! to every GPU of the node ([`probe_links`], from sysfs through `diag::gpu`), and the choice is
//! made here, recorded per side in results.jsonl and listed in the report.

use std::collections::{BTreeMap, BTreeSet};

use diag::gpu::pci;
use diag::gpu::topo::{self, Link};
use serde_json::{json, Value};
use uverbs::discovery::SysfsRoot;

/// A NIC's path to one GPU of its node, as the probe reports it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct GpuLink {
    /// The GPU's index among its vendor's GPUs in PCI order (nvidia-smi's; CUDA's with
    /// CUDA_DEVICE_ORDER=PCI_BUS_ID).
    pub index: usize,
    /// `nvidia` or `amd`.
    pub vendor: String,
    pub bdf: String,
    /// `PIX`, `PXB`, `PHB`, `NODE` or `SYS`.
    pub link: String,
}

impl GpuLink {
    pub fn to_json(&self) -> Value {
        json!({"i": self.index, "vendor": self.vendor, "bdf": self.bdf, "link": self.link})
    }
    pub fn from_json(v: &Value) -> Option<GpuLink> {
        let s = |k: &str| v.get(k).and_then(Value::as_str).map(str::to_string);
        Some(GpuLink {
            index: usize::try_from(v.get("i")?.as_u64()?).ok()?,
            vendor: s("vendor")?,
            bdf: s("bdf")?,
            link: s("link")?,
        })
    }
}

/// Every RDMA device's links to every GPU of this node (devices without a PCI function, such
/// as rxe, and nodes without a GPU have none).
pub fn probe_links(sys: &SysfsRoot) -> BTreeMap<String, Vec<GpuLink>> {
    let gpus = pci::gpus(sys);
    pci::nics(sys)
        .into_iter()
        .map(|n| {
            let v = gpus
                .iter()
                .map(|g| GpuLink {
                    index: g.index,
                    vendor: g.vendor.name().into(),
                    bdf: g.dev.bdf.clone(),
                    link: topo::classify(&g.dev, &n.dev).name().into(),
                })
                .collect();
            (n.ibdev, v)
        })
        .collect()
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum GpuMode {
    Auto,
    Index(usize),
}

pub fn parse_mode(s: &str) -> Result<GpuMode, String> {
    match s {
        "auto" => Ok(GpuMode::Auto),
        n => n
            .parse()
            .map(GpuMode::Index)
            .map_err(|_| format!("--gpu {n:?}: auto, or a GPU index (0, 1, ...)")),
    }
}

/// The options the matrix sets itself with `--gpu`, which the user may not give.
pub fn own_option(opt: &str) -> bool {
    ["--use_cuda", "--use_rocm"]
        .iter()
        .any(|p| opt.starts_with(p))
}

/// The GPU one side uses.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Pick {
    pub gpu: GpuLink,
}

impl Pick {
    /// The perftest option: `--use_cuda=0` or `--use_rocm=0`.
    pub fn option(&self) -> String {
        let flag = if self.gpu.vendor == "amd" {
            "--use_rocm"
        } else {
            "--use_cuda"
        };
        format!("{flag}={}", self.gpu.index)
    }
    /// `GPU0 (0000:07:00.0, PIX)`.
    pub fn label(&self) -> String {
        let v = if self.gpu.vendor == "amd" {
            "AMD GPU"
        } else {
            "GPU"
        };
        format!(
            "{v}{} ({}, {})",
            self.gpu.index, self.gpu.bdf, self.gpu.link
        )
    }
    pub fn to_json(&self) -> Value {
        self.gpu.to_json()
    }
    pub fn from_json(v: &Value) -> Option<Pick> {
        GpuLink::from_json(v).map(|gpu| Pick { gpu })
    }
}

/// The GPU a NIC with `links` uses under `mode`, or why there is none.
pub fn choose(mode: GpuMode, dev: &str, links: &[GpuLink]) -> Result<Pick, String> {
    if links.is_empty() {
        return Err(format!(
            "no GPU for {dev} (--gpu): the node has no GPU, or {dev} is not a PCI device"
        ));
    }
    let pick = match mode {
        // Nearer first (a class this build does not know, from a newer probe, last), then
        // NVIDIA before AMD, then the lower index.
        GpuMode::Auto => links.iter().min_by_key(|l| {
            let k = Link::parse(&l.link);
            (k.is_none(), k, l.vendor != "nvidia", l.index)
        }),
        GpuMode::Index(n) => links
            .iter()
            .filter(|l| l.index == n)
            .min_by_key(|l| l.vendor != "nvidia"),
    };
    match pick {
        Some(g) => Ok(Pick { gpu: g.clone() }),
        None => {
            let have: BTreeSet<usize> = links.iter().map(|l| l.index).collect();
            Err(format!(
                "no GPU {} on the node for {dev} (--gpu; GPUs: {})",
                match mode {
                    GpuMode::Index(n) => n.to_string(),
                    GpuMode::Auto => "?".into(),
                },
                have.iter()
                    .map(usize::to_string)
                    .collect::<Vec<_>>()
                    .join(", ")
            ))
        }
    }
}

/// The report's lines: which GPU went with which NIC on each node, from the sides recorded.
pub fn pairing_lines<'a>(sides: impl Iterator<Item = (&'a str, &'a str, &'a Pick)>) -> Vec<String> {
    let mut seen: BTreeMap<(String, String), BTreeSet<String>> = BTreeMap::new();
    for (node, dev, p) in sides {
        seen.entry((node.to_string(), dev.to_string()))
            .or_default()
            .insert(p.label());
    }
    if seen.is_empty() {
        return Vec::new();
    }
    let mut out = vec!["GPU per NIC (--gpu):".to_string()];
    out.extend(seen.into_iter().map(|((node, dev), g)| {
        format!(
            "  {node} {dev}: {}",
            g.into_iter().collect::<Vec<_>>().join(", ")
        )
    }));
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn l(i: usize, link: &str) -> GpuLink {
        GpuLink {
            index: i,
            vendor: "nvidia".into(),
            bdf: format!("0000:{:02x}:00.0", 7 + i),
            link: link.into(),
        }
    }

    #[test]
    fn auto_takes_the_nearest_then_the_lowest_index() {
        // A DGX-style NIC: its own switch's GPU, then the other switch level, then the far socket.
        let row = [l(0, "PXB"), l(1, "PIX"), l(2, "SYS"), l(3, "PIX")];
        let p = choose(GpuMode::Auto, "mlx5_0", &row).unwrap();
        assert_eq!(
            (p.gpu.index, p.option(), p.label()),
            (
                1,
                "--use_cuda=1".to_string(),
                "GPU1 (0000:08:00.0, PIX)".to_string()
            )
        );
        // No PIX/PXB GPU (ngc_multinode_perf would refuse): the nearest still runs, named.
        let far = [l(0, "SYS"), l(1, "NODE"), l(2, "NODE")];
        assert_eq!(
            choose(GpuMode::Auto, "mlx5_3", &far).unwrap().label(),
            "GPU1 (0000:08:00.0, NODE)"
        );
        // A class from a newer probe sorts last.
        let odd = [l(0, "NV12"), l(1, "SYS")];
        assert_eq!(choose(GpuMode::Auto, "x", &odd).unwrap().gpu.index, 1);
        let e = choose(GpuMode::Auto, "rxe0", &[]).unwrap_err();
        assert!(e.starts_with("no GPU for rxe0 (--gpu)"), "{e}");
    }

    #[test]
    fn a_fixed_index_and_amd() {
        let row = [l(0, "PXB"), l(1, "PIX")];
        assert_eq!(
            choose(GpuMode::Index(0), "mlx5_0", &row).unwrap().gpu.link,
            "PXB"
        );
        assert_eq!(
            choose(GpuMode::Index(5), "mlx5_0", &row).unwrap_err(),
            "no GPU 5 on the node for mlx5_0 (--gpu; GPUs: 0, 1)"
        );
        let amd = GpuLink {
            index: 0,
            vendor: "amd".into(),
            bdf: "0000:c1:00.0".into(),
            link: "PIX".into(),
        };
        let p = choose(GpuMode::Auto, "mlx5_0", std::slice::from_ref(&amd)).unwrap();
        assert_eq!(
            (p.option(), p.label()),
            (
                "--use_rocm=0".to_string(),
                "AMD GPU0 (0000:c1:00.0, PIX)".to_string()
            )
        );
        assert_eq!(Pick::from_json(&p.to_json()), Some(p));
        assert_eq!(parse_mode("auto"), Ok(GpuMode::Auto));
        assert_eq!(parse_mode("3"), Ok(GpuMode::Index(3)));
        assert!(parse_mode("-1").is_err() && parse_mode("gpu0").is_err());
        assert!(
            own_option("--use_cuda=1")
                && own_option("--use_rocm")
                && !own_option("--use_hugepages")
        );
    }

    #[test]
    fn the_report_names_each_nodes_gpu_per_nic() {
        let a = Pick { gpu: l(0, "PIX") };
        let b = Pick { gpu: l(2, "PXB") };
        let sides = vec![
            ("n1", "mlx5_0", &a),
            ("n2", "mlx5_0", &b),
            ("n1", "mlx5_0", &a),
        ];
        assert_eq!(
            pairing_lines(sides.into_iter()),
            [
                "GPU per NIC (--gpu):",
                "  n1 mlx5_0: GPU0 (0000:07:00.0, PIX)",
                "  n2 mlx5_0: GPU2 (0000:09:00.0, PXB)"
            ]
        );
        assert!(pairing_lines(std::iter::empty()).is_empty());
    }
}
