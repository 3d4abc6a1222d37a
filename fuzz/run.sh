#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# run.sh -- runs libFuzzer targets one after another (make fuzz): each
# build/fuzz/fuzz/fuzz_<name> for FUZZ_SECONDS seconds under nice 19, from its
# checked-in corpus fuzz/corpus/<name>/ plus build/fuzz/work/<name>/ (where
# new inputs go; the checked-in corpus is never written). A crash, leak,
# timeout or failed property leaves its input in build/fuzz/findings/<name>/
# and fails the run. Prints one line per target: executions, seconds, corpus
# size, findings. The scratch files go to a private directory on /dev/shm.
set -u
secs=${FUZZ_SECONDS:-60}
bin=${FUZZ_BIN:-build/fuzz/fuzz}
out=${FUZZ_OUT:-build/fuzz}
shm=/dev/shm; [ -d "$shm" ] && [ -w "$shm" ] || shm=/tmp
export TMPDIR=$(mktemp -d "$shm/tkv-fuzz-run.XXXXXX")
trap 'rm -rf "$TMPDIR"' EXIT
fail=0; pass=0
for name in "$@"; do
    work="$out/work/$name"; found="$out/findings/$name"; log="$out/logs/$name.log"
    mkdir -p "$work" "$found" "$(dirname "$log")"
    nice -n 19 "$bin/fuzz_$name" -max_total_time="$secs" -timeout=20 -rss_limit_mb=2048 -max_len="${FUZZ_MAX_LEN:-65536}" \
        -print_final_stats=1 -artifact_prefix="$found/" "$work" "fuzz/corpus/$name" > "$log" 2>&1
    rc=$?
    execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -1)
    units=$(ls "$work" "fuzz/corpus/$name" 2>/dev/null | grep -vc ':$')
    nfound=$(ls "$found" | wc -l)
    printf 'fuzz %-14s %s  %10s execs  %5ss  corpus %5s  findings %s\n' "$name" \
        "$([ $rc -eq 0 ] && echo ok || echo FAILED)" "${execs:-?}" "$secs" "$units" "$nfound"
    if [ $rc -ne 0 ]; then
        fail=$((fail + 1)); grep -m1 -E 'ERROR|SUMMARY|property failed' "$log"
    else
        pass=$((pass + 1))
    fi
done
echo "fuzz: $pass passed, $fail failed"
[ $fail -eq 0 ]
