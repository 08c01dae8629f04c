//! Port and device counters before and after each step of a load pattern: what explains a
//! slow or failed flow (retransmissions, sequence errors, RNR, congestion notifications,
//! drops). `rperftest matrix-counters DEV...` reads them from sysfs on a node; the
//! coordinator takes the difference and names the NICs whose error counters moved.

use std::collections::BTreeMap;
use std::path::Path;

use serde_json::{json, Value};

/// The protocol line of `rperftest matrix-counters`.
pub const PREFIX: &str = "@rpt-matrix counters ";

/// Counters that only move when something went wrong or was congested, by the names the
/// kernel's drivers give them in `ports/1/counters` and `ports/1/hw_counters`, and the
/// netdev's `statistics`: rxe's retry, sequence, duplicate and RNR counters; mlx5's
/// out-of-sequence, sequence-error, timeout and CNP counters; the IB port error counters;
/// the netdev's drops and errors.
pub const ERROR_COUNTERS: &[&str] = &[
    // rxe (hw_counters)
    "duplicate_request",
    "out_of_seq_request",
    "rcvd_rnr_err",
    "send_rnr_err",
    "rcvd_seq_err",
    "retry_exceeded_err",
    "retry_rnr_exceeded_err",
    "completer_retry_err",
    "send_err",
    "link_downed",
    // mlx5 (hw_counters)
    "out_of_sequence",
    "packet_seq_err",
    "local_ack_timeout_err",
    "rnr_nak_retry_err",
    "implied_nak_seq_err",
    "np_cnp_sent",
    "rp_cnp_handled",
    "np_ecn_marked_roce_packets",
    "req_cqe_error",
    "resp_cqe_error",
    "roce_adp_retrans",
    "roce_slow_restart",
    // IB port counters
    "symbol_error",
    "link_error_recovery",
    "port_rcv_errors",
    "port_xmit_discards",
    "port_rcv_remote_physical_errors",
    "local_link_integrity_errors",
    "excessive_buffer_overrun_errors",
    "port_xmit_wait",
    // netdev statistics
    "net.rx_dropped",
    "net.tx_dropped",
    "net.rx_errors",
    "net.tx_errors",
    "net.rx_missed_errors",
    "net.rx_fifo_errors",
];

/// One device's counters: `counters/*`, `hw_counters/*` of port 1 and, for RoCE, its
/// netdev's `statistics/*` as `net.NAME`. Unreadable or non-numeric files are left out.
pub fn read_dev(sys: &Path, dev: &str, netdev: Option<&str>) -> BTreeMap<String, u64> {
    let mut out = BTreeMap::new();
    let port = sys.join("class/infiniband").join(dev).join("ports/1");
    for sub in ["counters", "hw_counters"] {
        read_dir_into(&port.join(sub), "", &mut out);
    }
    if let Some(nd) = netdev {
        read_dir_into(
            &sys.join("class/net").join(nd).join("statistics"),
            "net.",
            &mut out,
        );
    }
    out
}

fn read_dir_into(dir: &Path, prefix: &str, out: &mut BTreeMap<String, u64>) {
    let Ok(rd) = std::fs::read_dir(dir) else {
        return;
    };
    for e in rd.flatten() {
        let name = e.file_name().to_string_lossy().into_owned();
        if let Some(v) = std::fs::read_to_string(e.path())
            .ok()
            .and_then(|s| s.trim().parse::<u64>().ok())
        {
            out.insert(format!("{prefix}{name}"), v);
        }
    }
}

/// `rperftest matrix-counters DEV[=NETDEV]...`: one line,
/// `@rpt-matrix counters {"DEV":{"name":n,..},..}`.
pub fn run(args: &[String]) -> u8 {
    if args.is_empty()
        || args
            .iter()
            .any(|a| a.starts_with('-') || a.contains('/') || a.contains(".."))
    {
        eprintln!("usage: rperftest matrix-counters DEV[=NETDEV]... (run by rperftest matrix on each node)");
        return 2;
    }
    let sys = Path::new("/sys");
    let v: serde_json::Map<String, Value> = args
        .iter()
        .map(|a| {
            let (d, nd) = a
                .split_once('=')
                .map_or((a.as_str(), None), |(d, n)| (d, Some(n)));
            (d.to_string(), json!(read_dev(sys, d, nd)))
        })
        .collect();
    println!("{PREFIX}{}", Value::Object(v));
    0
}

/// A snapshot: per node, per device, per counter.
pub type Snapshot = BTreeMap<String, BTreeMap<String, BTreeMap<String, u64>>>;

/// A node's counters line into the snapshot (garbage is ignored: a node that cannot say is
/// simply not compared).
pub fn add_line(snap: &mut Snapshot, node: &str, line: &str) {
    let Ok(Value::Object(devs)) = serde_json::from_str::<Value>(line) else {
        return;
    };
    let e = snap.entry(node.to_string()).or_default();
    for (dev, ctrs) in devs {
        let Value::Object(ctrs) = ctrs else { continue };
        e.insert(
            dev,
            ctrs.into_iter()
                .filter_map(|(k, v)| Some((k, v.as_u64()?)))
                .collect(),
        );
    }
}

/// A NIC whose error counters moved during a step, with the counters and by how much.
#[derive(Debug, PartialEq)]
pub struct Moved {
    pub node: String,
    pub dev: String,
    pub deltas: Vec<(String, u64)>,
}

impl Moved {
    pub fn line(&self) -> String {
        let d: Vec<String> = self
            .deltas
            .iter()
            .map(|(k, v)| format!("{k} +{v}"))
            .collect();
        format!("{} {}: {}", self.node, self.dev, d.join(", "))
    }
}

/// The NICs whose error counters grew from `before` to `after`. A counter that went down (a
/// driver reset, a wrap) is not read as a fault.
pub fn moved(before: &Snapshot, after: &Snapshot) -> Vec<Moved> {
    let mut out = Vec::new();
    for (node, devs) in after {
        for (dev, ctrs) in devs {
            let Some(was) = before.get(node).and_then(|d| d.get(dev)) else {
                continue;
            };
            let deltas: Vec<(String, u64)> = ERROR_COUNTERS
                .iter()
                .filter_map(|&k| {
                    let d = ctrs.get(k)?.checked_sub(*was.get(k)?)?;
                    (d > 0).then(|| (k.to_string(), d))
                })
                .collect();
            if !deltas.is_empty() {
                out.push(Moved {
                    node: node.clone(),
                    dev: dev.clone(),
                    deltas,
                });
            }
        }
    }
    out
}

/// Requester-side sequence errors: the NIC's own packets were lost on the way out (rxe's
/// NAK-sequence-error count, mlx5's): the link to blame is this NIC's.
const SENT_LOST: &[&str] = &["rcvd_seq_err", "packet_seq_err"];
/// Responder-side: requests arrived out of sequence, so packets to this NIC were lost.
const RECEIVED_LOST: &[&str] = &[
    "out_of_seq_request",
    "out_of_sequence",
    "implied_nak_seq_err",
];
/// The link itself: drops and errors the port or the netdev counts.
const LINK: &[&str] = &[
    "symbol_error",
    "link_error_recovery",
    "link_downed",
    "port_rcv_errors",
    "port_xmit_discards",
    "port_rcv_remote_physical_errors",
    "local_link_integrity_errors",
    "excessive_buffer_overrun_errors",
    "net.rx_dropped",
    "net.tx_dropped",
    "net.rx_errors",
    "net.tx_errors",
    "net.rx_missed_errors",
    "net.rx_fifo_errors",
];

/// A pattern's counters in a few lines: the NICs whose sent packets were lost (the strongest
/// sign of a bad link: name it), those packets to which were lost, link errors, and the
/// busiest NICs by retries and congestion (what heavy load alone also causes).
pub fn summary(label: &str, steps: &[Vec<Moved>]) -> Vec<String> {
    let mut per: BTreeMap<(String, String), (BTreeMap<String, u64>, usize)> = BTreeMap::new();
    for st in steps {
        for m in st {
            let e = per.entry((m.node.clone(), m.dev.clone())).or_default();
            e.1 += 1;
            for (k, v) in &m.deltas {
                *e.0.entry(k.clone()).or_default() += v;
            }
        }
    }
    let sum_of = |c: &BTreeMap<String, u64>, set: &[&str]| -> u64 {
        set.iter().filter_map(|k| c.get(*k)).sum()
    };
    let named = |set: &[&str]| -> Vec<(u64, String)> {
        let mut v: Vec<(u64, String)> = per
            .iter()
            .filter_map(|((n, d), (c, k))| {
                let t = sum_of(c, set);
                let what: Vec<String> = set
                    .iter()
                    .filter_map(|s| c.get(*s).map(|x| format!("{s} +{x}")))
                    .collect();
                (t > 0).then(|| {
                    (
                        t,
                        format!(
                            "{n} {d} ({}, in {k} of {} step(s))",
                            what.join(", "),
                            steps.len()
                        ),
                    )
                })
            })
            .collect();
        v.sort_by(|a, b| b.0.cmp(&a.0).then(a.1.cmp(&b.1)));
        v
    };
    let list = |v: Vec<(u64, String)>, max: usize| {
        v.into_iter()
            .take(max)
            .map(|x| x.1)
            .collect::<Vec<_>>()
            .join("; ")
    };
    let mut out = Vec::new();
    let sent = named(SENT_LOST);
    if !sent.is_empty() {
        out.push(format!(
            "{label}: packets sent by {} were lost: check that link first",
            list(sent, 4)
        ));
    }
    let link = named(LINK);
    if !link.is_empty() {
        out.push(format!("{label}: link errors on {}", list(link, 4)));
    }
    let recv = named(RECEIVED_LOST);
    if !recv.is_empty() {
        out.push(format!("{label}: packets to {} were lost", list(recv, 4)));
    }
    let rest: Vec<&str> = ERROR_COUNTERS
        .iter()
        .copied()
        .filter(|k| !SENT_LOST.contains(k) && !RECEIVED_LOST.contains(k) && !LINK.contains(k))
        .collect();
    let busy = named(&rest);
    if !busy.is_empty() {
        out.push(format!(
            "{label}: retries and congestion (load alone also causes them) on {}",
            list(busy, 3)
        ));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_counters_of_a_device_from_sysfs() {
        let dir = std::env::temp_dir().join(format!("rpt-ctr-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        let port = dir.join("class/infiniband/rxe0/ports/1");
        std::fs::create_dir_all(port.join("hw_counters")).expect("mkdir");
        std::fs::create_dir_all(port.join("counters")).expect("mkdir");
        std::fs::create_dir_all(dir.join("class/net/eth0/statistics")).expect("mkdir");
        std::fs::write(port.join("hw_counters/rcvd_seq_err"), "12\n").expect("w");
        std::fs::write(port.join("hw_counters/lifespan"), "10\n").expect("w");
        std::fs::write(port.join("counters/port_rcv_errors"), "0\n").expect("w");
        std::fs::write(port.join("counters/port_xmit_data"), "N/A (no PMA)\n").expect("w");
        std::fs::write(dir.join("class/net/eth0/statistics/rx_dropped"), "3\n").expect("w");
        let c = read_dev(&dir, "rxe0", Some("eth0"));
        assert_eq!(c.get("rcvd_seq_err"), Some(&12));
        assert_eq!(c.get("port_rcv_errors"), Some(&0));
        assert_eq!(c.get("net.rx_dropped"), Some(&3));
        assert!(!c.contains_key("port_xmit_data"), "not a number");
        assert!(read_dev(&dir, "mlx5_9", None).is_empty());
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn the_nics_whose_error_counters_moved_are_named() {
        let mut before = Snapshot::new();
        add_line(
            &mut before,
            "node4",
            r#"{"rxe0":{"rcvd_seq_err":3,"sent_pkts":100,"retry_exceeded_err":0},"rxe1":{"rcvd_seq_err":0}}"#,
        );
        add_line(&mut before, "node1", r#"{"rxe0":{"rcvd_seq_err":5}}"#);
        let mut after = Snapshot::new();
        add_line(
            &mut after,
            "node4",
            r#"{"rxe0":{"rcvd_seq_err":15,"sent_pkts":900,"retry_exceeded_err":1},"rxe1":{"rcvd_seq_err":0}}"#,
        );
        add_line(&mut after, "node1", r#"{"rxe0":{"rcvd_seq_err":2}}"#);
        add_line(&mut after, "node2", r#"{"rxe0":{"rcvd_seq_err":99}}"#);
        add_line(&mut after, "node3", "not json");
        let m = moved(&before, &after);
        assert_eq!(m.len(), 1, "{m:?}");
        assert_eq!(
            m[0].line(),
            "node4 rxe0: rcvd_seq_err +12, retry_exceeded_err +1"
        );
    }

    #[test]
    fn the_summary_names_the_nic_whose_packets_were_lost_first() {
        let mv = |n: &str, d: &str, ds: &[(&str, u64)]| Moved {
            node: n.into(),
            dev: d.into(),
            deltas: ds.iter().map(|(k, v)| (k.to_string(), *v)).collect(),
        };
        let steps = vec![
            vec![
                mv(
                    "node1",
                    "rxe0",
                    &[("out_of_seq_request", 17), ("duplicate_request", 3337)],
                ),
                mv(
                    "node4",
                    "rxe0",
                    &[("rcvd_seq_err", 12), ("completer_retry_err", 57)],
                ),
            ],
            vec![
                mv("node4", "rxe0", &[("rcvd_seq_err", 16)]),
                mv("node2", "rxe1", &[("net.rx_dropped", 2)]),
            ],
            vec![],
        ];
        assert_eq!(
            summary("incast ib_write_bw", &steps),
            [
                "incast ib_write_bw: packets sent by node4 rxe0 (rcvd_seq_err +28, in 2 of 3 step(s)) were lost: check that link first",
                "incast ib_write_bw: link errors on node2 rxe1 (net.rx_dropped +2, in 1 of 3 step(s))",
                "incast ib_write_bw: packets to node1 rxe0 (out_of_seq_request +17, in 1 of 3 step(s)) were lost",
                "incast ib_write_bw: retries and congestion (load alone also causes them) on node1 rxe0 (duplicate_request +3337, in 1 of 3 step(s)); node4 rxe0 (completer_retry_err +57, in 2 of 3 step(s))",
            ]
        );
        assert!(summary("x", &[vec![], vec![]]).is_empty());
    }
}
