//! Device facts and the checks made before anything is created: the port, its GID and limits,
//! conversions between the parameters and the wire/engine enums, and small host facts.

use std::sync::Arc;

use uverbs::attr::{DeviceAttr, PortAttr};
use uverbs::discovery::gid::{select_gid, GidRule};
use uverbs::objects::Context;
use uverbs::provider::{Provider, SrdCaps};
use uverbs::queries::DeviceQueries;

use bench_core::clock;
use crate::oob::msg::ConnType;
use crate::oob::OobError;
use crate::params::{Connection, Output, Params, TestMethod, Tool};
use crate::report::OutputMode;
use crate::{oob, params, stats};

use super::ToolError;

/// Device facts the tool needs.
pub(super) struct DevFacts {
    pub(super) name: String,
    pub(super) attr: DeviceAttr,
    pub(super) port: PortAttr,
    pub(super) ethernet: bool,
    pub(super) gid_index: Option<u8>,
    pub(super) gid: [u8; 16],
    /// In perftest's known-device table (inline supported).
    pub(super) known: bool,
    /// `-O`: the second port's LID, GID index and GID.
    pub(super) port2: Option<(u16, Option<u8>, [u8; 16])>,
    /// What the device's SRD QPs can do beyond sends (EFA); `None` without SRD.
    pub(super) srd: Option<SrdCaps>,
}

/// `-c SRD`, once the device is known: `None` where the run goes on (an EFA device, the send,
/// read and write tools with one size), else the one line it ends with (exit 1). SRD is the
/// transport of AWS EFA devices; any other device has none. Whether the EFA device can read or
/// write is [`srd_rdma_refusal`]'s question, once it is open. (Atomics never get here: the
/// parser refuses `-c SRD` for them, as perftest.)
pub(super) fn srd_refusal(dev: &str, driver_id: u32, p: &Params) -> Option<String> {
    if driver_id == providers::efa::RDMA_DRIVER_EFA {
        if p.test_method == TestMethod::All {
            return Some(" -c SRD: -a over SRD is not built in rperftest yet: give one size with -s".to_string());
        }
        return None;
    }
    let driver = providers::provider_name(driver_id).map_or_else(|| format!("driver id {driver_id}"), |n| format!("the {n} driver"));
    Some(format!(" -c SRD: device {dev} has no SRD (SRD is the transport of AWS EFA devices; {dev} is served by {driver}): use -c UD or -c RC"))
}

/// `-c SRD` with RDMA read or write, once the device is open: perftest 6.29's line (exit 1)
/// where its caps (efadv's) lack the operation. perftest asks after the MTU exchange; we ask
/// before connecting, so the peer is not left waiting on an exchange.
pub(super) fn srd_rdma_refusal(p: &Params, caps: Option<SrdCaps>) -> Option<String> {
    if p.connection != Connection::Srd {
        return None;
    }
    let caps = caps.unwrap_or_default();
    match p.verb {
        params::Verb::Read if !caps.rdma_read => Some("Read verb is not supported with this EFA device".to_string()),
        params::Verb::Write | params::Verb::WriteImm if !caps.rdma_write => {
            Some("Write verb is not supported with this EFA device".to_string())
        }
        _ => None,
    }
}

/// `-e` on a device whose CQs cannot report completion events (an EFA without CQ
/// notifications in its caps): one line before connecting, where the first arm would fail.
pub(super) fn events_refusal(p: &Params, dev: &str, cq_events: bool) -> Option<String> {
    (p.use_event && !cq_events).then(|| {
        format!(" -e: device {dev} cannot signal CQ events (its EFA caps have no CQ notifications): run without -e (the tools poll)")
    })
}

pub(super) fn port_state_name(s: u32) -> &'static str {
    match s {
        0 => "Nop",
        1 => "Down",
        2 => "Init",
        3 => "Armed",
        4 => "Active",
        5 => "Active deferred",
        _ => "Unknown",
    }
}

/// The page size perftest exchanges with the peer (`i32` on the wire).
pub(super) fn page_size() -> i32 {
    i32::try_from(uverbs::objects::page_size()).unwrap_or(4096)
}

pub(super) fn cache_line() -> i32 {
    std::fs::read_to_string("/sys/devices/system/cpu/cpu0/cache/index0/coherency_line_size")
        .ok()
        .and_then(|s| s.trim().parse::<i32>().ok())
        .filter(|&v| v > 0)
        .unwrap_or(64)
}

pub(super) fn random_psn() -> u32 {
    let mut b = [0u8; 4];
    if std::fs::File::open("/dev/urandom").and_then(|mut f| std::io::Read::read_exact(&mut f, &mut b)).is_err() {
        let t = clock::now() ^ u64::from(std::process::id()).rotate_left(17);
        b = (t as u32).to_ne_bytes();
    }
    u32::from_ne_bytes(b) & 0xff_ffff
}

pub(super) fn read_proc_stat() -> Option<(u64, u64)> {
    let s = std::fs::read_to_string("/proc/stat").ok()?;
    let line = s.lines().next()?;
    let f: Vec<&str> = line.split_whitespace().collect();
    Some((f.get(1)?.parse().ok()?, f.get(4)?.parse().ok()?))
}

/// CPU utilisation between two /proc/stat readings (perftest: Δuser / (Δuser + Δidle) × 100);
/// None unless both were read.
pub(super) fn cpu_between(w: [Option<(u64, u64)>; 2]) -> Option<f32> {
    match w {
        [Some((u0, i0)), Some((u1, i1))] => Some(stats::cpu_util([u0, u1], [i0, i1])),
        _ => None,
    }
}

pub(super) fn conn_type(c: Connection) -> ConnType {
    match c {
        Connection::Rc => ConnType::Rc,
        Connection::Uc => ConnType::Uc,
        Connection::Ud => ConnType::Ud,
        Connection::Xrc => ConnType::Xrc,
        Connection::Dc => ConnType::Dc,
        Connection::Srd => ConnType::Srd,
    }
}

pub(super) fn to_tool(t: Tool) -> oob::Tool {
    match t {
        Tool::WriteBw => oob::Tool::WriteBw,
        Tool::ReadBw => oob::Tool::ReadBw,
        Tool::SendBw => oob::Tool::SendBw,
        Tool::AtomicBw => oob::Tool::AtomicBw,
        Tool::WriteLat => oob::Tool::WriteLat,
        Tool::ReadLat => oob::Tool::ReadLat,
        Tool::SendLat => oob::Tool::SendLat,
        Tool::AtomicLat => oob::Tool::AtomicLat,
    }
}

pub(super) fn output_mode(o: Output) -> OutputMode {
    match o {
        Output::Full => OutputMode::Full,
        Output::Bandwidth => OutputMode::Bandwidth,
        Output::MessageRate => OutputMode::MessageRate,
        Output::Latency => OutputMode::Latency,
    }
}

pub(super) fn query_device<P: Provider>(p: &Params, ctx: &Arc<Context<P>>) -> Result<DevFacts, ToolError> {
    let name = ctx.device().ibdev.clone();
    let attr = ctx.device_attr().map_err(|e| ToolError::new(1, format!(" Couldn't query device {name}: {e}")))?;
    if let Some(msg) = port_number_problem(&name, p.dev.ib_port, attr.phys_port_cnt) {
        return Err(ToolError::new(1, msg));
    }
    let (port, ethernet, gid_index, gid) = query_port(p, ctx, &name, p.dev.ib_port)?;
    if p.use_mcg && !ethernet {
        return Err(ToolError::new(1, crate::mcast::IB_LINK_REFUSED));
    }
    if p.buf.use_null_mr && ctx.provider().null_mr_lkey().is_none() {
        // Before waiting for a peer (perftest fails later, creating its resources).
        return Err(ToolError::new(1, crate::engine::verbs::null_mr_missing(&name, P::NAME)));
    }
    let port2 = if p.dev.dualport {
        crate::engine::dualport::check_ports(&name, attr.phys_port_cnt, p.dev.ib_port, p.dev.ib_port2)
            .map_err(|e| ToolError::new(1, e))?;
        let (a2, eth2, ix2, gid2) = query_port(p, ctx, &name, p.dev.ib_port2)?;
        Some((if eth2 { 0 } else { a2.port_lid }, ix2, gid2))
    } else {
        None
    };
    let limits = DevLimits {
        max_msg_sz: port.max_msg_sz,
        max_qp_wr: attr.max_qp_wr,
        max_cqe: attr.max_cqe,
        max_srq_wr: attr.max_srq_wr,
    };
    if let Some(msg) = limits_problem(&name, p, &limits) {
        return Err(ToolError::new(1, msg));
    }
    let srd = ctx.provider().srd_caps();
    if let Some(line) = srd_rdma_refusal(p, srd) {
        return Err(ToolError::new(1, line));
    }
    if let Some(line) = events_refusal(p, &name, ctx.provider().cq_events()) {
        return Err(ToolError::new(1, line));
    }
    // Mellanox (0x02c9) is in perftest's known-device table; rxe (vendor 0) is not.
    let known = attr.vendor_id == 0x02c9;
    Ok(DevFacts { name, attr, port, ethernet, gid_index, gid, known, port2, srd })
}

/// One port's attributes (must be ACTIVE), link layer and GID (index given with -x, else
/// perftest 6.06's automatic choice).
pub(super) fn query_port<P: Provider>(
    p: &Params,
    ctx: &Arc<Context<P>>,
    name: &str,
    port_num: u8,
) -> Result<(PortAttr, bool, Option<u8>, [u8; 16]), ToolError> {
    let port = ctx
        .port_attr(port_num)
        .map_err(|e| ToolError::new(1, format!(" Unable to query port {} attributes: {e}", port_num)))?;
    if port.state != uverbs::attr::PORT_ACTIVE {
        return Err(ToolError::new(
            1,
            format!(
                " Port number {} state is {}\n Couldn't set the link layer\n",
                port_num,
                port_state_name(port.state)
            ),
        ));
    }
    let ethernet = match p.dev.force_link {
        Some(params::LinkType::Ethernet) => true,
        Some(params::LinkType::Ib) => false,
        None => port.is_ethernet(),
    };
    // SRD (EFA) addresses its peer by GID: the one at -x, else index 0 (EFA ports have one).
    let srd = p.connection == params::Connection::Srd;
    let want_gid = p.dev.gid_index.is_some() || ethernet || srd;
    let (gid_index, gid) = if want_gid {
        let table = ctx
            .gid_table(u32::from(port_num), port.gid_tbl_len)
            .or_else(|_| {
                uverbs::discovery::gid::read_gid_table(
                    &uverbs::discovery::sysfs::SysfsRoot::system(),
                    name,
                    u32::from(port_num),
                    port.link_layer,
                )
            })
            .map_err(|e| ToolError::new(1, format!(" Couldn't read the GID table of {name} port {}: {e}", port_num)))?;
        let ix = match p.dev.gid_index {
            Some(ix) => u32::from(ix),
            None if srd && !ethernet => 0,
            None => {
                let c = select_gid(&table, p.dev.ipv6, GidRule::Walk606).ok_or_else(|| {
                    ToolError::new(1, format!(" No valid GID on {name} port {} (is the netdev up with an IP address?)", port_num))
                })?;
                c.index
            }
        };
        let gid = table.iter().find(|e| e.index == ix).map(|e| e.gid).ok_or_else(|| {
            let valid: Vec<u32> = table.iter().map(|e| e.index).collect();
            ToolError::new(1, empty_gid_message(name, port_num, ix, port.gid_tbl_len, &valid))
        })?;
        (Some(ix as u8), gid)
    } else {
        (None, [0u8; 16])
    };
    Ok((port, ethernet, gid_index, gid))
}

/// An exchange failure with perftest's lead-in lines; a stop signal is reported alone (and
/// exits 128 + signal).
pub(super) fn oob_fail(lead: String, e: OobError) -> ToolError {
    match e {
        OobError::Interrupted { .. } => ToolError::from(e),
        _ => ToolError::new(1, format!("{lead}{e}")),
    }
}

/// `-i` against the device's port count (ports are 1-based).
pub(super) fn port_number_problem(dev: &str, port: u8, ports: u8) -> Option<String> {
    if port >= 1 && port <= ports {
        return None;
    }
    let range = if ports <= 1 { "use -i 1 or leave -i out".to_string() } else { format!("use -i 1 to -i {ports}") };
    Some(format!(" Port {port} (-i) does not exist: {dev} has {ports} port{}; {range}", if ports == 1 { "" } else { "s" }))
}

/// `-x` names an index with no GID: say which indices hold one.
pub(super) fn empty_gid_message(dev: &str, port: u8, ix: u32, tbl_len: u32, valid: &[u32]) -> String {
    let where_ = if tbl_len > 0 && ix >= tbl_len {
        format!("beyond the GID table ({tbl_len} entries)")
    } else {
        "empty".to_string()
    };
    let list = if valid.is_empty() {
        "none is populated (is the netdev up with an IP address?)".to_string()
    } else {
        let shown: Vec<String> = valid.iter().take(16).map(|i| i.to_string()).collect();
        format!("populated indices: {}{}", shown.join(", "), if valid.len() > 16 { ", …" } else { "" })
    };
    format!(" GID index {ix} (-x) is {where_} on {dev} port {port}; {list} (rperftest devinfo -v lists them)")
}

/// The device limits the options are checked against before anything is created.
#[derive(Clone, Copy, Debug)]
pub(super) struct DevLimits {
    pub(super) max_msg_sz: u32,
    pub(super) max_qp_wr: u32,
    pub(super) max_cqe: u32,
    pub(super) max_srq_wr: u32,
}

/// A message size or queue depth beyond the device's limits, as one line naming the option and
/// the limit (a zero limit means the device did not report it and is not checked).
pub(super) fn limits_problem(dev: &str, p: &Params, l: &DevLimits) -> Option<String> {
    let max_size = p.sizes().into_iter().max().unwrap_or(p.size);
    if l.max_msg_sz > 0 && max_size > u64::from(l.max_msg_sz) {
        let opt = if p.test_method == TestMethod::All { "-a (largest size)" } else { "-s" };
        return Some(format!(
            " Message size {max_size} ({opt}) is larger than the port's max_msg_sz {} on {dev}; use -s {} or less",
            l.max_msg_sz, l.max_msg_sz
        ));
    }
    if l.max_qp_wr > 0 && p.tx_depth > l.max_qp_wr {
        return Some(format!(
            " TX depth {} (-t) exceeds the device's max_qp_wr {} on {dev}; use -t {} or less",
            p.tx_depth, l.max_qp_wr, l.max_qp_wr
        ));
    }
    let rx_limit = if p.use_srq { l.max_srq_wr } else { l.max_qp_wr };
    if rx_limit > 0 && p.verb.has_recv_comp() && p.rx_depth > rx_limit {
        let what = if p.use_srq { "max_srq_wr" } else { "max_qp_wr" };
        return Some(format!(
            " RX depth {} (-r) exceeds the device's {what} {rx_limit} on {dev}; use -r {rx_limit} or less",
            p.rx_depth
        ));
    }
    let cq = u64::from(p.tx_depth).max(u64::from(p.rx_depth)) * u64::from(p.num_qps.max(1));
    if l.max_cqe > 0 && cq > u64::from(l.max_cqe) {
        return Some(format!(
            " CQ depth {cq} (-t/-r × -q {}) exceeds the device's max_cqe {} on {dev}; lower -t, -r or -q",
            p.num_qps, l.max_cqe
        ));
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn srd_refused_in_one_line_naming_the_device() {
        let send = crate::params::parsed(Tool::SendBw, &["-c", "SRD"]);
        let rxe = srd_refusal("rxe0", uverbs::sys::RDMA_DRIVER_RXE, &send).unwrap();
        assert_eq!(
            rxe,
            " -c SRD: device rxe0 has no SRD (SRD is the transport of AWS EFA devices; rxe0 is served by the rxe driver): use -c UD or -c RC"
        );
        let bnxt = srd_refusal("bnxt_re0", 6, &send).unwrap();
        assert!(bnxt.contains("bnxt_re0 is served by the bnxt_re driver"), "{bnxt}");
        assert!(srd_refusal("x0", 99, &send).unwrap().contains("served by driver id 99"));
        // EFA: the send tools run SRD with one size; the rest is refused in one line.
        let efa = providers::efa::RDMA_DRIVER_EFA;
        assert_eq!(srd_refusal("rdmap0s6", efa, &send), None);
        assert_eq!(srd_refusal("rdmap0s6", efa, &crate::params::parsed(Tool::SendLat, &["-c", "SRD"])), None);
        assert_eq!(srd_refusal("rdmap0s6", efa, &crate::params::parsed(Tool::ReadBw, &["-c", "SRD"])), None);
        assert_eq!(srd_refusal("rdmap0s6", efa, &crate::params::parsed(Tool::ReadLat, &["-c", "SRD"])), None);
        assert_eq!(srd_refusal("rdmap0s6", efa, &crate::params::parsed(Tool::WriteBw, &["-c", "SRD"])), None);
        assert_eq!(srd_refusal("rdmap0s6", efa, &crate::params::parsed(Tool::WriteLat, &["-c", "SRD", "--write_with_imm"])), None);
        let all = srd_refusal("rdmap0s6", efa, &crate::params::parsed(Tool::SendBw, &["-c", "SRD", "-a"])).unwrap();
        assert!(all.contains("-a over SRD"), "{all}");
        for l in [rxe, all] {
            assert!(!l.contains('\n'));
        }
    }

    #[test]
    fn srd_rdma_needs_the_devices_cap_as_perftest_checks_it() {
        let read = crate::params::parsed(Tool::ReadBw, &["-c", "SRD"]);
        let lat = crate::params::parsed(Tool::ReadLat, &["-c", "SRD"]);
        let can = SrdCaps { rdma_read: true, rdma_write: false, max_rdma_size: 1 << 30 };
        assert_eq!(srd_rdma_refusal(&read, Some(can)), None);
        assert_eq!(srd_rdma_refusal(&lat, Some(can)), None);
        let cannot = SrdCaps { rdma_read: false, ..can };
        // perftest 6.29's line, word for word (check_mtu).
        assert_eq!(srd_rdma_refusal(&read, Some(cannot)).unwrap(), "Read verb is not supported with this EFA device");
        assert_eq!(srd_rdma_refusal(&lat, None).unwrap(), "Read verb is not supported with this EFA device");
        // Sends need no cap; other transports are not asked.
        assert_eq!(srd_rdma_refusal(&crate::params::parsed(Tool::SendBw, &["-c", "SRD"]), None), None);
        assert_eq!(srd_rdma_refusal(&crate::params::parsed(Tool::ReadBw, &[]), None), None);
        // Writes (and writes with immediate) need the write cap, as 6.29 built with rdma-core 46.
        let write = crate::params::parsed(Tool::WriteBw, &["-c", "SRD"]);
        let imm = crate::params::parsed(Tool::WriteLat, &["-c", "SRD", "--write_with_imm"]);
        for w in [&write, &imm] {
            assert_eq!(srd_rdma_refusal(w, Some(can)).unwrap(), "Write verb is not supported with this EFA device");
            assert_eq!(srd_rdma_refusal(w, Some(SrdCaps { rdma_write: true, ..can })), None);
        }
        assert_eq!(srd_rdma_refusal(&read, Some(SrdCaps { rdma_write: true, ..cannot })).unwrap(), "Read verb is not supported with this EFA device");
    }

    #[test]
    fn events_need_a_device_that_signals_them() {
        let e = crate::params::parsed(Tool::SendBw, &["-c", "SRD", "-e"]);
        let line = events_refusal(&e, "rdmap0s6", false).unwrap();
        assert_eq!(
            line,
            " -e: device rdmap0s6 cannot signal CQ events (its EFA caps have no CQ notifications): run without -e (the tools poll)"
        );
        assert!(!line.contains('\n'));
        assert_eq!(events_refusal(&e, "rdmap0s6", true), None);
        assert_eq!(events_refusal(&crate::params::parsed(Tool::SendBw, &["-c", "SRD"]), "rdmap0s6", false), None);
    }
}
