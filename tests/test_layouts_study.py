"""climio bench layouts: the summary's arithmetic exactly on hand-made records, the grid's options,
and one small real run (a calibrated profile from the quick-studies fixture, real conversions with
climio rechunk, cold reads) whose records hold what the study promises."""

import json

import pytest


from climio.bench.layouts import DEFAULT_MIXES, MIN_SHAPES, build_grid, parse_mix
from climio.bench.layouts.summary import summarise
from climio.base.errors import InputError


def _rec(kind, status="ok", wall=0.0, **params):
    return {"study": "layouts", "status": status, "params": {"kind": kind, **params}, "metrics": {"wall_s": wall},
            "cache": {"state": "cold"}, "rep": 0}


def test_summary_totals_ratio_and_default_exactly():
    recs = [_rec("search", mix="xy:3,xt:1", advised="[4,1,8,8]", advised_predicted={"total_s": 2.0}),
            _rec("convert", chunks="[1,1,8,8]", why="the file as it is", wall=0.0),
            _rec("convert", chunks="[4,1,8,8]", why="advised for xy:3,xt:1", wall=1.0),
            _rec("convert", chunks="[16,1,8,8]", why="library default", wall=2.0)]
    times = {("[1,1,8,8]", "xy"): [0.1, 0.3, 0.2], ("[1,1,8,8]", "xt"): [5.0],
             ("[4,1,8,8]", "xy"): [0.2], ("[4,1,8,8]", "xt"): [1.0],
             ("[16,1,8,8]", "xy"): [0.5], ("[16,1,8,8]", "xt"): [0.4]}
    for (shape, pat), walls in times.items():
        recs += [_rec("read", wall=w, chunks=shape, pattern=pat, predicted_s=0.1) for w in walls]
    recs.append(_rec("read", status="dnf", chunks="[1,1,8,8]", pattern="xyt", predicted_s=99.0))
    s = summarise(recs)
    (m,) = s["mixes"]
    t = m["totals"]
    assert t["[1,1,8,8]"]["total_s"] == pytest.approx(3 * 0.2 + 5.0)          # median of the xy repetitions
    assert t["[4,1,8,8]"]["total_s"] == pytest.approx(3 * 0.2 + 1.0 + 1.0)
    assert t["[16,1,8,8]"]["total_s"] == pytest.approx(3 * 0.5 + 0.4 + 2.0)
    assert m["best"] == "[4,1,8,8]" and m["ratio_to_best"] == pytest.approx(1.0) and m["rank_of_advised"] == 1
    # the library default as written that way (its reads alone) against the advised reads + conversion
    assert m["default"] == "[16,1,8,8]" and m["speedup_over_default"] == pytest.approx(1.9 / 2.6)
    assert s["meets_target"] and s["n_shapes"] == 3
    # a pattern not read on a shape (dnf) leaves that shape out of the mixes that need it
    recs[0]["params"]["mix"] = "xy:1,xyt:1"
    assert summarise(recs)["mixes"] == []


def test_mixes_and_grid_are_checked():
    assert parse_mix("xy:30, xt:5") == ("xy:30,xt:5", [("xy", 30), ("xt", 5)])
    assert parse_mix("xt") == ("xt:1", [("xt", 1)])
    for bad in ("xy:0", "xz:1", "xy:1,xy:2", "xy:a", ""):
        with pytest.raises(InputError):
            parse_mix(bad)
    g = build_grid("full")
    assert len(g.mix_list) == len(DEFAULT_MIXES) >= 6 and g.dims == (1440, 1, 64, 128)
    assert [m for m, _ in build_grid("quick").mix_list] == ["xy:1", "xt:1", "xy:30,xt:5"]
    with pytest.raises(InputError):
        build_grid("quick", reps=0)


def test_a_small_run_converts_reads_and_compares(quick_study_runs):
    """The session's small layouts run (conftest.quick_study_runs: --shape 128,1,32,32, mixes xy:4,xt:1
    and xt:1, one repetition, the quick calibration's profile)."""
    out = quick_study_runs["layouts"]
    recs = [json.loads(line) for line in (out / "records.jsonl").read_text().splitlines()]
    searches = [r for r in recs if r["params"]["kind"] == "search"]
    converts = {r["params"]["chunks"]: r for r in recs if r["params"]["kind"] == "convert"}
    reads = [r for r in recs if r["params"]["kind"] == "read" and r["status"] == "ok"]
    assert [r["params"]["mix"] for r in searches] == ["xy:4,xt:1", "xt:1"]
    assert len(converts) >= MIN_SHAPES and "contiguous" in converts and "[1,1,32,32]" in converts
    assert converts["[1,1,32,32]"]["metrics"]["wall_s"] == 0.0             # the file as it is: no conversion
    assert all(c["metrics"]["wall_s"] > 0 for k, c in converts.items() if k != "[1,1,32,32]")
    # every converted file held the chunks asked for, and every read was cold
    assert all(r["params"]["file_chunks"] == r["params"]["chunks"] for r in reads)
    assert all(r["cache"]["state"] == "cold" for r in reads)
    for s in searches:
        assert s["params"]["advised"] in converts
    s = summarise(recs)
    assert len(s["mixes"]) == 2
    for m in s["mixes"]:
        assert m["advised_total_s"] is not None and m["ratio_to_best"] >= 1.0
        assert m["best_total_s"] == min(t["total_s"] for t in m["totals"].values())
    assert not list((out.parent / "layouts-data").rglob("*.nc")), "converted files left behind"


def test_the_best_keeping_the_codec_leaves_out_uncompressed_contiguous():
    recs = [_rec("search", mix="xy:1", advised="[4,1,8,8]", advised_predicted={"total_s": 1.0}),
            _rec("convert", chunks="[4,1,8,8]", why="advised", wall=0.5),
            _rec("convert", chunks="contiguous", why="contiguous", wall=0.5),
            _rec("read", wall=1.0, chunks="[4,1,8,8]", pattern="xy", compression="deflate1"),
            _rec("read", wall=0.2, chunks="contiguous", pattern="xy", compression="none")]
    (m,) = summarise(recs)["mixes"]
    assert m["best"] == "contiguous" and m["ratio_to_best"] == pytest.approx(1.5 / 0.7)
    assert m["best_same_codec"] == "[4,1,8,8]" and m["ratio_to_best_same_codec"] == pytest.approx(1.0)
