"""Honest records (issues 17, 12, 15): every cold record of the calibration and of the predictor's
runner carries the storage-share check; a probe that hangs is killed by the one streamer; no
verdict is drawn from cells the page cache served; the validation shows its worst configurations
and its repetitions that were not cold, and calls its target met or not met."""

import os
import time
from types import SimpleNamespace

import pytest

from climio.machine import cache
from climio.measure import tasks as runner
from climio.bench.calibrate import run as calib
from climio.dataset.description import stored_bytes
from climio.bench.calibrate.summary import profile_from_records
from climio.bench.predict import section as predict_section
from climio.bench.read_stack import study as read_stack
from climio.bench.read_stack.summary import profile_table
from climio.bench.stsa.summary import checks as stsa_checks
from climio.bench.stsa.summary import summarise as stsa_summarise
from climio.data.writer import write_4d
from climio.base.errors import NativeError
from climio.runs.records import make_record
from climio.present.render import page
from climio.present.sections import Note, Table
from test_measure import assert_cold
from test_read_stack_study import thesis_records
from test_report import MiB

SHARE_KEYS = {"effective", "storage_share"}


def not_evicted(paths, state):
    """cache.prepare as the issue-17 bug had it: says cold, evicted nothing."""
    return {"state": "cold", "requested": state, "method": "none (test)", "resident_fraction": 1.0,
            "verified_by": "test"}


@pytest.fixture(scope="module")
def calib_files(tmp_path_factory):
    d = tmp_path_factory.mktemp("calib")
    return calib.make_files(SimpleNamespace(size_bytes=4 << 20, codec_list=["deflate1"]), str(d))


def collect():
    out = []
    return out, out.append


# --- item 1: the storage-share check on calibration and runner records --------------------------------

def test_calibrate_cold_records_read_what_they_need_from_storage(calib_files):
    recs, emit = collect()
    calib.storage(calib_files["raw"], 4 << 20, 1, emit, "pid0")
    calib.cold_extra(calib_files, 1, emit, "pid0")
    calib.parallel(calib_files, "deflate1", [1], 1, emit, "pid0")
    cold = [r for r in recs if r["cache"]["state"] == "cold"]
    kinds = {(r["params"]["kind"], r["params"].get("pattern") or r["params"].get("what")) for r in cold}
    assert kinds == {("storage", "sequential"), ("storage", "strided"), ("cold-extra", "cold"), ("parallel", "io")}
    for r in cold:
        assert SHARE_KEYS <= set(r["cache"]), r["params"]
        assert_cold(r)
    storage = [r for r in cold if r["params"]["kind"] == "storage"]
    assert all(r["metrics"]["storage_needed_bytes"] == r["metrics"]["bytes"] for r in storage)
    (par,) = [r for r in cold if r["params"]["kind"] == "parallel"]
    assert par["metrics"]["storage_needed_bytes"] == 4 << 20
    warm = [r for r in recs if r["cache"]["state"] == "warm"]
    assert warm and all(r["cache"]["effective"] == "warm" for r in warm)


def test_calibrate_warm_rate_is_of_pages_a_cold_read_brought_in(calib_files, monkeypatch):
    # the page-cache copy rate depends on how the pages entered the cache (large folios): the warm
    # storage records evict the file and read it in sequentially before timing, as a cold read would
    evicted = []
    real_evict = calib.cache.evict
    monkeypatch.setattr(calib.cache, "evict", lambda p: (evicted.append(p), real_evict(p)))
    recs, emit = collect()
    calib.storage(calib_files["raw"], 4 << 20, 1, emit, "pid0")
    warm = [r for r in recs if r["params"]["pattern"] == "warm"]
    assert warm and all(r["cache"]["state"] == "warm" and "evicted, then read in" in r["cache"]["method"]
                        for r in warm)
    assert len(evicted) == len(recs)        # one eviction per record, cold or warm


def test_calibrate_cache_effect_records_read_what_they_need(tmp_path, monkeypatch):
    # the study's decode file at a smaller shape (its x-t reads decode every chunk many times)
    monkeypatch.setattr(calib, "DECODE_SHAPE", (16, 2, 32, 128))
    monkeypatch.setattr(calib, "DECODE_CHUNKS", (4, 1, 32, 128))
    path = calib._nc(str(tmp_path / "decode-deflate1.nc"), calib.DECODE_SHAPE, calib.DECODE_CHUNKS, "deflate1")
    recs, emit = collect()
    calib.cache_effect({"decode-deflate1": path}, "deflate1", 1, emit, "pid0")
    assert [r["params"]["what"] for r in recs] == ["off", "fit"]
    for r in recs:
        assert SHARE_KEYS <= set(r["cache"]) and r["metrics"]["storage_needed_bytes"] == stored_bytes(path, "ta")
        assert_cold(r)


def test_calibrate_marks_page_cache_reads_and_the_fit_leaves_them_out(calib_files, monkeypatch):
    raw = calib_files["raw"]
    honest, emit = collect()
    calib.storage(raw, 4 << 20, 1, emit, "pid0")
    cache.warm(raw)
    monkeypatch.setattr(cache, "prepare", not_evicted)
    served, emit = collect()
    calib.storage(raw, 4 << 20, 1, emit, "pid0")
    monkeypatch.undo()
    for r in served:
        c = r["cache"]
        assert c["effective"] == "effectively-warm" and c["storage_share"] < 0.1, r["params"]
        assert r["metrics"]["storage_needed_bytes"] == r["metrics"]["bytes"]
    # the fit: page-cache "cold" records would make storage look far faster; they are left out
    from climio.model.fit import fit
    from climio.model.profile import default_profile
    both = profile_from_records(honest + served, "pid0")
    alone = profile_from_records(honest, "pid0")
    assert both.rate_Bps["sequential"] == alone.rate_Bps["sequential"]
    assert both.latency_s["strided"] == alone.latency_s["strided"]
    unfiltered = fit(honest + served, "pid0", base=default_profile("pid0"))
    assert unfiltered.rate_Bps["sequential"] != alone.rate_Bps["sequential"]
    from climio.bench.calibrate.section import section as calib_section
    notes = [b.text for b in calib_section(honest + served).blocks if isinstance(b, Note)]
    assert notes == [f"{len(served)} cold record(s) read far less from storage than their reads need (effectively "
                     "warm: the page cache served them); the profile is fitted without them."]


@pytest.fixture(scope="module")
def small_nc(tmp_path_factory):
    path = tmp_path_factory.mktemp("runner") / "ta.nc"
    write_4d(path, [16, 2, 32, 64], chunks="contiguous", seed=3, random=True)
    return str(path)


XT_READS = [((0, z, y, 0), (16, 1, 1, 64)) for z in range(2) for y in range(32)]
NEEDED = 16 * 2 * 32 * 64 * 8


@pytest.mark.parametrize("tasks", [1, 2])
def test_runner_c_netcdf_records_carry_the_storage_share(small_nc, tasks):
    recs = runner.measure(small_nc, "ta", XT_READS, "c-netcdf", tasks=tasks, reps=1, needed_bytes=NEEDED)
    (r,) = recs
    assert SHARE_KEYS <= set(r["cache"]) and r["metrics"]["storage_needed_bytes"] == NEEDED
    assert_cold(r)
    # bytes needed far beyond what a read of the file can fetch: the record must say effectively warm
    (r,) = runner.measure(small_nc, "ta", XT_READS, "c-netcdf", tasks=tasks, reps=1, needed_bytes=100 * NEEDED)
    assert r["cache"]["effective"] == "effectively-warm" and r["cache"]["storage_share"] < 0.05


# --- item 2: a hung serial probe is killed within its timeout ------------------------------------------

@pytest.fixture
def hung_probe(tmp_path, monkeypatch):
    pids = tmp_path / "pids"
    exe = tmp_path / "climio-probe-netcdf-slab"
    exe.write_text(f"#!/bin/sh\necho $$ >> {pids}\nexec sleep 30\n")
    exe.chmod(0o755)
    monkeypatch.setenv("CLIMIO_NATIVE_BIN", str(tmp_path))
    return pids


def assert_killed(pids):
    for pid in map(int, pids.read_text().split()):
        for _ in range(50):
            try:
                os.kill(pid, 0)
            except ProcessLookupError:
                break
            time.sleep(0.1)
        else:
            pytest.fail(f"probe {pid} still running")


@pytest.mark.parametrize("tasks", [1, 2])
def test_runner_kills_a_hung_probe(small_nc, hung_probe, tasks):
    with pytest.raises(NativeError, match=r"^climio-probe-netcdf-slab did not finish within 1 s and was killed$"):
        runner.measure(small_nc, "ta", XT_READS, "c-netcdf", tasks=tasks, reps=1, needed_bytes=NEEDED, timeout_s=1)
    assert len(hung_probe.read_text().split()) == tasks
    assert_killed(hung_probe)


def test_interrupted_runner_kills_every_task_s_probe(small_nc, hung_probe):
    """Ctrl-C reaches the main thread only (each probe runs in its own session): the probes the other
    tasks' threads stream must be killed too, not left to run on."""
    import signal
    import threading

    def interrupt_when_both_started():
        for _ in range(100):
            if hung_probe.exists() and len(hung_probe.read_text().split()) == 2:
                break
            time.sleep(0.05)
        os.kill(os.getpid(), signal.SIGINT)

    from climio.runs import stopping
    previous = stopping.install()      # Ctrl-C as climio's main handles it, whatever earlier tests set
    try:
        threading.Thread(target=interrupt_when_both_started, daemon=True).start()
        with pytest.raises(KeyboardInterrupt):
            runner.measure(small_nc, "ta", XT_READS, "c-netcdf", tasks=2, reps=1, needed_bytes=NEEDED, timeout_s=60)
    finally:
        stopping.restore(previous)
    assert len(hung_probe.read_text().split()) == 2
    assert_killed(hung_probe)


def test_calibrate_kills_a_hung_probe(small_nc, hung_probe):
    with pytest.raises(NativeError, match=r"^climio-probe-netcdf-slab did not finish within 1 s and was killed$"):
        calib._probe(small_nc, XT_READS[:2], 1, timeout_s=1)
    assert_killed(hung_probe)


# --- item 3: no verdict from effectively-warm cells -----------------------------------------------------

def served_by_page_cache(records, pred):
    for r in records:
        if pred(r):
            r["cache"] = dict(r["cache"], effective="effectively-warm", storage_share=0.02)
    return records


def test_read_stack_hump_leaves_out_page_cache_cells():
    nc_big = lambda r: r["params"]["layer"] == "netcdf4-python" and r["params"]["buffer_bytes"] >= 64 * MiB
    recs = served_by_page_cache(thesis_records(), nc_big)
    (nc,) = [p for p in profile_table(recs) if p["layer"] == "netcdf4-python"]
    assert nc["effectively_warm"] == 5 and nc["warm"] == 0      # 64 MiB .. 1 GiB
    hump = read_stack.findings(recs)[2]
    assert hump.verdict == "not decidable"
    assert "cold repetitions read from the page cache at 64MiB" in hump.text and "storage share 2%" in hump.text
    sec = read_stack.section(recs)
    (table,) = [b for b in sec.blocks if isinstance(b, Table) and b.headers and b.headers[0] == "layer"
                and "profile" in b.headers]
    (row,) = [r for r in table.rows if r[0] == "netcdf4-python"]
    assert "5 configuration(s) effectively warm" in row[-1]
    # the peak cell alone served by the page cache: left out, the rest still decides the hump
    recs = served_by_page_cache(thesis_records(), lambda r: r["params"]["layer"] == "netcdf4-python"
                                and r["params"]["buffer_bytes"] == 1 * MiB)
    hump = read_stack.findings(recs)[2]
    assert hump.verdict == "reproduced" and "left out: cold repetitions read from the page cache at 1MiB" in hump.text
    assert "peak 300 MB/s at 1MiB" not in hump.text


def stsa_record(layout, rep, wall, effective="cold", workers=1, mode="io"):
    nbytes = 512 << 20
    params = {"layout": layout, "chunks": "contiguous" if layout == "contiguous" else [16, 1, 1, 64],
              "compression": "none", "workers": workers, "mode": mode, "n_tasks": 2, "file_bytes": nbytes,
              "preset": "full"}
    metrics = {"bytes": nbytes, "wall_s": wall, "task_wall_s": [wall, wall], "task_cpu_s": [0.1 * wall] * 2}
    state = {"state": "cold", "effective": effective}
    if effective != "cold":
        state["storage_share"] = 0.02
    return make_record("stsa", params, metrics, state, rep, "ok", "pid0")


def test_stsa_one_warm_job_takes_the_verdict_from_its_cell():
    recs = [stsa_record("contiguous", i, 10.0 + 0.01 * i) for i in range(3)]
    recs += [stsa_record("xt", i, 1.0 + 0.01 * i, "effectively-warm" if i == 2 else "cold") for i in range(3)]
    by = {c["id"]: c for c in stsa_checks(recs)}
    assert by["F12"]["verdict"] == "reproduced"                   # contiguous only: all cold
    assert by["F14"]["verdict"] == "not decidable"                # uses the x-t cell: 1 of 3 jobs warm
    assert "page cache: 1 of 3 jobs of xt 1w io read from the page cache" in by["F14"]["text"]
    assert stsa_summarise(recs)["warm_cells"] == ["xt 1w io (1 of 3)"]
    # all cold: the x-t cell decides
    recs[-1] = stsa_record("xt", 2, 1.02)
    assert {c["id"]: c for c in stsa_checks(recs)}["F14"]["verdict"] == "reproduced"


# --- item 4: the validation's worst configurations, not-cold repetitions, target met / not met --------

def predict_record(cfg, pred, meas, rep, effective="cold"):
    layout, read, stack, tasks = cfg.split("/")
    params = {"config": cfg, "layout": layout, "read": read, "stack": stack, "tasks": int(tasks[:-1]),
              "compression": "none", "chunks": "contiguous", "predicted_s": pred,
              "predicted": {"io_s": pred, "decode_s": 0.0, "cpu_s": 0.0, "bound": f"io-{layout}",
                            "path": ["contiguous", f"{read} read", "sequential"]}}
    return make_record("predict", params, {"bytes": 1, "wall_s": meas}, {"state": "cold", "effective": effective},
                       rep, "ok", "pid0")


def predict_records(factors, warm_config=None):
    recs = []
    for i, f in enumerate(factors):
        cfg = f"lay{i}/xt/netcdf4-python/1t"
        for rep in range(3):
            eff = "effectively-warm" if cfg == warm_config and rep == 0 else "cold"
            recs.append(predict_record(cfg, f, 1.0, rep, eff))
    return recs


def test_predict_section_shows_worst_and_not_cold_and_target():
    recs = predict_records([1.0, 1.1, 0.9, 1.2, 8.0, 0.2, 1.05], warm_config="lay4/xt/netcdf4-python/1t")
    sec = predict_section.section(recs)
    (worst,) = [b for b in sec.blocks if isinstance(b, Table) and "gets worst" in (b.caption or "")]
    col = {h: i for i, h in enumerate(worst.headers)}
    assert [r[0] for r in worst.rows][:5] == ["lay4/xt/netcdf4-python/1t", "lay5/xt/netcdf4-python/1t",
                                          "lay3/xt/netcdf4-python/1t", "lay2/xt/netcdf4-python/1t",
                                          "lay1/xt/netcdf4-python/1t"]
    first = worst.rows[0]
    assert first[col["bound"]] == "io-lay4" and first[col["flowchart path"]] == "contiguous -> xt read -> sequential"
    assert first[col["not cold"]] == "1 of 3" and worst.rows[1][col["not cold"]] == ""
    (per_config,) = [b for b in sec.blocks if isinstance(b, Table) and "Per configuration" in (b.caption or "")]
    assert [r[-1] for r in per_config.rows if r[-1]] == ["1 of 3"]
    notes = [b.text for b in sec.blocks if isinstance(b, Note)]
    assert any("1 configuration(s) had repetitions that were not cold" in t and "lay4/" in t for t in notes)
    html = page("t", [], [sec])
    assert "configurations the model gets worst" in html and "io-lay4" in html
    (f,) = predict_section.findings(recs)
    assert f.verdict == "not met" and "target (median within 1.3x, 90% within 2.0x, all within 3.0x):" in f.text
    assert "worst lay4/xt/netcdf4-python/1t (8.00x, io-lay4)" in f.text
    (f,) = predict_section.findings(predict_records([1.0, 1.1, 0.9, 1.2]))
    assert f.verdict == "met" and "target (median within 1.3x, 90% within 2.0x, all within 3.0x):" in f.text
