"""Zarr v3 stores climio writes use only codecs of the v3 specification (bytes, blosc, zstd, gzip,
sharding_indexed): zarr-python opens them with warnings as errors, and a second implementation
(tensorstore, C++) reads the same values. The chunks are written by climio's own codec path
(rechunk.zarr_chunks in the workers), so this also checks those bytes against the codec specs.
Zarr v2 keeps numcodecs' shuffle filter (test_rechunk_zarr.py: test_netcdf_to_zarr_v2)."""

import json
import warnings

import netCDF4
import numpy as np
import pytest
import tensorstore as ts   # a missing tensorstore fails here, loudly: it is a test dependency
import xarray as xr
import zarr

from climio.dataset.compression import Compression
from climio.rechunk.formats.zarr import compression_of

from conftest import run_cli

pytestmark = pytest.mark.usefixtures("builtin_rates")

T, Y, X = 20, 12, 16
SPEC_CODECS = {"bytes", "blosc", "zstd", "gzip", "sharding_indexed", "crc32c", "transpose"}


@pytest.fixture(scope="module")
def nc_file(tmp_path_factory):
    path = tmp_path_factory.mktemp("spec") / "in.nc"
    rng = np.random.default_rng(7)
    with netCDF4.Dataset(path, "w") as ds:
        ds.createDimension("time", None)
        ds.createDimension("lat", Y)
        ds.createDimension("lon", X)
        t = ds.createVariable("time", "f8", ("time",))
        t.units, t.calendar = "days since 2000-01-01", "noleap"
        t[:] = np.arange(T) + 0.5
        ds.createVariable("lat", "f4", ("lat",))[:] = np.linspace(-60, 60, Y)
        ds.createVariable("lon", "f4", ("lon",))[:] = np.linspace(0, 350, X)
        tas = ds.createVariable("tas", "f4", ("time", "lat", "lon"), chunksizes=(1, Y, X), zlib=True, complevel=1,
                                shuffle=True, fill_value=np.float32(1e20))
        data = (250 + 40 * rng.random((T, Y, X))).astype("f4")
        data[2, :3, :4] = 1e20
        tas[:] = data
        pr = ds.createVariable("pr", "i2", ("time", "lat", "lon"), chunksizes=(1, Y, X), zlib=True, shuffle=True)
        pr[:] = rng.integers(-3000, 3000, (T, Y, X), dtype="i2")
    return path


def _raw(path, name):
    with netCDF4.Dataset(path) as ds:
        ds.set_auto_maskandscale(False)
        return ds[name][...]


def _codec_names(meta: dict) -> set:
    out = set()
    for c in meta["codecs"]:
        out.add(c["name"])
        if c["name"] == "sharding_indexed":
            out |= _codec_names({"codecs": c["configuration"]["codecs"] + c["configuration"]["index_codecs"]})
    return out


CASES = {   # --compression -> (the blosc cname and shuffle it becomes, or the single codec's name)
    "deflate1+shuffle": ("blosc", "zlib", "shuffle"),
    "zstd3+shuffle": ("blosc", "zstd", "shuffle"),
    "gzip4": ("gzip", None, None),
    "zstd2": ("zstd", None, None),
    "blosc_lz4:5+shuffle": ("blosc", "lz4", "shuffle"),
    "none": (None, None, None),
}


@pytest.mark.parametrize("setting,sharded", [(c, False) for c in CASES]
                         + [("deflate1+shuffle", True), ("zstd2", True)])
def test_v3_store_reads_without_warnings_in_zarr_python_and_tensorstore(nc_file, tmp_path, setting, sharded):
    out = tmp_path / "out.zarr"
    shards = ["--shards", "time/10,lat/12"] if sharded else []
    res = run_cli("rechunk", nc_file, out, "-c", "time/5,lat/6", "--compression", setting, *shards,
                  "--workers", "2", "--json")
    assert res.returncode == 0, res.stderr
    name, cname, shuffle = CASES[setting]
    for var in ("tas", "pr"):
        meta = json.loads((out / var / "zarr.json").read_text())
        assert _codec_names(meta) <= SPEC_CODECS, meta["codecs"]
        codecs = meta["codecs"][0]["configuration"]["codecs"] if sharded else meta["codecs"]
        assert [c["name"] for c in codecs] == ["bytes"] + ([name] if name else [])
        if cname:
            assert codecs[1]["configuration"]["cname"] == cname and codecs[1]["configuration"]["shuffle"] == shuffle
    with warnings.catch_warnings():
        warnings.simplefilter("error")      # "not in the Zarr version 3 specification" would fail here
        g = zarr.open_group(str(out), mode="r")
        got = {v: g[v][...] for v in ("tas", "pr")}
        ds = xr.open_zarr(str(out)).load()
    want = xr.open_dataset(nc_file).load()
    xr.testing.assert_identical(ds, want)
    for var in ("tas", "pr"):
        raw = _raw(nc_file, var)
        np.testing.assert_array_equal(got[var], raw)
        arr = ts.open({"driver": "zarr3", "kvstore": {"driver": "file", "path": str(out / var)}}, read=True).result()
        np.testing.assert_array_equal(arr.read().result(), raw)
        assert arr.domain.labels == ("time", "lat", "lon")


def test_blosc_carrying_a_shuffle_reads_back_as_the_setting(nc_file, tmp_path):
    """deflate+shuffle written as blosc(zlib, shuffle) is deflate+shuffle again when the store is
    read (so Zarr -> netCDF keeps HDF5's own deflate and shuffle filters, no blosc plugin)."""
    store, back = tmp_path / "s.zarr", tmp_path / "back.nc"
    assert run_cli("rechunk", nc_file, store, "-c", "time/5", "--compression", "deflate2+shuffle").returncode == 0
    arr = zarr.open_group(str(store), mode="r")["tas"]
    assert compression_of(arr) == Compression("zlib", 2, True)
    res = run_cli("rechunk", store, back, "-c", "time/20", "--verify")
    assert res.returncode == 0, res.stderr
    with netCDF4.Dataset(back) as ds:
        assert ds["tas"].filters()["zlib"] and ds["tas"].filters()["shuffle"]
        assert ds["tas"].filters()["complevel"] == 2
    np.testing.assert_array_equal(_raw(back, "tas"), _raw(nc_file, "tas"))
