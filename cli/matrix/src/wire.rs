//! The wire check: is each node's NIC of rail r plugged into rail r's segment? A crossed cable
//! (a NIC on another rail's switch) makes every pair of that NIC fail in a way the pair-wise
//! results cannot explain; found before any pair runs, it is named with the node, the rail and
//! the segment it is on.
//!
//! Each node sends ARP probes ([`super::arp`]) from every rail NIC for a few peers' addresses
//! on every rail (and its own other NICs' addresses) and reports who answered, by MAC. Whoever
//! answers is on the same segment; the preflight's MACs say which rail each answering NIC
//! belongs to. Answers from the NIC's own rail: wired right. Answers only from other rails:
//! miswired onto those. No answer: the check cannot tell (the pairs will show the fault).

use std::net::Ipv4Addr;
use std::time::Duration;

use serde_json::{json, Value};

use super::probe::DevProbe;

/// The protocol line of `rperftest matrix-wire`.
pub const PREFIX: &str = "@rpt-matrix wire ";

/// How many peers each node probes per rail: enough that one miswired peer does not hide a
/// segment, few enough that a 1,024-node rail sees a few thousand ARP frames, not a million.
const PEERS: usize = 3;

/// How long a node listens for answers.
pub const LISTEN: Duration = Duration::from_millis(1500);

// ------------------------------------------------------------------ MACs (pure)

pub fn parse_mac(s: &str) -> Option<[u8; 6]> {
    let v: Vec<u8> = s
        .trim()
        .split(':')
        .map(|x| u8::from_str_radix(x, 16))
        .collect::<Result<_, _>>()
        .ok()?;
    v.try_into().ok()
}

pub fn fmt_mac(m: [u8; 6]) -> String {
    m.iter()
        .map(|b| format!("{b:02x}"))
        .collect::<Vec<_>>()
        .join(":")
}

// -------------------------------------------------------------- the node's side

fn probe_netdev(spec: &str, wait: Duration) -> Value {
    let Some((nd, list)) = spec.split_once('=') else {
        return json!({"netdev": spec, "error": "want NETDEV=IP,IP,..."});
    };
    let sys = |f: &str| {
        std::fs::read_to_string(format!("/sys/class/net/{nd}/{f}")).map(|s| s.trim().to_string())
    };
    let (ifindex, mac) = match (
        sys("ifindex").ok().and_then(|s| s.parse::<i32>().ok()),
        sys("address").ok().as_deref().and_then(parse_mac),
    ) {
        (Some(i), Some(m)) if !nd.contains('/') => (i, m),
        _ => return json!({"netdev": nd, "error": format!("no network interface {nd}")}),
    };
    let targets: Vec<Ipv4Addr> = list.split(',').filter_map(|a| a.parse().ok()).collect();
    match super::arp::probe(ifindex, mac, &targets, wait) {
        Ok(ans) => {
            json!({"netdev": nd, "answers": ans.iter().map(|(ip, m)| json!([ip.to_string(), fmt_mac(*m)])).collect::<Vec<_>>()})
        }
        Err(e) if e.raw_os_error() == Some(libc::EPERM) => {
            json!({"netdev": nd, "error": "ARP probes need CAP_NET_RAW (run the matrix as root)"})
        }
        Err(e) => json!({"netdev": nd, "error": format!("ARP probe on {nd}: {e}")}),
    }
}

/// `rperftest matrix-wire NETDEV=IP,IP... ...` (run by the matrix on each node): one line,
/// `@rpt-matrix wire {"netdevs":[{"netdev":..,"answers":[[ip,mac],..]}|{..,"error":..}]}`.
pub fn run(args: &[String]) -> u8 {
    if args.is_empty() || args.iter().any(|a| a.starts_with('-')) {
        eprintln!("usage: rperftest matrix-wire NETDEV=IP,IP,... ... (run by rperftest matrix on each node)");
        return 2;
    }
    let res: Vec<Value> = std::thread::scope(|s| {
        let hs: Vec<_> = args
            .iter()
            .map(|a| s.spawn(move || probe_netdev(a, LISTEN)))
            .collect();
        hs.into_iter()
            .map(|h| {
                h.join()
                    .unwrap_or_else(|_| json!({"error": "thread failed"}))
            })
            .collect()
    });
    println!("{PREFIX}{}", json!({ "netdevs": res }));
    0
}

// -------------------------------------------------------- the coordinator's side

/// One rail as the wire check sees it: its label and each node's device on it.
pub struct RailView<'a> {
    pub label: &'a str,
    pub per_node: Vec<Option<&'a DevProbe>>,
}

/// A NIC found on another rail's segment.
#[derive(Debug, PartialEq)]
pub struct Miswire {
    pub node: usize,
    pub rail: usize,
    /// The rails whose NICs answered it.
    pub on: Vec<usize>,
    /// The segment's subnet, from an answering NIC's address and prefix.
    pub subnet: Option<String>,
}

impl Miswire {
    /// Why its pairs do not run (after the node's name in a record's reason).
    pub fn reason(&self, rails: &[RailView]) -> String {
        let dev = rails[self.rail].per_node[self.node].map_or("?", |d| d.name.as_str());
        let on: Vec<&str> = self.on.iter().map(|&r| rails[r].label).collect();
        format!(
            "{dev} is miswired: on rail {}'s segment, not rail {}'s",
            on.join(" and "),
            rails[self.rail].label
        )
    }

    pub fn line(&self, hosts: &[String], rails: &[RailView]) -> String {
        let dev = rails[self.rail].per_node[self.node].map_or("?", |d| d.name.as_str());
        let on: Vec<String> = self
            .on
            .iter()
            .map(|&r| format!("rail {}'s", rails[r].label))
            .collect();
        let subnet = self
            .subnet
            .as_ref()
            .map(|s| format!(" ({s})"))
            .unwrap_or_default();
        format!(
            "{}'s {dev} is on {} segment{subnet}, not rail {}'s: check its cable",
            hosts[self.node],
            on.join(" and "),
            rails[self.rail].label
        )
    }
}

fn ipv4(d: &DevProbe) -> Option<Ipv4Addr> {
    d.ipv4.as_deref()?.parse().ok()
}

/// The `matrix-wire` arguments of each node: per rail NIC, the addresses of its next
/// [`PEERS`] nodes (ring order, nodes with that rail) on every rail, and its own other NICs'.
/// None for a node with fewer than two rails' NICs up or nothing to ask.
pub fn requests(rails: &[RailView], n: usize) -> Vec<Option<Vec<String>>> {
    (0..n)
        .map(|i| {
            let mine: Vec<&DevProbe> = rails.iter().filter_map(|r| r.per_node[i]).collect();
            if mine.is_empty() {
                return None;
            }
            let specs: Vec<String> = rails
                .iter()
                .filter_map(|r| {
                    let d = r.per_node[i]?;
                    let nd = d.netdev.as_deref()?;
                    let peers = (1..n)
                        .map(|k| (i + k) % n)
                        .filter(|&j| r.per_node[j].is_some())
                        .take(PEERS);
                    let mut targets: Vec<Ipv4Addr> = peers
                        .flat_map(|j| {
                            rails
                                .iter()
                                .filter_map(move |q| q.per_node[j].and_then(ipv4))
                        })
                        .collect();
                    targets.extend(
                        mine.iter()
                            .filter(|m| m.name != d.name)
                            .filter_map(|m| ipv4(m)),
                    );
                    targets.dedup();
                    (!targets.is_empty()).then(|| {
                        format!(
                            "{nd}={}",
                            targets
                                .iter()
                                .map(Ipv4Addr::to_string)
                                .collect::<Vec<_>>()
                                .join(",")
                        )
                    })
                })
                .collect();
            (!specs.is_empty()).then_some(specs)
        })
        .collect()
}

/// Which rail each known MAC is a NIC of.
fn rail_of_mac<'a>(rails: &[RailView<'a>]) -> Vec<([u8; 6], usize, &'a DevProbe)> {
    rails
        .iter()
        .enumerate()
        .flat_map(|(r, rv)| {
            rv.per_node
                .iter()
                .flatten()
                .filter_map(move |d| Some((parse_mac(d.mac.as_deref()?)?, r, *d)))
        })
        .collect()
}

fn subnet_of(d: &DevProbe) -> Option<String> {
    let (ip, p) = (u32::from(ipv4(d)?), u32::from(d.prefix?));
    let mask = if p == 0 {
        0
    } else {
        u32::MAX << (32 - p.min(32))
    };
    Some(format!("{}/{p}", Ipv4Addr::from(ip & mask)))
}

/// The miswired NICs, from each node's answer line (the JSON after [`PREFIX`]); and the
/// nodes whose check could not run, with why (warnings: the pairs still run).
pub fn judge(
    rails: &[RailView],
    hosts: &[String],
    answers: &[Option<Result<String, String>>],
) -> (Vec<Miswire>, Vec<String>) {
    let macs = rail_of_mac(rails);
    let (mut found, mut warn) = (Vec::new(), Vec::new());
    for (i, a) in answers.iter().enumerate() {
        let v = match a {
            None => continue,
            Some(Err(e)) => {
                warn.push(format!("{}: {e}", hosts[i]));
                continue;
            }
            Some(Ok(line)) => serde_json::from_str::<Value>(line).unwrap_or(Value::Null),
        };
        for nd in v
            .get("netdevs")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
        {
            let name = nd.get("netdev").and_then(Value::as_str).unwrap_or("?");
            if let Some(e) = nd.get("error").and_then(Value::as_str) {
                warn.push(format!("{}: {e}", hosts[i]));
                continue;
            }
            let Some(rail) = rails
                .iter()
                .position(|r| r.per_node[i].is_some_and(|d| d.netdev.as_deref() == Some(name)))
            else {
                continue;
            };
            let heard: Vec<(usize, &DevProbe)> = nd
                .get("answers")
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
                .filter_map(|x| parse_mac(x.get(1)?.as_str()?))
                .filter_map(|m| {
                    macs.iter()
                        .find(|(mm, _, _)| *mm == m)
                        .map(|(_, r, d)| (*r, *d))
                })
                .collect();
            let mut on: Vec<usize> = heard.iter().map(|(r, _)| *r).collect();
            on.sort_unstable();
            on.dedup();
            if !on.is_empty() && !on.contains(&rail) {
                let subnet = heard.first().and_then(|(_, d)| subnet_of(d));
                found.push(Miswire {
                    node: i,
                    rail,
                    on,
                    subnet,
                });
            }
        }
    }
    (found, warn)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn macs_as_sysfs_writes_them() {
        let mac = [0x52, 0x54, 0x0a, 0x4d, 0x01, 0x02];
        assert_eq!(parse_mac("52:54:0a:4d:01:02\n"), Some(mac));
        assert_eq!(parse_mac("52:54:0a:4d:01"), None);
        assert_eq!(parse_mac("52:54:0a:4d:01:zz"), None);
        assert_eq!(fmt_mac(mac), "52:54:0a:4d:01:02");
    }

    fn dev(name: &str, nd: &str, ip: &str, mac: &str) -> DevProbe {
        DevProbe {
            name: name.into(),
            active: true,
            state: "ACTIVE".into(),
            rate: String::new(),
            ethernet: true,
            ipv4: Some(ip.into()),
            gid_index: Some(1),
            netdev: Some(nd.into()),
            mac: Some(mac.into()),
            prefix: Some(24),
            gpus: Vec::new(),
            gpu: None,
        }
    }

    /// The 4-node, 2-rail bed: node K's rail r NIC is ethR, 10.77.r.K, 52:54:0a:4d:0r:0K.
    fn bed() -> Vec<Vec<DevProbe>> {
        (0..2)
            .map(|r| {
                (1..=4)
                    .map(|k| {
                        dev(
                            &format!("rxe{r}"),
                            &format!("eth{r}"),
                            &format!("10.77.{r}.{k}"),
                            &format!("52:54:0a:4d:{r:02x}:{k:02x}"),
                        )
                    })
                    .collect()
            })
            .collect()
    }

    fn views(b: &[Vec<DevProbe>]) -> Vec<RailView<'_>> {
        ["rxe0", "rxe1"]
            .iter()
            .zip(b)
            .map(|(l, v)| RailView {
                label: l,
                per_node: v.iter().map(Some).collect(),
            })
            .collect()
    }

    fn hosts() -> Vec<String> {
        (1..=4).map(|k| format!("node{k}")).collect()
    }

    #[test]
    fn each_nic_asks_its_next_peers_on_every_rail_and_its_own_other_nics() {
        let b = bed();
        let req = requests(&views(&b), 4);
        assert_eq!(
            req[1].as_deref().expect("node2 asks"),
            [
                "eth0=10.77.0.3,10.77.1.3,10.77.0.4,10.77.1.4,10.77.0.1,10.77.1.1,10.77.1.2",
                "eth1=10.77.0.3,10.77.1.3,10.77.0.4,10.77.1.4,10.77.0.1,10.77.1.1,10.77.0.2"
            ]
        );
    }

    fn answer(nds: &[(&str, &[(&str, &str)])]) -> Option<Result<String, String>> {
        let v: Vec<Value> = nds.iter().map(|(nd, a)| json!({"netdev": nd, "answers": a.iter().map(|(i, m)| json!([i, m])).collect::<Vec<_>>()})).collect();
        Some(Ok(json!({ "netdevs": v }).to_string()))
    }

    #[test]
    fn a_nic_answered_only_by_another_rails_nics_is_miswired() {
        let b = bed();
        let v = views(&b);
        // node2's eth1 is on rail 0's segment: rail-0 NICs answer it (for their rail-1
        // addresses too, as Linux answers for any local address), no rail-1 NIC does.
        let mut a = vec![
            answer(&[
                ("eth0", &[("10.77.0.3", "52:54:0a:4d:00:03")]),
                ("eth1", &[("10.77.1.1", "52:54:0a:4d:01:01")])
            ]);
            4
        ];
        a[1] = answer(&[
            (
                "eth0",
                &[
                    ("10.77.0.3", "52:54:0a:4d:00:03"),
                    ("10.77.1.2", "52:54:0a:4d:00:02"),
                ],
            ),
            (
                "eth1",
                &[
                    ("10.77.0.3", "52:54:0a:4d:00:03"),
                    ("10.77.1.3", "52:54:0a:4d:00:03"),
                    ("10.77.0.2", "52:54:0a:4d:00:02"),
                ],
            ),
        ]);
        a[0] = answer(&[
            ("eth0", &[("10.77.0.2", "52:54:0a:4d:00:02")]),
            ("eth1", &[("10.77.1.3", "52:54:0a:4d:01:03")]),
        ]);
        let (m, warn) = judge(&v, &hosts(), &a);
        assert!(warn.is_empty(), "{warn:?}");
        assert_eq!(
            m,
            [Miswire {
                node: 1,
                rail: 1,
                on: vec![0],
                subnet: Some("10.77.0.0/24".into())
            }]
        );
        assert_eq!(m[0].line(&hosts(), &v), "node2's rxe1 is on rail rxe0's segment (10.77.0.0/24), not rail rxe1's: check its cable");
    }

    #[test]
    fn own_rail_answers_silence_and_errors_are_not_miswires() {
        let b = bed();
        let v = views(&b);
        let a = vec![
            answer(&[("eth1", &[("10.77.1.2", "52:54:0a:4d:01:02"), ("10.77.0.2", "52:54:0a:4d:01:02")])]),
            answer(&[("eth1", &[])]),
            Some(Err("no answer within 30 s".into())),
            Some(Ok(json!({"netdevs": [{"netdev": "eth0", "error": "ARP probes need CAP_NET_RAW (run the matrix as root)"}]}).to_string())),
        ];
        let (m, warn) = judge(&v, &hosts(), &a);
        assert!(m.is_empty(), "{m:?}");
        assert_eq!(
            warn,
            [
                "node3: no answer within 30 s",
                "node4: ARP probes need CAP_NET_RAW (run the matrix as root)"
            ]
        );
        // Garbage from a node is neither a finding nor a panic.
        let (m, _) = judge(
            &v,
            &hosts(),
            &[
                Some(Ok("{not json".into())),
                Some(Ok("[1,2]".into())),
                None,
                None,
            ],
        );
        assert!(m.is_empty());
    }
}
