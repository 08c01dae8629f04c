//! The `-h` lines perftest 6.06 and 6.29 print alike, in the groups both texts keep together:
//! [`usage`](super::usage) and [`usage629`](super::usage629) build their own lines around them.
//! The conditions are the tools' (BW or latency, verb), passed in by the callers.

/// A help text being built, one line at a time.
pub(super) struct Help(String);

impl Help {
    /// The text's two "Usage:" lines with `prog`, after the "Usage:" title.
    pub(super) fn new(prog: &str, capacity: usize) -> Help {
        let mut h = Help(String::with_capacity(capacity));
        h.line("Usage:");
        h.line(&format!("  {prog}            start a server and wait for connection"));
        h.line(&format!("  {prog} <host>     connect to server at <host>"));
        h
    }
    pub(super) fn line(&mut self, line: &str) {
        self.0.push_str(line);
        self.0.push('\n');
    }
    pub(super) fn lines(&mut self, lines: &[&str]) {
        for l in lines {
            self.line(l);
        }
    }
    pub(super) fn finish(self) -> String {
        self.0
    }
}

/// After `-c`: the DC stream and AES-XTS options, every tool.
pub(super) const DC_AES: &[&str] = &[
    "      --log_dci_streams=<log_num_dci_stream_channels> (default 0)  Run DC initiator as DCS instead of DCI with <log_num dci_stream_channels>",
    "      --log_active_dci_streams=<log_num_active_dci_stream_channels> (default log_num_dci_stream_channels)",
    "\t  --aes_xts Runs traffic with AES_XTS feature (encryption)",
    "\t  --encrypt_on_tx Runs traffic with encryption on tx (default decryption on tx)",
    "\t  --sig_before Puts signature on data before encrypting it (default after)",
    "      --aes_block_size=<512,520,4048,4096,4160> (default 512)",
    "\t  --data_enc_keys_number=<number of data encryption keys> (default 1)",
    "\t  --kek_path path to the key encryption key file",
    "\t  --credentials_path path to the credentials file",
    "\t  --data_enc_key_app_path path to the data encryption key app",
];

/// `-h`, `-H` (latency tools) and `-i`.
pub(super) fn help_to_port(h: &mut Help, lat: bool) {
    h.line("  -h, --help  Show this help screen.");
    if lat {
        h.line("  -H, --report-histogram  Print out all results (default print summary only)");
    }
    h.line("  -i, --ib-port=<port>  Use port <port> of IB device (default 1)");
}

/// The post lists (BW tools) and `-L`.
pub(super) fn post_list_to_hop_limit(h: &mut Help, bw: bool) {
    if bw {
        h.line("  -l, --post_list=<list size>");
        h.line(" Post list of send WQEs of <list size> size (instead of single post)");
        h.line("      --recv_post_list=<list size> Post list of receive WQEs of <list size> size (instead of single post)");
    }
    h.line("  -L, --hop_limit=<hop_limit>  Set hop limit value (ttl for IPv4 RawEth QP). Values 0-255 (default 64)");
}

/// `-S` to `-W`, with the BW tools' `-t` and `-w` and the latency tools' `-U`.
pub(super) fn sl_to_counters(h: &mut Help, bw: bool) {
    h.line("  -S, --sl=<sl>  SL (default 0)");
    if bw {
        h.line("  -t, --tx-depth=<dep>  Size of tx queue (default 128)");
    }
    h.line("  -T, --tos=<tos value>  Set <tos_value> to RDMA-CM QPs. available only with -R flag. values 0-256 (default off)");
    h.line("  -u, --qp-timeout=<timeout>  QP timeout, timeout value is 4 usec * 2 ^(timeout), default 14");
    if !bw {
        h.line("  -U, --report-unsorted  (implies -H) print out unsorted results (default sorted)");
    }
    h.line("  -V, --version  Display version number");
    if bw {
        h.line("  -w, --limit_bw=<value>  Set verifier limit for bandwidth");
    }
    h.line("  -W, --report-counters=<list of counter names>  Report performance counter change (example: \"counters/port_xmit_data,hw_counters/out_of_buffer\")");
}

/// The JSON report options and `--cpu_util`, after the blank line that ends the short options.
pub(super) const OUT_JSON: &[&str] = &[
    "",
    "      --out_json  Save the report in a json file",
    "      --out_json_file=<file>  Name of the report json file. (Default: perftest_out.json in the working directory) ",
    "      --cpu_util  Show CPU Utilization in report, valid only in Duration mode ",
];

/// `--latency_gap` (latency tools) to `--output`: the buffer options.
pub(super) fn latency_gap_to_output(h: &mut Help, bw: bool) {
    if !bw {
        h.line("      --latency_gap=<delay_time>  delay time between each post send");
    }
    h.line("      --mmap=file  Use an mmap'd file as the buffer for testing P2P transfers.");
    h.line("      --mmap-offset=<offset>  Use an mmap'd file as the buffer for testing P2P transfers.");
    if bw {
        h.line("      --mr_per_qp  Create memory region for each qp.");
    }
    h.line("      --odp  Use On Demand Paging instead of Memory Registration.");
    h.line("      --output=<units> Set verbosity output level: bandwidth , message_rate, latency ");
}

/// `--output`'s second line, the post-send flow, warm-up and `--pkey_index`.
pub(super) const WARM_UP: &[&str] = &[
    " Latency measurement is Average calculation ",
    "      --use_old_post_send Use old post send flow (ibv_post_send).",
    "      --perform_warm_up Perform some iterations before start measuring in order to warming-up memory cache, valid in Atomic, Read and Write BW tests",
    "      --pkey_index=<pkey index> PKey index to use for QP",
];

/// The note under `--report_gbits`.
pub(super) const GBITS_NOTE: &[&str] = &[
    "        Note: MiB=2^20 byte, while Gb=10^9 bits. Use these formulas for conversion:",
    "        Factor=10^9/(2^20*8)=119.2; MiB=Gb_result * factor; Gb=MiB_result / factor",
    "      --report-per-port  Report BW data on both ports when running Dualport and Duration mode",
];

/// The BW tools' last block: resource teardown, PCIe ordering and the rate limiter.
pub(super) const RATE_LIMITER: &[&str] = &[
    "      --wait_destroy=<seconds>  Wait <seconds> before destroying allocated resources (QP/CQ/PD/MR..)",
    "      --disable_pcie_relaxed Disable PCIe relaxed ordering",
    "",
    " Rate Limiter:",
    "      --burst_size=<size> Set the amount of messages to send in a burst when using rate limiter",
    "      --typical_pkt_size=<bytes> Set the size of packet to send in a burst. Only supports PP rate limiter",
    "      --rate_limit=<rate> Set the maximum rate of sent packages. default unit is [Gbps]. use --rate_units to change that.",
    "      --rate_units=<units> [Mgp] Set the units for rate limit to MiBps (M), Gbps (g) or pps (p). default is Gbps (g).",
    "        Note (1): pps not supported with HW limit.",
    "        Note (2): When using PP rate_units is forced to Kbps.",
    "      --rate_limit_type=<type> [HW/SW/PP] Limit the QP's by HW, PP or by SW. Disabled by default. When rate_limit is not specified HW limit is Default.",
    "        Note: in Latency under load test SW rate limit is forced",
];
