#!/usr/bin/env bash
# Quality gates on the files one commit touches: W=1 and sparse on its objects,
# kernel-doc on its sources; only warnings the base tree does not have fail.
set -euo pipefail
. "$(dirname "$0")/lib.sh"

usage() {
	cat <<USAGE
usage: scripts/check-gates.sh --baseline TIP
       scripts/check-gates.sh REV
With $TREE checked out at REV and built (scripts/check-bisect.sh does both),
checks the files REV changes:
  - make W=1 C=2 on the changed .c files that the lean config builds: compiler
    warnings at W=1 and sparse's, on lines of the changed files;
  - scripts/kernel-doc -none -Wall on the changed .c and .h files.
Warnings are compared without line numbers against the base tree's: a warning
the base has for that file is not new. New ones are printed, exit status 1.
--baseline records the base's warnings for every file that the series up to
TIP changes (tree at $BASE_TAG and built) in $BUILD/gates-base.txt.
Sparse: Debian 12's sparse 0.6.4 predates __typeof_unqual__, which the tree's
headers use, so it runs with -D__typeof_unqual__=__typeof__ (SPARSE_CMD).
USAGE
}
case "${1:-}" in
-h|--help) usage; exit 0 ;;
"") usage >&2; exit 2 ;;
esac
[ $# -eq 1 ] || [ "$1" = --baseline ] || { usage >&2; exit 2; }
SPARSE_CMD=${SPARSE_CMD:-sparse -D__typeof_unqual__=__typeof__}
command -v sparse >/dev/null || die "sparse is not installed (scripts/deps.sh)"
baseline=$BUILD/gates-base.txt

if [ "$1" = --baseline ]; then
	[ $# -eq 2 ] || { usage >&2; exit 2; }
	mapfile -t files < <(git -C "$TREE" diff --name-only --diff-filter=M "$BASE_TAG" "$2")
else
	git -C "$TREE" rev-parse -q --verify "$1^{commit}" >/dev/null || die "no commit $1 in $TREE"
	mapfile -t files < <(git -C "$TREE" diff-tree --no-commit-id --name-only -r --diff-filter=AM "$1")
	[ -f "$baseline" ] || die "no $baseline: run scripts/check-gates.sh --baseline first"
fi

objs=() srcs=()
for f in "${files[@]}"; do
	case "$f" in
	*.c) srcs+=("$f"); [ -e "$OBJ/${f%.c}.o" ] && objs+=("${f%.c}.o") ;;
	*.h) srcs+=("$f") ;;
	esac
done

# warnings: "FILE: tool: message" for the files in srcs, without line numbers
warnings() {
	local out=$BUILD/logs/gates.log re
	mkdir -p "$BUILD/logs"
	: >"$out"
	if [ ${#objs[@]} -gt 0 ]; then
		kmake W=1 C=2 CHECK="$SPARSE_CMD" "${objs[@]}" >>"$out" 2>&1 ||
			{ cat "$out" >&2; die "make W=1 C=2 failed"; }
	fi
	[ ${#srcs[@]} -eq 0 ] || (cd "$TREE" && scripts/kernel-doc -none -Wall "${srcs[@]}") >>"$out" 2>&1 || true
	re=$(printf '%s\n' "${srcs[@]}" | sed 's/[.[\*^$]/\\&/g' | paste -sd'|')
	[ -n "$re" ] || return 0
	sed -E -e "s|$TREE/||g" -e 's|^\.\./linux/||' "$out" |
		sed -nE "s#^(warning: |Warning: )?($re):[0-9]+(:[0-9]+)?:? *(warning|error|Warning)?:? *(.*)\$#\2: \5#p" |
		sort -u
}

if [ "$1" = --baseline ]; then
	warnings >"$baseline"
	log "gates: base has $(wc -l <"$baseline") warning(s) in ${#srcs[@]} file(s) the series changes"
	exit 0
fi
new=$(warnings | comm -23 - "$baseline")
log "gates: $1: ${#objs[@]} object(s) at W=1 C=2, ${#srcs[@]} file(s) through kernel-doc"
if [ -n "$new" ]; then
	printf '%s\n' "$new"
	exit 1
fi
