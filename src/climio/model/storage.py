"""The storage side of the read-time model's simulation (pure): the page cache's state, the kernel's
readahead and the classification of storage requests, fed by the library's chunk and contiguous
reads (climio.model.predict.simulate drives it). Split from predict.py by job.
"""

import math
from collections import Counter

import numpy as np


def _prod(xs) -> int:
    return int(math.prod(int(x) for x in xs))


def _run_shape(count, extents):
    """(run length in elements, the dimension the runs step along or -1) of a box with `count`
    inside an array of `extents`, C order: where the runs lie, which the simulation needs to place
    its requests (how many there are is climio.dataset.layout.contiguous_runs)."""
    last = max((i for i, (n, e) in enumerate(zip(count, extents)) if n != e), default=-1)
    return (_prod(count), last) if last < 0 else (_prod(count[last:]), last)


def _run_offsets(start, count, extents, last) -> np.ndarray:
    """Element offsets (C order in `extents`) of the runs of box (start, count)."""
    if last <= 0:
        return np.array([int(np.ravel_multi_index(tuple(start), tuple(extents)))], dtype=np.int64)
    strides = np.array([_prod(extents[i + 1:]) for i in range(len(extents))], dtype=np.int64)
    offs = np.array([int(start[last]) * strides[last] + sum(int(start[i]) * strides[i] for i in range(last + 1, len(extents)))],
                    dtype=np.int64)
    for i in range(last - 1, -1, -1):
        idx = (np.arange(int(count[i]), dtype=np.int64) + int(start[i])) * strides[i]
        offs = (idx[:, None] + offs[None, :]).ravel()
    return offs


class _Storage:
    """The storage side: page-cache state, the kernel's readahead and request classification.

    Readahead is Linux's (mm/readahead.c, page_cache_sync_ra / page_cache_async_ra of 6.x), reduced
    to what decides the cost. A read that misses the page cache at page `first`, needing `need`
    pages: at the file's start, right after the previous read, or larger than the maximum, an
    initial window (the request rounded up to a power of two, x4 when small, x2 when medium, the
    device's read_ahead_kb at most) with an async mark `need` pages in; else, when at least
    `need` pages just before it are cached (a stream's trace), a window of those pages plus the
    request; else a standalone random read of its own pages only. A read touching the mark fetches
    the next window ahead (x4 or x2 the last, up to the maximum) as a sequential request. So HDF5's
    64 KiB sieve reads of strided runs are random reads, while reads that skip small gaps after a
    cached stretch keep a stream going. readahead 0 (a profile calibrated before it was recorded):
    every request fetches only its own pages."""

    def __init__(self, page, sieve, readahead=0, end=None):
        self.page = page
        self.sieve = sieve
        self.ra_max = int(readahead) // page
        self.end_page = (int(end) - 1) // page if end else None
        self.seen = set()
        self.prev_end = None
        self.req = Counter()
        self.sieve_lo = self.sieve_hi = -1
        self.new_file()

    def new_file(self):
        """Another open of the file (a task): its own readahead state; the page cache is shared."""
        self.ra_start = self.ra_size = self.ra_async = 0
        self.mark = None
        self.prev_page = None

    def _init_size(self, req: int) -> int:
        n, m = 1 << max(req - 1, 0).bit_length(), self.ra_max
        return 4 * n if n <= m // 32 else 2 * n if n <= m // 4 else m

    def _next_size(self, cur: int) -> int:
        m = self.ra_max
        return 4 * cur if cur < m // 16 else 2 * cur if cur <= m // 2 else m

    def _window(self, start: int, n: int) -> int:
        """Fetch pages [start, start + n) (clipped to the data's end); the bytes newly fetched."""
        stop = start + n if self.end_page is None else min(start + n, self.end_page + 1)
        new = [p for p in range(start, stop) if p not in self.seen]
        self.seen.update(new)
        return len(new) * self.page

    def _set_window(self, start, size, async_size):
        self.ra_start, self.ra_size, self.ra_async = start, size, async_size
        self.mark = start + size - async_size

    def _cached_before(self, first: int) -> int:
        n = 0
        while n < self.ra_max and (first - 1 - n) in self.seen:
            n += 1
        return n

    def _async(self, p0, p1):
        """A read touching the async mark: the next window is read ahead (sequential)."""
        while self.mark is not None and p0 <= self.mark <= p1:
            self.mark = None
            start = self.ra_start + self.ra_size
            size = max(self.ra_size, self._next_size(self.ra_size))
            got = self._window(start, size)
            if got:
                self.req[("sequential", got)] += 1
            self._set_window(start, size, size)

    def fetch(self, off, size):
        size = int(size)
        if size <= 0:
            return
        p0, p1 = off // self.page, (off + size - 1) // self.page
        if self.ra_max <= 0:
            return self._fetch_plain(off, size, p0, p1)
        first = next((p for p in range(p0, p1 + 1) if p not in self.seen), None)
        if first is None:
            self.req[("warm", size)] += 1
        else:
            need = p1 - first + 1
            pattern = ("sequential" if (first - 1) in self.seen or (self.prev_end is not None and off == self.prev_end)
                       else "strided")
            if first == 0 or need > self.ra_max or (self.prev_page is not None and 0 <= first - self.prev_page <= 1):
                n = self._init_size(need)
                self._set_window(first, max(n, need), n - need if n > need else max(n, need) >> 1)
                cold = self._window(first, max(n, need))
            else:
                contig = self._cached_before(first)
                if contig <= need:              # a standalone random read: its own pages, no state
                    cold = self._window(first, need)
                else:
                    if contig == first:         # cached from the file's start: a whole-file stream
                        contig *= 2
                    n = min(contig + need, self.ra_max)
                    self._set_window(first, max(n, need), 1)
                    cold = self._window(first, max(n, need))
            self.req[(pattern, cold)] += 1
            if first > p0:
                self.req[("warm", (first - p0) * self.page)] += 1
        self._async(p0, p1)
        self.prev_end = off + size
        self.prev_page = (off + size) // self.page

    def _fetch_plain(self, off, size, p0, p1):
        new = [p for p in range(p0, p1 + 1) if p not in self.seen]
        if not new:
            self.req[("warm", size)] += 1
        else:
            # only the pages not yet fetched come from storage; the rest from the page cache
            cold = min(size, len(new) * self.page)
            # sequential when it continues a fetched region (the kernel's readahead follows it) or the
            # previous request
            pattern = ("sequential" if (new[0] - 1) in self.seen or (self.prev_end is not None and off == self.prev_end)
                       else "strided")
            self.seen.update(new)
            self.req[(pattern, cold)] += 1
            if size > cold:
                self.req[("warm", size - cold)] += 1
        self.prev_end = off + size

    def contig(self, offs_bytes, run_bytes, region_hi):
        """Runs of `run_bytes` at byte offsets inside a region ending at `region_hi` (a contiguous
        dataset or one chunk read directly), through HDF5's sieve buffer."""
        if run_bytes >= self.sieve:
            for o in offs_bytes:
                self.fetch(int(o), run_bytes)
            return
        for o in offs_bytes:
            o = int(o)
            if self.sieve_lo <= o and o + run_bytes <= self.sieve_hi:
                continue
            lo = o
            hi = min(o + self.sieve, region_hi)
            if hi - lo < run_bytes:
                hi = lo + run_bytes
            self.fetch(lo, hi - lo)
            self.sieve_lo, self.sieve_hi = lo, hi
