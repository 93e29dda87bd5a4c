"""The object-store validation's declared space and its seeded draw (pure): Zarr v3 arrays in S3.

As space.py for files: `draw_store(n, seed, latencies)` takes the configurations with numpy's
generator seeded by `seed`, every categorical axis a shuffled repetition of all its values. A
configuration is an array of 2 to 5 dimensions (named so that CF roles follow: member, time, lev,
lat, lon), its chunks (per axis the whole dimension, one, a divisor or a length that does not
divide it), with or without shards (2 or 4 chunks along one or two axes), a codec as climio
writes it (gzip, blosc(zlib|zstd)+shuffle, zstd, blosc-lz4, none), a read (t, xy, xt, xyt, box),
a Zarr stack and an injected round trip. A 2-D array is (lat, lon) for xy and (time, lon) for t
and xt; xyt and box need three roles, so a 2-D draw for them becomes 3-D. Shapes and chunks are
drawn again while the read would make more than MAX_GETS GETs or MAX_SLABS hyperslabs (a bench of
minutes on 2 shared cores).
"""

import math
from dataclasses import asdict, dataclass

import numpy as np

from climio.dataset.access import slice_starts
from climio.dataset.reads import read_count
from climio.dataset.stack_names import OBJECT_READ_STACKS
from climio.model.object_store import read_tasks
from .space import _chunk_len, _spread   # the file space's draws: one chunk length, shuffled rounds

DIM_SIZES = {"member": (2, 3), "time": (24, 48, 96, 128), "lev": (2, 3), "lat": (4, 8, 24, 48, 96), "lon": (6, 12, 48, 96, 192)}
STORE_SPACE = {
    "rank": (2, 3, 4, 5),
    "codec": ("none", "deflate1", "deflate1+shuffle", "deflate4+shuffle", "zstd3", "zstd3+shuffle",
              "blosc_lz4:5+shuffle"),
    "sharded": (False, True),
    "read": ("t", "xy", "xt", "xyt", "box"),
    "stack": OBJECT_READ_STACKS,
    "chunk_axis": ("full", "one", "divisor", "non-divisor"),
    "shard_factor": (2, 4),
}
STORE_MAX_BYTES = 6 << 20                  # the array's bytes, uncompressed (float32)
STORE_CHUNK_BYTES = (2 << 10, 1 << 20)     # chunk sizes drawn outside this range are drawn again
MAX_GETS, MAX_SLABS = 1024, 192


@dataclass(frozen=True)
class StoreConfig:
    index: int
    dims: tuple
    shape: tuple
    chunks: tuple
    shards: object          # tuple or None
    codec: str
    read: str
    stack: str
    latency_ms: float

    @property
    def id(self) -> str:
        sh = "x".join(map(str, self.shards)) if self.shards else "noshard"
        return (f"{'x'.join(map(str, self.shape))}/{'x'.join(map(str, self.chunks))}/{sh}/{self.codec}/{self.read}/"
                f"{self.stack}/{self.latency_ms:g}ms")

    @property
    def array_key(self) -> tuple:
        return (self.dims, self.shape, self.chunks, self.shards, self.codec)

    def to_dict(self) -> dict:
        d = asdict(self)
        for k in ("dims", "shape", "chunks"):
            d[k] = list(d[k])
        d["shards"] = list(self.shards) if self.shards else None
        return d


def dims_for(rank: int, read: str) -> tuple:
    if rank == 2:
        return ("lat", "lon") if read == "xy" else ("time", "lon") if read in ("t", "xt") else dims_for(3, read)
    return {3: ("time", "lat", "lon"), 4: ("time", "lev", "lat", "lon"), 5: ("member", "time", "lev", "lat", "lon")}[rank]


def _shards(rng, shape, chunks) -> tuple:
    """2 or 4 chunks per shard along one or two axes that have more than one chunk (else None)."""
    axes = [i for i, (n, c) in enumerate(zip(shape, chunks)) if c < n]
    if not axes:
        return None
    pick = [int(a) for a in rng.permutation(axes)[:int(rng.integers(1, 3))]]
    out = list(chunks)
    for a in pick:
        f = int(STORE_SPACE["shard_factor"][int(rng.integers(2))])
        out[a] = min(chunks[a] * f, -(-shape[a] // chunks[a]) * chunks[a])
    return tuple(out)


def cost(dims, shape, chunks, shards, read) -> tuple:
    """(GETs, hyperslabs) of the read on the array (the model's count of GETs); GETs None past
    MAX_SLABS hyperslabs (not counted)."""
    count = read_count(read, shape, dims)
    n = math.prod(-(-d // c) for d, c in zip(shape, count))
    if n > MAX_SLABS:
        return None, n
    slabs = slice_starts(shape, count)
    gets = sum(len(t) for s, c in slabs for t in read_tasks(shape, chunks, shards, s, c, 4))
    return gets, len(slabs)


def _array(rng, dims, read, sharded) -> tuple:
    """(shape, chunks, shards) within the byte, GET and hyperslab budgets."""
    for _ in range(400):
        shape = tuple(int(DIM_SIZES[d][int(rng.integers(len(DIM_SIZES[d])))]) for d in dims)
        if math.prod(shape) * 4 > STORE_MAX_BYTES:
            continue
        kinds = [STORE_SPACE["chunk_axis"][int(rng.integers(4))] for _ in shape]
        chunks = tuple(_chunk_len(rng, k, n) for k, n in zip(kinds, shape))
        if not STORE_CHUNK_BYTES[0] <= math.prod(chunks) * 4 <= STORE_CHUNK_BYTES[1]:
            continue
        shards = _shards(rng, shape, chunks) if sharded else None
        if sharded and shards is None:
            continue
        gets, slabs = cost(dims, shape, chunks, shards, read)
        if slabs <= MAX_SLABS and gets <= MAX_GETS:
            return shape, chunks, shards
    raise RuntimeError(f"no {dims} array for a {read} read within the budgets")   # the space is declared to avoid this


def draw_store(n: int, seed: int, latencies=(0.0, 20.0)) -> list:
    """n configurations from STORE_SPACE, the same for the same (n, seed, latencies)."""
    rng = np.random.default_rng(seed)
    cols = {a: _spread(rng, STORE_SPACE[a], n) for a in ("rank", "codec", "sharded", "read", "stack")}
    cols["latency"] = _spread(rng, tuple(float(x) for x in latencies), n)
    out = []
    for i in range(n):
        read = cols["read"][i]
        dims = dims_for(cols["rank"][i], read)
        shape, chunks, shards = _array(rng, dims, read, cols["sharded"][i])
        out.append(StoreConfig(i, dims, shape, chunks, shards, cols["codec"][i], read, cols["stack"][i],
                               cols["latency"][i]))
    return out
