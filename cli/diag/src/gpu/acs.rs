//! The ACS (Access Control Services) extended capability of a bridge, from its config space
//! as sysfs gives it (`/sys/bus/pci/devices/BDF/config`), decoded as `lspci -vvv` prints it.
//!
//! Extended capabilities start at 0x100; each begins with a 32-bit header (little-endian):
//! ID in bits 0-15, version in 16-19, the next one's offset in 20-31 (0 ends the list). ACS
//! is ID 0x000D; its capability register is the 16 bits at +4, its control register those at
//! +6. With P2P request or completion redirect (or egress control) enabled on a downstream
//! or root port, a GPU<->NIC transfer that could turn round in the switch is sent up to the
//! root complex instead: slow at best, dropped where the root complex does not route peer
//! traffic. Only root may read past the first 64 bytes of config space.

pub const EXT_CAP_START: usize = 0x100;
pub const ACS_CAP_ID: u16 = 0x000d;
/// The control register's offset in the capability (`setpci ... ECAP_ACS+0x6.w`).
pub const ACS_CTRL: usize = 6;

/// lspci's names of the bits, lowest first (the same for ACSCap and ACSCtl).
pub const FLAG_NAMES: [&str; 7] = [
    "SrcValid",
    "TransBlk",
    "ReqRedir",
    "CmpltRedir",
    "UpstreamFwd",
    "EgressCtrl",
    "DirectTrans",
];

const REQ_REDIR: u16 = 1 << 2;
const CMPLT_REDIR: u16 = 1 << 3;
const EGRESS_CTRL: u16 = 1 << 5;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Acs {
    /// Where the capability is in config space.
    pub offset: usize,
    pub cap: u16,
    pub ctl: u16,
}

impl Acs {
    /// Whether the control register sends peer-to-peer traffic up to the root complex.
    pub fn redirects(&self) -> bool {
        self.ctl & (REQ_REDIR | CMPLT_REDIR | EGRESS_CTRL) != 0
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AcsRead {
    /// Config space ends before the extended capabilities (not root, or a conventional PCI
    /// function): how many bytes there were.
    Short(usize),
    /// The extended capability list has no ACS.
    Absent,
    Found(Acs),
}

fn word(b: &[u8], at: usize) -> Option<u16> {
    Some(u16::from_le_bytes([*b.get(at)?, *b.get(at + 1)?]))
}

/// Find the ACS capability in `config` (the bytes of the config file). The list is untrusted:
/// offsets below 0x100 or unaligned end it, and it is followed at most 1024 steps (no loop).
pub fn find(config: &[u8]) -> AcsRead {
    if config.len() < EXT_CAP_START + 4 {
        return AcsRead::Short(config.len());
    }
    let mut at = EXT_CAP_START;
    for _ in 0..1024 {
        let (Some(lo), Some(hi)) = (word(config, at), word(config, at + 2)) else {
            return AcsRead::Absent;
        };
        let header = u32::from(lo) | (u32::from(hi) << 16);
        if header == 0 || header == u32::MAX {
            return AcsRead::Absent;
        }
        if lo == ACS_CAP_ID {
            return match (word(config, at + 4), word(config, at + ACS_CTRL)) {
                (Some(cap), Some(ctl)) => AcsRead::Found(Acs {
                    offset: at,
                    cap,
                    ctl,
                }),
                _ => AcsRead::Absent,
            };
        }
        let next = (header >> 20) as usize;
        if next < EXT_CAP_START || !next.is_multiple_of(4) {
            return AcsRead::Absent;
        }
        at = next;
    }
    AcsRead::Absent
}

/// A register as lspci prints it after `ACSCap:` / `ACSCtl:`:
/// `SrcValid+ TransBlk- ReqRedir+ CmpltRedir+ UpstreamFwd+ EgressCtrl- DirectTrans-`.
pub fn flags(w: u16) -> String {
    FLAG_NAMES
        .iter()
        .enumerate()
        .map(|(i, n)| format!("{n}{}", if w & (1 << i) != 0 { '+' } else { '-' }))
        .collect::<Vec<_>>()
        .join(" ")
}
