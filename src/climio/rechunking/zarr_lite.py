"""Whole chunks of one local Zarr array (format 2, or 3 without sharding) encoded and written, or
read and decoded, with numcodecs alone: a pool worker that imports zarr-python only for its codec
objects spent 0.3 s of CPU on the import (about a fifth of a worker's CPU on a 200 MiB store).

The process that defined the output (it has zarr) describes each array's chunk pipeline in a
LiteSpec (describe): the numcodecs codec each of zarr's codecs calls and its configuration, the
byte order the bytes codec stores, the chunk key's form, the fill value. A worker rebuilds the
codecs from their configurations (LiteIO, a zarr_chunks.ChunkIO without zarr). describe checks
what it made: a sample chunk, and one of the fill value, encoded by zarr's codecs and by the
description give the same bytes and decode to the same values; else it returns None and the
workers go through zarr-python (ChunkIO), as before.
"""

import os
from dataclasses import dataclass
from typing import Optional

import numpy as np

from .zarr_chunks import ChunkIO, _is_v2, _numcodec

CHECKED_CHUNK_BYTES = 16 << 20   # larger chunks: no description (checking it would encode one twice)


@dataclass(frozen=True)
class LiteSpec:
    root: str                 # the array's directory
    chunks: tuple
    shape: tuple
    dtype: str                # the values in memory (ChunkIO.dtype)
    stored: str               # the dtype whose bytes are stored (v3: the bytes codec's byte order)
    fill: object
    write_empty: bool
    prefix: str               # chunk key: prefix + sep.join(indices)
    sep: str
    v2: bool
    codecs: tuple             # numcodecs configurations: v3 bytes->bytes codecs, v2 filters
    compressor: Optional[dict] = None   # v2
    order: str = "C"          # v2
    fused: bool = False       # ChunkIO.fused
    blosc_outer: bool = False


class LiteIO(ChunkIO):
    """ChunkIO's reads and writes of a local store, its codecs numcodecs' (see the module docstring)."""

    def __init__(self, spec: LiteSpec):   # noqa: super().__init__ is zarr's side: not called
        import numcodecs
        self.spec, self.objects, self._fetched, self._dirs = spec, None, {}, set()
        self.root, self.chunks, self.shape = spec.root, tuple(spec.chunks), tuple(spec.shape)
        self.dtype, self.stored = np.dtype(spec.dtype), np.dtype(spec.stored)
        self.fill, self.write_empty, self.fused = spec.fill, spec.write_empty, spec.fused
        self.codecs = [numcodecs.get_codec(dict(c)) for c in spec.codecs]
        self.compressor = numcodecs.get_codec(dict(spec.compressor)) if spec.compressor else None

    def path(self, idx) -> str:
        return os.path.join(self.root, self.spec.prefix + self.spec.sep.join(map(str, idx)))

    def _blosc_outer(self) -> bool:
        return self.spec.blosc_outer

    def encode(self, chunk: np.ndarray):
        if not self.write_empty and _all_equal(chunk[(slice(0, 1),) * chunk.ndim], self.fill) \
                and _all_equal(chunk, self.fill):
            return None
        if self.fused:   # as ChunkIO.encode: the gather and the byte shuffle in one pass
            from .codec import shuffle_from
            data = shuffle_from(chunk[..., None].view(np.uint8), self.chunks).reshape(-1)
            if self.spec.v2:
                return self.compressor.encode(data) if self.compressor else data
            rest = self.codecs[1:]
        elif self.spec.v2:   # zarr_chunks._v2_encode
            from numcodecs.compat import ensure_bytes
            data = np.asarray(chunk).astype(self.stored, order=self.spec.order, copy=False)
            for f in self.codecs:
                data = f.encode(data)
            return ensure_bytes(self.compressor.encode(data) if self.compressor else data)
        else:            # the bytes codec: C order, its byte order
            data, rest = np.ascontiguousarray(chunk, dtype=self.stored).reshape(-1).view(np.uint8), self.codecs
        for c in rest:
            data = c.encode(_u8(data))
        return data

    def decode(self, raw) -> np.ndarray:
        if self.spec.v2:   # zarr_chunks._v2_decode
            from numcodecs.compat import ensure_ndarray_like
            data = self.compressor.decode(_u8(raw)) if self.compressor else _u8(raw)
            for f in reversed(self.codecs):
                data = f.decode(data)
            data = ensure_ndarray_like(data).view(self.stored)
            return data.reshape(-1, order="A").reshape(self.chunks, order=self.spec.order)
        data = raw
        for c in reversed(self.codecs):
            data = c.decode(_u8(data))
        return np.frombuffer(data, self.stored).reshape(self.chunks)

    def _planes(self, raw) -> np.ndarray:
        if self.spec.v2:
            data = self.compressor.decode(_u8(raw)) if self.compressor else raw
        else:
            data = raw
            for c in reversed(self.codecs[1:]):
                data = c.decode(_u8(data))
        return np.frombuffer(data, np.uint8).reshape((self.dtype.itemsize,) + self.chunks)


def _u8(data) -> np.ndarray:
    """Bytes as the uint8 array zarr hands its numcodecs codecs (Buffer.as_numpy_array)."""
    return data if isinstance(data, np.ndarray) else np.frombuffer(data, np.uint8)


def _all_equal(a: np.ndarray, fill) -> bool:
    """zarr's NDBuffer.all_equal(fill): a float zero compared bit for bit (-0.0 is not 0.0), NaN equal to NaN."""
    if fill is None:
        return False
    if np.asarray(fill).dtype.kind == "f" and fill == 0.0:
        x, y = np.broadcast_arrays(a, np.asarray(fill, a.dtype))
        void = f"V{x.dtype.itemsize}"
        return np.array_equal(x.view(void), y.view(void))
    x, y = np.broadcast_arrays(a, fill)
    return np.array_equal(x, y, equal_nan=True)


def describe(arr, root: str) -> Optional[LiteSpec]:
    """The LiteSpec of a local array zarr-python opened from the store directory `root`, checked
    against zarr's own codecs (see the module docstring); None when not covered."""
    io = ChunkIO.of(arr, root)
    if io is None or io.aa or int(np.prod(io.chunks)) * io.dtype.itemsize > CHECKED_CHUNK_BYTES:
        return None
    try:
        spec = _spec(io, arr)
    except Exception:   # noqa: BLE001  (a codec whose numcodecs side is not where we look)
        return None
    if spec is None:
        return None
    lite = LiteIO(spec)
    n = int(np.prod(io.chunks))
    sample = (np.arange(n) % 113).astype(io.dtype).reshape(io.chunks)
    fill = np.full(io.chunks, io.fill, io.dtype)
    try:
        for chunk in (sample, fill):
            want, got = io.encode(chunk), lite.encode(chunk)
            if (want is None) != (got is None):
                return None
            if want is None:
                continue
            want, got = bytes(memoryview(want).cast("B")), bytes(memoryview(got).cast("B"))
            if want != got or not np.array_equal(io.decode(want), lite.decode(want), equal_nan=True):
                return None
            if io.fused and not np.array_equal(io._planes(want), lite._planes(want)):
                return None
    except Exception:   # noqa: BLE001
        return None
    return spec


def _spec(io: ChunkIO, arr) -> Optional[LiteSpec]:
    ab, ab_spec = io.ab
    prefix, sep = _key_form(arr)
    common = dict(root=io.root, chunks=io.chunks, shape=io.shape, dtype=io.dtype.str, fill=io.fill,
                  write_empty=io.write_empty, prefix=prefix, sep=sep, fused=io.fused, blosc_outer=io._blosc_outer())
    if _is_v2(ab):
        return LiteSpec(stored=np.dtype(ab_spec.dtype.to_native_dtype()).str, v2=True,
                        codecs=tuple(f.get_config() for f in ab.filters or ()),
                        compressor=ab.compressor.get_config() if ab.compressor else None, order=ab_spec.order,
                        **common)
    if type(ab).__name__ != "BytesCodec":
        return None
    endian = getattr(getattr(ab, "endian", None), "value", None)
    stored = io.dtype.newbyteorder({"little": "<", "big": ">"}[endian]) if endian else io.dtype
    codecs = []
    for c, _ in io.bb:
        inner = _numcodecs_of(c)
        if inner is None:
            return None
        config = inner.get_config()
        if getattr(c, "typesize", None) and config.get("id") == "blosc":   # numcodecs' config leaves it out
            config["typesize"] = int(c.typesize)
        codecs.append(config)
    return LiteSpec(stored=stored.str, v2=False, codecs=tuple(codecs), **common)


def _numcodecs_of(c):
    """The numcodecs codec a zarr bytes->bytes codec calls (blosc, zstd, gzip, numcodecs.*), or None."""
    if _numcodec(c):
        return c._codec
    for name in ("_blosc_codec", "_zstd_codec", "_gzip_codec"):
        if type(c).__name__.lower().startswith(name[1:-6]) and hasattr(c, name):
            return getattr(c, name)
    return None


def _key_form(arr) -> tuple:
    """(prefix, separator) of the array's chunk keys, read off its own encoding and checked."""
    meta = arr.metadata
    idx = tuple(range(11, 11 + arr.ndim))
    key = meta.encode_chunk_key(idx)
    prefix = key[:key.index("11")]
    sep = key[len(prefix) + 2] if arr.ndim > 1 else "/"
    for probe in (idx, (0,) * arr.ndim, tuple(range(arr.ndim))):
        if meta.encode_chunk_key(probe) != prefix + sep.join(map(str, probe)):
            raise ValueError(f"chunk keys of another form: {key}")
    return prefix, sep
