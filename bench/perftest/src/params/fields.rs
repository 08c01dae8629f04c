//! The [`Params`] record: every field the command line sets or derives, perftest's defaults,
//! and the questions the rest of the tool asks of it.

use super::types::{AesXts, DEF_INLINE_DC};
use super::{not_multiple, Notice, Persona};
use crate::oob::msg::DEFAULT_PORT;
use super::{AtomicType, Connection, LinkType, Output, RateLimitType, RateUnits, ReportFormat, Role, TestKind};
use super::{TestMethod, TestType, Tool, Verb};

/// Everything the command line decides, after perftest's derivations. Device-dependent values
/// (active MTU, inline default, max outstanding reads, GID auto-selection) stay `None` here and
/// are resolved by the engine once the device is open. The test itself is here; the options
/// of one concern each (device and addressing, connecting, reporting, buffers, rate) are
/// grouped below it.
#[derive(Clone, Debug, PartialEq)]
pub struct Params {
    pub tool: Tool,
    /// The tool's verb, or the *Imm variant with `--write_with_imm` / `--send_with_imm`.
    pub verb: Verb,
    pub kind: TestKind,

    // roles
    /// The positional argument: its presence makes this process the TCP client.
    pub server_name: Option<String>,
    /// Test role after `--reversed`.
    pub machine: Role,
    pub reversed: bool,
    /// rperftest: run server and client in one process.
    pub loopback: bool,
    /// `--adopt` (rperftest extension, server): take an rperftest client's -s/-q/-n/-t/-m/-a/-D
    /// instead of refusing to run when they differ.
    pub adopt: bool,
    /// `--perftest-version` (or [`ENV_PERSONA`](super::ENV_PERSONA)): which perftest's text this run prints.
    pub persona: Persona,
    /// The command line after argv[0], where `--adopt` needs it to re-parse with the client's
    /// options (set by the tool's entry point; empty otherwise).
    pub cmdline: Vec<String>,
    /// What the program chose from outside the command line (the tool's entry point sets it;
    /// default in tests): the persona's fallback and the setup and stall timeouts.
    pub settings: bench_core::settings::RunSettings,
    /// How the program opens the device (command transport, rxe doorbell, mlx5 BlueFlame), set
    /// by the tool's entry point beside [`Params::settings`]; the libraries' defaults in tests.
    pub providers: providers::ProviderSettings,

    // test shape
    /// The transport (`-c`).
    pub connection: Connection,
    pub test_method: TestMethod,
    pub test_type: TestType,
    /// Message size; 8 MiB with `-a` (buffers sized for the largest message), 8 for atomics.
    pub size: u64,
    pub size_requested: bool,
    /// Iterations; 0 in `-D` mode (there it counts samples).
    pub iters: u64,
    /// Seconds (`-D`; default 5, also the `--run_infinitely` report period).
    pub duration: u32,
    /// `-f`; in duration mode defaults to duration/4. None only in iteration mode without `-f`.
    pub margin: Option<u32>,
    pub tx_depth: u32,
    pub rx_depth: u32,
    pub cq_mod: u32,
    pub cq_mod_requested: bool,
    /// Number of QPs (doubled by `-O`).
    pub num_qps: u32,
    pub post_list: u32,
    pub recv_post_list: u32,
    /// `-I`; None = device/tool default (see [`Params::default_inline`]). 0 for read/atomic.
    pub inline_size: Option<u32>,
    pub inline_recv_size: u32,
    /// `-o`; None = the device's max_qp_rd_atom (read/atomic only).
    pub out_reads: Option<u32>,
    pub atomic_type: AtomicType,
    /// `-b`
    pub duplex: bool,
    pub no_peak: bool,
    pub use_event: bool,
    /// `-X` completion vector.
    pub eq_num: Option<u32>,
    pub use_mcg: bool,
    pub mgid: Option<String>,
    pub use_srq: bool,
    pub connectionless: bool,
    /// `--aes_xts` and its family ([`aes`]).
    pub aes: AesXts,
    /// `--log_dci_streams` (DC only; 0 = plain DCI).
    pub log_dci_streams: u16,
    /// `--log_active_dci_streams` (default: `log_dci_streams`).
    pub log_active_dci_streams: u16,

    // the options of one concern each
    /// The device, port and addressing options (`-d`, `-i`, `-x`, `-m`, `-S`, `--tclass`, …).
    pub dev: DeviceOpts,
    /// How the sides meet: the TCP (or rdma_cm) exchange and the connection parameters it carries.
    pub conn: ConnectOpts,
    /// What is reported and how (`--report_gbits`, `-U`, `-H`, `-W`, `--out_json`, `--plot`, …).
    pub report: ReportOpts,
    /// The buffers and how work is posted and polled (`--mmap`, `--odp`, `--cqe_poll`, …).
    pub buf: BufferOpts,
    /// The rate limiter (SW; HW as perftest: a static rate at RTR, checked by QUERY_QP, falling
    /// back to SW when implicit: see params::rate and engine::hw_rate).
    pub rate: RateOpts,

    /// Lines perftest prints while parsing, in order.
    pub notices: Vec<Notice>,
}

/// The device, port and addressing options (`-d`, `-i`, `-x`, `-m`, `-S`, `--tclass`, …).
#[derive(Clone, Debug, PartialEq)]
pub struct DeviceOpts {
    pub ib_dev: Option<String>,
    pub ib_port: u8,
    /// Second port with `-O` (2).
    pub ib_port2: u8,
    pub dualport: bool,
    /// `-x`; None = auto (IB: no GRH; RoCE: chosen from the GID table). `-g` defaults it to 0.
    pub gid_index: Option<u8>,
    pub ipv6: bool,
    /// `--ipv6-addr`: AF_INET6 for the TCP/rdma_cm exchange.
    pub ipv6_addr: bool,
    /// `--source_ip` / `--bind_source_ip`.
    pub source_ip: Option<String>,
    pub force_link: Option<LinkType>,
    /// `-m` as given (bytes); None = the port's active MTU. Not validated here: perftest warns and
    /// falls back to the active MTU for values other than 256…4096 (see [`mtu_enum`](super::mtu_enum)).
    pub mtu: Option<u32>,
    pub sl: u8,
    pub qp_timeout: u8,
    pub pkey_index: u32,
    pub tclass: u16,
    /// `--flow_label` list (round-robin per QP).
    pub flow_labels: Vec<u32>,
    pub dlid: Option<u16>,
}

/// How the sides meet: the TCP (or rdma_cm) exchange and the connection parameters it carries.
#[derive(Clone, Debug, PartialEq)]
pub struct ConnectOpts {
    /// TCP (or rdma_cm with `-z`) port.
    pub port: u16,
    /// `-z`, also implied by `-R`: exchange data over rdma_cm.
    pub use_rdma_cm: bool,
    /// `-R`: connect the QPs with rdma_cm.
    pub work_rdma_cm: bool,
    pub tos: Option<u8>,
    pub hop_limit: u8,
    pub retry_count: u32,
    pub dont_xchg_versions: bool,
}

/// What is reported and how (`--report_gbits`, `-U`, `-H`, `-W`, `--out_json`, `--plot`, …).
#[derive(Clone, Debug, PartialEq)]
pub struct ReportOpts {
    /// `--plot FILE.svg` (rperftest extension): draw the run's result lines (docs/plots.md).
    pub plot_file: Option<String>,
    /// `--series FILE` (rperftest extension): every result line as JSON Lines, for
    /// `rperftest plot` and `compare` (a `--out_json` file keeps only the last line).
    pub series_file: Option<String>,
    pub fmt: ReportFormat,
    pub both: bool,
    pub per_port: bool,
    pub cycles: bool,
    pub histogram: bool,
    pub unsorted: bool,
    pub output: Output,
    pub out_json: bool,
    pub out_json_file: String,
    pub cpu_util: bool,
    pub cpu_freq_f: bool,
    pub limit_bw: Option<f64>,
    pub limit_msgrate: Option<f64>,
    /// `-W` counter names (`counters/port_xmit_data`, `hw_counters/out_of_buffer`).
    pub counters: Vec<String>,
}

/// The buffers and how work is posted and polled (`--mmap`, `--odp`, `--cqe_poll`, …).
#[derive(Clone, Debug, PartialEq)]
pub struct BufferOpts {
    pub use_hugepages: bool,
    pub mr_per_qp: bool,
    pub use_old_post_send: bool,
    pub perform_warm_up: bool,
    pub use_null_mr: bool,
    pub mmap_file: Option<String>,
    pub mmap_offset: u64,
    pub payload_file_path: Option<String>,
    /// `--odp`: register the MR with IBV_ACCESS_ON_DEMAND (after checking the device's ODP caps).
    pub odp: bool,
    pub wait_destroy: u32,
    /// `--latency_gap` (µs busy-wait before each post, LAT only).
    pub latency_gap: u32,
    pub disable_pcie_relaxed: bool,
    pub cqe_poll: Option<u16>,
    pub disable_dynamic_polling: bool,
    /// Derived: whether 6.29 would adapt its CQE poll batch (header `CQE Poll Batch : Dynamic`).
    pub dynamic_cqe_poll: bool,
    /// Derived: the fixed CQE poll batch when not dynamic (16, `--cqe_poll`, or 64 for very
    /// many QPs with large messages).
    pub cqe_poll_batch: u16,
    pub no_lock: bool,
    pub no_enhanced_reorder: bool,
    pub pin_cores: Option<String>,
    pub numa_node: Option<i32>,
    pub disable_numa: bool,
    /// `--use_cuda`, `--use_cuda_bus_id`, `--use_rocm` (+ `_dmabuf`, `--gpu_touch`): the buffer
    /// is accelerator memory (crate::gpu).
    pub gpu: Option<crate::gpu::GpuRequest>,
}

/// The rate limiter (SW; HW as perftest: a static rate at RTR, checked by QUERY_QP, falling
/// back to SW when implicit: see params::rate and engine::hw_rate).
#[derive(Clone, Debug, PartialEq)]
pub struct RateOpts {
    pub limit_type: RateLimitType,
    /// `--rate_limit_type` was given (perftest's `is_rate_limit_type`): a HW limit the QP does
    /// not take is then an error instead of a fallback to SW.
    pub limit_type_explicit: bool,
    /// HW limiter: the `enum ibv_rate` value of `--rate_limit` (perftest's
    /// `valid_hw_rate_limit_index`; 0 when no rate was given).
    pub hw_rate: u8,
    pub limit: f64,
    pub units: RateUnits,
    pub burst_size: u32,
    pub typical_pkt_size: u32,
}

impl Params {
    /// perftest's defaults for `tool`, before any option and before derivation.
    pub fn defaults(tool: Tool) -> Params {
        let kind = tool.kind();
        let verb = tool.verb();
        Params {
            tool,
            verb,
            kind,
            server_name: None,
            machine: Role::Server,
            reversed: false,
            loopback: false,
            adopt: false,
            persona: Persona::default(),
            settings: Default::default(),
            providers: Default::default(),
            cmdline: Vec::new(),
            connection: Connection::Rc,
            test_method: TestMethod::Regular,
            test_type: TestType::Iterations,
            size: match (verb, kind) {
                (Verb::Atomic, _) => 8,
                (_, TestKind::Bw) => 65536,
                (_, TestKind::Lat) => 2,
            },
            size_requested: false,
            iters: tool.default_iters(),
            duration: 5,
            margin: None,
            tx_depth: if kind == TestKind::Bw { 128 } else { 1 },
            rx_depth: if matches!(verb, Verb::Send | Verb::Write) {
                512
            } else {
                1
            },
            cq_mod: 100,
            cq_mod_requested: false,
            num_qps: 1,
            post_list: 1,
            recv_post_list: 1,
            inline_size: None,
            inline_recv_size: 0,
            out_reads: None,
            atomic_type: AtomicType::FetchAndAdd,
            duplex: false,
            no_peak: false,
            use_event: false,
            eq_num: None,
            use_mcg: false,
            mgid: None,
            use_srq: false,
            connectionless: false,
            aes: AesXts::default(),
            log_dci_streams: 0,
            log_active_dci_streams: 0,
            dev: DeviceOpts {
                ib_dev: None,
                ib_port: 1,
                ib_port2: 2,
                dualport: false,
                gid_index: None,
                ipv6: false,
                ipv6_addr: false,
                source_ip: None,
                force_link: None,
                mtu: None,
                sl: 0,
                qp_timeout: 14,
                pkey_index: 0,
                tclass: 0,
                flow_labels: Vec::new(),
                dlid: None,
            },
            conn: ConnectOpts {
                port: DEFAULT_PORT,
                use_rdma_cm: false,
                work_rdma_cm: false,
                tos: None,
                hop_limit: 64,
                retry_count: 7,
                dont_xchg_versions: false,
            },
            report: ReportOpts {
                plot_file: None,
                series_file: None,
                fmt: ReportFormat::Mbs,
                both: false,
                per_port: false,
                cycles: false,
                histogram: false,
                unsorted: false,
                output: Output::Full,
                out_json: false,
                out_json_file: "perftest_out.json".to_string(),
                cpu_util: false,
                cpu_freq_f: false,
                limit_bw: None,
                limit_msgrate: None,
                counters: Vec::new(),
            },
            buf: BufferOpts {
                use_hugepages: false,
                mr_per_qp: false,
                use_old_post_send: false,
                perform_warm_up: false,
                use_null_mr: false,
                mmap_file: None,
                mmap_offset: 0,
                payload_file_path: None,
                odp: false,
                wait_destroy: 0,
                latency_gap: 0,
                disable_pcie_relaxed: false,
                cqe_poll: None,
                disable_dynamic_polling: false,
                dynamic_cqe_poll: true,
                cqe_poll_batch: 16,
                no_lock: false,
                no_enhanced_reorder: false,
                pin_cores: None,
                numa_node: None,
                disable_numa: false,
                gpu: None,
            },
            rate: RateOpts {
                limit_type: RateLimitType::Disabled,
                limit_type_explicit: false,
                hw_rate: 0,
                limit: 0.0,
                units: RateUnits::GigaBits,
                burst_size: 0,
                typical_pkt_size: 0,
            },
            notices: Vec::new(),
        }
    }

    /// The side that has the host argument is the TCP client (writes first in every exchange).
    pub fn is_tcp_client(&self) -> bool {
        self.server_name.is_some()
    }

    /// Message sizes of the run: 2^1 … 2^23 with `-a` (send over UD is further capped to the MTU
    /// by the engine), else just [`Params::size`].
    pub fn sizes(&self) -> Vec<u64> {
        if self.test_method == TestMethod::All {
            (1..=23).map(|e| 1u64 << e).collect()
        } else {
            vec![self.size]
        }
    }

    /// perftest's inline default when `-I` is not given, for a device in perftest's known-device
    /// table (Mellanox/mlx5 and friends): BW 0; LAT write 220, send 236 (UD 188); read/atomic 0.
    /// Devices missing from that table (rxe) get 0, and perftest also overrides an explicit `-I`
    /// to 0 for them.
    pub fn default_inline(&self, device_known: bool) -> u32 {
        if !device_known || self.kind == TestKind::Bw {
            return 0;
        }
        match self.verb {
            Verb::Write | Verb::WriteImm | Verb::Send | Verb::SendImm if self.connection == Connection::Dc => DEF_INLINE_DC,
            Verb::Write | Verb::WriteImm => 220,
            Verb::Send | Verb::SendImm => {
                if self.connection == Connection::Ud {
                    188
                } else {
                    236
                }
            }
            Verb::Read | Verb::Atomic => 0,
        }
    }

    /// perftest's `fill_count`: iterations not a multiple of the CQ moderation.
    pub fn fill_count(&self) -> bool {
        self.test_type == TestType::Iterations
            && self.cq_mod > 0
            && not_multiple(self.iters, u64::from(self.cq_mod))
    }

    /// Whether SRQ objects exist on this side (perftest's `srq_exists`; XRC: always).
    pub fn srq_exists(&self) -> bool {
        (self.use_srq && (self.kind == TestKind::Lat || self.machine == Role::Server || self.duplex))
            || self.connection == Connection::Xrc
    }

    /// Receives each QP pre-posts (perftest's `size_per_qp` in `ctx_set_recv_wqes`): `-r`, or
    /// with an SRQ (`--use-srq`, XRC, DC) that depth shared by all the QPs posting into it,
    /// since the SRQ holds only `-r` receives.
    pub fn recv_depth_per_qp(&self) -> u32 {
        if self.use_srq || self.connection == Connection::Xrc {
            (self.rx_depth / self.num_qps.max(1)).max(1)
        } else {
            self.rx_depth
        }
    }

    pub(super) fn notice_out(&mut self, text: &str) {
        self.notices.push(Notice {
            to_stderr: false,
            text: text.to_string(),
        });
    }
    pub(super) fn notice_err(&mut self, text: &str) {
        self.notices.push(Notice {
            to_stderr: true,
            text: text.to_string(),
        });
    }
}
