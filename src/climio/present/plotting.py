"""Shared plotting helpers: PNG bytes from matplotlib's Agg canvas (pyplot is never used, so
rendering a report does not touch the caller's backend or open windows), one palette, log2 size
axes labelled in B/KiB/MiB/GiB, and the wall vs CPU legend every study's bar figures share."""

import io
import math

from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.lines import Line2D
from matplotlib.ticker import FixedLocator, FuncFormatter, NullFormatter

from climio.base.units import format_size

COLOURS = ("#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2", "#17becf",
           "#7f7f7f", "#bcbd22")
MARKERS = ("o", "s", "D", "P", "X", "^", "h", "*", "p", "<")
DNF_MARKER = "v"
DPI = 100


def to_png(fig, tight: bool = False) -> bytes:
    """PNG bytes of a matplotlib Figure; tight: tight_layout first (labels inside the canvas)."""
    if tight:
        fig.tight_layout()
    FigureCanvasAgg(fig)
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=DPI)
    return buf.getvalue()


def log2_size_axis(ax, which, lo, hi, max_labels=11) -> None:
    """Log2 scale on ax's `which` ("x" or "y") axis, major ticks at powers of two labelled in
    B/KiB/MiB/GiB (every k-th octave so that at most `max_labels` show), minor ticks every octave."""
    (ax.set_xscale if which == "x" else ax.set_yscale)("log", base=2)
    axis = ax.xaxis if which == "x" else ax.yaxis
    e0, e1 = math.floor(math.log2(lo)), math.ceil(math.log2(hi))
    k = 1
    while (e1 - e0) // k + 1 > max_labels:
        k += 1
    major = [2.0 ** e for e in range(e0, e1 + 1) if e % k == 0]
    minor = [2.0 ** e for e in range(e0, e1 + 1)]
    axis.set_major_locator(FixedLocator(major))
    axis.set_major_formatter(FuncFormatter(lambda v, _pos: format_size(v)))
    axis.set_minor_locator(FixedLocator(minor))
    axis.set_minor_formatter(NullFormatter())


def wall_cpu_legend(fig, any_dnf: bool, dnf_label: str) -> None:
    """The legend shared by the wall vs CPU bar figures of every study."""
    handles = [Line2D([], [], color="#333333", linewidth=8, label="wall time (mean)"),
               Line2D([], [], color="#a6a6a6", linewidth=6, label="CPU time = user + sys (mean)"),
               Line2D([], [], color="#d62728", marker="|", linestyle="none", markersize=9, label="wall: 1 std")]
    if any_dnf:
        handles.append(Line2D([], [], color="#d62728", marker="^", linestyle="none", label=dnf_label))
    fig.legend(handles=handles, loc="lower center", ncol=len(handles), fontsize=9, frameon=False,
               bbox_to_anchor=(0.5, 0.0))
