"""climio predict / advise / calibrate --from: the commands, the Python API, the rule registry
shared by workflows, traces and Darshan logs, and one-line errors for bad input."""

import json

import pytest

from climio.access import slice_starts
from climio.options import parse_read
from climio.advise import profile as profmod
from climio.advise import recommend, rules
from climio.advise.profile import Profile, StackRates
from climio.advise.workflow import ReadSpec, Workflow, predict_api
from climio.options import parse_compression
from climio.data.writer import write_4d
from climio.rechunk.plan import Rates
from climio.trace import advice as trace_advice
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
    top = adv.ranked()[0]
    assert top["rule"] == "chunk-shape" and top["after_s"] < top["before_s"] / 2
    assert top["command"].endswith(f"-c ta:{SHAPE[0]},1,1,{SHAPE[3]}")
    assert top["command"].startswith(f"climio rechunk {files['contiguous']} ")
    assert top["one_off_s"] > 0 and top["break_even_passes"] == pytest.approx(
        top["one_off_s"] / ((top["before_s"] - top["after_s"]) / 4))
    assert {r["id"] for r in rules.REGISTRY if "workflow" in r["inputs"]} >= {"chunk-shape", "chunk-cache", "tasks",
                                                                             "stack", "compression", "one-file-vs-many"}
    text = "\n".join(adv.lines())
    assert "command: climio rechunk" in text and "pays back after" in text


def test_partial_compressed_reads_recommend_cache_or_chunks_and_tasks(files):
    wf = Workflow(str(files["packed"]), "ta", [ReadSpec("xt")], 2, "h5py")
    adv = recommend.advise_workflow(wf, synthetic())
    fired = {r["rule"] for r in adv.recommendations}
    assert "one-file-vs-many" in fired and ({"chunk-shape", "compression", "chunk-cache"} & fired)
    # gains first, predictions-free rules last
    ranked = adv.ranked()
    gains = [r["gain_s"] for r in ranked if r["gain_s"] is not None]
    assert gains == sorted(gains, reverse=True) and ranked[-1]["gain_s"] is None


def _partial_trace(d, nc_file):
    """netCDF reads of x-t slabs of a compressed variable with chunks [8,2,16,32]: each read
    decodes whole chunks for one row of them."""
    p = SynthProc(pid=1)
    for z in range(SHAPE[1]):
        for y in range(0, SHAPE[2], 4):
            p.leaf("nc_get_vara_double", "netcdf", dur=MS, file=str(nc_file), var="ta", size=SHAPE[0] * SHAPE[3] * 8,
                   aux={"start": [0, z, y, 0], "count": [SHAPE[0], 1, 1, SHAPE[3]], "shape": list(SHAPE),
                        "chunks": [8, 2, 16, 32], "itemsize": 8, "cache_bytes": 1 << 20, "compressed": True,
                        "filters": ["deflate"]})
    p.write(d)


def test_trace_advice_names_the_fix_with_a_prediction(tmp_path, files, profiles):
    _partial_trace(tmp_path / "trace", files["packed"])
    adv = recommend.advise_trace(tmp_path / "trace", synthetic())
    f = next(r for r in adv.recommendations if r["rule"] == "partial-chunk-compressed")
    assert "climio rechunk" in f["advice"]
    assert f["command"].startswith(f"climio rechunk {files['packed']} ") and "-c ta:16,1,1,64" in f["command"]
    assert f["before_s"] > f["after_s"] and f["break_even_passes"] is not None
    # the CLI, with a profile of another platform: a warning line, then the advice
    profmod.save(synthetic("elsewhere"))
    out = run_cli("advise", tmp_path / "trace")
    assert out.returncode == 0, out.stderr
    assert "[partial-chunk-compressed]" in out.stdout and "climio rechunk" in out.stdout


def test_trace_rules_are_the_registry(tmp_path):
    import climio.advise.rules as r
    assert trace_advice is r and trace_advice.RULES == r.RULES
    assert {x["id"] for x in r.REGISTRY if "trace" in x["inputs"]} == {x[0] for x in r.RULES}


def test_predict_cli_breakdown_flowchart_and_check(files, profiles):
    profmod.save(synthetic("elsewhere"))
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
    prof = profmod.load(profiles / "pid-x.json")
    assert prof.source == "runs" and prof.latency("sequential") == pytest.approx(2e-6)
    assert prof.rate("sequential", 1 << 20) == pytest.approx(1.5e9)
    r = Rates.from_profile(prof, "deflate4+shuffle")
    assert r.read_Bps == pytest.approx(1.5e9) and r.decode_Bps == prof.decode("deflate4+shuffle")
    msg = one_line_error(run_cli("calibrate", "--from", tmp_path), 2)
    assert "not a run directory" in msg


def test_rechunk_dry_run_predicts_from_the_calibrated_profile(files, profiles, tmp_path):
    from climio.advise.workflow import platform_id_of
    args = ("rechunk", files["contiguous"], tmp_path / "out.nc", "-c", f"ta:{SHAPE[0]},1,1,{SHAPE[3]}", "--dry-run")
    before = run_cli(*args)
    assert before.returncode == 0 and "calibrated profile" not in before.stdout + before.stderr
    slow = synthetic(platform_id_of(files["contiguous"]))
    slow.rate_Bps["sequential"] = [[4096, 1e6]]          # 1 MB/s: the plan must predict far longer
    profmod.save(slow)
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
    adv = recommend.advise(logs[0])
    assert adv.kind == "darshan"
    f = next(r for r in adv.ranked() if r["rule"] == "small-requests")
    assert "collective" in f["advice"].lower() and f["severity"] in ("high", "medium", "low")
    assert any("darshan" in r["inputs"] and r["id"] == "small-requests" for r in rules.REGISTRY)
