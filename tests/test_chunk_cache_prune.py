"""ChunkCache._prune's fast path (no entry fully read: evict from the head) against HDF5's walk as
climio first wrote it (H5D__chunk_cache_prune, kept here as the reference): the same evictions, the
same list order and counts, on random visit sequences over many cache sizes, slot counts and w0."""

import random

import pytest

from chunk_cache_reference import WalkingCache
from climio.model.chunk_cache import ChunkCache  # noqa: F401


def order(c) -> list:
    out, e = [], c.head
    while e is not None:
        out.append(e)
        e = c.next[e]
    return out


@pytest.mark.parametrize("seed", range(12))
def test_fast_prune_evicts_what_the_walk_evicts(seed):
    rng = random.Random(seed)
    chunk = 64
    entries = rng.choice([1, 2, 3, 5, 17, 40])
    spec = (entries * chunk + rng.choice([0, 13]), rng.choice([3, 7, 101, 521]), rng.choice([0.0, 0.3, 0.75, 1.0]))
    fast, ref = (cls((64, 64), (8, 8), 1, spec) for cls in (ChunkCache, WalkingCache))
    for _ in range(3000):
        scaled = (rng.randrange(8), rng.randrange(8)) if rng.random() < 0.7 else (rng.randrange(2), rng.randrange(3))
        piece = rng.choice([0, 1, 8, 32, 64])
        assert fast.visit(scaled, piece) == ref.visit(scaled, piece)
    assert order(fast) == order(ref)
    assert fast.counts.to_dict() == ref.counts.to_dict()
    assert fast.rd_count == ref.rd_count
    assert fast.nfull == sum(1 for v in ref.rd_count.values() if v == 0)
