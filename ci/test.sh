#!/usr/bin/env bash
# The project's test command: from a fresh Debian 12 machine to one summary line.
set -euo pipefail
. "$(dirname "$0")/../scripts/lib.sh"

usage() {
	cat <<USAGE
usage: ci/test.sh [--ktap FILE]...
Runs every gate of the project in order and prints, last, one line
"N passed, N failed, N skipped". Exit status 0 only when nothing failed.
  1. install missing Debian packages (scripts/deps.sh)
  2. fetch the base tree and print its exact version (scripts/fetch-base.sh)
  3. apply the series with quilt and with git am; both must give one tree
  4. checkpatch.pl --strict on every patch; shellcheck on the harness
  5. build the nbdkit disk models and validate them host-side against their
     profiles (tools/testing/diskmodel/validate.py); build the simulator
     with the prepared tree's control law and check the law's properties on
     the five profiles and part of the device grid (adaptsim check, KTAP)
  6. build after every patch, incrementally, and run the quality gates on
     the files it changes: W=1, sparse, kernel-doc (scripts/check-bisect.sh,
     scripts/check-gates.sh); build block/ and drivers/ata/ for i386
  7. boot the base kernel and the patched one in QEMU and run the series'
     kselftests and KUnit suites; the console must be free of oops, BUG,
     WARNING and lockdep reports; on the patched one, cross-check the latency
     accounting against blktrace/blkparse/btt (tools/testing/vm/lat-blktrace.sh)
  8. boot it with libahci.large_prd=0 and run the ATA limits test (64 KiB
     S/G entries kept)
  9. boot the patched kernel again with a throttled (hdd profile) disk and
     run the adaptive caps test on it; then scripts/try-disk.sh there: its
     refusals, a short run and a Ctrl-C, then the benchmark's peers at a
     target (tools/testing/vm/try-disk-test.sh)
 10. build the debug kernel (lockdep, KASAN, kmemleak, DEBUG_LIST, fault
     injection: tools/testing/vm/debug.config), boot it with a second disk
     without NCQ, run the block tests' functional checks and the fault tests
     (block/adapt_faults.sh); its console must be free of lockdep and KASAN
     reports, and a kmemleak scan after the tests must find nothing
Logs and KTAP files go to $BUILD/results. Set BLK_ADAPT_CACHE to use
another cache directory (an empty one reproduces CI).
  --ktap FILE  also count the results of FILE, a KTAP file of a step run
               before (.ci/run's demo) in the closing line
USAGE
}
extra=()
while [ $# -gt 0 ]; do
	case "$1" in
	-h|--help) usage; exit 0 ;;
	--ktap) [ -f "${2:-}" ] || die "--ktap needs an existing KTAP file"; extra+=("$(realpath "$2")"); shift 2 ;;
	*) usage >&2; exit 2 ;;
	esac
done

res=$BUILD/results
rm -rf "$res" && mkdir -p "$res/logs"
host=$res/host.ktap
n=0
echo "TAP version 13" >"$host"

stage() { log "=== stage: $*"; }
# result OK? NAME: record one host-side result.
result() {
	n=$((n + 1))
	if [ "$1" = 0 ]; then echo "ok $n $2"; else echo "not ok $n $2"; fi | tee -a "$host"
}
# gate NAME CMD...: run CMD with its output in $GATE_LOG, record the result;
# show the log's tail on failure.
GATE_LOG=""
gate() {
	local name=$1 rc=0
	shift
	GATE_LOG=$res/logs/$((n + 1)).log
	"$@" >"$GATE_LOG" 2>&1 || rc=$?
	[ "$rc" = 0 ] || tail -n 25 "$GATE_LOG" | sed 's/^/# /' | tee -a "$host"
	result "$rc" "$name"
	return "$rc"
}
finish() {
	stage "summary"
	local files=("${extra[@]}" "$host")
	# The base kernel's results are expected to fail: only the patched ones count.
	for f in "$res"/diskmodel.ktap "$res"/adaptsim.ktap "$res"/bisect.ktap "$res"/patched/*.ktap "$res"/patched-64k/kselftest.ktap \
		"$res"/patched-hdd/kselftest.ktap "$res"/patched-hdd/try-disk.ktap "$res"/debug/*.ktap; do
		[ -f "$f" ] && files+=("$f")
	done
	log "total time $(( $(date +%s) - T0 ))s; the last line sums up every KTAP result"
	python3 "$REPO/tools/testing/ktap_summary.py" "${files[@]}" | tee "$res/summary.txt"
	! grep -q '^FAIL' "$res/summary.txt"
}
trap 'echo "1..$n" >>"$host"' EXIT

stage "dependencies"
gate "deps: Debian packages installed" "$REPO/scripts/deps.sh" || { finish; exit 1; }

stage "base tree"
if gate "base: fetch and commit the base tree" "$REPO/scripts/fetch-base.sh"; then
	grep '^base:' "$GATE_LOG"
else
	finish; exit 1
fi

stage "apply the series (quilt push -a, git am)"
if gate "apply: quilt push -a and git am give the same tree" \
	"$REPO/scripts/prepare-tree.sh" --check-quilt --force; then
	sed -n 's/^\[ *[0-9]*s\] //p' "$GATE_LOG"
else
	finish; exit 1
fi

stage "checkpatch --strict, shellcheck"
while read -r p; do
	# spdxcheck.py needs Debian's python3-ply and python3-git: use Debian's python3.
	# The base tree is a source package without history: checkpatch cannot
	# look up the commit a Fixes: tag names (UNKNOWN_COMMIT_ID).
	gate "checkpatch --strict: $p" env PATH="/usr/bin:$PATH" \
		"$TREE/scripts/checkpatch.pl" --strict --quiet --ignore UNKNOWN_COMMIT_ID \
		"$REPO/patches/$p" || true
done < <(series_patches)
mapfile -t sh < <(cd "$REPO" && git ls-files '*.sh' .ci/run)
run_shellcheck() { (cd "$REPO" && shellcheck "$@"); }
gate "shellcheck: ${#sh[@]} harness scripts" run_shellcheck "${sh[@]}" || true

stage "device models: build the nbdkit filter, validate it against the profiles"
if gate "diskmodel: build the nbdkit filter" build_diskmodel; then
	"$REPO/tools/testing/diskmodel/validate.py" "$DISKMODEL" >"$res/diskmodel.ktap" \
		2>"$res/logs/diskmodel.stderr" || true
	sed -n 's/^# /  /p; s/^not ok [0-9]* /  FAILED: /p' "$res/diskmodel.ktap"
fi

stage "simulator: the law of the prepared tree against the device models"
# Before the bisect checks the tree out at other commits: the law is the tip's.
if gate "adaptsim: build with block/blk-adapt-law.c of the prepared tree" build_adaptsim; then
	# 20 s on 2 cores; a hang (a model that makes no progress) must not stall CI
	sim_rc=0
	timeout 600 "$ADAPTSIM" check >"$res/adaptsim.ktap" 2>"$res/logs/adaptsim.stderr" || sim_rc=$?
	grep '^not ok' "$res/adaptsim.ktap" || true
	# a check that failed has its "not ok"; any other exit is a result of its own
	if [ "$sim_rc" != 0 ] && ! grep '^not ok' "$res/adaptsim.ktap" | grep -v '# TODO' >/dev/null; then
		result 1 "adaptsim check exited with status $sim_rc ($res/logs/adaptsim.stderr)"
	fi
fi

stage "build after every patch (incremental), W=1, sparse, kernel-doc"
base_img=$BUILD/bzImage-base
"$REPO/scripts/check-bisect.sh" --save-base "$base_img" 2>"$res/logs/bisect.stderr" |
	tee "$res/bisect.ktap" | grep -v '^TAP\|^1\.\.' | sed 's/^\(not \)\{0,1\}ok [0-9]* //' |
	while read -r line; do log "$line"; done || true	# its KTAP decides, below
[ -f "$BZIMAGE" ] || { result 1 "build: patched kernel image exists"; finish; exit 1; }
grep -q '^not ok' "$res/bisect.ktap" && { finish; exit 1; }

stage "32-bit: the series' objects built for i386"
# On i386 an 8-byte xchg() is a build error (__xchg_wrong_size() carries an
# error attribute); a per-CPU operation of an unsupported size only leaves an
# undefined __bad_size_call_parameter(), and a 64-bit division written with
# '/' an undefined __udivdi3() (the kernel links no libgcc): the objects must
# reference none of them.
build_i386() {
	local bad
	"$REPO/scripts/build.sh" --i386 block/ drivers/ata/ || return 1
	bad=$(nm -u "$I386_OBJ"/block/*.o "$I386_OBJ"/drivers/ata/*.o |
		grep -E '_wrong_size|__bad_size_call_parameter|__u?(div|mod)di3' || true)
	[ -z "$bad" ] || { echo "undefined on i386: $bad"; return 1; }
	log "i386: $(find "$I386_OBJ/block" "$I386_OBJ/drivers/ata" -name '*.o' | wc -l) objects"
}
gate "build: block/ and drivers/ata/ for i386 (no 8-byte atomics or 64-bit divisions)" build_i386 || true

stage "kselftests"
gate "kselftest: build and install $KSELFTEST_TARGETS" "$REPO/scripts/build-kselftests.sh" || { finish; exit 1; }

# boot NAME KERNEL [RUN-VM OPTION...] [-- GUEST-TESTS OPTION...]: run the test
# job in a VM (by default two fast disks, the second one limited to 128 sectors
# with libata.force) and check the console.
boot() {
	local name=$1 kernel=$2 rc=0 vm=() job=()
	shift 2
	while [ $# -gt 0 ] && [ "$1" != -- ]; do vm+=("$1"); shift; done
	[ $# -gt 0 ] && shift
	job=("$@")
	[ ${#vm[@]} -gt 0 ] || vm=(-n 2 -a "libata.force=2.00:max_sec_128")
	log "vm: $name kernel ($(basename "$kernel"))"
	"$REPO/tools/testing/vm/run-vm.sh" -q -k "$kernel" -t 900 -o "$res/$name" "${vm[@]}" \
		-- "$REPO/tools/testing/vm/guest-tests.sh" "${job[@]}" "$KSELFTEST_DIR" || rc=$?
	result "$([ "$rc" -le 1 ] && echo 0 || echo 1)" "boot: $name kernel ran the test job (status $rc)"
	bad=$(grep -nE 'BUG:|WARNING:|Oops|Kernel panic|INFO: (possible|task)|locking correctness validator|lockdep is turned off|general protection|KASAN|UBSAN' \
		"$res/$name/console.log" || true)
	[ -z "$bad" ] || echo "$bad" | head -n 20 | sed 's/^/# /' | tee -a "$host"
	result "$([ -z "$bad" ] && echo 0 || echo 1)" "boot: $name kernel console free of oops, BUG, WARNING and lockdep reports"
}

stage "boot the base kernel (no series): what the patches change"
boot base "$base_img"
# On the base kernel the ATA limits test must show the old limits.
maxreq=$(sed -n 's/.*sda: largest issued request \([0-9]*\) sectors.*/\1/p' "$res/base/kselftest.ktap" | head -n 1)
log "base kernel: largest request of a 32 MiB read: ${maxreq:-?} sectors"
result "$([ -n "$maxreq" ] && [ "$maxreq" -le 21504 ] && echo 0 || echo 1)" \
	"base kernel splits a 32 MiB read at <= 10.5 MiB (${maxreq:-?} sectors)"

stage "boot the patched kernel and run the tests"
boot patched "$BZIMAGE" -- --blktrace
grep -E '^# # ' "$res/patched/kselftest.ktap" | sed 's/^# # /  /' || true

stage "boot the patched kernel with libahci.large_prd=0: 64 KiB S/G entries kept"
boot patched-64k "$BZIMAGE" -n 1 -a libahci.large_prd=0 -- -t drivers/ata:ata_limits.sh
grep -E '^# # ' "$res/patched-64k/kselftest.ktap" | sed 's/^# # /  /' || true

stage "boot the patched kernel with a throttled disk: the adaptive caps"
boot patched-hdd "$BZIMAGE" -p hdd -n 1 -- -t block:adapt.sh --throttled --try-disk
grep -E '^# # ' "$res/patched-hdd/kselftest.ktap" | sed 's/^# # /  /' || true

stage "debug kernel (lockdep, KASAN, kmemleak, fault injection): build, boot, functional tests, faults"
if gate "build: debug kernel (lean + debug.config)" "$REPO/scripts/build.sh" --debug; then
	# two disks, the second one without NCQ (queue depth 1); acpi=noirq:
	# see debug.config; KASAN and kmemleak make the boot about twice as long
	boot debug "$DEBUG_BZIMAGE" -n 2 -t 2400 -a "libata.force=2.00:noncq acpi=noirq" -- \
		-t block:lat_stats.sh -t block:adapt.sh -t block:adapt_faults.sh -t block:adapt_monitor.sh \
		--no-timing --faults
	# a clean console means something only if lockdep was running
	gate "boot: debug kernel runs lockdep" \
		grep -q 'Lock dependency validator' "$res/debug/console.log" || true
	gate "boot: debug kernel runs KASAN" \
		grep -q 'KernelAddressSanitizer initialized' "$res/debug/console.log" || true
	gate "boot: debug kernel scanned for leaks (kmemleak.ktap)" \
		test -f "$res/debug/kmemleak.ktap" || true
	grep -E '^# # ' "$res/debug/kselftest.ktap" | sed 's/^# # /  /' || true
fi
finish
