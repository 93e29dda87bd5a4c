"""How a latitude task reads its rows: pure geometry, no I/O.

Two plans:

``latitude``  the thesis's (appendix C.2): one (time, longitude) slab per latitude row and level.
              Each slab is one library call, so a row of chunks is read (and decoded) again for
              every latitude it holds unless the chunk cache keeps it, and every strided piece of a
              contiguous variable costs one HDF5 sieve-buffer fill (64 KiB, not settable through
              netCDF-C) however small the piece.
``runs``      climio's default: one call per run of adjacent rows (a Wheeler-Kiladis task holds
              two runs, its southern rows and their northern mirrors), and the variable's chunk
              cache sized to hold every chunk the task touches, so each chunk is read and decoded
              at most once per task. A contiguous netCDF-4 variable is read with one h5py call
              for all the runs, its sieve buffer sized for where the bytes are
              (:mod:`climio.stsa.direct`).

Measured on a 2920 x 64 x 144 float64 variable, 16 tasks read one after another (netCDF4-python,
page cache cold at the start): the netCDF library's default chunks [1460, 1, 32, 72] cost 1.1-1.3 s
CPU with ``latitude`` (256 reads of a 26.9 MB chunk for 8 chunks: the 64 MiB default cache holds two
of the four chunks a slab touches) and 0.3-0.5 s with ``runs``; contiguous 2.0-2.8 s (186,758 sieve
fills of 64 KiB for 186,880 pieces of 1152 B), 1.4 s with ``runs`` through netCDF-C, and 0.4 s cold
(0.2-0.3 s cached) through the h5py reader.
"""

from __future__ import annotations

import math

READ_PLANS = ("runs", "latitude")
DEFAULT_READ_PLAN = "runs"
CHUNK_CACHE_CAP = 1 << 30          # bytes: never more than this per worker for one variable
CHUNK_CACHE_SLOTS_MIN = 1009       # HDF5's hash slots; a prime, as HDF5 advises


def row_runs(rows) -> list:
    """Ascending row indices -> [(start, stop)] half-open runs of adjacent rows."""
    out = []
    for r in sorted(int(x) for x in rows):
        if out and r == out[-1][1]:
            out[-1][1] = r + 1
        elif out and r < out[-1][1]:
            raise ValueError(f"row {r} repeated")
        else:
            out.append([r, r + 1])
    return [tuple(x) for x in out]


def chunks_touched(runs, dims, shape, chunks, lat_dim, kept_dims) -> int:
    """Upper bound on the chunks one task's read touches.

    ``dims``/``shape``/``chunks``: the variable as stored in the file; ``lat_dim``: its latitude
    dimension; ``kept_dims``: the dimensions the task still spans (a dimension selected away, such
    as a chosen level, touches one chunk). A run of ``n`` rows spans at most 1 + ceil((n - 1) / c)
    chunks of ``c`` rows (it may start inside one), and never more than the dimension holds. The bound does
    not need to know how the analysis reordered or cut the latitudes.
    """
    n = 1
    for d, size, c in zip(dims, shape, chunks):
        c = max(1, int(c))
        along = math.ceil(int(size) / c)
        if d == lat_dim:
            n *= min(along, sum(1 + math.ceil((b - a - 1) / c) for a, b in runs))
        elif d in kept_dims:
            n *= along
    return n


def chunk_cache_bytes(runs, dims, shape, chunks, itemsize, lat_dim, kept_dims, cap=CHUNK_CACHE_CAP):
    """(bytes, slots) of a chunk cache holding every chunk the task touches, at most ``cap``;
    None for a contiguous variable (no chunks, nothing to cache)."""
    if not chunks:
        return None
    n = chunks_touched(runs, dims, shape, chunks, lat_dim, kept_dims)
    per_chunk = int(itemsize) * math.prod(int(c) for c in chunks)
    size = min(int(cap), n * per_chunk)
    # HDF5 advises ~100 slots per chunk that fits; enough slots keep the hash from evicting early
    slots = max(CHUNK_CACHE_SLOTS_MIN, 10 * n) | 1
    return size, slots
