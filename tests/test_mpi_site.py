"""The MPI h5py in .venv/mpi-site: it exists, is parallel, and writes deflate-compressed data
collectively under a 2-rank mpirun into a file defined by the serial netCDF4 wheel.

Nothing is skipped: a missing build (scripts/setup.sh step install_mpi_python) fails these tests.
Every subprocess, and mpirun in particular, runs under a timeout.
"""

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import netCDF4
import numpy as np
import pytest

from climio.measure import mpi_site
from climio.base.errors import NativeError

MPI_ENV = {"OMPI_ALLOW_RUN_AS_ROOT": "1", "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM": "1",
           "OMPI_MCA_rmaps_base_oversubscribe": "1"}
LAUNCHER_VARS = ("OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "PMIX_RANK", "SLURM_PROCID", "SLURM_STEP_NUM_TASKS")


def _clean_env(**extra):
    env = {k: v for k, v in os.environ.items() if k not in LAUNCHER_VARS and not k.startswith("OMPI_COMM_WORLD")}
    env.pop("CLIMIO_MPI_SITE", None)
    env.update(extra)
    return env


def test_mpi_site_is_built(monkeypatch):
    monkeypatch.delenv("CLIMIO_MPI_SITE", raising=False)
    site = mpi_site.site_dir()
    assert site == Path(sys.prefix) / "mpi-site"
    assert (site / "h5py" / "__init__.py").is_file(), f"{site} missing: run make setup"


def test_activate_gives_the_parallel_h5py_in_a_subprocess():
    code = textwrap.dedent("""
        import sys
        from climio.measure import mpi_site
        mpi_site.activate()
        mpi_site.activate()  # idempotent
        import h5py
        assert h5py.get_config().mpi, "not an MPI build"
        assert mpi_site.h5py_is_parallel()
        assert str(mpi_site.site_dir()) in h5py.__file__, h5py.__file__
        assert "mpi4py.MPI" not in sys.modules  # importing h5py does not initialise MPI
        print(h5py.version.hdf5_version)
    """)
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, env=_clean_env())
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip().startswith("1.")  # the system's parallel HDF5, not the wheel's 2.x


def test_activate_after_the_serial_h5py_is_refused():
    code = "import h5py\nfrom climio.measure import mpi_site\nmpi_site.activate()"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, env=_clean_env())
    assert out.returncode != 0 and "before climio.measure.mpi_site.activate()" in out.stderr


def test_activate_without_the_site_says_how_to_build(tmp_path, monkeypatch):
    monkeypatch.setenv("CLIMIO_MPI_SITE", str(tmp_path / "nowhere"))
    with pytest.raises(NativeError, match="make setup"):
        mpi_site.activate()


@pytest.mark.parametrize("env, expected", [
    ({}, False),
    ({"OMPI_COMM_WORLD_SIZE": "4", "OMPI_COMM_WORLD_RANK": "2"}, True),
    ({"OMPI_COMM_WORLD_SIZE": "1", "PMIX_RANK": "0"}, False),   # a 1-rank mpirun
    ({"PMI_SIZE": "2", "PMI_RANK": "0"}, True),
    ({"PMI_SIZE": "1"}, False),
    ({"PMIX_RANK": "0"}, True),                                 # PMIx launcher, no size given
    ({"SLURM_NTASKS": "8", "SLURM_PROCID": "0"}, False),       # an sbatch script is one process
    ({"SLURM_NTASKS": "8", "SLURM_PROCID": "3", "SLURM_STEP_NUM_TASKS": "8"}, True),
    ({"SLURM_NTASKS": "8", "SLURM_PROCID": "0", "SLURM_STEP_NUM_TASKS": "1"}, False),
])
def test_under_mpi(env, expected):
    assert mpi_site.under_mpi(env) is expected


WRITER = textwrap.dedent("""
    import sys
    import numpy as np
    from climio.measure import mpi_site
    assert mpi_site.under_mpi()
    mpi_site.activate()
    from mpi4py import MPI
    import h5py

    comm = MPI.COMM_WORLD
    rank = comm.rank
    path = sys.argv[1]
    t, y, x = 6, 20, 12

    def value(ti):
        return (np.arange(y * x, dtype="f4").reshape(1, y, x) + 1000 * ti)

    # uneven: rank 0 writes five time steps, rank 1 one; the last chunk row is partial (y=20, chunk 8)
    mine = [0, 1, 2, 3, 4] if rank == 0 else [5]
    calls = comm.allreduce(len(mine), op=MPI.MAX)
    with h5py.File(path, "r+", driver="mpio", comm=comm) as f:
        d = f["v"]
        assert d.compression == "gzip" and d.shuffle
        for i in range(calls):
            if i < len(mine):
                with d.collective:
                    d[mine[i]:mine[i] + 1] = value(mine[i])
            else:
                mpi_site.write_nothing(d)    # every rank takes part in every collective write
    comm.Barrier()
    if rank == 0:
        with h5py.File(path, "r") as f:
            got = f["v"][...]
        want = np.concatenate([value(ti) for ti in range(t)])
        assert np.array_equal(got, want), "values differ"
        print("rank 0 read back OK")
""")


def test_collective_deflate_write_under_mpirun(tmp_path):
    path = tmp_path / "out.nc"
    # The serial netCDF4 wheel defines the output (as the executor's definition phase would).
    with netCDF4.Dataset(path, "w", format="NETCDF4") as nc:
        for name, n in (("t", 6), ("y", 20), ("x", 12)):
            nc.createDimension(name, n)
        nc.createVariable("v", "f4", ("t", "y", "x"), chunksizes=(1, 8, 12), zlib=True, complevel=4, shuffle=True)
    script = tmp_path / "writer.py"
    script.write_text(WRITER)
    env = _clean_env(**MPI_ENV) if os.geteuid() == 0 else _clean_env(OMPI_MCA_rmaps_base_oversubscribe="1")
    out = subprocess.run(["timeout", "-k", "10", "120", "mpirun", "-n", "2", sys.executable, str(script), str(path)],
                         capture_output=True, text=True, timeout=150, env=env)
    assert out.returncode == 0, f"rc={out.returncode}\n{out.stdout}\n{out.stderr}"
    assert "rank 0 read back OK" in out.stdout
    # and the serial netCDF4 wheel reads what the ranks wrote
    with netCDF4.Dataset(path) as nc:
        v = nc["v"]
        assert v.filters()["zlib"] and v.filters()["shuffle"]
        got = v[:]
    want = np.concatenate([np.arange(240, dtype="f4").reshape(1, 20, 12) + 1000 * ti for ti in range(6)])
    assert np.array_equal(np.ma.getdata(got), want)
