"""Damaged inputs are one line and exit 3 in every command that reads a file (climio.dataset.integrity).

Issue 27: a netCDF-3 copy truncated to 60 % was accepted by `climio rechunk` (exit 0, zeros where the
data were missing). The header fixes a netCDF-3 file's size and the HDF5 superblock records its
end-of-file address: both are checked where each command opens its input.
"""

from pathlib import Path

import netCDF4
import numpy as np
import pytest

from climio.base import errors

from climio.dataset import integrity
from conftest import run_cli

FORMATS = ["NETCDF3_CLASSIC", "NETCDF3_64BIT_OFFSET", "NETCDF3_64BIT_DATA", "NETCDF4", "NETCDF4_CLASSIC"]


def write(path, fmt, record_vars=("time", "ta"), fixed=True):
    """A CF [time, lev, lat, lon] file (360 degrees of longitude, so stsa accepts it) in `fmt`;
    `record_vars` are the variables along the unlimited time dimension."""
    with netCDF4.Dataset(path, "w", format=fmt) as ds:
        ds.title = "integrity test"
        for name, n in (("time", None), ("lev", 2), ("lat", 8), ("lon", 16)):
            ds.createDimension(name, n)
        if fixed:
            for name, n, axis, units in (("lev", 2, "Z", "hPa"), ("lat", 8, "Y", "degrees_north"),
                                         ("lon", 16, "X", "degrees_east")):
                v = ds.createVariable(name, "f8", (name,))
                v[:] = np.linspace(-70, 70, n) if name == "lat" else np.arange(n) * (360 / n if name == "lon" else 1)
                v.axis, v.units = axis, units
        if "time" in record_vars:
            t = ds.createVariable("time", "f8", ("time",))
            t.axis, t.units = "T", "days since 2000-01-01"
            t[:] = np.arange(200) * 0.25
        ta = ds.createVariable("ta", "f4", ("time", "lev", "lat", "lon"))
        ta[:] = np.random.default_rng(0).random((200, 2, 8, 16)).astype("f4") + 200
    return path


def test_whole_files_pass_and_every_cut_is_caught(tmp_path):
    cases = [(fmt, rv) for fmt in FORMATS for rv in (("time", "ta"), ("ta",))]
    for fmt, rv in cases:
        p = write(tmp_path / f"{fmt}-{len(rv)}.nc", fmt, rv)
        data = p.read_bytes()
        assert integrity.problem_of(p) == "", (fmt, rv)
        for keep in (int(len(data) * 0.6), int(len(data) * 0.99), len(data) - 1):
            cut = tmp_path / "cut.nc"
            cut.write_bytes(data[:keep])
            assert integrity.problem_of(cut) == f"truncated: {keep} of {len(data)} bytes", (fmt, rv, keep)
        cut.write_bytes(data[:20])
        assert "truncated" in integrity.problem_of(cut), fmt
    # a file of fixed-size variables only (no records)
    with netCDF4.Dataset(tmp_path / "fixed.nc", "w", format="NETCDF3_CLASSIC") as ds:
        ds.createDimension("x", 1001)
        ds.createVariable("a", "i2", ("x",))[:] = np.arange(1001)
        ds.createVariable("b", "f8", ("x",))[:] = np.arange(1001)
    data = (tmp_path / "fixed.nc").read_bytes()
    assert integrity.problem_of(tmp_path / "fixed.nc") == ""
    (tmp_path / "cut.nc").write_bytes(data[:-8])
    assert integrity.problem_of(tmp_path / "cut.nc") == f"truncated: {len(data) - 8} of {len(data)} bytes"


def test_other_files_pass(tmp_path):
    """Raw binary, text and directories (Zarr stores) are not this check's to judge."""
    (tmp_path / "raw.bin").write_bytes(np.arange(1000, dtype="f8").tobytes()[8:])
    (tmp_path / "w.yaml").write_text("file: x.nc\n")
    (tmp_path / "store.zarr").mkdir()
    integrity.check(tmp_path / "raw.bin", tmp_path / "w.yaml", tmp_path / "store.zarr")
    with pytest.raises(errors.DataError, match="no such file"):
        integrity.check(tmp_path / "nope.nc")


def _corrupt(src: Path, kind: str, dst: Path) -> Path:
    data = bytearray(src.read_bytes())
    if kind == "cut":
        dst.write_bytes(bytes(data[:int(len(data) * 0.6)]))
    else:   # the first 4 KiB block zeroed, as a lost or overwritten block
        data[:4096] = bytes(4096)
        dst.write_bytes(bytes(data))
    return dst


CORRUPTIONS = [("NETCDF3_CLASSIC", "cut"), ("NETCDF3_64BIT_DATA", "cut"), ("NETCDF4", "cut"),
               ("NETCDF3_CLASSIC", "zero"), ("NETCDF4", "zero")]
COMMANDS = {
    "rechunk": ["rechunk", "F", "OUT/o.nc", "--for", "t"],
    "predict": ["predict", "F", "--var", "ta", "--read", "xt"],
    "advise": ["advise", "F", "--var", "ta", "--read", "xt"],
    "stsa": ["stsa", "F", "--var", "ta", "--level", "0", "--ndaywin", "8", "--ndayskip", "-4", "--workers", "1",
             "--no-plots", "--no-progress", "-o", "OUT/s"],
    "chunking --source": ["bench", "chunking", "--source", "F:ta", "--quick", "-o", "OUT/r", "--no-report"],
    "bench stsa --source": ["bench", "stsa", "--source", "F:ta", "--quick", "-o", "OUT/r", "--no-report"],
    "make-refs": ["make-refs", "F", "-o", "OUT/o.nc.json"],
}


@pytest.fixture(scope="module")
def corrupted(tmp_path_factory):
    d = tmp_path_factory.mktemp("corrupt")
    out = {}
    for fmt, kind in CORRUPTIONS:
        whole = write(d / f"{fmt}.nc", fmt)
        out[(fmt, kind)] = (whole, _corrupt(whole, kind, d / f"{fmt}-{kind}.nc"))
    return out


@pytest.mark.parametrize("fmt, kind", CORRUPTIONS)
@pytest.mark.parametrize("command", list(COMMANDS))
def test_every_reader_refuses_a_damaged_file(command, fmt, kind, corrupted, tmp_path):
    whole, bad = corrupted[(fmt, kind)]
    argv = [a.replace("OUT", str(tmp_path)) for a in COMMANDS[command]]
    out = run_cli(*[a.replace("F", str(bad), 1) if a.startswith("F") else a for a in argv])
    lines = [ln for ln in out.stderr.splitlines() if ln.strip()]
    assert out.returncode == errors.Exit.DATA and len(lines) == 1 and "Traceback" not in out.stderr, out.stderr[-2000:]
    if kind == "cut":
        assert lines[0] == f"climio: error: {bad}: truncated: {bad.stat().st_size} of {whole.stat().st_size} bytes"
    else:
        assert lines[0].startswith(f"climio: error: {bad}: zeroed or overwritten header")
    assert not any(p.name.startswith(("o.nc", ".o.nc")) for p in tmp_path.iterdir())


def test_the_whole_file_still_converts(corrupted, tmp_path):
    whole, _ = corrupted[("NETCDF3_CLASSIC", "cut")]
    out = run_cli("rechunk", whole, tmp_path / "o.nc", "--for", "t")
    assert out.returncode == 0, out.stderr
    with netCDF4.Dataset(whole) as a, netCDF4.Dataset(tmp_path / "o.nc") as b:
        assert np.array_equal(a["ta"][:], b["ta"][:])
