"""A Hovmoeller diagram: the 10S-10N band mean (time x lon), then its 30-day means at six longitudes."""
import sys

import xarray as xr

ds = xr.open_dataset(sys.argv[1])
hov = ds.tas.sel(lat=slice(-10, 10)).mean("lat")
monthly = hov.coarsen(time=30, boundary="trim").mean()
for row in monthly.values[:, :: max(1, monthly.sizes["lon"] // 6)]:
    print(" ".join(f"{x:.2f}" for x in row))
