"""The study's CMIP-style input: `tas(time, lat, lon)` float32, deflate level 4 + shuffle, CF
coordinates (noleap daily time with bounds, lat/lon with bounds), as CMOR writes it, in one of two
chunk layouts:

    maps    [1, ny, nx]: one map per chunk (what CMOR and most model output writers do)
    series  [nt, ceil(ny/10), ceil(nx/10)]: time-series chunks (what archives rechunk to for point reads)

    layout_chunks(layout, nt, ny, nx) -> chunk shape
    write_tas(path, nt, ny, nx, chunks, seed) -> path  (under a temporary name, renamed when complete)

Values as bench/make_cmor_tas.py makes them: a latitude profile, a seasonal cycle, travelling
waves and weather noise (so deflate compresses them as it does model output), one year at a time.
"""

import math
import os

import numpy as np

LAYOUTS = ("maps", "series")


def layout_chunks(layout, nt, ny, nx) -> tuple:
    if layout == "maps":
        return (1, ny, nx)
    if layout == "series":
        return (nt, math.ceil(ny / 10), math.ceil(nx / 10))
    raise ValueError(f"unknown layout {layout!r}: {', '.join(LAYOUTS)}")


def _field(t0, nt, lat, lon, rng) -> np.ndarray:
    la = np.deg2rad(lat)[:, None]
    lo = np.deg2rad(lon)[None, :]
    base = 300.0 - 45.0 * np.sin(la) ** 2 + 4.0 * np.cos(3 * lo) * np.cos(la) ** 2 + 2.0 * np.sin(2 * lo + la)
    t = np.arange(t0, t0 + nt, dtype=np.float64)[:, None, None]
    season = 12.0 * np.sin(la)[None] * np.cos(2 * np.pi * (t - 15.0) / 365.0)
    waves = 3.0 * np.cos(la)[None] * np.sin(6 * lo[None] - 2 * np.pi * t / 7.0 + 2 * la[None])
    noise = rng.normal(0.0, 0.6, size=(nt, lat.size, lon.size))
    return (base[None] + season + waves + noise).astype(np.float32)


def _axis(ds, name, n, lo, step, axis, units):
    v = ds.createVariable(name, "f8", (name,))
    v.setncatts({"bounds": f"{name}_bnds", "units": units, "axis": axis, "standard_name":
                 "latitude" if axis == "Y" else "longitude"})
    c = lo + step * np.arange(n)
    v[:] = c
    ds.createVariable(f"{name}_bnds", "f8", (name, "bnds"))[:] = np.stack([c - step / 2, c + step / 2], axis=1)
    return c


def write_tas(path, nt, ny, nx, chunks, seed=0) -> str:
    import netCDF4
    tmp = f"{path}.tmp-{os.getpid()}"
    rng = np.random.default_rng(seed)
    try:
        with netCDF4.Dataset(tmp, "w", format="NETCDF4") as ds:
            ds.setncatts({"Conventions": "CF-1.7 CMIP-6.2", "frequency": "day", "variable_id": "tas",
                          "source_id": "CLIMIO-BENCH", "title": "synthetic tas for climio bench advice"})
            for n, s in (("time", None), ("lat", ny), ("lon", nx), ("bnds", 2)):
                ds.createDimension(n, s)
            tv = ds.createVariable("time", "f8", ("time",))
            tv.setncatts({"bounds": "time_bnds", "units": "days since 1850-01-01", "calendar": "noleap",
                          "axis": "T", "standard_name": "time"})
            tb = ds.createVariable("time_bnds", "f8", ("time", "bnds"))
            lat = _axis(ds, "lat", ny, -90 + 90 / ny, 180 / ny, "Y", "degrees_north")
            lon = _axis(ds, "lon", nx, 180 / nx, 360 / nx, "X", "degrees_east")
            tas = ds.createVariable("tas", "f4", ("time", "lat", "lon"), zlib=True, complevel=4, shuffle=True,
                                    chunksizes=tuple(int(c) for c in chunks), fill_value=np.float32(1e20))
            tas.setncatts({"standard_name": "air_temperature", "units": "K", "cell_methods": "area: time: mean"})
            # a time-series chunk spans every step: write a year at a time all the same (bounded memory;
            # the library keeps the partial chunks in its cache, sized to hold them)
            tas.set_var_chunk_cache(size=int(min(1 << 30, 4 * np.prod(chunks) * math.ceil(ny / chunks[1]) *
                                                  math.ceil(nx / chunks[2]) + (1 << 20))), nelems=100_003)
            for t0 in range(0, nt, 365):
                n = min(365, nt - t0)
                days = np.arange(t0, t0 + n, dtype=np.float64)
                tv[t0:t0 + n] = days + 0.5
                tb[t0:t0 + n] = np.stack([days, days + 1.0], axis=1)
                tas[t0:t0 + n] = _field(t0, n, lat, lon, rng)
        os.replace(tmp, path)
    finally:
        if os.path.exists(tmp):
            os.remove(tmp)
    return path
