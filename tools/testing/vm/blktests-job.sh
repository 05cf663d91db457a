#!/usr/bin/env bash
# Job run inside the VM by scripts/blktests.sh: blktests on the scratch SATA
# disk and a null_blk device, with the adaptive caps on.
set -euo pipefail

usage() {
	cat <<'USAGE'
usage: blktests-job.sh BLKTESTS_DIR TARGET_US [TEST...]
Runs inside the test VM: makes a null_blk device (configfs, memory backed),
sets queue/adapt_lat_usec to TARGET_US on it and on the scratch SATA disk
(serial blkadapt*), and runs BLKTESTS_DIR/check with both as TEST_DEVS
(TEST...: default block). Output: $BLKADAPT_OUT/blktests.log, results in
$BLKADAPT_OUT/results, counts of passed/failed/not run in $BLKADAPT_OUT/summary.
USAGE
}
case "${1:-}" in -h|--help) usage; exit 0 ;; esac
[ $# -ge 2 ] || { usage >&2; exit 2; }
dir=$1 target=$2
shift 2
out=${BLKADAPT_OUT:?not running inside the VM}

devs=()
for d in /sys/block/sd*; do
	grep -q blkadapt "$d/device/vpd_pg80" 2>/dev/null && devs+=("/dev/$(basename "$d")")
done
nb=/sys/kernel/config/nullb/blktests
mkdir "$nb"
echo 1024 >"$nb/size"
echo 1 >"$nb/memory_backed"
echo 1 >"$nb/power"
devs+=(/dev/blktests)
for d in "${devs[@]}"; do
	echo "$target" >"/sys/block/$(basename "$d")/queue/adapt_lat_usec"
	echo "blktests-job: $d adapt_lat_usec $target"
done
echo "TEST_DEVS=(${devs[*]})" >"$TMPDIR/config"
rc=0
(cd "$dir" && ./check -c "$TMPDIR/config" -o "$out/results" "${@:-block}") \
	>"$out/blktests.log" 2>&1 || rc=$?
{
	echo "blktests: check exit status $rc"
	for s in passed failed "not run"; do
		echo "blktests: $(grep -c "\[$s\]" "$out/blktests.log" || true) $s"
	done
} >"$out/summary"
for d in "${devs[@]}"; do
	# the caps must still be on: blktests did not reset them
	echo "blktests-job: $d adapt_lat_usec now $(cat "/sys/block/$(basename "$d")/queue/adapt_lat_usec")" >>"$out/summary"
done
echo 0 >"$nb/power"
rmdir "$nb"
