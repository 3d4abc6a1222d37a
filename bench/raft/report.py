#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""report.py -- the table of `make bench-raft` (bench/raft/run_raft.sh).

Usage: report.py TIERKV.txt RAFT-WAL.txt RAFT-BOLTDB.txt

Each file is the output of `go test -bench . -count=N` for one store. For
every benchmark the median ns/op of the N runs is shown per store, then
tierkv's speed against each other store (their time / tierkv's: above 1 is
tierkv faster). A benchmark a store skipped (raft-wal refuses raftbench's
index 0 and gaps) shows "skip".
"""
import re
import statistics
import sys

STORES = ["tierkv", "raft-wal", "raft-boltdb"]
ORDER = ["FirstIndex", "LastIndex", "GetLog", "StoreLog", "StoreLogs", "DeleteRange",
         "Set", "Get", "SetUint64", "GetUint64", "Append64x1KiB"]
LINE = re.compile(r"^Benchmark(\w+?)(?:-\d+)?\s+\d+\s+([\d.]+) ns/op")
SKIP = re.compile(r"^--- SKIP: Benchmark(\w+)")


def parse(path):
    runs, skipped = {}, set()
    for line in open(path):
        m = LINE.match(line)
        if m:
            runs.setdefault(m.group(1), []).append(float(m.group(2)))
        m = SKIP.match(line)
        if m:
            skipped.add(m.group(1))
    return {k: statistics.median(v) for k, v in runs.items()}, skipped


def fmt_ns(ns):
    if ns >= 1e6:
        return f"{ns / 1e6:.2f} ms"
    if ns >= 1e3:
        return f"{ns / 1e3:.1f} us"
    return f"{ns:.0f} ns"


def main(paths):
    if len(paths) != len(STORES):
        sys.exit(__doc__)
    data = [parse(p) for p in paths]
    head = ["benchmark"] + STORES + ["vs raft-wal", "vs raft-boltdb"]
    rows = []
    for name in ORDER:
        row, med = [name], []
        for meds, skipped in data:
            v = meds.get(name)
            med.append(v)
            row.append(fmt_ns(v) if v is not None else ("skip" if name in skipped else "-"))
        for other in med[1:]:
            row.append(f"{other / med[0]:.2f}x" if other and med[0] else "-")
        rows.append(row)
    app = [m.get("Append64x1KiB") for m, _ in data]
    widths = [max(len(r[i]) for r in rows + [head]) for i in range(len(head))]
    for r in [head] + rows:
        print("  ".join(c.ljust(w) if i == 0 else c.rjust(w) for i, (c, w) in enumerate(zip(r, widths))))
    if all(app):
        print("Append64x1KiB entries/s: " + ", ".join(f"{s} {64e9 / a:,.0f}" for s, a in zip(STORES, app)))


if __name__ == "__main__":
    main(sys.argv[1:])
