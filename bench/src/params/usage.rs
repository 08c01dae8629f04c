//! The `-h` text, byte for byte as perftest 6.06 prints it (Debian 12 build: DCS, AES-XTS, ODP and
//! PCIe-relaxed-ordering support compiled in; no CUDA/ROCm; no out-of-order attribute).
//!
//! The text is assembled from the same per-tool conditions perftest uses (verb, test kind), so
//! each tool's help lists exactly the options that tool documents. Golden tests compare it with
//! the captures in `bench/tests/fixtures/help/`. rperftest's own options are *not* part of this
//! text; see [`extensions_help`].

use super::{TestKind, Tool, Verb};

/// perftest's usage text for `tool`, with `prog` in the two "Usage:" lines (perftest prints its
/// argv[0] there; [`super::parse`] passes the tool name).
pub fn usage(tool: Tool, prog: &str) -> String {
    let verb = tool.verb();
    let bw = tool.kind() == TestKind::Bw;
    let lat = !bw;
    let mut s = String::with_capacity(6000);
    let mut p = |line: &str| {
        s.push_str(line);
        s.push('\n');
    };

    p("Usage:");
    p(&format!(
        "  {prog}            start a server and wait for connection"
    ));
    p(&format!("  {prog} <host>     connect to server at <host>"));
    p("");
    p("Options:");
    if verb != Verb::Atomic {
        p("  -a, --all  Run sizes from 2 till 2^23");
    }
    if verb == Verb::Atomic {
        p("  -A, --atomic_type=<type>  type of atomic operation from {CMP_AND_SWAP,FETCH_AND_ADD} (default FETCH_AND_ADD)");
    }
    if bw {
        p("  -b, --bidirectional  Measure bidirectional bandwidth (default unidirectional)");
    }
    match verb {
        Verb::Send | Verb::SendImm => p("  -c, --connection=<RC/XRC/UC/UD/DC/SRD>  Connection type RC/XRC/UC/UD/DC/SRD (default RC)"),
        Verb::Write | Verb::WriteImm => p("  -c, --connection=<RC/XRC/UC/DC>  Connection type RC/XRC/UC/DC (default RC)"),
        Verb::Read | Verb::Atomic => p("  -c, --connection=<RC/XRC/DC>  Connection type RC/XRC/DC (default RC)"),
    }
    p("      --log_dci_streams=<log_num_dci_stream_channels> (default 0)  Run DC initiator as DCS instead of DCI with <log_num dci_stream_channels>");
    p("      --log_active_dci_streams=<log_num_active_dci_stream_channels> (default log_num_dci_stream_channels)");
    p("\t  --aes_xts Runs traffic with AES_XTS feature (encryption)");
    p("\t  --encrypt_on_tx Runs traffic with encryption on tx (default decryption on tx)");
    p("\t  --sig_before Puts signature on data before encrypting it (default after)");
    p("      --aes_block_size=<512,520,4048,4096,4160> (default 512)");
    p("\t  --data_enc_keys_number=<number of data encryption keys> (default 1)");
    p("\t  --kek_path path to the key encryption key file");
    p("\t  --credentials_path path to the credentials file");
    p("\t  --data_enc_key_app_path path to the data encryption key app");
    if lat {
        p("  -C, --report-cycles  report times in cpu cycle units (default microseconds)");
    }
    p("  -d, --ib-dev=<dev>  Use IB device <dev> (default first device found)");
    p("  -D, --duration  Run test for a customized period of seconds.");
    if verb != Verb::Write {
        p("  -e, --events  Sleep on CQ events (default poll)");
        p("  -X, --vector=<completion vector>  Set <completion vector> used for events");
    }
    p("  -f, --margin  measure results within margins. (default=2sec)");
    p("  -F, --CPU-freq  Do not show a warning even if cpufreq_ondemand module is loaded, and cpu-freq is not on max.");
    if verb == Verb::Send {
        p("  -g, --mcg  Send messages to multicast group with 1 QP attached to it.");
    }
    p("  -h, --help  Show this help screen.");
    if lat {
        p("  -H, --report-histogram  Print out all results (default print summary only)");
    }
    p("  -i, --ib-port=<port>  Use port <port> of IB device (default 1)");
    if verb != Verb::Read && verb != Verb::Atomic {
        p("  -I, --inline_size=<size>  Max size of message to be sent in inline");
    }
    if bw {
        p("  -l, --post_list=<list size>");
        p(" Post list of send WQEs of <list size> size (instead of single post)");
        p("      --recv_post_list=<list size> Post list of receive WQEs of <list size> size (instead of single post)");
    }
    p("  -L, --hop_limit=<hop_limit>  Set hop limit value (ttl for IPv4 RawEth QP). Values 0-255 (default 64)");
    p("  -m, --mtu=<mtu>  MTU size : 256 - 4096 (default port mtu)");
    if verb == Verb::Send {
        p("  -M, --MGID=<multicast_gid>  In multicast, uses <multicast_gid> as the group MGID.");
    }
    p(&format!(
        "  -n, --iters=<iters>  Number of exchanges (at least 5, default {})",
        tool.default_iters()
    ));
    if bw {
        p("  -N, --noPeak Cancel peak-bw calculation (default with peak up to iters=20000)");
    }
    if verb == Verb::Read || verb == Verb::Atomic {
        p("  -o, --outs=<num>  num of outstanding read/atom(default max of device)");
    }
    if bw {
        p("  -O, --dualport  Run test in dual-port mode.");
    }
    p("  -p, --port=<port>  Listen on/connect to port <port> (default 18515)");
    if bw {
        p("  -q, --qp=<num of qp's>  Num of qp's(default 1)");
        p("  -Q, --cq-mod  Generate Cqe only after <--cq-mod> completion");
    }
    if verb == Verb::Send {
        p("  -r, --rx-depth=<dep>  Rx queue size (default 512). If using srq, rx-depth controls max-wr size of the srq");
    }
    p("  -R, --rdma_cm  Connect QPs with rdma_cm and run test on those QPs");
    if verb != Verb::Atomic {
        p(&format!(
            "  -s, --size=<size>  Size of message to exchange (default {})",
            if lat { 2 } else { 65536 }
        ));
    }
    p("  -S, --sl=<sl>  SL (default 0)");
    if bw {
        p("  -t, --tx-depth=<dep>  Size of tx queue (default 128)");
    }
    p("  -T, --tos=<tos value>  Set <tos_value> to RDMA-CM QPs. available only with -R flag. values 0-256 (default off)");
    p("  -u, --qp-timeout=<timeout>  QP timeout, timeout value is 4 usec * 2 ^(timeout), default 14");
    if lat {
        p("  -U, --report-unsorted  (implies -H) print out unsorted results (default sorted)");
    }
    p("  -V, --version  Display version number");
    if bw {
        p("  -w, --limit_bw=<value>  Set verifier limit for bandwidth");
    }
    p("  -W, --report-counters=<list of counter names>  Report performance counter change (example: \"counters/port_xmit_data,hw_counters/out_of_buffer\")");
    p("  -x, --gid-index=<index>  Test uses GID with GID index (Default : IB - no gid . ETH - 0)");
    if bw {
        p("  -y, --limit_msgrate=<value>  Set verifier limit for Msg Rate");
    }
    p("  -z, --com_rdma_cm  Communicate with rdma_cm module to exchange data - use regular QPs");
    p("");
    p("      --out_json  Save the report in a json file");
    p("      --out_json_file=<file>  Name of the report json file. (Default: perftest_out.json in the working directory) ");
    p("      --cpu_util  Show CPU Utilization in report, valid only in Duration mode ");
    p("      --dlid  Set a Destination LID instead of getting it from the other side.");
    p("      --dont_xchg_versions  Do not exchange versions and MTU with other side ");
    p("      --force-link=<value>  Force the link(s) to a specific type: IB or Ethernet.");
    if verb != Verb::Write {
        p("      --inline_recv=<size>  Max size of message to be sent in inline receive");
    }
    if verb == Verb::Send {
        p("      --use-srq  Use a Shared Receive Queue. --rx-depth controls max-wr size of the SRQ ");
    }
    p("      --ipv6  Use IPv6 GID. Default is IPv4");
    p("      --source_ip  Source IP of the interface used for connection establishment. By default taken from routing table.");
    if lat {
        p("      --latency_gap=<delay_time>  delay time between each post send");
    }
    p("      --mmap=file  Use an mmap'd file as the buffer for testing P2P transfers.");
    p("      --mmap-offset=<offset>  Use an mmap'd file as the buffer for testing P2P transfers.");
    if bw {
        p("      --mr_per_qp  Create memory region for each qp.");
    }
    p("      --odp  Use On Demand Paging instead of Memory Registration.");
    p("      --output=<units> Set verbosity output level: bandwidth , message_rate, latency ");
    p(" Latency measurement is Average calculation ");
    p("      --use_old_post_send Use old post send flow (ibv_post_send).");
    p("      --perform_warm_up Perform some iterations before start measuring in order to warming-up memory cache, valid in Atomic, Read and Write BW tests");
    p("      --pkey_index=<pkey index> PKey index to use for QP");
    if bw {
        p("      --report-both  Report RX & TX results separately on Bidirectional BW tests");
        p("      --report_gbits  Report Max/Average BW of test in Gbit/sec (instead of MiB/sec)");
        p("        Note: MiB=2^20 byte, while Gb=10^9 bits. Use these formulas for conversion:");
        p("        Factor=10^9/(2^20*8)=119.2; MiB=Gb_result * factor; Gb=MiB_result / factor");
        p("      --report-per-port  Report BW data on both ports when running Dualport and Duration mode");
        p("      --reversed  Reverse traffic direction - Server send to client");
        p("      --run_infinitely  Run test forever, print results every <duration> seconds");
    }
    p("      --retry_count=<value>  Set retry count value in rdma_cm mode");
    p("      --tclass=<value>  Set the Traffic Class in GRH (if GRH is in use)");
    p("      --use_hugepages  Use Hugepages instead of contig, memalign allocations.");
    if bw {
        p("      --wait_destroy=<seconds>  Wait <seconds> before destroying allocated resources (QP/CQ/PD/MR..)");
        p("      --disable_pcie_relaxed Disable PCIe relaxed ordering");
        p("");
        p(" Rate Limiter:");
        p("      --burst_size=<size> Set the amount of messages to send in a burst when using rate limiter");
        p("      --typical_pkt_size=<bytes> Set the size of packet to send in a burst. Only supports PP rate limiter");
        p("      --rate_limit=<rate> Set the maximum rate of sent packages. default unit is [Gbps]. use --rate_units to change that.");
        p("      --rate_units=<units> [Mgp] Set the units for rate limit to MiBps (M), Gbps (g) or pps (p). default is Gbps (g).");
        p("        Note (1): pps not supported with HW limit.");
        p("        Note (2): When using PP rate_units is forced to Kbps.");
        p("      --rate_limit_type=<type> [HW/SW/PP] Limit the QP's by HW, PP or by SW. Disabled by default. When rate_limit is not specified HW limit is Default.");
        p("        Note: in Latency under load test SW rate limit is forced");
    }
    p("");
    s
}

/// rperftest's own options and accepted newer-perftest spellings, kept out of the exact perftest
/// text that `-h` prints. The CLI may show this separately (e.g. `rperftest help`).
pub fn extensions_help() -> &'static str {
    "rperftest extensions (not printed by -h, which matches the chosen perftest byte for byte):\n\
     \x20     --perftest-version=<6.06|6.29>  Print what that perftest prints (-h, -V, header,\n\
     \x20                 units, notes); also RPERFTEST_PERFTEST_VERSION; default 6.29\n\
     \x20     --loopback  Run server and client in one process (no <host> argument)\n\
     \x20     --adopt     Server: run with an rperftest client's -s, -q, -n, -t, -m, -a and -D\n\
     \x20     --plot=<file.svg>  Draw the run: -a sweep against size, -H histogram and CDF,\n\
     \x20                 --run_infinitely bandwidth over time (see docs/plots.md)\n\
     \x20     --series=<file>  Write every result line as JSON Lines (for rperftest plot/compare;\n\
     \x20                 --out_json keeps only the last line, as perftest does)\n\
     Also accepted (perftest 6.29 spellings and options):\n\
     \x20     --comm_rdma_cm (= -z/--com_rdma_cm), --bind_source_ip (= --source_ip),\n\
     \x20     --report-histogrm (perftest's real long name for -H), --ipv6-addr, --write_with_imm,\n\
     \x20     --send_with_imm, --use-null-mr, --payload_file_path, --flow_label, --cqe_poll,\n\
     \x20     --disable_dynamic_polling, --no_lock, --no_enhanced_reorder, --pin_cores,\n\
     \x20     --connectionless\n"
}
