#!/usr/bin/env python3
"""A finished matrix run's results.jsonl for N fake nodes, to measure what --resume and the
report phase cost at sizes no bed runs (issue #35):

    tests/matrix-fake/finished-run.py N > OUT/results.jsonl
    rperftest matrix --hosts "n[1-N]" --launcher ssh --ssh tests/matrix-fake/fake-ssh \\
        --resume --no-retry --out OUT -- -s 4096 -n 5

One rail (fake-ssh's `fake0`), ib_write_bw, every pair of the circle method's rounds once, OK,
at 1000.0 to 1009.9 MB/sec, the client's perftest report kept as fake-ssh writes it. The
resume then has nothing to run: it reads the file, judges, rewrites it and writes the reports.
"""
import json
import sys


def rounds(n):
    """The circle method: n-1 rounds for even n, n with a bye for odd n (as schedule.rs)."""
    m = n + (n % 2)
    ring = list(range(m))
    for _ in range(m - 1):
        for k in range(m // 2):
            a, b = ring[k], ring[m - 1 - k]
            if a < n and b < n:
                yield a, b
        ring = [ring[0], ring[-1]] + ring[1:-1]
        yield None


def side(node, report):
    return {"addr": node, "dev": "fake0", "exit": 0, "gid_index": 1, "gpu": None,
            "json": {"results": {"BW_average": 1000, "MsgSize": 4096}} if report else None,
            "node": node, "rate": "100 Gb/sec (4X EDR)", "tail": []}


def main():
    n = int(sys.argv[1])
    r, slot, k = 0, 0, 0
    out = sys.stdout
    for p in rounds(n):
        if p is None:
            r, slot = r + 1, 0
            continue
        a, b = (f"n{p[0] + 1}", f"n{p[1] + 1}")
        v = 1000.0 + (k % 100) / 10
        rec = {"client": side(b, True), "deadline_s": 60.02048, "median": None,
               "options": ["-s", "4096", "-n", "5"], "pattern": "pairs", "port": 18600 + slot,
               "rail": "fake0", "reason": "", "retried": None, "round": r, "server": side(a, False),
               "started_unix": 1796595682.0 + k * 0.001, "status": "OK", "test": "ib_write_bw",
               "unit": "MB/sec", "value": v, "wall_s": 0.05}
        out.write(json.dumps(rec, sort_keys=True, separators=(",", ":")) + "\n")
        slot, k = slot + 1, k + 1


if __name__ == "__main__":
    main()
