#!/bin/bash
# PID 1 inside the test VM. The root file system is the host's, read-only over
# 9p. Sets up a writable scratch layout, runs job.sh from the writable "out"
# share (written there by run-vm.sh), stores its exit status next to it and
# powers the VM off. Anything it prints goes to the serial console.
# No `set -e` here on purpose: PID 1 must reach the power-off whatever happens.
export PATH=/usr/sbin:/usr/bin:/sbin:/bin HOME=/run/tmp TERM=dumb LANG=C.UTF-8

mount -t proc proc /proc
mount -t sysfs sysfs /sys
mountpoint -q /dev || mount -t devtmpfs devtmpfs /dev
# /tmp stays the host's (read-only): the harness may live there. Scratch
# files go to TMPDIR on tmpfs instead.
for d in /run /var/tmp /mnt; do mount -t tmpfs tmpfs "$d"; done
mkdir -p /run/tmp
export TMPDIR=/run/tmp
mount -t debugfs debugfs /sys/kernel/debug
mount -t tracefs tracefs /sys/kernel/tracing 2>/dev/null || true
mount -t cgroup2 cgroup2 /sys/fs/cgroup 2>/dev/null || true
ln -sf /proc/self/fd /dev/fd
ln -sf /proc/self/fd/0 /dev/stdin
ln -sf /proc/self/fd/1 /dev/stdout
ln -sf /proc/self/fd/2 /dev/stderr
mkdir -p /dev/shm /dev/hugepages /mnt/out
mount -t tmpfs tmpfs /dev/shm
mount -t hugetlbfs hugetlbfs /dev/hugepages
mount -t configfs configfs /sys/kernel/config
mount -t 9p -o trans=virtio,version=9p2000.L,msize=262144 out /mnt/out

echo "guest: Linux $(uname -r), $(nproc) CPUs, $(awk '/MemTotal/ {print $2}' /proc/meminfo) kB"
rc=127
if [ -f /mnt/out/job.sh ]; then
	(cd /run/tmp && BLKADAPT_OUT=/mnt/out bash /mnt/out/job.sh)
	rc=$?
fi
echo "$rc" >/mnt/out/rc
sync
echo "guest: job exit status $rc"
exec busybox reboot -f
