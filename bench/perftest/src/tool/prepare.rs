//! What a side checks and reads once its device is open and before it connects: `--odp`
//! against the device's capabilities (perftest's `check_odp_support`), the
//! `--payload_file_path` pattern, the `--mmap` file against the buffer, and the buffer's fill.
//! The tool's decisions over [`Params`]; the buffer mechanics are `engine::memsrc`.

use uverbs::attr::DeviceAttr;

use crate::engine::memsrc::{self, Fill};
use crate::engine::verbs::BufLayout;
use crate::params::{Connection, Params, Role, Tool, Verb};

/// The fill for this run: `payload` is the parsed `--payload_file_path` pattern, if any.
pub fn fill_for(tool: Tool, payload: Option<Vec<u8>>) -> Fill {
    match (tool, payload) {
        (Tool::WriteLat, _) => Fill::Zero,
        (_, Some(v)) if !v.is_empty() => Fill::Pattern(v),
        _ => Fill::Random,
    }
}

/// The checks that need no connection, run once the device is open: `--odp` against the
/// device's capabilities, `--payload_file_path` read and parsed (returned), the `--mmap` file
/// against the buffer size (UD messages are cut to the MTU later, so its estimate assumes at
/// most 4096 bytes). One line on failure.
pub fn prepare(p: &Params, attr: &DeviceAttr, page_size: u64, cache_line: u64) -> Result<Option<Vec<u8>>, String> {
    if p.buf.odp {
        if let Some(m) = odp_problem(attr, p) {
            return Err(m);
        }
    }
    let max_size = p.sizes().into_iter().max().unwrap_or(p.size);
    let payload = match &p.buf.payload_file_path {
        Some(path) => Some(memsrc::load_payload(path, usize::try_from(max_size).unwrap_or(usize::MAX))?),
        None => None,
    };
    if let Some(path) = &p.buf.mmap_file {
        let ud = p.connection == Connection::Ud;
        let size = if ud { max_size.min(4096) } else { max_size };
        let need = BufLayout::new(p.num_qps as usize, size, page_size, cache_line, ud).total();
        memsrc::precheck_mmap(path, p.buf.mmap_offset, need, page_size)?;
    }
    Ok(payload)
}

const ODP_SUPPORT: u64 = 1 << 0;
const ODP_SEND: u32 = 1 << 0;
const ODP_RECV: u32 = 1 << 1;
const ODP_WRITE: u32 = 1 << 2;
const ODP_READ: u32 = 1 << 3;
const ODP_ATOMIC: u32 = 1 << 4;
const ODP_SRQ_RECV: u32 = 1 << 5;

/// perftest's `check_odp_support`: the device's ODP capabilities against the transport, verb
/// and role. `None` when ODP may be used; else perftest's line plus what to do.
pub fn odp_problem(attr: &DeviceAttr, p: &Params) -> Option<String> {
    let hint = " (run without --odp)";
    if attr.resp.odp_caps.general_caps & ODP_SUPPORT == 0 {
        return Some(format!(" The device does not support On-Demand Paging.{hint}"));
    }
    let (caps, name) = match p.connection {
        Connection::Rc => (attr.resp.odp_caps.rc_odp_caps, "RC"),
        Connection::Ud => (attr.resp.odp_caps.ud_odp_caps, "UD"),
        Connection::Xrc => (attr.resp.xrc_odp_caps, "XRC"),
        Connection::Uc => return Some(format!(" ODP is not available on UC transport.{hint}")),
        Connection::Srd => return Some(format!(" ODP is not available on SRD transport.{hint}")),
        Connection::Dc => return None,
    };
    let recv = caps & (ODP_RECV | ODP_SRQ_RECV) != 0;
    let send = caps & ODP_SEND != 0;
    let missing = match p.verb {
        Verb::Send | Verb::SendImm if p.duplex => (!(send && recv)).then_some("ODP bidirectional Send is"),
        Verb::Send | Verb::SendImm if p.machine == Role::Client => (!send).then_some("ODP Send is"),
        Verb::Send | Verb::SendImm => (!recv).then_some("ODP Recv is"),
        Verb::Write | Verb::WriteImm => (caps & ODP_WRITE == 0).then_some("ODP Write is"),
        Verb::Read => (caps & ODP_READ == 0).then_some("ODP Read is"),
        Verb::Atomic => (caps & ODP_ATOMIC == 0).then_some("ODP Atomics are"),
    };
    missing.map(|m| format!(" {m} not supported for {name} transport.{hint}"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::params::parsed;

    #[test]
    fn the_fill_follows_the_tool_and_payload() {
        assert_eq!(fill_for(Tool::WriteLat, Some(vec![1])), Fill::Zero);
        assert_eq!(fill_for(Tool::SendBw, Some(vec![1, 2, 3])).truncated(2), Fill::Pattern(vec![1, 2]));
        assert_eq!(fill_for(Tool::SendBw, None), Fill::Random);
    }

    #[test]
    fn odp_follows_perftests_capability_checks() {
        let mut a = DeviceAttr::default();
        let wb = parsed(Tool::WriteBw, &["--odp"]);
        assert_eq!(odp_problem(&a, &wb).unwrap(), " The device does not support On-Demand Paging. (run without --odp)");
        a.resp.odp_caps.general_caps = ODP_SUPPORT;
        assert!(odp_problem(&a, &wb).unwrap().starts_with(" ODP Write is not supported for RC transport."));
        a.resp.odp_caps.rc_odp_caps = ODP_WRITE | ODP_SEND;
        assert_eq!(odp_problem(&a, &wb), None);
        // send_bw: the client needs SEND, the server RECV (or SRQ RECV), -b both.
        let client = parsed(Tool::SendBw, &["--odp", "host"]);
        let server = parsed(Tool::SendBw, &["--odp"]);
        let duplex = parsed(Tool::SendBw, &["--odp", "-b"]);
        assert_eq!(odp_problem(&a, &client), None);
        assert!(odp_problem(&a, &server).unwrap().starts_with(" ODP Recv is not supported for RC"));
        assert!(odp_problem(&a, &duplex).unwrap().starts_with(" ODP bidirectional Send is not supported"));
        a.resp.odp_caps.rc_odp_caps |= ODP_SRQ_RECV;
        assert_eq!(odp_problem(&a, &server), None);
        assert!(odp_problem(&a, &parsed(Tool::ReadBw, &["--odp"])).unwrap().starts_with(" ODP Read is"));
        assert!(odp_problem(&a, &parsed(Tool::AtomicBw, &["--odp"])).unwrap().starts_with(" ODP Atomics are"));
        assert!(odp_problem(&a, &parsed(Tool::WriteBw, &["--odp", "-c", "UC"])).unwrap().contains("UC transport"));
    }
}
