#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# run_silk.sh -- `make bench-silk`: the SILK-style experiment (SILK, ATC'19,
# Fig. 1/8) on the embedded default configuration.
#
# Each configuration runs in its own tkv_bench process:
#   1. prepopulate NUM records of 1 KiB (fillseq, closed loop, full speed;
#      4M records = 4 GiB, four times the default 1 GiB matrix container),
#      then wait until background work is idle;
#   2. YCSB-A (50 % reads, 50 % updates, uniform keys) open loop for
#      DURATION seconds at RATE (valley/peak, repeated), with the drive
#      capped at DRIVE bytes/s (reads and writes each; blkio cgroup, needs
#      root) and direct I/O. Latency is measured from the intended send time.
#      THREADS (8) client threads serve the open-loop queue, as SILK's 8
#      worker threads: with 4, a peak of 12000 ops/s leaves each operation
#      333 us of one thread, so reads slowed to ~0.5 ms by a compaction made
#      the harness itself the bottleneck (backlog of 12000 requests, p99 ~1 s
#      for tierkv in the same run where 8 threads had a backlog of 2500).
# Configurations (CONFIGS to choose):
#   tierkv-silk   scheduler=silk, ssd_bandwidth=DRIVE, device_bandwidth=DRIVE
#   tierkv-fifo   the same with scheduler=fifo (no priorities, no pausing)
#   rocksdb       RocksDB release build, defaults
#   rocksdb-rl    RocksDB with its auto-tuned rate limiter (upper bound DRIVE)
#   null          the harness alone: the same open-loop schedule against the
#                 "null" engine (stores nothing, no I/O). Its per-second p99 is
#                 the floor this machine and load generator put under every
#                 engine (CPU steal on a shared VM, timer and wake-up delays).
#   devread       the device floor: the "devread" engine reads one 4 KiB block
#                 (O_DIRECT) per get from a file the prepopulation wrote, and
#                 writes nothing during the run. A second in which it is slow
#                 is the device's (or the host's), not any engine's.
# Then bench/silk_report.py writes silk.txt (table) and silk.png (per-second
# p99 and throughput against the offered load) to bench/results/silk-<date>/.
# PMEM_DIR=/dev/shm puts tierkv's pool file there instead of in the database
# directory: the emulated NVM is then RAM, a device of its own, and its
# page-cache write-back no longer shares the (capped) drive with the SSD
# tables. Default: the embedded default, the pool in the database directory.
# About 20-25 minutes with the defaults (six configurations). Knobs: NUM RATE DURATION DRIVE THREADS
# CONFIGS DB PMEM_DIR.
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD=${BUILD:-build}
NUM=${NUM:-4000000}
RATE=${RATE:-2000:10s,12000:50s}
DURATION=${DURATION:-180}
DRIVE=${DRIVE:-200M}
THREADS=${THREADS:-8}
DB=${DB:-/tmp/tkv_bench_silk}
CONFIGS=${CONFIGS:-tierkv-silk tierkv-fifo rocksdb rocksdb-rl null devread}
stamp=$(date -u +%Y%m%d-%H%M%S)
out=bench/results/silk-$stamp
mkdir -p "$out"
common=(--benchmarks=fillseq,ycsba --num="$NUM" --rate="$RATE" --open_loop=ycsba --duration="$DURATION"
        --throttle="$DRIVE" --direct_io --threads="$THREADS" --distribution=uniform --db="$DB")
for c in $CONFIGS; do
    case "$c" in
    tierkv-silk) args=(--engine=tierkv --opt "ssd_bandwidth=$DRIVE" --opt "device_bandwidth=$DRIVE") ;;
    tierkv-fifo) args=(--engine=tierkv --opt "ssd_bandwidth=$DRIVE" --opt "device_bandwidth=$DRIVE"
                       --opt scheduler=fifo) ;;
    rocksdb) args=(--engine=rocksdb) ;;
    rocksdb-rl) args=(--engine=rocksdb --rate_limiter="$DRIVE:auto") ;;
    null) args=(--engine=null) ;;
    devread) args=(--engine=devread) ;;
    *) echo "run_silk.sh: unknown configuration $c" >&2; exit 2 ;;
    esac
    pool=""
    if [ -n "${PMEM_DIR:-}" ] && [ "${c#tierkv}" != "$c" ]; then
        pool="$PMEM_DIR/tkv_bench_silk-$c.pool"
        rm -f "$pool"
        args+=(--opt "pmem_path=$pool")
    fi
    echo "== $c"
    "$BUILD/tkv_bench" "${common[@]}" "${args[@]}" --label="$c" --csv="$out/$c" | tee "$out/$c.txt"
    [ -n "$pool" ] && rm -f "$pool"
done
py=python3
[ -x /usr/bin/python3 ] && py=/usr/bin/python3 # Debian's, with python3-matplotlib (make deps)
# shellcheck disable=SC2086
"$py" bench/silk_report.py "$out" "$RATE" $CONFIGS
ln -sfn "silk-$stamp" bench/results/silk-latest
echo "make bench-silk: results in $out/ (also bench/results/silk-latest/)"
