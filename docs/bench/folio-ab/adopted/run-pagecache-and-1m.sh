#!/bin/bash
# interleaved A/B: page cache 4M x 1 KiB, 2 threads, then 1M direct
for r in 1 2; do for v in 4k 2m; do
  rm -rf /tmp/abdb; sync
  /tmp/tkv_bench_$v --engine=tierkv --db=/tmp/abdb --benchmarks=fillrandom,readrandom --num=4000000 --reads=400000 --threads=2 --csv=/tmp/fab/pc-$v-r$r > /tmp/fab/pc-$v-r$r.txt 2>&1
done; done
for r in 1 2 3; do for v in 4k 2m; do
  rm -rf /tmp/abdb; sync
  /tmp/tkv_bench_$v --engine=tierkv --db=/tmp/abdb --benchmarks=fillrandom --num=1000000 --direct_io --csv=/tmp/fab/d1m-$v-r$r > /tmp/fab/d1m-$v-r$r.txt 2>&1
done; done
rm -rf /tmp/abdb
echo done
