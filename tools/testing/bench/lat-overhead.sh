#!/usr/bin/env bash
# Benchmark (inside the VM): null_blk 4 KiB random-read IOPS with latency
# accounting off and on, interleaved in one boot; prints medians and the ratio.
set -euo pipefail

usage() {
	cat <<'USAGE'
usage: lat-overhead.sh [ROUNDS [SECONDS]]
Runs inside the test VM (tools/testing/vm/run-vm.sh -- tools/testing/bench/lat-overhead.sh).
Alternates fio 4 KiB random reads (libaio, iodepth 32) on a null_blk device
with /sys/block/<dev>/queue/lat_stats at 0 and 1, ROUNDS times each (default 5),
SECONDS each run (default 5). Prints every run, the median IOPS of each
setting and their ratio; writes lat-overhead.json to $BLKADAPT_OUT when set.
USAGE
}
case "${1:-}" in -h|--help) usage; exit 0 ;; esac
rounds=${1:-5} secs=${2:-5}
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
	fio --name=o --filename="/dev/$dev" --direct=1 --ioengine=libaio --iodepth=32 \
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
mo, mn = statistics.median(off), statistics.median(on)
print(f"median IOPS: off {mo:.0f}, on {mn:.0f}, on/off {mn / mo:.3f} ({len(off)} rounds each)")
if sys.argv[3]:
    with open(sys.argv[3] + "/lat-overhead.json", "w") as f:
        json.dump({"off": off, "on": on, "median_off": mo, "median_on": mn,
                   "ratio": mn / mo}, f, indent=1)
PY
