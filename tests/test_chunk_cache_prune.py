"""ChunkCache._prune's fast path (no entry fully read: evict from the head) against HDF5's walk as
climio first wrote it (H5D__chunk_cache_prune, kept here as the reference): the same evictions, the
same list order and counts, on random visit sequences over many cache sizes, slot counts and w0."""

import random

import pytest

from climio.model.chunk_cache import ChunkCache


class WalkingCache(ChunkCache):
    """The cache with the original two-pointer walk on every prune (the reference)."""

    def _prune(self):
        size, total = self.chunk_size, self.spec.nbytes
        used = lambda: self.nused * size   # noqa: E731
        w = int(self.nused * self.spec.w0)
        p = [self.head, None]
        while (p[0] is not None or p[1] is not None) and used() + size > total:
            if w == 0:
                p[1] = self.head
            n = [self.next[x] if x is not None else None for x in p]
            for i in (0, 1):
                if not used() + size > total:
                    break
                cur = None
                if i == 0 and p[0] is not None and self.rd_count[p[0]] == 0:
                    cur = p[0]
                elif i == 1 and p[1] is not None:
                    cur = p[1]
                if cur is None:
                    continue
                for j in (0, 1):
                    if p[j] == cur:
                        p[j] = None
                    if n[j] == cur:
                        n[j] = self.next[cur]
                self._evict(cur)
                self.counts.evictions += 1
            p = n
            w -= 1


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
