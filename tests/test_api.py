"""The Python API a notebook calls: climio.rechunk and climio.load_records on real files."""

import netCDF4
import numpy as np
import pytest

import climio
from climio.data import write_4d
from climio.errors import InputError


@pytest.mark.parametrize("workers", [1, 2])
def test_rechunk_from_python(tmp_path, workers):
    src, dst = tmp_path / "in.nc", tmp_path / "out.nc"
    write_4d(src, [8, 2, 16, 32], chunks=[1, 1, 16, 32], seed=3)
    summary = climio.rechunk(src, dst, chunks={"time": 8, "lat": 4}, compression="deflate1+shuffle",
                             workers=workers, verify=True)
    assert isinstance(summary, dict)
    with netCDF4.Dataset(dst) as a, netCDF4.Dataset(src) as b:
        assert a["ta"].chunking() == [8, 1, 4, 32]
        f = a["ta"].filters()
        assert f["zlib"] and f["complevel"] == 1 and f["shuffle"]
        assert np.array_equal(a["ta"][:], b["ta"][:])


def test_rechunk_per_variable_chunks_and_bad_input(tmp_path):
    src = tmp_path / "in.nc"
    write_4d(src, [8, 2, 16, 32], chunks=[1, 1, 16, 32], seed=4)
    climio.rechunk(src, tmp_path / "o.nc", chunks={"ta": [4, 1, 8, 32]}, workers=1)
    with netCDF4.Dataset(tmp_path / "o.nc") as a:
        assert a["ta"].chunking() == [4, 1, 8, 32]
    with pytest.raises(InputError):
        climio.rechunk(src, tmp_path / "x.nc", chunks={"time": -3}, workers=1)
    assert not (tmp_path / "x.nc").exists()
