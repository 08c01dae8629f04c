#!/bin/bash
# Cargo target runner: runs each test/bin executable in its own rxe VM.
#   export CARGO_TARGET_X86_64_UNKNOWN_LINUX_MUSL_RUNNER=$PWD/tests/vm/cargo-vm-runner.sh
#   cargo test --target x86_64-unknown-linux-musl
# (also works for the -gnu target: the image carries glibc 2.36 + libgcc_s)
# Extra run-in-vm.sh options via RXE_VM_RUNNER_OPTS (e.g. "--mode bare --net virtio").
# RUST_BACKTRACE / RUST_LOG / RUST_TEST_THREADS are forwarded into the guest.
set -euo pipefail
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
bin=$1; shift
envs=()
for v in RUST_BACKTRACE RUST_LOG RUST_TEST_THREADS RUST_MIN_STACK; do
    [ -n "${!v:-}" ] && envs+=(-e "$v=${!v}")
done
# shellcheck disable=SC2086
exec "$HERE/run-in-vm.sh" -q ${RXE_VM_RUNNER_OPTS:-} "${envs[@]}" "$bin" -- "./$(basename "$bin")" "$@"
