//! `rperftest ibstat [-l|-s|-p] [CA [PORT]]`: infiniband-diags' `ibstat`, from sysfs.
//!
//! What ibstat (through libibumad) does, and so what this does:
//! - CAs are the entries of `class/infiniband` whose `node_type` is 1..=3 (CA, switch,
//!   router; iWARP devices are left out), sorted by name.
//! - A CA needs `node_type`, `node_guid` and `sys_image_guid`; `fw_ver`, `hw_rev` and
//!   `hca_type` are empty when missing (strings cut at 19, 19 and 39 bytes).
//! - A port needs `lid_mask_count`, `sm_lid`, `sm_sl`, `lid`, `state`, `phys_state`, `rate`,
//!   `cap_mask`, `gids/0` and at least one `pkeys/<n>`; `link_layer` defaults to `IB`. Numbers
//!   are C `strtoul(text, 0)` of the file (so `rate` "2.5 Gb/sec" is 2, printed as `2.5`);
//!   the port GUID is the low 8 bytes of GID 0. A port directory named other than `0` or
//!   1..=9 makes the whole CA unreadable, as in libibumad.
//! - `ibstat CA PORT` prints `CA: 'name'` and the port block without indentation; a
//!   negative PORT prints the whole CA (ibstat tests `portnum >= 0`).
//!
//! Debian 12's ibstat (rdma-core 44) has no `Effective speed:` line, and neither has this.

use std::io::Write;

use uverbs::discovery::SysfsRoot;

use super::csys::{self, read_string, read_uint, sorted_names};

/// libibumad's limit on port numbers (0..=9).
const MAX_PORTS: u32 = 10;

#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Port {
    pub num: u32,
    pub state: u32,
    pub phys_state: u32,
    pub rate: u32,
    /// The `rate` text names FDR10 (printed as `40 (FDR10)`).
    pub fdr10: bool,
    pub base_lid: u32,
    pub lmc: u32,
    pub sm_lid: u32,
    pub capmask: u32,
    pub port_guid: u64,
    pub link_layer: String,
}

#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Ca {
    pub name: String,
    pub node_type: u32,
    pub ca_type: String,
    pub fw_ver: String,
    pub hw_ver: String,
    pub node_guid: u64,
    pub sys_guid: u64,
    /// The highest port number.
    pub numports: u32,
    /// Ascending by number.
    pub ports: Vec<Port>,
}

impl Ca {
    pub fn port(&self, n: u32) -> Option<&Port> {
        self.ports.iter().find(|p| p.num == n)
    }
}

pub fn node_type_word(t: u32) -> &'static str {
    match t {
        1 => "CA",
        2 => "Switch",
        3 => "Router",
        4 => "iWARP RNIC",
        _ => "???",
    }
}

fn state_word(s: u32) -> &'static str {
    match s {
        1 => "Down",
        2 => "Initializing",
        3 => "Armed",
        4 => "Active",
        _ => "???",
    }
}

fn phys_state_word(s: u32) -> &'static str {
    match s {
        0 => "No state change",
        1 => "Sleep",
        2 => "Polling",
        3 => "Disabled",
        4 => "PortConfigurationTraining",
        5 => "LinkUp",
        6 => "LinkErrorRecovery",
        7 => "PhyTest",
        _ => "???",
    }
}

/// The CA header (`-s` prints only this).
pub fn render_ca_header(ca: &Ca) -> String {
    let w = node_type_word(ca.node_type);
    format!(
        "{w} '{}'\n\t{w} type: {}\n\tNumber of ports: {}\n\tFirmware version: {}\n\
         \tHardware version: {}\n\tNode GUID: 0x{:016x}\n\tSystem image GUID: 0x{:016x}\n",
        ca.name, ca.ca_type, ca.numports as i32, ca.fw_ver, ca.hw_ver, ca.node_guid, ca.sys_guid
    )
}

/// One port block; `alone` (for `ibstat CA PORT`) drops the indentation.
pub fn render_port(p: &Port, alone: bool) -> String {
    let (hdr, pre) = if alone { ("", "") } else { ("\t", "\t\t") };
    let rate = if p.fdr10 {
        format!("{} (FDR10)", p.rate as i32)
    } else if p.rate == 2 {
        "2.5".to_string()
    } else {
        format!("{}", p.rate as i32)
    };
    format!(
        "{hdr}Port {}:\n{pre}State: {}\n{pre}Physical state: {}\n{pre}Rate: {rate}\n\
         {pre}Base lid: {}\n{pre}LMC: {}\n{pre}SM lid: {}\n{pre}Capability mask: 0x{:08x}\n\
         {pre}Port GUID: 0x{:016x}\n{pre}Link layer: {}\n",
        p.num,
        state_word(p.state),
        phys_state_word(p.phys_state),
        p.base_lid as i32,
        p.lmc as i32,
        p.sm_lid as i32,
        p.capmask,
        p.port_guid,
        p.link_layer
    )
}

/// A whole CA: header, then every port.
pub fn render_ca(ca: &Ca) -> String {
    let mut s = render_ca_header(ca);
    for p in &ca.ports {
        s.push_str(&render_port(p, false));
    }
    s
}

/// `ibstat CA PORT`.
pub fn render_one_port(ca: &Ca, p: &Port) -> String {
    format!("{}: '{}'\n{}", node_type_word(ca.node_type), ca.name, render_port(p, true))
}

/// `-p`: the non-zero port GUIDs, one `0x%016x` per line.
pub fn render_port_guids(cas: &[Ca]) -> String {
    cas.iter()
        .flat_map(|c| c.ports.iter())
        .filter(|p| p.port_guid != 0)
        .map(|p| format!("0x{:016x}\n", p.port_guid))
        .collect()
}

/// The CA names ibstat lists: node type 1..=3, sorted by bytes.
pub fn list_cas(root: &SysfsRoot) -> Vec<String> {
    sorted_names(&root.ib_class())
        .into_iter()
        .filter(|n| matches!(read_uint(&root.ibdev(n).join("node_type")), Some(1..=3)))
        .collect()
}

fn read_port(root: &SysfsRoot, ca: &str, num: u32) -> Result<Port, String> {
    let dir = root.port(ca, num);
    let need = |name: &str| {
        read_uint(&dir.join(name)).ok_or_else(|| format!("cannot read {}", dir.join(name).display()))
    };
    let lmc = need("lid_mask_count")?;
    let sm_lid = need("sm_lid")?;
    need("sm_sl")?;
    let base_lid = need("lid")?;
    let state = need("state")?;
    let phys_state = need("phys_state")?;
    let rate = need("rate")?;
    let capmask = need("cap_mask")?;
    let link_layer = read_string(&dir.join("link_layer"), 20).unwrap_or_else(|| "IB".into());
    let gid = read_string(&dir.join("gids/0"), 64)
        .and_then(|t| csys::gid_like_libibumad(&t))
        .ok_or_else(|| format!("cannot read GID 0 from {}", dir.join("gids/0").display()))?;
    let pkeys = sorted_names(&dir.join("pkeys"));
    if !pkeys.iter().any(|n| n.bytes().all(|b| b.is_ascii_digit())) {
        return Err(format!("no pkeys found for {ca}:{num} (at dir {})", dir.join("pkeys").display()));
    }
    // ibstat looks for ")" in the rate text and FDR10 just before it.
    let fdr10 = read_string(&dir.join("rate"), 32)
        .and_then(|t| t.find(')').map(|i| t[..i].to_ascii_lowercase().ends_with("fdr10")))
        .unwrap_or(false);
    let mut guid = [0u8; 8];
    guid.copy_from_slice(&gid[8..]);
    Ok(Port {
        num,
        state,
        phys_state,
        rate,
        fdr10,
        base_lid,
        lmc,
        sm_lid,
        capmask,
        port_guid: u64::from_be_bytes(guid),
        link_layer,
    })
}

/// One CA as libibumad's `umad_get_ca` reads it.
pub fn read_ca(root: &SysfsRoot, name: &str) -> Result<Ca, String> {
    let d = root.ibdev(name);
    let node_type = read_uint(&d.join("node_type"))
        .ok_or_else(|| format!("cannot read {}", d.join("node_type").display()))?;
    let guid = |f: &str| {
        read_string(&d.join(f), 32)
            .and_then(|t| csys::guid_like_libibumad(&t))
            .ok_or_else(|| format!("cannot read {}", d.join(f).display()))
    };
    let mut ca = Ca {
        name: name.to_string(),
        node_type,
        fw_ver: read_string(&d.join("fw_ver"), 20).unwrap_or_default(),
        hw_ver: read_string(&d.join("hw_rev"), 20).unwrap_or_default(),
        ca_type: read_string(&d.join("hca_type"), 40).unwrap_or_default(),
        node_guid: guid("node_guid")?,
        sys_guid: guid("sys_image_guid")?,
        ..Ca::default()
    };
    let ports_dir = d.join("ports");
    if !ports_dir.is_dir() {
        return Err(format!("cannot open {}", ports_dir.display()));
    }
    for n in sorted_names(&ports_dir) {
        let num = if n == "0" {
            0
        } else {
            match n.parse::<u32>() {
                Ok(v) if (1..MAX_PORTS).contains(&v) => v,
                _ => return Err(format!("port directory {n:?} in {} is not 0..9", ports_dir.display())),
            }
        };
        ca.ports.push(read_port(root, name, num)?);
        ca.numports = ca.numports.max(num);
    }
    ca.ports.sort_by_key(|p| p.num);
    Ok(ca)
}

#[derive(Debug, Default, PartialEq, Eq)]
struct Opts {
    list: bool,
    short: bool,
    ports: bool,
    help: bool,
    version: bool,
    pos: Vec<String>,
}

const USAGE: &str = "Usage: ibstat [options] <ca_name> [portnum]\n\n\
Options:\n  --list_of_cas, -l       list all IB devices\n  --short, -s             short output\n\
  --port_list, -p         show port list\n  --debug, -d             raise debug level (accepted, no effect)\n\
  --verbose, -v           increase verbosity level (accepted, no effect)\n  --version, -V           show version\n\
  --help, -h              help message\n\nExamples:\n  ibstat -l       # list all IB devices\n\
  ibstat mthca0 2 # stat port 2 of 'mthca0'\n";

/// ibstat's options, getopt style: clustered short flags, long names, operands anywhere,
/// `--` ends the options.
fn parse(args: &[String]) -> Result<Opts, String> {
    let mut o = Opts::default();
    let mut only_operands = false;
    for a in args {
        if only_operands || a == "-" || !a.starts_with('-') {
            o.pos.push(a.clone());
            continue;
        }
        if a == "--" {
            only_operands = true;
            continue;
        }
        if let Some(long) = a.strip_prefix("--") {
            match long {
                "list_of_cas" => o.list = true,
                "short" => o.short = true,
                "port_list" => o.ports = true,
                "help" => o.help = true,
                "version" => o.version = true,
                "debug" | "verbose" => {}
                _ => return Err(format!("unrecognized option '--{long}'")),
            }
            continue;
        }
        for c in a[1..].chars() {
            match c {
                'l' => o.list = true,
                's' => o.short = true,
                'p' => o.ports = true,
                'h' => o.help = true,
                'V' => o.version = true,
                'd' | 'v' => {}
                _ => return Err(format!("invalid option -- '{c}'")),
            }
        }
    }
    if o.pos.len() > 2 {
        return Err(format!("too many operands ({})", o.pos.join(" ")));
    }
    Ok(o)
}

/// C `strtol(text, NULL, 0)` for the port operand (`2`, `0x2`; garbage is 0).
fn port_operand(t: &str) -> i64 {
    let v = bench_core::cparse::strtoul(t, 0);
    v as i64
}

pub fn main_with(root: &SysfsRoot, args: &[String], out: &mut dyn Write, err: &mut dyn Write) -> u8 {
    let o = match parse(args) {
        Ok(o) => o,
        Err(e) => {
            let _ = writeln!(err, "ibstat: {e}; run 'ibstat -h' for the options");
            let _ = write!(err, "{USAGE}");
            return 2;
        }
    };
    if o.help {
        let _ = write!(out, "{USAGE}");
        return 0;
    }
    if o.version {
        let _ = writeln!(out, "ibstat (rperftest {})", env!("CARGO_PKG_VERSION"));
        return 0;
    }
    let all = list_cas(root);
    let chosen: Vec<String> = match o.pos.first() {
        Some(name) => {
            if !all.contains(name) {
                let _ = writeln!(
                    err,
                    "ibstat: '{name}' IB device can't be found (devices: {}); run 'ibstat -l'",
                    if all.is_empty() { "none".into() } else { all.join(", ") }
                );
                return 255;
            }
            vec![name.clone()]
        }
        None => all,
    };
    let port = o.pos.get(1).map(|t| port_operand(t)).unwrap_or(-1);
    let mut text = String::new();
    if o.ports {
        let mut cas = Vec::new();
        for n in &chosen {
            match read_ca(root, n) {
                Ok(c) => cas.push(c),
                Err(e) => {
                    let _ = out.write_all(text.as_bytes());
                    let _ = writeln!(err, "ibstat: can't list ports of '{n}': {e}");
                    return 255;
                }
            }
        }
        text = render_port_guids(&cas);
    } else {
        for n in &chosen {
            if o.list {
                text.push_str(n);
                text.push('\n');
                continue;
            }
            let ca = match read_ca(root, n) {
                Ok(c) => c,
                Err(e) => {
                    let _ = out.write_all(text.as_bytes());
                    let _ = writeln!(err, "ibstat: stat of IB device '{n}' failed: {e}");
                    return 255;
                }
            };
            if ca.node_type == 0 {
                continue;
            }
            if o.short {
                text.push_str(&render_ca_header(&ca));
            } else if port >= 0 {
                match u32::try_from(port).ok().and_then(|p| ca.port(p)) {
                    Some(p) => text.push_str(&render_one_port(&ca, p)),
                    None => {
                        let _ = out.write_all(text.as_bytes());
                        let _ = writeln!(
                            err,
                            "ibstat: {}: '{n}' has no port number {port} - max ({}); run 'ibstat {n}' for its ports",
                            node_type_word(ca.node_type),
                            ca.numports
                        );
                        return 255;
                    }
                }
            } else {
                text.push_str(&render_ca(&ca));
            }
        }
    }
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

    fn s(v: &[&str]) -> Vec<String> {
        v.iter().map(|x| x.to_string()).collect()
    }
    fn run_on(f: &FakeSys, args: &[&str]) -> (u8, String, String) {
        let (mut o, mut e) = (Vec::new(), Vec::new());
        let rc = main_with(&f.root(), &s(args), &mut o, &mut e);
        (rc, String::from_utf8(o).unwrap(), String::from_utf8(e).unwrap())
    }

    const RXE0: &str = "CA 'rxe0'\n\
\tCA type: \n\
\tNumber of ports: 1\n\
\tFirmware version: \n\
\tHardware version: 0\n\
\tNode GUID: 0xfc3c7afffeba5df3\n\
\tSystem image GUID: 0xfc3c7afffeba5df3\n\
\tPort 1:\n\
\t\tState: Active\n\
\t\tPhysical state: LinkUp\n\
\t\tRate: 2.5\n\
\t\tBase lid: 0\n\
\t\tLMC: 0\n\
\t\tSM lid: 0\n\
\t\tCapability mask: 0x00010000\n\
\t\tPort GUID: 0xfc3c7afffeba5df3\n\
\t\tLink layer: Ethernet\n";

    #[test]
    fn whole_ca_golden() {
        let f = FakeSys::new();
        f.rxe("rxe0", "eth0", false);
        assert_eq!(run_on(&f, &[]), (0, RXE0.to_string(), String::new()));
        assert_eq!(run_on(&f, &["rxe0"]).1, RXE0);
    }

    #[test]
    fn one_port_short_list_and_guids() {
        let f = FakeSys::new();
        f.rxe("rxe1", "eth1", false);
        f.rxe("rxe0", "eth0", false);
        f.file("class/infiniband/rxe1/node_guid", "0000:0000:0000:0002\n");
        f.file(
            "class/infiniband/rxe1/ports/1/gids/0",
            "fe80:0000:0000:0000:0000:0000:0000:0002\n",
        );
        // An iWARP device is not listed.
        f.file("class/infiniband/siw0/node_type", "4: RNIC\n");
        let (rc, out, _) = run_on(&f, &["rxe0", "1"]);
        assert_eq!(rc, 0);
        let want = "CA: 'rxe0'\nPort 1:\nState: Active\nPhysical state: LinkUp\nRate: 2.5\n\
Base lid: 0\nLMC: 0\nSM lid: 0\nCapability mask: 0x00010000\nPort GUID: 0xfc3c7afffeba5df3\n\
Link layer: Ethernet\n";
        assert_eq!(out, want);
        assert_eq!(run_on(&f, &["-l"]).1, "rxe0\nrxe1\n");
        assert_eq!(run_on(&f, &["-p"]).1, "0xfc3c7afffeba5df3\n0x0000000000000002\n");
        assert_eq!(run_on(&f, &["-p", "rxe1"]).1, "0x0000000000000002\n");
        let short = run_on(&f, &["-s", "rxe0"]).1;
        assert_eq!(short, RXE0.split("\tPort 1:").next().unwrap());
        // Operands after options and clustered flags, as getopt allows.
        assert_eq!(run_on(&f, &["rxe0", "-s"]).1, short);
        assert_eq!(run_on(&f, &["-ls"]).1, "rxe0\nrxe1\n");
        // A negative port is "no port": the whole CA, as ibstat does.
        assert_eq!(run_on(&f, &["rxe0", "-1"]).0, 2, "-1 is an option to getopt");
        assert_eq!(run_on(&f, &["--", "rxe0", "-1"]).1, RXE0);
    }

    #[test]
    fn rates_and_states() {
        let p = Port { num: 2, state: 1, phys_state: 3, rate: 40, fdr10: true, link_layer: "InfiniBand".into(), base_lid: 7, sm_lid: 1, lmc: 0, capmask: 0x2651e848, port_guid: 0x0002c903000e0b72 };
        let t = render_port(&p, false);
        assert!(t.starts_with("\tPort 2:\n\t\tState: Down\n\t\tPhysical state: Disabled\n\t\tRate: 40 (FDR10)\n\t\tBase lid: 7\n"));
        assert!(t.contains("\t\tCapability mask: 0x2651e848\n\t\tPort GUID: 0x0002c903000e0b72\n\t\tLink layer: InfiniBand\n"));
        let p = Port { state: 9, phys_state: 9, rate: 100, fdr10: false, ..p };
        let t = render_port(&p, true);
        assert!(t.contains("State: ???\nPhysical state: ???\nRate: 100\n"), "{t}");
        let f = FakeSys::new();
        f.rxe("rxe0", "eth0", false);
        f.file("class/infiniband/rxe0/ports/1/rate", "56 Gb/sec (4X FDR10)\n");
        f.file("class/infiniband/rxe0/ports/1/state", "1: DOWN\n");
        f.file("class/infiniband/rxe0/ports/1/phys_state", "3: Disabled\n");
        let ca = read_ca(&f.root(), "rxe0").unwrap();
        assert_eq!((ca.ports[0].rate, ca.ports[0].fdr10, ca.ports[0].state, ca.ports[0].phys_state), (56, true, 1, 3));
    }

    #[test]
    fn errors_are_one_line_and_nonzero() {
        let f = FakeSys::new();
        f.rxe("rxe0", "eth0", false);
        let (rc, out, err) = run_on(&f, &["mlx5_0"]);
        assert_eq!((rc, out.as_str()), (255, ""));
        assert!(err.contains("'mlx5_0' IB device can't be found (devices: rxe0)"), "{err}");
        let (rc, _, err) = run_on(&f, &["rxe0", "2"]);
        assert_eq!(rc, 255);
        assert!(err.contains("CA: 'rxe0' has no port number 2 - max (1)"), "{err}");
        let (rc, _, err) = run_on(&f, &["-x"]);
        assert_eq!(rc, 2);
        assert!(err.starts_with("ibstat: invalid option -- 'x'"), "{err}");
        assert_eq!(run_on(&f, &["a", "b", "c"]).0, 2);
        std::fs::remove_file(f.path("class/infiniband/rxe0/ports/1/pkeys/0")).unwrap();
        let (rc, _, err) = run_on(&f, &["rxe0"]);
        assert_eq!(rc, 255);
        assert!(err.contains("stat of IB device 'rxe0' failed: no pkeys found for rxe0:1"), "{err}");
        f.file("class/infiniband/rxe0/ports/1/pkeys/0", "0xffff\n");
        f.dir("class/infiniband/rxe0/ports/12");
        assert!(read_ca(&f.root(), "rxe0").unwrap_err().contains("not 0..9"));
        // No devices at all: nothing, exit 0, as ibstat.
        let empty = FakeSys::new();
        assert_eq!(run_on(&empty, &[]), (0, String::new(), String::new()));
    }
}
