#!/usr/bin/env python3
"""The simulator's figures next to the QEMU benchmark's, point by point.

usage: compare.py SIM_TABLE_JSON BENCH_DIR

SIM_TABLE_JSON is what `adaptsim table --json` wrote; BENCH_DIR holds the
benchmark's committed results (Documentation/bench/<profile>/results.json).
For every profile, W1: each oracle point (bs x QD, the controller off), the
controller at each target and the 32 MiB cap (static-32767, the simulator's
"off"), the prober's p99 and the stream's MB/s from both, their ratios, and
whether the point is within the simulator's tolerance (MB/s within 20%, p99
within a factor of 1.3). Prints Markdown; the tolerance count is a report,
not a pass/fail.
"""
import json
import os
import sys

PROFILES = ["hdd", "hdd7200", "hdd5400", "sata-ssd", "nvme-ssd"]
MBS_TOL = 0.2
P99_TOL = 1.3


def point_name(bs, qd):
    kib = bs // 1024
    return f"bs{kib // 1024}m-qd{qd}" if kib >= 1024 else f"bs{kib}k-qd{qd}"


def sim_points(runs, profile):
    """{name: (p99_ms, mbs)} of the simulator's W1 runs of a profile."""
    pts = {}
    for r in runs:
        if r["device"] != profile or r["workload"] != "W1":
            continue
        if r["target_us"]:
            name = f"adapt-{r['target_us'] // 1000}ms"
        elif r["bs"] == 8 << 20 and r["qd"] == 4 and "bs8m-qd4" in pts:
            name = "static-32767"
        else:
            name = point_name(r["bs"], r["qd"])
        pts[name] = (r["p99_ms"], r["stream_mbs"])
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
    print("| profile | point | QEMU p99 ms / MB/s | simulator p99 ms / MB/s | p99 sim/QEMU | MB/s sim/QEMU | within |")
    print("|---|---|---|---|---|---|---|")
    for prof in PROFILES:
        path = os.path.join(argv[1], prof, "results.json")
        if not os.path.exists(path):
            continue
        with open(path) as f:
            res = json.load(f)["results"]
        qemu = {c: r["median"] for c, r in res.get("oracle", {}).items()}
        qemu.update({c: r["median"] for c, r in res.get("w1", {}).items()
                     if c.startswith("adapt-") or c == "static-32767"})
        sim = sim_points(runs, prof)
        for name in sorted(qemu, key=lambda c: (not c.startswith("bs"), c)):
            if name not in sim:
                continue
            q, (sp, sm) = qemu[name], sim[name]
            rp = sp / q["p99_ms"] if q["p99_ms"] else float("inf")
            rm = sm / q["stream_mbs"] if q["stream_mbs"] else float("inf")
            ok = abs(rm - 1) <= MBS_TOL and 1 / P99_TOL <= rp <= P99_TOL
            total += 1
            within += ok
            print(f"| {prof} | {name} | {q['p99_ms']:.1f} / {q['stream_mbs']:.1f} | "
                  f"{sp:.1f} / {sm:.1f} | {rp:.2f} | {rm:.2f} | {'yes' if ok else 'no'} |")
    print(f"\n{within} of {total} points within the tolerance (MB/s within "
          f"{MBS_TOL:.0%}, p99 within a factor of {P99_TOL}).")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
