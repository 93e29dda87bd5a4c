"""The validation's numbers (pure): predicted against measured per configuration and overall."""

import math

import numpy as np

from ...stats import group_configs

THESIS = {"stsa_flowchart_factor": 4.7, "xt_speedup_predicted": 33, "xt_speedup_observed": 24}
TARGET_MEDIAN, TARGET_P90 = 1.5, 2.5


def _median(xs):
    return float(np.median(xs)) if len(xs) else None


def _quantile(xs, q):
    return float(np.quantile(xs, q)) if len(xs) else None     # linear between order statistics


def summarise(records) -> dict:
    ok = [r for r in records if r.get("study") == "predict" and r.get("status") == "ok"]
    rows = []
    for cfg in group_configs(ok, by=["params.config"]):
        recs, p = cfg.records, cfg.params
        cid = p["config"]
        meas = _median([r["metrics"]["wall_s"] for r in recs])
        pred = p["predicted_s"]
        warm = sum(1 for r in recs if (r.get("cache") or {}).get("effective", "cold") != "cold")
        err = abs(math.log(pred / meas)) if pred > 0 and meas > 0 else math.inf
        rows.append({"config": cid, "layout": p["layout"], "read": p["read"], "stack": p["stack"], "tasks": p["tasks"],
                     "compression": p["compression"], "chunks": p["chunks"], "predicted_s": pred, "measured_s": meas,
                     "ratio": pred / meas if meas else math.inf, "abs_log": err, "factor": math.exp(err),
                     "bound": p["predicted"]["bound"], "path": p["predicted"]["path"],
                     "breakdown": {k: p["predicted"][k] for k in ("io_s", "decode_s", "cpu_s")},
                     "reps": len(recs), "not_cold": warm})
    errs = [r["abs_log"] for r in rows if math.isfinite(r["abs_log"])]
    med, p90 = _median(errs), _quantile(errs, 0.9)
    out = {"rows": rows, "n": len(rows),
           "median_abs_log": med, "p90_abs_log": p90,
           "median_factor": math.exp(med) if med is not None else None,
           "p90_factor": math.exp(p90) if p90 is not None else None,
           "worst": sorted(rows, key=lambda r: -r["abs_log"])[:5], "thesis": THESIS,
           "target": {"median": TARGET_MEDIAN, "p90": TARGET_P90}}
    out["meets_target"] = (med is not None and math.exp(med) <= TARGET_MEDIAN and math.exp(p90) <= TARGET_P90)
    # the thesis's two checks on this platform: the STSA read and the re-layout speed-up
    get = {(r["layout"], r["read"], r["stack"], r["tasks"]): r for r in rows}
    c, x = get.get(("contiguous", "stsa", "netcdf4-python", 1)), get.get(("xt", "stsa", "netcdf4-python", 1))
    if c and x:
        out["relayout"] = {"predicted": c["predicted_s"] / x["predicted_s"], "measured": c["measured_s"] / x["measured_s"]}
    if c:
        out["stsa_factor"] = c["factor"]
    return out


def headline(records):
    """The study's row of the report's first screen (sections.Headline): the read-time model's
    median and 90th-percentile error against its target."""
    from ...sections import Headline, HeadlineRow, cache_state
    s = summarise(records)
    if not s["n"]:
        return None
    ok = [r for r in records if r.get("study") == "predict" and r.get("status") == "ok"]
    text = (f"median error {s['median_factor']:.2f}×, 90th pct {s['p90_factor']:.2f}× over {s['n']} configurations "
            f"(target {TARGET_MEDIAN}× / {TARGET_P90}×: {'met' if s['meets_target'] else 'not met'})")
    return Headline("predict", [HeadlineRow("read-time model error", text, cache_state(ok))])
