//! `rperftest`: one static binary for every tool. argv[0] (`ib_write_bw` …, busybox style) or
//! the first argument selects the tool; `devices`, `devinfo` and `selftest` are our own.

use std::process::ExitCode;
use env_settings::Settings;

#[forbid(unsafe_code)]
mod check_json;
mod cmtest;
#[forbid(unsafe_code)]
mod env_settings;
#[forbid(unsafe_code)]
mod plot_cmd;
mod selftest;


const TOOLS: [&str; 8] = [
    "ib_write_bw",
    "ib_write_lat",
    "ib_read_bw",
    "ib_read_lat",
    "ib_send_bw",
    "ib_send_lat",
    "ib_atomic_bw",
    "ib_atomic_lat",
];

/// argv[0] names of the small diagnostic tools (a link named `ibstat` runs `rperftest ibstat`).
const DIAG_LINKS: [(&str, &str); 4] = [
    ("show_gids", "gids"),
    ("rping", "rping"),
    ("ibdev2netdev", "ibdev2netdev"),
    ("ibstat", "ibstat"),
];

fn usage() -> String {
    format!(
        "usage: rperftest <command> [options]\n\
         \n\
         perftest tools (same flags, output and wire protocol as perftest; also run as a link named\n\
         after the tool):\n  {}\n\
         \n\
         They print what perftest 6.29 prints; --perftest-version 6.06 (or the environment\n\
         variable RPERFTEST_PERFTEST_VERSION=6.06) makes them print what Debian 12's perftest 6.06\n\
         prints. The wire adapts to the peer's version either way.\n\
         \n\
         own commands:\n  \
         devices            list RDMA devices (like ibv_devices)\n  \
         devinfo            device and port attributes (like ibv_devinfo)\n  \
         selftest           exercise every verb between two QPs on one device\n  \
         cm-ping            an RC connection through the kernel's rdma_cm, one SEND each way\n  \
         check-json         check that files are valid JSON (for hosts without jq or python)\n  \
         matrix             perftest between every pair of nodes and rails, over ssh or srun\n  \
         plot               draw runs (--out_json / --series files) as SVG or HTML\n  \
         compare            base against new runs per size; exit 1 on a regression\n  \
         qperf              qperf 0.4.11-compatible client and server (also as a link named qperf)\n\
         \n\
         diagnostic tools (also run as links named show_gids, ibdev2netdev, ibstat, rping):\n  \
         gids               the GID table, as show_gids prints it (--json too)\n  \
         ibdev2netdev       the netdev behind every RDMA port (-v for details)\n  \
         ibstat             CA and port state, as infiniband-diags' ibstat prints it\n  \
         rping              rdma-core's rping over rdma_cm (-s | -c -a ADDR), wire compatible\n  \
         doctor             why RDMA does not work here, and with PEER on the path to it (--serve there)\n\
         \n\
         run by matrix on the nodes: matrix-agent, matrix-exec, matrix-probe, matrix-wire, matrix-counters\n\
         \n\
         rperftest COMMAND --help describes each; rperftest --version prints the version.\n",
        TOOLS.join("\n  ")
    )
}

fn basename(s: &str) -> &str {
    s.rsplit('/').next().unwrap_or(s)
}

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().collect();
    let argv0 = args.first().map(|s| basename(s)).unwrap_or("rperftest");
    let (cmd, rest): (&str, &[String]) = if TOOLS.contains(&argv0) || argv0 == "qperf" {
        (argv0, &args[1..])
    } else if let Some((_, c)) = DIAG_LINKS.iter().find(|(link, _)| *link == argv0) {
        (c, &args[1..])
    } else if args.len() >= 2 {
        (args[1].as_str(), &args[2..])
    } else {
        eprint!("{}", usage());
        return ExitCode::from(2);
    };
    let settings = env_settings::install_from_env(cmd);
    let code = run(cmd, rest, &settings);
    ExitCode::from(code)
}

fn run(cmd: &str, rest: &[String], settings: &Settings) -> u8 {
    let open = &settings.providers;
    match cmd {
        "-V" | "--version" | "version" => {
            println!("rperftest {}", env!("CARGO_PKG_VERSION"));
            0
        }
        "-h" | "--help" | "help" => {
            print!("{}\n{}", usage(), perftest::params::extensions_help());
            0
        }
        c if TOOLS.contains(&c) => match perftest::params::Tool::from_name(c) {
            Some(t) => exit_u8(perftest::tool::run_tool(t, rest, &settings.run, open)),
            None => 2,
        },
        "qperf" => exit_u8(qperf::run(rest, open)),
        "check-json" => check_json::run(rest),
        "devices" => exit_u8(diag::devinfo::run_devices(rest)),
        "devinfo" => exit_u8(diag::devinfo::run_devinfo(rest, open)),
        "selftest" => selftest::run_selftest(rest, open),
        "cm-ping" => cmtest::run(rest, open),
        "matrix" => matrix::run(rest, &env_settings::matrix_env()),
        "plot" => plot_cmd::run_plot(rest),
        "compare" => plot_cmd::run_compare(rest),
        "gids" | "show_gids" => diag::gids::run(rest),
        "ibdev2netdev" => diag::ibdev2netdev::run(rest),
        "ibstat" => diag::ibstat::run(rest),
        "rping" => diag::rping::run(rest, open),
        "doctor" => diag::doctor::run(rest, open),
        // The two halves of `matrix` that run on the nodes.
        "matrix-agent" => matrix::agent::run(rest, &env_settings::matrix_env()),
        "matrix-exec" => matrix::exec::run(rest, &env_settings::matrix_env()),
        "matrix-probe" => matrix::probe::run(rest),
        "matrix-wire" => matrix::wire::run(rest),
        "matrix-counters" => matrix::counters::run(rest),
        other => {
            eprintln!("rperftest: unknown command '{other}'; run 'rperftest --help' for the list");
            2
        }
    }
}

/// Exit statuses are 0..=255 on Linux; rdma-core's tools use 255 for "not found".
fn exit_u8(code: i32) -> u8 {
    u8::try_from(code).unwrap_or(255)
}
