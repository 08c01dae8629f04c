//! One pair: the server side on node A, then (once it listens) the client on node B against
//! A's rail address, both under the pair's deadline; the outcome as a [`Record`].

use std::ops::ControlFlow;
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use perftest::params::Tool;
use serde_json::Value;

use super::exec::TAG;
use super::launcher::{Bell, Launcher, Proc};
use super::results::{Record, Side, Status};

#[derive(Clone, Debug)]
pub struct Endpoint {
    pub node: String,
    pub dev: String,
    /// The rail's IPv4 (RoCE), or the node's name (InfiniBand: the exchange may take any route).
    pub addr: String,
    pub gid_index: Option<u32>,
    /// The port's rate from sysfs (recorded for `--port-rate`).
    pub rate: String,
    /// `--gpu`: the GPU whose memory this side's perftest uses.
    pub gpu: Option<super::gpu::Pick>,
}

#[derive(Clone, Debug)]
pub struct Job {
    pub tool: Tool,
    pub rail: String,
    pub round: usize,
    pub port: u16,
    pub server: Endpoint,
    pub client: Endpoint,
    pub options: Vec<String>,
    pub deadline: Duration,
    /// How long the server may take to start listening (ssh/srun start-up included).
    pub setup: Duration,
    /// The tool's unit: `MB/sec`, `Gb/sec` or `usec`.
    pub unit: String,
    /// The load pattern (`pairs` or a fabric pattern; see `Record::pattern`).
    pub pattern: String,
}

/// A side's last word: after its tool ended, it still has this long to say so.
const SIDE_GRACE: Duration = Duration::from_secs(10);

fn remote_argv(bin: &str, job: &Job, e: &Endpoint, server: bool) -> Vec<String> {
    // The node's own deadline is the pair's, in whole seconds rounded up: the coordinator's
    // kill comes first, and this one holds when the coordinator cannot reach the node.
    let secs = job.deadline.as_secs() + u64::from(job.deadline.subsec_nanos() > 0);
    let mut v = vec![bin.to_string(), "matrix-exec".into(), "--deadline".into(), secs.max(1).to_string(), "--watch-stdin".into()];
    if server {
        v.push("--ready-port".into());
        v.push(job.port.to_string());
    }
    v.push("--".into());
    v.push(job.tool.name().to_string());
    v.extend(["-d".into(), e.dev.clone(), "-p".into(), job.port.to_string()]);
    if let Some(g) = e.gid_index {
        v.extend(["-x".into(), g.to_string()]);
    }
    v.extend(e.gpu.as_ref().map(super::gpu::Pick::option));
    v.extend(job.options.iter().cloned());
    if !server {
        v.push(job.server.addr.clone());
    }
    v
}

/// What a side reported over our protocol lines.
#[derive(Default, Debug)]
struct Report {
    json: Option<Value>,
    exit: Option<i32>,
    timed_out: bool,
    /// The side's JSON file was there but did not parse (matrix-exec's `badjson` line).
    bad_json: Option<String>,
}

fn report(out: &[String]) -> Report {
    let mut r = Report::default();
    for l in out {
        let Some(rest) = l.strip_prefix(TAG) else { continue };
        if let Some(j) = rest.strip_prefix("json ") {
            r.json = serde_json::from_str(j).ok();
        } else if let Some(e) = rest.strip_prefix("badjson ") {
            r.bad_json = Some(e.trim().to_string());
        } else if let Some(c) = rest.strip_prefix("exit ") {
            r.exit = c.trim().parse().ok();
        } else if rest.starts_with("timeout") {
            r.timed_out = true;
        }
    }
    r
}

/// The figure a test is judged by, from the client's (or the server's) perftest JSON.
pub fn value_of(tool: Tool, j: &Value) -> Option<f64> {
    let res = j.get("results")?;
    let keys: &[&str] = if super::judge::is_lat(tool.name()) { &["t_typical", "t_avg", "avg_lat"] } else { &["BW_average", "bw_avg"] };
    keys.iter().find_map(|k| res.get(*k).and_then(Value::as_f64))
}

fn side(e: &Endpoint, p: Option<&Proc>, rep: &Report) -> Side {
    Side {
        node: e.node.clone(),
        dev: e.dev.clone(),
        addr: e.addr.clone(),
        gid_index: e.gid_index,
        rate: e.rate.clone(),
        gpu: e.gpu.clone(),
        exit: rep.exit.or(p.and_then(|p| p.exit)),
        json: rep.json.clone(),
        tail: p.map(|p| p.tail(8)).unwrap_or_default(),
    }
}

fn now_unix() -> f64 {
    SystemTime::now().duration_since(UNIX_EPOCH).map(|d| d.as_secs_f64()).unwrap_or(0.0)
}

/// One pair's run: what its steps share. `rec` is the record as the pair starts; each way the
/// pair ends fills in a copy of it ([`PairRun::finish`]).
struct PairRun<'a> {
    l: &'a Launcher,
    bin: &'a str,
    job: &'a Job,
    t0: Instant,
    /// The pair's deadline.
    hard: Instant,
    rec: Record,
}

/// A step's result: `Continue` with the side it started, or `Break` with how the pair ended
/// there (its record, or `None` when a stop signal came first).
type Step = ControlFlow<Option<Record>, Proc>;

/// Run the pair; `None` when a stop signal came first (the pair is not recorded, so that
/// `--resume` runs it again).
pub fn run(l: &Launcher, bin: &str, job: &Job) -> Option<Record> {
    let t0 = Instant::now();
    let started_unix = now_unix();
    let hard = t0 + job.deadline;
    let rec = Record {
        test: job.tool.name().to_string(),
        rail: job.rail.clone(),
        round: job.round,
        port: job.port,
        options: job.options.clone(),
        server: side(&job.server, None, &Report::default()),
        client: side(&job.client, None, &Report::default()),
        status: Status::Fail,
        reason: String::new(),
        value: None,
        unit: job.unit.clone(),
        median: None,
        started_unix,
        wall_s: 0.0,
        deadline_s: job.deadline.as_secs_f64(),
        retried: None,
        pattern: job.pattern.clone(),
    };
    let pair = PairRun { l, bin, job, t0, hard, rec };
    let mut server = match pair.listening_server() {
        ControlFlow::Continue(p) => p,
        ControlFlow::Break(ended) => return ended,
    };
    let mut client = match pair.started_client(&mut server) {
        ControlFlow::Continue(p) => p,
        ControlFlow::Break(ended) => return ended,
    };
    if pair.wait_both(&mut server, &mut client)? {
        return Some(pair.killed(&mut server, &mut client));
    }
    Some(pair.outcome(&mut server, &mut client))
}

impl PairRun<'_> {
    /// The pair's record as it ended: both sides as far as they got, the verdict, the wall time.
    fn finish(&self, s: Option<&Proc>, c: Option<&Proc>, status: Status, reason: String) -> Record {
        let job = self.job;
        let mut rec = self.rec.clone();
        let (rs, rc) = (report(s.map(|p| &p.out[..]).unwrap_or(&[])), report(c.map(|p| &p.out[..]).unwrap_or(&[])));
        rec.server = side(&job.server, s, &rs);
        rec.client = side(&job.client, c, &rc);
        rec.status = status;
        rec.reason = reason;
        rec.wall_s = self.t0.elapsed().as_secs_f64();
        rec
    }

    /// 1. The server listens (or ends, or the set-up time is up).
    fn listening_server(&self) -> Step {
        let (l, job) = (self.l, self.job);
        let mut server = match l.start(&job.server.node, &remote_argv(self.bin, job, &job.server, true)) {
            Ok(p) => p,
            Err(e) => return ControlFlow::Break(Some(self.finish(None, None, Status::Fail, e))),
        };
        let ready_by = (self.t0 + job.setup).min(self.hard);
        let mut ready = false;
        while let Some(line) = server.next_out_line(ready_by) {
            if line == format!("{TAG}ready") {
                ready = true;
                break;
            }
            if bench_core::signal::requested() {
                return ControlFlow::Break(None);
            }
        }
        if !ready {
            let reason = if server.poll() {
                server.drain(Duration::from_secs(2));
                format!("server on {} ended before listening: {}", job.server.node, last_line(&server))
            } else {
                server.terminate();
                server.drain(Duration::from_secs(2));
                format!("server on {} not listening on port {} within {} s: {}", job.server.node, job.port, job.setup.as_secs(), last_line(&server))
            };
            return ControlFlow::Break(Some(self.finish(Some(&server), None, Status::Fail, reason)));
        }
        ControlFlow::Continue(server)
    }

    /// 2. The client, against the server's rail address.
    fn started_client(&self, server: &mut Proc) -> Step {
        let (l, job) = (self.l, self.job);
        match l.start(&job.client.node, &remote_argv(self.bin, job, &job.client, false)) {
            Ok(p) => ControlFlow::Continue(p),
            Err(e) => {
                server.terminate();
                ControlFlow::Break(Some(self.finish(Some(server), None, Status::Fail, e)))
            }
        }
    }

    /// 3. Both end, or the deadline. Once one side has ended, the other has SIDE_GRACE.
    ///
    /// `Some(true)` when a side was still running past either; `None` when a stop signal came
    /// (both sides are terminated).
    fn wait_both(&self, server: &mut Proc, client: &mut Proc) -> Option<bool> {
        wait_sides(server, client, self.hard, bench_core::signal::requested).0
    }

    /// A side still running past the deadline (TIMEOUT) or past the grace (FAIL): both killed.
    fn killed(&self, server: &mut Proc, client: &mut Proc) -> Record {
        let (job, hard) = (self.job, self.hard);
        let running: Vec<&str> = [(&mut *server, "server"), (&mut *client, "client")]
            .into_iter()
            .filter_map(|(p, n)| (!p.poll()).then_some(n))
            .collect();
        server.terminate();
        client.terminate();
        server.drain(Duration::from_secs(2));
        client.drain(Duration::from_secs(2));
        let why = if Instant::now() >= hard {
            format!("killed at the pair's deadline of {:.0} s ({} still running)", job.deadline.as_secs_f64(), running.join(" and "))
        } else {
            format!("{} still running {} s after the other side ended; killed", running.join(" and "), SIDE_GRACE.as_secs())
        };
        let status = if Instant::now() >= hard { Status::Timeout } else { Status::Fail };
        self.finish(Some(server), Some(client), status, why)
    }

    /// Both sides ended: the verdict from their reports and exit codes, the figure when OK.
    fn outcome(&self, server: &mut Proc, client: &mut Proc) -> Record {
        let job = self.job;
        server.drain(Duration::from_secs(2));
        client.drain(Duration::from_secs(2));
        let (rs, rc) = (report(&server.out), report(&client.out));
        let value = rc.json.as_ref().and_then(|j| value_of(job.tool, j)).or_else(|| rs.json.as_ref().and_then(|j| value_of(job.tool, j)));
        let (se, ce) = (rs.exit.or(server.exit), rc.exit.or(client.exit));
        let (status, reason) = if rs.timed_out || rc.timed_out {
            (Status::Timeout, "a node's own deadline stopped its side".to_string())
        } else if se == Some(0) && ce == Some(0) && value.is_some() {
            (Status::Ok, String::new())
        } else if se == Some(0) && ce == Some(0) {
            let why = match (&rc.bad_json, &rs.bad_json) {
                (Some(e), _) => format!("both sides exited 0 but the client's JSON report did not parse: {e}"),
                (None, Some(e)) => format!("both sides exited 0 but the server's JSON report did not parse: {e}"),
                (None, None) => "both sides exited 0 but neither wrote a JSON report with a figure".to_string(),
            };
            (Status::Fail, why)
        } else {
            // The side that failed first says why; the client usually has the better line.
            let (who, p) = if ce != Some(0) { ("client", &*client) } else { ("server", &*server) };
            let node = if who == "client" { &job.client.node } else { &job.server.node };
            (Status::Fail, format!("{who} on {node} exited {}: {}", (if who == "client" { ce } else { se }).map(|c| c.to_string()).unwrap_or("?".into()), last_line(p)))
        };
        let mut rec = self.finish(Some(server), Some(client), status, reason);
        rec.value = if status == Status::Ok { value } else { None };
        rec
    }
}

/// How often a pair's wait looks at the stop flag while no side has news (a signal handler
/// can only set a flag; [`bench_core::signal::POLL_SLICE`] is the house's slice for that).
const STOP_SLICE: Duration = bench_core::signal::POLL_SLICE;

/// [`PairRun::wait_both`]: sleeps on one [`Bell`] that both sides ring with each line and at
/// their end, so a pair thread wakes for news, the deadline, the grace or the stop slice, not
/// every few milliseconds (at 512 pairs in flight a 20 ms poll was 25,000 wake-ups a second).
/// Also returns how many times it woke (for the test).
fn wait_sides(server: &mut Proc, client: &mut Proc, hard: Instant, stop: impl Fn() -> bool) -> (Option<bool>, usize) {
    let bell = Arc::new(Bell::default());
    server.ring(&bell);
    client.ring(&bell);
    let mut first_end: Option<Instant> = None;
    let mut wakes = 0;
    let timed_out = loop {
        // Read before looking: news after the look cuts the next sleep short.
        let seen = bell.rings();
        let (s, c) = (server.poll(), client.poll());
        if s && c {
            break false;
        }
        if (s || c) && first_end.is_none() {
            first_end = Some(Instant::now());
        }
        if stop() {
            server.terminate();
            client.terminate();
            return (None, wakes);
        }
        let now = Instant::now();
        let until = first_end.map_or(hard, |t| hard.min(t + SIDE_GRACE));
        if now >= until {
            break true;
        }
        // An exit nobody watches is looked for as before.
        let slice = if server.exit_rings() && client.exit_rings() { STOP_SLICE } else { Duration::from_millis(20) };
        bell.wait(seen, until.min(now + slice));
        wakes += 1;
    };
    (Some(timed_out), wakes)
}

/// The line that best says what went wrong: the last non-protocol line of stderr, else of stdout.
fn last_line(p: &Proc) -> String {
    let ok = |l: &&String| !l.starts_with(TAG) && !l.trim().is_empty();
    p.err.iter().rev().find(ok).or_else(|| p.out.iter().rev().find(ok)).map(|s| s.trim().to_string()).unwrap_or_else(|| "(no output)".into())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn job() -> Job {
        let e = |n: &str, a: &str| Endpoint { node: n.into(), dev: "rxe0".into(), addr: a.into(), gid_index: Some(1), rate: "2.5 Gb/sec (1X SDR)".into(), gpu: None };
        Job {
            tool: Tool::WriteBw,
            rail: "rxe0".into(),
            round: 0,
            port: 18601,
            server: e("node1", "10.77.0.1"),
            client: e("node2", "10.77.0.2"),
            options: vec!["-s".into(), "4096".into()],
            deadline: Duration::from_millis(30_500),
            setup: Duration::from_secs(30),
            unit: "MB/sec".into(),
            pattern: "pairs".into(),
        }
    }

    #[test]
    fn the_remote_command_of_each_side() {
        let j = job();
        let s = remote_argv("/usr/local/bin/rperftest", &j, &j.server, true);
        assert_eq!(s.join(" "), "/usr/local/bin/rperftest matrix-exec --deadline 31 --watch-stdin --ready-port 18601 -- ib_write_bw -d rxe0 -p 18601 -x 1 -s 4096");
        let c = remote_argv("rperftest", &j, &j.client, false);
        assert_eq!(c.join(" "), "rperftest matrix-exec --deadline 31 --watch-stdin -- ib_write_bw -d rxe0 -p 18601 -x 1 -s 4096 10.77.0.1");
        // --gpu: each side its own GPU.
        let mut j = job();
        let g = |i: usize, vendor: &str| crate::gpu::GpuLink { index: i, vendor: vendor.into(), bdf: "0000:07:00.0".into(), link: "PIX".into() };
        j.server.gpu = Some(crate::gpu::Pick { gpu: g(3, "nvidia") });
        j.client.gpu = Some(crate::gpu::Pick { gpu: g(0, "amd") });
        assert!(remote_argv("r", &j, &j.server, true).join(" ").ends_with("-- ib_write_bw -d rxe0 -p 18601 -x 1 --use_cuda=3 -s 4096"));
        assert!(remote_argv("r", &j, &j.client, false).join(" ").ends_with("-x 1 --use_rocm=0 -s 4096 10.77.0.1"));
        let sd = side(&j.server, None, &Report::default());
        assert_eq!(sd.gpu.as_ref().map(|p| p.gpu.index), Some(3));
    }

    #[test]
    fn protocol_lines_and_values() {
        let out: Vec<String> = ["header", "@rpt-matrix ready", "@rpt-matrix json {\"results\":{\"BW_average\":5.25,\"MsgSize\":4096}}", "@rpt-matrix exit 0"]
            .iter()
            .map(|s| s.to_string())
            .collect();
        let r = report(&out);
        assert_eq!(r.exit, Some(0));
        assert!(!r.timed_out);
        assert_eq!(value_of(Tool::WriteBw, r.json.as_ref().expect("json")), Some(5.25));
        assert_eq!(value_of(Tool::SendLat, &json!({"results": {"t_typical": 12.5, "t_avg": 13.0}})), Some(12.5));
        assert_eq!(value_of(Tool::SendLat, &json!({"results": {"t_avg": 13.0}})), Some(13.0));
        assert_eq!(value_of(Tool::WriteBw, &json!({"test_info": {}})), None);
        let b = report(&["@rpt-matrix badjson expected value at line 9 column 12".to_string(), "@rpt-matrix exit 0".to_string()]);
        assert_eq!(b.bad_json.as_deref(), Some("expected value at line 9 column 12"));
        assert!(b.json.is_none());
        let t = report(&["@rpt-matrix timeout after 31 s".to_string(), "@rpt-matrix exit 124".to_string()]);
        assert!(t.timed_out && t.exit == Some(124));
    }

    /// The client ends at once, the server 0.3 s later: the wait wakes for the two ends (and
    /// what their output says) and a stop slice now and then, not every 20 ms.
    #[test]
    fn a_pair_wait_sleeps_until_a_side_has_news() {
        let sh = |script: &str| Proc::spawn(&["/bin/sh".to_string(), "-c".into(), script.into()]).expect("sh");
        let mut server = sh("sleep 0.3; echo done");
        let mut client = sh("exit 0");
        let t = Instant::now();
        let (ended, wakes) = wait_sides(&mut server, &mut client, t + Duration::from_secs(20), || false);
        let took = t.elapsed();
        assert_eq!(ended, Some(false), "both ended in time");
        assert!(took >= Duration::from_millis(280) && took < Duration::from_secs(5), "{took:?}");
        // News (the ends, the line) and a stop slice now and then; a slow host stretches
        // the time, so the slices it holds are allowed too. A 20 ms poll woke 15 times.
        let bound = |took: Duration| 5 + (took.as_millis() / STOP_SLICE.as_millis()) as usize;
        eprintln!("{wakes} wake-ups in {took:?}");
        assert!(wakes <= bound(took), "{wakes} wake-ups in {took:?}");
        assert_eq!((server.exit, client.exit), (Some(0), Some(0)));
        // A side past its grace: the wait ends at the deadline (here before the grace).
        let mut server = sh("exec sleep 30");
        let mut client = sh("exit 3");
        let t = Instant::now();
        let (ended, wakes) = wait_sides(&mut server, &mut client, t + Duration::from_millis(500), || false);
        assert_eq!(ended, Some(true));
        let took = t.elapsed();
        eprintln!("deadline case: {wakes} wake-ups in {took:?}");
        assert!(took >= Duration::from_millis(490) && wakes <= bound(took), "{took:?}, {wakes} wake-ups");
        server.terminate();
        // A stop ends the wait within a slice and terminates both sides (which end as their
        // stdin closes, like matrix-exec).
        let mut server = sh("exec cat >/dev/null");
        let mut client = sh("exec cat >/dev/null");
        let t = Instant::now();
        let (ended, _) = wait_sides(&mut server, &mut client, t + Duration::from_secs(20), || t.elapsed() > Duration::from_millis(100));
        assert_eq!(ended, None);
        assert!(t.elapsed() < Duration::from_secs(4), "{:?}", t.elapsed());
        assert!(server.exit.is_some() && client.exit.is_some());
    }
}
