//! The eight perftest tools end to end: command line → device → out-of-band session (the
//! tool's exact plan of exchanges) → verbs resources → engine loops → statistics → report lines,
//! in perftest 6.06's output order. Generic over the provider inside [`providers::open`], so the
//! data path is static calls.

use std::io::Write;
use std::sync::Arc;
use std::time::Duration;

use bench_core::settings::RunSettings;
use providers::ProviderSettings;
use uverbs::objects::Context;
use uverbs::provider::Provider;

use crate::cm_session;
use crate::oob::{Listener, OobConfig, OobError};
use crate::params::{self, Connection, Output, ParseOutcome, Params, TestMethod, Tool};
use crate::report::{self, Style};

/// The `--out_json` layout, whatever the persona (see `SideRun::write_json`).
const JSON_STYLE: Style = Style::V629;

mod adopt;
mod bound;
mod limits;
mod numa;
mod record;
pub mod header;
pub mod negotiate;
mod prepare;
mod setup;
mod side;
use side::run_with_context;


/// Give up on a data path that makes no progress for this long (the VM is ~50× slow);
/// `RPERFTEST_STALL_TIMEOUT` (seconds) overrides it. See docs/faults.md.
const STALL_DEFAULT: Duration = Duration::from_secs(60);
/// Environment variable: data-path stall timeout in seconds.
pub const ENV_STALL_TIMEOUT: &str = "RPERFTEST_STALL_TIMEOUT";
/// Bound of every out-of-band read during setup (version … key exchanges, before the result
/// header), when the peer has nothing slow to do; `RPERFTEST_OOB_TIMEOUT` (seconds) overrides
/// it. During the measurement the bound grows with the test (the peer may be running it).
const OOB_SETUP_DEFAULT: Duration = Duration::from_secs(30);
/// Environment variable: OOB setup-exchange timeout in seconds.
pub const ENV_OOB_TIMEOUT: &str = "RPERFTEST_OOB_TIMEOUT";

/// A timeout in seconds from the environment (`value` is the variable's content, if set):
/// a positive number (fractions allowed, at most a day), else an error naming the variable.
pub fn timeout_setting(name: &str, value: Option<&str>, default: Duration) -> Result<Duration, String> {
    let Some(v) = value else { return Ok(default) };
    match v.trim().parse::<f64>() {
        Ok(s) if s.is_finite() && s > 0.0 && s <= 86_400.0 => Ok(Duration::from_secs_f64(s)),
        _ => Err(format!("{name}={v:?} is not a timeout: give seconds, a number > 0 and at most 86400 (e.g. {name}=60)")),
    }
}

/// The timeout the program installed under `name` ([`crate::settings`]), else `default`.
fn installed_timeout(name: &str, value: Option<&str>, default: Duration) -> Result<Duration, ToolError> {
    timeout_setting(name, value, default).map_err(|e| ToolError::new(1, e))
}

/// A failure: what to print (already perftest-like lines) and the exit status.
#[derive(Debug, Clone)]
pub struct ToolError {
    pub code: i32,
    pub msg: String,
}

impl ToolError {
    fn new(code: i32, msg: impl Into<String>) -> Self {
        ToolError { code, msg: msg.into() }
    }
}

impl From<OobError> for ToolError {
    fn from(e: OobError) -> Self {
        let code = match e {
            OobError::Interrupted { .. } => bench_core::signal::exit_code(bench_core::signal::signal_number()),
            _ => 1,
        };
        let msg = match (&e, e.perftest_lines()) {
            // NEGOTIATE found a difference: 6.29's two lines exactly, as both its sides print.
            (OobError::Mismatch { .. }, Some(l)) => l.trim_end().to_string(),
            (_, Some(l)) => format!("{}{}", l, e),
            (_, None) => e.to_string(),
        };
        ToolError::new(code, msg)
    }
}

/// Where a side's stdout goes (the loopback server's is discarded).
#[derive(Clone, Copy)]
struct Out {
    quiet: bool,
    /// `--output=…`: only the one number is printed.
    only_result: bool,
}

impl Out {
    fn text(&self, s: &str) {
        if self.quiet || self.only_result {
            return;
        }
        let mut o = std::io::stdout().lock();
        let _ = o.write_all(s.as_bytes());
        let _ = o.flush();
    }
    fn result(&self, s: &str) {
        if self.quiet {
            return;
        }
        let mut o = std::io::stdout().lock();
        let _ = o.write_all(s.as_bytes());
        let _ = o.flush();
    }
    fn err(&self, s: &str) {
        if self.quiet {
            return;
        }
        let mut e = std::io::stderr().lock();
        let _ = e.write_all(s.as_bytes());
    }
}

/// Exit status of a failed run loop (docs/perftest-wire.md, "Exit status").
fn run_fail_code(p: &Params) -> i32 {
    match p.tool {
        Tool::SendBw | Tool::SendLat | Tool::ReadLat | Tool::AtomicLat => 17,
        Tool::ReadBw if p.test_method == TestMethod::All => 17,
        _ => 1,
    }
}

fn device_fail_code(tool: Tool) -> i32 {
    match tool {
        Tool::ReadBw | Tool::AtomicBw => 7,
        _ => 1,
    }
}

/// Option values that need a look at the host before anything else happens (`-g`'s MGID,
/// `--source_ip`): one line naming the option and why (exit 1). Every option perftest 6.06's
/// `--help` lists is implemented now; the parser refuses the few other features it lacks.
pub fn host_option_problem(p: &Params) -> Option<String> {
    if p.use_mcg {
        if let Some(Err(e)) = p.mgid.as_deref().map(crate::mcast::parse_mgid) {
            return Some(e);
        }
    }
    if let Err(e) = crate::oob::source::from_option(p.dev.source_ip.as_deref()) {
        return Some(e);
    }
    None
}

/// `--source_ip`/`--bind_source_ip` (checked by [`host_option_problem`] before the run).
fn source_ip(p: &Params) -> Option<std::net::IpAddr> {
    p.dev.source_ip.as_deref().and_then(|s| crate::oob::source::parse(s).ok())
}

/// `-w`/`-y` (perftest's verifier limits) against the last BW line printed: perftest's
/// messages; `-y` is only checked together with `-w`, as in perftest (its quirk).
fn limits_verdict(p: &Params, last: Option<(f64, f64)>) -> Option<&'static str> {
    let (Some(bw_limit), Some((bw, rate))) = (p.report.limit_bw, last) else { return None };
    if bw < bw_limit {
        return Some("Error: BW result is below bw limit");
    }
    match p.report.limit_msgrate {
        Some(m) if rate < m => Some("Error: Msg rate  is below msg_rate limit"),
        _ => None,
    }
}

/// `rperftest ib_write_bw …`: the whole tool, with what the program chose from outside the
/// command line (`settings`) and for opening the device (`providers`); returns the exit status.
pub fn run_tool(tool: Tool, args: &[String], settings: &RunSettings, providers: &ProviderSettings) -> i32 {
    let p = match params::parse_run(tool, args, settings, providers) {
        Ok(ParseOutcome::Run(p)) => p,
        Ok(ParseOutcome::Help(s)) => {
            print!("{s}");
            return params::EXIT_HELP;
        }
        Ok(ParseOutcome::Version(s)) => {
            print!("{s}");
            return params::EXIT_VERSION;
        }
        Err(e) => {
            if e.shows_usage() {
                eprintln!(" Invalid Command or flag.");
                eprintln!(" Please check command line and run again.\n");
                eprintln!("{e}");
                if let Some(h) = &e.hint {
                    eprintln!("{h}");
                }
                print!("{}", params::usage_for(params::persona_hint(args, settings.persona.as_deref()), tool, tool.name()));
            } else {
                eprintln!("{e}");
            }
            return e.exit_code();
        }
    };
    if let Some(msg) = host_option_problem(&p) {
        eprintln!("{msg}");
        return 1;
    }
    for n in &p.notices {
        if n.to_stderr {
            eprint!("{}", n.text);
        } else {
            print!("{}", n.text);
        }
    }
    let _ = std::io::stdout().flush();
    // Ctrl-C/SIGTERM from here on stop the run cleanly (resources dropped, one line, 128+sig).
    bench_core::signal::install();
    if p.loopback {
        return run_loopback(tool, args, settings, providers);
    }
    let mut p = p;
    if p.adopt {
        p.cmdline = args.to_vec();
    }
    let out = Out { quiet: false, only_result: p.report.output != Output::Full };
    match run_side(&p, out, None) {
        Ok(()) => 0,
        Err(e) => {
            let _ = std::io::stdout().flush();
            eprintln!("{}", e.msg.trim_end());
            e.code
        }
    }
}

/// `--loopback`: the server in a thread (output discarded), the client here, over 127.0.0.1.
fn run_loopback(tool: Tool, args: &[String], settings: &RunSettings, providers: &ProviderSettings) -> i32 {
    let base: Vec<String> = args.iter().filter(|a| a.as_str() != "--loopback").cloned().collect();
    let reparse = |extra: &[&str]| -> Result<Box<Params>, ToolError> {
        let mut a = base.clone();
        a.extend(extra.iter().map(|s| s.to_string()));
        match params::parse_run(tool, &a, settings, providers) {
            Ok(ParseOutcome::Run(p)) => Ok(p),
            Ok(_) => Err(ToolError::new(1, "unexpected help/version")),
            Err(e) => Err(ToolError::new(e.exit_code(), e.to_string())),
        }
    };
    let server_p = match reparse(&[]) {
        Ok(p) => p,
        Err(e) => {
            eprintln!("{}", e.msg);
            return e.code;
        }
    };
    let cfg = OobConfig {
        port: 0,
        bind_addr: Some(std::net::IpAddr::V4(std::net::Ipv4Addr::LOCALHOST)),
        accept_timeout: Some(Duration::from_secs(60)),
        ..OobConfig::default()
    };
    let listener = match Listener::bind(&cfg) {
        Ok(l) => l,
        Err(e) => {
            eprintln!("{e}");
            return 1;
        }
    };
    let port = listener.port().to_string();
    // The client's -p is the listener's port; drop a user -p from the client's copy.
    let mut client_args: Vec<String> = Vec::new();
    let mut it = base.iter().peekable();
    while let Some(a) = it.next() {
        if a == "-p" || a == "--port" {
            it.next();
            continue;
        }
        if a.starts_with("--port=") || (a.starts_with("-p") && a.len() > 2 && !a.starts_with("--")) {
            continue;
        }
        client_args.push(a.clone());
    }
    client_args.extend(["-p".to_string(), port, "127.0.0.1".to_string()]);
    let client_p = match params::parse_run(tool, &client_args, settings, providers) {
        Ok(ParseOutcome::Run(p)) => p,
        Ok(_) => return 1,
        Err(e) => {
            eprintln!("{e}");
            return e.exit_code();
        }
    };
    let server = std::thread::spawn(move || {
        let out = Out { quiet: true, only_result: false };
        run_side(&server_p, out, Some(listener))
    });
    let out = Out { quiet: false, only_result: client_p.report.output != Output::Full };
    let rc = match run_side(&client_p, out, None) {
        Ok(()) => 0,
        Err(e) => {
            let _ = std::io::stdout().flush();
            eprintln!("{}", e.msg.trim_end());
            e.code
        }
    };
    match server.join() {
        Ok(Ok(())) => rc,
        Ok(Err(e)) => {
            eprintln!("loopback server: {}", e.msg.trim_end());
            if rc == 0 {
                e.code
            } else {
                rc
            }
        }
        Err(_) => {
            eprintln!("loopback server thread panicked");
            1
        }
    }
}

fn run_side(p: &Params, out: Out, listener: Option<Listener>) -> Result<(), ToolError> {
    if p.conn.use_rdma_cm {
        return run_side_cm(p, out, listener.is_some());
    }
    let dev = uverbs::discovery::find_device(p.dev.ib_dev.as_deref()).map_err(|e| {
        let msg = match &p.dev.ib_dev {
            Some(n) => format!("IB device {n} not found\n Unable to find the Infiniband/RoCE device\n{e}"),
            None => format!(" Did not detect devices \n If device exists, check if driver is up\n{e}"),
        };
        ToolError::new(device_fail_code(p.tool), msg)
    })?;
    if p.connection == params::Connection::Srd {
        if let Some(line) = setup::srd_refusal(&dev.ibdev, dev.driver_id, p) {
            return Err(ToolError::new(1, line));
        }
    }
    let user = SideUser { p, out, listener, cm: None };
    open_side(p, &dev.desc(), user)
}

/// Open the device for the run (`--aes_xts`: perftest's DEVX open and crypto login).
fn open_side(p: &Params, desc: &uverbs::provider::DeviceDesc, user: SideUser<'_>) -> Result<(), ToolError> {
    // perftest (after 6.29): CPUs and memory on the device's NUMA node before anything is allocated.
    numa::bind(p, &desc.ibdev)?;
    if p.aes.enabled && p.verb != params::Verb::Atomic {
        return crate::engine::crypto::open_devx(desc, &p.providers, p.aes.credentials_path.as_deref().unwrap_or(""), user)
            .map_err(|m| ToolError::new(1, m))?;
    }
    // perftest: a device it cannot find is exit 7 for read_bw/atomic_bw, but a device it cannot
    // open (`ctx_open_device`) is FAILURE (1) for every tool.
    providers::open(desc, &p.providers, user).map_err(|e| ToolError::new(1, format!(" Couldn't get context for the device\n{e}")))?
}

/// `-z`/`-R`: the control connection over rdma_cm comes first and decides the device (the one
/// the server's address resolves to; `-d` must agree when given).
fn run_side_cm(p: &Params, out: Out, loopback: bool) -> Result<(), ToolError> {
    if loopback {
        return Err(ToolError::new(1, " --loopback is not supported with -z/-R (rdma_cm needs the RDMA interface's address)"));
    }
    if !matches!(p.connection, Connection::Rc | Connection::Ud) {
        return Err(ToolError::new(1, " rperftest supports -z/-R with RC and UD connections only (-c RC or -c UD)"));
    }
    if p.aes.enabled && p.verb != params::Verb::Atomic {
        // perftest opens the device (DEVX, crypto login) before the rdma_cm connection: check
        // that here too, on the -d device, so a device without it fails at once.
        let dev = uverbs::discovery::find_device(p.dev.ib_dev.as_deref()).map_err(|e| ToolError::new(device_fail_code(p.tool), e.to_string()))?;
        crate::engine::crypto::check_devx(&dev.desc(), &p.providers, p.aes.credentials_path.as_deref().unwrap_or("")).map_err(|m| ToolError::new(1, m))?;
    }
    let start = if let Some(host) = p.server_name.as_deref() {
        let dst = cm_session::resolve_host(host, p.conn.port, p.dev.ipv6).map_err(|e| ToolError::new(1, e))?;
        cm_session::start_client(dst, source_ip(p), p.dev.qp_timeout)
            .map_err(|e| ToolError::new(1, format!(" Unable to perform rdma_client function\n{e}")))?
    } else {
        out.text(report::WAITING_FOR_CLIENT);
        cm_session::start_server(source_ip(p), p.conn.port, p.dev.ipv6, None)
            .map_err(|e| ToolError::new(1, format!(" Unable to perform rdma_server function\n{e}")))?
    };
    let dev = start.device().clone();
    if let Some(want) = p.dev.ib_dev.as_deref() {
        if want != dev.info.ibdev {
            return Err(ToolError::new(
                1,
                format!(
                    " rdma_cm: the connection uses {} (port {}), not {want} (-d); give the IP of {want}'s netdev or drop -d",
                    dev.info.ibdev, dev.port
                ),
            ));
        }
    }
    let user = SideUser { p, out, listener: None, cm: Some(start) };
    open_side(p, &dev.info.desc(), user)
}

struct SideUser<'a> {
    p: &'a Params,
    out: Out,
    listener: Option<Listener>,
    cm: Option<cm_session::CmStart>,
}

impl providers::ContextUser for SideUser<'_> {
    type Output = Result<(), ToolError>;
    fn run<P: Provider>(self, ctx: Arc<Context<P>>) -> Self::Output {
        run_with_context(self.p, self.out, self.listener, self.cm, ctx, None)
    }
    fn run_mlx5(self, ctx: Arc<Context<providers::mlx5::Mlx5>>) -> Self::Output {
        run_with_context(self.p, self.out, self.listener, self.cm, ctx, Some(&crate::engine::dv::Direct))
    }
}

#[cfg(test)]
mod tests {
    use super::setup::{cpu_between, empty_gid_message, limits_problem, port_number_problem, DevLimits};
    use super::*;
    use crate::params::parsed;

    #[test]
    fn the_compared_options_are_the_ones_that_shape_the_run() {
        let get = |args: &[&str], t: Tool| {
            let p = parsed(t, args);
            adopt::option_summary(&p).into_iter().map(|(k, v)| format!("{k}={v}")).collect::<Vec<_>>().join(" ")
        };
        assert_eq!(
            get(&["-s", "4096", "-q", "2", "-t", "64", "-m", "1024"], Tool::WriteBw),
            "tool=ib_write_bw -c=RC -q=2 -a=off --run_infinitely=off -b=off -D=off -t=64 -m=1024 -s=4096 -n=5000"
        );
        // -a runs every size and -D any number of iterations: -s and -n are not compared then.
        let a = get(&["-a", "-c", "UC"], Tool::WriteBw);
        assert!(a.contains("-a=on") && a.contains("-c=UC") && !a.contains("-s="), "{a}");
        let d = get(&["-D", "5"], Tool::WriteBw);
        assert!(d.contains("-D=5") && !d.contains("-n="), "{d}");
        assert!(get(&[], Tool::AtomicBw).ends_with("-A=FETCH_AND_ADD"));
    }

    #[test]
    fn adopt_takes_the_clients_test_options_and_nothing_else() {
        let srv = |args: &[&str]| {
            let mut p = parsed(Tool::WriteBw, args);
            p.cmdline = args.iter().map(|s| s.to_string()).collect();
            p
        };
        let client = |args: &[&str]| {
            adopt::option_summary(&parsed(Tool::WriteBw, args)).into_iter().map(|(k, v)| (k.to_string(), v)).collect::<Vec<_>>()
        };
        let p = srv(&["-d", "rxe0", "-x", "1", "--adopt"]);
        let args = adopt::adopted_cmdline(&p, &client(&["-s", "4096", "-q", "2", "-n", "500"])).unwrap().unwrap();
        assert_eq!(args.join(" "), "-d rxe0 -x 1 --adopt -q 2 -s 4096 -n 500");
        let a = adopt::adopted_cmdline(&p, &client(&["-a", "-m", "1024"])).unwrap().unwrap();
        assert_eq!(a.join(" "), "-d rxe0 -x 1 --adopt -a -m 1024");
        let d = adopt::adopted_cmdline(&p, &client(&["-D", "3"])).unwrap().unwrap();
        assert_eq!(d.join(" "), "-d rxe0 -x 1 --adopt -D 3");
        // -c, -b and the tool are not adopted: the ordinary mismatch lines report them.
        assert_eq!(adopt::adopted_cmdline(&p, &client(&["-c", "UC"])).unwrap(), None);
        assert_eq!(adopt::adopted_cmdline(&p, &client(&["-b"])).unwrap(), None);
        // A server that sets an adopted option itself is told so.
        for own in [&["--adopt", "-s", "64"][..], &["--adopt", "--size=64"], &["--adopt", "-q2"]] {
            let e = adopt::adopted_cmdline(&srv(own), &client(&["-s", "4096"])).unwrap_err();
            assert!(e.starts_with("--adopt: the server takes -s, -q, -n, -t, -m, -a and -D from the client"), "{e}");
        }
    }

    #[test]
    fn exit_codes_follow_perftest() {
        let p = |t: Tool| Params::defaults(t);
        assert_eq!(run_fail_code(&p(Tool::SendBw)), 17);
        assert_eq!(run_fail_code(&p(Tool::WriteBw)), 1);
        assert_eq!(run_fail_code(&p(Tool::ReadLat)), 17);
        assert_eq!(device_fail_code(Tool::ReadBw), 7);
        assert_eq!(device_fail_code(Tool::WriteLat), 1);
    }

    #[test]
    fn cpu_util_needs_both_window_readings() {
        assert_eq!(cpu_between([None, None]), None);
        assert_eq!(cpu_between([Some((10, 100)), None]), None);
        // Δuser 30, Δidle 90 → 25 %.
        assert_eq!(cpu_between([Some((10, 100)), Some((40, 190))]), Some(25.0));
        // No ticks in the window: 0, not NaN.
        assert_eq!(cpu_between([Some((5, 5)), Some((5, 5))]), Some(0.0));
    }


    #[test]
    fn host_dependent_option_values_are_checked_in_one_line() {
        assert_eq!(host_option_problem(&parsed(Tool::WriteBw, &["-l", "4", "-Q", "2", "-m", "1024", "-n", "8"])), None);
        // --source_ip: checked, not refused (TEST-NET-3 is on no interface; 127.0.0.1 always is).
        assert_eq!(
            host_option_problem(&parsed(Tool::WriteBw, &["--bind_source_ip", "203.0.113.9"])).as_deref(),
            Some(" --source_ip 203.0.113.9: no local interface has this address; give one that `ip addr` lists, or leave the option out")
        );
        assert_eq!(host_option_problem(&parsed(Tool::WriteBw, &["--source_ip", "127.0.0.1"])), None);
        // Implemented since: the SW and HW rate limiters, --report-both, --dont_xchg_versions,
        // --use-null-mr (refused later, by the device, where it has no null MR).
        assert_eq!(host_option_problem(&parsed(Tool::WriteBw, &["--rate_limit=2", "--rate_limit_type=SW"])), None);
        assert_eq!(host_option_problem(&parsed(Tool::WriteBw, &["--rate_limit=10", "--rate_limit_type=HW"])), None);
        assert_eq!(host_option_problem(&parsed(Tool::WriteBw, &["--dont_xchg_versions"])), None);
        assert_eq!(host_option_problem(&parsed(Tool::ReadBw, &["--use-null-mr"])), None);
        assert_eq!(host_option_problem(&parsed(Tool::WriteBw, &["-b", "--report-both"])), None);
    }

    #[test]
    fn bw_and_msg_rate_limits_follow_perftest() {
        let p = parsed(Tool::WriteBw, &["-w", "100"]);
        assert_eq!(limits_verdict(&p, Some((99.0, 1.0))), Some("Error: BW result is below bw limit"));
        assert_eq!(limits_verdict(&p, Some((100.0, 1.0))), None);
        assert_eq!(limits_verdict(&p, None), None);
        // -y alone is never checked (perftest's quirk); with -w it is.
        let p = parsed(Tool::WriteBw, &["-y", "5"]);
        assert_eq!(limits_verdict(&p, Some((1.0, 1.0))), None);
        let p = parsed(Tool::WriteBw, &["-w", "1", "-y", "5"]);
        assert_eq!(limits_verdict(&p, Some((10.0, 1.0))), Some("Error: Msg rate  is below msg_rate limit"));
    }

    #[test]
    fn help_and_version_exit_1() {
        assert_eq!(run_tool(Tool::WriteBw, &["-V".to_string()], &RunSettings::default(), &ProviderSettings::default()), 1);
    }

    #[test]
    fn bad_option_exits_1() {
        assert_eq!(run_tool(Tool::WriteBw, &["--no-such-option".to_string()], &RunSettings::default(), &ProviderSettings::default()), 1);
    }

    #[test]
    fn timeout_settings_from_the_environment() {
        let d = Duration::from_secs(60);
        assert_eq!(timeout_setting(ENV_STALL_TIMEOUT, None, d), Ok(d));
        assert_eq!(timeout_setting(ENV_STALL_TIMEOUT, Some("5"), d), Ok(Duration::from_secs(5)));
        assert_eq!(timeout_setting(ENV_STALL_TIMEOUT, Some(" 0.5 "), d), Ok(Duration::from_millis(500)));
        for bad in ["0", "-1", "abc", "", "inf", "NaN", "100000"] {
            let e = timeout_setting(ENV_STALL_TIMEOUT, Some(bad), d).unwrap_err();
            assert!(e.starts_with("RPERFTEST_STALL_TIMEOUT="), "{e}");
            assert!(!e.contains('\n'));
        }
    }

    #[test]
    fn port_number_is_checked_against_the_port_count() {
        assert_eq!(port_number_problem("rxe0", 1, 1), None);
        assert_eq!(
            port_number_problem("rxe0", 2, 1).as_deref(),
            Some(" Port 2 (-i) does not exist: rxe0 has 1 port; use -i 1 or leave -i out")
        );
        assert_eq!(
            port_number_problem("mlx5_0", 3, 2).as_deref(),
            Some(" Port 3 (-i) does not exist: mlx5_0 has 2 ports; use -i 1 to -i 2")
        );
        assert!(port_number_problem("x", 0, 1).is_some());
    }

    #[test]
    fn empty_gid_lists_the_populated_indices() {
        assert_eq!(
            empty_gid_message("rxe0", 1, 5, 1024, &[0, 1]),
            " GID index 5 (-x) is empty on rxe0 port 1; populated indices: 0, 1 (rperftest devinfo -v lists them)"
        );
        let m = empty_gid_message("rxe0", 1, 200, 16, &[]);
        assert!(m.contains("beyond the GID table (16 entries)") && m.contains("none is populated"), "{m}");
        let many: Vec<u32> = (0..40).collect();
        assert!(empty_gid_message("d", 1, 99, 128, &many).contains("14, 15, …"));
    }

    #[test]
    fn limits_name_the_option_and_the_limit() {
        let l = DevLimits { max_msg_sz: 1 << 23, max_qp_wr: 1 << 14, max_cqe: 1 << 16, max_srq_wr: 1 << 14 };
        let mut p = Params::defaults(Tool::WriteBw);
        assert_eq!(limits_problem("rxe0", &p, &l), None);
        p.size = (1 << 23) + 1;
        assert_eq!(
            limits_problem("rxe0", &p, &l).as_deref(),
            Some(" Message size 8388609 (-s) is larger than the port's max_msg_sz 8388608 on rxe0; use -s 8388608 or less")
        );
        let mut p = Params::defaults(Tool::WriteBw);
        p.tx_depth = 20000;
        assert_eq!(
            limits_problem("rxe0", &p, &l).as_deref(),
            Some(" TX depth 20000 (-t) exceeds the device's max_qp_wr 16384 on rxe0; use -t 16384 or less")
        );
        let mut p = Params::defaults(Tool::SendBw);
        p.rx_depth = 20000;
        assert!(limits_problem("rxe0", &p, &l).unwrap().contains("RX depth 20000 (-r)"));
        let mut p = Params::defaults(Tool::WriteBw);
        p.num_qps = 8;
        p.tx_depth = 16384;
        assert!(limits_problem("rxe0", &p, &l).unwrap().contains("max_cqe 65536"));
        // A device that reports no limit is not checked.
        let none = DevLimits { max_msg_sz: 0, max_qp_wr: 0, max_cqe: 0, max_srq_wr: 0 };
        assert_eq!(limits_problem("d", &p, &none), None);
    }
}
