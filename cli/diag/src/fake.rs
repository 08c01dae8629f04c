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
