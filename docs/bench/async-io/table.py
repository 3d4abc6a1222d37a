import re,glob,statistics,sys
d=sys.argv[1]
def parse(fn):
    for l in open(fn):
        m=re.match(r'^(\w+)\s+(tierkv|rocksdb)\s+(\d+)\s+\S+\s+([\d.]+)\s+([\d.]+)',l)
        if m: return int(m.group(3)),float(m.group(4)),float(m.group(5))
    return None
benches=['readrandom','multireadrandombatch1','multireadrandombatch8','multireadrandombatch32','multireadrandombatch128','seekrandomseek_nexts50']
for b in benches:
    row=[b]
    med={}
    for cfg in ['tierkv-on','tierkv-off','rocksdb']:
        vals=[parse(f'{d}/r{r}-{cfg}-{b}.txt') for r in (1,2,3)]
        vals=[v for v in vals if v]
        ops=statistics.median([v[0] for v in vals]); p50=statistics.median([v[1] for v in vals]); p99=statistics.median([v[2] for v in vals])
        med[cfg]=ops
        row.append(f"{ops:,.0f} (p50 {p50:,.0f}, p99 {p99:,.0f}) [{'/'.join(str(v[0]) for v in vals)}]")
    row.append(f"{med['tierkv-on']/med['tierkv-off']:.2f}"); row.append(f"{med['tierkv-on']/med['rocksdb']:.2f}")
    print('| '+' | '.join(row)+' |')
