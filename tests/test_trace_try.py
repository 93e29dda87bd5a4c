"""`climio trace try` on real traced jobs (netCDF4-python, xarray with and without Dask, h5py): every
fix is applied without touching the script or the file, checked through each run's own trace, its
result compared with the baseline's; a fix that changes the result is never advised. No speed is
asserted here (bench/ compares speeds); the runs are small files, one rep."""

import json
import os
import subprocess
import sys

import numpy as np
import netCDF4
import pytest

from climio.base.errors import InputError
from climio.trace.run import run_trace
from climio.trace.trying import _python_flags, rank, try_fixes
from climio.trace.trying.compare import same_numbers

NT, NY, NX = 60, 40, 40


def _file(path, chunks=(10, 20, 20)):
    rng = np.random.default_rng(1)
    with netCDF4.Dataset(path, "w") as d:
        for n, s in (("time", NT), ("lat", NY), ("lon", NX)):
            d.createDimension(n, s)
        d.createVariable("time", "f8", ("time",))[:] = np.arange(NT)
        d.createVariable("lat", "f8", ("lat",))[:] = np.linspace(-80, 80, NY)
        d.createVariable("lon", "f8", ("lon",))[:] = np.linspace(0, 350, NX)
        v = d.createVariable("tas", "f4", ("time", "lat", "lon"), zlib=True, shuffle=True, chunksizes=chunks)
        v[:] = rng.normal(280, 5, (NT, NY, NX)).astype("f4")
    return str(path)


NC4_JOB = """import netCDF4
netCDF4.set_chunk_cache(65536, 101)            # a site default too small for these reads
d = netCDF4.Dataset("tas.nc")
for j in range(0, 40, 2):
    print(j, float(d["tas"][:, j, :].sum()))
"""

XR_JOB = """import numpy as np, xarray as xr
ds = xr.open_dataset("tas.nc"{kw})
for k in range(6):
    s = ds.tas.sel(lat=-60 + 20 * k, lon=10 + 50 * k, method="nearest").load()
    print(k, float(s.max()), float(s.mean()))
"""

H5_JOB = """import h5py
f = h5py.File("tas.nc", "r", rdcc_nbytes=65536)
for j in range(0, 40, 2):
    print(j, float(f["tas"][:, j, :].sum()))
"""


def _trace(tmp_path, monkeypatch, script, argv_extra=(), name="tr"):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "job.py").write_text(script)
    assert run_trace([sys.executable, *argv_extra, "job.py"], out=tmp_path / name) == 0
    return tmp_path / name


def _by_id(summary):
    return {r["id"]: r for r in summary["results"]}


def test_netcdf4_python_cache_and_layout(tmp_path, monkeypatch):
    _file(tmp_path / "tas.nc")
    before = (tmp_path / "tas.nc").read_bytes()
    tr = _trace(tmp_path, monkeypatch, NC4_JOB)
    s = try_fixes(tr, reps=1)
    rs = {r["kind"]: r for r in s["results"]}
    cache, layout = rs["cache"], rs["layout"]
    # the injected cache is the variable's in the run's own trace (the script's 64 KiB overridden)
    assert cache["applied"] and cache["same_result"] and cache["label"] == "measured"
    assert cache["injected"]["env"]["CLIMIO_TRY_NC_CACHE"].startswith(str(int(cache["env"]["CLIMIO_TRY_NC_CACHE"].split(":")[0])))
    # the layout fix read the copy (by inode), never the original, and printed the same numbers
    assert layout["applied"] and layout["same_result"] and layout["conversion_s"] > 0
    assert netCDF4.Dataset(layout["copy"])["tas"].chunking() == layout["convert"]["chunks"]
    # what else the layout slows: the canonical reads timed on both, each >2x slower one warned about
    assert [x["read"] for x in layout["canonical"]] == ["one map", "one full series", "a box over all time"]
    assert all(x["before_s"] > 0 and x["after_s"] > 0 for x in layout["canonical"])
    assert len(layout["also_slows"]) == sum(x["ratio"] > 2 for x in layout["canonical"])
    assert (tmp_path / "tas.nc").read_bytes() == before and (tmp_path / "job.py").read_text() == NC4_JOB
    # gains: baseline / (after + conversion / P) at P = 1, 10
    g = layout["gain"]
    assert g["1"] == pytest.approx(s["baseline_s"] / (layout["after_s"] + layout["conversion_s"]))
    assert g["10"] == pytest.approx(s["baseline_s"] / (layout["after_s"] + layout["conversion_s"] / 10))
    # and in CPU seconds beside (the job's and the conversion's user + system time): a Python job and
    # climio rechunk compute for some tens of ms at least, never more than they took on the wall x 2 cores
    assert 0.02 < layout["conversion_cpu_s"] < 2 * layout["conversion_s"] + 0.1
    assert 0.02 < s["baseline_cpu_s"] < 2 * s["baseline_s"] + 0.1
    assert layout["cpu_gain"]["10"] == pytest.approx(
        s["baseline_cpu_s"] / (layout["after_cpu_s"] + layout["conversion_cpu_s"] / 10))
    recs = [json.loads(l) for l in (tr / "try" / "records.jsonl").read_text().splitlines()]
    assert {r["params"]["fix"] for r in recs} == {"baseline", *(r["id"] for r in s["results"] if r["label"] == "measured")}
    assert all(r["cache"]["state"] == "cold" for r in recs)
    text = rank.text(s)
    for r in s["results"]:
        assert r["id"] in text
        if r["label"] == "measured" and not r["advised"]:
            assert r["status"].startswith(("tried:", "changes", "not applied"))


def test_xarray_dask_chunks_override_the_scripts(tmp_path, monkeypatch):
    _file(tmp_path / "tas.nc", chunks=(1, NY, NX))        # one map per chunk
    tr = _trace(tmp_path, monkeypatch, XR_JOB.format(kw=", chunks={'time': 1}"))   # one task per chunk
    s = try_fixes(tr, reps=1)
    py = next(r for r in s["results"] if r["kind"] == "python")
    assert py["applied"] and py["same_result"]
    inj = py["injected"]["python"]
    assert inj and inj[0]["replaced"] == {"chunks": "{'time': 1}"} and inj[0]["injected"]["chunks"]["time"] == NT
    # the advised Dask chunks are whole multiples of the file's chunks, the whole series in one task
    assert py["python"]["chunks"] == {"time": NT, "lat": NY, "lon": NX}
    layout = next(r for r in s["results"] if r["kind"] == "layout")
    assert layout["applied"] and layout["same_result"], {k: layout.get(k) for k in ("id", "status", "not_tried", "applied", "same_result")}
    # the script computed with Dask's threaded scheduler on a netCDF file: DASK_SCHEDULER tried, no
    # sitecustomize needed; the run's own trace recorded the scheduler in force
    env = next(r for r in s["results"] if r["kind"] == "env")
    assert env["injected"]["env"] == {"DASK_SCHEDULER": "synchronous"} and env["applied"] and env["same_result"]
    assert env["advice"]["shell"].endswith(f"DASK_SCHEDULER=synchronous {sys.executable} job.py")
    # the series job's advised chunks: only a measured gain puts a fix in the advised list
    for r in (py, env):
        assert r["advised"] == (r["gain"]["1"] >= rank.GAIN_NOISE)
        assert r["advised"] or r["status"].startswith("tried:")
    # layout fixes state what the model predicts for the canonical reads, in the JSON and the text
    assert [x["read"] for x in layout["predicted_effects"]["rows"]][:2] == ["one map", "one full series"]
    assert "predicted per read, now -> in" in rank.text(s)
    assert _runs_as_shown(env, tmp_path) == 2          # the shell line (the job with the variable) and the snippet


def _runs_as_shown(r, cwd) -> int:
    """Run every way an item's fix is given (its shell line, its Python snippet) as printed; the
    number run."""
    a, ran = r["advice"], 0
    if "shell" in a:
        out = subprocess.run(a["shell"], shell=True, capture_output=True, text=True, cwd=cwd,
                             env=dict(os.environ, PATH=os.path.dirname(sys.executable) + os.pathsep + os.environ["PATH"]))
        assert out.returncode == 0, out.stderr
        if a.get("then"):
            dst = a["then"].split()[1]
            assert os.path.exists(dst) and dst != r["file"] and a["then"].endswith(f"instead of {r['file']}")
        ran += 1
    if "python" in a:
        code = "import xarray as xr\n" + a["python"] + ("\nprint(ds)\n" if "ds = " in a["python"] else "\n")
        out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=cwd)
        assert out.returncode == 0, out.stderr
        ran += 1
    return ran


def test_xarray_without_dask_and_every_advised_command_runs(tmp_path, monkeypatch):
    _file(tmp_path / "tas.nc", chunks=(1, NY, NX))
    tr = _trace(tmp_path, monkeypatch, XR_JOB.format(kw=""))
    s = try_fixes(tr, reps=1, passes=10)
    assert s["passes"] == 10 and all("10" in r["gain"] for r in s["results"] if r["label"] == "measured")
    ran = sum(_runs_as_shown(r, tmp_path) for r in s["results"])
    assert ran >= 2


def test_h5py_cache_injected_on_the_file_access_list(tmp_path, monkeypatch):
    _file(tmp_path / "tas.nc")
    tr = _trace(tmp_path, monkeypatch, H5_JOB)
    s = try_fixes(tr, reps=1)
    c = next(r for r in s["results"] if r["env"].get("CLIMIO_TRY_H5_CACHE"))
    assert c["applied"] and c["same_result"], c
    assert "rdcc_nbytes=" in c["advice"]["python"]


def test_a_fix_that_changes_the_output_is_never_advised(tmp_path, monkeypatch):
    _file(tmp_path / "tas.nc")
    job = NC4_JOB + 'print("chunks", d["tas"].chunking())\n'   # the result depends on the layout
    tr = _trace(tmp_path, monkeypatch, job)
    s = try_fixes(tr, reps=1)
    layout = next(r for r in s["results"] if r["kind"] == "layout")
    assert layout["applied"] and not layout["same_result"] and not layout["advised"]
    assert layout["status"].startswith("changes the result") and "printed number" in layout["result_why"]
    assert "changes the result" in rank.text(s)
    cache = next(r for r in s["results"] if r["kind"] == "cache")
    assert cache["same_result"]
    # once tried, `trace report` says it: the layout item is not advised, its command not shown
    from climio.trace.report import build, text as report_text
    page = report_text(*build(tr))
    assert "tried (climio trace try): not advised" in page and "changes the result" in page
    assert layout["advice"]["shell"] not in page


def test_writes_go_to_scratch_and_in_place_updates_are_refused(tmp_path, monkeypatch):
    _file(tmp_path / "tas.nc")
    job = NC4_JOB + ("o = netCDF4.Dataset('out.nc', 'w'); o.createDimension('x', 1)\n"
                     "o.createVariable('m', 'f8', ('x',))[:] = float(d['tas'][:, 3, :].max()); o.close()\n")
    tr = _trace(tmp_path, monkeypatch, job)
    os.remove(tmp_path / "out.nc")
    s = try_fixes(tr, items="1", reps=1)
    assert not (tmp_path / "out.nc").exists()                 # every run wrote into its own scratch dir
    assert s["writes_redirected"] == [str(tmp_path / "out.nc")]
    outs = list((tr / "try" / "runs").glob("*/out/*out.nc"))
    assert len(outs) == 1 + sum(r["label"] == "measured" for r in s["results"])
    inplace = "import netCDF4\nd = netCDF4.Dataset('tas.nc', 'a')\nd['tas'][0, 0, 0] = 1\nprint(float(d['tas'][:, 0, :].sum()))\n"
    tr2 = _trace(tmp_path, monkeypatch, inplace, name="tr2")
    with pytest.raises(InputError, match="--allow-writes"):
        try_fixes(tr2, reps=1)


def test_python_flags_that_keep_sitecustomize_out():
    assert _python_flags(["/usr/bin/python3", "-I", "x.py"]) == "I"
    assert _python_flags(["python3.11", "-sE", "x.py"]) == "E"
    assert _python_flags(["python", "-u", "-S", "-c", "pass"]) == "S"
    assert _python_flags(["python", "x.py", "-I"]) == ""
    assert _python_flags(["./prog", "-I"]) == ""


def test_python_fix_reported_not_applied_under_isolated_mode(tmp_path, monkeypatch):
    _file(tmp_path / "tas.nc", chunks=(1, NY, NX))
    tr = _trace(tmp_path, monkeypatch, XR_JOB.format(kw=""), argv_extra=["-I"])
    from climio.trace.report import build
    item = 1 + [f["rule"] for f in build(tr)[1]].index("partial-chunk-compressed")    # its ways: rechunk, Dask
    s = try_fixes(tr, reps=1, items=f"{item}b")
    (r,) = s["results"]
    assert r["kind"] == "python" and r["status"].startswith("not tried: not applied: Python runs with -I")
    assert not r["advised"]


def test_printed_numbers_compare_with_rtol():
    assert same_numbers("a 1.0000001 b", "a 1.0 b")[0]
    assert not same_numbers("a 1.001 b", "a 1.0 b")[0]
    assert not same_numbers("a 1 c", "a 1 b")[0]


def test_h5netcdf_cache_not_injectable_netcdf4_engine_tried(tmp_path, monkeypatch):
    _file(tmp_path / "tas.nc")
    tr = _trace(tmp_path, monkeypatch, XR_JOB.format(kw=", engine='h5netcdf'"))
    s = try_fixes(tr, reps=1)
    no = next(r for r in s["results"] if r["title"].startswith("h5netcdf chunk cache"))
    assert no["status"].startswith("not tried: not injectable") and not no["advised"]
    eng = next(r for r in s["results"] if r["python"].get("engine") == "netcdf4")
    assert eng["applied"] and eng["same_result"]
    assert eng["injected"]["python"][0]["replaced"] == {"engine": "'h5netcdf'"}


def _cli(*args, cwd=None):
    exe = os.path.join(os.path.dirname(sys.executable), "climio")
    return subprocess.run([exe, *map(str, args)], capture_output=True, text=True, cwd=cwd)


def test_cli_json_compare_command_and_errors(tmp_path, monkeypatch):
    _file(tmp_path / "tas.nc")
    tr = _trace(tmp_path, monkeypatch, NC4_JOB)
    out = _cli("trace", "try", tr, "--items", "1", "--reps", "1", "--compare", "false", "--json")
    assert out.returncode == 0, out.stderr
    s = json.loads(out.stdout)
    measured = [r for r in s["results"] if r["label"] == "measured"]
    assert measured and all(not r["same_result"] and not r["advised"] for r in measured)
    assert all(r["status"].startswith("changes the result: --compare said different") for r in measured)
    bad = _cli("trace", "try", tmp_path / "nowhere")
    assert bad.returncode != 0 and len(bad.stderr.strip().splitlines()) == 1 and "Traceback" not in bad.stderr
    none = _cli("trace", "try", tr, "--items", "9")
    assert none.returncode != 0 and "no advice item" in none.stderr


def test_a_layout_copy_that_cannot_be_made_leaves_the_other_fixes_tried(tmp_path, monkeypatch):
    """climio bench advice met it: a conversion refused (here: no scratch space) made `trace try`
    die sorting the files to evict (a None among them). The layout item now says why it was not
    tried and the chunk cache is still measured."""
    from climio.trace.trying import conversion
    _file(tmp_path / "tas.nc")
    tr = _trace(tmp_path, monkeypatch, NC4_JOB)
    monkeypatch.setattr(conversion, "SPACE_MARGIN", 1 << 60)
    s = try_fixes(tr, reps=1)
    rs = {r["kind"]: r for r in s["results"]}
    assert rs["layout"]["status"].startswith("not tried: not enough scratch space") and not rs["layout"]["advised"]
    assert rs["cache"]["label"] == "measured" and rs["cache"]["applied"]
