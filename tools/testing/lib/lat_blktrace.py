#!/usr/bin/python3
"""Cross-check the per-queue latency accounting against blktrace.

usage: lat_blktrace.py NAME EVENTS TABLE BTT [NAME EVENTS TABLE BTT]...

For each device: NAME names it in the result lines. EVENTS is blkparse's output with
the format "%a %d %S %n %T.%9t" (action, RWBS, sector, 512-byte blocks,
seconds.nanoseconds); TABLE the debugfs table (/sys/kernel/debug/block/DEV/
latency) read after the load; BTT btt's report of the same trace.

Every read request is followed through blktrace's G (request allocated), D
(issued to the driver) and C (completed) events, matched by sector, and its
class taken from its size at D: "<=64K" or ">64K". For each class:
  - the table's "total" count equals the number of completed reads traced;
  - the table's p50 and p99 of the queue (G to D), device (D to C) and all
    (G to C) times are within the histogram's error bound of blktrace's:
    12.5% of the value plus SLACK_US. The slack is what the two do not time
    alike: the table's device and total times end when the request ends,
    after blk_update_request() has completed its bios (blktrace's C comes
    before that), and its queue time may start at the plug's cached time,
    older than G. Under QEMU's TCG that adds tens to a few hundred
    microseconds (the means differ by 30 to 90 us; one p50 of 256 KiB reads
    on a SATA disk by 229 us);
and over all reads, the mean device time the table gives (count-weighted over
the classes; the table keeps exact sums) is within MEAN_TOL plus SLACK_US of
the mean of blktrace's D to C: the table's device time ends when the request
ends, after blk_update_request() has completed its bios, while blktrace's C
comes before that. btt's report adds, as a diagnostic, its Q2G average: the
time from a bio's submission to its request's allocation (rq_qos throttling,
tag waits), which the table's queue time does not include. btt's D2C is per
bio (a merged bio counts again, a split one is lost), not per request, so it
is only printed. Prints KTAP; figures go to diagnostic lines. Exit status 0
when every check passed.
"""
import math
import re
import sys

SLACK_US = 250
BOUND = 0.125
MEAN_TOL = 0.05
CLASSES = ("<=64K", ">64K")
TIMES = ("queue", "device", "all")


def requests(path):
    """(class, queue_us, device_us, all_us) of every traced read request."""
    pending_g, pending_d, done = {}, {}, []
    for line in open(path):
        f = line.split()
        if len(f) != 5 or "R" not in f[1] or "W" in f[1] or "N" in f[1]:
            continue
        act, sector, blocks, t = f[0], int(f[2]), int(f[3]), float(f[4]) * 1e6
        if act == "G":
            pending_g.setdefault(sector, []).append(t)
        elif act == "D":
            g = pending_g.get(sector)
            pending_d.setdefault(sector, []).append((g.pop(0) if g else None, t, blocks))
        elif act == "C" and pending_d.get(sector):
            g, d, n = pending_d[sector].pop(0)
            cls = CLASSES[n * 512 > 64 * 1024]
            done.append((cls, None if g is None else d - g, t - d, None if g is None else t - g))
    return done


def pct(values, p):
    """Nearest-rank percentile, as the histogram ranks its buckets."""
    v = sorted(values)
    return v[max(0, math.ceil(p / 100 * len(v)) - 1)]


def table(path):
    """(class, time) -> {count, mean, p50, p99} of the table's read totals."""
    rows = {}
    for line in open(path):
        f = line.split()
        if len(f) == 11 and f[0] == "read" and f[1] in CLASSES and f[2] in TIMES and f[3] == "total":
            count, mean, p50, _, p99 = (int(x) for x in f[4:9])
            rows[(f[1], f[2])] = {"count": count, "mean": mean, "p50": p50, "p99": p99}
    return rows


def btt_avgs(path):
    """btt's all-devices averages: name (Q2G, D2C, ...) -> (microseconds, N)."""
    avgs = {}
    for line in open(path):
        m = re.match(r"(\w+)\s+[\d.]+\s+([\d.]+)\s+[\d.]+\s+(\d+)\s*$", line)
        if m and m.group(1) not in avgs:
            avgs[m.group(1)] = (float(m.group(2)) * 1e6, int(m.group(3)))
    return avgs


def cross_check(name, events, tab, btt, check):
    reqs, rows = requests(events), table(tab)
    for cls in CLASSES:
        mine = [r for r in reqs if r[0] == cls]
        row = rows.get((cls, "device"), {"count": 0})
        print(f"# {name}: {cls} reads: {len(mine)} traced (G/D/C), table counts {row['count']}")
        check(len(mine) == row["count"], f"{name}: {cls} reads: the table counts every traced completion")
        if not mine:
            continue
        for i, t in enumerate(TIMES, 1):
            vals = [r[i] for r in mine if r[i] is not None]
            for p in (50, 99):
                true, got = pct(vals, p), rows[(cls, t)][f"p{p}"]
                print(f"# {name}: {cls} {t} p{p}: table {got} us, blktrace {true:.0f} us"
                      f" ({len(vals)} requests)")
                check(abs(got - true) <= BOUND * true + SLACK_US,
                      f"{name}: {cls} reads: {t} p{p} within the histogram's bound of blktrace's")
    dev = [rows[(c, "device")] for c in CLASSES if (c, "device") in rows]
    count = sum(r["count"] for r in dev)
    mean = sum(r["mean"] * r["count"] for r in dev) / max(count, 1)
    exact = sum(r[2] for r in reqs) / max(len(reqs), 1)
    print(f"# {name}: mean device time: table {mean:.0f} us over {count} reads,"
          f" blktrace D to C {exact:.0f} us over {len(reqs)}")
    check(bool(reqs) and abs(mean - exact) <= MEAN_TOL * exact + SLACK_US,
          f"{name}: mean device time within {MEAN_TOL:.0%} of blktrace's")
    avgs = btt_avgs(btt)
    print(f"# {name}: btt: " + ", ".join(f"{k} {v[0]:.0f} us avg over {v[1]}"
                                        for k, v in avgs.items() if k in ("Q2G", "I2D", "D2C", "Q2C")))


def main():
    args = sys.argv[1:]
    if args and args[0] in ("-h", "--help"):
        print(__doc__.strip())
        return 0
    if not args or len(args) % 4:
        sys.exit("usage: lat_blktrace.py NAME EVENTS TABLE BTT [NAME EVENTS TABLE BTT]...  (see --help)")
    print("TAP version 13")
    checks = []

    def check(ok, what):
        checks.append(ok)
        print(f"{'ok' if ok else 'not ok'} {len(checks)} {what}", flush=True)

    for i in range(0, len(args), 4):
        cross_check(*args[i:i + 4], check)
    print(f"1..{len(checks)}")
    return 0 if all(checks) else 1


if __name__ == "__main__":
    sys.exit(main())
