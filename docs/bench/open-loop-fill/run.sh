#!/usr/bin/env bash
# run.sh -- the 4M x 1 KiB fill as open-loop load at a rate both engines
# sustain: 90,000 writes/s for 45 s (4.05M writes, 4x the 1 GiB pool),
# tierkv and RocksDB interleaved, ROUNDS rounds. Output: OUT/<engine>-r<N>/
# (timeline.csv, summary.csv) and OUT/summary.txt.
set -eu
BUILD=${BUILD:-build}; OUT=${OUT:-/tmp/open-loop-fill}; ROUNDS=${ROUNDS:-3}; RATE=${RATE:-90000}; DUR=${DUR:-45}
mkdir -p "$OUT"
for r in $(seq 1 "$ROUNDS"); do
    for e in tierkv rocksdb; do
        d="$OUT/$e-r$r"; rm -rf /tmp/tkv_bench "$d"; mkdir -p "$d"
        "$BUILD/tkv_bench" --engine=$e --benchmarks=fillrandom --open_loop=fillrandom --rate=$RATE:${DUR}s \
            --duration=$DUR --num=$((RATE * DUR)) --value_size=1024 --direct_io --db=/tmp/tkv_bench --csv="$d" \
            > "$d/out.txt" 2>&1
        echo "round $r $(grep -A1 '^benchmark' "$d/out.txt" | tail -1)" | tee -a "$OUT/summary.txt"
    done
done
