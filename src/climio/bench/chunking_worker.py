"""One Python layer of the chunking study in its own process (twin of climio-probe-netcdf-slab).

    python -m climio.bench.chunking_worker --layer netcdf4-python --file F --var ta --slices S ...

Reads the hyperslabs listed in S (one per line: n starts then n counts) from an N-D variable,
cold, repeatedly, with the chunk cache as asked, and prints one record per repetition in the
probe's schema (csrc/README.md).
"""

import argparse
import json
import os
import sys

import numpy as np

from .. import cache
from ..measure import Marker, timed_requests
from ..patterns import StreamChecksum
from ..records import make_record
from .chunking import STUDY
from .read_stack_layers import H5py, NetCDF4Python

# Below this share of the slices (and fewer than MIN_SAMPLE of them) a budget-cut run says
# nothing about the rate but an upper bound: recorded as did-not-finish.
MIN_SAMPLE, MIN_SHARE = 3, 0.01


def read_slices(path) -> list:
    out = []
    with open(path) as fh:
        for line in fh:
            if line.strip() and not line.startswith("#"):
                nums = [int(x) for x in line.split()]
                half = len(nums) // 2
                out.append((tuple(nums[:half]), tuple(nums[half:])))
    return out


def parse_cache_spec(text):
    """None for the library default, else (bytes, nelems, preemption)."""
    if text == "default":
        return None
    size, nelems, preemption = text.split(",")
    return int(size), int(nelems), float(preemption)


class _Hyperslabs:
    """Layers of this study read an N-D start/count, not a byte range."""

    def read(self, start, count):
        return self.var[tuple(slice(s, s + c) for s, c in zip(start, count))]


class NetCDF4Layer(_Hyperslabs, NetCDF4Python):
    """netCDF4-python reading hyperslabs, with the variable's chunk cache set as asked."""

    def open(self, path, var, cache_spec):
        super().open(path, var)
        if cache_spec is not None:
            self.var.set_var_chunk_cache(*cache_spec)
        size, nelems, preemption = self.var.get_var_chunk_cache()
        self.chunk_cache = {"size": size, "nelems": nelems, "preemption": preemption}


class H5pyLayer(_Hyperslabs, H5py):
    """h5py reading hyperslabs, with the file's raw-data chunk cache set as asked."""

    def open(self, path, var, cache_spec):
        import hdf5plugin  # noqa: F401  (registers zstd and other filters netCDF-C may have written)
        kw = {} if cache_spec is None else {"rdcc_nbytes": cache_spec[0], "rdcc_nslots": cache_spec[1],
                                            "rdcc_w0": cache_spec[2]}
        super().open(path, var, **kw)
        _, nslots, nbytes, w0 = self.fh.id.get_access_plist().get_cache()
        self.chunk_cache = {"size": nbytes, "nelems": nslots, "preemption": w0}


LAYERS = {"netcdf4-python": NetCDF4Layer, "h5py": H5pyLayer}


def layout_of(path, var) -> dict:
    import netCDF4
    with netCDF4.Dataset(path) as ds:
        v = ds.variables[var]
        chunking = v.chunking()
        filters = v.filters() or {}
        return {"var_shape": list(v.shape), "dtype": v.dtype.str.lstrip("<>|="),
                "chunking": chunking if chunking == "contiguous" else list(chunking),
                "deflate": int(filters.get("complevel") or 0) if filters.get("zlib") else 0,
                "shuffle": int(bool(filters.get("shuffle")))}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="chunking_worker")
    ap.add_argument("--layer", required=True, choices=sorted(LAYERS))
    ap.add_argument("--file", required=True)
    ap.add_argument("--var", required=True)
    ap.add_argument("--slices", required=True)
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--cache", choices=("cold", "warm"), default="cold")
    ap.add_argument("--chunk-cache", default="default")
    ap.add_argument("--budget", type=float, default=60.0)
    ap.add_argument("--verify", action="store_true")
    ap.add_argument("--platform-id", default="")
    args = ap.parse_args(argv)

    try:
        slices = read_slices(args.slices)
        cache_spec = parse_cache_spec(args.chunk_cache)
        layer = LAYERS[args.layer]()
        base = {"layer": args.layer, "file": os.path.abspath(args.file), "variable": args.var,
                "slices_total": len(slices), **layout_of(args.file, args.var), "library": layer.library()}
    except (OSError, KeyError, ValueError) as exc:
        print(f"chunking_worker: error: {exc}", file=sys.stderr)
        return 2
    itemsize = np.dtype(base["dtype"]).itemsize
    planned = sum(int(np.prod(c)) for _, c in slices) * itemsize
    marker = Marker()
    for rep in range(args.reps):
        state = cache.prepare([args.file], args.cache)
        marker.mark("open", 0, rep)
        layer.open(args.file, args.var, cache_spec)
        marker.mark("slab", 0, rep)
        summer = StreamChecksum() if args.verify else None
        t, nbytes, ops = timed_requests(slices, lambda s: layer.read(*s), args.budget, summer)
        layer.close()
        metrics = {"bytes": nbytes, "ops": ops, "slices_read": ops, "sampled": ops < len(slices), **t.metrics()}
        if summer is not None:
            metrics["checksum"] = summer.hexdigest()
        params = dict(base, chunk_cache=layer.chunk_cache)
        status = "ok"
        if ops < len(slices) and ops < MIN_SAMPLE and ops < MIN_SHARE * len(slices):
            status = "dnf"
            metrics.update(planned_bytes=planned, budget_s=args.budget, rate_bound_MBps=nbytes / args.budget / 1e6)
        print(json.dumps(make_record(STUDY, params, metrics, state, rep, status, args.platform_id)), flush=True)
        if status == "dnf":
            break
    marker.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
