#!/usr/bin/env bash
# Test job run inside the VM (see run-vm.sh): the series' kselftests and the
# KUnit results, as KTAP files in $BLKADAPT_OUT.
set -euo pipefail

usage() {
	cat <<'USAGE'
usage: guest-tests.sh [-t COLLECTION:TEST]... [--throttled] [--no-timing] [--faults] [--blktrace]
                      [--try-disk] KSELFTEST_DIR
Runs inside the test VM: runs the kselftests installed in KSELFTEST_DIR
(scripts/build-kselftests.sh; all of them, or those named with -t) into
$BLKADAPT_OUT/kselftest.ktap, and copies the results of the KUnit suites that
ran at boot into $BLKADAPT_OUT/kunit.ktap. The VM's SATA disks are scratch
space: their data is overwritten. --throttled says the disks are shaped like a
real disk (run-vm.sh -p hdd or ssd): the adaptive caps test then measures
latency and throughput on them too (ADAPT_SELFTEST_DISKS). --no-timing
skips the block tests' checks of latency and throughput (a debug kernel).
--faults lets the fault tests (block/adapt_faults.sh) inject errors into the
scratch disks and remove them (ADAPT_SELFTEST_FAULT_DISKS). --blktrace then
cross-checks the latency accounting against blktrace (lat-blktrace.sh) into
$BLKADAPT_OUT/blktrace.ktap. --try-disk then runs scripts/try-disk.sh on the
first scratch disk, its refusals, a short run and a Ctrl-C
(try-disk-test.sh) into $BLKADAPT_OUT/try-disk.ktap. With a debug kernel that has kmemleak, a scan
after the tests goes to $BLKADAPT_OUT/kmemleak.ktap.
USAGE
}
tests=() throttled=0 faults=0 blktrace=0 trydisk=0 limit=()
while [ $# -gt 1 ]; do
	case "$1" in
	-t) tests+=(-t "$2"); shift 2 ;;
	# adapt.sh with a SATA disk runs about 230 s of fio, close to the
	# kselftest default limit of 300 s: give it 600
	--throttled) throttled=1; [ ${#limit[@]} -gt 0 ] || limit=(-o 600); shift ;;
	# a debug kernel under emulation is slow: 20 minutes a test
	--no-timing) export BLOCK_SELFTEST_NO_TIMING=1; limit=(-o 1200); shift ;;
	--faults) faults=1; shift ;;
	--blktrace) blktrace=1; shift ;;
	--try-disk) trydisk=1; shift ;;
	*) break ;;
	esac
done
[ "${1:-}" = -h ] || [ "${1:-}" = --help ] && { usage; exit 0; }
if [ $# -ne 1 ] || [ ! -x "$1/run_kselftest.sh" ]; then
	usage >&2
	exit 2
fi
out=${BLKADAPT_OUT:?not running inside the VM}

echo "guest-tests: block devices: $(cd /sys/block && echo *)"
kunit=/sys/kernel/debug/kunit
if [ -d "$kunit" ] && [ -n "$(ls "$kunit")" ]; then
	{
		echo "KTAP version 1"
		echo "1..$(find "$kunit" -mindepth 1 -maxdepth 1 -type d | wc -l)"
		cat "$kunit"/*/results
	} >"$out/kunit.ktap"
fi

# The VM's disks are scratch space (run-vm.sh names them by serial number):
# the write-and-verify checks may overwrite them.
scratch=()
for d in /sys/block/sd*; do
	grep -q blkadapt "$d/device/vpd_pg80" 2>/dev/null && scratch+=("$(basename "$d")")
done
export ATA_SELFTEST_IO_DISKS="${scratch[*]}" ATA_SELFTEST_WRITE_DISKS="${scratch[*]}"
# QEMU's ich9-ahci is on the ahci driver's list of controllers tested with 4 MiB S/G entries
export ATA_SELFTEST_LARGE_PRD=1
echo "guest-tests: scratch disks: ${scratch[*]}"
if [ "$throttled" = 1 ]; then
	export ADAPT_SELFTEST_DISKS="${scratch[*]}"
fi
if [ "$faults" = 1 ]; then
	export ADAPT_SELFTEST_FAULT_DISKS="${scratch[*]}"
fi
# kmemleak: forget what boot left unreferenced; only the tests' leaks count.
leaks=/sys/kernel/debug/kmemleak
if [ -e "$leaks" ]; then
	echo scan >"$leaks"
	echo clear >"$leaks"
fi
rc=0
"$1/run_kselftest.sh" "${limit[@]}" "${tests[@]}" 2>&1 | tee "$out/kselftest.ktap" || rc=$?
if [ "$blktrace" = 1 ]; then
	brc=0
	"$(dirname "$0")/lat-blktrace.sh" | tee "$out/blktrace.ktap" || brc=$?
	[ "$brc" = 0 ] || [ "$brc" = 4 ] || rc=1
fi
if [ "$trydisk" = 1 ] && [ ${#scratch[@]} -eq 0 ]; then
	echo "guest-tests: --try-disk: no scratch disk" >&2
	rc=1
elif [ "$trydisk" = 1 ]; then
	trc=0
	"$(dirname "$0")/try-disk-test.sh" "${scratch[0]}" | tee "$out/try-disk.ktap" || trc=$?
	[ "$trc" = 0 ] || rc=1
fi

# kmemleak: what the tests allocated and lost. The first scan reports objects
# only after they stayed unreferenced for a while (5 s) and through two
# scans, so scan twice after a pause, as Documentation/dev-tools/kmemleak.rst
# suggests.
if [ -e "$leaks" ]; then
	echo scan >"$leaks"
	sleep 6
	echo scan >"$leaks"
	cat "$leaks" >"$out/kmemleak.txt"
	n=$(grep -c '^unreferenced object' "$out/kmemleak.txt" || true)
	{
		echo "KTAP version 1"
		echo "1..1"
		head -n 40 "$out/kmemleak.txt" | sed 's/^/# /'
		if [ "$n" = 0 ]; then
			echo "ok 1 kmemleak: no unreferenced objects after the tests"
		else
			echo "not ok 1 kmemleak: $n unreferenced objects after the tests"
		fi
	} >"$out/kmemleak.ktap"
	echo "guest-tests: kmemleak: $n unreferenced objects"
fi
exit "$rc"
