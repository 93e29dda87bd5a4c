"""Fixes said in the program's own stack (Facts.stack): an xarray program gets `chunks=` and
`open_dataset` options, a netCDF4-python one `set_var_chunk_cache`, a C program the library calls.

    rechunk_command(file, var, chunks) -> the `climio rechunk` line
    xarray_open(file, chunks, dims) -> xr.open_dataset(...) with chunks=
    dask_chunks(shape, file_chunks, count, itemsize) -> Dask chunks: whole multiples of the file's chunks
    whole_chunks(stack, file, var, chunks, dims, target) -> text: read whole chunks (partial-chunk reads)
    chunk_cache(stack, file, var, nbytes, chunks, dims) -> text: a chunk cache of nbytes
    library_min_read(stack) -> text;  random_access(stack) -> text;  small_requests(stack) -> text
"""

import math

# How a fix is weighed once tried (climio trace try, climio bench advice): gains shown at these passes
# P (the conversion spread over P runs), and a measured gain below GAIN_NOISE is no gain (disk noise on
# a shared machine).
SHOWN_PASSES = (1, 10)
GAIN_NOISE = 1.05
import os
import shlex

PYTHON_PROGRAMS = ("xarray", "netcdf4-python", "h5py", "h5netcdf", "python")
CACHE_SLOTS = 100_003     # hash slots for an advised chunk cache: a prime well above its chunks


def rechunk_command(file, var, chunks) -> str:
    """The exact `climio rechunk` line: output beside the input."""
    src = str(file)
    stem, ext = os.path.splitext(src)
    return (f"climio rechunk {shlex.quote(src)} {shlex.quote(stem + '.rechunked' + (ext or '.nc'))} "
            f"-c {shlex.quote(str(var).lstrip('/'))}:{','.join(str(int(c)) for c in chunks)}")


def _chunks_arg(chunks, dims) -> str:
    if dims and len(dims) == len(chunks):
        return "{" + ", ".join(f"{d!r}: {int(c)}" for d, c in zip(dims, chunks)) + "}"
    return f"dict(zip(ds[VAR].dims, {[int(c) for c in chunks]}))"


def xarray_open(file, chunks, dims=None, extra="") -> str:
    return f"xr.open_dataset({str(file)!r}, chunks={_chunks_arg(chunks, dims)}{extra})"


# Dask chunks for open_dataset: tens to hundreds of MiB per task (Dask's own guidance is ~100 MiB).
DASK_LOW_BYTES, DASK_HIGH_BYTES = 32 << 20, 256 << 20


def dask_chunks(shape, file_chunks, count, itemsize, low=DASK_LOW_BYTES, high=DASK_HIGH_BYTES) -> tuple:
    """Dask chunks for `open_dataset(chunks=)`: whole multiples of the file's chunks, covering the
    read `count` along the axes it spans (a series read gets its whole time extent in one task,
    never one task per small chunk), grown along those axes, then the others from the outermost,
    until a task reaches `low` bytes; at most `high` (multiples shrink, largest first)."""
    shape = [int(d) for d in shape]
    fc = [max(1, min(int(c), d)) for c, d in zip(file_chunks or shape, shape)]
    k = [1] * len(fc)                                      # multiples of the file's chunk per axis
    for i, n in enumerate(count):
        k[i] = max(1, min(-(-int(n) // fc[i]), -(-shape[i] // fc[i])))
    size = lambda: math.prod(min(shape[i], k[i] * fc[i]) for i in range(len(fc))) * int(itemsize)
    spans = [i for i, n in enumerate(count) if int(n) > 1]
    for i in spans + [i for i in range(len(fc)) if i not in spans]:
        while size() < low and k[i] * fc[i] < shape[i]:
            k[i] = min(2 * k[i], -(-shape[i] // fc[i]))
    while size() > high and max(k) > 1:
        i = max(range(len(k)), key=lambda j: k[j])
        k[i] = -(-k[i] // 2)
    return tuple(min(shape[i], k[i] * fc[i]) for i in range(len(fc)))


def whole_chunks(stack, file, var, chunks, dims, target, shape=None, count=None, itemsize=None) -> str:
    """Partial-chunk reads of compressed data: read in whole chunks, or re-lay the file out."""
    if [int(c) for c in target] == [int(c) for c in chunks or ()]:
        return (f"The chunks {list(chunks)} are already the smallest within climio's chunk-size bounds for these "
                "reads: read slabs that cover whole chunks (fewer, larger reads), so each chunk is decoded once"
                + (f": `{xarray_open(file, chunks, dims)}`." if stack == "xarray" else "."))
    relayout = f"`{rechunk_command(file, var, target)}` (chunks {list(target)}: a read then decodes about what it asks for)"
    if stack == "xarray":
        dc = dask_chunks(shape, chunks, count, itemsize) if shape and count and itemsize else chunks
        return (f"Rechunk the file for this read: {relayout}; or open it with Dask chunks that are whole multiples "
                f"of the file's chunks {list(chunks)}, sized for the scheduler (not one task per small chunk): "
                f"`{xarray_open(file, dc, dims)}`.")
    if stack in PYTHON_PROGRAMS:
        return (f"Read slabs that cover whole chunks {list(chunks)} (one call per chunk row, not per partial "
                f"slice), or rechunk the file for this read: {relayout}.")
    return (f"Rechunk so that a read covers whole chunks: {relayout}; or read larger hyperslabs that cover "
            "whole chunks.")


def chunk_cache(stack, file, var, nbytes, chunks, dims) -> str:
    """A chunk cache of `nbytes` for the variable, through the program's own library."""
    n = int(nbytes)
    if stack == "xarray":
        # h5netcdf opens the dataset again at every read: a cache given at open starts empty each time
        return (f"Give the variable a chunk cache of at least {n} B through the netCDF4 engine: "
                f"`import netCDF4; netCDF4.set_chunk_cache({n}, {CACHE_SLOTS})` before "
                f"`xr.open_dataset({str(file)!r}, engine='netcdf4')` (with engine='h5netcdf' a cache given at "
                f"open does not help: h5netcdf opens the dataset again at each read, so its cache starts empty).")
    if stack == "netcdf4-python":
        return f"Enlarge the variable's chunk cache: `ds[{str(var).lstrip('/')!r}].set_var_chunk_cache(size={n}, nelems={CACHE_SLOTS})`."
    if stack in ("h5py", "h5netcdf"):
        mod = stack
        return f"Open the file with a larger chunk cache: `{mod}.File({str(file)!r}, 'r', rdcc_nbytes={n}, rdcc_nslots={CACHE_SLOTS})`."
    if stack == "python":
        return (f"Enlarge the variable's chunk cache to at least {n} B (netCDF4: Variable.set_var_chunk_cache; "
                f"h5py / h5netcdf: File(..., rdcc_nbytes={n})) or rechunk.")
    return (f"Enlarge the variable's chunk cache to at least {n} B: `nc_set_var_chunk_cache(ncid, varid, {n}, "
            f"{CACHE_SLOTS}, 0.75)` (HDF5: H5Pset_chunk_cache), or rechunk.")


def library_min_read(stack) -> str:
    if stack == "xarray":
        return ("Ask for larger blocks per read: select the whole slab you need in one indexing (ds[VAR][i0:i1]"
                ".values) instead of many small ones, or open with chunks= (Dask then reads whole blocks).")
    if stack == "h5py":
        return ("Ask for larger blocks per call (dset[i0:i1] rather than element by element); for contiguous data "
                "read it by offset: numpy.memmap(path, dtype, 'r', offset=dset.id.get_offset(), shape=dset.shape).")
    if stack in PYTHON_PROGRAMS:
        return "Ask for larger blocks per call (a slab per call rather than element by element)."
    return ("The library reads at least a buffer per access (HDF5's 64 KiB sieve buffer for contiguous data): read "
            "larger blocks per call, lower the sieve buffer (H5Pset_sieve_buf_size), or read contiguous raw data by "
            "offset.")


def random_access(stack) -> str:
    if stack == "xarray":
        return ("Select in file order: sort the indices you pass to .isel / .sel, load one larger slab and index "
                "it in memory, or rechunk so that what is read together is stored together.")
    return ("Sort the requests by offset, read larger blocks that cover several requests, or change the layout "
            "(rechunk) so that what is read together is stored together.")


SMALL_ADVICE = ("Read or write larger blocks (aggregate in memory, a larger buffer, or collective MPI-IO that "
                "merges requests); on a parallel file system aim at whole stripes (MiB).")
COLLECTIVE_ADVICE = (
    "The collective calls reached the file in small pieces: the MPI-IO layer did not aggregate them. Check its "
    "collective buffering (ROMIO hints romio_cb_write / romio_cb_read = enable, cb_buffer_size; with Open MPI "
    "compare its two implementations, OMPI_MCA_io=romio321 or ompio, e.g. climio bench parallel-write "
    "--mpi-io), and lay the file out so that each rank's part is contiguous (chunk shape against the "
    "decomposition).")
INDEPENDENT_ADVICE = (
    "Make these accesses collective (nc_var_par_access(ncid, varid, NC_COLLECTIVE); "
    "H5Pset_dxpl_mpio(dxpl, H5FD_MPIO_COLLECTIVE); MPI_File_*_all), so that the MPI-IO layer aggregates the "
    "ranks' pieces into large contiguous requests.")


def small_requests(stack) -> str:
    if stack == "xarray":
        return ("Read larger blocks: open with chunks= that are whole multiples of the file's chunks (each Dask "
                "task then reads large blocks), and select whole slabs rather than many small ones.")
    if stack in PYTHON_PROGRAMS:
        return "Read or write larger blocks per call (a slab per call, or a larger buffer for a file object)."
    return SMALL_ADVICE
