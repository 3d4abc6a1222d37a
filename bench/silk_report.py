#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""silk_report.py -- the SILK-style experiment's table and plot (bench/run_silk.sh).

Reads OUT/<label>/timeline.csv and summary.csv, one directory per
configuration (tkv_bench --csv with --label), for the open-loop benchmark
(ycsba by default), and writes:
  OUT/silk.png   per-second p99 latency (log) and throughput against the
                 offered load, one line per configuration, peaks shaded
  OUT/silk.txt   the table below (also printed)

Per configuration:
  max p99      the largest per-second p99 of the run (us)
  valley p99   median per-second p99 over the valley seconds (us)
  peak p99     median per-second p99 over the peak seconds (us)
  max/valley   max p99 / valley p99
  ops/s        operations completed / run time, and the offered average
  on-load      seconds whose completed ops are within 10% of the offered rate
  stall ms     the engine's write-stall time during the run (summary.csv)
A configuration labelled devread* (the "devread" engine: one 4 KiB device
read per get, no index, no writes during the run) is the device floor, and
one labelled null* (the "null" engine) is the harness floor: both are left
out of the ratios and summarised on their own lines; when its own worst
second exceeds NOISY_HARNESS_US the report says that the run's worst seconds
measure the host as much as the engines.

When OUT/<label>/host.csv exists (tkv_bench --csv, bench/hostmon.h), the
report also lists each configuration's worst seconds beside what the host
did in them: CPU busy/iowait/steal, the database device's reads per second
and mean read service time ("await", queue included), its write MB/s and
utilisation, and the hiccup meter's worst lateness (a thread sleeping 1 ms
at a time): a second over 5 ms with a hiccup >= HICCUP_MS while the CPUs
were mostly idle is one in which the process (or the VM) did not run. A
second over 5 ms whose device read await is >= SLOW_DEVICE_MS (while the
same device serves reads in well under a millisecond in quiet seconds) was
spent waiting for the device.

The schedule (RATE:DUR,...) is the one given to tkv_bench --rate; seconds
are matched to phases by their midpoint. Peak = phases above the lowest rate.

usage: silk_report.py OUT SCHEDULE LABEL [LABEL...] [--bench ycsba]
"""
import csv
import os
import statistics
import sys

NOISY_HARNESS_US = 5000  # null engine's worst second above this: a noisy hour
SLOW_DEVICE_MS = 5.0     # device read await above this: the device was slow
HICCUP_MS = 5.0          # the hiccup meter woke this late: the process did not run
BAD_SECOND_US = 5000     # a "bad" second: per-second p99 above this
WORST_SHOWN = 3          # worst seconds listed per configuration


def parse_schedule(s):
    phases = []
    for part in s.split(","):
        rate, dur = part.split(":")
        d = dur.strip()
        if d.endswith("ms"):
            sec = float(d[:-2]) / 1000
        elif d.endswith("s"):
            sec = float(d[:-1])
        elif d.endswith("m"):
            sec = float(d[:-1]) * 60
        else:
            sec = float(d)
        phases.append((float(rate), sec))
    return phases


def offered_at(phases, t_mid):
    cycle = sum(p[1] for p in phases)
    x = t_mid % cycle
    for rate, sec in phases:
        if x < sec:
            return rate
        x -= sec
    return phases[-1][0]


def load(out, label, bench):
    rows = []
    with open(os.path.join(out, label, "timeline.csv"), newline="") as f:
        for r in csv.DictReader(f):
            if r["benchmark"] == bench and r["op"] == "all":
                t = float(r["t_sec"])
                if rows and t - rows[-1][0] < 0.5:
                    continue  # the reporter's last, partial interval
                rows.append((t, float(r["ops_per_sec"]), float(r["p99_us"]), float(r["max_us"])))
    summ = {}
    with open(os.path.join(out, label, "summary.csv"), newline="") as f:
        for r in csv.DictReader(f):
            if r["benchmark"] == bench and r["op"] == "all":
                summ = r
    return rows, summ


def load_host(out, label, bench):
    """{t_sec rounded to 0.1: row dict} from host.csv, or {} without it."""
    path = os.path.join(out, label, "host.csv")
    host = {}
    try:
        with open(path, newline="") as f:
            for r in csv.DictReader(f):
                if r["benchmark"] == bench:
                    host[round(float(r["t_sec"]), 1)] = {k: float(v) for k, v in r.items()
                                                         if k not in ("engine", "benchmark")}
    except OSError:
        return {}
    return host


def host_lines(label, rows, host):
    """The worst seconds of one configuration beside the host's counters."""
    lines = []
    bad = [r for r in rows if r[2] > BAD_SECOND_US]
    slow = [r for r in bad if host.get(round(r[0], 1), {}).get("dev_read_await_ms", -1) >= SLOW_DEVICE_MS]
    hic = [r for r in bad if host.get(round(r[0], 1), {}).get("hiccup_ms", -1) >= HICCUP_MS]
    awaits = [h["dev_read_await_ms"] for h in host.values() if h["dev_reads_per_s"] > 0]
    med = statistics.median(awaits) if awaits else float("nan")
    have_hiccup = any("hiccup_ms" in h for h in host.values())
    lines.append(f"{label}: {len(bad)} seconds over {BAD_SECOND_US / 1000:.0f} ms; with the device's read await >= "
                 f"{SLOW_DEVICE_MS:.0f} ms: {len(slow)}"
                 + (f"; with a hiccup >= {HICCUP_MS:.0f} ms (the process did not run): {len(hic)}" if have_hiccup else "")
                 + f" (median read await of the run {med:.2f} ms)")
    for t, ops, p99, _mx in sorted(rows, key=lambda r: -r[2])[:WORST_SHOWN]:
        h = host.get(round(t, 1))
        if not h:
            continue
        lines.append(f"  t={t:6.1f}s p99 {p99 / 1000:7.1f} ms | cpu busy {h['cpu_busy_pct']:5.1f}% iowait "
                     f"{h['iowait_pct']:5.1f}% steal {h['steal_pct']:4.1f}% | dev reads {h['dev_reads_per_s']:6.0f}/s "
                     f"await {h['dev_read_await_ms']:6.2f} ms, writes {h['dev_write_mb_per_s']:6.1f} MB/s await "
                     f"{h['dev_write_await_ms']:6.2f} ms, busy {h.get('dev_util_pct', -1):5.1f}% | dirty "
                     f"{h['dirty_mb']:.0f} MB | hiccup {h.get('hiccup_ms', -1):5.1f} ms")
    return lines


def main(argv):
    bench = "ycsba"
    if "--bench" in argv:
        i = argv.index("--bench")
        bench = argv[i + 1]
        del argv[i : i + 2]
    if len(argv) < 3:
        sys.exit(__doc__)
    out, sched, labels = argv[0], parse_schedule(argv[1]), argv[2:]
    low = min(p[0] for p in sched)
    results, series, hosts = [], {}, {}
    for label in labels:
        try:
            rows, summ = load(out, label, bench)
        except OSError as e:
            print(f"silk_report: {label}: {e}", file=sys.stderr)
            continue
        if not rows:
            print(f"silk_report: {label}: no {bench} rows", file=sys.stderr)
            continue
        series[label] = rows
        hosts[label] = load_host(out, label, bench)
        prev = 0.0
        valley, peak, on = [], [], 0
        offered_total = 0.0
        for t, ops, p99, _mx in rows:
            mid = (prev + t) / 2
            rate = offered_at(sched, mid)
            offered_total += rate * (t - prev)
            prev = t
            (valley if rate <= low else peak).append(p99)
            if rate > 0 and abs(ops - rate) <= 0.1 * rate:
                on += 1
        secs = float(summ.get("secs", rows[-1][0]) or rows[-1][0])
        res = {
            "label": label,
            "max_p99": max(r[2] for r in rows),
            "valley_p99": statistics.median(valley) if valley else float("nan"),
            "peak_p99": statistics.median(peak) if peak else float("nan"),
            "ops": float(summ.get("ops_per_sec", 0) or 0),
            "offered": offered_total / rows[-1][0] if rows[-1][0] > 0 else 0,
            "on_load": on,
            "seconds": len(rows),
            "stall_ms": float(summ.get("stall_ms", -1) or -1),
            "max_us": float(summ.get("max_us", 0) or 0),
            "secs": secs,
        }
        res["ratio"] = res["max_p99"] / res["valley_p99"] if res["valley_p99"] > 0 else float("nan")
        results.append(res)

    lines = [
        f"{bench}, open loop, schedule {argv[1]} (peak = rate above {low:.0f}/s); per-second p99 in us",
        f"{'config':<14} {'max p99':>11} {'valley p99':>11} {'peak p99':>10} {'max/valley':>10} "
        f"{'ops/s':>8} {'offered':>8} {'on-load s':>10} {'stall ms':>9} {'max us':>11}",
    ]
    for r in results:
        lines.append(
            f"{r['label']:<14} {r['max_p99']:>11.0f} {r['valley_p99']:>11.1f} {r['peak_p99']:>10.1f} "
            f"{r['ratio']:>10.1f} {r['ops']:>8.0f} {r['offered']:>8.0f} {r['on_load']:>5}/{r['seconds']:<4} "
            f"{r['stall_ms']:>9.0f} {r['max_us']:>11.0f}"
        )
    base = next((r for r in results if r["label"].startswith("tierkv-silk")), None)
    floor = next((r for r in results if r["label"].startswith("null")), None)
    devfloor = next((r for r in results if r["label"].startswith("devread")), None)
    if base:
        for r in results:
            if r is base or r is floor or r is devfloor:
                continue
            lines.append(
                f"max p99: {r['label']} / {base['label']} = {r['max_p99'] / base['max_p99']:.1f}x"
            )
        lines.append(
            f"{base['label']}: max p99 / own valley p99 = {base['ratio']:.1f}x (target <= 2x)"
        )
    if floor:
        # the harness alone (no engine work): what the machine and the load
        # generator add to every configuration's per-second p99
        lines.append(
            f"harness floor ({floor['label']} engine, no storage): valley p99 {floor['valley_p99']:.0f} us, "
            f"peak p99 {floor['peak_p99']:.0f} us, max p99 {floor['max_p99']:.0f} us"
        )
        if base and floor["max_p99"] > 0:
            lines.append(
                f"{base['label']} max p99 / harness max p99 = {base['max_p99'] / floor['max_p99']:.1f}x; "
                f"peak p99 / harness peak p99 = {base['peak_p99'] / floor['peak_p99']:.1f}x"
            )
        if floor["max_p99"] > NOISY_HARNESS_US:
            lines.append(
                f"NOISY HOST: the harness alone (no storage) had a {floor['max_p99'] / 1000:.1f} ms second; "
                f"this run's worst seconds measure the host as much as the engines"
            )
    if devfloor:
        # one 4 KiB device read per get and nothing else: what this device
        # (and the harness) put under any engine that reads from it
        lines.append(
            f"device floor ({devfloor['label']} engine, one 4 KiB read per get, no writes): valley p99 "
            f"{devfloor['valley_p99']:.0f} us, peak p99 {devfloor['peak_p99']:.0f} us, max p99 {devfloor['max_p99']:.0f} us"
        )
        if base and devfloor["max_p99"] > 0:
            lines.append(f"{base['label']} max p99 / device floor max p99 = {base['max_p99'] / devfloor['max_p99']:.1f}x")
    if any(hosts.values()):
        lines.append("")
        lines.append("worst seconds beside the host (host.csv):")
        for label, rows in series.items():
            if hosts.get(label):
                lines.extend(host_lines(label, rows, hosts[label]))
    text = "\n".join(lines)
    print(text)
    with open(os.path.join(out, "silk.txt"), "w") as f:
        f.write(text + "\n")

    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("silk_report: matplotlib missing; no plot", file=sys.stderr)
        return
    fig, (ax1, ax2) = plt.subplots(2, 1, figsize=(11, 7), sharex=True)
    tmax = max(rows[-1][0] for rows in series.values())
    # shade peaks
    t, k = 0.0, 0
    while t < tmax:
        rate, sec = sched[k % len(sched)]
        if rate > low:
            for ax in (ax1, ax2):
                ax.axvspan(t, min(t + sec, tmax), color="0.92", zorder=0)
        t += sec
        k += 1
    xs = [i * 0.5 for i in range(int(tmax * 2) + 1)]
    ax1.plot(xs, [offered_at(sched, x) for x in xs], color="black", linestyle=":", linewidth=1, label="offered")
    for label, rows in series.items():
        ts = [r[0] for r in rows]
        ax1.plot(ts, [r[1] for r in rows], label=label, linewidth=1.2)
        ax2.plot(ts, [max(r[2], 1) for r in rows], label=label, linewidth=1.2)
    ax1.set_ylabel("throughput (ops/s)")
    ax1.set_title(f"SILK-style {bench}: per-second throughput and p99 (peaks shaded)")
    ax1.legend(loc="best", fontsize=8)
    ax1.grid(alpha=0.3)
    ax2.set_yscale("log")
    ax2.set_ylabel("p99 latency (us, log)")
    ax2.set_xlabel("time (s)")
    ax2.grid(alpha=0.3, which="both")
    ax2.legend(loc="best", fontsize=8)
    fig.tight_layout()
    png = os.path.join(out, "silk.png")
    fig.savefig(png, dpi=110)
    print(f"plot: {png}")


if __name__ == "__main__":
    main(sys.argv[1:])
