#!/bin/bash
# The matrix at scale on the netns bed (issue 35): N namespace nodes in ONE VM of the bed, each
# with its own rxe, sshd and name (tests/vm/netns-cluster.sh, on the image with Debian 13's
# kernel: build-image.sh with RXE_VM_KERNEL_SUITE=trixie-backports), and `rperftest matrix`
# over ssh across all of them. Prints, per N: the time to bring the nodes up, the preflight,
# the wall time against the ideal (the sum over rounds of each round's slowest pair), the
# coordinator's peak RSS, threads and open fds, results.jsonl's size, and `--resume` on the
# finished file. A benchmark that prints figures, not a test.
#
#   tests/vm/netns-bench.sh [--smp N] [--mem MB] [--max-pairs K] [--no-agent] [--keep DIR]
#                           N... [-- MATRIX-ARGS]   (default: 8 16 32)
#
# MATRIX-ARGS go after the matrix's own `--` to the test (default: -s 4096 -n 20). --max-pairs
# and --no-agent go to the matrix; --keep DIR keeps each size's results.jsonl and report.html.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/../.."
SMP=2 MEM=4096 SIZES=() TEST_ARGS=(-s 4096 -n 20) MOPTS="" KEEP=""
while [ $# -gt 0 ]; do
    case "$1" in
        --smp) SMP=$2; shift 2 ;;
        --mem) MEM=$2; shift 2 ;;
        --max-pairs) [[ $2 =~ ^[0-9]+$ ]] || { echo "netns-bench: bad --max-pairs '$2'" >&2; exit 2; }
                     MOPTS="$MOPTS --max-pairs $2"; shift 2 ;;
        --no-agent) MOPTS="$MOPTS --no-agent"; shift ;;
        --keep) KEEP=$2; shift 2 ;;
        --) shift; TEST_ARGS=("$@"); break ;;
        *) [[ $1 =~ ^[0-9]+$ ]] || { echo "netns-bench: bad size '$1'" >&2; exit 2; }; SIZES+=("$1"); shift ;;
    esac
done
[ ${#SIZES[@]} -gt 0 ] || SIZES=(8 16 32)
BIN=$(tests/vm/build-static.sh)
IMG=$(RXE_VM_KERNEL_SUITE=trixie-backports tests/vm/build-image.sh)
W=$(mktemp -d /tmp/netns-bench.XXXXXX)
trap 'rm -rf "$W"' EXIT
cp tests/vm/netns-cluster.sh tests/vm/guest/netns-bench-guest.sh "$BIN" "$W/"
mkdir -p "$W/share"
tests/vm/run-in-vm.sh -q --image "$IMG" --mode bare --overlay cluster --smp "$SMP" --mem "$MEM" \
    --timeout 14400 --share "$W/share" "$W/netns-cluster.sh" "$W/netns-bench-guest.sh" "$W/rperftest" \
    -- bash /mnt/host/netns-bench-guest.sh "${SIZES[*]}" "$MOPTS" "${TEST_ARGS[@]}"
if [ -n "$KEEP" ]; then mkdir -p "$KEEP" && cp "$W"/share/* "$KEEP"/ && echo "kept: $KEEP"; fi
echo "host: $(nproc) CPUs, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ //'); VM: qemu TCG, $SMP vCPUs, $MEM MiB, kernel $(cat "$IMG/kernel-version")"
