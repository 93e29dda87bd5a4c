"""`climio bench stsa` (thesis Table 6.1) at a tiny size: valid records with per-task timings,
a cold cache verified, a summary with every finding F12-F18 marked, and a report that renders."""

import pytest

from climio import api
from climio.bench import base, registry
from climio.base.errors import InputError
from climio.runs.records import SCHEMA_VERSION, read_records, to_frame
from climio.report import render_report
from climio.present.sections import VERDICTS


def test_stsa_study_tiny_run_records_and_report(tmp_path):
    run_dir = api.run_study("stsa", preset="quick", out=tmp_path / "run", data_dir=tmp_path / "data",
                            progress=False, report=False, shape="16,2,8,64", layouts="contiguous,xt,default+deflate1",
                            workers="1", modes="io,cpu", reps=1, tasks=4)
    recs = read_records(run_dir)
    assert len(recs) == 3 * 2 and {r["study"] for r in recs} == {"stsa"}
    for r in recs:
        m, p = r["metrics"], r["params"]
        assert r["schema"] == SCHEMA_VERSION and r["status"] == "ok"
        assert p["workers"] == 1 and p["n_tasks"] == 4 and p["mode"] in ("io", "cpu")
        assert m["bytes"] == 16 * 2 * 8 * 64 * 8 and m["wall_s"] > 0
        assert m["rate_MBps"] == pytest.approx(m["bytes"] / m["wall_s"] / 1e6)
        for key in ("task_wall_s", "task_cpu_s", "task_read_wall_s", "task_compute_wall_s", "task_worker"):
            assert len(m[key]) == 4
        assert r["cache"]["requested"] == "cold" and r["cache"]["verified_by"] == "mincore"
        # the HDF5 chunk cache the tasks read with: none for the contiguous layout, the whole cache else
        cc = p["chunk_cache"]
        if p["chunks"] == "contiguous":
            assert cc is None
        else:
            assert cc["nbytes"] > 0 and cc["nslots"] > 0 and 0 <= cc["w0"] <= 1 and cc["source"]
            assert p["task_chunk_cache_bytes"] == [cc["nbytes"]] * 4 or len(p["task_chunk_cache_bytes"]) == 4
    assert {r["params"]["chunks"] if isinstance(r["params"]["chunks"], str) else tuple(r["params"]["chunks"])
            for r in recs} >= {"contiguous", (16, 1, 1, 64)}
    df = to_frame(recs)
    assert set(df["compression"]) == {"none", "deflate1"}
    study = registry.get("stsa")
    s = study.summarise(recs)
    assert [c["id"] for c in s["checks"]] == [f"F{i}" for i in range(12, 19)]
    assert all(c["verdict"] in VERDICTS for c in s["checks"])
    assert s["decidable"] is False   # a quick grid decides nothing
    html = render_report(run_dir).read_text()
    assert "Study: stsa" in html and "Table 6.1" in html and "F14" in html and "not decidable" in html
    assert "data:image/png;base64" in html
    assert not list((tmp_path / "data").glob("*.nc"))   # generated layouts removed


def test_stsa_grid_errors_are_one_line():
    study = registry.get("stsa")
    with pytest.raises(InputError, match="unknown layout"):
        study.grid("quick", layouts="contiguous,zigzag")
    with pytest.raises(InputError, match="cannot be compressed"):
        study.grid("quick", layouts="contiguous+deflate4")
    with pytest.raises(InputError, match="mode"):
        study.grid("quick", modes="io,gpu")
    g = study.survey_grid(quick=True)
    assert g.preset == "quick" and g.runs() <= 16
