"""Monthly climatology with Dask: open with the file's chunks (chunks={}), mean per calendar month."""
import sys

import numpy as np
import xarray as xr

ds = xr.open_dataset(sys.argv[1], chunks={})
clim = ds.tas.groupby("time.month").mean("time").compute()
w = np.cos(np.deg2rad(clim.lat))
for m, v in zip(clim.month.values, clim.weighted(w).mean(("lat", "lon")).values):
    print(int(m), f"{v:.2f}")
