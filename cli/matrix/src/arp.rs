//! ARP probes on one netdev (RFC 5227 form: sender address 0.0.0.0), through a packet
//! socket: which addresses answer on this cable, and from which MAC. The wire check
//! ([`super::wire`]) judges the answers; this module only touches the kernel.
//!
//! A probe with sender 0.0.0.0 is answered by whatever host owns the target address without
//! any routing check on its side (Linux `arp_process`), so the answers tell which segment a
//! NIC is plugged into even when its own address belongs to another subnet.

use std::time::{Duration, Instant};

const ETH_P_ARP: u16 = 0x0806;

/// An ARP request in probe form (sender address 0.0.0.0) for `target`, from `mac`: the
/// 28-byte ARP payload (the packet socket adds the Ethernet header).
pub fn arp_probe_frame(mac: [u8; 6], target: std::net::Ipv4Addr) -> [u8; 28] {
    let mut f = [0u8; 28];
    f[0..2].copy_from_slice(&1u16.to_be_bytes()); // hardware: Ethernet
    f[2..4].copy_from_slice(&0x0800u16.to_be_bytes()); // protocol: IPv4
    f[4] = 6;
    f[5] = 4;
    f[6..8].copy_from_slice(&1u16.to_be_bytes()); // request
    f[8..14].copy_from_slice(&mac);
    // sender IPv4 0.0.0.0 (bytes 14..18), target MAC zero (18..24)
    f[24..28].copy_from_slice(&target.octets());
    f
}

/// An ARP reply addressed to `ours`: (the address it answers for, the MAC that answered).
/// Anything else (requests, other hosts' replies, short or foreign frames) is None.
pub fn parse_arp_reply(b: &[u8], ours: [u8; 6]) -> Option<(std::net::Ipv4Addr, [u8; 6])> {
    let b = b.get(..28)?;
    let ok = b[0..2] == [0, 1]
        && b[2..4] == [8, 0]
        && b[4] == 6
        && b[5] == 4
        && b[6..8] == [0, 2]
        && b[18..24] == ours;
    let mac: [u8; 6] = b[8..14].try_into().ok()?;
    ok.then(|| (std::net::Ipv4Addr::new(b[14], b[15], b[16], b[17]), mac))
}

/// A packet socket bound to one interface for ARP frames; closed on drop.
struct ArpSocket {
    fd: i32,
    ifindex: i32,
}

impl ArpSocket {
    fn open(ifindex: i32) -> std::io::Result<Self> {
        // SAFETY: socket(2) with constant arguments; the result is checked.
        let fd = unsafe {
            libc::socket(
                libc::AF_PACKET,
                libc::SOCK_DGRAM | libc::SOCK_CLOEXEC,
                i32::from(ETH_P_ARP.to_be()),
            )
        };
        if fd < 0 {
            return Err(std::io::Error::last_os_error());
        }
        let s = ArpSocket { fd, ifindex };
        let sa = s.addr([0; 6]);
        // SAFETY: `sa` is a sockaddr_ll that lives across the call; its size is passed.
        let rc = unsafe {
            libc::bind(
                fd,
                (&raw const sa).cast(),
                socklen_of::<libc::sockaddr_ll>(),
            )
        };
        if rc < 0 {
            return Err(std::io::Error::last_os_error());
        }
        Ok(s)
    }

    fn addr(&self, mac: [u8; 6]) -> libc::sockaddr_ll {
        // SAFETY: sockaddr_ll is plain data; all-zero is a valid value.
        let mut sa: libc::sockaddr_ll = unsafe { std::mem::zeroed() };
        sa.sll_family = libc::AF_PACKET as u16;
        sa.sll_protocol = ETH_P_ARP.to_be();
        sa.sll_ifindex = self.ifindex;
        sa.sll_halen = 6;
        sa.sll_addr[..6].copy_from_slice(&mac);
        sa
    }

    fn broadcast(&self, frame: &[u8]) -> std::io::Result<()> {
        let sa = self.addr([0xff; 6]);
        // SAFETY: `frame` and `sa` outlive the call; their lengths are passed.
        let rc = unsafe {
            libc::sendto(
                self.fd,
                frame.as_ptr().cast(),
                frame.len(),
                0,
                (&raw const sa).cast(),
                socklen_of::<libc::sockaddr_ll>(),
            )
        };
        if rc < 0 {
            return Err(std::io::Error::last_os_error());
        }
        Ok(())
    }

    /// One frame, or None when nothing came within `wait`.
    fn recv(&self, buf: &mut [u8], wait: Duration) -> std::io::Result<Option<usize>> {
        let mut pfd = libc::pollfd {
            fd: self.fd,
            events: libc::POLLIN,
            revents: 0,
        };
        let ms = i32::try_from(wait.as_millis()).unwrap_or(i32::MAX);
        // SAFETY: one valid pollfd for the duration of the call.
        let rc = unsafe { libc::poll(&raw mut pfd, 1, ms) };
        if rc < 0 {
            let e = std::io::Error::last_os_error();
            return if e.kind() == std::io::ErrorKind::Interrupted {
                Ok(None)
            } else {
                Err(e)
            };
        }
        if rc == 0 {
            return Ok(None);
        }
        // SAFETY: `buf` is writable for its length for the duration of the call.
        let n = unsafe {
            libc::recv(
                self.fd,
                buf.as_mut_ptr().cast(),
                buf.len(),
                libc::MSG_DONTWAIT,
            )
        };
        if n < 0 {
            return Err(std::io::Error::last_os_error());
        }
        Ok(Some(usize::try_from(n).unwrap_or(0)))
    }
}

impl Drop for ArpSocket {
    fn drop(&mut self) {
        // SAFETY: the fd is ours and closed once.
        unsafe { libc::close(self.fd) };
    }
}

fn socklen_of<T>() -> libc::socklen_t {
    libc::socklen_t::try_from(std::mem::size_of::<T>()).unwrap_or(0)
}

/// Probe `targets` from the interface (`ifindex`, `mac`) and collect, until `wait` is over,
/// the (address, replying MAC) pairs. The probes go out twice (at the start and half way), so
/// one lost frame does not hide a host.
pub fn probe(
    ifindex: i32,
    mac: [u8; 6],
    targets: &[std::net::Ipv4Addr],
    wait: Duration,
) -> std::io::Result<Vec<(std::net::Ipv4Addr, [u8; 6])>> {
    let sock = ArpSocket::open(ifindex)?;
    let t0 = Instant::now();
    let mut answers: Vec<(std::net::Ipv4Addr, [u8; 6])> = Vec::new();
    let mut buf = [0u8; 256];
    for pass in 0..2 {
        for t in targets {
            sock.broadcast(&arp_probe_frame(mac, *t))?;
        }
        let until = t0 + wait * (pass + 1) / 2;
        while let Some(left) = until
            .checked_duration_since(Instant::now())
            .filter(|d| !d.is_zero())
        {
            let Some(n) = sock.recv(&mut buf, left)? else {
                break;
            };
            if let Some(a) = parse_arp_reply(&buf[..n], mac) {
                if targets.contains(&a.0) && !answers.contains(&a) {
                    answers.push(a);
                }
            }
        }
    }
    Ok(answers)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::net::Ipv4Addr;

    #[test]
    fn a_probe_frame_and_the_reply_it_gets() {
        let mac = [0x52, 0x54, 0x0a, 0x4d, 0x01, 0x02];
        let f = arp_probe_frame(mac, Ipv4Addr::new(10, 77, 0, 1));
        // htype 1, ptype 0x0800, 6/4, op 1, sha, spa 0.0.0.0, tha 0, tpa 10.77.0.1
        assert_eq!(
            f.to_vec(),
            [
                &[0, 1, 8, 0, 6, 4, 0, 1][..],
                &mac,
                &[0; 4],
                &[0; 6],
                &[10, 77, 0, 1]
            ]
            .concat()
        );
        let them = [0x52, 0x54, 0x0a, 0x4d, 0x00, 0x01];
        let reply = [
            &[0, 1, 8, 0, 6, 4, 0, 2][..],
            &them,
            &[10, 77, 0, 1],
            &mac,
            &[0; 4],
        ]
        .concat();
        assert_eq!(
            parse_arp_reply(&reply, mac),
            Some((Ipv4Addr::new(10, 77, 0, 1), them))
        );
        assert_eq!(
            parse_arp_reply(&reply, them),
            None,
            "a reply to someone else"
        );
        assert_eq!(parse_arp_reply(&f, mac), None, "a request");
        assert_eq!(parse_arp_reply(&reply[..20], mac), None, "short");
    }
}
