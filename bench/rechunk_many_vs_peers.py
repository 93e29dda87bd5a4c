"""Many files into one Zarr store: `climio rechunk 'in/*.nc' OUT.zarr --concat time` against
`xr.open_mfdataset(files, ...).chunk(...).to_zarr()`.

    .venv/bin/python bench/rechunk_many_vs_peers.py [--files 10] [--years 10] [--ny 120] [--nx 240]
                                                    [--chunks 96,30,60] [--max-mem 256MiB] [--workers 2] [--reps 2]

The case: --files CMIP-style monthly files (tests/cmip_files.py: tas float32 [12 x years, ny, nx],
deflate1+shuffle chunked [1,ny,nx], time in days since 1850-01-01, noleap, with bounds), one after
another in time, written once (untimed). Both tools write one Zarr v3 store of tas chunked
--chunks [t,y,x] (t not a divisor of a file's length: chunks straddle files) with the same codec,
blosc(zstd, level 3, byte shuffle) (what climio writes for zstd3+shuffle):
  climio     climio rechunk 'DIR/*.nc' OUT.zarr --concat time -c time/t,lat/y,lon/x
             --compression zstd3+shuffle --max-mem M --workers W
  mfdataset  xr.open_mfdataset(files, combine='by_coords', data_vars='minimal', coords='minimal',
             compat='override', join='exact').chunk({time: t, lat: y, lon: x}).to_zarr(OUT,
             zarr_format=3, encoding=the same codec) on Dask's threaded scheduler, W threads
             (no memory bound exists for it: its peak says what it took)
Each run is cold (every input evicted with posix_fadvise, climio.machine.cache; the output removed
after), in ABBA order (--reps 2 = one A-B-B-A); medians reported. Measured per run (as in
bench/rechunk_vs_peers.run_measured): wall time from spawn to exit, CPU of the process tree (wait4),
peak summed RSS of the process tree. Both outputs are checked once: identical (xr.testing.assert_identical) to open_mfdataset.
Ratio: mfdataset's median wall / climio's (target >= 2).
"""

import argparse
import glob
import shutil
import statistics
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parent / "tests"))
import rechunk_vs_peers as peers  # noqa: E402  (the process-tree measuring)
from cmip_files import write_set  # noqa: E402

from climio.dataset.options import parse_size  # noqa: E402
from climio.machine import cache  # noqa: E402

MiB = 1 << 20
CLIMIO = str(Path(sys.executable).parent / "climio")
MFDATASET_RUN = r"""
import glob, sys, dask, xarray as xr, zarr.codecs as zc
pattern, out, t, y, x, w = sys.argv[1:7]
files = sorted(glob.glob(pattern))
ds = xr.open_mfdataset(files, combine="by_coords", data_vars="minimal", coords="minimal", compat="override",
                       join="exact")
ds = ds.chunk({"time": int(t), "lat": int(y), "lon": int(x)})
enc = {"tas": {"compressors": [zc.BloscCodec(cname="zstd", clevel=3, shuffle="shuffle", typesize=4)],
               "serializer": zc.BytesCodec(endian="little")}}
with dask.config.set(scheduler="threads", num_workers=int(w)):
    ds.to_zarr(out, zarr_format=3, encoding=enc, mode="w")
"""


def make_inputs(d: Path, n: int, years: int, ny: int, nx: int) -> list:
    d.mkdir(parents=True, exist_ok=True)
    return write_set(d, "noleap", [(1850 + k * years, years) for k in range(n)], ny=ny, nx=nx, seed=1)


def commands(pattern: str, out: Path, chunks, max_mem: str, workers: int) -> dict:
    t, y, x = chunks
    return {
        "climio": [CLIMIO, "rechunk", pattern, str(out), "--concat", "time", "-c", f"time/{t},lat/{y},lon/{x}",
                   "--compression", "zstd3+shuffle", "--max-mem", max_mem, "--workers", str(workers)],
        "mfdataset": [sys.executable, "-c", MFDATASET_RUN, pattern, str(out), str(t), str(y), str(x), str(workers)],
    }


def check(out: Path, files) -> None:
    import xarray as xr
    want = xr.open_mfdataset(sorted(map(str, files)), combine="by_coords", data_vars="minimal", coords="minimal",
                             compat="override", join="exact").load()
    with xr.open_zarr(out) as got:
        xr.testing.assert_identical(got.load(), want)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--files", type=int, default=10)
    ap.add_argument("--years", type=int, default=10)
    ap.add_argument("--ny", type=int, default=120)
    ap.add_argument("--nx", type=int, default=240)
    ap.add_argument("--chunks", default="96,30,60")
    ap.add_argument("--max-mem", default="256MiB")
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--reps", type=int, default=2)
    ap.add_argument("--dir", type=Path, default=None, help="where the inputs and outputs go (default: a temporary dir)")
    a = ap.parse_args()
    chunks = [int(c) for c in a.chunks.split(",")]
    base = Path(tempfile.mkdtemp(prefix="climio-many-", dir=a.dir))
    try:
        files = make_inputs(base / "in", a.files, a.years, a.ny, a.nx)
        pattern = str(base / "in" / "*.nc")
        nbytes = a.files * 12 * a.years * a.ny * a.nx * 4
        print(f"{a.files} files, tas [{12 * a.years * a.files},{a.ny},{a.nx}] float32 = {nbytes / 1e6:.0f} MB "
              f"({sum(p.stat().st_size for p in files) / 1e6:.0f} MB on disk) -> chunks {chunks}, "
              f"--max-mem {a.max_mem}, {a.workers} workers", flush=True)
        tools = ["climio", "mfdataset"]
        order = [t for _ in range(max(1, a.reps // 2)) for t in tools + tools[::-1]][: len(tools) * a.reps]
        runs = {t: [] for t in tools}
        checked = set()
        for i, tool in enumerate(order):
            out = base / f"{tool}.zarr"
            shutil.rmtree(out, ignore_errors=True)
            state = cache.prepare([str(p) for p in glob.glob(pattern)], "cold")
            r = peers.run_measured(commands(pattern, out, chunks, a.max_mem, a.workers)[tool], 1800,
                                   base / f"{tool}-{i}.log")
            if r["rc"] != 0:
                print((base / f"{tool}-{i}.log").read_text()[-2000:])
                raise SystemExit(f"{tool} failed (exit {r['rc']})")
            if tool not in checked:
                check(out, files)
                checked.add(tool)
            runs[tool].append(r)
            print(f"  run {i + 1} {tool:10s} {r['wall_s']:7.2f} s  cpu {r['cpu_s']:6.2f} s  peak tree RSS {r['peak_tree_MiB']:7.0f} MiB  "
                  f"({state['state']}, resident {state['resident_fraction']:.3f})", flush=True)
            shutil.rmtree(out, ignore_errors=True)
        med = {t: statistics.median(r["wall_s"] for r in runs[t]) for t in tools}
        peak = {t: statistics.median(r["peak_tree_MiB"] * MiB for r in runs[t]) for t in tools}
        cpu = {t: statistics.median(r["cpu_s"] for r in runs[t]) for t in tools}
        print(f"\n{'tool':10s} {'median wall s':>14s} {'MB/s':>8s} {'median cpu s':>13s} {'median peak MiB':>16s} "
              f"{'wall ratio':>11s}")
        for t in tools:
            print(f"{t:10s} {med[t]:14.2f} {nbytes / 1e6 / med[t]:8.0f} {cpu[t]:13.2f} {peak[t] / MiB:16.0f} "
                  f"{med[t] / med['climio']:11.2f}")
        print(f"\nmfdataset / climio: {med['mfdataset'] / med['climio']:.2f}x wall (target >= 2), "
              f"{cpu['mfdataset'] / cpu['climio']:.2f}x CPU of the process tree; climio peak "
              f"{peak['climio'] / MiB:.0f} MiB against --max-mem {parse_size(a.max_mem) / MiB:.0f} MiB of blocks; "
              "both outputs identical to open_mfdataset")
    finally:
        shutil.rmtree(base, ignore_errors=True)


if __name__ == "__main__":
    main()
