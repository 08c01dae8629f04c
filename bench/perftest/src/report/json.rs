//! `--out_json` files, byte-exact: 6.29 writes valid JSON; 6.06 writes its pseudo-JSON
//! (unquoted keys, trailing commas), kept as a compatibility option.

use std::io::Write;

use super::{cfmt, on_off, OutputMode, ReportHeader, Style};
use crate::oob::msg::Verb;

/// Default file name.
pub const DEFAULT_JSON_FILE: &str = "perftest_out.json";

/// The `results` object of one report.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum JsonResults {
    /// BW line values (summed for duplex); `high_precision` = 6-decimal layout.
    Bw { size: u64, iters: u64, bw_peak: f64, bw_avg: f64, msg_rate: f64, high_precision: bool },
    /// Latency (iteration mode).
    Lat {
        size: u64,
        iters: u64,
        t_min: f64,
        t_max: f64,
        t_typical: f64,
        t_avg: f64,
        t_stdev: f64,
        p99: f64,
        p99_9: f64,
    },
    /// Latency (duration mode).
    LatDuration { size: u64, iters: u64, t_avg: f64, tps: f64 },
}

fn test_info(h: &ReportHeader, style: Style) -> String {
    let v629 = style == Style::V629;
    // key: value line; `q` quotes the value in 6.29.
    let kv = |k: &str, v: &str, quote: bool| -> String {
        if v629 {
            if quote {
                format!("\"{k}\": \"{v}\",\n")
            } else {
                format!("\"{k}\": {v},\n")
            }
        } else {
            format!("{k}: {v},\n")
        }
    };
    let mut s = String::new();
    s.push_str(if v629 { "\"test_info\": {\n" } else { "test_info: {\n" });
    s.push_str(&kv("test", &h.title("_"), true));
    if let Some(n) = h.events_comp {
        s.push_str(&kv("Test with events", &format!("Using_{}_comp{}", h.device, n), true));
    }
    if h.multicast {
        s.push_str(if v629 { " \"MultiCast_runs\": \"on_UD\",\n" } else { " MultiCast_runs: on_UD,\n" });
    }
    s.push_str(&kv("Dual_port", on_off(h.dual_port), true));
    // The device name is quoted in both versions.
    s.push_str(&if v629 { format!("\"Device\": \"{}\",\n", h.device) } else { format!("Device: \"{}\",\n", h.device) });
    s.push_str(&kv("Number_of_qps", &h.num_qps.to_string(), false));
    s.push_str(&kv("Transport_type", h.transport.name(), true));
    s.push_str(&kv("Connection_type", h.connection.name(), true));
    s.push_str(&kv("Using_SRQ", on_off(h.use_srq), true));
    match h.pcie_relax_order {
        Some(on) => {
            s.push_str(&kv("PCIe_relax_order", on_off(on), true));
            if h.pcie_ro_warning {
                if v629 {
                    s.push_str("\"WARNING1\": \"CPU is not PCIe relaxed ordering compliant\",\n");
                    s.push_str("\"WARNING2\": \"You should disable PCIe RO with --disable_pcie_relaxed for both server and client\",\n");
                } else {
                    s.push_str("WARNING1: \"CPU is not PCIe relaxed ordering compliant\",\n");
                    s.push_str("WARNING2: \"You should disable PCIe RO with --disable_pcie_relaxed for both server and client\",\n");
                }
            }
        }
        None => s.push_str(if v629 {
            " \"PCIe_relax_order\": \"Unsupported\",\n"
        } else {
            " PCIe_relax_order: Unsupported,\n"
        }),
    }
    s.push_str(&kv("ibv_wr_API", on_off(h.new_post_send), true));
    if h.is_client || h.bidirectional {
        // 6.06 has a space before the colon here.
        s.push_str(&if v629 {
            format!("\"TX_depth\": {},\n", h.tx_depth)
        } else {
            format!("TX_depth : {},\n", h.tx_depth)
        });
    }
    if h.post_list > 1 {
        s.push_str(&kv("Post_List", &h.post_list.to_string(), false));
    }
    if h.recv_post_list > 1 {
        s.push_str(&kv("Recv_Post_List", &h.recv_post_list.to_string(), false));
    }
    if h.shows_rx_depth(style) {
        s.push_str(&kv("RX_depth", &h.rx_depth.to_string(), false));
    }
    if h.bw {
        s.push_str(&kv("CQ_Moderation", &h.cq_mod.to_string(), false));
    }
    s.push_str(&kv("Mtu", &h.mtu_bytes.to_string(), false));
    s.push_str(&kv("Link_type", h.link_type.name(), true));
    if let Some(g) = h.gid_index {
        s.push_str(&kv("GID_index", &g.to_string(), false));
    }
    if h.dual_port {
        if let Some(g) = h.gid_index2 {
            s.push_str(&kv("GID_index2", &g.to_string(), false));
        }
    }
    if matches!(h.verb, Verb::Read | Verb::Atomic) {
        s.push_str(&kv("Outstand_reads", &h.out_reads.to_string(), false));
    } else {
        s.push_str(&kv("Max_inline_data", &h.inline_size.to_string(), false));
    }
    s.push_str(&kv("rdma_cm_QPs", on_off(h.rdma_cm_qps), true));
    let method = if h.data_ex_rdma_cm { "rdma_cm" } else { "Ethernet" };
    if v629 {
        let rocm = on_off(h.rocm_memory == Some(true));
        s.push_str(&format!("\"Use_ROCm_memory\": \"{rocm}\",\n\"Use_MUSA_memory\": \"OFF\",\n"));
        s.push_str(&format!("\"Data_ex_method\": \"{method}\""));
        if h.rdma_cm_qps {
            if let Some(t) = h.tos {
                s.push_str(&format!(",\n\"TOS\": {t}"));
            }
        }
        s.push_str("\n},\n");
    } else {
        s.push_str(&format!("Data_ex_method: {method},\n"));
        if h.rdma_cm_qps {
            if let Some(t) = h.tos {
                s.push_str(&format!("TOS: {t},\n"));
            }
        }
        s.push_str("},\n");
    }
    s
}

/// A JSON number, `null` where the figure is not finite: perftest writes `-nan` there, which no
/// JSON parser reads, so one bad statistic would lose the whole report.
fn num(v: f64, prec: usize) -> String {
    if v.is_finite() {
        cfmt::f(v, prec)
    } else {
        "null".into()
    }
}

fn num6(v: f64) -> String {
    num(v, 6)
}

fn results(r: &JsonResults, style: Style, cpu_util: Option<f32>, output: OutputMode) -> String {
    let v629 = style == Style::V629;
    let k = |name: &str| if v629 { format!("\"{name}\"") } else { name.to_string() };
    let mut s = String::from(if v629 { "\"results\": {\n" } else { "results: {\n" });
    // Fields joined by ",\n"; 6.06 also ends the last one with ",\n".
    let mut fields: Vec<String> = Vec::new();
    let mut ext = true;
    match (*r, output) {
        (JsonResults::Bw { bw_avg, .. }, OutputMode::Bandwidth) => {
            s.push_str(&format!("{}: {},\n", k("bw_avg"), num6(bw_avg)));
        }
        (JsonResults::Bw { msg_rate, .. }, OutputMode::MessageRate) => {
            s.push_str(&format!("{}: {},\n", k("msgRate_avg"), num6(msg_rate)));
        }
        (JsonResults::Bw { size, iters, bw_peak, bw_avg, msg_rate, high_precision }, _) => {
            let p = if high_precision { 6 } else { 2 };
            fields.push(format!("{}: {size}", k("MsgSize")));
            fields.push(format!("{}: {iters}", k("n_iterations")));
            fields.push(format!("{}: {}", k("BW_peak"), num(bw_peak, p)));
            fields.push(format!("{}: {}", k("BW_average"), num(bw_avg, p)));
            fields.push(format!("{}: {}", k("MsgRate"), num(msg_rate, 6)));
        }
        (JsonResults::Lat { t_avg, .. }, OutputMode::Latency) => {
            ext = false;
            if v629 {
                s.push_str(&format!("\"avg_lat\": {}\n", num6(t_avg)));
            } else {
                s.push_str(&format!("avg_lat: {},\n", num6(t_avg)));
            }
        }
        (JsonResults::Lat { size, iters, t_min, t_max, t_typical, t_avg, t_stdev, p99, p99_9 }, _) => {
            fields.push(format!("{}: {size}", k("MsgSize")));
            fields.push(format!("{}: {iters}", k("n_iterations")));
            for (name, v) in [
                ("t_min", t_min),
                ("t_max", t_max),
                ("t_typical", t_typical),
                ("t_avg", t_avg),
                ("t_stdev", t_stdev),
                ("percentile_99", p99),
                ("percentile_99.9", p99_9),
            ] {
                fields.push(format!("{}: {}", k(name), num(v, 2)));
            }
        }
        (JsonResults::LatDuration { t_avg, .. }, OutputMode::Latency) => {
            ext = false;
            s.push_str(&format!("{}: {}\n", k("t_avg"), num6(t_avg)));
        }
        (JsonResults::LatDuration { size, iters, t_avg, tps }, _) => {
            fields.push(format!("{}: {size}", k("MsgSize")));
            fields.push(format!("{}: {iters}", k("n_iterations")));
            fields.push(format!("{}: {}", k("t_avg"), num(t_avg, 2)));
            fields.push(format!("{}: {}", k("tps_average"), num(tps, 2)));
        }
    }
    s.push_str(&fields.join(",\n"));
    if v629 {
        if ext {
            match cpu_util {
                Some(u) => s.push_str(&format!(",\n\"CPU_util\": {}\n", num(f64::from(u), 2))),
                None => s.push('\n'),
            }
        }
        s.push_str("}\n");
    } else {
        if !fields.is_empty() {
            s.push_str(",\n");
        }
        if ext {
            if let Some(u) = cpu_util {
                s.push_str(&format!("CPU_util: {},\n", num(f64::from(u), 2)));
            }
        }
        s.push_str("},\n");
    }
    s
}

/// The whole file content.
pub fn json_report(
    h: &ReportHeader,
    r: &JsonResults,
    style: Style,
    cpu_util: Option<f32>,
    output: OutputMode,
) -> String {
    format!("{{\n{}{}}}\n", test_info(h, style), results(r, style, cpu_util, output))
}

/// Write (create 0600 / truncate) the JSON file, as perftest does at every result line.
pub fn write_json_file(path: &std::path::Path, content: &str) -> std::io::Result<()> {
    use std::os::unix::fs::OpenOptionsExt;
    let mut f = std::fs::OpenOptions::new().write(true).create(true).truncate(true).mode(0o600).open(path)?;
    f.write_all(content.as_bytes())
}
