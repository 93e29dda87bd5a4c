"""A Nino3.4-style index: the area mean over 5S-5N, 170W-120W of every day, then its annual means."""
import sys

import numpy as np
import xarray as xr

ds = xr.open_dataset(sys.argv[1])
box = ds.tas.sel(lat=slice(-5, 5), lon=slice(190, 240))
w = np.cos(np.deg2rad(box.lat))
index = box.weighted(w).mean(("lat", "lon"))
annual = index.groupby(index.time.dt.year).mean()
for y, v in zip(annual.year.values, annual.values):
    print(int(y), f"{v:.2f}")
