//! The `-h` text of perftest 6.29 (upstream build on Debian 12 with rdma-core 44: DCS, AES-XTS,
//! ODP, PCIe relaxed ordering, thread domains; no CUDA/ROCm/MUSA, no libnuma), byte for byte.
//!
//! Assembled from the tools' verb and test kind, the way [`super::usage`] builds 6.06's. What
//! 6.29 changed against 6.06: a note on symmetric options after the usage lines and the
//! `(SYMMETRIC)` marks, `SRD` in `-c` (not for atomics), `-g`'s second line, the renamed
//! `--comm_rdma_cm` / `--bind_source_ip`, no `--inline_recv`, no default in `-x`, and the new
//! options (`--connectionless`, `--disable_dynamic_polling`, `--data_validation*`,
//! `--cqe_poll`, `--pin_cores`, `--no_lock`, `--ipv6-addr`, `--payload_file_path`,
//! `--flow_label`, `--use-null-mr`, `--write_with_imm`, `--send_with_imm`). Golden tests compare
//! it with the captures in `bench/tests/fixtures/perftest-6.29/help/`.

use super::{TestKind, Tool, Verb};

const SYM: &str = " (SYMMETRIC)";

/// perftest 6.29's usage text for `tool`, with `prog` in the two "Usage:" lines.
pub fn usage629(tool: Tool, prog: &str) -> String {
    let verb = tool.verb();
    let bw = tool.kind() == TestKind::Bw;
    let lat = !bw;
    let send = matches!(verb, Verb::Send | Verb::SendImm);
    let write = matches!(verb, Verb::Write | Verb::WriteImm);
    let read_like = matches!(verb, Verb::Read | Verb::Atomic);
    let mut s = String::with_capacity(7000);
    let mut p = |line: &str| {
        s.push_str(line);
        s.push('\n');
    };

    p("Usage:");
    p(&format!("  {prog}            start a server and wait for connection"));
    p(&format!("  {prog} <host>     connect to server at <host>"));
    p("");
    p("Note: Some options must match on both server and client for consistent behavior (marked 'SYMMETRIC').");
    p("");
    p("Options:");
    if verb == Verb::Atomic {
        p(&format!("  -A, --atomic_type=<type>  type of atomic operation from {{CMP_AND_SWAP,FETCH_AND_ADD}} (default FETCH_AND_ADD){SYM}"));
    } else {
        p(&format!("  -a, --all  Run sizes from 2 till 2^23{SYM}"));
    }
    if bw {
        p(&format!("  -b, --bidirectional  Measure bidirectional bandwidth (default unidirectional){SYM}"));
    }
    let conns = if send {
        "RC/XRC/UC/UD/DC/SRD"
    } else if write {
        "RC/XRC/UC/DC/SRD"
    } else if verb == Verb::Read {
        "RC/XRC/DC/SRD"
    } else {
        "RC/XRC/DC"
    };
    p(&format!("  -c, --connection=<{conns}>  Connection type {conns} (default RC){SYM}"));
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
    p(&format!("  -D, --duration  Run test for a customized period of seconds.{SYM}"));
    if !write {
        p("  -e, --events  Sleep on CQ events (default poll)");
        p("  -X, --vector=<completion vector>  Set <completion vector> used for events");
    }
    p(&format!("  -f, --margin  measure results within margins. (default=2sec){SYM}"));
    p("  -F, --CPU-freq  Do not show a warning even if cpufreq_ondemand module is loaded, and cpu-freq is not on max.");
    if send {
        p(&format!("  -g, --mcg  Send messages to multicast group with 1 QP attached to it.{SYM}"));
        p("         When there is no multicast gid specified, a default IPv6 typed gid will be used.");
    }
    p("  -h, --help  Show this help screen.");
    if lat {
        p("  -H, --report-histogram  Print out all results (default print summary only)");
    }
    p("  -i, --ib-port=<port>  Use port <port> of IB device (default 1)");
    if !read_like {
        p("  -I, --inline_size=<size>  Max size of message to be sent in inline");
    }
    if bw {
        p("  -l, --post_list=<list size>");
        p(" Post list of send WQEs of <list size> size (instead of single post)");
        p("      --recv_post_list=<list size> Post list of receive WQEs of <list size> size (instead of single post)");
    }
    p("  -L, --hop_limit=<hop_limit>  Set hop limit value (ttl for IPv4 RawEth QP). Values 0-255 (default 64)");
    p(&format!("  -m, --mtu=<mtu>  MTU size : 256 - 4096 (default port mtu){SYM}"));
    if send {
        p("  -M, --MGID=<multicast_gid>  In multicast, uses <multicast_gid> as the group MGID.");
        if bw {
            p("      --connectionless  Open a connectionless server instance for multicast traffic.");
        }
    }
    p(&format!("  -n, --iters=<iters>  Number of exchanges (at least 5, default {}){SYM}", tool.default_iters()));
    if bw {
        p("  -N, --noPeak Cancel peak-bw calculation (default with peak up to iters=20000)");
    }
    if read_like {
        p("  -o, --outs=<num>  num of outstanding read/atom(default max of device)");
    }
    if bw {
        p(&format!("  -O, --dualport  Run test in dual-port mode.{SYM}"));
    }
    p(&format!("  -p, --port=<port>  Listen on/connect to port <port> (default 18515){SYM}"));
    if bw {
        p(&format!("  -q, --qp=<num of qp's>  Num of qp's(default 1){SYM}"));
        p("  -Q, --cq-mod  Generate Cqe only after <--cq-mod> completion");
    }
    if send {
        p("  -r, --rx-depth=<dep>  Rx queue size (default 512). If using srq, rx-depth controls max-wr size of the srq");
    }
    p("  -R, --rdma_cm  Connect QPs with rdma_cm and run test on those QPs");
    if verb != Verb::Atomic {
        p(&format!("  -s, --size=<size>  Size of message to exchange (default {}){SYM}", if lat { 2 } else { 65536 }));
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
    p("  -x, --gid-index=<index>  Test uses GID with GID index");
    if bw {
        p("  -y, --limit_msgrate=<value>  Set verifier limit for Msg Rate");
        p("      --disable_dynamic_polling  Disable dynamic CQE polling adaptation (default enabled)");
        p("      --data_validation  Enable data validation (tx_depth must be same on both sides)");
        p("                          In DURATION mode, bytes_validated = duration/(duration-2*margin) * iters * size");
        p("      --data_validation_debug  Enable verbose debug output for data validation");
    }
    p(&format!("  -z, --comm_rdma_cm  Communicate with rdma_cm module to exchange data - use regular QPs{SYM}"));
    p("");
    p("      --out_json  Save the report in a json file");
    p("      --out_json_file=<file>  Name of the report json file. (Default: perftest_out.json in the working directory) ");
    p("      --cpu_util  Show CPU Utilization in report, valid only in Duration mode ");
    p("      --cqe_poll  Number of CQEs polled per iteration ");
    p("      --pin_cores=<cpu_list> Set CPU affinity. Accepts: single (0), list (0, 1, 2), range (0-3), or mixed (0-3,8,12-15).");
    p("      --dlid  Set a Destination LID instead of getting it from the other side.");
    p("      --dont_xchg_versions  Do not exchange versions and MTU with other side ");
    p("      --force-link=<value>  Force the link(s) to a specific type: IB or Ethernet.");
    if send {
        p("      --use-srq  Use a Shared Receive Queue. --rx-depth controls max-wr size of the SRQ ");
    }
    p("      --no_lock  No lock in IO, including post send, post recv, post srq recv and poll cq ");
    p("      --ipv6  Use IPv6 GID. Default is IPv4");
    p("      --ipv6-addr (SYMMETRIC) Use IPv6 address for parameters negotiation. Default is IPv4");
    p("      --bind_source_ip  Source IP of the interface used for connection establishment. By default taken from routing table.");
    p(" --ipv6-addr flag must be used when specifying an IPv6 source IP.");
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
    if !(write && lat) {
        p("      --payload_file_path=<payload_txt_file_path> Set the payload by passing a txt file containing a pattern in the next form(little endian): '0xaaaaaaaa,0xbbbbbbbb,...' .");
    }
    p(" Latency measurement is Average calculation ");
    p("      --use_old_post_send Use old post send flow (ibv_post_send).");
    p("      --perform_warm_up Perform some iterations before start measuring in order to warming-up memory cache, valid in Atomic, Read and Write BW tests");
    p("      --pkey_index=<pkey index> PKey index to use for QP");
    if bw {
        p("      --report-both  Report RX & TX results separately on Bidirectional BW tests");
        p(&format!("      --report_gbits  Report Max/Average BW of test in Gbit/sec (instead of MiB/sec){SYM}"));
        p("        Note: MiB=2^20 byte, while Gb=10^9 bits. Use these formulas for conversion:");
        p("        Factor=10^9/(2^20*8)=119.2; MiB=Gb_result * factor; Gb=MiB_result / factor");
        p("      --report-per-port  Report BW data on both ports when running Dualport and Duration mode");
        p(&format!("      --reversed  Reverse traffic direction - Server send to client{SYM}"));
        p(&format!("      --run_infinitely  Run test forever, print results every <duration> seconds{SYM}"));
    }
    p("      --retry_count=<value>  Set retry count value in rdma_cm mode");
    p("      --tclass=<value>  Set the Traffic Class in GRH (if GRH is in use)");
    p("      --flow_label=<fl0,fl1,fl2,...>  Set the flow_label in GRH for each qp in roundrobin method(if GRH is in use)");
    p("      --use_hugepages  Use Hugepages instead of contig, memalign allocations.");
    if write || verb == Verb::Read {
        p("      --use-null-mr  Allocate a null memory region with ibv_alloc_null_mr.");
    }
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
    if write {
        p(&format!("      --write_with_imm  Use write-with-immediate verb instead of write{SYM}"));
    }
    if send {
        p("      --send_with_imm  Use send-with-immediate verb instead of send");
    }
    p("");
    s
}
