"""The object-chunking study's numbers (pure): median rate per cell, and per latency the smallest
chunk reaching 80% of the peak, what shards over time do to xt and xy reads of xy chunks, and
netCDF-4 through references against native Zarr."""

from collections import defaultdict
from statistics import median

PEAK_SHARE = 0.8
RECOVERS = 1.5     # an xt rate this many times the unsharded one counts as recovered


def _cold(r) -> bool:
    return r["cache"].get("effective", r["cache"].get("state")) in ("cold", "unverified")


def cells(records) -> list:
    by = defaultdict(list)
    for r in records:
        if r.get("status") == "ok":
            p = r["params"]
            by[(p["latency_ms"], p["stack"], p["chunks_label"], p["chunks"], p["shards"], p["compression"],
                p["read"])].append(r)
    out = []
    for (lat, stack, label, chunks, shards, comp, read), rs in sorted(by.items(), key=lambda kv: str(kv[0])):
        m = [r["metrics"] for r in rs]
        out.append({"latency_ms": lat, "stack": stack, "label": label, "chunks": chunks, "shards": shards,
                    "compression": comp, "read": read, "rate_MBps": median(x["rate_MBps"] for x in m),
                    "gets": median(x.get("gets", 0) for x in m), "chunk_bytes": m[0]["chunk_bytes"],
                    "n": len(rs), "cold": sum(_cold(r) for r in rs)})
    return out


def _find(cs, **kw):
    return [c for c in cs if all(c[k] == v for k, v in kw.items())]


def smallest_for_peak(cs) -> list:
    """Per latency and read: zarr-obstore, no shards, the first codec: the peak rate and the
    smallest chunk whose rate reaches 80% of it."""
    out = []
    base = [c for c in cs if c["stack"] == "zarr-obstore" and c["shards"] == "none"]
    comps = sorted({c["compression"] for c in base})
    for lat in sorted({c["latency_ms"] for c in base}):
        for read in sorted({c["read"] for c in base}):
            group = _find(base, latency_ms=lat, read=read, compression=comps[0] if comps else None)
            if len(group) < 2:
                continue
            peak = max(group, key=lambda c: c["rate_MBps"])
            ok = [c for c in group if c["rate_MBps"] >= PEAK_SHARE * peak["rate_MBps"]]
            small = min(ok, key=lambda c: c["chunk_bytes"])
            out.append({"latency_ms": lat, "read": read, "peak_MBps": peak["rate_MBps"], "peak_label": peak["label"],
                        "smallest_label": small["label"], "smallest_chunk_bytes": small["chunk_bytes"],
                        "smallest_MBps": small["rate_MBps"], "shapes": len(group)})
    return out


def sharding(cs) -> list:
    """xy chunks (E) with shards over time against without: the xt and the xy rate ratios."""
    out = []
    for lat in sorted({c["latency_ms"] for c in cs}):
        for comp in sorted({c["compression"] for c in cs}):
            row = {"latency_ms": lat, "compression": comp}
            for read in ("xt", "xy"):
                plain = _find(cs, latency_ms=lat, stack="zarr-obstore", label="E", shards="none", compression=comp, read=read)
                sharded = [c for c in _find(cs, latency_ms=lat, stack="zarr-obstore", label="E", compression=comp, read=read)
                           if c["shards"] != "none"]
                if plain and sharded:
                    row[read] = sharded[0]["rate_MBps"] / plain[0]["rate_MBps"]
                    row[f"{read}_gets"] = (plain[0]["gets"], sharded[0]["gets"])
            if "xt" in row:
                out.append(row)
    return out


def references(cs) -> list:
    """netCDF-4 through a kerchunk reference against native Zarr (same chunks, codec and read),
    through the same client (zarr-fsspec: s3fs) and through obstore (zarr-obstore)."""
    out = []
    for c in _find(cs, stack="zarr-kerchunk"):
        row = {"latency_ms": c["latency_ms"], "label": c["label"], "read": c["read"], "compression": c["compression"],
               "ref_MBps": c["rate_MBps"]}
        for stack in ("zarr-fsspec", "zarr-obstore"):
            z = _find(cs, stack=stack, latency_ms=c["latency_ms"], label=c["label"], shards="none",
                      compression=c["compression"], read=c["read"])
            if z:
                row[stack] = c["rate_MBps"] / z[0]["rate_MBps"]
        if len(row) > 5:
            out.append(row)
    return out


def summarise(records) -> dict:
    cs = cells(records)
    return {"cells": cs, "smallest": smallest_for_peak(cs), "sharding": sharding(cs), "references": references(cs),
            "records": len(records), "errors": sum(1 for r in records if r.get("status") != "ok"),
            "not_cold": sum(1 for r in records if r.get("status") == "ok" and not _cold(r))}


def headline(records):
    """The study's rows of the report's first screen (sections.Headline): per latency and read
    shape the fastest Zarr layout (chunks, shards) through zarr-obstore and its rate."""
    from climio.present.sections import Headline, HeadlineRow, cache_state
    cs = [c for c in cells(records) if c["stack"] == "zarr-obstore"]
    rows = []
    for lat in sorted({c["latency_ms"] for c in cs}):
        for read in sorted({c["read"] for c in cs if c["latency_ms"] == lat}):
            best = max(_find(cs, latency_ms=lat, read=read), key=lambda c: c["rate_MBps"])
            behind = [r for r in records if r.get("status") == "ok" and r["params"]["stack"] == "zarr-obstore"
                      and r["params"]["latency_ms"] == lat and r["params"]["read"] == read
                      and r["params"]["chunks_label"] == best["label"] and r["params"]["shards"] == best["shards"]
                      and r["params"]["compression"] == best["compression"]]
            shards = "" if best["shards"] == "none" else f", shards over {best['shards']}"
            rows.append(HeadlineRow(f"best Zarr chunks for {read} reads, {lat:g} ms",
                                    f"{best['label']} {best['chunks']}{shards}, {best['compression']}: "
                                    f"{best['rate_MBps']:.3g} MB/s ({best['gets']:.0f} GETs)", cache_state(behind)))
    if not rows:
        return None
    return Headline("object-chunking", rows, decide=("the full preset (a 96x4x180x360 field, chunk shapes B-G, "
                                                     "0/20/50 ms, 3 cold repetitions): the quick field's chunks "
                                                     "are too few to separate the shapes"))
