"""Rechunking to Zarr: `climio rechunk` against rechunker 0.5.4, xarray's `ds.chunk().to_zarr()`
and tensorstore.

    .venv/bin/python bench/rechunk_zarr_vs_peers.py [--quick] [--size 200MiB] [--max-mem 128MiB] [--reps 2]
        [--cases nc->zarr,zarr->zarr] [--tools 'climio v3,tensorstore,...']

The case is bench/rechunk_vs_peers.py's default (its make_input: a deflate1+shuffle float32 field
[t,z,y,x] 365 x 10 x 240 x 240 = 841 MB chunked [1,1,Y,X]; --size scales T, --quick is its quick
shape), converted to chunks [T,1,1,X] in two ways:
  nc->zarr    the netCDF-4 file to a Zarr store
  zarr->zarr  a Zarr v2 store of the same field, chunked [1,1,Y,X], blosc(zstd 3, byte shuffle)
              (written once by climio, untimed; v2 because rechunker 0.5.4 needs zarr-python < 3,
              which reads and writes v2 only; blosc, zarr v2's usual compressor, because
              tensorstore's zarr v2 driver refuses any `filters`, so a numcodecs shuffle filter
              in front of zstd would leave it out)
Every output: zstd level 3 after a byte shuffle, the same for every tool: in Zarr v3 (climio v3,
to_zarr, tensorstore) the spec's blosc codec (cname zstd, clevel 3, shuffle, typesize 4), which
is what climio writes for zstd3+shuffle; in v2 (climio v2, rechunker) numcodecs' shuffle filter and
zstd compressor.
Tools, each run as its own process tree and --workers wide:
  climio v3 / climio v2   climio rechunk IN OUT.zarr -c ... --max-mem M --workers W (--zarr-format 2)
  rechunker threads/processes   rechunker.rechunk(source, target_chunks, max_mem=M, target, temp_store)
                          .execute() on Dask's threaded or multiprocessing scheduler (num_workers W);
                          source: xarray.open_dataset(IN, chunks={}) or the v2 group; its temporary
                          store next to the output; it writes v2 (zarr 2.18 in its own venv,
                          ~/.cache/climio-bench/rechunker-0.5.4, created on first use with pip)
  rechunker threads M/W   the same with max_mem M/W: rechunker bounds each task by max_mem and runs W
                          at once, so this is climio's --max-mem M as a total (the rows above use up to W*M)
  floor                   (zarr->zarr only) what any tool must do, in plain numpy + numcodecs: W forked
                          processes, each reading, decoding and holding whole z levels (no memory bound)
                          and writing their target chunks into a flat v2 store (FLOOR_RUN); not a tool
                          but the least this machine needs, against which 1.5x rechunker is judged
  to_zarr threads/processes     ds = open_dataset(IN, chunks={}) (open_zarr for a store);
                          ds["ta"].chunk({time: T, lev: 1, lat: 1, lon: X}).to_zarr(OUT, zarr_format=3)
                          on Dask's threaded or multiprocessing scheduler (num_workers W); no memory
                          bound exists for it: its peak says whether it stayed within M
  tensorstore             (zarr->zarr only: tensorstore reads no netCDF-4/HDF5, so it has no
                          nc->zarr row) the fastest Zarr implementation, in climio's venv (a test
                          dependency): opens the v2 source's ta with its zarr driver, creates a v3
                          array ta (zarr3 driver, chunks [T,1,1,X], the blosc codec above, the
                          source's fill value (0, zarr-python's, when the v2 source has none),
                          dimension names and attributes) and copies blocks
                          [T,1,rows,X] of one z level (rows = all Y when a level fits M/2, else as
                          many as fit, so a source chunk is then decoded Y/rows times) with its own
                          async read().then write(), as many blocks in flight as fit M counting each
                          twice (the array read and tensorstore's copy of it in its write buffer).
                          Its context: data_copy_concurrency and file_io_concurrency limits W (its
                          codec and file I/O thread pools), cache_pool 0 bytes (no chunk cache),
                          file_io_sync false (no fsync per chunk: no other tool syncs). It copies ta
                          only (the 1-D coordinates, a few KB, are not copied) and writes the root
                          group's zarr.json last.
Each run is cold (the input evicted with posix_fadvise and checked with mincore; the output removed
and its pages dropped after); the runs go in ABBA order (the tool list, then reversed; --reps 2 =
one A-B-B-A), medians reported. Measured per run: wall time from spawn to exit, CPU of the whole
process tree (wait4 of GNU time), peak summed RSS of the tree sampled every 20 ms
(rechunk_vs_peers.run_measured). Every output is checked: chunks [T,1,1,X] and the values of a
time series, a map and random boxes equal the input's. Ratios: the peer's median wall / climio's
(v2 for rechunker; v3 for to_zarr and tensorstore), and the peak tree memory against M.
A peer whose venv cannot be made here (no wheel, a dependency conflict) is reported in one line
and its row says why; the other tools still run.
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

from _peers import PeerError, peer_python, peer_versions  # noqa: E402

from climio.machine import cache  # noqa: E402
from climio.dataset.options import parse_size  # noqa: E402

MiB = 1 << 20
RECHUNKER_VERSION = "0.5.4"
CACHE = Path(os.environ.get("CLIMIO_BENCH_CACHE", Path.home() / ".cache" / "climio-bench"))
RECHUNKER_VENV = CACHE / f"rechunker-{RECHUNKER_VERSION}"
RECHUNKER_PACKAGES = (f"rechunker=={RECHUNKER_VERSION}", "zarr<3", "xarray", "netCDF4", "dask[array,diagnostics]")
ZSTD_LEVEL = 3
SOURCE_COMPRESSION = f"blosc_zstd{ZSTD_LEVEL}+shuffle"   # the zarr->zarr source's (see the docstring)

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
from zarr.codecs import BloscCodec
src, kind, dst, sched, w, T, X = sys.argv[1:8]
T, X, w = int(T), int(X), int(w)
ds = xr.open_dataset(src, chunks={}) if kind == "nc" else xr.open_zarr(src)
for v in ds.variables.values():
    v.encoding = {k: x for k, x in v.encoding.items() if k in ("dtype", "_FillValue", "units", "calendar")}
ds["ta"] = ds["ta"].chunk({"time": T, "lev": 1, "lat": 1, "lon": X})
codec = BloscCodec(cname="zstd", clevel=%d, shuffle="shuffle", typesize=4)   # climio's v3 codec
enc = {"ta": {"compressors": [codec], "chunks": (T, 1, 1, X)}}
with dask.config.set(scheduler=sched, num_workers=w):
    ds.to_zarr(dst, encoding=enc, zarr_format=3, consolidated=True)
""" % ZSTD_LEVEL

# tensorstore in climio's venv, Zarr v2 -> v3 in blocks (see the docstring): argv = src dst max_mem workers
TENSORSTORE_RUN = r"""
import asyncio, json, math, os, sys, numpy as np, tensorstore as ts
src, dst, mem, w = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
ctx = ts.Context({"data_copy_concurrency": {"limit": w}, "file_io_concurrency": {"limit": w},
                  "cache_pool": {"total_bytes_limit": 0}, "file_io_sync": False})
inp = ts.open({"driver": "zarr", "kvstore": {"driver": "file", "path": os.path.join(src, "ta", "")}},
              context=ctx, read=True).result()
T, Z, Y, X = inp.shape
attrs = {}
if os.path.exists(os.path.join(src, "ta", ".zattrs")):
    with open(os.path.join(src, "ta", ".zattrs")) as fh:
        attrs = json.load(fh)
dims = attrs.pop("_ARRAY_DIMENSIONS", ["time", "lev", "lat", "lon"])
fill = inp.fill_value
fill = 0.0 if fill is None else ("NaN" if np.isnan(fill) else float(fill))   # v2 null: v3 needs one; zarr-python's 0
meta = {"shape": [T, Z, Y, X], "data_type": "float32", "fill_value": fill, "dimension_names": dims,
        "attributes": attrs, "chunk_grid": {"name": "regular", "configuration": {"chunk_shape": [T, 1, 1, X]}},
        "codecs": [{"name": "bytes", "configuration": {"endian": "little"}},
                   {"name": "blosc", "configuration": {"cname": "zstd", "clevel": %d, "shuffle": "shuffle",
                                                       "typesize": 4, "blocksize": 0}}]}
out = ts.open({"driver": "zarr3", "kvstore": {"driver": "file", "path": os.path.join(dst, "ta", "")},
               "metadata": meta}, context=ctx, create=True, delete_existing=True).result()
row = T * X * 4                                   # bytes of one y row of a z level
rows = max(1, min(Y, mem // (2 * row)))           # a block and tensorstore's copy of it within M
inflight = max(1, mem // (2 * rows * row))
blocks = [(z, y, min(Y, y + rows)) for z in range(Z) for y in range(0, Y, rows)]
print(f"tensorstore: blocks [{T},1,{rows},{X}] ({rows * row / 2**20:.1f} MiB), {len(blocks)} of them, "
      f"{inflight} in flight, data_copy_concurrency/file_io_concurrency {w}", flush=True)

async def main():
    sem = asyncio.Semaphore(inflight)
    async def one(z, y0, y1):
        async with sem:
            a = await inp[:, z, y0:y1, :].read()
            await out[:, z, y0:y1, :].write(a)
    await asyncio.gather(*(one(*b) for b in blocks))

asyncio.run(main())
with open(os.path.join(dst, "zarr.json"), "w") as fh:      # the group last: readable once complete
    json.dump({"zarr_format": 3, "node_type": "group", "attributes": {}}, fh)
""" % ZSTD_LEVEL


# The floor (zarr->zarr): what any rechunk of this case must do, in its plainest Python: argv = src dst workers.
# `workers` processes (fork), each taking whole z levels in turn: read the level's source chunk files,
# decode them (numcodecs Blosc, as stored), hold the level as one [T,Y,X] array, cut it into the
# target chunks and encode each (numcodecs Shuffle + Zstd, climio v2's codec) into a flat v2 store.
# No plan, no bound on memory (a level is T*Y*X*4 bytes per process), no checks, no temporary name:
# a floor for any tool, not a tool.
FLOOR_RUN = r"""
import json, os, sys, numpy as np, numcodecs
src, dst, w = sys.argv[1], sys.argv[2], int(sys.argv[3])
meta = json.load(open(os.path.join(src, "ta", ".zarray")))
T, Z, Y, X = meta["shape"]
dec = numcodecs.get_codec(meta["compressor"])
shuf, zstd = numcodecs.Shuffle(elementsize=4), numcodecs.Zstd(level=%d)
os.makedirs(os.path.join(dst, "ta"))
for name, doc in ((".zgroup", {"zarr_format": 2}),
                  ("ta/.zarray", {**meta, "chunks": [T, 1, 1, X], "filters": [shuf.get_config()],
                                  "compressor": zstd.get_config(), "dimension_separator": "."})):
    json.dump(doc, open(os.path.join(dst, name), "w"))
for f in (".zattrs",):
    if os.path.exists(os.path.join(src, "ta", f)):
        open(os.path.join(dst, "ta", f), "wb").write(open(os.path.join(src, "ta", f), "rb").read())
def level(z):
    slab = np.empty((T, Y, X), "<f4")
    for t in range(T):
        with open(os.path.join(src, "ta", f"{t}.{z}.0.0"), "rb") as fh:
            slab[t] = np.frombuffer(dec.decode(fh.read()), "<f4").reshape(Y, X)
    for y in range(Y):
        data = zstd.encode(shuf.encode(np.ascontiguousarray(slab[:, y, :])))
        fd = os.open(os.path.join(dst, "ta", f"0.{z}.{y}.0"), os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
        os.write(fd, data)
        os.close(fd)
pids = []
for k in range(w):
    pid = os.fork()
    if pid == 0:
        for z in range(k, Z, w):
            level(z)
        os._exit(0)
    pids.append(pid)
sys.exit(max(os.waitpid(p, 0)[1] for p in pids) and 1)
""" % ZSTD_LEVEL


def rechunker_python(say=print) -> str:
    """The Python of the venv with rechunker 0.5.4 (created with pip on first use, then cached);
    PeerError (one line) if it cannot be made."""
    probe = f"import rechunker, zarr; assert rechunker.__version__ == '{RECHUNKER_VERSION}'"
    return peer_python(RECHUNKER_VENV.name, RECHUNKER_PACKAGES, probe, say)


def tensorstore_python() -> str:
    """climio's own python when it imports tensorstore (a test dependency); PeerError otherwise."""
    out = subprocess.run([sys.executable, "-c", "import tensorstore"], capture_output=True, text=True)
    if out.returncode:
        raise PeerError(f"tensorstore does not import in {sys.executable}: "
                        f"{(out.stderr.strip().splitlines() or ['?'])[-1]}")
    return sys.executable


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


def commands(case, src, out, tmp, a, var, mem, pys) -> dict:
    """Tool -> argv; a peer whose venv could not be made maps to its PeerError text (a str)."""
    T, X = var["shape"][0], var["shape"][3]
    spec = f"time/{T},lev/1,lat/1,lon/{X}"
    kind = "nc" if case == "nc->zarr" else "zarr"
    climio = [peers.CLIMIO, "rechunk", str(src), str(out), "-c", spec, "--compression", f"zstd{ZSTD_LEVEL}+shuffle",
              "--max-mem", str(mem), "--workers", str(a.workers), "--force", "--tmp", str(tmp)]
    cmds = {"climio v3": climio, "climio v2": climio + ["--zarr-format", "2"]}
    if a.baseline_src:   # the same command on another checkout's sources (before/after a change, same run)
        cmds["climio base v3"] = ["env", f"PYTHONPATH={a.baseline_src}"] + climio
    rk_py = pys["rechunker"]
    for sched in ("threads", "processes"):
        cmds[f"rechunker {sched}"] = rk_py if isinstance(rk_py, PeerError) else \
            [rk_py, "-c", RECHUNKER_RUN, str(src), kind, str(out), str(tmp / "rk-temp.zarr"),
             str(mem), sched, str(a.workers), str(T), str(X)]
        cmds[f"to_zarr {sched}"] = [sys.executable, "-c", TO_ZARR_RUN, str(src), kind, str(out), sched,
                                    str(a.workers), str(T), str(X)]
    # rechunker's max_mem bounds one task, and W run at once: M / W is the same total as climio's --max-mem M
    cmds["rechunker threads M/W"] = rk_py if isinstance(rk_py, PeerError) else \
        [rk_py, "-c", RECHUNKER_RUN, str(src), kind, str(out), str(tmp / "rk-temp.zarr"),
         str(mem // max(a.workers, 1)), "threads", str(a.workers), str(T), str(X)]
    if case == "zarr->zarr":
        cmds["floor"] = [sys.executable, "-c", FLOOR_RUN, str(src), str(out), str(a.workers)]
    if kind == "zarr":     # tensorstore reads no netCDF-4: no nc->zarr row (see the docstring)
        ts_py = pys["tensorstore"]
        cmds["tensorstore"] = ts_py if isinstance(ts_py, PeerError) else \
            [ts_py, "-c", TENSORSTORE_RUN, str(src), str(out), str(mem), str(a.workers)]
    if a.tools:
        cmds = {k: v for k, v in cmds.items() if k in a.tools.split(",")}
    return cmds


def run_case(case, src, work, a, var, mem, pys, rows, rng):
    out, tmp = work / "out.zarr", work / "tmp"
    tmp.mkdir(exist_ok=True)
    cmds = commands(case, src, out, tmp, a, var, mem, pys)
    for tool, why in cmds.items():
        if isinstance(why, PeerError):   # said once, kept in the table
            print(f"[{case}] {tool:<20} not run: {why}", flush=True)
            rows.append({"case": case, "tool": tool, "ok": False, "killed": False, "unavailable": str(why)})
    names = [t for t, c in cmds.items() if not isinstance(c, PeerError)]
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
          f"ratio = tool wall / climio's (same case, same Zarr format: v2 for rechunker, v3 for to_zarr "
          f"and tensorstore)")
    hdr = f"{'case':<11}{'tool':<21}{'wall s':>8}{'CPU s':>8}{'peak MiB':>10}{'MB/s':>8}{'ratio':>8}  within max_mem"
    print(hdr + "\n" + "-" * len(hdr))
    med = {}
    for case in dict.fromkeys(r["case"] for r in rows):
        for tool in dict.fromkeys(r["tool"] for r in rows if r["case"] == case):
            rs = [r for r in rows if r["case"] == case and r["tool"] == tool and r["ok"]]
            killed = [r for r in rows if r["case"] == case and r["tool"] == tool and r["killed"]]
            gone = [r["unavailable"] for r in rows if r["case"] == case and r["tool"] == tool and r.get("unavailable")]
            if gone:
                print(f"{case:<11}{tool:<21}{'-':>8}{'-':>8}{'-':>10}{'-':>8}{'-':>8}  not run: {gone[0]}")
                continue
            if not rs:
                what = f">={a.budget:.0f}" if killed else "failed"
                peak = max((r["peak_tree_MiB"] for r in killed), default=0)
                print(f"{case:<11}{tool:<21}{what:>8}{'-':>8}{peak:>10.0f}{'-':>8}{'-':>8}  "
                      + ("killed at the time budget (--budget)" if killed else "failed"))
                continue
            m = {k: statistics.median(r[k] for r in rs) for k in ("wall_s", "cpu_s", "peak_tree_MiB")}
            med[case, tool] = m
    for (case, tool), m in med.items():
        v2 = tool.startswith("rechunker") or tool in ("climio v2", "floor")
        ref = med.get((case, "climio v2" if v2 else "climio v3"))
        ratio = f"{m['wall_s'] / ref['wall_s']:.2f}" if ref else "-"
        within = "yes" if m["peak_tree_MiB"] <= mem / MiB + 200 else f"no (+{m['peak_tree_MiB'] - mem / MiB:.0f} MiB)"
        print(f"{case:<11}{tool:<21}{m['wall_s']:>8.2f}{m['cpu_s']:>8.2f}{m['peak_tree_MiB']:>10.0f}"
              f"{nbytes / m['wall_s'] / 1e6:>8.0f}{ratio:>8}  {within}")
    print("(within max_mem: peak tree <= max_mem + 200 MiB, the interpreter and libraries' share)")
    for case in dict.fromkeys(c for c, _ in med):
        c2, c3 = med.get((case, "climio v2")), med.get((case, "climio v3"))
        rk = [med[case, t] for t in ("rechunker threads", "rechunker processes") if (case, t) in med]
        tz = [med[case, t] for t in ("to_zarr threads", "to_zarr processes") if (case, t) in med]
        ts_ = med.get((case, "tensorstore"))
        if c2 and rk:
            best = min(rk, key=lambda m: m["wall_s"])
            print(f"{case}: climio is {best['wall_s'] / c2['wall_s']:.2f}x faster than rechunker's best executor "
                  f"(v2 both; issue 37's target >= 1.5), peak {c2['peak_tree_MiB']:.0f} vs {best['peak_tree_MiB']:.0f} MiB")
        same = med.get((case, "rechunker threads M/W"))
        if c2 and same:
            print(f"{case}: climio is {same['wall_s'] / c2['wall_s']:.2f}x faster than rechunker at the same total "
                  f"memory (max_mem M/W per task), peak {c2['peak_tree_MiB']:.0f} vs {same['peak_tree_MiB']:.0f} MiB")
        floor = med.get((case, "floor"))
        if floor and (c2 or rk):
            print(f"{case}: the floor (plain numcodecs, no memory bound) takes {floor['wall_s']:.2f} s: climio v2 "
                  + (f"{c2['wall_s'] / floor['wall_s']:.2f}x it" if c2 else "-")
                  + (f", rechunker's best {min(m['wall_s'] for m in rk) / floor['wall_s']:.2f}x it" if rk else "")
                  + " (1.5x rechunker is reachable only when rechunker takes at least 1.5x the floor)")
        if c3 and tz:
            best = min(tz, key=lambda m: m["wall_s"])
            print(f"{case}: climio is {best['wall_s'] / c3['wall_s']:.2f}x faster than the best Dask to_zarr "
                  f"(v3 both; issue 37's target >= 2), to_zarr peak {best['peak_tree_MiB']:.0f} MiB for max_mem {mem / MiB:.0f} MiB")
        if c3 and ts_:
            print(f"{case}: climio is {ts_['wall_s'] / c3['wall_s']:.2f}x faster than tensorstore (v3 both, the same "
                  f"blosc codec), peak {c3['peak_tree_MiB']:.0f} vs {ts_['peak_tree_MiB']:.0f} MiB")
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
    ap.add_argument("--tools", help="only these tools, comma-separated (of climio v3, climio v2, rechunker threads, "
                    "rechunker processes, rechunker threads M/W, to_zarr threads, to_zarr processes, tensorstore, "
                    "floor)")
    ap.add_argument("--baseline-src", metavar="DIR", help="also run 'climio base v3': climio with PYTHONPATH=DIR "
                    "(the src/ of another checkout, e.g. `git archive main src | tar -x -C DIR/..`)")
    a = ap.parse_args()
    shape = peers.QUICK_SHAPE if a.quick else peers.DEFAULT_SHAPE
    if a.size:
        shape = (max(2, int(parse_size(a.size) // (shape[1] * shape[2] * shape[3] * 4))),) + tuple(shape[1:])
    mem = parse_size(a.max_mem)
    pys = {}
    for name, find, dists in (("rechunker", rechunker_python, ("rechunker", "zarr", "dask")),
                              ("tensorstore", tensorstore_python, ("tensorstore", "zarr"))):
        try:
            pys[name] = find()
            print(f"{name}: {peer_versions(pys[name], dists)} ({pys[name]})")
        except PeerError as exc:
            pys[name] = exc
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
                src = work / "source-v2-blosc.zarr"
                if not src.exists():
                    subprocess.run([peers.CLIMIO, "rechunk", str(a.nc_input), str(src), "--zarr-format", "2",
                                    "--compression", SOURCE_COMPRESSION], check=True, capture_output=True)
            run_case(case, src, work, a, var, mem, pys, rows, rng)
        print(f"load average after: {os.getloadavg()[0]:.2f}")
        report(rows, mem, var, a)
    finally:
        if not a.keep:
            shutil.rmtree(work, ignore_errors=True)
    return 0 if all(r["ok"] or r.get("unavailable") for r in rows) else 1   # a missing peer: said, not failed


if __name__ == "__main__":
    sys.exit(main())
