#!/bin/bash
# First contact with an RDMA device: on new hardware, run this first.
#
#   tests/hw/first-contact.sh [options] [DEV]
#
# Runs, each step bounded in time, on one device (DEV, default the first `rperftest devices`
# lists; mlx5, bnxt_re, efa or rxe):
#   devinfo     rperftest devinfo -v
#   selftest    rperftest selftest: every verb and transport between two QPs, payloads checked
#   loopback    the eight ib_* tools ours<->ours over 127.0.0.1 (RC), and the UC, UD and SRD
#               runs perftest has for them (-c UC/UD/SRD)
#   c_perftest  the same RC and UD runs against C perftest in both directions, where C perftest
#               is installed (found on PATH, or --c-perftest DIR)
#   hotpath     the host hot-path figures of providers/examples (needs cargo and this source
#               tree; not in --quick)
# and writes ONE report, as text (report.txt) and JSON (report.json), into the output folder,
# with every step's log beside them (logs/). Each step is pass, fail, refused (the device or
# rperftest declined it with a "not supported" kind of line: a finding, not a failure) or
# skipped (with the reason).
#
# Options:
#   -b, --bin PATH         rperftest binary (default: rperftest on PATH)
#   -o, --out DIR          output folder (default: first-contact-DEV-YYYYmmdd-HHMMSS)
#   -q, --quick            short iterations (-n 100, 4 KiB RC/UC BW messages), UC only with
#                          ib_send_bw, against C perftest only ib_write_bw and UD ib_send_lat,
#                          no hot-path figures
#   -x, --gid-index N      GID index for every run (default: each tool's own choice)
#   -i, --ib-port N        port (default 1)
#   --c-perftest DIR       where C perftest's ib_* binaries are (default: PATH)
#   --no-c-perftest        do not run against C perftest
#   -t, --timeout SECS     bound on each client run (default 60; a server gets 30 s more)
#   -h, --help             this text
#
# Exit status: 0 nothing failed (refusals and skips are not failures), 1 a step failed,
# 2 bad usage or no device.
set -uo pipefail

BIN=rperftest
OUT=""
QUICK=0
GIDX=""
IBPORT=1
C_DIR=""
USE_C=1
TMO=60
DEV=""
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
SRC=$(cd "$HERE/../.." && pwd)

usage() { sed -n '2,/^set -uo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit "${1:-2}"; }
die() { echo "first-contact: $*" >&2; exit 2; }

while [ $# -gt 0 ]; do
    case "$1" in
        -b|--bin) [ $# -ge 2 ] || die "$1 needs a path"; BIN=$2; shift 2 ;;
        -o|--out) [ $# -ge 2 ] || die "$1 needs a folder"; OUT=$2; shift 2 ;;
        -q|--quick) QUICK=1; shift ;;
        -x|--gid-index) [ $# -ge 2 ] || die "$1 needs a number"; GIDX=$2; shift 2 ;;
        -i|--ib-port) [ $# -ge 2 ] || die "$1 needs a number"; IBPORT=$2; shift 2 ;;
        --c-perftest) [ $# -ge 2 ] || die "$1 needs a folder"; C_DIR=$2; shift 2 ;;
        --no-c-perftest) USE_C=0; shift ;;
        -t|--timeout) [ $# -ge 2 ] || die "$1 needs seconds"; TMO=$2; shift 2 ;;
        -h|--help) usage 0 ;;
        -*) die "unknown option $1 (try --help)" ;;
        *) [ -z "$DEV" ] || die "one device only (got $DEV and $1)"; DEV=$1; shift ;;
    esac
done
[[ $TMO =~ ^[1-9][0-9]*$ ]] || die "--timeout wants whole seconds, got '$TMO'"
[[ $IBPORT =~ ^[1-9][0-9]*$ ]] || die "--ib-port wants a port number, got '$IBPORT'"
[ -z "$GIDX" ] || [[ $GIDX =~ ^[0-9]+$ ]] || die "--gid-index wants a number, got '$GIDX'"

# The binary: a path, or a name on PATH.
if [[ $BIN != */* ]]; then
    p=$(command -v "$BIN" 2>/dev/null) || die "no '$BIN' on PATH; give the binary with --bin PATH"
    BIN=$p
fi
[ -x "$BIN" ] || die "$BIN is not an executable file; give the binary with --bin PATH"
BIN=$(cd "$(dirname "$BIN")" && pwd)/$(basename "$BIN")

# The device: the one named, or the first rperftest lists.
if [ -z "$DEV" ]; then
    DEV=$("$BIN" devices 2>/dev/null | awk 'seen && NF { print $1; exit } /^ *-+/ { seen = 1 }')
    [ -n "$DEV" ] || die "no RDMA device found ('$BIN devices' lists none); load the driver, or name the device"
fi
[ -e "/sys/class/infiniband/$DEV" ] || die "no device $DEV in /sys/class/infiniband (there: $(ls /sys/class/infiniband 2>/dev/null | tr '\n' ' '))"

[ -n "$OUT" ] || OUT=first-contact-$DEV-$(date -u +%Y%m%d-%H%M%S)
mkdir -p "$OUT/logs" || die "cannot create $OUT/logs"
OUT=$(cd "$OUT" && pwd)

. "$HERE/first-contact-lib.bash"

driver=$(device_driver "$DEV")
T_START=$(now)
STARTED=$(date -u +%Y-%m-%dT%H:%M:%SZ)
say "device $DEV (driver $driver), binary $BIN, report in $OUT"

step_devinfo
step_selftest
step_loopback
step_c_perftest
step_hotpath
write_reports
