"""Chunk-size bounds the advice and `climio rechunk` share, and the chunk shape advised for a read.

    SMALL_CHUNK_BYTES    below it a chunk is mostly overhead: `climio rechunk` warns, advice never names one
    ADVISED_MAX_CHUNK_BYTES  advised chunk shapes are at most this large
    bounded_chunks(count, shape, itemsize) -> chunks shaped like a read, within the bounds
"""

import math

# Chunks smaller than this are mostly overhead: HDF5 keeps an index entry, makes a filter call and
# an I/O request per chunk (and ~10 KiB of bookkeeping per chunk a write touches, data/writer.py).
SMALL_CHUNK_BYTES = 64 << 10
ADVISED_MAX_CHUNK_BYTES = 16 << 20
DIVISOR_FACTOR = 2      # a grown length may be up to this much longer to divide its dimension (no padded chunk)


def _grown(need, extent) -> int:
    """The least length >= need for one axis, preferring one that divides the dimension."""
    need = min(extent, max(1, need))
    for q in range(need, min(extent, DIVISOR_FACTOR * need) + 1):
        if extent % q == 0:
            return q
    return need


def bounded_chunks(count, shape, itemsize, low=SMALL_CHUNK_BYTES, high=ADVISED_MAX_CHUNK_BYTES) -> tuple:
    """A chunk shape like the read `count` (clipped to the shape, at least 1), within [low, high]
    bytes: above `high` the leading extents halve first (then the others); below `low` the axes the
    read does not span grow, innermost first, to the least length that reaches `low` (a divisor
    of the dimension when one is near). A variable smaller than `low` becomes one chunk, which
    `climio rechunk` does not warn about (one chunk has no per-chunk overhead to repeat)."""
    c = [max(1, min(int(n), int(d))) for n, d in zip(count, shape)]
    while math.prod(c) * itemsize > high:
        i = max(range(len(c)), key=lambda k: (c[k] > 1, -k if k < len(c) - 2 else -99, c[k]))
        if c[i] <= 1:
            break
        c[i] = -(-c[i] // 2)
    for i in reversed(range(len(c))):
        nbytes = math.prod(c) * itemsize
        if nbytes >= low:
            break
        if c[i] >= shape[i]:
            continue
        rest = nbytes // c[i]
        c[i] = _grown(-(-low // rest), int(shape[i]))
    return tuple(c)
