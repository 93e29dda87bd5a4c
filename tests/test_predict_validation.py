"""The predictor's validation study (issue 26, part 2): configurations drawn from a declared space
with a seed, and a real (small) run of it: records with the prediction, the stack's chunk cache
and the chunk reads both simulated and counted from HDF5."""

import math

import pytest

from climio.bench.predict import build_grid
from climio.bench.predict.space import CHUNK_BYTES, MAX_BYTES, SPACE, draw
from climio.bench.predict.summary import summarise
from climio.base.errors import InputError
from climio.model import profile as profmod


def test_the_draw_is_the_seeds_and_covers_the_space():
    a, b, c = draw(40, 1), draw(40, 1), draw(40, 2)
    assert a == b and a != c
    for cfgs in (a, c):
        for axis, key in (("stack", "stack"), ("read", "read_kind"), ("tasks", "tasks"), ("dtype", "dtype")):
            assert {getattr(x, key) for x in cfgs} == set(SPACE[axis]), axis
        assert {x.cache_bytes is None for x in cfgs} == {True, False}
        assert any(x.chunks is None for x in cfgs)
        chunked = [x for x in cfgs if x.chunks is not None]
        assert {x.codec for x in chunked} == set(SPACE["codec"])
        # edge chunks: a chunk length that does not divide its dimension
        assert any(d % ch for x in chunked for d, ch in zip(x.shape, x.chunks))
        for x in cfgs:
            assert math.prod(x.shape) * x.itemsize <= MAX_BYTES
            if x.chunks is not None:
                assert CHUNK_BYTES[0] <= math.prod(x.chunks) * x.itemsize <= CHUNK_BYTES[1]
            else:
                assert x.codec == "none"
        assert len({x.id for x in cfgs}) == len(cfgs)


def test_grid_checks_its_values():
    g = build_grid("quick", seed=7)
    assert (g.configs, g.seed) == (30, 7) and build_grid("full").configs >= 100
    with pytest.raises(InputError):
        build_grid("quick", configs=0)
    with pytest.raises(InputError):
        build_grid("quick", seed="x")


def test_a_small_validation_run_counts_what_hdf5_reads(tmp_path):
    """Six drawn configurations measured for real (one repetition): every chunked one carries the
    stack's chunk cache and the chunk reads HDF5 made, equal to the model's where one process reads."""
    import climio
    prof = tmp_path / "profile.json"
    prof.write_text(profmod.default_profile("validation-test").to_json())
    run = climio.run_study("predict", preset="quick", out=tmp_path / "run", report=False, progress=False,
                           configs=6, seed=3, reps=1, max_s=30.0, profile=str(prof))
    from climio.runs.records import read_records
    recs = [r for r in read_records(run) if r["study"] == "predict"]
    assert {r["params"]["config"] for r in recs} == {c.id for c in draw(6, 3)}
    ok = [r for r in recs if r["status"] == "ok"]
    assert ok and all(r["metrics"]["wall_s"] > 0 for r in ok)
    for r in ok:
        p = r["params"]
        if p["chunks"] != "contiguous":
            assert set(p["chunk_cache"]) == {"nbytes", "nslots", "w0"}
            if p["tasks"] == 1 or p["simulated"]["chunk_reads"] == 0:
                assert round(p["simulated"]["chunk_reads"]) == p["measured_counts"]["chunk_reads"], p["config"]
    s = summarise(recs)
    assert s["n"] == len({r["params"]["config"] for r in ok})
    assert s["max_factor"] >= s["p90_factor"] >= s["median_factor"] >= 1.0
