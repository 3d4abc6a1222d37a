#!/usr/bin/env bash
# run_headline.sh -- `make bench`. Until the multi-engine tkv_bench lands (its own
# issue), this runs the tierkv-only driver on 1M keys and keeps the output in
# bench/results/.
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD=${BUILD:-build}
mkdir -p bench/results
out=bench/results/mini_bench-$(date +%Y%m%d-%H%M%S).txt
echo "make bench: tierkv alone (tkv_bench with RocksDB/LevelDB side by side comes with the benchmark issue)"
"$BUILD/mini_bench" --num "${NUM:-1000000}" --db "${DB:-/tmp/tkv_bench_db}" | tee "$out"
echo "results written to $out"
