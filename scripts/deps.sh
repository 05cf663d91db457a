#!/usr/bin/env bash
# Install (as root) or list (otherwise) the Debian 12 packages the project needs.
set -euo pipefail

usage() {
	cat <<'USAGE'
usage: scripts/deps.sh [--check] [--blktests]
Makes sure the Debian packages used to fetch, build, boot, test and benchmark
the series are installed. As root, missing ones are installed with apt-get;
otherwise the exact apt-get command is printed and the script exits 1.
  --check     only report, never install (exit 1 when something is missing)
  --blktests  also what scripts/blktests.sh runs blktests with on this machine
USAGE
}

check_only=0 blktests=0
for a in "$@"; do
	case "$a" in
	-h|--help) usage; exit 0 ;;
	--check) check_only=1 ;;
	--blktests) blktests=1 ;;
	*) usage >&2; exit 2 ;;
	esac
done

pkgs=(
	# fetch + build
	git quilt make gcc flex bison bc libelf-dev libssl-dev cpio xz-utils rsync
	ccache perl python3 dwarves
	# boot + test
	qemu-system-x86 qemu-utils fio blktrace sg3-utils busybox-static dmsetup
	# device models (nbdkit filter in C)
	nbdkit nbdkit-plugin-dev
	# quality gates and mail
	sparse shellcheck b4 python3-ply python3-git
	# benchmark output
	gnuplot-nox jq python3-matplotlib
)
[ "$blktests" = 0 ] || pkgs+=(gawk udev pciutils xfsprogs)

missing=()
for p in "${pkgs[@]}"; do
	dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' ||
		missing+=("$p")
done
[ ${#missing[@]} -eq 0 ] && { echo "deps: all ${#pkgs[@]} packages present"; exit 0; }

cmd="apt-get install -y --no-install-recommends ${missing[*]}"
if [ "$check_only" = 1 ] || [ "$(id -u)" != 0 ]; then
	echo "deps: missing packages; run as root:" >&2
	echo "  apt-get update && $cmd" >&2
	exit 1
fi
echo "deps: installing ${missing[*]}"
apt-get update -q >/dev/null
DEBIAN_FRONTEND=noninteractive $cmd -q >/dev/null
echo "deps: done"
