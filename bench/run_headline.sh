#!/usr/bin/env bash
# run_headline.sh -- `make bench`. The benchmark tool lands with its own issue;
# until then this says what the headline benchmark will measure.
cat <<'TXT'
tierkv headline benchmark: not built yet.
When the benchmark issue lands, `make bench` will run tierkv and RocksDB side by side on the embedded default
(emulated pmem in the database directory): fillrandom, readrandom and an open-loop bursty YCSB-A, reporting
ops/s, p50/p99/p99.9 latency per second, write amplification and stalls, and writing the table and plots to
bench/results/.
TXT
