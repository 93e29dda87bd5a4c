"""A region's hyperslab per month with h5py (30-day steps over a 20 x 40 degree box): its mean and max."""
import sys

import h5py
import numpy as np

with h5py.File(sys.argv[1], "r") as f:
    tas = f["tas"]
    nt, ny, nx = tas.shape
    j0, j1, i0, i1 = ny * 110 // 180, ny * 130 // 180, nx // 36, nx * 5 // 36
    for t in range(0, nt, 30):
        slab = tas[t:t + 30, j0:j1, i0:i1].astype(np.float64)
        print(t, f"{slab.mean():.2f}", f"{slab.max():.2f}")
