"""Whole chunks of one Zarr array in a local store (format 2, or 3 without sharding), encoded and
written, or read and decoded, in the calling thread: the array's own codec objects (zarr-python's)
applied one after the other, and each chunk a file at the array's chunk key, where zarr-python's
LocalStore keeps it. zarr-python's own setitem and getitem go through an event loop and a thread
hop per codec call: on the bench's 350 KiB chunks its write took about 4x the CPU of the codecs
themselves (bench/rechunk_zarr_vs_peers.py). What zarr-python would store is stored: the same
codec calls, edge chunks padded with the fill value, and no chunk written that holds only the fill
value (zarr's default write_empty_chunks=False); a missing chunk reads as the fill value.

ChunkIO.of(array, store directory) is None for what this does not cover (sharding, a codec
without a synchronous call): the caller then reads or writes through zarr-python. With `objects`
(a stores.chunks.ObjectChunks) the chunks are objects in a bucket instead of files: read in one
concurrent batch per block (prefetch), written in the background and waited for by flush.
"""

import os
import sys

import numpy as np

from climio.base.errors import DataError

from .codec import shuffle_from


class ChunkIO:
    """Encode/write and read/decode whole chunks of one array (see the module docstring)."""

    def __init__(self, arr, root: str, pipeline, spec, objects=None):
        self.objects = objects
        self._fetched = {}
        if objects is not None:
            self.root = arr.path or ""
        else:
            self.root = os.path.join(root, arr.path) if arr.path else root
        self.meta = arr.metadata
        self.chunks = tuple(int(c) for c in arr.chunks)
        self.shape = tuple(int(n) for n in arr.shape)
        self.dtype = np.dtype(spec.dtype.to_native_dtype())
        self.fill = _fill_value(spec)
        self.write_empty = bool(spec.config.write_empty_chunks)
        self.proto = spec.prototype
        # (codec, the spec it sees), as zarr's BatchedCodecPipeline resolves them
        self.aa, s = [], spec
        for c in pipeline.array_array_codecs:
            self.aa.append((c, s))
            s = c.resolve_metadata(s)
        self.ab = (pipeline.array_bytes_codec, s)
        s = pipeline.array_bytes_codec.resolve_metadata(s)
        self.bb = []
        for c in pipeline.bytes_bytes_codecs:
            self.bb.append((c, s))
            s = c.resolve_metadata(s)
        self.fused = _shuffles_first(self)
        self._dirs = set()

    @classmethod
    def of(cls, arr, root: str, objects=None):
        """A ChunkIO for `arr` (opened from the local store directory `root`, or with its chunks
        in `objects`), or None."""
        from zarr.core.buffer import default_buffer_prototype
        pipeline = getattr(arr._async_array, "codec_pipeline", None)
        if pipeline is None or not all(hasattr(pipeline, a) for a in
                                       ("array_array_codecs", "array_bytes_codec", "bytes_bytes_codecs")):
            return None
        if arr.ndim == 0 or (objects is None and not os.path.isdir(root)) or getattr(arr, "shards", None):
            return None
        if not (all(_sync(c) for c in pipeline.array_array_codecs) and _sync_ab(pipeline.array_bytes_codec)
                and all(_sync(c) or _numcodec(c) for c in pipeline.bytes_bytes_codecs)):
            return None
        spec = arr.metadata.get_chunk_spec((0,) * arr.ndim, arr._async_array.config, default_buffer_prototype())
        if np.dtype(spec.dtype.to_native_dtype()).kind not in "biuf":
            return None
        return cls(arr, root, pipeline, spec, objects)

    # ------------------------------------------------------------ keys
    def path(self, idx) -> str:
        key = self.meta.encode_chunk_key(tuple(idx))
        if self.objects is not None:
            return f"{self.root}/{key}" if self.root else key
        return os.path.join(self.root, key)

    # ------------------------------------------------------------ write
    def encode(self, chunk: np.ndarray):
        """The stored bytes of one whole chunk (a buffer), or None if zarr would not store it."""
        nd = self.proto.nd_buffer.from_ndarray_like(chunk)
        if not self.write_empty and self._empty(chunk) and nd.all_equal(self.fill):
            return None
        if self.fused:   # values in native order, then a byte shuffle: both in one pass (codec.shuffle_from)
            planes = shuffle_from(chunk[..., None].view(np.uint8), self.chunks).reshape(-1)
            if _is_v2(self.ab[0]):
                comp = self.ab[0].compressor
                return comp.encode(planes) if comp else planes
            buf, rest = self.proto.buffer.from_array_like(planes), self.bb[1:]
        else:
            for c, spec in self.aa:
                nd = c._encode_sync(nd, spec)
            ab, spec = self.ab
            buf = _v2_encode(ab, nd, spec) if _is_v2(ab) else ab._encode_sync(nd, spec)
            rest = self.bb
        for c, spec in rest:
            buf = c._encode_sync(buf, spec) if _sync(c) else c._encode(buf, spec.prototype)
        return buf.as_buffer_like()

    def _empty(self, chunk: np.ndarray) -> bool:
        """False when the chunk's first value already differs from the fill value (by zarr's own
        comparison, on one value): most chunks are then not compared whole."""
        first = chunk[(slice(0, 1),) * chunk.ndim]
        return bool(self.proto.nd_buffer.from_ndarray_like(first).all_equal(self.fill))

    def write(self, idx, region: np.ndarray) -> int:
        """Store chunk `idx` whose values inside the array are `region` (any strides; an edge
        chunk's region is shorter than the chunk and is padded with the fill value). Bytes stored."""
        region = np.asarray(region, dtype=self.dtype)
        if region.shape != self.chunks:
            full = np.full(self.chunks, self.fill, dtype=self.dtype)
            full[tuple(slice(0, n) for n in region.shape)] = region
            region = full
        data = self.encode(region)
        if data is None:
            return 0
        path = self.path(idx)
        if self.objects is not None:
            self.objects.put_later(path, data)
            return len(data)
        d = os.path.dirname(path)
        if d not in self._dirs:
            _make_dir(d)
            self._dirs.add(d)
        return _write_file(path, data)

    def flush(self) -> list:
        """Wait for the chunk objects written so far: [(key, size, md5)] ([] for files)."""
        return self.objects.flush() if self.objects is not None else []

    # ------------------------------------------------------------ read
    def prefetch(self, idxs) -> None:
        """Start reading these chunks' files (posix_fadvise WILLNEED): a block's chunk files then
        come from disk together instead of one request at a time (a cold store of 3,650 files of
        120 KiB: 0.9 s instead of 1.6 s)."""
        if self.objects is not None:   # a block's chunk objects requested together; read() decodes each as it
            self._fetched = self.objects.fetch([self.path(i) for i in idxs])   # arrives, the rest in flight
            return
        from climio.machine.cache import will_need
        for idx in idxs:
            will_need(self.path(idx))

    def read(self, idx, planes: bool = False):
        """(decoded chunk [chunk shape] or None for a chunk never written, bytes read). planes (for a
        fused pipeline): stop before the unshuffle, [itemsize, *chunk shape] byte planes, so that
        the caller unshuffles while copying them to where the values go (codec.unshuffle_into)."""
        if self.objects is not None:
            key = self.path(idx)
            raw = self._fetched.pop(key).result() if key in self._fetched else self.objects.get(key)
            if raw is None:
                return None, 0
            raw = bytes(raw)
        else:
            try:
                with open(self.path(idx), "rb") as fh:
                    raw = fh.read()
            except FileNotFoundError:
                return None, 0
        if self._blosc_outer() and not _whole_blosc_frame(raw):
            raise DataError(f"{self.path(idx)}: corrupt chunk (its Blosc frame claims another length than "
                            f"its {len(raw)} bytes)")
        try:
            if planes and self.fused:
                return self._planes(raw), len(raw)
            return self._checked(self.decode(raw)), len(raw)
        except DataError:
            raise
        except Exception as exc:  # noqa: BLE001  (any codec's complaint about damaged bytes)
            msg = str(exc).splitlines()[0][:160] if str(exc) else type(exc).__name__
            raise DataError(f"{self.path(idx)}: corrupt chunk ({type(exc).__name__}: {msg})") from None

    def _blosc_outer(self) -> bool:
        """Whether the stored bytes are one Blosc frame (v2 compressor, or v3's last bytes codec)."""
        ab = self.ab[0]
        c = ab.compressor if _is_v2(ab) else (self.bb[-1][0] if self.bb else None)
        c = getattr(c, "_codec", c)
        return c is not None and "blosc" in type(c).__name__.lower()

    def _checked(self, nd) -> np.ndarray:
        """A decoded chunk of the wrong size (a codec header altered to claim another length)."""
        if getattr(nd, "shape", None) != self.chunks:
            raise DataError(f"decoded to shape {getattr(nd, 'shape', '?')}, not the chunk shape {self.chunks}")
        return nd

    def _planes(self, raw: bytes) -> np.ndarray:
        if _is_v2(self.ab[0]):
            comp = self.ab[0].compressor
            data = comp.decode(raw) if comp else raw
        else:
            buf = self.proto.buffer.from_bytes(raw)
            for c, spec in reversed(self.bb[1:]):
                buf = c._decode_sync(buf, spec) if _sync(c) else _numcodec_decode(c, buf, spec)
            data = buf.as_numpy_array()
        return np.frombuffer(data, np.uint8).reshape((self.dtype.itemsize,) + self.chunks)

    def decode(self, raw: bytes) -> np.ndarray:
        buf = self.proto.buffer.from_bytes(raw)
        for c, spec in reversed(self.bb):
            buf = c._decode_sync(buf, spec) if _sync(c) else _numcodec_decode(c, buf, spec)
        ab, spec = self.ab
        nd = _v2_decode(ab, buf, spec) if _is_v2(ab) else ab._decode_sync(buf, spec)
        for c, spec in reversed(self.aa):
            nd = c._decode_sync(nd, spec)
        return nd.as_ndarray_like()


def _make_dir(d: str) -> None:
    """A chunk's directory (Zarr v3's c/i/j/...: one new one per chunk of a [T,1,1,X] target):
    one mkdir when its parent exists, as it mostly does, instead of makedirs' stat of the parent
    first."""
    try:
        os.mkdir(d)
    except FileExistsError:
        pass
    except FileNotFoundError:
        os.makedirs(d, exist_ok=True)


def _write_file(path: str, data) -> int:
    """Write a chunk file with open, write and close only (Python's buffered open adds an fstat,
    an ioctl and an lseek per file: thousands of small files per block)."""
    view = memoryview(data).cast("B")
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o666)
    try:
        done = 0
        while done < len(view):
            done += os.write(fd, view[done:])
    finally:
        os.close(fd)
    return len(view)


def _whole_blosc_frame(raw: bytes) -> bool:
    """A Blosc (1) frame's header names its compressed length (bytes 12-16, little-endian): a chunk
    file cut short or extended disagrees with it. c-blosc trusts the header and reads past a short
    buffer (the fuzz run: a chunk cut by one byte decoded to exit 0 once, failed another time)."""
    return len(raw) >= 16 and int.from_bytes(raw[12:16], "little") == len(raw)


def _shuffles_first(io: ChunkIO) -> bool:
    """Whether the pipeline stores a chunk's values in this machine's byte order, C order, and then
    byte-shuffles them (numcodecs' Shuffle of the item size, HDF5's shuffle): v3 [bytes, shuffle,
    ...] or v2 filters [shuffle]. The gather and the shuffle are then one strided copy per byte plane."""
    native = io.dtype.byteorder in "=|" or io.dtype.byteorder == ("<" if sys.byteorder == "little" else ">")
    if io.dtype.itemsize < 2 or not native:
        return False

    def is_shuffle(c):
        c = getattr(c, "_codec", c)
        return type(c).__name__ == "Shuffle" and getattr(c, "elementsize", None) == io.dtype.itemsize

    ab, spec = io.ab
    if _is_v2(ab):
        return len(ab.filters or ()) == 1 and is_shuffle(ab.filters[0]) and spec.order == "C"
    endian = getattr(getattr(ab, "endian", None), "value", None)
    return (not io.aa and type(ab).__name__ == "BytesCodec" and endian in (None, sys.byteorder)
            and bool(io.bb) and is_shuffle(io.bb[0][0]))


def _fill_value(spec):
    """zarr's fill_value_or_default: a v2 array may have no fill value (then the dtype's zero)."""
    return spec.dtype.default_scalar() if spec.fill_value is None else spec.fill_value


def _sync(codec) -> bool:
    return hasattr(codec, "_encode_sync") and hasattr(codec, "_decode_sync")


def _numcodec(codec) -> bool:
    """A numcodecs codec wrapped as a bytes-to-bytes Zarr v3 codec (zarr.codecs.numcodecs)."""
    return hasattr(codec, "_encode") and hasattr(getattr(codec, "_codec", None), "decode")


def _numcodec_decode(codec, buf, spec):
    from zarr.core.buffer.cpu import as_numpy_array_wrapper
    return as_numpy_array_wrapper(codec._codec.decode, buf, spec.prototype)


def _is_v2(codec) -> bool:
    return type(codec).__name__ == "V2Codec" and hasattr(codec, "filters") and hasattr(codec, "compressor")


def _sync_ab(codec) -> bool:
    if _is_v2(codec):
        return True
    return _sync(codec) and type(codec).__name__ != "ShardingCodec"


def _v2_encode(codec, nd, spec):
    """zarr.codecs._v2.V2Codec's encode, in this thread."""
    from numcodecs.compat import ensure_bytes
    chunk = nd.as_ndarray_like().astype(spec.dtype.to_native_dtype(), order=spec.order, copy=False)
    for f in codec.filters or ():
        chunk = f.encode(chunk)
    cdata = codec.compressor.encode(chunk) if codec.compressor else chunk
    return spec.prototype.buffer.from_bytes(ensure_bytes(cdata))


def _v2_decode(codec, buf, spec):
    """zarr.codecs._v2.V2Codec's decode, in this thread (numeric dtypes)."""
    from numcodecs.compat import ensure_ndarray_like
    cdata = buf.as_array_like()
    chunk = codec.compressor.decode(cdata) if codec.compressor else cdata
    for f in reversed(codec.filters or ()):
        chunk = f.decode(chunk)
    chunk = ensure_ndarray_like(chunk).view(spec.dtype.to_native_dtype())
    chunk = chunk.reshape(-1, order="A").reshape(spec.shape, order=spec.order)
    return spec.prototype.nd_buffer.from_ndarray_like(chunk)
