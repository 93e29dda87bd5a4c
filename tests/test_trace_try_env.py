"""trace try's library-variable fixes (issue 35 item 1) and its Dask chunk planner (item 4).

DASK_SCHEDULER and ZARR_ASYNC__CONCURRENCY are read by Dask and zarr themselves at import: a run
gets the variable (no sitecustomize), and its own trace records the setting in force at exit,
which is how `trace try` checks that the fix took. The planner's chunks are checked exactly."""

import os
import sys

import numpy as np
import pytest

from climio.rules.fixes import DASK_HIGH_BYTES, DASK_LOW_BYTES, dask_chunks
from climio.trace.report import measured_facts
from climio.trace.run import run_trace
from climio.trace.trying import _applied, rank
from climio.trace.trying.candidates import _zarr_concurrency, dask_scheduler
from climio.trace.trying.runs import TracedJob, run_job


@pytest.mark.parametrize("shape, file_chunks, count, itemsize, want", [
    # a series read of a one-map-per-chunk file: the whole series in as few tasks as 256 MiB allows
    ((3650, 180, 360), (1, 180, 360), (3650, 1, 1), 4, (913, 180, 360)),
    ((240, 60, 80), (1, 60, 80), (240, 1, 1), 4, (240, 60, 80)),
    # time-series chunks: whole time, grown along y until a task holds 32 MiB
    ((3650, 180, 360), (365, 18, 36), (3650, 1, 1), 4, (3650, 72, 36)),
    # maps and points of map chunks: 256 maps a task (the first power of two past 32 MiB), never one
    ((3650, 180, 360), (1, 180, 360), (1, 180, 360), 4, (256, 180, 360)),
    ((3650, 180, 360), (1, 180, 360), (1, 1, 1), 4, (256, 180, 360)),
    # a variable smaller than a task: one task
    ((100, 50, 60), (10, 10, 10), (1, 1, 1), 8, (100, 50, 60)),
])
def test_dask_chunks_planner_exact(shape, file_chunks, count, itemsize, want):
    got = dask_chunks(shape, file_chunks, count, itemsize)
    assert got == want
    # whole multiples of the file's chunks (or the whole axis), at most DASK_HIGH_BYTES, at least
    # DASK_LOW_BYTES unless the variable is smaller
    assert all(g % c == 0 or g == s for g, c, s in zip(got, file_chunks, shape))
    nbytes = int(np.prod(got)) * itemsize
    assert nbytes <= DASK_HIGH_BYTES and (nbytes >= DASK_LOW_BYTES or got == tuple(shape))
    # never one task per small chunk along the axes a series or point read spans
    assert all(g >= min(n, s) for g, n, s in zip(got, count, shape) if n > 1) or nbytes > DASK_HIGH_BYTES // 2


def test_a_fix_measured_slower_is_never_advised():
    base = {"kind": "python", "applied": True, "same_result": True, "after_s": 2.0}
    slower = {**base, "id": "1", "gain": {"1": 0.5, "10": 0.5}}
    noise = {**base, "id": "2", "gain": {"1": 1.02, "10": 1.02}}
    faster = {**base, "id": "3", "gain": {"1": 2.0, "10": 2.0}}
    out = rank.verdicts([slower, noise, faster], 1)
    assert [r["id"] for r in out if r["advised"]] == ["3"]
    assert out[-1]["status"] == "tried: 2.0x slower" and not out[-1]["advised"]


ZARR_JOB = """import zarr
a = zarr.open_array("v.zarr", mode="r")
print(float(a[:].sum()))
"""


def test_zarr_concurrency_reaches_zarr_through_its_variable(tmp_path, monkeypatch):
    import zarr
    zarr.create_array(str(tmp_path / "v.zarr"), shape=(40, 30), chunks=(10, 30), dtype="f4")[:] = np.ones((40, 30), "f4")
    (tmp_path / "job.py").write_text(ZARR_JOB)
    monkeypatch.chdir(tmp_path)
    assert run_trace([sys.executable, "job.py"], out=tmp_path / "tr") == 0
    facts = measured_facts(tmp_path / "tr")
    finding = {"evidence": {"advised": 37, "could_save_s": 0.5}}
    c = _zarr_concurrency(1, finding, facts)
    assert c.kind == "env" and c.env == {"ZARR_ASYNC__CONCURRENCY": "37"} and not c.not_tried
    assert "zarr.config.set({'async.concurrency': 37})" in c.advice["python"]
    job = TracedJob([sys.executable, "job.py"], str(tmp_path), [], [])
    run = run_job(job, dict(c.env), tmp_path / "run", [])
    assert run["exit_status"] == 0 and run["stdout"].strip() == "1200.0"
    assert run["settings"]["zarr_async_concurrency"] == 37
    assert _applied(c, [run], None) == (True, "")
    plain = run_job(job, {}, tmp_path / "plain", [])             # the default in force: not the fix
    ok, why = _applied(c, [plain], None)
    assert not ok and "not '37'" in why
    # a job that never imported zarr: the variable would do nothing, so it is not tried
    facts.objects["settings"].pop("zarr_async_concurrency")
    assert _zarr_concurrency(1, finding, facts).not_tried.startswith("the job did not read through zarr")


def test_dask_scheduler_candidate_only_for_a_threaded_dask_job_on_netcdf(tmp_path):
    class F:
        objects = {"settings": {"dask_array": True, "dask_scheduler": None}}
    c = dask_scheduler(4, F, 12)
    assert c.env == {"DASK_SCHEDULER": "synchronous"} and c.id == "4" and c.kind == "env"
    assert dask_scheduler(4, F, 0) is None             # dask.array imported (xarray does), no read on its threads
    F.objects = {"settings": {"dask_array": True, "dask_scheduler": "synchronous"}}
    assert dask_scheduler(4, F, 12) is None
    F.objects = {"settings": {}}                                   # no Dask at all
    assert dask_scheduler(4, F, 12) is None


def test_a_job_on_dask_threads_tries_dask_chunks_before_a_rechunk():
    """climio bench advice's seasonal climatology on time-series chunks: item 1's rechunk measured 0.92x
    at P = 10 while its Dask-chunks way gave 2.08x. A job whose reads already ran on Dask's threads
    gets the way with no conversion first (1a); a job without Dask keeps the rechunk first."""
    from types import SimpleNamespace
    from climio.trace.trying.candidates import candidates
    var = {"file": "/data/tas.nc", "var": "tas", "shape": [1095, 90, 180], "itemsize": 4, "dims": ["time", "lat", "lon"]}
    facts = SimpleNamespace(stack="xarray", netcdf={"variables": [var]}, objects={}, run={"process_time_s": 10.0})
    finding = {"rule": "partial-chunk-compressed", "title": "Partial reads of compressed chunks", "advice": "rechunk",
               "evidence": {"file": var["file"], "var": "tas", "chunks": [1095, 9, 18], "typical_count": [1, 90, 180],
                            "target_chunks": [1, 90, 180], "could_save_s": 5.0}}
    on_dask = candidates(facts, [finding], threaded_reads=40)
    assert [(c.id, c.kind) for c in on_dask if c.item == 1] == [("1a", "python"), ("1b", "layout")]
    plain = candidates(facts, [finding], threaded_reads=0)
    assert [(c.id, c.kind) for c in plain if c.item == 1] == [("1a", "layout"), ("1b", "python")]
