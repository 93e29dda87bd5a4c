"""Gains and the ranking `climio trace try` prints (issue 35 item 2).

    gain(baseline_s, after_s, conversion_s, passes) = baseline / (after + conversion / passes)
    verdicts(results, passes) -> the results ranked: advised (measured gain, fastest first), then those
        never advised (slower: "tried: Nx slower"; changed the result; not applied), then the untried
        (labelled predicted: at most what the trace says the item could save)
    text(summary) -> the terminal table, gains at P = 1, P = 10 and --passes
"""

import statistics

from ...rules.fixes import GAIN_NOISE, SHOWN_PASSES  # noqa: F401  (trace try's callers read them here)
from ..effects import effect_lines


def gain(baseline_s, after_s, conversion_s=0.0, passes=1) -> float:
    return baseline_s / (after_s + (conversion_s or 0.0) / max(1, passes))


def median(xs):
    return statistics.median(xs) if xs else None


def predicted_gain(run_s, saves_s) -> float:
    """At most: the run without what the item could save (the trace's figure, an upper bound)."""
    if not run_s or not saves_s or saves_s >= run_s:
        return None
    return run_s / (run_s - saves_s)


def status(r, passes) -> tuple:
    """(status, advised) of one result."""
    if r.get("not_tried"):
        return "not tried: " + r["not_tried"], False
    if not r["applied"]:
        return "not applied: " + r["applied_why"], False
    if not r["same_result"]:
        return "changes the result: " + r["result_why"], False
    g = r["gain"][str(passes)]
    if g < 1.0:
        return f"tried: {1 / g:.1f}x slower", False
    if g < GAIN_NOISE:
        return f"tried: no gain ({g:.2f}x)", False
    return f"tried: {g:.1f}x faster", True


def verdicts(results, passes) -> list:
    for r in results:
        r["status"], r["advised"] = status(r, passes)
        r["label"] = "measured" if r.get("after_s") is not None else "predicted"
    tried = [r for r in results if r["label"] == "measured"]
    rest = [r for r in results if r["label"] != "measured"]
    key = lambda r: -(r["gain"][str(passes)] or 0)
    return (sorted([r for r in tried if r["advised"]], key=key) + sorted([r for r in tried if not r["advised"]], key=key)
            + sorted(rest, key=lambda r: -(r.get("predicted_gain") or 0)))


def _g(x) -> str:
    return "—" if x is None else f"{x:.2f}x"


def _advice(r) -> list:
    """Every way the fix is given: a shell line (with its 'then'), a Python snippet, a C call."""
    a = r.get("advice") or {}
    out = []
    if "shell" in a:
        out += [f"      shell: {a['shell']}", *([f"      then: {a['then']}"] if a.get("then") else [])]
    if "python" in a:
        out += [f"      Python ({a.get('stack')}){' or' if out else ''}:"] + [f"        {l}" for l in a["python"].splitlines()]
    if "c" in a:
        out += [f"      C ({a.get('stack')}): {a['c']}"]
    return out


def text(summary) -> str:
    p = summary["passes"]
    cols = sorted({*SHOWN_PASSES, p})
    out = [f"climio trace try — {summary['trace']}",
           f"command: {' '.join(summary['command'])}   (cwd {summary['cwd']})",
           f"baseline {_s(summary['baseline_s'])} s cold, CPU {_s(summary.get('baseline_cpu_s'))} s (median of "
           f"{len(summary['baseline_runs'])} runs, "
           f"I/O share {_pct(summary['baseline_io_share'])}); {summary.get('rounds', summary['reps'])} of {summary['reps']} reps each, cold, baseline "
           f"in the same rounds in alternating order"]
    out += [f"note: {n}" for n in summary["notes"]]
    out.append("")
    out.append("  " + "  ".join(["id ", "kind  ", "after [s]", " CPU [s]", "conv [s]", *[f"gain P={c}" for c in cols], "I/O share",
                                  "label    "]) + "  fix / result")
    for r in summary["results"]:
        gains = [_g(r["gain"].get(str(c))) if r["label"] == "measured" else _g(r.get("predicted_gain")) + "?"
                 for c in cols]
        out.append("  " + "  ".join([f"{r['id']:<3}", f"{r['kind']:<6}", f"{_s(r.get('after_s')):>9}",
                                      f"{_s(r.get('after_cpu_s')):>8}",
                                      f"{_s(r.get('conversion_s')):>8}", *[f"{g:>8}" for g in gains],
                                      f"{_pct(r.get('io_share')):>9}", f"{r['label']:<9}"])
                   + f"  {r['title']}: {r['status']}")
        if r["advised"]:
            out += _advice(r)
        out += effect_lines(r.get("predicted_effects"))
        out += [f"      warning: {w}" for w in r.get("also_slows") or []]
        if r.get("canonical"):
            out.append("      canonical reads, cold, original -> copy: " + "; ".join(
                f"{x['read']} {x['before_s']:.3g} -> {x['after_s']:.3g} s" for x in r["canonical"]))
    best = next((r for r in summary["results"] if r["advised"]), None)
    out.append("")
    out.append(f"advised: item {best['id']} ({best['title']}), measured {r_gain(best, p)} at P={p}" if best else
               "advised: nothing — no fix tried here made this job faster with the same result")
    out.append("'?' = predicted from the trace (at most: what the item could save), not measured; gain = "
               "baseline / (after + conversion / P)")
    return "\n".join(out) + "\n"


def r_gain(r, p) -> str:
    return _g(r["gain"][str(p)])


def _s(x) -> str:
    return "—" if x is None else f"{x:.3g}"


def _pct(x) -> str:
    return "—" if x is None else f"{100 * x:.0f}%"
