"""The object-read study's numbers from its records (pure): per cell the median rate and request
times, and each stack's ratio to the raw-GET peer of the same round (median over rounds)."""

from collections import defaultdict
from statistics import median

from . import PEER, TARGET_RATIO, TARGET_SIZE, TARGET_STACK


def _key(r):
    p = r["params"]
    return (float(p["latency_ms"]), int(p["get_bytes"]), int(p["concurrency"]))


def summarise(records) -> dict:
    ok = [r for r in records if r.get("status") == "ok"]
    by = defaultdict(list)
    for r in ok:
        by[(*_key(r), r["params"]["stack"])].append(r)
    peer_rate = {(k[:3], r["rep"]): r["metrics"]["rate_MBps"] for k, rs in by.items() if k[3] == PEER for r in rs}
    cells = []
    for (lat, size, conc, stack), rs in sorted(by.items()):
        ratios = [r["metrics"]["rate_MBps"] / peer_rate[((lat, size, conc), r["rep"])]
                  for r in rs if stack != PEER and peer_rate.get(((lat, size, conc), r["rep"]))]
        m = [r["metrics"] for r in rs]
        cells.append({
            "latency_ms": lat, "get_bytes": size, "concurrency": conc, "stack": stack, "n": len(rs),
            "rate_MBps": median(x["rate_MBps"] for x in m),
            "req_p50_ms": median(x.get("req_p50_ms", float("nan")) for x in m),
            "req_p99_ms": median(x.get("req_p99_ms", float("nan")) for x in m),
            "peer_ratio": median(ratios) if ratios else None,
            "cold": sum(1 for r in rs if r["cache"].get("effective", r["cache"].get("state")) == "cold"),
            "checksums_match": None,
        })
    crc = defaultdict(set)
    for r in ok:
        crc[(*_key(r), r["rep"])].add(r["metrics"].get("crc32"))
    for c in cells:
        c["checksums_match"] = all(len(v) == 1 for k, v in crc.items() if k[:3] == (c["latency_ms"], c["get_bytes"], c["concurrency"]))
    return {"cells": cells, "target": target(cells), "records": len(records), "errors": len(records) - len(ok),
            "not_cold": sum(1 for r in ok if r["cache"].get("effective", r["cache"].get("state")) != "cold")}


def target(cells) -> dict:
    """zarr-obstore's ratio to the peer at 4 MiB GETs per latency (the best concurrency's)."""
    out = {}
    for c in cells:
        if c["stack"] == TARGET_STACK and c["get_bytes"] == TARGET_SIZE and c["peer_ratio"] is not None:
            lat = c["latency_ms"]
            out.setdefault(lat, []).append((c["concurrency"], c["peer_ratio"]))
    return {"stack": TARGET_STACK, "get_bytes": TARGET_SIZE, "goal": TARGET_RATIO,
            "by_latency": {lat: dict(sorted(v)) for lat, v in sorted(out.items())},
            "met": bool(out) and all(min(r for _, r in v) >= TARGET_RATIO for v in out.values())}
