"""The chunking study on small real files: layouts as asked, bytes as written, honest records."""

import math

import netCDF4
import numpy as np
import pytest

from climio.dataset import layout
from climio.bench.chunking import run as ck
from climio.bench.chunking import study
from climio.data.fields import values_4d
from climio.measure.series import StreamChecksum
from climio.runs.records import read_records
from conftest import run_cli

SHAPE = [8, 3, 20, 30]   # small, and 20 / 30 are not multiples of the tile chunks: uneven edges


class ListWriter:
    def __init__(self):
        self.records = []

    def write(self, rec):
        self.records.append(rec)


def small_grid(**kw):
    args = dict(shape=",".join(map(str, SHAPE)), chunks="A,B,C,E,F,G,default,balanced,[3,2,7,11]",
                reads="xy,xt,xyt", compression="none,deflate4+shuffle,bitround10+deflate1",
                compress_chunks="B,F,custom", chunk_cache="default,fit", reps=1, budget_s=0, sample=0)
    args.update(kw)
    return study.grid("full", **args)


@pytest.fixture(scope="module")
def written(tmp_path_factory):
    grid = small_grid()
    d = tmp_path_factory.mktemp("layouts")
    ck.write_layouts(grid, d)
    return grid, d


def test_every_chunk_shape_is_applied_as_asked(written):
    grid, _ = written
    assert {lay.label for lay in grid.layouts} >= {"A", "B", "C", "E", "F", "G", "default", "balanced", "custom"}
    for lay in grid.layouts:
        with netCDF4.Dataset(lay.path) as ds:
            v = ds.variables["ta"]
            got = v.chunking()
            assert got == ("contiguous" if lay.chunks is None else list(lay.chunks)), lay.label
            filters = v.filters()
            assert bool(filters["zlib"]) == (lay.compression.codec == "zlib"), lay.name
            assert bool(filters["shuffle"]) == lay.compression.shuffle


def expected_checksum(lay, grid, slices):
    """What a correct read delivers: the generator's values, or for lossy settings the stored ones."""
    c = StreamChecksum()
    if lay.compression.quantize:
        with netCDF4.Dataset(lay.path) as ds:
            full = ds.variables["ta"][:]
    else:
        full = values_4d(grid.shape, seed=grid.seed, dtype=grid.dtype)
    for s, n in slices:
        c.update(np.ascontiguousarray(full[tuple(slice(a, a + b) for a, b in zip(s, n))]))
    return c.hexdigest()


@pytest.mark.parametrize("layer", ["netcdf4-python", "h5py", "c-netcdf"])
def test_data_read_equals_data_written(written, tmp_path, layer):
    grid, _ = written
    for lay in grid.layouts:
        for name, count in grid.reads:
            slices, _ = ck.plan_slices(grid.shape, count, 0, 1)
            sfile = tmp_path / "s.txt"
            sfile.write_text("".join(" ".join(map(str, (*s, *c))) + "\n" for s, c in slices))
            recs = []
            from climio.measure.procs import stream_records
            cmd = ck.layer_command(layer, lay.path, str(sfile), grid, "default", "") + ["--verify"]
            stream_records(cmd, recs.append)
            assert len(recs) == 1 and recs[0]["status"] == "ok", recs
            m = recs[0]["metrics"]
            assert m["slices_read"] == len(slices)
            assert m["bytes"] == len(slices) * math.prod(count) * 8
            assert m["checksum"] == expected_checksum(lay, grid, slices), (layer, lay.name, name)


def test_quantization_error_is_bounded(written):
    grid, _ = written
    lay = next(l for l in grid.layouts if l.compression.quantize)
    with netCDF4.Dataset(lay.path) as ds:
        stored = ds.variables["ta"][:]
    orig = values_4d(grid.shape, seed=grid.seed, dtype=grid.dtype)
    rel = np.abs(stored - orig) / np.maximum(np.abs(orig), 1e-300)
    assert 0 < rel.max() <= 2.0 ** -10   # BitRound keeps 10 significant bits
    assert not np.array_equal(stored, orig)


def test_records_carry_geometry_ratio_and_cache(tmp_path):
    grid = small_grid(chunks="A,F,[3,2,7,11]", compression="none,deflate4+shuffle", compress_chunks="F", reps=1)
    w = ListWriter()
    ck.run_grid(grid, tmp_path, w, "pid")
    recs = w.records
    assert recs and all(r["status"] == "ok" for r in recs)
    itemsize = 8
    for r in recs:
        p, m = r["params"], r["metrics"]
        assert p["chunk_label"] in ("A", "F", "custom") and p["read_shape"] in ("xy", "xt", "xyt")
        lay = next(l for l in grid.layouts if l.label == p["chunk_label"] and l.compression.label == p["compression"])
        stored = ck.stored_bytes(lay.path)
        assert m["compression_ratio"] == pytest.approx(math.prod(SHAPE) * itemsize / stored)
        if p["compression"] == "none" and p["chunk_label"] in ("A", "F"):
            assert m["compression_ratio"] == pytest.approx(1.0)   # shapes divide evenly: no padding
        if p["compression"] == "none" and p["chunk_label"] == "custom":
            assert m["compression_ratio"] < 1.0                   # padded edge chunks cost space
        if p["compression"] != "none":
            assert m["compression_ratio"] > 1.05
        if p["chunk_label"] == "A":
            assert p["cache_setting"] == "default" and "chunks_touched_per_slice" not in m
        else:
            count = p["read_count"]
            start = [0, 0, 0, 0]
            assert m["chunks_touched_per_slice"] >= 1
            if p["chunk_label"] == "F" and p["read_shape"] == "xt":
                assert m["chunks_touched_per_slice"] == 1 and m["bytes_decoded_per_byte"] == 1
            if p["chunk_label"] == "F" and p["read_shape"] == "xy":
                assert m["bytes_decoded_per_byte"] == pytest.approx(SHAPE[0])
            assert layout.chunks_touched(SHAPE, lay.chunks, start, count) >= 1
        if p["cache_setting"] == "fit":
            need = m["max_chunks_touched"] if "max_chunks_touched" in m else None
            assert p["chunk_cache"]["size"] >= layout.chunk_bytes(lay.chunks, itemsize) * (need or 1)
        assert r["cache"]["state"] == "cold"
    settings = {(r["params"]["chunk_label"], r["params"]["cache_setting"]) for r in recs}
    assert ("F", "fit") in settings and ("F", "default") in settings and ("A", "fit") not in settings


def test_codec_the_c_build_lacks_is_recorded_unavailable(tmp_path):
    grid = small_grid(chunks="E", reads="xy", compression="zstd3", compress_chunks="E", layers="c-netcdf",
                      chunk_cache="default")
    w = ListWriter()
    ck.run_grid(grid, tmp_path, w, "")
    assert len(w.records) == 1
    r = w.records[0]
    assert r["status"] == "error" and r["params"]["unavailable"] and "zstd3" in r["metrics"]["error"]


@pytest.mark.parametrize("args,code,needle", [
    (["--shape", "8,3,20,30", "--chunks", "[9,1,1,30]"], 2, "exceeds"),
    (["--shape", "8,3,20,30", "--read", "zt"], 2, "zt"),
    (["--shape", "8,3,20,30", "--compression", "lz4"], 2, "lz4"),
    (["--shape", "8,3,20"], 2, "T,Z,Y,X"),
    (["--source", "/nonexistent.nc:ta"], 3, "nonexistent"),
])
def test_bad_specs_one_line(tmp_path, args, code, needle):
    out = run_cli("bench", "chunking", *args, "--out", tmp_path / "r")
    lines = [l for l in out.stderr.splitlines() if l.strip()]
    assert out.returncode == code and len(lines) == 1 and needle in lines[0], out.stderr


def test_cli_quick_end_to_end(tmp_path):
    out = run_cli("bench", "chunking", "--quick", "--layers", "netcdf4-python,h5py", "--out", tmp_path / "run",
                  timeout=300)
    assert out.returncode == 0, out.stderr
    recs = read_records(tmp_path / "run")
    assert {r["params"]["layer"] for r in recs} == {"netcdf4-python", "h5py"}
    assert {r["params"]["chunk_label"] for r in recs} == {"A", "E", "F", "default"}
    assert all(r["study"] == "chunking" for r in recs)
    assert "chunking" in (tmp_path / "run" / "report.html").read_text()


def test_source_variable_is_copied_into_each_layout(tmp_path):
    from climio.data import make_data
    src = make_data(tmp_path / "src", size="256KiB", kinds=("4d",), shape4d=[6, 2, 10, 16], seed=3)["4d"]
    grid = study.grid("full", source=f"{src}:ta", chunks="E,F", reads="xt", compression="none,deflate4",
                         compress_chunks="E", chunk_cache="default", reps=1, sample=0)
    assert grid.shape == [6, 2, 10, 16]
    w = ListWriter()
    ck.run_grid(grid, tmp_path / "layouts", w, "")
    with netCDF4.Dataset(src) as ds:
        want = ds.variables["ta"][:]
    for lay in grid.layouts:
        with netCDF4.Dataset(lay.path) as ds:
            np.testing.assert_array_equal(ds.variables["ta"][:], want)
    assert {r["params"]["source"] for r in w.records} == {f"{src}:ta"}
    ratio = {r["params"]["compression"]: r["metrics"]["compression_ratio"] for r in w.records}
    assert ratio["none"] == pytest.approx(1.0) and ratio["deflate4"] > 1.0


@pytest.mark.parametrize("text,label,kwargs", [
    ("none", "none", {"shuffle": False}),
    ("deflate4+shuffle", "deflate4+shuffle", {"compression": "zlib", "complevel": 4, "shuffle": True}),
    ("shuffle+deflate1", "deflate1+shuffle", {"compression": "zlib", "complevel": 1, "shuffle": True}),
    ("bitround12+deflate4", "bitround12+deflate4",
     {"compression": "zlib", "complevel": 4, "shuffle": False, "significant_digits": 12, "quantize_mode": "BitRound"}),
    ("granularbr3+zstd5", "granularbr3+zstd5",
     {"compression": "zstd", "complevel": 5, "shuffle": False, "significant_digits": 3,
      "quantize_mode": "GranularBitRound"}),
    ("bzip29", "bzip2:9", {"compression": "bzip2", "complevel": 9, "shuffle": False}),
    ("blosc_lz4:5", "blosc_lz4:5", {"compression": "blosc_lz4", "complevel": 5, "shuffle": False, "blosc_shuffle": 0}),
    ("blosc_lz5+shuffle", "blosc_lz5+shuffle",
     {"compression": "blosc_lz", "complevel": 5, "shuffle": False, "blosc_shuffle": 1}),
])
def test_compression_settings_parse_and_label(text, label, kwargs):
    from climio.dataset.options import parse_compression
    c = parse_compression(text)
    assert c.label == label and c.netcdf4_kwargs() == kwargs
    assert parse_compression(c.label) == c   # labels parse back to the same setting


@pytest.mark.parametrize("text,shuffle", [("blosc_lz5", 0), ("blosc_lz4:5+shuffle", 1)])
def test_blosc_settings_write_what_they_say(tmp_path, text, shuffle):
    """Blosc's own shuffle follows `+shuffle`; no HDF5 shuffle filter is stacked in front of it."""
    from climio.dataset.options import parse_compression
    c = parse_compression(text)
    with netCDF4.Dataset(tmp_path / "b.nc", "w") as ds:
        ds.createDimension("x", 1000)
        # compressible: netCDF-C's blosc filter fails a chunk that does not shrink
        ds.createVariable("v", "f4", ("x",), **c.netcdf4_kwargs())[:] = np.arange(1000, dtype="f4") // 100
    with netCDF4.Dataset(tmp_path / "b.nc") as ds:
        f = ds["v"].filters()
        np.testing.assert_array_equal(ds["v"][:], np.arange(1000, dtype="f4") // 100)
    assert f["blosc"] == {"compressor": c.codec, "shuffle": shuffle} and f["shuffle"] is False


@pytest.mark.parametrize("bad", ["lz4", "deflate", "deflate12", "zstd3+deflate4", "bitgroom0+deflate4", "shuffle2"])
def test_bad_compression_settings(bad):
    from climio.dataset.options import parse_compression
    from climio.base.errors import InputError
    with pytest.raises(InputError):
        parse_compression(bad)


def test_blosc_and_bzip2_layouts_read_back_through_every_layer(tmp_path):
    grid = small_grid(chunks="E", reads="xt", compression="bzip2:5,blosc_lz4:5+shuffle", compress_chunks="E",
                      layers="netcdf4-python,h5py,c-netcdf", chunk_cache="default")
    w = ListWriter()
    ck.run_grid(grid, tmp_path, w, "")
    assert {(r["params"]["layer"], r["params"]["compression"]) for r in w.records} == {
        (l, c) for l in ("netcdf4-python", "h5py", "c-netcdf") for c in ("bzip2:5", "blosc_lz4:5+shuffle")}
    ok = [r for r in w.records if r["status"] == "ok"]
    assert len({r["metrics"]["compression_ratio"] for r in ok}) == 2
    # A layer that cannot load a filter says so in a record rather than failing the study.
    assert all(r["status"] == "ok" or r["params"].get("unavailable") for r in w.records)


def test_grid_options_and_one_line_errors():
    from climio.bench.base import options_of
    from climio.base.errors import InputError
    flags = [opt.flag for _, opt in options_of(study.Grid)]
    assert flags == ["--shape", "--chunks", "--read", "--compression", "--compress-chunks", "--stacks", "--chunk-cache",
                     "--reps", "--budget", "--sample", "--dtype", "--source"]
    g = study.grid("quick")
    assert g.shape == [16, 4, 32, 64] and [name for name, _ in g.reads] == ["xy", "xt"]
    assert {lay.label for lay in g.layouts} == {"A", "E", "F", "default"} and g.layers == ["netcdf4-python"]
    for bad in (dict(reps=0), dict(sample=-1), dict(budget_s=-1), dict(layers="pnetcdf"), dict(nonsense=1)):
        with pytest.raises(InputError) as exc:
            study.grid("quick", **bad)
        assert "\n" not in str(exc.value)
