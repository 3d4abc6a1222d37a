#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# run_raftd.sh -- the daemon part of `make bench-raft`: writes/s and
# latency percentiles of PUTs through tkv-raftd, a 3-node cluster on
# 127.0.0.1, with each raft store:
#   tierkv  bindings/go/raftd/cmd/tkv-raftd -store tierkv (raftstore)
#   wal     the same binary, -store wal (raft-wal v0.4.0)
#   bolt    bindings/go/raftd/boltd (raft-boltdb v2.3.1; its own module on
#           raft v1.7.3, as raft-boltdb does not build with raft v1.8.0)
# tkv-raftd-bench starts the nodes, runs CLIENTS writers of VALUE-byte values
# through the leader for DURATION (after WARMUP), and prints one line per
# run; each store runs COUNT times (default 3) and the table has the
# medians. Raw lines and the table go to $OUT (bench/results/raftd-<date>/
# unless set); the nodes' data to DATA_DIR (default build/bench-raft).
# STORES picks stores (default "tierkv wal bolt"). A smoke run:
#   COUNT=1 DURATION=2s WARMUP=1s bash bench/raft/run_raftd.sh
# Needs build/libtierkv.a (make lib) and Go (on PATH, else /usr/local/go/bin/go).
set -euo pipefail
cd "$(dirname "$0")/../.."
ROOT=$PWD
GO=$(command -v go || true)
[ -n "$GO" ] || GO=/usr/local/go/bin/go
if [ ! -x "$GO" ]; then
    echo "bench-raft: SKIP: go not found (on PATH or /usr/local/go/bin/go)" >&2
    exit 0
fi
COUNT=${COUNT:-3}
DURATION=${DURATION:-10s}
WARMUP=${WARMUP:-2s}
CLIENTS=${CLIENTS:-32}
VALUE=${VALUE:-1024}
STORES=${STORES:-tierkv wal bolt}
OUT=${OUT:-bench/results/raftd-$(date -u +%Y%m%d-%H%M%S)}
DATA_DIR=${DATA_DIR:-build/bench-raft}
mkdir -p "$OUT" "$DATA_DIR"
OUT=$(cd "$OUT" && pwd)
DATA_DIR=$(cd "$DATA_DIR" && pwd)
BIN=$DATA_DIR/bin
mkdir -p "$BIN"

echo "bench-raft: building tkv-raftd, tkv-raftd-bolt and tkv-raftd-bench" >&2
(cd bindings/go/raftd && "$GO" build -o "$BIN/tkv-raftd" ./cmd/tkv-raftd &&
    "$GO" build -o "$BIN/tkv-raftd-bench" ./cmd/tkv-raftd-bench)
(cd bindings/go/raftd/boltd && "$GO" build -o "$BIN/tkv-raftd-bolt" .)

: > "$OUT/raftd.txt"
for store in $STORES; do
    bin=$BIN/tkv-raftd
    [ "$store" = bolt ] && bin=$BIN/tkv-raftd-bolt
    for i in $(seq 1 "$COUNT"); do
        echo "bench-raft: tkv-raftd -store $store, run $i of $COUNT, $DURATION, $CLIENTS clients, $VALUE-byte values" >&2
        nice "$BIN/tkv-raftd-bench" -bin "$bin" -store "$store" -clients "$CLIENTS" -value "$VALUE" \
            -duration "$DURATION" -warmup "$WARMUP" -dir "$DATA_DIR" | tee -a "$OUT/raftd.txt"
    done
done
{
    echo "# tkv-raftd, 3 nodes on 127.0.0.1, $(date -u +%Y-%m-%dT%H:%M:%SZ): PUTs of $VALUE bytes by $CLIENTS clients through the leader, $DURATION after $WARMUP, median of $COUNT"
    echo "# $("$GO" version); $(nproc) cores; data in $DATA_DIR ($(df -T "$DATA_DIR" | awk 'NR==2 {print $2}'))"
    python3 - "$OUT/raftd.txt" <<'PY'
import statistics, sys
runs = {}
for line in open(sys.argv[1]):
    f = dict(kv.split("=", 1) for kv in line.split())
    runs.setdefault(f["store"], []).append(f)
print(f"| {'store':8} | {'writes/s':>9} | {'p50 ms':>7} | {'p99 ms':>7} | {'p99.9 ms':>8} | {'errors':>6} | runs |")
print("|----------|-----------|---------|---------|----------|--------|------|")
for store, rs in runs.items():
    med = lambda k: statistics.median(float(r[k]) for r in rs)
    errs = sum(int(r["errors"]) for r in rs)
    print(f"| {store:8} | {med('writes_per_s'):9.0f} | {med('p50_ms'):7.2f} | {med('p99_ms'):7.2f} | {med('p999_ms'):8.2f} | {errs:6d} | {len(rs):4d} |")
PY
} | tee "$OUT/raftd-table.txt"
echo "bench-raft: daemon results in $OUT" >&2
