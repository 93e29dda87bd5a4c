"""CMIP/CMOR-like netCDF-4 files of rank 2 to 5 for the dataset-seam tests: real CF metadata
(axis, standard_name, units, bounds, a `coordinates` auxiliary) as CMOR writes it."""

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
