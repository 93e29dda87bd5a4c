"""Pool workers read and write local Zarr chunks with numcodecs alone (rechunk.zarr_lite): the
chunks they write are zarr-python's own bytes (ChunkIO through zarr's codecs), byte for byte, for
the codecs climio writes and reads (v3 blosc with shuffle, zstd, gzip, numcodecs' shuffle filter,
big-endian bytes; v2 shuffle + zstd, blosc), fill-value chunks left out, edge chunks padded; the
values read back are zarr's; and a zarr -> zarr conversion's workers never import zarr."""

import dataclasses
import os
import warnings
from pathlib import Path

import numcodecs
import numpy as np
import pytest
import zarr
import zarr.codecs as zc

from climio.rechunking import blocks, command, execute
from climio.rechunking.zarr_chunks import ChunkIO
from climio.rechunking.zarr_lite import LiteIO, describe

pytestmark = pytest.mark.usefixtures("builtin_rates")

SHAPE, CHUNKS = (7, 10, 12), (3, 4, 12)


def _v3(**kw):
    return dict(zarr_format=3, **kw)


CONFIGS = {
    "v3 blosc zstd shuffle": _v3(compressors=[zc.BloscCodec(cname="zstd", clevel=3, shuffle="shuffle")]),
    "v3 zstd": _v3(compressors=[zc.ZstdCodec(level=1)]),
    "v3 gzip": _v3(compressors=[zc.GzipCodec(level=1)]),
    "v3 big-endian blosc lz4": _v3(compressors=[zc.BloscCodec(cname="lz4", clevel=5, shuffle="noshuffle")],
                                   serializer=zc.BytesCodec(endian="big")),
    "v2 shuffle zstd": dict(zarr_format=2, filters=[numcodecs.Shuffle(elementsize=4)],
                            compressors=numcodecs.Zstd(level=3)),
    "v2 blosc": dict(zarr_format=2, compressors=numcodecs.Blosc(cname="lz4", clevel=5, shuffle=1)),
    "v2 none": dict(zarr_format=2, compressors=None),
}


def _values(dtype, fill):
    a = (np.random.default_rng(5).standard_normal(SHAPE) * 100).astype(dtype)
    a[0:3, 0:4] = fill                           # one chunk all fill: not stored
    return a


def _files(root: Path) -> dict:
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*"))
            if p.is_file() and p.name not in ("zarr.json", ".zarray", ".zattrs", ".climio-staging")}


def _array(path, dtype, fill, cfg):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return zarr.create_array(str(path), shape=SHAPE, chunks=CHUNKS, dtype=dtype, fill_value=fill, **cfg)


@pytest.mark.parametrize("dtype,fill", [("f4", np.nan), ("i2", -999), ("f8", 0.0)])
@pytest.mark.parametrize("name", list(CONFIGS))
def test_lite_chunks_are_zarrs_bytes_and_values(tmp_path, name, dtype, fill):
    cfg = CONFIGS[name]
    if "filters" in cfg:   # the shuffle filter of this dtype's item size (the fused path, ChunkIO.fused)
        cfg = dict(cfg, filters=[numcodecs.Shuffle(elementsize=np.dtype(dtype).itemsize)])
    a, b = tmp_path / "zarr.zarr", tmp_path / "lite.zarr"
    arr_a, arr_b = _array(a, dtype, fill, cfg), _array(b, dtype, fill, cfg)
    spec = describe(arr_b, str(b))
    assert spec is not None, name
    io_a, io_b = ChunkIO.of(arr_a, str(a)), LiteIO(spec)
    data = _values(dtype, fill)
    for io in (io_a, io_b):
        for idx in np.ndindex(*[-(-n // c) for n, c in zip(SHAPE, CHUNKS)]):
            box = tuple(slice(i * c, min((i + 1) * c, n)) for i, c, n in zip(idx, CHUNKS, SHAPE))
            io.write(idx, data[box])                  # edge chunks (rows 6..7) padded with the fill value
    assert _files(a) == _files(b) and len(_files(b)) == 8   # of 9: the all-fill chunk is not stored
    np.testing.assert_array_equal(zarr.open_array(str(b), mode="r")[...], data)
    for idx in ((0, 0, 0), (1, 2, 0), (2, 1, 0)):
        got, _ = io_b.read(idx)
        want, _ = io_a.read(idx)
        assert (got is None) == (want is None)
        if want is not None:
            np.testing.assert_array_equal(got, want)
            assert got.shape == CHUNKS


def test_what_the_description_does_not_cover_goes_through_zarr(tmp_path):
    sharded = zarr.create_array(str(tmp_path / "s.zarr"), shape=SHAPE, chunks=CHUNKS, shards=(6, 8, 12), dtype="f4")
    assert describe(sharded, str(tmp_path / "s.zarr")) is None
    crc = zarr.create_array(str(tmp_path / "c.zarr"), shape=SHAPE, chunks=CHUNKS, dtype="f4",
                            compressors=[zc.Crc32cCodec()])
    assert describe(crc, str(tmp_path / "c.zarr")) is None    # no numcodecs codec behind it: zarr's own


def test_zarr_to_zarr_workers_import_no_zarr_and_write_zarrs_bytes(tmp_path):
    src = tmp_path / "in.zarr"
    T, Y, X = 40, 32, 64
    data = (np.random.default_rng(1).standard_normal((T, Y, X)) * 10).astype("f4")
    root = zarr.open_group(str(src), mode="w", zarr_format=2)
    a = root.create_array("ta", shape=(T, Y, X), chunks=(1, Y, X), dtype="f4", fill_value=np.nan,
                          filters=[numcodecs.Shuffle(elementsize=4)], compressors=numcodecs.Zstd(level=3),
                          attributes={"_ARRAY_DIMENSIONS": ["time", "lat", "lon"]})
    a[...] = data
    zarr.consolidate_metadata(str(src), zarr_format=2)
    opts = command.Options(chunk_specs=(f"time/{T},lat/1,lon/{X}",), compression="zstd3+shuffle", max_mem=256 << 10,
                           workers=2)
    prep = command.prepare(src, tmp_path / "o.zarr", opts, 2, True, lambda *_: None)
    assert execute.pool_size(prep.plans.values()) == 2
    stores = {}
    for lite in (True, False):
        out = tmp_path / f"out-{lite}.zarr"
        runner, jobs, _ = command.define_and_start(prep, src, out, command.zarr_settings(opts), opts)
        assert all(j.lite_in is not None and j.lite_out is not None for j in jobs)
        if not lite:
            jobs = [dataclasses.replace(j, lite_in=None, lite_out=None) for j in jobs]
        seen, close = [], runner.close

        def closing(abort=False, runner=runner, seen=seen, close=close):
            probe = "sorted(m for m in __import__('sys').modules if m.split('.')[0] == 'zarr')"
            seen.extend(runner.pool.map(eval, [probe] * 4, chunksize=1))
            close(abort)
        runner.close = closing
        execute.convert(str(src), str(out), jobs, 2, str(tmp_path), None, "zarr", "zarr", runner)
        stores[lite] = _files(out)
        if lite:
            assert seen and all(s == [] for s in seen), seen
        else:
            assert any(s for s in seen)               # through zarr-python: the workers imported it
        np.testing.assert_array_equal(zarr.open_group(str(out), mode="r")["ta"][...], data)
        assert zarr.open_group(str(out), mode="r")["ta"].chunks == (T, 1, X)
    assert stores[True] == stores[False] and len(stores[True]) == Y   # every chunk [T,1,X], byte for byte
    assert not list(Path("/dev/shm").glob(f".climio-rechunk-{os.getpid()}-*"))
    blocks.close_handles()
