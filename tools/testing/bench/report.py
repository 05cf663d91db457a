#!/usr/bin/python3
"""Tables, JSON and a plot from the runs of tools/testing/bench/latbench.sh.

usage: report.py RESULTS_DIR

RESULTS_DIR holds bench/meta.json and bench/<workload>/<config>/r<N>.json
(fio JSON). Writes RESULTS_DIR/results.md (Markdown tables), results.json
(every run's figures and the medians), p99-vs-throughput.png (the
prober's p99 against the stream's throughput, one point per configuration
with the range over rounds, and the oracle frontier) and controller-steps.png
(the controller's size cap, depth cap and judged p99 over one W1 run per
target, from the block_adapt_step trace). One goal table per latency target:
the controller against the oracle point of most throughput that meets the
target, against the read peers at that target (Kyber, io.latency,
iocost) and against every static cap and peer at its default. Uses Debian's
python3-matplotlib for the plots.
"""
import glob
import json
import os
import re
import statistics
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
import fio_json  # noqa: E402


def figures(path):
    """The prober's clat p50/p99/p99.9 (ms), the stream's MB/s (read or write) and
    the disk's mean request size (KiB, ramp included) of one run."""
    jobs = fio_json.jobs(path)
    if "stream" in jobs:
        out = {"stream_mbs": fio_json.mbs(jobs["stream"])}
    else:
        # W5: the copy's figure is the disk's write throughput over the run
        (nbytes, ms) = map(int, open(path[:-len(".json")] + ".copy").read().split())
        out = {"stream_mbs": nbytes / ms / 1e3}
    if "prober" in jobs:
        p = jobs["prober"]
        out.update(p50_ms=fio_json.clat_ms(p, 50), p99_ms=fio_json.clat_ms(p, 99),
                   p999_ms=fio_json.clat_ms(p, 99.9), prober_ios=fio_json.ios(p))
    stat = path[:-len(".json")] + ".stat"
    if os.path.exists(stat):
        # the disk's stat file before and after: requests and sectors read
        # and written, so the mean size of the requests the disk saw
        (a, b) = [list(map(int, line.split())) for line in open(stat)][:2]
        ios = b[0] - a[0] + b[4] - a[4]
        if ios > 0:
            out["req_kib"] = (b[2] - a[2] + b[6] - a[6]) / 2 / ios
    return out


ORDER = ["static-128", "static-1280", "static-4096", "static-32767", "kyber", "bfq", "wbt"]
# the controller and the peers latbench.sh runs at each target: NAME-<ms>ms
AT_TARGET = ["adapt", "kyber", "wbt", "iolat", "iocost"]
TARGETED = re.compile(r"(%s)-(\d+)ms" % "|".join(AT_TARGET))


def order(cfg):
    """Configurations in latbench.sh's order, those at a target by target;
    oracle points by block size, then depth."""
    if cfg in ORDER:
        return (0, ORDER.index(cfg), 0, 0)
    m = TARGETED.fullmatch(cfg)
    if m:
        return (0, len(ORDER), int(m[2]), AT_TARGET.index(m[1]))
    if cfg.startswith("bs"):
        bs, qd = cfg[2:].split("-qd")
        unit = {"k": 1, "m": 1024}[bs[-1]]
        return (1, int(bs[:-1]) * unit, int(qd), 0)
    return (2, cfg, 0, 0)


def collect(bench):
    res = {}
    for wl in sorted(os.listdir(bench)):
        if not os.path.isdir(os.path.join(bench, wl)):
            continue
        for cfg in sorted(os.listdir(os.path.join(bench, wl)), key=order):
            runs = []
            for f in sorted(glob.glob(os.path.join(bench, wl, cfg, "r*.json"))):
                try:
                    runs.append(figures(f))
                except (ValueError, KeyError) as e:
                    print(f"report.py: skipping {f}: {e}", file=sys.stderr)
            if not runs:
                continue
            keys = [k for k in runs[0] if all(k in r for r in runs)]
            med = {k: statistics.median(r[k] for r in runs) for k in keys}
            rng = {k: [min(r[k] for r in runs), max(r[k] for r in runs)] for k in keys}
            res.setdefault(wl, {})[cfg] = {"runs": runs, "median": med, "range": rng}
    return res


def table(rows, lone):
    cols = [("p50_ms", "prober p50 ms", min), ("p99_ms", "prober p99 ms", min),
            ("p999_ms", "prober p99.9 ms", min), ("stream_mbs", "stream MB/s", max),
            ("req_kib", "mean request KiB", None)]
    cols = [c for c in cols if all(c[0] in r["median"] for r in rows.values())]
    static = {c: r for c, r in rows.items() if c.startswith("static-")}
    best = {k: pick(r["median"][k] for r in static.values())
            for k, _, pick in cols if pick} if static else {}
    head = "| configuration | runs | " + " | ".join(t for _, t, _ in cols) + " | stream / lone |"
    lines = [head, "|" + "---|" * (len(cols) + 3)]
    for cfg, r in rows.items():
        cells = []
        for k, _, _ in cols:
            m = r["median"][k]
            ratio = f" ({m / best[k]:.2f}x)" if best.get(k) else ""
            cells.append(f"{m:.1f}{ratio}")
        lo = lone.get(cfg) or lone.get("static-32767")
        frac = f"{r['median']['stream_mbs'] / lo:.0%}" if lo else "-"
        lines.append(f"| {cfg} | {len(r['runs'])} | " + " | ".join(cells) + f" | {frac} |")
    return "\n".join(lines)


def frontier(orc):
    """The oracle points no other point beats on both p99 and throughput."""
    front, best = [], float("inf")
    for x, y, c in sorted(orc, key=lambda o: (-o[0], o[1])):
        if y < best:
            front.append((x, y, c))
            best = y
    return sorted(front)


def goal(res, target):
    """The goal table for one latency target (ms), from W1: the controller at
    that target against the oracle point of most throughput whose p99 meets
    the target, the peers at the same target, and every static cap and peer
    at its default."""
    orc = [(r["median"]["stream_mbs"], r["median"]["p99_ms"], c)
           for c, r in res.get("oracle", {}).items()]
    w1 = res.get("w1", {})
    me = w1.get(f"adapt-{target}ms")
    if not me:
        return None
    meeting = [o for o in orc if o[1] <= target]
    best = max(meeting) if meeting else None
    lines = ["| configuration | prober p99 ms (range) | p99 <= target | stream MB/s | "
             "MB/s / best oracle point meeting the target |", "|---|---|---|---|---|"]
    at = [(c, r) for c, r in w1.items() if (m := TARGETED.fullmatch(c)) and int(m[2]) == target]
    rows = at + [(c, r) for c, r in w1.items() if not TARGETED.fullmatch(c)]
    for cfg, r in rows:
        m, g = r["median"], r["range"]
        ratio = f"{m['stream_mbs'] / best[0]:.2f}x" if best else "-"
        lines.append(f"| {cfg} | {m['p99_ms']:.1f} ({g['p99_ms'][0]:.1f}-{g['p99_ms'][1]:.1f}) | "
                     f"{'yes' if m['p99_ms'] <= target else 'no'} | {m['stream_mbs']:.1f} | {ratio} |")
    lines.append(f"| oracle: {best[2]} | {best[1]:.1f} | yes | {best[0]:.1f} | 1.00x |" if best else
                 ("| oracle | no point meets the target | | | |" if orc else "| oracle | not run (-q) | | | |"))
    return "\n".join(lines)


def trace_steps(path):
    """(seconds, window p99 us, size cap KiB, depth cap) of each step in a
    block_adapt_step trace, time from the first step."""
    pat = re.compile(r"\s(\d+\.\d+): block_adapt_step: .* lat=(\d+)us .* cap=(\d+)KiB depth=(\d+)")
    steps = [tuple(float(x) for x in m.groups()) for m in map(pat.search, open(path)) if m]
    return [(t - steps[0][0], lat, cap, depth) for t, lat, cap, depth in steps]


def plot_steps(bench, path):
    """Size cap, depth cap and window p99 over time, W1 round 1, per target."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    traces = sorted(glob.glob(os.path.join(bench, "w1", "adapt-*", "r1.trace")), key=lambda f: order(f.split(os.sep)[-2]))
    series = [(f.split(os.sep)[-2], trace_steps(f)) for f in traces]
    series = [(c, st) for c, st in series if st]
    if not series:
        return False
    fig, axs = plt.subplots(3, 1, figsize=(8, 7.5), sharex=True)
    for cfg, st in series:
        t = [x[0] for x in st]
        axs[0].step(t, [x[2] / 1024 for x in st], where="post", label=cfg)
        axs[1].step(t, [x[3] for x in st], where="post", label=cfg)
        axs[2].plot(t, [x[1] / 1e3 for x in st], ".", ms=3, label=cfg)
    axs[0].set_ylabel("size cap, MiB")
    axs[1].set_ylabel("depth cap")
    axs[2].set_ylabel("p99 the law judged, ms (log)")
    axs[2].set_yscale("log")
    axs[2].set_xlabel("seconds into the run (W1, round 1; block_adapt_step tracepoint)")
    for a in axs:
        a.grid(True, which="both", alpha=0.3)
    axs[0].legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    return True


def plot(res, path):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(8, 5.5))
    for cfg, r in res.get("w1", {}).items():
        m, g = r["median"], r["range"]
        ax.errorbar(m["stream_mbs"], m["p99_ms"],
                    xerr=[[m["stream_mbs"] - g["stream_mbs"][0]], [g["stream_mbs"][1] - m["stream_mbs"]]],
                    yerr=[[m["p99_ms"] - g["p99_ms"][0]], [g["p99_ms"][1] - m["p99_ms"]]],
                    fmt="o" if cfg.startswith("adapt") else "s", capsize=3, label=cfg)
    orc = sorted((r["median"]["stream_mbs"], r["median"]["p99_ms"], c)
                 for c, r in res.get("oracle", {}).items())
    if orc:
        ax.plot([o[0] for o in orc], [o[1] for o in orc], "k.", label="oracle (bs x iodepth)")
        front = frontier(orc)
        ax.plot([f[0] for f in front], [f[1] for f in front], "k--", lw=1, label="oracle frontier")
    ax.set_yscale("log")
    ax.set_xlabel("stream throughput, MB/s (median; bars: range over rounds)")
    ax.set_ylabel("4 KiB prober p99, ms (log)")
    ax.set_title("W1: 8 MiB read stream + 4 KiB prober at 20 IOPS")
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=7, ncol=2)
    fig.tight_layout()
    fig.savefig(path, dpi=110)


def main():
    if len(sys.argv) != 2 or sys.argv[1] in ("-h", "--help"):
        print(__doc__.strip(), file=sys.stderr if len(sys.argv) != 2 else sys.stdout)
        sys.exit(0 if len(sys.argv) == 2 else 2)
    top = sys.argv[1]
    bench = os.path.join(top, "bench")
    if not os.path.isfile(os.path.join(bench, "meta.json")):
        sys.exit(f"report.py: no {bench}/meta.json: not a latbench result directory")
    meta = json.load(open(os.path.join(bench, "meta.json")))
    res = collect(bench)
    lone = {c: r["median"]["stream_mbs"] for c, r in res.get("w3", {}).items()}
    md = [f"Kernel {meta['kernel']}, disk {meta['disk']} (queue depth {meta['queue_depth']}, "
          f"max_hw_sectors_kb {meta['max_hw_sectors_kb']}), {meta['rounds']} round(s) of "
          f"{meta['seconds']} s runs, {meta['date']}. Medians over rounds; ratios to the best "
          "static max_sectors_kb setting of each column; stream / lone: the stream's throughput "
          "over its throughput alone (W3) with the same configuration, or with static-32767.", ""]
    for t in meta.get("targets_ms", [20, 50]):
        g = goal(res, t)
        if g:
            md += [f"### Goal at {t} ms (W1): the prober's p99 at or under {t} ms, with as much "
                   "stream throughput as the best oracle point (the stream's block size and "
                   "depth fixed by hand) that meets it", "", g, ""]
    for wl, title in (("w1", "W1: 8 MiB read stream (iodepth 4, hugepage buffers) + 4 KiB prober at 20 IOPS"),
                      ("w1p", "W1p: W1 with ordinary (malloc) buffers"),
                      ("w1s", "W1s: W1 with the prober running when the stream starts (2 s in); "
                              "p99 over the whole run, no ramp excluded"),
                      ("w2", "W2: buffered 1 MiB write stream (writeback) + 4 KiB prober at 20 IOPS"),
                      ("w3", "W3: the stream alone"),
                      ("oracle", "Oracle sweep: W1 with the controller off, the stream's block size x iodepth"),
                      ("w5", "W5: ext4, cp of a 1.5 GiB file (stream MB/s: the disk's write throughput) "
                             "+ 4 KiB random buffered reads of another file at 20 IOPS")):
        if wl in res:
            md += [f"### {title}", "", table(res[wl], lone if wl != "w5" else {}), ""]
    open(os.path.join(top, "results.md"), "w").write("\n".join(md))
    json.dump({"meta": meta, "results": res}, open(os.path.join(top, "results.json"), "w"), indent=1)
    print("\n".join(md))
    try:
        plot(res, os.path.join(top, "p99-vs-throughput.png"))
        plot_steps(bench, os.path.join(top, "controller-steps.png"))
    except ImportError:
        print("report.py: no plots: python3-matplotlib is not installed", file=sys.stderr)


if __name__ == "__main__":
    main()
