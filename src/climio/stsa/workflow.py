"""STSA on data as users have it: CF netCDF/HDF5 files (one, several, a glob) or an xarray.DataArray,
split into latitude tasks and run on Dask distributed, each task timing its read and its compute.

    open_input(files, var, engine) -> (DataArray, [paths])      files, globs; one-line DataError
    prepare_input(da, method, level, lat_band, spd, ...) -> Input  axes found and checked
    analyse(inp, ..., client / workers / scheduler) -> SpectraRun   spectra + per-task timings
    wk(da, ndaywin=96, ndayskip=-65, ...) -> WKSpectra             the Python API
    hayashi(da, ...) -> HayashiSpectrum

The split is the thesis's (ch. 6): the latitude axis is cut into contiguous tasks; a task reads
its latitudes one (time, longitude) slab at a time (and one slab per level where levels are
stacked as pseudo-time, as the thesis did) and computes on them. Wheeler-Kiladis tasks hold whole
mirror pairs (latitude ``i`` with ``n-1-i``), so that each task does its own symmetric /
antisymmetric split; the equator row, if any, goes with the pairs nearest it. Tasks return summed
power; the client adds them up in task order, so the result does not depend on how many workers
ran them (bit-identical for any worker count), and equals the whole-array numerics of
:mod:`climio.stsa.spectra` to rounding.

Where it runs: ``client=`` an existing ``distributed.Client``; ``scheduler="tcp://host:8786"`` an
existing cluster; ``workers=N`` a ``LocalCluster`` of N worker processes (one compute and one reading thread each); none of
these: the default client if one is active, else in this process (the API's default). The
``climio stsa`` command starts a LocalCluster with one worker per core unless told otherwise.

On an HPC system, start the scheduler and workers with the batch system and pass the address:

* dask-jobqueue (``pip install dask-jobqueue``) from a login node::

      from dask_jobqueue import SLURMCluster
      cluster = SLURMCluster(cores=1, processes=1, memory="8GB", walltime="01:00:00")
      cluster.scale(jobs=16)            # 16 single-core workers, one per latitude task
      print(cluster.scheduler_address)  # then: climio stsa ... --scheduler tcp://...

  or pass ``client=Client(cluster)`` to :func:`wk` / :func:`hayashi`.
* dask-mpi (``pip install dask-mpi mpi4py``) inside one batch job::

      srun -n 18 dask-mpi --scheduler-file sched.json --nthreads 1 &   # rank 0 scheduler, 1 client
      climio stsa 'u_*.nc' --var u --scheduler "$(python -c 'import json;print(json.load(open("sched.json"))["address"])')"

The workers must see the files under the same paths (a shared file system).

Reading and computing overlap on workers that declare the resources ``stsa-read=1`` and
``stsa-compute=N`` with N + 1 threads (as climio's LocalCluster does): each task is then a read on the
worker's reading thread and a compute on a compute slot, and a worker reads the next task while it
computes (:func:`_submit_pipelined`). Such workers: ``dask worker ADDRESS --nthreads 2 --resources
"stsa-read=1,stsa-compute=1"``, or dask-jobqueue's ``SLURMCluster(cores=2, processes=1,
worker_extra_args=["--resources", "stsa-read=1,stsa-compute=1"])``. Other workers run each task
whole: read, then compute.
"""

from __future__ import annotations

import os
import sys
import time
from dataclasses import dataclass

import numpy as np

from climio.base.errors import DataError, InputError
from ..measure import dask as dask_cluster
from climio.runs import stopping
from . import readplan
from . import spectra as sp
# the input and the task are modules of their own; their names stay reachable here (the face callers use)
from .inputs import METHODS, WK_LAT_BAND, Input, open_input, prepare_input  # noqa: F401
from .tasks import (DEFAULT_TASKS, TaskSpec, close_cached_files,  # noqa: F401
                    compute_task, read_block, read_task, release_files, rows_text, run_task, task_parts,
                    task_rows)

CPU_SLOT, IO_SLOT = "stsa-compute", "stsa-read"   # worker resources of climio's LocalCluster


class StsaCluster(dask_cluster.Cluster):
    """climio's cluster for the STSA (measure.dask.Cluster): to `scheduler` (an existing cluster), or a
    LocalCluster of `workers` worker processes, each with `threads` compute threads (resource CPU_SLOT)
    and one more thread that only reads (IO_SLOT): run_tasks reads the next task there while the slots
    compute, so reading and computing overlap (netCDF-C, HDF5 and the FFTs release the GIL).
    threads=1 is the thesis's one computing task per worker."""

    def __init__(self, workers=None, scheduler=None, silence=True, timeout_s=dask_cluster.SCHEDULER_TIMEOUT_S, threads=1):
        threads = int(threads)
        super().__init__(workers, scheduler, threads=threads + 1, resources={CPU_SLOT: threads, IO_SLOT: 1},
                         warm_up=warm_up, silence=silence, timeout_s=timeout_s,
                         threads_text=f"{threads} compute thread(s) + 1 reading")


def warm_up() -> None:
    """Import what a task needs (xarray, netCDF4, the numerics) in this worker process."""
    import xarray  # noqa: F401
    try:
        import netCDF4  # noqa: F401
    except ImportError:
        pass
    from . import spectra  # noqa: F401


def _say(msg: str) -> None:
    sys.stderr.write(msg.rstrip() + "\n")
    sys.stderr.flush()
    stopping.check()       # a stop swallowed inside Dask (e.g. in a gc callback) while waiting


def _task_line(r: dict, done: int, n: int) -> str:
    return (f"stsa: {done}/{n} done: task {r['task']} (latitude rows {rows_text(r['rows'])}) on {r['worker']}: read "
            f"{r['read_wall_s']:.2f} s wall / {r['read_cpu_s']:.2f} s CPU, compute {r['compute_wall_s']:.2f} s")


def run_tasks(inp: Input, specs, client=None, progress=False) -> tuple:
    """Run the tasks (on `client`, or here when None); (results in task order, job wall seconds)."""
    subs = [task_parts(inp.da, s) for s in specs]
    t0 = time.perf_counter()
    if client is None:
        results = []
        for i, (sub, s) in enumerate(zip(subs, specs), 1):
            results.append(run_task(sub, s))
            if progress:
                _say(_task_line(results[-1], i, len(specs)))
        return results, time.perf_counter() - t0
    from distributed import as_completed
    args = []
    for parts in subs:
        lazy = getattr(parts[0].variable, "_in_memory", True) is False or parts[0].chunks is not None
        args.append(parts if lazy else client.scatter(parts, direct=False))
    tag = f"{os.getpid()}-{time.time_ns()}"
    slots = compute_slots(client)
    if slots:
        futures, every = _submit_pipelined(client, args, specs, slots, tag)
    else:
        futures = [client.submit(run_task, a, s, pure=False, key=f"stsa-task-{s.index}-{tag}")
                   for a, s in zip(args, specs)]
        every = futures
    try:
        if progress and sys.stderr.isatty():
            from distributed import progress as dask_progress
            dask_progress(futures)
        elif progress:
            for done, fut in enumerate(as_completed(futures), 1):
                if fut.status == "error":
                    break
                _say(_task_line(fut.result(), done, len(futures)))
        results = client.gather(futures)
    except BaseException:
        # no client.cancel: it raised an AssertionError in the scheduler (stimulus_cancel) for tasks
        # the pipelined graph holds; the futures released here end the tasks no one waits for
        del futures, every
        raise
    finally:
        if slots:
            try:
                client.run(release_files)
            except Exception:  # noqa: BLE001  (a worker gone: its files went with it)
                pass
    return list(results), time.perf_counter() - t0


def compute_slots(client) -> int:
    """Compute slots of the cluster when every worker has both a reading thread (IO_SLOT) and
    compute slots (CPU_SLOT), as :class:`Cluster` starts them; 0 otherwise (e.g. a --scheduler's
    workers: each task then reads and computes in one thread)."""
    try:
        workers = client.scheduler_info().get("workers", {}).values()
    except Exception:  # noqa: BLE001  (no answer: run the tasks whole)
        return 0
    res = [w.get("resources") or {} for w in workers]
    if not res or not all(r.get(IO_SLOT, 0) >= 1 and r.get(CPU_SLOT, 0) >= 1 for r in res):
        return 0
    return int(sum(r[CPU_SLOT] for r in res))


def _submit_pipelined(client, args, specs, slots, tag) -> tuple:
    """Each task as a read (on a worker's reading thread) and a compute depending on it (on a compute
    slot, where the block is), so that while the slots compute, the reading threads read the next
    tasks. Task k's read also waits for task k - 2 x slots to finish computing: at most two blocks
    per compute slot are held (one computing, one read ahead), whatever the number of tasks.
    Returns (compute futures, every future submitted); Dask places and runs them all."""
    ahead = 2 * slots
    computes, marks = [], []
    for i, (a, s) in enumerate(zip(args, specs)):
        after = marks[i - ahead] if i >= ahead else None
        r = client.submit(read_task, a, s, after, True, pure=False, resources={IO_SLOT: 1}, key=f"stsa-read-{s.index}-{tag}")
        c = client.submit(compute_task, r, s, pure=False, resources={CPU_SLOT: 1}, key=f"stsa-task-{s.index}-{tag}")
        computes.append(c)
        marks.append(client.submit(_finished, c, pure=False, key=f"stsa-done-{s.index}-{tag}"))
    return computes, computes + marks


def _finished(result) -> None:
    """A token that a task has computed (what a later read waits for, without its spectra)."""
    return None


def _specs(inp: Input, n_tasks, compute, ndaywin, ndayskip, remove_low, taper_fraction,
           read_plan=readplan.DEFAULT_READ_PLAN):
    if read_plan not in readplan.READ_PLANS:
        raise InputError(f"unknown read plan '{read_plan}': choose from {', '.join(readplan.READ_PLANS)}")
    rows = task_rows(inp.n_lat, inp.method, n_tasks)
    return [TaskSpec(i, tuple(r), inp.method, inp.spd, ndaywin, ndayskip, remove_low, taper_fraction, compute,
                     inp.axes, read_plan)
            for i, r in enumerate(rows)]


@dataclass
class SpectraRun:
    """One run: the spectra (None when only reading), per-task timings, the job wall time."""

    method: str
    spectra: object                 # WKSpectra, HayashiSpectrum or None
    tasks: list                     # per task: rows, worker, bytes, read/compute/total wall and CPU, start, end
    job_wall_s: float
    where: str
    description: dict

    @property
    def bytes(self) -> int:
        return int(sum(t["bytes"] for t in self.tasks))

    def timings(self) -> dict:
        keys = ("read_wall_s", "read_cpu_s", "compute_wall_s", "compute_cpu_s", "wall_s", "cpu_s")
        return {"job_wall_s": self.job_wall_s, "bytes": self.bytes, "n_tasks": len(self.tasks),
                "equivalent_rate_MBps": self.bytes / self.job_wall_s / 1e6 if self.job_wall_s > 0 else None,
                **{f"sum_{k}": float(sum(t[k] for t in self.tasks)) for k in keys}}


def combine(inp: Input, results, ndaywin=96, ndayskip=-65, taper_fraction=sp.NCL_TAPER_FRACTION, extra=None):
    """The spectra from the tasks' partial sums, added in task order."""
    results = sorted(results, key=lambda r: r["task"])
    if inp.method == "hayashi":
        n = sum(r["n_rows"] for r in results)
        east = sum((r["eastward"] for r in results[1:]), results[0]["eastward"].copy()) / n
        west = sum((r["westward"] for r in results[1:]), results[0]["westward"].copy()) / n
        stat = sum((r["stationary"] for r in results[1:]), results[0]["stationary"].copy()) / n
        nt = inp.n_time * inp.n_lev
        m = inp.n_lon
        return sp.HayashiSpectrum(east, west, stat, np.arange(m // 2 + 1), np.arange(1, nt // 2 + 1) * inp.spd / nt)
    p_sym = results[0]["p_sym"].copy()
    p_asym = results[0]["p_asym"].copy()
    seg_var = results[0]["segment_variance"]
    for r in results[1:]:
        p_sym += r["p_sym"]
        p_asym += r["p_asym"]
        seg_var += r["segment_variance"]
    spd = int(inp.spd)
    n_samp = ndaywin * spd
    params = dict(spd=spd, n_day_win=ndaywin, n_day_skip=ndayskip, taper_fraction=taper_fraction,
                  detrend_segments=True, n_lat=inp.n_lat, n_lon=inp.n_lon, n_time=inp.n_time,
                  removed_low_frequencies=bool(results[0]["removed_low"]),
                  n_windows=len(sp.window_starts(inp.n_time, spd, ndaywin, ndayskip)), **(extra or {}))
    return sp.wk_from_power(p_sym, p_asym, sp.wk_wavenumbers(inp.n_lon), sp.wk_frequencies(n_samp, spd),
                            ndaywin, seg_var, params)


def analyse(inp: Input, ndaywin=96, ndayskip=-65, n_tasks=None, compute=True, client=None, workers=None,
            scheduler=None, progress=False, remove_low=None, taper_fraction=sp.NCL_TAPER_FRACTION,
            read_plan=readplan.DEFAULT_READ_PLAN) -> SpectraRun:
    """Run the latitude tasks of `inp` where told (see the module docstring) and combine them.
    ``read_plan``: how a task reads its rows, "runs" (default) or the thesis's "latitude"
    (:mod:`climio.stsa.readplan`)."""
    specs = _specs(inp, n_tasks, compute, ndaywin, ndayskip, remove_low, taper_fraction, read_plan)
    if client is None and workers is None and scheduler is None:
        try:
            from distributed import default_client
            client = default_client()
        except (ImportError, ValueError):
            client = None
    try:
        if client is not None or (workers is None and scheduler is None):
            where = "in this process" if client is None else f"client {getattr(client, 'scheduler', '')}"
            results, wall = run_tasks(inp, specs, client, progress)
        else:
            with StsaCluster(workers, scheduler) as cl:
                results, wall = run_tasks(inp, specs, cl.client, progress)
                where = cl.where
    except (RuntimeError, OSError) as exc:   # netCDF-C/HDF5 on a damaged chunk, raised in a task
        msg = str(exc).splitlines()[0] if str(exc) else ""
        if "NetCDF" in msg or "HDF" in msg or isinstance(exc, OSError) and exc.errno is None:
            raise DataError(f"cannot read {inp.description.get('variable', 'the variable')}: {msg[:160]}") from None
        raise
    extra = {"n_tasks": len(specs), "read_plan": read_plan}
    spectra = combine(inp, results, ndaywin, ndayskip, taper_fraction, extra) if compute else None
    tasks = [{k: v for k, v in r.items() if not isinstance(v, np.ndarray) and k not in
              ("segment_variance", "removed_low", "n_rows")} for r in sorted(results, key=lambda r: r["task"])]
    return SpectraRun(inp.method, spectra, tasks, wall, where, dict(inp.description, n_tasks=len(specs), read_plan=read_plan))


# ------------------------------------------------------------------------------------------------
# The Python API
# ------------------------------------------------------------------------------------------------

def wk(da, ndaywin=96, ndayskip=-65, spd=None, level=None, lat_band=WK_LAT_BAND, n_tasks=None, client=None,
       workers=None, scheduler=None, progress=False, remove_low=None, taper_fraction=sp.NCL_TAPER_FRACTION):
    """Wheeler-Kiladis (1999) spectra of an xarray.DataArray (time, [level,] lat, lon), as NCL's
    ``wkSpaceTime``: see :func:`climio.stsa.spectra.wk_spectra` for the steps and normalisation.

    ``spd`` (samples per day) defaults to the time coordinate's step; ``lat_band`` (default -15,15,
    WK99's; None for every latitude) must be mirrored about the equator; ``level`` picks a value of
    the vertical coordinate. Dask-backed arrays work. Where it runs: see the module docstring.
    Returns a :class:`~climio.stsa.spectra.WKSpectra`; its ``params`` say what was done.
    """
    inp = prepare_input(da, "wk", level=level, lat_band=lat_band, spd=spd, ndaywin=ndaywin, ndayskip=ndayskip)
    return analyse(inp, ndaywin, ndayskip, n_tasks, True, client, workers, scheduler, progress,
                   remove_low, taper_fraction).spectra


def hayashi(da, spd=None, level=None, lat_band=None, n_tasks=None, client=None, workers=None, scheduler=None,
            progress=False):
    """Hayashi (1971) eastward / westward / stationary power of an xarray.DataArray (time, [level,]
    lat, lon), averaged over its latitudes (the thesis's per-task mean, over the whole band).

    With a vertical axis and no ``level``, levels are stacked as pseudo-time (the thesis's 40
    levels x 240 hours). Returns a :class:`~climio.stsa.spectra.HayashiSpectrum`.
    """
    inp = prepare_input(da, "hayashi", level=level, lat_band=lat_band, spd=spd)
    return analyse(inp, n_tasks=n_tasks, client=client, workers=workers, scheduler=scheduler,
                   progress=progress).spectra
