"""What one STSA latitude task does on a worker: the latitudes it holds (:func:`task_rows`), its
read (:func:`read_task`: the plan of :mod:`climio.stsa.readplan`, the HDF5 chunk cache sized for it,
a contiguous variable through :mod:`climio.stsa.direct`), its compute (:func:`compute_task`: the
summed power of :mod:`climio.stsa.spectra`), each timed (wall and CPU of this thread), and the
files a worker holds open between reads. :mod:`climio.stsa.workflow` submits these to Dask."""

from __future__ import annotations

import os
import resource
import time
from dataclasses import dataclass
from typing import Optional

import numpy as np

from climio.base.errors import DataError, InputError
from . import direct, readplan
from . import spectra as sp
from .inputs import Axes

DEFAULT_TASKS = 16                # the thesis's 16 latitude tasks


def task_rows(n_lat: int, method: str, n_tasks=None) -> list:
    """Latitude row indices of each task (ascending). WK: mirror pairs (i, n-1-i) stay in one task,
    the equator row with the pairs nearest it; Hayashi: contiguous bands."""
    n_tasks = DEFAULT_TASKS if n_tasks is None else int(n_tasks)
    if n_tasks < 1:
        raise InputError(f"--lat-tasks {n_tasks} must be at least 1")
    if method == "hayashi":
        groups = np.array_split(np.arange(n_lat), min(n_tasks, n_lat))
        return [g.tolist() for g in groups if g.size]
    h = n_lat // 2
    out = []
    for g in np.array_split(np.arange(h), min(n_tasks, max(h, 1))):
        if g.size:
            south = g.tolist()
            out.append(south + [n_lat - 1 - i for i in reversed(south)])
    if n_lat % 2:
        out[-1] = sorted(out[-1] + [h])
    return out


@dataclass(frozen=True)
class TaskSpec:
    """What one task does besides reading: method and its parameters; compute=False reads only."""

    index: int
    rows: tuple
    method: str
    spd: float
    ndaywin: int = 96
    ndayskip: int = -65
    remove_low: Optional[bool] = None
    taper_fraction: float = sp.NCL_TAPER_FRACTION
    compute: bool = True
    axes: Axes = None
    read_plan: str = readplan.DEFAULT_READ_PLAN


def _io_bytes():
    """Bytes this worker process fetched from storage (measure.series.storage_read_bytes)."""
    from ..measure.series import storage_read_bytes
    return storage_read_bytes()


def _where() -> str:
    try:
        from distributed import get_worker
        return get_worker().address
    except (ImportError, ValueError):
        return f"pid {os.getpid()}"


def _cpu() -> float:
    """CPU seconds of this thread (a worker reads in one thread while it computes in another)."""
    ru = resource.getrusage(getattr(resource, "RUSAGE_THREAD", resource.RUSAGE_SELF))
    return ru.ru_utime + ru.ru_stime


def task_parts(da, spec: TaskSpec) -> list:
    """What a task reads, as lazy DataArrays: one per run of adjacent rows (plan ``runs``), or one
    holding all its rows (plan ``latitude``, read a row at a time)."""
    lat = spec.axes.lat
    if spec.read_plan == "latitude":
        return [da.isel({lat: list(spec.rows)})]
    return [da.isel({lat: slice(a, b)}) for a, b in readplan.row_runs(spec.rows)]


def _netcdf4_variable(part):
    """(the netCDF4.Variable under a lazily indexed xarray DataArray (engine netcdf4), the lock
    xarray holds around every call into netCDF-C for that file), else (None, None). netCDF-C is not
    thread-safe: a worker with several threads reads in one task while another asks this."""
    try:
        from xarray.backends.netCDF4_ import NetCDF4ArrayWrapper
    except ImportError:
        return None, None
    d = _backend_array(part)
    if not isinstance(d, NetCDF4ArrayWrapper):
        return None, None
    lock = d.datastore.lock
    with lock:
        return d.get_array(needs_lock=False), lock


def _backend_array(part):
    """The backend's array under a lazily indexed DataArray (the wrapper that has a datastore:
    xarray's NetCDF4ArrayWrapper, H5NetCDFArrayWrapper, ...), or None (in memory, Dask-backed)."""
    d = getattr(part.variable, "_data", None)
    for _ in range(16):                       # MemoryCached / CopyOnWrite / LazilyIndexed wrappers
        if d is None or hasattr(d, "datastore"):
            return d
        d = getattr(d, "array", None)
    return None


def tune_chunk_cache(parts, spec: TaskSpec):
    """The variable's HDF5 chunk cache as the task reads with it ({nbytes, nslots, w0, source}), or
    None where there is none to read (contiguous, in memory, Dask-backed, another engine). Plan
    ``runs`` sizes it to hold every chunk this task touches (readplan.chunk_cache_bytes), never
    below what it has; otherwise it is the library's own for the variable."""
    if not parts:
        return None
    var, lock = _netcdf4_variable(parts[0])
    if var is None:
        return None
    with lock:
        chunking = var.chunking()
        if not isinstance(chunking, (list, tuple)):   # contiguous, or netCDF-3 (no chunk cache at all)
            return None
        size, slots, preemption = var.get_var_chunk_cache()
        source = "the library's for the variable"
        if spec.read_plan == "runs" and spec.axes.lat in var.dimensions:
            want = readplan.chunk_cache_bytes(readplan.row_runs(spec.rows), var.dimensions, var.shape, chunking,
                                              var.dtype.itemsize, spec.axes.lat, set(map(str, parts[0].dims)))
            if want is not None and want[0] > size:
                slots = max(slots, want[1])
                var.set_var_chunk_cache(size=want[0], nelems=slots, preemption=preemption)
                size, source = want[0], "sized by the runs read plan"
    return {"nbytes": int(size), "nslots": int(slots), "w0": float(preemption), "source": source}


def read_block(parts, spec: TaskSpec, info=None) -> np.ndarray:
    """The task's data as (time [x levels, level-major], rows, lon) float64, read as its plan says
    (see :mod:`climio.stsa.readplan`); ``parts`` from :func:`task_parts`. A contiguous netCDF-4
    variable is read through h5py, its sieve buffer sized for where the bytes are
    (:mod:`climio.stsa.direct`);
    ``info["reader"]`` says which reader served the task."""
    import dask
    ax = spec.axes
    first = parts[0]
    nt, nx = first.sizes[ax.time], first.sizes[ax.lon]
    nz = first.sizes[ax.lev] if ax.lev else 1
    nrow = sum(p.sizes[ax.lat] for p in parts)
    out = np.empty((nz * nt, nrow, nx), dtype=np.float64)
    reader = direct.READER_XARRAY
    with dask.config.set(scheduler="synchronous"):   # never the distributed client from inside a task
        if spec.read_plan == "latitude":
            (sub,) = parts
            for j in range(nrow):
                for iz in range(nz):
                    sel = {ax.lat: j, ax.lev: iz} if ax.lev else {ax.lat: j}
                    out[iz * nt:(iz + 1) * nt, j, :] = np.asarray(sub[sel].values, dtype=np.float64)
        else:
            plans = [direct.plan(p) for p in parts]
            if all(plans):
                try:
                    reader = _read_direct(parts, plans, out, ax)
                except (OSError, KeyError, ValueError, TypeError):   # not what netCDF-C showed: read as before
                    plans = [None]
            if not all(plans):
                _read_xarray(parts, out, ax)
    if info is not None:
        info["reader"] = reader
    return out


def _read_direct(parts, plans, out, ax) -> str:
    if not ax.lev and direct.stackable(plans):   # one read of the task's runs, in file order
        return direct.read_union(plans, out)
    j, reader = 0, None
    for part, pl in zip(parts, plans):           # dims (time, [lev,] lat, lon): the file's order
        r = part.sizes[ax.lat]
        tmp = np.empty(part.shape, dtype=np.float64)
        reader = direct.read_into(pl, tmp)
        if ax.lev:                               # (T, Z, r, X) -> level-major pseudo-time
            tmp = tmp.transpose(1, 0, 2, 3).reshape(-1, r, tmp.shape[-1])
        out[:, j:j + r, :] = tmp
        j += r
    return reader


def _read_xarray(parts, out, ax) -> None:
    j = 0
    nx = out.shape[-1]
    for part in parts:                           # dims (time, [lev,] lat, lon): prepare_input's order
        vals = np.asarray(part.values, dtype=np.float64)
        r = vals.shape[-2]
        if ax.lev:                               # (T, Z, r, X) -> level-major pseudo-time
            vals = vals.transpose(1, 0, 2, 3).reshape(-1, r, nx)
        out[:, j:j + r, :] = vals
        j += r


def read_task(parts, spec: TaskSpec, after=None, hold=False) -> dict:
    """Read the task's latitudes (``parts`` from :func:`task_parts`): the block (key "block") and the
    read's timings (wall and CPU), plan, reader and chunk cache. ``after``: ignored (what Dask made
    the read wait for, see :func:`_submit_pipelined`); ``hold``: keep the task's files open until
    the next read (:data:`_OPEN_FILES`)."""
    where, start = _where(), time.time()
    if hold:
        _keep_open(parts)
    io0, cpu0, w0 = _io_bytes(), _cpu(), time.perf_counter()
    cache = tune_chunk_cache(parts, spec)
    info = {}
    block = read_block(parts, spec, info)
    w1, cpu1, io1 = time.perf_counter(), _cpu(), _io_bytes()
    out = {"task": spec.index, "rows": list(spec.rows), "worker": where, "start": start, "block": block,
           "bytes": int(block.nbytes), "read_wall_s": w1 - w0, "read_cpu_s": cpu1 - cpu0,
           "read_plan": spec.read_plan, "reader": info["reader"], "chunk_cache": cache,
           "chunk_cache_bytes": cache["nbytes"] if cache else None}
    if io0 is not None and io1 is not None:
        out["storage_read_bytes"] = io1 - io0
    return out


# The xarray file managers of this worker's latest read task. xarray closes a file -- and with it
# the HDF5 chunk cache the runs plan sized -- as soon as no lazy array refers to it any more. Reading
# loads a task's arrays (so they let go of the file), and a pipelined worker's next read may arrive
# only after that: measured with default chunks, every other task then re-read the whole variable
# (0.2 s instead of 0.02 s). Holding the managers until the next read has its own keeps the files
# open as they stay when whole tasks are queued on a worker. run_tasks lets go of them at the end.
_OPEN_FILES: list = []


def _keep_open(parts) -> None:
    managers = (getattr(getattr(_backend_array(p), "datastore", None), "_manager", None) for p in parts)
    _OPEN_FILES[:] = {id(m): m for m in managers if m is not None}.values()


def release_files() -> None:
    """Let go of the files :func:`_keep_open` holds (run on every worker when a job ends)."""
    _OPEN_FILES.clear()


def compute_task(read, spec: TaskSpec) -> dict:
    """The task's summed spectra from :func:`read_task`'s result (unless spec.compute is False), with
    the compute's timings; the block is dropped."""
    out = {k: v for k, v in read.items() if k != "block"}
    block = read["block"]
    w1, cpu1 = time.perf_counter(), _cpu()
    if spec.compute:
        if not np.isfinite(block).all():
            bad = int(np.size(block) - np.count_nonzero(np.isfinite(block)))
            raise DataError(f"{bad} missing (NaN or fill) values in latitude rows {rows_text(spec.rows)}: "
                            "STSA needs a complete record (fill the gaps first)")
        out.update(_compute(block, spec))
    w2, cpu2 = time.perf_counter(), _cpu()
    out.update(compute_wall_s=w2 - w1, compute_cpu_s=cpu2 - cpu1, compute_worker=_where(),
               wall_s=out["read_wall_s"] + (w2 - w1), cpu_s=out["read_cpu_s"] + (cpu2 - cpu1), end=time.time())
    return out


def run_task(parts, spec: TaskSpec) -> dict:
    """Read the task's latitudes and, unless spec.compute is False, compute their summed spectra, in
    one go (:func:`read_task` then :func:`compute_task`). Returns timings (wall and CPU of the read,
    the compute and the whole task), the read plan, reader and chunk cache used, and the partial sums."""
    return compute_task(read_task(parts, spec), spec)


def _compute(block, spec: TaskSpec) -> dict:
    if spec.method == "hayashi":
        h = sp.hayashi_power(block, spd=spec.spd, time_axis=0, lon_axis=-1)
        return {"eastward": h.eastward.sum(0), "westward": h.westward.sum(0),
                "stationary": h.stationary.sum(0), "n_rows": block.shape[1]}
    spd = int(spec.spd)
    xp, removed = sp.prepare(block, spd, spec.ndaywin, spec.remove_low)
    p_sym, p_asym, seg_var = sp.wk_power_sums(xp, spd, spec.ndaywin, spec.ndayskip, spec.taper_fraction)
    return {"p_sym": p_sym, "p_asym": p_asym, "segment_variance": seg_var, "removed_low": removed}


def rows_text(rows) -> str:
    rows = list(rows)
    return ",".join(map(str, rows)) if len(rows) <= 4 else f"{rows[0]},{rows[1]}..{rows[-2]},{rows[-1]}"


def close_cached_files() -> int:
    """Close the files xarray keeps open in this process (run on every worker between cold
    repetitions so that no HDF5 chunk cache survives); returns how many were closed."""
    release_files()
    try:
        from xarray.backends.file_manager import FILE_CACHE
    except ImportError:
        return 0
    n = 0
    for key in list(FILE_CACHE.keys()):
        f = FILE_CACHE.pop(key, None)
        if f is not None:
            try:
                f.close()
                n += 1
            except Exception:  # noqa: BLE001
                pass
    return n
