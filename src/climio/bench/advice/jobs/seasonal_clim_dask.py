"""Seasonal climatology with Dask: chunks of 120 days, mean per season, each season's tropical mean."""
import sys

import xarray as xr

ds = xr.open_dataset(sys.argv[1], chunks={"time": 120})
clim = ds.tas.groupby("time.season").mean("time").compute()
for s in clim.season.values:
    c = clim.sel(season=s)
    print(s, f"{float(c.sel(lat=slice(-30, 30)).mean()):.2f}", f"{float(c.max()):.2f}")
