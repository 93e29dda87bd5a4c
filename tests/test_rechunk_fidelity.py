"""climio rechunk between netCDF-4 and Zarr keeps what the file says (issue 24, real-corpus fidelity):
times carried as stored with their units and calendar text as the input has them (xarray's own
writer rewrites 'days since 2000-01-01 00:00:00' as 'days since 2000-01-01', refuses 'months since'
and the year-1 date '1-1-1', adds a calendar and copies a time's units onto its bounds), empty
groups kept, and --verify comparing the raw numbers and the attribute text. Every copy is read back
through zarr-python, xarray and netCDF4-python. The stale temporary store a SIGKILLed run leaves is
recognised by the next run to the same output and removed, as the netCDF path's temporary file is."""

import json
import os
import signal
import time
import warnings

import netCDF4
import numpy as np
import pytest
import xarray as xr
import zarr

from climio.rechunking.meta import scan
from climio.rechunking.verify import compare_formats

from conftest import run_cli, slow_rechunk_source, start_slow_rechunk

pytestmark = pytest.mark.usefixtures("builtin_rates")

T, X = 6, 8
# the time variables and the attributes each must keep, exactly (and no other)
TIMES = {
    "time": {"units": "months since 1-1-1", "axis": "T"},                       # xarray cannot decode it
    "t360": {"units": "days since 2000-01-01 00:00:00", "calendar": "360_day", "bounds": "t360_bnds"},
    "tstd": {"units": "hours since 1990-01-01 00:00:00"},                       # no calendar attribute
    "wait": {"units": "days", "long_name": "a time span"},                      # a timedelta, for xarray
}


@pytest.fixture(scope="module")
def src(tmp_path_factory):
    """A netCDF-4 file with the time variables above, a time's bounds without units (CF: they take
    the time's), a chunked field to re-lay out, an empty group with attributes and an empty child,
    and a group holding a variable whose own child group is empty."""
    path = tmp_path_factory.mktemp("fidelity") / "src.nc"
    with netCDF4.Dataset(path, "w") as ds:
        ds.title = "fidelity"
        ds.createDimension("time", None)
        ds.createDimension("x", X)
        ds.createDimension("nv", 2)
        for name, attrs in TIMES.items():
            v = ds.createVariable(name, "i4" if name == "t360" else "f8", ("time",))
            v.setncatts(attrs)
            v[:] = np.arange(T) * (30 if name == "t360" else 1.5)
        b = ds.createVariable("t360_bnds", "i4", ("time", "nv"))
        b[:] = np.stack([np.arange(T) * 30, np.arange(T) * 30 + 30], axis=1)
        f = ds.createVariable("field", "f4", ("time", "x"), chunksizes=(1, X), zlib=True, complevel=1)
        f.units = "K"
        f[:] = np.arange(T * X, dtype="f4").reshape(T, X)
        e = ds.createGroup("empty")
        e.note = "nothing here"
        e.createGroup("deeper")
        s = ds.createGroup("sub")
        s.createDimension("y", 3)
        y = s.createVariable("when", "f8", ("y",))
        y.units = "days since 1-1-1"
        y.calendar = "noleap"
        y[:] = [0.0, 365.0, 730.5]
        # a 2-D coordinate with bounds: xarray's netCDF writer drops a bounds attribute equal to its
        # parent's (units here) and, decoding `coordinates`, would give lat_bnds one of its own
        s.createDimension("xx", 2)
        s.createDimension("nv4", 4)
        lat = s.createVariable("lat", "f4", ("y", "xx"))
        lat.setncatts({"units": "degrees_north", "bounds": "lat_bnds"})
        lat[:] = np.arange(6, dtype="f4").reshape(3, 2)
        lb = s.createVariable("lat_bnds", "f4", ("y", "xx", "nv4"))
        lb.setncatts({"comment": "cell corners", "units": "degrees_north"})
        lb[:] = np.arange(24, dtype="f4").reshape(3, 2, 4)
        sst = s.createVariable("sst", "f4", ("y", "xx"))
        sst.setncatts({"units": "K", "coordinates": "lat"})
        sst[:] = np.ones((3, 2), "f4")
        s.createGroup("inner")
    return path


def rechunk(*args):
    res = run_cli("rechunk", *map(str, args), "--json")
    assert res.returncode == 0, res.stderr
    assert "Traceback" not in res.stderr
    return json.loads(res.stdout)


def open_xr(path, group=None, **kw):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        if str(path).endswith(".zarr"):
            return xr.open_zarr(path, group=group, consolidated=True, **kw).load()
        return xr.open_dataset(path, group=group, **kw).load()


def zarr_attrs(arr) -> dict:
    return {k: v for k, v in arr.attrs.items() if k != "_ARRAY_DIMENSIONS"}   # Zarr v2's dimension names


def check_times_in_zarr(src, store):
    """zarr-python: the stored numbers and the attributes, exactly those of the input."""
    g = zarr.open_group(str(store), mode="r")
    with netCDF4.Dataset(src) as ds:
        ds.set_auto_maskandscale(False)
        for name, attrs in TIMES.items():
            assert zarr_attrs(g[name]) == attrs, (name, dict(g[name].attrs))
            assert np.array_equal(g[name][...], ds[name][...]) and g[name].dtype == ds[name].dtype
        assert zarr_attrs(g["t360_bnds"]) == {}, "a bounds variable got attributes the input did not have"
        assert zarr_attrs(g["sub/when"]) == {"units": "days since 1-1-1", "calendar": "noleap"}
        assert zarr_attrs(g["sub/lat_bnds"]) == {"comment": "cell corners", "units": "degrees_north"}
        assert zarr_attrs(g["sub/sst"]) == {"units": "K", "coordinates": "lat"}



def check_groups_in_zarr(store):
    g = zarr.open_group(str(store), mode="r")
    assert dict(g["empty"].attrs) == {"note": "nothing here"}
    assert sorted(n for n, _ in g["empty"].groups()) == ["deeper"]
    assert sorted(n for n, _ in g["sub"].groups()) == ["inner"]
    root = json.loads((store / "zarr.json").read_text()) if (store / "zarr.json").is_file() else None
    if root is not None:     # v3: the empty groups are in the consolidated metadata xarray reads
        assert {"empty", "empty/deeper", "sub/inner"} <= set(root["consolidated_metadata"]["metadata"])


def check_netcdf(src, back):
    """netCDF4-python: the same attributes (names and text), numbers and groups as the input."""
    with netCDF4.Dataset(src) as a, netCDF4.Dataset(back) as b:
        for ds in (a, b):
            ds.set_auto_maskandscale(False)
        for name in [*TIMES, "t360_bnds", "field", "sub/lat", "sub/lat_bnds", "sub/sst"]:
            assert [(k, b[name].getncattr(k)) for k in b[name].ncattrs()] == \
                   [(k, a[name].getncattr(k)) for k in a[name].ncattrs()], name   # in order too
            assert np.array_equal(a[name][...], b[name][...]) and a[name].dtype == b[name].dtype
        assert b["empty"].getncattr("note") == "nothing here" and list(b["empty"].groups) == ["deeper"]
        assert list(b["sub"].groups) == ["inner"] and b["sub/when"].units == "days since 1-1-1"


def check_xarray_equal(src, copy):
    """xarray reads the copy as it reads the input: undecoded identical in every group; decoded
    identical where xarray can decode (not 'months since 1-1-1' in the standard calendar, which it
    refuses in both), with the same CF encodings (the units text, the calendar)."""
    for group in (None, "sub", "empty", "empty/deeper", "sub/inner"):
        xr.testing.assert_identical(open_xr(src, group, decode_times=False, decode_timedelta=False),
                                    open_xr(copy, group, decode_times=False, decode_timedelta=False))
    for path in (src, copy):
        with pytest.raises(ValueError, match="months since 1-1-1"):
            open_xr(path)
    a = open_xr(src, drop_variables=["time"], decode_timedelta=True)
    b = open_xr(copy, drop_variables=["time"], decode_timedelta=True)
    xr.testing.assert_identical(a, b)
    assert a.t360.dtype == object and a.wait.dtype.kind == "m"        # decoded: cftime dates, a timedelta
    for name in ("t360", "tstd", "t360_bnds", "wait"):
        for key in ("units", "calendar", "dtype"):
            assert a[name].encoding.get(key) == b[name].encoding.get(key), (name, key)
    assert b.t360.encoding["units"] == "days since 2000-01-01 00:00:00"
    assert "calendar" not in b.tstd.attrs and "units" not in b.t360_bnds.attrs
    xr.testing.assert_identical(open_xr(src, "sub"), open_xr(copy, "sub"))   # noleap from year 1: cftime


@pytest.mark.parametrize("zarr_format", [3, 2])
def test_times_and_groups_to_zarr_and_back(src, tmp_path, zarr_format):
    store, again, back = tmp_path / "a.zarr", tmp_path / "b.zarr", tmp_path / "back.nc"
    summary = rechunk(src, store, "-c", f"time/{T},x/2", "--zarr-format", zarr_format, "--verify")
    assert summary["verified"] and "/field" in summary["plans"]
    assert zarr.open_group(str(store), mode="r")["field"].chunks == (T, 2)
    check_times_in_zarr(src, store)
    check_groups_in_zarr(store)
    check_xarray_equal(src, store)
    rechunk(store, again, "-c", "time/2,x/8", "--zarr-format", zarr_format, "--verify")      # Zarr -> Zarr
    check_times_in_zarr(src, again)
    check_groups_in_zarr(again)
    check_xarray_equal(src, again)
    rechunk(again, back, "-c", "time/3,x/4", "--compression", "deflate1", "--verify")       # Zarr -> netCDF-4
    check_netcdf(src, back)
    check_xarray_equal(src, back)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a.zarr", "b.zarr", "back.nc"]
    assert not any(p.name.startswith(".climio") for p in store.iterdir()), "the staging marker was left in"


def test_verify_compares_the_units_text_and_the_groups(src, tmp_path):
    """'days since 2000-01-01' names the same instants as the input's '... 00:00:00', but it is not
    what the file said: --verify reports it, and a calendar added, a changed stored time, a lost
    empty group."""
    store = tmp_path / "v.zarr"
    rechunk(src, store, "-c", f"time/{T}")
    targets = [i for i in scan(src) if i.path == "/field"]
    assert compare_formats(src, "netcdf4", store, "zarr", targets) == []
    g = zarr.open_group(str(store), mode="r+")
    g["t360"].attrs["units"] = "days since 2000-01-01"
    g["tstd"].attrs["calendar"] = "standard"
    g["time"][2] = g["time"][2] + 1.0
    del g["empty"]["deeper"]
    zarr.consolidate_metadata(str(store))
    diffs = compare_formats(src, "netcdf4", store, "zarr", targets)
    assert any(d.startswith("/t360: attribute units: 'days since 2000-01-01 00:00:00'") for d in diffs), diffs
    assert any(d.startswith("/tstd: attribute calendar only in second file") for d in diffs), diffs
    assert any(d.startswith("/time: values differ") for d in diffs), diffs
    assert "group /empty/deeper missing in second file" in diffs, diffs


def test_killed_zarr_run_is_cleaned_up_by_the_next(tmp_path):
    """SIGKILL leaves the temporary store `.o.zarr.tmp-PID` (with climio's marker); the next run to
    o.zarr names it in one line and removes it, as the netCDF path does with `.o.nc.tmp-PID`;
    --dry-run only names it; a directory of that name without the marker, or of a live process,
    is never touched."""
    source = slow_rechunk_source(tmp_path / "slow.nc")
    out = tmp_path / "out" / "o.zarr"
    out.parent.mkdir()
    proc, started = start_slow_rechunk(source, out)
    assert started, proc.communicate()
    time.sleep(0.2)
    assert proc.poll() is None, "the conversion finished before it could be killed: make the input larger"
    proc.send_signal(signal.SIGKILL)
    proc.communicate(timeout=60)
    stale = out.parent / f".o.zarr.tmp-{proc.pid}"
    assert sorted(os.listdir(out.parent)) == [stale.name] and (stale / ".climio-staging").is_file()

    dry = run_cli("rechunk", source, out, "-c", "time/64,lev/1,lat/1,lon/128", "--dry-run")
    assert dry.returncode == 0 and stale.name in dry.stderr and stale.is_dir(), dry.stderr
    res = run_cli("rechunk", source, out, "-c", "time/64,lev/1,lat/1,lon/128", "--verify")
    assert res.returncode == 0, res.stderr
    lines = [line for line in res.stderr.splitlines() if "interrupted" in line]
    assert len(lines) == 1 and str(stale) in lines[0] and "removed" in lines[0], res.stderr
    assert os.listdir(out.parent) == ["o.zarr"]
    with netCDF4.Dataset(source) as a:
        assert np.array_equal(a["ta"][...], zarr.open_group(str(out), mode="r")["ta"][...])

    # not ours (no marker), or ours but its process lives: left alone, nothing said
    foreign = out.parent / f".o.zarr.tmp-{proc.pid}"
    foreign.mkdir()
    (foreign / "keep.txt").write_text("a user's")
    live = out.parent / f".o.zarr.tmp-{os.getpid()}"
    live.mkdir()
    (live / ".climio-staging").write_text("busy")
    res = run_cli("rechunk", source, out, "-c", "time/64,lev/1,lat/1,lon/128", "--force")
    assert res.returncode == 0 and "interrupted" not in res.stderr, res.stderr
    assert (foreign / "keep.txt").read_text() == "a user's" and live.is_dir()
