"""One N-task runner: N tasks read at once from a cold page cache, each timed, gathered into one record.

    with TaskPool(n) as pool:                 N spawned processes (started once, outside the timed region)
        results, state, job_s = pool.run([task, ...], paths, "cold")
    outcomes, error = rank_rep(comm, path, (offset, length), shared, work)   the same, as MPI ranks
    gathered(results, sums) -> metrics        slowest task, per-task times, sums, storage bytes
    task_record(study, params, metrics, state, needed, rep, platform_id)   records.make_record + the storage check

A spawned task is an object (picklable) with open(), run() -> {metrics} and close(). Each process opens
(untimed: a netCDF/HDF5 open reads the header, with readahead), waits at a barrier until every task
has opened, the parent brings the files into the asked cache state and checks it with mincore, and
at a second barrier all start together; run() is timed (wall, user, system seconds and the bytes the
process fetched from storage). MPI ranks do the same between two MPI barriers, each rank evicting
its file and checking its own byte range.

And the reads of a workflow, cold, with N tasks (what `climio predict --check`, the calibration and
the model's validation measure):

    measure(path, var, reads, stack, tasks=1, reps=3, ...) -> [record]

One task: the shared repetition loop (measure.series.run_series) in this process. N tasks: the pool
above, each task timing its consecutive group of the reads (as the STSA splits latitudes); the
record's wall time is the slowest task's. c-netcdf: the native slab probe, N of them at once.
"""

import contextlib
import math
import os
import threading
import time
from concurrent.futures import ProcessPoolExecutor

import numpy as np

from climio.machine import cache
from climio.base.errors import DataError, InputError
from climio.runs.records import make_record
from climio.dataset.stack_names import HYPERSLAB_STACKS
from climio.measure.stacks import STACKS
from . import probes
from .procs import DEFAULT_TIMEOUT_S
from .series import Series, Timer, run_series, storage_checked, storage_read_bytes, total_storage_bytes

MEASURED_STACKS = HYPERSLAB_STACKS


def split(items, tasks) -> list:
    """Consecutive groups of `items`, one per task (as equal as possible)."""
    n = len(items)
    bounds = [round(i * n / tasks) for i in range(tasks + 1)]
    return [items[a:b] for a, b in zip(bounds, bounds[1:])]


# --- N spawned processes ------------------------------------------------------------------------------

def _run_task(task, barrier) -> dict:
    """In a task process: open, wait for every task and for the parent's eviction, run timed, close."""
    try:
        task.open()
    except BaseException:
        barrier.abort()     # the parent and the other tasks stop waiting; the parent raises this error
        raise
    barrier.wait()          # every task has opened
    barrier.wait()          # the parent has brought the files into the cache state asked
    with Timer() as t:
        out = task.run() or {}
    task.close()
    return {**out, **t.metrics()}


class TaskPool:
    """`n` spawned worker processes and a barrier of n + 1 (the tasks and this process), kept for
    every repetition run with them. Use as a context manager."""

    def __init__(self, n: int):
        self.n = int(n)
        self._stack = contextlib.ExitStack()

    def __enter__(self):
        from climio.machine import spawning
        ctx = spawning.context()   # spawn, without re-running a user's script (climio.machine.spawning)
        try:
            mgr = self._stack.enter_context(ctx.Manager())
            self._pool = self._stack.enter_context(ProcessPoolExecutor(max_workers=self.n, mp_context=ctx))
            self._barrier = mgr.Barrier(self.n + 1)
        except BaseException:
            self._stack.close()
            raise
        return self

    def __exit__(self, *exc):
        return self._stack.__exit__(*exc)

    def run(self, tasks, paths, state="cold") -> tuple:
        """One repetition of `tasks` (exactly n): (each task's metrics, the record's cache field
        before the storage check, seconds from the common start to the last task's end)."""
        if len(tasks) != self.n:
            raise ValueError(f"{len(tasks)} tasks for a pool of {self.n}")
        futs = [self._pool.submit(_run_task, t, self._barrier) for t in tasks]
        try:
            self._barrier.wait()
            field = cache.prepare(list(paths), state)
            # the clock starts before this process's wait: the tasks are released only once every
            # party has arrived, so no task starts before t0 (after the wait, the manager's reply
            # can reach this process after a task has already started, and job_s would be short)
            t0 = time.perf_counter()
            self._barrier.wait()
        except threading.BrokenBarrierError:    # a task could not open: its own error, not the barrier's
            errors = [f.exception() for f in futs]
            raise next((e for e in errors if not isinstance(e, threading.BrokenBarrierError)), errors[0]) from None
        except BaseException:       # e.g. a stop: the tasks stop waiting, so that the pool can close
            with contextlib.suppress(Exception):
                self._barrier.abort()
            raise
        results = [f.result() for f in futs]
        return results, field, time.perf_counter() - t0


def gathered(results, sums=()) -> dict:
    """The metrics of N tasks together: wall_s of the slowest, task_wall_s of each, the sums of the
    `sums` keys (absent counts as 0), storage_read_bytes when every task counted it."""
    walls = [r["wall_s"] for r in results]
    m = {"wall_s": max(walls), "task_wall_s": walls, **{k: sum(r.get(k) or 0 for r in results) for k in sums}}
    sb = total_storage_bytes(r.get("storage_read_bytes") for r in results)
    if sb is not None:
        m["storage_read_bytes"] = sb
    return m


def task_record(study, params, metrics, state, needed, rep, platform_id) -> dict:
    """An ok record of N tasks: the storage-share check against `needed` bytes, then make_record."""
    return make_record(study, params, metrics, storage_checked(state, metrics, needed), rep, "ok", platform_id)


# --- N MPI ranks --------------------------------------------------------------------------------------

def rank_rep(comm, path, cold_range, shared, work, what="") -> tuple:
    """One cold repetition of `work()` on every rank of `comm` (mpi4py); the barriers and the
    gather are outside the timed region.

    A shared file's first rank writes it back and evicts it first: DONTNEED skips pages still under
    writeback, so ranks evicting one file at once saw each other's dirty pages resident (a "warm"
    cold record under load). Then every rank evicts it (its node's page cache) and checks its own
    `cold_range` (offset, length) with mincore; nothing is read before the second barrier. `work()`
    returns this rank's outcome (a dict); the runner adds total (seconds), start and end (epoch
    seconds), resident (fraction) and storage (bytes fetched from storage, or None).

    Returns (the outcomes of every rank on rank 0, None on the others; "") or (None, the first
    rank's error, `what` + the exception, on every rank)."""
    rank = comm.Get_rank()
    if not shared or rank == 0:
        cache.evict(path)
    comm.Barrier()
    cache.evict(path)
    resident = cache.resident_fraction(path, *cold_range)
    io0 = storage_read_bytes()
    comm.Barrier()
    t0 = time.perf_counter()
    epoch0 = time.time()
    try:
        mine, err = work(), ""
    except Exception as exc:  # noqa: BLE001  (agreed by every rank below; one line)
        mine, err = {}, f"{what}{exc}"
    total = time.perf_counter() - t0
    io1 = storage_read_bytes()
    errs = comm.allgather(err)
    if any(errs):
        return None, next(e for e in errs if e)
    mine.update(total=total, resident=resident, start=epoch0, end=epoch0 + total,
                storage=None if io0 is None or io1 is None else io1 - io0)
    return comm.gather(mine, root=0), ""


# --- a workflow's reads -------------------------------------------------------------------------------

def check_stack(stack: str) -> str:
    if stack not in MEASURED_STACKS:
        raise InputError(f"unknown stack '{stack}': use {', '.join(MEASURED_STACKS)}")
    return stack


class SlabReads:
    """A task (TaskPool) or a Series' open(): hyperslabs of one variable through a Python stack."""

    def __init__(self, path, var, stack, reads=(), chunk_cache=None):
        self.path, self.var, self.stack, self.reads, self.chunk_cache = path, var, stack, reads, chunk_cache
        self.reader = None

    def open(self):
        self.reader = STACKS[self.stack]()
        self.reader.open(self.path, self.var, probes.chunk_cache_spec(self.chunk_cache))
        return self

    def read(self, s):
        return self.reader.read_slab(*s)

    def run(self) -> dict:
        nbytes = 0
        for s in self.reads:
            nbytes += self.read(s).nbytes
        return {"bytes": nbytes, "ops": len(self.reads)}

    def close(self):
        self.reader.close()


def _c_netcdf(path, var, groups, reps, base, study, chunk_cache, platform_id, needed, timeout_s, n_reads) -> list:
    out = []
    for rep in range(reps):
        # Several probes each evict the file and check it with mincore as they start: a sibling
        # already reading makes that check say "warm" (seen under load). With several tasks the
        # file is evicted and checked here, once, before any probe starts; whether the reads then
        # came from storage is the storage-share check's over all probes.
        before = cache.prepare([path], "cold") if len(groups) > 1 else None
        recs = probes.slab_records_at_once(path, var, groups, chunk_cache, platform_id, timeout_s)
        # the probe cannot know the stored bytes a hyperslab needs: check the share here, over all probes
        m = {**gathered([r["metrics"] for r in recs], ("bytes", "cpu_s")), "ops": n_reads}
        states = [r.get("cache") or {"state": "warm"} for r in recs]
        state = before or next((s for s in states if s.get("state") != "cold"), states[0])
        out.append(task_record(study, base, m, state, needed, rep, platform_id))
    return out


def measure(path, var, reads, stack, tasks=1, reps=3, chunk_cache=None, platform_id="", study="predict",
            params=None, needed_bytes=None, timeout_s=DEFAULT_TIMEOUT_S) -> list:
    """Cold records of reading `reads` (list of (start, count)) of `var` in `path` with `tasks` tasks.
    `timeout_s` bounds each native probe (c-netcdf): past it the probe is killed, one NativeError."""
    check_stack(stack)
    path = os.path.abspath(str(path))
    if not os.path.exists(path):
        raise DataError(f"no such file: {path}")
    reads = [(tuple(int(x) for x in s), tuple(int(x) for x in c)) for s, c in reads]
    tasks = int(tasks)
    if tasks < 1:
        raise InputError(f"--tasks {tasks} must be at least 1")
    tasks = min(tasks, len(reads))
    groups = split(reads, tasks)
    base = {"stack": stack, "file": path, "variable": var, "tasks": tasks, "reads": len(reads),
            "chunk_cache": chunk_cache, **(params or {})}
    needed = needed_bytes if needed_bytes is not None else 0
    if stack == "c-netcdf":
        return _c_netcdf(path, var, groups, reps, base, study, chunk_cache, platform_id, needed, timeout_s, len(reads))
    out = []
    if tasks == 1:
        wanted = sum(math.prod(c) for _, c in reads)
        run_series(Series(study=study, path=path, params=base, requests=reads,
                          open=SlabReads(path, var, stack, chunk_cache=chunk_cache).open,
                          needed_bytes=lambda n: needed, planned_bytes=wanted, reps=reps, platform_id=platform_id),
                   out.append)
        return out
    with TaskPool(tasks) as pool:
        for rep in range(reps):
            res, state, job_s = pool.run([SlabReads(path, var, stack, g, chunk_cache) for g in groups], [path])
            m = {**gathered(res, ("bytes", "cpu_s", "user_s", "sys_s")), "ops": len(reads), "job_wall_s": job_s}
            out.append(task_record(study, base, m, state, needed, rep, platform_id))
    return out


def median_wall(records) -> float:
    w = sorted(r["metrics"]["wall_s"] for r in records if r.get("status") == "ok")
    return float(np.median(w)) if w else float("nan")

