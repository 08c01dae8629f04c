//! `-c XRC` against the device: perftest 6.06 opens an XRC domain in `ctx_init` (after the
//! version and MTU exchanges) and, on a device without XRC (rxe), fails there with three lines
//! and exit 1; its peer then sees the connection close. rperftest fails at the same point
//! with the same lines, followed by one line that names `-c XRC` and the reason. On a device
//! with XRC, [`XrcPlan`] lays the run out as perftest does (built, never run on an XRC device).

use uverbs::attr::DeviceAttr;
use uverbs::provider::QpType;
use uverbs::wr::RemoteAddr;

use super::bw::QpTarget;

/// perftest 6.06's lines when `ibv_open_xrcd` fails (`ctx_xrcd_create` and `ctx_init`).
pub const PERFTEST_XRCD_FAILURE: &str = "Error opening XRC domain\nCouldn't create XRC resources\n Couldn't create IB resources\n";

/// Why `-c XRC` cannot run on this device, as the text to print (perftest's lines and ours),
/// or `None` when it can.
///
/// A device without `IB_UVERBS_DEVICE_XRC` has no XRC domains: perftest's failure, then the
/// reason. A device with XRC (mlx5) gets the XRC resources of [`XrcPlan`].
pub fn device_problem(dev: &str, attr: &DeviceAttr) -> Option<String> {
    if !attr.supports_xrc() {
        return Some(format!(
            "{PERFTEST_XRCD_FAILURE} -c XRC: device {dev} has no XRC support (IB_DEVICE_XRC is not in its capability flags; rxe never has it): use -c RC"
        ));
    }
    None
}

/// Which XRC QP each local QP is, which of the peer's keys it connects to, and how the
/// benchmark's "lanes" (what the loops call a QP: one sender and, in a split run, its receiver)
/// map onto the QPs and the buffer, as perftest 6.06's `ctx_xrc_qp_create`, `ctx_connect`,
/// `ctx_set_send_reg_wqes`, `ctx_set_recv_wqes` and `run_iter_lat_write` do.
///
/// * Uni-directional BW: the client's QPs are all XRC initiators (send), the server's all XRC
///   targets (receive); QP `i` connects to the peer's QP `i`.
/// * Latency tests and `-b` (the QP count was doubled while parsing): on both sides the first
///   half are initiators, the second half targets; initiator `i` connects to (and sends to) the
///   peer's target `half + i`, target `half + i` connects to the peer's initiator `i`.
///
/// Every key of a side carries the number of that side's one XRC SRQ; a send names the SRQN
/// of the key it targets (`wr.qp_type.xrc.remote_srqn = rem_dest[xrc_offset + i].srqn`).
///
/// The same "split lanes" plan serves `-c DC` with the latency tests and `-b` (perftest 6.06
/// uses one `xrc_offset` for both): DCIs for initiators, DCTs for targets
/// ([`crate::params::dc::split_lanes`]); a DC send names the partner DCT through its
/// destination instead of an SRQN (the DCT has the SRQ).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct XrcPlan {
    /// QPs on this side (after the doubling).
    pub num_qps: usize,
    /// Latency test or `-b`: initiators and targets on both sides.
    pub split: bool,
    /// Uni-directional BW server: targets only.
    pub receiver_only: bool,
}

impl XrcPlan {
    /// `split` = latency test or `-b`; `server` = this side is the BW server.
    pub fn new(num_qps: usize, split: bool, server: bool) -> Self {
        XrcPlan { num_qps: num_qps.max(1), split, receiver_only: !split && server }
    }

    fn half(&self) -> usize {
        self.num_qps / 2
    }

    /// Whether local QP `q` is an XRC target (receive side); else an XRC initiator.
    pub fn is_target(&self, q: usize) -> bool {
        if self.split {
            q >= self.half()
        } else {
            self.receiver_only
        }
    }

    /// The QP type of local QP `q`.
    pub fn qp_type(&self, q: usize) -> QpType {
        if self.is_target(q) {
            QpType::XrcTgt
        } else {
            QpType::XrcIni
        }
    }

    /// Which of the peer's keys local QP `q` takes its destination QPN, PSN, LID/GID and
    /// out_reads from (INIT→RTR→RTS). perftest 6.06 computes this with an offset that flips
    /// sign at the half and is reset after each QP; for DC its `continue` after a DCT's RTR
    /// skips that reset, so with more than one QP per half a DCT reads past the peer's keys.
    /// Here each QP gets its intended partner (the same as perftest's for XRC).
    pub fn peer_key(&self, q: usize) -> usize {
        match (self.split, q.checked_sub(self.half())) {
            (false, _) => q,
            (true, None) => q + self.half(),
            (true, Some(k)) => k,
        }
    }

    /// How many lanes the loops drive (perftest's `num_of_qps`, halved for `-b` and the
    /// latency tests). Also the QP count of the BW report, and the count `-O` splits between
    /// the two ports (`q % lanes < lanes / 2`: the first port, in each half).
    pub fn lanes(&self) -> usize {
        if self.split {
            self.half().max(1)
        } else {
            self.num_qps
        }
    }

    /// The local QP lane `l` sends on (an initiator, except on a receive-only server, where it
    /// is the target that lane's receives arrive through).
    pub fn send_qp(&self, l: usize) -> usize {
        l
    }

    /// The local target QP of lane `l` (its receive area is what `write_lat` polls).
    pub fn recv_qp(&self, l: usize) -> usize {
        if self.split {
            self.half() + l
        } else {
            l
        }
    }

    /// The peer's key lane `l`'s sends target: its VAddr, rkey and SRQN.
    pub fn send_key(&self, l: usize) -> usize {
        self.peer_key(self.send_qp(l))
    }

    /// Buffer offset where lane `l`'s receives are posted. perftest's `ctx_set_recv_wqes`
    /// uses `(num_of_qps + k) × B` with `num_of_qps` already halved in a split run, i.e. the
    /// (unused) send area of the target QP `half + l`; unsplit, the usual receive area.
    pub fn recv_post_off(&self, l: usize, area: u64) -> u64 {
        if self.split {
            (self.half() + l) as u64 * area
        } else {
            (self.num_qps + l) as u64 * area
        }
    }
}

/// The loops' targets, one per lane: lane `l` sends from its send QP's area, to the VAddr,
/// rkey and SRQN of the peer key [`XrcPlan::send_key`] names (perftest's
/// `rem_dest[xrc_offset + i]`), and posts its receives at [`XrcPlan::recv_post_off`].
/// `remote(k)` gives the peer's key `k` as (address, rkey) and SRQN.
pub fn lane_targets(
    plan: &XrcPlan,
    lkey: u32,
    send_addr: impl Fn(usize) -> u64,
    recv_post_addr: impl Fn(usize) -> u64,
    remote: impl Fn(usize) -> (RemoteAddr, u32),
) -> Vec<QpTarget> {
    (0..plan.lanes())
        .map(|l| {
            let (r, srqn) = remote(plan.send_key(l));
            QpTarget { lkey, local_addr: send_addr(plan.send_qp(l)), recv_addr: recv_post_addr(l), remote: r, ud: None, remote_srqn: srqn }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_device_without_xrc_fails_like_perftest_then_says_why() {
        let mut rxe = DeviceAttr::default();
        rxe.resp.base.device_cap_flags = 0x0022_1c76;
        assert!(!rxe.supports_xrc());
        let m = device_problem("rxe0", &rxe).unwrap();
        let lines: Vec<&str> = m.lines().collect();
        assert_eq!(
            lines[..3],
            ["Error opening XRC domain", "Couldn't create XRC resources", " Couldn't create IB resources"]
        );
        assert_eq!(lines.len(), 4);
        assert!(lines[3].starts_with(" -c XRC: device rxe0 has no XRC support"), "{}", lines[3]);
    }

    #[test]
    fn a_device_with_xrc_goes_on_to_create_the_resources() {
        let mut mlx5 = DeviceAttr::default();
        mlx5.resp.base.device_cap_flags = 1 << 20;
        assert!(mlx5.supports_xrc());
        assert_eq!(device_problem("mlx5_0", &mlx5), None);
    }

    #[test]
    fn uni_bw_client_sends_on_initiators_to_the_same_index() {
        let c = XrcPlan::new(3, false, false);
        assert_eq!(c.lanes(), 3);
        for q in 0..3 {
            assert_eq!(c.qp_type(q), QpType::XrcIni);
            assert_eq!(c.peer_key(q), q);
            assert_eq!((c.send_qp(q), c.send_key(q), c.recv_qp(q)), (q, q, q));
        }
        let s = XrcPlan::new(3, false, true);
        assert!((0..3).all(|q| s.qp_type(q) == QpType::XrcTgt && s.peer_key(q) == q));
        // the server's receives go to the usual receive areas (num_qps + k) × B
        assert_eq!(s.recv_post_off(2, 4096), 5 * 4096);
    }

    #[test]
    fn split_run_pairs_initiators_with_the_peers_targets() {
        // -b -q 2: four QPs per side, two lanes.
        let p = XrcPlan::new(4, true, false);
        assert_eq!(p.lanes(), 2);
        let types: Vec<QpType> = (0..4).map(|q| p.qp_type(q)).collect();
        assert_eq!(types, [QpType::XrcIni, QpType::XrcIni, QpType::XrcTgt, QpType::XrcTgt]);
        let peers: Vec<usize> = (0..4).map(|q| p.peer_key(q)).collect();
        assert_eq!(peers, [2, 3, 0, 1]);
        assert_eq!((p.send_qp(1), p.recv_qp(1), p.send_key(1)), (1, 3, 3));
        // The pairing is symmetric: my initiator's partner's partner is my initiator.
        assert!((0..4).all(|q| p.peer_key(p.peer_key(q)) == q));
        // The server of a split run is laid out the same.
        assert_eq!(XrcPlan::new(4, true, true), XrcPlan { num_qps: 4, split: true, receiver_only: false });
    }

    #[test]
    fn latency_test_layout_as_perftest() {
        // Latency tests: one lane, QP 0 initiator, QP 1 target; write_lat polls QP 1's
        // receive area ((num_qps + 1) × B: perftest's poll_buf_offset 1), receives are posted
        // at (num_qps/2 + 0) × B.
        let p = XrcPlan::new(2, true, false);
        assert_eq!(p.lanes(), 1);
        assert_eq!((p.send_qp(0), p.recv_qp(0), p.send_key(0), p.peer_key(1)), (0, 1, 1, 0));
        assert_eq!(p.recv_post_off(0, 8192), 8192);
        // -O with a split run: perftest's port test uses the halved count, per half.
        let d = XrcPlan::new(4, true, false);
        let slots: Vec<usize> = (0..4).map(|q| crate::engine::dualport::port_slot(q, d.lanes())).collect();
        assert_eq!(slots, [0, 1, 0, 1]);
    }

    #[test]
    fn lane_targets_name_the_partner_keys_address_and_srqn() {
        // -b -q 2 on a side whose buffer starts at 0x1000 with 4 KiB areas; the peer's key k
        // has VAddr 0x9000 + k, rkey 0x100 + k and SRQN 0x77 (one SRQ per side).
        let p = XrcPlan::new(4, true, false);
        let t = lane_targets(
            &p,
            5,
            |q| 0x1000 + q as u64 * 4096,
            |l| 0x1000 + p.recv_post_off(l, 4096),
            |k| (RemoteAddr { addr: 0x9000 + k as u64, rkey: 0x100 + k as u32 }, 0x77),
        );
        assert_eq!(t.len(), 2);
        assert_eq!((t[0].local_addr, t[0].remote.addr, t[0].remote.rkey, t[0].remote_srqn), (0x1000, 0x9002, 0x102, 0x77));
        assert_eq!((t[1].local_addr, t[1].remote.addr, t[1].recv_addr), (0x2000, 0x9003, 0x1000 + 3 * 4096));
        assert!(t.iter().all(|x| x.lkey == 5 && x.ud.is_none()));
        // the uni-BW client: lane q targets the peer's key q
        let c = XrcPlan::new(2, false, false);
        let t = lane_targets(&c, 5, |q| q as u64, |l| l as u64, |k| (RemoteAddr { addr: k as u64, rkey: 0 }, 9));
        assert_eq!(t.iter().map(|x| x.remote.addr).collect::<Vec<_>>(), [0, 1]);
    }

    #[test]
    fn the_key_message_carries_the_srqn_both_ways() {
        use crate::oob::msg::{KeyFormat, KeyMsg};
        let k = KeyMsg { lid: 0, out_reads: 1, qpn: 0xabc, psn: 0xdef, rkey: 0x1234, vaddr: 0x7f00_0000_1000, srqn: 0x00ab_cdef, ..Default::default() };
        let short = k.encode(KeyFormat::Short).unwrap();
        assert_eq!(short, b"0000:0001:000abc:000def:00001234:00007f0000001000:00abcdef\0");
        assert_eq!(KeyMsg::decode(&short, KeyFormat::Short).unwrap().srqn, 0x00ab_cdef);
        let g = KeyMsg { gid: [0xfe; 16], ..k };
        let long = g.encode(KeyFormat::Gid).unwrap();
        assert!(long.ends_with(b":fe:00abcdef:\0"), "{}", String::from_utf8_lossy(&long));
        assert_eq!(KeyMsg::decode(&long, KeyFormat::Gid).unwrap(), g);
    }
}
