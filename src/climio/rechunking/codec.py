"""Whole-chunk decoding and encoding outside HDF5, for the filters netCDF-4 files mostly carry.

HDF5 decodes and encodes chunks one at a time inside H5Dread/H5Dwrite, holding a global lock, with
zlib. Going around it (raw chunk bytes in and out, HDF5 direct chunk read/write) lets several
processes decode and encode at once and lets us use libdeflate, which writes the same zlib streams
about twice as fast and inflates them about twice as fast (measured: bench/rechunk_vs_peers.py).
The streams are ordinary zlib streams, so any netCDF-4/HDF5 reader decodes them with its deflate
filter. Only deflate and shuffle are handled here; anything else goes through HDF5 (and hdf5plugin).
"""

import deflate
import numpy as np

FILTER_DEFLATE = 1   # H5Z_FILTER_DEFLATE
FILTER_SHUFFLE = 2   # H5Z_FILTER_SHUFFLE
DIRECT_FILTERS = (FILTER_DEFLATE, FILTER_SHUFFLE)


def can_decode(filters) -> bool:
    """Whether every filter of a pipeline is one we decode ourselves."""
    return all(f in DIRECT_FILTERS for f in filters)


def shuffle(data, itemsize: int) -> bytes:
    """HDF5's byte shuffle: byte 0 of every value, then byte 1, ... One strided column copy per
    byte plane: about 1.4x faster in numpy than transposing [n, itemsize] and copying."""
    b = np.frombuffer(data, np.uint8)
    if itemsize <= 1 or b.size % itemsize:
        return bytes(b)  # HDF5 leaves such buffers as they are
    values = b.reshape(-1, itemsize)
    out = np.empty((itemsize, values.shape[0]), np.uint8)
    for k in range(itemsize):
        out[k] = values[:, k]
    return out.reshape(-1).data


def unshuffle(data, itemsize: int) -> bytes:
    b = np.frombuffer(data, np.uint8)
    if itemsize <= 1 or b.size % itemsize:
        return bytes(b)
    planes = b.reshape(itemsize, -1)
    out = np.empty((planes.shape[1], itemsize), np.uint8)
    for k in range(itemsize):
        out[:, k] = planes[k]
    return out.reshape(-1).data


def decode(raw: bytes, filters, filter_mask: int, nbytes: int, itemsize: int) -> bytes:
    """Undo a chunk's pipeline, last filter first; bit i of filter_mask set = filter i was skipped."""
    data = raw
    for i in reversed(range(len(filters))):
        if filter_mask >> i & 1:
            continue
        if filters[i] == FILTER_DEFLATE:
            data = deflate.zlib_decompress(data, nbytes)
        elif filters[i] == FILTER_SHUFFLE:
            data = unshuffle(data, itemsize)
        else:
            raise ValueError(f"filter {filters[i]} is not decoded outside HDF5")
    if len(data) != nbytes:
        raise ValueError(f"chunk decoded to {len(data)} bytes, expected {nbytes}")
    return data


def decode_to_planes(raw: bytes, filters, filter_mask: int, nbytes: int, itemsize: int) -> tuple:
    """(data, planes): like decode, but when the pipeline's first filter is a shuffle that applies,
    stop before undoing it and say so (planes True): the caller unshuffles while copying the byte
    planes to where the values go (unshuffle_into), which saves a copy of every chunk."""
    if filters and filters[0] == FILTER_SHUFFLE and not filter_mask & 1 and itemsize > 1 and nbytes % itemsize == 0:
        data = decode(raw, (FILTER_SHUFFLE,) + tuple(filters[1:]), filter_mask | 1, nbytes, itemsize)
        return data, True
    return decode(raw, filters, filter_mask, nbytes, itemsize), False


def unshuffle_into(planes: np.ndarray, dest_bytes: np.ndarray) -> None:
    """Undo HDF5's shuffle from `planes` [itemsize, *shape] into `dest_bytes` [*shape, itemsize],
    a uint8 view of the values' place (any strides): one strided copy per byte plane."""
    for k in range(planes.shape[0]):
        dest_bytes[..., k] = planes[k]


def shuffle_from(values_bytes: np.ndarray, chunk_shape) -> np.ndarray:
    """HDF5's shuffle of the values whose bytes `values_bytes` [*shape, itemsize] (a uint8 view of a
    block's region, any strides) holds, as a full chunk: [itemsize, *chunk_shape] byte planes, the
    region at the chunk's origin and zeros beyond it (edge chunks are stored whole). Gathering the
    region and shuffling it are one strided copy per byte plane."""
    item = values_bytes.shape[-1]
    shape = values_bytes.shape[:-1]
    full = tuple(shape) == tuple(chunk_shape)
    planes = (np.empty if full else np.zeros)((item,) + tuple(chunk_shape), np.uint8)
    region = tuple(slice(0, n) for n in shape)
    for k in range(item):
        planes[k][region] = values_bytes[..., k]
    return planes


def encode(chunk: np.ndarray, shuffled: bool, level: int) -> bytes:
    """Apply netCDF-4's pipeline (shuffle, then deflate at `level`; level 0 = no deflate)."""
    data = np.ascontiguousarray(chunk)
    if shuffled:
        data = shuffle(data, chunk.dtype.itemsize)
    if level:
        return deflate.zlib_compress(data, level)
    return bytes(data)
