"""One table of exit codes (climio.base.errors.EXIT_CODES) and one vocabulary, across every command.

Every command that reads a file is run with a missing file, an unknown variable and a bad read
shape; each must say one line and exit with the table's code for that kind of failure.
"""

import os
import re
import signal
import time
from pathlib import Path

import netCDF4
import numpy as np
import pytest

from climio.base import errors
from conftest import run_cli, slow_rechunk_source, start_slow_rechunk

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def f4(tmp_path_factory):
    """A small CF [time, lev, lat, lon] netCDF-4 file."""
    path = tmp_path_factory.mktemp("codes") / "f4.nc"
    with netCDF4.Dataset(path, "w") as ds:
        for name, n, axis in (("time", 64, "T"), ("lev", 2, "Z"), ("lat", 18, "Y"), ("lon", 36, "X")):
            ds.createDimension(name, n)
            v = ds.createVariable(name, "f8", (name,))
            v[:] = np.arange(n)
            v.axis = axis
        ds["time"].units = "days since 2000-01-01"
        ds["lat"].units, ds["lon"].units = "degrees_north", "degrees_east"
        ta = ds.createVariable("ta", "f4", ("time", "lev", "lat", "lon"), chunksizes=(8, 1, 18, 36))
        ta[:] = np.random.default_rng(1).random((64, 2, 18, 36)).astype("f4")
    return path


def one_line(out, code):
    """Exactly one line on stderr (deprecation notes aside), no traceback, and the table's code."""
    lines = [ln for ln in out.stderr.splitlines() if ln.strip() and not ln.startswith("climio: note:")]
    assert out.returncode == code, (out.returncode, out.stderr[-3000:])
    assert len(lines) == 1 and "Traceback" not in out.stderr, out.stderr[-3000:]
    assert lines[0].startswith("climio: error:"), lines[0]
    return lines[0]


# Every command that reads a file given by the user; FILE and VAR are filled in per case.
READERS = {
    "rechunk": ["rechunk", "FILE", "OUT/o.nc", "--for", "t", "--var", "VAR"],
    "predict": ["predict", "FILE", "--var", "VAR", "--read", "xt"],
    "advise": ["advise", "FILE", "--var", "VAR", "--read", "xt"],
    "stsa": ["stsa", "FILE", "--var", "VAR", "-o", "OUT/s", "--workers", "1", "--no-plots", "--no-progress"],
    "bench chunking --source": ["bench", "chunking", "--source", "FILE:VAR", "--quick", "-o", "OUT/r", "--no-report"],
    "bench stsa --source": ["bench", "stsa", "--source", "FILE:VAR", "--quick", "-o", "OUT/r", "--no-report"],
    "bench read-stack --file": ["bench", "read-stack", "--file", "FILE", "--var", "VAR", "--quick", "-o", "OUT/r",
                                "--no-report"],
}


def _argv(template, file, var, out):
    return [a.replace("FILE", str(file)).replace("VAR", var).replace("OUT", str(out)) for a in template]


@pytest.mark.parametrize("command", sorted(READERS))
def test_missing_file_is_data(command, tmp_path):
    msg = one_line(run_cli(*_argv(READERS[command], tmp_path / "nope.nc", "ta", tmp_path)), errors.Exit.DATA)
    assert "nope.nc" in msg


@pytest.mark.parametrize("command", sorted(READERS))
def test_unknown_variable_is_data(command, f4, tmp_path):
    msg = one_line(run_cli(*_argv(READERS[command], f4, "nosuch", tmp_path)), errors.Exit.DATA)
    assert "nosuch" in msg


@pytest.mark.parametrize("argv", [
    ["trace", "report", "NOPE"], ["report", "NOPE"], ["export", "NOPE"], ["calibrate", "--from", "NOPE"],
])
def test_missing_run_or_trace_directory_is_data(argv, tmp_path):
    one_line(run_cli(*[str(tmp_path / "nope") if a == "NOPE" else a for a in argv]), errors.Exit.DATA)


@pytest.mark.parametrize("argv", [
    ["predict", "FILE", "--var", "ta", "--read", "diagonal"],
    ["advise", "FILE", "--var", "ta", "--read", "diagonal"],
    ["rechunk", "FILE", "OUT/o.nc", "--for", "diagonal"],
    ["bench", "chunking", "--read", "diagonal", "--quick", "-o", "OUT/r"],
])
def test_bad_read_shape_is_input(argv, f4, tmp_path):
    msg = one_line(run_cli(*_argv(argv, f4, "ta", tmp_path)), errors.Exit.INPUT)
    assert "diagonal" in msg


def test_read_shapes_are_one_vocabulary(f4, tmp_path):
    """`rechunk --for t` and `advise/predict --read t` name the same read: a time series at a point."""
    out = run_cli("rechunk", f4, tmp_path / "o.nc", "--for", "t", "--dry-run")
    assert out.returncode == 0, out.stderr
    for cmd in ("predict", "advise"):
        out = run_cli(cmd, f4, "--var", "ta", "--read", "t", "--json")
        assert out.returncode == 0, out.stderr
    import json
    pred = {r: json.loads(run_cli("predict", f4, "--var", "ta", "--read", r, "--json").stdout)["reads"][0]
            for r in ("t", "xt")}
    assert pred["t"]["read"] == "t"
    # a series per point is 36x as many reads as a slab per latitude: more per-call time
    assert pred["t"]["prediction"]["cpu_s"] > 5 * pred["xt"]["prediction"]["cpu_s"], pred


def test_tasks_means_processes_everywhere():
    """--tasks is processes (predict, advise, calibrate); stsa's latitude tasks are --lat-tasks."""
    for argv in (["stsa", "--help"], ["bench", "stsa", "--help"]):
        text = run_cli(*argv).stdout
        assert "--lat-tasks" in text and not re.search(r"--tasks\b", text), argv
    assert "--tasks" in run_cli("predict", "--help").stdout
    # the old spelling still works for one release, with a note
    out = run_cli("stsa", "nope.nc", "--tasks", "4", "--var", "ta")
    assert "--lat-tasks" in out.stderr and out.returncode == errors.Exit.DATA


def test_json_is_one_flag_everywhere(tmp_path):
    """`--json` is the JSON output of predict, advise, rechunk and trace report; --format is gone from
    trace report's help (rechunk's --format is the output file format)."""
    for argv in (["predict"], ["advise"], ["rechunk"], ["trace", "report"]):
        assert "--json" in run_cli(*argv, "--help").stdout, argv
    assert "--format" not in run_cli("trace", "report", "--help").stdout
    out = run_cli("trace", "report", tmp_path / "nope", "--json", "--html")
    one_line(out, errors.Exit.INPUT)


def test_the_table_is_in_help_and_readme():
    help_text = " ".join(run_cli("--help").stdout.split())
    readme = (ROOT / "README.md").read_text()
    for code, what in errors.EXIT_CODES.items():
        assert f"{int(code)} {what}" in help_text, (code, what)
        assert re.search(rf"^\| {int(code)} \| {re.escape(what)} \|$", readme, re.M), (code, what)


def test_sigterm_to_rechunk_is_143(tmp_path):
    src = slow_rechunk_source(tmp_path / "slow.nc")
    out = tmp_path / "out" / "o.nc"
    out.parent.mkdir()
    proc, _ = start_slow_rechunk(src, out)
    time.sleep(0.3)
    proc.send_signal(signal.SIGTERM)
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == errors.Exit.TERMINATED, err
    assert "Traceback" not in err and "terminated" in err.strip().splitlines()[-1], err
    assert os.listdir(out.parent) == []
