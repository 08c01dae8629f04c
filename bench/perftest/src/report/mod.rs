//! perftest's text output, byte for byte, as pure functions of plain values
//! (docs/perftest-wire.md, "Output"; verified against the 6.06 and 6.29 outputs in
//! tests/fixtures/perftest-6.29-observed/).
//!
//! Two styles: [`Style::V606`] (Debian 12's perftest 4.5-0.17) and [`Style::V629`] (upstream
//! 26.04). The lead fills a [`ReportHeader`] from `Params` and the device.

pub mod cfmt;
pub mod json;

use crate::oob::msg::{AtomicType, ConnType, KeyMsg, Verb};
use crate::stats::LatencyStats;

/// Output layout to reproduce.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum Style {
    /// perftest 6.06: `MB/sec`, 3 spaces before MsgRate, shorter header, pseudo-JSON.
    V606,
    /// perftest 6.29: `MiB/sec`, 5 spaces, Lock-free / Enhanced Reorder / CQE Poll Batch / NUMA
    /// header items, valid JSON.
    #[default]
    V629,
}

/// The 87-character dash line (with newline).
pub const DASH_LINE: &str = "---------------------------------------------------------------------------------------\n";
/// The 163-character dash line of `--report-per-port` (with newline).
pub const DASH_LINE_PER_PORT: &str = "-------------------------------------------------------------------------------------------------------------------------------------------------------------------\n";

/// The server's banner before accepting (preceded by an empty line).
pub const WAITING_FOR_CLIENT: &str =
    "\n************************************\n* Waiting for client to connect... *\n************************************\n";

/// Transport type of the device.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Transport {
    Ib,
    Iwarp,
    Unknown,
}

impl Transport {
    pub fn name(self) -> &'static str {
        match self {
            Transport::Ib => "IB",
            Transport::Iwarp => "IW",
            Transport::Unknown => "Unknown",
        }
    }
}

/// Link layer of the port.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LinkType {
    Ib,
    Ethernet,
    Unknown,
}

impl LinkType {
    pub fn name(self) -> &'static str {
        match self {
            LinkType::Ib => "IB",
            LinkType::Ethernet => "Ethernet",
            LinkType::Unknown => "Unknown",
        }
    }
}

fn on_off(b: bool) -> &'static str {
    if b {
        "ON"
    } else {
        "OFF"
    }
}

/// Everything the header block and the JSON `test_info` print.
#[derive(Clone, Debug, PartialEq)]
pub struct ReportHeader {
    pub verb: Verb,
    pub atomic_type: AtomicType,
    /// BW test (else latency).
    pub bw: bool,
    /// `-b`.
    pub bidirectional: bool,
    pub post_list: u32,
    pub recv_post_list: u32,
    /// `-g`.
    pub multicast: bool,
    /// `-e`: completion vector number (`<dev>_comp<N>`).
    pub events_comp: Option<i32>,
    pub dual_port: bool,
    pub device: String,
    pub num_qps: u32,
    pub transport: Transport,
    pub connection: ConnType,
    pub use_srq: bool,
    /// PCIe relaxed ordering: Some(on) when built with RO support, None prints `Unsupported`.
    pub pcie_relax_order: Option<bool>,
    /// Print the two "CPU is not PCIe relaxed ordering compliant" warnings.
    pub pcie_ro_warning: bool,
    /// 6.29 `Lock-free`: Some(on) with thread-domain support, None prints `Unsupported`.
    pub lock_free: Option<bool>,
    /// `ibv_wr* API` (new post-send API in use).
    pub new_post_send: bool,
    /// 6.29 `Using Enhanced Reorder`.
    pub enhanced_reorder: bool,
    /// TCP client (prints TX depth).
    pub is_client: bool,
    pub tx_depth: u32,
    pub rx_depth: u32,
    pub cq_mod: u32,
    /// `-c DC --log_dci_streams`: (log streams, log active streams) for the DCS lines; 0 omits a line.
    pub dci_streams: (u16, u16),
    /// `--aes_xts`: (data encryption keys, block size) for the two AES-XTS lines.
    pub aes_xts: Option<(i32, u32)>,
    /// 6.29 `CQE Poll Batch` (BW): None = `Dynamic`.
    pub cqe_poll: Option<u16>,
    pub mtu_bytes: u32,
    pub link_type: LinkType,
    pub gid_index: Option<i32>,
    /// Second port's GID index (printed with dual port only).
    pub gid_index2: Option<i32>,
    pub inline_size: u32,
    pub out_reads: u32,
    /// Data QPs connected by librdmacm (`-R`).
    pub rdma_cm_qps: bool,
    /// Exchange over rdma_cm (`-z` or `-R`).
    pub data_ex_rdma_cm: bool,
    /// `-T` with `-R`.
    pub tos: Option<i32>,
    /// 6.29 `NUMA node` line (None: not printed).
    pub numa_node: Option<i32>,
    /// ` Use ROCm memory : ON|OFF`, printed as perftest built with ROCm prints it (None: no
    /// line, as a build without ROCm; the tool sets Some(true) for runs on ROCm memory).
    pub rocm_memory: Option<bool>,
}

impl ReportHeader {
    /// A plain header (RC, one QP, IB transport) to start from.
    pub fn new(verb: Verb, bw: bool, device: &str) -> Self {
        ReportHeader {
            verb,
            atomic_type: AtomicType::FetchAndAdd,
            bw,
            bidirectional: false,
            post_list: 1,
            recv_post_list: 1,
            multicast: false,
            events_comp: None,
            dual_port: false,
            device: device.to_string(),
            num_qps: 1,
            transport: Transport::Ib,
            connection: ConnType::Rc,
            use_srq: false,
            pcie_relax_order: Some(true),
            pcie_ro_warning: false,
            lock_free: Some(false),
            new_post_send: false,
            enhanced_reorder: false,
            is_client: true,
            tx_depth: if bw { 128 } else { 1 },
            rx_depth: 1,
            cq_mod: 1,
            dci_streams: (0, 0),
            aes_xts: None,
            cqe_poll: Some(16),
            mtu_bytes: 1024,
            link_type: LinkType::Ib,
            gid_index: None,
            gid_index2: None,
            inline_size: 0,
            out_reads: 1,
            rdma_cm_qps: false,
            data_ex_rdma_cm: false,
            tos: None,
            numa_node: None,
            rocm_memory: None,
        }
    }

    fn has_recv_comp(&self, style: Style) -> bool {
        match style {
            Style::V606 => self.verb == Verb::Send,
            Style::V629 => matches!(self.verb, Verb::Send | Verb::SendImm | Verb::WriteImm),
        }
    }

    fn shows_rx_depth(&self, style: Style) -> bool {
        self.has_recv_comp(style) && (!self.is_client || self.bidirectional)
    }

    fn read_like(&self) -> bool {
        matches!(self.verb, Verb::Read | Verb::Atomic)
    }

    /// The test title words (`RDMA_Write BW Test`, `Atomic FETCH_AND_ADD BW Test`, …), joined
    /// with `sep`.
    fn title(&self, sep: &str) -> String {
        let mut w: Vec<&str> = vec![self.verb.test_name()];
        if self.verb == Verb::Atomic {
            w.push(self.atomic_type.name());
        }
        if self.bw {
            if self.bidirectional {
                w.push("Bidirectional");
            }
            if self.post_list > 1 {
                w.push(if sep == " " { "Post List" } else { "Post_List" });
            }
            w.push("BW");
        } else {
            w.push("Latency");
        }
        if self.multicast {
            w.push("Multicast");
        }
        w.push("Test");
        w.join(sep)
    }
}

/// The header block, from the first dash line to the closing one (both included).
pub fn header(h: &ReportHeader, style: Style) -> String {
    let mut s = String::from(DASH_LINE);
    s.push_str(&format!("                    {}\n", h.title(" ")));
    if let Some(n) = h.events_comp {
        s.push_str(&format!(" Test with events. Using {}_comp{}\n", h.device, n));
    }
    if h.multicast {
        s.push_str(" MultiCast runs on UD!\n");
    }
    s.push_str(&format!(" Dual-port       : {}\t\tDevice         : {}\n", on_off(h.dual_port), h.device));
    s.push_str(&format!(" Number of qps   : {}\t\tTransport type : {}\n", h.num_qps, h.transport.name()));
    s.push_str(&format!(" Connection type : {}\t\tUsing SRQ      : {}\n", h.connection.name(), on_off(h.use_srq)));
    let ro = h.pcie_relax_order.map_or("Unsupported", on_off);
    match style {
        Style::V606 => s.push_str(&format!(" PCIe relax order: {ro}\n")),
        Style::V629 => match (h.pcie_relax_order, h.lock_free) {
            (None, None) => s.push_str(" PCIe relax order: Unsupported\t\tLock-free\t: Unsupported\n"),
            (_, lf) => s.push_str(&format!(
                " PCIe relax order: {ro}\t\tLock-free      : {}\n",
                lf.map_or("Unsupported", on_off)
            )),
        },
    }
    if h.pcie_relax_order.is_some() && h.pcie_ro_warning {
        s.push_str(" WARNING: CPU is not PCIe relaxed ordering compliant.\n");
        s.push_str(" WARNING: You should disable PCIe RO with `--disable_pcie_relaxed` for both server and client.\n");
    }
    match style {
        Style::V606 => s.push_str(&format!(" ibv_wr* API     : {}\n", on_off(h.new_post_send))),
        Style::V629 => s.push_str(&format!(
            " ibv_wr* API     : {}\t\tUsing Enhanced Reorder      : {}\n",
            on_off(h.new_post_send),
            on_off(h.enhanced_reorder)
        )),
    }
    if h.is_client || h.bidirectional {
        s.push_str(&format!(" TX depth        : {}\n", h.tx_depth));
    }
    if h.post_list > 1 {
        s.push_str(&format!(" Post List       : {}\n", h.post_list));
    }
    if h.recv_post_list > 1 {
        s.push_str(&format!(" Recv Post List  : {}\n", h.recv_post_list));
    }
    if h.shows_rx_depth(style) {
        s.push_str(&format!(" RX depth        : {}\n", h.rx_depth));
    }
    if h.dci_streams.0 != 0 {
        s.push_str(&format!(" DCS num streams : {}\n", h.dci_streams.0));
    }
    if h.dci_streams.1 != 0 {
        s.push_str(&format!(" DCS active num streams : {}\n", h.dci_streams.1));
    }
    if let Some((keys, block)) = h.aes_xts {
        s.push_str(&format!(" Number of data encryption keys  : {keys}\n"));
        s.push_str(&format!(" Block Size      : {block}\n"));
    }
    if h.bw {
        s.push_str(&format!(" CQ Moderation   : {}\n", h.cq_mod));
        if style == Style::V629 {
            match h.cqe_poll {
                None => s.push_str(" CQE Poll Batch  : Dynamic\n"),
                Some(n) => s.push_str(&format!(" CQE Poll Batch  : {n}\n")),
            }
        }
    }
    s.push_str(&format!(" Mtu             : {}[B]\n", h.mtu_bytes));
    s.push_str(&format!(" Link type       : {}\n", h.link_type.name()));
    if let Some(g) = h.gid_index {
        s.push_str(&format!(" GID index       : {g}\n"));
    }
    if h.dual_port {
        if let Some(g) = h.gid_index2 {
            s.push_str(&format!(" GID index2      : {g}\n"));
        }
    }
    if h.read_like() {
        s.push_str(&format!(" Outstand reads  : {}\n", h.out_reads));
    } else {
        s.push_str(&format!(" Max inline data : {}[B]\n", h.inline_size));
    }
    s.push_str(&format!(" rdma_cm QPs\t : {}\n", on_off(h.rdma_cm_qps)));
    if let Some(on) = h.rocm_memory {
        s.push_str(&format!(" Use ROCm memory : {}\n", on_off(on)));
    }
    s.push_str(&format!(" Data ex. method : {}", if h.data_ex_rdma_cm { "rdma_cm" } else { "Ethernet" }));
    if h.rdma_cm_qps {
        if let Some(t) = h.tos {
            s.push_str(&format!(" \tTOS    : {t}"));
        }
        if !h.is_client {
            s.push('\n');
            s.push_str(DASH_LINE);
            s.push_str(" Waiting for client rdma_cm QP to connect\n");
            s.push_str(" Please run the same command with the IB/RoCE interface IP");
        }
    }
    s.push('\n');
    if style == Style::V629 {
        if let Some(n) = h.numa_node {
            s.push_str(&format!(" NUMA node       : {n}\n"));
        }
    }
    s.push_str(DASH_LINE);
    s
}

/// Which side an address line describes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Side {
    Local,
    Remote,
}

/// What an address line shows besides LID/QPN/PSN.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct AddrShow {
    /// The verb of the context that prints (rdma_cm mode prints as SEND: no keys).
    pub verb: Verb,
    /// rdma_cm mode (`-z`/`-R`): RKey/VAddr are not shown.
    pub rdma_cm: bool,
    /// XRC or DC: ` SRQn …`.
    pub srqn: bool,
    /// A GID line follows (GID index in use).
    pub gid: bool,
    /// Multicast: the GID line is labelled `MGID`.
    pub mgid: bool,
    /// `--dlid` overrides the remote LID shown.
    pub dlid: Option<u16>,
}

/// ` local address: LID … QPN … PSN …[ OUT …][ RKey … VAddr …][ SRQn …]` + newline, then the
/// optional ` GID: d:d:…` line (bytes in two-digit decimal).
pub fn address_line(side: Side, k: &KeyMsg, show: &AddrShow) -> String {
    let lid = match (side, show.dlid) {
        (Side::Remote, Some(d)) => d,
        _ => k.lid,
    };
    let mut s = format!(
        " {} address: LID {} QPN {} PSN {}",
        if side == Side::Local { "local" } else { "remote" },
        cfmt::alt_hex(lid.into(), 4),
        cfmt::alt_hex(k.qpn.into(), 6),
        cfmt::alt_hex(k.psn.into(), 6)
    );
    if !show.rdma_cm {
        if show.verb == Verb::Read {
            s.push_str(&format!(" OUT {}", cfmt::alt_hex(k.out_reads.into(), 4)));
        }
        if matches!(show.verb, Verb::Read | Verb::Write) {
            s.push_str(&format!(" RKey {} VAddr {}", cfmt::alt_hex(k.rkey.into(), 8), cfmt::alt_hex(k.vaddr, 16)));
        }
    }
    if show.srqn {
        s.push_str(&format!(" SRQn {}", cfmt::alt_hex(k.srqn.into(), 8)));
    }
    s.push('\n');
    if show.gid || show.mgid {
        let g: Vec<String> = k.gid.iter().map(|b| format!("{b:02}")).collect();
        s.push_str(&format!(" {}: {}\n", if show.mgid { "MGID" } else { "GID" }, g.join(":")));
    }
    s
}

/// Columns of the BW table.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub struct BwColumns {
    /// `--report_gbits`.
    pub gbits: bool,
    /// `--report-per-port`.
    pub per_port: bool,
    /// `--cpu_util` (in effect).
    pub cpu_util: bool,
}

/// The BW result header: dash line (163 wide per port) + column titles + newline.
pub fn bw_result_header(style: Style, c: BwColumns) -> String {
    let u = if c.gbits {
        "Gb"
    } else if style == Style::V606 {
        "MB"
    } else {
        "MiB"
    };
    let mut s = String::from(if c.per_port { DASH_LINE_PER_PORT } else { DASH_LINE });
    s.push_str(&format!(" #bytes     #iterations    BW peak[{u}/sec]    BW average[{u}/sec]   MsgRate[Mpps]"));
    if c.per_port {
        s.push_str(&format!("   BW Port1[{u}/sec]   MsgRate Port1[Mpps]   BW Port2[{u}/sec]   MsgRate Port2[Mpps]"));
    }
    s.push_str(if c.cpu_util { "    CPU_Util[%]\n" } else { "\n" });
    s
}

/// Values of one BW result line (use [`crate::oob::BwReport::summed`] for duplex): the
/// statistics' own result type.
pub use crate::stats::BwResult as BwLine;

/// `--output=…`: print one number instead of the table.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum OutputMode {
    #[default]
    Full,
    Bandwidth,
    MessageRate,
    Latency,
}

/// Whether a BW line uses the 6-decimal layout (`--report_gbits` and average < 0.1).
pub fn bw_high_precision(gbits: bool, bw_avg: f64) -> bool {
    gbits && bw_avg < 0.1
}

/// One BW result line with its newline (`cpu_util`: the CPU column value when enabled).
pub fn bw_result_line(style: Style, c: BwColumns, l: &BwLine, cpu_util: Option<f32>, output: OutputMode) -> String {
    use cfmt::lf;
    match output {
        OutputMode::Bandwidth => return format!("{}\n", cfmt::f6(l.bw_avg)),
        OutputMode::MessageRate => return format!("{}\n", cfmt::f6(l.msg_rate)),
        _ => {}
    }
    let mut s = if c.per_port {
        format!(
            " {:<7}    {:<10}     {}            {}\t\t   {}        {}            {}              {}            {}",
            l.size,
            l.iters,
            lf(l.bw_peak, 7, 2),
            lf(l.bw_avg, 7, 2),
            lf(l.msg_rate, 7, 6),
            lf(l.bw_avg_p1, 7, 2),
            lf(l.msg_rate_p1, 7, 6),
            lf(l.bw_avg_p2, 7, 2),
            lf(l.msg_rate_p2, 7, 6)
        )
    } else if bw_high_precision(c.gbits, l.bw_avg) {
        format!(
            " {:<7}    {}           {}            {}            {}",
            l.size,
            l.iters,
            lf(l.bw_peak, 7, 6),
            lf(l.bw_avg, 7, 6),
            lf(l.msg_rate, 7, 6)
        )
    } else {
        let gap = if style == Style::V606 { "   " } else { "     " };
        format!(
            " {:<7}    {:<10}       {}            {}\t\t{gap}{}",
            l.size,
            l.iters,
            lf(l.bw_peak, 7, 2),
            lf(l.bw_avg, 7, 2),
            lf(l.msg_rate, 7, 6)
        )
    };
    s.push_str(&result_ext(cpu_util));
    s
}

/// `--report-both` with `-b` (perftest's regular, single-size runs): after the summed line, a
/// block with this side's line and one with the peer's, each introduced by a dash line, its
/// title, a dash line and the column titles. `local` and `remote` are rendered result lines
/// ([`bw_result_line`]). ib_atomic_bw's titles have no space before the newline.
pub fn report_both_blocks(style: Style, c: BwColumns, atomic: bool, local: &str, remote: &str) -> String {
    let sp = if atomic { "" } else { " " };
    let mut s = String::from(DASH_LINE);
    s.push_str(&format!("\n Local results:{sp}\n"));
    s.push_str(&bw_result_header(style, c));
    s.push_str(local);
    s.push_str(DASH_LINE);
    s.push_str(&format!("\n Remote results:{sp}\n"));
    s.push_str(&bw_result_header(style, c));
    s.push_str(remote);
    s
}

fn result_ext(cpu_util: Option<f32>) -> String {
    match cpu_util {
        Some(u) => format!("\t    {}\n", cfmt::lf(f64::from(u), 3, 2)),
        None => "\n".to_string(),
    }
}

/// Latency column titles.
pub const LAT_HEADER: &str = " #bytes #iterations    t_min[usec]    t_max[usec]  t_typical[usec]    t_avg[usec]    t_stdev[usec]   99% percentile[usec]   99.9% percentile[usec] ";
/// Latency column titles in duration mode.
pub const LAT_DURATION_HEADER: &str = " #bytes        #iterations       t_avg[usec]    tps average";

/// Latency result header: dash line + titles + newline (or the CPU column).
pub fn lat_result_header(duration: bool, cpu_util: bool) -> String {
    format!(
        "{DASH_LINE}{}{}",
        if duration { LAT_DURATION_HEADER } else { LAT_HEADER },
        if cpu_util { "    CPU_Util[%]\n" } else { "\n" }
    )
}

/// One latency result line (iteration mode) with its newline; `--output=latency` prints t_avg only.
pub fn lat_result_line(size: u64, iters: u64, st: &LatencyStats, cpu_util: Option<f32>, output: OutputMode) -> String {
    use cfmt::lf;
    if output == OutputMode::Latency {
        return format!("{}\n", cfmt::f6(st.t_avg));
    }
    let mut s = format!(
        " {:<7} {}          {}        {}      {}  \t       {}     \t{}\t\t{} \t\t{}",
        size,
        iters,
        lf(st.t_min, 7, 2),
        lf(st.t_max, 7, 2),
        lf(st.t_typical, 7, 2),
        lf(st.t_avg, 7, 2),
        lf(st.t_stdev, 7, 2),
        lf(st.p99, 7, 2),
        lf(st.p99_9, 7, 2)
    );
    s.push_str(&result_ext(cpu_util));
    s
}

/// One duration-mode latency line with its newline.
pub fn lat_duration_line(
    size: u64,
    iters: u64,
    t_avg: f64,
    tps: f64,
    cpu_util: Option<f32>,
    output: OutputMode,
) -> String {
    if output == OutputMode::Latency {
        return format!("{}\n", cfmt::f6(t_avg));
    }
    let mut s =
        format!(" {:<7}       {}            {}        {}", size, iters, cfmt::lf(t_avg, 7, 2), cfmt::lf(tps, 7, 2));
    s.push_str(&result_ext(cpu_util));
    s
}

/// `-U` / `-H` sample dump: `#, usec` (or `#, cycles` with `-C`) then `<n>, <%g>` lines.
pub fn sample_dump(values: &[f64], cycles: bool) -> String {
    let mut s = String::with_capacity(values.len() * 12 + 10);
    s.push_str(if cycles { "#, cycles\n" } else { "#, usec\n" });
    for (i, v) in values.iter().enumerate() {
        s.push_str(&format!("{}, {}\n", i + 1, cfmt::g(*v)));
    }
    s
}

/// Everything `print_report_lat` writes to stdout for one size: optional `-U` dump (unsorted),
/// optional `-H` dump (sorted, top two dropped), the repeated header after a dump, the line.
#[allow(clippy::too_many_arguments)]
pub fn lat_report(
    size: u64,
    iters: u64,
    rep: &crate::stats::LatencyReport,
    unsorted: bool,
    histogram: bool,
    cycles: bool,
    cpu_util: Option<f32>,
    output: OutputMode,
) -> String {
    let mut s = String::new();
    if unsorted {
        s.push_str(&sample_dump(&rep.unsorted, cycles));
    }
    if histogram {
        s.push_str(&sample_dump(&rep.sorted, cycles));
    }
    if (unsorted || histogram) && output == OutputMode::Full {
        s.push_str(&lat_result_header(false, cpu_util.is_some()));
    }
    s.push_str(&lat_result_line(size, iters, &rep.stats, cpu_util, output));
    s
}

/// The devices perftest drives through the `ibv_wr_*` API unless `--use_old_post_send` is given
/// (6.06's `verify_params_with_device_context`: Connect-IB, ConnectX-4 to 7 and their VFs,
/// BlueField 1 to 3, by `vendor_part_id` as its `ib_dev_name` maps them; EFA is refused here).
/// Every other device, rxe included, falls back to `ibv_post_send`, and the header then says
/// `ibv_wr* API : OFF`. rperftest has one post path either way; this only decides what the
/// header and the JSON say, so that they read as C perftest's on the same device.
pub fn has_new_post_send(vendor_part_id: u32) -> bool {
    matches!(vendor_part_id, 4113 | 4115..=4127 | 4129 | 41682 | 41683 | 41686 | 41692)
}
