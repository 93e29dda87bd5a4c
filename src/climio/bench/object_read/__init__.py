"""The request-size sweep of the thesis's chapter 3 for object storage (issue 25, study a).

GET size x concurrency x injected round-trip latency, through object-store stacks, next to a
raw-GET peer (obstore ranged GETs of the same objects at the same size and concurrency) measured
in the same rounds. Every record carries the rate, the per-request time distribution and the
cache state of the server's volume files (evicted with posix_fadvise and checked with mincore
before every cold repetition, then the bytes the server read from storage against the bytes the
repetition needs); the summary gives each stack's rate as a ratio to the peer's.

    run.py      the server (SeaweedFS behind Toxiproxy, climio.stores.server), the objects, the rounds
    summary.py  rates, per-request times and peer ratios per cell (pure)
    section.py  the report's tables and the findings (target: zarr-obstore >= 0.8 x raw at 4 MiB)
"""

from dataclasses import dataclass, field

from .. import base
from ..base import option
from climio.base.errors import InputError

STUDY = "object-read"
PEER = "raw-obstore"
from climio.dataset.stack_names import OBJECT_READ_STACKS  # noqa: E402  (declared once)
TARGET_STACK, TARGET_SIZE, TARGET_RATIO = "zarr-obstore", 4 << 20, 0.8
PRESETS = {
    "full": {"sizes": "64KiB,256KiB,1MiB,4MiB,16MiB", "concurrency": "1,4,16", "latency": "0,5,20,50",
             "stacks": ",".join(OBJECT_READ_STACKS), "total": "64MiB", "max_requests": 128, "reps": 3},
    "survey": {"sizes": "256KiB,1MiB,4MiB", "concurrency": "1,8", "latency": "0,20",
               "stacks": "zarr-obstore", "total": "32MiB", "max_requests": 64, "reps": 2},
    "quick": {"sizes": "256KiB,4MiB", "concurrency": "1,8", "latency": "0,20",
              "stacks": "zarr-obstore", "total": "8MiB", "max_requests": 32, "reps": 1},
}


@dataclass
class Grid:
    sizes: str = field(default="", metadata=option("--sizes", "GET sizes (one Zarr chunk each), e.g. 64KiB,1MiB,4MiB.", "LIST"))
    concurrency: str = field(default="", metadata=option("--concurrency", "Requests in flight at once, e.g. 1,4,16.", "LIST"))
    latency: str = field(default="", metadata=option("--latency", "Round-trip latency added by the proxy, ms, e.g. 0,5,20,50.", "LIST"))
    stacks: str = field(default="", metadata=option("--stacks", f"Stacks beside the raw-GET peer: {', '.join(OBJECT_READ_STACKS)}.", "LIST"))
    total: str = field(default="", metadata=option("--total", "Bytes read per measurement (fewer at small sizes: --max-requests).", "SIZE"))
    max_requests: int = field(default=0, metadata=option("--max-requests", "At most this many GETs per measurement.", "N"))
    reps: int = field(default=0, metadata=option("--reps", "Repetitions (rounds; the order of stacks alternates).", "N"))
    page_cache: str = field(default="cold", metadata=option("--page-cache", "The server's volume files before each repetition: cold or warm.", "STATE"))
    store: str = field(default="", metadata=option("--store", "Measure this bucket instead of the study's own server: s3://BUCKET/PREFIX (written under, removed after; credentials from the AWS_* variables; no latency injection or eviction).", "URL"))
    endpoint_url: str = field(default="", metadata=option("--endpoint-url", "The S3 endpoint of --store (else AWS_ENDPOINT_URL).", "URL"))
    preset: str = "full"
    size_list: list = None
    concurrency_list: list = None
    latency_list: list = None
    stack_list: list = None
    total_bytes: int = 0


def requests_for(size: int, concurrency: int, total: int, max_requests: int) -> int:
    """GETs of one measurement: total / size, at most max_requests, at least 2 x concurrency."""
    return max(2 * concurrency, min(max(1, total // size), max_requests))


def build_grid(preset="full", **values) -> Grid:
    from climio.dataset.options import parse_int_list, parse_size
    values = base.checked_values(STUDY, Grid, PRESETS, preset, values)
    v = {**PRESETS[preset], **{k: x for k, x in values.items() if x not in (None, "", 0)}}
    sizes = [parse_size(s.strip()) for s in str(v["sizes"]).split(",") if s.strip()]
    if not sizes or min(sizes) < 8 or any(s % 8 for s in sizes):
        raise InputError(f"--sizes {v['sizes']}: give sizes of at least 8 bytes, multiples of 8 (float64 values)")
    conc = parse_int_list(str(v["concurrency"]), "--concurrency")
    lat = [float(x) for x in _numbers(str(v["latency"]), "--latency")]
    stacks = [s.strip() for s in str(v["stacks"]).split(",") if s.strip()]
    bad = [s for s in stacks if s not in OBJECT_READ_STACKS]
    if bad or not stacks:
        raise InputError(f"unknown stack '{(bad or [''])[0]}' for {STUDY}: use {', '.join(OBJECT_READ_STACKS)}")
    if min(conc) < 1 or any(x < 0 or x > 10000 for x in lat):
        raise InputError("--concurrency must be at least 1 and --latency 0..10000 ms")
    reps, maxreq = int(v["reps"]), int(v["max_requests"])
    if reps < 1 or maxreq < 1:
        raise InputError("--reps and --max-requests must be at least 1")
    if v.get("endpoint_url") and not v.get("store"):
        raise InputError("--endpoint-url is where --store is: give --store s3://BUCKET/PREFIX too")
    if v.get("store"):
        from ...stores.endpoint import parse_s3_url
        parse_s3_url(v["store"])
        if "latency" not in values or values["latency"] in (None, ""):
            lat = [0.0]
        elif any(lat):
            raise InputError("--store measures a remote endpoint as it is: latency is injected only into the "
                             "study's own server (give --latency 0)")
    state = str(v.get("page_cache", "cold"))
    if state not in ("cold", "warm"):
        raise InputError(f"--page-cache {state}: use cold or warm")
    return Grid(sizes=str(v["sizes"]), concurrency=str(v["concurrency"]), latency=str(v["latency"]),
                stacks=",".join(stacks), total=str(v["total"]), max_requests=maxreq, reps=reps, page_cache=state,
                store=str(v.get("store") or ""), endpoint_url=str(v.get("endpoint_url") or ""),
                preset=preset, size_list=sorted(set(sizes)), concurrency_list=sorted(set(conc)),
                latency_list=sorted(set(lat)), stack_list=stacks, total_bytes=parse_size(str(v["total"])))


def _numbers(text, flag):
    out = []
    for part in text.split(","):
        try:
            out.append(float(part))
        except ValueError:
            raise InputError(f"{flag} '{text}': give numbers separated by commas") from None
    return out


class ObjectRead(base.Study):
    name = STUDY
    title = "Object storage: GET size x concurrency x latency, stacks against raw ranged GETs."
    description = ("Starts SeaweedFS behind Toxiproxy on loopback ports, writes one Zarr v3 array per GET size "
                   "(one chunk per GET) and reads it cold through each stack and through obstore's ranged GETs of "
                   "the same objects, in the same rounds; rate, per-request times and the ratio to the peer.")
    Grid = Grid
    presets = PRESETS
    in_survey = False  # the survey measures the file system; this study brings its own server
    preset_help = {"quick": "Under a minute: 2 sizes, 2 concurrencies, 0 and 20 ms, zarr-obstore.",
                   "full": "5 sizes x 3 concurrencies x 4 latencies x 2 stacks, 3 rounds (about an hour)."}

    def run(self, ctx, grid) -> int:
        return self._part("run").run_object_read(ctx, grid)   # by name, as base.Study.run: no import cycle


base.register(ObjectRead())
