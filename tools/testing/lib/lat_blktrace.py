#!/usr/bin/python3
"""Cross-check the per-queue latency accounting against blktrace.

usage: lat_blktrace.py NAME EVENTS TABLE BTT LOG MARK [NAME EVENTS TABLE BTT LOG MARK]...

For each device: NAME names it in the result lines. EVENTS is blkparse's
output with the format "%a %d %S %n %T.%9t" (action, RWBS, sector, 512-byte
blocks, seconds.nanoseconds); the harness read sector MARK (the disk's
last block, which the load never reads) before it reset the table and
again after it read it, and only the events between those two reads count
(the reads' own events do not). TABLE is the debugfs table (/sys/kernel/
debug/block/DEV/latency) read after the load; BTT btt's report of the same
trace; LOG what blktrace printed when it stopped (its "Total: ...
(dropped N)").

Every read request is followed through blktrace's Q (its first bio queued),
G (request allocated), D (issued to the driver) and C (completed) events,
matched by sector, and its class taken from its size at D: "<=64K" or
">64K". The table times a request from its allocation, which comes after Q
and before G (the tag wait lies between it and G), so per request its queue
time lies between G2D and Q2D and its total time between G2C and Q2C; the
same order holds for every percentile. The trace must hold both marks
(else blktrace was not yet running when the load began). For each class:
  - the table's "total" count equals the number of completed reads traced,
    unless blktrace dropped events (its relay buffers overflowed: a reader
    starved under TCG); then that check is skipped, and says so, because a
    lost event loses its request;
  - the table's p50 and p99 of the device time (D to C) are within the
    histogram's error bound of blktrace's: 12.5% plus SLACK_US; those of
    the queue and total times lie between the G-based and the Q-based
    percentiles, widened by the same bound.
The slack is what the two do not time alike: the table's device and total
times end when the request ends, after blk_update_request() has completed
its bios (blktrace's C comes before that), and the plug's cached clock may
be older than Q. Under QEMU's TCG that adds tens to a few hundred
microseconds (the means of the device time differ by 27 to 175 us), and it
adds to the bucket's own error: one total p50 of 256 KiB reads on a SATA
disk read 2883 us in the table against 2337 us from Q (a bucket from 2621
to 3145 us).
Over all reads, the table's mean device time (count-weighted over the
classes; the table keeps exact sums) is within MEAN_TOL plus SLACK_US of the
mean of blktrace's D to C.
btt's report adds, as diagnostics, its Q2G average (a bio's submission until
its request is allocated: mostly tag waits), its I2D and its D2C averages.
btt's D2C is per bio (a merged bio counts again, a split one is lost), not
per request, so it is only printed. Prints KTAP; figures go to diagnostic
lines. Exit status 0 when every check passed.
"""
import collections
import math
import re
import sys

SLACK_US = 500
BOUND = 0.125
MEAN_TOL = 0.05
CLASSES = ("<=64K", ">64K")
START, END = "lat_blktrace start", "lat_blktrace end"
TIMES = ("queue", "device", "all")


def requests(path, mark, lost, marks):
    """(class, (G2D, Q2D), D2C, (G2C, Q2C)) of every traced read request, in us.

    Only the events between the two reads of sector @mark count (the
    harness reads it just before the table's reset and just after the table
    is read): the first read's Q adds START to @marks, the second's END.
    A request's Q is that of the bio that opened it (the one whose G follows at the same sector; a bio
    merged into a request, M or F, opens none; a front merge F moves the
    request's start to its sector, a requeue R returns it to before its D).
    The table times a request from its allocation, which lies between Q and
    G: Q2D and G2D bound its queue time, Q2C and G2C its total time. What
    could not be followed is counted in @lost: completions without an
    issue, or requests issued without a traced Q and G.
    """
    pending_q, pending_g, pending_d, done = {}, {}, {}, []
    for line in open(path):
        f = line.split()
        if len(f) != 5 or "R" not in f[1] or "W" in f[1] or "N" in f[1]:
            continue
        if int(f[2]) == mark:
            if f[0] == "Q":
                marks.add(END if START in marks else START)
            continue
        if START not in marks or END in marks:
            continue
        act, sector, blocks, t = f[0], int(f[2]), int(f[3]), float(f[4]) * 1e6
        if act == "Q":
            pending_q.setdefault(sector, []).append(t)
        elif act in ("M", "F", "G"):
            q = pending_q.get(sector)
            start = q.pop(0) if q else None
            if act == "G":
                pending_g.setdefault(sector, []).append((start, t))
            elif act == "F" and pending_g.get(sector + blocks):
                pending_g.setdefault(sector, []).append(pending_g[sector + blocks].pop(0))
        elif act == "R" and pending_d.get(sector):
            pending_g.setdefault(sector, []).insert(0, pending_d[sector].pop(0)[0])
        elif act == "D":
            g = pending_g.get(sector)
            pending_d.setdefault(sector, []).append((g.pop(0) if g else (None, None), t, blocks))
        elif act == "C":
            if not pending_d.get(sector):
                lost["C without D"] += 1
                continue
            (q, g), d, n = pending_d[sector].pop(0)
            if q is None or g is None:
                lost["D without Q or G"] += 1
                continue
            done.append((CLASSES[n * 512 > 64 * 1024], (d - g, d - q), t - d, (t - g, t - q)))
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


def dropped(path):
    """The events blktrace reported lost, from its closing "Total:" line."""
    m = re.search(r"^\s*Total:.*\(dropped (\d+)\)", open(path).read(), re.M)
    if not m:
        sys.exit(f"{path}: no \"Total: ... (dropped N)\" line from blktrace")
    return int(m.group(1))


def cross_check(name, events, tab, btt, log, mark, check):
    lost, marks, drops = collections.Counter(), set(), dropped(log)
    reqs, rows = requests(events, int(mark), lost, marks), table(tab)
    print(f"# {name}: blktrace dropped {drops} events; not followed: "
          + (", ".join(f"{v} {k}" for k, v in lost.items()) or "none"))
    check(marks == {START, END}, f"{name}: the trace holds the harness's start and end marks")
    for cls in CLASSES:
        mine = [r for r in reqs if r[0] == cls]
        row = rows.get((cls, "device"), {"count": 0})
        print(f"# {name}: {cls} reads: {len(mine)} traced (Q/G/D/C), table counts {row['count']}")
        check(len(mine) == row["count"], f"{name}: {cls} reads: the table counts every traced completion",
              f"blktrace dropped {drops} events" if drops else None)
        if not mine:
            continue
        for i, t in enumerate(TIMES, 1):
            for p in (50, 99):
                got = rows[(cls, t)][f"p{p}"]
                if t == "device":
                    lo = hi = pct([r[i] for r in mine], p)
                    ref = f"blktrace {lo:.0f} us"
                else:
                    lo, hi = (pct([r[i][k] for r in mine], p) for k in (0, 1))
                    ref = f"blktrace {lo:.0f} us (from G) .. {hi:.0f} us (from Q)"
                print(f"# {name}: {cls} {t} p{p}: table {got} us, {ref}")
                check((1 - BOUND) * lo - SLACK_US <= got <= (1 + BOUND) * hi + SLACK_US,
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
    if not args or len(args) % 6:
        sys.exit("usage: lat_blktrace.py NAME EVENTS TABLE BTT LOG MARK"
                 " [NAME EVENTS TABLE BTT LOG MARK]...  (see --help)")
    print("TAP version 13")
    checks = []

    def check(ok, what, skip=None):
        """Print one result; a check with a @skip reason is reported, not counted."""
        checks.append(ok or bool(skip))
        if skip:
            print(f"ok {len(checks)} {what} # SKIP {skip}", flush=True)
        else:
            print(f"{'ok' if ok else 'not ok'} {len(checks)} {what}", flush=True)

    for i in range(0, len(args), 6):
        cross_check(*args[i:i + 6], check)
    print(f"1..{len(checks)}")
    return 0 if all(checks) else 1


if __name__ == "__main__":
    sys.exit(main())
