#!/usr/bin/python3
"""Validate the nbdkit disk models against their profiles, host-side.

usage: validate.py [-p PROFILE]... FILTER_SO

For each profile (default: all of them) starts nbdkit with the filter FILTER_SO
in front of an 8 GiB memory disk, drives it with fio's nbd engine over a Unix
socket and checks, with tolerances that can fail:
  hdd*  QD1 4 KiB random reads over the full span: IOPS within 15% of
        1 / (average seek + half a rotation + command overhead);
        QD16 IOPS over QD1 IOPS between 1.5 and 3 (the on-drive SPTF queue);
        1 MiB sequential reads QD4 of three fresh 128 MiB extents in the
        first and in the last 512 MiB: the median within 10% of the outer
        and inner zone rates (at timescale 4: the model runs 4 times slower,
        so a late wake-up on a busy host costs it less media time; figures
        are scaled back);
  ssd   QD1 4 KiB random read latency: the transport's own round trip is
        removed by measuring the median completion latency at timescales 20
        and 60 in turn, three times; the median of (slow - fast) / 40 is the
        model's own time, within 15% of the profile's QD1 read time;
        at timescale 20, QD32 IOPS within 15% of the command rate and 128 KiB
        sequential reads QD8 within 10% of the link rate;
  all   random 64 KiB writes with flushes read back with fio verify=crc32c.
Prints KTAP; the figures go to diagnostic lines, never into a result line.
Exit status 0 when every check passed.
"""
import os
import statistics
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
import fio_json  # noqa: E402

PROFILES = ["hdd7200", "hdd5400", "ssd"]
SSD_TIMESCALE = (20, 60)
SEQ_TIMESCALE = 4
ROUNDS = 3
MiB = 1 << 20


class Ktap:
    def __init__(self):
        self.n = 0
        self.failed = 0
        print("TAP version 13", flush=True)

    def check(self, ok, name):
        self.n += 1
        self.failed += not ok
        print(f"{'ok' if ok else 'not ok'} {self.n} {name}", flush=True)

    @staticmethod
    def diag(msg):
        print(f"# {msg}", flush=True)


class Model:
    """nbdkit serving an 8 GiB memory disk through the filter, on a socket."""

    def __init__(self, so, profile, tmp, timescale=1):
        self.tmp = tmp
        self.sock = os.path.join(tmp, f"{profile}-{timescale}.sock")
        info = os.path.join(tmp, f"{profile}-{timescale}.info")
        self.timescale = timescale
        self.proc = subprocess.Popen(
            ["nbdkit", "-f", "--exit-with-parent", "--threads", "40", "-U", self.sock,
             f"--filter={so}", "memory", "8G", f"profile={profile}",
             f"timescale={self.timescale}", f"info={info}"])
        for _ in range(100):
            if os.path.exists(self.sock):
                break
            if self.proc.poll() is not None:
                raise RuntimeError(f"nbdkit exited ({self.proc.returncode}) for {profile}")
            time.sleep(0.1)
        else:
            self.stop()
            raise RuntimeError(f"nbdkit's socket {self.sock} did not appear")
        # the filter writes its parameters once the first client connects
        self.fio("probe", "--rw=read", "--bs=4k", "--size=4k")
        self.info = dict(line.strip().split("=", 1) for line in open(info))

    def fio(self, name, *args):
        """Run one fio job against the model; its JSON job object."""
        path = os.path.join(self.tmp, f"{name}.json")
        out = subprocess.run(
            ["fio", "--output-format=json", f"--output={path}", f"--name={name}",
             "--ioengine=nbd", f"--uri=nbd+unix:///?socket={self.sock}", *args],
            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, cwd=self.tmp)
        if out.returncode:
            raise RuntimeError(f"fio {name}: exit {out.returncode}: {out.stdout.strip()[-400:]}")
        return fio_json.jobs(path)[name]

    def stop(self):
        self.proc.terminate()
        self.proc.wait()


def within(measured, expected, tol):
    return abs(measured - expected) <= tol * expected


def rand_job(m, qd, secs):
    return m.fio(f"qd{qd}", "--rw=randread", "--bs=4k", f"--iodepth={qd}", "--size=8G",
                 "--time_based", f"--runtime={secs}", "--randrepeat=0")


def rand_iops(m, qd, secs):
    return fio_json.iops(rand_job(m, qd, secs)) * m.timescale


def seq_mbs(m, offset, size, bs, qd):
    return fio_json.mbs(m.fio("seq", "--rw=read", f"--bs={bs}", f"--iodepth={qd}",
                              f"--offset={offset}", f"--size={size}")) * m.timescale


def validate_hdd(t, m, p, so, tmp):
    i = m.info
    service_ms = (float(i["seek_avg_us"]) + 30e6 / float(i["rpm"]) + float(i["overhead_us"])) / 1e3
    qd1 = rand_iops(m, 1, 8)
    t.diag(f"{p}: QD1 4 KiB random read {qd1:.1f} IOPS, expected {1e3 / service_ms:.1f} "
           f"(seek {float(i['seek_avg_us']) / 1e3:g} + rotation/2 {30e3 / float(i['rpm']):.2f}"
           f" + overhead {float(i['overhead_us']) / 1e3:g} ms)")
    t.check(within(qd1, 1e3 / service_ms, 0.15), f"{p}: QD1 random reads within 15% of the profile")
    qd16 = rand_iops(m, 16, 8)
    t.diag(f"{p}: QD16 4 KiB random read {qd16:.1f} IOPS, {qd16 / qd1:.2f}x QD1")
    t.check(1.5 <= qd16 / qd1 <= 3, f"{p}: QD16 gains 1.5x to 3x over QD1 (on-drive queue)")
    seq = Model(so, p, tmp, SEQ_TIMESCALE)   # a second instance; the caller stops m
    try:
        size, ext = 8 << 30, 128 * MiB
        for zone, first, rate in (("outer", 0, float(i["outer_mbs"])),
                                  ("inner", size - ROUNDS * ext, float(i["inner_mbs"]))):
            runs = [seq_mbs(seq, first + k * ext, ext, "1m", 4) for k in range(ROUNDS)]
            mbs = statistics.median(runs)
            t.diag(f"{p}: sequential read, {zone} zone: {mbs:.1f} MB/s median of "
                   f"{', '.join(f'{r:.1f}' for r in runs)}, profile {rate:g} MB/s")
            t.check(within(mbs, rate, 0.10), f"{p}: sequential reads in the {zone} zone within 10%")
    finally:
        seq.stop()


def ssd_qd1_us(fast, slow):
    """The model's QD1 read time: the median latency's growth with timescale."""
    runs = []
    for _ in range(ROUNDS):
        lo, hi = (fio_json.clat_ms(rand_job(m, 1, 3), 50) * 1e3 for m in (fast, slow))
        runs.append((hi - lo) / (slow.timescale - fast.timescale))
    return statistics.median(runs), runs


def validate_ssd(t, m, p, so, tmp):
    i = m.info
    qd1_us, max_iops, link = float(i["qd1_read_us"]), float(i["max_iops"]), float(i["link_mbs"])
    slow = Model(so, p, tmp, SSD_TIMESCALE[1])
    try:
        us, runs = ssd_qd1_us(m, slow)
    finally:
        slow.stop()
    t.diag(f"{p}: QD1 4 KiB random read {us:.1f} us (model time) median of "
           f"{', '.join(f'{r:.1f}' for r in runs)}, profile {qd1_us:g} us")
    t.check(within(us, qd1_us, 0.15), f"{p}: QD1 random reads within 15% of the profile")
    qd32 = rand_iops(m, 32, 6)
    t.diag(f"{p}: QD32 4 KiB random read {qd32:.0f} IOPS (model time), expected {max_iops:.0f}")
    t.check(within(qd32, max_iops, 0.15), f"{p}: QD32 random reads within 15% of the profile")
    mbs = seq_mbs(m, 0, 64 * MiB, "128k", 8)
    t.diag(f"{p}: sequential read {mbs:.0f} MB/s (model time), link {link:g} MB/s")
    t.check(within(mbs, link, 0.10), f"{p}: sequential reads within 10% of the link rate")


def validate(t, so, p, tmp):
    try:
        m = Model(so, p, tmp, SSD_TIMESCALE[0] if p == "ssd" else 1)
    except RuntimeError as e:
        t.diag(str(e))
        t.check(False, f"{p}: nbdkit serves the model")
        return
    try:
        (validate_hdd if m.info["kind"] == "hdd" else validate_ssd)(t, m, p, so, tmp)
        try:
            m.fio("verify", "--rw=randwrite", "--bs=64k", "--iodepth=4", "--size=32M",
                  "--offset=1G", "--fsync=16", "--verify=crc32c", "--do_verify=1")
            ok = True
        except RuntimeError as e:
            t.diag(str(e))
            ok = False
        t.check(ok, f"{p}: written data reads back (fio verify=crc32c, with flushes)")
    finally:
        m.stop()


def main():
    args, profiles = sys.argv[1:], []
    if args and args[0] in ("-h", "--help"):
        print(__doc__.strip())
        return 0
    while len(args) > 1 and args[0] == "-p":
        if args[1] not in PROFILES:
            sys.exit(f"validate.py: unknown profile '{args[1]}' ({', '.join(PROFILES)})")
        profiles.append(args[1])
        args = args[2:]
    if len(args) != 1 or not os.path.isfile(args[0]):
        sys.exit("usage: validate.py [-p PROFILE]... FILTER_SO  (see --help)")
    t = Ktap()
    with tempfile.TemporaryDirectory() as tmp:
        for p in profiles or PROFILES:
            try:
                validate(t, os.path.abspath(args[0]), p, tmp)
            except RuntimeError as e:   # a fio run failed: the profile's checks stop
                t.diag(str(e))
                t.check(False, f"{p}: every fio run completed")
    print(f"1..{t.n}")
    return 1 if t.failed else 0


if __name__ == "__main__":
    sys.exit(main())
