#!/usr/bin/env bash
# Configure and build the guest kernel from the prepared tree (out of tree).
set -euo pipefail
. "$(dirname "$0")/lib.sh"

usage() {
	cat <<USAGE
usage: scripts/build.sh [--debug | --i386] [--config-only] [MAKE-TARGET...]
Installs what is missing first (Debian packages, the base tree, the prepared
tree: scripts/deps.sh, fetch-base.sh, prepare-tree.sh), then configures
$OBJ from 'make tinyconfig' plus $LEAN_CONFIG
(every option set there that the tree's Kconfig knows must survive
olddefconfig, or the build stops; options the series adds are skipped on
commits before the one that adds them), then runs make (default target:
bzImage) with -j\$(nproc), through ccache when present. Incremental: it
reconfigures only when the fragment or a Kconfig file changed.
  --debug        build the debug kernel instead: the same plus
                 $DEBUG_CONFIG (lockdep and friends),
                 in $DEBUG_OBJ
  --i386         configure for 32-bit x86 instead: the same plus
                 $I386_CONFIG, in $I386_OBJ
                 (for building the series' objects, e.g. block/ drivers/ata/)
  --config-only  stop after configuring
USAGE
}
config_only=0
targets=()
frags=("$LEAN_CONFIG")
for a in "$@"; do
	case "$a" in
	-h|--help) usage; exit 0 ;;
	--config-only) config_only=1 ;;
	--debug) OBJ=$DEBUG_OBJ BZIMAGE=$DEBUG_BZIMAGE frags+=("$DEBUG_CONFIG") ;;
	--i386) OBJ=$I386_OBJ BZIMAGE=$I386_OBJ/arch/x86/boot/bzImage frags+=("$I386_CONFIG")
		export ARCH=i386 ;;
	-*) usage >&2; exit 2 ;;
	*) targets+=("$a") ;;
	esac
done
[ ${#targets[@]} -gt 0 ] || targets=(bzImage)
ensure_tree
mkdir -p "$OBJ"

stamp=$OBJ/.lean-config.sha
want=$( (cat "${frags[@]}"; git -C "$TREE" ls-files -s '*Kconfig*') | sha256sum | cut -d' ' -f1)
if [ ! -f "$OBJ/.config" ] || [ "$(cat "$stamp" 2>/dev/null)" != "$want" ]; then
	log "build: configuring (tinyconfig + $(for f in "${frags[@]}"; do basename "$f"; done | paste -sd+))"
	kmake -s tinyconfig >/dev/null
	"$TREE/scripts/kconfig/merge_config.sh" -m -O "$OBJ" "$OBJ/.config" "${frags[@]}" >/dev/null
	kmake -s olddefconfig >/dev/null
	bad=0
	while IFS='=' read -r k v; do
		if ! git -C "$TREE" grep -q -E "^(menu)?config ${k#CONFIG_}\$" -- '*Kconfig*'; then
			log "build: $k is not in this tree's Kconfig, skipped"
			continue
		fi
		got=$(sed -n "s/^$k=//p" "$OBJ/.config")
		if [ "$v" = n ]; then [ -z "$got" ] && continue; fi
		[ "$got" = "$v" ] && continue
		echo "build: $k=$v requested, config has '${got:-unset}'" >&2
		bad=1
	done < <(cat "${frags[@]}" | grep -E '^CONFIG_[A-Z0-9_]+=' |
		 awk -F= '!($1 in v) { k[++n] = $1 } { v[$1] = $0 } END { for (i = 1; i <= n; i++) print v[k[i]] }')
	[ "$bad" = 0 ] || die "the lean config fragment does not apply (missing dependencies?)"
	echo "$want" >"$stamp"
fi
[ "$config_only" = 1 ] && exit 0
log "build: make ${targets[*]} ($(git -C "$TREE" log -1 --format='%h %s'))"
kmake -s "${targets[@]}"
log "build: done: $BZIMAGE"
