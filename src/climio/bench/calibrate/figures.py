"""The calibration's figure as PNG bytes (Agg, no pyplot): the fitted storage rate per request size."""

from matplotlib.figure import Figure

from climio.present.plotting import COLOURS, MARKERS, log2_size_axis, to_png


def storage_rates(profile) -> bytes:
    """Rate [MB/s] against request size per access pattern, from the fitted profile's table."""
    table = {k: v for k, v in sorted(profile["rate_Bps"].items()) if v}
    if not table:
        return None
    fig = Figure(figsize=(7.0, 3.8))
    ax = fig.add_subplot(1, 1, 1)
    sizes = [s for v in table.values() for s, _ in v]
    for i, (pattern, points) in enumerate(table.items()):
        ax.plot([s for s, _ in points], [r / 1e6 for _, r in points], color=COLOURS[i % len(COLOURS)],
                marker=MARKERS[i % len(MARKERS)], label=pattern)
    log2_size_axis(ax, "x", min(sizes) / 1.3, max(sizes) * 1.3)
    ax.set_xlabel("request size (log2; B, KiB, MiB)")
    ax.set_ylabel("rate [MB/s = 10$^6$ B/s]")
    ax.set_title("Calibrated storage rate per request size (fitted over the repetitions)", fontsize=10, loc="left")
    ax.set_ylim(bottom=0)
    ax.grid(True, alpha=0.3)
    ax.legend(fontsize=8)
    return to_png(fig, tight=True)
