# cpuwin.py CMD...: runs CMD; every 0.1 s records each thread's cumulative run
# time (schedstat); at the end prints, per thread name, the CPU seconds spent
# inside the fill window [t0, t0+dur] that the bench prints.
import os,sys,time,subprocess,re,bisect,collections
p=subprocess.Popen(sys.argv[1:],stdout=subprocess.PIPE,stderr=subprocess.STDOUT,text=True)
import threading
out=[]
def rd():
    for l in p.stdout: out.append(l)
th=threading.Thread(target=rd); th.start()
samples=[]  # (mono, {(tid,comm): run_ns})
while p.poll() is None:
    cur={}
    try:
        for tid in os.listdir(f'/proc/{p.pid}/task'):
            try:
                comm=open(f'/proc/{p.pid}/task/{tid}/comm').read().strip()
                a=open(f'/proc/{p.pid}/task/{tid}/schedstat').read().split()
            except Exception: continue
            cur[(tid,comm)]=int(a[0])
    except FileNotFoundError: break
    samples.append((time.monotonic(),cur))
    time.sleep(0.05)
th.join()
txt=''.join(out)
t0=float(re.search(r'# fillrandom: t=0 at monotonic ([0-9.]+)',txt).group(1))
m=re.search(r'\((\d+) ops in ([0-9.]+) s\)',txt); n=int(m.group(1)); dur=float(m.group(2))
def at(t):
    i=min(range(len(samples)),key=lambda j:abs(samples[j][0]-t)); return samples[i]
a=at(t0); b=at(t0+dur)
cpu=collections.Counter()
keys=set(k for t,c in samples if a[0]<=t<=b[0] for k in c)
for k in keys:
    vb=[c[k] for t,c in samples if t<=b[0]+0.06 and k in c][-1]
    va=[c[k] for t,c in samples if t<=a[0] and k in c]
    cpu[k[1]]+=vb-(va[-1] if va else 0)
tot=sum(cpu.values())
print(f"window {b[0]-a[0]:.2f}s (fill {dur}s, {n} ops): process {tot/1e9:.2f} CPU-s = {tot/1e9/(b[0]-a[0]):.2f} cores; per write {tot/n/1e3:.2f} us")
for c,v in cpu.most_common():
    if v>0: print(f"  {c:14s} {v/1e9:6.2f} s  {v/n/1e3:5.2f} us/write")
for l in out:
    if l.startswith('fillrandom ') and '1.00x' in l: print(l.rstrip())
