"""`climio predict` and `climio advise` for data in object storage: a Zarr store
(s3://BUCKET/STORE.zarr) or a netCDF-4 object.

The variable is described once (climio.dataset.description: shape, chunks, shards, codecs, the
dimensions' roles); the reads are every hyperslab of each read shape (climio.dataset.reads, any
rank), weighed by their passes; the rates are the endpoint's, kept in this machine's profile by
`climio calibrate --store` (model.object_store). --check reads the same hyperslabs through the stack
(measure.object_reads) and prints predicted against measured. advise: store_facts gives the
object-store rules (climio.rules.object_store: bigger chunks, shards over time, more GETs in
flight, obstore over fsspec; a reference or a Zarr copy of a netCDF-4 object) their Facts.
"""

import math
from dataclasses import dataclass, field, replace
from statistics import median

from climio.base.errors import InputError
from climio.dataset.description import describe
from climio.dataset.reads import read_count_of
from ..model import object_store as om
from ..model.object_store import predict_layout, slabs_of  # noqa: F401  (this module's API too)
from climio import profiles
from climio.profiles import decode_rate
from ..stores.endpoint import Endpoint, typed_url

DEFAULT_OBJECT_STACK = "zarr-obstore"


def store_rates(endpoint: Endpoint, warn=None) -> om.StoreRates:
    """The endpoint's rates measured from this machine, else from another platform's (with a
    warning); a one-line error naming the calibrate command when none has them."""
    from climio.machine.platform import platform_id_here as platform_id_of
    key = om.store_key(endpoint.describe()["endpoint_url"])
    pid = platform_id_of(None)
    mine = profiles.load_rates(pid)
    if key in mine:
        return mine[key]
    folder = profiles.rates_path(pid).parent
    for p in sorted(folder.glob("*.json"), key=lambda q: q.stat().st_mtime, reverse=True) if folder.is_dir() else []:
        other = profiles.load_rates(p.stem)
        if key in other:
            if warn:
                warn(f"the rates of {key} come from {p} (another platform's)")
            return other[key]
    flag = f" --endpoint-url {endpoint.url}" if endpoint.url else ""   # none: AWS, the flag's default
    raise InputError(f"no object-store rates for {key}: run `climio calibrate --store s3://BUCKET/PREFIX{flag}` first")


@dataclass
class StorePrediction:
    layout: object                # the Description
    stack: str
    rates: dict
    reads: list = field(default_factory=list)     # [{read, passes, time_s, decode_s, gets, bytes, measured_s?, error?}]
    decode: dict = field(default_factory=dict)    # {"Bps", "source"}: how fast this machine decodes the codecs
    tasks: int = 1

    @property
    def total_s(self) -> float:
        return sum(r["time_s"] for r in self.reads)

    def lines(self) -> list:
        d = self.layout
        out = [f"{d.location}: {d.label()}; stack {self.stack}" + (f", {self.tasks} tasks" if self.tasks > 1 else ""),
               f"  store {self.rates['endpoint']}: GET {self.rates['latency_s'] * 1e3:.1f} ms + size / "
               f"{self.rates['per_connection_Bps'] / 1e6:.0f} MB/s, {self.rates['aggregate_Bps'] / 1e6:.0f} MB/s aggregate"]
        if d.codecs != "none":
            out.append(f"  codecs {d.codecs}: chunks stored at {d.stored_ratio:.2f}x their size, decoded at "
                       f"{self.decode['Bps'] / 1e6:.0f} MB/s ({self.decode['source']})")
        for r in self.reads:
            dec = f", {r['decode_s']:.3f} s of it decoding" if r.get("decode_s") else ""
            line = (f"  {r['read']} x{r['passes']}: predicted {r['time_s']:.3f} s ({r['gets']:,.0f} GETs, "
                    f"{r['bytes'] / 1e6:.1f} MB{dec})")
            if "measured_s" in r:
                line += (f", one pass measured {r['measured_s']:.3f} s (median of {r['reps']}), "
                         f"error {r['error']:.2f}x")
            out.append(line)
        if len(self.reads) > 1:
            out.append(f"workflow total: {self.total_s:.3g} s")
        return out

    def to_dict(self) -> dict:
        return {"layout": self.layout.to_dict(), "stack": self.stack, "tasks": self.tasks, "rates": self.rates,
                "reads": self.reads, "total_s": self.total_s,
                "decode": {"Bps": self.decode["Bps"] if math.isfinite(self.decode["Bps"]) else None,
                           "source": self.decode["source"]}}


def _specs(reads) -> list:
    """[(read, passes)] from ReadSpecs or plain read names (one pass each)."""
    if not reads:
        raise InputError("say how the workflow reads: --read xt|xy|xyt|TEMPLATE (repeatable)")
    return [(getattr(r, "read", r), getattr(r, "passes", 1)) for r in reads]


def _stack(stack) -> str:
    from climio.dataset.stack_names import ZARR_STACKS
    stack = stack or DEFAULT_OBJECT_STACK
    if stack not in ZARR_STACKS:
        raise InputError(f"--stack {stack}: a Zarr store is read by {', '.join(ZARR_STACKS)}")
    return stack


def predict_store(url, reads, var=None, stack=None, endpoint_url=None, check=False, reps=3, warn=None,
                  tasks=1, desc=None) -> StorePrediction:
    """The predicted time of `reads` (ReadSpecs, or read names of one pass) of a Zarr store in S3."""
    endpoint = Endpoint.from_env(endpoint_url)
    stack = _stack(stack)
    specs = _specs(reads)
    desc = desc or describe(typed_url(url), var, endpoint_url)   # the store first: its failures before "run calibrate"
    rates = store_rates(endpoint, warn)
    dec_Bps, source = decode_rate(desc.codecs, warn, rates, stack)
    out = StorePrediction(desc, stack, rates.to_dict(), decode={"Bps": dec_Bps, "source": source}, tasks=tasks)
    for read, passes in specs:
        p = predict_layout(desc, desc.chunks, desc.shards, read, rates, stack, dec_Bps, passes, tasks)
        row = {"read": read, "passes": passes, **{k: p[k] for k in ("time_s", "io_s", "decode_s", "gets", "bytes",
                                                                     "slabs")}}
        if check:
            from ..measure.object_reads import slab_walls
            walls = slab_walls(endpoint, desc.location, desc.var, slabs_of(desc, read), stack, reps)
            row.update(measured_s=median(walls), reps=len(walls),
                       error=om.error_ratio(p["time_s"] / passes, median(walls)))
        out.reads.append(row)
    return out


# --- advice: the object-store rules (climio.rules.object_store) over these facts -------------------

def store_facts(url, reads, var=None, stack=None, endpoint_url=None, warn=None, tasks=1, desc=None):
    """The Facts of reads of data in S3 (Facts.object_store): the reads as they are (a Zarr store)
    or downloading the object first (a netCDF-4 object), all passes, and the what-if the rules ask."""
    from climio.rules.facts import Facts, ObjectStoreFacts
    endpoint, url = Endpoint.from_env(endpoint_url), typed_url(url)
    specs = _specs(reads)
    d = desc or describe(url, var, endpoint_url)      # the store first, as predict_store
    rates = store_rates(endpoint, warn)
    zarr_store = d.store == "zarr-s3"
    stack = _stack(stack) if zarr_store else "zarr-fsspec"
    dec_Bps = decode_rate(d.codecs, warn, rates, stack)[0]

    def again(chunks=None, shards=(), stack=stack, concurrency=None):
        chunks = list(chunks or d.chunks or d.shape)
        shards = d.shards if shards == () else shards
        r = rates
        if concurrency is not None:
            s = rates.stack(stack)
            r = replace(rates, stacks={**rates.stacks, stack: replace(
                s, concurrency=concurrency, gets_per_s=s.gets_per_s * concurrency / s.concurrency)})
        return sum(predict_layout(d, chunks, shards, read, r, stack, dec_Bps, n, tasks)["time_s"] for read, n in specs)

    counts = [(read, read_count_of(read, d)) for read, _ in specs]
    if zarr_store:
        now, ref_s, ref_cmd = again(), None, ""
    else:
        from ..stores.objects import object_size
        size = object_size(endpoint, url)
        part = 8 << 20
        through = [predict_layout(d, list(d.chunks or d.shape), None, r, rates, "zarr-fsspec", dec_Bps, n, tasks)
                   for r, n in specs]
        # the downloaded copy is read locally: the same chunks decoded (local reads taken as free)
        now = (om.predict_read([[[part]] * max(1, -(-size // part))], rates, DEFAULT_OBJECT_STACK)["time_s"]
               + sum(p["decode_s"] for p in through))
        ref_s, ref_cmd = sum(p["time_s"] for p in through), reference_command(url, endpoint_url)
    o = ObjectStoreFacts(d, url, stack, rates.stack(stack).concurrency, now, again, counts, ref_s, ref_cmd,
                         endpoint.url or "")
    return Facts("object-store", object_store=o, tasks=tasks)


def reference_command(url, endpoint_url=None) -> str:
    """The command that writes the reference advise_netcdf recommends (`climio make-refs`; it says
    how to open the result)."""
    import shlex
    name = str(url).rstrip("/").rsplit("/", 1)[-1]
    where = f" --endpoint-url {shlex.quote(endpoint_url)}" if endpoint_url else ""
    return f"climio make-refs {shlex.quote(str(url))} -o {shlex.quote(name + '.kerchunk.json')}{where}"
