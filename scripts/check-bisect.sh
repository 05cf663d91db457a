#!/usr/bin/env bash
# Build the kernel after every patch of the series, incrementally, and run the
# per-patch quality gates (scripts/check-gates.sh) on each; KTAP.
set -euo pipefail
. "$(dirname "$0")/lib.sh"

usage() {
	cat <<USAGE
usage: scripts/check-bisect.sh [--save-base PATH]
Checks out each commit of $TREE from the base ($BASE_TAG) to the tip in turn
and builds it with scripts/build.sh into the same $OBJ, so that each step
is an incremental build; then runs scripts/check-gates.sh on it (W=1, sparse
and kernel-doc on the files it touches; the base's warnings are recorded
first). Prints one KTAP result per build and per gate run, and leaves the
tree at its tip, built. Exits 1 when any step fails.
  --save-base PATH  copy the base kernel's bzImage to PATH (a kernel without the series)
USAGE
}
save_base=""
case "${1:-}" in
-h|--help) usage; exit 0 ;;
--save-base) [ -n "${2:-}" ] || { usage >&2; exit 2; }; save_base=$2 ;;
"") ;;
*) usage >&2; exit 2 ;;
esac
[ -d "$TREE/.git" ] || die "no prepared tree at $TREE: run scripts/prepare-tree.sh"
[ -z "$(git -C "$TREE" status --porcelain --untracked-files=no)" ] ||
	die "$TREE has uncommitted changes"

tip=$(git -C "$TREE" symbolic-ref -q --short HEAD || git -C "$TREE" rev-parse HEAD)
mapfile -t commits < <(git -C "$TREE" rev-list --reverse "$BASE_TAG"..HEAD)
commits=("$(git -C "$TREE" rev-parse "$BASE_TAG")" "${commits[@]}")
logs=$BUILD/logs
mkdir -p "$logs"

trap 'git -C "$TREE" checkout -q "$tip"' EXIT
echo "TAP version 13"
echo "1..$((2 * ${#commits[@]} - 1))"
i=0 n=0 fails=0
for c in "${commits[@]}"; do
	i=$((i + 1)) n=$((n + 1))
	subject=$(git -C "$TREE" log -1 --format='%h %s' "$c")
	git -C "$TREE" checkout -q "$c"
	t=$(date +%s)
	if "$REPO/scripts/build.sh" >"$logs/bisect-$i.log" 2>&1; then
		echo "ok $n build: $subject ($(( $(date +%s) - t ))s)"
		if [ "$i" = 1 ] && [ -n "$save_base" ]; then cp "$BZIMAGE" "$save_base"; fi
		if [ "$i" = 1 ]; then
			"$REPO/scripts/check-gates.sh" --baseline "$tip" >>"$logs/gates-base.log" 2>&1 ||
				{ echo "Bail out! check-gates.sh --baseline failed (see $logs/gates-base.log)"; exit 1; }
			continue
		fi
		n=$((n + 1))
		t=$(date +%s)
		if "$REPO/scripts/check-gates.sh" "$c" >"$logs/gates-$i.log" 2>&1; then
			echo "ok $n gates: W=1, sparse, kernel-doc: $subject ($(( $(date +%s) - t ))s)"
		else
			echo "not ok $n gates: W=1, sparse, kernel-doc: $subject"
			sed 's/^/# /' "$logs/gates-$i.log" | head -n 20
			fails=$((fails + 1))
		fi
	else
		echo "not ok $n build: $subject"
		if [ "$i" != 1 ]; then
			n=$((n + 1))
			echo "ok $n gates: $subject # SKIP not built"
		fi
		sed 's/^/# /' "$logs/bisect-$i.log" | grep -E 'error|warning' | head -n 20 || true
		fails=$((fails + 1))
	fi
done
git -C "$TREE" checkout -q "$tip"
[ "$fails" = 0 ]
