"""climio.stsa workflow: the Python API equals the numerics, files and globs in, one-line errors
from the command, worker counts give identical spectra, and the netCDF output round-trips."""

import json
import os
import subprocess
import sys

import numpy as np
import pytest

import xarray as xr

from climio import stsa  # noqa: E402
from climio.base.errors import DataError  # noqa: E402
from climio.stsa import output, spectra as sp, workflow  # noqa: E402

CLIMIO = os.path.join(os.path.dirname(sys.executable), "climio")
SPD, NDAYS, NY, NX = 4, 40, 8, 16
WIN, SKIP = 10, -5
FIELDS = ("sym_raw", "asym_raw", "sym", "asym", "background", "sym_ratio", "asym_ratio")


def field(nt=SPD * NDAYS, ny=NY, nx=NX, seed=0, nz=None):
    rng = np.random.default_rng(seed)
    lat = -90 + (np.arange(ny) + 0.5) * 180 / ny
    t = np.arange(nt) / SPD
    lon = np.arange(nx) * 360.0 / nx
    wave = np.cos(2 * np.pi * (3 * lon[None, None, :] / 360 - 0.2 * t[:, None, None])) * np.cos(np.deg2rad(lat))[None, :, None]
    shape = (nt, ny, nx) if nz is None else (nt, nz, ny, nx)
    x = rng.standard_normal(shape) + (wave if nz is None else wave[:, None])
    dims = ("time", "lat", "lon") if nz is None else ("time", "lev", "lat", "lon")
    coords = {"time": np.datetime64("2001-01-01") + (np.arange(nt) * (24 // SPD)).astype("timedelta64[h]"),
              "lat": ("lat", lat, {"units": "degrees_north"}), "lon": ("lon", lon, {"units": "degrees_east"})}
    if nz is not None:
        coords["lev"] = ("lev", np.linspace(1000, 100, nz), {"units": "hPa", "axis": "Z"})
    return xr.DataArray(x, dims=dims, coords=coords, name="u")


def write(da, path):
    da.to_dataset().to_netcdf(path)
    return str(path)


def assert_same(a, b, rtol=1e-12):
    for name in FIELDS:
        np.testing.assert_allclose(getattr(a, name), getattr(b, name), rtol=rtol, atol=0, err_msg=name)


# ------------------------------------------------------------------------------------------------

def test_api_equals_numerics_wk_and_hayashi_numpy_and_dask():
    da = field()
    want = sp.wk_spectra(da.values, SPD, WIN, SKIP)
    got = stsa.wk(da, ndaywin=WIN, ndayskip=SKIP, lat_band=None, n_tasks=3)
    assert_same(got, want)
    assert got.segment_variance == pytest.approx(want.segment_variance, rel=1e-12)
    assert got.params["n_tasks"] == 3 and got.params["n_windows"] == want.params["n_windows"]
    # dask-backed, more tasks than latitude pairs (capped), a band given
    got2 = stsa.wk(da.chunk({"time": 37}), ndaywin=WIN, ndayskip=SKIP, lat_band=(-90, 90), n_tasks=99)
    assert_same(got2, want)
    # Hayashi: the mean over latitudes of the per-latitude numerics; levels stacked as pseudo-time
    h = stsa.hayashi(da, n_tasks=3)
    ref = sp.hayashi_power(da.values, spd=SPD)
    for name in ("eastward", "westward", "stationary"):
        np.testing.assert_allclose(getattr(h, name), getattr(ref, name).mean(0), rtol=1e-12)
    d4 = field(nt=48, nz=3)
    h4 = stsa.hayashi(d4, n_tasks=2)
    ref4 = sp.hayashi_power(sp.stack_levels_as_time(d4.values, 0, 1), spd=SPD)
    np.testing.assert_allclose(h4.eastward, ref4.eastward.mean(0), rtol=1e-12)
    np.testing.assert_allclose(h4.frequency, ref4.frequency, rtol=1e-15)


def test_wk_task_rows_keep_mirror_pairs():
    for n in (2, 7, 8, 31):
        rows = workflow.task_rows(n, "wk", 3)
        assert sorted(sum(rows, [])) == list(range(n))
        for r in rows:
            body = [i for i in r if 2 * i != n - 1]
            assert sorted(body) == sorted(n - 1 - i for i in body)


def test_multi_file_glob_equals_one_file(tmp_path):
    da = field()
    one = write(da, tmp_path / "one.nc")
    parts = tmp_path / "parts"
    parts.mkdir()
    for i, sl in enumerate((slice(0, 50), slice(50, 111), slice(111, None))):
        write(da.isel(time=sl), parts / f"u_{i}.nc")
    res = []
    for files in ([one], [str(parts / "u_*.nc")]):
        a, paths = workflow.open_input(files, "u")
        inp = workflow.prepare_input(a, "wk", lat_band="all", ndaywin=WIN, ndayskip=SKIP, paths=paths)
        assert inp.spd == SPD
        res.append(workflow.analyse(inp, WIN, SKIP, n_tasks=2))
    assert len(res[1].description["files"]) == 3
    assert_same(res[1].spectra, res[0].spectra, rtol=0)
    assert_same(res[0].spectra, sp.wk_spectra(da.values, SPD, WIN, SKIP))
    t = res[0].tasks[0]
    for key in ("read_wall_s", "read_cpu_s", "compute_wall_s", "compute_cpu_s", "wall_s", "bytes", "worker"):
        assert key in t


def test_one_two_workers_identical_and_netcdf_round_trip(tmp_path):
    da = field(seed=3)
    serial = stsa.wk(da, ndaywin=WIN, ndayskip=SKIP, lat_band=None, n_tasks=4)
    runs = {n: stsa.wk(da, ndaywin=WIN, ndayskip=SKIP, lat_band=None, n_tasks=4, workers=n) for n in (1, 2)}
    for n, r in runs.items():
        # the tolerance: SIMD reductions in numpy's FFT and sums may differ in the last bit
        # between processes (alignment), so "identical" is to 1e-12 relative
        assert_same(r, serial, rtol=1e-12)
    path = output.write_netcdf(serial, tmp_path / "s.nc", {"variable": "u", "files": ["a.nc", "b.nc"]})
    assert not [p for p in os.listdir(tmp_path) if p.startswith(".")]   # no temporary left
    with xr.open_dataset(path) as ds:
        np.testing.assert_array_equal(ds.wavenumber.values, serial.wavenumber)
        np.testing.assert_array_equal(ds.frequency.values, serial.frequency)
        assert ds.frequency.attrs["units"] == "day-1" and ds.wavenumber.attrs["units"] == "1"
        assert ds.attrs["method"] == "wk" and ds.attrs["Conventions"].startswith("CF")
        assert ds.attrs["param_n_day_win"] == WIN and ds.attrs["param_n_day_skip"] == SKIP
        assert ds.attrs["param_spd"] == SPD and ds.attrs["input_variable"] == "u"
        assert ds.attrs["param_segment_variance"] == pytest.approx(serial.segment_variance)
        for name in FIELDS:
            np.testing.assert_array_equal(ds[name].values, getattr(serial, name))
    hp = output.write_netcdf(stsa.hayashi(da), tmp_path / "h.nc")
    with xr.open_dataset(hp) as ds:
        assert ds.attrs["method"] == "hayashi" and ds.stationary.dims == ("wavenumber",)


def test_missing_values_are_a_data_error():
    da = field()
    da[5, 2, 3] = np.nan
    with pytest.raises(DataError, match="missing"):
        stsa.wk(da, ndaywin=WIN, ndayskip=SKIP, lat_band=None)


# ------------------------------------------------------------------------------------------------
# The command: every bad input is one line and an exit code

@pytest.fixture(scope="module")
def bad_files(tmp_path_factory):
    d = tmp_path_factory.mktemp("stsa-bad")
    good = field()
    f = {"good": write(good, d / "good.nc")}
    f["notime"] = write(good.isel(time=0, drop=True).rename("u"), d / "notime.nc")
    holes = good.copy()
    holes[3, 1, 1] = np.nan
    f["nan"] = write(holes, d / "nan.nc")
    f["halflon"] = write(good.isel(lon=slice(0, NX // 2)), d / "halflon.nc")
    return f


def _run_all(cases):
    procs = {k: subprocess.Popen([CLIMIO, "stsa", *args], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
             for k, args in cases.items()}
    return {k: (p.wait(timeout=120), p.stderr.read()) for k, p in procs.items()}


def test_cli_bad_inputs_one_line_each(bad_files, tmp_path):
    f, o = bad_files, str(tmp_path / "o")
    w = ["--ndaywin", str(WIN), "--ndayskip", str(SKIP), "--no-plots", "-o", o]
    cases = {
        "notime": ([f["notime"], "--var", "u", "--lat-band", "all", *w], 3, "no time axis"),
        "nan": ([f["nan"], "--var", "u", "--lat-band", "all", "--workers", "1", *w], 3, "missing"),
        "cyclic": ([f["halflon"], "--var", "u", "--lat-band", "all", *w], 3, "not cyclic"),
        "equator": ([f["good"], "--var", "u", "--lat-band", "0,80", *w], 3, "do not straddle the equator"),
        "short": ([f["good"], "--var", "u", "--lat-band", "all", "--ndaywin", "50", "--ndayskip", "-5", "--no-plots", "-o", o], 3,
                  "shorter than one segment"),
        "var": ([f["good"], "--var", "nope", *w], 3, "no variable 'nope'"),
        "glob": ([str(tmp_path / "nothing_*.nc"), "--var", "u", *w], 3, "no file matches"),
        "threads": ([f["good"], "--var", "u", "--threads", "0", *w], 2, "--threads 0 must be at least 1"),
        "scheduler": ([f["good"], "--var", "u", "--lat-band", "all", "--scheduler", "tcp://127.0.0.1:9",
                       "--connect-timeout", "2", *w], 5, "cannot reach the Dask scheduler"),
    }
    got = _run_all({k: v[0] for k, v in cases.items()})
    for k, (_, code, text) in cases.items():
        rc, err = got[k]
        lines = [ln for ln in err.splitlines() if ln.strip()]
        assert rc == code, (k, rc, err)
        errors = [ln for ln in lines if "error" in ln.lower()]
        # the failure is one line, the last (a run that started says where it runs first)
        assert errors == [lines[-1]] and lines[-1].startswith("climio: error:") and text in lines[-1], (k, err)
        assert "Traceback" not in err and all(ln.startswith("stsa:") for ln in lines[:-1]), (k, err)


def test_cli_writes_spectra_plots_and_timings(bad_files, tmp_path):
    o = tmp_path / "out"
    r = subprocess.run([CLIMIO, "stsa", bad_files["good"], "--var", "u", "--lat-band", "-70,70", "--ndaywin",
                        str(WIN), "--ndayskip", str(SKIP), "--workers", "2", "--threads", "2", "--tasks", "3",
                        "-o", str(o)],
                       capture_output=True, text=True, timeout=180)
    assert r.returncode == 0, r.stderr
    assert "3/3 done" in r.stderr   # stderr is not a terminal: one line per task
    names = set(os.listdir(o))
    assert {"spectra.nc", "tasks.json", "fig1_raw.png", "fig2_background.png", "fig3_ratio.png", "stsa.html"} <= names
    html = (o / "stsa.html").read_text()
    assert "data:image/png;base64" in html and "read wall" in html
    doc = json.loads((o / "tasks.json").read_text())
    assert doc["where"] == "LocalCluster, 2 worker process(es) x 2 compute thread(s) + 1 reading"
    with xr.open_dataset(o / "spectra.nc") as ds:
        assert ds.attrs["param_n_lat"] == 6 and ds.attrs["input_lat_band"].tolist() == [-70.0, 70.0]
