"""HDF5's raw-data chunk cache, simulated as the library runs it (pure).

The read-time model needs to know which chunk visits of a read sequence decode a chunk again.
An LRU of "cache bytes / chunk bytes" entries is not what HDF5 does, and the difference is large
(issue 26: an xt read on [1,1,128,256] chunks with netCDF-C's 64 MiB / 1,000-slot cache re-decodes
part of its chunks every read, which an LRU of 512 entries never does). So this module follows
H5Dchunk.c (HDF5 1.10 to 2.x; read to learn, written here because no library exposes the cache's
decisions: HDF5 keeps its hit/miss statistics private):

* one H5Dread visits the chunks its selection touches in chunk-index order (row-major over the
  chunk grid, the skip list HDF5 builds per read);
* a chunk is looked up by a hash of its scaled coordinates: ``val = s[0]; for u >= 1:
  val = (val << bits[u]) ^ s[u]``, ``slot = val % nslots``, where ``bits[u]`` is log2 of the next
  power of two of the number of chunks along dimension u; one chunk per slot (a collision evicts
  the slot's chunk);
* a hit moves the entry ONE place towards the tail of the list (HDF5's approximate LRU), a miss
  reads and decodes the chunk, evicts the slot's occupant, prunes the list until the new chunk
  fits in ``nbytes`` and appends the chunk at the tail; a chunk larger than ``nbytes`` (or no
  slots) is never cached: decoded on every visit when filtered, read directly (only the bytes
  needed, no decode) when not;
* pruning walks two pointers from the head: the first may evict only entries whose bytes have
  all been read (each entry counts down the bytes read from it), the second, started once the
  first has passed ``w0 x entries``, evicts any entry;
* every entry costs the full (uncompressed) chunk size, edge chunks included.
"""

from __future__ import annotations

import itertools
import math
from dataclasses import dataclass

from climio.base.errors import InputError


@dataclass(frozen=True)
class CacheSpec:
    """A dataset's chunk cache as the library reports it: bytes, hash slots, preemption w0."""
    nbytes: int
    nslots: int
    w0: float = 0.75

    def __post_init__(self):
        if self.nbytes < 0 or self.nslots < 0 or not 0.0 <= self.w0 <= 1.0:
            raise InputError(f"impossible chunk cache: {self.nbytes} B, {self.nslots} slots, w0 {self.w0}")

    @classmethod
    def of(cls, value) -> "CacheSpec":
        """A CacheSpec from a CacheSpec, a (nbytes, nslots, w0) tuple or a dict with those keys
        (the records' ``chunk_cache`` field: nbytes/nslots/w0 or size/nelems/preemption)."""
        if isinstance(value, CacheSpec):
            return value
        if isinstance(value, dict):
            get = lambda *ks: next(value[k] for k in ks if k in value)   # noqa: E731
            return cls(int(get("nbytes", "size")), int(get("nslots", "nelems")), float(get("w0", "preemption")))
        nbytes, nslots, w0 = value
        return cls(int(nbytes), int(nslots), float(w0))

    def to_dict(self) -> dict:
        return {"nbytes": self.nbytes, "nslots": self.nslots, "w0": self.w0}


@dataclass
class CacheCounts:
    """What a read sequence did in the cache."""
    reads: int = 0
    visits: int = 0          # chunk visits (one per chunk a read touches)
    hits: int = 0
    misses: int = 0          # chunks read from storage and (when filtered) decoded, cached or not
    uncached: int = 0        # of the misses: chunks that could not be cached (too large, no slots)
    collisions: int = 0      # evictions because another chunk hashed to the slot
    evictions: int = 0       # evictions to make room (pruning)
    filtered: bool = True    # a filtered (compressed) chunk is decoded on every miss

    @property
    def decodes(self) -> int:
        return self.misses if self.filtered else 0

    def to_dict(self) -> dict:
        return {k: getattr(self, k) for k in ("reads", "visits", "hits", "misses", "uncached", "collisions",
                                              "evictions")}


def _power2up(n: int) -> int:
    """H5VM_power2up: the smallest power of two >= n (1 for n <= 1)."""
    return 1 if n <= 1 else 1 << (int(n) - 1).bit_length()


class ChunkCache:
    """One dataset's chunk cache. ``visit(scaled, piece_bytes)`` is one chunk visit of a read."""

    def __init__(self, shape, chunks, itemsize: int, spec, filtered: bool = True):
        if len(shape) != len(chunks) or any(c < 1 for c in chunks):
            raise InputError(f"chunks {list(chunks)} do not fit shape {list(shape)}")
        self.spec = CacheSpec.of(spec)
        self.chunks, self.itemsize = tuple(chunks), itemsize
        self.filtered = filtered
        self.grid = [-(-d // c) for d, c in zip(shape, chunks)]
        # bits per dimension of the hash; HDF5 computes them only for rank > 1
        self.bits = [_power2up(g).bit_length() - 1 for g in self.grid] if len(shape) > 1 else [0]
        self.chunk_size = math.prod(chunks) * itemsize
        self.cacheable = self.spec.nslots > 0 and self.chunk_size <= self.spec.nbytes
        self.slot = {}                  # slot -> scaled coordinates of its entry
        self._slot_of = {}              # scaled coordinates -> slot
        self.prev, self.next = {}, {}   # the doubly linked list, keyed by scaled coordinates
        self.head = self.tail = None
        self.rd_count = {}              # bytes of the entry not yet read
        self.nfull = 0                  # entries whose bytes have all been read (rd_count 0): _prune's fast path
        self.nused = 0
        self.counts = CacheCounts(filtered=filtered)

    # --- the hash and the list -------------------------------------------------------------------
    def hash(self, scaled) -> int:
        val = scaled[0]
        for u in range(1, len(scaled)):
            val = (val << self.bits[u]) ^ scaled[u]
        return val % self.spec.nslots

    def _unlink(self, e):
        p, n = self.prev.pop(e), self.next.pop(e)
        if p is None:
            self.head = n
        else:
            self.next[p] = n
        if n is None:
            self.tail = p
        else:
            self.prev[n] = p

    def _evict(self, e):
        self._unlink(e)
        del self.slot[self._slot_of.pop(e)]
        if self.rd_count.pop(e) == 0:
            self.nfull -= 1
        self.nused -= 1

    def _append(self, e):
        self.prev[e], self.next[e] = self.tail, None
        if self.tail is None:
            self.head = e
        else:
            self.next[self.tail] = e
        self.tail = e

    def _move_back_one(self, e):
        """H5D__chunk_lock on a hit: swap the entry with the one after it."""
        n = self.next[e]
        if n is None:
            return
        p, nn = self.prev[e], self.next[n]
        if p is None:
            self.head = n
        else:
            self.next[p] = n
        self.prev[n], self.next[n] = p, e
        self.prev[e], self.next[e] = n, nn
        if nn is None:
            self.tail = e
        else:
            self.prev[nn] = e

    def _fully_read(self, e) -> bool:
        return self.rd_count[e] == 0

    def _prune(self):
        """H5D__chunk_cache_prune for one new chunk of chunk_size bytes."""
        size, total = self.chunk_size, self.spec.nbytes
        if self.nused * size + size <= total:
            return
        if self.nfull == 0:
            # No entry is fully read, so the first pointer evicts nothing: the walk below reduces to
            # the second pointer evicting from the head once the first has passed w0 x entries, or
            # to nothing when the first walks off the list before (w0 = 1). Same evictions, O(1)
            # instead of a walk of w0 x entries per miss (the advise profile's hot spot, issue 34).
            if int(self.nused * self.spec.w0) >= self.nused:
                return
            while self.head is not None and self.nused * size + size > total:
                self._evict(self.head)
                self.counts.evictions += 1
            return
        used = lambda: self.nused * size   # noqa: E731  (every entry costs the full chunk size)
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
                if i == 0 and p[0] is not None and self._fully_read(p[0]):
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

    # --- one visit -----------------------------------------------------------------------------------
    def visit(self, scaled: tuple, piece_bytes: int) -> bool:
        """One chunk visit reading `piece_bytes` of the chunk; True on a cache hit."""
        c = self.counts
        c.visits += 1
        if self.cacheable:
            s = self.hash(scaled)
            if self.slot.get(s) == scaled:
                c.hits += 1
                self._move_back_one(scaled)
                left = self.rd_count[scaled]
                if left:
                    left -= min(left, piece_bytes)
                    self.rd_count[scaled] = left
                    if left == 0:
                        self.nfull += 1
                return True
        c.misses += 1
        if not self.cacheable:
            c.uncached += 1
            return False
        old = self.slot.get(s)
        if old is not None:
            self._evict(old)
            c.collisions += 1
        self._prune()
        self.slot[s] = scaled
        self._slot_of[scaled] = s
        left = self.chunk_size - min(self.chunk_size, piece_bytes)
        self.rd_count[scaled] = left
        if left == 0:
            self.nfull += 1
        self.nused += 1
        self._append(scaled)
        return False

    def read(self, start, count):
        """One H5Dread of the hyperslab (start, count): visits its chunks in chunk-index order and
        yields, for each, ((chunk index, length of the intersection) per dimension, hit)."""
        self.counts.reads += 1
        per_dim = [[(j, min((j + 1) * ch, s + n) - max(j * ch, s)) for j in range(s // ch, (s + n - 1) // ch + 1)]
                   for s, n, ch in zip(start, count, self.chunks)]
        for combo in itertools.product(*per_dim):      # row-major: chunk-index order
            yield combo, self.visit(tuple(j for j, _ in combo), math.prod(x for _, x in combo) * self.itemsize)


def simulate(shape, chunks, itemsize: int, reads, spec, filtered: bool = True) -> CacheCounts:
    """The cache's counts for `reads` (each (start, count) is one H5Dread, in program order) on a
    dataset of `shape` in `chunks`, with the chunk cache `spec` (CacheSpec, tuple or dict)."""
    shape, chunks = tuple(int(x) for x in shape), tuple(int(x) for x in chunks)
    cache = ChunkCache(shape, chunks, itemsize, spec, filtered)
    for start, count in reads:
        if len(start) != len(shape) or any(a < 0 or b < 1 or a + b > d for a, b, d in zip(start, count, shape)):
            raise InputError(f"read start {list(start)} count {list(count)} outside shape {list(shape)}")
        for _ in cache.read(start, count):
            pass
    return cache.counts
