//! `doctor --gpu PEER`: the last rung of the GDR part of the cookbook, a short RDMA WRITE with
//! GPU memory at both ends, both ways: `ib_write_bw` (this binary's own tool) with the GPU memory
//! option against the peer's `rperftest doctor --serve --gpu`, which serves the two runs after
//! its own exchange: first this host writes the peer's GPU memory, then (`--reversed`, both sides)
//! the peer writes ours. Each direction is one line with its verdict and, on failure, the tool's
//! own error line and the fix. Without a GPU (the bed) the line is `n/a` with the reason.
//!
//! The runs go through [`super::local::Env::run_tool`], so the verdicts are unit-tested over
//! canned tool output.

use std::time::Duration;

use crate::gpu::pci::GpuVendor;

use super::report::Check;

pub const NAME: &str = "GPU peer WRITE";
/// Short: the point is whether GPU memory registers and moves, not its bandwidth.
const SIZE: &str = "65536";
const ITERS: &str = "200";
/// Runs `ib_write_bw ARGS` bounded: exit code and output (`local::RunTool`'s call).
pub type Run<'a> = &'a dyn Fn(&[String], Duration) -> (i32, String);

/// One run's bound (the server's includes waiting for its client).
pub const RUN_LIMIT: Duration = Duration::from_secs(60);

/// How the runs are made.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct GpuWrite {
    /// `--gpu-mem`: the tool's GPU memory option, e.g. `--use_cuda=1 --use_cuda_dmabuf`; by
    /// default `--use_cuda=0` on a host with an NVIDIA GPU, else `--use_rocm=0` with an AMD one.
    pub mem: Option<String>,
    /// The ib_write_bw port: the doctor's port + 1.
    pub port: u16,
    pub dev: Option<String>,
    pub gid_index: Option<u32>,
}

/// The memory option for this host (its GPUs' vendors), or why there is none (the `n/a` reason).
pub fn mem_option(gpus: &[GpuVendor], forced: Option<&str>) -> Result<String, String> {
    if let Some(f) = forced {
        return Ok(f.to_string());
    }
    if gpus.contains(&GpuVendor::Nvidia) {
        Ok("--use_cuda=0".into())
    } else if gpus.contains(&GpuVendor::Amd) {
        Ok("--use_rocm=0".into())
    } else {
        Err("no GPU (no NVIDIA or AMD VGA/3D/display controller in /sys/bus/pci/devices); --gpu-mem forces one".into())
    }
}

/// The `ib_write_bw` arguments of one run: the server without `peer`, the client with it.
pub fn tool_args(mem: &str, o: &GpuWrite, reversed: bool, peer: Option<&str>) -> Vec<String> {
    let mut a: Vec<String> = vec!["ib_write_bw".into()];
    a.extend(mem.split_whitespace().map(String::from));
    a.extend([
        "-p".into(),
        o.port.to_string(),
        "-s".into(),
        SIZE.into(),
        "-n".into(),
        ITERS.into(),
    ]);
    if let Some(d) = &o.dev {
        a.extend(["-d".into(), d.clone()]);
    }
    if let Some(x) = o.gid_index {
        a.extend(["-x".into(), x.to_string()]);
    }
    if reversed {
        a.push("--reversed".into());
    }
    a.extend(peer.map(String::from));
    a
}

/// One direction's line from the tool's exit code and output.
pub fn verdict(direction: &str, mem: &str, rc: i32, out: &str, serve_hint: &str) -> Check {
    let name = format!("{NAME} {direction}");
    if rc == 0 {
        return match result_line(out) {
            Some((bytes, iters, avg)) => Check::ok(
                &name,
                format!("{mem}: {iters} x {bytes} B at {avg} MB/s average"),
            ),
            None => Check::fail(
                &name,
                format!("{mem}: ib_write_bw exited 0 without a result line"),
                "run the ib_write_bw line by hand to see why",
            ),
        };
    }
    let line = out
        .lines()
        .map(str::trim)
        .rfind(|l| !l.is_empty())
        .unwrap_or("(no output)");
    let fix = if line.contains("needs rperftest's GPU build") {
        "run the GPU flavour (rperftest built with --features gpu, docs/gpu.md) on both hosts"
            .to_string()
    } else if line.contains("Failed to load") {
        "install the GPU driver (libcuda.so.1) or ROCm (libhsa-runtime64.so.1) on this host"
            .to_string()
    } else if line.contains("Couldn't allocate MR") && line.contains("dma-buf") {
        "leave the dma-buf option out of --gpu-mem, or use a device and kernel with dma-buf MRs"
            .to_string()
    } else if line.contains("Couldn't allocate MR") {
        "load the peer-memory module (modprobe nvidia-peermem; AMD: ib_peer_mem) or try the dma-buf path: --gpu-mem '--use_cuda=0 --use_cuda_dmabuf' (or --use_rocm_dmabuf)".to_string()
    } else if line.contains("couldn't connect to") || line.contains("no client connected") {
        serve_hint.to_string()
    } else {
        format!("run 'rperftest ib_write_bw {mem}' by hand on both hosts to see more")
    };
    Check::fail(&name, format!("{mem}: rc={rc}: {line}"), fix)
}

/// The first result row under the ` #bytes     #iterations    BW peak…` header: bytes,
/// iterations, BW average.
fn result_line(out: &str) -> Option<(String, String, String)> {
    let mut lines = out
        .lines()
        .skip_while(|l| !l.trim_start().starts_with("#bytes"));
    lines.next()?;
    let row: Vec<&str> = lines.next()?.split_whitespace().collect();
    match row.as_slice() {
        [bytes, iters, _peak, avg, ..] if bytes.parse::<u64>().is_ok() => {
            Some((bytes.to_string(), iters.to_string(), avg.to_string()))
        }
        _ => None,
    }
}

/// The client's two lines: this host → PEER, then PEER → this host (`--reversed`).
pub fn client(peer: &str, mem: &str, o: &GpuWrite, run: Run<'_>) -> Vec<Check> {
    let hint = format!(
        "start 'rperftest doctor --serve --gpu -p {}' (the GPU flavour) on {peer}",
        o.port.saturating_sub(1)
    );
    [
        (false, format!("to {peer}")),
        (true, format!("from {peer}")),
    ]
    .into_iter()
    .map(|(rev, dir)| {
        let (rc, out) = run(&tool_args(mem, o, rev, Some(peer)), RUN_LIMIT);
        verdict(&dir, mem, rc, &out, &hint)
    })
    .collect()
}

/// The serving side after its doctor exchange: the two servers, one after the other.
pub fn serve(mem: &str, o: &GpuWrite, run: Run<'_>) -> Vec<Check> {
    let hint =
        "run 'rperftest doctor --gpu PEER' on the other host (the GPU flavour) within a minute"
            .to_string();
    [(false, "from the client"), (true, "to the client")]
        .into_iter()
        .map(|(rev, dir)| {
            let (rc, out) = run(&tool_args(mem, o, rev, None), RUN_LIMIT);
            verdict(dir, mem, rc, &out, &hint)
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn o() -> GpuWrite {
        GpuWrite {
            mem: None,
            port: 18516,
            dev: Some("mlx5_0".into()),
            gid_index: Some(3),
        }
    }

    /// Our ib_write_bw's result block (the client's, 6.06 layout).
    const OK_OUT: &str = "---------------------------------------------------------------------------------------\n \
        #bytes     #iterations    BW peak[MB/sec]    BW average[MB/sec]   MsgRate[Mpps]\n \
        65536      200              11234.56            11200.12             0.179202\n\
        ---------------------------------------------------------------------------------------\n";

    #[test]
    fn the_runs_arguments() {
        assert_eq!(
            tool_args("--use_cuda=0", &o(), false, Some("node2")).join(" "),
            "ib_write_bw --use_cuda=0 -p 18516 -s 65536 -n 200 -d mlx5_0 -x 3 node2"
        );
        assert_eq!(
            tool_args(
                "--use_rocm=1 --use_rocm_dmabuf",
                &GpuWrite {
                    port: 9,
                    ..Default::default()
                },
                true,
                None
            )
            .join(" "),
            "ib_write_bw --use_rocm=1 --use_rocm_dmabuf -p 9 -s 65536 -n 200 --reversed"
        );
    }

    #[test]
    fn memory_option_by_vendor_or_forced() {
        assert_eq!(
            mem_option(&[GpuVendor::Amd, GpuVendor::Nvidia], None).unwrap(),
            "--use_cuda=0"
        );
        assert_eq!(mem_option(&[GpuVendor::Amd], None).unwrap(), "--use_rocm=0");
        assert!(mem_option(&[], None).unwrap_err().starts_with("no GPU ("));
        assert_eq!(
            mem_option(&[], Some("--use_cuda=1")).unwrap(),
            "--use_cuda=1"
        );
    }

    #[test]
    fn verdicts_one_line_each_with_the_fix() {
        let c = verdict("to node2", "--use_cuda=0", 0, OK_OUT, "");
        assert_eq!(
            c.line(),
            "ok    GPU peer WRITE to node2: --use_cuda=0: 200 x 65536 B at 11200.12 MB/s average"
        );
        let c = verdict("to node2", "--use_cuda=0", 0, "nothing\n", "");
        assert!(c.line().starts_with("FAIL  GPU peer WRITE to node2: --use_cuda=0: ib_write_bw exited 0 without a result line"));
        let out = "CUDA device integrated: 0\n Couldn't create IB resources\nCouldn't allocate MR with error=14: the kernel could not resolve the GPU pointer (Bad address): is nvidia-peermem (or amdgpu's peer memory) loaded? Or try --use_cuda_dmabuf/--use_rocm_dmabuf\n";
        let c = verdict("from node2", "--use_cuda=0", 1, out, "");
        assert!(c.line().starts_with("FAIL  GPU peer WRITE from node2: --use_cuda=0: rc=1: Couldn't allocate MR with error=14:"), "{}", c.line());
        assert!(
            c.line()
                .contains("; fix: load the peer-memory module (modprobe nvidia-peermem"),
            "{}",
            c.line()
        );
        assert!(!c.line().contains('\n'));
        let c = verdict(
            "to n",
            "--use_cuda=0",
            1,
            " Unsupported memory type: --use_cuda needs rperftest's GPU build, which …\n",
            "",
        );
        assert!(c.line().ends_with("fix: run the GPU flavour (rperftest built with --features gpu, docs/gpu.md) on both hosts"), "{}", c.line());
        let out = "couldn't connect to node2:18516 (40 attempts): Connection refused (os error 111); start the server side first\n";
        let c = verdict("to node2", "--use_cuda=0", 1, out, "start it");
        assert!(c.line().ends_with("fix: start it"), "{}", c.line());
        let c = verdict(
            "to n",
            "--use_rocm=0",
            1,
            "Failed to load the ROCm runtime dynamically (x); is ROCm installed? (docs/gpu.md)\n",
            "",
        );
        assert!(
            c.line()
                .contains("fix: install the GPU driver (libcuda.so.1) or ROCm"),
            "{}",
            c.line()
        );
    }

    #[test]
    fn client_runs_both_ways_and_names_the_server_to_start() {
        let calls = std::cell::RefCell::new(Vec::new());
        let run = |a: &[String], _: Duration| {
            calls.borrow_mut().push(a.join(" "));
            if a.iter().any(|x| x == "--reversed") {
                (
                    1,
                    "couldn't connect to node2:18516 (3 attempts): refused\n".to_string(),
                )
            } else {
                (0, OK_OUT.to_string())
            }
        };
        let cs = client("node2", "--use_cuda=0", &o(), &run);
        assert_eq!(cs.len(), 2);
        assert!(cs[0].line().starts_with("ok    GPU peer WRITE to node2: "));
        assert!(
            cs[1].line().ends_with(
                "fix: start 'rperftest doctor --serve --gpu -p 18515' (the GPU flavour) on node2"
            ),
            "{}",
            cs[1].line()
        );
        assert_eq!(
            calls.borrow()[1],
            "ib_write_bw --use_cuda=0 -p 18516 -s 65536 -n 200 -d mlx5_0 -x 3 --reversed node2"
        );
    }
}
