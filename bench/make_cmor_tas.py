"""A CMOR-like daily near-surface air temperature file for the advise benchmarks (issue 34, item 5).

    .venv/bin/python bench/make_cmor_tas.py OUT.nc [--nt 3650] [--seed 0] [--force]

Writes `tas(time, lat, lon)` float32 [3650, 90, 180] (10 years of days on a 2-degree grid) as a
CMIP6 file written by CMOR would hold it: netCDF-4, deflate level 4 + shuffle, chunks
[1, 90, 180] (one map per day), CF attributes (standard_name, units, cell_methods, ...), the
coordinate variables time/lat/lon with `bounds` and their bounds variables time_bnds, lat_bnds,
lon_bnds (so `tas` is not the only multi-dimensional variable), and global attributes. Values are
smooth (a latitude profile, a seasonal cycle, land-sea-like structure and travelling synoptic
waves) plus weather noise, which deflate compresses to about 130 MB (of 236 MB), as model
output does. Memory stays bounded (one year at a time); the file is written under a temporary
name and renamed when complete.
"""

import argparse
import os
import sys

import netCDF4
import numpy as np

NLAT, NLON = 90, 180


def field(t0: int, nt: int, rng) -> np.ndarray:
    """Days t0..t0+nt-1 of tas in K: smooth structure plus noise (float32)."""
    lat = np.deg2rad(np.linspace(-89.0, 89.0, NLAT))[:, None]
    lon = np.deg2rad(np.linspace(1.0, 359.0, NLON))[None, :]
    base = 300.0 - 45.0 * np.sin(lat) ** 2 + 4.0 * np.cos(3 * lon) * np.cos(lat) ** 2 + 2.0 * np.sin(2 * lon + lat)
    t = np.arange(t0, t0 + nt, dtype=np.float64)[:, None, None]
    season = 12.0 * np.sin(lat)[None] * np.cos(2 * np.pi * (t - 15.0) / 365.0)
    waves = 3.0 * np.cos(lat)[None] * np.sin(6 * lon[None] - 2 * np.pi * t / 7.0 + 2 * lat[None])
    noise = rng.normal(0.0, 0.6, size=(nt, NLAT, NLON))
    return (base[None] + season + waves + noise).astype(np.float32)


def write(path: str, nt: int = 3650, seed: int = 0) -> str:
    tmp = f"{path}.tmp-{os.getpid()}"
    rng = np.random.default_rng(seed)
    try:
        with netCDF4.Dataset(tmp, "w", format="NETCDF4") as ds:
            ds.setncatts({"Conventions": "CF-1.7 CMIP-6.2", "activity_id": "CMIP", "experiment_id": "historical",
                          "frequency": "day", "table_id": "day", "variable_id": "tas", "variant_label": "r1i1p1f1",
                          "source_id": "CLIMIO-BENCH", "grid_label": "gn", "title": "synthetic tas for climio benches"})
            ds.createDimension("time", None)
            ds.createDimension("lat", NLAT)
            ds.createDimension("lon", NLON)
            ds.createDimension("bnds", 2)
            tv = ds.createVariable("time", "f8", ("time",))
            tv.setncatts({"bounds": "time_bnds", "units": "days since 1850-01-01", "calendar": "noleap",
                          "axis": "T", "long_name": "time", "standard_name": "time"})
            tb = ds.createVariable("time_bnds", "f8", ("time", "bnds"))
            for name, n, lo, step, axis, units in (("lat", NLAT, -89.0, 2.0, "Y", "degrees_north"),
                                                  ("lon", NLON, 1.0, 2.0, "X", "degrees_east")):
                v = ds.createVariable(name, "f8", (name,))
                v.setncatts({"bounds": f"{name}_bnds", "units": units, "axis": axis,
                             "long_name": "Latitude" if name == "lat" else "Longitude",
                             "standard_name": "latitude" if name == "lat" else "longitude"})
                c = lo + step * np.arange(n)
                v[:] = c
                b = ds.createVariable(f"{name}_bnds", "f8", (name, "bnds"))
                b[:] = np.stack([c - step / 2, c + step / 2], axis=1)
            tas = ds.createVariable("tas", "f4", ("time", "lat", "lon"), zlib=True, complevel=4, shuffle=True,
                                    chunksizes=(1, NLAT, NLON), fill_value=np.float32(1e20))
            tas.setncatts({"standard_name": "air_temperature", "long_name": "Near-Surface Air Temperature",
                           "units": "K", "cell_methods": "area: time: mean", "cell_measures": "area: areacella",
                           "coordinates": "height", "missing_value": np.float32(1e20)})
            h = ds.createVariable("height", "f8", ())
            h.setncatts({"units": "m", "axis": "Z", "positive": "up", "standard_name": "height"})
            h.assignValue(2.0)
            for t0 in range(0, nt, 365):
                n = min(365, nt - t0)
                days = np.arange(t0, t0 + n, dtype=np.float64)
                tv[t0:t0 + n] = days + 0.5
                tb[t0:t0 + n] = np.stack([days, days + 1.0], axis=1)
                tas[t0:t0 + n] = field(t0, n, rng)
        os.replace(tmp, path)
    finally:
        if os.path.exists(tmp):
            os.remove(tmp)
    return path


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("out")
    ap.add_argument("--nt", type=int, default=3650, help="days (default 3650)")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--force", action="store_true", help="overwrite OUT")
    a = ap.parse_args(argv)
    if os.path.exists(a.out) and not a.force:
        print(f"{a.out} exists (--force to overwrite)", file=sys.stderr)
        return 2
    if a.nt < 1:
        print(f"--nt {a.nt} must be at least 1", file=sys.stderr)
        return 2
    write(a.out, a.nt, a.seed)
    print(f"{a.out}: {os.path.getsize(a.out) / 1e6:.0f} MB")
    return 0


if __name__ == "__main__":
    sys.exit(main())
