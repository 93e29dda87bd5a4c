"""One generic worker: one Python stack's series in its own process (the Python twin of the C probes).

    python -m climio.measure.worker --study NAME --stack numpy --file F --buffers 512,4096 ...     byte ranges
    python -m climio.measure.worker --study NAME --stack h5py --file F --var ta --slices S ...     hyperslabs

It takes the probes' options (csrc/README.md): with --buffers those of climio-probe-posix/-netcdf
(byte ranges of a raw file or a 1-D variable, patterns x buffer sizes), with --slices those of
climio-probe-netcdf-slab (hyperslabs of a variable). It builds one `Series` per configuration and
runs it with `run_series` (budget policy "dnf" for byte ranges, "sample" for hyperslabs, as series.h
says), and prints the probes' records on stdout, under the study name --study gives, plus what the
Python loop adds: metrics.open_s, metrics.storage_needed_bytes and cache.effective / cache.storage_share.

What a cold repetition must fetch from storage (`storage_needed_bytes`):
  byte ranges  the distinct bytes of the requests done;
  hyperslabs   the stored bytes of the distinct chunks the hyperslabs done touch (stored size of
               the variable / number of chunks, per chunk), or for a contiguous variable the
               distinct bytes wanted.
"""

import argparse
import json
import math
import os
import sys

import numpy as np

from climio.dataset import layout
from climio.base.errors import InputError
from climio.dataset.access import PATTERNS, plan
from climio.dataset.description import stored_bytes
from climio.dataset.options import parse_cache_spec
from climio.measure.stacks import ITEMSIZE, STACKS, file_kind
from .series import Marker, Series, StreamChecksum, distinct_bytes, run_series

PROG = "climio-worker"
# Contiguous variables up to this many elements get an exact distinct-bytes count from a mask.
MASK_LIMIT = 1 << 26


class InputProblem(Exception):
    """Bad input: one line on stderr, exit status 2, before any record."""


def parse_args(argv):
    ap = argparse.ArgumentParser(prog=PROG)
    ap.add_argument("--study", required=True, help="the records' study name")
    ap.add_argument("--stack", "--layer", dest="stack", required=True, choices=sorted(STACKS))
    ap.add_argument("--file", required=True)
    ap.add_argument("--var", default=None, help="variable (byte ranges of a 1-D variable: default data)")
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--cache", choices=("cold", "warm"), default="cold")
    ap.add_argument("--budget", type=float, default=60.0)
    ap.add_argument("--verify", action="store_true")
    ap.add_argument("--platform-id", default="")
    # byte ranges (climio-probe-posix / climio-probe-netcdf)
    ap.add_argument("--patterns", default=",".join(PATTERNS))
    ap.add_argument("--buffers")
    ap.add_argument("--random-count", type=int, default=100)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--max-ops", type=int, default=0)
    # hyperslabs (climio-probe-netcdf-slab)
    ap.add_argument("--slices")
    ap.add_argument("--chunk-cache", default="default")
    ap.add_argument("--label", action="append", default=[], metavar="KEY=VALUE")
    args = ap.parse_args(argv)
    if bool(args.buffers) == bool(args.slices):
        ap.error("give --buffers (byte ranges) or --slices (hyperslabs), one of them")
    if args.slices and not args.var:
        ap.error("--slices needs --var")
    if args.reps < 0:
        ap.error("--reps must be >= 0")
    return args


class _Opened:
    """What Series.open returns: the stack's reader with the study's request function bound."""

    def __init__(self, reader, read):
        self.reader = reader
        self.read = read

    def close(self):
        self.reader.close()


def _emitter(transform=None):
    def emit(rec):
        if transform:
            transform(rec)
        sys.stdout.write(json.dumps(rec) + "\n")
        sys.stdout.flush()
    return emit


# --- byte ranges ----------------------------------------------------------------------------------

def byte_ranges(args) -> int:
    var = args.var or "data"
    reader = STACKS[args.stack]()
    try:
        buffers = [int(b) for b in args.buffers.split(",")]
        patterns = args.patterns.split(",")
        bad = [p for p in patterns if p not in PATTERNS]
        if bad:
            raise InputProblem(f"unknown pattern {bad[0]!r}: use {', '.join(PATTERNS)}")
        if any(b <= 0 for b in buffers):
            raise InputProblem("buffer sizes must be positive")
        reader.open(args.file, var)  # learn the size and library version; also fail early
    except ValueError as exc:
        raise InputProblem(f"bad --buffers {args.buffers!r}: {exc}") from None
    except (OSError, KeyError, IndexError) as exc:
        raise InputProblem(f"cannot read {var!r} from {args.file}: {exc}") from None
    kind = file_kind(args.stack)
    fbytes = os.path.getsize(args.file) if kind == "bin" else math.prod(reader.shape) * reader.dtype.itemsize
    if kind == "nc" and (len(reader.shape) != 1 or reader.dtype.itemsize != ITEMSIZE):
        reader.close()
        raise InputProblem(f"variable {var!r} in {args.file} must be 1-D float64 for byte-range reads")
    base = {"layer": args.stack, "file": os.path.abspath(args.file), "file_bytes": fbytes,
            "random_count": args.random_count, "seed": args.seed, "api": reader.api, "odirect": False,
            "library": reader.library(), "max_ops": args.max_ops}
    if kind == "nc":
        base["variable"] = var
    reader.close()

    def open_():
        reader.open(args.file, var)
        return _Opened(reader, lambda r: reader.read_bytes(int(r[0]), int(r[1])))

    emit = _emitter()
    marker = Marker()
    try:
        for pattern in patterns:
            for buffer in buffers:
                reads = plan(pattern, fbytes, buffer, args.random_count, args.seed)
                if args.max_ops:
                    reads = reads[: args.max_ops]
                planned = int(reads[:, 1].sum())
                params = dict(base, pattern=pattern, buffer_bytes=buffer, planned_ops=len(reads),
                              planned_bytes=planned)
                run_series(Series(
                    study=args.study, path=args.file, params=params, requests=reads, open=open_,
                    needed_bytes=lambda n, reads=reads: distinct_bytes(reads[:n]), planned_bytes=planned,
                    reps=args.reps, cache=args.cache, budget_s=args.budget, budget_policy="dnf",
                    mark=(pattern, buffer), verify=args.verify, platform_id=args.platform_id,
                    checksum=StreamChecksum, marker=marker), emit)
    finally:
        marker.close()
    return 0


# --- hyperslabs -------------------------------------------------------------------------------------

def read_slices(path) -> list:
    """Hyperslabs of a slices file: one a line, n starts then n counts; `#` lines and blank lines skipped."""
    out = []
    with open(path) as fh:
        for lineno, line in enumerate(fh, 1):
            if not line.strip() or line.startswith("#"):
                continue
            try:
                nums = [int(x) for x in line.split()]
            except ValueError:
                raise InputProblem(f"{path}:{lineno}: not a list of integers") from None
            if len(nums) % 2 or not nums or min(nums) < 0:
                raise InputProblem(f"{path}:{lineno}: need n starts and n counts, non-negative")
            half = len(nums) // 2
            out.append((tuple(nums[:half]), tuple(nums[half:])))
    if not out:
        raise InputProblem(f"no hyperslabs in {path}")
    return out


def parse_labels(items, reserved) -> dict:
    out = {}
    for item in items:
        key, sep, value = item.partition("=")
        if not sep or not key or key in out or key in reserved:
            raise InputProblem(f"--label {item!r}: need KEY=VALUE with a new key")
        out[key] = value
    return out


def layout_of(path, var) -> dict:
    """The variable's Layout params as the slab probe writes them."""
    import netCDF4
    with netCDF4.Dataset(path) as ds:
        v = ds.variables[var]
        chunking = v.chunking()
        filters = v.filters() or {}
        return {"var_shape": list(v.shape), "dtype": v.dtype.str.lstrip("<>|="),
                "chunking": chunking if chunking in ("contiguous", "compact") else list(chunking),
                "deflate": int(filters.get("complevel") or 0) if filters.get("zlib") else 0,
                "shuffle": int(bool(filters.get("shuffle")))}


def chunk_needed_bytes(shape, chunks, slices, itemsize, storage_bytes):
    """`needed(n)`: the bytes a cold read of the first n hyperslabs must fetch from storage.

    Chunked: the distinct chunks they touch x stored bytes per chunk (stored size / number of
    chunks; exact for uncompressed data, an average for compressed). Contiguous: the distinct
    bytes wanted."""
    shape = tuple(shape)
    if chunks is not None:
        grid = layout.chunk_grid(shape, chunks)
        nchunks = math.prod(grid)
        per_chunk = (storage_bytes / nchunks if storage_bytes is not None and nchunks
                     else layout.chunk_bytes(chunks, itemsize))

        def needed(n):
            mask = np.zeros(grid, dtype=bool)
            for start, count in slices[:n]:
                if all(count):
                    mask[tuple(slice(s // c, (s + k - 1) // c + 1) for s, k, c in zip(start, count, chunks))] = True
            return int(round(int(mask.sum()) * per_chunk))
        return needed

    if math.prod(shape) <= MASK_LIMIT:
        def needed(n):
            mask = np.zeros(shape, dtype=bool)
            for start, count in slices[:n]:
                mask[tuple(slice(s, s + k) for s, k in zip(start, count))] = True
            return int(mask.sum()) * itemsize
        return needed

    def needed(n):  # large variables: hyperslabs of one plan tile the variable, so never overlap
        return sum(math.prod(count) for _, count in set(slices[:n])) * itemsize
    return needed


def hyperslabs(args) -> int:
    slices = read_slices(args.slices)
    cache_spec = parse_cache_spec(args.chunk_cache)
    reader = STACKS[args.stack]()
    if not reader.slabs:
        raise InputProblem(f"stack {args.stack} reads byte ranges of a raw file, not hyperslabs")
    try:
        lay = layout_of(args.file, args.var)
    except KeyError:
        raise InputProblem(f"no variable {args.var!r} in {args.file}") from None
    except OSError as exc:
        raise InputProblem(f"cannot open {args.file} as netCDF: {exc}") from None
    shape = lay["var_shape"]
    for start, count in slices:
        if len(start) != len(shape) or any(s + c > d for s, c, d in zip(start, count, shape)):
            raise InputProblem(f"hyperslab {list(start)}+{list(count)} outside {args.var!r} of shape {shape}")
    base = {"layer": args.stack, "file": os.path.abspath(args.file), "variable": args.var,
            "slices_total": len(slices), **lay, "library": reader.library()}
    base.update(parse_labels(args.label, set(base) | {"chunk_cache"}))
    itemsize = np.dtype(lay["dtype"]).itemsize
    planned = sum(math.prod(c) for _, c in slices) * itemsize
    chunks = lay["chunking"] if isinstance(lay["chunking"], list) else None
    needed = chunk_needed_bytes(shape, chunks, slices, itemsize,
                                stored_bytes(args.file, args.var) if chunks else None)

    def open_():
        reader.open(args.file, args.var, cache_spec)
        return _Opened(reader, lambda s: reader.read_slab(*s))

    def slices_read(rec):
        if "ops" in rec["metrics"]:
            rec["metrics"]["slices_read"] = rec["metrics"]["ops"]

    run_series(Series(
        study=args.study, path=args.file, params=base, requests=slices, open=open_, needed_bytes=needed,
        planned_bytes=planned, reps=args.reps, cache=args.cache, budget_s=args.budget, budget_policy="sample",
        mark=("slab", 0), verify=args.verify, platform_id=args.platform_id, checksum=StreamChecksum,
        extra_params=lambda opened: {"chunk_cache": opened.reader.chunk_cache_info()}), _emitter(slices_read))
    return 0


def main(argv=None) -> int:
    args = parse_args(argv if argv is not None else sys.argv[1:])
    try:
        return hyperslabs(args) if args.slices else byte_ranges(args)
    except (InputProblem, InputError) as exc:
        print(f"{PROG}: error: {exc}", file=sys.stderr)
        return 2
    except (OSError, KeyError) as exc:
        print(f"{PROG}: error: {args.stack} cannot read {args.file}: {exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
