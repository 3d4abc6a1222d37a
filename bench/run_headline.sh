#!/usr/bin/env bash
# run_headline.sh -- `make bench`: the headline comparison, tierkv vs RocksDB
# (the release build from the rocksdbjni jar; Debian's build if that is
# missing), on the embedded default configuration:
#   fillrandom  NUM random 1 KiB writes (closed loop)
#   readrandom  NUM random point reads (closed loop)
#   ycsba       YCSB-A (50 % reads, 50 % updates, zipfian) open loop, bursty:
#               RATE repeated for DURATION seconds
# 2 client threads everywhere. Same DRAM (2 x 64 MiB memtables + 128 MiB block cache), WAL on without
# per-write sync, page cache allowed (DIRECT=1 for O_DIRECT on both).
# Sized for < 10 minutes on 2 cores. Writes the table, CSV series and PNG
# plots to bench/results/<date>/ (and bench/results/latest).
# Knobs: NUM, RATE, DURATION, ENGINES, DB, DIRECT.
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD=${BUILD:-build}
NUM=${NUM:-1000000}
RATE=${RATE:-10000:10s,50000:10s}
DURATION=${DURATION:-90}
DB=${DB:-/tmp/tkv_bench}
if [ -z "${ENGINES:-}" ]; then
    if [ -f "$BUILD/deps/librocksdbjni-linux64.so" ]; then ENGINES=tierkv,rocksdb; else ENGINES=tierkv,rocksdb-deb; fi
fi
stamp=$(date -u +%Y%m%d-%H%M%S)
out=bench/results/$stamp
mkdir -p "$out"
extra=()
[ "${DIRECT:-0}" = 1 ] && extra+=(--direct_io)
set -x
"$BUILD/tkv_bench" --engine="$ENGINES" --benchmarks=fillrandom,readrandom,ycsba --num="$NUM" \
    --rate="$RATE" --open_loop=ycsba --duration="$DURATION" --threads=2 --db="$DB" --csv="$out" --plot "${extra[@]}" \
    | tee "$out/table.txt"
set +x
ln -sfn "$stamp" bench/results/latest
echo "make bench: table, CSV series and plots written to $out/ (also bench/results/latest/)"
