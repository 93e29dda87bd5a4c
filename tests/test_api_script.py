"""The Python API in a plain script (no `if __name__ == "__main__":` guard) and in a notebook-like
session runs once (issue 27: every spawned worker re-imported the script and ran it again; one try
appended 2,736 records instead of 72 to one run directory).

Where climio starts processes: rechunk's worker pool, the measuring tasks' ProcessPoolExecutor (and
its Manager), the Dask LocalCluster; all through climio.machine.spawning.context().
"""

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import run_cli

PY = sys.executable
STUDY = dict(experiments="tasks,dask", ranks="2", size="1MiB", buffers="1MiB", reps="1", stacks="netcdf4-python")


def run_script(path: Path, cwd: Path, stdin=None, timeout=600):
    """The venv's python on a script (or on stdin, as a notebook's code has no file), in its own
    process group: an unguarded script that spawns itself is killed whole at the timeout."""
    p = subprocess.Popen([PY, *([str(path)] if stdin is None else ["-"])], cwd=cwd, stdin=subprocess.PIPE,
                         stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, start_new_session=True)
    try:
        out, _ = p.communicate(stdin, timeout=timeout)
    except subprocess.TimeoutExpired:
        os.killpg(p.pid, signal.SIGKILL)
        out, _ = p.communicate()
        pytest.fail(f"the script was still running after {timeout} s (re-running itself?):\n{out[-3000:]}")
    return p.returncode, out


def _records(run_dir: Path) -> list:
    return [json.loads(line) for line in (run_dir / "records.jsonl").read_text().splitlines()]


@pytest.fixture(scope="module")
def one_run(tmp_path_factory):
    """The same study from the command line: how many records one run writes."""
    d = tmp_path_factory.mktemp("cli")
    args = [x for k, v in STUDY.items() for x in (f"--{k.replace('_', '-')}", v)]
    out = run_cli("bench", "parallel-read", "--quick", *args, "--no-report", "-o", d / "run", timeout=600)
    assert out.returncode == 0, out.stderr[-3000:]
    n = len(_records(d / "run"))
    assert n > 0
    return n


STUDY_SCRIPT = """import climio
print("SCRIPT-BODY-RUNS", flush=True)
run = climio.run_study("parallel-read", preset="quick", out="runs/pr", report=False, {kwargs})
print("RECORDS", len(climio.load_records(run)), flush=True)
"""


@pytest.mark.parametrize("how", ["script", "notebook"])
def test_a_study_from_an_unguarded_script_runs_once(how, tmp_path, one_run):
    """The measuring tasks (spawned processes) and the Dask LocalCluster of parallel-read, started
    from top-level code: the code runs once, the run directory holds one run's records."""
    code = STUDY_SCRIPT.format(kwargs=", ".join(f"{k}={v!r}" for k, v in STUDY.items()))
    script = tmp_path / "plain.py"
    script.write_text(code)
    rc, out = run_script(script, tmp_path, stdin=code if how == "notebook" else None)
    assert rc == 0, out[-3000:]
    assert out.count("SCRIPT-BODY-RUNS") == 1, out[-3000:]
    assert "safe importing" not in out and "bootstrapping phase" not in out and "Traceback" not in out, out[-3000:]
    assert len(_records(tmp_path / "runs" / "pr")) == one_run
    assert f"RECORDS {one_run}" in out

    # a second run of the same script is refused before anything runs, not appended
    rc, out = run_script(script, tmp_path)
    assert rc != 0 and "already holds a run" in out and out.count("SCRIPT-BODY-RUNS") == 1, out[-3000:]
    assert len(_records(tmp_path / "runs" / "pr")) == one_run


RECHUNK_SCRIPT = """import numpy as np, netCDF4, climio
print("SCRIPT-BODY-RUNS", flush=True)
with netCDF4.Dataset("in.nc", "w") as ds:
    for n, s in (("time", 512), ("lat", 64), ("lon", 128)):
        ds.createDimension(n, s)
    v = ds.createVariable("u", "f4", ("time", "lat", "lon"), chunksizes=(1, 64, 128), zlib=True)
    v[:] = np.random.default_rng(0).random((512, 64, 128))
climio.rechunk("in.nc", "out.nc", chunks={"time": 512, "lat": 1, "lon": 128}, compression="deflate1+shuffle",
               workers=2, max_mem="4MiB")
with netCDF4.Dataset("in.nc") as a, netCDF4.Dataset("out.nc") as b:
    assert (a["u"][:] == b["u"][:]).all() and b["u"].chunking() == [512, 1, 128]
print("DONE", flush=True)
"""


def test_rechunk_from_an_unguarded_script_runs_once(tmp_path):
    """README's climio.rechunk(...) with 2 worker processes (a 4 MiB budget makes several blocks,
    so the pool is used): without the fix the script ran hundreds of times and never finished."""
    script = tmp_path / "plain.py"
    script.write_text(RECHUNK_SCRIPT)
    rc, out = run_script(script, tmp_path, timeout=300)
    assert rc == 0 and out.count("SCRIPT-BODY-RUNS") == 1 and "DONE" in out, out[-3000:]
    assert "safe importing" not in out and "bootstrapping phase" not in out


def test_every_climio_pool_uses_the_one_context():
    """The start-method policy is in one place: no module of climio makes its own context."""
    src = Path(__file__).resolve().parents[1] / "src" / "climio"
    offenders = [str(p.relative_to(src)) for p in src.rglob("*.py") if p.name != "spawning.py"
                 and any(s in p.read_text() for s in ("get_context(", "set_start_method(", "mp_context=mp"))]
    assert offenders == [], offenders
