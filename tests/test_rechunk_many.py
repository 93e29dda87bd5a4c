"""climio rechunk with several inputs or a glob (issue 27 item 10): one output per input in a
directory, same names with the output format's suffix, one summary; URLs refused in one line;
a bad list refused before anything is written; a corrupt file skipped, the rest converted."""

import json
import os

import numpy as np
import pytest
import xarray as xr

from climio.data.writer import write_4d
from climio.rechunking.verify import compare

from conftest import run_cli

pytestmark = pytest.mark.usefixtures("builtin_rates")   # the planner's built-in rates, not this machine's profile

SHAPE = (24, 3, 40, 36)
XT = ["-c", f"time/{SHAPE[0]},lev/1,lat/1,lon/{SHAPE[3]}"]


@pytest.fixture(scope="module")
def series(tmp_path_factory):
    """Three files of one 'model run' split over time, as CMIP output comes."""
    d = tmp_path_factory.mktemp("many") / "in"
    d.mkdir()
    paths = []
    for i in range(3):
        p = d / f"ta_Amon_model_r1i1p1f1_gn_{2000 + 2 * i}01-{2001 + 2 * i}12.nc"
        write_4d(p, SHAPE, chunks=[1, 1, SHAPE[2], SHAPE[3]], dtype="f4", deflate=1, shuffle=True, seed=20 + i)
        paths.append(p)
    return paths


def one_line(res):
    return len(res.stderr.strip().splitlines()) == 1 and "Traceback" not in res.stderr


def test_glob_to_zarr_directory_one_output_per_input(series, tmp_path):
    out = tmp_path / "zarr"
    pattern = str(series[0].parent / "ta_Amon_*.nc")          # quoted: climio expands it
    res = run_cli("rechunk", pattern, out, *XT, "--format", "zarr", "--max-mem", "400KiB", "--workers", "2",
                  "--verify", "--json")
    assert res.returncode == 0, res.stderr
    summary = json.loads(res.stdout)
    names = sorted(p.name.replace(".nc", ".zarr") for p in series)
    assert sorted(os.listdir(out)) == names
    assert summary["inputs"] == 3 and summary["failed"] == [] and len(summary["files"]) == 3
    assert [f["output"] for f in summary["files"]] == [str(out / n) for n in names]
    # every file ran with the whole budget and both workers, one after another
    for f in summary["files"]:
        assert f["max_mem"] == 400 << 10 and f["workers"] == 2 and f["verified"]
        assert all(p["peak_mem"] <= 400 << 10 for p in f["plans"].values())
    assert summary["peak_rss"] == max(f["peak_rss"] for f in summary["files"])
    assert summary["bytes"] == sum(f["bytes"] for f in summary["files"])
    assert "rechunked 3 of 3 files" in res.stderr
    for src in series:
        with xr.open_dataset(src) as a, xr.open_zarr(out / src.name.replace(".nc", ".zarr")) as b:
            xr.testing.assert_identical(a.load(), b.load())
            assert b["ta"].encoding["chunks"] == (SHAPE[0], 1, 1, SHAPE[3])


def test_list_with_a_corrupt_file_converts_the_others(series, tmp_path):
    bad = tmp_path / "bad.nc"
    bad.write_bytes(series[0].read_bytes()[:100_000])          # cut inside the data
    out = tmp_path / "nc"
    res = run_cli("rechunk", series[0], bad, series[2], out, *XT, "--json")
    assert res.returncode == 3, res.stderr
    assert res.stderr.splitlines()[-1].startswith("climio: error: 1 of 3 files not converted; first: ")
    assert "truncated" in res.stderr.splitlines()[-1] and "Traceback" not in res.stderr
    summary = json.loads(res.stdout)
    assert [f["input"] for f in summary["failed"]] == [str(bad)] and summary["failed"][0]["exit"] == 3
    assert sorted(os.listdir(out)) == sorted([series[0].name, series[2].name])   # nothing left of bad.nc
    for src in (series[0], series[2]):
        assert compare(src, out / src.name) == []
        with xr.open_dataset(src) as a, xr.open_dataset(out / src.name) as b:
            assert np.array_equal(a["ta"].values, b["ta"].values)


@pytest.mark.parametrize("where", ["input", "output", "one of several"])
def test_url_refused_in_one_line(series, tmp_path, where):
    url = "https://esgf.example.org/thredds/fileServer/cmip6/ta.nc"
    argv = {"input": [url, tmp_path / "o.nc"], "output": [series[0], url],
            "one of several": [series[0], url, tmp_path / "dir"]}[where]
    res = run_cli("rechunk", *argv, *XT)
    assert res.returncode == 2 and one_line(res), res.stderr
    assert "https:// addresses are not supported" in res.stderr and "local paths" in res.stderr
    assert "Zarr store" in res.stderr
    assert os.listdir(tmp_path) == [] and not os.path.exists("https:")


def test_bad_lists_refused_before_anything_is_written(series, tmp_path):
    out = tmp_path / "out"
    # two inputs that would get one output name
    other = tmp_path / "other"
    other.mkdir()
    (other / series[1].name).write_bytes(series[1].read_bytes())
    res = run_cli("rechunk", series[0], series[1], other / series[1].name, out, *XT)
    assert res.returncode == 2 and one_line(res) and "would both be written to" in res.stderr, res.stderr
    assert not out.exists()
    # an output that exists is refused up front: the first file is not converted either
    out.mkdir()
    (out / series[2].name).write_text("keep me")
    res = run_cli("rechunk", *series, out, *XT)
    assert res.returncode == 2 and one_line(res) and "exists: remove it or pass --force" in res.stderr
    assert os.listdir(out) == [series[2].name] and (out / series[2].name).read_text() == "keep me"
    res = run_cli("rechunk", *series, out, *XT, "--force")
    assert res.returncode == 0, res.stderr
    assert compare(series[2], out / series[2].name) == []
    # a pattern that matches nothing, a file as the output directory, a missing input
    res = run_cli("rechunk", str(tmp_path / "nothing_*.nc"), tmp_path / "o2", *XT)
    assert res.returncode == 3 and one_line(res) and "no file or Zarr store matches" in res.stderr
    res = run_cli("rechunk", series[0], series[1], out / series[2].name, *XT)
    assert res.returncode == 2 and one_line(res) and "is not a directory" in res.stderr
    res = run_cli("rechunk", series[0], tmp_path / "missing.nc", tmp_path / "o3", *XT)
    assert res.returncode == 3 and one_line(res) and "does not exist" in res.stderr
    assert not (tmp_path / "o2").exists() and not (tmp_path / "o3").exists()


def test_dry_run_plans_every_file_and_writes_nothing(series, tmp_path):
    out = tmp_path / "new"
    res = run_cli("rechunk", *series, out, *XT, "--dry-run", "--json")
    assert res.returncode == 0, res.stderr
    summary = json.loads(res.stdout)
    assert [f["output"] for f in summary["files"]] == [str(out / p.name) for p in series]
    assert all(f["plans"]["/ta"]["predicted_s"] > 0 for f in summary["files"])
    assert os.listdir(tmp_path) == []
