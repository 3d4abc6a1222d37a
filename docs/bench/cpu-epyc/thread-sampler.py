import os,sys,time,subprocess,collections
cmd=sys.argv[1:]
p=subprocess.Popen(cmd,stdout=open('/tmp/prof/out.txt','w'),stderr=subprocess.STDOUT)
prev={}
t0=time.time()
want=['tkv_bench','tkv-column','tkv-flush','tkv-wal-wb','tkv-trash','tkv-prefault']
while p.poll() is None:
    time.sleep(1)
    cur={}
    try:
        for tid in os.listdir(f'/proc/{p.pid}/task'):
            try:
                comm=open(f'/proc/{p.pid}/task/{tid}/comm').read().strip()
                a=open(f'/proc/{p.pid}/task/{tid}/schedstat').read().split()
            except: continue
            cur[(tid,comm)]=(int(a[0]),int(a[1]))
    except FileNotFoundError: break
    run=collections.Counter(); wq=collections.Counter(); n=collections.Counter()
    for k,v in cur.items():
        pv=prev.get(k,(0,0))
        run[k[1]]+=v[0]-pv[0]; wq[k[1]]+=v[1]-pv[1]; n[k[1]]+=1
    prev=cur
    print(f"{time.time()-t0:5.1f} "+" ".join(f"{c}[{n[c]}]=run{run[c]/1e9:.2f}/rq{wq[c]/1e9:.2f}" for c in want if c in run),flush=True)
p.wait()
