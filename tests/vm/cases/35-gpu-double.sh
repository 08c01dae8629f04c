#!/bin/bash
# GPU memory (issue #36) end to end with the CUDA TEST DOUBLE of tests/gpu-double/: its "device
# memory" is host memory (a memfd), so this proves the plumbing (the glibc GPU flavour loads
# libcuda.so.1 at run time, lists and picks the device, allocates, registers the pointer through
# REG_MR as the peer-memory path does, runs, frees), NOT anything about a GPU or GPUDirect RDMA.
#  * the static binary refuses --use_cuda in one line naming the GPU build;
#  * ours(--use_cuda=0) <-> ours(--use_cuda=0) ib_write_bw over rxe;
#  * ours(--use_cuda=0) client -> C perftest server (host memory);
#  * dma-buf: this kernel has no udmabuf, so the double hands a memfd (GPU_DOUBLE_DMABUF=memfd,
#    not a dma-buf) and rxe, which has no dma-buf MRs, refuses the dma-buf MR method: one line.
# BIN_DIR must hold rperftest-gpu and the double's libcuda.so.1 (tests/run-all.sh builds both
# into target/gpu-flavour/; tests/vmtest links them into its BIN_DIR).
# mode: full
# timeout: 150
. "$VMTEST_LIB"
command -v rperftest-gpu >/dev/null 2>&1 || skip "no rperftest-gpu in BIN_DIR (tests/run-all.sh builds target/gpu-flavour/)"
LIBDIR=$(dirname "$(command -v rperftest-gpu)")
[ -e "$LIBDIR/libcuda.so.1" ] || skip "no libcuda.so.1 (the test double) beside rperftest-gpu"
GPU=(env LD_LIBRARY_PATH="$LIBDIR" rperftest-gpu)
X=(-d "$RXE_DEV" -x "$RXE_GID_IDX")
O=(-n 200 -s 65536)

log "== the static binary: one line naming the GPU build"
expect_rc 1 rperftest ib_write_bw "${X[@]}" --use_cuda=0
expect_contains "Unsupported memory type: --use_cuda needs rperftest's GPU build"
[ "$(grep -c . "$LAST_OUT")" = 1 ] || fail "expected one line"

gpu_lines() {
    grep -q "^Picking device No. 0$" "$1" || fail "$2: no 'Picking device No. 0'"
    grep -q "device name = \[rperftest GPU test double 0 (host memory, not a GPU)\]" "$1" || fail "$2: the double's name is missing"
    grep -qE "^allocated GPU buffer of a [0-9]+ address at 0x[0-9a-f]+ for type CUDA_MEM_DEVICE$" "$1" || fail "$2: no allocation line"
    grep -qE "^deallocating GPU buffer [0-9a-f]{16}$" "$1" || fail "$2: no deallocation line"
}

log "== ib_write_bw ours(--use_cuda=0) <-> ours(--use_cuda=0), peer-memory path (REG_MR of the pointer)"
pair ib_write_bw "${GPU[@]}" ib_write_bw "${X[@]}" "${O[@]}" --use_cuda=0 -- "${GPU[@]}" ib_write_bw "${X[@]}" "${O[@]}" --use_cuda=0 "$RXE_IP"
gpu_lines "$VMTEST_TMP/client.out" client
gpu_lines "$SERVER_LOG" server

log "== ib_write_bw ours(--use_cuda=0) -> C perftest server (host memory)"
pair ib_write_bw ib_write_bw "${X[@]}" "${O[@]}" -- "${GPU[@]}" ib_write_bw "${X[@]}" "${O[@]}" --use_cuda=0 "$RXE_IP"
gpu_lines "$VMTEST_TMP/client.out" client

log "== dma-buf path: rxe refuses the dma-buf MR method in one line"
start_server -t 60 rperftest ib_write_bw "${X[@]}" "${O[@]}"
run with_timeout 60 env GPU_DOUBLE_DMABUF=memfd "${GPU[@]}" ib_write_bw "${X[@]}" "${O[@]}" --use_cuda=0 --use_cuda_dmabuf "$RXE_IP"
[ "$LAST_RC" = 1 ] || fail "expected rc=1 from the dma-buf client, got $LAST_RC"
expect_contains "using DMA-BUF for GPU buffer address at 0x"
# 6.29 on an unknown device (rxe) leaves inline alone without a note, CUDA or not
expect_not_contains "Device not recognized to implement inline feature"
expect_not_contains "CUDA tests with inline messages"
expect_contains "Couldn't allocate MR with error=95: the device does not take dma-buf MRs"
[ "$(grep -c "Couldn't allocate MR" "$LAST_OUT")" = 1 ] || fail "expected one refusal line"
wait_server 30
