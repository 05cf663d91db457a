#!/usr/bin/env bash
# Make the prepared git tree: the base commit plus the series applied as commits.
set -euo pipefail
. "$(dirname "$0")/lib.sh"

usage() {
	cat <<USAGE
usage: scripts/prepare-tree.sh [--check-quilt] [--force]
Clones the cached base (scripts/fetch-base.sh) into $TREE and applies the
patches listed in ./series with 'git am', one commit each. Edit there with git,
then export with scripts/export-series.sh.
  --check-quilt  first apply the series with 'quilt push -a' on the base tree and
                 check that it yields exactly the tree 'git am' yields
  --force        throw away an existing prepared tree (its unexported commits too)
USAGE
}

check_quilt=0 force=0
for a in "$@"; do
	case "$a" in
	--check-quilt) check_quilt=1 ;;
	--force) force=1 ;;
	-h|--help) usage; exit 0 ;;
	*) usage >&2; exit 2 ;;
	esac
done

base=${LINUX_TREE:-$CACHE/base}
git -C "$base" rev-parse -q --verify "$BASE_TAG" >/dev/null ||
	die "no base tree at $base: run scripts/fetch-base.sh first"
if [ -d "$TREE/.git" ]; then
	[ "$force" = 1 ] || die "$TREE exists; pass --force to replace it (unexported commits are lost)"
	rm -rf "$TREE"
fi
mkdir -p "$BUILD"
log "tree: cloning the base into $TREE"
git clone -q --shared --no-checkout "$base" "$TREE"
git -C "$TREE" checkout -q -B main "$BASE_TAG"
git -C "$TREE" tag -f "$BASE_TAG" "$BASE_TAG" >/dev/null

mapfile -t patches < <(series_patches)
for p in "${patches[@]}"; do
	[ -f "$REPO/patches/$p" ] || die "series lists patches/$p, which does not exist"
done

if [ "$check_quilt" = 1 ]; then
	log "tree: quilt push -a (${#patches[@]} patches)"
	tmp=$(mktemp -d)
	# QUILT_PC must not exist yet: quilt takes an empty one for an old-format tree
	(cd "$TREE" && QUILT_PATCHES=$REPO/patches QUILT_SERIES=$REPO/series QUILT_PC=$tmp/pc \
		quilt push -a -q --fuzz=0 >/dev/null) || die "quilt push -a failed"
	rm -rf "$tmp"
	git -C "$TREE" add -A -f
	quilt_tree=$(git -C "$TREE" write-tree)
	git -C "$TREE" reset -q --hard
	git -C "$TREE" clean -q -fdx
fi

log "tree: git am (${#patches[@]} patches)"
if [ ${#patches[@]} -gt 0 ]; then
	(cd "$REPO/patches" && git -C "$TREE" am -q --whitespace=error-all "${patches[@]/#/$PWD/}") ||
		die "git am failed; see 'git -C $TREE am --show-current-patch'"
fi
if [ "$check_quilt" = 1 ]; then
	[ "$quilt_tree" = "$(git -C "$TREE" rev-parse 'HEAD^{tree}')" ] ||
		die "quilt push -a and git am produced different trees"
	log "tree: quilt and git am give the same tree $quilt_tree"
fi
echo "tree: $TREE at $(git -C "$TREE" describe --always --tags HEAD), $(git -C "$TREE" rev-list --count "$BASE_TAG"..HEAD) patches on $BASE_TAG"
