"""The read-time model on object storage (pure): what a read of a Zarr array costs in GETs.

Every request pays a round trip, so a read's time is set by the GETs it makes and how many the
stack keeps in flight:

    StoreRates       one endpoint's measured rates: per-GET latency [s], per-connection and
                     aggregate bandwidth [B/s], and per stack the GET latency and bandwidth it
                     sees and the GETs it really keeps in flight (measured by `climio calibrate
                     --store`); described by the endpoint's URL, never a credential
    read_tasks()     the GETs of one hyperslab as tasks (a task's GETs run one after another):
                     unsharded, one GET per chunk touched; sharded (zarr-python 3's ShardingCodec),
                     per shard touched one GET of the whole shard when the read covers all its
                     chunks, else the shard index then each inner chunk's byte range in turn
    predict_read()   tasks scheduled on the stack's concurrency (the next free slot takes the next
                     task: waves when tasks are equal), each GET latency + size / per-connection
                     bandwidth, the whole capped by the aggregate bandwidth; a compressed store's
                     chunks decoded at the codec's calibrated rate, beside the GETs in flight
"""

import heapq
import itertools
import math
from dataclasses import asdict, dataclass, field

INDEX_ENTRY_BYTES = 16        # a shard index entry: offset and length, uint64 each (+ a crc32c)


@dataclass
class StackObjectRates:
    latency_s: float              # per GET as the stack sees it
    per_connection_Bps: float
    concurrency: float            # GETs the stack keeps in flight, measured
    aggregate_Bps: float = math.inf      # the best rate the stack reached (many GETs in flight)
    gets_per_s: float = math.inf         # the most GETs per second it completed (small GETs)
    chunk_cpu_s: float = 0.0             # CPU seconds per chunk decoded (zarr's codec pipeline)
    shard_cpu_s: float = 0.0             # CPU seconds per shard visited beyond its chunks


@dataclass
class StoreRates:
    endpoint: str                 # the URL (no credentials)
    latency_s: float              # raw ranged GETs: t = latency + size / per_connection
    per_connection_Bps: float
    aggregate_Bps: float
    stacks: dict = field(default_factory=dict)     # stack -> StackObjectRates
    injected_latency_ms: float = 0.0
    source: str = ""

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
        whole = math.prod(-(-(h - l) // c) for l, h, c in zip(lo, hi, chunks))
        tasks.append([whole * cb + index] if inner == whole else [index] + [cb] * inner)
    return tasks


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


def predict_read(tasks_per_slab, rates: StoreRates, stack: str, decode_Bps: float = math.inf,
                 chunk_raw_bytes: int = 0, cpu_units=None) -> dict:
    """Seconds to read the hyperslabs one after another (each a list of tasks), and the parts;
    `cpu_units`: per hyperslab (chunks decoded, shards visited), default (its tasks, 0).

    A compressed store's chunks are decoded at `decode_Bps` (B/s of decoded output, the codec's
    calibrated rate) after their GETs: `chunk_raw_bytes` is a chunk's decoded size. Decoding is CPU
    beside the stack's own per chunk: it overlaps the GETs still in flight, but the last task's
    chunks are decoded after the wire is done, so a slab takes
    max(wire + one task's decoding, the stack's CPU + all the decoding)."""
    s = rates.stack(stack)
    total = io = decode_total = 0.0
    gets = nbytes = 0
    per_chunk = chunk_raw_bytes / decode_Bps if decode_Bps and math.isfinite(decode_Bps) else 0.0
    for i, tasks in enumerate(tasks_per_slab):
        durs = [sum(s.latency_s + g / s.per_connection_Bps for g in task) for task in tasks]
        moved = sum(sum(task) for task in tasks)
        wire = max(makespan(durs, s.concurrency), moved / min(rates.aggregate_Bps, s.aggregate_Bps),
                   sum(len(t) for t in tasks) / s.gets_per_s)
        # the stack's CPU (one event loop) against the wire: whichever is longer sets the slab's time
        chunks, shards = cpu_units[i] if cpu_units else (len(tasks), 0)
        decode = chunks * per_chunk
        last = decode / len(tasks) if tasks else 0.0
        cpu = chunks * s.chunk_cpu_s + shards * s.shard_cpu_s
        total += max(wire + last, cpu + decode)
        io += max(wire, cpu)
        decode_total += decode
        gets += sum(len(t) for t in tasks)
        nbytes += moved
    # io_s: the same reads with nothing to decode; decode_s: the decoding's CPU seconds (partly hidden)
    return {"time_s": total, "io_s": io, "decode_s": decode_total, "gets": gets, "bytes": nbytes}


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
    lat, bw = fit_stack(one(peer))
    agg = max(c["rate_MBps"] for c in at if c["stack"] == peer) * 1e6
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
            probe = concurrency[stack] if isinstance(concurrency[stack], dict) else {"median_in_flight": concurrency[stack]}
            conc = float(probe["median_in_flight"])
            per_s = small["rate_MBps"] * 1e6 / small["get_bytes"] * max(1.0, conc / small["concurrency"])
            stacks[stack] = StackObjectRates(lat + extra, bw, conc, max(c["rate_MBps"] for c in mine) * 1e6, per_s,
                                             float(probe.get("chunk_cpu_s", 0.0)), float(probe.get("shard_cpu_s", 0.0)))
    for stack, conc in concurrency.items():
        stacks.setdefault(stack, StackObjectRates(lat, bw, float(conc["median_in_flight"] if isinstance(conc, dict) else conc)))
    return StoreRates(endpoint, lat, bw, agg, stacks, injected_latency_ms=float(latency_ms), source=source)
