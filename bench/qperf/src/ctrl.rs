//! The control connection: every message sent or received within the timeout, the
//! out-of-band `?` error path in both directions, and the sync strings.
//!
//! A stock peer reports a fatal error by sending one urgent byte `?` (MSG_OOB), then the text,
//! then shutting down its write side. We poll for POLLPRI alongside POLLIN on every receive,
//! so an error arriving while we wait for any message ends the wait with that text.

use std::io::{ErrorKind, Read, Write};
use std::net::{Shutdown, TcpStream};
use std::os::fd::{AsFd, AsRawFd};
use std::time::{Duration, Instant};

use nix::poll::{poll, PollFd, PollFlags, PollTimeout};
use nix::sys::socket::{recv, send, MsgFlags};

use super::wire::{decode_error_text, MAX_ERROR_TEXT, OOB_ERROR};

/// How long the error path waits for the peer's text, and for the peer to close after ours.
pub const ERROR_WAIT: Duration = Duration::from_secs(3);

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum CtrlError {
    /// Our own failure, as a line of text (stock qperf's wording where it has one).
    Local(String),
    /// The peer's error text, from the `?` path.
    Remote(String),
}

impl CtrlError {
    pub fn local(s: impl Into<String>) -> Self {
        CtrlError::Local(s.into())
    }
}

pub struct Ctrl {
    pub stream: TcpStream,
    pub timeout: Duration,
    /// "server" on the client, "client" on the server (for "… not responding").
    pub peer: &'static str,
}

fn poll_ms(left: Duration) -> PollTimeout {
    let ms = left.as_millis().clamp(1, 60_000) as u16;
    PollTimeout::from(ms)
}

impl Ctrl {
    pub fn new(stream: TcpStream, timeout: Duration, peer: &'static str) -> Result<Self, CtrlError> {
        stream.set_nonblocking(true).map_err(|e| CtrlError::local(format!("failed to set up control socket: {e}")))?;
        Ok(Ctrl { stream, timeout, peer })
    }

    /// Wait for `flags` (plus urgent data); Ok(true) when ready, Ok(false) when `deadline` passed.
    fn wait(&self, flags: PollFlags, deadline: Instant) -> Result<bool, CtrlError> {
        loop {
            let now = Instant::now();
            if now >= deadline {
                return Ok(false);
            }
            let mut fds = [PollFd::new(self.stream.as_fd(), flags | PollFlags::POLLPRI)];
            match poll(&mut fds, poll_ms(deadline - now)) {
                Ok(0) => continue,
                Ok(_) => {
                    let ev = fds[0].revents().unwrap_or(PollFlags::empty());
                    if ev.contains(PollFlags::POLLPRI) {
                        self.urgent()?;
                        continue;
                    }
                    return Ok(true);
                }
                Err(nix::errno::Errno::EINTR) => continue,
                Err(e) => return Err(CtrlError::local(format!("poll failed: {e}"))),
            }
        }
    }

    /// Urgent data is pending: `?` is the peer's error (its text follows on the stream);
    /// anything else (stock qperf's legacy `.`) is ignored.
    fn urgent(&self) -> Result<(), CtrlError> {
        let mut b = [0u8; 1];
        match recv(self.stream.as_raw_fd(), &mut b, MsgFlags::MSG_OOB) {
            Ok(1) if b[0] == OOB_ERROR => Err(CtrlError::Remote(self.read_error_text())),
            // Not there yet, already read, or not `?`: carry on with the normal stream.
            _ => Ok(()),
        }
    }

    fn read_error_text(&self) -> String {
        let deadline = Instant::now() + ERROR_WAIT;
        let mut text = Vec::new();
        let mut buf = [0u8; MAX_ERROR_TEXT];
        while text.len() < MAX_ERROR_TEXT && Instant::now() < deadline {
            let mut fds = [PollFd::new(self.stream.as_fd(), PollFlags::POLLIN)];
            if !matches!(poll(&mut fds, poll_ms(deadline - Instant::now())), Ok(n) if n > 0) {
                continue;
            }
            match (&self.stream).read(&mut buf[..MAX_ERROR_TEXT - text.len()]) {
                Ok(0) => break,
                Ok(n) => text.extend_from_slice(&buf[..n]),
                Err(e) if e.kind() == ErrorKind::WouldBlock || e.kind() == ErrorKind::Interrupted => {}
                Err(_) => break,
            }
        }
        decode_error_text(&text)
    }

    pub fn recv(&self, item: &str, len: usize) -> Result<Vec<u8>, CtrlError> {
        let deadline = Instant::now() + self.timeout;
        let mut buf = vec![0u8; len];
        let mut got = 0;
        while got < len {
            if !self.wait(PollFlags::POLLIN, deadline)? {
                return Err(CtrlError::local(format!("failed to receive {item}: timed out")));
            }
            match (&self.stream).read(&mut buf[got..]) {
                Ok(0) => return Err(CtrlError::local(format!("failed to receive {item}: {} not responding", self.peer))),
                Ok(n) => got += n,
                Err(e) if e.kind() == ErrorKind::WouldBlock || e.kind() == ErrorKind::Interrupted => {}
                Err(e) => return Err(CtrlError::local(format!("failed to receive {item}: {e}"))),
            }
        }
        Ok(buf)
    }

    pub fn send(&self, item: &str, data: &[u8]) -> Result<(), CtrlError> {
        let deadline = Instant::now() + self.timeout;
        let mut sent = 0;
        while sent < data.len() {
            if !self.wait(PollFlags::POLLOUT, deadline)? {
                return Err(CtrlError::local(format!("failed to send {item}: timed out")));
            }
            match (&self.stream).write(&data[sent..]) {
                Ok(0) => return Err(CtrlError::local(format!("failed to send {item}: {} not responding", self.peer))),
                Ok(n) => sent += n,
                Err(e) if e.kind() == ErrorKind::WouldBlock || e.kind() == ErrorKind::Interrupted => {}
                Err(e) => return Err(CtrlError::local(format!("failed to send {item}: {e}"))),
            }
        }
        Ok(())
    }

    /// Both sides send `msg` and then read it back from the peer.
    pub fn sync(&self, msg: &[u8]) -> Result<(), CtrlError> {
        let name = String::from_utf8_lossy(msg).into_owned();
        self.send(&name, msg)?;
        self.recv_sync(msg)
    }

    pub fn recv_sync(&self, msg: &[u8]) -> Result<(), CtrlError> {
        let name = String::from_utf8_lossy(msg).into_owned();
        let got = self.recv(&name, msg.len())?;
        if got != msg {
            return Err(CtrlError::local(format!("synchronize {name} failure: data does not match")));
        }
        Ok(())
    }

    /// Wait (bounded) until the peer closes; used after the last message of a session.
    pub fn wait_close(&self, bound: Duration) {
        let deadline = Instant::now() + bound;
        let mut buf = [0u8; 256];
        while let Ok(true) = self.wait(PollFlags::POLLIN, deadline) {
            match (&self.stream).read(&mut buf) {
                Ok(0) => return,
                Ok(_) => {}
                Err(e) if e.kind() == ErrorKind::WouldBlock || e.kind() == ErrorKind::Interrupted => {}
                Err(_) => return,
            }
        }
    }

    /// Report a fatal error to the peer the way stock qperf does: urgent `?`, the text
    /// without a newline, shut down our write side, then drain (bounded) until the peer closes.
    pub fn send_error(&self, text: &str) {
        let t = &text.as_bytes()[..text.len().min(MAX_ERROR_TEXT)];
        // Best effort: the peer may already be gone.
        let _ = send(self.stream.as_raw_fd(), &[OOB_ERROR], MsgFlags::MSG_OOB);
        let _ = self.send("error text", t);
        let _ = self.stream.shutdown(Shutdown::Write);
        let deadline = Instant::now() + ERROR_WAIT;
        let mut buf = [0u8; 256];
        loop {
            let mut fds = [PollFd::new(self.stream.as_fd(), PollFlags::POLLIN)];
            let now = Instant::now();
            if now >= deadline {
                return;
            }
            match poll(&mut fds, poll_ms(deadline - now)) {
                Ok(n) if n > 0 => {}
                Ok(_) => continue,
                Err(nix::errno::Errno::EINTR) => continue,
                Err(_) => return,
            }
            // Urgent data from the peer (its own error) is not ours to read here.
            let _ = recv(self.stream.as_raw_fd(), &mut buf[..1], MsgFlags::MSG_OOB);
            match (&self.stream).read(&mut buf) {
                Ok(0) => return,
                Ok(_) => {}
                Err(e) if e.kind() == ErrorKind::WouldBlock || e.kind() == ErrorKind::Interrupted => {}
                Err(_) => return,
            }
        }
    }
}

/// Two ends of a control connection over loopback TCP (client, server), 500 ms bounds: for
/// the tests of this crate that talk through a `Ctrl`.
#[cfg(test)]
pub(crate) fn loopback_pair() -> (Ctrl, Ctrl) {
    let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let c = TcpStream::connect(l.local_addr().unwrap()).unwrap();
    let (s, _) = l.accept().unwrap();
    let t = Duration::from_millis(500);
    (Ctrl::new(c, t, "server").unwrap(), Ctrl::new(s, t, "client").unwrap())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pair() -> (Ctrl, Ctrl) {
        loopback_pair()
    }

    #[test]
    fn error_path_reaches_a_waiting_receiver() {
        let (client, server) = pair();
        let h = std::thread::spawn(move || server.send_error("bad request index: 200"));
        assert_eq!(client.recv("port", 4), Err(CtrlError::Remote("bad request index: 200".into())));
        drop(client);
        h.join().unwrap();
    }

    #[test]
    fn timeouts_and_close() {
        let (client, server) = pair();
        assert_eq!(client.recv("results", 256), Err(CtrlError::local("failed to receive results: timed out")));
        drop(server);
        assert_eq!(client.recv("results", 256), Err(CtrlError::local("failed to receive results: server not responding")));
    }

    #[test]
    fn sync_both_ways_and_mismatch() {
        let (client, server) = pair();
        let h = std::thread::spawn(move || {
            server.sync(b"synchronization before test").unwrap();
            server.send("x", b"synchronization after tesT").unwrap();
            server
        });
        client.sync(b"synchronization before test").unwrap();
        assert_eq!(
            client.recv_sync(b"synchronization after test"),
            Err(CtrlError::local("synchronize synchronization after test failure: data does not match"))
        );
        h.join().unwrap();
    }
}
