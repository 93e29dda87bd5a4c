"""The MPI h5py: a second h5py, built against the system's parallel HDF5, for processes under mpirun.

The venv's site-packages keeps the serial h5py wheel (bundled HDF5 2.x) that the serial studies
measure. scripts/setup.sh (step install_mpi_python) builds mpi4py into the venv and h5py 3.16.0 with
HDF5_MPI=ON into ``<venv>/mpi-site``; :func:`activate` puts that directory first on ``sys.path``.
It must run before anything imports h5py (h5netcdf and xarray's h5netcdf backend import it too).

What HDF5 1.10.8's parallel mode does from h5py (Debian 12, Open MPI 4.1.4; 2 and 3 ranks; files
defined by the serial netCDF4 wheel with format NETCDF4, closed, then opened by every rank with
``h5py.File(path, "r+", driver="mpio", comm=MPI.COMM_WORLD)``):

a. Collective hyperslab writes (``with dset.collective: dset[sel] = arr``) to an uncompressed chunked
   and to a contiguous variable work; values read back exactly, and ncdump and netCDF4 read the
   file afterwards.
b. Collective writes to a deflate+shuffle chunked variable work, including chunks shared between
   ranks and ranks writing different numbers of blocks. The variable needs no
   H5D_ALLOC_TIME_EARLY: netCDF creates it with incremental allocation, and opening it (H5Dopen)
   in a file opened r+ with mpio allocates every chunk of it at once (compressed fill chunks; also
   with fill_value=False). Independent writes to a filtered dataset fail ("Can't perform
   independent write with filters in pipeline"). Every rank must make the same number of
   collective write calls; a rank with nothing to write must still call with an empty selection,
   and h5py's ``dset[0:0] = empty`` does NOT do that (h5py returns before H5Dwrite for a zero-size
   selection, and the other ranks hang). Use the low-level call, see :func:`write_nothing`.
   One call per rank with the union of its blocks (``select_hyperslab(..., op=h5s.SELECT_OR)``)
   also works.
c. ``dset.id.write_direct_chunk`` with the mpio driver: with a collective transfer it fails
   (MPI_ERR_TYPE in MPI_File_set_view) on an uncompressed variable and hangs on a compressed one;
   with an independent transfer it only works where a chunk keeps its allocated size (uncompressed
   chunks overwritten in place). Compressed chunks need file space allocated per rank, and the
   file close hangs, leaving a file netCDF cannot read. Not usable for compressed output.
d. A rank can open the source file read-only with the default (sec2) driver of this h5py while
   the output is open with mpio.
e. The netCDF4 wheel (its own HDF5 2.2.0) and this h5py (HDF5 1.10.8) load into one process in
   either import order; each keeps its own library: rank 0 can define the output with netCDF4,
   close it, and then take part in the mpio phase, and read the result back with netCDF4.
Importing this h5py does not initialise MPI (it does not import mpi4py.MPI).
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

from climio.base.errors import NativeError

SITE_NAME = "mpi-site"
_HOW_TO_BUILD = "build it with `make setup` (scripts/setup.sh, step install_mpi_python; not with CLIMIO_NO_MPI=1)"


def site_dir() -> Path:
    """Where the MPI h5py lives: $CLIMIO_MPI_SITE, else <sys.prefix>/mpi-site (sys.prefix is the venv)."""
    override = os.environ.get("CLIMIO_MPI_SITE")
    return Path(override) if override else Path(sys.prefix) / SITE_NAME


# Which process is a rank: one set of rules for the launcher, this module and the tracer.
from climio.measure.mpi import under_mpi  # noqa: E402,F401


def activate() -> None:
    """Make `import h5py` give the MPI build. Call before anything imports h5py; idempotent."""
    site = site_dir()
    if not (site / "h5py" / "__init__.py").is_file():
        raise NativeError(f"the MPI build of h5py is missing ({site}): {_HOW_TO_BUILD}")
    loaded = sys.modules.get("h5py")
    if loaded is not None:
        where = Path(getattr(loaded, "__file__", "") or "").resolve()
        if site.resolve() in where.parents:
            return
        raise NativeError(f"h5py was imported from {where.parent} before climio.measure.mpi_site.activate(); "
                          "activate the MPI h5py before anything imports h5py (h5netcdf, xarray)")
    entry = str(site)
    if entry in sys.path:
        sys.path.remove(entry)
    sys.path.insert(0, entry)


def h5py_is_parallel() -> bool:
    """Whether the h5py that `import h5py` gives is built with MPI (imports h5py: activate() first)."""
    try:
        import h5py
    except ImportError:
        return False
    return bool(h5py.get_config().mpi)


def write_nothing(dset) -> None:
    """Take part in a collective write of `dset` with an empty selection (a rank with no block).

    h5py's high-level `dset[0:0] = ...` skips H5Dwrite for a zero-size selection, so the other
    ranks would wait for this one forever; this calls H5Dwrite with none selected.
    """
    import numpy as np
    from h5py import h5fd, h5p, h5s

    fspace = dset.id.get_space()
    fspace.select_none()
    mspace = h5s.create_simple((1,))
    mspace.select_none()
    dxpl = h5p.create(h5p.DATASET_XFER)
    dxpl.set_dxpl_mpio(h5fd.MPIO_COLLECTIVE)
    dset.id.write(mspace, fspace, np.empty(1, dtype=dset.dtype), dxpl=dxpl)
