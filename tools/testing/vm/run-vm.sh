#!/usr/bin/env bash
# Boot a kernel in QEMU with the host root read-only over 9p and run one command.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
. "$here/../../../scripts/lib.sh"

usage() {
	cat <<USAGE
usage: tools/testing/vm/run-vm.sh [options] -- COMMAND [ARG...]
Boots the kernel under QEMU (TCG unless VM_ACCEL=kvm), with the host's root file
system read-only over 9p, and runs COMMAND inside the guest from the current
directory. The guest has an AHCI controller with one or more SATA disks
(ide-hd, serial numbers blkadapt0, blkadapt1, ...) backed by sparse files,
shaped by a device profile. scsi_debug starts with no host (add one through
its sysfs add_host when a test needs it); null_blk makes its default nullb0.
The exit status is COMMAND's, 124 on timeout, 125 when the guest died first.

options:
  -k, --kernel PATH     bzImage to boot (default: $BZIMAGE)
  -p, --profile NAME    disk model (default: fast)
                          fast     no throttling (functional tests)
                          hdd      150 MB/s and 150 commands/s (QEMU throttling.*)
                          ssd      500 MB/s and 5000 commands/s (QEMU throttling.*)
                        served by nbdkit through the disk model filter
                        (tools/testing/diskmodel, Documentation/device-models.md):
                          hdd7200  3.5" 7200 rpm desktop disk (AHCI, rotational)
                          hdd5400  2.5" 5400 rpm laptop disk (AHCI, rotational)
                          sata-ssd SATA SSD (AHCI)
                          nvme-ssd the same SSD model behind QEMU's NVMe controller
  -n, --disks N         number of SATA disks on the AHCI controller (default: 1)
  -s, --disk-size SIZE  size of each sparse disk file (default: 4G)
  -a, --append ARGS     extra kernel command line
  -t, --timeout SEC     kill the guest after SEC seconds (default: 900)
  -o, --out DIR         output directory: console.log, rc, files the job writes
                        to \$BLKADAPT_OUT (default: $BUILD/vm/out)
  -q, --quiet           do not copy the console to standard output
  -h, --help            this text
USAGE
}

kernel=$BZIMAGE profile=fast disks=1 size=4G append="" timeout=900 out=$BUILD/vm/out quiet=0
while [ $# -gt 0 ]; do
	case "$1" in
	-k|--kernel) kernel=$2; shift 2 ;;
	-p|--profile) profile=$2; shift 2 ;;
	-n|--disks) disks=$2; shift 2 ;;
	-s|--disk-size) size=$2; shift 2 ;;
	-a|--append) append=$2; shift 2 ;;
	-t|--timeout) timeout=$2; shift 2 ;;
	-o|--out) out=$2; shift 2 ;;
	-q|--quiet) quiet=1; shift ;;
	-h|--help) usage; exit 0 ;;
	--) shift; break ;;
	*) usage >&2; die "unknown option '$1'" ;;
	esac
done
[ $# -gt 0 ] || { usage >&2; die "no COMMAND given"; }
[ -f "$kernel" ] || die "kernel image '$kernel' not found (build it with scripts/build.sh)"
[[ "$disks" =~ ^[1-6]$ ]] || die "--disks must be 1..6, not '$disks'"
[[ "$timeout" =~ ^[0-9]+$ ]] || die "--timeout must be a number of seconds, not '$timeout'"
throttle="" model="" rpm=""
case "$profile" in
fast) ;;
hdd) throttle=",throttling.bps-total=150000000,throttling.iops-total=150" ;;
ssd) throttle=",throttling.bps-total=500000000,throttling.iops-total=5000" ;;
hdd7200) model=hdd7200 rpm=7200 ;;
hdd5400) model=hdd5400 rpm=5400 ;;
sata-ssd) model=ssd rpm=1 ;;
nvme-ssd) model=ssd ;;
*) die "unknown profile '$profile' (fast, hdd, ssd, hdd7200, hdd5400, sata-ssd, nvme-ssd)" ;;
esac
if [ -n "$model" ]; then
	command -v nbdkit >/dev/null || die "profile $profile needs nbdkit (scripts/deps.sh)"
	build_diskmodel
fi

mkdir -p "$out"
out=$(cd "$out" && pwd)
rm -f "$out/rc" "$out/console.log"
{
	echo "cd $(printf '%q' "$PWD")"
	printf 'exec'; printf ' %q' "$@"; echo
} >"$out/job.sh"

# nbdkit servers of the modelled disks: stopped, and their sockets removed, on exit
nbdkit_pids=()
stop_models() {
	[ ${#nbdkit_pids[@]} -eq 0 ] || { kill "${nbdkit_pids[@]}" 2>/dev/null || true; wait "${nbdkit_pids[@]}" 2>/dev/null || true; }
	rm -f "$out"/disk*.sock "$out"/disk*.img
}
trap stop_models EXIT

# start_model I: serve disk I through the model on $out/diskI.sock.
start_model() {
	local sock=$out/disk$1.sock
	rm -f "$sock"
	nbdkit -f --exit-with-parent -U "$sock" --filter="$DISKMODEL" file "$out/disk$1.img" \
		profile="$model" info="$out/disk$1.model" 2>>"$out/nbdkit.log" &
	nbdkit_pids+=($!)
	for _ in $(seq 50); do
		[ -S "$sock" ] && return 0
		kill -0 "$!" 2>/dev/null || die "nbdkit for disk $1 exited (see $out/nbdkit.log)"
		sleep 0.1
	done
	die "nbdkit's socket $sock did not come up within 5 s (see $out/nbdkit.log)"
}

if [ "$profile" = nvme-ssd ]; then drives=(); else drives=(-device "ahci,id=ahci"); fi
rm -f "$out/nbdkit.log"
for i in $(seq 0 $((disks - 1))); do
	img=$out/disk$i.img
	rm -f "$img" && truncate -s "$size" "$img"
	if [ -n "$model" ]; then
		start_model "$i"
		# cache=writeback: the guest's flushes reach the model
		drives+=(-drive "if=none,id=d$i,file=nbd:unix:$out/disk$i.sock,format=raw,cache=writeback")
	else
		drives+=(-drive "if=none,id=d$i,file=$img,format=raw,cache=unsafe$throttle")
	fi
	if [ "$profile" = nvme-ssd ]; then
		drives+=(-device "nvme,drive=d$i,serial=blkadapt$i")
	else
		drives+=(-device "ide-hd,drive=d$i,bus=ahci.$i,serial=blkadapt$i${rpm:+,rotation_rate=$rpm}")
	fi
done

accel=${VM_ACCEL:-tcg}
cmdline="console=ttyS0 root=hostroot rootfstype=9p ro
rootflags=trans=virtio,version=9p2000.L,cache=loose,msize=262144
init=$here/guest-init.sh panic=-1 oops=panic printk.devkmsg=on
scsi_debug.add_host=0 $append"
qemu=(qemu-system-x86_64 -machine pc -accel "$accel" -cpu max -smp 2 -m 2G
      -nodefaults -no-reboot -display none -serial stdio
      -kernel "$kernel" -append "$(echo "$cmdline" | tr '\n' ' ')"
      -virtfs "local,path=/,mount_tag=hostroot,security_model=none,readonly=on,multidevs=remap"
      -virtfs "local,path=$out,mount_tag=out,security_model=none,multidevs=remap"
      "${drives[@]}")

log "vm: booting $(basename "$kernel") ($accel, profile $profile, $disks disk(s)): $*"
set +e
if [ "$quiet" = 1 ]; then
	timeout --foreground -k 5 "$timeout" "${qemu[@]}" </dev/null >"$out/console.log" 2>&1
else
	timeout --foreground -k 5 "$timeout" "${qemu[@]}" </dev/null 2>&1 | tee "$out/console.log"
fi
st=${PIPESTATUS[0]}
set -e
stop_models
[ "$st" = 124 ] && { log "vm: timed out after ${timeout}s"; exit 124; }
[ -f "$out/rc" ] || { log "vm: the guest died before the job finished (qemu status $st)"; exit 125; }
rc=$(cat "$out/rc")
log "vm: job exit status $rc"
exit "$rc"
