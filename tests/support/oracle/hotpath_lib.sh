# Shell functions both hot-path run.sh scripts share (tests/mlx5-oracle/hotpath,
# tests/rxe-oracle/hotpath); sourced after the caller has set B (build dir), N, NCG, RUNS, OURS
# (our example binary), CBIN (the C harness) and defined c_run (runs a command with the shim).
field() { sed -n "s/.* $1=\([^ ]*\).*/\1/p"; }
best() { # best ns/op of RUNS runs; also keeps the last output line in $B/last_$1_$2
  b=""; i=0
  while [ $i -lt $RUNS ]; do
    case $1 in c_*) out=$(c_run $CBIN $2 $N);; *) out=$("$OURS" $2 $N);; esac
    echo "$out" > $B/last_$1_$2; echo "  $out" >&2
    v=$(echo "$out" | field ns_per_op)
    if [ -z "$b" ] || [ "$(awk -v v="$v" -v b="$b" 'BEGIN { print (v < b) }')" = 1 ]; then b=$v; fi
    i=$((i + 1))
  done
  echo "$b"
}
ir() { # Ir of the loop function / iterations
  case $1 in
    c_*) c_run valgrind --tool=callgrind --toggle-collect="hot_loop_$2" --callgrind-out-file=$B/cg_$1_$2.out $CBIN $2 $NCG > $B/cg_$1_$2.txt 2>&1;;
    *) valgrind --tool=callgrind --toggle-collect="*hot_loop_$2*" --callgrind-out-file=$B/cg_$1_$2.out "$OURS" $2 $NCG > $B/cg_$1_$2.txt 2>&1;;
  esac
  tot=$(sed -n 's/.*Collected : *\([0-9]*\).*/\1/p' $B/cg_$1_$2.txt)
  iters=$(field iters < $B/cg_$1_$2.txt)
  awk -v t="$tot" -v n="$iters" 'BEGIN { printf "%.1f", t / n }'
}
