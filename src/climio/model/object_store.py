"""The read-time model on object storage (pure): what a read of a Zarr array costs in GETs.

Every request pays a round trip, so a read's time is set by the GETs it makes and how many the
stack keeps in flight:

    StoreRates       one endpoint's measured rates: per-GET latency [s], per-connection and
                     aggregate bandwidth [B/s], and per stack the GET latency and bandwidth it
                     sees and the GETs it really keeps in flight (measured by `climio calibrate
                     --store`); described by the endpoint's URL, never a credential
    read_tasks()     the GETs of one hyperslab as tasks (a task's GETs run one after another):
                     unsharded, one GET per chunk touched; sharded (zarr-python 3's ShardingCodec),
                     per shard touched one GET of the whole shard when the read covers every
                     chunk of the shard's grid (not an edge shard the array's end cuts), else the
                     shard index then each inner chunk's byte range in turn
    predict_read()   tasks scheduled on the stack's concurrency (the next free slot takes the next
                     task: waves when tasks are equal), each GET latency + size / per-connection
                     bandwidth, the whole capped by the aggregate bandwidth; a compressed store's
                     chunks decoded at the codec's calibrated rate, beside the GETs in flight;
                     each hyperslab a call with the stack's fixed cost (slab_s, measured); the CPU
                     side (the stack's per GET, chunk and shard, per byte delivered, a compressed
                     chunk's hand-off to a codec thread, the decoding) in CPU seconds, a chunk's
                     after its GET, their wall time over the share of a core the process got while
                     calibrating (cpu_share: a loaded machine's CPU-bound reads take longer; its
                     GETs were measured under the same load)
"""

import heapq
import itertools
import math
from statistics import median
from dataclasses import asdict, dataclass, field

from climio.dataset.access import slice_starts
from climio.dataset.reads import read_count_of

INDEX_ENTRY_BYTES = 16        # a shard index entry: offset and length, uint64 each (+ a crc32c)


@dataclass
class StackObjectRates:
    latency_s: float              # per GET as the stack sees it
    per_connection_Bps: float
    concurrency: float            # GETs the stack keeps in flight, measured
    aggregate_Bps: float = math.inf      # the best rate the stack reached (many GETs in flight)
    gets_per_s: float = math.inf         # the most GETs per second it completed (small GETs)
    chunk_cpu_s: float = 0.0             # CPU seconds per chunk decoded (zarr's codec pipeline), its GET's not
    #                                      counted where get_cpu_s is measured (older profiles: both in one)
    shard_cpu_s: float = 0.0             # CPU seconds per shard visited beyond its chunks
    # codec label -> B/s of decoded output through this stack's codec pipeline (calibrate --store)
    decode_Bps: dict = field(default_factory=dict)
    slab_s: float = 0.0                  # seconds per hyperslab read beyond its GETs and chunks (one call)
    small_get_s: float = 0.0             # a small GET's seconds inside a one-chunk hyperslab (as measured)
    ranged_latency_s: float = 0.0        # a small byte-range GET's (in a shard), as measured; 0: latency_s
    codec_chunk_s: float = 0.0           # CPU seconds per compressed chunk beyond an uncompressed one's and
    #                                      its decoding (zarr-python's hand-off of each chunk to a codec thread)
    get_cpu_s: float = 0.0               # CPU seconds per GET (the client's request and response handling):
    #                                      a whole shard's one GET serves all its chunks
    byte_cpu_s: float = 0.0              # CPU seconds per decoded byte delivered (the client's buffers, zarr's
    #                                      copy into the output): 1-2 ms a MB here, a large chunk's largest part


@dataclass
class StoreRates:
    endpoint: str                 # the URL (no credentials)
    latency_s: float              # raw ranged GETs: t = latency + size / per_connection
    per_connection_Bps: float
    aggregate_Bps: float
    stacks: dict = field(default_factory=dict)     # stack -> StackObjectRates
    injected_latency_ms: float = 0.0
    source: str = ""
    # the share of a core the CPU side gets: calibrate --store's (a busy loop and each probe read's own CPU
    # over wall beside its probes, the median); 1: a whole core (a profile from before it was measured)
    cpu_share: float = 1.0

    def stack(self, name):
        """The stack's rates; a stack not calibrated reads at the raw GETs' rates with zarr-python's
        default concurrency (10)."""
        return self.stacks.get(name) or StackObjectRates(self.latency_s, self.per_connection_Bps, 10.0)

    def to_dict(self) -> dict:
        return asdict(self)

    @classmethod
    def from_dict(cls, d) -> "StoreRates":
        kw = {k: d[k] for k in cls.__dataclass_fields__ if k in d}
        kw["stacks"] = {k: StackObjectRates(**v) for k, v in (d.get("stacks") or {}).items()}
        return cls(**kw)


def _level(label: str) -> float:
    digits = "".join(ch for ch in str(label).split("+")[0].split(":")[-1] if ch.isdigit())
    return float(digits) if digits else 0.0


def stack_decode(s: StackObjectRates, label: str):
    """(B/s, the label it was measured for) of decoding `label` through the stack, or (None, "")
    when the stack has no rate of the codec's family. The label's own rate first; else the same
    family with the same shuffle (in Zarr a shuffle means blosc, another implementation), the
    nearest level; else the same family's nearest level."""
    from .profile import codec_family
    if not label or label == "none":
        return math.inf, "none"
    rates = s.decode_Bps or {}
    if label in rates:
        return float(rates[label]), label
    fam, shuffled = codec_family(label), "shuffle" in str(label)
    same = [k for k in rates if codec_family(k) == fam]
    pool = [k for k in same if ("shuffle" in k) == shuffled] or same
    if not pool:
        return None, ""
    best = min(pool, key=lambda k: (abs(_level(k) - _level(label)), k))
    return float(rates[best]), best


def store_key(endpoint_url: str, injected_latency_ms: float = 0.0) -> str:
    """The key a store's rates are kept under in the platform profile: the endpoint's URL (and
    the latency the study's own proxy injected, when it did)."""
    key = str(endpoint_url).rstrip("/")
    return f"{key}+{injected_latency_ms:g}ms" if injected_latency_ms else key


def _axis_ranges(start, count, size):
    return [range(s // c, (s + n - 1) // c + 1) for s, n, c in zip(start, count, size)]


def read_tasks(shape, chunks, shards, start, count, itemsize, chunk_nbytes=None) -> list:
    """The GETs of one hyperslab as tasks: a list of tasks, each a list of GET sizes [B] made one
    after another. `chunk_nbytes`: a chunk's stored size (default uncompressed)."""
    cb = chunk_nbytes if chunk_nbytes is not None else math.prod(chunks) * itemsize
    if not shards:
        n = math.prod(len(r) for r in _axis_ranges(start, count, chunks))
        return [[cb]] * n
    per_shard = [s // c for s, c in zip(shards, chunks)]
    inner_total = math.prod(per_shard)
    index = inner_total * INDEX_ENTRY_BYTES + 4
    tasks = []
    for shard in itertools.product(*_axis_ranges(start, count, shards)):
        lo = [i * s for i, s in zip(shard, shards)]
        hi = [min(l + s, n) for l, s, n in zip(lo, shards, shape)]
        a = [max(s, l) for s, l in zip(start, lo)]
        b = [min(s + n, h) for s, n, h in zip(start, count, hi)]
        inner = math.prod(len(range((x - l) // c, (y - 1 - l) // c + 1)) for x, y, l, c in zip(a, b, lo, chunks))
        stored = math.prod(-(-(h - l) // c) for l, h, c in zip(lo, hi, chunks))   # an edge shard holds fewer
        # zarr reads a shard whole only when the read touches every chunk of the shard's grid
        # (ShardingCodec._is_total_shard): never an edge shard that the array's end cuts
        tasks.append([stored * cb + index] if inner == inner_total else Ranged([index] + [cb] * inner))
    return tasks


class Ranged(list):
    """A task of byte-range GETs (a shard's index, then its inner chunks): a stack may cost a ranged
    GET less than a whole object's (s3fs asks a whole object's size first, one more round trip)."""


def cpu_units(shape, chunks, shards, start, count) -> tuple:
    """(chunks decoded, shards visited) by one hyperslab: a shard read whole decodes all its chunks."""
    if not shards:
        return math.prod(len(r) for r in _axis_ranges(start, count, chunks)), 0
    n_chunks = n_shards = 0
    for shard in itertools.product(*_axis_ranges(start, count, shards)):
        lo = [i * s for i, s in zip(shard, shards)]
        hi = [min(l + s, n) for l, s, n in zip(lo, shards, shape)]
        a = [max(s, l) for s, l in zip(start, lo)]
        b = [min(s + n, h) for s, n, h in zip(start, count, hi)]
        n_chunks += math.prod(len(range((x - l) // c, (y - 1 - l) // c + 1)) for x, y, l, c in zip(a, b, lo, chunks))
        n_shards += 1
    return n_chunks, n_shards


def split_cpu(plain, sharded, n_chunks: int, n_shards: int) -> tuple:
    """(CPU s per GET, per chunk, per shard beyond both) from the same `n_chunks` chunks read whole
    as a plain array and in `n_shards` shards: `plain` and `sharded` are (CPU seconds, GETs). What
    the fewer GETs saved is each GET's own CPU (s3fs: 2-3 ms a request through its event loop, against
    0.2 ms a chunk); where sharding saved nothing, all of it is the chunk's and a shard's extra CPU
    is what the sharded read cost beyond its chunks."""
    (cpu_p, gets_p), (cpu_s, gets_s) = plain, sharded
    get = max(0.0, (cpu_p - cpu_s) / (gets_p - gets_s)) if gets_p > gets_s else 0.0
    chunk = max(0.0, (cpu_p - get * gets_p) / n_chunks)
    shard = max(0.0, (cpu_s - get * gets_s - chunk * n_chunks) / n_shards)
    return get, chunk, shard


def byte_cpu(twin_cpu_s: float, raw_bytes: int, chunks: int, get_cpu_s: float, chunk_cpu_s: float) -> float:
    """CPU seconds per byte of an uncompressed read of `chunks` chunks of `raw_bytes` in all, one GET
    each (the decode probe's twin: 8 chunks of 1 MiB), beyond its GETs' and chunks' own CPU."""
    return max(0.0, twin_cpu_s - chunks * (get_cpu_s + chunk_cpu_s)) / raw_bytes if raw_bytes > 0 else 0.0


def decode_rate(raw_bytes: int, twin_cpu, codec_cpu, min_cpu_s: float = 1e-4) -> float:
    """B/s of decoded output from CPU seconds of reads of the same array uncompressed (`twin_cpu`)
    and compressed (`codec_cpu`), made in pairs: the median of the pairs' differences, never below
    the twin's own spread (a difference inside the noise of reading is a bound, not a rate: through
    s3fs a GET's CPU varies by milliseconds, as much as decoding 8 MiB of deflate1 takes)."""
    diffs = [c - t for t, c in zip(twin_cpu, codec_cpu)]
    spread = max(twin_cpu) - min(twin_cpu) if twin_cpu else 0.0
    return raw_bytes / max(median(diffs) if diffs else 0.0, spread, min_cpu_s)


def makespan(durations, slots: float) -> float:
    """Tasks in order on `slots` parallel slots, each taken by the next task when it frees."""
    k = max(1, int(round(slots)))
    if not durations:
        return 0.0
    heap = [0.0] * min(k, len(durations))
    for d in durations:
        t = heapq.heappop(heap)
        heapq.heappush(heap, t + d)
    return max(heap)


def cpu_wall(cpu_s: float, share: float) -> float:
    """Wall seconds of `cpu_s` CPU seconds in a process that gets `share` of a core (0 < share <= 1;
    anything else is taken as a whole core)."""
    return cpu_s / share if 0 < share <= 1 else cpu_s


def predict_read(tasks_per_slab, rates: StoreRates, stack: str, decode_Bps: float = math.inf,
                 chunk_raw_bytes: int = 0, cpu_units=None) -> dict:
    """Seconds to read the hyperslabs one after another (each a list of tasks), and the parts;
    `cpu_units`: per hyperslab (chunks decoded, shards visited), default (its tasks, 0).

    A compressed store's chunks are decoded at `decode_Bps` (B/s of decoded output, the codec's
    calibrated rate) after their GETs: `chunk_raw_bytes` is a chunk's decoded size. Decoding is CPU
    beside the stack's own per chunk: it overlaps the GETs still in flight, but the last task's
    chunks are decoded after the wire is done, so a slab takes
    max(wire + one task's decoding, the stack's CPU + all the decoding), the CPU parts over the
    rates' share of a core (cpu_wall). A compressed chunk (a finite `decode_Bps`) costs the
    stack's codec_chunk_s beside its chunk_cpu_s. cpu_s and decode_s are returned in CPU seconds."""
    s = rates.stack(stack)
    share = rates.cpu_share
    total = io = decode_total = wire_total = cpu_total = 0.0
    gets = nbytes = 0
    compressed = bool(decode_Bps) and math.isfinite(decode_Bps)
    per_chunk = chunk_raw_bytes / decode_Bps if compressed else 0.0
    chunk_cpu = s.chunk_cpu_s + (s.codec_chunk_s if compressed else 0.0) + chunk_raw_bytes * s.byte_cpu_s
    for i, tasks in enumerate(tasks_per_slab):
        ranged = s.ranged_latency_s or s.latency_s
        durs = [sum((ranged if isinstance(task, Ranged) else s.latency_s) + g / s.per_connection_Bps for g in task)
                for task in tasks]
        moved = sum(sum(task) for task in tasks)
        # the GET-rate ceiling was measured with whole-object GETs: a byte range counts as the share
        # of one that its latency is (s3fs: one request of the two a whole object takes)
        part = min(1.0, ranged / s.latency_s) if s.latency_s else 1.0
        weight = sum(len(t) * (part if isinstance(t, Ranged) else 1.0) for t in tasks)
        wire = max(makespan(durs, s.concurrency), moved / min(rates.aggregate_Bps, s.aggregate_Bps),
                   weight / s.gets_per_s)
        # the stack's CPU (one event loop) against the wire: whichever is longer sets the slab's time
        chunks, shards = cpu_units[i] if cpu_units else (len(tasks), 0)
        n_gets = sum(len(t) for t in tasks)
        decode = chunks * per_chunk
        # a chunk's CPU (zarr's pipeline and its decoding) starts when its bytes have arrived: the
        # last task's share of it comes after the wire (all of it when the slab is one GET)
        last = (chunks * chunk_cpu + decode) / len(tasks) if tasks else 0.0
        cpu = n_gets * s.get_cpu_s + chunks * chunk_cpu + shards * s.shard_cpu_s
        # each hyperslab is one call into the stack: its fixed cost is paid before its GETs start
        total += max(wire + cpu_wall(last, share), cpu_wall(cpu + decode, share)) + s.slab_s
        io += max(wire, cpu_wall(cpu, share)) + s.slab_s
        decode_total += decode
        wire_total += wire
        cpu_total += cpu
        gets += n_gets
        nbytes += moved
    # io_s: the same reads with nothing to decode; decode_s: the decoding's CPU seconds (partly hidden)
    # wire_s, cpu_s: the GETs' schedule and the stack's own CPU, each alone (what bounds the read)
    return {"time_s": total, "io_s": io, "decode_s": decode_total, "gets": gets, "bytes": nbytes,
            "wire_s": wire_total, "cpu_s": cpu_total, "cpu_share": share}


def fit_stack(points) -> tuple:
    """(latency_s, per_connection_Bps) from [(GET size, median seconds per GET at concurrency 1)]:
    t = latency + size / bandwidth by least squares (latency >= 0)."""
    pts = sorted(points)
    if len(pts) < 2:
        raise ValueError("two GET sizes at least are needed to fit latency and bandwidth")
    n = len(pts)
    mx = sum(p[0] for p in pts) / n
    my = sum(p[1] for p in pts) / n
    sxx = sum((p[0] - mx) ** 2 for p in pts)
    slope = sum((p[0] - mx) * (p[1] - my) for p in pts) / sxx if sxx else 0.0
    icpt = my - slope * mx
    return max(icpt, 0.0), (1 / slope if slope > 0 else math.inf)


def error_ratio(predicted: float, measured: float) -> float:
    """max(p/m, m/p): 1 is exact, 1.5 is 50% off either way."""
    if predicted <= 0 or measured <= 0:
        return math.inf
    return max(predicted / measured, measured / predicted)


# StackObjectRates field -> the key calibrate --store's probe (bench/object_read/concurrency.py) gives it
PROBE_FIELDS = {"chunk_cpu_s": "chunk_cpu_s", "shard_cpu_s": "shard_cpu_s", "slab_s": "slab_s",
                "small_get_s": "small_get_s", "ranged_latency_s": "ranged_get_s", "codec_chunk_s": "codec_chunk_s",
                "get_cpu_s": "get_cpu_s", "byte_cpu_s": "byte_cpu_s"}


def rates_from_cells(cells, latency_ms: float, endpoint: str, concurrency: dict, peer: str = "raw-obstore",
                     source: str = "object-read") -> StoreRates:
    """A store's rates from the object-read study's cells (dicts with latency_ms, stack, get_bytes,
    concurrency, rate_MBps, req_p50_ms) at one injected latency: the raw peer's GETs at
    concurrency 1 give latency and per-connection bandwidth, its best rate the aggregate; each
    stack's own GETs at concurrency 1 give the latency and bandwidth it sees; `concurrency`
    (stack -> GETs in flight, or the probe's dict with chunk_cpu_s and shard_cpu_s, measured)
    completes each stack."""
    at = [c for c in cells if float(c["latency_ms"]) == float(latency_ms)]
    one = lambda stack: [(c["get_bytes"], c["req_p50_ms"] / 1e3) for c in at  # noqa: E731
                         if c["stack"] == stack and c["concurrency"] == 1]
    # each stack's probe as a dict (an older caller gives the GETs in flight alone)
    probes = {k: (v if isinstance(v, dict) else {"median_in_flight": v}) for k, v in concurrency.items()}
    lat, bw = fit_stack(one(peer))
    # the endpoint serves at least what a stack got on the probe's large read (64 MiB in 4 MiB GETs)
    agg = max([max(c["rate_MBps"] for c in at if c["stack"] == peer) * 1e6]
              + [float(p.get("bulk_Bps", 0.0)) for p in probes.values()])
    raw = dict(one(peer))
    stacks = {}
    for stack in sorted({c["stack"] for c in at} - {peer}):
        pts = [(size, t) for size, t in one(stack) if size in raw]
        mine = [c for c in at if c["stack"] == stack]
        if pts and stack in concurrency:
            # the stack's GET costs what a raw GET does plus its own overhead (the median over sizes:
            # one slow size does not tilt a bandwidth fitted to the stack's few points)
            extra = max(0.0, sorted(t - raw[size] for size, t in pts)[len(pts) // 2])
            # GETs per second: the smallest GETs at the most in flight, scaled up to the stack's own
            # concurrency (a bound: more in flight completes at most proportionally more GETs)
            small = min(mine, key=lambda c: (c["get_bytes"], -c["concurrency"]))
            probe = probes[stack]
            conc = float(probe["median_in_flight"])
            per_s = small["rate_MBps"] * 1e6 / small["get_bytes"] * max(1.0, conc / small["concurrency"])
            # or the probe's: 128 small chunks read in one selection through the stack itself, many times
            # the grid's 16 GETs (whose rate, ramp-up included, came out 29-1230 a second from run to run)
            per_s = max(per_s, float(probe.get("gets_per_s", 0.0)))
            best = max(max(c["rate_MBps"] for c in mine) * 1e6, float(probe.get("bulk_Bps", 0.0)))
            measured = {field: float(probe.get(key, 0.0)) for field, key in PROBE_FIELDS.items()}
            stacks[stack] = StackObjectRates(lat + extra, bw, conc, best, per_s,
                                             decode_Bps=dict(probe.get("decode_Bps") or {}), **measured)
    for stack, probe in probes.items():
        stacks.setdefault(stack, StackObjectRates(lat, bw, float(probe["median_in_flight"])))
    # the share of a core the calibration got: the median of the probes' (1: none measured)
    shares = sorted(float(p["cpu_share"]) for p in probes.values() if p.get("cpu_share"))
    share = shares[len(shares) // 2] if shares else 1.0
    return StoreRates(endpoint, lat, bw, agg, stacks, injected_latency_ms=float(latency_ms), source=source,
                      cpu_share=share)


# --- a described variable's reads (climio.dataset.description's Description) -----------------------

MAX_SLABS = 4096


def chunk_bytes(desc, chunks) -> tuple:
    """(stored, decoded) bytes of a chunk of shape `chunks` in the store's codecs."""
    raw = math.prod(chunks) * desc.itemsize
    return max(1, int(round(raw * desc.stored_ratio))), raw


def slabs_of(desc, read: str) -> list:
    return slice_starts(desc.shape, read_count_of(read, desc))


def sampled(slabs) -> tuple:
    """(at most MAX_SLABS of `slabs`, evenly spaced, the factor from their sum to all): a read's
    hyperslabs are one call each, one after another, so their times add, and a full series at every
    point of a 1-degree grid (64,800 alike slabs) is priced from a sample of them."""
    if len(slabs) <= MAX_SLABS:
        return slabs, 1.0
    last = len(slabs) - 1
    return [slabs[round(i * last / (MAX_SLABS - 1))] for i in range(MAX_SLABS)], len(slabs) / MAX_SLABS


def predict_layout(desc, chunks, shards, read: str, rates, stack: str, decode_Bps=math.inf, passes=1,
                   tasks=1) -> dict:
    """The read's predicted time over `passes` with the store's codecs: GETs of the chunks' stored
    bytes and their decoding at `decode_Bps`. `tasks` processes share the hyperslabs, each with the
    stack's GETs in flight, together within the endpoint's aggregate bandwidth. More than MAX_SLABS
    hyperslabs: priced on an even sample of them and scaled (`sampled`)."""
    every = slabs_of(desc, read)
    slabs, scale = sampled(every)
    stored, raw = chunk_bytes(desc, chunks)
    gets = [read_tasks(desc.shape, chunks, shards, s, c, desc.itemsize, stored) for s, c in slabs]
    out = predict_read(gets, rates, stack, decode_Bps, raw,
                          cpu_units=[cpu_units(desc.shape, chunks, shards, s, c) for s, c in slabs])
    for k in ("time_s", "io_s", "decode_s", "gets", "bytes", "wire_s", "cpu_s"):
        out[k] *= scale
    if tasks > 1:
        out["time_s"] = max(out["time_s"] / tasks, out["bytes"] / rates.aggregate_Bps)
        out["io_s"] = max(out["io_s"] / tasks, out["bytes"] / rates.aggregate_Bps)
    for k in ("time_s", "io_s", "decode_s", "gets", "bytes", "wire_s", "cpu_s"):
        out[k] *= passes
    out["slabs"] = len(every)
    out["slabs_priced"] = len(slabs)
    return out
