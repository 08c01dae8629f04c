//! `rperftest doctor [PEER]`: why RDMA does not work here, one line per check (`ok`, `warn`,
//! `FAIL`, `n/a`), each problem with the command that fixes it; `--json`; exit 0 only when
//! nothing FAILed. With PEER (where `rperftest doctor --serve` runs) it adds the TCP path, an
//! RC SEND, WRITE and READ over the GIDs both sides would use, the comparison of both sides'
//! ports, and the packet counters around the test. With `--gpu`, the GPUDirect RDMA checks
//! (`gpu`), and with PEER too an ib_write_bw with GPU memory both ways (`gpu_write`). See
//! docs/tools.md, "doctor".
//!
//! `local` reads everything through [`Env`]'s roots, so its checks are tested over a fake
//! sysfs, /proc and /dev; `peer` does the two-host part; `wire` is the peer message.

#[forbid(unsafe_code)]
pub mod local;
#[forbid(unsafe_code)]
pub mod gpu;
#[forbid(unsafe_code)]
pub mod gpu_write;
pub mod peer;
#[forbid(unsafe_code)]
pub mod report;
#[forbid(unsafe_code)]
pub mod wire;

use std::io::Write;
use std::net::IpAddr;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use clap::{value_parser, Arg, ArgAction, Command};
use providers::ProviderSettings;
use uverbs::discovery::{self, SysfsRoot};
use uverbs::objects::Context;
use uverbs::provider::Provider;

pub use local::{Env, Target};
use report::Check;

fn cli() -> Command {
    Command::new("rperftest doctor")
        .about("why RDMA does not work: local checks, and with PEER the path to it (rperftest doctor --serve there)")
        .arg(Arg::new("peer").value_name("PEER").help("host running 'rperftest doctor --serve' (or any perftest server, for the TCP check alone)"))
        .arg(Arg::new("serve").long("serve").action(ArgAction::SetTrue).help("answer one 'rperftest doctor PEER' from another host"))
        .arg(Arg::new("port").short('p').long("port").value_parser(value_parser!(u16)).default_value(peer::DEFAULT_PORT.to_string()).help("TCP port of the exchange"))
        .arg(Arg::new("dev").short('d').long("ib-dev").value_name("DEV").help("only this RDMA device"))
        .arg(Arg::new("ibport").short('i').long("ib-port").value_parser(value_parser!(u32).range(1..)).help("only this port (peer mode: default 1)"))
        .arg(Arg::new("gidx").short('x').long("gid-index").value_parser(value_parser!(u32)).help("the GID index the tools would be given (default: their own choice)"))
        .arg(Arg::new("gpu").long("gpu").action(ArgAction::SetTrue).help("also the GPUDirect RDMA checks: GPU driver, peer memory, dma-buf, IOMMU, ACS, GPU<->NIC distance and NUMA"))
        .arg(Arg::new("gpu_mem").long("gpu-mem").value_name("OPTION").allow_hyphen_values(true).help("--gpu with PEER or --serve: the ib_write_bw GPU memory option of the GPU peer WRITE (default --use_cuda=0 with an NVIDIA GPU, --use_rocm=0 with an AMD one), e.g. '--use_cuda=1 --use_cuda_dmabuf'"))
        .arg(Arg::new("json").long("json").action(ArgAction::SetTrue).help("print JSON instead of lines"))
        .arg(
            Arg::new("listen_timeout")
                .long("listen-timeout")
                .value_parser(value_parser!(u64).range(1..=86400))
                .value_name("SECS")
                .help("--serve: give up when no client came within SECS"),
        )
        .arg(Arg::new("persistent").short('P').long("persistent").action(ArgAction::SetTrue).help("--serve: serve clients one after another"))
}

/// Interface addresses (name, address), from the kernel.
fn system_ifaddrs() -> Vec<(String, IpAddr)> {
    let mut out = Vec::new();
    let mut head: *mut libc::ifaddrs = std::ptr::null_mut();
    // SAFETY: getifaddrs fills `head` with a list the C library allocated; it is walked while
    // alive (each node's name is a NUL-terminated string, each non-null ifa_addr a sockaddr of
    // the family it names, sized for it) and freed once with freeifaddrs below.
    unsafe {
        if libc::getifaddrs(&mut head) != 0 {
            return out;
        }
        let mut p = head;
        while !p.is_null() {
            let ifa = &*p;
            p = ifa.ifa_next;
            if ifa.ifa_addr.is_null() || ifa.ifa_name.is_null() {
                continue;
            }
            let name = std::ffi::CStr::from_ptr(ifa.ifa_name).to_string_lossy().into_owned();
            match i32::from((*ifa.ifa_addr).sa_family) {
                libc::AF_INET => {
                    let sa = &*(ifa.ifa_addr as *const libc::sockaddr_in);
                    out.push((name, IpAddr::from(u32::from_be(sa.sin_addr.s_addr).to_be_bytes())));
                }
                libc::AF_INET6 => {
                    let sa = &*(ifa.ifa_addr as *const libc::sockaddr_in6);
                    out.push((name, IpAddr::from(sa.sin6_addr.s6_addr)));
                }
                _ => {}
            }
        }
        libc::freeifaddrs(head);
    }
    out
}

fn open_rw(p: &Path) -> Result<(), String> {
    std::fs::OpenOptions::new().read(true).write(true).open(p).map(drop).map_err(|e| {
        let s = e.to_string();
        s.split(" (os error").next().unwrap_or(&s).to_string()
    })
}

/// The effective uid from `/proc/self/status`.
fn euid(proc_root: &Path) -> u32 {
    std::fs::read_to_string(proc_root.join("self/status"))
        .ok()
        .and_then(|s| s.lines().find_map(|l| l.strip_prefix("Uid:")).and_then(|v| v.split_whitespace().nth(1)?.parse().ok()))
        .unwrap_or(u32::MAX)
}

struct QueryMtu(u8);
impl providers::ContextUser for QueryMtu {
    type Output = Option<u32>;
    fn run<P: Provider>(self, ctx: Arc<Context<P>>) -> Option<u32> {
        ctx.query_port(self.0).ok().map(|pa| 128u32 << pa.legacy_resp.active_mtu.clamp(1, 5))
    }
}

fn system_active_mtu(dev: &str, port: u32, settings: &ProviderSettings) -> Option<u32> {
    let d = discovery::find_device(Some(dev)).ok()?;
    providers::open(&d.desc(), settings, QueryMtu(u8::try_from(port).ok()?)).ok().flatten()
}

impl Env {
    /// This host, its devices opened as `settings` choose.
    pub fn system(settings: &ProviderSettings) -> Env {
        let s = settings.clone();
        let proc_root = PathBuf::from("/proc");
        Env {
            sys: SysfsRoot::system(),
            uid: euid(&proc_root),
            proc_root,
            dev_root: PathBuf::from("/dev"),
            boot_root: PathBuf::from("/boot"),
            ifaddrs: system_ifaddrs(),
            open_rw: Box::new(open_rw),
            active_mtu: Box::new(move |dev, port| system_active_mtu(dev, port, &s)),
            providers: settings.clone(),
            run_tool: Box::new(run_own_tool),
        }
    }
}

fn emit(checks: &[Check], json: bool, out: &mut dyn Write) {
    let text = if json { report::render_json(checks) } else { report::render_text(checks) };
    let _ = out.write_all(text.as_bytes());
    let _ = out.flush();
}

/// `doctor` with its environment and outputs injected (the peer part talks to the network
/// and the real device).
pub fn main_with(env: &Env, args: &[String], out: &mut dyn Write, err: &mut dyn Write) -> u8 {
    let m = match cli_args::parse(cli(), "doctor", args, out, err) {
        Ok(m) => m,
        Err(code) => return code,
    };
    let target = Target {
        dev: m.get_one::<String>("dev").cloned(),
        port: m.get_one::<u32>("ibport").copied(),
        gid_index: m.get_one::<u32>("gidx").copied(),
    };
    let json = m.get_flag("json");
    let popts = peer::PeerOpts {
        target: target.clone(),
        port: m.get_one::<u16>("port").copied().unwrap_or(peer::DEFAULT_PORT),
        listen_timeout: m.get_one::<u64>("listen_timeout").map(|s| Duration::from_secs(*s)),
        persistent: m.get_flag("persistent"),
        providers: env.providers.clone(),
    };
    let peer_host = m.get_one::<String>("peer").cloned();
    if m.get_flag("serve") {
        if peer_host.is_some() {
            let _ = writeln!(err, "rperftest doctor: --serve takes no PEER (run 'rperftest doctor PEER' on the other host)");
            return 2;
        }
        let mut worst = 0u8;
        let r = peer::serve(&popts, &mut |c: &[Check]| {
            worst = worst.max(report::exit_code(c));
            emit(c, json, &mut std::io::stdout());
        });
        if r.is_ok() && m.get_flag("gpu") {
            let c = gpu_peer_write(env, &m, &popts, |mem, o| gpu_write::serve(mem, o, &*env.run_tool));
            worst = worst.max(report::exit_code(&c));
            emit(&c, json, out);
        }
        return match r {
            Ok(()) => worst,
            Err(e) => {
                let _ = writeln!(err, "rperftest doctor --serve: {}", report::one_line(&e));
                1
            }
        };
    }
    let mut checks = local::run_all(env, &target);
    if let Some(p) = &peer_host {
        checks.extend(peer::check(p, &popts));
    }
    if m.get_flag("gpu") {
        let roots = crate::gpu::host::Roots { sys: env.sys.clone(), proc_root: env.proc_root.clone(), boot: env.boot_root.clone() };
        checks.extend(gpu::checks(&roots));
        if let Some(p) = peer_host.as_deref() {
            checks.extend(gpu_peer_write(env, &m, &popts, |mem, o| gpu_write::client(p, mem, o, &*env.run_tool)));
        }
    }
    emit(&checks, json, out);
    report::exit_code(&checks)
}

/// `--gpu` with PEER or `--serve`: the GPU-memory WRITE both ways (`run` makes the two runs of
/// one side), or one `n/a` line where this host has no GPU memory option.
fn gpu_peer_write(
    env: &Env,
    m: &clap::ArgMatches,
    popts: &peer::PeerOpts,
    run: impl FnOnce(&str, &gpu_write::GpuWrite) -> Vec<Check>,
) -> Vec<Check> {
    let o = gpu_write::GpuWrite {
        mem: m.get_one::<String>("gpu_mem").cloned(),
        port: popts.port.checked_add(1).unwrap_or(popts.port - 1),
        dev: popts.target.dev.clone(),
        gid_index: popts.target.gid_index,
    };
    let vendors: Vec<_> = crate::gpu::pci::gpus(&env.sys).iter().map(|g| g.vendor).collect();
    match gpu_write::mem_option(&vendors, o.mem.as_deref()) {
        Ok(mem) => run(&mem, &o),
        Err(why) => vec![Check::na(gpu_write::NAME, why)],
    }
}

/// This binary's own tool as a child process (the GPU WRITE's `ib_write_bw`), killed after
/// `limit`; its stdout then stderr.
fn run_own_tool(args: &[String], limit: Duration) -> (i32, String) {
    let exe = match std::env::current_exe() {
        Ok(e) => e,
        Err(e) => return (-1, format!("cannot find this binary to run ib_write_bw: {e}")),
    };
    let child = std::process::Command::new(exe)
        .args(args)
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn();
    let mut child = match child {
        Ok(c) => c,
        Err(e) => return (-1, format!("cannot start ib_write_bw: {e}")),
    };
    let end = std::time::Instant::now() + limit;
    let killed = loop {
        match child.try_wait() {
            Ok(Some(_)) => break false,
            Ok(None) if std::time::Instant::now() >= end => {
                let _ = child.kill();
                break true;
            }
            Ok(None) => std::thread::sleep(Duration::from_millis(50)),
            Err(_) => break false,
        }
    };
    match child.wait_with_output() {
        Ok(o) => {
            let mut text = String::from_utf8_lossy(&o.stdout).into_owned();
            text.push_str(&String::from_utf8_lossy(&o.stderr));
            if killed {
                text.push_str(&format!("ib_write_bw did not finish within {} s (killed)\n", limit.as_secs()));
            }
            (if killed { -1 } else { o.status.code().unwrap_or(-1) }, text)
        }
        Err(e) => (-1, format!("ib_write_bw: {e}")),
    }
}

pub fn run(args: &[String], settings: &ProviderSettings) -> u8 {
    main_with(&Env::system(settings), args, &mut std::io::stdout(), &mut std::io::stderr())
}

#[cfg(test)]
mod tests;
#[cfg(test)]
mod gpu_tests;
