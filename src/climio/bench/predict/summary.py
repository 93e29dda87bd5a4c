"""The validation's numbers (pure): predicted against measured per configuration and overall."""

import math

import numpy as np

from climio.present.stats import group_configs

THESIS = {"stsa_flowchart_factor": 4.7, "xt_speedup_predicted": 33, "xt_speedup_observed": 24}
TARGET_MEDIAN, TARGET_P90, TARGET_MAX = 1.3, 2.0, 3.0
WORST = 10
NOISY = 1.5       # a configuration whose repetitions differ more (slowest / fastest) is flagged, still counted


def _median(xs):
    return float(np.median(xs)) if len(xs) else None


def _quantile(xs, q):
    return float(np.quantile(xs, q)) if len(xs) else None     # linear between order statistics


def _row(cfg) -> dict:
    recs, p = cfg.records, cfg.params
    meas = _median([r["metrics"]["wall_s"] for r in recs])
    pred = p["predicted_s"]
    warm = sum(1 for r in recs if (r.get("cache") or {}).get("effective", "cold") != "cold")
    err = abs(math.log(pred / meas)) if pred > 0 and meas > 0 else math.inf
    sim = p.get("simulated") or {}
    cpu = _median([r["metrics"]["cpu_s"] for r in recs if r["metrics"].get("cpu_s") is not None])
    walls = [r["metrics"]["wall_s"] for r in recs]
    spread = max(walls) / min(walls) if walls and min(walls) > 0 else math.inf
    now = _median([r["metrics"]["predicted_now_s"] for r in recs if r["metrics"].get("predicted_now_s")])
    return {"config": p["config"], "layout": p["layout"], "read": p["read"], "stack": p["stack"], "tasks": p["tasks"],
            "compression": p["compression"], "chunks": p["chunks"], "predicted_s": pred, "measured_s": meas,
            "ratio": pred / meas if meas else math.inf, "abs_log": err, "factor": math.exp(err),
            "bound": p["predicted"]["bound"], "path": p["predicted"]["path"],
            "breakdown": {k: p["predicted"][k] for k in ("io_s", "decode_s", "cpu_s")},
            "chunk_cache": p.get("chunk_cache"), "simulated_chunk_reads": sim.get("chunk_reads"),
            "simulated_hits": sim.get("cache_hits"), "simulated_collisions": sim.get("collisions"),
            "counted_chunk_reads": (p.get("measured_counts") or {}).get("chunk_reads"),
            "measured_cpu_s": cpu, "cpu_share": cpu / meas if cpu is not None and meas else None,
            "load_1min": p.get("load_1min"), "cores": p.get("cores"), "reps": len(recs), "not_cold": warm,
            "object_store": bool(p.get("object_store")), "latency_ms": p.get("latency_ms"),
            "slowdown": (p.get("canary") or {}).get("slowdown"),
            "spread": spread, "noisy": len(walls) > 1 and spread > NOISY, "predicted_now_s": now,
            "open_s": _median([r["metrics"]["open_s"] for r in recs if r["metrics"].get("open_s") is not None]),
            "cpu_share_now": _median([r["metrics"]["cpu_share_now"] for r in recs
                                      if r["metrics"].get("cpu_share_now") is not None]),
            "cpu_share_at_calibration": p.get("cpu_share_at_calibration")}


def summarise(records) -> dict:
    pr = [r for r in records if r.get("study") == "predict"]
    ok = [r for r in pr if r.get("status") == "ok"]
    not_run = sorted({(r.get("params") or {}).get("config") for r in pr if r.get("status") == "dnf"} - {None})
    failed = {(r.get("params") or {}).get("config"): (r.get("params") or {}).get("reason", "")
              for r in pr if r.get("status") == "error"}
    rows = [_row(cfg) for cfg in group_configs(ok, by=["params.config"])]
    errs = [r["abs_log"] for r in rows if math.isfinite(r["abs_log"])]
    med, p90 = _median(errs), _quantile(errs, 0.9)
    mx = max(errs) if errs else None
    f = lambda x: math.exp(x) if x is not None else None   # noqa: E731
    counted = [r for r in rows if r["counted_chunk_reads"] is not None and r["simulated_chunk_reads"] is not None]
    exact = sum(1 for r in counted if round(r["simulated_chunk_reads"]) == r["counted_chunk_reads"])
    out = {"rows": rows, "n": len(rows), "not_run": not_run, "failed": failed,
           "median_abs_log": med, "p90_abs_log": p90, "max_abs_log": mx,
           "median_factor": f(med), "p90_factor": f(p90), "max_factor": f(mx),
           "worst": sorted(rows, key=lambda r: -r["abs_log"])[:WORST], "thesis": THESIS,
           "counts": {"compared": len(counted), "exact": exact},
           "target": {"median": TARGET_MEDIAN, "p90": TARGET_P90, "max": TARGET_MAX}}
    out["meets_target"] = (med is not None and f(med) <= TARGET_MEDIAN and f(p90) <= TARGET_P90
                           and f(mx) <= TARGET_MAX)
    # the same errors over the configurations measured while the machine was not oversubscribed
    # (1-minute load at most twice its cores): a shared machine's other work slows what is measured
    quiet = [r["abs_log"] for r in rows if math.isfinite(r["abs_log"]) and r["load_1min"] is not None
             and r["load_1min"] <= 2 * (r["cores"] or 1)]
    loads = [r["load_1min"] for r in rows if r["load_1min"] is not None]
    out["load"] = {"median_1min": _median(loads), "quiet_n": len(quiet), "quiet_median_factor": f(_median(quiet)),
                   "quiet_p90_factor": f(_quantile(quiet, 0.9)), "quiet_max_factor": f(max(quiet) if quiet else None)}
    # the repetitions' spread (slowest / fastest) and the configurations flagged noisy (counted all the same)
    spreads = [r["spread"] for r in rows if r["reps"] > 1 and math.isfinite(r["spread"])]
    out["spread"] = {"median": _median(spreads), "p90": _quantile(spreads, 0.9), "max": max(spreads, default=None),
                     "noisy": [r["config"] for r in rows if r["noisy"]], "limit": NOISY}
    # bench predict --store: each prediction with the share of a core measured just before each
    # repetition instead of the calibration's (what of the error the machine's changing load explains)
    now = [abs(math.log(r["predicted_now_s"] / r["measured_s"])) for r in rows
           if r["predicted_now_s"] and r["measured_s"] > 0]
    out["share_now"] = {"n": len(now), "median_factor": f(_median(now)), "p90_factor": f(_quantile(now, 0.9)),
                        "max_factor": f(max(now) if now else None)}
    out["ratio_median"] = _median([r["ratio"] for r in rows if math.isfinite(r["ratio"])])
    out["object_store"] = bool(rows) and all(r["object_store"] for r in rows)
    # bench predict --store: the same errors with each prediction scaled by the canary's slowdown (how
    # much slower one-chunk reads ran before the configuration than right after the calibration): what
    # of the error a shared machine's changing load explains. Shown beside the targets, never for them
    scaled = [abs(math.log(r["predicted_s"] * r["slowdown"] / r["measured_s"])) for r in rows
              if r["slowdown"] and r["measured_s"] > 0 and r["predicted_s"] > 0]
    out["canary"] = {"n": len(scaled), "median_slowdown": _median([r["slowdown"] for r in rows if r["slowdown"]]),
                     "median_factor": f(_median(scaled)), "p90_factor": f(_quantile(scaled, 0.9)),
                     "max_factor": f(max(scaled) if scaled else None)}
    # the CPU side alone, where one task reads (its process's CPU time is the whole job's): the model's
    # decode + CPU seconds against the CPU seconds the process used, which another program's load on a
    # shared machine does not stretch as it stretches the wall time (cpu_share: CPU seconds per wall second)
    one = [r for r in rows if r["tasks"] == 1 and (r["measured_cpu_s"] or 0) > 0.01]
    cpu_err = [abs(math.log((r["breakdown"]["decode_s"] + r["breakdown"]["cpu_s"]) / r["measured_cpu_s"]))
               for r in one if r["breakdown"]["decode_s"] + r["breakdown"]["cpu_s"] > 0]
    out["cpu_check"] = {"n": len(cpu_err), "median_factor": f(_median(cpu_err)), "p90_factor": f(_quantile(cpu_err, 0.9)),
                        "cpu_share_median": _median([r["cpu_share"] for r in rows if r["cpu_share"] is not None
                                                     and r["tasks"] == 1 and r["bound"] != "I/O"])}
    # where the error sits: predicted/measured by what bounds the prediction, and by stack
    for key in ("bound", "stack", "latency_ms"):
        groups = {}
        for r in rows:
            if math.isfinite(r["ratio"]) and r[key] is not None:
                groups.setdefault(r[key], []).append(r["ratio"])
        out[f"ratio_by_{key}"] = {k: {"n": len(v), "median_ratio": _median(v)} for k, v in sorted(groups.items())}
    stsa = [r for r in rows if r["read"] == "stsa"]
    if stsa:
        out["stsa_factor"] = float(np.median([r["factor"] for r in stsa]))
    return out


def headline(records):
    """The study's row of the report's first screen (sections.Headline): the read-time model's
    median, 90th-percentile and max error against its targets."""
    from climio.present.sections import Headline, HeadlineRow, cache_state
    s = summarise(records)
    if not s["n"]:
        return None
    ok = [r for r in records if r.get("study") == "predict" and r.get("status") == "ok"]
    text = (f"median error {s['median_factor']:.2f}×, 90th pct {s['p90_factor']:.2f}×, max {s['max_factor']:.2f}× "
            f"over {s['n']} configurations (target {TARGET_MEDIAN}× / {TARGET_P90}× / {TARGET_MAX}×: "
            f"{'met' if s['meets_target'] else 'not met'})")
    return Headline("predict", [HeadlineRow("read-time model error", text, cache_state(ok))])
