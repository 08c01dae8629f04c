//! Plausibility of what a peer sends after the setup blocks decode. perftest before 6.28 does
//! not negotiate, so two sides started with different options drift out of step: one reads a
//! re-sent key record as a new QP's, or a key record's text as a report. These checks turn such
//! bytes into one line naming the likely option, before anything is connected or printed.
//!
//! Facts relied on (6.06 and 6.29 TCP captures): after the per-QP records, every later key
//! exchange re-sends the same records, QP i's for the per-QP round and QP 0's for each barrier.

use super::error::OobError;
use super::msg::{BwReport, KeyMsg};
use super::plan::KeyPurpose;

/// The peer's first record of each QP, against which its later records are checked.
#[derive(Clone, Debug)]
pub struct KeyLedger {
    first: Vec<Option<KeyMsg>>,
    /// This side's `-q` (for the message).
    num_qps: usize,
    /// Distinct QPs have distinct QP numbers (false with `-g`, where every record names the
    /// group's QPN, and with `-c DC`, whose target numbers exist only after RTR).
    distinct_qpns: bool,
    /// `-c DC`: a record re-sent after RTR carries the new DCT number; the rest must match.
    qpn_may_change: bool,
}

impl KeyLedger {
    pub fn new(num_qps: usize, distinct_qpns: bool, qpn_may_change: bool) -> Self {
        KeyLedger { first: vec![None; num_qps.max(1)], num_qps: num_qps.max(1), distinct_qpns, qpn_may_change }
    }

    /// Check one received record; `qp` and `purpose` are where this side's plan is.
    pub fn check(&mut self, qp: usize, purpose: KeyPurpose, k: &KeyMsg) -> Result<(), OobError> {
        let q = self.num_qps;
        if purpose == KeyPurpose::QpInfo {
            if self.distinct_qpns {
                if let Some(j) = self.first.iter().position(|f| f.is_some_and(|f| f.qpn == k.qpn && f.gid == k.gid)) {
                    return Err(OobError::PeerOutOfStep {
                        detail: format!(
                            "the peer sent the same QP (QPN {:#x}) as its QP #{j} and QP #{qp}: it runs fewer QPs than \
                             this side's -q {q}; give both sides the same -q",
                            k.qpn
                        ),
                    });
                }
            }
            if let Some(slot) = self.first.get_mut(qp) {
                *slot = Some(*k);
            }
            return Ok(());
        }
        let idx = if purpose == KeyPurpose::RemoteInfo { qp } else { 0 };
        let Some(Some(f)) = self.first.get(idx).copied() else { return Ok(()) };
        let same = if self.qpn_may_change { KeyMsg { qpn: f.qpn, ..*k } == f } else { *k == f };
        if same {
            if self.qpn_may_change {
                self.first[idx] = Some(*k);
            }
            return Ok(());
        }
        let what = if purpose == KeyPurpose::RemoteInfo {
            format!("record for QP #{qp} after connecting")
        } else {
            "barrier record (a copy of its QP #0 record)".to_string()
        };
        let likely = if purpose == KeyPurpose::RemoteInfo || k.qpn != f.qpn {
            format!("it runs more QPs than this side's -q {q}, or another tool; give both sides the same -q")
        } else {
            "the two sides run different tools or -a/-b/-D; give both sides the same options".to_string()
        };
        Err(OobError::PeerOutOfStep {
            detail: format!(
                "the peer's {what} (QPN {:#x}, PSN {:#x}) is not the one it sent first (QPN {:#x}, PSN {:#x}): {likely}",
                k.qpn, k.psn, f.qpn, f.psn
            ),
        })
    }
}

/// Largest message perftest can send (`-s` is checked against the port's max_msg_sz, 2^31).
pub const MAX_REPORT_SIZE: u64 = 1 << 31;
/// More messages than 2^48 would take days at a billion per second.
pub const MAX_REPORT_ITERS: u64 = 1 << 48;
/// Bandwidth figures (MB/s or Gb/s) and message rates (Mpps) above these are not measurements.
pub const MAX_REPORT_BW: f64 = 1e7;
pub const MAX_REPORT_MSG_RATE: f64 = 1e5;

/// Check a peer's report that this side is about to print (the uni-BW server prints its
/// client's; `-b` sums both). `expect_size`: the size this side ran, where the peer must have
/// run the same (`-b`); `num_qps`: this side's `-q`, for the message.
pub fn check_report(r: &BwReport, expect_size: Option<u64>, num_qps: u32) -> Result<(), OobError> {
    let raw = r.size.to_be_bytes();
    if raw.iter().all(|c| c.is_ascii_hexdigit() || *c == b':') {
        return Err(OobError::PeerOutOfStep {
            detail: format!(
                "the peer sent key-record text ({:?}) where its results were due: the two sides exchange different \
                 numbers of messages, most likely a different -q (this side -q {num_qps}), -a or -b; give both sides \
                 the same options",
                String::from_utf8_lossy(&raw)
            ),
        });
    }
    let bad = |what: String| OobError::PeerOutOfStep {
        detail: format!("the peer's results are not a measurement: {what}; is it perftest started with the same tool and options?"),
    };
    if r.size == 0 || r.size > MAX_REPORT_SIZE {
        return Err(bad(format!("message size {} (hex {:016x}) is outside 1..=2^31", r.size, r.size)));
    }
    // 0 is what perftest reports for a -D run (it counts no iterations there).
    if r.iters > MAX_REPORT_ITERS {
        return Err(bad(format!("{} iterations (hex {:016x})", r.iters, r.iters)));
    }
    for (name, v, max) in [
        ("BW peak", r.bw_peak, MAX_REPORT_BW),
        ("BW average", r.bw_avg, MAX_REPORT_BW),
        ("message rate", r.msg_rate, MAX_REPORT_MSG_RATE),
    ] {
        if !(v.is_finite() && (0.0..=max).contains(&v)) {
            return Err(bad(format!("{name} {v:e} is outside 0..={max:e}")));
        }
    }
    if let Some(s) = expect_size {
        if r.size != s {
            return Err(OobError::PeerOutOfStep {
                detail: format!("-s: this side {s}, peer {}; give both sides the same -s (or both -a)", r.size),
            });
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::oob::msg::{KeyFormat, ReportField};

    fn key(qpn: u32, psn: u32) -> KeyMsg {
        KeyMsg { qpn, psn, rkey: 0x165d, vaddr: 0x7f94_eddd_5000, out_reads: 1, ..KeyMsg::default() }
    }

    /// The 6.29 client of issue 18 (`-q 2`) against a `-q 1` server: the server's second read
    /// is the client's QP #1 record (capture ib_write_bw_q2: QPNs 0x26 then 0x28).
    #[test]
    fn a_peer_with_more_qps_is_named_at_the_first_re_sent_record() {
        let mut l = KeyLedger::new(1, true, false);
        l.check(0, KeyPurpose::QpInfo, &key(0x26, 0xea611a)).unwrap();
        let e = l.check(0, KeyPurpose::RemoteInfo, &key(0x28, 0xc81dfc)).unwrap_err().to_string();
        assert_eq!(
            e,
            "the peer's record for QP #0 after connecting (QPN 0x28, PSN 0xc81dfc) is not the one it sent first \
             (QPN 0x26, PSN 0xea611a): it runs more QPs than this side's -q 1, or another tool; give both sides the same -q"
        );
    }

    #[test]
    fn a_peer_with_fewer_qps_sends_the_same_qp_twice() {
        let mut l = KeyLedger::new(2, true, false);
        l.check(0, KeyPurpose::QpInfo, &key(0x26, 0xea611a)).unwrap();
        let e = l.check(1, KeyPurpose::QpInfo, &key(0x26, 0xea611a)).unwrap_err().to_string();
        assert!(e.starts_with("the peer sent the same QP (QPN 0x26) as its QP #0 and QP #1: it runs fewer QPs than this side's -q 2"), "{e}");
    }

    #[test]
    fn the_captured_q2_sequence_passes() {
        // ib_write_bw_q2, seen by either side: QP records, re-sent records, then barriers of QP #0.
        let (k0, k1) = (key(0x26, 0xea611a), key(0x28, 0xc81dfc));
        let mut l = KeyLedger::new(2, true, false);
        for (qp, p, k) in [
            (0, KeyPurpose::QpInfo, k0),
            (1, KeyPurpose::QpInfo, k1),
            (0, KeyPurpose::RemoteInfo, k0),
            (1, KeyPurpose::RemoteInfo, k1),
            (0, KeyPurpose::Sync, k0),
            (0, KeyPurpose::AfterRun, k0),
            (0, KeyPurpose::Close, k0),
        ] {
            l.check(qp, p, &k).unwrap();
        }
    }

    #[test]
    fn multicast_and_dc_records_are_not_held_to_distinct_or_fixed_qpns() {
        let mut l = KeyLedger::new(2, false, false);
        l.check(0, KeyPurpose::QpInfo, &key(0xff_ffff, 1)).unwrap();
        l.check(1, KeyPurpose::QpInfo, &key(0xff_ffff, 2)).unwrap();
        let mut l = KeyLedger::new(1, false, true);
        l.check(0, KeyPurpose::QpInfo, &key(0, 7)).unwrap();
        l.check(0, KeyPurpose::RemoteInfo, &key(0x31, 7)).unwrap();
        l.check(0, KeyPurpose::Sync, &key(0x31, 7)).unwrap();
        assert!(l.check(0, KeyPurpose::Sync, &key(0x31, 8)).is_err());
    }

    #[test]
    fn barriers_before_the_qp_records_are_not_checked() {
        // write_lat/read_lat and -R start with a barrier.
        let mut l = KeyLedger::new(1, true, false);
        l.check(0, KeyPurpose::Sync, &KeyMsg::default()).unwrap();
        l.check(0, KeyPurpose::QpInfo, &key(0x26, 1)).unwrap();
    }

    /// Issue 18's garbage figures: a key record's text read as the five report blocks.
    #[test]
    fn key_text_read_as_a_report_is_named_not_printed() {
        let text = key(0x26, 0xea611a).encode(KeyFormat::Gid).unwrap();
        let mut r = BwReport::default();
        for (i, f) in BwReport::fields(false).iter().enumerate() {
            r.decode_field(*f, &text[i * 8..i * 8 + 8]).unwrap();
        }
        assert_eq!(r.size, 3472328296395452464, "the figure issue 18 saw printed as #bytes");
        let e = check_report(&r, None, 1).unwrap_err().to_string();
        assert_eq!(
            e,
            "the peer sent key-record text (\"0000:000\") where its results were due: the two sides exchange different \
             numbers of messages, most likely a different -q (this side -q 1), -a or -b; give both sides the same options"
        );
    }

    fn good() -> BwReport {
        BwReport { size: 65536, iters: 5000, bw_peak: 40.1, bw_avg: 39.8, msg_rate: 0.000637, ..BwReport::default() }
    }

    #[test]
    fn implausible_values_are_refused_and_plausible_ones_pass() {
        check_report(&good(), Some(65536), 1).unwrap();
        check_report(&BwReport { bw_peak: 0.0, ..good() }, None, 1).unwrap();
        // A -D run's report (C 6.06 write_bw -b -D 4 sends 0 iterations, VM case 24).
        check_report(&BwReport { iters: 0, bw_peak: 0.0, ..good() }, Some(65536), 1).unwrap();
        for (r, want) in [
            (BwReport { size: 0, ..good() }, "message size 0"),
            (BwReport { size: 1 << 40, ..good() }, "message size 1099511627776"),
            (BwReport { iters: u64::MAX, ..good() }, "18446744073709551615 iterations"),
            (BwReport { bw_avg: f64::NAN, ..good() }, "BW average NaN"),
            (BwReport { bw_peak: -1.0, ..good() }, "BW peak -1e0"),
            (BwReport { msg_rate: 1e300, ..good() }, "message rate 1e300"),
        ] {
            let e = check_report(&r, None, 1).unwrap_err().to_string();
            assert!(e.contains(want), "{e}");
            assert!(e.starts_with("the peer's results are not a measurement: "), "{e}");
        }
    }

    #[test]
    fn a_duplex_peer_of_another_size_is_named_by_option() {
        let e = check_report(&good(), Some(4096), 1).unwrap_err().to_string();
        assert_eq!(e, "-s: this side 4096, peer 65536; give both sides the same -s (or both -a)");
    }

    #[test]
    fn golden_report_bytes_of_a_real_peer_pass() {
        // A 6.06 client's five blocks (size 65536, 5000 iterations, doubles big-endian).
        let mut bytes = Vec::new();
        bytes.extend(65536u64.to_be_bytes());
        bytes.extend(5000u64.to_be_bytes());
        for v in [40.1f64, 39.8, 0.000637] {
            bytes.extend(v.to_bits().to_be_bytes());
        }
        let mut r = BwReport::default();
        for (i, f) in [ReportField::Size, ReportField::Iters, ReportField::BwPeak, ReportField::BwAvg, ReportField::MsgRate]
            .into_iter()
            .enumerate()
        {
            r.decode_field(f, &bytes[i * 8..i * 8 + 8]).unwrap();
        }
        check_report(&r, None, 1).unwrap();
    }
}
