"""`climio trace try` times each run's CPU (user + system of the job's process tree) beside its wall
time: on shared cores the wall time also holds the time a job waited for a core, so a fix's gain is
shown both ways (climio bench advice counts its targets on both). Real child processes, no mocks."""

import sys

from climio.trace.run import default_excludes
from climio.trace.trying.runs import TracedJob, run_job

BURN = "import time\nt = time.process_time()\nwhile time.process_time() - t < 0.4:\n    pass\n"
SLEEP = "import time\ntime.sleep(0.6)\n"
CHILD = ("import subprocess, sys\nsubprocess.run([sys.executable, '-c', " + repr(BURN) + "], check=True)\n")


def _run(tmp_path, code, name):
    job = TracedJob([sys.executable, "-c", code], str(tmp_path), [], default_excludes())
    return run_job(job, {}, tmp_path / name, [])


def test_cpu_seconds_are_the_jobs_own_not_its_wait(tmp_path):
    burn, sleep, child = _run(tmp_path, BURN, "burn"), _run(tmp_path, SLEEP, "sleep"), _run(tmp_path, CHILD, "child")
    # the burner computed its 0.4 s (plus the interpreter's start); the sleeper took 0.6 s of wall
    # but computed only its start-up; a grandchild's CPU counts for the job that waited for it
    assert burn["cpu_s"] >= 0.4 and burn["wall_s"] >= 0.4
    assert sleep["wall_s"] >= 0.6 and sleep["cpu_s"] < 0.4
    assert child["cpu_s"] >= 0.4


def test_a_round_that_settles_every_verdict_ends_the_rounds(tmp_path):
    """A fix many times faster (or slower) than the baseline of its own round cannot change verdict
    in another round: trace try stops there (a baseline whose chunk cache thrashes costs one run, not
    --reps); a fix near the baseline gets every round."""
    from types import SimpleNamespace
    from climio.trace.trying import DECISIVE, _rounds, decisive
    code = "import os, time\ntime.sleep(float(os.environ.get('NAP', '1.5')))\n"
    job = TracedJob([sys.executable, "-c", code], str(tmp_path), [], default_excludes())
    fix = [SimpleNamespace(id="1")]
    fast = _rounds(job, fix, {}, {"1": lambda d: {"NAP": "0"}}, 3, tmp_path / "a", [], None)
    assert len(fast["baseline"]) == len(fast["1"]) == 1
    assert fast["baseline"][0]["wall_s"] / fast["1"][0]["wall_s"] >= DECISIVE
    near = _rounds(job, fix, {}, {"1": lambda d: {"NAP": "1.2"}}, 2, tmp_path / "b", [], None)
    assert len(near["baseline"]) == len(near["1"]) == 2 and not decisive(near)
    # slower counts as settled too; one undecided fix keeps the rounds going
    r = lambda *w: [{"wall_s": x} for x in w]
    assert decisive({"baseline": r(1.0), "1": r(0.2), "2": r(4.0)})
    assert not decisive({"baseline": r(1.0), "1": r(0.2), "2": r(1.5)})
