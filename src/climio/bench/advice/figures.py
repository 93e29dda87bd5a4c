"""The advice study's figure as PNG bytes (Agg, no pyplot): per case, the measured gain at P = 10 of
the fix `trace report` ranked first against the best tried fix's (1 = the baseline)."""

import numpy as np
from matplotlib.figure import Figure

from climio.present.plotting import to_png


def gains(s) -> bytes:
    rows = [r for r in s["rows"] if r.get("baseline_s")]
    if not rows:
        return None
    first = [((r["first_gain"] or {}).get("10") or np.nan) for r in rows]
    best = [((r["best_gain"] or {}).get("10") or 1.0) for r in rows]
    y = np.arange(len(rows))
    fig = Figure(figsize=(6.4, 1.2 + 0.42 * len(rows)))
    ax = fig.add_subplot(1, 1, 1)
    ax.barh(y - 0.2, best, 0.4, color="#9ecae1", label="best tried fix")
    ax.barh(y + 0.2, first, 0.4, color="#3182bd", label="item 1 of the report (none tried: no bar)")
    ax.axvline(1.0, color="#d62728", linewidth=1)
    ax.set_xscale("log")
    ax.set_yticks(y)
    ax.set_yticklabels([f"{r['job']} / {r['layout']}" for r in rows], fontsize=8)
    ax.invert_yaxis()
    ax.set_xlabel("gain at P = 10 runs (baseline / (after + conversion / 10), x; 1 = no change)")
    ax.legend(fontsize=7, loc="lower right")
    return to_png(fig, tight=True)
