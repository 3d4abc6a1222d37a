#!/bin/bash
# run.sh -- before/after sustained fills for the resumable deep compactions (docs/bench/resume-deep/),
# as run: B is tkv_bench built at 8abde83 (main before the change), A at 6b2ee4f (the branch, same
# code as 0d900ac after the branch was rebased onto e1ba05b). Each run gets a fresh database under /tmp/resume-bench/db.
# The second round of "small" was run with the names suffixed -r2.
set -u
cd /tmp/resume-bench
run() { # name binary args...
    local name=$1 bin=$2; shift 2
    rm -rf /tmp/resume-bench/db
    echo "== $name (load: $(cut -d' ' -f1-3 /proc/loadavg))" >> /tmp/resume-bench/progress.txt
    TKV_BENCH_PROPERTY_LOG=/tmp/resume-bench/$name-props.log $bin --engine=tierkv --benchmarks=fillrandom \
        --value_size=1024 --direct_io --db=/tmp/resume-bench/db --label=$name --csv=/tmp/resume-bench/$name-csv "$@" \
        > /tmp/resume-bench/$name.out 2>&1
    echo "   done $name rc=$? (load: $(cut -d' ' -f1-3 /proc/loadavg))" >> /tmp/resume-bench/progress.txt
}
B=/work/wt-resume/build/tkv_bench.before
A=/work/wt-resume/build/tkv_bench.after
for arg in "$@"; do
  case $arg in
    4m) run before-4m $B --num=4000000; run after-4m $A --num=4000000 ;;
    2m) run before-2m-l1-256m $B --num=2000000 --opt l1_size=256M; run after-2m-l1-256m $A --num=2000000 --opt l1_size=256M ;;
    2mdef) run after-2m $A --num=2000000 ;;
  esac
done
for arg in "$@"; do
  case $arg in
    small) run before-2m-small-r2 $B --num=2000000 --opt l1_size=128M --opt sst_size=16M
           run after-2m-small-r2 $A --num=2000000 --opt l1_size=128M --opt sst_size=16M
           run after0-2m-small-r2 $A --num=2000000 --opt l1_size=128M --opt sst_size=16M --opt deep_yield_wait=0 ;;
  esac
done
