"""One layout for several read patterns (issue 26, part 3): the search over chunk shapes
(climio.model.layout_search) and its place in `climio advise`."""

import math

import pytest

from climio.access import slice_starts
from climio.errors import InputError
from climio.layout import Layout
from climio.model.layout_search import Pattern, axis_lengths, candidates, search
from climio.model.predict import predict
from climio.model.profile import default_profile
from climio.options import parse_read

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
    res = search(lay, "deflate1", m, "netcdf4-python", prof, free, low=4 << 10, high=64 << 10, refine=400)
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
        one = search(lay, "deflate1", mix(lay, [(only, 1)]), "netcdf4-python", prof, free, low=4 << 10, high=64 << 10)
        lay1 = Layout(SHAPE, 8, one.best.chunks, True, 100 << 10)
        t1 = sum(predict(lay1, p.reads, "netcdf4-python", prof, codec="deflate1", passes=p.passes).seconds for p in m)
        assert res.best.reads_s <= t1 * (1 + 1e-9)


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
        assert d["command"].startswith(f"climio rechunk {src}") and "-c ta:" in d["command"]
    assert any(line.startswith("one layout for the 2 read patterns") for line in a.lines())
    assert a.to_dict()["layout_search"] == d
