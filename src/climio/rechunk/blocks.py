"""The work on one block, done in a worker process (or in-process with --workers 1): read the block
from the source, and cut it into encoded target chunks (or hand it back whole).

A task carries everything it needs (picklable dataclasses, chunk addresses looked up by the
parent), so workers hold no state but open file handles.
"""

import os
import resource
from dataclasses import dataclass
from typing import Optional

import numpy as np

from . import codec
from ..model.convert import chunks_in


@dataclass(frozen=True)
class Source:
    """How to read one variable."""
    path: str
    kind: str                 # "direct" (raw chunks + codec), "h5py" (HDF5 pipeline), "netcdf4" (netCDF-3 etc.),
                              # "zarr" (a Zarr array, through zarr-python)
    var: str                  # HDF5 dataset path, netCDF variable path for "netcdf4", array path for "zarr"
    dtype: str
    shape: tuple
    chunks: Optional[tuple]
    filters: tuple = ()
    fill: object = 0          # value of chunks never written (HDF5 fill value)
    cache_bytes: int = 1 << 20
    extent: Optional[tuple] = None   # the HDF5 dataset's shape when shorter than the netCDF shape: a
                                     # variable may have fewer records than its unlimited dimension,
                                     # and netCDF reads the missing ones as the fill value


@dataclass(frozen=True)
class Sink:
    """What to hand back: encoded target chunks ("chunks") or the block itself ("array"); or, for
    "zarr", nothing: the worker writes the block into the Zarr array `var` of the store `path`."""
    kind: str
    chunks: Optional[tuple] = None
    shuffle: bool = False
    level: int = 0
    path: str = ""
    var: str = ""


@dataclass(frozen=True)
class Task:
    source: Source
    sink: Sink
    start: tuple
    count: tuple
    entries: tuple = ()       # direct sources: (chunk offset in elements, file offset, size, filter mask)


@dataclass
class Result:
    start: tuple
    count: tuple
    payload: object           # list of (chunk offset, bytes) or an ndarray
    nbytes: int               # uncompressed bytes of the block
    bytes_read: int
    chunks_decoded: int
    maxrss: int               # this process's peak RSS so far, bytes
    pid: int


_handles = {}


def _open(kind: str, path: str):
    key = (kind, path)
    if key not in _handles:
        if kind == "fd":
            _handles[key] = os.open(path, os.O_RDONLY)
        elif kind == "h5py":
            import h5py
            _handles[key] = h5py.File(path, "r")
        elif kind in ("zarr", "zarr+"):
            _handles[key] = _zarr_array(*path, mode="r" if kind == "zarr" else "r+")
        else:
            import netCDF4
            ds = netCDF4.Dataset(path, "r")
            ds.set_auto_maskandscale(False)
            _handles[key] = ds
    return _handles[key]


def _zarr_array(store: str, var: str, mode: str):
    import warnings

    import zarr
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")   # numcodecs codecs "not in the v3 specification"
        return zarr.open_array(store, path=var, mode=mode)


def close_handles() -> None:
    """Close every file a process opened (the intermediate file must be reopened after it is written)."""
    for (kind, _), h in list(_handles.items()):
        try:
            if kind == "fd":
                os.close(h)
            elif hasattr(h, "close"):
                h.close()
        except Exception:
            pass
    _handles.clear()


def _h5_dataset(src: Source):
    """The dataset with a chunk cache of the planned size (an HDF5 default of 1 MiB would evict
    partly read chunks of larger blocks)."""
    import h5py
    f = _open("h5py", src.path)
    dapl = h5py.h5p.create(h5py.h5p.DATASET_ACCESS)
    nchunks = max(1, src.cache_bytes // max(1, int(np.prod(src.chunks or (1,))) * np.dtype(src.dtype).itemsize))
    dapl.set_chunk_cache(_prime_above(nchunks * 10), int(src.cache_bytes), 1.0)
    return h5py.Dataset(h5py.h5d.open(f.id, src.var.encode(), dapl))


def _prime_above(n: int) -> int:
    n = max(n, 2)
    while any(n % d == 0 for d in range(2, int(n ** 0.5) + 1)):
        n += 1
    return n


def _read_direct(task: Task, out: np.ndarray):
    src = task.source
    fd = _open("fd", src.path)
    dt = np.dtype(src.dtype)
    chunk_bytes = int(np.prod(src.chunks)) * dt.itemsize
    nread = 0
    for offset, addr, size, mask in task.entries:
        raw = os.pread(fd, size, addr)
        if len(raw) != size:
            raise OSError(f"short read of a chunk in {src.path}")
        nread += size
        chunk = np.frombuffer(codec.decode(raw, src.filters, mask, chunk_bytes, dt.itemsize), dt).reshape(src.chunks)
        dst, sel = _overlap(task.start, task.count, offset, src.chunks, src.extent)
        out[dst] = chunk[sel]
    return nread, len(task.entries)


def _overlap(start, count, origin, chunks, extent=None):
    """Slices of the block and of the chunk where they intersect (within `extent`, if given)."""
    dst, sel = [], []
    for i, (s, n, o, c) in enumerate(zip(start, count, origin, chunks)):
        lo, hi = max(s, o), min(s + n, o + c, extent[i] if extent else s + n)
        hi = max(lo, hi)
        dst.append(slice(lo - s, hi - s))
        sel.append(slice(lo - o, hi - o))
    return tuple(dst), tuple(sel)


def read_block(task: Task) -> tuple:
    """(block array, bytes read from the file, chunks decoded)."""
    src = task.source
    sel = tuple(slice(s, s + n) for s, n in zip(task.start, task.count))
    if src.kind == "direct":
        out = np.full(task.count, src.fill, dtype=src.dtype)  # chunks never written hold the fill value
        nread, ndec = _read_direct(task, out)
        return out, nread, ndec
    if src.kind == "h5py":
        out = np.full(task.count, src.fill, dtype=src.dtype) if src.extent else np.empty(task.count, src.dtype)
        inside, part = _overlap(task.start, task.count, task.start, task.count, src.extent)
        if all(p.stop > p.start for p in part):
            _h5_dataset(src).read_direct(out, source_sel=tuple(slice(s + p.start, s + p.stop)
                                                               for s, p in zip(task.start, part)), dest_sel=inside)
        return out, out.nbytes, 0
    if src.kind == "zarr":
        out = np.asarray(_open("zarr", (src.path, src.var))[sel or ...], dtype=src.dtype)
        return out, out.nbytes, sum(1 for _ in chunks_in(task.start, task.count, src.chunks))
    var = _open("netcdf4", src.path)[src.var]
    out = np.asarray(var[sel] if sel else var[...], dtype=src.dtype)
    return out, out.nbytes, 0


def encode_block(block: np.ndarray, start, sink: Sink) -> list:
    """Cut a block (aligned to whole target chunks) into encoded chunks, in C order; edge chunks are
    padded to the full chunk shape, as HDF5 stores them."""
    out = []
    count = block.shape
    for idx in chunks_in(start, count, sink.chunks):
        origin = tuple(i * c for i, c in zip(idx, sink.chunks))
        dst, sel = _overlap(start, count, origin, sink.chunks)
        piece = block[dst]
        if piece.shape != tuple(sink.chunks):
            full = np.zeros(sink.chunks, dtype=block.dtype)
            full[tuple(slice(0, n) for n in piece.shape)] = piece
            piece = full
        out.append((origin, codec.encode(piece, sink.shuffle, sink.level)))
    return out


def run_task(task: Task) -> Result:
    block, nread, ndec = read_block(task)
    if task.sink.kind == "chunks":
        payload = encode_block(block, task.start, task.sink)
        del block
    elif task.sink.kind == "zarr":
        sel = tuple(slice(s, s + n) for s, n in zip(task.start, task.count))
        _open("zarr+", (task.sink.path, task.sink.var))[sel or ...] = block
        payload = None
        del block
    else:
        payload = block
    return Result(task.start, task.count, payload, int(np.prod(task.count)) * np.dtype(task.source.dtype).itemsize,
                  nread, ndec,
                  resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024, os.getpid())


def init_worker() -> None:
    """Workers leave SIGINT to the parent, which stops the pool and cleans up."""
    import signal
    signal.signal(signal.SIGINT, signal.SIG_IGN)
