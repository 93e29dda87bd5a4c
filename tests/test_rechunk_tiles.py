"""A two-pass plan's tiled intermediate (rechunking.tiles): what the first pass writes in pieces
the second pass reads back, exactly, with one request per second-pass block."""

import os

import numpy as np
import pytest

from climio.rechunking import tiles
from climio.rechunking.blocks import _raw_io
from climio.dataset.layout import iter_blocks


@pytest.mark.parametrize("shape,first,tile", [
    ((20, 3, 14, 10), (4, 3, 14, 10), (20, 1, 6, 4)),     # edge tiles on y and x (14 = 6+6+2, 10 = 4+4+2)
    ((7, 5), (2, 5), (7, 3)),
    ((9,), (4,), (5,)),
])
def test_tiles_written_by_first_pass_blocks_read_back_by_tiles(tmp_path, shape, first, tile):
    data = np.arange(np.prod(shape), dtype="f4").reshape(shape)
    path = tmp_path / "inter"
    offset = 96                                    # as an HDF5 dataset's data starts after its header
    size = tiles.file_bytes(shape, tile, 4)
    path.write_bytes(b"\0" * (offset + size))
    calls = []

    def pwrite(fd, bufs, at):
        calls.append(at)
        return os.pwritev(fd, bufs, at)

    fd = os.open(path, os.O_RDWR)
    try:
        for start, count in iter_blocks(shape, first):
            block = np.ascontiguousarray(data[tuple(slice(s, s + n) for s, n in zip(start, count))])
            tiles.write(_raw_io, pwrite, fd, offset, shape, tile, start, block)
        reads = []

        def pread(fd, bufs, at):
            reads.append(at)
            return os.preadv(fd, bufs, at)

        for start, count in iter_blocks(shape, tile):
            out = np.empty(count, "f4")
            n0 = len(reads)
            tiles.read(_raw_io, pread, fd, offset, shape, tile, start, out)
            np.testing.assert_array_equal(out, data[tuple(slice(s, s + n) for s, n in zip(start, count))])
            if all(n == t for n, t in zip(count, tile)):
                assert len(reads) - n0 == 1                 # a second-pass block is one request
        # and any other box reads back right too (pieces of several tiles)
        start, count = [0] * len(shape), [min(3, d) for d in shape]
        out = np.empty(count, "f4")
        tiles.read(_raw_io, os.preadv, fd, offset, shape, tile, start, out)
        np.testing.assert_array_equal(out, data[tuple(slice(0, n) for n in count)])
    finally:
        os.close(fd)
    assert min(calls) >= offset and max(calls) < offset + size


def test_a_piece_is_gathered_in_bounded_writes(tmp_path, monkeypatch):
    monkeypatch.setattr(tiles, "INTERMEDIATE_PIECE_BYTES", 3 * 4 * 4)   # three rows of [4] float32
    shape, tile = (10, 4), (10, 4)
    data = np.arange(40, dtype="f4").reshape(shape)
    path = tmp_path / "inter"
    path.write_bytes(b"\0" * tiles.file_bytes(shape, tile, 4))
    sizes = []

    def pwrite(fd, bufs, at):
        sizes.append(sum(len(b) for b in bufs))
        return os.pwritev(fd, bufs, at)

    fd = os.open(path, os.O_RDWR)
    try:
        tiles.write(_raw_io, pwrite, fd, 0, shape, tile, (0, 0), data[:, :].copy())
    finally:
        os.close(fd)
    assert sizes == [48, 48, 48, 16]
    np.testing.assert_array_equal(np.fromfile(path, "f4").reshape(shape), data)
