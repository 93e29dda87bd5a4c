"""climio rechunk to and from Zarr (v3 and v2): every store written reads back through zarr-python
and xarray, and `xarray.open_zarr(out)` equals `xarray.open_dataset(in)`: values, coordinates,
attributes, _FillValue with missing values, packed int16 with scale_factor/add_offset, a CF time
with a non-standard calendar, dimension names, consolidated metadata."""

import json
import os
import subprocess
import sys
import warnings

import netCDF4
import numpy as np
import pytest
import xarray as xr
import zarr

from climio.rechunk.verify import compare_formats
from climio.rechunk.formats.zarr import scan

from conftest import run_cli


pytestmark = pytest.mark.usefixtures("builtin_rates")   # the planner's built-in rates, not this machine's profile

T, Y, X = 24, 20, 30
MPI_ROOT = {"OMPI_ALLOW_RUN_AS_ROOT": "1", "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM": "1"}  # with os.environ at call time
CLIMIO = os.path.join(os.path.dirname(sys.executable), "climio")


@pytest.fixture(scope="module")
def cf_file(tmp_path_factory):
    """Model output as it comes: [1,Y,X] deflate+shuffle chunks, an unlimited noleap time, a float
    field with _FillValue and missing values, a packed int16 field, bounds, global attributes."""
    path = tmp_path_factory.mktemp("zarr") / "cf.nc"
    rng = np.random.default_rng(4)
    with netCDF4.Dataset(path, "w") as ds:
        ds.title = "rechunk to Zarr"
        ds.Conventions = "CF-1.8"
        ds.realization = np.int32(3)
        ds.createDimension("time", None)
        ds.createDimension("lat", Y)
        ds.createDimension("lon", X)
        ds.createDimension("nv", 2)
        t = ds.createVariable("time", "f8", ("time",))
        t.units, t.calendar, t.axis, t.bounds = "days since 1850-01-01", "noleap", "T", "time_bnds"
        t[:] = np.arange(T) * 30.0 + 15.0
        tb = ds.createVariable("time_bnds", "f8", ("time", "nv"))
        tb[:] = np.stack([np.arange(T) * 30.0, np.arange(T) * 30.0 + 30.0], axis=1)
        lat = ds.createVariable("lat", "f4", ("lat",))
        lat.units, lat.standard_name = "degrees_north", "latitude"
        lat[:] = np.linspace(-85, 85, Y)
        lon = ds.createVariable("lon", "f4", ("lon",))
        lon.units, lon.standard_name = "degrees_east", "longitude"
        lon[:] = np.linspace(0, 348, X)
        tas = ds.createVariable("tas", "f4", ("time", "lat", "lon"), chunksizes=(1, Y, X), zlib=True, complevel=1,
                                shuffle=True, fill_value=np.float32(1e20))
        tas.units, tas.long_name, tas.cell_methods = "K", "air temperature", "time: mean"
        data = (250 + 40 * rng.random((T, Y, X))).astype("f4")
        data[3, :4, :5] = 1e20                      # missing values
        tas[:] = data
        pr = ds.createVariable("pr", "i2", ("time", "lat", "lon"), chunksizes=(1, Y, X), zlib=True, shuffle=True,
                               fill_value=np.int16(-32767))
        pr.scale_factor, pr.add_offset, pr.units = 0.002, 30.0, "kg m-2 d-1"
        pr.set_auto_maskandscale(False)
        packed = rng.integers(-15000, 15000, (T, Y, X)).astype("i2")
        packed[5, 2:6, 7] = -32767                  # missing packed values
        pr[:] = packed
        # packed with float32 scale_factor/add_offset: netCDF keeps the attributes' type, so xarray
        # decodes to float32; Zarr attributes are JSON numbers, so xarray decodes them to float64
        # (its own to_zarr does the same): the stored values and attributes are equal, not the dtype
        hfls = ds.createVariable("hfls", "i2", ("time", "lat", "lon"), chunksizes=(1, Y, X), zlib=True)
        hfls.scale_factor, hfls.add_offset = np.float32(0.01), np.float32(100.0)
        hfls.set_auto_maskandscale(False)
        hfls[:] = rng.integers(-20000, 20000, (T, Y, X)).astype("i2")
    return path


def _open(path):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return xr.open_zarr(path) if str(path).endswith(".zarr") else xr.open_dataset(path)


def assert_same_dataset(src, out):
    """xarray sees the same dataset: values, coordinates, attributes, and the CF encodings."""
    a, b = _open(src), _open(out)
    assert np.array_equal(raw(src, "hfls"), raw(out, "hfls"))
    assert a.hfls.dtype == np.float32 and b.hfls.dtype == np.float64 and a.hfls.attrs == b.hfls.attrs
    if str(out).endswith(".nc"):   # back in netCDF: written with float64 attributes, decoded as such
        a = a.assign(hfls=a.hfls.astype("f8"))
    xr.testing.assert_allclose(a.hfls.load(), b.hfls.load(), rtol=0, atol=1e-4)   # float32 rounding of ~300
    a, b = a.drop_vars("hfls"), b.drop_vars("hfls")
    xr.testing.assert_identical(a.load(), b.load())
    for name in a.variables:
        for key in ("units", "calendar", "scale_factor", "add_offset", "dtype"):
            if key in a[name].encoding:
                assert a[name].encoding[key] == b[name].encoding.get(key), (name, key)
        if "_FillValue" in a[name].encoding:
            assert np.array_equal(a[name].encoding["_FillValue"], b[name].encoding["_FillValue"], equal_nan=True)
    assert a.time.encoding["calendar"] == "noleap" and a.time.dtype == object   # cftime dates, not numbers
    assert int(np.isnan(b.tas.values).sum()) == 20 and int(np.isnan(b.pr.values).sum()) == 4


def raw(path, var):
    if str(path).endswith(".zarr"):
        return zarr.open_group(str(path), mode="r")[var][...]
    with netCDF4.Dataset(path) as ds:
        ds.set_auto_maskandscale(False)
        return ds[var][...]


def rechunk(*args):
    res = run_cli("rechunk", *args, "--json")
    assert res.returncode == 0, res.stderr
    return json.loads(res.stdout)


def mpirun(n, *args, timeout=300):
    return subprocess.run(["timeout", str(timeout), "mpirun", "--oversubscribe", "-n", str(n), CLIMIO, "rechunk",
                           *map(str, args)], capture_output=True, text=True, env=dict(os.environ, **MPI_ROOT))


def test_netcdf_to_zarr_v3(cf_file, tmp_path):
    out = tmp_path / "out.zarr"
    summary = rechunk(cf_file, out, "-c", f"time/{T},lat/1,lon/{X}", "--compression", "zstd3+shuffle", "--verify")
    assert summary["verified"] and set(summary["plans"]) == {"/tas", "/pr", "/hfls", "/time_bnds"}
    assert_same_dataset(cf_file, out)
    g = zarr.open_group(str(out), mode="r")
    assert g.metadata.zarr_format == 3
    tas = g["tas"]
    assert tas.chunks == (T, 1, X) and tas.shards is None
    assert tas.metadata.dimension_names == ("time", "lat", "lon")
    codecs = [c["name"] for c in tas.metadata.to_dict()["codecs"]]
    assert codecs == ["bytes", "blosc"]   # zstd3+shuffle in v3 specification codecs (test_rechunk_zarr_spec.py)
    assert tas.metadata.to_dict()["codecs"][1]["configuration"] == {"typesize": 4, "cname": "zstd", "clevel": 3,
                                                                     "shuffle": "shuffle", "blocksize": 0}
    assert g["pr"].dtype == np.int16 and np.array_equal(g["pr"][...], raw(cf_file, "pr"))   # packed as stored
    assert np.array_equal(g["tas"][...], raw(cf_file, "tas"))
    root = json.loads((out / "zarr.json").read_text())
    assert set(root["consolidated_metadata"]["metadata"]) >= {"tas", "pr", "time", "lat", "lon", "time_bnds"}
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out.zarr"], "temporary store left behind"


def test_netcdf_to_zarr_v2(cf_file, tmp_path):
    out = tmp_path / "v2.zarr"
    rechunk(cf_file, out, "-c", "time/12,lat/5", "--zarr-format", "2", "--compression", "gzip4+shuffle", "--verify")
    assert_same_dataset(cf_file, out)
    meta = json.loads((out / "tas" / ".zarray").read_text())
    assert meta["zarr_format"] == 2 and meta["chunks"] == [12, 5, X]
    assert meta["compressor"] == {"id": "gzip", "level": 4} and meta["filters"] == [{"id": "shuffle", "elementsize": 4}]
    assert meta["fill_value"] == float(np.float32(1e20))
    assert json.loads((out / "tas" / ".zattrs").read_text())["_ARRAY_DIMENSIONS"] == ["time", "lat", "lon"]
    assert "tas/.zarray" in json.loads((out / ".zmetadata").read_text())["metadata"]
    assert np.array_equal(raw(out, "pr"), raw(cf_file, "pr"))


def test_sharded_store_and_zarr_to_zarr(cf_file, tmp_path):
    sharded = tmp_path / "sharded.zarr"
    summary = rechunk(cf_file, sharded, "-c", "time/6,lat/1", "--shards", "time/24,lat/10",
                      "--compression", "blosc_lz4:5+shuffle", "--endian", "big", "--workers", "2")
    assert summary["plans"]["/tas"]["passes"][0]["dst"]["chunks"] == [24, 10, X]   # blocks align to shards
    assert_same_dataset(cf_file, sharded)
    tas = zarr.open_group(str(sharded), mode="r")["tas"]
    assert tas.shards == (24, 10, X) and tas.chunks == (6, 1, X)
    inner = tas.metadata.to_dict()["codecs"][0]["configuration"]["codecs"]
    assert inner[0] == {"name": "bytes", "configuration": {"endian": "big"}}
    assert len(list((sharded / "tas" / "c").rglob("*"))) - len(list((sharded / "tas" / "c").rglob("*/"))) >= 2
    again = tmp_path / "again.zarr"
    rechunk(sharded, again, "-c", "time/1,lat/20", "--compression", "zstd1", "--verify", "--max-mem", "64KiB")
    assert_same_dataset(cf_file, again)
    assert zarr.open_group(str(again), mode="r")["tas"].chunks == (1, 20, X)


def test_zarr_to_netcdf(cf_file, tmp_path):
    store = tmp_path / "in.zarr"
    rechunk(cf_file, store, "-c", f"time/{T},lat/1")
    out = tmp_path / "back.nc"
    rechunk(store, out, "-c", f"time/1,lat/{Y}", "--compression", "deflate2+shuffle", "--verify", "--workers", "2")
    assert_same_dataset(cf_file, out)
    with netCDF4.Dataset(out) as ds:
        assert ds["tas"].chunking() == [1, Y, X]
        f = ds["tas"].filters()
        assert f["zlib"] and f["shuffle"] and f["complevel"] == 2
        assert ds.dimensions["time"].size == T
    subprocess.run(["ncdump", "-h", str(out)], check=True, capture_output=True)
    assert np.array_equal(raw(out, "pr"), raw(cf_file, "pr"))
    infos = {i.path: i for i in scan(store)}
    assert infos["/tas"].dims == ("time", "lat", "lon") and infos["/tas"].chunks == (T, 1, X)


def test_under_mpirun_ranks_write_disjoint_shards(cf_file, tmp_path):
    out = tmp_path / "mpi.zarr"
    res = mpirun(2, cf_file, out, "-c", "time/24,lat/1", "--shards", "lat/5", "--verify", "--max-mem", "64KiB")
    assert res.returncode == 0, res.stderr
    assert res.stderr.count("rechunked") == 1 and "on 2 MPI ranks" in res.stderr
    assert_same_dataset(cf_file, out)
    assert zarr.open_group(str(out), mode="r")["tas"].shards == (24, 5, X)
    back = tmp_path / "mpi.nc"
    res = mpirun(2, out, back, "-c", "time/1", "--compression", "deflate1", "--verify")
    assert res.returncode == 0, res.stderr
    assert_same_dataset(cf_file, back)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["mpi.nc", "mpi.zarr"]


def test_verify_finds_a_changed_value_and_attribute(cf_file, tmp_path):
    out = tmp_path / "v.zarr"
    rechunk(cf_file, out, "-c", f"time/{T},lat/1")
    targets = [i for i in __import__("climio.rechunk.meta", fromlist=["scan"]).scan(cf_file)
               if i.path in ("/tas", "/pr", "/hfls", "/time_bnds")]
    assert compare_formats(cf_file, "netcdf4", out, "zarr", targets) == []
    g = zarr.open_group(str(out), mode="r+")
    g["pr"][7, 3, 4] = g["pr"][7, 3, 4] + 1
    g["lat"].attrs["units"] = "degrees"
    zarr.consolidate_metadata(str(out))          # xarray reads the consolidated metadata
    diffs = compare_formats(cf_file, "netcdf4", out, "zarr", targets)
    assert any(d.startswith("/pr: 1 raw values differ") for d in diffs), diffs
    assert any(d.startswith("/lat: attribute units") for d in diffs), diffs


def test_dry_run_and_bad_options(cf_file, tmp_path):
    out = tmp_path / "d.zarr"
    dry = run_cli("rechunk", cf_file, out, "-c", "time/6,lat/1", "--shards", "time/24,lat/10", "--dry-run")
    assert dry.returncode == 0, dry.stderr
    assert "predicted" in dry.stderr and "/tas ->" in dry.stderr and not out.exists()
    for args, message in [
        (["--shards", "lat/3", "-c", "lat/2"], "not a multiple"),
        (["--shards", "lat/10", "--zarr-format", "2"], "needs Zarr format 3"),
        (["--compression", "bzip2:5"], "Zarr output takes"),
        (["--endian", "middle"], "use little or big"),
    ]:
        res = run_cli("rechunk", cf_file, out, *args)
        assert res.returncode == 2 and res.stderr.count("climio: error") == 1, (args, res.stderr)
        assert message in res.stderr and "Traceback" not in res.stderr, (args, res.stderr)
    res = run_cli("rechunk", cf_file, tmp_path / "o.nc", "--zarr-format", "2")
    assert res.returncode == 2 and "is for Zarr output" in res.stderr
    assert os.listdir(tmp_path) == []
    out.mkdir()
    (out / "zarr.json").write_text("{}")
    res = run_cli("rechunk", cf_file, out)
    assert res.returncode == 2 and "exists" in res.stderr
    rechunk(cf_file, out, "--force", "-c", "time/24")
    assert_same_dataset(cf_file, out)


@pytest.mark.parametrize("name", ["cf", "groups", "classic"])
def test_corpus_files_to_zarr_and_back(tmp_path, name):
    """Files with bounds, scalar and char variables, groups, big-endian and quantized values,
    netCDF-3: to Zarr and back to netCDF-4, each step verified (values, attributes, encodings)."""
    from rechunk_corpus import make_corpus
    src = make_corpus(tmp_path / "in")[name]
    store, back = tmp_path / f"{name}.zarr", tmp_path / f"{name}.nc"
    rechunk(src, store, "--balanced", "--chunk-bytes", "4KiB", "--verify", "--workers", "1")
    rechunk(store, back, "--verify", "--workers", "1")
    a, b = _open(src), _open(back)
    for g in sorted({i.path.rsplit("/", 1)[0] for i in __import__("climio.rechunk.meta", fromlist=["scan"]).scan(src)}):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            ga = xr.open_dataset(src, group=g or None)
            gb = xr.open_dataset(back, group=g or None)
        # float32 scale_factor comes back float64 (Zarr's JSON attributes): equal values, wider dtype
        packed = [v for v in ga.data_vars if "scale_factor" in ga[v].encoding and ga[v].dtype != gb[v].dtype]
        for v in packed:
            assert ga[v].dtype == np.float32 and gb[v].dtype == np.float64
            xr.testing.assert_allclose(ga[v].astype("f8").load(), gb[v].load(), rtol=0, atol=1e-3)
        xr.testing.assert_identical(ga.drop_vars(packed).load(), gb.drop_vars(packed).load())


def test_types_xarray_cannot_store_are_one_line_errors(tmp_path):
    from rechunk_corpus import make_corpus
    src = make_corpus(tmp_path / "in")["types"]
    res = run_cli("rechunk", src, tmp_path / "t.zarr")
    assert res.returncode == 3 and res.stderr.count("climio: error") == 1 and "Traceback" not in res.stderr
    assert sorted(p.name for p in tmp_path.iterdir()) == ["in"]
