"""rechunk.zarr_chunks: the workers' own Zarr chunk writes and reads store and read what zarr-python does."""

import warnings
from pathlib import Path

import numcodecs
import numpy as np
import pytest
import zarr
import zarr.codecs as zc

from climio.rechunking.zarr_chunks import ChunkIO

SHAPE, CHUNKS = (30, 7, 50), (30, 1, 16)     # edge chunks on the last axis (50 = 3 x 16 + 2)


def _values():
    rng = np.random.default_rng(3)
    data = np.cumsum(rng.normal(size=SHAPE), axis=0).astype("f4")
    data[:, 2] = -9.0                        # chunks of this row hold only the fill value
    data[4, 5, 7] = np.nan
    return data


def _create(root: Path, fmt: int, **codecs):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return zarr.create_array(str(root), name="v", shape=SHAPE, chunks=CHUNKS, dtype="f4", fill_value=-9.0,
                                 zarr_format=fmt, **codecs)


CODECS = {
    "v3 zstd": (3, {"compressors": [zc.ZstdCodec(level=3)], "filters": None,
                    "serializer": zc.BytesCodec(endian="little")}),
    "v3 shuffle+zstd": (3, {"compressors": [zc.numcodecs.Shuffle(elementsize=4), zc.ZstdCodec(level=3)],
                            "serializer": zc.BytesCodec(endian="little")}),
    "v3 shuffle+zstd big-endian": (3, {"compressors": [zc.numcodecs.Shuffle(elementsize=4), zc.ZstdCodec(level=1)],
                                       "serializer": zc.BytesCodec(endian="big")}),   # (gzip stores the time)
    "v3 blosc big-endian": (3, {"compressors": [zc.BloscCodec(cname="lz4", clevel=5, shuffle="shuffle", typesize=4)],
                                "serializer": zc.BytesCodec(endian="big")}),
    "v2 shuffle+zstd": (2, {"compressors": numcodecs.Zstd(level=3), "filters": [numcodecs.Shuffle(elementsize=4)]}),
    "v2 shuffle": (2, {"compressors": None, "filters": [numcodecs.Shuffle(elementsize=4)]}),
}
FUSED = ("v3 shuffle+zstd", "v2 shuffle+zstd", "v2 shuffle")   # gathered and shuffled in one pass


def _files(root: Path) -> dict:
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


@pytest.mark.parametrize("name", list(CODECS))
def test_written_chunks_are_zarr_pythons_bytes(tmp_path, name):
    fmt, codecs = CODECS[name]
    data = _values()
    ours, theirs = tmp_path / "ours.zarr", tmp_path / "theirs.zarr"
    _create(theirs, fmt, **codecs)[...] = data
    arr = _create(ours, fmt, **codecs)
    io = ChunkIO.of(zarr.open_array(str(ours), path="v", mode="r+"), str(ours))
    assert io is not None and io.chunks == CHUNKS and io.fused == (name in FUSED)
    stored = 0
    for idx in np.ndindex(*(-(-n // c) for n, c in zip(SHAPE, CHUNKS))):
        box = tuple(slice(i * c, min((i + 1) * c, n)) for i, c, n in zip(idx, CHUNKS, SHAPE))
        stored += io.write(idx, data[box]) > 0
    mine, ref = _files(ours), _files(theirs)
    assert mine == ref                       # the same keys (no fill-only chunk) and the same bytes
    assert stored == len([k for k in ref if Path(k).name not in ("zarr.json", ".zarray", ".zattrs", ".zgroup")])
    assert stored == 7 * 4 - 4               # the row of fill values is not stored
    np.testing.assert_array_equal(zarr.open_array(str(ours), path="v", mode="r")[...], data)
    del arr


@pytest.mark.parametrize("name", list(CODECS))
def test_read_chunks_decode_what_zarr_python_wrote(tmp_path, name):
    fmt, codecs = CODECS[name]
    data = _values()
    root = tmp_path / "s.zarr"
    _create(root, fmt, **codecs)[...] = data
    io = ChunkIO.of(zarr.open_array(str(root), path="v", mode="r"), str(root))
    chunk, nbytes = io.read((0, 3, 3))       # an edge chunk: 2 values of 16 inside the array
    assert nbytes > 0 and chunk.shape == CHUNKS
    np.testing.assert_array_equal(chunk[:, :, :2], data[:, 3:4, 48:50])
    assert io.read((0, 2, 0)) == (None, 0)   # never stored: the caller fills it with io.fill
    assert io.fill == -9.0


def test_sharded_arrays_go_through_zarr_python(tmp_path):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        zarr.create_array(str(tmp_path / "s.zarr"), name="v", shape=SHAPE, chunks=(30, 1, 16), shards=(30, 7, 16),
                          dtype="f4")
    assert ChunkIO.of(zarr.open_array(str(tmp_path / "s.zarr"), path="v", mode="r"), str(tmp_path / "s.zarr")) is None


@pytest.mark.parametrize("name", FUSED)
def test_fused_reads_give_byte_planes_of_the_values(tmp_path, name):
    fmt, codecs = CODECS[name]
    data = _values()
    root = tmp_path / "s.zarr"
    _create(root, fmt, **codecs)[...] = data
    io = ChunkIO.of(zarr.open_array(str(root), path="v", mode="r"), str(root))
    planes, _ = io.read((0, 4, 1), planes=True)
    assert planes.shape == (4,) + CHUNKS
    values = np.moveaxis(planes, 0, -1).copy().view("f4")[..., 0]   # the unshuffle
    np.testing.assert_array_equal(values, data[:, 4:5, 16:32])
