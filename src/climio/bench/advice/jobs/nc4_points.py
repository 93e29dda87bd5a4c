"""25 point series read with netCDF4-python, one var[:, j, i] per point: mean, max and hot days."""
import sys

import netCDF4
import numpy as np

with netCDF4.Dataset(sys.argv[1]) as ds:
    tas = ds["tas"]
    nt, ny, nx = tas.shape
    for k in range(25):
        j, i = (7 + 5 * k) * ny // 180, (3 + 14 * k) * nx // 360
        s = np.asarray(tas[:, j, i], dtype=np.float64)
        print(k, f"{s.mean():.2f}", f"{s.max():.2f}", int((s > s.mean() + 10).sum()))
