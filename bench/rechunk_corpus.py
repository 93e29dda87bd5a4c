"""Real files round-trip: every file of a public corpus of real model output to Zarr and back.

    .venv/bin/python bench/rechunk_corpus.py [--corpus DIR] [--limit N] [--zarr-format 3] [--out FILE]

Corpus: NCL's example data (Debian's libncarg-data, 6.6.2: about 90 netCDF-3 and netCDF-4 files of
real model and observation output: CMIP5-style tas/tos/sftlf/orog files with bounds, regional
models on rotated grids, ICON triangles, CAM-SE, POP, WRF/eta, station data with strings,
packed shorts, unlimited dimensions, groups). Taken from /usr/share/ncarg/data when the package is
installed (scripts/setup.sh installs it), else fetched with `apt-get download libncarg-data` and
unpacked (dpkg-deb -x, no root) into ~/.cache/climio-bench/corpus (CLIMIO_BENCH_CACHE).

Per file:
  1. climio rechunk IN OUT.zarr --verify          (--verify: every value and attribute)
  2. climio rechunk OUT.zarr BACK.nc --verify
  3. identity with xarray, every group of IN (empty ones too): open_dataset(IN) against
     open_zarr(OUT) and against open_dataset(BACK), twice: with times undecoded (the stored numbers
     and the units/calendar text, so a rewritten unit or an added calendar shows), and decoded as
     xarray decodes them by default (skipped when xarray cannot decode the input's times):
     xarray.testing.assert_identical (values, coordinates, attributes, names) and each variable's
     encoding: dtype, _FillValue, missing_value, scale_factor, add_offset, units, calendar; BACK
     also keeps the input's chunk shape and deflate/shuffle settings.
The summary counts the identical files and says why each other one is not (climio's refusal line,
the verification's first difference, or the first xarray difference). Apart from "differs":
"identical, layout differs" (values, attributes and CF encodings identical; the netCDF copy's chunk
shape or filters of some variable are not the input's). A file xarray itself cannot open is counted
apart (nothing to compare it with).
"""

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
import warnings
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
CLIMIO = str(ROOT / ".venv" / "bin" / "climio")
CACHE = Path(os.environ.get("CLIMIO_BENCH_CACHE", Path.home() / ".cache" / "climio-bench")) / "corpus"
NCARG = Path("/usr/share/ncarg/data")
SUFFIXES = (".nc", ".cdf", ".nc4")
ENCODING_KEYS = ("dtype", "_FillValue", "missing_value", "scale_factor", "add_offset", "units", "calendar")
LAYOUT_KEYS = ("chunksizes", "zlib", "complevel", "shuffle", "contiguous")


# ---------------------------------------------------------------- the corpus

def corpus_root(explicit=None, say=print) -> Path:
    """NCL's data directory: --corpus, the installed package, or the package unpacked in the cache."""
    if explicit:
        return Path(explicit)
    if NCARG.is_dir():
        return NCARG
    unpacked = CACHE / "libncarg-data" / "usr" / "share" / "ncarg" / "data"
    if unpacked.is_dir():
        return unpacked
    CACHE.mkdir(parents=True, exist_ok=True)
    say(f"fetching Debian's libncarg-data into {CACHE} (apt-get download; dpkg-deb -x)")
    subprocess.run(["apt-get", "download", "libncarg-data"], cwd=CACHE, check=True, capture_output=True)
    deb = sorted(CACHE.glob("libncarg-data_*.deb"))[-1]
    subprocess.run(["dpkg-deb", "-x", str(deb), str(CACHE / "libncarg-data")], check=True)
    return unpacked


def corpus_files(root: Path) -> list:
    """Every netCDF file under `root` (by suffix, then by its magic bytes: CDF or HDF5)."""
    out = []
    for p in sorted(root.rglob("*")):
        if p.is_file() and p.suffix.lower() in SUFFIXES:
            with open(p, "rb") as fh:
                head = fh.read(8)
            if head[:3] == b"CDF" or head == b"\x89HDF\r\n\x1a\n":
                out.append(p)
    return out


# ---------------------------------------------------------------- identity with xarray

def groups_of(path) -> list:
    """Group paths of a netCDF file, root first ("" is the root)."""
    import netCDF4
    out = []

    def walk(g, prefix):
        out.append(prefix)
        for name, sub in g.groups.items():
            walk(sub, f"{prefix}/{name}" if prefix else name)
    with netCDF4.Dataset(path) as ds:
        walk(ds, "")
    return out


def _open(kind, path, group, decode_times=True):
    import xarray as xr
    kw = {"group": group or None, "decode_times": decode_times, "decode_timedelta": decode_times}
    if kind == "zarr":
        return xr.open_zarr(path, consolidated=None, **kw)
    return xr.open_dataset(path, **kw)


def encoding_diffs(a, b, zarr=False) -> list:
    """The CF encodings of `b` against the input `a`'s; for a netCDF copy also the compression and
    (for a chunked input) the chunk shape. A Zarr copy stores a netCDF char array as the fixed-width
    strings xarray decodes it to (xarray's own to_zarr does the same): dtype S1 -> S<n> is no change."""
    keys = ENCODING_KEYS + (() if zarr else LAYOUT_KEYS)
    out = []
    for name, va in a.variables.items():
        vb, ea = b.variables[name], va.encoding
        for k in keys:
            x, y = ea.get(k), vb.encoding.get(k)
            if k in ("zlib", "shuffle", "complevel") and not x and not y:
                continue                   # netCDF-3: no key; netCDF-4 without a filter: False / 0
            if k in ("chunksizes", "contiguous") and (ea.get("contiguous") or "chunksizes" not in ea):
                continue                   # a contiguous input gets chunks in Zarr and keeps them back
            if k == "dtype" and zarr and "char_dim_name" in ea and str(y).startswith("|S"):
                continue
            same = (x is None and y is None) or (x is not None and y is not None and _same(x, y))
            if not same:
                out.append(f"{name}: {LAYOUT if k in LAYOUT_KEYS else 'encoding'} {k} {x!r} != {y!r}")
    return out


LAYOUT = "layout (netCDF copy)"


def _same(x, y) -> bool:
    """Equal values of one kind (1.0 and 1 differ: a float scale_factor is not an int one)."""
    import numpy as np
    xa, ya = np.asarray(x), np.asarray(y)
    if xa.dtype.kind in "biufc" and ya.dtype.kind in "biufc":
        nan = xa.dtype.kind in "fc" and ya.dtype.kind in "fc"
        return xa.dtype.kind == ya.dtype.kind and xa.shape == ya.shape and bool(np.array_equal(xa, ya, equal_nan=nan))
    return str(x) == str(y)


def xarray_diffs(src, zarr_path, back) -> list:
    """First differences between the input and each copy, group by group ([] = identical): times
    undecoded, then decoded where xarray decodes the input's."""
    out = []
    for group in groups_of(src):
        where = f"group /{group}: " if group else ""
        for decode_times in (False, True):
            try:
                a = _open("nc", src, group, decode_times).load()
            except Exception as exc:
                if not decode_times:
                    raise XarrayCannot(f"{where}xarray cannot open the input: {exc}") from None
                continue                  # times xarray cannot decode ('months since'): undecoded only
            with a:
                for d in _copy_diffs(a, group, decode_times, zarr_path, back):
                    if f"{where}{d}" not in out:
                        out.append(f"{where}{d}")
    return out


def _copy_diffs(a, group, decode_times, zarr_path, back) -> list:
    import xarray as xr
    out = []
    for kind, path in (("zarr", zarr_path), ("nc", back)):
        try:
            copy = _open(kind, path, group, decode_times)
        except (KeyError, OSError, ValueError) as exc:
            out.append(f"{kind}: the group is not in the copy ({type(exc).__name__}: {exc})")
            continue
        with copy as b:
            b = b.load()
            try:
                xr.testing.assert_identical(a, b)
            except AssertionError as exc:
                named = dataset_diffs(a, b) or [" | ".join([ln for ln in str(exc).splitlines() if ln.strip()][:3])]
                out += [f"{kind}: {d}" for d in named]
            out += [f"{kind}: {d}" for d in encoding_diffs(a, b, zarr=kind == "zarr")]
    return out


def _attr_diffs(what, x: dict, y: dict) -> list:
    return [f"{what}attribute {k}: {x.get(k)!r} != {y.get(k)!r}" for k in sorted(set(x) | set(y), key=str)
            if k not in x or k not in y or not _same(x[k], y[k])]


def dataset_diffs(a, b) -> list:
    """What assert_identical found, named: attributes, variables, dimensions, values."""
    out = _attr_diffs("global ", a.attrs, b.attrs)
    for name in sorted(set(a.variables) | set(b.variables), key=str):
        if name not in b.variables or name not in a.variables:
            out.append(f"{name}: {'missing in the copy' if name in a.variables else 'not in the input'}")
            continue
        va, vb = a.variables[name], b.variables[name]
        if va.dims != vb.dims:
            out.append(f"{name}: dimensions {va.dims} != {vb.dims}")
        elif not va.equals(vb):
            out.append(f"{name}: values differ ({va.dtype} {vb.dtype})")
        out += _attr_diffs(f"{name}: ", va.attrs, vb.attrs)
    return out


class XarrayCannot(Exception):
    """xarray cannot open the input itself: there is nothing to compare the copies with."""


# ---------------------------------------------------------------- one file

def roundtrip(src: Path, work: Path, zarr_format=3, timeout=600) -> dict:
    """IN -> Zarr -> netCDF-4 with climio rechunk --verify, then the xarray comparison."""
    zarr_path, back = work / (src.stem + ".zarr"), work / (src.stem + ".back.nc")
    rec = {"file": str(src), "bytes": src.stat().st_size}
    t0 = time.perf_counter()
    for leg, (a, b, extra) in enumerate(((src, zarr_path, ["--zarr-format", str(zarr_format)]), (zarr_path, back, []))):
        res = subprocess.run([CLIMIO, "rechunk", str(a), str(b), "--verify", "--force", *extra],
                             capture_output=True, text=True, timeout=timeout)
        if res.returncode != 0:
            line = (res.stderr.strip().splitlines() or ["no message"])[-1]
            rec.update(status="refused" if "Traceback" not in res.stderr else "crashed",
                       leg=["to zarr", "back to netcdf4"][leg], exit=res.returncode, why=line)
            return rec
    rec["convert_s"] = time.perf_counter() - t0
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            diffs = xarray_diffs(src, zarr_path, back)
        except XarrayCannot as exc:
            rec.update(status="xarray cannot open", why=str(exc).splitlines()[0])
            return rec
    real = [d for d in diffs if LAYOUT not in d]
    status = "differs" if real else "identical, layout differs" if diffs else "identical"
    rec.update(status=status, why=(real or diffs or [""])[0], diffs=diffs[:10])
    return rec


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter, epilog=__doc__)
    ap.add_argument("--corpus", help="a directory of netCDF files (default: NCL's data, fetched if needed)")
    ap.add_argument("--limit", type=int, help="only the first N files")
    ap.add_argument("--zarr-format", type=int, default=3)
    ap.add_argument("--out", help="append one JSON line per file to this file")
    a = ap.parse_args()
    files = corpus_files(corpus_root(a.corpus))[:a.limit]
    print(f"{len(files)} netCDF files; climio rechunk IN OUT.zarr --verify, OUT.zarr BACK.nc --verify, "
          f"xarray identity (Zarr format {a.zarr_format})")
    recs = []
    work = Path(tempfile.mkdtemp(prefix="climio-corpus-"))
    try:
        for i, f in enumerate(files, 1):
            rec = roundtrip(f, work, a.zarr_format)
            recs.append(rec)
            print(f"[{i}/{len(files)}] {rec['status']:<18} {f.name}" + (f": {rec['why']}" if rec.get("why") else ""),
                  flush=True)
            for p in work.iterdir():
                shutil.rmtree(p) if p.is_dir() else p.unlink()
    finally:
        shutil.rmtree(work, ignore_errors=True)
    counts = Counter(r["status"] for r in recs)
    print(f"\n{len(recs)} files: " + ", ".join(f"{n} {s}" for s, n in counts.most_common()))
    for status in ("identical, layout differs", "refused", "crashed", "differs", "xarray cannot open"):
        why = Counter(r["why"].split(": ", 1)[-1][:140] for r in recs if r["status"] == status)
        for text, n in why.most_common():
            print(f"  {status} x{n}: {text}")
    if a.out:
        with open(a.out, "a") as fh:
            for r in recs:
                fh.write(json.dumps({"study": "rechunk-corpus", "time": time.time(), **r}) + "\n")
    return 0 if counts.get("crashed", 0) == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
