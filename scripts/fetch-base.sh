#!/usr/bin/env bash
# Fetch the base kernel tree and commit it into a cached git repository.
set -euo pipefail
. "$(dirname "$0")/lib.sh"

usage() {
	cat <<USAGE
usage: scripts/fetch-base.sh
Makes \$CACHE/base (now $CACHE/base): a git repository whose single commit,
tagged $BASE_TAG, is the base tree the series applies to, and prints where
the tree came from (package, exact version and suite) and its commit.

Where the tree comes from, first match wins:
  LINUX_TREE=/path     a git checkout of mainline or a subsystem tree (HEAD is used)
  LINUX_TARBALL=/path  a linux-*.tar.{xz,gz} release tarball
  otherwise            Debian's binary package linux-source-X.Y, fetched with a
                       private apt configuration under \$CACHE (the system's apt
                       sources are only read, for the archive's URI):
    BASE_PKG           the package (default: the newest linux-source-7.* offered)
    BASE_SUITE         the suites to look in, space separated
                       (default: "$DEFAULT_SUITES")
The newest version of the candidate packages over those suites wins; for
example BASE_PKG=linux-source-7.2 BASE_SUITE=unstable gives 7.2.y.
Each base is imported once and cached under \$CACHE/bases; a second run only
refreshes the package lists (a few seconds).
USAGE
}
[ "${1:-}" = -h ] || [ "${1:-}" = --help ] && { usage; exit 0; }
[ $# -eq 0 ] || { usage >&2; exit 2; }

# newest GLOB...: the last existing path of the expanded glob, or nothing.
newest() { local f last=; for f in "$@"; do [ -e "$f" ] && last=$f; done; echo "$last"; }

# import TARBALL ORIGIN DIR: extract TARBALL into DIR as one commit tagged $BASE_TAG.
import() {
	local tarball=$1 origin=$2 dir=$3 v when
	log "fetch: extracting $(basename "$tarball")"
	rm -rf "$dir.tmp" && mkdir -p "$dir.tmp"
	tar -xf "$tarball" -C "$dir.tmp" --strip-components=1
	log "fetch: committing the base tree"
	git -C "$dir.tmp" init -q
	# Debian's top-level .gitignore ignores every top-level path: add with -f.
	git -C "$dir.tmp" add -A -f
	v=$(make -s -C "$dir.tmp" kernelversion)
	# Dated like the tree itself, so that the base commit's id is the same on every machine.
	when=$(date -u -r "$dir.tmp/Makefile" '+%Y-%m-%dT%H:%M:%SZ')
	# and with a fixed identity (the environment wins over -c user.*)
	GIT_AUTHOR_DATE=$when GIT_COMMITTER_DATE=$when \
		GIT_AUTHOR_NAME="blk-adapt base import" GIT_AUTHOR_EMAIL="base@blk-adapt.invalid" \
		GIT_COMMITTER_NAME="blk-adapt base import" GIT_COMMITTER_EMAIL="base@blk-adapt.invalid" \
		git -C "$dir.tmp" commit -q -m "Linux $v ($origin)"
	git -C "$dir.tmp" tag "$BASE_TAG"
	git -C "$dir.tmp" gc -q --auto || true
	rm -rf "$dir" && mv "$dir.tmp" "$dir"
}

# pick_package: print "PACKAGE VERSION SUITE" of the newest candidate.
pick_package() {
	local pkgs p line best="" bv="" v suite
	if [ -n "${BASE_PKG:-}" ]; then
		pkgs=("$BASE_PKG")
	else
		mapfile -t pkgs < <(apt-cache "${aopt[@]}" pkgnames linux-source-7. | sort)
	fi
	for p in "${pkgs[@]}"; do
		# madison: "pkg | version | URI suite/main arch Packages"
		while IFS='|' read -r _ v line; do
			v=${v//[[:space:]]/}
			suite=$(awk '{print $2}' <<<"$line")
			suite=${suite%%/*}
			if [ -z "$bv" ] || dpkg --compare-versions "$v" gt "$bv"; then
				best="$p $v $suite" bv=$v
			fi
		done < <(apt-cache "${aopt[@]}" madison "$p" 2>/dev/null)
	done
	echo "$best"
}

mkdir -p "$CACHE/bases"
if [ -n "${LINUX_TREE:-}" ]; then
	[ -d "$LINUX_TREE/.git" ] || die "LINUX_TREE=$LINUX_TREE is not a git checkout"
	git -C "$LINUX_TREE" tag -f "$BASE_TAG" HEAD >/dev/null
	v=$(make -s -C "$LINUX_TREE" kernelversion)
	echo "base: Linux $v from git tree $LINUX_TREE ($(git -C "$LINUX_TREE" describe --always HEAD)), commit $(git -C "$LINUX_TREE" rev-parse "$BASE_TAG")"
	exit 0
elif [ -n "${LINUX_TARBALL:-}" ]; then
	[ -f "$LINUX_TARBALL" ] || die "LINUX_TARBALL=$LINUX_TARBALL does not exist"
	dir=$CACHE/bases/$(basename "$LINUX_TARBALL")
	[ -e "$dir/.git/refs/tags/$BASE_TAG" ] ||
		import "$LINUX_TARBALL" "tarball $(basename "$LINUX_TARBALL")" "$dir"
else
	apt=$CACHE/apt
	mkdir -p "$apt/lists/partial" "$apt/archives/partial"
	# The archive URI is read from the system's own apt sources.
	uri=$(awk '/^URIs:/ {print $2; exit}' /etc/apt/sources.list.d/*.sources 2>/dev/null || true)
	[ -n "$uri" ] || uri=$(awk '/^deb / {print $2; exit}' /etc/apt/sources.list 2>/dev/null || true)
	[ -n "$uri" ] || die "no Debian archive URI found in the system's apt sources"
	suites=${BASE_SUITE:-$DEFAULT_SUITES}
	for s in $suites; do
		echo "deb [signed-by=/usr/share/keyrings/debian-archive-keyring.gpg] $uri $s main"
	done >"$apt/sources.list"
	aopt=(-o "Dir::Etc::SourceList=$apt/sources.list" -o Dir::Etc::SourceParts=/dev/null
	      -o "Dir::State::Lists=$apt/lists" -o "Dir::Cache=$apt/cache"
	      -o Dir::State::status=/dev/null -o Debug::NoLocking=1 -o APT::Sandbox::User=root)
	log "fetch: apt-get update (suites: $suites; private configuration)"
	apt-get "${aopt[@]}" -q update >"$apt/update.log" 2>&1 ||
		die "apt-get update failed for the suites '$suites' (see $apt/update.log)"
	read -r pkg ver suite < <(pick_package; echo) || true
	[ -n "${pkg:-}" ] || die "no ${BASE_PKG:-linux-source-7.*} package is offered by the suites '$suites'.
Set BASE_PKG (for example linux-source-7.2) and/or BASE_SUITE (for example unstable),
or point LINUX_TREE at a kernel git checkout, or LINUX_TARBALL at a release tarball."
	log "fetch: newest candidate: $pkg $ver from $suite"
	dir=$CACHE/bases/${pkg}_$ver
	if [ ! -e "$dir/.git/refs/tags/$BASE_TAG" ]; then
		deb=$(newest "$apt/${pkg}_${ver/*:/}_"*.deb)
		if [ -z "$deb" ]; then
			log "fetch: downloading $pkg $ver"
			(cd "$apt" && apt-get "${aopt[@]}" -q download "$pkg=$ver" >/dev/null) ||
				die "apt-get download $pkg=$ver failed"
			deb=$(newest "$apt/${pkg}_${ver/*:/}_"*.deb)
			[ -n "$deb" ] || die "apt-get download $pkg=$ver left no .deb in $apt"
		fi
		rm -rf "$apt/x" && mkdir "$apt/x"
		dpkg-deb -x "$deb" "$apt/x"
		tarball=$(newest "$apt"/x/usr/src/linux-source-*.tar.*)
		[ -n "$tarball" ] || die "$(basename "$deb") holds no linux-source tarball"
		import "$tarball" "Debian package $pkg $ver from $suite" "$dir"
		rm -rf "$apt/x"
	fi
fi

ln -sfn "bases/$(basename "$dir")" "$CACHE/base"
v=$(make -s -C "$dir" kernelversion)
echo "base: Linux $v, $(git -C "$dir" log -1 --format=%s "$BASE_TAG" | sed 's/^[^(]*(\(.*\))$/\1/'), commit $(git -C "$dir" rev-parse "$BASE_TAG")"
