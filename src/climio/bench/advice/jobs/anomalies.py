"""Daily anomalies from the monthly climatology; the global-mean anomaly of each year's last day."""
import sys

import numpy as np
import xarray as xr

ds = xr.open_dataset(sys.argv[1])
tas = ds.tas
clim = tas.groupby("time.month").mean("time")
anom = tas.groupby("time.month") - clim
w = np.cos(np.deg2rad(tas.lat))
gm = anom.weighted(w).mean(("lat", "lon"))
for y, v in zip(gm.time.dt.year.values[364::365], gm.values[364::365]):
    print(int(y), f"{v:.2f}")
print("std", f"{float(anom.std()):.2f}")
