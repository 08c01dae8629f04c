//! `rperftest gids [DEV] [--json]`: the GID table as Mellanox's `show_gids` prints it.
//!
//! show_gids walks `class/infiniband/<dev>/ports/<p>/gids/<i>` in `ls` order (names sorted as
//! text, so index 10 comes before 2), skips the all-zero GID and the bare link-local prefix
//! `fe80::`, and prints per GID: device, port, index, the GID text as sysfs has it, the IPv4
//! address for GIDs whose first group is `0000` (decoded from the last two groups), the version
//! (`v1`/`v2`: the type text from its first `v`) and the netdev. Columns are tab-separated,
//! the IPv4 column followed by two spaces, and the last line counts the rows.

use std::io::Write;

use clap::{Arg, ArgAction, Command};
use uverbs::discovery::SysfsRoot;

use super::csys::{read_string, sorted_names};

const ZERO_GID: &str = "0000:0000:0000:0000:0000:0000:0000:0000";
const BARE_LINK_LOCAL: &str = "fe80:0000:0000:0000:0000:0000:0000:0000";

/// One row of the table: names exactly as sysfs spells them.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct GidRow {
    pub dev: String,
    pub port: String,
    pub index: String,
    /// The GID file's text (39 characters when the kernel wrote it).
    pub gid: String,
    /// `v1`, `v2`, or empty when the type is unknown.
    pub ver: String,
    /// The netdev, or empty.
    pub netdev: String,
}

impl GidRow {
    /// The IPv4 address show_gids prints: only for GIDs whose first group is `0000`, from the
    /// text at the offsets of the last two groups.
    pub fn ipv4(&self) -> Option<String> {
        if self.gid.split(':').next() != Some("0000") {
            return None;
        }
        let byte = |at: usize| {
            self.gid
                .get(at..at + 2)
                .and_then(|h| u8::from_str_radix(h, 16).ok())
                .unwrap_or(0)
        };
        Some(format!("{}.{}.{}.{}", byte(30), byte(32), byte(35), byte(37)))
    }
}

/// The version word from a `gid_attrs/types/<i>` text: from its first `v` or `V` on.
pub fn version_word(type_text: &str) -> String {
    let t = type_text.split_whitespace().collect::<Vec<_>>().join(" ");
    match t.find(['v', 'V']) {
        Some(i) => t[i..].to_string(),
        None => String::new(),
    }
}

/// Every row for `dev` (or every device), in show_gids' order. Unreadable GID files are left
/// out (show_gids would print a broken row for them).
pub fn read_rows(root: &SysfsRoot, dev: Option<&str>) -> Vec<GidRow> {
    let devs = match dev {
        Some(d) => vec![d.to_string()],
        None => sorted_names(&root.ib_class()),
    };
    let mut rows = Vec::new();
    for d in devs {
        let ports_dir = root.ibdev(&d).join("ports");
        for p in sorted_names(&ports_dir) {
            let pdir = ports_dir.join(&p);
            for i in sorted_names(&pdir.join("gids")) {
                let gid = match read_string(&pdir.join("gids").join(&i), 64) {
                    Some(g) => g.trim().to_string(),
                    None => continue,
                };
                if gid == ZERO_GID || gid == BARE_LINK_LOCAL {
                    continue;
                }
                let attr = |kind: &str| {
                    read_string(&pdir.join("gid_attrs").join(kind).join(&i), 256)
                        .unwrap_or_default()
                };
                rows.push(GidRow {
                    dev: d.clone(),
                    port: p.clone(),
                    index: i.clone(),
                    gid,
                    ver: version_word(&attr("types")),
                    netdev: attr("ndevs").trim().to_string(),
                });
            }
        }
    }
    rows
}

/// show_gids' text: two header lines, one line per row, `n_gids_found=N`.
pub fn render_table(rows: &[GidRow]) -> String {
    let mut s = String::from("DEV\tPORT\tINDEX\tGID\t\t\t\t\tIPv4  \t\tVER\tDEV\n");
    s.push_str("---\t----\t-----\t---\t\t\t\t\t------------  \t---\t---\n");
    for r in rows {
        let ip = match r.ipv4() {
            Some(a) => format!("{a}  "),
            None => "\t".to_string(),
        };
        s.push_str(&format!(
            "{}\t{}\t{}\t{}\t{}\t{}\t{}\n",
            r.dev, r.port, r.index, r.gid, ip, r.ver, r.netdev
        ));
    }
    s.push_str(&format!("n_gids_found={}\n", rows.len()));
    s
}

/// The same rows as JSON: `{"gids": [{dev, port, index, gid, ipv4, ver, netdev}], "n_gids_found"}`.
pub fn render_json(rows: &[GidRow]) -> String {
    let num_or_text = |t: &str| match t.parse::<u64>() {
        Ok(n) => serde_json::Value::from(n),
        Err(_) => serde_json::Value::from(t),
    };
    let v: Vec<serde_json::Value> = rows
        .iter()
        .map(|r| {
            serde_json::json!({
                "dev": r.dev,
                "port": num_or_text(&r.port),
                "index": num_or_text(&r.index),
                "gid": r.gid,
                "ipv4": r.ipv4(),
                "ver": r.ver,
                "netdev": r.netdev,
            })
        })
        .collect();
    let doc = serde_json::json!({ "gids": v, "n_gids_found": rows.len() });
    format!("{}\n", serde_json::to_string_pretty(&doc).unwrap_or_default())
}

fn cli() -> Command {
    Command::new("rperftest gids")
        .about("the GID table of every RDMA port, as show_gids prints it (from sysfs)")
        .arg(Arg::new("dev").help("only this RDMA device (default: every device)"))
        .arg(
            Arg::new("json")
                .long("json")
                .action(ArgAction::SetTrue)
                .help("print JSON instead of the table"),
        )
}

/// `gids` with its sysfs root and outputs injected.
pub fn main_with(root: &SysfsRoot, args: &[String], out: &mut dyn Write, err: &mut dyn Write) -> u8 {
    let m = match cli_args::parse(cli(), "gids", args, out, err) {
        Ok(m) => m,
        Err(code) => return code,
    };
    let dev = m.get_one::<String>("dev").map(String::as_str);
    if let Some(d) = dev {
        if !root.ibdev(d).is_dir() {
            let have = sorted_names(&root.ib_class());
            let _ = writeln!(
                err,
                "rperftest gids: no RDMA device {d:?} (devices: {}); run 'rperftest gids' for all",
                if have.is_empty() { "none".to_string() } else { have.join(", ") }
            );
            return 1;
        }
    }
    let rows = read_rows(root, dev);
    let text = if m.get_flag("json") { render_json(&rows) } else { render_table(&rows) };
    let _ = out.write_all(text.as_bytes());
    0
}

pub fn run(args: &[String]) -> u8 {
    main_with(&SysfsRoot::system(), args, &mut std::io::stdout(), &mut std::io::stderr())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fake::FakeSys;

    fn row(dev: &str, idx: &str, gid: &str, ver: &str, nd: &str) -> GidRow {
        GidRow {
            dev: dev.into(),
            port: "1".into(),
            index: idx.into(),
            gid: gid.into(),
            ver: ver.into(),
            netdev: nd.into(),
        }
    }

    #[test]
    fn table_golden() {
        let rows = [
            row("mlx5_0", "0", "fe80:0000:0000:0000:ba59:9fff:fe1c:2a3e", "v1", "ens1f0"),
            row("mlx5_0", "3", "0000:0000:0000:0000:0000:ffff:ac13:003c", "v2", "ens1f0"),
        ];
        let want = "DEV\tPORT\tINDEX\tGID\t\t\t\t\tIPv4  \t\tVER\tDEV\n\
                    ---\t----\t-----\t---\t\t\t\t\t------------  \t---\t---\n\
                    mlx5_0\t1\t0\tfe80:0000:0000:0000:ba59:9fff:fe1c:2a3e\t\t\tv1\tens1f0\n\
                    mlx5_0\t1\t3\t0000:0000:0000:0000:0000:ffff:ac13:003c\t172.19.0.60  \tv2\tens1f0\n\
                    n_gids_found=2\n";
        assert_eq!(render_table(&rows), want);
        assert_eq!(render_table(&[]).lines().last(), Some("n_gids_found=0"));
    }

    #[test]
    fn versions_and_ipv4() {
        assert_eq!(version_word("RoCE v2"), "v2");
        assert_eq!(version_word("IB/RoCE v1"), "v1");
        assert_eq!(version_word("IB"), "");
        assert_eq!(version_word(""), "");
        let r = row("x", "1", "0000:0000:0000:0000:0000:ffff:0a63:0001", "v2", "e");
        assert_eq!(r.ipv4().as_deref(), Some("10.99.0.1"));
        // Short or odd text: no panic, zeros as printf would give.
        let r = row("x", "1", "0000:zz", "v2", "e");
        assert_eq!(r.ipv4().as_deref(), Some("0.0.0.0"));
        let r = row("x", "1", "fe80:0000:0000:0000:0000:0000:0000:0001", "v2", "e");
        assert_eq!(r.ipv4(), None);
    }

    #[test]
    fn reads_fake_sysfs_in_ls_order() {
        let f = FakeSys::new();
        f.rxe("rxe0", "eth0", true);
        // An entry past 9 sorts before 2 as show_gids' `ls` sorts it.
        f.file(
            "class/infiniband/rxe0/ports/1/gids/10",
            "fe80:0000:0000:0000:0000:0000:0000:0000\n",
        );
        f.file(
            "class/infiniband/rxe0/ports/1/gids/11",
            "0000:0000:0000:0000:0000:ffff:0a63:0002\n",
        );
        let rows = read_rows(&f.root(), None);
        let idx: Vec<&str> = rows.iter().map(|r| r.index.as_str()).collect();
        assert_eq!(idx, ["0", "1", "11", "4", "5"]);
        assert_eq!(rows[1].ver, "v2");
        assert_eq!(rows[1].netdev, "eth0");
        assert_eq!(rows[2].ver, "", "no types file: empty version");
        assert_eq!(rows[4].ver, "v1");
        let mut o = Vec::new();
        let mut e = Vec::new();
        assert_eq!(main_with(&f.root(), &["rxe0".into()], &mut o, &mut e), 0);
        let t = String::from_utf8(o).unwrap();
        assert!(t.contains("rxe0\t1\t1\t0000:0000:0000:0000:0000:ffff:0a63:0001\t10.99.0.1  \tv2\teth0\n"));
        assert!(t.ends_with("n_gids_found=5\n"));
    }

    #[test]
    fn json_and_errors() {
        let f = FakeSys::new();
        f.rxe("rxe0", "eth0", false);
        let (mut o, mut e) = (Vec::new(), Vec::new());
        assert_eq!(main_with(&f.root(), &["--json".into()], &mut o, &mut e), 0);
        let v: serde_json::Value = serde_json::from_slice(&o).unwrap();
        assert_eq!(v["n_gids_found"], 2);
        assert_eq!(v["gids"][1]["ipv4"], "10.99.0.1");
        assert_eq!(v["gids"][1]["index"], 1);
        assert_eq!(v["gids"][0]["ipv4"], serde_json::Value::Null);
        let (mut o, mut e) = (Vec::new(), Vec::new());
        assert_eq!(main_with(&f.root(), &["mlx5_9".into()], &mut o, &mut e), 1);
        let msg = String::from_utf8(e).unwrap();
        assert!(msg.contains("no RDMA device \"mlx5_9\" (devices: rxe0)"), "{msg}");
        let (mut o, mut e) = (Vec::new(), Vec::new());
        assert_eq!(main_with(&f.root(), &["--bogus".into()], &mut o, &mut e), 2);
    }
}
