"""Crafted object-store traces (climio.trace.inject.objects' records beside a synthetic preload trace),
one per object rule, for the rule tests of test_trace_analysis."""

import json

from trace_synth import T0, SynthProc

MS = 1_000_000


def write_objects(d, recs, settings=None, pid=1):
    head = {"schema": "climio-objects/1", "pid": pid, "host": "synth", "mode": "full", "t0_ns": T0,
            "t1_ns": T0 + 10_000 * MS, "argv": ["job.py"], "settings": settings or {}}
    for r in recs:
        r.setdefault("tid", pid)
        r.setdefault("range", None)
    (d / f"objects-synth-{pid}.jsonl").write_text("\n".join(json.dumps(x) for x in [head, *recs]) + "\n")


def _proc(d, netcdf_url=None):
    d.mkdir(parents=True, exist_ok=True)
    p = SynthProc(pid=1)
    p.leaf("pread64", "posix", dur=MS, file="/job.py", offset=0, size=100)
    if netcdf_url:
        for i in range(20):
            with p.span("nc_get_vara", "netcdf", before=40 * MS, file=netcdf_url, var="/tas"):
                pass
    p.idle(5_000 * MS)
    p.write(d)


def chunk_reads(n, in_flight, lat_ms=20, nbytes=4096, array="tas", key=None, rng=None, t0=T0 + 10 * MS):
    """n store gets of chunks, each served by one wire GET, `in_flight` at a time."""
    out = []
    for i in range(n):
        s = t0 + (i // in_flight) * lat_ms * MS
        k = key or f"{array}/c/{i}/0/0"
        out.append({"level": "store", "lib": "zarr:FsspecStore", "op": "get", "key": k, "id": i + 1, "t0": s,
                    "t1": s + lat_ms * MS, "bytes": nbytes, "kind": "chunk", "array": array,
                    "chunk": [0] if key else [i, 0, 0]})
        out.append({"level": "wire", "lib": "botocore", "method": "GET", "op": "GetObject",
                    "key": f"http://h/b/{k if not key else 'f.nc'}", "range": rng, "parent": i + 1, "t0": s + MS,
                    "t1": s + lat_ms * MS, "status": 206 if rng else 200, "bytes": nbytes, "retries": 0,
                    "attempt": 1})
    return out


def meta(array, shape, chunks):
    return {"level": "store", "lib": "zarr:FsspecStore", "op": "get", "key": f"{array}/zarr.json", "id": 10**6,
            "t0": T0 + MS, "t1": T0 + 2 * MS, "bytes": 500, "kind": "meta", "array": array, "chunk": None,
            "arrays": {array: {"shape": shape, "chunks": chunks, "shard": None, "dtype": "float32"}}}


def concurrency(d):
    _proc(d)
    write_objects(d, [meta("tas", [200, 16, 16], [1, 16, 16]), *chunk_reads(200, 10)], {"zarr_async_concurrency": 10})


def repeated(d):
    _proc(d)
    recs = chunk_reads(30, 1, array="lat", key="lat/0", rng=[100, 356], nbytes=256)
    write_objects(d, recs, {"zarr_async_concurrency": 10})


def head_list(d):
    _proc(d)
    recs = chunk_reads(60, 1, nbytes=2 << 20)
    for i, r in enumerate(list(recs)):
        if r["level"] == "wire":
            recs.append({**r, "method": "HEAD", "op": "HeadObject", "bytes": 0, "t0": r["t0"] - MS // 2,
                         "t1": r["t0"]})
    write_objects(d, recs)


def netcdf(d):
    _proc(d, netcdf_url="http://127.0.0.1:9/public/x.nc#mode=bytes")


OBJECT_RULE_TRACES = {"object-concurrency": concurrency, "object-small-chunks": concurrency,
                      "object-repeated": repeated, "object-head-list": head_list,
                      "object-netcdf-byte-range": netcdf}
