"""The read-stack study's report: profile classifier, statistics per configuration, figures,
its section in the HTML page, and its key findings."""

import base64
import html as _html
import json
import math
import random
import re

import numpy as np
import pytest

from climio.bench import base, registry
from climio.bench.read_stack import figures
from climio.bench.read_stack.summary import classify_profile, profile_table, syscall_table
from climio.base.errors import DataError
from climio.runs.records import make_record
from climio.report import render_report
from climio.present.sections import Paragraph, Section
from climio.present.stats import Stats, describe, group_configs

KiB, MiB, GiB = 1 << 10, 1 << 20, 1 << 30
THESIS_BUFFERS = [512 << i for i in range(22)]       # 512 B doubling to 1 GiB (thesis 3.1.2)
SURVEY_BUFFERS = [512 << (2 * i) for i in range(10)]  # 512 B .. 128 MiB in x4 steps
PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


def anchored(buffers, anchors):
    """A curve through (buffer, MB/s) anchor points, linear in log2(buffer) between them."""
    xs = [math.log2(b) for b, _ in anchors]
    return list(np.interp([math.log2(b) for b in buffers], xs, [r for _, r in anchors]))


def c_sequential(buffers):
    """Thesis Fig. 3.4, C sequential: low below 4-8 KiB, level ~500 MB/s from there on."""
    return [500 * b / (b + 2 * KiB) for b in buffers]


# Thesis Fig. 3.7, netCDF4-python sequential on JASMIN: >= 64 KiB reads whatever is asked, peak
# ~300 MB/s at 1 MiB, down to ~150 MB/s at 1 GiB.
NC4PY = [(512, 3), (64 * KiB, 200), (1 * MiB, 300), (8 * MiB, 250), (1 * GiB, 150)]
# Fig. 3.4 striding: very low at small buffers, ~400 MB/s at 512 MiB.
STRIDING = [(512, 1), (256 * KiB, 50), (16 * MiB, 250), (512 * MiB, 400), (1 * GiB, 390)]
# Python plain binary, sequential: flat, ~30 % below C at 1 GiB (the thesis still calls it flat).
PY_BINARY = [(512, 60), (8 * KiB, 480), (16 * MiB, 500), (1 * GiB, 350)]


# --- classifier -----------------------------------------------------------------------------------

def test_thesis_curves_classify_as_the_thesis_did():
    assert classify_profile(THESIS_BUFFERS, c_sequential(THESIS_BUFFERS)) == "flat"
    assert classify_profile(THESIS_BUFFERS, anchored(THESIS_BUFFERS, PY_BINARY)) == "flat"
    assert classify_profile(THESIS_BUFFERS, anchored(THESIS_BUFFERS, NC4PY)) == "humped"
    assert classify_profile(THESIS_BUFFERS, anchored(THESIS_BUFFERS, STRIDING)) == "steadily increasing"
    # Random C on JASMIN: gradual climb, peak at 256 MiB, a noisy last point a bit lower.
    rnd = anchored(THESIS_BUFFERS, [(512, 0.5), (1 * MiB, 80), (256 * MiB, 500), (1 * GiB, 380)])
    assert classify_profile(THESIS_BUFFERS, rnd) == "steadily increasing"


def test_classes_hold_on_a_coarser_grid():
    assert classify_profile(SURVEY_BUFFERS, c_sequential(SURVEY_BUFFERS)) == "flat"
    hump = anchored(SURVEY_BUFFERS, [(512, 3), (64 * KiB, 200), (1 * MiB, 300), (128 * MiB, 140)])
    assert classify_profile(SURVEY_BUFFERS, hump) == "humped"
    assert classify_profile(SURVEY_BUFFERS, anchored(SURVEY_BUFFERS, STRIDING)) == "steadily increasing"


def test_order_of_points_does_not_matter():
    rates = anchored(THESIS_BUFFERS, NC4PY)
    order = list(range(len(rates)))
    random.Random(3).shuffle(order)
    assert classify_profile([THESIS_BUFFERS[i] for i in order], [rates[i] for i in order]) == "humped"


@pytest.mark.parametrize("seed", range(30))
def test_noisy_curves_keep_their_class(seed):
    rnd = random.Random(seed)
    noisy = lambda rates: [r * rnd.uniform(0.9, 1.1) for r in rates]  # ~ the thesis's 1-std bars
    assert classify_profile(THESIS_BUFFERS, noisy(c_sequential(THESIS_BUFFERS))) == "flat"
    assert classify_profile(THESIS_BUFFERS, noisy(anchored(THESIS_BUFFERS, NC4PY))) == "humped"
    assert classify_profile(THESIS_BUFFERS, noisy(anchored(THESIS_BUFFERS, STRIDING))) == "steadily increasing"


def test_rule_boundaries():
    b = THESIS_BUFFERS
    level = [100.0] * len(b)
    assert classify_profile(b, level) == "flat"  # constant: reaches its peak at once
    # The tail of an interior peak: 0.59 x peak is humped, 0.61 is not (flat: it reached early).
    assert classify_profile(b, level[:-1] + [59.0]) == "humped"
    assert classify_profile(b, level[:-1] + [61.0]) == "flat"
    # A peak at one of the two largest buffers is never a hump, however low the last point.
    assert classify_profile(b, level[:-2] + [300.0, 10.0]) == "steadily increasing"
    # Flat must reach 80 % within the first third of the log2 span (7 of 21 octaves here) ...
    late = [10.0] * 8 + [100.0] * 14       # first reaches at index 8 (128 KiB): too late
    assert classify_profile(b, late) == "steadily increasing"
    early = [10.0] * 7 + [100.0] * 15      # reaches at index 7 (64 KiB): in time
    assert classify_profile(b, early) == "flat"
    # ... and not fall below 60 % of the peak afterwards.
    dip = level.copy()
    dip[12] = 55.0
    assert classify_profile(b, dip) == "steadily increasing"


def test_insufficient_data():
    assert classify_profile([4096, 8192], [100.0, 200.0]) == "insufficient data"
    assert classify_profile([], []) == "insufficient data"
    assert classify_profile([1, 2, 4, 8], [float("nan"), None, 5.0, 6.0]) == "insufficient data"
    assert classify_profile([1, 2, 4], [0.0, 0.0, 0.0]) == "insufficient data"
    # Three points are enough to classify: the first third of a 2-octave span is the first point.
    assert classify_profile([1024, 2048, 4096], [100.0, 90.0, 100.0]) == "flat"
    assert classify_profile([1024, 2048, 4096], [50.0, 100.0, 100.0]) == "steadily increasing"
    assert classify_profile([1024, 2048, 4096], [100.0, 80.0, 50.0]) == "humped"


def test_dnf_points_use_their_bound():
    b = THESIS_BUFFERS
    # Sequential C whose three smallest buffers did not finish (< 7 MB/s): still flat.
    rates = [float("nan")] * 3 + c_sequential(b)[3:]
    assert classify_profile(b, rates, bounds=[7.0] * 3 + [None] * 19) == "flat"
    # netCDF4-python whose 1 GiB read ran out of time below 100 MB/s: known to be < 0.6 x 300.
    hump = anchored(b, NC4PY)
    assert classify_profile(b, hump[:-1] + [float("nan")], bounds=[None] * 21 + [100.0]) == "humped"
    # ... but a bound above 0.6 x peak proves nothing: not humped.
    assert classify_profile(b, hump[:-1] + [float("nan")], bounds=[None] * 21 + [250.0]) != "humped"


# --- statistics -------------------------------------------------------------------------------------

CACHE = {"state": "cold", "method": "posix_fadvise(DONTNEED)", "resident_fraction": 0.0, "verified_by": "mincore"}


def rec(layer="c-posix", pattern="sequential", buffer=64 * KiB, rate=100.0, rep=0, status="ok",
        cache="cold", file_bytes=64 * MiB, bound=None, syscalls=None, study="read-stack", **extra):
    nbytes = file_bytes if pattern == "sequential" else file_bytes // 4
    params = {"layer": layer, "pattern": pattern, "buffer_bytes": buffer, "file": "/data/f.bin",
              "file_bytes": file_bytes, "planned_ops": nbytes // buffer, "planned_bytes": nbytes,
              "random_count": 100, "seed": 1, **extra}
    if status == "dnf":
        metrics = {"bytes": 1000, "ops": 1, "wall_s": 5.0, "user_s": 0.1, "sys_s": 0.2,
                   "planned_bytes": nbytes, "budget_s": 5.0, "rate_bound_MBps": bound}
    else:
        wall = nbytes / (rate * 1e6)
        metrics = {"bytes": nbytes, "ops": nbytes // buffer, "wall_s": wall, "user_s": wall * 0.1, "sys_s": wall * 0.2}
    if syscalls:
        metrics["syscalls"] = syscalls
    return make_record(study, params, metrics, dict(CACHE, state=cache), rep, status, "pid0")


def test_describe_is_exact():
    st = describe([100.0, 200.0, 600.0])
    assert st.n == 3 and st.mean == pytest.approx(300.0) and st.median == 200.0
    assert st.std == pytest.approx(math.sqrt(70000.0))  # sample std, ddof = 1
    assert (st.min, st.max) == (100.0, 600.0)
    assert describe([42.0]) == Stats(1, 42.0, 0.0, 42.0, 42.0, 42.0)
    assert describe([]) is None and describe([float("nan"), None]) is None
    assert describe([1.0, 2.0, 3.0, 4.0]).median == 2.5


def test_configurations_group_repetitions():
    records = [rec(rate=r, rep=i) for i, r in enumerate((100.0, 200.0, 600.0))]
    records += [rec(buffer=1 * MiB, rate=50.0, rep=0, cache="warm"), rec(buffer=1 * MiB, rate=70.0, rep=1)]
    records += [rec(pattern="strided", buffer=512, status="dnf", bound=7.0)]
    records += [rec(layer="numpy", rate=80.0), rec(layer="numpy", rep=1, status="error", rate=1.0)]
    configs = group_configs(records)
    assert len(configs) == 4
    a = configs[0]
    assert (a.n, a.n_ok, a.status) == (3, 3, "ok")
    rate = a.stats("rate_MBps")
    assert rate.mean == pytest.approx(300.0) and rate.median == pytest.approx(200.0)
    assert rate.std == pytest.approx(math.sqrt(70000.0))
    assert a.stats("cpu_s").mean == pytest.approx(a.stats("wall_s").mean * 0.3)
    assert a.cache_label() == "cold"
    b = configs[1]
    assert b.cache_label() == "cold x1, warm x1" and b.stats("rate_MBps").mean == pytest.approx(60.0)
    d = configs[2]
    assert (d.status, d.n, d.n_ok, d.dnf_bound) == ("dnf", 1, 0, 7.0)
    e = configs[3]
    assert (e.n, e.n_ok, len(e.errors), e.status) == (2, 1, 1, "ok")
    assert e.stats("rate_MBps").mean == pytest.approx(80.0)  # the error repetition is not averaged


def test_profile_table_rows():
    records = []
    for b, r in zip(THESIS_BUFFERS, anchored(THESIS_BUFFERS, NC4PY)):
        for rep, f in enumerate((0.95, 1.0, 1.05)):
            records.append(rec(layer="netcdf4-python", buffer=b, rate=r * f, rep=rep))
    records.append(rec(layer="c-posix", pattern="strided", buffer=512, status="dnf", bound=3.0))
    for b in (4 * KiB, 64 * KiB, 1 * MiB):
        records.append(rec(layer="c-posix", pattern="strided", buffer=b, rate=b / 1e4))
    rows = {(r["layer"], r["pattern"]): r for r in profile_table(records)}
    nc = rows[("netcdf4-python", "sequential")]
    assert nc["profile"] == "humped" and nc["buffer_at_peak"] == 1 * MiB
    assert nc["peak_MBps"] == pytest.approx(300.0) and nc["n_buffers"] == 22 and nc["dnf"] == []
    assert nc["peak_std_MBps"] == pytest.approx(15.0)
    st = rows[("c-posix", "strided")]
    assert st["dnf"] == [(512, 3.0)] and st["n_buffers"] == 4 and st["n_measured"] == 3
    assert st["buffer_at_peak"] == 1 * MiB and st["profile"] == "steadily increasing"


def sc(size, calls, requests):
    return {"tool": "strace", "requests": requests, "read_calls": calls, "read_bytes": size * calls,
            "calls_per_request": calls / requests, "bytes_per_request": size * calls / requests,
            "sizes": {str(size): calls - 1, "4096": 1} if calls > 1 else {str(size): calls}}


def test_syscall_table():
    records = [rec(layer="netcdf4-python", buffer=512, rate=3.0, syscalls=sc(64 * KiB, 16, 2000)),
               rec(layer="netcdf4-python", buffer=512, rate=3.2, rep=1, syscalls=sc(64 * KiB, 16, 2000)),
               rec(layer="c-posix", buffer=1 * MiB, rate=400.0, syscalls=sc(1 * MiB, 2000, 2000)),
               rec(layer="numpy", buffer=1 * MiB, rate=400.0)]
    rows = syscall_table(records)
    assert len(rows) == 2  # one per configuration that was traced
    nc = next(r for r in rows if r["layer"] == "netcdf4-python")
    assert nc["dominant_bytes"] == 64 * KiB and nc["dominant_share"] == pytest.approx(15 / 16)
    assert nc["calls_per_request"] == pytest.approx(0.008) and nc["bytes_per_call"] == 64 * KiB
    assert nc["bytes_per_request"] == pytest.approx(64 * KiB * 16 / 2000)


# --- figures and the page ---------------------------------------------------------------------------

def synthetic_run(tmp_path, platform=True):
    """3 layers x 2 patterns x 5 buffers x 3 reps, one dnf cell, syscalls, an unknown study."""
    run = tmp_path / "run"
    run.mkdir()
    rnd = random.Random(1)
    records = []
    buffers = [4 * KiB, 64 * KiB, 1 * MiB, 16 * MiB, 64 * MiB]
    for layer, peak in (("c-posix", 500.0), ("netcdf4-python", 300.0), ("h5netcdf", 450.0)):
        for pattern in ("sequential", "random"):
            for b in buffers:
                if layer == "netcdf4-python" and pattern == "random" and b == 4 * KiB:
                    records.append(rec(layer, pattern, b, status="dnf", bound=7.0))
                    continue
                rate = peak * b / (b + 4 * KiB) if pattern == "sequential" else peak * b / (b + 4 * MiB)
                size = max(b, 64 * KiB) if layer != "c-posix" else b
                for rep in range(3):
                    records.append(rec(layer, pattern, b, rate * rnd.uniform(0.9, 1.1), rep,
                                       syscalls=sc(size, max(1, 100 * b // size), 100)))
    records.append(make_record("future-study", {"ranks": 4, "backend": "mpiio"},
                               {"bytes": 4 * MiB, "wall_s": 0.5, "user_s": 0.1, "sys_s": 0.1}, CACHE, 0, "ok", "pid0"))
    with open(run / "records.jsonl", "w") as fh:
        for r in records:
            fh.write(json.dumps(r) + "\n")
    if platform:
        (run / "platform.json").write_text(json.dumps({
            "host": "node<script>alert(1)</script>", "kernel": "6.1.0", "cpu": {"model": "Xeon & Co", "logical_cpus": 8},
            "ram_bytes": 16 * GiB, "filesystem": {"type": "lustre", "mount_point": "/work", "options": "rw,flock"},
            "versions": {"python": {"netCDF4": "1.7.2", "h5py": None}}, "platform_id": "pid0"}))
    return run, records


def png_uris(text):
    return [base64.b64decode(m) for m in re.findall(r'src="data:image/png;base64,([A-Za-z0-9+/=]+)"', text)]


def test_figures_are_png(tmp_path):
    _, records = synthetic_run(tmp_path)
    for fn in (figures.rate_vs_buffer, figures.wall_vs_cpu, figures.syscall_sizes):
        png = fn(records)
        assert png.startswith(PNG_MAGIC) and len(png) > 10_000
    assert figures.syscall_sizes([rec()]) is None           # no strace data: no figure
    assert figures.rate_vs_buffer([]) is None


def test_render_report(tmp_path):
    run, records = synthetic_run(tmp_path)
    out = render_report(run)
    assert out == run / "report.html"
    text = out.read_text()
    assert text.startswith("<!DOCTYPE html>") and "<script" not in text
    assert "http://" not in text.replace("http://www.w3.org", "") and "https://" not in text
    pngs = png_uris(text)
    # the section's three figures and the first screen's headline figure (sequential reads alone)
    assert len(pngs) == 4 and all(p.startswith(PNG_MAGIC) for p in pngs)
    assert text.index('id="summary"') < text.index("<img") < text.index('id="key-findings"')
    # Provenance, escaped.
    assert "node&lt;script&gt;alert(1)&lt;/script&gt;" in text and "Xeon &amp; Co" in text
    assert "<td>filesystem.type</td><td>lustre</td>" in text and "16GiB" in text
    # Summary table: one row per layer x pattern with its profile.
    assert re.search(r"<td>netcdf4-python</td><td>sequential</td><td><span[^>]*>flat</span>", text)
    assert re.search(r"<td>c-posix</td><td>random</td><td><span[^>]*>steadily increasing</span>", text)
    # Full configuration table rows, and the dnf cell as the thesis's "< 7".
    assert "<td>h5netcdf</td><td>sequential</td><td>1MiB</td><td>3/3</td>" in text
    assert '<td>netcdf4-python</td><td>random</td><td>4KiB</td><td>0/1</td><td><span class="dnf">&lt; 7 MB/s</span>' in text
    assert "< 7 MB/s" in _html.unescape(text)
    # A study without a section of its own is listed generically.
    assert 'id="study-future-study"' in text and "mpiio" in text
    assert not [p for p in run.iterdir() if p.name.startswith(".")]  # no temporary left behind


def test_mean_and_spread_in_the_table(tmp_path):
    run = tmp_path / "run"
    run.mkdir()
    with open(run / "records.jsonl", "w") as fh:
        for i, r in enumerate((100.0, 200.0, 600.0)):
            fh.write(json.dumps(rec(rate=r, rep=i)) + "\n")
    text = render_report(run).read_text()
    assert "<td>3/3</td><td>300 ± 265</td><td>100 / 200 / 600</td>" in text
    assert "No platform.json" in text


def test_render_report_to_another_path(tmp_path):
    run, _ = synthetic_run(tmp_path, platform=False)
    out = render_report(run, out=tmp_path / "elsewhere.html")
    assert out == tmp_path / "elsewhere.html" and out.is_file() and not (run / "report.html").exists()


def test_registered_section_replaces_the_generic_table(tmp_path, monkeypatch):
    run, _ = synthetic_run(tmp_path)

    class Custom(base.Study):
        name = "future-study"

        def section(self, records):
            return Section("study-future-study", "Study: future-study").add(Paragraph(f"custom {len(records)} record"))

    registry.studies()   # load the built-in studies first, then put the custom one in their registry
    monkeypatch.setitem(base._REGISTRY, "future-study", Custom())
    text = render_report(run).read_text()
    assert "custom 1 record" in text and "No dedicated report section" not in text


def test_no_records_is_a_data_error(tmp_path):
    run = tmp_path / "empty"
    run.mkdir()
    with pytest.raises(DataError, match="no records"):
        render_report(run)
    (run / "records.jsonl").write_text("\n")
    with pytest.raises(DataError, match="no records"):
        render_report(run)
    assert not (run / "report.html").exists()


def test_the_terminal_results_lead_with_the_platform_and_collapse_the_undecided(tmp_path, monkeypatch):
    """Issue 27 item 9: `climio survey` and `climio bench` print what was learned first, the checks the
    run could not decide as one line per study with a count (as the report's first screen)."""
    from climio.api import results_table
    from climio.present.sections import Finding
    run, _ = synthetic_run(tmp_path)

    class Checks(base.Study):
        name = "future-study"

        def findings(self, records):
            return ([Finding("future-study", f"check F{i} needs 64 ranks", "not decidable") for i in range(5)]
                    + [Finding("future-study", "check F9 is not run", "not measured"),
                       Finding("future-study", "mpiio beats posix 2x", "reproduced"),
                       Finding("future-study", "mpiio reads 8.4 MB/s at 4 ranks")])

    registry.studies()
    monkeypatch.setitem(base._REGISTRY, "future-study", Checks())
    lines = results_table(run).splitlines()
    assert lines[0] == "This platform:" and lines[1].startswith("  read-stack: ")
    assert lines.index("  future-study: mpiio reads 8.4 MB/s at 4 ranks") < lines.index("Reproduced:")
    assert "  future-study: mpiio beats posix 2x" in lines
    open_block = lines[lines.index("Not decided by this run:") + 1:]
    assert "  future-study: 6 findings open (5 not decidable at this size, 1 not measured)" in open_block
    assert all(line.startswith("  ") and " open (" in line for line in open_block)
    assert not any("F1" in line or "[not decidable]" in line for line in lines)
