//! The BW report exchange (`xchg_bw_reports`): one block per field.

use super::super::error::OobError;
use super::{HINT_PROTO, REPORT_FIELD_LEN};

/// One side's BW results as exchanged by `xchg_bw_reports` (values in the sender's unit): the
/// statistics' own result type.
pub use crate::stats::BwResult as BwReport;

/// The fields of the report exchange, in wire order.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ReportField {
    Size,
    Iters,
    BwPeak,
    BwAvg,
    MsgRate,
    BwAvgP1,
    MsgRateP1,
    BwAvgP2,
    MsgRateP2,
}

impl ReportField {
    /// Every field, in wire order (the first five without `--report-per-port`).
    pub const ALL: [ReportField; 9] = [
        ReportField::Size,
        ReportField::Iters,
        ReportField::BwPeak,
        ReportField::BwAvg,
        ReportField::MsgRate,
        ReportField::BwAvgP1,
        ReportField::MsgRateP1,
        ReportField::BwAvgP2,
        ReportField::MsgRateP2,
    ];

    pub fn name(self) -> &'static str {
        match self {
            ReportField::Size => "size",
            ReportField::Iters => "iterations",
            ReportField::BwPeak => "BW peak",
            ReportField::BwAvg => "BW average",
            ReportField::MsgRate => "message rate",
            ReportField::BwAvgP1 => "BW port 1",
            ReportField::MsgRateP1 => "message rate port 1",
            ReportField::BwAvgP2 => "BW port 2",
            ReportField::MsgRateP2 => "message rate port 2",
        }
    }
}

impl BwReport {
    /// Exchanged fields: 5, or 9 with `--report-per-port` (a local flag both must give).
    pub fn fields(per_port: bool) -> &'static [ReportField] {
        if per_port {
            &ReportField::ALL
        } else {
            &ReportField::ALL[..5]
        }
    }

    /// Byte length of one field; `iters_len` is 8 (peer ≥ 5.33) or 4.
    pub fn field_len(f: ReportField, iters_len: usize) -> usize {
        if f == ReportField::Iters {
            iters_len
        } else {
            REPORT_FIELD_LEN
        }
    }

    /// One field's block (BE u64 / BE IEEE-754 double; 4-byte iterations for old peers).
    pub fn encode_field(&self, f: ReportField, iters_len: usize) -> Vec<u8> {
        match f {
            ReportField::Size => self.size.to_be_bytes().to_vec(),
            ReportField::Iters if iters_len == 4 => (self.iters as u32).to_be_bytes().to_vec(),
            ReportField::Iters => self.iters.to_be_bytes().to_vec(),
            ReportField::BwPeak => self.bw_peak.to_bits().to_be_bytes().to_vec(),
            ReportField::BwAvg => self.bw_avg.to_bits().to_be_bytes().to_vec(),
            ReportField::MsgRate => self.msg_rate.to_bits().to_be_bytes().to_vec(),
            ReportField::BwAvgP1 => self.bw_avg_p1.to_bits().to_be_bytes().to_vec(),
            ReportField::MsgRateP1 => self.msg_rate_p1.to_bits().to_be_bytes().to_vec(),
            ReportField::BwAvgP2 => self.bw_avg_p2.to_bits().to_be_bytes().to_vec(),
            ReportField::MsgRateP2 => self.msg_rate_p2.to_bits().to_be_bytes().to_vec(),
        }
    }

    /// Store one received field. Any bit pattern is accepted (a uni-directional C server sends
    /// uninitialised memory); only the length is checked.
    pub fn decode_field(&mut self, f: ReportField, bytes: &[u8]) -> Result<(), OobError> {
        let want = if f == ReportField::Iters && bytes.len() == 4 { 4 } else { REPORT_FIELD_LEN };
        if bytes.len() != want {
            return Err(OobError::malformed(
                "the report exchange",
                format!("{} field is {} bytes, expected {want}", f.name(), bytes.len()),
                HINT_PROTO,
            ));
        }
        let v = if want == 4 {
            let mut a = [0u8; 4];
            a.copy_from_slice(bytes);
            u64::from(u32::from_be_bytes(a))
        } else {
            let mut a = [0u8; 8];
            a.copy_from_slice(bytes);
            u64::from_be_bytes(a)
        };
        let d = f64::from_bits(v);
        match f {
            ReportField::Size => self.size = v,
            ReportField::Iters => self.iters = v,
            ReportField::BwPeak => self.bw_peak = d,
            ReportField::BwAvg => self.bw_avg = d,
            ReportField::MsgRate => self.msg_rate = d,
            ReportField::BwAvgP1 => self.bw_avg_p1 = d,
            ReportField::MsgRateP1 => self.msg_rate_p1 = d,
            ReportField::BwAvgP2 => self.bw_avg_p2 = d,
            ReportField::MsgRateP2 => self.msg_rate_p2 = d,
        }
        Ok(())
    }

    /// Summed duplex line: local + remote peak, average and message rate (size and iterations
    /// stay local).
    pub fn summed(&self, remote: &BwReport) -> BwReport {
        BwReport {
            bw_peak: self.bw_peak + remote.bw_peak,
            bw_avg: self.bw_avg + remote.bw_avg,
            msg_rate: self.msg_rate + remote.msg_rate,
            bw_avg_p1: self.bw_avg_p1 + remote.bw_avg_p1,
            msg_rate_p1: self.msg_rate_p1 + remote.msg_rate_p1,
            bw_avg_p2: self.bw_avg_p2 + remote.bw_avg_p2,
            msg_rate_p2: self.msg_rate_p2 + remote.msg_rate_p2,
            ..*self
        }
    }
}
