"""Geometry of chunked and contiguous layouts: what a hyperslab read costs before it is timed.

Shapes, chunk shapes, starts and counts are sequences of ints over the variable's dimensions,
slowest first (C order; the studies use [t, z, y, x]). `chunks=None` means a contiguous
(unchunked) variable. HDF5 stores every chunk separately and allocates edge chunks at full chunk
size even where the chunk shape does not divide the dimension (the thesis's 430 / 45), so bytes
allocated and bytes decoded count whole chunks.

Everything here is pure arithmetic except `library_default_chunks`, which asks the installed
netCDF-C library which chunk shape it picks by default (in memory, nothing written).

Conventions for the corner cases:
  * a contiguous variable has no chunks: `chunks_touched` and `partial_chunks` return 0;
  * an empty hyperslab (a zero count) touches nothing, has no runs, and its amplification is 1.0;
  * `slice_starts` always returns (start, count) pairs; the last hyperslab along a dimension is
    clipped at the array end when the read count does not divide the dimension.
"""

import functools
import itertools
import math
import numbers
import operator
import uuid
from dataclasses import dataclass
from typing import Optional

from climio.base.errors import InputError

DIMS = ("t", "z", "y", "x")


# --- validation -------------------------------------------------------------------------------------

def _fmt(seq) -> str:
    return "[" + ",".join(str(v) for v in seq) + "]"


def _int(v) -> int:
    """An int from an integer (numpy ints welcome); None for bools, floats, strings."""
    if type(v) is int:      # the common case first: the model validates every read's geometry
        return v
    if isinstance(v, bool) or not isinstance(v, numbers.Integral):
        return None
    return int(v)


def _shape(shape) -> tuple:
    try:
        dims = tuple(_int(d) for d in shape)
    except TypeError:
        raise InputError(f"shape {shape!r} must be a list of positive integers") from None
    if not dims or any(d is None or d < 1 for d in dims):
        raise InputError(f"shape {_fmt(shape) if dims else shape!r} must be a list of positive integers")
    return dims


def validate_chunks(shape, chunks):
    """The chunk shape as a list of ints (None for contiguous); InputError (one line) unless
    `chunks` is None or one integer 1 <= c <= d per dimension of `shape`."""
    shape = _shape(shape)
    if chunks is None:
        return None
    try:
        vals = [_int(c) for c in chunks]
    except TypeError:
        raise InputError(f"chunk shape {chunks!r} impossible for shape {_fmt(shape)}: "
                         "give one integer per dimension") from None
    text = lambda: f"chunk shape {_fmt(chunks)} impossible for shape {_fmt(shape)}"  # noqa: E731  (errors only)
    if len(vals) != len(shape):
        raise InputError(f"{text()}: {len(vals)} chunk dimensions for {len(shape)} array dimensions")
    for i, (c, d) in enumerate(zip(vals, shape), 1):
        if c is None:
            raise InputError(f"{text()}: chunk dimension {i} ({chunks[i - 1]!r}) is not an integer")
        if c < 1:
            raise InputError(f"{text()}: chunk dimension {i} ({c}) must be at least 1")
        if c > d:
            raise InputError(f"{text()}: chunk dimension {i} ({c}) exceeds the dimension ({d})")
    return vals


def _chunks(shape, chunks) -> tuple:
    vals = validate_chunks(shape, chunks)
    return None if vals is None else tuple(vals)


def _slab(shape, start, count) -> tuple:
    """(start, count) as int tuples inside the array; InputError otherwise."""
    try:
        s = tuple(_int(v) for v in start)
        n = tuple(_int(v) for v in count)
    except TypeError:
        raise InputError(f"hyperslab start {start!r} count {count!r} must be lists of integers") from None
    text = lambda: f"hyperslab start {_fmt(start)} count {_fmt(count)}"  # noqa: E731  (built for errors only)
    if len(s) != len(shape) or len(n) != len(shape):
        raise InputError(f"{text()} does not match the {len(shape)} dimensions of shape {_fmt(shape)}")
    for i, (a, b, d) in enumerate(zip(s, n, shape), 1):
        if a is None or b is None or a < 0 or b < 0 or a + b > d:
            raise InputError(f"{text()} outside shape {_fmt(shape)} in dimension {i}")
    return s, n


def _itemsize(itemsize) -> int:
    i = _int(itemsize)
    if i is None or i < 1:
        raise InputError(f"item size {itemsize!r} must be a positive integer number of bytes")
    return i


# --- chunk geometry ---------------------------------------------------------------------------------

def chunk_grid(shape, chunks) -> tuple:
    """Chunks per dimension, ceil(d / c)."""
    shape = _shape(shape)
    chunks = _chunks(shape, chunks)
    if chunks is None:
        raise InputError("a contiguous variable has no chunk grid")
    return tuple(-(-d // c) for d, c in zip(shape, chunks))


def chunk_bytes(chunks, itemsize) -> int:
    """Bytes of one (full) chunk."""
    return math.prod(int(c) for c in chunks) * _itemsize(itemsize)


def allocated_bytes(shape, chunks, itemsize) -> int:
    """Data bytes HDF5 allocates for the variable (uncompressed): edge chunks count whole."""
    shape = _shape(shape)
    if chunks is None:
        return math.prod(shape) * _itemsize(itemsize)
    return math.prod(chunk_grid(shape, chunks)) * chunk_bytes(chunks, itemsize)


def _dim_pieces(s, n, c, d) -> list:
    """How the range [s, s+n) of one dimension meets the chunks along it.

    A list of (length of the intersection, number of chunks with that length, whether the
    intersection covers the chunk's in-array part, whether it covers the chunk's allocated extent
    c). At most three entries (first chunk, interior chunks, last chunk)."""
    if n == 0:
        return []
    j0, j1 = s // c, (s + n - 1) // c
    end = s + n

    def piece(j):
        lo, hi = j * c, min((j + 1) * c, d)
        m = min(hi, end) - max(lo, s)
        return m, 1, m == hi - lo, m == c

    if j0 == j1:
        return [piece(j0)]
    middle = [(c, j1 - j0 - 1, True, True)] if j1 - j0 > 1 else []
    return [piece(j0), *middle, piece(j1)]


def chunks_touched(shape, chunks, start, count) -> int:
    """Chunks the hyperslab intersects (0 for a contiguous variable or an empty hyperslab)."""
    shape = _shape(shape)
    chunks = _chunks(shape, chunks)
    start, count = _slab(shape, start, count)
    if chunks is None:
        return 0
    return math.prod(sum(k for _, k, _, _ in _dim_pieces(s, n, c, d))
                     for s, n, c, d in zip(start, count, chunks, shape))


def partial_chunks(shape, chunks, start, count) -> int:
    """Touched chunks the hyperslab does not cover entirely.

    An edge chunk clipped by the array end counts as covered when the hyperslab covers all of its
    in-array part. 0 for a contiguous variable."""
    shape = _shape(shape)
    chunks = _chunks(shape, chunks)
    start, count = _slab(shape, start, count)
    if chunks is None:
        return 0
    pieces = [_dim_pieces(s, n, c, d) for s, n, c, d in zip(start, count, chunks, shape)]
    touched = math.prod(sum(k for _, k, _, _ in p) for p in pieces)
    full = math.prod(sum(k for _, k, covered, _ in p if covered) for p in pieces)
    return touched - full


def _runs_in_box(counts, extents) -> int:
    """C-order runs of a box with `counts` inside an array of `extents`: one run per index of the
    dimensions before the last one the box does not span entirely."""
    if any(n == 0 for n in counts):
        return 0
    last = max((i for i, (n, e) in enumerate(zip(counts, extents)) if n != e), default=-1)
    return math.prod(counts[:last]) if last > 0 else 1


def contiguous_runs(shape, chunks, start, count) -> int:
    """Maximal runs of consecutive bytes on disk that the hyperslab's elements occupy.

    Contiguous layout: C-order runs in the whole array. Chunked: every touched chunk is stored
    separately in the C order of its full (allocated) chunk shape, so the runs inside each chunk
    are counted against the chunk shape (padding of an edge chunk breaks runs) and summed."""
    shape = _shape(shape)
    chunks = _chunks(shape, chunks)
    start, count = _slab(shape, start, count)
    if chunks is None:
        return _runs_in_box(count, shape)
    pieces = [_dim_pieces(s, n, c, d) for s, n, c, d in zip(start, count, chunks, shape)]
    if any(not p for p in pieces):
        return 0
    total = 0
    # At most 3 distinct pieces per dimension: sum over their combinations, weighted by multiplicity.
    for combo in itertools.product(*pieces):
        runs = _runs_in_box([m for m, _, _, _ in combo], chunks)
        total += runs * math.prod(k for _, k, _, _ in combo)
    return total


def bytes_wanted(count, itemsize) -> int:
    return math.prod(int(n) for n in count) * _itemsize(itemsize)


def bytes_decoded(shape, chunks, start, count, itemsize) -> int:
    """Bytes the library must read and decode: exactly the bytes wanted from a contiguous
    variable; every touched chunk in full from a chunked one."""
    if chunks is None:
        _slab(_shape(shape), start, count)
        return bytes_wanted(count, itemsize)
    return chunks_touched(shape, chunks, start, count) * chunk_bytes(chunks, itemsize)


def amplification(shape, chunks, start, count, itemsize) -> float:
    """bytes_decoded / bytes_wanted (1.0 for an empty hyperslab: nothing read, nothing wasted)."""
    wanted = bytes_wanted(count, itemsize)
    decoded = bytes_decoded(shape, chunks, start, count, itemsize)
    return decoded / wanted if wanted else 1.0


# --- blocks: an array in pieces that fit in memory --------------------------------------------------

def chunks_in(start, count, chunks):
    """Index tuples of the chunks the box (start, count) touches, C order. Nothing for an empty box
    or a contiguous layout (chunks None)."""
    if chunks is None or any(int(n) == 0 for n in count):
        return
    ranges = [range(s // c, (s + n - 1) // c + 1) for s, n, c in zip(start, count, chunks)]
    yield from itertools.product(*ranges)


def _block_grid(shape, block) -> tuple:
    """(shape, block) as ints, checked: the same rank, positive block extents."""
    shape = tuple(int(d) for d in shape)
    block = tuple(int(b) for b in block)
    if len(block) != len(shape):
        raise InputError(f"block {_fmt(block)} does not match shape {_fmt(shape)}")
    if any(b < 1 for b in block) and not any(d == 0 for d in shape):
        raise InputError(f"block {_fmt(block)} must be positive")
    return shape, block


def count_blocks(shape, block) -> int:
    """How many blocks iter_blocks yields, by arithmetic (a header claiming a 10^15-long axis has
    10^14 blocks: counting them one by one never ends)."""
    shape, block = _block_grid(shape, block)
    if any(d == 0 for d in shape):
        return 0
    return math.prod(-(-d // b) for d, b in zip(shape, block))


def iter_blocks(shape, block):
    """(start, count) of the blocks of shape `block` tiling `shape`, in C order of the block grid,
    the last block along a dimension clipped at the array's end. Nothing for an array with a
    0-length dimension; one empty box ((), ()) for a scalar. Lazy in every dimension: nothing is
    held per block of the grid (itertools.product would first hold each axis's list of blocks)."""
    shape, block = _block_grid(shape, block)
    if any(d == 0 for d in shape):
        return
    start = [0] * len(shape)
    while True:
        yield tuple(start), tuple(min(b, d - s) for s, b, d in zip(start, block, shape))
        k = len(shape) - 1              # odometer: the innermost start moves first
        while k >= 0:
            start[k] += block[k]
            if start[k] < shape[k]:
                break
            start[k] = 0
            k -= 1
        if k < 0:
            return


def iter_block_slices(shape, block):
    """The blocks of iter_blocks as index tuples of slices for numpy, netCDF4-python and h5py
    (`...` for a scalar, which netCDF4-python indexes no other way)."""
    for start, count in iter_blocks(shape, block):
        yield tuple(slice(s, s + n) for s, n in zip(start, count)) or Ellipsis


def bounded_block(shape, chunks, itemsize, max_bytes) -> tuple:
    """The largest C-order block of `shape` within max_bytes whose edges fall on chunk edges.

    Outer dimensions one chunk long, one dimension a multiple of the chunk (or whole), inner
    dimensions whole: every chunk lies in exactly one block (decoded once when reading, written
    whole when writing) and a block of a contiguous variable is one byte range. With chunks None,
    or when one chunk exceeds max_bytes, the same over single values (blocks then cut chunks);
    one value when even a value exceeds max_bytes. A scalar or an array with a 0-length dimension
    is its own block. Chunk extents beyond a dimension (unlimited ones) count as the dimension."""
    shape = tuple(int(n) for n in shape)
    if not shape or 0 in shape:
        return shape
    itemsize = max(int(itemsize), 1)
    ones = (1,) * len(shape)
    units = tuple(max(1, min(int(c), n)) for c, n in zip(chunks, shape)) if chunks else ones
    for unit in (units, ones):
        # the outermost dimension a at which unit[:a] x k*unit[a] x shape[a+1:] fits for some k >= 1
        for a in range(len(shape)):
            inner = math.prod(unit[:a]) * math.prod(shape[a + 1:]) * itemsize
            if inner * unit[a] <= max_bytes:
                n = max_bytes // inner // unit[a] * unit[a]
                return unit[:a] + (min(n, shape[a]),) + shape[a + 1:]
    return ones


# --- chunk shapes -----------------------------------------------------------------------------------

_NC_TYPES = {1: "i1", 2: "i2", 4: "f4", 8: "f8"}


@functools.lru_cache(maxsize=128)
def _library_default(shape: tuple, itemsize: int, unlimited: bool) -> tuple:
    import netCDF4
    if itemsize not in _NC_TYPES:
        raise InputError(f"item size {itemsize} has no netCDF type: use 1, 2, 4 or 8 bytes")
    name = f"climio-default-chunks-{uuid.uuid4().hex}.nc"
    ds = netCDF4.Dataset(name, "w", format="NETCDF4", diskless=True, persist=False)
    try:
        dims = []
        for i, d in enumerate(shape):
            dims.append(f"d{i}")
            ds.createDimension(dims[-1], None if (unlimited and i == 0) else d)
        # contiguous=False alone leaves a fixed-size variable contiguous in netCDF-C >= 4.7 (it calls
        # no nc_def_var_chunking); a filter makes the library pick its default chunk shape, which
        # does not depend on the filter. Nothing is written: the dataset lives in memory.
        var = ds.createVariable("v", _NC_TYPES[itemsize], dims, zlib=True, complevel=1, contiguous=False)
        got = var.chunking()
    finally:
        ds.close()
    if got == "contiguous":
        raise InputError(f"the netCDF library chose no chunks for shape {_fmt(shape)}")
    return tuple(int(c) for c in got)


def library_default_chunks(shape, itemsize, unlimited=False) -> list:
    """The chunk shape the installed netCDF-C library picks when chunking is left to it (as for
    the thesis's 'default' files); the first dimension unlimited if `unlimited`. Cached."""
    return list(_library_default(_shape(shape), _itemsize(itemsize), bool(unlimited)))


def _balanced_counts(shape, n_chunks) -> list:
    """Real chunk counts per dimension at the minimax level (see balanced_chunks)."""
    rank = len(shape)
    lead, (Y, X) = shape[:-2], shape[-2:]

    def counts(level):
        n = [min(max(level, 1.0), d) for d in lead]
        per_map = min(max(level, 1.0), Y * X)
        ny = nx = math.sqrt(per_map)
        if ny > Y:
            ny, nx = Y, per_map / Y
        elif nx > X:
            ny, nx = per_map / X, X
        return n + [ny, nx]

    assert rank >= 2
    lo, hi = 0.0, math.log(max(list(lead) + [Y * X]))
    for _ in range(200):
        mid = (lo + hi) / 2
        if math.prod(counts(math.exp(mid))) < n_chunks:
            lo = mid
        else:
            hi = mid
    return counts(math.exp(hi))


def _worst_cost(shape, chunks) -> int:
    """Most chunks any balanced access touches: a 1-D series along a leading dimension, or the map."""
    n = [-(-d // c) for d, c in zip(shape, chunks)]
    return max(n[:-2] + [n[-2] * n[-1]])


def balanced_chunks(shape, itemsize, chunk_bytes=4 * 2**20) -> list:
    """Russ Rew's "balanced" chunk shape (Unidata blog, 2013), generalised to N dimensions.

    Rew balances two accesses of a [t, y, x] variable: a 1-D time series at one point and a 2-D
    map at one time. Counting, per dimension, n_i = ceil(d_i / c_i) chunks, the series touches n_t
    chunks and the map n_y * n_x. Here every dimension before the last two is a series dimension
    (t, z, ...) and the last two are the map:

      1. Aim at chunks of V = chunk_bytes / itemsize values, i.e. P = prod(d) / V chunks in all.
      2. Pick the real counts that minimise the worst access cost max(n_t, n_z, ..., n_y * n_x)
         subject to prod(n) = P and 1 <= n_i <= d_i: a common level K for every series dimension
         and for the map (clipped to the dimension where a dimension is too short), the map's K
         split evenly between y and x (n_y = n_x = sqrt(K), so 1-D series along y and along x
         cost the same, sqrt(K) <= K). K is found by bisection on prod(n(K)) = P.
      3. Round: per dimension try the two integer counts around n_i, each with the smallest chunk
         extent giving that count, c_i = ceil(d_i / n_i) (so edge chunks waste as little as
         possible); keep the combination with the smallest |log(size / V)| + |log(worst / K)|,
         i.e. off by the smallest product of factors in size and in balance.
      4. If rounding left the size off by more than a factor 2 (short dimensions), re-fit the
         longest chunk dimensions to V.

    A 1-D variable gets one run of V values; a variable no larger than V is one chunk. The result
    satisfies 1 <= c_i <= d_i, and its size is within a factor 2 of chunk_bytes when the variable
    is larger than that.
    """
    shape = _shape(shape)
    itemsize = _itemsize(itemsize)
    target = max(1.0, float(chunk_bytes) / itemsize)
    total = math.prod(shape)
    if total <= target:
        return list(shape)
    if len(shape) == 1:
        return [min(shape[0], max(1, round(target)))]
    real = _balanced_counts(shape, total / target)
    options = []
    for n, d in zip(real, shape):
        ks = {min(max(math.floor(n), 1), d), min(max(math.ceil(n), 1), d)}
        options.append(sorted({-(-d // k) for k in ks}))
    level = max(real[:-2] + [real[-2] * real[-1]])

    def score(c):  # how far off, as log factors: size from V plus worst cost from the ideal level
        return (abs(math.log(math.prod(c) / target)) + abs(math.log(_worst_cost(shape, c) / level)),
                _worst_cost(shape, c), c)

    best = min(itertools.product(*options), key=score)
    chunks = list(best)
    for j in sorted(range(len(shape)), key=lambda i: -chunks[i]):
        size = math.prod(chunks)
        if target / 2 <= size <= target * 2:
            break
        others = size // chunks[j]
        chunks[j] = min(shape[j], max(1, round(target / others)))
    return chunks


def format_chunks(chunks) -> str:
    """'contiguous' or '[1,1,45,45]'."""
    if chunks is None or chunks == "contiguous":
        return "contiguous"
    if isinstance(chunks, str):
        return chunks
    return _fmt(chunks)




# --- the Layout noun ----------------------------------------------------------------------------------

def _checked_int(v, what, minimum):
    """An int (numpy ints welcome, bools not) >= minimum, else InputError."""
    try:
        if isinstance(v, bool):
            raise TypeError
        i = operator.index(v)
    except TypeError:
        raise InputError(f"{what} {v!r} must be an integer") from None
    if i < minimum:
        raise InputError(f"{what} {i} must be at least {minimum}")
    return i


def _checked_ints(seq, what, minimum):
    try:
        vals = tuple(seq)
    except TypeError:
        raise InputError(f"{what} {seq!r} must be a list of integers") from None
    return tuple(_checked_int(v, what, minimum) for v in vals)


@dataclass(frozen=True)
class Layout:
    """How a variable sits on disk, as far as the planner cares."""
    shape: tuple
    itemsize: int
    chunks: Optional[tuple]         # None = contiguous
    compressed: bool = False        # a real codec (deflate, zstd, ...); shuffle alone is cheap: False
    stored_bytes: Optional[int] = None  # bytes on disk; None = nbytes

    def __post_init__(self):
        shape = _checked_ints(self.shape, "shape", 0)
        if not shape:
            raise InputError("shape must have at least one dimension")
        object.__setattr__(self, "shape", shape)
        object.__setattr__(self, "itemsize", _checked_int(self.itemsize, "item size", 1))
        if self.chunks is not None:
            chunks = _checked_ints(self.chunks, "chunk shape", 1)
            if len(chunks) != len(shape):
                raise InputError(f"chunk shape {format_chunks(chunks)} has {len(chunks)} dimensions, "
                                 f"shape {format_chunks(shape)} has {len(shape)}")
            object.__setattr__(self, "chunks", chunks)
        object.__setattr__(self, "compressed", bool(self.compressed))
        if self.compressed and self.chunks is None:
            raise InputError("a compressed variable must be chunked (HDF5 filters need chunks)")
        if self.stored_bytes is not None:
            object.__setattr__(self, "stored_bytes", _checked_int(self.stored_bytes, "stored bytes", 0))

    @property
    def nbytes(self) -> int:
        return math.prod(self.shape) * self.itemsize

    @property
    def stored(self) -> int:
        """Bytes on disk: stored_bytes if known, else the uncompressed size."""
        return self.nbytes if self.stored_bytes is None else self.stored_bytes

    @property
    def chunk_nbytes(self) -> int:
        """Bytes of one full (allocated) chunk; 0 for a contiguous layout."""
        return 0 if self.chunks is None else chunk_bytes(self.chunks, self.itemsize)

    def to_dict(self) -> dict:
        return {"shape": list(self.shape), "itemsize": self.itemsize,
                "chunks": None if self.chunks is None else list(self.chunks),
                "compressed": self.compressed, "stored_bytes": self.stored}

    def label(self) -> str:
        return format_chunks(self.chunks) + (" compressed" if self.compressed else "")

    @property
    def allocated_bytes(self) -> int:
        """Bytes of all chunks as HDF5 allocates them: whole, so edge chunks that stick out of the
        array are full size (before compression); the array itself when contiguous."""
        if self.chunks is None:
            return self.nbytes
        return math.prod(-(-d // c) * c for d, c in zip(self.shape, self.chunks)) * self.itemsize

    @property
    def padding_bytes(self) -> int:
        """Bytes of the edge chunks beyond the array: 0 when every chunk length divides its dimension."""
        return self.allocated_bytes - self.nbytes if 0 not in self.shape else 0


def prime_at_least(n: int) -> int:
    """The smallest prime >= n: HDF5's chunk-cache hash works best with a prime number of slots."""
    n = max(int(n), 2)
    while any(n % d == 0 for d in range(2, math.isqrt(n) + 1)):
        n += 1
    return n
