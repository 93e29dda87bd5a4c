"""The Stack noun: the Python readers, one class per software stack, behind one protocol.

Every stack opens a file and delivers either a 1-D byte range of a variable (`read_bytes`: the
read-stack study's requests) or an N-D hyperslab (`read_slab`: the chunking study's requests),
with the library's chunk cache as asked. The generic worker (climio.measure.worker) runs a
study's series over any of them, in a process of its own, so that every stack is measured the
same way: imports and the open outside the timed region.

Native stacks are separate C programs (csrc/probes); NATIVE_STACKS names them (climio.dataset.stack_names,
where every stack's name and their order are).

    reader = STACKS["h5py"]()
    reader.open(path, "ta", chunk_cache=(64 << 20, 1009, 0.75))
    block = reader.read_slab((0, 0, 0, 0), (1, 1, 32, 64))
    reader.close()
"""

from importlib import metadata
from typing import Optional, Protocol, Sequence, runtime_checkable

import numpy as np

from climio.dataset.stack_names import NATIVE_STACKS, STACK_NAMES  # noqa: F401  (the stacks' names)

# Which of the two read-stack test files (plain binary or netCDF-4) a stack reads.
BINARY_STACKS = ("c-posix", "py-file", "numpy")
ITEMSIZE = 8  # the read-stack file's values are float64 (raw binary: 8-byte words)

# A chunk cache as the command line gives it: (bytes, slots/nelems, preemption), or None for
# the library's default.
ChunkCache = Optional[tuple]


@runtime_checkable
class Reader(Protocol):
    """What every Python stack offers.

    `open` may be called again after `close` (one open per repetition). After `open`, `shape`
    and `dtype` describe the variable (for a raw binary file: float64 words). `read_bytes(offset,
    nbytes)` delivers bytes [offset, offset + nbytes) of a 1-D variable (offset and nbytes
    multiples of the itemsize for the netCDF/HDF5 stacks); `read_slab(start, count)` delivers
    the hyperslab as an array in the variable's type. A stack that cannot read hyperslabs (a
    raw file has no dimensions) raises NotImplementedError and has `slabs = False`.
    `chunk_cache_info()` is the chunk cache in effect after the open
    ({"size", "nelems", "preemption"}), or None where the stack has none.
    """

    api: str
    slabs: bool
    shape: tuple
    dtype: np.dtype

    def open(self, path: str, var: str, chunk_cache: ChunkCache = None) -> None: ...

    def read_bytes(self, offset: int, nbytes: int): ...

    def read_slab(self, start: Sequence[int], count: Sequence[int]): ...

    def close(self) -> None: ...

    def library(self) -> str: ...

    def chunk_cache_info(self) -> Optional[dict]: ...


def file_kind(name: str) -> str:
    """"bin" for the stacks that read the raw binary file, "nc" for the netCDF/HDF5 ones."""
    return "bin" if name in BINARY_STACKS else "nc"


# --- raw files ------------------------------------------------------------------------------------

class _RawFile:
    """A raw binary file of float64 words. Skips the seek when a read continues where the previous
    one ended, as the thesis's sequential loop did (read after read, no seeks)."""

    slabs = False
    dtype = np.dtype("<f8")
    shape = ()  # (words,) once open

    def open(self, path, var=None, chunk_cache=None):
        import os
        self.fh = open(path, "rb")
        self.pos = 0
        self.shape = (os.path.getsize(path) // ITEMSIZE,)

    def _seek(self, off):
        if off != self.pos:
            self.fh.seek(off)
        self.pos = off

    def read_slab(self, start, count):
        raise NotImplementedError(f"{type(self).__name__} reads byte ranges of a raw file, not hyperslabs")

    def close(self):
        self.fh.close()

    def chunk_cache_info(self):
        return None


class PyFile(_RawFile):
    api = "file.seek/file.read"

    def read_bytes(self, offset, nbytes):
        self._seek(offset)
        data = self.fh.read(nbytes)
        self.pos += len(data)
        return data

    def library(self):
        return "Python io (BufferedReader)"


class NumpyFromfile(_RawFile):
    api = "np.fromfile"

    def read_bytes(self, offset, nbytes):
        self._seek(offset)
        data = np.fromfile(self.fh, dtype=self.dtype, count=nbytes // ITEMSIZE)
        self.pos += data.nbytes
        return data

    def library(self):
        return f"numpy {np.__version__}"


# --- netCDF / HDF5 libraries --------------------------------------------------------------------

class _Variable:
    """Stacks that slice a library's variable object (`self.var`)."""

    slabs = True
    var = None  # the library's variable object, once open

    @property
    def shape(self):
        return () if self.var is None else tuple(self.var.shape)

    @property
    def dtype(self):
        return None if self.var is None else np.dtype(self.var.dtype)

    def read_bytes(self, offset, nbytes):
        n = self.dtype.itemsize
        return self.var[offset // n:(offset + nbytes) // n]

    def read_slab(self, start, count):
        return self.var[tuple(slice(s, s + c) for s, c in zip(start, count))]


def _h5py_cache_kw(chunk_cache) -> dict:
    if chunk_cache is None:
        return {}
    nbytes, nslots, w0 = chunk_cache
    return {"rdcc_nbytes": int(nbytes), "rdcc_nslots": int(nslots), "rdcc_w0": float(w0)}


def _h5py_cache_info(dset) -> dict:
    """The chunk cache HDF5 runs for this dataset (its access property list: the file's rdcc_*
    unless the dataset was opened with its own)."""
    nslots, nbytes, w0 = dset.id.get_access_plist().get_chunk_cache()
    return {"size": int(nbytes), "nelems": int(nslots), "preemption": float(w0)}


def _netcdf_var_cache(var) -> Optional[dict]:
    """netCDF-C's chunk cache of one variable (it sizes it per variable at the open)."""
    try:
        size, nelems, preemption = var.get_var_chunk_cache()
    except (RuntimeError, AttributeError):  # netCDF-3 files have no chunk cache
        return None
    return {"size": int(size), "nelems": int(nelems), "preemption": float(preemption)}


class NetCDF4Python(_Variable):
    """netCDF4-python; the variable's chunk cache set with set_var_chunk_cache after the open."""

    api = "Variable.__getitem__"

    def open(self, path, var, chunk_cache=None):
        import netCDF4
        self.ds = netCDF4.Dataset(path, "r")
        self.var = self.ds.variables[var]
        if chunk_cache is not None:
            self.var.set_var_chunk_cache(*chunk_cache)

    def close(self):
        self.ds.close()

    def chunk_cache_info(self):
        return _netcdf_var_cache(self.var)

    def library(self):
        import netCDF4
        return (f"netCDF4-python {netCDF4.__version__} (netCDF-C {netCDF4.__netcdf4libversion__},"
                f" HDF5 {netCDF4.__hdf5libversion__})")


class H5py(_Variable):
    """h5py; the file's raw-data chunk cache (rdcc_*) set when opening."""

    api = "Dataset.__getitem__"

    def open(self, path, var, chunk_cache=None):
        import h5py
        import hdf5plugin  # noqa: F401  (registers zstd and other filters netCDF-C may have written)
        self.fh = h5py.File(path, "r", **_h5py_cache_kw(chunk_cache))
        self.var = self.fh[var]

    def close(self):
        self.fh.close()

    def chunk_cache_info(self):
        return _h5py_cache_info(self.var)

    def library(self):
        import h5py
        return f"h5py {h5py.__version__} (HDF5 {h5py.version.hdf5_version})"


class H5netcdf(_Variable):
    """h5netcdf over h5py; the chunk cache passed through to h5py.File."""

    api = "Variable.__getitem__"

    def open(self, path, var, chunk_cache=None):
        import h5netcdf
        import hdf5plugin  # noqa: F401
        self.ds = h5netcdf.File(path, "r", **_h5py_cache_kw(chunk_cache))
        self.var = self.ds.variables[var]

    def close(self):
        self.ds.close()

    def chunk_cache_info(self):
        return _h5py_cache_info(self.var._h5ds)

    def library(self):
        import h5py
        return f"h5netcdf {metadata.version('h5netcdf')} (h5py {h5py.__version__}, HDF5 {h5py.version.hdf5_version})"


class Xarray(_Variable):
    """xarray over netCDF4-python, uncached: every slice goes to the file, as an analysis script
    streaming data does. xarray has no per-variable chunk-cache option, so a chunk cache is set
    as netCDF-C's default (netCDF4.set_chunk_cache) for the open, and the default put back after."""

    api = "DataArray[slice].values"

    def open(self, path, var, chunk_cache=None):
        import netCDF4
        import xarray as xr
        before = netCDF4.get_chunk_cache()
        try:
            if chunk_cache is not None:
                netCDF4.set_chunk_cache(*chunk_cache)
            self.ds = xr.open_dataset(path, engine="netcdf4", cache=False)
            self.var = self.ds[var]
        finally:
            # netCDF-C applies the default when it opens the file; left set, it would size every file
            # this process opens later (a sized run's cache became the next default run's)
            netCDF4.set_chunk_cache(*before)
        self.path, self.name = path, var

    def read_bytes(self, offset, nbytes):
        return super().read_bytes(offset, nbytes).values

    def read_slab(self, start, count):
        return super().read_slab(start, count).values

    def close(self):
        self.ds.close()

    def chunk_cache_info(self):
        """The variable's own cache, which netCDF-C sizes per variable from the default set before
        the open (xarray's backend holds the same netCDF4 variable; it is read on a second handle)."""
        import netCDF4
        with netCDF4.Dataset(self.path, "r") as ds:
            return _netcdf_var_cache(ds.variables[self.name])

    def library(self):
        import netCDF4
        return f"xarray {metadata.version('xarray')} over netCDF4-python {netCDF4.__version__}"


def chunk_cache_of(stack: str, path, var: str, chunk_cache: ChunkCache = None) -> Optional[dict]:
    """The chunk cache `stack` reads `var` of `path` with, as the library reports it after the
    open: {"nbytes", "nslots", "w0"} (model.chunk_cache.CacheSpec.of takes it), or None where there
    is none (contiguous data still has one in HDF5; a netCDF-3 file has none). `chunk_cache` is a
    (bytes, slots, w0) the stack is asked for, as Reader.open takes it. c-netcdf is the native
    probe (the system's netCDF-C, whose defaults may differ from the wheel's): it is run on one
    value and its record says the cache it used."""
    if stack == "c-netcdf":
        from climio.measure import probes
        size = None if chunk_cache is None else int(chunk_cache[0])
        n = _rank(path, var)
        recs = probes.slab_records(str(path), var, [((0,) * n, (1,) * n)], 1, "warm", size)
        info = (recs[0]["params"].get("chunk_cache") if recs else None)
    elif stack == "xarray":
        import netCDF4   # xarray's netcdf4 engine: netCDF-C's per-variable cache under the default set
        before = netCDF4.get_chunk_cache()
        try:
            if chunk_cache is not None:
                netCDF4.set_chunk_cache(*chunk_cache)
            with netCDF4.Dataset(str(path), "r") as ds:
                info = _netcdf_var_cache(ds.variables[var])
        finally:
            netCDF4.set_chunk_cache(*before)
    else:
        reader = STACKS[stack]()
        reader.open(str(path), var, chunk_cache)
        try:
            info = reader.chunk_cache_info()
        finally:
            reader.close()
    if not info:
        return None
    return {"nbytes": int(info["size"]), "nslots": int(info["nelems"]), "w0": float(info["preemption"])}


def _rank(path, var) -> int:
    import netCDF4
    with netCDF4.Dataset(str(path), "r") as ds:
        return len(ds.variables[var].shape)


STACKS = {
    "py-file": PyFile, "numpy": NumpyFromfile, "netcdf4-python": NetCDF4Python,
    "h5py": H5py, "h5netcdf": H5netcdf, "xarray": Xarray,
}
