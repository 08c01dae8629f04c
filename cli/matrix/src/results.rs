//! One record per pair: `results.jsonl` (appended and flushed as each pair ends, so a crash
//! or Ctrl-C loses nothing finished) and `results.csv` (written at the end, judged).

use std::fs::{File, OpenOptions};
use std::collections::HashMap;
use std::io::{BufRead, BufReader, BufWriter, Write};
use std::path::{Path, PathBuf};

use serde_json::{json, Value};

/// What happened to a pair. LOW is only given by the judgement, after every pair of the test
/// and rail has run (it compares with their median).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Status {
    Ok,
    Low,
    Fail,
    Timeout,
    Unreachable,
    Skipped,
}

impl Status {
    pub fn name(self) -> &'static str {
        match self {
            Status::Ok => "OK",
            Status::Low => "LOW",
            Status::Fail => "FAIL",
            Status::Timeout => "TIMEOUT",
            Status::Unreachable => "UNREACHABLE",
            Status::Skipped => "SKIPPED",
        }
    }
    pub fn from_name(s: &str) -> Option<Status> {
        [Status::Ok, Status::Low, Status::Fail, Status::Timeout, Status::Unreachable, Status::Skipped]
            .into_iter()
            .find(|x| x.name() == s)
    }
    /// Did the pair measure anything (and so count for the median and the diagnosis)?
    pub fn measured(self) -> bool {
        matches!(self, Status::Ok | Status::Low)
    }
}

/// One side of a pair.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Side {
    pub node: String,
    pub dev: String,
    /// The address the client connected to (server side only), or this node's rail address.
    pub addr: String,
    pub gid_index: Option<u32>,
    /// The port's rate as sysfs gives it (`100 Gb/sec (4X EDR)`), for `--port-rate`.
    pub rate: String,
    /// `--gpu`: the GPU this side's perftest used (index, vendor, PCI address, distance).
    pub gpu: Option<super::gpu::Pick>,
    pub exit: Option<i32>,
    /// The side's perftest `--out_json` report, if it wrote one.
    pub json: Option<Value>,
    /// The last lines the side printed (for FAIL: the error).
    pub tail: Vec<String>,
}

#[derive(Clone, Debug, PartialEq)]
pub struct Record {
    pub test: String,
    pub rail: String,
    pub round: usize,
    pub port: u16,
    pub options: Vec<String>,
    pub server: Side,
    pub client: Side,
    pub status: Status,
    /// Why, in one line, for anything but OK.
    pub reason: String,
    /// The figure judged: BW average (bw tests) or typical latency (lat tests).
    pub value: Option<f64>,
    pub unit: String,
    /// The median of the test and rail, once judged.
    pub median: Option<f64>,
    pub started_unix: f64,
    pub wall_s: f64,
    pub deadline_s: f64,
    /// A re-run pair: its first run's status and reason (`LOW: 1.02 MB/sec below ...`).
    pub retried: Option<String>,
    /// The load pattern the pair ran under: [`PAIRS`] (one pair per node, one rail), or one of
    /// the fabric patterns (`all-rails`, `incast`, `alltoall`, `bisection`), whose `round`
    /// is the pattern's step.
    pub pattern: String,
}

/// The pair-wise rounds' pattern name.
pub const PAIRS: &str = "pairs";

impl Record {
    pub fn to_json(&self) -> Value {
        let side = |s: &Side| {
            json!({
                "node": s.node, "dev": s.dev, "addr": s.addr, "gid_index": s.gid_index, "rate": s.rate,
                "gpu": s.gpu.as_ref().map(super::gpu::Pick::to_json), "exit": s.exit, "json": s.json, "tail": s.tail,
            })
        };
        json!({
            "test": self.test, "rail": self.rail, "round": self.round, "port": self.port,
            "options": self.options, "server": side(&self.server), "client": side(&self.client),
            "status": self.status.name(), "reason": self.reason, "value": self.value,
            "unit": self.unit, "median": self.median, "started_unix": self.started_unix,
            "wall_s": self.wall_s, "deadline_s": self.deadline_s, "retried": self.retried,
            "pattern": self.pattern,
        })
    }

    /// The pair's identity for `--resume`: test, rail and the two nodes (either order).
    pub fn key(&self) -> (String, String, String, String) {
        let (x, y) = (self.server.node.clone(), self.client.node.clone());
        let (lo, hi) = if x <= y { (x, y) } else { (y, x) };
        (self.test.clone(), self.rail.clone(), lo, hi)
    }

    pub fn from_json(v: &Value) -> Option<Record> {
        let s = |v: &Value, k: &str| v.get(k).and_then(Value::as_str).unwrap_or("").to_string();
        let side = |v: &Value| Side {
            node: s(v, "node"),
            dev: s(v, "dev"),
            addr: s(v, "addr"),
            rate: s(v, "rate"),
            gid_index: v.get("gid_index").and_then(Value::as_u64).and_then(|x| u32::try_from(x).ok()),
            gpu: v.get("gpu").and_then(super::gpu::Pick::from_json),
            exit: v.get("exit").and_then(Value::as_i64).and_then(|x| i32::try_from(x).ok()),
            json: v.get("json").filter(|j| !j.is_null()).cloned(),
            tail: v
                .get("tail")
                .and_then(Value::as_array)
                .map(|a| a.iter().filter_map(|l| l.as_str().map(str::to_string)).collect())
                .unwrap_or_default(),
        };
        let f = |k: &str| v.get(k).and_then(Value::as_f64);
        Some(Record {
            test: v.get("test")?.as_str()?.to_string(),
            rail: v.get("rail")?.as_str()?.to_string(),
            round: v.get("round").and_then(Value::as_u64).unwrap_or(0) as usize,
            port: v.get("port").and_then(Value::as_u64).and_then(|p| u16::try_from(p).ok()).unwrap_or(0),
            options: v
                .get("options")
                .and_then(Value::as_array)
                .map(|a| a.iter().filter_map(|o| o.as_str().map(str::to_string)).collect())
                .unwrap_or_default(),
            server: side(v.get("server")?),
            client: side(v.get("client")?),
            status: Status::from_name(v.get("status")?.as_str()?)?,
            reason: s(v, "reason"),
            value: f("value"),
            unit: s(v, "unit"),
            median: f("median"),
            started_unix: f("started_unix").unwrap_or(0.0),
            wall_s: f("wall_s").unwrap_or(0.0),
            deadline_s: f("deadline_s").unwrap_or(0.0),
            retried: v.get("retried").and_then(Value::as_str).map(str::to_string),
            pattern: v
                .get("pattern")
                .and_then(Value::as_str)
                .unwrap_or(PAIRS)
                .to_string(),
        })
    }
}

/// Which pair, and in which round, a record is; with its start ([`JsonlLog::rewrite`]), which
/// run of it.
type Identity = (String, String, String, usize, String, String);

impl Record {
    /// The record without what only results.jsonl needs (each side's perftest report and
    /// output tail, most of a record's size): what the coordinator keeps of every pair for
    /// the judgement and the report, so its memory is not a copy of the file.
    pub fn slim(mut self) -> Record {
        for s in [&mut self.server, &mut self.client] {
            s.json = None;
            s.tail = Vec::new();
        }
        self
    }

    fn identity(&self) -> Identity {
        let (t, r, p, s, c) = (&self.test, &self.rail, &self.pattern, &self.server.node, &self.client.node);
        (t.clone(), r.clone(), p.clone(), self.round, s.clone(), c.clone())
    }
}

/// `OUT/results.jsonl`, one line per finished pair, flushed to the file at once.
pub struct JsonlLog {
    path: PathBuf,
    file: File,
}

impl JsonlLog {
    pub fn open(dir: &Path) -> std::io::Result<JsonlLog> {
        let path = dir.join("results.jsonl");
        let file = OpenOptions::new().create(true).append(true).open(&path)?;
        Ok(JsonlLog { path, file })
    }

    pub fn append(&mut self, r: &Record) -> std::io::Result<()> {
        let mut line = r.to_json().to_string();
        line.push('\n');
        // One write of the whole line: a reader never sees half a record.
        self.file.write_all(line.as_bytes())?;
        self.file.sync_data()
    }

    /// Replace the file with the judged records `kept` (LOW and the medians filled in), each
    /// with the reports and tails its own line in the file has ([`Record::slim`] dropped them);
    /// the lines of records not kept (a pair's first run, when it was re-run) go. The file is
    /// read a line at a time, written next to it and renamed over it, so it is always whole.
    pub fn rewrite(&mut self, kept: &[Record]) -> std::io::Result<()> {
        let mut index: HashMap<Identity, Vec<(f64, usize)>> = HashMap::new();
        for (i, r) in kept.iter().enumerate() {
            index.entry(r.identity()).or_default().push((r.started_unix, i));
        }
        let find = |_line: usize, full: &Record| {
            let runs = index.get(&full.identity())?;
            runs.iter().find(|(t, _)| same_start(*t, full.started_unix)).map(|&(_, i)| i)
        };
        self.rewrite_by(kept.len(), find, |i| kept[i].clone())
    }

    /// [`JsonlLog::rewrite`] for `count` kept records held elsewhere: `find` says which kept
    /// record line `k` (from 0, blank and unreadable lines counted) of the file is (the pair,
    /// its round and a start within 1 ms: see [`same_start`]), `record` gives kept record `i`,
    /// slim.
    pub fn rewrite_by(&mut self, count: usize, find: impl Fn(usize, &Record) -> Option<usize>, record: impl Fn(usize) -> Record) -> std::io::Result<()> {
        // Which kept records have their line written: a bit each.
        let mut written = vec![0u64; count.div_ceil(64)];
        let mut first = |i: usize| {
            let (w, bit) = (i / 64, 1u64 << (i % 64));
            let was = written[w] & bit != 0;
            written[w] |= bit;
            !was
        };
        let tmp = self.path.with_extension("jsonl.tmp");
        {
            let mut f = BufWriter::new(File::create(&tmp)?);
            for (k, line) in BufReader::new(File::open(&self.path)?).lines().enumerate() {
                let Some(full) = serde_json::from_str::<Value>(&line?).ok().as_ref().and_then(Record::from_json) else { continue };
                let Some(i) = find(k, &full) else { continue };
                if !first(i) {
                    continue;
                }
                let mut r = record(i);
                (r.server.json, r.server.tail, r.client.json, r.client.tail) = (full.server.json, full.server.tail, full.client.json, full.client.tail);
                writeln!(f, "{}", r.to_json())?;
            }
            // A kept record whose line is not in the file (never, unless it was edited): as kept.
            for i in (0..count).filter(|&i| first(i)) {
                writeln!(f, "{}", record(i).to_json())?;
            }
            f.into_inner().map_err(|e| e.into_error())?.sync_all()?;
        }
        std::fs::rename(&tmp, &self.path)?;
        self.file = OpenOptions::new().append(true).open(&self.path)?;
        Ok(())
    }
}

/// Two starts of one pair's runs in one round are the same run. A start read back from JSON
/// may differ from the one written in its last bit (serde_json parses floats fast, not
/// exactly), so runs are told apart by a start within a millisecond: two runs of one pair in
/// one round cannot start that close.
pub fn same_start(a: f64, b: f64) -> bool {
    (a - b).abs() < 1e-3
}

/// The records of an earlier run (`--resume`), slim ([`Record::slim`]); lines that do not parse
/// are skipped and counted.
pub fn read_jsonl(path: &Path) -> std::io::Result<(Vec<Record>, usize)> {
    let mut out = Vec::new();
    let bad = each_jsonl(path, |r| out.push(r))?;
    Ok((out, bad))
}

/// Each record of results.jsonl, slim, handed to `each` as it is read (a line at a time:
/// memory is what `each` keeps, not the file); returns how many lines were not records. A
/// missing file has none.
pub fn each_jsonl(path: &Path, mut each: impl FnMut(Record)) -> std::io::Result<usize> {
    each_jsonl_line(path, |r| r.into_iter().for_each(&mut each)).map(|(bad, _)| bad)
}

/// [`each_jsonl`] a line at a time: each line's record, or None (blank, or not a record), so
/// that the caller can tell which line is which. Returns how many non-blank lines were not
/// records, and whether the file ends inside a line (its last line has no newline: a line
/// appended to the file joins that one).
pub fn each_jsonl_line(path: &Path, mut each: impl FnMut(Option<Record>)) -> std::io::Result<(usize, bool)> {
    let file = match File::open(path) {
        Ok(f) => f,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok((0, false)),
        Err(e) => return Err(e),
    };
    let (mut bad, mut cut) = (0, false);
    let mut r = BufReader::new(file);
    let mut line = Vec::new();
    loop {
        line.clear();
        if r.read_until(b'\n', &mut line)? == 0 {
            break;
        }
        cut = line.last() != Some(&b'\n');
        if !cut {
            line.pop();
        }
        let (recs, b) = parse_jsonl(&String::from_utf8_lossy(&line));
        // One line is one record at most (parse_jsonl splits at newlines only).
        each(recs.into_iter().next().map(Record::slim));
        bad += b;
    }
    Ok((bad, cut))
}

/// The records in a results.jsonl text and how many non-blank lines were not records. The file
/// may have been cut short by a killed coordinator or edited by hand: nothing in it is trusted.
pub fn parse_jsonl(text: &str) -> (Vec<Record>, usize) {
    let (mut out, mut bad) = (Vec::new(), 0);
    for line in text.lines().filter(|l| !l.trim().is_empty()) {
        match serde_json::from_str::<Value>(line).ok().as_ref().and_then(Record::from_json) {
            Some(r) => out.push(r),
            None => bad += 1,
        }
    }
    (out, bad)
}

/// RFC 4180 field: quoted when it holds a comma, a quote or a line break.
fn csv_field(s: &str) -> String {
    if s.contains([',', '"', '\n', '\r']) {
        format!("\"{}\"", s.replace('"', "\"\""))
    } else {
        s.to_string()
    }
}

pub const CSV_HEADER: &str =
    "test,rail,round,server,client,server_dev,client_dev,status,value,unit,median,wall_s,deadline_s,reason,pattern";

pub fn csv_text(all: &[Record]) -> String {
    let mut s = String::from(CSV_HEADER);
    s.push('\n');
    for r in all {
        s.push_str(&csv_line(r));
    }
    s
}

/// results.csv written a record at a time ([`csv_text`] without the whole text in memory).
pub fn write_csv(w: impl Write, all: impl IntoIterator<Item = Record>) -> std::io::Result<()> {
    let mut w = BufWriter::new(w);
    writeln!(w, "{CSV_HEADER}")?;
    for r in all {
        w.write_all(csv_line(&r).as_bytes())?;
    }
    w.flush()
}

/// One record's line of results.csv, with its line break.
fn csv_line(r: &Record) -> String {
    let num = |v: Option<f64>| v.map(|x| format!("{x}")).unwrap_or_default();
    let fields = [
        r.test.clone(),
        r.rail.clone(),
        r.round.to_string(),
        r.server.node.clone(),
        r.client.node.clone(),
        r.server.dev.clone(),
        r.client.dev.clone(),
        r.status.name().to_string(),
        num(r.value),
        r.unit.clone(),
        num(r.median),
        format!("{:.3}", r.wall_s),
        format!("{:.1}", r.deadline_s),
        r.reason.clone(),
        r.pattern.clone(),
    ];
    let line: Vec<String> = fields.iter().map(|f| csv_field(f)).collect();
    let mut s = line.join(",");
    s.push('\n');
    s
}

#[cfg(test)]
pub(crate) fn sample(test: &str, rail: &str, a: &str, b: &str, status: Status, value: Option<f64>) -> Record {
    Record {
        test: test.into(),
        rail: rail.into(),
        round: 0,
        port: 18600,
        options: vec!["-s".into(), "4096".into()],
        server: Side { node: a.into(), dev: rail.into(), ..Side::default() },
        client: Side { node: b.into(), dev: rail.into(), ..Side::default() },
        status,
        reason: String::new(),
        value,
        unit: "MB/sec".into(),
        median: None,
        started_unix: 1.5,
        wall_s: 2.25,
        deadline_s: 31.0,
        retried: None,
        pattern: PAIRS.into(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_record_survives_json() {
        let mut r = sample("write_bw", "rxe0", "node1", "node2", Status::Fail, None);
        r.reason = "client: Couldn't connect, \"x\"".into();
        r.client.json = Some(json!({"results": {"BW_average": 5.5}}));
        r.client.exit = Some(1);
        r.server.gid_index = Some(1);
        r.server.tail = vec!["a".into(), "b".into()];
        let back = Record::from_json(&serde_json::from_str(&r.to_json().to_string()).expect("json")).expect("record");
        assert_eq!(back, r);
        assert_eq!(back.key(), ("write_bw".into(), "rxe0".into(), "node1".into(), "node2".into()));
    }

    #[test]
    fn jsonl_appends_flushed_lines_and_rewrites_whole() {
        let dir = std::env::temp_dir().join(format!("rpt-matrix-test-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).expect("dir");
        let mut log = JsonlLog::open(&dir).expect("open");
        let a = sample("write_bw", "rxe0", "n1", "n2", Status::Ok, Some(5.0));
        let b = sample("write_bw", "rxe0", "n1", "n3", Status::Timeout, None);
        log.append(&a).expect("a");
        log.append(&b).expect("b");
        // Readable while the log is still open: nothing is buffered.
        let (got, bad) = read_jsonl(&dir.join("results.jsonl")).expect("read");
        assert_eq!((got.len(), bad), (2, 0));
        assert_eq!(got[1].status, Status::Timeout);
        let mut a2 = a.clone();
        a2.status = Status::Low;
        a2.median = Some(7.0);
        log.rewrite(&[a2.clone(), b.clone()]).expect("rewrite");
        log.append(&a).expect("after rewrite");
        let (got, _) = read_jsonl(&dir.join("results.jsonl")).expect("read");
        assert_eq!(got, vec![a2, b, a.clone()]);
        std::fs::write(dir.join("results.jsonl"), "{\"test\":1}\nnot json\n").expect("w");
        assert_eq!(read_jsonl(&dir.join("results.jsonl")).expect("read").1, 2);
        // A line at a time: which line is a record, and whether the file ends inside a line.
        let one = a.to_json().to_string();
        let path = dir.join("results.jsonl");
        for (text, cut) in [(format!("{one}\n\nnot json\n{one}\n{one}"), true), (format!("{one}\r\n"), false)] {
            std::fs::write(&path, &text).expect("w");
            let mut seen = Vec::new();
            let got = each_jsonl_line(&path, |r| seen.push(r.map(|r| r.test))).expect("read");
            let lines = text.split_terminator('\n').count();
            assert_eq!((got.1, seen.len()), (cut, lines), "{text}");
            assert_eq!(seen[0].as_deref(), Some("write_bw"));
        }
        assert_eq!(each_jsonl_line(&dir.join("none"), |_| {}).expect("no file"), (0, false));
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn kept_records_are_slim_and_the_rewrite_puts_the_reports_back() {
        let dir = std::env::temp_dir().join(format!("rpt-matrix-slim-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).expect("dir");
        let mut log = JsonlLog::open(&dir).expect("open");
        let full = |node: &str, status, started: f64| {
            let mut r = sample("write_bw", "rxe0", "n1", node, status, Some(5.0));
            r.started_unix = started;
            r.client.json = Some(json!({"results": {"BW_average": 5.0}, "big": "x".repeat(2000)}));
            r.server.tail = vec!["server said".into()];
            r
        };
        // n2's pair ran twice (the second is kept), n3's once.
        // Starts as a clock gives them; serde_json reads the re-run's back one bit off.
        let (first, again, other) = (full("n2", Status::Fail, 1_765_029_600.123_457), full("n2", Status::Ok, 1_765_029_600.027_400_3), full("n3", Status::Ok, 1_765_029_600.1));
        for r in [&first, &again, &other] {
            log.append(r).expect("append");
        }
        let (slim, _) = read_jsonl(&dir.join("results.jsonl")).expect("read");
        assert!(slim.iter().all(|r| r.client.json.is_none() && r.server.tail.is_empty()), "{slim:?}");
        let mut kept = vec![slim[2].clone(), slim[1].clone()];
        kept[1].status = Status::Low;
        kept[1].median = Some(50.0);
        log.rewrite(&kept).expect("rewrite");
        let text = std::fs::read_to_string(dir.join("results.jsonl")).expect("read");
        let lines: Vec<Record> = text.lines().map(|l| Record::from_json(&serde_json::from_str(l).expect("json")).expect("record")).collect();
        let mut want = again.clone();
        (want.status, want.median, want.started_unix) = (Status::Low, Some(50.0), slim[1].started_unix);
        // The file's order; the first run of n2's pair is gone; reports and tails are back.
        assert_eq!(lines, vec![want, other]);
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn csv_quotes_what_needs_it() {
        let mut r = sample("send_lat", "rxe0", "n1", "n2", Status::Fail, None);
        r.reason = "server: bad, \"quoted\"".into();
        let t = csv_text(&[r]);
        let lines: Vec<&str> = t.lines().collect();
        assert_eq!(lines[0], CSV_HEADER);
        assert_eq!(lines[1], "send_lat,rxe0,0,n1,n2,rxe0,rxe0,FAIL,,MB/sec,,2.250,31.0,\"server: bad, \"\"quoted\"\"\",pairs");
    }
}
