"""One chunk shape for several read patterns (issue 26, part 3; the thesis's open problem): search
the chunk shapes whose length per axis is a divisor of the dimension or a power of two (and the
whole dimension), within a chunk-byte range, and return the one that minimises the predicted
time of the whole mix (each pattern's reads x its passes, through the model with the stack's
chunk cache) plus the one-off conversion (the rechunk planner's prediction, the number
`climio rechunk --dry-run` gives). Pure: the caller gives the conversion cost as a function.

    candidates(shape, itemsize, low, high) -> [chunk shape]
    search(layout, codec, mix, stack, profile, convert_s, ..., progress=) -> SearchResult
    search_exhaustive(...)      the search before issue 34: the reference of tests and bench/advise_speed.py

The exhaustive search priced every candidate (up to 4,000) on a sample of each pattern's reads
(SAMPLE_REQUESTS storage requests or SAMPLE_VISITS chunk visits simulated, counts scaled, as the
model does beyond its window), then the best `refine` on all reads: minutes to hours on a
CMIP-sized variable. The fast search (issue 34) screens every candidate in closed form
(model.layout_estimate), simulates a shortlist, walks the lattice around its best, and prices
the best few on all reads (see `search`); tests/test_layout_search_fast.py holds its answer
within 2% of the exhaustive one's predicted total.

Contiguous storage is a candidate too (HDF5 stores it uncompressed): for maps read whole it makes
one request per map and decodes nothing, and on this machine's measurements it beat every chunk
shape that kept deflate on map-heavy mixes. Storing a compressed variable uncompressed trades disk
for speed, so each candidate carries its stored bytes, and `keep_codec` leaves contiguous out of
a compressed variable's search.
"""

import itertools
import math
from dataclasses import dataclass, field

from climio.base.errors import InputError
from climio.dataset.layout import Layout, format_chunks
from ..rules.chunks import ADVISED_MAX_CHUNK_BYTES, SMALL_CHUNK_BYTES
from . import layout_estimate as estimate
from . import predict as model

SAMPLE_REQUESTS = 4_000
SAMPLE_VISITS = 20_000      # chunk visits simulated per pattern in the sampled stage
MAX_CANDIDATES = 4_000
# the fast search (issue 34): its stages' sizes, chosen on bench/advise_speed.py's file
SHORTLIST = 12              # candidates simulated after the closed-form screen
FAST_SAMPLE_REQUESTS, FAST_SAMPLE_VISITS = 1_000, 5_000    # their sample of each pattern's reads
NEIGHBOUR_SEEDS = 2         # the best sampled shapes whose lattice neighbours are simulated next
NEIGHBOUR_ROUNDS = 1
REFINE = 4                  # the best sampled priced on all their reads (_finish)


@dataclass
class Pattern:
    name: str               # xy | xt | a template: how the caller names it
    reads: list             # [(start, count)] in program order
    passes: int = 1


@dataclass
class Candidate:
    chunks: object          # tuple, or None for contiguous
    per_pattern: dict       # name -> predicted seconds over its passes
    reads_s: float
    convert_s: float
    codec: str = ""         # the candidate's stored codec ("none": uncompressed)
    stored_bytes: int = 0   # the variable's bytes on disk in this layout (estimated at the source's ratio)

    @property
    def total_s(self) -> float:
        return self.reads_s + self.convert_s

    def to_dict(self) -> dict:
        return {"chunks": list(self.chunks) if self.chunks else "contiguous", "per_pattern_s": self.per_pattern,
                "reads_s": self.reads_s, "convert_s": self.convert_s, "total_s": self.total_s,
                "codec": self.codec, "stored_bytes": self.stored_bytes}


@dataclass
class SearchResult:
    best: Candidate
    current: Candidate
    ranked: list                        # the refined candidates, best first
    searched: int                       # candidates priced on the sample
    bounds: tuple                       # (low, high) chunk bytes
    notes: list = field(default_factory=list)

    def to_dict(self) -> dict:
        return {"best": self.best.to_dict(), "current": self.current.to_dict(),
                "ranked": [c.to_dict() for c in self.ranked], "searched": self.searched,
                "chunk_bytes": list(self.bounds), "notes": self.notes}


def axis_lengths(n: int) -> list:
    """Chunk lengths for an axis of length n: its divisors and the powers of two below it."""
    out = {d for d in range(1, int(math.isqrt(n)) + 1) if n % d == 0}
    out |= {n // d for d in out}
    p = 1
    while p < n:
        out.add(p)
        p *= 2
    return sorted(out)


def candidates(shape, itemsize, low=SMALL_CHUNK_BYTES, high=ADVISED_MAX_CHUNK_BYTES, limit=MAX_CANDIDATES) -> list:
    """Every chunk shape of per-axis lengths from axis_lengths with low <= bytes <= high; a
    variable smaller than `low` has its whole shape as the one candidate. Past `limit` shapes the
    per-axis lengths are thinned (every other length, the ends kept) until it fits."""
    per = [axis_lengths(int(n)) for n in shape]
    while True:
        out = [c for c in itertools.product(*per) if low <= math.prod(c) * itemsize <= high]
        if len(out) <= limit or all(len(p) <= 2 for p in per):
            break
        per = [p if len(p) <= 2 else sorted(set(p[::2]) | {p[-1]}) for p in per]
    if not out:
        out = [tuple(int(n) for n in shape)] if math.prod(shape) * itemsize < low else []
    return out


def _price(layout, codec, mix, stack, profile, tasks, chunk_cache, max_requests, max_visits=None, memo=None) -> dict:
    """Predicted seconds of each pattern over its passes. A prediction is linear in the passes, so
    `memo` (a dict the caller keeps) holds one pass per (layout, pattern, stage): searches of several
    mixes of the same patterns (climio bench layouts) simulate each pattern once per shape."""
    sr = profile.stack(stack)
    spec = model.cache_spec(chunk_cache if chunk_cache is not None else int(sr.chunk_cache_bytes), sr)
    per = {}
    for pat in mix:
        key = (layout, pat.name, len(pat.reads), tuple(map(tuple, pat.reads[0])) if pat.reads else (),
               max_requests, max_visits, codec, stack, tasks, spec)
        one = memo.get(key) if memo is not None else None
        if one is None:
            counts = model.simulate(layout, pat.reads, spec, profile, max_requests=max_requests,
                                    cache_per_read=stack in model.DATASET_PER_READ, direct_sieve=sr.direct_sieve,
                                    max_visits=max_visits,
                                    tasks=min(tasks, max(len(pat.reads), 1)))
            one = model.predict(layout, pat.reads, stack, profile, tasks=tasks,
                                codec=codec if layout.compressed else "", chunk_cache=spec, counts=counts).seconds
            if memo is not None:
                memo[key] = one
        per[pat.name] = one * pat.passes
    return per


def _stored(src: Layout, chunks) -> int:
    """Stored bytes of the variable in `chunks`, at the source's compression ratio."""
    dst = Layout(src.shape, src.itemsize, chunks, src.compressed)
    if not src.compressed or not src.stored:
        return None
    return max(1, round(dst.allocated_bytes * src.stored / max(src.allocated_bytes, 1)))


def _setup(layout, codec, mix, low, high, keep_codec, contiguous_ok) -> tuple:
    """(candidates, the pool searched: candidates + contiguous when allowed, lay_of(chunks) -> Layout,
    candidate(layout, per pattern, conversion) -> Candidate); one-line errors for a bad search."""
    if not mix:
        raise InputError("a layout search needs at least one read pattern")
    names = [p.name for p in mix]
    if len(set(names)) != len(names):
        raise InputError(f"read patterns named twice: {', '.join(names)}")
    shape, isz = layout.shape, layout.itemsize
    cands = candidates(shape, isz, low, high)
    if not cands:
        raise InputError(f"no chunk shape of {format_chunks(shape)} x {isz} B lies between {low} and {high} bytes")
    pool = cands + [None] if contiguous_ok and not (keep_codec and layout.compressed) else list(cands)

    def lay_of(ch):
        if ch is None:
            return Layout(shape, isz, None)
        return Layout(shape, isz, ch, layout.compressed, _stored(layout, ch))

    def candidate(lay, per, convert):
        return Candidate(lay.chunks, per, sum(per.values()), convert, codec if lay.compressed else "none",
                         int(lay.stored if lay.compressed else lay.allocated_bytes))
    return cands, pool, lay_of, candidate


def _finish(layout, codec, mix, stack, profile, convert_s, tasks, chunk_cache, finalists, searched, bounds, memo,
            lay_of, candidate) -> SearchResult:
    """`finalists` priced on every chunk visit of their reads plus conversion, ranked against the
    current layout priced the same way, as the workflow's own prediction is (predict._Steady counts
    the reads that repeat without walking them). A sample of 30,000 visits scaled to all reads had
    counted the first series' decodes once per sampled share: a t read of a 730-day tas in [1,90,180]
    maps said "now 137 s" beside the workflow's 47.8 s in one `climio advise` output."""
    ranked = []
    for ch in finalists:
        lay = lay_of(ch)
        per = _price(lay, codec, mix, stack, profile, tasks, chunk_cache, model.SIM_REQUESTS, None, memo)
        same = (layout.chunks is None and ch is None) or (
            layout.chunks is not None and ch is not None and tuple(layout.chunks) == tuple(ch))
        ranked.append(candidate(lay, per, 0.0 if same else float(convert_s(layout, lay, codec))))
    ranked.sort(key=lambda c: c.total_s if math.isfinite(c.total_s) else math.inf)
    now = _price(layout, codec, mix, stack, profile, tasks, chunk_cache, model.SIM_REQUESTS, None, memo)
    current = candidate(layout, now, 0.0)
    best = ranked[0] if ranked and ranked[0].total_s < current.total_s else current
    notes = []
    if best is current:
        notes.append("no searched shape beats the current layout once its conversion is paid")
    elif best.codec == "none" and layout.compressed:
        notes.append(f"stores the variable uncompressed: {best.stored_bytes / 2**20:.0f} MiB on disk instead of "
                     f"{current.stored_bytes / 2**20:.0f} MiB (keep_codec / --keep-codec searches only shapes that "
                     f"keep {codec or 'its codec'})")
    return SearchResult(best, current, ranked, searched, bounds, notes)


def _screen(layout, codec, mix, stack, profile, tasks, chunk_cache, pool, lay_of) -> list:
    """[(estimated seconds of the mix, chunks)] of every candidate in `pool`, closed form
    (model.layout_estimate) for patterns that tile a grid; None when a pattern does not (then the
    caller simulates every candidate, as the exhaustive search does)."""
    sr = profile.stack(stack)
    spec = model.cache_spec(chunk_cache if chunk_cache is not None else int(sr.chunk_cache_bytes), sr)
    axes = [estimate.axes_of(p.reads) for p in mix]
    if any(a is None for a in axes):
        return None
    per_read = stack in model.DATASET_PER_READ
    memos = [[{} for _ in layout.shape] for _ in mix]
    out = []
    for ch in pool:
        lay = lay_of(ch)
        t = sum(p.passes * estimate.estimate(lay, a, stack, profile, spec, codec, tasks, per_read, m)
                for p, a, m in zip(mix, axes, memos))
        out.append((t, ch))
    return out


def _neighbours(ch, shape, isz, low, high) -> list:
    """Shapes one step away on the candidate lattice: one axis to the next or previous allowed length,
    or one up and another down (about the same bytes), within the chunk-byte bounds."""
    steps = []
    for a, n in enumerate(shape):
        ls = axis_lengths(int(n))
        i = ls.index(ch[a]) if ch[a] in ls else None
        steps.append({d: ls[i + d] for d in (-1, 1) if i is not None and 0 <= i + d < len(ls)})
    out = []
    for a in range(len(shape)):
        for d, v in steps[a].items():
            out.append(ch[:a] + (v,) + ch[a + 1:])
            for b in range(len(shape)):
                if b != a and -d in steps[b]:
                    c2 = list(ch)
                    c2[a], c2[b] = v, steps[b][-d]
                    out.append(tuple(c2))
    return [c for c in out if low <= math.prod(c) * isz <= high]


def search(layout: Layout, codec: str, mix, stack: str, profile, convert_s, tasks: int = 1, chunk_cache=None,
           low=SMALL_CHUNK_BYTES, high=ADVISED_MAX_CHUNK_BYTES, refine: int = REFINE, keep_codec: bool = False,
           contiguous_ok: bool = True, memo=None, progress=None, also=()) -> SearchResult:
    """The chunk shape (or contiguous storage, unless `keep_codec` and the variable is compressed)
    minimising the mix's predicted reads plus `convert_s(src, dst, codec)`, the one-off conversion
    (0 for the current layout). `contiguous_ok` False: the variable cannot be stored contiguously
    (HDF5 needs chunks along an unlimited dimension). `memo`: a dict shared by searches of the same
    variable and profile, to price each (shape, pattern) once (see _price). `progress(text)`: told
    what is being priced (the caller shows it; the model prints nothing). `also`: chunk shapes (None:
    contiguous) priced in the final stage whatever the screen says, so that the answer is never
    worse than any of them (one layout for several jobs weighs each job's own best this way).

    Fast (issue 34): every candidate is estimated in closed form (model.layout_estimate), only the
    SHORTLIST best estimated, each pattern's own best few and the current layout are simulated on
    a sample, the lattice around the best sampled is searched coarse-to-fine (NEIGHBOUR_ROUNDS),
    and the best `refine` and the current layout are priced on all reads (_finish). Patterns that do not tile a grid, or a pool small
    enough, are simulated whole as search_exhaustive does (its answer, within 2%, is the test)."""
    say = progress or (lambda text: None)
    cands, pool, lay_of, candidate = _setup(layout, codec, mix, low, high, keep_codec, contiguous_ok)
    memo = {} if memo is None else memo
    sampled = {}

    def sample(chs):
        for ch in chs:
            if ch not in sampled:
                per = _price(lay_of(ch), codec, mix, stack, profile, tasks, chunk_cache, FAST_SAMPLE_REQUESTS,
                             FAST_SAMPLE_VISITS, memo)
                sampled[ch] = sum(per.values())
    screened = None if len(pool) <= 2 * SHORTLIST else _screen(layout, codec, mix, stack, profile, tasks,
                                                                 chunk_cache, pool, lay_of)
    if screened is None:
        say(f"simulating {len(pool)} chunk shapes")
        sample(pool)
    else:
        say(f"{len(pool)} chunk shapes estimated; simulating the best {SHORTLIST}")
        order = [ch for _, ch in sorted(screened, key=lambda x: x[0])]
        short = order[:SHORTLIST] + [None] * (None in pool)
        if layout.chunks is not None and tuple(layout.chunks) in cands:
            short.append(tuple(layout.chunks))
        sample(short)
        for r in range(NEIGHBOUR_ROUNDS):
            top = [ch for ch in sorted(sampled, key=sampled.get) if ch is not None][:NEIGHBOUR_SEEDS]
            near = [c for ch in top for c in _neighbours(ch, layout.shape, layout.itemsize, low, high)
                    if c not in sampled]
            if not near:
                break
            say(f"refining around the best: {len(near)} neighbouring shapes (round {r + 1})")
            sample(near)
    ranked_in = sorted(sampled, key=lambda ch: sampled[ch])[:refine]
    ranked_in += [tuple(ch) if ch is not None else None for ch in also
                  if (tuple(ch) if ch is not None else None) not in ranked_in]
    say(f"pricing the best {len(ranked_in)} on all reads")
    return _finish(layout, codec, mix, stack, profile, convert_s, tasks, chunk_cache, ranked_in, len(cands),
                   (low, high), memo, lay_of, candidate)


def search_exhaustive(layout: Layout, codec: str, mix, stack: str, profile, convert_s, tasks: int = 1,
                      chunk_cache=None, low=SMALL_CHUNK_BYTES, high=ADVISED_MAX_CHUNK_BYTES, refine: int = 12,
                      keep_codec: bool = False, contiguous_ok: bool = True, memo=None) -> SearchResult:
    """The search as it was before issue 34, kept as the reference the fast `search` is tested and
    benchmarked against: every candidate simulated on a sample of each pattern's reads, the best
    `refine` on all reads (minutes to hours on a large variable)."""
    cands, pool, lay_of, candidate = _setup(layout, codec, mix, low, high, keep_codec, contiguous_ok)
    sampled = []
    for ch in pool:
        per = _price(lay_of(ch), codec, mix, stack, profile, tasks, chunk_cache, SAMPLE_REQUESTS, SAMPLE_VISITS, memo)
        sampled.append((sum(per.values()), ch))
    sampled.sort(key=lambda x: x[0])
    return _finish(layout, codec, mix, stack, profile, convert_s, tasks, chunk_cache, [ch for _, ch in sampled[:refine]],
                   len(cands), (low, high), memo, lay_of, candidate)
