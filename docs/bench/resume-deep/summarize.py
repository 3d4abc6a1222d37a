#!/usr/bin/env python3
"""summarize.py -- one table row per fill run of docs/bench/resume-deep/: NAME.out (tkv_bench's
output) and NAME-props.log (TKV_BENCH_PROPERTY_LOG: tkv.sched, tkv.matrix and tkv.stats once a second).

Usage: summarize.py DIR NAME...   Prints, per run: ops/s, stall ms, max us, settle s (tkv_bench's
table); at the end of the fill (the last property snapshot before the fill's end): L1 bytes / target,
deep compactions installed (compaction.compact-deep count), trivial moves, and the deep: counters
(yields, partial commits, partial bytes, aborts, yield waits); the largest L1 / target during the fill;
and the same counters at the last snapshot (the logger stops at close, so that is during the settle).
The logs kept here are trimmed to the lines it reads (=== t, deep:, level.L*, compaction.*, columns:,
stalls:)."""
import re
import sys


def snapshots(path):
    """[(t, text)] of the property log."""
    snaps, t, buf = [], None, []
    for line in open(path, errors="replace"):
        m = re.match(r"=== t=([0-9.]+)", line)
        if m:
            if t is not None:
                snaps.append((t, "".join(buf)))
            t, buf = float(m.group(1)), []
        else:
            buf.append(line)
    if t is not None:
        snaps.append((t, "".join(buf)))
    return snaps


def num(text, field, default=0):
    m = re.search(re.escape(field) + r"([0-9.]+)", text)
    return float(m.group(1)) if m else default


def l1_ratio(text):
    m = re.search(r"level\.L1: files=(\d+) bytes=(\d+) target=(\d+)", text)
    return (int(m.group(1)), int(m.group(2)), int(m.group(3))) if m else (0, 0, 1)


def counters(text):
    return {
        "deep": int(num(text, "compaction.compact-deep: count=")),
        "moves": int(num(text, "compaction.trivial_moves: ")),
        "yields": int(num(text, "yields=")),
        "partial": int(num(text, "partial_commits=")),
        "pbytes": int(num(text, "partial_bytes=")),
        "aborts": int(num(text, "aborts=")),
        "ywait_ms": num(text, "yield_wait_us=") / 1e3,
        "ywait_max_ms": num(text, "yield_wait_max_us=") / 1e3,
        "deep_in_mb": num(text, "compaction.compact-deep: count=") and
        num(re.search(r"compaction\.compact-deep:.*", text).group(0), "input_bytes=") / 2**20,
    }


def main():
    d = sys.argv[1]
    for name in sys.argv[2:]:
        out = open(f"{d}/{name}.out", errors="replace").read()
        m = re.search(r"\((\d+) ops in ([0-9.]+) s\)", out)
        fill_s = float(m.group(2)) if m else 1e9
        row = re.search(r"^fillrandom\s+\S+\s+(\d+)\s+\S+\s+\S+\s+\S+\s+\S+\s+(\d+)\s+\S+\s+\S+\s+(\d+)\s+(\d+)\s+([0-9.]+)",
                        out, re.M)
        ops, maxus, stalls, stallms, settle = row.groups() if row else ("?",) * 5
        snaps = snapshots(f"{d}/{name}-props.log")
        during = [s for s in snaps if s[0] <= fill_s] or snaps[:1]
        end, last = during[-1][1], snaps[-1][1]
        f, b, tg = l1_ratio(end)
        peak = max(l1_ratio(s)[1] / l1_ratio(s)[2] for _, s in during)
        c, z = counters(end), counters(last)
        print(f"{name}: {ops} ops/s, fill {fill_s:.1f} s, stalls {stalls} ({stallms} ms), max {maxus} us, settle {settle} s")
        print(f"  end of fill: L1 {f} files {b / 2**20:.0f} MiB / target {tg / 2**20:.0f} MiB = {b / tg:.2f} "
              f"(peak {peak:.2f}); deep compactions {c['deep']} ({c['deep_in_mb']:.0f} MiB in), trivial moves "
              f"{c['moves']}, yields {c['yields']}, partial commits {c['partial']} ({c['pbytes'] / 2**20:.0f} MiB "
              f"kept), aborts {c['aborts']}, yield wait {c['ywait_ms']:.0f} ms (max {c['ywait_max_ms']:.0f})")
        fz, bz, tz = l1_ratio(last)
        print(f"  last snapshot (t={snaps[-1][0]:.1f} s, in the settle): L1 {fz} files {bz / 2**20:.0f} MiB = "
              f"{bz / tz:.2f}; deep compactions {z['deep']}, yields {z['yields']}, partial commits {z['partial']}, "
              f"aborts {z['aborts']}")


if __name__ == "__main__":
    main()
