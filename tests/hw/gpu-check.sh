#!/bin/bash
# The first run on a machine with a GPU (issue #36). Prepared, never run yet. A few minutes at most.
#
#   tests/hw/gpu-check.sh [BIN]
#
# BIN: rperftest's GPU flavour (default: target/release/rperftest built here with
# `cargo build --release --features gpu`, or target/gpu-flavour/rperftest-gpu). Needs the NVIDIA
# driver (libcuda.so.1) for the CUDA steps; on an AMD GPU (/dev/kfd) it runs the ROCm steps. Steps, each reported ok / FAILED / could not run, then a summary:
#   1. the runtime loads, device memory is allocated, exported as a dma-buf and touched, with the
#      perftest lines, through a one-process run (`--loopback`) of ib_write_bw --use_cuda=0
#      --use_cuda_dmabuf --odp --gpu_touch=once on the first RDMA device, or when there is none,
#      up to the point where the tool needs one;
#   2. with /dev/infiniband: ib_write_bw and ib_read_bw in loopback with GPU memory on both sides,
#      by the peer-memory path (REG_MR of the pointer: needs nvidia-peermem) and by dma-buf.
# Output: stdout, meant for docs/benchmarks-data/YYYY-MM-DD-gpu-check.txt (with the date).
set -uo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
BIN=${1:-}
if [ -z "$BIN" ]; then
    for b in "$ROOT/target/release/rperftest" "$ROOT/target/gpu-flavour/rperftest-gpu"; do
        [ -x "$b" ] && { BIN=$b; break; }
    done
fi
[ -n "$BIN" ] && [ -x "$BIN" ] || { echo "no GPU flavour binary: cargo build --release --features gpu (or pass its path)"; exit 2; }
NOT_RUN=()
FAILED=()
say() { echo "== $*"; }
step() { # step NAME TIMEOUT CMD...: run, show the output, record the verdict
    local name=$1 t=$2 rc; shift 2
    say "$name: $*"
    timeout "$t" "$@" 2>&1 | sed 's/^/    /'
    rc=${PIPESTATUS[0]}
    if [ "$rc" = 0 ]; then echo "   ok"; else echo "   FAILED (rc=$rc)"; FAILED+=("$name"); fi
}

say "date: $(date -u +%FT%TZ)  host: $(uname -n)  kernel: $(uname -r)  binary: $BIN"
command -v nvidia-smi >/dev/null && nvidia-smi --query-gpu=index,name,pci.bus_id,driver_version --format=csv,noheader | sed 's/^/    /'
command -v nvidia-smi >/dev/null && nvidia-smi topo -m 2>/dev/null | sed 's/^/    /'
for m in nvidia_peermem nv_peer_mem amdgpu; do
    grep -q "^$m " /proc/modules && echo "    module $m loaded" || echo "    module $m not loaded"
done
DEV=$(ls /sys/class/infiniband 2>/dev/null | head -1)
echo "    RDMA devices: $(ls /sys/class/infiniband 2>/dev/null | tr '\n' ' ')"

if [ -z "$DEV" ] || ! [ -e /dev/infiniband/uverbs0 ]; then
    # Without an RDMA device the tool stops before it allocates: load, list and allocate only
    # through the device-less part (the parse and the runtime's listing) is all that can run.
    NOT_RUN+=("loopback write_bw/read_bw with GPU memory (no /dev/infiniband device)")
else
    P=18600
    for path in peer dmabuf; do
        EXTRA=(); [ $path = dmabuf ] && EXTRA=(--use_cuda_dmabuf)
        for tool in ib_write_bw ib_read_bw; do
            P=$((P + 1))
            step "$tool loopback, GPU memory both sides, $path path" 120 \
                "$BIN" "$tool" --loopback -p "$P" -d "$DEV" --use_cuda=0 "${EXTRA[@]}" -s 1048576 -n 2000 --report_gbits
        done
    done
    P=$((P + 1))
    step "dma-buf export + GPU touch (--odp)" 120 \
        "$BIN" ib_write_bw --loopback -p "$P" -d "$DEV" --use_cuda=0 --use_cuda_dmabuf --odp --gpu_touch=once -s 65536 -n 200
    P=$((P + 1))
    step "--use_cuda_bus_id (the first GPU's address)" 120 \
        "$BIN" ib_write_bw --loopback -p "$P" -d "$DEV" \
        --use_cuda_bus_id="$(nvidia-smi --query-gpu=pci.bus_id --format=csv,noheader 2>/dev/null | head -1)" -s 65536 -n 200
fi
# The runtime alone (no RDMA device needed): the loader's ignored test against the real libcuda.
if command -v cargo >/dev/null; then
    step "runtime: load, allocate, export dma-buf, touch (real libcuda)" 300 \
        cargo test --manifest-path "$ROOT/Cargo.toml" -q -p perftest --features gpu --test gpu_double -- --ignored --nocapture real_libcuda
else
    NOT_RUN+=("the loader test against the real libcuda (no cargo here)")
fi
# ROCm (an AMD GPU: /dev/kfd and the HSA runtime): the loader's ignored test, then with an RDMA
# device write_bw in loopback on ROCm memory by both registration paths.
if [ -e /dev/kfd ]; then
    if command -v cargo >/dev/null; then
        step "ROCm runtime: load, allocate, export dma-buf (real libhsa-runtime64)" 300 \
            cargo test --manifest-path "$ROOT/Cargo.toml" -q -p perftest --features gpu --test gpu_double -- --ignored --nocapture real_hsa
    else
        NOT_RUN+=("the ROCm loader test against the real HSA runtime (no cargo here)")
    fi
    if [ -n "$DEV" ] && [ -e /dev/infiniband/uverbs0 ]; then
        for EXTRA in "" --use_rocm_dmabuf; do
            P=$((${P:-18650} + 1))
            step "ib_write_bw loopback, ROCm memory both sides ${EXTRA:-peer path}" 120 \
                "$BIN" ib_write_bw --loopback -p "$P" -d "$DEV" --use_rocm=0 $EXTRA -s 1048576 -n 2000 --report_gbits
        done
    else
        NOT_RUN+=("loopback write_bw with ROCm memory (no /dev/infiniband device)")
    fi
else
    NOT_RUN+=("ROCm (--use_rocm, --use_rocm_dmabuf): no AMD GPU here (/dev/kfd)")
fi
say "summary: failed: ${FAILED[*]:-none}"
for n in "${NOT_RUN[@]}"; do say "could not run: $n"; done
[ ${#FAILED[@]} = 0 ]
