"""The read-stack study as a registered Study: its options, grid checks, numbers, findings, the
report of old (schema 1) records, and one small run end to end."""

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest
import typer
from typer.testing import CliRunner

from climio import api
from climio.bench import base, registry
from climio.bench.read_stack import Grid, ReadStack, study
from climio.cli.bench import make_command
from climio.base.errors import DataError, InputError
from climio.runs.records import read_records
from climio.report import render_report
from climio.present.sections import Figure, Finding, Section
from test_report import (GiB, KiB, MiB, NC4PY, THESIS_BUFFERS, anchored, c_sequential, png_uris, rec, sc,
                         synthetic_run)

# `climio bench read-stack`'s options: flag, metavar, help (--page-cache was --cache, a hidden alias now).
OLD_OPTIONS = [
    ("--file", "FILE", "netCDF-4 file with a 1-D float64 variable (see --var)."),
    ("--bin-file", "FILE", "Plain binary file for the c-posix, py-file and numpy layers."),
    ("--var", "NAME", "Variable to read from --file."),
    ("--size", "SIZE", "Generate files of this size instead (e.g. 1GiB) in --data-dir or a temporary directory."),
    ("--stacks", "LIST", "Comma list of c-posix, c-netcdf, py-file, numpy, netcdf4-python, h5py, h5netcdf, xarray (default all)."),
    ("--patterns", "LIST", "Comma list of sequential, strided, random (default all)."),
    ("--buffers", "LIST", "Buffer sizes: 512B,4KiB,1MiB or a range 512B..1GiB (doubling) or 512B..1GiB:4."),
    ("--reps", "N", "Repetitions per configuration (default 3)."),
    ("--page-cache", "cold|warm", "Page-cache state of every repetition: cold (the file evicted with posix_fadvise, "
                                  "verified with mincore) or warm."),
    ("--budget", "SECONDS", "Seconds per repetition: a repetition still reading then is stopped and recorded as "
                            "did-not-finish with the rate bound it implies (0 = none)."),
    ("--odirect/--no-odirect", None, "c-posix layer opens with O_DIRECT (needs c-posix in --stacks)."),
    ("--c-api", "read|fread", "c-posix layer reads with read (lseek + read(2)) or fread (unbuffered stdio, as the "
                              "thesis's appendix C) (default read; needs c-posix in --stacks)."),
    ("--syscalls/--no-syscalls", None, "Count the read syscalls of every layer in an untimed strace pass."),
    ("--seed", "N", "Seed of the random read offsets."),
]


def test_registered_with_the_old_options_and_presets():
    assert registry.get("read-stack") is study and isinstance(study, ReadStack) and study.Grid is Grid
    assert [(o.flag, o.metavar, o.help) for _, o in base.options_of(Grid)] == OLD_OPTIONS
    assert study.presets["full"] == {"size": "1GiB", "buffers": "512B..1GiB", "reps": 3, "budget_s": 60.0}
    assert study.presets["survey"] == {"size": "128MiB", "buffers": "512B..128MiB:4", "reps": 3, "budget_s": 4.0}
    assert study.presets["quick"] == {"size": "16MiB", "buffers": "4KiB,64KiB,1MiB,16MiB", "reps": 2, "budget_s": 3.0}
    assert study.default_preset == "survey"   # no --quick/--full: the survey's grid, as before


def test_cli_help_shows_every_option():
    app = typer.Typer(rich_markup_mode=None)
    app.command("read-stack")(make_command(study))
    app.command("other")(lambda: None)
    text = CliRunner().invoke(app, ["read-stack", "--help"], terminal_width=250).output
    for flag, metavar, help_ in OLD_OPTIONS:
        shown = flag.replace("/", " / ") + (f" {metavar}" if metavar else "")
        assert re.search(rf"^  {re.escape(shown)} +{re.escape(help_)}$", text, re.M), (flag, metavar, help_)
    assert "--quick" in text and "--full" in text and "--out" in text and "--data-dir" in text


def test_grid_from_presets_and_values():
    g = study.grid("quick")
    assert g.size_bytes == 16 * MiB and g.buffers == [4 * KiB, 64 * KiB, 1 * MiB, 16 * MiB] and g.reps == 2
    assert g.layers[0] == "c-posix" and len(g.layers) == 8 and g.patterns == ["sequential", "strided", "random"]
    g = study.grid("survey", size="1MiB", layers="numpy,h5py", patterns="random", reps=5, budget_s=0,
                   trace_syscalls=False)
    # buffers above the file size are no new case: capped at 1 MiB
    assert g.buffers == [512, 2 * KiB, 8 * KiB, 32 * KiB, 128 * KiB, 512 * KiB]
    assert (g.layers, g.patterns, g.reps, g.budget_s, g.trace_syscalls) == (["numpy", "h5py"], ["random"], 5, 0.0, False)
    assert study.survey_grid(quick=True).reps == 2 and study.survey_grid(quick=False).size_bytes == 128 * MiB


@pytest.mark.parametrize("values, error, message", [
    ({"page_cache": "hot"}, InputError, "unknown --page-cache 'hot': use cold or warm"),
    ({"cache": "hot"}, InputError, "unknown --page-cache 'hot': use cold or warm"),   # the old keyword
    ({"cache": "warm", "page_cache": "cold"}, InputError, "cache is the old name of page_cache"),
    ({"size": "1MiB", "bin_file": __file__}, InputError, "--size generates files: not with --file/--bin-file"),
    ({"layers": "numpy", "odirect": True}, InputError, "--odirect applies to the c-posix layer only"),
    ({"layers": "numpy,h5py", "c_api": "fread"}, InputError, "--c-api applies to the c-posix layer only"),
    ({"c_api": "mmap"}, InputError, "unknown --c-api 'mmap': use read or fread"),
    ({"reps": 0}, InputError, "--reps must be at least 1"),
    ({"budget_s": -1}, InputError, "--budget must be 0"),
    ({"layers": "c-posix,fortran"}, InputError, "unknown layer 'fortran'"),
    ({"patterns": "diagonal"}, InputError, "unknown pattern 'diagonal'"),
    ({"buffers": "12B"}, InputError, "not a whole number of float64"),
    ({"buffers": "1GiB", "size": "1MiB"}, InputError, "every buffer size is larger than the file"),
    ({"size": "12 parsecs"}, InputError, "malformed size"),
    ({"file": "/no/such.nc"}, DataError, "no such file: /no/such.nc"),
    ({"var": "x"}, InputError, "no setting 'var'"),
    ({"variable": "x"}, InputError, "--var x needs --file"),
])
def test_grid_errors_are_one_line(values, error, message):
    with pytest.raises(error) as exc:
        study.grid("quick", **values)
    assert message in str(exc.value) and "\n" not in str(exc.value)


def test_grid_of_the_users_files(files_1d):
    g = study.grid("full", file=files_1d["nc"])
    # only the netCDF layers have their file; the buffers are capped by the variable's bytes
    assert g.layers == ["c-netcdf", "netcdf4-python", "h5py", "h5netcdf", "xarray"] and g.size_bytes is None
    assert g.buffers[-1] <= (1 << 20) + 24 < 2 * g.buffers[-1]
    with pytest.raises(DataError, match="layer numpy needs a plain binary"):
        study.grid("full", file=files_1d["nc"], layers="numpy")
    with pytest.raises(DataError, match="no variable 'temp'"):
        study.grid("full", file=files_1d["nc"], variable="temp")


# --- numbers and findings -------------------------------------------------------------------------

def thesis_records(nc_syscall=64 * KiB, traced=True):
    """The thesis's shapes: C flat at ~500 MB/s, netCDF4-python humped, over 512 B .. 1 GiB."""
    records = []
    for b, r in zip(THESIS_BUFFERS, c_sequential(THESIS_BUFFERS)):
        records.append(rec("c-posix", "sequential", b, r * 1.02, 0, syscalls=sc(b, 10, 10) if traced else None))
        records.append(rec("c-posix", "sequential", b, r * 0.98, 1))
    for b, r in zip(THESIS_BUFFERS, anchored(THESIS_BUFFERS, NC4PY)):
        size = max(b, nc_syscall)
        syscalls = sc(size, max(1, 10 * b // size), 10) if traced else None
        records.append(rec("netcdf4-python", "sequential", b, r * 1.02, 0, syscalls=syscalls))
        records.append(rec("netcdf4-python", "sequential", b, r * 0.98, 1))
    return records


def test_summarise_is_plain_numbers():
    facts = study.summarise(thesis_records())
    json.dumps(facts)   # plain data: the predictor and notebooks read it
    assert facts["records"] == 88 and facts["configurations"] == 44 and facts["status"] == {"ok": 88, "dnf": 0, "error": 0}
    top = facts["fastest"]["sequential"]
    assert top["series"] == "c-posix" and top["next"]["series"] == "netcdf4-python" and not top["within_noise"]
    assert top["peak_MBps"] == pytest.approx(500 * GiB / (GiB + 2 * KiB))
    nc = facts["netcdf4_python_sequential"]
    assert nc["profile"] == "humped" and nc["buffer_at_peak"] == 1 * MiB and nc["decides"]
    assert nc["peak_MBps"] == pytest.approx(300.0)
    sys_nc = facts["syscalls"]["netcdf4-python"]
    assert sys_nc["min_dominant_bytes"] == 64 * KiB and sys_nc["buffers"] == THESIS_BUFFERS[:7]


def test_findings_decide_the_thesis_claims():
    found = study.findings(thesis_records())
    assert all(isinstance(f, Finding) and f.study == "read-stack" for f in found) and len(found) == 3
    head, lib, hump = found
    assert head.verdict is None and "peak sequential read rate per stack: c-posix 500 MB/s (at 1GiB)" in head.text
    assert "netcdf4-python 300 MB/s (at 1MiB)" in head.text and "Fastest for sequential reads: c-posix, 1.67×" in head.text
    assert lib.verdict == "reproduced" and "512B–32KiB" in lib.text and "never smaller than 64KiB" in lib.text
    assert hump.verdict == "reproduced" and "measured humped, peak 300 MB/s at 1MiB" in hump.text
    # A library reading 4 KiB syscalls for small buffers does not show the thesis's 64 KiB.
    lib = study.findings(thesis_records(nc_syscall=4 * KiB))[1]
    assert lib.verdict == "not reproduced" and "as small as 4KiB" in lib.text
    # Without the strace pass the claim is not measured; without large buffers the hump is not decidable.
    small = [r for r in thesis_records(traced=False) if r["params"]["buffer_bytes"] <= 64 * MiB]
    _, lib, hump = study.findings(small)
    assert lib.verdict == "not measured" and hump.verdict == "not decidable" and "64MiB" in hump.text
    # Only C measured: the headline alone.
    only_c = [r for r in thesis_records() if r["params"]["layer"] == "c-posix"]
    assert [f.verdict for f in study.findings(only_c)] == [None]
    assert study.findings([]) == []


def test_section_is_data():
    sec = study.section(thesis_records())
    assert isinstance(sec, Section) and sec.id == "study-read-stack"
    figs = [b for b in sec.blocks if isinstance(b, Figure)]
    assert [f.alt for f in figs] == ["read rate vs buffer size", "wall vs CPU time", "read syscall sizes"]


def test_report_opens_with_the_key_findings(tmp_path):
    run, records = synthetic_run(tmp_path)
    text = render_report(run).read_text()
    block = re.search(r'<section class="findings" id="key-findings">(.*?)</section>', text, re.S)
    assert block and text.index('id="key-findings"') < text.index('id="study-read-stack"')
    found = study.findings([r for r in records if r["study"] == "read-stack"])
    assert len(found) == 3
    for f in found:
        assert f"<b>read-stack</b>: {f.text}".replace("'", "&#39;") in block.group(1)
    assert "peak sequential read rate per stack: c-posix" in block.group(1)
    assert '<span class="verdict v-reproduced">reproduced</span> <b>read-stack</b>: netCDF4-python reads at least 64KiB' in block.group(1)


# --- records of schema 1 ----------------------------------------------------------------------------

def v1_records():
    """Records as climio wrote them before the schema field: `layer` for the stack, no
    rate_bound_MBps on did-not-finish records (the bound is planned bytes / budget), no storage
    counters, a bare cache state."""
    out = []
    for layer, peak in (("c-posix", 500.0), ("netcdf4-python", 300.0)):
        for b in (4 * KiB, 64 * KiB, 1 * MiB, 16 * MiB):
            for rep in range(3):
                if layer == "netcdf4-python" and b == 4 * KiB:
                    metrics = {"bytes": 1000, "ops": 1, "wall_s": 5.0, "user_s": 0.1, "sys_s": 0.2, "cpu_s": 0.3,
                               "rate_MBps": 0.0002, "planned_bytes": 64 * MiB, "budget_s": 5.0}
                    status = "dnf"
                else:
                    rate = peak * b / (b + 4 * KiB) * (1 + 0.05 * (rep - 1))
                    wall = 64 * MiB / (rate * 1e6)
                    metrics = {"bytes": 64 * MiB, "ops": 64 * MiB // b, "wall_s": wall, "user_s": wall * 0.1,
                               "sys_s": wall * 0.2, "cpu_s": wall * 0.3, "rate_MBps": rate}
                    status = "ok"
                if rep == 0:
                    size = b if layer == "c-posix" else max(b, 64 * KiB)
                    metrics["syscalls"] = sc(size, max(1, 100 * b // size), 100)
                out.append({"study": "read-stack", "rep": rep, "status": status, "time": "2025-03-01T10:00:00+00:00",
                            "platform_id": "old", "cache": {"state": "cold", "method": "posix_fadvise(DONTNEED)"},
                            "params": {"layer": layer, "pattern": "sequential", "buffer_bytes": b, "file": "/d/f",
                                       "file_bytes": 64 * MiB, "planned_ops": 64 * MiB // b,
                                       "planned_bytes": 64 * MiB},
                            "metrics": metrics})
                if status == "dnf":
                    break
    return out


def write_run(path: Path, records) -> Path:
    path.mkdir(parents=True)
    (path / "records.jsonl").write_text("".join(json.dumps(r) + "\n" for r in records))
    return path


def strip_volatile(text, run_dir):
    text = text.replace(str(run_dir), "RUN_DIR")
    return re.sub(r"<b>report generated</b>: [^<]*<", "<", text)


def test_schema_1_records_render_like_schema_2(tmp_path):
    old = v1_records()
    assert all("schema" not in r for r in old)
    v1 = write_run(tmp_path / "v1" / "run", old)
    v2 = write_run(tmp_path / "v2" / "run", [dict(r, schema=2) for r in old])
    assert all("schema" not in r for r in read_records(v1))
    text = render_report(v1).read_text()
    assert strip_volatile(text, v1) == strip_volatile(render_report(v2).read_text(), v2)
    assert len(png_uris(text)) == 1 + 3    # the headline figure and the section's three
    assert re.search(r"<td>c-posix</td><td>sequential</td><td><span[^>]*>flat</span></td><td>[\d.]+ ± [\d.]+</td><td>16MiB</td><td>4/4</td>", text)
    # the dnf bound of an old record: planned bytes / budget = 64 MiB / 5 s
    assert '<td>netcdf4-python</td><td>sequential</td><td>4KiB</td><td>0/1</td><td><span class="dnf">&lt; 13.4 MB/s</span>' in text
    assert "did not finish at 4KiB (&lt; 13.4 MB/s)" in text
    assert 'id="key-findings"' in text and "netCDF4-python reads at least 64KiB per read syscall" in text


# --- boundaries -----------------------------------------------------------------------------------

def test_summaries_read_records_only():
    """section, summary and figures import neither the measuring code nor the report."""
    code = ("import sys; import climio.bench.read_stack.section, climio.bench.read_stack.summary, "
            "climio.bench.read_stack.figures, climio.bench.read_stack; "
            "print(sorted(m for m in sys.modules if m.startswith(('climio.measure', 'climio.measure.stacks', "
            "'climio.machine.cache', 'climio.launcher', 'climio.report', 'climio.machine.native', 'climio.measure.syscalls'))))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"
    pkg = Path(base.__file__).parent
    for path in pkg.rglob("*.py"):
        assert not re.search(r"^\s*(from|import)\s+(climio\.report|\.\.\.?report)\b", path.read_text(), re.M), path


def test_small_run_end_to_end(tmp_path):
    run_dir = api.run_study("read-stack", preset="quick", out=tmp_path / "run", data_dir=tmp_path / "data",
                            progress=False, layers="c-posix,numpy", size="256KiB", buffers="4KiB,64KiB", reps=1,
                            patterns="sequential,random")
    recs = read_records(run_dir)
    assert len(recs) == 2 * 2 * 2 and {r["params"]["layer"] for r in recs} == {"c-posix", "numpy"}
    assert all(r["status"] == "ok" and r["metrics"]["syscalls"]["requests"] > 0 for r in recs)
    text = (run_dir / "report.html").read_text()
    assert 'id="key-findings"' in text and "peak sequential read rate per stack" in text


def test_overlapping_random_reads_are_shown_apart():
    """Issue 17: 100 x 16 MiB random reads of a 64 MiB file are not a cold point of the curve."""
    from climio.bench.read_stack import study
    from climio.bench.read_stack.summary import overlapping_configs, series_of
    from climio.runs.records import make_record
    from climio.present.render import page
    from climio.present.stats import group_configs
    recs = []
    for buf, rate in ((1 << 20, 50.0), (4 << 20, 80.0), (16 << 20, 900.0)):
        planned = 100 * buf
        recs.append(make_record("read-stack", {"layer": "numpy", "pattern": "random", "buffer_bytes": buf,
                                               "random_count": 100, "planned_bytes": planned,
                                               "file_bytes": 512 << 20},
                                {"bytes": planned, "wall_s": planned / rate / 1e6}, {"state": "cold"}))
    configs = group_configs(recs)
    assert [c.params["buffer_bytes"] for c in overlapping_configs(configs)] == [16 << 20]
    (s,) = series_of(configs)
    assert s.buffers == [1 << 20, 4 << 20]
    html = page("t", [], [study.section(recs)])
    assert "Left out of the random-read curves: 1 configuration" in html and "3.1x the file" in html


# --- issue 27 item 8: the order of the passes and the two modes of a cold read -----------------------

def test_plan_runs_every_strace_pass_first_and_rotates_the_stacks():
    from climio.bench.read_stack.run import plan_passes
    stacks = ["c-posix", "numpy", "h5py", "xarray"]
    steps = plan_passes(stacks, 4)
    assert [s for s in steps[:4]] == [("trace", s) for s in stacks]
    timed = steps[4:]
    assert all(kind == "timed" for kind, *_ in timed) and len(timed) == 16
    for rep in range(4):
        assert sorted(s for _, s, r in timed if r == rep) == sorted(stacks), "every stack once per round"
    slots = {s: {i % 4 for i, (_, t, _) in enumerate(timed) if t == s} for s in stacks}
    assert all(len(v) > 1 for v in slots.values()), f"a stack always in the same slot: {slots}"
    assert all(v == set(range(4)) for v in slots.values()), "over as many rounds as stacks, every slot"
    assert [t for _, t, r in timed if r == 0][0] != steps[3][1], "the last strace pass's stack is not first"


@pytest.mark.parametrize("stacks,reps", [(["c-posix", "numpy"], 3), (["a", "b", "c"], 5), (["a", "b"], 1)])
def test_plan_never_puts_a_timed_run_right_after_its_strace_pass(stacks, reps):
    from climio.bench.read_stack.run import plan_passes
    for trace in (True, False):
        steps = plan_passes(stacks, reps, trace)
        assert len(steps) == len(stacks) * (reps + trace)
        assert [s[0] for s in steps] == ["trace"] * len(stacks) * trace + ["timed"] * len(stacks) * reps
        assert not any(a[0] == "trace" and b[0] == "timed" and a[1] == b[1] for a, b in zip(steps, steps[1:])), steps
        timed = [s for s in steps if s[0] == "timed"]
        firsts = {timed[i][1] for i in range(0, len(timed), len(stacks))}
        assert len(firsts) == min(reps, len(stacks)), "the first slot goes round the stacks"


def test_plan_of_one_stack():
    from climio.bench.read_stack.run import plan_passes
    assert plan_passes(["numpy"], 2) == [("trace", "numpy"), ("timed", "numpy", 0), ("timed", "numpy", 1)]
    assert plan_passes(["numpy"], 2, trace=False) == [("timed", "numpy", 0), ("timed", "numpy", 1)]


def test_pending_runs_cover_what_is_left_exactly():
    from climio.bench.read_stack.run import pending_runs
    pats = ["sequential", "strided", "random"]
    assert pending_runs({p: [512, 4096] for p in pats}, pats) == [(pats, [512, 4096])]
    left = {"sequential": [4096], "strided": [512, 4096], "random": [4096]}
    runs = pending_runs(left, pats)
    assert runs == [(["sequential", "random"], [4096]), (["strided"], [512, 4096])]
    covered = {(p, b) for ps, bs in runs for p in ps for b in bs}
    assert covered == {(p, b) for p, bs in left.items() for b in bs}
    assert pending_runs({"sequential": [], "strided": []}, pats) == []


@pytest.mark.parametrize("values,split", [
    ([0.07, 0.08, 0.9], ([0.07, 0.08], [0.9])),              # the VM's two modes (s of system time per GB)
    ([0.9, 0.072, 1.3, 0.075, 0.08, 1.1], ([0.072, 0.075, 0.08], [0.9, 1.1, 1.3])),
    ([0.1, 0.3], ([0.1], [0.3])),
    ([0.07, 0.08, 0.09, 0.1], None),                         # one mode
    ([1, 2, 4, 8], None),                                    # a drift, no gap larger than the spread
    ([0.1, 0.15, 0.45, 0.6], ([0.1, 0.15], [0.45, 0.6])),    # gap 3x, twice any gap inside a side
    ([0.1, 0.18, 0.3, 0.7], None),                           # gap 2.3x, but 1.8x inside the lower side
    ([0.181, 0.060, 0.461, 0.114, 0.085, 0.121], ([0.060, 0.085, 0.114, 0.121, 0.181], [0.461])),  # probe, loaded VM
    ([0.5], None), ([], None), ([0.0, 0.0, 0.0], None), ([float("nan"), 0.1], None),
])
def test_two_modes_on_synthetic_values(values, split):
    from climio.bench.read_stack.summary import two_modes
    got = two_modes(values)
    if split is None:
        assert got is None, got
    else:
        assert (got["low"], got["high"]) == split and got["gap"] >= 2


def test_two_modes_flags_a_configuration_in_the_summary():
    """Two configurations of a 1 GiB file: one whose repetitions split (0.07 vs 0.9 s/GB), one steady."""
    from climio.bench.read_stack import summary
    from climio.runs.records import make_record
    recs = []
    for buf, sys_per_gb, rates in ((1 << 20, (0.07, 0.9, 0.08), (1800, 900, 1750)),
                                   (4 << 20, (0.07, 0.075, 0.08), (1800, 1790, 1700))):
        for rep, (s, rate) in enumerate(zip(sys_per_gb, rates)):
            r = make_record("read-stack", {"layer": "c-posix", "pattern": "sequential", "buffer_bytes": buf},
                            {"bytes": GiB, "wall_s": GiB / rate / 1e6, "sys_s": s * GiB / 1e9}, {"state": "cold"})
            r["rep"] = rep
            recs.append(r)
    facts = summary.summarise(recs)
    modes = facts["cold_modes"]
    assert modes["checked"] == 2 and len(modes["split"]) == 1
    row = modes["split"][0]
    assert row["buffer_bytes"] == 1 << 20 and row["split"]["high"] == [pytest.approx(0.9)]
    assert row["rate_fast"] == pytest.approx(1775, rel=0.01) and row["rate_slow"] == pytest.approx(900, rel=0.01)
    assert "two modes in 1 of 2 configurations" in modes["text"] and "11.2x" in modes["text"]
    json.dumps(facts)
    steady = summary.cold_modes([r for r in recs if r["params"]["buffer_bytes"] == 4 << 20])
    assert steady["split"] == [] and "one mode" in steady["text"]
    small = [dict(r, metrics=dict(r["metrics"], bytes=1 << 20)) for r in recs]
    assert summary.cold_modes(small) == {"checked": 0, "split": [], "text": None}, "too few bytes to judge"


def test_a_two_mode_split_is_a_key_finding():
    from climio.bench.read_stack import section
    facts = {"cold_modes": {"checked": 3, "split": [{"gap": 9.0}], "text": "Cold repetitions split into two modes in 1 of 3"}}
    f = section.cold_modes(facts)
    assert f is not None and f.text.startswith("Cold repetitions split into two modes")
    assert section.cold_modes({"cold_modes": {"checked": 3, "split": [], "text": "one mode"}}) is None
