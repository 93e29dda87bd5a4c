"""A two-pass plan's intermediate, laid out in tiles that are the second pass's blocks.

The second pass reads each of its blocks as one tile, one request whatever the block's shape; the
first pass writes, for each tile its block touches, the piece block ∩ tile, gathered into at most
model.convert.INTERMEDIATE_PIECE_BYTES at a time. A C-order intermediate made the second pass
read one request per row of its block instead (a [1024,5,192,256] field into [1024,1,24,32]
chunks under 64 MiB per worker: 1.97 million reads of 512 bytes). rechunker's intermediate Zarr
store does the same with chunks; here the workers write a file themselves, with no codec.

Tile i (C order of the tile grid) is a slot of prod(tile) items at byte offset + i * slot, in C
order of the whole tile; an edge tile, cut by the array's end, leaves the part beyond it unwritten
(as HDF5 allocates an edge chunk whole, and as model.convert counts its requests). `raw_io` is the
caller's mover of a C-contiguous box between the file and an array (blocks._raw_io).
"""

import itertools
import math

import numpy as np

from climio.model.convert import INTERMEDIATE_PIECE_BYTES


def slot_bytes(tile, itemsize: int) -> int:
    return math.prod(tile) * itemsize


def file_bytes(shape, tile, itemsize: int) -> int:
    """Bytes of the tiles, edge ones allocated whole (the plan's tmp_bytes)."""
    return math.prod(-(-d // t) for d, t in zip(shape, tile)) * slot_bytes(tile, itemsize)


def pieces(shape, tile, start, count):
    """(slot index, the tile's shape, start inside the tile, the piece's slices in the block) of
    every tile the block (start, count) touches."""
    grid = [-(-d // t) for d, t in zip(shape, tile)]
    ranges = [range(s // t, (s + n - 1) // t + 1) for s, n, t in zip(start, count, tile)]
    for idx in itertools.product(*ranges):
        origin = [i * t for i, t in zip(idx, tile)]
        a = [max(s, o) for s, o in zip(start, origin)]
        b = [min(s + n, o + t) for s, n, o, t in zip(start, count, origin, tile)]
        slot = int(np.ravel_multi_index(idx, grid)) if idx else 0
        yield slot, tile, [x - o for x, o in zip(a, origin)], tuple(slice(x - s, y - s) for x, y, s in zip(a, b, start))


def read(raw_io, pread, fd: int, offset: int, shape, tile, start, block: np.ndarray) -> None:
    """Fill `block` (origin `start`) from the tiles: a block that is one whole tile is one request."""
    slot = slot_bytes(tile, block.dtype.itemsize)
    for i, extent, local, sel in pieces(shape, tile, start, block.shape):
        dest = block[sel]
        if dest.flags.c_contiguous:
            raw_io(pread, fd, offset + i * slot, extent, local, dest)
        else:
            piece = np.empty(dest.shape, block.dtype)
            raw_io(pread, fd, offset + i * slot, extent, local, piece)
            dest[...] = piece


def write(raw_io, pwrite, fd: int, offset: int, shape, tile, start, block: np.ndarray) -> None:
    """Write `block` (origin `start`) into the tiles it touches, each piece gathered in at most
    INTERMEDIATE_PIECE_BYTES (rows of its first axis; a piece that is C-contiguous as it lies in
    the block is written from there)."""
    slot = slot_bytes(tile, block.dtype.itemsize)
    for i, extent, local, sel in pieces(shape, tile, start, block.shape):
        src = block[sel]
        row = max(1, math.prod(src.shape[1:]) * block.dtype.itemsize)
        step = max(1, INTERMEDIATE_PIECE_BYTES // row) if src.ndim else 1
        for r in range(0, src.shape[0] if src.ndim else 1, step):
            part = np.ascontiguousarray(src[r:r + step] if src.ndim else src)
            raw_io(pwrite, fd, offset + i * slot, extent, [local[0] + r, *local[1:]] if local else [], part)
