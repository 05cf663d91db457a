#!/usr/bin/env bash
# Shared settings and helpers for the project's scripts. Source it; do not run it.
# shellcheck disable=SC2034  # variables are used by the scripts that source this file

REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
CACHE=${BLK_ADAPT_CACHE:-${XDG_CACHE_HOME:-${HOME:-$REPO/build}/.cache}/blk-adapt}
BUILD=${BLK_ADAPT_BUILD:-$REPO/build}
TREE=$BUILD/linux            # prepared git tree: base commit + the series
OBJ=$BUILD/obj               # out-of-tree build directory (O=)
BZIMAGE=$OBJ/arch/x86/boot/bzImage
# Suites searched for the newest linux-source-7.* (scripts/fetch-base.sh).
DEFAULT_SUITES="unstable experimental trixie-backports"
BASE_TAG=blk-adapt-base      # tag on the base commit in $TREE
LEAN_CONFIG=$REPO/tools/testing/vm/lean.config
# The debug kernel: the lean config plus DEBUG_CONFIG, built into its own O=.
DEBUG_CONFIG=$REPO/tools/testing/vm/debug.config
DEBUG_OBJ=$BUILD/obj-debug
DEBUG_BZIMAGE=$DEBUG_OBJ/arch/x86/boot/bzImage
# 32-bit x86: the lean config plus I386_CONFIG, to build the series' objects there.
I386_CONFIG=$REPO/tools/testing/vm/i386.config
I386_OBJ=$BUILD/obj-i386
# The nbdkit disk timing model (tools/testing/diskmodel), built by build_diskmodel.
DISKMODEL=$BUILD/diskmodel/nbdkit-diskmodel-filter.so
# The simulator (tools/testing/adaptsim), built from the prepared tree by build_adaptsim.
ADAPTSIM=$BUILD/adaptsim/adaptsim
T0=${T0:-$(date +%s)}
export T0

# The prepared tree's commits (git am, rebase) need a committer. A fresh machine
# has no git identity: use a fixed project identity then. Signed-off-by lines
# come from the patches themselves, never from this.
if ! git var GIT_COMMITTER_IDENT >/dev/null 2>&1; then
	export GIT_COMMITTER_NAME="blk-adapt harness" GIT_COMMITTER_EMAIL="harness@blk-adapt.invalid"
	export GIT_AUTHOR_NAME=$GIT_COMMITTER_NAME GIT_AUTHOR_EMAIL=$GIT_COMMITTER_EMAIL
fi

log() { printf '[%4ds] %s\n' "$(( $(date +%s) - T0 ))" "$*" >&2; }
die() { printf 'error: %s\n' "$*" >&2; exit 1; }

# cc: the compiler, through ccache when it is installed.
kcc() { if command -v ccache >/dev/null; then echo "ccache gcc"; else echo gcc; fi; }

# build_diskmodel: build the nbdkit filter of the disk models into $DISKMODEL.
build_diskmodel() {
	[ -f /usr/include/nbdkit-filter.h ] || die "nbdkit-plugin-dev is not installed (scripts/deps.sh)"
	mkdir -p "$(dirname "$DISKMODEL")"
	make -s -C "$REPO/tools/testing/diskmodel" OUT="$(dirname "$DISKMODEL")" >&2
}

# build_adaptsim: build the simulator into $ADAPTSIM, with the control law
# compiled from the prepared tree (block/blk-adapt-law.c).
build_adaptsim() {
	[ -f "$TREE/block/blk-adapt-law.c" ] || die "no $TREE/block/blk-adapt-law.c: run scripts/prepare-tree.sh"
	mkdir -p "$(dirname "$ADAPTSIM")"
	make -s -C "$REPO/tools/testing/adaptsim" KSRC="$TREE" OUT="$(dirname "$ADAPTSIM")" >&2
}

# ensure_tree: what every entry point needs before it builds, each step only
# when it is missing: the Debian packages (scripts/deps.sh: installed as root,
# otherwise the apt-get line is printed and this stops), the base tree
# (scripts/fetch-base.sh) and the prepared tree (scripts/prepare-tree.sh).
ensure_tree() {
	"$REPO/scripts/deps.sh" >&2 || die "missing Debian packages (see above)"
	[ -d "$TREE/.git" ] && return 0
	if ! git -C "${LINUX_TREE:-$CACHE/base}" rev-parse -q --verify "$BASE_TAG" >/dev/null 2>&1; then
		log "setup: no base tree yet: scripts/fetch-base.sh"
		"$REPO/scripts/fetch-base.sh" >&2
	fi
	log "setup: no prepared tree yet: scripts/prepare-tree.sh"
	"$REPO/scripts/prepare-tree.sh" >&2
}

# kmake ARGS: make in the prepared tree, out of tree, with ccache when present.
kmake() { make -C "$TREE" O="$OBJ" CC="$(kcc)" -j"$(nproc)" "$@"; }

# series_patches: patch file names from the top-level quilt series, in order.
series_patches() { sed -e 's/#.*//' -e 's/[[:space:]].*//' -e '/^$/d' "$REPO/series"; }

# The kselftest targets the series adds, and where they are installed.
KSELFTEST_TARGETS="drivers/ata block"
KSELFTEST_DIR=$BUILD/kselftest
