"""Figures of the object-read study as PNG bytes (matplotlib Agg, no pyplot).

    rate_vs_size(cells)   median rate vs GET size, one panel per injected latency, one line per stack
                          and concurrency; the raw-GET peer dashed (the thesis's Fig. 3.x for GETs)

The functions draw what summary.py computed; they know nothing of records."""

from matplotlib.figure import Figure

from climio.present.plotting import COLOURS, MARKERS, log2_size_axis, to_png
from . import PEER


def rate_vs_size(cells):
    lats = sorted({c["latency_ms"] for c in cells})
    if not lats:
        return None
    concs = sorted({c["concurrency"] for c in cells})
    stacks = sorted({c["stack"] for c in cells}, key=lambda s: (s != PEER, s))
    sizes = [c["get_bytes"] for c in cells]
    fig = Figure(figsize=(min(4.0 * len(lats), 12), 4.6))
    axes = fig.subplots(1, len(lats), sharey=True, squeeze=False)[0]
    for ax, lat in zip(axes, lats):
        for si, stack in enumerate(stacks):
            for ci, conc in enumerate(concs):
                pts = sorted((c["get_bytes"], c["rate_MBps"]) for c in cells
                             if c["latency_ms"] == lat and c["stack"] == stack and c["concurrency"] == conc)
                if not pts:
                    continue
                x, y = zip(*pts)
                ax.plot(x, y, color=COLOURS[ci % len(COLOURS)], marker=MARKERS[si % len(MARKERS)],
                        linestyle="--" if stack == PEER else "-", label=f"{stack} x{conc}")
        log2_size_axis(ax, "x", min(sizes), max(sizes), max_labels=4)
        ax.set_yscale("log")
        ax.set_title(f"{lat:g} ms injected round trip", fontsize=10)
        ax.set_xlabel("GET size [KiB/MiB], one chunk each", fontsize=9)
        ax.grid(True, alpha=0.3)
    axes[0].set_ylabel("read rate [MB/s = 1e6 B/s], median over rounds")
    handles, labels = axes[0].get_legend_handles_labels()
    fig.legend(handles, labels, loc="lower center", ncol=min(len(labels), 6), fontsize=8, frameon=False)
    fig.tight_layout(rect=(0, 0.1 + 0.04 * (len(labels) // 7), 1, 1))
    return to_png(fig)
