//! Which device, port and GID a non-CM test uses: the `-i`/`-li`/`-ri` value "dev[:port]"
//! (default: the first device, port 1, as qperf) and, on an Ethernet (RoCE) port, the GID the
//! tools pick (uverbs::discovery's scored rule: RoCE v2 with an IPv4 address first).

#![forbid(unsafe_code)]

use uverbs::attr::{GidEntry, GidType, LINK_LAYER_INFINIBAND};
use uverbs::discovery::{self, gid, DeviceInfo, SysfsRoot};

use super::node_ext::{GidExt, LL_ETHERNET, LL_IB};

#[derive(Clone, Debug)]
pub struct Local {
    pub info: DeviceInfo,
    pub port: u8,
    /// LL_IB or LL_ETHERNET.
    pub ll: u8,
    /// The GID this side uses on RoCE (None on InfiniBand, or a port without one).
    pub gid: Option<GidEntry>,
}

/// "dev[:port]": the device name ("" = the first device) and the port (qperf: ≥ 1).
pub fn parse_id(text: &str) -> Result<(Option<String>, u8), String> {
    let (name, port) = match text.split_once(':') {
        Some((n, p)) => {
            // qperf reads the port with atoi: leading digits, anything else 0.
            let digits: String = p.trim_start().chars().take_while(|c| c.is_ascii_digit()).collect();
            let v: u64 = digits.parse().unwrap_or(0);
            if v < 1 {
                return Err(format!("bad IB port: {v}; must be at least 1"));
            }
            let v = u8::try_from(v).map_err(|_| format!("bad IB port: {v}; must be at most 255"))?;
            (n, v)
        }
        None => (text, 1),
    };
    Ok(((!name.is_empty()).then(|| name.to_string()), port))
}

pub fn gid_type_code(t: GidType) -> u8 {
    match t {
        GidType::Ib => 0,
        GidType::RoceV1 => 1,
        GidType::RoceV2 => 2,
    }
}

pub fn select(id_text: &str) -> Result<Local, String> {
    let (name, port) = parse_id(id_text)?;
    let info = discovery::find_device(name.as_deref()).map_err(|e| match &name {
        Some(n) => format!("failed to find InfiniBand device {n}: {e}"),
        None => format!("failed to find any InfiniBand devices: {e}"),
    })?;
    let sys = SysfsRoot::system();
    let ll_text = std::fs::read_to_string(sys.port(&info.ibdev, u32::from(port)).join("link_layer"))
        .map_err(|e| format!("{} has no port {port}: {e}; give -i DEV:PORT", info.ibdev))?;
    let ib = ll_text.trim() == "InfiniBand";
    let gid = if ib {
        None
    } else {
        let table = gid::read_gid_table(&sys, &info.ibdev, u32::from(port), uverbs::attr::LINK_LAYER_ETHERNET)
            .map_err(|e| format!("{} port {port}: cannot read the GID table: {e}", info.ibdev))?;
        gid::select_gid(&table, false, gid::GidRule::Scored).map(|c| c.entry)
    };
    let _ = LINK_LAYER_INFINIBAND;
    Ok(Local { info, port, ll: if ib { LL_IB } else { LL_ETHERNET }, gid })
}

impl Local {
    pub fn ethernet(&self) -> bool {
        self.ll == LL_ETHERNET
    }

    /// What this side announces to an rperftest peer.
    pub fn ext(&self) -> GidExt {
        match &self.gid {
            Some(g) => GidExt {
                link_layer: self.ll,
                gid_type: gid_type_code(g.gid_type),
                gid_index: u8::try_from(g.index).unwrap_or(u8::MAX),
                gid: g.gid,
            },
            None => GidExt { link_layer: self.ll, gid_type: 0, gid_index: 0, gid: [0; 16] },
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn id_values() {
        assert_eq!(parse_id(""), Ok((None, 1)));
        assert_eq!(parse_id("rxe0"), Ok((Some("rxe0".into()), 1)));
        assert_eq!(parse_id("mlx5_0:2"), Ok((Some("mlx5_0".into()), 2)));
        assert_eq!(parse_id("rxe0:0"), Err("bad IB port: 0; must be at least 1".into()));
        assert_eq!(parse_id("rxe0:x"), Err("bad IB port: 0; must be at least 1".into()));
        assert_eq!(parse_id(":3"), Ok((None, 3)));
        assert!(parse_id("a:999").is_err());
    }
}
