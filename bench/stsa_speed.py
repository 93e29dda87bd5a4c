"""Speed of climio's STSA (issue 14, item 8): (a) the WK kernel against PyPI's pywkspectra on one
core, (b) end-to-end latitude tasks on N Dask workers against pure read and pure compute.

    .venv/bin/python bench/stsa_speed.py [--quick] [--part a|b|ab] [--reps N] [--workers 1,2]
                                         [--cases A,B,...] [--keep DIR]

Prints ratios; it is not a test (targets: (a) climio >= 3x faster, i.e. climio/pywk <= 0.33;
(b) end-to-end / max(read, compute) <= 1.25). Exit status 0 whatever the ratios.

(a) Kernel, one core. climio.stsa.spectra.wk_spectra(x, spd, 96, -65) against
pywkspectra.compute_wk_spectra(DataArray, ..., nDayWin=96, nDaySkip=-65, verbose=False), the function
its users call, on the same float64 field (bench/stsa_vs_ncl.py's make_field: red noise + Kelvin/MRG
packets + annual cycle + trend; 144 longitudes labelled -180..177.5 so that pywkspectra does not
roll them, latitudes -15..15, an even number). Each runs in its own server process -- climio in
.venv, pywkspectra in its own venv (~/.cache/climio-bench/pywk, as bench/stsa_vs_ncl.py sets it up;
both numpy 2.4.x / pocketfft) -- both pinned with os.sched_setaffinity to the same single core,
with OMP/MKL/OPENBLAS/NUMEXPR_NUM_THREADS=1, called alternately (order swapped every repetition)
after one untimed warm-up each; medians of the repetitions. pywkspectra's time includes its input
checks (load_wk_data: sort, select, copy); that step is also timed alone and the ratio without it
is printed too.

Same results. pywkspectra documents these differences from NCL/climio: a Hann taper over the
whole segment (NCL: split cosine bell over 10 %); power averaged over windows and over the
half-rows (NCL: x2 the sum over half-rows, so climio = nlat x pywkspectra for the raw and
background spectra, and ratios equal); the one-pass 1-2-1 frequency smoothing of the raw spectra
runs through the Nyquist cell (NCL stops before it); the background's 10-pass frequency smoothing
ends at the last f <= 0.8 cpd (NCL: the bin nearest 0.8 cpd, e.g. 77/96 = 0.802). With its Hann taper
the values are not comparable cell by cell (a different estimator), so for the comparison
pywkspectra's own pipeline functions (load_wk_data, remove_dominant_signals, decompose_symasym,
spectral_coefficients, separate_power, derive_background) are run with np.hanning replaced by
NCL's split-cosine-bell weights (climio.stsa.spectra.split_cosine_taper), and compared with
climio's wk_spectra as follows, all on climio's (wavenumber, frequency) grid:
  raw     sym_raw, asym_raw / nlat  vs  mean over windows and half-rows of |coef|^2   (every cell)
  smooth  sym, asym / nlat          vs  separate_power        (0 < f, j < N/2 - 1: not the last
                                                                two bins, smoothed differently)
  bg      background / nlat         vs  derive_background     (f > 0, except the 10 bins below the
                                                                later of the two smoothing ends)
  ratio   sym_ratio, asym_ratio     vs  psumsym/psumb, psumanti/psumb (cells of smooth and bg where
                                                                both powers exceed 1e-12 x their max)
Reported: max over cells of |climio - pywk| / |pywk| (cells with |pywk| > 1e-12 max|pywk|) and
max |climio - pywk| / max|pywk|; tolerance 1e-10. The spectra from the timed runs (Hann) are
also compared, for information only: median |log10 difference| of the smooth group after the
constant log10(nlat).

(b) End-to-end, N workers (climio's LocalCluster: processes of --threads compute threads and one
thread that reads the next task meanwhile; the tasks pipelined as workflow._submit_pipelined says). Per layout -- contiguous, the
netCDF library's default chunks, x-t chunks [T,1,1,X] -- one file u[time, 1, lat, lon] written by
climio.data.write_4d (6-hourly, so spd 4; global cell-centre latitudes, mirrored) into a temporary
directory. WK spectra over every latitude (lat_band None), 96-day windows, the workflow's default
16 latitude tasks. For every repetition the workers' open files are closed, the file is opened
and evicted from the page cache (climio.machine.cache.prepare(..., "cold"), verified by mincore):
  read     climio.stsa.workflow.analyse(..., compute=False): the tasks read only
  compute  the same tasks (stsa.tasks._compute) on the field already in the workers' memory
           (the whole array scattered to every worker beforehand, untimed), on the workers'
           compute slots, spread evenly over the workers by hand
  e2e      analyse(..., compute=True): read + spectra, as `climio stsa` runs
Times are the client's wall clock from submission to the combined result; medians. Printed:
e2e / max(read, compute), and e2e / (read + compute). Reading overlaps computing inside each
worker: its reading thread reads the next task while its compute slots compute; the first task's
read cannot overlap anything (with default chunks it reads the whole variable: every task's rows
are in every chunk). --read-plan picks how tasks read (climio.stsa.readplan): runs (climio stsa's
default) or the thesis's latitude; the last column names the reader the e2e tasks used (a
contiguous variable: h5py with its sieve sized for the page cache's state, climio.stsa.direct).
"""

from __future__ import annotations

import os

for _v in ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS", "NUMEXPR_NUM_THREADS",
           "VECLIB_MAXIMUM_THREADS"):
    os.environ[_v] = "1"

import argparse  # noqa: E402
import shutil  # noqa: E402
import subprocess  # noqa: E402
import sys  # noqa: E402
import tempfile  # noqa: E402
import time  # noqa: E402
from pathlib import Path  # noqa: E402

import numpy as np  # noqa: E402

HERE = Path(__file__).resolve().parent
SRC = HERE.parent / "src"
sys.path.insert(0, str(SRC))
sys.path.insert(0, str(HERE))
from climio.stsa import spectra as sp  # noqa: E402
from stsa_vs_ncl import PYWK_VENV, ensure_pywk, make_field  # noqa: E402

WIN, SKIP, MLON = 96, -65, 144
# (a) name: (days, spd, nlat)
CASES = {"A": (730, 1, 16), "B": (1460, 1, 32), "C": (2920, 1, 32), "D": (730, 4, 16), "E": (1460, 4, 32)}
QUICK_CASES = ("A", "D")
RTOL = 1e-10
TARGET_KERNEL = 1 / 3
TARGET_OVERLAP = 1.25
# (b) the generated variable u[T, 1, Y, X]: 6-hourly (spd 4), global latitudes
SHAPE_B = (4 * 730, 1, 64, 144)
QUICK_SHAPE_B = (4 * 365, 1, 32, 144)
LAYOUTS = (("contiguous", "contiguous"), ("default", "default"), ("xt", None))   # None: [T,1,1,X]

# One server per implementation: reads commands on stdin, answers one line on stdout.
SERVER = r"""
import os, sys, time
core, which, src = int(sys.argv[1]), sys.argv[2], sys.argv[3]
os.sched_setaffinity(0, {core})
import numpy as np
out = sys.stdout
sys.stdout = sys.stderr          # nothing but answers on the pipe
def answer(text):
    out.write(text + "\n"); out.flush()
if which == "climio":
    sys.path.insert(0, src)
    from climio.stsa.spectra import wk_spectra
else:
    import types
    import xarray as xr
    import pywkspectra
    from pywkspectra import spectra as pws
    from pywkspectra.io import load_wk_data
state = {}
def run():
    if which == "climio":
        return wk_spectra(state["x"], state["spd"], state["win"], state["skip"])
    return pywkspectra.compute_wk_spectra(state["da"], "x", 15, nDayWin=state["win"], nDaySkip=state["skip"],
                                          max_wn=15, max_freq=0.8, verbose=False)
def pywk_steps(taper, contiguous):
    # compute_wk_spectra's own steps, keeping the unsmoothed power, np.hanning -> `taper`;
    # contiguous: hand remove_dominant_signals a C-ordered array (see the module docstring)
    shim = types.SimpleNamespace(**{k: getattr(np, k) for k in dir(np) if not k.startswith("__")})
    shim.hanning = lambda n: taper.copy()
    pws.np = shim
    try:
        data, spd = load_wk_data(state["da"], varname="x", latBound=15, verbose=False)
        state["c_order"] = bool(data.values.flags["C_CONTIGUOUS"])
        if contiguous:
            data = data.copy(data=np.ascontiguousarray(data.values))
        ntim, nlat, nlon, nDayTot, nSampWin, nSampSkip = pws.sampling_vars(data, spd, state["win"], state["skip"], verbose=False)
        dt = pws.remove_dominant_signals(data, spd, nDayTot, nSampWin, progress=False)
        sa = pws.decompose_symasym(dt, verbose=False)
        wave, freq, pee = pws.spectral_coefficients(sa, spd, nSampWin, nSampSkip, progress=False)
        power = np.abs(pee) ** 2
        half = nlat // 2
        raw_anti, raw_sym = power[:, :, :half].mean(axis=(0, 2)), power[:, :, -half:].mean(axis=(0, 2))
        anti, sym = pws.separate_power(power, wave, freq, verbose=False)
        bg = pws.derive_background(power, wave, freq, progress=False)
        public = pywkspectra.compute_wk_spectra(state["da"], "x", 15, nDayWin=state["win"], nDaySkip=state["skip"],
                                                max_wn=15, max_freq=0.8, verbose=False)
    finally:
        pws.np = np
    return dict(wave=wave, freq=freq, raw_sym=raw_sym, raw_anti=raw_anti, sym=sym, anti=anti, bg=bg,
                public_sym=public["symmetric_power"].values, public_freq=public.frequency.values,
                public_wave=public.wavenumber.values)
for line in sys.stdin:
    cmd = line.split()
    if not cmd:
        continue
    if cmd[0] == "quit":
        break
    if cmd[0] == "load":              # load NPZ: x, spd, win, skip, lat, lon
        z = np.load(cmd[1])
        state = {"x": z["x"], "spd": int(z["spd"]), "win": int(z["win"]), "skip": int(z["skip"])}
        if which == "pywk":
            spd = state["spd"]
            t = np.datetime64("2000-01-01T00:00") + np.arange(state["x"].shape[0]) * np.timedelta64(24 // spd, "h")
            state["da"] = xr.DataArray(state["x"], dims=("time", "lat", "lon"), name="x",
                                       coords={"time": t, "lat": z["lat"], "lon": z["lon"]})
        answer("ok")
    elif cmd[0] == "time":            # one timed run (and, for pywk, its input step alone)
        t0 = time.perf_counter(); r = run(); t1 = time.perf_counter()
        extra = 0.0
        if which == "pywk":
            t2 = time.perf_counter(); load_wk_data(state["da"], varname="x", latBound=15, verbose=False)
            extra = time.perf_counter() - t2
        state["last"] = r
        answer(f"{t1 - t0!r} {extra!r}")
    elif cmd[0] == "save_last":       # the last timed result (pywk: its Hann-tapered spectra)
        r = state["last"]
        if which == "pywk":
            np.savez(cmd[1], freq=r.frequency.values, wave=r.wavenumber.values,
                     sym=r["symmetric_power"].values, anti=r["antisymmetric_power"].values)
        answer("ok")
    elif cmd[0] == "steps":           # pywk with the given taper: steps SAVE TAPER.npy
        taper = np.load(cmd[2])
        as_is = pywk_steps(taper, False)
        z = pywk_steps(taper, True)
        z["public_sym"] = as_is["public_sym"]          # the public function, for the check
        z["as_is_sym"] = as_is["sym"]                  # the steps as the public function runs them
        z["c_order"] = state["c_order"]
        np.savez(cmd[1], **z)
        answer("ok")
    elif cmd[0] == "rss":
        import resource
        answer(str(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss))
"""


class Server:
    def __init__(self, python, which, core):
        self.which = which
        self.p = subprocess.Popen([str(python), "-c", SERVER, str(core), which, str(SRC)],
                                  stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, env=dict(os.environ))

    def ask(self, text):
        self.p.stdin.write(text + "\n")
        self.p.stdin.flush()
        line = self.p.stdout.readline()
        if not line:
            raise RuntimeError(f"{self.which} server died on '{text}' (exit {self.p.wait()})")
        return line.strip()

    def close(self):
        try:
            self.p.stdin.write("quit\n")
            self.p.stdin.close()
            self.p.wait(timeout=30)
        except (OSError, subprocess.TimeoutExpired):
            self.p.kill()


# ------------------------------------------------------------------------------------------------
# (a) the kernel
# ------------------------------------------------------------------------------------------------

def _rel(mine, theirs):
    """(max relative difference over cells with |theirs| > 1e-12 max, max |diff| / max |theirs|)."""
    mine, theirs = np.asarray(mine, float), np.asarray(theirs, float)
    if not np.array_equal(np.isfinite(mine), np.isfinite(theirs)):
        return np.inf, np.inf
    ok = np.isfinite(theirs)
    d = np.abs(mine[ok] - theirs[ok])
    scale = np.abs(theirs[ok]).max()
    big = np.abs(theirs[ok]) > 1e-12 * scale
    return float((d[big] / np.abs(theirs[ok][big])).max()), float(d.max() / scale)


def compare_steps(r, z, nlat, spd):
    """Per group (max rel, max abs/max): climio's WKSpectra `r` against pywkspectra's steps `z`."""
    n = WIN * spd
    # climio grid (k, j) -> pywk indices: wave index k + M/2, freq index j + N/2
    jw = np.rint(z["wave"]).astype(int)
    jf = np.rint(z["freq"] * WIN).astype(int)
    wi = {k: i for i, k in enumerate(jw)}
    fi = {}
    for i, j in enumerate(jf):
        fi.setdefault(j, i) if j != -(n // 2) else None     # the -N/2 column duplicates +N/2
    rows = [wi[int(k)] for k in r.wavenumber]
    j = np.rint(r.frequency * WIN).astype(int)
    cols = [fi[int(v)] for v in j]
    on = lambda a: np.asarray(a)[np.ix_(cols, rows)].T             # pywk (freq, wave) -> (wave, freq)
    nyq = n // 2
    smooth_ok = (j > 0) & (j < nyq - 1)
    end_ncl = min(int(np.rint(sp.NCL_BG_FREQ_LIMIT * WIN)), nyq)
    fz = z["freq"][cols]
    end_pywk = int(j[(fz > 0) & (fz <= 0.8)].max())
    lo, hi = min(end_ncl, end_pywk), max(end_ncl, end_pywk)
    bg_ok = (j > 0) & ((j <= lo - 10) | (j > hi)) if lo != hi else (j > 0)
    both = smooth_ok & bg_ok
    res = {}
    res["raw"] = max(_rel(r.sym_raw / nlat, on(z["raw_sym"])), _rel(r.asym_raw / nlat, on(z["raw_anti"])))
    res["smooth"] = max(_rel((r.sym / nlat)[:, smooth_ok], on(z["sym"])[:, smooth_ok]),
                        _rel((r.asym / nlat)[:, smooth_ok], on(z["anti"])[:, smooth_ok]))
    res["bg"] = _rel((r.background / nlat)[:, bg_ok], on(z["bg"])[:, bg_ok])
    pb = on(z["bg"])
    # ratios: only where numerator and background are above rounding noise (1e-12 of their maxima;
    # e.g. k = M/2 is ~1e-33 in these fields, and noise / noise is not a comparable number)
    real = lambda a: np.abs(a) > 1e-12 * np.nanmax(np.abs(a[:, both]))
    rs = both[None, :] & real(on(z["sym"])) & real(pb)
    ra = both[None, :] & real(on(z["anti"])) & real(pb)
    res["ratio"] = max(_rel(r.sym_ratio[rs], (on(z["sym"]) / pb)[rs]),
                       _rel(r.asym_ratio[ra], (on(z["anti"]) / pb)[ra]))
    cells = {"raw": r.sym_raw.size, "smooth": int(smooth_ok.sum()) * r.wavenumber.size,
             "bg": int(bg_ok.sum()) * r.wavenumber.size, "ratio": int(min(rs.sum(), ra.sum()))}
    # the steps reproduce the public function (cropped to |k| <= 15, 0 < f <= 0.8)
    kk = np.rint(z["public_wave"]).astype(int)
    ff = np.rint(z["public_freq"] * WIN).astype(int)
    ii = [fi[int(v)] for v in ff]
    kk_i = [wi[int(v)] for v in kk]
    public_same = np.array_equal(np.asarray(z["as_is_sym"])[np.ix_(ii, kk_i)], z["public_sym"])
    # what pywkspectra's skipped whole-record detrend does to its smoothed symmetric spectrum
    skip = _rel(on(z["as_is_sym"])[:, smooth_ok], on(z["sym"])[:, smooth_ok])[0]
    return res, cells, public_same, (bool(z["c_order"]), skip)


def hann_info(r, path, nlat, spd):
    """Median |log10 difference| (decades) of climio's smoothed spectra and pywkspectra's own
    (Hann) ones over the smooth cells with |k| <= 15, f <= 0.8, after the constant log10(nlat)."""
    z = np.load(path)
    wi = {int(round(k)): i for i, k in enumerate(z["wave"])}
    fi = {int(round(f * WIN)): i for i, f in enumerate(z["freq"])}
    j = np.rint(r.frequency * WIN).astype(int)
    d = []
    for name, theirs in (("sym", z["sym"]), ("asym", z["anti"])):
        mine = getattr(r, name) / nlat
        for a, k in enumerate(r.wavenumber):
            for b, jj in enumerate(j):
                if int(k) in wi and int(jj) in fi and 0 < jj < WIN * spd // 2 - 1:
                    d.append(np.log10(mine[a, b]) - np.log10(theirs[fi[int(jj)], wi[int(k)]]))
    d = np.array(d)
    return float(np.median(np.abs(d))), float(np.median(d))


def part_a(names, reps, work, core):
    pywk_py = ensure_pywk()
    print(f"(a) WK kernel, one core (cpu {core}), OMP/MKL/OPENBLAS_NUM_THREADS=1; nDayWin {WIN}, nDaySkip {SKIP}, "
          f"{MLON} longitudes; {reps} interleaved repetitions after a warm-up, medians")
    print(f"    climio: {sys.executable} (stsa.spectra.wk_spectra); pywkspectra: {pywk_py} (compute_wk_spectra)")
    hdr = (f"{'case':4} {'days':>4} {'spd':>3} {'nlat':>4} {'nwin':>4} {'t_climio':>9} {'t_pywk':>8} {'(input)':>8} "
           f"{'climio/pywk':>11} {'speed-up':>8} {'w/o input':>9}")
    servers = {"climio": Server(sys.executable, "climio", core), "pywk": Server(pywk_py, "pywk", core)}
    rows, checks = [], []
    try:
        print(hdr)
        for ci, name in enumerate(names):
            days, spd, nlat = CASES[name]
            x, lat, _ = make_field(days, spd, nlat, MLON, 100 + ci)
            lon = -180.0 + np.arange(MLON) * 360.0 / MLON
            npz = work / f"case_{name}.npz"
            np.savez(npz, x=x, spd=spd, win=WIN, skip=SKIP, lat=lat, lon=lon)
            for s in servers.values():
                s.ask(f"load {npz}")
                s.ask("time")                                   # warm-up, untimed
            t = {"climio": [], "pywk": [], "input": []}
            for rep in range(reps):
                order = ("climio", "pywk") if rep % 2 == 0 else ("pywk", "climio")
                for which in order:
                    wall, extra = (float(v) for v in servers[which].ask("time").split())
                    t[which].append(wall)
                    if which == "pywk":
                        t["input"].append(extra)
            med = {k: float(np.median(v)) for k, v in t.items()}
            ratio = med["climio"] / med["pywk"]
            ratio_ni = med["climio"] / (med["pywk"] - med["input"])
            nwin = len(sp.window_starts(days * spd, spd, WIN, SKIP))
            rows.append((name, ratio, ratio_ni))
            print(f"{name:4} {days:4d} {spd:3d} {nlat:4d} {nwin:4d} {med['climio']:8.3f}s {med['pywk']:7.3f}s "
                  f"{med['input']:7.3f}s {ratio:11.3f} {1 / ratio:7.2f}x {1 / ratio_ni:8.2f}x", flush=True)
            # same results
            hann = work / f"hann_{name}.npz"
            servers["pywk"].ask(f"save_last {hann}")
            taper = work / f"taper_{name}.npy"
            np.save(taper, sp.split_cosine_taper(WIN * spd))
            steps = work / f"steps_{name}.npz"
            servers["pywk"].ask(f"steps {steps} {taper}")
            r = sp.wk_spectra(x, spd, WIN, SKIP)
            res, cells, public_same, skip = compare_steps(r, np.load(steps), nlat, spd)
            checks.append((name, res, cells, public_same, skip, hann_info(r, hann, nlat, spd)))
            npz.unlink()
        rss = {k: int(s.ask("rss")) for k, s in servers.items()}
    finally:
        for s in servers.values():
            s.close()
    print(f"    peak RSS of the servers over all cases: climio {rss['climio'] / 1024:.0f} MiB, "
          f"pywkspectra {rss['pywk'] / 1024:.0f} MiB")
    print(f"\n    same results: pywkspectra's steps with np.hanning -> NCL's split cosine bell, against climio "
          f"(climio raw/background divided by nlat); max relative difference per cell "
          f"[max |diff| / max |value|], tolerance {RTOL:g}:")
    ok_all = True
    for name, res, cells, public_same, (c_order, skip), (hmed, hoff) in checks:
        ok = all(v[0] <= RTOL for v in res.values()) and public_same
        ok_all &= ok
        print(f"{name:4} " + "; ".join(f"{g} {v[0]:.1e} [{v[1]:.1e}] ({cells[g]} cells)" for g, v in res.items())
              + f" -> {'same' if ok else 'DIFFERENT'}")
        print(f"     (steps as run = compute_wk_spectra: {'yes' if public_same else 'NO'}; its load_wk_data gave a "
              f"{'C' if c_order else 'non-C'}-ordered array{'' if c_order else ', so its whole-record detrend was skipped'}"
              f": max relative effect on the smoothed symmetric spectrum {skip:.1e})")
        print(f"     (information: with pywkspectra's own Hann taper, smoothed spectra differ by median "
              f"{hmed:.3f} decades per cell after log10(nlat); median signed {hoff:+.3f})")
    worst = max(r[1] for r in rows)
    worst_ni = max(r[2] for r in rows)
    print(f"\n    climio/pywkspectra time: worst {worst:.3f} (speed-up >= {1 / worst:.2f}x; without pywkspectra's "
          f"input step >= {1 / worst_ni:.2f}x); target <= {TARGET_KERNEL:.3f} (3x): "
          f"{'met' if worst <= TARGET_KERNEL else 'NOT met'}; results {'same' if ok_all else 'NOT the same'} "
          f"within {RTOL:g}")
    return rows, ok_all


# ------------------------------------------------------------------------------------------------
# (b) end-to-end on N workers
# ------------------------------------------------------------------------------------------------

def _compute_task(arr, spec):
    from climio.stsa import tasks
    t0 = time.perf_counter()
    block = np.ascontiguousarray(arr[:, list(spec.rows), :], dtype=np.float64)
    out = tasks._compute(block, spec)
    out.update(task=spec.index, compute_wall_s=time.perf_counter() - t0)
    return out


def _cold(client, path):
    import xarray as xr

    from climio.machine import cache
    from climio.stsa import workflow
    client.run(workflow.close_cached_files)
    ds = xr.open_dataset(path, engine="netcdf4")
    state = cache.prepare([path], "cold")
    return ds, state["state"]


def part_b(shape, workers, reps, work, n_tasks, threads=1, read_plan="runs", layouts=None):
    # long: one linear procedure: write each layout, then per worker count time every layout's repetitions, print the rows
    from climio.data import write_4d
    from climio.stsa import workflow
    print(f"\n(b) end-to-end: u{list(shape)} float64 ({np.prod(shape) * 8 / 1e6:.0f} MB), WK over all "
          f"{shape[2]} latitudes, nDayWin {WIN}, nDaySkip {SKIP}, {n_tasks} latitude tasks, read plan "
          f"{read_plan}; cold cache; medians of {reps}")
    files = {}
    chosen = [(name, chunks) for name, chunks in LAYOUTS if not layouts or name in layouts]
    for name, chunks in chosen:
        path = work / f"stsa_{name}.nc"
        t0 = time.perf_counter()
        write_4d(str(path), list(shape), chunks=chunks if chunks else [shape[0], 1, 1, shape[3]], seed=7, var="u")
        files[name] = path
        import netCDF4
        with netCDF4.Dataset(path) as nc:
            ch = nc.variables["u"].chunking()
        print(f"    wrote {name:10} chunks {ch if ch == 'contiguous' else list(ch)} in {time.perf_counter() - t0:.1f} s")
    hdr = (f"{'layout':10} {'N':>2} {'read':>7} {'compute':>8} {'e2e':>7} {'e2e/max':>8} {'e2e/sum':>8} "
           f"{'tasks: read':>11} {'compute':>8} {'cold':>5}  reader (e2e tasks)")
    print(hdr)
    out = []
    from distributed import wait
    for n in workers:
        with workflow.StsaCluster(workers=n, threads=threads) as cl:
            client = cl.client
            # the pure compute runs on the workers' compute slots only, as the e2e tasks' computes do
            slot = {workflow.CPU_SLOT: 1} if workflow.compute_slots(client) else None
            addrs = sorted(client.scheduler_info()["workers"])
            for name, _ in chosen:
                path = str(files[name])
                t = {"read": [], "compute": [], "e2e": [], "task_read": [], "task_compute": []}
                colds = []
                readers = set()
                ref = None
                # the field in the workers' memory for the pure compute (untimed)
                ds, _ = _cold(client, path)
                inp = workflow.prepare_input(ds["u"], "wk", lat_band=None, ndaywin=WIN, ndayskip=SKIP)
                arr = np.asarray(inp.da.values, dtype=np.float64)
                specs = workflow._specs(inp, n_tasks, True, WIN, SKIP, None, sp.NCL_TAPER_FRACTION)
                ds.close()
                arr_f = client.scatter(arr, broadcast=True)
                wait(arr_f)
                for rep in range(reps):
                    # read only
                    ds, st = _cold(client, path)
                    inp = workflow.prepare_input(ds["u"], "wk", lat_band=None, ndaywin=WIN, ndayskip=SKIP)
                    t0 = time.perf_counter()
                    workflow.analyse(inp, WIN, SKIP, n_tasks=n_tasks, compute=False, client=client, read_plan=read_plan)
                    t["read"].append(time.perf_counter() - t0)
                    ds.close()
                    colds.append(st)
                    # compute only, data in memory
                    t0 = time.perf_counter()
                    # spread evenly by hand: left to itself, Dask put all 16 on one of 2 workers from
                    # the second repetition on (resource-restricted tasks), doubling this baseline
                    futs = [client.submit(_compute_task, arr_f, s, pure=False, resources=slot,
                                          workers=[addrs[i % len(addrs)]], allow_other_workers=False)
                            for i, s in enumerate(specs)]
                    res = client.gather(futs)
                    spec_c = workflow.combine(inp, res, WIN, SKIP)
                    t["compute"].append(time.perf_counter() - t0)
                    # end to end
                    ds, st = _cold(client, path)
                    inp = workflow.prepare_input(ds["u"], "wk", lat_band=None, ndaywin=WIN, ndayskip=SKIP)
                    t0 = time.perf_counter()
                    run = workflow.analyse(inp, WIN, SKIP, n_tasks=n_tasks, compute=True, client=client,
                                           read_plan=read_plan)
                    t["e2e"].append(time.perf_counter() - t0)
                    ds.close()
                    colds.append(st)
                    t["task_read"].append(sum(x["read_wall_s"] for x in run.tasks))
                    t["task_compute"].append(sum(x["compute_wall_s"] for x in run.tasks))
                    readers |= {x.get("reader", "?") for x in run.tasks}
                    same = np.array_equal(run.spectra.sym_raw, spec_c.sym_raw)
                    ref = same if ref is None else (ref and same)
                client.cancel(arr_f)
                med = {k: float(np.median(v)) for k, v in t.items()}
                r_max = med["e2e"] / max(med["read"], med["compute"])
                r_sum = med["e2e"] / (med["read"] + med["compute"])
                cold = "yes" if all(c == "cold" for c in colds) else "NO"
                out.append((name, n, r_max, r_sum, med))
                print(f"{name:10} {n:2d} {med['read']:6.2f}s {med['compute']:7.2f}s {med['e2e']:6.2f}s {r_max:8.2f} "
                      f"{r_sum:8.2f} {med['task_read']:10.2f}s {med['task_compute']:7.2f}s {cold:>5}  {'; '.join(sorted(readers))}"
                      + ("" if ref else "  (e2e spectra differ from the in-memory compute!)"), flush=True)
    worst = max(o[2] for o in out)
    print(f"    e2e / max(read, compute): worst {worst:.2f}; target <= {TARGET_OVERLAP}: "
          f"{'met' if worst <= TARGET_OVERLAP else 'NOT met'} ('tasks:' sums of the per-task read and compute "
          f"walls inside the e2e run, over all workers)")
    return out


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--quick", action="store_true", help=f"cases {','.join(QUICK_CASES)}, shape {QUICK_SHAPE_B}")
    ap.add_argument("--part", default="ab", choices=("a", "b", "ab"))
    ap.add_argument("--cases", help=f"comma-separated (a) cases of {','.join(CASES)}")
    ap.add_argument("--reps", type=int, default=None, help="repetitions (default 5 for (a), 3 for (b); quick 3/2)")
    ap.add_argument("--workers", default="1,2", help="worker counts for (b)")
    ap.add_argument("--threads", type=int, default=1,
                    help="compute threads per Dask worker for (b), besides its reading thread: 1 (default, as climio "
                         "stsa) is the thesis's one computing task per worker")
    ap.add_argument("--layouts", help=f"comma-separated (b) layouts of {','.join(n for n, _ in LAYOUTS)} (default all)")
    ap.add_argument("--read-plan", default="runs", choices=("runs", "latitude"),
                    help="how a task reads (climio.stsa.readplan): runs (climio stsa's default) or latitude (the thesis's)")
    ap.add_argument("--tasks", type=int, default=None, help="latitude tasks for (b) (default: the workflow's 16)")
    ap.add_argument("--keep", help="work directory to keep (default: a temporary one)")
    a = ap.parse_args(argv)
    cores = sorted(os.sched_getaffinity(0))
    work = Path(a.keep) if a.keep else Path(tempfile.mkdtemp(prefix="stsa_speed_"))
    work.mkdir(parents=True, exist_ok=True)
    print(f"cores available {cores}; work dir {work}; pywkspectra venv {PYWK_VENV}")
    try:
        if "a" in a.part:
            names = a.cases.split(",") if a.cases else (QUICK_CASES if a.quick else tuple(CASES))
            part_a(names, a.reps or (3 if a.quick else 5), work, cores[-1])
        if "b" in a.part:
            from climio.stsa.workflow import DEFAULT_TASKS
            part_b(QUICK_SHAPE_B if a.quick else SHAPE_B, [int(w) for w in a.workers.split(",")],
                   a.reps or (2 if a.quick else 3), work, a.tasks or DEFAULT_TASKS, a.threads, a.read_plan,
                   a.layouts.split(",") if a.layouts else None)
    finally:
        if not a.keep:
            shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
