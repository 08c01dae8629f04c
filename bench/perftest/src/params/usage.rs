//! The `-h` text, byte for byte as perftest 6.06 prints it (Debian 12 build: DCS, AES-XTS, ODP and
//! PCIe-relaxed-ordering support compiled in; no CUDA/ROCm; no out-of-order attribute).
//!
//! The text is assembled from the same per-tool conditions perftest uses (verb, test kind), so
//! each tool's help lists exactly the options that tool documents. Golden tests compare it with
//! the captures in `bench/perftest/tests/fixtures/help/`. rperftest's own options are *not* part of this
//! text; see [`extensions_help`].

use super::usage_shared::{help_to_port, latency_gap_to_output, post_list_to_hop_limit, sl_to_counters, Help};
use super::usage_shared::{DC_AES, GBITS_NOTE, OUT_JSON, RATE_LIMITER, WARM_UP};
use super::{TestKind, Tool, Verb};
use crate::oob::msg::DEFAULT_PORT;

/// perftest's usage text for `tool`, with `prog` in the two "Usage:" lines (perftest prints its
/// argv[0] there; [`super::parse`] passes the tool name).
pub fn usage(tool: Tool, prog: &str) -> String {
    let verb = tool.verb();
    let bw = tool.kind() == TestKind::Bw;
    let lat = !bw;
    let mut h = Help::new(prog, 6000);
    h.line("");
    h.line("Options:");
    if verb != Verb::Atomic {
        h.line("  -a, --all  Run sizes from 2 till 2^23");
    }
    if verb == Verb::Atomic {
        h.line("  -A, --atomic_type=<type>  type of atomic operation from {CMP_AND_SWAP,FETCH_AND_ADD} (default FETCH_AND_ADD)");
    }
    if bw {
        h.line("  -b, --bidirectional  Measure bidirectional bandwidth (default unidirectional)");
    }
    match verb {
        Verb::Send | Verb::SendImm => h.line("  -c, --connection=<RC/XRC/UC/UD/DC/SRD>  Connection type RC/XRC/UC/UD/DC/SRD (default RC)"),
        Verb::Write | Verb::WriteImm => h.line("  -c, --connection=<RC/XRC/UC/DC>  Connection type RC/XRC/UC/DC (default RC)"),
        Verb::Read | Verb::Atomic => h.line("  -c, --connection=<RC/XRC/DC>  Connection type RC/XRC/DC (default RC)"),
    }
    h.lines(DC_AES);
    if lat {
        h.line("  -C, --report-cycles  report times in cpu cycle units (default microseconds)");
    }
    h.line("  -d, --ib-dev=<dev>  Use IB device <dev> (default first device found)");
    h.line("  -D, --duration  Run test for a customized period of seconds.");
    if verb != Verb::Write {
        h.line("  -e, --events  Sleep on CQ events (default poll)");
        h.line("  -X, --vector=<completion vector>  Set <completion vector> used for events");
    }
    h.line("  -f, --margin  measure results within margins. (default=2sec)");
    h.line("  -F, --CPU-freq  Do not show a warning even if cpufreq_ondemand module is loaded, and cpu-freq is not on max.");
    if verb == Verb::Send {
        h.line("  -g, --mcg  Send messages to multicast group with 1 QP attached to it.");
    }
    help_to_port(&mut h, lat);
    if verb != Verb::Read && verb != Verb::Atomic {
        h.line("  -I, --inline_size=<size>  Max size of message to be sent in inline");
    }
    post_list_to_hop_limit(&mut h, bw);
    h.line("  -m, --mtu=<mtu>  MTU size : 256 - 4096 (default port mtu)");
    if verb == Verb::Send {
        h.line("  -M, --MGID=<multicast_gid>  In multicast, uses <multicast_gid> as the group MGID.");
    }
    h.line(&format!(
        "  -n, --iters=<iters>  Number of exchanges (at least 5, default {})",
        tool.default_iters()
    ));
    if bw {
        h.line("  -N, --noPeak Cancel peak-bw calculation (default with peak up to iters=20000)");
    }
    if verb == Verb::Read || verb == Verb::Atomic {
        h.line("  -o, --outs=<num>  num of outstanding read/atom(default max of device)");
    }
    if bw {
        h.line("  -O, --dualport  Run test in dual-port mode.");
    }
    h.line(&format!("  -p, --port=<port>  Listen on/connect to port <port> (default {DEFAULT_PORT})"));
    if bw {
        h.line("  -q, --qp=<num of qp's>  Num of qp's(default 1)");
        h.line("  -Q, --cq-mod  Generate Cqe only after <--cq-mod> completion");
    }
    if verb == Verb::Send {
        h.line("  -r, --rx-depth=<dep>  Rx queue size (default 512). If using srq, rx-depth controls max-wr size of the srq");
    }
    h.line("  -R, --rdma_cm  Connect QPs with rdma_cm and run test on those QPs");
    if verb != Verb::Atomic {
        h.line(&format!(
            "  -s, --size=<size>  Size of message to exchange (default {})",
            if lat { 2 } else { 65536 }
        ));
    }
    sl_to_counters(&mut h, bw);
    h.line("  -x, --gid-index=<index>  Test uses GID with GID index (Default : IB - no gid . ETH - 0)");
    if bw {
        h.line("  -y, --limit_msgrate=<value>  Set verifier limit for Msg Rate");
    }
    h.line("  -z, --com_rdma_cm  Communicate with rdma_cm module to exchange data - use regular QPs");
    h.lines(OUT_JSON);
    h.line("      --dlid  Set a Destination LID instead of getting it from the other side.");
    h.line("      --dont_xchg_versions  Do not exchange versions and MTU with other side ");
    h.line("      --force-link=<value>  Force the link(s) to a specific type: IB or Ethernet.");
    if verb != Verb::Write {
        h.line("      --inline_recv=<size>  Max size of message to be sent in inline receive");
    }
    if verb == Verb::Send {
        h.line("      --use-srq  Use a Shared Receive Queue. --rx-depth controls max-wr size of the SRQ ");
    }
    h.line("      --ipv6  Use IPv6 GID. Default is IPv4");
    h.line("      --source_ip  Source IP of the interface used for connection establishment. By default taken from routing table.");
    latency_gap_to_output(&mut h, bw);
    h.lines(WARM_UP);
    if bw {
        h.line("      --report-both  Report RX & TX results separately on Bidirectional BW tests");
        h.line("      --report_gbits  Report Max/Average BW of test in Gbit/sec (instead of MiB/sec)");
        h.lines(GBITS_NOTE);
        h.line("      --reversed  Reverse traffic direction - Server send to client");
        h.line("      --run_infinitely  Run test forever, print results every <duration> seconds");
    }
    h.line("      --retry_count=<value>  Set retry count value in rdma_cm mode");
    h.line("      --tclass=<value>  Set the Traffic Class in GRH (if GRH is in use)");
    h.line("      --use_hugepages  Use Hugepages instead of contig, memalign allocations.");
    if bw {
        h.lines(RATE_LIMITER);
    }
    h.line("");
    h.finish()
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
