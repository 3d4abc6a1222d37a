#!/bin/bash
for r in 1 2 3; do for wb in 256M 128M; do
  d=/tmp/wb4m-$wb-$r; rm -rf /tmp/tkv_bench $d
  /work/main/build/tkv_bench --engine=tierkv --benchmarks=fillrandom --num=4000000 --value_size=1024 --direct_io --db=/tmp/tkv_bench --csv=$d --opt pmem_writeback=$wb > /tmp/wb4m-$wb-$r.txt 2>&1
  echo "$wb r$r $(grep '^fillrandom' /tmp/wb4m-$wb-$r.txt | tail -1 | cut -c17-)"
done; done
