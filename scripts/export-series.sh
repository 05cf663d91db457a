#!/usr/bin/env bash
# Export the prepared tree's commits back into patches/ and rewrite series.
set -euo pipefail
. "$(dirname "$0")/lib.sh"

usage() {
	cat <<USAGE
usage: scripts/export-series.sh
Writes one 'git format-patch' file per commit of $TREE since the base
($BASE_TAG) into patches/, replaces the old patch files and rewrites the top-level
quilt 'series' file. Every commit must carry a Signed-off-by: line.
USAGE
}
[ "${1:-}" = -h ] || [ "${1:-}" = --help ] && { usage; exit 0; }
[ $# -eq 0 ] || { usage >&2; exit 2; }
[ -d "$TREE/.git" ] || die "no prepared tree at $TREE: run scripts/prepare-tree.sh"
[ -z "$(git -C "$TREE" status --porcelain --untracked-files=no)" ] ||
	die "$TREE has uncommitted changes: commit or stash them first"

n=$(git -C "$TREE" rev-list --count "$BASE_TAG"..HEAD)
[ "$n" -gt 0 ] || die "no commits on top of $BASE_TAG"
for c in $(git -C "$TREE" rev-list "$BASE_TAG"..HEAD); do
	git -C "$TREE" log -1 --format=%B "$c" | grep -q '^Signed-off-by: ' ||
		die "commit $(git -C "$TREE" log -1 --format='%h %s' "$c") has no Signed-off-by"
done

tmp=$(mktemp -d)
git -C "$TREE" format-patch -q --zero-commit --no-signature -o "$tmp" "$BASE_TAG"..HEAD
rm -f "$REPO"/patches/*.patch
mkdir -p "$REPO/patches"
mv "$tmp"/*.patch "$REPO/patches/"
rmdir "$tmp"
{
	echo "# quilt series: applied in this order by 'quilt push -a' and by 'git am'."
	echo "# Written by scripts/export-series.sh from the prepared tree; do not edit by hand."
	(cd "$REPO/patches" && printf '%s\n' ./*.patch | sed 's|^\./||')
} >"$REPO/series"
echo "export: $n patches written to patches/, series rewritten"
