"""`climio make-refs` (issue 25): a kerchunk reference of a user's netCDF-4 file on the real test
server (SeaweedFS) or on local disk, read back through zarr-python and compared with netCDF4-python;
the command `climio advise` prints for a netCDF-4 object is the one run here."""

import json
import os
import shlex

import netCDF4
import numpy as np
import pytest

from conftest import run_cli
from climio.advice.object_store import reference_command
from climio.dataset.compression import Compression
from climio.data.writer import write_4d
from climio.stores.objects import put_bytes, upload

SHAPE, CHUNKS = (5, 2, 24, 36), [1, 1, 12, 36]


def _netcdf(path, codec="zlib"):
    """A chunked, compressed netCDF-4 field of random values (CF coordinates beside it)."""
    write_4d(path, SHAPE, chunks=CHUNKS, dtype="f4", random=True, seed=3,
             compression=Compression(codec, 4 if codec == "zlib" else 3, shuffle=True))
    return path


def _zarr_group(refs_path, remote_protocol, remote_options=None):
    """zarr-python 3 over the reference (fsspec's reference file system, asynchronous)."""
    import fsspec
    import zarr
    from zarr.storage import FsspecStore
    fs = fsspec.filesystem("reference", fo=str(refs_path), remote_protocol=remote_protocol, asynchronous=True,
                           remote_options={**(remote_options or {}), "asynchronous": True})
    return zarr.open_group(FsspecStore(fs, path="", read_only=True), mode="r")


def _same_as_netcdf(group, nc_path):
    """Every variable of the netCDF file reads back equal (values, dtype) through the reference."""
    with netCDF4.Dataset(nc_path) as ds:
        assert set(ds.variables) == set(group.array_keys())
        for name, v in ds.variables.items():
            v.set_auto_maskandscale(False)
            want, got = v[:], group[name][...]
            assert got.dtype == want.dtype and got.shape == want.shape, name
            np.testing.assert_array_equal(got, want, err_msg=name)
        # the field's chunks are the file's own (one ranged GET per HDF5 chunk)
        assert list(group["ta"].chunks) == list(ds.variables["ta"].chunking())


@pytest.fixture
def s3_env(s3_server, monkeypatch):
    for k, v in s3_server.env().items():
        monkeypatch.setenv(k, v)
    return {**os.environ, **s3_server.env()}


def test_advised_command_writes_a_reference_of_an_object(s3_server, s3_env, tmp_path):
    nc = _netcdf(tmp_path / "field.nc")
    upload(s3_server.endpoint, nc, "s3://climio/refs-test")
    url = "s3://climio/refs-test/field.nc"
    argv = shlex.split(reference_command(url))          # what `climio advise` prints for this object
    assert argv[:2] == ["climio", "make-refs"]
    work = tmp_path / "work"
    work.mkdir()
    out = run_cli(*argv[1:], cwd=work, timeout=120)
    assert out.returncode == 0, out.stderr
    refs = work / "field.nc.kerchunk.json"
    doc = json.loads(refs.read_text())
    assert any(isinstance(v, list) and v[0] == url for v in doc["refs"].values())   # byte ranges of the object
    assert [p.name for p in work.iterdir()] == [refs.name]                          # no temporary left
    text = out.stdout + out.stderr
    assert s3_server._secret not in text and s3_server._key not in text + refs.read_text()
    _same_as_netcdf(_zarr_group(refs, "s3", s3_server.endpoint.storage_options()), nc)
    # the line the command prints opens the data with xarray (credentials from the environment)
    import xarray
    hint = next(l for l in out.stdout.splitlines() if l.startswith("read it: "))[len("read it: "):]
    with eval(hint, {"xarray": xarray}) as ds:
        np.testing.assert_array_equal(ds["ta"].values, netCDF4.Dataset(nc).variables["ta"][:].data)
    # a second run refuses to replace it; --force does
    again = run_cli(*argv[1:], cwd=work, timeout=120)
    assert again.returncode == 2 and again.stderr.count("\n") == 1 and "--force" in again.stderr
    assert run_cli(*argv[1:], "--force", cwd=work, timeout=120).returncode == 0


def test_reference_written_beside_the_object_is_what_zarr_kerchunk_reads(s3_server, s3_env, tmp_path):
    from climio.measure.stacks_s3 import ZarrKerchunk
    nc = _netcdf(tmp_path / "z.nc", codec="zstd")
    upload(s3_server.endpoint, nc, "s3://climio/refs-test")
    url = "s3://climio/refs-test/z.nc"
    out = run_cli("make-refs", url, "-o", url + ".kerchunk.json", timeout=120)
    assert out.returncode == 0, out.stderr
    reader = ZarrKerchunk(s3_server.endpoint)
    reader.open(url, "ta")                                       # loads KEY.kerchunk.json from the bucket
    try:
        got = reader.read_slab([1, 0, 0, 0], [3, 2, 24, 36])
    finally:
        reader.close()
    with netCDF4.Dataset(nc) as ds:
        np.testing.assert_array_equal(got, ds.variables["ta"][1:4].data)


def test_local_file_reference_beside_it(tmp_path):
    nc = _netcdf(tmp_path / "local.nc")
    out = run_cli("make-refs", nc, timeout=120)
    assert out.returncode == 0, out.stderr
    refs = tmp_path / "local.nc.kerchunk.json"
    _same_as_netcdf(_zarr_group(refs, "file"), nc)


def test_one_line_errors_and_nothing_written(s3_server, s3_env, tmp_path):
    put_bytes(s3_server.endpoint, "s3://climio/refs-test/text.nc", b"not a netCDF file\n" * 100)
    nc3 = tmp_path / "three.nc"
    with netCDF4.Dataset(nc3, "w", format="NETCDF3_CLASSIC") as ds:
        ds.createDimension("x", 4)
        ds.createVariable("v", "f4", ("x",))[:] = 1
    cases = [("s3://climio/refs-test/text.nc", 3, "not a netCDF-4/HDF5 file"),
             ("s3://climio/refs-test/missing.nc", 3, "no such object"),
             (str(nc3), 3, "a netCDF-3 file"),
             (str(tmp_path / "missing.nc"), 3, "no such file"),
             ("s3://climio", 2, "s3://BUCKET/KEY")]
    for source, code, words in cases:
        out = run_cli("make-refs", source, "-o", tmp_path / "r.json", cwd=tmp_path, timeout=120)
        assert out.returncode == code, (source, out.stderr)
        assert out.stderr.count("\n") == 1 and words in out.stderr and "Traceback" not in out.stderr, out.stderr
        assert sorted(p.name for p in tmp_path.iterdir()) == ["three.nc"], source


def test_a_file_with_bare_dimensions_and_groups_is_referenced_whole(tmp_path):
    """make-refs checks the reference holds every netCDF variable of the file (a damaged file made
    kerchunk leave one out without a word): bare dimensions (HDF5 datasets that are no netCDF
    variable) are not asked of it, variables in groups are."""
    p = tmp_path / "bnds.nc"
    with netCDF4.Dataset(p, "w") as d:
        d.createDimension("time", None)
        d.createDimension("nb", 2)
        d.createDimension("lat", 3)
        d.createVariable("time", "f8", ("time",))[:] = np.arange(4)
        d.createVariable("time_bnds", "f8", ("time", "nb"))[:] = np.zeros((4, 2))
        d.createVariable("tas", "f4", ("time", "lat"), zlib=True)[:] = np.ones((4, 3))
        g = d.createGroup("sub")
        g.createDimension("x", 2)
        g.createVariable("w", "i4", ("x",))[:] = [1, 2]
    out = run_cli("make-refs", p, "-o", tmp_path / "bnds.json")
    assert out.returncode == 0, out.stderr
    refs = json.loads((tmp_path / "bnds.json").read_text())["refs"]
    held = {k.rsplit("/", 1)[0] for k in refs if k.endswith(".zarray")}
    assert {"time", "time_bnds", "tas", "sub/w"} <= held
    assert np.array_equal(_zarr_group(tmp_path / "bnds.json", "file")["sub/w"][:], [1, 2])
