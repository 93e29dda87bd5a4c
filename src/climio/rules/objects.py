"""The rules on a job's object-store requests (Facts.objects, from climio.trace.objects_facts).

Each finding says which level its numbers come from (store op or wire request) and prints a command or
snippet. Predicted gains follow the object-store model's one law (climio.model's object reads): a batch
of requests costs about latency x requests / requests in flight, so a fix that raises the requests in
flight, or lowers the requests, shortens the object-store time in proportion.
"""

import math

from .registry import finding, rule

KiB, MiB = 1024, 1024 * 1024
# Latency that makes the number of requests matter (a local disk answers in well under 1 ms).
MIN_LATENCY_MS = 5.0
MIN_REQUESTS = 50
# The rate a job should be able to pull from an object store (a cloud VM's network to S3 in one region):
# Little's law asks rate x latency / request size requests in flight to reach it.
TARGET_RATE_BPS = 500e6
IN_FLIGHT_SHARE = 0.5          # fires when the mean in flight is below half what Little's law asks
MAX_ADVISED_CONCURRENCY = 128
LIMIT_REACHED = 0.8            # ... and the peak in flight reached this share of the client's limit
# A chunk is too small when fetching it takes latency, not transfer: below this size at MIN_LATENCY_MS+.
SMALL_OBJECT_BYTES = 1 * MiB
TARGET_OBJECT_BYTES = 8 * MiB
# Repeated fetches of one (key, range).
REPEAT_MIN_EXTRA = 10
REPEAT_SHARE = 0.10
# LIST/HEAD storms.
STORM_MIN = 50
STORM_SHARE = 0.25
# netCDF-C's byte-range mode reads one range at a time; a reference read through zarr keeps this many in flight.
REFERENCE_CONCURRENCY = 10


def _level(o, level) -> str:
    if level == "wire":
        libs = sorted(((o.get("levels") or {}).get("wire") or {}).get("libs") or {}) or ["botocore", "aiohttp"]
        return f"wire requests ({'/'.join(libs)})"
    return "store operations (zarr/fsspec)"


def _ms(x) -> str:
    return "—" if x is None else f"{x:.1f} ms"


def _conc(o):
    c = o.get("concurrency")
    return c if c and c.get("requests") else None


def needed_in_flight(c) -> float:
    """Little's law: requests in flight for TARGET_RATE_BPS at the measured latency and request size."""
    size = max(c["mean_request_bytes"], 1.0)
    return TARGET_RATE_BPS * (c["latency_p50_ms"] or 0) / 1e3 / size


@rule("object-concurrency", "Too few requests in flight for the latency", inputs=("trace",), needs=("objects",),
      thresholds={"MIN_LATENCY_MS": MIN_LATENCY_MS, "MIN_REQUESTS": MIN_REQUESTS, "TARGET_RATE_BPS": TARGET_RATE_BPS,
                  "IN_FLIGHT_SHARE": IN_FLIGHT_SHARE},
      evidence=("level", "requests", "latency_p50_ms", "mean_request_bytes", "mean_in_flight", "peak_in_flight",
                "little_needs", "client_limit", "advised", "predicted_s"),
      looks_for="data requests to an object store with a latency of MIN_LATENCY_MS or more whose mean number in flight "
                "(Little's law: summed request time / busy time) is below IN_FLIGHT_SHARE of what TARGET_RATE_BPS needs")
def too_few_in_flight(facts):
    c = _conc(facts.objects)
    if not c or c["requests"] < MIN_REQUESTS or (c["latency_p50_ms"] or 0) < MIN_LATENCY_MS:
        return []
    need = min(needed_in_flight(c), c["requests"])
    limit = c["client_limit"]
    # only a job that reached its client's limit is held back by it (a loop of one read at a time is not)
    at_limit = c["peak_in_flight"] >= (LIMIT_REACHED * limit if limit else 2)
    if c["mean_in_flight"] >= IN_FLIGHT_SHARE * need or not at_limit:
        return []
    advised = int(min(MAX_ADVISED_CONCURRENCY, max(2 * (c["client_limit"] or 10), math.ceil(need))))
    reach = min(advised, need)
    busy = c["busy_s"]
    predicted = busy * c["mean_in_flight"] / reach
    limit = f"zarr's async.concurrency is {c['client_limit']}; " if c["client_limit"] else ""
    msg = (f"{c['requests']} data requests ({_level(facts.objects, c['level'])}) took {_ms(c['latency_p50_ms'])} each "
           f"(median) for {c['mean_request_bytes'] / KiB:.0f} KiB; {c['mean_in_flight']:.1f} were in flight on average "
           f"(peak {c['peak_in_flight']}), where Little's law asks {need:.0f} to pull {TARGET_RATE_BPS / 1e6:.0f} MB/s at "
           f"that latency; {limit}the {busy:.2f} s of requests would take about {predicted:.2f} s at {reach:.0f} in flight.")
    advice = (f"Raise the requests in flight: `zarr.config.set({{'async.concurrency': {advised}}})` before opening "
              f"(or run the job with `ZARR_ASYNC__CONCURRENCY={advised}`, which `climio trace try` can inject), and "
              f"s3fs's connection pool with it (botocore keeps 10): `storage_options={{'config_kwargs': "
              f"{{'max_pool_connections': {advised}}}}}` or `FSSPEC_S3='{{\"config_kwargs\": {{\"max_pool_connections\": "
              f"{advised}}}}}'`; for fsspec's own batches, `fs.cat_ranges(..., batch_size={advised})`.")
    ev = {"level": c["level"], "requests": c["requests"], "latency_p50_ms": c["latency_p50_ms"],
          "mean_request_bytes": c["mean_request_bytes"], "mean_in_flight": c["mean_in_flight"],
          "peak_in_flight": c["peak_in_flight"], "little_needs": need, "client_limit": c["client_limit"],
          "advised": advised, "predicted_s": predicted}
    return [finding("object-concurrency", facts, busy, msg, ev, advice, saves_s=busy - predicted)]


def bigger_chunks(chunks, shape, nbytes, target=TARGET_OBJECT_BYTES) -> list:
    """`chunks` grown along the leading axes (time first) until a chunk holds about `target` bytes."""
    out = list(chunks)
    size = max(nbytes, 1)
    for i in range(len(out)):
        if size >= target:
            break
        room = max(1, shape[i] // max(out[i], 1)) if shape else 1
        f = min(room, max(1, int(target // size)))
        out[i] *= f
        size *= f
    return out


@rule("object-small-chunks", "Chunks too small for the latency", inputs=("trace",), needs=("objects",),
      thresholds={"MIN_LATENCY_MS": MIN_LATENCY_MS, "MIN_REQUESTS": MIN_REQUESTS,
                  "SMALL_OBJECT_BYTES": SMALL_OBJECT_BYTES, "TARGET_OBJECT_BYTES": TARGET_OBJECT_BYTES},
      evidence=("level", "array", "chunk_reads", "mean_chunk_bytes", "latency_p50_ms", "chunks", "advised_chunks",
                "predicted_s"),
      looks_for="an array read in MIN_REQUESTS or more chunk GETs of under SMALL_OBJECT_BYTES each from a store with "
                "MIN_LATENCY_MS or more: each request pays the latency for little data")
def small_chunks(facts):
    o, c = facts.objects, _conc(facts.objects)
    if not c or (c["latency_p50_ms"] or 0) < MIN_LATENCY_MS:
        return []
    out = []
    for a in o.get("arrays") or []:
        if a["chunk_reads"] < MIN_REQUESTS or a["mean_chunk_bytes"] >= SMALL_OBJECT_BYTES:
            continue
        lay = a.get("layout") or {}
        chunks, shape = lay.get("chunks"), lay.get("shape")
        factor = max(1.0, TARGET_OBJECT_BYTES / max(a["mean_chunk_bytes"], 1))
        target = bigger_chunks(chunks, shape, a["mean_chunk_bytes"]) if chunks else None
        if target and chunks:
            factor = max(1.0, math.prod(target) / max(math.prod(chunks), 1))
        in_flight = max(c["mean_in_flight"], 1.0)
        predicted = a["time_s"] / in_flight / factor + a["chunk_reads"] * a["mean_chunk_bytes"] / TARGET_RATE_BPS
        time_s = min(a["time_s"] / in_flight, o.get("busy_s") or 0.0)   # never more than the object-store time
        spec = ",".join(map(str, target)) if target else "C1,C2,..."
        name = a["array"].strip("/") or "ARRAY"
        msg = (f"{name}: {a['chunk_reads']} chunk reads of {a['mean_chunk_bytes'] / KiB:.0f} KiB on average "
               f"({_level(o, 'store')}), each paying {_ms(c['latency_p50_ms'])} of latency (median, "
               f"{_level(o, c['level'])}); chunks {chunks} of shape {shape}; chunks {target} would need about "
               f"{factor:.0f}x fewer requests.")
        advice = (f"Store the array in bigger chunks or in shards of many chunks: "
                  f"`climio rechunk SRC.zarr s3://BUCKET/NEW.zarr -c {name}:{spec}` (SRC a local copy of the store), "
                  f"or with zarr v3 `zarr.create_array(..., chunks={chunks}, shards={target})` so one GET serves "
                  "many chunks.")
        ev = {"level": "store", "array": name, "chunk_reads": a["chunk_reads"], "mean_chunk_bytes": a["mean_chunk_bytes"],
              "latency_p50_ms": c["latency_p50_ms"], "chunks": chunks, "advised_chunks": target, "predicted_s": predicted}
        out.append(finding("object-small-chunks", facts, time_s, msg, ev, advice, saves_s=max(0.0, time_s - predicted)))
    return out


def _per_request_s(o) -> float:
    """Object-store time one request costs the job: the busy time over the requests (Little)."""
    c = _conc(o)
    n = (o.get("levels") or {}).get(c["level"] if c else "store", {}).get("requests") or 0
    return (o.get("busy_s") or 0.0) / n if n else 0.0


@rule("object-repeated", "The same bytes fetched again", inputs=("trace",), needs=("objects",),
      thresholds={"REPEAT_MIN_EXTRA": REPEAT_MIN_EXTRA, "REPEAT_SHARE": REPEAT_SHARE},
      evidence=("level", "fetches", "repeated_ranges", "extra_fetches", "extra_bytes", "top", "metadata_during_compute"),
      looks_for="one (key, byte range) fetched more than once by a process: REPEAT_MIN_EXTRA or more extra fetches "
                "making at least REPEAT_SHARE of the fetches")
def repeated(facts):
    o = facts.objects
    r = o.get("repeats")
    if not r or r["extra_fetches"] < REPEAT_MIN_EXTRA or r["extra_fetches"] < REPEAT_SHARE * max(r["fetches"], 1):
        return []
    top = r["top"][0]
    arrays = sorted({t["array"] or t["key"].rsplit("/", 2)[-2 if "/" in t["key"] else -1] for t in r["top"] if t["key"]})
    meta = o.get("metadata") or {}
    time_s = r["extra_fetches"] * _per_request_s(o)
    msg = (f"{r['extra_fetches']} of {r['fetches']} fetches ({_level(o, r['level'])}) repeat a range already fetched "
           f"({r['repeated_ranges']} ranges, {r['extra_bytes'] / KiB:.0f} KiB again); most: {top['key']} "
           f"{top['range'] or 'whole'} x{top['count']}; {meta.get('count', 0)} metadata requests came during compute.")
    coords = ", ".join(repr(a.split("/")[-1]) for a in arrays[:3] if a)
    advice = (f"Load what every step needs once, outside the loop (`lat = ds[{coords.split(',')[0] or 'COORD'}].values`), "
              "or read through a cache: `fsspec.filesystem('simplecache', target_protocol='s3', "
              "target_options=STORAGE_OPTIONS)` / the URL `simplecache::s3://...`; for metadata, consolidate it once "
              "(`zarr.consolidate_metadata(STORE)`) and open with `consolidated=True`.")
    ev = {"level": r["level"], "fetches": r["fetches"], "repeated_ranges": r["repeated_ranges"],
          "extra_fetches": r["extra_fetches"], "extra_bytes": r["extra_bytes"], "top": r["top"][:3],
          "metadata_during_compute": meta.get("count", 0)}
    return [finding("object-repeated", facts, time_s, msg, ev, advice)]


@rule("object-head-list", "LIST/HEAD storm", inputs=("trace",), needs=("objects",),
      thresholds={"STORM_MIN": STORM_MIN, "STORM_SHARE": STORM_SHARE},
      evidence=("level", "head_list", "requests", "time_s_requests", "per_get", "libs"),
      looks_for="STORM_MIN or more HEAD and LIST requests making STORM_SHARE or more of the requests")
def head_list_storm(facts):
    o = facts.objects
    h = o.get("head_list")
    if not h or h["count"] < STORM_MIN or h["count"] < STORM_SHARE * max(h["requests"], 1):
        return []
    ops = (o.get("levels") or {}).get(h["level"], {}).get("by_op", {})
    gets = (ops.get("GET") or {}).get("count", 0)
    heads = (ops.get("HEAD") or {}).get("count", 0)
    libs = (o.get("levels") or {}).get(h["level"], {}).get("libs", {})
    per_get = heads / gets if gets else None
    time_s = h["count"] * _per_request_s(o)
    msg = (f"{h['count']} of {h['requests']} {_level(o, h['level'])} are HEAD or LIST ({heads} HEAD, "
           f"{(ops.get('LIST') or {}).get('count', 0)} LIST; {per_get or 0:.2f} HEAD per GET).")
    s3fs_head = "botocore" in libs and per_get is not None and per_get >= 0.5
    advice = ("s3fs sends a HEAD before each whole-object GET when max_concurrency > 1: open the store with "
              "`storage_options={'max_concurrency': 1}` (or `s3fs.S3FileSystem(max_concurrency=1)`), or read "
              "through zarr's obstore store (`zarr.storage.ObjectStore`), which does not; " if s3fs_head else "") + \
        ("open the store once with consolidated metadata (`zarr.consolidate_metadata(STORE)`, then "
         "`xr.open_zarr(URL, consolidated=True)`), and list a prefix once instead of testing keys one by one.")
    ev = {"level": h["level"], "head_list": h["count"], "requests": h["requests"], "time_s_requests": h["time_s"],
          "per_get": per_get, "libs": libs}
    return [finding("object-head-list", facts, time_s, msg, ev, advice)]


@rule("object-netcdf-byte-range", "netCDF over byte ranges slower than a reference", inputs=("trace",),
      needs=("objects",), thresholds={"REFERENCE_CONCURRENCY": REFERENCE_CONCURRENCY},
      evidence=("url", "calls", "time_s_reads", "predicted_s", "wire"),
      looks_for="netCDF files opened by URL (netCDF-C's #mode=bytes): each read is a chain of ranged GETs made one at "
                "a time, where a kerchunk reference read through zarr keeps REFERENCE_CONCURRENCY in flight")
def netcdf_byte_range(facts):
    out = []
    for f in facts.objects.get("netcdf_byte_ranges") or []:
        if f["calls"] < 1 or f["time_s"] <= 0:
            continue
        predicted = f["time_s"] / min(REFERENCE_CONCURRENCY, max(f["calls"], 1))
        url = f["url"].split("#", 1)[0]
        s3 = f.get("s3_url") or "s3://BUCKET/KEY.nc"
        wire = (f"{f['wire_requests']} wire requests of netCDF-C's libcurl, {f.get('wire_gets', 0)} of them ranged GETs, "
                f"at most {f.get('wire_peak_in_flight', 0)} in flight" if f.get("wire_requests")
                else "no wire request of netCDF-C's libcurl recorded")
        msg = (f"{f['calls']} netCDF calls on {url} over HTTP byte ranges took {f['time_s']:.2f} s (netCDF layer of the "
               f"preload; {wire}); a reference read through zarr at {REFERENCE_CONCURRENCY} in flight would take about "
               f"{predicted:.2f} s.")
        advice = (f"Write a kerchunk reference once, `climio make-refs {s3} -o refs.json`, and read through it: "
                  "`xr.open_dataset('reference://', engine='zarr', backend_kwargs={'consolidated': False, "
                  "'storage_options': {'fo': 'refs.json', 'remote_protocol': 's3'}})`.")
        ev = {"url": url, "calls": f["calls"], "time_s_reads": f["time_s"], "predicted_s": predicted,
              "wire": {"requests": f.get("wire_requests"), "gets": f.get("wire_gets"), "bytes": f.get("wire_bytes"),
                       "peak_in_flight": f.get("wire_peak_in_flight")}}
        out.append(finding("object-netcdf-byte-range", facts, f["time_s"], msg, ev, advice,
                           saves_s=f["time_s"] - predicted))
    return out
