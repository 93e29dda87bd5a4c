"""The install provides everything the studies use; a missing piece fails here, loudly, by name."""

import shutil

import pytest

from climio.machine import native, platform
@pytest.mark.parametrize("tool", ["strace", "fio", "ncdump", "h5dump", "mpirun", "mpicc"])
def test_system_tool_installed(tool):
    assert shutil.which(tool), f"{tool} is missing: scripts/setup.sh must install it"


@pytest.mark.parametrize("program", ["climio-probe-posix", "climio-probe-netcdf"])
def test_native_probe_built(program):
    assert native.program(program)


def test_c_layer_is_the_parallel_build_and_recorded():
    info = native.build_info()
    assert info.get("netcdf_c_version"), info
    assert info.get("netcdf_c_parallel") == "yes", "netCDF-C must be the parallel (MPI) build"
    assert info.get("hdf5_c_version") and info.get("hdf5_c_parallel") == "TRUE"


def test_both_library_stacks_recorded(tmp_path):
    v = platform.collect(tmp_path)["versions"]
    assert v["native"]["netcdf_c_runtime"].split()[0].count(".") >= 2
    for key in ("numpy", "netCDF4", "netCDF4.netcdf_c", "netCDF4.hdf5", "h5py", "h5py.hdf5", "h5netcdf", "xarray"):
        assert v["python"][key], key
