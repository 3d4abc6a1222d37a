#!/bin/bash
# interleaved A/B: base (818c16c) vs new (deadline) binaries; args: NUM REPS
NUM=$1; REPS=$2; OUT=/tmp/abd/$NUM; mkdir -p $OUT
for i in $(seq 1 $REPS); do
  for v in base new; do
    if [ $v = base ]; then B=/tmp/ab-base/tkv_bench; else B=/tmp/ab-new/tkv_bench; fi
    rm -rf /tmp/abdb
    $B --benchmarks=fillrandom --num=$NUM --value_size=1024 --direct_io --db=/tmp/abdb --engine=tierkv --label=$v > $OUT/$v-$i.txt 2>&1
    echo "$v $i $(grep '^fillrandom' $OUT/$v-$i.txt | tail -1 | awk '{print $3, "p99", $6, "p999", $7, "max", $8, "stall_ms", $13}') $(grep -o 'stops_flush_running=[0-9]*' $OUT/$v-$i.txt) $(grep -o 'stalls_over_10ms=[0-9]*' $OUT/$v-$i.txt)"
  done
done
