"""The physical floor: climio's C probe against fio on the same cold file, one run, one ratio.

    .venv/bin/python bench/probe_vs_fio.py [--size 1GiB] [--reps 5] [--dir DIR]

Both read the whole file sequentially in 1 MiB requests after evicting it from the page
cache (the probe: posix_fadvise DONTNEED verified with mincore; fio: --invalidate=1).
Runs alternate probe/fio so drift in the device hits both alike. Target: ratio >= 0.9.
"""

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile

from climio import native
from climio.data import make_data
from climio.options import parse_size

MiB = 1 << 20


def probe_rate(path) -> float:
    out = subprocess.run([native.program("climio-probe-posix"), "--file", path, "--patterns", "sequential",
                          "--buffers", str(MiB), "--reps", "1", "--cache", "cold", "--budget", "0"],
                         capture_output=True, text=True, check=True).stdout
    rec = json.loads(out.splitlines()[-1])
    if rec["cache"]["state"] != "cold":
        sys.exit(f"probe could not evict {path} (resident {rec['cache']['resident_fraction']})")
    return rec["metrics"]["rate_MBps"]


def fio_rate(path, size) -> float:
    fio = shutil.which("fio") or sys.exit("fio not found: run `make setup`")
    out = subprocess.run([fio, "--name=floor", f"--filename={path}", "--rw=read", "--bs=1m", "--invalidate=1",
                          "--ioengine=psync", f"--size={size}", "--output-format=json"],
                         capture_output=True, text=True, check=True).stdout
    job = json.loads(out[out.index("{"):])["jobs"][0]["read"]
    return job["bw_bytes"] / 1e6


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--size", default="1GiB")
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--dir", default=None, help="directory on the file system to test (default: a temporary one)")
    a = ap.parse_args()
    tmp = tempfile.mkdtemp(prefix="climio-floor-", dir=a.dir)
    try:
        path = make_data(tmp, size=parse_size(a.size), kinds=("1d",), random=True)["1d_bin"]
        size = os.path.getsize(path)
        probe, fio = [], []
        for _ in range(a.reps):
            probe.append(probe_rate(str(path)))
            fio.append(fio_rate(str(path), size))
        pm, fm = statistics.mean(probe), statistics.mean(fio)
        print(f"file {path} ({size} B), {a.reps} cold sequential 1 MiB reads each")
        print(f"climio-probe-posix: mean {pm:8.1f} MB/s  (min {min(probe):.1f}, max {max(probe):.1f})")
        print(f"fio psync        : mean {fm:8.1f} MB/s  (min {min(fio):.1f}, max {max(fio):.1f})")
        print(f"ratio probe/fio  : {pm / fm:.3f}  (target >= 0.9)")
        return 0 if pm / fm >= 0.9 else 1
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
