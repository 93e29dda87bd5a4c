"""What a job's object-store records say (climio.trace.objects_reader), as the facts the report shows
and the rules (climio.rules.objects) judge. Every number names its level: "store" (what the job asked
of a store: zarr, fsspec, fsspec files) or "wire" (HTTP requests sent: botocore, aiohttp in Python; libcurl
and obstore's plain-http sockets in the preload).

    analyse_objects(ObjectTrace, netcdf_urls=()) -> dict
"""

from collections import Counter, defaultdict
from urllib.parse import urlsplit

import numpy as np

TIMELINE_BINS = 120
META_WIRE_OPS = ("HEAD", "LIST")


def wire_kind(rec) -> str:
    """GET | HEAD | LIST | PUT | DELETE | other, from a wire record's method and operation."""
    op, method = str(rec.get("op") or ""), str(rec.get("method") or "").upper()
    if op.startswith("List") or "list-type=" in str(rec.get("key") or ""):
        return "LIST"
    return method if method in ("GET", "HEAD", "PUT", "DELETE", "POST") else op.upper() or "other"


def store_kind(rec) -> str:
    op = rec.get("op")
    return "HEAD" if op == "head" else "LIST" if op == "list" else "PUT" if op == "set" else "GET"


def is_metadata(rec, level) -> bool:
    if level == "wire":
        return wire_kind(rec) in META_WIRE_OPS or str(rec.get("key", "")).endswith((".zmetadata", "zarr.json", ".zarray", ".zattrs", ".zgroup"))
    return rec.get("kind") == "meta" or store_kind(rec) in META_WIRE_OPS


def _pct(ms) -> dict:
    if not len(ms):
        return {"p50_ms": None, "p90_ms": None, "p99_ms": None}
    q = np.percentile(ms, [50, 90, 99])
    return {"p50_ms": round(float(q[0]), 3), "p90_ms": round(float(q[1]), 3), "p99_ms": round(float(q[2]), 3)}


def level_summary(recs, level) -> dict:
    kind = wire_kind if level == "wire" else store_kind
    by = defaultdict(list)
    for r in recs:
        by[kind(r)].append(r)
    ops = {}
    for k, rs in sorted(by.items()):
        ms = np.array([(r["t1"] - r["t0"]) / 1e6 for r in rs])
        ops[k] = {"count": len(rs), "bytes": int(sum(r.get("bytes") or 0 for r in rs)),
                  "time_s": float(ms.sum() / 1e3), **_pct(ms)}
    out = {"requests": len(recs), "bytes": int(sum(r.get("bytes") or 0 for r in recs)), "by_op": ops,
           "libs": dict(Counter(str(r.get("lib")) for r in recs))}
    if level == "wire":
        out["retries"] = int(sum(r.get("retries") or 0 for r in recs if r.get("final", True)))
        out["statuses"] = {str(k): v for k, v in Counter(r.get("status") for r in recs).items()}
    return out


def intervals(recs) -> np.ndarray:
    return np.array([[r["t0"], r["t1"]] for r in recs], dtype=np.int64).reshape(-1, 2)


def union_ns(iv) -> int:
    """Time covered by at least one interval."""
    if not len(iv):
        return 0
    iv = iv[np.argsort(iv[:, 0])]
    total, cur_s, cur_e = 0, iv[0, 0], iv[0, 1]
    for s, e in iv[1:]:
        if s > cur_e:
            total += cur_e - cur_s
            cur_s, cur_e = s, e
        else:
            cur_e = max(cur_e, e)
    return int(total + cur_e - cur_s)


def peak(iv) -> int:
    if not len(iv):
        return 0
    ev = np.concatenate([np.stack([iv[:, 0], np.ones(len(iv))], 1), np.stack([iv[:, 1], -np.ones(len(iv))], 1)])
    ev = ev[np.lexsort((ev[:, 1], ev[:, 0]))]     # ends before starts at the same instant
    return int(np.cumsum(ev[:, 1]).max())


def timeline(recs, t0) -> dict:
    """Requests started per second and mean requests in flight (Little: overlap / bin width) per bin."""
    iv = intervals(recs)
    if not len(iv):
        return {"bin_s": 0, "t_s": [], "requests_per_s": [], "in_flight": []}
    span = max(int(iv[:, 1].max() - t0), 1)
    width = max(span // TIMELINE_BINS, 1_000_000)
    n = span // width + 1
    edges = t0 + np.arange(n + 1, dtype=np.int64) * width
    starts = np.bincount(((iv[:, 0] - t0) // width).clip(0, n - 1), minlength=n)
    busy = np.zeros(n)
    for s, e in iv:   # each interval's overlap with the bins it spans
        a, b = int((s - t0) // width), int((e - t0) // width)
        for j in range(max(a, 0), min(b, n - 1) + 1):
            busy[j] += min(e, edges[j + 1]) - max(s, edges[j])
    return {"bin_s": width / 1e9, "t_s": [round(float(x), 4) for x in (np.arange(n) * width / 1e9)],
            "requests_per_s": [round(float(x), 2) for x in starts / (width / 1e9)],
            "in_flight": [round(float(x), 3) for x in busy / width]}


def concurrency(recs, level, settings) -> dict:
    """Little's law over the data requests: mean in flight = their summed time / the time any was in flight."""
    data = [r for r in recs if not is_metadata(r, level)]
    iv = intervals(data)
    busy = union_ns(iv)
    lat = np.array([(r["t1"] - r["t0"]) / 1e6 for r in data])
    nbytes = [r.get("bytes") or 0 for r in data]
    return {"level": level, "requests": len(data), "mean_in_flight": float((iv[:, 1] - iv[:, 0]).sum() / busy) if busy else 0.0,
            "peak_in_flight": peak(iv), "busy_s": busy / 1e9, "latency_p50_ms": _pct(lat)["p50_ms"],
            "mean_request_bytes": float(np.mean(nbytes)) if nbytes else 0.0,
            "client_limit": settings.get("zarr_async_concurrency")}


def repeats(recs, level) -> dict:
    """The same (key, range) fetched more than once by one process: data reads at this level."""
    gets = [r for r in recs if (wire_kind(r) if level == "wire" else store_kind(r)) == "GET" and (r.get("bytes") or 0) > 0]
    seen = Counter((r["proc"], r.get("key"), tuple(r.get("range") or ())) for r in gets)
    size = {(r["proc"], r.get("key"), tuple(r.get("range") or ())): r.get("bytes") or 0 for r in gets}
    array = {(r["proc"], r.get("key"), tuple(r.get("range") or ())): r.get("array") for r in gets}
    rep = {k: n for k, n in seen.items() if n > 1}
    top = sorted(rep.items(), key=lambda kv: -(kv[1] - 1) * size[kv[0]])[:10]
    return {"level": level, "fetches": len(gets), "distinct": len(seen), "repeated_ranges": len(rep),
            "extra_fetches": int(sum(n - 1 for n in rep.values())),
            "extra_bytes": int(sum((n - 1) * size[k] for k, n in rep.items())),
            "top": [{"key": k[1], "range": list(k[2]) or None, "count": n, "bytes": size[k], "array": array[k]}
                    for k, n in top]}


def metadata_during_compute(recs, level) -> dict:
    """Metadata requests (HEAD, LIST, zarr.json, .zmetadata, ...) after the process's first data read."""
    first = {}
    for r in recs:
        if not is_metadata(r, level) and (r.get("bytes") or 0) > 0:
            first[r["proc"]] = min(first.get(r["proc"], r["t0"]), r["t0"])
    late = [r for r in recs if is_metadata(r, level) and r["proc"] in first and r["t0"] > first[r["proc"]]]
    kinds = Counter((wire_kind(r) if level == "wire" else ("meta-get" if r.get("kind") == "meta" else store_kind(r)))
                    for r in late)
    return {"level": level, "count": len(late), "by_kind": dict(kinds),
            "time_s": float(sum(r["t1"] - r["t0"] for r in late) / 1e9),
            "all_metadata": sum(1 for r in recs if is_metadata(r, level))}


def per_array(store, wire) -> list:
    """Per Zarr array (or reference variable): chunk reads, distinct chunks, and the wire requests
    that served them (joined by the store op's id in the same process)."""
    served = Counter((w["proc"], w.get("parent")) for w in wire if w.get("parent"))
    layouts = {}
    for r in store:
        for name, lay in (r.get("arrays") or {}).items():
            layouts[name] = lay
    acc = defaultdict(lambda: {"chunk_reads": 0, "chunks": set(), "bytes": 0, "wire": 0, "time_s": 0.0})
    for r in store:
        if r.get("kind") != "chunk" or r.get("op") not in ("get", "get-range"):
            continue
        a = acc[r.get("array") or ""]
        a["chunk_reads"] += 1
        a["chunks"].add(tuple(r.get("chunk") or ()))
        a["bytes"] += r.get("bytes") or 0
        a["wire"] += served.get((r["proc"], r.get("id")), 0)
        a["time_s"] += (r["t1"] - r["t0"]) / 1e9
    out = []
    for name, a in sorted(acc.items(), key=lambda kv: -kv[1]["chunk_reads"]):
        out.append({"array": name or "/", "chunk_reads": a["chunk_reads"], "distinct_chunks": len(a["chunks"]),
                    "reads_per_chunk": a["chunk_reads"] / max(len(a["chunks"]), 1),
                    "wire_requests": a["wire"], "requests_per_chunk_read": a["wire"] / a["chunk_reads"] if wire else None,
                    "mean_chunk_bytes": a["bytes"] / a["chunk_reads"], "time_s": a["time_s"],
                    "layout": layouts.get(name)})
    return out


def join_below_python(store, wire) -> None:
    """Wire requests the preload's socket parser saw (obstore over http://) name no store op: give each the op
    of the same process whose key ends the request's path and that was running when the request was sent."""
    by = defaultdict(list)
    for s in store:
        if s.get("key") and s.get("id") is not None:
            by[(s["proc"], str(s["key"]).strip("/"))].append(s)
    for w in wire:
        if w.get("parent") or w.get("lib") != "socket":
            continue
        parts = urlsplit(str(w.get("key") or "")).path.strip("/").split("/")
        for i in range(len(parts)):
            hit = next((s for s in by.get((w["proc"], "/".join(parts[i:])), ()) if s["t0"] <= w["t0"] <= s["t1"]), None)
            if hit is not None:
                w["parent"] = hit["id"]
                break


def byte_range_wire(netcdf_urls, wire) -> list:
    """netCDF files read over byte ranges with the libcurl requests the preload recorded for each URL."""
    out = []
    for f in netcdf_urls:
        url = f["url"].split("#", 1)[0].split("?", 1)[0]
        mine = [w for w in wire if w.get("lib") == "libcurl" and str(w.get("key")) == url]
        out.append({**f, "wire_requests": len(mine) if wire else None,
                    "wire_gets": sum(1 for w in mine if wire_kind(w) == "GET"),
                    "wire_bytes": int(sum(w.get("bytes") or 0 for w in mine)),
                    "wire_peak_in_flight": peak(intervals(mine)) if mine else 0})
    return out


def _counters_summary(ot) -> dict:
    lv = defaultdict(lambda: {"requests": 0, "bytes": 0, "time_s": 0.0, "by_op": defaultdict(lambda: {"count": 0, "bytes": 0, "time_s": 0.0})})
    for c in ot.counters:
        L = lv[c["level"]]
        L["requests"] += c["count"]
        L["bytes"] += c["bytes"]
        L["time_s"] += c["time_ns"] / 1e9
        o = L["by_op"][c["op"]]
        o["count"] += c["count"]
        o["bytes"] += c["bytes"]
        o["time_s"] += c["time_ns"] / 1e9
    return {k: {**v, "by_op": {o: dict(x) for o, x in v["by_op"].items()}} for k, v in lv.items()}


def analyse_objects(ot, netcdf_urls=()) -> dict:
    """The object-store facts of a trace (see the module doc); `netcdf_urls`: netCDF-C byte-range reads
    the preload saw (files opened by URL), {"url", "calls", "time_s", "bytes"} each."""
    settings = {}
    for h in ot.processes:
        settings.update(h.get("settings") or {})
    out = {"mode": ot.mode, "processes": len(ot.processes), "settings": settings, "notes": list(ot.notes),
           "netcdf_byte_ranges": list(netcdf_urls)}
    if ot.mode == "counters":
        out["levels"] = _counters_summary(ot)
        out["busy_s"] = sum(v["time_s"] for k, v in out["levels"].items() if k == "store")
        return out
    store, wire = ot.store, ot.wire
    join_below_python(store, wire)
    out["netcdf_byte_ranges"] = byte_range_wire(netcdf_urls, wire)
    served = {(r["proc"], r.get("id")): r for r in store}
    for w in wire:     # the array and chunk a wire request served: its store op's
        s = served.get((w["proc"], w.get("parent")))
        if s is not None and s.get("array") is not None:
            w.setdefault("array", s["array"])
            w.setdefault("served_key", s.get("key"))
    t0 = min([r["t0"] for r in store + wire] or [0])
    main = "wire" if wire else "store"
    recs = wire if wire else store
    out.update(
        levels={"store": level_summary(store, "store"), "wire": level_summary(wire, "wire")},
        busy_s=union_ns(intervals(store)) / 1e9 if store else union_ns(intervals(wire)) / 1e9,
        concurrency=concurrency(recs, main, settings), timeline={"level": main, **timeline(recs, t0)},
        bytes={"returned_to_job": int(sum(r.get("bytes") or 0 for r in store if store_kind(r) == "GET")) if store else None,
               "fetched_on_wire": int(sum(r.get("bytes") or 0 for r in wire if wire_kind(r) == "GET")) if wire else None},
        repeats=repeats(recs, main), repeats_store=repeats(store, "store"),
        metadata=metadata_during_compute(recs, main), arrays=per_array(store, wire),
        head_list={"level": main, "count": sum(1 for r in recs if (wire_kind(r) if main == "wire" else store_kind(r)) in META_WIRE_OPS),
                   "requests": len(recs),
                   "time_s": float(sum(r["t1"] - r["t0"] for r in recs if (wire_kind(r) if main == "wire" else store_kind(r)) in META_WIRE_OPS) / 1e9)})
    return out
