"""Locating and running climio's native programs (built by CMake at install time)."""

import functools
import json
import os
import shutil
import subprocess
import sys
import sysconfig
from pathlib import Path

from climio.base.errors import NativeError


def program(name: str) -> str:
    """Absolute path of native program `name`; CLIMIO_NATIVE_BIN overrides the search."""
    dirs = [os.environ.get("CLIMIO_NATIVE_BIN"), str(Path(sys.executable).parent), sysconfig.get_path("scripts")]
    for d in dirs:
        if d and os.access(os.path.join(d, name), os.X_OK):
            return os.path.join(d, name)
    found = shutil.which(name)
    if found:
        return found
    raise NativeError(f"native program {name} not found: install climio with `make setup` (or set CLIMIO_NATIVE_BIN)")


def library(name: str) -> str:
    """Absolute path of native shared library lib`name`.so (e.g. "climio-trace", the LD_PRELOAD
    tracer), installed by CMake in <environment>/lib/climio/; CLIMIO_NATIVE_LIB (a directory)
    overrides the search."""
    fname = f"lib{name}.so"
    dirs = [os.environ.get("CLIMIO_NATIVE_LIB"),
            os.path.join(sysconfig.get_path("data"), "lib", "climio"),
            os.path.join(sys.prefix, "lib", "climio"),
            str(Path(sys.executable).parent.parent / "lib" / "climio")]
    for d in dirs:
        if d and os.path.isfile(os.path.join(d, fname)):
            return os.path.abspath(os.path.join(d, fname))
    raise NativeError(f"native library {fname} not found: install climio with `make setup` (or set CLIMIO_NATIVE_LIB)")


def child_env() -> dict:
    """Environment for measuring processes: this one's, with HDF5_PLUGIN_PATH as the user set it
    (a C probe must see the filters of its own HDF5, not the Python wheel's)."""
    from climio import USER_HDF5_PLUGIN_PATH
    env = dict(os.environ)
    if USER_HDF5_PLUGIN_PATH is None:
        env.pop("HDF5_PLUGIN_PATH", None)
    else:
        env["HDF5_PLUGIN_PATH"] = USER_HDF5_PLUGIN_PATH
    return env


def build_info() -> dict:
    """Versions of the C layer recorded by CMake when the probes were built."""
    for base in (sysconfig.get_path("data"), sys.prefix):
        p = Path(base) / "share" / "climio" / "build_info.json"
        if p.is_file():
            return json.loads(p.read_text())
    return {}


def run_text(args, timeout=60) -> str:
    """Run a native program and return what it printed on stdout."""
    try:
        out = subprocess.run(args, capture_output=True, text=True, timeout=timeout, check=True)
    except (OSError, subprocess.SubprocessError) as exc:
        raise NativeError(f"{Path(args[0]).name} failed: {_first_line(exc)}") from None
    return out.stdout


def run_json(args, timeout=60) -> dict:
    """Run a native program that prints one JSON object (e.g. `--version`)."""
    return json.loads(run_text(args, timeout))


# The MPI program of the parallel-write and parallel-read studies: one binary, `--op write|read`.
PARIO = "climio-pario"


def pario(op: str) -> list:
    """The start of a climio-pario command line for operation `op` ("write" or "read")."""
    return [program(PARIO), "--op", op]


@functools.lru_cache(maxsize=None)
def pario_backends() -> tuple:
    """The backends of climio-pario in its default order, as its `--list` prints them
    (`NAME<TAB>DESCRIPTION` lines; csrc/pario/backends.h is the one list). The program runs once
    per process (it answers without MPI); NativeError in one line if it cannot."""
    names = tuple(line.split("\t", 1)[0].strip() for line in run_text([program(PARIO), "--list"]).splitlines()
                  if line.strip())
    if not names or not all(names):
        raise NativeError(f"{PARIO} --list printed no backends")
    return names


def _first_line(exc) -> str:
    stderr = getattr(exc, "stderr", None)
    text = (stderr or str(exc)).strip()
    return text.splitlines()[-1] if text else type(exc).__name__
