#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# run_raft.sh -- `make bench-raft`: hashicorp/raft's ten store benchmarks
# (github.com/hashicorp/raft/bench) and a synced batched append (one
# StoreLogs of 64 entries of 1 KiB per op) on three raft stores:
#   tierkv     bindings/go/raftstore (its bench_test.go)
#   raft-wal   bench/raft/wal (raft-wal v0.4.0, raft v1.8.0)
#   raft-boltdb bench/raft/bolt (raft-boltdb v2.3.1, raft v1.7.3: the two do not
#              build with raft v1.8.0 in one module)
# Each store's benchmarks run COUNT times (default 3) for BENCHTIME each (go
# test's -benchtime, default 1s), the stores taking turns round by round;
# report.py prints the medians as one table.
# Raw output and the table go to bench/results/raft-<date>/ (OUT overrides).
# The databases live in DATA_DIR (default build/bench-raft: the repository's
# disk, as the stores would be used, not a tmpfs /tmp).
# Then run_raftd.sh measures writes/s and p99 through tkv-raftd, 3 nodes on
# 127.0.0.1, on each of the three stores (its header has its settings;
# RAFTD=0 skips it).
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
BENCHTIME=${BENCHTIME:-1s}
OUT=${OUT:-bench/results/raft-$(date -u +%Y%m%d-%H%M%S)}
DATA_DIR=${DATA_DIR:-build/bench-raft}
mkdir -p "$OUT" "$DATA_DIR"
OUT=$(cd "$OUT" && pwd)
DATA_DIR=$(cd "$DATA_DIR" && pwd)

run() { # name module-dir round: one -count=1 run, appended to $OUT/<name>.txt
    local name=$1 dir=$2 round=$3
    echo "bench-raft: round $round/$COUNT: $name ($dir), -benchtime=$BENCHTIME" >&2
    (cd "$ROOT/$dir" && TMPDIR=$DATA_DIR nice "$GO" test -run '^$' -v -bench . -benchtime="$BENCHTIME" \
        -count=1 .) >> "$OUT/$name.txt" 2>&1 || {
        echo "bench-raft: $name failed; its output:" >&2
        cat "$OUT/$name.txt" >&2
        exit 1
    }
}
# The stores take turns, round by round, so that a noisy minute on this
# shared machine falls on all three rather than on one.
rm -f "$OUT/tierkv.txt" "$OUT/raft-wal.txt" "$OUT/raft-boltdb.txt"
for round in $(seq 1 "$COUNT"); do
    run tierkv bindings/go/raftstore "$round"
    run raft-wal bench/raft/wal "$round"
    run raft-boltdb bench/raft/bolt "$round"
done
{
    echo "# make bench-raft, $(date -u +%Y-%m-%dT%H:%M:%SZ), -benchtime=$BENCHTIME, median of $COUNT"
    echo "# $("$GO" version); $(nproc) cores; data in $DATA_DIR ($(df -T "$DATA_DIR" | awk 'NR==2 {print $2}'))"
    python3 bench/raft/report.py "$OUT/tierkv.txt" "$OUT/raft-wal.txt" "$OUT/raft-boltdb.txt"
} | tee "$OUT/table.txt"
echo "bench-raft: results in $OUT" >&2
if [ "${RAFTD:-1}" != 0 ]; then
    OUT=$OUT DATA_DIR=$DATA_DIR COUNT=$COUNT bash bench/raft/run_raftd.sh
fi
