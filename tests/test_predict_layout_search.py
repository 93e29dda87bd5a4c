"""One layout for several read patterns (issue 26, part 3): the search over chunk shapes
(climio.model.layout_search) and its place in `climio advise`."""

import math

import pytest

from climio.dataset.access import slice_starts
from climio.base.errors import InputError
from climio.dataset.layout import Layout
from climio.model.layout_search import Pattern, axis_lengths, candidates, search
from climio.model.predict import predict
from climio.model.profile import default_profile
from climio.dataset.reads import read_count as parse_read

SHAPE = (24, 2, 16, 32)


def mix(layout, weights):
    return [Pattern(r, slice_starts(layout.shape, parse_read(r, layout.shape)), n) for r, n in weights]


def test_axis_lengths_are_divisors_and_powers_of_two():
    assert axis_lengths(12) == [1, 2, 3, 4, 6, 8, 12]
    assert axis_lengths(1) == [1]
    assert axis_lengths(33) == [1, 2, 3, 4, 8, 11, 16, 32, 33]


def test_candidates_stay_within_the_chunk_bytes():
    cs = candidates(SHAPE, 8, 4 << 10, 64 << 10)
    assert cs and all(4 << 10 <= math.prod(c) * 8 <= 64 << 10 for c in cs)
    assert (1, 1, 16, 32) in cs and (24, 1, 1, 32) in cs      # the per-pattern shapes are in the space
    assert candidates((4, 4), 8, 64 << 10) == [(4, 4)]        # smaller than the lower bound: the whole variable


def test_search_finds_the_least_predicted_time_of_the_mix():
    prof = default_profile()
    lay = Layout(SHAPE, 8, (1, 1, 16, 32), True, 100 << 10)
    free = lambda src, dst, codec: 0.0     # noqa: E731
    m = mix(lay, [("xy", 30), ("xt", 5)])
    res = search(lay, "deflate1", m, "netcdf4-python", prof, free, low=4 << 10, high=64 << 10, refine=400,
                 keep_codec=True)
    # the exhaustive answer: every candidate priced on all its reads
    best = None
    for ch in candidates(SHAPE, 8, 4 << 10, 64 << 10):
        lay2 = Layout(SHAPE, 8, ch, True, 100 << 10)
        t = sum(predict(lay2, p.reads, "netcdf4-python", prof, codec="deflate1", passes=p.passes).seconds for p in m)
        best = min(best or (t, ch), (t, ch))
    assert res.best.reads_s == pytest.approx(best[0], rel=1e-9)
    assert set(res.best.per_pattern) == {"xy", "xt"}
    # the answer of the mix is no worse than either pattern's own best shape, under the mix
    for only in ("xy", "xt"):
        one = search(lay, "deflate1", mix(lay, [(only, 1)]), "netcdf4-python", prof, free, low=4 << 10, high=64 << 10,
                     keep_codec=True)
        lay1 = Layout(SHAPE, 8, one.best.chunks, True, 100 << 10)
        t1 = sum(predict(lay1, p.reads, "netcdf4-python", prof, codec="deflate1", passes=p.passes).seconds for p in m)
        assert res.best.reads_s <= t1 * (1 + 1e-9)


def test_contiguous_uncompressed_is_weighed_unless_the_codec_is_kept():
    """Maps read whole from a compressed variable: contiguous storage (one request per map, no
    decode) is a candidate with its disk size, ranked against the chunk shapes by the same model;
    keep_codec leaves it out."""
    prof = default_profile()
    lay = Layout(SHAPE, 8, (1, 1, 16, 32), True, 100 << 10)
    free = lambda src, dst, codec: 0.0     # noqa: E731
    m = mix(lay, [("xy", 30)])
    res = search(lay, "deflate1", m, "netcdf4-python", prof, free, low=4 << 10, high=64 << 10, refine=400)
    contig = Layout(SHAPE, 8, None)
    t_contig = predict(contig, m[0].reads, "netcdf4-python", prof, passes=30).seconds
    ranked = {c.chunks: c for c in res.ranked}
    assert None in ranked and ranked[None].reads_s == pytest.approx(t_contig, rel=1e-9)
    assert ranked[None].codec == "none" and ranked[None].stored_bytes == contig.nbytes
    kept = search(lay, "deflate1", m, "netcdf4-python", prof, free, low=4 << 10, high=64 << 10, refine=400,
                  keep_codec=True)
    assert all(c.chunks is not None and c.codec == "deflate1" for c in kept.ranked)
    assert res.best.total_s <= kept.best.total_s * (1 + 1e-9)
    if res.best.chunks is None:
        assert any("uncompressed" in n for n in res.notes)
    # an uncompressed variable: contiguous is always in the search
    plain = search(Layout(SHAPE, 8, (1, 1, 16, 32)), "", m, "netcdf4-python", prof, free, low=4 << 10,
                   high=64 << 10, refine=400, keep_codec=True)
    assert None in {c.chunks for c in plain.ranked}


def test_a_costly_conversion_keeps_the_current_layout():
    prof = default_profile()
    lay = Layout(SHAPE, 8, (1, 1, 16, 32), True, 100 << 10)
    res = search(lay, "deflate1", mix(lay, [("xy", 1), ("xt", 1)]), "netcdf4-python", prof,
                 lambda src, dst, codec: 1e9, low=4 << 10, high=64 << 10)
    assert res.best is res.current and res.notes
    cheap = search(lay, "deflate1", mix(lay, [("xy", 1), ("xt", 50)]), "netcdf4-python", prof,
                   lambda src, dst, codec: 0.01, low=4 << 10, high=64 << 10)
    assert cheap.best is not cheap.current and cheap.best.total_s < cheap.current.total_s
    assert cheap.best.convert_s == 0.01


def test_bad_searches_are_one_line_errors():
    lay = Layout(SHAPE, 8, None)
    with pytest.raises(InputError):
        search(lay, "", [], "h5py", default_profile(), lambda *a: 0.0)
    with pytest.raises(InputError):
        search(lay, "", mix(lay, [("xy", 1)]), "h5py", default_profile(), lambda *a: 0.0, low=3000, high=3000)


def test_advise_a_mix_prints_one_layout_and_its_command(tmp_path):
    from climio.advise.recommend import advise
    from climio.data import write_4d
    src = tmp_path / "maps.nc"
    write_4d(src, [48, 2, 32, 64], chunks=[1, 1, 32, 64], deflate=1, shuffle=True, seed=2)
    a = advise(src, var="ta", reads=["xy", "xt"], passes=[30, 5], profile=default_profile())
    d = a.layout
    assert set(d["best"]["per_pattern_s"]) == {"xy", "xt"} and d["searched"] > 10
    assert d["best"]["total_s"] <= d["current"]["total_s"]
    if d["best"]["chunks"] != [1, 1, 32, 64]:
        assert d["command"].startswith(f"climio rechunk {src}")
        assert ("-c ta:" in d["command"]) != (d["best"]["chunks"] == "contiguous" and "--contiguous" in d["command"])
    assert any(line.startswith("one layout for the 2 read patterns") for line in a.lines())
    assert a.to_dict()["layout_search"] == d
    # one recommended layout per output: no item names another chunk shape (issue 35 item 2)
    shapes = [r["evidence"]["target_chunks"] for r in a.recommendations if r["rule"] == "chunk-shape"]
    assert all(list(s) == list(d["best"]["chunks"] or []) for s in shapes), (shapes, d["best"]["chunks"])


def test_advised_layout_command_runs_and_respects_unlimited_dimensions(tmp_path):
    """The command advice prints converts the file (contiguous storage of a compressed variable
    needs --compression none); a variable along an unlimited dimension is never advised contiguous
    (HDF5 needs chunks there)."""
    import subprocess
    import netCDF4
    import numpy as np
    from climio.advise.recommend import advise
    from climio.data import write_4d
    src = tmp_path / "maps.nc"
    write_4d(src, [48, 2, 32, 64], chunks=[8, 1, 8, 16], deflate=1, shuffle=True, seed=2)
    a = advise(src, var="ta", reads=["xy", "xt"], passes=[50, 1], profile=default_profile())
    d = a.layout
    if d["best"]["chunks"] == "contiguous":
        assert "--contiguous --compression none" in d["command"]
    argv = d["command"].split()
    assert argv[:2] == ["climio", "rechunk"]
    import os
    import sys
    out = subprocess.run([os.path.join(os.path.dirname(sys.executable), "climio"), *argv[1:]], capture_output=True,
                         text=True)
    assert out.returncode == 0, out.stderr
    with netCDF4.Dataset(argv[3]) as a_, netCDF4.Dataset(src) as b_:
        assert np.array_equal(a_["ta"][:], b_["ta"][:])
        want = "contiguous" if d["best"]["chunks"] == "contiguous" else d["best"]["chunks"]
        assert a_["ta"].chunking() == want
    # unlimited time: contiguous is not a candidate
    ul = tmp_path / "ul.nc"
    with netCDF4.Dataset(ul, "w") as ds:
        for n, size in (("time", None), ("lev", 2), ("lat", 32), ("lon", 64)):
            ds.createDimension(n, size)
        v = ds.createVariable("ta", "f4", ("time", "lev", "lat", "lon"), zlib=True, complevel=1,
                              chunksizes=(8, 1, 8, 16))
        v[:] = np.random.default_rng(1).random((48, 2, 32, 64), dtype=np.float32)
    a = advise(ul, var="ta", reads=["xy", "xt"], passes=[50, 1], profile=default_profile())
    assert all(c["chunks"] != "contiguous" for c in a.layout["ranked"]) and a.layout["best"]["chunks"] != "contiguous"


def test_searches_sharing_a_memo_price_each_shape_and_pattern_once(monkeypatch):
    """Several mixes of the same patterns (climio bench layouts): with a shared memo the answers are
    the same as without, and a mix whose shapes were all priced before (here the same weights
    doubled: the same ranking) simulates nothing again."""
    import climio.model.predict as model
    prof = default_profile()
    lay = Layout(SHAPE, 8, (1, 1, 16, 32), True, 100 << 10)
    cost = lambda src, dst, codec: 0.05     # noqa: E731
    kw = dict(low=4 << 10, high=64 << 10)
    memo = {}
    a = search(lay, "deflate1", mix(lay, [("xy", 30), ("xt", 5)]), "netcdf4-python", prof, cost, memo=memo, **kw)
    calls = []
    real = model.simulate
    monkeypatch.setattr(model, "simulate", lambda *x, **k: calls.append(1) or real(*x, **k))
    b = search(lay, "deflate1", mix(lay, [("xy", 60), ("xt", 10)]), "netcdf4-python", prof, cost, memo=memo, **kw)
    assert calls == []
    monkeypatch.setattr(model, "simulate", real)
    b0 = search(lay, "deflate1", mix(lay, [("xy", 60), ("xt", 10)]), "netcdf4-python", prof, cost, **kw)
    assert [c.to_dict() for c in b.ranked] == [c.to_dict() for c in b0.ranked]
    assert b.best.to_dict() == b0.best.to_dict() and a.searched == b.searched
