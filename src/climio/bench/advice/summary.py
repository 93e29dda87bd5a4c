"""The advice study's numbers, from its records only (pure): one row per job x layout and the
three targets of issue 35 item 5.

    summarise(records) -> {"rows", "targets", "errors", "cpu"}
    cpu_line(summary) -> the three targets counted on CPU seconds, one line (beside, not instead)
    headline(records) -> the report's first-screen rows

Targets (each a pass/fail over the measured cases; a case whose first item could not be tried
counts as doing nothing, gain 1.0):
    not_slower   the first-ranked item is never slower than the baseline (its gain at P = 10 below
                 1 / NOISE counts as slower; NOISE as `trace try`'s: disk noise on a shared machine)
    near_best    its gain at P = 10 is at least NEAR_BEST x the best tried item's (nothing advised: 1.0)
    predicted    where it is a layout fix, its predicted gain is within PREDICTED_FACTOR of the measured
                 at P = 1 and at P = 10
"""

from .outcome import GAIN_NOISE as NOISE, best_fix

NEAR_BEST = 0.8
PREDICTED_FACTOR = 2.0
P = "10"


def _gain(fix, p=P):
    return (fix or {}).get("gain", {}).get(p) if (fix or {}).get("after_s") is not None else None


def _within(ratio) -> bool:
    return ratio is not None and 1 / PREDICTED_FACTOR <= ratio <= PREDICTED_FACTOR


def row(rec) -> dict:
    pa = rec["params"]
    first = pa.get("first") if pa.get("report_first") else None     # no report item: no first-ranked fix
    best = best_fix(pa.get("fixes") or [], int(P))
    g_first = _gain(first)
    g_best = _gain(best) if best else 1.0
    r = {"job": pa["job"], "layout": pa["layout"], "chunks": pa["chunks"], "baseline_s": rec["metrics"].get("baseline_s"),
         "baseline_cpu_s": rec["metrics"].get("cpu_s"),
         "report_first": pa.get("report_first"), "first": first, "best": best, "fixes": pa.get("fixes") or [],
         "first_gain": {p: _gain(first, p) for p in ("1", "10")}, "best_gain": {p: _gain(best, p) if best else 1.0
                                                                               for p in ("1", "10")},
         "predicted_gain": (first or {}).get("predicted") or {}}
    r["first_slower"] = g_first is not None and g_first < 1 / NOISE
    effective = g_first if g_first is not None else 1.0
    r["first_share_of_best"] = effective / g_best if g_best else None
    r["near_best"] = r["first_share_of_best"] is not None and r["first_share_of_best"] >= NEAR_BEST
    r["layout_fix"] = bool(first and first.get("kind") == "layout" and g_first is not None)
    ratios = {}
    if r["layout_fix"]:
        for p in ("1", "10"):
            pred, meas = r["predicted_gain"].get(p), r["first_gain"][p]
            ratios[p] = pred / meas if pred and meas else None
    r["predicted_over_measured"] = ratios
    r["predicted_ok"] = all(_within(x) for x in ratios.values()) if r["layout_fix"] else None
    r["cpu"] = _cpu(first, r["fixes"], r["predicted_gain"])
    return r


def _cpu(first, fixes, predicted) -> dict:
    """The three targets' tests on CPU seconds (user + system of the job, and of the conversion):
    beside the wall-time ones, since on shared cores a run's wall time also holds its wait for a core."""
    g = (first or {}).get("cpu_gain") or {}
    best = best_fix(fixes, int(P), "cpu_gain")
    gb = best["cpu_gain"][P] if best else 1.0
    eff = g.get(P) if g.get(P) is not None else 1.0
    ratios = ({p: predicted[p] / g[p] if predicted.get(p) and g.get(p) else None for p in ("1", "10")}
              if first and first.get("kind") == "layout" and g else {})
    return {"gain": {p: g.get(p) for p in ("1", "10")}, "best_gain": gb, "best_id": (best or {}).get("id"),
            "slower": g.get(P) is not None and g[P] < 1 / NOISE, "near_best": eff / gb >= NEAR_BEST,
            "layout_fix": bool(ratios), "predicted_ok": all(_within(x) for x in ratios.values()) if ratios else None}


def summarise(records) -> dict:
    recs = [r for r in records if r.get("study") == "advice" and r["params"].get("kind") == "case"]
    rows = [row(r) for r in recs if r.get("status") == "ok"]
    errors = [{"job": r["params"]["job"], "layout": r["params"]["layout"], "error": r["params"].get("error", "")}
              for r in recs if r.get("status") != "ok"]
    measured = [r for r in rows if r["first_gain"]["10"] is not None]
    slower = [r for r in rows if r["first_slower"]]
    far = [r for r in rows if not r["near_best"]]
    layout = [r for r in rows if r["layout_fix"]]
    off = [r for r in layout if not r["predicted_ok"]]
    n = len(rows)
    conv, conv_cpu = ([r["first"][k] / r["first"]["predicted_conversion_s"] for r in layout
                       if r["first"].get(k) and r["first"].get("predicted_conversion_s")]
                      for k in ("conversion_s", "conversion_cpu_s"))
    targets = {
        "not_slower": {"ok": bool(rows) and not slower and not errors, "failed": [_case(r) for r in slower],
                       "of": n, "measured": len(measured)},
        "near_best": {"ok": bool(rows) and not far and not errors, "failed": [_case(r) for r in far], "of": n},
        "predicted": {"ok": not off and not errors and bool(rows), "failed": [_case(r) for r in off], "of": len(layout),
                      "conversion_measured_over_predicted": _median(conv),
                      "conversion_cpu_over_predicted": _median(conv_cpu),
                      "within_by_p": {p: sum(1 for r in layout if _within(r["predicted_over_measured"].get(p)))
                                      for p in ("1", "10")}},
    }
    timed = [r for r in rows if r["baseline_cpu_s"] is not None]      # runs from before CPU times: none
    cpu = {"of": len(timed), "slower": [_case(r) for r in timed if r["cpu"]["slower"]],
                      "far": [_case(r) for r in timed if not r["cpu"]["near_best"]],
                      "layout": sum(1 for r in timed if r["cpu"]["layout_fix"]),
                      "off": [_case(r) for r in timed if r["cpu"]["layout_fix"] and not r["cpu"]["predicted_ok"]]}
    return {"rows": rows, "targets": targets, "errors": errors, "cpu": cpu}


def cpu_line(s) -> str:
    """The three targets counted again on CPU seconds (what the job and its conversion computed),
    one line: the wall-time lines above decide; this one says what of a miss is waiting for a core."""
    c = s.get("cpu")
    if not c or not c["of"]:
        return ""
    name = lambda xs: f" ({', '.join(xs)})" if xs else ""
    return (f"on CPU seconds (user + system, the conversion's too): item 1 slower in {len(c['slower'])} of {c['of']}"
            f"{name(c['slower'])}; >= {NEAR_BEST:.0%} of the best in {c['of'] - len(c['far'])} of {c['of']}"
            f"{name(c['far'])}; layout prediction within {PREDICTED_FACTOR:g}x in {c['layout'] - len(c['off'])} of "
            f"{c['layout']}{name(c['off'])}")


def _median(xs):
    xs = sorted(xs)
    return xs[len(xs) // 2] if xs else None


def _case(r) -> str:
    return f"{r['job']} on {r['layout']}"


def target_lines(s) -> list:
    """The three targets as pass/fail lines, the failing cases named."""
    t = s["targets"]
    fails = lambda k: (": " + ", ".join(t[k]["failed"])) if t[k]["failed"] else ""
    err = f" ({len(s['errors'])} case(s) failed to run)" if s["errors"] else ""
    return [
        f"{'PASS' if t['not_slower']['ok'] else 'FAIL'}  first-ranked item never slower than the baseline (P=10): "
        f"{len(t['not_slower']['failed'])} of {t['not_slower']['of']} slower ({t['not_slower']['measured']} measured, "
        f"the rest had nothing triable){fails('not_slower')}{err}",
        f"{'PASS' if t['near_best']['ok'] else 'FAIL'}  first-ranked item's gain >= {NEAR_BEST:.0%} of the best tried "
        f"item's at P=10: {t['near_best']['of'] - len(t['near_best']['failed'])} of {t['near_best']['of']} jobs"
        f"{fails('near_best')}{err}",
        f"{'PASS' if t['predicted']['ok'] else 'FAIL'}  layout fixes' predicted gain within {PREDICTED_FACTOR:g}x of the "
        f"measured (P=1 and P=10): {t['predicted']['of'] - len(t['predicted']['failed'])} of {t['predicted']['of']} "
        f"(P=1: {t['predicted']['within_by_p']['1']}, P=10: {t['predicted']['within_by_p']['10']}){fails('predicted')}{err}"
        + _conversion_note(t["predicted"])]


def _conversion_note(t) -> str:
    """How far the planner's conversion time was from the measured one: wall, and CPU seconds (the
    planner prices an idle machine; on shared cores the wall time holds the wait for a core)."""
    if not t["conversion_measured_over_predicted"]:
        return ""
    cpu = t.get("conversion_cpu_over_predicted")
    return (f" (conversion measured / predicted by climio rechunk --dry-run: median "
            f"{t['conversion_measured_over_predicted']:.1f}x" + (f", in CPU seconds {cpu:.1f}x" if cpu else "") + ")")


def headline(records):
    from climio.present.sections import Headline, HeadlineRow
    s = summarise(records)
    if not s["rows"]:
        return None
    return Headline("advice", [HeadlineRow(f"advice target {k + 1}", line, "cold")
                               for k, line in enumerate(target_lines(s))])
