"""Issue 27 item 9: what a new user reads first (help, progress lines, version, space check)."""

import math
import os
import subprocess
import sys
from pathlib import Path

import pytest

from climio.bench import base, registry
from climio.measure.progress import config_text

CLIMIO = str(Path(sys.executable).with_name("climio"))


def run(*args, env=None):
    return subprocess.run([CLIMIO, *args], capture_output=True, text=True, env=env)


def test_bench_help_gives_every_study_its_whole_summary():
    out = run("bench", "--help").stdout
    flat = " ".join(out.split())
    for study in registry.studies():
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


def fake_free(monkeypatch, free):
    """shutil.disk_usage reports `free` bytes free everywhere."""
    import collections
    import shutil
    usage = collections.namedtuple("usage", "total used free")
    monkeypatch.setattr(shutil, "disk_usage", lambda path: usage(free * 2, free, free))


def test_the_space_check_asks_for_what_it_writes_and_can_be_turned_off(tmp_path, monkeypatch):
    from climio.data.writer import check_space
    from climio.base.errors import DiskSpaceError
    fake_free(monkeypatch, 9_000_000)
    check_space([(tmp_path / "a.nc", 7_000_000)])          # 7 MB asks for about 8.4 MB, not 23.6 MiB
    with pytest.raises(DiskSpaceError, match="CLIMIO_SPACE_CHECK=off"):
        check_space([(tmp_path / "a.nc", 9_000_000)])
    monkeypatch.setenv("CLIMIO_SPACE_CHECK", "off")
    check_space([(tmp_path / "a.nc", 9_000_000)])


def _study_space_cases():
    """(name, check(data_dir), bytes it writes) of the studies whose checks are their own sums."""
    from climio.bench.layouts import build_grid as layouts_grid
    from climio.bench.layouts import run as layouts_run
    from climio.bench.parallel_read import build_grid as read_grid
    from climio.bench.parallel_read import run as read_run
    from climio.bench.parallel_write import build_grid as write_grid
    from climio.bench.parallel_write import run as write_run
    from climio.dataset.layout import Layout
    lg = layouts_grid("quick", shape="64,2,32,32")
    rg = read_grid("quick", ranks="2", size="4MiB", experiments="tasks")
    wg = write_grid("quick")
    return [("layouts", lambda d: layouts_run.check_space(lg, d), 2 * Layout(lg.dims, 4, None).nbytes),
            ("parallel-read", lambda d: read_run.check_space(rg, d), read_run.space_needed(rg)),
            ("parallel-write", lambda d: write_run.check_space(wg, d), 2 * max(wg.bytes_per_job(r) for r in wg.ranks))]


@pytest.mark.parametrize("case", range(3), ids=["layouts", "parallel-read", "parallel-write"])
def test_every_study_space_check_is_the_common_one(tmp_path, monkeypatch, case):
    """Same margin (5 % + 1 MiB over what is written), same override, exit 4, one line."""
    from climio.base.errors import DiskSpaceError, Exit
    name, check, nbytes = _study_space_cases()[case]
    data_dir = tmp_path / "not-yet"
    need = math.ceil(nbytes * 1.05) + (1 << 20)
    fake_free(monkeypatch, need)
    check(data_dir)                                          # no margin of its own on top
    fake_free(monkeypatch, need - 1)
    with pytest.raises(DiskSpaceError) as exc:
        check(data_dir)
    assert exc.value.exit_code == Exit.DISK and "\n" not in str(exc.value), name
    assert "CLIMIO_SPACE_CHECK=off" in str(exc.value) and "--data-dir" in str(exc.value), str(exc.value)
    monkeypatch.setenv("CLIMIO_SPACE_CHECK", "off")
    check(data_dir)
    assert not data_dir.exists()


def test_version_names_both_library_layers():
    out = run("--version").stdout
    import h5py
    import netCDF4
    assert f"HDF5 {h5py.version.hdf5_version}" in out
    assert f"netCDF-C {netCDF4.__netcdf4libversion__}" in out
    assert "native layer: netCDF-C " in out and "parallel" in out
