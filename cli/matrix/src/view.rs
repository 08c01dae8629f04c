//! What the judgement and the report read of a pair's record, whoever holds it: a whole
//! [`Record`] (tests, the few materialised ones), or a compact cell of the run's store
//! ([`super::cells`]), so that a run of millions of pairs is judged and reported without a
//! `Record` per pair in memory.

use super::results::{Record, Side, Status};

/// A pair's record as the judgement and the report read it: a cheap handle (`Copy`) whose
/// strings live as long as the store, `'a`.
pub trait View<'a>: Copy {
    fn test(self) -> &'a str;
    fn rail(self) -> &'a str;
    /// [`super::results::PAIRS`] or a fabric pattern's name.
    fn pattern(self) -> &'a str;
    fn unit(self) -> &'a str;
    fn round(self) -> usize;
    fn status(self) -> Status;
    fn value(self) -> Option<f64>;
    fn median(self) -> Option<f64>;
    fn reason(self) -> &'a str;
    fn retried(self) -> Option<&'a str>;
    /// The side's node, device, address, rate and GPU (its report and tail may be left out).
    fn server(self) -> &'a Side;
    fn client(self) -> &'a Side;

    /// The pair's identity for `--resume`: test, rail and the two nodes (either order), as
    /// [`Record::key`].
    fn key(self) -> (String, String, String, String) {
        let (x, y) = (self.server().node.as_str(), self.client().node.as_str());
        let (lo, hi) = if x <= y { (x, y) } else { (y, x) };
        (self.test().into(), self.rail().into(), lo.into(), hi.into())
    }
}

impl<'a> View<'a> for &'a Record {
    fn test(self) -> &'a str {
        &self.test
    }
    fn rail(self) -> &'a str {
        &self.rail
    }
    fn pattern(self) -> &'a str {
        &self.pattern
    }
    fn unit(self) -> &'a str {
        &self.unit
    }
    fn round(self) -> usize {
        self.round
    }
    fn status(self) -> Status {
        self.status
    }
    fn value(self) -> Option<f64> {
        self.value
    }
    fn median(self) -> Option<f64> {
        self.median
    }
    fn reason(self) -> &'a str {
        &self.reason
    }
    fn retried(self) -> Option<&'a str> {
        self.retried.as_deref()
    }
    fn server(self) -> &'a Side {
        &self.server
    }
    fn client(self) -> &'a Side {
        &self.client
    }
}

/// Records the judgement reads by index and gives its verdicts to.
pub trait Verdicts {
    type V<'a>: View<'a>
    where
        Self: 'a;
    fn count(&self) -> usize;
    fn at(&self, i: usize) -> Self::V<'_>;
    /// Record `i`'s verdict: its status, its reason (None: as it is) and the median of its
    /// test and rail.
    fn set_verdict(
        &mut self,
        i: usize,
        status: Status,
        reason: Option<String>,
        median: Option<f64>,
    );
}

impl Verdicts for [Record] {
    type V<'a> = &'a Record;
    fn count(&self) -> usize {
        self.len()
    }
    fn at(&self, i: usize) -> &Record {
        &self[i]
    }
    fn set_verdict(
        &mut self,
        i: usize,
        status: Status,
        reason: Option<String>,
        median: Option<f64>,
    ) {
        let r = &mut self[i];
        r.status = status;
        r.median = median;
        if let Some(why) = reason {
            r.reason = why;
        }
    }
}

impl Verdicts for Vec<Record> {
    type V<'a> = &'a Record;
    fn count(&self) -> usize {
        self.len()
    }
    fn at(&self, i: usize) -> &Record {
        &self[i]
    }
    fn set_verdict(
        &mut self,
        i: usize,
        status: Status,
        reason: Option<String>,
        median: Option<f64>,
    ) {
        self[..].set_verdict(i, status, reason, median);
    }
}
