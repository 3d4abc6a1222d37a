import sys, re, collections, bisect
W = sys.argv[2]
lines = open(sys.argv[1]).read().splitlines()[3:]
ivs = collections.defaultdict(list)  # cpu -> list of (start,end,name)
wr = []
for l in lines:
    p = l.split()
    if len(p) < 6: continue
    try:
        t = float(p[0]); cpu = int(p[1].strip('[]')); run = float(p[5]) / 1e3
        wait = float(p[3]) / 1e3; d = float(p[4]) / 1e3
    except ValueError: continue
    name = p[2]
    reason = ' '.join(p[6:8])
    ivs[cpu].append((t - run, t, name))
    if name.startswith('tkv_bench[%s/' % W): wr.append((t - run, t, cpu, reason, wait, d))
for c in ivs: ivs[c].sort()
starts = {c: [x[0] for x in ivs[c]] for c in ivs}
by = collections.Counter(); cnt = 0; tot = 0
for i in range(len(wr) - 1):
    s, e, cpu, reason, _, _ = wr[i]
    if 'nanosleep' in reason or 'futex' in reason or 'io_schedule' in reason or 'rwsem' in reason: continue
    ns = wr[i + 1][0]
    if ns - e < 100e-6: continue
    cnt += 1; tot += ns - e
    j = bisect.bisect_left(starts[cpu], e - 1e-6)
    while j < len(ivs[cpu]) and ivs[cpu][j][0] < ns:
        a, b, n = ivs[cpu][j]
        by[re.sub(r'\[.*', '', n)] += min(b, ns) - max(a, e)
        j += 1
print("preempted >100us:", cnt, "total %.3f s" % tot)
for n, v in by.most_common(15): print("%-20s %.3f s" % (n, v))
# first task after the writer's switch-out, and duration buckets
first = collections.Counter(); firstt = collections.Counter(); hist = collections.Counter()
for i in range(len(wr) - 1):
    s, e, cpu, reason, _, _ = wr[i]
    if 'nanosleep' in reason or 'futex' in reason or 'io_schedule' in reason or 'rwsem' in reason: continue
    ns = wr[i + 1][0]
    g = ns - e
    if g < 100e-6: continue
    hist[min(int(g * 1e4), 20)] += 1
    j = bisect.bisect_left(starts[cpu], e - 1e-6)
    if j < len(ivs[cpu]):
        n = re.sub(r'\[.*', '', ivs[cpu][j][2]); first[n] += 1; firstt[n] += g
print("gap histogram (x100us):", sorted(hist.items()))
for n, v in first.most_common(10): print("first %-20s %5d %.3f s" % (n, v, firstt[n]))
