#!/usr/bin/env bash
# The only place climio installs anything. Idempotent: a second run installs nothing.
#
#   scripts/setup.sh            apt packages (as root) + .venv + climio (native programs built by CMake)
#   CLIMIO_NO_APT=1 scripts/setup.sh
#                               HPC cluster without root: netCDF-C, HDF5, PnetCDF and MPI come from
#                               environment modules and are found through nc-config, h5pcc/h5cc,
#                               pnetcdf-config and mpicc on PATH.
set -euo pipefail

here=$(cd "$(dirname "$0")/.." && pwd)
cd "$here"
venv="${CLIMIO_VENV:-$here/.venv}"
python="${PYTHON:-python3}"

say() { printf 'climio setup: %s\n' "$*" >&2; }
die() { printf 'climio setup: error: %s\n' "$*" >&2; exit 1; }

apt_packages=(
  libnetcdf-mpi-dev libhdf5-openmpi-dev libpnetcdf-dev libopenmpi-dev openmpi-bin
  netcdf-bin hdf5-tools fio strace pkg-config cmake make gcc
)

# Without apt (HPC modules), say what is missing before a long build fails on it.
check_tools() {
  local t
  for t in cmake cc; do
    command -v "$t" >/dev/null || die "$t not found on PATH (load a module that provides it)"
  done
  command -v nc-config >/dev/null || pkg-config --exists netcdf-mpi 2>/dev/null || pkg-config --exists netcdf 2>/dev/null \
    || die "netCDF-C not found: load a netCDF-C module (nc-config on PATH) or set PKG_CONFIG_PATH"
  for t in h5pcc h5cc pnetcdf-config mpicc strace fio; do
    command -v "$t" >/dev/null || say "note: $t not on PATH; studies that need it will say so"
  done
}

install_system_packages() {
  if [ -n "${CLIMIO_NO_APT:-}" ]; then
    say "CLIMIO_NO_APT set: using the netCDF-C, HDF5, MPI and PnetCDF found on PATH"
    check_tools
    return
  fi
  local missing=()
  for p in "${apt_packages[@]}"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
  done
  # Debian's python3 needs python3-venv for `-m venv`; a pyenv or module Python has it built in.
  if ! "$python" -c 'import venv, ensurepip' >/dev/null 2>&1; then
    missing+=(python3-venv)
  fi
  [ ${#missing[@]} -eq 0 ] && return
  [ "$(id -u)" -eq 0 ] || die "missing system packages (${missing[*]}) and not root: install them, or load modules and set CLIMIO_NO_APT=1"
  say "installing system packages: ${missing[*]}"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
}

# A stamp per step holds a hash of what the step depends on; an unchanged hash means nothing to do.
stamp_ok() { [ -f "$1" ] && [ "$(cat "$1")" = "$2" ]; }

install_venv() {
  if [ ! -x "$venv/bin/python" ]; then
    say "creating virtual environment $venv"
    "$python" -m venv "$venv"
  fi
  local deps_hash
  deps_hash=$(sha256sum pyproject.toml scripts/requirements-build.txt | sha256sum | cut -c1-16)
  if ! stamp_ok "$venv/.climio-deps" "$deps_hash"; then
    say "installing Python dependencies"
    "$venv/bin/python" -m pip install -q --upgrade pip
    "$venv/bin/python" -m pip install -q -r scripts/requirements-build.txt
    # Runtime and test dependencies of the package, read from pyproject.toml.
    "$venv/bin/python" - <<'PY' > "$venv/.climio-reqs.txt"
import tomllib
p = tomllib.load(open("pyproject.toml", "rb"))["project"]
print("\n".join(p["dependencies"] + p["optional-dependencies"]["test"]))
PY
    "$venv/bin/python" -m pip install -q -r "$venv/.climio-reqs.txt"
    echo "$deps_hash" > "$venv/.climio-deps"
  fi
}

install_climio() {
  # Editable install: Python edits take effect at once; the native programs are rebuilt
  # (by CMake through scikit-build-core) when anything they are built from changes.
  local src_hash
  src_hash=$( (find csrc cmake -type f -print0 | sort -z | xargs -0 sha256sum; sha256sum CMakeLists.txt pyproject.toml) | sha256sum | cut -c1-16)
  if ! stamp_ok "$venv/.climio-native" "$src_hash" || [ ! -x "$venv/bin/climio-probe-posix" ]; then
    say "building native probes and installing climio"
    "$venv/bin/python" -m pip install -q --no-build-isolation --no-deps -e . \
      || die "building climio failed (see the CMake output above)"
    echo "$src_hash" > "$venv/.climio-native"
  fi
}

install_system_packages
install_venv
install_climio
