#!/usr/bin/env bash
# Demo: build the patched kernel, boot it with an emulated SATA disk, show the
# disk's transfer limits and small reads next to a large-read stream with the
# adaptive caps off and on, side by side.
set -euo pipefail
. "$(dirname "$0")/lib.sh"

usage() {
	cat <<USAGE
usage: scripts/demo.sh [-p PROFILE] [SECONDS [TARGET_US]]
From nothing, first installs the missing Debian packages, fetches the base
tree and prepares $TREE (each only when missing: scripts/build.sh does it);
builds the lean kernel (incremental),
boots it under QEMU with one AHCI SATA disk of device profile PROFILE
(default hdd: 150 MB/s, 150 commands/s; see tools/testing/vm/run-vm.sh) and
runs tools/testing/vm/demo-job.sh there for SECONDS (default 10): the disk's
limits, 4 KiB random reads next to a 32 MiB read stream, the latency table
and tracepoint; then the same load with the adaptive caps on
(queue/adapt_lat_usec=TARGET_US, default 50000; 0 skips it) and their trace;
last, the reader's latency and the stream's throughput of both runs side by
side. The guest's console is in $BUILD/vm/demo/console.log.
USAGE
}
profile=hdd
while [ $# -gt 0 ]; do
	case "$1" in
	-p|--profile) [ $# -ge 2 ] || die "$1 needs a value"; profile=$2; shift 2 ;;
	-h|--help) usage; exit 0 ;;
	-*) usage >&2; die "unknown option '$1'" ;;
	*) break ;;
	esac
done
secs=${1:-10} target=${2:-50000}
[[ "$secs" =~ ^[1-9][0-9]*$ ]] || die "SECONDS must be a positive integer, not '$secs'"
[[ "$target" =~ ^[0-9]+$ ]] || die "TARGET_US must be a non-negative integer, not '$target'"

"$REPO/scripts/build.sh"
log "demo: booting (profile $profile, ${secs} s of fio)"
"$REPO/tools/testing/vm/run-vm.sh" -q -p "$profile" -t $((3 * secs + 300)) -o "$BUILD/vm/demo" \
	-- "$REPO/tools/testing/vm/demo-job.sh" "$secs" "$target" || die "demo job failed (see $BUILD/vm/demo/console.log)"
cat "$BUILD/vm/demo/demo.txt"
