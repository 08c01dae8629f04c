#!/bin/bash
# fault rate: node4 limited to 8 Mbit/s (1 MB/s) both ways; ib_write_bw from
# node3 into node4 reports at most that, while the run itself passes.
# timeout: 240
. "$CLUSTER_LIB"
X="-d rxe0 -x $GIDX"
"$CL" fault node4 rate 8mbit || fail "fault rate"
pair "write_bw at 8mbit" node4 "rperftest ib_write_bw $X -s 65536 -n 64" node3 "rperftest ib_write_bw $X -s 65536 -n 64" || fail "write_bw under rate"
bw=$(grep -E '^ *65536 +64 ' write_bw_at_8mbit.client | awk '{print $4}')
echo "BW average $bw MB/sec at 8mbit"
awk "BEGIN{exit !($bw <= 1.2)}" || fail "BW average $bw MB/sec above the 1 MB/s limit"
