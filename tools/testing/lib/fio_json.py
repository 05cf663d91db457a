#!/usr/bin/python3
"""fio's JSON output (--output-format=json), read in one place.

As a module: jobs(path) maps job names to fio's job objects; iops(), mbs() and
clat_ms() read one job's figures for the direction that did the I/O.
As a command: fio_json.py FILE JOB FIELD prints FIELD (iops, mbs, p50_ms,
p99_ms, p999_ms, ios, io_bytes) of job JOB ("-" for the first job) in FILE ("-" for
standard input); fio_json.py --merge OUT IN... writes OUT: the first IN
with the jobs of every IN (one job file run as several fio processes, one
--section each) and "merged_end_skew_ms", how far apart their reports came.
"""
import json
import sys


def jobs(path):
    """Job name -> fio's job object, from a file name or "-" (standard input)."""
    data = json.load(sys.stdin if path == "-" else open(path))
    return {j["jobname"]: j for j in data["jobs"]}


def _dir(job):
    """The job's read or write figures, whichever moved more bytes."""
    return max(job["read"], job["write"], key=lambda d: d["io_bytes"])


def iops(job):
    return _dir(job)["iops"]


def mbs(job):
    """Throughput in MB/s (10^6 bytes per second)."""
    return _dir(job)["bw_bytes"] / 1e6


def ios(job):
    return _dir(job)["total_ios"]


def io_bytes(job):
    return _dir(job)["io_bytes"]


def clat_ms(job, pct):
    """Completion latency percentile pct (50, 99, 99.9) in milliseconds."""
    return _dir(job)["clat_ns"]["percentile"][f"{pct:.6f}"] / 1e6


FIELDS = {"iops": iops, "mbs": mbs, "ios": ios, "io_bytes": io_bytes,
          "p50_ms": lambda j: clat_ms(j, 50), "p99_ms": lambda j: clat_ms(j, 99),
          "p999_ms": lambda j: clat_ms(j, 99.9)}


def merge(out, paths):
    """Write the first of paths with the jobs of all of them to out."""
    data = [json.load(open(p)) for p in paths]
    names = [j["jobname"] for d in data for j in d["jobs"]]
    if len(set(names)) != len(names):
        sys.exit(f"fio_json.py: a job is in more than one of {', '.join(paths)}")
    data[0]["jobs"] = [j for d in data for j in d["jobs"]]
    ends = [d["timestamp_ms"] for d in data]
    data[0]["merged_end_skew_ms"] = max(ends) - min(ends)
    json.dump(data[0], open(out, "w"), indent=1)


def main():
    if len(sys.argv) >= 4 and sys.argv[1] == "--merge":
        merge(sys.argv[2], sys.argv[3:])
        return
    if len(sys.argv) != 4 or sys.argv[3] not in FIELDS:
        sys.exit(f"usage: fio_json.py FILE JOB FIELD  (FIELD: {', '.join(FIELDS)})\n"
                 "       fio_json.py --merge OUT IN...")
    js = jobs(sys.argv[1])
    job = next(iter(js.values())) if sys.argv[2] == "-" else js.get(sys.argv[2])
    if job is None:
        sys.exit(f"fio_json.py: no job '{sys.argv[2]}' in {sys.argv[1]}")
    print(FIELDS[sys.argv[3]](job))


if __name__ == "__main__":
    main()
