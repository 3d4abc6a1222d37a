import sys, collections
prefix = sys.argv[2]
lines = open(sys.argv[1]).read().splitlines()[3:]
wr = []
for l in lines:
    p = l.split()
    if len(p) < 6 or not p[2].startswith(prefix): continue
    try: t = float(p[0]); run = float(p[5]) / 1e3
    except ValueError: continue
    wr.append((t - run, t, ' '.join(p[6:10])))
c = collections.Counter(); tt = collections.Counter()
for i in range(len(wr) - 1):
    g = wr[i + 1][0] - wr[i][1]
    if g < 60e-6: continue
    k = wr[i][2]
    c[k] += 1; tt[k] += g
for k, v in c.most_common(14): print("%6d %8.3f s  %s" % (v, tt[k], k))
