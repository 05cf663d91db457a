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
the tracepoint lines. With TARGET_US, runs the same load again with the
adaptive caps on (queue/adapt_lat_usec) and prints the reader's latency, the
caps and the blk_adapt:block_adapt_step trace. Reads only: the disk's data is
not changed.
USAGE
}
case "${1:-}" in -h|--help) usage; exit 0 ;; esac
secs=${1:-10} target=${2:-}
[[ "$secs" =~ ^[1-9][0-9]*$ ]] || { usage >&2; exit 2; }
[[ -z "$target" || "$target" =~ ^[1-9][0-9]*$ ]] || { usage >&2; exit 2; }

# mixed: the stream and the reader for $secs s; prints fio's view of both.
mixed() {
	fio --output-format=json --direct=1 --time_based --runtime="$secs" --filename="/dev/$disk" \
		--name=stream --rw=read --bs=32m --ioengine=libaio --iodepth=2 --size=2g \
		--iomem=mmaphuge:"/dev/hugepages/demo.$$" \
		--name=small --rw=randread --bs=4k --ioengine=psync --offset=2g --size=1g \
		>"$TMPDIR/demo.json"
	rm -f "/dev/hugepages/demo.$$"
	python3 - "$TMPDIR/demo.json" "$(dirname "$0")/../lib" <<-'PY'
	import sys
	sys.path.insert(0, sys.argv[2])
	import fio_json
	jobs = fio_json.jobs(sys.argv[1])
	s, r = jobs["small"], jobs["stream"]
	print(f"  small: {fio_json.ios(s)} reads, p50 {fio_json.clat_ms(s, 50) * 1e3:.0f} us,"
	      f" p99 {fio_json.clat_ms(s, 99) * 1e3:.0f} us, max {s['read']['clat_ns']['max'] / 1e3:.0f} us")
	print(f"  stream: {fio_json.mbs(r) / 1.048576:.1f} MiB/s")
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
	mixed
	echo "== debugfs block/$disk/latency"
	cat "/sys/kernel/debug/block/$disk/latency"
	echo "== tracepoint blk_lat:block_lat_window"
	grep block_lat_window "$tr/trace" | sed 's/^ *//'
	echo 0 >"$tr/events/blk_lat/block_lat_window/enable"
	echo 0 >"$q/lat_stats"
	if [ -n "$target" ]; then
		[ -e "$q/adapt_lat_usec" ] || { echo "demo: kernel without adapt_lat_usec" >&2; exit 1; }
		echo 1 >"$tr/events/blk_adapt/block_adapt_step/enable"
		echo >"$tr/trace"
		echo "$target" >"$q/adapt_lat_usec"
		echo "== the same with adapt_lat_usec=$target"
		mixed
		echo "  caps now: adapt_max_sectors_kb $(cat "$q/adapt_max_sectors_kb")," \
			"adapt_depth $(cat "$q/adapt_depth")"
		echo "== tracepoint blk_adapt:block_adapt_step"
		grep block_adapt_step "$tr/trace" | sed 's/^ *//'
		echo "== debugfs block/$disk/rqos/adapt/state"
		sed 's/^/  /' "/sys/kernel/debug/block/$disk/rqos/adapt/state"
		echo 0 >"$tr/events/blk_adapt/block_adapt_step/enable"
		echo 0 >"$q/adapt_lat_usec"
	fi
	echo "$huge" >/proc/sys/vm/nr_hugepages
}

if [ -n "${BLKADAPT_OUT:-}" ]; then
	demo 2>&1 | tee "$BLKADAPT_OUT/demo.txt"
else
	demo
fi
