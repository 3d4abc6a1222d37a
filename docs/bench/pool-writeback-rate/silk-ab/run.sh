#!/bin/bash
cd /work/main
DRIVE=200M
common=(--benchmarks=fillseq,ycsba --num=4000000 --rate=2000:10s,12000:50s --open_loop=ycsba --duration=180
        --throttle=$DRIVE --direct_io --threads=8 --distribution=uniform --db=/tmp/tkv_bench_silk)
for r in 2; do
for wb in 128M 32M; do
  echo "== wb=$wb round $r"
  build/tkv_bench "${common[@]}" --engine=tierkv --opt ssd_bandwidth=$DRIVE --opt device_bandwidth=$DRIVE --opt pmem_writeback=$wb \
     --label=silk-wb$wb --csv=/tmp/silkab/wb$wb-r$r > /tmp/silkab/wb$wb-r$r.txt 2>&1
  grep -E "^(fillseq|ycsba)" /tmp/silkab/wb$wb-r$r.txt | tail -3
done
done
