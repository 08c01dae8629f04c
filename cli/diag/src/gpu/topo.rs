//! The distance between two PCI functions as `nvidia-smi topo -m` names it. Its legend:
//! PIX "traversing at most a single PCIe bridge", PXB "multiple PCIe bridges (without
//! traversing the PCIe Host Bridge)", PHB "traversing PCIe as well as a PCIe Host Bridge",
//! NODE "the interconnect between PCIe Host Bridges within a NUMA node", SYS "the SMP
//! interconnect between NUMA nodes". A PCIe switch is one upstream and several downstream
//! ports, each a bridge in sysfs, and counts as the one bridge of PIX (as NCCL's topology,
//! which walks the sysfs path two levels per switch): a GPU and a NIC on two downstream ports
//! of one switch are PIX, behind two levels of switches PXB.

use super::pci::{PciDev, PciPath};

#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Link {
    Pix,
    Pxb,
    Phb,
    Node,
    Sys,
}

impl Link {
    pub fn name(self) -> &'static str {
        match self {
            Link::Pix => "PIX",
            Link::Pxb => "PXB",
            Link::Phb => "PHB",
            Link::Node => "NODE",
            Link::Sys => "SYS",
        }
    }
    pub fn parse(s: &str) -> Option<Link> {
        [Link::Pix, Link::Pxb, Link::Phb, Link::Node, Link::Sys]
            .into_iter()
            .find(|l| l.name() == s)
    }
    /// What the path crosses, in words.
    pub fn meaning(self) -> &'static str {
        match self {
            Link::Pix => "one PCIe switch",
            Link::Pxb => "several PCIe switches, not the host bridge",
            Link::Phb => "the CPU's PCIe host bridge",
            Link::Node => "two host bridges of one NUMA node",
            Link::Sys => "the socket interconnect between NUMA nodes",
        }
    }
    /// Whether peer-to-peer traffic stays below the root complex (where ACS redirection
    /// would send it up instead).
    pub fn below_root(self) -> bool {
        matches!(self, Link::Pix | Link::Pxb)
    }
}

/// How many leading bridges two paths share.
fn common(a: &[String], b: &[String]) -> usize {
    a.iter().zip(b).take_while(|(x, y)| x == y).count()
}

/// Same NUMA node: equal, or both unknown (-1: a one-node host, or firmware that says nothing).
fn same_node(a: i32, b: i32) -> bool {
    a == b
}

pub fn classify(a: &PciDev, b: &PciDev) -> Link {
    if a.path.root != b.path.root {
        return if same_node(a.numa, b.numa) {
            Link::Node
        } else {
            Link::Sys
        };
    }
    let (ab, bb) = (a.path.bridges(), b.path.bridges());
    let k = common(ab, bb);
    if k == 0 {
        // Two root ports of one host bridge.
        return Link::Phb;
    }
    // The bridges crossed: those below the last shared one on each side, and that one. A
    // switch (downstream, upstream, downstream port) is three.
    let crossed = (ab.len() - k) + (bb.len() - k) + 1;
    if crossed <= 3 {
        Link::Pix
    } else {
        Link::Pxb
    }
}

/// The bridges a transfer between `a` and `b` passes, below the host bridge: both sides up to
/// and including the last shared bridge, or every bridge of both when none is shared.
pub fn bridges_between(a: &PciPath, b: &PciPath) -> Vec<String> {
    let (ab, bb) = (a.bridges(), b.bridges());
    let k = if a.root == b.root { common(ab, bb) } else { 0 };
    let mut v: Vec<String> = ab[k.saturating_sub(1)..].to_vec();
    v.extend(bb[k..].iter().cloned());
    v
}
