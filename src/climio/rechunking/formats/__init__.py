"""The formats `climio rechunk` reads and writes, one module each behind one small interface that
the command and the executors (local: execute.py, MPI: mpi_exec.py) use:

    scan(path) -> [VarInfo]                      every variable of the input
    stored_bytes(path, infos) -> {path: bytes}   stored (compressed) size per variable
    total_bytes(path) -> int                     the input's size on disk
    open_input(path) -> context manager          a handle input_source reads from (or None)
    input_source(info, path, handle, cache) -> (blocks.Source, chunk index or None)
    staged(out) -> context manager               the temporary name, renamed on success
    define_output(in, in_format, tmp, targets, infos, max_mem, settings) -> {path: key}
    open_output(tmp) -> context manager; output(handle, key, target) -> (blocks.Sink, write)
    check_written(tmp, jobs)                     the output opens with every variable at full shape

netcdf4: netCDF-4/HDF5 output; netCDF-4, netCDF-3 and CDF-5 input. zarr: Zarr v3 or v2 stores.
"""

from pathlib import Path

from climio.base.errors import InputError

FORMATS = ("netcdf4", "zarr")
ZARR_SUFFIXES = (".zarr",)


def module(fmt: str):
    if fmt == "zarr":
        from . import zarr
        return zarr
    from . import netcdf4
    return netcdf4


def input_format(path) -> str:
    """A directory holding Zarr metadata is a Zarr store; anything else is read as netCDF."""
    from .zarr import is_store
    return "zarr" if is_store(path) else "netcdf4"


def output_format(path, explicit=None) -> str:
    """--format if given, else from OUT's suffix (.zarr: Zarr; anything else: netCDF-4)."""
    if explicit:
        fmt = str(explicit).strip().lower()
        if fmt not in FORMATS:
            raise InputError(f"--format {explicit}: use zarr or netcdf4")
        return fmt
    return "zarr" if Path(path).suffix.lower() in ZARR_SUFFIXES else "netcdf4"
