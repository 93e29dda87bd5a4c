"""Figures of the chunking study as PNG bytes (Agg canvas via climio.present.plotting; pyplot is never used).

    heatmaps(panels, ...)   read shape x chunk shape grids of annotated cells (thesis Figs 4.3, 4.5, 4.6)
                            and the same grids of rate ratios (chunk cache "fit" vs "default")
    wall_cpu_bars(...)      wall and CPU time per chunk shape, one panel per read shape (Fig. 4.4)

The functions draw what section.py computed (HeatPanel, BarPanel); they know nothing
of records. Each returns None when there is nothing to draw.
"""

import math
import re
from dataclasses import dataclass, field

from matplotlib.cm import ScalarMappable
from matplotlib.colors import LogNorm, to_rgb
from matplotlib.figure import Figure
from matplotlib.patches import Patch, Rectangle
from matplotlib.ticker import FuncFormatter, LogLocator, NullFormatter

from climio.present.plotting import to_png, wall_cpu_legend

RATE_CMAP = "viridis"
RATIO_CMAP = "RdBu"
DNF_FACE, NA_FACE, ERR_FACE = "white", "#e6e6e6", "#f4c7c7"


@dataclass
class HeatCell:
    """One drawn cell: kind "ok" (coloured by value), "dnf" (white, text "< X"), "error",
    or "bound" (a ratio known only as a bound: coloured by value, text says which way)."""

    kind: str
    value: float = None
    text: str = ""


@dataclass
class HeatPanel:
    title: str
    rows: list                     # row labels (read shapes), top to bottom
    cols: list                     # (column key, header text), left to right
    cells: dict = field(default_factory=dict)   # (row, column key) -> HeatCell; absent = not measured

    @property
    def empty(self) -> bool:
        return not self.cells


@dataclass
class Bar:
    label: str
    wall: float = None            # mean [s]
    wall_std: float = 0.0
    cpu: float = None             # mean [s]
    dnf_at: float = None          # did not finish: the time is above this [s]


@dataclass
class BarPanel:
    title: str
    bars: list


def _tick(v, _pos=None) -> str:
    if v >= 10:
        return f"{v:.0f}"
    return f"{v:g}" if v >= 1 else f"{v:.2g}"


def wrap(text, width_in, fontsize) -> str:
    """Break `text` at '+', ', ' or spaces so that each line fits `width_in` inches at `fontsize`."""
    per_line = max(8, int(width_in / (fontsize * 0.0075)))
    if len(text) <= per_line:
        return text
    tokens = re.findall(r"[^+ ,]+(?:\+|, |,| |$)", text)
    lines, cur = [], ""
    for t in tokens:
        if cur and len(cur) + len(t.rstrip()) > per_line:
            lines.append(cur.rstrip())
            cur = ""
        cur += t
    if cur:
        lines.append(cur.rstrip())
    return "\n".join(lines)


def _luminance(rgb) -> float:
    r, g, b = to_rgb(rgb)
    return 0.299 * r + 0.587 * g + 0.114 * b


def _norm(panels, kind, vrange):
    vals = [c.value for p in panels for c in p.cells.values()
            if c.value is not None and math.isfinite(c.value) and c.value > 0]
    if kind == "ratio":
        m = max([max(v, 1 / v) for v in vals] + [2.0])
        return LogNorm(1 / m, m)
    lo, hi = vrange if vrange else (min(vals, default=1.0), max(vals, default=1.0))
    if not hi > lo:
        lo, hi = lo / 2, hi * 2
    return LogNorm(lo, hi)


def heatmaps(panels, title, cbar_label, kind="rate", per_row=None, vrange=None, footnote=""):
    """Panels of annotated cells, laid out in lines of at most ~14.5 in (or `per_row` panels); one shared log colour scale (`vrange` = (lo, hi) fixes it so
    several figures compare). kind "rate": viridis, dnf white; kind "ratio": red (< 1) to blue
    (> 1) centred on 1. Sizes are laid out in inches so cells keep their size whatever the grid."""
    panels = [p for p in panels if not p.empty]
    if not panels:
        return None
    cmap = RATIO_CMAP if kind == "ratio" else RATE_CMAP
    sm = ScalarMappable(norm=_norm(panels, kind, vrange), cmap=cmap)
    cw, ch = 1.05, 0.62 if kind == "ratio" else 0.78      # cell size [in]
    row_label_w = 0.25 + 0.085 * max(len(str(r)) for p in panels for r in p.rows)
    gap_w, gap_h, header_h, title_line = 0.35, 0.3, 0.42, 0.19
    pw = {id(p): len(p.cols) * cw + row_label_w + gap_w for p in panels}
    if per_row:
        grid = [panels[i:i + per_row] for i in range(0, len(panels), per_row)]
    else:  # fill lines greedily up to ~14.5 in (or the widest panel)
        max_w, grid = max(14.5, max(pw.values())), [[]]
        for p in panels:
            if grid[-1] and sum(pw[id(q)] for q in grid[-1]) + pw[id(p)] > max_w:
                grid.append([])
            grid[-1].append(p)
    titles = {id(p): wrap(p.title, len(p.cols) * cw + gap_w - 0.05, 9.5) for p in panels}
    heads = [header_h + title_line * max(titles[id(p)].count("\n") + 1 for p in line) for line in grid]
    widths = [sum(len(p.cols) * cw + row_label_w for p in line) + gap_w * (len(line) - 1) for line in grid]
    heights = [max(len(p.rows) for p in line) * ch + hh for line, hh in zip(grid, heads)]
    # The colour bar (the legend of the colours) stands just right of the widest line of panels,
    # inside the figure with its ticks and label; the title wraps to the figure's width.
    left, cb_gap, right = 0.15, 0.3, 1.2
    cb_x = left + max(widths) + cb_gap
    fig_w = max(cb_x + right, 6.5)
    title = wrap(title, fig_w - left - 0.15, 11.5)
    top = 0.5 + 0.2 * title.count("\n")
    foot = wrap(footnote, fig_w - 2 * left, 8) if footnote else ""
    bottom = 0.45 + (0.16 * (foot.count("\n") + 1) + 0.08 if foot else 0)
    fig_h = sum(heights) + gap_h * (len(grid) - 1) + top + bottom
    fig = Figure(figsize=(fig_w, fig_h))
    W, H = fig_w, fig_h
    used = set()
    y = H - top
    for line, lh, hh in zip(grid, heights, heads):
        x = left
        for p in line:
            nr, nc = len(p.rows), len(p.cols)
            x += row_label_w
            ax = fig.add_axes([x / W, (y - hh - nr * ch) / H, nc * cw / W, nr * ch / H])
            _draw_panel(ax, p, titles[id(p)], sm, kind, used)
            x += nc * cw + gap_w
        y -= lh + gap_h
    cb_h = max(0.8, min(4.5, H - top - bottom - heads[0]))
    cax = fig.add_axes([cb_x / W, (H - top - heads[0] - cb_h) / H, 0.18 / W, cb_h / H])
    cb = fig.colorbar(sm, cax=cax)
    cb.set_label(cbar_label, fontsize=9)
    cb.ax.yaxis.set_major_locator(LogLocator(subs=(1.0, 2.0, 5.0)))
    cb.ax.yaxis.set_major_formatter(FuncFormatter(_tick))
    cb.ax.yaxis.set_minor_formatter(NullFormatter())
    cb.ax.tick_params(labelsize=8)
    handles = []
    if "dnf" in used:
        handles.append(Patch(facecolor=DNF_FACE, edgecolor="#999999",
                             label="did not finish in the time budget: rate < value" if kind == "rate"
                             else "neither setting finished"))
    if "na" in used:
        handles.append(Patch(facecolor=NA_FACE, edgecolor="#999999", hatch="///", label="N/A: not measured"))
    if "error" in used:
        handles.append(Patch(facecolor=ERR_FACE, edgecolor="#999999", label="error (see the configuration table)"))
    foot_h = (0.16 * (foot.count("\n") + 1) + 0.08) if foot else 0.0
    if handles:
        fig.legend(handles=handles, loc="lower left", bbox_to_anchor=(left / W, (0.04 + foot_h) / H),
                   ncol=len(handles), fontsize=8.5, frameon=False, borderaxespad=0)
    if foot:
        fig.text(left / W, 0.06 / H, foot, fontsize=8, color="#444", ha="left", va="bottom")
    fig.suptitle(title, x=left / W, y=1 - 0.12 / H, ha="left", va="top", fontsize=11.5)
    return to_png(fig)


def _draw_panel(ax, p: HeatPanel, title, sm, kind, used):
    nr, nc = len(p.rows), len(p.cols)
    ax.set_xlim(0, nc)
    ax.set_ylim(nr, 0)
    for i, r in enumerate(p.rows):
        for j, (ckey, _) in enumerate(p.cols):
            cell = p.cells.get((r, ckey))
            hatch, face, text, colour, edge = None, NA_FACE, "N/A", "#666666", "#bbbbbb"
            if cell is None:
                used.add("na")
                hatch = "///"
            elif cell.kind == "dnf":
                used.add("dnf")
                face, text, colour = DNF_FACE, cell.text, "#a33333"
            elif cell.kind == "error":
                used.add("error")
                face, text, colour = ERR_FACE, cell.text or "error", "#700000"
            else:
                face = sm.to_rgba(cell.value) if cell.value is not None and cell.value > 0 else NA_FACE
                text, edge = cell.text, "white"
                colour = "white" if _luminance(face) < 0.45 else "black"
            ax.add_patch(Rectangle((j, i), 1, 1, facecolor=face, edgecolor=edge, linewidth=1.0, hatch=hatch))
            ax.text(j + 0.5, i + 0.5, text, ha="center", va="center", fontsize=8 if kind == "rate" else 8.5,
                    color=colour, linespacing=1.15)
    ax.set_xticks([j + 0.5 for j in range(nc)])
    ax.set_xticklabels([h for _, h in p.cols], fontsize=7.5, linespacing=1.1)
    ax.xaxis.tick_top()
    ax.set_yticks([i + 0.5 for i in range(nr)])
    ax.set_yticklabels([str(r) for r in p.rows], fontsize=9)
    ax.tick_params(length=0, pad=3)
    for s in ax.spines.values():
        s.set_visible(False)
    ax.set_title(title, fontsize=9.5, loc="left", pad=27)


def wall_cpu_bars(rows, title, ylabel):
    """`rows` = [(row title, [BarPanel per read shape])]: dark bar = mean wall time (red: 1 std),
    light narrower bar in front = mean CPU time, red triangle = did not finish (time above it),
    "N/A" = not measured (a Bar without values keeps its slot so panels stay aligned).
    One log time axis shared by all panels."""
    rows = [(t, [p for p in ps if p.bars]) for t, ps in rows]
    rows = [(t, ps) for t, ps in rows if ps]
    if not rows:
        return None
    ncols = max(len(ps) for _, ps in rows)
    nbars = max(len(p.bars) for _, ps in rows for p in ps)
    fig = Figure(figsize=(max(3.0, 0.42 * nbars + 0.9) * ncols + 1.0, 2.9 * len(rows) + 1.2))
    axes = fig.subplots(len(rows), ncols, sharey=True, squeeze=False)
    lo, hi, any_dnf = math.inf, 0.0, False
    for i, (row_title, panels) in enumerate(rows):
        for j in range(ncols):
            ax = axes[i, j]
            if j >= len(panels):
                ax.set_visible(False)
                continue
            p = panels[j]
            for x, b in enumerate(p.bars):
                if b.wall and b.wall > 0:
                    ax.bar(x, b.wall, width=0.8, color="#333333", zorder=2)
                    if b.wall_std and b.wall_std > 0:
                        ax.errorbar([x], [b.wall], yerr=[[min(b.wall_std, b.wall * 0.999)], [b.wall_std]],
                                    color="#d62728", linewidth=1, capsize=2, zorder=4)
                    lo, hi = min(lo, b.wall), max(hi, b.wall + (b.wall_std or 0))
                if b.cpu and b.cpu > 0:
                    ax.bar(x, b.cpu, width=0.5, color="#a6a6a6", zorder=3)
                    lo, hi = min(lo, b.cpu), max(hi, b.cpu)
                if not (b.wall and b.wall > 0) and not (b.dnf_at and b.dnf_at > 0):
                    ax.text(x, 0.03, "N/A", transform=ax.get_xaxis_transform(), ha="center", va="bottom",
                            fontsize=7.5, color="#777777")
                if b.dnf_at and b.dnf_at > 0:
                    any_dnf = True
                    ax.plot([x], [b.dnf_at], marker="^", color="#d62728", markersize=8, linestyle="none", zorder=5)
                    lo, hi = min(lo, b.dnf_at), max(hi, b.dnf_at)
            ax.set_xticks(range(len(p.bars)))
            ax.set_xticklabels([b.label for b in p.bars], fontsize=8, rotation=45 if nbars > 6 else 0)
            ax.set_xlim(-0.7, len(p.bars) - 0.3)
            ax.set_title(f"{row_title}: {p.title}" if row_title else p.title, fontsize=10, loc="left")
            ax.grid(True, axis="y", which="major", alpha=0.3)
            ax.set_xlabel("chunk shape", fontsize=8.5)
            if j == 0:
                ax.set_ylabel(ylabel, fontsize=9)
    if hi > 0:
        axes[0, 0].set_yscale("log")
        axes[0, 0].set_ylim(max(lo, 1e-9) / 2, hi * 2)
    wall_cpu_legend(fig, any_dnf, "did not finish: time > marker")
    fig.suptitle(title, x=0.06, ha="left", fontsize=11.5)
    fig.subplots_adjust(left=0.9 / fig.get_figwidth(), right=0.98, top=1 - 0.6 / fig.get_figheight(),
                        bottom=1.15 / fig.get_figheight(), hspace=0.5, wspace=0.08)
    return to_png(fig)
