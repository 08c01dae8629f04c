#!/bin/bash
# The guest half of tests/vm/netns-bench.sh: for each size, netns-cluster.sh up N --rdma yes,
# the matrix over ssh (sampled for threads and fds), --resume on the finished file, down.
set -uo pipefail
SIZES=$1; MOPTS=$2; shift 2   # MOPTS: matrix options (unquoted: words without spaces)
NC=/mnt/host/netns-cluster.sh
RPT=/mnt/host/rperftest
printf '%-5s %-6s %-7s %-10s %-10s %-6s %-9s %-9s %-8s %-11s %-9s %s\n' nodes pairs up_s preflight_s wall_s ideal_s wall/ideal rss_MiB threads_max fds_max jsonl_KiB resume_s
for N in $SIZES; do
    t0=$(date +%s.%N)
    bash "$NC" up "$N" --rdma yes >/tmp/up.log 2>&1 || { cat /tmp/up.log; exit 1; }
    up=$(awk -v a="$t0" -v b="$(date +%s.%N)" 'BEGIN{printf "%.0f", b-a}')
    S=$(bash "$NC" ssh)
    rm -rf /tmp/m
    # shellcheck disable=SC2086
    /usr/bin/time -v "$RPT" matrix --hosts "n[1-$N]" --launcher ssh --ssh "$S" --remote-bin "$RPT" $MOPTS \
        --preflight-timeout 600 --no-retry --rel 0.25 --out /tmp/m -- "$@" >/tmp/m.out 2>/tmp/m.err &
    tp=$!
    thr=0 fds=0
    while kill -0 "$tp" 2>/dev/null; do   # the coordinator is time's child
        p=$(grep -l "^PPid:[[:space:]]*$tp\$" /proc/[0-9]*/status 2>/dev/null | head -1 | cut -d/ -f3)
        if [ -n "$p" ]; then
            t=$(awk '/^Threads:/ {print $2}' /proc/$p/status 2>/dev/null); [ "${t:-0}" -gt "$thr" ] && thr=$t
            f=$(ls /proc/$p/fd 2>/dev/null | wc -l); [ "$f" -gt "$fds" ] && fds=$f
        fi
        sleep 1
    done
    wait "$tp"
    [ -s /tmp/m/results.jsonl ] || { echo "    no results at $N nodes:"; grep -v "^	" /tmp/m.err | tail -5; bash "$NC" down; exit 1; }
    rss=$(awk '/Maximum resident/ {printf "%.1f", $NF/1024}' /tmp/m.err)
    pre=$(grep -o 'up in [0-9.]* s' /tmp/m.err | awk '{print $3}')
    awk 'function num(k,  i) { i = index($0, "\"" k "\":"); return i ? substr($0, i + length(k) + 3) + 0 : 0 }
        { r=num("round"); s=num("started_unix"); w=num("wall_s"); n++
          if (w > m[r]) m[r]=w; if (!lo || s < lo) lo=s; if (s+w > hi) hi=s+w }
        END { for (r in m) id+=m[r]; printf "%d %.1f %.1f\n", n, hi-lo, id }' /tmp/m/results.jsonl >/tmp/m.fig
    read -r pairs wall ideal </tmp/m.fig
    kib=$(( $(stat -c %s /tmp/m/results.jsonl) / 1024 ))
    t1=$(date +%s.%N)
    # shellcheck disable=SC2086
    "$RPT" matrix --hosts "n[1-$N]" --launcher ssh --ssh "$S" --remote-bin "$RPT" $MOPTS --preflight-timeout 600 \
        --no-retry --rel 0.25 --out /tmp/m --resume -- "$@" >/tmp/r.out 2>&1
    rs=$(awk -v a="$t1" -v b="$(date +%s.%N)" 'BEGIN{printf "%.1f", b-a}')
    printf '%-5s %-6s %-7s %-10s %-10s %-6s %-9s %-9s %-8s %-11s %-9s %s\n' "$N" "$pairs" "$up" "${pre:-?}" "$wall" "$ideal" \
        "$(awk -v a="$wall" -v b="$ideal" 'BEGIN{printf "%.2f", (b > 0 ? a/b : 0)}')" "$rss" "$thr" "$fds" "$kib" "$rs"
    grep -E 'pair\(s\) in' /tmp/m.out | sed 's/^/    /'
    ok=$(grep -c '"status":"OK"' /tmp/m/results.jsonl)
    echo "    $ok of $pairs OK; report.html $(( $(stat -c %s /tmp/m/report.html) / 1024 )) KiB"
    [ -d /mnt/share ] && cp /tmp/m/report.html "/mnt/share/report-$N.html" && cp /tmp/m/results.jsonl "/mnt/share/results-$N.jsonl" && cp /tmp/m.out "/mnt/share/matrix-$N.out" && cp /tmp/m.err "/mnt/share/matrix-$N.err"
    bash "$NC" down >/dev/null 2>&1 || echo "    down: $(bash "$NC" down 2>&1)"
done
