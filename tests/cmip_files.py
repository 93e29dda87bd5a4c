"""CMIP/CMOR-like netCDF-4 files for the tests and benches, with real CF metadata as CMOR writes it:
- write_cmip: one variable of rank 2 to 5 (axis, standard_name, units, bounds, a `coordinates`
  auxiliary) for the dataset-seam tests;
- write_set: monthly files, one per span of years, named tas_Amon_<model>_<calendar>_YYYY01-YYYY12.nc,
  time in 'days since 1850-01-01' of the given calendar with bounds, a float field with _FillValue
  and a few missing values, global attributes of which `creation_date` and `tracking_id` differ per
  file, for the many-files tests and bench."""

import netCDF4
import numpy as np

# name -> (length, attributes); the order a CMOR file uses: time, [member], [plev], lat, lon
DIMS = {
    "time": (12, {"axis": "T", "standard_name": "time", "units": "days since 1850-01-01", "bounds": "time_bnds"}),
    "realization": (3, {"standard_name": "realization", "units": "1"}),
    "plev": (4, {"axis": "Z", "standard_name": "air_pressure", "units": "Pa", "positive": "down"}),
    "lat": (8, {"axis": "Y", "standard_name": "latitude", "units": "degrees_north", "bounds": "lat_bnds"}),
    "lon": (16, {"axis": "X", "standard_name": "longitude", "units": "degrees_east", "bounds": "lon_bnds"}),
}


def write_cmip(path, dims=("time", "lat", "lon"), var="tas", chunks=None, deflate=0, lengths=None, seed=0):
    """A CMOR-like file: `var` over `dims` (float32, values seeded), coordinate variables with CF
    attributes and their bounds, a scalar `height` named by `coordinates`. Returns the data."""
    lengths = {**{d: n for d, (n, _) in DIMS.items()}, **(lengths or {})}
    rng = np.random.default_rng(seed)
    with netCDF4.Dataset(path, "w", format="NETCDF4") as ds:
        ds.createDimension("bnds", 2)
        for d in dims:
            ds.createDimension(d, lengths[d])
            c = ds.createVariable(d, "f8", (d,))
            c.setncatts(DIMS[d][1])
            c[:] = np.arange(lengths[d])
            if "bounds" in DIMS[d][1]:
                b = ds.createVariable(DIMS[d][1]["bounds"], "f8", (d, "bnds"))
                b[:] = np.stack([np.arange(lengths[d]), np.arange(lengths[d]) + 1], axis=1)
        h = ds.createVariable("height", "f8", ())
        h.setncatts({"units": "m", "axis": "Z", "standard_name": "height"})
        kw = {"chunksizes": chunks} if chunks else {"contiguous": not deflate}
        v = ds.createVariable(var, "f4", dims, zlib=bool(deflate), complevel=deflate or 4, shuffle=bool(deflate),
                              fill_value=np.float32(1e20), **kw)
        v.setncatts({"standard_name": "air_temperature", "units": "K", "coordinates": "height",
                     "cell_methods": "time: mean"})
        data = rng.standard_normal([lengths[d] for d in dims]).astype("f4")
        v[:] = data
    return data

DAYS_PER_YEAR = {"standard": None, "noleap": 365, "360_day": 360}


def month_bounds(calendar: str, year0: int, years: int) -> np.ndarray:
    """[n, 2] bounds of the months of `years` years from year0, in days since 1850-01-01."""
    edges = []
    for y in range(year0, year0 + years + 1):
        for m in range(1, 13):
            edges.append((y, m))
            if y == year0 + years:
                break
    import cftime
    nums = cftime.date2num([cftime.datetime(y, m, 1, calendar=calendar) for y, m in edges],
                           "days since 1850-01-01", calendar=calendar)
    nums = np.asarray(nums, "f8")
    return np.stack([nums[:-1], nums[1:]], axis=1)


def write_set(directory, calendar: str, spans, ny=18, nx=24, seed=0, model="CLIMIO-ESM") -> list:
    """One file per (first year, years) span; returns the paths (in the order written)."""
    rng = np.random.default_rng(seed)
    paths = []
    for k, (year0, years) in enumerate(spans):
        bnds = month_bounds(calendar, year0, years)
        path = directory / f"tas_Amon_{model}_{calendar}_{year0}01-{year0 + years - 1}12.nc"
        with netCDF4.Dataset(path, "w") as ds:
            ds.Conventions, ds.source_id, ds.experiment_id = "CF-1.7 CMIP-6.2", model, "historical"
            ds.creation_date, ds.tracking_id = f"2026-01-{k + 1:02d}T00:00:00Z", f"hdl:21.14100/{seed}-{k}"
            ds.createDimension("time", None)
            ds.createDimension("lat", ny)
            ds.createDimension("lon", nx)
            ds.createDimension("bnds", 2)
            t = ds.createVariable("time", "f8", ("time",))
            t.units, t.calendar, t.axis, t.bounds, t.standard_name = ("days since 1850-01-01", calendar, "T",
                                                                      "time_bnds", "time")
            t[:] = bnds.mean(axis=1)
            ds.createVariable("time_bnds", "f8", ("time", "bnds"))[:] = bnds
            lat = ds.createVariable("lat", "f8", ("lat",))
            lat.units, lat.standard_name, lat.axis, lat.bounds = "degrees_north", "latitude", "Y", "lat_bnds"
            edges = np.linspace(-90, 90, ny + 1)
            lat[:] = (edges[:-1] + edges[1:]) / 2
            ds.createVariable("lat_bnds", "f8", ("lat", "bnds"))[:] = np.stack([edges[:-1], edges[1:]], 1)
            lon = ds.createVariable("lon", "f8", ("lon",))
            lon.units, lon.standard_name, lon.axis = "degrees_east", "longitude", "X"
            lon[:] = np.arange(nx) * 360.0 / nx
            tas = ds.createVariable("tas", "f4", ("time", "lat", "lon"), chunksizes=(1, ny, nx), zlib=True,
                                    complevel=1, shuffle=True, fill_value=np.float32(1e20))
            tas.units, tas.standard_name, tas.cell_methods = "K", "air_temperature", "area: time: mean"
            data = (250 + 40 * rng.random((len(bnds), ny, nx))).astype("f4")
            data[0, :2, :3] = 1e20
            tas[:] = data
        paths.append(path)
    return paths
