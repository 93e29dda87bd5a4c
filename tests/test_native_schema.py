"""Every record a native program prints carries "schema": 2, as the Python records do
(climio.runs.records.SCHEMA_VERSION): the serial probes (through csrc/common/series.c) and both
operations of climio-pario (through csrc/pario/record.c) open their records with the one
jsonl_record of csrc/common/jsonl.c. Each program runs once at the smallest size; every line of
its stdout is checked, not only the first."""

import json
import os
import subprocess

import pytest

from climio.machine import native
from climio.data import make_data, write_4d
from climio.runs.records import SCHEMA_VERSION, to_frame, validate

MPI_ENV = dict(os.environ, OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1",
               OMPI_MCA_rmaps_base_oversubscribe="1")
SHAPE4 = (2, 1, 8, 8)
NAMES = ["climio-probe-posix", "climio-probe-netcdf", "climio-probe-netcdf-slab",
         "climio-pario --op write --mode benchio", "climio-pario --op write --mode model",
         "climio-pario --op read --mode mpiio", "climio-pario --op read --mode tasks"]


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    d = tmp_path_factory.mktemp("schema")
    made = make_data(d, size=64 * 1024, kinds=("1d",))   # element i holds i (the read driver checks it)
    path4 = d / "ta.nc"
    write_4d(path4, list(SHAPE4), chunks=[1, 1, 8, 8], seed=3)
    slices = d / "slices.txt"
    slices.write_text("0 0 0 0 1 1 8 8\n1 0 0 0 1 1 8 8\n")
    return {"bin": str(made["1d_bin"]), "nc": str(made["1d_nc"]), "4d": str(path4), "slices": str(slices),
            "dir": d}


def commands(f):
    out = f["dir"] / "pario"
    out.mkdir(exist_ok=True)
    mpi = ["timeout", "-k", "10", "120", "mpirun", "-n", "2"]
    return {
        "climio-probe-posix": [native.program("climio-probe-posix"), "--file", f["bin"], "--buffers", "4096",
                               "--patterns", "sequential", "--reps", "1"],
        "climio-probe-netcdf": [native.program("climio-probe-netcdf"), "--file", f["nc"], "--buffers", "4096",
                                "--patterns", "sequential", "--reps", "1"],
        "climio-probe-netcdf-slab": [native.program("climio-probe-netcdf-slab"), "--file", f["4d"], "--var", "ta",
                                     "--slices", f["slices"], "--reps", "1"],
        "climio-pario --op write --mode benchio": [*mpi, *native.pario("write"), "--mode", "benchio", "--dir", out,
                                                   "--local", "4,4,4", "--reps", "1", "--backends", "mpiio",
                                                   "--strategies", "shared"],
        "climio-pario --op write --mode model": [*mpi, *native.pario("write"), "--mode", "model", "--dir", out,
                                                 "--grid", "8,8,2", "--nt", "1", "--reps", "1", "--backends", "mpiio",
                                                 "--strategies", "shared"],
        "climio-pario --op read --mode mpiio": [*mpi, *native.pario("read"), "--mode", "mpiio", "--dir", out,
                                                "--size", "65536", "--buffer", "8192", "--reps", "1",
                                                "--backends", "mpiio", "--patterns", "sequential",
                                                "--access", "independent"],
        "climio-pario --op read --mode tasks": [*mpi, *native.pario("read"), "--mode", "tasks", "--files", f["bin"],
                                                "--split", "--buffer", "8192", "--reps", "1"],
    }


@pytest.mark.parametrize("name", NAMES)
def test_every_native_record_carries_the_schema(files, name):
    cmds = commands(files)
    assert sorted(cmds) == sorted(NAMES)
    argv = [str(a) for a in cmds[name]]
    out = subprocess.run(argv, capture_output=True, text=True, env=MPI_ENV, timeout=180)
    assert out.returncode == 0, out.stderr[-2000:]
    lines = [line for line in out.stdout.splitlines() if line.strip()]
    assert lines, f"{name} printed no record"
    recs = [validate(json.loads(line)) for line in lines]   # every stdout line is a record
    assert all(r["schema"] == SCHEMA_VERSION == 2 for r in recs), [r.get("schema") for r in recs]
    assert all(r["status"] == "ok" for r in recs)
    # read back as schema 2, not as the unversioned 1
    assert set(to_frame(recs)["schema"]) == {2}
