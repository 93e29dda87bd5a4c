"""The vocabulary of trace events, below the analyses that use it: request-size buckets, what a
function does (read, write, collective, truncate), the report's definitions, per-rank imbalance and
the nesting of calls (parents, ancestor). Apart from climio.trace.analysis so that the facts built
from an analysis (event_facts) import these without importing the analysis back."""

import re

import numpy as np

from ..rules.facts import LIBRARY_LAYERS, OTHER, READ, TRACE_LAYER_ORDER, WRITE  # noqa: F401  (LIBRARY_LAYERS, TRACE_LAYER_ORDER: event_facts takes them from here)
from climio.present.stats import rank_spread as imbalance  # per-rank spread; imbalance = max / mean


# Darshan's request-size buckets (binary units, upper edge inclusive: 100 B lands in 0-100).
SIZE_EDGES = (100, 1 << 10, 10 << 10, 100 << 10, 1 << 20, 4 << 20, 10 << 20, 100 << 20, 1 << 30)
SIZE_BUCKETS = ("0-100", "100-1K", "1K-10K", "10K-100K", "100K-1M", "1M-4M", "4M-10M", "10M-100M",
                "100M-1G", "1G+")
# A stream is consecutive / strided / sequential when at least this share of its transitions are.
ACCESS_SHARE = 0.9
MAIN_PER_LAYER = 2       # functions per layer in the per-rank table (the largest by inclusive time)
TOP_SIZES = 4            # most common request sizes listed per file, as Darshan's ACCESS1..4
TIMELINE_MAX = 5000      # timeline points kept per file (evenly sampled beyond)
NETCDF_READS_SHOWN = 1000

DEFINITIONS = {
    "inclusive time": "wall time from entry to return of a call, including the traced calls it made "
                      "(an nc_get_vara's inclusive time contains its MPI-IO and POSIX calls). A layer's "
                      "inclusive time sums its outermost calls only, so nothing is counted twice.",
    "exclusive time": "inclusive time minus the inclusive time of the call's traced children: the time "
                      "spent in that call itself (in the library, or in the kernel for POSIX calls). "
                      "Exclusive times of all calls add up to the traced I/O time.",
    "traced I/O time": "the sum over processes of the inclusive time of outermost traced calls.",
    "process time": "the sum over processes of their wall time (tracer start, from .done.json t0_ns, to "
                    "the end of the run from meta.json, or to the process's last event).",
    "share": "time / process time: the fraction of the processes' wall time spent in the call.",
    "max rank time": "the largest total time one rank (or process) spent in the function or call path.",
    "consecutive": "the access starts where the previous one of the same process on the same file and "
                   "layer ended (offset == previous offset + previous size).",
    "sequential": "the access starts at or after the previous one's end (consecutive included).",
    "stride": "offset minus the previous access's offset.",
    "classification": f"per process and file: consecutive if >= {ACCESS_SHARE:.0%} of its transitions are "
                      f"consecutive; else strided (stride K) if >= {ACCESS_SHARE:.0%} have the same stride "
                      f"K != 0; repeated if that stride is 0; else sequential if >= {ACCESS_SHARE:.0%} "
                      "are sequential; else random; single for one access. A file's class is the one "
                      "holding most of its accesses.",
    "size buckets": "Darshan's request-size histogram: 0-100 B, 100 B-1 KiB, 1-10 KiB, 10-100 KiB, "
                    "100 KiB-1 MiB, 1-4 MiB, 4-10 MiB, 10-100 MiB, 100 MiB-1 GiB, 1 GiB+ (upper edge "
                    "inclusive, binary units).",
    "bytes decoded": "bytes the library must read and decompress for a netCDF read: every chunk the "
                     "hyperslab touches in full (climio.dataset.layout.bytes_decoded), or the bytes requested "
                     "for a contiguous variable.",
    "decoded after cache": "bytes decoded, counting nothing for a read that needs only chunks of the "
                           "previous read of the same variable and process when the cache holds them (an estimate).",
    "cache fit": "whether the variable's chunk cache (cache_bytes) holds every chunk one read touches: "
                 "fits, does not fit, or chunk larger than cache (HDF5 then bypasses the cache).",
    "imbalance": "over the ranks that call the function: max / mean (1 = balanced); idle share = "
                 "(max - mean) / max, the share of the slowest rank's time a perfect balance would save.",
}

_READ_RE = re.compile(r"read(?!dir|link|ahead)|^nc_get_var|^ncmpi_get_var", re.I)
_WRITE_RE = re.compile(r"write|^nc_put_var|^ncmpi_put_var", re.I)
_COLLECTIVE_RE = re.compile(r"^MPI_File_.*(_all|_ordered)(_begin|_end)?$")
TRUNCATE_FUNCS = ("MPI_File_set_size", "ftruncate", "ftruncate64", "truncate", "truncate64")


def op_kind(func: str) -> int:
    """READ, WRITE or OTHER from a function name (pread64, MPI_File_write_at_all, nc_get_vara_float)."""
    if _READ_RE.search(func):
        return READ
    if _WRITE_RE.search(func):
        return WRITE
    return OTHER


def is_collective(func: str) -> bool:
    return bool(_COLLECTIVE_RE.match(func))


def size_bucket(sizes) -> np.ndarray:
    """Index into SIZE_BUCKETS of each size (Darshan's upper-inclusive edges)."""
    return np.searchsorted(np.asarray(SIZE_EDGES), np.asarray(sizes), side="left")


def _s(ns) -> float:
    return float(ns) / 1e9


# --- nesting ----------------------------------------------------------------------------------------

def parents(proc, tid, depth, t0, t1) -> np.ndarray:
    """Index of each event's parent (-1 for depth 0 or a parent the trace lacks). Per process and
    thread, calls of one depth do not overlap, so the parent of a call at depth d is the call at
    depth d - 1 that started last at or before it, if that one also ends at or after it."""
    parent = np.full(len(t0), -1, dtype=np.int64)
    if not len(t0):
        return parent
    order = np.lexsort((t0, depth, tid, proc))
    p, t = proc[order], tid[order]
    cuts = np.flatnonzero((p[1:] != p[:-1]) | (t[1:] != t[:-1])) + 1
    for g in np.split(order, cuts):
        d = depth[g].astype(np.int64)
        levels, first = np.unique(d, return_index=True)
        spans = {int(lv): (int(a), int(b)) for lv, a, b in zip(levels, first, [*first[1:], len(g)])}
        for lv, (a, b) in spans.items():
            if lv == 0 or lv - 1 not in spans:
                continue
            ch, pa = g[a:b], g[slice(*spans[lv - 1])]
            pos = np.searchsorted(t0[pa], t0[ch], side="right") - 1
            cand = pa[np.maximum(pos, 0)]
            ok = (pos >= 0) & (t1[cand] >= t1[ch])
            parent[ch[ok]] = cand[ok]
    return parent


def ancestor(parent, mask, outermost=False) -> np.ndarray:
    """For each event, its nearest (or outermost) ancestor where `mask` holds; -1 if none."""
    res = np.full(len(parent), -1, dtype=np.int64)
    cur = parent.copy()
    while True:
        alive = cur >= 0
        if not alive.any():
            return res
        safe = np.where(alive, cur, 0)
        hit = alive & mask[safe]
        if not outermost:
            hit &= res < 0
        res[hit] = cur[hit]
        cur = np.where(alive, parent[safe], -1)


# --- the analysis -------------------------------------------------------------------------------------
