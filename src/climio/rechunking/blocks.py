"""The work on one block, done in a worker process (or in-process with --workers 1): read the block
from the source, and cut it into encoded target chunks (or hand it back whole).

A task carries everything it needs (picklable dataclasses, chunk addresses looked up by the
parent), so workers hold no state but open file handles, one reusable block buffer and where to
spill encoded chunks. Copies are kept few: a decoded chunk is unshuffled straight into the block,
a target chunk is gathered and shuffled in one pass, encoded chunks go to the parent through a
shared-memory file (Spilled), and a two-pass intermediate is read and written with preadv/pwritev
straight between the file and the block.
"""

import math
import mmap
import os
import resource
import threading
from contextlib import contextmanager, nullcontext
from dataclasses import dataclass
from typing import Optional

import deflate
import numpy as np

from . import codec
from climio.base.errors import DataError
from climio.dataset.layout import chunks_in   # not via climio.model: a worker imports this module and little else


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
    offset: int = 0           # "raw": where the contiguous C-order array starts in the file
    tile: Optional[tuple] = None     # "raw": the array laid out in tiles of this shape (rechunking.tiles)
    extent: Optional[tuple] = None   # the HDF5 dataset's shape when shorter than the netCDF shape: a
                                     # variable may have fewer records than its unlimited dimension,
                                     # and netCDF reads the missing ones as the fill value
    lite: object = None       # "zarr": its zarr_lite.LiteSpec (chunks read with numcodecs, zarr not imported)


@dataclass(frozen=True)
class Sink:
    """What to hand back: encoded target chunks ("chunks") or the block itself ("array"); or
    nothing, the worker writing the block itself: "zarr" into the Zarr array `var` of the store
    `path`, "raw" into a contiguous C-order array of shape `chunks` at byte `offset` of file `path`
    (a two-pass plan's intermediate)."""
    kind: str
    chunks: Optional[tuple] = None
    shuffle: bool = False
    level: int = 0
    path: str = ""
    var: str = ""
    offset: int = 0
    tile: Optional[tuple] = None   # "raw": the array laid out in tiles of this shape (rechunking.tiles)
    remote: str = ""          # "zarr": s3://BUCKET/STORE, the chunks go there as objects (stores.chunks)
    meta: tuple = ()          # with `remote`: ((key, bytes), ...) the array's metadata documents, which
                              # are not in the bucket until the store is complete (written last)
    lite: object = None       # "zarr": its zarr_lite.LiteSpec (chunks written with numcodecs, zarr not imported)


@dataclass(frozen=True)
class Task:
    source: Source
    sink: Sink
    start: tuple
    count: tuple
    entries: tuple = ()       # direct sources: (chunk offset in elements, file offset, size, filter mask)
    spill: str = ""           # the shared-memory file (a slot the parent reuses) for its encoded chunks
    endpoint: object = None   # the stores.endpoint.Endpoint of an s3:// source or sink (--endpoint-url and the
                              # credentials): a Dask worker started without the AWS_* variables reaches the store
    refs: tuple = ()          # a netCDF-4 object's source: ((key, reference), ...) of the metadata and this
                              # block's chunks (rechunk.remote_nc), so that no worker reads the file's metadata


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
    retries: int = 0          # object-store requests retried during the task (stores.retry)


class _PerThread:
    """Open handles and the reusable block buffer of one thread: a Dask worker may run tasks in
    several threads of one process."""
    def __init__(self):
        self.handles = {}
        self.scratch = {}
        self.endpoint = None   # the running task's (Task.endpoint)
        self.task_refs = ()    # the running task's (Task.refs)


_local = threading.local()
_threads = {}   # thread id -> its _PerThread, so that close_all_handles reaches every thread's


def _state() -> _PerThread:
    st = getattr(_local, "state", None)
    if st is None:
        st = _local.state = _PerThread()
        _threads[threading.get_ident()] = st
    return st


def _open(kind: str, path: str):
    key = (kind, path)
    _handles = _state().handles
    if key not in _handles:
        if kind == "fd":
            _handles[key] = os.open(path, os.O_RDONLY)
        elif kind == "fdw":
            _handles[key] = os.open(path, os.O_RDWR)
        elif kind == "h5py":
            import h5py
            _handles[key] = h5py.File(path, "r")
        elif kind in ("zarr", "zarr+"):
            _handles[key] = _zarr_array(*path, mode="r" if kind == "zarr" else "r+")
        elif kind in ("zarr-chunks", "zarr+chunks"):   # a zarr_chunks.ChunkIO, or None: through zarr-python
            from .zarr_chunks import ChunkIO
            arr = _open("zarr" if kind == "zarr-chunks" else "zarr+", path)
            _handles[key] = ChunkIO.of(arr, path[0], _objects_of(path[0]))
        elif kind == "zarr-remote":   # (s3 url, array path, metadata): an output array, chunks in the bucket
            from .zarr_chunks import ChunkIO
            arr = _memory_array(path[2], path[1])
            _handles[key] = (arr, ChunkIO.of(arr, "", _objects_of(path[0])))
        else:
            import netCDF4
            ds = netCDF4.Dataset(path, "r")
            ds.set_auto_maskandscale(False)
            _handles[key] = ds
    return _handles[key]


def _lite_io(spec):
    """This thread's zarr_lite.LiteIO of an array (one per array directory)."""
    key = ("lite", spec.root)
    handles = _state().handles
    if key not in handles:
        from .zarr_lite import LiteIO
        handles[key] = LiteIO(spec)
    return handles[key]


def _objects_of(store: str):
    if not str(store).startswith("s3://"):
        return None
    from .remote_nc import RefChunks, is_netcdf_object
    if is_netcdf_object(store):   # a netCDF-4 object: its chunks are byte ranges (rechunk.remote_nc)
        return _refs_of(store)
    from ..stores.chunks import ObjectChunks
    return ObjectChunks.of(store, _state().endpoint)


def _refs_of(store: str):
    """The RefChunks of a netCDF-4 object: this thread's, holding the running task's references,
    or (no task: the command itself) the process's, built from the file's metadata."""
    from .remote_nc import RefChunks
    st = _state()
    return RefChunks.of(store, st.endpoint, refs=st.task_refs or None)


def zarr_store(store: str, read_only: bool = True):
    """What zarr opens: the directory, or for s3://BUCKET/STORE an ObjectStore on it (streamed:
    requests time out and are retried by stores.retry, not by obstore)."""
    if not str(store).startswith("s3://"):
        return store
    from zarr.storage import ObjectStore

    from ..stores.chunks import ObjectChunks, streamed_store
    from .remote_nc import is_netcdf_object, ref_store
    if is_netcdf_object(store):
        return ref_store(_refs_of(store))
    objs = ObjectChunks.of(store, _state().endpoint)
    return ObjectStore(streamed_store(objs.endpoint, objs.url.bucket, objs.prefix or None), read_only=read_only)


def _zarr_array(store: str, var: str, mode: str):
    import warnings

    import zarr
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")   # numcodecs codecs "not in the v3 specification"
        return zarr.open_array(zarr_store(store, mode == "r"), path=var, mode=mode)


def _memory_array(meta: tuple, var: str):
    """The array defined by its metadata documents, in memory: its codecs encode the chunks, and
    zarr-python writes what ChunkIO does not cover (shards) here, to be moved to the bucket."""
    import warnings

    import zarr
    from zarr.core.buffer import cpu
    from zarr.storage import MemoryStore
    store = MemoryStore({k: cpu.Buffer.from_bytes(v) for k, v in meta})
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return zarr.open_array(store, path=var, mode="r+")


def close_all_handles() -> None:
    """close_handles for every thread of this process (a Dask worker's, between runs)."""
    for state in list(_threads.values()):
        close_handles(state)


def close_handles(state: _PerThread = None) -> None:
    """Close every file a process opened (the intermediate file must be reopened after it is written)."""
    _handles = (state or _state()).handles
    for (kind, _), h in list(_handles.items()):
        try:
            if kind in ("fd", "fdw"):
                os.close(h)
            elif kind == "zarr-remote":
                h[1] and h[1].flush()
            elif h is not None and hasattr(h, "close"):
                h.close()
        except Exception:
            pass
    _handles.clear()


def _h5_dataset(src: Source):
    """The dataset with a chunk cache of the planned size (an HDF5 default of 1 MiB would evict
    partly read chunks of larger blocks)."""
    import h5py
    if src.filters:   # a pipeline we do not decode: HDF5's, with hdf5plugin's filters, before any dataset opens
        from climio.dataset.h5filters import use_hdf5plugin_blosc
        use_hdf5plugin_blosc()
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
    out_bytes = out.view(np.uint8).reshape(out.shape + (dt.itemsize,))   # out is a fresh C-order block
    for offset, addr, size, mask in task.entries:
        data, planes = _chunk(fd, src, addr, size, mask, chunk_bytes, dt.itemsize)
        nread += size
        dst, sel = _overlap(task.start, task.count, offset, src.chunks, src.extent)
        if planes:   # unshuffled straight into the block: no decoded chunk in between
            p = np.frombuffer(data, np.uint8).reshape((dt.itemsize,) + tuple(src.chunks))
            codec.unshuffle_into(p[(slice(None),) + sel], out_bytes[dst])
        else:
            out[dst] = np.frombuffer(data, dt).reshape(src.chunks)[sel]
    return nread, len(task.entries)


def _chunk(fd, src, addr: int, size: int, mask: int, chunk_bytes: int, itemsize: int):
    """One stored chunk, read and decoded; a chunk index or bytes that a damaged file altered
    (a size beyond the file, a deflate stream that does not inflate to the chunk's size) is one
    DataError line, never an allocation of what the index claims."""
    where = f"{src.path}: corrupt chunk at byte {addr}"
    if size < 0 or addr < 0 or addr + size > os.fstat(fd).st_size:
        raise DataError(f"{where} (its {size} bytes run past the end of the file)")
    raw = os.pread(fd, size, addr)
    if len(raw) != size:
        raise DataError(f"{where} (short read)")
    try:
        return codec.decode_to_planes(raw, src.filters, mask, chunk_bytes, itemsize)
    except (ValueError, OverflowError, MemoryError, deflate.DeflateError) as exc:
        raise DataError(f"{where} ({str(exc)[:120] or type(exc).__name__})") from None


PREFETCH_GAP = 1 << 20   # chunks closer than this are asked for in one range (the kernel reads the gap too)


def prefetch(task: Task) -> None:
    """Ask the kernel to start reading the file ranges of a task's chunks now (posix_fadvise
    WILLNEED returns once the reads are queued), so that they arrive while earlier blocks are
    decoded and encoded: the executor calls this as it hands a task out, and the worker's preads
    then find the chunks in the page cache instead of waiting for the disk between codec calls."""
    if task.source.kind != "direct" or not task.entries or not hasattr(os, "posix_fadvise"):
        return
    fd = _open("fd", task.source.path)
    for lo, hi in _ranges(sorted((addr, addr + size) for _, addr, size, _ in task.entries), PREFETCH_GAP):
        os.posix_fadvise(fd, lo, hi - lo, os.POSIX_FADV_WILLNEED)


def _ranges(spans, gap: int) -> list:
    """Sorted (start, end) spans merged where they are less than `gap` bytes apart."""
    out = []
    for lo, hi in spans:
        if out and lo - out[-1][1] < gap:
            out[-1][1] = max(out[-1][1], hi)
        else:
            out.append([lo, hi])
    return [tuple(r) for r in out]


def _read_zarr(io, task: Task, out: np.ndarray) -> tuple:
    """Fill the block from the Zarr chunks it touches (zarr_chunks.ChunkIO); chunks never written
    hold the fill value. (bytes read, chunks decoded)."""
    nread = ndec = 0
    fused = io.fused and out.dtype == io.dtype
    out_bytes = out.view(np.uint8).reshape(out.shape + (out.dtype.itemsize,)) if fused else None
    idxs = list(chunks_in(task.start, task.count, io.chunks))
    io.prefetch(idxs)
    for idx in idxs:
        origin = tuple(i * c for i, c in zip(idx, io.chunks))
        dst, sel = _overlap(task.start, task.count, origin, io.chunks)
        chunk, n = io.read(idx, planes=fused)
        if chunk is None:
            out[dst] = io.fill
        elif fused:   # unshuffled straight into the block, as _read_direct does
            codec.unshuffle_into(chunk[(slice(None),) + sel], out_bytes[dst])
        else:
            out[dst] = chunk[sel]
        nread += n
        ndec += chunk is not None
    return nread, ndec


def _write_zarr(task: Task, block: np.ndarray) -> None:
    """Write a block (whole target chunks, edge chunks clipped by the array's end) into its Zarr
    array: chunk by chunk through zarr_chunks.ChunkIO, else through zarr-python."""
    sink = task.sink
    if sink.remote:
        _write_remote(task, block)
        return
    io = _lite_io(sink.lite) if sink.lite is not None else _open("zarr+chunks", (sink.path, sink.var))
    whole = io is not None and all(s % c == 0 and (n % c == 0 or s + n == d)
                                   for s, n, c, d in zip(task.start, task.count, io.chunks, io.shape))
    if not whole:
        sel = tuple(slice(s, s + n) for s, n in zip(task.start, task.count))
        _open("zarr+", (sink.path, sink.var))[sel or ...] = block
        return
    for idx in chunks_in(task.start, task.count, io.chunks):
        origin = tuple(i * c for i, c in zip(idx, io.chunks))
        dst, _ = _overlap(task.start, task.count, origin, io.chunks)
        io.write(idx, block[dst])


def _write_remote(task: Task, block: np.ndarray) -> None:
    """A block's chunks as objects in the bucket: encoded here (ChunkIO), or by zarr-python into
    the in-memory array and moved from there (shards: a block holds whole shards, each one PUT);
    then the block's line of the resume manifest (rechunk.resume), once every chunk is stored."""
    sink = task.sink
    arr, io = _open("zarr-remote", (sink.remote, sink.var, sink.meta))
    if io is not None:
        for idx in chunks_in(task.start, task.count, io.chunks):
            origin = tuple(i * c for i, c in zip(idx, io.chunks))
            dst, _ = _overlap(task.start, task.count, origin, io.chunks)
            io.write(idx, block[dst])
        written = io.flush()
    else:
        written = _write_through_memory(arr, task, block, _objects_of(sink.remote))
    from .resume import record_block
    record_block(_objects_of(sink.remote), sink.var, task.start, written)


def _write_through_memory(arr, task: Task, block: np.ndarray, objs) -> list:
    store = arr.store
    sel = tuple(slice(s, s + n) for s, n in zip(task.start, task.count))
    arr[sel or ...] = block
    keys = [k for k in list(store._store_dict) if not k.endswith(("zarr.json", ".zarray", ".zattrs"))]
    for k in keys:
        objs.put_later(k, store._store_dict.pop(k).to_bytes())
    return objs.flush()


def _overlap(start, count, origin, chunks, extent=None):
    """Slices of the block and of the chunk where they intersect (within `extent`, if given)."""
    dst, sel = [], []
    for i, (s, n, o, c) in enumerate(zip(start, count, origin, chunks)):
        lo, hi = max(s, o), min(s + n, o + c, extent[i] if extent else s + n)
        hi = max(lo, hi)
        dst.append(slice(lo - s, hi - s))
        sel.append(slice(lo - o, hi - o))
    return tuple(dst), tuple(sel)


def _block_array(count, dtype, reuse: bool) -> np.ndarray:
    """An uninitialised C-order array for a block. With `reuse` (the block is consumed within its
    task) one buffer per process serves every block: no fresh pages to fault in and zero per block."""
    dt = np.dtype(dtype)
    n = int(np.prod(count)) * dt.itemsize
    if not reuse:
        return np.empty(count, dt)
    _scratch = _state().scratch
    if _scratch.get("buf") is None or _scratch["buf"].size < n:
        _scratch["buf"] = None
        _scratch["buf"] = np.empty(n, np.uint8)
    return _scratch["buf"][:n].view(dt).reshape(count)


def read_block(task: Task, reuse: bool = False, into: Optional[np.ndarray] = None) -> tuple:
    """(block array, bytes read from the file, chunks decoded). `reuse`: the block may live in this
    process's scratch buffer (it is consumed before the next block is read). `into`: a C-contiguous
    array of the block's shape and dtype that a direct source decodes straight into (rechunk.concat:
    a file's rows of a block spanning several files); other sources ignore it."""
    src = task.source
    sel = tuple(slice(s, s + n) for s, n in zip(task.start, task.count))
    if src.kind == "direct":
        out = into if into is not None else _block_array(task.count, src.dtype, reuse)
        touched = math.prod((s + n - 1) // c - s // c + 1 for s, n, c in zip(task.start, task.count, src.chunks))
        if src.extent is not None or len(task.entries) < touched:
            out[...] = src.fill           # chunks never written (and records beyond them) hold the fill value
        nread, ndec = _read_direct(task, out)
        return out, nread, ndec
    if src.kind == "h5py":
        out = np.full(task.count, src.fill, dtype=src.dtype) if src.extent else np.empty(task.count, src.dtype)
        inside, part = _overlap(task.start, task.count, task.start, task.count, src.extent)
        if all(p.stop > p.start for p in part):
            _h5_dataset(src).read_direct(out, source_sel=tuple(slice(s + p.start, s + p.stop)
                                                               for s, p in zip(task.start, part)), dest_sel=inside)
        return out, out.nbytes, 0
    if src.kind == "raw":
        out = _block_array(task.count, src.dtype, reuse)
        if src.tile:
            from . import tiles   # here, not at the top: it imports the cost model, which other workers never need
            tiles.read(_raw_io, os.preadv, _open("fd", src.path), src.offset, src.shape, src.tile, task.start, out)
        else:
            _raw_io(os.preadv, _open("fd", src.path), src.offset, src.shape, task.start, out)
        return out, out.nbytes, 0
    if src.kind == "zarr":
        io = _lite_io(src.lite) if src.lite is not None else _open("zarr-chunks", (src.path, src.var))
        if io is not None:
            out = _block_array(task.count, src.dtype, reuse)
            nread, ndec = _read_zarr(io, task, out)
            return out, nread, ndec
        out = np.asarray(_open("zarr", (src.path, src.var))[sel or ...], dtype=src.dtype)
        return out, out.nbytes, sum(1 for _ in chunks_in(task.start, task.count, src.chunks))
    var = _open("netcdf4", src.path)[src.var]
    out = np.asarray(var[sel] if sel else var[...], dtype=src.dtype)
    return out, out.nbytes, 0


def runs(shape, start, count, itemsize: int):
    """(byte offset in a C-order array of `shape`, byte offset in the C-order box, length) of the
    contiguous runs of the box (start, count): one per index of the axes before the last partial one."""
    k = len(shape)
    while k > 0 and count[k - 1] == shape[k - 1]:
        k -= 1
    strides = [math.prod(shape[i + 1:]) * itemsize for i in range(len(shape))]
    if k == 0:
        yield 0, 0, math.prod(shape) * itemsize
        return
    run = count[k - 1] * strides[k - 1]
    pos = 0
    for idx in np.ndindex(*count[:k - 1]):
        at = sum((s + i) * st for s, i, st in zip(start, idx, strides)) + start[k - 1] * strides[k - 1]
        yield at, pos, run
        pos += run


def _raw_io(call, fd: int, offset: int, shape, start, block: np.ndarray) -> None:
    """Read (os.preadv) or write (os.pwritev) a block straight between the file and its array."""
    view = memoryview(block.reshape(-1).view(np.uint8))
    for at, pos, n in runs(shape, start, block.shape, block.dtype.itemsize):
        done = 0
        while done < n:
            got = call(fd, [view[pos + done:pos + n]], offset + at + done)
            if got <= 0:
                raise OSError(f"short {'read' if call is os.preadv else 'write'} at byte {offset + at + done}")
            done += got


def encode_block(block: np.ndarray, start, sink: Sink) -> list:
    """[(chunk origin, encoded bytes)] of a block: encoded_chunks as a list."""
    return list(encoded_chunks(block, start, sink))


def encoded_chunks(block: np.ndarray, start, sink: Sink):
    """Cut a block (aligned to whole target chunks) into encoded chunks, in C order, one at a time;
    edge chunks are padded to the full chunk shape, as HDF5 stores them."""
    count = block.shape
    item = block.dtype.itemsize
    as_bytes = None
    if sink.shuffle and item > 1:
        block = np.ascontiguousarray(block)
        as_bytes = block.view(np.uint8).reshape(block.shape + (item,))
    for idx in chunks_in(start, count, sink.chunks):
        origin = tuple(i * c for i, c in zip(idx, sink.chunks))
        dst, sel = _overlap(start, count, origin, sink.chunks)
        if as_bytes is not None:   # gather and shuffle in one strided copy per byte plane
            planes = codec.shuffle_from(as_bytes[dst], sink.chunks)
            yield origin, codec.encode(planes, False, sink.level)
            continue
        piece = block[dst]
        if piece.shape != tuple(sink.chunks):
            full = np.zeros(sink.chunks, dtype=block.dtype)
            full[tuple(slice(0, n) for n in piece.shape)] = piece
            piece = full
        yield origin, codec.encode(piece, sink.shuffle, sink.level)


@dataclass(frozen=True)
class Spilled:
    """Encoded chunks a worker left in a file in shared memory (/dev/shm) instead of sending them
    through the pool's pipe: the parent maps the file and hands HDF5 slices of it (chunks_of), so
    the bytes are copied once, not pickled, piped and unpickled. The file is a slot the executor
    hands out again and removes at the end of the pass."""
    path: str
    pieces: tuple             # (chunk offset in elements, byte offset in the file, size)


def _spill(chunks, slot: str) -> Spilled:
    """Write encoded chunks, each as it is made, into the task's slot: a shared-memory file the
    executor hands out again, so its pages stay allocated from one block to the next (a new file
    per block allocated and freed them every time: 0.2 s against 0.1 s of system time for the
    bench's 427 MiB). Written at once, a chunk's bytes are freed before the next is encoded: the
    worker never holds a block's worth of encoded chunks."""
    pieces, pos = [], 0
    fd = os.open(slot, os.O_WRONLY | os.O_CREAT, 0o600)
    try:
        for origin, data in chunks:
            if os.pwrite(fd, data, pos) != len(data):
                raise OSError(f"short write to {slot}")
            pieces.append((origin, pos, len(data)))
            pos += len(data)
    finally:
        os.close(fd)
    return Spilled(slot, tuple(pieces))


@contextmanager
def chunks_of(payload):
    """(chunk offset, bytes-like) of a "chunks" result, whether sent whole or Spilled."""
    if not isinstance(payload, Spilled):
        yield payload
        return
    size = max((off + n for _, off, n in payload.pieces), default=0)   # a slot may hold more, from before
    # MAP_POPULATE: the pages mapped in one call, not faulted in one at a time (about 0.1 s of the
    # parent's system time for 427 MiB of encoded chunks)
    flags = mmap.MAP_SHARED | getattr(mmap, "MAP_POPULATE", 0)
    with open(payload.path, "rb") as fh, (mmap.mmap(fh.fileno(), size, flags=flags, prot=mmap.PROT_READ) if size
                                          else nullcontext(b"")) as mapped:
        view = memoryview(mapped)
        pieces = [(origin, view[off:off + n]) for origin, off, n in payload.pieces]
        try:
            yield pieces
        finally:
            for _, piece in pieces:   # the map closes only once no view of it is left
                piece.release()
            view.release()


def remove_spilled(prefix: str) -> None:
    """Remove the slots under `prefix` (the end of a pass, a stopped or failed run)."""
    import glob
    for path in glob.glob(glob.escape(prefix) + "-*"):
        try:
            os.unlink(path)
        except OSError:
            pass


def run_task(task: Task) -> Result:
    from ..stores.retry import COUNTER
    retries0 = COUNTER.n
    st = _state()
    st.endpoint, st.task_refs = task.endpoint, task.refs
    if task.refs:   # this thread's RefChunks (which open handles keep) now holds this block's references
        _refs_of(task.source.path)
    try:
        block, nread, ndec = read_block(task, reuse=task.sink.kind in ("chunks", "zarr", "raw"))
    finally:
        st.task_refs = ()   # the command's own reads (in-process tasks) use the whole file's references again
    if task.sink.kind == "chunks":
        chunks = encoded_chunks(block, task.start, task.sink)
        payload = _spill(chunks, task.spill) if task.spill else list(chunks)
        del block
    elif task.sink.kind == "raw":
        sink = task.sink
        if sink.tile:
            from . import tiles
            tiles.write(_raw_io, os.pwritev, _open("fdw", sink.path), sink.offset, sink.chunks, sink.tile, task.start,
                        block)
        else:
            _raw_io(os.pwritev, _open("fdw", sink.path), sink.offset, sink.chunks, task.start, block)
        payload = None
        del block
    elif task.sink.kind == "zarr":
        _write_zarr(task, block)
        payload = None
        del block
    else:
        payload = block
    return Result(task.start, task.count, payload, int(np.prod(task.count)) * np.dtype(task.source.dtype).itemsize,
                  nread, ndec,
                  peak_rss(), os.getpid(), COUNTER.n - retries0)


def peak_rss() -> int:
    """This process's peak RSS, bytes: VmHWM, the high-water mark of its own memory. Not
    ru_maxrss: a spawned worker's starts at the RSS of the parent it was forked from before its
    exec (Linux keeps the larger), so it said 85 MiB for a worker that never held 40."""
    try:
        with open("/proc/self/status", "rb") as fh:
            for line in fh:
                if line.startswith(b"VmHWM:"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024


def init_worker() -> None:
    """Workers leave SIGINT to the parent, which stops the pool and cleans up, and keep their heap."""
    import signal
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    _keep_heap()


M_TRIM_THRESHOLD, M_MMAP_THRESHOLD = -1, -3   # glibc's mallopt parameters (malloc.h)
HEAP_KEEP = 64 << 20


def _keep_heap() -> None:
    """Keep freed buffers of up to HEAP_KEEP in this worker's heap instead of handing them back to
    the kernel. The codec's buffers (a chunk's decoded bytes, an encoded chunk: the codec's bound,
    shrunk to size) sit around glibc's dynamic mmap threshold, and in a worker most of them became
    fresh mappings faulted in page by page: 11,800 page faults per 80 MiB block on the bench's
    default case, 10 with a fixed threshold (tests/test_rechunk_startup.py measures both). Not
    glibc: nothing changes."""
    import ctypes
    try:
        libc = ctypes.CDLL(None)
        mallopt = libc.mallopt
    except (OSError, AttributeError):
        return
    mallopt.argtypes, mallopt.restype = (ctypes.c_int, ctypes.c_int), ctypes.c_int
    mallopt(M_MMAP_THRESHOLD, HEAP_KEEP // 2)
    mallopt(M_TRIM_THRESHOLD, HEAP_KEEP)
