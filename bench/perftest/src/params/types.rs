//! The enums of the command line: tools, transports, test shapes and report options, with the
//! wire values perftest gives them (the verb and atomic type are `oob::msg`'s).

use std::fmt;

use uverbs::dv::CryptoAttr;

use crate::engine::crypto::CryptoSetup;

/// The verb and the atomic operation are the wire's enums (one numbering, one set of names).
pub use crate::oob::msg::{AtomicType, Verb};

/// The eight tools.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Tool {
    WriteBw,
    WriteLat,
    ReadBw,
    ReadLat,
    SendBw,
    SendLat,
    AtomicBw,
    AtomicLat,
}

/// BW or latency test ("tst" in perftest; wire values LAT=0, BW=1).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum TestKind {
    Lat,
    Bw,
}

/// Transport (wire values RC=0, UC=1, UD=2, RawEth=3, XRC=4, DC=5, SRD=6). SRD runs only on an
/// EFA device (`tool::setup::srd_refusal`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Connection {
    Rc,
    Uc,
    Ud,
    Xrc,
    Dc,
    Srd,
}

/// Iterations (`-n`) or duration (`-D`, `--run_infinitely`); wire ITERATIONS=0, DURATION=1.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum TestType {
    Iterations,
    Duration,
}

/// RUN_REGULAR=0, RUN_ALL (`-a`)=1, RUN_INFINITELY=2.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum TestMethod {
    Regular,
    All,
    Infinitely,
}

/// GBS=0 (`--report_gbits`), MBS=1 (default).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ReportFormat {
    Gbs,
    Mbs,
}

/// `--output=…`: Full is the default (all lines).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Output {
    Full,
    Bandwidth,
    MessageRate,
    Latency,
}

/// `--force-link`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum LinkType {
    Ib,
    Ethernet,
}

/// Which side of the *test* this process plays (after `--reversed`); the TCP role is
/// [`Params::is_tcp_client`](super::Params::is_tcp_client).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Role {
    Server,
    Client,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum RateLimitType {
    Disabled,
    Hw,
    Sw,
    Pp,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum RateUnits {
    /// `M`: MiB/s
    MegaBytes,
    /// `g`: Gb/s (default)
    GigaBits,
    /// `p`: packets/s
    Packets,
}

impl Tool {
    pub const ALL: [Tool; 8] = [
        Tool::WriteBw,
        Tool::WriteLat,
        Tool::ReadBw,
        Tool::ReadLat,
        Tool::SendBw,
        Tool::SendLat,
        Tool::AtomicBw,
        Tool::AtomicLat,
    ];

    /// `ib_write_bw`, or a path ending in it (busybox-style argv[0]: `/usr/bin/ib_write_bw`).
    pub fn from_name(name: &str) -> Option<Tool> {
        let base = name.rsplit('/').next().unwrap_or(name);
        Tool::ALL.into_iter().find(|t| t.name() == base)
    }

    pub fn name(self) -> &'static str {
        match self {
            Tool::WriteBw => "ib_write_bw",
            Tool::WriteLat => "ib_write_lat",
            Tool::ReadBw => "ib_read_bw",
            Tool::ReadLat => "ib_read_lat",
            Tool::SendBw => "ib_send_bw",
            Tool::SendLat => "ib_send_lat",
            Tool::AtomicBw => "ib_atomic_bw",
            Tool::AtomicLat => "ib_atomic_lat",
        }
    }

    pub fn kind(self) -> TestKind {
        match self {
            Tool::WriteBw | Tool::ReadBw | Tool::SendBw | Tool::AtomicBw => TestKind::Bw,
            _ => TestKind::Lat,
        }
    }

    /// The tool's base verb: Write, Read, Send or Atomic.
    pub fn verb(self) -> Verb {
        match self {
            Tool::WriteBw | Tool::WriteLat => Verb::Write,
            Tool::ReadBw | Tool::ReadLat => Verb::Read,
            Tool::SendBw | Tool::SendLat => Verb::Send,
            Tool::AtomicBw | Tool::AtomicLat => Verb::Atomic,
        }
    }

    /// `-n` default: 5000 for ib_write_bw, 1000 for the others.
    pub fn default_iters(self) -> u64 {
        if self == Tool::WriteBw {
            5000
        } else {
            1000
        }
    }
}

impl fmt::Display for Tool {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl TestKind {
    pub fn wire_value(self) -> u32 {
        match self {
            TestKind::Lat => 0,
            TestKind::Bw => 1,
        }
    }
}

impl Connection {
    pub fn wire_value(self) -> u32 {
        match self {
            Connection::Rc => 0,
            Connection::Uc => 1,
            Connection::Ud => 2,
            Connection::Xrc => 4,
            Connection::Dc => 5,
            Connection::Srd => 6,
        }
    }
    pub fn as_str(self) -> &'static str {
        match self {
            Connection::Rc => "RC",
            Connection::Uc => "UC",
            Connection::Ud => "UD",
            Connection::Xrc => "XRC",
            Connection::Dc => "DC",
            Connection::Srd => "SRD",
        }
    }
}

impl TestType {
    pub fn wire_value(self) -> u32 {
        match self {
            TestType::Iterations => 0,
            TestType::Duration => 1,
        }
    }
}

impl TestMethod {
    pub fn wire_value(self) -> u32 {
        match self {
            TestMethod::Regular => 0,
            TestMethod::All => 1,
            TestMethod::Infinitely => 2,
        }
    }
}

impl ReportFormat {
    pub fn wire_value(self) -> u32 {
        match self {
            ReportFormat::Gbs => 0,
            ReportFormat::Mbs => 1,
        }
    }
}

/// perftest's `aes_block_size_array`: the data-unit sizes, indexed by `enum mlx5dv_block_size`
/// (`MLX5DV_BLOCK_SIZE_512` = 0, 520, 4048, 4096, 4160 = 4).
pub const BLOCK_SIZES: [u32; 5] = [512, 520, 4048, 4096, 4160];

/// The AES-XTS options as given (after perftest's `uint16_t` casts).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct AesXts {
    /// `--aes_xts`.
    pub enabled: bool,
    /// `--encrypt_on_tx`: memory holds plaintext, the wire ciphertext (default: the reverse).
    pub encrypt_on_tx: bool,
    /// `--sig_before`: signature before crypto on transmit (default after).
    pub sig_before: bool,
    /// `--aes_block_size` as perftest keeps it (a `uint16_t`; 0 when not given).
    pub block_size_arg: u16,
    /// `--data_enc_keys_number` (default 1).
    pub keys_number: u16,
    /// `--kek_path`.
    pub kek_path: Option<String>,
    /// `--credentials_path`.
    pub credentials_path: Option<String>,
    /// `--data_enc_key_app_path`.
    pub app_path: Option<String>,
}

impl Default for AesXts {
    fn default() -> Self {
        AesXts {
            enabled: false,
            encrypt_on_tx: false,
            sig_before: false,
            block_size_arg: 0,
            keys_number: 1,
            kek_path: None,
            credentials_path: None,
            app_path: None,
        }
    }
}

impl AesXts {
    /// `enum mlx5dv_block_size` of the block size: perftest maps 520, 4048, 4096 and 4160 and
    /// silently takes 512 for anything else (the default included).
    pub fn block_index(&self) -> usize {
        match self.block_size_arg {
            520 => 1,
            4048 => 2,
            4096 => 3,
            4160 => 4,
            _ => 0,
        }
    }

    /// The data-unit size in bytes (the header's ` Block Size` value).
    pub fn block_size(&self) -> u32 {
        BLOCK_SIZES[self.block_index()]
    }

    /// The set-up for `--aes_xts` (`None` without it). `verb_encrypts`: the tool's verb is one of
    /// perftest's encrypted paths.
    pub fn engine_setup(&self, verb_encrypts: bool) -> Option<CryptoSetup> {
        if !self.enabled {
            return None;
        }
        let mut tweak = [0u8; 16];
        for (i, t) in tweak.iter_mut().enumerate() {
            *t = i as u8;
        }
        Some(CryptoSetup {
            attr: CryptoAttr {
                encrypt_on_tx: self.encrypt_on_tx,
                signature_before_crypto_on_tx: self.sig_before,
                initial_tweak: tweak,
                keytag: [0; 8],
                data_unit_size: self.block_size(),
            },
            keys: self.keys_number,
            app_path: self.app_path.clone().unwrap_or_default(),
            kek_path: self.kek_path.clone().unwrap_or_default(),
            encrypted_posts: verb_encrypts,
        })
    }
}

/// perftest's `DC_KEY`: the access key every DCT is created with and every DCI send presents.
pub const DC_KEY: u64 = 0xffee_ddcc;
/// perftest's `DEF_INLINE_DC`: the latency tools' default inline size on DC.
pub const DEF_INLINE_DC: u32 = 150;
