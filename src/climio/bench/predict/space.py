"""The validation's declared configuration space and its seeded draw (pure).

The model's author does not pick the configurations: `draw(n, seed)` takes them from SPACE with
numpy's generator seeded by `seed`. Every categorical axis is drawn as a shuffled repetition of
all its values (each value appears at least once in n >= its count, in an order the seed decides);
the numbers within an axis (dimension lengths, chunk lengths, the sub-block template, the cache
size) are drawn uniformly from their declared choices.

    SPACE                 the axes and their values
    draw(n, seed) -> [DrawnConfig]
    DrawnConfig.id             a readable name: layout/read/stack/tasks/cache
"""

import math
from dataclasses import asdict, dataclass

import numpy as np

from climio.dataset.stack_names import HYPERSLAB_STACKS

SPACE = {
    # a 4-D [t, z, y, x] variable; files stay small enough for 2 shared cores (MAX_BYTES)
    "T": (48, 96, 120, 192, 240),
    "Z": (2, 3, 4),
    "Y": (33, 48, 64, 96),
    "X": (90, 128, 180, 256),
    "dtype": ("f4", "f8"),
    # per axis: the whole dimension, one, a divisor, a length that does not divide it (edge chunks);
    # or the variable contiguous
    "chunking": ("chunked", "chunked", "chunked", "chunked", "contiguous"),
    "chunk_axis": ("full", "one", "divisor", "non-divisor"),
    "codec": ("none", "deflate1", "deflate4+shuffle", "zstd3", "deflate1+shuffle"),
    "read": ("xy", "xt", "xyt", "block", "stsa"),
    # sub-block count templates: (t fraction, y fraction) of the dimension per read, z = 1, x whole
    "block": ((2, 1), (3, 2), (4, 4), (2, 3), (1, 4)),
    "stack": HYPERSLAB_STACKS,
    "tasks": (1, 2, 4),
    "cache": ("default", "sized"),
    "cache_bytes": (256 << 10, 1 << 20, 4 << 20, 32 << 20),
}
MAX_BYTES = 48 << 20                 # the variable's bytes, uncompressed
CHUNK_BYTES = (1 << 10, 4 << 20)     # chunk sizes drawn outside this range are drawn again


@dataclass(frozen=True)
class DrawnConfig:
    index: int
    shape: tuple
    dtype: str
    chunks: object          # tuple or None (contiguous)
    codec: str
    read: str               # xy | xt | xyt | stsa | a count template "a,1,b,X"
    read_kind: str          # xy | xt | xyt | block | stsa
    stack: str
    tasks: int
    cache_bytes: object     # None: the stack's default cache

    @property
    def itemsize(self) -> int:
        return int(self.dtype[1:])

    @property
    def layout_key(self) -> tuple:
        return (self.shape, self.dtype, self.chunks, self.codec)

    @property
    def id(self) -> str:
        ch = "contig" if self.chunks is None else "x".join(map(str, self.chunks))
        cache = "default" if self.cache_bytes is None else f"{self.cache_bytes >> 10}KiB"
        return (f"{'x'.join(map(str, self.shape))}{self.dtype}/{ch}/{self.codec}/{self.read_kind}/{self.stack}/"
                f"{self.tasks}t/{cache}")

    def to_dict(self) -> dict:
        d = asdict(self)
        d["chunks"] = list(self.chunks) if self.chunks else "contiguous"
        d["shape"] = list(self.shape)
        return d


def _spread(rng, values, n) -> list:
    """n values: whole shuffled rounds of `values` (each appears once per round), cut to n."""
    out = []
    while len(out) < n:
        out += [values[i] for i in rng.permutation(len(values))]
    return out[:n]


def _chunk_len(rng, kind, d) -> int:
    divisors = [c for c in range(2, d) if d % c == 0]
    others = [c for c in range(2, d) if d % c]
    if kind == "full" or (kind == "divisor" and not divisors) or (kind == "non-divisor" and not others):
        return d
    if kind == "one":
        return 1
    pool = divisors if kind == "divisor" else others
    return int(pool[int(rng.integers(len(pool)))])


def _shape(rng, itemsize) -> tuple:
    while True:
        shape = tuple(int(SPACE[a][int(rng.integers(len(SPACE[a])))]) for a in "TZYX")
        if math.prod(shape) * itemsize <= MAX_BYTES:
            return shape


def _chunks(rng, shape, itemsize) -> tuple:
    for _ in range(200):
        kinds = [SPACE["chunk_axis"][int(rng.integers(4))] for _ in shape]
        ch = tuple(_chunk_len(rng, k, d) for k, d in zip(kinds, shape))
        if CHUNK_BYTES[0] <= math.prod(ch) * itemsize <= CHUNK_BYTES[1]:
            return ch
    return tuple(shape[:1]) + (1,) + tuple(shape[2:])      # one x-t-y slab per level: always inside the range


def _read(rng, kind, shape) -> str:
    if kind != "block":
        return kind
    ft, fy = SPACE["block"][int(rng.integers(len(SPACE["block"])))]
    T, _, Y, X = shape
    return f"{math.ceil(T / ft)},1,{math.ceil(Y / fy)},{X}"


def draw(n: int, seed: int) -> list:
    """n configurations from SPACE, the same for the same (n, seed)."""
    rng = np.random.default_rng(seed)
    cols = {a: _spread(rng, SPACE[a], n) for a in ("dtype", "chunking", "codec", "read", "stack", "tasks", "cache")}
    out = []
    for i in range(n):
        dtype = cols["dtype"][i]
        shape = _shape(rng, int(dtype[1:]))
        chunked = cols["chunking"][i] == "chunked"
        chunks = _chunks(rng, shape, int(dtype[1:])) if chunked else None
        codec = cols["codec"][i] if chunked else "none"      # a filter needs chunks
        kind = cols["read"][i]
        cache = int(SPACE["cache_bytes"][int(rng.integers(len(SPACE["cache_bytes"])))]) \
            if cols["cache"][i] == "sized" else None
        out.append(DrawnConfig(i, shape, dtype, chunks, codec, _read(rng, kind, shape), kind, cols["stack"][i],
                          int(cols["tasks"][i]), cache))
    return out
