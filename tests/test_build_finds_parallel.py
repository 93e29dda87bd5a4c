"""The native build finds the PARALLEL netCDF-C and HDF5 whatever else is installed, says which,
and picks up a change on the next configure of the same build directory.

The set-up installs Debian's serial libnetcdf-dev beside libnetcdf-mpi-dev on purpose, so this runs
in the hard configuration: the serial nc-config first on PATH, the serial netcdf.h in /usr/include.
A configure only (a few seconds), never a build of the whole project.
"""

import os
import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
MPI_NETCDF = Path("/usr/lib/x86_64-linux-gnu/netcdf/mpi")


def _serial_nc_config() -> Path:
    nc = shutil.which("nc-config")
    assert nc, "no nc-config on PATH: scripts/setup.sh installs the serial libnetcdf-dev (run make setup)"
    out = subprocess.run([nc, "--has-parallel"], capture_output=True, text=True).stdout.strip()
    assert out == "no", f"{nc} is not the serial netCDF-C (--has-parallel says {out!r}); the test needs it"
    return Path(nc)


def _configure(build: Path, path_first: list) -> str:
    env = dict(os.environ, PATH=os.pathsep.join([str(p) for p in path_first] + [os.environ["PATH"]]))
    env.pop("NETCDFC_ROOT", None)
    r = subprocess.run(["cmake", "-S", str(ROOT), "-B", str(build), "-DCMAKE_BUILD_TYPE=Release"],
                       capture_output=True, text=True, env=env, timeout=300)
    assert r.returncode == 0, r.stdout + r.stderr
    return r.stdout + r.stderr


def _found_line(out: str) -> str:
    lines = [ln for ln in out.splitlines() if "climio: netCDF-C" in ln and "found by" in ln]
    assert len(lines) == 1, out
    return lines[0]


def test_fresh_configure_takes_the_parallel_netcdf_over_the_serial_nc_config(tmp_path):
    serial = _serial_nc_config()
    first = tmp_path / "serial-first"
    first.mkdir()
    (first / "nc-config").symlink_to(serial)
    out = _configure(tmp_path / "build", [first])
    line = _found_line(out)
    assert "parallel" in line and "nc-config" not in line, line
    assert "netcdf_par.h: " in out
    par = out.split("netcdf_par.h: ", 1)[1].split(")", 1)[0]
    assert Path(par).is_file() and Path(par).parent != Path("/usr/include"), par
    assert f"nc-config {first}/nc-config: netCDF-C" in out and "serial" in out   # seen, said, not used
    assert "climio: HDF5" in out and "parallel, found by" in out
    cache = (tmp_path / "build" / "CMakeCache.txt").read_text()
    assert "NETCDFC_INCLUDE_DIR:PATH=/usr/include" not in cache


def _module_prefix(tmp: Path) -> Path:
    """A parallel netCDF-C installed as an environment module would be: PREFIX/{include,lib,bin/nc-config},
    made of the Debian parallel build's own headers and library (links) and its own nc-config script."""
    assert (MPI_NETCDF / "include" / "netcdf_par.h").is_file(), "libnetcdf-mpi-dev is not installed"
    prefix = tmp / "netcdf-module"
    for sub in ("include", "lib", "bin"):
        (prefix / sub).mkdir(parents=True)
    for h in (MPI_NETCDF / "include").iterdir():
        (prefix / "include" / h.name).symlink_to(h)
    (prefix / "lib" / "libnetcdf.so").symlink_to((MPI_NETCDF / "libnetcdf.so").resolve())
    nc = prefix / "bin" / "nc-config"
    nc.write_text(f"""#!/bin/sh
case "$1" in
  --includedir) echo {prefix}/include ;;
  --libdir) echo {prefix}/lib ;;
  --cflags) echo -I{prefix}/include -I/usr/include/hdf5/openmpi ;;
  --version) echo netCDF 4.9.0 ;;
  --has-parallel) echo yes ;;
esac
""")
    nc.chmod(0o755)
    return prefix


def _compile_flags(build: Path) -> str:
    """The compile lines the generated build system holds (Makefiles' flags.make, or build.ninja)."""
    return "".join(p.read_text(errors="ignore") for p in [*build.rglob("flags.make"), *build.glob("build.ninja")])


def test_reconfiguring_a_build_dir_picks_the_library_that_changed(tmp_path):
    serial = _serial_nc_config()
    build = tmp_path / "build"
    module = _module_prefix(tmp_path)
    out = _configure(build, [module / "bin", serial.parent])
    assert f"found by nc-config {module}/bin/nc-config" in _found_line(out)
    assert f"{module}/include" in _compile_flags(build)

    # the module unloaded (its nc-config no longer on PATH): the same build directory takes Debian's
    out = _configure(build, [serial.parent])
    line = _found_line(out)
    assert "pkg-config netcdf-mpi" in line, line
    assert "changed since the last configure" in out
    flags = _compile_flags(build)
    assert str(module) not in flags, "the old include directory is still used"
    assert str(MPI_NETCDF / "include") in flags
    assert str(module) not in (build / "CMakeCache.txt").read_text().split("CLIMIO_NETCDFC_SIGNATURE")[0]

    # and back: the module loaded again wins again
    out = _configure(build, [module / "bin", serial.parent])
    assert f"found by nc-config {module}/bin/nc-config" in _found_line(out)


def test_no_parallel_netcdf_is_one_clear_configure_error(tmp_path):
    """Only the serial build visible (pkg-config and Debian's directory hidden): configure stops and
    names what it saw, instead of a compiler error about netcdf_par.h later."""
    serial = _serial_nc_config()
    proj = tmp_path / "proj"
    proj.mkdir()
    (proj / "CMakeLists.txt").write_text(
        "cmake_minimum_required(VERSION 3.18)\nproject(p NONE)\n"
        f"list(APPEND CMAKE_MODULE_PATH {ROOT / 'cmake'})\n"
        # hide Debian's parallel build from the directory glob and pkg-config
        "set(ENV{PKG_CONFIG_LIBDIR} /nonexistent)\n"
        "find_package(NetCDFC REQUIRED)\n")
    text = (ROOT / "cmake" / "FindNetCDFC.cmake").read_text()
    assert 'file(GLOB _nc_debian LIST_DIRECTORIES true "/usr/lib/*/netcdf/mpi")' in text
    (proj / "FindNetCDFC.cmake").write_text(text.replace('"/usr/lib/*/netcdf/mpi"', '"/nonexistent/*/netcdf/mpi"'))
    (proj / "CMakeLists.txt").write_text((proj / "CMakeLists.txt").read_text().replace(
        str(ROOT / "cmake"), str(proj)))
    r = subprocess.run(["cmake", "-S", str(proj), "-B", str(tmp_path / "b")], capture_output=True, text=True,
                       env=dict(os.environ, PATH=f"{serial.parent}:{os.environ['PATH']}"), timeout=120)
    assert r.returncode != 0
    assert "no parallel (MPI) build of netCDF-C found" in r.stderr
    assert f"nc-config {serial}: netCDF-C" in r.stderr and "serial" in r.stderr


@pytest.mark.parametrize("target", ["climio-probe-netcdf"])
def test_one_netcdf_target_builds_against_what_was_found(tmp_path, target):
    """One small target (a single C file on the netCDF-C found) compiles and links: the include
    directory and library found belong together."""
    serial = _serial_nc_config()
    build = tmp_path / "build"
    _configure(build, [serial.parent])
    r = subprocess.run(["cmake", "--build", str(build), "--target", target, "-j2"], capture_output=True, text=True,
                       timeout=600)
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]
    exe = next(build.rglob(target))
    ldd = subprocess.run(["ldd", str(exe)], capture_output=True, text=True).stdout
    assert "libnetcdf_mpi" in ldd, ldd
