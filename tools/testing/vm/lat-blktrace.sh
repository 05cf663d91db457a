#!/usr/bin/env bash
# Job step run inside the VM (guest-tests.sh --blktrace): the per-queue latency
# accounting against blktrace, blkparse and btt on the same requests.
set -euo pipefail

usage() {
	cat <<'USAGE'
usage: lat-blktrace.sh [SECONDS]
Runs inside the test VM. On a null_blk device (timer completions of 1 ms, two
tags, mq-deadline) and on the first scratch SATA disk (serial blkadapt*, read
only): traces the device with blktrace, resets the latency accounting
(queue/lat_stats) and runs 4 KiB random reads (iodepth 4) next to 256 KiB
sequential reads (iodepth 2) for SECONDS (default 5), then gives blkparse's
events, the debugfs latency table, btt's report and blktrace's own summary
(its dropped events) to
tools/testing/lib/lat_blktrace.py, which prints KTAP (its --help says what it
checks). Exit status 0 when every check passed, 4 (kselftest's skip) when the
kernel or the tools lack what it needs.
USAGE
}
case "${1:-}" in -h|--help) usage; exit 0 ;; esac
secs=${1:-5}
[[ "$secs" =~ ^[1-9][0-9]*$ ]] || { usage >&2; exit 2; }
lib=$(cd "$(dirname "$0")/../lib" && pwd)
work=$(mktemp -d)
nb=/sys/kernel/config/nullb/lat_blktrace
cleanup() {
	if [ -d "$nb" ]; then
		echo 0 >"$nb/power" 2>/dev/null || true
		rmdir "$nb"
	fi
	rm -rf "$work"
}
trap cleanup EXIT

skip() { printf 'TAP version 13\n1..1\nok 1 latency accounting against blktrace # SKIP %s\n' "$*"; exit 4; }
for t in blktrace blkparse btt fio python3; do
	command -v "$t" >/dev/null || skip "$t is not installed"
done
[ -d /sys/kernel/config/nullb ] || skip "no null_blk configfs"
[ -d /sys/kernel/debug/block ] || skip "debugfs is not mounted"

mkdir "$nb"
echo 1024 >"$nb/size"
echo 2 >"$nb/irqmode"
echo 1000000 >"$nb/completion_nsec"
echo 2 >"$nb/hw_queue_depth"
echo 1024 >"$nb/max_sectors"	# 512 KiB: no 256 KiB read is split
echo 1 >"$nb/power"
devs=(lat_blktrace)
[ -e /sys/block/lat_blktrace ] || devs=(nullb"$(cat "$nb/index")")
echo mq-deadline >"/sys/block/${devs[0]}/queue/scheduler"
for d in /sys/block/sd*; do
	if grep -q blkadapt "$d/device/vpd_pg80" 2>/dev/null; then
		devs+=("${d##*/}")
		break
	fi
done
[ -e "/sys/block/${devs[0]}/queue/lat_stats" ] || skip "no queue/lat_stats"

args=()
for d in "${devs[@]}"; do
	q=/sys/block/$d/queue
	was=$(cat "$q/lat_stats")
	echo 1 >"$q/lat_stats"
	# the count check needs every event: 8 x 4 MiB relay buffers per CPU
	# (default 4 x 512 KiB) against a tracer starved next to fio under TCG;
	# the drops blktrace reports in its log are checked all the same
	(cd "$work" && exec blktrace -b 4096 -n 8 -d "/dev/$d" -o "$d" >"$d.log" 2>&1) &
	tracer=$!
	# blktrace creates "msg" at setup and starts tracing right after
	msg=/sys/kernel/debug/block/$d/msg
	for _ in $(seq 100); do [ -e "$msg" ] && break; sleep 0.1; done
	[ -e "$msg" ] || { echo "lat-blktrace: blktrace did not set up $d" >&2; exit 1; }
	sleep 1
	# A read of the disk's last block, where fio never reads, marks the
	# start and the end in the trace: it proves to lat_blktrace.py that
	# blktrace ran before the load. (Not a blktrace message: with
	# CONFIG_BLK_CGROUP the kernel tags messages with a cgroup id, and
	# Debian 12's blkparse 1.2.0 drops such messages.)
	ss=$(cat "$q/logical_block_size")
	mark=$(( $(cat "/sys/block/$d/size") - ss / 512 ))
	marker() { dd if="/dev/$d" of=/dev/null bs="$ss" count=1 skip=$((mark * 512 / ss)) iflag=direct status=none; }
	marker
	echo reset >"/sys/kernel/debug/block/$d/latency"
	fio --direct=1 --time_based --runtime="$secs" --filename="/dev/$d" --output=/dev/null \
		--name=small --rw=randread --bs=4k --ioengine=libaio --iodepth=4 --size=256m \
		--name=large --rw=read --bs=256k --ioengine=libaio --iodepth=2 --offset=512m \
		--size=256m
	sleep 0.5
	cp "/sys/kernel/debug/block/$d/latency" "$work/$d.table"
	marker
	kill -INT "$tracer"
	wait "$tracer" || true
	echo "$was" >"$q/lat_stats"
	(cd "$work" && blkparse -q -i "$d" -f '%a %d %S %n %T.%9t\n' -d "$d.bin" >"$d.events")
	# btt writes files of its own beside its report: in $work
	(cd "$work" && btt -i "$d.bin" >"$d.btt")
	args+=("$d" "$work/$d.events" "$work/$d.table" "$work/$d.btt" "$work/$d.log" "$mark")
done
python3 "$lib/lat_blktrace.py" "${args[@]}"
