#!/usr/bin/env bash
# run.sh -- runs test binaries, each under a time limit, and prints one closing
# line "tests: N passed, N failed" (N counts binaries; each binary is a cmocka
# group and prints its own per-case summary). A failed binary's log tail is
# printed when it fails and its last lines once more after the closing line,
# so that a CI excerpt that keeps only the end of the output still says why.
set -u
pass=0; fail=0; failed=()
limit=${TKV_TEST_TIMEOUT:-600}
for t in "$@"; do
    name=$(basename "$t")
    start=$(date +%s%N)
    if timeout -k 10 "$limit" "$t" > "$t.log" 2>&1; then
        pass=$((pass + 1)); status=ok
    else
        fail=$((fail + 1)); failed+=("$name"); status=FAILED
        tail -n 60 "$t.log"
    fi
    ms=$(( ($(date +%s%N) - start) / 1000000 ))
    printf '%-28s %-6s %5d.%03ds  (%s)\n' "$name" "$status" $((ms / 1000)) $((ms % 1000)) "${TKV_BUILD:-build}"
done
[ $fail -ne 0 ] && echo "failed: ${failed[*]}"
echo "tests: $pass passed, $fail failed"
for t in "$@"; do
    case " ${failed[*]:-} " in *" $(basename "$t") "*) ;; *) continue ;; esac
    echo "--- why $(basename "$t") failed (last lines of $t.log):"
    grep -o -e '\[  ERROR   \].*' -e '\[   LINE   \].*' -e '\[  FAILED  \].*' "$t.log" | head -n 8
    grep -v -e '^# ' -e '^\[ RUN' -e '^\[       OK' -e '^\[==' -e '^\[  PASSED' -e '^\[  FAILED' "$t.log" | tail -n 6
done
[ $fail -eq 0 ]
