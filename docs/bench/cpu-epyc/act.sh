#!/bin/bash
# act.sh SPEC ACTION ONLY0 CMD... : runs CMD; every 0.3 s, each new thread whose
# comm matches SPEC (egrep; and, with ONLY0=1, whose nice is 0) gets ACTION:
# "nice:N" (renice to N), "batch" (SCHED_BATCH, nice kept) or "idle" (SCHED_IDLE). A thread is
# looked at once it has a name of its own (not the process's), so the
# polling costs the same whatever SPEC matches (SPEC '^none$' is the control).
SPEC=$1; ACT=$2; ONLY0=$3; shift 3
"$@" > /tmp/prof/aout.txt 2>&1 &
pid=$!
declare -A seen
while kill -0 $pid 2>/dev/null; do
  for t in /proc/$pid/task/*; do
    tid=${t##*/}; [ -n "${seen[$tid]}" ] && continue
    read -r c < $t/comm 2>/dev/null || continue
    [ "$c" = "tkv_bench" ] && continue
    seen[$tid]=1
    [[ "$c" =~ $SPEC ]] || continue
    if [ "$ONLY0" = 1 ]; then ni=$(ps -o ni= -p $tid | tr -d ' '); [ "$ni" = 0 ] || continue; fi
    case $ACT in nice:*) renice -n ${ACT#nice:} -p $tid >/dev/null 2>&1 ;; batch) chrt -b -p 0 $tid >/dev/null 2>&1 ;; idle) chrt -i -p 0 $tid >/dev/null 2>&1 ;; esac
  done
  sleep 0.3
done
wait $pid
grep -E "^fillrandom +tierkv +[0-9]+ +1.00x" /tmp/prof/aout.txt
