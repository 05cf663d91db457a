#!/usr/bin/env bash
# Benchmark (inside the VM): null_blk 4 KiB random-read IOPS with latency
# accounting off and on, interleaved in one boot; prints medians and the ratio.
set -euo pipefail

usage() {
	cat <<'USAGE'
usage: lat-overhead.sh [ROUNDS [SECONDS]]
Runs inside the test VM (tools/testing/vm/run-vm.sh -- tools/testing/bench/lat-overhead.sh).
Alternates fio 4 KiB random reads (libaio, iodepth 32) on a null_blk device
with /sys/block/<dev>/queue/lat_stats at 0 and 1, ROUNDS times each (default 20),
SECONDS each run (default 2), the order alternating. Prints every run, the
median IOPS of each setting and the median and quartiles of the per-round
on/off ratio; writes lat-overhead.json to $BLKADAPT_OUT when set.
USAGE
}
case "${1:-}" in -h|--help) usage; exit 0 ;; esac
rounds=${1:-20} secs=${2:-2}
[[ "$rounds" =~ ^[1-9][0-9]*$ && "$secs" =~ ^[1-9][0-9]*$ ]] || { usage >&2; exit 2; }
cfg=/sys/kernel/config/nullb/overhead
[ -d /sys/kernel/config/nullb ] || { echo "lat-overhead: null_blk configfs missing" >&2; exit 1; }

mkdir "$cfg"
trap 'echo 0 >"$cfg/power"; rmdir "$cfg"' EXIT
echo 1024 >"$cfg/size"
echo 0 >"$cfg/irqmode"		# complete inline: the block layer's own cost dominates
echo 1 >"$cfg/power"
dev=overhead		# the disk takes the configfs item's name
[ -e "/sys/block/$dev" ] || dev=nullb$(cat "$cfg/index")
sw=/sys/block/$dev/queue/lat_stats
[ -e "$sw" ] || { echo "lat-overhead: kernel without lat_stats" >&2; exit 1; }
echo none >"/sys/block/$dev/queue/scheduler"

run() {
	fio --name=o --filename="/dev/$dev" --direct=1 --ioengine=libaio --iodepth=32 --cpus_allowed=0 \
		--rw=randread --bs=4k --time_based --runtime="$secs" --output-format=json |
		python3 -c 'import json,sys; print(int(json.load(sys.stdin)["jobs"][0]["read"]["iops"]))'
}

declare -a off on
for i in $(seq 1 "$rounds"); do
	# alternate which setting goes first, so that a drift favours neither
	if ((i % 2)); then
		echo 0 >"$sw"; off+=("$(run)")
		echo 1 >"$sw"; on+=("$(run)")
	else
		echo 1 >"$sw"; on+=("$(run)")
		echo 0 >"$sw"; off+=("$(run)")
	fi
	echo "round $i: off ${off[-1]} IOPS, on ${on[-1]} IOPS"
done
echo 0 >"$sw"
python3 - "${off[*]}" "${on[*]}" "${BLKADAPT_OUT:-}" <<'PY'
import json, statistics, sys
off = [int(x) for x in sys.argv[1].split()]
on = [int(x) for x in sys.argv[2].split()]
# Runs of one round are adjacent in time: their ratio cancels most host drift.
ratios = sorted(b / a for a, b in zip(off, on))
mo, mn, mr = statistics.median(off), statistics.median(on), statistics.median(ratios)
q = statistics.quantiles(ratios, n=4) if len(ratios) > 1 else [mr, mr, mr]
print(f"median IOPS: off {mo:.0f}, on {mn:.0f} ({len(off)} rounds each)")
print(f"on/off per round: median {mr:.3f}, quartiles {q[0]:.3f} .. {q[2]:.3f}")
if sys.argv[3]:
    with open(sys.argv[3] + "/lat-overhead.json", "w") as f:
        json.dump({"off": off, "on": on, "median_off": mo, "median_on": mn,
                   "ratio_median": mr, "ratio_quartiles": [q[0], q[2]]}, f, indent=1)
PY
