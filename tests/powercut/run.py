#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""run.py -- the driver of `make crashtest-power`: real power cuts on a real
file system (tests/powercut/README.md).

Each round: a fresh ext4 image (512 MiB, sparse) on a loop device, mounted;
the writer (pc_writer) runs THREADS writer threads on a database there; at a
random moment (0-50 ms, 50-500 ms or 0.5-6 s after the writer started) the
device is frozen as a power cut freezes it and its image copied:

  cut=dm       (device-mapper) the ext4 sits on a dm linear target over the
               loop device; `dmsetup suspend --noflush --nolockfs` freezes it
               (what the device completed is in the image, nothing after),
               the writer is SIGKILLed, the image copied (cp --sparse=always),
               then the device torn down (an `error` table loaded and resumed
               so that the held I/O fails, umount, dmsetup remove, losetup -d);
  cut=reflink  (where the kernel has no device-mapper) the images live on an
               XFS file system (itself on a loop device over a sparse file in
               the work directory); the writer is SIGSTOPped (no thread
               returns to user space, so it records no acknowledgement after
               the cut), the image is cloned with `cp --reflink=always`
               (FICLONE: an atomic point-in-time copy of everything the loop
               device completed), then the writer is SIGKILLed.

Either way the copy holds what a power cut at that instant leaves: the file
system's dirty page cache is gone (the kernel's periodic write-back is slowed
for the run: vm.dirty_expire_centisecs and vm.dirty_writeback_centisecs are
raised, and restored at exit). The copy is attached to a new loop device and
mounted (ext4 replays its journal), and pc_check reopens the database and
checks it against the writer's progress file (on the root file system). Some
rounds then run the writer again on the mounted copy, continuing the
sequence, cut that run too after 0-300 ms, and check the second copy.

Prints a line per round, then a summary, and last `N passed, M failed`.
Needs root, loop devices, mkfs.ext4, and dmsetup with a kernel that has
device-mapper or mkfs.xfs with XFS in the kernel; without them it prints
SKIP and exits 0. A failed round keeps (up to --keep-fails) the cut image as
it was before the check mounted it, the progress and state files and the
logs, and prints where.
"""

import argparse
import os
import random
import re
import shutil
import signal
import subprocess
import sys
import time

DEFAULT_OPTS = ("memtable_size=1M,pmem_size=32M,matrix_trigger=10,column_bytes=256K,"
                "sst_size=256K,l1_size=1M,level_multiplier=4")
BUCKETS = [("0-50ms", 0, 50), ("50-500ms", 50, 500), ("0.5-6s", 500, 6000)]
DM_PREFIX = "tkvpc"
DM_ENV = dict(os.environ, DM_DISABLE_UDEV="1")
SYSCTLS = ["/proc/sys/vm/dirty_expire_centisecs", "/proc/sys/vm/dirty_writeback_centisecs"]


class Skip(Exception):
    pass


class HarnessError(Exception):
    pass


def log(*a):
    print(*a, flush=True)


def sh(cmd, timeout=120, check=True, env=None):
    """Runs cmd (a list); returns the CompletedProcess. Raises HarnessError
    on a non-zero status (check) or a timeout."""
    try:
        r = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, env=env)
    except subprocess.TimeoutExpired:
        raise HarnessError("timed out after %ds: %s" % (timeout, " ".join(cmd)))
    if check and r.returncode != 0:
        raise HarnessError("%s: status %d: %s" % (" ".join(cmd), r.returncode, (r.stderr or r.stdout).strip()))
    return r


def mix64(x):
    x = (x + 0x9e3779b97f4a7c15) & 0xffffffffffffffff
    x = ((x ^ (x >> 30)) * 0xbf58476d1ce4e5b9) & 0xffffffffffffffff
    x = ((x ^ (x >> 27)) * 0x94d049bb133111eb) & 0xffffffffffffffff
    return x ^ (x >> 31)


# ---------------------------------------------------------------- resources

class Resources:
    """Everything set up that must be undone, in order; undo_all() at exit
    (also after a failure or Ctrl-C) undoes what is left, newest first."""

    def __init__(self):
        self.items = []  # (kind, value)

    def add(self, kind, value):
        self.items.append((kind, value))

    def drop(self, kind, value):
        if (kind, value) in self.items:
            self.items.remove((kind, value))

    def undo_all(self):
        while self.items:
            kind, value = self.items.pop()
            try:
                undo(kind, value)
            except Exception as e:  # keep going: undo the rest
                log("# cleanup: %s %s: %s" % (kind, value, e))


RES = Resources()


def undo(kind, value):
    if kind == "proc":
        if value.poll() is None:
            value.kill()
        try:
            value.wait(timeout=30)
        except subprocess.TimeoutExpired:
            log("# cleanup: process %d did not end" % value.pid)
    elif kind == "mount":
        umount(value)
    elif kind == "loop":
        sh(["losetup", "-d", value], check=False, timeout=60)
    elif kind == "dm":
        dm_unfreeze_as_error(value)
        sh(["dmsetup", "remove", "--retry", value], check=False, timeout=60, env=DM_ENV)
    elif kind == "sysctl":
        path, old = value
        with open(path, "w") as f:
            f.write(old)
    elif kind == "file":
        if os.path.exists(value):
            os.unlink(value)


def umount(mnt):
    r = sh(["umount", mnt], check=False, timeout=120)
    if r.returncode != 0 and os.path.ismount(mnt):
        sh(["umount", "-l", mnt], check=False, timeout=60)


def dm_sectors(name):
    r = sh(["dmsetup", "table", name], check=False, env=DM_ENV)
    m = re.match(r"\s*0\s+(\d+)\s", r.stdout)
    return int(m.group(1)) if m else None


def dm_unfreeze_as_error(name):
    """A suspended dm device holding I/O: swap in an `error` table and resume,
    so the held I/O fails and whoever waits on it (the killed writer, the
    umount) can go on."""
    info = sh(["dmsetup", "info", "-c", "--noheadings", "-o", "attr", name], check=False, env=DM_ENV).stdout
    if "s" not in info.strip()[:3]:
        return
    n = dm_sectors(name)
    if n:
        sh(["dmsetup", "load", name, "--table", "0 %d error" % n], check=False, env=DM_ENV)
    sh(["dmsetup", "resume", name], check=False, timeout=60, env=DM_ENV)


# ---------------------------------------------------------------- the host: where images live, how the cut copies

class Host:
    def __init__(self, method, workdir, image_size):
        self.method = method
        self.workdir = workdir
        self.image_size = image_size
        self.imgdir = None
        self.host_img = None

    def setup(self):
        if self.method == "reflink":
            # An XFS file system (reflink) for the images, on a loop device over a
            # sparse file of the work directory.
            self.host_img = os.path.join(self.workdir, "host-xfs.img")
            self.imgdir = os.path.join(self.workdir, "host")
            os.makedirs(self.imgdir, exist_ok=True)
            with open(self.host_img, "wb") as f:
                f.truncate(16 << 30)
            RES.add("file", self.host_img)
            sh(["mkfs.xfs", "-q", "-f", "-m", "reflink=1", self.host_img])
            loop = sh(["losetup", "-f", "--show", self.host_img]).stdout.strip()
            RES.add("loop", loop)
            sh(["mount", "-t", "xfs", loop, self.imgdir])
            RES.add("mount", self.imgdir)
        else:
            self.imgdir = os.path.join(self.workdir, "images")
            os.makedirs(self.imgdir, exist_ok=True)
        self.template = os.path.join(self.imgdir, "template.img")
        with open(self.template, "wb") as f:
            f.truncate(self.image_size)
        sh(["mkfs.ext4", "-q", "-F", self.template])

    def clone(self, src, dst):
        if self.method == "reflink":
            sh(["cp", "--reflink=always", src, dst])
        else:
            sh(["cp", "--sparse=always", src, dst])

    def path(self, name):
        return os.path.join(self.imgdir, name)


# ---------------------------------------------------------------- one attached image

class Stage:
    """An image on a loop device (and, live with cut=dm, a dm linear target
    over it), mounted at mnt."""

    def __init__(self, host, img, mnt, live, tag):
        self.host, self.img, self.mnt = host, img, mnt
        self.dm = live and host.method == "dm"
        self.name = "%s-%d-%s" % (DM_PREFIX, os.getpid(), tag)
        self.loop = self.dev = None

    def attach(self):
        self.loop = sh(["losetup", "-f", "--show", self.img]).stdout.strip()
        RES.add("loop", self.loop)
        self.dev = self.loop
        if self.dm:
            sectors = int(sh(["blockdev", "--getsz", self.loop]).stdout.strip())
            sh(["dmsetup", "create", self.name, "--table", "0 %d linear %s 0" % (sectors, self.loop)], env=DM_ENV)
            RES.add("dm", self.name)
            sh(["dmsetup", "mknodes", self.name], check=False, env=DM_ENV)
            self.dev = "/dev/mapper/" + self.name
        os.makedirs(self.mnt, exist_ok=True)
        sh(["mount", "-t", "ext4", self.dev, self.mnt])
        RES.add("mount", self.mnt)

    def cut(self, writer, out_img):
        """The power cut: freeze the device, kill the writer, copy the image
        as the device holds it; then tear this stage down. Returns the
        seconds the freeze and copy took."""
        t0 = time.monotonic()
        if self.dm:
            sh(["dmsetup", "suspend", "--noflush", "--nolockfs", self.name], timeout=120, env=DM_ENV)
            writer.proc.kill()
            sh(["cp", "--sparse=always", self.img, out_img], timeout=600)
            took = time.monotonic() - t0
            dm_unfreeze_as_error(self.name)
            writer.reap()
        else:
            writer.stop()
            self.host.clone(self.img, out_img)
            took = time.monotonic() - t0
            writer.proc.kill()
            writer.reap()
        self.detach()
        return took

    def detach(self):
        umount(self.mnt)
        RES.drop("mount", self.mnt)
        if self.dm:
            r = None
            for _ in range(20):
                r = sh(["dmsetup", "remove", self.name], check=False, timeout=60, env=DM_ENV)
                if r.returncode == 0:
                    break
                time.sleep(0.25)
            if r.returncode != 0:
                raise HarnessError("dmsetup remove %s: %s" % (self.name, r.stderr.strip()))
            RES.drop("dm", self.name)
        sh(["losetup", "-d", self.loop], timeout=60)
        RES.drop("loop", self.loop)


# ---------------------------------------------------------------- the writer and the checker

class Writer:
    def __init__(self, args, dbdir, progress, seed, base_state, logpath):
        cmd = [os.path.join(args.bin, "pc_writer"), dbdir, progress, str(seed), str(args.threads), args.all_opts]
        if base_state:
            cmd.append(base_state)
        if os.path.exists(progress):
            os.unlink(progress)
        self.logf = open(logpath, "w")
        self.t0 = time.monotonic()
        env = dict(os.environ)
        if args.checkpoint_ms:
            env["PC_CHECKPOINT_MS"] = str(args.checkpoint_ms)
        self.proc = subprocess.Popen(cmd, stdout=self.logf, stderr=subprocess.STDOUT, env=env)
        RES.add("proc", self.proc)

    def stop(self):
        """SIGSTOP, then wait (up to 5 s) until no thread runs user code: each
        is stopped, or in the kernel (it stops on its way out)."""
        os.kill(self.proc.pid, signal.SIGSTOP)
        deadline = time.monotonic() + 5
        while time.monotonic() < deadline:
            states = []
            try:
                for tid in os.listdir("/proc/%d/task" % self.proc.pid):
                    with open("/proc/%d/task/%s/stat" % (self.proc.pid, tid)) as f:
                        states.append(f.read().rsplit(")", 1)[1].split()[0])
            except OSError:
                return  # it is gone
            if all(s in "TtDZX" for s in states):
                return
            time.sleep(0.001)
        log("# warning: writer %d not stopped after 5 s" % self.proc.pid)

    def reap(self):
        try:
            self.proc.wait(timeout=120)
        except subprocess.TimeoutExpired:
            raise HarnessError("the killed writer %d did not end within 120 s" % self.proc.pid)
        RES.drop("proc", self.proc)
        self.logf.close()


def run_check(args, dbdir, progress, seed, base_state, out_state, logpath):
    cmd = [os.path.join(args.bin, "pc_check"), dbdir, progress, str(seed), str(args.threads), args.all_opts,
           base_state or "-", out_state]
    t0 = time.monotonic()
    try:
        r = subprocess.run(cmd, capture_output=True, text=True, timeout=args.check_timeout)
        out, status = r.stdout + r.stderr, r.returncode
    except subprocess.TimeoutExpired as e:
        out = (e.stdout or b"").decode(errors="replace") if isinstance(e.stdout, bytes) else (e.stdout or "")
        out += "\nFAIL the checker did not finish within %d s (a hung tkv_open or close?)\n" % args.check_timeout
        status = 1
    with open(logpath, "w") as f:
        f.write(" ".join(repr(c) if " " in c or "," in c else c for c in cmd) + "\n" + out)
    res = {"ok": status == 0, "fails": [], "stats": {}, "writer": "", "secs": time.monotonic() - t0,
           "log": logpath}
    for line in out.splitlines():
        if line.startswith("FAIL "):
            res["fails"].append(line[5:])
        elif line.startswith("STATS "):
            for kv in line[6:].split():
                k, _, v = kv.partition("=")
                try:
                    res["stats"][k] = float(v) if "." in v else int(v)
                except ValueError:
                    pass
        elif line.startswith("WRITER "):
            res["writer"] = line[7:]
        elif line.startswith("WALS "):
            for kv in line[5:].split():
                k, _, v = kv.partition("=")
                res["stats"]["wals_" + k] = int(v)
        elif line.startswith("CHECKPOINTS "):
            for kv in line[12:].split():
                k, _, v = kv.partition("=")
                res["stats"]["ckpt_" + k] = int(v)
    res["stats"]["threads"] = args.threads
    if status not in (0, 1):
        res["fails"].append("pc_check ended with status %d: %s" % (status, out.strip().splitlines()[-1:] or ""))
    if status == 1 and not res["fails"]:
        res["fails"].append("pc_check failed without a message (see %s)" % logpath)
    return res


# ---------------------------------------------------------------- setup and checks of the machine

def pick_method(want):
    if os.geteuid() != 0:
        raise Skip("needs root (loop devices, mount, dmsetup)")
    if not os.path.exists("/dev/loop-control") or not shutil.which("losetup"):
        raise Skip("no loop devices (/dev/loop-control, losetup)")
    if sh(["losetup", "-f"], check=False).returncode != 0:
        raise Skip("no free loop device (losetup -f failed)")
    if not shutil.which("mkfs.ext4"):
        raise Skip("mkfs.ext4 missing (Debian package e2fsprogs)")
    with open("/proc/filesystems") as f:
        fss = f.read().split()
    if "ext4" not in fss:
        raise Skip("the kernel has no ext4")
    why_no_dm = None
    if not shutil.which("dmsetup"):
        why_no_dm = "dmsetup missing (Debian package dmsetup)"
    else:
        with open("/proc/misc") as f:
            if "device-mapper" not in f.read():
                why_no_dm = "the kernel has no device-mapper (none in /proc/misc)"
        if not why_no_dm:
            sh(["dmsetup", "mknodes"], check=False, env=DM_ENV)
            if sh(["dmsetup", "version"], check=False, env=DM_ENV).returncode != 0:
                why_no_dm = "dmsetup cannot reach the kernel's device-mapper"
    why_no_reflink = None
    if not shutil.which("mkfs.xfs"):
        why_no_reflink = "mkfs.xfs missing (Debian package xfsprogs)"
    elif "xfs" not in fss:
        why_no_reflink = "the kernel has no XFS"
    if want == "dm" and why_no_dm:
        raise Skip("cut=dm: " + why_no_dm)
    if want == "reflink" and why_no_reflink:
        raise Skip("cut=reflink: " + why_no_reflink)
    if want == "auto":
        if not why_no_dm:
            return "dm", None
        if not why_no_reflink:
            return "reflink", why_no_dm
        raise Skip("no way to freeze a device: %s; %s" % (why_no_dm, why_no_reflink))
    return want, None


def clean_stale(workdir):
    """Mounts, loop devices and dm devices a killed earlier run left under workdir."""
    with open("/proc/mounts") as f:
        mnts = [l.split()[1] for l in f]
    for m in sorted((m for m in mnts if m.startswith(workdir + "/")), key=len, reverse=True):
        log("# cleaning up a stale mount: %s" % m)
        umount(m)
    if shutil.which("dmsetup"):
        for line in sh(["dmsetup", "ls"], check=False, env=DM_ENV).stdout.splitlines():
            name = line.split()[0] if line.split() else ""
            if name.startswith(DM_PREFIX + "-"):
                log("# cleaning up a stale dm device: %s" % name)
                dm_unfreeze_as_error(name)
                sh(["dmsetup", "remove", "--force", name], check=False, env=DM_ENV)
    for dev, back in loops():
        if back.startswith(workdir + "/"):
            log("# cleaning up a stale loop device: %s (%s)" % (dev, back))
            sh(["losetup", "-d", dev], check=False)


def loops():
    r = sh(["losetup", "-l", "-n", "-O", "NAME,BACK-FILE"], check=False)
    out = []
    for line in r.stdout.splitlines():
        parts = line.split(None, 1)
        if len(parts) == 2:
            out.append((parts[0], parts[1].replace(" (deleted)", "").strip()))
    return out


def check_leaks(host, workdir):
    """Nothing of a round may outlive it: loop devices over its images, dm
    devices, mounts."""
    leaks = []
    for dev, back in loops():
        if back.startswith(host.imgdir + "/") and back != host.template:
            leaks.append("loop device %s over %s" % (dev, back))
    if host.method == "dm":
        for line in sh(["dmsetup", "ls"], check=False, env=DM_ENV).stdout.splitlines():
            if line.startswith(DM_PREFIX + "-"):
                leaks.append("dm device " + line.split()[0])
    with open("/proc/mounts") as f:
        for l in f:
            m = l.split()[1]
            if m.startswith(workdir + "/") and m != host.imgdir:
                leaks.append("mount " + m)
    if leaks:
        raise HarnessError("left behind by the round: " + "; ".join(leaks))


def slow_writeback(centisecs):
    for path in SYSCTLS:
        with open(path) as f:
            old = f.read().strip()
        RES.add("sysctl", (path, old))
        with open(path, "w") as f:
            f.write(str(centisecs))


# ---------------------------------------------------------------- rounds

class Totals:
    def __init__(self):
        self.passed = self.failed = 0
        self.acked = self.sync_acked = self.lost_acked = self.inflight_kept = self.kept = 0
        self.ckpt = {"complete": 0, "refused_incomplete": 0, "empty": 0}
        self.reopens = self.killed_in_open = 0
        self.verify_problem_checks = 0
        self.wals_v3 = self.rounds_v3 = 0
        self.buckets = {b[0]: 0 for b in BUCKETS}
        self.fail_kinds = {}
        self.kept_fails = 0
        self.round_secs = []


def normalize(msg):
    msg = re.sub(r"/[^\s:,()]+", "<path>", msg)
    return re.sub(r"\d+", "#", msg)[:220]


def one_cut(args, host, totals, stage, r, run, seed, base_state, delay_ms, files):
    """Runs the writer on stage (mounted, live) for delay_ms, cuts, and
    returns (cut image, pristine copy or None, progress path, writer note)."""
    rundir = args.rundir
    progress = os.path.join(rundir, "progress-%d.bin" % run)
    wlog = os.path.join(rundir, "writer-%d.log" % run)
    files += [progress, wlog]
    w = Writer(args, os.path.join(stage.mnt, "db"), progress, seed, base_state, wlog)
    note = ""
    while True:
        left = w.t0 + delay_ms / 1000.0 - time.monotonic()
        if left <= 0:
            break
        if w.proc.poll() is not None:
            note = "the writer exited by itself (status %s) %.0f ms after its start" % (
                w.proc.returncode, (time.monotonic() - w.t0) * 1000)
            break
        time.sleep(min(left, 0.005))
    cut_img = host.path("cut-%d.img" % run)
    stage.cut(w, cut_img)
    pristine = None
    if totals.kept_fails < args.keep_fails:
        pristine = host.path("cut-%d.pristine.img" % run)
        host.clone(cut_img, pristine)
    return cut_img, pristine, progress, note


def run_round(args, host, totals, r):
    rng = random.Random(mix64(args.seed ^ (r * 0x9e3779b9)))
    if args.cut_ms:  # one band for every round (long runs: a full default-sized pool)
        lo, hi = (float(x) for x in args.cut_ms.split("-"))
        bucket = ("%g-%gms" % (lo, hi), lo, hi)
        totals.buckets.setdefault(bucket[0], 0)
    else:
        bucket = BUCKETS[r] if r < 3 else rng.choices(BUCKETS, weights=[20, 30, 50])[0]
    delay = rng.uniform(bucket[1], bucket[2])
    reopen = r == 3 or (r > 3 and rng.random() < args.reopen_share)
    delay2 = rng.uniform(0, 300)
    seed = mix64(mix64(args.seed) + r) & 0xffffffffffff
    totals.buckets[bucket[0]] += 1
    t_round = time.monotonic()
    for f in os.listdir(args.rundir):
        os.unlink(os.path.join(args.rundir, f))
    files, images, fails, parts = [], [], [], []

    live = host.path("live.img")
    host.clone(host.template, live)
    images.append(live)
    st = Stage(host, live, os.path.join(args.workdir, "mnt-live"), True, "r%d-live" % r)
    st.attach()
    cut1, pristine1, prog1, note1 = one_cut(args, host, totals, st, r, 1, seed, None, delay, files)
    os.unlink(live)
    images += [cut1] + ([pristine1] if pristine1 else [])
    if note1:
        fails.append(note1)

    chk = Stage(host, cut1, os.path.join(args.workdir, "mnt-check"), reopen, "r%d-check" % r)
    chk.attach()
    state1 = os.path.join(args.rundir, "state-1.bin")
    res1 = run_check(args, os.path.join(chk.mnt, "db"), prog1, seed, None, state1,
                     os.path.join(args.rundir, "check-1.log"))
    files += [state1, res1["log"]]
    fails += res1["fails"]
    parts.append(describe_run("cut %s at %.0f ms" % (bucket[0], delay), res1))
    account(totals, res1)
    res2 = None
    if reopen and not fails:
        totals.reopens += 1
        cut2, pristine2, prog2, note2 = one_cut(args, host, totals, chk, r, 2, seed, state1, delay2, files)
        images += [cut2] + ([pristine2] if pristine2 else [])
        if note2:
            fails.append("reopen: " + note2)
        chk2 = Stage(host, cut2, os.path.join(args.workdir, "mnt-check"), False, "r%d-check2" % r)
        chk2.attach()
        state2 = os.path.join(args.rundir, "state-2.bin")
        res2 = run_check(args, os.path.join(chk2.mnt, "db"), prog2, seed, state1, state2,
                         os.path.join(args.rundir, "check-2.log"))
        files += [state2, res2["log"]]
        fails += ["after the reopen cut: " + f for f in res2["fails"]]
        parts.append(describe_run("reopen cut at %.0f ms" % delay2, res2))
        account(totals, res2)
        chk2.detach()
    else:
        chk.detach()
    check_leaks(host, args.workdir)

    secs = time.monotonic() - t_round
    totals.round_secs.append(secs)
    verdict = "PASS" if not fails else "FAIL " + fails[0]
    log("round %d/%d seed=%d: %s | %s (%.1f s)" % (r + 1, args.rounds, seed, " | ".join(parts), verdict, secs))
    if fails:
        totals.failed += 1
        kind = normalize(fails[0])
        totals.fail_kinds[kind] = totals.fail_kinds.get(kind, 0) + 1
        for f in fails[1:4]:
            log("    also: " + f)
        keep_failure(args, host, totals, r, seed, images, files)
    else:
        totals.passed += 1
    for img in images:
        if os.path.exists(img):
            os.unlink(img)


def describe_run(label, res):
    s = res["stats"]
    w = res["writer"]
    if w.startswith("opened=0") or w.startswith("none"):
        label += " (before its open returned)"
    if not s:
        return label
    label += ": issued %d acked %d (sync %d)" % (s.get("issued", 0), s.get("acked", 0), s.get("sync_acked", 0))
    if not s.get("db_open"):
        return label + ", not reopened"
    if s.get("found", 0) < s.get("threads", 0):
        return label + ", no prefix for %d threads" % (s["threads"] - s.get("found", 0))
    return "%s, kept %d, lost %d acked non-sync, %d in-flight kept" % (
        label, s.get("kept", 0), s.get("lost_acked", 0), s.get("inflight_kept", 0))


def account(totals, res):
    s = res["stats"]
    if res["writer"].startswith("opened=0") or res["writer"].startswith("none"):
        totals.killed_in_open += 1
    if s.get("verify_problems", 0) > 0:
        totals.verify_problem_checks += 1
    for k in totals.ckpt:
        totals.ckpt[k] += s.get("ckpt_" + k, 0)
    if not s.get("db_open"):
        return  # nothing was checked
    totals.acked += s.get("acked", 0)
    totals.sync_acked += s.get("sync_acked", 0)
    totals.lost_acked += s.get("lost_acked", 0)
    totals.inflight_kept += s.get("inflight_kept", 0)
    totals.kept += s.get("kept", 0)
    totals.wals_v3 += s.get("wals_v3", 0)
    totals.rounds_v3 += 1 if s.get("wals_v3", 0) else 0


def keep_failure(args, host, totals, r, seed, images, files):
    if totals.kept_fails >= args.keep_fails:
        log("    (not kept: --keep-fails %d reached)" % args.keep_fails)
        return
    totals.kept_fails += 1
    dest = os.path.join(args.workdir, "fail-r%04d-seed%d" % (r + 1, seed))
    if os.path.exists(dest):
        shutil.rmtree(dest)
    os.makedirs(dest)
    kept = []
    for img in images:
        if img.endswith(".pristine.img") and os.path.exists(img):
            out = os.path.join(dest, os.path.basename(img).replace(".pristine", ""))
            sh(["cp", "--sparse=always", img, out], timeout=600)
            kept.append(out)
    for f in files:
        if os.path.exists(f):
            shutil.copy(f, dest)
            kept.append(os.path.join(dest, os.path.basename(f)))
    with open(os.path.join(dest, "HOWTO.txt"), "w") as f:
        f.write("Round %d, seed %d, %d threads, options %s\n"
                "cut-N.img: the image as the cut left it (before the check mounted it);\n"
                "progress-N.bin: what writer run N recorded; state-1.bin: what the first check found;\n"
                "check-N.log: the checker's output (its first line is its command).\n"
                "To look again:  L=$(losetup -f --show cut-1.img); mkdir -p m; mount $L m\n"
                "  %s/pc_check m/db progress-1.bin %d %d '%s' - /tmp/state.bin\n"
                "  umount m; losetup -d $L\n"
                % (r + 1, seed, args.threads, args.all_opts, os.path.abspath(args.bin), seed, args.threads,
                   args.all_opts))
    log("    kept: %s (cut images, progress files, logs; HOWTO.txt)" % dest)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--bin", default="build/powercut", help="where pc_writer and pc_check are")
    ap.add_argument("--workdir", default="build/powercut/work", help="images, progress files, kept failures")
    ap.add_argument("--rounds", type=int, default=200)
    ap.add_argument("--threads", type=int, default=4)
    ap.add_argument("--seed", type=int, default=None)
    ap.add_argument("--opts", default=os.environ.get("PC_OPTS", DEFAULT_OPTS),
                    help="the database options (name=value,...)")
    ap.add_argument("--extra-opts", default="", help="appended to --opts, e.g. pmem_mode=msync or l0=sst")
    ap.add_argument("--cut", choices=["auto", "dm", "reflink"], default=os.environ.get("CUT", "auto"))
    ap.add_argument("--image-size", type=int, default=512 << 20)
    ap.add_argument("--reopen-share", type=float, default=0.25, help="share of rounds with a reopen cut")
    ap.add_argument("--keep-fails", type=int, default=3, help="failed rounds whose images are kept")
    ap.add_argument("--dirty-centisecs", type=int, default=360000,
                    help="vm.dirty_expire_centisecs and vm.dirty_writeback_centisecs during the run")
    ap.add_argument("--check-timeout", type=int, default=300)
    ap.add_argument("--checkpoint-ms", type=int, default=0,
                    help="the writer also takes a checkpoint every N ms (DB.ckpt/); the checker opens and verifies "
                         "every one the cut left and requires a partial one to be refused")
    ap.add_argument("--cut-ms", default="", help="MIN-MAX: cut every round MIN..MAX ms after the writer's start "
                    "instead of the three bands (e.g. 25000-30000 with --opts '' for a full 1 GiB pool)")
    args = ap.parse_args()
    args.bin = os.path.abspath(args.bin)
    args.workdir = os.path.abspath(args.workdir)
    args.all_opts = ",".join(o for o in (args.opts, args.extra_opts) if o)
    if args.seed is None:
        args.seed = (int(time.time() * 1e6) ^ os.getpid()) & 0xffffffffffff
    if not 1 <= args.threads <= 16:
        ap.error("--threads must be 1..16")
    for b in ("pc_writer", "pc_check"):
        if not os.access(os.path.join(args.bin, b), os.X_OK):
            ap.error("%s/%s not built (make %s/%s)" % (args.bin, b, args.bin, b))

    def on_term(signum, frame):
        raise KeyboardInterrupt()
    signal.signal(signal.SIGINT, on_term)  # also when started in the background, where SIGINT was ignored
    signal.signal(signal.SIGTERM, on_term)
    signal.signal(signal.SIGHUP, on_term)

    try:
        method, why = pick_method(args.cut)
    except Skip as e:
        log("SKIP: crashtest-power: %s" % e)
        return 0
    os.makedirs(args.workdir, exist_ok=True)
    args.rundir = os.path.join(args.workdir, "run")
    os.makedirs(args.rundir, exist_ok=True)
    totals = Totals()
    host = Host(method, args.workdir, args.image_size)
    t0 = time.monotonic()
    status = 0
    try:
        clean_stale(args.workdir)
        host.setup()
        slow_writeback(args.dirty_centisecs)
        log("# crashtest-power: %d rounds, %d threads, seed %d (rerun with SEED=%d), cut=%s%s" % (
            args.rounds, args.threads, args.seed, args.seed, method,
            " (%s: the images live on XFS and a cut is a reflink snapshot)" % why if why else ""))
        log("# options: %s; ext4 %d MiB; vm.dirty_expire/writeback_centisecs=%d for the run; work dir %s" % (
            args.all_opts, args.image_size >> 20, args.dirty_centisecs, args.workdir))
        for r in range(args.rounds):
            run_round(args, host, totals, r)
    except KeyboardInterrupt:
        log("# interrupted")
        status = 130
    except HarnessError as e:
        log("# harness error (not a verdict on the library): %s" % e)
        status = 2
    finally:
        RES.undo_all()
        for d in ("mnt-live", "mnt-check", "host"):
            p = os.path.join(args.workdir, d)
            if os.path.isdir(p) and not os.path.ismount(p):
                shutil.rmtree(p, ignore_errors=True)
        shutil.rmtree(os.path.join(args.workdir, "images"), ignore_errors=True)

    n = totals.passed + totals.failed
    secs = time.monotonic() - t0
    log("# %d rounds in %.0f s (%.1f s a round), %d with a reopen cut; cut points: %s; writer killed before its "
        "open returned: %d" % (n, secs, secs / n if n else 0, totals.reopens,
                               ", ".join("%s %d" % kv for kv in totals.buckets.items()), totals.killed_in_open))
    log("# checks whose tkv_verify (read-only, before the reopen) reported problems: %d (not judged; "
        "the check logs hold the reports)" % totals.verify_problem_checks)
    if totals.fail_kinds:
        log("# failures by first message (numbers as #):")
        for kind, cnt in sorted(totals.fail_kinds.items(), key=lambda kv: -kv[1]):
            log("#   %4d  %s" % (cnt, kind))
    if args.checkpoint_ms:
        log("checkpoints left by the cuts: %d complete (opened, tkv_verify clean), %d partial refused as incomplete, "
            "%d empty" % (totals.ckpt["complete"], totals.ckpt["refused_incomplete"], totals.ckpt["empty"]))
    log("acknowledged writes checked: %d (TKV_SYNC: %d), in the rounds whose database reopened; acknowledged "
        "non-sync writes the cuts took: %d; writes in flight at a cut that survived: %d" % (totals.acked, totals.sync_acked, totals.lost_acked,
                                                           totals.inflight_kept))
    log("recycled WALs (format version 3) in the cut images: %d, in %d checks" % (totals.wals_v3, totals.rounds_v3))
    log("%d passed, %d failed" % (totals.passed, totals.failed))
    if status:
        return status
    return 1 if totals.failed else 0


if __name__ == "__main__":
    sys.exit(main())
