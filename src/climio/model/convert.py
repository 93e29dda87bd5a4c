"""The conversion planner: how to convert ONE variable to a new layout within a memory budget, and
what it costs on this platform (`climio rechunk` runs these plans; the advisor's one-off "rechunk
first" cost is the same plan's predicted time: `conversion_plan`).

Pure functions: no I/O, no HDF5 (the two defaults read the machine's memory and cores). The executor reads the array in *blocks* (hyperslabs tiling the
array in C order, see `climio.dataset.layout.iter_blocks`), assembles each block uncompressed in memory,
cuts it into target chunks, encodes them and writes them. Every block shape the planner returns
is, on every axis, a multiple of the target chunk extent or the full dimension, so every target
chunk lies in exactly one block and is encoded and written exactly once. A contiguous side imposes no alignment
(extent 1): a contiguous target is written by hyperslab, a contiguous source read by hyperslab.

Memory model (the executor obeys it; interpreter and library overhead are not counted)
  block   = prod(block shape) * itemsize, the block assembled uncompressed;
  scratch = 2 * source chunk bytes per in-flight block when the source is compressed (the raw
            compressed chunk and the decoded chunk), else 0;
  w       = min(workers, n_blocks): a pass never has more blocks in flight than it has blocks;
            the executor runs the pass with `Pass.workers` = w workers, in-process when w == 1;
  peak    = 2*block + scratch                      if w == 1 (the block + its encoded chunks)
          = w*(3*block + scratch) + w*block        if w > 1  (each worker: block, encoded chunks,
            pickled result; the parent: up to w encoded results waiting to be written);
  own     = w*(block + scratch + 3*chunk)          when each worker (or the command itself, w == 1)
            writes its block's output itself and hands nothing back: chunk by chunk into a local
            Zarr store (`own_writes`; chunk = one target chunk: its padded copy, its shuffled
            byte planes and its encoded bytes, freed before the next) or piece by piece into a
            two-pass plan's tiled intermediate file (chunk = 0, and the block counts the one
            piece it gathers for a write beside it: min(block, INTERMEDIATE_PIECE_BYTES)). Measured (bench/rechunk_worker_rss.py):
            a worker's peak RSS above its idle RSS is the block plus a few chunks, not 4 blocks.

Strategies
  single-pass  blocks of lcm(source chunk, target chunk) per axis (clipped): every source chunk
               decoded once, every target chunk written once ("whole-chunks");
  strided      uncompressed source, smaller blocks that cut source chunks: same bytes, more and
               shorter read requests;
  redecode     compressed source, smaller blocks: a source chunk is decoded once per block that
               touches it;
  two-pass     compressed source: whole source chunks -> uncompressed intermediate file -> target
               ("to-intermediate" whole-chunks, "from-intermediate" strided). The intermediate is
               in C order (contiguous: long writes, the second pass reading its blocks row by row)
               or laid out in tiles that are the second pass's blocks (an uncompressed chunked
               layout, chunks = that block; rechunking.tiles: each block read with one request,
               the first pass writing each tile its block touches as a piece gathered in at most
               INTERMEDIATE_PIECE_BYTES), whichever costs less: narrow second-pass blocks read
               from C order are many short reads (1.97 million of 512 bytes for a
               [1024,5,192,256] field into [1024,1,24,32] chunks at 64 MiB per worker).

Cost model per pass (climio.model.rates.Rates, from the platform's profile or the built-in
defaults): bytes_read/read_Bps + read_ops*op_s + (bytes_decoded/decode_Bps +
bytes_encoded/encode_Bps)/S(w)*R + bytes_written/write_Bps + write_ops*op_s + n_blocks*task cost (task_s in-process, pool_task_s
with workers: a block's own Python), where S(w) is the
profile's measured CPU speed-up with w processes (w when not calibrated: a shared or
oversubscribed machine gains less), R >= 1 the workers left idle by the last round of blocks and
by blocks of unequal size (rounds_factor), and the second pass of a two-pass plan reads the intermediate
file it has just written at the page cache's rates when it fits in the memory available.

Counts over all blocks (chunks decoded, read and write requests) are computed in closed form per
axis (floor sums), never by enumerating blocks, so a plan for a variable of millions of blocks is
instant. Chunk extents larger than the dimension (unlimited dimensions) are accepted; HDF5
allocates and decodes such chunks whole.
"""

import dataclasses
import functools
import math
from dataclasses import dataclass, fields

from climio.base.errors import InputError
from climio.dataset.layout import Layout, format_chunks  # noqa: F401  (Layout: the planner's noun)
from climio.dataset.layout import _checked_int as _int
from climio.base.units import format_size
from .rates import Rates

# The most a worker gathers for one write into a two-pass plan's tiled intermediate (rechunking.tiles)
INTERMEDIATE_PIECE_BYTES = 1 << 20

# A two-pass plan is taken over the best single-file plan only when predicted this much faster. Its
# intermediate costs more than the rates say: written into pages the kernel has to find (the
# calibrated write rate is of a 128 MiB file rewritten into the pages it freed: 4.7 GB/s; a new 1 GiB
# intermediate went at 0.6-2.4 GB/s on the 2-core VM, all of it system CPU), it needs its size in
# free disk, and what it leaves dirty is written back while the second pass runs. Measured: Zarr
# blosc-zstd [466,10,240,240] 1 GiB -> [T,1,1,X], 2 workers, --max-mem 128MiB, cold: two-pass
# predicted 3.89 s against re-decoding's 4.45 s (1.14x), measured 5.5-5.8 s against 3.8-4.0 s.
# bench/page_costs.py measures a machine's new-page cost (here 2.31 s of system CPU per GiB).
TWO_PASS_MARGIN = 1.25


PASS_NAMES = ("copy", "to-intermediate", "from-intermediate")
PASS_STRATEGIES = ("whole-chunks", "strided", "redecode")
PLAN_STRATEGIES = ("single-pass", "strided", "redecode", "two-pass")


# --- the nouns --------------------------------------------------------------------------------------

@dataclass(frozen=True)
class Pass:
    name: str                   # "copy" | "to-intermediate" | "from-intermediate"
    src: Layout
    dst: Layout
    block: tuple                # block shape, clipped to the shape
    n_blocks: int
    strategy: str               # "whole-chunks" | "strided" | "redecode"
    chunks_decoded: int         # source-chunk decodes in the pass (0 if the source is not compressed)
    max_decodes_per_chunk: int
    bytes_read: int
    bytes_decoded: int
    bytes_encoded: int
    bytes_written: int
    read_ops: int
    write_ops: int
    peak_mem: int
    predicted_s: float
    cache_bytes: int            # HDF5 chunk cache for the source variable in this pass
    workers: int = 1            # workers the pass runs with: min(requested, n_blocks); 1 = in-process
    own_writes: bool = False    # the workers write the pass's output themselves (peak_memory's `own`)

    def to_dict(self) -> dict:
        out = {}
        for f in fields(self):
            v = getattr(self, f.name)
            out[f.name] = v.to_dict() if isinstance(v, Layout) else list(v) if isinstance(v, tuple) else v
        return out

    def describe(self, number: int) -> list:
        block_bytes = math.prod(self.block) * self.src.itemsize
        dec = (f"decode {format_size(self.bytes_decoded)} ({self.chunks_decoded} chunk decodes, at most "
               f"{self.max_decodes_per_chunk} per chunk)" if self.src.compressed else "no decoding")
        return [
            f"pass {number} {self.name} ({self.strategy}): {self.src.label()} -> {self.dst.label()}, "
            f"{self.n_blocks} blocks of {format_chunks(self.block)} ({format_size(block_bytes)}), "
            f"{self.workers} worker{'s' if self.workers != 1 else ''}",
            f"  read {format_size(self.bytes_read)} in {self.read_ops} requests, {dec}, "
            f"encode {format_size(self.bytes_encoded)}, write {format_size(self.bytes_written)} "
            f"in {self.write_ops} requests",
            f"  peak memory {format_size(self.peak_mem)}, chunk cache {format_size(self.cache_bytes)}, "
            f"predicted {self.predicted_s:.2f} s",
        ]


@dataclass(frozen=True)
class Plan:
    strategy: str               # "single-pass" | "strided" | "redecode" | "two-pass"
    passes: tuple
    max_mem: int
    workers: int                # as requested; each pass says how many it uses
    start_s: float = 0.0        # the command's fixed cost (start, workers, output rename): Rates.start_s
    declined: str = ""          # a faster-predicted two-pass plan not taken (TWO_PASS_MARGIN), said in one line

    @property
    def peak_mem(self) -> int:
        return max((p.peak_mem for p in self.passes), default=0)

    @property
    def predicted_s(self) -> float:
        return self.start_s + sum(p.predicted_s for p in self.passes)

    @property
    def tmp_bytes(self) -> int:
        """Bytes of the intermediate file (two-pass only): its tiles, the edge ones allocated whole."""
        return self.passes[0].dst.allocated_bytes if self.strategy == "two-pass" else 0

    @property
    def target(self) -> Layout:
        return self.passes[-1].dst

    @property
    def padding_bytes(self) -> int:
        """What target chunk lengths that do not divide their dimensions add: bytes of the edge
        chunks beyond the array (stored as such uncompressed; compressed, the padding shrinks)."""
        return self.target.padding_bytes

    @property
    def padding_fraction(self) -> float:
        """padding_bytes / the variable's bytes (0.0 for an empty variable)."""
        n = self.target.nbytes
        return self.padding_bytes / n if n else 0.0

    def padding_line(self) -> str:
        """One line saying what the padding costs, "" when there is none."""
        if not self.padding_bytes:
            return ""
        t = self.target
        return (f"padding: target chunks {format_chunks(t.chunks)} do not divide {format_chunks(t.shape)}; "
                f"edge chunks add {format_size(self.padding_bytes)} ({self.padding_bytes} B, "
                f"{100 * self.padding_fraction:.1f} % of {format_size(t.nbytes)})"
                + (" before compression" if t.compressed else ""))

    def to_dict(self) -> dict:
        return {"strategy": self.strategy, "max_mem": self.max_mem, "workers": self.workers,
                "peak_mem": self.peak_mem, "predicted_s": self.predicted_s, "start_s": self.start_s,
                "tmp_bytes": self.tmp_bytes, "declined": self.declined,
                "padding_bytes": self.padding_bytes, "padding_fraction": self.padding_fraction,
                "passes": [p.to_dict() for p in self.passes]}

    def describe(self) -> list:
        n = len(self.passes)
        head = (f"{self.strategy}: {n} pass{'es' if n != 1 else ''}, peak memory {format_size(self.peak_mem)} "
                f"of {format_size(self.max_mem)} allowed, predicted {self.predicted_s:.2f} s")
        if self.start_s:
            head += f" (of which {self.start_s:.2f} s the command's start-up)"
        if self.tmp_bytes:
            head += f", temporary file {format_size(self.tmp_bytes)}"
        lines = [head]
        if self.declined:
            lines.append(self.declined)
        if self.padding_bytes:
            lines.append(self.padding_line())
        for i, p in enumerate(self.passes, 1):
            lines += p.describe(i)
        return lines


# --- public helpers ---------------------------------------------------------------------------------

def peak_memory(block_bytes: int, scratch_bytes: int, workers: int, own_chunk_bytes=None) -> int:
    """Peak bytes of a pass with `workers` blocks in flight (see the module docstring).
    `own_chunk_bytes`: None when the blocks' output goes back to the command to write (netCDF-4);
    else the bytes of one target chunk the worker encodes and writes itself (0: the block is
    written as it is)."""
    if own_chunk_bytes is not None:
        return max(1, workers) * (block_bytes + scratch_bytes + 3 * own_chunk_bytes)
    if workers <= 1:
        return 2 * block_bytes + scratch_bytes
    return workers * (3 * block_bytes + scratch_bytes) + workers * block_bytes


# --- per-axis closed forms --------------------------------------------------------------------------

def _floor_sum(n, m, a, b):
    """sum(floor((a*i + b) / m) for i in range(n)), n >= 0, m >= 1, a, b >= 0, in O(log) steps
    (Euclid-like reduction: take the integer parts of a/m and b/m out, then swap the roles of the
    axes of the lattice-point count)."""
    total = 0
    while n > 0:
        if a >= m:
            total += (a // m) * n * (n - 1) // 2
            a %= m
        if b >= m:
            total += (b // m) * n
            b %= m
        y = a * n + b
        if y < m:
            break
        n, b = divmod(y, m)
        m, a = a, m
    return total


@functools.lru_cache(maxsize=1 << 16)
def _axis(d, b, c):
    """Blocks of extent b against chunks of extent c along a dimension of length d > 0.

    (T, F): T = (block, chunk) pairs that intersect = sum over blocks of chunks touched; F = those
    pairs where the chunk lies entirely inside the block and the array (intersection == c)."""
    q, r = divmod(d, b)
    # block k = [kb, kb+b) touches chunks floor(kb/c) .. floor((kb+b-1)/c)
    t = _floor_sum(q, c, b, b - 1) - _floor_sum(q, c, b, 0) + q
    if r:
        t += (d - 1) // c - (q * b) // c + 1
    if c > b:
        return t, 0
    full = d // c   # chunks entirely inside the array; one lies in one block unless it straddles
    straddling = _floor_sum(full, b, c, c - 1) - _floor_sum(full, b, c, 0)
    return t, full - straddling


def _runs(shape, block, chunks):
    """sum(layout.contiguous_runs(shape, chunks, start, count) for the blocks), in closed form.

    A box of counts m inside a chunk stored in C order of its extents e makes prod(m[:L]) runs,
    L the last axis with m != e (1 run if L <= 0). Summed over all (block, chunk) pieces this
    factorises by L: axes after L full (F), axis L not full (T - F), axes before L anything
    (sum of m over pieces = d). A contiguous layout is one chunk spanning the array."""
    chunks = shape if chunks is None else chunks
    stats = [_axis(d, b, c) for d, b, c in zip(shape, block, chunks)]
    full = [f for _, f in stats]
    partial = [t - f for t, f in stats]
    total = math.prod(full) + partial[0] * math.prod(full[1:])
    for last in range(1, len(shape)):
        total += math.prod(shape[:last]) * partial[last] * math.prod(full[last + 1:])
    return total


def _max_touch(d, step, grid):
    """Most cells of extent `grid` that one interval [k*step, min(k*step+step, d)) touches.

    A full-length interval touches (r + step - 1)//grid + 1 cells, r = its start mod grid, which
    cycles through the multiples of gcd(step, grid) with period grid/gcd; once every residue occurs
    the largest one, grid - gcd, decides."""
    n_full = d // step
    best = 0
    g = math.gcd(step, grid)
    if n_full >= grid // g:
        best = (grid - g + step - 1) // grid + 1
    else:
        for k in range(n_full):
            a = k * step
            best = max(best, (a + step - 1) // grid - a // grid + 1)
    if n_full * step < d:
        a = n_full * step
        best = max(best, (d - 1) // grid - a // grid + 1)
    return best


@functools.lru_cache(maxsize=4096)
def _extents(d, unit):
    """Candidate block extents along an axis: multiples of `unit` (clipped to d), only the smallest
    one for each number of blocks along the axis (a larger extent with as many blocks costs memory
    and saves nothing): O(sqrt(d/unit)) values, ascending."""
    u = -(-d // unit)
    r = math.isqrt(u)
    if r > 4096:   # an axis of 10^15 (a damaged or absurd header): log-spaced counts, not 10^7 values
        ks = {int(u ** (i / 4095)) for i in range(4096)} | {-(-u // m) for m in range(1, 4097)}
    else:
        ks = set(range(1, r + 1)) | {-(-u // m) for m in range(1, r + 2)}
    return tuple(sorted({min(k * unit, d) for k in ks if 1 <= k <= u}))


# --- evaluation -------------------------------------------------------------------------------------

def _written(dst, ratio):
    """Bytes the target will take on disk: its stored_bytes if given, else the uncompressed size
    scaled by the original source's compression ratio when both are compressed."""
    if dst.stored_bytes is not None:
        return dst.stored_bytes
    if dst.compressed and ratio is not None:
        return round(dst.nbytes * ratio)
    return dst.nbytes


def rounds_factor(n_blocks: int, workers: int, largest_fraction: float = 0.0) -> float:
    """How much longer than an even split the blocks of a pass take on `workers` workers: equal
    blocks run in ceil(n/w) rounds and the last round leaves workers idle (3 blocks on 2 workers
    take two blocks' time, not one and a half: 4/3), and no split ends before its largest block
    (`largest_fraction` of the array: blocks clipped at the edge are smaller, 960 + 480 rows on 2
    workers take the 960 rows' time: 4/3)."""
    if n_blocks <= 0 or workers <= 1:
        return 1.0
    return max(-(-n_blocks // workers) * workers / n_blocks, workers * largest_fraction, 1.0)


def _evaluate(src, dst, block, workers, rates, ratio, warm=False, own=False, tiles=False):
    """Every count and the cost of reading src in `block`s and writing dst: a dict. `warm`: src is
    read from the page cache (the intermediate file the first pass has just written). `own`: the
    workers write dst themselves (peak_memory's `own`); `tiles`: dst is the tiled intermediate."""
    shape = src.shape
    if 0 in shape:   # an empty array: no blocks, nothing to move
        return dict(block=tuple(block), n_blocks=0, workers=1, block_bytes=0, peak_mem=0, chunks_decoded=0,
                    bytes_read=0, bytes_decoded=0, bytes_encoded=0, bytes_written=0, read_ops=0, write_ops=0,
                    predicted_s=0.0)
    n_blocks = math.prod(-(-d // b) for d, b in zip(shape, block))
    w = max(1, min(workers, n_blocks))
    block_bytes = math.prod(block) * src.itemsize
    scratch = 2 * src.chunk_nbytes if src.compressed else 0
    if src.compressed:
        decoded = math.prod(_axis(d, b, c)[0] for d, b, c in zip(shape, block, src.chunks))
        n_src = math.prod(-(-d // c) for d, c in zip(shape, src.chunks))
        bytes_read = round(src.stored * decoded / n_src)    # whole chunks, once per decode
        read_ops = decoded
        bytes_decoded = decoded * src.chunk_nbytes
    else:
        decoded, bytes_read, bytes_decoded = 0, src.nbytes, 0
        read_ops = _runs(shape, block, src.chunks)
    bytes_encoded = dst.nbytes if dst.compressed else 0
    bytes_written = _written(dst, ratio)
    if dst.chunks is not None and not tiles:
        write_ops = math.prod(-(-d // c) for d, c in zip(shape, dst.chunks))
    else:   # a write per contiguous run (the tiled intermediate: of each piece in its tile)
        write_ops = _runs(shape, block, dst.chunks)
    read_Bps, read_op_s = (rates.warm_read_Bps or rates.read_Bps, rates.warm_op_s if rates.warm_read_Bps
                           else rates.op_s) if warm else (rates.read_Bps, rates.op_s)
    seconds = (bytes_read / read_Bps + read_ops * read_op_s
               + (bytes_decoded / rates.decode_Bps + bytes_encoded / rates.encode_Bps) / rates.speedup(w)
               * rounds_factor(n_blocks, w, math.prod(min(b, d) / d for b, d in zip(block, shape)))
               + bytes_written / rates.write_Bps + write_ops * rates.op_s
               + n_blocks * (rates.task_s if w == 1 else rates.pool_task_s))
    return dict(block=tuple(block), n_blocks=n_blocks, workers=w, block_bytes=block_bytes,
                peak_mem=(peak_memory(block_bytes + _piece(block_bytes), scratch, w, 0) if tiles else
                          peak_memory(block_bytes, scratch, w, _own_chunk(dst) if own else None)),
                chunks_decoded=decoded,
                bytes_read=bytes_read, bytes_decoded=bytes_decoded, bytes_encoded=bytes_encoded,
                bytes_written=bytes_written, read_ops=read_ops, write_ops=write_ops, predicted_s=seconds)


def _own_chunk(dst: Layout) -> int:
    """Bytes of one target chunk a worker encodes and writes itself (0: contiguous, written as it is)."""
    return dst.chunk_nbytes if dst.chunks is not None else 0


def _piece(block_bytes: int) -> int:
    """The copy a worker gathers for one write into the tiled intermediate (rechunking.tiles.write):
    a block's piece of one tile, at most INTERMEDIATE_PIECE_BYTES at a time. Bounded by the block
    alone, not by the tiles: the first pass then fits whatever tiles the second pass chose."""
    return min(block_bytes, INTERMEDIATE_PIECE_BYTES)


def _build(name, strategy, src, dst, block, workers, rates, ratio, max_mem, warm=False, own=False, tiles=False):
    e = _evaluate(src, dst, block, workers, rates, ratio, warm, own, tiles)
    shape = src.shape
    max_dec = 0
    if src.compressed and e["n_blocks"]:
        max_dec = math.prod(_max_touch(d, c, b) for d, b, c in zip(shape, block, src.chunks))
    # The chunk cache. Each block is read by one H5Dread, which visits each chunk it needs once,
    # so whole-chunk and strided passes need no chunk kept across calls: one chunk (the decoded
    # chunk of the scratch) suffices. For redecode, consecutive blocks in C order share the source
    # chunks across their common face; a cache holding every chunk one block touches keeps them
    # decoded for the next block (so chunks_decoded is an upper bound). Each worker has its own
    # cache, so it is granted only if w such caches still fit the budget on top of the peak.
    cache = src.chunk_nbytes if e["n_blocks"] else 0
    if strategy == "redecode" and e["n_blocks"]:
        per_block = src.chunk_nbytes * math.prod(_max_touch(d, b, c)
                                                 for d, b, c in zip(shape, block, src.chunks))
        if e["peak_mem"] + e["workers"] * per_block <= max_mem:
            cache = per_block
    return Pass(name=name, src=src, dst=dst, block=e["block"], n_blocks=e["n_blocks"], strategy=strategy,
                chunks_decoded=e["chunks_decoded"], max_decodes_per_chunk=max_dec,
                bytes_read=e["bytes_read"], bytes_decoded=e["bytes_decoded"],
                bytes_encoded=e["bytes_encoded"], bytes_written=e["bytes_written"],
                read_ops=e["read_ops"], write_ops=e["write_ops"], peak_mem=e["peak_mem"],
                predicted_s=e["predicted_s"], cache_bytes=cache, workers=e["workers"], own_writes=own)


# --- block search -----------------------------------------------------------------------------------
#
# Memory grows with the block; with w = workers blocks in flight it is monotone in the block
# bytes, so shrinking towards the smallest candidate block always reaches a fit if there is one
# among blocks with at least `workers` blocks. Blocks with fewer blocks than workers (w < workers)
# break that monotony (fewer blocks in flight can need less memory than smaller blocks): there are
# few such block shapes, and `_few_blocks` enumerates them when the greedy finds no fit.

def _fits(e, max_mem):
    return e["peak_mem"] <= max_mem


def _few_blocks(ev, shape, cands, workers, max_mem):
    """Every candidate block with fewer than `workers` blocks: (best fitting evaluation or None,
    smallest peak seen)."""
    best, low = None, None
    per_axis = [[b for b in c if -(-d // b) < workers] for d, c in zip(shape, cands)]

    def walk(i, block, n):
        nonlocal best, low
        if i == len(shape):
            e = ev(block)
            low = e["peak_mem"] if low is None else min(low, e["peak_mem"])
            if _fits(e, max_mem) and (best is None or e["predicted_s"] < best["predicted_s"]):
                best = e
            return
        for b in per_axis[i]:
            k = n * -(-shape[i] // b)
            if k < workers:
                walk(i + 1, block + (b,), k)

    if workers > 1:
        walk(0, (), 1)
    return best, low


def _grow(ev, cur, cands, max_mem):
    """Grow one axis at a time to its next larger candidate while that fits and lowers the predicted
    time (fewer blocks: their task cost); each step takes the largest time saved per factor of memory (ties:
    the lowest axis)."""
    while True:
        best = None
        for i, c in enumerate(cands):
            k = c.index(cur["block"][i])
            if k + 1 == len(c):
                continue
            block = cur["block"][:i] + (c[k + 1],) + cur["block"][i + 1:]
            e = ev(block)
            if not _fits(e, max_mem) or e["predicted_s"] >= cur["predicted_s"] * (1 - 1e-12):
                continue
            key = ((e["predicted_s"] - cur["predicted_s"]) / math.log(e["block_bytes"] / cur["block_bytes"]), i)
            if best is None or key < best[0]:
                best = (key, e)
        if best is None:
            return cur
        cur = best[1]


def _search(ev, shape, start, cands, workers, max_mem):
    """Greedy: from `start`, shrink one axis at a time to its next smaller candidate until the block
    fits, each step on the axis that adds the least predicted time per factor of memory saved (ties:
    the lowest axis, so trailing axes stay whole and requests long); then `_grow` while it pays.
    Returns (evaluation or None, smallest peak seen)."""
    cur = ev(tuple(start))
    low = cur["peak_mem"]
    while not _fits(cur, max_mem):
        best = None
        for i, c in enumerate(cands):
            k = c.index(cur["block"][i])
            if k == 0:
                continue
            block = cur["block"][:i] + (c[k - 1],) + cur["block"][i + 1:]
            e = ev(block)
            low = min(low, e["peak_mem"])
            key = ((e["predicted_s"] - cur["predicted_s"]) / math.log(cur["block_bytes"] / e["block_bytes"]), i)
            if best is None or key < best[0]:
                best = (key, e)
        if best is None:
            break
        cur = best[1]
    if not _fits(cur, max_mem):
        found, few_low = _few_blocks(ev, shape, cands, workers, max_mem)
        low = low if few_low is None else min(low, few_low)
        if found is None:
            return None, low
        cur = found
    return _grow(ev, cur, cands, max_mem), low


def _largest(ev, shape, cands, workers, max_mem):
    """The largest candidate block that fits, preferring whole trailing axes (long contiguous
    writes): shrink axis 0 as little as needed, and only if it is at its smallest, axis 1, ..."""
    block = tuple(shape)
    cur = ev(block)
    low = cur["peak_mem"]
    for i, c in enumerate(cands):
        if _fits(cur, max_mem):
            break
        for b in reversed(c[:-1]):
            e = ev(cur["block"][:i] + (b,) + cur["block"][i + 1:])
            low = min(low, e["peak_mem"])
            if _fits(e, max_mem):
                cur = e
                break
        else:
            cur = ev(cur["block"][:i] + (c[0],) + cur["block"][i + 1:])
    if not _fits(cur, max_mem):
        cur, few_low = _few_blocks(ev, shape, cands, workers, max_mem)
        low = low if few_low is None else min(low, few_low)
    return cur, low


# --- the planner ------------------------------------------------------------------------------------

def _size_up(n):
    """format_size of n rounded up to its last shown digit, so "needs at least" never understates."""
    for f in (1024**4, 1024**3, 1024**2, 1024):
        if n >= f:
            return format_size(math.ceil(n * 10 / f) * f / 10)
    return format_size(n)


def _check(src, dst, max_mem, workers):
    if not isinstance(src, Layout) or not isinstance(dst, Layout):
        raise InputError("plan_variable needs two Layouts")
    if src.shape != dst.shape or src.itemsize != dst.itemsize:
        raise InputError(f"source {format_chunks(src.shape)} x {src.itemsize} B and target "
                         f"{format_chunks(dst.shape)} x {dst.itemsize} B differ in shape or item size")
    return _int(max_mem, "--max-mem", 0), _int(workers, "workers", 1)


def plan_variable(src: Layout, dst: Layout, max_mem: int, workers: int = 1, rates: Rates = Rates(),
                  allow_two_pass: bool = True, page_cache_bytes: int = 0, own_writes: bool = False) -> Plan:
    """The cheapest plan (predicted time) to convert src to dst with peak memory <= max_mem.
    An intermediate file (two-pass) no larger than `page_cache_bytes` is read back from the page
    cache (rates.warm_read_Bps); 0: from storage. Its predicted time includes the command's
    start-up (rates.start_s). `own_writes`: the workers write dst's chunks themselves (a local
    Zarr store), nothing goes back to the command (peak_memory's `own`); the intermediate file of
    a two-pass plan is always written so.

    InputError (one line, without the variable name: the caller prefixes it) if no plan fits."""
    plan = _cheapest_plan(src, dst, max_mem, workers, rates, allow_two_pass, page_cache_bytes, own_writes)
    return dataclasses.replace(plan, start_s=float(rates.start_s))


def _cheapest_plan(src, dst, max_mem, workers, rates, allow_two_pass, page_cache_bytes, own_writes) -> Plan:
    max_mem, workers = _check(src, dst, max_mem, workers)
    shape, rank = src.shape, len(src.shape)
    unit = dst.chunks or (1,) * rank           # target alignment; contiguous: none
    src_unit = src.chunks or (1,) * rank
    lcm_block = tuple(min(math.lcm(u, c), d) for u, c, d in zip(unit, src_unit, shape))
    ratio = src.stored / src.nbytes if src.compressed and src.nbytes else None

    def build(name, strategy, a, b, block, warm=False, own=own_writes, tiles=False):
        return _build(name, strategy, a, b, block, workers, rates, ratio, max_mem, warm, own, tiles)

    if 0 in shape:   # nothing to read or write
        return Plan("single-pass", (build("copy", "whole-chunks", src, dst, lcm_block),), max_mem, workers)

    def ev_for(a, b, warm=False, own=own_writes, tiles=False):
        return functools.lru_cache(maxsize=None)(
            lambda block: _evaluate(a, b, block, workers, rates, ratio, warm, own, tiles))

    ev = ev_for(src, dst)
    whole = [_extents(d, l) for d, l in zip(shape, lcm_block)]
    found, need = _search(ev, shape, lcm_block, whole, workers, max_mem)
    if found is not None:
        return Plan("single-pass", (build("copy", "whole-chunks", src, dst, found["block"]),), max_mem, workers)

    options = []
    cut = [tuple(sorted(set(_extents(d, u)) | set(_extents(d, l)))) for d, u, l in zip(shape, unit, lcm_block)]
    found, low = _search(ev, shape, lcm_block, cut, workers, max_mem)
    need = min(need, low)
    if found is not None:
        kind = "redecode" if src.compressed else "strided"
        options.append(Plan(kind, (build("copy", kind, src, dst, found["block"]),), max_mem, workers))

    if src.compressed and allow_two_pass:
        warm = 0 < src.nbytes <= page_cache_bytes     # the intermediate, just written, is still in memory
        src_cands = [_extents(d, c) for d, c in zip(shape, src.chunks)]
        unit_start, unit_cands = tuple(min(u, d) for u, d in zip(unit, shape)), [_extents(d, u) for d, u in zip(shape, unit)]
        # The intermediate in C order: the first pass writes long runs, the second reads its blocks
        # by rows (strided: many short reads when its blocks are narrow)
        inter = Layout(shape, src.itemsize, None, False)
        first, low1 = _largest(ev_for(src, inter, own=True), shape, src_cands, workers, max_mem)
        second, low2 = _search(ev_for(inter, dst, warm), shape, unit_start, unit_cands, workers, max_mem)
        need = min(need, max(low1, low2))
        if first is not None and second is not None:
            options.append(Plan("two-pass", (build("to-intermediate", "whole-chunks", src, inter, first["block"], own=True),
                                             build("from-intermediate", "strided", inter, dst, second["block"], warm)),
                                max_mem, workers))
        # Or tiled by the second pass's blocks (chosen first, each then read as one tile), the
        # first pass writing each tile its block touches as a piece: the cheaper of the two is taken
        if second is not None:
            def tiled(block):
                return Layout(shape, src.itemsize, tuple(block), False)
            second = _search(functools.lru_cache(maxsize=None)(
                lambda block: _evaluate(tiled(block), dst, block, workers, rates, ratio, warm, own_writes)),
                shape, unit_start, unit_cands, workers, max_mem)[0]
            inter = tiled(second["block"])
            first = _largest(ev_for(src, inter, own=True, tiles=True), shape, src_cands, workers, max_mem)[0]
            if first is not None:
                options.append(Plan("two-pass", (build("to-intermediate", "whole-chunks", src, inter, first["block"],
                                                       own=True, tiles=True),
                                                 build("from-intermediate", "strided", inter, dst, second["block"],
                                                       warm)),
                                    max_mem, workers))

    if not options:
        what = f"one target chunk {format_chunks(unit)}" if dst.chunks else f"the smallest block {format_chunks(unit)}"
        if src.compressed:
            what += f" with source chunks {format_chunks(src.chunks)} to decode"
        raise InputError(f"--max-mem {format_size(max_mem)} is too small: {what} needs at least "
                         f"{_size_up(need)} with {workers} worker{'s' if workers != 1 else ''}")
    return _take(options)


def _take(options) -> Plan:
    """Deterministic: the lowest predicted time, ties to the simpler (single-file) strategy; two passes
    only when they beat the best single-file plan by TWO_PASS_MARGIN (the plan then says so)."""
    best = min(options, key=lambda p: (p.predicted_s, PLAN_STRATEGIES.index(p.strategy)))
    single = [p for p in options if p.strategy != "two-pass"]
    if best.strategy == "two-pass" and single:
        one_file = min(single, key=lambda p: p.predicted_s)
        if one_file.predicted_s <= TWO_PASS_MARGIN * best.predicted_s:
            return dataclasses.replace(one_file, declined=(
                f"two-pass (predicted {best.predicted_s:.2f} s of conversion, temporary file "
                f"{format_size(best.tmp_bytes)}) not taken: less than {TWO_PASS_MARGIN}x faster than this single pass, "
                "and its intermediate costs more than the rates say"))
    return best


# --- the one-off cost ---------------------------------------------------------------------------------

def conversion_plan(src: Layout, dst: Layout, profile, codec: str = "", target_codec=None, max_mem=None,
                    workers=None, allow_two_pass: bool = True, machine=None, own_writes: bool = False) -> Plan:
    """The plan `climio rechunk` makes to convert `src` (compressed with `codec`) to `dst`
    (`target_codec`; None: the same), priced with the rates of `profile` (climio.model.rates; None
    or a profile of built-in defaults: the defaults); its `predicted_s` is the one-off cost the
    advisor states and `climio rechunk --dry-run` prints. max_mem / workers: None for the command's
    defaults, which `machine` (climio.machine.memory.Resources: max_mem, workers, page_cache_bytes)
    holds; without it, both must be given and no intermediate is taken to stay in the page cache."""
    if (max_mem is None or workers is None) and machine is None:
        raise ValueError("conversion_plan: give max_mem and workers, or the machine's defaults")
    return plan_variable(src, dst, machine.max_mem if max_mem is None else max_mem,
                         machine.workers if workers is None else workers,
                         Rates.from_profile(profile, codec, target_codec), allow_two_pass=allow_two_pass,
                         page_cache_bytes=machine.page_cache_bytes if machine is not None else 0,
                         own_writes=own_writes)


def rechunk_cost(profile, machine, max_mem=None, workers=None):
    """(src Layout, dst Layout, codec) -> predicted seconds of the `climio rechunk` command advice
    prints (the target keeps the source's codec when it is compressed): conversion_plan with the
    profile's rates and the command's default memory and workers on `machine` (climio.machine.memory
    .here()), the very number `climio rechunk --dry-run` predicts; NaN for a conversion the planner
    refuses."""

    def cost(src: Layout, dst: Layout, codec: str) -> float:
        try:
            return conversion_plan(src, dst, profile, codec, codec if dst.compressed else "none", max_mem,
                                   workers, machine=machine).predicted_s
        except InputError:
            return float("nan")
    return cost
