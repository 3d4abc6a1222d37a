#!/bin/bash
# hint-seek A/B at 50 nexts (the setting), same setup as docs/bench/hint-seek.md
cd /work/main; DB=/tmp/hintseek-bench; OUT=/tmp/hs
COMMON="--engine=tierkv --num=300000 --value_size=1024 --memtable=16M --db=$DB --opt matrix_trigger=100"
rm -rf $DB $DB.props
build/tkv_bench $COMMON --benchmarks=fillrandom --keep_db > $OUT/fill.txt 2>&1
for r in 1 2 3; do for h in 1 0; do
  echo "run $r hints=$h load $(cut -d' ' -f1 /proc/loadavg)" >> $OUT/log.txt
  TKV_BENCH_PROPERTY_LOG=$DB.props-h$h-r$r build/tkv_bench $COMMON --benchmarks=seekrandom --seek_nexts=50 \
    --duration=15 --use_existing_db --keep_db --opt seek_hints=$h > $OUT/seek-n50-h$h-run$r.txt 2>&1
  echo "n50 r$r h$h $(grep '^seekrandom' $OUT/seek-n50-h$h-run$r.txt | tail -1 | awk '{print $3}') $(grep -o 'comparisons_per_seek=[0-9.]*' $DB.props-h$h-r$r | tail -1)"
done; done
rm -rf $DB
