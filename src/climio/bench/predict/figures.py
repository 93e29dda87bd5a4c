"""The validation's figure as PNG bytes (Agg, no pyplot): predicted against measured read time."""

import math

from matplotlib.figure import Figure

from climio.present.plotting import to_png


def predicted_vs_measured(rows, spans, target) -> bytes:
    """One point per configuration: the model's predicted time against the median measured time
    (horizontal bars: min to max of the repetitions, `spans` {config: (min, max)}), log-log, with
    the diagonal and the median target band (predicted within `target`x of measured)."""
    pts = [r for r in rows if r["measured_s"] > 0 and r["predicted_s"] > 0 and math.isfinite(r["measured_s"])]
    if not pts:
        return None
    fig = Figure(figsize=(6.4, 4.4))
    ax = fig.add_subplot(1, 1, 1)
    lo = min(min(r["measured_s"], r["predicted_s"]) for r in pts) / 1.5
    hi = max(max(r["measured_s"], r["predicted_s"]) for r in pts) * 1.5
    ax.plot([lo, hi], [lo, hi], color="#333333", linewidth=1, label="predicted = measured")
    ax.fill_between([lo, hi], [lo / target, hi / target], [lo * target, hi * target], color="#2ca02c", alpha=0.12,
                    label=f"within {target}× (the median target)")
    for bound, colour in (("I/O", "#1f77b4"), ("decode", "#ff7f0e"), ("CPU", "#9467bd")):
        sel = [r for r in pts if r["bound"] == bound]
        if not sel:
            continue
        xs = [r["measured_s"] for r in sel]
        err = [[max(0.0, r["measured_s"] - spans.get(r["config"], (r["measured_s"],) * 2)[0]) for r in sel],
               [max(0.0, spans.get(r["config"], (r["measured_s"],) * 2)[1] - r["measured_s"]) for r in sel]]
        ax.errorbar(xs, [r["predicted_s"] for r in sel], xerr=err, color=colour, marker="o", linestyle="none",
                    capsize=2, markersize=4, label=f"bound by {bound}")
    rest = [r for r in pts if r["bound"] not in ("I/O", "decode", "CPU")]
    if rest:
        ax.plot([r["measured_s"] for r in rest], [r["predicted_s"] for r in rest], "o", color="#7f7f7f",
                markersize=4, label="other bound")
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlim(lo, hi)
    ax.set_ylim(lo, hi)
    ax.set_xlabel("measured read time [s] (median of the cold repetitions)")
    ax.set_ylabel("predicted read time [s]")
    ax.grid(True, which="both", alpha=0.25)
    ax.legend(fontsize=8, loc="upper left")
    return to_png(fig, tight=True)
