"""Shared fixtures: small real files made by the generator, and the installed native probes.

Nothing is skipped: a missing probe, strace or library makes the tests that need it fail.
"""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from climio.machine import native
from climio.data import make_data
from climio.data.writer import write_4d

# Not a multiple of any buffer size, so the last read of a sequential pass is partial.
ONE_D_BYTES = (1 << 20) + 3 * 8


@pytest.fixture(scope="module")
def builtin_rates(tmp_path_factory):
    """No calibrated profile: CLIMIO_PROFILE_DIR is an empty directory for the module's tests, so the
    rechunk planner prices with its built-in rates, as on a clean CI machine (the profile the
    machine's own `climio calibrate` left in ~/.cache/climio/profiles changes which strategy wins).
    Use with `pytestmark = pytest.mark.usefixtures("builtin_rates")`; a test that wants a profile
    sets CLIMIO_PROFILE_DIR itself."""
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("CLIMIO_PROFILE_DIR", str(tmp_path_factory.mktemp("no-profile")))
        yield


@pytest.fixture(scope="session")
def files_1d(tmp_path_factory):
    d = tmp_path_factory.mktemp("data1d")
    made = make_data(d, size=ONE_D_BYTES, kinds=("1d",), random=True, seed=7)
    return {"nc": str(made["1d_nc"]), "bin": str(made["1d_bin"]), "seed": 7}


def run_probe(name, *args, check=True):
    """Run a native probe; return its records."""
    out = subprocess.run([native.program(name), *map(str, args)], capture_output=True, text=True)
    if check:
        assert out.returncode == 0, out.stderr
    return [json.loads(l) for l in out.stdout.splitlines() if l.startswith("{")], out


def run_worker(stack, *args, study="read-stack"):
    """Run the generic Python worker (climio.measure.worker) for one stack; return its records."""
    out = subprocess.run([sys.executable, "-m", "climio.measure.worker", "--study", study, "--stack", stack,
                          *map(str, args)], capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    return [json.loads(l) for l in out.stdout.splitlines() if l.startswith("{")]


def run_cli(*args, cwd=None, timeout=600):
    """The installed `climio` command, as a user runs it."""
    exe = os.path.join(os.path.dirname(sys.executable), "climio")
    return subprocess.run([exe, *map(str, args)], capture_output=True, text=True, cwd=cwd, timeout=timeout)


def check_export(run_dir, tmp_path, name):
    """`climio export RUN --csv` and `--parquet` read back: one row per record, in order, rates equal
    (issue 27: every run a study can produce exports); the Parquet frame."""
    import math

    import pandas as pd
    from climio.runs.records import read_records
    records = read_records(run_dir)
    for fmt in ("csv", "parquet"):
        target = tmp_path / f"{name}.{fmt}"
        res = run_cli("export", run_dir, f"--{fmt}", "-o", target)
        assert res.returncode == 0 and "Traceback" not in res.stderr, res.stderr[-3000:]
        df = pd.read_parquet(target) if fmt == "parquet" else pd.read_csv(target, low_memory=False)
        assert len(df) == len(records)
        assert list(df["study"]) == [r["study"] for r in records]
        rates = [(r.get("metrics") or {}).get("rate_MBps") for r in records]
        if "metrics.rate_MBps" in df:
            got = df["metrics.rate_MBps"].tolist()
            assert all((a is None and (b is None or math.isnan(b))) or (b is not None and math.isclose(a, b))
                       for a, b in zip(rates, got))
    return df


@pytest.fixture(scope="session")
def s3_server(tmp_path_factory):
    """A real S3 server for the object-store tests (issue 25): SeaweedFS behind Toxiproxy on free
    loopback ports, started once per test run and stopped after it. Tests that add latency or a
    bandwidth cap take it away again."""
    from climio.stores.server import S3Server
    with S3Server(data_dir=tmp_path_factory.mktemp("s3")) as s3:
        yield s3


@pytest.fixture(scope="session")
def quick_survey(tmp_path_factory):
    """One `climio survey --quick --screenshot` run for the whole test session (the slow part of
    every test that needs a survey's run directory): (run directory, the finished process)."""
    run = tmp_path_factory.mktemp("quick-survey") / "survey"
    out = run_cli("survey", "--quick", "-o", run, "--screenshot", timeout=1800)
    assert out.returncode == 0, out.stderr[-4000:]
    return run, out


@pytest.fixture(scope="session")
def quick_study_runs(tmp_path_factory):
    """Quick runs of the studies the survey leaves out (calibrate, the model's validation, the layouts
    study), once per test session for every test that needs their run directories (export, the
    browser, the layouts test): name -> run."""
    base = tmp_path_factory.mktemp("quick-studies")
    runs = {}
    # layouts: a small run against the quick calibration (12 shapes converted, two mixes read cold)
    for name, argv in (("calibrate", ["calibrate", "--quick", "--no-report", "--data-dir", base / "data"]),
                       ("predict", ["bench", "predict", "--quick", "--no-report"]),
                       ("layouts", ["bench", "layouts", "--shape", "128,1,32,32", "--mix", "xy:4,xt:1", "--mix", "xt:1",
                                    "--reps", "1", "--profile", base / "calibrate" / "profile.json", "--no-report",
                                    "--data-dir", base / "layouts-data"])):
        out = run_cli(*argv, "-o", base / name, timeout=1800)
        assert out.returncode == 0, out.stderr[-3000:]
        runs[name] = base / name
    return runs


def slow_rechunk_source(path):
    """A map-chunked, deflated [64,4,128,128] float32 file of random values (16 MiB): rechunked to
    time series (SLOW_RECHUNK) it runs long enough to be stopped or to fill a small disk midway."""
    write_4d(path, (64, 4, 128, 128), chunks=[1, 1, 128, 128], dtype="f4", deflate=1, shuffle=True, seed=1,
             random=True)
    return path


SLOW_RECHUNK = ["-c", "time/64,lev/1,lat/1,lon/128", "--workers", "2"]


def start_slow_rechunk(src, out, max_mem="600KiB"):
    """`climio rechunk src out` in a tiny budget (many small blocks), returned once its temporary
    output exists (or after 60 s): (the process, whether the conversion started)."""
    import time
    exe = os.path.join(os.path.dirname(sys.executable), "climio")
    proc = subprocess.Popen([exe, "rechunk", str(src), str(out), *SLOW_RECHUNK, "--max-mem", max_mem],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    started = lambda: any(p.startswith("." + out.name) for p in os.listdir(out.parent))   # noqa: E731
    deadline = time.time() + 60
    while time.time() < deadline and not started():
        time.sleep(0.05)
    return proc, started()



def load_bench(name: str):
    """bench/NAME.py as a module (the tests' seeded slices of a bench script), registered as NAME."""
    import importlib.util
    spec = importlib.util.spec_from_file_location(name, Path(__file__).resolve().parents[1] / "bench" / f"{name}.py")
    mod = importlib.util.module_from_spec(spec)
    sys.modules[name] = mod
    spec.loader.exec_module(mod)
    return mod
