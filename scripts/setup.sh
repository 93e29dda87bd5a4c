#!/usr/bin/env bash
# The only place climio installs anything. Idempotent: a second run installs nothing.
#
#   scripts/setup.sh            apt packages (as root) + .venv + climio (native programs built by CMake)
#   CLIMIO_NO_APT=1 scripts/setup.sh
#                               HPC cluster without root: netCDF-C, HDF5, PnetCDF and MPI come from
#                               environment modules and are found through nc-config, h5pcc/h5cc,
#                               pnetcdf-config and mpicc on PATH.
#   CLIMIO_NO_MPI=1 scripts/setup.sh
#                               skip the MPI Python stack (mpi4py and the parallel h5py in
#                               .venv/mpi-site); the serial studies do not need it.
#   CLIMIO_HDF5_MPI_DIR=DIR     the parallel HDF5 to build the MPI h5py against (DIR/include,
#                               DIR/lib); default: Debian's /usr/lib/<multiarch>/hdf5/openmpi, else
#                               the installation point that h5pcc reports.
set -euo pipefail

here=$(cd "$(dirname "$0")/.." && pwd)
cd "$here"
# One run at a time (two engineers' `make setup` at once would build the same things over each
# other): hold a lock on this script for the whole run.
exec 9<"$here/scripts/setup.sh"
if command -v flock >/dev/null && ! flock -n 9; then
  printf 'climio setup: another setup run is in progress; waiting for it\n' >&2
  flock 9
fi
venv="${CLIMIO_VENV:-$here/.venv}"
python="${PYTHON:-python3}"

say() { printf 'climio setup: %s\n' "$*" >&2; }
die() { printf 'climio setup: error: %s\n' "$*" >&2; exit 1; }

apt_packages=(
  libnetcdf-mpi-dev libhdf5-openmpi-dev libpnetcdf-dev libopenmpi-dev openmpi-bin
  netcdf-bin hdf5-tools fio strace pkg-config cmake make gcc
  # The SERIAL netCDF-C (and with it the serial HDF5) too, on purpose: NCO and CDO pull it in on
  # users' machines, and its nc-config on PATH must not win over the parallel build. Installing
  # it here makes every set-up, and CI, build in that harder configuration.
  libnetcdf-dev
  # NCL's example data: real model output the rechunk round-trip test and bench/rechunk_corpus.py read
  libncarg-data
)

# Without apt (HPC modules), say what is missing before a long build fails on it.
check_tools() {
  local t
  for t in cmake cc; do
    command -v "$t" >/dev/null || die "$t not found on PATH (load a module that provides it)"
  done
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
  # mpi4py and the MPI h5py are compiled from source: they need Python.h (Debian: python3-dev).
  if [ "${CLIMIO_NO_MPI:-}" != 1 ] && ! "$python" -c 'import os, sys, sysconfig
sys.exit(not os.path.exists(os.path.join(sysconfig.get_paths()["include"], "Python.h")))' >/dev/null 2>&1; then
    missing+=(python3-dev)
  fi
  [ ${#missing[@]} -eq 0 ] && return
  [ "$(id -u)" -eq 0 ] || die "missing system packages (${missing[*]}) and not root: install them, or load modules and set CLIMIO_NO_APT=1"
  say "installing system packages: ${missing[*]}"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
}

# What the native build will really use: the parallel netCDF-C and HDF5 as CMake's find modules
# pick them (cmake/check_libs configures them alone, in about a second), whatever packages or
# modules are installed. Prints their lines (on stdout, for install_climio's stamp) and stops
# with CMake's message when there is no parallel build.
native_libs() {
  command -v cmake >/dev/null || die "cmake not found on PATH (load a module that provides it)"
  local dir out
  dir=$(mktemp -d)
  if ! out=$(cmake -S "$here/cmake/check_libs" -B "$dir" 2>&1); then
    rm -rf "$dir"
    printf '%s\n' "$out" | grep -v '^-- \(Configuring\|Generating\)' >&2
    die "the native build needs the parallel (MPI) netCDF-C and HDF5 (see above)"
  fi
  rm -rf "$dir"
  printf '%s\n' "$out" | sed -n 's/^-- climio: //p; s/^     \(include\|library\)/  \1/p'
}

# The browser that looks at the HTML reports (tests/test_report_browser.py, `--screenshot`):
# Debian's Chromium and its driver, driven by Playwright for Python (a test dependency in
# pyproject.toml) against this system browser; Playwright's own browser downloads are never used.
browser_packages=(chromium chromium-driver)

install_browser() {
  if [ -n "${CLIMIO_NO_APT:-}" ]; then
    command -v chromium >/dev/null || [ -n "${CLIMIO_CHROMIUM:-}" ] \
      || say "note: chromium not on PATH; the report's browser test and --screenshot need it (or set CLIMIO_CHROMIUM)"
    return
  fi
  local missing=() p
  for p in "${browser_packages[@]}"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
  done
  [ ${#missing[@]} -eq 0 ] && return
  [ "$(id -u)" -eq 0 ] || die "missing the browser packages (${missing[*]}) and not root: install them, or set CLIMIO_NO_APT=1 and CLIMIO_CHROMIUM"
  say "installing the browser the report tests use: ${missing[*]}"
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
  # The libraries found are part of the hash: another netCDF-C or HDF5 (a package installed or
  # removed, a module loaded) rebuilds the native programs against it.
  local libs
  libs=$(native_libs)
  say "native build uses: $(printf '%s' "$libs" | sed -n 's/ parallel, found by.*//p' | paste -sd, -)"
  src_hash=$( (find csrc cmake -type f -print0 | sort -z | xargs -0 sha256sum; sha256sum CMakeLists.txt pyproject.toml
               printf '%s\n' "$libs") | sha256sum | cut -c1-16)
  if ! stamp_ok "$venv/.climio-native" "$src_hash" || [ ! -x "$venv/bin/climio-probe-posix" ]; then
    say "building native probes and installing climio"
    "$venv/bin/python" -m pip install -q --no-build-isolation --no-deps -e . \
      || die "building climio failed (see the CMake output above)"
    echo "$src_hash" > "$venv/.climio-native"
  fi
}

# The MPI Python stack, built from source against the system MPI and parallel HDF5:
#  - mpi4py into the venv itself (the parallel-write study and the MPI h5py both use it), from
#    its binary wheel, which dlopens the system libmpi;
#  - h5py with HDF5_MPI=ON into its own directory .venv/mpi-site, NOT the venv's site-packages,
#    which keeps the serial h5py wheel (bundled HDF5 2.x) that the serial studies measure.
#    climio.measure.mpi_site.activate() puts mpi-site first on sys.path in processes started by mpirun.
# h5py 3.16.0: the same release as the serial wheel (one h5py API for both paths); it builds
# against HDF5 >= 1.10.7 (Debian 12 has 1.10.8) and NumPy 2. mpi4py >= 4.0 is what it asks for.
mpi4py_version=4.1.2
h5py_mpi_version=3.16.0
mpi_site="$venv/mpi-site"

hdf5_mpi_dir() {
  local d
  if [ -n "${CLIMIO_HDF5_MPI_DIR:-}" ]; then echo "$CLIMIO_HDF5_MPI_DIR"; return; fi
  for d in /usr/lib/"$(gcc -print-multiarch 2>/dev/null || echo x86_64-linux-gnu)"/hdf5/openmpi /usr/lib/*/hdf5/openmpi; do
    [ -f "$d/include/hdf5.h" ] && { echo "$d"; return; }
  done
  command -v h5pcc >/dev/null && h5pcc -showconfig | sed -n 's/^ *Installation point: *//p'
}

install_mpi_python() {
  if [ "${CLIMIO_NO_MPI:-}" = 1 ]; then
    say "CLIMIO_NO_MPI=1: skipping mpi4py and the MPI h5py (.venv/mpi-site); parallel studies and 'climio rechunk' under mpirun are unavailable"
    return
  fi
  command -v mpicc >/dev/null || die "mpicc not found: install an MPI (or load its module), or set CLIMIO_NO_MPI=1 to skip the MPI Python stack"
  local h5dir
  h5dir=$(hdf5_mpi_dir || true)
  [ -n "$h5dir" ] && [ -f "$h5dir/include/hdf5.h" ] \
    || die "no parallel HDF5 found (looked for <dir>/include/hdf5.h; set CLIMIO_HDF5_MPI_DIR, or CLIMIO_NO_MPI=1 to skip)"
  grep -qi "parallel hdf5: *yes" "$h5dir"/lib/libhdf5.settings 2>/dev/null || grep -qi "H5_HAVE_PARALLEL 1" "$h5dir/include/H5pubconf.h" \
    || die "the HDF5 in $h5dir is not a parallel build (set CLIMIO_HDF5_MPI_DIR to one, or CLIMIO_NO_MPI=1)"

  # Build options for setuptools: compile the extensions of one package in parallel.
  local cfg
  cfg=$(mktemp)
  printf '[build_ext]\nparallel = %s\n' "$(nproc 2>/dev/null || echo 2)" > "$cfg"

  local pyver mpiver mpi_hash h5_hash start
  pyver=$("$venv/bin/python" -c 'import sys; print(sys.version)')
  mpiver=$( (mpicc -showme:version 2>/dev/null || mpicc -v 2>&1 | head -1); command -v mpicc)
  mpi_hash=$(printf '%s\n' "$mpi4py_version" binary "$pyver" "$mpiver" | sha256sum | cut -c1-16)
  if ! stamp_ok "$venv/.climio-mpi4py" "$mpi_hash" || ! "$venv/bin/python" -c 'import mpi4py' 2>/dev/null; then
    # mpi4py's binary wheel dlopens the system libmpi at run time (checked below by loading it),
    # which saves the 5 minutes of compiling its one huge C file; h5py is still built against it.
    say "installing mpi4py $mpi4py_version (binary wheel, runs on the system MPI)"
    "$venv/bin/python" -m pip install -q --no-deps --force-reinstall "mpi4py==$mpi4py_version" \
      || { rm -f "$cfg"; die "installing mpi4py failed (see above); set CLIMIO_NO_MPI=1 to skip the MPI Python stack"; }
    "$venv/bin/python" -c 'from mpi4py import MPI; print(MPI.Get_library_version())' | head -1 \
      || { rm -f "$cfg"; die "mpi4py does not load the system MPI"; }
    echo "$mpi_hash" > "$venv/.climio-mpi4py"
  fi

  h5_hash=$( (printf '%s\n' "$h5py_mpi_version" "$mpi_hash" "$h5dir"
              "$venv/bin/python" -c 'import numpy; print(numpy.__version__)'
              cat "$h5dir/include/H5pubconf.h") | sha256sum | cut -c1-16)
  if ! stamp_ok "$venv/.climio-mpi-h5py" "$h5_hash" || [ ! -f "$mpi_site/h5py/__init__.py" ]; then
    say "building h5py $h5py_mpi_version with MPI against $h5dir into $mpi_site (takes about 3 minutes on 2 cores)"
    start=$SECONDS
    rm -rf "$mpi_site.new.$$"
    HDF5_MPI=ON CC=mpicc HDF5_DIR="$h5dir" DIST_EXTRA_CONFIG="$cfg" \
      "$venv/bin/python" -m pip install -q --no-cache-dir --no-build-isolation --no-deps \
      --no-binary=h5py --target "$mpi_site.new.$$" "h5py==$h5py_mpi_version" \
      || { rm -f "$cfg"; rm -rf "$mpi_site.new.$$"; die "building the MPI h5py failed (see above); set CLIMIO_NO_MPI=1 to skip the MPI Python stack"; }
    (cd / && PYTHONPATH="$mpi_site.new.$$" "$venv/bin/python" -c '
import sys, h5py
assert h5py.__file__.startswith(sys.argv[1]), h5py.__file__
assert h5py.get_config().mpi, "h5py built without MPI"' "$mpi_site.new.$$") \
      || { rm -f "$cfg"; rm -rf "$mpi_site.new.$$"; die "the MPI h5py just built does not load or is not parallel"; }
    rm -rf "$mpi_site" && mv "$mpi_site.new.$$" "$mpi_site"
    say "MPI h5py built in $((SECONDS - start)) s"
    echo "$h5_hash" > "$venv/.climio-mpi-h5py"
  fi
  rm -f "$cfg"
}

# Object storage for the S3 studies and their tests: SeaweedFS (an S3-compatible server) and
# Toxiproxy (injects latency and bandwidth limits between client and server; this kernel has no
# netem). Both are Go programs built once into a cache outside the repository, keyed by version,
# so a fresh clone of the same version reuses them and a second run does nothing. climio finds
# them at the same place (src/climio/stores/binaries.py keeps the same versions; CLIMIO_WEED and
# CLIMIO_TOXIPROXY override). SeaweedFS's go.mod has replace directives, so `go install` refuses
# it: the module is downloaded from the Go module proxy, copied and built with `go build ./weed`.
seaweedfs_version=v0.0.0-20261109003541-7506e5f91cd6
toxiproxy_version=v2.5.0
climio_cache="${CLIMIO_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/climio}"

install_object_store_tools() {
  if [ "${CLIMIO_NO_S3:-}" = 1 ]; then
    say "CLIMIO_NO_S3=1: not building SeaweedFS and Toxiproxy; the object-store tests and studies need them"
    return
  fi
  local weed_dir="$climio_cache/seaweedfs-$seaweedfs_version" tp_dir="$climio_cache/toxiproxy-$toxiproxy_version"
  local goversion start src tmp
  if [ -x "$weed_dir/weed" ] && stamp_ok "$weed_dir/.stamp" "$seaweedfs_version" \
     && [ -x "$tp_dir/toxiproxy-server" ] && stamp_ok "$tp_dir/.stamp" "$toxiproxy_version"; then
    return
  fi
  command -v go >/dev/null || die "go not found on PATH: SeaweedFS and Toxiproxy are built from the Go module proxy (install Go >= 1.26, or set CLIMIO_NO_S3=1 to skip the object-store studies)"
  goversion=$(go env GOVERSION)
  mkdir -p "$climio_cache"
  if [ ! -x "$tp_dir/toxiproxy-server" ] || ! stamp_ok "$tp_dir/.stamp" "$toxiproxy_version"; then
    say "building Toxiproxy $toxiproxy_version ($goversion) into $tp_dir"
    tmp="$tp_dir.new.$$"; rm -rf "$tmp"; mkdir -p "$tmp"
    GOBIN="$tmp" GOFLAGS=-buildvcs=false go install -trimpath "github.com/Shopify/toxiproxy/v2/cmd/server@$toxiproxy_version" \
      || { rm -rf "$tmp"; die "building Toxiproxy failed (see above)"; }
    mv "$tmp/server" "$tmp/toxiproxy-server"
    echo "$toxiproxy_version" > "$tmp/.stamp"
    rm -rf "$tp_dir" && mv "$tmp" "$tp_dir"
  fi
  if [ ! -x "$weed_dir/weed" ] || ! stamp_ok "$weed_dir/.stamp" "$seaweedfs_version"; then
    say "building SeaweedFS $seaweedfs_version ($goversion) into $weed_dir (about 10 minutes on 2 cores, once)"
    start=$SECONDS
    src=$(go mod download -json "github.com/seaweedfs/seaweedfs@$seaweedfs_version" | sed -n 's/^[[:space:]]*"Dir": "\(.*\)",$/\1/p')
    [ -n "$src" ] && [ -d "$src" ] || die "downloading SeaweedFS $seaweedfs_version from the Go module proxy failed"
    tmp="$weed_dir.new.$$"; rm -rf "$tmp"; mkdir -p "$tmp"
    # The module cache is read-only; the build needs a writable copy of the module.
    cp -r "$src" "$tmp/src" && chmod -R u+w "$tmp/src"
    (cd "$tmp/src" && GOFLAGS=-buildvcs=false go build -trimpath -ldflags "-s -w" -o "$tmp/weed" ./weed) \
      || { rm -rf "$tmp"; die "building SeaweedFS failed (see above)"; }
    rm -rf "$tmp/src"
    echo "$seaweedfs_version" > "$tmp/.stamp"
    rm -rf "$weed_dir" && mv "$tmp" "$weed_dir"
    say "SeaweedFS built in $((SECONDS - start)) s"
  fi
}

# The Go builds (SeaweedFS: minutes of compiling, its modules downloaded first) need nothing the
# other steps install, so they run beside them: the downloads and the compile overlap apt's and
# pip's, instead of adding their whole time at the end of a first set-up.
install_object_store_tools &
object_store_pid=$!
install_system_packages
install_browser
install_venv
install_climio
install_mpi_python
wait "$object_store_pid" || die "building the object-store tools failed (see above)"
