"""The model: how long a Layout + Access + Stack + task count takes on a calibrated platform.

One explicit formula, evaluated on the requests the HDF5 library makes for the reads:

    time = sum over storage requests  (latency(pattern) + size / rate(size, pattern))      I/O
                                      (+ cold_extra_s per strided cold request the library makes)
         + bytes decoded / decode rate(codec, compression ratio) + decodes x decode_chunk_s  decode
         + calls x call_s + chunks visited x chunk_s(visits per call) + runs x piece_s
         + bytes / copy_Bps                                                                CPU
    with N tasks:  I/O_storage / S_io(N) + (I/O_page-cache + decode + CPU) / S_cpu(N) + open
    on M nodes of N tasks each:  max(I/O / (M S_io(N)), cold bytes / B) + (decode + CPU) / (M S_cpu(N)) + open
                   B: the shared file system's aggregate bandwidth, profile.parallel["shared_fs_Bps"]
                   when calibrated; without it each node's storage bandwidth is assumed to add up

The counts of runs, chunks touched and partial chunks are climio.dataset.layout's (one geometry for the
model, the planner and the trace analysis); the requests come from that geometry and what HDF5
does with it, simulated read by read in the order the program reads:
  * contiguous data: one request per contiguous run; runs shorter than the sieve buffer (64 KiB)
    are served by a sieve read of 64 KiB starting at the run, which later runs inside it reuse;
  * chunked data: every chunk a read touches is fetched whole (stored size) and decoded when
    compressed, unless the chunk cache still holds it from an earlier read. The cache is
    HDF5's as the library runs it (climio.model.chunk_cache: one H5Dread per read visiting its
    chunks in chunk-index order, hash slots whose collisions evict, w0 pruning), with the cache
    the stack really opens the variable with (read from the library by the caller) or, without
    a file, the profile's for the stack; a chunk larger than the cache is never cached. An
    uncompressed chunk larger than the cache is read directly: only the runs the read needs,
    through the sieve;
  * the page cache: a request whose pages were all fetched before is a "warm" request (the
    warm latency and rate: a copy by the CPU, so it scales with the cores); otherwise its new
    pages are a cold request, "sequential" when they continue a region already fetched or the
    previous request, else "strided", and its other pages a warm one. With the device's
    read_ahead_kb in the profile, the kernel's readahead decides which pages a cold request
    brings in (_Storage: random reads fetch their own pages, streams fetch windows ahead).
Reads beyond a window (SIM_REQUESTS requests) are not simulated one by one: the first reads are,
and the counts are scaled by reads / reads simulated.

The path through the thesis's flowchart (Fig. 7.1: contiguous or chunked, sequential or not,
whole or partial chunks, compressed, parallel) is returned with the breakdown.
"""

import math
from collections import Counter
from dataclasses import dataclass, field

import numpy as np

from climio.dataset import layout as geometry
from climio.base.errors import InputError
from climio.dataset.layout import Layout, format_chunks
from .chunk_cache import CacheSpec, ChunkCache
from .storage import _Storage, _prod, _run_offsets, _run_shape  # noqa: F401  (_Storage: tests read it here)
from .profile import Profile

SIM_REQUESTS = 200_000     # storage requests simulated one by one before scaling
# Stacks that open the HDF5 dataset anew for every read: h5netcdf (1.8) looks the h5py Dataset up on
# each access and lets it go, and HDF5 frees a dataset's chunk cache with its last open handle, so
# every read starts with an empty cache (chunks shared by consecutive reads are decoded again:
# measured 57x the CPU of h5py holding the dataset, on map reads of 39-step zstd chunks).
DATASET_PER_READ = frozenset({"h5netcdf"})
SHARED_FS_KEY = "shared_fs_Bps"   # profile.parallel: aggregate bandwidth of the file system all nodes share


@dataclass
class Counts:
    """What the reads cost in countable units (totals over every read, scaled if sampled)."""
    reads: int = 0
    reads_simulated: int = 0
    calls: float = 0
    pieces: float = 0                  # contiguous runs gathered into the user's buffer
    chunks_visited: float = 0
    chunk_cache_hits: float = 0
    chunk_cache_collisions: float = 0  # cached chunks evicted because another chunk hashed to their slot
    partial_chunks: float = 0
    decodes: float = 0
    bytes_wanted: float = 0
    bytes_decoded: float = 0
    bytes_stored_decoded: float = 0    # the compressed bytes of those decodes (the data's compression ratio)
    requests: dict = field(default_factory=dict)   # (pattern, size) -> count
    max_touched_bytes: int = 0         # most chunk bytes one read touches (chunk cache sizing)

    def cold_bytes(self) -> float:
        """What a cold run of the reads must fetch from storage: every request that is not a
        page-cache re-read (the storage-share check's bytes needed)."""
        return sum(c * s for (p, s), c in self.requests.items() if p != "warm")

    def storage(self, pattern=None) -> tuple:
        n = b = 0.0
        for (p, s), c in self.requests.items():
            if pattern is None or p == pattern:
                n += c
                b += c * s
        return n, b

    def to_dict(self) -> dict:
        d = {k: v for k, v in self.__dict__.items() if k != "requests"}
        by = {}
        for (p, s), c in self.requests.items():
            e = by.setdefault(p, {"requests": 0.0, "bytes": 0.0})
            e["requests"] += c
            e["bytes"] += c * s
        d["storage"] = by
        return d


def _geometry(shape, chunks, start, count) -> tuple:
    """(contiguous runs, chunks touched, partial chunks) of one read, from climio.dataset.layout."""
    return (geometry.contiguous_runs(shape, chunks, start, count),
            geometry.chunks_touched(shape, chunks, start, count),
            geometry.partial_chunks(shape, chunks, start, count))


def _geometry_key(chunks, shape, start, count) -> tuple:
    """What `_geometry` of a read depends on, so that reads that meet the chunk grid alike share one
    evaluation: the count for a contiguous variable; per chunked dimension the chunks spanned and
    the first and last chunk's piece and extent (climio.dataset.layout's pieces: an edge chunk is
    clipped by the array's end)."""
    if chunks is None:
        return tuple(count)
    key = []
    for s, n, c, d in zip(start, count, chunks, shape):
        j0, j1 = s // c, (s + n - 1) // c
        key.append((j1 - j0, min((j0 + 1) * c, s + n) - s, min((j0 + 1) * c, d) - j0 * c,
                    s + n - max(j1 * c, s), min((j1 + 1) * c, d) - j1 * c))
    return tuple(key)


def cache_spec(chunk_cache, stack_rates=None) -> CacheSpec:
    """A CacheSpec from a CacheSpec, dict or (bytes, slots, w0); a bare byte count takes the
    slots and w0 of `stack_rates` (the profile's) or HDF5's defaults."""
    if isinstance(chunk_cache, (int, np.integer)) and not isinstance(chunk_cache, bool):
        nslots = getattr(stack_rates, "chunk_cache_nslots", 0) or 521
        return CacheSpec(int(chunk_cache), int(nslots), float(getattr(stack_rates, "chunk_cache_w0", 0.75)))
    return CacheSpec.of(chunk_cache)


def task_bounds(n: int, tasks: int) -> list:
    """Where each task's reads start: `tasks` consecutive groups as equal as possible, as the
    measuring runner splits them (climio.measure.tasks.split)."""
    return [round(i * n / tasks) for i in range(tasks + 1)]


def simulate(layout: Layout, reads, chunk_cache, profile: Profile, max_requests=SIM_REQUESTS, tasks: int = 1,
             cache_per_read: bool = False, max_visits=None, direct_sieve: bool = True) -> Counts:
    """Counts of the reads (a list of (start, count)) against `layout`, in the order given, through
    the chunk cache `chunk_cache` (a CacheSpec, or its bytes with HDF5's default slots). With
    `tasks` tasks each opens the file: its consecutive share of the reads runs through a cache of
    its own (the page cache is shared). `cache_per_read`: every read starts with an empty chunk
    cache (a stack in DATASET_PER_READ). `max_visits`: also stop (and scale) past this many chunk
    visits (the layout search's first, sampled stage: reads served by the chunk cache make no
    requests, so the request window alone does not bound the work). `direct_sieve`: uncompressed
    chunks too large for the cache are read through the sieve, else one request per piece
    (StackRates.direct_sieve)."""
    shape, isz = layout.shape, layout.itemsize
    reads = list(reads)
    _check_reads(reads, shape)
    chunks = layout.chunks
    end = (layout.stored if layout.compressed and layout.stored else layout.allocated_bytes) if chunks is not None \
        else layout.nbytes
    st = _Storage(profile.page_bytes, profile.sieve_bytes, profile.readahead_bytes, end)
    cnt = Counts(reads=len(reads))
    task_starts = set(task_bounds(len(reads), tasks)[1:-1]) if tasks > 1 else set()
    if chunks is not None:
        grid = geometry.chunk_grid(shape, chunks)
        cbytes = layout.chunk_nbytes
        stored_chunk = max(1, round(layout.stored * cbytes / max(layout.allocated_bytes, 1))) if layout.compressed \
            else cbytes
        spec = cache_spec(chunk_cache)
        cache = ChunkCache(shape, chunks, isz, spec, filtered=layout.compressed)
        gstrides = [_prod(grid[i + 1:]) for i in range(len(grid))]
    simulated = 0
    geometry_of = {}
    steady = (_Steady(reads, chunks, task_starts, cache_per_read, not (layout.compressed or cache.cacheable))
              if chunks is not None else None)
    i = 0
    while i < len(reads):
        start, count = reads[i]
        if simulated and (sum(st.req.values()) >= max_requests
                          or (max_visits is not None and cnt.chunks_visited >= max_visits)):
            break
        if i in task_starts:      # the next task's own open: its readahead state and chunk cache
            st.new_file()
        if chunks is not None and i and (i in task_starts or cache_per_read):
            cnt.chunk_cache_collisions += cache.counts.collisions
            cache = ChunkCache(shape, chunks, isz, spec, filtered=layout.compressed)
        simulated += 1
        cnt.calls += 1
        cnt.bytes_wanted += _prod(count) * isz
        # the geometry (runs, chunks touched, partial chunks) is climio.dataset.layout's; what follows
        # places the requests it makes on disk, through the page cache, sieve and chunk cache
        key = _geometry_key(chunks, shape, start, count)
        if key not in geometry_of:
            geometry_of[key] = _geometry(shape, chunks, start, count)
        runs, touched, partial = geometry_of[key]
        cnt.pieces += runs
        if chunks is None:
            run_len, last = _run_shape(count, shape)
            offs = _run_offsets(start, count, shape, last) * isz
            st.contig(offs, run_len * isz, layout.nbytes)
            i += 1
            continue
        cnt.chunks_visited += touched
        cnt.partial_chunks += partial
        cnt.max_touched_bytes = max(cnt.max_touched_bytes, touched * cbytes)
        _chunked_read(st, cache, cnt, layout, start, count, gstrides, stored_chunk, direct_sieve)
        skipped = steady.after(i, touched, cnt, st, cache, max_requests, max_visits)
        simulated += skipped
        i += 1 + skipped
    cnt.reads_simulated = simulated
    if chunks is not None:
        cnt.chunk_cache_collisions += cache.counts.collisions
    return _scaled(cnt, st.req, len(reads), simulated)


def _chunked_read(st, cache, cnt, layout, start, count, gstrides, stored_chunk, direct_sieve) -> None:
    """One H5Dread of a chunked variable: its chunks in chunk-index order through the chunk cache,
    the misses fetched (whole, and decoded when compressed) or read directly."""
    cbytes = cache.chunk_size
    for combo, hit in cache.read(start, count):
        if hit:
            cnt.chunk_cache_hits += 1
            continue
        base = sum(j * g for (j, _), g in zip(combo, gstrides)) * stored_chunk
        if layout.compressed or cache.cacheable:
            st.fetch(base, stored_chunk)
            st.sieve_lo = st.sieve_hi = -1
            if layout.compressed:
                cnt.decodes += 1
                cnt.bytes_decoded += cbytes
                if layout.stored_bytes is not None:     # unknown stored size: no ratio, the base rate
                    cnt.bytes_stored_decoded += stored_chunk
        else:   # uncompressed, too large for the cache: direct reads of the runs needed
            _direct_reads(st, combo, start, count, layout.chunks, layout.itemsize, base, cbytes, direct_sieve)


STEADY_TALLY = ("calls", "bytes_wanted", "pieces", "chunks_visited", "partial_chunks", "chunk_cache_hits", "decodes",
                "bytes_decoded", "bytes_stored_decoded", "chunk_cache_collisions")


class _Steady:
    """Reads that repeat, counted without being walked (issue 34: `advise` spent its time walking
    the same 3,650 chunk misses read after read, and the same few chunk hits). Two cases, both exact:

    * a fixed point: a read that leaves the simulation's state as it found it (the chunk cache's
      entries in list order with their unread bytes; the page cache's pages, readahead and sieve)
      leaves it so again for every next read with the same signature, and adds the same counts;
    * all hits: a read whose every chunk was in the cache and that left the list in the same
      order; hits evict nothing and fetch nothing, so every next read of the same chunks hits
      too, and only the entries' unread bytes move (by the same pieces, down to 0).

    The signature: per dimension the first and last chunk index and the first and last piece's
    length (the offset in the chunk too when chunks are read directly). Those reads are added at
    once, up to the window the walk stops at and the next task's start: the counts equal the
    walk's (tests/test_predict_steady.py). Checked only on reads visiting at least an eighth of the
    cache's entries, and after a failed check only every 2, 4, ... MAX_GAP reads, so that the
    checks cost little where nothing repeats."""
    MAX_GAP = 256

    def __init__(self, reads, chunks, task_starts, per_read: bool, offsets: bool):
        self.reads, self.chunks, self.task_starts = reads, chunks, task_starts
        self.per_read, self.offsets = per_read, offsets
        self.prev = None                # (read index, state, unread bytes, tally, requests) after the last read checked
        self.gap, self.next_check = 1, 0    # after a failed check the next is further on (up to MAX_GAP reads)

    def sig(self, i) -> tuple:
        start, count = self.reads[i]
        out = []
        for s, n, c in zip(start, count, self.chunks):
            lo, hi = s // c, (s + n - 1) // c
            out.append((lo, hi, min((lo + 1) * c, s + n) - s, s + n - max(hi * c, s), s - lo * c if self.offsets else 0))
        return tuple(out)

    def _snapshot(self, i, cnt, st, cache) -> tuple:
        entries = []
        if not self.per_read:       # a cache per read: every read starts with an empty one
            e = cache.head
            while e is not None:
                entries.append(e)
                e = cache.next[e]
        state = (tuple(entries), len(st.seen), st.prev_end, st.prev_page, st.ra_start, st.ra_size, st.ra_async,
                 st.mark, st.sieve_lo, st.sieve_hi)
        tally = tuple(getattr(cnt, k) for k in STEADY_TALLY[:-1]) + (cnt.chunk_cache_collisions
                                                                      + cache.counts.collisions,)
        return i, state, tuple(cache.rd_count[e] for e in entries), tally, Counter(st.req)

    def after(self, i, touched, cnt, st, cache, max_requests, max_visits) -> int:
        """Read i is done: the reads after it that repeat it, their counts added to `cnt`, `st.req`
        and the cache's unread bytes (0: none)."""
        if touched * 8 < cache.nused or i in self.task_starts or i < self.next_check - 1:
            self.prev = None
            return 0
        prev, now = self.prev, self._snapshot(i, cnt, st, cache)
        self.prev = now
        if prev is None or prev[0] != i - 1:
            return 0
        d = [a - b for a, b in zip(now[3], prev[3])]
        dreq = now[4] - prev[4]
        hits = d[STEADY_TALLY.index("chunk_cache_hits")] == d[STEADY_TALLY.index("chunks_visited")] and not dreq
        if prev[1] != now[1] or not (hits or prev[2] == now[2]):
            self.gap = min(2 * self.gap, self.MAX_GAP)
            self.next_check = i + self.gap
            return 0
        self.gap = 1
        m = self._run(i, sum(dreq.values()), d[STEADY_TALLY.index("chunks_visited")], cnt, st, max_requests,
                      max_visits)
        if m:
            for k, dk in zip(STEADY_TALLY, d):
                setattr(cnt, k, getattr(cnt, k) + m * dk)
            for k, v in dreq.items():
                st.req[k] += m * v
            if hits:
                _unread_after(cache, now[1][0], prev[2], now[2], m)
            self.prev = None
        return m

    def _run(self, i, dr, dv, cnt, st, max_requests, max_visits) -> int:
        """How many reads after read i have its signature, before the next task and the window's end
        (the walk stops once `max_requests` requests or `max_visits` visits are reached)."""
        room = [(limit - have) / step for limit, have, step in ((max_requests, sum(st.req.values()), dr),
                (max_visits, cnt.chunks_visited, dv)) if limit is not None and step > 0]
        cap = min([max(0, math.ceil(r)) for r in room], default=len(self.reads))
        sig, m = self.sig(i), 0
        while m < cap and i + 1 + m < len(self.reads) and (i + 1 + m) not in self.task_starts \
                and self.sig(i + 1 + m) == sig:
            m += 1
        return m


def _unread_after(cache, entries, before, after, m) -> None:
    """The cache's unread bytes per entry after `m` more all-hit reads that each read what the
    last one did (before - after, while something was left to read)."""
    for e, b, a in zip(entries, before, after):
        if a:
            left = max(0, a - m * (b - a))
            cache.rd_count[e] = left
            if left == 0:
                cache.nfull += 1


def _check_reads(reads, shape) -> None:
    """A one-line InputError when the first or last read is outside the variable."""
    for s, c in reads[:1] + reads[-1:]:
        if len(s) != len(shape) or any(a < 0 or b < 1 or a + b > d for a, b, d in zip(s, c, shape)):
            raise InputError(f"read start {list(s)} count {list(c)} outside the variable of shape "
                             f"{format_chunks(shape)}")


def _direct_reads(st, combo, start, count, chunks, isz, base, cbytes, sieve: bool) -> None:
    """An uncompressed chunk too large for the chunk cache: direct reads of the runs of it that the
    read (start, count) needs, through the sieve (`sieve`) or one pread per piece."""
    m = [x for _, x in combo]
    lo = [max(j * c, s) - j * c for (j, _), s, c in zip(combo, start, chunks)]
    rl, lst = _run_shape(m, chunks)
    if sieve:
        st.contig(_run_offsets(lo, m, chunks, lst) * isz + base, rl * isz, base + cbytes)
        return
    rm, lm = _run_shape(m, count)       # a piece is contiguous both in the chunk and in the read's buffer
    if lm > lst:
        rl, lst = rm, lm
    for o in _run_offsets(lo, m, chunks, lst) * isz + base:
        st.fetch(int(o), rl * isz)


SCALED_COUNTS = ("calls", "pieces", "chunks_visited", "chunk_cache_hits", "chunk_cache_collisions", "partial_chunks",
                 "decodes", "bytes_wanted", "bytes_decoded", "bytes_stored_decoded")


def _scaled(cnt: Counts, requests: dict, n: int, simulated: int) -> Counts:
    """`cnt` of the first `simulated` of `n` reads scaled to all n, with the storage `requests`."""
    scale = n / simulated if simulated else 0.0
    if scale != 1.0:
        for k in SCALED_COUNTS:
            setattr(cnt, k, getattr(cnt, k) * scale)
    cnt.requests = {k: v * scale for k, v in requests.items()}
    return cnt


# --- time ---------------------------------------------------------------------------------------------

@dataclass
class Prediction:
    seconds: float
    io_s: float
    decode_s: float
    cpu_s: float
    open_s: float
    tasks: int
    speedup_io: float
    speedup_cpu: float
    serial_s: float
    stack: str
    layout: dict
    counts: Counts
    path: list
    bound: str
    platform_id: str
    passes: int = 1
    notes: list = field(default_factory=list)
    nodes: int = 1                     # `tasks` run on each of `nodes` nodes
    chunk_cache: dict = None           # the chunk cache simulated: {nbytes, nslots, w0, source}

    @property
    def total_s(self) -> float:
        """The reads plus opening the file (`seconds` is the reads alone, what --check times)."""
        return self.seconds + self.open_s

    @property
    def parallel_factor(self) -> float:
        return self.serial_s / self.seconds if self.seconds else 1.0

    def to_dict(self) -> dict:
        d = {k: v for k, v in self.__dict__.items() if k != "counts"}
        d["counts"] = self.counts.to_dict()
        d["parallel_factor"] = self.parallel_factor
        d["total_s"] = self.total_s
        return d

    def lines(self) -> list:
        c = self.counts
        n_cold, b_cold = (c.storage("sequential")[i] + c.storage("strided")[i] for i in (0, 1))
        n_warm, b_warm = c.storage("warm")
        where = f" per node on {self.nodes} nodes" if self.nodes > 1 else ""
        out = [f"predicted {self.seconds:.3g} s of reads + {self.open_s:.2g} s open ({self.bound}-bound; {self.tasks} task{'s' if self.tasks != 1 else ''}"
               f"{where}, {self.stack}, profile {self.platform_id})",
               f"  I/O     {self.io_s:9.3g} s  {n_cold:.0f} storage requests ({_mib(b_cold)}) + {n_warm:.0f} from "
               f"the page cache ({_mib(b_warm)})",
               f"  decode  {self.decode_s:9.3g} s  {_mib(c.bytes_decoded)} decoded in {c.decodes:.0f} chunk decodes",
               f"  CPU     {self.cpu_s:9.3g} s  {c.calls:.0f} calls, {c.chunks_visited:.0f} chunk visits "
               f"({c.chunk_cache_hits:.0f} cache hits), {c.pieces:.0f} runs, {_mib(c.bytes_wanted)} delivered",
               *([f"  chunk cache {_mib(self.chunk_cache['nbytes'])}, {self.chunk_cache['nslots']} slots, "
                  f"w0 {self.chunk_cache['w0']:g} ({self.chunk_cache.get('source', '')})"]
                 if self.chunk_cache and self.layout.get("chunks") else []),
               f"  open    {self.open_s:9.3g} s",
               f"  parallel factor {self.parallel_factor:.2f}x (I/O {self.speedup_io:.2f}x, CPU {self.speedup_cpu:.2f}x "
               f"with {self.tasks} tasks{where}; serial {self.serial_s:.3g} s)"]
        out.append("  flowchart: " + " -> ".join(self.path))
        out += [f"  note: {n}" for n in self.notes]
        return out


def _mib(b) -> str:
    return f"{b / 2**20:.1f} MiB"


def time_of(counts: Counts, stack: str, profile: Profile, codec: str = "", itemsize: int = None) -> dict:
    """The formula on counts: seconds per component (serial, one pass)."""
    sr = profile.stack(stack)
    io = warm = 0.0
    for (p, size), n in counts.requests.items():
        t = n * (profile.latency(p) + size / profile.rate(p, size))
        if p == "strided":
            t += n * profile.cold_extra_s
        io += t
        if p == "warm":
            warm += t
    ratio = counts.bytes_decoded / counts.bytes_stored_decoded if counts.bytes_stored_decoded else None
    decode = (counts.bytes_decoded / profile.decode(codec, ratio, itemsize) + counts.decodes * profile.decode_chunk_s
              if counts.bytes_decoded else 0.0)
    per_call = counts.chunks_visited / counts.calls if counts.calls else 0.0
    cpu = (counts.calls * sr.call_s + counts.chunks_visited * sr.chunk_visit_s(per_call) + counts.pieces * sr.piece_s
           + counts.bytes_wanted / sr.copy_Bps)
    # io_warm_s: the part served by the page cache, a copy by the CPU (it scales with cores, not storage)
    return {"io_s": io, "io_warm_s": warm, "decode_s": decode, "cpu_s": cpu, "open_s": sr.open_s}


def flowchart_path(layout: Layout, counts: Counts, codec: str, tasks: int, nodes: int = 1) -> list:
    """The branch of the thesis's Fig. 7.1 these reads take."""
    path = []
    n_cold, b_cold = (counts.storage("sequential")[i] + counts.storage("strided")[i] for i in (0, 1))
    seq_share = counts.storage("sequential")[1] / b_cold if b_cold else 1.0
    size = b_cold / n_cold if n_cold else 0
    if layout.chunks is None:
        path.append("contiguous")
        per_read = counts.pieces / counts.calls if counts.calls else 0
        if per_read <= 1.0:
            path.append("sequential (one run per read)")
        else:
            run = counts.bytes_wanted / counts.pieces if counts.pieces else 0
            path.append(f"non-sequential ({per_read:.0f} runs of {_kib(run)} per read)")
    else:
        path.append(f"chunked {format_chunks(layout.chunks)}")
        if counts.partial_chunks:
            share = counts.partial_chunks / counts.chunks_visited if counts.chunks_visited else 0
            amp = counts.bytes_decoded / counts.bytes_wanted if layout.compressed and counts.bytes_wanted else None
            path.append(f"partial chunks ({100 * share:.0f}% of chunks visited"
                        + (f", {amp:.1f}x decoded per byte wanted" if amp else "") + ")")
        else:
            path.append("whole chunks")
        if layout.compressed:
            path.append(f"compressed ({codec or 'codec unknown'})")
        else:
            path.append("uncompressed")
    path.append(f"storage requests of {_kib(size)} ({100 * seq_share:.0f}% sequential)" if n_cold
                else "served by the page cache")
    if tasks > 1:
        path.append(f"{tasks} tasks")
    if nodes > 1:
        path.append(f"{nodes} nodes")
    return path


def _kib(b) -> str:
    return f"{b / 2**20:.1f} MiB" if b >= 2**20 else f"{b / 1024:.1f} KiB"


def predict(layout: Layout, reads, stack: str, profile: Profile, tasks: int = 1, codec: str = "",
            chunk_cache=None, passes: int = 1, counts: Counts = None, nodes: int = 1,
            chunk_cache_bytes=None) -> Prediction:
    """Predicted wall time of `reads` (a list of (start, count)), `passes` times over, with
    `tasks` tasks on each of `nodes` nodes sharing the reads, through `stack`. `chunk_cache` is
    the cache the stack really has for the variable (a CacheSpec or its dict, read from the
    library with climio.measure.stacks.chunk_cache_of when there is a file); None: the profile's for the
    stack. `chunk_cache_bytes` (older spelling) gives the bytes with the profile's slots and w0."""
    if not isinstance(tasks, int) or tasks < 1:
        raise InputError(f"--tasks {tasks!r} must be a positive integer")
    if not isinstance(nodes, int) or nodes < 1:
        raise InputError(f"nodes {nodes!r} must be a positive integer")
    sr = profile.stack(stack)
    if layout.compressed and not codec:
        codec = "deflate4+shuffle"
    if chunk_cache is not None:
        spec, source = cache_spec(chunk_cache, sr), "the library's for this variable"
    elif chunk_cache_bytes is not None:
        spec, source = cache_spec(int(chunk_cache_bytes), sr), "the size asked, the profile's slots"
    else:
        spec, source = cache_spec(int(sr.chunk_cache_bytes), sr), f"the profile's for {stack}"
    cache = spec.nbytes
    if counts is None:
        counts = simulate(layout, reads, spec, profile, tasks=min(tasks, max(len(reads), 1)),
                          cache_per_read=stack in DATASET_PER_READ, direct_sieve=sr.direct_sieve)
    t = time_of(counts, stack, profile, codec, layout.itemsize)
    s_io, s_cpu = profile.speedup("io", tasks), profile.speedup("cpu", tasks)
    serial = passes * (t["io_s"] + t["decode_s"] + t["cpu_s"])
    # per pass: storage requests scale with the storage's parallel speed-up, page-cache copies with the CPU's
    io_pass = ((t["io_s"] - t["io_warm_s"]) / s_io + t["io_warm_s"] / s_cpu) / nodes
    notes = []
    if nodes > 1:
        ceiling = profile.parallel.get(SHARED_FS_KEY)
        if ceiling:
            io_pass = max(io_pass, counts.cold_bytes() / float(ceiling))
        else:
            notes.append(f"{nodes} nodes: the profile has no shared-file-system bandwidth ({SHARED_FS_KEY}), so each "
                         "node's storage bandwidth is assumed to add up")
    wall = passes * (io_pass + (t["decode_s"] + t["cpu_s"]) / s_cpu / nodes)
    bound = max((("I/O", t["io_s"]), ("decode", t["decode_s"]), ("CPU", t["cpu_s"])), key=lambda kv: kv[1])[0]
    if counts.reads_simulated < counts.reads:
        notes.append(f"{counts.reads_simulated} of {counts.reads} reads simulated one by one; counts scaled")
    if layout.chunks is not None and layout.compressed and counts.max_touched_bytes > cache and counts.partial_chunks:
        notes.append(f"one read touches {_mib(counts.max_touched_bytes)} of chunks, more than the "
                     f"{_mib(cache)} chunk cache: chunks shared by consecutive reads are decoded again")
    return Prediction(seconds=wall, io_s=passes * io_pass,
                      decode_s=passes * t["decode_s"] / s_cpu / nodes,
                      cpu_s=passes * t["cpu_s"] / s_cpu / nodes, open_s=t["open_s"], tasks=tasks, speedup_io=s_io,
                      speedup_cpu=s_cpu, serial_s=serial, stack=stack, layout=layout.to_dict(), counts=counts,
                      path=flowchart_path(layout, counts, codec, tasks, nodes), bound=bound,
                      platform_id=profile.platform_id, passes=passes, notes=notes, nodes=nodes,
                      chunk_cache={**spec.to_dict(), "source": source})
