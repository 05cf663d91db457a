#!/usr/bin/env bash
# Guest job: scripts/try-disk.sh on a scratch disk, as a user would run it on
# theirs. KTAP on standard output.
set -euo pipefail

usage() {
	cat <<'USAGE'
usage: try-disk-test.sh DISK
Runs inside the test VM on scratch disk DISK (its data is overwritten):
  - refusals: an unknown option, a disk that does not exist, a partition,
    the disk mounted, a partition of it mounted, the disk under a
    device-mapper target, the disk held open exclusively (what the mount
    and holder checks cannot see); each leaves every setting as it was;
  - a short run (-q, static-4096 and the controller at 50 ms): exit 0, the
    goal table, the JSON with every read workload, the tarball, not one
    write to the disk, every setting back;
  - a Ctrl-C during a run of the controller: exit 130, every setting back
    (the scheduler and its tunables, wbt's mode, the tracepoint too), no
    fio left, no huge page buffer left;
  - then the benchmark's read peers at a target and a static cap
    (latbench.sh, which reads every setting back): in each run the stream
    and the prober read in cgroups of their own (each cgroup's reads are its
    job's), iocost charged the stream, and no cgroup, no iocost, no io
    controller and no change of rotational or read_ahead_kb is left behind.
Settings are odd values set beforehand, so that a restore cannot pass by
accident; wbt stays in its default mode, which a write would end. Writes
its runs under $BLKADAPT_OUT/try-disk; puts the disk's settings back at
the end.
USAGE
}
case "${1:-}" in -h|--help) usage; exit 0 ;; esac
if [ $# -ne 1 ] || [ ! -b "/dev/$1" ]; then usage >&2; exit 2; fi
disk=$1 q=/sys/block/$1/queue
try=$(realpath "$(dirname "$0")/../../../scripts/try-disk.sh")
out=${BLKADAPT_OUT:?not running inside the VM}/try-disk
rm -rf "$out" && mkdir -p "$out"
n=0 failed=0

ok() {	# ok RC NAME
	n=$((n + 1))
	if [ "$1" = 0 ]; then echo "ok $n $2"; else echo "not ok $n $2"; failed=1; fi
}

# settings: what try-disk.sh must leave as it found it
settings() {
	local f
	for f in scheduler nr_requests async_depth max_sectors_kb wbt_lat_usec lat_stats \
		adapt_lat_usec iosched/read_lat_nsec iosched/write_lat_nsec; do
		printf '%s=%s ' "$f" "$(cat "$q/$f" 2>/dev/null || echo -)"
	done
	printf 'wbt_mode=%s ' "$(cat "/sys/kernel/debug/block/$disk/rqos/wbt/enabled" 2>/dev/null || echo -)"
	printf 'trace=%s ' "$(cat /sys/kernel/tracing/events/blk_adapt/block_adapt_step/enable)"
	echo "hugepages=$(cat /proc/sys/vm/nr_hugepages)"
}
# odd values: kyber with its own targets, a small queue and cap, the
# controller on at 70 ms, 3 huge pages
orig=(scheduler "$(sed 's/.*\[\(.*\)\].*/\1/' "$q/scheduler")" nr_requests "$(cat "$q/nr_requests")"
	max_sectors_kb "$(cat "$q/max_sectors_kb")" adapt_lat_usec "$(cat "$q/adapt_lat_usec")")
hugepages=$(cat /proc/sys/vm/nr_hugepages)
echo kyber >"$q/scheduler"
echo 3000000 >"$q/iosched/read_lat_nsec"
echo 7000000 >"$q/iosched/write_lat_nsec"
echo 32 >"$q/nr_requests"
echo 512 >"$q/max_sectors_kb"
echo 70000 >"$q/adapt_lat_usec"
echo 3 >/proc/sys/vm/nr_hugepages
before=$(settings)

# refuses RC PATTERN ARG...: try-disk.sh ARG... exits RC, says PATTERN, changes nothing
refuses() {
	local rc=$1 pat=$2 got=0
	shift 2
	"$try" "$@" >"$out/refusal.log" 2>&1 || got=$?
	[ "$got" = "$rc" ] && grep -q "$pat" "$out/refusal.log" && [ "$(settings)" = "$before" ] && return 0
	echo "# exit $got (not $rc): $(tail -n 2 "$out/refusal.log")"
	echo "# settings now: $(settings)"
	return 1
}

# refused_mounted DEV: with an ext4 on /dev/DEV mounted, try-disk.sh refuses the disk
refused_mounted() {
	local rc=0
	mkfs.ext4 -q -F "/dev/$1"
	mkdir -p /mnt/try-disk && mount -t ext4 "/dev/$1" /mnt/try-disk
	refuses 1 "/dev/$1 is mounted" "$disk" || rc=1
	umount /mnt/try-disk
	return "$rc"
}

echo "KTAP version 1"
echo "1..11"
echo "# settings before: $before"
rc=0; refuses 1 "unknown option" --bogus "$disk" || rc=1
ok "$rc" "try-disk: an unknown option is refused"
rc=0; refuses 1 "no block device" "no_such_disk" || rc=1
ok "$rc" "try-disk: a disk that does not exist is refused"

# one partition from 1 MiB on (an MBR written by hand: no fdisk needed)
rc=0
{
	dd if=/dev/zero bs=446 count=1 status=none
	printf '\x00\x00\x00\x00\x83\x00\x00\x00\x00\x08\x00\x00\x00\x00\x20\x00'
	dd if=/dev/zero bs=48 count=1 status=none
	printf '\x55\xaa'
} | dd of="/dev/$disk" bs=512 count=1 iflag=fullblock conv=notrunc,fsync status=none
blockdev --rereadpt "/dev/$disk"
part=$(basename "$(dirname "$(ls /sys/class/block/"$disk"/*/partition)")")
refuses 1 "is a partition" "$part" || rc=1
ok "$rc" "try-disk: a partition is refused"
rc=0; refused_mounted "$part" || rc=1
dd if=/dev/zero of="/dev/$disk" bs=1M count=1 conv=fsync status=none
blockdev --rereadpt "/dev/$disk"
ok "$rc" "try-disk: a disk with a mounted partition is refused"

rc=0; refused_mounted "$disk" || rc=1
ok "$rc" "try-disk: a mounted disk is refused"

rc=0
dmsetup create --noudevsync try_disk_test --table "0 2048 linear /dev/$disk 0"
refuses 1 "is part of dm-[0-9]* (try_disk_test)" "$disk" || rc=1
dmsetup remove --noudevsync try_disk_test
ok "$rc" "try-disk: a disk under a device-mapper target is refused"

# an exclusive holder that neither mountinfo nor holders/ shows
rc=0
python3 -c 'import os, sys, time
fd = os.open(sys.argv[1], os.O_RDONLY | os.O_EXCL)
open(sys.argv[2], "w").close()
time.sleep(120)' "/dev/$disk" "$out/held" &
holder=$!
for _ in $(seq 1 100); do [ -e "$out/held" ] && break; sleep 0.2; done
refuses 1 "/dev/$disk is in use" "$disk" || rc=1
kill "$holder"
wait "$holder" 2>/dev/null || true
ok "$rc" "try-disk: a disk held open exclusively is refused"

# a short run: reads only, the goal table, the JSON, the tarball, settings back
rc=0
read -r _ _ _ _ w0 _ </sys/block/"$disk"/stat
"$try" -q -T 50 -c static-4096,adapt-50ms -o "$out/run" "$disk" >"$out/run.log" 2>&1 || rc=$?
read -r _ _ _ _ w1 _ </sys/block/"$disk"/stat
sed -n '/^### Goal at 50 ms/,/^### [^G]/p' "$out/run/results.md" 2>/dev/null | grep '^|' | sed 's/^/# /' || true
if [ "$rc" = 0 ] && grep -q '^| adapt-50ms |' "$out/run/results.md" &&
   python3 - "$out/run/results.json" <<-'PY' &&
	import json, sys
	r = json.load(open(sys.argv[1]))["results"]
	want = {"w1", "w1p", "w1s", "w3"}
	sys.exit(not (set(r) == want and all("adapt-50ms" in r[w] and "static-4096" in r[w] for w in want)))
	PY
   list=$(tar -tzf "$out/run.tar.gz") && grep -qx 'run/results.md' <<<"$list" &&
   grep -qx 'run/system.txt' <<<"$list"; then
	ok 0 "try-disk: a short run writes the goal table, the JSON and the tarball"
else
	tail -n 5 "$out/run.log" | sed 's/^/# /'
	echo "# exit $rc; tarball: $(tar -tzf "$out/run.tar.gz" 2>&1 | tr '\n' ' ')"
	ok 1 "try-disk: a short run writes the goal table, the JSON and the tarball"
fi
echo "# writes to $disk during the run: $((w1 - w0))"
[ "$(settings)" = "$before" ] || echo "# settings now: $(settings)"
ok "$([ "$w1" = "$w0" ] && [ "$(settings)" = "$before" ] && echo 0 || echo 1)" \
	"try-disk: the run wrote nothing to the disk and restored every setting"

# Ctrl-C: the terminal sends SIGINT to the foreground process group; job
# control gives the run a group of its own, as a shell gives a command
rc=0
set -m
"$try" -q -T 50 -c static-4096,adapt-50ms -o "$out/int" "$disk" >"$out/int.log" 2>&1 &
pid=$!
set +m
# run 3 is W1p with the controller on, its tracepoint enabled
for _ in $(seq 1 240); do
	grep -q 'run 3/.*adapt' "$out/int.log" && break
	sleep 0.5
done
grep -q 'run 3/.*adapt' "$out/int.log" || { echo "# the run did not reach the controller's W1p run"; rc=1; }
sleep 3
kill -INT -- "-$pid"
got=0
wait "$pid" || got=$?
left=$(grep -lx fio /proc/[0-9]*/comm 2>/dev/null || true)
[ "$got" = 130 ] || { echo "# exit $got, not 130"; rc=1; }
[ "$(settings)" = "$before" ] || { echo "# settings now: $(settings)"; rc=1; }
[ -z "$left" ] || { echo "# fio still running: $left"; rc=1; }
! ls /dev/hugepages/latbench.* >/dev/null 2>&1 || { echo "# huge page buffers left"; rc=1; }
ok "$rc" "try-disk: Ctrl-C stops the run and restores every setting"

# the read peers at a target, as scripts/bench.sh runs them
rc=0
queue0="$(cat "$q/rotational") $(cat "$q/read_ahead_kb")"
BLKADAPT_OUT=$out/peers "$(dirname "$0")/../bench/latbench.sh" -q -t 2 -T 50 -w w1 -n \
	-c static-4096,kyber-50ms,iolat-50ms,iocost-50ms "$disk" >"$out/peers.log" 2>&1 || rc=$?
[ "$rc" = 0 ] || { tail -n 5 "$out/peers.log" | sed 's/^/# /'; echo "# exit $rc"; }
python3 - "$out/peers/bench/w1" "$(dirname "$0")/../lib" <<-'PY' || rc=1
	import re, sys
	top = sys.argv[1]
	sys.path.insert(0, sys.argv[2])
	import fio_json
	bad = []
	for cfg in ("static-4096", "kyber-50ms", "iolat-50ms", "iocost-50ms"):
	    try:
	        jobs = fio_json.jobs(f"{top}/{cfg}/r1.json")
	        # each cgroup's io.stat before (2 lines) and after (2) the run
	        lines = open(f"{top}/{cfg}/r1.cgroups").read().splitlines()
	        st = [{l.split()[0]: {k: int(v) for k, v in re.findall(r"([\w.]+)=(\d+)", l)}
	               for l in part} for part in (lines[:2], lines[2:])]
	    except (OSError, ValueError, IndexError) as e:
	        bad.append(f"{cfg}: {e}")
	        continue
	    if not sorted(jobs) == sorted(st[0]) == sorted(st[1]) == ["prober", "stream"]:
	        bad.append(f"{cfg}: jobs {sorted(jobs)}")
	        continue
	    d = {j: {k: st[1][j].get(k, 0) - st[0][j].get(k, 0) for k in st[1][j]} for j in jobs}
	    # each fio read in its own cgroup: at least the job's bytes (fio
	    # leaves out its 2 s of ramp); the prober's at most twice its 20 IOPS
	    # over ramp and run, the stream's over 64 times the prober's
	    rb = {j: d[j].get("rbytes", 0) for j in jobs}
	    io = {j: fio_json.io_bytes(jobs[j]) for j in jobs}
	    if not (all(0 < io[j] <= rb[j] for j in jobs) and rb["prober"] <= 2 * 20 * 4 * 4096
	            and rb["stream"] > 64 * rb["prober"]):
	        bad.append(f"{cfg}: fio read {io}, the cgroups {rb}")
	    # iocost charged the stream's cgroup
	    if cfg.startswith("iocost") and not d["stream"].get("cost.usage"):
	        bad.append(f"{cfg}: iocost charged nothing: {d['stream']}")
	for b in bad:
	    print(f"# {b}")
	sys.exit(bool(bad))
	PY
mm=$(cat "/sys/block/$disk/dev")
if [ -e /sys/fs/cgroup/latbench-prober ] || [ -e /sys/fs/cgroup/latbench-stream ]; then
	echo "# cgroups left"
	rc=1
fi
grep -q "^$mm enable=0" /sys/fs/cgroup/io.cost.qos || { echo "# iocost left on"; rc=1; }
queue1="$(cat "$q/rotational") $(cat "$q/read_ahead_kb")"
[ "$queue1" = "$queue0" ] || { echo "# rotational, read_ahead_kb: $queue1, not $queue0"; rc=1; }
! grep -qw io /sys/fs/cgroup/cgroup.subtree_control || { echo "# the io controller left on"; rc=1; }
ok "$rc" "latbench: the peers at a target run under their settings and leave nothing behind"

for ((i = 0; i < ${#orig[@]}; i += 2)); do echo "${orig[i + 1]}" >"$q/${orig[i]}"; done
echo "$hugepages" >/proc/sys/vm/nr_hugepages
exit "$failed"
