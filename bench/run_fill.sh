#!/usr/bin/env bash
# run_fill.sh -- `make bench-fill`: random-write fills of several sizes, each
# followed by random reads, tierkv (defaults) against the stores it must beat
# there, with direct I/O (reads and background writes reach the device):
#   4m     4M x 1 KiB (4x the 1 GiB pool: the sustained state once the pool
#          is full): tierkv, rocksdb, rocksdb-l0nvm (RocksDB with its WAL
#          and first levels on the directory of tierkv's pool)
#   1m     1M x 1 KiB (fits the pool): tierkv, rocksdb
#   300k   300k x 1 KiB (a short fill): tierkv, leveldb
#   20m    20M x 100 B (CPU per operation dominates): tierkv, rocksdb
# One client thread, each engine in its own process on a fresh database,
# READS random reads after each fill. REPEAT=N rounds, interleaved; one
# table of medians per group (bench/headline_report.py) in
# bench/results/<date>-fill/table.md. About 8 minutes per round on 2 cores.
# Knobs: REPEAT, FILLS (the groups, default "4m 1m 300k 20m"), READS, DB.
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD=${BUILD:-build}
REPEAT=${REPEAT:-1}
FILLS=${FILLS:-4m 1m 300k 20m}
READS=${READS:-200000}
DB=${DB:-/tmp/tkv_bench}
rocks=rocksdb
[ -f "$BUILD/deps/librocksdbjni-linux64.so" ] || rocks=rocksdb-deb
out=bench/results/$(date -u +%Y%m%d-%H%M%S)-fill
mkdir -p "$out"

# configs GROUP -- the configurations of a group, tierkv first
configs() {
    case "$1" in
    4m) echo "4m-tierkv 4m-rocksdb 4m-rocksdb-l0nvm" ;;
    1m) echo "1m-tierkv 1m-rocksdb" ;;
    300k) echo "300k-tierkv 300k-leveldb" ;;
    20m) echo "20m-tierkv 20m-rocksdb" ;;
    *) echo "run_fill.sh: unknown group $1" >&2; exit 2 ;;
    esac
}

for r in $(seq 1 "$REPEAT"); do
    for g in $FILLS; do
        for c in $(configs "$g"); do
            case "$g" in
            4m) size=(--num=4000000 --value_size=1024) ;;
            1m) size=(--num=1000000 --value_size=1024) ;;
            300k) size=(--num=300000 --value_size=1024) ;;
            20m) size=(--num=20000000 --value_size=100) ;;
            esac
            engine=${c#*-}
            [ "$engine" = rocksdb ] && engine=$rocks
            dir="$out/$c/run$r"
            mkdir -p "$dir"
            echo "== $(date -u +%T) round $r of $REPEAT: $c"
            (set -x; "$BUILD/tkv_bench" --benchmarks=fillrandom,readrandom "${size[@]}" --reads="$READS" --direct_io \
                --db="$DB" --engine="$engine" --label="$c" --csv="$dir") > "$out/$c-run$r.txt" 2>&1 \
                || { tail -20 "$out/$c-run$r.txt"; exit 1; }
            grep -E '^(fillrandom|readrandom) ' "$out/$c-run$r.txt" || true
        done
    done
done
for g in $FILLS; do
    echo "### $g"
    python3 bench/headline_report.py "$out" $(configs "$g")
    echo
done | tee "$out/table.md"
echo "make bench-fill: tables (medians of $REPEAT) in $out/table.md"
