"""A real variable as a data source for a study: `--source FILE:VAR` instead of generated values."""

import os

import numpy as np

from climio.dataset import integrity
from climio.base.errors import DataError, InputError


def open_netcdf(path):
    """netCDF4.Dataset of `path` (read-only); DataError when it is missing or not netCDF/HDF5."""
    import netCDF4
    if not os.path.isfile(path):
        raise DataError(f"no such file: {path}")
    integrity.check(path)   # a truncated or zeroed file is one line here, not zeros read later
    try:
        return netCDF4.Dataset(path)
    except (OSError, RuntimeError, ValueError) as exc:   # ValueError: a name that is not UTF-8
        raise DataError(f"cannot open {path} as netCDF: {str(exc)[:200]}") from None


def open_source(spec, study="this study"):
    """(shape, dtype, values(sel)) of a real 4-D [t,z,y,x] variable given as FILE:VAR; one-line
    errors for a malformed spec, a missing file or variable, or another rank."""
    path, _, var = str(spec).rpartition(":")
    if not path or not var:
        raise InputError(f"--source '{spec}' must be FILE:VAR")
    ds = open_netcdf(path)
    if var not in ds.variables:
        raise DataError(f"no variable {var!r} in {path}")
    v = ds.variables[var]
    if v.ndim != 4:
        raise DataError(f"variable {var!r} in {path} has {v.ndim} dimensions; {study} needs [t,z,y,x]")
    v.set_auto_maskandscale(False)

    def values(sel):
        try:
            return np.asarray(v[sel])
        except (RuntimeError, OSError, ValueError, MemoryError) as exc:   # a damaged chunk: netCDF-C's "HDF error"
            raise DataError(f"cannot read {var} from {path}: {str(exc)[:160] or type(exc).__name__}") from None
    return list(v.shape), v.dtype.str.lstrip("<>|="), values
