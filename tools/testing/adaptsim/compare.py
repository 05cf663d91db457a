#!/usr/bin/env python3
"""The simulator's figures next to the QEMU benchmark's, point by point.

usage: compare.py SIM_TABLE_JSON BENCH_DIR

SIM_TABLE_JSON is what `adaptsim table --json` wrote; BENCH_DIR holds the
benchmark's committed results (Documentation/bench/<profile>/results.json).
For every profile, W1: each oracle point (bs x QD, the controller off), the
controller at each target and the 32 MiB cap (static-32767: the stream
uncapped, the simulator's bs8m-qd4). The benchmark ran each point once for 10 s after a 2 s ramp (about
200 prober reads); the simulator's runs of that length, ten seeds each,
give the median p99 and MB/s compared and the range of the p99, and its
long run (10,000 reads) the p99 without the noise of 200 reads. A point is
within the tolerance when the MB/s is within 20% and the p99 within a
factor of 1.3 of the QEMU figure. Prints Markdown; the count is a report,
not a pass/fail.
"""
import json
import os
import sys
from statistics import median

PROFILES = ["hdd", "hdd7200", "hdd5400", "sata-ssd", "nvme-ssd"]
MBS_TOL = 0.2
P99_TOL = 1.3
BENCH_SECONDS = 12      # adaptsim's BENCH_SECONDS


def point_name(bs, qd):
    kib = bs // 1024
    return f"bs{kib // 1024}m-qd{qd}" if kib >= 1024 else f"bs{kib}k-qd{qd}"


def sim_points(runs, profile, short):
    """{name: [(p99_ms, mbs), ...]} of the simulator's W1 runs of a profile,
    the benchmark-length runs (@short) or the long ones."""
    pts = {}
    for r in runs:
        if r["device"] != profile or r["workload"] != "W1" or \
           (r["seconds"] == BENCH_SECONDS) != short:
            continue
        if r["target_us"]:
            name = f"adapt-{r['target_us'] // 1000}ms"
        else:
            name = point_name(r["bs"], r["qd"])
        pts.setdefault(name, []).append((r["p99_ms"], r["stream_mbs"]))
    return pts


def main(argv):
    if len(argv) != 2 or argv[0] in ("-h", "--help"):
        print(__doc__.strip())
        return 0 if argv and argv[0] in ("-h", "--help") else 2
    try:
        with open(argv[0]) as f:
            runs = json.load(f)["runs"]
    except (OSError, ValueError, KeyError) as e:
        sys.exit(f"compare.py: {argv[0]}: not a simulator table ({e})")
    total = within = 0
    print("| profile | point | QEMU p99 ms / MB/s | simulator, 10 s runs: p99 ms median (range) / MB/s "
          "| simulator, long run: p99 ms | p99 sim/QEMU | MB/s sim/QEMU | within |")
    print("|---|---|---|---|---|---|---|---|")
    for prof in PROFILES:
        path = os.path.join(argv[1], prof, "results.json")
        if not os.path.exists(path):
            continue
        with open(path) as f:
            res = json.load(f)["results"]
        qemu = {c: r["median"] for c, r in res.get("oracle", {}).items()}
        qemu.update({c: r["median"] for c, r in res.get("w1", {}).items()
                     if c.startswith("adapt-") or c == "static-32767"})
        short, long_ = sim_points(runs, prof, True), sim_points(runs, prof, False)
        for name in sorted(qemu, key=lambda c: (not c.startswith("bs"), c)):
            # the controller off is the 8 MiB x 4 stream uncapped: that oracle point
            sim = "bs8m-qd4" if name == "static-32767" else name
            if sim not in short or sim not in long_:
                continue
            q = qemu[name]
            p99s = [p for p, _ in short[sim]]
            sp, sm = median(p99s), median([m for _, m in short[sim]])
            rp = sp / q["p99_ms"] if q["p99_ms"] else float("inf")
            rm = sm / q["stream_mbs"] if q["stream_mbs"] else float("inf")
            ok = abs(rm - 1) <= MBS_TOL and 1 / P99_TOL <= rp <= P99_TOL
            total += 1
            within += ok
            print(f"| {prof} | {name} | {q['p99_ms']:.1f} / {q['stream_mbs']:.1f} | "
                  f"{sp:.1f} ({min(p99s):.1f}-{max(p99s):.1f}) / {sm:.1f} | "
                  f"{long_[sim][0][0]:.1f} | {rp:.2f} | {rm:.2f} | {'yes' if ok else 'no'} |")
    print(f"\n{within} of {total} points within the tolerance (MB/s within "
          f"{MBS_TOL:.0%}, p99 within a factor of {P99_TOL}).")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
