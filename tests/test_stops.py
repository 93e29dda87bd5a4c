"""Every stop is clean: Ctrl-C and SIGTERM end with one line and 130 / 143, keep the records so far,
remove generated data; nothing is merged or overwritten silently."""

import glob
import json
import os
import re
import signal
import subprocess
import sys
import threading
import time

import pytest

from conftest import run_cli

CLIMIO = os.path.join(os.path.dirname(sys.executable), "climio")


def _start(args, tmp_path):
    return subprocess.Popen([CLIMIO, *map(str, args)], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            cwd=tmp_path)


def _wait_for(pred, timeout=60.0):
    t0 = time.monotonic()
    while time.monotonic() - t0 < timeout:
        if pred():
            return True
        time.sleep(0.05)
    return False


SIGNALS = [pytest.param(signal.SIGINT, 130, "interrupted", id="SIGINT"),
           pytest.param(signal.SIGTERM, 143, "terminated", id="SIGTERM")]
# Every MPI launch of a study: as root, and more ranks than this machine's cores.
MPI_ENV = {"OMPI_ALLOW_RUN_AS_ROOT": "1", "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM": "1",
           "OMPI_MCA_rmaps_base_oversubscribe": "1"}
MARK = "CLIMIO_STOPS_TEST"
DASK_LOCKS = ("dask-scratch-space/global.lock", "dask-scratch-space/purge.lock")
# A line climio writes: "climio: ...", or a command's or study's progress ("stsa: 1/16 done",
# "make-data (1-D ...): ...", "predict [1/32] ..."); a traceback's or a library's lines are not.
CLIMIO_LINE = re.compile(r"^(climio|note|[a-z][a-z0-9-]*)( \(| \[|:)")


def _marked(mark) -> list:
    """Live processes whose environment carries `mark` (inherited by every descendant: mpirun's
    ranks, Dask's workers), as 'pid cmdline'. Zombies have no environment and do not count."""
    found = []
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            with open(f"/proc/{pid}/environ", "rb") as fh:
                env = fh.read().split(b"\0")
            if f"{MARK}={mark}".encode() in env:
                with open(f"/proc/{pid}/cmdline", "rb") as fh:
                    cmd = fh.read().replace(b"\0", b" ").decode(errors="replace")
                found.append(f"{pid} {cmd[:120]}")
        except OSError:
            pass
    return found


class Job:
    """A climio command started as a shell starts a job: its own process group (a terminal's
    Ctrl-C reaches the whole group), its own TMPDIR (so what it leaves there is its own), and a
    mark in its environment that every descendant inherits (so a stray child is found after it
    exits). stdout and stderr are read as they come (a progress line is a sign of work)."""

    def __init__(self, args, tmp_path, env=None):
        self.tmp = tmp_path / "tmpdir"
        self.tmp.mkdir()
        self.mark = str(tmp_path)
        env = {**os.environ, **MPI_ENV, "TMPDIR": str(self.tmp), MARK: self.mark, **(env or {})}
        self.proc = subprocess.Popen([CLIMIO, *map(str, args)], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                     text=True, cwd=tmp_path, env=env, start_new_session=True)
        self.out, self.err = [], []
        self._readers = [threading.Thread(target=lambda f=f, to=to: to.extend(iter(f.readline, "")), daemon=True)
                         for f, to in ((self.proc.stdout, self.out), (self.proc.stderr, self.err))]
        for t in self._readers:
            t.start()

    def stop(self, sig, timeout=60) -> int:
        """Ctrl-C goes to the process group (as a terminal sends it), SIGTERM to climio alone (as
        `kill PID`); the exit status once climio and its output are done."""
        self.at_stop = len(self.err)
        if sig == signal.SIGINT:
            os.killpg(self.proc.pid, sig)
        else:
            self.proc.send_signal(sig)
        rc = self.proc.wait(timeout=timeout)
        for t in self._readers:
            t.join(timeout=10)
        return rc

    def stderr(self) -> str:
        return "".join(self.err)

    def after_stop(self) -> list:
        """The lines climio wrote on stderr once stopped."""
        return [l.rstrip("\n") for l in self.err[self.at_stop:] if l.strip()]

    def strays(self, grace=10.0) -> list:
        """Descendants still alive `grace` seconds after climio ended."""
        _wait_for(lambda: not _marked(self.mark), timeout=grace)
        return _marked(self.mark)

    def left_in_tmp(self) -> list:
        """Files, and climio's directories, left in the job's TMPDIR. Dask's two workspace lock
        files are not counted: every run leaves them, finished or not (they are shared by runs)."""
        return sorted(str(p.relative_to(self.tmp)) for p in self.tmp.rglob("*")
                      if (p.is_file() or p.is_symlink() or p.name.startswith("climio"))
                      and str(p.relative_to(self.tmp)) not in DASK_LOCKS)

    def kill_all(self) -> None:
        """After the test, whatever it left (so a failing case leaves no load behind)."""
        if self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGKILL)
            self.proc.wait(timeout=30)
        for line in _marked(self.mark):
            try:
                os.kill(int(line.split()[0]), signal.SIGKILL)
            except OSError:
                pass


@pytest.fixture
def job(tmp_path):
    jobs = []

    def start(args, env=None):
        jobs.append(Job(args, tmp_path, env))
        return jobs[-1]

    yield start
    for j in jobs:
        j.kill_all()


class StopMessage(AssertionError):
    """The stop was not said in one line: a traceback, another program's lines, no or several
    stop lines. Its own type so that a case known to fail it (xfail(raises=StopMessage)) still
    fails on anything else."""


class LeftBehind(AssertionError):
    """Temporary files or generated data left in TMPDIR (xfail(raises=LeftBehind) likewise)."""


def stop_message_problem(j, word) -> str:
    """What is wrong with the stop's stderr, or "": the stop is one line, the last, saying which
    signal and that the records are kept; after the signal climio writes only its own lines (the
    partial report's path, a last progress line); no traceback anywhere."""
    err, after = j.stderr(), j.after_stop()
    said = [l for l in after if "interrupted" in l or "terminated" in l or "Interrupt" in l]
    if "Traceback" in err:
        return f"a traceback on stderr ({err.count('Traceback')})"
    if not said or said != after[-1:] or not (word in said[0] and "kept" in said[0]):
        return f"no last line saying '{word}' and 'kept': {after[-1:]}"
    foreign = [l for l in after if not CLIMIO_LINE.match(l)]
    return f"lines not climio's after the stop: {foreign}" if foreign else ""


def assert_clean_stop(j, word) -> None:
    """The parts of a clean stop some commands miss today, checked last (after the exit code,
    records, report and processes) as their own exception types; both at once is a plain failure."""
    said, left = stop_message_problem(j, word), j.left_in_tmp()
    if said and left:
        raise AssertionError(f"{said}; left in TMPDIR: {left}\n{j.stderr()}")
    if said:
        raise StopMessage(f"{said}\n{j.stderr()}")
    if left:
        raise LeftBehind(f"left in TMPDIR: {left}")


def _records(path) -> list:
    """Every line of a records file, each a whole JSON object."""
    lines = path.read_text().splitlines()
    return [json.loads(l) for l in lines]


@pytest.mark.parametrize("sig,code,word", SIGNALS)
def test_make_data_stops_cleanly(job, tmp_path, sig, code, word):
    out = tmp_path / "new"
    j = job(["make-data", out, "--size", "3GiB", "--kind", "1d"])
    # wait until it is writing (its temporary file exists), then stop it
    assert _wait_for(lambda: out.is_dir() and any(out.iterdir())), "make-data never started writing"
    rc = j.stop(sig)
    assert rc == code, j.stderr()
    assert not out.exists(), f"left behind: {list(out.iterdir()) if out.exists() else ''}"
    assert not j.strays()
    assert_clean_stop(j, word)


def test_make_data_refuses_to_overwrite_without_force(tmp_path):
    d = tmp_path / "d"
    assert run_cli("make-data", d, "--size", "64KiB").returncode == 0
    before = (d / "data1d.bin").read_bytes()
    res = run_cli("make-data", d, "--size", "64KiB", "--seed", "3")
    assert res.returncode == 2 and "already holds data1d.nc, data1d.bin" in res.stderr and "--force" in res.stderr
    assert (d / "data1d.bin").read_bytes() == before
    res = run_cli("make-data", d, "--size", "64KiB", "--seed", "3", "--force")
    assert res.returncode == 0 and (d / "data1d.bin").read_bytes() != before


def test_failed_make_data_leaves_no_empty_directory(tmp_path):
    d = tmp_path / "never"
    res = run_cli("make-data", d, "--size", "64KiB", "--kind", "4d", "--chunks", "1,1,1")
    assert res.returncode == 2 and not d.exists()


def test_trace_run_refuses_a_non_empty_directory(tmp_path):
    d = tmp_path / "t"
    d.mkdir()
    (d / "something").write_text("x")
    res = run_cli("trace", "run", "-o", d, "--force", "--", "true")
    assert res.returncode == 2 and "not a climio trace" in res.stderr     # never removes what is not a trace
    assert sorted(p.name for p in d.iterdir()) == ["something"]


def test_trace_run_force_replaces_the_directory_whole_and_append_adds(tmp_path):
    d = tmp_path / "t"
    assert run_cli("trace", "run", "-o", d, "--", "cat", "/etc/hostname").returncode == 0
    (d / "old-note.txt").write_text("from the first run")
    first = sorted(p.name for p in d.iterdir())
    res = run_cli("trace", "run", "-o", d, "--", "true")
    assert res.returncode == 2 and "--force" in res.stderr and "--append" in res.stderr
    assert sorted(p.name for p in d.iterdir()) == first
    assert run_cli("trace", "run", "-o", d, "--append", "--", "cat", "/etc/hostname").returncode == 0
    assert "old-note.txt" in {p.name for p in d.iterdir()} and len(list(d.iterdir())) > len(first)
    assert run_cli("trace", "run", "-o", d, "--force", "--", "true").returncode == 0
    assert not (d / "old-note.txt").exists()
    assert not (set(first) - {"meta.json"}) & {p.name for p in d.iterdir()}   # the first run's traces are gone


def test_make_data_speaks_climio_compression_and_refuses_conflicts(tmp_path):
    import netCDF4
    d = tmp_path / "c"
    res = run_cli("make-data", d, "--kind", "4d", "--shape", "4,2,16,32", "--chunks", "1,1,16,32",
                  "--compression", "deflate4+shuffle")
    assert res.returncode == 0, res.stderr
    with netCDF4.Dataset(d / "field4d.nc") as ds:
        f = ds["ta"].filters()
        assert f["zlib"] and f["complevel"] == 4 and f["shuffle"] and ds["ta"].chunking() == [1, 1, 16, 32]
    for args, word in ((("--size", "1MiB", "--shape", "4,2,16,32", "--kind", "4d"), "give one"),
                       (("--compression", "deflate4"), "4-D file only"),
                       (("--kind", "4d", "--chunks", "contiguous", "--compression", "deflate1"), "needs chunks")):
        res = run_cli("make-data", tmp_path / "x", *args)
        assert res.returncode == 2 and word in res.stderr and len(res.stderr.strip().splitlines()) == 1, res.stderr
        assert not (tmp_path / "x").exists()


# The studies, each quick and small but long enough to be stopped after its first record: each
# generates its data in a directory of its own (in TMPDIR); parallel-read and parallel-write run
# MPI launches, stsa Dask LocalClusters. BUILTIN_PROFILE: predict needs a calibrated profile.
BUILTIN_PROFILE = "{built-in profile}"
STUDIES = {
    "read-stack": ["bench", "read-stack", "--quick", "--stacks", "numpy,py-file", "--no-syscalls", "--reps", "5"],
    "chunking": ["bench", "chunking", "--quick", "--reps", "5"],
    "survey": ["survey", "--quick"],
    "stsa": ["bench", "stsa", "--quick"],
    "parallel-read": ["bench", "parallel-read", "--quick"],
    "parallel-write": ["bench", "parallel-write", "--quick", "--local", "32,32,32", "--reps", "20"],
    "calibrate": ["calibrate", "--quick"],
    "predict": ["bench", "predict", "--quick", "--profile", BUILTIN_PROFILE],
}
def _study_cases():
    for name in STUDIES:
        for sig in SIGNALS:
            yield pytest.param(name, *sig.values, id=f"{name}-{sig.id}")


def _study_args(name, tmp_path) -> list:
    from climio.model.profile import default_profile
    args = list(STUDIES[name])
    if BUILTIN_PROFILE in args:
        path = tmp_path / "profile.json"
        path.write_text(default_profile().to_json())
        args[args.index(BUILTIN_PROFILE)] = path
    return args


@pytest.mark.parametrize("name,sig,code,word", list(_study_cases()))
def test_long_commands_stop_cleanly_keeping_records(job, tmp_path, name, sig, code, word):
    run = tmp_path / "run"
    j = job([*_study_args(name, tmp_path), "-o", run])
    records = run / "records.jsonl"
    assert _wait_for(lambda: records.is_file() and records.stat().st_size > 0 or j.proc.poll() is not None,
                     timeout=240) and j.proc.poll() is None, f"no record written: {j.stderr()}"
    assert glob.glob(str(j.tmp / f"climio-data-{j.proc.pid}-*")), "the study generated no data directory of its own"
    kept = len(records.read_text().splitlines())
    rc = j.stop(sig)
    assert rc == code, j.stderr()
    recs = _records(records)
    assert len(recs) >= kept and all(r.get("study") for r in recs)   # every line whole, none lost
    assert (run / "report.html").is_file()          # the partial report, rendered from the records so far
    assert not glob.glob(str(j.tmp / "climio-data-*")), "generated data left behind"
    assert not j.strays(), "child processes left running"
    assert_clean_stop(j, word)


def test_sigkilled_study_leaves_data_the_next_run_names_and_removes(tmp_path):
    import tempfile
    proc = _start(["bench", "read-stack", "--quick", "--stacks", "numpy", "--no-syscalls", "--reps", "20",
                   "-o", tmp_path / "r1"], tmp_path)
    pattern = os.path.join(tempfile.gettempdir(), f"climio-data-{proc.pid}-*")
    assert _wait_for(lambda: glob.glob(pattern) and (tmp_path / "r1" / "records.jsonl").is_file(), timeout=240)
    proc.kill()
    proc.communicate(timeout=60)
    (left,) = glob.glob(pattern)
    res = run_cli("bench", "read-stack", "--quick", "--stacks", "numpy", "--no-syscalls", "--reps", "1",
                  "-o", tmp_path / "r2", "--no-report")
    assert res.returncode == 0, res.stderr
    assert f"removing {left}" in res.stderr and "killed" in res.stderr
    assert not os.path.exists(left)


def _stsa_input(path):
    """A (time, lat, lon) field with a time axis, big enough that its latitude tasks take seconds."""
    import numpy as np
    import xarray as xr
    nt, ny, nx = 4 * 400, 32, 128
    rng = np.random.default_rng(0)
    coords = {"time": np.datetime64("2001-01-01") + (np.arange(nt) * 6).astype("timedelta64[h]"),
              "lat": ("lat", -90 + (np.arange(ny) + 0.5) * 180 / ny, {"units": "degrees_north"}),
              "lon": ("lon", np.arange(nx) * 360.0 / nx, {"units": "degrees_east"})}
    xr.DataArray(rng.standard_normal((nt, ny, nx)), dims=("time", "lat", "lon"), coords=coords,
                 name="u").to_dataset().to_netcdf(path)
    return path


@pytest.mark.parametrize("sig,code,word", SIGNALS)
def test_stsa_stops_cleanly_with_its_dask_workers(job, tmp_path, sig, code, word):
    out = tmp_path / "out"
    j = job(["stsa", _stsa_input(tmp_path / "u.nc"), "--var", "u", "--lat-band", "all", "--workers", "2",
             "--lat-tasks", "16", "-o", out])
    # stderr is not a terminal: a line per finished task; stop after the first
    assert _wait_for(lambda: any(" done" in l for l in j.err) or j.proc.poll() is not None, timeout=120) \
        and j.proc.poll() is None, f"no task finished: {j.stderr()}"
    rc = j.stop(sig)
    assert rc == code, j.stderr()
    # outputs appear whole at the end only: no directory under the name, no temporary one beside it
    assert not out.exists() or not list(out.iterdir()), "partial outputs left"
    assert not [p.name for p in tmp_path.iterdir() if p.name.startswith(".out.")], "temporary outputs left"
    assert not j.strays(), "Dask workers left running"
    assert_clean_stop(j, word)


@pytest.mark.parametrize("sig,code,word", SIGNALS)
def test_trace_run_stops_its_program_and_keeps_the_trace(job, tmp_path, sig, code, word):
    from climio.trace.reader import read_trace
    traced, pid_file = tmp_path / "t", tmp_path / "pid"
    j = job(["trace", "run", "-o", traced, "--", sys.executable,
             os.path.join(os.path.dirname(__file__), "stops_writer.py"), tmp_path / "data", pid_file])
    assert _wait_for(lambda: "started\n" in j.out or j.proc.poll() is not None, timeout=60) and j.proc.poll() is None, \
        f"the traced program never started: {j.stderr()}"
    pid = int(pid_file.read_text())
    rc = j.stop(sig)
    assert rc == code, j.stderr()
    assert not os.path.exists(f"/proc/{pid}"), "the traced program was not stopped"
    trace = read_trace(traced)                       # what was traced up to the stop, flushed and readable
    (proc,) = [p for p in trace.procs if p.pid == pid]
    assert proc.done and proc.done["end"] == f"signal:{int(sig)}" and not trace.partial
    writes = sum(int((trace.events["func_id"] == trace.id_of(f)).sum()) for f in ("pwrite", "pwrite64")
                 if trace.id_of(f))
    assert writes >= 11                              # the writes before "started", at least
    assert trace.meta["exit_status"] == code
    assert [l for l in j.after_stop() if str(traced) in l], "the trace directory is not named"
    assert not j.strays(), "processes left running"
    assert_clean_stop(j, word)


def test_a_stop_raised_inside_a_finaliser_is_not_printed_but_kept():
    """A signal that lands in a __del__ (a Dask Future released at that moment) used to print
    "Exception ignored ... Traceback"; the stop is recorded and raised again at the next check."""
    code = ("import gc, os, signal, sys\n"
            "from climio.runs import stopping\n"
            "stopping.install()\n"
            "class F:\n"
            "    def __del__(self):\n"
            "        os.kill(os.getpid(), signal.SIGINT)\n"
            "F()\n"
            "gc.collect()\n"
            "try:\n"
            "    stopping.check()\n"
            "except KeyboardInterrupt:\n"
            "    print('stop kept')\n"
            "class G:\n"
            "    def __del__(self):\n"
            "        raise ValueError('other errors are still shown')\n"
            "G()\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert out.stdout.strip() == "stop kept", out.stderr
    assert "KeyboardInterrupt" not in out.stderr and "other errors are still shown" in out.stderr
