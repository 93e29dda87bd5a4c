"""climio predict / advise / calibrate --from: the commands, the Python API, the rule registry
shared by workflows, traces and Darshan logs, and one-line errors for bad input."""

import json
import sys

import numpy as np
import pytest

from climio.dataset.access import slice_starts
from climio.dataset.reads import read_count as parse_read
from climio.model import profile as profmod
from climio import profiles as on_disk
from climio.model.fit import fit as fit_records
from climio import rules
from climio.advice import recommend
from climio.advice.measured import advise_measured
from climio.rules import predicted
from climio.model.profile import Profile, StackRates
from climio.api import predict as predict_api
from climio.model.workflow import ReadSpec, Workflow
from climio.dataset.options import parse_compression
from climio.data.writer import write_4d
from climio.model.rates import Rates
from climio.trace.report import measured_facts
from conftest import run_cli
from test_cli import one_line_error
from trace_synth import SynthProc

MS = 1_000_000
SHAPE = (16, 2, 32, 64)


def synthetic(pid="synthetic") -> Profile:
    s = StackRates(call_s=50e-6, chunk_s=2e-6, piece_s=0.1e-6, copy_Bps=5e9, open_s=1e-3, chunk_cache_bytes=1 << 20)
    return Profile(platform_id=pid, latency_s={"sequential": 5e-6, "strided": 100e-6, "warm": 1e-6},
                   rate_Bps={"sequential": [[4096, 1e9]], "strided": [[4096, 2e8]], "warm": [[4096, 4e9]]},
                   stacks={"netcdf4-python": s, "h5py": StackRates(call_s=10e-6, chunk_cache_bytes=1 << 20)},
                   decode_Bps={"deflate4+shuffle": 300e6}, parallel={"cores": 2, "io": {"2": 1.5}, "cpu": {"2": 1.9}})


@pytest.fixture
def profiles(tmp_path, monkeypatch):
    monkeypatch.setenv("CLIMIO_PROFILE_DIR", str(tmp_path / "profiles"))
    return tmp_path / "profiles"


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    d = tmp_path_factory.mktemp("advise-data")
    out = {"contiguous": d / "contiguous.nc", "packed": d / "packed.nc"}
    write_4d(out["contiguous"], SHAPE, chunks="contiguous")
    write_4d(out["packed"], SHAPE, chunks=[8, 2, 16, 32], compression=parse_compression("deflate4+shuffle"))
    return out


def test_workflow_advice_names_xt_chunks_with_command_cost_and_break_even(files):
    wf = Workflow(str(files["contiguous"]), "ta", [ReadSpec("stsa", passes=4)], 1)
    adv = recommend.advise_workflow(wf, synthetic())
    # more nodes may gain more (the synthetic profile has no shared-file-system ceiling): ranked by gain
    gains = [r["gain_s"] for r in adv.ranked()]
    assert gains == sorted(gains, reverse=True)
    top = next(r for r in adv.ranked() if r["rule"] == "chunk-shape")
    assert top["after_s"] < top["before_s"] / 2
    # the xt read's chunks [16,1,1,64] are 8 KiB: grown along y to the 64 KiB bound rechunk warns about
    assert top["command"].endswith(f"-c ta:{SHAPE[0]},1,8,{SHAPE[3]}")
    assert top["command"].startswith(f"climio rechunk {files['contiguous']} ")
    assert top["one_off_s"] > 0 and top["break_even_passes"] == pytest.approx(
        top["one_off_s"] / ((top["before_s"] - top["after_s"]) / 4))
    assert {r["id"] for r in rules.table("workflow")} >= {"chunk-shape", "chunk-cache", "tasks",
                                                          "stack", "compression", "one-file-vs-many"}
    text = "\n".join(adv.lines())
    assert "command: climio rechunk" in text and "pays back after" in text


def test_partial_compressed_reads_recommend_cache_or_chunks_and_tasks(files):
    wf = Workflow(str(files["packed"]), "ta", [ReadSpec("xt")], 2, "h5py")
    adv = recommend.advise_workflow(wf, synthetic())
    fired = {r["rule"] for r in adv.recommendations}
    assert "one-file-vs-many" in fired and ({"chunk-shape", "compression", "chunk-cache"} & fired)
    # ranked by gain
    ranked = adv.ranked()
    gains = [r["gain_s"] for r in ranked if r["gain_s"] is not None]
    assert gains == sorted(gains, reverse=True) and len(gains) == len(ranked)


def _partial_trace(d, nc_file, dur=MS):
    """netCDF reads of x-t slabs of a compressed variable with chunks [8,2,16,32]: each read
    decodes whole chunks for one row of them."""
    p = SynthProc(pid=1)
    for z in range(SHAPE[1]):
        for y in range(0, SHAPE[2], 4):
            p.leaf("nc_get_vara_double", "netcdf", dur=dur, file=str(nc_file), var="ta", size=SHAPE[0] * SHAPE[3] * 8,
                   aux={"start": [0, z, y, 0], "count": [SHAPE[0], 1, 1, SHAPE[3]], "shape": list(SHAPE),
                        "chunks": [8, 2, 16, 32], "itemsize": 8, "cache_bytes": 1 << 20, "compressed": True,
                        "filters": ["deflate"]})
    p.write(d)


def _fitting_trace(d, nc_file):
    """_partial_trace with its reads timed as the model predicts them (on synthetic()): a job the model
    fits, so the advice carries its scaled predictions (issue 35: an unfitting model ranks nothing)."""
    from climio.advice.measured import _scaled
    _partial_trace(d.with_name(d.name + "-model"), nc_file)
    facts = measured_facts(d.with_name(d.name + "-model"))
    v = next(v for v in facts.netcdf["variables"] if v["var"] == "ta")
    model_s = _scaled(v, facts, synthetic(), None)["recommendations"][0]["evidence"]["model_same_reads_s"]
    _partial_trace(d, nc_file, dur=int(model_s / v["reads"] * 1e9))


def test_trace_advice_names_the_fix_with_a_prediction(tmp_path, files, profiles):
    _fitting_trace(tmp_path / "trace", files["packed"])
    adv = advise_measured(measured_facts(tmp_path / "trace"), synthetic())
    assert not [n for n in adv.notes if "does not fit" in n]
    f = next(r for r in adv.recommendations if r["rule"] == "partial-chunk-compressed")
    assert "climio rechunk" in f["advice"]
    assert f["command"].startswith(f"climio rechunk {files['packed']} ") and "-c ta:16,1,8,64" in f["command"]
    assert f["before_s"] > f["after_s"] and f["break_even_passes"] is not None
    # the CLI, with a profile of another platform: a warning line, then the advice
    on_disk.save(synthetic("elsewhere"))
    out = run_cli("advise", tmp_path / "trace")
    assert out.returncode == 0, out.stderr
    assert "[partial-chunk-compressed]" in out.stdout and "climio rechunk" in out.stdout


def test_one_registry_every_rule_written_once():
    """One registry below the studies: no alias module, no second list, one function per rule; the
    trace and Darshan inputs are judged by the same rules, collective-vs-independent by all three."""
    from pathlib import Path
    import climio
    src = Path(climio.__file__).parent
    assert not (src / "trace" / "advice.py").exists() and not (src / "advise" / "rules.py").exists()
    measured = {"small-requests", "random-access", "partial-chunk-compressed", "chunk-cache-small",
                "independent-shared-writes", "close-truncate", "below-library-min-read", "file-per-process-imbalance",
                "collective-vs-independent"}
    # a climio trace also holds the job's object-store requests (issue 36), which a Darshan log does not
    objects = {"object-concurrency", "object-small-chunks", "object-repeated", "object-head-list",
               "object-netcdf-byte-range"}
    assert {r["id"] for r in rules.table("darshan")} == measured
    assert {r["id"] for r in rules.table("trace")} == measured | objects
    assert {x["id"] for x in rules.table() if "darshan" in x["inputs"] and "workflow" in x["inputs"]} \
        == {"collective-vs-independent"}
    bodies = [r.judge for r in rules.REGISTRY.values()]
    assert len(set(bodies)) == len(bodies) == len(rules.table())
    assert all(r["needs"] and r["evidence"] and r["looks_for"] for r in rules.table())


def test_predict_cli_breakdown_flowchart_and_check(files, profiles):
    on_disk.save(synthetic("elsewhere"))
    out = run_cli("predict", files["packed"], "--var", "ta", "--read", "xt", "--check", "--reps", "1")
    assert out.returncode == 0, out.stderr
    assert "I/O" in out.stdout and "decode" in out.stdout and "parallel factor" in out.stdout
    assert "flowchart: chunked [8,2,16,32] -> partial chunks" in out.stdout and "compressed (deflate4+shuffle)" in out.stdout
    assert "check xt: predicted" in out.stdout and "measured" in out.stdout
    warn = [l for l in out.stderr.splitlines() if l.strip()]
    assert len(warn) == 1 and warn[0].startswith("climio: warning: no profile for this platform") and "elsewhere" in warn[0]
    js = json.loads(run_cli("predict", files["contiguous"], "--read", "xy", "--read", "xt", "--tasks", "2",
                            "--json").stdout)
    assert len(js["reads"]) == 2 and js["tasks"] == 2 and js["reads"][1]["prediction"]["path"][0] == "contiguous"


def test_predict_api_on_path_and_dataset(files):
    import xarray as xr
    p = predict_api(files["contiguous"], var="ta", read="xt", profile=synthetic())
    reads = slice_starts(SHAPE, parse_read("xt", SHAPE))
    assert p.items[0][3].counts.calls == len(reads) and "flowchart" in str(p)
    with xr.open_dataset(files["packed"]) as ds:
        q = predict_api(ds, var="ta", read=["xt", "xy"], profile=synthetic())
    assert [s.read for s, _, _, _ in q.items] == ["xt", "xy"] and q.items[0][1].chunks == (8, 2, 16, 32)
    import climio
    assert climio.predict is predict_api


def test_bad_input_is_one_line(files, profiles, tmp_path):
    msg = one_line_error(run_cli("predict", files["contiguous"], "--var", "ta", "--read", "99,1,1,X"), 2)
    assert "bigger than variable ta" in msg
    msg = one_line_error(run_cli("predict", files["contiguous"], "--var", "ta", "--read", "xt", "--stack", "fortran"), 2)
    assert "unknown stack 'fortran'" in msg
    msg = one_line_error(run_cli("advise", files["contiguous"], "--var", "nope", "--read", "xt"), 3)
    assert "no variable 'nope'" in msg
    (tmp_path / "wf.yaml").write_text(f"file: {files['contiguous']}\nvar: ta\nreads:\n  - read: xt\n    passes: 0\n")
    msg = one_line_error(run_cli("predict", "--workflow", tmp_path / "wf.yaml"), 2)
    assert "passes 0" in msg
    # a profile from another platform: a warning, and the prediction still comes
    other = tmp_path / "other.json"
    other.write_text(synthetic("another-machine").to_json())
    out = run_cli("predict", files["contiguous"], "--var", "ta", "--read", "xy", "--profile", other)
    assert out.returncode == 0 and "predicted" in out.stdout
    lines = [l for l in out.stderr.splitlines() if l.strip()]
    assert len(lines) == 1 and lines[0].startswith("climio: warning:") and "another-machine" in lines[0] \
        and "not this one" in lines[0]


def test_calibrate_from_run_dir_and_rates_for_the_planner(tmp_path, profiles):
    run = tmp_path / "run"
    run.mkdir()
    recs = [{"study": "calibrate", "status": "ok", "platform_id": "pid-x", "cache": {"state": "cold"}, "rep": 0,
             "time": "2026-01-01T00:00:00+00:00",
             "params": {"kind": "storage", "pattern": "sequential", "request_bytes": s, "stack": "posix"},
             "metrics": {"wall_s": 100 * (2e-6 + s / 1.5e9), "ops": 100}} for s in (4096, 1 << 20)]
    (run / "records.jsonl").write_text("".join(json.dumps(r) + "\n" for r in recs))
    out = run_cli("calibrate", "--from", run)
    assert out.returncode == 0, out.stderr
    # storage records only: every stack keeps the built-in rates, and the summary says so
    assert "stacks at built-in default rates (not measured here): c-netcdf, h5netcdf, h5py, netcdf4-python, " \
           "xarray" in out.stdout
    prof = on_disk.load(profiles / "pid-x.json")
    assert prof.source == "runs" and prof.latency("sequential") == pytest.approx(2e-6)
    assert prof.rate("sequential", 1 << 20) == pytest.approx(1.5e9)
    r = Rates.from_profile(prof, "deflate4+shuffle")
    assert r.read_Bps == pytest.approx(1.5e9) and r.decode_Bps == prof.decode("deflate4+shuffle")
    msg = one_line_error(run_cli("calibrate", "--from", tmp_path), 3)   # bad data, as every command (exit-code table)
    assert "not a run directory" in msg


def test_rechunk_dry_run_predicts_from_the_calibrated_profile(files, profiles, tmp_path):
    from climio.machine.platform import platform_id_here as platform_id_of
    args = ("rechunk", files["contiguous"], tmp_path / "out.nc", "-c", f"ta:{SHAPE[0]},1,1,{SHAPE[3]}", "--dry-run")
    before = run_cli(*args)
    assert before.returncode == 0 and "calibrated profile" not in before.stdout + before.stderr
    slow = synthetic(platform_id_of(files["contiguous"]))
    slow.rate_Bps["sequential"] = [[4096, 1e6]]          # 1 MB/s: the plan must predict far longer
    on_disk.save(slow)
    after = run_cli(*args)
    text = after.stdout + after.stderr
    assert after.returncode == 0 and f"calibrated profile {slow.platform_id}" in text

    def predicted(t):
        import re
        return float(re.search(r"predicted ([0-9.e+-]+) s", t).group(1))
    assert predicted(text) > 10 * predicted(before.stdout + before.stderr)


def test_darshan_log_advice_names_collective_io():
    import darshan   # a dependency of climio: missing, the test fails
    from pathlib import Path
    logs = list(Path(darshan.__file__).parent.rglob("shane_macsio_id29959_5-22-32552-7035573431850780836_1590156158.darshan"))
    assert logs, "the darshan wheel ships the MACSio example log this test reads"
    adv = advise_measured(measured_facts(logs[0]))
    assert adv.kind == "darshan"
    f = next(r for r in adv.ranked() if r["rule"] == "small-requests")
    assert "collective" in f["advice"].lower() and f["severity"] in ("high", "medium", "low")
    assert "darshan" in rules.REGISTRY["small-requests"].inputs
    # the same registry's collective-vs-independent rule on the log: independent MPI-IO writes
    c = next(r for r in adv.ranked() if r["rule"] == "collective-vs-independent")
    assert "independent MPI-IO calls" in c["message"] and "read rates" in c["message"] and c["gain_s"] is None
    assert c["evidence"]["issued_by"]["independent_mpiio"] >= 7695 and "NC_COLLECTIVE" in c["advice"]


def _mpiio_profile(independent=100.0, collective=400.0) -> Profile:
    """The synthetic profile with parallel-read MPI-IO records: striding reads at 2 tasks (the
    pattern of small strided pieces) and sequential ones that must not be chosen."""
    prof = synthetic()
    prof.records = [{"params": {"experiment": "mpiio", "access": a, "pattern": pat, "ranks": 2}, "rate_MBps": r}
                    for pat, a, r in (("striding", "independent", independent), ("striding", "collective", collective),
                                      ("sequential", "independent", 500.0), ("sequential", "collective", 510.0))]
    return prof


def test_profile_carries_the_parallel_read_mpiio_rates():
    """calibrate --from a parallel-read run: its cold MPI-IO records become the per (access, pattern,
    ranks) median rates the collective-vs-independent rule reads; warm or page-cache ones do not."""
    from climio.model.fit import fit

    def rec(access, rate, state="cold", effective=None, pattern="striding"):
        cache = {"state": state, **({"effective": effective} if effective else {})}
        return {"study": "parallel-read", "status": "ok", "cache": cache, "metrics": {"rate_MBps": rate},
                "params": {"experiment": "mpiio", "access": access, "pattern": pattern, "ranks": 2}}
    recs = [rec("independent", r) for r in (90.0, 100.0, 130.0)] + [rec("collective", r) for r in (400.0, 380.0)]
    recs += [rec("collective", 9000.0, state="warm"), rec("independent", 9000.0, effective="effectively-warm")]
    prof = fit(recs, "test-platform")
    assert predicted.mpiio_rates(prof, 2) == {"independent": 100.0, "collective": 390.0, "pattern": "striding", "ranks": 2}
    assert predicted.mpiio_rates(fit([r for r in recs if r["params"]["access"] == "collective"], "p"), 2) == {}


def test_tasks_and_nodes_one_line_and_the_shared_file_system_ceiling(files):
    from climio.model.predict import predict
    from climio.dataset.description import layout_of
    wf = Workflow(str(files["contiguous"]), "ta", [ReadSpec("xt", passes=2)], 1)
    prof = synthetic()
    # no shared-file-system bandwidth in the profile: tasks on this node only, more nodes not predicted
    (alone,) = [r for r in recommend.advise_workflow(wf, prof).recommendations if r["rule"] == "tasks"]
    assert alone["evidence"]["nodes"] == 1 and "more nodes not predicted" in alone["message"]
    assert {c[1] for c in alone["evidence"]["candidates"]} == {1}
    # a shared file system far faster than any node count needs: the nodes add up
    prof.parallel["shared_fs_Bps"] = 1e15
    recs = [r for r in recommend.advise_workflow(wf, prof).recommendations if r["rule"] == "tasks"]
    assert len(recs) == 1
    t, ev = recs[0], recs[0]["evidence"]
    n, nodes = ev["tasks_per_node"], ev["nodes"]
    assert nodes > 1 and "the shared file system caps the nodes at" in t["message"]
    assert f"mpirun -n {n * nodes} --map-by ppr:{n}:node" in t["command"]
    # after: the model's prediction of the same reads, n tasks on each of `nodes` nodes
    lay = layout_of(files["contiguous"], "ta")[0]
    reads = slice_starts(SHAPE, parse_read("xt", SHAPE))
    after = predict(lay, reads, "netcdf4-python", prof, tasks=n, nodes=nodes, passes=2)
    assert t["after_s"] == pytest.approx(after.seconds, rel=1e-12)
    # most of the gain with the fewest tasks: no configuration with fewer tasks reaches it
    goal = t["before_s"] - predicted.MOST_OF_THE_GAIN * (t["before_s"] - ev["best"][2])
    assert t["after_s"] <= goal and all(c[2] > goal for c in ev["candidates"] if c[0] * c[1] < n * nodes)
    # a shared file system that 2 nodes of 2 tasks fill: fewer nodes reach most of the gain
    del prof.parallel["shared_fs_Bps"]
    one = predict(lay, reads, "netcdf4-python", prof)
    cold = sum(b for (pat, _), b in ((k, k[1] * v) for k, v in one.counts.requests.items()) if pat != "warm")
    prof.parallel["shared_fs_Bps"] = cold / (one.io_s / 1.5 / 2)
    capped = next(r for r in recommend.advise_workflow(wf, prof).recommendations if r["rule"] == "tasks")
    assert capped["evidence"]["nodes"] < nodes and "the shared file system caps the nodes at" in capped["message"]
    assert capped["evidence"]["shared_fs_Bps"] == prof.parallel["shared_fs_Bps"]


def test_collective_vs_independent_for_a_workflow(files):
    wf = Workflow(str(files["contiguous"]), "ta", [ReadSpec("xt")], 2)
    adv = recommend.advise_workflow(wf, synthetic())
    r = next(r for r in adv.recommendations if r["rule"] == "collective-vs-independent")
    assert r["gain_s"] is None and "no prediction" in r["message"] and "F10" in r["message"]
    assert r["evidence"]["piece_bytes"] == SHAPE[3] * 8 and "NC_COLLECTIVE" in r["advice"]
    # with the profile's MPI-IO records: the I/O scaled by independent / collective (striding, 2 tasks)
    adv = recommend.advise_workflow(wf, _mpiio_profile())
    r = next(r for r in adv.recommendations if r["rule"] == "collective-vs-independent")
    p = adv.prediction.items[0][3]
    assert r["after_s"] == pytest.approx(p.seconds - p.io_s + p.io_s * 100 / 400, rel=1e-12)
    assert r["before_s"] == pytest.approx(p.seconds) and "independent 100 MB/s, collective 400 MB/s" in r["message"]
    # records that find collective no faster, one task, or compressed chunks: the rule stays silent
    for wf2, prof in ((wf, _mpiio_profile(400.0, 380.0)),
                      (Workflow(str(files["contiguous"]), "ta", [ReadSpec("xt")], 1), _mpiio_profile()),
                      (Workflow(str(files["packed"]), "ta", [ReadSpec("xt")], 2), _mpiio_profile())):
        assert "collective-vs-independent" not in {r["rule"] for r in recommend.advise_workflow(wf2, prof).recommendations}


def _small_reads_in_mpiio(d, func):
    """Two ranks, each making 150 MPI-IO reads of 4 KiB that reach the file as 8 preads of 512 B."""
    for rank in range(2):
        p = SynthProc(pid=700 + rank, rank=rank)
        for k in range(150):
            with p.span(func, "mpiio", before=1000, file="/m.nc", offset=-1, size=4096):
                for j in range(8):
                    p.leaf("pread64", "posix", dur=1000, file="/m.nc", offset=(k * 2 + rank) * 4096 + j * 512, size=512)
        p.write(d)


def test_collective_vs_independent_for_a_trace(tmp_path):
    _small_reads_in_mpiio(tmp_path / "ind", "MPI_File_read_at")
    adv = advise_measured(measured_facts(tmp_path / "ind"), _mpiio_profile())
    small = next(r for r in adv.recommendations if r["rule"] == "small-requests")
    r = next(r for r in adv.recommendations if r["rule"] == "collective-vs-independent")
    assert r["before_s"] == pytest.approx(small["evidence"]["time_s"]) and r["before_s"] > 0
    assert r["after_s"] == pytest.approx(r["before_s"] * 100 / 400) and "NC_COLLECTIVE" in r["advice"]
    assert r["evidence"]["issued_by"]["independent_mpiio"] == 2400 and r["severity"] == small["severity"]
    # no MPI-IO records: the evidence, no prediction
    r = next(r for r in advise_measured(measured_facts(tmp_path / "ind"), synthetic()).recommendations
             if r["rule"] == "collective-vs-independent")
    assert r["gain_s"] is None and "no parallel-read MPI-IO records" in r["message"]
    # collective calls that still reach the file in small pieces: collective buffering
    _small_reads_in_mpiio(tmp_path / "coll", "MPI_File_read_at_all")
    r = next(r for r in advise_measured(measured_facts(tmp_path / "coll"), _mpiio_profile()).recommendations
             if r["rule"] == "collective-vs-independent")
    assert r["gain_s"] is None and "romio_cb_read" in r["advice"] and "did not aggregate" in r["message"]


def test_trace_of_a_file_here_gets_the_workflow_rules(tmp_path, files):
    _fitting_trace(tmp_path / "trace", files["packed"])
    adv = advise_measured(measured_facts(tmp_path / "trace"), synthetic())
    by = {}
    for r in adv.recommendations:
        by.setdefault(r["rule"], []).append(r)
    assert {"tasks", "compression", "stack"} <= set(by)
    for rule in ("tasks", "compression", "stack"):
        r = by[rule][0]
        assert r["message"].startswith(f"ta of {files['packed']}, its traced reads of [16, 1, 1, 64] by 1 task: ")
        assert r["after_s"] < r["before_s"]
    assert by["compression"][0]["command"] == f"climio rechunk {files['packed']} " \
        f"{str(files['packed']).replace('.nc', '-rechunked.nc')} --var ta --compression none"
    # the chunk shape is told once, through the trace finding it backs
    assert "chunk-shape" not in by and by["partial-chunk-compressed"][0]["gain_s"] > 0


def test_one_file_vs_many_predicts_the_opens(tmp_path, files):
    other = tmp_path / "other.nc"
    write_4d(other, SHAPE, chunks="contiguous")
    prof = synthetic()
    wf = Workflow(str(files["contiguous"]), "ta", [ReadSpec("xt"), ReadSpec("xy", file=str(other))], 1)
    adv = recommend.advise_workflow(wf, prof)
    r = next(r for r in adv.recommendations if r["rule"] == "one-file-vs-many")
    open_s = prof.stack("netcdf4-python").open_s
    assert r["before_s"] == pytest.approx(adv.prediction.seconds + 2 * open_s, rel=1e-12)
    assert r["gain_s"] == pytest.approx(open_s, rel=1e-9) and r["one_off_s"] > 0
    assert r["break_even_passes"] == pytest.approx(r["one_off_s"] / open_s) and "opens 2 files" in r["message"]
    # several tasks on one file: each opens one file either way, the same time predicted
    adv = recommend.advise_workflow(Workflow(str(files["contiguous"]), "ta", [ReadSpec("xt")], 2), prof)
    r = next(r for r in adv.recommendations if r["rule"] == "one-file-vs-many")
    assert r["before_s"] == r["after_s"] == pytest.approx(adv.prediction.seconds + open_s) and r["gain_s"] == 0
    assert "predicts the same" in r["message"] and "no change predicted" in "\n".join(adv.lines())


def test_calibrate_says_what_it_measured_and_which_stacks_are_defaults(tmp_path, profiles, monkeypatch):
    from typer.testing import CliRunner
    import climio.api
    from climio.cli import advise as _registers_calibrate, app   # noqa: F401
    seen = {}

    def fake_run_study(study, preset, out, data_dir, report, stacks, **_):
        """The calibration's fit on records of netcdf4-python alone, as --quick leaves h5netcdf."""
        seen.update(preset=preset, data_dir=data_dir)
        rec = {"study": "calibrate", "status": "ok", "params": {"kind": "stack-call", "stack": "netcdf4-python",
                                                                  "calls": 1000, "pieces": 1000, "bytes_wanted": 0,
                                                                  "requests": []}, "metrics": {"wall_s": 0.01}}
        prof = fit_records([rec], "pid-q", base=profmod.default_profile("pid-q"))
        on_disk.save(prof, tmp_path / "run" / on_disk.PROFILE_NAME)
        return tmp_path / "run"
    monkeypatch.setattr(climio.api, "run_study", fake_run_study)
    res = CliRunner().invoke(app, ["calibrate", "--quick", "-o", str(tmp_path / "run")])
    assert res.exit_code == 0, res.output
    warn = [l for l in res.stderr.splitlines() if l.startswith("climio: warning:")]
    assert len(warn) == 1 and "temporary directory" in warn[0] and "--data-dir DIR" in warn[0]
    assert "stacks at built-in default rates (not measured here): c-netcdf, h5netcdf, h5py, xarray" in res.stderr
    res = CliRunner().invoke(app, ["calibrate", "--quick", "-o", str(tmp_path / "run"), "--data-dir", str(tmp_path)])
    assert res.exit_code == 0 and "warning" not in res.stderr and seen["data_dir"] == tmp_path
    # bad options: the one error line, no warning before it
    assert "unknown stack 'fortran'" in one_line_error(run_cli("calibrate", "--stacks", "fortran"), 2)


# --- advice from a measured run starts from what was measured (issue 26.4); it weighs what I/O costs and
# --- speaks the program's stack (27.7); chunk shapes within rechunk's bounds (27.5) -------------------------

READS_PY = """import netCDF4
ds = netCDF4.Dataset({path!r})
v = ds['ta']
for z in range({nz}):
    for y in range({ny}):
        v[:, z, y, :]
ds.close()
"""


def _traced_job(tmp_path, shape, chunks, nz, ny):
    """A real job traced by `climio trace run`: netCDF4-python reading nz x ny x-t slabs of a
    deflate-compressed variable with chunks `chunks` (each slab decodes whole chunks it partly needs)."""
    f, script, trace = tmp_path / "job.nc", tmp_path / "job.py", tmp_path / "trace"
    write_4d(f, shape, chunks=list(chunks), compression=parse_compression("deflate4+shuffle"))
    script.write_text(READS_PY.format(path=str(f), nz=nz, ny=ny))
    out = run_cli("trace", "run", "-o", trace, "--", sys.executable, script)
    assert out.returncode == 0, out.stderr
    return f, trace


def _slow(pid="slow") -> Profile:
    """The synthetic profile with 10 kB/s storage and 50 ms per request: the model predicts far more
    than any trace here measured, however loaded the machine."""
    prof = synthetic(pid)
    for pat in ("sequential", "strided"):
        prof.rate_Bps[pat] = [[4096, 1e4]]
        prof.latency_s[pat] = 0.05
    return prof


@pytest.mark.parametrize("shape,chunks,nz,ny", [((16, 2, 32, 64), (8, 2, 16, 32), 1, 2),          # 2 reads
                                                ((64, 4, 64, 128), (16, 2, 16, 32), 4, 64)],      # 256 reads
                         ids=["small-job", "large-job"])
def test_trace_advice_starts_from_the_traced_time(tmp_path, shape, chunks, nz, ny):
    """A model more than 2x from the trace (10 kB/s against a local disk) does not fit the job: one note
    says so without the model's raw time, and the items are the trace's, ranked by the traced I/O
    (issue 35 item 2); no item claims more than the traced I/O time."""
    _, trace = _traced_job(tmp_path, shape, chunks, nz, ny)
    facts = measured_facts(trace)
    io = facts.run["io_time_s"]
    var = next(v for v in facts.netcdf["variables"] if v["var"] == "ta")
    assert var["reads"] == nz * ny and 0 < var["time_s"] <= io
    adv = advise_measured(facts, _slow())
    assert not [r for r in adv.recommendations if "traced_s" in r["evidence"]], adv.lines()
    assert [r["rule"] for r in adv.recommendations] == [f["rule"] for f in rules.judge(facts)]
    for r in adv.recommendations:      # no item claims more than the traced I/O time
        assert (r["evidence"].get("could_save_s") or 0) <= io * (1 + 1e-12), r
    assert all(r["command"].startswith("climio rechunk ") for r in adv.recommendations
               if r["rule"] == "partial-chunk-compressed")       # the trace's own command, runnable
    (note,) = [n for n in adv.notes if "does not fit" in n]
    assert note.startswith("the model does not fit this job") and "ranked by the traced I/O" in note
    text = "\n".join(adv.lines())
    assert "predicted" not in text and "model's times" not in text and "profile )" not in text
    assert "no I/O change can save more than that" in adv.verdict or "could save at most that" in adv.verdict


XARRAY_PY = """import time
import xarray as xr
ds = xr.open_dataset({path!r})
for z in range(2):
    for y in range(32):
        ds["ta"][:, z, y, :].values
t = time.time()
while time.time() - t < 1.5:   # the computation: the run is not I/O-bound
    pass
"""


def test_trace_advice_weighs_the_run_and_speaks_xarray(tmp_path):
    """An xarray job whose traced I/O is a small share of the run: no item is [high], the advice says
    I/O is not the bottleneck, and the fixes are xarray's (chunks= matching the file's chunks, the chunk
    cache through the engine), which run as printed."""
    import re
    import xarray as xr
    f, script, trace = tmp_path / "x.nc", tmp_path / "x.py", tmp_path / "trace"
    write_4d(f, SHAPE, chunks=[8, 2, 16, 32], compression=parse_compression("deflate4+shuffle"))
    script.write_text(XARRAY_PY.format(path=str(f)))
    out = run_cli("trace", "run", "-o", trace, "--", sys.executable, script)
    assert out.returncode == 0, out.stderr
    facts = measured_facts(trace)
    assert facts.stack == "xarray" and facts.run["io_share"] < 0.10
    found = rules.judge(facts)
    partial = next(x for x in found if x["rule"] == "partial-chunk-compressed")
    # severity follows the share of the run the item could save, not its share of the (tiny) I/O time
    # (by its share of I/O time, as before, it would be at least medium)
    assert partial["evidence"]["share_of_io_time"] >= rules.MEDIUM_SHARE > partial["evidence"]["share_of_run"]
    assert all(x["severity"] == "low" for x in found)
    assert rules.verdict(facts).startswith("I/O is not the bottleneck")
    text = run_cli("trace", "report", trace)
    assert text.returncode == 0 and "I/O is not the bottleneck" in text.stdout and "[high]" not in text.stdout
    # fixes in the program's own stack, runnable as printed
    advice = " ".join(x["advice"] for x in found)
    assert "H5Pset_sieve_buf_size" not in advice and "numpy.memmap" not in advice
    assert "xr.open_dataset(" in partial["advice"]
    with xr.open_dataset(f) as ds:
        dims = list(ds["ta"].dims)
    cache_fix = rules.fixes.chunk_cache("xarray", str(f), "ta", 4 << 20, [8, 2, 16, 32], dims)
    snippets = [s for s in re.findall(r"`([^`]+)`", partial["advice"] + " " + cache_fix) if s.startswith("xr.")]
    assert len(snippets) >= 2
    for code in snippets:
        with eval(code, {"xr": xr}) as ds:
            chunks = ds["ta"].chunks
            # Dask chunks: whole multiples of the file's chunks (issue 35 item 4)
            assert chunks is None or all(c[0] % k == 0 for c, k in zip(chunks, [8, 2, 16, 32])), code
            assert float(ds["ta"][0, 0, 0, 0]) == pytest.approx(float(xr.open_dataset(f)["ta"][0, 0, 0, 0]))


def test_trace_fixes_follow_the_program_stack(tmp_path):
    """The same small unchunked library reads: a C program is told HDF5's sieve buffer, an xarray
    script is told what xarray can do."""
    for prog, script in (("native", None), ("xarray", "import xarray as xr\n")):
        d = tmp_path / prog
        p = SynthProc(pid=1)
        for i in range(20):
            with p.span("H5Dread", "hdf5", before=1000, file="/h.h5", var="/x", size=800):
                p.leaf("pread64", "posix", dur=50_000, file="/h.h5", offset=i * 1_000_000, size=65536)
        p.write(d)
        command = ["./model"] if script is None else [sys.executable, str(tmp_path / "s.py")]
        if script:
            (tmp_path / "s.py").write_text(script)
        (d / "meta.json").write_text(json.dumps({"format": 1, "command": command, "cwd": str(tmp_path)}))
        f = next(x for x in rules.judge(measured_facts(d)) if x["rule"] == "below-library-min-read")
        if prog == "native":
            assert "H5Pset_sieve_buf_size" in f["advice"]
        else:
            assert "H5Pset_sieve_buf_size" not in f["advice"] and "ds[VAR][i0:i1]" in f["advice"]


def test_advised_chunks_respect_the_bounds_rechunk_warns_about(tmp_path, profiles):
    """Time series at points of a [730,1,18,36] float32 variable: the read's own shape [730,1,1,1]
    is 2.9 KiB per chunk, which `climio rechunk` warns about; the advice grows it past 64 KiB, for a
    trace and for a workflow, and rechunk then has nothing to warn about."""
    import re
    import shlex
    from climio.rules.chunks import SMALL_CHUNK_BYTES
    shape = (730, 1, 18, 36)
    f = tmp_path / "series.nc"
    write_4d(f, shape, chunks=[73, 1, 18, 36], dtype="f4", compression=parse_compression("deflate4+shuffle"))
    p = SynthProc(pid=1)
    for k in range(40):
        p.leaf("nc_get_vara_float", "netcdf", dur=MS, file=str(f), var="ta", size=730 * 4,
               aux={"start": [0, 0, k % 18, k % 36], "count": [730, 1, 1, 1], "shape": list(shape),
                    "chunks": [73, 1, 18, 36], "itemsize": 4, "cache_bytes": 1 << 20, "compressed": True,
                    "filters": ["deflate"]})
    p.write(tmp_path / "trace")
    partial = next(x for x in rules.judge(measured_facts(tmp_path / "trace")) if x["rule"] == "partial-chunk-compressed")
    trace_cmd = re.search(r"`(climio rechunk [^`]+)`", partial["advice"]).group(1)
    wf = Workflow(str(f), "ta", [ReadSpec("730,1,1,1", passes=20)], 1)
    shape_rec = next(r for r in recommend.advise_workflow(wf, synthetic()).recommendations if r["rule"] == "chunk-shape")
    for cmd in (trace_cmd, shape_rec["command"]):
        spec = shlex.split(cmd)[shlex.split(cmd).index("-c") + 1]
        chunks = [int(c) for c in spec.split(":")[1].split(",")]
        assert chunks[0] == 730 and 4 * np.prod(chunks) >= SMALL_CHUNK_BYTES, cmd
        out = run_cli("rechunk", f, tmp_path / "out.nc", "-c", spec, "--dry-run")
        assert out.returncode == 0, out.stderr
        assert "below 64 KiB" not in out.stdout + out.stderr, out.stdout + out.stderr


def test_rechunk_face_is_a_plain_function(tmp_path):
    """climio.rechunk(...) and climio.advise(...) are the package's functions, also after their
    implementations (the subpackages climio.rechunking and climio.advice) are imported; the package
    is a plain module (no class swapped in to keep the names)."""
    import types
    import climio
    import climio.advice.recommend  # noqa: F401
    import climio.rechunking.spec  # noqa: F401
    from climio.rechunking import convert
    assert type(sys.modules["climio"]) is types.ModuleType
    assert type(sys.modules["climio.rechunking"]) is types.ModuleType
    assert isinstance(climio.rechunk, types.FunctionType) and callable(convert)
    assert isinstance(climio.advise, types.FunctionType) and isinstance(climio.advice, types.ModuleType)
    assert climio.rechunking is sys.modules["climio.rechunking"]
    src = tmp_path / "in.nc"
    write_4d(src, SHAPE, chunks="contiguous")
    summary = climio.rechunk(src, tmp_path / "out.nc", chunks={"ta": [16, 1, 8, 64]}, workers=1)
    assert summary and (tmp_path / "out.nc").is_file()


def test_chunk_cache_advice_compares_with_the_cache_the_library_really_has(tmp_path):
    """The profile says the stack's cache is 1 MiB; netCDF-C opens this variable with a larger one
    (it sizes caches per variable): a map read touching 3 MiB of partial compressed chunks, which the
    next map shares, fits the library's real cache, so no chunk-cache advice; told to use 1 MiB
    (--chunk-cache), it fires."""
    path = tmp_path / "xy.nc"
    write_4d(path, (64, 1, 96, 128), chunks=[64, 1, 3, 128], compression=parse_compression("deflate4+shuffle"))
    import netCDF4
    with netCDF4.Dataset(path) as ds:
        real = ds["ta"].get_var_chunk_cache()[0]
    assert real > 4 << 20, f"netCDF-C opened the variable with only {real} B of cache"
    reads = [ReadSpec("xy", passes=3)]
    fired = {r["rule"] for r in recommend.advise_workflow(Workflow(str(path), "ta", reads, 1), synthetic()).recommendations}
    assert "chunk-cache" not in fired
    small = recommend.advise_workflow(Workflow(str(path), "ta", reads, 1, chunk_cache=1 << 20), synthetic())
    rec = next(r for r in small.recommendations if r["rule"] == "chunk-cache")
    assert rec["evidence"]["cache_bytes"] == 1 << 20 and rec["evidence"]["touched_bytes_max"] == 32 * 64 * 3 * 128 * 8
