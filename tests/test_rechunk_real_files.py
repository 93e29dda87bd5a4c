"""Real model output to Zarr and back (issue 24 part 4): a few files of NCL's example data (Debian's
libncarg-data, installed by scripts/setup.sh) through `climio rechunk --verify` both ways, compared
with xarray as bench/rechunk_corpus.py compares the whole corpus (values, attributes, encodings)."""

import importlib.util
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
DATA = Path("/usr/share/ncarg/data")
FILES = [
    "nug/tas_rotated_grid_EUR11.nc",      # CORDEX-style: rotated pole, bounds, a scalar grid mapping, unlimited time
    "nug/tos_ocean_bipolar_grid.nc",      # CMIP-style ocean on a curvilinear grid with vertex bounds
    "cdf/95031800_sao.cdf",               # station reports: netCDF char strings, unlimited record dimension
    "cdf/sstanom.robinsonproj.nc",        # analysis with bounds
]


def _corpus():
    spec = importlib.util.spec_from_file_location("rechunk_corpus_bench", ROOT / "bench" / "rechunk_corpus.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


@pytest.mark.parametrize("name", FILES)
def test_real_file_round_trips_through_zarr(name, tmp_path, monkeypatch):
    monkeypatch.setenv("CLIMIO_PROFILE_DIR", str(tmp_path / "profiles"))
    path = DATA / name
    assert path.is_file(), f"{path} missing: scripts/setup.sh installs Debian's libncarg-data"
    bench = _corpus()
    rec = bench.roundtrip(path, tmp_path)
    # identical: times carried as stored, their units text too ('days since 1949-12-01 00:00:00')
    assert rec["status"] == "identical", rec
    zarr_path, back = tmp_path / (path.stem + ".zarr"), tmp_path / (path.stem + ".back.nc")
    assert (zarr_path / "zarr.json").is_file() and back.is_file()
    if name == FILES[0]:    # the comparison is not blind: an attribute changed in the copy is reported
        import netCDF4
        with netCDF4.Dataset(back, "a") as ds:
            ds["tas"].long_name = "changed"
        diffs = bench.xarray_diffs(path, zarr_path, back)
        assert any(d.startswith("nc: ") and "long_name" in d for d in diffs), diffs
