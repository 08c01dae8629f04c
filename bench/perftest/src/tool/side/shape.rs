//! The shape of the test as the exchanges settle it: the message sizes, the MTU before and
//! after the MTU exchange, the merged system data, and the inline size and outstanding reads
//! (lowered by the peer's NEGOTIATE block or by what the device created).

use crate::oob::msg::{self, SysData};
use crate::params::{Connection, TestMethod};
use crate::tool::ToolError;

use super::conf::SideConf;

pub(super) struct Shape {
    pub(super) inline: u32,
    pub(super) out_reads: u32,
    /// `ibv_mtu` enum of this side (the port's, or `-m`), sent in the MTU exchange.
    pub(super) local_mtu: u8,
    /// The MTU both sides use (after the exchange).
    pub(super) mtu: u8,
    pub(super) sys: SysData,
    pub(super) sizes: Vec<u64>,
}

impl Shape {
    /// `-c UD`: no message above the MTU (a sweep drops those sizes, one size is cut to the MTU
    /// with perftest's note unless `-s` asked for it); `-c SRD`: none above the port's largest
    /// message, the same way. Idempotent.
    pub(super) fn clamp_ud_sizes(&mut self, conf: &SideConf) -> Result<(), ToolError> {
        let p = conf.p;
        let mtu_bytes = u64::from(msg::mtu_bytes(self.mtu).unwrap_or(1024));
        if p.connection == Connection::Ud {
            if p.test_method == TestMethod::All {
                self.sizes.retain(|&s| s <= mtu_bytes);
            } else if self.sizes[0] > mtu_bytes {
                if p.size_requested {
                    return Err(ToolError::new(1, " Max message size in UD cannot be greater than MTU"));
                }
                conf.out.err(&format!(" Max msg size in UD is MTU {mtu_bytes}\n Changing to this MTU\n"));
                self.sizes[0] = mtu_bytes;
            }
        }
        // -c SRD (one size: `-a` is refused before this): perftest 6.29's check against the
        // port's largest message.
        let max_msg = u64::from(conf.dev.port.max_msg_sz);
        if p.connection == Connection::Srd && self.sizes[0] > max_msg {
            if p.size_requested {
                return Err(ToolError::new(1, format!(" Max message size in SRD cannot be greater than {max_msg} ")));
            }
            conf.out.err(&format!(" Max msg size is {max_msg}\n Changing to this size\n"));
            self.sizes[0] = max_msg;
        }
        Ok(())
    }
}
