#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# run_headline.sh -- `make bench`: the headline comparison on the embedded
# default configuration, tierkv against RocksDB (the release build from the
# rocksdbjni jar; Debian's build if that is missing), with the two ablations
# that tell what each of tierkv's ideas buys:
#   tierkv         the defaults (l0=matrix, scheduler=silk)
#   rocksdb        RocksDB, same DRAM, WAL, compression and bloom filters
#   tierkv-fifo    scheduler=fifo: no SILK scheduler (no internal rate limit,
#                  no pauses or aborts of deep compactions)
#   tierkv-l0sst   l0=sst: no matrix container (L0 as SST files on the SSD)
#   tierkv-volatile  pmem_mode=volatile: the pool without its sync points
#                  (what durability costs; a power cut loses rows)
# Benchmarks, each configuration in its own process and on a fresh database:
#   fillrandom  NUM random 1 KiB writes (closed loop); the default 4M writes
#               are 4x tierkv's 1 GiB pool, so the fill runs long past the
#               point where the pool is full: the steady state, not a burst
#               into empty buffers
#   readrandom  READS random point reads over those keys (closed loop)
#   ycsba       YCSB-A (50 % reads, 50 % updates, zipfian) open loop, bursty:
#               RATE repeated for DURATION seconds
# 2 client threads everywhere. Same DRAM (2 x 64 MiB memtables + 128 MiB block
# cache), WAL on without per-write sync, page cache allowed (DIRECT=1 for
# O_DIRECT on both).
# REPEAT=N runs every configuration N times, interleaved (configuration order
# within a round), and the table gives the median of each figure: about 13
# minutes per round on 2 cores. Writes table.md (the medians), each run's
# output and CSV series, and PNG plots of the first round to
# bench/results/<date>/ (and bench/results/latest).
# Knobs: NUM, READS, RATE, DURATION, REPEAT, CONFIGS, DB, DIRECT.
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD=${BUILD:-build}
NUM=${NUM:-4000000}
READS=${READS:-1000000}
RATE=${RATE:-10000:10s,50000:10s}
DURATION=${DURATION:-90}
REPEAT=${REPEAT:-1}
DB=${DB:-/tmp/tkv_bench}
CONFIGS=${CONFIGS:-tierkv rocksdb tierkv-fifo tierkv-l0sst tierkv-volatile}
rocks=rocksdb
[ -f "$BUILD/deps/librocksdbjni-linux64.so" ] || rocks=rocksdb-deb
stamp=$(date -u +%Y%m%d-%H%M%S)
out=bench/results/$stamp
mkdir -p "$out"
common=(--benchmarks=fillrandom,readrandom,ycsba --num="$NUM" --reads="$READS" --rate="$RATE" --open_loop=ycsba
        --duration="$DURATION" --threads=2 --db="$DB")
[ "${DIRECT:-0}" = 1 ] && common+=(--direct_io)
for r in $(seq 1 "$REPEAT"); do
    for c in $CONFIGS; do
        case "$c" in
        tierkv) args=(--engine=tierkv) ;;
        rocksdb) args=(--engine="$rocks") ;;
        tierkv-fifo) args=(--engine=tierkv --opt scheduler=fifo) ;;
        tierkv-l0sst) args=(--engine=tierkv --opt l0=sst) ;;
        tierkv-volatile) args=(--engine=tierkv --opt pmem_mode=volatile) ;;
        *) echo "run_headline.sh: unknown configuration $c" >&2; exit 2 ;;
        esac
        dir="$out/$c/run$r"
        mkdir -p "$dir"
        plot=()
        [ "$r" = 1 ] && plot=(--plot)
        echo "== round $r of $REPEAT: $c"
        (set -x; "$BUILD/tkv_bench" "${common[@]}" "${args[@]}" --label="$c" --csv="$dir" "${plot[@]}") \
            > "$out/$c-run$r.txt" 2>&1 || { tail -20 "$out/$c-run$r.txt"; exit 1; }
        grep -E '^(fillrandom|readrandom|ycsba) ' "$out/$c-run$r.txt" || true
    done
done
python3 bench/headline_report.py "$out" $CONFIGS | tee "$out/table.md"
ln -sfn "$stamp" bench/results/latest
echo "make bench: table (medians of $REPEAT) in $out/table.md; each run's output, CSV series and plots in $out/ (also bench/results/latest/)"
