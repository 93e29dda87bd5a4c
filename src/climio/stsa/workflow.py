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

import glob
import os
import resource
import sys
import time
from dataclasses import dataclass, field
from typing import Optional

import numpy as np

from .. import integrity
from ..errors import DataError, InputError
from ..measure import dask as dask_cluster
from ..options import parse_lat_band
from .. import stopping
from . import direct, readplan
from . import spectra as sp

METHODS = ("wk", "hayashi")
DEFAULT_TASKS = 16                # the thesis's 16 latitude tasks
WK_LAT_BAND = (-15.0, 15.0)       # WK99's band
SCHEDULER_TIMEOUT_S = dask_cluster.SCHEDULER_TIMEOUT_S
CPU_SLOT, IO_SLOT = "stsa-compute", "stsa-read"   # worker resources of climio's LocalCluster

_TIME_NAMES = ("time", "t", "times")
_LAT_NAMES = ("lat", "latitude", "nav_lat", "y", "rlat")
_LON_NAMES = ("lon", "longitude", "nav_lon", "x", "rlon")
_LEV_NAMES = ("lev", "level", "plev", "z", "height", "depth", "pressure", "model_level_number", "isobaric")


# ------------------------------------------------------------------------------------------------
# Input: files, variable, axes
# ------------------------------------------------------------------------------------------------

def expand_files(files) -> list:
    """Paths from a file, a list of files and/or glob patterns (sorted per pattern); DataError when
    one matches nothing."""
    if isinstance(files, (str, os.PathLike)):
        files = [files]
    out = []
    for f in files:
        f = os.path.expanduser(str(f))
        if any(c in f for c in "*?["):
            hits = sorted(glob.glob(f))
            if not hits:
                raise DataError(f"no file matches '{f}'")
            out += hits
        elif not os.path.exists(f):
            raise DataError(f"no such file: {f}")
        elif os.path.isdir(f):
            raise DataError(f"{f} is a directory, not a netCDF/HDF5 file")
        else:
            out.append(f)
    if not out:
        raise InputError("no input files given")
    return list(dict.fromkeys(out))


_one_line = dask_cluster.one_line


def open_input(files, var=None, engine=None):
    """(DataArray, paths): the variable `var` of one file (xarray.open_dataset, lazy, no Dask) or of
    several combined by their coordinates (xarray.open_mfdataset, Dask-backed)."""
    import xarray as xr
    paths = expand_files(files)
    integrity.check(*paths)   # a truncated or zeroed file is one line here, not zeros read later
    try:
        if len(paths) == 1:
            ds = xr.open_dataset(paths[0], engine=engine)
        else:
            ds = xr.open_mfdataset(paths, engine=engine, combine="by_coords", data_vars="minimal",
                                   coords="minimal", compat="override", join="exact")
    except (OSError, ValueError, KeyError, TypeError, RuntimeError) as exc:
        where = paths[0] if len(paths) == 1 else f"{len(paths)} files ({paths[0]} ...)"
        raise DataError(f"cannot open {where} as netCDF/HDF5: {_one_line(exc)}") from None
    names = [n for n, v in ds.data_vars.items() if v.ndim >= 3]
    if var is None:
        if len(names) != 1:
            raise InputError(f"choose a variable with --var: {', '.join(names) or '(none with 3 or more dimensions)'}")
        var = names[0]
    if var not in ds.data_vars:
        where = paths[0] if len(paths) == 1 else f"the {len(paths)} files"
        raise DataError(f"no variable '{var}' in {where}: choose from {', '.join(ds.data_vars) or '(none)'}")
    return ds[var], paths


@dataclass(frozen=True)
class Axes:
    time: str
    lat: str
    lon: str
    lev: Optional[str] = None


def _attrs(da, dim):
    return da[dim].attrs if dim in da.coords else {}


def _is(da, dim, axis, standard, names, units=()):
    a = _attrs(da, dim)
    if str(a.get("axis", "")).upper() == axis or a.get("standard_name") in standard:
        return True
    if units and str(a.get("units", "")).lower() in units:
        return True
    return dim.lower() in names


def find_axes(da) -> Axes:
    """The time, latitude, longitude (and vertical) dimensions of `da` by CF attributes (axis,
    standard_name, units) or usual names; DataError naming the missing one."""
    found = {"time": None, "lat": None, "lon": None, "lev": None}
    for d in da.dims:
        d = str(d)
        if found["time"] is None and (_is(da, d, "T", ("time",), _TIME_NAMES) or
                                      (d in da.coords and np.issubdtype(da[d].dtype, np.datetime64))):
            found["time"] = d
        elif found["lat"] is None and _is(da, d, "Y", ("latitude", "grid_latitude"), _LAT_NAMES,
                                          ("degrees_north", "degree_north", "degrees_n")):
            found["lat"] = d
        elif found["lon"] is None and _is(da, d, "X", ("longitude", "grid_longitude"), _LON_NAMES,
                                          ("degrees_east", "degree_east", "degrees_e")):
            found["lon"] = d
        elif found["lev"] is None and _is(da, d, "Z", ("air_pressure", "altitude", "height", "depth",
                                                       "model_level_number", "atmosphere_hybrid_sigma_pressure_coordinate"),
                                          _LEV_NAMES):
            found["lev"] = d
    name = da.name or "the variable"
    for key, word in (("time", "time"), ("lat", "latitude"), ("lon", "longitude")):
        if found[key] is None:
            raise DataError(f"'{name}' has no {word} axis (dimensions: {', '.join(map(str, da.dims))})")
    other = [str(d) for d in da.dims if str(d) not in found.values()]
    if other:
        raise DataError(f"'{name}' has dimensions STSA does not know: {', '.join(other)} "
                        "(select them away first, e.g. da.isel(member=0))")
    return Axes(**found)


def samples_per_day(time_coord) -> float:
    """Samples per day from an equally spaced time coordinate (datetime64, cftime or CF numbers)."""
    t = time_coord.values
    if len(t) < 2:
        raise DataError("the time axis has fewer than two steps")
    if np.issubdtype(t.dtype, np.datetime64):
        dt = np.diff(t).astype("timedelta64[ns]").astype(np.float64) / 1e9
    elif t.dtype == object and hasattr(t[0], "calendar"):   # cftime
        dt = np.array([(b - a).total_seconds() for a, b in zip(t[:-1], t[1:])])
    else:
        units = str(time_coord.attrs.get("units", "")).split(" since ")[0].strip().lower()
        scale = {"seconds": 1, "second": 1, "s": 1, "minutes": 60, "minute": 60, "hours": 3600, "hour": 3600,
                 "h": 3600, "days": 86400, "day": 86400, "d": 86400}.get(units)
        if scale is None:
            raise DataError(f"cannot tell the time step from time units '{time_coord.attrs.get('units', '')}': "
                            "give samples per day with --spd")
        dt = np.diff(np.asarray(t, dtype=np.float64)) * scale
    step = float(np.median(dt))
    if step <= 0 or np.max(np.abs(dt - step)) > 1e-6 * step:
        raise DataError("the time steps are not equally spaced (or not increasing): STSA needs a regular series")
    return 86400.0 / step


def check_longitude(lon) -> None:
    """Equally spaced and covering the circle once (the transform is periodic in longitude)."""
    lon = np.asarray(lon, dtype=np.float64)
    n = lon.size
    if n < 3:
        raise DataError(f"only {n} longitudes: STSA needs the whole latitude circle")
    d = np.mod(np.diff(lon), 360.0)
    step = 360.0 / n
    if np.max(np.abs(d - step)) > 1e-4 * step:
        span = lon.max() - lon.min() + float(np.median(d))
        raise DataError(f"the longitude is not cyclic: {n} points from {lon.min():g} to {lon.max():g} cover "
                        f"{span:g} degrees, not 360 in equal steps (STSA needs the whole latitude circle)")


def check_equator(lat) -> None:
    """WK's symmetric/antisymmetric split needs latitudes ordered and mirrored about the equator."""
    lat = np.asarray(lat, dtype=np.float64)
    if lat.size < 2 or not (lat.min() < 0 < lat.max()):
        raise DataError(f"the latitudes ({lat.min():g} to {lat.max():g}) do not straddle the equator: the WK "
                        "symmetric/antisymmetric split needs both hemispheres (e.g. --lat-band -15,15)")
    if np.max(np.abs(lat + lat[::-1])) > 1e-3:
        raise DataError(f"the latitudes ({lat.min():g} to {lat.max():g}) are not mirrored about the equator "
                        "(lat[i] = -lat[n-1-i]); choose a symmetric --lat-band")


@dataclass
class Input:
    """A checked (time, [level,] lat, lon) variable ready to be split into latitude tasks."""

    da: object                      # xarray.DataArray, dims ordered (time, [lev,] lat, lon)
    axes: Axes
    method: str
    spd: float
    n_time: int
    description: dict = field(default_factory=dict)   # files, variable, level, lat band: for attributes

    @property
    def n_lat(self) -> int:
        return int(self.da.sizes[self.axes.lat])

    @property
    def n_lon(self) -> int:
        return int(self.da.sizes[self.axes.lon])

    @property
    def n_lev(self) -> int:
        return int(self.da.sizes[self.axes.lev]) if self.axes.lev else 1


def prepare_input(da, method="wk", level=None, lat_band="default", spd=None, ndaywin=96, ndayskip=-65,
                  paths=None) -> Input:
    """Find and check the axes of `da`, select the level and latitude band, derive samples per day.

    ``level``: a value of the vertical coordinate (the nearest is taken). With levels left and no
    ``level``: WK refuses; Hayashi stacks them as pseudo-time, level-major, as the thesis did.
    ``lat_band``: (south, north) degrees; "default" is -15,15 for WK and every latitude for Hayashi.
    """
    if method not in METHODS:
        raise InputError(f"unknown method '{method}': choose from {', '.join(METHODS)}")
    axes = find_axes(da)
    desc = {"variable": str(da.name), "method": method}
    if paths:
        desc["files"] = [str(p) for p in paths]
    if level is not None:
        if axes.lev is None:
            raise InputError(f"--level {level} given but '{da.name}' has no vertical axis")
        try:
            value = float(level)
        except (TypeError, ValueError):
            raise InputError(f"malformed --level '{level}': give a value of the vertical coordinate") from None
        levs = np.asarray(da[axes.lev].values, dtype=np.float64) if axes.lev in da.coords \
            else np.arange(da.sizes[axes.lev], dtype=np.float64)
        i = int(np.argmin(np.abs(levs - value)))
        da = da.isel({axes.lev: i})
        desc["level"] = float(levs[i])
        desc["level_axis"] = axes.lev
        axes = Axes(axes.time, axes.lat, axes.lon, None)
    elif axes.lev is not None and da.sizes[axes.lev] == 1:
        da = da.isel({axes.lev: 0})
        axes = Axes(axes.time, axes.lat, axes.lon, None)
    elif axes.lev is not None and method == "wk":
        raise InputError(f"'{da.name}' has {da.sizes[axes.lev]} levels on '{axes.lev}': choose one with --level")
    elif axes.lev is not None:
        desc["levels_stacked_as_time"] = int(da.sizes[axes.lev])

    band = parse_lat_band(WK_LAT_BAND if (lat_band == "default" and method == "wk")
                          else (None if lat_band == "default" else lat_band))
    if axes.lat not in da.coords:
        raise DataError(f"'{da.name}' has no latitude coordinate values on '{axes.lat}'")
    if band is not None:
        lat = np.asarray(da[axes.lat].values, dtype=np.float64)
        keep = np.flatnonzero((lat >= band[0] - 1e-6) & (lat <= band[1] + 1e-6))
        if keep.size == 0:
            raise DataError(f"no latitude of '{da.name}' lies in the band {band[0]:g},{band[1]:g} "
                            f"(latitudes {lat.min():g} to {lat.max():g})")
        da = da.isel({axes.lat: keep})
        desc["lat_band"] = [band[0], band[1]]
    lat = np.asarray(da[axes.lat].values, dtype=np.float64)
    if lat.size > 1 and lat[0] > lat[-1]:
        da = da.isel({axes.lat: slice(None, None, -1)})
        lat = lat[::-1]
    if np.any(np.diff(lat) <= 0):
        raise DataError("the latitudes are not monotonic")
    if axes.lon not in da.coords:
        raise DataError(f"'{da.name}' has no longitude coordinate values on '{axes.lon}'")
    check_longitude(da[axes.lon].values)
    if method == "wk":
        check_equator(lat)
    if spd is None:
        if axes.time not in da.coords:
            raise DataError("no time coordinate values: give samples per day with --spd")
        spd = samples_per_day(da[axes.time])
    else:
        spd = float(spd)
        if spd <= 0:
            raise InputError(f"--spd {spd:g} must be positive")
    nt = int(da.sizes[axes.time])
    if method == "wk":
        if abs(spd - round(spd)) > 1e-6 or round(spd) < 1:
            raise DataError(f"{spd:g} samples per day: WK needs a whole number of samples per day")
        spd = int(round(spd))
        if ndaywin < 1 or ndaywin + ndayskip <= 0:
            raise InputError(f"--ndaywin {ndaywin} and --ndayskip {ndayskip}: need ndaywin >= 1 and "
                             "ndaywin + ndayskip > 0")
        if (ndaywin * spd) % 2:
            raise InputError(f"--ndaywin {ndaywin} x {spd} samples per day is odd: WK needs an even number "
                             "of samples per segment")
        if da.sizes[axes.lon] % 2:
            raise DataError(f"{da.sizes[axes.lon]} longitudes: WK needs an even number")
        nt = nt // spd * spd                           # complete days (NCL's layout)
        if nt < ndaywin * spd:
            raise DataError(f"the record ({da.sizes[axes.time]} steps, {da.sizes[axes.time] / spd:g} days) is "
                            f"shorter than one segment of {ndaywin} days ({ndaywin * spd} steps)")
        if nt < da.sizes[axes.time]:
            da = da.isel({axes.time: slice(0, nt)})
            desc["time_steps_dropped"] = int(da.sizes[axes.time] - nt)
    order = [axes.time] + ([axes.lev] if axes.lev else []) + [axes.lat, axes.lon]
    da = da.transpose(*order)
    desc.update(spd=spd, n_time=nt, n_lat=int(lat.size), n_lon=int(da.sizes[axes.lon]),
                lat_min=float(lat.min()), lat_max=float(lat.max()))
    return Input(da, axes, method, spd, nt, desc)


# ------------------------------------------------------------------------------------------------
# Tasks
# ------------------------------------------------------------------------------------------------

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
    """Plan ``runs``: size the variable's HDF5 chunk cache to hold every chunk this task touches
    (readplan.chunk_cache_bytes), never below what it has. Returns the cache bytes now set, or None
    where there is nothing to tune (contiguous, in memory, Dask-backed, another engine)."""
    if spec.read_plan != "runs" or not parts:
        return None
    var, lock = _netcdf4_variable(parts[0])
    if var is None:
        return None
    with lock:
        chunking = var.chunking()
        if chunking == "contiguous" or spec.axes.lat not in var.dimensions:
            return None
        want = readplan.chunk_cache_bytes(readplan.row_runs(spec.rows), var.dimensions, var.shape, chunking,
                                          var.dtype.itemsize, spec.axes.lat, set(map(str, parts[0].dims)))
        size, slots, preemption = var.get_var_chunk_cache()
        if want is not None and want[0] > size:
            var.set_var_chunk_cache(size=want[0], nelems=max(slots, want[1]), preemption=preemption)
            size = want[0]
    return int(size)


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
    cache_bytes = tune_chunk_cache(parts, spec)
    info = {}
    block = read_block(parts, spec, info)
    w1, cpu1, io1 = time.perf_counter(), _cpu(), _io_bytes()
    out = {"task": spec.index, "rows": list(spec.rows), "worker": where, "start": start, "block": block,
           "bytes": int(block.nbytes), "read_wall_s": w1 - w0, "read_cpu_s": cpu1 - cpu0,
           "read_plan": spec.read_plan, "reader": info["reader"], "chunk_cache_bytes": cache_bytes}
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


# ------------------------------------------------------------------------------------------------
# Running the tasks
# ------------------------------------------------------------------------------------------------

class Cluster(dask_cluster.Cluster):
    """climio's cluster for the STSA (measure.dask.Cluster): to `scheduler` (an existing cluster), or a
    LocalCluster of `workers` worker processes, each with `threads` compute threads (resource CPU_SLOT)
    and one more thread that only reads (IO_SLOT): run_tasks reads the next task there while the slots
    compute, so reading and computing overlap (netCDF-C, HDF5 and the FFTs release the GIL).
    threads=1 is the thesis's one computing task per worker."""

    def __init__(self, workers=None, scheduler=None, silence=True, timeout_s=SCHEDULER_TIMEOUT_S, threads=1):
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


def _say(msg: str) -> None:
    sys.stderr.write(msg.rstrip() + "\n")
    sys.stderr.flush()
    stopping.check()       # a stop swallowed inside Dask (e.g. in a gc callback) while waiting


def rows_text(rows) -> str:
    rows = list(rows)
    return ",".join(map(str, rows)) if len(rows) <= 4 else f"{rows[0]},{rows[1]}..{rows[-2]},{rows[-1]}"


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
    if client is not None or (workers is None and scheduler is None):
        where = "in this process" if client is None else f"client {getattr(client, 'scheduler', '')}"
        results, wall = run_tasks(inp, specs, client, progress)
    else:
        with Cluster(workers, scheduler) as cl:
            results, wall = run_tasks(inp, specs, cl.client, progress)
            where = cl.where
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
