#!/bin/bash
# cold pool reads: fill 1M, drop caches, reopen: readrandom 200k, then overwrite 1M (columns read cold rows)
for v in wn 2m wn 2m; do
  rm -rf /tmp/abdb; sync
  /tmp/tkv_bench_$v --engine=tierkv --db=/tmp/abdb --benchmarks=fillrandom --num=1000000 --direct_io --keep_db > /dev/null 2>&1
  sync; echo 3 > /proc/sys/vm/drop_caches
  /tmp/tkv_bench_$v --engine=tierkv --db=/tmp/abdb --benchmarks=readrandom,fillrandom --num=1000000 --reads=200000 --direct_io --use_existing_db > cold2-$v.$RANDOM.txt 2>&1
done
rm -rf /tmp/abdb; echo done
for r in 1 2 3; do for v in wn 2m; do
  rm -rf /tmp/abdb; sync
  /tmp/tkv_bench_$v --engine=tierkv --db=/tmp/abdb --benchmarks=fillrandom --num=1000000 --direct_io --csv=/tmp/fab/e1m-$v-r$r > /tmp/fab/e1m-$v-r$r.txt 2>&1
done; done
rm -rf /tmp/abdb
