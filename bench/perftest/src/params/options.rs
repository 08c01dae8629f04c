//! Every option in one place: its spelling (the [`Opt`] variant, its short letter in [`SHORT`],
//! its names in [`LONG`]) and what it does to the record ([`apply`]: its argument checked as
//! perftest checks it — ranges, keywords, the tools that refuse it — and the value stored). The
//! scanner that reads argv is `getopt.rs`, handed the tables as [`TABLE`].

use super::error::unsupported;
use super::getopt::{invalid, Found, Table};
use super::gpu::{self, GpuOpt};
use super::state::State;
use bench_core::cparse::strtol0;

use super::{aes, conflict, narrow, ParamError, Params};
use super::{AtomicType, Connection, LinkType, Output, RateLimitType, RateUnits, ReportFormat, TestKind, TestMethod};
use super::{TestType, Verb};

/// Every option perftest's parser knows, plus our aliases and additions.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub(crate) enum Opt {
    // short options with an argument
    LimitBw,        // -w
    LimitMsgrate,   // -y
    Port,           // -p
    IbDev,          // -d
    IbPort,         // -i
    Mtu,            // -m
    Size,           // -s
    Iters,          // -n
    TxDepth,        // -t
    QpTimeout,      // -u
    Sl,             // -S
    GidIndex,       // -x
    Connection,     // -c
    Qp,             // -q
    InlineSize,     // -I
    Outs,           // -o
    Mgid,           // -M
    RxDepth,        // -r
    CqMod,          // -Q
    AtomicType,     // -A
    PostList,       // -l
    Duration,       // -D
    Margin,         // -f
    Tos,            // -T
    HopLimit,       // -L
    Vector,         // -X
    ReportCounters, // -W
    // short flags
    All,             // -a
    CpuFreq,         // -F
    Events,          // -e
    Mcg,             // -g
    CommRdmaCm,      // -z
    RdmaCm,          // -R
    Help,            // -h
    Bidirectional,   // -b
    NoPeak,          // -N
    Version,         // -V
    ReportCycles,    // -C
    ReportHistogram, // -H
    ReportUnsorted,  // -U
    DualPort,        // -O
    // raw-Ethernet short options (accepted and ignored by the ib_* tools, as in perftest)
    RawSourceMac,  // -B
    RawDestMac,    // -E
    RawDestIp,     // -J
    RawSourceIp,   // -j
    RawDestPort,   // -K
    RawSourcePort, // -k
    RawEthertype,  // -Y (long only: --ethertype)
    RawServer,     // -Z
    RawClient,     // -P
    RawMacFwd,     // -v
    // long-only options
    UseRss,
    ForceLink,
    RawLongWithArg, // remote_mac, local_mac, remote_ip, local_ip, remote_port, local_port, flows,
    // flows_burst, reply_every, vlan_pcp
    RawLongFlag, // tcp, promiscuous, sniffer, raw_mcast, vlan_en, raw_ipv6
    RunInfinitely,
    ReportGbits,
    UseSrq,
    NoLock,
    UseNullMr,
    ReportBoth,
    Reversed,
    PkeyIndex,
    InlineRecv,
    BurstSize,
    TypicalPktSize,
    RateLimit,
    RateLimitType,
    RateUnits,
    Output,
    CpuUtil,
    OutJson,
    OutJsonFile,
    LatencyGap,
    FlowLabel,
    RetryCount,
    DontXchgVersions,
    PayloadFilePath,
    // GPU memory (params::gpu)
    UseCuda,
    UseCudaBusId,
    UseCudaDmabuf,
    UseRocm,
    UseRocmDmabuf,
    GpuTouch,
    GpuWithArg, // refused: cuda_mem_type, use_musa, use_musa_bus_id, use_neuron, use_hl, use_mlu,
    // use_opencl, opencl_platform_id, use_ib_dm_dmabuf
    GpuFlag, // refused: use_cuda_pcie_mapping, use_data_direct, use_musa_dmabuf, ...
    Mmap,
    MmapOffset,
    Ipv6,
    Ipv6Addr,
    ReportPerPort,
    Odp,
    UseHugepages,
    UseOldPostSend,
    MrPerQp,
    Dlid,
    Tclass,
    WaitDestroy,
    PerformWarmUp,
    RecvPostList,
    AesXts,
    EncryptOnTx,
    SigBefore,
    AesBlockSize,
    KekPath,
    CredentialsPath,
    DataEncKeysNumber,
    DataEncKeyAppPath,
    LogDciStreams,
    LogActiveDciStreams,
    DisablePcieRelaxed,
    UseOoo,
    VendorWithArg, // congest_type, tph_mem, cpu_id, ph
    VendorFlag,    // unsolicited_write, sig_offload
    BindSourceIp,
    WriteWithImm,
    SendWithImm,
    NoEnhancedReorder,
    Connectionless,
    CqePoll,
    DisableDynamicPolling,
    DataValidation,
    DataValidationDebug,
    PinCores,
    NumaNode,
    DisableNuma,
    // rperftest's own
    Loopback,
    Adopt,
    Plot,
    Series,
    PerftestVersion,
}

/// Short options: (char, option, takes an argument). Same set as perftest's
/// `"w:y:p:d:i:m:s:n:t:u:S:x:c:q:I:o:M:r:Q:A:l:D:f:B:T:L:E:J:j:K:k:X:W:aFegzRvhbNVCHUOZP"`.
pub(crate) const SHORT: &[(char, Opt, bool)] = &[
    ('w', Opt::LimitBw, true),
    ('y', Opt::LimitMsgrate, true),
    ('p', Opt::Port, true),
    ('d', Opt::IbDev, true),
    ('i', Opt::IbPort, true),
    ('m', Opt::Mtu, true),
    ('s', Opt::Size, true),
    ('n', Opt::Iters, true),
    ('t', Opt::TxDepth, true),
    ('u', Opt::QpTimeout, true),
    ('S', Opt::Sl, true),
    ('x', Opt::GidIndex, true),
    ('c', Opt::Connection, true),
    ('q', Opt::Qp, true),
    ('I', Opt::InlineSize, true),
    ('o', Opt::Outs, true),
    ('M', Opt::Mgid, true),
    ('r', Opt::RxDepth, true),
    ('Q', Opt::CqMod, true),
    ('A', Opt::AtomicType, true),
    ('l', Opt::PostList, true),
    ('D', Opt::Duration, true),
    ('f', Opt::Margin, true),
    ('B', Opt::RawSourceMac, true),
    ('T', Opt::Tos, true),
    ('L', Opt::HopLimit, true),
    ('E', Opt::RawDestMac, true),
    ('J', Opt::RawDestIp, true),
    ('j', Opt::RawSourceIp, true),
    ('K', Opt::RawDestPort, true),
    ('k', Opt::RawSourcePort, true),
    ('X', Opt::Vector, true),
    ('W', Opt::ReportCounters, true),
    ('a', Opt::All, false),
    ('F', Opt::CpuFreq, false),
    ('e', Opt::Events, false),
    ('g', Opt::Mcg, false),
    ('z', Opt::CommRdmaCm, false),
    ('R', Opt::RdmaCm, false),
    ('v', Opt::RawMacFwd, false),
    ('h', Opt::Help, false),
    ('b', Opt::Bidirectional, false),
    ('N', Opt::NoPeak, false),
    ('V', Opt::Version, false),
    ('C', Opt::ReportCycles, false),
    ('H', Opt::ReportHistogram, false),
    ('U', Opt::ReportUnsorted, false),
    ('O', Opt::DualPort, false),
    ('Z', Opt::RawServer, false),
    ('P', Opt::RawClient, false),
];

/// Long options: (name, option, takes an argument). perftest 6.06 and 6.29 names, plus aliases:
/// `com_rdma_cm` (the spelling 6.06's help prints; 6.06 itself only knows `comm_rdma_cm`),
/// `report-histogram` (the spelling the help prints; perftest only knows `report-histogrm`),
/// `source_ip` as the 6.06 name of `bind_source_ip`, and our `loopback`.
pub(crate) const LONG: &[(&str, Opt, bool)] = &[
    ("port", Opt::Port, true),
    ("ib-dev", Opt::IbDev, true),
    ("ib-port", Opt::IbPort, true),
    ("mtu", Opt::Mtu, true),
    ("size", Opt::Size, true),
    ("iters", Opt::Iters, true),
    ("tx-depth", Opt::TxDepth, true),
    ("qp-timeout", Opt::QpTimeout, true),
    ("sl", Opt::Sl, true),
    ("gid-index", Opt::GidIndex, true),
    ("all", Opt::All, false),
    ("CPU-freq", Opt::CpuFreq, false),
    ("connection", Opt::Connection, true),
    ("qp", Opt::Qp, true),
    ("events", Opt::Events, false),
    ("vector", Opt::Vector, true),
    ("inline_size", Opt::InlineSize, true),
    ("outs", Opt::Outs, true),
    ("mcg", Opt::Mcg, false),
    ("comm_rdma_cm", Opt::CommRdmaCm, false),
    ("com_rdma_cm", Opt::CommRdmaCm, false),
    ("rdma_cm", Opt::RdmaCm, false),
    ("tos", Opt::Tos, true),
    ("hop_limit", Opt::HopLimit, true),
    ("help", Opt::Help, false),
    ("MGID", Opt::Mgid, true),
    ("rx-depth", Opt::RxDepth, true),
    ("bidirectional", Opt::Bidirectional, false),
    ("cq-mod", Opt::CqMod, true),
    ("noPeak", Opt::NoPeak, false),
    ("version", Opt::Version, false),
    ("report-cycles", Opt::ReportCycles, false),
    ("report-histogrm", Opt::ReportHistogram, false),
    ("report-histogram", Opt::ReportHistogram, false),
    ("report-unsorted", Opt::ReportUnsorted, false),
    ("atomic_type", Opt::AtomicType, true),
    ("dualport", Opt::DualPort, false),
    ("post_list", Opt::PostList, true),
    ("duration", Opt::Duration, true),
    ("margin", Opt::Margin, true),
    ("source_mac", Opt::RawSourceMac, true),
    ("dest_mac", Opt::RawDestMac, true),
    ("dest_ip", Opt::RawDestIp, true),
    ("source_ip", Opt::BindSourceIp, true),
    ("dest_port", Opt::RawDestPort, true),
    ("source_port", Opt::RawSourcePort, true),
    ("ethertype", Opt::RawEthertype, true),
    ("limit_bw", Opt::LimitBw, true),
    ("limit_msgrate", Opt::LimitMsgrate, true),
    ("server", Opt::RawServer, false),
    ("client", Opt::RawClient, false),
    ("mac_fwd", Opt::RawMacFwd, false),
    ("use_rss", Opt::UseRss, false),
    ("report-counters", Opt::ReportCounters, true),
    ("force-link", Opt::ForceLink, true),
    ("remote_mac", Opt::RawLongWithArg, true),
    ("local_mac", Opt::RawLongWithArg, true),
    ("remote_ip", Opt::RawLongWithArg, true),
    ("local_ip", Opt::RawLongWithArg, true),
    ("remote_port", Opt::RawLongWithArg, true),
    ("local_port", Opt::RawLongWithArg, true),
    ("run_infinitely", Opt::RunInfinitely, false),
    ("report_gbits", Opt::ReportGbits, false),
    ("use-srq", Opt::UseSrq, false),
    ("no_lock", Opt::NoLock, false),
    ("use-null-mr", Opt::UseNullMr, false),
    ("report-both", Opt::ReportBoth, false),
    ("reversed", Opt::Reversed, false),
    ("pkey_index", Opt::PkeyIndex, true),
    ("inline_recv", Opt::InlineRecv, true),
    ("tcp", Opt::RawLongFlag, false),
    ("burst_size", Opt::BurstSize, true),
    ("typical_pkt_size", Opt::TypicalPktSize, true),
    ("rate_limit", Opt::RateLimit, true),
    ("rate_limit_type", Opt::RateLimitType, true),
    ("rate_units", Opt::RateUnits, true),
    ("output", Opt::Output, true),
    ("cpu_util", Opt::CpuUtil, false),
    ("out_json", Opt::OutJson, false),
    ("out_json_file", Opt::OutJsonFile, true),
    ("latency_gap", Opt::LatencyGap, true),
    ("flow_label", Opt::FlowLabel, true),
    ("retry_count", Opt::RetryCount, true),
    ("dont_xchg_versions", Opt::DontXchgVersions, false),
    ("payload_file_path", Opt::PayloadFilePath, true),
    ("use_cuda", Opt::UseCuda, true),
    ("use_cuda_bus_id", Opt::UseCudaBusId, true),
    ("use_cuda_dmabuf", Opt::UseCudaDmabuf, false),
    ("use_cuda_pcie_mapping", Opt::GpuFlag, false),
    ("use_data_direct", Opt::GpuFlag, false),
    ("cuda_mem_type", Opt::GpuWithArg, true),
    ("use_musa", Opt::GpuWithArg, true),
    ("use_musa_bus_id", Opt::GpuWithArg, true),
    ("use_musa_dmabuf", Opt::GpuFlag, false),
    ("use_musa_pcie_mapping", Opt::GpuFlag, false),
    ("use_rocm", Opt::UseRocm, true),
    ("use_rocm_dmabuf", Opt::UseRocmDmabuf, false),
    ("use_neuron", Opt::GpuWithArg, true),
    ("use_neuron_dmabuf", Opt::GpuFlag, false),
    ("use_hl", Opt::GpuWithArg, true),
    ("use_mlu", Opt::GpuWithArg, true),
    ("use_mlu_dmabuf", Opt::GpuFlag, false),
    ("use_opencl", Opt::GpuWithArg, true),
    ("opencl_platform_id", Opt::GpuWithArg, true),
    ("use_ib_dm_dmabuf", Opt::GpuWithArg, true),
    ("gpu_touch", Opt::GpuTouch, true),
    ("mmap", Opt::Mmap, true),
    ("mmap-offset", Opt::MmapOffset, true),
    ("ipv6", Opt::Ipv6, false),
    ("ipv6-addr", Opt::Ipv6Addr, false),
    ("raw_ipv6", Opt::RawLongFlag, false),
    ("report-per-port", Opt::ReportPerPort, false),
    ("odp", Opt::Odp, false),
    ("use_hugepages", Opt::UseHugepages, false),
    ("use_old_post_send", Opt::UseOldPostSend, false),
    ("promiscuous", Opt::RawLongFlag, false),
    ("sniffer", Opt::RawLongFlag, false),
    ("raw_mcast", Opt::RawLongFlag, false),
    ("mr_per_qp", Opt::MrPerQp, false),
    ("dlid", Opt::Dlid, true),
    ("tclass", Opt::Tclass, true),
    ("wait_destroy", Opt::WaitDestroy, true),
    ("flows", Opt::RawLongWithArg, true),
    ("flows_burst", Opt::RawLongWithArg, true),
    ("reply_every", Opt::RawLongWithArg, true),
    ("perform_warm_up", Opt::PerformWarmUp, false),
    ("vlan_en", Opt::RawLongFlag, false),
    ("vlan_pcp", Opt::RawLongWithArg, true),
    ("recv_post_list", Opt::RecvPostList, true),
    ("aes_xts", Opt::AesXts, false),
    ("encrypt_on_tx", Opt::EncryptOnTx, false),
    ("sig_before", Opt::SigBefore, false),
    ("aes_block_size", Opt::AesBlockSize, true),
    ("kek_path", Opt::KekPath, true),
    ("credentials_path", Opt::CredentialsPath, true),
    ("data_enc_keys_number", Opt::DataEncKeysNumber, true),
    ("data_enc_key_app_path", Opt::DataEncKeyAppPath, true),
    ("log_dci_streams", Opt::LogDciStreams, true),
    ("log_active_dci_streams", Opt::LogActiveDciStreams, true),
    ("disable_pcie_relaxed", Opt::DisablePcieRelaxed, false),
    ("use_ooo", Opt::UseOoo, false),
    ("congest_type", Opt::VendorWithArg, true),
    ("bind_source_ip", Opt::BindSourceIp, true),
    ("write_with_imm", Opt::WriteWithImm, false),
    ("send_with_imm", Opt::SendWithImm, false),
    ("no_enhanced_reorder", Opt::NoEnhancedReorder, false),
    ("unsolicited_write", Opt::VendorFlag, false),
    ("connectionless", Opt::Connectionless, false),
    ("cqe_poll", Opt::CqePoll, true),
    ("tph_mem", Opt::VendorWithArg, true),
    ("cpu_id", Opt::VendorWithArg, true),
    ("ph", Opt::VendorWithArg, true),
    ("disable_dynamic_polling", Opt::DisableDynamicPolling, false),
    ("sig_offload", Opt::VendorFlag, false),
    ("data_validation", Opt::DataValidation, false),
    ("data_validation_debug", Opt::DataValidationDebug, false),
    ("pin_cores", Opt::PinCores, true),
    ("numa_node", Opt::NumaNode, true),
    ("disable_numa", Opt::DisableNuma, false),
    ("loopback", Opt::Loopback, false),
    ("adopt", Opt::Adopt, false),
    ("plot", Opt::Plot, true),
    ("series", Opt::Series, true),
    ("perftest-version", Opt::PerftestVersion, true),
];

/// Long options that only rperftest has. They never make a perftest prefix ambiguous (`--perf`
/// stays `--perform_warm_up`, as in perftest, although `--perftest-version` exists).
const OWN_OPTIONS: [Opt; 3] = [Opt::Loopback, Opt::Adopt, Opt::PerftestVersion];

/// What the scanner reads argv against.
pub(super) const TABLE: Table<Opt> = Table {
    short: SHORT,
    long: LONG,
    prefix_yields: &OWN_OPTIONS,
};

/// The key for duplicate detection (perftest ≥ 6.1x: ` Duplicated argument: <key>`): the short
/// letter if the option has one, else the option, so aliases such as `--source_ip` and
/// `--bind_source_ip` count as one; the options that stand for a family of long names
/// (raw-Ethernet, GPU, vendor) go by the name given.
pub(super) fn dup_key(f: &Found<Opt>) -> String {
    if let Some(&(c, _, _)) = SHORT.iter().find(|(_, o, _)| *o == f.opt) {
        return format!("-{c}");
    }
    match f.opt {
        Opt::RawLongWithArg | Opt::RawLongFlag | Opt::GpuWithArg | Opt::GpuFlag | Opt::VendorWithArg | Opt::VendorFlag => {
            f.spelling.strip_prefix("--").unwrap_or(&f.spelling).to_string()
        }
        // perftest's key is the long name, which is what the GPU options have.
        Opt::UseCuda | Opt::UseCudaBusId | Opt::UseCudaDmabuf | Opt::UseRocm | Opt::UseRocmDmabuf | Opt::GpuTouch => {
            f.spelling.strip_prefix("--").unwrap_or(&f.spelling).to_string()
        }
        opt => format!("{opt:?}"),
    }
}

pub(super) fn arg(f: &Found<Opt>) -> &str {
    f.arg.as_deref().unwrap_or("")
}

/// An integer argument in `min..=max`; `name` is perftest's name for it.
fn int_in(f: &Found<Opt>, name: &str, min: i64, max: i64) -> Result<i64, ParamError> {
    let a = arg(f);
    match strtol0(a) {
        None => Err(invalid(
            f,
            format!("{name} argument '{a}' should be an integer"),
        )),
        Some(Ok(v)) if v >= min && v <= max => Ok(v),
        Some(_) => Err(invalid(
            f,
            format!("{name} should be between {min} and {max}"),
        )),
    }
}

fn float_nonneg(f: &Found<Opt>, what: &str) -> Result<f64, ParamError> {
    let a = arg(f).trim();
    match a.parse::<f64>() {
        Ok(v) if v.is_finite() && v >= 0.0 => Ok(v),
        Ok(_) => Err(invalid(
            f,
            format!("Invalid {what} (must be a non-negative number)"),
        )),
        Err(_) => Err(invalid(
            f,
            format!("{what} argument '{a}' should be a number"),
        )),
    }
}

const I32_MAX: i64 = i32::MAX as i64;

pub(super) fn apply(p: &mut Params, st: &mut State, f: &Found<Opt>) -> Result<(), ParamError> {
    let verb = p.tool.verb();
    let kind = p.tool.kind();
    match f.opt {
        Opt::Port => p.conn.port = narrow(int_in(f, "Port", 1, 65535)?),
        Opt::IbDev => p.dev.ib_dev = Some(arg(f).to_string()),
        Opt::IbPort => p.dev.ib_port = narrow(int_in(f, "IB Port", 1, 255)?),
        Opt::Mtu => p.dev.mtu = Some(narrow(int_in(f, "MTU", 0, I32_MAX)?)),
        Opt::Size => {
            let a = arg(f);
            let (num, factor) = if let Some(n) = a.strip_suffix('K') {
                (n, 1024)
            } else if let Some(n) = a.strip_suffix('M') {
                (n, 1024 * 1024)
            } else {
                (a, 1)
            };
            let v = match strtol0(num) {
                None => return Err(invalid(f, format!("Message Size argument '{a}' should be an integer (optionally followed by K or M)"))),
                Some(Ok(v)) => v.checked_mul(factor),
                Some(Err(())) => None,
            };
            match v {
                Some(v) if (1..=2_147_483_647).contains(&v) => {
                    p.size = narrow(v);
                    p.size_requested = true;
                }
                _ => return Err(invalid(f, "Message Size should be between 1 and 2147483647".into())),
            }
        }
        Opt::Iters => p.iters = narrow(int_in(f, "Iteration num", 5, 4_294_967_296)?),
        Opt::TxDepth => p.tx_depth = narrow(int_in(f, "Tx depth", 1, 15000)?),
        Opt::Tos => p.conn.tos = Some(narrow(int_in(f, "TOS", 0, 255)?)),
        Opt::HopLimit => p.conn.hop_limit = narrow(int_in(f, "Hop Limit", 0, 255)?),
        Opt::QpTimeout => p.dev.qp_timeout = narrow(int_in(f, "QP Timeout", 0, 255)?),
        Opt::Sl => p.dev.sl = narrow(int_in(f, "Service Level", 0, 15)?),
        Opt::GidIndex => p.dev.gid_index = Some(narrow(int_in(f, "Gid index", 0, 64)?)),
        Opt::Connection => {
            let c = match arg(f) {
                "RC" => Connection::Rc,
                "UC" => Connection::Uc,
                "UD" => Connection::Ud,
                "XRC" => Connection::Xrc,
                "DC" => Connection::Dc,
                "SRD" => Connection::Srd,
                "RawEth" => {
                    return Err(unsupported(&f.spelling, "RawEth connections are only for the raw_ethernet_* tools"))
                }
                other => {
                    return Err(invalid(
                        f,
                        format!("Invalid Connection type '{other}'. Please choose from {{RC,UC,UD,XRC,DC,SRD}}"),
                    ))
                }
            };
            if c == Connection::Uc && matches!(verb, Verb::Read | Verb::Atomic) {
                return Err(conflict(&f.spelling, "UC connection not possible in READ/ATOMIC verbs"));
            }
            if c == Connection::Ud && verb != Verb::Send {
                return Err(conflict(&f.spelling, "UD connection only possible in SEND verb"));
            }
            if c == Connection::Srd && !matches!(verb, Verb::Send | Verb::Read | Verb::Write) {
                return Err(conflict(&f.spelling, "SRD connection only possible in SEND/READ/WRITE verbs"));
            }
            p.connection = c;
        }
        Opt::Qp => {
            let v = int_in(f, "num of Qps", 1, 16384)?;
            if kind != TestKind::Bw && v > 1 {
                return Err(conflict(&f.spelling, "Multiple QPs only available on bw tests"));
            }
            p.num_qps = narrow(v);
        }
        Opt::InlineSize => {
            let v = int_in(f, "Max inline", 0, 1024)?;
            if matches!(verb, Verb::Read | Verb::Atomic) {
                return Err(conflict(&f.spelling, "Inline feature not available on READ/Atomic verbs"));
            }
            p.inline_size = Some(narrow(v));
        }
        Opt::Outs => {
            let v = int_in(f, "Outstanding Reads", 0, 65535)?;
            if !matches!(verb, Verb::Read | Verb::Atomic) {
                return Err(conflict(&f.spelling, "Setting Outstanding reads only available on READ verb"));
            }
            // 0 means "device maximum", as in perftest.
            p.out_reads = if v == 0 { None } else { Some(narrow(v)) };
        }
        Opt::Mgid => p.mgid = Some(arg(f).to_string()),
        Opt::RxDepth => {
            let v = int_in(f, "Rx depth", 1, 16384)?;
            if !matches!(verb, Verb::Send | Verb::Write) && v > 1 {
                return Err(conflict(&f.spelling, "On RDMA verbs rx depth can be only 1"));
            }
            p.rx_depth = narrow(v);
        }
        Opt::CqMod => {
            p.cq_mod = narrow(int_in(f, "CQ moderation", 1, 1024)?);
            p.cq_mod_requested = true;
        }
        Opt::AtomicType => {
            if verb != Verb::Atomic {
                return Err(conflict(
                    &f.spelling,
                    "You are not running the atomic_lat/bw test! To change the atomic action type, you must run one of the atomic tests",
                ));
            }
            p.atomic_type = match arg(f) {
                "CMP_AND_SWAP" => AtomicType::CmpAndSwap,
                "FETCH_AND_ADD" => AtomicType::FetchAndAdd,
                other => {
                    return Err(invalid(
                        f,
                        format!("Invalid Atomic type '{other}'! please choose from {{CMP_AND_SWAP,FETCH_AND_ADD}}"),
                    ))
                }
            };
        }
        Opt::PostList => p.post_list = narrow(int_in(f, "Send Post List size", 1, I32_MAX)?),
        Opt::RecvPostList => p.recv_post_list = narrow(int_in(f, "Receive Post List size", 1, I32_MAX)?),
        Opt::Duration => {
            p.duration = narrow(int_in(f, "Duration period", 1, I32_MAX)?);
            p.test_type = TestType::Duration;
        }
        Opt::Margin => p.margin = Some(narrow(int_in(f, "Margin", 0, I32_MAX)?)),
        Opt::DualPort => {
            p.dev.ib_port = 1;
            p.dev.ib_port2 = 2;
            p.dev.dualport = true;
        }
        Opt::All => p.test_method = TestMethod::All,
        Opt::CpuFreq => p.report.cpu_freq_f = true,
        Opt::CommRdmaCm => p.conn.use_rdma_cm = true,
        Opt::RdmaCm => p.conn.work_rdma_cm = true,
        Opt::Events => {
            if verb == Verb::Write {
                return Err(conflict(&f.spelling, "Events feature not available on WRITE verb"));
            }
            p.use_event = true;
        }
        Opt::Vector => {
            if verb == Verb::Write {
                return Err(conflict(&f.spelling, "Events feature not available on WRITE verb"));
            }
            p.eq_num = Some(narrow(int_in(f, "EQN", 0, 2048)?));
        }
        Opt::Bidirectional => {
            if kind == TestKind::Lat {
                return Err(conflict(&f.spelling, "Bidirectional is only available in BW test"));
            }
            p.duplex = true;
        }
        Opt::NoPeak => {
            if kind == TestKind::Lat {
                return Err(conflict(&f.spelling, "NoPeak only valid for BW tests"));
            }
            p.no_peak = true;
        }
        Opt::ReportCycles => {
            if kind != TestKind::Lat {
                return Err(conflict(&f.spelling, "Available only on Latency tests"));
            }
            p.report.cycles = true;
        }
        Opt::Mcg => {
            if verb != Verb::Send {
                return Err(conflict(&f.spelling, "MultiCast feature only available on SEND verb"));
            }
            p.use_mcg = true;
        }
        Opt::ReportHistogram => {
            if kind == TestKind::Bw {
                return Err(conflict(&f.spelling, "Available only on Latency tests"));
            }
            p.report.histogram = true;
        }
        Opt::ReportUnsorted => {
            if kind == TestKind::Bw {
                return Err(conflict(&f.spelling, "Available only on Latency tests"));
            }
            p.report.unsorted = true;
        }
        Opt::LimitBw => p.report.limit_bw = Some(float_nonneg(f, "Minimum BW Limit")?),
        Opt::LimitMsgrate => p.report.limit_msgrate = Some(float_nonneg(f, "Minimum msgRate Limit")?),
        Opt::ReportCounters => {
            let list: Vec<String> =
                arg(f).split(',').filter(|s| !s.is_empty()).map(str::to_string).collect();
            if list.is_empty() {
                return Err(invalid(f, "Failed to parse the performance counter list".into()));
            }
            p.report.counters = list;
        }
        // raw Ethernet: accepted and ignored by the ib_* tools, as in perftest
        Opt::RawSourceMac
        | Opt::RawDestMac
        | Opt::RawDestIp
        | Opt::RawSourceIp
        | Opt::RawDestPort
        | Opt::RawSourcePort
        | Opt::RawEthertype
        | Opt::RawServer
        | Opt::RawClient
        | Opt::RawMacFwd
        | Opt::RawLongWithArg
        | Opt::RawLongFlag => {}
        Opt::UseRss => st.use_rss = true,
        Opt::ForceLink => {
            p.dev.force_link = Some(match arg(f) {
                "IB" => LinkType::Ib,
                "Ethernet" | "ETHERNET" | "ethernet" => LinkType::Ethernet,
                other => {
                    return Err(invalid(f, format!("Invalid link layer value '{other}': should be IB or Ethernet")))
                }
            })
        }
        Opt::RunInfinitely => st.run_infinitely = true,
        Opt::ReportGbits => p.report.fmt = ReportFormat::Gbs,
        Opt::UseSrq => p.use_srq = true,
        Opt::NoLock => p.buf.no_lock = true,
        Opt::UseNullMr => p.buf.use_null_mr = true,
        Opt::ReportBoth => p.report.both = true,
        Opt::Reversed => p.reversed = true,
        Opt::PkeyIndex => p.dev.pkey_index = narrow(int_in(f, "Pkey index", 0, 65535)?),
        Opt::InlineRecv => p.inline_recv_size = narrow(int_in(f, "Inline Receive size", 0, I32_MAX)?),
        Opt::BurstSize => p.rate.burst_size = narrow(int_in(f, "Burst size", 0, I32_MAX)?),
        Opt::TypicalPktSize => p.rate.typical_pkt_size = narrow(int_in(f, "Typical pkt size", 0, 0xFFFF)?),
        Opt::RateLimit => {
            let a = arg(f).trim();
            match a.parse::<f64>() {
                Ok(v) if v.is_finite() && v > 0.0 => p.rate.limit = v,
                _ => return Err(invalid(f, format!("Rate limit '{a}' must be a positive number"))),
            }
            st.rate_limit_given = true;
            st.rate_limit_text = Some(a.to_string());
            if p.rate.limit_type == RateLimitType::Disabled {
                p.rate.limit_type = RateLimitType::Hw;
            }
        }
        Opt::RateUnits => {
            p.rate.units = match arg(f) {
                "M" => RateUnits::MegaBytes,
                "g" => RateUnits::GigaBits,
                "p" => RateUnits::Packets,
                other => return Err(invalid(f, format!("Invalid rate limit units '{other}'. Please use M, g or p"))),
            }
        }
        Opt::RateLimitType => {
            st.rate_limit_type_given = true;
            p.rate.limit_type_explicit = true;
            p.rate.limit_type = match arg(f) {
                "SW" => RateLimitType::Sw,
                "HW" => RateLimitType::Hw,
                "PP" => RateLimitType::Pp,
                other => {
                    return Err(invalid(f, format!("Invalid rate limit type '{other}'. Please use HW, SW or PP")))
                }
            }
        }
        Opt::Output => {
            p.report.output = match arg(f) {
                "bandwidth" => Output::Bandwidth,
                "message_rate" => Output::MessageRate,
                "latency" => Output::Latency,
                other => {
                    return Err(invalid(
                        f,
                        format!("Invalid verbosity level output '{other}'. Please use bandwidth, latency, message_rate"),
                    ))
                }
            }
        }
        Opt::CpuUtil => p.report.cpu_util = true,
        Opt::OutJson => p.report.out_json = true,
        Opt::OutJsonFile => {
            if arg(f).is_empty() {
                return Err(invalid(f, "JSON file name is empty".into()));
            }
            p.report.out_json_file = arg(f).to_string();
        }
        Opt::LatencyGap => p.buf.latency_gap = narrow(int_in(f, "Latency gap time", 0, I32_MAX)?),
        Opt::FlowLabel => {
            let mut v = Vec::new();
            for part in arg(f).split(',') {
                match strtol0(part) {
                    Some(Ok(x)) if (0..=0xFFFFF).contains(&x) => v.push(narrow(x)),
                    _ => {
                        return Err(invalid(
                            f,
                            format!("flow label '{part}' should be an integer between 0 and 1048575"),
                        ))
                    }
                }
            }
            p.dev.flow_labels = v;
        }
        Opt::RetryCount => p.conn.retry_count = narrow(int_in(f, "Retry Count", 0, 7)?),
        Opt::DontXchgVersions => p.conn.dont_xchg_versions = true,
        Opt::PayloadFilePath => p.buf.payload_file_path = Some(arg(f).to_string()),
        Opt::UseCuda => gpu::apply(p, GpuOpt::UseCuda, f)?,
        Opt::UseCudaBusId => gpu::apply(p, GpuOpt::UseCudaBusId, f)?,
        Opt::UseCudaDmabuf => gpu::apply(p, GpuOpt::UseCudaDmabuf, f)?,
        Opt::UseRocm => gpu::apply(p, GpuOpt::UseRocm, f)?,
        Opt::UseRocmDmabuf => gpu::apply(p, GpuOpt::UseRocmDmabuf, f)?,
        Opt::GpuTouch => gpu::apply(p, GpuOpt::GpuTouch, f)?,
        Opt::GpuWithArg | Opt::GpuFlag => {
            st.gpu.get_or_insert_with(|| f.spelling.clone());
        }
        Opt::Mmap => {
            gpu::check_single_memory_type(p, GpuOpt::Mmap, f)?;
            p.buf.mmap_file = Some(arg(f).to_string())
        }
        Opt::MmapOffset => p.buf.mmap_offset = narrow::<u64>(int_in(f, "mmap offset", 0, i64::MAX)?),
        Opt::Ipv6 => p.dev.ipv6 = true,
        Opt::Ipv6Addr => p.dev.ipv6_addr = true,
        Opt::ReportPerPort => p.report.per_port = true,
        Opt::Odp => p.buf.odp = true,
        Opt::UseHugepages => p.buf.use_hugepages = true,
        Opt::UseOldPostSend => p.buf.use_old_post_send = true,
        Opt::MrPerQp => p.buf.mr_per_qp = true,
        Opt::Dlid => p.dev.dlid = Some(narrow(int_in(f, "dlid", 0, 65535)?)),
        Opt::Tclass => p.dev.tclass = narrow(int_in(f, "traffic class", 0, 255)?),
        Opt::WaitDestroy => p.buf.wait_destroy = narrow(int_in(f, "wait_destroy", 0, I32_MAX)?),
        Opt::PerformWarmUp => p.buf.perform_warm_up = true,
        Opt::AesXts => p.aes.enabled = true,
        Opt::EncryptOnTx => p.aes.encrypt_on_tx = true,
        Opt::SigBefore => p.aes.sig_before = true,
        Opt::AesBlockSize => p.aes.block_size_arg = aes::u16_arg(f, "aes_block_size")?,
        Opt::DataEncKeysNumber => p.aes.keys_number = aes::u16_arg(f, "data_enc_keys_number")?,
        Opt::KekPath => p.aes.kek_path = Some(arg(f).to_string()),
        Opt::CredentialsPath => p.aes.credentials_path = Some(arg(f).to_string()),
        Opt::DataEncKeyAppPath => p.aes.app_path = Some(arg(f).to_string()),
        Opt::LogDciStreams => p.log_dci_streams = narrow(int_in(f, "log_dci_streams", 0, 65535)?),
        Opt::LogActiveDciStreams => {
            p.log_active_dci_streams = narrow(int_in(f, "log_active_dci_streams", 0, 65535)?);
            st.dci_active_given = true;
        }
        Opt::DisablePcieRelaxed => p.buf.disable_pcie_relaxed = true,
        Opt::UseOoo => st.use_ooo = true,
        Opt::VendorWithArg | Opt::VendorFlag => {
            st.vendor.get_or_insert_with(|| f.spelling.clone());
        }
        Opt::BindSourceIp => {
            if arg(f).is_empty() {
                return Err(invalid(f, "source IP is empty".into()));
            }
            p.dev.source_ip = Some(arg(f).to_string());
        }
        Opt::WriteWithImm => {
            if verb != Verb::Write {
                return Err(conflict(&f.spelling, "Write_with_imm can only be used with write_lat and write_bw tests"));
            }
            st.write_with_imm = true;
            p.verb = Verb::WriteImm;
        }
        Opt::SendWithImm => {
            if verb != Verb::Send {
                return Err(conflict(&f.spelling, "Send_with_imm can only be used with send_lat and send_bw tests"));
            }
            st.send_with_imm = true;
            p.verb = Verb::SendImm;
        }
        Opt::NoEnhancedReorder => p.buf.no_enhanced_reorder = true,
        Opt::Connectionless => p.connectionless = true,
        Opt::CqePoll => p.buf.cqe_poll = Some(narrow(int_in(f, "CQE Poll", 1, 65535)?)),
        Opt::DisableDynamicPolling => p.buf.disable_dynamic_polling = true,
        Opt::DataValidation | Opt::DataValidationDebug => {
            st.data_validation.get_or_insert_with(|| f.spelling.clone());
        }
        Opt::PinCores => {
            let a = arg(f);
            let ok = !a.is_empty()
                && a.split(',').all(|r| {
                    let mut it = r.splitn(2, '-');
                    let lo = it.next().and_then(|x| x.parse::<u32>().ok());
                    let hi = it.next().map(|x| x.parse::<u32>().ok());
                    match (lo, hi) {
                        (Some(_), None) => true,
                        (Some(l), Some(Some(h))) => l <= h,
                        _ => false,
                    }
                });
            if !ok {
                return Err(invalid(f, format!("Invalid CPU list '{a}' (expected e.g. 0,2-5)")));
            }
            p.buf.pin_cores = Some(a.to_string());
        }
        Opt::NumaNode => p.buf.numa_node = Some(narrow(int_in(f, "NUMA node", 0, I32_MAX)?)),
        Opt::DisableNuma => p.buf.disable_numa = true,
        Opt::Loopback => p.loopback = true,
        Opt::Adopt => p.adopt = true,
        Opt::Plot | Opt::Series => {
            let (what, slot) = if f.opt == Opt::Plot { ("--plot", &mut p.report.plot_file) } else { ("--series", &mut p.report.series_file) };
            if arg(f).is_empty() {
                return Err(invalid(f, format!("{what} needs a file name, e.g. {what} run.{}", if what == "--plot" { "svg" } else { "jsonl" })));
            }
            *slot = Some(arg(f).to_string());
        }
        Opt::Help | Opt::Version | Opt::PerftestVersion => {}
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::super::getopt::scan;
    use super::*;

    fn keys(a: &[&str]) -> Vec<String> {
        let a: Vec<String> = a.iter().map(|s| s.to_string()).collect();
        let (s, err) = scan(&TABLE, &a);
        assert_eq!(err, None);
        s.options.iter().map(dup_key).collect()
    }

    #[test]
    fn duplicate_keys_are_the_short_letter_else_the_option() {
        assert_eq!(keys(&["-s", "1", "--size=2", "--com_rdma_cm", "-z"]), ["-s", "-s", "-z", "-z"]);
        assert_eq!(
            keys(&["--source_ip=a", "--bind_source_ip=b", "--use-srq", "--ethertype", "x"]),
            ["BindSourceIp", "BindSourceIp", "UseSrq", "RawEthertype"]
        );
        // A family of long names under one Opt: each name is an option of its own.
        assert_eq!(
            keys(&["--remote_mac", "a", "--local_mac", "b", "--use_hl=0", "--ph", "1", "--tcp"]),
            ["remote_mac", "local_mac", "use_hl", "ph", "tcp"]
        );
        assert_eq!(
            keys(&["--use_cuda=0", "--use_cuda_dmabuf", "--gpu_touch=once"]),
            ["use_cuda", "use_cuda_dmabuf", "gpu_touch"]
        );
    }

    #[test]
    fn own_options_do_not_make_perftest_prefixes_ambiguous() {
        let a: Vec<String> = ["--perf", "--loop"].iter().map(|s| s.to_string()).collect();
        let opts: Vec<Opt> = scan(&TABLE, &a).0.options.iter().map(|f| f.opt).collect();
        assert_eq!(opts, [Opt::PerformWarmUp, Opt::Loopback]);
    }
}
