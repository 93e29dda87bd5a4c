"""Closed-form counts of a read pattern on a chunk shape, without simulating it (issue 34, item 5):
what the layout search screens its thousands of candidate shapes with before it simulates a few.

    estimate(layout, axes, stack, profile, spec, codec, tasks) -> seconds of one pass
    axes_of(reads) -> per-axis (start, count) pairs when the reads tile a grid, else None

Reads that tile a grid (climio.dataset.access.slice_starts: the Cartesian product of per-axis
(start, count) pairs, visited in C order) give, per axis a: r_a positions, v_a chunk indices
visited summed over the positions, u_a distinct chunk indices, t_a = v_a / r_a per read. The
chunks decoded follow from how much of the sweep the chunk cache holds: the outermost split k
whose working set (t_a per read on the axes before k, u_a on the axes from k) fits in the cache
decodes each of those chunks once per position of the outer axes (the outermost k with
prod(t_a, a <= k) x prod(u_a, a > k) chunks <= the cache's entries and slots):

    decodes = prod(v_a, a < k) x prod(u_a, a >= k)        (no such k: every visit decodes)

less the share of that working set whose hash slots collide (HDF5's hash, which evicts them).

Each decoded chunk is one storage request of its stored bytes (the first fetch of a chunk cold,
later ones from the page cache); a chunk set read in file order streams through the kernel's
readahead in windows. The time is the model's own formula (model.predict on these counts), so
an estimate ranks shapes as the simulation does wherever the cache behaves as an ideal one; HDF5's
hash collisions and w0 pruning are what the simulated stage of the search adds.
"""

import math

import numpy as np

from climio.dataset import layout as geometry
from climio.dataset.layout import Layout
from . import predict as model


def axes_of(reads) -> list:
    """[[(start, count)] per axis] when `reads` are the C-order Cartesian product of their per-axis
    pairs (each read once), else None."""
    if not reads:
        return None
    nd = len(reads[0][0])
    axes = []
    for a in range(nd):
        seen = {}
        for s, c in reads:
            seen.setdefault((int(s[a]), int(c[a])), None)
        axes.append(list(seen))
    if math.prod(len(p) for p in axes) != len(reads):
        return None
    # C order: the last axis changes fastest (checked on the first reads, enough for slice_starts)
    if len(reads) > 1 and nd > 1 and len(axes[-1]) > 1 and int(reads[1][0][-1]) == int(reads[0][0][-1]):
        return None
    return axes


def _axis(pairs, c, memo=None) -> tuple:
    """(positions, chunk visits, distinct chunks) of one axis's (start, count) pairs on chunks of c;
    `memo` (a dict per axis) keeps it per chunk length: candidates share few lengths per axis."""
    if memo is not None:
        if c not in memo:
            memo[c] = _axis(pairs, c)
        return memo[c]
    visits, distinct = 0, set()
    for s, n in pairs:
        lo, hi = s // c, (s + n - 1) // c
        visits += hi - lo + 1
        distinct.update(range(lo, hi + 1))
    return len(pairs), visits, len(distinct)


def _indices(pairs, c, memo=None):
    """The distinct chunk indices the (start, count) pairs of one axis touch on chunks of c, kept in
    `memo` (the axis's dict): candidates share few lengths per axis."""
    key = ("indices", c, len(pairs))
    if memo is not None and key in memo:
        return memo[key]
    out = np.unique(np.concatenate([np.arange(s // c, (s + n - 1) // c + 1) for s, n in pairs])).astype(np.int64)
    if memo is not None:
        memo[key] = out
    return out


def _colliding(layout, axes, k, nslots, memo=None) -> float:
    """The share of the working set (the chunks of the first read's on axes < k, every chunk
    touched on the others) whose HDF5 hash slot another chunk of the set shares: those evict each
    other every sweep (chunk_cache.ChunkCache.hash; e.g. a time series of 457 chunks that hash to
    125 of 1,000 slots decodes every chunk on every read)."""
    grid = geometry.chunk_grid(layout.shape, layout.chunks)
    idx = [_indices(p[:1] if a <= k else p, c, memo[a] if memo else None)
           for a, (p, c) in enumerate(zip(axes, layout.chunks))]
    if len(grid) == 1:
        val = idx[0]
    else:
        bits = [(1 if g <= 1 else 1 << (int(g) - 1).bit_length()).bit_length() - 1 for g in grid]
        val = idx[0]
        for u in range(1, len(grid)):
            val = np.bitwise_xor(np.left_shift(val[..., None], bits[u]), idx[u][(None,) * val.ndim])
    slots = np.asarray(val).ravel() % nslots
    if slots.size <= 1:
        return 0.0
    n = np.bincount(slots, minlength=nslots)
    return float(np.count_nonzero(n[slots] > 1)) / slots.size


def counts_of(layout: Layout, axes, spec, profile, cache_per_read=False, memo=None) -> model.Counts:
    """Counts of the reads whose per-axis pairs are `axes` on `layout` (chunked or contiguous);
    `memo`: a list of one dict per axis, shared by the calls for one pattern."""
    shape, isz = layout.shape, layout.itemsize
    key = ("pattern", isz)
    if memo is None or key not in memo[0]:
        got = (math.prod(len(p) for p in axes), math.prod(sum(n for _, n in p) for p in axes) * isz)
        if memo is None:
            memo = [{} for _ in axes]
        memo[0][key] = got
    nreads, wanted = memo[0][key]
    first = tuple(p[0][0] for p in axes), tuple(p[0][1] for p in axes)
    cnt = model.Counts(reads=nreads, reads_simulated=nreads, calls=nreads, bytes_wanted=wanted)
    cnt.pieces = nreads * geometry.contiguous_runs(shape, layout.chunks, *first)
    page, ra = profile.page_bytes, max(int(profile.readahead_bytes), profile.page_bytes)
    if layout.chunks is None:
        return _contiguous(cnt, layout, axes, profile)
    per = [_axis(p, c, memo[a] if memo else None) for a, (p, c) in enumerate(zip(axes, layout.chunks))]
    visits = math.prod(v for _, v, _ in per)
    distinct = math.prod(u for _, _, u in per)
    cbytes = layout.chunk_nbytes
    stored = (max(1, round(layout.stored * cbytes / max(layout.allocated_bytes, 1)))
              if layout.compressed and layout.stored else cbytes)
    entries = min(spec.nbytes // cbytes, spec.nslots) if cbytes <= spec.nbytes and spec.nslots else 0
    decodes, k = visits, len(per)
    if not cache_per_read:
        for k in range(len(per)):
            # reuse along axis k (and every inner one) when one sweep of the inner axes at one
            # position of k fits: the chunks of one read on axes <= k, all touched on the others
            ws = math.prod(v / r for r, v, _ in per[:k + 1]) * math.prod(u for _, _, u in per[k + 1:])
            if ws <= entries:
                ideal = math.prod(v for _, v, _ in per[:k]) * math.prod(u for _, _, u in per[k:])
                shared = _colliding(layout, axes, k, spec.nslots, memo)
                decodes = shared * visits + (1.0 - shared) * ideal
                break
        else:
            k = len(per)
    per_read = visits / nreads
    cnt.chunks_visited, cnt.chunk_cache_hits = visits, visits - decodes
    cnt.max_touched_bytes = int(math.ceil(per_read)) * cbytes
    cnt.partial_chunks = visits if wanted < visits * cbytes else 0
    if layout.compressed:
        cnt.decodes, cnt.bytes_decoded, cnt.bytes_stored_decoded = decodes, decodes * cbytes, decodes * stored
    elif not entries:    # uncompressed, too large for the cache: only the bytes wanted, read directly
        stored = max(page, wanted / max(visits, 1))
        decodes = visits
    cold = min(decodes, distinct)
    in_order = k == 0 or all(r == 1 for r, _, _ in per[:k])   # one sweep over the chunk grid: file order
    if in_order and stored < ra:
        n = cold * stored / ra
        cnt.requests = {("sequential", ra): n}
    else:
        cnt.requests = {("sequential" if in_order else "strided", stored): cold}
    if decodes > cold:
        cnt.requests[("warm", stored)] = decodes - cold
    return cnt


def _contiguous(cnt, layout, axes, profile) -> model.Counts:
    """Runs of a contiguous variable through the 64 KiB sieve; the first fetch of a byte cold."""
    runs = cnt.pieces
    run_bytes = cnt.bytes_wanted / max(runs, 1)
    sieve, ra = profile.sieve_bytes, max(int(profile.readahead_bytes), profile.page_bytes)
    if run_bytes >= sieve:
        n, size = runs, run_bytes
    else:
        n, size = runs, sieve                        # one sieve read per run (runs further apart than the sieve)
        last = max((i for i, p in enumerate(axes) if sum(c for _, c in p) != layout.shape[i]), default=-1)
        stride = math.prod(layout.shape[last:]) * layout.itemsize if last >= 0 else layout.nbytes
        if stride < sieve:
            n = max(1.0, cnt.bytes_wanted / sieve)   # the sieve covers several runs
    total = n * size
    cold = min(total, layout.nbytes)
    seq = runs <= cnt.calls or run_bytes >= sieve
    cnt.requests = ({("sequential", ra): cold / ra} if seq and size < ra else
                    {("sequential" if seq else "strided", size): cold / size})
    if total > cold:
        cnt.requests[("warm", size)] = (total - cold) / size
    return cnt


def estimate(layout: Layout, axes, stack, profile, spec, codec="", tasks=1, cache_per_read=False, memo=None) -> float:
    """Predicted seconds of one pass of the reads `axes` on `layout` (model.predict on counts_of)."""
    cnt = counts_of(layout, axes, spec, profile, cache_per_read, memo)
    return model.predict(layout, [], stack, profile, tasks=tasks, codec=codec if layout.compressed else "",
                         chunk_cache=spec, counts=cnt).seconds
