#!/usr/bin/env bash
# Measure the adaptive caps on your own disk, safely: the latency benchmark's
# read workloads only, every setting it changes restored, a tarball to mail.
set -euo pipefail
. "$(dirname "$0")/lib.sh"

usage() {
	cat <<USAGE
usage: scripts/try-disk.sh [-T MS[,MS...]] [-r ROUNDS] [-t SECONDS] [-q]
                           [-c NAME[,NAME...]] [-o DIR] [--force] DISK
Run as root on a kernel with the series (queue/adapt_lat_usec), on a whole
disk that nothing uses. Runs tools/testing/bench/latbench.sh's read workloads
on DISK (W1, W1p, W1s, W3 and the oracle sweep; they read the first 3 GiB,
never write): the adaptive caps at each target (default 20,50,100 ms on a
rotational disk, 1,2,5 ms on others) beside the static caps, Kyber and BFQ
at their defaults, and Kyber at each target (read_lat_nsec). Then writes
DIR/results.md (the goal tables), results.json, the plots (with
python3-matplotlib) and DIR.tar.gz to attach to a mail. DIR defaults to ./try-disk-DISK-DATE.
  -r, -t  rounds (default 3) and seconds per run (default 30)
  -q      short: one round of 6 s runs, no oracle sweep (about 4 minutes;
          not with -r or -t)
  -c      only these configurations (latbench.sh -c)
  --force also a disk that is mounted, swap, or part of an md/dm device
          (reads only, but it competes with their I/O and skews the figures)
Refuses a disk in use, a partition, a kernel without the series; restores
the scheduler (and its tunables), max_sectors_kb, nr_requests, async_depth,
lat_stats, adapt_lat_usec and nr_hugepages on exit, also on Ctrl-C; never
writes wbt_lat_usec (wbt throttles writes only; the wbt configuration is
left out); makes no cgroups (latbench.sh -G: the io.latency and iocost
peers would need two under the root, which the init system owns on most
systems); leaves tracefs alone if events are already enabled there. With
three targets a round is 51 runs, about 28 minutes of 30 s runs; progress
shows the time left.
USAGE
}
targets="" reps=3 secs=30 timing=0 out="" force=0 quick=0 only="" extra=()
while [ $# -gt 0 ]; do
	case "$1" in
	-T|-r|-t|-c|-o) [ $# -ge 2 ] || die "$1 needs a value" ;;&
	-T) targets=$2; shift 2 ;;
	-r) reps=$2 timing=1; shift 2 ;;
	-t) secs=$2 timing=1; shift 2 ;;
	-c) only=$2 extra+=(-c "$2"); shift 2 ;;
	-o) out=$2; shift 2 ;;
	-q) quick=1; shift ;;
	--force) force=1; shift ;;
	-h|--help) usage; exit 0 ;;
	-*) usage >&2; die "unknown option '$1'" ;;
	*) break ;;
	esac
done
[ $# -eq 1 ] || { usage >&2; die "name one disk"; }
disk=${1#/dev/}
[[ "$reps" =~ ^[1-9][0-9]*$ && "$secs" =~ ^[1-9][0-9]*$ ]] || die "-r and -t take positive integers"
if [ "$quick" = 1 ]; then
	[ "$timing" = 0 ] || die "-q is one round of 6 s runs: not with -r or -t"
	reps=1 secs=6 extra+=(-q)
fi
sys=/sys/class/block/$disk q=/sys/block/$disk/queue

# --- refusals: nothing is changed before these pass ---
[ "$(id -u)" = 0 ] || die "run as root: the benchmark sets queue attributes of $disk"
for c in fio python3; do command -v "$c" >/dev/null || die "$c is needed (Debian: apt-get install $c)"; done
[ -e "$sys" ] || die "no block device '$disk' (see lsblk)"
[ ! -e "$sys/partition" ] || die "$disk is a partition: name the whole disk"
[ -d "$q" ] || die "$disk is not a disk with a request queue"
if [ ! -e "$q/adapt_lat_usec" ] || [ ! -e "$q/lat_stats" ]; then
	die "this kernel ($(uname -r)) lacks the series: no queue/adapt_lat_usec on $disk"
fi
[ "$(cat "$sys/size")" -ge $((3 << 21)) ] || die "$disk is smaller than the 3 GiB the workloads read"
[ -e /proc/sys/vm/nr_hugepages ] || die "W1 needs huge pages: this kernel lacks CONFIG_HUGETLBFS"
grep -qs '^[^ ]* /dev/hugepages hugetlbfs ' /proc/mounts ||
	die "W1 needs hugetlbfs on /dev/hugepages (mount -t hugetlbfs none /dev/hugepages)"
if [ "$force" = 0 ]; then
	parts=("$disk")
	for p in "$sys"/"$disk"*/partition; do [ -e "$p" ] && parts+=("$(basename "$(dirname "$p")")"); done
	for p in "${parts[@]}"; do
		dev=$(cat "/sys/class/block/$p/dev")
		if awk -v d="$dev" '$3 == d { found = 1 } END { exit !found }' /proc/self/mountinfo; then
			die "/dev/$p is mounted: use an unused disk (--force reads it anyway)"
		fi
		if awk -v d="/dev/$p" 'NR > 1 && $1 == d { found = 1 } END { exit !found }' /proc/swaps; then
			die "/dev/$p is swap: use an unused disk (--force reads it anyway)"
		fi
		for h in "/sys/class/block/$p/holders"/*; do
			[ -e "$h" ] || continue
			die "/dev/$p is part of $(basename "$h") ($(cat "$h/dm/name" 2>/dev/null || cat "$h/md/level" 2>/dev/null || echo in use)): use an unused disk (--force reads it anyway)"
		done
	done
	# what the checks above miss (btrfs, other namespaces): an exclusive
	# open fails with EBUSY while anyone holds the device
	for p in "${parts[@]}"; do
		python3 -c 'import os, sys; os.close(os.open(sys.argv[1], os.O_RDONLY | os.O_EXCL))' \
			"/dev/$p" 2>/dev/null ||
			die "/dev/$p is in use (a file system, swap, md or dm holds it): use an unused disk (--force reads it anyway)"
	done
fi
if [ -z "$targets" ]; then
	if [ "$(cat "$q/rotational")" = 1 ]; then targets=20,50,100; else targets=1,2,5; fi
fi
out=${out:-try-disk-$disk-$(date +%Y%m%d-%H%M%S)}
[ ! -e "$out" ] || die "$out exists: name another directory with -o"

# --- every setting the benchmark changes, saved, and restored on exit ---
value() { sed -n 's/.*\[\(.*\)\].*/\1/p;t;p' "$1"; }	# the scheduler's choice, or the value
saved=()
save() { local v; v=$(value "$1" 2>/dev/null) && saved+=("$1" "$v"); true; }
restore() {
	local i f v
	# the controller off while the rest goes back; its start, last, turns
	# wbt's default off again if it was on
	echo 0 >"$q/adapt_lat_usec" 2>/dev/null
	for ((i = 0; i < ${#saved[@]}; i += 2)); do
		f=${saved[i]} v=${saved[i + 1]}
		[ -e "$f" ] || continue
		[ "$(value "$f")" = "$v" ] && continue
		# 0 is the disk's own default: written back as a number it would
		# stay as the user's setting
		if [[ "$f" == */max_sectors_kb ]]; then
			echo 0 >"$f" 2>/dev/null
			[ "$(value "$f")" = "$v" ] && continue
		fi
		echo "$v" >"$f" 2>/dev/null || echo "try-disk: could not restore $f to $v" >&2
	done
	echo "$adapt" >"$q/adapt_lat_usec" 2>/dev/null ||
		echo "try-disk: could not restore $q/adapt_lat_usec to $adapt" >&2
}
# the scheduler before its tunables and nr_requests, nr_requests before async_depth
adapt=$(cat "$q/adapt_lat_usec")
save "$q/scheduler"
for f in "$q"/iosched/*; do save "$f"; done
# (not wbt_lat_usec: the benchmark never writes it, and a write would put
# wbt in manual mode for good)
for f in nr_requests async_depth max_sectors_kb lat_stats adapt_min_sectors_kb; do
	[ ! -e "$q/$f" ] || save "$q/$f"
done
save /proc/sys/vm/nr_hugepages
bench="" stopped=0
cleanup() {
	# a second Ctrl-C, a hang-up, or a tee killed with us must not cut the
	# restore short
	trap '' INT TERM HUP PIPE
	set +e
	if [ -n "$bench" ] && kill -0 "$bench" 2>/dev/null; then
		stopped=1
		kill -TERM -- "-$bench" 2>/dev/null || true
		wait "$bench" 2>/dev/null || true
		# a killed fio leaves its huge page buffer (latbench.sh names it by its pid)
		rm -f "/dev/hugepages/latbench.$bench"
	fi
	restore
	[ "$stopped" = 0 ] || log "try-disk: the benchmark stopped"
	log "try-disk: settings of $disk restored"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM
trap 'exit 129' HUP

# tracefs: record the controller's steps only when nobody else traces
notrace=(-n)
tr=/sys/kernel/tracing
if [ -w "$tr/set_event" ] && [ -z "$(cat "$tr/set_event")" ] &&
   [ "$(cat "$tr/current_tracer")" = nop ]; then
	notrace=()
fi

# the disk as the user had it, before anything is switched
sysinfo=$(
	echo "kernel: $(uname -srvm)"
	for f in vendor model rev; do echo "$f: $(cat "/sys/block/$disk/device/$f" 2>/dev/null || echo -)"; done
	for f in rotational max_hw_sectors_kb max_sectors_kb nr_requests scheduler write_cache; do
		echo "queue/$f: $(cat "$q/$f")"
	done
	echo "queue_depth: $(cat "/sys/block/$disk/device/queue_depth" 2>/dev/null || echo -)"
	# a user's own io.latency or iocost shapes every run: say so in the results
	echo "io.cost.qos: $(sed -n "s/^$(cat "/sys/block/$disk/dev") //p" /sys/fs/cgroup/io.cost.qos 2>/dev/null)"
	echo "command: scripts/try-disk.sh -T $targets -r $reps -t $secs ${extra[*]} $disk"
)

# the schedulers the configurations need (modules load on demand)
for s in kyber bfq; do
	if [ -z "$only" ] || [[ ",$only," == *",$s,"* || ",$only," == *",$s-"* ]]; then
		echo "$s" >"$q/scheduler" 2>/dev/null ||
			die "$disk cannot use the $s scheduler (CONFIG_MQ_IOSCHED_KYBER, CONFIG_IOSCHED_BFQ); -c leaves it out"
	fi
done

mkdir -p "$out"
out=$(realpath "$out")
echo "$sysinfo" >"$out/system.txt"
log "try-disk: $disk ($(sed -n 's/^model: //p' "$out/system.txt")), targets $targets ms," \
	"$reps round(s) of $secs s runs, reads only; results in $out"
# its own session: a Ctrl-C here stops it (and its fio) through cleanup
BLKADAPT_OUT=$out setsid "$REPO/tools/testing/bench/latbench.sh" -w w1,w1p,w1s,w3,oracle \
	-k -G -T "$targets" -r "$reps" -t "$secs" "${notrace[@]}" "${extra[@]}" "$disk" &
bench=$!
wait "$bench" || die "the benchmark failed (its output is above)"
bench=""
python3 "$REPO/tools/testing/bench/report.py" "$out" >/dev/null
tar -czf "$out.tar.gz" -C "$(dirname "$out")" "$(basename "$out")"
log "try-disk: goal tables in $out/results.md; please attach $out.tar.gz to your reply"
