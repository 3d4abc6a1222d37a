#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# run.sh -- runs test binaries, each under a time limit, JOBS at a time, and
# prints one line per binary as it ends and one closing line "tests: N
# passed, N failed" (N counts binaries; each binary is a cmocka group and
# prints its own per-case summary into BINARY.log). A failed binary's log
# tail is printed when it fails and its last lines once more after the
# closing line, so that a CI excerpt that keeps only the end of the output
# still says why.
#
# TKV_TEST_JOBS: binaries run at once (default: the CPUs online). Binaries
# start in the order given, so the caller lists the long ones first (the
# Makefile's SLOW_TESTS): the longest ones wait on throttled devices and
# background threads most of their time, which is what running two at a
# time on two cores buys. TKV_TEST_TIMEOUT: seconds per binary (600).
set -u
limit=${TKV_TEST_TIMEOUT:-600}
jobs_max=${TKV_TEST_JOBS:-$(nproc 2>/dev/null || echo 1)}
[ "$jobs_max" -ge 1 ] 2>/dev/null || jobs_max=1
results=$(mktemp)
trap 'rm -f "$results"' EXIT

# run_one BINARY -- runs it, prints its line (and its log's tail if it
# failed) in one write, and appends "name status" to $results.
run_one() {
    local t=$1 name status start ms out=""
    name=$(basename "$t")
    start=$(date +%s%N)
    if timeout -k 10 "$limit" "$t" > "$t.log" 2>&1; then
        status=ok
    else
        status=FAILED
        out=$(tail -n 60 "$t.log")$'\n'
    fi
    ms=$(( ($(date +%s%N) - start) / 1000000 ))
    out+=$(printf '%-28s %-6s %5d.%03ds  (%s)' "$name" "$status" $((ms / 1000)) $((ms % 1000)) "${TKV_BUILD:-build}")
    printf '%s\n' "$out"
    printf '%s %s\n' "$name" "$status" >> "$results"
}

for t in "$@"; do
    while [ "$(jobs -rp | wc -l)" -ge "$jobs_max" ]; do wait -n; done
    run_one "$t" &
done
wait

pass=$(grep -c ' ok$' "$results")
fail=$(grep -c ' FAILED$' "$results")
failed=$(awk '$2 == "FAILED" { print $1 }' "$results" | tr '\n' ' ')
[ "$fail" -ne 0 ] && echo "failed: $failed"
echo "tests: $pass passed, $fail failed"
for t in "$@"; do
    case " $failed " in *" $(basename "$t") "*) ;; *) continue ;; esac
    echo "--- why $(basename "$t") failed (last lines of $t.log):"
    grep -o -e '\[  ERROR   \].*' -e '\[   LINE   \].*' -e '\[  FAILED  \].*' "$t.log" | head -n 8
    grep -v -e '^# ' -e '^\[ RUN' -e '^\[       OK' -e '^\[==' -e '^\[  PASSED' -e '^\[  FAILED' "$t.log" | tail -n 6
done
[ "$fail" -eq 0 ] && [ "$((pass + fail))" -eq "$#" ]
