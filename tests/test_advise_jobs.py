"""What else a layout fix slows, and one layout for several traced jobs (issue 35 item 3): the model's
canonical reads exactly; `climio trace report T1 --with T2` pricing the rechunk item for the
variable's canonical reads and the other job; `climio advise T1 T2 --passes P1 --passes P2` on two
real traced jobs (a series reader, a map reader) on one file choosing a layout no worse on the mix
than either job's own, with its printed command run as shown."""

import json
import os
import subprocess
import sys

import netCDF4
import numpy as np
import pytest

from climio.dataset.layout import Layout
from climio.model import layout_effects as le
from climio.model.profile import default_profile
from climio.trace.run import run_trace

NT, NY, NX = 240, 60, 80
SERIES = "import netCDF4\nd = netCDF4.Dataset('tas.nc')\nfor j in range(0, 60, 6):\n    print(j, float(d['tas'][:, j, 7].sum()))\n"
MAPS = "import netCDF4\nd = netCDF4.Dataset('tas.nc')\nfor t in range(0, 240, 4):\n    print(t, float(d['tas'][t].mean()))\n"


def test_canonical_reads_exact():
    # the box is the `box` read shape's (climio.dataset.reads.BOX_FRACTION: a quarter of y and of x, rounded up)
    got = le.canonical_reads((24, 10, 16), ("t", "y", "x"))
    assert got == [("one map", [((12, 0, 0), (1, 10, 16))]), ("one full series", [((0, 5, 8), (24, 1, 1))]),
                   ("a box over all time", [((0, 4, 6), (24, 3, 4))]), ("the whole field", [((0, 0, 0), (24, 10, 16))])]
    four = dict(le.canonical_reads((12, 3, 16, 32), ("t", "z", "y", "x")))
    assert four["one map"] == [((6, 1, 0, 0), (1, 1, 16, 32))] and four["a box over all time"] == [((0, 1, 6, 12), (12, 1, 4, 8))]
    assert le.canonical_reads((10, 10)) == []


def test_effects_warn_for_a_read_made_slower():
    lay = Layout((365, 90, 180), 4, (1, 90, 180), True)
    rows = le.effects(lay, "deflate4+shuffle", (365, 1, 5), le.canonical_reads(lay.shape, ("t", "y", "x")),
                      "netcdf4-python", default_profile())
    by = {r["read"]: r for r in rows}
    assert by["one map"]["ratio"] > 2 and by["one map"]["slower"]          # a map decodes 90*36 series chunks
    assert by["one full series"]["ratio"] < 0.5 and not by["one full series"]["slower"]
    assert le.warnings(rows) == [w for w in le.warnings(rows) if w.startswith("one map")] and len(le.warnings(rows)) == 1


def _cli(*args, cwd=None):
    exe = os.path.join(os.path.dirname(sys.executable), "climio")
    return subprocess.run([exe, *map(str, args)], capture_output=True, text=True, cwd=cwd,
                          env=dict(os.environ, PATH=os.path.dirname(sys.executable) + os.pathsep + os.environ["PATH"]))


@pytest.fixture(scope="module")
def two_jobs(tmp_path_factory):
    d = tmp_path_factory.mktemp("jobs")
    with netCDF4.Dataset(d / "tas.nc", "w") as ds:
        for n, s in (("time", NT), ("lat", NY), ("lon", NX)):
            ds.createDimension(n, s)
        v = ds.createVariable("tas", "f4", ("time", "lat", "lon"), zlib=True, shuffle=True, chunksizes=(1, NY, NX))
        v[:] = np.random.default_rng(1).normal(280, 5, (NT, NY, NX)).astype("f4")
    for name, script in (("series", SERIES), ("maps", MAPS)):
        (d / f"{name}.py").write_text(script)
        cwd = os.getcwd()
        os.chdir(d)
        try:
            assert run_trace([sys.executable, f"{name}.py"], out=d / f"tr-{name}") == 0
        finally:
            os.chdir(cwd)
    return d


def test_report_prices_the_layout_item_for_canonical_reads_and_the_other_job(two_jobs):
    from climio.trace.report import build, text, to_json
    d = two_jobs
    facts, findings = build(d / "tr-series", [d / "tr-maps"])
    f = next(x for x in json.loads(to_json(facts, findings))["findings"] if x["rule"] == "partial-chunk-compressed")
    eff = f["layout_effects"]
    assert eff["chunks"] == f["evidence"]["target_chunks"]
    names = [r["read"] for r in eff["rows"]]
    assert names == ["one map", "one full series", "a box over all time", "the whole field", "job tr-maps"]
    assert all(r["before_s"] > 0 and r["after_s"] > 0 for r in eff["rows"])
    assert len(eff["warnings"]) == sum(r["after_s"] > 2 * r["before_s"] for r in eff["rows"]) >= 1
    page = text(facts, findings)
    assert "predicted per read, now -> in" in page and "job tr-maps" in page and "warning: one map" in page


def test_advise_several_traces_one_layout_no_worse_than_either_jobs_own(two_jobs):
    import climio
    d = two_jobs
    adv = climio.advise([d / "tr-series", d / "tr-maps"], passes=[200, 50], warn=lambda line: None)
    ls = json.loads(json.dumps(adv.to_dict(), default=str))["layout_search"]
    best, jobs = ls["best"], {r["job"]: r for r in ls["per_job"]}
    assert set(jobs) == {"job tr-series", "job tr-maps"}
    assert jobs["job tr-series"]["passes"] == 200 and jobs["job tr-maps"]["passes"] == 50
    # each job's own best layout priced on the whole mix: the choice is never worse
    for r in jobs.values():
        assert best["total_s"] <= r["own_on_mix_s"] * (1 + 1e-9)
    assert jobs["job tr-series"]["own_chunks"] != jobs["job tr-maps"]["own_chunks"]
    # what else the chosen layout slows: the canonical reads, each >2x slower one warned about
    assert [r["read"] for r in ls["canonical"]] == ["one map", "one full series", "a box over all time", "the whole field"]
    slower = [r for r in ls["canonical"] if r["after_s"] > 2 * r["before_s"]]
    assert sum(w.startswith(tuple(r["read"] + ":" for r in slower)) for w in ls["warnings"]) == len(slower)
    cmd = next(l.split("command: ", 1)[1] for l in adv.lines() if "command: climio rechunk" in l)
    ran = subprocess.run(cmd, shell=True, capture_output=True, text=True, cwd=d,
                         env=dict(os.environ, PATH=os.path.dirname(sys.executable) + os.pathsep + os.environ["PATH"]))
    assert ran.returncode == 0, ran.stderr
    dst = cmd.split()[3]
    with netCDF4.Dataset(dst) as a, netCDF4.Dataset(d / "tas.nc") as b:
        assert a["tas"].chunking() == best["chunks"]
        assert np.array_equal(a["tas"][:5], b["tas"][:5])


def test_advise_several_targets_bad_input_is_one_line(two_jobs):
    import climio
    from climio.base.errors import InputError
    d = two_jobs
    with pytest.raises(InputError, match="trace directories"):
        climio.advise([d / "tr-series", d / "tas.nc"])
    out = _cli("advise", d / "tr-series", d / "tr-maps", "--passes", 1, "--passes", 2, "--passes", 3)
    assert out.returncode == 2 and len(out.stderr.strip().splitlines()) == 1 and "one per trace" in out.stderr, out.stderr
