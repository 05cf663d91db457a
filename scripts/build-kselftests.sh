#!/usr/bin/env bash
# Build and install the series' kselftests from the prepared tree.
set -euo pipefail
. "$(dirname "$0")/lib.sh"

usage() {
	cat <<USAGE
usage: scripts/build-kselftests.sh
Builds the kselftest targets the series adds or uses ($KSELFTEST_TARGETS)
from $TREE and installs them, with run_kselftest.sh, into $KSELFTEST_DIR.
USAGE
}
[ "${1:-}" = -h ] || [ "${1:-}" = --help ] && { usage; exit 0; }
[ $# -eq 0 ] || { usage >&2; exit 2; }
[ -d "$TREE/.git" ] || die "no prepared tree at $TREE: run scripts/prepare-tree.sh"
rm -rf "$KSELFTEST_DIR"
log "kselftest: building and installing $KSELFTEST_TARGETS"
make -s -C "$TREE/tools/testing/selftests" TARGETS="$KSELFTEST_TARGETS" \
	INSTALL_PATH="$KSELFTEST_DIR" install >/dev/null
[ -x "$KSELFTEST_DIR/run_kselftest.sh" ] || die "kselftest install produced no run_kselftest.sh"
log "kselftest: $(grep -c . "$KSELFTEST_DIR/kselftest-list.txt") test programs in $KSELFTEST_DIR"
