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
    return {"cells": cells, "target": target(cells), "profile": store_profile(cells), "records": len(records),
            "errors": len(records) - len(ok),
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


def store_profile(cells) -> dict:
    """Per latency, from the raw-GET peer: the per-request latency and per-connection bandwidth
    (t = latency + size / bandwidth fitted to the median GET time at concurrency 1), the aggregate
    bandwidth (the best rate measured), and per GET size the concurrency Little's law asks for
    (aggregate bandwidth x time per GET / size) next to the smallest measured one that reaches 80%
    of that size's best rate."""
    import numpy as np
    out = {}
    peers = [c for c in cells if c["stack"] == PEER]
    for lat in sorted({c["latency_ms"] for c in peers}):
        at = [c for c in peers if c["latency_ms"] == lat]
        serial = sorted((c["get_bytes"], c["req_p50_ms"] / 1e3) for c in at if c["concurrency"] == 1)
        if len(serial) < 2:
            continue
        s, t = np.array(serial, dtype=float).T
        slope, icpt = np.polyfit(s, t, 1)
        latency_s, per_conn = max(float(icpt), 0.0), (1 / slope if slope > 0 else float("inf"))
        agg = max(c["rate_MBps"] for c in at) * 1e6
        sizes = {}
        for size in sorted({c["get_bytes"] for c in at}):
            row = [c for c in at if c["get_bytes"] == size]
            best = max(c["rate_MBps"] for c in row)
            reach = [c["concurrency"] for c in row if c["rate_MBps"] >= 0.8 * best]
            per_get = latency_s + size / per_conn
            sizes[size] = {"littles_law": agg * per_get / size, "measured": min(reach), "best_MBps": best}
        out[lat] = {"latency_s": latency_s, "per_connection_Bps": per_conn, "aggregate_Bps": agg, "sizes": sizes}
    return out


def headline(records):
    """The study's rows of the report's first screen (sections.Headline): per latency the raw-GET
    peak (size x concurrency), and the target stack's ratio to the peer at 4 MiB GETs."""
    from climio.present.sections import Headline, HeadlineRow, cache_state
    from climio.base.units import format_size
    ok = [r for r in records if r.get("status") == "ok"]
    s = summarise(ok)
    peers = [c for c in s["cells"] if c["stack"] == PEER]
    rows = []
    for lat in sorted({c["latency_ms"] for c in peers}):
        best = max((c for c in peers if c["latency_ms"] == lat), key=lambda c: c["rate_MBps"])
        behind = [r for r in ok if r["params"]["stack"] == PEER and _key(r) == (lat, best["get_bytes"], best["concurrency"])]
        rows.append(HeadlineRow(f"object store peak, {lat:g} ms round trip",
                                f"{best['rate_MBps']:.0f} MB/s with {format_size(best['get_bytes'])} GETs x "
                                f"{best['concurrency']} in flight (raw ranged GETs)", cache_state(behind)))
    t = s["target"]
    for lat, v in t["by_latency"].items():
        conc, ratio = max(v.items(), key=lambda kv: kv[0])
        behind = [r for r in ok if r["params"]["stack"] == t["stack"] and _key(r) == (lat, t["get_bytes"], conc)]
        rows.append(HeadlineRow(f"{t['stack']} over raw GETs, {lat:g} ms",
                                f"{ratio:.2f}x at {format_size(t['get_bytes'])} x{conc} (target >= {t['goal']})",
                                cache_state(behind)))
    if not rows:
        return None
    return Headline("object-read", rows, decide=("the full preset (5 sizes x 3 concurrencies x 0-50 ms, 3 rounds): "
                                                 "the per-connection bandwidth needs sizes where transfer, not the "
                                                 "round trip, sets a GET's time"))
