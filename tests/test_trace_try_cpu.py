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
