"""climio.stsa.wk_spectra against NCL's wkSpaceTime (issue 14, item 7), cell by cell.

    .venv/bin/python bench/stsa_vs_ncl.py [--quick] [--keep DIR] [--cases A,B,...] [--controls] [--pywk]

NCL: Debian's ncl-ncarg (6.6.2). If `ncl` is not on PATH this script installs it with apt-get
(root needed; nothing else here installs anything). Every case writes one synthetic field as
netCDF (float64, dims time/lat/lon, lat mirrored about the equator from -15 to 15), runs
NCL's wkSpaceTime on it with opt@netCDF = True, and climio's wk_spectra on the same array.

Fields: AR(1) red noise (lag-1 correlation 0.8 per day) in time, smoothed 1-2-1 in longitude, plus
an equatorially symmetric eastward Kelvin-like packet (k = 1..8 on the 25 m curve), an
antisymmetric westward MRG-like packet (k = -1..-8), an annual cycle (so records >= 365 days
exercise NCL's low-frequency removal) and a linear trend (exercises the detrends).

Compared over NCL's plotted domain (0 <= f <= 0.8 cpd, |k| <= 15; f = 0 is missing in NCL):
  raw        FIG_1_SYM, FIG_1_ASYM   (log10 power, one 1-2-1 pass in frequency)
  background FIG_3_BACK              (log10)
  ratio      FIG_3_SYM, FIG_3_ASYM   (ratio; compared as log10)
Per group: median and max over cells of |log10(climio) - log10(NCL) - C| in decades, with C the
one normalisation constant between the two. climio uses NCL's normalisation (2-D FFT / (N M),
power = |coef|^2, x2 for the half-latitude sums), so C = 0 (a factor of 1); the script also prints
the median signed offset so a constant mismatch would show. Target: median <= 0.02, max <= 0.05.

--controls reruns climio with deliberate departures from NCL (no low-frequency removal, no taper,
taper 0.2, full Hann taper) to show the comparison would see them. --pywk also runs PyPI's
pywkspectra (in its own venv under ~/.cache/climio-bench/pywk, created on first use) on the same
files; its normalisation differs, so its median signed offset per group is removed and printed.
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))
from climio.stsa import dispersion, spectra  # noqa: E402

NORMALISATION_DECADES = 0.0   # log10(climio / NCL): the same normalisation by construction
PYWK_VENV = Path.home() / ".cache" / "climio-bench" / "pywk"
PYWK_RUN = """
import sys, numpy as np, pywkspectra
r = pywkspectra.compute_wk_spectra(sys.argv[1], "x", 15, nDayWin=int(sys.argv[2]),
                                   nDaySkip=int(sys.argv[3]), max_wn=15, max_freq=0.8, verbose=False)
np.savez(sys.argv[4], frequency=r.frequency.values, wavenumber=r.wavenumber.values,
         **{k: r[k].values for k in ("symmetric_log_power", "antisymmetric_log_power",
            "background_log_power", "symmetric_normalized", "antisymmetric_normalized")})
"""
PYWK_NAMES = {"FIG_1_SYM": "symmetric_log_power", "FIG_1_ASYM": "antisymmetric_log_power",
              "FIG_3_BACK": "background_log_power", "FIG_3_SYM": "symmetric_normalized",
              "FIG_3_ASYM": "antisymmetric_normalized"}

# name: (days, spd, nlat, mlon, nDayWin, nDaySkip)
CASES = {
    "A": (400, 1, 12, 144, 96, -65),     # classic WK settings, record >= 365 d: low-freq removal
    "B": (200, 4, 9, 72, 96, -65),       # spd 4, odd nlat (equator row), no removal
    "C": (128, 4, 16, 128, 64, 0),       # adjacent windows
    "D": (730, 1, 10, 64, 128, 10),      # gaps between windows, two years
    "E": (380, 4, 8, 144, 96, -65),      # spd 4 with removal
    "F": (300, 2, 14, 96, 48, -24),      # spd 2, short windows
}
QUICK = ("A", "B")
# Negative controls (--controls): deliberate departures from NCL, to show the comparison can see them.
CONTROLS = (("no low-f removal", dict(remove_low=False)), ("no taper", dict(taper_fraction=0.0)),
            ("taper 0.2", dict(taper_fraction=0.2)), ("full Hann taper", dict(taper_fraction=1.0)))
GROUPS = {"raw": ("FIG_1_SYM", "FIG_1_ASYM"), "background": ("FIG_3_BACK",),
          "ratio": ("FIG_3_SYM", "FIG_3_ASYM")}

NCL_SCRIPT = """
load "$NCARG_ROOT/lib/ncarg/nclscripts/csm/gsn_code.ncl"
load "$NCARG_ROOT/lib/ncarg/nclscripts/csm/gsn_csm.ncl"
load "$NCARG_ROOT/lib/ncarg/nclscripts/csm/contributed.ncl"
load "$NCARG_ROOT/lib/ncarg/nclscripts/csm/diagnostics_cam.ncl"
begin
  f = addfile("{inp}", "r")
  x = f->x
  opt = True
  opt@netCDF = True
  opt@dirNetCDF = "{out_dir}/"
  opt@filNetCDF = "{out_name}"
  opt@pltType = "ps"
  wkSpaceTime(x, "{out_dir}", "bench", "X", 15, {spd}, {win}, {skip}, opt)
end
"""


def ensure_ncl():
    """Path of `ncl`, installing Debian's ncl-ncarg with apt-get when it is missing."""
    found = shutil.which("ncl")
    if found:
        return found
    if os.geteuid() != 0:
        sys.exit("ncl not on PATH and not root: cannot apt-get install ncl-ncarg")
    env = dict(os.environ, DEBIAN_FRONTEND="noninteractive")
    for cmd in (["apt-get", "update"],
                ["apt-get", "install", "-y", "--no-install-recommends", "ncl-ncarg"]):
        r = subprocess.run(cmd, env=env, capture_output=True, text=True)
        if r.returncode:
            sys.exit(f"{' '.join(cmd)} failed ({r.returncode}):\n{r.stderr[-3000:]}")
    found = shutil.which("ncl")
    if not found:
        sys.exit("ncl-ncarg installed but `ncl` is still not on PATH")
    return found


def make_field(days, spd, nlat, mlon, seed):
    """(time, lat, lon) float64 test field; see the module docstring."""
    rng = np.random.default_rng(seed)
    nt = days * spd
    t = np.arange(nt) / spd
    lat = np.linspace(-15.0, 15.0, nlat)
    lon = np.arange(mlon) * 360.0 / mlon
    phi = 0.8 ** (1.0 / spd)
    e = rng.standard_normal((nt, nlat, mlon))
    x = np.empty_like(e)
    x[0] = e[0]
    for i in range(1, nt):
        x[i] = phi * x[i - 1] + np.sqrt(1 - phi ** 2) * e[i]
    x = 0.25 * np.roll(x, 1, -1) + 0.5 * x + 0.25 * np.roll(x, -1, -1)
    y = np.radians(lat)[None, :, None] / np.radians(10.0)
    lam = np.radians(lon)[None, None, :]
    tt = t[:, None, None]
    for k in range(1, 9):        # Kelvin-like, symmetric, eastward, on the 25 m curve
        f = float(dispersion.equatorial_wave_frequency("kelvin", k, 25.0))
        x += 0.6 / k * np.exp(-y ** 2) * np.cos(k * lam - 2 * np.pi * f * tt + rng.uniform(0, 2 * np.pi))
    for k in range(1, 9):        # MRG-like, antisymmetric, westward
        f = float(dispersion.equatorial_wave_frequency("mrg", -k, 25.0))
        x += 0.4 * y * np.exp(-y ** 2) * np.cos(-k * lam - 2 * np.pi * f * tt + rng.uniform(0, 2 * np.pi))
    x += 3.0 * np.cos(2 * np.pi * tt / 365.0) * np.cos(np.radians(lat))[None, :, None]
    x += 0.002 * tt + 10.0
    return x, lat, lon


def write_nc(path, x, lat, lon, spd):
    import netCDF4
    with netCDF4.Dataset(path, "w") as nc:
        for name, n in zip(("time", "lat", "lon"), x.shape):
            nc.createDimension(name, n)
        v = nc.createVariable("time", "f8", ("time",))
        v[:] = np.arange(x.shape[0]) / spd
        v.units = "days since 2000-01-01"
        v = nc.createVariable("lat", "f8", ("lat",))
        v[:] = lat
        v.units = "degrees_north"
        v = nc.createVariable("lon", "f8", ("lon",))
        v[:] = lon
        v.units = "degrees_east"
        nc.createVariable("x", "f8", ("time", "lat", "lon"))[:] = x


def read_ncl(path):
    import netCDF4
    out = {}
    with netCDF4.Dataset(path) as nc:
        for name in sum(GROUPS.values(), ()):
            v = nc.variables[name]
            v.set_auto_mask(False)
            data = np.array(v[:], dtype=float)
            fill = getattr(v, "_FillValue", 1e20)
            data[np.abs(data - fill) <= 1e-6 * abs(fill)] = np.nan
            dims = v.dimensions
            out[name] = (data, np.array(nc.variables[dims[0]][:]), np.array(nc.variables[dims[1]][:]))
    return out


def climio_fields(r):
    """climio's counterparts of NCL's FIG_* arrays as functions of (wave, freq) grids, log10 for all."""
    return {"FIG_1_SYM": np.log10(r.sym), "FIG_1_ASYM": np.log10(r.asym),
            "FIG_3_BACK": np.log10(r.background),
            "FIG_3_SYM": np.log10(r.sym_ratio), "FIG_3_ASYM": np.log10(r.asym_ratio)}


def compare(ncl, r, n_day_win):
    """Per group: (median |d|, max |d|, median signed d, cells) in decades after the constant."""
    ours = climio_fields(r)
    k_index = {int(k): i for i, k in enumerate(r.wavenumber)}
    j_index = {int(j): i for i, j in enumerate(np.rint(r.frequency * n_day_win).astype(int))}
    res = {}
    for group, names in GROUPS.items():
        diffs = []
        for name in names:
            data, freq, wave = ncl[name]            # NCL arrays are (freq, wave)
            ref = data if name.startswith(("FIG_1", "FIG_3_BACK")) else np.log10(data)
            rows = [k_index[int(round(w))] for w in wave]
            cols = [j_index[int(round(f * n_day_win))] for f in freq]
            mine = ours[name][np.ix_(rows, cols)].T
            ok = np.isfinite(ref)
            if not np.array_equal(ok, np.isfinite(mine)):
                raise AssertionError(f"{name}: missing cells differ between NCL and climio")
            diffs.append((mine - ref - NORMALISATION_DECADES)[ok])
        d = np.concatenate(diffs)
        res[group] = (np.median(np.abs(d)), np.max(np.abs(d)), np.median(d), d.size)
    return res


def ensure_pywk():
    """Python of a separate venv with PyPI's pywkspectra (created on first use)."""
    py = PYWK_VENV / "bin" / "python"
    if not py.exists():
        subprocess.run([sys.executable, "-m", "venv", str(PYWK_VENV)], check=True)
    if subprocess.run([str(py), "-c", "import pywkspectra"], capture_output=True).returncode:
        subprocess.run([str(py), "-m", "pip", "install", "-q", "pywkspectra"], check=True)
    return py


def compare_pywk(ncl, pywk_py, inp, win, skip, work):
    """pywkspectra's log power / ratios against NCL on the cells both have (f > 0). Its
    normalisation differs, so per group the median signed offset is removed (and reported)."""
    out = work / (inp.stem + "_pywk.npz")
    p = subprocess.run([str(pywk_py), "-c", PYWK_RUN, str(inp), str(win), str(skip), str(out)],
                       capture_output=True, text=True)
    if p.returncode:
        return {"error": p.stderr.strip().splitlines()[-1] if p.stderr.strip() else "failed"}
    z = np.load(out)
    k_index = {int(round(k)): i for i, k in enumerate(z["wavenumber"])}
    j_index = {int(round(f * win)): i for i, f in enumerate(z["frequency"])}
    res = {}
    for group, names in GROUPS.items():
        diffs = []
        for name in names:
            data, freq, wave = ncl[name]
            ref = data if name.startswith(("FIG_1", "FIG_3_BACK")) else np.log10(data)
            theirs = z[PYWK_NAMES[name]]
            theirs = theirs if name.startswith(("FIG_1", "FIG_3_BACK")) else np.log10(theirs)
            for a, f in enumerate(freq):
                for b, w in enumerate(wave):
                    jj, kk = j_index.get(int(round(f * win))), k_index.get(int(round(w)))
                    if jj is not None and kk is not None and np.isfinite(ref[a, b]):
                        diffs.append(theirs[jj, kk] - ref[a, b])
        d = np.array(diffs)
        c = np.median(d)
        res[group] = (np.median(np.abs(d - c)), np.max(np.abs(d - c)), c, d.size)
    return res


def run_case(name, ncl_bin, work, seed, pywk_py=None):
    days, spd, nlat, mlon, win, skip = CASES[name]
    x, lat, lon = make_field(days, spd, nlat, mlon, seed)
    inp = work / f"field_{name}.nc"
    write_nc(inp, x, lat, lon, spd)
    out_dir = work / f"ncl_{name}"
    out_dir.mkdir(exist_ok=True)
    script = work / f"wk_{name}.ncl"
    script.write_text(NCL_SCRIPT.format(inp=inp, out_dir=out_dir, out_name="wk.nc",
                                        spd=spd, win=win, skip=skip))
    t0 = time.perf_counter()
    p = subprocess.run([ncl_bin, "-n", "-Q", str(script)], capture_output=True, text=True, cwd=out_dir)
    t_ncl = time.perf_counter() - t0
    if p.returncode or not (out_dir / "wk.nc").exists() or "fatal" in p.stdout.lower():
        raise RuntimeError(f"NCL failed for case {name}:\n{p.stdout[-3000:]}\n{p.stderr[-3000:]}")
    t0 = time.perf_counter()
    r = spectra.wk_spectra(x, spd, win, skip)
    t_py = time.perf_counter() - t0
    ncl = read_ncl(out_dir / "wk.nc")
    controls = {label: compare(ncl, spectra.wk_spectra(x, spd, win, skip, **kw), win)
                for label, kw in CONTROLS if not (label == "no low-f removal"
                                                  and not r.params["removed_low_frequencies"])}
    if pywk_py:
        controls["pywkspectra"] = compare_pywk(ncl, pywk_py, inp, win, skip, work)
    return compare(ncl, r, win), t_ncl, t_py, r.params, controls


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--quick", action="store_true", help=f"cases {','.join(QUICK)} only")
    ap.add_argument("--cases", help="comma-separated case names (default: all)")
    ap.add_argument("--keep", help="work directory to keep (default: a temporary one)")
    ap.add_argument("--seed", type=int, default=14)
    ap.add_argument("--controls", action="store_true",
                    help="also print climio with deliberate departures from NCL (negative controls)")
    ap.add_argument("--pywk", action="store_true",
                    help=f"also compare PyPI pywkspectra (installed into {PYWK_VENV})")
    a = ap.parse_args(argv)
    pywk_py = ensure_pywk() if a.pywk else None
    names = a.cases.split(",") if a.cases else (QUICK if a.quick else tuple(CASES))
    ncl_bin = ensure_ncl()
    ver = subprocess.run([ncl_bin, "-V"], capture_output=True, text=True).stdout.strip()
    work = Path(a.keep) if a.keep else Path(tempfile.mkdtemp(prefix="stsa_vs_ncl_"))
    work.mkdir(parents=True, exist_ok=True)
    print(f"NCL {ver} ({ncl_bin}); normalisation constant C = {NORMALISATION_DECADES} decades "
          f"(climio/NCL = 1); work dir {work}")
    hdr = (f"{'case':4} {'days':>4} {'spd':>3} {'nlat':>4} {'mlon':>4} {'win':>4} {'skip':>4} {'nwin':>4} "
           f"{'lowf':>4} {'group':10} {'cells':>5} {'median|d|':>10} {'max|d|':>10} {'median d':>10} "
           f"{'t_ncl':>7} {'t_climio':>8}")
    print(hdr)
    worst = {g: [0.0, 0.0] for g in GROUPS}
    for i, name in enumerate(names):
        res, t_ncl, t_py, prm, controls = run_case(name, ncl_bin, work, a.seed + i, pywk_py)
        days, spd, nlat, mlon, win, skip = CASES[name]
        for g, (med, mx, signed, n) in res.items():
            worst[g] = [max(worst[g][0], med), max(worst[g][1], mx)]
            print(f"{name:4} {days:4d} {spd:3d} {nlat:4d} {mlon:4d} {win:4d} {skip:4d} "
                  f"{prm['n_windows']:4d} {'yes' if prm['removed_low_frequencies'] else 'no':>4} "
                  f"{g:10} {n:5d} {med:10.2e} {mx:10.2e} {signed:10.2e} {t_ncl:6.1f}s {t_py:7.2f}s")
        for label, cres in controls.items():
            if label == "pywkspectra":
                print(f"{'':4} pywkspectra (own constant removed per group): " + (cres.get("error") or "; ".join(
                    f"{g} C={c:+.3f} median {m:.3f} max {x:.3f} ({n} cells)" for g, (m, x, c, n) in cres.items())))
            elif a.controls:
                print(f"{'':4} control: {label:17} " + "; ".join(
                    f"{g} median {m:.3f} max {x:.3f}" for g, (m, x, _, _) in cres.items()))
    ok = all(med <= 0.02 and mx <= 0.05 for med, mx in worst.values())
    print("worst over cases (decades): " + "; ".join(
        f"{g} median {m:.2e} max {x:.2e}" for g, (m, x) in worst.items()))
    print(f"target median <= 0.02, max <= 0.05: {'met' if ok else 'NOT met'}")
    if not a.keep:
        shutil.rmtree(work, ignore_errors=True)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
