"""HDF5's chunk-cache prune walk (H5D__chunk_cache_prune) as climio first wrote it: the reference the
fast prune is checked against (tests/test_chunk_cache_prune.py) and the "old" run of
bench/advise_speed.py, kept in one place."""

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
