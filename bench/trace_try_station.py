"""The station-extraction case of issue 35, before and after `climio trace try`.

A CMOR-like daily file (tas[time, lat=180, lon=360] float32, deflate4+shuffle, chunks [1, 90, 180]:
one map in four chunks) and the user's script: 25 station series picked with
`ds.tas.sel(lat=, lon=, method="nearest").load()`, then annual maxima. The script is traced
(`climio trace run`), reported (`climio trace report`: the items ranked before anything is tried) and
tried (`climio trace try --reps N`): every fix measured cold, the baseline in the same rounds.

    python bench/trace_try_station.py [--years 5] [--reps 2] [--dir /tmp/climio-station]

Prints the report's first item before trying, and the try table: the first item's measured time
against the baseline, and the best fix's.
"""

import argparse
import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np

SCRIPT = """import numpy as np, xarray as xr
ds = xr.open_dataset("tas_day.nc")
for k in range(25):
    s = ds.tas.sel(lat=-60 + 5 * k, lon=7 + 14 * k, method="nearest").load()
    amax = s.groupby(s.time.dt.year).max()
    print(k, " ".join(f"{x:.3f}" for x in amax.values))
"""


def make_file(path, years):
    import netCDF4
    nt, ny, nx = 365 * years, 180, 360
    lat = np.linspace(-89.5, 89.5, ny)
    base = 300 - 40 * np.abs(np.sin(np.deg2rad(lat)))[:, None] + np.zeros((ny, nx))
    rng = np.random.default_rng(0)
    with netCDF4.Dataset(path, "w") as d:
        for n, s in (("time", nt), ("lat", ny), ("lon", nx)):
            d.createDimension(n, s)
        t = d.createVariable("time", "f8", ("time",))
        t[:] = np.arange(nt) + 0.5
        t.units, t.calendar = "days since 2000-01-01", "noleap"
        d.createVariable("lat", "f8", ("lat",))[:] = lat
        d.createVariable("lon", "f8", ("lon",))[:] = np.arange(nx) + 0.5
        v = d.createVariable("tas", "f4", ("time", "lat", "lon"), zlib=True, complevel=4, shuffle=True,
                             chunksizes=(1, 90, 180))
        for i in range(nt):
            season = 8 * np.sin(2 * np.pi * i / 365)
            v[i] = np.round(base + season + rng.normal(0, 2, (ny, nx)), 1).astype("f4")


def climio(*args, **kw):
    exe = Path(sys.executable).with_name("climio")
    return subprocess.run([str(exe), *map(str, args)], text=True, capture_output=True, **kw)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--years", type=int, default=5)
    ap.add_argument("--reps", type=int, default=2)
    ap.add_argument("--dir", default="/tmp/climio-station")
    a = ap.parse_args()
    d = Path(a.dir)
    d.mkdir(parents=True, exist_ok=True)
    f = d / "tas_day.nc"
    if not f.exists():
        make_file(f, a.years)
    (d / "station.py").write_text(SCRIPT)
    print(f"file {f}: {os.path.getsize(f) / 2**20:.0f} MiB, {365 * a.years} days")
    out = climio("trace", "run", "-o", d / "trace", "--force", "--", sys.executable, "station.py", cwd=d)
    assert out.returncode == 0, out.stderr
    rep = climio("trace", "report", d / "trace", "--json")
    findings = json.loads(rep.stdout)["findings"]
    print(f"report item 1 before trying: [{findings[0]['severity']}] {findings[0]['title']}")
    tried = climio("trace", "try", d / "trace", "--reps", a.reps, "--json")
    assert tried.returncode == 0, tried.stderr
    s = json.loads(tried.stdout)
    from climio.trace.trying import rank
    print(rank.text(s))
    measured = [r for r in s["results"] if r["label"] == "measured"]
    first = min(measured, key=lambda r: (r["item"], r["id"]))
    print(f"baseline {s['baseline_s']:.2f} s; first item ({first['id']}, {first['title']}) {first['after_s']:.2f} s "
          f"(conversion {first['conversion_s'] or 0:.2f} s): gain P=1 {first['gain']['1']:.2f}x, P=10 {first['gain']['10']:.2f}x")
    best = next((r for r in s["results"] if r["advised"]), None)
    if best:
        print(f"advised: {best['id']} {best['title']} {best['after_s']:.2f} s, gain P=1 {best['gain']['1']:.2f}x")


if __name__ == "__main__":
    main()
