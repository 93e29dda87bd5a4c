"""Numbers of the parallel-write section, from records only (pure functions, tested directly).

A configuration is every parameter except the repetition's own; its bandwidth is summarised as
benchio does (min, median, max, mean over repetitions). Two rates per record: bytes / (last end -
first start), the honest one, and bytes / mean writer time, the thesis's.
"""

import json
import statistics

from ...stats import rank_spread

STUDY = "parallel-write"
SWEEP = "tune-write"   # params.sweep of the records `climio tune write` makes
PHASES = ("open", "define", "gather", "write", "fsync", "close")
# Parameters that differ between repetitions or merely echo the platform: not part of a configuration.
PER_REP = {"hints", "mpi_library", "library", "launcher", "stripe", "instance"}


def rank_stats(values) -> dict:
    """min / mean / max of per-rank times and imbalance = max / mean (stats.rank_spread)."""
    st = rank_spread(values)
    return {k: st[k] for k in ("min", "mean", "max", "imbalance")}


def kind_of(rec) -> str:
    p = rec["params"]
    if "instances" in p:
        return "load"
    if p.get("sweep"):
        return "sweep"
    return "scaling"


def config_key(rec) -> str:
    p = {k: v for k, v in rec["params"].items() if k not in PER_REP}
    return json.dumps(p, sort_keys=True, default=str)


REQUIRED_PARAMS = ("mode", "backend", "strategy", "ranks")
REQUIRED_METRICS = ("bytes", "rate_MBps")


def complete(rec) -> bool:
    """A record of climio-pario-write (records from elsewhere are listed, not drawn)."""
    return (rec.get("study") == STUDY and all(k in rec["params"] for k in REQUIRED_PARAMS)
            and all(k in rec["metrics"] for k in REQUIRED_METRICS))


def configurations(records, kind="scaling") -> list:
    """One row per configuration of the given kind, in (mode, backend, strategy, ranks) order."""
    groups = {}
    for r in records:
        if complete(r) and r["status"] == "ok" and kind_of(r) == kind:
            groups.setdefault(config_key(r), []).append(r)
    rows = []
    for rs in groups.values():
        p = rs[0]["params"]
        rates = [r["metrics"]["rate_MBps"] for r in rs]
        task = [r["metrics"].get("rate_mean_task_MBps") for r in rs if r["metrics"].get("rate_mean_task_MBps")]
        phases = {}
        for ph in PHASES:
            got = [r["metrics"].get("phases", {}).get(ph) for r in rs]
            got = [g for g in got if g]
            if got:
                phases[ph] = {s: statistics.mean(g[s] for g in got) for s in ("min", "mean", "max")}
        rows.append({
            "params": p, "mode": p["mode"], "backend": p["backend"], "strategy": p["strategy"], "ranks": p["ranks"],
            "writers": p.get("writers"), "files": p.get("files"), "reps": len(rs), "bytes": rs[0]["metrics"]["bytes"],
            "min_MBps": min(rates), "median_MBps": statistics.median(rates), "max_MBps": max(rates),
            "mean_MBps": statistics.mean(rates), "std_MBps": statistics.stdev(rates) if len(rates) > 1 else 0.0,
            "mean_task_MBps": statistics.mean(task) if task else None,
            "imbalance": statistics.mean(r["metrics"].get("imbalance") or 1.0 for r in rs),
            "phases": phases,
            "per_rank_total": _median_rep(rs)["metrics"].get("per_rank", {}).get("total", []),
            "verified": _verified(rs), "hints": rs[0]["params"].get("hints", {}),
            "select": rs[0]["metrics"].get("select"),
            "library": p.get("library"),
        })
    rows.sort(key=lambda x: (x["mode"], x["backend"], x["strategy"], x["ranks"], config_key({"params": x["params"]})))
    return rows


def _median_rep(rs):
    return sorted(rs, key=lambda r: r["metrics"]["rate_MBps"])[len(rs) // 2]


def _verified(rs):
    vals = [r["metrics"].get("verified") for r in rs]
    if any(v is False for v in vals):
        return False
    return True if all(v is True for v in vals) else None


def series(rows) -> dict:
    """(mode, backend, strategy) -> rows ordered by writers: the bandwidth-vs-writers lines."""
    out = {}
    for r in rows:
        out.setdefault((r["mode"], r["backend"], r["strategy"]), []).append(r)
    for v in out.values():
        v.sort(key=lambda r: r["ranks"])
    return out


def parallel_vs_serial(rows) -> list:
    """Per (mode, backend, ranks): the best parallel strategy's median rate over the serial gather's."""
    out = []
    keys = {(r["mode"], r["backend"], r["ranks"]) for r in rows}
    for mode, backend, ranks in sorted(keys):
        same = [r for r in rows if (r["mode"], r["backend"], r["ranks"]) == (mode, backend, ranks)]
        serial = [r for r in same if r["strategy"] == "serial"]
        par = [r for r in same if r["strategy"] != "serial"]
        if serial and par:
            best = max(par, key=lambda r: r["median_MBps"])
            out.append({"mode": mode, "backend": backend, "ranks": ranks, "best": best["strategy"],
                        "best_MBps": best["median_MBps"], "serial_MBps": serial[0]["median_MBps"],
                        "ratio": best["median_MBps"] / serial[0]["median_MBps"]})
    return out


def aggregate_instances(records) -> list:
    """Per (backend, strategy, rep): bytes of every instance / (last end - first start)."""
    groups = {}
    for r in records:
        p = r["params"]
        if r.get("study") != STUDY or r["status"] != "ok" or "instances" not in p:
            continue
        groups.setdefault((p["backend"], p["strategy"], p["instances"], r["rep"]), []).append(r)
    out = []
    for (backend, strategy, k, rep), rs in sorted(groups.items()):
        total = sum(r["metrics"]["bytes"] for r in rs)
        span = max(r["metrics"]["epoch_end"] for r in rs) - min(r["metrics"]["epoch_start"] for r in rs)
        out.append({"backend": backend, "strategy": strategy, "instances": k, "rep": rep, "complete": len(rs) == k,
                    "bytes": total, "span_s": span, "aggregate_MBps": total / span / 1e6 if span > 0 else None,
                    "per_instance_MBps": [r["metrics"]["rate_MBps"] for r in rs]})
    return out




def _sweep_key(rec) -> tuple:
    p = rec["params"]
    return (p.get("role"), p["backend"], tuple(p.get("io_layout") or ()), p.get("hints_requested", {}).get("cb_nodes"),
            (p.get("stripe") or {}).get("requested", {}).get("count"))


def sweep_summary(records) -> dict:
    """Rows (one per configuration, best first) and, per backend, the best and its speed-up."""
    groups = {}
    for r in records:
        if r["status"] == "ok" and r["params"].get("sweep") == SWEEP:
            groups.setdefault(_sweep_key(r), []).append(r)
    rows = []
    for (role, backend, lay, aggr, stripe), rs in groups.items():
        rates = [r["metrics"]["rate_MBps"] for r in rs]
        used = rs[0]["params"].get("hints", {})
        rows.append({"role": role, "backend": backend, "io_layout": list(lay), "cb_nodes": aggr,
                     "cb_nodes_in_effect": used.get("cb_nodes"), "stripe_count": stripe,
                     "writers": rs[0]["params"].get("writers"), "reps": len(rates),
                     "median_MBps": statistics.median(rates), "min_MBps": min(rates), "max_MBps": max(rates),
                     "write_s_max": statistics.median(r["metrics"]["phases"].get("write", {}).get("max", 0.0) for r in rs),
                     "verified": all(r["metrics"].get("verified") is not False for r in rs)})
    rows.sort(key=lambda x: -x["median_MBps"])
    best = {}
    for backend in sorted({r["backend"] for r in rows}):
        cands = [r for r in rows if r["backend"] == backend and r["role"] == "candidate"]
        base = [r for r in rows if r["backend"] == backend and r["role"] == "baseline"]
        if cands and base:
            top = cands[0]
            best[backend] = dict(top, baseline_MBps=base[0]["median_MBps"],
                                 speedup=top["median_MBps"] / base[0]["median_MBps"])
    return {"rows": rows, "best": best}
