"""climio rechunk under mpirun: blocks spread over ranks, written collectively with parallel HDF5."""

import os
import subprocess
import sys

import netCDF4
import numpy as np
import pytest

from climio.data.writer import write_4d
from climio.rechunking.verify import compare


pytestmark = pytest.mark.usefixtures("builtin_rates")   # the planner's built-in rates, not this machine's profile

MPI_ROOT = {"OMPI_ALLOW_RUN_AS_ROOT": "1", "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM": "1"}  # with os.environ at call time
CLIMIO = os.path.join(os.path.dirname(sys.executable), "climio")


def mpirun(n, *args, timeout=180):
    return subprocess.run(["timeout", str(timeout), "mpirun", "--oversubscribe", "-n", str(n), CLIMIO, "rechunk",
                           *map(str, args)], capture_output=True, text=True, env=dict(os.environ, **MPI_ROOT))


@pytest.fixture(scope="module")
def field(tmp_path_factory):
    path = tmp_path_factory.mktemp("mpi") / "field.nc"
    write_4d(path, (24, 3, 40, 36), chunks=[1, 1, 40, 36], dtype="f4", deflate=1, shuffle=True, seed=9)
    return path


@pytest.mark.parametrize("ranks, args", [
    (2, ["-c", "time/24,lev/1,lat/1,lon/36"]),                       # 3 blocks over 2 ranks: one rank idles a round
    (3, ["-c", "time/24,lev/1,lat/1,lon/36", "--max-mem", "200KiB"]),  # redecode, many blocks
    (2, ["--contiguous", "--compression", "none"]),
])
def test_parallel_conversion_is_exact(field, tmp_path, ranks, args):
    out = tmp_path / "o.nc"
    res = mpirun(ranks, field, out, "--verify", *args)
    assert res.returncode == 0, res.stderr
    assert res.stderr.count("rechunked") == 1 and f"on {ranks} MPI ranks" in res.stderr
    with netCDF4.Dataset(field) as a, netCDF4.Dataset(out) as b:
        assert np.array_equal(a["ta"][...], b["ta"][...])
    assert compare(field, out) == []
    subprocess.run(["ncdump", "-h", str(out)], check=True, capture_output=True)
    assert sorted(os.listdir(tmp_path)) == ["o.nc"]


def test_parallel_corpus_files(tmp_path):
    from rechunk_corpus import make_corpus
    corpus = make_corpus(tmp_path / "in")
    for name in ("cf", "classic", "groups"):
        out = tmp_path / f"{name}.nc"
        res = mpirun(2, corpus[name], out, "--balanced", "--chunk-bytes", "4KiB", "--compression", "deflate1")
        assert res.returncode == 0, f"{name}: {res.stderr}"
        assert compare(corpus[name], out) == [], name


@pytest.mark.parametrize("args, message", [
    (["--var", "nosuch"], "unknown variable"),
    (["--compression", "zstd3", "--for", "xt"], "without mpirun"),
])
def test_parallel_errors_are_one_line_and_do_not_hang(field, tmp_path, args, message):
    res = mpirun(2, field, tmp_path / "o.nc", *args, timeout=120)
    assert res.returncode not in (0, 124), res.stderr   # 124: timeout killed a hung run
    errors = [l for l in res.stderr.splitlines() if l.startswith("climio: error")]
    assert len(errors) == 1 and message in errors[0], res.stderr
    assert "Traceback" not in res.stderr
    assert os.listdir(tmp_path) == []
