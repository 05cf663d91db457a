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
                          fast  no throttling (functional tests)
                          hdd   150 MB/s and 150 commands/s (QEMU throttling.*)
                          ssd   500 MB/s and 5000 commands/s
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
case "$profile" in
fast) throttle="" ;;
hdd) throttle=",throttling.bps-total=150000000,throttling.iops-total=150" ;;
ssd) throttle=",throttling.bps-total=500000000,throttling.iops-total=5000" ;;
*) die "unknown profile '$profile' (fast, hdd, ssd)" ;;
esac

mkdir -p "$out"
out=$(cd "$out" && pwd)
rm -f "$out/rc" "$out/console.log"
{
	echo "cd $(printf '%q' "$PWD")"
	printf 'exec'; printf ' %q' "$@"; echo
} >"$out/job.sh"

drives=(-device "ahci,id=ahci")
for i in $(seq 0 $((disks - 1))); do
	img=$out/disk$i.img
	rm -f "$img" && truncate -s "$size" "$img"
	drives+=(-drive "if=none,id=d$i,file=$img,format=raw,cache=unsafe$throttle"
		 -device "ide-hd,drive=d$i,bus=ahci.$i,serial=blkadapt$i")
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
rm -f "$out"/disk*.img
[ "$st" = 124 ] && { log "vm: timed out after ${timeout}s"; exit 124; }
[ -f "$out/rc" ] || { log "vm: the guest died before the job finished (qemu status $st)"; exit 125; }
rc=$(cat "$out/rc")
log "vm: job exit status $rc"
exit "$rc"
