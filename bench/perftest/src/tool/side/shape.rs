//! The shape of the test as the exchanges settle it: the message sizes, the MTU before and
//! after the MTU exchange, the merged system data, and the inline size and outstanding reads
//! (lowered by the peer's NEGOTIATE block or by what the device created).

use crate::oob::msg::{self, SysData};
use crate::params::{Connection, TestMethod, Verb};
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
    /// with perftest's note unless `-s` asked for it); `-c SRD`: no send above the port's
    /// largest message and no RDMA request above the device's largest, the same way. Idempotent.
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
        // -c SRD (one size: `-a` is refused before this).
        if p.connection == Connection::Srd {
            let max_rdma = conf.dev.srd.map_or(0, |c| c.max_rdma_size);
            match srd_size(p.verb, self.sizes[0], p.size_requested, conf.dev.port.max_msg_sz, max_rdma) {
                Ok(None) => {}
                Ok(Some((size, note))) => {
                    conf.out.err(&note);
                    self.sizes[0] = size;
                }
                Err(line) => return Err(ToolError::new(1, line)),
            }
        }
        Ok(())
    }
}

/// perftest 6.29's size rule for `-c SRD` (`check_mtu`): a send no larger than the port's
/// largest message, an RDMA read or write no larger than the device's largest RDMA request
/// (efadv's `max_rdma_size`). `Ok(None)`: the size stands; `Ok(Some((size, note)))`: cut to
/// `size` with perftest's note (nobody asked for the size); `Err(line)`: `-s` asked for it.
fn srd_size(verb: Verb, size: u64, requested: bool, max_msg: u32, max_rdma: u32) -> Result<Option<(u64, String)>, String> {
    let (max, note, refusal) = match verb {
        Verb::Send | Verb::SendImm => (
            max_msg,
            format!(" Max msg size is {max_msg}\n Changing to this size\n"),
            format!(" Max message size in SRD cannot be greater than {max_msg} "),
        ),
        _ => (
            max_rdma,
            format!(" Max RDMA request size is {max_rdma}\n Changing to this size\n"),
            format!(" Max RDMA request size in SRD cannot be greater than {max_rdma}"),
        ),
    };
    if size <= u64::from(max) {
        return Ok(None);
    }
    if requested {
        return Err(refusal);
    }
    Ok(Some((u64::from(max), note)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn srd_sizes_follow_perftest_629s_check_mtu() {
        assert_eq!(srd_size(Verb::Send, 8192, true, 8928, 0), Ok(None));
        assert_eq!(
            srd_size(Verb::Send, 65536, false, 8928, 1 << 30),
            Ok(Some((8928, " Max msg size is 8928\n Changing to this size\n".to_string())))
        );
        assert_eq!(srd_size(Verb::Send, 65536, true, 8928, 1 << 30), Err(" Max message size in SRD cannot be greater than 8928 ".to_string()));
        // A read is bounded by the RDMA size, not the port's message size.
        assert_eq!(srd_size(Verb::Read, 1 << 20, true, 8928, 1 << 30), Ok(None));
        assert_eq!(
            srd_size(Verb::Read, 1 << 20, false, 8928, 65536),
            Ok(Some((65536, " Max RDMA request size is 65536\n Changing to this size\n".to_string())))
        );
        assert_eq!(srd_size(Verb::Read, 1 << 20, true, 8928, 65536), Err(" Max RDMA request size in SRD cannot be greater than 65536".to_string()));
    }
}
