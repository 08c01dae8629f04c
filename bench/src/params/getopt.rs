//! A small `getopt_long`-compatible scanner with perftest's option table.
//!
//! Conventions reproduced from GNU getopt_long as perftest calls it (no leading `+`/`-`/`:` in the
//! short-option string, POSIXLY_CORRECT unset):
//! * argv is permuted: options may come after the positional host name;
//! * `--` ends option processing; a lone `-` is a positional;
//! * short options cluster (`-bN`); an option that takes an argument consumes the rest of its
//!   cluster (`-s1024`) or else the next word (`-s 1024`), even if that word starts with `-`;
//! * long options take `--name=value` or `--name value`; unambiguous prefixes are accepted, and a
//!   prefix matching several spellings of the *same* option is not ambiguous;
//! * `--flag=value` for a flag is an error.

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
    GpuWithArg, // use_cuda, use_cuda_bus_id, cuda_mem_type, use_musa, use_musa_bus_id, use_rocm,
    // use_neuron, use_hl, use_mlu, use_opencl, opencl_platform_id, use_ib_dm_dmabuf, gpu_touch
    GpuFlag, // use_cuda_dmabuf, use_cuda_pcie_mapping, use_data_direct, use_musa_dmabuf, ...
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
    ("use_cuda", Opt::GpuWithArg, true),
    ("use_cuda_bus_id", Opt::GpuWithArg, true),
    ("use_cuda_dmabuf", Opt::GpuFlag, false),
    ("use_cuda_pcie_mapping", Opt::GpuFlag, false),
    ("use_data_direct", Opt::GpuFlag, false),
    ("cuda_mem_type", Opt::GpuWithArg, true),
    ("use_musa", Opt::GpuWithArg, true),
    ("use_musa_bus_id", Opt::GpuWithArg, true),
    ("use_musa_dmabuf", Opt::GpuFlag, false),
    ("use_musa_pcie_mapping", Opt::GpuFlag, false),
    ("use_rocm", Opt::GpuWithArg, true),
    ("use_rocm_dmabuf", Opt::GpuFlag, false),
    ("use_neuron", Opt::GpuWithArg, true),
    ("use_neuron_dmabuf", Opt::GpuFlag, false),
    ("use_hl", Opt::GpuWithArg, true),
    ("use_mlu", Opt::GpuWithArg, true),
    ("use_mlu_dmabuf", Opt::GpuFlag, false),
    ("use_opencl", Opt::GpuWithArg, true),
    ("opencl_platform_id", Opt::GpuWithArg, true),
    ("use_ib_dm_dmabuf", Opt::GpuWithArg, true),
    ("gpu_touch", Opt::GpuWithArg, true),
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

/// One recognised option occurrence.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Found {
    pub opt: Opt,
    /// How the user wrote it, for messages: `-s` or `--size` (the full long name, even when a
    /// prefix was typed).
    pub spelling: String,
    /// The key for duplicate detection: the short letter if the option has one, else the option
    /// (aliases such as `--source_ip`/`--bind_source_ip` count as one option).
    pub dup_key: String,
    pub arg: Option<String>,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum ScanError {
    /// `-G`, `--bogus`
    Unknown(String),
    /// `--re` matches several options
    Ambiguous(String, Vec<String>),
    /// `-s` at the end of argv
    MissingArgument(String),
    /// `--all=3`
    UnexpectedArgument(String),
}

pub(crate) struct Scanned {
    pub options: Vec<Found>,
    pub positionals: Vec<String>,
}

fn short_of(opt: Opt) -> Option<char> {
    SHORT.iter().find(|(_, o, _)| *o == opt).map(|(c, _, _)| *c)
}

/// Scan argv (without argv[0]) the way getopt_long does. On an error, the options found before
/// it are returned with it (getopt reports problems in order, so `-h` before a bad option wins).
pub(crate) fn scan(args: &[String]) -> (Scanned, Option<ScanError>) {
    let mut options = Vec::new();
    let mut positionals = Vec::new();
    let err = scan_into(args, &mut options, &mut positionals).err();
    (
        Scanned {
            options,
            positionals,
        },
        err,
    )
}

fn scan_into(
    args: &[String],
    options: &mut Vec<Found>,
    positionals: &mut Vec<String>,
) -> Result<(), ScanError> {
    let mut i = 0;
    while i < args.len() {
        let a = &args[i];
        i += 1;
        if a == "--" {
            positionals.extend(args[i..].iter().cloned());
            break;
        }
        if let Some(body) = a.strip_prefix("--") {
            let (name, inline) = match body.find('=') {
                Some(eq) => (&body[..eq], Some(body[eq + 1..].to_string())),
                None => (body, None),
            };
            let (lname, opt, has_arg) = lookup_long(name)?;
            let spelling = format!("--{lname}");
            let arg = if has_arg {
                match inline {
                    Some(v) => Some(v),
                    None => {
                        if i < args.len() {
                            i += 1;
                            Some(args[i - 1].clone())
                        } else {
                            return Err(ScanError::MissingArgument(spelling));
                        }
                    }
                }
            } else {
                if inline.is_some() {
                    return Err(ScanError::UnexpectedArgument(spelling));
                }
                None
            };
            let dup_key = match (short_of(opt), opt) {
                (Some(c), _) => format!("-{c}"),
                (
                    None,
                    Opt::RawLongWithArg
                    | Opt::RawLongFlag
                    | Opt::GpuWithArg
                    | Opt::GpuFlag
                    | Opt::VendorWithArg
                    | Opt::VendorFlag,
                ) => lname.to_string(),
                (None, _) => format!("{opt:?}"),
            };
            options.push(Found {
                opt,
                spelling,
                dup_key,
                arg,
            });
            continue;
        }
        if a.len() > 1 && a.starts_with('-') {
            let chars: Vec<char> = a[1..].chars().collect();
            let mut k = 0;
            while k < chars.len() {
                let c = chars[k];
                k += 1;
                let Some(&(_, opt, has_arg)) = SHORT.iter().find(|(sc, _, _)| *sc == c) else {
                    return Err(ScanError::Unknown(format!("-{c}")));
                };
                let spelling = format!("-{c}");
                let arg = if has_arg {
                    if k < chars.len() {
                        let rest: String = chars[k..].iter().collect();
                        k = chars.len();
                        Some(rest)
                    } else if i < args.len() {
                        i += 1;
                        Some(args[i - 1].clone())
                    } else {
                        return Err(ScanError::MissingArgument(spelling));
                    }
                } else {
                    None
                };
                options.push(Found {
                    opt,
                    dup_key: spelling.clone(),
                    spelling,
                    arg,
                });
            }
            continue;
        }
        positionals.push(a.clone());
    }
    Ok(())
}

/// Long options that only rperftest has.
const OWN_OPTIONS: [Opt; 3] = [Opt::Loopback, Opt::Adopt, Opt::PerftestVersion];

fn lookup_long(name: &str) -> Result<(&'static str, Opt, bool), ScanError> {
    if name.is_empty() {
        return Err(ScanError::Unknown("--".into()));
    }
    if let Some(&(n, o, h)) = LONG.iter().find(|(n, _, _)| *n == name) {
        return Ok((n, o, h));
    }
    let mut cands: Vec<&(&str, Opt, bool)> = LONG
        .iter()
        .filter(|(n, _, _)| n.starts_with(name))
        .collect();
    // rperftest's own options never make a perftest prefix ambiguous (`--perf` stays
    // `--perform_warm_up`, as in perftest, although `--perftest-version` exists).
    if cands.iter().any(|(_, o, _)| !OWN_OPTIONS.contains(o)) {
        cands.retain(|(_, o, _)| !OWN_OPTIONS.contains(o));
    }
    match cands.first() {
        None => Err(ScanError::Unknown(format!("--{name}"))),
        Some(&&(n, o, h)) => {
            if cands.iter().all(|(_, o2, h2)| *o2 == o && *h2 == h) {
                Ok((n, o, h))
            } else {
                Err(ScanError::Ambiguous(
                    format!("--{name}"),
                    cands.iter().map(|(n, _, _)| format!("--{n}")).collect(),
                ))
            }
        }
    }
}
