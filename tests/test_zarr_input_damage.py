"""A damaged Zarr input (issue 38 item 1, third case): a cut array metadata file is one line naming
it (a JSONDecodeError traceback before: the consolidated root still opened); a store with a chunk
object missing converts with one line saying how many chunks are read as the fill value (silently
before), and `rechunk --strict` refuses it."""

import os
import shutil
import subprocess
import sys

import netCDF4
import numpy as np
import pytest

import climio
from climio.base.errors import Exit

CLIMIO = os.path.join(os.path.dirname(sys.executable), "climio")
VALUES = np.arange(8 * 6 * 10, dtype=np.float32).reshape(8, 6, 10) + 1


@pytest.fixture(scope="module")
def stores(tmp_path_factory):
    d = tmp_path_factory.mktemp("zarr-damage")
    nc = d / "t.nc"
    with netCDF4.Dataset(nc, "w") as ds:
        for name, n in zip(("time", "lat", "lon"), VALUES.shape):
            ds.createDimension(name, n)
        ds.createVariable("tas", "f4", ("time", "lat", "lon"), fill_value=np.float32(-999))[:] = VALUES
    out = {}
    for fmt in (3, 2):
        out[fmt] = d / f"v{fmt}.zarr"
        climio.rechunk(str(nc), str(out[fmt]), chunks=["time/2"], workers=1, zarr_format=fmt)
    return out


def _copy(src, tmp_path, name="in.zarr"):
    dst = tmp_path / name
    shutil.copytree(src, dst)
    return dst


def _rechunk(*args, cwd):
    return subprocess.run([CLIMIO, "rechunk", *map(str, args)], capture_output=True, text=True, timeout=300, cwd=cwd)


@pytest.mark.parametrize("fmt,meta", [(3, "zarr.json"), (2, ".zarray")])
def test_truncated_array_metadata_is_one_line_naming_the_file(stores, tmp_path, fmt, meta):
    store = _copy(stores[fmt], tmp_path)
    f = store / "tas" / meta
    f.write_bytes(f.read_bytes()[: f.stat().st_size // 2])
    r = _rechunk(store, tmp_path / "out.nc", cwd=tmp_path)
    assert r.returncode == Exit.DATA, r.stderr[-3000:]
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith(f"climio: error: {f}: truncated or damaged Zarr metadata "
                                                   "(not valid JSON at line "), r.stderr[-3000:]
    assert not (tmp_path / "out.nc").exists()


def test_absent_chunk_is_said_and_strict_refuses_the_store(stores, tmp_path):
    store = _copy(stores[3], tmp_path)
    (store / "tas" / "c" / "1" / "0" / "0").unlink()      # time 2-3 of 4 chunks along time
    r = _rechunk(store, tmp_path / "out.nc", cwd=tmp_path)
    assert r.returncode == 0, r.stderr[-3000:]
    lines = [line for line in r.stderr.splitlines() if "chunks absent" in line]
    assert lines == [f"warning: {store}: 1 chunks absent, read as the fill value (/tas 1 of 4, fill value nan)"]
    with netCDF4.Dataset(tmp_path / "out.nc") as ds:
        ds.set_auto_maskandscale(False)
        got = ds["tas"][:]
    assert np.isnan(got[2:4]).all()   # the Zarr array's fill value (xarray writes NaN for floats)
    assert np.array_equal(np.delete(got, [2, 3], axis=0), np.delete(VALUES, [2, 3], axis=0))

    r = _rechunk(store, tmp_path / "strict.nc", "--strict", cwd=tmp_path)
    assert r.returncode == Exit.DATA
    assert r.stderr.strip().splitlines() == [f"climio: error: {store}: 1 chunks absent, read as the fill value "
                                             "(/tas 1 of 4, fill value nan): --strict refuses a store with absent chunks"]
    assert not (tmp_path / "strict.nc").exists()


def test_strict_passes_a_whole_store(stores, tmp_path):
    r = _rechunk(stores[3], tmp_path / "out.nc", "--strict", cwd=tmp_path)
    assert r.returncode == 0 and "absent" not in r.stderr, r.stderr


def test_each_call_in_one_process_lists_the_store_afresh(stores, tmp_path):
    """The store's listing (metadata check, absent chunks, stored sizes, readahead) is taken once per
    command and forgotten after it: a notebook that converts, loses a chunk file and converts again
    is told about the lost chunk, and the stored sizes are the store's as it is now."""
    from climio.rechunking.formats import zarr as zfmt
    store = _copy(stores[3], tmp_path)
    said = []
    climio.rechunk(str(store), str(tmp_path / "a.nc"), workers=1, say=said.append)
    assert said and not any("absent" in line for line in said) and not zfmt._LISTINGS
    before = zfmt.stored_bytes(store, zfmt.scan(store))["/tas"]
    zfmt.forget_local()
    chunk = store / "tas" / "c" / "1" / "0" / "0"
    size = chunk.stat().st_size
    chunk.unlink()
    said.clear()
    climio.rechunk(str(store), str(tmp_path / "b.nc"), workers=1, say=said.append)
    assert any("1 chunks absent" in line for line in said) and not zfmt._LISTINGS, said
    after = zfmt.stored_bytes(store, zfmt.scan(store))["/tas"]
    assert before - after == size
    # the listing's chunk files: the array's chunks in key order, none of its metadata documents
    files = zfmt.chunk_files(store, ["/tas"])
    zfmt.forget_local()
    assert files == sorted(files) and len(files) == 3 and all("/tas/c/" in f for f in files), files


def test_a_symlink_loop_in_a_store_is_listed_once(stores, tmp_path):
    """The store's one listing follows symlinked directories as zarr-python reads through them, and
    a link back up the tree is listed once, not forever."""
    from climio.rechunking.formats import zarr as zfmt
    store = _copy(stores[2], tmp_path)
    (store / "tas" / "loop").symlink_to(store)
    try:
        keys = zfmt._listing(store)
    finally:
        zfmt.forget_local()
    assert "tas/.zarray" in keys and not any(k.startswith("tas/loop/") for k in keys), sorted(keys)[:20]
    r = _rechunk(store, tmp_path / "out.nc", cwd=tmp_path)
    assert r.returncode == 0 and "absent" not in r.stderr, r.stderr[-2000:]
    with netCDF4.Dataset(tmp_path / "out.nc") as ds:
        assert np.array_equal(ds["tas"][:], VALUES)
