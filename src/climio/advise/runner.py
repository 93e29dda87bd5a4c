"""Run a workflow's reads cold and time them: what `climio predict --check`, the calibration and
the validation study measure.

    measure(path, var, reads, stack, tasks=1, reps=3, ...) -> [record]

One task: the shared repetition loop (measure.series.run_series) in this process: open (untimed),
evict the file and verify with mincore, time the reads, close. N tasks: N processes (spawned once
per call, outside the timed region) each open the file, the parent evicts it once every task has
opened, then all start together and each times its share of the reads (consecutive groups, as
the STSA splits latitudes); the record's wall time is the slowest task's. c-netcdf: the native
slab probe (climio-probe-netcdf-slab), N of them at once for N tasks.
"""

import math
import os
import tempfile
import threading
import time
from concurrent.futures import ProcessPoolExecutor

import numpy as np

from .. import cache, native
from ..errors import DataError, InputError, NativeError
from ..measure.procs import DEFAULT_TIMEOUT_S, kill_streaming, stream_records
from ..measure.series import Series, Timer, run_series, storage_check, storage_read_bytes, total_storage_bytes
from ..records import make_record
from ..stacks import STACKS

STACK_NAMES = ("netcdf4-python", "h5py", "h5netcdf", "xarray", "c-netcdf")


def check_stack(stack: str) -> str:
    if stack not in STACK_NAMES:
        raise InputError(f"unknown stack '{stack}': use {', '.join(STACK_NAMES)}")
    return stack


class _Opened:
    def __init__(self, reader):
        self.reader = reader

    def read(self, s):
        return self.reader.read_slab(*s)

    def close(self):
        self.reader.close()


def _cache_spec(chunk_cache):
    return None if chunk_cache is None else (int(chunk_cache), 4133, 0.75)


def split(reads, tasks) -> list:
    """Consecutive groups of reads, one per task (as equal as possible)."""
    n = len(reads)
    bounds = [round(i * n / tasks) for i in range(tasks + 1)]
    return [reads[a:b] for a, b in zip(bounds, bounds[1:])]


# --- N tasks in processes ----------------------------------------------------------------------------

_STATE = {}


def _task(path, var, stack, reads, chunk_cache, barrier):
    reader = STACKS[stack]()
    reader.open(path, var, _cache_spec(chunk_cache))
    barrier.wait()          # every task has opened
    barrier.wait()          # the parent has evicted the file
    nbytes = 0
    with Timer() as t:
        for s in reads:
            nbytes += reader.read_slab(*s).nbytes
    reader.close()
    return {"bytes": nbytes, "ops": len(reads), **t.metrics()}


def _parallel_rep(pool, barrier, path, var, stack, groups, chunk_cache):
    futs = [pool.submit(_task, path, var, stack, g, chunk_cache, barrier) for g in groups]
    barrier.wait()
    state = cache.prepare([path], "cold")
    io0 = storage_read_bytes()
    barrier.wait()
    t0 = time.perf_counter()
    res = [f.result() for f in futs]
    wall = time.perf_counter() - t0
    return res, state, wall, io0


def _c_probe(path, var, groups, chunk_cache, platform_id, timeout_s=DEFAULT_TIMEOUT_S):
    """The last record of one slab probe per group, all probes at once, each launched through the
    one streamer (its timeout and process-group kill: a hung probe cannot hang climio)."""
    files = []
    try:
        for g in groups:
            fd, name = tempfile.mkstemp(prefix="climio-slices-", suffix=".txt")
            with os.fdopen(fd, "w") as fh:
                for s, c in g:
                    fh.write(" ".join(map(str, [*s, *c])) + "\n")
            files.append(name)
        spec = "default" if chunk_cache is None else f"{int(chunk_cache)},4133,0.75"
        exe = native.program("climio-probe-netcdf-slab")
        recs = [[] for _ in files]
        errors = []

        def launch(i):
            try:
                stream_records([exe, "--file", path, "--var", var, "--slices", files[i], "--reps", "1",
                                "--cache", "cold", "--budget", "0", "--chunk-cache", spec, "--platform-id",
                                platform_id], recs[i].append, timeout_s=timeout_s)
            except Exception as exc:  # noqa: BLE001  (re-raised below, in the caller's thread)
                errors.append(exc)
        # one probe in this thread; several on threads, each streamer timing out on its own
        threads = [threading.Thread(target=launch, args=(i,), daemon=True) for i in range(1, len(files))]
        for t in threads:
            t.start()
        try:
            launch(0)
            for t in threads:
                t.join()
        except BaseException:       # e.g. Ctrl-C: the other threads' probes must not run on
            kill_streaming()
            raise
        if errors:
            raise errors[0]
        if not all(recs):
            raise NativeError("climio-probe-netcdf-slab printed no record")
        return [r[-1] for r in recs]
    finally:
        for name in files:
            os.unlink(name)


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
    wanted = sum(math.prod(c) for _, c in reads)
    base = {"stack": stack, "file": path, "variable": var, "tasks": tasks, "reads": len(reads),
            "chunk_cache": chunk_cache, **(params or {})}
    out = []
    needed = needed_bytes if needed_bytes is not None else 0
    if stack == "c-netcdf":
        for rep in range(reps):
            # Several probes each evict the file and check it with mincore as they start: a sibling
            # already reading makes that check say "warm" (seen under load). With several tasks the
            # file is evicted and checked here, once, before any probe starts; whether the reads then
            # came from storage is the storage-share check's over all probes.
            before = cache.prepare([path], "cold") if len(groups) > 1 else None
            recs = _c_probe(path, var, groups, chunk_cache, platform_id, timeout_s)
            walls = [r["metrics"]["wall_s"] for r in recs]
            m = {"bytes": sum(r["metrics"].get("bytes", 0) for r in recs), "ops": len(reads), "wall_s": max(walls),
                 "task_wall_s": walls, "cpu_s": sum(r["metrics"].get("cpu_s", 0) or 0 for r in recs),
                 "storage_needed_bytes": needed}
            # the probe cannot know the stored bytes a hyperslab needs: check the share here, over all probes
            sb = total_storage_bytes(r["metrics"].get("storage_read_bytes") for r in recs)
            if sb is not None:
                m["storage_read_bytes"] = sb
            states = [r.get("cache") or {"state": "warm"} for r in recs]
            state = before or next((s for s in states if s.get("state") != "cold"), states[0])
            out.append(make_record(study, base, m, storage_check(state, sb, needed), rep, "ok", platform_id))
        return out
    if tasks == 1:
        def open_():
            r = STACKS[stack]()
            r.open(path, var, _cache_spec(chunk_cache))
            return _Opened(r)
        run_series(Series(study=study, path=path, params=base, requests=reads, open=open_,
                          needed_bytes=lambda n: needed, planned_bytes=wanted, reps=reps, platform_id=platform_id),
                   out.append)
        return out
    import multiprocessing as mp
    ctx = mp.get_context("spawn")
    with ctx.Manager() as mgr, ProcessPoolExecutor(max_workers=tasks, mp_context=ctx) as pool:
        barrier = mgr.Barrier(tasks + 1)
        for rep in range(reps):
            res, state, wall, io0 = _parallel_rep(pool, barrier, path, var, stack, groups, chunk_cache)
            walls = [r["wall_s"] for r in res]
            sb = total_storage_bytes(r.get("storage_read_bytes") for r in res)
            m = {"bytes": sum(r["bytes"] for r in res), "ops": len(reads), "wall_s": max(walls),
                 "job_wall_s": wall, "task_wall_s": walls, "cpu_s": sum(r["cpu_s"] for r in res),
                 "user_s": sum(r["user_s"] for r in res), "sys_s": sum(r["sys_s"] for r in res),
                 "storage_needed_bytes": needed}
            if sb is not None:
                m["storage_read_bytes"] = sb
            out.append(make_record(study, base, m, storage_check(state, sb, needed), rep, "ok", platform_id))
    return out


def median_wall(records) -> float:
    w = sorted(r["metrics"]["wall_s"] for r in records if r.get("status") == "ok")
    return float(np.median(w)) if w else float("nan")
