#!/bin/sh
# run.sh -- the hinted-seek A/B (seek_hints=1 vs 0) on one database whose data is
# all in the matrix container's rows: one fill, then seekrandom with 0 and 10 nexts,
# 3 alternating runs per setting, each run its own process on the kept database.
# Usage (from the repository root, after `make build/tkv_bench`):
#   sh docs/bench/hint-seek/run.sh [OUTDIR]      (default docs/bench/hint-seek)
# Each run's output gets the last "rows:" and "seeks:" lines of tkv.matrix appended;
# log.txt has the 1-minute load at each start.
set -eu
OUT=${1:-docs/bench/hint-seek}
DB=${DB:-/tmp/hintseek-bench}
NUM=${NUM:-300000}
DUR=${DUR:-15}
COMMON="--engine=tierkv --num=$NUM --value_size=1024 --memtable=16M --db=$DB --opt matrix_trigger=100"
mkdir -p "$OUT"
rm -rf "$DB" "$DB.props"
: >"$OUT/log.txt"
echo "$(date -u +%T) fill load $(cut -d' ' -f1 /proc/loadavg)" >>"$OUT/log.txt"
build/tkv_bench $COMMON --benchmarks=fillrandom --keep_db >"$OUT/fill.txt" 2>&1
for nexts in 0 10; do
    for run in 1 2 3; do
        for hints in 1 0; do
            f="$OUT/seek-n$nexts-h$hints-run$run"
            rm -f "$DB.props"
            echo "$(date -u +%T) seek-n$nexts-h$hints-run$run load $(cut -d' ' -f1 /proc/loadavg)" >>"$OUT/log.txt"
            TKV_BENCH_PROPERTY_LOG="$DB.props" build/tkv_bench $COMMON --benchmarks=seekrandom --seek_nexts=$nexts \
                --duration=$DUR --use_existing_db --keep_db --opt seek_hints=$hints >"$f.txt" 2>&1
            { echo "# last tkv.matrix lines of TKV_BENCH_PROPERTY_LOG:"; grep '^rows:' "$DB.props" | tail -1
              grep '^seeks:' "$DB.props" | tail -1; } >>"$f.txt"
        done
    done
done
rm -rf "$DB" "$DB.props"
