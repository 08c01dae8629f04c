//! The data phase of each RDMA test, for both sides, counting as qperf counts (plan::count).
//!
//! qperf stops each side on its own SIGALRM timer. Here each loop checks its deadline between
//! completion waits of at most [`SLICE`]. With `-n` and no time (count-based), every test
//! ends after its count, not only the *_bw ones as in qperf; a count-based side also gives up
//! after the control timeout without progress (1 s for UD once messages flowed: they can be
//! lost), so nothing waits for ever.

#![forbid(unsafe_code)]

use std::os::fd::AsFd;
use std::time::{Duration, Instant};

use nix::poll::{poll, PollFd, PollFlags, PollTimeout};
use uverbs::provider::Provider;
use uverbs::wr::{WcStatus, WorkCompletion, WrOpcode};

use super::super::clock::get_times;
use super::super::ctrl::Ctrl;
use super::super::wire::Stat;
use super::plan::{
    atomic_seq, check_atomic, count, cq_error_line, Event, Kind, RdmaTest, Transport, DEPTH, POLL_CLIENT_ID,
    POLL_SERVER_ID, WRID_RDMA, WRID_RECV, WRID_SEND,
};
use super::rig::{backoff, Rig};

/// The longest a loop waits for completions before it checks its end condition again.
pub const SLICE: Duration = Duration::from_millis(50);
const UD_IDLE: Duration = Duration::from_secs(1);

pub struct Run {
    pub test: RdmaTest,
    pub server: bool,
    pub time: u32,
    pub no_msgs: u32,
    pub access_recv: bool,
    /// The control timeout: how long a count-based run waits without progress.
    pub idle: Duration,
    pub ethernet: bool,
}

struct Stop {
    deadline: Option<Instant>,
    n: u64,
    idle: Duration,
    last: Instant,
    ud: bool,
}

impl Stop {
    fn new(r: &Run) -> Self {
        let now = Instant::now();
        Stop {
            deadline: (r.time > 0).then(|| now + Duration::from_secs(u64::from(r.time))),
            // As qperf's *_bw tests, a count ends the run even with a time.
            n: u64::from(r.no_msgs),
            idle: r.idle,
            last: now,
            ud: r.test.transport == Transport::Ud,
        }
    }
    fn progress(&mut self) {
        self.last = Instant::now();
        if self.ud {
            self.idle = self.idle.min(UD_IDLE);
        }
    }
    /// Time-based runs only: the deadline passed. Posting checks this before each work
    /// request, as stock qperf's post loops check `Finished`.
    fn time_up(&self) -> bool {
        self.deadline.is_some_and(|d| Instant::now() >= d)
    }
    fn expired(&self) -> bool {
        let now = Instant::now();
        match self.deadline {
            Some(d) => now >= d,
            None => now.duration_since(self.last) >= self.idle,
        }
    }
    /// Count-based: `msgs` reached the count.
    fn reached(&self, msgs: u64) -> bool {
        self.n != 0 && msgs >= self.n
    }
    /// How many more may be posted when `posted` were (count-based), at most `want`.
    fn allow(&self, posted: u64, want: u32) -> u32 {
        if self.n == 0 {
            want
        } else {
            self.n.saturating_sub(posted).min(u64::from(want)) as u32
        }
    }
}

/// Post up to `n` work requests one at a time with `post`, stopping early once `time_up`
/// says so; returns how many went out. Stock qperf checks its timer between posts too: on a
/// slow provider (rxe under emulation, a 64 KiB message costs milliseconds inside the post)
/// the first 1024 posts alone outlast a short `-t`, and a loop that posts them all overruns it.
fn post_while(n: u32, time_up: impl Fn() -> bool, mut post: impl FnMut() -> Result<(), String>) -> Result<u32, String> {
    for i in 0..n {
        if time_up() {
            return Ok(i);
        }
        post()?;
    }
    Ok(n)
}

fn check(r: &Run, wc: &WorkCompletion) -> Result<(), String> {
    if wc.status == WcStatus::Success {
        Ok(())
    } else {
        Err(cq_error_line(r.test.name, wc.status, r.ethernet))
    }
}

/// Run this side's data phase; the clocks go into `stat`. `ctrl` is watched by an idle
/// server in count-based runs (our client sends its "after" sync early there).
pub fn data_phase<P: Provider>(rig: &mut Rig<P>, r: &Run, ctrl: &Ctrl, stat: &mut Stat) -> Result<(), String> {
    let mut wc = vec![WorkCompletion::default(); DEPTH as usize];
    stat.time_s = get_times();
    let mut stop = Stop::new(r);
    let res = match (r.test.kind, r.server) {
        (Kind::Bw | Kind::WriteBw, false) => stream_send(rig, r, &mut stop, stat, &mut wc),
        (Kind::Bw | Kind::WriteBw, true) => stream_recv(rig, r, &mut stop, stat, &mut wc),
        (Kind::BiBw, _) => bi_bw(rig, r, &mut stop, stat, &mut wc),
        (Kind::Lat | Kind::WriteLat, _) => pp_lat(rig, r, &mut stop, stat, &mut wc),
        (Kind::WritePollLat, _) => poll_lat(rig, r, &mut stop, stat, &mut wc),
        (Kind::ReadBw | Kind::ReadLat, false) => read(rig, r, &mut stop, stat, &mut wc),
        (Kind::AtomicMr(_) | Kind::VerAtomic(_), false) => atomics(rig, r, &mut stop, stat, &mut wc),
        (_, true) => idle(r, ctrl, &stop),
    };
    stat.time_e = get_times();
    res
}

fn note_cqes(stat: &mut Stat, n: usize) {
    stat.max_cqes = stat.max_cqes.max(n as u32);
}

fn stream_send<P: Provider>(rig: &mut Rig<P>, r: &Run, stop: &mut Stop, stat: &mut Stat, wc: &mut [WorkCompletion]) -> Result<(), String> {
    let write = r.test.kind == Kind::WriteBw;
    let post = |rig: &mut Rig<P>, stat: &mut Stat, stop: &Stop, n: u32| -> Result<(), String> {
        let sent = post_while(n, || stop.time_up(), || if write { rig.post_rdma(WrOpcode::RdmaWriteWithImm, 1) } else { rig.post_send(1) })?;
        for _ in 0..sent {
            count(stat, Event::Posted, rig.msg_size);
        }
        Ok(())
    };
    let first = stop.allow(0, DEPTH);
    post(rig, stat, stop, first)?;
    loop {
        if stop.expired() {
            return Ok(());
        }
        let n = rig.poll(wc, SLICE)?;
        note_cqes(stat, n);
        for c in &wc[..n] {
            check(r, c)?;
        }
        if n > 0 {
            stop.progress();
        }
        if stop.reached(stat.s.msgs) {
            return Ok(());
        }
        let more = stop.allow(stat.s.msgs, n as u32);
        post(rig, stat, stop, more)?;
    }
}

fn stream_recv<P: Provider>(rig: &mut Rig<P>, r: &Run, stop: &mut Stop, stat: &mut Stat, wc: &mut [WorkCompletion]) -> Result<(), String> {
    loop {
        if stop.expired() || stop.reached(stat.r.msgs) {
            return Ok(());
        }
        let n = rig.poll(wc, SLICE)?;
        note_cqes(stat, n);
        for c in &wc[..n] {
            check(r, c)?;
            count(stat, Event::Received, rig.msg_size);
            if r.access_recv {
                rig.touch();
            }
        }
        if n > 0 {
            stop.progress();
            rig.post_recv(n as u32)?;
        }
    }
}

fn bi_bw<P: Provider>(rig: &mut Rig<P>, r: &Run, stop: &mut Stop, stat: &mut Stat, wc: &mut [WorkCompletion]) -> Result<(), String> {
    let first = post_while(stop.allow(0, DEPTH), || stop.time_up(), || rig.post_send(1))?;
    for _ in 0..first {
        count(stat, Event::Posted, rig.msg_size);
    }
    loop {
        if stop.expired() || (stop.reached(stat.s.msgs) && stop.reached(stat.r.msgs)) {
            return Ok(());
        }
        let n = rig.poll(wc, SLICE)?;
        note_cqes(stat, n);
        let (mut sent, mut recvd) = (0u32, 0u32);
        for c in &wc[..n] {
            check(r, c)?;
            match c.wr_id {
                WRID_SEND => sent += 1,
                WRID_RECV => {
                    recvd += 1;
                    count(stat, Event::Received, rig.msg_size);
                    if r.access_recv {
                        rig.touch();
                    }
                }
                _ => {}
            }
        }
        if n > 0 {
            stop.progress();
        }
        if recvd > 0 {
            rig.post_recv(recvd)?;
        }
        let more = stop.allow(stat.s.msgs, sent);
        if more > 0 {
            let more = post_while(more, || stop.time_up(), || rig.post_send(1))?;
            for _ in 0..more {
                count(stat, Event::Posted, rig.msg_size);
            }
        }
    }
}

fn pp_lat<P: Provider>(rig: &mut Rig<P>, r: &Run, stop: &mut Stop, stat: &mut Stat, wc: &mut [WorkCompletion]) -> Result<(), String> {
    let write = r.test.kind == Kind::WriteLat;
    let send = |rig: &mut Rig<P>, stat: &mut Stat| -> Result<(), String> {
        if write {
            rig.post_rdma(WrOpcode::RdmaWriteWithImm, 1)?;
        } else {
            rig.post_send(1)?;
        }
        count(stat, Event::Posted, rig.msg_size);
        Ok(())
    };
    // Bit 1: our last send completed; bit 2: a message arrived. Send again at both.
    let mut done = 1u8;
    if !r.server {
        send(rig, stat)?;
        done = 0;
    }
    loop {
        if stop.expired() || stop.reached(stat.r.msgs) && (done & 1 == 1 || !r.server) {
            return Ok(());
        }
        let n = rig.poll(&mut wc[..2], SLICE)?;
        for c in &wc[..n] {
            check(r, c)?;
            match c.wr_id {
                WRID_SEND | WRID_RDMA => done |= 1,
                WRID_RECV => {
                    count(stat, Event::Received, rig.msg_size);
                    rig.post_recv(1)?;
                    done |= 2;
                }
                _ => {}
            }
        }
        if n > 0 {
            stop.progress();
        }
        if done == 3 {
            // Count-based: the client stops after its n-th answer, the server after
            // answering the n-th message.
            if !r.server && stop.reached(stat.r.msgs) {
                return Ok(());
            }
            send(rig, stat)?;
            done = 0;
        }
    }
}

fn poll_lat<P: Provider>(rig: &mut Rig<P>, r: &Run, stop: &mut Stop, stat: &mut Stat, wc: &mut [WorkCompletion]) -> Result<(), String> {
    let (loc, rem) = if r.server { (POLL_SERVER_ID, POLL_CLIENT_ID) } else { (POLL_CLIENT_ID, POLL_SERVER_ID) };
    let last = rig.msg_size.saturating_sub(1) as usize;
    let mut send = !r.server;
    loop {
        if stop.expired() {
            return Ok(());
        }
        if send {
            rig.post_rdma(WrOpcode::RdmaWrite, 1)?;
            count(stat, Event::Posted, rig.msg_size);
            let n = rig.cq.poll(&mut wc[..2]).map_err(|e| format!("CQ poll failed: {e}"))?;
            for c in &wc[..n] {
                check(r, c)?;
            }
        }
        let mut spins = 0u32;
        loop {
            std::sync::atomic::compiler_fence(std::sync::atomic::Ordering::SeqCst);
            if rig.byte(0) == rem && rig.byte(last) == rem {
                break;
            }
            if stop.expired() {
                return Ok(());
            }
            // Reap write completions while waiting (errors surface here too).
            if spins & 63 == 0 {
                let n = rig.cq.poll(&mut wc[..16]).map_err(|e| format!("CQ poll failed: {e}"))?;
                for c in &wc[..n] {
                    check(r, c)?;
                }
            }
            backoff(&mut spins);
        }
        stop.progress();
        count(stat, Event::Received, rig.msg_size);
        rig.set_byte(0, loc);
        rig.set_byte(last, loc);
        send = true;
        if stop.reached(stat.r.msgs) {
            // Count-based: the server still answers the last message.
            if r.server {
                rig.post_rdma(WrOpcode::RdmaWrite, 1)?;
                count(stat, Event::Posted, rig.msg_size);
            }
            return Ok(());
        }
    }
}

fn read<P: Provider>(rig: &mut Rig<P>, r: &Run, stop: &mut Stop, stat: &mut Stat, wc: &mut [WorkCompletion]) -> Result<(), String> {
    let depth = if r.test.kind == Kind::ReadBw { DEPTH } else { 1 };
    let mut posted = u64::from(post_while(stop.allow(0, depth), || stop.time_up(), || rig.post_rdma(WrOpcode::RdmaRead, 1))?);
    loop {
        if stop.expired() || stop.reached(stat.r.msgs) {
            return Ok(());
        }
        let n = rig.poll(&mut wc[..depth as usize], SLICE)?;
        note_cqes(stat, n);
        for c in &wc[..n] {
            check(r, c)?;
            count(stat, Event::ReadDone, rig.msg_size);
            if r.access_recv {
                rig.touch();
            }
        }
        if n > 0 {
            stop.progress();
        }
        let more = stop.allow(posted, n as u32);
        posted += u64::from(post_while(more, || stop.time_up(), || rig.post_rdma(WrOpcode::RdmaRead, 1))?);
    }
}

fn atomics<P: Provider>(rig: &mut Rig<P>, r: &Run, stop: &mut Stop, stat: &mut Stat, wc: &mut [WorkCompletion]) -> Result<(), String> {
    let (a, ver) = match r.test.kind {
        Kind::AtomicMr(a) => (a, false),
        Kind::VerAtomic(a) => (a, true),
        _ => return Ok(()),
    };
    let slots = if ver { RdmaTest::ver_slots(rig.msg_size) } else { DEPTH };
    let (mut head, mut tail) = (0u64, 0u64);
    let post = |rig: &mut Rig<P>, stat: &mut Stat, slot: u64, head: &mut u64| -> Result<(), String> {
        if ver {
            let (_, cmp, swap) = atomic_seq(a, *head);
            rig.post_atomic(a, slot, slot * 8, cmp, swap)?;
        } else {
            rig.post_atomic(a, 0, 0, 0, 0)?;
        }
        *head += 1;
        count(stat, Event::AtomicPosted, 8);
        Ok(())
    };
    for i in 0..u64::from(stop.allow(0, slots)) {
        if stop.time_up() {
            break;
        }
        post(rig, stat, i, &mut head)?;
    }
    loop {
        if stop.expired() || stop.reached(stat.rem_r.msgs) {
            return Ok(());
        }
        let n = rig.poll(wc, SLICE)?;
        note_cqes(stat, n);
        for c in &wc[..n] {
            check(r, c)?;
            count(stat, Event::AtomicDone, 8);
            if ver {
                let slot = c.wr_id.min(u64::from(slots.saturating_sub(1)));
                check_atomic(a, tail, rig.u64_at(slot as usize * 8)).map_err(|m| format!("{} failed: {m}", r.test.name))?;
                tail += 1;
            }
            if stop.allow(head, 1) == 1 {
                post(rig, stat, c.wr_id, &mut head)?;
            }
        }
        if n > 0 {
            stop.progress();
        }
    }
}

/// The idle server of READ and atomic tests: until its time is up; count-based, until the
/// client's early "after" sync arrives on the control connection (bounded: the timeout plus
/// 1 ms per message).
fn idle(r: &Run, ctrl: &Ctrl, stop: &Stop) -> Result<(), String> {
    if stop.deadline.is_some() {
        while !stop.expired() {
            std::thread::sleep(SLICE);
        }
        return Ok(());
    }
    let bound = Instant::now() + r.idle + Duration::from_millis(u64::from(r.no_msgs));
    loop {
        let now = Instant::now();
        if now >= bound {
            return Ok(());
        }
        let mut fds = [PollFd::new(ctrl.stream.as_fd(), PollFlags::POLLIN | PollFlags::POLLPRI)];
        let ms = (bound - now).as_millis().clamp(1, 1000) as u16;
        match poll(&mut fds, PollTimeout::from(ms)) {
            Ok(n) if n > 0 => return Ok(()),
            _ => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::cell::Cell;

    #[test]
    fn posting_stops_when_time_is_up() {
        // Time runs out after the third post: three went out, the rest are not posted.
        let posts = Cell::new(0u32);
        let n = post_while(1024, || posts.get() >= 3, || {
            posts.set(posts.get() + 1);
            Ok(())
        });
        assert_eq!((n, posts.get()), (Ok(3), 3));
        // Time already up: nothing is posted.
        assert_eq!(post_while(1024, || true, || panic!("posted after the deadline")), Ok(0));
        // Time left: all of them.
        let posts = Cell::new(0u32);
        let n = post_while(5, || false, || {
            posts.set(posts.get() + 1);
            Ok(())
        });
        assert_eq!(n, Ok(5));
        assert_eq!(posts.get(), 5);
        // A failed post ends the loop with its error.
        assert_eq!(post_while(5, || false, || Err("failed to post send".to_string())), Err("failed to post send".to_string()));
    }

    #[test]
    fn count_based_runs_are_never_time_up() {
        let run = |time| Run {
            test: RdmaTest { name: "rc_bi_bw", transport: Transport::Rc, kind: Kind::BiBw },
            server: false,
            time,
            no_msgs: 10,
            access_recv: false,
            idle: Duration::ZERO,
            ethernet: true,
        };
        // Count-based (no time): the idle timeout ends the loop, never the posting.
        let stop = Stop::new(&run(0));
        assert!(!stop.time_up());
        assert!(stop.expired());
        let mut stop = Stop::new(&run(1));
        assert!(!stop.time_up());
        stop.deadline = Some(Instant::now());
        assert!(stop.time_up());
    }
}
