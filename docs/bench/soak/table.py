#!/usr/bin/env python3
"""table.py -- a soak log (make soak) as a markdown table of its samples and
an ASCII chart of RSS, anonymous RSS and the heap in use (MiB over time).

usage: python3 docs/bench/soak/table.py build/soak.log
"""
import re
import sys

FIELDS = ("t", "ops", "rss", "anon", "file", "heap", "held", "fds", "pool_used", "pool_alloc", "dram", "budget",
          "disk", "reopens")
LINE = re.compile(r"\[soak\] t=\s*(\d+)s ops=(\d+) \(\d+/s\) rss=([\d.]+)M anon=([\d.]+)M file=([\d.]+)M "
                  r"heap=([\d.]+)M/([\d.]+)M fds=(\d+) pool_used=([\d.]+)M pool_alloc=([\d.]+)M "
                  r"dram=([\d.]+)M/([\d.]+)M disk=([\d.]+)M reopens=(\d+)")


def main(path):
    rows = [dict(zip(FIELDS, map(float, m.groups()))) for m in map(LINE.search, open(path)) if m]
    print("| t (min) | ops (M) | rss | anon | file | heap in use / held | fds | pool used / alloc | dram / budget "
          "| disk | reopens |")
    print("|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    for r in rows:
        print(f"| {r['t'] / 60:.0f} | {r['ops'] / 1e6:.2f} | {r['rss']:.0f} | {r['anon']:.0f} | {r['file']:.0f} "
              f"| {r['heap']:.0f} / {r['held']:.0f} | {r['fds']:.0f} | {r['pool_used']:.0f} / {r['pool_alloc']:.0f} "
              f"| {r['dram']:.0f} / {r['budget']:.0f} | {r['disk']:.0f} | {r['reopens']:.0f} |")
    print("\nMiB in each column (`r` rss, `a` anon, `h` heap in use; one row per sample):\n\n```")
    top = max(r["rss"] for r in rows)
    scale = 100.0 / top
    for r in rows:
        line = [" "] * 101
        for key, ch in (("heap", "h"), ("anon", "a"), ("rss", "r")):
            line[int(r[key] * scale)] = ch
        print(f"{r['t'] / 60:4.0f}m |{''.join(line).rstrip()}")
    print(f"       0{' ' * 44}{top / 2:.0f}{' ' * 44}{top:.0f} MiB\n```")


if __name__ == "__main__":
    main(sys.argv[1])
