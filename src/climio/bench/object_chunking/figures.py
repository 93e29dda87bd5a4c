"""Figures of the object-chunking study as PNG bytes (matplotlib Agg, no pyplot).

    rate_by_chunks(cells, stack)   median rate per chunk shape (bars grouped by read shape), one panel
                                   per injected latency: no shards and shards over time side by side

The functions draw what summary.py computed; they know nothing of records."""

from matplotlib.figure import Figure

from climio.present.plotting import COLOURS, to_png
from climio.base.units import format_size
from . import READS


def rate_by_chunks(cells, stack, compression):
    cs = [c for c in cells if c["stack"] == stack and c["compression"] == compression]
    lats = sorted({c["latency_ms"] for c in cs})
    if not lats:
        return None
    layouts = sorted({(c["chunk_bytes"], c["label"], c["shards"]) for c in cs}, key=lambda k: (k[0], k[1], k[2] != "none"))
    reads = [r for r in READS if any(c["read"] == r for c in cs)]
    fig = Figure(figsize=(min(4.2 * len(lats), 12), 4.8))
    axes = fig.subplots(1, len(lats), sharey=True, squeeze=False)[0]
    width = 0.8 / max(1, len(reads))
    for ax, lat in zip(axes, lats):
        for ri, read in enumerate(reads):
            xs, ys = [], []
            for li, (_, label, shards) in enumerate(layouts):
                hit = [c for c in cs if c["latency_ms"] == lat and c["read"] == read and c["label"] == label
                       and c["shards"] == shards]
                if hit:
                    xs.append(li + (ri - (len(reads) - 1) / 2) * width)
                    ys.append(hit[0]["rate_MBps"])
            ax.bar(xs, ys, width=width, color=COLOURS[ri % len(COLOURS)], label=f"{read} read")
        ax.set_xticks(range(len(layouts)))
        ax.set_xticklabels([f"{lab}\n{format_size(nb)}" + ("" if sh == "none" else "\nsharded") for nb, lab, sh in layouts],
                           fontsize=8)
        ax.set_yscale("log")
        ax.set_title(f"{lat:g} ms injected round trip", fontsize=10)
        ax.set_xlabel("chunk shape and chunk size [KiB/MiB]", fontsize=9)
        ax.grid(True, axis="y", alpha=0.3)
    axes[0].set_ylabel("read rate [MB/s = 1e6 B/s], median")
    handles, labels = axes[0].get_legend_handles_labels()
    fig.legend(handles, labels, loc="lower center", ncol=len(labels), fontsize=8, frameon=False)
    fig.suptitle(f"{stack}, {compression}", fontsize=10)
    fig.tight_layout(rect=(0, 0.07, 1, 0.95))
    return to_png(fig)
