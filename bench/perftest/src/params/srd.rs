//! `-c SRD` (AWS EFA's Scalable Reliable Datagram): perftest 6.29's parameter rules for it. Whether
//! the device has SRD is decided once it is found (`tool::setup::srd_refusal`).

use super::{conflict, Connection, ParamError, Params};

/// perftest 6.29 (`force_dependecies`): no rdma_cm, and every request completes (CQ moderation 1:
/// EFA completes every send, and libefa refuses unsignaled ones).
pub(super) fn dependencies(p: &mut Params) -> Result<(), ParamError> {
    if p.connection != Connection::Srd {
        return Ok(());
    }
    if p.conn.work_rdma_cm || p.conn.use_rdma_cm {
        let opt = if p.conn.work_rdma_cm {
            "-c SRD, -R/--rdma_cm"
        } else {
            "-c SRD, -z/--comm_rdma_cm"
        };
        return Err(conflict(opt, "SRD does not support RDMA_CM"));
    }
    p.cq_mod = 1;
    Ok(())
}

#[cfg(test)]
mod tests {
    use crate::params::parse::parsed;
    use crate::params::{parse, Tool};

    #[test]
    fn srd_takes_no_rdma_cm_and_completes_every_send() {
        assert_eq!(parsed(Tool::SendBw, &["-c", "SRD", "-Q", "8"]).cq_mod, 1);
        assert_eq!(parsed(Tool::SendBw, &["-c", "UD", "-Q", "8"]).cq_mod, 8);
        let a: Vec<String> = ["-c", "SRD", "-R"].iter().map(|s| s.to_string()).collect();
        let e = parse(Tool::SendBw, &a).expect_err("refused");
        assert!(
            e.to_string().contains("SRD does not support RDMA_CM"),
            "{e}"
        );
    }
}
