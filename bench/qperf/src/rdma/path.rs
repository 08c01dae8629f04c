//! The path MTU and the UD message size a non-CM test runs with.
//!
//! Stock qperf's defaults (path MTU 2048, UD messages of 2 KiB) are InfiniBand's; on a RoCE
//! port behind a 1500-byte netdev the active MTU is 1024, so `ud_bw` with stock's defaults
//! cannot run. When both sides are rperftest (each knows the other's active MTU from the MTU
//! block, node_ext) and the link is RoCE, a value the user did not give defaults to what both
//! ports carry: the path MTU to the smaller active MTU, a UD message to one packet. Against
//! any other peer the values are stock's, capped on RoCE at the port's active MTU.

#![forbid(unsafe_code)]

/// One side's sizes as asked: the REQ's (server) or the `-l…` values (client), and whether
/// the user gave them (`-mt`, `-m`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Asked {
    pub mtu: u32,
    pub msg_size: u32,
    pub mtu_given: bool,
    pub msg_given: bool,
}

/// What the two ports support.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Ports {
    /// This side's link layer is Ethernet (RoCE).
    pub ethernet: bool,
    /// This side's port's active MTU in bytes.
    pub local: u32,
    /// The peer's active MTU: only from an rperftest peer that sent its MTU block.
    pub peer: Option<u32>,
}

/// The sizes to run with; `auto_*`: chosen here rather than asked for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Chosen {
    pub mtu: u32,
    pub msg_size: u32,
    pub auto_mtu: bool,
    pub auto_msg: bool,
}

/// The path MTU and message size for `asked` over `ports` (`ud`: a message is one packet);
/// Err: a UD message that cannot fit one packet, with the size to use.
pub fn choose(name: &str, asked: Asked, ports: Ports, ud: bool) -> Result<Chosen, String> {
    let peer = ports.peer.filter(|_| ports.ethernet);
    let auto_mtu = peer.is_some() && !asked.mtu_given;
    let mtu = match peer {
        Some(p) if auto_mtu => ports.local.min(p),
        // qperf uses the requested MTU as it is (IB); on RoCE the port's active MTU caps it,
        // or larger packets would be dropped.
        _ if ports.ethernet => asked.mtu.min(ports.local),
        _ => asked.mtu,
    };
    let packet = mtu.min(ports.local);
    let auto_msg = ud && peer.is_some() && !asked.msg_given;
    let msg_size = if auto_msg { packet } else { asked.msg_size };
    if ud && msg_size > packet {
        return Err(format!("{name}: message size {msg_size} is larger than the path MTU {packet} (a UD message is one packet); use -m {packet} or less"));
    }
    Ok(Chosen { mtu, msg_size, auto_mtu, auto_msg })
}

/// The `-v` line that says what was chosen instead of stock qperf's defaults, and why; None
/// when nothing differs from what was asked.
pub fn note(asked: Asked, ports: Ports, c: Chosen) -> Option<String> {
    let mtu_differs = c.auto_mtu && c.mtu != asked.mtu;
    let msg_differs = c.auto_msg && c.msg_size != asked.msg_size;
    let why = match ports.peer {
        Some(p) => format!("the path MTU both RoCE ports carry: ours {}, the server's {p}", ports.local),
        None => return None,
    };
    let text = match (mtu_differs, msg_differs) {
        (true, true) => format!(
            "msg_size {} and mtu_size {} (one packet at {why}); stock qperf's defaults are {} and {}",
            c.msg_size, c.mtu, asked.msg_size, asked.mtu
        ),
        (true, false) => format!("mtu_size {} ({why}); stock qperf's default is {}", c.mtu, asked.mtu),
        (false, true) => format!(
            "msg_size {} (one packet at the path MTU {}); stock qperf's default is {}",
            c.msg_size, c.mtu.min(ports.local), asked.msg_size
        ),
        (false, false) => return None,
    };
    Some(text)
}

#[cfg(test)]
mod tests {
    use super::*;

    const STOCK: Asked = Asked { mtu: 2048, msg_size: 2048, mtu_given: false, msg_given: false };

    fn roce(local: u32, peer: Option<u32>) -> Ports {
        Ports { ethernet: true, local, peer }
    }

    #[test]
    fn two_rperftest_sides_on_roce_pick_one_packet() {
        let c = choose("ud_bw", STOCK, roce(1024, Some(1024)), true).unwrap();
        assert_eq!(c, Chosen { mtu: 1024, msg_size: 1024, auto_mtu: true, auto_msg: true });
        assert_eq!(
            note(STOCK, roce(1024, Some(1024)), c).as_deref(),
            Some("msg_size 1024 and mtu_size 1024 (one packet at the path MTU both RoCE ports carry: ours 1024, the server's 1024); stock qperf's defaults are 2048 and 2048")
        );
        // The smaller port wins, either side; jumbo frames on both give 4096.
        assert_eq!(choose("ud_bw", STOCK, roce(4096, Some(1024)), true).unwrap().msg_size, 1024);
        assert_eq!(choose("ud_bw", STOCK, roce(1024, Some(4096)), true).unwrap().mtu, 1024);
        assert_eq!(choose("ud_bi_bw", STOCK, roce(4096, Some(4096)), true).unwrap().msg_size, 4096);
        // RC/UC: the path MTU only; the message size is not bounded by it.
        let asked = Asked { msg_size: 65536, ..STOCK };
        let c = choose("rc_bw", asked, roce(1024, Some(1024)), false).unwrap();
        assert_eq!(c, Chosen { mtu: 1024, msg_size: 65536, auto_mtu: true, auto_msg: false });
        assert_eq!(
            note(asked, roce(1024, Some(1024)), c).as_deref(),
            Some("mtu_size 1024 (the path MTU both RoCE ports carry: ours 1024, the server's 1024); stock qperf's default is 2048")
        );
    }

    #[test]
    fn what_the_user_gave_stays() {
        // -mt 512: the MTU is the user's, the UD message still fits one packet of it.
        let asked = Asked { mtu: 512, mtu_given: true, ..STOCK };
        let c = choose("ud_bw", asked, roce(1024, Some(1024)), true).unwrap();
        assert_eq!(c, Chosen { mtu: 512, msg_size: 512, auto_mtu: false, auto_msg: true });
        assert_eq!(
            note(asked, roce(1024, Some(1024)), c).as_deref(),
            Some("msg_size 512 (one packet at the path MTU 512); stock qperf's default is 2048")
        );
        // -m 2048: refused with the size to use, as against a stock peer.
        let asked = Asked { msg_given: true, ..STOCK };
        assert_eq!(
            choose("ud_bw", asked, roce(1024, Some(1024)), true),
            Err("ud_bw: message size 2048 is larger than the path MTU 1024 (a UD message is one packet); use -m 1024 or less".into())
        );
        // -m 512 fits: kept; the MTU is still chosen.
        let asked = Asked { msg_size: 512, msg_given: true, ..STOCK };
        let c = choose("ud_bw", asked, roce(1024, Some(1024)), true).unwrap();
        assert_eq!(c, Chosen { mtu: 1024, msg_size: 512, auto_mtu: true, auto_msg: false });
    }

    #[test]
    fn stock_or_older_peer_keeps_stock_defaults() {
        // No MTU block from the peer: stock's values, capped on RoCE, and the old error.
        assert_eq!(
            choose("ud_bw", STOCK, roce(1024, None), true),
            Err("ud_bw: message size 2048 is larger than the path MTU 1024 (a UD message is one packet); use -m 1024 or less".into())
        );
        let c = choose("rc_bw", STOCK, roce(1024, None), false).unwrap();
        assert_eq!(c, Chosen { mtu: 1024, msg_size: 2048, auto_mtu: false, auto_msg: false });
        assert_eq!(note(STOCK, roce(1024, None), c), None);
        // InfiniBand: the requested MTU as it is, even between two rperftest sides.
        let ib = Ports { ethernet: false, local: 4096, peer: Some(4096) };
        let c = choose("ud_bw", STOCK, ib, true).unwrap();
        assert_eq!(c, Chosen { mtu: 2048, msg_size: 2048, auto_mtu: false, auto_msg: false });
        assert_eq!(note(STOCK, ib, c), None);
        // Chosen values equal to stock's: nothing to say.
        let c = choose("ud_bw", STOCK, roce(2048, Some(4096)), true).unwrap();
        assert_eq!((c.mtu, c.msg_size), (2048, 2048));
        assert_eq!(note(STOCK, roce(2048, Some(4096)), c), None);
    }
}
