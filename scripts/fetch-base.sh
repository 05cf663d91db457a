#!/usr/bin/env bash
# Fetch the base kernel tree and commit it into a cached git repository.
set -euo pipefail
. "$(dirname "$0")/lib.sh"

usage() {
	cat <<USAGE
usage: scripts/fetch-base.sh
Makes \$CACHE/base (now $CACHE/base): a git repository whose single commit,
tagged $BASE_TAG, is the base tree the series applies to. Prints the base version.

Where the tree comes from, first match wins:
  LINUX_TREE=/path     a git checkout of mainline or a subsystem tree (HEAD is used)
  LINUX_TARBALL=/path  a linux-*.tar.{xz,gz} release tarball
  otherwise            Debian's binary package \$BASE_PKG (now $BASE_PKG) from the
                       '\$BASE_SUITE' suite (now $BASE_SUITE), fetched with a private apt
                       configuration under \$CACHE; the system's apt sources are only read.
The result is cached: a second run does not download or extract again.
USAGE
}
[ "${1:-}" = -h ] || [ "${1:-}" = --help ] && { usage; exit 0; }
[ $# -eq 0 ] || { usage >&2; exit 2; }

# newest GLOB...: the last existing path of the expanded glob, or nothing.
newest() { local f last=; for f in "$@"; do [ -e "$f" ] && last=$f; done; echo "$last"; }

base=$CACHE/base
mkdir -p "$CACHE"

if [ -n "${LINUX_TREE:-}" ]; then
	[ -d "$LINUX_TREE/.git" ] || die "LINUX_TREE=$LINUX_TREE is not a git checkout"
	base=$LINUX_TREE
	git -C "$base" tag -f "$BASE_TAG" HEAD >/dev/null
elif [ ! -e "$base/.git/refs/tags/$BASE_TAG" ]; then
	tarball=${LINUX_TARBALL:-}
	if [ -z "$tarball" ]; then
		apt=$CACHE/apt
		mkdir -p "$apt/lists/partial" "$apt/archives/partial"
		# The archive URI is read from the system's own apt sources.
		uri=$(awk '/^URIs:/ {print $2; exit}' /etc/apt/sources.list.d/*.sources 2>/dev/null || true)
		[ -n "$uri" ] || uri=$(awk '/^deb / {print $2; exit}' /etc/apt/sources.list 2>/dev/null || true)
		[ -n "$uri" ] || die "no Debian archive URI found in the system's apt sources"
		echo "deb [signed-by=/usr/share/keyrings/debian-archive-keyring.gpg] $uri $BASE_SUITE main" \
			>"$apt/sources.list"
		aopt=(-o "Dir::Etc::SourceList=$apt/sources.list" -o Dir::Etc::SourceParts=/dev/null
		      -o "Dir::State::Lists=$apt/lists" -o "Dir::Cache=$apt/cache"
		      -o Dir::State::status=/dev/null -o Debug::NoLocking=1 -o APT::Sandbox::User=root)
		deb=$(newest "$apt"/"${BASE_PKG}"_*.deb)
		if [ -z "$deb" ]; then
			log "fetch: apt-get update ($BASE_SUITE, private configuration)"
			apt-get "${aopt[@]}" -q update >/dev/null
			if ! (cd "$apt" && apt-get "${aopt[@]}" -q download "$BASE_PKG" >/dev/null); then
				die "package $BASE_PKG is not offered by the $BASE_SUITE suite.
Try BASE_PKG=linux-source-<newer version> (see: apt-cache policy 'linux-source-*'),
or point LINUX_TREE at a mainline git checkout, or LINUX_TARBALL at a release tarball."
			fi
			deb=$(newest "$apt"/"${BASE_PKG}"_*.deb)
		fi
		log "fetch: using $(basename "$deb")"
		rm -rf "$apt/x" && mkdir "$apt/x"
		dpkg-deb -x "$deb" "$apt/x"
		tarball=$(newest "$apt"/x/usr/src/linux-source-*.tar.*)
		[ -n "$tarball" ] || die "$(basename "$deb") holds no linux-source tarball"
		echo "Debian package $(basename "$deb")" >"$CACHE/base-origin"
	else
		echo "tarball $(basename "$tarball")" >"$CACHE/base-origin"
	fi
	log "fetch: extracting $(basename "$tarball")"
	rm -rf "$base.tmp" && mkdir -p "$base.tmp"
	tar -xf "$tarball" -C "$base.tmp" --strip-components=1
	rm -rf "${apt:-/nonexistent}/x"
	log "fetch: committing the base tree"
	git -C "$base.tmp" init -q
	# Debian's top-level .gitignore ignores every top-level path: add with -f.
	git -C "$base.tmp" add -A -f
	v=$(make -s -C "$base.tmp" kernelversion)
	# Dated like the tree itself, so that the base commit's id is the same on every machine.
	when=$(date -u -r "$base.tmp/Makefile" '+%Y-%m-%dT%H:%M:%SZ')
	GIT_AUTHOR_DATE=$when GIT_COMMITTER_DATE=$when \
		git -C "$base.tmp" -c user.name="blk-adapt base import" -c user.email="base@blk-adapt.invalid" \
		commit -q -m "Linux $v ($(cat "$CACHE/base-origin"))"
	git -C "$base.tmp" tag "$BASE_TAG"
	git -C "$base.tmp" gc -q --auto || true
	rm -rf "$base" && mv "$base.tmp" "$base"
fi

v=$(make -s -C "$base" kernelversion)
origin=$(cat "$CACHE/base-origin" 2>/dev/null || echo "git tree $base")
[ -n "${LINUX_TREE:-}" ] && origin="git tree $base ($(git -C "$base" describe --always HEAD))"
echo "base: Linux $v from $origin, commit $(git -C "$base" rev-parse "$BASE_TAG")"
