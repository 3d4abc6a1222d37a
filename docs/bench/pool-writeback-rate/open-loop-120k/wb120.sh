#!/bin/bash
for r in 1 2; do for wb in 256M 128M; do
  d=/tmp/wb120-$wb-$r; rm -rf /tmp/tkv_bench $d; mkdir -p $d
  TKV_BENCH_PROPERTY_LOG=$d/props /work/main/build/tkv_bench --engine=tierkv --benchmarks=fillrandom --open_loop=fillrandom --rate=120000:45s --duration=45 --num=5400000 --value_size=1024 --direct_io --db=/tmp/tkv_bench --csv=$d --opt pmem_writeback=$wb > $d/out.txt 2>&1
  echo "$wb r$r $(grep -A1 '^benchmark' $d/out.txt | tail -1 | cut -c1-120) maxdirty $(awk -F, 'NR>1 && $11>m {m=$11} END{print int(m)}' $d/host.csv) $(awk '/^writeback: bytes/{l=$0} END{print l}' $d/props | cut -c1-100)"
done; done
