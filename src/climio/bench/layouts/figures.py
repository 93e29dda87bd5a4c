"""The layouts study's figure as PNG bytes (Agg, no pyplot)."""

import math

import numpy as np
from matplotlib.figure import Figure
from matplotlib.patches import Rectangle

from climio.present.plotting import to_png


def totals_by_mix(s) -> bytes:
    """Shapes (rows) x mixes (columns): measured total / the mix's best, log colour scale; the
    advised shape of each mix boxed."""
    shapes = list(s["shapes"])
    mixes = s["mixes"]
    if not shapes or not mixes:
        return None
    m = np.full((len(shapes), len(mixes)), np.nan)
    for j, mix in enumerate(mixes):
        for i, shape in enumerate(shapes):
            t = mix["totals"].get(shape)
            if t and mix["best_total_s"] > 0:
                m[i, j] = t["total_s"] / mix["best_total_s"]
    fig = Figure(figsize=(4.2 + 1.1 * len(mixes), 1.4 + 0.32 * len(shapes)))
    ax = fig.add_subplot(1, 1, 1)
    vmax = max(2.0, float(np.nanmax(m)) if np.isfinite(m).any() else 2.0)
    im = ax.imshow(np.log10(m), aspect="auto", cmap="viridis_r", vmin=0.0, vmax=math.log10(vmax))
    for j, mix in enumerate(mixes):
        for i, shape in enumerate(shapes):
            if math.isfinite(m[i, j]):
                ax.text(j, i, f"{m[i, j]:.2f}", ha="center", va="center", fontsize=7,
                        color="white" if m[i, j] > math.sqrt(vmax) else "black")
        if mix["advised"] in shapes:
            i = shapes.index(mix["advised"])
            ax.add_patch(Rectangle((j - 0.5, i - 0.5), 1, 1, fill=False, edgecolor="#d62728", linewidth=2))
    ax.set_xticks(range(len(mixes)))
    ax.set_xticklabels([x["mix"] for x in mixes], rotation=30, ha="right", fontsize=8)
    ax.set_yticks(range(len(shapes)))
    ax.set_yticklabels([f"{k} ({s['shapes'][k]['why']})" for k in shapes], fontsize=7)
    ax.set_xlabel("read mix (pattern:passes)")
    cb = fig.colorbar(im, ax=ax)
    cb.set_label("measured total / best (log10)")
    return to_png(fig, tight=True)
