#!/usr/bin/env bash
# Demo job run inside the VM (see scripts/demo.sh): a SATA disk's transfer
# limits, then small reads next to a stream of large ones, with the per-queue
# latency accounting on.
set -euo pipefail

usage() {
	cat <<'USAGE'
usage: demo-job.sh [SECONDS [TARGET_US]]
Runs inside the test VM. On the first scratch SATA disk (serial blkadapt*):
prints its transfer limits, raises max_sectors_kb to max_hw_sectors_kb, turns
on latency accounting (queue/lat_stats) and the blk_lat:block_lat_window
tracepoint, then runs for SECONDS (default 10) a 32 MiB sequential read stream
(iodepth 2) next to a 4 KiB random reader (iodepth 1). Prints the reader's
latency percentiles, the stream's bandwidth, the debugfs latency table and
the tracepoint lines. Then runs the same load again with the adaptive caps on
(queue/adapt_lat_usec=TARGET_US, default 50000; 0 skips this run) and prints
the reader's latency, the caps and the blk_adapt:block_adapt_step trace, and
last both runs side by side. Reads only: the disk's data is not changed.
USAGE
}
case "${1:-}" in -h|--help) usage; exit 0 ;; esac
secs=${1:-10} target=${2:-50000}
[[ "$secs" =~ ^[1-9][0-9]*$ ]] || { usage >&2; exit 2; }
[[ "$target" =~ ^[0-9]+$ ]] || { usage >&2; exit 2; }
lib=$(dirname "$0")/../lib

# mixed NAME: the stream and the reader for $secs s into $TMPDIR/NAME.json;
# prints fio's view of both.
mixed() {
	fio --output-format=json --direct=1 --time_based --runtime="$secs" --filename="/dev/$disk" \
		--name=stream --rw=read --bs=32m --ioengine=libaio --iodepth=2 --size=2g \
		--iomem=mmaphuge:"/dev/hugepages/demo.$$" \
		--name=small --rw=randread --bs=4k --ioengine=psync --offset=2g --size=1g \
		>"$TMPDIR/$1.json"
	rm -f "/dev/hugepages/demo.$$"
	side_by_side "$1" "$TMPDIR/$1.json" | sed 's/^/  /'
}

# side_by_side TITLE FILE [TITLE FILE]...: one column per fio run.
side_by_side() {
	python3 - "$lib" "$@" <<-'PY'
	import sys
	sys.path.insert(0, sys.argv[1])
	import fio_json
	runs = [(t, fio_json.jobs(f)) for t, f in zip(sys.argv[2::2], sys.argv[3::2])]
	rows = [("4 KiB reads", lambda j: f"{fio_json.ios(j['small'])}"),
	        ("reader p50 (us)", lambda j: f"{fio_json.clat_ms(j['small'], 50) * 1e3:.0f}"),
	        ("reader p99 (us)", lambda j: f"{fio_json.clat_ms(j['small'], 99) * 1e3:.0f}"),
	        ("reader max (us)", lambda j: f"{j['small']['read']['clat_ns']['max'] / 1e3:.0f}"),
	        ("stream (MiB/s)", lambda j: f"{fio_json.mbs(j['stream']) / 1.048576:.1f}")]
	print(f"{'':16}" + "".join(f"{t:>24}" for t, _ in runs))
	for name, get in rows:
	    print(f"{name:16}" + "".join(f"{get(j):>24}" for _, j in runs))
	PY
}

demo() {
	disk=""
	for d in /sys/block/sd*; do
		grep -q blkadapt "$d/device/vpd_pg80" 2>/dev/null && { disk=${d##*/}; break; }
	done
	[ -n "$disk" ] || { echo "demo: no scratch SATA disk (serial blkadapt*)" >&2; exit 1; }
	q=/sys/block/$disk/queue
	[ -e "$q/lat_stats" ] || { echo "demo: kernel without queue/lat_stats" >&2; exit 1; }

	echo "== $disk: transfer limits"
	for f in max_hw_sectors_kb max_sectors_kb max_segment_size max_segments nr_requests scheduler; do
		printf '  %-18s %s\n' "$f" "$(cat "$q/$f")"
	done
	printf '  %-18s %s\n' queue_depth "$(cat "/sys/block/$disk/device/queue_depth")"
	if command -v sg_vpd >/dev/null; then
		sg_vpd -p bl "/dev/$disk" | grep -i 'maximum transfer length' | sed 's/^ */  VPD B0h: /'
	fi

	cat "$q/max_hw_sectors_kb" >"$q/max_sectors_kb"
	# 32 MiB requests need buffers of few, large segments: 2 MiB huge pages
	huge=$(cat /proc/sys/vm/nr_hugepages)
	echo $((huge + 40)) >/proc/sys/vm/nr_hugepages
	echo 1 >"$q/lat_stats"
	tr=/sys/kernel/tracing
	echo 1 >"$tr/events/blk_lat/block_lat_window/enable"
	echo >"$tr/trace"

	echo "== $secs s: 32 MiB reads (iodepth 2) next to 4 KiB random reads (iodepth 1)"
	mixed off
	echo "== debugfs block/$disk/latency"
	cat "/sys/kernel/debug/block/$disk/latency"
	echo "== tracepoint blk_lat:block_lat_window"
	grep block_lat_window "$tr/trace" | sed 's/^ *//'
	echo 0 >"$tr/events/blk_lat/block_lat_window/enable"
	echo 0 >"$q/lat_stats"
	if [ "$target" != 0 ]; then
		[ -e "$q/adapt_lat_usec" ] || { echo "demo: kernel without adapt_lat_usec" >&2; exit 1; }
		echo 1 >"$tr/events/blk_adapt/block_adapt_step/enable"
		echo >"$tr/trace"
		echo "$target" >"$q/adapt_lat_usec"
		echo "== the same with adapt_lat_usec=$target"
		mixed "adapt_lat_usec=$target"
		echo "  caps now: adapt_max_sectors_kb $(cat "$q/adapt_max_sectors_kb")," \
			"adapt_depth $(cat "$q/adapt_depth")"
		echo "== tracepoint blk_adapt:block_adapt_step"
		grep block_adapt_step "$tr/trace" | sed 's/^ *//'
		echo "== debugfs block/$disk/rqos/adapt/state"
		sed 's/^/  /' "/sys/kernel/debug/block/$disk/rqos/adapt/state"
		echo 0 >"$tr/events/blk_adapt/block_adapt_step/enable"
		echo 0 >"$q/adapt_lat_usec"
		echo "== side by side: the controller off and on, same disk, same boot"
		side_by_side off "$TMPDIR/off.json" "adapt_lat_usec=$target" \
			"$TMPDIR/adapt_lat_usec=$target.json" | sed 's/^/  /'
	fi
	echo "$huge" >/proc/sys/vm/nr_hugepages
}

if [ -n "${BLKADAPT_OUT:-}" ]; then
	demo 2>&1 | tee "$BLKADAPT_OUT/demo.txt"
else
	demo
fi
