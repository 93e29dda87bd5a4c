"""The Access noun: what a program asks for.

  * 1-D read patterns of the thesis (ch. 3.1.2) as (offset, length) plans; they agree bit for
    bit with the C probes (csrc/common/pattern.c) so every layer of the read-stack study reads
    the same bytes in the same order (a test checks it);
  * the hyperslabs that tile a variable with one read's count (the count itself: climio.dataset.reads,
    the one parser of read shapes).
"""

import itertools
import math
import numpy as np

from climio.base.errors import InputError
from climio.dataset.layout import _fmt, _int, _shape

# slice_starts materialises its list; past this many hyperslabs a read plan is a mistake, not a study.
MAX_SLICES = 2_000_000

PATTERNS = ("sequential", "strided", "random")
STRIDE_FACTOR = 4          # strided: read one buffer, skip three
DEFAULT_RANDOM_COUNT = 100  # the thesis's 100 uniformly random offsets
_M64 = (1 << 64) - 1


def splitmix64(seed: int):
    """The splitmix64 generator (public domain, Vigna); chosen because it is a few lines in C too."""
    state = seed & _M64
    while True:
        state = (state + 0x9E3779B97F4A7C15) & _M64
        z = state
        z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & _M64
        z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & _M64
        yield z ^ (z >> 31)


def plan(pattern: str, file_bytes: int, buffer: int, random_count=DEFAULT_RANDOM_COUNT, seed=1, align=8):
    """The reads of one repetition as an int64 array of shape (n, 2): offset, length."""
    if pattern == "sequential":
        offsets = np.arange(0, file_bytes, buffer, dtype=np.int64)
    elif pattern == "strided":
        offsets = np.arange(0, file_bytes, STRIDE_FACTOR * buffer, dtype=np.int64)
    elif pattern == "random":
        if buffer >= file_bytes:
            return np.array([[0, file_bytes]], dtype=np.int64)
        span = (file_bytes - buffer) // align + 1
        gen = splitmix64(seed)
        offsets = np.array([(next(gen) % span) * align for _ in range(random_count)], dtype=np.int64)
    else:
        raise ValueError(f"unknown pattern {pattern!r}")
    lengths = np.minimum(buffer, file_bytes - offsets)
    return np.stack([offsets, lengths], axis=1)


# --- read shapes ------------------------------------------------------------------------------------

def n_slices(shape, count) -> int:
    """Hyperslabs of `count` needed to tile the array (the last along a dimension may be clipped)."""
    shape = _shape(shape)
    count = _count(shape, count)
    return math.prod(-(-d // n) for d, n in zip(shape, count))


def _count(shape, count) -> tuple:
    try:
        n = tuple(_int(v) for v in count)
    except TypeError:
        raise InputError(f"read count {count!r} must be a list of integers") from None
    if len(n) != len(shape) or any(v is None or not 1 <= v <= d for v, d in zip(n, shape)):
        raise InputError(f"read count {_fmt(count)} impossible for shape {_fmt(shape)}: "
                         "need one count 1..d per dimension")
    return n


def slice_starts(shape, count) -> list:
    """(start, count) pairs tiling the array with hyperslabs of `count`, in C order of the starts
    (the thesis's loop: an xy read loops over t, then z). The last hyperslab along a dimension is
    clipped to the array end, so counts differ from `count` only there.

    InputError past MAX_SLICES hyperslabs (the list is built in memory)."""
    shape = _shape(shape)
    count = _count(shape, count)
    total = n_slices(shape, count)
    if total > MAX_SLICES:
        raise InputError(f"read count {_fmt(count)} tiles shape {_fmt(shape)} with {total} hyperslabs "
                         f"(more than {MAX_SLICES}): read larger hyperslabs")
    per_dim = [[(s, min(n, d - s)) for s in range(0, d, n)] for d, n in zip(shape, count)]
    return [(tuple(s for s, _ in combo), tuple(n for _, n in combo)) for combo in itertools.product(*per_dim)]
