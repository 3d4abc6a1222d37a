#!/usr/bin/env python3
"""offcpu.py -- where a fill's client thread is off the CPU, by cause.

Input: `perf script -F tid,time,trace,ip,sym` of a `perf record -e
sched:sched_switch -g` run of tkv_bench. The client is the thread named
tkv_bench with the most switch-outs (the benchmark's one writer). Every
interval from the client's switch-out to its next switch-in is classed by its
prev_state: R = preempted (named by the thread that took the CPU), S/D = it
slept (named by the first user-space frame, e.g. the pacing nanosleep), and
counted in duration buckets. Writes slower than the fill's p99.9 are mostly
such intervals.
usage: offcpu.py SCRIPT_OUTPUT
"""
import collections
import re
import sys

HEAD = re.compile(r'\s*(\d+)\s+([\d.]+):\s+prev_comm=(.*?) prev_pid=(\d+) prev_prio=\d+ '
                  r'prev_state=(\S+) ==> next_comm=(.*?) next_pid=(\d+)')
KERNEL = re.compile(r'^(__schedule|schedule.*|.*futex.*|do_syscall_64|entry_SYSCALL.*|irqentry.*|asm_.*|'
                    r'do_nanosleep|hrtimer_nanosleep|__x64_.*|\[unknown\]|__GI___.*|clock_nanosleep.*|'
                    r'__clock_nanosleep|pthread_cond.*|___pthread.*|__pthread.*|exit_to_user_mode.*|'
                    r'syscall_exit.*|__lll.*|lll_.*|raw_.*|.*_user_mode.*|__wait.*)$')
BUCKETS = [(50, '<50'), (100, '50-100'), (300, '100-300'), (1000, '300-1000'), (float('inf'), '>1000')]


def events(path):
    for blk in open(path).read().split('\n\n'):
        lines = blk.strip('\n').split('\n')
        m = HEAD.match(lines[0]) if lines and lines[0].strip() else None
        if not m:
            continue
        stack = [x.split()[1] for x in lines[1:] if len(x.split()) > 1]
        yield float(m.group(2)), int(m.group(4)), m.group(3), m.group(5), m.group(6), int(m.group(7)), stack


def main():
    ev = list(events(sys.argv[1]))
    outs = collections.Counter((e[1], e[2]) for e in ev)
    client = max((n, tid) for (tid, comm), n in outs.items() if comm == 'tkv_bench')[1]
    hist = collections.defaultdict(collections.Counter)
    total = collections.Counter()
    pending = None
    for t, prev, _pc, state, next_comm, nxt, stack in ev:
        if prev == client:
            cause = 'preempted by ' + re.sub(r'\d+', 'N', next_comm) if state == 'R' else \
                'slept in ' + next((f for f in stack if not KERNEL.match(f)), '?')
            pending = (t, state, cause)
        elif nxt == client and pending:
            us = (t - pending[0]) * 1e6
            key = (pending[1], pending[2])
            hist[key][next(name for lim, name in BUCKETS if us < lim)] += 1
            total[key] += us
            pending = None
    print('| state | cause | total ms | intervals | ' + ' | '.join(n + ' µs' for _, n in BUCKETS) + ' |')
    print('|---|---|---|---|' + '---|' * len(BUCKETS))
    for key in sorted(hist, key=lambda k: -total[k])[:20]:
        h = hist[key]
        print('| %s | %s | %.0f | %d | %s |' % (key[0], key[1], total[key] / 1000, sum(h.values()),
                                             ' | '.join(str(h[n]) for _, n in BUCKETS)))


if __name__ == '__main__':
    main()
