"""Issue 27 item 9: what a new user reads first (help, progress lines, version, space check)."""

import os
import subprocess
import sys
from pathlib import Path

import pytest

from climio.bench import base
from climio.measure.progress import config_text

CLIMIO = str(Path(sys.executable).with_name("climio"))


def run(*args, env=None):
    return subprocess.run([CLIMIO, *args], capture_output=True, text=True, env=env)


def test_bench_help_gives_every_study_its_whole_summary():
    out = run("bench", "--help").stdout
    flat = " ".join(out.split())
    for study in base.studies():
        assert " ".join(study.title.split()) in flat, study.name
    assert "(thesis ch.\n" not in out and not any(line.rstrip().endswith("(thesis ch.") for line in out.splitlines())


def test_stsa_help_keeps_its_dask_examples_one_command_a_line():
    out = run("stsa", "--help").stdout
    lines = [line.strip() for line in out.splitlines()]
    assert "srun -n 18 dask-mpi --scheduler-file sched.json --nthreads 1 &" in lines
    assert any(line.startswith("climio stsa 'u_*.nc' --var u --scheduler tcp://") for line in lines)


def test_progress_lines_name_the_configuration_without_blank_fields():
    chunking = {"layer": "netcdf4-python", "chunk_label": "B", "chunking": "[1,1,32,64]", "read_shape": "xt",
                "compression": "deflate4", "cache_setting": "default"}
    text = config_text(chunking)
    assert text == "netcdf4-python xt B [1,1,32,64] deflate4 default"
    assert "  " not in config_text({"layer": "c-posix", "pattern": "", "buffer_bytes": 4096})
    assert config_text({"layer": "c-posix", "pattern": "sequential", "buffer_bytes": 4096}) == "c-posix sequential 4096 B"


def test_make_data_progress_counts_the_shapes_bytes(tmp_path):
    out = run("make-data", "--kind", "4d", "--shape", "8,2,16,32", "-o", str(tmp_path / "d"))
    assert out.returncode == 0, out.stderr
    assert "64KiB/64KiB" in out.stderr and "256MiB" not in out.stderr


def test_the_space_check_asks_for_what_it_writes_and_can_be_turned_off(tmp_path, monkeypatch):
    from climio.data.writer import check_space
    from climio.errors import DiskSpaceError
    import shutil
    free = shutil.disk_usage(tmp_path).free
    check_space([(tmp_path / "a.nc", 7_000_000)])          # 7 MB asks for about 8.4 MB, not 23.6 MiB
    with pytest.raises(DiskSpaceError, match="CLIMIO_SPACE_CHECK=off"):
        check_space([(tmp_path / "a.nc", free * 2)])
    monkeypatch.setenv("CLIMIO_SPACE_CHECK", "off")
    check_space([(tmp_path / "a.nc", free * 2)])


def test_version_names_both_library_layers():
    out = run("--version").stdout
    import h5py
    import netCDF4
    assert f"HDF5 {h5py.version.hdf5_version}" in out
    assert f"netCDF-C {netCDF4.__netcdf4libversion__}" in out
    assert "native layer: netCDF-C " in out and "parallel" in out
