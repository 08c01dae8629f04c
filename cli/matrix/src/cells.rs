//! The run's records, a compact cell per pair: what the coordinator holds of every pair from
//! the moment it ends to the report, so that its memory at 1,024 nodes × 8 rails (4.2 million
//! pairs) is tables of what pairs share and a few MB of cells, not gigabytes of `Record`s.
//!
//! A [`Cell`] is numbers and indices, no heap: the judged value, the median, the start, the
//! wall time, the round, the port, the status, and indices into small tables ([`Table`]) of
//! what pairs share: a *kind* (test, rail, unit, pattern, options, deadline: a handful per
//! run), a *side* (node, device, address, GID index, rate, GPU, exit code: about nodes × rails)
//! and strings (reasons and re-run notes: one per pair that went wrong, shared when equal).
//! A record goes in and comes back out as it was, less each side's perftest report and output
//! tail (what [`Record::slim`] drops; results.jsonl keeps them and the final rewrite puts them
//! back). The judgement and the report read cells through [`View`] without materialising them.
//!
//! The tables stay in memory; the cells too up to [`SPILL_AFTER`] (4 MB), then all of them
//! go to an unnamed file in the run's `--out` ([`super::spill`]), each [`encode`]d to 64 bytes,
//! read through a one-block cache: a [`CellRef`] is the store and an index, and reads its
//! cell at each question (16 bytes a handle where the report gathers them by the pair). The
//! judgement's medians are found in passes over the cells ([`super::select`]), and a re-run
//! group is a filter over them ([`Cells::group`]), so neither copies a test and rail's cells.
//!
//! What stays in memory per pair, once past the threshold: nothing of the cells (64 bytes a
//! pair on disk) nor of the line notes ([`Cells::note_line`]: the cell each line of
//! results.jsonl became, 4 bytes a line on disk, for the final rewrite, which keeps one bit a
//! cell in memory while it runs); with `--resume`, one bit per pair of each phase recorded
//! before (`resume.rs`: n(n-1)/2 bits a phase, a few bytes a flow for a pattern's sparse
//! steps) and a few words per pair that was in the file twice. The tables grow with the nodes
//! × rails and with the pairs that went wrong (their reasons), not with the pairs.
use std::collections::HashMap;
use std::path::Path;
use std::sync::Arc;

use super::results::{Record, Side, Status, PAIRS};
use super::spill::Spill;
use super::view::{Verdicts, View};

/// One pair's record, compact. 64 bytes (a unit test holds it to that).
#[derive(Clone, Copy, Debug)]
pub struct Cell {
    value: f64,
    median: f64,
    started_unix: f64,
    wall_s: f64,
    round: u64,
    /// Index into [`Table::kinds`].
    kind: u32,
    /// Indices into [`Table::sides`].
    server: u32,
    client: u32,
    /// String ids ([`Strings`]); `retried` is [`NONE`] when the pair ran once.
    reason: u32,
    retried: u32,
    port: u16,
    status: Status,
    /// [`HAS_VALUE`], [`HAS_MEDIAN`].
    flags: u8,
}

const HAS_VALUE: u8 = 1;
const HAS_MEDIAN: u8 = 2;
const NONE: u32 = u32::MAX;

/// A cell's size on file ([`encode`]).
pub const CELL_BYTES: usize = 64;

/// The statuses by their byte in an encoded cell.
const STATUSES: [Status; 6] = [
    Status::Ok,
    Status::Low,
    Status::Fail,
    Status::Timeout,
    Status::Unreachable,
    Status::Skipped,
];

/// A cell as 64 bytes, little-endian: value, median, start, wall time (f64 bits), round (u64),
/// kind, server, client, reason, retried (u32), port (u16), status, flags (u8).
pub fn encode(c: &Cell) -> [u8; CELL_BYTES] {
    let mut b = [0u8; CELL_BYTES];
    let f64s = [c.value, c.median, c.started_unix, c.wall_s];
    for (k, x) in f64s.iter().enumerate() {
        b[8 * k..][..8].copy_from_slice(&x.to_bits().to_le_bytes());
    }
    b[32..40].copy_from_slice(&c.round.to_le_bytes());
    let u32s = [c.kind, c.server, c.client, c.reason, c.retried];
    for (k, x) in u32s.iter().enumerate() {
        b[40 + 4 * k..][..4].copy_from_slice(&x.to_le_bytes());
    }
    b[60..62].copy_from_slice(&c.port.to_le_bytes());
    b[62] = STATUSES.iter().position(|&s| s == c.status).unwrap_or(0) as u8;
    b[63] = c.flags;
    b
}

/// [`encode`]'s inverse; None for a status byte no status has.
pub fn decode(b: &[u8; CELL_BYTES]) -> Option<Cell> {
    let u64_at = |at: usize| u64::from_le_bytes(b[at..at + 8].try_into().expect("8 bytes"));
    let u32_at = |at: usize| u32::from_le_bytes(b[at..at + 4].try_into().expect("4 bytes"));
    Some(Cell {
        value: f64::from_bits(u64_at(0)),
        median: f64::from_bits(u64_at(8)),
        started_unix: f64::from_bits(u64_at(16)),
        wall_s: f64::from_bits(u64_at(24)),
        round: u64_at(32),
        kind: u32_at(40),
        server: u32_at(44),
        client: u32_at(48),
        reason: u32_at(52),
        retried: u32_at(56),
        port: u16::from_le_bytes([b[60], b[61]]),
        status: *STATUSES.get(usize::from(b[62]))?,
        flags: b[63],
    })
}

/// Interned strings: each distinct string once, named by its id.
#[derive(Default)]
struct Strings {
    all: Vec<Arc<str>>,
    ids: HashMap<Arc<str>, u32>,
}

impl Strings {
    fn id(&mut self, s: &str) -> u32 {
        if let Some(&i) = self.ids.get(s) {
            return i;
        }
        let i = u32::try_from(self.all.len()).expect("fewer than 2^32 distinct strings");
        let a: Arc<str> = Arc::from(s);
        self.all.push(a.clone());
        self.ids.insert(a, i);
        i
    }
    fn find(&self, s: &str) -> Option<u32> {
        self.ids.get(s).copied()
    }
    fn get(&self, i: u32) -> &str {
        &self.all[i as usize]
    }
}

/// What the pairs of one test, rail and pattern share.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
struct Kind {
    test: u32,
    rail: u32,
    unit: u32,
    pattern: u32,
    options: Vec<String>,
    /// `deadline_s`'s bits (a flow of a pattern step gets a share of the step's deadline).
    deadline_bits: u64,
}

/// The tables the cells index into.
#[derive(Default)]
struct Table {
    strings: Strings,
    kinds: Vec<Kind>,
    kind_ids: HashMap<Kind, u32>,
    /// Each side without its report and tail, with its node's string id.
    sides: Vec<(u32, Side)>,
    side_ids: HashMap<String, u32>,
}

impl Table {
    fn kind(&mut self, r: &Record) -> u32 {
        let k = Kind {
            test: self.strings.id(&r.test),
            rail: self.strings.id(&r.rail),
            unit: self.strings.id(&r.unit),
            pattern: self.strings.id(&r.pattern),
            options: r.options.clone(),
            deadline_bits: r.deadline_s.to_bits(),
        };
        if let Some(&i) = self.kind_ids.get(&k) {
            return i;
        }
        let i = u32::try_from(self.kinds.len()).expect("fewer than 2^32 kinds");
        self.kinds.push(k.clone());
        self.kind_ids.insert(k, i);
        i
    }

    fn side(&mut self, s: &Side) -> u32 {
        let key = format!(
            "{:?}",
            (
                &s.node,
                &s.dev,
                &s.addr,
                s.gid_index,
                &s.rate,
                &s.gpu,
                s.exit
            )
        );
        if let Some(&i) = self.side_ids.get(&key) {
            return i;
        }
        let i = u32::try_from(self.sides.len()).expect("fewer than 2^32 sides");
        let slim = Side {
            json: None,
            tail: Vec::new(),
            ..s.clone()
        };
        self.sides.push((self.strings.id(&s.node), slim));
        self.side_ids.insert(key, i);
        i
    }

    fn cell(&mut self, r: &Record) -> Cell {
        Cell {
            value: r.value.unwrap_or(0.0),
            median: r.median.unwrap_or(0.0),
            started_unix: r.started_unix,
            wall_s: r.wall_s,
            round: r.round as u64,
            kind: self.kind(r),
            server: self.side(&r.server),
            client: self.side(&r.client),
            reason: self.strings.id(&r.reason),
            retried: r.retried.as_deref().map_or(NONE, |s| self.strings.id(s)),
            port: r.port,
            status: r.status,
            flags: if r.value.is_some() { HAS_VALUE } else { 0 }
                | if r.median.is_some() { HAS_MEDIAN } else { 0 },
        }
    }

    fn set_verdict(
        &mut self,
        c: &mut Cell,
        status: Status,
        reason: Option<String>,
        median: Option<f64>,
    ) {
        c.status = status;
        if let Some(why) = reason {
            c.reason = self.strings.id(&why);
        }
        c.median = median.unwrap_or(0.0);
        c.flags = (c.flags & !HAS_MEDIAN) | if median.is_some() { HAS_MEDIAN } else { 0 };
    }
}

/// A cell as the judgement and the report read it: a handle (the store, an index; 16
/// bytes) that reads its cell at each question, since the report gathers handles by the
/// pair (the diagnosis, the text matrix, the page's tables): the decoded cell with its table
/// would be 72 bytes each.
#[derive(Clone, Copy)]
pub struct CellRef<'a> {
    cells: &'a Cells,
    i: usize,
}

impl<'a> CellRef<'a> {
    /// The record as it went in, slim ([`Record::slim`]).
    pub fn record(self) -> Record {
        self.open().record()
    }

    /// The cell read, with its tables.
    fn open(self) -> Opened<'a> {
        Opened {
            table: &self.cells.table,
            cell: self.cells.get(self.i),
        }
    }
}

/// A cell read back, with the tables it indexes into.
#[derive(Clone, Copy)]
struct Opened<'a> {
    table: &'a Table,
    cell: Cell,
}

impl<'a> Opened<'a> {
    /// The record as it went in, slim ([`Record::slim`]).
    pub fn record(self) -> Record {
        let (c, k) = (&self.cell, self.kind());
        Record {
            test: self.test().into(),
            rail: self.rail().into(),
            round: self.round(),
            port: c.port,
            options: k.options.clone(),
            server: self.server().clone(),
            client: self.client().clone(),
            status: c.status,
            reason: self.reason().into(),
            value: self.value(),
            unit: self.unit().into(),
            median: self.median(),
            started_unix: c.started_unix,
            wall_s: c.wall_s,
            deadline_s: f64::from_bits(k.deadline_bits),
            retried: self.retried().map(str::to_string),
            pattern: self.pattern().into(),
        }
    }

    fn kind(self) -> &'a Kind {
        &self.table.kinds[self.cell.kind as usize]
    }
    fn str(self, id: u32) -> &'a str {
        self.table.strings.get(id)
    }
}

impl<'a> View<'a> for Opened<'a> {
    fn test(self) -> &'a str {
        self.str(self.kind().test)
    }
    fn rail(self) -> &'a str {
        self.str(self.kind().rail)
    }
    fn pattern(self) -> &'a str {
        self.str(self.kind().pattern)
    }
    fn unit(self) -> &'a str {
        self.str(self.kind().unit)
    }
    fn round(self) -> usize {
        usize::try_from(self.cell.round).unwrap_or(usize::MAX)
    }
    fn status(self) -> Status {
        self.cell.status
    }
    fn value(self) -> Option<f64> {
        (self.cell.flags & HAS_VALUE != 0).then_some(self.cell.value)
    }
    fn median(self) -> Option<f64> {
        (self.cell.flags & HAS_MEDIAN != 0).then_some(self.cell.median)
    }
    fn reason(self) -> &'a str {
        self.str(self.cell.reason)
    }
    fn retried(self) -> Option<&'a str> {
        (self.cell.retried != NONE).then(|| self.str(self.cell.retried))
    }
    fn server(self) -> &'a Side {
        &self.table.sides[self.cell.server as usize].1
    }
    fn client(self) -> &'a Side {
        &self.table.sides[self.cell.client as usize].1
    }
}

/// Each question reads the cell (from the file's cached block, past the threshold).
impl<'a> View<'a> for CellRef<'a> {
    fn test(self) -> &'a str {
        self.open().test()
    }
    fn rail(self) -> &'a str {
        self.open().rail()
    }
    fn pattern(self) -> &'a str {
        self.open().pattern()
    }
    fn unit(self) -> &'a str {
        self.open().unit()
    }
    fn round(self) -> usize {
        self.open().round()
    }
    fn status(self) -> Status {
        self.open().status()
    }
    fn value(self) -> Option<f64> {
        self.open().value()
    }
    fn median(self) -> Option<f64> {
        self.open().median()
    }
    fn reason(self) -> &'a str {
        self.open().reason()
    }
    fn retried(self) -> Option<&'a str> {
        self.open().retried()
    }
    fn server(self) -> &'a Side {
        self.open().server()
    }
    fn client(self) -> &'a Side {
        self.open().client()
    }
}

/// A pair's identity as `--resume` and the re-runs know it (test, rail, the pattern and its
/// step for a pattern's flow, the two nodes: in order with `--both-directions`, else the lower
/// id first), in string ids.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct PairId {
    test: u32,
    rail: u32,
    pattern: u32,
    step: u64,
    a: u32,
    b: u32,
}

/// A phase's identity in string ids: test, rail, pattern, step (0 under [`PAIRS`]).
pub type PhaseKey = (u32, u32, u32, u64);

impl PairId {
    /// The test, rail, pattern and step the pair ran in.
    pub fn phase(&self) -> PhaseKey {
        (self.test, self.rail, self.pattern, self.step)
    }
}

/// A test on a rail under a load pattern (a pattern's flow: at one of its steps), by name.
#[derive(Clone, Copy, Debug)]
pub struct Phase<'a> {
    pub test: &'a str,
    pub rail: &'a str,
    /// [`PAIRS`] or a fabric pattern.
    pub pattern: &'a str,
    /// The pattern's step (not part of a pair's identity under [`PAIRS`]).
    pub step: usize,
}

/// Which line of results.jsonl a cell is: test, rail, pattern, round, server, client.
type LineId = (u32, u32, u32, u64, u32, u32);

/// Every record of the run, a [`Cell`] each: in memory up to a threshold, then in an unnamed
/// file ([`Spill`]).
#[derive(Default)]
pub struct Cells {
    table: Table,
    store: Spill<CELL_BYTES>,
    /// Per line of results.jsonl, the cell it became ([`NONE`]: no record's line), a u32
    /// each: how the final rewrite finds a line's cell.
    lines: Spill<4>,
    /// results.jsonl ended inside a line (`--resume` of a file cut short): the next line
    /// appended joins that one, so it is no new line.
    glued: bool,
}

/// Cells kept in memory before they go to a file: 4 MB of them.
pub const SPILL_AFTER: usize = 65_536;

impl Cells {
    /// Cells in memory up to `threshold` of them, then in an unnamed file in `dir`.
    pub fn spilling(dir: &Path, threshold: usize) -> Cells {
        Cells {
            table: Table::default(),
            store: Spill::new(Some(dir), threshold),
            lines: Spill::new(Some(dir), threshold),
            glued: false,
        }
    }

    pub fn len(&self) -> usize {
        self.store.len()
    }

    pub fn is_empty(&self) -> bool {
        self.store.is_empty()
    }

    /// Are the cells in the file?
    pub fn spilled(&self) -> bool {
        self.store.spilled()
    }

    /// The first failure of the cells' file (the disk full), if any: the run's cells are not
    /// all there, so its judgement and report are not to be trusted.
    pub fn error(&self) -> Result<(), String> {
        self.store.error().and(self.lines.error())
    }

    fn get(&self, i: usize) -> Cell {
        let b = self.store.get(i);
        decode(&b).unwrap_or_else(|| {
            self.store
                .fail(format!("cell {i} read back with status byte {}", b[62]));
            decode(&[0; CELL_BYTES]).expect("zeroes decode")
        })
    }

    fn put(&mut self, i: usize, c: &Cell) {
        self.store.set(i, encode(c));
    }

    /// A record just appended to results.jsonl: a new cell, and the line it is.
    pub fn push(&mut self, r: &Record) {
        self.push_unlined(r);
        self.note_line(Some(self.len() - 1));
    }

    /// A new cell, its line noted by the caller ([`Cells::note_line`]).
    pub fn push_unlined(&mut self, r: &Record) {
        let c = self.table.cell(r);
        self.store.push(encode(&c));
    }

    /// The next line of results.jsonl is cell `cell`'s (None: no record's, or one not kept).
    pub fn note_line(&mut self, cell: Option<usize>) {
        if std::mem::take(&mut self.glued) {
            return;
        }
        let c = cell.map_or(NONE, |c| u32::try_from(c).unwrap_or(NONE));
        self.lines.push(c.to_le_bytes());
    }

    /// The last line noted has no newline in the file: the next line appended joins it.
    pub fn glue_next_line(&mut self) {
        self.glued = true;
    }

    /// The cell that line `k` of results.jsonl, read back as `full`, is: the one noted for
    /// it, while it still holds that run (same pair and round, started within 1 ms:
    /// [`super::results::same_start`]); a line whose cell a later run replaced is no cell's.
    pub fn line_cell(&self, k: usize, full: &Record) -> Option<usize> {
        if k >= self.lines.len() {
            return None;
        }
        let i = u32::from_le_bytes(self.lines.get(k));
        let i = usize::try_from(i)
            .ok()
            .filter(|&i| i != NONE as usize && i < self.len())?;
        let s = &self.table.strings;
        let id = (
            s.find(&full.test)?,
            s.find(&full.rail)?,
            s.find(&full.pattern)?,
            full.round as u64,
            s.find(&full.server.node)?,
            s.find(&full.client.node)?,
        );
        let same = self.line_id(i) == id
            && super::results::same_start(self.get(i).started_unix, full.started_unix);
        same.then_some(i)
    }

    /// Cell `i` holds `r` from now on.
    pub fn set(&mut self, i: usize, r: &Record) {
        let c = self.table.cell(r);
        self.put(i, &c);
    }

    pub fn view(&self, i: usize) -> CellRef<'_> {
        CellRef { cells: self, i }
    }

    pub fn iter(&self) -> impl Iterator<Item = CellRef<'_>> + Clone {
        (0..self.len()).map(|i| self.view(i))
    }

    /// Record `i` as it went in, slim ([`Record::slim`]).
    pub fn record(&self, i: usize) -> Record {
        self.view(i).record()
    }

    /// The judgement's access to every cell ([`super::judge::judge`], [`super::rerun::final_verdict`]).
    pub fn verdicts(&mut self) -> &mut Cells {
        self
    }

    /// The cells of `test` on `rail` (every pattern's) as a re-run group
    /// ([`super::rerun::settle`]): a filter over the store, indexed as the store is.
    pub fn group(&mut self, test: &str, rail: &str) -> Subset<'_> {
        let s = &self.table.strings;
        let (test, rail) = (s.find(test), s.find(rail));
        Subset {
            cells: self,
            test,
            rail,
        }
    }

    /// Cell `i`'s [`PairId`].
    pub fn pair_id_of(&self, i: usize, ordered: bool) -> PairId {
        self.pair_id_of_cell(&self.get(i), ordered)
    }

    fn pair_id_of_cell(&self, c: &Cell, ordered: bool) -> PairId {
        let k = &self.table.kinds[c.kind as usize];
        let step = if self.table.strings.get(k.pattern) == PAIRS {
            0
        } else {
            c.round
        };
        let node = |s: u32| self.table.sides[s as usize].0;
        pair_id(
            k.test,
            k.rail,
            k.pattern,
            step,
            node(c.server),
            node(c.client),
            ordered,
        )
    }

    /// The [`PairId`] of the pair of nodes `a` (server) and `b` in `phase`; None when a
    /// name is in no cell (no cell is that pair).
    pub fn pair_id(&self, ordered: bool, phase: Phase, a: &str, b: &str) -> Option<PairId> {
        let s = &self.table.strings;
        let step = if phase.pattern == PAIRS {
            0
        } else {
            phase.step as u64
        };
        let (test, rail, pattern) = (
            s.find(phase.test)?,
            s.find(phase.rail)?,
            s.find(phase.pattern)?,
        );
        Some(pair_id(
            test,
            rail,
            pattern,
            step,
            s.find(a)?,
            s.find(b)?,
            ordered,
        ))
    }

    fn line_id(&self, i: usize) -> LineId {
        let c = self.get(i);
        let k = &self.table.kinds[c.kind as usize];
        let node = |s: u32| self.table.sides[s as usize].0;
        (
            k.test,
            k.rail,
            k.pattern,
            c.round,
            node(c.server),
            node(c.client),
        )
    }

    /// Cells `repeats` (ascending) each repeat the pair of an earlier cell (a pair re-run
    /// before a stop is in results.jsonl twice): the last of a pair's cells goes in the place
    /// of its first, the repeats go, the cells after them move down, and the lines' notes
    /// follow. Passes over the cells; what is held is a few words a repeat.
    pub fn merge_repeats(&mut self, repeats: &[usize], ordered: bool) {
        let Some(&from) = repeats.first() else {
            return;
        };
        // Each repeated pair's last cell, then its first (the lowest cell with its id).
        let mut last: HashMap<PairId, usize> = HashMap::new();
        for &d in repeats {
            last.insert(self.pair_id_of(d, ordered), d);
        }
        let mut first: HashMap<PairId, usize> = HashMap::new();
        for i in (0..self.len()).filter(|i| repeats.binary_search(i).is_err()) {
            let id = self.pair_id_of(i, ordered);
            if last.contains_key(&id) {
                first.entry(id).or_insert(i);
            }
        }
        // Where each cell goes: a repeat to its pair's first, the others down past the repeats.
        let down = |c: usize| c - repeats.partition_point(|&d| d < c);
        let mut to_first: HashMap<usize, usize> = HashMap::new();
        for &d in repeats {
            if let Some(&f) = first.get(&self.pair_id_of(d, ordered)) {
                to_first.insert(d, down(f));
            }
        }
        for (id, &d) in &last {
            if let Some(&f) = first.get(id) {
                let b = self.store.get(d);
                self.store.set(f, b);
            }
        }
        for i in from..self.len() {
            if repeats.binary_search(&i).is_err() {
                let b = self.store.get(i);
                self.store.set(down(i), b);
            }
        }
        repeats.iter().for_each(|_| self.store.pop());
        for k in 0..self.lines.len() {
            let c = u32::from_le_bytes(self.lines.get(k));
            if c == NONE || (c as usize) < from {
                continue;
            }
            let c = c as usize;
            let moved = to_first.get(&c).copied().unwrap_or_else(|| down(c));
            let moved = u32::try_from(moved).unwrap_or(NONE);
            self.lines.set(k, moved.to_le_bytes());
        }
    }
}

fn pair_id(test: u32, rail: u32, pattern: u32, step: u64, a: u32, b: u32, ordered: bool) -> PairId {
    let (a, b) = if ordered || a <= b { (a, b) } else { (b, a) };
    PairId {
        test,
        rail,
        pattern,
        step,
        a,
        b,
    }
}

/// Every cell, as the judgement writes its verdicts.
impl Verdicts for Cells {
    type V<'b>
        = CellRef<'b>
    where
        Self: 'b;
    fn count(&self) -> usize {
        self.len()
    }
    fn at(&self, i: usize) -> CellRef<'_> {
        self.view(i)
    }
    fn set_verdict(
        &mut self,
        i: usize,
        status: Status,
        reason: Option<String>,
        median: Option<f64>,
    ) {
        let mut c = self.get(i);
        self.table.set_verdict(&mut c, status, reason, median);
        self.put(i, &c);
    }
}

/// The cells of one test and rail, as the re-run rule works on them: a filter over the store
/// (a group index is a store index), so nothing of the group is copied.
pub struct Subset<'a> {
    cells: &'a mut Cells,
    /// The test's and the rail's string ids (None: no cell has it, the group is empty).
    test: Option<u32>,
    rail: Option<u32>,
}

impl Subset<'_> {
    /// Record `i` (a store index), slim.
    pub fn record(&self, i: usize) -> Record {
        self.cells.record(i)
    }

    fn members(&self) -> impl Iterator<Item = (usize, CellRef<'_>)> + Clone {
        let (test, rail) = (self.test, self.rail);
        self.cells.iter().enumerate().filter(move |(_, v)| {
            let k = v.open().kind();
            Some(k.test) == test && Some(k.rail) == rail
        })
    }
}

impl super::rerun::Group for Subset<'_> {
    /// In passes over the store: the group's medians ([`super::judge::medians`]), then each
    /// cell's verdict as [`super::judge::judge`] would give it, unwritten; only the suspects
    /// become records.
    fn suspects(&mut self, rules: &super::judge::Rules) -> Vec<(usize, Record)> {
        use super::judge;
        let medians = judge::medians(self.members().map(|(_, v)| v));
        let mut out = Vec::new();
        for (i, v) in self.members() {
            let med = medians.get(&judge::group_key(v)).copied();
            let (status, why) = judge::verdict(v, med, rules);
            if !super::rerun::suspect(status) || v.retried().is_some() {
                continue;
            }
            let mut r = v.record();
            (r.status, r.median) = (status, med);
            if let Some(why) = why {
                r.reason = why;
            }
            out.push((i, r));
        }
        out
    }
    fn was_retried(&self, i: usize) -> bool {
        self.cells.get(i).retried != NONE
    }
    fn replace(&mut self, i: usize, rec: Record) {
        self.cells.set(i, &rec);
    }
    fn appended(&mut self, replaced: Option<usize>) {
        self.cells.note_line(replaced);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::judge::{self, Rules};
    use crate::results::{sample, JsonlLog};
    use crate::{html, report, rerun};

    const RULES: Rules = Rules {
        min_bw: None,
        max_lat: None,
        rel: 0.9,
        rel_lat: 1.5,
        port_rate: None,
    };

    fn store(rs: &[Record]) -> Cells {
        let mut c = Cells::default();
        rs.iter().for_each(|r| c.push(r));
        c
    }

    /// The cells past a threshold of 3, in a file (unlinked at once, so the temporary
    /// directory is as good as any).
    fn spilled(rs: &[Record]) -> Cells {
        let mut c = Cells::spilling(&std::env::temp_dir(), 3);
        rs.iter().for_each(|r| c.push(r));
        assert!(c.spilled() || rs.len() <= 3);
        c
    }

    /// Both stores: in memory, and in a file.
    fn stores(rs: &[Record]) -> [Cells; 2] {
        [store(rs), spilled(rs)]
    }

    fn back(c: &Cells) -> Vec<Record> {
        (0..c.len()).map(|i| c.record(i)).collect()
    }

    /// Records of every shape: figures and none, reasons, re-runs, medians, GPUs, exit codes,
    /// a pattern's flow, perftest reports and tails (which the cells leave out).
    fn assorted() -> Vec<Record> {
        let gpu = crate::gpu::Pick {
            gpu: crate::gpu::GpuLink {
                index: 1,
                vendor: "nvidia".into(),
                bdf: "0000:07:00.0".into(),
                link: "PIX".into(),
            },
        };
        let mut rs = vec![
            sample("ib_write_bw", "rxe0", "n1", "n2", Status::Ok, Some(5.125)),
            sample("ib_write_bw", "rxe0", "n3", "n2", Status::Fail, None),
            sample("ib_send_lat", "rxe1", "n2", "n1", Status::Low, Some(1e-300)),
            sample("ib_write_bw", "rxe0", "n1", "n3", Status::Unreachable, None),
        ];
        rs[0].server.json = Some(serde_json::json!({"results": {"BW_average": 5.125}}));
        rs[0].client.tail = vec!["a line".into()];
        (rs[0].server.exit, rs[0].client.exit, rs[0].server.gpu) = (Some(0), Some(0), Some(gpu));
        (rs[0].started_unix, rs[0].wall_s, rs[0].median) =
            (1_765_029_600.123_457, 0.1 + 0.2, Some(5.0));
        (rs[1].reason, rs[1].client.exit, rs[1].retried) = (
            "client: Couldn't connect".into(),
            Some(-9),
            Some("TIMEOUT: killed".into()),
        );
        (rs[2].reason, rs[2].unit, rs[2].port, rs[2].round) = (
            "1.00 usec above 1.5 x the median 0.10".into(),
            "usec".into(),
            65535,
            1 << 40,
        );
        (rs[2].server.gid_index, rs[2].server.rate, rs[2].options) =
            (Some(3), "100 Gb/sec (4X EDR)".into(), vec!["-a".into()]);
        (rs[3].pattern, rs[3].deadline_s, rs[3].retried) =
            ("incast".into(), f64::NAN, Some(String::new()));
        rs
    }

    #[test]
    fn a_cell_is_64_bytes_and_owns_no_heap() {
        assert!(
            std::mem::size_of::<Cell>() <= 64,
            "a cell grew to {} bytes",
            std::mem::size_of::<Cell>()
        );
        // A thousand OK pairs of the same nodes add cells, not table entries.
        let mut c = Cells::default();
        for k in 0..1000 {
            let mut r = sample(
                "ib_write_bw",
                "rxe0",
                &format!("n{}", k % 10),
                &format!("n{}", (k + 1) % 10),
                Status::Ok,
                Some(k as f64),
            );
            r.started_unix = f64::from(k);
            c.push(&r);
        }
        assert_eq!(
            (c.len(), c.table.sides.len(), c.table.kinds.len()),
            (1000, 10, 1)
        );
        assert!(
            c.table.strings.all.len() <= 15,
            "{}",
            c.table.strings.all.len()
        );
    }

    #[test]
    fn a_record_comes_back_as_it_went_in_less_its_reports() {
        let rs = assorted();
        let mut c = store(&rs);
        let want: Vec<Record> = rs.iter().cloned().map(Record::slim).collect();
        let got = back(&c);
        // NaN is not equal to itself: compare that deadline by its bits.
        assert_eq!(got[3].deadline_s.to_bits(), want[3].deadline_s.to_bits());
        let fix = |mut v: Vec<Record>| {
            v[3].deadline_s = 0.0;
            v
        };
        assert_eq!(fix(got), fix(want.clone()));
        // What the views read is what the records say.
        for (i, r) in want.iter().enumerate() {
            let v = c.view(i);
            assert_eq!(
                (
                    v.test(),
                    v.rail(),
                    v.pattern(),
                    v.unit(),
                    v.round(),
                    v.status()
                ),
                (
                    r.test.as_str(),
                    r.rail.as_str(),
                    r.pattern.as_str(),
                    r.unit.as_str(),
                    r.round,
                    r.status
                )
            );
            assert_eq!(
                (
                    v.value(),
                    v.median(),
                    v.reason(),
                    v.retried(),
                    v.server(),
                    v.client()
                ),
                (
                    r.value,
                    r.median,
                    r.reason.as_str(),
                    r.retried.as_deref(),
                    &r.server,
                    &r.client
                )
            );
            assert_eq!(v.key(), r.key());
        }
        c.set(1, &rs[0]);
        assert_eq!(c.record(1), want[0]);
    }

    /// A run of `n` nodes on two rails: n4's pairs slow on rail1, one pair FAIL, one node down.
    fn run(n: usize) -> Vec<Record> {
        let nodes: Vec<String> = (1..=n).map(|i| format!("n{i}")).collect();
        let mut rs = Vec::new();
        for rail in ["rail0", "rail1"] {
            for (k, round) in crate::schedule::circle_rounds(n).iter().enumerate() {
                for p in round {
                    let (a, b) = (&nodes[p.a], &nodes[p.b]);
                    let slow = rail == "rail1" && (p.a == 3 || p.b == 3);
                    let mut r = sample(
                        "ib_write_bw",
                        rail,
                        a,
                        b,
                        Status::Ok,
                        Some(if slow { 100.0 } else { 1000.0 + k as f64 }),
                    );
                    (r.round, r.started_unix) = (k, 1000.0 + k as f64);
                    if p.a == 1 && p.b == 2 {
                        (r.status, r.value, r.reason) = (Status::Fail, None, "server: bad".into());
                    }
                    if p.a == n - 1 || p.b == n - 1 {
                        (r.status, r.value, r.reason) = (
                            Status::Unreachable,
                            None,
                            format!("{} unreachable: ssh", nodes[n - 1]),
                        );
                    }
                    rs.push(r);
                }
            }
        }
        rs
    }

    #[test]
    fn the_judgement_and_the_report_read_cells_as_they_read_records() {
        // 40 nodes on two rails: 1,560 cells, two blocks of the file's cache.
        for n in [6, 40] {
            let nodes: Vec<String> = (1..=n).map(|i| format!("n{i}")).collect();
            let mut rs = run(n);
            let first = rs.clone();
            judge::judge(&mut rs, &RULES);
            assert!(
                rs.iter().any(|r| r.status == Status::Low),
                "the test has LOW pairs"
            );
            for (mut c, mut c2) in stores(&first).into_iter().zip(stores(&rs)) {
                let at = if c.spilled() {
                    "in a file"
                } else {
                    "in memory"
                };
                judge::judge(c.verdicts(), &RULES);
                assert_eq!(back(&c), rs, "{n} nodes {at}: the judgement");
                let mut rs2 = rs.clone();
                assert_eq!(
                    rerun::final_verdict(c2.verdicts(), &RULES, true),
                    rerun::final_verdict(&mut rs2, &RULES, true)
                );
                assert_eq!(back(&c2), rs2, "{n} nodes {at}");
                assert_eq!(report::text(&nodes, c.iter()), report::text(&nodes, &rs));
                assert_eq!(report::grid(&nodes, c.iter()), report::grid(&nodes, &rs));
                assert_eq!(judge::diagnose(c.iter()), judge::diagnose(&rs));
                assert_eq!(
                    html::page(&nodes, c.iter(), &[], &[], "s").expect("page"),
                    html::page(&nodes, &rs, &[], &[], "s").expect("page")
                );
                assert!(c.error().is_ok() && c2.error().is_ok());
            }
        }
    }

    #[test]
    fn re_runs_settle_on_cells_as_on_records() {
        let rs = run(40);
        let key = |r: &Record| r.key();
        // Each suspect's re-run comes back at the others' figure, except n4's on rail1.
        let again = |sus: &[Record]| -> Result<Vec<Record>, ()> {
            Ok(sus
                .iter()
                .map(|r| {
                    let mut f = sample(
                        &r.test,
                        &r.rail,
                        &r.server.node,
                        &r.client.node,
                        Status::Ok,
                        Some(if r.value == Some(100.0) {
                            101.0
                        } else {
                            1000.0
                        }),
                    );
                    f.started_unix = 5000.0;
                    f
                })
                .collect())
        };
        let mut group: Vec<Record> = rs.iter().filter(|r| r.rail == "rail1").cloned().collect();
        let want =
            rerun::settle(&mut group, &RULES, rerun::MAX_PASSES, key, again).expect("records");
        assert!(!want.rerun.is_empty());
        for mut c in stores(&rs) {
            let at: Vec<usize> = (0..c.len())
                .filter(|&i| c.view(i).rail() == "rail1")
                .collect();
            let mut sub = c.group("ib_write_bw", "rail1");
            let got =
                rerun::settle(&mut sub, &RULES, rerun::MAX_PASSES, key, again).expect("cells");
            // The group's indices are the store's.
            let want_at: Vec<usize> = want.rerun.iter().map(|&g| at[g]).collect();
            assert_eq!((got.passes, got.rerun), (want.passes, want_at));
            assert_eq!(at.iter().map(|&i| c.record(i)).collect::<Vec<_>>(), group);
            assert!(c.error().is_ok());
        }
        // A test or rail no cell has is an empty group.
        let mut c = store(&rs);
        let mut none = c.group("ib_write_bw", "rail9");
        assert!(rerun::Group::suspects(&mut none, &RULES).is_empty());
    }

    #[test]
    fn a_cell_encodes_to_its_golden_bytes_and_back() {
        let c = Cell {
            value: 5.125,
            median: -0.0,
            started_unix: 1_765_029_600.5,
            wall_s: f64::NAN,
            round: 0x0102_0304_0506_0708,
            kind: 1,
            server: 0x0a0b_0c0d,
            client: 2,
            reason: 3,
            retried: NONE,
            port: 18515,
            status: Status::Timeout,
            flags: HAS_VALUE | HAS_MEDIAN,
        };
        let b = encode(&c);
        let golden: [u8; 64] = [
            0, 0, 0, 0, 0, 0x80, 0x14, 0x40, // 5.125
            0, 0, 0, 0, 0, 0, 0, 0x80, // -0.0
            0, 0, 0x20, 0xb8, 0x0d, 0x4d, 0xda, 0x41, // 1765029600.5
            0, 0, 0, 0, 0, 0, 0xf8, 0x7f, // NaN
            8, 7, 6, 5, 4, 3, 2, 1, // round
            1, 0, 0, 0, 0x0d, 0x0c, 0x0b, 0x0a, 2, 0, 0, 0, 3, 0, 0,
            0, // kind, server, client, reason
            0xff, 0xff, 0xff, 0xff, // retried: none
            0x53, 0x48, 3, 3, // port, TIMEOUT, value and median
        ];
        assert_eq!(b, golden);
        let d = decode(&b).expect("decodes");
        assert_eq!(encode(&d), b);
        assert_eq!(
            (d.status, d.port, d.round),
            (Status::Timeout, 18515, c.round)
        );
        // Every status round-trips; a byte past them does not decode.
        for s in STATUSES {
            assert_eq!(
                decode(&encode(&Cell { status: s, ..c })).map(|x| x.status),
                Some(s)
            );
        }
        let mut bad = b;
        bad[62] = 6;
        assert!(decode(&bad).is_none());
    }

    #[test]
    fn ids_find_pairs_and_lines() {
        let ph = |pattern, step| Phase {
            test: "ib_write_bw",
            rail: "rail0",
            pattern,
            step,
        };
        let mut rs = run(4);
        rs[0].pattern = "bisection".into();
        let c = store(&rs);
        let (a, b) = (rs[1].server.node.as_str(), rs[1].client.node.as_str());
        assert_eq!(
            c.pair_id(false, ph(PAIRS, 7), b, a),
            Some(c.pair_id_of(1, false))
        );
        assert_ne!(
            c.pair_id(true, ph(PAIRS, 0), b, a),
            Some(c.pair_id_of(1, true))
        );
        assert_eq!(c.pair_id(false, ph(PAIRS, 0), a, "n9"), None);
        let (a0, b0) = (rs[0].server.node.as_str(), rs[0].client.node.as_str());
        let step = rs[0].round;
        assert_eq!(
            c.pair_id(false, ph("bisection", step), a0, b0),
            Some(c.pair_id_of(0, false))
        );
        assert_ne!(
            c.pair_id(false, ph("bisection", step + 1), a0, b0),
            Some(c.pair_id_of(0, false))
        );
        // Each cell was pushed as its line was appended: line i is cell i, while it holds
        // that run.
        for (i, r) in rs.iter().enumerate() {
            let mut near = r.clone();
            near.started_unix += 0.0004;
            assert_eq!(c.line_cell(i, &near), Some(i));
            assert_eq!(c.line_cell(i + 1, &near), None);
            near.started_unix += 0.01;
            assert_eq!(c.line_cell(i, &near), None);
        }
        assert_eq!(c.line_cell(rs.len(), &rs[0]), None);
        // A line appended after a file that ended inside a line joins that one.
        let mut g = Cells::default();
        g.push_unlined(&rs[0]);
        g.note_line(Some(0));
        g.glue_next_line();
        g.push(&rs[1]);
        g.push(&rs[2]);
        assert_eq!(
            (g.line_cell(0, &rs[0]), g.line_cell(1, &rs[2])),
            (Some(0), Some(2))
        );
    }

    #[test]
    fn the_rewrite_from_cells_is_the_rewrite_from_records() {
        let dir = std::env::temp_dir().join(format!("rpt-matrix-cells-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        let mut rs = run(5);
        rs.extend(assorted());
        // The pair of line 3 re-run: its fresh line at the end, in its place in the records.
        let mut again = rs[3].clone();
        (again.started_unix, again.value) = (9000.0, Some(999.0));
        let mut files = Vec::new();
        // From records, from cells in memory, from cells in a file.
        for k in 0..3 {
            let d = dir.join(k.to_string());
            std::fs::create_dir_all(&d).expect("dir");
            let mut log = JsonlLog::open(&d).expect("open");
            rs.iter().for_each(|r| log.append(r).expect("append"));
            // A line that is no record, and a blank one, as a hand edit leaves them.
            let path = d.join("results.jsonl");
            let mut text = std::fs::read_to_string(&path).expect("read");
            text.push_str("not json\n\n");
            std::fs::write(&path, text).expect("write");
            log.append(&again).expect("append");
            // Kept: all but the first record (a first run), the re-run in its place, judged.
            let mut kept: Vec<Record> = rs[1..].iter().cloned().map(Record::slim).collect();
            kept[2] = again.clone().slim();
            judge::judge(&mut kept, &RULES);
            if k > 0 {
                let mut c = if k == 1 {
                    Cells::default()
                } else {
                    Cells::spilling(&std::env::temp_dir(), 3)
                };
                c.note_line(None);
                rs[1..].iter().for_each(|r| c.push(r));
                // The line that is no record and the blank one.
                c.note_line(None);
                c.note_line(None);
                c.set(2, &kept[2]);
                c.note_line(Some(2));
                judge::judge(c.verdicts(), &RULES);
                log.rewrite_by(c.len(), |k, f| c.line_cell(k, f), |i| c.record(i))
                    .expect("rewrite");
            } else {
                log.rewrite(&kept).expect("rewrite");
            }
            files.push(std::fs::read(d.join("results.jsonl")).expect("read"));
        }
        assert_eq!(files[0], files[1]);
        assert_eq!(files[0], files[2]);
        assert_eq!(
            String::from_utf8_lossy(&files[0]).lines().count(),
            rs.len() - 1
        );
        let _ = std::fs::remove_dir_all(&dir);
    }
}
