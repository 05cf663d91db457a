#!/usr/bin/env bash
# Latency benchmark, run inside the VM (scripts/bench.sh boots it): the fio
# workloads of tools/testing/bench/jobs against a set of block-layer
# configurations, interleaved, every run's fio JSON kept.
set -euo pipefail

usage() {
	cat <<'USAGE'
usage: latbench.sh [-r REPS] [-t SECONDS] [-T MS[,MS...]] [-q] [-c NAME[,NAME...]]
                   [-w WORKLOAD[,WORKLOAD...]] [-n] [-k] [-G] DISK
Runs inside the test VM, on DISK (e.g. sda, 8 GiB or more; W2 overwrites
4-6 GiB, W5 makes an ext4 file system on all of it):
  W1  the stream (8 MiB reads, iodepth 4, hugepage buffers) + a 4 KiB
      prober at 20 IOPS, for every configuration: max_sectors_kb 128, 1280,
      4096, 32767 under mq-deadline; Kyber and BFQ at 4096; wbt on at 4096;
      the adaptive caps at each target (max_sectors_kb 32767); and the read
      peers at each target T, at 4096: Kyber with read_lat_nsec T,
      io.latency (the prober's cgroup with target T) and iocost (io.cost.qos
      rpct=99 rlat=T, its default cost model);
  W1p W1 with ordinary (malloc) buffers: 4096, 32767, the adaptive caps and
      the read peers;
  W1s the prober already running when the stream starts (2 s in), its p99
      over the whole run, no ramp excluded: as W1p;
  W2  buffered 1 MiB writes (writeback) + the same prober, for 4096 under
      mq-deadline, Kyber, BFQ and wbt, the adaptive caps and wbt at each
      target (wbt throttles writes only: it is no read peer);
  W3  the stream alone, for 4096, 32767 and the adaptive caps;
  the oracle frontier: W1 with the controller off and the stream's own
      block size (256k, 512k, 1m, 2m, 4m, 8m) x iodepth (1, 2, 4) swept;
  W5  ext4 on the disk: cp of a 1.5 GiB file, over and over, next to a
      reader of 4 KiB random buffered reads of another file at 20 IOPS, for
      4096, 32767, Kyber, BFQ, wbt, the adaptive caps and wbt at each target.
The stream and the prober run as two fio processes of one job file
(--section), in cgroups of their own (latbench-stream, latbench-prober)
where cgroup2's io controller is there, for every configuration alike.
-T: the latency targets in ms (default 20,50); each gives configurations
    adapt-<MS>ms, kyber-<MS>ms, wbt-<MS>ms, iolat-<MS>ms and iocost-<MS>ms.
    The adapt runs record the block_adapt_step tracepoint in r<round>.trace.
REPS rounds (default 2), each with every configuration once, in an order that
rotates from round to round (the oracle sweep's and W5's rounds come last);
SECONDS per run (default 15, plus 2 s of ramp).
-q: a short version (1 round, 6 s runs, no oracle sweep).
-c: only the configurations named (e.g. -c static-4096,adapt-20ms), and the
    oracle sweep only if "oracle" is among them.
-w: only these workloads (w1, w1p, w1s, w2, w3, oracle, w5; default all);
    w1,w1p,w1s,w3,oracle only read the disk.
-n: leave tracefs alone (no block_adapt_step traces are recorded).
-k: keep wbt_lat_usec as it is (writing it puts wbt in manual mode for
    good); the wbt configurations are left out.
-G: no cgroups: iolat-* and iocost-* are left out (they are also left out,
    with a message, without cgroup2 at /sys/fs/cgroup or its io controller);
    otherwise two cgroups are made under its root and removed at the end.
Without W2 and W5, fio runs with --readonly: nothing can write the disk.
Prints each run as it starts, with the time the rest will take.
Writes $BLKADAPT_OUT/bench/<workload>/<configuration>/r<round>.json (fio's),
r<round>.stat (the disk's stat file before and after the run),
r<round>.cgroups (each cgroup's io.stat line before and after it), for W5
r<round>.copy (bytes the disk wrote, milliseconds) and $BLKADAPT_OUT/bench/meta.json.
USAGE
}

reps=2 secs=15 quick=0 only="" targets=20,50 wls=,w1,w1p,w1s,w2,w3,oracle,w5, trace=1 keepwbt=0
cgroups=1
while [ $# -gt 0 ]; do
	case "$1" in
	-r) reps=$2; shift 2 ;;
	-t) secs=$2; shift 2 ;;
	-T) targets=$2; shift 2 ;;
	-q) quick=1; reps=1; secs=6; shift ;;
	-c) only=",$2,"; shift 2 ;;
	-w) wls=",$2,"; shift 2 ;;
	-n) trace=0; shift ;;
	-k) keepwbt=1; shift ;;
	-G) cgroups=0; shift ;;
	-h|--help) usage; exit 0 ;;
	-*) usage >&2; exit 2 ;;
	*) break ;;
	esac
done
[ $# -eq 1 ] || { usage >&2; exit 2; }
[[ "$reps" =~ ^[1-9][0-9]*$ && "$secs" =~ ^[1-9][0-9]*$ ]] || { usage >&2; exit 2; }
[[ "$targets" =~ ^[1-9][0-9]*(,[1-9][0-9]*)*$ ]] ||
	{ echo "latbench: -T takes target milliseconds, e.g. 20,50, not '$targets'" >&2; exit 2; }
for w in ${wls//,/ }; do
	[[ ",w1,w1p,w1s,w2,w3,oracle,w5," == *",$w,"* ]] ||
		{ echo "latbench: no workload '$w' (w1, w1p, w1s, w2, w3, oracle, w5)" >&2; exit 2; }
done
# wl NAME: whether workload NAME runs
wl() { [[ "$wls" == *",$1,"* ]]; }
disk=$1 q=/sys/block/$1/queue
[ -d "$q" ] || { echo "latbench: no disk $disk" >&2; exit 1; }
has_adapt=1
if [ ! -e "$q/adapt_lat_usec" ]; then
	echo "latbench: kernel without adapt_lat_usec (no series?): the adapt-* configurations are left out"
	has_adapt=0
fi
out=${BLKADAPT_OUT:?not running inside the VM}/bench
jobs=$(dirname "$(realpath "$0")")/jobs lib=$(dirname "$(realpath "$0")")/../lib
mkdir -p "$out"

# cgroup2 with the io controller, for io.latency and iocost
cg=/sys/fs/cgroup
if [ "$cgroups" = 1 ] && ! grep -qw io "$cg/cgroup.controllers" 2>/dev/null; then
	echo "latbench: no cgroup2 io controller at $cg: the iolat-* and iocost-* configurations are left out"
	cgroups=0
fi

# Configurations: NAME max_sectors_kb scheduler wbt_lat_usec adapt_lat_usec
# PEER, where PEER is "-", kyber:<read_lat_nsec>, iolat:<io.latency target,
# us> or iocost:<io.cost.qos rlat, us>
CONFIGS=(
	"static-128 128 mq-deadline 0 0 -"
	"static-1280 1280 mq-deadline 0 0 -"
	"static-4096 4096 mq-deadline 0 0 -"
	"static-32767 32767 mq-deadline 0 0 -"
	"kyber 4096 kyber 0 0 kyber:2000000"
	"bfq 4096 bfq 0 0 -"
	"wbt 4096 mq-deadline 75000 0 -"
)
for t in ${targets//,/ }; do
	CONFIGS+=("adapt-${t}ms 32767 mq-deadline 0 $((t * 1000)) -"
		"kyber-${t}ms 4096 kyber 0 0 kyber:$((t * 1000000))"
		"wbt-${t}ms 4096 mq-deadline $((t * 1000)) 0 -"
		"iolat-${t}ms 4096 mq-deadline 0 0 iolat:$((t * 1000))"
		"iocost-${t}ms 4096 mq-deadline 0 0 iocost:$((t * 1000))")
done
# Filters on CONFIGS, before the workloads take their configurations from it.
# keep PREDICATE: only the configurations for which PREDICATE CONFIG succeeds.
keep() {
	local c kept=()
	for c in "${CONFIGS[@]}"; do "$1" "$c" && kept+=("$c"); done
	CONFIGS=("${kept[@]}")
}
not_wbt() { [[ "$1" != "wbt "* && "$1" != wbt-* ]]; }
not_adapt() { [[ "$1" != adapt-* ]]; }
not_cgroup() { [[ "$1" != *" iolat:"* && "$1" != *" iocost:"* ]]; }
picked() { [[ "$only" == *",${1%% *},"* ]]; }
[ "$keepwbt" = 0 ] || keep not_wbt
[ "$has_adapt" = 1 ] || keep not_adapt
[ "$cgroups" = 1 ] || keep not_cgroup
if [ -n "$only" ]; then
	for n in ${only//,/ }; do
		[ "$n" = oracle ] || printf '%s\n' "${CONFIGS[@]}" | grep -q "^$n " ||
			{ echo "latbench: no configuration '$n'" >&2; exit 2; }
	done
	keep picked
	[[ "$only" == *,oracle,* ]] || quick=1
fi
# named NAME...: the configurations of those names (adapt: every target)
named() {
	local c n
	for c in "${CONFIGS[@]}"; do
		# shellcheck disable=SC2053  # NAME may be a glob
		for n in "$@"; do [[ "${c%% *}" == $n ]] && echo "$c"; done
	done
	true
}
# the adaptive caps and the read peers at each target
mapfile -t W1P_CONFIGS < <(named static-4096 static-32767 'adapt-*' 'kyber-*' 'iolat-*' 'iocost-*')
W1S_CONFIGS=("${W1P_CONFIGS[@]}")
mapfile -t W2_CONFIGS < <(named static-4096 kyber bfq wbt 'adapt-*' 'wbt-*')
mapfile -t W3_CONFIGS < <(named static-4096 static-32767 'adapt-*')
mapfile -t W5_CONFIGS < <(named static-4096 static-32767 kyber bfq wbt 'adapt-*' 'wbt-*')
# W1 takes CONFIGS itself: all but wbt at a target
not_wbt_at() { [[ "$1" != wbt-* ]]; }
keep not_wbt_at
[ "$quick" = 0 ] || wls=${wls/,oracle,/,}
# a workload left out (-w) has no configurations
wl w1 || CONFIGS=()
wl w1p || W1P_CONFIGS=()
wl w1s || W1S_CONFIGS=()
wl w2 || W2_CONFIGS=()
wl w3 || W3_CONFIGS=()
wl w5 || W5_CONFIGS=()

mm=$(cat "/sys/block/$disk/dev") iolat_on=0 iocost_on=0 made=0 rot=$(cat "$q/rotational")
# peers_off: io.latency's target and iocost off, where a configuration set them
peers_off() {
	[ "$iolat_on" = 0 ] || echo "$mm target=max" >"$cg/latbench-prober/io.latency"
	[ "$iocost_on" = 0 ] || echo "$mm enable=0" >"$cg/io.cost.qos"
	iolat_on=0 iocost_on=0
}
# peers_state: io.latency's target and iocost's state on the disk
peers_state() {
	[ "$made" = 1 ] || return 0
	printf ' iolat:%s iocost:%s' "$(sed -n "s/^$mm //p" "$cg/latbench-prober/io.latency")" \
		"$(sed -n "s/^$mm .*\(enable=[01]\).*\(rpct=[0-9.]*\) \(rlat=[0-9]*\).*/\1,\2,\3/p" \
			"$cg/io.cost.qos" | sed 's/^enable=0.*/off/')"
}
# iocost_fresh: iocost's vrate back to 100%, as when it is first enabled.
# Turning it off keeps the vrate the last run left (a run after one at a
# lower target would start throttled); the kernel resets it only when the
# disk changes class (blk-iocost.c: ioc_refresh_params_disk()), so flip
# queue/rotational and back, each followed by a write of io.cost.qos; and
# put read_ahead_kb back, which a rotational queue raises to 2 x io_opt
# (blk_apply_bdi_limits()). cleanup() puts rotational back if cut short.
iocost_fresh() {
	local ra

	ra=$(cat "$q/read_ahead_kb")
	echo $((1 - rot)) >"$q/rotational"
	echo "$mm enable=0" >"$cg/io.cost.qos"
	echo "$rot" >"$q/rotational"
	echo "$mm enable=0" >"$cg/io.cost.qos"
	echo "$ra" >"$q/read_ahead_kb"
}

# apply "NAME MAXKB SCHED WBT ADAPT PEER": stop the controller and the
# peers, set the rest, start the one named, then read every setting back: a
# run must never go under another configuration's settings (a controller
# left on, a clamped value), so a mismatch stops the benchmark.
apply() {
	local name maxkb sched wbt lat peer got want

	read -r name maxkb sched wbt lat peer <<<"$1"
	# a cap above the disk's limit is the limit (NVMe: QEMU's MDTS, 512 KiB)
	[ "$maxkb" -le "$(cat "$q/max_hw_sectors_kb")" ] || maxkb=$(cat "$q/max_hw_sectors_kb")
	[ "$has_adapt" = 0 ] || echo 0 >"$q/adapt_lat_usec"
	peers_off
	# a scheduler of its own for every run: re-selecting the one in use
	# keeps its state (Kyber's domain depths)
	echo none >"$q/scheduler"
	echo "$sched" >"$q/scheduler"
	echo "$maxkb" >"$q/max_sectors_kb"
	[ -e "$q/wbt_lat_usec" ] && [ "$keepwbt" = 0 ] && echo "$wbt" >"$q/wbt_lat_usec"
	got="$(sed -n 's/.*\[\(.*\)\].*/\1/p' "$q/scheduler") $(cat "$q/max_sectors_kb")"
	want="$sched $maxkb"
	case "$peer" in
	kyber:*)
		echo "${peer#*:}" >"$q/iosched/read_lat_nsec"
		got+=" $(cat "$q/iosched/read_lat_nsec")" want+=" ${peer#*:}" ;;
	iolat:*)
		echo "$mm target=${peer#*:}" >"$cg/latbench-prober/io.latency"
		iolat_on=1 ;;
	iocost:*)
		iocost_fresh
		echo "$mm enable=1 ctrl=user rpct=99 rlat=${peer#*:} wpct=0 wlat=0" >"$cg/io.cost.qos"
		iocost_on=1 ;;
	esac
	# io.latency and iocost: on in their own configuration, off in every other
	got+=$(peers_state)
	if [ "$made" = 1 ]; then
		want+=" iolat:$([ "$iolat_on" = 0 ] || echo "target=${peer#*:}")"
		want+=" iocost:$([ "$iocost_on" = 0 ] && echo off || echo "enable=1,rpct=99.00,rlat=${peer#*:}")"
	fi
	[ "$has_adapt" = 0 ] || echo "$lat" >"$q/adapt_lat_usec"
	if [ -e "$q/wbt_lat_usec" ] && [ "$keepwbt" = 0 ]; then
		got+=" $(cat "$q/wbt_lat_usec")" want+=" $wbt"
	fi
	if [ "$has_adapt" = 1 ]; then
		got+=" $(cat "$q/adapt_lat_usec")" want+=" $lat"
	fi
	[ "$got" = "$want" ] ||
		{ echo "latbench: $name: the queue has '$got', not '$want'" >&2; exit 1; }
}

ev=/sys/kernel/tracing/events/blk_adapt/block_adapt_step
# trace_on|trace_off FILE: record the controller's steps of one run into FILE.
trace_on() {
	[ "$trace" = 1 ] && [ -d "$ev" ] || return 0
	echo >/sys/kernel/tracing/trace
	echo 1 >"$ev/enable"
}
trace_off() {
	[ "$trace" = 1 ] && [ -d "$ev" ] || return 0
	echo 0 >"$ev/enable"
	grep -v '^#' /sys/kernel/tracing/trace >"$1" || true
}

# cgstat: each cgroup's io.stat line for the disk
cgstat() {
	local j
	for j in stream prober; do
		echo "$j $(sed -n "s/^$mm //p" "$cg/latbench-$j/io.stat")"
	done
}

# run WORKLOAD JOBFILE CONFIG-NAME ROUND BS QD
done_runs=0 started=0 fios=()
run() {
	local dir=$out/$1/$3 iomem=mmaphuge:/dev/hugepages/latbench.$$ left vars

	[ "$1" != w1p ] || iomem=malloc
	mkdir -p "$dir"
	# the runs so far tell how long one takes; before the first, its
	# seconds, 2 s of ramp or delay and about 1 s of set-up
	if [ "$done_runs" = 0 ]; then
		started=$(date +%s)
		left=$(( (total_runs * (secs + 3) + 59) / 60 ))
	else
		left=$(( (($(date +%s) - started) * (total_runs - done_runs) / done_runs + 59) / 60 ))
	fi
	done_runs=$((done_runs + 1))
	printf '[%s] run %d/%d, about %d min left: %s %s round %s (bs %s, iodepth %s)\n' \
		"$(date +%T)" "$done_runs" "$total_runs" "$left" "$1" "$3" "$4" "$5" "$6"
	[[ "$3" != adapt-* ]] || trace_on
	cat "/sys/block/$disk/stat" >"$dir/r$4.stat"
	[ "$made" = 0 ] || cgstat >"$dir/r$4.cgroups"
	# the job files' parameters
	vars=(DEV="$disk" RUNTIME="$secs" BS="$5" QD="$6" IOMEM="$iomem" FSDIR="$fs")
	if grep -q '^\[stream\]' "$jobs/$2" && grep -q '^\[prober\]' "$jobs/$2"; then
		# one fio per job (in its cgroup, if made), their JSON merged: the
		# same for every configuration, whether io.latency or iocost need it
		local j
		for j in stream prober; do
			(if [ "$made" = 1 ] && ! echo "$BASHPID" >"$cg/latbench-$j/cgroup.procs"; then
				echo "latbench: cannot move fio into $cg/latbench-$j" >&2
				exit 1
			fi
			exec env "${vars[@]}" fio "${fio_ro[@]}" --section="$j" --output-format=json \
				--output="$dir/r$4.$j.part" "$jobs/$2") &
			fios+=($!)
		done
		for j in "${fios[@]}"; do
			wait "$j" || { echo "latbench: fio failed in $dir (round $4)" >&2; exit 1; }
		done
		fios=()
		"$lib/fio_json.py" --merge "$dir/r$4.json" "$dir/r$4.stream.part" "$dir/r$4.prober.part"
		rm "$dir/r$4.stream.part" "$dir/r$4.prober.part"
	else
		env "${vars[@]}" fio "${fio_ro[@]}" --output-format=json --output="$dir/r$4.json" "$jobs/$2"
	fi
	cat "/sys/block/$disk/stat" >>"$dir/r$4.stat"
	[ "$made" = 0 ] || cgstat >>"$dir/r$4.cgroups"
	[[ "$3" != adapt-* ]] || trace_off "$dir/r$4.trace"
	rm -f "/dev/hugepages/latbench.$$"
}

# every round, start one configuration further down the list
rotate() {	# rotate ROUND ITEM...: the items, starting at ROUND mod count
	local r=$1 n i
	shift
	n=$#
	for ((i = 0; i < n; i++)); do
		echo "${@:$(((r + i) % n + 1)):1}"
	done
}

fio_ro=()
wl w2 || wl w5 || fio_ro=(--readonly)
fs=/mnt/latbench-fs copier=""
huge=$(cat /proc/sys/vm/nr_hugepages)
echo $((huge + 80)) >/proc/sys/vm/nr_hugepages
cleanup() {
	[ -z "$copier" ] || kill "$copier" 2>/dev/null || true
	[ "$trace" = 0 ] || [ ! -d "$ev" ] || echo 0 >"$ev/enable"
	[ "$has_adapt" = 0 ] || echo 0 >"$q/adapt_lat_usec"
	peers_off || true
	[ "$(cat "$q/rotational")" = "$rot" ] || echo "$rot" >"$q/rotational" || true
	# fio of a split run (a failed or interrupted one): it holds the cgroups
	if [ ${#fios[@]} -gt 0 ]; then
		kill "${fios[@]}" 2>/dev/null || true
		wait "${fios[@]}" 2>/dev/null || true
	fi
	if [ "$made" = 1 ]; then
		rmdir "$cg/latbench-prober" "$cg/latbench-stream" ||
			echo "latbench: could not remove $cg/latbench-{prober,stream}" >&2
		[ "$io_was_on" = 1 ] || echo -io >"$cg/cgroup.subtree_control" || true
	fi
	echo "$huge" >/proc/sys/vm/nr_hugepages
	! mountpoint -q "$fs" || umount "$fs"
}
io_was_on=1
trap cleanup EXIT
# The cgroups, and io.latency, iocost and the controller attached (off) to
# the disk from the start, so that every run has the same rq_qos policies
# (each attaches at its first use); a write of io.cost.qos turns wbt on
# where it is off by default, which apply() overrides.
if [ "$cgroups" = 1 ]; then
	if [ -e "$cg/latbench-prober" ] || [ -e "$cg/latbench-stream" ]; then
		echo "latbench: $cg/latbench-* left by another run" >&2
		exit 1
	fi
	grep -qw io "$cg/cgroup.subtree_control" || { io_was_on=0; echo +io >"$cg/cgroup.subtree_control"; }
	made=1
	mkdir "$cg/latbench-prober" "$cg/latbench-stream"
	echo "$mm target=max" >"$cg/latbench-prober/io.latency"
	echo "$mm enable=0" >"$cg/io.cost.qos"
fi
if [ "$has_adapt" = 1 ] && [ "$(cat "$q/adapt_lat_usec")" = 0 ]; then
	echo 1000000 >"$q/adapt_lat_usec"
	echo 0 >"$q/adapt_lat_usec"
fi
# the stream's 8 MiB x 4 buffers need 16 huge pages of 2 MiB (W1p uses none)
if [ ${#CONFIGS[@]} -gt 0 ] || [ ${#W1S_CONFIGS[@]} -gt 0 ] || [ ${#W3_CONFIGS[@]} -gt 0 ] ||
   wl oracle; then
	got=$(cat /proc/sys/vm/nr_hugepages)
	[ "$got" -ge $((huge + 16)) ] || { echo "latbench: only $((got - huge)) huge pages" \
		"could be reserved (memory too fragmented?); W1p alone needs none" >&2; exit 1; }
fi

python3 - "$out/meta.json" "$disk" "$reps" "$secs" "$targets" <<'PY'
import json, os, platform, sys, time
q = f"/sys/block/{sys.argv[2]}/queue/"
rd = lambda f: open(q + f).read().strip()
json.dump({"kernel": platform.release(), "date": time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime()),
           "disk": sys.argv[2], "rounds": int(sys.argv[3]), "seconds": int(sys.argv[4]),
           "max_hw_sectors_kb": rd("max_hw_sectors_kb"), "rotational": rd("rotational"),
           "queue_depth": (open(f"/sys/block/{sys.argv[2]}/device/queue_depth").read().strip()
                           if os.path.exists(f"/sys/block/{sys.argv[2]}/device/queue_depth")
                           else rd("nr_requests") + " (nr_requests)"),
           "targets_ms": [int(t) for t in sys.argv[5].split(",")],
           "cpus": os.cpu_count()}, open(sys.argv[1], "w"), indent=1)
PY

# sweep WORKLOAD JOBFILE BS QD ROUND CONFIG...: one run per configuration
sweep() {
	local wl=$1 job=$2 bs=$3 qd=$4 r=$5 cfg

	shift 5
	while read -r cfg; do
		apply "$cfg"
		run "$wl" "$job" "${cfg%% *}" "$r" "$bs" "$qd"
		[ "$wl" != w2 ] || sync
	done < <(rotate "$r" "$@")
}

total_runs=$(( reps * (${#CONFIGS[@]} + ${#W1P_CONFIGS[@]} + ${#W1S_CONFIGS[@]} +
	${#W2_CONFIGS[@]} + ${#W3_CONFIGS[@]} + ${#W5_CONFIGS[@]}) ))
! wl oracle || total_runs=$((total_runs + reps * 18))
for r in $(seq 1 "$reps"); do
	sweep w1 w1-stream-prober.fio 8m 4 "$r" "${CONFIGS[@]}"
	sweep w1p w1-stream-prober.fio 8m 4 "$r" "${W1P_CONFIGS[@]}"
	sweep w1s w1s-prober-first.fio 8m 4 "$r" "${W1S_CONFIGS[@]}"
	sweep w2 w2-writeback-prober.fio 1m 1 "$r" "${W2_CONFIGS[@]}"
	sweep w3 w3-stream.fio 8m 4 "$r" "${W3_CONFIGS[@]}"
done
if wl oracle; then
	apply "oracle 32767 mq-deadline 0 0 -"
	for r in $(seq 1 "$reps"); do
		while read -r pt; do
			run oracle w1-stream-prober.fio "bs${pt% *}-qd${pt#* }" "$r" "${pt% *}" "${pt#* }"
		done < <(rotate "$r" {256k,512k,1m,2m,4m,8m}\ {1,2,4})
	done
fi

# W5 last: it replaces the disk's contents with a file system.
[ ${#W5_CONFIGS[@]} -gt 0 ] || exit 0
printf '[%s] w5: ext4 on %s, a 1.5 GiB file to copy, a 512 MiB file to read\n' "$(date +%T)" "$disk"
apply "${W5_CONFIGS[0]}"
mkfs.ext4 -q -F "/dev/$disk"
mkdir -p "$fs"
mount -t ext4 "/dev/$disk" "$fs"
dd if=/dev/zero of="$fs/src" bs=1M count=1536 status=none
dd if=/dev/zero of="$fs/reader" bs=1M count=512 status=none
sync
# w5 ROUND CONFIG: cp over and over during the reader's run.
w5() {
	local dir=$out/w5/${2%% *} w0 w1 t0 t1

	apply "$2"
	sync
	echo 3 >/proc/sys/vm/drop_caches
	# timeout: a kill of it reaches cp too (its own process group)
	# shellcheck disable=SC2016  # expanded by the inner sh
	timeout 3600 sh -c 'while :; do cp "$1/src" "$1/dst"; done' sh "$fs" &
	copier=$!
	read -r _ _ _ _ _ _ w0 _ <"/sys/block/$disk/stat"
	t0=$(date +%s%N)
	run w5 w5-fs-reader.fio "${2%% *}" "$1" - -
	read -r _ _ _ _ _ _ w1 _ <"/sys/block/$disk/stat"
	t1=$(date +%s%N)
	kill "$copier"
	wait "$copier" 2>/dev/null || true
	copier=""
	echo "$(( (w1 - w0) * 512 )) $(( (t1 - t0) / 1000000 ))" >"$dir/r$1.copy"
	sync
}
for r in $(seq 1 "$reps"); do
	while read -r cfg; do
		w5 "$r" "$cfg"
	done < <(rotate "$r" "${W5_CONFIGS[@]}")
done
