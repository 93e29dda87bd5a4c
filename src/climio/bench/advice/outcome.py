"""One case of the study (a job on one layout), from what the three commands printed (pure).

    first_fix(results) -> the try result of the fix `trace report` names first (item 1's first way)
    best_fix(results, p) -> the advised result with the largest measured gain at P = p, or None
    predicted_gain(run_s, saves_s, conversion_s, p) -> the gain the report predicts before trying
    outcome(report, tried, predicted_conversion_s) -> the record's fields of the case

"Predicted" is what `climio trace report` says before anything is tried: the first item could save
at most `could_save_s` of the traced run (its calls' time), so the job would take run - saves, plus
the conversion the rechunk planner predicts (`climio rechunk --dry-run`) spread over P passes.
"""

from climio.rules.fixes import GAIN_NOISE, SHOWN_PASSES

KEEP = ("id", "item", "kind", "title", "status", "advised", "label", "after_s", "conversion_s", "gain", "same_result",
        "applied", "not_tried", "also_slows", "predicted_gain", "after_cpu_s", "conversion_cpu_s", "cpu_gain")


def _order(r) -> tuple:
    return (r["item"], str(r["id"]))


def first_fix(results, items=1):
    """Item 1's first way (id "1" or "1a"): the fix the report's top item names first. None when
    the report has no item (`items` = 0): `trace try`'s own extra fixes (an h5py chunk cache, numbered
    after the report's items) are then numbered from 1, but no report ranked them."""
    ones = sorted((r for r in results if r.get("item") == 1 and items >= 1), key=_order)
    return ones[0] if ones else None


def best_fix(results, p=10, gain="gain"):
    """The measured fix with the largest gain at P = p among those that would be advised at that P
    (applied, same result, faster by more than the noise): trace try advises at its --passes (1),
    where a conversion counts whole; at P = 10 a layout fix may be the best although not advised at 1.
    `gain`: "gain" (wall seconds) or "cpu_gain" (CPU seconds of the job and of its conversion)."""
    ok = [r for r in results if r.get("after_s") is not None and r.get("applied") and r.get("same_result")
          and (r.get(gain) or {}).get(str(p)) and r[gain][str(p)] >= GAIN_NOISE]
    return max(ok, key=lambda r: r[gain][str(p)]) if ok else None


def predicted_gain(run_s, saves_s, conversion_s, p):
    """run / (run - saves + conversion / p); None without a run time."""
    if not run_s:
        return None
    after = max(run_s - (saves_s or 0.0), 1e-9) + (conversion_s or 0.0) / p
    return run_s / after


def compact(r) -> dict:
    return {k: r.get(k) for k in KEEP}


def outcome(report, tried, predicted_conversion_s=None) -> dict:
    """The case's fields: the report's first item (rule, severity, title, could save), its fix as
    tried, the best tried fix, and the predicted gains at P = 1 and 10 beside the measured ones."""
    findings = report.get("findings") or []
    trace = report.get("trace") or {}
    run_s = trace.get("process_time_s") or trace.get("wall_s")
    top = findings[0] if findings else None
    results = tried.get("results") or []
    first, best = first_fix(results, len(findings)), best_fix(results, 10)
    out = {"baseline_s": tried.get("baseline_s"), "baseline_runs": tried.get("baseline_runs"),
           "baseline_cpu_s": tried.get("baseline_cpu_s"),
           "trace_run_s": run_s, "trace_io_share": trace.get("io_share"),
           "report_first": None if top is None else {
               "rule": top["rule"], "severity": top["severity"], "title": top["title"],
               "could_save_s": top["evidence"].get("could_save_s"), "advice": top["advice"]},
           "first": None, "best": None if best is None else compact(best),
           "fixes": [compact(r) for r in results], "notes": tried.get("notes") or []}
    if first is not None:
        f = compact(first)
        conv = predicted_conversion_s if first["kind"] == "layout" else 0.0
        # the gross saving: trace report ranks a layout item net of its conversion over 10 runs
        saves = top["evidence"].get("could_save_gross_s", top["evidence"].get("could_save_s")) if top else None
        f["predicted_conversion_s"] = conv
        f["predicted"] = {str(p): predicted_gain(run_s, saves, conv, p) for p in SHOWN_PASSES}
        f["measured"] = first.get("after_s") is not None
        out["first"] = f
    return out
