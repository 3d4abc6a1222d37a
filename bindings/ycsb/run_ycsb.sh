#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# run_ycsb.sh -- tierkv and RocksDB under the YCSB client (site.ycsb:core 0.17.0):
# for each engine, a fresh database loaded with RECORDS records, then the
# workloads in WORKLOADS (OPS operations each) on it, each phase in its own JVM;
# then one table (bindings/ycsb/ycsb_report.py): throughput and p50/p99 per
# operation type per engine, with ratios. YCSB exits 0 even when every
# operation fails, so the report checks that the Return=OK counts add up to
# the operation counts and fails loudly otherwise.
#
# usage: TIERKV_JNI=/abs/libtierkvjni.so bash bindings/ycsb/run_ycsb.sh   (make ycsb)
# Environment (defaults):
#   RECORDS (1000000)  OPS (1000000)  THREADS (2)  client threads
#   FIELDCOUNT (10)  FIELDLENGTH (100)         1 KiB records
#   ENGINES ("tierkv rocksdb")  WORKLOADS ("a b c f d e", YCSB's suggested order:
#                              D's and E's inserts come last; E runs on the same data)
#   MEMTABLE (64M)  MEMTABLES (2)  CACHE (256M)   the same memory budget for both
#                              engines: tierkv's defaults (docs/options.md)
#   TIERKV_OPTS, ROCKSDB_OPTS  more name=value properties for one engine, space
#                              separated (e.g. TIERKV_OPTS="tierkv.direct_io=1")
#   DATAINTEGRITY (0)          1: YCSB checks every value read (dataintegrity=true)
#   REPEAT (1)                 rounds: each engine's load + workloads REPEAT times,
#                              engines alternating first; the table gives medians
#                              and each round's throughput
#   DB (/tmp/tkv_ycsb)         the databases go to DB/<engine>, wiped first, removed
#                              after unless KEEP_DB=1
#   OUT (build/ycsb/results/<date>)  OUT/round<N>/: YCSB's outputs and logs; OUT/table.txt,
#                              OUT/summary.csv
#   JAVA (java)  JAVA_OPTS (-Xmx2g)  NICE (0)  PHASE_TIMEOUT (3600 s per phase)
set -uo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
ROOT=$(cd "$HERE/../.." && pwd)

RECORDS=${RECORDS:-1000000}
OPS=${OPS:-1000000}
THREADS=${THREADS:-2}
FIELDCOUNT=${FIELDCOUNT:-10}
FIELDLENGTH=${FIELDLENGTH:-100}
ENGINES=${ENGINES:-tierkv rocksdb}
WORKLOADS=${WORKLOADS:-a b c f d e}
MEMTABLE=${MEMTABLE:-64M}
MEMTABLES=${MEMTABLES:-2}
CACHE=${CACHE:-256M}
TIERKV_OPTS=${TIERKV_OPTS:-}
ROCKSDB_OPTS=${ROCKSDB_OPTS:-}
DATAINTEGRITY=${DATAINTEGRITY:-0}
DB=${DB:-/tmp/tkv_ycsb}
OUT=${OUT:-build/ycsb/results/$(date +%Y%m%d-%H%M%S)}
JAVA=${JAVA:-java}
JAVA_OPTS=${JAVA_OPTS:--Xmx2g}
NICE=${NICE:-0}
PHASE_TIMEOUT=${PHASE_TIMEOUT:-3600}
KEEP_DB=${KEEP_DB:-0}
REPEAT=${REPEAT:-1}

die() { echo "run_ycsb.sh: $*" >&2; exit 1; }

JAR="$ROOT/build/ycsb/tierkv-ycsb.jar"
LIB="$ROOT/build/ycsb/lib"
[ -f "$JAR" ] && [ -d "$LIB" ] || die "$JAR missing: make ycsb-build first"
: "${TIERKV_JNI:?set TIERKV_JNI to the absolute path of libtierkvjni.so (make ycsb sets it)}"
[ -f "$TIERKV_JNI" ] || die "$TIERKV_JNI missing: make jni"
command -v "$JAVA" >/dev/null 2>&1 || die "$JAVA not found (make deps installs a JDK)"
for v in RECORDS OPS THREADS FIELDCOUNT FIELDLENGTH MEMTABLES REPEAT; do
    [[ ${!v} =~ ^[0-9]+$ ]] && [ "${!v}" -gt 0 ] || die "$v=${!v}: expected a positive integer"
done
for w in $WORKLOADS; do [ -f "$HERE/workloads/workload$w" ] || die "no workload file workloads/workload$w"; done
case "$DATAINTEGRITY" in 1|true) DI=true ;; *) DI=false ;; esac

mkdir -p "$OUT" || die "cannot create $OUT"
OUT=$(cd "$OUT" && pwd)
mkdir -p "$DB" || die "cannot create $DB"

# engine_props ENGINE -- the -p arguments that select and size ENGINE.
engine_props() {
    local dir="$DB/$1" kv
    case "$1" in
    tierkv)
        echo "-db site.ycsb.db.TierkvClient -p tierkv.dir=$dir -p tierkv.memtable_size=$MEMTABLE"
        echo "-p tierkv.memtables=$MEMTABLES -p tierkv.block_cache_size=$CACHE"
        for kv in $TIERKV_OPTS; do echo "-p $kv"; done ;;
    rocksdb)
        echo "-db site.ycsb.db.RocksDBClient -p rocksdb.dir=$dir -p rocksdb.write_buffer_size=$MEMTABLE"
        echo "-p rocksdb.max_write_buffer_number=$MEMTABLES -p rocksdb.block_cache_size=$CACHE"
        for kv in $ROCKSDB_OPTS; do echo "-p $kv"; done ;;
    *) die "unknown engine $1 (tierkv, rocksdb)" ;;
    esac
}

# wipe ENGINE -- removes the engine's database (tierkv's pool file is inside it).
wipe() { rm -rf "${DB:?}/$1"; }

# phase ENGINE NAME -- one YCSB run: NAME "load" (-load, workload a's file) or a
# workload letter (-t). Output in RUN/ENGINE-NAME.txt (RUN: this round's
# directory), stderr in .log, the command in .cmd, the exit status in .rc.
phase() {
    local engine=$1 name=$2 mode=-t file="$HERE/workloads/workload$2" rc start end
    if [ "$name" = load ]; then mode=-load; file="$HERE/workloads/workloada"; fi
    # shellcheck disable=SC2046 # engine_props is a list of words
    local cmd=("$JAVA" $JAVA_OPTS "-Dtierkv.jni=$TIERKV_JNI" -cp "$JAR:$LIB/*" site.ycsb.Client "$mode" -s
        -P "$file" -threads "$THREADS" -p "recordcount=$RECORDS" -p "operationcount=$OPS"
        -p "fieldcount=$FIELDCOUNT" -p "fieldlength=$FIELDLENGTH" -p "hdrhistogram.percentiles=50,99"
        -p "dataintegrity=$DI" -p status.interval=5 $(engine_props "$engine"))
    printf '%s\n' "${cmd[*]}" > "$RUN/$engine-$name.cmd"
    start=$(date +%s.%N)
    timeout -k 30 "$PHASE_TIMEOUT" nice -n "$NICE" "${cmd[@]}" > "$RUN/$engine-$name.txt" 2> "$RUN/$engine-$name.log"
    rc=$?
    end=$(date +%s.%N)
    echo "$rc" > "$RUN/$engine-$name.rc"
    local tput
    tput=$(awk -F', ' '$1 == "[OVERALL]" && $2 == "Throughput(ops/sec)" { printf "%.0f", $3 }' "$RUN/$engine-$name.txt")
    printf 'ycsb: %s%-8s %-5s %6s s  %8s ops/s%s\n' "$ROUND" "$engine" "$name" "$(awk "BEGIN { printf \"%.1f\", $end - $start }")" \
        "${tput:-?}" "$([ "$rc" -ne 0 ] && echo "  (exit status $rc: see $RUN/$engine-$name.log)")"
}

echo "ycsb: $RECORDS records x $FIELDCOUNT x $FIELDLENGTH B, $OPS operations per workload, $THREADS threads;" \
     "engines: $ENGINES; workloads: $WORKLOADS; rounds: $REPEAT; output: $OUT"
for r in $(seq 1 "$REPEAT"); do
    RUN="$OUT/round$r"
    mkdir -p "$RUN" || die "cannot create $RUN"
    ROUND=""
    [ "$REPEAT" -gt 1 ] && ROUND="round $r: "
    order=$ENGINES
    [ $((r % 2)) -eq 0 ] && order=$(echo "$ENGINES" | awk '{ for (i = NF; i > 0; i--) printf "%s ", $i }')
    for engine in $order; do
        engine_props "$engine" >/dev/null || exit 1
        wipe "$engine"
        phase "$engine" load
        for w in $WORKLOADS; do phase "$engine" "$w"; done
        du -sk "$DB/$engine" 2>/dev/null | awk '{print $1 * 1024}' > "$RUN/$engine-du.txt"
        [ "$KEEP_DB" = 1 ] || wipe "$engine"
    done
done

YCSB_VERSION=$(cd "$LIB" && ls core-*.jar 2>/dev/null | sed -n 's/^core-\(.*\)\.jar$/\1/p' | head -n 1)
CMDLINE="RECORDS=$RECORDS OPS=$OPS THREADS=$THREADS FIELDCOUNT=$FIELDCOUNT FIELDLENGTH=$FIELDLENGTH"
CMDLINE+=" MEMTABLE=$MEMTABLE MEMTABLES=$MEMTABLES CACHE=$CACHE DATAINTEGRITY=$DATAINTEGRITY REPEAT=$REPEAT"
[ -n "$TIERKV_OPTS" ] && CMDLINE+=" TIERKV_OPTS='$TIERKV_OPTS'"
[ -n "$ROCKSDB_OPTS" ] && CMDLINE+=" ROCKSDB_OPTS='$ROCKSDB_OPTS'"
# shellcheck disable=SC2086
python3 "$HERE/ycsb_report.py" --out "$OUT" --records "$RECORDS" --ops "$OPS" --threads "$THREADS" \
    --fieldcount "$FIELDCOUNT" --fieldlength "$FIELDLENGTH" --memtable "$MEMTABLE" --memtables "$MEMTABLES" \
    --cache "$CACHE" --dataintegrity "$DI" --ycsb-version "$YCSB_VERSION" --engines "$ENGINES" --phases "load $WORKLOADS" --rounds "$REPEAT" \
    --command "$CMDLINE"
