#!/usr/bin/env bash
# Benchmark W4 (inside the VM): null_blk 4 KiB random-read IOPS with latency
# accounting off and on, and with the adaptive caps on, interleaved in one
# boot; prints medians and the ratios.
set -euo pipefail

usage() {
	cat <<'USAGE'
usage: lat-overhead.sh [ROUNDS [SECONDS]]
Runs inside the test VM (tools/testing/vm/run-vm.sh -- tools/testing/bench/lat-overhead.sh).
Runs fio 4 KiB random reads (libaio, iodepth 32) on a null_blk device in
three settings: "off" (queue/lat_stats 0), "on" (lat_stats 1) and "adapt"
(queue/adapt_lat_usec 1000000: the controller's hooks on every request; all
requests are small, so it never holds one), ROUNDS times each (default 20),
SECONDS each run (default 2), the order rotating. "adapt" is left out on a
kernel without the adaptive caps, "on" too on a kernel without the latency
accounting (for a kernel without the series: its "off" figure, from another
boot, is the only comparison). Prints every run, the median IOPS of each
setting and the median and quartiles of the per-round ratios to "off";
writes lat-overhead.json to $BLKADAPT_OUT when set.
USAGE
}
case "${1:-}" in -h|--help) usage; exit 0 ;; esac
rounds=${1:-20} secs=${2:-2}
[[ "$rounds" =~ ^[1-9][0-9]*$ && "$secs" =~ ^[1-9][0-9]*$ ]] || { usage >&2; exit 2; }
cfg=/sys/kernel/config/nullb/overhead
fio_json=$(dirname "$0")/../lib/fio_json.py
[ -d /sys/kernel/config/nullb ] || { echo "lat-overhead: null_blk configfs missing" >&2; exit 1; }

mkdir "$cfg"
trap 'echo 0 >"$cfg/power"; rmdir "$cfg"' EXIT
echo 1024 >"$cfg/size"
echo 0 >"$cfg/irqmode"		# complete inline: the block layer's own cost dominates
echo 1 >"$cfg/power"
dev=overhead		# the disk takes the configfs item's name
[ -e "/sys/block/$dev" ] || dev=nullb$(cat "$cfg/index")
sw=/sys/block/$dev/queue/lat_stats
echo none >"/sys/block/$dev/queue/scheduler"

run() {
	fio --name=o --filename="/dev/$dev" --direct=1 --ioengine=libaio --iodepth=32 --cpus_allowed=0 \
		--rw=randread --bs=4k --time_based --runtime="$secs" --output-format=json |
		python3 "$fio_json" - - iops | cut -d. -f1
}

ad=/sys/block/$dev/queue/adapt_lat_usec
sets=(off)
if [ -e "$sw" ]; then
	sets+=(on)
else
	echo "lat-overhead: kernel without lat_stats (no series?): \"off\" only"
fi
[ -e "$ad" ] && sets+=(adapt)
set_to() {
	case "$1" in
	off) [ ! -e "$ad" ] || echo 0 >"$ad"; [ ! -e "$sw" ] || echo 0 >"$sw" ;;
	on) [ ! -e "$ad" ] || echo 0 >"$ad"; echo 1 >"$sw" ;;
	adapt) echo 0 >"$sw"; echo 1000000 >"$ad" ;;
	esac
}

declare -A iops
for i in $(seq 1 "$rounds"); do
	# rotate which setting goes first, so that a drift favours none
	line="round $i:"
	for k in $(seq 0 $((${#sets[@]} - 1))); do
		s=${sets[$(((i + k) % ${#sets[@]}))]}
		set_to "$s"
		iops[$s]="${iops[$s]:-} $(run)"
		line+=" $s ${iops[$s]##* } IOPS"
	done
	echo "$line"
done
set_to off
args=()
for s in "${sets[@]}"; do args+=("$s=${iops[$s]}"); done
python3 - "${BLKADAPT_OUT:-}" "${args[@]}" <<'PY'
import json, statistics, sys
# argv: the output directory (or ""), then SETTING=IOPS... for each setting, "off" first
runs = {k: [int(x) for x in v.split()] for k, v in (a.split("=", 1) for a in sys.argv[2:])}
out = {"runs": runs, "median": {s: statistics.median(v) for s, v in runs.items()}}
print("median IOPS: " + ", ".join(f"{s} {m:.0f}" for s, m in out["median"].items())
      + f" ({len(runs['off'])} rounds each)")
for s in list(runs)[1:]:
    # Runs of one round are adjacent in time: their ratio cancels most host drift.
    r = sorted(b / a for a, b in zip(runs["off"], runs[s]))
    q = statistics.quantiles(r, n=4) if len(r) > 1 else [r[0]] * 3
    out[f"{s}_off_ratio"] = {"median": statistics.median(r), "quartiles": [q[0], q[2]]}
    print(f"{s}/off per round: median {statistics.median(r):.3f}, quartiles {q[0]:.3f} .. {q[2]:.3f}")
if sys.argv[1]:
    with open(sys.argv[1] + "/lat-overhead.json", "w") as f:
        json.dump(out, f, indent=1)
PY
