"""A disk that fills up is one line and exit 4 (errors.Exit.DISK), with nothing half-written left behind.

Each test mounts a small tmpfs and fills it while the command runs (another job filling a shared
file system) or before it writes its output: rechunk, make-data, stsa's output and a study's records.
Tests run as root in CI; a mount that is not permitted fails the test with the reason (never skipped).
"""

import json
import os
import subprocess
import sys
import threading
import time
from pathlib import Path

import netCDF4
import numpy as np
import pytest

from climio.base import errors
from conftest import SLOW_RECHUNK, slow_rechunk_source

EXE = os.path.join(os.path.dirname(sys.executable), "climio")


@pytest.fixture
def small_fs(tmp_path):
    """A size-limited tmpfs at tmp_path/fs (64 MiB unless the test asks for less)."""
    mnt = tmp_path / "fs"
    mnt.mkdir()
    mounted = []

    def mount(size="64m"):
        r = subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(mnt)],
                           capture_output=True, text=True)
        assert r.returncode == 0, (f"cannot mount a {size} tmpfs at {mnt} (the full-disk tests need root: "
                                   f"mount -t tmpfs): {r.stderr.strip()}")
        mounted.append(mnt)
        return mnt

    yield mount
    for m in mounted:
        subprocess.run(["umount", "-l", str(m)], check=False)


def fill(mnt: Path) -> int:
    """Write mnt/filler until the file system says ENOSPC; bytes written."""
    n = 0
    with open(mnt / "filler", "ab") as f:
        try:
            while True:
                f.write(b"\0" * (1 << 16))
                f.flush()
                n += 1 << 16
        except OSError as exc:
            assert exc.errno == 28, exc
    return n


def fill_when(mnt: Path, ready, timeout=120):
    """Fill mnt from a thread as soon as ready() is true (the command has started writing there)."""
    def run():
        t0 = time.time()
        while time.time() - t0 < timeout and not ready():
            time.sleep(0.01)
        fill(mnt)
    t = threading.Thread(target=run, daemon=True)
    t.start()
    return t


def run(argv, timeout=300, **kw):
    return subprocess.run([EXE, *map(str, argv)], capture_output=True, text=True, timeout=timeout, **kw)


def one_disk_line(out):
    lines = [ln for ln in out.stderr.splitlines() if ln.startswith("climio: error")]
    assert out.returncode == errors.Exit.DISK, (out.returncode, out.stderr[-3000:])
    assert len(lines) == 1 and "Traceback" not in out.stderr, out.stderr[-3000:]
    assert "disk full" in lines[0] or "free" in lines[0], lines[0]
    return lines[0]


def leftovers(mnt: Path) -> list:
    return sorted(str(p.relative_to(mnt)) for p in mnt.rglob("*") if p.name != "filler" and p.is_file())


def test_rechunk_on_a_disk_that_fills_up(small_fs, tmp_path):
    mnt = small_fs("48m")
    src = slow_rechunk_source(tmp_path / "src.nc")
    fill_when(mnt, lambda: any(p.name.startswith(".o.nc") for p in mnt.iterdir()))
    out = run(["rechunk", src, mnt / "o.nc", *SLOW_RECHUNK, "--max-mem", "64MiB"], timeout=180)
    line = one_disk_line(out)
    assert "nothing written" in line, line
    assert leftovers(mnt) == []


def test_make_data_on_a_disk_that_fills_up(small_fs):
    mnt = small_fs("48m")
    fill_when(mnt, lambda: (mnt / "d").is_dir() and any((mnt / "d").iterdir()))
    out = run(["make-data", "-o", mnt / "d", "--kind", "4d", "--size", "32MiB"])
    one_disk_line(out)
    assert leftovers(mnt) == []


def _stsa_input(path):
    with netCDF4.Dataset(path, "w") as ds:
        for name, n in (("time", 400), ("lat", 8), ("lon", 32)):
            ds.createDimension(name, n)
        t = ds.createVariable("time", "f8", ("time",))
        t.units, t[:] = "days since 2000-01-01", np.arange(400) * 0.25
        lat = ds.createVariable("lat", "f8", ("lat",))
        lat.units, lat[:] = "degrees_north", np.linspace(-14, 14, 8)
        lon = ds.createVariable("lon", "f8", ("lon",))
        lon.units, lon[:] = "degrees_east", np.arange(32) * 360 / 32
        v = ds.createVariable("u", "f4", ("time", "lat", "lon"))
        v[:] = np.random.default_rng(0).random((400, 8, 32)).astype("f4")
    return path


def test_stsa_output_on_a_full_disk(small_fs, tmp_path):
    mnt = small_fs("8m")
    src = _stsa_input(tmp_path / "u.nc")
    fill(mnt)
    out = run(["stsa", src, "--var", "u", "--ndaywin", "16", "--ndayskip", "-8", "--workers", "1",
               "--no-progress", "-o", mnt / "out"])
    one_disk_line(out)
    assert leftovers(mnt) == []


def test_a_study_whose_records_fill_the_disk(small_fs, tmp_path):
    mnt = small_fs("8m")
    run_dir = mnt / "run"
    records = run_dir / "records.jsonl"
    fill_when(mnt, lambda: records.is_file() and records.stat().st_size > 0)
    out = run(["bench", "read-stack", "--size", "4MiB", "--stacks", "numpy", "--patterns", "sequential",
               "--buffers", "4KiB,64KiB,1MiB", "--reps", "3", "--page-cache", "warm", "--no-report",
               "-o", run_dir, "--data-dir", tmp_path / "data"], timeout=300)
    one_disk_line(out)
    # the records written before the disk filled are kept, each a whole record (no half line)
    kept = [json.loads(line) for line in records.read_text().splitlines()]
    assert kept and all(r["study"] == "read-stack" for r in kept)
