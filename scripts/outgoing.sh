#!/usr/bin/env bash
# Prepare the series for the mailing lists: outgoing/v<N>/ with a cover letter
# filled from the latest benchmark results, and To/Cc from get_maintainer.pl.
# Nothing is sent.
set -euo pipefail
. "$(dirname "$0")/lib.sh"

usage() {
	cat <<USAGE
usage: scripts/outgoing.sh [-v N] [--no-rfc] [--range-diff OLD_BASE..OLD_TIP] [--b4]
Writes outgoing/vN/ (default N=1): 'git format-patch --cover-letter --base'
of the prepared tree ($TREE, base $BASE_TAG), subject prefix "RFC PATCH"
unless --no-rfc. The cover letter gets the problem statement, the design, the
test matrix, the W1 and goal tables of Documentation/bench/hdd7200/results.md
(the 7200 rpm disk model); every mail gets
To: (lists) and Cc: (maintainers) from the tree's scripts/get_maintainer.pl.
--range-diff adds 'git range-diff' against an earlier version of the series
(a commit range in $TREE) to the cover letter, after the revision notes of
Documentation/series-changes.md. Send with
'git send-email outgoing/vN/*.patch' (try --dry-run first); CI never sends.
--b4 also enrolls a scratch clone of the tree with 'b4 prep' (same cover
letter, To/Cc from 'b4 prep --auto-to-cc') and writes the mails b4 would send
to outgoing/vN/b4/ with 'b4 send -o' (an offline dry run, nothing is sent).
USAGE
}
ver=1 prefix="RFC PATCH" old="" b4=0
while [ $# -gt 0 ]; do
	case "$1" in
	-v) [ $# -ge 2 ] || die "-v needs a number"; ver=$2; shift 2 ;;
	--no-rfc) prefix="PATCH"; shift ;;
	--range-diff) [ $# -ge 2 ] || die "--range-diff needs OLD_BASE..OLD_TIP"; old=$2; shift 2 ;;
	--b4) b4=1; shift ;;
	-h|--help) usage; exit 0 ;;
	*) usage >&2; die "unknown argument '$1'" ;;
	esac
done
[[ "$ver" =~ ^[1-9][0-9]*$ ]] || die "-v wants a positive number, not '$ver'"
[ -d "$TREE/.git" ] || die "no prepared tree at $TREE: run scripts/prepare-tree.sh"
results=$REPO/Documentation/bench/hdd7200/results.md
[ -f "$results" ] || die "no $results: run scripts/bench.sh and commit its results first"
for t in '### W1' '### Goal'; do
	grep -q "^$t" "$results" || die "$results has no '$t' table: rerun scripts/bench.sh (full, not -q)"
done
[ "$b4" = 0 ] || command -v b4 >/dev/null || die "--b4: b4 is not installed (scripts/deps.sh)"
if [ -n "$old" ]; then
	for r in "${old%%..*}" "${old##*..}"; do
		git -C "$TREE" rev-parse -q --verify "$r^{commit}" >/dev/null ||
			die "--range-diff: '$old' is not a commit range in $TREE"
	done
fi

out=$REPO/outgoing/v$ver
rm -rf "$out"
mkdir -p "$out"
log "outgoing: format-patch v$ver into $out"
git -C "$TREE" format-patch -q --cover-letter --base="$BASE_TAG" -v "$ver" \
	--subject-prefix="$prefix" -o "$out" "$BASE_TAG"..HEAD

# To: the lists, Cc: the people, over all patches
log "outgoing: get_maintainer.pl"
gm=(perl "$TREE/scripts/get_maintainer.pl" --no-rolestats --no-git --no-git-fallback --no-tree)
mapfile -t pats < <(find "$out" -name '*.patch' ! -name '*-0000-cover-letter.patch' | sort)
mapfile -t addrs < <(cd "$TREE" && "${gm[@]}" "${pats[@]}" | sort -u)
to=() cc=()
for a in "${addrs[@]}"; do
	case "$a" in
	*@vger.kernel.org*|*@lists.*) to+=("$a") ;;
	*) cc+=("$a") ;;
	esac
done
[ ${#to[@]} -gt 0 ] || die "get_maintainer.pl found no list for the series"

mapfile -t commits < <(git -C "$TREE" log --reverse --format='%h ("%s")' "$BASE_TAG"..HEAD)
first=${commits[0]}
cover=$(ls "$out"/*0000-cover-letter.patch)
kcases() { grep -c 'KUNIT_CASE(' "$TREE/block/$1"; }
meta() { sed -n '1s/^Kernel \([^,]*\), .* \([0-9]*\) round(s) of \([0-9]*\) s runs, \([0-9-]*\) .*/kernel \1, \2 rounds of \3 s, \4/p' "$results"; }
body=$(mktemp)
{
	cat <<TEXT
In 2004 libata raised the largest request on LBA48 disks from 128 KiB to
32 MiB. Throughput went up, but a 32 MiB transfer keeps a disk busy for
most of a second, and small requests wait behind it. The driver said the
block layer should decide the limit, and the block layer said only the
driver knows the device. The answer predicted then was adaptive: the block
layer times requests, caps the request size when latency gets too long,
and uses the same timing to tune the queue depth. Today max_sectors_kb is
a static 4 MiB by default, AHCI's 64 KiB segments keep requests at or
below about 10 MiB, and request size is adapted nowhere.

This series:

 - 1 (linux-block, for stable): rq->stats_sectors is 16 bits wide and
   wraps at 32 MiB, which blk-iocost reads today; it can be applied on
   its own.
 - 2-4 (linux-ide): AHCI takes 4 MiB PRD entries on controllers tested
   with them (only QEMU's ich9-ahci so far) or where libahci.large_prd=1
   asks for them, so that LBA48 requests of 32 MiB really form; every
   other controller keeps 64 KiB entries. libata reports the limit in
   force in the Block Limits VPD page. A kselftest checks both, and that
   libata.force's max_sec bounds every limit reported.
 - 5-6 (linux-block): per-queue latency accounting. Queue time and device
   time and their sum, by operation and request size, in log-linear
   histograms (error at most 12.5%), at most 8 KiB per CPU. Per-CPU and
   lock-free on completion, one queue-flag test when off; nothing on the
   frozen-queue exit path allocates or waits. Shown in debugfs and in a
   tracepoint, switched on in sysfs. KUnit and a kselftest.
 - 7 (linux-block): an rq_qos policy may refuse a REQ_NOWAIT bio that
   would have to wait (->throttle_nowait); it then ends with
   BLK_STS_AGAIN, as when no tag is free, and io_uring retries it from a
   worker. At the first refusal no other policy sees the bio. wbt,
   iolatency and iocost are unchanged.
 - 8 (linux-block): adaptive request size and depth caps, an rq_qos
   policy. Given a p99 target for small requests, it bounds the bytes of
   large requests in flight, learns the device's bandwidth and
   per-command time, and spends the budget as a size cap and a depth cap.
   Small requests, journal, swap, reclaim and real-time I/O pass the
   large requests it holds back, and it opens up gradually when nobody
   needs protection. KUnit (control law against a device model) and a
   kselftest (null_blk and emulated SATA disks, with fio verify). It does
   not help writeback yet (see the benchmark notes).
 - 9 (linux-block): tools/block/adapt_monitor.py, one line per disk and
   second with what the controller saw in its last window (the small
   requests' p99, MB/s) and decided (budget, caps, action); --json for
   scripts. The debugfs state gains the last window's figures for it.
   A kselftest checks it against debugfs and fio.

Tested in QEMU (x86_64, TCG) on AHCI ide-hd disks and null_blk: KUnit
blk-lat ($(kcases blk-lat-test.c) cases) and blk-adapt ($(kcases blk-adapt-test.c) cases, the control law against
device models); kselftests drivers/ata, block/lat_stats, block/adapt and
block/adapt_monitor (null_blk and emulated SATA disks, fio verify on
the adaptive caps' loads); a build
after every patch; checkpatch --strict, W=1, sparse and kernel-doc on the
files each patch touches; the block kselftests' functional checks on a
lockdep kernel, with a clean console.

Results on a model of a 7200 rpm desktop disk (zoned, seeking, rotating,
SPTF queue, read-ahead and write-back caches; an nbdkit filter behind
QEMU's AHCI): an 8 MiB read stream at iodepth 4 next to a 4 KiB prober at
20 IOPS. Medians of interleaved runs in one boot, with ratios to the best
static max_sectors_kb ($(meta)):

TEXT
	sed -n '/^### W1/,/^### /p' "$results" | grep '^|'
	cat <<TEXT

Against the oracle: the same load with the controller off and the
stream's own block size and depth swept, chosen with hindsight. For each
target, the controller against the oracle point with the most throughput
whose p99 meets it:

TEXT
	# every goal table, each under its target
	awk '/^### /{on = /^### Goal at /; if (on) {t = $4 " " $5; if (n++) print ""; print "At " t ":"}}
		on && /^\|/' "$results"
	cat <<'TEXT'

Where no oracle point meets a target (a random 4 KiB read next to any
stream cannot get under it), the controller goes to its floor and still
gives up throughput there: its bandwidth estimate follows the capped
stream down. Every figure was measured under emulation (QEMU TCG, a disk
model); numbers from real SATA disks are the main thing this RFC asks
for. The other models (5400 rpm laptop disk, SATA and NVMe SSD, QEMU's
throttle bucket), the plots and the traces are in the project's docs.

To measure it on your own disk: build your kernel with the series (on
Debian, make bindeb-pkg), boot it, and as root run the harness's
scripts/try-disk.sh on a disk that nothing uses (it refuses a mounted
disk, swap or a member of an md/dm device; it only reads, and restores
every queue setting it changes, also on Ctrl-C). "-q sdX" takes about
4 minutes; without -q, 3 rounds of 30 s runs with the oracle sweep take
about 25 minutes a round. Watch it with tools/block/adapt_monitor.py, and
reply with the results.md it writes inline (the goal tables) and its
tarball (the JSON, the plots, the kernel version and the disk's model)
attached or linked.

TEXT
	# The base commit's subject names its origin: "Linux X.Y.Z (Debian package ...)".
	echo "The base is $(git -C "$TREE" log -1 --format=%s "$BASE_TAG");"
	echo "base-commit below names that tree, not a mainline commit."
	echo "The series starts at $first."
	echo
	echo "Changes in this revision, and the history of the earlier ones:"
	echo
	sed -n '/^## /,$p' "$REPO/Documentation/series-changes.md"
	if [ -n "$old" ]; then
		echo
		echo "Changes since the previous version (git range-diff):"
		echo
		git -C "$TREE" range-diff --no-color "$old" "$BASE_TAG"..HEAD
	fi
} >"$body"
python3 - "$cover" "$body" "$prefix" "$ver" <<'PY'
import sys
cover, body, prefix, ver = sys.argv[1:]
s = open(cover).read()
s = s.replace("*** SUBJECT HERE ***", "Adaptive request size and depth for SATA (and other) disks")
s = s.replace("*** BLURB HERE ***", open(body).read().rstrip())
open(cover, "w").write(s)
PY

if [ "$b4" = 1 ]; then
	work=$BUILD/b4-work
	mkdir -p "$BUILD/logs"
	log "outgoing: b4 prep in a scratch clone ($work), b4 send -o $out/b4"
	rm -rf "$work"
	git clone -q "$TREE" "$work"
	{ sed -n 's/^Subject: \[[^]]*\] //p' "$cover" | head -n 1; echo; cat "$body"; } >"$work.cover"
	(
		cd "$work"
		git checkout -q -b "blk-adapt"
		# -o never sends; b4 only wants to know that mail would go by SMTP
		git config sendemail.smtpserver /bin/false
		b4 -q prep -e "$BASE_TAG"
		b4 -q prep --force-revision "$ver"
		[ "$prefix" = PATCH ] || b4 -q prep --set-prefixes RFC
		EDITOR="cp $work.cover" b4 -q prep --edit-cover
		b4 -q prep --auto-to-cc
		b4 -q send --no-sign -o "$out/b4"
	) >"$BUILD/logs/b4.log" 2>&1 || { cat "$BUILD/logs/b4.log" >&2; die "b4 failed"; }
	log "outgoing: b4 wrote $(find "$out/b4" -name '*.eml' | wc -l) mails in $out/b4"
fi
rm -f "$body"

hdr=$(printf 'To: %s\n' "${to[@]}"; [ ${#cc[@]} -eq 0 ] || printf 'Cc: %s\n' "${cc[@]}")
for p in "$out"/*.patch; do
	awk -v hdr="$hdr" 'done == 0 && /^Subject: / { print hdr; done = 1 } { print }' "$p" >"$p.tmp"
	mv "$p.tmp" "$p"
done
log "outgoing: $(find "$out" -name '*.patch' | wc -l) mails in $out; To: ${to[*]}"
log "outgoing: check with: git send-email --dry-run $out/*.patch"
