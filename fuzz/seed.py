#!/usr/bin/env python3
"""Regenerate the seed corpora under fuzz/corpus/<target>/ (committed; see docs/fuzzing.md).

Seeds are real bytes where the repository has them (OOB transcripts, sysfs fixtures, mlx5 CQEs
from the libmlx5 oracle run, bnxt_re CQEs from the libbnxt_re oracle run, netlink records from the discovery capture) plus a few synthetic
inputs for layouts no capture contains (320/312-byte NEGOTIATE, short keys, rdma_cm keys).
Deterministic: the same repository gives the same files. Only files named by this script are
written; a file with the prefix `seed-` that the script no longer produces is removed.

    python3 fuzz/seed.py
"""

import json
import os
import re
import struct
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
CORPUS = ROOT / "fuzz" / "corpus"
LE = "<"  # host order of the captures (x86-64)

out: dict[str, dict[str, bytes]] = {}


def add(target: str, name: str, data: bytes) -> None:
    t = out.setdefault(target, {})
    name = "seed-" + re.sub(r"[^A-Za-z0-9_.-]", "_", name)
    # Same bytes under two names: keep one.
    if data in t.values():
        return
    t[name] = data


# ---------------------------------------------------------------------------------------------
# OOB messages from the TCP transcripts
# ---------------------------------------------------------------------------------------------

def transcript_blocks():
    dirs = [ROOT / "bench/perftest/tests/fixtures/tcp"]
    for d in dirs:
        for p in sorted(d.glob("*.transcript.txt")):
            for m in re.finditer(r"^\s*hex\s*:\s*([0-9a-f]+)\s*$", p.read_text(), re.M):
                yield p.name.split(".")[0], bytes.fromhex(m.group(1))


seen_len = {}
for tool, b in transcript_blocks():
    n = len(b)
    k = seen_len.get((n, b), 0)
    seen_len[(n, b)] = k + 1
    if k:
        continue
    if n == 16:
        add("oob_version", f"{tool}-version", b)
    elif n == 4:
        add("oob_sysdata", f"{tool}-sysdata", b)
    elif n == 2:
        add("oob_mtu", f"{tool}-mtu", b)
    elif n in (59, 76, 108, 125):
        add("oob_key", f"{tool}-key{n}", b)
    elif n == 8:
        # One 8-byte report field; as a report stream: selector byte 0 (5 fields, 8-byte iters).
        add("oob_report", f"{tool}-field", bytes([0]) + b * 5)

# Versions perftest has shipped and a few edge cases.
for v in ["6.06", "6.28", "6.29", "5.70", "5.60", "5.31", "5.1", "4.5", " 6.1e2", "-1", "abc", "6.29.g1234"]:
    add("oob_version", f"v-{v.strip()}", v.encode().ljust(16, b"\0"))
add("oob_version", "v-16chars", b"6.0612345678901X")

# SYSDATA extremes.
for v in [1, 64, 4096, 65536, 1 << 30, 0, -1, (1 << 30) + 1]:
    add("oob_sysdata", f"i32-{v}", struct.pack(">i", v))

# MTU blocks: each enum, old 4-byte width, out-of-range and garbage.
for b in [b"1\0", b"5\0", b"3\0\0\0", b" 4\0", b"9\0", b"0\0", b"12345", b"x\0", b"\0\0", b"4096"]:
    add("oob_mtu", "mtu-" + b.hex(), b)


# Short and DV keys (no capture uses them), built like perftest's sprintf.
def key_text(lid, out_reads, qpn, psn, rkey, vaddr, srqn, gid=None, dv=None):
    s = f"{lid:04x}:{out_reads:04x}:{qpn:06x}:{psn:06x}:{rkey:08x}:{vaddr:016x}"
    if dv is not None:
        s += f":{dv:016x}"
    if gid is not None:
        s += "".join(f":{g:02x}" for g in gid) + f":{srqn:08x}:"
    else:
        s += f":{srqn:08x}"
    return s.encode() + b"\0"


gid = bytes.fromhex("00000000000000000000ffff0a630001")
add("oob_key", "short", key_text(1, 1, 0x12, 0x7E1FC1, 0x39D, 0x7F41530E0000, 0))
add("oob_key", "short-dv", key_text(1, 16, 0x12, 0x7E1FC1, 0x39D, 0x7F41530E0000, 0, dv=0x7F41530F0000))
add("oob_key", "gid-dv", key_text(0, 1, 0x11, 0x3B7715, 0x257, 0x7FD4DDF74000, 0, gid=gid, dv=1))
add("oob_key", "gid-upper", key_text(0, 1, 0xABCDEF, 0xFFFFFF, 0xFFFFFFFF, 2**64 - 1, 7, gid=gid).upper())

# rdma_cm keys (binary pingpong_dest, BE).
def cm_key(v629, lid=0, out_reads=1, qpn=0x12, psn=0x7E1FC1, rkey=0x39D, vaddr=0x7F41530E0000,
           tail=0, g=gid, srqn=0, gid_index=1):
    b = struct.pack(">IIIII4xQ", lid, out_reads, qpn, psn, rkey, vaddr)
    if v629:
        b += struct.pack(">Q", tail)
    return b + g + struct.pack(">Ii", srqn, gid_index)


add("oob_cm_key", "v606", cm_key(False))
add("oob_cm_key", "v629", cm_key(True, tail=0x7F41530F0000))
add("oob_cm_key", "v629-max", cm_key(True, lid=0xFFFF, out_reads=0xFFFF, qpn=0xFFFFFF, psn=0xFFFFFF,
                                     rkey=0xFFFFFFFF, vaddr=2**64 - 1, tail=2**64 - 1, gid_index=-1))
add("oob_cm_key", "v606-qpn-too-wide", cm_key(False, qpn=0x1000000))


# NEGOTIATE (6.28+): 7 BE i32, pad, size, iters, 8 BE i32, 232-byte device attr, [comp_mask].
def negotiate(with_mlx5dv=True, **kw):
    f = dict(test_method=0, connection_type=0, verb=2, tst=1, atomic_type=0, test_type=0, report_fmt=0,
             size=65536, iters=5000, aes_xts=0, num_of_qps=1, duration=5, use_rdma_cm=0,
             use_write_with_imm=0, no_enhanced_reorder=0, sig_offload=0, data_validation=0)
    f.update(kw)
    b = struct.pack(">7i4xQQ8i", f["test_method"], f["connection_type"], f["verb"], f["tst"],
                    f["atomic_type"], f["test_type"], f["report_fmt"], f["size"], f["iters"],
                    f["aes_xts"], f["num_of_qps"], f["duration"], f["use_rdma_cm"],
                    f["use_write_with_imm"], f["no_enhanced_reorder"], f["sig_offload"],
                    f["data_validation"])
    attr = bytearray(232)
    struct.pack_into(LE + "IIi", attr, 96, 0x02C9, 4117, 0)  # vendor, part id
    struct.pack_into(LE + "i", attr, 144, 16)  # max_qp_rd_atom
    b += bytes(attr)
    if with_mlx5dv:
        b += struct.pack(">Q", 0x13)
    return b


add("oob_negotiate", "write-bw-320", negotiate())
add("oob_negotiate", "write-bw-312", negotiate(False))
add("oob_negotiate", "read-lat-all", negotiate(verb=4, tst=0, test_method=1, size=2, iters=1000))
add("oob_negotiate", "unknown-enums", negotiate(connection_type=77, verb=-1, report_fmt=9, size=2**64 - 1))
add("oob_negotiate", "short", negotiate()[:100])

# Report streams: selector byte, then fields (BE u64 / doubles).
def report(sel, size, iters, *doubles):
    b = bytes([sel]) + struct.pack(">Q", size)
    b += struct.pack(">I" if sel & 2 else ">Q", iters)
    for d in doubles:
        b += struct.pack(">d", d)
    return b


add("oob_report", "bw-5", report(0, 65536, 5000, 1234.5, 1200.25, 0.0192))
add("oob_report", "bw-9-old-iters", report(3, 2, 1000, 1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0))
add("oob_report", "nan-inf", report(0, 0, 0, float("nan"), float("inf"), -0.0))
add("oob_report", "truncated", report(0, 8, 8)[:11])

# ---------------------------------------------------------------------------------------------
# Command lines: tool byte, NUL-separated args
# ---------------------------------------------------------------------------------------------

TOOLS = ["ib_write_bw", "ib_write_lat", "ib_read_bw", "ib_read_lat", "ib_send_bw", "ib_send_lat",
         "ib_atomic_bw", "ib_atomic_lat"]
for name, tool, args in [
    ("write-bw-client", 0, ["-d", "rxe0", "-x", "1", "-F", "-n", "50", "127.0.0.1"]),
    ("write-bw-all", 0, ["-a", "-F", "--report_gbits"]),
    ("send-ud", 4, ["-c", "UD", "-s", "1024", "-q", "2", "host"]),
    ("read-lat-o", 3, ["-o", "4", "-I", "0", "--size=64"]),
    ("atomic-fa", 6, ["-A", "FETCH_AND_ADD", "-D", "3"]),
    ("send-lat-cluster", 5, ["-s64", "-n1000", "-zR"]),
    ("help", 1, ["-h"]),
    ("version", 2, ["-V"]),
    ("dup", 0, ["-s", "1", "-s", "2"]),
    ("unknown", 0, ["--no_such_option"]),
    ("bad-value", 0, ["-s", "abc"]),
    ("limit-nan", 0, ["--rate_limit=nan", "--limit_bw=nan"]),
    ("dashdash", 7, ["--", "-x", "host"]),
    ("long-prefix", 0, ["--siz", "8", "--iter=9"]),
    ("duration-mode", 4, ["-D", "2", "--run_infinitely", "--cpu_util", "-b"]),
    ("mtu", 0, ["-m", "4096", "--mr_per_qp", "-t", "256", "-l", "8"]),
]:
    add("params", name, bytes([tool]) + b"\0".join(a.encode() for a in args))

# ---------------------------------------------------------------------------------------------
# rxe
# ---------------------------------------------------------------------------------------------

def wc(wr_id=0, status=0, opcode=0, vendor_err=0, byte_len=0, imm=b"\0\0\0\0", qp_num=0, src_qp=0,
       wc_flags=0, pkey_index=0, slid=0, sl=0, dlid_path_bits=0, port=1):
    return (struct.pack(LE + "QIIII", wr_id, status, opcode, vendor_err, byte_len) + imm
            + struct.pack(LE + "IIIHHBBBx", qp_num, src_qp, wc_flags, pkey_index, slid, sl,
                          dlid_path_bits, port))


add("rxe_cqe", "rc-recv-imm", wc(0x0102030405060708, 0, 0x80, 0, 4096, b"\xde\xad\xbe\xef", 17, 0, 3))
add("rxe_cqe", "flush", wc(9, 5, 0, 0, 0, qp_num=18, port=0))
add("rxe_cqe", "send-ok", wc(1, 0, 0, 0, 65536, qp_num=17))
add("rxe_cqe", "ud-recv-grh", wc(7, 0, 0x80, 0, 1064, qp_num=17, src_qp=18, wc_flags=1, pkey_index=0))
add("rxe_cqe", "unknown-values", wc(0, 0xFFFFFFFF, 0x1234, 0xFFFFFFFF) + b"trailing")
add("rxe_cqe", "short", wc()[:47])


def ring_input(producer_side, log2, mask, length, prod, cons, min_sel, moves):
    # Field encoding of providers::fuzzing::rxe_ring (Bytes reader: little-endian).
    b = bytes([1 if producer_side else 0])
    b += bytes([0]) + struct.pack("<I", log2 - 6)       # plausible log2 (6 + below(5))
    b += bytes([1]) + struct.pack("<I", mask)           # raw mask
    b += struct.pack("<I", length)
    b += bytes([0]) + struct.pack("<I", prod)           # masked producer index
    b += bytes([0]) + struct.pack("<I", cons)
    b += struct.pack("<I", min_sel)
    return b + moves


def mv(op, *vals):
    return bytes([op]) + b"".join(struct.pack("<I", v) for v in vals)


cq_moves = mv(1, 3) + bytes([7, 2]) + bytes([7, 5]) + mv(8) + mv(0, 0xFFFFFFFF) + bytes([7, 4]) + mv(1, 7) + bytes([7, 39])
add("rxe_ring", "cq-8x128", ring_input(False, 7, 7, 384 + 8 * 128, 0, 0, 2, cq_moves))
add("rxe_ring", "cq-wrap", ring_input(False, 6, 3, 384 + 4 * 64, 3, 3, 2, mv(1, 2) + bytes([7, 9]) + mv(5, 0xFFFFFFFF) + mv(4, 30) + mv(1, 1) + bytes([7, 9])))
sq_moves = bytes([7, 10, 255]) + mv(3, 4) + bytes([7, 10, 2]) + mv(2, 0x80000000) + bytes([7, 1, 255]) + mv(3, 0) + bytes([8]) + bytes([7, 23, 255])
add("rxe_ring", "sq-8x256", ring_input(True, 8, 7, 384 + 8 * 256, 0, 0, 0, sq_moves))
add("rxe_ring", "rq-16x64", ring_input(True, 6, 15, 384 + 16 * 64, 5, 5, 1, sq_moves))
add("rxe_ring", "bad-geometry", ring_input(True, 10, 6, 384 + 4096, 0, 0, 0, b""))
add("rxe_ring", "too-small", ring_input(False, 7, 7, 384 + 100, 0, 0, 2, b""))


def wqe_input(qp, slot_sel, slot, lim_new, sge_lim, inl_lim, op, flags, sges, small=True,
              wr_id=1, imm=0, raddr=0x1000, rkey=0x39D, cmp=0, swap=0, ud=None, recv=None):
    b = struct.pack("<I", qp)
    b += struct.pack("<I", slot_sel) + struct.pack("<I", slot)
    b += bytes([1 if lim_new else 0]) + struct.pack("<II", sge_lim, inl_lim)
    b += struct.pack("<I", op) + bytes([0]) + struct.pack("<I", flags)
    b += struct.pack("<I", len(sges)) + bytes([1 if small else 0])
    for addr, length, lkey in sges:
        b += struct.pack("<QII", addr, length, lkey)
    b += struct.pack("<QIQIQQ", wr_id, imm, raddr, rkey, cmp, swap)
    if ud:
        b += bytes([1]) + struct.pack("<III", *ud)
    else:
        b += bytes([0])
    if recv:
        rsel, rslot, rsge, rsges = recv
        b += struct.pack("<I", rsel) + struct.pack("<I", rslot) + bytes([0]) + struct.pack("<I", rsge)
        b += struct.pack("<I", len(rsges))
        for addr, length, lkey in rsges:
            b += struct.pack("<QII", addr, length, lkey)
        b += struct.pack("<Q", 99)
    return b


# slot_sel 0 → 1 << (6 + slot % 7); qp: 0 RC, 1 UC, 2 UD; op index into WRITE_OPS.
add("rxe_wqe", "rc-write", wqe_input(0, 0, 4, True, 2, 124, 0, 2, [(0x200000000, 65536, 0x123442)],
                                    recv=(0, 3, 2, [(0x200000000, 4096, 0x123442)])))
add("rxe_wqe", "rc-write-inline", wqe_input(0, 0, 4, True, 2, 124, 0, 0xA, [(0x55, 64, 1), (0x99, 32, 1)]))
add("rxe_wqe", "rc-atomic", wqe_input(0, 0, 3, True, 1, 0, 5, 2, [(0x8, 8, 3)], raddr=0x2000, cmp=1, swap=2))
add("rxe_wqe", "ud-send-imm", wqe_input(2, 0, 4, True, 1, 188, 3, 6, [(0x1000, 1024, 7)], imm=0xDEADBEEF,
                                       ud=(5, 0x11, 0x11111111)))
add("rxe_wqe", "uc-read-refused", wqe_input(1, 0, 4, True, 2, 0, 4, 2, [(0x1000, 8, 7)]))
add("rxe_wqe", "huge-limits", wqe_input(0, 1, 300, False, 0xFFFFFFFF, 0xFFFFFFFF, 2, 8,
                                       [(0, 0xFFFFFFFF, 0), (0, 0xFFFFFFFF, 0)], small=False))
add("rxe_wqe", "slot-too-small", wqe_input(0, 1, 100, False, 4, 4, 2, 2, []))

# ---------------------------------------------------------------------------------------------
# mlx5
# ---------------------------------------------------------------------------------------------

for f in sorted((ROOT / "providers/tests/fixtures/mlx5").glob("cqe_to_wc*.jsonl")):
    for line in f.read_text().splitlines():
        if not line.strip():
            continue
        j = json.loads(line)
        for key in ("cqe", "cqe0"):
            if key in j:
                add("mlx5_cqe", j["name"] + ("-" + key if key == "cqe0" else ""), bytes.fromhex(j[key]))
compressed = bytearray(64)
compressed[63] = 0x0C
add("mlx5_cqe", "compressed", bytes(compressed))
scatter64 = bytearray(64)
scatter64[63] = 0x28
add("mlx5_cqe", "resp-scatter64", bytes(scatter64))


# ---------------------------------------------------------------------------------------------
# efa: a 16-byte completion (also read as the geometry bytes), then a CQ buffer
# ---------------------------------------------------------------------------------------------

def efa_cdesc(req_id, status, flags, qpn, length, ah=0, src_qp=0, imm=0):
    return struct.pack(LE + "HBBHHHHI", req_id, status, flags, qpn, length, ah, src_qp, imm)


add("efa_cqe", "send-ok", efa_cdesc(0, 0, 0b011, 0x12, 0))
add("efa_cqe", "recv-imm", efa_cdesc(1, 0, 0b1101, 0x12, 4096, 3, 0x34, 0xDEADBEEF))
add("efa_cqe", "send-rnr", efa_cdesc(2, 10, 0b011, 0x12, 0))
add("efa_cqe", "bad-queue", efa_cdesc(3, 0, 0b111, 0x12, 0))
add("efa_cqe", "short", efa_cdesc(0, 0, 0b011, 0, 0)[:15])
# Two sub-CQs of 4 entries: each first entry new (phase 1), then rewrites that flip phases.
buf = b"".join(efa_cdesc(i, 0, 0b011 if i % 4 == 0 else 0b010, 1, 0) for i in range(8))
add("efa_cqe", "two-sub-cqs", bytes([1, 2, 0, 5]) + buf[4:] + bytes([0xFF, 0x01, 0x0F, 0xF0]))


def uctx_resp(qp_tab=1 << 18, bf_reg=512, tot_bfregs=16, cache_line=64, sq_desc=512, rq_desc=512,
              send_wqebb=1 << 15, recv_wr=1 << 15, srq_recv_wr=1 << 15, ports=1, comp_mask=7,
              resp_len=72, cqe_version=1, supp_uhw=3, eth_min_inline=1, clock_off=0x2000,
              log_uar=12, uars_per_page=1, dyn_bfregs=0, length=72):
    b = struct.pack(LE + "IIIIHHIIIHHIIBBBBQIII", qp_tab, bf_reg, tot_bfregs, cache_line, sq_desc, rq_desc,
                    send_wqebb, recv_wr, srq_recv_wr, ports, 0, comp_mask, resp_len, cqe_version,
                    supp_uhw, eth_min_inline, 0, clock_off, log_uar, uars_per_page, dyn_bfregs)
    return (b + b"\0" * 72)[:length]


add("mlx5_abi", "uctx-cx5", uctx_resp())
add("mlx5_abi", "uctx-old-kernel-45", uctx_resp(length=45))
add("mlx5_abi", "uctx-dynamic-only", uctx_resp(tot_bfregs=0))
add("mlx5_abi", "uctx-bad-bf", uctx_resp(bf_reg=100))
add("mlx5_abi", "cqn", struct.pack(LE + "II", 0x407, 0))
add("mlx5_abi", "cqn-wide", struct.pack(LE + "II", 0x1000000, 0))
add("mlx5_abi", "qp-bfreg", struct.pack(LE + "I", 24) + b"\0" * 36)
add("mlx5_abi", "ah-dmac", struct.pack(LE + "I", 0) + bytes.fromhex("0a0b0c0d0e0f") + b"\0" * 6)
add("mlx5_abi", "short", b"\x01\x02")

# ---------------------------------------------------------------------------------------------
# netlink (records as in the discovery capture) and sysfs (fixture files)
# ---------------------------------------------------------------------------------------------

def nla(ty, data):
    b = struct.pack(LE + "HH", 4 + len(data), ty) + data
    return b + b"\0" * (-len(b) % 4)


def nlmsg(ty, flags, seq, payload, pad=True):
    b = struct.pack(LE + "IHHII", 16 + len(payload), ty, flags, seq, 0) + payload
    return b + (b"\0" * (-len(b) % 4) if pad else b"")


dev = (nla(1, struct.pack(LE + "I", 0)) + nla(2, b"rxe0\0") + nla(3, struct.pack(LE + "I", 1))
       + nla(4, struct.pack(LE + "Q", 0x1223C76)) + nla(6, struct.pack(LE + "Q", 0xD0A31DFFFEB917D0))
       + nla(7, struct.pack(LE + "Q", 0xD0A31DFFFEB917D0)) + nla(14, b"\x01") + nla(84, b"\0")
       + nla(67, b"roce\0"))
add("netlink", "get-dump", nlmsg(0x1401, 2, 5, dev) + nlmsg(3, 2, 5, struct.pack(LE + "i", 0)))
chardev = (nla(73, struct.pack(LE + "I", 14)) + nla(72, struct.pack(LE + "Q", 0xE7C0))
           + nla(71, struct.pack(LE + "Q", 2)) + nla(70, b"uverbs0\0"))
add("netlink", "chardev", nlmsg(0x140F, 0, 3, chardev))
add("netlink", "rdma-cm-chardev", nlmsg(0x140F, 0, 4, nla(70, b"rdma_cm\0") + nla(72, struct.pack(LE + "Q", 0xA7C)) + nla(71, struct.pack(LE + "Q", 4))))
add("netlink", "error-eopnotsupp", nlmsg(2, 0, 4, struct.pack(LE + "i", -95) + b"\0" * 16))
add("netlink", "ack", nlmsg(2, 0, 6, b"\0" * 20))
add("netlink", "sys-get", nlmsg(0x1406, 0, 8, nla(93, b"\x01") + nla(0x8000 | 5, nla(1, b"\x02\0\0\0"))))
add("netlink", "two-devices-unpadded", nlmsg(0x1401, 2, 5, dev) + nlmsg(0x1401, 2, 5, nla(1, struct.pack(LE + "I", 1)) + nla(2, b"mlx5_0\0"), pad=False))
add("netlink", "bare-attrs", dev)
add("netlink", "truncated", nlmsg(0x1401, 2, 5, dev)[:50])

# rdma_cm GET_EVENT answers: uid u64, id u32, event u32, status u32, a 304-byte parameter
# union (conn: qp_num, qkey, private_data[256], private_data_len, srq, responder_resources,
# initiator_depth, flow_control, retry_count, rnr_retry_count, valid), reserved u32, ece (2 x u32)
def cm_event(event, status=0, uid=0x1234, cid=3, pdata=b"", full=True, **conn):
    param = struct.pack(LE + "II", conn.get("qp_num", 0x11), conn.get("qkey", 0))
    param += pdata.ljust(256, b"\0") + bytes([len(pdata), 0, conn.get("rr", 1), conn.get("id", 1), 1, 7, 7, 1])
    param = param.ljust(304, b"\0")
    b = struct.pack(LE + "QIII", uid, cid, event, status & 0xFFFFFFFF) + param
    return b + (struct.pack(LE + "III", 0, 0, 0) if full else b"")

for name, data in [
    ("addr-resolved", cm_event(0)), ("route-resolved", cm_event(2)),
    ("connect-request-56", cm_event(4, pdata=bytes(range(56)))),
    ("connect-response-196", cm_event(5, pdata=bytes(i & 0xFF for i in range(196)))),
    ("established", cm_event(9)), ("disconnected", cm_event(10)),
    ("rejected-8", cm_event(8, status=8)), ("route-error", cm_event(3, status=-19)),
    ("old-kernel-short", cm_event(9, full=False)), ("pdata-len-max", cm_event(4, pdata=b"\xff" * 255)),
    ("truncated", cm_event(0)[:100]), ("empty", b""),
]:
    add("cm_event", name, data)

sysfs_root = ROOT / "uverbs/tests/fixtures/sysfs/rxe"
for p in sorted(sysfs_root.rglob("*")):
    if p.is_file():
        add("sysfs", str(p.relative_to(sysfs_root)), p.read_bytes())
for name, text in [
    ("rate-edr", b"100 Gb/sec (4X EDR)\n"), ("rate-hdr", b"200 Gb/sec (2X HDR)\n"),
    ("rate-ndr", b"400 Gb/sec (4X NDR)\n"), ("modalias-cx5", b"pci:v000015B3d00001017sv000015B3sd00000008bc02sc00i00\n"),
    ("modalias-efa", b"pci:v00001D0Fd0000EFA0sv00001D0Fsd00000000bc02sc00i00\n"),
    ("gid-upper", b"FE80:0000:0000:0000:FC3C:7AFF:FEBA:5DF3\n"), ("guid-short-groups", b"1:2:3:4\n"),
    ("hex-big", b"0xFFFFFFFFFFFFFFFF\n"), ("gid-type-v1", b"IB/RoCE v1\n"), ("ll-ib", b"InfiniBand\n"),
    ("node-rnic", b"4: RNIC\n"), ("dec-overflow", b"18446744073709551616\n"),
]:
    add("sysfs", name, text)

# ---------------------------------------------------------------------------------------------
# rperftest matrix: results.jsonl records, the probe line among launcher noise, hostlists
# ---------------------------------------------------------------------------------------------

def side(node, addr, exit_code, js=None, tail=()):
    return {"node": node, "dev": "rxe0", "addr": addr, "gid_index": 1, "exit": exit_code,
            "json": js, "tail": list(tail)}


def record(test, status, value, unit, server, client, reason="", rnd=0):
    return {"test": test, "rail": "rxe0", "round": rnd, "port": 18601, "options": ["-s", "4096", "-n", "200"],
            "server": server, "client": client, "status": status, "reason": reason, "value": value,
            "unit": unit, "median": value, "started_unix": 1764633600.25, "wall_s": 3.3, "deadline_s": 30.5}


bw_json = {"test_info": {"test": "RDMA_Write_BW_Test", "Device": "rxe0"},
           "results": {"MsgSize": 4096, "n_iterations": 200, "BW_peak": 0.0, "BW_average": 4.27, "MsgRate": 0.001093}}
lat_json = {"results": {"MsgSize": 2, "n_iterations": 200, "t_typical": 8072.89, "t_avg": 8100.5, "t_stdev": None}}
ok_bw = record("ib_write_bw", "OK", 4.27, "MB/sec", side("node3", "10.77.0.3", 0, bw_json), side("node1", "10.77.0.1", 0, bw_json), rnd=1)
ok_lat = record("ib_send_lat", "OK", 8072.89, "usec", side("node3", "10.77.0.3", 0, lat_json), side("node2", "10.77.0.2", 0, lat_json))
fail = record("ib_write_bw", "FAIL", None, "MB/sec", side("node4", "10.77.0.4", 1, tail=["Failed status 12: transport retry counter exceeded"]),
              side("node1", "10.77.0.1", None), reason='client on node1 exited 1: "quoted, with a comma"\nand a line break', rnd=2)
line = lambda r: json.dumps(r, separators=(",", ":")).encode()
add("matrix_results", "three-records", b"\n".join(line(r) for r in (ok_bw, ok_lat, fail)) + b"\n")
add("matrix_results", "cut-short", line(ok_bw) + b"\n" + line(fail)[:120])
add("matrix_results", "blank-and-garbage", b"\n\n" + line(ok_lat) + b"\nnot json\n{}\n[1,2]\n")
add("matrix_results", "bad-status", line(dict(ok_bw, status="MAYBE")) + b"\n")
add("matrix_results", "odd-types", line(dict(ok_bw, round=-1, port=70000, value="4.2", options=[1, "x"])) + b"\n")

probe = {"rperftest": "0.1.0", "devices": [
    {"name": "rxe0", "active": True, "state": "ACTIVE", "rate": "2.5 Gb/sec (1X SDR)", "ethernet": True,
     "ipv4": "10.77.0.2", "gid_index": 1, "netdev": "eth0"},
    {"name": "mlx5_0", "active": False, "state": "DOWN", "rate": "", "ethernet": False, "ipv4": None,
     "gid_index": None, "netdev": None}]}
pline = b"@rpt-matrix probe " + json.dumps(probe, separators=(",", ":")).encode()
add("matrix_probe", "banner-then-probe", b"Welcome to node2\nWarning: Permanently added 'node2' to known hosts.\n" + pline + b"\n")
add("matrix_probe", "two-probes", pline.replace(b"rxe0", b"rxe9") + b"\n" + pline + b"\n")
add("matrix_probe", "no-devices", b'@rpt-matrix probe {"rperftest":"0.1.0","devices":[]}\n')
add("matrix_probe", "bad-device", b'@rpt-matrix probe {"rperftest":"0.1.0","devices":[{"active":true}]}\n')
add("matrix_probe", "truncated", pline[:60] + b"\n")

for name, text in [
    ("simple", b"node[1-8]"), ("padded", b"n[01-10],gpu3"), ("product", b"rack[1-2]-n[1-4]"),
    ("list-in-bracket", b"node[1,3,5-7]"), ("huge-range", b"n[1-1000000000]"), ("huge-product", b"a[1-300]b[1-300]"),
    ("option-like", b"-oProxyCommand=x"), ("duplicate", b"node1,node[1-2]"), ("nested", b"n[1-[2-3]]"),
    ("hostfile", b"# nodes\nnode1 slots=4\nnode[2-3]\n\nnode4\n"), ("reversed", b"n[9-1]"), ("empty-item", b"a,,b"),
]:
    add("matrix_hostlist", name, text)
# qperf control messages (layouts in docs/qperf.md; REQ as Debian's qperf 0.4.11 sends it)
# ---------------------------------------------------------------------------------------------

def qperf_req(index, msg_size, time=2, timeout=5, ver=(0, 4, 11), id_=b"", rate=b"", **kw):
    order = ["access_recv", "affinity", "alt_port", "flip", "msg_size", "mtu_size", "no_msgs",
             "poll_mode", "port", "rd_atomic", "sl", "sock_buf_size", "src_path_bits", "time",
             "timeout", "use_cm"]
    vals = dict.fromkeys(order, 0)
    vals.update(msg_size=msg_size, time=time, timeout=timeout, **kw)
    return (struct.pack("<4H", *ver, index) + struct.pack("<16I", *(vals[k] for k in order))
            + id_.ljust(64, b"\0") + rate.ljust(64, b"\0"))


def qperf_stat(cpus=2, ticks=100, real=(1000, 1100), s=(0, 0), r=(0, 0), pad=b"\0" * 4):
    ts = [real[0], 10, 0, 20, 300, 0, 1, 2, 0]
    te = [real[1], 60, 0, 70, 390, 0, 2, 4, 0]
    return (struct.pack("<3I", cpus, ticks, 0) + struct.pack("<18Q", *ts, *te)
            + struct.pack("<12Q", s[0], s[1], 0, r[0], r[1], 0, 0, 0, 0, 0, 0, 0) + pad)


GID_EXT = b"RPQG" + bytes([1, 2, 2, 1]) + bytes(10) + b"\xff\xff" + bytes([10, 99, 0, 1])


def qperf_conf(node=b"vm", cpu=b"2 Cores: Intel Xeon Processor 2.6GHz", os_=b"Linux 6.1.0-57-amd64",
               ver=b"0.4.11", tail=b""):
    return b"".join(x.ljust(64, b"\0")[:64] for x in (node, cpu, os_ + tail, ver))


for name, data in [
    ("req-tcp-lat", qperf_req(9, 1)), ("req-tcp-bw", qperf_req(8, 65536)),
    ("req-udp-bw-n", qperf_req(10, 32768, time=0, no_msgs=1000)),
    ("req-rc-bw-cm", qperf_req(13, 65536, use_cm=1)), ("req-rc-bw", qperf_req(13, 65536, mtu_size=2048, id_=b"rxe0:1")),
    ("req-version-0.5", qperf_req(0, 0, ver=(0, 5, 0))), ("req-index-200", qperf_req(200, 1)),
    ("req-version-only", qperf_req(9, 1)[:6]),
    ("node", struct.pack("<Q7I", 0x7F0011223344, 1, 0x11, 0xABCDEF, 0, 0x1234, 0, 16) + b"\xde\xad\xbe\xef"),
    ("stat-tcp-lat", qperf_stat(s=(192550, 192550), r=(192550, 192550), pad=b"\xaa\xbb\xcc\xdd")),
    ("stat-zero-ticks", qperf_stat(ticks=0)), ("stat-clock-backwards", qperf_stat(real=(1100, 1000))),
    ("conf", qperf_conf()), ("conf-garbage-after-nul", qperf_conf(tail=b"\0\x13\x37garbage")),
    ("conf-escape", qperf_conf(node=b"\x1b[2Jevil")),
    ("port-19765", struct.pack("<I", 19765)), ("port-0", struct.pack("<I", 0)), ("port-65536", struct.pack("<I", 65536)),
    ("error-text", b"bad request index: 200"), ("error-upgrade", b"upgrade qperf on server from 0.4.11 to 0.5.0"),
    ("empty", b""),
    # rperftest's GID extension: in the REQ id after the NUL, the 24-byte message, the NODE mark.
    ("req-rc-bw-gid-ext", qperf_req(13, 65536, mtu_size=2048, id_=b"rxe0:1".ljust(40, b"\0") + GID_EXT)),
    ("gid-ext", GID_EXT), ("gid-ext-v2", GID_EXT[:4] + b"\x02" + GID_EXT[5:]),
    ("node-marked", struct.pack("<Q7I", 0x7F0011223344, 0, 0x11, 0xABCDEF, 0, 0x1234, 0, 16) + b"RPQG"),
]:
    add("qperf_wire", name, data)

# ---------------------------------------------------------------------------------------------
# rping: the 16-byte big-endian advertisement {addr u64, rkey u32, len u32}; command lines
# ---------------------------------------------------------------------------------------------

add("rping", "adv-64", struct.pack(">QII", 0x7F3B115CA000, 0x00B303, 64))
add("rping", "adv-zero-len", struct.pack(">QII", 0x1000, 7, 0))
add("rping", "adv-huge-len", struct.pack(">QII", 0x1000, 7, 0xFFFFFFFF))
add("rping", "adv-short", struct.pack(">QI", 0x1000, 7))
add("rping", "adv-long", struct.pack(">QII", 0x1000, 7, 64) + b"\0\0\0\0")
add("rping", "payload", b"rdma-ping-0: ABCDEFGHIJKLMNOPQRSTUVWXYZ[\\]^_`abcdefghijklmnopqr\0")
add("rping", "args-client", b"-c\0-a\0" + b"10.77.0.1\0-C\010\0-V\0-S\0100")
add("rping", "args-server", b"-s\0-vVd\0-p\07174\0-P\0--listen-timeout=5")
add("rping", "args-bad", b"-c\0-a\0node1\0-S\01\0--timeout\0-3")

for name, text in [
    ("state", b"4: ACTIVE\n"), ("rate", b"2.5 Gb/sec (1X SDR)\n"), ("hex", b"0x00010000\n"),
    ("octal", b"0777\n"), ("guid", b"f88f:65ff:fe3c:39b5\n"), ("gid", b"0000:0000:0000:0000:0000:ffff:0a4d:0001\n"),
    ("overflow", b"18446744073709551616\n"), ("negative", b"-1\n"), ("short-guid", b"1:2:3\n"), ("binary", bytes(range(0, 32))),
]:
    add("diag_sysfs", name, text)

# doctor's peer line: a hello as a server sends it, its result line, and broken ones.
DOCTOR_HELLO = (b"rperftest-doctor 1 role=serve host=node4 dev=rxe0 port=1 ll=Ethernet lid=0 "
                b"gid=00000000000000000000ffff0a630004 gidx=1 gtype=RoCE_v2 mtu=1024 ndmtu=1500 "
                b"qpn=17 psn=4660 addr=7f00dead0000 rkey=abc len=8192\n")
add("doctor_wire", "hello", DOCTOR_HELLO)
add("doctor_wire", "hello-v1-gid", DOCTOR_HELLO.replace(b"RoCE_v2", b"RoCE_v1").replace(b"gidx=1", b"gidx=4"))
add("doctor_wire", "hello-bad-mtu", DOCTOR_HELLO.replace(b"mtu=1024", b"mtu=1000"))
add("doctor_wire", "hello-short", DOCTOR_HELLO[:60])
add("doctor_wire", "hello-twice", DOCTOR_HELLO.rstrip(b"\n") + b" qpn=18\n")
add("doctor_wire", "result", b"rperftest-doctor 1 result recv=ok tx=12 rx=11\n")
add("doctor_wire", "perftest-key", b"0000:000011:00abcdef:00001234:0000000000000000:00000000000000000000ffff0a630004")

# ---------------------------------------------------------------------------------------------
# bnxt_re completion entries from the libbnxt_re oracle run (providers/tests/fixtures/bnxt_re/)
# ---------------------------------------------------------------------------------------------

def bnxt_re_seeds():
    f = ROOT / "providers/tests/fixtures/bnxt_re/static.jsonl"
    entries = []
    for line in f.read_text().splitlines():
        j = json.loads(line)
        if j["ev"] == "cqe":
            b = bytearray(bytes.fromhex(j["bytes"]))
            if j["qp"]:
                b[31] |= 0x80  # the target puts its QP's handle in
            b[31] |= 0x40      # and the phase the CQ expects
            entries.append((j["qp"] or "none", bytes(b)))
    # head byte: phase 1, 3 sends, 2 receives
    head = bytes([1 | 3 << 1 | 2 << 4])
    seen = set()
    for name, b in entries:
        kind = (b[24] >> 1) & 0xF
        key = (kind, b[25], b[26] & 0x0A)
        if key in seen:
            continue
        seen.add(key)
        add("bnxt_re_cqe", f"{name}-k{kind}-st{b[25]}-f{b[26]}", head + b)
    add("bnxt_re_cqe", "all-in-a-row", head + b"".join(b for _, b in entries[:24]))


bnxt_re_seeds()


# ---------------------------------------------------------------------------------------------

def main() -> int:
    total = 0
    for target, files in sorted(out.items()):
        d = CORPUS / target
        d.mkdir(parents=True, exist_ok=True)
        for old in d.glob("seed-*"):
            if old.name not in files:
                old.unlink()
        for name, data in sorted(files.items()):
            (d / name).write_bytes(data)
        total += len(files)
        print(f"{target:14} {len(files):3} seeds")
    print(f"{total} seed files under {CORPUS.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
