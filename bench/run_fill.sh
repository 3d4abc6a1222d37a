#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# run_fill.sh -- `make bench-fill`: random-write fills of several sizes, each
# followed by random reads, tierkv (defaults) against the stores it must beat
# there, with direct I/O (reads and background writes reach the device):
#   4m     4M x 1 KiB (4x the 1 GiB pool: the sustained state once the pool
#          is full): tierkv, tierkv-volatile (pmem_mode=volatile: the pool
#          without its sync points, what durability costs), rocksdb,
#          rocksdb-l0nvm (RocksDB with its WAL and first levels on the
#          directory of tierkv's pool)
#   16m    16M x 1 KiB (16x the pool: the steady state): tierkv, rocksdb
#   1m     1M x 1 KiB (fits the pool): tierkv, tierkv-volatile, rocksdb
#   300k   300k x 1 KiB (a short fill): tierkv, tierkv-volatile, leveldb
#   20m    20M x 100 B (CPU per operation dominates): tierkv, rocksdb
# One client thread, each engine in its own process on a fresh database,
# READS random reads after each fill. REPEAT=N rounds, interleaved; one
# table of medians per group (bench/headline_report.py) in
# bench/results/<date>-fill/table.md, with the bytes each fill wrote to the
# device under DB (/proc/diskstats, after a sync before and after the run;
# one engine per process, so the count is the engine's) and the disk it uses
# after the fill and reads (blocks of its files at close, the pool included).
# About 14 minutes per
# round on 2 cores.
# Knobs: REPEAT, FILLS (the groups, default "4m 1m 300k 20m 16m"), READS, DB,
# ENGINES (only these engines of each group, e.g. "tierkv rocksdb"; default
# all of them).
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD=${BUILD:-build}
REPEAT=${REPEAT:-1}
FILLS=${FILLS:-4m 1m 300k 20m 16m}
ENGINES=${ENGINES:-}
READS=${READS:-200000}
DB=${DB:-/tmp/tkv_bench}
rocks=rocksdb
[ -f "$BUILD/deps/librocksdbjni-linux64.so" ] || rocks=rocksdb-deb
out=bench/results/$(date -u +%Y%m%d-%H%M%S)-fill
mkdir -p "$out"

# configs GROUP -- the configurations of a group, tierkv first (those of
# ENGINES only, when it is set)
configs() {
    local c
    for c in $(all_configs "$1"); do
        if [ -z "$ENGINES" ] || [[ " $ENGINES " == *" ${c#*-} "* ]]; then echo "$c"; fi
    done
}
all_configs() {
    case "$1" in
    4m) echo "4m-tierkv 4m-volatile 4m-rocksdb 4m-rocksdb-l0nvm" ;;
    16m) echo "16m-tierkv 16m-rocksdb" ;;
    1m) echo "1m-tierkv 1m-volatile 1m-rocksdb" ;;
    300k) echo "300k-tierkv 300k-volatile 300k-leveldb" ;;
    20m) echo "20m-tierkv 20m-rocksdb" ;;
    *) echo "run_fill.sh: unknown group $1" >&2; exit 2 ;;
    esac
}

# dev_sectors -- sectors written so far to the block device that holds DB
# (the whole disk of its partition: /proc/diskstats field 10).
mkdir -p "$DB"
dev=$(basename "$(df --output=source "$DB" | tail -1)")
[ -e "/sys/class/block/$dev/partition" ] && dev=$(basename "$(readlink -f "/sys/class/block/$dev/..")")
dev_sectors() { awk -v d="$dev" '$3 == d { print $10 }' /proc/diskstats; }

for r in $(seq 1 "$REPEAT"); do
    for g in $FILLS; do
        for c in $(configs "$g"); do
            case "$g" in
            4m) size=(--num=4000000 --value_size=1024) ;;
            1m) size=(--num=1000000 --value_size=1024) ;;
            300k) size=(--num=300000 --value_size=1024) ;;
            20m) size=(--num=20000000 --value_size=100) ;;
            16m) size=(--num=16000000 --value_size=1024) ;;
            esac
            engine=${c#*-}
            extra=()
            [ "$engine" = volatile ] && { engine=tierkv; extra=(--opt pmem_mode=volatile); }
            [ "$engine" = rocksdb ] && engine=$rocks
            dir="$out/$c/run$r"
            mkdir -p "$dir"
            echo "== $(date -u +%T) round $r of $REPEAT: $c"
            sync; s0=$(dev_sectors)
            (set -x; "$BUILD/tkv_bench" --benchmarks=fillrandom,readrandom "${size[@]}" --reads="$READS" --direct_io \
                --db="$DB" --engine="$engine" --label="$c" --csv="$dir" "${extra[@]}") > "$out/$c-run$r.txt" 2>&1 \
                || { tail -20 "$out/$c-run$r.txt"; exit 1; }
            sync; s1=$(dev_sectors)
            [ -n "$s0" ] && [ -n "$s1" ] && echo $(( (s1 - s0) * 512 )) > "$dir/device_bytes"
            grep -E '^(fillrandom|readrandom) ' "$out/$c-run$r.txt" || true
            [ -f "$dir/device_bytes" ] && echo "device bytes written: $(cat "$dir/device_bytes")"
        done
    done
done
# byte_medians FILE TITLE -- per configuration of the group, the median over
# rounds of the number each run left in run*/FILE, in GB, and every round's.
byte_medians() {
    echo "$2"
    for c in $(configs "$g"); do
        python3 - "$out/$c" "$c" "$1" <<'PY'
import glob, statistics, sys
v = [int(open(f).read()) for f in sorted(glob.glob(sys.argv[1] + "/run*/" + sys.argv[3]))]
print(f"- {sys.argv[2]}: " + (f"{statistics.median(v) / 1e9:.2f} GB ({', '.join(f'{x / 1e9:.2f}' for x in v)})" if v else "n/a"))
PY
    done
    echo
}
for g in $FILLS; do
    echo "### $g"
    python3 bench/headline_report.py "$out" $(configs "$g")
    echo
    byte_medians device_bytes "device bytes written per run (fill and reads, sync before and after; median over rounds):"
    byte_medians disk_bytes "disk used after each run (blocks of the engine's files at close, the pool included; median over rounds):"
done | tee "$out/table.md"
echo "make bench-fill: tables (medians of $REPEAT) in $out/table.md"
