#!/bin/bash
# The async-io measurements (docs/bench/async-io.md); run from the repository root
# after building both 4M x 1 KiB databases (commands in that file).
# usage: async_measure.sh ROUND. For each benchmark the three configurations
# (tierkv async_io=on, off, rocksdb) run back to back, after the machine's
# 1-minute load is below 1.5.
set -u
R=${1:-1}
OUT=${OUT:-/tmp/async_results}
mkdir -p $OUT
B=./build/tkv_bench
DUR=${DUR:-15}
COMMON="--num=4000000 --direct_io --use_existing_db --keep_db --dram=136M --duration=$DUR"
quiet() { while [ "$(awk '{print int($1*10)}' /proc/loadavg)" -gt 15 ]; do sleep 20; done; }
one() { # bench args...
  local name=$1; shift
  local tag=$name$(echo "$@" | tr -d ' =-')
  quiet
  echo "$(date +%T) load $(cut -d' ' -f1 /proc/loadavg) $tag" >> $OUT/log.txt
  for mode in on off; do
    $B --engine=tierkv --db=/tmp/async_db $COMMON --opt block_cache_size=8M --opt async_io=$mode --benchmarks=$name "$@" > $OUT/r$R-tierkv-$mode-$tag.txt 2>&1
  done
  $B --engine=rocksdb --db=/tmp/async_db_rdb $COMMON --benchmarks=$name "$@" > $OUT/r$R-rocksdb-$tag.txt 2>&1
  echo "$(date +%T) load $(cut -d' ' -f1 /proc/loadavg) done" >> $OUT/log.txt
}
one readrandom
for b in 1 8 32 128; do one multireadrandom --batch=$b; done
one seekrandom --seek_nexts=50
