"""The synthetic-data generator: values recomputable from the index, files that hold exactly them,
layouts as requested, realistic compression, clean failure, bounded memory."""

import collections
import errno
import json
import math
import os
import shutil
import subprocess
import sys

import netCDF4
import numpy as np
import pytest

from climio.data import derive_shape, make_data, values_1d, values_4d, write_1d, write_4d
from climio.dataset.options import parse_chunk_text as parse_chunks
from climio.dataset.layout import bounded_block, iter_block_slices
from climio.base.errors import DataError, DiskSpaceError, InputError

SHAPE = (7, 5, 23, 41)  # no dimension divisible by the odd chunk shapes below


def read_var(path, name):
    with netCDF4.Dataset(path) as ds:
        v = ds[name]
        v.set_auto_maskandscale(False)
        return v[...], v.chunking(), dict(v.__dict__), v.filters()


def random_hyperslabs(shape, n, rng):
    for _ in range(n):
        sel = []
        for d in shape:
            a = int(rng.integers(0, d))
            sel.append(slice(a, int(rng.integers(a + 1, d + 1))))
        yield tuple(sel)


# ---------------------------------------------------------------- value functions

def test_values_do_not_depend_on_blocking():
    whole = values_1d(0, 200_003, seed=5)
    cuts = [0, 1, 4, 65_535, 65_537, 131_073, 200_003]
    assert np.array_equal(np.concatenate([values_1d(a, b, seed=5) for a, b in zip(cuts, cuts[1:])]), whole)
    field = values_4d(SHAPE, seed=2)
    for sel in random_hyperslabs(SHAPE, 20, np.random.default_rng(0)):
        assert np.array_equal(values_4d(SHAPE, sel, seed=2), field[sel])


def test_values_look_like_the_documented_fields():
    smooth = values_1d(0, 100_000)
    assert smooth.dtype == np.float64 and 260 < smooth.min() and smooth.max() < 300
    rnd = values_1d(0, 100_000, seed=1, random=True)
    assert 0 <= rnd.min() < 0.001 and 0.999 < rnd.max() < 1 and abs(rnd.mean() - 0.5) < 0.01
    ta = values_4d((4, 10, 36, 72))
    assert 180 < ta.min() and ta.max() < 320
    assert ta[:, 0].mean() > ta[:, -1].mean() + 20  # colder aloft
    assert ta[:, 0, 18].mean() > ta[:, 0, 0].mean() + 20  # colder at the poles
    assert np.abs(np.diff(ta[:, 0, 18], axis=-1)).mean() < 2  # smooth along x: waves, not noise
    # A flattened random field is the 1-D random series: one index -> one value, everywhere.
    assert np.array_equal(values_4d((2, 3, 4, 5), seed=9, random=True).ravel(), values_1d(0, 120, seed=9, random=True))
    f4 = values_4d((2, 3, 4, 5), seed=9, random=True, dtype="f4")
    assert f4.dtype == np.float32 and f4.max() < 1


def test_seed_decides_the_values():
    assert np.array_equal(values_1d(10, 5000, seed=3), values_1d(10, 5000, seed=3))
    for random in (False, True):
        a, b = values_1d(0, 5000, seed=3, random=random), values_1d(0, 5000, seed=4, random=random)
        assert np.mean(a == b) < 0.01
        # seed s+1 must not be seed s shifted by one element
        assert np.mean(a[1:] == b[:-1]) < 0.01
    assert np.mean(values_4d(SHAPE, seed=0) == values_4d(SHAPE, seed=1)) < 0.01


# ---------------------------------------------------------------- 1-D files

@pytest.mark.parametrize("random", [False, True])
def test_1d_files_hold_the_values_and_the_same_bytes(tmp_path, random):
    size = 300_000 * 8 + 5  # not a whole number of float64s, not a whole number of blocks
    calls = []
    made = make_data(tmp_path, size=size, kinds=("1d",), seed=11, random=random, progress=calls.append)
    data, chunking, attrs, _ = read_var(made["1d_nc"], "data")
    assert data.dtype == np.float64 and data.shape == (300_000,) and chunking == "contiguous"
    assert np.array_equal(data, values_1d(0, 300_000, seed=11, random=random))
    raw = made["1d_bin"].read_bytes()
    assert raw == data.astype("<f8").tobytes()
    assert made["bytes"] == 2 * 300_000 * 8 == sum(calls)
    assert {"long_name", "units"} <= set(attrs)
    with netCDF4.Dataset(made["1d_nc"]) as ds:
        assert ds.source == "climio make-data" and ds.seed == 11 and ds.random == int(random)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["data1d.bin", "data1d.nc"]


def test_1d_blocks_and_too_small(tmp_path):
    n = write_1d(tmp_path / "a.nc", tmp_path / "a.bin", 10_001 * 8, seed=2, max_block_bytes=4096 + 8)
    assert n == 10_001 * 8
    assert np.array_equal(np.fromfile(tmp_path / "a.bin", "<f8"), values_1d(0, 10_001, seed=2))
    with pytest.raises(InputError):
        write_1d(tmp_path / "b.nc", tmp_path / "b.bin", 7)
    assert not (tmp_path / "b.nc").exists()


def test_same_seed_same_files_other_seed_other_bytes(tmp_path):
    kw = dict(size=200_000, kinds=("1d", "4d"), chunks=[2, 3, 10, 10], deflate=1, shuffle=True)
    a, b, c = (make_data(tmp_path / d, seed=s, **kw) for d, s in (("a", 4), ("b", 4), ("c", 5)))
    for key in ("1d_nc", "1d_bin", "4d"):
        assert a[key].read_bytes() == b[key].read_bytes()
        assert a[key].read_bytes() != c[key].read_bytes()


# ---------------------------------------------------------------- 4-D files

@pytest.mark.parametrize("chunks,deflate,block", [
    (None, 0, 8 << 10), ("contiguous", 0, 300), ([1, 1, 23, 41], 0, 8 << 10), ([1, 1, 7, 13], 0, 8 << 10),
    ([3, 2, 5, 40], 0, 20 << 10), ([7, 5, 23, 41], 0, 300_000), ([2, 4, 11, 9], 2, 16 << 10),
    ("default", 1, 1 << 20),
])
def test_4d_file_holds_the_values_in_the_requested_layout(tmp_path, chunks, deflate, block):
    path = tmp_path / "f.nc"
    calls = []
    # Small blocks force many of them, so block edges fall everywhere (300 B: part of an x row).
    n = write_4d(path, SHAPE, chunks=chunks, deflate=deflate, shuffle=bool(deflate), seed=3,
                 progress=calls.append, max_block_bytes=block)
    data, chunking, attrs, filters = read_var(path, "ta")
    assert n == math.prod(SHAPE) * 8 == sum(calls)
    assert len(calls) >= min(4, n // block)
    if chunks in (None, "contiguous"):
        assert chunking == "contiguous"
    elif chunks != "default":
        assert chunking == chunks
    assert filters["zlib"] == bool(deflate) and filters["complevel"] == deflate
    assert data.dtype == np.float64
    expected = values_4d(SHAPE, seed=3)
    assert np.array_equal(data, expected)
    with netCDF4.Dataset(path) as ds:
        v = ds["ta"]
        for sel in random_hyperslabs(SHAPE, 12, np.random.default_rng(1)):
            assert np.array_equal(v[sel], values_4d(SHAPE, sel, seed=3))
    assert attrs["standard_name"] == "air_temperature" and attrs["units"] == "K"
    assert os.listdir(tmp_path) == ["f.nc"]


def test_4d_coordinates_and_metadata(tmp_path):
    path = tmp_path / "f.nc"
    write_4d(path, (3, 4, 6, 8), dtype="f4", chunks=[1, 2, 6, 8], var="tas", seed=8)
    with netCDF4.Dataset(path) as ds:
        assert ds["tas"].dimensions == ("time", "lev", "lat", "lon") and ds["tas"].dtype == np.float32
        assert np.array_equal(ds["tas"][:], values_4d((3, 4, 6, 8), seed=8, dtype="f4"))
        assert ds["time"].units == "hours since 2000-01-01 00:00:00" and ds["time"].calendar
        assert list(ds["time"][:]) == [0, 6, 12]
        lev, lat, lon = ds["lev"][:], ds["lat"][:], ds["lon"][:]
        assert ds["lev"].units == "hPa" and ds["lev"].positive == "down" and lev[0] == 1000 and np.all(np.diff(lev) < 0)
        assert ds["lat"].units == "degrees_north" and -90 < lat[0] < lat[-1] < 90 and np.allclose(lat, -lat[::-1])
        assert ds["lon"].units == "degrees_east" and lon[0] == 0 and lon[-1] < 360
        assert ds.Conventions.startswith("CF") and ds.generator_version


def test_compression_ratio_is_realistic(tmp_path):
    shape, kw = (8, 10, 64, 128), dict(chunks=[1, 10, 64, 128], deflate=4)
    nbytes = math.prod(shape) * 8

    def ratio(name, **extra):
        path = tmp_path / name
        write_4d(path, shape, **kw, **extra)
        return nbytes / path.stat().st_size

    smooth = ratio("smooth.nc", shuffle=True)
    random_shuffled = ratio("random_s.nc", shuffle=True, random=True)
    random_plain = ratio("random.nc", shuffle=False, random=True)
    assert 1.1 < smooth < 20
    assert random_plain < 1.1
    # Uniform [0, 1) numbers share their sign and exponent bytes, which shuffle exposes to deflate.
    assert random_shuffled < 1.25 and smooth > random_shuffled + 0.1


def test_4d_blocks_are_unions_of_whole_chunks():
    for shape, unit, limit in [((7, 5, 23, 41), (2, 4, 11, 9), 20_000), ((50, 1, 10, 10), (3, 1, 4, 7), 1 << 20),
                               ((4, 3, 100, 100), (1, 1, 1, 100), 8 * 250)]:
        block = bounded_block(shape, unit, 8, limit)
        assert math.prod(block) * 8 <= max(limit, math.prod(unit) * 8)
        assert all(b % u == 0 or b == n for b, u, n in zip(block, unit, shape))
        seen = np.zeros(shape, int)
        for sel in iter_block_slices(shape, block):
            assert all(s.start % u == 0 for s, u in zip(sel, unit))
            seen[sel] += 1
        assert np.all(seen == 1)


def test_derived_shape_fits_the_size():
    for size in (1 << 30, 256 << 20, 1 << 20, 4096, 8):
        shape = derive_shape(size)
        assert len(shape) == 4 and min(shape) >= 1 and shape[1] <= 10
        assert 0.9 * size <= math.prod(shape) * 8 <= size or size < 1000


# ---------------------------------------------------------------- failures leave nothing behind

def assert_empty(d):
    assert list(d.iterdir()) == [], list(d.iterdir())


@pytest.mark.parametrize("chunks", [[0, 1, 10, 10], [1, 1, 10, 42], [1, 2, 3], [1, 1, -3, 4], [1.5, 1, 2, 2]])
def test_impossible_chunk_shape(tmp_path, chunks):
    with pytest.raises(InputError, match="impossible"):
        write_4d(tmp_path / "f.nc", SHAPE, chunks=chunks)
    with pytest.raises(InputError, match="impossible"):
        make_data(tmp_path, size=100_000, kinds=("1d", "4d"), shape4d=SHAPE, chunks=chunks)
    assert_empty(tmp_path)


def test_chunk_larger_than_block_and_contiguous_deflate(tmp_path):
    with pytest.raises(InputError, match="per chunk"):
        write_4d(tmp_path / "f.nc", SHAPE, chunks=[7, 5, 23, 41], max_block_bytes=16 * 1024)
    with pytest.raises(InputError, match="chunked"):
        write_4d(tmp_path / "f.nc", SHAPE, chunks="contiguous", deflate=4)
    with pytest.raises(InputError):
        write_4d(tmp_path / "f.nc", SHAPE, deflate=11)
    assert_empty(tmp_path)


def fake_usage(free):
    usage = collections.namedtuple("usage", "total used free")
    return lambda path: usage(free * 2, free, free)


def test_disk_shortage_is_checked_for_all_files_first(tmp_path, monkeypatch):
    size = 4 << 20
    # Room for the two 1-D files alone (8 MiB * 1.05 + 1 MiB), not for the 4-D one as well.
    monkeypatch.setattr(shutil, "disk_usage", fake_usage(11 << 20))
    with pytest.raises(DiskSpaceError, match=r"need .* only 11MiB free in"):
        make_data(tmp_path, size=size, kinds=("1d", "4d"))
    assert_empty(tmp_path)
    with pytest.raises(DiskSpaceError):
        write_4d(tmp_path / "f.nc", (20, 10, 100, 100))
    assert_empty(tmp_path)
    made = make_data(tmp_path, size=size, kinds=("1d",))
    assert made["1d_bin"].stat().st_size == size


def test_missing_or_blocked_directory(tmp_path):
    with pytest.raises(DataError):
        write_4d(tmp_path / "nowhere" / "f.nc", SHAPE)
    with pytest.raises(DataError):
        write_1d(tmp_path / "nowhere" / "a.nc", tmp_path / "a.bin", 800)
    (tmp_path / "file").write_text("x")
    with pytest.raises(DataError):
        make_data(tmp_path / "file" / "sub", size=800)
    assert sorted(os.listdir(tmp_path)) == ["file"]


@pytest.mark.parametrize("exc", [RuntimeError, KeyboardInterrupt])
@pytest.mark.parametrize("kind", ["1d", "4d"])
def test_interrupted_write_leaves_no_file(tmp_path, exc, kind):
    calls = []

    def progress(n):
        calls.append(n)
        if len(calls) == 2:
            raise exc("stop")

    with pytest.raises(exc):
        make_data(tmp_path, size=1 << 20, kinds=(kind,), chunks=[1, 1, 10, 20] if kind == "4d" else None,
                  progress=progress, max_block_bytes=64 * 1024)
    assert len(calls) == 2
    assert_empty(tmp_path)


def test_bad_4d_options_stop_make_data_before_any_file(tmp_path):
    for kw in (dict(deflate=11), dict(dtype="i4"), dict(shape4d=(0, 1, 2, 3)),
               dict(chunks=[4, 5, 23, 41], max_block_bytes=8 << 10)):
        with pytest.raises(InputError):
            make_data(tmp_path, size=100_000, kinds=("1d", "4d"), **{"shape4d": SHAPE, **kw})
        assert_empty(tmp_path)


def test_disk_full_mid_write_is_a_disk_space_error(tmp_path):
    def progress(n):
        raise OSError(errno.ENOSPC, "No space left on device")

    with pytest.raises(DiskSpaceError):
        make_data(tmp_path, size=1 << 20, kinds=("1d",), progress=progress)
    assert_empty(tmp_path)


# ---------------------------------------------------------------- memory

_MEMORY_PROBE = r"""
import json, resource, sys
from climio.data import write_4d
out, chunks, deflate = sys.argv[1], json.loads(sys.argv[2]), int(sys.argv[3])
write_4d(out + "/warm.nc", (2, 2, 64, 64), chunks=chunks and [1, 1, 64, 64], deflate=deflate)
base = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
write_4d(out + "/big.nc", (32, 8, 128, 256), chunks=chunks, deflate=deflate, max_block_bytes=8 << 20)
print(json.dumps({"growth": (resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - base) * 1024}))
"""


@pytest.mark.parametrize("chunks,deflate", [(None, 0), ([1, 2, 64, 128], 1)])
def test_memory_stays_bounded(tmp_path, chunks, deflate):
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(p for p in sys.path if p))
    out = subprocess.run([sys.executable, "-c", _MEMORY_PROBE, str(tmp_path), json.dumps(chunks), str(deflate)],
                         capture_output=True, text=True, env=env, timeout=120)
    assert out.returncode == 0, out.stderr
    growth = json.loads(out.stdout)["growth"]
    file_bytes = 32 * 8 * 128 * 256 * 8  # 64 MiB
    assert (tmp_path / "big.nc").stat().st_size > 0.5 * file_bytes
    assert growth < 32 << 20, f"peak RSS grew by {growth / 2**20:.1f} MiB writing a 64 MiB file in 8 MiB blocks"


# ---------------------------------------------------------------- chunk specs

def test_parse_chunks():
    assert parse_chunks("contiguous") is None and parse_chunks(" Contiguous ") is None
    assert parse_chunks("default") == "default"
    assert parse_chunks("[1,1,180,360]") == [1, 1, 180, 360] == parse_chunks("1, 1, 180, 360")
    for bad in ("", "1,1,180", "1,1,180,360,2", "[1,1,a,2]", "chunky", "1;1;1;1", "-1,1,1,1"):
        with pytest.raises(InputError):
            parse_chunks(bad)


def test_default_chunks_without_compression_are_chunked(tmp_path):
    """netCDF4-python writes a filter-less variable without chunk sizes as contiguous;
    'default' must still give the library's chunk shape."""
    from climio.dataset.layout import library_default_chunks
    path = tmp_path / "d.nc"
    write_4d(path, [40, 4, 90, 180], chunks="default")
    with netCDF4.Dataset(path) as ds:
        assert ds.variables["ta"].chunking() == list(library_default_chunks([40, 4, 90, 180], 8))


# ---------------------------------------------------------------- the command after a SIGKILL

def test_make_data_names_and_removes_what_a_killed_run_left(tmp_path):
    """A `.NAME.tmp-PID` of a process that is gone (a SIGKILLed make-data) is named in one line and
    removed before writing; a live process's temporary is left alone. -o and OUTDIR are one option."""
    from conftest import run_cli
    gone = subprocess.Popen(["true"])
    gone.wait()                                   # reaped: its pid names no process
    d = tmp_path / "d"
    d.mkdir()
    stale = d / f".data1d.nc.tmp-{gone.pid}"
    stale.write_bytes(b"x" * 1000)
    live = d / f".data1d.bin.tmp-{os.getpid()}"   # this test's process is alive
    live.write_bytes(b"y")
    res = run_cli("make-data", "-o", d, "--size", "64KiB", "--seed", "5")
    assert res.returncode == 0, res.stderr
    said = [line for line in res.stderr.splitlines() if "interrupted" in line]
    assert said == [f"removed what an interrupted make-data left (its process is gone): {stale} (1000B)"]
    assert not stale.exists() and live.read_bytes() == b"y"
    want = values_1d(0, 64 * 1024 // 8, seed=5)
    assert np.array_equal(read_var(d / "data1d.nc", "data")[0], want)
    assert (d / "data1d.bin").read_bytes() == want.astype("<f8").tobytes()
    # the positional OUTDIR still works; two different directories are one clear error
    assert run_cli("make-data", tmp_path / "e", "--size", "8KiB").returncode == 0
    assert (tmp_path / "e" / "data1d.bin").stat().st_size == 8192
    res = run_cli("make-data", tmp_path / "f", "-o", tmp_path / "g", "--size", "8KiB")
    assert res.returncode == 2 and res.stderr.startswith("climio: error: two output directories")
