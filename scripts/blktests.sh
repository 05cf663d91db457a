#!/usr/bin/env bash
# Run an existing blktests checkout in the test VM with the adaptive caps on.
set -euo pipefail
. "$(dirname "$0")/lib.sh"

usage() {
	cat <<USAGE
usage: scripts/blktests.sh [-k KERNEL] [-p PROFILE] [-T TARGET_US] BLKTESTS_DIR [TEST...]
Builds BLKTESTS_DIR (a blktests checkout: git clone of linux-blktests/blktests;
blktests is not packaged by Debian, so CI does not run this), boots KERNEL
(default: $BZIMAGE) with one SATA disk of PROFILE (default: fast; see
tools/testing/vm/run-vm.sh) and, in the guest, runs blktests' ./check on that
disk and on a null_blk device, both with the adaptive caps on
(queue/adapt_lat_usec = TARGET_US, default 20000). TEST... are blktests groups
or tests (default: block). blktests' own output is printed; its results go
to $BUILD/blktests/results.
Installs what is missing first: the Debian packages (scripts/deps.sh
--blktests adds gawk, udev, pciutils and xfsprogs, which blktests uses on
this machine) and, for the default kernel, the base, tree and build.
USAGE
}
kernel=$BZIMAGE profile=fast target=20000
while [ $# -gt 0 ]; do
	case "$1" in
	-k) kernel=$2; shift 2 ;;
	-p) profile=$2; shift 2 ;;
	-T) target=$2; shift 2 ;;
	-h|--help) usage; exit 0 ;;
	-*) usage >&2; die "unknown option '$1'" ;;
	*) break ;;
	esac
done
[ $# -ge 1 ] || { usage >&2; die "no BLKTESTS_DIR given"; }
dir=$(realpath "$1")
shift
if [ ! -x "$dir/check" ] || [ ! -d "$dir/tests" ]; then
	die "'$dir' is not a blktests checkout (no check, tests/)"
fi
[[ "$target" =~ ^[1-9][0-9]*$ ]] || die "-T must be a target in microseconds, not '$target'"
# From nothing: packages (blktests' own too), base, tree and build, each only when missing.
"$REPO/scripts/deps.sh" --blktests >&2 || die "missing Debian packages (see above)"
[ "$kernel" != "$BZIMAGE" ] || "$REPO/scripts/build.sh"
[ -f "$kernel" ] || die "kernel image '$kernel' not found"

log "blktests: building $dir"
make -s -C "$dir" >/dev/null
out=$BUILD/blktests
rm -rf "$out" && mkdir -p "$out"
log "blktests: booting $(basename "$kernel") (profile $profile); tests: ${*:-block}"
"$REPO/tools/testing/vm/run-vm.sh" -q -k "$kernel" -p "$profile" -n 1 -t 3600 -o "$out" \
	-- "$REPO/tools/testing/vm/blktests-job.sh" "$dir" "$target" "$@" || true
cat "$out/blktests.log" 2>/dev/null || die "the guest wrote no blktests output (see $out/console.log)"
[ -f "$out/summary" ] || die "blktests did not finish (see $out/console.log)"
cat "$out/summary"
