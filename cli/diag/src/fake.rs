//! A fake sysfs tree in a private temporary directory, removed on drop (tests only).

use std::path::PathBuf;
use std::sync::atomic::{AtomicUsize, Ordering};

use uverbs::discovery::SysfsRoot;

pub struct FakeSys {
    dir: PathBuf,
}

static SEQ: AtomicUsize = AtomicUsize::new(0);

impl FakeSys {
    pub fn new() -> FakeSys {
        let dir = std::env::temp_dir().join(format!(
            "rperftest-fakesys-{}-{}",
            std::process::id(),
            SEQ.fetch_add(1, Ordering::Relaxed)
        ));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        FakeSys { dir }
    }
    pub fn root(&self) -> SysfsRoot {
        SysfsRoot::new(&self.dir)
    }
    pub fn path(&self, rel: &str) -> PathBuf {
        self.dir.join(rel)
    }
    /// Write `rel` (parents created) with `text`.
    pub fn file(&self, rel: &str, text: &str) {
        let p = self.dir.join(rel);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(p, text).unwrap();
    }
    pub fn dir(&self, rel: &str) {
        std::fs::create_dir_all(self.dir.join(rel)).unwrap();
    }
    /// An rxe device `ibdev` on `netdev` with one port, as the kernel writes its attributes:
    /// GID 0 the link-local one, GID 1 the IPv4 10.99.0.1 RoCE v2 one, 2 and 3 empty, and
    /// the v1 twins at 4 and 5 where `with_v1`.
    pub fn rxe(&self, ibdev: &str, netdev: &str, with_v1: bool) {
        let d = format!("class/infiniband/{ibdev}");
        self.file(&format!("{d}/node_type"), "1: CA\n");
        self.file(&format!("{d}/node_guid"), "fc3c:7aff:feba:5df3\n");
        self.file(&format!("{d}/sys_image_guid"), "fc3c:7aff:feba:5df3\n");
        self.file(&format!("{d}/fw_ver"), "\n");
        self.file(&format!("{d}/hw_rev"), "0\n");
        self.file(&format!("{d}/parent"), &format!("{netdev}\n"));
        let p = format!("{d}/ports/1");
        for (k, v) in [
            ("state", "4: ACTIVE"),
            ("phys_state", "5: LinkUp"),
            ("rate", "2.5 Gb/sec (1X SDR)"),
            ("lid", "0x0"),
            ("lid_mask_count", "0"),
            ("sm_lid", "0x0"),
            ("sm_sl", "0"),
            ("cap_mask", "0x00010000"),
            ("link_layer", "Ethernet"),
            ("pkeys/0", "0xffff"),
        ] {
            self.file(&format!("{p}/{k}"), &format!("{v}\n"));
        }
        let mut gids = vec![
            ("fe80:0000:0000:0000:fc3c:7aff:feba:5df3", "RoCE v2"),
            ("0000:0000:0000:0000:0000:ffff:0a63:0001", "RoCE v2"),
            ("0000:0000:0000:0000:0000:0000:0000:0000", ""),
            ("0000:0000:0000:0000:0000:0000:0000:0000", ""),
        ];
        if with_v1 {
            gids.push(("fe80:0000:0000:0000:fc3c:7aff:feba:5df3", "IB/RoCE v1"));
            gids.push(("0000:0000:0000:0000:0000:ffff:0a63:0001", "IB/RoCE v1"));
        }
        for (i, (g, t)) in gids.iter().enumerate() {
            self.file(&format!("{p}/gids/{i}"), &format!("{g}\n"));
            if !t.is_empty() {
                self.file(&format!("{p}/gid_attrs/types/{i}"), &format!("{t}\n"));
                self.file(&format!("{p}/gid_attrs/ndevs/{i}"), &format!("{netdev}\n"));
            }
        }
        self.file(&format!("class/net/{netdev}/carrier"), "1\n");
        self.file(&format!("class/net/{netdev}/mtu"), "1500\n");
    }

    /// What `doctor` reads besides the device: the uverbs class entry and device nodes of
    /// `ibdev` (under `dev/`), the netdev's operstate, and /proc (under `proc/`) for a process
    /// with an 8 MiB memlock limit, no capabilities, on CPU 2, no hugepages.
    pub fn doctor_host(&self, ibdev: &str, netdev: &str) {
        self.file("class/infiniband_verbs/uverbs0/ibdev", &format!("{ibdev}\n"));
        self.file("class/infiniband_verbs/uverbs0/abi_version", "1\n");
        self.file(&format!("class/net/{netdev}/operstate"), "up\n");
        self.file("dev/infiniband/uverbs0", "");
        self.file("dev/infiniband/rdma_cm", "");
        self.file(
            "proc/self/limits",
            "Limit                     Soft Limit           Hard Limit           Units     \n\
             Max open files            1024                 524288               files     \n\
             Max locked memory         8388608              8388608              bytes     \n",
        );
        self.file("proc/self/status", "Name:\tdoctor\nUid:\t1000\t1000\t1000\t1000\nCapEff:\t0000000000000000\n");
        let mut stat = String::from("4242 (rperftest doc) R");
        for f in 4..=38 {
            stat.push_str(&format!(" {f}"));
        }
        stat.push_str(" 2 0 0\n");
        self.file("proc/self/stat", &stat);
        self.file("proc/meminfo", "MemTotal:       4000000 kB\nHugePages_Total:       0\nHugePages_Free:        0\nHugepagesize:       2048 kB\n");
    }
}

impl FakeSys {
    /// A symlink `rel` -> `target` (parents of `rel` created).
    pub fn link(&self, rel: &str, target: &str) {
        let p = self.dir.join(rel);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        let _ = std::fs::remove_file(&p);
        std::os::unix::fs::symlink(target, p).unwrap();
    }

    /// A PCI function at `path` under /sys/devices (`pci0000:00/0000:00:01.1/0000:01:00.0`):
    /// its vendor, class and numa_node files as the kernel writes them (`0x10de`, `0x030200`,
    /// `0`), its 64-byte config space (what a non-root reader gets), and the
    /// /sys/bus/pci/devices symlink, relative as the kernel makes it.
    pub fn pci(&self, path: &str, vendor: u16, class: u32, numa: i32) {
        let bdf = path.rsplit('/').next().unwrap();
        let d = format!("devices/{path}");
        self.file(&format!("{d}/vendor"), &format!("0x{vendor:04x}\n"));
        self.file(&format!("{d}/class"), &format!("0x{class:06x}\n"));
        self.file(&format!("{d}/numa_node"), &format!("{numa}\n"));
        self.bytes(&format!("{d}/config"), &[0u8; 64]);
        self.link(&format!("bus/pci/devices/{bdf}"), &format!("../../../devices/{path}"));
    }

    /// Write `rel` with `data`.
    pub fn bytes(&self, rel: &str, data: &[u8]) {
        let p = self.dir.join(rel);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(p, data).unwrap();
    }

    /// The PCI bridges of `path` (every function but the last) as bridges (class 0x060400,
    /// PLX/Broadcom's vendor 0x10b5 below the root port, the CPU's 0x8086 for it).
    pub fn pci_with_bridges(&self, path: &str, vendor: u16, class: u32, numa: i32) {
        let comps: Vec<&str> = path.split('/').collect();
        for i in 1..comps.len() - 1 {
            let v = if i == 1 { 0x8086 } else { 0x10b5 };
            self.pci(&comps[..=i].join("/"), v, 0x060400, numa);
        }
        self.pci(path, vendor, class, numa);
    }

    /// An RDMA device `ibdev` on the PCI function at `path` (its `device` link).
    pub fn ib_on_pci(&self, ibdev: &str, path: &str) {
        self.file(&format!("class/infiniband/{ibdev}/node_type"), "1: CA\n");
        self.link(&format!("class/infiniband/{ibdev}/device"), &format!("../../../devices/{path}"));
    }

    /// The two-socket GPU host of the GDR tests, laid out as DGX-style servers are: GPUs and
    /// NICs behind PLX/Broadcom switches on each socket, some behind two switch levels.
    ///
    /// Socket 0 (node 0), host bridge pci0000:00, root port 00:01.1 to switch 01:00.0, whose
    /// downstream ports 02:00.0 and 02:04.0 lead to second-level switches 03:00.0 (ports
    /// 04:00.0: GPU0 07:00.0, 04:08.0: mlx5_0 0c:00.0) and 05:00.0 (port 06:00.0: GPU1
    /// 0f:00.0); root port 00:03.1 to mlx5_1 20:00.0. Host bridge pci0000:40 (node 0): root
    /// port 40:01.1 to mlx5_3 41:00.0. Socket 1 (node 1), pci0000:80: root port 80:01.1 to
    /// switch 81:00.0, ports 82:00.0 (GPU2 83:00.0) and 82:04.0 (mlx5_2 84:00.0). And rxe0,
    /// which has no PCI function.
    pub fn gpu_host(&self) {
        const GPU: u32 = 0x030200;
        const IB: u32 = 0x020700;
        let s0 = "pci0000:00/0000:00:01.1/0000:01:00.0";
        self.pci_with_bridges(&format!("{s0}/0000:02:00.0/0000:03:00.0/0000:04:00.0/0000:07:00.0"), 0x10de, GPU, 0);
        self.pci_with_bridges(&format!("{s0}/0000:02:00.0/0000:03:00.0/0000:04:08.0/0000:0c:00.0"), 0x15b3, IB, 0);
        self.pci_with_bridges(&format!("{s0}/0000:02:04.0/0000:05:00.0/0000:06:00.0/0000:0f:00.0"), 0x10de, GPU, 0);
        self.pci_with_bridges("pci0000:00/0000:00:03.1/0000:20:00.0", 0x15b3, IB, 0);
        self.pci_with_bridges("pci0000:40/0000:40:01.1/0000:41:00.0", 0x15b3, IB, 0);
        self.pci_with_bridges("pci0000:80/0000:80:01.1/0000:81:00.0/0000:82:00.0/0000:83:00.0", 0x10de, GPU, 1);
        self.pci_with_bridges("pci0000:80/0000:80:01.1/0000:81:00.0/0000:82:04.0/0000:84:00.0", 0x15b3, IB, 1);
        // The BMC's VGA (ASPEED) is not a GPU.
        self.pci_with_bridges("pci0000:00/0000:00:1c.0/0000:30:00.0", 0x1a03, 0x030000, 0);
        self.ib_on_pci("mlx5_0", &format!("{s0}/0000:02:00.0/0000:03:00.0/0000:04:08.0/0000:0c:00.0"));
        self.ib_on_pci("mlx5_1", "pci0000:00/0000:00:03.1/0000:20:00.0");
        self.ib_on_pci("mlx5_2", "pci0000:80/0000:80:01.1/0000:81:00.0/0000:82:04.0/0000:84:00.0");
        self.ib_on_pci("mlx5_3", "pci0000:40/0000:40:01.1/0000:41:00.0");
        self.file("class/infiniband/rxe0/node_type", "1: CA\n");
    }

    /// Config space (4096 bytes, as root reads it) of a switch downstream port whose extended
    /// capabilities are AER at 0x100, a vendor-specific one at 0x148 and ACS at 0xf24, with
    /// ACS capability `cap` and control `ctl`.
    pub fn acs_config(cap: u16, ctl: u16) -> Vec<u8> {
        let mut c = vec![0u8; 4096];
        c[..4].copy_from_slice(&[0xb5, 0x10, 0x96, 0xc0]);
        let mut hdr = |at: usize, id: u16, ver: u32, next: u32| {
            let h = u32::from(id) | (ver << 16) | (next << 20);
            c[at..at + 4].copy_from_slice(&h.to_le_bytes());
        };
        hdr(0x100, 0x0001, 2, 0x148);
        hdr(0x148, 0x000b, 1, 0xf24);
        hdr(0xf24, 0x000d, 1, 0);
        c[0xf28..0xf2a].copy_from_slice(&cap.to_le_bytes());
        c[0xf2a..0xf2c].copy_from_slice(&ctl.to_le_bytes());
        c
    }
}

impl Default for FakeSys {
    fn default() -> Self {
        FakeSys::new()
    }
}

impl Drop for FakeSys {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}
