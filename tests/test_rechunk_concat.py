"""climio rechunk 'in/*.nc' OUT --concat time (and make-refs --concat): many CMIP-style files, one set
per calendar, written as one Zarr store or netCDF-4 file identical to
xr.open_mfdataset(files, combine='by_coords', data_vars='minimal', coords='minimal', compat='override',
join='exact'); files ordered by time, not by name; gaps said, overlaps refused unless allowed;
inconsistent files refused before anything is written; a glob into OUT.zarr without --concat refused."""

import json

import netCDF4
import numpy as np
import pytest
import xarray as xr

from cmip_files import write_set
from conftest import run_cli

pytestmark = pytest.mark.usefixtures("builtin_rates")

SPANS = [(1850, 2), (1852, 3), (1855, 1)]   # 72 months; chunks of 7 steps straddle both file ends


def mfdataset(paths):
    return xr.open_mfdataset(sorted(map(str, paths)), combine="by_coords", data_vars="minimal", coords="minimal",
                             compat="override", join="exact").load()


def files(tmp_path, calendar, spans=SPANS, name="in"):
    d = tmp_path / name
    d.mkdir()
    paths = write_set(d, calendar, spans, seed=len(calendar))
    # names whose sorted order is not the time order: the files must be ordered by their times
    renamed = []
    for p, prefix in zip(paths, "cab"):
        renamed.append(p.rename(p.with_name(f"{prefix}_{p.name}")))
    return d, renamed


def rechunk(*args):
    res = run_cli("rechunk", *args, "--json")
    assert res.returncode == 0, res.stderr
    return json.loads(res.stdout), res.stderr


@pytest.mark.parametrize("calendar", ["standard", "noleap", "360_day"])
def test_glob_to_one_zarr_store_is_open_mfdataset(tmp_path, calendar):
    d, paths = files(tmp_path, calendar)
    out = tmp_path / "all.zarr"
    summary, err = rechunk(f"{d}/*.nc", out, "--concat", "time", "-c", "time/7,lat/9", "--max-mem", "64KiB",
                           "--workers", "2")
    assert summary["steps"] == 72 and [p.split("/")[-1][0] for p in summary["inputs"]] == ["c", "a", "b"]
    assert summary["blocks"]["/tas"] > 1 and summary["block_bytes"] <= (64 << 10) // 4   # bounded: many blocks
    assert "kept from the first" in err and "creation_date, tracking_id" in err
    assert "gap" not in err and "overlap" not in err
    with xr.open_zarr(out) as got:
        xr.testing.assert_identical(got.load(), mfdataset(paths))
        assert got.tas.encoding["chunks"] == (7, 9, 24)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["all.zarr", "in"], "temporary store left behind"


def test_glob_to_one_netcdf_file_and_one_reference(tmp_path):
    d, paths = files(tmp_path, "noleap")
    out, refs = tmp_path / "all.nc", tmp_path / "all.json"
    rechunk(f"{d}/*.nc", out, "--concat", "time", "-c", "time/12", "--max-mem", "64KiB", "--compression",
            "deflate3+shuffle")
    with xr.open_dataset(out) as got:
        xr.testing.assert_identical(got.load(), mfdataset(paths))
    with netCDF4.Dataset(out) as ds:
        assert ds["tas"].chunking() == [12, 18, 24] and ds["tas"].filters()["complevel"] == 3
    res = run_cli("make-refs", f"{d}/*.nc", "-o", refs, "--concat", "time")
    assert res.returncode == 0, res.stderr
    with xr.open_dataset("reference://", engine="zarr", consolidated=False,
                         storage_options={"fo": str(refs), "remote_protocol": "file"}) as got:
        got, want = got.load(), mfdataset(paths)
        assert got.sizes["time"] == 72
        for name in want.variables:
            np.testing.assert_array_equal(got[name].values, want[name].values)


def test_a_gap_is_said_and_written(tmp_path):
    d, paths = files(tmp_path, "360_day", [(1850, 2), (1853, 1)])
    out = tmp_path / "gap.zarr"
    _, err = rechunk(f"{d}/*.nc", out, "--concat", "time", "-c", "time/12")
    gaps = [line for line in err.splitlines() if line.startswith("gap in time")]
    assert len(gaps) == 1 and "12 step(s) of 30 days missing" in gaps[0]
    with xr.open_zarr(out) as got:
        xr.testing.assert_identical(got.load(), mfdataset(paths))


def test_an_overlap_is_refused_unless_allowed(tmp_path):
    d, paths = files(tmp_path, "standard", [(1850, 2), (1851, 2)])
    out = tmp_path / "ovl.zarr"
    res = run_cli("rechunk", f"{d}/*.nc", out, "--concat", "time")
    assert res.returncode == 3 and len(res.stderr.strip().splitlines()) <= 2, res.stderr
    assert "overlap in time" in res.stderr and "12 step(s) repeated" in res.stderr and "--allow-overlap" in res.stderr
    assert "Traceback" not in res.stderr and not out.exists() and sorted(p.name for p in tmp_path.iterdir()) == ["in"]
    summary, err = rechunk(f"{d}/*.nc", out, "--concat", "time", "--allow-overlap")
    assert summary["steps"] == 48 and "overlap in time" in err
    with xr.open_zarr(out, decode_times=False) as got:
        opened = [xr.open_dataset(p, decode_times=False) for p in sorted(paths, key=lambda p: p.name[2:])]
        want = xr.concat(opened, "time", data_vars="minimal", coords="minimal", compat="override", join="exact",
                         combine_attrs="override")
        xr.testing.assert_identical(got.load(), want.load())


def test_inconsistent_files_are_refused_before_anything_is_written(tmp_path):
    d, paths = files(tmp_path, "noleap")
    out = tmp_path / "bad.zarr"
    with netCDF4.Dataset(paths[1], "a") as ds:
        ds["tas"].units = "degC"
    res = run_cli("rechunk", f"{d}/*.nc", out, "--concat", "time")
    assert res.returncode == 3 and len(res.stderr.strip().splitlines()) == 1, res.stderr
    assert f"tas has units 'degC' in {paths[1].name}, 'K' in" in res.stderr and not out.exists()
    with netCDF4.Dataset(paths[1], "a") as ds:
        ds["tas"].units = "K"
        ds["lat"][0] = -89.5
    res = run_cli("rechunk", f"{d}/*.nc", out, "--concat", "time")
    assert res.returncode == 3 and "coordinate lat differs between" in res.stderr and not out.exists()
    with netCDF4.Dataset(paths[1], "a") as ds:
        ds["lat"][0] = -85.0
        ds["time"].calendar = "360_day"
    res = run_cli("rechunk", f"{d}/*.nc", out, "--concat", "time")
    assert res.returncode == 3 and "time has calendar '360_day'" in res.stderr and not out.exists()
    res = run_cli("rechunk", f"{d}/*.nc", out, "--concat", "lev")
    assert res.returncode == 2 and "has no dimension lev" in res.stderr
    (d / "z_broken.nc").write_bytes(b"not a netCDF file" * 100)
    res = run_cli("rechunk", f"{d}/*.nc", out, "--concat", "time")
    assert res.returncode == 3 and len(res.stderr.strip().splitlines()) == 1, res.stderr
    assert "z_broken.nc: not a readable netCDF file" in res.stderr and not out.exists()


def test_a_glob_into_a_zarr_name_without_concat_is_refused(tmp_path):
    d, _ = files(tmp_path, "noleap")
    res = run_cli("rechunk", f"{d}/*.nc", tmp_path / "many.zarr", "--for", "t")
    assert res.returncode == 2 and len(res.stderr.strip().splitlines()) == 1
    assert "pass --concat DIM" in res.stderr and not (tmp_path / "many.zarr").exists()
    res = run_cli("rechunk", f"{d}/*.nc", tmp_path / "one.zarr", "--concat", "time", "--var", "tas")
    assert res.returncode == 2 and "--var is not supported with --concat" in res.stderr   # pr would load whole
    assert not (tmp_path / "one.zarr").exists()
