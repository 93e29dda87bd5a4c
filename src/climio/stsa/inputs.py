"""The STSA's input: CF netCDF/HDF5 files (one, several, a glob) or an xarray.DataArray, its time,
latitude, longitude (and vertical) axes found from CF attributes and checked, the level and
latitude band selected (:func:`prepare_input` -> :class:`Input`). One-line DataError / InputError
for what STSA cannot analyse."""

from __future__ import annotations

import glob
import os
from dataclasses import dataclass, field
from typing import Optional

import numpy as np

from climio.dataset import integrity
from climio.base.errors import DataError, InputError
from ..measure import dask as dask_cluster
from climio.dataset.options import parse_lat_band

METHODS = ("wk", "hayashi")
WK_LAT_BAND = (-15.0, 15.0)       # WK99's band

_TIME_NAMES = ("time", "t", "times")
_LAT_NAMES = ("lat", "latitude", "nav_lat", "y", "rlat")
_LON_NAMES = ("lon", "longitude", "nav_lon", "x", "rlon")
_LEV_NAMES = ("lev", "level", "plev", "z", "height", "depth", "pressure", "model_level_number", "isobaric")


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
    # Overflow: cftime's; MemoryError: a CDF-1 record count of 2^32-1 (a coordinate of 32 GiB to decode)
    except (OSError, ValueError, KeyError, TypeError, RuntimeError, OverflowError, MemoryError) as exc:
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
    da, axes = _select_level(da, axes, method, level, desc)

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
        da, spd, nt = _wk_days(da, axes, spd, ndaywin, ndayskip, desc)
    order = [axes.time] + ([axes.lev] if axes.lev else []) + [axes.lat, axes.lon]
    da = da.transpose(*order)
    desc.update(spd=spd, n_time=nt, n_lat=int(lat.size), n_lon=int(da.sizes[axes.lon]),
                lat_min=float(lat.min()), lat_max=float(lat.max()))
    return Input(da, axes, method, spd, nt, desc)


def _select_level(da, axes: Axes, method: str, level, desc: dict) -> tuple:
    """(da, axes) with the vertical axis gone when `level` picks one (the nearest value) or there is
    one level; WK refuses several levels; Hayashi keeps them (stacked as pseudo-time later)."""
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
        desc["level"] = float(levs[i])
        desc["level_axis"] = axes.lev
        return da.isel({axes.lev: i}), Axes(axes.time, axes.lat, axes.lon, None)
    if axes.lev is not None and da.sizes[axes.lev] == 1:
        return da.isel({axes.lev: 0}), Axes(axes.time, axes.lat, axes.lon, None)
    if axes.lev is not None and method == "wk":
        raise InputError(f"'{da.name}' has {da.sizes[axes.lev]} levels on '{axes.lev}': choose one with --level")
    if axes.lev is not None:
        desc["levels_stacked_as_time"] = int(da.sizes[axes.lev])
    return da, axes


def _wk_days(da, axes: Axes, spd: float, ndaywin: int, ndayskip: int, desc: dict) -> tuple:
    """WK's checks of the time axis and segments: (da cut to whole days, int samples per day, steps)."""
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
    nt = int(da.sizes[axes.time]) // spd * spd        # complete days (NCL's layout)
    if nt < ndaywin * spd:
        raise DataError(f"the record ({da.sizes[axes.time]} steps, {da.sizes[axes.time] / spd:g} days) is "
                        f"shorter than one segment of {ndaywin} days ({ndaywin * spd} steps)")
    if nt < da.sizes[axes.time]:
        desc["time_steps_dropped"] = int(da.sizes[axes.time] - nt)
        da = da.isel({axes.time: slice(0, nt)})
    return da, spd, nt
