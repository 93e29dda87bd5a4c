"""What touching memory costs on this machine: a new file's pages against recycled ones, a cold read
with and without dropping its pages behind it, and O_DIRECT, each as wall and system CPU per GiB.

    .venv/bin/python bench/page_costs.py [--size 1GiB] [--reps 3] [--dir DIR] [--json]

Why: on a VM whose free memory goes back to the host (virtio-balloon free page reporting, this
2-core VM), a page the guest touches again after the host took it back costs a fault in the host,
charged as system CPU to whoever touches it. A two-pass rechunk writes an intermediate as large as
the array into new page-cache pages, so its first pass swings with how much freed memory the run
before left (issue 37: the same 4 GiB first pass took 5.4-5.9 s right after another run, 10.5-10.7 s
after 45 s idle) and model/convert.TWO_PASS_MARGIN stands in for a rate the calibration does not
see (calibrate's write rate is of a file rewritten into pages it had just freed). Run this before
reading a two-pass bench on a new machine: a bare-metal node shows new ~= recycled.

Rows, each a median over --reps rounds (the file evicted, posix_fadvise DONTNEED checked with mincore,
before each read; --settle seconds idle before the rows marked *):
  write new *      write --size into a new file (pages the kernel must find)
  write recycled   write it again in place (pages already resident)
  write after rm   remove the file, write a new one at once (the pages just freed)
  read cold *      read the evicted file in 4 MiB requests
  read drop-behind * the same, dropping each 4 MiB behind the read (posix_fadvise DONTNEED)
  write O_DIRECT * write a new file with O_DIRECT (no page cache), 4 MiB requests
  read O_DIRECT    read it back with O_DIRECT
The balloon's free page reporting feature (bit 5 of the virtio device's features) is printed when
this Linux says.
"""

import argparse
import json
import mmap
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

from climio.dataset.options import parse_size
from climio.machine import cache
from climio.measure.series import Timer

REQUEST = 4 << 20
VIRTIO_BALLOON_DEVICE_ID = "0x0005"
VIRTIO_BALLOON_F_REPORTING = 5


def free_page_reporting() -> str:
    """"yes"/"no" when a virtio balloon is there (its negotiated features), else "no balloon"."""
    for dev in Path("/sys/bus/virtio/devices").glob("*"):
        try:
            if (dev / "device").read_text().strip() == VIRTIO_BALLOON_DEVICE_ID:
                bits = (dev / "features").read_text().strip()
                return "yes" if len(bits) > VIRTIO_BALLOON_F_REPORTING and bits[VIRTIO_BALLOON_F_REPORTING] == "1" else "no"
        except OSError:
            continue
    return "no balloon"


def _timed(fn) -> tuple:
    """(wall s, system CPU s) of fn(), by climio's own Timer."""
    with Timer() as t:
        fn()
    return t.wall_s, t.sys_s


def _write(path, size, direct=False, in_place=False):
    flags = os.O_WRONLY | os.O_CREAT | (0 if in_place else os.O_TRUNC) | (os.O_DIRECT if direct else 0)
    buf = mmap.mmap(-1, REQUEST)          # page-aligned, as O_DIRECT needs
    buf.write(b"\x5a" * REQUEST)
    fd = os.open(path, flags, 0o600)
    try:
        for off in range(0, size, REQUEST):
            os.pwrite(fd, buf, off)
        if not direct:
            os.fsync(fd)              # the dirty pages written back now, not during the next row
    finally:
        os.close(fd)


def _read(path, size, drop=False, direct=False):
    buf = mmap.mmap(-1, REQUEST)
    fd = os.open(path, os.O_RDONLY | (os.O_DIRECT if direct else 0))
    try:
        for off in range(0, size, REQUEST):
            os.preadv(fd, [buf], off)
            if drop:
                os.posix_fadvise(fd, off, REQUEST, os.POSIX_FADV_DONTNEED)
    finally:
        os.close(fd)


def one_round(d: Path, size: int, settle: float) -> dict:
    """The rows of one round; `settle` seconds idle before each row that should find no freed page
    still warm (free page reporting hands memory back about 2 s after it is freed)."""
    f, g = d / "a.bin", d / "b.bin"
    time.sleep(settle)
    out = {"write new": _timed(lambda: _write(f, size)),
           "write recycled": _timed(lambda: _write(f, size, in_place=True))}
    f.unlink()
    out["write after rm"] = _timed(lambda: _write(f, size))
    for name, drop in (("read cold", False), ("read drop-behind", True)):
        if cache.prepare([f], "cold")["state"] != "cold":
            sys.exit(f"{f} could not be evicted: no cold read to time")
        time.sleep(settle)
        out[name] = _timed(lambda: _read(f, size, drop=drop))
    f.unlink()
    time.sleep(settle)
    try:
        out["write O_DIRECT"] = _timed(lambda: _write(g, size, direct=True))
        out["read O_DIRECT"] = _timed(lambda: _read(g, size, direct=True))
    except OSError as exc:            # tmpfs and some network file systems refuse O_DIRECT
        print(f"O_DIRECT not timed in {d}: {exc.strerror}")
    g.unlink(missing_ok=True)
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter, epilog=__doc__)
    ap.add_argument("--size", default="1GiB", help="bytes per file (default 1GiB; a multiple of 4 MiB)")
    ap.add_argument("--reps", type=int, default=3, help="rounds (default 3)")
    ap.add_argument("--dir", help="where the files go (default: a temporary directory under /tmp)")
    ap.add_argument("--settle", type=float, default=5, help="seconds idle before the rows that start from "
                    "memory handed back (write new, the reads, O_DIRECT; default 5)")
    ap.add_argument("--json", action="store_true", help="one JSON line per row")
    a = ap.parse_args()
    size = max(REQUEST, parse_size(a.size) // REQUEST * REQUEST)
    gib = size / (1 << 30)
    with tempfile.TemporaryDirectory(prefix="climio-page-costs-", dir=a.dir) as tmp:
        rounds = [one_round(Path(tmp), size, a.settle) for _ in range(a.reps)]
    print(f"free page reporting: {free_page_reporting()}; {size / 1e9:.2f} GB per file, medians of {a.reps}")
    print(f"{'row':<18}{'wall s':>8}{'sys s':>8}{'GB/s':>8}{'sys s/GiB':>11}")
    for name in rounds[0]:
        wall = statistics.median(r[name][0] for r in rounds if name in r)
        sys_s = statistics.median(r[name][1] for r in rounds if name in r)
        if a.json:
            print(json.dumps({"row": name, "bytes": size, "wall_s": wall, "sys_s": sys_s, "reps": a.reps}))
        else:
            print(f"{name:<18}{wall:>8.2f}{sys_s:>8.2f}{size / wall / 1e9:>8.2f}{sys_s / gib:>11.2f}")


if __name__ == "__main__":
    main()
