#!/usr/bin/env bash
# The latency benchmark: build, boot one emulated disk, run the fio workloads
# against every configuration in one boot, and make the table, JSON and plot.
set -euo pipefail
. "$(dirname "$0")/lib.sh"

usage() {
	cat <<USAGE
usage: scripts/bench.sh [-p PROFILE] [-o DIR] [-q] [-k BZIMAGE] [-- LATBENCH OPTION...]
Installs, fetches, prepares and builds what is missing (scripts/build.sh),
boots it under QEMU with one 8 GiB disk of device profile PROFILE (default
hdd; every profile of tools/testing/vm/run-vm.sh: hdd, ssd, hdd7200,
hdd5400, sata-ssd, nvme-ssd)
and runs tools/testing/bench/latbench.sh there (every configuration,
interleaved), with the controller's latency targets set by the profile:
20, 50 and 100 ms on the disks, 1, 2 and 5 ms on the SSDs (latbench.sh -T
after -- overrides). Then
tools/testing/bench/report.py writes DIR/results.md, results.json and
p99-vs-throughput.png (DIR defaults to $BUILD/bench/PROFILE) and prints the
tables. -q runs the short version (one round of 6 s runs, no oracle sweep:
73 runs with three targets, about 15 minutes, estimated from the run count).
-k boots BZIMAGE instead, for example a kernel without the series
($BUILD/bzImage-base, which ci/test.sh saves): latbench.sh then leaves the
adapt-* configurations out.
USAGE
}
profile=hdd out="" extra=() kernel=$BZIMAGE
while [ $# -gt 0 ]; do
	case "$1" in
	-p|--profile) [ $# -ge 2 ] || die "$1 needs a value"; profile=$2; shift 2 ;;
	-o|--out) [ $# -ge 2 ] || die "$1 needs a value"; out=$2; shift 2 ;;
	-q|--quick) extra+=(-q); shift ;;
	-k|--kernel) [ $# -ge 2 ] || die "$1 needs a value"; kernel=$2; shift 2 ;;
	-h|--help) usage; exit 0 ;;
	--) shift; extra+=("$@"); break ;;
	*) usage >&2; die "unknown argument '$1'" ;;
	esac
done
case "$profile" in
hdd|hdd7200|hdd5400) targets=20,50,100 disk=sda ;;
ssd|sata-ssd) targets=1,2,5 disk=sda ;;
nvme-ssd) targets=1,2,5 disk=nvme0n1 ;;
*) die "unknown profile '$profile' (hdd, ssd, hdd7200, hdd5400, sata-ssd, nvme-ssd)" ;;
esac
out=${out:-$BUILD/bench/$profile}
# From nothing: packages, base, tree and build (scripts/build.sh), each only when missing.
if [ "$kernel" = "$BZIMAGE" ]; then "$REPO/scripts/build.sh"; else "$REPO/scripts/deps.sh" >&2; fi
[ -f "$kernel" ] || die "no kernel image $kernel"
rm -rf "$out"
mkdir -p "$out"
log "bench: booting (profile $profile), results in $out"
# the guest's time limit: the default (2 rounds of 15 s) is 182 runs of about
# 20 s with three targets, -r 3 -t 30 (273 runs) about 3 hours
"$REPO/tools/testing/vm/run-vm.sh" -q -k "$kernel" -p "$profile" -n 1 -s 8G -t 21600 -o "$out" \
	-- "$REPO/tools/testing/bench/latbench.sh" -T "$targets" "${extra[@]}" "$disk" ||
	die "benchmark job failed (see $out/console.log)"
grep -a '^\[[0-9:]*\] ' "$out/console.log" | tail -n 3 >&2 || true
/usr/bin/python3 "$REPO/tools/testing/bench/report.py" "$out"
log "bench: plot in $out/p99-vs-throughput.png"
