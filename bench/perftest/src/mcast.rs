//! Multicast send tests (`-g/--mcg`, `-M/--MGID`) as perftest 6.06 runs them on RoCE: no SA
//! join; the receiving QP is attached to the group with ATTACH_MCAST, its key message carries
//! the group (MGID, MLID 0, QPN 0xFFFFFF) and the sender's UD address handle points at the
//! MGID (docs/perftest-wire.md, "Multicast keys"; perftest's send_bw.c / send_lat.c /
//! multicast_resources.c).

use crate::params::{Params, Role, Tool};

/// The QPN a multicast key message carries (and the UD destination QPN of multicast sends).
pub const QPN_MCAST: u32 = 0xff_ffff;

/// perftest's default group, `ff01:0:0:2:c985::` (the client adds one to the last byte).
pub const DEFAULT_MGID: [u8; 16] = [255, 1, 0, 0, 0, 2, 201, 133, 0, 0, 0, 0, 0, 0, 0, 0];

/// The group this side attaches to (and advertises): `-M`'s value, else the default group,
/// whose last byte the client increments (so that with `send_lat` each side has its own).
pub fn group_gid(user: Option<[u8; 16]>, tcp_client: bool) -> [u8; 16] {
    match user {
        Some(g) => g,
        None => {
            let mut g = DEFAULT_MGID;
            if tcp_client {
                g[15] = g[15].wrapping_add(1);
            }
            g
        }
    }
}

/// `-M` text: 16 numbers separated by `:`, each as C's `strtoll(…, 0)` reads it (decimal,
/// `0x` hex, leading-`0` octal), each 0–255, e.g. `255:1:0:0:0:2:201:133:0:0:0:0:0:0:0:0`.
pub fn parse_mgid(text: &str) -> Result<[u8; 16], String> {
    let bad = |why: String| {
        Err(format!(
            " -M/--MGID {text:?}: {why}; give 16 byte values separated by ':', e.g. -M 255:1:0:0:0:2:201:133:0:0:0:0:0:0:0:1"
        ))
    };
    let fields: Vec<&str> = text.split(':').collect();
    if fields.len() != 16 {
        return bad(format!("has {} fields, not 16", fields.len()));
    }
    let mut g = [0u8; 16];
    for (i, f) in fields.iter().enumerate() {
        let t = f.trim();
        let v = if let Some(h) = t.strip_prefix("0x").or_else(|| t.strip_prefix("0X")) {
            u32::from_str_radix(h, 16)
        } else if t.len() > 1 && t.starts_with('0') {
            u32::from_str_radix(&t[1..], 8)
        } else {
            t.parse::<u32>()
        };
        match v {
            Ok(v) if v <= 255 => g[i] = v as u8,
            _ => return bad(format!("field {} ({f:?}) is not a number from 0 to 255", i + 1)),
        }
    }
    Ok(g)
}

/// Whether this side attaches its QPs to a group: send_bw's receiver (the server; both sides
/// only with `-b`, which multicast refuses), send_lat's both sides.
pub fn attaches(p: &Params) -> bool {
    p.use_mcg && (p.tool == Tool::SendLat || p.duplex || !p.is_tcp_client())
}

/// perftest labels an address line's GID `MGID` when that side's key carries a group as this
/// side sees it: the local line on the server, the remote line on the client (or both with
/// `-b`). Note send_lat's client labels its own (group) GID `GID`, as 6.06 does.
pub fn gid_label_is_mgid(p: &Params, remote: bool) -> bool {
    let server = p.machine == Role::Server;
    p.use_mcg && (p.duplex || (remote && !server) || (!remote && server))
}

/// perftest's `ctx_check_gid_compatibility`: both GIDs IPv4-mapped, or neither.
pub fn gid_types_compatible(mine: &[u8; 16], remote: &[u8; 16]) -> bool {
    is_v4mapped(mine) == is_v4mapped(remote)
}

fn is_v4mapped(g: &[u8; 16]) -> bool {
    g[..10].iter().all(|&b| b == 0) && g[10] == 0xff && g[11] == 0xff
}

/// perftest's lines (stderr) when the GID families differ; the run then ends with status 1.
pub const GID_INCOMPATIBLE: &str = "\n Found Incompatibility issue with GID types.\n Please Try to use a different IP version.\n";

/// `-g` on an InfiniBand port: perftest joins the group through the subnet administrator
/// (umad MADs), which rperftest does not implement.
pub const IB_LINK_REFUSED: &str =
    " -g/--mcg is not supported by rperftest on an InfiniBand link: joining the group needs the subnet administrator (umad), which rperftest does not implement; multicast works on RoCE (Ethernet link layer)";

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn default_group_and_client_increment() {
        assert_eq!(group_gid(None, false), DEFAULT_MGID);
        let c = group_gid(None, true);
        assert_eq!(c[15], 1);
        assert_eq!(c[..15], DEFAULT_MGID[..15]);
        let user = [7u8; 16];
        assert_eq!(group_gid(Some(user), true), user);
        assert_eq!(group_gid(Some(user), false), user);
    }

    #[test]
    fn mgid_text_as_strtoll_base_0() {
        assert_eq!(parse_mgid("255:1:0:0:0:2:201:133:0:0:0:0:0:0:0:0").unwrap(), DEFAULT_MGID);
        let g = parse_mgid("0:0:0:0:0:0:0:0:0:0:0xff:0XFF:239:1:2:010").unwrap();
        assert_eq!(g[10..], [255, 255, 239, 1, 2, 8]);
        for bad in ["", "1:2:3", "255:1:0:0:0:2:201:133:0:0:0:0:0:0:0:0:0", "256:1:0:0:0:2:201:133:0:0:0:0:0:0:0:0", "x:1:0:0:0:2:201:133:0:0:0:0:0:0:0:0", "ff02::1", "-1:1:0:0:0:2:201:133:0:0:0:0:0:0:0:0"] {
            let e = parse_mgid(bad).unwrap_err();
            assert!(e.starts_with(" -M/--MGID") && e.contains("16 byte values") && !e.contains('\n'), "{bad}: {e}");
        }
    }

    #[test]
    fn gid_families() {
        let v4 = [0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 255, 255, 10, 99, 0, 1];
        let v4mc = [0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 255, 255, 239, 1, 2, 3];
        let ll = [0xfe, 0x80, 0, 0, 0, 0, 0, 0, 1, 2, 3, 4, 5, 6, 7, 8];
        assert!(gid_types_compatible(&v4, &v4mc));
        assert!(gid_types_compatible(&ll, &DEFAULT_MGID));
        assert!(!gid_types_compatible(&v4, &DEFAULT_MGID));
    }

    #[test]
    fn messages_are_perftests_or_one_line() {
        assert!(IB_LINK_REFUSED.starts_with(" -g/--mcg is not supported by rperftest") && !IB_LINK_REFUSED.contains('\n'));
        assert_eq!(GID_INCOMPATIBLE.trim_end(), "\n Found Incompatibility issue with GID types.\n Please Try to use a different IP version.");
    }

    fn params(t: Tool, args: &[&str]) -> Box<Params> {
        let a: Vec<String> = args.iter().map(|s| s.to_string()).collect();
        match crate::params::parse(t, &a) {
            Ok(crate::params::ParseOutcome::Run(p)) => p,
            _ => panic!("{args:?} does not parse"),
        }
    }

    #[test]
    fn who_attaches_and_labels() {
        let sbw_server = params(Tool::SendBw, &["-g"]);
        let sbw_client = params(Tool::SendBw, &["-g", "10.0.0.1"]);
        let slat_client = params(Tool::SendLat, &["-g", "10.0.0.1"]);
        let plain = params(Tool::SendBw, &[]);
        assert!(attaches(&sbw_server));
        assert!(!attaches(&sbw_client));
        assert!(attaches(&slat_client));
        assert!(!attaches(&plain));
        // server: local MGID, remote GID; client: local GID, remote MGID.
        assert!(gid_label_is_mgid(&sbw_server, false) && !gid_label_is_mgid(&sbw_server, true));
        assert!(!gid_label_is_mgid(&slat_client, false) && gid_label_is_mgid(&slat_client, true));
        assert!(!gid_label_is_mgid(&plain, false) && !gid_label_is_mgid(&plain, true));
        // -g forces UD and leaves the GID index to the automatic choice (as 6.06 on RoCE).
        assert_eq!(sbw_server.connection, crate::params::Connection::Ud);
        assert_eq!(sbw_server.dev.gid_index, None);
    }
}
