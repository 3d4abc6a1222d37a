#!/bin/bash
NUM=$1; REPS=$2; OUT=/tmp/abh/$NUM; mkdir -p $OUT
for i in $(seq 1 $REPS); do
  for v in base new; do
    if [ $v = base ]; then B=/tmp/ab-base/tkv_bench; else B=/tmp/ab-new/tkv_bench; fi
    rm -rf /tmp/abdb
    /tmp/hog.sh & H=$!
    $B --benchmarks=fillrandom --num=$NUM --value_size=1024 --direct_io --db=/tmp/abdb --engine=tierkv --label=$v > $OUT/$v-$i.txt 2>&1
    kill $H; pkill -f "while :; do :; done"; wait $H 2>/dev/null
    echo "$v $i $(grep '^fillrandom' $OUT/$v-$i.txt | tail -1 | awk '{print "ops", $3, "p99", $6, "p999", $7, "max", $8, "stalls", $11, "stall_ms", $12}') $(grep -o 'stops_flush_running=[0-9]*\|max_stall_us=[0-9]*\|stalls_over_10ms=[0-9]*' $OUT/$v-$i.txt | tr '\n' ' ')"
  done
done
