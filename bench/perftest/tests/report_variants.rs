//! Output variants not in the captures, checked against strings derived from perftest's
//! format macros (perftest_parameters.h, 6.06 and HEAD).

use perftest::oob::msg::{AtomicType, ConnType, KeyMsg, Verb};
use perftest::report::json::{json_report, JsonResults};
use perftest::report::{
    address_line, bw_result_header, bw_result_line, header, lat_duration_line, lat_report, lat_result_header, AddrShow,
    BwColumns, BwLine, OutputMode, ReportHeader, Side, Style, has_new_post_send};
use perftest::stats::latency;

#[test]
fn titles() {
    let mut h = ReportHeader::new(Verb::Atomic, true, "mlx5_0");
    h.atomic_type = AtomicType::CmpAndSwap;
    h.bidirectional = true;
    h.post_list = 4;
    let s = header(&h, Style::V629);
    assert!(s.contains("\n                    Atomic CMP_AND_SWAP Bidirectional Post List BW Test\n"), "{s}");
    assert!(s.contains(" Post List       : 4\n"));
    let mut h = ReportHeader::new(Verb::Send, false, "rxe0");
    h.multicast = true;
    h.connection = ConnType::Ud;
    h.events_comp = Some(0);
    let s = header(&h, Style::V606);
    assert!(
        s.contains("Send Latency Multicast Test\n Test with events. Using rxe0_comp0\n MultiCast runs on UD!\n"),
        "{s}"
    );
    assert!(s.contains(" Connection type : UD\t\tUsing SRQ      : OFF\n"));
}

#[test]
fn header_options() {
    let mut h = ReportHeader::new(Verb::Write, true, "rxe0");
    h.pcie_relax_order = None;
    h.lock_free = None;
    h.cqe_poll = None;
    h.rdma_cm_qps = true;
    h.data_ex_rdma_cm = true;
    h.tos = Some(96);
    let s = header(&h, Style::V629);
    assert!(s.contains(" PCIe relax order: Unsupported\t\tLock-free\t: Unsupported\n"));
    assert!(s.contains(" CQE Poll Batch  : Dynamic\n"));
    assert!(s.contains(" Data ex. method : rdma_cm \tTOS    : 96\n"));
    let s = header(&h, Style::V606);
    assert!(s.contains(" PCIe relax order: Unsupported\n ibv_wr* API     : OFF\n"));
    assert!(!s.contains("CQE"));
}

/// perftest built with ROCm (HAVE_ROCM in 6.06, rocm_memory_supported() in 6.29) prints
/// ` Use ROCm memory : ON|OFF` between `rdma_cm QPs` and `Data ex. method`; without it no line.
#[test]
fn rocm_memory_line_as_a_rocm_build() {
    let mut h = ReportHeader::new(Verb::Write, true, "rxe0");
    for style in [Style::V606, Style::V629] {
        assert!(!header(&h, style).contains("ROCm"));
    }
    h.rocm_memory = Some(true);
    for style in [Style::V606, Style::V629] {
        assert!(header(&h, style).contains(" rdma_cm QPs\t : OFF\n Use ROCm memory : ON\n Data ex. method : Ethernet"));
    }
    h.rocm_memory = Some(false);
    assert!(header(&h, Style::V629).contains(" Use ROCm memory : OFF\n"));
}

#[test]
fn address_variants() {
    let k = KeyMsg { lid: 5, out_reads: 16, qpn: 0, psn: 0xa, rkey: 0, vaddr: 0, srqn: 0x77, ..Default::default() };
    let show = AddrShow { verb: Verb::Read, rdma_cm: false, srqn: true, gid: false, mgid: false, dlid: None };
    assert_eq!(
        address_line(Side::Local, &k, &show),
        " local address: LID 0x05 QPN 000000 PSN 0x000a OUT 0x10 RKey 00000000 VAddr 0000000000000000 SRQn 0x000077\n"
    );
    let show = AddrShow { verb: Verb::Send, rdma_cm: false, srqn: false, gid: false, mgid: true, dlid: Some(9) };
    assert_eq!(
        address_line(Side::Remote, &k, &show),
        " remote address: LID 0x09 QPN 000000 PSN 0x000a\n MGID: 00:00:00:00:00:00:00:00:00:00:00:00:00:00:00:00\n"
    );
}

#[test]
fn bw_variants() {
    let c = BwColumns { gbits: true, per_port: false, cpu_util: true };
    assert_eq!(
        bw_result_header(Style::V629, c),
        format!(
            "{}{}",
            perftest::report::DASH_LINE,
            " #bytes     #iterations    BW peak[Gb/sec]    BW average[Gb/sec]   MsgRate[Mpps]    CPU_Util[%]\n"
        )
    );
    let l = BwLine { size: 2, iters: 5000, bw_peak: 0.05, bw_avg: 0.04, msg_rate: 2.5, ..Default::default() };
    // high-precision layout: %-7lu, 4 sp, %lu, 11 sp, then %-7.6f separated by 12 spaces
    assert_eq!(
        bw_result_line(Style::V629, c, &l, Some(12.5), OutputMode::Full),
        " 2          5000           0.050000            0.040000            2.500000\t    12.50\n"
    );
    let l = BwLine {
        size: 65536,
        iters: 5000,
        bw_peak: 11483.93,
        bw_avg: 11483.38,
        msg_rate: 0.183734,
        ..Default::default()
    };
    assert_eq!(
        bw_result_line(Style::V629, BwColumns::default(), &l, None, OutputMode::Full),
        " 65536      5000             11483.93            11483.38\t\t     0.183734\n"
    );
    assert_eq!(bw_result_line(Style::V629, BwColumns::default(), &l, None, OutputMode::Bandwidth), "11483.380000\n");
    assert_eq!(bw_result_line(Style::V606, BwColumns::default(), &l, None, OutputMode::MessageRate), "0.183734\n");
    let pp = BwColumns { per_port: true, ..Default::default() };
    assert!(bw_result_header(Style::V606, pp).ends_with(
        "MsgRate[Mpps]   BW Port1[MB/sec]   MsgRate Port1[Mpps]   BW Port2[MB/sec]   MsgRate Port2[Mpps]\n"
    ));
}

#[test]
fn lat_variants() {
    let r = latency(&[0, 10, 30, 60, 100, 150, 210], 1.0, 1).unwrap();
    let s = lat_report(2, 7, &r, true, true, false, None, OutputMode::Full);
    let want = format!(
        "#, usec\n1, 10\n2, 20\n3, 30\n4, 40\n5, 50\n6, 60\n#, usec\n1, 10\n2, 20\n3, 30\n4, 40\n{}{}",
        lat_result_header(false, false),
        " 2       7          10.00          50.00        25.00    \t       25.00       \t11.18  \t\t50.00   \t\t50.00  \n"
    );
    assert_eq!(s, want);
    assert_eq!(lat_report(2, 7, &r, false, false, true, None, OutputMode::Latency), "25.000000\n");
    assert_eq!(
        lat_duration_line(2, 123456, 1.5, 333333.33, None, OutputMode::Full),
        " 2             123456            1.50           333333.33\n"
    );
    assert!(lat_result_header(true, true)
        .ends_with(" #bytes        #iterations       t_avg[usec]    tps average    CPU_Util[%]\n"));
}

#[test]
fn json_variants() {
    let mut h = ReportHeader::new(Verb::Send, false, "rxe0");
    h.is_client = false;
    h.rx_depth = 512;
    let lat = |t_stdev: f64, p99: f64| JsonResults::Lat {
        size: 2,
        iters: 1000,
        t_min: 1.0,
        t_max: 4.0,
        t_typical: 1.5,
        t_avg: 1.6,
        t_stdev,
        p99,
        p99_9: 4.0,
    };
    let r = lat(0.1, 3.0);
    let j = json_report(&h, &r, Style::V629, Some(7.0), OutputMode::Full);
    let v: serde_json::Value = serde_json::from_str(&j).expect("valid JSON");
    assert_eq!(v["test_info"]["test"], "Send_Latency_Test");
    assert_eq!(v["test_info"]["RX_depth"], 512);
    assert_eq!(v["results"]["percentile_99.9"], 4.0);
    assert_eq!(v["results"]["CPU_util"], 7.0);
    assert!(j.ends_with("\"percentile_99.9\": 4.00,\n\"CPU_util\": 7.00\n}\n}\n"), "{j}");
    let j = json_report(&h, &r, Style::V606, None, OutputMode::Full);
    assert!(j.contains("test: Send_Latency_Test,\n"));
    assert!(j.ends_with("percentile_99.9: 4.00,\n},\n}\n"), "{j}");
    // --output=bandwidth quirk: stray comma (6.29) kept byte-exact.
    let b = JsonResults::Bw { size: 8, iters: 1, bw_peak: 0.0, bw_avg: 1.5, msg_rate: 0.1, high_precision: false };
    let j = json_report(&ReportHeader::new(Verb::Write, true, "rxe0"), &b, Style::V629, None, OutputMode::Bandwidth);
    assert!(j.ends_with("\"results\": {\n\"bw_avg\": 1.500000,\n\n}\n}\n"), "{j}");
    // A statistic that is not a number is null, so the rest of the report still parses.
    let nan = lat(f64::NAN, f64::INFINITY);
    let j = json_report(&h, &nan, Style::V629, None, OutputMode::Full);
    let v: serde_json::Value = serde_json::from_str(&j).expect("valid JSON with a NaN stdev");
    assert!(v["results"]["t_stdev"].is_null() && v["results"]["percentile_99"].is_null(), "{j}");
    assert_eq!(v["results"]["t_typical"], 1.5);
    let d = JsonResults::LatDuration { size: 2, iters: 10, t_avg: 1.0, tps: 2.0 };
    let j = json_report(&h, &d, Style::V629, None, OutputMode::Full);
    assert!(j.ends_with("\"t_avg\": 1.00,\n\"tps_average\": 2.00\n}\n}\n"), "{j}");
}

#[test]
fn report_both_blocks_follow_perftest() {
    use perftest::report::report_both_blocks;
    let c = BwColumns::default();
    let dash = "-".repeat(87) + "\n";
    let titles = " #bytes     #iterations    BW peak[MB/sec]    BW average[MB/sec]   MsgRate[Mpps]\n";
    let s = report_both_blocks(Style::V606, c, false, "LOCAL\n", "REMOTE\n");
    let want = format!("{dash}\n Local results: \n{dash}{titles}LOCAL\n{dash}\n Remote results: \n{dash}{titles}REMOTE\n");
    assert_eq!(s, want);
    // ib_atomic_bw's titles have no space before the newline.
    let s = report_both_blocks(Style::V606, c, true, "L\n", "R\n");
    assert!(s.contains("\n Local results:\n") && s.contains("\n Remote results:\n"), "{s}");
    // --cpu_util adds the column title.
    let c = BwColumns { cpu_util: true, ..c };
    let s = report_both_blocks(Style::V606, c, false, "L\n", "R\n");
    assert_eq!(s.matches("MsgRate[Mpps]    CPU_Util[%]\n").count(), 2, "{s}");
}

#[test]
fn aes_xts_lines_sit_between_rx_depth_and_cq_moderation() {
    // perftest 6.06 ctx_print_test_info: after TX/RX depth (and DCS), before CQ Moderation
    let mut h = ReportHeader::new(Verb::Send, true, "mlx5_0");
    h.is_client = true;
    h.bidirectional = true;
    h.rx_depth = 512;
    h.cq_mod = 100;
    h.aes_xts = Some((3, 4096));
    let s = header(&h, Style::V606);
    assert!(
        s.contains(
            " RX depth        : 512\n Number of data encryption keys  : 3\n Block Size      : 4096\n CQ Moderation   : 100\n Mtu"
        ),
        "{s}"
    );
    // latency tests: no CQ Moderation, the lines stay before Mtu
    let mut h = ReportHeader::new(Verb::Read, false, "mlx5_0");
    h.aes_xts = Some((1, 512));
    let s = header(&h, Style::V606);
    assert!(s.contains(" Number of data encryption keys  : 1\n Block Size      : 512\n Mtu             : "), "{s}");
    h.aes_xts = None;
    assert!(!header(&h, Style::V606).contains("encryption"));
}

#[test]
fn dcs_lines_sit_before_the_aes_xts_lines() {
    // perftest 6.06 ctx_print_test_info: " DCS num streams", then " DCS active num streams", each
    // only when non-zero, after RX depth and before the AES-XTS lines
    let mut h = ReportHeader::new(Verb::Write, true, "mlx5_0");
    h.is_client = true;
    h.cq_mod = 100;
    h.dci_streams = (3, 2);
    h.aes_xts = Some((1, 512));
    let s = header(&h, Style::V606);
    assert!(
        s.contains(" TX depth        : 128\n DCS num streams : 3\n DCS active num streams : 2\n Number of data encryption keys  : 1\n"),
        "{s}"
    );
    h.dci_streams = (0, 0);
    assert!(!header(&h, Style::V606).contains("DCS"));
}

#[test]
fn ibv_wr_api_is_on_for_the_devices_perftest_drives_through_it() {
    // 6.06's verify_params_with_device_context by ib_dev_name's vendor_part_id map
    for id in [4113, 4115, 4116, 4119, 4123, 4125, 4126, 4127, 4129, 41682, 41686, 41692] {
        assert!(has_new_post_send(id), "{id}");
    }
    // rxe (0), ConnectX-3 (4099, 4103), unmapped ids next to the list
    for id in [0, 4099, 4103, 4114, 4128, 4130, 41684] {
        assert!(!has_new_post_send(id), "{id}");
    }
    let mut h = ReportHeader::new(Verb::Write, true, "mlx5_0");
    h.new_post_send = true;
    assert!(header(&h, Style::V606).contains(" ibv_wr* API     : ON\n"));
}
