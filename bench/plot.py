#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""plot.py -- PNG timelines from tkv_bench --csv DIR.

For every benchmark in DIR/timeline.csv, draws DIR/<benchmark>.png with two
panels over time: throughput (ops/s) and p99 latency (us, log scale) of all
operations, one line per engine. Usage: python3 bench/plot.py DIR
"""
import csv
import os
import sys
from collections import defaultdict

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402


def main(d):
    path = os.path.join(d, "timeline.csv")
    series = defaultdict(lambda: defaultdict(list))  # bench -> engine -> rows
    with open(path, newline="") as f:
        for r in csv.DictReader(f):
            if r["op"] != "all":
                continue
            series[r["benchmark"]][r["engine"]].append(
                (float(r["t_sec"]), float(r["ops_per_sec"]), float(r["p99_us"]), float(r["max_us"]))
            )
    written = []
    for bench, engines in series.items():
        fig, (ax1, ax2) = plt.subplots(2, 1, figsize=(10, 6.5), sharex=True)
        for engine, rows in sorted(engines.items()):
            t = [x[0] for x in rows]
            ax1.plot(t, [x[1] for x in rows], label=engine, linewidth=1.2)
            ax2.plot(t, [max(x[2], 0.01) for x in rows], label=engine, linewidth=1.2)
        ax1.set_ylabel("throughput (ops/s)")
        ax1.set_title(f"tkv_bench {bench}: per-second throughput and p99 latency")
        ax1.grid(alpha=0.3)
        ax1.legend(loc="best")
        ax2.set_ylabel("p99 latency (us, log)")
        ax2.set_yscale("log")
        ax2.set_xlabel("time (s)")
        ax2.grid(alpha=0.3, which="both")
        fig.tight_layout()
        out = os.path.join(d, f"{bench}.png")
        fig.savefig(out, dpi=110)
        plt.close(fig)
        written.append(out)
    for w in written:
        print(f"plot: {w}")


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit("usage: plot.py DIR  (DIR from tkv_bench --csv DIR)")
    main(sys.argv[1])
