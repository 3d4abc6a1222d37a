#!/bin/bash
# renice.sh SPEC NICE CMD... : runs CMD; every 0.3 s sets threads whose comm matches SPEC (egrep) to NICE
SPEC=$1; N=$2; shift 2
"$@" > /tmp/prof/rout.txt 2>&1 &
pid=$!
declare -A done
while kill -0 $pid 2>/dev/null; do
  for t in /proc/$pid/task/*; do
    tid=${t##*/}; [ -n "${done[$tid]}" ] && continue
    c=$(cat $t/comm 2>/dev/null) || continue
    ni=$(ps -o ni= -p $tid 2>/dev/null | tr -d " "); if echo "$c" | grep -Eq "$SPEC" && [ "$ni" = "0" ]; then renice -n $N -p $tid >/dev/null 2>&1 && done[$tid]=1; fi
  done
  sleep 0.3
done
wait $pid
grep -E "^fillrandom +tierkv +[0-9]+ +1.00x" /tmp/prof/rout.txt
