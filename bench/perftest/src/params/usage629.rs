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
//! it with the captures in `bench/perftest/tests/fixtures/perftest-6.29/help/`.

use super::usage_shared::{help_to_port, latency_gap_to_output, post_list_to_hop_limit, sl_to_counters, Help};
use super::usage_shared::{DC_AES, GBITS_NOTE, OUT_JSON, RATE_LIMITER, WARM_UP};
use super::{TestKind, Tool, Verb};
use crate::oob::msg::DEFAULT_PORT;

const SYM: &str = " (SYMMETRIC)";

/// perftest 6.29's usage text for `tool`, with `prog` in the two "Usage:" lines.
pub fn usage629(tool: Tool, prog: &str) -> String {
    let verb = tool.verb();
    let bw = tool.kind() == TestKind::Bw;
    let lat = !bw;
    let send = matches!(verb, Verb::Send | Verb::SendImm);
    let write = matches!(verb, Verb::Write | Verb::WriteImm);
    let read_like = matches!(verb, Verb::Read | Verb::Atomic);
    let mut h = Help::new(prog, 7000);
    h.line("");
    h.line("Note: Some options must match on both server and client for consistent behavior (marked 'SYMMETRIC').");
    h.line("");
    h.line("Options:");
    if verb == Verb::Atomic {
        h.line(&format!("  -A, --atomic_type=<type>  type of atomic operation from {{CMP_AND_SWAP,FETCH_AND_ADD}} (default FETCH_AND_ADD){SYM}"));
    } else {
        h.line(&format!("  -a, --all  Run sizes from 2 till 2^23{SYM}"));
    }
    if bw {
        h.line(&format!("  -b, --bidirectional  Measure bidirectional bandwidth (default unidirectional){SYM}"));
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
    h.line(&format!("  -c, --connection=<{conns}>  Connection type {conns} (default RC){SYM}"));
    h.lines(DC_AES);
    if lat {
        h.line("  -C, --report-cycles  report times in cpu cycle units (default microseconds)");
    }
    h.line("  -d, --ib-dev=<dev>  Use IB device <dev> (default first device found)");
    h.line(&format!("  -D, --duration  Run test for a customized period of seconds.{SYM}"));
    if !write {
        h.line("  -e, --events  Sleep on CQ events (default poll)");
        h.line("  -X, --vector=<completion vector>  Set <completion vector> used for events");
    }
    h.line(&format!("  -f, --margin  measure results within margins. (default=2sec){SYM}"));
    h.line("  -F, --CPU-freq  Do not show a warning even if cpufreq_ondemand module is loaded, and cpu-freq is not on max.");
    if send {
        h.line(&format!("  -g, --mcg  Send messages to multicast group with 1 QP attached to it.{SYM}"));
        h.line("         When there is no multicast gid specified, a default IPv6 typed gid will be used.");
    }
    help_to_port(&mut h, lat);
    if !read_like {
        h.line("  -I, --inline_size=<size>  Max size of message to be sent in inline");
    }
    post_list_to_hop_limit(&mut h, bw);
    h.line(&format!("  -m, --mtu=<mtu>  MTU size : 256 - 4096 (default port mtu){SYM}"));
    if send {
        h.line("  -M, --MGID=<multicast_gid>  In multicast, uses <multicast_gid> as the group MGID.");
        if bw {
            h.line("      --connectionless  Open a connectionless server instance for multicast traffic.");
        }
    }
    h.line(&format!("  -n, --iters=<iters>  Number of exchanges (at least 5, default {}){SYM}", tool.default_iters()));
    if bw {
        h.line("  -N, --noPeak Cancel peak-bw calculation (default with peak up to iters=20000)");
    }
    if read_like {
        h.line("  -o, --outs=<num>  num of outstanding read/atom(default max of device)");
    }
    if bw {
        h.line(&format!("  -O, --dualport  Run test in dual-port mode.{SYM}"));
    }
    h.line(&format!("  -p, --port=<port>  Listen on/connect to port <port> (default {DEFAULT_PORT}){SYM}"));
    if bw {
        h.line(&format!("  -q, --qp=<num of qp's>  Num of qp's(default 1){SYM}"));
        h.line("  -Q, --cq-mod  Generate Cqe only after <--cq-mod> completion");
    }
    if send {
        h.line("  -r, --rx-depth=<dep>  Rx queue size (default 512). If using srq, rx-depth controls max-wr size of the srq");
    }
    h.line("  -R, --rdma_cm  Connect QPs with rdma_cm and run test on those QPs");
    if verb != Verb::Atomic {
        h.line(&format!("  -s, --size=<size>  Size of message to exchange (default {}){SYM}", if lat { 2 } else { 65536 }));
    }
    sl_to_counters(&mut h, bw);
    h.line("  -x, --gid-index=<index>  Test uses GID with GID index");
    if bw {
        h.line("  -y, --limit_msgrate=<value>  Set verifier limit for Msg Rate");
        h.line("      --disable_dynamic_polling  Disable dynamic CQE polling adaptation (default enabled)");
        h.line("      --data_validation  Enable data validation (tx_depth must be same on both sides)");
        h.line("                          In DURATION mode, bytes_validated = duration/(duration-2*margin) * iters * size");
        h.line("      --data_validation_debug  Enable verbose debug output for data validation");
    }
    h.line(&format!("  -z, --comm_rdma_cm  Communicate with rdma_cm module to exchange data - use regular QPs{SYM}"));
    h.lines(OUT_JSON);
    h.line("      --cqe_poll  Number of CQEs polled per iteration ");
    h.line("      --pin_cores=<cpu_list> Set CPU affinity. Accepts: single (0), list (0, 1, 2), range (0-3), or mixed (0-3,8,12-15).");
    h.line("      --dlid  Set a Destination LID instead of getting it from the other side.");
    h.line("      --dont_xchg_versions  Do not exchange versions and MTU with other side ");
    h.line("      --force-link=<value>  Force the link(s) to a specific type: IB or Ethernet.");
    if send {
        h.line("      --use-srq  Use a Shared Receive Queue. --rx-depth controls max-wr size of the SRQ ");
    }
    h.line("      --no_lock  No lock in IO, including post send, post recv, post srq recv and poll cq ");
    h.line("      --ipv6  Use IPv6 GID. Default is IPv4");
    h.line("      --ipv6-addr (SYMMETRIC) Use IPv6 address for parameters negotiation. Default is IPv4");
    h.line("      --bind_source_ip  Source IP of the interface used for connection establishment. By default taken from routing table.");
    h.line(" --ipv6-addr flag must be used when specifying an IPv6 source IP.");
    latency_gap_to_output(&mut h, bw);
    if !(write && lat) {
        h.line("      --payload_file_path=<payload_txt_file_path> Set the payload by passing a txt file containing a pattern in the next form(little endian): '0xaaaaaaaa,0xbbbbbbbb,...' .");
    }
    h.lines(WARM_UP);
    if bw {
        h.line("      --report-both  Report RX & TX results separately on Bidirectional BW tests");
        h.line(&format!("      --report_gbits  Report Max/Average BW of test in Gbit/sec (instead of MiB/sec){SYM}"));
        h.lines(GBITS_NOTE);
        h.line(&format!("      --reversed  Reverse traffic direction - Server send to client{SYM}"));
        h.line(&format!("      --run_infinitely  Run test forever, print results every <duration> seconds{SYM}"));
    }
    h.line("      --retry_count=<value>  Set retry count value in rdma_cm mode");
    h.line("      --tclass=<value>  Set the Traffic Class in GRH (if GRH is in use)");
    h.line("      --flow_label=<fl0,fl1,fl2,...>  Set the flow_label in GRH for each qp in roundrobin method(if GRH is in use)");
    h.line("      --use_hugepages  Use Hugepages instead of contig, memalign allocations.");
    if write || verb == Verb::Read {
        h.line("      --use-null-mr  Allocate a null memory region with ibv_alloc_null_mr.");
    }
    if bw {
        h.lines(RATE_LIMITER);
    }
    if write {
        h.line(&format!("      --write_with_imm  Use write-with-immediate verb instead of write{SYM}"));
    }
    if send {
        h.line("      --send_with_imm  Use send-with-immediate verb instead of send");
    }
    h.line("");
    h.finish()
}
