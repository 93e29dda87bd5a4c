"""Rechunking to Zarr: `climio rechunk` against rechunker 0.5.4 and xarray's `ds.chunk().to_zarr()`.

    .venv/bin/python bench/rechunk_zarr_vs_peers.py [--quick] [--size 200MiB] [--max-mem 128MiB] [--reps 2]

The case is bench/rechunk_vs_peers.py's default (its make_input: a deflate1+shuffle float32 field
[t,z,y,x] 365 x 10 x 240 x 240 = 841 MB chunked [1,1,Y,X]; --size scales T, --quick is its quick
shape), converted to chunks [T,1,1,X] in two ways:
  nc->zarr    the netCDF-4 file to a Zarr store
  zarr->zarr  a Zarr v2 store of the same field, chunked [1,1,Y,X] (written once by climio, untimed;
              v2 because rechunker 0.5.4 needs zarr-python < 3, which reads and writes v2 only)
Every output: zstd level 3 after a byte shuffle (Zarr users' usual codec), the same for every tool.
Tools, each run as its own process tree and --workers wide:
  climio v3 / climio v2   climio rechunk IN OUT.zarr -c ... --max-mem M --workers W (--zarr-format 2)
  rechunker threads/processes   rechunker.rechunk(source, target_chunks, max_mem=M, target, temp_store)
                          .execute() on Dask's threaded or multiprocessing scheduler (num_workers W);
                          source: xarray.open_dataset(IN, chunks={}) or the v2 group; its temporary
                          store next to the output; it writes v2 (zarr 2.18 in its own venv,
                          ~/.cache/climio-bench/rechunker-0.5.4, created on first use with pip)
  to_zarr threads/processes     ds = open_dataset(IN, chunks={}) (open_zarr for a store);
                          ds["ta"].chunk({time: T, lev: 1, lat: 1, lon: X}).to_zarr(OUT, zarr_format=3)
                          on Dask's threaded or multiprocessing scheduler (num_workers W); no memory
                          bound exists for it: its peak says whether it stayed within M
Each run is cold (the input evicted with posix_fadvise and checked with mincore; the output removed
and its pages dropped after); the runs go in ABBA order (the tool list, then reversed; --reps 2 =
one A-B-B-A), medians reported. Measured per run: wall time from spawn to exit, CPU of the whole
process tree (wait4 of GNU time), peak summed RSS of the tree sampled every 20 ms
(rechunk_vs_peers.run_measured). Every output is checked: chunks [T,1,1,X] and the values of a
time series, a map and random boxes equal the input's. Ratios: the peer's median wall / climio's
(v3 and v2), and the peak tree memory against M.
"""

import argparse
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
import rechunk_vs_peers as peers  # noqa: E402  (the case's data making and the process-tree measuring)

from climio.machine import cache  # noqa: E402
from climio.dataset.options import parse_size  # noqa: E402

MiB = 1 << 20
RECHUNKER_VERSION = "0.5.4"
CACHE = Path(os.environ.get("CLIMIO_BENCH_CACHE", Path.home() / ".cache" / "climio-bench"))
RECHUNKER_VENV = CACHE / f"rechunker-{RECHUNKER_VERSION}"
RECHUNKER_PACKAGES = (f"rechunker=={RECHUNKER_VERSION}", "zarr<3", "xarray", "netCDF4", "dask[array,diagnostics]")
ZSTD_LEVEL = 3

# rechunker 0.5.4 in its own venv: argv = src kind(nc|zarr) dst tmp max_mem scheduler workers T X
RECHUNKER_RUN = r"""
import sys, dask, numcodecs, xarray as xr, zarr
from rechunker import rechunk
src, kind, dst, tmp, mem, sched, w, T, X = sys.argv[1:10]
T, X, w = int(T), int(X), int(w)
opts = {"compressor": numcodecs.Zstd(level=%d), "filters": [numcodecs.Shuffle(elementsize=4)]}
if kind == "nc":
    source = xr.open_dataset(src, chunks={})
    for v in source.variables.values():
        v.encoding = {k: x for k, x in v.encoding.items() if k in ("dtype", "_FillValue", "units", "calendar")}
    target = {n: ({"time": T, "lev": 1, "lat": 1, "lon": X} if n == "ta" else None) for n in source.variables}
else:
    source = zarr.open_group(src, mode="r")
    target = {n: ((T, 1, 1, X) if n == "ta" else None) for n in source.array_keys()}
plan = rechunk(source, target, mem, dst, temp_store=tmp, target_options={"ta": opts})
with dask.config.set(scheduler=sched, num_workers=w):
    plan.execute()
""" % ZSTD_LEVEL

# xarray + Dask in climio's venv (zarr 3): argv = src kind dst scheduler workers T X
TO_ZARR_RUN = r"""
import sys, dask, xarray as xr
from zarr.codecs import ZstdCodec
try:
    from zarr.codecs import Shuffle
except ImportError:
    from numcodecs.zarr3 import Shuffle
src, kind, dst, sched, w, T, X = sys.argv[1:8]
T, X, w = int(T), int(X), int(w)
ds = xr.open_dataset(src, chunks={}) if kind == "nc" else xr.open_zarr(src)
for v in ds.variables.values():
    v.encoding = {k: x for k, x in v.encoding.items() if k in ("dtype", "_FillValue", "units", "calendar")}
ds["ta"] = ds["ta"].chunk({"time": T, "lev": 1, "lat": 1, "lon": X})
enc = {"ta": {"compressors": [Shuffle(elementsize=4), ZstdCodec(level=%d)], "chunks": (T, 1, 1, X)}}
with dask.config.set(scheduler=sched, num_workers=w):
    ds.to_zarr(dst, encoding=enc, zarr_format=3, consolidated=True)
""" % ZSTD_LEVEL


def rechunker_python(say=print) -> str:
    """The Python of the venv with rechunker 0.5.4 (created with pip on first use, then cached)."""
    py = RECHUNKER_VENV / "bin" / "python"
    probe = [str(py), "-c", f"import rechunker, zarr; assert rechunker.__version__ == '{RECHUNKER_VERSION}'"]
    if py.exists() and subprocess.run(probe, capture_output=True).returncode == 0:
        return str(py)
    say(f"installing rechunker {RECHUNKER_VERSION} into {RECHUNKER_VENV} (pip, once)")
    subprocess.run(["python3", "-m", "venv", str(RECHUNKER_VENV)], check=True)
    subprocess.run([str(py), "-m", "pip", "install", "-q", *RECHUNKER_PACKAGES], check=True)
    if subprocess.run(probe, capture_output=True).returncode:
        sys.exit(f"rechunker {RECHUNKER_VERSION} did not install into {RECHUNKER_VENV}")
    return str(py)


def store_files(path: Path) -> list:
    return [Path(d) / f for d, _, fs in os.walk(path) for f in fs] if path.is_dir() else [path]


def remove(path: Path) -> None:
    if path.is_dir():
        shutil.rmtree(path)
    elif path.exists():
        path.unlink()


def check_store(store: Path, inp: Path, var: dict, rng) -> str:
    """'' if `store`'s ta has chunks [T,1,1,X] and equals the input on a series, a map and boxes."""
    import netCDF4
    import zarr
    T, Z, Y, X = var["shape"]
    arr = zarr.open_group(str(store), mode="r")["ta"]
    if tuple(arr.chunks) != (T, 1, 1, X):
        return f"chunks {arr.chunks} != {(T, 1, 1, X)}"
    boxes = [(slice(None), slice(z, z + 1), slice(y, y + 1), slice(None))
             for z, y in ((0, 0), (Z - 1, Y - 1), (int(rng.integers(Z)), int(rng.integers(Y))))]
    boxes.append((slice(T - 1, T), slice(0, 1), slice(None), slice(None)))
    with netCDF4.Dataset(inp) as ds:
        v = ds["ta"]
        v.set_auto_mask(False)
        for box in boxes:
            if not np.array_equal(v[box], arr[box], equal_nan=True):
                return f"values differ in {box}"
    return ""


def commands(case, src, out, tmp, a, var, mem, rk_py) -> dict:
    T, X = var["shape"][0], var["shape"][3]
    spec = f"time/{T},lev/1,lat/1,lon/{X}"
    kind = "nc" if case == "nc->zarr" else "zarr"
    climio = [peers.CLIMIO, "rechunk", str(src), str(out), "-c", spec, "--compression", f"zstd{ZSTD_LEVEL}+shuffle",
              "--max-mem", str(mem), "--workers", str(a.workers), "--force", "--tmp", str(tmp)]
    cmds = {"climio v3": climio, "climio v2": climio + ["--zarr-format", "2"]}
    if a.baseline_src:   # the same command on another checkout's sources (before/after a change, same run)
        cmds["climio base v3"] = ["env", f"PYTHONPATH={a.baseline_src}"] + climio
    for sched in ("threads", "processes"):
        cmds[f"rechunker {sched}"] = [rk_py, "-c", RECHUNKER_RUN, str(src), kind, str(out), str(tmp / "rk-temp.zarr"),
                                      str(mem), sched, str(a.workers), str(T), str(X)]
        cmds[f"to_zarr {sched}"] = [sys.executable, "-c", TO_ZARR_RUN, str(src), kind, str(out), sched,
                                    str(a.workers), str(T), str(X)]
    if a.tools:
        cmds = {k: v for k, v in cmds.items() if k in a.tools.split(",")}
    return cmds


def run_case(case, src, work, a, var, mem, rk_py, rows, rng):
    out, tmp = work / "out.zarr", work / "tmp"
    tmp.mkdir(exist_ok=True)
    cmds = commands(case, src, out, tmp, a, var, mem, rk_py)
    names = list(cmds)
    order = []
    for rep in range(a.reps):
        order += names if rep % 2 == 0 else names[::-1]          # A B C ... then ... C B A
    for tool in order:
        remove(out)
        for p in tmp.iterdir():
            remove(p)
        state = cache.prepare(store_files(src), "cold")
        r = peers.run_measured(cmds[tool], a.budget, work / "log.txt")
        ok = r["rc"] == 0 and not r["killed"]
        check = check_store(out, a.nc_input, var, rng) if ok else peers.log_tail(work / "log.txt", 3)
        if r["killed"]:
            check = f"killed after {a.budget:.0f} s"
        row = {"case": case, "tool": tool, "cache": state["state"], "ok": ok and not check, "check": check, **r}
        if tool.startswith("climio"):   # its own conversion time (its last line), without start-up and metadata
            m = re.search(r"rechunked .* in ([0-9.]+) s", (work / "log.txt").read_text(errors="replace"))
            row["convert_s"] = float(m.group(1)) if m else None
        rows.append(row)
        conv = f" ({row['convert_s']:.2f} s converting)" if row.get("convert_s") else ""
        print(f"[{case}] {tool:<20} {r['wall_s']:7.2f} s wall{conv} {r['cpu_s']:7.2f} s CPU "
              f"{r['peak_tree_MiB']:7.0f} MiB peak tree  {state['state']}  load {os.getloadavg()[0]:.1f}"
              + ("" if row["ok"] else f"  FAILED: {check or r['rc']}"), flush=True)
        if out.exists():
            for f in store_files(out):
                cache.evict(f)


def report(rows, mem, var, a):
    nbytes = int(np.prod(var["shape"])) * 4
    print(f"\nta {list(var['shape'])} float32, {nbytes / 1e6:.0f} MB, [1,1,Y,X] -> [T,1,1,X], zstd{ZSTD_LEVEL}+shuffle, "
          f"cold input, max_mem {mem / MiB:.0f} MiB, {a.workers} workers, medians of {a.reps} (ABBA); "
          f"ratio = tool wall / climio's (same case, same Zarr format: v2 for rechunker, v3 for to_zarr)")
    hdr = f"{'case':<11}{'tool':<21}{'wall s':>8}{'CPU s':>8}{'peak MiB':>10}{'MB/s':>8}{'ratio':>8}  within max_mem"
    print(hdr + "\n" + "-" * len(hdr))
    med = {}
    for case in dict.fromkeys(r["case"] for r in rows):
        for tool in dict.fromkeys(r["tool"] for r in rows if r["case"] == case):
            rs = [r for r in rows if r["case"] == case and r["tool"] == tool and r["ok"]]
            killed = [r for r in rows if r["case"] == case and r["tool"] == tool and r["killed"]]
            if not rs:
                what = f">={a.budget:.0f}" if killed else "failed"
                peak = max((r["peak_tree_MiB"] for r in killed), default=0)
                print(f"{case:<11}{tool:<21}{what:>8}{'-':>8}{peak:>10.0f}{'-':>8}{'-':>8}  "
                      + ("killed at the time budget (--budget)" if killed else "failed"))
                continue
            m = {k: statistics.median(r[k] for r in rs) for k in ("wall_s", "cpu_s", "peak_tree_MiB")}
            med[case, tool] = m
    for (case, tool), m in med.items():
        ref = med.get((case, "climio v2" if tool.startswith("rechunker") or tool == "climio v2" else "climio v3"))
        ratio = f"{m['wall_s'] / ref['wall_s']:.2f}" if ref else "-"
        within = "yes" if m["peak_tree_MiB"] <= mem / MiB + 200 else f"no (+{m['peak_tree_MiB'] - mem / MiB:.0f} MiB)"
        print(f"{case:<11}{tool:<21}{m['wall_s']:>8.2f}{m['cpu_s']:>8.2f}{m['peak_tree_MiB']:>10.0f}"
              f"{nbytes / m['wall_s'] / 1e6:>8.0f}{ratio:>8}  {within}")
    print("(within max_mem: peak tree <= max_mem + 200 MiB, the interpreter and libraries' share)")
    for case in dict.fromkeys(c for c, _ in med):
        c2, c3 = med.get((case, "climio v2")), med.get((case, "climio v3"))
        rk = [med[case, t] for t in ("rechunker threads", "rechunker processes") if (case, t) in med]
        tz = [med[case, t] for t in ("to_zarr threads", "to_zarr processes") if (case, t) in med]
        if c2 and rk:
            best = min(rk, key=lambda m: m["wall_s"])
            print(f"{case}: climio is {best['wall_s'] / c2['wall_s']:.2f}x faster than rechunker's best executor "
                  f"(v2 both; issue 37's target >= 1.5), peak {c2['peak_tree_MiB']:.0f} vs {best['peak_tree_MiB']:.0f} MiB")
        if c3 and tz:
            best = min(tz, key=lambda m: m["wall_s"])
            print(f"{case}: climio is {best['wall_s'] / c3['wall_s']:.2f}x faster than the best Dask to_zarr "
                  f"(v3 both; issue 37's target >= 2), to_zarr peak {best['peak_tree_MiB']:.0f} MiB for max_mem {mem / MiB:.0f} MiB")
    if a.out:
        with open(a.out, "a") as fh:
            for r in rows:
                fh.write(json.dumps({"study": "rechunk-zarr-vs-peers", "shape": list(var["shape"]), "max_mem": mem,
                                     "workers": a.workers, "time": time.time(), **r}) + "\n")


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter, epilog=__doc__)
    ap.add_argument("--quick", action="store_true", help=f"shape {peers.QUICK_SHAPE}")
    ap.add_argument("--size", help="uncompressed size of ta, e.g. 200MiB: scales T of the default shape")
    ap.add_argument("--max-mem", default="128MiB", help="climio --max-mem and rechunker's max_mem (default 128MiB)")
    ap.add_argument("--workers", type=int, default=os.cpu_count(), help="climio workers, Dask num_workers")
    ap.add_argument("--reps", type=int, default=2, help="runs per tool, ABBA order (default 2)")
    ap.add_argument("--budget", type=float, default=900, help="seconds per run before it is killed")
    ap.add_argument("--cases", default="nc->zarr,zarr->zarr")
    ap.add_argument("--keep", metavar="DIR", help="make (or reuse) the input in DIR and keep it")
    ap.add_argument("--out", help="append one JSON line per run to this file")
    ap.add_argument("--tools", help="only these tools, comma-separated (e.g. 'climio v3,climio v2,rechunker threads')")
    ap.add_argument("--baseline-src", metavar="DIR", help="also run 'climio base v3': climio with PYTHONPATH=DIR "
                    "(the src/ of another checkout, e.g. `git archive main src | tar -x -C DIR/..`)")
    a = ap.parse_args()
    shape = peers.QUICK_SHAPE if a.quick else peers.DEFAULT_SHAPE
    if a.size:
        shape = (max(2, int(parse_size(a.size) // (shape[1] * shape[2] * shape[3] * 4))),) + tuple(shape[1:])
    mem = parse_size(a.max_mem)
    rk_py = rechunker_python()
    work = Path(a.keep) if a.keep else Path(tempfile.mkdtemp(prefix="climio-zarr-peers-"))
    work.mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(7)
    rows = []
    try:
        a.nc_input = peers.make_input(work, shape, 1)
        var = peers.var_info(a.nc_input)
        print(f"input {a.nc_input}: {var['shape']} chunks {var['chunks']}; load {os.getloadavg()[0]:.2f}")
        for case in a.cases.split(","):
            src = a.nc_input
            if case == "zarr->zarr":
                src = work / "source-v2.zarr"
                if not src.exists():
                    subprocess.run([peers.CLIMIO, "rechunk", str(a.nc_input), str(src), "--zarr-format", "2",
                                    "--compression", f"zstd{ZSTD_LEVEL}+shuffle"], check=True, capture_output=True)
            run_case(case, src, work, a, var, mem, rk_py, rows, rng)
        print(f"load average after: {os.getloadavg()[0]:.2f}")
        report(rows, mem, var, a)
    finally:
        if not a.keep:
            shutil.rmtree(work, ignore_errors=True)
    return 0 if all(r["ok"] for r in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
