//! GID tables from sysfs, GID text, and perftest's automatic GID index choice.

use std::fmt::Write as _;

use crate::attr::{gid_is_ipv4, gid_is_link_local, GidEntry, GidType, LINK_LAYER_ETHERNET};
use crate::error::{Error, Result};

use super::sysfs::{parse_gid_bytes, parse_gid_type, read_attr, read_attr_into, SysfsRoot};

/// Read every non-empty GID of `port` from `ports/<port>/gids/*`, with its type and netdev.
///
/// The table is walked by index over the entries `gids/` holds (1024 on rxe); each file is read
/// into a stack buffer and all-zero entries are skipped before touching `gid_attrs`. A missing
/// `gid_attrs` directory (old kernels) means IB / RoCE v1 for every entry.
pub fn read_gid_table(
    root: &SysfsRoot,
    ibdev: &str,
    port: u32,
    link_layer: u8,
) -> Result<Vec<GidEntry>> {
    let p = root.port(ibdev, port);
    let gids = p.join("gids");
    let count = std::fs::read_dir(&gids)
        .map_err(|e| super::sysfs::io_err("list", &gids, e))?
        .count();
    let types_dir = p.join("gid_attrs/types");
    let ndevs_dir = p.join("gid_attrs/ndevs");
    let have_types = types_dir.is_dir();
    let default_type = if link_layer == LINK_LAYER_ETHERNET {
        GidType::RoceV1
    } else {
        GidType::Ib
    };
    let mut out = Vec::new();
    let mut buf = [0u8; 64];
    let mut path = gids.clone();
    for i in 0..count {
        path.push(i.to_string());
        let read = read_attr_into(&path, &mut buf);
        path.pop();
        let gid = match read {
            Ok(b) => match parse_gid_bytes(b) {
                Some(g) => g,
                None => {
                    return Err(Error::msg(
                        format!("parse {}/{i}", gids.display()),
                        format!("not a GID: {:?}", String::from_utf8_lossy(b)),
                    ))
                }
            },
            // A hole in the numbering, or an entry the kernel refuses: not a valid GID.
            Err(_) => continue,
        };
        if gid == [0u8; 16] {
            continue;
        }
        let idx = i.to_string();
        let gid_type = if have_types {
            match read_attr(&types_dir.join(&idx)) {
                Ok(t) => parse_gid_type(&t, link_layer)?,
                // EINVAL while the entry is being replaced: treat as the default type.
                Err(_) => default_type,
            }
        } else {
            default_type
        };
        let netdev = read_attr(&ndevs_dir.join(&idx))
            .ok()
            .filter(|s| !s.is_empty());
        out.push(GidEntry {
            index: i as u32,
            port,
            gid,
            gid_type,
            netdev,
        });
    }
    Ok(out)
}

/// IPv6 text exactly as glibc's `inet_ntop(AF_INET6)` writes it (which `ibv_devinfo` prints):
/// lower-case hex, the first longest run of two or more zero groups as `::`, and the embedded
/// IPv4 form for `::a.b.c.d` and `::ffff:a.b.c.d`.
pub fn format_ipv6(g: &[u8; 16]) -> String {
    let mut w = [0u16; 8];
    for (i, x) in w.iter_mut().enumerate() {
        *x = u16::from_be_bytes([g[2 * i], g[2 * i + 1]]);
    }
    // First longest run of zero words.
    let (mut best_base, mut best_len) = (usize::MAX, 0usize);
    let (mut cur_base, mut cur_len) = (usize::MAX, 0usize);
    for (i, &x) in w.iter().enumerate() {
        if x == 0 {
            if cur_base == usize::MAX {
                cur_base = i;
                cur_len = 1;
            } else {
                cur_len += 1;
            }
        } else if cur_base != usize::MAX {
            if cur_len > best_len {
                best_base = cur_base;
                best_len = cur_len;
            }
            cur_base = usize::MAX;
        }
    }
    if cur_base != usize::MAX && cur_len > best_len {
        best_base = cur_base;
        best_len = cur_len;
    }
    if best_len < 2 {
        best_base = usize::MAX;
    }
    let mut s = String::with_capacity(46);
    let mut i = 0;
    while i < 8 {
        if best_base != usize::MAX && i >= best_base && i < best_base + best_len {
            if i == best_base {
                s.push(':');
            }
            i += 1;
            continue;
        }
        if i != 0 {
            s.push(':');
        }
        if i == 6 && best_base == 0 && (best_len == 6 || (best_len == 5 && w[5] == 0xffff)) {
            let _ = write!(s, "{}.{}.{}.{}", g[12], g[13], g[14], g[15]);
            return s;
        }
        let _ = write!(s, "{:x}", w[i]);
        i += 1;
    }
    if best_base != usize::MAX && best_base + best_len == 8 {
        s.push(':');
    }
    s
}

/// Eight groups of four hex digits (`fe80:0000:...`), the sysfs and RoCE v1 form.
pub fn format_gid_hex(g: &[u8; 16]) -> String {
    let mut s = String::with_capacity(39);
    for (i, pair) in g.chunks(2).enumerate() {
        if i > 0 {
            s.push(':');
        }
        let _ = write!(s, "{:02x}{:02x}", pair[0], pair[1]);
    }
    s
}

/// Which of perftest's rules to apply.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum GidRule {
    /// perftest ≥ 6.29: score each non-empty entry (+100 preferred family, +10 not link-local,
    /// +1 RoCE v1 / +2 RoCE v2); the highest score wins, ties keep the lower index.
    #[default]
    Scored,
    /// perftest 6.06 (Debian's): walk from index 0, switching to a later entry of the preferred
    /// family, or of the same family with a higher RoCE version. (6.06 also walks empty slots
    /// and can land on one with `--ipv6`; here they are skipped.)
    Walk606,
}

/// The chosen GID and why.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct GidChoice {
    pub index: u32,
    pub entry: GidEntry,
    /// One line: e.g. `GID index 1: RoCE v2, IPv4 10.99.0.1 on rxedummy0 (preferred: RoCE v2 +
    /// IPv4; index 0 is RoCE v2 IPv6 link-local)`.
    pub reason: String,
}

fn roce_rate(t: GidType) -> u32 {
    match t {
        GidType::Ib | GidType::RoceV1 => 1,
        GidType::RoceV2 => 2,
    }
}

fn score(e: &GidEntry, prefer_ipv6: bool) -> u32 {
    let v4 = e.is_ipv4();
    let mut s = 0;
    if v4 != prefer_ipv6 {
        s += 100;
    }
    if !gid_is_link_local(&e.gid) {
        s += 10;
    }
    s + roce_rate(e.gid_type)
}

/// Describe a GID in words: `RoCE v2, IPv4 10.99.0.1 on rxedummy0`.
pub fn describe(e: &GidEntry) -> String {
    let mut s = format!("{}, ", e.gid_type);
    if gid_is_ipv4(&e.gid) {
        let _ = write!(
            s,
            "IPv4 {}.{}.{}.{}",
            e.gid[12], e.gid[13], e.gid[14], e.gid[15]
        );
    } else {
        let _ = write!(s, "IPv6 {}", format_ipv6(&e.gid));
    }
    if gid_is_link_local(&e.gid) {
        s.push_str(" (link-local)");
    }
    if let Some(n) = &e.netdev {
        let _ = write!(s, " on {n}");
    }
    s
}

fn short_kind(e: &GidEntry) -> String {
    format!(
        "{} {}{}",
        e.gid_type,
        if gid_is_ipv4(&e.gid) { "IPv4" } else { "IPv6" },
        if gid_is_link_local(&e.gid) {
            " link-local"
        } else {
            ""
        }
    )
}

/// perftest's automatic GID choice for a RoCE port, over the valid entries of one port
/// (`entries` in any order; empty GIDs are ignored). `None` if the port has no valid GID.
/// On an InfiniBand port perftest does not choose a GID at all (no GRH without `-x`).
pub fn select_gid(entries: &[GidEntry], prefer_ipv6: bool, rule: GidRule) -> Option<GidChoice> {
    let mut v: Vec<&GidEntry> = entries.iter().filter(|e| e.gid != [0u8; 16]).collect();
    v.sort_by_key(|e| e.index);
    let first = *v.first()?;
    let chosen: &GidEntry = match rule {
        GidRule::Scored => {
            let mut best = first;
            for e in &v[1..] {
                if score(e, prefer_ipv6) > score(best, prefer_ipv6) {
                    best = e;
                }
            }
            best
        }
        GidRule::Walk606 => {
            let mut cur = first;
            for e in &v[1..] {
                let (a, b) = (cur.is_ipv4(), e.is_ipv4());
                // Switch to the preferred family; within one family, to a higher RoCE version.
                let to_preferred = (b && !a && !prefer_ipv6) || (!b && a && prefer_ipv6);
                let better_version = a == b && roce_rate(e.gid_type) > roce_rate(cur.gid_type);
                if to_preferred || better_version {
                    cur = e;
                }
            }
            cur
        }
    };
    let fam = if prefer_ipv6 { "IPv6" } else { "IPv4" };
    let mut why = if chosen.is_ipv4() != prefer_ipv6 {
        format!("preferred: {} + {fam}", chosen.gid_type)
    } else {
        format!("no {fam} GID; best of the rest")
    };
    let others: Vec<String> = v
        .iter()
        .filter(|e| e.index != chosen.index)
        .take(4)
        .map(|e| format!("index {} is {}", e.index, short_kind(e)))
        .collect();
    if !others.is_empty() {
        why.push_str("; ");
        why.push_str(&others.join(", "));
        let rest = v.len().saturating_sub(1 + others.len());
        if rest > 0 {
            let _ = write!(why, " and {rest} more");
        }
    }
    Some(GidChoice {
        index: chosen.index,
        entry: chosen.clone(),
        reason: format!("GID index {}: {} ({why})", chosen.index, describe(chosen)),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn e(index: u32, gid: [u8; 16], t: GidType) -> GidEntry {
        GidEntry {
            index,
            port: 1,
            gid,
            gid_type: t,
            netdev: Some("rxedummy0".into()),
        }
    }
    const LL: [u8; 16] = [
        0xfe, 0x80, 0, 0, 0, 0, 0, 0, 0xfc, 0x3c, 0x7a, 0xff, 0xfe, 0xba, 0x5d, 0xf3,
    ];
    const V4: [u8; 16] = [0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff, 10, 99, 0, 1];
    const V6G: [u8; 16] = [0x20, 0x01, 0x0d, 0xb8, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1];

    #[test]
    fn ntop_matches_glibc() {
        assert_eq!(format_ipv6(&LL), "fe80::fc3c:7aff:feba:5df3");
        assert_eq!(format_ipv6(&V4), "::ffff:10.99.0.1");
        assert_eq!(format_ipv6(&V6G), "2001:db8::1");
        assert_eq!(format_ipv6(&[0u8; 16]), "::");
        let mut one = [0u8; 16];
        one[15] = 1;
        assert_eq!(format_ipv6(&one), "::1");
        // IPv4-compatible: glibc prints the dotted quad.
        assert_eq!(
            format_ipv6(&[0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1, 2, 3, 4]),
            "::1.2.3.4"
        );
        // A single zero group is not compressed; the first longest run wins.
        assert_eq!(
            format_ipv6(&[0, 1, 0, 0, 0, 2, 0, 0, 0, 0, 0, 3, 0, 0, 0, 0]),
            "1:0:2::3:0:0"
        );
        assert_eq!(
            format_ipv6(&[0, 1, 0, 0, 0, 0, 0, 2, 0, 0, 0, 0, 0, 3, 0, 4]),
            "1::2:0:0:3:4"
        );
        assert_eq!(
            format_ipv6(&[0, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0]),
            "1::"
        );
        assert_eq!(
            format_gid_hex(&V4),
            "0000:0000:0000:0000:0000:ffff:0a63:0001"
        );
    }

    #[test]
    fn rxe_table_picks_index_1_under_both_rules() {
        let t = vec![e(0, LL, GidType::RoceV2), e(1, V4, GidType::RoceV2)];
        for rule in [GidRule::Scored, GidRule::Walk606] {
            let c = select_gid(&t, false, rule).unwrap();
            assert_eq!(c.index, 1);
            assert_eq!(
                c.reason,
                "GID index 1: RoCE v2, IPv4 10.99.0.1 on rxedummy0 (preferred: RoCE v2 + IPv4; \
                 index 0 is RoCE v2 IPv6 link-local)"
            );
        }
        // --ipv6: the link-local IPv6 GID.
        let c = select_gid(&t, true, GidRule::Scored).unwrap();
        assert_eq!(c.index, 0);
        assert!(
            c.reason.starts_with(
                "GID index 0: RoCE v2, IPv6 fe80::fc3c:7aff:feba:5df3 (link-local) on rxedummy0"
            ),
            "{}",
            c.reason
        );
    }

    #[test]
    fn rules_on_mlx5_like_tables() {
        // mlx5 RoCE: every address appears as v1 and v2.
        let t = vec![
            e(0, LL, GidType::RoceV1),
            e(1, LL, GidType::RoceV2),
            e(2, V4, GidType::RoceV1),
            e(3, V4, GidType::RoceV2),
            e(4, V6G, GidType::RoceV1),
            e(5, V6G, GidType::RoceV2),
        ];
        assert_eq!(select_gid(&t, false, GidRule::Scored).unwrap().index, 3);
        assert_eq!(select_gid(&t, false, GidRule::Walk606).unwrap().index, 3);
        assert_eq!(select_gid(&t, true, GidRule::Scored).unwrap().index, 5);
        // 6.06 with --ipv6 stays on the first IPv6 family entry, upgrading only the version.
        assert_eq!(select_gid(&t, true, GidRule::Walk606).unwrap().index, 1);
        // Where the rules differ: link-local v2 first, global v1 later.
        let t = vec![e(0, LL, GidType::RoceV2), e(1, V6G, GidType::RoceV1)];
        assert_eq!(select_gid(&t, false, GidRule::Scored).unwrap().index, 1);
        assert_eq!(select_gid(&t, false, GidRule::Walk606).unwrap().index, 0);
        let c = select_gid(&t, false, GidRule::Scored).unwrap();
        assert!(c.reason.contains("no IPv4 GID"), "{}", c.reason);
    }

    #[test]
    fn empty_and_sparse() {
        assert!(select_gid(&[], false, GidRule::Scored).is_none());
        assert!(select_gid(&[e(0, [0; 16], GidType::RoceV2)], false, GidRule::Walk606).is_none());
        let t = vec![e(7, V4, GidType::RoceV2), e(3, LL, GidType::RoceV2)];
        assert_eq!(select_gid(&t, false, GidRule::Walk606).unwrap().index, 7);
        let many: Vec<GidEntry> = (0..10).map(|i| e(i, LL, GidType::RoceV1)).collect();
        let c = select_gid(&many, false, GidRule::Scored).unwrap();
        assert_eq!(c.index, 0);
        assert!(c.reason.ends_with("and 5 more)"), "{}", c.reason);
    }
}
