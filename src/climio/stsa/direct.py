"""A contiguous netCDF-4 variable read straight into a task's block through h5py, with HDF5's
data-sieve buffer sized for where the bytes are.

Why not netCDF-C: a latitude task of a contiguous (time, lat, lon) variable wants small pieces
spread over the whole variable (a Wheeler-Kiladis task: two runs of two rows, 2 x 2.3 KB in every
73.7 KB time step). Through netCDF-C each run is one call, and every piece fills HDF5's 64 KiB sieve
buffer: each task copies ~2x the variable out of the page cache. netCDF-C has no call that sizes
that buffer (``H5Pset_sieve_buf_size`` sits on a file-access property list netCDF-C builds itself);
h5py opens the same file with one we build. One read per task selects the union of its runs, so
HDF5 walks the file once, in order, and the buffer is sized by where the bytes are:

* in the page cache (mincore: >= 90 % of the variable's pages resident): no sieve, each piece is
  one ``pread`` into the task's array;
* on storage: a 4 MiB sieve, so the first task sweeps the variable in 4 MiB sequential reads (a
  piece-per-``pread`` walk over cold pages is a random read: the kernel's readahead does not
  follow it, and ``POSIX_FADV_WILLNEED`` is capped at ``read_ahead_kb``).

Measured on a 2920 x 64 x 144 float64 variable, 16 tasks in one process (this VM): netCDF-C 1.56 s
wall / 1.27 s CPU cold and 0.80 s warm; this reader 0.56-0.59 s / 0.38-0.43 s cold and 0.27 s warm
(of which 16 mincore scans ~0.09 s). Chunked variables stay with netCDF-C, whose chunk cache the
``runs`` plan sizes (:func:`climio.stsa.tasks.tune_chunk_cache`).

:func:`plan` only accepts what it can prove equal: a variable xarray opened with the netCDF4
engine, undecoded (no mask or scale between the file and the array), indexed by integers, unit-step
slices or ascending runs of indices, in the file's dimension order. Anything else returns None and
the task reads through xarray.
"""

from __future__ import annotations

import functools
import os
from dataclasses import dataclass

import numpy as np

from climio.machine import cache

READER_XARRAY = "xarray"
RESIDENT_ENOUGH = 0.9              # of the variable's pages cached: read piece by piece
SWEEP_SIEVE_BYTES = 4 << 20        # otherwise: sieve reads of this size sweep the file in order
_HDF5_MODELS = ("NETCDF4", "NETCDF4_CLASSIC")


@dataclass(frozen=True)
class DirectRead:
    """Where a lazily indexed part lives: the file, the HDF5 path of the variable, its shape, and
    the selection (ints and unit-step slices, in the file's dimension order)."""

    path: str
    name: str
    shape: tuple
    key: tuple

    def hyperslab(self):
        """(start, count) of the selection, ints counting 1."""
        start = tuple(k if isinstance(k, int) else k.start for k in self.key)
        count = tuple(1 if isinstance(k, int) else k.stop - k.start for k in self.key)
        return start, count


def _as_slice(entry, size):
    """An OuterIndexer entry -> int or unit-step slice, or None when it is neither."""
    if isinstance(entry, (int, np.integer)):
        return int(entry)
    if isinstance(entry, slice):
        start, stop, step = entry.indices(size)
        return slice(start, stop) if step == 1 and stop > start else None
    a = np.asarray(entry)
    if a.ndim == 1 and a.size and a.dtype.kind in "iu" and np.all(np.diff(a) == 1) and a[0] >= 0:
        return slice(int(a[0]), int(a[-1]) + 1)
    return None


def plan(part):
    """The :class:`DirectRead` of an xarray DataArray ``part``, or None (see the module docstring)."""
    try:
        from xarray.backends.netCDF4_ import NetCDF4ArrayWrapper
        from xarray.core.indexing import CopyOnWriteArray, LazilyIndexedArray, MemoryCachedArray
    except ImportError:
        return None
    d = getattr(part.variable, "_data", None)
    while isinstance(d, (MemoryCachedArray, CopyOnWriteArray)):
        d = d.array
    if type(d) is not LazilyIndexedArray or not isinstance(d.array, NetCDF4ArrayWrapper):
        return None
    wrapper = d.array
    with wrapper.datastore.lock:                 # netCDF-C is not thread-safe
        var = wrapper.get_array(needs_lock=False)
        group = var.group()
        if group.data_model not in _HDF5_MODELS or var.chunking() != "contiguous" or var.dtype.kind not in "fiu":
            return None
        path, dims, shape = group.filepath(), tuple(var.dimensions), tuple(int(n) for n in var.shape)
        name = f"{group.path.rstrip('/')}/{var.name}"
    key, kept = [], []
    for entry, dim, size in zip(d.key.tuple, dims, shape):
        s = _as_slice(entry, size)
        if s is None:
            return None
        key.append(s)
        if isinstance(s, slice):
            kept.append((dim, s.stop - s.start))
    if len(key) != len(dims) or tuple(kept) != tuple(zip(part.dims, part.shape)):
        return None
    return DirectRead(path, name, shape, tuple(key))


@functools.lru_cache(maxsize=64)
def _extent(path, name, mtime_ns, size):
    """(shape, file offset, bytes) of a contiguous dataset, read once per file version and process
    (the sieve size must be chosen before the file is opened for reading, so this is a second open)."""
    import h5py
    with h5py.File(path, "r") as f:
        ds = f[name]
        return tuple(ds.shape), ds.id.get_offset(), ds.id.get_storage_size()


def _open(path, name, shape):
    """(h5py File, Dataset, reader text) for a plan's variable, the sieve sized for where its
    bytes are."""
    import h5py
    st = os.stat(path)
    got, offset, length = _extent(path, name, st.st_mtime_ns, st.st_size)
    if got != tuple(shape):
        raise ValueError(f"{name}: shape {got} in HDF5, {tuple(shape)} in netCDF")
    cached = offset is not None and cache.resident_fraction(path, offset, length) >= RESIDENT_ENOUGH
    sieve = 0 if cached else SWEEP_SIEVE_BYTES
    fapl = h5py.h5p.create(h5py.h5p.FILE_ACCESS)
    fapl.set_sieve_buf_size(sieve)
    f = h5py.File(h5py.h5f.open(os.fsencode(path), h5py.h5f.ACC_RDONLY, fapl=fapl))
    text = "h5py, no sieve (cached)" if cached else f"h5py, {sieve >> 20} MiB sieve (storage)"
    return f, f[name], text


def read_union(plans, out) -> str:
    """Read parts that differ only along one axis, ascending and disjoint, into ``out`` (their
    kept dimensions, the parts stacked along that axis) with one HDF5 read; the reader used."""
    import h5py
    first = plans[0]
    f, ds, text = _open(first.path, first.name, first.shape)
    with f:
        space = ds.id.get_space()
        for i, pl in enumerate(plans):
            start, count = pl.hyperslab()
            space.select_hyperslab(start, count, op=h5py.h5s.SELECT_SET if i == 0 else h5py.h5s.SELECT_OR)
        if space.get_select_npoints() != out.size:
            raise ValueError(f"{first.name}: {space.get_select_npoints()} points selected for {out.size}")
        # the union is walked in file order, which is out's order: the parts are ascending and
        # stacked along their one differing axis
        ds.id.read(h5py.h5s.create_simple(out.shape), space, out)
    return text


def read_into(plan_, out) -> str:
    """Read one part into ``out`` (its shape), converting to ``out``'s dtype; the reader used."""
    f, ds, text = _open(plan_.path, plan_.name, plan_.shape)
    with f:
        ds.read_direct(out, source_sel=plan_.key)
    return text


def stackable(plans) -> bool:
    """Whether :func:`read_union` can read ``plans`` at once: one variable, keys equal but along
    one axis, where they are ascending and disjoint."""
    first = plans[0]
    if any((p.path, p.name) != (first.path, first.name) for p in plans):
        return False
    diff = {i for p in plans for i, (a, b) in enumerate(zip(p.key, first.key)) if a != b}
    if len(diff) > 1:
        return False
    if not diff:
        return len(plans) == 1
    (axis,) = diff
    ks = [p.key[axis] for p in plans]
    return all(isinstance(k, slice) for k in ks) and all(a.stop <= b.start for a, b in zip(ks, ks[1:]))
