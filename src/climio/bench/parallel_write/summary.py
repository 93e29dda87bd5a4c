"""Numbers of the parallel-write section, from records only (pure functions, tested directly).

A configuration is every parameter except the repetition's own and those that merely echo the
platform (PER_REP); records are grouped by those columns of records.to_frame() through
stats.group_configs. Its bandwidth is summarised as benchio does (min, median, max, mean over
repetitions). Two rates per record: bytes / (last end - first start), the honest one, and
bytes / mean writer time, the thesis's. Balance across ranks is stats.rank_spread: imbalance =
max / mean of the per-rank total times (the record's own "imbalance" is the same number).
"""

import json
import statistics

from climio.runs.records import to_frame
from climio.present.stats import PER_REP_PARAMS, group_configs, rank_spread

STUDY = "parallel-write"
SWEEP = "tune-write"   # params.sweep of the records `climio tune write` makes
PHASES = ("open", "define", "gather", "write", "fsync", "close")
# Parameters that differ between repetitions or merely echo the platform: not part of a configuration.
PER_REP = {"hints", "mpi_library", "library", "launcher", "stripe", "instance"}
# Below this many bytes per rank a write is dominated by open/define/metadata latency, not bandwidth.
LATENCY_BYTES = 64 << 20
# The columns of records.to_frame() that tell the points of a `tune write` sweep apart.
SWEEP_COLUMNS = ["params.role", "stack", "params.io_layout", "params.hints_requested.cb_nodes",
                 "params.stripe.requested.count"]
# The columns that make one bandwidth-vs-writers line, and one rep of a set of concurrent instances.
LINE_COLUMNS = ["params.mode", "params.backend", "params.strategy"]
INSTANCE_COLUMNS = [*LINE_COLUMNS, "params.instances", "rep"]


def rank_stats(values) -> dict:
    """min / mean / max of per-rank times and imbalance = max / mean (stats.rank_spread)."""
    st = rank_spread(values)
    return {k: st[k] for k in ("min", "mean", "max", "imbalance")}


def record_imbalance(rec) -> float:
    """max / mean of the record's per-rank total times (stats.rank_spread); the record's own
    "imbalance" when it has no per-rank times; 1.0 when it has neither."""
    total = rec["metrics"].get("per_rank", {}).get("total") or []
    if len(total) > 0:
        st = rank_spread(total)
        if st["imbalance"] is not None:
            return st["imbalance"]
    return rec["metrics"].get("imbalance") or 1.0


def kind_of(rec) -> str:
    p = rec["params"]
    if "instances" in p:
        return "load"
    if p.get("sweep"):
        return "sweep"
    return "scaling"


REQUIRED_PARAMS = ("mode", "backend", "strategy", "ranks")
REQUIRED_METRICS = ("bytes", "rate_MBps")


def complete(rec) -> bool:
    """A record of climio-pario --op write (records from elsewhere are listed, not drawn)."""
    return (rec.get("study") == STUDY and all(k in rec.get("params", {}) for k in REQUIRED_PARAMS)
            and all(k in rec.get("metrics", {}) for k in REQUIRED_METRICS))


def config_columns(records) -> list:
    """The params columns of records.to_frame() that make a configuration (all but PER_REP's)."""
    skip = PER_REP | PER_REP_PARAMS
    return [c for c in to_frame(records).columns if c.startswith("params.") and c.split(".")[1] not in skip]


def _params_key(params) -> str:
    return json.dumps({k: v for k, v in params.items() if k not in PER_REP}, sort_keys=True, default=str)


def configurations(records, kind="scaling") -> list:
    """One row per configuration of the given kind, in (mode, backend, strategy, ranks) order."""
    recs = [r for r in records if complete(r) and r["status"] == "ok" and kind_of(r) == kind]
    if not recs:
        return []
    rows = []
    for cfg in group_configs(recs, by=config_columns(recs)):
        rs = cfg.records
        p = rs[0]["params"]
        rates = [r["metrics"]["rate_MBps"] for r in rs]
        task = [r["metrics"].get("rate_mean_task_MBps") for r in rs if r["metrics"].get("rate_mean_task_MBps")]
        phases = {}
        for ph in PHASES:
            got = [r["metrics"].get("phases", {}).get(ph) for r in rs]
            got = [g for g in got if g]
            if got:
                phases[ph] = {s: statistics.mean(g[s] for g in got) for s in ("min", "mean", "max")}
        spread = [rank_spread(r["metrics"].get("per_rank", {}).get("total") or []) for r in rs]
        idle = [s["idle_share"] for s in spread if s["n"]]
        nbytes = rs[0]["metrics"]["bytes"]
        rows.append({
            "params": p, "mode": p["mode"], "backend": p["backend"], "strategy": p["strategy"], "ranks": p["ranks"],
            "writers": p.get("writers"), "files": p.get("files"), "reps": len(rs), "bytes": nbytes,
            "bytes_per_rank": nbytes / p["ranks"] if p["ranks"] else nbytes,
            "min_MBps": min(rates), "median_MBps": statistics.median(rates), "max_MBps": max(rates),
            "mean_MBps": statistics.mean(rates), "std_MBps": statistics.stdev(rates) if len(rates) > 1 else 0.0,
            "mean_task_MBps": statistics.mean(task) if task else None,
            "imbalance": statistics.mean(record_imbalance(r) for r in rs),
            "idle_share": statistics.mean(idle) if idle else None,
            "phases": phases,
            "per_rank_total": _median_rep(rs)["metrics"].get("per_rank", {}).get("total", []),
            "verified": _verified(rs), "hints": p.get("hints", {}),
            "select": rs[0]["metrics"].get("select"),
            "library": p.get("library"),
        })
    rows.sort(key=lambda x: (x["mode"], x["backend"], x["strategy"], x["ranks"], _params_key(x["params"])))
    return rows


def latency_dominated(row) -> bool:
    """A configuration whose ranks write less than LATENCY_BYTES each (a survey-size run): its rate
    measures open/define/metadata latency more than bandwidth."""
    return row["bytes_per_rank"] < LATENCY_BYTES


def _median_rep(rs):
    return sorted(rs, key=lambda r: r["metrics"]["rate_MBps"])[len(rs) // 2]


def _verified(rs):
    vals = [r["metrics"].get("verified") for r in rs]
    if any(v is False for v in vals):
        return False
    return True if all(v is True for v in vals) else None


def series(rows) -> dict:
    """(mode, backend, strategy) -> rows ordered by writers: the bandwidth-vs-writers lines. A row
    carries its configuration's params, so stats.group_configs groups rows as it groups records."""
    out = {}
    for line in group_configs(rows, by=LINE_COLUMNS):
        first = line.records[0]
        out[(first["mode"], first["backend"], first["strategy"])] = sorted(line.records, key=lambda r: r["ranks"])
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


def best_per_strategy(rows) -> list:
    """Per mode at its largest rank count: the best backend of each strategy (median MB/s), and the best
    parallel configuration's speed-up over the serial gather of the same backend."""
    out = []
    for mode in sorted({r["mode"] for r in rows}):
        mine = [r for r in rows if r["mode"] == mode]
        top = max(r["ranks"] for r in mine)
        at = [r for r in mine if r["ranks"] == top]
        best = {}
        for r in at:
            if r["strategy"] not in best or r["median_MBps"] > best[r["strategy"]]["median_MBps"]:
                best[r["strategy"]] = r
        ratios = [x for x in parallel_vs_serial(at)]
        speedup = max(ratios, key=lambda x: x["best_MBps"]) if ratios else None
        out.append({"mode": mode, "ranks": top,
                    "best": {s: {"backend": r["backend"], "median_MBps": r["median_MBps"]}
                             for s, r in sorted(best.items(), key=lambda kv: -kv[1]["median_MBps"])},
                    "speedup": speedup,
                    "latency_dominated": all(latency_dominated(r) for r in at),
                    "bytes_per_rank": max(r["bytes_per_rank"] for r in at)})
    return out


def aggregate_instances(records) -> list:
    """Per (mode, backend, strategy, rep): bytes of every instance / (last end - first start)."""
    recs = [r for r in records if r.get("study") == STUDY and r["status"] == "ok" and "instances" in r["params"]]
    out = []
    for cfg in group_configs(recs, by=INSTANCE_COLUMNS):
        rs = cfg.records
        p = rs[0]["params"]
        mode, backend, strategy, k, rep = p.get("mode", ""), p["backend"], p["strategy"], p["instances"], rs[0]["rep"]
        total = sum(r["metrics"]["bytes"] for r in rs)
        span = max(r["metrics"]["epoch_end"] for r in rs) - min(r["metrics"]["epoch_start"] for r in rs)
        out.append({"mode": mode, "backend": backend, "strategy": strategy, "instances": k, "rep": rep,
                    "complete": len(rs) == k, "bytes": total, "span_s": span,
                    "aggregate_MBps": total / span / 1e6 if span > 0 else None,
                    "per_instance_MBps": [r["metrics"]["rate_MBps"] for r in rs]})
    out.sort(key=lambda x: (x["mode"], x["backend"], x["strategy"], x["instances"], x["rep"]))
    return out


def sweep_summary(records) -> dict:
    """Rows (one per configuration, best first) and, per backend, the best and its speed-up."""
    recs = [r for r in records if r["status"] == "ok" and r["params"].get("sweep") == SWEEP]
    rows = []
    for cfg in (group_configs(recs, by=SWEEP_COLUMNS) if recs else []):
        rs = cfg.records
        p = rs[0]["params"]
        rates = [r["metrics"]["rate_MBps"] for r in rs]
        used = p.get("hints", {})
        rows.append({"role": p.get("role"), "backend": p["backend"], "io_layout": list(p.get("io_layout") or ()),
                     "cb_nodes": p.get("hints_requested", {}).get("cb_nodes"),
                     "cb_nodes_in_effect": used.get("cb_nodes"),
                     "stripe_count": (p.get("stripe") or {}).get("requested", {}).get("count"),
                     "writers": p.get("writers"), "reps": len(rates),
                     "median_MBps": statistics.median(rates), "min_MBps": min(rates), "max_MBps": max(rates),
                     "write_s_max": statistics.median(r["metrics"].get("phases", {}).get("write", {}).get("max", 0.0)
                                                      for r in rs),
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


def summarise(records) -> dict:
    """Everything the section shows, as numbers (the predictor reads these too)."""
    mine = [r for r in records if r.get("study") == STUDY]
    ok = [r for r in mine if complete(r)]
    rows = configurations(ok)
    return {
        "records": len(mine), "foreign": len(mine) - len(ok), "not_ok": sum(1 for r in ok if r["status"] != "ok"),
        "configurations": rows,
        "parallel_vs_serial": parallel_vs_serial(rows),
        "best": best_per_strategy(rows) if rows else [],
        "latency_dominated": [r for r in rows if latency_dominated(r)],
        "load": aggregate_instances(ok),
        "sweep": sweep_summary(ok),
    }


def headline(records):
    """The study's row of the report's first screen (sections.Headline): per mode, the best
    parallel write strategy at the largest rank count and its bandwidth against the serial gather."""
    from climio.present.cells import num
    from climio.present.sections import Headline, HeadlineRow, cache_state
    from climio.base.units import format_size
    mine = [r for r in records if r.get("study") == STUDY and complete(r)]
    rows = configurations(mine)
    out = []
    for b in (best_per_strategy(rows) if rows else []):
        par = {s: v for s, v in b["best"].items() if s != "serial"} or b["best"]
        strategy, v = max(par.items(), key=lambda kv: kv[1]["median_MBps"])
        text = f"{strategy}, {v['backend']}: {num(v['median_MBps'])} MB/s at {b['ranks']} ranks"
        sp = b["speedup"]
        if sp and sp["best"] == strategy and sp["backend"] == v["backend"]:
            text += f", {sp['ratio']:.2f}× serial gather"
        if b["latency_dominated"]:
            text += f" (latency-bound: ≤ {format_size(b['bytes_per_rank'])}/rank)"
        behind = [r for r in mine if r["params"].get("mode") == b["mode"] and r["params"].get("strategy") == strategy
                  and r["params"].get("backend") == v["backend"] and r["params"].get("ranks") == b["ranks"]]
        out.append(HeadlineRow(f"best parallel write ({b['mode']})", text, cache_state(behind)))
    if not out:
        return None
    return Headline(STUDY, out, decide=(f"at least {format_size(LATENCY_BYTES)} per rank (the default grid, without "
                                        "--quick) and several nodes (a hostfile or --launcher)"))
